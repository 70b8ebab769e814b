/* The libprof trace format: the whole contract between libprof.so (writer) and prof (reader).
 * prof_fmt_base.h has the file layout and the record prefix; this header adds the core
 * records (process, threads, modules, stacks, heap) and gathers every event family's header
 * (prof_fmt_<family>.h) into the lists that readers use: names, sizes, string fields. */
#ifndef PROF_FORMAT_H
#define PROF_FORMAT_H

#include "prof_fmt_base.h"
#include "prof_fmt_lock.h"
#include "prof_fmt_io.h"
#include "prof_fmt_cuda.h"
#include "prof_fmt_cpu.h"
#include "prof_fmt_db.h"
#include "prof_fmt_http.h"
#include "prof_fmt_mpi.h"
#include "prof_fmt_py.h"

/* Record types: X(NAME, value, payload struct). Values never change once released. Each
 * event family has its own list and range: core 1-19, threads and locks 20-39, I/O 40-59,
 * CUDA 60-89, CPU sampling 90-99, databases 100-109, HTTP 110-119, MPI 120-129. A family's list lives in its own header (prof_fmt_*.h). */
#define PROF_CORE_RECORD_TYPES(X)                       \
	X(PAD, 1, prof_rec_pad)                         \
	X(LOST, 2, prof_rec_lost)                       \
	X(MODULE, 3, prof_rec_module)                   \
	X(MODULE_UNLOAD, 4, prof_rec_module_unload)     \
	X(STACK, 5, prof_rec_stack)                     \
	X(THREAD_START, 6, prof_rec_thread_start)       \
	X(THREAD_END, 7, prof_rec_thread_end)           \
	X(ALLOC, 8, prof_rec_alloc)                     \
	X(FREE, 9, prof_rec_free)                       \
	X(EXIT, 10, prof_rec_exit)                      \
	X(EXEC, 11, prof_rec_exec)                      \
	X(FORK, 12, prof_rec_fork)                      \
	X(LEAK_SCAN, 13, prof_rec_leak_scan)            \
	X(LEAK_BLOCKS, 14, prof_rec_leak_blocks)        \
	X(HEAP_TALLY, 15, prof_rec_heap_tally)          \
	X(HEAP_CLASSES, 16, prof_rec_heap_classes)      \
	X(STACK_TAIL, 17, prof_rec_stack_tail)          \
	X(REAPED, 18, prof_rec_reaped)                  \
	X(PY_CODE, 19, prof_rec_py_code)

/* The core range; within it, ALLOC and FREE belong to the heap family. */
#define PROF_CORE_TYPE_FIRST 1
#define PROF_CORE_TYPE_LAST 19
#define PROF_HEAP_TYPE_FIRST 8
#define PROF_HEAP_TYPE_LAST 9
/* The heap family's second range: the leak classes written at exit, and the tallies of the
 * sampled mode. */
#define PROF_LEAK_TYPE_FIRST 13
#define PROF_LEAK_TYPE_LAST 16

#define PROF_RECORD_TYPES(X) \
	PROF_CORE_RECORD_TYPES(X) PROF_LOCK_RECORD_TYPES(X) PROF_IO_RECORD_TYPES(X) \
	PROF_CUDA_RECORD_TYPES(X) PROF_CPU_RECORD_TYPES(X) PROF_DB_RECORD_TYPES(X) \
	PROF_HTTP_RECORD_TYPES(X) PROF_MPI_RECORD_TYPES(X)

enum prof_rec_type {
#define PROF_X(name, value, st) PROF_REC_##name = (value),
	PROF_RECORD_TYPES(PROF_X)
#undef PROF_X
};

_Static_assert(PROF_REC_CUDA_API == 61, "prof_cuda_launch_api() writes CUDA_API as 61");
_Static_assert(PROF_REC_ALLOC == PROF_HEAP_TYPE_FIRST && PROF_REC_FREE == PROF_HEAP_TYPE_LAST,
	       "the heap family's records are ALLOC and FREE");

/* PAD: filler, no payload. */
struct prof_rec_pad { struct prof_rec h; };

/* LOST: this stream dropped `records` records (no space) just before this one. */
struct prof_rec_lost { struct prof_rec h; uint64_t records; };

/* MODULE: a mapped ELF object. Addresses in [start, end) belong to it; file offset of an
 * address a is a - bias. path is NUL-terminated, padded to 8. */
struct prof_rec_module {
	struct prof_rec h;
	uint64_t start, end, bias;
	uint32_t id;           /* process-unique module id */
	uint32_t build_id_len; /* 0..20 bytes valid in build_id */
	uint8_t build_id[24];
	char path[];
};

struct prof_rec_module_unload { struct prof_rec h; uint32_t id; uint32_t pad; };

/* STACK: interns a call stack. Frames are return addresses, innermost first (frame 0 is the
 * caller of the hooked function), except that frame 0 of a CPU_SAMPLE's stack is the PC that
 * was running (prof_fmt_cpu.h). Stack id 0 means "no stack". */
struct prof_rec_stack {
	struct prof_rec h;
	uint32_t id;
	uint32_t depth;
	uint64_t frames[];
};

/* STACK_TAIL (files with PROF_FEAT_STACK_TAILS): interns a stack that ends as an earlier one
 * of the same thread does, written before it in the same stream: its frames are frames[0..depth)
 * (its own, innermost first) followed by the last `shared` frames of stack `parent`. Deep
 * stacks of one program differ near the top: this writes what differs. */
struct prof_rec_stack_tail {
	struct prof_rec h;
	uint32_t id;
	uint32_t depth;   /* frames of its own */
	uint32_t parent;  /* a STACK or STACK_TAIL id */
	uint32_t shared;  /* parent's outermost frames that follow; depth + shared <= 256 */
	uint64_t frames[];
};

/* THREAD_START: the stream's thread began recording. */
struct prof_rec_thread_start {
	struct prof_rec h;
	uint32_t serial;         /* thread serial, as in chunk streams */
	uint32_t tid;
	uint32_t parent_serial;  /* serial of the creating thread, or ~0u if unknown */
	uint32_t stack;          /* creating stack, 0 if unknown */
	uint64_t start_routine;  /* address of the start routine, 0 if unknown */
};

/* THREAD_END: the thread exited, or dies with the process: then the thread that ends the
 * process (exit, _exit, exec) writes one for each other thread still running, in its own
 * stream (serial says which). */
struct prof_rec_thread_end {
	struct prof_rec h;
	uint32_t serial;
	uint32_t tid;
	uint64_t cpu_ns;   /* CPU time the thread used while traced; 0 if unknown */
	char name[16];     /* comm at exit */
};

/* ALLOC flags: which function. A realloc that moved or resized a block is written as FREE
 * (flag PROF_FREE_REALLOC, time taken before the call) followed by ALLOC (PROF_ALLOC_REALLOC). */
enum prof_alloc_fn {
	PROF_ALLOC_MALLOC = 0, PROF_ALLOC_CALLOC, PROF_ALLOC_REALLOC, PROF_ALLOC_REALLOCARRAY,
	PROF_ALLOC_POSIX_MEMALIGN, PROF_ALLOC_ALIGNED_ALLOC, PROF_ALLOC_MEMALIGN, PROF_ALLOC_VALLOC,
	PROF_ALLOC_PVALLOC, PROF_ALLOC_FN_COUNT
};
/* In a trace whose header has heap_sample set, an allocation the sampler picked (its stack is
 * recorded) carries this flag; the others have stack 0. The function is flags & 0xff. */
#define PROF_ALLOC_SAMPLED 0x100u
#define PROF_ALLOC_FN_MASK 0xffu
struct prof_rec_alloc {
	struct prof_rec h;     /* flags: enum prof_alloc_fn, | PROF_ALLOC_SAMPLED */
	uint64_t ptr;
	uint64_t size;         /* bytes asked for */
	uint32_t stack;
	uint32_t pad;
};

#define PROF_FREE_REALLOC 1u  /* the free half of a realloc; not a free() call of its own */
struct prof_rec_free { struct prof_rec h; uint64_t ptr; };

/* EXIT: process exit. how: 0 exit status, 1 fatal signal (recorded by the handler), 2 _exit
 * status (no exit handlers ran: no leak scan; the end is the program's own all the same). */
struct prof_rec_exit { struct prof_rec h; uint32_t how; int32_t code; };

/* EXEC: the process image is about to be replaced. path NUL-terminated, padded to 8. */
struct prof_rec_exec { struct prof_rec h; char path[]; };

/* FORK: this process forked `child`. */
struct prof_rec_fork { struct prof_rec h; uint32_t child_pid; uint32_t pad; };

/* REAPED: a wait call of this process returned a child's end: its pid and the wait status
 * (WIFEXITED, WIFSIGNALED). A child killed by a signal writes no EXIT of its own; its parent
 * saw how it ended. */
struct prof_rec_reaped { struct prof_rec h; uint32_t child_pid; int32_t status; };

/* LEAK_SCAN: at exit, the blocks still allocated were classified as memcheck does (leak
 * check). It follows the LEAK_BLOCKS records that list the lost ones (`listed` addresses in
 * all); every other block allocated at exit is still reachable. A reader that did not get
 * `listed` addresses (records lost for want of space) treats the trace as unclassified. */
#define PROF_LEAK_OTHER_THREADS 1u  /* other threads ran: some stacks were scanned whole */
struct prof_rec_leak_scan {
	struct prof_rec h;     /* flags: PROF_LEAK_* */
	uint64_t root_bytes;   /* bytes of roots read (data segments, stacks, registers; not the
	                        * pages of private mappings that hold nothing: never touched;
	                        * none after every block was found reachable) */
	uint32_t blocks;       /* blocks allocated at exit, as the scan saw them */
	uint32_t listed;       /* addresses in the LEAK_BLOCKS records before it */
};

/* LEAK_BLOCKS: `count` blocks (their addresses) of one class. */
enum prof_leak_class {
	PROF_LEAK_REACHABLE = 0, PROF_LEAK_DEFINITE, PROF_LEAK_INDIRECT, PROF_LEAK_POSSIBLE,
	PROF_LEAK_CLASS_COUNT
};
struct prof_rec_leak_blocks {
	struct prof_rec h;     /* flags: enum prof_leak_class */
	uint32_t count;
	uint32_t pad;
	uint64_t ptrs[];
};

/* HEAP_TALLY (files with PROF_FEAT_HEAP_TALLY): what one thread allocated and freed without
 * records of its own (neither sampled nor of PROF_HEAP_LARGE bytes or more), as running totals
 * since the thread began; a reader adds what grew since that thread's previous tally. Each
 * thread writes one whenever its tallied bytes in use moved by some fraction of the heap,
 * when it ends, and at exit for every thread (records written by the exiting thread, so
 * `serial` is the thread counted, not necessarily the stream's). A free's size is not known
 * to the writer: free_bytes is the allocator's size of each block (malloc_usable_size) less
 * the rounding seen on the same thread's last allocation of that size, an estimate. */
#define PROF_HEAP_LARGE (16u * 1024u)  /* allocations of this many bytes or more have records */
struct prof_rec_heap_tally {
	struct prof_rec h;
	uint32_t serial;       /* the thread counted */
	uint32_t pad;
	uint64_t alloc_calls, alloc_bytes;  /* bytes asked for: exact */
	uint64_t free_calls, free_bytes;    /* free_bytes: estimated */
	int64_t in_use_high;  /* the most of alloc_bytes - free_bytes since the previous tally */
};

/* HEAP_CLASSES (with PROF_FEAT_HEAP_TALLY): a thread's last word on its tallied blocks, by
 * the allocator's size class (malloc_usable_size / 16; a writer's last class holds every
 * larger block), written when the thread ends, at exec and at exit, in as many records as
 * it takes (running totals: a reader keeps the largest of each thread's and class's counts).
 * With them a reader tells the bytes still in use at the end from the blocks still in use
 * per class (allocs - frees) times the class's mean size asked: off by little more than the
 * rounding of those blocks, whatever happened before. */
struct prof_heap_class {
	uint32_t cls;
	uint32_t pad;
	uint64_t allocs, asked, frees;  /* asked: the bytes those allocations asked for */
};
struct prof_rec_heap_classes {
	struct prof_rec h;
	uint32_t serial;  /* the thread counted */
	uint32_t count;
	struct prof_heap_class classes[];
};

/* Fixed payload size of each known type (records may be larger: newer writers append fields). */
static inline uint32_t prof_rec_min_size(unsigned type)
{
	switch (type) {
#define PROF_X(name, value, st) case value: return (uint32_t)sizeof(struct st);
		PROF_RECORD_TYPES(PROF_X)
#undef PROF_X
	default: return (uint32_t)sizeof(struct prof_rec);
	}
}

const char *prof_rec_type_name(unsigned type);          /* "ALLOC", ... or NULL if unknown */
const char *prof_alloc_fn_name(unsigned fn);            /* "malloc", ... or "?" */
unsigned prof_events_parse(const char *list, int *bad); /* "alloc,io" or "all" -> PROF_EV_* */

/* Records that end in a NUL-terminated string: Y(NAME, payload struct, field). Readers check
 * the NUL lies inside the record, so consumers may use the string as it is. */
#define PROF_STRING_RECORDS(Y) \
	Y(MODULE, prof_rec_module, path) Y(EXEC, prof_rec_exec, path) \
	PROF_LOCK_STRING_RECORDS(Y) PROF_IO_STRING_RECORDS(Y) PROF_CUDA_STRING_RECORDS(Y) \
	PROF_DB_STRING_RECORDS(Y) PROF_HTTP_STRING_RECORDS(Y) PROF_MPI_STRING_RECORDS(Y)

/* Offset of the trailing string of a record type, 0 if it has none. */
static inline uint32_t prof_rec_string_offset(unsigned type)
{
	switch (type) {
#define PROF_Y(name, st, field) case PROF_REC_##name: return (uint32_t)offsetof(struct st, field);
		PROF_STRING_RECORDS(PROF_Y)
#undef PROF_Y
	default:
		return 0;
	}
}

/* Name of that string's field ("path"), for messages. */
static inline const char *prof_rec_string_field(unsigned type)
{
	switch (type) {
#define PROF_Y(name, st, field) case PROF_REC_##name: return #field;
		PROF_STRING_RECORDS(PROF_Y)
#undef PROF_Y
	default:
		return "";
	}
}

static inline int prof_rec_known(unsigned type)
{
	switch (type) {
#define PROF_X(name, value, st) case value:
		PROF_RECORD_TYPES(PROF_X)
#undef PROF_X
		return 1;
	default:
		return 0;
	}
}

#endif
