/* The Chrome trace-event writer behind `prof export --format chrome`: the events a family's
 * timeline hooks (family.h) write. Times are trace-clock ns, written in microseconds. */
#ifndef PROF_TIMELINE_H
#define PROF_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

struct timeline {
	FILE *out;
	int first;         /* no event written yet: no comma before the next */
	uint32_t pid;      /* of the process being exported */
	uint64_t min_ns;   /* I/O calls shorter than this are left out (--min-ns) */
	struct process *proc;  /* the process's model where a family's timeline_symbols; else NULL */
};

/* A JSON string: quotes, backslashes and control characters escaped; bytes that are not
 * printable ASCII become '?', so the output is valid JSON whatever the trace holds. */
void tl_string(FILE *out, const char *s);
double tl_us(uint64_t ns);

/* Starts an event object; the caller may add ",\"key\":..." fields, then tl_end(). */
void tl_begin(struct timeline *tl, const char *ph, const char *cat, uint32_t tid);
void tl_end(struct timeline *tl);
/* A complete ("X") event, left open for fields such as args: close it with tl_end(). */
void tl_complete(struct timeline *tl, const char *cat, uint32_t tid, const char *name,
		 uint64_t start, uint64_t dur);
/* An instant ("i") event; scope "t" thread, "p" process. Closed. */
void tl_instant(struct timeline *tl, const char *cat, uint32_t tid, const char *scope,
		const char *name, uint64_t ts);
/* Metadata: what is "process_name" or "thread_name". Closed. */
void tl_metadata(struct timeline *tl, const char *what, uint32_t tid, const char *name);
/* A counter ("C") sample named name with one field. Closed. */
void tl_counter(struct timeline *tl, const char *name, uint64_t ts, const char *field,
		uint64_t value);

#endif
