/* Unit tests of the db and http analyses on synthetic traces: statements merged by id with
 * their text resolved after the pass, rows, errors and percentiles; HTTP rows by side, method,
 * route and status. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "process.h"
#include "tracegen.h"

#define T0 TG_START_NS

static char dir[128];

static const struct family *family_named(const char *name)
{
	for (size_t i = 0; families[i]; i++)
		if (!strcmp(families[i]->name, name))
			return families[i];
	cr_assert_fail("no family %s", name);
	return NULL;
}

static void query(struct tg *tg, uint64_t t, uint64_t sql, uint64_t dur, uint64_t rows,
		  int32_t status)
{
	struct prof_rec_db_query r;
	memset(&r, 0, sizeof(r));
	r.sql = sql;
	r.duration_ns = dur;
	r.rows = rows;
	r.status = status;
	tg_rec(tg, 0, PROF_REC_DB_QUERY, PROF_DB_SQLITE, t, (char *)&r + sizeof(struct prof_rec),
	       sizeof(r) - sizeof(struct prof_rec));
}

static void sql_text(struct tg *tg, uint64_t t, uint64_t id, const char *text)
{
	char buf[256];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &id, sizeof(id));
	strcpy(buf + sizeof(id), text);
	tg_rec(tg, 0, PROF_REC_DB_SQL, PROF_DB_SQLITE, t, buf, sizeof(id) + strlen(text) + 1);
}

static void request(struct tg *tg, uint64_t t, unsigned flags, const char *method,
		    const char *target, uint32_t status, uint64_t dur, uint64_t bytes)
{
	char buf[512];
	struct prof_rec_http_req *r = (void *)buf;
	memset(buf, 0, sizeof(buf));
	r->duration_ns = dur;
	r->bytes = bytes;
	r->status = status;
	strcpy(r->method, method);
	strcpy(r->target, target);
	tg_rec(tg, 0, PROF_REC_HTTP_REQ, (uint16_t)flags, t, buf + sizeof(struct prof_rec),
	       sizeof(*r) - sizeof(struct prof_rec) + strlen(target) + 1);
}

static json_t *load_json(struct tg *tg, struct process *p, const char *family)
{
	char err[512];
	tg_tmpdir(dir, sizeof(dir));
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
	return family_named(family)->json(p, SIZE_MAX);
}

Test(db_analysis, statements_merge_by_id_and_get_their_text_after_the_pass)
{
	struct tg *tg = tg_create();
	for (int i = 0; i < 10; i++)
		query(tg, T0 + 10 + i, 0x1111, 1000 * (i + 1), 2, 0);
	query(tg, T0 + 30, 0x1111, 100, 0, 19);         /* a failed execution */
	query(tg, T0 + 40, 0x2222, 200000, 7, 0);
	query(tg, T0 + 50, 0x3333, 5, 0, 0);            /* its text was never written */
	sql_text(tg, T0 + 60, 0x1111, "SELECT a FROM t WHERE id = ?");
	sql_text(tg, T0 + 61, 0x2222, "SELECT * FROM big");
	tg_exit(tg, 0, T0 + 100, 0, 0);
	struct process p;
	json_t *j = load_json(tg, &p, "db");
	json_t *qs = json_object_get(j, "queries");
	cr_assert_eq(json_array_size(qs), 3);
	json_t *q0 = json_array_get(qs, 0), *q1 = json_array_get(qs, 1), *q2 = json_array_get(qs, 2);
	cr_expect_str_eq(json_string_value(json_object_get(q0, "query")), "SELECT * FROM big");
	cr_expect_str_eq(json_string_value(json_object_get(q1, "query")), "SELECT a FROM t WHERE id = ?");
	cr_expect_str_eq(json_string_value(json_object_get(q1, "system")), "sqlite");
	cr_expect_eq(json_integer_value(json_object_get(q1, "calls")), 11);
	cr_expect_eq(json_integer_value(json_object_get(q1, "rows")), 20);
	cr_expect_eq(json_integer_value(json_object_get(q1, "errors")), 1);
	cr_expect_eq(json_integer_value(json_object_get(q1, "total_ns")), 55100);
	cr_expect_eq(json_integer_value(json_object_get(q1, "max_ns")), 10000);
	long p50 = (long)json_integer_value(json_object_get(q1, "p50_ns"));
	cr_expect(p50 >= 4500 && p50 <= 6500, "p50 %ld", p50);
	cr_expect_str_eq(json_string_value(json_object_get(q2, "query")), "(text not recorded)");
	cr_expect_null(json_object_get(j, "slowest"), "no raw text: no slowest calls");
	json_decref(j);
	process_free(&p);
	tg_tmpdir_remove(dir);
}

Test(db_analysis, http_rows_by_side_method_route_and_status)
{
	struct tg *tg = tg_create();
	for (int i = 0; i < 4; i++)
		request(tg, T0 + 10 + i, 0, "GET", "/items/{id}", 200, 1000, 300);
	request(tg, T0 + 20, 0, "GET", "/items/{id}", 404, 500, 100);
	request(tg, T0 + 21, PROF_HTTP_SERVER | PROF_HTTP_TLS, "GET", "/items/{id}", 200, 700, 300);
	tg_exit(tg, 0, T0 + 100, 0, 0);
	struct process p;
	json_t *j = load_json(tg, &p, "http");
	json_t *rs = json_object_get(j, "requests");
	cr_assert_eq(json_array_size(rs), 3);
	json_t *r0 = json_array_get(rs, 0);
	cr_expect_str_eq(json_string_value(json_object_get(r0, "side")), "client");
	cr_expect_str_eq(json_string_value(json_object_get(r0, "method")), "GET");
	cr_expect_str_eq(json_string_value(json_object_get(r0, "target")), "/items/{id}");
	cr_expect_eq(json_integer_value(json_object_get(r0, "status")), 200);
	cr_expect_eq(json_integer_value(json_object_get(r0, "calls")), 4);
	cr_expect_eq(json_integer_value(json_object_get(r0, "bytes")), 1200);
	cr_expect_eq(json_integer_value(json_object_get(r0, "total_ns")), 4000);
	cr_expect_eq(json_integer_value(json_object_get(r0, "p99_ns")), 1000);
	json_t *srv = json_array_get(rs, 1);
	cr_expect_str_eq(json_string_value(json_object_get(srv, "side")), "server");
	cr_expect(json_is_true(json_object_get(srv, "tls")));
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(rs, 2), "status")), 404);
	json_decref(j);
	process_free(&p);
	tg_tmpdir_remove(dir);
}
