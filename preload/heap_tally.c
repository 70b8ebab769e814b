/* The sampled heap mode's bookkeeping (PROF_HEAP_SAMPLE): which live blocks have records of
 * their own, and per-thread tallies of the allocations and frees that have none.
 *
 * In that mode an allocation gets an ALLOC record only when the sampler picks it (it then
 * has its stack) or when it is large (PROF_HEAP_LARGE bytes or more, so that the peak stays
 * exact where large blocks make it); its free then gets a FREE record. Every other
 * allocation and free is only counted, in its thread's tally, and a HEAP_TALLY record says
 * the totals now and then: no clock read, no record, no unwinding for nearly every call. */
#include "prof.h"
#include "heap_tally.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* ---- blocks with records -------------------------------------------------------------------
 * A free must know, before the real free, whether its block has an ALLOC record. Most have
 * none, so the test is a lock-free read under a sequence lock, of a small table (the sampled
 * blocks in use, one per heap_sample bytes, and the large ones): a miss costs a hash and a
 * slot or two. Adding and removing take a spinlock; both are rare. Open addressing with
 * linear probing and backward-shift removal; a table half full is replaced by one twice its
 * size, and the old one stays mapped, as a reader may still be on it. A signal handler that
 * allocates (no async-signal-safe thing to do, but programs do it) may interrupt its own
 * thread inside the lock: the lock knows its owner, and such a nested call neither waits
 * for it nor changes the table (it counts its block instead of recording it). */
static struct {
	_Alignas(64) _Atomic uint32_t seq;  /* odd while a writer changes the table */
	_Atomic uintptr_t owner;  /* the writing thread (the address of its prof_self), or 0 */
	uint64_t *_Atomic slots;
	_Atomic unsigned shift;  /* 64 - log2(capacity) */
	size_t count;
} rec;

#define REC_FIRST_SHIFT (64 - 12)  /* 4096 slots, 32 KiB, to begin with */

PROF_BULK _Atomic uint32_t heap_rec_filter[1u << HEAP_FILTER_BITS];  /* heap_tally.h */

/* The slot of key in slots, or the empty one where it would go; *found says which. */
static size_t rec_probe(uint64_t *slots, unsigned shift, uint64_t key, int *found)
{
	size_t mask = ((size_t)1 << (64 - shift)) - 1, i = heap_rec_home(key, shift);
	for (;;) {
		uint64_t v = __atomic_load_n(&slots[i], __ATOMIC_RELAXED);
		if (v == key || !v) {
			*found = v != 0;
			return i;
		}
		i = (i + 1) & mask;
	}
}

static inline uintptr_t rec_me(void)
{
	return (uintptr_t)&prof_self;
}

static int rec_has(uint64_t key)
{
	unsigned spins = 0;
	for (;;) {
		uint32_t s0 = atomic_load_explicit(&rec.seq, memory_order_acquire);
		uint64_t *slots = atomic_load_explicit(&rec.slots, memory_order_relaxed);
		unsigned shift = atomic_load_explicit(&rec.shift, memory_order_relaxed);
		int found = 0;
		if (!(s0 & 1)) {
			if (!slots)
				return 0;
			rec_probe(slots, shift, key, &found);
		}
		atomic_thread_fence(memory_order_acquire);
		if (!(s0 & 1) && atomic_load_explicit(&rec.seq, memory_order_relaxed) == s0)
			return found;
		if (atomic_load_explicit(&rec.owner, memory_order_relaxed) == rec_me())
			return 0;  /* our own write, interrupted: the table is half changed */
		prof_backoff(&spins);
	}
}

/* -1: the calling thread holds the lock already (a signal handler interrupted it). */
static int rec_write_begin(void)
{
	uintptr_t me = rec_me(), idle = 0;
	if (atomic_load_explicit(&rec.owner, memory_order_relaxed) == me)
		return -1;
	unsigned spins = 0;
	while (!atomic_compare_exchange_weak_explicit(&rec.owner, &idle, me, memory_order_acquire,
						      memory_order_relaxed)) {
		idle = 0;
		prof_backoff(&spins);
	}
	atomic_fetch_add_explicit(&rec.seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	return 0;
}

static void rec_write_end(void)
{
	atomic_fetch_add_explicit(&rec.seq, 1, memory_order_release);
	atomic_store_explicit(&rec.owner, 0, memory_order_release);
}

/* The jump may have left between the lock's two steps at either end (owner set and the count
 * still even, or the count even again and owner still set): the count is made even, once. */
void heap_rec_abandoned(void)
{
	if (atomic_load_explicit(&rec.owner, memory_order_relaxed) != rec_me())
		return;
	if (atomic_load_explicit(&rec.seq, memory_order_relaxed) & 1)
		atomic_fetch_add_explicit(&rec.seq, 1, memory_order_release);
	atomic_store_explicit(&rec.owner, 0, memory_order_release);
}

static uint64_t *rec_map(unsigned shift)
{
	size_t bytes = sizeof(uint64_t) << (64 - shift);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	prof_own_memory(p, bytes);
	return p;
}

/* Under the write lock: room for one more key, in a larger table if need be. */
static int rec_room(void)
{
	uint64_t *slots = atomic_load_explicit(&rec.slots, memory_order_relaxed);
	unsigned shift = atomic_load_explicit(&rec.shift, memory_order_relaxed);
	if (slots && (rec.count + 1) * 2 <= ((size_t)1 << (64 - shift)))
		return 0;
	unsigned nshift = slots ? shift - 1 : REC_FIRST_SHIFT;
	if (nshift < 64 - 30)
		return -1;
	uint64_t *n = rec_map(nshift);
	if (!n)
		return -1;
	for (size_t i = 0; slots && i < ((size_t)1 << (64 - shift)); i++) {
		uint64_t v = slots[i];
		int found;
		if (v)
			n[rec_probe(n, nshift, v, &found)] = v;
	}
	atomic_store_explicit(&rec.slots, n, memory_order_relaxed);
	atomic_store_explicit(&rec.shift, nshift, memory_order_relaxed);
	return 0;
}

int heap_rec_add(const void *ptr)
{
	uint64_t key = (uint64_t)(uintptr_t)ptr;
	if (rec_write_begin() < 0)
		return -1;
	int rc = rec_room();
	if (rc == 0) {
		uint64_t *slots = atomic_load_explicit(&rec.slots, memory_order_relaxed);
		int found;
		size_t i = rec_probe(slots, atomic_load_explicit(&rec.shift, memory_order_relaxed),
				     key, &found);
		if (!found) {  /* found: a free we did not see (a signal handler's); it is this one now */
			atomic_fetch_add_explicit(heap_filter_of(key), 1, memory_order_relaxed);
			__atomic_store_n(&slots[i], key, __ATOMIC_RELAXED);
			rec.count++;
		}
	}
	rec_write_end();
	return rc;
}

/* heap_rec_take() past the count per hash, which said the key may be in the table. */
__attribute__((noinline)) int heap_rec_take_listed(uint64_t key)
{
	if (!rec_has(key))
		return 0;
	if (rec_write_begin() < 0)
		return 1;  /* nested: it stays in the table, where a new block there finds it */
	uint64_t *slots = atomic_load_explicit(&rec.slots, memory_order_relaxed);
	unsigned shift = atomic_load_explicit(&rec.shift, memory_order_relaxed);
	size_t mask = ((size_t)1 << (64 - shift)) - 1;
	int found;
	size_t i = rec_probe(slots, shift, key, &found), j = i;
	if (found) {
		for (;;) {  /* backward shift: later members of the run move up into the hole */
			j = (j + 1) & mask;
			uint64_t v = slots[j];
			if (!v)
				break;
			size_t home = heap_rec_home(v, shift);
			if (((j - home) & mask) >= ((j - i) & mask)) {
				__atomic_store_n(&slots[i], v, __ATOMIC_RELAXED);
				i = j;
			}
		}
		__atomic_store_n(&slots[i], 0, __ATOMIC_RELAXED);
		rec.count--;
		atomic_fetch_sub_explicit(heap_filter_of(key), 1, memory_order_relaxed);
	}
	rec_write_end();
	return found;
}

/* ---- tallies ----------------------------------------------------------------------------
 * A thread counts its tallied allocations and frees (calls and bytes asked: exact) and, per
 * size class of the allocator (malloc_usable_size / 16: the allocator's own granularity, up
 * to PROF_HEAP_LARGE; wider classes made a class's mean a poor guess for its blocks), the
 * blocks it allocated and freed and the bytes those asked for. A free's size asked is not
 * known: the bytes in use are estimated as the blocks in use per class times the
 * class's mean size asked, over every thread (a table the threads add their counts to each
 * HEAP_REFRESH_EVERY-th time they touch a class: heap_tally.h). That is off by little more
 * than the rounding of the blocks in use, whatever came before (and right where a class holds
 * one size), and a block another thread frees counts as it should. The estimate is kept as it
 * goes: each allocation adds its class's mean as the thread last read it, each free takes it
 * away, and reading a mean anew corrects the estimate for the blocks of the class in use. The usable
 * bytes in use, exact, decide when to write a tally: when they moved by a 256th of the heap
 * since the last one (8 KiB at least). */

#define TALLY_SLOTS 4096  /* threads at once with a tally of their own; the others share one */
struct heap_tally *heap_tallies;  /* own_slots + 1 (the shared one, last) */
static unsigned own_slots;  /* TALLY_SLOTS, or fewer under an address-space limit */
static _Atomic uint64_t tallies_taken[TALLY_SLOTS / 64];
static _Atomic int shared_used;
static _Atomic int64_t tallied_in_use;  /* all tallies' usable bytes in use, at their tallies */
static PROF_BULK struct { _Atomic uint64_t allocs, asked; } class_means[HEAP_ROUNDED_CLASSES];
size_t (*heap_usable_size)(void *);
int heap_glibc_chunks;

#define TALLY_MIN_STEP (8 * 1024)

/* Whether heap_chunk_usable() agrees with the allocator on blocks of every kind (small, large,
 * mapped): only then is the allocator taken for glibc's. */
static int chunks_readable(void *(*alloc)(size_t), void (*release)(void *))
{
	static const size_t sizes[] = { 1, 24, 25, 100, 1000, 5000, 70000, 300000 };
	int ok = heap_usable_size != NULL;
	for (size_t i = 0; ok && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = alloc(sizes[i]);
		ok = p && heap_chunk_usable(p) == heap_usable_size(p);
		release(p);
	}
	return ok;
}

void heap_tally_init(size_t (*usable)(void *), void *(*alloc)(size_t), void (*release)(void *))
{
	heap_usable_size = usable;
	heap_glibc_chunks = chunks_readable(alloc, release);
	if (heap_tallies)
		return;
	/* Under an address-space limit, a 64th of it: fewer threads have a slot of their own. */
	size_t slots = prof_vm_budget((TALLY_SLOTS + 1) * sizeof(struct heap_tally), 64) /
		       sizeof(struct heap_tally);
	own_slots = slots > 1 ? (unsigned)slots - 1 : 0;
	size_t bytes = (own_slots + 1) * sizeof(struct heap_tally);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return;  /* no tallies: allocations without records go uncounted (heap_tally_of()) */
	prof_own_memory(p, bytes);
	madvise(p, bytes, MADV_NOHUGEPAGE);  /* each thread touches the pages of its classes */
	heap_tallies = p;
}

static inline uint64_t ld(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static inline int64_t ld64(const int64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* The class's mean (none merged yet: its middle). */
static double class_mean(size_t c)
{
	uint64_t n = atomic_load_explicit(&class_means[c].allocs, memory_order_relaxed);
	uint64_t asked = atomic_load_explicit(&class_means[c].asked, memory_order_relaxed);
	return n ? (double)asked / (double)n :
		   (double)(c * 16);
}

/* The owner's counts of class c into the global table, and the class's mean read anew: the
 * estimate changes by the blocks in use times the change of the mean. */
static void heap_class_refresh(struct heap_tally *t, size_t c)
{
	struct tally_class *k = &t->cls[c];
	if (k->allocs != t->merged[c].allocs) {
		atomic_fetch_add_explicit(&class_means[c].allocs, k->allocs - t->merged[c].allocs,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&class_means[c].asked, k->asked - t->merged[c].asked,
					  memory_order_relaxed);
		t->merged[c].allocs = k->allocs;
		t->merged[c].asked = k->asked;
	}
	double mean = class_mean(c);
	t->estimate += (double)(int64_t)(k->allocs - k->frees) * (mean - k->mean);
	k->mean = mean;
}

static int64_t rounded(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

/* Bytes asked of t's blocks in use, from scratch: per class, blocks in use times the mean. */
static int64_t tally_estimate(const struct heap_tally *t)
{
	double bytes = 0;
	for (size_t c = 0; c < HEAP_ROUNDED_CLASSES; c++) {
		const struct tally_class *k = &t->cls[c];
		int64_t blocks = (int64_t)(ld(&k->allocs) - ld(&k->frees));
		if (blocks)
			bytes += (double)blocks * class_mean(c);
	}
	return rounded(bytes);
}

/* A HEAP_TALLY of t: its totals, the bytes in use as estimated, and its high point since the
 * last one, in_use_high usable bytes, scaled the same way. */
static void tally_write(struct prof_thread *th, struct heap_tally *t, int64_t in_use_high,
			int kept)
{
	int64_t estimate = kept ? rounded(t->estimate) : tally_estimate(t);
	int64_t in_use = ld64(&t->in_use);
	int64_t above = in_use_high > in_use ? in_use_high - in_use : 0;
	if (in_use > 0 && estimate > 0)
		above = (int64_t)((double)above * (double)estimate / (double)in_use);
	int err = errno;  /* the allocation hooks' fast paths leave errno to us */
	struct prof_rec_heap_tally *r = prof_reserve(th, sizeof(*r));
	if (!r) {
		errno = err;
		return;
	}
	r->serial = t->serial;
	r->pad = 0;
	r->alloc_calls = ld(&t->alloc_calls);
	r->alloc_bytes = ld(&t->alloc_bytes);
	r->free_calls = ld(&t->free_calls);
	r->free_bytes = r->alloc_bytes - (uint64_t)estimate;
	r->in_use_high = estimate + above;
	prof_commit(r, PROF_REC_HEAP_TALLY, 0, sizeof(*r), prof_now());
	errno = err;
}

/* The thread's classes, in HEAP_CLASSES records of at most CLASSES_PER_RECORD (its end, an
 * exec, the exit: the analyzer keeps the largest counts it saw of each). */
#define CLASSES_PER_RECORD 64
static void classes_write(struct prof_thread *th, struct heap_tally *t)
{
	unsigned c = 0;
	while (c < HEAP_ROUNDED_CLASSES) {
		struct prof_heap_class batch[CLASSES_PER_RECORD];
		uint32_t n = 0;
		for (; c < HEAP_ROUNDED_CLASSES && n < CLASSES_PER_RECORD; c++) {
			uint64_t allocs = ld(&t->cls[c].allocs), frees = ld(&t->cls[c].frees);
			if (allocs || frees)
				batch[n++] = (struct prof_heap_class){ .cls = c, .allocs = allocs,
					.asked = ld(&t->cls[c].asked), .frees = frees };
		}
		if (!n)
			continue;
		uint32_t size = (uint32_t)(sizeof(struct prof_rec_heap_classes) + n * sizeof(batch[0]));
		struct prof_rec_heap_classes *r = prof_reserve(th, size);
		if (!r)
			return;
		r->serial = t->serial;
		r->count = n;
		memcpy(r->classes, batch, n * sizeof(batch[0]));
		prof_commit(r, PROF_REC_HEAP_CLASSES, 0, size, prof_now());
	}
}

/* in_use may move by limit from at before the next tally (heap_band_left()). */
static void band_set(struct heap_tally *t, int64_t at, int64_t limit)
{
	__atomic_store_n(&t->band_lo, at - limit, __ATOMIC_RELAXED);
	__atomic_store_n(&t->band, 2 * (uint64_t)limit, __ATOMIC_RELAXED);
}

/* The owner's tally (or one thread's at a time of the shared slot), and how far in_use may
 * move before the next: a 256th of all tallied bytes in use, so that the peak, summed by the
 * analyzer from the threads' latest tallies, is off by little more than that per thread.
 * Our own work, under the guard: the allocation hooks' lean way (heap.c) comes here without. */
__attribute__((noinline)) void heap_tally_flush(struct prof_thread *th, struct heap_tally *t)
{
	int idle = 0;
	if (t->shared && !atomic_compare_exchange_strong(&t->flushing, &idle, 1))
		return;  /* another thread is at it */
	prof_hook_enter(th);
	int64_t in_use = ld64(&t->in_use), high = ld64(&t->high);
	int64_t moved = in_use - t->at_record;
	int64_t all = atomic_fetch_add_explicit(&tallied_in_use, moved, memory_order_relaxed) + moved;
	tally_write(th, t, high > in_use ? high : in_use, !t->shared);
	t->at_record = in_use;
	__atomic_store_n(&t->high, in_use, __ATOMIC_RELAXED);
	int64_t step = all / 256;
	band_set(t, in_use, step > TALLY_MIN_STEP ? step : TALLY_MIN_STEP);
	th->in_hook--;
	if (t->shared)
		atomic_store(&t->flushing, 0);
}

/* The slot of threads that found none free, and of a thread's last frees after it said its
 * classes (its TLS destructors' and libc's own, as it ends): updated atomically. */
static struct heap_tally *shared_slot(struct prof_thread *th)
{
	struct heap_tally *t = &heap_tallies[own_slots];
	int first = 0;
	if (atomic_compare_exchange_strong(&shared_used, &first, 1)) {
		if (t->shared)  /* a fork child's copy of its parent's: else untouched zeroes */
			memset(t, 0, sizeof(*t));
		t->serial = 0;  /* no thread's: the analyzer keeps it apart all the same */
		t->shared = 1;
		band_set(t, 0, TALLY_MIN_STEP);
	}
	th->heap_tally = own_slots + 1;
	return t;
}

__attribute__((noinline)) struct heap_tally *heap_tally_claim(struct prof_thread *th)
{
	if (!heap_tallies)
		return NULL;
	int i = prof_slot_claim(tallies_taken, own_slots);
	if (i < 0)
		return shared_slot(th);
	struct heap_tally *t = &heap_tallies[i];
	if (t->serial)  /* a slot used before (a serial is never 0); a new one is the mapping's
			 * zeroes, whose pages its thread's classes fault in as they come */
		memset(t, 0, sizeof(*t));
	t->serial = th->serial;
	t->lean = (uint32_t)heap_glibc_chunks;
	band_set(t, 0, TALLY_MIN_STEP);
	th->heap_tally = (uint32_t)i + 1;
	return t;
}

/* The shared slot's counts, updated atomically (no estimate kept: tally_estimate()). */
__attribute__((noinline)) void heap_tally_shared_count(struct prof_thread *th, struct heap_tally *t,
						      struct tally_class *k, int alloc, size_t size,
						      int64_t usable_by)
{
	if (alloc) {
		__atomic_fetch_add(&t->alloc_calls, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&t->alloc_bytes, size, __ATOMIC_RELAXED);
		__atomic_fetch_add(&k->allocs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&k->asked, size, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&t->free_calls, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&k->frees, 1, __ATOMIC_RELAXED);
	}
	if (heap_band_left(t, __atomic_add_fetch(&t->in_use, usable_by, __ATOMIC_RELAXED)))
		heap_tally_flush(th, t);
}

__attribute__((noinline)) void heap_tally_due(struct prof_thread *th, struct heap_tally *t,
					      size_t c, unsigned due)
{
	if (due & HEAP_DUE_REFRESH)
		heap_class_refresh(t, c);
	if (due & HEAP_DUE_TALLY)
		heap_tally_flush(th, t);
}

void heap_tally_sync(struct prof_thread *th)
{
	unsigned slot = th->heap_tally;
	if (!slot || slot > own_slots)
		return;  /* none yet, or the shared one: its threads' order is not one */
	struct heap_tally *t = &heap_tallies[slot - 1];
	if (t->in_use != t->at_record || t->high != t->in_use)
		heap_tally_flush(th, t);
}

void heap_tally_thread_done(struct prof_thread *th)
{
	unsigned slot = th->heap_tally;
	if (!slot)
		return;
	struct heap_tally *t = &heap_tallies[slot - 1];
	if (!t->shared) {
		heap_tally_flush(th, t);
		classes_write(th, t);
		prof_slot_give(tallies_taken, slot - 1);
		shared_slot(th);  /* for what it frees from here on */
	}
}

/* At exit or exec: every thread's last tally and its classes (the others may still be
 * running: their counts are read as they are, and their merges left to them). */
void heap_tally_flush_all(struct prof_thread *th)
{
	if (!heap_tallies)
		return;
	for (unsigned i = 0; i <= own_slots; i++) {
		if (i < own_slots ? !prof_slot_taken(tallies_taken, i) :
				      !atomic_load(&shared_used))
			continue;
		struct heap_tally *t = &heap_tallies[i];  /* the caller's own estimate is kept; others' not */
		int64_t in_use = ld64(&t->in_use), high = ld64(&t->high);
		tally_write(th, t, high > in_use ? high : in_use,
			    i < own_slots && i + 1 == th->heap_tally);
		classes_write(th, t);
	}
}

void heap_tally_fork_child(void)
{
	prof_clear(tallies_taken, sizeof(tallies_taken));
	atomic_store(&shared_used, 0);
	atomic_store(&tallied_in_use, 0);
	if (prof_cfg.heap_sample)  /* untouched otherwise: reading its pages faults them in */
		prof_clear(class_means, sizeof(class_means));
	atomic_store(&rec.owner, 0);
	atomic_store(&rec.seq, 0);
}
