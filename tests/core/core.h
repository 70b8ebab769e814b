/* Helpers for the recording-core tests: preload/writer.c and preload/stacks.c linked directly,
 * with the rest of libprof replaced by the stubs in core.c, and traces read back with the
 * analyzer's reader (analyzer/trace.c). */
#ifndef PROF_CORE_TEST_H
#define PROF_CORE_TEST_H

#include <stdint.h>

#include "prof.h"
#include "trace.h"

/* Starts a trace in a fresh directory with the given PROF_MAX_SIZE (0: the default). */
void core_open(uint64_t max_size);
/* Ends it (prof_writer_close) and returns its path. */
const char *core_close(void);
const char *core_dir(void);

/* The calling thread gets a serial and tid, as prof_thread_get() would give it. */
struct prof_thread *core_thread_begin(void);
/* THREAD_END-like end: prof_writer_thread_done(). */
void core_thread_end(struct prof_thread *th);

/* One ALLOC record with ptr and size as given: 1 written, 0 lost. */
int core_alloc(struct prof_thread *th, uint64_t ptr, uint64_t size);
/* One STACK record of `depth` frames with the given id: 1 written, 0 lost. */
int core_stack_record(struct prof_thread *th, uint32_t id, uint32_t depth);

/* prof_log() lines so far, and the last one. */
int core_log_count(void);
const char *core_log_last(void);

/* Opens path with the reader; fails the test with the reader's message if it cannot. */
struct trace *core_read(const char *path);

#endif
