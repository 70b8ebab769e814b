/* CUDA analysis on synthetic traces: CUPTI activity joined to launches through CUDA_XCORR,
 * one allocation seen by both layers counted once, copy directions the GPU resolved, and the
 * duration histograms (exact median for few values, within 1.6% for many). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"
#include "findings.h"
#include "process.h"
#include "tracegen.h"

static char dir[PATH_MAX];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(cuda_analysis, .init = setup, .fini = teardown);

#define T0 TG_START_NS
#define PAYLOAD(rec) ((const char *)&(rec) + sizeof(struct prof_rec))
#define PLEN(rec) (sizeof(rec) - sizeof(struct prof_rec))

static void load(struct tg *tg, struct process *p)
{
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

static void name(struct tg *tg, uint64_t t, uint32_t id, unsigned kind, const char *s)
{
	char buf[256] = { 0 };
	struct prof_rec_cuda_name *r = (void *)buf;
	r->id = id;
	strcpy(r->name, s);
	tg_rec(tg, 0, PROF_REC_CUDA_NAME, (uint16_t)kind, t, buf + sizeof(struct prof_rec),
	       sizeof(*r) - sizeof(struct prof_rec) + strlen(s) + 1);
}

static void api(struct tg *tg, uint64_t t, unsigned layer, uint32_t nm, uint64_t corr, int result,
		uint64_t dur)
{
	struct prof_rec_cuda_api r = { .duration_ns = dur, .corr = corr, .name = nm, .result = result };
	tg_rec(tg, 0, PROF_REC_CUDA_API, (uint16_t)layer, t, PAYLOAD(r), PLEN(r));
}

Test(cuda_analysis, cupti_kernels_join_their_launch_through_xcorr)
{
	struct tg *tg = tg_create();
	name(tg, T0 + 1, 1, PROF_CUDA_NAME_API, "cudaLaunchKernel");
	name(tg, T0 + 2, 2, PROF_CUDA_NAME_KERNEL, "_Z5scaleIfEvPT_i");
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t corr = 10 + i;
		struct prof_rec_cuda_launch l = { .corr = corr, .name = 2, .stack = 0,
						  .grid = { 4, 1, 1 }, .block = { 128, 1, 1 } };
		tg_rec(tg, 0, PROF_REC_CUDA_LAUNCH, PROF_CUDA_RUNTIME, T0 + 10 + i, PAYLOAD(l), PLEN(l));
		api(tg, T0 + 10 + i, PROF_CUDA_RUNTIME, 1, corr, 0, 500);
	}
	/* CUPTI's records come later, on another thread, with CUPTI's ids */
	for (uint64_t i = 0; i < 3; i++) {
		struct prof_rec_cuda_gpu g = { .start = T0 + 1000 * i, .end = T0 + 1000 * i + 100 * (i + 1),
					       .corr = 500 + i, .activity = PROF_CUDA_ACT_KERNEL };
		tg_rec(tg, 2, PROF_REC_CUDA_GPU, PROF_CUDA_TIMING_CUPTI | PROF_CUDA_GPU_CUPTI_CORR,
		       T0 + 5000 + i, PAYLOAD(g), PLEN(g));
	}
	for (uint64_t i = 0; i < 3; i++) {
		struct prof_rec_cuda_xcorr x = { .cupti_corr = 500 + i, .corr = 10 + i };
		tg_rec(tg, 2, PROF_REC_CUDA_XCORR, 0, T0 + 6000 + i, PAYLOAD(x), PLEN(x));
	}
	tg_exit(tg, 0, T0 + 7000, 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_eq(cuda_of(&p)->nkernels, 1);
	const struct cuda_kernel_row *k = &cuda_of(&p)->kernels[0];
	cr_expect_eq(k->launches, 3);
	cr_expect_eq(k->h.n, 3);
	cr_expect_eq((uint64_t)k->h.sum, 600);
	cr_expect_eq(cuda_hist_median(&k->h), 200);
	cr_expect_eq(k->timing, PROF_CUDA_TIMING_CUPTI);
	cr_expect_str_eq(cuda_kernel_name(&p, k), "void scale<float>(float*, int)");
	process_free(&p);
}

/* The Findings rule for the GPU: busy a small share of the run while the launching thread
 * spent longer in CUDA calls than the GPU ran. */
Test(cuda_analysis, an_idle_gpu_behind_busy_launches_is_a_finding)
{
	struct tg *tg = tg_create();
	name(tg, T0 + 1, 1, PROF_CUDA_NAME_API, "cudaLaunchKernel");
	name(tg, T0 + 2, 2, PROF_CUDA_NAME_KERNEL, "tiny");
	for (uint64_t i = 0; i < 10; i++) {
		struct prof_rec_cuda_launch l = { .corr = 10 + i, .name = 2, .grid = { 1, 1, 1 },
						  .block = { 32, 1, 1 } };
		tg_rec(tg, 0, PROF_REC_CUDA_LAUNCH, PROF_CUDA_RUNTIME, T0 + 100 * i, PAYLOAD(l), PLEN(l));
		api(tg, T0 + 100 * i, PROF_CUDA_RUNTIME, 1, 10 + i, 0, 5000);
		struct prof_rec_cuda_gpu g = { .start = T0 + 100 * i + 10, .end = T0 + 100 * i + 60,
					       .corr = 10 + i, .activity = PROF_CUDA_ACT_KERNEL };
		tg_rec(tg, 0, PROF_REC_CUDA_GPU, PROF_CUDA_TIMING_EVENTS, T0 + 100 * i + 70, PAYLOAD(g),
		       PLEN(g));
	}
	tg_exit(tg, 0, T0 + 100000, 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_gt(cuda_of(&p)->kernel_ns, 0);
	struct findings f;
	cr_assert_eq(findings_collect(&f, &p, 1), 0);
	cr_assert_eq(f.n, 1, "%zu findings", f.n);
	cr_expect_str_eq(f.v[0].kind, "gpu_idle");
	cr_expect_eq(json_integer_value(json_object_get(f.v[0].evidence, "gpu_busy_ns")),
		     (json_int_t)cuda_of(&p)->kernel_ns);
	findings_free(&f);
	process_free(&p);
}

Test(cuda_analysis, one_allocation_seen_by_both_layers_counts_once)
{
	struct tg *tg = tg_create();
	struct prof_rec_cuda_malloc m = { .corr = 7, .ptr = 0x1000, .size = 4096, .kind = 0 };
	tg_rec(tg, 0, PROF_REC_CUDA_MALLOC, PROF_CUDA_DRIVER, T0 + 1, PAYLOAD(m), PLEN(m));
	tg_rec(tg, 0, PROF_REC_CUDA_MALLOC, PROF_CUDA_RUNTIME, T0 + 2, PAYLOAD(m), PLEN(m));
	struct prof_rec_cuda_malloc m2 = { .corr = 8, .ptr = 0x9000, .size = 100, .kind = 0 };
	tg_rec(tg, 0, PROF_REC_CUDA_MALLOC, PROF_CUDA_RUNTIME, T0 + 3, PAYLOAD(m2), PLEN(m2));
	struct prof_rec_cuda_free f = { .corr = 9, .ptr = 0x1000 };
	tg_rec(tg, 0, PROF_REC_CUDA_FREE, PROF_CUDA_DRIVER, T0 + 4, PAYLOAD(f), PLEN(f));
	tg_rec(tg, 0, PROF_REC_CUDA_FREE, PROF_CUDA_RUNTIME, T0 + 5, PAYLOAD(f), PLEN(f));
	tg_exit(tg, 0, T0 + 10, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_eq(cuda_of(&p)->alloc_calls, 2);
	cr_expect_eq(cuda_of(&p)->free_calls, 1);
	cr_expect_eq(cuda_of(&p)->peak, 4196);
	cr_expect_eq(cuda_of(&p)->leaked_bytes, 100);
	cr_expect_eq(cuda_of(&p)->leaked_blocks, 1);
	process_free(&p);
}

Test(cuda_analysis, the_gpu_resolves_a_default_direction)
{
	struct tg *tg = tg_create();
	struct prof_rec_cuda_copy c = { .corr = 3, .bytes = 1 << 20, .kind = PROF_CUDA_COPY_UNKNOWN };
	tg_rec(tg, 0, PROF_REC_CUDA_COPY, PROF_CUDA_RUNTIME, T0 + 1, PAYLOAD(c), PLEN(c));
	struct prof_rec_cuda_gpu g = { .start = T0 + 10, .end = T0 + 1010, .corr = 3, .bytes = 1 << 20,
				       .activity = PROF_CUDA_ACT_COPY, .copy_kind = PROF_CUDA_COPY_DTOH };
	tg_rec(tg, 0, PROF_REC_CUDA_GPU, PROF_CUDA_TIMING_EVENTS, T0 + 2000, PAYLOAD(g), PLEN(g));
	tg_exit(tg, 0, T0 + 3000, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_eq(cuda_of(&p)->copy[PROF_CUDA_COPY_UNKNOWN].count, 0);
	cr_expect_eq(cuda_of(&p)->copy[PROF_CUDA_COPY_DTOH].count, 1);
	cr_expect_eq(cuda_of(&p)->copy[PROF_CUDA_COPY_DTOH].bytes, 1 << 20);
	cr_expect_eq((uint64_t)cuda_of(&p)->copy[PROF_CUDA_COPY_DTOH].h.sum, 1000);
	process_free(&p);
}

Test(cuda_analysis, histogram_median_exact_then_within_two_percent)
{
	struct cuda_hist h;
	memset(&h, 0, sizeof(h));
	for (uint64_t v = 1; v <= 10; v++)
		cuda_hist_add(&h, v * 1000);
	cr_expect_eq(cuda_hist_median(&h), 5500);
	for (uint64_t v = 11; v <= 100001; v++)
		cuda_hist_add(&h, v * 1000);
	uint64_t m = cuda_hist_median(&h), truth = 50001000;
	cr_expect(m > truth * 0.984 && m < truth * 1.016, "median %lu", (unsigned long)m);
	cr_expect_eq(h.min, 1000);
	cr_expect_eq(h.max, 100001000);
	cuda_hist_free(&h);
}

/* ---- joining GPU activity to its call, as records stream in ------------------------------ */

static void launch(struct tg *tg, uint32_t stream, uint64_t t, unsigned layer, uint64_t corr,
		   uint32_t nm, uint32_t gx, uint32_t stack, int graph)
{
	struct prof_rec_cuda_launch l = { .corr = corr, .name = nm, .stack = stack,
					  .grid = { gx, 1, 1 }, .block = { 128, 1, 1 },
					  .graph = (uint32_t)graph };
	tg_rec(tg, stream, PROF_REC_CUDA_LAUNCH, (uint16_t)layer, t, PAYLOAD(l), PLEN(l));
}

static void api_on(struct tg *tg, uint32_t stream, uint64_t t, unsigned layer, uint32_t nm,
		   uint64_t corr)
{
	struct prof_rec_cuda_api r = { .duration_ns = 100, .corr = corr, .name = nm };
	tg_rec(tg, stream, PROF_REC_CUDA_API, (uint16_t)layer, t, PAYLOAD(r), PLEN(r));
}

static void gpu(struct tg *tg, uint32_t stream, uint64_t t, uint64_t corr, int cupti,
		unsigned act, unsigned kind, uint64_t dur, uint32_t nm)
{
	struct prof_rec_cuda_gpu g = { .start = t - dur - 10, .end = t - 10, .corr = corr,
				       .activity = (uint16_t)act, .copy_kind = (uint16_t)kind,
				       .bytes = 64, .name = nm, .grid = { 9, 1, 1 },
				       .block = { 32, 1, 1 } };
	tg_rec(tg, stream, PROF_REC_CUDA_GPU,
	       (uint16_t)(cupti ? PROF_CUDA_TIMING_CUPTI | PROF_CUDA_GPU_CUPTI_CORR
				: PROF_CUDA_TIMING_EVENTS), t, PAYLOAD(g), PLEN(g));
}

static void copy(struct tg *tg, uint32_t stream, uint64_t t, unsigned layer, uint64_t corr,
		 unsigned kind, uint64_t bytes)
{
	struct prof_rec_cuda_copy c = { .corr = corr, .bytes = bytes, .kind = (uint16_t)kind };
	tg_rec(tg, stream, PROF_REC_CUDA_COPY, (uint16_t)layer, t, PAYLOAD(c), PLEN(c));
}

static void state(struct tg *tg, uint64_t t, unsigned timing)
{
	char buf[64] = { 0 };
	struct prof_rec_cuda_state *r = (void *)buf;
	r->timing = timing;
	strcpy(r->detail, "test");
	tg_rec(tg, 0, PROF_REC_CUDA_STATE, 0, t, buf + sizeof(struct prof_rec),
	       sizeof(*r) - sizeof(struct prof_rec) + 5);
}

static const struct cuda_kernel_row *row_named(const struct process *p, uint32_t nm, uint32_t gx)
{
	for (size_t i = 0; i < cuda_of(p)->nkernels; i++)
		if (cuda_of(p)->kernels[i].name == nm && cuda_of(p)->kernels[i].grid[0] == gx)
			return &cuda_of(p)->kernels[i];
	return NULL;
}

static uint64_t gpu_ns_of_stack(const struct process *p, uint32_t stack)
{
	const uint64_t *w = u64map_get(&cuda_of(p)->gpu_by_stack, stack);
	return w ? *w : 0;
}

/* Both layers describe one launch (the driver's without a name, the runtime's with it): one
 * launch, in the named row; its GPU time joins it whether it came before the runtime's
 * record (a drain on another thread), or after the call. */
Test(cuda_analysis, both_layers_of_a_launch_count_once_and_gpu_joins_before_or_after)
{
	struct tg *tg = tg_create();
	state(tg, T0, PROF_CUDA_TIMING_EVENTS);
	/* corr 1: GPU record (other thread) between the driver's and the runtime's records */
	launch(tg, 0, T0 + 10, PROF_CUDA_DRIVER, 1, 0, 4, 0, 0);
	api_on(tg, 0, T0 + 11, PROF_CUDA_DRIVER, 1, 1);
	gpu(tg, 2, T0 + 12, 1, 0, PROF_CUDA_ACT_KERNEL, 0, 1000, 0);
	launch(tg, 0, T0 + 13, PROF_CUDA_RUNTIME, 1, 5, 4, 77, 0);
	api_on(tg, 0, T0 + 14, PROF_CUDA_RUNTIME, 2, 1);
	/* corr 2: GPU record long after the call */
	launch(tg, 0, T0 + 20, PROF_CUDA_DRIVER, 2, 5, 4, 77, 0);
	api_on(tg, 0, T0 + 21, PROF_CUDA_DRIVER, 1, 2);
	launch(tg, 0, T0 + 22, PROF_CUDA_RUNTIME, 2, 5, 4, 77, 0);
	api_on(tg, 0, T0 + 23, PROF_CUDA_RUNTIME, 2, 2);
	/* corr 3: GPU record before any record of its call */
	gpu(tg, 2, T0 + 25, 3, 0, PROF_CUDA_ACT_KERNEL, 0, 3000, 0);
	launch(tg, 0, T0 + 30, PROF_CUDA_RUNTIME, 3, 5, 4, 77, 0);
	api_on(tg, 0, T0 + 31, PROF_CUDA_RUNTIME, 2, 3);
	gpu(tg, 2, T0 + 100, 2, 0, PROF_CUDA_ACT_KERNEL, 0, 2000, 0);
	tg_exit(tg, 0, T0 + 200, 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_eq(cuda_of(&p)->nkernels, 1, "rows: %zu", cuda_of(&p)->nkernels);
	const struct cuda_kernel_row *k = &cuda_of(&p)->kernels[0];
	cr_expect_eq(k->name, 5);
	cr_expect_eq(k->launches, 3);
	cr_expect_eq(k->h.n, 3);
	cr_expect_eq((uint64_t)k->h.sum, 6000);
	cr_expect_eq(cuda_of(&p)->kernel_ns, 6000);
	cr_expect_eq(gpu_ns_of_stack(&p, 77), 6000);
	cr_expect_eq(cuda_of(&p)->correlated, 2);
	process_free(&p);
}

/* CUPTI: GPU records with CUPTI's ids, the CUDA_XCORR before or after them; a kernel with no
 * CUDA_XCORR at all counts as a launch of its own; a graph launch gets all its nodes. */
Test(cuda_analysis, cupti_xcorr_either_order_orphans_and_graphs)
{
	struct tg *tg = tg_create();
	state(tg, T0, PROF_CUDA_TIMING_CUPTI);
	launch(tg, 0, T0 + 10, PROF_CUDA_RUNTIME, 1, 5, 4, 11, 0);
	api_on(tg, 0, T0 + 11, PROF_CUDA_RUNTIME, 2, 1);
	launch(tg, 0, T0 + 20, PROF_CUDA_RUNTIME, 2, 5, 4, 11, 0);
	api_on(tg, 0, T0 + 21, PROF_CUDA_RUNTIME, 2, 2);
	launch(tg, 0, T0 + 30, PROF_CUDA_RUNTIME, 3, 0, 0, 12, 1);  /* a graph */
	api_on(tg, 0, T0 + 31, PROF_CUDA_RUNTIME, 3, 3);
	struct prof_rec_cuda_xcorr x1 = { .cupti_corr = 901, .corr = 1 };
	tg_rec(tg, 2, PROF_REC_CUDA_XCORR, 0, T0 + 40, PAYLOAD(x1), PLEN(x1));
	gpu(tg, 2, T0 + 41, 901, 1, PROF_CUDA_ACT_KERNEL, 0, 100, 0);  /* xcorr first */
	gpu(tg, 2, T0 + 42, 902, 1, PROF_CUDA_ACT_KERNEL, 0, 200, 0);  /* xcorr after */
	struct prof_rec_cuda_xcorr x2 = { .cupti_corr = 902, .corr = 2 };
	tg_rec(tg, 2, PROF_REC_CUDA_XCORR, 0, T0 + 43, PAYLOAD(x2), PLEN(x2));
	gpu(tg, 2, T0 + 44, 999, 1, PROF_CUDA_ACT_KERNEL, 0, 400, 6);  /* never mapped */
	struct prof_rec_cuda_xcorr x3 = { .cupti_corr = 903, .corr = 3 };
	tg_rec(tg, 2, PROF_REC_CUDA_XCORR, 0, T0 + 45, PAYLOAD(x3), PLEN(x3));
	for (int i = 0; i < 3; i++)  /* the graph's three nodes */
		gpu(tg, 2, T0 + 50 + (uint64_t)i, 903, 1, PROF_CUDA_ACT_KERNEL, 0, 1000, 7);
	tg_exit(tg, 0, T0 + 200, 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_eq(cuda_of(&p)->nkernels, 3);
	const struct cuda_kernel_row *k = row_named(&p, 5, 4);
	cr_assert_not_null(k);
	cr_expect_eq(k->launches, 2);
	cr_expect_eq(k->h.n, 2);
	cr_expect_eq((uint64_t)k->h.sum, 300);
	const struct cuda_kernel_row *orphan = row_named(&p, 6, 9);
	cr_assert_not_null(orphan);
	cr_expect_eq(orphan->launches, 1);
	cr_expect_eq((uint64_t)orphan->h.sum, 400);
	const struct cuda_kernel_row *graph = NULL;
	for (size_t i = 0; i < cuda_of(&p)->nkernels; i++)
		if (cuda_of(&p)->kernels[i].graph)
			graph = &cuda_of(&p)->kernels[i];
	cr_assert_not_null(graph);
	cr_expect_eq(graph->launches, 1);
	cr_expect_eq(graph->h.n, 3);
	cr_expect_eq((uint64_t)graph->h.sum, 3000);
	cr_expect_eq(gpu_ns_of_stack(&p, 11), 300);
	cr_expect_eq(gpu_ns_of_stack(&p, 12), 3000);
	cr_expect_eq(gpu_ns_of_stack(&p, 0), 400);
	cr_expect_eq(cuda_of(&p)->kernel_ns, 3700);
	process_free(&p);
}

/* Launches that never get GPU activity still count (untimed), whatever the timing. */
Test(cuda_analysis, untimed_launches_count_without_gpu_time)
{
	unsigned timings[] = { PROF_CUDA_TIMING_NONE, PROF_CUDA_TIMING_EVENTS };
	for (int t = 0; t < 2; t++) {
		struct tg *tg = tg_create();
		state(tg, T0, timings[t]);
		for (uint64_t i = 1; i <= 50; i++) {
			launch(tg, 0, T0 + 10 * i, PROF_CUDA_DRIVER, i, 5, 4, 3, 0);
			api_on(tg, 0, T0 + 10 * i + 1, PROF_CUDA_DRIVER, 1, i);
			launch(tg, 0, T0 + 10 * i + 2, PROF_CUDA_RUNTIME, i, 5, 4, 3, 0);
			api_on(tg, 0, T0 + 10 * i + 3, PROF_CUDA_RUNTIME, 2, i);
		}
		tg_exit(tg, 0, T0 + 1000, 0, 0);
		struct process p;
		load(tg, &p);
		cr_assert_eq(cuda_of(&p)->nkernels, 1);
		cr_expect_eq(cuda_of(&p)->kernels[0].launches, 50);
		cr_expect_eq(cuda_of(&p)->kernels[0].h.n, 0);
		cr_expect_eq(cuda_of(&p)->correlated, 50);
		cr_expect_eq(cuda_of(&p)->kernel_ns, 0);
		if (timings[t] == PROF_CUDA_TIMING_NONE)
			cr_expect_leq(cuda_of(&p)->pending_peak, 4);  /* nothing waits for GPU records */
		process_free(&p);
	}
}

/* Copies: one per corr across both layers; an unknown direction the GPU resolves moves the
 * copy to it; a known one stays; a memset stays a memset; a GPU copy without a call counts
 * by its own direction and bytes. */
Test(cuda_analysis, copy_directions_by_call_and_gpu)
{
	struct tg *tg = tg_create();
	state(tg, T0, PROF_CUDA_TIMING_EVENTS);
	copy(tg, 0, T0 + 10, PROF_CUDA_DRIVER, 1, PROF_CUDA_COPY_UNKNOWN, 100);
	copy(tg, 0, T0 + 11, PROF_CUDA_RUNTIME, 1, PROF_CUDA_COPY_UNKNOWN, 100);
	api_on(tg, 0, T0 + 12, PROF_CUDA_RUNTIME, 3, 1);
	copy(tg, 0, T0 + 20, PROF_CUDA_DRIVER, 2, PROF_CUDA_COPY_UNKNOWN, 200);
	copy(tg, 0, T0 + 21, PROF_CUDA_RUNTIME, 2, PROF_CUDA_COPY_HTOD, 200);  /* runtime knows */
	api_on(tg, 0, T0 + 22, PROF_CUDA_RUNTIME, 3, 2);
	copy(tg, 0, T0 + 30, PROF_CUDA_RUNTIME, 3, PROF_CUDA_COPY_MEMSET, 300);
	api_on(tg, 0, T0 + 31, PROF_CUDA_RUNTIME, 4, 3);
	copy(tg, 0, T0 + 40, PROF_CUDA_RUNTIME, 4, PROF_CUDA_COPY_UNKNOWN, 400);  /* stays unknown */
	api_on(tg, 0, T0 + 41, PROF_CUDA_RUNTIME, 3, 4);
	gpu(tg, 2, T0 + 15, 1, 0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_DTOH, 10, 0);  /* before close */
	gpu(tg, 2, T0 + 50, 2, 0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_DTOH, 20, 0);
	gpu(tg, 2, T0 + 51, 3, 0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_UNKNOWN, 30, 0);
	gpu(tg, 2, T0 + 52, 4, 0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_UNKNOWN, 40, 0);
	gpu(tg, 2, T0 + 53, 77, 0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_DTOD, 50, 0);  /* no call */
	tg_exit(tg, 0, T0 + 200, 0, 0);
	struct process p;
	load(tg, &p);
	const struct cuda_copy_row *c = cuda_of(&p)->copy;
	cr_expect_eq(c[PROF_CUDA_COPY_DTOH].count, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_DTOH].bytes, 100);
	cr_expect_eq((uint64_t)c[PROF_CUDA_COPY_DTOH].h.sum, 10);
	cr_expect_eq(c[PROF_CUDA_COPY_HTOD].count, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_HTOD].bytes, 200);
	cr_expect_eq((uint64_t)c[PROF_CUDA_COPY_HTOD].h.sum, 20);
	cr_expect_eq(c[PROF_CUDA_COPY_MEMSET].count, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_MEMSET].bytes, 300);
	cr_expect_eq(c[PROF_CUDA_COPY_UNKNOWN].count, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_UNKNOWN].bytes, 400);
	cr_expect_eq(c[PROF_CUDA_COPY_UNKNOWN].timed, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_DTOD].count, 1);
	cr_expect_eq(c[PROF_CUDA_COPY_DTOD].bytes, 64);
	process_free(&p);
}

/* What loading holds for the join does not grow with the trace: N launches, each timed a few
 * launches later (events) or through CUPTI ids, peak at the same small number for any N. */
static uint64_t peak_for(uint64_t n, int cupti)
{
	struct tg *tg = tg_create();
	state(tg, T0, cupti ? PROF_CUDA_TIMING_CUPTI : PROF_CUDA_TIMING_EVENTS);
	const uint64_t lag = 4;
	for (uint64_t i = 1; i <= n + lag; i++) {
		uint64_t t = T0 + 100 * i;
		if (i <= n) {
			launch(tg, 0, t, PROF_CUDA_DRIVER, i, 5, 4, 3, 0);
			api_on(tg, 0, t + 1, PROF_CUDA_DRIVER, 1, i);
			launch(tg, 0, t + 2, PROF_CUDA_RUNTIME, i, 5, 4, 3, 0);
			api_on(tg, 0, t + 3, PROF_CUDA_RUNTIME, 2, i);
		}
		if (i > lag) {
			uint64_t c = i - lag;
			if (cupti) {
				struct prof_rec_cuda_xcorr x = { .cupti_corr = 5000000 + c, .corr = c };
				tg_rec(tg, 2, PROF_REC_CUDA_XCORR, 0, t + 50, PAYLOAD(x), PLEN(x));
			}
			gpu(tg, 2, t + 51, cupti ? 5000000 + c : c, cupti, PROF_CUDA_ACT_KERNEL, 0, 10, 0);
		}
	}
	tg_exit(tg, 0, T0 + 100 * (n + lag + 2), 0, 0);
	struct process p;
	load(tg, &p);
	cr_assert_eq(cuda_of(&p)->nkernels, 1);
	cr_assert_eq(cuda_of(&p)->kernels[0].launches, n);
	cr_assert_eq(cuda_of(&p)->kernels[0].h.n, n);
	cr_assert_eq(cuda_of(&p)->kernel_ns, 10 * n);
	uint64_t peak = cuda_of(&p)->pending_peak;
	process_free(&p);
	return peak;
}

Test(cuda_analysis, join_state_does_not_grow_with_launches, .timeout = 60)
{
	for (int cupti = 0; cupti < 2; cupti++) {
		uint64_t small = peak_for(1000, cupti), big = peak_for(50000, cupti);
		cr_expect_eq(small, big, "cupti %d: peak %llu for 1000 launches, %llu for 50000",
			     cupti, (unsigned long long)small, (unsigned long long)big);
		cr_expect_leq(big, 32, "cupti %d: peak %llu", cupti, (unsigned long long)big);
	}
}
