/* libFuzzer harnesses (issue 16), one binary per FUZZ_TARGET: "reader" opens the input as a
 * trace and reads every record; the others run a prof command on it as the command line
 * would (its output to /dev/null); "summary" reads it as a summary's sections (prof
 * summarize). Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined; an input
 * that crashes one is kept in tests/fuzz/regressions/ and replayed by `make fuzz` before
 * fuzzing. */
#include "commands.h"
#include "summary.h"
#include "trace.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void setup(void)
{
	if (path[0])
		return;
	snprintf(path, sizeof(path), "/tmp/prof-fuzz.%d.trace", (int)getpid());
	int null = open("/dev/null", O_WRONLY);
	dup2(null, 1);  /* the commands' output */
	close(null);
}

__attribute__((unused)) static int run(int (*cmd)(int, char **), const char *const *args)
{
	char *argv[16];
	int argc = 0;
	for (; args[argc] && argc < 14; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc++] = path;
	argv[argc] = NULL;
	optind = 0;  /* getopt starts afresh for each input */
	opterr = 0;
	return cmd(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
#if defined(FUZZ_summary)
	/* past the header at once: the sections are what there is to get wrong */
	static const unsigned char head[16] = "PROFSUM\n\1\0\0\0\4\3\2\1";
	if (size < 8 || memcmp(data, head, 8))
		fwrite(head, 1, sizeof(head), f);
#endif
	fwrite(data, 1, size, f);
	fclose(f);
#define CMD(name, ...) do { static const char *const a[] = { __VA_ARGS__, NULL }; run(name, a); } while (0)
#if defined(FUZZ_reader)
	char err[256];
	struct trace *t = trace_open(path, err, sizeof(err));
	if (t) {
		struct trace_event ev;
		while (trace_next(t, &ev, err, sizeof(err)) > 0)
			;
		trace_close(t);
	}
#elif defined(FUZZ_report)
	CMD(cmd_report, "report", "--json");
	CMD(cmd_report, "report");
#elif defined(FUZZ_leaks)
	CMD(cmd_leaks, "leaks");
#elif defined(FUZZ_flame)
	CMD(cmd_flame, "flame", "--kind", "alloc", "--folded");
	CMD(cmd_flame, "flame", "--kind", "wall", "-o", "/dev/null");
#elif defined(FUZZ_export)
	CMD(cmd_export, "export", "--format", "chrome", "-o", "/dev/null");
	CMD(cmd_export, "export", "--format", "pprof", "-o", "/dev/null");
#elif defined(FUZZ_html)
	CMD(cmd_html, "html", "-o", "/dev/null");
#elif defined(FUZZ_kernels)
	CMD(cmd_kernels, "kernels", "--csv");
#elif defined(FUZZ_summary)
	CMD(cmd_report, "report", "--json");
	CMD(cmd_flame, "flame", "--kind", "wall", "--folded");
	CMD(cmd_summarize, "summarize", "-o", "/dev/null");
#elif defined(FUZZ_diff)
	static const char *const a[] = { "diff", path, NULL };
	run(cmd_diff, a);
#else
#error "FUZZ_TARGET: reader report leaks flame export html kernels diff summary"
#endif
	return 0;
}
