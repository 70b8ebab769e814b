/* Analysis of threads and lock contention: fed record by record by process_load(), reported
 * by report.c and flame.c through the functions below. */
#ifndef PROF_ANALYZER_LOCKS_H
#define PROF_ANALYZER_LOCKS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "u64map.h"

struct process;
struct family;
struct trace_event;

/* One lock (mutex, rwlock, spinlock, condition variable, barrier or semaphore), by address. */
struct lock_info {
	uint64_t addr;
	unsigned kind;               /* enum prof_lock_kind */
	/* From LOCK_WAIT records: exact, one per wait. */
	uint64_t waits, wait_ns, max_wait_ns, timeouts;
	uint32_t first_wait_stack;
	int have_wait_stack;
	/* From the latest LOCK_STATS snapshot (cumulative). */
	int have_stats;
	uint64_t acquisitions, stat_contended, stat_wait_ns, stat_max_wait_ns;
	uint64_t hold_ns, max_hold_ns, holds_timed, owner_changes, busy;
	uint32_t first_stack, hold_sample;
};

/* A lock's figures as reported: records and snapshots merged. */
struct lock_summary {
	uint64_t addr;
	const char *kind;
	uint64_t acquisitions, contended, wait_ns, avg_wait_ns, max_wait_ns;
	uint64_t hold_ns, avg_hold_ns, max_hold_ns, owner_changes, busy, timeouts;
	uint32_t stack;              /* first contended, else first used */
	int stack_contended;         /* 1 if stack is where it was first contended */
	uint32_t hold_sample;
	int counted;                 /* its counters were written (LOCK_STATS): acquisitions, owner
				      * changes and holds are known, not only its waits */
};

struct lock_stats {
	uint64_t records;            /* records of this family seen */
	struct u64map locks;         /* address -> struct lock_info */
	struct u64map wait_stacks;   /* stack id -> ns waited there (flame --kind lock) */
	uint64_t joins, detaches;
};

extern const struct family locks_family;
struct lock_stats *locks_of(const struct process *p);
void locks_init(void *state);  /* a struct lock_stats */
void locks_free(void *state);
/* A record of this family: consume it (0), or -1 if out of memory. Other types: not called. */
int locks_on_record(struct process *p, void *state, const struct trace_event *ev);
int locks_has_data(const struct process *p);
/* Every lock of p, merged, by total wait (then acquisitions, then address); *n set. Caller
 * frees; NULL with *n == 0 when there are none or memory ran out. */
struct lock_summary *locks_sorted(struct process *p, size_t *n);
/* The SPEC's "locks" value of a process (always valid JSON, empty when no data). */
json_t *locks_json(struct process *p, size_t top);
void locks_print(FILE *out, struct process *p, size_t top, int frames);
/* Flame graph weights: calls emit(ctx, stack id, weight) per stack. by: NULL or --by value;
 * returns -1 (with a message printed) if `by` is not supported. */
int locks_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);
#endif
