/* End-to-end: the sampled heap mode (PROF_HEAP_SAMPLE, prof-run --heap-sample) against the
 * exact one on tests/progs/heap_sites, whose sites are known: per-site estimates within 10%
 * for every site above 1% of the bytes, calls, frees and bytes exact, the peak within 1%.
 * The sampler's seed is fixed (PROF_HEAP_SAMPLE_SEED), so a run is repeatable; 8 KiB gives
 * each site 1000 sample points or more, so that 10% is three standard deviations or more of
 * its estimate (3% for the 1.1% site of 128-byte blocks, 2% for the 64-byte one): with
 * another allocation stream (another libc) the test still holds. Most allocations are only
 * counted in this mode (tallied): the tests at the end hold the counts to the exact mode's
 * where threads free each other's blocks. */
#include <criterion/criterion.h>
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

TestSuite(heap_sample, .fini = teardown, .timeout = 120);

#define NSITES 5
static const char *const site_names[NSITES] = { "site_small", "site_mid", "site_big",
						"site_huge", "site_few" };

struct heap_fig {
	long alloc_calls, free_calls, bytes, peak, sample;
	long site_bytes[NSITES], site_calls[NSITES], site_sampled[NSITES];
};

/* The heap_sites site a report site belongs to (a site_* function in its stack), or -1. */
static int site_of(json_t *site)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(site, "stack"), i, f) {
		const char *fn = json_string_value(json_object_get(f, "function"));
		for (int k = 0; fn && k < NSITES; k++)
			if (!strcmp(fn, site_names[k]))
				return k;
	}
	return -1;
}

static struct heap_fig figures(const char *dir)
{
	json_t *doc = e2e_prof_json("report --top=100", dir);
	cr_assert_not_null(doc, "prof report --json failed on %s", dir);
	json_t *proc = e2e_process(doc, 0);
	cr_assert_not_null(proc);
	json_t *heap = json_object_get(proc, "heap");
	struct heap_fig h = { .alloc_calls = e2e_int(heap, "alloc_calls"),
			      .free_calls = e2e_int(heap, "free_calls"),
			      .bytes = e2e_int(heap, "bytes_allocated"),
			      .peak = e2e_int(heap, "peak_bytes"),
			      .sample = e2e_int(heap, "sample_bytes") };
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(heap, "sites"), i, s) {
		int k = site_of(s);
		if (k < 0)
			continue;
		h.site_bytes[k] += e2e_int(s, "bytes");
		h.site_calls[k] += e2e_int(s, "calls");
		h.site_sampled[k] += e2e_int(s, "sampled");
	}
	json_decref(doc);
	return h;
}

static struct heap_fig run(const char *sample)
{
	const char *dir = e2e_tmpdir();
	cr_assert_not_null(dir);
	char var[64];
	snprintf(var, sizeof(var), "PROF_HEAP_SAMPLE=%s", sample);
	const char *env[] = { "PROF_EVENTS=alloc", var, "PROF_HEAP_SAMPLE_SEED=42", NULL };
	const char *argv[] = { e2e_prog("heap_sites"), NULL };
	int st = e2e_profile(dir, argv, env, NULL, NULL);
	cr_assert_eq(st, 0, "heap_sites under libprof (PROF_HEAP_SAMPLE=%s): status %d", sample, st);
	return figures(dir);
}

static void check_against_exact(const struct heap_fig *ex, const struct heap_fig *sa, long mean)
{
	cr_assert_eq(ex->sample, 0);
	cr_assert_eq(sa->sample, mean, "sample_bytes %ld, expected %ld", sa->sample, mean);
	cr_assert_eq(sa->alloc_calls, ex->alloc_calls, "calls are exact: %ld vs %ld", sa->alloc_calls,
		     ex->alloc_calls);
	cr_assert_eq(sa->free_calls, ex->free_calls);
	cr_assert_eq(sa->bytes, ex->bytes, "bytes are exact: %ld vs %ld", sa->bytes, ex->bytes);
	double dpeak = (double)labs(sa->peak - ex->peak) / (double)ex->peak;
	cr_assert_leq(dpeak, 0.01, "peak %ld sampled, %ld exact", sa->peak, ex->peak);
	for (int k = 0; k < NSITES; k++) {
		cr_assert_gt(ex->site_bytes[k], ex->bytes / 100, "%s is above 1%% of the bytes",
			     site_names[k]);
		double err = (double)labs(sa->site_bytes[k] - ex->site_bytes[k]) /
			     (double)ex->site_bytes[k];
		cr_assert_leq(err, 0.10, "%s: %ld bytes estimated from %ld samples, %ld exact",
			      site_names[k], sa->site_bytes[k], sa->site_sampled[k], ex->site_bytes[k]);
		double cerr = (double)labs(sa->site_calls[k] - ex->site_calls[k]) /
			      (double)ex->site_calls[k];
		cr_assert_leq(cerr, 0.10, "%s: %ld calls estimated, %ld exact", site_names[k],
			      sa->site_calls[k], ex->site_calls[k]);
		cr_assert_lt(sa->site_sampled[k], sa->site_calls[k] + 1);
	}
	/* Sampled: far fewer allocations with stacks than calls. */
	cr_assert_lt(sa->site_sampled[0] * 20, ex->site_calls[0]);
}

Test(heap_sample, estimates_match_exact_mode)
{
	struct heap_fig ex = run("0"), sa = run("8K");
	cr_assert_eq(ex.site_calls[0], 300000);
	cr_assert_eq(ex.site_bytes[3], 3000 * 262144L);
	check_against_exact(&ex, &sa, 8192);
}

/* Another seed and a larger mean: the mid, big and huge sites (900 sample points or more) still
 * come out within 10%. */
Test(heap_sample, other_seed_coarser)
{
	const char *dir = e2e_tmpdir();
	const char *env[] = { "PROF_EVENTS=alloc", "PROF_HEAP_SAMPLE=32K", "PROF_HEAP_SAMPLE_SEED=7",
			      NULL };
	const char *argv[] = { e2e_prog("heap_sites"), NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0);
	struct heap_fig sa = figures(dir);
	cr_assert_eq(sa.sample, 32768);
	cr_assert_eq(sa.alloc_calls, sa.free_calls);  /* all freed */
	/* a summary of the run gives the same estimates, and says they are */
	char sum[512];
	snprintf(sum, sizeof(sum), "%s/run.sum", dir);
	const char *cmd[] = { e2e_prof(), "summarize", dir, "-o", sum, NULL };
	cr_assert_eq(e2e_run(cmd, NULL, NULL, NULL), 0, "prof summarize failed");
	struct heap_fig from_sum = figures(sum);
	cr_assert_eq(memcmp(&from_sum, &sa, sizeof(sa)), 0, "the summary's heap differs (sample %ld)",
		     from_sum.sample);
	long want[NSITES] = { 19200000, 30000000, 32768000, 3000 * 262144L, 9600000 };
	for (int k = 1; k < 4; k++) {
		double err = (double)labs(sa.site_bytes[k] - want[k]) / (double)want[k];
		cr_assert_leq(err, 0.10, "%s: %ld bytes estimated, %ld allocated", site_names[k],
			      sa.site_bytes[k], want[k]);
	}
}

/* The heap of a run of prog (argv[0] a program in tests/progs) with PROF_HEAP_SAMPLE=sample,
 * recording the heap alone or (all) every family. */
static json_t *heap_of_run(const char *const *argv, const char *sample, int all, json_t **doc)
{
	const char *dir = e2e_tmpdir();
	char var[64];
	snprintf(var, sizeof(var), "PROF_HEAP_SAMPLE=%s", sample);
	const char *env[] = { var, "PROF_HEAP_SAMPLE_SEED=3", all ? NULL : "PROF_EVENTS=alloc", NULL };
	cr_assert_eq(e2e_profile(dir, argv, env, NULL, NULL), 0, "%s (%s)", argv[0], var);
	*doc = e2e_prof_json("report", dir);
	cr_assert_not_null(*doc);
	json_t *heap = json_object_get(e2e_process(*doc, 0), "heap");
	cr_assert_not_null(heap);
	return heap;
}

/* Sampled against exact where most allocations are only counted (tallied): calls, bytes and
 * the blocks left at exit are exact; the bytes left within the rounding of those blocks (15
 * bytes each), the peak within 1%. heap_handoff frees every block in another thread than the
 * one that allocated it; heap_threads frees in the same one, from 4 threads at once. */
static void tallies_match_exact(const char *const *argv, double peak_within, long or_bytes,
				const char *sample, int all)
{
	json_t *exact_doc, *sampled_doc;
	json_t *ex = heap_of_run(argv, "0", all, &exact_doc);
	json_t *sa = heap_of_run(argv, sample, all, &sampled_doc);
	static const char *const same[] = { "alloc_calls", "free_calls", "bytes_allocated",
					    "leaked_blocks" };
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		cr_expect_eq(e2e_int(sa, same[i]), e2e_int(ex, same[i]), "%s: %s %ld sampled, %ld exact",
			     argv[0], same[i], e2e_int(sa, same[i]), e2e_int(ex, same[i]));
	long left = e2e_int(ex, "leaked_bytes"), blocks = e2e_int(ex, "leaked_blocks");
	cr_expect_leq(labs(e2e_int(sa, "leaked_bytes") - left), 15 * blocks,
		      "%s: %ld bytes left sampled, %ld exact", argv[0], e2e_int(sa, "leaked_bytes"), left);
	long peak = e2e_int(ex, "peak_bytes");
	double slack = peak_within * (double)peak > (double)or_bytes ? peak_within * (double)peak :
									  (double)or_bytes;
	cr_expect_leq((double)labs(e2e_int(sa, "peak_bytes") - peak), slack,
		      "%s: peak %ld sampled, %ld exact", argv[0], e2e_int(sa, "peak_bytes"), peak);
	cr_expect(json_is_true(json_object_get(sa, "peak_estimated")));
	cr_expect(json_is_false(json_object_get(ex, "peak_estimated")));
	json_decref(exact_doc);
	json_decref(sampled_doc);
}

Test(heap_sample, tallies_across_threads_match_exact_mode)
{
	const char *argv[] = { e2e_prog("heap_handoff"), NULL };
	tallies_match_exact(argv, 0.01, 0, "64K", 0);
}

/* SQLite's heap, every family recorded, as prof-run --heap-sample 512K does: large blocks
 * (recorded one by one) come and go between the tallies of the small ones; the peak that
 * held both is seen in the order they happened (it came out 6% low before that). */
Test(heap_sample, tallies_around_large_blocks_match_exact_mode)
{
	const char *argv[] = { e2e_prog("db_sqlite"), NULL };
	tallies_match_exact(argv, 0.01, 0, "512K", 1);
}

/* A heap of a few hundred bytes (4 threads, one block each at a time): the peak may be off by
 * what the threads did between two tallies, 8 KiB each at most; the rest as above. */
Test(heap_sample, tallies_of_threads_match_exact_mode)
{
	const char *argv[] = { e2e_prog("heap_threads"), "4", "100000", NULL };
	tallies_match_exact(argv, 0, 4 * 8192, "64K", 0);
}

/* Counts end with their process image: a fork child's, cut short by its exec, are in its
 * trace as they are in the exact mode's, process by process (sorted: pids differ). */
static int by_counts(const void *a, const void *b)
{
	const long *x = a, *y = b;
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static size_t process_counts(const char *sample, long out[][3], size_t max)
{
	const char *dir = e2e_tmpdir();
	char var[64];
	snprintf(var, sizeof(var), "PROF_HEAP_SAMPLE=%s", sample);
	const char *env[] = { "PROF_EVENTS=alloc", var, NULL };
	const char *argv[] = { e2e_prog("forker"), NULL };
	int st = e2e_profile(dir, argv, env, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "forker exits with 7: status %d", st);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	size_t n = 0;
	for (json_t *p; n < max && (p = e2e_process(doc, n)); n++) {
		json_t *heap = json_object_get(p, "heap");
		out[n][0] = e2e_int(heap, "alloc_calls");
		out[n][1] = e2e_int(heap, "free_calls");
		out[n][2] = e2e_int(heap, "bytes_allocated");
	}
	/* A setting, the same in every process: the totals over processes do not add it up. */
	json_t *totals = json_object_get(json_object_get(doc, "totals"), "heap");
	cr_expect(totals && json_object_get(totals, "alloc_calls") &&
		  !json_object_get(totals, "sample_bytes"), "totals: sample_bytes %lld",
		  (long long)json_integer_value(json_object_get(totals, "sample_bytes")));
	json_decref(doc);
	qsort(out, n, sizeof(out[0]), by_counts);
	return n;
}

Test(heap_sample, counts_of_fork_and_exec_match_exact_mode)
{
	long ex[8][3], sa[8][3];
	size_t n = process_counts("0", ex, 8);
	cr_assert_eq(n, 3, "parent, child, the child's exec: %zu processes", n);
	cr_assert_eq(process_counts("64K", sa, 8), n);
	for (size_t i = 0; i < n; i++)
		cr_expect(!memcmp(ex[i], sa[i], sizeof(ex[i])),
			  "process %zu: %ld calls, %ld frees, %ld bytes sampled; %ld, %ld, %ld exact", i,
			  sa[i][0], sa[i][1], sa[i][2], ex[i][0], ex[i][1], ex[i][2]);
}

/* prof-run --heap-sample sets PROF_HEAP_SAMPLE; a bad value is a usage error. */
Test(heap_sample, prof_run_option)
{
	const char *dir = e2e_tmpdir();
	char run_dir[512];
	snprintf(run_dir, sizeof(run_dir), "%s/run", dir);
	const char *argv[] = { "scripts/prof-run", "-o", run_dir, "--no-report", "-e", "alloc",
			       "--heap-sample", "512K", "--", e2e_prog("heap_sites"), NULL };
	int st = e2e_run(argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "prof-run: status %d", st);
	struct heap_fig sa = figures(run_dir);
	cr_assert_eq(sa.sample, 512 * 1024);
	const char *bad[] = { "scripts/prof-run", "-o", run_dir, "--heap-sample", "lots", "--", "true",
			      NULL };
	st = e2e_run(bad, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "bad --heap-sample: status %d", st);
}

/* A SIGALRM handler that siglongjmps out of libprof's hooks (tests/progs/alarm_jumps.c) while
 * they changed the set of blocks with records (at 64 bytes nearly every block has one) left
 * the set locked for good when the jump came between the lock's two steps, and the next free
 * that looked in the set waited for ever. The calls stay counted, give or take the one each
 * jump interrupted. */
Test(heap_sample, a_longjmp_out_of_the_set_of_recorded_blocks_leaves_it_usable)
{
	const char *dir = e2e_tmpdir();
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	const char *env[] = { "PROF_HEAP_SAMPLE=64", "PROF_ONLY=alarm_jumps", NULL };
	const char *argv[] = { "timeout", "30", e2e_prog("alarm_jumps"), "1000", NULL };
	int st = e2e_profile(dir, argv, env, out, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d (exit 124: it hung)", st);
	struct e2e_jumps j = e2e_jumps_said(out);
	json_t *doc = e2e_prof_json("report", dir);
	cr_assert_not_null(doc);
	e2e_expect_heap_of_jumps(e2e_process(doc, 0), j);
	json_decref(doc);
}
