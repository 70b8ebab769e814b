/* What every analyzer command does around its own work: load the processes of its TRACE
 * arguments, open its output, and at the end report write errors and free everything. */
#include "commands.h"
#include "process.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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

int cmd_parse(const struct cmd_spec *spec, int argc, char **argv, struct cmd_opts *o)
{
	static const struct option all[] = {
		{ "json", no_argument, NULL, 'j' }, { "csv", no_argument, NULL, 'c' },
		{ "brief", no_argument, NULL, 'b' }, { "top", required_argument, NULL, 't' },
		{ "frames", required_argument, NULL, 'F' }, { "kind", required_argument, NULL, 'k' },
		{ "by", required_argument, NULL, 'B' }, { "folded", no_argument, NULL, 'd' },
		{ "title", required_argument, NULL, 'T' }, { "format", required_argument, NULL, 'f' },
		{ "min-ns", required_argument, NULL, 'm' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* Which CMD_* flag each long option needs (same order as all[]). */
	static const unsigned needs[] = { CMD_JSON, CMD_CSV, CMD_BRIEF, CMD_TOP, CMD_FRAMES,
					  CMD_FLAME, CMD_FLAME, CMD_FLAME, CMD_FLAME, CMD_EXPORT,
					  CMD_EXPORT, 0 };
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

	*o = (struct cmd_opts){ .top = SIZE_MAX, .frames = spec->frames };
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
		case 'o': o->outfile = optarg; break;
		case 'k': o->kind = optarg; break;
		case 'B': o->by = optarg; break;
		case 'T': o->title = optarg; break;
		case 'f': o->format = optarg; break;
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
		case 'h':
			fputs(spec->usage, stdout);
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
	return -1;
bad_number:
	prof_error("%s: --%s: '%s' is not a valid number", spec->name, opts[li].name, optarg);
	return 2;
}

int cmd_open(struct cmd_io *io, char *const *args, int nargs, const char *outfile)
{
	char **paths;
	*io = (struct cmd_io){ .out = stdout, .outfile = outfile };
	if (inputs_expand(args, nargs, &paths, &io->n) < 0)
		return -1;
	int loaded = processes_load(paths, io->n, &io->ps);
	inputs_free(paths);
	if (loaded < 0)
		return -1;
	if (outfile && !(io->out = fopen(outfile, "w"))) {
		prof_error("%s: cannot write: %m", outfile);
		processes_free(io->ps, io->n);
		return -1;
	}
	return 0;
}

void cmd_write_json(struct cmd_io *io, json_t *processes)
{
	json_t *doc = json_pack("{s:i,s:o}", "version", 1, "processes", processes);
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
