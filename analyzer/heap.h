/* The heap family: allocation calls and bytes, the peak and what each site held then,
 * temporaries, and what is still allocated at the end (leaks). heap.c folds ALLOC and FREE
 * records into struct heap_stats; heap_report.c shows it (report, leaks, flame, timeline). */
#ifndef PROF_ANALYZER_HEAP_H
#define PROF_ANALYZER_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "prof_format.h"
#include "series.h"
#include "u64map.h"

struct process;
struct family;

struct heap_site {
	/* What every allocation and free of the site touches, first and together. */
	uint64_t cur;         /* bytes it has allocated now */
	uint64_t calls, bytes, frees, temporary;
	int dirty;            /* cur changed since the last peak snapshot */
	uint32_t stack;       /* its allocation stack */
	uint64_t peak_bytes;  /* of the heap's peak, the bytes this site had allocated */
	uint64_t leaked_bytes, leaked_blocks;
	/* leaked, split by memcheck's classes (enum prof_leak_class) when the trace has them */
	uint64_t class_bytes[PROF_LEAK_CLASS_COUNT], class_blocks[PROF_LEAK_CLASS_COUNT];
	/* Sampled traces: calls and leaked_blocks are these estimates, rounded; sampled counts
	 * the allocations that were sampled (heap.c). */
	double est_calls, est_leaked_blocks;
	uint64_t sampled;
};

/* A live block: one slot of the open-addressing table of live blocks, keyed by address. */
struct live_block {
	uint64_t ptr, size;
	uint32_t site;        /* index into sites, + 1; 0 marks an empty slot, UINT32_MAX a
			       * block of no site (not sampled) */
	uint32_t pad;
};

struct heap_stats {
	uint64_t sample;      /* the trace's heap_sample (mean bytes per sample), 0: exact */
	uint64_t alloc_calls, free_calls, bytes_allocated, current, peak, peak_ns;
	uint64_t leaked_bytes, leaked_blocks, temporary, unmatched_frees;
	int snapped;          /* the sites' peak_bytes hold the current peak */
	uint32_t *dirty;      /* sites whose cur changed since the last snapshot */
	size_t ndirty, dirty_cap;
	/* Live blocks: linear probing, backward-shift deletion, keys mixed with a seed. */
	struct live_block *live;
	size_t live_cap, live_count;
	uint64_t live_seed;
	/* Sites, one per allocation stack: stack ids below SITE_DIRECT_MAX index site_of
	 * directly (writers number stacks densely from 1); others go through site_map. */
	struct heap_site *sites;
	size_t nsites, sites_cap;
	uint32_t *site_of;    /* stack id -> site index + 1 (0: none yet) */
	size_t site_of_cap;
	struct u64map site_map;  /* stack id -> site index (uint32_t), for large ids */
	uint64_t *last;       /* stream -> address of its latest allocation (temporaries) */
	size_t nlast;
	/* The leak check at exit (LEAK_SCAN, LEAK_BLOCKS): lost blocks' classes by address;
	 * every other block left is still reachable. */
	int leak_scanned;
	unsigned leak_flags;  /* PROF_LEAK_* of the scan */
	uint64_t leak_listed, leak_got;  /* lost addresses the scan wrote, and those read */
	struct u64map leak_class;  /* ptr -> enum prof_leak_class (uint32_t) */
	uint64_t class_bytes[PROF_LEAK_CLASS_COUNT], class_blocks[PROF_LEAK_CLASS_COUNT];
	struct series in_use;  /* bytes allocated over time, for charts */
	/* Sampled traces with tallies (PROF_FEAT_HEAP_TALLY): the blocks counted without records
	 * of their own, as HEAP_TALLY records sum them up: each counted thread's latest totals
	 * and bytes in use, and the bytes and blocks in use they make (current counts bytes at
	 * least 0). */
	int tallied;
	struct heap_tally_seen { uint64_t alloc_calls, alloc_bytes, free_calls; int64_t in_use; }
		*tally_seen;
	size_t ntally_seen;
	int64_t tally_bytes, tally_blocks;
	/* HEAP_CLASSES: per thread and size class (key serial << 16 | class), the latest counts
	 * (struct heap_class_sum), summed at the end into what is left per class (without any,
	 * a trace cut short, that comes from tally_bytes). */
	struct u64map classes;
};

void heap_init(void *state);  /* a struct heap_stats */
void heap_free(void *state);
/* flags: the ALLOC record's (PROF_ALLOC_SAMPLED matters when h->sample is set). */
int heap_alloc(struct heap_stats *h, uint32_t stream, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack, unsigned flags);
/* What a block of size bytes counts for at its site: 1 / (1 - exp(-size / sample)), or 1. */
double heap_sample_weight(const struct heap_stats *h, uint64_t size);
int heap_release(struct heap_stats *h, uint32_t stream, uint64_t ptr, int realloc_half);
/* A HEAP_TALLY record: thread serial's running totals of the blocks counted without records. */
int heap_tally(struct heap_stats *h, uint64_t t, uint32_t serial,
	       const struct prof_rec_heap_tally *r);
/* A HEAP_CLASSES record's classes, of thread serial. */
int heap_classes(struct heap_stats *h, uint32_t serial, const struct prof_heap_class *v, size_t n);
/* The leak check's records: LEAK_SCAN, then LEAK_BLOCKS lists (ptrs of one class). */
int heap_leak_scan(struct heap_stats *h, unsigned flags, uint32_t listed);
int heap_leak_class(struct heap_stats *h, unsigned cls, const uint64_t *ptrs, size_t n);
/* After the last record. exec'd: the image was replaced, so nothing it held is a leak. */
int heap_finish(struct heap_stats *h, int execd);

/* The site of an allocation stack, or NULL if it allocated nothing. */
const struct heap_site *heap_site_of(const struct heap_stats *h, uint32_t stack);

/* Summaries (summary.h): what the reports read of h, written and read back. */
struct sum_out;
struct sum_in;
int heap_sum_write(struct sum_out *w, const struct process *p, const void *state);
int heap_sum_read(struct sum_in *r, struct process *p, void *state);
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
uint64_t site_key_lost(const struct heap_site *s);  /* definitely + indirectly lost bytes */
/* Caller frees; NULL (with *n == 0) when out of memory. */
struct site_ref *heap_sites_sorted(const struct process *p,
				   uint64_t (*key)(const struct heap_site *), size_t *n);

#endif
