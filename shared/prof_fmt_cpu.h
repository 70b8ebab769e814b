/* The CPU event family's records: types 90-99, CPU-time samples and the time threads spent
 * blocked in calls the other families do not record (sleeps, poll, waitpid, signal waits).
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_CPU_H
#define PROF_FMT_CPU_H

#include "prof_fmt_base.h"

#define PROF_CPU_TYPE_FIRST 90
#define PROF_CPU_TYPE_LAST 99

#define PROF_CPU_RECORD_TYPES(X)               \
	X(CPU_SAMPLE, 90, prof_rec_cpu_sample) \
	X(CPU_BLOCKED, 91, prof_rec_cpu_blocked)

/* CPU_SAMPLE: the writing thread used period_ns of CPU time (its CPU-time timer expired,
 * 1 + overruns periods) and was interrupted at `stack`, whose frame 0 is the exact PC that
 * was running (not a return address); the frames above it are return addresses, as in any
 * STACK. Written from a signal handler, in the thread's signal-handler stream. flags:
 * PROF_SAMPLE_IN_PROF: the thread was inside libprof, which is left out of the stack (its
 * innermost frame is then the program's call of the hooked function); PROF_SAMPLE_SITE_ONLY:
 * libprof was unwinding at that moment, so the stack is the one last unwound at that call
 * site in this thread (the same path, most likely), or the call site alone. */
#define PROF_SAMPLE_IN_PROF 1u
#define PROF_SAMPLE_SITE_ONLY 2u
struct prof_rec_cpu_sample {
	struct prof_rec h;
	uint64_t pc;         /* the interrupted PC (the call site with PROF_SAMPLE_SITE_ONLY) */
	uint64_t period_ns;  /* CPU time this sample stands for */
	uint32_t stack;      /* 0: none (stacks off, or the record was lost) */
	uint32_t pad;
};

/* The blocking calls CPU_BLOCKED records, X(NAME, "name", value, cause). Values never change.
 * cause: what the time is reported as, one of PROF_BLOCK_CAUSES. Lock and condition waits,
 * joins and I/O calls are not repeated here: LOCK_WAIT, THREAD_JOIN and IO_CALL say them. */
#define PROF_BLOCK_OPS(X)                                  \
	X(NANOSLEEP, "nanosleep", 0, SLEEP)                \
	X(CLOCK_NANOSLEEP, "clock_nanosleep", 1, SLEEP)    \
	X(SLEEP, "sleep", 2, SLEEP)                        \
	X(USLEEP, "usleep", 3, SLEEP)                      \
	X(POLL, "poll", 4, POLL)                           \
	X(PPOLL, "ppoll", 5, POLL)                         \
	X(SELECT, "select", 6, POLL)                       \
	X(PSELECT, "pselect", 7, POLL)                     \
	X(EPOLL_WAIT, "epoll_wait", 8, POLL)               \
	X(EPOLL_PWAIT, "epoll_pwait", 9, POLL)             \
	X(WAITPID, "waitpid", 10, WAIT)                    \
	X(WAIT, "wait", 11, WAIT)                          \
	X(WAITID, "waitid", 12, WAIT)                      \
	X(WAIT4, "wait4", 13, WAIT)                        \
	X(PAUSE, "pause", 14, SIGNAL)                      \
	X(SIGSUSPEND, "sigsuspend", 15, SIGNAL)            \
	X(SIGWAIT, "sigwait", 16, SIGNAL)                  \
	X(SIGWAITINFO, "sigwaitinfo", 17, SIGNAL)          \
	X(SIGTIMEDWAIT, "sigtimedwait", 18, SIGNAL)        \
	X(WAIT3, "wait3", 19, WAIT)
enum prof_block_op {
#define PROF_X(name, str, v, cause) PROF_BLOCK_##name = (v),
	PROF_BLOCK_OPS(PROF_X)
#undef PROF_X
	PROF_BLOCK_OP_COUNT
};

/* Why a thread was off the CPU, as reports group it: the records above and those of the
 * lock, thread, I/O and MPI families. X(NAME, "name", value). */
#define PROF_BLOCK_CAUSES(X)   \
	X(LOCK, "lock", 0)     \
	X(COND, "cond", 1)     \
	X(JOIN, "join", 2)     \
	X(IO, "io", 3)         \
	X(SLEEP, "sleep", 4)   \
	X(POLL, "poll", 5)     \
	X(WAIT, "wait", 6)     \
	X(SIGNAL, "signal", 7) \
	X(MPI, "mpi", 8)
enum prof_block_cause {
#define PROF_X(name, str, v) PROF_CAUSE_##name = (v),
	PROF_BLOCK_CAUSES(PROF_X)
#undef PROF_X
	PROF_CAUSE_COUNT
};

/* CPU_BLOCKED: one call that may block (flags: enum prof_block_op) took duration_ns and
 * returned result (>= 0, or -errno). h.time is when it returned: it began duration_ns
 * earlier. */
struct prof_rec_cpu_blocked {
	struct prof_rec h;
	uint64_t duration_ns;
	int64_t result;
	uint32_t stack;      /* where it was called */
	uint32_t pad;
};

static inline const char *prof_block_op_name(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, cause) case v: return str;
	PROF_BLOCK_OPS(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

static inline unsigned prof_block_op_cause(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, cause) case v: return PROF_CAUSE_##cause;
	PROF_BLOCK_OPS(PROF_X)
#undef PROF_X
	default: return PROF_CAUSE_SLEEP;
	}
}

static inline const char *prof_block_cause_name(unsigned cause)
{
	switch (cause) {
#define PROF_X(name, str, v) case v: return str;
	PROF_BLOCK_CAUSES(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

#endif
