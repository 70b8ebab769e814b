/* What every analyzer command does around its own work: load the processes of its TRACE
 * arguments, open its output, and at the end report write errors and free everything. */
#include "commands.h"
#include "format.h"
#include "process.h"
#include "stackfmt.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A whole non-negative decimal number, or -1. */
static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --show: memcheck's --show-leak-kinds words. */
static int parse_show(const char *s, unsigned *out)
{
	static const char *const names[PROF_LEAK_CLASS_COUNT] = {
		[PROF_LEAK_REACHABLE] = "reachable", [PROF_LEAK_DEFINITE] = "definite",
		[PROF_LEAK_INDIRECT] = "indirect", [PROF_LEAK_POSSIBLE] = "possible",
	};
	unsigned mask = 0;
	while (*s) {
		size_t n = strcspn(s, ","), before = mask;
		if (n == 3 && !strncmp(s, "all", 3))
			mask = ~0u;
		for (unsigned c = 0; c < PROF_LEAK_CLASS_COUNT; c++)
			if (n == strlen(names[c]) && !strncmp(s, names[c], n))
				mask |= 1u << c;
		if (mask == before && n != 3)
			return -1;
		s += n + (s[n] == ',');
	}
	if (!mask)
		return -1;
	*out = mask;
	return 0;
}

int cmd_parse(const struct cmd_spec *spec, int argc, char **argv, struct cmd_opts *o)
{
	static const struct option all[] = {
		{ "json", no_argument, NULL, 'j' }, { "csv", no_argument, NULL, 'c' },
		{ "brief", no_argument, NULL, 'b' }, { "top", required_argument, NULL, 't' },
		{ "frames", required_argument, NULL, 'F' }, { "kind", required_argument, NULL, 'k' },
		{ "by", required_argument, NULL, 'B' }, { "folded", no_argument, NULL, 'd' },
		{ "title", required_argument, NULL, 'T' }, { "format", required_argument, NULL, 'f' },
		{ "min-ns", required_argument, NULL, 'm' }, { "show", required_argument, NULL, 'S' },
		{ "show-leak-kinds", required_argument, NULL, 'S' },  /* valgrind's name for it */
		{ "suppressions", required_argument, NULL, 's' },
		{ "findings", no_argument, NULL, 'n' }, { "signal", required_argument, NULL, 'g' },
		{ "color", required_argument, NULL, 'C' },
		{ "diff", no_argument, NULL, 'D' },
		{ "from", required_argument, NULL, 'r' }, { "to", required_argument, NULL, 'u' },
		{ "fold", required_argument, NULL, 'L' },
		{ "pid", required_argument, NULL, 'p' }, { "exe", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	/* Which CMD_* flag each long option needs (same order as all[]). */
	static const unsigned needs[] = { CMD_JSON, CMD_CSV, CMD_BRIEF, CMD_TOP, CMD_FRAMES,
					  CMD_FLAME, CMD_FLAME, CMD_FLAME, CMD_FLAME, CMD_EXPORT,
					  CMD_EXPORT, CMD_LEAKS, CMD_LEAKS, CMD_LEAKS, CMD_FINDINGS, CMD_SIGNAL,
					  0, CMD_FLAME, CMD_WINDOW, CMD_WINDOW, 0, 0, 0, 0 };
	_Static_assert(sizeof(needs) / sizeof(needs[0]) == sizeof(all) / sizeof(all[0]) - 1,
		       "one needs[] entry per option");
	struct option opts[sizeof(all) / sizeof(all[0])];
	size_t n = 0;
	for (size_t i = 0; all[i].name; i++)
		if (!needs[i] || (spec->options & needs[i]))
			opts[n++] = all[i];
	opts[n] = all[sizeof(all) / sizeof(all[0]) - 1];
	char shorts[16] = ":h";  /* a leading colon: a missing value is told apart */
	if (spec->options & CMD_OUTPUT)
		strcat(shorts, "o:");
	if (spec->options & CMD_FLAME)
		strcat(shorts, "k:");
	if (spec->options & CMD_EXPORT)
		strcat(shorts, "f:");

	*o = (struct cmd_opts){ .top = SIZE_MAX, .frames = spec->frames, .to_ns = UINT64_MAX,
				.show = 1u << PROF_LEAK_DEFINITE | 1u << PROF_LEAK_INDIRECT };
	uint64_t v;
	int c, li = -1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, &li)) != -1) {
		switch (c) {
		case 'j': o->json = 1; break;
		case 'c': o->csv = 1; break;
		case 'b': o->brief = 1; break;
		case 'd': o->folded = 1; break;
		case 'n': o->findings = 1; break;
		case 'o': o->outfile = optarg; break;
		case 'k': o->kind = optarg; break;
		case 'B': o->by = optarg; break;
		case 'T': o->title = optarg; break;
		case 'f': o->format = optarg; break;
		case 'D': o->diff = 1; break;
		case 'C':
			if (fmt_color_set(optarg, 0) < 0) {
				prof_error("%s: --color: '%s' is not auto, always or never", spec->name,
					   optarg);
				return 2;
			}
			o->color = optarg;
			break;
		case 'r':
		case 'u':
			if (cmd_parse_time(optarg, c == 'r' ? &o->from_ns : &o->to_ns) < 0) {
				prof_error("%s: --%s: '%s' is not a time (10s, 250ms, ...)", spec->name,
					   c == 'r' ? "from" : "to", optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_count(optarg, SIZE_MAX, &v) < 0)
				goto bad_number;
			o->top = (size_t)v;
			o->top_given = 1;
			break;
		case 'F':
			if (parse_count(optarg, 100000, &v) < 0 || v == 0)
				goto bad_number;
			o->frames = (int)v;
			break;
		case 'm':
			if (parse_count(optarg, UINT64_MAX, &v) < 0)
				goto bad_number;
			o->min_ns = v;
			break;
		case 'p':
			if (parse_count(optarg, UINT32_MAX, &v) < 0 || v == 0)
				goto bad_number;
			o->pid = (uint32_t)v;
			break;
		case 'e':
			o->exe = optarg;
			break;
		case 'g':
			if (parse_count(optarg, 64, &v) < 0 || v == 0)
				goto bad_number;
			o->signal = (int)v;
			break;
		case 'L':
			if (stack_fold_set(optarg) < 0) {
				prof_error("%s: --fold: list too long", spec->name);
				return 2;
			}
			break;
		case 'S':
			if (parse_show(optarg, &o->show) < 0) {
				prof_error("%s: --show: unknown leak kind in '%s' (definite, indirect, "
					   "possible, reachable, all)", spec->name, optarg);
				return 2;
			}
			break;
		case 's':
			if (o->nsupp == (int)(sizeof(o->supp) / sizeof(o->supp[0]))) {
				prof_error("%s: too many --suppressions files", spec->name);
				return 2;
			}
			o->supp[o->nsupp++] = optarg;
			break;
		case 'h':
			fputs(spec->usage, stdout);
			fputs("  --fold LIST  innermost frames to hide: std:: (C++ library), libc, alloc\n"
			      "               (allocator wrappers), or name prefixes; python: the\n"
			      "               interpreter's frames (_PyEval_*, PyObject_Call*) anywhere in\n"
			      "               stacks with Python frames; none (default\n"
			      "               std::,libc,alloc,python)\n"
			      "  --pid PID    only the process PID\n"
			      "  --exe NAME   only processes running NAME (its file name or path)\n"
			      "  --color=WHEN color in text: auto (on a terminal), always, never\n", stdout);
			if (spec->options & CMD_WINDOW)
				fputs("  --from T, --to T  only what happened from T to T since each process\n"
				      "               started (10s, 2.5s, 250ms, 40us)\n", stdout);
			return 0;
		case ':':
			prof_error("%s: option '%s' needs a value (try prof %s --help)", spec->name,
				   argv[optind - 1], spec->name);
			return 2;
		default:
			prof_error("%s: unknown option '%s' (try prof %s --help)", spec->name,
				   argv[optind - 1], spec->name);
			return 2;
		}
	}
	o->traces = argv + optind;
	o->ntraces = argc - optind;
	fmt_color_set(o->color, !o->outfile && isatty(STDOUT_FILENO));
	return -1;
bad_number:
	prof_error("%s: --%s: '%s' is not a valid number", spec->name, opts[li].name, optarg);
	return 2;
}

static const char *base_name(const char *s)
{
	const char *b = strrchr(s, '/');
	return b ? b + 1 : s;
}

/* Whether a trace's process is one --pid and --exe select. */
static int selected(const struct cmd_opts *o, const struct prof_file_header *h, const char *exe,
		    const char *argv0)
{
	if (o->pid && h->pid != o->pid)
		return 0;
	if (!o->exe)
		return 1;
	return !strcmp(exe, o->exe) || !strcmp(base_name(exe), o->exe) ||
	       (argv0 && (!strcmp(argv0, o->exe) || !strcmp(base_name(argv0), o->exe)));
}

int cmd_selects(const struct cmd_opts *o, const struct process *p)
{
	return selected(o, &p->hdr, p->exe, p->argc ? p->argv[0] : NULL);
}

void cmd_no_match(void)
{
	prof_error("no process matches the --pid and --exe given");
}

int cmd_inputs(const struct cmd_opts *o, char ***paths, size_t *n)
{
	if (inputs_expand(o->traces, o->ntraces, paths, n) < 0)
		return -1;
	if (!o->pid && !o->exe)
		return 0;
	size_t kept = 0;
	for (size_t i = 0; i < *n; i++) {
		char err[512];
		struct trace *t = trace_open((*paths)[i], err, sizeof(err));
		/* An unreadable trace is kept: loading it says what is wrong with it. */
		int keep = !t || selected(o, trace_header(t), trace_exe(t),
					  trace_argc(t) ? trace_argv(t, 0) : NULL);
		if (t)
			trace_close(t);
		if (keep)
			(*paths)[kept++] = (*paths)[i];
		else
			free((*paths)[i]);
	}
	(*paths)[kept] = NULL;
	*n = kept;
	if (kept == 0) {
		char pid[32] = "";
		if (o->pid)
			snprintf(pid, sizeof(pid), "pid %u", o->pid);
		prof_error("no process matches %s%s%s%s", pid, o->pid && o->exe ? " and " : "",
			   o->exe ? "exe " : "", o->exe ? o->exe : "");
		inputs_free(*paths);
		return -1;
	}
	return 0;
}

/* processes_load(), then --pid and --exe again: a summary's processes were not selected by
 * cmd_inputs() (which reads trace headers only). */
static int load_selected(const struct cmd_opts *o, char **paths, size_t npaths,
			 struct process **ps, size_t *n)
{
	if (processes_load(paths, npaths, ps, n) < 0)
		return -1;
	if (!o->pid && !o->exe)
		return 0;
	size_t kept = 0;
	for (size_t i = 0; i < *n; i++) {
		struct process *p = &(*ps)[i];
		if (cmd_selects(o, p))
			(*ps)[kept++] = *p;
		else
			process_free(p);
	}
	*n = kept;
	if (kept)
		return 0;
	cmd_no_match();
	free(*ps);
	*ps = NULL;
	return -1;
}

int cmd_parse_time(const char *s, uint64_t *ns)
{
	/* By hand, digit by digit: the same in every locale. */
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "m", 60000000000ull }, { "h", 3600000000000ull }, { "", 1000000000 },
	};
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *c = s;
	if (*c < '0' || *c > '9')
		return -1;
	for (; *c >= '0' && *c <= '9'; c++)
		if ((whole = whole * 10 + (uint64_t)(*c - '0')) > 10000000000000ull)
			return -1;
	if (*c == '.')
		for (c++; *c >= '0' && *c <= '9'; c++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*c - '0');
				scale *= 10;
			}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(c, units[i].unit)) {
			if (whole > UINT64_MAX / units[i].ns / 2)
				return -1;
			*ns = whole * units[i].ns + (uint64_t)((double)frac / (double)scale *
							      (double)units[i].ns);
			return 0;
		}
	return -1;
}

FILE *cmd_output(const char *outfile)
{
	FILE *out = outfile ? fopen(outfile, "w") : stdout;
	if (!out)
		prof_error("%s: cannot write: %m", outfile);
	return out;
}

/* The paths of one TRACE argument, and the window to load them in (*win, from cmd_opts): "RUN@T"
 * is RUN up to T. */
static int arg_inputs(const struct cmd_opts *o, const char *arg, char ***paths, size_t *n,
		      uint64_t win[2])
{
	struct cmd_opts one = *o;
	char *copy = strdup(arg), *at = copy ? strrchr(copy, '@') : NULL;
	uint64_t t;
	if (!copy) {
		prof_error("out of memory");
		return -1;
	}
	/* RUN@T, unless a file is named so. */
	if (at && access(copy, F_OK) != 0 && cmd_parse_time(at + 1, &t) == 0) {
		*at = '\0';
		one.from_ns = 0;
		one.to_ns = t;
	}
	one.traces = &copy;
	one.ntraces = 1;
	int rc = cmd_inputs(&one, paths, n);
	win[0] = one.from_ns;
	win[1] = one.to_ns;
	free(copy);
	return rc;
}

/* The paths of every TRACE argument and their window: one argument may be RUN@T. */
static int all_inputs(const struct cmd_opts *o, char ***paths, size_t *n, uint64_t win[2])
{
	if (o->ntraces == 1)
		return arg_inputs(o, o->traces[0], paths, n, win);
	win[0] = o->from_ns;
	win[1] = o->to_ns;
	return cmd_inputs(o, paths, n);
}

int cmd_load_arg(const struct cmd_opts *o, const char *arg, struct process **ps, size_t *n)
{
	char **paths;
	uint64_t win[2];
	if (arg_inputs(o, arg, &paths, n, win) < 0)
		return -1;
	process_window_set(win[0], win[1]);
	int rc = load_selected(o, paths, *n, ps, n);
	process_window_set(0, UINT64_MAX);
	inputs_free(paths);
	return rc;
}

int cmd_open(struct cmd_io *io, const struct cmd_opts *o)
{
	*io = (struct cmd_io){ .out = stdout, .outfile = o->outfile };
	char **paths;
	uint64_t win[2];
	if (all_inputs(o, &paths, &io->n, win) < 0)
		return -1;
	process_window_set(win[0], win[1]);
	int loaded = load_selected(o, paths, io->n, &io->ps, &io->n);
	process_window_set(0, UINT64_MAX);
	inputs_free(paths);
	if (loaded < 0)
		return -1;
	if (!(io->out = cmd_output(o->outfile))) {
		processes_free(io->ps, io->n);
		return -1;
	}
	return 0;
}

/* cmd_each(): the processes --pid and --exe select go on to fn, the others are freed. */
struct each_selected {
	const struct cmd_opts *o;
	void (*fn)(void *ctx, struct process *p, size_t at);
	void *ctx;
	_Atomic size_t kept;
};

static void each_selected(void *ctx, struct process *p, size_t at)
{
	struct each_selected *c = ctx;
	if (!cmd_selects(c->o, p)) {
		process_free(p);
		return;
	}
	c->kept++;
	c->fn(c->ctx, p, at);
}

int cmd_each(const struct cmd_opts *o, size_t *count,
	     void (*fn)(void *ctx, struct process *p, size_t at), void *ctx)
{
	char **paths;
	size_t n;
	uint64_t win[2];
	if (all_inputs(o, &paths, &n, win) < 0)
		return -1;
	struct each_selected c = { o, fn, ctx, 0 };
	process_window_set(win[0], win[1]);
	int rc = processes_each(paths, n, count, each_selected, &c);
	process_window_set(0, UINT64_MAX);
	inputs_free(paths);
	if (rc == 0 && !c.kept && (o->pid || o->exe)) {
		cmd_no_match();
		rc = -1;
	}
	return rc;
}

void cmd_write_json(struct cmd_io *io, json_t *processes)
{
	cmd_write_json_findings(io, NULL, processes);
}

void cmd_write_json_findings(struct cmd_io *io, json_t *findings, json_t *processes)
{
	json_t *doc = json_pack("{s:i}", "version", 1);
	if (findings)
		json_object_set_new(doc, "findings", findings);
	json_object_set_new(doc, "processes", processes);
	json_dumpf(doc, io->out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	fputc('\n', io->out);
	json_decref(doc);
}

int cmd_finish_output(FILE *out, const char *outfile, int rc)
{
	if (fflush(out) != 0 || ferror(out)) {
		prof_error("%s: write error", outfile ? outfile : "stdout");
		rc = 1;
	}
	if (outfile)
		fclose(out);
	return rc;
}

int cmd_close(struct cmd_io *io, int rc)
{
	rc = cmd_finish_output(io->out, io->outfile, rc);
	processes_free(io->ps, io->n);
	return rc;
}
