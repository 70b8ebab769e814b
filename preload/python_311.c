/* CPython 3.11's frame layout (Include/internal/pycore_frame.h, pycore_code.h): the thread's
 * frames hang off tstate->cframe->current_frame; a frame that started a run of the
 * evaluation loop has is_entry set. */
#include "python.h"

const struct py_layout prof_py_layout_311 = {
	.minor = 11,
	.ts_frame = 56, .cframe_frame = 8, .ts_datastack_chunk = 296, .ts_datastack_top = 304,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_owner = 69,
	.fr_is_entry = 68, .owner_cstack = -1, .owner_generator = 1, .instr_is_prev = 1, .gen_iframe = 80,
	.co_name = 120, .co_qualname = 128, .co_filename = 112, .co_linetable = 136,
	.co_firstlineno = 72, .co_firsttraceable = 168, .co_code_adaptive = 184,
	.str_ascii_size = 48, .str_compact_size = 72,
};
