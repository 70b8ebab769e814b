/* prof: the offline analyzer's entry point; dispatches to one file per command. */
#include "commands.h"
#include "summary.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "prof_format.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"report", cmd_report, "every section that has data (processes, threads, heap, ...); --json"},
	{"leaks", cmd_leaks, "memory still allocated at exit, by allocation stack, largest first"},
	{"flame", cmd_flame, "flame graph: --kind alloc|leak ..., SVG (-o FILE.svg) or --folded"},
	{"kernels", cmd_kernels, "GPU kernel timing table: --json, --csv"},
	{"export", cmd_export, "--format chrome|speedscope|pprof|sqlite -o FILE: timelines and profiles"},
	{"html", cmd_html, "one self-contained HTML report: tables, flame graphs, charts"},
	{"diff", cmd_diff, "what changed between two runs, or two moments RUN@T1 RUN@T2; --json"},
	{"summarize", cmd_summarize, "-o FILE: a compact summary of traces, read in their place (README)"},
	{"dump", cmd_dump, "the raw records of a trace, for debugging the format"},
	{"pack", cmd_pack, "compress finished traces with zstd (every command reads both)"},
	{"mark-exit", cmd_mark_exit, "record a signal death in a trace (prof-run does this)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: prof COMMAND [options] TRACE...\n"
		     "A TRACE is a trace file, raw or compressed (.trace.zst), a run directory (all\n"
		     "*.trace and *.trace.zst files in it) or a summary (prof summarize; a directory of\n"
		     "them); several are merged.\n\n"
		     "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n`prof COMMAND --help` describes a command's options; `prof --version`.\n");
}

int main(int argc, char **argv)
{
	/* The analyzer builds and frees large trees of small blocks (a process's JSON of all
	 * sites); glibc's fastbins then spend about a fifth of prof report's time consolidating
	 * them (malloc_consolidate, unlink_chunk). Without fastbins: same memory, 18% faster. */
	mallopt(M_MXFAST, 0);
	/* A file size limit (ulimit -f) makes a write past it fail with EFBIG, which every
	 * command reports as an error on its file, instead of killing prof with SIGXFSZ. */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("prof (libprof) %s, trace format %d\n", PROF_VERSION, PROF_FORMAT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	prof_error("unknown command '%s' (try prof --help)", argv[1]);
	return 2;
}
