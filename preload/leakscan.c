/* Leak classes at exit, as memcheck finds them, at no cost while the program runs: the blocks
 * still allocated come from the trace itself (its ALLOC and FREE records, read back from the
 * mapped file), then the roots (writable mappings: data segments, thread stacks above their
 * stack pointers, registers: the other threads are stopped meanwhile) and the blocks they
 * reach are scanned for pointers to those blocks.
 *
 * memcheck's rules: a pointer to a block's start from a root or a reachable block makes it
 * reachable; a pointer into its middle makes it possibly lost (as does any pointer from a
 * possibly lost block); a block no root chain reaches is lost, "indirectly" when another lost
 * block points to it, else "definitely". libprof's own memory (its data, its tables, the trace
 * mapping) is never a root, nor is the heap's own memory ([heap], the arenas) outside the live
 * blocks. memcheck's default interior-pointer heuristics apply (heuristic_start()). Memory
 * is read so that a page that went away reads as nothing instead of faulting (read_mem()).
 * Everything here lives in mappings of its own, never in the heap. */
#include "prof.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ---- libprof's own memory ---------------------------------------------------------------- */

#define OWN_MAX 64
static struct range { uintptr_t lo, hi; } own[OWN_MAX];
static _Atomic int nown;

void prof_own_memory(const void *p, size_t len)
{
	int i = atomic_fetch_add(&nown, 1);
	if (i < OWN_MAX)
		own[i] = (struct range){ (uintptr_t)p, (uintptr_t)p + len };
}

static int own_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t me = (uintptr_t)&nown;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
		uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
		prof_own_memory((void *)lo, hi - lo);
	}
	return 1;
}

/* ---- scratch memory ---------------------------------------------------------------------- */

/* A small process's scan (a subshell's: a few hundred addresses, two tables of 24 KiB) takes
 * its memory from here, libprof's own already: each table mapped, populated and unmapped took
 * some 10 us of a 40 us replay. Pages are populated as they are first taken (not a fault
 * each); what was taken is never given back (a scan runs once per process). */
#define SMALL_SCRATCH (256u << 10)
static PROF_BULK _Alignas(4096) char small_scratch[SMALL_SCRATCH];
static size_t small_used;

static int in_small_scratch(const void *p)
{
	return (const char *)p >= small_scratch && (const char *)p < small_scratch + SMALL_SCRATCH;
}

static void *small_take(size_t bytes)
{
	bytes = (bytes + 63) & ~(size_t)63;
	if (bytes > SMALL_SCRATCH / 4 || bytes > SMALL_SCRATCH - small_used)
		return NULL;
	char *p = small_scratch + small_used;
	char *from = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
	char *to = (char *)(((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095);
	if (to > from) {
		int saved = errno;
		madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE);
		errno = saved;
	}
	small_used += bytes;
	return p;
}

/* A mapping of its own, registered as libprof's memory. */
static void *mapped_scratch(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	prof_own_memory(p, bytes);
	return p;
}

static void *scratch(size_t bytes)
{
	void *p = small_take(bytes);
	return p ? p : mapped_scratch(bytes);
}

/* ---- the blocks allocated at exit, from the trace ---------------------------------------- */

enum { UNREACHED, POSSIBLE, REACHABLE, INDIRECT };

struct block {
	uint64_t ptr, size;
	uint64_t time;  /* of its allocation */
	uint32_t state, pad;
};

static struct block *tab;   /* the live blocks, sorted by address */
static size_t nblocks;

/* The replay reads the trace stream by stream (a stream: one thread's records, in time
 * order), each into a table of its own that keeps, per address, what other streams' events on
 * it need to be weighed against: the blocks it still held at its end (their ALLOC), and its
 * FREEs of blocks it had not allocated itself (another thread's, or its own from before a
 * FREE of another thread). An ALLOC and the FREE that follow each other in one stream say
 * nothing about any other stream's events (those fall before or after the pair, and every
 * earlier block of that address was freed by a FREE kept somewhere), so the pair leaves
 * nothing: the table stays as small as the blocks the thread held at once. Each stream's
 * table is then folded into one where an address's latest event wins; its ALLOCs are the
 * blocks allocated at exit. Every address a program ever used, with times (one table for
 * the whole trace), outgrew the caches; a merge of the streams by time, event by event,
 * mispredicted a branch at each event where two threads took turns. */
struct addr_event {
	uint64_t ptr, size;  /* ptr 0: an empty slot */
	uint64_t key;        /* order << 1 | shadow. order: time * 2 + 1 for an ALLOC, so that
			      * at equal times the ALLOC is later (a FREE is timed before the
			      * block is released). shadow: an ALLOC after a FREE this stream
			      * kept, whose own FREE must be kept too */
};
#define HELD(a) (((a)->key >> 1) & 1)  /* an ALLOC */
#define SHADOW(a) ((a)->key & 1)
#define ORDER(a) ((a)->key >> 1)

#define PREFETCH_FROM (1u << 17)  /* slots (3 MiB) of a table that outgrows the caches */

/* Open addressing by ptr, linear probes, at most a quarter full (at three quarters, with
 * removals, probes ran long); half full from PREFETCH_FROM slots on, where the table's
 * pages (faulted in, zeroed) cost more than the probes. */
struct addr_table {
	struct addr_event *slot;
	size_t cap, n;
	int bits, own;  /* own: registered as libprof's memory (lives through the scan) */
};

static size_t at_home(const struct addr_table *t, uint64_t ptr)
{
	return (size_t)(((ptr >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - t->bits));
}

/* The slot of ptr, or the empty one where it goes. */
static size_t at_slot(const struct addr_table *t, uint64_t ptr)
{
	size_t i = at_home(t, ptr);
	while (t->slot[i].ptr && t->slot[i].ptr != ptr)
		i = (i + 1) & (t->cap - 1);
	return i;
}

static struct addr_event *at_map(size_t cap, int own)
{
	size_t bytes = cap * sizeof(struct addr_event);
	void *p = small_take(bytes);
	if (p)
		return p;
	p = own ? mapped_scratch(bytes) : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!p || p == MAP_FAILED)
		return NULL;
	/* One call maps it all: not a page fault every 4 KiB, two where a page is read before
	 * it is written (a small process's tables took 30 faults, a sixth of its own). */
	madvise(p, bytes, MADV_POPULATE_WRITE);
	return p;
}

static void at_release(struct addr_table *t)
{
	if (t->slot && !in_small_scratch(t->slot))
		munmap(t->slot, t->cap * sizeof(*t->slot));
	*t = (struct addr_table){ 0 };
}

/* Twice the slots. The old ones of a registered table stay mapped (their pages given back):
 * its range stays libprof's, where another mapping of the still running threads could
 * otherwise come, and be taken for ours. On failure t is as it was. */
static __attribute__((noinline)) int at_grow(struct addr_table *t)
{
	struct addr_table old = *t;
	t->bits = old.slot ? old.bits + 1 : 8;
	t->cap = (size_t)1 << t->bits;
	if (!(t->slot = at_map(t->cap, t->own))) {
		*t = old;
		return -1;
	}
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i].ptr)
			t->slot[at_slot(t, old.slot[i].ptr)] = old.slot[i];
	if (!old.slot || in_small_scratch(old.slot))
		return 0;
	if (t->own)
		madvise(old.slot, old.cap * sizeof(*old.slot), MADV_DONTNEED);
	else
		munmap(old.slot, old.cap * sizeof(*old.slot));
	return 0;
}

/* Whether t holds one entry more than n within its fill. */
static inline int at_has_room(const struct addr_table *t, size_t n)
{
	size_t fill = t->cap < PREFETCH_FROM ? 4 : 2;
	return t->slot && (n + 1) * fill <= t->cap;
}

/* Room for one more entry: 0, or -1 when no memory could be had. */
static inline int at_room(struct addr_table *t)
{
	return likely(at_has_room(t, t->n)) ? 0 : at_grow(t);
}

/* Room for n entries in all: 0, or -1. */
static int at_reserve(struct addr_table *t, size_t n)
{
	while (!at_has_room(t, n))
		if (at_grow(t) < 0)
			return -1;
	return 0;
}

/* Empties slot i, moving back the entries after it that would no longer be found. */
static void at_remove(struct addr_table *t, size_t i)
{
	size_t mask = t->cap - 1;
	for (size_t j = i;;) {
		j = (j + 1) & mask;
		if (!t->slot[j].ptr)
			break;
		size_t home = at_home(t, t->slot[j].ptr);
		if (((j - home) & mask) >= ((j - i) & mask)) {  /* home at or before the hole */
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i].ptr = 0;
	t->n--;
}

static struct addr_table latest = { .own = 1 };  /* every stream's table folded */

/* The chunks of a stream, in order, and a reader of its records. */
struct chunk_ref {
	uint32_t stream, seq;  /* seq: its place in the stream, as the writer numbered it */
	uint64_t at, units;    /* where it is, in units */
};

struct cursor {
	const struct chunk_ref *chunk, *last;  /* the chunk being read, the stream's last */
	const char *p, *end;
	struct prof_short_base base;
};

static const char *trace_data;
static uint32_t trace_unit;

static void cursor_enter(struct cursor *c)
{
	const char *start = trace_data + c->chunk->at * trace_unit;
	c->p = start + sizeof(struct prof_chunk_header_run);
	c->end = start + c->chunk->units * trace_unit;
	c->base = (struct prof_short_base){ 0 };
}

/* Heapsort of n elements of `size` bytes (at most SORT_ELEM_MAX) at base, so that none is
 * after() the next: the exit's scan allocates nothing but mappings of its own. */
#define SORT_ELEM_MAX 32

static inline void sort_swap(char *x, char *y, size_t size)
{
	char t[SORT_ELEM_MAX];
	memcpy(t, x, size);
	memcpy(x, y, size);
	memcpy(y, t, size);
}

static inline void sort_sift(char *a, size_t r, size_t n, size_t size,
			     int (*after)(const void *, const void *))
{
	for (size_t c; (c = 2 * r + 1) < n; r = c) {
		if (c + 1 < n && after(a + (c + 1) * size, a + c * size))
			c++;
		if (!after(a + c * size, a + r * size))
			return;
		sort_swap(a + r * size, a + c * size, size);
	}
}

static inline void heap_sort(void *base, size_t n, size_t size,
			     int (*after)(const void *, const void *))
{
	char *a = base;
	for (size_t k = n / 2; k > 0; k--)
		sort_sift(a, k - 1, n, size, after);
	for (size_t end = n; end > 1; end--) {
		sort_swap(a, a + (end - 1) * size, size);
		sort_sift(a, 0, end - 1, size, after);
	}
}

static int chunk_after(const void *x, const void *y)
{
	const struct chunk_ref *a = x, *b = y;
	return a->stream != b->stream ? a->stream > b->stream : a->seq > b->seq;
}
_Static_assert(sizeof(struct chunk_ref) <= SORT_ELEM_MAX, "chunk_ref sorts in place");

static int block_after(const void *x, const void *y)
{
	return ((const struct block *)x)->ptr > ((const struct block *)y)->ptr;
}

/* Of two indices of tab, whether the first block was allocated after the second. */
static int allocated_after(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return tab[a].time != tab[b].time ? tab[a].time > tab[b].time : a > b;
}
_Static_assert(sizeof(struct block) <= SORT_ELEM_MAX, "block sorts in place");

/* The trace's chunks, by stream and then sequence number, as the reader orders them (heapsort:
 * no allocation); *n: how many. */
static struct chunk_ref *chunks_in_order(const char *data, uint64_t units, size_t *n)
{
	size_t count = 0, cap = 0;
	for (int pass = 0; pass < 2; pass++) {
		struct chunk_ref *t = NULL;
		if (pass && !(t = scratch((cap = count ? count : 1) * sizeof(*t))))
			return NULL;
		count = 0;
		for (uint64_t i = 0; i < units;) {
			const struct prof_chunk_header_run *c = (const void *)(data + i * trace_unit);
			uint32_t len = c->units;
			if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != PROF_CHUNK_MAGIC || len == 0 ||
			    len > units - i) {
				i++;
				continue;
			}
			if (t && count < cap)
				t[count] = (struct chunk_ref){ c->stream, c->seq, i, len };
			count++;
			i += len;
		}
		if (pass) {
			*n = count < cap ? count : cap;
			heap_sort(t, *n, sizeof(*t), chunk_after);
			return t;
		}
	}
	return NULL;
}

/* The trace has one stream (a single-threaded process): a FREE of a block it did not allocate
 * (a fork child's of its parent's blocks, most of a subshell's) is not kept. */
static int one_stream;

/* An ALLOC (of size bytes) or FREE of ptr at time, in a stream's table (struct addr_event).
 * It, batch_add() and replay_event() are one loop with stream_replay() (always inlined: the
 * one_stream test made gcc call them, 25 more instructions an event). */
static inline __attribute__((always_inline)) int stream_apply(struct addr_table *t, uint64_t ptr,
								uint64_t size, uint64_t time,
								int alloc)
{
	if (!ptr)
		return 0;
	if (at_room(t) < 0)
		return -1;
	size_t i = at_slot(t, ptr);
	struct addr_event *a = &t->slot[i];
	int had = a->ptr != 0, held = had && HELD(a);
	if (!alloc && !had && one_stream)
		return 0;  /* nothing another stream did can be weighed against it */
	if (!alloc && held && !SHADOW(a)) {
		at_remove(t, i);  /* its own block, allocated and freed here */
		return 0;
	}
	t->n += !had;
	/* An ALLOC over a kept FREE (or a shadowed ALLOC) is shadowed; a second ALLOC (its FREE
	 * was another thread's, or lost) stays as the first was. */
	uint64_t shadow = alloc && had && (!held || SHADOW(a));
	*a = (struct addr_event){ ptr, size, (time * 2 + (uint64_t)alloc) << 1 | shadow };
	return 0;
}

/* Events are decoded a batch at a time, then applied in order: where the table outgrew the
 * caches (a program that held a million blocks at once), the slot of each event a few ahead
 * is prefetched as one is applied. */
#define BATCH_EVENTS 512
#define PREFETCH_AHEAD 8

struct event_batch {
	uint64_t ptr[BATCH_EVENTS], size[BATCH_EVENTS], time[BATCH_EVENTS];
	uint8_t alloc[BATCH_EVENTS];
	unsigned n;
};

static int batch_apply(struct addr_table *t, struct event_batch *b)
{
	unsigned n = b->n;
	b->n = 0;
	for (unsigned i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n)
			__builtin_prefetch(&t->slot[at_home(t, b->ptr[i + PREFETCH_AHEAD])], 1);
		if (stream_apply(t, b->ptr[i], b->size[i], b->time[i], b->alloc[i]) < 0)
			return -1;
	}
	return 0;
}

static inline __attribute__((always_inline)) int batch_add(struct addr_table *t,
							     struct event_batch *b, uint64_t ptr,
							     uint64_t size, uint64_t time, int alloc)
{
	if (t->cap < PREFETCH_FROM)  /* the caches hold the table: applied at once (b->n is 0) */
		return stream_apply(t, ptr, size, time, alloc);
	unsigned i = b->n++;
	b->ptr[i] = ptr;
	b->size[i] = size;
	b->time[i] = time;
	b->alloc[i] = (uint8_t)alloc;
	return b->n < BATCH_EVENTS ? 0 : batch_apply(t, b);
}

/* A stream's latest ALLOC, held back from its table: if the stream's next event is its FREE
 * (a temporary block, most of many programs' allocations), the pair leaves nothing, as it
 * would have left nothing in the table (see struct addr_event), and the table is never
 * touched. Where records were lost, a pair may follow an ALLOC whose FREE was lost, which the
 * table's pair would have taken with it: every event goes to the table then. */
struct held_alloc {
	uint64_t ptr, size, time;  /* ptr 0: none */
};
static int pairs_skip;

static inline __attribute__((always_inline)) int replay_event(struct addr_table *t,
								struct event_batch *b,
								struct held_alloc *h, uint64_t ptr,
								uint64_t size, uint64_t time, int alloc)
{
	if (h->ptr) {
		if (!alloc && ptr == h->ptr) {
			h->ptr = 0;
			return 0;
		}
		if (batch_add(t, b, h->ptr, h->size, h->time, 1) < 0)
			return -1;
		h->ptr = 0;
	}
	if (alloc && ptr && pairs_skip) {
		*h = (struct held_alloc){ ptr, size, time };
		return 0;
	}
	return batch_add(t, b, ptr, size, time, alloc);
}

/* One stream's ALLOC and FREE records into its own table t. A chunk is read up to its first
 * record not (yet) committed; its reading position and short records' base stay in locals. */
static int stream_replay(struct cursor *c, struct addr_table *t)
{
	static PROF_BULK struct event_batch batch;  /* 13 KiB: not on an exiting thread's stack */
	struct held_alloc held = { 0 };
	batch.n = 0;
	for (;;) {
		const char *p = c->p, *end = c->end;
		struct prof_short_base base = c->base;
		while (end - p >= 8) {
			const struct prof_rec *r = (const void *)p;
			uint64_t prefix = __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
			unsigned kind = prof_short_kind(prefix);
			if (prof_is_short(prefix) && kind < PROF_SHORT_LOCK_KIND && base.valid) {
				/* A short ALLOC or FREE, most of a trace: its base step, without
				 * building the record as prof_short_decode() does. */
				int alloc = kind < PROF_SHORT_FREE_KIND;
				ptrdiff_t len = prof_short_len(kind);
				if (end - p < len)
					break;
				prof_short_heap_step(&base, prefix);
				uint32_t size = 0;
				if (alloc)
					memcpy(&size, p + 8, sizeof(size));
				p += len;
				if (replay_event(t, &batch, &held, base.ptr, size, base.time, alloc) < 0)
					return -1;
				continue;
			}
			if (prof_is_short(prefix) && kind >= PROF_SHORT_LOCK_KIND &&
			    prof_short_kind_known(kind)) {
				/* LOCK_WAIT, IO_CALL, CUDA: no heap event, and their bases are
				 * their own: stepped over, not decoded */
				ptrdiff_t len = prof_short_len(kind);
				if (end - p < len)
					break;
				p += len;
				continue;
			}
			if (prof_is_short(prefix)) {  /* prof_short.h: no base, or a kind unknown */
				union prof_short_rec a;
				int len = prof_short_decode(&base, prefix, p, (uint64_t)(end - p), &a);
				if (len < 0)
					break;
				p += len;
				if (a.h.type != PROF_REC_ALLOC && a.h.type != PROF_REC_FREE)
					continue;
				int alloc = a.h.type == PROF_REC_ALLOC;
				if (replay_event(t, &batch, &held, a.free.ptr, alloc ? a.alloc.size : 0,
						 a.h.time, alloc) < 0)
					return -1;
				continue;
			}
			if (!prefix || end - p < (ptrdiff_t)sizeof(struct prof_rec) || r->size < 16 ||
			    r->size % 8 || r->size > (uint64_t)(end - p))
				break;
			prof_short_note(&base, r);
			p += r->size;
			if (r->type == PROF_REC_ALLOC || r->type == PROF_REC_FREE) {
				const struct prof_rec_alloc *a = (const void *)r;  /* ptr first in both */
				int alloc = r->type == PROF_REC_ALLOC;
				if (replay_event(t, &batch, &held, a->ptr, alloc ? a->size : 0, r->time,
						 alloc) < 0)
					return -1;
			}
		}
		if (c->chunk == c->last) {
			if (held.ptr && batch_add(t, &batch, held.ptr, held.size, held.time, 1) < 0)
				return -1;
			return batch_apply(t, &batch);
		}
		c->chunk++;
		cursor_enter(c);
	}
}

/* Folds a stream's table into `latest`: per address, the later event wins. `latest` is made
 * big enough first: entries come in the order of their slots, so a table that grew as they
 * came had them all in its first slots, one cluster that every insertion probed through
 * (a million blocks left at exit took seconds). */
static int fold(const struct addr_table *t)
{
	if (at_reserve(&latest, latest.n + t->n) < 0)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		const struct addr_event *a = &t->slot[i];
		if (!a->ptr)
			continue;
		struct addr_event *l = &latest.slot[at_slot(&latest, a->ptr)];
		if (!l->ptr)
			latest.n++;
		else if (ORDER(a) <= ORDER(l))
			continue;
		*l = *a;
	}
	return 0;
}

/* Sorts n blocks by address: a radix sort on the bytes in which their addresses differ
 * (heapsort took half a second for a million blocks), or heapsort where no buffer can be had. */
static void sort_by_address(struct block *a, size_t n)
{
	static size_t count[256];
	struct block *buf = n > 256 ? scratch(n * sizeof(*a)) : NULL;
	if (!buf) {
		heap_sort(a, n, sizeof(*a), block_after);
		return;
	}
	uint64_t differ = 0;
	for (size_t i = 1; i < n; i++)
		differ |= a[i].ptr ^ a[0].ptr;
	struct block *from = a, *to = buf;
	for (int shift = 0; shift < 64; shift += 8) {
		if (!((differ >> shift) & 0xff))
			continue;
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(from[i].ptr >> shift) & 0xff]++;
		for (size_t b = 0, at = 0; b < 256; b++) {
			size_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[(from[i].ptr >> shift) & 0xff]++] = from[i];
		struct block *t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * sizeof(*a));
}

/* Not inlined: its locals (a block being sorted, a record being decoded) hold the program's
 * block addresses, and prof_leak_scan()'s own frame lies in the stack the scan reads as a
 * root (from scan_with_registers()'s frame up); a returned frame below it does not. */
static __attribute__((noinline)) int read_trace(void)
{
	uint64_t units;
	uintptr_t lo, hi;
	if (prof_writer_units(&trace_data, &units, &trace_unit, &lo, &hi) < 0)
		return -1;
	prof_own_memory((void *)lo, hi - lo);
	pairs_skip = prof_writer_lost() == 0;
	size_t nchunks = 0;
	struct chunk_ref *chunks = chunks_in_order(trace_data, units, &nchunks);
	if (!chunks)
		return -1;
	one_stream = nchunks && chunks[0].stream == chunks[nchunks - 1].stream;
	for (size_t i = 0; i < nchunks;) {
		size_t j = i;
		while (j + 1 < nchunks && chunks[j + 1].stream == chunks[i].stream)
			j++;
		struct cursor c = { .chunk = &chunks[i], .last = &chunks[j] };
		cursor_enter(&c);
		struct addr_table own = { 0 };
		if (stream_replay(&c, &own) < 0) {
			at_release(&own);
			return -1;
		}
		if (!latest.slot && own.slot) {  /* the first stream's table is the fold of it */
			if (!in_small_scratch(own.slot))
				prof_own_memory(own.slot, own.cap * sizeof(*own.slot));
			latest = own;
			latest.own = 1;
		} else {
			int ok = fold(&own) == 0;
			at_release(&own);
			if (!ok)
				return -1;
		}
		i = j + 1;
	}
	/* The live blocks (latest.n bounds them: it counts the freed ones too), by address. */
	if (!(tab = scratch((latest.n ? latest.n : 1) * sizeof(*tab))))
		return -1;
	nblocks = 0;
	for (size_t i = 0; i < latest.cap; i++)
		if (latest.slot[i].ptr && HELD(&latest.slot[i]))
			tab[nblocks++] = (struct block){ .ptr = latest.slot[i].ptr,
							 .size = latest.slot[i].size,
							 .time = ORDER(&latest.slot[i]) >> 1,
							 .state = UNREACHED };
	sort_by_address(tab, nblocks);
	return 0;
}

/* The number of blocks starting at or below v. */
static size_t blocks_upto(uint64_t v)
{
	size_t lo = 0, hi = nblocks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tab[mid].ptr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The block found last for a page of addresses: a program's memory points into the same few
 * blocks again and again (an interpreter's arenas), and a binary search of a million blocks
 * is some twenty cache misses. An entry is only a guess, checked against the block it names
 * (so one left from an earlier scan does no harm, and none needs clearing: 64 KiB of pages
 * at every exit). Up to NEAR_FROM blocks are searched without it: their search reads a few
 * lines of the table, where the entries' pages were faulted in one by one (four of a bash
 * subshell's exit, 17 blocks). */
#define NEAR_SLOTS 4096
#define NEAR_FROM 64
static PROF_BULK struct near {
	uint64_t page;  /* 1 + the page's number, 0: none */
	uint32_t block;
} near[NEAR_SLOTS];

static inline int block_holds(const struct block *b, uint64_t v)
{
	return v >= b->ptr && (v < b->ptr + b->size || v == b->ptr);
}

/* The block holding address v (start or interior), or -1. */
static ssize_t block_at(uint64_t v)
{
	struct near *c = nblocks > NEAR_FROM ? &near[(v >> 12) % NEAR_SLOTS] : NULL;
	if (c && c->page == (v >> 12) + 1 && c->block < nblocks) {
		if (block_holds(&tab[c->block], v))
			return c->block;
		/* the next block: an array of pointers to blocks allocated one after another */
		if (c->block + 1 < nblocks && block_holds(&tab[c->block + 1], v))
			return ++c->block;
	}
	size_t n = blocks_upto(v);
	if (n == 0 || !block_holds(&tab[n - 1], v))
		return -1;
	if (c)
		*c = (struct near){ (v >> 12) + 1, (uint32_t)(n - 1) };
	return (ssize_t)(n - 1);
}

/* ---- marking ----------------------------------------------------------------------------- */

static uint32_t *work;      /* blocks to scan */
static size_t nwork, work_cap;
static uint64_t heap_lo, heap_hi, root_bytes;
/* Blocks found reachable so far. Once every block is, nothing more can change: the rest of
 * the roots and the blocks not scanned yet go unread (a short process's blocks are often all
 * held from its data segment, read first, and its libraries' data and stack are skipped). */
static size_t nreachable;
static inline int all_reachable(void)
{
	return nreachable == nblocks;
}
static ssize_t leader = -1; /* the lost block whose clique is being walked, -1 from roots */

static void push(size_t i)
{
	if (nwork < work_cap)
		work[nwork++] = (uint32_t)i;
}

/* ---- reading the program's memory without faulting --------------------------------------
 * process_vm_readv() on our own process, and a pipe: write(2) of the memory, which the kernel
 * copies as far as it is mapped (EFAULT where nothing is), then read(2) of it back. Where a
 * seccomp filter refuses process_vm_readv (Docker's default profile does, to a container
 * without CAP_SYS_PTRACE), the pipe alone. Without either, no block could be told reachable:
 * no leak classes. */
static int mem_pipe[2] = { -1, -1 };  /* [1] written, [0] read; -1: none */
static size_t mem_pipe_room;
static int vm_readv_ok;
static pid_t self;  /* getpid() is a system call each time: thousands of reads at exit */

/* Both readers where both work: process_vm_readv() for long ranges (one copy), the pipe for
 * many small blocks at once (process_vm_readv pins the pages of every range it is given:
 * 0.45 s for a million blocks of 24 bytes, 256 to a call, against 0.04 s through a pipe).
 * The pipe is made once PIPE_FROM ranges were read without it: a short process's scan reads
 * a few dozen, fewer than the pipe's own ten system calls would pay for. */
#define PIPE_FROM 64
static size_t ranges_read;

static int pipe_ready(void)
{
	if (mem_pipe[0] >= 0)
		return 1;
	if (pipe2(mem_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return 0;
	int room = fcntl(mem_pipe[1], F_SETPIPE_SZ, 1 << 20);
	if (room <= 0)
		room = fcntl(mem_pipe[1], F_GETPIPE_SZ);
	mem_pipe_room = room > 0 ? (size_t)room : 4096;
	return 1;
}

static int readers_ready(void)
{
	uint64_t probe = 0x5a17, copy = 0;
	struct iovec local = { &copy, 8 }, remote = { &probe, 8 };
	self = getpid();
	ranges_read = 0;
	vm_readv_ok = process_vm_readv(self, &local, 1, &remote, 1, 0) == 8 && copy == probe;
	return vm_readv_ok || pipe_ready() ? 0 : -1;
}

/* Copies what can be read of [addr, addr + n) from its start to dst: how many bytes. */
static size_t read_mem(void *dst, uint64_t addr, size_t n)
{
	if (vm_readv_ok) {
		struct iovec local = { dst, n }, remote = { (void *)(uintptr_t)addr, n };
		ssize_t got = process_vm_readv(self, &local, 1, &remote, 1, 0);
		return got > 0 ? (size_t)got : 0;
	}
	size_t done = 0;
	while (done < n) {
		size_t want = n - done < mem_pipe_room ? n - done : mem_pipe_room;
		ssize_t put = write(mem_pipe[1], (const char *)(uintptr_t)addr + done, want);
		if (put <= 0)
			break;
		for (ssize_t got = 0, r; got < put; got += r)
			if ((r = read(mem_pipe[0], (char *)dst + done + got, (size_t)(put - got))) <= 0)
				return done;  /* cannot happen: the bytes are in the pipe */
		done += (size_t)put;
		if ((size_t)put < want)
			break;  /* a fault partway */
	}
	return done;
}

/* The n ranges remote[] into local[], all of each, or -1. */
static int read_ranges(const struct iovec *local, const struct iovec *remote, size_t n,
		       size_t bytes)
{
	ranges_read += n;
	if ((vm_readv_ok && ranges_read < PIPE_FROM) || !pipe_ready() || bytes > mem_pipe_room)
		return vm_readv_ok && process_vm_readv(self, local, n, remote, n, 0) == (ssize_t)bytes ?
			       0 : -1;
	ssize_t put = writev(mem_pipe[1], remote, (int)n);  /* the ranges in one call */
	if (put <= 0)
		return -1;
	/* Read back into local[] in order (all of it is in the pipe: one call takes it all);
	 * whatever is left is drained, so that the pipe is empty for the next call. */
	ssize_t got = readv(mem_pipe[0], local, (int)n);
	if (got != put) {
		char junk[512];
		while (read(mem_pipe[0], junk, sizeof(junk)) > 0)
			;
		return -1;
	}
	return (size_t)put == bytes ? 0 : -1;
}

static int read_words(uint64_t addr, uint64_t *out, size_t n)
{
	return read_mem(out, addr, n * 8) == n * 8 ? 0 : -1;
}

/* memcheck's default interior-pointer heuristics, which count such a pointer as one to the
 * start: a length or element count stored before the data (length64, newarray: sqlite's
 * allocator, C++ arrays of objects with destructors) and libstdc++'s old std::string
 * (length, capacity, refcount, then the characters). */
static int heuristic_start(const struct block *b, uint64_t v)
{
	uint64_t w[3];
	if (v == b->ptr + 8 && b->size >= 8 && read_words(b->ptr, w, 1) == 0 && w[0] > 0 &&
	    (b->size - 8) % w[0] == 0)
		return 1;
	return v == b->ptr + 24 && b->size >= 25 && read_words(b->ptr, w, 3) == 0 &&
	       w[0] <= w[1] && w[1] == b->size - 25;
}

/* The pages that hold blocks, as bits of a small table by a hash of the page: a word of the
 * roots that falls between the blocks (a pointer into memory the process had before it
 * forked, or into a freed block) is told apart with one load, not a search of the blocks.
 * Off (page_filter_on 0) where blocks cover so many pages that the bits would be mostly set. */
#define PAGE_FILTER_BITS 16
static PROF_BULK uint64_t page_filter[(1u << PAGE_FILTER_BITS) / 64];
static int page_filter_on;

static inline uint32_t page_bit(uint64_t page)
{
	return (uint32_t)((page * 0x9e3779b97f4a7c15ull) >> (64 - PAGE_FILTER_BITS));
}

static void page_filter_build(void)
{
	memset(page_filter, 0, sizeof(page_filter));
	page_filter_on = 0;
	uint64_t pages = 0;
	for (size_t i = 0; i < nblocks; i++) {
		uint64_t first = tab[i].ptr >> 12, last = (tab[i].ptr + tab[i].size) >> 12;
		if ((pages += last - first + 1) > (1u << PAGE_FILTER_BITS) / 8)
			return;  /* a bit in eight set, or more: little would be told apart */
		for (uint64_t p = first; p <= last; p++)
			page_filter[page_bit(p) / 64] |= 1ull << (page_bit(p) % 64);
	}
	page_filter_on = 1;
}

/* Whether v, a word of libc's data (in_libc_data) in block b's last 8 bytes, is the address
 * of the malloc chunk after b's, as glibc's own state holds it (its arena's top chunk, a free
 * chunk in a bin): the next chunk's first field is b's last 8 bytes while b is in use. Not a
 * pointer of the program's, and memcheck, whose allocator has no such state, never sees one:
 * the last block before the heap's top was "possibly lost" where memcheck says "definitely".
 * The same word elsewhere (the program's data, a block) is the program's: it counts. */
static int in_libc_data;
static int next_chunk_address(const struct block *b, uint64_t v)
{
	uint64_t hdr;  /* glibc's size field: the chunk's size, flags in the low 3 bits */
	if (v + 8 < b->ptr + b->size || read_words(b->ptr - 8, &hdr, 1) < 0 || (hdr & 2))
		return 0;  /* not the last 8 bytes, unreadable, or a chunk of its own mapping */
	uint64_t chunk = hdr & ~7ull;
	return chunk >= b->size + 8 && chunk <= b->size + 40 && v == b->ptr - 16 + chunk;
}

/* memcheck's lc_push_if_a_chunk_ptr: definite when the pointer sits in a root or in a
 * reachable block. A word of a page with blocks. */
static __attribute__((noinline)) void found_near(uint64_t v, int definite)
{
	ssize_t i = block_at(v);
	if (i < 0)
		return;
	struct block *b = &tab[i];
	if (in_libc_data && v != b->ptr && next_chunk_address(b, v))
		return;
	if (leader >= 0) {
		if (b->state == UNREACHED && i != leader) {
			b->state = INDIRECT;
			push((size_t)i);
		}
	} else if (definite && b->state != REACHABLE && (v == b->ptr || heuristic_start(b, v))) {
		b->state = REACHABLE;
		nreachable++;
		push((size_t)i);
	} else if (b->state == UNREACHED) {
		b->state = POSSIBLE;
		push((size_t)i);
	}
}

/* Whether word v points into a block (found_near()): the tests of every word of the memory
 * scanned, inline in its loops. */
static inline __attribute__((always_inline)) void found(uint64_t v, int definite)
{
	if (v < heap_lo || v >= heap_hi)
		return;
	uint32_t bit = page_bit(v >> 12);
	if (page_filter_on && !(page_filter[bit / 64] & (1ull << (bit % 64))))
		return;
	found_near(v, definite);
}

static PROF_BULK uint64_t buf[8192];

/* Every aligned word of [lo, hi), read without faulting. */
static void scan_words(uint64_t lo, uint64_t hi, int definite)
{
	lo = (lo + 7) & ~7ull;
	while (lo + 8 <= hi && !all_reachable()) {
		size_t want = hi - lo < sizeof(buf) ? (size_t)(hi - lo) & ~(size_t)7 : sizeof(buf);
		size_t got = read_mem(buf, lo, want);
		if (got < 8) {  /* unreadable: on to the next page */
			lo = (lo | 4095) + 1;
			continue;
		}
		for (size_t k = 0; k < got / 8; k++)
			found(buf[k], definite);
		lo += (uint64_t)got & ~7ull;
	}
}

/* ---- pages that hold data ----------------------------------------------------------------
 * A private page that is neither in memory nor swapped out holds nothing the program wrote
 * (zeros, or its file's bytes as they are): never a pointer to a block. /proc/self/pagemap
 * tells which pages those are. A JVM's committed heap, a Go or V8 arena, a sanitizer's shadow
 * are mostly such pages, and reading them made the kernel map each one in: 0.2 s of a
 * 0.27 s java -version under libprof. Shared mappings are read whole (another process may
 * have written a page that is not mapped here), as is everything where pagemap cannot be
 * read. */
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_FILE (1ull << 61)    /* a file's page (or shared anonymous memory) */
#define PM_EXCLUSIVE (1ull << 56)  /* mapped by this process alone */
#define PM_WINDOW 512  /* entries read at once: 2 MiB of 4 KiB pages */

static int pagemap_fd = -1;
static uint64_t page_size = 4096;
static PROF_BULK uint64_t pm[PM_WINDOW];
static uint64_t pm_first, pm_n;  /* entries of pages pm_first.. */
/* The last page of the root being scanned (0: none): a read of entries takes them up to it,
 * not only to the end of the stretch between two blocks, which a fork child's heap has many
 * of (a read each: half of the system calls of a bash subshell's scan). */
static uint64_t pm_upto;

/* What a page holds, as pagemap tells. */
enum { PAGE_EMPTY, PAGE_ANON, PAGE_OTHER };

/* A fork child that made no copy of itself: a page of its private memory in memory that it
 * shares with another process (its parent, a sibling) or that is still a file's page is one
 * it never wrote (a write would have copied it), so it holds only what its parent's memory
 * or the file held: no pointer to a block of the child's, which the child allocated since.
 * Such pages, most of a child's inherited heap and data, are not read. Once it forks itself,
 * a page it wrote is shared too. */
static int skip_unwritten;

static int page_kind_of(uint64_t e)
{
	if (!(e & (PM_PRESENT | PM_SWAPPED)))
		return PAGE_EMPTY;
	if (skip_unwritten && (e & PM_PRESENT) && ((e & PM_FILE) || !(e & PM_EXCLUSIVE)))
		return PAGE_EMPTY;
	return e & PM_FILE ? PAGE_OTHER : PAGE_ANON;
}

/* The kind of page p (an index): PAGE_EMPTY (neither in memory nor swapped out), PAGE_ANON
 * (the process's own memory), PAGE_OTHER (a file's page, or unknown: pagemap unreadable
 * there); *run: the pages from p, up to `last`, of that kind (at least 1). Entries read for
 * earlier ranges are used again: a page that came in since (read through the kernel, a zero
 * page) holds nothing. */
static int page_kind(uint64_t p, uint64_t last, uint64_t *run)
{
	if (p < pm_first || p >= pm_first + pm_n) {
		uint64_t upto = pm_upto > last ? pm_upto : last;
		uint64_t n = upto - p + 1 < PM_WINDOW ? upto - p + 1 : PM_WINDOW;
		ssize_t got = pread(pagemap_fd, pm, n * 8, (off_t)(p * 8));
		if (got < 8) {
			pm_n = 0;
			*run = last - p + 1;
			return PAGE_OTHER;
		}
		pm_first = p;
		pm_n = (uint64_t)got / 8;
	}
	int kind = page_kind_of(pm[p - pm_first]);
	uint64_t q = p + 1;
	while (q <= last && q < pm_first + pm_n && page_kind_of(pm[q - pm_first]) == kind)
		q++;
	*run = q - p;
	return kind;
}

/* Reading in place. process_vm_readv() pins each page it reads, and pinning a page shared
 * with another process copies it first (since Linux 5.19: a fork child's pages are its
 * parent's until written), which was most of a bash subshell's scan. The process's own pages
 * (PAGE_ANON) of private mappings are read in place while no other thread of ours runs (all
 * stopped): nothing can unmap them meanwhile, and a page in memory is no guard page
 * (MADV_GUARD_INSTALL) and no missing userfaultfd page. A file's pages are not: another
 * process may truncate the file. */
static int in_place_ok;

static void scan_in_place(uint64_t lo, uint64_t hi, int definite)
{
	lo = (lo + 7) & ~7ull;
	while (lo + 8 <= hi && !all_reachable()) {
		uint64_t end = (lo | 4095) + 1 < hi ? (lo | 4095) + 1 : hi;  /* a page at a time */
		for (; lo + 8 <= end; lo += 8) {
			uint64_t v;
			memcpy(&v, (const void *)(uintptr_t)lo, 8);
			found(v, definite);
		}
	}
}

/* Every aligned word of [lo, hi) that may hold data: of private memory (shared says not),
 * the pages in memory or swapped out only. rw: the range is of a mapping /proc/self/maps
 * says is readable and writable (a root), which may be read in place; a block's memory may
 * have been made unreadable by the program (mprotect). Returns the bytes looked at. */
static uint64_t scan(uint64_t lo, uint64_t hi, int definite, int shared, int rw)
{
	int in_place = rw && in_place_ok && pagemap_fd >= 0;
	if (shared || pagemap_fd < 0 || (hi - lo < 2 * page_size && !in_place)) {
		scan_words(lo, hi, definite);
		return hi - lo;
	}
	uint64_t looked = 0;
	uint64_t last = (hi - 1) / page_size;
	while (lo < hi && !all_reachable()) {
		uint64_t run, p = lo / page_size;
		int kind = page_kind(p, last, &run);
		uint64_t end = (p + run) * page_size < hi ? (p + run) * page_size : hi;
		if (kind == PAGE_ANON && in_place) {
			scan_in_place(lo, end, definite);
			looked += end - lo;
		} else if (kind != PAGE_EMPTY) {
			scan_words(lo, end, definite);
			looked += end - lo;
		}
		lo = end;
	}
	return looked;
}

/* Scans the blocks to scan. Small ones are read many at a time (one process_vm_readv for
 * up to BATCH blocks); a batch that cannot be read whole is scanned block by block. */
#define BATCH 256
static void drain(void)
{
	static PROF_BULK struct iovec local[BATCH], remote[BATCH];
	static PROF_BULK uint64_t batch_buf[sizeof(buf) / 8];
	uint32_t ids[BATCH];
	if (all_reachable())
		nwork = 0;
	while (nwork) {
		size_t n = 0, bytes = 0;
		while (nwork && n < BATCH) {
			const struct block *b = &tab[work[nwork - 1]];
			size_t len = (size_t)b->size & ~(size_t)7;
			if (bytes + len > sizeof(batch_buf))
				break;
			ids[n] = work[--nwork];
			local[n] = (struct iovec){ (char *)batch_buf + bytes, len };
			remote[n] = (struct iovec){ (void *)(uintptr_t)b->ptr, len };
			bytes += len;
			n++;
		}
		if (n == 0) {  /* one block larger than the batch buffer */
			const struct block *b = &tab[work[--nwork]];
			scan(b->ptr, b->ptr + b->size, leader < 0 && b->state == REACHABLE, 0, 0);
			continue;
		}
		int whole = read_ranges(local, remote, n, bytes) == 0;
		for (size_t i = 0; i < n; i++) {
			const struct block *b = &tab[ids[i]];
			int definite = leader < 0 && b->state == REACHABLE;
			if (!whole) {
				scan(b->ptr, b->ptr + b->size, definite, 0, 0);
				continue;
			}
			const uint64_t *w = local[i].iov_base;
			for (size_t k = 0; k < local[i].iov_len / 8; k++)
				found(w[k], definite);
		}
	}
}

/* scan_root(), past libprof's own ranges before own[from]. */
static void scan_root_from(uint64_t lo, uint64_t hi, int shared, int rw, int from)
{
	for (int i = from; i < atomic_load(&nown) && i < OWN_MAX; i++)
		if (own[i].lo < hi && own[i].hi > lo) {
			if (own[i].lo > lo)
				scan_root_from(lo, own[i].lo, shared, rw, i + 1);
			if (own[i].hi < hi)
				scan_root_from(own[i].hi, hi, shared, rw, i + 1);
			return;
		}
	size_t k = blocks_upto(lo);
	if (k > 0 && tab[k - 1].ptr + tab[k - 1].size > lo)
		k--;
	while (lo < hi) {
		uint64_t end = k < nblocks && tab[k].ptr < hi ? tab[k].ptr : hi;
		if (end > lo)
			root_bytes += scan(lo, end, 1, shared, rw);
		if (k >= nblocks || tab[k].ptr >= hi)
			return;
		if (tab[k].ptr + tab[k].size > lo)
			lo = tab[k].ptr + tab[k].size;
		k++;
	}
}

/* A root range (of a shared mapping, or not): what is neither libprof's own nor a live
 * block. rw: a readable and writable mapping that may be read in place (scan()). */
static void scan_root(uint64_t lo, uint64_t hi, int shared, int rw)
{
	pm_upto = (hi - 1) / page_size;
	scan_root_from(lo, hi, shared, rw, 0);
	pm_upto = 0;
}

/* ---- the other threads: stopped while the scan runs -------------------------------------- */

/* As memcheck does, the scan looks at a thread's stack only above its stack pointer, where
 * its registers are saved too. Each other thread is sent a signal whose handler notes where
 * its stack is live (a local of its own, just below the signal frame that holds the
 * registers) and waits there, so the heap also holds still. A thread that does not answer
 * in time (the signal blocked) has its whole stack scanned.
 *
 * The threads stay stopped until the process ends (exit_group() takes them): let go, a
 * thread asleep in poll() or nanosleep() would see EINTR and run on while the process
 * exits, which it would not do unprofiled. What the exiting thread does after the scan
 * takes no lock a stopped thread may hold (the loader's: modules are rescanned before), but
 * the records may need more file: if a stopped thread was extending it, all are let go. */
#define STOP_MAX 1024
#define STOP_WAIT_MS 200
static PROF_BULK _Atomic uintptr_t stopped_sp[STOP_MAX];
static _Atomic int stop_slots, stop_ready, stop_release;

static void stop_handler(int sig)
{
	(void)sig;
	int saved = errno;
	volatile uintptr_t here = 0;
	int i = atomic_fetch_add(&stop_slots, 1);
	if (i < STOP_MAX)
		atomic_store(&stopped_sp[i], (uintptr_t)&here);
	atomic_fetch_add(&stop_ready, 1);
	while (!atomic_load(&stop_release))
		syscall(SYS_futex, &stop_release, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	errno = saved;  /* only where they were let go: see release_others() */
}

/* A signal the program leaves alone, or 0. */
static int stop_signal(struct sigaction *old)
{
	for (int sig = SIGRTMAX - 2; sig > SIGRTMIN + 4; sig--)
		if (sigaction(sig, NULL, old) == 0 && old->sa_handler == SIG_DFL &&
		    !(old->sa_flags & SA_SIGINFO))
			return sig;
	return 0;
}

/* Whether thread tid blocks sig (it would not answer: its whole stack is scanned). */
static int blocks(pid_t tid, int sig)
{
	char path[64], text[2048];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	const char *b = strstr(text, "SigBlk:");
	return !b || (strtoull(b + 7, NULL, 16) >> (sig - 1) & 1);
}

/* Signals every other thread (sig 0: none), waiting up to STOP_WAIT_MS for them. Returns
 * whether some were not stopped (their stacks are then scanned whole). */
static int stop_others(int sig)
{
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 1;
	pid_t me = (pid_t)syscall(SYS_gettid), pid = getpid();
	int sent = 0, others = 0;
	char ents[4096];
	long n;
	while ((n = syscall(SYS_getdents64, dir, ents, sizeof(ents))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(ents + off);
			off += d->d_reclen;
			pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
			others += tid > 0 && tid != me;
			if (sig && tid > 0 && tid != me && !blocks(tid, sig) &&
			    syscall(SYS_tgkill, pid, tid, sig) == 0)
				sent++;
		}
	}
	close(dir);
	struct timespec ms = { 0, 1000000 };
	for (int waited = 0; atomic_load(&stop_ready) < sent && waited < STOP_WAIT_MS; waited++)
		nanosleep(&ms, NULL);
	return atomic_load(&stop_ready) < others;
}

/* Whether this thread is the process's only one: /proc/self/task links 2 + the threads. One
 * system call, where finding a signal and listing the threads took seven. */
static int alone(void)
{
	struct stat st;
	return stat("/proc/self/task", &st) == 0 && st.st_nlink == 3;
}

/* Lets the stopped threads go (only when one of them holds what the exiting thread needs).
 * The signal is then ignored, not given back its default action: one still pending (a
 * thread that blocked it meanwhile) is dropped rather than killing the exiting process. */
static void release_others(int sig)
{
	atomic_store(&stop_release, 1);
	syscall(SYS_futex, &stop_release, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	signal(sig, SIG_IGN);
}

/* Where the stack in [lo, hi) is live: the lowest stopped thread's mark in it, else lo. */
static uint64_t live_from(uint64_t lo, uint64_t hi)
{
	uint64_t from = hi;
	int n = atomic_load(&stop_slots);
	for (int i = 0; i < n && i < STOP_MAX; i++) {
		uint64_t sp = atomic_load(&stopped_sp[i]);
		if (sp >= lo && sp < hi && sp < from)
			from = sp;
	}
	return from < hi ? from : lo;
}

/* ---- roots: /proc/self/maps -------------------------------------------------------------- */

static uint64_t hex(const char **s)
{
	uint64_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (uint64_t)d;
	}
}

#define ARENA_ALIGN (64ull << 20)  /* glibc's thread arenas (heap_info first) */

/* A fork child's trace knows only the blocks the child allocated; the heap also holds its
 * parent's, live in the child too, and they may point to the child's (a subshell of bash
 * stores its new blocks in its parent's structures). So a fork child takes its heap for a
 * root, outside its own blocks, as it takes any other memory it does not know: a block the
 * child lost can then look reached through a freed chunk's stale bytes, where otherwise
 * every block it stored in an inherited one was reported lost (memcheck knows every block
 * and finds none lost in such a child). An exec'd program starts over. */
static int forked, made_copies;

void prof_leak_fork_child(void)
{
	forked = 1;
	made_copies = 0;
}

void prof_leak_made_copy(void)
{
	__atomic_store_n(&made_copies, 1, __ATOMIC_RELAXED);
}

static int heap_mapping(uint64_t lo, uint64_t hi, const char *name)
{
	if (forked)
		return 0;
	if (!strncmp(name, "[heap]", 6))
		return 1;
	size_t k = blocks_upto(lo - 1);
	return lo % ARENA_ALIGN == 0 && !*name && k < nblocks && tab[k].ptr < hi;
}

/* A mapping of a device (a GPU's, /dev/mem): never read, as memcheck never does, since
 * reading it may hang or act on the device. /dev/zero is memory (a shared anonymous mapping
 * is named "/dev/zero (deleted)"), as are files under /dev that are not devices (/dev/shm),
 * and files deleted since ("... (deleted)": no stat), which device nodes are not. */
static int device_mapping(const char *name)
{
	if (strncmp(name, "/dev/", 5) || !strncmp(name, "/dev/zero", 9))
		return 0;
	struct stat st;
	return stat(name, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
}

static void scan_maps(uint64_t sp)
{
	char path[32];
	snprintf(path, sizeof(path), "%s/maps", prof_proc_self());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* text[at, have): read, not yet parsed. A read only when no whole line is left, and none
	 * after the end: each read of the file walks the mappings (once per line, it was a
	 * short process's scan's longest part). The kernel writes lines until the read's size
	 * is met, some 1 us each (a file's path is put together for each): the first read asks
	 * for 1 KiB, about the program's own mappings and its heap, which hold a short
	 * process's blocks (a bash subshell's 40 lines took 40 us, its first 10 now 10 us), and
	 * each read after it for twice as much as the one before. */
	static PROF_BULK char text[1 << 16];
	uint64_t libc_data_end = 0;  /* the end of libc's data, while the next mapping is read */
	size_t at = 0, have = 0, ask = 1024;
	int end = 0;
	while (!all_reachable()) {
		char *nl = memchr(text + at, '\n', have - at);
		if (!nl && !end && have - at < sizeof(text) - 1) {
			memmove(text, text + at, have - at);
			have -= at;
			at = 0;
			size_t room = sizeof(text) - 1 - have;
			ssize_t n = read(fd, text + have, ask < room ? ask : room);
			ask *= 2;
			if (n > 0)
				have += (size_t)n;
			else if (n == 0 || errno != EINTR)
				end = 1;
			continue;
		}
		if (!nl) {
			if (at == have)
				break;
			nl = text + have;  /* the last line, without its newline, or one too long */
		}
		*nl = 0;
		/* lo-hi perms offset dev inode   name */
		const char *s = text + at;
		uint64_t lo = hex(&s);
		s++;
		uint64_t hi = hex(&s);
		const char *perms = s + 1;
		const char *name = perms;
		for (int field = 0; field < 4 && *name; field++) {
			while (*name && *name != ' ')
				name++;
			while (*name == ' ')
				name++;
		}
		if (perms[0] == 'r' && perms[1] == 'w' && !device_mapping(name) &&
		    !heap_mapping(lo, hi, name)) {
			/* A thread's stack: the live part only (this thread's, a stopped one's). */
			lo = sp >= lo && sp < hi ? sp : live_from(lo, hi);
			/* libc's data and the bss right after it: glibc's arena. */
			size_t nlen = strlen(name);
			int libc = nlen >= 10 && !strcmp(name + nlen - 10, "/libc.so.6");
			in_libc_data = libc || (!*name && lo == libc_data_end);
			libc_data_end = libc ? hi : 0;
			/* A driver's mapping (anon_inode:...) may map device memory, which pagemap
			 * shows as the process's own: read only through the kernel. */
			scan_root(lo, hi, perms[3] == 's', strncmp(name, "anon_inode:", 11) != 0);
			in_libc_data = 0;
			drain();
		}
		at = (size_t)(nl - text) + (nl < text + have ? 1 : 0);
	}
	close(fd);
}

/* ---- the records ------------------------------------------------------------------------- */

#define PER_RECORD 1024

/* The blocks in one state, as LEAK_BLOCKS records of class cls; returns how many. */
static uint32_t write_class(struct prof_thread *th, unsigned cls, uint32_t state)
{
	size_t i = 0;
	uint32_t written = 0;
	for (;;) {
		uint32_t n = 0;
		size_t from = i;
		for (; i < nblocks && n < PER_RECORD; i++)
			n += tab[i].state == state;
		if (n == 0)
			return written;
		uint32_t size = (uint32_t)(sizeof(struct prof_rec_leak_blocks) + n * sizeof(uint64_t));
		struct prof_rec_leak_blocks *r = prof_reserve(th, size);
		if (!r)
			return written;
		r->count = n;
		r->pad = 0;
		for (uint32_t k = 0; from < i; from++)
			if (tab[from].state == state)
				r->ptrs[k++] = tab[from].ptr;
		prof_commit(r, PROF_REC_LEAK_BLOCKS, cls, size, prof_now());
		written += n;
	}
}

static __attribute__((noinline)) void scan_with_registers(uintptr_t stack_from)
{
	ucontext_t uc;  /* the registers the program's code may have left pointers in */
	getcontext(&uc);
	scan_root((uintptr_t)&uc, (uintptr_t)&uc + sizeof(uc), 0, 1);
	scan_maps(stack_from ? stack_from : (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

static void scan_all(uintptr_t stack_from)
{
	struct prof_thread *th = prof_thread_get();
	if (!prof_cfg.leak_check || !(prof_cfg.events & PROF_EV_ALLOC) || prof_writer_disabled())
		return;
	if (readers_ready() < 0) {
		prof_log("leak classes left out: this process's memory cannot be read without "
			 "risking a fault (process_vm_readv refused, no pipe)");
		return;
	}
	prof_dl_iterate(own_segments, NULL);
	if (read_trace() < 0)
		return;
	work_cap = 3 * nblocks + 16;
	if (!(work = scratch(work_cap * sizeof(*work))))
		return;
	heap_lo = nblocks ? tab[0].ptr : 0;
	heap_hi = 0;
	for (size_t i = 0; i < nblocks; i++)
		if (tab[i].ptr + tab[i].size + 1 > heap_hi)
			heap_hi = tab[i].ptr + tab[i].size + 1;
	page_filter_build();
	nreachable = 0;
	int sig = 0, whole_stacks = 0;
	if (!alone()) {
		struct sigaction old, sa = { .sa_handler = stop_handler, .sa_flags = SA_RESTART };
		sigemptyset(&sa.sa_mask);
		sig = stop_signal(&old);
		if (sig && sigaction(sig, &sa, NULL) < 0)
			sig = 0;
		whole_stacks = stop_others(sig);
	}
	in_place_ok = !whole_stacks;  /* every other thread is stopped (or there is none) */
	char path[48];
	snprintf(path, sizeof(path), "%s/pagemap", prof_proc_self());
	pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	pm_n = 0;
	skip_unwritten = forked && !__atomic_load_n(&made_copies, __ATOMIC_RELAXED);
	long ps = sysconf(_SC_PAGESIZE);
	page_size = ps > 0 ? (uint64_t)ps : 4096;
	scan_with_registers(stack_from);
	drain();
	/* Lost blocks: each not yet reached leads a clique of those it reaches (indirect), the
	 * oldest first. Lost structures point both ways (a connection and its parts): their
	 * first allocation leads, as under memcheck, whose own allocator puts the blocks in
	 * that order; in address order, which glibc's reuse of freed chunks decides, a part
	 * led as often, and the classes changed with the program's environment. */
	uint32_t *by_age = scratch((nblocks ? nblocks : 1) * sizeof(*by_age));
	size_t nlost = by_age ? 0 : nblocks;  /* by_age: the blocks not reached, oldest first */
	for (size_t i = 0; by_age && i < nblocks; i++)
		if (tab[i].state == UNREACHED)
			by_age[nlost++] = (uint32_t)i;
	if (by_age)
		heap_sort(by_age, nlost, sizeof(*by_age), allocated_after);
	for (size_t k = 0; k < nlost; k++) {
		size_t i = by_age ? by_age[k] : k;
		if (tab[i].state != UNREACHED)
			continue;
		leader = (ssize_t)i;
		push(i);
		drain();
	}
	leader = -1;
	if (pagemap_fd >= 0)
		close(pagemap_fd);
	pagemap_fd = -1;
	if (sig && prof_writer_growing())
		release_others(sig);
	uint32_t listed = write_class(th, PROF_LEAK_DEFINITE, UNREACHED) +
			  write_class(th, PROF_LEAK_INDIRECT, INDIRECT) +
			  write_class(th, PROF_LEAK_POSSIBLE, POSSIBLE);
	struct prof_rec_leak_scan *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->root_bytes = root_bytes;
	r->blocks = (uint32_t)nblocks;
	r->listed = listed;
	prof_commit(r, PROF_REC_LEAK_SCAN, whole_stacks ? PROF_LEAK_OTHER_THREADS : 0, sizeof(*r),
		    prof_now());
}

/* Runs in the exiting thread after libc freed its own blocks, before EXIT is written. */
void prof_leak_scan(uintptr_t stack_from)
{
	scan_all(stack_from);
	/* The pipe's descriptors are the program's again: a program that had closed its stdout
	 * and writes to it later must not write into our pipe. */
	if (mem_pipe[0] >= 0) {
		close(mem_pipe[0]);
		close(mem_pipe[1]);
		mem_pipe[0] = mem_pipe[1] = -1;
	}
}
