/* prof report's Findings section (findings.c): rule-based, with evidence and a stack. */
#ifndef PROF_FINDINGS_H
#define PROF_FINDINGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct process;

struct finding {
	struct process *p;
	const char *kind;     /* "lock_wait", "blocked_thread", "leak", "temporary_allocations", "io", "gpu_idle" */
	char summary[320];
	json_t *evidence;     /* the numbers the rule looked at */
	uint32_t stack;       /* where to look, 0 if none */
};

struct findings {
	struct finding *v;
	size_t n;
};

/* Every rule over every process, busiest processes first. */
int findings_collect(struct findings *f, struct process *ps, size_t n);
void findings_free(struct findings *f);
/* SPEC.md's "findings": [{kind, process, summary, evidence, stack}]. */
json_t *findings_json(const struct findings *f);
/* At most max of them (the rest counted). */
void findings_print(FILE *out, const struct findings *f, size_t nprocs, int frames, size_t max);

#endif
