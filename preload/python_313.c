/* CPython 3.13's frame layout (Include/internal/pycore_frame.h, cpython/code.h): no more
 * cframe, the thread state holds current_frame; f_executable may be something other than a
 * code object; instr_ptr is the instruction running, not the one before it. */
#include "python.h"

const struct py_layout prof_py_layout_313 = {
	.minor = 13,
	.ts_frame = 72, .cframe_frame = -1, .ts_datastack_chunk = 232, .ts_datastack_top = 240,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70,
	.fr_is_entry = -1, .owner_cstack = 3, .owner_generator = 1, .instr_is_prev = 0, .gen_iframe = 72,
	.co_name = 120, .co_qualname = 128, .co_filename = 112, .co_linetable = 136,
	.co_firstlineno = 68, .co_firsttraceable = 184, .co_code_adaptive = 200,
	.str_ascii_size = 40, .str_compact_size = 56,
};
