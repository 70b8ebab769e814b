/* prof report's Findings section (findings.c): rule-based, with evidence and a stack. */
#ifndef PROF_FINDINGS_H
#define PROF_FINDINGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct process;

/* A finding keeps what it shows of its process (the stack, symbolized), not the process. */
struct finding {
	uint32_t pid;
	const char *kind;     /* "lock_wait", "blocked_thread", "leak", "temporary_allocations", "io", "gpu_idle" */
	char summary[320];
	json_t *evidence;     /* the numbers the rule looked at */
	json_t *stack;        /* where to look, as SPEC.md's frames; [] if nowhere */
	char *stack_text;     /* the same as text shows it; NULL if nowhere */
};

struct findings {
	struct finding *v;
	size_t n;
};

/* Every rule over process p, its findings added to f, their stacks with at most frames frames
 * in text. 0, or -1 when out of memory. */
int findings_of(struct findings *f, struct process *p, int frames);
/* Every rule over every process, busiest processes first (2 frames a stack in text). */
int findings_collect(struct findings *f, struct process *ps, size_t n);
/* Moves every finding of from to the end of to (from left empty); -1 when out of memory. */
int findings_take(struct findings *to, struct findings *from);
void findings_free(struct findings *f);
/* SPEC.md's "findings": [{kind, process, summary, evidence, stack}]. */
json_t *findings_json(const struct findings *f);
/* At most max of them (the rest counted). */
void findings_print(FILE *out, const struct findings *f, size_t nprocs, size_t max);

#endif
