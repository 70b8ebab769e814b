/* Analysis of database queries (DB_SQL, DB_QUERY): per normalized statement, calls, rows,
 * errors and latency percentiles (io.h's histograms), the stack of its first call; with
 * PROF_DB_LITERALS=1 traces, the slowest calls with their raw text; time by stack for
 * `prof flame --kind db`. Memory grows with distinct statements and stacks, not calls. */
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

struct db_query {
	uint64_t sql;
	unsigned system;
	uint64_t calls, rows, errors, total_ns;
	struct io_hist hist;
	uint32_t stack;  /* of its first call */
};

/* A call among the slowest, kept only when the trace has raw text (PROF_DB_LITERALS=1). */
struct db_slow {
	uint64_t duration_ns, time_ns, raw, sql, rows;
	int32_t status;
	uint32_t stack;
};
#define DB_SLOWEST_KEPT 32

struct db_stats {
	struct db_query *q;
	size_t n, cap;
	struct u64map by_sql;    /* sql id -> index in q (uint32_t) */
	struct u64map texts;     /* sql id -> char * */
	struct u64map by_stack;  /* stack -> struct db_weight */
	struct db_slow slow[DB_SLOWEST_KEPT];
	size_t nslow;
	uint64_t calls;
};

struct db_weight {
	uint64_t ns, calls;
};

extern const struct family db_family;

static struct db_stats *db_of(const struct process *p)
{
	return process_family_state(p, &db_family);
}

static void db_init(void *state)
{
	struct db_stats *s = state;
	u64map_init(&s->by_sql, sizeof(uint32_t));
	u64map_init(&s->texts, sizeof(char *));
	u64map_init(&s->by_stack, sizeof(struct db_weight));
}

static void db_free(void *state)
{
	struct db_stats *s = state;
	for (size_t i = 0; i < s->n; i++)
		io_hist_free(&s->q[i].hist);
	free(s->q);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->texts, &pos, &key, &val))
		free(*(char **)val);
	u64map_free(&s->by_sql);
	u64map_free(&s->texts);
	u64map_free(&s->by_stack);
}

static const char *text_of(const struct db_stats *s, uint64_t id)
{
	char **t = u64map_get(&s->texts, id);
	return t && *t ? *t : "(text not recorded)";
}

/* Keeps the call if it is among the slowest (the smallest kept is replaced). */
static void slow_add(struct db_stats *s, const struct db_slow *c)
{
	size_t at = s->nslow;
	if (s->nslow == DB_SLOWEST_KEPT) {
		at = 0;
		for (size_t i = 1; i < s->nslow; i++)
			if (s->slow[i].duration_ns < s->slow[at].duration_ns)
				at = i;
		if (s->slow[at].duration_ns >= c->duration_ns)
			return;
	} else {
		s->nslow++;
	}
	s->slow[at] = *c;
}

static int on_query(struct process *p, struct db_stats *s, const struct prof_rec_db_query *r)
{
	int created;
	uint32_t *idx = u64map_put(&s->by_sql, r->sql, &created);
	if (!idx)
		return -1;
	if (created) {
		if (GROW(s->q, s->n, s->cap) < 0) {
			u64map_del(&s->by_sql, r->sql, NULL);
			return -1;
		}
		memset(&s->q[s->n], 0, sizeof(s->q[0]));
		s->q[s->n].sql = r->sql;
		s->q[s->n].system = r->h.flags;
		s->q[s->n].stack = r->stack;
		*idx = (uint32_t)s->n++;
	}
	struct db_query *q = &s->q[*idx];
	q->calls++;
	q->rows += r->rows;
	q->errors += r->status != 0;
	q->total_ns += r->duration_ns;
	if (io_hist_add(&q->hist, r->duration_ns) < 0)
		return -1;
	s->calls++;
	struct db_weight *w = u64map_put(&s->by_stack, r->stack, &created);
	if (!w)
		return -1;
	w->ns += r->duration_ns;
	w->calls++;
	if (r->raw) {
		struct db_slow c = { r->duration_ns, process_rel_time(p, r->h.time), r->raw, r->sql,
				     r->rows, r->status, r->stack };
		slow_add(s, &c);
	}
	return 0;
}

static int db_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	struct db_stats *s = state;
	if (ev->rec->type == PROF_REC_DB_QUERY)
		return on_query(p, s, (const void *)ev->rec);
	if (ev->rec->type != PROF_REC_DB_SQL)
		return 0;
	const struct prof_rec_db_sql *r = (const void *)ev->rec;
	int created;
	char **t = u64map_put(&s->texts, r->id, &created);
	if (!t)
		return -1;
	if (!created)
		return 0;
	return (*t = strdup(r->text)) ? 0 : -1;
}

static int db_has_data(const struct process *p)
{
	return db_of(p)->calls > 0;
}

static int cmp_queries(const void *a, const void *b)
{
	const struct db_query *x = *(struct db_query *const *)a, *y = *(struct db_query *const *)b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return x->sql < y->sql ? -1 : x->sql > y->sql;
}

/* Statements by total time, most first; NULL if none or out of memory. */
static struct db_query **queries_sorted(const struct db_stats *s)
{
	struct db_query **v = malloc((s->n ? s->n : 1) * sizeof(*v));
	for (size_t i = 0; v && i < s->n; i++)
		v[i] = &s->q[i];
	if (v)
		qsort(v, s->n, sizeof(*v), cmp_queries);
	return v;
}

static int cmp_slow(const void *a, const void *b)
{
	const struct db_slow *x = a, *y = b;
	if (x->duration_ns != y->duration_ns)
		return x->duration_ns < y->duration_ns ? 1 : -1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static json_t *db_json(struct process *p, size_t top)
{
	struct db_stats *s = db_of(p);
	json_t *arr = json_array();
	struct db_query **v = queries_sorted(s);
	for (size_t i = 0; v && i < s->n && i < top; i++) {
		const struct db_query *q = v[i];
		json_t *o = json_pack("{s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			"system", prof_db_system_name(q->system), "query", jstr(text_of(s, q->sql)),
			"calls", (json_int_t)q->calls, "rows", (json_int_t)q->rows,
			"errors", (json_int_t)q->errors, "total_ns", (json_int_t)q->total_ns,
			"avg_ns", (json_int_t)(q->total_ns / q->calls),
			"p50_ns", (json_int_t)io_hist_quantile(&q->hist, 0.50),
			"p95_ns", (json_int_t)io_hist_quantile(&q->hist, 0.95),
			"p99_ns", (json_int_t)io_hist_quantile(&q->hist, 0.99),
			"max_ns", (json_int_t)q->hist.max);
		json_object_set_new(o, "stack", stack_json(p, q->stack));
		json_array_append_new(arr, o);
	}
	free(v);
	json_t *doc = json_pack("{s:o}", "queries", arr);
	if (s->nslow) {  /* only in traces recorded with PROF_DB_LITERALS=1 */
		qsort(s->slow, s->nslow, sizeof(s->slow[0]), cmp_slow);
		json_t *sl = json_array();
		for (size_t i = 0; i < s->nslow && i < top; i++) {
			const struct db_slow *c = &s->slow[i];
			json_array_append_new(sl, json_pack("{s:o,s:o,s:I,s:I,s:I,s:i,s:o}",
				"query", jstr(text_of(s, c->sql)), "raw", jstr(text_of(s, c->raw)),
				"duration_ns", (json_int_t)c->duration_ns,
				"time_ns", (json_int_t)c->time_ns,
				"rows", (json_int_t)c->rows, "status", c->status,
				"stack", stack_json(p, c->stack)));
		}
		json_object_set_new(doc, "slowest", sl);
	}
	return doc;
}

/* Up to max bytes of s on one line (newlines become spaces), "..." when cut. */
static void print_clipped(FILE *out, const char *s, size_t max)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n && i < max; i++)
		fputc(s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i], out);
	if (n > max)
		fputs("...", out);
}

static void db_print(FILE *out, struct process *p, size_t top, int frames)
{
	struct db_stats *s = db_of(p);
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32];
	uint64_t total = 0, errors = 0;
	for (size_t i = 0; i < s->n; i++) {
		total += s->q[i].total_ns;
		errors += s->q[i].errors;
	}
	fprintf(out, "\n-- Queries\n   %s calls of %zu statements, %s in queries",
		fmt_count(s->calls, a, sizeof(a)), s->n, fmt_ns(total, b, sizeof(b)));
	if (errors)
		fprintf(out, "; %s failed", fmt_count(errors, c, sizeof(c)));
	fprintf(out, "\n\n   %10s %8s %8s %5s %9s %9s %9s %9s %9s  %-10s %s\n", "TIME", "CALLS",
		"ROWS", "ERR", "AVG", "P50", "P95", "P99", "MAX", "SYSTEM", "QUERY");
	struct db_query **v = queries_sorted(s);
	size_t shown = s->n < top ? s->n : top;
	for (size_t i = 0; v && i < shown; i++) {
		const struct db_query *q = v[i];
		fprintf(out, "   %10s %8s %8s %5" PRIu64 " %9s %9s %9s %9s %9s  %-10s ",
			fmt_ns(q->total_ns, a, sizeof(a)), fmt_count(q->calls, b, sizeof(b)),
			fmt_count(q->rows, c, sizeof(c)), q->errors,
			fmt_ns(q->total_ns / q->calls, d, sizeof(d)),
			fmt_ns(io_hist_quantile(&q->hist, 0.50), e, sizeof(e)),
			fmt_ns(io_hist_quantile(&q->hist, 0.95), f, sizeof(f)),
			fmt_ns(io_hist_quantile(&q->hist, 0.99), g, sizeof(g)),
			fmt_ns(q->hist.max, a, sizeof(a)), prof_db_system_name(q->system));
		print_clipped(out, text_of(s, q->sql), 100);
		fputc('\n', out);
	}
	if (s->n > top)
		fprintf(out, "   (%zu more statements)\n", s->n - top);
	for (size_t i = 0; v && i < shown && i < 5; i++) {
		fprintf(out, "\n   #%zu ", i + 1);
		print_clipped(out, text_of(s, v[i]->sql), 200);
		fputc('\n', out);
		stack_print(out, p, v[i]->stack, frames, "       ");
	}
	free(v);
	if (s->nslow) {
		qsort(s->slow, s->nslow, sizeof(s->slow[0]), cmp_slow);
		fprintf(out, "\n   Slowest calls (PROF_DB_LITERALS=1):\n");
		for (size_t i = 0; i < s->nslow && i < top; i++) {
			fprintf(out, "   #%zu %s at %s: ", i + 1,
				fmt_ns(s->slow[i].duration_ns, a, sizeof(a)),
				fmt_ns(s->slow[i].time_ns, b, sizeof(b)));
			print_clipped(out, text_of(s, s->slow[i].raw), 200);
			fputc('\n', out);
		}
	}
}

static void db_brief(FILE *out, const struct process *p)
{
	char a[32];
	fprintf(out, ", %s queries", fmt_count(db_of(p)->calls, a, sizeof(a)));
}

static int db_flame(struct process *p, const char *by, flame_emit_fn emit, void *ctx)
{
	int calls = !strcmp(by, "calls");
	size_t pos = 0;
	uint64_t stack;
	void *val;
	while (u64map_next(&db_of(p)->by_stack, &pos, &stack, &val)) {
		const struct db_weight *w = val;
		emit(ctx, (uint32_t)stack, calls ? w->calls : w->ns);
	}
	return 0;
}

/* ---- timeline and dump ------------------------------------------------------------------ */

static int db_tl_init(void *state)
{
	db_init(state);
	return 0;
}

static int db_tl_names(void *state, struct timeline *tl, const struct trace_event *ev)
{
	(void)tl;
	return ev->rec->type == PROF_REC_DB_SQL ? db_on_record(NULL, state, ev) : 0;
}

static int db_tl_event(void *state, struct timeline *tl, const struct trace_event *ev)
{
	if (ev->rec->type != PROF_REC_DB_QUERY)
		return 0;
	const struct prof_rec_db_query *r = (const void *)ev->rec;
	if (r->duration_ns < tl->min_ns)
		return 0;
	char name[256];
	snprintf(name, sizeof(name), "%s", text_of(state, r->sql));
	tl_complete(tl, "db", ev->tid, name, r->h.time, r->duration_ns);
	fprintf(tl->out, ",\"args\":{\"system\":\"%s\",\"rows\":%" PRIu64 ",\"status\":%d}",
		prof_db_system_name(r->h.flags), r->rows, r->status);
	tl_end(tl);
	return 0;
}

static const struct family_timeline db_timeline = {
	sizeof(struct db_stats), db_tl_init, db_free, db_tl_names, db_tl_event, NULL,
};

static void db_dump(FILE *out, const struct prof_rec *r)
{
	fprintf(out, " %s", prof_db_system_name(r->flags));
	if (r->type == PROF_REC_DB_SQL) {
		const struct prof_rec_db_sql *q = (const void *)r;
		fprintf(out, " id=%016" PRIx64 " text=", q->id);
		fmt_quoted(out, q->text, r->size - sizeof(*q));
	} else if (r->type == PROF_REC_DB_QUERY) {
		const struct prof_rec_db_query *q = (const void *)r;
		fprintf(out, " sql=%016" PRIx64 " raw=%016" PRIx64 " duration_ns=%" PRIu64
			" rows=%" PRIu64 " status=%d stack=%u", q->sql, q->raw, q->duration_ns,
			q->rows, q->status, q->stack);
	}
}

static const struct flame_kind db_flames[] = {
	{ "db", "time in database queries (--by calls: queries run)",
	  { { "time", "Query time by stack", "ns" }, { "calls", "Queries by stack", "calls" } },
	  db_flame },
};

static const struct family_diff db_diffs[] = {
	{ "Query time per statement", "queries", "system,query", "total_ns" },
	{ "Calls per statement", "queries", "system,query", "calls" },
	{ "Rows per statement", "queries", "system,query", "rows" },
};

/* ---- sqlite ------------------------------------------------------------------------------- */

static int db_sql_row(struct sql_out *o, struct process *p, const struct trace_event *ev)
{
	int64_t pid = sql_pid(o);
	unsigned system = ev->rec->flags;
	if (ev->rec->type == PROF_REC_DB_SQL) {
		const struct prof_rec_db_sql *r = (const void *)ev->rec;
		return sql_row(o, "db_sql", "iitt", pid, (int64_t)r->id,
			       prof_db_system_name(system), r->text);
	}
	if (ev->rec->type != PROF_REC_DB_QUERY)
		return 0;
	const struct prof_rec_db_query *r = (const void *)ev->rec;
	return sql_row(o, "db_queries", "iiitiiiiii", pid, (int64_t)ev->tid,
		       (int64_t)process_rel_time(p, r->h.time), prof_db_system_name(system),
		       (int64_t)r->sql, (int64_t)r->raw, (int64_t)r->duration_ns, (int64_t)r->rows,
		       (int64_t)r->status, (int64_t)r->stack);
}

/* ---- summaries ---------------------------------------------------------------------------- */

static int db_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct db_stats *s = state;
	(void)p;
	sum_put_u64(w, s->calls);
	sum_put_u64(w, s->n);
	for (size_t i = 0; i < s->n; i++) {
		struct db_query q = s->q[i];
		q.hist.buckets = NULL;
		sum_put_fixed(w, &q, sizeof(q));
		io_hist_put(w, &s->q[i].hist);
	}
	sum_put_map(w, &s->by_sql);
	sum_put_map(w, &s->by_stack);
	sum_put_u64(w, s->texts.count);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->texts, &pos, &key, &val)) {
		sum_put_u64(w, key);
		sum_put_str(w, *(char **)val);
	}
	sum_put_u64(w, s->nslow);
	sum_put_fixed(w, s->slow, sizeof(s->slow));
	return 0;
}

static int db_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct db_stats *s = state;
	(void)p;
	int oom = 0;
	s->calls = sum_get_u64(r);
	size_t n = sum_get_count(r, sizeof(struct db_query));
	if (n && !r->bad) {
		if (!(s->q = calloc(n, sizeof(*s->q))))
			return -1;
		s->cap = n;
	}
	for (size_t i = 0; i < n && !r->bad && !oom; i++) {
		sum_get_fixed(r, &s->q[i], sizeof(s->q[i]));
		s->q[i].hist.buckets = NULL;
		s->n = i + 1;
		oom = io_hist_get(r, &s->q[i].hist) < 0;
	}
	if (oom || sum_get_map(r, &s->by_sql) < 0 || sum_get_map(r, &s->by_stack) < 0)
		return -1;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (!r->bad && u64map_next(&s->by_sql, &pos, &key, &val))
		r->bad = *(uint32_t *)val >= s->n;
	size_t nt = sum_get_count(r, 12);
	for (size_t i = 0; i < nt && !r->bad; i++) {
		key = sum_get_u64(r);
		char *text = sum_get_str(r, &oom);
		int created;
		char **slot = oom || r->bad ? NULL : u64map_put(&s->texts, key, &created);
		if (!slot) {
			free(text);
			if (oom || !r->bad)
				return -1;
			break;
		}
		if (!created)
			free(*slot);
		*slot = text;
	}
	s->nslow = sum_get_u64(r);
	sum_get_fixed(r, s->slow, sizeof(s->slow));
	if (s->nslow > DB_SLOWEST_KEPT)
		r->bad = 1;
	return 0;
}

const struct family db_family = {
	.name = "db",
	.sum_version = 1,
	.sum_write = db_sum_write,
	.sum_read = db_sum_read,
	.first_type = PROF_DB_TYPE_FIRST,
	.last_type = PROF_DB_TYPE_LAST,
	.state_size = sizeof(struct db_stats),
	.init = db_init,
	.free = db_free,
	.on_record = db_on_record,
	.has_data = db_has_data,
	.json_key = "db",
	.json = db_json,
	.print = db_print,
	.brief = db_brief,
	.flames = db_flames,
	.nflames = sizeof(db_flames) / sizeof(db_flames[0]),
	.timeline = &db_timeline,
	.dump = db_dump,
	.diffs = db_diffs,
	.ndiffs = sizeof(db_diffs) / sizeof(db_diffs[0]),
	.sql_schema = "CREATE TABLE db_sql(pid INTEGER, id INTEGER, system TEXT, text TEXT);\n"
	"CREATE TABLE db_queries(pid INTEGER, tid INTEGER, time_ns INTEGER, system TEXT,"
	" sql INTEGER, raw INTEGER, duration_ns INTEGER, rows INTEGER, status INTEGER,"
	" stack INTEGER);\n",
	.sql_row = db_sql_row,
};
