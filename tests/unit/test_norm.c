/* SQL and HTTP normalization (shared/prof_norm.c): literals out, structure kept, bounded. */
#include <criterion/criterion.h>
#include <string.h>

#include "prof_norm.h"

static const char *sql(const char *in)
{
	static char out[256];
	prof_sql_normalize(in, strlen(in), out, sizeof(out));
	return out;
}

Test(norm, sql_literals)
{
	cr_expect_str_eq(sql("SELECT * FROM t WHERE id = 42 AND name = 'O''Brien'"),
			 "SELECT * FROM t WHERE id = ? AND name = ?");
	cr_expect_str_eq(sql("select a1, t2.b from t2 where x > -1.5e-3 and y = 0x1F"),
			 "select a1, t2.b from t2 where x > -? and y = ?");
	cr_expect_str_eq(sql("INSERT INTO t VALUES (X'0aff', E'a\\n', $1, ?, :name, @v)"),
			 "INSERT INTO t VALUES (?, ?, $1, ?, :name, @v)");
	cr_expect_str_eq(sql("SELECT $$dollar 'quoted'$$, \"Col 1\", `c2` FROM t"),
			 "SELECT ?, \"Col 1\", `c2` FROM t");
}

Test(norm, sql_in_lists_comments_space)
{
	cr_expect_str_eq(sql("SELECT * FROM t WHERE id IN (1, 2, 3) OR s in ('a','b')"),
			 "SELECT * FROM t WHERE id IN (?) OR s in (?)");
	cr_expect_str_eq(sql("SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v = 3)"),
			 "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v = ?)");
	cr_expect_str_eq(sql("  SELECT  1 -- the answer\n FROM /* c */ t ;  "), "SELECT ? FROM t");
	cr_expect_str_eq(sql("BEGIN; UPDATE t SET v = 2; COMMIT;"), "BEGIN; UPDATE t SET v = ?; COMMIT");
}

Test(norm, sql_bounded)
{
	char big[10000], out[64];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	size_t n = prof_sql_normalize(big, sizeof(big), out, sizeof(out));
	cr_expect_eq(n, sizeof(out) - 1);
	cr_expect_eq(strlen(out), sizeof(out) - 1);
	/* an unterminated literal or comment ends at the end of the text */
	cr_expect_str_eq(sql("SELECT 'open"), "SELECT ?");
	cr_expect_str_eq(sql("SELECT 1 /* open"), "SELECT ?");
	cr_expect_eq(prof_sql_normalize("SELECT 1", 0, out, sizeof(out)), 0);
}

Test(norm, http_request_lines)
{
	char m[16], r[256];
	const char *line = "GET /users/123/orders/550e8400-e29b-41d4-a716-446655440000?token=secret HTTP/1.1\r\n";
	cr_assert(prof_http_request(line, strlen(line), m, sizeof(m), r, sizeof(r)));
	cr_expect_str_eq(m, "GET");
	cr_expect_str_eq(r, "/users/{id}/orders/{uuid}");
	line = "POST http://example.com:8080/blobs/deadbeef42/x HTTP/1.0\r\n";
	cr_assert(prof_http_request(line, strlen(line), m, sizeof(m), r, sizeof(r)));
	cr_expect_str_eq(m, "POST");
	cr_expect_str_eq(r, "/blobs/{hex}/x");
	line = "OPTIONS * HTTP/1.1\r\n";
	cr_assert(prof_http_request(line, strlen(line), m, sizeof(m), r, sizeof(r)));
	cr_expect_str_eq(r, "*");
	line = "GET /static/app.v2.js#frag HTTP/1.1";
	cr_assert(prof_http_request(line, strlen(line), m, sizeof(m), r, sizeof(r)));
	cr_expect_str_eq(r, "/static/app.v2.js");
	cr_expect_not(prof_http_request("FOO / HTTP/1.1", 14, m, sizeof(m), r, sizeof(r)));
	cr_expect_not(prof_http_request("GET", 3, m, sizeof(m), r, sizeof(r)));
	cr_expect_not(prof_http_request("\x16\x03\x01\x02\x00", 5, m, sizeof(m), r, sizeof(r)));
}

Test(norm, http_status_lines)
{
	cr_expect_eq(prof_http_status("HTTP/1.1 404 Not Found\r\n", 24), 404);
	cr_expect_eq(prof_http_status("HTTP/1.0 200", 12), 200);
	cr_expect_eq(prof_http_status("HTTP/1.1 20", 11), 0);
	cr_expect_eq(prof_http_status("HTTP/2 200 OK", 13), 0);
	cr_expect_eq(prof_http_status("HTTP/1.1 099 x", 14), 0);
}
