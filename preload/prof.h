/* Internal interface of libprof.so: the writer, per-thread state, stacks, modules, logging. */
#ifndef PROF_PRELOAD_H
#define PROF_PRELOAD_H

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "prof_format.h"
#include "prof_short.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* A zero-filled array of a few KiB or more that a process touches little of: placed after
 * every other variable (.lbss, which follows .bss), so that the small ones share a few pages.
 * Spread between the arrays, they took some 25 pages: a page fault each in every process
 * (a zero page) and every fork child (a copy), at 2-3 us a fault. */
#define PROF_BULK __attribute__((section(".lbss")))
#define PROF_STR_(x) #x
#define PROF_STR(x) PROF_STR_(x)  /* a macro's value as a string (for assembly) */

/* Recording configuration, read once from the environment at start-up. */
struct prof_config {
	unsigned events;        /* PROF_EV_* */
	unsigned stack_depth;   /* frames per stack, 0 = none */
	int stack_cache;        /* PROF_STACK_CACHE: 1 reuse verified stacks, 0 always unwind,
				 * 2 (check) unwind on every hit too and say where they differ */
	unsigned cpu_hz;
	int free_at_exit;       /* call __libc_freeres at exit, as valgrind does */
	int leak_check;         /* classify blocks left at exit (PROF_LEAK_CHECK) */
	uint32_t root_pid;      /* PROF_ROOT_PID: record only this process (prof-run --no-follow) */
	char only[256];         /* PROF_ONLY: record only these programs (comma list of names) */
	int debug;              /* PROF_DEBUG level */
	uint64_t max_size;      /* largest trace file, bytes */
	uint64_t heap_sample;   /* PROF_HEAP_SAMPLE: mean bytes between allocations with stacks,
				 * 0 = all (heap.c); at most 1 GiB */
	uint64_t heap_sample_seed;  /* PROF_HEAP_SAMPLE_SEED: fixed sampler seed (tests), 0 = none */
	char output[1024];      /* PROF_OUTPUT template */
};
extern struct prof_config prof_cfg;

/* Recording is on only while prof_active is set (after a successful start, until exit or a
 * fatal writer error). Hooks test it first and pass straight through when it is off.
 * PROF_ACTIVE_FULL: the trace can take no more chunks (size limit, full disk); events are
 * then only counted as lost, at the cost of that same test (prof_recording()). */
extern _Atomic int prof_active;
#define PROF_ACTIVE_FULL 2

static inline int prof_enabled(unsigned family)
{
	return likely(atomic_load_explicit(&prof_active, memory_order_relaxed)) &&
	       (prof_cfg.events & family);
}

/* A stream is where one thread appends records: its current chunk and position. A chunk is
 * a run of units (writer.c), span bytes long. */
struct prof_stream {
	char *chunk;        /* NULL until the first chunk is claimed */
	uint32_t span;      /* bytes of the chunk (0 before the first): used + size <= span fits */
	uint32_t used;      /* bytes used in chunk, including its header */
	uint32_t seq;       /* sequence number of the current chunk */
	uint32_t units_used;  /* units the stream has claimed so far, up to the largest run */
	uint64_t lost;      /* records dropped since the last LOST record written */
	uint32_t unsummed;  /* dropped and not yet added to header.lost_records */
	uint32_t summed;    /* some loss of this stream reached the header already */
	volatile int busy;  /* inside prof_reserve(): a nested signal handler drops its record */
	uint32_t base_part;  /* half of the short records' base time: see prof_thread */
};

/* Per-thread state; initial-exec TLS, so touching it never allocates. */
/* What lets a later call from the same call site and hook frame know, with a few loads,
 * that its stack is the one a call had (prof_stack_still(), prof_stack_again()): the stack
 * cache's entry that held for that call (1 + its offset in the thread's cache; 0: none, the
 * stack was not cached) and the cache's epoch then. */
struct prof_stack_proof {
	uint32_t at, epoch;
};

struct prof_thread {
	uint32_t serial;      /* 0 = not registered yet; thread serials start at 1 */
	uint32_t tid;
	int in_hook;          /* recursion guard: our own work and libc's inner calls pass through */
	int in_signal;        /* > 0 while a signal handler of ours records: use streams[1] */
	uintptr_t hook_frame;  /* the frame that raised in_hook from 0 (prof_hook_enter()) */
	int jumped;           /* the program longjmp'd while in_hook was raised (prof_in_hook()) */
	uint32_t live_slot;   /* init.c: its place among the running threads + 1, 0 if none */
	struct prof_stream streams[2];
	/* CPU sampling (cpu.c). ticks counts the sampling signals this thread handled: a call
	 * that failed with EINTR while it moved was interrupted by us, not by the program's
	 * signal, and is made again. While unwinding is set (stacks.c) libunwind's per-thread
	 * cache is in use: a sample then records the hook's call site, hook_site, alone. */
	volatile uint32_t ticks;
	volatile int unwinding;  /* 1, or UNWINDING_MASKED: every signal blocked by stacks.c */
	volatile uintptr_t hook_site;
	void *cpu_timer;      /* timer_t of the thread's CPU-time timer, when it has one */
	int has_timer;
	volatile int in_loader;  /* inside libprof's own dl_iterate_phdr (prof_dl_iterate()) */
	/* The base of short records in streams[0] (the only stream that has them): the time and
	 * address of its chunk's last ALLOC or FREE (prof_short.h). This TLS comes out of every
	 * thread's stack, and some programs size those small (tests/progs/cpu_stacks.c has no
	 * byte to spare), so the base lives in four 4-byte holes the layout had anyway: its time
	 * in streams[0].base_part (low half) and streams[1].base_part (high), its address,
	 * inverted, in base_ptr_lo and base_ptr_hi (0 and 0: no base). Inverted, as this is a root
	 * of the exit-time leak scan (leakscan.c), where the last block freed or allocated must
	 * not look referenced. writer.c's base_get() and base_set() read and write it. */
	uint32_t base_ptr_lo;
	uintptr_t stack_lo;   /* the lowest address of a thread's stack (threads.c), else 0 */
	uint64_t predicted[64];  /* call site -> hash of the stack last seen there (stacks.c) */
	struct stack_cache *stack_cache;  /* stacks.c: verified stacks of this thread, mapped */
	int stack_cache_done;  /* the thread ended: its cache is gone, none is made again */
	uint32_t base_ptr_hi;  /* see base_ptr_lo */
	/* Own time. While timed > 0 the thread is inside a call or hold whose duration we
	 * report (an I/O call, a lock hold, a CUDA API call): hooks that run inside it add the
	 * time of their own work (unwinding, writing records) to own_ns, and the timed call
	 * subtracts what was added meanwhile (prof_timed_begin(), prof_timed_end()). */
	uint32_t timed;
	uint32_t heap_tally;  /* heap_tally.c: the thread's tally slot + 1, 0 before it has one */
	uint64_t own_ns;
	volatile uint64_t own_sig_ns;  /* the same, of CPU samples taken inside (cpu.c): only the
					* signal handler writes it, so no update is lost */
	uint64_t unwind_saved_mask;  /* stacks.c: the signal mask before an unwind blocked all */
	uintptr_t unwind_lo, unwind_hi;  /* stacks.c: in an unwind, the live stack (else 0, 0) */
	struct prof_stack_proof io_proof;  /* io.c: the last descriptor call's */
};
extern __thread struct prof_thread prof_self;

/* Where a thread's stack has a known floor (stack_lo: one the program sized, threads.c; the
 * first thread's under its RLIMIT_STACK, init.c), a hook that finds less than `need` bytes
 * left below the frame it runs in does less instead of overflowing it: its stack is its call
 * site alone (an unwind by libunwind takes several KiB), an I/O call goes unrecorded (its
 * names take 4 KiB buffers). Counted, and said once at exit. */
#define PROF_UNWIND_ROOM (16u << 10)
#define PROF_IO_ROOM (12u << 10)
#define PROF_IO_SETUP_ROOM (24u << 10)  /* the first recorded I/O call of a process (io.h) */
static inline __attribute__((always_inline)) int prof_stack_tight(const struct prof_thread *th,
								  size_t need)
{
	return th->stack_lo && (uintptr_t)__builtin_frame_address(0) < th->stack_lo + need;
}
extern _Atomic uint64_t prof_tight_stacks, prof_tight_io;  /* stacks.c, io.c */
/* stacks.c: stacks taken while the thread held the loader's lock (prof_loader_lock_held()),
 * each its call site alone */
extern _Atomic uint64_t prof_loader_stacks;
/* stacks.c: the lowest address the first thread's stack may grow down to (RLIMIT_STACK below
 * its top), 0 when unlimited or when the caller does not run on that stack (another thread,
 * a fork child of one, a clone child on a stack of its own). */
uintptr_t prof_main_stack_lo(void);
extern _Atomic uint64_t prof_hooks_left;  /* longjmp.c: hooks a longjmp left (prof_in_hook()) */

/* A family's mark on a thread while one of its hooks makes the real call: that hook's frame
 * (prof_hook_frame(), from the hook itself or code inlined into it), 0 for none. Its hooks
 * reached from inside the call (a library's calls of its own, libc's) run below the mark and
 * pass through; a hook not below it is outside the call, and finds a mark that a longjmp()
 * out of the call left (an alarm() handler's timeout, a Lua error) stale. */
#define prof_hook_frame() ((uintptr_t)__builtin_frame_address(0))
static inline int prof_inside_call(uintptr_t mark, uintptr_t hook_frame)
{
	return mark && hook_frame < mark;
}

/* Our work raises in_hook, and hooks reached from inside it pass their calls through. A
 * program's signal handler may leave that work by longjmp (an alarm's timeout around code
 * that allocates), and in_hook would stay raised: every later call of the thread passed
 * through. So raising it from 0 notes the frame that did (prof_hook_enter()), the longjmp
 * hooks note a jump made while it is raised, and after one a hook that is not below that
 * frame finds the raise stale: prof_hook_stale() lowers it (longjmp.c). Borrowed frames: a vfork
 * child runs with in_hook raised on purpose, its hook_frame the top of the address space. */
static inline __attribute__((always_inline)) void prof_hook_enter(struct prof_thread *th)
{
	if (th->in_hook++ == 0)
		th->hook_frame = prof_hook_frame();
}
int prof_hook_stale(struct prof_thread *th, uintptr_t hook_frame);
void prof_hook_abandon(struct prof_thread *th);  /* the work in_hook marked will not go on */
/* Every signal blocked, for a section that holds what other threads wait for (the trace's
 * growing, the descriptor table's setup): a handler's longjmp out of it would leave them
 * waiting for good. Returns whether it blocked them; pass that to the restore. */
static inline int prof_signals_block(sigset_t *saved)
{
	sigset_t all;
	sigfillset(&all);
	return syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, saved, _NSIG / 8) == 0;
}

static inline void prof_signals_restore(int blocked, const sigset_t *saved)
{
	if (blocked)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved, NULL, _NSIG / 8);
}
static inline __attribute__((always_inline)) int prof_in_hook(struct prof_thread *th)
{
	return unlikely(th->in_hook) &&
	       (likely(!th->jumped) || !prof_hook_stale(th, prof_hook_frame()));
}

/* libunwind's sigprocmask calls inside our unwinds (stacks.c): the first blocks every signal
 * for the rest of the unwind (UNWINDING_LAZY becomes UNWINDING_MASKED), and none makes a
 * system call (cpu.c, prof_unwind_masks()). */
#define UNWINDING_MASKED 2
#define UNWINDING_LAZY 3
int prof_unwind_masks(struct prof_thread *th, uintptr_t caller);
int prof_addr_in_unwinder(uintptr_t addr);

/* Around each unwind of ours (stacks.c): libunwind's signal masks (above), and its reads of
 * the live stack, from sp (the frame the unwind starts from) up, made directly. */
void prof_unwind_begin(struct prof_thread *th, uintptr_t sp);
void prof_unwind_end(struct prof_thread *th);

/* clock.c: the trace clock. With the TSC, ns = ns0 + ((tsc - tsc0) * mult) >> 32 on the
 * current segment; the writer re-anchors it now and then (prof_clock_refine()). */
#define PROF_CLOCK_SEGS 8u
struct prof_clock_seg {
	int64_t tsc0;
	uint64_t ns0;
	uint64_t mult;  /* ns per tick, 32.32 fixed point */
};
struct prof_clock {
	int tsc;                  /* 1: read the TSC (stored with release once its rate is known) */
	int calibrating;          /* the TSC is to be used once its rate is measured */
	_Atomic uint32_t cur;     /* the segment in use: seg[cur % PROF_CLOCK_SEGS] */
	struct prof_clock_seg seg[PROF_CLOCK_SEGS];
};
extern struct prof_clock prof_clock;
void prof_clock_init(void);      /* PROF_CLOCK, calibration; once per process image */
void prof_clock_refine(void);
void prof_clock_calibrate(uint64_t now);  /* clock_gettime's now: the TSC from here, if time */
uint64_t prof_clock_tsc_hz(void);  /* 0 when the TSC is not in use */

static inline uint64_t prof_clock_convert(const struct prof_clock_seg *s, int64_t tsc)
{
	return s->ns0 + (uint64_t)(((__int128)(tsc - s->tsc0) * (__int128)s->mult) >> 32);
}

static inline uint64_t prof_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(__atomic_load_n(&prof_clock.tsc, __ATOMIC_ACQUIRE))) {
		uint32_t cur = atomic_load_explicit(&prof_clock.cur, memory_order_acquire);
		return prof_clock_convert(&prof_clock.seg[cur % PROF_CLOCK_SEGS],
					  (int64_t)__builtin_ia32_rdtsc());
	}
#endif
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (unlikely(__atomic_load_n(&prof_clock.calibrating, __ATOMIC_RELAXED)))
		prof_clock_calibrate(ns);
	return ns;
}

/* Own work of a hook (pairs with prof_own_end()): timed only inside a timed call, so hooks
 * outside one pay a test and no clock read. */
static inline uint64_t prof_own_begin(const struct prof_thread *th)
{
	return unlikely(th->timed) ? prof_now() : 0;
}

static inline void prof_own_end(struct prof_thread *th, uint64_t t)
{
	if (unlikely(t))
		th->own_ns += prof_now() - t;
}

/* The thread's own time so far: its hooks' and its CPU samples'. */
static inline uint64_t prof_own_total(const struct prof_thread *th)
{
	return th->own_ns + th->own_sig_ns;
}

/* A timed call: t0 = prof_timed_begin(th, &own0); real call; t1 = prof_timed_end(th, t0,
 * own0). t1 - t0 is then the call's duration less libprof's own work inside it (the
 * allocation hooks of an fprintf, the event records of a CUDA launch, CPU samples). */
static inline uint64_t prof_timed_begin(struct prof_thread *th, uint64_t *own0)
{
	th->timed++;
	*own0 = prof_own_total(th);
	return prof_now();
}

static inline uint64_t prof_timed_end(struct prof_thread *th, uint64_t t0, uint64_t own0)
{
	uint64_t t1 = prof_now();
	th->timed--;
	uint64_t own = prof_own_total(th) - own0;
	return t1 - t0 > own ? t1 - own : t0;
}

extern _Atomic int prof_start_state;  /* 0 until prof_start() has begun */
void prof_start(void);

/* The entry check of every hook: the calling thread's state if this call of `family` is to be
 * recorded, else NULL (recording off, family off, or we are inside our own work: libunwind,
 * dlsym, or a libc function we hooked calling another hooked one). Starts recording on the
 * first call if no constructor has yet. A hook that gets a thread: in_hook++, save errno,
 * call the real function, record, restore errno, in_hook--. */
struct prof_thread *prof_recording_full(struct prof_thread *th, unsigned family);  /* writer.c */

static inline struct prof_thread *prof_recording(unsigned family)
{
	/* Recording on means started: the start state is looked at only while it is off. */
	int active = atomic_load_explicit(&prof_active, memory_order_relaxed);
	if (unlikely(!active)) {
		if (atomic_load_explicit(&prof_start_state, memory_order_relaxed) == 0) {
			prof_start();
			active = atomic_load_explicit(&prof_active, memory_order_relaxed);
		}
		if (!active)
			return NULL;
	}
	if (!(prof_cfg.events & family))
		return NULL;
	struct prof_thread *th = &prof_self;
	if (prof_in_hook(th))
		return NULL;
	return unlikely(active == PROF_ACTIVE_FULL) ? prof_recording_full(th, family) : th;
}

/* writer.c: the trace file. */
int prof_writer_open(uint32_t ppid, int argc, char **argv);
/* The executable's path, for the trace's header and the modules: read once per address
 * space (a fork child's is its parent's); "" where /proc cannot tell. */
const char *prof_exe_path(void);
void *prof_reserve(struct prof_thread *th, uint32_t size);
/* Whether the trace can take no more chunks: see PROF_ACTIVE_FULL. */
static inline int prof_writer_full(void)
{
	return unlikely(atomic_load_explicit(&prof_active, memory_order_relaxed) == PROF_ACTIVE_FULL);
}
int prof_writer_has_room(struct prof_thread *th, uint32_t size);  /* without a new chunk */
void prof_writer_thread_done(struct prof_thread *th);  /* unused chunks back, losses summed */
/* An ALLOC or FREE committed here becomes the base of the short records after it: commit one
 * before the thread writes its next heap record. */
void prof_commit(void *rec, unsigned type, unsigned flags, uint32_t size, uint64_t time);
/* ALLOC and FREE records, short where they fit (prof_short.h). */
void prof_write_alloc(struct prof_thread *th, unsigned fn, uint64_t ptr, uint64_t size,
		      uint32_t stack, uint64_t time);
void prof_write_free(struct prof_thread *th, unsigned flags, uint64_t ptr, uint64_t time);
/* The next heap record and LOCK_WAIT of the thread are ordinary ones (prof_short.h): what
 * the writer kept as their bases may not be in the file. */
void prof_writer_forget_bases(struct prof_thread *th);
/* A LOCK_WAIT record (enum prof_lock_op, enum prof_lock_kind), short where it fits. */
void prof_write_lock_wait(struct prof_thread *th, unsigned op, unsigned kind, uint64_t lock,
			  uint64_t other, uint64_t wait_ns, uint32_t stack, int result, uint64_t time);
/* An IO_CALL record (enum prof_io_op), short where it fits. */
void prof_write_io_call(struct prof_thread *th, unsigned op, uint32_t file, int32_t fd,
			int64_t result, uint64_t duration_ns, uint32_t stack, uint64_t time);
/* A CUDA_LAUNCH that is its API call's record too (flags: the layer | PROF_CUDA_LAUNCH_API),
 * from x, whose header it fills in: a short record where it repeats its slot's last launch in
 * the chunk (prof_short.h), else an ordinary one. */
struct prof_rec_cuda_launch_api;
void prof_write_cuda_launch(struct prof_thread *th, struct prof_rec_cuda_launch_api *x,
			    unsigned flags, uint64_t time);
/* A CUDA_GPU record from g, whose header it fills in: short where it repeats its slot's last
 * in the chunk. */
struct prof_rec_cuda_gpu;
void prof_write_cuda_gpu(struct prof_thread *th, struct prof_rec_cuda_gpu *g, unsigned flags,
			uint64_t time);
void prof_writer_set_state(enum prof_state state);
void prof_writer_final(void);  /* the EXIT record comes next: it may take the last units */
void prof_writer_clock_changed(void);  /* the header's clock: the TSC now (clock.c) */
int prof_writer_disabled(void);  /* the writer gave up (state DISABLED): the end is unknown */
void prof_writer_close(int other_threads_alive);
/* The program lowers its address-space limit (init.c): the trace's mapping, and the stack
 * caches no thread holds, shrink to their shares of the new one (prof_vm_budget()). */
void prof_writer_fit_limit(uint64_t limit);
void prof_stacks_fit_limit(uint64_t limit);
void prof_writer_forget(void);  /* fork child: drop the parent's trace without touching it */
void prof_writer_drop_stale(void);  /* ... and its mapping, where the child starts none */
/* fork child that goes on inside a hook: the trace's range stays mapped, as scratch memory */
void prof_writer_detach(void);
const char *prof_writer_path(void);
uint32_t prof_writer_pid(void);
int prof_writer_fd(void);  /* our trace's descriptor, -1 if none: never reported as I/O */
int prof_fd_hide(int fd);  /* our own descriptors live above the program's */
int prof_writer_units(const char **data, uint64_t *units, uint32_t *unit_size,
		      uintptr_t *map_lo, uintptr_t *map_hi);
int prof_writer_growing(void);
uint64_t prof_writer_lost(void);  /* records lost so far (the header's count) */

/* Registers the calling thread (THREAD_START) if it is not yet; returns its state. Inline:
 * every hook asks, and all but a thread's first find it registered. */
void prof_thread_register(struct prof_thread *th);
static inline struct prof_thread *prof_thread_get(void)
{
	struct prof_thread *th = &prof_self;
	if (unlikely(th->serial == 0))
		prof_thread_register(th);
	return th;
}
void prof_thread_end(struct prof_thread *th, int process_ends);
/* dlsym of a symbol that may be missing, as libprof's own work (hookmap.c). A failed lookup
 * leaves its error message allocated in the loader's state of the thread until the next dl*
 * call frees it, maybe the program's, whose free would then be recorded as that of a block
 * never allocated: a lookup that succeeds frees it at once. */
void *prof_dlsym_optional(void *handle, const char *name);
/* init.c: /proc/thread-self, or /proc/self on kernels before 3.17. /proc/self is the main
 * thread's: its maps and descriptors read as empty once it has left by pthread_exit while
 * other threads go on. */
const char *prof_proc_self(void);
/* sandbox.c: the process is about to install a seccomp filter (NULL: strict mode); recording
 * stops unless the filter lets libprof's own system calls through or refuses them by errno.
 * prof_sandboxed(): it did stop for one (the programs started from here are not profiled). */
struct sock_fprog;
void prof_sandbox_entered(const struct sock_fprog *filter);
int prof_sandboxed(void);
int prof_threads_alive(void);
/* init.c: a copy of this process was made (fork, or clone.c's ways): in the child every
 * family forgets the parent's state and recording starts anew; the parent records the fork. */
void prof_fork_child(void);
void prof_fork_parent(pid_t child);  /* errno kept */
/* init.c: recording is on and this process writes the trace (not a vfork child, which shares
 * the parent's memory). */
int prof_recording_here(void);
/* init.c: a wait call returned child's end (a wait status): REAPED, for the process tree. */
void prof_reaped(pid_t child, int status);
/* init.c: the process ends now without exit's handlers (_exit, a clone child's return):
 * its status is recorded, with no end-of-run work. */
void prof_quick_exit(int status);
/* init.c: the parent resumes after a child that borrowed its memory (vfork): if the child
 * called exit(), glibc ran (and spent) the parent's exit handlers, libprof's too: said once. */
void prof_borrower_done(void);
/* Each family's part of prof_fork_child(). */
void prof_io_fork_child(void);          /* fdtable.c */
void prof_io_batches_fork_child(void);  /* io.c */
void prof_cuda_fork_child(void);        /* cuda_core.c */

/* stacks.c: the caller's stack, interned; 0 when stacks are off or it could not be had.
 * prof_stack_at() takes a hint that makes it faster: the hooked function's return address
 * (__builtin_return_address(0) in the hook). */
uint32_t prof_stack_here(struct prof_thread *th);
uint32_t prof_stack_at(struct prof_thread *th, uintptr_t call_site);
/* The same, given also the hook's own frame (__builtin_frame_address(0) in the hook, which
 * returns to call_site): the stack cache then need not find it by walking libprof's frames. */
uint32_t prof_stack_from(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook_frame);
/* prof_stack_from(), which also says, in proof (struct prof_stack_proof, above), which entry
 * of the stack cache held for the call. */
uint32_t prof_stack_proven(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook_frame,
			   struct prof_stack_proof *proof);
/* 1: this call's stack is the one of the call that got proof, exactly (the entry's words
 * still hold, cached_holds()); 0: not known, take it anew. */
int prof_stack_still(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook_frame,
		     const struct prof_stack_proof *proof);
/* The stack id of the entry proof names, if it holds for this call (prof_stack_still()), else
 * 0: a call made again from where the proof was taken costs the check of its words alone. */
uint32_t prof_stack_again(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook_frame,
			  const struct prof_stack_proof *proof);
/* Before a hook's real call: starts fetching what prof_stack_from() will read for that call. */
void prof_stack_prefetch(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook_frame);
void prof_stacks_reset(void);
/* A fork child's thread keeps its cache (cache, or NULL: the child goes without); the
 * counts PROF_DEBUG=1 says start over. */
/* pristine: the fork was made outside our hooks, so the tables the kernel wiped
 * (prof_wipe_on_fork()) are still empty; else a hook went on with the parent's state first. */
void prof_stacks_fork_child(struct prof_thread *th, struct stack_cache *cache, int pristine);
/* In a fork child, once: 1 if the copy was made by fork(), whose handler waited until no
 * thread was inside libunwind's steps (a recording unwind); 0 for copies made without the
 * handlers (_Fork, clone, syscall: clone.c). */
int prof_stacks_fork_was_safe(void);
/* Gives the thread's stack cache back, its memory too unless the process ends (no use then:
 * the kernel takes it all, and emptying its pages cost a subshell's exit some 10 us). */
void prof_stacks_thread_done(struct prof_thread *th, int process_ends);

/* modules.c: MODULE records for every loaded object; rescans after dlopen/dlclose. */
void prof_modules_init(void);
void prof_modules_rescan(void);
void prof_modules_mark_stale(void);       /* async-signal-safe: a rescan is due */
extern _Atomic int prof_modules_stale;
static inline void prof_modules_rescan_if_stale(void)
{
	if (unlikely(atomic_load_explicit(&prof_modules_stale, memory_order_relaxed)))
		prof_modules_rescan();
}
void prof_modules_reset(void);
/* The loader's counts of objects loaded and unloaded so far (dl_phdr_info's dlpi_adds and
 * dlpi_subs; 0, 0 where this libc has none): equal counts, the same objects. */
void prof_loader_counts(unsigned long long counts[2]);
int prof_addr_is_ours(uintptr_t ip);
int prof_addr_known(uintptr_t ip);
uint32_t prof_modules_known(void);  /* objects described so far (a fork child: anew) */
/* Whether [addr, addr + len) lies in a loaded object's segment (as of the latest rescan, none
 * while a dlclose runs): readable without a check. */
int prof_addr_in_objects(uintptr_t addr, size_t len);
/* dlcloses so far: code that was at an address may have gone, and other code come there. */
extern _Atomic uint32_t prof_code_unloads;
int prof_tls_modules_added(void);
int prof_module_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* stacks.c: interns frames already unwound (a CPU sample's); 0 when it cannot be written. */
uint32_t prof_stack_intern(struct prof_thread *th, void *const *frames, int n);
/* The stack this thread last unwound at call_site (prof_stack_at()), 0 if none is known. */
uint32_t prof_stack_last_at(struct prof_thread *th, uintptr_t call_site);

/* cpu.c: CPU-time sampling. prof_cpu_start() starts the calling (registered) thread's timer,
 * prof_cpu_stop() deletes it; prof_cpu_init() installs the signal handler once per process. */
void prof_cpu_init(void);
void prof_cpu_start(struct prof_thread *th);
void prof_cpu_stop(struct prof_thread *th);

/* A call failed with EINTR and our sampling signal was handled since `ticks` was read: the
 * program never sent that signal, so the hook makes the call again (with what remains of
 * its timeout). Pairs with prof_ticks(). */
static inline uint32_t prof_ticks(void)
{
	return prof_self.ticks;
}
int prof_eintr_ours(int rc, uint32_t ticks);
/* A signal set without the sampling signal (what a program blocks or waits for), or with it
 * (the mask of a wait, so a tick cannot end it); set itself when nothing changes. */
const sigset_t *prof_cpu_unblocked(const sigset_t *set, sigset_t *buf);
const sigset_t *prof_cpu_blocked(const sigset_t *set, sigset_t *buf);
/* Whether the program blocked the sampling signal in this thread, as it believes (it is never
 * blocked for real); a new thread starts with its creator's. */
int prof_cpu_tick_blocked(void);
void prof_cpu_set_tick_blocked(int blocked);

/* heap.c */
void prof_heap_init(void);

/* leakscan.c: memcheck's leak classes at exit (LEAK_SCAN, LEAK_BLOCKS records); memory of
 * libprof's own (tables it maps) is registered so that it is never taken for a root.
 * stack_from: where the calling thread's stack is live from, if the scan runs on another
 * stack (init.c); 0: from the scan's own frame. */
void prof_leak_scan(uintptr_t stack_from);
void prof_own_memory(const void *p, size_t len);
void prof_leak_fork_child(void);  /* the heap holds the parent's blocks, unknown to the trace */
void prof_leak_made_copy(void);   /* this process forked: its pages are shared with a child */

/* Another thread is at work for us (a few loads and stores): spin a little, then let it run.
 * spins counts the calls, from 0. */
static inline void prof_backoff(unsigned *spins)
{
	if (++*spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		sched_yield();
	}
}

/* Slots that threads claim, one bit each in words[] (the stack caches, the heap tallies, the
 * stdio batches): take bit i if it is free (1: this call took it), the first free one of the
 * first n (its index, or -1), give it back, or ask whether it is taken. */
static inline int prof_slot_take(_Atomic uint64_t *words, unsigned i)
{
	_Atomic uint64_t *word = &words[i / 64];
	uint64_t bit = 1ull << (i % 64), old = atomic_load(word);
	while (!(old & bit))
		if (atomic_compare_exchange_weak(word, &old, old | bit))
			return 1;
	return 0;
}

static inline int prof_slot_claim(_Atomic uint64_t *words, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (prof_slot_take(words, i))
			return (int)i;
	return -1;
}

static inline void prof_slot_give(_Atomic uint64_t *words, unsigned i)
{
	atomic_fetch_and(&words[i / 64], ~(1ull << (i % 64)));
}

/* Zeroes the n bytes at p (8-byte aligned, n a multiple of 8) 4 KiB at a time, skipping the
 * pieces that are zero already. For a fork child emptying a table it inherited: writing
 * would copy (or allocate) every page of the table, where reading copies nothing. Nobody else
 * may use the table meanwhile. */
static inline void prof_clear(void *p, size_t n)
{
	uint64_t *w = p;
	for (size_t at = 0, words = n / 8; at < words;) {
		size_t end = at + 512 < words ? at + 512 : words;
		uint64_t any = 0;
		for (size_t i = at; i < end; i++)
			any |= w[i];
		if (any)
			memset(w + at, 0, (end - at) * 8);
		at = end;
	}
}

/* A slot taken of the first n, given back: its index, or -1 if none is. For a fork child
 * that empties what its parent's threads held: reading only the words, not the slots' own
 * pages, which a parent that never used them has never faulted in. */
static inline int prof_slot_pop(_Atomic uint64_t *words, unsigned n)
{
	for (unsigned w = 0; w < n / 64; w++) {
		uint64_t bits = atomic_load(&words[w]);
		if (bits) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(bits);
			prof_slot_give(words, i);
			return (int)i;
		}
	}
	return -1;
}

static inline int prof_slot_taken(_Atomic uint64_t *words, unsigned i)
{
	return (atomic_load(&words[i / 64]) >> (i % 64)) & 1;
}

/* How much address space one of libprof's large reservations may take: want, or, under an
 * address-space or data limit (ulimit -v, ulimit -d: reserved space counts against them
 * though it holds no memory), at most 1/share of the smaller, so that the program can still
 * have what it would have unprofiled. */
static inline size_t prof_vm_budget(size_t want, unsigned share)
{
	static const int limits[] = { RLIMIT_AS, RLIMIT_DATA };
	size_t most = SIZE_MAX;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit rl;
		if (getrlimit(limits[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur / share < most)
			most = (size_t)(rl.rlim_cur / share);
	}
	return want < most ? want : most;
}

/* Zeroed memory of ours made on first use: *slot, else a new mapping of bytes put there (the
 * first thread's wins); NULL if none can be had. Never a root of the leak scan; errno stays.
 * In small pages, advised before any thread can touch it: it is filled as it is used, and a
 * huge page (THP "always") would zero 2 MiB for a first entry.
 * The tables of a family a process may never use (CUDA's) live there, not in libprof's
 * zero-initialized data, which stays under 2 MiB: no huge page (THP "always") to zero when
 * a hook runs before our constructors (another library's constructor calling malloc). */
static __attribute__((unused, noinline)) void *prof_lazy_map(void *_Atomic *slot, size_t bytes)
{
	int err = errno;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0), *won = NULL;
	if (p == MAP_FAILED) {
		p = NULL;
	} else if (madvise(p, bytes, MADV_NOHUGEPAGE), !atomic_compare_exchange_strong(slot, &won, p)) {
		munmap(p, bytes);  /* another thread's mapping won */
		p = won;
	} else {
		prof_own_memory(p, bytes);
	}
	errno = err;
	return p;
}

static inline void *prof_lazy(void *_Atomic *slot, size_t bytes)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	return likely(p) ? p : prof_lazy_map(slot, bytes);
}

/* A table of ours that a fork child empties: the kernel hands the child zero-filled pages
 * (MADV_WIPEONFORK, Linux 4.14), so that fork() copies none of its page table entries and the
 * parent's own writes after a fork do not fault on pages shared with the child. Returns 1
 * where the kernel does it; 0: the child must empty the table itself (MADV_DONTNEED). */
static inline int prof_wipe_on_fork(void *p, size_t bytes)
{
#ifdef MADV_WIPEONFORK
	int err = errno, ok = madvise(p, bytes, MADV_WIPEONFORK) == 0;
	errno = err;
	return ok;
#else
	(void)p;
	(void)bytes;
	return 0;
#endif
}

/* dl_iterate_phdr for libprof's own walks of the loaded objects. While it runs, a CPU sample
 * of the thread does not unwind (cpu.c): the thread may hold the loader's lock, or be taking
 * it, before its owner field says so, and libunwind would then wait for it for ever, holding
 * its own lock, which every other thread's unwind then waits for (a JVM stopped so). */
static inline int prof_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	struct prof_thread *th = &prof_self;
	th->in_loader++;
	atomic_signal_fence(memory_order_seq_cst);
	int r = dl_iterate_phdr(cb, arg);
	atomic_signal_fence(memory_order_seq_cst);
	th->in_loader--;
	return r;
}

/* modules.c: the loader's lock, found by prof_loader_lock_find() at start (NULL: not found).
 * libunwind must not run in a thread that holds it (prof_loader_lock_held(): a hook called
 * from a dl_iterate_phdr callback) or that may be half way through taking or giving it back
 * (prof_loader_lock_busy(), for a CPU sample: the lock word says held and the owner field
 * nobody; pthread_mutex_lock sets the owner a few instructions after it wins the word,
 * pthread_mutex_unlock clears it a few before it lets the word go). An unwind there would
 * wait for the lock held by this thread (two threads calling dl_iterate_phdr in a loop hung
 * at the default 99 Hz, 3 runs in 3), or for libunwind's own, held by another thread that
 * waits for the loader's. */
extern const pthread_mutex_t *prof_loader_lock;
void prof_loader_lock_find(void);
static inline int prof_loader_lock_held(const struct prof_thread *th)
{
	const pthread_mutex_t *m = prof_loader_lock;
	return m && __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == (int)th->tid;
}

static inline int prof_loader_lock_busy(const struct prof_thread *th)
{
	const pthread_mutex_t *m = prof_loader_lock;
	if (!m)
		return 0;
	int word = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
	int owner = __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
	return owner == (int)th->tid || (word != 0 && owner == 0);
}

/* log.c: one line on stderr with write(2); never allocates. */
void prof_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same from anywhere, signal handlers included: a, b, c, then ": " and what the errno
 * value err means, if not 0. */
void prof_say(const char *a, const char *b, const char *c, int err);
#define prof_dbg(level, ...) do { if (prof_cfg.debug >= (level)) prof_log(__VA_ARGS__); } while (0)

#endif
