/* tracegen: writes synthetic trace files for tests, valid ones and (with the patch knobs)
 * malformed ones. Test helper: on an I/O error or misuse it prints why and aborts.
 *
 *	struct tg *tg = tg_create();
 *	tg_stack(tg, 0, 100, 7, frames, 3);
 *	tg_alloc(tg, 0, 110, 0x1000, 64, 7);      stream 0, time 110 (ns, absolute)
 *	tg_free(tg, 2, 120, 0x1000);              stream 2 = second thread
 *	tg_exit(tg, 0, 130, 0, 0);
 *	tg_write(tg, path);
 *	tg_destroy(tg);
 *	tg_patch_header(path, chunk_size, 1000);  break a field afterwards
 *
 * Each stream gets chunks as it needs them, claimed in the order records are added (so chunks
 * of different streams interleave in the file as they do in a real trace), with seq 0, 1, ...
 * A record that does not fit in its stream's chunk goes to a new chunk; the rest of the old
 * chunk stays zero (which ends a chunk for the reader). Every record function returns the
 * record's byte offset in the file that tg_write() will produce. */
#ifndef PROF_TRACEGEN_H
#define PROF_TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "prof_format.h"

struct tg;

/* Defaults: a valid header, chunk_size 4096, data_offset 4096, pid 4242, ppid 1,
 * start_ns TG_START_NS, clock 1 (CLOCK_MONOTONIC), state EXITED, all events, stack_depth 64,
 * rank -1, exe "/bin/test", host "testhost", argv {"/bin/test", "--flag"}. */
#define TG_START_NS 1000000000ull
struct tg *tg_create(void);
void tg_destroy(struct tg *tg);

/* The header tg_write() writes: change any field before tg_write(). These are computed by
 * tg_write() and overwrite what is there: header_size, data_offset, chunks_claimed, argc,
 * strings_offset, strings_size (to break those, patch the file after tg_write()). Set
 * chunk_size here only before the first record. */
struct prof_file_header *tg_header(struct tg *tg);

void tg_set_exe(struct tg *tg, const char *exe);
void tg_set_host(struct tg *tg, const char *host);
void tg_set_argv(struct tg *tg, int argc, const char *const *argv);
/* Inserts n bytes (filled with 0xa5, as unknown fields of a newer writer) between the fixed
 * header and the string area; header_size grows by n. */
void tg_set_header_extra(struct tg *tg, uint32_t n);
/* The kernel tid written in this stream's chunk headers (default: pid + stream / 2). */
void tg_set_tid(struct tg *tg, uint32_t stream, uint32_t tid);

/* Any record: prefix {type, flags, size, time} then payload_len bytes of payload, size
 * rounded up to 8. payload may be NULL (zeros). */
uint64_t tg_rec(struct tg *tg, uint32_t stream, uint16_t type, uint16_t flags, uint64_t time,
		const void *payload, size_t payload_len);
/* len raw bytes appended to the stream as they are (no prefix added, no rounding): for
 * malformed records. len must be a multiple of 8 for later records to stay aligned. */
uint64_t tg_raw(struct tg *tg, uint32_t stream, const void *bytes, size_t len);

uint64_t tg_alloc(struct tg *tg, uint32_t stream, uint64_t time, uint64_t ptr, uint64_t size,
		  uint32_t stack);
uint64_t tg_alloc_fn(struct tg *tg, uint32_t stream, uint64_t time, enum prof_alloc_fn fn,
		     uint64_t ptr, uint64_t size, uint32_t stack);
uint64_t tg_free(struct tg *tg, uint32_t stream, uint64_t time, uint64_t ptr);
/* A realloc as the writer records it: FREE(old, PROF_FREE_REALLOC) then ALLOC(new, REALLOC),
 * both at `time`. Returns the ALLOC's offset. */
uint64_t tg_realloc(struct tg *tg, uint32_t stream, uint64_t time, uint64_t old_ptr,
		    uint64_t new_ptr, uint64_t size, uint32_t stack);
uint64_t tg_stack(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id,
		  const uint64_t *frames, uint32_t depth);
/* build_id may be NULL (build_id_len 0). */
uint64_t tg_module(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id, uint64_t start,
		   uint64_t end, uint64_t bias, const uint8_t *build_id, uint32_t build_id_len,
		   const char *path);
uint64_t tg_module_unload(struct tg *tg, uint32_t stream, uint64_t time, uint32_t id);
uint64_t tg_thread_start(struct tg *tg, uint32_t stream, uint64_t time, uint32_t serial,
			 uint32_t tid, uint32_t parent_serial, uint32_t stack,
			 uint64_t start_routine);
uint64_t tg_thread_end(struct tg *tg, uint32_t stream, uint64_t time, uint32_t serial,
		       uint32_t tid, uint64_t cpu_ns, const char *name);
uint64_t tg_exit(struct tg *tg, uint32_t stream, uint64_t time, uint32_t how, int32_t code);
uint64_t tg_exec(struct tg *tg, uint32_t stream, uint64_t time, const char *path);
uint64_t tg_fork(struct tg *tg, uint32_t stream, uint64_t time, uint32_t child_pid);
uint64_t tg_lost(struct tg *tg, uint32_t stream, uint64_t time, uint64_t records);

/* The stream's next record starts a new chunk. */
void tg_new_chunk(struct tg *tg, uint32_t stream);

/* The runs layout (PROF_FEAT_CHUNK_RUNS), as libprof writes it: chunk_size is the unit (a
 * power of two from 1024) and a chunk spans run_units units (or more, where a record needs
 * more), with a struct prof_chunk_header_run. Call before the first record. In this layout
 * chunk indexes and counts below are units. */
void tg_set_runs(struct tg *tg, uint32_t unit, uint32_t run_units);
/* The stream's next record starts a new chunk of `units` units (or what the record needs). */
void tg_new_run(struct tg *tg, uint32_t stream, uint32_t units);
/* As a writer does when a thread ends: shrinks the stream's current chunk to `units` (0: the
 * units it has used; its
 * header says so) and gives the units after them to the next chunks claimed (lowest fitting
 * range first, split as needed). */
void tg_shrink(struct tg *tg, uint32_t stream, uint32_t units);
/* File offset of the `units` field of the stream's current chunk header (runs layout). */
uint64_t tg_chunk_units_offset(const struct tg *tg, uint32_t stream);
/* Claims a chunk (a unit) and leaves it all zero (claimed, never written). Returns its index. */
uint64_t tg_claim_empty(struct tg *tg);
uint64_t tg_chunk_count(const struct tg *tg);
/* File offset of chunk i (valid once all header knobs are set). */
uint64_t tg_chunk_offset(const struct tg *tg, uint64_t i);

/* Writes the file (created or truncated, mode 0644). */
void tg_write(struct tg *tg, const char *path);

/* Writes tg to DIR/t.trace, destroys tg, and loads the file as the analyzer does: returns
 * process_load()'s result (0, or -1 with the message in err). */
struct process;
int tg_load(struct tg *tg, const char *dir, struct process *p, char *err, size_t errlen);

/* Knobs for malformed files, applied to a written file. */
void tg_patch(const char *path, uint64_t offset, const void *bytes, size_t len);
void tg_truncate(const char *path, uint64_t size);
/* tg_patch_header(path, chunk_size, 1000): overwrites one header field in the file. */
#define tg_patch_header(path, field, value)                                            \
	do {                                                                           \
		__typeof__(((struct prof_file_header *)0)->field) tg_v_ = (value);     \
		tg_patch((path), offsetof(struct prof_file_header, field), &tg_v_,     \
			 sizeof(tg_v_));                                               \
	} while (0)

/* xorshift64*: the next pseudo-random number of *state (not 0), the same on every libc,
 * unlike rand(): for tests that mutate or generate traces reproducibly. */
static inline uint64_t tg_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A fresh mkdtemp() directory under /tmp (in buf, at least 64 bytes); tg_tmpdir_remove()
 * deletes the plain files in it, then it. */
void tg_tmpdir(char *buf, size_t len);
void tg_tmpdir_remove(const char *dir);

#endif
