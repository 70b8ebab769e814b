/* Python frames in native stacks (python.c): which CPython runs in this process, and the
 * frames its evaluation loop is running in the calling thread, spliced into a native stack.
 * Each supported version's frame layout is one struct py_layout in its own file
 * (python_311.c, python_312.c, python_313.c), chosen at start-up from Py_Version. */
#ifndef PROF_PYTHON_H
#define PROF_PYTHON_H

#include <stdint.h>

struct prof_thread;

/* Offsets into CPython's structures (non-debug, GIL builds), from its headers. */
struct py_layout {
	unsigned minor;            /* 3.minor */
	/* thread state -> the innermost frame: *(ts + ts_frame), then, when cframe_frame >= 0,
	 * *(that + cframe_frame) (3.11 and 3.12 go through tstate->cframe) */
	unsigned ts_frame;
	int cframe_frame;
	/* tstate->datastack_chunk, datastack_top: the chunks that hold the thread's frames */
	unsigned ts_datastack_chunk, ts_datastack_top;
	/* _PyInterpreterFrame */
	unsigned fr_code, fr_previous, fr_instr, fr_owner;
	int fr_is_entry;           /* 3.11: the frame ends its evaluation loop's run; else -1 */
	int owner_cstack;          /* 3.12+: the loop's entry frame, on the C stack; else -1 */
	int owner_generator;
	int instr_is_prev;         /* fr_instr is prev_instr (3.11, 3.12), not instr_ptr (3.13) */
	unsigned gen_iframe;       /* a generator's (coroutine's) frame inside its object */
	/* PyCodeObject */
	unsigned co_name, co_qualname, co_filename, co_linetable, co_firstlineno;
	unsigned co_firsttraceable, co_code_adaptive;
	/* str: the compact ASCII and compact forms' sizes (their characters follow) */
	unsigned str_ascii_size, str_compact_size;
};

extern const struct py_layout prof_py_layout_311, prof_py_layout_312, prof_py_layout_313;

/* At start-up and in a fork child (its own trace): finds the interpreter (nothing in a
 * process that is not Python) and forgets the code objects written to another trace. */
void prof_py_start(void);
/* Whether Python frames are read in this process. */
extern int prof_py_on;

/* Splices the calling thread's Python frames into frames[0..n) (a native stack, innermost
 * first, with room for cap), each run of the evaluation loop's frames in front of (inside)
 * its _PyEval_EvalFrameDefault frame; returns the new count. *chain: a hash of the Python
 * frames read (0 when the stack passes through no evaluation loop), so that a cached stack
 * is reused only with the same Python frames. Async-signal-safe: bounded reads checked by
 * the kernel, no lock, no allocation; the program's state is never written. */
int prof_py_splice(struct prof_thread *th, void **frames, int n, int cap, uint64_t *chain);
/* The hash prof_py_splice() would give *chain now, for a stack that passed through the
 * evaluation loop when it was cached. */
uint64_t prof_py_chain_now(struct prof_thread *th);

/* For tests (tests/core): walks a frame chain from `frame` with layout L, as prof_py_splice
 * does, into codes/lastis/segs (at most max); returns the frames kept, or -1 when the chain
 * loops or leaves readable memory (what was read before stays). */
int prof_py_walk_from(const struct py_layout *L, uintptr_t frame, uintptr_t code_type,
		      uintptr_t *codes, int32_t *lastis, int *segs, int max);

/* For tests: merge() with loop frames in [loop_lo, loop_hi) and Python frames ids[i] (their
 * instruction: i) of runs segs[i]. */
int prof_py_merge_for_test(void **frames, int n, int cap, uintptr_t loop_lo, uintptr_t loop_hi,
			   const uint32_t *ids, const int32_t *segs, int nr);

#endif
