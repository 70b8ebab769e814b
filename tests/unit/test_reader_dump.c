/* prof dump: header and record lines, exit statuses. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "unit/tracegen.h"

static char dir[64];
static char path[128], out[128], errs[128];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/d.trace", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(errs, sizeof(errs), "%s/err.txt", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(dump, .init = setup, .fini = teardown);

static char *slurp(const char *file)
{
	static char bufs[2][65536];
	static int which;
	char *buf = bufs[which++ % 2];
	FILE *f = fopen(file, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(bufs[0]) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *err_text;

/* Runs `prof dump args...` with stdout and stderr to files; returns the status, stdout in
 * *text, stderr in err_text. */
static int run_dump(char **text, int nargs, ...)
{
	char *argv[8] = {"dump"};
	va_list ap;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++)
		argv[1 + i] = va_arg(ap, char *);
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	cr_assert_not_null(freopen(out, "w", stdout));
	cr_assert_not_null(freopen(errs, "w", stderr));
	int rc = cmd_dump(1 + nargs, argv);
	fflush(stdout);
	fflush(stderr);
	*text = slurp(out);
	err_text = slurp(errs);
	return rc;
}

Test(dump, header_and_records)
{
	struct tg *tg = tg_create();
	uint64_t frames[2] = {0x401000, 0xabc};
	uint8_t bid[3] = {0xde, 0xad, 0x01};
	tg_module(tg, 0, TG_START_NS + 1, 4, 0x400000, 0x401000, 0x1000, bid, 3, "/lib/a.so");
	tg_stack(tg, 0, TG_START_NS + 2, 7, frames, 2);
	tg_alloc(tg, 2, TG_START_NS + 1500000000ull, 0x1000, 64, 7);
	tg_realloc(tg, 2, TG_START_NS + 1500000001ull, 0x1000, 0x2000, 128, 7);
	tg_rec(tg, 0, 250, 0, TG_START_NS + 3, NULL, 8);
	tg_exit(tg, 0, TG_START_NS + 2000000000ull, 0, 0);
	tg_write(tg, path);
	tg_destroy(tg);

	char *text;
	cr_assert_eq(run_dump(&text, 1, path), 0);
	const char *want[] = {
		"exe                \"/bin/test\"", "host               \"testhost\"",
		"argv[1]", "\"--flag\"", "chunk_size         4096", "pid                4242",
		"state              1 (exited)",
		" 0.000000001 ", "MODULE", "id=4 [0x400000-0x401000) bias=0x1000 build_id=dead01",
		"path=\"/lib/a.so\"", "STACK         id=7 depth=2 0x401000 0xabc",
		" 1.500000000      2     4243 ALLOC         malloc ptr=0x1000 size=64 stack=7",
		"FREE          ptr=0x1000 (realloc)", "realloc ptr=0x2000 size=128",
		"UNKNOWN(250)", "EXIT          how=exit status=0", "7 records",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_not_null(strstr(text, want[i]), "lacks '%s' in:\n%s", want[i], text);
	cr_assert_lt(strstr(text, "UNKNOWN(250)"), strstr(text, "ALLOC"), "time order");
}

Test(dump, help_and_errors)
{
	char *text;
	cr_assert_eq(run_dump(&text, 1, "--help"), 0);
	cr_assert_not_null(strstr(text, "usage: prof dump"));
	cr_assert_eq(run_dump(&text, 1, "--bogus"), 2);
	cr_assert_not_null(strstr(err_text, "unknown option"));
	cr_assert_eq(run_dump(&text, 0), 1);
	cr_assert_eq(run_dump(&text, 1, path), 1, "missing file");

	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_rec(tg, 0, PROF_REC_FREE, 0, 20, NULL, 0);  /* too short */
	tg_write(tg, path);
	tg_destroy(tg);
	cr_assert_eq(run_dump(&text, 1, path), 1);
	cr_assert_not_null(strstr(text, "ALLOC"), "records before the error are printed");
	char want[256];
	snprintf(want, sizeof(want), "prof: %s: offset 4152: FREE record size 16 is smaller", path);
	cr_assert(strstr(err_text, want) == err_text, "stderr: %s", err_text);
	cr_assert_eq(run_dump(&text, 1, dir), 1, "the directory holds the bad trace");
}
