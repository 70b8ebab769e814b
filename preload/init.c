/* libprof's lifecycle: configuration, start-up, threads, fork, exec, exit and fatal signals. */
#include "prof.h"
#include "heap_tally.h"
#include "python.h"
#include "locks.h"
#include "io.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

struct prof_config prof_cfg = { .events = PROF_EV_ALL, .stack_depth = 64, .stack_cache = 1,
				.cpu_hz = 99,
				.free_at_exit = 1, .leak_check = 1, .max_size = 64ull << 30 };
_Atomic int prof_active;
__thread struct prof_thread prof_self;

static _Atomic uint32_t next_serial = 1;
static _Atomic int threads_alive;

/* The running threads, each its serial and tid in one word: a thread still running when the
 * process ends (exit() or _exit() by another, an exec) dies without its own THREAD_END, and
 * the end writes it in its place (end_others()). Threads past LIVE_SLOTS are left to the
 * analyzer's estimate from their CPU samples. */
#define LIVE_SLOTS 4096
static _Atomic uint64_t live_taken[LIVE_SLOTS / 64];
static PROF_BULK _Atomic uint64_t live[LIVE_SLOTS];

/* The first thread's CPU clock when the trace started: it counts from its creation, which
 * an exec does not reset; what it ran in an image before (or in the loader, before libprof
 * started) is not this trace's. Other threads' clocks start with the thread. */
static uint64_t first_cpu_base;

static uint64_t thread_cpu_ns(clockid_t clock)
{
	struct timespec ts;
	if (clock_gettime(clock, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_key_t thread_key;
static char self_path[1024];  /* our own .so, for LD_PRELOAD across exec */
extern char **environ;
static char **saved_argv;     /* for the trace header of fork children */
static int saved_argc;

/* The stderr the program started with (device and inode of descriptor 2's file): messages
 * go there only while descriptor 2 still is that file, so that a program which closes stderr
 * and opens a file of its own (which takes descriptor 2) never finds them in that file.
 * Noted when recording starts, or at the first message if one comes before. */
static struct {
	dev_t dev;
	ino_t ino;
	int state;  /* 0 not noted yet, 1 open, -1 closed */
} first_stderr;

static void note_stderr(void)
{
	struct stat st;
	if (fstat(2, &st) == 0) {
		first_stderr.dev = st.st_dev;
		first_stderr.ino = st.st_ino;
		first_stderr.state = 1;
	} else {
		first_stderr.state = -1;
	}
}

/* A message line to that stderr, never recorded as the program's I/O. Only fstat(2) and
 * write(2): safe in a signal handler; errno kept. */
static void write_line(const char *buf, size_t len)
{
	int saved = errno;
	struct stat st;
	prof_hook_enter(&prof_self);
	if (!first_stderr.state)
		note_stderr();
	if (first_stderr.state == 1 && fstat(2, &st) == 0 && st.st_dev == first_stderr.dev &&
	    st.st_ino == first_stderr.ino) {
		ssize_t rc = write(2, buf, len);
		(void)rc;
	}
	prof_self.in_hook--;
	errno = saved;
}

void prof_log(const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "libprof[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	write_line(buf, len);
}

const char *prof_proc_self(void)
{
	static _Atomic int thread_self = -1;
	int has = atomic_load_explicit(&thread_self, memory_order_relaxed);
	if (has < 0) {
		int err = errno;
		has = access("/proc/thread-self", F_OK) == 0;
		errno = err;
		atomic_store_explicit(&thread_self, has, memory_order_relaxed);
	}
	return has ? "/proc/thread-self" : "/proc/self";
}

/* Appends the decimal v to buf at len (room for 21 bytes is the caller's); the new length. */
static size_t put_num(char *buf, size_t len, long v)
{
	char tmp[24];
	int i = (int)sizeof(tmp);
	unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
	do
		tmp[--i] = (char)('0' + u % 10);
	while ((u /= 10) && i > 1);
	if (v < 0)
		tmp[--i] = '-';
	while (i < (int)sizeof(tmp))
		buf[len++] = tmp[i++];
	return len;
}

/* strerror() of what can stop a trace file from growing; strerror itself may take locale
 * locks, which a signal handler must not. */
static const char *errno_text(int err)
{
	switch (err) {
	case ENOSPC: return "No space left on device";
	case EDQUOT: return "Disk quota exceeded";
	case EIO: return "Input/output error";
	case EFBIG: return "File too large";
	case EBADF: return "Bad file descriptor";
	case EROFS: return "Read-only file system";
	case ENOMEM: return "Cannot allocate memory";
	default: return NULL;
	}
}

/* prof_log() without stdio, for signal handlers: only copies and write(2). */
void prof_say(const char *a, const char *b, const char *c, int err)
{
	char buf[512];
	memcpy(buf, "libprof[", 8);
	size_t len = put_num(buf, 8, getpid());
	const char *parts[] = { "]: ", a, b, c };
	for (int k = 0; k < 4; k++)
		for (const char *p = parts[k]; p && *p && len < sizeof(buf) - 24; p++)
			buf[len++] = *p;
	const char *text = errno_text(err);
	if (err) {
		for (const char *p = ": "; *p; p++)
			buf[len++] = *p;
		if (text) {
			for (const char *p = text; *p && len < sizeof(buf) - 2; p++)
				buf[len++] = *p;
		} else {
			memcpy(buf + len, "errno ", 6);
			len = put_num(buf, len + 6, err);
		}
	}
	buf[len++] = '\n';
	write_line(buf, len);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': return v << 10;
	case 'm': case 'M': return v << 20;
	case 'g': case 'G': return v << 30;
	case 't': case 'T': return v << 40;
	default: return v;
	}
}

/* One line naming the PROF_EVENTS entries that are no family (they are ignored). */
static void log_unknown_events(const char *list)
{
	char unknown[256] = "";
	size_t used = 0;
	while (*list) {
		size_t n = strcspn(list, ",");
		char item[64];
		int bad = 0;
		snprintf(item, sizeof(item), "%.*s", (int)n, list);
		prof_events_parse(item, &bad);
		if (bad && used + n + 2 < sizeof(unknown))
			used += (size_t)snprintf(unknown + used, sizeof(unknown) - used, "%s%s",
						 used ? "," : "", item);
		list += n + (list[n] == ',');
	}
	prof_log("PROF_EVENTS: unknown event famil%s '%s' ignored (known: alloc,lock,thread,io,cuda,cpu,db,http,all)",
		 strchr(unknown, ',') ? "ies" : "y", unknown);
}

/* The PROF_* settings this process started with, carried into programs it starts. */
static const char *const carried_names[] = { "PROF_OUTPUT", "PROF_EVENTS", "PROF_STACK_DEPTH",
					     "PROF_CPU_HZ", "PROF_FREERES", "PROF_MAX_SIZE",
					     "PROF_DEBUG", "PROF_LEAK_CHECK", "PROF_ONLY",
					     "PROF_ROOT_PID", "PROF_STACK_CACHE", "PROF_HEAP_SAMPLE",
					     "PROF_HEAP_SAMPLE_SEED" };
#define NCARRIED (sizeof(carried_names) / sizeof(carried_names[0]))
static PROF_BULK char carried[NCARRIED][1100];

/* The trace template, relative to the directory the process started in: a program that
 * changes directory (a daemon's chdir("/")) before it forks or execs must not scatter the
 * run's traces, or fail to create them there. An exec'd program gets it as PROF_OUTPUT
 * (carried[0]) when it was set. */
static void output_from_start_dir(const char *v)
{
	const char *tmpl = v && *v ? v : "prof.%n.%p.trace";
	char *out = prof_cfg.output, cwd[512];
	size_t lt = strlen(tmpl), lc;
	if (tmpl[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
	    (lc = strlen(cwd)) + 1 + lt < sizeof(prof_cfg.output)) {
		memcpy(out, cwd, lc);
		out[lc] = '/';
		memcpy(out + lc + 1, tmpl, lt + 1);
	} else {
		snprintf(out, sizeof(prof_cfg.output), "%s", tmpl);
	}
	if (v && *v)  /* carried_names[0] */
		snprintf(carried[0], sizeof(carried[0]), "PROF_OUTPUT=%s", prof_cfg.output);
}

static void read_config(void)
{
	const char *v;
	for (size_t i = 0; i < NCARRIED; i++)
		if ((v = getenv(carried_names[i])))
			snprintf(carried[i], sizeof(carried[i]), "%s=%s", carried_names[i], v);
	output_from_start_dir(getenv("PROF_OUTPUT"));
	if ((v = getenv("PROF_EVENTS")) && *v) {
		int bad;
		prof_cfg.events = prof_events_parse(v, &bad);
		if (bad)
			log_unknown_events(v);
	}
	if ((v = getenv("PROF_STACK_DEPTH")) && *v) {
		long d = strtol(v, NULL, 10);
		prof_cfg.stack_depth = d < 0 ? 0 : d > PROF_MAX_STACK_DEPTH ? PROF_MAX_STACK_DEPTH : (unsigned)d;
	}
	if ((v = getenv("PROF_CPU_HZ")) && *v) {
		char *end;
		unsigned long hz = strtoul(v, &end, 10);
		if (*end || *v < '0' || *v > '9' || hz > 100000)
			prof_log("PROF_CPU_HZ=%s: not a rate from 0 to 100000 Hz; %u Hz it is", v,
				 prof_cfg.cpu_hz);
		else
			prof_cfg.cpu_hz = (unsigned)hz;
	}
	if ((v = getenv("PROF_FREERES")) && *v)
		prof_cfg.free_at_exit = atoi(v) != 0;
	if ((v = getenv("PROF_ONLY")) && *v)
		snprintf(prof_cfg.only, sizeof(prof_cfg.only), "%s", v);
	if ((v = getenv("PROF_ROOT_PID")) && *v)
		prof_cfg.root_pid = (uint32_t)strtoul(v, NULL, 10);
	if ((v = getenv("PROF_LEAK_CHECK")) && *v)
		prof_cfg.leak_check = atoi(v) != 0;
	if ((v = getenv("PROF_MAX_SIZE")) && *v)
		prof_cfg.max_size = parse_size(v);
	if ((v = getenv("PROF_DEBUG")) && *v)
		prof_cfg.debug = atoi(v);
	if ((v = getenv("PROF_STACK_CACHE")) && *v)
		prof_cfg.stack_cache = strcmp(v, "check") == 0 ? 2 : atoi(v) != 0;
	if ((v = getenv("PROF_HEAP_SAMPLE")) && *v) {
		uint64_t b = parse_size(v);
		prof_cfg.heap_sample = b > (1ull << 30) ? 1ull << 30 : b;
		/* The sampled mode knows only its sampled and large blocks one by one, too few
		 * to tell which of the others point to them: no leak classes. */
		if (b) {
			if (prof_cfg.leak_check && (v = getenv("PROF_LEAK_CHECK")) && *v)
				prof_log("PROF_LEAK_CHECK is ignored with PROF_HEAP_SAMPLE: the sampled "
					 "mode does not classify leaks");
			prof_cfg.leak_check = 0;
		}
	}
	if ((v = getenv("PROF_HEAP_SAMPLE_SEED")) && *v)
		prof_cfg.heap_sample_seed = strtoull(v, NULL, 0);
}

/* ---- threads ---------------------------------------------------------------------------- */

/* Where the thread came from: known for threads created through our pthread_create hook
 * (threads.c), ~0u/0/0 for the main thread and threads registered on first use. */
static void write_thread_start(struct prof_thread *th, uint32_t parent_serial, uint32_t stack,
			       uint64_t start_routine)
{
	struct prof_rec_thread_start *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->serial = th->serial;
	r->tid = th->tid;
	r->parent_serial = parent_serial;
	r->stack = stack;
	r->start_routine = start_routine;
	prof_commit(r, PROF_REC_THREAD_START, 0, sizeof(*r), prof_now());
}

static void register_thread_from(struct prof_thread *th, uint32_t parent_serial, uint32_t stack,
				 uint64_t start_routine)
{
	th->serial = atomic_fetch_add(&next_serial, 1);
	th->tid = (uint32_t)gettid();
	if (th->serial == 1)
		first_cpu_base = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_fetch_add(&threads_alive, 1);
	int slot = prof_slot_claim(live_taken, LIVE_SLOTS);
	if (slot >= 0) {
		atomic_store(&live[slot], (uint64_t)th->serial << 32 | th->tid);
		th->live_slot = (uint32_t)slot + 1;
	}
	/* A non-NULL value makes the key's destructor run at thread exit. */
	pthread_setspecific(thread_key, th);
	write_thread_start(th, parent_serial, stack, start_routine);
	prof_cpu_start(th);
}

void prof_thread_register(struct prof_thread *th)
{
	register_thread_from(th, ~0u, 0, 0);
}

/* Called by the start trampoline of a created thread (threads.c), under in_hook. */
struct prof_thread *prof_thread_start_child(uint32_t parent_serial, uint32_t stack,
					    uint64_t start_routine)
{
	struct prof_thread *th = &prof_self;
	if (th->serial == 0)
		register_thread_from(th, parent_serial, stack, start_routine);
	return th;
}

/* A THREAD_END, written by th, for the thread serial (tid): th itself, or another one that
 * dies with the process; its CPU time is its clock's (the kernel's thread CPU clock id for a
 * tid, as pthread_getcpuclockid() makes it), its name what the kernel holds. */
static void write_thread_end(struct prof_thread *th, uint32_t serial, uint32_t tid)
{
	struct prof_rec_thread_end *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	int self = serial == th->serial;
	/* 0 where the thread is gone meanwhile: the analyzer estimates from its samples. */
	uint64_t cpu = thread_cpu_ns(self ? CLOCK_THREAD_CPUTIME_ID : (clockid_t)((~tid << 3) | 6));
	uint64_t base = serial == 1 ? first_cpu_base : 0;
	r->serial = serial;
	r->tid = tid;
	r->cpu_ns = cpu > base ? cpu - base : 0;
	memset(r->name, 0, sizeof(r->name));
	if (self) {
		prctl(PR_GET_NAME, r->name);
	} else {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, r->name, 15) : 0;
		if (fd >= 0)
			close(fd);
		if (n > 0 && r->name[n - 1] == '\n')
			r->name[n - 1] = 0;
	}
	prof_commit(r, PROF_REC_THREAD_END, 0, sizeof(*r), prof_now());
}

/* The process ends (exit, _exit, exec): th ends every other thread still running. Only the
 * slots taken are read: reading all of them faulted in 8 pages that most processes never
 * wrote. */
static void end_others(struct prof_thread *th)
{
	for (unsigned w = 0; w < LIVE_SLOTS / 64; w++) {
		for (uint64_t bits = atomic_load(&live_taken[w]); bits; bits &= bits - 1) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(bits);
			uint64_t v = atomic_load(&live[i]);  /* 0: a slot being claimed */
			if (v && (uint32_t)(v >> 32) != th->serial)
				write_thread_end(th, (uint32_t)(v >> 32), (uint32_t)v);
		}
	}
}

void prof_thread_end(struct prof_thread *th, int process_ends)
{
	if (th->serial == 0)
		return;
	prof_cpu_stop(th);
	prof_modules_rescan_if_stale();
	heap_tally_thread_done(th);
	io_batches_flush(th);
	write_thread_end(th, th->serial, th->tid);
	if (th->live_slot) {
		atomic_store(&live[th->live_slot - 1], 0);
		prof_slot_give(live_taken, th->live_slot - 1);
		th->live_slot = 0;
	}
	prof_writer_thread_done(th);
	prof_stacks_thread_done(th, process_ends);
	atomic_fetch_sub(&threads_alive, 1);
}

int prof_threads_alive(void)
{
	return atomic_load(&threads_alive);
}

static void thread_key_destructor(void *arg)
{
	struct prof_thread *th = arg;
	if (!atomic_load(&prof_active))
		return;
	int saved = errno;
	prof_hook_enter(th);
	prof_thread_end(th, 0);
	th->in_hook--;
	errno = saved;
}

/* ---- start and end ---------------------------------------------------------------------- */

static void write_exit(unsigned how, int code)
{
	/* A trace the writer gave up on (full disk) must not claim a normal end. */
	if (prof_writer_disabled())
		return;
	struct prof_thread *th = prof_thread_get();
	prof_writer_final();
	struct prof_rec_exit *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->how = how;
	r->code = code;
	prof_commit(r, PROF_REC_EXIT, 0, sizeof(*r), prof_now());
}

/* What the hooks left out where threads had little stack left (prof_stack_tight()), or held
 * the loader's lock. */
static void say_cuts(void)
{
	uint64_t cut = atomic_load(&prof_tight_stacks), io = atomic_load(&prof_tight_io);
	uint64_t left = atomic_load(&prof_hooks_left);
	if (cut || io)
		prof_log("threads with little stack left (sized by the program or ulimit -s): %llu stacks "
			 "recorded as their call site alone, %llu I/O calls not recorded",
			 (unsigned long long)cut, (unsigned long long)io);
	uint64_t in_loader = atomic_load(&prof_loader_stacks);
	if (in_loader)
		prof_log("%llu stacks taken inside dl_iterate_phdr callbacks (holding the loader's "
			 "lock, which libunwind would wait for) recorded as their call site alone",
			 (unsigned long long)in_loader);
	if (left)
		prof_log("the program's signal handlers longjmp'd out of libprof's hooks %llu times: "
			 "the event each was recording is lost", (unsigned long long)left);
}

/* The two functions valgrind calls at exit to free libstdc++'s pool and libc's own blocks,
 * looked up once for a set of loaded objects (prof_loader_counts()).
 * A process that forks looks them up first, so that its children exit without: a look-up
 * that fails (no libstdc++) walks every object's symbols, and a fork child paid three. */
static struct {
	unsigned long long adds, subs;  /* the objects' counts when looked up; adds 0: never */
	void (*fn[2])(void);
} freeres;

static void freeres_lookup(void)
{
	unsigned long long counts[2];
	prof_loader_counts(counts);
	if (counts[0] && counts[0] == freeres.adds && counts[1] == freeres.subs)
		return;
	static const char *const names[2] = { "_ZN9__gnu_cxx9__freeresEv", "__libc_freeres" };
	for (size_t i = 0; i < 2; i++)
		freeres.fn[i] = (void (*)(void))prof_dlsym_optional(RTLD_DEFAULT, names[i]);
	freeres.adds = counts[0];
	freeres.subs = counts[1];
}

static int freeing_at_exit(void)
{
	return prof_cfg.free_at_exit && (prof_cfg.events & PROF_EV_ALLOC);
}

static void freeres_before_fork(void)
{
	/* Not from a signal handler's fork inside one of our hooks: the look-up is not needed
	 * (the child starts later, prof_fork_child()) and dlsym may not be safe there. */
	if (freeing_at_exit() && atomic_load_explicit(&prof_active, memory_order_relaxed) &&
	    !prof_self.in_hook) {
		int saved = errno;
		freeres_lookup();
		errno = saved;
	}
}

/* The end of the run: libc's own blocks freed, the leak scan, the last records. stack_from:
 * as prof_leak_scan()'s. */
static void exit_work(int status, uintptr_t stack_from)
{
	struct prof_thread *th = prof_thread_get();
	/* exit() from a signal handler that interrupted one of our hooks (a SIGTERM handler's
	 * exit): that hook never resumes, and the stream it was writing must take the end. */
	if (th->in_hook)
		prof_hook_abandon(th);
	int others = prof_threads_alive() > 1;
	if (freeing_at_exit() && !others) {
		freeres_lookup();
		for (size_t i = 0; i < 2; i++)  /* libstdc++'s pool, then libc's own blocks */
			if (freeres.fn[i])  /* what it frees is recorded */
				freeres.fn[i]();
	}
	prof_hook_enter(th);
	prof_modules_rescan();  /* before the leak scan stops the other threads (loader lock) */
	prof_leak_scan(stack_from);
	heap_tally_flush_all(th);  /* every thread's counts, the others' too */
	io_batches_flush_all(th);
	prof_locks_flush();
	end_others(th);
	prof_thread_end(th, 1);
	say_cuts();
	write_exit(0, status);
	atomic_store(&prof_active, 0);
	prof_writer_close(others);
	/* Last: a reader that sees the trace ended (prof pack, which then compresses it) finds
	 * the file at its final size, not cut short while it reads. */
	prof_writer_set_state(PROF_STATE_EXITED);
	th->in_hook--;
}

/* exit_work() takes some 12 KiB of stack, the leak scan most of it. A thread the program
 * gave a small stack may call exit(): there the work runs on a stack mapped for it, and the
 * leak scan reads the thread's own stack from where the switch left it (its registers are
 * saved there, in `back`). The mapping is libprof's own memory, never a root. */
#define EXIT_ROOM (32u << 10)
#define EXIT_STACK_BYTES (256u << 10)
static int exit_status;
static uintptr_t exit_stack_from;

static void exit_work_switched(void)
{
	exit_work(exit_status, exit_stack_from);
}

static __attribute__((noinline)) int exit_on_own_stack(int status)
{
	void *stack = mmap(NULL, EXIT_STACK_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return 0;
	ucontext_t back, run;
	if (getcontext(&run) < 0) {
		munmap(stack, EXIT_STACK_BYTES);
		return 0;
	}
	prof_own_memory(stack, EXIT_STACK_BYTES);
	run.uc_stack.ss_sp = stack;
	run.uc_stack.ss_size = EXIT_STACK_BYTES;
	run.uc_link = &back;
	makecontext(&run, exit_work_switched, 0);
	exit_status = status;
	exit_stack_from = (uintptr_t)&back < (uintptr_t)&run ? (uintptr_t)&back : (uintptr_t)&run;
	return swapcontext(&back, &run) == 0;
}

int prof_recording_here(void)
{
	return atomic_load(&prof_active) && (uint32_t)getpid() == prof_writer_pid();
}

/* A child sharing our memory (vfork) called exit(): glibc marked the exit handlers run, in
 * the parent's memory. Set there, read by the parent when it resumes. */
static _Atomic int exit_handler_spent;

/* Runs after every destructor (registered before libc registers _dl_fini), as the last
 * atexit-style handler: like valgrind, let libc free its own blocks first, then close. */
static void on_exit_handler(int status, void *arg)
{
	(void)arg;
	if (!atomic_load(&prof_active))
		return;
	if ((uint32_t)getpid() != prof_writer_pid()) {  /* a vfork child: the trace is the parent's */
		int never = 0;
		atomic_compare_exchange_strong(&exit_handler_spent, &never, 1);
		return;
	}
	if (prof_stack_tight(&prof_self, EXIT_ROOM) && exit_on_own_stack(status))
		return;
	exit_work(status, 0);
}

void prof_borrower_done(void)
{
	if (atomic_exchange(&exit_handler_spent, 0) != 1)
		return;
	atomic_store(&exit_handler_spent, 2);  /* said once */
	/* glibc also refuses new handlers from then on (its exit is "done"). */
	prof_log("a vfork child called exit(), which ran this process's exit handlers, libprof's "
		 "among them: its end (exit status, leaks) will not be recorded");
}

/* _exit and _Exit skip every exit handler: record the counts, the threads' ends and the
 * status (how 2: no leak scan), then leave as they would. A vfork child shares our memory and
 * must not write the parent's end. */
void prof_quick_exit(int status)
{
	if (prof_recording_here()) {
		if (prof_self.in_hook)  /* a handler's _exit: as in exit_work() */
			prof_hook_abandon(&prof_self);
		struct prof_thread *th = prof_thread_get();
		prof_hook_enter(th);
		heap_tally_flush_all(th);
		io_batches_flush_all(th);
		prof_locks_flush();
		end_others(th);
		prof_thread_end(th, 1);
		write_exit(2, status);
		prof_self.in_hook--;
	}
}

static __attribute__((noreturn)) void quick_exit_with(int status)
{
	prof_quick_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

PROF_EXPORT void _exit(int status)
{
	quick_exit_with(status);
}

PROF_EXPORT void _Exit(int status)
{
	quick_exit_with(status);
}

/* Crashes only. Not SIGINT, SIGTERM and the like: programs look at those dispositions (Python
 * installs its KeyboardInterrupt handler only where SIGINT is still SIG_DFL). */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };

/* A fatal signal with the default action: record which one, then die of it as before. */
static void fatal_signal_handler(int sig)
{
	int saved = errno;
	if (atomic_load(&prof_active)) {
		struct prof_thread *th = &prof_self;
		th->in_signal++;
		prof_hook_enter(th);
		if (th->serial)
			write_exit(1, sig);
		th->in_hook--;
		th->in_signal--;
	}
	signal(sig, SIG_DFL);
	errno = saved;
	raise(sig);
}

/* Only where the program left the default action: a program's own handler always wins. */
static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(fatal_signals[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = fatal_signal_handler;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

static int start_recording(uint32_t ppid, int argc, char **argv)
{
	if (prof_writer_open(ppid, argc, argv) < 0)
		return -1;
	atomic_store(&prof_active, 1);
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);
	prof_stacks_reset();
	prof_thread_register(th);
	prof_modules_init();
	prof_py_start();
	th->in_hook--;
	return 0;
}

static int wanted(void);

/* Whether the fork handler is registered (recording started): the copies of clone.c, made
 * without the handlers, run it only then, as fork() would. */
static _Atomic int fork_handler_set;
/* A fork child that went on inside a hook: child_anew() at its first call after it. */
static _Atomic int fork_deferred;
static void child_anew(int was_active, int in_hook);

/* Fork child: everything of the parent's trace is dropped; the child starts its own. */
void prof_fork_child(void)
{
	if (!atomic_load(&fork_handler_set))
		return;
	if (prof_self.in_hook) {
		/* fork() by a signal handler that interrupted one of our hooks: the child returns
		 * into that hook, which goes on with the parent's state. The trace's pages become
		 * scratch memory of the child's (the hook neither writes into the parent's trace
		 * nor faults on a mapping gone), and the child starts its own trace at its first
		 * call after that hook (prof_start()). */
		if (atomic_exchange(&prof_active, 0)) {
			prof_writer_detach();
			atomic_store(&fork_deferred, 1);
			atomic_store(&prof_start_state, 0);
		}
		return;
	}
	child_anew(atomic_exchange(&prof_active, 0), 0);
}

/* The fork child's part of prof_fork_child(): every family forgets the parent's state, and
 * recording starts anew if it was on. in_hook: the fork was made inside a hook of ours (by a
 * signal handler), which went on before this. */
static void child_anew(int was_active, int in_hook)
{
	/* The parent: the process whose trace this was (0 once detached, prof_fork_child()),
	 * known without asking, and still the parent should it have exited since. */
	uint32_t parent = prof_writer_pid();
	prof_io_fork_child();
	prof_io_batches_fork_child();
	prof_cuda_fork_child();
	prof_writer_forget();
	struct prof_thread *th = &prof_self;
	/* The child keeps the forking thread's stack cache: its stacks name the parent's trace
	 * and are void (prof_stacks_reset()), what it learned of the code holds. Unless another
	 * thread may have been inside unw_step (a recording unwind), holding libunwind's lock,
	 * when the process was copied: fork() waits until none is (stacks.c), the copies made
	 * without its handlers do not, nor does a fork made inside one of our hooks. The child
	 * then unwinds as before only. */
	int safe = prof_stacks_fork_was_safe();
	int alone = !in_hook && (safe || atomic_load(&threads_alive) == (th->serial ? 1 : 0));
	struct stack_cache *cache = alone ? th->stack_cache : NULL;
	uintptr_t stack_lo = th->stack_lo;  /* the child goes on on the same stack */
	memset(th, 0, sizeof(*th));
	th->stack_lo = stack_lo;
	prof_stacks_fork_child(th, cache, !in_hook);
	atomic_store(&next_serial, 1);
	atomic_store(&threads_alive, 0);
	for (int i; (i = prof_slot_pop(live_taken, LIVE_SLOTS)) >= 0;)
		atomic_store(&live[i], 0);  /* the parent's threads; the child's one runs on */
	atomic_store(&prof_tight_stacks, 0);  /* the parent's, said by the parent */
	atomic_store(&prof_loader_stacks, 0);
	atomic_store(&prof_tight_io, 0);
	atomic_store(&prof_hooks_left, 0);
	if (!alone)
		prof_cfg.stack_cache = 0;
	prof_modules_reset();  /* the stack table is emptied as recording starts */
	prof_locks_fork_child(!in_hook);
	prof_threads_fork_child();
	heap_tally_fork_child();
	prof_leak_fork_child();
	if (!was_active || !wanted() ||
	    start_recording(parent ? parent : (uint32_t)getppid(), saved_argc, saved_argv) < 0)
		prof_writer_drop_stale();
}

/* The command line, read from /proc (we may start before any constructor has argv). */
static PROF_BULK char cmdline_buf[64 * 1024];
static PROF_BULK char *cmdline_argv[4096];

static int read_cmdline(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, cmdline_buf, sizeof(cmdline_buf) - 1);
	close(fd);
	int argc = 0;
	for (ssize_t i = 0; i < n && argc < (int)(sizeof(cmdline_argv) / sizeof(char *)) - 1;) {
		cmdline_argv[argc++] = cmdline_buf + i;
		i += (ssize_t)strlen(cmdline_buf + i) + 1;
	}
	cmdline_argv[argc] = NULL;
	return argc;
}

static int name_listed(const char *list, const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(name);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && !strncmp(p, name, n))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* Whether this process is one to record: PROF_ROOT_PID names the only one (prof-run
 * --no-follow), PROF_ONLY the programs (its argv[0] or its executable's file name). */
static int wanted(void)
{
	if (prof_cfg.root_pid && (uint32_t)getpid() != prof_cfg.root_pid)
		return 0;
	if (!prof_cfg.only[0])
		return 1;
	const char *exe = prof_exe_path();
	return (saved_argc > 0 && name_listed(prof_cfg.only, saved_argv[0])) ||
	       (exe[0] && name_listed(prof_cfg.only, exe));
}

_Atomic int prof_start_state;  /* 0 not started, 1 starting, 2 done */

/* Starts recording once: from our constructor, or earlier from the first allocation of a
 * library constructor that runs before ours (libstdc++'s exception pool, say), so those
 * blocks are seen as valgrind sees them. Not before libc has set up the environment. */
void prof_start(void)
{
	if (atomic_load(&fork_deferred)) {  /* a hook may call us before that one is done */
		if (prof_self.in_hook || !atomic_exchange(&fork_deferred, 0))
			return;
		atomic_store(&prof_start_state, 1);  /* the calls it makes find it starting */
		child_anew(1, 1);
		atomic_store(&prof_start_state, 2);
		return;
	}
	int expected = 0;
	if (!environ || !atomic_compare_exchange_strong(&prof_start_state, &expected, 1))
		return;
	if (getauxval(AT_SECURE)) {  /* set-uid/set-gid: record nothing */
		atomic_store(&prof_start_state, 2);
		return;
	}
	prof_hook_enter(&prof_self);
	note_stderr();
	read_config();
	Dl_info info;
	if (dladdr((void *)prof_start, &info) && info.dli_fname)
		snprintf(self_path, sizeof(self_path), "%s", info.dli_fname);
	saved_argc = read_cmdline();
	saved_argv = cmdline_argv;
	prof_heap_init();
	prof_locks_init();
	prof_threads_init();
	prof_loader_lock_find();
	prof_cpu_init();
	pthread_key_create(&thread_key, thread_key_destructor);
	/* A process not recorded still carries the library to the programs it starts. */
	prof_self.stack_lo = prof_main_stack_lo();  /* 0 unless we run on the first stack */
	if (wanted() && start_recording((uint32_t)getppid(), saved_argc, saved_argv) == 0) {
		pthread_atfork(freeres_before_fork, NULL, prof_fork_child);
		atomic_store(&fork_handler_set, 1);
		on_exit(on_exit_handler, NULL);
		install_signal_handlers();
	}
	prof_self.in_hook--;
	atomic_store(&prof_start_state, 2);
}

/* libprof's zero-initialized data in small pages, so that a first touch zeroes 4 KiB, not a
 * 2 MiB huge page (THP "always"): it is kept under 2 MiB (tables of families a program may
 * never use are made on first use: prof_lazy_map()), but the kernel may merge it with the
 * anonymous mappings beside it. Before any other constructor of ours; a hook that runs
 * before it (another library's constructor) is why the data must stay small as well. */
extern char __bss_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

__attribute__((constructor(101))) static void bss_in_small_pages(void)
{
	uintptr_t lo = ((uintptr_t)__bss_start + 4095) & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE);
}

__attribute__((constructor)) static void prof_constructor(void)
{
	prof_start();
}

/* ---- fork ------------------------------------------------------------------------------- */

/* A child's FORK or REAPED record (the two have the same layout: the child's pid, a word):
 * not from our own work, nor from a vfork child (it shares our memory). errno kept. */
static void child_record(unsigned type, pid_t child, uint32_t word, uint64_t t)
{
	_Static_assert(sizeof(struct prof_rec_fork) == sizeof(struct prof_rec_reaped),
		       "FORK and REAPED share a layout");
	if (!prof_recording_here() || prof_in_hook(&prof_self))
		return;
	int err = errno;
	struct prof_thread *th = prof_thread_get();
	prof_hook_enter(th);
	struct prof_rec_reaped *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->child_pid = (uint32_t)child;
		r->status = (int32_t)word;
		prof_commit(r, type, 0, sizeof(*r), t);
	}
	th->in_hook--;
	errno = err;
}

void prof_reaped(pid_t child, int status)
{
	if (WIFEXITED(status) || WIFSIGNALED(status))
		child_record(PROF_REC_REAPED, child, (uint32_t)status, prof_now());
}

/* The parent alone knows the child's pid: it writes the FORK record. The child starts a trace
 * of its own in prof_fork_child(). */
void prof_fork_parent(pid_t child)
{
	child_record(PROF_REC_FORK, child, 0, prof_now());
}

PROF_EXPORT pid_t fork(void)
{
	static pid_t (*real)(void);
	pid_t (*fn)(void) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	if (!fn) {
		fn = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
		__atomic_store_n(&real, fn, __ATOMIC_RELEASE);
	}
	pid_t pid = fn();
	if (pid > 0) {
		prof_leak_made_copy();
		prof_fork_parent(pid);
	}
	return pid;
}

/* ---- exec ------------------------------------------------------------------------------- */

#define EXEC_ENV_MAX 1024  /* larger environments are passed on as they are */

/* A PROF_OUTPUT relative to the directory the program is in now, not to the one it started
 * in: replaced by ours (output_from_start_dir()). */
static int relative_output(const char *entry)
{
	return !strncmp(entry, "PROF_OUTPUT=", 12) && entry[12] != '/' && carried[0][0];
}

/* The environment for a program we start: LD_PRELOAD keeps naming us, and our PROF_*
 * settings stay, even when the caller built an environment without them. env_out must hold
 * EXEC_ENV_MAX entries; returns envp itself when nothing needs to change. */

static char *const *env_with_preload(char *const envp[], char **env_out, size_t cap,
				     char *preload_buf, size_t preload_cap)
{
	if (!self_path[0] || !envp)
		return envp;
	size_t n = 0, missing = NCARRIED;
	int preloaded = 0;
	int present[NCARRIED] = { 0 };
	for (; envp[n]; n++) {
		if (!strncmp(envp[n], "LD_PRELOAD=", 11) && strstr(envp[n], self_path))
			preloaded = 1;
		if (relative_output(envp[n]))
			continue;
		for (size_t i = 0; i < NCARRIED; i++) {
			size_t l = strlen(carried_names[i]);
			if (!present[i] && !strncmp(envp[n], carried_names[i], l) && envp[n][l] == '=') {
				present[i] = 1;
				missing--;
			}
		}
	}
	for (size_t i = 0; i < NCARRIED; i++)
		if (!present[i] && !carried[i][0])
			missing--;  /* not set at start either: nothing to carry */
	if ((preloaded && missing == 0) || n + NCARRIED + 2 > cap)
		return envp;
	size_t k = 0;
	const char *old = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11) && !preloaded)
			old = envp[i] + 11;
		else if (!relative_output(envp[i]))
			env_out[k++] = envp[i];
	}
	if (!preloaded) {
		snprintf(preload_buf, preload_cap, "LD_PRELOAD=%s%s%s", self_path,
			 old && *old ? ":" : "", old ? old : "");
		env_out[k++] = preload_buf;
	}
	for (size_t i = 0; i < NCARRIED; i++)
		if (!present[i] && carried[i][0])
			env_out[k++] = carried[i];
	env_out[k] = NULL;
	return env_out;
}

/* envp without libprof in its LD_PRELOAD, for a program started from inside a sandbox. */
static char *const *env_without_preload(char *const envp[], char **env_out, size_t cap,
					char *preload_buf, size_t preload_cap)
{
	size_t n = 0, self_len = strlen(self_path);
	for (; envp && envp[n]; n++)
		;
	if (!self_len || n + 1 > cap)
		return envp;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(envp[i], "LD_PRELOAD=", 11) || !strstr(envp[i], self_path)) {
			env_out[k++] = envp[i];
			continue;
		}
		/* The list less our entry (entries are separated by ':' or ' '). */
		char *out = preload_buf + 11;
		size_t room = preload_cap - 11, len = 0;
		for (const char *p = envp[i] + 11; *p;) {
			size_t m = strcspn(p, ": ");
			int ours = m == self_len && !strncmp(p, self_path, m);
			if (m && !ours && len + 1 + m + 1 <= room) {
				if (len)
					out[len++] = ':';
				memcpy(out + len, p, m);
				len += m;
			}
			p += m;
			p += *p != 0;
		}
		if (len) {
			memcpy(preload_buf, "LD_PRELOAD=", 11);
			out[len] = 0;
			env_out[k++] = preload_buf;
		}
	}
	env_out[k] = NULL;
	return env_out;
}

/* The environment of a program this process starts: with libprof preloaded, unless the
 * process is in a sandbox. env_out has EXEC_ENV_MAX slots. */
static char *const *program_env(char *const envp[], char **env_out, char *preload_buf,
				size_t preload_cap)
{
	if (prof_sandboxed())
		return env_without_preload(envp, env_out, EXEC_ENV_MAX, preload_buf, preload_cap);
	return env_with_preload(envp, env_out, EXEC_ENV_MAX, preload_buf, preload_cap);
}

/* Records the exec about to happen (its path) and marks the trace as handed over. */
static void record_exec(const char *path)
{
	/* A vfork child shares our memory: it must not mark the parent's trace as exec'd. */
	if (!prof_recording_here())
		return;
	struct prof_thread *th = prof_thread_get();
	size_t len = strlen(path) + 1;
	if (len > 4000)
		len = 4000;
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_exec) + len));
	prof_hook_enter(th);
	heap_tally_flush_all(th);  /* the counts end with this image */
	io_batches_flush_all(th);
	/* So do its threads (should the exec fail, their own ends come later and count). */
	end_others(th);
	write_thread_end(th, th->serial, th->tid);
	struct prof_rec_exec *r = prof_reserve(th, size);
	if (r) {
		memset(r->path, 0, size - sizeof(*r));
		memcpy(r->path, path, len - 1);
		prof_commit(r, PROF_REC_EXEC, 0, size, prof_now());
	}
	prof_writer_set_state(PROF_STATE_EXECED);
	th->in_hook--;
}

/* The exec failed: we are still this program. */
static void exec_failed(void)
{
	if (atomic_load(&prof_active))
		prof_writer_set_state(PROF_STATE_RUNNING);
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

static int do_execve(execve_fn real, const char *path, char *const argv[], char *const envp[])
{
	char *env[EXEC_ENV_MAX];
	char preload[2048];
	int saved = errno;
	record_exec(path);
	/* A tick pending when the new image starts would find the signal's default action
	 * (terminate) there: no timer from here on (it is started again if exec fails). */
	int mine = prof_recording_here();
	if (mine)
		prof_cpu_stop(&prof_self);
	char *const *e = program_env(envp, env, preload, sizeof(preload));
	errno = saved;
	int rc = real(path, argv, e);
	saved = errno;
	if (mine && prof_self.serial)
		prof_cpu_start(&prof_self);
	exec_failed();
	errno = saved;
	return rc;
}

/* ---- the program lowers its own address-space limit ------------------------------------
 * libprof's reservations were sized by the limits when it started (prof_vm_budget()). A
 * program that lowers RLIMIT_AS or RLIMIT_DATA itself (Python's resource.setrlimit, a job
 * that caps its own memory) would find them counted against the new limit, and its next
 * mapping refused: before the limit is set, the trace's mapping beyond what the file holds,
 * and the stack caches no thread holds, shrink to their shares of it. (The lock and stack
 * tables, 51 MiB, stay.) */
static void limit_lowering(int res, const struct rlimit *rl)
{
	if (rl && (res == RLIMIT_AS || res == RLIMIT_DATA) && rl->rlim_cur != RLIM_INFINITY &&
	    atomic_load(&prof_active)) {
		int err = errno;
		prof_writer_fit_limit((uint64_t)rl->rlim_cur);
		prof_stacks_fit_limit((uint64_t)rl->rlim_cur);
		errno = err;
	}
}

typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);
typedef int (*prlimit_fn)(pid_t, __rlimit_resource_t, const struct rlimit *, struct rlimit *);

/* The first thread's stack may now grow to another limit (cc1 raises its own). */
static void stack_limit_changed(int res)
{
	uintptr_t lo;
	if (res == RLIMIT_STACK && (lo = prof_main_stack_lo()))  /* 0: another stack, or unlimited */
		prof_self.stack_lo = lo;
}

PROF_EXPORT int setrlimit(__rlimit_resource_t res, const struct rlimit *rl)
{
	static setrlimit_fn real;
	if (!real)
		real = (setrlimit_fn)dlsym(RTLD_NEXT, "setrlimit");
	limit_lowering((int)res, rl);
	int rc = real(res, rl);
	if (rc == 0)
		stack_limit_changed((int)res);
	return rc;
}

PROF_EXPORT int setrlimit64(__rlimit_resource_t res, const struct rlimit64 *rl)
{
	return setrlimit(res, (const struct rlimit *)rl);  /* the same layout on 64-bit Linux */
}

PROF_EXPORT int prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *rl,
			struct rlimit *old)
{
	static prlimit_fn real;
	if (!real)
		real = (prlimit_fn)dlsym(RTLD_NEXT, "prlimit");
	int self = pid == 0 || pid == getpid();
	if (self)
		limit_lowering((int)res, rl);
	int rc = real(pid, res, rl, old);
	if (rc == 0 && self && rl)
		stack_limit_changed((int)res);
	return rc;
}

PROF_EXPORT int prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *rl,
			  struct rlimit64 *old)
{
	return prlimit(pid, res, (const struct rlimit *)rl, (struct rlimit *)old);
}

PROF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	static execve_fn real;
	if (!real)
		real = (execve_fn)dlsym(RTLD_NEXT, "execve");
	return do_execve(real, path, argv, envp);
}

PROF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static execve_fn real;
	if (!real)
		real = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
	return do_execve(real, file, argv, envp);
}

PROF_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

PROF_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl family: collect the variadic arguments, then the array forms above. */
#define COLLECT_ARGS(arg0, ap, argv)                                            \
	const char *argv[EXEC_ENV_MAX];                                         \
	size_t argn = 0;                                                        \
	argv[argn++] = arg0;                                                    \
	while (argn < EXEC_ENV_MAX - 1 && (argv[argn] = va_arg(ap, const char *))) \
		argn++;                                                         \
	argv[argn] = NULL

PROF_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execve(path, (char *const *)argv, environ);
}

PROF_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execvpe(file, (char *const *)argv, environ);
}

PROF_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, (char *const *)argv, envp);
}

/* posix_spawn and posix_spawnp: no exec of ours to record (the child is a new process with a
 * trace of its own), but the child's environment must keep LD_PRELOAD. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

static int do_spawn(spawn_fn real, pid_t *pid, const char *path,
		    const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		    char *const argv[], char *const envp[])
{
	char *env[EXEC_ENV_MAX];
	char preload[2048];
	int saved = errno;
	char *const *e = program_env(envp, env, preload, sizeof(preload));
	errno = saved;
	return real(pid, path, fa, attr, argv, e);
}

PROF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	if (!real)
		real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	return do_spawn(real, pid, path, fa, attr, argv, envp);
}

PROF_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	if (!real)
		real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
	return do_spawn(real, pid, file, fa, attr, argv, envp);
}
