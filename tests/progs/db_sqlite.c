/* Known SQLite statements with known row counts, for tests/e2e/test_db.c: prepared and
 * re-executed, stepped to the end, stopped early, reset, failing at prepare and at step,
 * and sqlite3_exec with and without a callback. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static sqlite3 *db;

static void check(int rc, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) {
		fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
		exit(1);
	}
}

static int count_row(void *arg, int n, char **vals, char **cols)
{
	(void)n, (void)vals, (void)cols;
	++*(int *)arg;
	return 0;
}

/* Prepares sql and steps it to the end; returns the rows. */
static int run_all(const char *sql)
{
	sqlite3_stmt *st;
	check(sqlite3_prepare_v2(db, sql, -1, &st, NULL), sql);
	int rows = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		rows++;
	check(rc, sql);
	sqlite3_finalize(st);
	return rows;
}

int main(int argc, char **argv)
{
	check(sqlite3_open(argc > 1 ? argv[1] : ":memory:", &db), "open");
	check(sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL)",
			   NULL, NULL, NULL), "create");

	/* one statement, 100 executions */
	sqlite3_stmt *ins;
	check(sqlite3_prepare_v2(db, "INSERT INTO t(name, score) VALUES (?, ?)", -1, &ins, NULL), "ins");
	for (int i = 0; i < 100; i++) {
		sqlite3_bind_text(ins, 1, "secret-name", -1, SQLITE_STATIC);
		sqlite3_bind_double(ins, 2, i * 0.5);
		check(sqlite3_step(ins), "insert");
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);

	/* three texts that differ only in literals: one normalized statement */
	check(sqlite3_exec(db, "INSERT INTO t(name) VALUES ('x1')", NULL, NULL, NULL), "x1");
	check(sqlite3_exec(db, "INSERT INTO t(name) VALUES ('x2')", NULL, NULL, NULL), "x2");
	check(sqlite3_exec(db, "INSERT INTO t(name) VALUES ('it''s x3')", NULL, NULL, NULL), "x3");

	/* five executions, 10+20+30+40+50 rows */
	int rows = 0;
	for (int k = 1; k <= 5; k++) {
		char sql[128];
		snprintf(sql, sizeof(sql), "SELECT id, name FROM t WHERE id <= %d", k * 10);
		rows += run_all(sql);
	}

	/* stopped after 3 of 103 rows */
	sqlite3_stmt *st;
	check(sqlite3_prepare_v2(db, "SELECT name FROM t ORDER BY id", -1, &st, NULL), "order");
	for (int i = 0; i < 3; i++)
		check(sqlite3_step(st), "order step");
	sqlite3_finalize(st);

	/* reset and executed again: 2 executions, 1 row each */
	check(sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE score > ?", -1, &st, NULL), "count");
	for (int i = 0; i < 2; i++) {
		sqlite3_bind_double(st, 1, i * 10.0);
		while (sqlite3_step(st) == SQLITE_ROW)
			rows++;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);

	/* failures: at prepare (no table), at step (constraint) */
	if (sqlite3_prepare_v2(db, "SELECT * FROM missing_table WHERE id = 7", -1, &st, NULL) == SQLITE_OK)
		return 1;
	check(sqlite3_prepare_v2(db, "INSERT INTO t(id, name) VALUES (1, 'dup')", -1, &st, NULL), "dup");
	if (sqlite3_step(st) != SQLITE_CONSTRAINT)
		return 1;
	sqlite3_finalize(st);

	/* exec with a callback: 3 rows; several statements in one text */
	int cb_rows = 0;
	check(sqlite3_exec(db, "SELECT name FROM t WHERE id IN (1, 2, 3)", count_row, &cb_rows, NULL), "in");
	check(sqlite3_exec(db, "BEGIN; UPDATE t SET score = 2 WHERE id = 5; COMMIT;", NULL, NULL, NULL), "tx");
	sqlite3_close(db);
	printf("rows %d callback rows %d\n", rows, cb_rows);
	return cb_rows == 3 ? 0 : 1;
}
