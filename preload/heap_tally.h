/* heap_tally.c: the sampled heap mode's set of blocks with records and per-thread tallies.
 * What every allocation and free of that mode runs (a tally, the look for a record) is inline
 * here, for the hooks of heap.c; the rest is in heap_tally.c. */
#ifndef PROF_PRELOAD_HEAP_TALLY_H
#define PROF_PRELOAD_HEAP_TALLY_H

#include "prof.h"

#include <stddef.h>

/* usable: the real allocator's malloc_usable_size, NULL if it has none; alloc and release,
 * its malloc and free. */
void heap_tally_init(size_t (*usable)(void *), void *(*alloc)(size_t), void (*release)(void *));

/* Blocks with ALLOC records: add one (-1: no room, it is then tallied instead), and take
 * one out if it is there (heap_rec_take(), below: 1 if it was, its free is a FREE record). */
int heap_rec_add(const void *ptr);
/* A longjmp left the calling thread's change of the set (prof_hook_stale()): others may go on,
 * and the entry it was moving may be lost (a sampled-mode estimate, no more). */
void heap_rec_abandoned(void);

/* A recorded block's ALLOC or FREE is next: the thread's tally first, if its counts moved
 * since the last, so that the analyzer sees the two in the order they happened (a peak
 * that held a large block, then small ones, must see both). */
void heap_tally_sync(struct prof_thread *th);

/* The thread ends: its last tally, and its slot back. At exit, every thread's last tally
 * (written by the calling thread). */
void heap_tally_thread_done(struct prof_thread *th);
void heap_tally_flush_all(struct prof_thread *th);
void heap_tally_fork_child(void);

/* ---- the set of blocks with records: a count per hash of the key ---------------------------
 * A count, per hash of the key, of the keys in the table: a free whose count is 0 (nearly
 * every one) knows without the table that its block has no record. A key's own count is
 * raised before its block reaches the program and lowered only by its free, so whoever frees
 * it sees it. */
#define HEAP_FILTER_BITS 12
extern _Atomic uint32_t heap_rec_filter[1u << HEAP_FILTER_BITS];
int heap_rec_take_listed(uint64_t key);  /* past a count that is not 0: the table itself */

static inline size_t heap_rec_home(uint64_t key, unsigned shift)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> shift);
}

static inline _Atomic uint32_t *heap_filter_of(uint64_t key)
{
	return &heap_rec_filter[heap_rec_home(key, 64 - HEAP_FILTER_BITS)];
}

/* 0: ptr's block has no record, for sure (nearly every free). */
static inline int heap_rec_maybe(const void *ptr)
{
	return atomic_load_explicit(heap_filter_of((uint64_t)(uintptr_t)ptr), memory_order_relaxed);
}

static inline int heap_rec_take(const void *ptr)
{
	return unlikely(heap_rec_maybe(ptr)) && heap_rec_take_listed((uint64_t)(uintptr_t)ptr);
}

/* ---- tallies (see heap_tally.c) -------------------------------------------------------- */

#define HEAP_ROUNDED_CLASSES (PROF_HEAP_LARGE / 16 + 2)  /* the last: anything larger */

/* A class's mean is read anew at its first allocation or free by the thread, then every
 * HEAP_REFRESH_EVERY-th (heap_tally.c). */
#define HEAP_REFRESH_EVERY 128

struct tally_class {  /* 32 bytes: what each count touches, two classes a line */
	uint64_t allocs, asked, frees;
	double mean;  /* the class's mean size asked, as last read; 0 before the first reading */
};

static inline int heap_refresh_due(uint64_t allocs, uint64_t frees)
{
	return ((allocs + frees) & (HEAP_REFRESH_EVERY - 1)) == 1;
}

struct heap_tally {  /* a thread's own cache lines */
	/* Running totals; the owner adds, the exit flush may read them meanwhile. */
	uint64_t alloc_calls, alloc_bytes, free_calls;
	int64_t in_use;     /* usable bytes of its tallied blocks in use (less what it freed of
			     * other threads': may be below 0) */
	int64_t at_record;  /* in_use at the last tally */
	int64_t high;       /* the most of in_use since then: its own peak in between */
	/* in_use may stay from band_lo to band_lo + band (the last tally's, give or take a
	 * limit) before the next tally: one subtraction and one comparison tell. */
	int64_t band_lo;
	uint64_t band;
	double estimate;    /* bytes asked of its blocks in use: sum of blocks x mean */
	uint32_t serial;
	uint32_t shared;    /* the slot of threads without one of their own: atomic updates */
	uint32_t lean;      /* a thread's own slot, of glibc's heap: the hooks' lean way (heap.c) */
	_Atomic int flushing;  /* shared slot: one tally at a time */
	struct tally_class cls[HEAP_ROUNDED_CLASSES];
	struct { uint64_t allocs, asked; } merged[HEAP_ROUNDED_CLASSES];  /* the parts of cls
									   * added to the global means */
} __attribute__((aligned(64)));

extern struct heap_tally *heap_tallies;  /* the threads' slots, then the shared one */
extern size_t (*heap_usable_size)(void *);
/* The allocator is glibc's, whose chunk header (the word before a block) holds its size:
 * read there, a block's usable size costs a load instead of a call. */
extern int heap_glibc_chunks;

/* Out of line: a thread's first tally, the shared slot's counts, and a HEAP_TALLY record. */
struct heap_tally *heap_tally_claim(struct prof_thread *th);
void heap_tally_shared_count(struct prof_thread *th, struct heap_tally *t, struct tally_class *k,
			     int alloc, size_t size, int64_t usable_by);
void heap_tally_flush(struct prof_thread *th, struct heap_tally *t);

static inline size_t heap_chunk_usable(const void *p)
{
	size_t h = ((const size_t *)p)[-1];
	return (h & ~(size_t)7) - 8 - ((h & 2) << 2);  /* IS_MMAPPED (2): a two-word header */
}

static inline size_t heap_usable_of(void *p)
{
	if (likely(heap_glibc_chunks))
		return heap_chunk_usable(p);
	return heap_usable_size ? heap_usable_size(p) : 0;
}

static inline size_t heap_rounded_class(size_t usable)
{
	size_t c = usable >> 4;
	return c < HEAP_ROUNDED_CLASSES ? c : HEAP_ROUNDED_CLASSES - 1;
}

static inline struct heap_tally *heap_tally_of(struct prof_thread *th)
{
	if (likely(th->heap_tally))
		return &heap_tallies[th->heap_tally - 1];
	return heap_tally_claim(th);
}

/* Whether in_use, now v, left the band of the last tally: the next is due. */
static inline int heap_band_left(const struct heap_tally *t, int64_t v)
{
	int64_t lo = __atomic_load_n(&t->band_lo, __ATOMIC_RELAXED);
	return (uint64_t)(v - lo) > __atomic_load_n(&t->band, __ATOMIC_RELAXED);
}

/* The seldom work a count leaves (heap_own_alloc(), heap_own_free()), out of line, so that the
 * hooks' lean way calls nothing but the real allocator: the class's mean read anew, then a
 * tally. */
enum { HEAP_DUE_REFRESH = 1, HEAP_DUE_TALLY = 2 };
void heap_tally_due(struct prof_thread *th, struct heap_tally *t, size_t c, unsigned due);

/* An add by the owner, which the exit flush may read meanwhile. */
#define HEAP_OWN_ADD(v, n) __atomic_store_n(&(v), (v) + (n), __ATOMIC_RELAXED)

/* An allocation without a record, counted by the thread that owns t (not the shared slot):
 * size asked, usable bytes. Returns the work due (heap_tally_due(), with *cls, its class). */
static inline __attribute__((always_inline)) unsigned heap_own_alloc(struct heap_tally *t,
								      size_t size, size_t usable,
								      size_t *cls)
{
	size_t c = *cls = heap_rounded_class(usable);
	struct tally_class *k = &t->cls[c];
	unsigned due = 0;
	HEAP_OWN_ADD(t->alloc_calls, 1);
	HEAP_OWN_ADD(t->alloc_bytes, size);
	uint64_t allocs = k->allocs + 1;
	__atomic_store_n(&k->allocs, allocs, __ATOMIC_RELAXED);
	HEAP_OWN_ADD(k->asked, size);
	t->estimate += k->mean;  /* 0 at the class's first use: its first reading adds it */
	if (unlikely(heap_refresh_due(allocs, k->frees)))
		due = HEAP_DUE_REFRESH;
	int64_t v = t->in_use + (int64_t)usable;
	__atomic_store_n(&t->in_use, v, __ATOMIC_RELAXED);
	if (v > t->high)
		__atomic_store_n(&t->high, v, __ATOMIC_RELAXED);
	if (unlikely(heap_band_left(t, v)))
		due |= HEAP_DUE_TALLY;
	return due;
}

/* A free of such a block, by the owner of t, given its usable size. In use only falls: the
 * high mark stays. */
static inline __attribute__((always_inline)) unsigned heap_own_free(struct heap_tally *t,
								     size_t usable, size_t *cls)
{
	size_t c = *cls = heap_rounded_class(usable);
	struct tally_class *k = &t->cls[c];
	unsigned due = 0;
	HEAP_OWN_ADD(t->free_calls, 1);
	uint64_t frees = k->frees + 1;
	__atomic_store_n(&k->frees, frees, __ATOMIC_RELAXED);
	t->estimate -= k->mean;
	if (unlikely(heap_refresh_due(k->allocs, frees)))
		due = HEAP_DUE_REFRESH;
	int64_t v = t->in_use - (int64_t)usable;
	__atomic_store_n(&t->in_use, v, __ATOMIC_RELAXED);
	if (unlikely(heap_band_left(t, v)))
		due |= HEAP_DUE_TALLY;
	return due;
}

/* An allocation without a record, and a free of such a block, given its usable size. Neither
 * changes errno. */
static inline __attribute__((always_inline)) void heap_tally_alloc(struct prof_thread *th,
								    void *ptr, size_t size)
{
	struct heap_tally *t = heap_tally_of(th);
	if (unlikely(!t))
		return;
	size_t usable = heap_usable_of(ptr), c;
	if (unlikely(t->shared)) {
		heap_tally_shared_count(th, t, &t->cls[heap_rounded_class(usable)], 1, size,
					(int64_t)usable);
		return;
	}
	unsigned due = heap_own_alloc(t, size, usable, &c);
	if (unlikely(due))
		heap_tally_due(th, t, c, due);
}

static inline __attribute__((always_inline)) void heap_tally_free(struct prof_thread *th,
								   size_t usable)
{
	struct heap_tally *t = heap_tally_of(th);
	if (unlikely(!t))
		return;
	size_t c;
	if (unlikely(t->shared)) {
		heap_tally_shared_count(th, t, &t->cls[heap_rounded_class(usable)], 0, 0,
					-(int64_t)usable);
		return;
	}
	unsigned due = heap_own_free(t, usable, &c);
	if (unlikely(due))
		heap_tally_due(th, t, c, due);
}

/* Before the real free of ptr: 1 if its block has a record (heap_rec_take()), else 0 and its
 * usable size in *usable, for heap_tally_free() after the real free. */
static inline __attribute__((always_inline)) int heap_tally_before_free(void *ptr,
								       size_t *usable)
{
	if (heap_rec_take(ptr))
		return 1;
	*usable = heap_usable_of(ptr);
	return 0;
}

#endif
