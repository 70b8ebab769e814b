/* Analysis of MPI calls (MPI_CALL): per call name, calls, bytes and time inside MPI (mostly
 * waiting for other ranks), and per call site (name and stack); time by stack for
 * `prof flame --kind mpi`; a process's MPI time as its figure "MPI wait", which the table of
 * ranks shows and takes out of each rank's work when it measures the imbalance. */
#include "family.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "summary.h"
#include "trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct mpi_row {
	uint64_t calls, bytes, total_ns, max_ns;
};

struct mpi_stats {
	struct mpi_row ops[PROF_MPI_OP_MAX + 1];
	struct u64map sites;  /* op << 32 | stack -> struct mpi_row */
	uint64_t calls, bytes, total_ns;
};

extern const struct family mpi_family;

static const char *const op_names[PROF_MPI_OP_MAX + 1] = {
#define PROF_X(name, v) [v] = #name,
	PROF_MPI_OPS(PROF_X)
#undef PROF_X
};

static const char *op_name(unsigned op)
{
	return op <= PROF_MPI_OP_MAX && op_names[op] ? op_names[op] : "MPI_?";
}

static struct mpi_stats *mpi_of(const struct process *p)
{
	return process_family_state(p, &mpi_family);
}

static void mpi_init(void *state)
{
	u64map_init(&((struct mpi_stats *)state)->sites, sizeof(struct mpi_row));
}

static void mpi_free(void *state)
{
	u64map_free(&((struct mpi_stats *)state)->sites);
}

static void row_add(struct mpi_row *w, const struct prof_rec_mpi_call *r)
{
	w->calls++;
	w->bytes += r->bytes;
	w->total_ns += r->duration_ns;
	if (r->duration_ns > w->max_ns)
		w->max_ns = r->duration_ns;
}

static int mpi_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	(void)p;
	struct mpi_stats *s = state;
	if (ev->rec->type != PROF_REC_MPI_CALL)
		return 0;
	const struct prof_rec_mpi_call *r = (const void *)ev->rec;
	unsigned op = ev->rec->flags <= PROF_MPI_OP_MAX ? ev->rec->flags : 0;
	int created;
	struct mpi_row *site = u64map_put(&s->sites, (uint64_t)op << 32 | r->stack, &created);
	if (!site)
		return -1;
	row_add(site, r);
	row_add(&s->ops[op], r);
	s->calls++;
	s->bytes += r->bytes;
	s->total_ns += r->duration_ns;
	return 0;
}

static int mpi_has_data(const struct process *p)
{
	return mpi_of(p)->calls > 0;
}

struct site_ref {
	uint64_t key;
	const struct mpi_row *w;
};

static int by_time(const void *a, const void *b)
{
	const struct site_ref *x = a, *y = b;
	if (x->w->total_ns != y->w->total_ns)
		return x->w->total_ns < y->w->total_ns ? 1 : -1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* The call sites, most time first; *n of them; NULL when none or out of memory. */
static struct site_ref *sites_sorted(const struct mpi_stats *s, size_t *n)
{
	struct site_ref *v = malloc((s->sites.count ? s->sites.count : 1) * sizeof(*v));
	size_t pos = 0;
	uint64_t key;
	void *val;
	*n = 0;
	while (v && u64map_next(&s->sites, &pos, &key, &val))
		v[(*n)++] = (struct site_ref){ key, val };
	if (v)
		qsort(v, *n, sizeof(*v), by_time);
	return v;
}

static json_t *row_json(const char *name, const struct mpi_row *w)
{
	return json_pack("{s:s,s:I,s:I,s:I,s:I}", "name", name, "calls", (json_int_t)w->calls,
			 "bytes", (json_int_t)w->bytes, "total_ns", (json_int_t)w->total_ns,
			 "max_ns", (json_int_t)w->max_ns);
}

static json_t *mpi_json(struct process *p, size_t top)
{
	const struct mpi_stats *s = mpi_of(p);
	json_t *ops = json_array(), *sites = json_array();
	for (unsigned op = 0; op <= PROF_MPI_OP_MAX; op++)
		if (s->ops[op].calls)
			json_array_append_new(ops, row_json(op_name(op), &s->ops[op]));
	size_t n;
	struct site_ref *v = sites_sorted(s, &n);
	for (size_t i = 0; v && i < n && i < top; i++) {
		json_t *o = row_json(op_name((unsigned)(v[i].key >> 32)), v[i].w);
		json_object_set_new(o, "stack", stack_json(p, (uint32_t)v[i].key));
		json_array_append_new(sites, o);
	}
	free(v);
	return json_pack("{s:I,s:I,s:I,s:o,s:o}", "calls", (json_int_t)s->calls,
			 "bytes", (json_int_t)s->bytes, "wait_ns", (json_int_t)s->total_ns,
			 "calls_by_name", ops, "sites", sites);
}

static void mpi_print(FILE *out, struct process *p, size_t top, int frames)
{
	const struct mpi_stats *s = mpi_of(p);
	char a[32], b[32], c[32], d[32];
	fprintf(out, "\n-- MPI\n   %s calls, %s, %s inside MPI (waiting for other ranks, mostly)\n\n",
		fmt_count(s->calls, a, sizeof(a)), fmt_bytes(s->bytes, b, sizeof(b)),
		fmt_ns(s->total_ns, c, sizeof(c)));
	fprintf(out, "   %10s %8s %10s %9s  %s\n", "TIME", "CALLS", "BYTES", "MAX", "CALL");
	for (unsigned op = 0; op <= PROF_MPI_OP_MAX; op++)
		if (s->ops[op].calls)
			fprintf(out, "   %10s %8s %10s %9s  %s\n", fmt_ns(s->ops[op].total_ns, a, sizeof(a)),
				fmt_count(s->ops[op].calls, b, sizeof(b)),
				fmt_bytes(s->ops[op].bytes, c, sizeof(c)),
				fmt_ns(s->ops[op].max_ns, d, sizeof(d)), op_name(op));
	size_t n;
	struct site_ref *v = sites_sorted(s, &n);
	for (size_t i = 0; v && i < n && i < top && i < 5; i++) {
		fprintf(out, "\n   #%zu %s: %s in %s calls\n", i + 1, op_name((unsigned)(v[i].key >> 32)),
			fmt_ns(v[i].w->total_ns, a, sizeof(a)), fmt_count(v[i].w->calls, b, sizeof(b)));
		stack_print(out, p, (uint32_t)v[i].key, frames, "       ");
	}
	free(v);
}

static void mpi_brief(FILE *out, const struct process *p)
{
	char a[32], b[32];
	fprintf(out, ", %s MPI calls (%s)", fmt_count(mpi_of(p)->calls, a, sizeof(a)),
		fmt_ns(mpi_of(p)->total_ns, b, sizeof(b)));
}

static int mpi_flame(struct process *p, const char *by, flame_emit_fn emit, void *ctx)
{
	(void)by;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&mpi_of(p)->sites, &pos, &key, &val))
		emit(ctx, (uint32_t)key, ((const struct mpi_row *)val)->total_ns);
	return 0;
}

static void mpi_dump(FILE *out, const struct prof_rec *r)
{
	const struct prof_rec_mpi_call *m = (const void *)r;
	fprintf(out, " %s bytes=%" PRIu64 " peer=%d duration_ns=%" PRIu64 " stack=%u",
		op_name(r->flags), m->bytes, m->peer, m->duration_ns, m->stack);
}

static uint64_t mpi_wait(const struct process *p)
{
	return mpi_of(p)->total_ns;
}

static const struct family_figure mpi_figures[] = {
	{ "MPI wait", "mpi_wait_ns", 0, mpi_wait, 1 },
};

static const struct flame_kind mpi_flames[] = {
	{ "mpi", "time inside MPI calls (waiting for other ranks), by stack",
	  { { "time", "MPI time by stack", "ns" } }, mpi_flame },
};

static const struct family_diff mpi_diffs[] = {
	{ "MPI time per call", "calls_by_name", "name", "total_ns" },
	{ "MPI time per call site", "sites", "name,stack", "total_ns" },
};

/* ---- summaries ---------------------------------------------------------------------------- */

static int mpi_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct mpi_stats *s = state;
	(void)p;
	sum_put_fixed(w, s->ops, sizeof(s->ops));
	sum_put_map(w, &s->sites);
	sum_put_u64(w, s->calls);
	sum_put_u64(w, s->bytes);
	sum_put_u64(w, s->total_ns);
	return 0;
}

static int mpi_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct mpi_stats *s = state;
	(void)p;
	sum_get_fixed(r, s->ops, sizeof(s->ops));
	if (sum_get_map(r, &s->sites) < 0)
		return -1;
	s->calls = sum_get_u64(r);
	s->bytes = sum_get_u64(r);
	s->total_ns = sum_get_u64(r);
	return 0;
}

const struct family mpi_family = {
	.name = "mpi",
	.first_type = PROF_MPI_TYPE_FIRST,
	.last_type = PROF_MPI_TYPE_LAST,
	.state_size = sizeof(struct mpi_stats),
	.init = mpi_init,
	.free = mpi_free,
	.on_record = mpi_on_record,
	.has_data = mpi_has_data,
	.json_key = "mpi",
	.json = mpi_json,
	.print = mpi_print,
	.brief = mpi_brief,
	.flames = mpi_flames,
	.nflames = sizeof(mpi_flames) / sizeof(mpi_flames[0]),
	.dump = mpi_dump,
	.diffs = mpi_diffs,
	.ndiffs = sizeof(mpi_diffs) / sizeof(mpi_diffs[0]),
	.figures = mpi_figures,
	.nfigures = sizeof(mpi_figures) / sizeof(mpi_figures[0]),
	.sum_version = 1,
	.sum_write = mpi_sum_write,
	.sum_read = mpi_sum_read,
};
