/* Python frames in stacks (shared/prof_fmt_py.h): the process's code objects from its
 * PY_CODE records, a STACK frame that names one as a source frame, and CPython's line table. */
#ifndef PROF_ANALYZER_PYTHON_H
#define PROF_ANALYZER_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include "prof_format.h"
#include "symbolize.h"

struct process;
struct py_codes;

/* Keeps a PY_CODE record; -1 when out of memory. A malformed one (lengths past its size) is
 * counted as unknown and its frames stay unnamed. */
int python_on_code(struct process *p, const struct prof_rec_py_code *r);
void python_free(struct process *p);
/* A Python frame (prof_py_frame_is(frame)) as a source frame: function (qualified name where
 * the version has it), file, line, module (the file), address (frame), python set. */
void python_frame(struct process *p, uint64_t frame, struct sym_frame *out);
/* The line of the instruction at byte offset addrq in a CPython 3.11-3.13 co_linetable, or
 * firstlineno for addrq < 0; 0 when the table does not say. */
int python_line(const uint8_t *table, size_t len, int firstlineno, int addrq);
/* Whether f is one of the interpreter's own functions (its evaluation loop, calls between
 * Python functions, start-up): what `--fold python` hides in stacks with Python frames. */
int python_interp_frame(const struct sym_frame *f);

#endif
