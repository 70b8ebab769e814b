/* Analysis of threads and lock contention (issue: locks): fed record by record by process_load(), reported by
 * report.c and flame.c through the functions below. */
#ifndef PROF_ANALYZER_LOCKS_H
#define PROF_ANALYZER_LOCKS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct process;
struct trace_event;

struct lock_stats {
	uint64_t records;  /* records of this family seen */
};

void locks_init(struct lock_stats *s);
void locks_free(struct lock_stats *s);
/* A record of this family: consume it (0), or -1 if out of memory. Other types: not called. */
int locks_on_record(struct process *p, const struct trace_event *ev);
/* After the last record. */
int locks_finish(struct process *p);
int locks_has_data(const struct process *p);
/* The SPEC's "locks" value of a process (always valid JSON, empty when no data). */
json_t *locks_json(struct process *p, size_t top);
void locks_print(FILE *out, struct process *p, size_t top, int frames);
/* Flame graph weights: calls emit(ctx, stack id, weight) per stack. by: NULL or --by value;
 * returns -1 (with a message printed) if `by` is not supported. */
int locks_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);

#endif
