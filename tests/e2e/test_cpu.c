/* End-to-end tests of CPU sampling and blocked time: programs with known shares of CPU time,
 * calls a signal could interrupt, and known waits, run under libprof (and perf record where
 * perf works), and what prof says about them. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(cpu, .fini = teardown, .timeout = 180);

static const char *const fast[] = { "PROF_CPU_HZ=999", NULL };

/* Runs argv under libprof at env; the report of its run directory; *dir set. */
static json_t *profile(const char *const argv[], const char *const env[], const char **dir,
		       int *status)
{
	const char *d = e2e_tmpdir();
	cr_assert_not_null(d);
	static char out[512];
	snprintf(out, sizeof(out), "%s/out.txt", d);
	int st = e2e_profile(d, argv, env, out, NULL);
	if (status)
		*status = st;
	if (dir)
		*dir = d;
	json_t *doc = e2e_prof_json("report", d);
	cr_assert_not_null(doc, "prof report --json failed on %s", d);
	return doc;
}

static const char *const hot[] = { "hot_a", "hot_b", "hot_c" };
static const double hot_share[] = { 50, 30, 20 };

Test(cpu, shares_of_known_functions_in_three_threads)
{
	const char *argv[] = { e2e_prog("cpu_shares"), "200", NULL };
	int st;
	json_t *doc = profile(argv, fast, NULL, &st);
	cr_assert_eq(st, 0);
	json_t *proc = e2e_process(doc, 0), *cpu = json_object_get(proc, "cpu");
	cr_expect_eq(e2e_int(cpu, "hz"), 999);
	cr_assert_gt(e2e_int(cpu, "samples"), 300, "about 2 s of CPU time was used");
	for (int k = 0; k < 3; k++) {
		double got = e2e_cpu_total_pct(cpu, hot[k]);
		cr_expect(fabs(got - hot_share[k]) <= 3.0, "%s: %.1f%% of the CPU time, expected %.0f%%",
			  hot[k], got, hot_share[k]);
	}
	/* Every thread is sampled for about the CPU time it used (0.6 + 0.8 + 0.6 s), and none
	 * used more than the process lived. */
	long duration = e2e_int(proc, "duration_ns"), sum = 0;
	size_t i;
	json_t *t;
	cr_assert_eq(json_array_size(json_object_get(cpu, "threads")), 3);
	json_array_foreach(json_object_get(cpu, "threads"), i, t) {
		long cpu_ns = e2e_int(t, "cpu_ns"), sampled = e2e_int(t, "sampled_ns");
		cr_expect_gt(e2e_int(t, "samples"), 20, "thread %zu", i);
		cr_expect_leq(cpu_ns, duration, "thread %zu", i);
		cr_expect(labs(sampled - cpu_ns) < cpu_ns / 5, "thread %zu: sampled %ld of %ld ns", i,
			  sampled, cpu_ns);
		sum += sampled;
	}
	cr_expect(labs(sum - 2000000000L) < 300000000L, "sampled %ld ns of about 2 s", sum);
	/* The leaf of a sample is the PC that ran: spin_for's own lines hold the self time. */
	json_t *first = json_array_get(json_object_get(cpu, "top"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(first, "function")), "spin_for");
	long line = e2e_int(first, "line"), loop = e2e_marker_line("cpu_shares.c", "HOT-LOOP");
	cr_expect(line == loop || line == loop + 1, "the hottest line %ld is the loop's (%ld)", line, loop);
	json_decref(doc);
}

/* perf's "Children" share of a symbol, from `perf report --children` text; -1 if absent. */
static double perf_children(const char *text, const char *sym)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double children, self;
		char name[128];
		if (sscanf(l, " %lf%% %lf%% [.] %127s", &children, &self, name) == 3 && !strcmp(name, sym))
			return children;
	}
	return -1;
}

Test(cpu, agrees_with_perf_record)
{
	const char *d = e2e_tmpdir();
	cr_assert_not_null(d);
	char data[512], report[512], err[512];
	snprintf(data, sizeof(data), "%s/perf.data", d);
	snprintf(report, sizeof(report), "%s/perf.txt", d);
	snprintf(err, sizeof(err), "%s/perf.err", d);
	const char *rec[] = { "perf", "record", "-q", "-F", "999", "-g", "-o", data, "--",
			      e2e_prog("cpu_shares"), "200", NULL };
	int st = e2e_run(rec, NULL, NULL, err);
	if (st != 0)
		cr_skip_test("perf record is not available or not allowed here (status %d)", st);
	const char *rep[] = { "perf", "report", "-i", data, "--stdio", "--children", "--sort", "symbol",
			      "-g", "none", "-q", NULL };
	if (e2e_run(rep, NULL, report, err) != 0)
		cr_skip_test("perf report failed");
	char *text = e2e_read_file(report);
	cr_assert_not_null(text);
	const char *argv[] = { e2e_prog("cpu_shares"), "200", NULL };
	json_t *doc = profile(argv, fast, NULL, NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	for (int k = 0; k < 3; k++) {
		double theirs = perf_children(text, hot[k]), ours = e2e_cpu_total_pct(cpu, hot[k]);
		cr_expect_geq(theirs, 0, "perf names %s", hot[k]);
		cr_expect(fabs(theirs - ours) <= 3.0, "%s: perf %.1f%%, libprof %.1f%%", hot[k], theirs, ours);
	}
	free(text);
	json_decref(doc);
}

Test(cpu, calls_never_fail_with_eintr_and_program_signals_still_work)
{
	const char *d;
	int st;
	const char *argv[] = { e2e_prog("cpu_quiet"), "300", NULL };
	json_t *doc = profile(argv, fast, &d, &st);
	char path[512];
	snprintf(path, sizeof(path), "%s/out.txt", d);
	char *out = e2e_read_file(path);
	cr_assert_not_null(out);
	int eintr = -1, sigprof = -1, own = -1;
	char *p;
	if ((p = strstr(out, "eintr ")))
		eintr = atoi(p + 6);
	if ((p = strstr(out, "sigprof ")))
		sigprof = atoi(p + 8);
	if ((p = strstr(out, "own ")))
		own = atoi(p + 4);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	cr_expect_eq(eintr, 0, "no call failed with EINTR");
	cr_expect_geq(sigprof, 20, "the program's own ITIMER_PROF ticked (%d)", sigprof);
	cr_expect_eq(own, 2, "its own handlers got its own raise()s");
	cr_expect_not_null(strstr(out, "mask 1"), "a thread reads back the mask it set: %s", out);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(cpu, "threads"), i, t)
		cr_expect_gt(e2e_int(t, "samples"), 10, "thread %zu sampled (one blocks every signal)", i);
	free(out);
	json_decref(doc);
}

/* The folded flame graph of kind on dir, as text. */
static char *folded(const char *dir, const char *kind)
{
	const char *d = e2e_tmpdir();
	char out[512];
	snprintf(out, sizeof(out), "%s/%s.folded", d, kind);
	const char *argv[] = { e2e_prof(), "flame", "--kind", kind, "--folded", dir, NULL };
	cr_assert_eq(e2e_run(argv, NULL, out, NULL), 0, "prof flame --kind %s", kind);
	return e2e_read_file(out);
}

/* The weight of the folded lines that hold every one of the given frames (in order). */
static double weight_of(const char *text, const char *a, const char *b)
{
	return e2e_folded_weight(text, a, b);
}

/* Threads cancelled while blocked (cancel_blocked: in nanosleep, poll, waitpid, pthread_join
 * and sem_wait, each for 80 ms): the time each was blocked, until the cancellation unwound it
 * out of the hook, is its blocked time all the same, by cause. */
Test(cpu, blocked_time_of_cancelled_threads)
{
	int st;
	const char *argv[] = { e2e_prog("cancel_blocked"), NULL };
	json_t *doc = profile(argv, NULL, NULL, &st);
	cr_assert_eq(st, 0, "status %d", st);
	const char *cause[][2] = { { "sleeper", "blocked.sleep" }, { "poller", "blocked.poll" },
				   { "waiter", "blocked.wait" }, { "joiner", "blocked.join" },
				   { "semwaiter", "blocked.lock" } };
	int found = 0;
	json_t *p = e2e_process(doc, 0);
	for (size_t k = 0; p && k < 2; p = e2e_process(doc, ++k)) {
		size_t i;
		json_t *t;
		json_array_foreach(json_object_get(json_object_get(p, "cpu"), "threads"), i, t) {
			const char *name = json_string_value(json_object_get(t, "name"));
			for (size_t c = 0; name && c < 5; c++)
				if (!strcmp(name, cause[c][0])) {
					found++;
					cr_expect_geq(e2e_int(t, cause[c][1]), 60 * 1000000L, "%s: %s %ld ns",
						      name, cause[c][1], e2e_int(t, cause[c][1]));
				}
		}
	}
	cr_expect_eq(found, 5, "the five cancelled threads");
	json_decref(doc);
}

Test(cpu, blocked_time_by_cause_and_wall_clock_view)
{
	const char *d;
	int st;
	const char *argv[] = { e2e_prog("cpu_wall"), NULL };
	json_t *doc = profile(argv, fast, &d, &st);
	cr_assert_eq(st, 0);
	cr_assert_eq(json_array_size(json_object_get(doc, "processes")), 2, "parent and fork child");
	json_t *parent = NULL, *child = NULL;
	for (size_t i = 0; i < 2; i++) {
		json_t *p = e2e_process(doc, i);
		if (json_array_size(json_object_get(p, "threads")) == 2)
			parent = p;
		else
			child = p;
	}
	cr_assert(parent && child);
	json_t *main = json_array_get(json_object_get(json_object_get(parent, "cpu"), "threads"), 0);
	long lock = e2e_int(main, "blocked.lock"), sleep = e2e_int(main, "blocked.sleep");
	long wait = e2e_int(main, "blocked.wait"), cpu = e2e_int(main, "sampled_ns");
	cr_expect(labs(lock - 200000000) < 60000000, "lock wait %ld ns, about 200 ms", lock);
	cr_expect(labs(sleep - 200000000) < 30000000, "sleep %ld ns, about 200 ms", sleep);
	cr_expect(labs(cpu - 200000000) < 40000000, "CPU %ld ns, about 200 ms", cpu);
	cr_expect_gt(wait, 80000000, "waited %ld ns for the child's 100 ms", wait);
	long child_cpu = e2e_int(json_object_get(child, "cpu"), "cpu_ns");
	cr_expect(labs(child_cpu - 100000000) < 40000000, "the fork child's 100 ms: %ld ns", child_cpu);

	char *off = folded(d, "offcpu"), *wall = folded(d, "wall"), *cpuf = folded(d, "cpu");
	cr_assert(off && wall && cpuf);
	cr_expect_gt(weight_of(off, "wait_for_lock", "[lock wait]"), 140e6, "%s", off);
	cr_expect_gt(weight_of(off, "main", "[sleep]"), 170e6, "%s", off);
	cr_expect_gt(weight_of(off, "main", "[child wait]"), 80e6, "%s", off);
	cr_expect_gt(weight_of(wall, "compute", NULL), 160e6, "%s", wall);
	cr_expect_gt(weight_of(wall, "[sleep]", NULL), 170e6, "%s", wall);
	cr_expect_gt(weight_of(cpuf, "compute", NULL), 20, "samples, not ns: %s", cpuf);
	free(off);
	free(wall);
	free(cpuf);

	/* The timeline has the samples and the blocked calls. */
	char tl[512];
	snprintf(tl, sizeof(tl), "%s/timeline.json", e2e_tmpdir());
	const char *exp[] = { e2e_prof(), "export", "--format", "chrome", "-o", tl, d, NULL };
	cr_assert_eq(e2e_run(exp, NULL, NULL, NULL), 0);
	char *text = e2e_read_file(tl);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "\"cat\":\"cpu\",\"s\":\"t\",\"name\":\"compute\""),
			   "samples named by the function they caught");
	cr_expect_not_null(strstr(text, "\"name\":\"nanosleep\""));
	free(text);
	json_decref(doc);
}

Test(cpu, off_when_not_asked_for)
{
	const char *env[] = { "PROF_EVENTS=alloc,lock,thread,io", NULL };
	const char *argv[] = { e2e_prog("cpu_shares"), "20", NULL };
	json_t *doc = profile(argv, env, NULL, NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	cr_expect_eq(e2e_int(cpu, "samples"), 0);
	cr_expect_eq(e2e_int(cpu, "hz"), 0);
	json_decref(doc);
}

Test(cpu, a_tick_during_a_blocking_call_is_never_seen)
{
	/* cpu_ticks sends the blocked thread libprof's own tick every 2 ms: each call is made
	 * again for what is left of its timeout; the program's own signal still ends a poll. */
	const char *d;
	int st;
	const char *argv[] = { e2e_prog("cpu_ticks"), NULL };
	json_t *doc = profile(argv, NULL, &d, &st);
	char path[512];
	snprintf(path, sizeof(path), "%s/out.txt", d);
	char *out = e2e_read_file(path);
	cr_assert_not_null(out);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	cr_expect_not_null(strstr(out, "failures 0"), "%s", out);
	cr_expect_not_null(strstr(out, "own signal: poll -1 Interrupted system call"), "%s", out);
	free(out);
	json_decref(doc);
}

Test(cpu, samples_inside_hooks_count_for_the_program)
{
	/* No leak check: its time at exit (under exit(), not main) grows with the calls made,
	 * and with fast hooks it would be more than a tenth of the run. */
	const char *argv[] = { e2e_prog("cpu_hooks"), NULL };
	const char *env[] = { "PROF_CPU_HZ=999", "PROF_LEAK_CHECK=0", NULL };
	int st;
	json_t *doc = profile(argv, env, NULL, &st);
	cr_assert_eq(st, 0);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	cr_assert_gt(e2e_int(cpu, "samples"), 20);
	cr_expect_gt(e2e_int(cpu, "in_libprof"), 0, "the hooks took CPU time");
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(cpu, "top_total"), i, f) {
		const char *module = json_string_value(json_object_get(f, "module"));
		cr_expect(!module || !strstr(module, "libprof.so"), "libprof's %s in a stack",
			  json_string_value(json_object_get(f, "function")));
	}
	double churn = e2e_cpu_total_pct(cpu, "churn"), main = e2e_cpu_total_pct(cpu, "main");
	cr_expect_gt(churn, 90, "churn() and what it called: %.1f%%", churn);
	cr_expect_gt(main, 90, "whole stacks, also while libprof was unwinding: %.1f%%", main);
	json_decref(doc);
}

Test(cpu, sampling_alone_registers_every_thread)
{
	const char *env[] = { "PROF_EVENTS=cpu", "PROF_CPU_HZ=999", NULL };
	const char *argv[] = { e2e_prog("cpu_shares"), "50", NULL };
	json_t *doc = profile(argv, env, NULL, NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	/* The three working threads, each sampled; the main thread, which only starts and joins
	 * them, may get a sample of its own on a loaded machine. */
	json_t *threads = json_object_get(cpu, "threads");
	cr_assert_geq(json_array_size(threads), 3);
	size_t i, busy = 0;
	json_t *t;
	json_array_foreach(threads, i, t)
		busy += e2e_int(t, "samples") > 5;
	cr_expect_geq(busy, 3, "threads with more than 5 samples: %zu", busy);
	json_decref(doc);
}

Test(cpu, without_stacks_the_pc_still_names_the_function)
{
	const char *env[] = { "PROF_STACK_DEPTH=0", "PROF_CPU_HZ=999", NULL };
	const char *argv[] = { e2e_prog("cpu_shares"), "30", NULL };
	json_t *doc = profile(argv, env, NULL, NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	cr_assert_gt(e2e_int(cpu, "samples"), 10);
	json_t *first = json_array_get(json_object_get(cpu, "top"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(first, "function")), "spin_for");
	json_decref(doc);
}

Test(cpu, samples_in_a_library_loaded_later_are_symbolized)
{
	char lib[4096];
	snprintf(lib, sizeof(lib), "%s/progs/libplugin.so", e2e_build());
	const char *argv[] = { e2e_prog("cpu_plugin"), lib, NULL };
	int st;
	json_t *doc = profile(argv, fast, NULL, &st);
	cr_assert_eq(st, 0);
	json_t *first = json_array_get(json_object_get(json_object_get(e2e_process(doc, 0), "cpu"),
						       "top"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(first, "function")), "plugin_spin");
	json_decref(doc);
}

Test(cpu, small_thread_stacks_never_overflow)
{
	const char *argv[] = { e2e_prog("cpu_stacks"), NULL };
	int st;
	json_t *doc = profile(argv, fast, NULL, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	/* spin() is static and inlined or not: each thread's time is found under its routine
	 * (big stack: unwound) or in spin/its routine by PC (small stack). */
	double big = e2e_cpu_total_pct(cpu, "on_big_stack");
	cr_expect_gt(big, 35, "the 256 KiB thread unwound: %.1f%%", big);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(cpu, "threads"), i, t)
		if (i > 0)
			cr_expect_gt(e2e_int(t, "samples"), 10, "thread %zu sampled", i);
	json_decref(doc);
}

/* PROG MODE [ARG] under libprof with samples at 999 Hz, killed after 60 s: it must end by
 * itself (not hang), with status 0. Its report; its stderr goes to err (NULL: none). */
static json_t *report_of_a_minute_at_most(const char *prog, const char *mode, const char *arg,
					  const char *err)
{
	const char *dir = e2e_tmpdir();
	char pre[PATH_MAX + 16], out[PATH_MAX + 32];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", e2e_lib());
	snprintf(out, sizeof(out), "PROF_OUTPUT=%s/t.%%p.trace", dir);
	const char *argv[] = { "timeout", "-s", "KILL", "60", "env", pre, out, "PROF_CPU_HZ=999",
			       e2e_prog(prog), mode, arg, NULL };
	int st = e2e_run(argv, NULL, NULL, err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s: status %d (hung?)", prog, mode, st);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	return doc;
}

/* A thread that spends its CPU time inside dl_iterate_phdr callbacks (holding the loader's
 * lock) while another one's allocations are unwound (libunwind holds its own lock and calls
 * dl_iterate_phdr): a CPU sample of the first must not unwind, or both wait for ever (the
 * program then stops for no signal but SIGKILL: libunwind blocks every signal while it holds
 * its lock). Before the fix, `many_paths loader` hung 3 runs in 3. */
Test(cpu, a_thread_holding_the_loader_lock_is_sampled_without_a_wait)
{
	json_t *doc = report_of_a_minute_at_most("many_paths", "loader", NULL, NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	cr_expect_gt(e2e_int(cpu, "samples"), 10, "the walker thread was sampled");
	json_decref(doc);
}

/* Threads that take and give back the loader's lock in a loop: a sample that lands between
 * pthread_mutex_lock winning the lock word and setting its owner finds no owner, and must
 * still not unwind (libunwind's dl_iterate_phdr would wait for the interrupted thread itself).
 * Before the fix this hung 3 runs in 3, even at the default 99 Hz. */
Test(cpu, a_thread_taking_the_loader_lock_is_sampled_without_a_wait)
{
	json_t *doc = report_of_a_minute_at_most("loader_walks", "walks", "1000", NULL);
	json_t *cpu = json_object_get(e2e_process(doc, 0), "cpu");
	cr_expect_gt(e2e_int(cpu, "samples"), 100, "both walkers were sampled");
	json_decref(doc);
}

/* Allocations from new call paths inside a dl_iterate_phdr callback (the thread holds the
 * loader's lock) while another thread's new paths are unwound: the first thread's stacks are
 * their call sites alone, said once at exit; an unwind would wait for libunwind's lock, held
 * by the other thread, which waits for the loader's (hung 3 runs in 3 before the fix). */
Test(cpu, allocations_inside_a_loader_walk_are_recorded_without_a_wait)
{
	char err[PATH_MAX];
	snprintf(err, sizeof(err), "%s/stderr", e2e_tmpdir());
	json_t *doc = report_of_a_minute_at_most("loader_walks", "allocs", "1000", err);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "inside dl_iterate_phdr callbacks"), "stderr: %s", text);
	free(text);
	json_t *p = e2e_process(doc, 0);
	cr_expect_gt(e2e_int(p, "heap.alloc_calls"), 1000);
	cr_expect_eq(e2e_int(p, "heap.alloc_calls"), e2e_int(p, "heap.free_calls"));
	json_decref(doc);
}
