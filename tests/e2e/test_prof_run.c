/* prof-run as SPEC.md fixes it: the program's own exit status (128+N when it died of signal N),
 * its stdout untouched, a summary and the run directory on stderr, one trace per process. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(prof_run, .fini = teardown, .timeout = 120);

/* Runs prof-run -o DIR/run -- argv...; returns its exit status, stdout and stderr. */
static int prof_run(const char *dir, const char *const *prog, char **out, char **err)
{
	static char lib[PATH_MAX + 16], an[PATH_MAX + 32];
	char o[PATH_MAX], e[PATH_MAX], run[PATH_MAX];
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	snprintf(o, sizeof(o), "%s/out.txt", dir);
	snprintf(e, sizeof(e), "%s/err.txt", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	const char *argv[16] = { "scripts/prof-run", "-o", run, "--" };
	size_t n = 4;
	for (size_t i = 0; prog[i] && n < 15; i++)
		argv[n++] = prog[i];
	argv[n] = NULL;
	const char *env[] = { lib, an, NULL };
	int st = e2e_run(argv, env, o, e);
	*out = e2e_read_file(o);
	*err = e2e_read_file(e);
	cr_assert(WIFEXITED(st), "prof-run itself must exit, not die");
	return WEXITSTATUS(st);
}

static int traces_in(const char *dir)
{
	char run[PATH_MAX];
	snprintf(run, sizeof(run), "%s/run", dir);
	DIR *d = opendir(run);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".trace") != NULL;
	if (d)
		closedir(d);
	return n;
}

Test(prof_run, exit_status_stdout_and_summary)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("crash"), "exit", "10", NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 3);
	cr_expect_str_eq(out, "", "nothing of ours on the program's stdout");
	cr_expect_not_null(strstr(err, "prof-run: traces in"), "%s", err);
	cr_expect_not_null(strstr(err, "exit 3"), "the summary: %s", err);
	cr_expect_eq(traces_in(dir), 1);
	free(out);
	free(err);
}

Test(prof_run, death_by_signal_is_128_plus_n)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("crash"), "abort", "10", NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 128 + 6);
	cr_expect_eq(traces_in(dir), 1, "the trace of a crashed program is kept");
	free(out);
	free(err);
}

Test(prof_run, program_output_passes_through)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("forker"), NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 7);
	cr_expect_eq(traces_in(dir), 3, "parent, child and exec'd image");
	free(out);
	free(err);
	const char *echo[] = { "/bin/echo", "hello", "world", NULL };
	cr_expect_eq(prof_run(e2e_tmpdir(), echo, &out, &err), 0);
	cr_expect_str_eq(out, "hello world\n");
	free(out);
	free(err);
}

Test(prof_run, missing_program_and_bad_usage)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *missing[] = { "/nonexistent/program", NULL };
	cr_expect_eq(prof_run(dir, missing, &out, &err), 127);
	cr_expect_eq(e2e_count_lines(err), 1, "%s", err);
	free(out);
	free(err);
	const char *argv[] = { "scripts/prof-run", "--no-such-option", NULL };
	int st = e2e_run(argv, NULL, NULL, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}
