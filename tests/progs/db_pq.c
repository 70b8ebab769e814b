/* Known PostgreSQL statements through libpq with known row counts, for tests/e2e/test_db.c:
 * PQexec, PQexecParams, PQprepare/PQexecPrepared, PQsendQuery(Params)/PQgetResult, a failure.
 * argv[1]: the connection string. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>

static PGconn *conn;

static void ok(PGresult *r, const char *what)
{
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fprintf(stderr, "%s: %s", what, PQerrorMessage(conn));
		exit(1);
	}
	PQclear(r);
}

/* Reads every result of a query sent; returns its rows. */
static int drain(void)
{
	int rows = 0;
	PGresult *r;
	while ((r = PQgetResult(conn))) {
		rows += PQntuples(r);
		PQclear(r);
	}
	return rows;
}

int main(int argc, char **argv)
{
	conn = PQconnectdb(argc > 1 ? argv[1] : "");
	if (PQstatus(conn) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(conn));
		return 1;
	}
	ok(PQexec(conn, "DROP TABLE IF EXISTS items; CREATE TABLE items(id int PRIMARY KEY, name text)"),
	   "create");
	for (int i = 0; i < 20; i++) {
		char id[16];
		snprintf(id, sizeof(id), "%d", i);
		const char *vals[2] = { id, "secret-name" };
		ok(PQexecParams(conn, "INSERT INTO items VALUES ($1, $2)", 2, NULL, vals, NULL, NULL, 0),
		   "insert");
	}
	ok(PQexec(conn, "SELECT * FROM items WHERE id < 5"), "select 5");
	ok(PQexec(conn, "SELECT * FROM items WHERE id < 8"), "select 8");
	ok(PQprepare(conn, "byid", "SELECT name FROM items WHERE id = $1", 1, NULL), "prepare");
	for (int i = 0; i < 10; i++) {
		char id[16];
		snprintf(id, sizeof(id), "%d", i);
		const char *vals[1] = { id };
		ok(PQexecPrepared(conn, "byid", 1, vals, NULL, NULL, 0), "exec prepared");
	}
	int rows = 0;
	if (!PQsendQuery(conn, "SELECT id FROM items WHERE id IN (1, 2, 3)"))
		return 1;
	rows += drain();
	const char *v15[1] = { "15" };
	if (!PQsendQueryParams(conn, "SELECT id FROM items WHERE id >= $1", 1, NULL, v15, NULL, NULL, 0))
		return 1;
	rows += drain();
	PGresult *r = PQexec(conn, "SELECT * FROM no_such_table");
	if (PQresultStatus(r) != PGRES_FATAL_ERROR)
		return 1;
	PQclear(r);
	PQfinish(conn);
	printf("async rows %d\n", rows);
	return rows == 8 ? 0 : 1;
}
