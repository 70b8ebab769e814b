/* longjmp out of libprof's work. A program's signal handler that ends in siglongjmp (an
 * alarm() timeout, a SIGSEGV recovery) may interrupt one of our hooks while it records, with
 * in_hook raised; the jump leaves that hook for good, and the thread's every later call would
 * pass through unrecorded. The longjmp hooks note such a jump (jumped); a hook that then finds
 * in_hook raised but runs at or above the frame that raised it is outside that work, and
 * lowers it (prof_in_hook() in prof.h). What the abandoned hook was writing is lost: at most
 * its one event. */
#include "prof.h"
#include "heap_tally.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>

_Atomic uint64_t prof_hooks_left;

typedef void (*jump_fn)(struct __jmp_buf_tag *, int);

static jump_fn real_longjmp, real_siglongjmp, real__longjmp, real_longjmp_chk;

/* Resolved before any signal handler can jump (dlsym is not async-signal-safe). */
__attribute__((constructor)) static void resolve_jumps(void)
{
	real_longjmp = (jump_fn)dlsym(RTLD_NEXT, "longjmp");
	real_siglongjmp = (jump_fn)dlsym(RTLD_NEXT, "siglongjmp");
	real__longjmp = (jump_fn)dlsym(RTLD_NEXT, "_longjmp");
	real_longjmp_chk = (jump_fn)dlsym(RTLD_NEXT, "__longjmp_chk");
}

static inline void jumping(void)
{
	if (prof_self.in_hook)
		prof_self.jumped = 1;
}

/* A jump before our constructor ran (another library's constructor) finds glibc's. */
#define JUMP_HOOK(name, real)                                                \
	PROF_EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val) \
	{                                                                     \
		jumping();                                                    \
		if (!real)                                                    \
			resolve_jumps();                                      \
		real(env, val);                                               \
		__builtin_unreachable();                                      \
	}

JUMP_HOOK(longjmp, real_longjmp)
JUMP_HOOK(siglongjmp, real_siglongjmp)
JUMP_HOOK(_longjmp, real__longjmp)
JUMP_HOOK(__longjmp_chk, real_longjmp_chk)

/* A hook at hook_frame found in_hook raised after a jump. Below the frame that raised it, the
 * hook runs inside that work (our own calls); so it does on a signal handler's alternate
 * stack, which lies anywhere: a handler that interrupted us. Otherwise the raise is stale. */
int prof_hook_stale(struct prof_thread *th, uintptr_t hook_frame)
{
	if (hook_frame < th->hook_frame)
		return 0;
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
		return 0;
	prof_hook_abandon(th);
	atomic_fetch_add_explicit(&prof_hooks_left, 1, memory_order_relaxed);
	return 1;
}

/* What a hook left half way leaves in the thread's state, undone: a reservation never
 * finished (its bytes read as PAD), a short record's base that may not be in the file. */
void prof_hook_abandon(struct prof_thread *th)
{
	th->in_hook = 0;
	th->jumped = 0;
	th->in_signal = 0;
	th->unwinding = 0;
	th->streams[0].busy = th->streams[1].busy = 0;
	prof_writer_forget_bases(th);
	heap_rec_abandoned();
}
