/* The libprof trace format: the whole contract between libprof.so (writer) and prof (reader).
 *
 * A trace file is one process. Layout (all integers little-endian, fixed width):
 *
 *   [file header: struct prof_file_header, then its string area, header_size bytes in all]
 *   [zero padding up to data_offset]
 *   [chunk 0][chunk 1] ...                     each chunk_size bytes, at data_offset + i*chunk_size
 *
 * Each thread claims whole chunks with one atomic add on header.chunks_claimed (no lock), and
 * fills them with records. A chunk starts with struct prof_chunk_header naming its stream (one
 * per thread, plus one per thread for records written from signal handlers) and its sequence
 * number within that stream; records within a stream are in time order, so a reader merges the
 * streams by timestamp in one pass. A chunk whose magic is zero was never used.
 *
 * Every record starts with struct prof_rec {type, flags, size, time} and is padded to 8 bytes,
 * so a reader skips types it does not know. A record is committed by storing its first 8 bytes
 * last (release order): a reader stops at the first record whose prefix is zero, which is how a
 * trace cut short by SIGKILL ends. See shared/FORMAT.md for the rules a reader must enforce.
 */
#ifndef PROF_FORMAT_H
#define PROF_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#define PROF_MAGIC 0x3143525446524f50ULL          /* "PROFTRC1" read as a little-endian u64 */
#define PROF_MAGIC_SWAPPED 0x504f524654524331ULL  /* the same bytes written big-endian */
#define PROF_FORMAT_VERSION 1      /* what this code writes and reads */
#define PROF_FORMAT_MIN_VERSION 1  /* oldest version a reader must understand to read our files */

#define PROF_CHUNK_MAGIC 0x4b4e4843u  /* "CHNK" */
#define PROF_DEFAULT_CHUNK_SIZE (4u * 1024u)  /* what libprof writes: small, so a short thread costs little */
#define PROF_MAX_STACK_DEPTH 256

/* Feature bits: the low 32 are "required" (a reader that does not know one must refuse the
 * file); the high 32 are informational and may be ignored. */
#define PROF_FEAT_REQUIRED_MASK 0x00000000ffffffffULL
#define PROF_FEAT_KNOWN_REQUIRED 0ULL

/* Event families selectable with PROF_EVENTS; the header records which were enabled. */
#define PROF_EVENT_FAMILIES(X) \
	X(ALLOC, "alloc", 0)   \
	X(LOCK, "lock", 1)     \
	X(THREAD, "thread", 2) \
	X(IO, "io", 3)         \
	X(CUDA, "cuda", 4)     \
	X(CPU, "cpu", 5)
enum {
#define PROF_X(name, str, bit) PROF_EV_##name = 1u << (bit),
	PROF_EVENT_FAMILIES(PROF_X)
#undef PROF_X
	PROF_EV_ALL = (1u << 6) - 1
};

/* Where the process is; the writer updates header.state in place. */
enum prof_state {
	PROF_STATE_RUNNING = 0,
	PROF_STATE_EXITED = 1,   /* normal exit, EXIT record written */
	PROF_STATE_EXECED = 2,   /* replaced by execve, EXEC record written */
	PROF_STATE_DISABLED = 3, /* the writer switched itself off (disk full, ...) */
};

struct prof_file_header {
	uint64_t magic;           /* PROF_MAGIC */
	uint16_t version;         /* PROF_FORMAT_VERSION of the writer */
	uint16_t min_version;     /* a reader older than this must refuse the file */
	uint32_t header_size;     /* bytes of header incl. string area; readers skip what they don't know */
	uint64_t features;        /* PROF_FEAT_* */
	uint32_t chunk_size;      /* power of two, >= 4096 */
	uint32_t data_offset;     /* offset of chunk 0, multiple of 4096, >= header_size */
	uint64_t chunks_claimed;  /* chunks handed out so far (atomic in the writer) */
	uint32_t pid;
	uint32_t ppid;
	uint64_t start_realtime_ns;  /* CLOCK_REALTIME at start, to show wall-clock dates */
	uint64_t start_ns;           /* trace clock at start; record times use the same clock */
	uint32_t clock_id;           /* the clock_gettime() clock of record times (CLOCK_MONOTONIC) */
	uint32_t state;              /* enum prof_state */
	uint32_t events;             /* PROF_EV_* enabled */
	uint32_t stack_depth;        /* PROF_STACK_DEPTH */
	int32_t rank;                /* MPI/Slurm rank, -1 if none */
	uint32_t argc;               /* argv strings in the string area (after exe and host) */
	uint32_t strings_offset;     /* from file start: exe\0 host\0 argv[0]\0 ... argv[argc-1]\0 */
	uint32_t strings_size;
	uint32_t cpu_hz;             /* CPU sampling frequency, 0 if off */
	uint32_t reserved0;
	uint64_t lost_records;       /* records dropped for want of space, summed at the end */
	uint64_t reserved[4];
};
_Static_assert(sizeof(struct prof_file_header) == 144, "header layout is part of the format");

struct prof_chunk_header {
	uint32_t magic;   /* PROF_CHUNK_MAGIC; 0 = chunk claimed but never written */
	uint32_t stream;  /* thread serial * 2, +1 for the thread's signal-handler stream */
	uint32_t seq;     /* chunk number within the stream, from 0 */
	uint32_t tid;     /* kernel thread id of the writer */
};
_Static_assert(sizeof(struct prof_chunk_header) == 16, "chunk header layout is part of the format");

/* The prefix of every record. size counts the prefix, is a multiple of 8, and is >= 16. */
struct prof_rec {
	uint16_t type;
	uint16_t flags;
	uint32_t size;
	uint64_t time;  /* ns on header.clock_id */
};
_Static_assert(sizeof(struct prof_rec) == 16, "record prefix layout is part of the format");

/* Record types: X(NAME, value, payload struct). Values never change once released. Each
 * event family has its own list and range: core 1-19, threads and locks 20-39, I/O 40-59,
 * CUDA 60-89, CPU sampling 90-99. A family's list lives in its own header (prof_fmt_*.h). */
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
	X(FORK, 12, prof_rec_fork)

#include "prof_fmt_lock.h"
#include "prof_fmt_io.h"
#include "prof_fmt_cuda.h"

#define PROF_RECORD_TYPES(X) \
	PROF_CORE_RECORD_TYPES(X) PROF_LOCK_RECORD_TYPES(X) PROF_IO_RECORD_TYPES(X) \
	PROF_CUDA_RECORD_TYPES(X)

enum prof_rec_type {
#define PROF_X(name, value, st) PROF_REC_##name = (value),
	PROF_RECORD_TYPES(PROF_X)
#undef PROF_X
};

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
 * caller of the hooked function). Stack id 0 means "no stack". */
struct prof_rec_stack {
	struct prof_rec h;
	uint32_t id;
	uint32_t depth;
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

/* THREAD_END: the thread exited. */
struct prof_rec_thread_end {
	struct prof_rec h;
	uint32_t serial;
	uint32_t tid;
	uint64_t cpu_ns;   /* CPU time the thread used */
	char name[16];     /* comm at exit */
};

/* ALLOC flags: which function. A realloc that moved or resized a block is written as FREE
 * (flag PROF_FREE_REALLOC, time taken before the call) followed by ALLOC (PROF_ALLOC_REALLOC). */
enum prof_alloc_fn {
	PROF_ALLOC_MALLOC = 0, PROF_ALLOC_CALLOC, PROF_ALLOC_REALLOC, PROF_ALLOC_REALLOCARRAY,
	PROF_ALLOC_POSIX_MEMALIGN, PROF_ALLOC_ALIGNED_ALLOC, PROF_ALLOC_MEMALIGN, PROF_ALLOC_VALLOC,
	PROF_ALLOC_PVALLOC, PROF_ALLOC_FN_COUNT
};
struct prof_rec_alloc {
	struct prof_rec h;     /* flags: enum prof_alloc_fn */
	uint64_t ptr;
	uint64_t size;         /* bytes asked for */
	uint32_t stack;
	uint32_t pad;
};

#define PROF_FREE_REALLOC 1u  /* the free half of a realloc; not a free() call of its own */
struct prof_rec_free { struct prof_rec h; uint64_t ptr; };

/* EXIT: normal process exit. how: 0 exit status, 1 fatal signal (recorded by the handler). */
struct prof_rec_exit { struct prof_rec h; uint32_t how; int32_t code; };

/* EXEC: the process image is about to be replaced. path NUL-terminated, padded to 8. */
struct prof_rec_exec { struct prof_rec h; char path[]; };

/* FORK: this process forked `child`. */
struct prof_rec_fork { struct prof_rec h; uint32_t child_pid; uint32_t pad; };

/* The payload structs of the family headers included above. */
#include "prof_fmt_lock_structs.h"
#include "prof_fmt_io_structs.h"
#include "prof_fmt_cuda_structs.h"

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
	PROF_LOCK_STRING_RECORDS(Y) PROF_IO_STRING_RECORDS(Y) PROF_CUDA_STRING_RECORDS(Y)

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

static inline uint32_t prof_align8(uint32_t n) { return (n + 7u) & ~7u; }

#endif
