/* The heap family: allocation calls and bytes, the peak and what each site held then,
 * temporaries, and what is still allocated at the end (leaks). heap.c folds ALLOC and FREE
 * records into struct heap_stats; heap_report.c shows it (report, leaks, flame, timeline). */
#ifndef PROF_ANALYZER_HEAP_H
#define PROF_ANALYZER_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "u64map.h"

struct process;
struct family;

struct heap_site {
	uint64_t calls, bytes, frees, temporary, leaked_bytes, leaked_blocks;
	uint64_t peak_bytes;  /* of the heap's peak, the bytes this site had allocated */
	uint64_t cur;         /* bytes it has allocated now */
	int dirty;            /* cur changed since the last peak snapshot */
};

struct live_block {
	uint64_t size;
	uint32_t stack;
};

struct heap_stats {
	uint64_t alloc_calls, free_calls, bytes_allocated, current, peak, peak_ns;
	uint64_t leaked_bytes, leaked_blocks, temporary, unmatched_frees;
	int snapped;          /* the sites' peak_bytes hold the current peak */
	uint32_t *dirty;      /* stacks of the sites whose cur changed since the last snapshot */
	size_t ndirty, dirty_cap;
	struct u64map live;   /* address -> struct live_block */
	struct u64map sites;  /* stack id -> struct heap_site */
	uint64_t *last;       /* stream -> address of its latest allocation (temporaries) */
	size_t nlast;
};

void heap_init(void *state);  /* a struct heap_stats */
void heap_free(void *state);
int heap_alloc(struct heap_stats *h, uint32_t stream, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack);
int heap_release(struct heap_stats *h, uint32_t stream, uint64_t ptr, int realloc_half);
int heap_finish(struct heap_stats *h);

/* The heap of a loaded process. */
struct heap_stats *heap_of(const struct process *p);
extern const struct family heap_family;

/* A site and its stack id; sites sorted by a key, largest first (ties: bytes, stack id). */
struct site_ref {
	uint32_t stack;
	const struct heap_site *s;
};
uint64_t site_key_bytes(const struct heap_site *s);
uint64_t site_key_calls(const struct heap_site *s);
uint64_t site_key_leaked(const struct heap_site *s);
uint64_t site_key_temporary(const struct heap_site *s);
uint64_t site_key_peak(const struct heap_site *s);
/* Caller frees; NULL (with *n == 0) when out of memory. */
struct site_ref *heap_sites_sorted(const struct process *p,
				   uint64_t (*key)(const struct heap_site *), size_t *n);

#endif
