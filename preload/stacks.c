/* Call stacks: unwound with libunwind and interned in a lock-free table, so each distinct
 * stack is written once (a STACK record) and events carry only its id. */
#include "prof.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>
#include <sys/mman.h>

#define TABLE_SLOTS (1u << 20)  /* 16 MiB of address space, touched as it fills */
#define MAX_PROBES 64

struct slot {
	_Atomic uint64_t hash;  /* 0 = empty; set first, by CAS, to claim the slot */
	_Atomic uint32_t id;    /* 0 while the claimer is still writing the STACK record */
	uint32_t pad;
};

static struct slot *table;
static _Atomic uint32_t next_id = 1;

#define TABLE_BYTES (TABLE_SLOTS * sizeof(struct slot))
#define HUGE_PAGE (2u << 20)
static void *table_map;  /* the mapping: the table, 2 MiB aligned inside it */

/* Lookups land on random slots: with 4 KiB pages each one is a TLB miss, which cost more
 * than the rest of the lookup; 2 MiB pages (where the kernel allows) make them hits. */
void prof_stacks_reset(void)
{
	if (table_map)
		munmap(table_map, TABLE_BYTES + HUGE_PAGE);
	table = NULL;
	table_map = mmap(NULL, TABLE_BYTES + HUGE_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (table_map == MAP_FAILED) {
		table_map = NULL;  /* stacks are then written without interning */
	} else {
		table = (struct slot *)(((uintptr_t)table_map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
		madvise(table, TABLE_BYTES, MADV_HUGEPAGE);
	}
	atomic_store(&next_id, 1);
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static uint64_t hash_frames(void *const *frames, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(uintptr_t)frames[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h | 1;  /* never 0, the empty-slot mark */
}

#define ID_FAILED UINT32_MAX  /* a slot whose STACK record could not be written */

static uint32_t write_stack(struct prof_thread *th, void *const *frames, int n)
{
	/* A frame in an object we have not described (dlopen'ed since) needs its MODULE record
	 * before anyone can symbolize it. Not from a signal handler: the rescan takes a lock. */
	if (th->in_signal == 0)
		for (int i = 0; i < n; i++)
			if (!prof_addr_known((uintptr_t)frames[i])) {
				prof_modules_rescan();
				break;
			}
	uint32_t size = (uint32_t)(sizeof(struct prof_rec_stack) + 8u * (uint32_t)n);
	struct prof_rec_stack *r = prof_reserve(th, size);
	if (!r)
		return 0;
	uint32_t id = atomic_fetch_add(&next_id, 1);
	r->id = id;
	r->depth = (uint32_t)n;
	for (int i = 0; i < n; i++)
		r->frames[i] = (uint64_t)(uintptr_t)frames[i];
	prof_commit(r, PROF_REC_STACK, 0, size, prof_now());
	return id;
}

/* Writes the stack of a slot this thread claimed and gives the slot its id; a lost record
 * marks the slot ID_FAILED, so the next lookup writes it rather than every lookup a copy. */
static uint32_t publish(struct prof_thread *th, struct slot *s, void *const *frames, int n)
{
	uint32_t id = write_stack(th, frames, n);
	atomic_store_explicit(&s->id, id ? id : ID_FAILED, memory_order_release);
	return id;
}

/* The table is far bigger than the caches and a program's own data evicts it, so a lookup
 * is a cache miss. The stack last seen from the same call site is usually the one coming:
 * fetch its slot now, and the miss overlaps the unwinding instead of following it. */
static inline uint64_t *prediction(struct prof_thread *th, uintptr_t call_site)
{
	return &th->predicted[(call_site >> 2) & 63];
}

static uint32_t intern(struct prof_thread *th, void *const *frames, int n, uint64_t h);

uint32_t prof_stack_at(struct prof_thread *th, uintptr_t call_site)
{
	if (prof_cfg.stack_depth == 0)
		return 0;
	/* A full trace takes no STACK record and no event that would name one: skip unwinding,
	 * unless the thread's chunk still has room for both. */
	if (prof_writer_full() &&
	    !prof_writer_has_room(th, (uint32_t)sizeof(struct prof_rec_stack) +
					  8u * prof_cfg.stack_depth + 256u))
		return 0;
	prof_modules_rescan_if_stale();  /* a CPU sample ran in a library loaded since */
	uint64_t *guess = prediction(th, call_site);
	if (table && *guess && call_site)
		__builtin_prefetch(&table[(uint32_t)*guess & (TABLE_SLOTS - 1)]);
	void *buf[PROF_MAX_STACK_DEPTH + 16];
	/* A CPU sample taken meanwhile must not unwind too (libunwind's per-thread cache). */
	th->hook_site = call_site;
	th->unwinding = 1;
	atomic_signal_fence(memory_order_seq_cst);
	int n = unw_backtrace(buf, (int)prof_cfg.stack_depth + 16);
	atomic_signal_fence(memory_order_seq_cst);
	th->unwinding = 0;
	int skip = 0;
	while (skip < n && prof_addr_is_ours((uintptr_t)buf[skip]))
		skip++;
	void **frames = buf + skip;
	n -= skip;
	if (n > (int)prof_cfg.stack_depth)
		n = (int)prof_cfg.stack_depth;
	if (n <= 0)
		return 0;
	*guess = hash_frames(frames, n);
	return intern(th, frames, n, *guess);
}

/* Finds the stack in the table, or claims a slot and writes it. Lock-free, so a signal
 * handler may intern while the thread it interrupted was interning too. */
static uint32_t intern(struct prof_thread *th, void *const *frames, int n, uint64_t h)
{
	if (!table)
		return write_stack(th, frames, n);
	for (uint32_t i = 0, pos = (uint32_t)h & (TABLE_SLOTS - 1); i < MAX_PROBES;
	     i++, pos = (pos + 1) & (TABLE_SLOTS - 1)) {
		struct slot *s = &table[pos];
		uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
		if (cur == 0) {
			if (!atomic_compare_exchange_strong(&s->hash, &cur, h)) {
				if (cur != h)
					continue;
			} else {
				return publish(th, s, frames, n);
			}
		}
		if (cur == h) {
			uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
			/* Its record was lost: one lookup (the one that takes the mark) writes it
			 * again, and the slot serves every later one. */
			if (id == ID_FAILED) {
				if (atomic_compare_exchange_strong(&s->id, &id, 0))
					return publish(th, s, frames, n);
			}
			/* Still being written by another thread: write our own copy rather than wait. */
			return id ? id : write_stack(th, frames, n);
		}
	}
	return write_stack(th, frames, n);  /* table crowded here: correct, just not shared */
}

/* The stack this thread last unwound at call_site, as prof_stack_at() left it in the table,
 * or 0: what a CPU sample that interrupts that unwinding takes instead. Reads only. */
uint32_t prof_stack_last_at(struct prof_thread *th, uintptr_t call_site)
{
	uint64_t h = call_site ? *prediction(th, call_site) : 0;
	if (!h || !table)
		return 0;
	for (uint32_t i = 0, pos = (uint32_t)h & (TABLE_SLOTS - 1); i < MAX_PROBES;
	     i++, pos = (pos + 1) & (TABLE_SLOTS - 1)) {
		uint64_t cur = atomic_load_explicit(&table[pos].hash, memory_order_acquire);
		if (cur == 0)
			return 0;
		if (cur == h) {
			uint32_t id = atomic_load_explicit(&table[pos].id, memory_order_acquire);
			return id == ID_FAILED ? 0 : id;
		}
	}
	return 0;
}

uint32_t prof_stack_intern(struct prof_thread *th, void *const *frames, int n)
{
	if (n <= 0)
		return 0;
	return intern(th, frames, n, hash_frames(frames, n));
}

uint32_t prof_stack_here(struct prof_thread *th)
{
	return prof_stack_at(th, 0);
}
