/* Python frames in stacks: the PY_CODE record (core type 19) and how a STACK frame names a
 * Python frame. Stands on its own (it needs only the record prefix); prof_format.h adds
 * PY_CODE to the core list.
 *
 * In a Python process (CPython 3.11 to 3.13) libprof splices the interpreter's frames into
 * each native stack where the evaluation loop (_PyEval_EvalFrameDefault) ran them: a STACK
 * frame with bit 63 set is not an address but a Python frame, PROF_PY_FRAME(code, lasti):
 * the code object's id (a PY_CODE record of the same trace, anywhere in it) and the index of
 * the instruction that frame was at (in 2-byte code units; 0xffffffff: before the first).
 * Native addresses never have bit 63 set (user space is below 2^47). */
#ifndef PROF_FMT_PY_H
#define PROF_FMT_PY_H

#include "prof_fmt_base.h"

#define PROF_PY_FRAME_TAG (1ull << 63)
#define PROF_PY_FRAME(code_id, lasti) \
	(PROF_PY_FRAME_TAG | (uint64_t)(uint32_t)(code_id) << 32 | (uint64_t)(uint32_t)(lasti))
static inline int prof_py_frame_is(uint64_t frame) { return (frame & PROF_PY_FRAME_TAG) != 0; }
static inline uint32_t prof_py_frame_code(uint64_t frame) { return (uint32_t)(frame >> 32) & 0x7fffffffu; }
static inline uint32_t prof_py_frame_lasti(uint64_t frame) { return (uint32_t)frame; }

/* PY_CODE: a Python code object, written once per code object (before or after the stacks
 * that name it). firstlineno: its first line. The variable part holds name_len bytes of the
 * function's name, qualname_len of its qualified name (0: the version has none), file_len of
 * its file name (UTF-8, no NULs), then linetable_len bytes of its co_linetable, which maps
 * instruction offsets to lines (the format of CPython 3.11 to 3.13, PEP 626; `linetable_fmt`
 * 1). Lengths are within the record; a reader ignores the record otherwise. */
#define PROF_PY_LINETABLE_311 1u
struct prof_rec_py_code {
	struct prof_rec h;
	uint32_t id;            /* process-unique, from 1 */
	int32_t firstlineno;
	uint16_t name_len, qualname_len, file_len;
	uint8_t linetable_fmt;  /* PROF_PY_LINETABLE_* */
	uint8_t pad;
	uint32_t linetable_len;
	uint32_t pad2;
	char data[];            /* name, qualname, file, linetable; padded to 8 */
};
_Static_assert(sizeof(struct prof_rec_py_code) == 40, "PY_CODE layout is part of the format");

#define PROF_PY_NAME_MAX 512       /* longer names and file names are cut */
#define PROF_PY_LINETABLE_MAX 16384  /* a longer table keeps its start: later lines unknown */

#endif
