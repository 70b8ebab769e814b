/* Database and HTTP benchmark: N queries on an in-memory SQLite table, or N HTTP/1.1
 * requests on one keep-alive loopback connection (a forked server answers them). Prints the
 * loop's wall time in seconds; bench/db.sh compares runs with and without libprof.
 *
 *	db_bench sqlite-prepared N   one prepared SELECT, bound, stepped, reset N times
 *	db_bench sqlite-text N       N texts differing in a literal: prepare, step, finalize
 *	db_bench http N              N GET requests, each answered with 100 body bytes
 *	db_bench pq-prepared N CONN  pgbench's SELECT on a 1000-row table: PQexecPrepared N times
 *	db_bench pq-text N CONN      the same as N texts with a literal: PQexec */
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static sqlite3 *setup(void)
{
	sqlite3 *db;
	sqlite3_open(":memory:", &db);
	sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
			 "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)"
			 " INSERT INTO t SELECT i, 'value' || i FROM c;", NULL, NULL, NULL);
	return db;
}

static long sqlite_prepared(long n)
{
	sqlite3 *db = setup();
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db, "SELECT v FROM t WHERE id = ?", -1, &st, NULL);
	long rows = 0;
	for (long i = 0; i < n; i++) {
		sqlite3_bind_int(st, 1, (int)(i % 1000) + 1);
		while (sqlite3_step(st) == SQLITE_ROW)
			rows++;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rows;
}

static long sqlite_text(long n)
{
	sqlite3 *db = setup();
	long rows = 0;
	for (long i = 0; i < n; i++) {
		char sql[96];
		sqlite3_stmt *st;
		snprintf(sql, sizeof(sql), "SELECT v FROM t WHERE id = %ld", i % 1000 + 1);
		sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		while (sqlite3_step(st) == SQLITE_ROW)
			rows++;
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return rows;
}

/* Reads until a whole request (ends in an empty line) or response (100-byte body) is in. */
static int read_message(int fd, char *buf, size_t cap, int response)
{
	size_t have = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, cap - have - 1);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (end && (!response || (size_t)(buf + have - (end + 4)) >= 100))
			return 0;
	}
}

static long http(long n)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) < 0)
		return -1;
	char buf[4096], body[101];
	memset(body, 'x', 100);
	body[100] = '\0';
	pid_t pid = fork();
	if (pid == 0) {
		int c = accept(ls, NULL, NULL);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		char resp[256];
		int len = snprintf(resp, sizeof(resp),
				   "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n%s", body);
		while (read_message(c, buf, sizeof(buf), 0) == 0)
			write(c, resp, (size_t)len);
		_exit(0);
	}
	close(ls);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	for (long i = 0; i < n; i++) {
		char req[128];
		int len = snprintf(req, sizeof(req), "GET /items/%ld HTTP/1.1\r\nHost: x\r\n\r\n", i);
		write(c, req, (size_t)len);
		if (read_message(c, buf, sizeof(buf), 1) < 0)
			return -1;
	}
	close(c);
	waitpid(pid, NULL, 0);
	return n;
}

/* pgbench's select-only transaction, prepared (PQexecPrepared) or as text (PQexec). */
static long pq(const char *conninfo, long n, int prepared)
{
	PGconn *c = PQconnectdb(conninfo);
	if (PQstatus(c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(c, "SET client_min_messages = warning; DROP TABLE IF EXISTS accounts;"
			  " CREATE TABLE accounts(aid int PRIMARY KEY,"
			  " abalance int); INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g"));
	PQclear(PQprepare(c, "sel", "SELECT abalance FROM accounts WHERE aid = $1", 1, NULL));
	long rows = 0;
	for (long i = 0; i < n; i++) {
		char text[96], aid[16];
		snprintf(aid, sizeof(aid), "%ld", i % 1000 + 1);
		const char *vals[1] = { aid };
		PGresult *r;
		if (prepared) {
			r = PQexecPrepared(c, "sel", 1, vals, NULL, NULL, 0);
		} else {
			snprintf(text, sizeof(text), "SELECT abalance FROM accounts WHERE aid = %s", aid);
			r = PQexec(c, text);
		}
		rows += PQntuples(r);
		PQclear(r);
	}
	PQfinish(c);
	return rows;
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strncmp(argv[1], "pq-", 3))) {
		fprintf(stderr, "usage: db_bench sqlite-prepared|sqlite-text|http N, or pq-prepared|pq-text N CONNINFO\n");
		return 2;
	}
	long n = atol(argv[2]), r;
	double t0 = now();
	if (!strcmp(argv[1], "sqlite-prepared"))
		r = sqlite_prepared(n);
	else if (!strcmp(argv[1], "sqlite-text"))
		r = sqlite_text(n);
	else if (!strcmp(argv[1], "http"))
		r = http(n);
	else if (!strcmp(argv[1], "pq-prepared"))
		r = pq(argv[3], n, 1);
	else if (!strcmp(argv[1], "pq-text"))
		r = pq(argv[3], n, 0);
	else
		return 2;
	printf("%.6f\n", now() - t0);
	return r == n ? 0 : 1;
}
