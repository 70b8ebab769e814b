/* prof flame: stacks weighted by what the chosen kind measures, as an interactive SVG or
 * as folded stacks. */
#include "commands.h"
#include "family.h"
#include "flame.h"
#include "grow.h"
#include "process.h"
#include "stackfmt.h"
#include "u64map.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One process's stacks, symbolized, handed to a flame_stack_fn. */
struct walk_ctx {
	struct process *p;
	flame_stack_fn fn;
	void *arg;
	int rc;
};

static void walk_stack(struct walk_ctx *c, uint32_t stack, const char *leaf, uint64_t weight)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int truncated;
	if (c->rc || !weight)
		return;
	int n = stack_shown(c->p, stack, frames, PROF_MAX_STACK_DEPTH * 2, NULL, &truncated);
	c->rc = c->fn(c->arg, c->p, frames, n, truncated, leaf, weight);
}

static void emit_sample(void *arg, uint32_t stack, uint64_t weight)
{
	walk_stack(arg, stack, NULL, weight);
}

static void emit_labeled(void *arg, uint32_t stack, const char *leaf, uint64_t weight)
{
	walk_stack(arg, stack, leaf, weight);
}

int flame_walk(struct process *p, const struct family *owner, const struct flame_kind *kind,
	       const char *by, flame_stack_fn fn, void *arg)
{
	struct walk_ctx c = { p, fn, arg, 0 };
	if (owner->flame_labeled ? owner->flame_labeled(p, kind, by, emit_labeled, &c) < 0
				 : kind->collect(p, by, emit_sample, &c) < 0)
		return -1;
	return c.rc;
}

/* flame_collect()'s: the frames' labels into the sample set, under a root of its own. */
struct collect_ctx {
	struct flame_set *ss;
	const char *root;
};

/* The slot of s in a set of nslots (a power of two): where it is, or the free one it goes to. */
static size_t label_slot(char **slots, size_t nslots, const char *s)
{
	size_t i = (size_t)str_hash(s) & (nslots - 1);
	while (slots[i] && strcmp(slots[i], s))
		i = (i + 1) & (nslots - 1);
	return i;
}

/* The set's copy of s, made if it has none: the labels of a run's stacks are few (its
 * functions), its samples many. NULL when out of memory. */
static const char *keep(struct flame_set *ss, const char *s)
{
	if (2 * (ss->nstr + 1) > ss->strcap) {
		size_t cap = ss->strcap ? 2 * ss->strcap : 1024;
		char **slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < ss->strcap; i++)
			if (ss->strings[i])
				slots[label_slot(slots, cap, ss->strings[i])] = ss->strings[i];
		free(ss->strings);
		ss->strings = slots;
		ss->strcap = cap;
	}
	size_t i = label_slot(ss->strings, ss->strcap, s);
	if (!ss->strings[i]) {
		if (!(ss->strings[i] = strdup(s)))
			return NULL;
		ss->nstr++;
	}
	return ss->strings[i];
}

static int add_sample(void *arg, struct process *p, const struct sym_frame *frames, int n,
		      int truncated, const char *leaf, uint64_t weight)
{
	struct collect_ctx *c = arg;
	struct flame_set *ss = c->ss;
	(void)p;
	const char **names = malloc(sizeof(char *) * (size_t)(n + 3));
	if (!names)
		return -1;
	int d = 0;
	if (c->root)
		names[d++] = c->root;
	if (n == 0)
		names[d++] = "[no stack]";
	else if (truncated)  /* its real root is unknown: one root for all such stacks */
		names[d++] = "[truncated]";
	for (int i = n; i-- > 0;) {  /* flame graphs want the root first */
		char buf[256], shorter[256];
		const char *label = frame_label(&frames[i], buf, sizeof(buf));
		/* a Python name's "<locals>" or "<module>" is no template argument */
		if (!frames[i].python)
			label = shorten_templates(label, shorter, sizeof(shorter));
		if (!(names[d++] = keep(ss, label))) {
			free(names);
			return -1;
		}
	}
	if (leaf)
		names[d++] = leaf;  /* a string literal of the family's */
	if (GROW(ss->v, ss->n, ss->cap) < 0) {
		free(names);
		return -1;
	}
	ss->v[ss->n++] = (struct flame_sample){ names, d, weight, 0 };
	return 0;
}

void flame_set_free(struct flame_set *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free((void *)ss->v[i].frames);
	for (size_t i = 0; i < ss->strcap; i++)
		free(ss->strings[i]);
	free(ss->v);
	free(ss->strings);
	*ss = (struct flame_set){ 0 };
}

/* One process's stacks into ss, under a root frame of its own where the run has several. */
static int collect_one(struct flame_set *ss, struct process *p, const struct family *owner,
		       const struct flame_kind *kind, const char *by, int pid_roots, int rooted)
{
	char root[300];
	const char *exe = strrchr(p->exe, '/') ? strrchr(p->exe, '/') + 1 : p->exe;
	if (pid_roots)
		snprintf(root, sizeof(root), "%s (%u)", exe, p->hdr.pid);
	else
		snprintf(root, sizeof(root), "%s", exe);
	struct collect_ctx ctx = { ss, rooted ? keep(ss, root) : NULL };
	if (rooted && !ctx.root)
		return -1;
	return flame_walk(p, owner, kind, by, add_sample, &ctx);
}

int flame_collect(struct flame_set *ss, struct process *ps, size_t n, const struct family *owner,
		  const struct flame_kind *kind, const char *by, int pid_roots)
{
	for (size_t i = 0; i < n; i++) {
		int rc = collect_one(ss, &ps[i], owner, kind, by, pid_roots, n > 1);
		if (rc)
			return rc;
	}
	return 0;
}

/* Moves src's samples to the end of dst, their labels to dst's set; src is left to be
 * freed. -1 when out of memory. */
static int flame_set_move(struct flame_set *dst, struct flame_set *src)
{
	while (dst->cap < dst->n + src->n)  /* GROW at n == cap: doubles */
		if (GROW(dst->v, dst->cap, dst->cap) < 0)
			return -1;
	for (size_t i = 0; i < src->n; i++) {
		struct flame_sample *m = &src->v[i];
		const char **names = (const char **)m->frames;  /* add_sample()'s, malloc'ed */
		for (int d = 0; d < m->depth; d++)
			if (!(names[d] = keep(dst, names[d])))
				return -1;
		dst->v[dst->n++] = *m;
		m->frames = NULL;
	}
	src->n = 0;
	return 0;
}

/* prof flame of a run, a process at a time (cmd_each()): each worker turns the process it
 * loaded into samples of its own, moved into the run's set under the lock, and frees the
 * process, so memory holds the samples and a process per worker, not the run. The order the
 * samples come in does not matter: the writers sort. */
struct flame_run {
	struct flame_set ss;
	const struct family *owner;
	const struct flame_kind *kind;
	const char *by;
	size_t count;  /* processes there may be: each gets a root frame where more than one */
	int failed;
	pthread_mutex_t lock;
};

static void flame_one(void *arg, struct process *p, size_t at)
{
	struct flame_run *r = arg;
	struct flame_set mine = { 0 };
	(void)at;
	int rc = collect_one(&mine, p, r->owner, r->kind, r->by, 1, r->count > 1);
	process_free(p);
	pthread_mutex_lock(&r->lock);
	if (rc || flame_set_move(&r->ss, &mine) < 0)
		r->failed = 1;
	pthread_mutex_unlock(&r->lock);
	flame_set_free(&mine);
}

static const struct cmd_spec flame_spec = {
	"flame", CMD_OUTPUT | CMD_FLAME | CMD_WINDOW, 0,
	"usage: prof flame --kind KIND [-o FILE.svg | --folded] TRACE...\n"
	"A flame graph of the stacks that did KIND's work, widths proportional to it.\n\n"
	"  --kind KIND    what to weigh (default alloc); the kinds are listed below\n"
	"  --by WHAT      another weight of the kind, where it has one (listed below)\n"
	"  -o FILE        write the SVG (or folded text) to FILE (default stdout)\n"
	"  --folded       Brendan Gregg's folded stacks instead of SVG\n"
	"  --diff BASE NEW  a differential flame graph: NEW's stacks, red where they grew\n"
	"                 since BASE, blue where they shrank (BASE scaled to NEW's total);\n"
	"                 stacks match by function names, so two builds compare; with\n"
	"                 --folded, \"stack base new\" lines as difffolded.pl writes them\n"
	"  --from T, --to T  only what happened in that time window (10s, 250ms, ...)\n"
	"  --title TEXT   heading of the SVG\n"
	"  -h, --help     this help\n",
};

/* The kinds, from the family table, after the usage text. */
static void print_kinds(FILE *out)
{
	fputs("\nkinds:\n", out);
	for (size_t i = 0; families[i]; i++)
		for (size_t k = 0; k < families[i]->nflames; k++) {
			const struct flame_kind *fk = &families[i]->flames[k];
			fprintf(out, "  %-8s %s; --by", fk->name, fk->help);
			for (size_t w = 0; w < FLAME_WEIGHTS_MAX && fk->weights[w].by; w++)
				fprintf(out, "%s %s", w ? "," : "", fk->weights[w].by);
			fputc('\n', out);
		}
}

/* The weight --by names (the kind's first when by is NULL), or NULL after saying why. */
const struct flame_weight *flame_pick_weight(const struct flame_kind *kind, const char *by)
{
	for (size_t w = 0; w < FLAME_WEIGHTS_MAX && kind->weights[w].by; w++)
		if (!by || !strcmp(by, kind->weights[w].by))
			return &kind->weights[w];
	char list[128] = "";
	for (size_t w = 0; w < FLAME_WEIGHTS_MAX && kind->weights[w].by; w++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", w ? ", " : "",
			 kind->weights[w].by);
	prof_error("flame: --by %s: %s graphs weigh by %s", by, kind->name, list);
	return NULL;
}

/* The SVG or folded text of the samples; -1 after saying why (a write error: later). */
static int write_flame(FILE *out, const struct cmd_opts *o, const struct flame_weight *weight,
		       const struct flame_set *ss)
{
	const char *title = o->title ? o->title : weight->title;
	int w = o->folded ? (o->diff ? flame_write_folded_diff : flame_write_folded)(out, ss->v, ss->n)
			  : o->diff ? flame_write_svg_diff(out, ss->v, ss->n, title, weight->unit)
				    : flame_write_svg(out, ss->v, ss->n, title, weight->unit);
	if (w < 0 && !ferror(out))
		prof_error("out of memory");
	return w;
}

/* prof flame --diff BASE NEW: NEW's stacks with BASE's weight of the same stack (by
 * symbolized frames) as each sample's base. */
static int flame_diff(const struct cmd_opts *o, const struct family *owner,
		      const struct flame_kind *kind, const struct flame_weight *weight)
{
	if (o->ntraces != 2) {
		prof_error("flame: --diff takes two runs, BASE and NEW (try prof flame --help)");
		return 2;
	}
	struct flame_set base = { 0 }, cur = { 0 };
	struct process *ps[2] = { NULL, NULL };
	size_t n[2] = { 0, 0 };
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		rc = cmd_load_arg(o, o->traces[i], &ps[i], &n[i]);
		if (rc == 0)
			rc = flame_collect(i ? &cur : &base, ps[i], n[i], owner, kind, weight->by, 0);
		else
			rc = -2;
	}
	FILE *out = rc == 0 ? cmd_output(o->outfile) : NULL;
	if (rc == 0 && !out)
		rc = -2;
	if (rc == 0) {
		/* BASE's stacks join as samples of weight 0: the tree matches them by name. */
		for (size_t i = 0; i < base.n && rc == 0; i++) {
			if (GROW(cur.v, cur.n, cur.cap) < 0) {
				rc = -1;
				break;
			}
			cur.v[cur.n++] = (struct flame_sample){ base.v[i].frames, base.v[i].depth, 0,
								base.v[i].weight };
			base.v[i].frames = NULL;
		}
		rc = rc ? rc : write_flame(out, o, weight, &cur);
		rc = cmd_finish_output(out, o->outfile, rc < 0 ? 1 : 0) ? -2 : 0;
	}
	if (rc == -1)
		prof_error("out of memory");
	for (int i = 0; i < 2; i++)
		if (ps[i])
			processes_free(ps[i], n[i]);
	flame_set_free(&base);
	flame_set_free(&cur);
	return rc < 0 ? 1 : 0;
}

int cmd_flame(int argc, char **argv)
{
	struct cmd_opts o;
	int rc = cmd_parse(&flame_spec, argc, argv, &o);
	if (rc >= 0) {
		if (rc == 0)
			print_kinds(stdout);
		return rc;
	}
	const char *kind_name = o.kind ? o.kind : "alloc";
	const struct family *owner = NULL;
	const struct flame_kind *kind = flame_kind_find(kind_name, &owner);
	if (!kind) {
		char list[256] = "";
		for (size_t i = 0; families[i]; i++)
			for (size_t k = 0; k < families[i]->nflames; k++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 list[0] ? ", " : "", families[i]->flames[k].name);
		prof_error("unknown flame kind '%s' (%s)", kind_name, list);
		return 2;
	}
	const struct flame_weight *weight = flame_pick_weight(kind, o.by);
	if (!weight)
		return 2;
	if (o.diff)
		return flame_diff(&o, owner, kind, weight);
	struct flame_run run = { .owner = owner, .kind = kind, .by = weight->by };
	pthread_mutex_init(&run.lock, NULL);
	rc = cmd_each(&o, &run.count, flame_one, &run);
	pthread_mutex_destroy(&run.lock);
	if (rc == 0 && run.failed) {
		prof_error("out of memory");
		rc = -1;
	}
	FILE *out = rc == 0 ? cmd_output(o.outfile) : NULL;
	if (rc == 0 && !out)
		rc = -1;
	if (rc == 0) {
		if (run.ss.n == 0)
			prof_error("note: no %s data in these traces", kind->name);
		rc = write_flame(out, &o, weight, &run.ss);
		rc = cmd_finish_output(out, o.outfile, rc < 0 ? 1 : 0) ? -1 : 0;
	}
	flame_set_free(&run.ss);
	return rc < 0 ? 1 : 0;
}
