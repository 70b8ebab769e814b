/* Compressed traces and the trace clock end to end: `prof pack` and prof-run's compression
 * leave traces that every command reads as it read the raw ones, --no-compress keeps them raw,
 * and the TSC clock measures what CLOCK_MONOTONIC measures. */
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

TestSuite(pack, .fini = teardown, .timeout = 180);

/* Files in dir ending in suffix. */
static int count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	int n = 0;
	struct dirent *de;
	size_t ls = strlen(suffix);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		n += l >= ls && !strcmp(de->d_name + l - ls, suffix);
	}
	closedir(d);
	return n;
}

/* Drops the "trace" keys (file names, which packing changes) everywhere in a document. */
static void drop_trace_names(json_t *j)
{
	if (json_is_object(j)) {
		json_object_del(j, "trace");
		const char *k;
		json_t *v;
		json_object_foreach(j, k, v)
			drop_trace_names(v);
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v)
			drop_trace_names(v);
	}
}

/* `prof CMD ARGS... PATH` with its stdout into out; returns the exit status. */
static int prof_to(const char *out, const char *a1, const char *a2, const char *a3,
		   const char *path)
{
	const char *argv[8] = { e2e_prof(), a1 };
	size_t n = 2;
	if (a2)
		argv[n++] = a2;
	if (a3)
		argv[n++] = a3;
	argv[n++] = path;
	argv[n] = NULL;
	int st = e2e_run(argv, NULL, out, NULL);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A fresh directory for a run's traces, DIR/run. */
static const char *run_dir(const char *dir)
{
	static char run[PATH_MAX];
	snprintf(run, sizeof(run), "%s/run", dir);
	const char *mk[] = { "mkdir", run, NULL };
	cr_assert_eq(e2e_run(mk, NULL, NULL, NULL), 0);
	return run;
}

Test(pack, compressed_and_raw_traces_give_the_same_output)
{
	const char *dir = e2e_tmpdir(), *run = run_dir(dir);
	char f[4][PATH_MAX + 16];
	const char *argv[] = { e2e_prog("heap_threads"), "3", "20000", NULL };
	cr_assert_eq(e2e_profile(run, argv, NULL, NULL, NULL), 0);
	cr_assert_eq(count_suffix(run, ".trace"), 1);
	for (int i = 0; i < 4; i++)
		snprintf(f[i], sizeof(f[i]), "%s/out%d.txt", dir, i);
	json_t *raw = e2e_prof_json("report", run);
	cr_assert_not_null(raw);
	cr_assert_eq(prof_to(f[0], "flame", "--kind", "alloc", run), 0);
	cr_assert_eq(prof_to(f[1], "leaks", NULL, NULL, run), 0);

	cr_assert_eq(prof_to(f[2], "pack", NULL, NULL, run), 0);
	cr_expect_eq(count_suffix(run, ".trace"), 0, "the raw trace is gone");
	cr_assert_eq(count_suffix(run, ".trace.zst"), 1);
	char *said = e2e_read_file(f[2]);
	cr_expect_not_null(strstr(said, ".trace.zst: "), "%s", said);
	free(said);

	json_t *packed = e2e_prof_json("report", run);
	cr_assert_not_null(packed);
	drop_trace_names(raw);
	drop_trace_names(packed);
	char *a = json_dumps(raw, JSON_SORT_KEYS), *b = json_dumps(packed, JSON_SORT_KEYS);
	cr_expect(json_equal(raw, packed), "report --json differs:\n%.2000s\n---\n%.2000s", a, b);
	free(a);
	free(b);
	json_decref(raw);
	json_decref(packed);
	cr_assert_eq(prof_to(f[2], "flame", "--kind", "alloc", run), 0);
	cr_assert_eq(prof_to(f[3], "leaks", NULL, NULL, run), 0);
	char *x = e2e_read_file(f[0]), *y = e2e_read_file(f[2]);
	cr_expect_str_eq(x, y, "flame differs");
	free(x);
	free(y);
	x = e2e_read_file(f[1]);
	y = e2e_read_file(f[3]);
	cr_expect_str_eq(x, y, "leaks differs");
	free(x);
	free(y);

	/* prof pack -d: the raw trace again, which reads as it did. */
	cr_assert_eq(prof_to(f[2], "pack", "-d", NULL, run), 0);
	cr_expect_eq(count_suffix(run, ".trace.zst"), 0);
	cr_assert_eq(count_suffix(run, ".trace"), 1);
	cr_assert_eq(prof_to(f[3], "leaks", NULL, NULL, run), 0);
	x = e2e_read_file(f[1]);
	y = e2e_read_file(f[3]);
	cr_expect_str_eq(x, y, "leaks differs after prof pack -d");
	free(x);
	free(y);
}

/* A run of many processes' traces, packed and unpacked by four workers at once
 * (PROF_JOBS=4): every trace is packed, the run reads as it did, and every trace comes back. */
Test(pack, many_traces_pack_and_unpack_in_parallel)
{
	const char *run = run_dir(e2e_tmpdir());
	const char *argv[] = { e2e_prog("forker"), NULL };
	for (int i = 0; i < 6; i++) {  /* 3 traces each: parent, fork child, its exec */
		int st = e2e_profile(run, argv, NULL, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "forker: status %d", st);
	}
	int traces = count_suffix(run, ".trace");
	cr_assert_geq(traces, 12, "%d traces", traces);
	json_t *raw = e2e_prof_json("report", run);
	cr_assert_not_null(raw);

	const char *env[] = { "PROF_JOBS=4", NULL };
	const char *pack[] = { e2e_prof(), "pack", "-q", run, NULL };
	cr_assert_eq(e2e_run(pack, env, NULL, NULL), 0);
	cr_expect_eq(count_suffix(run, ".trace"), 0);
	cr_assert_eq(count_suffix(run, ".trace.zst"), traces);
	json_t *packed = e2e_prof_json("report", run);
	cr_assert_not_null(packed);
	drop_trace_names(raw);
	drop_trace_names(packed);
	cr_expect(json_equal(raw, packed), "the packed run reads differently");
	json_decref(raw);
	json_decref(packed);

	const char *unpack[] = { e2e_prof(), "pack", "-d", "-q", run, NULL };
	cr_assert_eq(e2e_run(unpack, env, NULL, NULL), 0);
	cr_expect_eq(count_suffix(run, ".trace.zst"), 0);
	cr_expect_eq(count_suffix(run, ".trace"), traces);
}

/* Runs prof-run -o DIR/run [opt] heap_threads; returns the run directory. */
static const char *prof_run(const char *dir, const char *opt)
{
	static char run[PATH_MAX];
	static char lib[PATH_MAX + 16], an[PATH_MAX + 32];
	snprintf(run, sizeof(run), "%s/run%s", dir, opt ? opt : "");
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	const char *env[] = { lib, an, NULL };
	const char *argv[10] = { "scripts/prof-run", "--no-report", "-o", run };
	size_t n = 4;
	if (opt)
		argv[n++] = opt;
	argv[n++] = "--";
	argv[n++] = e2e_prog("heap_threads");
	argv[n++] = "2";
	argv[n++] = "1000";
	argv[n] = NULL;
	int st = e2e_run(argv, env, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "prof-run status %d", st);
	return run;
}

Test(pack, prof_run_compresses_unless_told_not_to)
{
	const char *dir = e2e_tmpdir();
	const char *run = prof_run(dir, NULL);
	cr_expect_eq(count_suffix(run, ".trace"), 0);
	cr_expect_eq(count_suffix(run, ".trace.zst"), 1);
	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc);
	cr_expect_eq(e2e_int(e2e_process(doc, 0), "heap.alloc_calls") >= 2000, 1);
	json_decref(doc);
	run = prof_run(dir, "--no-compress");
	cr_expect_eq(count_suffix(run, ".trace"), 1);
	cr_expect_eq(count_suffix(run, ".trace.zst"), 0);
}

/* A helper that outlives its program by a moment (tests/progs/outlived.c): prof-run waits
 * for its trace (prof pack --wait) instead of leaving it raw with a line on stderr. */
Test(pack, prof_run_compresses_the_traces_of_helpers_that_outlive_the_program)
{
	const char *dir = e2e_tmpdir();
	char run[PATH_MAX], err[PATH_MAX], lib[PATH_MAX + 16], an[PATH_MAX + 32];
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	snprintf(lib, sizeof(lib), "PROF_LIB=%s", e2e_lib());
	snprintf(an, sizeof(an), "PROF_ANALYZER=%s", e2e_prof());
	const char *env[] = { lib, an, NULL };
	const char *argv[] = { "scripts/prof-run", "--no-report", "-o", run, "--",
			       e2e_prog("outlived"), NULL };
	cr_assert_eq(e2e_run(argv, env, NULL, err), 0);
	cr_expect_eq(count_suffix(run, ".trace"), 0, "no trace left raw");
	cr_expect_eq(count_suffix(run, ".trace.zst"), 2, "the program's and its helper's");
	char *said = e2e_read_file(err);
	cr_expect(said && !strstr(said, "still runs"), "said: %s", said ? said : "");
	free(said);
	json_t *doc = e2e_prof_json("report", run);
	cr_assert_not_null(doc);
	long helper_allocs = -1;
	for (size_t i = 0; e2e_process(doc, i); i++)
		if (e2e_int(e2e_process(doc, i), "heap.bytes_allocated") == 100)
			helper_allocs = e2e_int(e2e_process(doc, i), "heap.alloc_calls");
	cr_expect_eq(helper_allocs, 1, "the helper's whole trace, its end included");
	json_decref(doc);
}

/* The time between the two marks of sleep_marks (ALLOC of 777 and of 888 bytes) in the
 * trace, from prof dump; what the program measured itself in *prog_ms; the header's clock
 * source in *src. */
static double marks_ms(const char *dir, const char *clock, unsigned *src, long *allocs,
		       double *prog_ms)
{
	char run[PATH_MAX], env_clock[64], dump[PATH_MAX + 16], out[PATH_MAX + 16];
	snprintf(run, sizeof(run), "%s/%s", dir, clock);
	const char *mk[] = { "mkdir", run, NULL };
	cr_assert_eq(e2e_run(mk, NULL, NULL, NULL), 0);
	snprintf(env_clock, sizeof(env_clock), "PROF_CLOCK=%s", clock);
	const char *env[] = { env_clock, NULL };
	const char *argv[] = { e2e_prog("sleep_marks"), NULL };
	snprintf(out, sizeof(out), "%s/%s.out", dir, clock);
	cr_assert_eq(e2e_profile(run, argv, env, out, NULL), 0);
	char *said = e2e_read_file(out);
	long long between = 0;
	cr_assert(said && sscanf(said, "between_ns=%lld", &between) == 1, "%s", said);
	free(said);
	*prog_ms = (double)between / 1e6;
	snprintf(dump, sizeof(dump), "%s/dump.txt", dir);
	cr_assert_eq(prof_to(dump, "dump", NULL, NULL, run), 0);
	char *text = e2e_read_file(dump);
	cr_assert_not_null(text);
	double t777 = -1, t888 = -1;
	*allocs = 0;
	*src = 99;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long off;
		double t;
		char type[32];
		if (sscanf(line, " clock_source %u", src) == 1)
			continue;
		if (sscanf(line, " %llu %lf %*u %*u %31s", &off, &t, type) != 3 ||
		    strcmp(type, "ALLOC"))
			continue;
		(*allocs)++;
		if (strstr(line, " size=777 "))
			t777 = t;
		if (strstr(line, " size=888 "))
			t888 = t;
	}
	free(text);
	cr_assert(t777 >= 0 && t888 >= 0, "marks not found in the dump");
	return (t888 - t777) * 1e3;
}

Test(pack, tsc_and_monotonic_clocks_measure_alike)
{
	const char *dir = e2e_tmpdir();
	unsigned src_tsc, src_mono;
	long n_tsc, n_mono;
	double p_tsc, p_mono;
	double tsc = marks_ms(dir, "tsc", &src_tsc, &n_tsc, &p_tsc);
	double mono = marks_ms(dir, "monotonic", &src_mono, &n_mono, &p_mono);
	cr_expect_eq(src_mono, 0, "PROF_CLOCK=monotonic reads clock_gettime");
	cr_expect(src_tsc == 1 || src_tsc == 0, "clock_source %u", src_tsc);
	cr_log_info("200 ms sleep: tsc (source %u) %.3f ms (program: %.3f), monotonic %.3f ms "
		    "(program: %.3f)", src_tsc, tsc, p_tsc, mono, p_mono);
	/* At least the sleep, and within 2% of what the program itself measured between the
	 * two calls (a loaded machine may oversleep; both clocks see the same). */
	cr_expect(tsc >= 200.0 && tsc <= p_tsc * 1.02 && tsc >= p_tsc * 0.98,
		  "TSC clock: %.3f ms, the program measured %.3f ms", tsc, p_tsc);
	cr_expect(mono >= 200.0 && mono <= p_mono * 1.02 && mono >= p_mono * 0.98,
		  "monotonic: %.3f ms, the program measured %.3f ms", mono, p_mono);
	cr_expect_eq(n_tsc, n_mono, "the same ALLOC records: %ld and %ld", n_tsc, n_mono);
}
