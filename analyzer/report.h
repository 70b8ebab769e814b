/* What the report, leaks and flame commands share: sorted heap sites and JSON pieces. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <jansson.h>
#include "process.h"

struct site_ref {
	uint32_t stack;
	const struct heap_site *s;
};

uint64_t site_key_bytes(const struct heap_site *s);
uint64_t site_key_calls(const struct heap_site *s);
uint64_t site_key_leaked(const struct heap_site *s);
uint64_t site_key_temporary(const struct heap_site *s);
uint64_t site_key_peak(const struct heap_site *s);

/* All heap sites of p, largest key first (ties: bytes, then stack id). Caller frees. */
struct site_ref *heap_sites_sorted(const struct process *p,
				   uint64_t (*key)(const struct heap_site *), size_t *n);

/* A JSON string that is always valid: bytes that are not UTF-8 become '?'. */
json_t *jstr(const char *s);
/* A symbolized stack as SPEC.md's list of frames, innermost first. */
json_t *stack_json(struct process *p, uint32_t stack_id);
json_t *process_json(struct process *p, size_t top);

#endif
