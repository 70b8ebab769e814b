/* The processes of a run as a tree: each under its parent (by ppid, on the same host), an exec
 * chain (the traces one pid left, one image after another) as one node; for prof report. */
#include "tree.h"

#include "format.h"
#include "stackfmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

size_t figures_each(void (*fn)(void *, const struct family *, const struct family_figure *,
			       size_t), void *ctx)
{
	size_t k = 0;
	for (size_t f = 0; families[f]; f++)
		for (size_t g = 0; g < families[f]->nfigures && k < FIGURES_MAX; g++, k++)
			if (fn)
				fn(ctx, families[f], &families[f]->figures[g], k);
	return k;
}

struct take_ctx {
	const struct process *p;
	struct run_proc *r;
};

static void take_figure(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct take_ctx *c = ctx;
	c->r->fig[k] = f->has_data(c->p) ? g->get(c->p) : 0;
}

static char *dup_or_null(const char *s, int *oom)
{
	char *d = s ? strdup(s) : NULL;
	*oom |= s && !d;
	return d;
}

int run_proc_of(struct run_proc *r, const struct process *p)
{
	int oom = 0;
	*r = (struct run_proc){ .pid = p->hdr.pid, .ppid = p->hdr.ppid, .rank = p->hdr.rank,
				.start_realtime_ns = p->hdr.start_realtime_ns, .end_ns = p->end_ns,
				.cpu_ns = process_cpu_ns(p), .exit_kind = p->exit_kind,
				.exit_value = p->exit_value, .argc = p->argc };
	if (p->nreaped) {
		if ((r->reaped = malloc(p->nreaped * sizeof(*r->reaped))))
			memcpy(r->reaped, p->reaped, p->nreaped * sizeof(*r->reaped));
		r->nreaped = r->reaped ? p->nreaped : 0;
		oom |= !r->reaped;
	}
	r->host = dup_or_null(p->host, &oom);
	r->exe = dup_or_null(p->exe, &oom);
	r->path = dup_or_null(p->path, &oom);
	r->exec_path = dup_or_null(p->exec_path, &oom);
	if (!(r->argv = calloc(p->argc + 1, sizeof(char *))))
		oom = 1;
	for (uint32_t i = 0; r->argv && i < p->argc; i++)
		r->argv[i] = dup_or_null(p->argv[i], &oom);
	struct take_ctx c = { p, r };
	figures_each(take_figure, &c);
	if (oom)
		run_proc_free(r);
	return oom ? -1 : 0;
}

void run_proc_free(struct run_proc *r)
{
	free(r->host);
	free(r->exe);
	free(r->path);
	free(r->exec_path);
	free(r->reaped);
	for (uint32_t i = 0; r->argv && i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	memset(r, 0, sizeof(*r));
}

static const char *host_of(const struct run_proc *p)
{
	return p->host ? p->host : "";
}

static int by_host_pid_start(const void *a, const void *b)
{
	const struct run_proc *x = *(const struct run_proc *const *)a,
			      *y = *(const struct run_proc *const *)b;
	int c = strcmp(host_of(x), host_of(y));
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_realtime_ns != y->start_realtime_ns)
		return x->start_realtime_ns < y->start_realtime_ns ? -1 : 1;
	return 0;
}

static uint64_t node_start(const struct tree_node *t)
{
	return t->images[0]->start_realtime_ns;
}

static uint64_t node_end(const struct tree_node *t)
{
	const struct run_proc *last = t->images[t->nimages - 1];
	return last->start_realtime_ns + last->end_ns;
}

/* The node of the process that forked t: same host, pid t's ppid, alive when t started (a
 * pid used twice); -1 when it is not in the run. */
static long parent_of(const struct proc_tree *tr, size_t at)
{
	const struct tree_node *t = &tr->nodes[at];
	long best = -1;
	for (size_t i = 0; i < tr->n; i++) {
		const struct tree_node *c = &tr->nodes[i];
		if (i == at || c->images[0]->pid != t->images[0]->ppid ||
		    strcmp(host_of(c->images[0]), host_of(t->images[0])) ||
		    node_start(c) > node_start(t))
			continue;
		if (best < 0 || node_start(c) > node_start(&tr->nodes[best]))
			best = (long)i;
	}
	return best;
}

/* A node's end: its last image's; where that wrote none (a signal killed it), as its parent's
 * wait call returned it, the parent's latest for that pid. */
static void node_exit(const struct proc_tree *tr, struct tree_node *t)
{
	const struct run_proc *end = t->images[t->nimages - 1];
	t->exit_kind = end->exit_kind;
	t->exit_value = end->exit_value;
	t->seen_by_parent = 0;
	if (end->exit_kind != EXIT_UNKNOWN || t->parent < 0)
		return;
	const struct tree_node *parent = &tr->nodes[t->parent];
	for (size_t i = 0; i < parent->nimages; i++) {
		const struct run_proc *p = parent->images[i];
		for (size_t k = 0; k < p->nreaped; k++) {
			int st = p->reaped[k].status;
			if (p->reaped[k].pid != end->pid || !(WIFSIGNALED(st) || WIFEXITED(st)))
				continue;
			t->seen_by_parent = 1;
			t->exit_kind = WIFSIGNALED(st) ? EXIT_SIGNAL : EXIT_CODE;
			t->exit_value = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
		}
	}
}

int proc_tree_build(const struct run_proc *ps, size_t n, struct proc_tree *tr)
{
	memset(tr, 0, sizeof(*tr));
	const struct run_proc **order = malloc((n ? n : 1) * sizeof(*order));
	tr->nodes = calloc(n ? n : 1, sizeof(*tr->nodes));
	if (!order || !tr->nodes)
		goto oom;
	for (size_t i = 0; i < n; i++)
		order[i] = &ps[i];
	qsort(order, n, sizeof(*order), by_host_pid_start);
	/* An image that exec'd is followed, in its chain, by the next trace of its pid. */
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && order[j - 1]->exit_kind == EXIT_EXEC &&
		       order[j]->pid == order[i]->pid &&
		       !strcmp(host_of(order[j]), host_of(order[i])))
			j++;
		struct tree_node *t = &tr->nodes[tr->n++];
		t->images = order + i;
		t->nimages = j - i;
		t->parent = -1;
		i = j;
	}
	for (size_t i = 0; i < tr->n; i++)
		tr->nodes[i].parent = parent_of(tr, i);
	for (size_t i = 0; i < tr->n; i++)
		node_exit(tr, &tr->nodes[i]);
	tr->order = order;
	return 0;
oom:
	free(order);
	free(tr->nodes);
	memset(tr, 0, sizeof(*tr));
	return -1;
}

void proc_tree_free(struct proc_tree *tr)
{
	free(tr->order);
	free(tr->nodes);
	memset(tr, 0, sizeof(*tr));
}

/* A node's CPU time (all its threads, all its images) and one of its figures (index k). */
static uint64_t node_cpu_ns(const struct tree_node *t)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < t->nimages; i++)
		ns += t->images[i]->cpu_ns;
	return ns;
}

static uint64_t node_figure(const struct tree_node *t, const struct family_figure *g, size_t k)
{
	uint64_t v = 0;
	for (size_t i = 0; i < t->nimages; i++) {
		uint64_t x = t->images[i]->fig[k];
		v = g->peak ? (x > v ? x : v) : v + x;
	}
	return v;
}

const char *figure_fmt(const char *key, uint64_t v, char *buf, size_t len)
{
	if (strstr(key, "_ns"))
		return fmt_ns(v, buf, len);
	if (strstr(key, "bytes"))
		return fmt_bytes(v, buf, len);
	return fmt_count(v, buf, len);
}

/* ---- text -------------------------------------------------------------------------------- */

/* One image: its command line, shortened. */
static void print_image(FILE *out, const struct run_proc *p)
{
	char arg[1024];
	size_t shown = 0;
	for (uint32_t i = 0; i < p->argc || (i == 0 && !p->argc); i++) {
		const char *a = p->argc ? p->argv[i] : p->exe;
		if (i && shown + strlen(a) > 60) {
			fprintf(out, " ...");
			break;
		}
		shown += fprintf(out, "%s%s", i ? " " : "", fmt_arg(a, arg, sizeof(arg)));
	}
}

/* A node's figures: in text those it has, in JSON every one. */
struct figure_out {
	FILE *out;
	const struct tree_node *t;
	json_t *o;
};

static void print_figure(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct figure_out *c = ctx;
	char a[32];
	uint64_t v = node_figure(c->t, g, k);
	(void)f;
	if (v)
		fprintf(c->out, ", %s %s", g->title, figure_fmt(g->key, v, a, sizeof(a)));
}

static void json_figure(void *ctx, const struct family *f, const struct family_figure *g, size_t k)
{
	struct figure_out *c = ctx;
	(void)f;
	json_object_set_new(c->o, g->key, json_integer((json_int_t)node_figure(c->t, g, k)));
}

static void print_node(FILE *out, const struct proc_tree *tr, size_t at, char *prefix,
		       size_t plen, int last, int depth)
{
	const struct tree_node *t = &tr->nodes[at];
	const struct run_proc *end = t->images[t->nimages - 1];
	char a[32], b[32];
	fprintf(out, "   %s%s%u ", prefix, depth ? (last ? "`- " : "|- ") : "", t->images[0]->pid);
	for (size_t i = 0; i < t->nimages; i++) {
		if (i)
			fputs(" -> ", out);
		print_image(out, t->images[i]);
	}
	fputs("  [", out);
	switch (t->exit_kind) {
	case EXIT_CODE: fprintf(out, "exit %d", t->exit_value); break;
	case EXIT_SIGNAL: fprintf(out, "signal %d", t->exit_value); break;
	case EXIT_EXEC: fprintf(out, "exec %s", end->exec_path ? end->exec_path : "?"); break;
	default: fputs("no exit recorded", out); break;
	}
	if (t->seen_by_parent)
		fputs(", seen by its parent", out);
	fprintf(out, ", %s, CPU %s", fmt_ns(node_end(t) - node_start(t), a, sizeof(a)),
		fmt_ns(node_cpu_ns(t), b, sizeof(b)));
	struct figure_out c = { out, t, NULL };
	figures_each(print_figure, &c);
	fputs("]\n", out);
	if (depth >= 64 || plen + 4 >= 256)
		return;
	if (depth)
		plen += (size_t)snprintf(prefix + plen, 256 - plen, "%s", last ? "   " : "|  ");
	size_t nkids = 0, seen = 0;
	for (size_t i = 0; i < tr->n; i++)
		nkids += tr->nodes[i].parent == (long)at;
	for (size_t i = 0; i < tr->n; i++)
		if (tr->nodes[i].parent == (long)at)
			print_node(out, tr, i, prefix, plen, ++seen == nkids, depth + 1);
	prefix[plen - (depth ? 3 : 0)] = '\0';
}

void proc_tree_print(FILE *out, const struct proc_tree *tr)
{
	char prefix[256] = "";
	size_t traces = 0;
	for (size_t i = 0; i < tr->n; i++)
		traces += tr->nodes[i].nimages;
	fprintf(out, "%s-- Process tree (%zu process%s, %zu trace%s: an exec chain on one line)%s\n",
		fmt_sgr(SGR_BOLD), tr->n, tr->n == 1 ? "" : "es", traces, traces == 1 ? "" : "s",
		fmt_sgr(NULL));
	for (size_t i = 0; i < tr->n; i++)
		if (tr->nodes[i].parent < 0)
			print_node(out, tr, i, prefix, 0, 1, 0);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static json_t *node_json(const struct proc_tree *tr, size_t at, int depth)
{
	const struct tree_node *t = &tr->nodes[at];
	const struct run_proc *end = t->images[t->nimages - 1];
	json_t *images = json_array(), *kids = json_array();
	for (size_t i = 0; i < t->nimages; i++) {
		const struct run_proc *p = t->images[i];
		json_t *argv = json_array();
		for (uint32_t k = 0; k < p->argc; k++)
			json_array_append_new(argv, jstr(p->argv[k]));
		json_array_append_new(images, json_pack("{s:o,s:o,s:o}", "exe", jstr(p->exe),
							"argv", argv, "trace", jstr(p->path)));
	}
	json_t *exit = t->exit_kind == EXIT_CODE ? json_pack("{s:i}", "code", t->exit_value) :
		t->exit_kind == EXIT_SIGNAL ? json_pack("{s:i}", "signal", t->exit_value) :
		json_null();
	if (t->seen_by_parent)
		json_object_set_new(exit, "seen_by_parent", json_true());
	json_t *o = json_pack("{s:I,s:I,s:o,s:I,s:I,s:o,s:I}", "pid", (json_int_t)t->images[0]->pid,
			      "ppid", (json_int_t)t->images[0]->ppid, "host", jstr(host_of(end)),
			      "start_ns", (json_int_t)node_start(t),
			      "duration_ns", (json_int_t)(node_end(t) - node_start(t)),
			      "exit", exit, "cpu_ns", (json_int_t)node_cpu_ns(t));
	struct figure_out c = { NULL, t, o };
	figures_each(json_figure, &c);
	json_object_set_new(o, "images", images);
	for (size_t i = 0; i < tr->n && depth < 64; i++)
		if (tr->nodes[i].parent == (long)at)
			json_array_append_new(kids, node_json(tr, i, depth + 1));
	json_object_set_new(o, "children", kids);
	return o;
}

json_t *proc_tree_json(const struct proc_tree *tr)
{
	json_t *roots = json_array();
	for (size_t i = 0; i < tr->n; i++)
		if (tr->nodes[i].parent < 0)
			json_array_append_new(roots, node_json(tr, i, 0));
	return roots;
}
