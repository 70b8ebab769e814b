/* CUDA analysis on synthetic traces: CUPTI activity joined to launches through CUDA_XCORR,
 * one allocation seen by both layers counted once, copy directions the GPU resolved, and the
 * duration histograms (exact median for few values, within 1.6% for many). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"
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
