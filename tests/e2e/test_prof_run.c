/* prof-run as SPEC.md fixes it: the program's own exit status (128+N when it died of signal N),
 * its stdout untouched, a summary and the run directory on stderr, one trace per process. */
#include <criterion/criterion.h>
#include <signal.h>
#include <unistd.h>
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

/* Runs [VAR=VALUE] prof-run -o DIR/run [opts...] -- argv...; returns its exit status, stdout
 * and stderr. */
static int prof_run_env(const char *dir, const char *var, const char *const *opts,
			const char *const *prog, char **out, char **err)
{
	static char lib[PATH_MAX + 16], an[PATH_MAX + 32];
	char o[PATH_MAX], e[PATH_MAX], run[PATH_MAX];
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	snprintf(o, sizeof(o), "%s/out.txt", dir);
	snprintf(e, sizeof(e), "%s/err.txt", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	const char *argv[24] = { "scripts/prof-run", "-o", run };
	size_t n = 3;
	for (size_t i = 0; opts && opts[i] && n < 12; i++)
		argv[n++] = opts[i];
	argv[n++] = "--";
	for (size_t i = 0; prog[i] && n < 23; i++)
		argv[n++] = prog[i];
	argv[n] = NULL;
	const char *env[] = { lib, an, var, NULL };
	int st = e2e_run(argv, env, o, e);
	*out = e2e_read_file(o);
	*err = e2e_read_file(e);
	cr_assert(WIFEXITED(st), "prof-run itself must exit, not die");
	return WEXITSTATUS(st);
}

static int prof_run_with(const char *dir, const char *const *opts, const char *const *prog,
			 char **out, char **err)
{
	return prof_run_env(dir, NULL, opts, prog, out, err);
}

static int prof_run(const char *dir, const char *const *prog, char **out, char **err)
{
	return prof_run_with(dir, NULL, prog, out, err);
}

/* Traces in the run directory run whose file name holds name ("" for all). */
static int traces_of(const char *run, const char *name)
{
	DIR *d = opendir(run);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, name) && strstr(de->d_name, ".trace");
	if (d)
		closedir(d);
	return n;
}

static int traces_in(const char *dir)
{
	char run[PATH_MAX];
	snprintf(run, sizeof(run), "%s/run", dir);
	return traces_of(run, "");
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

/* --help prints the usage on stdout, as written (its `prof pack` was run as a command by the
 * shell, and dropped from the text), and nothing on stderr. */
Test(prof_run, help_is_printed_as_written)
{
	const char *dir = e2e_tmpdir();
	char o[PATH_MAX], e[PATH_MAX];
	snprintf(o, sizeof(o), "%s/out.txt", dir);
	snprintf(e, sizeof(e), "%s/err.txt", dir);
	const char *argv[] = { "scripts/prof-run", "--help", NULL };
	int st = e2e_run(argv, NULL, o, e);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	char *out = e2e_read_file(o), *err = e2e_read_file(e);
	cr_assert(out && err);
	cr_expect_not_null(strstr(out, "as `prof pack` does"), "%s", out);
	cr_expect_str_eq(err, "");
	free(out);
	free(err);
}

/* A statically linked program cannot be preloaded: refused plainly, not run for nothing. */
Test(prof_run, statically_linked_program_is_refused)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("static_prog"), NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 126);
	cr_expect_not_null(strstr(err, "statically linked"), "%s", err);
	cr_expect_str_eq(out, "", "the program ran: %s", out);
	cr_expect_eq(traces_in(dir), 0);
	free(out);
	free(err);
}

Test(prof_run, unknown_event_families_are_refused)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *opts[] = { "-e", "alloc,locks", NULL };
	const char *prog[] = { "/bin/true", NULL };
	cr_expect_eq(prof_run_with(dir, opts, prog, &out, &err), 2);
	cr_expect_not_null(strstr(err, "unknown event family 'locks'"), "%s", err);
	cr_expect_eq(traces_in(dir), 0);
	free(out);
	free(err);
}

Test(prof_run, a_directory_with_traces_is_not_mixed)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { "/bin/true", NULL };
	cr_assert_eq(prof_run(dir, prog, &out, &err), 0);
	free(out);
	free(err);
	cr_assert_eq(traces_in(dir), 1);
	cr_expect_eq(prof_run(dir, prog, &out, &err), 2);
	cr_expect_not_null(strstr(err, "already holds"), "%s", err);
	free(out);
	free(err);
	const char *force[] = { "--force", NULL };
	cr_expect_eq(prof_run_with(dir, force, prog, &out, &err), 0);
	cr_expect_eq(traces_in(dir), 1, "the old trace is replaced, not kept beside the new one");
	free(out);
	free(err);
}

Test(prof_run, options_without_effect_say_so)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *opts[] = { "--cpu-hz", "200", NULL };
	const char *prog[] = { "/bin/true", NULL };
	cr_expect_eq(prof_run_with(dir, opts, prog, &out, &err), 0);
	/* Until CPU sampling is recorded (prof flame has no cpu kind), the option says so. */
	FILE *p = popen("build/prof flame --help | grep -c '^  cpu '", "r");
	char buf[16] = "";
	if (p) {
		if (!fgets(buf, sizeof(buf), p))
			buf[0] = 0;
		pclose(p);
	}
	if (atoi(buf) == 0)
		cr_expect_not_null(strstr(err, "does nothing"), "%s", err);
	free(out);
	free(err);
}

Test(prof_run, no_follow_and_only)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("forker"), NULL };
	const char *no_follow[] = { "--no-follow", NULL };
	prof_run_with(dir, no_follow, prog, &out, &err);
	cr_expect_eq(traces_in(dir), 1, "%s", err);
	free(out);
	free(err);
	const char *sh[] = { "/bin/sh", "-c", "/bin/true; ls / >/dev/null", NULL };
	const char *only[] = { "--force", "--only", "ls", NULL };
	cr_expect_eq(prof_run_with(dir, only, sh, &out, &err), 0);
	cr_expect_eq(traces_in(dir), 1, "%s", err);
	cr_expect_not_null(strstr(err, " ls: "), "%s", err);
	free(out);
	free(err);
}

/* A fork child maps its own trace alone, never its parent's: where it records (the parent's
 * mapping is replaced by its own), and where it records nothing (--no-follow). */
Test(prof_run, a_fork_child_maps_no_trace_but_its_own)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("child_maps"), NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 0, "%s", err);
	cr_expect_not_null(strstr(out, "child_trace_maps 1\n"), "following: %s", out);
	cr_expect_eq(traces_in(dir), 2, "%s", err);
	free(out);
	free(err);
	const char *no_follow[] = { "--force", "--no-follow", NULL };
	cr_expect_eq(prof_run_with(dir, no_follow, prog, &out, &err), 0, "%s", err);
	cr_expect_not_null(strstr(out, "child_trace_maps 0\n"), "--no-follow: %s", out);
	cr_expect_eq(traces_in(dir), 1, "%s", err);
	free(out);
	free(err);
}

/* kill of prof-run reaches the program; its end and signal are in its trace. */
static void signal_is_passed_on(int sig)
{
	const char *dir = e2e_tmpdir();
	char run[PATH_MAX], lib[PATH_MAX + 16], an[PATH_MAX + 32];
	snprintf(run, sizeof(run), "%s/run-%d", dir, sig);
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		putenv(lib);
		putenv(an);
		freopen("/dev/null", "w", stderr);
		/* a shell that started the tests in the background without job control made them
		 * ignore SIGINT, and an ignored signal stays ignored for prof-run and the program */
		signal(sig, SIG_DFL);
		execl("scripts/prof-run", "prof-run", "-o", run, "--", "/bin/sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* the program must be running under libprof, and for a while, before the signal: on a
	 * loaded machine prof-run may take longer than any fixed wait to start it */
	for (int i = 0; i < 200 && !traces_of(run, ".sleep."); i++)
		usleep(50 * 1000);
	usleep(700 * 1000);
	kill(pid, sig);
	int st = 0;
	for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(50 * 1000);
	cr_assert(WIFEXITED(st), "prof-run did not end after signal %d", sig);
	cr_expect_eq(WEXITSTATUS(st), 128 + sig);
	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc);
	json_t *p = e2e_process(doc, 0);
	cr_expect_eq(e2e_int(p, "exit.signal"), sig);
	cr_expect_lt(e2e_int(p, "duration_ns"), 5000000000L);
	cr_expect_gt(e2e_int(p, "duration_ns"), 500000000L);
	json_decref(doc);
}

Test(prof_run, sigterm_is_passed_on_and_recorded)
{
	signal_is_passed_on(SIGTERM);
}

/* Not from a terminal (no foreground group of ours got it): SIGINT and SIGHUP too. */
Test(prof_run, sigint_and_sighup_are_passed_on)
{
	signal_is_passed_on(SIGINT);
	signal_is_passed_on(SIGHUP);
}

/* The library itself: one line naming what it ignores, the rest recorded. */
Test(prof_run, the_library_names_unknown_event_families)
{
	const char *dir = e2e_tmpdir();
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/lib-err.txt", dir);
	const char *argv[] = { "/bin/true", NULL };
	const char *env[] = { "PROF_EVENTS=alloc,locks,io", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, err), 0);
	char *e = e2e_read_file(err);
	cr_assert_not_null(e);
	cr_expect_eq(e2e_count_lines(e), 1, "%s", e);
	cr_expect_not_null(strstr(e, "unknown event family 'locks' ignored"), "%s", e);
	free(e);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	json_decref(doc);
}

/* A run of many processes: the summary shows the ten busiest and counts the rest. */
Test(prof_run, many_processes_summary_leads_with_the_busiest)
{
	const char *dir = e2e_tmpdir();
	char *out, *err, script[PATH_MAX + 128];
	snprintf(script, sizeof(script),
		 "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/true; done; %s", e2e_prog("demo"));
	const char *prog[] = { "/bin/sh", "-c", script, NULL };
	cr_assert_eq(prof_run(dir, prog, &out, &err), 0);
	cr_expect_eq(traces_in(dir), 14, "%s", err);
	cr_expect_not_null(strstr(err, "... and 4 more processes"), "%s", err);
	const char *first = strstr(err, "pid ");
	cr_assert_not_null(first, "%s", err);
	cr_expect(strstr(first, "demo") && strstr(first, "demo") < strchr(first, '\n'),
		  "the demo, which did the most work, first:\n%s", err);
	free(out);
	free(err);
}

/* The program starts with the dispositions prof-run was given (it runs in the background of
 * the script, which must not leave SIGINT ignored: Python looks at it). */
Test(prof_run, the_program_keeps_its_signal_dispositions)
{
	const char *dir = e2e_tmpdir();
	char *out, *err, direct[PATH_MAX];
	const char *prog[] = { e2e_prog("dispositions"), NULL };
	cr_assert_eq(prof_run(dir, prog, &out, &err), 0);
	snprintf(direct, sizeof(direct), "%s/direct.txt", dir);
	cr_assert_eq(e2e_run(prog, NULL, direct, NULL), 0);
	char *want = e2e_read_file(direct);
	cr_assert_not_null(want);
	cr_expect_str_eq(out, want);
	cr_expect_not_null(strstr(out, "2 default"), "%s", out);
	free(want);
	free(out);
	free(err);
}

/* A crash the library recorded itself keeps its own end: prof-run adds none. */
Test(prof_run, a_recorded_crash_gets_no_second_end)
{
	const char *dir = e2e_tmpdir();
	char *out, *err;
	const char *prog[] = { e2e_prog("crash"), "segv", "10", NULL };
	cr_expect_eq(prof_run(dir, prog, &out, &err), 128 + SIGSEGV);
	free(out);
	free(err);
	char run[PATH_MAX];
	snprintf(run, sizeof(run), "%s/run", dir);
	const char *args[] = { "dump", run, NULL };
	char *text = e2e_prof_text(dir, args);
	int exits = 0;
	for (const char *t = text; (t = strstr(t, " EXIT ")); t++)
		exits++;
	cr_expect_eq(exits, 1, "%s", text);
	free(text);
}

/* Steps on large traces (compressing, summarizing) are announced, so that the pause after a
 * long run does not look like a hang; PROF_RUN_NOTE_MB sets from how many MB. */
Test(prof_run, steps_on_large_traces_are_announced)
{
	const char *prog[] = { e2e_prog("crash"), "exit", "10", NULL };  /* exit 3 */
	char *out, *err;
	const char *dir = e2e_tmpdir();
	cr_expect_eq(prof_run_env(dir, "PROF_RUN_NOTE_MB=0", NULL, prog, &out, &err), 3);
	cr_expect_not_null(strstr(err, "prof-run: compressing 0 MB of traces..."), "%s", err);
	cr_expect_not_null(strstr(err, "prof-run: summarizing 0 MB of traces..."), "%s", err);
	free(out);
	free(err);
	dir = e2e_tmpdir();
	cr_expect_eq(prof_run(dir, prog, &out, &err), 3);
	cr_expect_null(strstr(err, "MB of traces"), "small traces: no such line: %s", err);
	free(out);
	free(err);
}
