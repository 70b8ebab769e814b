/* Heap analysis: valgrind-compatible totals (every successful allocation call, every free of
 * a block we saw allocated), peak heap and when it happened, temporaries, per-stack sites,
 * and what is still allocated at the end (leaks). */
#include "process.h"
#include "trace.h"

void heap_init(struct heap_stats *h)
{
	*h = (struct heap_stats){ 0 };
	u64map_init(&h->live, sizeof(struct live_block));
	u64map_init(&h->sites, sizeof(struct heap_site));
	u64map_init(&h->last, sizeof(uint64_t));
}

void heap_free(struct heap_stats *h)
{
	u64map_free(&h->live);
	u64map_free(&h->sites);
	u64map_free(&h->last);
}

int heap_alloc(struct heap_stats *h, uint32_t stream, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack)
{
	struct live_block old;
	/* An address allocated twice without a free between: the free was not seen (lost). */
	if (u64map_del(&h->live, ptr, &old))
		h->current -= old.size;
	struct live_block *b = u64map_put(&h->live, ptr, NULL);
	struct heap_site *s = u64map_put(&h->sites, stack, NULL);
	uint64_t *last = u64map_put(&h->last, stream, NULL);
	if (!b || !s || !last)
		return -1;
	b->size = size;
	b->stack = stack;
	*last = ptr;
	s->calls++;
	s->bytes += size;
	h->alloc_calls++;
	h->bytes_allocated += size;
	h->current += size;
	h->events++;
	if (h->current > h->peak) {
		h->peak = h->current;
		h->peak_ns = t;
		h->peak_event = h->events;
	}
	return 0;
}

/* A free, or the free half of a realloc. Frees of blocks we never saw allocated (made before
 * recording began, or lost) are counted apart, not as frees: valgrind would not see them either. */
int heap_release(struct heap_stats *h, uint32_t stream, uint64_t ptr, int realloc_half)
{
	struct live_block b;
	h->events++;
	if (!u64map_del(&h->live, ptr, &b)) {
		h->unmatched_frees++;
		return 0;
	}
	h->free_calls++;
	h->current -= b.size;
	struct heap_site *s = u64map_get(&h->sites, b.stack);
	if (s)
		s->frees++;
	/* Temporary: freed by the thread that made it, before it allocated anything else (a
	 * realloc is a resize, not the end of the block's use). */
	uint64_t *last = u64map_get(&h->last, stream);
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

/* What was live at the peak is known only once the peak is known: replay the heap records up
 * to the one that set it (the same records, in the same order), then charge each block still
 * live to its site. */
int heap_peak_pass(struct process *p, struct trace *t, char *err, size_t errlen)
{
	if (p->heap.peak_event == 0)
		return 0;
	struct heap_stats replay;
	heap_init(&replay);
	trace_rewind(t);
	struct trace_event ev;
	int got, rc = 0;
	while (rc == 0 && replay.events < p->heap.peak_event &&
	       (got = trace_next(t, &ev, err, errlen)) > 0) {
		const struct prof_rec *h = ev.rec;
		if (h->type == PROF_REC_ALLOC) {
			const struct prof_rec_alloc *r = (const void *)h;
			rc = heap_alloc(&replay, ev.stream, 0, r->ptr, r->size, r->stack);
		} else if (h->type == PROF_REC_FREE) {
			rc = heap_release(&replay, ev.stream, ((const struct prof_rec_free *)h)->ptr,
					  (h->flags & PROF_FREE_REALLOC) != 0);
		}
	}
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (rc == 0 && u64map_next(&replay.live, &pos, &key, &val)) {
		const struct live_block *b = val;
		struct heap_site *s = u64map_get(&p->heap.sites, b->stack);
		if (s)
			s->peak_bytes += b->size;
	}
	heap_free(&replay);
	if (rc < 0)
		snprintf(err, errlen, "%s: out of memory", p->path);
	return rc;
}
