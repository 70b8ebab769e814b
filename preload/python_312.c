/* CPython 3.12's frame layout (Include/internal/pycore_frame.h, cpython/code.h): the thread's
 * frames hang off tstate->cframe->current_frame; each run of the evaluation loop starts at an
 * entry frame of its own, owned by the C stack (FRAME_OWNED_BY_CSTACK). */
#include "python.h"

const struct py_layout prof_py_layout_312 = {
	.minor = 12,
	.ts_frame = 56, .cframe_frame = 0, .ts_datastack_chunk = 232, .ts_datastack_top = 240,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70,
	.fr_is_entry = -1, .owner_cstack = 3, .owner_generator = 1, .instr_is_prev = 1, .gen_iframe = 72,
	.co_name = 120, .co_qualname = 128, .co_filename = 112, .co_linetable = 136,
	.co_firstlineno = 68, .co_firsttraceable = 176, .co_code_adaptive = 192,
	.str_ascii_size = 40, .str_compact_size = 56,
};
