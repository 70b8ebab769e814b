/* Reading a trace file: header validation, chunk indexing, and one streaming pass over all
 * records in timestamp order (a k-way merge of the per-thread streams). Treats the file as
 * untrusted: every error is one line naming the file and, where it applies, the byte offset. */
#ifndef PROF_TRACE_H
#define PROF_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include "prof_format.h"

struct trace;

/* One record, as handed out by trace_next(). rec points into a buffer of the reader (the file
 * is read, not mapped) and stays valid only until the next trace_next(), trace_rewind() or
 * trace_close() on that trace: a caller that needs the record, or a string or frames in it,
 * later must copy them. The whole record (rec->size bytes) is in memory, 8-byte aligned. For
 * known types the reader has checked that rec->size covers the fixed payload and any variable
 * part (STACK frames, NUL-terminated paths). */
struct trace_event {
	const struct prof_rec *rec;
	uint64_t offset;  /* byte offset of the record in the file */
	uint32_t stream;  /* chunk stream: thread serial * 2 (+1 for the signal-handler stream) */
	uint32_t tid;     /* kernel tid of the writing thread */
	uint32_t file_size;  /* bytes it takes in the file: rec->size, or 8 or 16 for a short
			      * record (format 2), which rec shows in its ordinary form */
};

/* Opens and validates path; the trace holds the file open until trace_close(). On error
 * returns NULL and writes "PATH: [offset N: ]what" to err. Memory: the chunk index (one entry
 * per chunk), and while records are read one window (64 KiB at most, the rest of a chunk if
 * less, or one record if larger) per stream with records left; never the file's length. */
struct trace *trace_open(const char *path, char *err, size_t errlen);
void trace_close(struct trace *t);

const struct prof_file_header *trace_header(const struct trace *t);
/* For a file cut short (shorter than its header says): the length it should have, else 0.
 * Such a file is read as far as it goes. */
uint64_t trace_promised(const struct trace *t);
uint64_t trace_size(const struct trace *t);
const char *trace_path(const struct trace *t);
const char *trace_exe(const struct trace *t);
const char *trace_host(const struct trace *t);
uint32_t trace_argc(const struct trace *t);
const char *trace_argv(const struct trace *t, uint32_t i);

/* Next record in time order: 1 = *ev filled, 0 = end of trace, -1 = error (message in err:
 * a bad record, a failed or short read of a file cut or changed while read, or no memory for a
 * window). Records of unknown type are returned too (callers skip them). ev->rec is valid
 * until the next call (see struct trace_event). */
int trace_next(struct trace *t, struct trace_event *ev, char *err, size_t errlen);

/* Restarts the pass from the first record. */
void trace_rewind(struct trace *t);

#endif
