/* Analysis of CUDA activity (API calls, kernels, copies, device memory, NVTX): fed record by
 * record by process_load(), reported by report.c, leaks.c, flame.c and `prof kernels`. */
#ifndef PROF_ANALYZER_CUDA_H
#define PROF_ANALYZER_CUDA_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct process;
struct trace_event;

struct cuda_stats {
	uint64_t records;  /* records of this family seen */
};

void cuda_init(struct cuda_stats *s);
void cuda_free(struct cuda_stats *s);
/* A record of this family (types 60-89): consume it (0), or -1 if out of memory. */
int cuda_on_record(struct process *p, const struct trace_event *ev);
int cuda_finish(struct process *p);
int cuda_has_data(const struct process *p);
/* The SPEC's "cuda" value of a process (always all its keys, empty when no data). */
json_t *cuda_json(struct process *p, size_t top);
void cuda_print(FILE *out, struct process *p, size_t top, int frames);
/* Device memory still allocated at exit, for `prof leaks`: JSON entries appended to leaks
 * (same shape as host ones, "kind": "device"), and the text records. */
void cuda_leaks_json(struct process *p, json_t *leaks, size_t top);
void cuda_leaks_print(FILE *out, struct process *p, size_t top, int frames);
/* Flame graph weights: GPU time caused by each launching CPU stack. */
int cuda_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);

#endif
