/* Analysis of file and network I/O (issue: I/O): fed record by record by process_load(), reported by
 * report.c and flame.c through the functions below. */
#ifndef PROF_ANALYZER_IO_H
#define PROF_ANALYZER_IO_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct process;
struct trace_event;

struct io_stats {
	uint64_t records;  /* records of this family seen */
};

void io_init(struct io_stats *s);
void io_free(struct io_stats *s);
/* A record of this family: consume it (0), or -1 if out of memory. Other types: not called. */
int io_on_record(struct process *p, const struct trace_event *ev);
/* After the last record. */
int io_finish(struct process *p);
int io_has_data(const struct process *p);
/* The SPEC's "io" value of a process (always valid JSON, empty when no data). */
json_t *io_json(struct process *p, size_t top);
void io_print(FILE *out, struct process *p, size_t top, int frames);
/* Flame graph weights: calls emit(ctx, stack id, weight) per stack. by: NULL or --by value;
 * returns -1 (with a message printed) if `by` is not supported. */
int io_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);

#endif
