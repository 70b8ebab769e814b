/* prof export --format chrome: a timeline chrome://tracing and Perfetto open, from a real run
 * with contended locks, threads, stdout writes and heap activity. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static void teardown(void)
{
	e2e_cleanup();
}

TestSuite(export, .fini = teardown, .timeout = 120);

static size_t count(json_t *events, const char *ph, const char *cat, const char *name_part)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *c = json_string_value(json_object_get(e, "cat"));
		const char *name = json_string_value(json_object_get(e, "name"));
		if (p && !strcmp(p, ph) && (!cat || (c && !strcmp(c, cat))) &&
		    (!name_part || (name && strstr(name, name_part))))
			n++;
	}
	return n;
}

static double sum_dur(json_t *events, const char *cat)
{
	double sum = 0;
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const char *c = json_string_value(json_object_get(e, "cat"));
		if (c && !strcmp(c, cat))
			sum += json_number_value(json_object_get(e, "dur"));
	}
	return sum;
}

Test(export, chrome_timeline_of_a_real_run)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/timeline.json", dir);
	const char *argv[] = { e2e_prog("lock_counts"), "4", "2000", NULL };
	int st = e2e_profile(dir, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	const char *cmd[] = { e2e_prof(), "export", "--format", "chrome", "-o", out, dir, NULL };
	cr_assert_eq(e2e_run(cmd, NULL, NULL, NULL), 0);
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "not JSON: %s (line %d)", je.text, je.line);
	json_t *ev = json_object_get(doc, "traceEvents");
	cr_assert(json_is_array(ev));
	cr_expect_eq(count(ev, "M", NULL, "process_name"), 1);
	/* Every record that makes an event made one: as many as the trace holds. */
	size_t waits = e2e_dumped(dir, "LOCK_WAIT", NULL);
	cr_assert_gt(waits, 0, "4 threads on one mutex contend");
	cr_expect_eq(count(ev, "X", "lock", NULL), waits);
	cr_expect_geq(count(ev, "X", "lock", "mutex"), 1, "the mutex is among them");
	size_t io = e2e_dumped(dir, "IO_CALL", NULL) + e2e_dumped(dir, "IO_NAME", NULL);
	cr_assert_gt(io, 0, "the writes to stdout");
	cr_expect_eq(count(ev, "X", "io", NULL), io);
	cr_expect_eq(count(ev, "M", NULL, "thread_name"),
		     e2e_dumped(dir, "THREAD_END", NULL) + e2e_dumped(dir, "THREAD_NAME", NULL));
	cr_expect_geq(count(ev, "M", NULL, "thread_name"), 5, "main and 4 workers named");
	cr_expect_eq(count(ev, "i", "process", "exit 0"), 1);
	cr_expect_eq(count(ev, "i", "process", NULL), 1, "no fork or exec in this run");
	/* The lock events' durations add up to the report's wait time (us, 3 decimals each). */
	json_t *report = e2e_prof_json("report", dir);
	json_t *locks = json_object_get(e2e_process(report, 0), "locks");
	double wait_ns = 0;
	size_t i;
	json_t *e;
	json_array_foreach(locks, i, e)
		wait_ns += (double)json_integer_value(json_object_get(e, "wait_ns"));
	cr_expect_lt(fabs(sum_dur(ev, "lock") * 1000.0 - wait_ns), (double)waits + 1.0,
		     "lock waits in the timeline %.0f ns, in the report %.0f ns",
		     sum_dur(ev, "lock") * 1000.0, wait_ns);
	/* The heap counter: starts at the first allocation, never negative, and ends where the
	 * report's heap ended (what was still in use). */
	size_t samples = count(ev, "C", NULL, "heap");
	cr_expect_geq(samples, 2, "the heap counter moves");
	double last = -1;
	json_array_foreach(ev, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		if (strcmp(json_string_value(json_object_get(e, "ph")), "C") || !name ||
		    strcmp(name, "heap"))
			continue;
		last = json_number_value(json_object_get(json_object_get(e, "args"), "bytes"));
		cr_expect_geq(last, 0);
	}
	cr_expect_eq((long)last, e2e_int(e2e_process(report, 0), "heap.leaked_bytes"));
	json_decref(report);
	/* Durations are never negative and events carry numeric timestamps. */
	json_array_foreach(ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "M"))
			cr_assert(json_is_number(json_object_get(e, "ts")));
		if (json_object_get(e, "dur"))
			cr_assert_geq(json_number_value(json_object_get(e, "dur")), 0);
	}
	json_decref(doc);
}

Test(export, unknown_format_and_bad_trace_fail_cleanly)
{
	const char *dir = e2e_tmpdir();
	char bad[PATH_MAX], err[PATH_MAX];
	snprintf(bad, sizeof(bad), "%s/bad.trace", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	FILE *f = fopen(bad, "w");
	cr_assert_not_null(f);
	fputs("not a trace at all\n", f);
	fclose(f);
	const char *fmt[] = { e2e_prof(), "export", "--format", "svg", bad, NULL };
	int st = e2e_run(fmt, NULL, NULL, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	const char *cmd[] = { e2e_prof(), "export", "--format", "chrome", bad, NULL };
	st = e2e_run(cmd, NULL, NULL, err);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char *text = e2e_read_file(err);
	cr_assert_not_null(text);
	cr_expect_eq(e2e_count_lines(text), 1, "%s", text);
	cr_expect_not_null(strstr(text, bad));
	free(text);
}

/* CUDA against the fake driver: one API event per CUDA_API record (and per CUDA_LAUNCH that
 * stands for its call too), one GPU event per CUDA_GPU record, on tracks named per stream. */
Test(export, cuda_timeline_counts_every_call_and_kernel)
{
	char bin[PATH_MAX], env0[PATH_MAX + 32];
	snprintf(bin, sizeof(bin), "%s/cuda/drv_test", e2e_build());
	if (access(bin, X_OK) != 0)
		cr_skip_test("%s not built", bin);
	snprintf(env0, sizeof(env0), "LD_LIBRARY_PATH=%s/cuda", e2e_build());
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/timeline.json", dir);
	const char *argv[] = { bin, "gpa", "3", NULL };
	const char *env[] = { env0, "PROF_CUDA_TIMING=events", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	const char *cmd[] = { e2e_prof(), "export", "-o", out, dir, NULL };
	cr_assert_eq(e2e_run(cmd, NULL, NULL, NULL), 0);
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "not JSON: %s (line %d)", je.text, je.line);
	json_t *ev = json_object_get(doc, "traceEvents");
	size_t api = e2e_dumped(dir, "CUDA_API", NULL) + e2e_dumped(dir, "CUDA_LAUNCH", " api: ");
	size_t gpu = e2e_dumped(dir, "CUDA_GPU", NULL);
	cr_assert_gt(e2e_dumped(dir, "CUDA_LAUNCH", " api: "), 0, "launches stand for their calls");
	cr_assert_gt(api, 0);
	cr_assert_gt(gpu, 0, "event pairs timed the kernels");
	cr_expect_eq(count(ev, "X", "cuda", NULL), api);
	cr_expect_eq(count(ev, "X", "gpu", NULL), gpu);
	cr_expect_geq(count(ev, "X", "gpu", "kernel"), 1, "kernels carry their names");
	cr_expect_geq(count(ev, "M", NULL, "thread_name"), 2, "the main thread and a GPU stream");
	json_decref(doc);
}
