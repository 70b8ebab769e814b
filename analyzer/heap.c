/* Heap analysis: valgrind-compatible totals (every successful allocation call, every free of
 * a block we saw allocated), peak heap, when it happened and which sites held it,
 * temporaries, per-stack sites, and what is still allocated at the end (leaks).
 *
 * Which sites held the peak, in the same single pass: each site keeps its current bytes, and
 * the sites changed since the last snapshot are listed. Just before the heap drops from a new
 * peak, the listed sites copy their current bytes into peak_bytes; a site not listed has not
 * changed since the previous snapshot, so its peak_bytes already holds its share. Each
 * change is copied at most once: amortised O(1) per event.
 *
 * Sampled traces (header heap_sample = B, PROF_HEAP_SAMPLE): every allocation and free is
 * still recorded, so the process's totals, peak and leaks are exact; only the allocations
 * flagged PROF_ALLOC_SAMPLED have stacks. One of size s was sampled with probability
 * p = 1 - exp(-s/B), so its site counts it as 1/p calls and s/p bytes (the unbiased
 * estimate), in everything per site: calls, bytes, bytes at the peak, leaks. The others
 * belong to no site (SITE_NONE). Traces of the tallied sampled mode (PROF_FEAT_HEAP_TALLY)
 * have records only of sampled and large blocks; HEAP_TALLY records count the others, per
 * thread, with the sizes of their frees estimated: totals stay exact, the peak and what is
 * left at exit come within a fraction of a percent, temporaries are not known. */
#include "heap.h"
#include "grow.h"
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* HEAP_CLASSES counts of one thread and class (heap_stats.classes). */
struct heap_class_sum { uint64_t allocs, asked, frees; };

#define SITE_NONE UINT32_MAX  /* live_block.site of an unsampled block: live, of no site */

#define SITE_DIRECT_MAX (1u << 22)  /* stack ids indexed directly: 16 MiB of index at most */

void heap_init(void *state)
{
	struct heap_stats *h = state;
	*h = (struct heap_stats){ 0 };
	u64map_init(&h->site_map, sizeof(uint32_t));
	u64map_init(&h->leak_class, sizeof(uint32_t));
	u64map_init(&h->classes, sizeof(struct heap_class_sum));
	/* Addresses come from the trace: a seed it cannot know keeps probing short. */
	h->live_seed = u64_mix(u64_seed() ^ (uint64_t)(uintptr_t)h);
}

void heap_free(void *state)
{
	struct heap_stats *h = state;
	free(h->dirty);
	free(h->live);
	free(h->sites);
	free(h->site_of);
	u64map_free(&h->site_map);
	u64map_free(&h->leak_class);
	free(h->last);
	free(h->tally_seen);
	u64map_free(&h->classes);
}

/* ---- live blocks ------------------------------------------------------------------------ */

static inline size_t live_home(const struct heap_stats *h, uint64_t ptr)
{
	return (size_t)u64_mix(ptr ^ h->live_seed) & (h->live_cap - 1);
}

/* The slot holding ptr, or the empty slot where it would go. */
static inline struct live_block *live_find(const struct heap_stats *h, uint64_t ptr)
{
	size_t mask = h->live_cap - 1, i = live_home(h, ptr);
	while (h->live[i].site && h->live[i].ptr != ptr)
		i = (i + 1) & mask;
	return &h->live[i];
}

static int live_grow(struct heap_stats *h)
{
	size_t cap = h->live_cap ? h->live_cap * 2 : 1024;
	struct live_block *old = h->live, *v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	size_t old_cap = h->live_cap;
	h->live = v;
	h->live_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].site)
			*live_find(h, old[i].ptr) = old[i];
	free(old);
	return 0;
}

/* Removes the block in slot b, shifting later members of its probe run back. */
static void live_remove(struct heap_stats *h, struct live_block *b)
{
	size_t mask = h->live_cap - 1, i = (size_t)(b - h->live), j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!h->live[j].site)
			break;
		size_t home = live_home(h, h->live[j].ptr);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			h->live[i] = h->live[j];
			i = j;
		}
	}
	h->live[i].site = 0;
	h->live_count--;
}

/* ---- sites ------------------------------------------------------------------------------ */

/* The index of the site of stack, made if new; -1 when out of memory. */
static int64_t site_index(struct heap_stats *h, uint32_t stack)
{
	uint32_t *slot;
	if (stack < SITE_DIRECT_MAX) {
		if (stack < h->site_of_cap && h->site_of[stack])
			return h->site_of[stack] - 1;
		if (stack >= h->site_of_cap) {
			size_t cap = h->site_of_cap ? h->site_of_cap : 1024;
			while (cap <= stack)
				cap *= 2;
			uint32_t *v = realloc(h->site_of, cap * sizeof(*v));
			if (!v)
				return -1;
			memset(v + h->site_of_cap, 0, (cap - h->site_of_cap) * sizeof(*v));
			h->site_of = v;
			h->site_of_cap = cap;
		}
		slot = &h->site_of[stack];
	} else {
		int created;
		uint32_t *i = u64map_put(&h->site_map, stack, &created);
		if (!i)
			return -1;
		if (!created)
			return *i;
		*i = (uint32_t)h->nsites;  /* the index itself: this map has no "none" */
		slot = NULL;
	}
	if (GROW(h->sites, h->nsites, h->sites_cap) < 0) {
		if (!slot)
			u64map_del(&h->site_map, stack, NULL);
		return -1;
	}
	h->sites[h->nsites] = (struct heap_site){ .stack = stack };
	if (slot)
		*slot = (uint32_t)h->nsites + 1;
	return (int64_t)h->nsites++;
}

const struct heap_site *heap_site_of(const struct heap_stats *h, uint32_t stack)
{
	if (stack < SITE_DIRECT_MAX)
		return stack < h->site_of_cap && h->site_of[stack] ? &h->sites[h->site_of[stack] - 1]
								     : NULL;
	const uint32_t *i = u64map_get(&h->site_map, stack);
	return i ? &h->sites[*i] : NULL;
}

static int mark_dirty(struct heap_stats *h, struct heap_site *s)
{
	if (s->dirty)
		return 0;
	if (GROW(h->dirty, h->ndirty, h->dirty_cap) < 0)
		return -1;
	h->dirty[h->ndirty++] = (uint32_t)(s - h->sites);
	s->dirty = 1;
	return 0;
}

/* The heap is at a peak not yet recorded per site, and about to drop: record it. */
static void snapshot(struct heap_stats *h)
{
	for (size_t i = 0; i < h->ndirty; i++) {
		struct heap_site *s = &h->sites[h->dirty[i]];
		s->peak_bytes = s->cur;
		s->dirty = 0;
	}
	h->ndirty = 0;
	h->snapped = 1;
}

static void snapshot_if_at_peak(struct heap_stats *h)
{
	if (!h->snapped && h->current == h->peak)
		snapshot(h);
}

/* What a block of size bytes counts for at its site: 1/p (sampled traces) or 1. */
double heap_sample_weight(const struct heap_stats *h, uint64_t size)
{
	if (!h->sample)
		return 1.0;
	double p = -expm1(-(double)size / (double)h->sample);
	return p > 0 ? 1.0 / p : 1.0;
}

/* The bytes a block of size counts for at its site (size itself unless sampled). */
static uint64_t site_bytes(const struct heap_stats *h, uint64_t size)
{
	return h->sample ? (uint64_t)llround((double)size * heap_sample_weight(h, size)) : size;
}

static uint64_t site_blocks(const struct heap_stats *h, uint64_t size)
{
	return h->sample ? (uint64_t)llround(heap_sample_weight(h, size)) : 1;
}

/* A block leaves the live set: the site's current bytes and the heap's. *site: its site,
 * NULL for an unsampled block. -1 when out of memory. */
static int block_gone(struct heap_stats *h, const struct live_block *b, struct heap_site **site)
{
	snapshot_if_at_peak(h);
	h->current -= b->size;
	*site = NULL;
	if (b->site == SITE_NONE)
		return 0;
	struct heap_site *s = &h->sites[b->site - 1];
	s->cur -= site_bytes(h, b->size);
	*site = s;
	return mark_dirty(h, s);
}

/* The slot of a stream's latest allocation: streams are small numbers (thread serial * 2);
 * one past 2^24 (8 million threads) is a damaged trace's, not an array to allocate. */
static uint64_t *last_of(struct heap_stats *h, uint32_t stream)
{
	if (stream >= 1u << 24)
		return NULL;
	if (stream >= h->nlast) {
		size_t n = stream + 64u;
		uint64_t *v = realloc(h->last, n * sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = h->nlast; i < n; i++)
			v[i] = 0;
		h->last = v;
		h->nlast = n;
	}
	return &h->last[stream];
}

int heap_alloc(struct heap_stats *h, uint32_t stream, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack, unsigned flags)
{
	if ((h->live_count + 1) * 4 > h->live_cap * 3 && live_grow(h) < 0)
		return -1;
	int at_site = !h->sample || (flags & PROF_ALLOC_SAMPLED);
	int64_t si = at_site ? site_index(h, stack) : 0;
	uint64_t *last = last_of(h, stream);
	if (si < 0 || !last)
		return -1;
	struct live_block *b = live_find(h, ptr);
	if (b->site) {
		/* An address allocated twice without a free between: the free was not seen (lost). */
		struct heap_site *gone;
		if (block_gone(h, b, &gone) < 0)
			return -1;
	} else {
		h->live_count++;
	}
	*b = (struct live_block){ .ptr = ptr, .size = size,
				  .site = at_site ? (uint32_t)si + 1 : SITE_NONE };
	*last = ptr;
	if (at_site) {
		struct heap_site *s = &h->sites[si];
		if (h->sample) {
			s->est_calls += heap_sample_weight(h, size);
			s->calls = (uint64_t)llround(s->est_calls);
			s->sampled++;
		} else {
			s->calls++;
		}
		uint64_t sb = site_bytes(h, size);
		s->bytes += sb;
		s->cur += sb;
		if (mark_dirty(h, s) < 0)
			return -1;
	}
	h->alloc_calls++;
	h->bytes_allocated += size;
	h->current += size;
	if (h->current > h->peak) {
		h->peak = h->current;
		h->peak_ns = t;
		h->snapped = 0;
	}
	return 0;
}

/* A free, or the free half of a realloc. Frees of blocks we never saw allocated (made before
 * recording began, or lost) are counted apart, not as frees: valgrind would not see them either. */
int heap_release(struct heap_stats *h, uint32_t stream, uint64_t ptr, int realloc_half)
{
	struct live_block *b = h->live_cap ? live_find(h, ptr) : NULL;
	if (!b || !b->site) {
		h->unmatched_frees++;
		return 0;
	}
	h->free_calls++;
	struct heap_site *s;
	uint64_t size = b->size;
	int rc = block_gone(h, b, &s);
	live_remove(h, b);
	if (rc < 0)
		return -1;
	uint64_t w = site_blocks(h, size);
	if (s)
		s->frees += w;
	/* Temporary: freed by the thread that made it, before it allocated anything else (a
	 * realloc is a resize, not the end of the block's use). */
	uint64_t *last = stream < h->nlast ? &h->last[stream] : NULL;
	if (last && *last == ptr && !realloc_half && !h->tallied) {
		*last = 0;
		h->temporary++;
		if (s)
			s->temporary += w;
	}
	return 0;
}

static uint64_t grown(uint64_t *seen, uint64_t now)
{
	uint64_t d = now > *seen ? now - *seen : 0;  /* an exit-time tally may lag the thread's */
	if (now > *seen)
		*seen = now;
	return d;
}

static int64_t at_least_0(int64_t v)
{
	return v > 0 ? v : 0;
}

/* a + b, kept within +-2^62: the sum of many damaged tallies must not overflow. */
static int64_t sum_within(int64_t a, int64_t b)
{
	const int64_t most = (int64_t)1 << 62;
	int64_t v;
	if (__builtin_add_overflow(a, b, &v) || v > most || v < -most)
		return a;
	return v;
}

static void peak_check(struct heap_stats *h, uint64_t bytes, uint64_t t)
{
	if (bytes > h->peak) {
		h->peak = bytes;
		h->peak_ns = t;
		h->snapped = 0;
	}
}

/* A thread's tally: its counts grew by what this record adds to its last (an older one, written
 * at exit for a thread still running, adds nothing), its bytes in use are as it says, and in
 * between they went up to in_use_high: a peak the heap may have had then, as far as the other
 * threads' latest tallies tell. */
int heap_tally(struct heap_stats *h, uint64_t t, uint32_t serial,
	       const struct prof_rec_heap_tally *r)
{
	if (serial >= 1u << 24)  /* a damaged trace's, not an array to allocate */
		return 0;
	if (serial >= h->ntally_seen) {
		size_t n = serial + 64u;
		struct heap_tally_seen *v = realloc(h->tally_seen, n * sizeof(*v));
		if (!v)
			return -1;
		memset(v + h->ntally_seen, 0, (n - h->ntally_seen) * sizeof(*v));
		h->tally_seen = v;
		h->ntally_seen = n;
	}
	/* Counts a writer could reach stay far below 2^50; larger ones are a damaged trace's. */
	const uint64_t most = 1ull << 50;
	int64_t in_use = (int64_t)(r->alloc_bytes - r->free_bytes);
	if (r->alloc_calls >= most || r->free_calls >= most || r->alloc_bytes >= most ||
	    in_use >= (int64_t)most || in_use <= -(int64_t)most ||
	    r->in_use_high >= (int64_t)most || r->in_use_high <= -(int64_t)most)
		return 0;
	struct heap_tally_seen *seen = &h->tally_seen[serial];
	if (r->alloc_calls + r->free_calls < seen->alloc_calls + seen->free_calls)
		return 0;
	uint64_t da = grown(&seen->alloc_calls, r->alloc_calls);
	uint64_t df = grown(&seen->free_calls, r->free_calls);
	h->alloc_calls += da;
	h->bytes_allocated += grown(&seen->alloc_bytes, r->alloc_bytes);
	h->free_calls += df;
	h->tally_blocks = sum_within(h->tally_blocks, (int64_t)da - (int64_t)df);
	int64_t rise = r->in_use_high - seen->in_use;
	if (rise > 0) {
		int64_t high = at_least_0(sum_within(h->tally_bytes, rise)) - at_least_0(h->tally_bytes);
		if (h->current + (uint64_t)high > h->peak) {  /* a peak, with the sites as they are */
			snapshot_if_at_peak(h);
			h->peak = h->current + (uint64_t)high;
			h->peak_ns = t;
			snapshot(h);
		}
	}
	int64_t before = at_least_0(h->tally_bytes);
	h->tally_bytes = sum_within(h->tally_bytes, in_use - seen->in_use);
	seen->in_use = in_use;
	int64_t after = at_least_0(h->tally_bytes);
	if (after < before) {
		snapshot_if_at_peak(h);
		h->current -= (uint64_t)(before - after);
	} else {
		h->current += (uint64_t)(after - before);
		peak_check(h, h->current, t);
	}
	return 0;
}

#define CLASS_MAX 4096  /* writers have 262; more is a damaged trace */

static uint64_t most(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* A thread may say its classes more than once (at an exec that failed, then at its end): the
 * counts only grow, so each keeps its largest. */
int heap_classes(struct heap_stats *h, uint32_t serial, const struct prof_heap_class *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].cls >= CLASS_MAX || serial >= 1u << 24)
			continue;
		struct heap_class_sum *k = u64map_put(&h->classes, (uint64_t)serial << 16 | v[i].cls,
						      NULL);
		if (!k)
			return -1;
		k->allocs = most(k->allocs, v[i].allocs);
		k->asked = most(k->asked, v[i].asked);
		k->frees = most(k->frees, v[i].frees);
	}
	return 0;
}

/* The tallied bytes in use at the end: blocks left per size class (over all threads) times
 * the class's mean size asked; else the running estimate. */
static uint64_t tallied_at_end(const struct heap_stats *h)
{
	if (!h->classes.count)  /* cut short: no thread said its classes */
		return h->tally_bytes > 0 ? (uint64_t)h->tally_bytes : 0;
	struct heap_class_sum *sum = calloc(CLASS_MAX, sizeof(*sum));
	if (!sum)
		return h->tally_bytes > 0 ? (uint64_t)h->tally_bytes : 0;
	uint64_t key;
	void *val;
	for (size_t pos = 0; u64map_next(&h->classes, &pos, &key, &val);) {
		const struct heap_class_sum *k = val;
		struct heap_class_sum *c = &sum[key & 0xffff];
		c->allocs += k->allocs;
		c->asked += k->asked;
		c->frees += k->frees;
	}
	double bytes = 0;
	for (size_t c = 0; c < CLASS_MAX; c++)
		if (sum[c].allocs > sum[c].frees)
			bytes += (double)(sum[c].allocs - sum[c].frees) *
				 ((double)sum[c].asked / (double)sum[c].allocs);
	free(sum);
	return (uint64_t)llround(bytes);
}

int heap_leak_scan(struct heap_stats *h, unsigned flags, uint32_t listed)
{
	h->leak_scanned = 1;
	h->leak_flags = flags;
	h->leak_listed = listed;
	return 0;
}

int heap_leak_class(struct heap_stats *h, unsigned cls, const uint64_t *ptrs, size_t n)
{
	if (cls >= PROF_LEAK_CLASS_COUNT)
		return 0;
	h->leak_got += n;
	for (size_t i = 0; i < n; i++) {
		uint32_t *c = u64map_put(&h->leak_class, ptrs[i], NULL);
		if (!c)
			return -1;
		*c = cls;
	}
	return 0;
}

int heap_finish(struct heap_stats *h, int execd)
{
	snapshot_if_at_peak(h);  /* the process ended at its peak */
	if (execd)
		return 0;
	h->leaked_bytes += tallied_at_end(h);  /* counted: of no site, never classified */
	if (h->tally_blocks > 0)
		h->leaked_blocks += (uint64_t)h->tally_blocks;
	/* Some of the scan's lists were lost (no space left): its classes cannot be told. */
	if (h->leak_scanned && h->leak_got != h->leak_listed)
		h->leak_scanned = 0;
	for (size_t i = 0; i < h->live_cap; i++) {
		const struct live_block *b = &h->live[i];
		if (!b->site)
			continue;
		struct heap_site *s = b->site == SITE_NONE ? NULL : &h->sites[b->site - 1];
		uint64_t sb = site_bytes(h, b->size), sn = site_blocks(h, b->size);
		if (s) {
			s->leaked_bytes += sb;
			if (h->sample) {
				s->est_leaked_blocks += heap_sample_weight(h, b->size);
				s->leaked_blocks = (uint64_t)llround(s->est_leaked_blocks);
			} else {
				s->leaked_blocks++;
			}
		}
		h->leaked_bytes += b->size;
		h->leaked_blocks++;
		if (!h->leak_scanned)
			continue;
		const uint32_t *c = u64map_get(&h->leak_class, b->ptr);
		unsigned cls = c ? *c : PROF_LEAK_REACHABLE;
		if (s) {
			s->class_bytes[cls] += sb;
			s->class_blocks[cls] += sn;
		}
		h->class_bytes[cls] += b->size;
		h->class_blocks[cls]++;
	}
	return 0;
}

/* ---- summaries ---------------------------------------------------------------------------- */

int heap_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct heap_stats *h = state;
	(void)p;
	const uint64_t v[] = { h->alloc_calls, h->free_calls, h->bytes_allocated, h->current,
			       h->peak, h->peak_ns, h->leaked_bytes, h->leaked_blocks, h->temporary,
			       h->unmatched_frees, (uint64_t)h->snapped, (uint64_t)h->leak_scanned,
			       h->leak_flags, h->leak_listed, h->leak_got, h->live_count, h->sample,
			       (uint64_t)h->tallied };
	sum_put_fixed(w, v, sizeof(v));
	sum_put_fixed(w, h->class_bytes, sizeof(h->class_bytes));
	sum_put_fixed(w, h->class_blocks, sizeof(h->class_blocks));
	sum_put_fixed(w, &h->in_use, SERIES_SUM_BYTES);
	sum_put_u64(w, h->nsites);
	for (size_t i = 0; i < h->nsites; i++)
		sum_put_fixed(w, &h->sites[i], sizeof(h->sites[i]));
	return 0;
}

int heap_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct heap_stats *h = state;
	(void)p;
	uint64_t v[18];
	sum_get_fixed(r, v, sizeof(v));
	h->alloc_calls = v[0];
	h->free_calls = v[1];
	h->bytes_allocated = v[2];
	h->current = v[3];
	h->peak = v[4];
	h->peak_ns = v[5];
	h->leaked_bytes = v[6];
	h->leaked_blocks = v[7];
	h->temporary = v[8];
	h->unmatched_frees = v[9];
	h->snapped = (int)v[10];
	h->leak_scanned = (int)v[11];
	h->leak_flags = (unsigned)v[12];
	h->leak_listed = v[13];
	h->leak_got = v[14];
	h->live_count = v[15];  /* the blocks themselves are not kept: their sites have them */
	h->sample = v[16];      /* the sites' estimates are made already; this says they are */
	h->tallied = (int)v[17];
	sum_get_fixed(r, h->class_bytes, sizeof(h->class_bytes));
	sum_get_fixed(r, h->class_blocks, sizeof(h->class_blocks));
	sum_get_fixed(r, &h->in_use, SERIES_SUM_BYTES);
	h->in_use.last_hi = 0;
	if (h->in_use.n > SERIES_POINTS)
		r->bad = 1;
	size_t n = sum_get_count(r, sizeof(struct heap_site));
	for (size_t i = 0; i < n && !r->bad; i++) {
		struct heap_site s;
		sum_get_fixed(r, &s, sizeof(s));
		if (r->bad)
			break;
		if (heap_site_of(h, s.stack)) {  /* a stack twice: not what a writer makes */
			r->bad = 1;
			break;
		}
		int64_t k = site_index(h, s.stack);
		if (k < 0)
			return -1;
		s.dirty = 0;
		h->sites[k] = s;
	}
	return 0;
}
