/* prof flame: stacks weighted by what the chosen kind measures, as an interactive SVG or
 * as folded stacks. */
#include "commands.h"
#include "flame_svg.h"
#include "report.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct sample_set;
typedef void (*emit_fn)(void *ctx, uint32_t stack, uint64_t weight);
typedef int (*collect_fn)(struct process *p, const char *by, emit_fn emit, void *ctx);

/* Heap sites, by bytes allocated (or --by calls) or by bytes leaked. */
static int heap_flame(struct process *p, const char *by, emit_fn emit, void *ctx,
		      uint64_t (*key)(const struct heap_site *))
{
	size_t n;
	struct site_ref *v = heap_sites_sorted(p, key, &n);
	if (!v)
		return -1;
	for (size_t j = 0; j < n; j++)
		emit(ctx, v[j].stack, key(v[j].s));
	free(v);
	(void)by;
	return 0;
}

static int alloc_flame(struct process *p, const char *by, emit_fn emit, void *ctx)
{
	if (by && strcmp(by, "bytes") && strcmp(by, "calls")) {
		prof_error("--by %s: alloc graphs weigh by bytes or calls", by);
		return -1;
	}
	return heap_flame(p, by, emit, ctx, by && !strcmp(by, "calls") ? site_key_calls : site_key_bytes);
}

static int leak_flame(struct process *p, const char *by, emit_fn emit, void *ctx)
{
	if (by && strcmp(by, "bytes")) {
		prof_error("--by %s: leak graphs weigh by bytes", by);
		return -1;
	}
	return heap_flame(p, by, emit, ctx, site_key_leaked);
}

struct flame_kind {
	const char *name, *title, *unit;
	collect_fn collect;  /* NULL: not recorded by this version */
};

static const struct flame_kind kinds[] = {
	{ "alloc", "Heap: bytes allocated by stack", "bytes", alloc_flame },
	{ "leak", "Heap: bytes leaked by stack", "bytes", leak_flame },
	{ "cpu", "CPU samples", "samples", NULL },
	{ "lock", "Lock wait time by stack", "ns", locks_flame },
	{ "io", "I/O time by stack", "ns", io_flame },
	{ "cuda", "GPU time by launching stack", "ns", cuda_flame },
};

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
	if (ss->nstr == ss->strcap) {
		size_t ncap = ss->strcap ? ss->strcap * 2 : 256;
		char **p = realloc(ss->strings, ncap * sizeof(*p));
		if (!p)
			return NULL;
		ss->strings = p;
		ss->strcap = ncap;
	}
	char *copy = strdup(s);
	if (copy)
		ss->strings[ss->nstr++] = copy;
	return copy;
}

static int add_sample(struct sample_set *ss, struct process *p, uint32_t stack, uint64_t weight,
		      const char *root)
{
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	int n = stack_symbolize(p, stack, frames, PROF_MAX_STACK_DEPTH * 2);
	const char **names = malloc(sizeof(char *) * (size_t)(n + 2));
	if (!names)
		return -1;
	int d = 0;
	if (root)
		names[d++] = root;
	if (n == 0)
		names[d++] = "[no stack]";
	for (int i = n; i-- > 0;) {  /* flame graphs want the root first */
		char buf[256];
		if (!(names[d++] = keep(ss, frame_label(&frames[i], buf, sizeof(buf))))) {
			free(names);
			return -1;
		}
	}
	if (ss->n == ss->cap) {
		size_t ncap = ss->cap ? ss->cap * 2 : 256;
		struct flame_sample *v = realloc(ss->v, ncap * sizeof(*v));
		if (!v) {
			free(names);
			return -1;
		}
		ss->v = v;
		ss->cap = ncap;
	}
	ss->v[ss->n++] = (struct flame_sample){ names, d, weight };
	return 0;
}

static void emit_sample(void *arg, uint32_t stack, uint64_t weight)
{
	struct collect_ctx *c = arg;
	if (c->rc == 0 && weight > 0)
		c->rc = add_sample(c->ss, c->p, stack, weight, c->root);
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: prof flame --kind KIND [-o FILE.svg | --folded] TRACE...\n"
		"A flame graph of the stacks that did KIND's work, widths proportional to it.\n\n"
		"  --kind alloc   bytes allocated (--by calls: allocation calls)\n"
		"  --kind leak    bytes still allocated at exit\n"
		"  --kind cpu|lock|io|cuda   other event families (when recorded)\n"
		"  --by WHAT      alloc: bytes (default) or calls; io: time (default) or bytes\n"
		"  -o FILE        write the SVG (or folded text) to FILE (default stdout)\n"
		"  --folded       Brendan Gregg's folded stacks instead of SVG\n"
		"  --title TEXT   heading of the SVG\n"
		"  -h, --help     this help\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kind", required_argument, NULL, 'k' }, { "folded", no_argument, NULL, 'F' },
		{ "by", required_argument, NULL, 'b' }, { "title", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *kind_name = "alloc", *outfile = NULL, *by = NULL, *title = NULL;
	int folded = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:k:", opts, NULL)) != -1) {
		switch (c) {
		case 'k': kind_name = optarg; break;
		case 'F': folded = 1; break;
		case 'b': by = optarg; break;
		case 'T': title = optarg; break;
		case 'o': outfile = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	const struct flame_kind *kind = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, kind_name))
			kind = &kinds[i];
	if (!kind) {
		prof_error("unknown flame kind '%s' (alloc, leak, cpu, lock, io, cuda)", kind_name);
		return 2;
	}
	const char *ktitle = kind->title, *unit = kind->unit;
	if (!strcmp(kind->name, "alloc") && by && !strcmp(by, "calls")) {
		ktitle = "Heap: allocation calls by stack";
		unit = "allocations";
	} else if (by && !strcmp(by, "bytes") && strcmp(kind->unit, "bytes")) {
		unit = "bytes";
	}
	struct cmd_io io;
	if (cmd_open(&io, argv + optind, argc - optind, outfile) < 0)
		return 1;
	struct process *ps = io.ps;
	size_t n = io.n;
	FILE *out = io.out;
	struct sample_set ss = { 0 };
	int rc = 0;
	for (size_t i = 0; kind->collect && i < n && rc == 0; i++) {
		char root[300];
		snprintf(root, sizeof(root), "%s (%u)",
			 strrchr(ps[i].exe, '/') ? strrchr(ps[i].exe, '/') + 1 : ps[i].exe, ps[i].hdr.pid);
		struct collect_ctx ctx = { &ss, &ps[i], n > 1 ? keep(&ss, root) : NULL, 0 };
		if (kind->collect(&ps[i], by, emit_sample, &ctx) < 0) {
			rc = -2;  /* the provider said why */
			break;
		}
		rc = ctx.rc;
	}
	if (rc == -1)
		prof_error("out of memory");
	if (rc == 0 && ss.n == 0)
		prof_error("note: no %s data in these traces%s", kind->name,
			   kind->collect ? "" : " (this event family is not recorded by this version)");
	if (rc == 0) {
		int w = folded ? flame_write_folded(out, ss.v, ss.n)
			       : flame_write_svg(out, ss.v, ss.n, title ? title : ktitle, unit);
		if (w < 0 && !ferror(out))
			prof_error("out of memory");
		if (w < 0)
			rc = -1;  /* a write error: cmd_close() says so */
	}
	free_samples(&ss);
	return cmd_close(&io, rc < 0 ? 1 : 0);
}
