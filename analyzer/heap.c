/* Heap analysis: valgrind-compatible totals (every successful allocation call, every free of
 * a block we saw allocated), peak heap, when it happened and which sites held it,
 * temporaries, per-stack sites, and what is still allocated at the end (leaks).
 *
 * Which sites held the peak, in the same single pass: each site keeps its current bytes, and
 * the sites changed since the last snapshot are listed. Just before the heap drops from a new
 * peak, the listed sites copy their current bytes into peak_bytes; a site not listed has not
 * changed since the previous snapshot, so its peak_bytes already holds its share. Each
 * change is copied at most once: amortised O(1) per event. */
#include "heap.h"

#include <stdlib.h>

void heap_init(void *state)
{
	struct heap_stats *h = state;
	*h = (struct heap_stats){ 0 };
	u64map_init(&h->live, sizeof(struct live_block));
	u64map_init(&h->sites, sizeof(struct heap_site));
}

void heap_free(void *state)
{
	struct heap_stats *h = state;
	free(h->dirty);
	u64map_free(&h->live);
	u64map_free(&h->sites);
	free(h->last);
}

static int mark_dirty(struct heap_stats *h, struct heap_site *s, uint32_t stack)
{
	if (s->dirty)
		return 0;
	if (h->ndirty == h->dirty_cap) {
		size_t ncap = h->dirty_cap ? h->dirty_cap * 2 : 256;
		uint32_t *d = realloc(h->dirty, ncap * sizeof(*d));
		if (!d)
			return -1;
		h->dirty = d;
		h->dirty_cap = ncap;
	}
	h->dirty[h->ndirty++] = stack;
	s->dirty = 1;
	return 0;
}

/* The heap is at a peak not yet recorded per site, and about to drop: record it. */
static void snapshot_if_at_peak(struct heap_stats *h)
{
	if (h->snapped || h->current != h->peak)
		return;
	for (size_t i = 0; i < h->ndirty; i++) {
		struct heap_site *s = u64map_get(&h->sites, h->dirty[i]);
		if (s) {
			s->peak_bytes = s->cur;
			s->dirty = 0;
		}
	}
	h->ndirty = 0;
	h->snapped = 1;
}

/* A block leaves the live set: the site's current bytes and the heap's. */
static int block_gone(struct heap_stats *h, const struct live_block *b, struct heap_site **out)
{
	snapshot_if_at_peak(h);
	h->current -= b->size;
	struct heap_site *s = u64map_get(&h->sites, b->stack);
	if (s) {
		s->cur -= b->size;
		if (mark_dirty(h, s, b->stack) < 0)
			return -1;
	}
	*out = s;
	return 0;
}

/* The slot of a stream's latest allocation: streams are small numbers (thread serial * 2). */
static uint64_t *last_of(struct heap_stats *h, uint32_t stream)
{
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
	       uint32_t stack)
{
	int created;
	struct live_block *b = u64map_put(&h->live, ptr, &created);
	if (!b)
		return -1;
	if (!created) {
		/* An address allocated twice without a free between: the free was not seen (lost). */
		struct live_block old = *b;
		struct heap_site *gone;
		if (block_gone(h, &old, &gone) < 0)
			return -1;
	}
	struct heap_site *s = u64map_put(&h->sites, stack, NULL);
	uint64_t *last = last_of(h, stream);
	if (!s || !last)
		return -1;
	b->size = size;
	b->stack = stack;
	*last = ptr;
	s->calls++;
	s->bytes += size;
	s->cur += size;
	if (mark_dirty(h, s, stack) < 0)
		return -1;
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
	struct live_block b;
	struct heap_site *s;
	if (!u64map_del(&h->live, ptr, &b)) {
		h->unmatched_frees++;
		return 0;
	}
	h->free_calls++;
	if (block_gone(h, &b, &s) < 0)
		return -1;
	if (s)
		s->frees++;
	/* Temporary: freed by the thread that made it, before it allocated anything else (a
	 * realloc is a resize, not the end of the block's use). */
	uint64_t *last = stream < h->nlast ? &h->last[stream] : NULL;
	if (last && *last == ptr && !realloc_half) {
		*last = 0;
		h->temporary++;
		if (s)
			s->temporary++;
	}
	return 0;
}

int heap_finish(struct heap_stats *h)
{
	snapshot_if_at_peak(h);  /* the process ended at its peak */
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&h->live, &pos, &key, &val)) {
		const struct live_block *b = val;
		struct heap_site *s = u64map_put(&h->sites, b->stack, NULL);
		if (!s)
			return -1;
		s->leaked_bytes += b->size;
		s->leaked_blocks++;
		h->leaked_bytes += b->size;
		h->leaked_blocks++;
	}
	return 0;
}
