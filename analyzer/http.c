/* Analysis of HTTP requests (HTTP_REQ): per side, method, route and status, calls, response
 * bytes and latency percentiles (io.h's histograms) with the stack of the first; latency by
 * stack for `prof flame --kind http`. Memory grows with distinct rows, not requests. */
#include "exports.h"
#include "family.h"
#include "format.h"
#include "grow.h"
#include "io.h"
#include "process.h"
#include "stackfmt.h"
#include "summary.h"
#include "timeline.h"
#include "trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct http_row {
	char *target;
	char method[16];
	uint32_t status, flags, stack;
	uint64_t calls, bytes, total_ns;
	struct io_hist hist;
};

struct http_stats {
	struct http_row *rows;
	size_t n, cap;
	struct u64map by_key;    /* hash of (flags, method, target, status) -> index (uint32_t) */
	struct u64map by_stack;  /* stack -> latency ns (uint64_t) */
	uint64_t calls;
};

extern const struct family http_family;

static struct http_stats *http_of(const struct process *p)
{
	return process_family_state(p, &http_family);
}

static void http_init(void *state)
{
	struct http_stats *s = state;
	u64map_init(&s->by_key, sizeof(uint32_t));
	u64map_init(&s->by_stack, sizeof(uint64_t));
}

static void http_free(void *state)
{
	struct http_stats *s = state;
	for (size_t i = 0; i < s->n; i++) {
		free(s->rows[i].target);
		io_hist_free(&s->rows[i].hist);
	}
	free(s->rows);
	u64map_free(&s->by_key);
	u64map_free(&s->by_stack);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return h;
}

static int same_row(const struct http_row *w, const struct prof_rec_http_req *r, const char *method)
{
	return w->flags == r->h.flags && w->status == r->status && !strcmp(w->method, method) &&
	       !strcmp(w->target, r->target);
}

/* The row of a request, made when new; NULL when out of memory. */
static struct http_row *row_of(struct http_stats *s, const struct prof_rec_http_req *r)
{
	char method[16];
	memcpy(method, r->method, sizeof(method));
	method[15] = '\0';
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, &r->h.flags, sizeof(r->h.flags));
	h = hash_bytes(h, &r->status, sizeof(r->status));
	h = hash_bytes(h, method, strlen(method));
	h = hash_bytes(h, r->target, strlen(r->target));
	for (;; h++) {  /* another row with this hash: probe on */
		int created;
		uint32_t *idx = u64map_put(&s->by_key, h, &created);
		if (!idx)
			return NULL;
		if (!created) {
			if (same_row(&s->rows[*idx], r, method))
				return &s->rows[*idx];
			continue;
		}
		char *target = strdup(r->target);
		if (!target || GROW(s->rows, s->n, s->cap) < 0) {
			free(target);
			u64map_del(&s->by_key, h, NULL);
			return NULL;
		}
		struct http_row *w = &s->rows[s->n];
		memset(w, 0, sizeof(*w));
		w->target = target;
		memcpy(w->method, method, sizeof(method));
		w->status = r->status;
		w->flags = r->h.flags;
		w->stack = r->stack;
		*idx = (uint32_t)s->n++;
		return w;
	}
}

static int http_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	(void)p;
	struct http_stats *s = state;
	if (ev->rec->type != PROF_REC_HTTP_REQ)
		return 0;
	const struct prof_rec_http_req *r = (const void *)ev->rec;
	struct http_row *w = row_of(s, r);
	if (!w || io_hist_add(&w->hist, r->duration_ns) < 0)
		return -1;
	w->calls++;
	w->bytes += r->bytes;
	w->total_ns += r->duration_ns;
	s->calls++;
	int created;
	uint64_t *ns = u64map_put(&s->by_stack, r->stack, &created);
	if (!ns)
		return -1;
	*ns += r->duration_ns;
	return 0;
}

static int http_has_data(const struct process *p)
{
	return http_of(p)->calls > 0;
}

static const char *side_name(uint32_t flags)
{
	return flags & PROF_HTTP_SERVER ? "server" : "client";
}

static int cmp_rows(const void *a, const void *b)
{
	const struct http_row *x = *(struct http_row *const *)a, *y = *(struct http_row *const *)b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	int c = strcmp(x->target, y->target);
	if (c)
		return c;
	c = strcmp(x->method, y->method);
	if (c)
		return c;
	if (x->status != y->status)
		return x->status < y->status ? -1 : 1;
	return (int)x->flags - (int)y->flags;
}

/* Rows by total latency, most first; NULL if none or out of memory. */
static struct http_row **rows_sorted(const struct http_stats *s)
{
	struct http_row **v = malloc((s->n ? s->n : 1) * sizeof(*v));
	for (size_t i = 0; v && i < s->n; i++)
		v[i] = &s->rows[i];
	if (v)
		qsort(v, s->n, sizeof(*v), cmp_rows);
	return v;
}

static json_t *http_json(struct process *p, size_t top)
{
	struct http_stats *s = http_of(p);
	json_t *arr = json_array();
	struct http_row **v = rows_sorted(s);
	for (size_t i = 0; v && i < s->n && i < top; i++) {
		const struct http_row *w = v[i];
		json_t *o = json_pack("{s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			"side", side_name(w->flags), "method", jstr(w->method),
			"target", jstr(w->target),
			"status", (json_int_t)w->status, "calls", (json_int_t)w->calls,
			"bytes", (json_int_t)w->bytes, "total_ns", (json_int_t)w->total_ns,
			"avg_ns", (json_int_t)(w->total_ns / w->calls),
			"p50_ns", (json_int_t)io_hist_quantile(&w->hist, 0.50),
			"p95_ns", (json_int_t)io_hist_quantile(&w->hist, 0.95),
			"p99_ns", (json_int_t)io_hist_quantile(&w->hist, 0.99),
			"max_ns", (json_int_t)w->hist.max);
		json_object_set_new(o, "tls", json_boolean(w->flags & PROF_HTTP_TLS));
		json_object_set_new(o, "stack", stack_json(p, w->stack));
		json_array_append_new(arr, o);
	}
	free(v);
	return json_pack("{s:o}", "requests", arr);
}

static void http_print(FILE *out, struct process *p, size_t top, int frames)
{
	struct http_stats *s = http_of(p);
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32];
	fprintf(out, "\n-- HTTP\n   %s requests\n\n", fmt_count(s->calls, a, sizeof(a)));
	fprintf(out, "   %10s %8s %10s %9s %9s %9s %9s %9s  %-6s %-7s %6s %s\n", "TIME", "CALLS",
		"BYTES", "AVG", "P50", "P95", "P99", "MAX", "SIDE", "METHOD", "STATUS", "ROUTE");
	struct http_row **v = rows_sorted(s);
	size_t shown = s->n < top ? s->n : top;
	for (size_t i = 0; v && i < shown; i++) {
		const struct http_row *w = v[i];
		char status[16] = "-";
		if (w->status)
			snprintf(status, sizeof(status), "%u", w->status);
		fprintf(out, "   %10s %8s %10s %9s %9s %9s %9s %9s  %-6s %-7s %6s %s%s\n",
			fmt_ns(w->total_ns, a, sizeof(a)), fmt_count(w->calls, b, sizeof(b)),
			fmt_bytes(w->bytes, c, sizeof(c)),
			fmt_ns(w->total_ns / w->calls, d, sizeof(d)),
			fmt_ns(io_hist_quantile(&w->hist, 0.50), e, sizeof(e)),
			fmt_ns(io_hist_quantile(&w->hist, 0.95), f, sizeof(f)),
			fmt_ns(io_hist_quantile(&w->hist, 0.99), g, sizeof(g)),
			fmt_ns(w->hist.max, a, sizeof(a)), side_name(w->flags), w->method, status,
			w->target, w->flags & PROF_HTTP_TLS ? " (TLS)" : "");
	}
	if (s->n > top)
		fprintf(out, "   (%zu more rows)\n", s->n - top);
	for (size_t i = 0; v && i < shown && i < 5; i++) {
		fprintf(out, "\n   #%zu %s %s %s\n", i + 1, side_name(v[i]->flags), v[i]->method,
			v[i]->target);
		stack_print(out, p, v[i]->stack, frames, "       ");
	}
	free(v);
}

static void http_brief(FILE *out, const struct process *p)
{
	char a[32];
	fprintf(out, ", %s HTTP requests", fmt_count(http_of(p)->calls, a, sizeof(a)));
}

static int http_flame(struct process *p, const char *by, flame_emit_fn emit, void *ctx)
{
	(void)by;
	size_t pos = 0;
	uint64_t stack;
	void *val;
	while (u64map_next(&http_of(p)->by_stack, &pos, &stack, &val))
		emit(ctx, (uint32_t)stack, *(uint64_t *)val);
	return 0;
}

static int http_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	(void)state;
	if (ev->rec->type != PROF_REC_HTTP_REQ)
		return 0;
	const struct prof_rec_http_req *r = (const void *)ev->rec;
	char name[320], method[16];
	memcpy(method, r->method, sizeof(method));
	method[15] = '\0';
	snprintf(name, sizeof(name), "%s %s %u", method, r->target, r->status);
	tl_complete(tl, "http", ev->tid, name, r->h.time, r->duration_ns);
	fprintf(tl->out, ",\"args\":{\"side\":\"%s\",\"bytes\":%" PRIu64 "}", side_name(r->h.flags),
		r->bytes);
	tl_end(tl);
	return 0;
}

static const struct family_timeline http_timeline = {
	0, NULL, NULL, NULL, http_tl_event, NULL,
};

static void http_dump(FILE *out, const struct prof_rec *r)
{
	const struct prof_rec_http_req *q = (const void *)r;
	fprintf(out, " %s%s method=", side_name(r->flags), r->flags & PROF_HTTP_TLS ? " tls" : "");
	fmt_quoted(out, q->method, sizeof(q->method));
	fprintf(out, " status=%u bytes=%" PRIu64 " duration_ns=%" PRIu64 " stack=%u target=",
		q->status, q->bytes, q->duration_ns, q->stack);
	fmt_quoted(out, q->target, r->size - sizeof(*q));
}

static const struct flame_kind http_flames[] = {
	{ "http", "HTTP request latency (client: where sent; server: where answered)",
	  { { "time", "HTTP latency by stack", "ns" } }, http_flame },
};

static const struct family_diff http_diffs[] = {
	{ "Request time per route", "requests", "side,method,target,status", "total_ns" },
	{ "Requests per route", "requests", "side,method,target,status", "calls" },
	{ "Response bytes per route", "requests", "side,method,target,status", "bytes" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int http_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	if (ev->rec->type != PROF_REC_HTTP_REQ)
		return 0;
	const struct prof_rec_http_req *r = (const void *)ev->rec;
	char method[sizeof(r->method) + 1];
	memcpy(method, r->method, sizeof(r->method));
	method[sizeof(r->method)] = '\0';
	return sql_row(o, "http_requests", "iiittitiiii", sql_pid(o), (int64_t)ev->tid,
		       (int64_t)process_rel_time(p, r->h.time),
		       r->h.flags & PROF_HTTP_SERVER ? "server" : "client", method,
		       (int64_t)r->status, r->target, (int64_t)!!(r->h.flags & PROF_HTTP_TLS),
		       (int64_t)r->bytes, (int64_t)r->duration_ns, (int64_t)r->stack);
}

/* ---- summaries ---------------------------------------------------------------------------- */

static int http_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct http_stats *s = state;
	(void)p;
	sum_put_u64(w, s->calls);
	sum_put_u64(w, s->n);
	for (size_t i = 0; i < s->n; i++) {
		struct http_row row = s->rows[i];
		row.target = NULL;
		row.hist.buckets = NULL;
		sum_put_fixed(w, &row, sizeof(row));
		sum_put_str(w, s->rows[i].target);
		io_hist_put(w, &s->rows[i].hist);
	}
	sum_put_map(w, &s->by_key);
	sum_put_map(w, &s->by_stack);
	return 0;
}

static int http_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct http_stats *s = state;
	(void)p;
	int oom = 0;
	s->calls = sum_get_u64(r);
	size_t n = sum_get_count(r, sizeof(struct http_row));
	if (n && !r->bad) {
		if (!(s->rows = calloc(n, sizeof(*s->rows))))
			return -1;
		s->cap = n;
	}
	for (size_t i = 0; i < n && !r->bad && !oom; i++) {
		struct http_row *row = &s->rows[i];
		sum_get_fixed(r, row, sizeof(*row));
		row->target = NULL;
		row->hist.buckets = NULL;
		row->method[sizeof(row->method) - 1] = '\0';
		s->n = i + 1;
		row->target = sum_get_str(r, &oom);
		if (!row->target && !oom)
			r->bad = 1;
		oom = oom || io_hist_get(r, &row->hist) < 0;
	}
	if (oom || sum_get_map(r, &s->by_key) < 0 || sum_get_map(r, &s->by_stack) < 0)
		return -1;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (!r->bad && u64map_next(&s->by_key, &pos, &key, &val))
		r->bad = *(uint32_t *)val >= s->n;
	return 0;
}

const struct family http_family = {
	.name = "http",
	.sum_version = 1,
	.sum_write = http_sum_write,
	.sum_read = http_sum_read,
	.first_type = PROF_HTTP_TYPE_FIRST,
	.last_type = PROF_HTTP_TYPE_LAST,
	.state_size = sizeof(struct http_stats),
	.init = http_init,
	.free = http_free,
	.on_record = http_on_record,
	.has_data = http_has_data,
	.json_key = "http",
	.json = http_json,
	.print = http_print,
	.brief = http_brief,
	.flames = http_flames,
	.nflames = sizeof(http_flames) / sizeof(http_flames[0]),
	.timeline = &http_timeline,
	.dump = http_dump,
	.diffs = http_diffs,
	.ndiffs = sizeof(http_diffs) / sizeof(http_diffs[0]),
	.sql_schema = "CREATE TABLE http_requests(pid INTEGER, tid INTEGER, time_ns INTEGER,"
	" side TEXT, method TEXT, status INTEGER, route TEXT, tls INTEGER, bytes INTEGER,"
	" duration_ns INTEGER, stack INTEGER);\n",
	.sql_row = http_sql_row,
};
