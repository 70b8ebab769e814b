/* Analysis of CUDA activity (API calls, kernels, copies, device memory, NVTX): fed record by
 * record by process_load(), reported by report.c, leaks.c, flame.c and `prof kernels`.
 *
 * Durations are summarised in log-linear histograms (64 buckets per power of two, so a median
 * is within 1.6% of the true one) with exact count, min, max, mean and stddev; rows with at
 * most CUDA_EXACT values keep them all and report the exact median. */
#ifndef PROF_ANALYZER_CUDA_H
#define PROF_ANALYZER_CUDA_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_format.h"
#include "u64map.h"

struct process;
struct family;
struct trace_event;

#define CUDA_EXACT 64
struct cuda_hist {
	uint64_t n, min, max;
	double sum, sumsq;
	uint64_t exact[CUDA_EXACT];
	uint32_t *buckets;  /* allocated once n passes CUDA_EXACT */
};
int cuda_hist_add(struct cuda_hist *h, uint64_t v);
uint64_t cuda_hist_median(const struct cuda_hist *h);
uint64_t cuda_hist_stddev(const struct cuda_hist *h);
void cuda_hist_free(struct cuda_hist *h);

struct cuda_api_row {
	uint32_t name;
	unsigned layer;
	uint64_t errors;
	struct cuda_hist h;
};

struct cuda_kernel_row {
	uint32_t name;           /* CUDA_NAME id (0: unknown) */
	int graph;
	uint32_t grid[3], block[3];
	uint64_t launches;
	unsigned timing;         /* best source seen: enum prof_cuda_timing */
	struct cuda_hist h;      /* GPU durations of the timed launches */
};

struct cuda_copy_row {
	uint64_t count, bytes, timed;
	unsigned timing;
	struct cuda_hist h;
};

struct cuda_nvtx_row {
	char *message;
	uint32_t domain;
	unsigned kind;
	struct cuda_hist h;
};

struct cuda_gpu_ev {
	uint64_t corr, start, end, bytes;
	uint32_t name, grid[3], block[3];
	uint16_t activity, copy_kind;
	uint8_t timing, cupti_corr;
};

/* GPU activity is joined to its call as the records stream in, so memory follows what is
 * still outstanding (cuda.c explains what is kept per correlation id and when it goes). */
struct cuda_stats {
	uint64_t records;  /* records of this family seen */
	struct u64map names;     /* id -> struct cuda_name_ent */
	struct u64map api;       /* name id -> struct cuda_api_row */
	struct u64map open;      /* stream -> struct cuda_open: the call in progress per thread */
	struct u64map open_corr; /* corr -> stream, for the calls in open */
	struct u64map waiting;   /* corr -> struct cuda_wait: counted, awaiting GPU activity */
	struct u64map pend_ours; /* corr -> struct cuda_pend: GPU activity before its call closed */
	struct u64map pend_cupti; /* CUPTI corr -> struct cuda_pend: before its CUDA_XCORR */
	struct u64map xcorr;     /* CUPTI corr -> struct cuda_xc */
	uint64_t now;            /* latest record time seen */
	uint64_t wait_seq, pend_seq, xcorr_seq;
	uint64_t npend;          /* GPU records in pend_ours and pend_cupti */
	size_t open_limit, pend_limit;
	uint64_t pending_peak;   /* most entries held at once in the maps above but names, api */
	uint64_t expired;        /* calls and GPU records let go by the bounds (cuda.c) */
	/* device memory */
	struct u64map live;      /* ptr -> struct cuda_block */
	uint64_t alloc_calls, free_calls, bytes_allocated, current, peak, peak_ns;
	uint64_t leaked_bytes, leaked_blocks;
	uint64_t last_free_ptr, last_free_corr;
	/* NVTX */
	struct u64map nvtx;      /* hash(domain, message) -> struct cuda_nvtx_row */
	/* timing */
	unsigned timing;
	char *timing_detail;
	int have_state;
	/* kernel rows, filled while loading, sorted by cuda_finish() */
	struct cuda_kernel_row *kernels;
	size_t nkernels, kernels_cap;
	struct u64map kernel_index; /* hash(name, graph, grid, block) -> row index */
	uint64_t kernel_ns;      /* all timed kernel time */
	struct cuda_copy_row copy[PROF_CUDA_COPY_KIND_COUNT];
	struct u64map gpu_by_stack; /* launching stack -> GPU ns */
	struct u64map leak_sites;   /* stack -> struct cuda_leak_site */
	uint64_t correlated;        /* driver calls made inside a runtime call */
	uint64_t api_ns;
	struct u64map thread_api;   /* stream -> ns in API calls (uint64_t) */
};

extern const struct family cuda_family;
struct cuda_stats *cuda_of(const struct process *p);
void cuda_init(void *state);  /* a struct cuda_stats */
void cuda_free(void *state);
/* A record of this family (types 60-89): consume it (0), or -1 if out of memory. */
int cuda_on_record(struct process *p, void *state, const struct trace_event *ev);
int cuda_finish(struct process *p);
int cuda_has_data(const struct process *p);
/* Name of an interned id ("" if unknown); kernel names demangled where they are mangled. */
const char *cuda_name_str(const struct process *p, uint32_t id);
const char *cuda_kernel_name(const struct process *p, const struct cuda_kernel_row *k);
const char *cuda_timing_str(unsigned timing);
/* The SPEC's "cuda" value of a process (always all its keys, empty when no data). */
json_t *cuda_json(struct process *p, size_t top);
json_t *cuda_kernels_json(struct process *p, size_t top);
void cuda_print(FILE *out, struct process *p, size_t top, int frames);
void cuda_kernels_print(FILE *out, struct process *p, size_t top);
/* Device memory still allocated at exit, for `prof leaks`: JSON entries appended to leaks
 * (same shape as host ones, "kind": "device"), and the text records. */
struct leak_view;
void cuda_leaks_json(struct process *p, json_t *proc, json_t *leaks, const struct leak_view *view);
void cuda_leaks_print(FILE *out, struct process *p, const struct leak_view *view);
/* Summaries (summary.h): what the reports read of the state after cuda_finish(). */
struct sum_out;
struct sum_in;
int cuda_sum_write(struct sum_out *w, const struct process *p, const void *state);
int cuda_sum_read(struct sum_in *r, struct process *p, void *state);
/* Flame graph weights: GPU time caused by each launching CPU stack. */
int cuda_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);

#endif
