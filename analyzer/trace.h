/* Reading a trace file: header validation, chunk indexing, and one streaming pass over all
 * records in timestamp order (a k-way merge of the per-thread streams). Treats the file as
 * untrusted: every error is one line naming the file and, where it applies, the byte offset. */
#ifndef PROF_TRACE_H
#define PROF_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include "prof_format.h"

struct trace;

/* One record, as handed out by trace_next(). rec points into the mapped file and stays valid
 * until trace_close(). For known types the reader has checked that rec->size covers the fixed
 * payload and any variable part (STACK frames, NUL-terminated paths). */
struct trace_event {
	const struct prof_rec *rec;
	uint64_t offset;  /* byte offset of the record in the file */
	uint32_t stream;  /* chunk stream: thread serial * 2 (+1 for the signal-handler stream) */
	uint32_t tid;     /* kernel tid of the writing thread */
};

/* Opens and validates path. On error returns NULL and writes "PATH: [offset N: ]what" to err. */
struct trace *trace_open(const char *path, char *err, size_t errlen);
void trace_close(struct trace *t);

const struct prof_file_header *trace_header(const struct trace *t);
const char *trace_path(const struct trace *t);
const char *trace_exe(const struct trace *t);
const char *trace_host(const struct trace *t);
uint32_t trace_argc(const struct trace *t);
const char *trace_argv(const struct trace *t, uint32_t i);

/* Next record in time order: 1 = *ev filled, 0 = end of trace, -1 = error (message in err).
 * Records of unknown type are returned too (callers skip them). */
int trace_next(struct trace *t, struct trace_event *ev, char *err, size_t errlen);

/* Restarts the pass from the first record. */
void trace_rewind(struct trace *t);

#endif
