/* Thread hooks: pthread_create (who created the thread, where, and what it runs), join and
 * detach, and names (pthread_setname_np, prctl PR_SET_NAME). A created thread registers as it
 * starts (THREAD_START with its parent, creating stack and start routine); THREAD_END is
 * written by init.c's key destructor, which both a return and pthread_exit reach. */
#include "prof.h"

#include <sys/resource.h>
#include "locks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

static struct {
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*join)(pthread_t, void **);
	int (*detach)(pthread_t);
	int (*setname)(pthread_t, const char *);
	int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
} real;

static void resolve(void)
{
	static _Atomic int done;
	if (atomic_load(&done))
		return;
#define RESOLVE(field, name) real.field = (__typeof__(real.field))dlsym(RTLD_NEXT, name)
	RESOLVE(join, "pthread_join");
	RESOLVE(detach, "pthread_detach");
	RESOLVE(setname, "pthread_setname_np");
	RESOLVE(prctl, "prctl");
	RESOLVE(create, "pthread_create");
#undef RESOLVE
	atomic_store(&done, 1);
}

/* ---- which pthread_t is which thread ------------------------------------------------------ */

/* pthread_t -> (serial, tid), for the records about another thread (join, detach, names).
 * Lock-free open addressing; a thread fills its slot as it starts, a join empties it (the
 * pthread_t may then name a new thread). A name given to a thread that has not started yet
 * waits in the slot (REG_PENDING) and the thread writes it once it is registered. */
#define REG_SLOTS 4096u
#define REG_PENDING 1u  /* serial 0, "tid" 1: no real thread */
struct reg_slot {
	_Atomic uintptr_t key;
	_Atomic uint64_t val;  /* serial << 32 | tid; 0 unknown; REG_PENDING: name waiting */
	char name[16];
};
static PROF_BULK struct reg_slot registry[REG_SLOTS];
/* The slots ever claimed, so that a fork child empties those alone: reading all 128 KiB of
 * the table faulted in every page the parent never touched (32 faults a bash subshell). */
static _Atomic uint64_t reg_claimed[REG_SLOTS / 64];

static void write_name(struct prof_thread *th, uint32_t serial, uint32_t tid, const char *name);

static uint32_t reg_hash(uintptr_t k)
{
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 52) & (REG_SLOTS - 1);
}

/* The slot of t, claimed if it has none; NULL when the table is full there. */
static struct reg_slot *reg_slot(pthread_t t, int claim)
{
	uintptr_t k = (uintptr_t)t;
	for (uint32_t i = reg_hash(k), n = 0; n < 64; n++, i = (i + 1) & (REG_SLOTS - 1)) {
		uintptr_t cur = atomic_load(&registry[i].key);
		if (cur == k)
			return &registry[i];
		if (cur == 0) {
			if (!claim)
				return NULL;
			prof_slot_take(reg_claimed, i);  /* first: a fork between the two sees it */
			if (atomic_compare_exchange_strong(&registry[i].key, &cur, k) || cur == k)
				return &registry[i];
		}
	}
	return NULL;
}

/* The calling thread, just registered (under in_hook). */
static void reg_self(struct prof_thread *th)
{
	struct reg_slot *s = reg_slot(pthread_self(), 1);
	if (!s)
		return;
	uint64_t old = atomic_exchange(&s->val, (uint64_t)th->serial << 32 | th->tid);
	if (old == REG_PENDING) {
		char name[16];
		memcpy(name, s->name, sizeof(name));
		name[15] = '\0';
		write_name(th, th->serial, th->tid, name);
	}
}

static int reg_get(struct prof_thread *th, pthread_t t, uint32_t *serial, uint32_t *tid)
{
	*serial = *tid = 0;
	if (pthread_equal(t, pthread_self())) {
		*serial = th->serial;
		*tid = th->tid;
		return 1;
	}
	struct reg_slot *s = reg_slot(t, 0);
	uint64_t v = s ? atomic_load(&s->val) : 0;
	if (v == 0 || v == REG_PENDING)
		return 0;
	*serial = (uint32_t)(v >> 32);
	*tid = (uint32_t)v;
	return 1;
}

/* A name for thread t that has not registered yet: leave it for the thread. 0 if the thread
 * registered meanwhile (the caller then writes the record itself). */
static int reg_leave_name(pthread_t t, const char *name)
{
	struct reg_slot *s = reg_slot(t, 1);
	if (!s)
		return 1;
	strncpy(s->name, name, sizeof(s->name) - 1);
	uint64_t expected = 0;
	return atomic_compare_exchange_strong(&s->val, &expected, REG_PENDING) ||
	       expected == REG_PENDING;
}

static void reg_forget(pthread_t t)
{
	struct reg_slot *s = reg_slot(t, 0);
	if (s)
		atomic_store(&s->val, 0);
}

/* ---- thread start ------------------------------------------------------------------------- */

/* What the new thread needs to know, handed over in a block that is not the program's heap:
 * a static pool (busy flags claimed by CAS), or a page of its own when the pool is empty. */
struct start_block {
	void *(*fn)(void *);
	void *arg;
	uint32_t parent, stack;
	int mapped;
	int tick_blocked;  /* the creator's view of the sampling signal's mask (cpu.c) */
};
#define POOL_BLOCKS 256
static PROF_BULK struct start_block pool[POOL_BLOCKS];
static _Atomic int pool_busy[POOL_BLOCKS];
static _Atomic uint32_t pool_next;

static struct start_block *block_get(void)
{
	for (int n = 0; n < POOL_BLOCKS; n++) {
		uint32_t i = atomic_fetch_add(&pool_next, 1) % POOL_BLOCKS;
		int expected = 0;
		if (atomic_compare_exchange_strong(&pool_busy[i], &expected, 1)) {
			pool[i].mapped = 0;
			return &pool[i];
		}
	}
	struct start_block *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	b->mapped = 1;
	return b;
}

static void block_put(struct start_block *b)
{
	if (b->mapped)
		munmap(b, sizeof(*b));
	else
		atomic_store(&pool_busy[b - pool], 0);
}

/* The lowest address of the calling thread's stack, or 0: a hook that finds little stack left
 * does less (cpu.c, stacks.c), and the stack cache follows frame pointers only inside the
 * stack (stacks.c). Asked here, as the thread starts: pthread_getattr_np() allocates. */
static uintptr_t stack_lowest(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	uintptr_t lo = 0;
	prof_hook_enter(&prof_self);  /* its allocations are ours */
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0)
			lo = (uintptr_t)addr;
		pthread_attr_destroy(&attr);
	}
	prof_self.in_hook--;
	return lo;
}

/* The created thread's first frame: register, then run the program's routine. */
static void *prof_thread_trampoline(void *p)
{
	struct start_block *b = p;
	void *(*fn)(void *) = b->fn;
	void *arg = b->arg;
	uint32_t parent = b->parent, stack = b->stack;
	prof_cpu_set_tick_blocked(b->tick_blocked);
	block_put(b);
	prof_self.stack_lo = stack_lowest();
	if (atomic_load(&prof_active)) {
		int saved = errno;
		struct prof_thread *th = &prof_self;
		prof_hook_enter(th);
		prof_thread_start_child(parent, stack, (uint64_t)(uintptr_t)fn);
		reg_self(th);
		th->in_hook--;
		errno = saved;
	}
	return fn(arg);
}

/* The real call runs outside in_hook: what it allocates (the new thread's TLS) belongs to the
 * program, as valgrind counts it. */
PROF_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			       void *arg)
{
	resolve();
	/* CPU sampling needs the new thread registered (and its timer started) as it starts. */
	struct prof_thread *th = prof_recording(PROF_EV_THREAD | PROF_EV_CPU);
	if (!th)
		return real.create(t, attr, fn, arg);
	int saved = errno;
	prof_hook_enter(th);
	struct prof_thread *me = prof_thread_get();
	struct start_block *b = block_get();
	if (b) {
		b->fn = fn;
		b->arg = arg;
		b->parent = me->serial;
		b->stack = prof_stack_here(me);
		b->tick_blocked = prof_cpu_tick_blocked();
	}
	th->in_hook--;
	errno = saved;
	if (!b)
		return real.create(t, attr, fn, arg);
	int rc = real.create(t, attr, prof_thread_trampoline, b);
	if (rc != 0)
		block_put(b);
	return rc;
}

/* ---- join, detach, names ------------------------------------------------------------------ */

static void write_join(struct prof_thread *th, unsigned how, uint32_t serial, uint32_t tid,
		       uint64_t t0, uint64_t t1, int rc, uintptr_t site)
{
	prof_hook_enter(th);
	prof_thread_get();
	uint32_t stack = how == PROF_THREAD_JOIN ? prof_stack_at(th, site) : 0;
	struct prof_rec_thread_join *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->serial = serial;
		r->tid = tid;
		r->wait_ns = t1 > t0 ? t1 - t0 : 0;
		r->result = rc;
		r->stack = stack;
		prof_commit(r, PROF_REC_THREAD_JOIN, how, sizeof(*r), t1);
	}
	th->in_hook--;
}

/* A join under way, for its record should the joining thread be cancelled in it (a
 * cancellation point: pthread_cancel() unwinds it past the hook): the time it waited, as a
 * join that failed with ECANCELED. */
struct join_call {
	struct prof_thread *th;
	uint32_t serial, tid;
	uint64_t t0;
	uintptr_t site;
};

static void join_cancelled(void *arg)
{
	const struct join_call *j = arg;
	int err = errno;
	write_join(j->th, PROF_THREAD_JOIN, j->serial, j->tid, j->t0, prof_now(), ECANCELED,
		   j->site);
	errno = err;
}

/* The real join runs outside in_hook: it may free the joined thread's TLS (a program block),
 * and it is a cancellation point. */
PROF_EXPORT int pthread_join(pthread_t t, void **ret)
{
	resolve();
	struct prof_thread *th = prof_recording(PROF_EV_THREAD);
	if (!th)
		return real.join(t, ret);
	struct join_call j = { .th = th, .site = (uintptr_t)__builtin_return_address(0) };
	reg_get(th, t, &j.serial, &j.tid);  /* before: once joined, t may name a new thread */
	j.t0 = prof_now();
	int rc;
	pthread_cleanup_push(join_cancelled, &j);
	rc = real.join(t, ret);
	pthread_cleanup_pop(0);
	uint64_t t1 = prof_now();
	int err = errno;
	if (rc == 0)
		reg_forget(t);
	write_join(th, PROF_THREAD_JOIN, j.serial, j.tid, j.t0, t1, rc, j.site);
	errno = err;
	return rc;
}

PROF_EXPORT int pthread_detach(pthread_t t)
{
	resolve();
	struct prof_thread *th = prof_recording(PROF_EV_THREAD);
	if (!th)
		return real.detach(t);
	uint32_t serial, tid;
	reg_get(th, t, &serial, &tid);
	int rc = real.detach(t);
	int err = errno;
	uint64_t now = prof_now();
	write_join(th, PROF_THREAD_DETACH, serial, tid, now, now, rc, 0);
	errno = err;
	return rc;
}

static void write_name(struct prof_thread *th, uint32_t serial, uint32_t tid, const char *name)
{
	size_t len = strnlen(name, 15);
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_thread_name) + len + 1));
	prof_hook_enter(th);
	prof_thread_get();
	if (serial == 0 && tid == 0) {  /* the calling thread, perhaps registered just now */
		serial = th->serial;
		tid = th->tid;
	}
	struct prof_rec_thread_name *r = prof_reserve(th, size);
	if (r) {
		r->serial = serial;
		r->tid = tid;
		memset(r->name, 0, size - sizeof(*r));
		memcpy(r->name, name, len);
		prof_commit(r, PROF_REC_THREAD_NAME, 0, size, prof_now());
	}
	th->in_hook--;
}

PROF_EXPORT int pthread_setname_np(pthread_t t, const char *name)
{
	resolve();
	struct prof_thread *th = prof_recording(PROF_EV_THREAD);
	if (!th)
		return real.setname(t, name);
	prof_hook_enter(th);  /* glibc writes /proc/self/task/TID/comm for other threads: not program I/O */
	int rc = real.setname(t, name);
	th->in_hook--;
	int err = errno;
	uint32_t serial, tid;
	if (rc == 0) {
		if (reg_get(th, t, &serial, &tid))
			write_name(th, serial, tid, name);
		else if (!reg_leave_name(t, name) && reg_get(th, t, &serial, &tid))
			write_name(th, serial, tid, name);
	}
	errno = err;
	return rc;
}

/* prctl is variadic: its arguments are passed on as the kernel takes them, five words. */
PROF_EXPORT int prctl(int option, ...)
{
	resolve();
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		prof_sandbox_entered(a2 == SECCOMP_MODE_FILTER ? (const struct sock_fprog *)a3 : NULL);
	int rc = real.prctl(option, a2, a3, a4, a5);
	if (rc != 0 || option != PR_SET_NAME)
		return rc;
	struct prof_thread *th = prof_recording(PROF_EV_THREAD);
	if (th) {
		int err = errno;
		write_name(th, 0, 0, (const char *)a2);
		errno = err;
	}
	return rc;
}

/* ---- life cycle --------------------------------------------------------------------------- */

void prof_threads_init(void)
{
	resolve();
}

/* Fork child: only the forking thread lives on; the others' pthread_t mean nothing now. */
void prof_threads_fork_child(void)
{
	for (int i; (i = prof_slot_pop(reg_claimed, REG_SLOTS)) >= 0;) {
		atomic_store(&registry[i].key, 0);
		atomic_store(&registry[i].val, 0);
		memset(registry[i].name, 0, sizeof(registry[i].name));
	}
	for (uint32_t i = 0; i < POOL_BLOCKS; i++)
		atomic_store(&pool_busy[i], 0);
}
