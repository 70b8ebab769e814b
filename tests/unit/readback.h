/* Reading a whole trace back in a test: every record, in order, copied (a record stays valid
 * only until the next trace_next()) after checking that it is the file's bytes at its offset. */
#ifndef PROF_READBACK_H
#define PROF_READBACK_H

#include <stddef.h>

#include "trace.h"

/* Fills evs (at most max - 1 records, asserted) and returns the count, asserting that the
 * pass ends without error. The copies live until the next readback_all(). */
size_t readback_all(struct trace *t, struct trace_event *evs, size_t max);

#endif
