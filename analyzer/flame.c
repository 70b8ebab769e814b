/* prof flame: stacks weighted by what the chosen kind measures, as an interactive SVG or
 * as folded stacks. */
#include "commands.h"
#include "family.h"
#include "flame_svg.h"
#include "grow.h"
#include "process.h"
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>

/* Collects one process's weights into the sample set. */
struct collect_ctx {
	struct sample_set *ss;
	struct process *p;
	const char *root;
	int rc;
};

/* Samples and the strings they point to, freed together. */
struct sample_set {
	struct flame_sample *v;
	size_t n, cap;
	char **strings;
	size_t nstr, strcap;
};

static const char *keep(struct sample_set *ss, const char *s)
{
	if (GROW(ss->strings, ss->nstr, ss->strcap) < 0)
		return NULL;
	char *copy = strdup(s);
	if (copy)
		ss->strings[ss->nstr++] = copy;
	return copy;
}

static int add_sample(struct sample_set *ss, struct process *p, uint32_t stack, uint64_t weight,
		      const char *root, const char *leaf)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int truncated;
	int n = stack_shown(p, stack, frames, PROF_MAX_STACK_DEPTH * 2, NULL, &truncated);
	const char **names = malloc(sizeof(char *) * (size_t)(n + 3));
	if (!names)
		return -1;
	int d = 0;
	if (root)
		names[d++] = root;
	if (n == 0)
		names[d++] = "[no stack]";
	else if (truncated)  /* its real root is unknown: one root for all such stacks */
		names[d++] = "[truncated]";
	for (int i = n; i-- > 0;) {  /* flame graphs want the root first */
		char buf[256], shorter[256];
		if (!(names[d++] = keep(ss, shorten_templates(frame_label(&frames[i], buf, sizeof(buf)),
							      shorter, sizeof(shorter))))) {
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
	ss->v[ss->n++] = (struct flame_sample){ names, d, weight };
	return 0;
}

static void emit_sample(void *arg, uint32_t stack, uint64_t weight)
{
	struct collect_ctx *c = arg;
	if (c->rc == 0 && weight > 0)
		c->rc = add_sample(c->ss, c->p, stack, weight, c->root, NULL);
}

static void emit_labeled(void *arg, uint32_t stack, const char *leaf, uint64_t weight)
{
	struct collect_ctx *c = arg;
	if (c->rc == 0 && weight > 0)
		c->rc = add_sample(c->ss, c->p, stack, weight, c->root, leaf);
}

static void free_samples(struct sample_set *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free((void *)ss->v[i].frames);
	for (size_t i = 0; i < ss->nstr; i++)
		free(ss->strings[i]);
	free(ss->v);
	free(ss->strings);
}

static const struct cmd_spec flame_spec = {
	"flame", CMD_OUTPUT | CMD_FLAME, 0,
	"usage: prof flame --kind KIND [-o FILE.svg | --folded] TRACE...\n"
	"A flame graph of the stacks that did KIND's work, widths proportional to it.\n\n"
	"  --kind KIND    what to weigh (default alloc); the kinds are listed below\n"
	"  --by WHAT      another weight of the kind, where it has one (listed below)\n"
	"  -o FILE        write the SVG (or folded text) to FILE (default stdout)\n"
	"  --folded       Brendan Gregg's folded stacks instead of SVG\n"
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
static const struct flame_weight *pick_weight(const struct flame_kind *kind, const char *by)
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
	const struct flame_weight *weight = pick_weight(kind, o.by);
	if (!weight)
		return 2;
	struct cmd_io io;
	if (cmd_open(&io, &o) < 0)
		return 1;
	struct process *ps = io.ps;
	size_t n = io.n;
	FILE *out = io.out;
	struct sample_set ss = { 0 };
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char root[300];
		snprintf(root, sizeof(root), "%s (%u)",
			 strrchr(ps[i].exe, '/') ? strrchr(ps[i].exe, '/') + 1 : ps[i].exe, ps[i].hdr.pid);
		struct collect_ctx ctx = { &ss, &ps[i], n > 1 ? keep(&ss, root) : NULL, 0 };
		if (owner->flame_labeled
			    ? owner->flame_labeled(&ps[i], kind, weight->by, emit_labeled, &ctx) < 0
			    : kind->collect(&ps[i], weight->by, emit_sample, &ctx) < 0)
			rc = -1;
		else
			rc = ctx.rc;
	}
	if (rc == -1)
		prof_error("out of memory");
	if (rc == 0 && ss.n == 0)
		prof_error("note: no %s data in these traces", kind->name);
	if (rc == 0) {
		int w = o.folded ? flame_write_folded(out, ss.v, ss.n)
				 : flame_write_svg(out, ss.v, ss.n, o.title ? o.title : weight->title,
						   weight->unit);
		if (w < 0 && !ferror(out))
			prof_error("out of memory");
		if (w < 0)
			rc = -1;  /* a write error: cmd_close() says so */
	}
	free_samples(&ss);
	return cmd_close(&io, rc < 0 ? 1 : 0);
}
