/* The libprof trace format, the part every event family builds on: file and chunk headers
 * and the record prefix. prof_format.h includes it with every family's header; the whole
 * format is the contract between libprof.so (writer) and prof (reader).
 *
 * A trace file is one process. Layout (all integers little-endian, fixed width):
 *
 *   [file header: struct prof_file_header, then its string area, header_size bytes in all]
 *   [zero padding up to data_offset]
 *   [chunk 0][chunk 1] ...                     each chunk_size bytes, at data_offset + i*chunk_size
 *
 * With PROF_FEAT_CHUNK_RUNS (what libprof writes) chunk_size is a unit of 1 KiB and a chunk is
 * a run of one or more units whose header (struct prof_chunk_header_run) says how many.
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
 * trace cut short by SIGKILL ends. Format 2 adds short ALLOC and FREE records (16 and 8 bytes,
 * deltas within a chunk; prof_short.h), marked by bit 15 of their first word, committed the
 * same way. See shared/FORMAT.md for the rules a reader must enforce.
 */
#ifndef PROF_FMT_BASE_H
#define PROF_FMT_BASE_H

#include <stdint.h>
#include <stddef.h>

#define PROF_MAGIC 0x3143525446524f50ULL          /* "PROFTRC1" read as a little-endian u64 */
#define PROF_MAGIC_SWAPPED 0x504f524654524331ULL  /* the same bytes written big-endian */
#define PROF_FORMAT_VERSION 2      /* what this code writes; it reads 1 and 2 */
#define PROF_FORMAT_MIN_VERSION 2  /* oldest version a reader must understand to read our files:
				    * 2 for short records (PROF_FEAT_SHORT_RECORDS) */

#define PROF_CHUNK_MAGIC 0x4b4e4843u  /* "CHNK" */
#define PROF_DEFAULT_CHUNK_SIZE (4u * 1024u)  /* the chunk size of files without PROF_FEAT_CHUNK_RUNS */
#define PROF_RUN_UNIT (1u * 1024u)            /* the unit libprof writes (PROF_FEAT_CHUNK_RUNS) */
#define PROF_MAX_STACK_DEPTH 256

/* Feature bits: the low 32 are "required" (a reader that does not know one must refuse the
 * file); the high 32 are informational and may be ignored. */
#define PROF_FEAT_REQUIRED_MASK 0x00000000ffffffffULL
/* chunk_size is a unit (a power of two from 1024); a chunk is a run of one or more consecutive
 * units starting with a struct prof_chunk_header_run that says how many. Without the bit,
 * every chunk is one chunk_size (>= 4096) with a struct prof_chunk_header. */
#define PROF_FEAT_CHUNK_RUNS 0x1ULL
/* Format 2: ALLOC and FREE may be short records (prof_short.h), 16 and 8 bytes, whose first
 * word has bit 15 set. Records stay 8-byte aligned and committed by their first word. */
#define PROF_FEAT_SHORT_RECORDS 0x2ULL
/* Sampled heap (heap_sample set): allocations that were neither sampled nor large, and their
 * frees, have no ALLOC or FREE records; HEAP_TALLY records count them. A reader that does not
 * add those counts up would get every heap total wrong, so the bit is required. */
#define PROF_FEAT_HEAP_TALLY 0x4ULL
/* Stacks may be STACK_TAIL records (their outer frames those of an earlier stack): a reader
 * that skipped them would lose those stacks, so the bit is required. */
#define PROF_FEAT_STACK_TAILS 0x8ULL
/* LOCK_WAIT may be a short record too (prof_short.h, kinds 32-43): a reader that took them
 * for corrupt ones would refuse the file, so the bit is required. */
#define PROF_FEAT_SHORT_LOCK_WAITS 0x10ULL
/* IO_CALL may be a short record too (prof_short.h, kinds 48-97): required, as above. */
#define PROF_FEAT_SHORT_IO_CALLS 0x20ULL
/* CUDA_LAUNCH and CUDA_GPU may be short records too (prof_short.h, kinds 104-127): required,
 * as above. */
#define PROF_FEAT_SHORT_CUDA 0x40ULL
#define PROF_FEAT_KNOWN_REQUIRED (PROF_FEAT_CHUNK_RUNS | PROF_FEAT_SHORT_RECORDS | \
				  PROF_FEAT_HEAP_TALLY | PROF_FEAT_STACK_TAILS | \
				  PROF_FEAT_SHORT_LOCK_WAITS | PROF_FEAT_SHORT_IO_CALLS | \
				  PROF_FEAT_SHORT_CUDA)

/* Event families selectable with PROF_EVENTS; the header records which were enabled. */
#define PROF_EVENT_FAMILIES(X) \
	X(ALLOC, "alloc", 0)   \
	X(LOCK, "lock", 1)     \
	X(THREAD, "thread", 2) \
	X(IO, "io", 3)         \
	X(CUDA, "cuda", 4)     \
	X(CPU, "cpu", 5)       \
	X(DB, "db", 6)         \
	X(HTTP, "http", 7)     \
	X(MPI, "mpi", 8)
enum {
#define PROF_X(name, str, bit) PROF_EV_##name = 1u << (bit),
	PROF_EVENT_FAMILIES(PROF_X)
#undef PROF_X
	PROF_EV_ALL = (1u << 9) - 1
};

/* Where the process is; the writer updates header.state in place. */
enum prof_state {
	PROF_STATE_RUNNING = 0,
	PROF_STATE_EXITED = 1,   /* normal exit, EXIT record written */
	PROF_STATE_EXECED = 2,   /* replaced by execve, EXEC record written */
	PROF_STATE_DISABLED = 3, /* the writer switched itself off (disk full, ...) */
};

/* How the writer read the trace clock (header.clock_source). Record times are ns on clock_id
 * either way: with the TSC the writer converts ticks to ns itself (calibrated against clock_id
 * at start, re-anchored as it runs), so readers never convert. 0 in format-1 files. */
enum prof_clock_source {
	PROF_CLOCK_SRC_CLOCK_GETTIME = 0,  /* clock_gettime(clock_id) */
	PROF_CLOCK_SRC_TSC = 1,            /* an invariant TSC (rdtsc), tsc_hz ticks per second */
};

struct prof_file_header {
	uint64_t magic;           /* PROF_MAGIC */
	uint16_t version;         /* PROF_FORMAT_VERSION of the writer */
	uint16_t min_version;     /* a reader older than this must refuse the file */
	uint32_t header_size;     /* bytes of header incl. string area; readers skip what they don't know */
	uint64_t features;        /* PROF_FEAT_* */
	uint32_t chunk_size;      /* power of two, >= 4096; the unit (>= 1024) with PROF_FEAT_CHUNK_RUNS */
	uint32_t data_offset;     /* offset of chunk 0, multiple of 4096, >= header_size */
	uint64_t chunks_claimed;  /* chunks (units, with PROF_FEAT_CHUNK_RUNS) handed out so far */
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
	uint32_t heap_sample;        /* PROF_HEAP_SAMPLE: mean bytes between sampled allocations
				      * (only those flagged PROF_ALLOC_SAMPLED have stacks); 0:
				      * every allocation has its stack */
	uint64_t lost_records;       /* records dropped for want of space, summed at the end */
	uint32_t clock_source;       /* enum prof_clock_source: how the writer read clock_id */
	uint32_t reserved1;
	uint64_t tsc_hz;             /* PROF_CLOCK_SRC_TSC: the TSC rate calibrated at start */
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct prof_file_header) == 144, "header layout is part of the format");

struct prof_chunk_header {
	uint32_t magic;   /* PROF_CHUNK_MAGIC; 0 = chunk claimed but never written */
	uint32_t stream;  /* thread serial * 2, +1 for the thread's signal-handler stream */
	uint32_t seq;     /* chunk number within the stream, from 0 */
	uint32_t tid;     /* kernel thread id of the writer */
};
_Static_assert(sizeof(struct prof_chunk_header) == 16, "chunk header layout is part of the format");

/* The chunk header of a PROF_FEAT_CHUNK_RUNS file: the same four fields, then the chunk's
 * length in units (1 or more; the next chunk header, or a zero unit, is `units` units further).
 * A writer may shrink `units` of its current chunk (never grow it): it stores the smaller value
 * before the units it gives up can be handed to anyone else. Records start at offset 24. */
struct prof_chunk_header_run {
	uint32_t magic;   /* PROF_CHUNK_MAGIC; 0 = an unused unit */
	uint32_t stream;
	uint32_t seq;
	uint32_t tid;
	uint32_t units;   /* units this chunk spans, header included */
	uint32_t reserved;  /* 0 */
};
_Static_assert(sizeof(struct prof_chunk_header_run) == 24, "chunk header layout is part of the format");
_Static_assert(offsetof(struct prof_chunk_header_run, units) == sizeof(struct prof_chunk_header),
	       "a run header begins as a chunk header does");

/* The prefix of every record. size counts the prefix, is a multiple of 8, and is >= 16. */
struct prof_rec {
	uint16_t type;
	uint16_t flags;
	uint32_t size;
	uint64_t time;  /* ns on header.clock_id */
};
_Static_assert(sizeof(struct prof_rec) == 16, "record prefix layout is part of the format");

static inline uint32_t prof_align8(uint32_t n) { return (n + 7u) & ~7u; }

#endif
