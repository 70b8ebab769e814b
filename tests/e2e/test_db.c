/* End-to-end tests of the db and http families: a C program on libsqlite3 and the Debian
 * sqlite3 shell with known statements and row counts; a Python http.server and client with
 * known requests, over plain TCP and over TLS (self-signed certificate from the openssl CLI);
 * a PostgreSQL server started here (skipped where none is installed: `make test-real` installs
 * it and runs this test alone) with psql and a libpq program.
 * Counts, rows, statuses exact; literals never in the report unless PROF_DB_LITERALS=1. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(db, .fini = teardown, .timeout = 120);

/* ---- helpers ----------------------------------------------------------------------------- */

struct totals {
	long calls, rows, errors, bytes;
	long long total_ns, max_ns;
};

/* Sums the db.queries rows of every process whose query is `query`. */
static struct totals query_totals(json_t *doc, const char *query)
{
	struct totals t = { 0 };
	size_t i, j;
	json_t *p, *q;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		json_array_foreach(json_object_get(json_object_get(p, "db"), "queries"), j, q) {
			if (strcmp(json_string_value(json_object_get(q, "query")), query))
				continue;
			t.calls += e2e_int(q, "calls");
			t.rows += e2e_int(q, "rows");
			t.errors += e2e_int(q, "errors");
			t.total_ns += e2e_int(q, "total_ns");
			if (e2e_int(q, "max_ns") > t.max_ns)
				t.max_ns = e2e_int(q, "max_ns");
			cr_expect_gt(json_array_size(json_object_get(q, "stack")), 0, "a stack for %s", query);
		}
	}
	return t;
}

static void expect_query(json_t *doc, const char *query, long calls, long rows, long errors)
{
	struct totals t = query_totals(doc, query);
	cr_expect_eq(t.calls, calls, "%s: %ld calls, expected %ld", query, t.calls, calls);
	cr_expect_eq(t.rows, rows, "%s: %ld rows, expected %ld", query, t.rows, rows);
	cr_expect_eq(t.errors, errors, "%s: %ld errors, expected %ld", query, t.errors, errors);
	cr_expect(t.calls == 0 || (t.total_ns > 0 && t.total_ns < 10000000000LL),
		  "%s: plausible time (%lld ns)", query, t.total_ns);
}

/* Sums the http.requests rows of every process that match. */
static struct totals http_totals(json_t *doc, const char *side, const char *method,
				 const char *target, long status, int tls)
{
	struct totals t = { 0 };
	size_t i, j;
	json_t *p, *r;
	json_array_foreach(json_object_get(doc, "processes"), i, p) {
		json_array_foreach(json_object_get(json_object_get(p, "http"), "requests"), j, r) {
			if (strcmp(json_string_value(json_object_get(r, "side")), side) ||
			    strcmp(json_string_value(json_object_get(r, "method")), method) ||
			    strcmp(json_string_value(json_object_get(r, "target")), target) ||
			    e2e_int(r, "status") != status ||
			    json_is_true(json_object_get(r, "tls")) != tls)
				continue;
			t.calls += e2e_int(r, "calls");
			t.bytes += e2e_int(r, "bytes");
			t.total_ns += e2e_int(r, "total_ns");
			if (e2e_int(r, "max_ns") > t.max_ns)
				t.max_ns = e2e_int(r, "max_ns");
			cr_expect_gt(json_array_size(json_object_get(r, "stack")), 0, "a stack");
		}
	}
	return t;
}

static long http_calls(json_t *doc)
{
	long n = 0;
	size_t i, j;
	json_t *p, *r;
	json_array_foreach(json_object_get(doc, "processes"), i, p)
		json_array_foreach(json_object_get(json_object_get(p, "http"), "requests"), j, r)
			n += e2e_int(r, "calls");
	return n;
}

/* `prof report --json --top 100`: every query and request row of these tests, and not the
 * thousands of heap sites of a Python process, which take seconds to symbolize. */
static json_t *report(const char *dir)
{
	const char *d = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/report.json", d);
	const char *argv[] = { e2e_prof(), "report", "--json", "--top", "100", dir, NULL };
	cr_assert_eq(e2e_run(argv, NULL, out, NULL), 0, "prof report failed");
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "bad JSON: %s", je.text);
	return doc;
}

/* The text report of dir (malloc'd). */
static char *report_text(const char *dir)
{
	const char *d = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/report.txt", d);
	const char *argv[] = { e2e_prof(), "report", "--top", "20", dir, NULL };
	cr_assert_eq(e2e_run(argv, NULL, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	return text;
}

/* The events of category cat in the Chrome timeline of dir. */
static int timeline_events(const char *dir, const char *cat)
{
	char out[PATH_MAX], pat[64];
	snprintf(out, sizeof(out), "%s/timeline.json", e2e_tmpdir());
	const char *argv[] = { e2e_prof(), "export", "--format", "chrome", "-o", out, dir, NULL };
	cr_assert_eq(e2e_run(argv, NULL, NULL, NULL), 0);
	char *tl = e2e_read_file(out);
	cr_assert_not_null(tl);
	snprintf(pat, sizeof(pat), "\"cat\":\"%s\"", cat);
	int events = 0;
	for (char *c = tl; (c = strstr(c, pat)); c++)
		events++;
	free(tl);
	return events;
}

static void profile_ok(const char *dir, const char *const argv[], const char *const env[])
{
	int st = e2e_profile(dir, argv, env, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed: status %d", argv[0], st);
}

/* ---- SQLite ------------------------------------------------------------------------------ */

Test(db, sqlite_program)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("db_sqlite"), NULL };
	profile_ok(dir, argv, NULL);
	json_t *doc = report(dir);
	expect_query(doc, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL)", 1, 0, 0);
	expect_query(doc, "INSERT INTO t(name, score) VALUES (?, ?)", 100, 0, 0);
	expect_query(doc, "INSERT INTO t(name) VALUES (?)", 3, 0, 0);
	expect_query(doc, "SELECT id, name FROM t WHERE id <= ?", 5, 150, 0);
	expect_query(doc, "SELECT name FROM t ORDER BY id", 1, 3, 0);
	expect_query(doc, "SELECT count(*) FROM t WHERE score > ?", 2, 2, 0);
	expect_query(doc, "SELECT * FROM missing_table WHERE id = ?", 1, 0, 1);
	expect_query(doc, "INSERT INTO t(id, name) VALUES (?, ?)", 1, 0, 1);
	expect_query(doc, "SELECT name FROM t WHERE id IN (?)", 1, 3, 0);
	expect_query(doc, "BEGIN; UPDATE t SET score = ? WHERE id = ?; COMMIT", 1, 0, 0);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(json_array_size(json_object_get(json_object_get(p, "db"), "queries")), 10);
	cr_expect_eq(json_object_get(json_object_get(p, "db"), "slowest"), NULL,
		     "no raw text without PROF_DB_LITERALS=1");
	char *s = json_dumps(doc, 0);
	cr_expect_null(strstr(s, "dup"), "a literal in the report");
	cr_expect_null(strstr(s, "x1"), "a literal in the report");
	free(s);
	json_decref(doc);

	char *text = report_text(dir);
	cr_expect_not_null(strstr(text, "-- Queries"));
	cr_expect_not_null(strstr(text, "SELECT id, name FROM t WHERE id <= ?"));
	free(text);

	/* the flame graph of query time has the program's main in it */
	const char *d = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/db.folded", d);
	const char *flame[] = { e2e_prof(), "flame", "--kind", "db", "--folded", dir, NULL };
	cr_assert_eq(e2e_run(flame, NULL, out, NULL), 0);
	char *folded = e2e_read_file(out);
	cr_expect_not_null(strstr(folded, "main;"), "%s", folded);
	free(folded);

	/* the timeline has one event per query */
	cr_expect_eq(timeline_events(dir, "db"), 116);
}

static long sql_count(sqlite3 *db, const char *query)
{
	sqlite3_stmt *st;
	long v = -1;
	if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The db family in the other outputs: the sqlite export's tables, and prof diff's sections. */
Test(db, sqlite_export_and_diff)
{
	const char *base = e2e_tmpdir(), *next = e2e_tmpdir();
	const char *argv[] = { e2e_prog("db_sqlite"), NULL };
	profile_ok(base, argv, NULL);
	profile_ok(next, argv, NULL);

	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/run.sqlite", e2e_tmpdir());
	const char *exp[] = { e2e_prof(), "export", "--format", "sqlite", "-o", path, base, NULL };
	cr_assert_eq(e2e_run(exp, NULL, NULL, NULL), 0);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_expect_eq(sql_count(db, "SELECT count(*) FROM db_queries"), 116);
	cr_expect_eq(sql_count(db, "SELECT count(*) FROM db_queries q JOIN db_sql s ON s.pid = q.pid "
				   "AND s.id = q.sql WHERE s.text = 'INSERT INTO t(name, score) VALUES (?, ?)'"),
		     100);
	cr_expect_eq(sql_count(db, "SELECT sum(rows) FROM db_queries q JOIN db_sql s ON s.pid = q.pid "
				   "AND s.id = q.sql WHERE s.text = 'SELECT id, name FROM t WHERE id <= ?'"),
		     150);
	cr_expect_eq(sql_count(db, "SELECT count(*) FROM http_requests"), 0);
	sqlite3_close(db);

	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/diff.json", e2e_tmpdir());
	const char *diff[] = { e2e_prof(), "diff", "--json", base, next, NULL };
	cr_assert_eq(e2e_run(diff, NULL, out, NULL), 0);
	json_t *doc = json_load_file(out, 0, NULL);
	cr_assert_not_null(doc);
	int calls_section = 0;
	size_t i;
	json_t *sec;
	json_array_foreach(json_object_get(doc, "sections"), i, sec)
		if (!strcmp(json_string_value(json_object_get(sec, "title")), "Calls per statement"))
			calls_section = 1;
	cr_expect(calls_section, "no db section in prof diff");
	json_decref(doc);
}

Test(db, sqlite_literals)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { e2e_prog("db_sqlite"), NULL };
	const char *env[] = { "PROF_DB_LITERALS=1", NULL };
	profile_ok(dir, argv, env);
	json_t *doc = report(dir);
	expect_query(doc, "INSERT INTO t(name) VALUES (?)", 3, 0, 0);
	json_t *slow = json_object_get(json_object_get(e2e_process(doc, 0), "db"), "slowest");
	cr_assert(json_array_size(slow) > 0, "slowest calls with their raw text");
	json_t *first = json_array_get(slow, 0);
	cr_expect_not_null(json_string_value(json_object_get(first, "raw")));
	json_decref(doc);
	/* the raw texts are in the trace (which calls are slowest varies) */
	const char *d = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/dump.txt", d);
	const char *dump[] = { e2e_prof(), "dump", dir, NULL };
	cr_assert_eq(e2e_run(dump, NULL, out, NULL), 0);
	char *text = e2e_read_file(out);
	cr_expect_not_null(strstr(text, "VALUES ('x2')"));
	cr_expect_not_null(strstr(text, "id <= 30"));
	free(text);
}

Test(db, sqlite_shell)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = { "sqlite3", ":memory:",
			       "CREATE TABLE k(v INTEGER); INSERT INTO k VALUES(1); INSERT INTO k VALUES(2);"
			       " INSERT INTO k VALUES(3); INSERT INTO k VALUES(4);"
			       " SELECT v FROM k WHERE v > 1; SELECT count(*) FROM k;", NULL };
	profile_ok(dir, argv, NULL);
	const char *bad[] = { "sqlite3", ":memory:", "SELECT * FROM nope WHERE x = 'secret';", NULL };
	int st = e2e_profile(dir, bad, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	json_t *doc = report(dir);
	expect_query(doc, "CREATE TABLE k(v INTEGER)", 1, 0, 0);
	expect_query(doc, "INSERT INTO k VALUES(?)", 4, 0, 0);
	expect_query(doc, "SELECT v FROM k WHERE v > ?", 1, 3, 0);
	expect_query(doc, "SELECT count(*) FROM k", 1, 1, 0);
	expect_query(doc, "SELECT * FROM nope WHERE x = ?", 1, 0, 1);
	for (size_t i = 0; e2e_process(doc, i); i++) {  /* argv has it; the queries must not */
		char *s = json_dumps(json_object_get(e2e_process(doc, i), "db"), 0);
		cr_expect_null(strstr(s, "secret"), "a literal in the report");
		free(s);
	}
	json_decref(doc);
}

/* ---- HTTP -------------------------------------------------------------------------------- */

/* The Python interpreter itself: not a wrapper such as pyenv's shim, whose many processes
 * would all be profiled. */
static const char *python(void)
{
	static char path[PATH_MAX];
	if (path[0])
		return path;
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/python", e2e_tmpdir());
	const char *argv[] = { "python3", "-c", "import sys; print(sys.executable)", NULL };
	char *text = e2e_run(argv, NULL, out, NULL) == 0 ? e2e_read_file(out) : NULL;
	snprintf(path, sizeof(path), "%s", text && text[0] == '/' ? text : "python3");
	path[strcspn(path, "\n")] = '\0';
	free(text);
	return path;
}

/* Starts tests/progs/http_server.py under libprof (traces in dir); returns its pid and
 * puts its port in *port. */
static pid_t start_server(const char *dir, int conns, const char *cert, const char *key, int *port)
{
	char portfile[PATH_MAX], nconns[16], preload[PATH_MAX + 16], output[PATH_MAX + 32];
	snprintf(portfile, sizeof(portfile), "%s/port", dir);
	snprintf(nconns, sizeof(nconns), "%d", conns);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", e2e_lib());
	snprintf(output, sizeof(output), "PROF_OUTPUT=%s/prof.%%n.%%p.trace", dir);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		putenv(output);
		putenv(preload);
		execlp(python(), "python3", "tests/progs/http_server.py", portfile, nconns, cert, key,
		       (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {  /* up to 20 s */
		char *text = e2e_read_file(portfile);
		if (text) {
			*port = atoi(text);
			free(text);
			return pid;
		}
		usleep(20000);
	}
	kill(pid, SIGKILL);
	cr_assert_fail("the HTTP server did not start");
	return -1;
}

static void http_run(int tls)
{
	const char *sdir = e2e_tmpdir(), *cdir = e2e_tmpdir(), *tmp = e2e_tmpdir();
	char cert[PATH_MAX], key[PATH_MAX];
	snprintf(cert, sizeof(cert), "%s/cert.pem", tmp);
	snprintf(key, sizeof(key), "%s/key.pem", tmp);
	if (tls) {
		const char *gen[] = { "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
				      "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
				      "-addext", "subjectAltName=DNS:localhost", NULL };
		int st = e2e_run(gen, NULL, NULL, NULL);
		if (st != 0)
			cr_skip_test("openssl could not make a certificate");
	}
	int port = 0;
	python();  /* found before the fork */
	pid_t server = start_server(sdir, 3, tls ? cert : NULL, tls ? key : NULL, &port);
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	const char *argv[] = { python(), "tests/progs/http_client.py", portstr, tls ? cert : NULL,
			       NULL };
	int st = e2e_profile(cdir, argv, NULL, NULL, NULL);
	int sst;
	waitpid(server, &sst, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client failed: %d", st);
	cr_assert(WIFEXITED(sst) && WEXITSTATUS(sst) == 0, "server failed: %d", sst);

	const char *sides[2] = { "client", "server" };
	const char *dirs[2] = { cdir, sdir };
	for (int i = 0; i < 2; i++) {
		json_t *doc = report(dirs[i]);
		const char *side = sides[i];
		struct totals items = http_totals(doc, side, "GET", "/items/{id}", 200, tls);
		cr_expect_eq(items.calls, 4, "%s: GET /items/{id} 200: %ld", side, items.calls);
		cr_expect(items.max_ns > 0 && items.max_ns < 10000000000LL, "plausible latency");
		/* each body is "item /items/N\n" + 100 newlines, with headers around it */
		cr_expect(items.bytes > 4 * 200 && items.bytes < 4 * 400, "%s bytes %ld", side, items.bytes);
		cr_expect_eq(http_totals(doc, side, "GET", "/missing", 404, tls).calls, 1, "%s", side);
		cr_expect_eq(http_totals(doc, side, "GET", "/nothere/x", 404, tls).calls, 1, "%s", side);
		cr_expect_eq(http_totals(doc, side, "POST", "/items", 201, tls).calls, 1, "%s", side);
		cr_expect_eq(http_totals(doc, side, "HEAD", "/items/{id}", 200, tls).calls, 1, "%s", side);
		cr_expect_eq(http_calls(doc), 8, "%s: %ld requests in all", side, http_calls(doc));
		char *s = json_dumps(doc, 0);
		cr_expect_null(strstr(s, "secret"), "%s: a query string or body in the report", side);
		free(s);
		json_decref(doc);
	}
	char *text = report_text(sdir);
	cr_expect_not_null(strstr(text, "-- HTTP"));
	free(text);
	cr_expect_eq(timeline_events(sdir, "http"), 8);
}

Test(db, http_plain)
{
	http_run(0);
}

Test(db, http_tls)
{
	http_run(1);
}

/* ---- PostgreSQL (make test-real) ---------------------------------------------------------- */

TestSuite(db_real, .fini = teardown, .timeout = 300);

/* The directory of initdb and pg_ctl, or NULL. */
static const char *pg_bindir(void)
{
	static char dir[PATH_MAX];
	for (int v = 20; v >= 10; v--) {
		snprintf(dir, sizeof(dir), "/usr/lib/postgresql/%d/bin", v);
		char initdb[PATH_MAX + 16];
		snprintf(initdb, sizeof(initdb), "%s/initdb", dir);
		if (access(initdb, X_OK) == 0)
			return dir;
	}
	return NULL;
}

/* Runs a PostgreSQL tool as `user` (NULL: ourselves); its status. */
static int pg_tool(const char *user, const char *const argv[], const char *log)
{
	if (!user)
		return e2e_run(argv, NULL, log, log);
	const char *cmd[32] = { "runuser", "-u", user, "--" };
	size_t n = 4;
	for (size_t i = 0; argv[i] && n < 31; i++)
		cmd[n++] = argv[i];
	cmd[n] = NULL;
	return e2e_run(cmd, NULL, log, log);
}

Test(db_real, postgresql)
{
	const char *bin = pg_bindir();
	if (!bin)
		cr_skip_test("no PostgreSQL server (scripts/install-deps --test)");
	const char *user = NULL;
	const char *base = e2e_tmpdir();
	if (geteuid() == 0) {  /* the server refuses to run as root */
		struct passwd *pw = getpwnam("postgres");
		if (!pw || chown(base, pw->pw_uid, pw->pw_gid) < 0)
			cr_skip_test("running as root and no postgres user to run the server");
		user = "postgres";
	}
	char data[PATH_MAX], log[PATH_MAX], tool[PATH_MAX + 16], opts[PATH_MAX + 128], port[16];
	snprintf(data, sizeof(data), "%s/data", base);
	snprintf(log, sizeof(log), "%s/server.log", base);
	snprintf(port, sizeof(port), "%d", 20000 + getpid() % 20000);
	snprintf(tool, sizeof(tool), "%s/initdb", bin);
	const char *initdb[] = { tool, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", NULL };
	if (pg_tool(user, initdb, NULL) != 0)
		cr_skip_test("initdb failed here");
	snprintf(tool, sizeof(tool), "%s/pg_ctl", bin);
	snprintf(opts, sizeof(opts), "-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, base);
	const char *start[] = { tool, "-D", data, "-o", opts, "-w", "-l", log, "start", NULL };
	if (pg_tool(user, start, NULL) != 0)
		cr_skip_test("the PostgreSQL server did not start");

	const char *dir = e2e_tmpdir();
	char psql[PATH_MAX + 8], conninfo[256];
	snprintf(psql, sizeof(psql), "%s/psql", bin);
	const char *psql_argv[] = { psql, "-X", "-q", "-h", "127.0.0.1", "-p", port, "-U", "postgres",
				    "-d", "postgres", "-c", "CREATE TABLE k(v int)",
				    "-c", "INSERT INTO k VALUES (1), (2), (3)",
				    "-c", "SELECT v FROM k WHERE v > 1", "-c", "SELECT v FROM k WHERE v > 2", NULL };
	int st1 = e2e_profile(dir, psql_argv, NULL, NULL, NULL);
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%s user=postgres dbname=postgres", port);
	const char *pq_argv[] = { e2e_prog("db_pq"), conninfo, NULL };
	int st2 = e2e_profile(dir, pq_argv, NULL, NULL, NULL);
	const char *stop[] = { tool, "-D", data, "-m", "immediate", "stop", NULL };
	pg_tool(user, stop, NULL);
	cr_assert(WIFEXITED(st1) && WEXITSTATUS(st1) == 0, "psql failed: %d", st1);
	cr_assert(WIFEXITED(st2) && WEXITSTATUS(st2) == 0, "db_pq failed: %d", st2);

	json_t *doc = report(dir);
	expect_query(doc, "CREATE TABLE k(v int)", 1, 0, 0);
	expect_query(doc, "INSERT INTO k VALUES (?), (?), (?)", 1, 0, 0);
	expect_query(doc, "SELECT v FROM k WHERE v > ?", 2, 3, 0);
	expect_query(doc, "DROP TABLE IF EXISTS items; CREATE TABLE items(id int PRIMARY KEY, name text)", 1, 0, 0);
	expect_query(doc, "INSERT INTO items VALUES ($1, $2)", 20, 0, 0);
	expect_query(doc, "SELECT * FROM items WHERE id < ?", 2, 13, 0);
	expect_query(doc, "SELECT name FROM items WHERE id = $1", 10, 10, 0);
	expect_query(doc, "SELECT id FROM items WHERE id IN (?)", 1, 3, 0);
	expect_query(doc, "SELECT id FROM items WHERE id >= $1", 1, 5, 0);
	expect_query(doc, "SELECT * FROM no_such_table", 1, 0, 1);
	char *s = json_dumps(doc, 0);
	cr_expect_null(strstr(s, "secret"), "a literal in the report");
	cr_expect_not_null(strstr(s, "\"system\": \"postgresql\"") ? s : strstr(s, "\"postgresql\""));
	free(s);
	json_decref(doc);
}
