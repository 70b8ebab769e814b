/* CPU-time sampling. Every registered thread has a POSIX timer on its own CPU-time clock
 * (timer_create(CLOCK_THREAD_CPUTIME_ID), SIGEV_THREAD_ID), so it is interrupted after each
 * 1/PROF_CPU_HZ s of CPU it uses, never while it sleeps or waits. The timer's signal is one
 * real-time signal (TICK_SIGNAL), installed SA_RESTART; its handler unwinds the interrupted
 * context (unw_init_local2 with UNW_INIT_SIGNAL_FRAME, so frame 0 is the exact PC) and writes
 * a CPU_SAMPLE into the thread's signal-handler stream.
 *
 * The program never sees the signal: the disposition it sets for TICK_SIGNAL is kept aside
 * (sigaction and signal answer with it) and the handler forwards to it what is not a tick of
 * ours; masks the program blocks or waits for lose TICK_SIGNAL (sigprocmask, pthread_sigmask;
 * sigwait and the like in blocking.c); calls SA_RESTART does not restart are made again by
 * their hooks (blocking.c, and sem_wait in locks.c) when a tick is what interrupted them.
 *
 * Everything the handler does is async-signal-safe: no stdio, no allocation, no locks; the
 * thread must have registered (its serial set when it was created) or the tick is dropped;
 * while libprof itself is unwinding in that thread (libunwind's per-thread cache in use) the
 * sample records the hook's call site alone. */
#include "prof.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define TICK_SIGNAL (SIGRTMAX - 3)  /* 61 on Linux: far from glibc's and most programs' own */
#define TICK_MAGIC 0x70726f66        /* si_value of our timers ("prof") */
#define UNWIND_STACK (24u * 1024u)   /* stack a sample needs to unwind, margin included */

static struct {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	__sighandler_t (*signal)(int, __sighandler_t);
	int (*sigprocmask)(int, const sigset_t *, sigset_t *);
	int (*pthread_sigmask)(int, const sigset_t *, sigset_t *);
} real;

static _Atomic int installed;         /* our handler owns TICK_SIGNAL */
static struct sigaction program_sa;   /* what the program set for TICK_SIGNAL (SIG_DFL at first) */
static uint64_t period_ns;
/* Whether the program believes it blocked TICK_SIGNAL in this thread: the masks it reads back
 * say so, though the signal itself stays unblocked. A new thread inherits it (threads.c). */
static __thread int tick_blocked;

static void resolve(void)
{
	if (real.sigaction)
		return;
	real.signal = (__typeof__(real.signal))dlsym(RTLD_NEXT, "signal");
	real.sigprocmask = (__typeof__(real.sigprocmask))dlsym(RTLD_NEXT, "sigprocmask");
	real.pthread_sigmask = (__typeof__(real.pthread_sigmask))dlsym(RTLD_NEXT, "pthread_sigmask");
	__atomic_store_n(&real.sigaction,
			 (__typeof__(real.sigaction))dlsym(RTLD_NEXT, "sigaction"), __ATOMIC_RELEASE);
}

int prof_eintr_ours(int rc, uint32_t ticks)
{
	return rc < 0 && errno == EINTR && prof_self.ticks != ticks;
}

/* ---- the sample --------------------------------------------------------------------------- */

/* Unwinds the interrupted context into frames (frame 0: the PC), then takes libprof out, so
 * that the stack is the one the program would have without it. When the thread was inside
 * libprof's own work (a hook's guard up, or the PC in libprof), the sample counts for the
 * program's call of the hook: the innermost run of libprof frames goes, with everything it
 * called (libc, libunwind). Any other libprof frame (a hook around the real malloc, the start
 * trampoline of a thread) is left out where it stands. */
static int unwind(ucontext_t *uc, void **frames, int max, int in_hook, uint64_t *pc,
		  unsigned *flags)
{
	unw_cursor_t c;
	int n = 0;
	if (unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	do {
		unw_word_t ip;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		frames[n++] = (void *)ip;
	} while (n < max && unw_step(&c) > 0);
	if (n == 0)
		return 0;
	*pc = (uint64_t)(uintptr_t)frames[0];
	int first = 0;
	while (first < n && !prof_addr_is_ours((uintptr_t)frames[first]))
		first++;
	if (first == n)
		return n;
	int from = 0;
	if (in_hook || first == 0) {
		from = first;
		while (from < n && prof_addr_is_ours((uintptr_t)frames[from]))
			from++;
		*flags |= PROF_SAMPLE_IN_PROF;
	}
	int kept = 0;
	for (int i = from; i < n; i++)
		if (!prof_addr_is_ours((uintptr_t)frames[i]))
			frames[kept++] = frames[i];
	return kept;
}

/* The PC of an interrupted context, without unwinding. */
static uint64_t context_pc(const ucontext_t *uc)
{
#if defined(__x86_64__)
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uint64_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* shallow: too little stack is left to unwind (a thread whose stack the program sized small):
 * the sample keeps its PC alone, as it does where the thread holds the loader's lock. */
static __attribute__((noinline)) void sample(struct prof_thread *th, const siginfo_t *si,
					     ucontext_t *uc, int shallow)
{
	int in_hook = th->in_hook;
	th->in_signal++;
	prof_hook_enter(th);
	int max = shallow ? 0 : (int)prof_cfg.stack_depth;
	void *frames[max + 32];  /* sized to the setting: threads' stacks may be small */
	uint64_t pc = 0;
	unsigned flags = 0;
	uint32_t stack = 0;
	int n = 0;
	if (th->unwinding) {
		/* libunwind is busy in this thread: the stack last unwound at the hook's call
		 * site stands in (the same call path, most likely), else that call site alone. */
		flags = PROF_SAMPLE_IN_PROF | PROF_SAMPLE_SITE_ONLY;
		pc = th->hook_site;
		if (max > 0 && !(stack = prof_stack_last_at(th, th->hook_site)) && th->hook_site)
			frames[n++] = (void *)th->hook_site;
	} else if (shallow || th->in_loader || prof_loader_lock_busy(th)) {
		pc = context_pc(uc);
	} else {
		prof_unwind_begin(th, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);  /* the interrupted stack */
		n = unwind(uc, frames, max > 0 ? max + 32 : 1, in_hook, &pc, &flags);
		prof_unwind_end(th);
		if (n > max)
			n = max;
	}
	for (int i = 0; i < n; i++)
		if (!prof_addr_known((uintptr_t)frames[i])) {
			prof_modules_mark_stale();
			break;
		}
	if (n > 0)
		stack = prof_stack_intern(th, frames, n);
	struct prof_rec_cpu_sample *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->pc = pc;
		r->period_ns = period_ns * (1u + (unsigned)(si->si_overrun > 0 ? si->si_overrun : 0));
		r->stack = stack;
		r->pad = 0;
		prof_commit(r, PROF_REC_CPU_SAMPLE, flags, sizeof(*r), prof_now());
	}
	th->in_hook--;
	th->in_signal--;
}

/* TICK_SIGNAL that is not our timer's: what the program asked for. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	struct sigaction sa = program_sa;
	if (sa.sa_flags & SA_RESETHAND)
		program_sa.sa_handler = SIG_DFL;
	if (sa.sa_flags & SA_SIGINFO) {
		sa.sa_sigaction(sig, si, uc);
	} else if (sa.sa_handler == SIG_DFL) {  /* a real-time signal's default: terminate */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		real.sigaction(sig, &dfl, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		real.pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
	} else if (sa.sa_handler != SIG_IGN) {
		sa.sa_handler(sig);
	}
}

static void on_tick(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code != SI_TIMER || si->si_value.sival_int != TICK_MAGIC) {
		forward(sig, si, uc);
		return;
	}
	int saved = errno;
	struct prof_thread *th = &prof_self;
	th->ticks++;
	/* Unwinding takes up to some 16 KiB of stack: where the program sized its thread's stack,
	 * what is left is checked, and too little left makes a sample of the PC alone. */
	int shallow = prof_stack_tight(th, UNWIND_STACK);
	/* A full trace (PROF_ACTIVE_FULL) still takes what fits in the stream's chunk. */
	if (th->serial && !th->in_signal && th->has_timer &&
	    atomic_load_explicit(&prof_active, memory_order_relaxed)) {
		/* Inside a timed call (prof_timed_begin()), the sample is not the call's time. */
		uint64_t own = th->timed ? prof_now() : 0;
		sample(th, si, uc, shallow);
		if (own)
			th->own_sig_ns += prof_now() - own;
	}
	errno = saved;
}

/* ---- timers ------------------------------------------------------------------------------- */

void prof_cpu_init(void)
{
	resolve();
	if (!(prof_cfg.events & PROF_EV_CPU) || prof_cfg.cpu_hz == 0 || atomic_load(&installed))
		return;
	period_ns = 1000000000u / prof_cfg.cpu_hz;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);  /* nothing of the program's runs inside a sample */
	if (real.sigaction(TICK_SIGNAL, &sa, &old) < 0) {
		prof_log("cannot install the CPU sampling signal (%d): no CPU samples", TICK_SIGNAL);
		return;
	}
	program_sa = old;
	/* Blocked since before we were loaded (an exec'ing program's mask, posix_spawn's
	 * POSIX_SPAWN_SETSIGMASK): unblocked, and still blocked as the program sees it. */
	sigset_t cur, tick;
	sigemptyset(&tick);
	sigaddset(&tick, TICK_SIGNAL);
	if (real.pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, TICK_SIGNAL)) {
		real.pthread_sigmask(SIG_UNBLOCK, &tick, NULL);
		tick_blocked = 1;
	}
	atomic_store(&installed, 1);
}

void prof_cpu_start(struct prof_thread *th)
{
	if (!atomic_load(&installed) || th->has_timer || !th->tid)
		return;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = TICK_SIGNAL;
	sev.sigev_value.sival_int = TICK_MAGIC;
	sev.sigev_notify_thread_id = (pid_t)th->tid;
	timer_t t;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) < 0) {
		prof_dbg(1, "timer_create: %s: thread %u is not sampled", strerror(errno), th->tid);
		return;
	}
	struct itimerspec its = { { 0, (long)period_ns }, { 0, (long)period_ns } };
	its.it_interval.tv_sec = its.it_value.tv_sec = (time_t)(period_ns / 1000000000u);
	its.it_interval.tv_nsec = its.it_value.tv_nsec = (long)(period_ns % 1000000000u);
	if (timer_settime(t, 0, &its, NULL) < 0) {
		timer_delete(t);
		return;
	}
	th->cpu_timer = t;
	th->has_timer = 1;
}

/* A tick already queued is still delivered (to on_tick, which drops it: has_timer is 0). */
void prof_cpu_stop(struct prof_thread *th)
{
	if (!th->has_timer)
		return;
	th->has_timer = 0;
	timer_delete((timer_t)th->cpu_timer);
}

/* ---- the program's view of TICK_SIGNAL ------------------------------------------------------ */

static int ours(int sig)
{
	return sig == TICK_SIGNAL && atomic_load_explicit(&installed, memory_order_relaxed);
}

PROF_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	resolve();
	if (!ours(sig))
		return real.sigaction(sig, act, old);
	struct sigaction prev = program_sa;
	if (act)
		program_sa = *act;
	if (old)
		*old = prev;
	return 0;
}

PROF_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	resolve();
	if (!ours(sig))
		return real.signal(sig, handler);
	__sighandler_t prev = program_sa.sa_handler;
	memset(&program_sa, 0, sizeof(program_sa));
	program_sa.sa_handler = handler;
	program_sa.sa_flags = SA_RESTART;  /* signal()'s BSD semantics, as glibc gives them */
	return prev;
}

/* set without TICK_SIGNAL, in buf when it had it. */
const sigset_t *prof_cpu_unblocked(const sigset_t *set, sigset_t *buf)
{
	if (!set || !atomic_load_explicit(&installed, memory_order_relaxed) ||
	    !sigismember(set, TICK_SIGNAL))
		return set;
	*buf = *set;
	sigdelset(buf, TICK_SIGNAL);
	return buf;
}

/* set with TICK_SIGNAL, for the length of a wait that takes a mask: a tick cannot end it.
 * A thread that waits uses no CPU, so its timer cannot expire meanwhile; a tick already
 * pending is delivered when the wait returns. NULL stays NULL. */
const sigset_t *prof_cpu_blocked(const sigset_t *set, sigset_t *buf)
{
	if (!set || !atomic_load_explicit(&installed, memory_order_relaxed))
		return set;
	*buf = *set;
	sigaddset(buf, TICK_SIGNAL);
	return buf;
}

int prof_cpu_tick_blocked(void)
{
	return tick_blocked;
}

void prof_cpu_set_tick_blocked(int blocked)
{
	tick_blocked = blocked;
}

/* sigprocmask and pthread_sigmask: fn is the real one, which returns 0 on success. */
static int change_mask(int (*fn)(int, const sigset_t *, sigset_t *), int how, const sigset_t *set,
		       sigset_t *old)
{
	if (!atomic_load_explicit(&installed, memory_order_relaxed))
		return fn(how, set, old);
	sigset_t buf;
	int was = tick_blocked;
	int rc = fn(how, how == SIG_UNBLOCK ? set : prof_cpu_unblocked(set, &buf), old);
	if (rc != 0)
		return rc;
	if (old && was)
		sigaddset(old, TICK_SIGNAL);
	if (set && how == SIG_SETMASK)
		tick_blocked = sigismember(set, TICK_SIGNAL);
	else if (set && sigismember(set, TICK_SIGNAL))
		tick_blocked = how == SIG_BLOCK;
	return 0;
}

/* Inside an unwind of ours every signal is blocked by then, and stays so until it ends:
 * what libunwind saves is the full set, what it restores is ignored. */
static int unwind_mask_call(sigset_t *old)
{
	if (old)
		sigfillset(old);
	return 0;
}

PROF_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (unlikely(prof_self.unwinding >= UNWINDING_MASKED) &&
	    prof_unwind_masks(&prof_self, (uintptr_t)__builtin_return_address(0)))
		return unwind_mask_call(old);
	resolve();
	return change_mask(real.sigprocmask, how, set, old);
}

PROF_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (unlikely(prof_self.unwinding >= UNWINDING_MASKED) &&
	    prof_unwind_masks(&prof_self, (uintptr_t)__builtin_return_address(0)))
		return unwind_mask_call(old);
	resolve();
	return change_mask(real.pthread_sigmask, how, set, old);
}
