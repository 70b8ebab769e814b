/* One profiled process, as the analyzer knows it after one streaming pass over its trace:
 * identity, threads, modules, interned stacks, and each analysis's results. */
#ifndef PROF_PROCESS_H
#define PROF_PROCESS_H

#include <stdint.h>
#include <stdio.h>

#include "prof_format.h"
#include "symbolize.h"
#include "u64map.h"
#include "locks.h"
#include "io.h"
#include "cuda.h"

struct thread_info {
	uint32_t serial, tid, parent_serial;
	char name[17];
	uint64_t start_ns, end_ns, cpu_ns;  /* start/end relative to the process start */
	int ended;
	uint32_t create_stack;              /* where pthread_create was called, 0 if unknown */
	uint64_t start_routine;             /* its start routine's address, 0 if unknown */
	/* Time blocked (locks.c): contended mutex/rwlock/spin/semaphore acquisitions, condition
	 * variable and barrier waits, pthread_join. */
	uint64_t lock_wait_ns, cond_wait_ns, join_wait_ns;
};

struct module_info {
	uint32_t id;
	char *path;
	uint64_t start, end, bias;
	uint8_t build_id[20];
	uint32_t build_id_len;
	int present;
};

struct stack_info {
	uint32_t depth;
	uint64_t *frames;   /* return addresses, innermost first */
	uint32_t *modules;  /* module id of each frame when the stack was recorded; ~0u unknown */
};

struct heap_site {
	uint64_t calls, bytes, frees, temporary, leaked_bytes, leaked_blocks;
	uint64_t peak_bytes;  /* of the heap's peak, the bytes this site had allocated */
	uint64_t cur;         /* bytes it has allocated now */
	int dirty;            /* cur changed since the last peak snapshot */
};

struct live_block {
	uint64_t size;
	uint32_t stack;
};

struct heap_stats {
	uint64_t alloc_calls, free_calls, bytes_allocated, current, peak, peak_ns;
	uint64_t leaked_bytes, leaked_blocks, temporary, unmatched_frees;
	int snapped;          /* the sites' peak_bytes hold the current peak */
	uint32_t *dirty;      /* stacks of the sites whose cur changed since the last snapshot */
	size_t ndirty, dirty_cap;
	struct u64map live;   /* address -> struct live_block */
	struct u64map sites;  /* stack id -> struct heap_site */
	uint64_t *last;       /* stream -> address of its latest allocation (temporaries) */
	size_t nlast;
};

enum exit_kind { EXIT_UNKNOWN, EXIT_CODE, EXIT_SIGNAL, EXIT_EXEC };

struct process {
	char *path;
	struct prof_file_header hdr;
	char *exe, *host;
	char **argv;
	uint32_t argc;
	uint64_t end_ns;            /* last record, relative to start */
	enum exit_kind exit_kind;
	int exit_value;
	char *exec_path;
	int complete;
	uint64_t lost_records;
	uint64_t unknown_records;   /* of types this prof does not know */

	struct thread_info *threads;
	size_t nthreads, threads_cap;
	struct module_info *modules;
	size_t nmodules, modules_cap;
	struct u64map stacks;       /* id -> struct stack_info */
	uint32_t *children;
	size_t nchildren, children_cap;

	struct heap_stats heap;
	struct lock_stats lock;     /* threads and locks: locks.c */
	struct io_stats io;         /* file and network I/O: io.c */
	struct cuda_stats cuda;     /* CUDA API, kernels, copies, device memory: cuda.c */
	struct symbolizer *sym;     /* made on first use */
};

/* Reads the whole trace at path. On error returns -1 with a one-line message in err. */
int process_load(const char *path, struct process *p, char *err, size_t errlen);
void process_free(struct process *p);

/* Loads every path; on error prints it and returns -1 (nothing to free). */
int processes_load(char **paths, size_t n, struct process **out);
void processes_free(struct process *ps, size_t n);

const struct stack_info *process_stack(const struct process *p, uint32_t id);
struct thread_info *process_thread(struct process *p, uint32_t serial);
/* The id of the module holding addr, ~0u if none: the latest one mapped there, among those
 * still loaded (loaded_only: as a stack is being recorded) or all the trace has seen. */
uint32_t process_module_at(const struct process *p, uint64_t addr, int loaded_only);

/* heap.c: the heap analysis, fed by process_load(). */
void heap_init(struct heap_stats *h);
void heap_free(struct heap_stats *h);
int heap_alloc(struct heap_stats *h, uint32_t stream, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack);
int heap_release(struct heap_stats *h, uint32_t stream, uint64_t ptr, int realloc_half);
int heap_finish(struct heap_stats *h);

/* stackfmt.c: symbolized stacks. Frames are expanded (inlined calls), innermost first. */
int stack_symbolize(struct process *p, uint32_t stack_id, struct sym_frame *out, int max);
/* One code address that is not a return address (a thread's start routine): its innermost
 * source frame. Returns 1, or 0 when nothing is known of it. */
int addr_symbolize(struct process *p, uint64_t addr, struct sym_frame *out);
void stack_print(FILE *out, struct process *p, uint32_t stack_id, int max_frames,
		 const char *indent);
/* "function" or "module+0xoffset": the label of a frame in flame graphs and summaries. */
const char *frame_label(const struct sym_frame *f, char *buf, size_t len);

/* format.c: numbers for people. */
const char *fmt_bytes(uint64_t n, char *buf, size_t len);   /* "1.50 MiB", "48 B" */
const char *fmt_count(uint64_t n, char *buf, size_t len);   /* "1,234,567" */
const char *fmt_ns(uint64_t ns, char *buf, size_t len);     /* "1.23 s", "45.6 us" */

#endif
