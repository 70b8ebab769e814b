/* Heap analysis on synthetic traces: the counting rules, temporaries, peak and its sites,
 * leaks, address reuse across threads, and frees of blocks never seen allocated. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include "heap.h"
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

TestSuite(heap_analysis, .init = setup, .fini = teardown);

#define T0 TG_START_NS

/* Writes tg to a file and loads it. */
static void load(struct tg *tg, struct process *p)
{
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

static const struct heap_site *site(const struct process *p, uint32_t stack)
{
	return heap_site_of(heap_of(p), stack);
}

Test(heap_analysis, counts_follow_valgrinds_rules)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 2, T0 + 1, 0x1000, 100, 1);          /* malloc */
	tg_realloc(tg, 2, T0 + 2, 0x1000, 0x2000, 300, 2); /* realloc: one alloc, one free */
	tg_free(tg, 2, T0 + 3, 0x2000);
	tg_free(tg, 2, T0 + 4, 0x9999);                    /* never allocated: not a free */
	tg_alloc(tg, 2, T0 + 5, 0x3000, 0, 3);             /* malloc(0) is an allocation */
	tg_exit(tg, 2, T0 + 6, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_eq(heap_of(&p)->alloc_calls, 3);
	cr_expect_eq(heap_of(&p)->free_calls, 2);
	cr_expect_eq(heap_of(&p)->bytes_allocated, 400);
	cr_expect_eq(heap_of(&p)->unmatched_frees, 1);
	cr_expect_eq(heap_of(&p)->leaked_blocks, 1);
	cr_expect_eq(heap_of(&p)->leaked_bytes, 0);
	cr_expect(p.complete);
	process_free(&p);
}

Test(heap_analysis, temporaries_are_freed_before_the_next_allocation_of_their_thread)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 2, T0 + 1, 0x1000, 10, 1);
	tg_free(tg, 2, T0 + 2, 0x1000);                     /* temporary */
	tg_alloc(tg, 2, T0 + 3, 0x1000, 10, 1);
	tg_alloc(tg, 2, T0 + 4, 0x2000, 10, 2);
	tg_free(tg, 2, T0 + 5, 0x1000);                     /* not: another came between */
	tg_alloc(tg, 4, T0 + 6, 0x3000, 10, 3);
	tg_free(tg, 2, T0 + 7, 0x3000);                     /* not: freed by another thread */
	tg_realloc(tg, 2, T0 + 8, 0x2000, 0x4000, 20, 2);   /* a resize is not a temporary */
	struct process p;
	load(tg, &p);
	cr_expect_eq(heap_of(&p)->temporary, 1);
	cr_expect_eq(site(&p, 1)->temporary, 1);
	cr_expect_eq(site(&p, 2)->temporary, 0);
	process_free(&p);
}

Test(heap_analysis, peak_and_the_sites_that_held_it)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 2, T0 + 10, 0x1000, 1000, 1);
	tg_alloc(tg, 2, T0 + 20, 0x2000, 500, 2);
	tg_alloc(tg, 4, T0 + 30, 0x3000, 300, 2);   /* peak: 1800 at +30 */
	tg_free(tg, 2, T0 + 40, 0x1000);
	tg_alloc(tg, 2, T0 + 50, 0x4000, 1200, 3);  /* 2000? no: 500+300+1200 = 2000: new peak */
	tg_free(tg, 4, T0 + 60, 0x4000);
	tg_alloc(tg, 2, T0 + 70, 0x5000, 100, 1);
	struct process p;
	load(tg, &p);
	cr_expect_eq(heap_of(&p)->peak, 2000);
	cr_expect_eq(heap_of(&p)->peak_ns, 50);
	cr_expect_eq(site(&p, 1)->peak_bytes, 0);
	cr_expect_eq(site(&p, 2)->peak_bytes, 800);
	cr_expect_eq(site(&p, 3)->peak_bytes, 1200);
	cr_expect_eq(heap_of(&p)->leaked_bytes, 900);
	cr_expect_eq(site(&p, 2)->leaked_blocks, 2);
	process_free(&p);
}

/* Another thread reuses an address right after its free: the merge puts the free first. */
Test(heap_analysis, address_reuse_across_threads)
{
	struct tg *tg = tg_create();
	for (uint64_t i = 0; i < 1000; i++) {
		tg_alloc(tg, 2 + 2 * (i % 2), T0 + 10 * i + 1, 0x1000, 8, 1);
		tg_free(tg, 2 + 2 * (i % 2), T0 + 10 * i + 5, 0x1000);
	}
	struct process p;
	load(tg, &p);
	cr_expect_eq(heap_of(&p)->alloc_calls, 1000);
	cr_expect_eq(heap_of(&p)->free_calls, 1000);
	cr_expect_eq(heap_of(&p)->leaked_blocks, 0);
	cr_expect_eq(heap_of(&p)->unmatched_frees, 0);
	cr_expect_eq(heap_of(&p)->peak, 8);
	process_free(&p);
}

Test(heap_analysis, trace_without_exit_is_incomplete_with_its_data)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 2, T0 + 1, 0x1000, 64, 1);
	tg_alloc(tg, 2, T0 + 2, 0x2000, 64, 1);
	struct process p;
	load(tg, &p);
	cr_expect_not(p.complete);
	cr_expect_eq(p.exit_kind, EXIT_UNKNOWN);
	cr_expect_eq(heap_of(&p)->leaked_bytes, 128);
	process_free(&p);
}

/* Several peaks, each higher; the process ends at the highest: every site's share of it. */
Test(heap_analysis, peak_sites_across_a_sawtooth_ending_at_the_peak)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 2, T0 + 1, 0xa, 100, 1);
	tg_alloc(tg, 2, T0 + 2, 0xb, 200, 2);   /* peak 300 */
	tg_free(tg, 2, T0 + 3, 0xa);
	tg_alloc(tg, 2, T0 + 4, 0xc, 250, 3);   /* peak 450 */
	tg_free(tg, 2, T0 + 5, 0xb);
	tg_alloc(tg, 2, T0 + 6, 0xd, 300, 1);   /* peak 550, and the end */
	struct process p;
	load(tg, &p);
	cr_expect_eq(heap_of(&p)->peak, 550);
	cr_expect_eq(site(&p, 1)->peak_bytes, 300);
	cr_expect_eq(site(&p, 2)->peak_bytes, 0);
	cr_expect_eq(site(&p, 3)->peak_bytes, 250);
	process_free(&p);
}

/* Any stack id and any address a trace holds: ids past the directly indexed range, address 0
 * and the largest one, an address reused after its free, a double allocation (lost free). */
Test(heap_analysis, every_stack_id_and_address_is_accepted)
{
	const uint32_t ids[] = { 1, (1u << 22) - 1, 1u << 22, 0xfffffffeu, 0xffffffffu };
	const uint64_t ptrs[] = { 0, 0x10, UINT64_MAX, UINT64_MAX - 15, 0x7fff0000 };
	struct tg *tg = tg_create();
	uint64_t t = T0;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 5; i++)
			tg_alloc(tg, 2, ++t, ptrs[i], 10 + (uint64_t)i, ids[i]);
	/* rounds 1 and 2 allocate each address again without a free: the older block is gone */
	for (int i = 0; i < 4; i++)
		tg_free(tg, 2, ++t, ptrs[i]);
	tg_exit(tg, 2, ++t, 0, 0);
	struct process p;
	load(tg, &p);
	const struct heap_stats *h = heap_of(&p);
	cr_expect_eq(h->alloc_calls, 15);
	cr_expect_eq(h->free_calls, 4);
	cr_expect_eq(h->leaked_blocks, 1, "only 0x7fff0000 is still allocated");
	cr_expect_eq(h->leaked_bytes, 14);
	cr_expect_eq(h->nsites, 5);
	for (int i = 0; i < 5; i++) {
		const struct heap_site *s = site(&p, ids[i]);
		cr_assert_not_null(s, "stack %u", ids[i]);
		cr_expect_eq(s->calls, 3);
		cr_expect_eq(s->bytes, 3 * (10 + (uint64_t)i));
		cr_expect_eq(s->stack, ids[i]);
	}
	cr_expect_null(site(&p, 2));
	cr_expect_null(site(&p, 0xfffffffdu));
	process_free(&p);
}

/* The leak check's records: listed blocks get their class, the others are still reachable;
 * lists that did not all arrive leave the process unclassified. */
static void leak_records(struct tg *tg, uint64_t t, unsigned cls, uint64_t ptr, uint32_t listed)
{
	struct { uint32_t count, pad; uint64_t ptr; } b = { 1, 0, ptr };
	tg_rec(tg, 0, PROF_REC_LEAK_BLOCKS, (uint16_t)cls, t, &b, sizeof(b));
	struct { uint64_t root_bytes; uint32_t blocks, listed; } s = { 4096, 3, listed };
	tg_rec(tg, 0, PROF_REC_LEAK_SCAN, 0, t + 1, &s, sizeof(s));
}

Test(heap_analysis, leak_classes_from_the_scan)
{
	for (uint32_t listed = 1; listed <= 2; listed++) {
		struct tg *tg = tg_create();
		tg_alloc(tg, 0, T0 + 1, 0x1000, 10, 1);
		tg_alloc(tg, 0, T0 + 2, 0x2000, 20, 2);
		tg_alloc(tg, 0, T0 + 3, 0x3000, 30, 2);
		leak_records(tg, T0 + 4, PROF_LEAK_DEFINITE, 0x2000, listed);
		tg_exit(tg, 0, T0 + 10, 0, 0);
		struct process p;
		load(tg, &p);
		const struct heap_stats *h = heap_of(&p);
		cr_expect_eq(h->leaked_bytes, 60, "in use at exit keeps its meaning");
		if (listed == 1) {
			cr_assert(h->leak_scanned);
			cr_expect_eq(h->class_bytes[PROF_LEAK_DEFINITE], 20);
			cr_expect_eq(h->class_blocks[PROF_LEAK_DEFINITE], 1);
			cr_expect_eq(h->class_bytes[PROF_LEAK_REACHABLE], 40);
			cr_expect_eq(site(&p, 2)->class_bytes[PROF_LEAK_DEFINITE], 20);
			cr_expect_eq(site(&p, 2)->class_bytes[PROF_LEAK_REACHABLE], 30);
		} else {
			cr_expect(!h->leak_scanned, "a list was lost: no classes");
		}
		process_free(&p);
	}
}

/* A sampled trace (header heap_sample): totals count every record; a sampled allocation of
 * size s counts 1/p calls and s/p bytes at its site, p = 1 - exp(-s/B); unsampled ones belong
 * to no site. */
Test(heap_analysis, sampled_trace_scales_sites_and_keeps_totals)
{
	struct tg *tg = tg_create();
	tg_header(tg)->heap_sample = 1000;
	unsigned sampled = PROF_ALLOC_MALLOC | PROF_ALLOC_SAMPLED;
	tg_alloc_fn(tg, 2, T0 + 1, (enum prof_alloc_fn)sampled, 0x1000, 100, 1);
	tg_alloc_fn(tg, 2, T0 + 2, PROF_ALLOC_MALLOC, 0x2000, 100, 0);   /* not sampled */
	tg_alloc_fn(tg, 2, T0 + 3, (enum prof_alloc_fn)sampled, 0x3000, 5000, 2);
	tg_free(tg, 2, T0 + 4, 0x2000);
	tg_exit(tg, 2, T0 + 5, 0, 0);
	struct process p;
	load(tg, &p);
	const struct heap_stats *h = heap_of(&p);
	cr_expect_eq(h->sample, 1000);
	cr_expect_eq(h->alloc_calls, 3);
	cr_expect_eq(h->free_calls, 1);
	cr_expect_eq(h->bytes_allocated, 5200);
	cr_expect_eq(h->peak, 5200);
	cr_expect_eq(h->leaked_bytes, 5100);
	cr_expect_eq(h->leaked_blocks, 2);
	/* 100 bytes: p = 0.09516, weight 10.508; 5000 bytes: p = 0.99326, weight 1.00678 */
	cr_expect_eq(site(&p, 1)->calls, 11);
	cr_expect_eq(site(&p, 1)->bytes, 1051);
	cr_expect_eq(site(&p, 1)->sampled, 1);
	cr_expect_eq(site(&p, 1)->leaked_bytes, 1051);
	cr_expect_eq(site(&p, 1)->leaked_blocks, 11);
	cr_expect_eq(site(&p, 2)->calls, 1);
	cr_expect_eq(site(&p, 2)->bytes, 5034);
	cr_expect_eq(site(&p, 2)->peak_bytes, 5034);
	cr_expect_null(site(&p, 0), "unsampled allocations have no site");
	process_free(&p);
}

/* A HEAP_TALLY record: serial's running totals, from its prefix on (the payload after h). */
static void tally(struct tg *tg, uint32_t stream, uint64_t t, uint32_t serial, uint64_t calls,
		  uint64_t bytes, uint64_t frees, uint64_t freed, int64_t high)
{
	struct prof_rec_heap_tally r = { .serial = serial, .alloc_calls = calls, .alloc_bytes = bytes,
					 .free_calls = frees, .free_bytes = freed,
					 .in_use_high = high };
	tg_rec(tg, stream, PROF_REC_HEAP_TALLY, 0, t, (const char *)&r + sizeof(r.h),
	       sizeof(r) - sizeof(r.h));
}

/* The tallied sampled mode (PROF_FEAT_HEAP_TALLY): the threads' tallies add their growth to the
 * totals; the peak counts a thread's high point between two tallies (with the others' latest);
 * a tally older than one already seen (written at exit for a thread still running) adds
 * nothing; what is left at the end comes from the classes: blocks left times mean size asked. */
Test(heap_analysis, tallies_add_up_to_exact_totals_and_estimate_the_rest)
{
	struct tg *tg = tg_create();
	tg_header(tg)->heap_sample = 4096;
	tg_header(tg)->features |= PROF_FEAT_HEAP_TALLY;
	unsigned sampled = PROF_ALLOC_MALLOC | PROF_ALLOC_SAMPLED;
	tg_alloc_fn(tg, 2, T0 + 1, (enum prof_alloc_fn)sampled, 0x1000, 1000, 1);
	tally(tg, 2, T0 + 2, 1, 10, 500, 4, 200, 700);     /* thread 1: 300 in use, 700 at most */
	tally(tg, 4, T0 + 3, 2, 5, 100, 0, 0, 100);        /* thread 2: 100 */
	tally(tg, 2, T0 + 4, 1, 20, 900, 14, 800, 450);    /* thread 1: 100, 450 at most */
	tally(tg, 2, T0 + 5, 1, 19, 850, 14, 800, 50);     /* older: nothing new */
	tg_free(tg, 2, T0 + 6, 0x1000);
	struct { struct prof_rec_heap_classes c; struct prof_heap_class v[2]; } cl = {
		.c = { .serial = 1, .count = 2 },
		.v = { { .cls = 3, .allocs = 16, .asked = 16 * 40, .frees = 14 },
		       { .cls = 40, .allocs = 9, .asked = 9 * 641, .frees = 5 } } };
	tg_rec(tg, 2, PROF_REC_HEAP_CLASSES, 0, T0 + 7, (const char *)&cl + sizeof(cl.c.h),
	       sizeof(cl) - sizeof(cl.c.h));
	tg_exit(tg, 2, T0 + 8, 0, 0);
	struct process p;
	load(tg, &p);
	const struct heap_stats *h = heap_of(&p);
	cr_expect_eq(h->alloc_calls, 1 + 20 + 5);
	cr_expect_eq(h->free_calls, 1 + 14);
	cr_expect_eq(h->bytes_allocated, 1000 + 900 + 100);
	/* at T0 + 2: the sampled 1000 and thread 1's high point of 700 */
	cr_expect_eq(h->peak, 1700, "peak %" PRIu64, h->peak);
	cr_expect_eq(h->peak_ns, 2);
	cr_expect_eq(site(&p, 1)->peak_bytes, site(&p, 1)->bytes, "the sampled block was in use then");
	/* 2 blocks of 40 and 4 of 641 left, in tallied classes */
	cr_expect_eq(h->leaked_bytes, 2 * 40 + 4 * 641, "leaked %" PRIu64, h->leaked_bytes);
	cr_expect_eq(h->leaked_blocks, (20 + 5) - 14);
	cr_expect_eq(h->temporary, 0, "temporaries are not known");
	process_free(&p);
}
