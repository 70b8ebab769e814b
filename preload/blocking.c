/* Calls that block a thread without a lock or a file: sleeps, poll/select/epoll, waiting for
 * children and for signals. Each is a CPU_BLOCKED record (its call, duration, result, stack),
 * the off-CPU time that lock, join and I/O records give for theirs.
 *
 * They are also the calls SA_RESTART does not restart: when CPU sampling's signal interrupts
 * one (prof_eintr_ours(): EINTR, and a tick was handled meanwhile), the hook makes it again
 * with what is left of its timeout, so the program never sees that EINTR. A call that takes
 * a signal mask (ppoll, pselect, epoll_pwait, sigsuspend, pause) gets the sampling signal
 * added to it instead: a waiting thread uses no CPU, so no tick is lost. An EINTR from the
 * program's own signals is returned as always. */
#include "prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		size_t fdslen);

#define BLOCK_REALS(X)                                                                     \
	X(nanosleep) X(clock_nanosleep) X(poll) X(ppoll) X(__poll_chk) X(__ppoll_chk)       \
	X(select) X(pselect) X(epoll_wait) X(epoll_pwait) X(waitpid) X(wait) X(wait3)       \
	X(wait4) X(waitid) X(sigsuspend) X(sigwait) X(sigwaitinfo) X(sigtimedwait)

static struct {
#define BLOCK_X(name) __typeof__(&name) name;
	BLOCK_REALS(BLOCK_X)
#undef BLOCK_X
} real;

static void *resolve(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (unlikely(!p)) {
		prof_hook_enter(&prof_self);  /* dlsym may allocate: not the program's */
		p = dlsym(RTLD_NEXT, name);
		prof_self.in_hook--;
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}
#define REAL(name) ((__typeof__(real.name))resolve((void **)&real.name, #name))
#define SITE ((uintptr_t)__builtin_return_address(0))

/* ---- recording ---------------------------------------------------------------------------- */

/* Writes the CPU_BLOCKED of a call made from site since t0 that returned result (-errno).
 * A call with a zero timeout (an event loop's poll) never blocks: not written. */
static void blocked(unsigned op, uint64_t t0, int64_t result, uintptr_t site)
{
	struct prof_thread *th = prof_recording(PROF_EV_CPU);
	if (!th || t0 == 0)
		return;
	uint64_t t1 = prof_now();
	int saved = errno;
	prof_hook_enter(th);
	prof_thread_get();
	uint32_t stack = prof_stack_at(th, site);
	struct prof_rec_cpu_blocked *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->duration_ns = t1 - t0;
		r->result = result;
		r->stack = stack;
		r->pad = 0;
		prof_commit(r, PROF_REC_CPU_BLOCKED, op, sizeof(*r), t1);
	}
	th->in_hook--;
	errno = saved;
}

/* A call that may block is a cancellation point: a thread cancelled in it (pthread_cancel()) is
 * unwound from inside the real call, past the rest of the hook. The time it was blocked until
 * then is written all the same, with result -ECANCELED, by a cleanup handler registered
 * around the call where it may block (t0 set: a call that cannot, as a zero timeout's, pays
 * nothing). */
struct blocked_call {
	unsigned op;
	uint64_t t0;
	uintptr_t site;
};

static void blocked_cancelled(void *arg)
{
	const struct blocked_call *b = arg;
	blocked(b->op, b->t0, -ECANCELED, b->site);
}

/* pthread_cleanup_push() is a setjmp that returns a second time only on the way out of a
 * cancelled thread, which runs the handler with what it was given and then goes on unwinding,
 * never back into the function: none of its locals is read after that second return, which
 * -Wclobbered cannot know. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wclobbered"
#endif
#define CANCELLABLE(op, t0, site, ...)                                 \
	do {                                                            \
		if (!(t0)) {                                            \
			__VA_ARGS__;                                    \
			break;                                          \
		}                                                       \
		struct blocked_call bc_ = { (op), (t0), (site) };       \
		pthread_cleanup_push(blocked_cancelled, &bc_);          \
		__VA_ARGS__;                                            \
		pthread_cleanup_pop(0);                                 \
	} while (0)

static int64_t result_of(long rc)
{
	return rc < 0 ? -(int64_t)errno : rc;
}

/* Calls the real function until it does not fail with an EINTR of ours. `again` runs before
 * each new attempt (to shorten a timeout). rc: the variable that takes the result. */
#define RETRY(rc, call, again)                                         \
	for (;;) {                                                     \
		uint32_t ticks_ = prof_ticks();                        \
		rc = (call);                                           \
		if (!prof_eintr_ours((int)(rc < 0 ? -1 : 0), ticks_))  \
			break;                                         \
		again;                                                 \
	}

/* What is left at now of a timeout of ts begun at t0, in buf; NULL stays NULL. */
static const struct timespec *ts_left(const struct timespec *ts, uint64_t t0, struct timespec *buf)
{
	if (!ts)
		return NULL;
	uint64_t want = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
	uint64_t used = prof_now() - t0;
	uint64_t left = want > used ? want - used : 0;
	buf->tv_sec = (time_t)(left / 1000000000u);
	buf->tv_nsec = (long)(left % 1000000000u);
	return buf;
}

/* The same for a timeout in ms (< 0: none). */
static int ms_left(int timeout, uint64_t t0)
{
	if (timeout <= 0)
		return timeout;
	uint64_t used = (prof_now() - t0) / 1000000u;
	return used >= (uint64_t)timeout ? 0 : timeout - (int)used;
}

/* ---- sleeps ------------------------------------------------------------------------------- */

static int sleep_ns(unsigned op, const struct timespec *req, struct timespec *rem, uintptr_t site)
{
	uint64_t t0 = prof_now();
	struct timespec left, r;
	const struct timespec *want = req;
	int rc;
	CANCELLABLE(op, t0, site, RETRY(rc, REAL(nanosleep)(want, &r), (left = r, want = &left)));
	int err = errno;
	if (rc < 0 && err == EINTR && rem)
		*rem = r;
	blocked(op, t0, result_of(rc), site);
	errno = err;
	return rc;
}

PROF_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	return sleep_ns(PROF_BLOCK_NANOSLEEP, req, rem, SITE);
}

PROF_EXPORT int usleep(useconds_t us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };
	return sleep_ns(PROF_BLOCK_USLEEP, &ts, NULL, SITE);
}

/* As glibc's: the seconds left (rounded) when a signal of the program ended it. */
PROF_EXPORT unsigned sleep(unsigned seconds)
{
	struct timespec ts = { (time_t)seconds, 0 }, rem = { 0, 0 };
	int saved = errno;
	if (sleep_ns(PROF_BLOCK_SLEEP, &ts, &rem, SITE) < 0)
		return (unsigned)rem.tv_sec + (rem.tv_nsec >= 500000000L);
	errno = saved;
	return 0;
}

/* Returns an error number, not -1 and errno. */
PROF_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
				struct timespec *rem)
{
	uint64_t t0 = prof_now();
	struct timespec left, r;
	const struct timespec *want = req;
	int rc;
	CANCELLABLE(PROF_BLOCK_CLOCK_NANOSLEEP, t0, SITE, for (;;) {
		uint32_t ticks = prof_ticks();
		rc = REAL(clock_nanosleep)(clk, flags, want, &r);
		if (rc != EINTR || prof_ticks() == ticks)
			break;
		if (!(flags & TIMER_ABSTIME)) {
			left = r;
			want = &left;
		}
	});
	if (rc == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = r;
	blocked(PROF_BLOCK_CLOCK_NANOSLEEP, t0, -(int64_t)rc, SITE);
	return rc;
}

/* ---- waiting for descriptors ---------------------------------------------------------------- */

/* The start time of a call, or 0 for one that cannot block (a zero timeout). */
static uint64_t start(int may_block)
{
	return may_block ? prof_now() : 0;
}

static int zero_ts(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec == 0;
}

static int poll_common(struct pollfd *fds, nfds_t n, int timeout, uintptr_t site)
{
	uint64_t t0 = start(timeout != 0);
	int rc, ms = timeout;
	CANCELLABLE(PROF_BLOCK_POLL, t0, site,
		    RETRY(rc, REAL(poll)(fds, n, ms), ms = ms_left(timeout, t0)));
	int err = errno;
	blocked(PROF_BLOCK_POLL, t0, result_of(rc), site);
	errno = err;
	return rc;
}

PROF_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	return poll_common(fds, n, timeout, SITE);
}

PROF_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		return REAL(__poll_chk)(fds, n, timeout, fdslen);  /* let it report the overflow */
	return poll_common(fds, n, timeout, SITE);
}

static int ppoll_common(struct pollfd *fds, nfds_t n, const struct timespec *ts,
			const sigset_t *mask, uintptr_t site)
{
	uint64_t t0 = start(!zero_ts(ts));
	sigset_t buf;
	struct timespec left;
	const struct timespec *want = ts;
	int rc;
	CANCELLABLE(PROF_BLOCK_PPOLL, t0, site,
		    RETRY(rc, REAL(ppoll)(fds, n, want, prof_cpu_blocked(mask, &buf)),
			  want = ts_left(ts, t0, &left)));
	int err = errno;
	blocked(PROF_BLOCK_PPOLL, t0, result_of(rc), site);
	errno = err;
	return rc;
}

PROF_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	return ppoll_common(fds, n, ts, mask, SITE);
}

PROF_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
			    const sigset_t *mask, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		return REAL(__ppoll_chk)(fds, n, ts, mask, fdslen);
	return ppoll_common(fds, n, ts, mask, SITE);
}

/* Linux leaves the sets as they were when select fails, and counts tv down to what is left:
 * the same arguments make the call again. */
PROF_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	uint64_t t0 = start(!tv || tv->tv_sec || tv->tv_usec);
	int rc;
	CANCELLABLE(PROF_BLOCK_SELECT, t0, SITE,
		    RETRY(rc, REAL(select)(nfds, r, w, e, tv), (void)0));
	int err = errno;
	blocked(PROF_BLOCK_SELECT, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

PROF_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
			const sigset_t *mask)
{
	uint64_t t0 = start(!zero_ts(ts));
	sigset_t buf;
	struct timespec left;
	const struct timespec *want = ts;
	int rc;
	CANCELLABLE(PROF_BLOCK_PSELECT, t0, SITE,
		    RETRY(rc, REAL(pselect)(nfds, r, w, e, want, prof_cpu_blocked(mask, &buf)),
			  want = ts_left(ts, t0, &left)));
	int err = errno;
	blocked(PROF_BLOCK_PSELECT, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

PROF_EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	uint64_t t0 = start(timeout != 0);
	int rc, ms = timeout;
	CANCELLABLE(PROF_BLOCK_EPOLL_WAIT, t0, SITE,
		    RETRY(rc, REAL(epoll_wait)(ep, ev, max, ms), ms = ms_left(timeout, t0)));
	int err = errno;
	blocked(PROF_BLOCK_EPOLL_WAIT, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

PROF_EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
			    const sigset_t *mask)
{
	uint64_t t0 = start(timeout != 0);
	sigset_t buf;
	int rc, ms = timeout;
	CANCELLABLE(PROF_BLOCK_EPOLL_PWAIT, t0, SITE,
		    RETRY(rc, REAL(epoll_pwait)(ep, ev, max, ms, prof_cpu_blocked(mask, &buf)),
			  ms = ms_left(timeout, t0)));
	int err = errno;
	blocked(PROF_BLOCK_EPOLL_PWAIT, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

/* ---- waiting for children (SA_RESTART restarts these) --------------------------------------- */

/* The wait calls that return a status: the real call with the caller's status, or ours where
 * it passed none, so that the end of a child is recorded either way (prof_reaped()); a call
 * that may block (no WNOHANG) is blocked time. */
#define REAP_HOOK(op, options, call_with_st)                        \
	do {                                                         \
		uint64_t t0 = prof_now();                            \
		int local;                                           \
		int *st = status ? status : &local;                  \
		pid_t rc;                                            \
		CANCELLABLE(op, (options) & WNOHANG ? 0 : t0, SITE,  \
			    rc = call_with_st);                      \
		int err = errno;                                     \
		if (rc > 0)                                          \
			prof_reaped(rc, *st);                        \
		if (!((options) & WNOHANG))                          \
			blocked(op, t0, result_of(rc), SITE);        \
		errno = err;                                         \
		return rc;                                           \
	} while (0)

PROF_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	REAP_HOOK(PROF_BLOCK_WAITPID, options, REAL(waitpid)(pid, st, options));
}

PROF_EXPORT pid_t wait(int *status)
{
	REAP_HOOK(PROF_BLOCK_WAIT, 0, REAL(wait)(st));
}

PROF_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	REAP_HOOK(PROF_BLOCK_WAIT4, options, REAL(wait4)(pid, st, options, ru));
}

PROF_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	REAP_HOOK(PROF_BLOCK_WAIT3, options, REAL(wait3)(st, options, ru));
}

/* waitid's siginfo as a wait status: exits and deaths by signal only. */
static int status_of(const siginfo_t *si)
{
	switch (si->si_code) {
	case CLD_EXITED: return (si->si_status & 0xff) << 8;
	case CLD_KILLED: return si->si_status & 0x7f;
	case CLD_DUMPED: return (si->si_status & 0x7f) | 0x80;
	default: return -1;
	}
}

PROF_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	uint64_t t0 = prof_now();
	siginfo_t local = { 0 };
	siginfo_t *si = info ? info : &local;
	int rc;
	CANCELLABLE(PROF_BLOCK_WAITID, options & WNOHANG ? 0 : t0, SITE,
		    rc = REAL(waitid)(type, id, si, options));
	int err = errno;
	int status = rc == 0 && si->si_pid > 0 && !(options & WNOWAIT) ? status_of(si) : -1;
	if (status >= 0)
		prof_reaped(si->si_pid, status);
	if (!(options & WNOHANG))
		blocked(PROF_BLOCK_WAITID, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

/* ---- waiting for signals ------------------------------------------------------------------ */

static int suspend(unsigned op, const sigset_t *mask, uintptr_t site)
{
	uint64_t t0 = prof_now();
	sigset_t buf;
	int rc;
	CANCELLABLE(op, t0, site, rc = REAL(sigsuspend)(prof_cpu_blocked(mask, &buf)));
	int err = errno;
	blocked(op, t0, result_of(rc), site);
	errno = err;
	return rc;
}

PROF_EXPORT int sigsuspend(const sigset_t *mask)
{
	return suspend(PROF_BLOCK_SIGSUSPEND, mask, SITE);
}

/* pause() is sigsuspend() with the mask the thread has. */
PROF_EXPORT int pause(void)
{
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	return suspend(PROF_BLOCK_PAUSE, &cur, SITE);
}

PROF_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	uint64_t t0 = prof_now();
	sigset_t buf;
	int rc;
	CANCELLABLE(PROF_BLOCK_SIGWAIT, t0, SITE,
		    rc = REAL(sigwait)(prof_cpu_unblocked(set, &buf), sig));
	blocked(PROF_BLOCK_SIGWAIT, t0, -(int64_t)rc, SITE);
	return rc;
}

PROF_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	uint64_t t0 = prof_now();
	sigset_t buf;
	int rc;
	CANCELLABLE(PROF_BLOCK_SIGWAITINFO, t0, SITE,
		    RETRY(rc, REAL(sigwaitinfo)(prof_cpu_unblocked(set, &buf), info), (void)0));
	int err = errno;
	blocked(PROF_BLOCK_SIGWAITINFO, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}

PROF_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	uint64_t t0 = start(!zero_ts(ts));
	sigset_t buf;
	struct timespec left;
	const struct timespec *want = ts;
	int rc;
	CANCELLABLE(PROF_BLOCK_SIGTIMEDWAIT, t0, SITE,
		    RETRY(rc, REAL(sigtimedwait)(prof_cpu_unblocked(set, &buf), info, want),
			  want = ts_left(ts, t0, &left)));
	int err = errno;
	blocked(PROF_BLOCK_SIGTIMEDWAIT, t0, result_of(rc), SITE);
	errno = err;
	return rc;
}
