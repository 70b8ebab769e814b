/* The ranks of an MPI or batch job: per rank (the processes that carry it, from any host,
 * added up) wall time, work (wall less MPI wait), CPU and each family's figures; and the
 * imbalance of work between the slowest rank and the mean. Times are each process's own, from its own start: the hosts' clocks are
 * never compared, so traces copied together from several hosts line up. */
#include "tree.h"

#include "format.h"
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>

struct rank_row {
	int32_t rank;
	size_t processes;
	const char *host, *other_host;  /* first host seen; another if the rank spans two */
	uint64_t wall_ns, cpu_ns, wait_ns;
	uint64_t fig[FIGURES_MAX];
};

struct fill_ctx {
	struct rank_row *row;
	const struct run_proc *p;
};

static void fill_figure(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct fill_ctx *c = ctx;
	uint64_t v = c->p->fig[k];
	(void)f;
	c->row->fig[k] = g->peak ? (v > c->row->fig[k] ? v : c->row->fig[k]) : c->row->fig[k] + v;
	if (g->wait)
		c->row->wait_ns += v;
}

static int by_rank(const void *a, const void *b)
{
	const struct rank_row *x = a, *y = b;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The rows, by rank; *nrows 0 (and NULL) when no process has a rank or out of memory. */
static struct rank_row *rank_rows(const struct run_proc *ps, size_t n, size_t *nrows)
{
	struct rank_row *rows = calloc(n ? n : 1, sizeof(*rows));
	*nrows = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct run_proc *p = &ps[i];
		if (p->rank < 0)
			continue;
		size_t r = 0;
		while (r < *nrows && rows[r].rank != p->rank)
			r++;
		if (r == *nrows) {
			rows[r].rank = p->rank;
			rows[r].host = p->host;
			(*nrows)++;
		}
		struct rank_row *row = &rows[r];
		if (p->host && row->host && strcmp(p->host, row->host))
			row->other_host = p->host;
		row->processes++;
		if (p->end_ns > row->wall_ns)
			row->wall_ns = p->end_ns;
		row->cpu_ns += p->cpu_ns;
		struct fill_ctx c = { row, p };
		figures_each(fill_figure, &c);
	}
	if (!*nrows) {
		free(rows);
		return NULL;
	}
	qsort(rows, *nrows, sizeof(*rows), by_rank);
	return rows;
}

/* A rank's work: its wall time less what it waited for the others (MPI). Spinning MPI
 * implementations burn CPU while they wait, so CPU time would hide the imbalance. */
static uint64_t work(const struct rank_row *r)
{
	return r->wall_ns > r->wait_ns ? r->wall_ns - r->wait_ns : 0;
}

static size_t slowest(const struct rank_row *rows, size_t n, uint64_t *mean)
{
	size_t s = 0;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += work(&rows[i]);
		if (work(&rows[i]) > work(&rows[s]))
			s = i;
	}
	*mean = sum / n;
	return s;
}

static size_t hosts(const struct rank_row *rows, size_t n)
{
	size_t h = 0;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = rows[j].host && rows[i].host && !strcmp(rows[j].host, rows[i].host);
		h += !seen;
	}
	return h;
}

/* Text shows the figures some rank has (no GPU column for a job without CUDA). */
struct print_ctx {
	FILE *out;
	const struct rank_row *row;
	int shown[FIGURES_MAX];
};

static void print_title(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct print_ctx *c = ctx;
	(void)f;
	if (c->shown[k])
		fprintf(c->out, " %12s", g->title);
}

static void print_value(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct print_ctx *c = ctx;
	char a[32];
	(void)f;
	if (c->shown[k])
		fprintf(c->out, " %12s", figure_fmt(g->key, c->row->fig[k], a, sizeof(a)));
}

void ranks_print(FILE *out, const struct run_proc *ps, size_t n)
{
	size_t nr;
	struct rank_row *rows = rank_rows(ps, n, &nr);
	if (!rows)
		return;
	char a[32], b[32], c[32];
	fprintf(out, "%s-- Ranks (%zu, on %zu host%s)%s\n", fmt_sgr(SGR_BOLD), nr, hosts(rows, nr),
		hosts(rows, nr) == 1 ? "" : "s", fmt_sgr(NULL));
	fprintf(out, "   Times are from each process's own start: the clocks of different hosts are "
		"not compared.\n");
	struct print_ctx pc = { out, NULL, { 0 } };
	for (size_t i = 0; i < nr; i++)
		for (size_t k = 0; k < FIGURES_MAX; k++)
			pc.shown[k] |= rows[i].fig[k] != 0;
	fprintf(out, "   %6s %-16s %5s %10s %10s %10s", "RANK", "HOST", "PROCS", "WALL", "WORK", "CPU");
	figures_each(print_title, &pc);
	fputc('\n', out);
	for (size_t i = 0; i < nr; i++) {
		char host[40];
		snprintf(host, sizeof(host), "%s%s", rows[i].host ? rows[i].host : "?",
			 rows[i].other_host ? ",..." : "");
		fprintf(out, "   %6d %-16s %5zu %10s %10s %10s", rows[i].rank, host, rows[i].processes,
			fmt_ns(rows[i].wall_ns, a, sizeof(a)), fmt_ns(work(&rows[i]), c, sizeof(c)),
			fmt_ns(rows[i].cpu_ns, b, sizeof(b)));
		pc.row = &rows[i];
		figures_each(print_value, &pc);
		fputc('\n', out);
	}
	uint64_t mean;
	size_t s = slowest(rows, nr, &mean);
	if (nr > 1 && mean)
		fprintf(out, "   Imbalance: rank %d is the slowest, work %s against a mean of %s (%.2fx);\n"
			"   work is wall time less time waiting inside MPI\n", rows[s].rank,
			fmt_ns(work(&rows[s]), a, sizeof(a)), fmt_ns(mean, c, sizeof(c)),
			(double)work(&rows[s]) / (double)mean);
	fputc('\n', out);
	free(rows);
}

struct json_ctx {
	json_t *o;
	const struct rank_row *row;
};

static void json_value(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct json_ctx *c = ctx;
	(void)f;
	json_object_set_new(c->o, g->key, json_integer((json_int_t)c->row->fig[k]));
}

json_t *ranks_json(const struct run_proc *ps, size_t n)
{
	size_t nr;
	struct rank_row *rows = rank_rows(ps, n, &nr);
	if (!rows)
		return json_null();
	json_t *arr = json_array();
	for (size_t i = 0; i < nr; i++) {
		json_t *o = json_pack("{s:i,s:o,s:I,s:I,s:I,s:I}", "rank", rows[i].rank,
				      "host", jstr(rows[i].host), "processes", (json_int_t)rows[i].processes,
				      "wall_ns", (json_int_t)rows[i].wall_ns, "work_ns", (json_int_t)work(&rows[i]),
				      "cpu_ns", (json_int_t)rows[i].cpu_ns);
		struct json_ctx c = { o, &rows[i] };
		figures_each(json_value, &c);
		json_array_append_new(arr, o);
	}
	uint64_t mean;
	size_t s = slowest(rows, nr, &mean);
	json_t *doc = json_pack("{s:s,s:I,s:o,s:{s:s,s:i,s:I,s:I,s:f}}",
		"clock", "each process's own start", "hosts", (json_int_t)hosts(rows, nr), "ranks", arr,
		"imbalance", "metric", "work_ns", "slowest_rank", rows[s].rank,
		"max", (json_int_t)work(&rows[s]), "mean", (json_int_t)mean,
		"ratio", mean ? (double)work(&rows[s]) / (double)mean : 0.0);
	free(rows);
	return doc;
}
