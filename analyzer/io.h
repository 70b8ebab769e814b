/* Analysis of file and network I/O: per file or endpoint, calls, bytes and latency
 * percentiles (log-linear histograms, no per-event storage), per-process totals, the slowest
 * calls with their stacks, and time or bytes per stack for flame graphs. Fed record by record
 * by process_load(), reported by report.c and flame.c through the functions below. */
#ifndef PROF_ANALYZER_IO_H
#define PROF_ANALYZER_IO_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "u64map.h"

struct process;
struct family;
struct trace_event;

/* Latency histogram: exact below 8 ns, then 8 buckets per power of two (12.5% wide). */
#define IO_HIST_BUCKETS 496
struct io_hist {
	uint64_t count, max;
	uint64_t *buckets;  /* IO_HIST_BUCKETS counts, allocated at the first value */
};
unsigned io_hist_bucket(uint64_t v);
uint64_t io_hist_bucket_low(unsigned b);   /* smallest value of bucket b */
int io_hist_add(struct io_hist *h, uint64_t v);
int io_hist_merge(struct io_hist *dst, const struct io_hist *src);
/* The q-quantile (0 < q <= 1): the middle of the bucket holding it, never above max; the
 * max itself when the rank is the last value. */
uint64_t io_hist_quantile(const struct io_hist *h, double q);
void io_hist_free(struct io_hist *h);
/* A histogram in a summary (summary.h): its count, max and non-empty buckets. */
struct sum_out;
struct sum_in;
void io_hist_put(struct sum_out *w, const struct io_hist *h);
int io_hist_get(struct sum_in *r, struct io_hist *h);  /* 0, or -1 out of memory */

enum { IO_CLS_READ, IO_CLS_WRITE, IO_CLS_OTHER, IO_CLS_COUNT };

/* One file or endpoint (all ids that had its name). */
struct io_file {
	char *path;
	uint64_t opens, closes, reads, read_bytes, writes, write_bytes, others, errors, eof_reads;
	uint64_t mmaps, ids, time_ns, cls_time[IO_CLS_COUNT];
	uint64_t untimed;            /* source halves of sendfile/copy_file_range */
	uint64_t buffered;           /* stdio calls that only used the buffer (IO_BATCH): counted
				      * in reads or writes and their bytes, not timed */
	uint64_t ops[64];            /* calls per enum prof_io_op */
	struct io_hist hist[IO_CLS_COUNT];
	uint32_t first_stack;        /* where it was first opened, 0 if never */
	int32_t merged_into;         /* -1, or the file its stats moved to (renamed socket) */
};

/* A call among the slowest. */
struct io_slow {
	uint64_t duration_ns, time_ns;
	int64_t result;
	int32_t file;       /* index in files */
	uint32_t stack;
	uint16_t op;
};
#define IO_SLOWEST_KEPT 64

struct io_flame_weight {
	uint64_t time_ns, bytes;
};

struct io_stats {
	uint64_t records;            /* records of this family seen */
	struct io_file *files;
	size_t nfiles, files_cap;
	struct u64map by_name;       /* hash of the path -> file index (+ probing on collisions) */
	struct u64map ids;           /* file id -> file index (uint32_t) */
	struct io_slow slow[IO_SLOWEST_KEPT];  /* a min-heap on duration */
	size_t nslow;
	struct u64map by_stack;      /* stack id -> struct io_flame_weight */
	uint64_t calls;
};

extern const struct family io_family;
struct io_stats *io_of(const struct process *p);
void io_init(void *state);  /* a struct io_stats */
void io_free(void *state);
/* A record of this family: consume it (0), or -1 if out of memory. Other types: not called. */
int io_on_record(struct process *p, void *state, const struct trace_event *ev);
int io_has_data(const struct process *p);
/* The SPEC's "io" value of a process (always valid JSON, empty when no data). */
json_t *io_json(struct process *p, size_t top);
void io_print(FILE *out, struct process *p, size_t top, int frames);
/* Flame graph weights: calls emit(ctx, stack id, weight) per stack. by: NULL or "time"
 * (ns spent in I/O calls), or "bytes" (bytes read and written); returns -1 (with a message
 * printed) for anything else. */
int io_flame(struct process *p, const char *by,
	     void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx);

/* What a file name is: "file", "pipe", "socket", "tcp", "udp", "unix", "device", "other". */
const char *io_kind(const char *path);

#endif
