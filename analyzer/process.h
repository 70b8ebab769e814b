/* One profiled process, as the analyzer knows it after one streaming pass over its trace:
 * identity, threads, modules, interned stacks, and each analysis's results. */
#ifndef PROF_PROCESS_H
#define PROF_PROCESS_H

#include <stdint.h>
#include <stdio.h>

#include "prof_format.h"
#include "symbolize.h"
#include "u64map.h"
#include "family.h"

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
	/* New fields go last: a summary written before them holds shorter rows (summary.c). */
	uint64_t sampled_ns;  /* what its CPU samples stand for (cpu.c) */
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
	int leaf_exact;     /* frame 0 is the PC that ran (a CPU sample's), not a return address */
};

/* Modules sorted by start address, for lookups by address in O(log n). */
struct module_index {
	uint32_t *order;     /* indexes into process.modules, by start */
	uint64_t *max_end;   /* max_end[i]: the largest end among order[0..i] */
	size_t n, cap;
};

enum exit_kind { EXIT_UNKNOWN, EXIT_CODE, EXIT_SIGNAL, EXIT_EXEC };

/* A child's end as this process's wait call returned it (REAPED). */
struct reaped {
	uint32_t pid;
	int32_t status;  /* a wait status */
};

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
	uint64_t cut_bytes;         /* the file is this much shorter than its header says */
	uint64_t unknown_records;   /* of types this prof does not know */

	struct thread_info *threads;
	size_t nthreads, threads_cap;
	struct u64map thread_index; /* serial -> index in threads (uint32_t) */
	struct module_info *modules;
	size_t nmodules, modules_cap;
	struct module_index loaded, seen;  /* lookups by address: loaded now / ever */
	struct u64map stacks;       /* id -> struct stack_info */
	uint32_t *children;
	size_t nchildren, children_cap;
	struct reaped *reaped;
	size_t nreaped, reaped_cap;

	void *family_state[FAMILY_MAX];  /* each event family's analysis, as families[] */
	struct sum_symbols *symtab; /* read from a summary: its frames' symbols (no symbolizer) */
	struct symbolizer *sym;     /* made by the first stack, or on first use */
	size_t sym_modules;         /* modules[0..sym_modules) are declared to sym */
	struct py_codes *python;    /* Python code objects (PY_CODE), python.c; NULL if none */
};

/* A time window for the loads that follow: family records outside [from_ns, to_ns] (since
 * each process's start) are left out, as if the process had run only then; identity,
 * threads, modules and stacks are read whole. (0, UINT64_MAX): everything, the default. */
void process_window_set(uint64_t from_ns, uint64_t to_ns);

/* p empty, named path, each family's state made: 0, or -1 when out of memory. */
int process_init(struct process *p, const char *path);
/* Appends module m (path taken) to p, as a MODULE record would, unloaded when !m->present. */
int process_add_module(struct process *p, const struct module_info *m);

/* Reads the whole trace at path. On error returns -1 with a one-line message in err. */
int process_load(const char *path, struct process *p, char *err, size_t errlen);
void process_free(struct process *p);

/* fn(ctx, i) for every i in [0, n), on one worker per core (PROF_JOBS=N: N workers; 1: in
 * this thread only): each i must touch only its own data (one process). */
void process_parallel(size_t n, void (*fn)(void *ctx, size_t i), void *ctx);

/* Loads every path, one worker per trace (process_parallel()): a trace gives its process,
 * a summary (summary.h) the processes it holds; on error prints it and returns -1 (nothing
 * to free); *nout: how many processes. Each trace's process
 * is reduced to its summary's as soon as it is loaded (memory bounded by the summaries and
 * one trace per worker), unless processes_reduce_set(0) was called (commands that read the
 * records again: the sqlite export). */
int processes_load(char **paths, size_t n, struct process **out, size_t *nout);
/* The same, one process at a time: fn(ctx, p, at) on the worker that loaded p, as soon as it
 * is loaded (and reduced); fn takes what p holds (process_free() it, or keep a copy of the
 * struct). at: p's place in the inputs, to put them back in their order: what is loaded at a
 * time (a trace, or a piece of a summary: summary_pieces()) numbered in the order of the
 * paths, and of the pieces in a summary (a piece holding more than one process hands them
 * over in their order, on one worker). Memory: one process per worker, and what fn keeps. *count
 * (unless count is NULL) is set before the first call: how many processes the paths hold (a
 * trace one, a summary those in it), for fn to know whether it sees one process or a run.
 * The errors and warnings of processes_load(), once every path was tried: 0, or -1 after the
 * message. */
int processes_each(char **paths, size_t n, size_t *count,
		   void (*fn)(void *ctx, struct process *p, size_t at), void *ctx);
void processes_reduce_set(int on);
/* What the warning about a truncated trace says is done with it: "reporting" (what it holds),
 * unless set. */
void processes_doing_set(const char *what);
/* Summaries refused from now on, with a message saying that `why` ("prof export --format
 * sqlite") needs the traces. */
void processes_need_traces(const char *why);
void processes_free(struct process *ps, size_t n);
/* A process's CPU time: its threads' (those that ended: the others have none). */
uint64_t process_cpu_ns(const struct process *p);
/* The work a process did, from its CPU time and its lifetime: the CPU time, else the
 * lifetime / 1000. */
static inline uint64_t process_work(uint64_t cpu_ns, uint64_t end_ns)
{
	return cpu_ns ? cpu_ns : end_ns / 1000;
}
/* The processes, busiest (most work) first: text reports of runs with many processes (a
 * shell, a launcher) lead with those that did the work. Caller frees the array; NULL when out
 * of memory. */
struct process **processes_by_work(struct process *ps, size_t n);
/* Where a process comes in a run's output, for the commands that keep only this of it
 * (cmd_each()): in the order the processes started, as processes_load() gives them (then by
 * pid, then by `at`, its place in the inputs), or busiest first, as processes_by_work(). */
struct proc_order {
	uint64_t start_ns, work;
	uint32_t pid;
	size_t at;
};
struct proc_order proc_order_of(const struct process *p, size_t at);
int proc_order_by_start(const struct proc_order *a, const struct proc_order *b);
int proc_order_by_work(const struct proc_order *a, const struct proc_order *b);

const struct stack_info *process_stack(const struct process *p, uint32_t id);
struct thread_info *process_thread(struct process *p, uint32_t serial);
/* A thread's CPU time: its clock's figure where it ended, else (killed, or still running when
 * the trace was cut) what its CPU samples stand for; never more than it lived in the trace. */
uint64_t thread_cpu_ns(const struct process *p, const struct thread_info *t);
/* The id of the module holding addr, ~0u if none: the latest one mapped there, among those
 * still loaded (loaded_only: as a stack is being recorded) or all the trace has seen. */
uint32_t process_module_at(const struct process *p, uint64_t addr, int loaded_only);

/* A record time relative to the process start (0 if before it). */
uint64_t process_rel_time(const struct process *p, uint64_t t);

/* The state of family f in p (made by process_load()). */
void *process_family_state(const struct process *p, const struct family *f);

/* A symbolizer for a process: one another process is done with (kept with the files it
 * opened, see process.c), else a new one; process_free() hands it back. */
struct symbolizer *process_sym_take(void);

#endif
