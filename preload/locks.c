/* Lock hooks: pthread mutexes, rwlocks, spinlocks, condition variables, barriers and POSIX
 * semaphores. Contention is found as mutrace finds it: try first, and only when that fails
 * time the blocking call. An uncontended acquisition costs a lookup and a few counter updates
 * in a per-lock entry; each contended one is a LOCK_WAIT record with its wait and stack.
 *
 * The lock table is keyed by the lock's address, lock-free (open addressing, claimed by CAS)
 * in mmap'd memory. For exclusive locks (mutex, spinlock, rwlock held for writing) the entry's
 * counters are updated only by the thread that holds the lock, so plain (relaxed) loads and
 * stores suffice: the lock itself orders them. Shared holds (read locks, semaphores, condition
 * variables, barriers) use atomic adds. Counters reach the trace as cumulative LOCK_STATS
 * snapshots: at the lock's first use, as its acquisitions reach 2^k (k <= 12) and every 4096
 * after, and at exit, so a SIGKILL loses at most the last 4096 acquisitions of a lock. A lock
 * destroyed or initialized again has its last snapshot written then, and its entry starts over
 * for the next lock made at that address (lock_ended()).
 *
 * Hold times need a clock read at acquisition and at release. Two clock reads cost more than
 * the whole uncontended lock/unlock pair, so only the first HOLD_EXACT holds of each lock are
 * timed, then one in hold_sample (PROF_LOCK_HOLD_SAMPLE, default 64, 1 = every hold); a timed
 * sampled hold counts hold_sample times in the total, which is then an unbiased estimate. */
#include "prof.h"
#include "locks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define noinline __attribute__((noinline))
/* The program's call site, in an exported hook. */
#define CALLER ((uintptr_t)__builtin_return_address(0))

static struct {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*barrier_wait)(pthread_barrier_t *);
	int (*sem_wait)(sem_t *);
	int (*sem_trywait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	/* Lifetimes: where a lock's entry ends (lock_ended()). */
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*rwlock_destroy)(pthread_rwlock_t *);
	int (*spin_init)(pthread_spinlock_t *, int);
	int (*spin_destroy)(pthread_spinlock_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*barrier_init)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
	int (*barrier_destroy)(pthread_barrier_t *);
	int (*sem_init)(sem_t *, int, unsigned);
	int (*sem_destroy)(sem_t *);
} real;

/* Resolves every real function once. Condition variables exist in two ABIs (GLIBC_2.2.5 and
 * GLIBC_2.3.2); programs built since 2002 use the second, which plain dlsym may not return. */
static noinline void resolve(void)
{
	static _Atomic int done;
	if (atomic_load(&done))
		return;
#define RESOLVE(field, name) \
	real.field = (__typeof__(real.field))dlsym(RTLD_NEXT, name)
#define RESOLVE_COND(field, name)                                                        \
	do {                                                                             \
		real.field = (__typeof__(real.field))dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2"); \
		if (!real.field)                                                         \
			RESOLVE(field, name);                                            \
	} while (0)
	RESOLVE(mutex_trylock, "pthread_mutex_trylock");
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock");
	RESOLVE(mutex_clocklock, "pthread_mutex_clocklock");
	RESOLVE(mutex_unlock, "pthread_mutex_unlock");
	RESOLVE(rwlock_rdlock, "pthread_rwlock_rdlock");
	RESOLVE(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
	RESOLVE(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
	RESOLVE(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
	RESOLVE(rwlock_wrlock, "pthread_rwlock_wrlock");
	RESOLVE(rwlock_trywrlock, "pthread_rwlock_trywrlock");
	RESOLVE(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
	RESOLVE(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
	RESOLVE(rwlock_unlock, "pthread_rwlock_unlock");
	RESOLVE(spin_lock, "pthread_spin_lock");
	RESOLVE(spin_trylock, "pthread_spin_trylock");
	RESOLVE(spin_unlock, "pthread_spin_unlock");
	RESOLVE_COND(cond_wait, "pthread_cond_wait");
	RESOLVE_COND(cond_timedwait, "pthread_cond_timedwait");
	RESOLVE(cond_clockwait, "pthread_cond_clockwait");
	RESOLVE(barrier_wait, "pthread_barrier_wait");
	RESOLVE(sem_wait, "sem_wait");
	RESOLVE(sem_trywait, "sem_trywait");
	RESOLVE(sem_timedwait, "sem_timedwait");
	RESOLVE(sem_clockwait, "sem_clockwait");
	RESOLVE(mutex_init, "pthread_mutex_init");
	RESOLVE(mutex_destroy, "pthread_mutex_destroy");
	RESOLVE(rwlock_init, "pthread_rwlock_init");
	RESOLVE(rwlock_destroy, "pthread_rwlock_destroy");
	RESOLVE(spin_init, "pthread_spin_init");
	RESOLVE(spin_destroy, "pthread_spin_destroy");
	RESOLVE_COND(cond_init, "pthread_cond_init");
	RESOLVE_COND(cond_destroy, "pthread_cond_destroy");
	RESOLVE(barrier_init, "pthread_barrier_init");
	RESOLVE(barrier_destroy, "pthread_barrier_destroy");
	RESOLVE(sem_init, "sem_init");
	RESOLVE(sem_destroy, "sem_destroy");
	RESOLVE(mutex_lock, "pthread_mutex_lock");  /* last: hooks test it to know all are set */
#undef RESOLVE
#undef RESOLVE_COND
	atomic_store(&done, 1);
}

#define RESOLVED(fn) do { if (unlikely(!real.fn)) resolve(); } while (0)

/* ---- the lock table ----------------------------------------------------------------------- */

#define LOCK_BITS 18                  /* 32 MiB of address space, touched as it fills */
#define LOCK_BITS_MIN 10              /* what an address-space limit may leave (table_map()) */
#define MAX_PROBES 40                 /* GROUP_PROBES in the page's group, then 32 (slot_next()) */
#define PAGE_SLOTS_BITS 7             /* slots in a group: one page of the program's (below) */
#define HOLD_EXACT 256                /* holds of each lock always timed */
#define SNAP_EVERY 4096               /* acquisitions between snapshots, past the first ones */
#define READ_HOLDS 8                  /* read locks a thread holds at once with hold timing */

struct lock_entry {
	/* First cache line: what an uncontended acquisition and release touch. */
	_Atomic uintptr_t addr;      /* 0 = free; claimed by CAS */
	_Atomic uint32_t holder;     /* exclusive holder's thread serial, 0 if none */
	_Atomic uint32_t last_owner; /* serial of the latest thread to acquire it */
	/* The exclusive holder's: written and read only by the thread that holds the lock. */
	uint32_t depth;              /* recursive holds */
	uint32_t hold_w;             /* what this hold counts for in hold_ns */
	_Atomic uint64_t acquisitions;
	uint64_t hold_t0;            /* start of this hold if it is timed, else 0 */
	_Atomic uint64_t owner_changes, hold_ns, holds_timed;
	/* Second: contention, rarer events, identity. */
	_Atomic uint64_t max_hold_ns, contended, wait_ns, max_wait_ns, busy;
	_Atomic uint32_t first_stack;
	_Atomic uint16_t kind;
	_Atomic uint8_t ignored;     /* first used by our own code (libunwind's locks): not written */
	uint64_t hold_own0;          /* the holder's own_ns when a timed hold began */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct lock_entry) == 128, "two cache lines per lock");
_Static_assert(offsetof(struct lock_entry, max_hold_ns) == 64, "hot fields in the first line");

static struct lock_entry *table;
static int table_wiped;  /* a fork child gets it zero-filled (prof_wipe_on_fork()) */
static uint32_t lock_mask;       /* slots - 1: 2^LOCK_BITS slots, or fewer (table_map()) */
static _Atomic uint32_t *used;   /* indices of claimed slots, in claim order */
static _Atomic uint8_t *group_claims;  /* slots claimed per group (group_grows()), saturating */
static _Atomic uint32_t nused;
static uint32_t hold_sample = 64;
static uint64_t hold_mask = 63;
/* Acquisitions past HOLD_EXACT where something may be due (a timed hold, a snapshot) are
 * multiples of rare_mask + 1: of hold_sample, and of 256, as powers of two from there on and
 * multiples of SNAP_EVERY are. One test then passes by all the others. */
static uint64_t rare_mask = 63;
_Static_assert(SNAP_EVERY % 256 == 0 && HOLD_EXACT >= 256, "rare_mask finds every snapshot");

/* Shorthands: relaxed loads and stores, an add by the only writer, an add by one of many. */
#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define ADD_EX(x, v) ST(x, LD(x) + (v))
#define ADD_SH(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)

static inline void max_ex(_Atomic uint64_t *m, uint64_t v)
{
	if (v > atomic_load_explicit(m, memory_order_relaxed))
		atomic_store_explicit(m, v, memory_order_relaxed);
}

static inline void max_sh(_Atomic uint64_t *m, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

static inline uint32_t lock_slots(void)
{
	return lock_mask + 1;
}

/* The entries, used[], then group_claims[]: one mapping, emptied as one in a fork child. */
static size_t table_bytes(void)
{
	return (size_t)lock_slots() * (sizeof(struct lock_entry) + sizeof(uint32_t)) +
	       (lock_slots() >> PAGE_SLOTS_BITS);
}

/* The table, in LOCK_BITS_MIN to LOCK_BITS bits: under an address-space limit, at most a 64th
 * of it (prof_vm_budget()); a program with more locks than slots has its latest ones not
 * counted. */
static void table_map(void)
{
	size_t room = prof_vm_budget(SIZE_MAX, 64);
	unsigned bits = LOCK_BITS;
	while ((sizeof(struct lock_entry) + sizeof(uint32_t)) << bits > room && bits > LOCK_BITS_MIN)
		bits--;
	lock_mask = (1u << bits) - 1;
	size_t size = table_bytes();
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (p == MAP_FAILED) {
		table = NULL;
		return;
	}
	prof_own_memory(p, size);  /* lock addresses: never roots of the leak scan */
	table_wiped = prof_wipe_on_fork(p, size);
	/* A program's few locks touch a few pages: no huge page zeroed for each (THP). */
	madvise(p, size, MADV_NOHUGEPAGE);
	used = (_Atomic uint32_t *)((char *)p + lock_slots() * sizeof(struct lock_entry));
	group_claims = (_Atomic uint8_t *)(used + lock_slots());
	atomic_store(&nused, 0);
	table = p;  /* last: a hook that sees it sees the rest */
}

/* A lock's first slots are in the group of 128 slots (PAGE_SLOTS_BITS) of its 4 KiB page of the
 * program's, in the order of their offsets there (one slot per 32 bytes: no two mutexes,
 * rwlocks or semaphores start in one), the groups spread by a hash of the page. A program's
 * locks sit side by side (an array of them, objects of one arena): 4,000 mutexes of an array
 * take some 160 pages of the table, where a hash of each address gave nearly every one a
 * page of its own, a page fault at its first use (2 us here) and a TLB miss at each after.
 * Past GROUP_PROBES slots of its group (more locks in pages whose groups are one), a lock
 * goes on from a hash of its own address, so the table fills as evenly as before. Entries
 * never move, so a lookup follows the claims' probes. */
#define GROUP_PROBES 8
static inline uint32_t slot_hash(uint64_t v)  /* LOCK_BITS bits */
{
	return (uint32_t)((v * 0x9e3779b97f4a7c15ull) >> (64 - LOCK_BITS));
}

static inline uint32_t slot_of(uintptr_t a)
{
	uint32_t group = slot_hash((uint64_t)a >> 12) & ~((1u << PAGE_SLOTS_BITS) - 1);
	uint32_t in_page = (uint32_t)(a >> 5) & ((1u << PAGE_SLOTS_BITS) - 1);
	return (group | in_page) & lock_mask;
}

/* The slot of probe n + 1 of lock a, i being probe n's: the next in its group, then from a
 * hash of its address, in steps that leave a group each time (a full one is full for 128
 * slots). */
static inline uint32_t slot_next(uintptr_t a, uint32_t i, uint32_t n)
{
	if (n + 1 < GROUP_PROBES)
		return (i + 1) & lock_mask;
	if (n + 1 == GROUP_PROBES)
		return slot_hash(a) & lock_mask;
	return (i + (1u << PAGE_SLOTS_BITS) + 3) & lock_mask;
}

/* The entry of lock a, or NULL if it has none. Never claims. */
static inline struct lock_entry *lock_find(const void *lock)
{
	uintptr_t a = (uintptr_t)lock;
	struct lock_entry *t = table;
	if (unlikely(!t))
		return NULL;
	for (uint32_t i = slot_of(a), n = 0; n < MAX_PROBES; i = slot_next(a, i, n), n++) {
		uintptr_t k = LD(t[i].addr);
		if (k == a)
			return &t[i];
		if (k == 0)
			return NULL;
	}
	return NULL;
}

/* The stack of a lock call made at site (the hooked function's return address). */
static uint32_t stack_here(struct prof_thread *th, uintptr_t site)
{
	int saved = errno;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	uint32_t stack = prof_stack_at(th, site);
	th->in_hook--;
	prof_own_end(th, own);
	errno = saved;
	return stack;
}

/* Stacks of waits. Each wait takes its own stack (the stack cache makes that a few loads for
 * a call path seen before); PROF_LOCK_STACK_REFRESH_US=N reuses a wait's stack for later waits
 * at the same call site (the hooked function's return address) of the same thread for N us:
 * the innermost frame is then exact, deeper ones are those of the latest wait there. */
#define SITE_STACKS 32  /* TLS: a thread with a 16 KiB stack has about 8 KiB for it */
struct site_stack {
	uintptr_t site;
	uint64_t t;
	uint32_t stack;
};
static __thread struct site_stack site_stacks[SITE_STACKS];
static uint64_t stack_refresh_ns;

/* The stack of a wait at site beginning at *t0; *t0 is taken again after an unwind. */
static uint32_t wait_stack(struct prof_thread *th, uintptr_t site, uint64_t *t0)
{
	struct site_stack *c = &site_stacks[(site >> 2) & (SITE_STACKS - 1)];
	if (c->site == site && c->stack && *t0 - c->t < stack_refresh_ns)
		return c->stack;
	uint32_t stack = stack_here(th, site);
	c->site = site;
	c->t = *t0;
	c->stack = stack;
	*t0 = prof_now();
	return stack;
}

static noinline void snapshot(struct prof_thread *th, struct lock_entry *e, unsigned flags);

/* First use of a lock (of its entry e, new or started over by lock_ended()): note the kind
 * and where it was first used. The unwind happens before the lock is taken, so it never
 * lengthens a hold. */
static void first_use(struct prof_thread *th, struct lock_entry *e, unsigned kind, uintptr_t site)
{
	ST(e->kind, (uint16_t)kind);
	/* its locks are ours */
	ST(e->ignored, prof_addr_is_ours(site) || prof_addr_in_unwinder(site));
	ST(e->first_stack, stack_here(th, site));
}

/* A lock not yet acquired: if lock_ended() started its entry over, this is the first use of
 * the lock now at its address. */
static noinline void first_use_again(struct prof_thread *th, struct lock_entry *e, unsigned kind,
				     uintptr_t site)
{
	if (!LD(e->first_stack))
		first_use(th, e, kind, site);
}

/* The first use of a lock with no entry: claim slot s. */
/* A second lock claimed in a group of slots: the program's locks sit side by side there (an
 * array, objects of one page), and the group's other pages will be claimed too. Each of
 * those pages would fault twice, its first lookup mapping the zero page and its first claim
 * a page of its own (a prefork server's child taking its parent's 4,000 locks: two thirds of
 * the faults it took in the table); made ready in one call now, they fault no more. A group
 * with one lock (locks one to a page of the program's) keeps the one page it touched. */
static void group_grows(uint32_t slot)
{
	_Atomic uint8_t *claims = &group_claims[slot >> PAGE_SLOTS_BITS];
	uint8_t n = atomic_load_explicit(claims, memory_order_relaxed);
	if (n >= 2)
		return;
	if (atomic_fetch_add_explicit(claims, 1, memory_order_relaxed) == 1) {
		int saved = errno;
		madvise(&table[slot & ~((1u << PAGE_SLOTS_BITS) - 1)],
			(1u << PAGE_SLOTS_BITS) * sizeof(struct lock_entry), MADV_POPULATE_WRITE);
		errno = saved;
	}
}

static noinline struct lock_entry *lock_claim(struct prof_thread *th, struct lock_entry *s,
					      uintptr_t a, unsigned kind, uintptr_t site)
{
	uintptr_t expected = 0;
	if (!atomic_compare_exchange_strong(&s->addr, &expected, a))
		return expected == a ? s : NULL;  /* NULL: someone else took it, probe on */
	uint32_t n = atomic_fetch_add(&nused, 1);
	if (n < lock_slots())
		atomic_store(&used[n], (uint32_t)(s - table));
	group_grows((uint32_t)(s - table));
	first_use(th, s, kind, site);
	return s;
}

/* The table had no room for a lock: from then on some locks are untracked. Their waits are
 * still recorded (LOCK_WAIT, with no entry), not their counts; said at exit. */
static _Atomic int table_full;

static noinline struct lock_entry *no_room(void)
{
	if (!atomic_load_explicit(&table_full, memory_order_relaxed))
		atomic_store(&table_full, 1);
	return NULL;
}

/* The entry of lock a, claimed on first use; NULL when the table has no room for it (or
 * could not be made): the lock's waits are recorded all the same, not its counts. */
static inline struct lock_entry *lock_get(struct prof_thread *th, const void *lock, unsigned kind,
					  uintptr_t site)
{
	uintptr_t a = (uintptr_t)lock;
	struct lock_entry *t = table;
	if (unlikely(!t))
		return NULL;
	for (uint32_t i = slot_of(a), n = 0; n < MAX_PROBES; i = slot_next(a, i, n), n++) {
		uintptr_t k = LD(t[i].addr);
		if (likely(k == a)) {
			if (unlikely(LD(t[i].acquisitions) == 0))
				first_use_again(th, &t[i], kind, site);
			return &t[i];
		}
		if (k == 0) {
			struct lock_entry *e = lock_claim(th, &t[i], a, kind, site);
			if (e)
				return e;
		}
	}
	return no_room();
}

/* The calling thread, registered, if this lock call is to be recorded. */
static noinline struct prof_thread *register_self(struct prof_thread *th)
{
	int saved = errno;
	prof_hook_enter(th);
	prof_thread_get();
	th->in_hook--;
	errno = saved;
	return th;
}

static inline struct prof_thread *lock_thread(void)
{
	struct prof_thread *th = prof_recording(PROF_EV_LOCK);
	if (th && unlikely(th->serial == 0))
		return register_self(th);
	return th;
}

/* ---- counting ----------------------------------------------------------------------------- */

static inline int snapshot_due(uint64_t n)
{
	return (n & (SNAP_EVERY - 1)) == 0 || (n & (n - 1)) == 0;
}

static inline int hold_timed(uint64_t n)
{
	return n <= HOLD_EXACT || (n & hold_mask) == 0;
}

/* A timed hold is a timed interval of the holder (prof_timed_begin()): libprof's own work
 * inside it (the allocation hooks of the critical section) is not counted in its length.
 * Pairs with hold_end(). */
static noinline void hold_begin(struct prof_thread *th, struct lock_entry *e)
{
	e->hold_t0 = prof_timed_begin(th, &e->hold_own0);
}

/* The lock this thread acquired last, and its entry: the unlock that usually follows finds
 * it without hashing (entries never move; a fork child forgets it). */
static __thread struct lock_entry *last_entry;

static inline struct lock_entry *lock_find_released(const void *lock)
{
	struct lock_entry *e = last_entry;
	if (likely(e && LD(e->addr) == (uintptr_t)lock))
		return e;
	return lock_find(lock);
}

/* An exclusive acquisition by th (the lock is held: nobody else writes the entry), its
 * counts: returns what is left to do, seldom (acquired_rare()): ACQ_TIME_HOLD, ACQ_SNAPSHOT. */
enum { ACQ_TIME_HOLD = 1, ACQ_SNAPSHOT = 2 };

static inline unsigned acquired_count(struct prof_thread *th, struct lock_entry *e, uint64_t *acq)
{
	unsigned rare = 0;
	last_entry = e;
	uint32_t me = th->serial;
	uint64_t n = LD(e->acquisitions) + 1;
	ST(e->acquisitions, n);
	*acq = n;
	uint32_t last = LD(e->last_owner);
	if (last != me) {
		ST(e->last_owner, me);
		if (last)
			ADD_EX(e->owner_changes, 1);
	}
	int maybe = n <= HOLD_EXACT || (n & rare_mask) == 0;
	if (LD(e->holder) == me) {
		e->depth++;  /* recursive mutex taken again */
	} else {
		ST(e->holder, me);
		e->depth = 1;
		e->hold_t0 = 0;
		if (unlikely(maybe) && hold_timed(n))
			rare = ACQ_TIME_HOLD;
	}
	if (unlikely(maybe) && snapshot_due(n))
		rare |= ACQ_SNAPSHOT;
	return rare;
}

/* Out of line, so that the common way of an acquisition saves few registers. Returns rc,
 * the real call's result, so that a hook can end in it. */
static noinline int acquired_rare(struct prof_thread *th, struct lock_entry *e, uint64_t n,
				  unsigned rare, int rc)
{
	if (rare & ACQ_TIME_HOLD) {
		e->hold_w = n <= HOLD_EXACT ? 1 : hold_sample;
		hold_begin(th, e);
	}
	if (rare & ACQ_SNAPSHOT)
		snapshot(th, e, 0);
	return rc;
}

static inline void acquired_excl(struct prof_thread *th, struct lock_entry *e)
{
	uint64_t n;
	unsigned rare = acquired_count(th, e, &n);
	if (unlikely(rare))
		acquired_rare(th, e, n, rare, 0);
}

/* Out of line: most holds are not timed, and the fast path then saves fewer registers. */
static noinline void hold_end(struct prof_thread *th, struct lock_entry *e)
{
	uint64_t d = prof_timed_end(th, e->hold_t0, e->hold_own0) - e->hold_t0;
	e->hold_t0 = 0;
	ADD_EX(e->hold_ns, d * e->hold_w);
	ADD_EX(e->holds_timed, 1);
	max_ex(&e->max_hold_ns, d);
}

/* Pairs with acquired_excl(): called before the real unlock, while th still holds it. An
 * unlock by a thread that does not hold the lock (EPERM for error-checking mutexes) changes
 * nothing. */
static inline void released_excl(struct prof_thread *th, struct lock_entry *e)
{
	if (LD(e->holder) != th->serial || --e->depth)
		return;
	ST(e->holder, 0);
	if (unlikely(e->hold_t0))
		hold_end(th, e);
}

/* Read holds of rwlocks: many at once, so their start times live with the reader. */
struct read_hold {
	uintptr_t lock;
	uint64_t t0;    /* a timed hold's start, or 0 */
	uint32_t own0;  /* low bits of own_ns then: a hold's own time is far below 4 s */
	uint32_t w;
};
static __thread struct read_hold read_holds[READ_HOLDS];
static __thread uint32_t nread_holds;

static inline void acquired_shared(struct prof_thread *th, struct lock_entry *e, int track_hold)
{
	uint32_t me = th->serial;
	uint64_t n = ADD_SH(e->acquisitions, 1) + 1;
	uint32_t last = LD(e->last_owner);
	if (last != me) {
		ST(e->last_owner, me);
		if (last)
			ADD_SH(e->owner_changes, 1);
	}
	if (track_hold && nread_holds < READ_HOLDS) {
		struct read_hold *h = &read_holds[nread_holds++];
		h->lock = atomic_load_explicit(&e->addr, memory_order_relaxed);
		uint64_t own0 = 0;
		h->t0 = hold_timed(n) ? prof_timed_begin(th, &own0) : 0;
		h->own0 = (uint32_t)own0;
		h->w = n <= HOLD_EXACT ? 1 : hold_sample;
	}
	if (unlikely(snapshot_due(n)))
		snapshot(th, e, 0);
}

static inline void released_shared(struct prof_thread *th, struct lock_entry *e, uintptr_t lock)
{
	for (uint32_t i = nread_holds; i-- > 0;) {
		if (read_holds[i].lock != lock)
			continue;
		struct read_hold h = read_holds[i];
		read_holds[i] = read_holds[--nread_holds];
		if (h.t0) {
			uint64_t now_own = prof_own_total(th);
			uint64_t own0 = now_own - (uint32_t)((uint32_t)now_own - h.own0);
			uint64_t d = prof_timed_end(th, h.t0, own0) - h.t0;
			ADD_SH(e->hold_ns, d * h.w);
			ADD_SH(e->holds_timed, 1);
			max_sh(&e->max_hold_ns, d);
		}
		return;
	}
}

static int acquired_rc(int rc)
{
	return rc == 0 || rc == EOWNERDEAD;
}

static void write_wait(struct prof_thread *th, uintptr_t lock, uintptr_t other, unsigned kind,
		       unsigned op, uint32_t stack, uint64_t wait_ns, uint64_t t1, int rc)
{
	int saved = errno;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	prof_write_lock_wait(th, op, kind, lock, other, wait_ns, stack, rc, t1);
	th->in_hook--;
	prof_own_end(th, own);
	errno = saved;
}

/* The LOCK_WAIT of a contended exclusive acquisition is written after the lock is released
 * again (by the unlock hook, after the real unlock), so writing it never lengthens the
 * critical section that others are waiting for. Its time is still the acquisition's. */
struct pending_wait {
	uintptr_t lock;
	uint64_t wait_ns, t1;
	uint32_t stack;
	uint16_t kind, op;
	int set;
};
static __thread struct pending_wait pending;

static noinline void flush_pending(struct prof_thread *th)
{
	struct pending_wait p = pending;
	pending.set = 0;
	write_wait(th, p.lock, 0, p.kind, p.op, p.stack, p.wait_ns, p.t1, 0);
}

static inline void after_release(struct prof_thread *th)
{
	if (unlikely(pending.set))
		flush_pending(th);
}

/* A call that blocked from t0 to t1 and returned rc: counted and written as LOCK_WAIT.
 * shared: counters may be written by others at the same time (read locks, semaphores,
 * condition variables, barriers; and any wait that did not acquire). */
static void waited(struct prof_thread *th, struct lock_entry *e, const void *lock,
		   const void *other, unsigned kind, unsigned op, uint32_t stack, uint64_t t0,
		   uint64_t t1, int rc, int shared)
{
	uint64_t w = t1 > t0 ? t1 - t0 : 0;
	if (e) {
		if (shared || !acquired_rc(rc)) {
			ADD_SH(e->contended, 1);
			ADD_SH(e->wait_ns, w);
			max_sh(&e->max_wait_ns, w);
		} else {
			ADD_EX(e->contended, 1);
			ADD_EX(e->wait_ns, w);
			max_ex(&e->max_wait_ns, w);
		}
		if (!acquired_rc(rc))
			ADD_SH(e->busy, 1);
	}
	if (e && LD(e->ignored))
		return;
	if (!shared && rc == 0) {  /* held now: write it once it is released */
		if (pending.set)
			flush_pending(th);
		pending = (struct pending_wait){ (uintptr_t)lock, w, t1, stack, (uint16_t)kind,
						 (uint16_t)op, 1 };
		return;
	}
	write_wait(th, (uintptr_t)lock, (uintptr_t)other, kind, op, stack, w, t1, rc);
}

/* Did a blocking call wait, or fail at once (EDEADLK, EINVAL, ...)? Only waits are written. */
static int blocked_rc(int rc)
{
	return acquired_rc(rc) || rc == ETIMEDOUT || rc == EINTR;
}

static noinline void snapshot(struct prof_thread *th, struct lock_entry *e, unsigned flags)
{
	if (LD(e->ignored))
		return;
	int saved = errno;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_lock_stats *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->lock = (uint64_t)LD(e->addr);
		r->acquisitions = LD(e->acquisitions);
		r->contended = LD(e->contended);
		r->wait_ns = LD(e->wait_ns);
		r->max_wait_ns = LD(e->max_wait_ns);
		r->hold_ns = LD(e->hold_ns);
		r->max_hold_ns = LD(e->max_hold_ns);
		r->holds_timed = LD(e->holds_timed);
		r->owner_changes = LD(e->owner_changes);
		r->busy = LD(e->busy);
		r->first_stack = LD(e->first_stack);
		r->kind = LD(e->kind);
		r->hold_sample = (uint16_t)hold_sample;
		prof_commit(r, PROF_REC_LOCK_STATS, flags, sizeof(*r), prof_now());
	}
	th->in_hook--;
	prof_own_end(th, own);
	errno = saved;
}

/* ---- life cycle --------------------------------------------------------------------------- */

void prof_locks_init(void)
{
	resolve();
	const char *v = getenv("PROF_LOCK_HOLD_SAMPLE");
	if (v && *v) {
		unsigned long n = strtoul(v, NULL, 10);
		uint32_t p = 1;
		while (p < n && p < 32768)
			p <<= 1;
		hold_sample = p;
		hold_mask = p - 1;
		rare_mask = hold_mask < 255 ? hold_mask : 255;
	}
	if ((v = getenv("PROF_LOCK_STACK_REFRESH_US")) && *v)
		stack_refresh_ns = strtoull(v, NULL, 10) * 1000;
	if (!table)
		table_map();
}

void prof_locks_fork_child(int pristine)
{
	/* The parent's counters went to the parent's trace; other threads' holds died with them.
	 * The table is emptied in place (private memory: zero-filled again), unless the kernel
	 * gave the child it empty. */
	if (table) {
		if (!table_wiped || !pristine)
			madvise(table, table_bytes(), MADV_DONTNEED);
		atomic_store(&nused, 0);
		atomic_store(&table_full, 0);
	}
	nread_holds = 0;
	pending.set = 0;
	last_entry = NULL;
	prof_self.timed = 0;  /* the holds it counted died with the parent's table */
	memset(site_stacks, 0, sizeof(site_stacks));  /* the child numbers its stacks anew */
	if (!table)
		table_map();
}

void prof_locks_flush(void)
{
	if (!table)
		return;
	struct prof_thread *th = prof_thread_get();
	after_release(th);
	if (atomic_load(&table_full))
		prof_log("the lock table filled up (%u locks): locks first taken after that have their "
			 "waits recorded, not their counts", lock_slots());
	uint32_t n = atomic_load(&nused);
	if (n > lock_slots())
		n = lock_slots();
	for (uint32_t i = 0; i < n; i++) {
		struct lock_entry *e = &table[atomic_load(&used[i])];
		if (LD(e->addr) && (LD(e->acquisitions) || LD(e->contended) || LD(e->busy)))
			snapshot(th, e, 0);
	}
}

/* A lock destroyed, or initialized again: the entry's counts are written as the lock's last
 * snapshot and the entry starts over, so a lock made later at the same address (its memory
 * freed and allocated again) is counted as a lock of its own, with its own first use. Done
 * after the real call succeeded: a lock that glibc refuses to destroy (EBUSY) lives on. */
static noinline void lock_ended(const void *lock)
{
	struct prof_thread *th = lock_thread();
	struct lock_entry *e = th ? lock_find(lock) : NULL;
	if (!e)
		return;
	after_release(th);
	if (LD(e->acquisitions) || LD(e->contended) || LD(e->busy))
		snapshot(th, e, PROF_LOCK_STATS_LAST);
	/* Nobody else may use a lock being destroyed or initialized: no other writer. */
	memset((char *)e + sizeof(e->addr), 0, sizeof(*e) - sizeof(e->addr));
}

/* The init and destroy calls of every kind of lock. */
#define LIFETIME_HOOK(field, name, params, args, lock) \
	PROF_EXPORT int name params                    \
	{                                              \
		RESOLVED(mutex_lock);                  \
		int rc = real.field args;              \
		if (rc == 0)                           \
			lock_ended(lock);              \
		return rc;                             \
	}
LIFETIME_HOOK(mutex_init, pthread_mutex_init,
	      (pthread_mutex_t *m, const pthread_mutexattr_t *a), (m, a), m)
LIFETIME_HOOK(mutex_destroy, pthread_mutex_destroy, (pthread_mutex_t *m), (m), m)
LIFETIME_HOOK(rwlock_init, pthread_rwlock_init,
	      (pthread_rwlock_t *l, const pthread_rwlockattr_t *a), (l, a), l)
LIFETIME_HOOK(rwlock_destroy, pthread_rwlock_destroy, (pthread_rwlock_t *l), (l), l)
LIFETIME_HOOK(spin_init, pthread_spin_init, (pthread_spinlock_t *s, int shared), (s, shared),
	      (const void *)(uintptr_t)s)
LIFETIME_HOOK(spin_destroy, pthread_spin_destroy, (pthread_spinlock_t *s), (s),
	      (const void *)(uintptr_t)s)
LIFETIME_HOOK(cond_init, pthread_cond_init, (pthread_cond_t *c, const pthread_condattr_t *a),
	      (c, a), c)
LIFETIME_HOOK(cond_destroy, pthread_cond_destroy, (pthread_cond_t *c), (c), c)
LIFETIME_HOOK(barrier_init, pthread_barrier_init,
	      (pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned n), (b, a, n), b)
LIFETIME_HOOK(barrier_destroy, pthread_barrier_destroy, (pthread_barrier_t *b), (b), b)
LIFETIME_HOOK(sem_init, sem_init, (sem_t *s, int shared, unsigned value), (s, shared, value), s)
LIFETIME_HOOK(sem_destroy, sem_destroy, (sem_t *s), (s), s)
#undef LIFETIME_HOOK

/* ---- mutexes ------------------------------------------------------------------------------ */

/* A peek at the lock word (glibc's layout, the same for every mutex type): unlocked, or held
 * by the caller (recursive relock, or the EDEADLK of an error-checking mutex), means the real
 * call will not wait for another thread. A plain load is far cheaper than a trylock. */
static inline int mutex_not_held_by_other(pthread_mutex_t *m, const struct prof_thread *th)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0 ||
	       __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == (int)th->tid;
}

enum { CALL_PLAIN, CALL_TIMED, CALL_CLOCK };

/* A timeout glibc rejects (EINVAL) even when the lock is free: such calls go straight to the
 * real function, so our try first never turns an EINVAL into a success. */
static inline int timeout_ok(int how, clockid_t clk, const struct timespec *abs)
{
	if (how == CALL_PLAIN)
		return 1;
	if (how == CALL_CLOCK && clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return 0;
	return abs && abs->tv_nsec >= 0 && abs->tv_nsec < 1000000000;
}

static inline int mutex_call(pthread_mutex_t *m, int how, clockid_t clk, const struct timespec *abs)
{
	switch (how) {
	case CALL_TIMED: return real.mutex_timedlock(m, abs);
	case CALL_CLOCK: return real.mutex_clocklock(m, clk, abs);
	default: return real.mutex_lock(m);
	}
}

/* The mutex looked held by another thread: try; if still busy, unwind (while the holder
 * works), then time the blocking call. */
static noinline int mutex_wait(struct prof_thread *th, struct lock_entry *e, pthread_mutex_t *m,
			       int how, clockid_t clk, const struct timespec *abs, uintptr_t site)
{
	int rc = real.mutex_trylock(m);
	if (rc != EBUSY)
		return rc;
	uint64_t t0 = prof_now();
	uint32_t stack = wait_stack(th, site, &t0);
	rc = mutex_call(m, how, clk, abs);
	uint64_t t1 = prof_now();
	int err = errno;
	if (blocked_rc(rc))
		waited(th, e, m, NULL, PROF_LOCK_MUTEX,
		       how == CALL_PLAIN ? PROF_LOCK_OP_LOCK : PROF_LOCK_OP_TIMEDLOCK, stack, t0, t1, rc, 0);
	errno = err;
	return rc;
}

/* A mutex with no entry (no room in the table): its waits alone are recorded. */
static noinline int mutex_untracked(struct prof_thread *th, pthread_mutex_t *m, int how,
				    clockid_t clk, const struct timespec *abs, uintptr_t site)
{
	if (mutex_not_held_by_other(m, th))
		return mutex_call(m, how, clk, abs);
	return mutex_wait(th, NULL, m, how, clk, abs, site);
}

static inline __attribute__((always_inline)) int mutex_lock_common(pthread_mutex_t *m, int how, clockid_t clk,
				    const struct timespec *abs, uintptr_t site)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th || !timeout_ok(how, clk, abs))
		return mutex_call(m, how, clk, abs);
	struct lock_entry *e = lock_get(th, m, PROF_LOCK_MUTEX, site);
	if (unlikely(!e))
		return mutex_untracked(th, m, how, clk, abs, site);
	int rc;
	if (likely(mutex_not_held_by_other(m, th)))
		rc = mutex_call(m, how, clk, abs);
	else
		rc = mutex_wait(th, e, m, how, clk, abs, site);
	if (likely(acquired_rc(rc)))
		acquired_excl(th, e);
	return rc;
}

/* The way most lock and unlock calls take: recording on, the calling thread registered and
 * in no hook of ours, the lock counted before (its entry found without claiming, the one the
 * thread took last first). Only the lock's entry is live across the real call, so the hook
 * saves few registers, and an unlock's real call is its last. Anything else takes the whole
 * way (mutex_lock_common(), mutex_unlock_whole()). */
static inline __attribute__((always_inline)) struct prof_thread *lock_thread_fast(void)
{
	struct prof_thread *th = &prof_self;
	if (unlikely(!atomic_load_explicit(&prof_active, memory_order_relaxed) ||
		     !(prof_cfg.events & PROF_EV_LOCK) || th->in_hook || !th->serial))
		return NULL;
	return th;
}

static noinline int mutex_lock_whole(pthread_mutex_t *m, uintptr_t site)
{
	return mutex_lock_common(m, CALL_PLAIN, 0, NULL, site);
}

/* The count after the real call, out of the hook: the hook keeps only e across that call. */
static noinline int mutex_locked(struct lock_entry *e, int rc)
{
	uint64_t n;
	unsigned rare;
	if (likely(acquired_rc(rc)) && unlikely(rare = acquired_count(&prof_self, e, &n)))
		return acquired_rare(&prof_self, e, n, rare, rc);
	return rc;
}

PROF_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct lock_entry *e;
	if (unlikely(!real.mutex_lock) || !lock_thread_fast() || !(e = lock_find_released(m)) ||
	    !LD(e->acquisitions) || __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 0)
		return mutex_lock_whole(m, CALLER);
	return mutex_locked(e, real.mutex_lock(m));
}

PROF_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	return mutex_lock_common(m, CALL_TIMED, 0, abs, CALLER);
}

PROF_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	return mutex_lock_common(m, CALL_CLOCK, clk, abs, CALLER);
}

PROF_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	uintptr_t site = CALLER;
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th || !(e = lock_get(th, m, PROF_LOCK_MUTEX, site)))
		return real.mutex_trylock(m);
	int rc = real.mutex_trylock(m);
	if (acquired_rc(rc))
		acquired_excl(th, e);
	else if (rc == EBUSY)
		ADD_SH(e->busy, 1);
	return rc;
}

static noinline int mutex_unlock_whole(pthread_mutex_t *m)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th)
		return real.mutex_unlock(m);
	if ((e = lock_find_released(m)))
		released_excl(th, e);
	int rc = real.mutex_unlock(m);
	after_release(th);
	return rc;
}

/* The lock the thread took last is released on the short way whatever the recording's state
 * now (released_excl() keeps its entry true, and does nothing for a thread not its holder),
 * but not inside a hook of ours (a vfork child's: its parent's entries). */
PROF_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct prof_thread *th = &prof_self;
	struct lock_entry *e = last_entry;
	if (unlikely(!real.mutex_lock) || !e || LD(e->addr) != (uintptr_t)m || th->in_hook ||
	    pending.set)
		return mutex_unlock_whole(m);
	released_excl(th, e);
	return real.mutex_unlock(m);  /* nothing of ours after it: no wait is pending */
}

/* ---- rwlocks ------------------------------------------------------------------------------ */

static int rw_call(pthread_rwlock_t *l, int write, int how, clockid_t clk, const struct timespec *abs)
{
	switch (how) {
	case CALL_TIMED:
		return write ? real.rwlock_timedwrlock(l, abs) : real.rwlock_timedrdlock(l, abs);
	case CALL_CLOCK:
		return write ? real.rwlock_clockwrlock(l, clk, abs) : real.rwlock_clockrdlock(l, clk, abs);
	default:
		return write ? real.rwlock_wrlock(l) : real.rwlock_rdlock(l);
	}
}

static int rwlock_common(pthread_rwlock_t *l, int write, int how, clockid_t clk,
			 const struct timespec *abs, uintptr_t site)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th || !timeout_ok(how, clk, abs))
		return rw_call(l, write, how, clk, abs);
	struct lock_entry *e = lock_get(th, l, PROF_LOCK_RWLOCK, site);  /* NULL: its waits alone */
	int rc = write ? real.rwlock_trywrlock(l) : real.rwlock_tryrdlock(l);
	if (rc == EBUSY) {
		uint64_t t0 = prof_now();
		uint32_t stack = wait_stack(th, site, &t0);
		rc = rw_call(l, write, how, clk, abs);
		uint64_t t1 = prof_now();
		int err = errno;
		unsigned op = how == CALL_PLAIN ? (write ? PROF_LOCK_OP_WRLOCK : PROF_LOCK_OP_RDLOCK) :
			      (write ? PROF_LOCK_OP_TIMEDWRLOCK : PROF_LOCK_OP_TIMEDRDLOCK);
		if (blocked_rc(rc))
			waited(th, e, l, NULL, PROF_LOCK_RWLOCK, op, stack, t0, t1, rc, !write);
		errno = err;
	} else if (rc == EDEADLK || rc == EAGAIN) {
		/* The try can fail for reasons the blocking call reports its own way. */
		rc = rw_call(l, write, how, clk, abs);
	}
	if (rc == 0 && e) {
		if (write)
			acquired_excl(th, e);
		else
			acquired_shared(th, e, 1);
	}
	return rc;
}

PROF_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return rwlock_common(l, 0, CALL_PLAIN, 0, NULL, CALLER);
}

PROF_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return rwlock_common(l, 1, CALL_PLAIN, 0, NULL, CALLER);
}

PROF_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abs)
{
	return rwlock_common(l, 0, CALL_TIMED, 0, abs, CALLER);
}

PROF_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abs)
{
	return rwlock_common(l, 1, CALL_TIMED, 0, abs, CALLER);
}

PROF_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk,
					   const struct timespec *abs)
{
	return rwlock_common(l, 0, CALL_CLOCK, clk, abs, CALLER);
}

PROF_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk,
					   const struct timespec *abs)
{
	return rwlock_common(l, 1, CALL_CLOCK, clk, abs, CALLER);
}

static int rwlock_try(pthread_rwlock_t *l, int write, uintptr_t site)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th || !(e = lock_get(th, l, PROF_LOCK_RWLOCK, site)))
		return write ? real.rwlock_trywrlock(l) : real.rwlock_tryrdlock(l);
	int rc = write ? real.rwlock_trywrlock(l) : real.rwlock_tryrdlock(l);
	if (rc == 0) {
		if (write)
			acquired_excl(th, e);
		else
			acquired_shared(th, e, 1);
	} else if (rc == EBUSY) {
		ADD_SH(e->busy, 1);
	}
	return rc;
}

PROF_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return rwlock_try(l, 0, CALLER);
}

PROF_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return rwlock_try(l, 1, CALLER);
}

PROF_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th)
		return real.rwlock_unlock(l);
	if ((e = lock_find(l))) {
		if (LD(e->holder) == th->serial)
			released_excl(th, e);
		else
			released_shared(th, e, (uintptr_t)l);
	}
	int rc = real.rwlock_unlock(l);
	after_release(th);
	return rc;
}

/* ---- spinlocks ---------------------------------------------------------------------------- */

PROF_EXPORT int pthread_spin_lock(pthread_spinlock_t *s)
{
	uintptr_t site = CALLER;
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th)
		return real.spin_lock(s);
	/* NULL: its waits alone */
	struct lock_entry *e = lock_get(th, (const void *)(uintptr_t)s, PROF_LOCK_SPIN, site);
	int rc;
	if (likely(__atomic_load_n(s, __ATOMIC_RELAXED) == 0)) {
		rc = real.spin_lock(s);
	} else if ((rc = real.spin_trylock(s)) == EBUSY) {
		uint64_t t0 = prof_now();
		uint32_t stack = wait_stack(th, site, &t0);
		rc = real.spin_lock(s);
		uint64_t t1 = prof_now();
		int err = errno;
		waited(th, e, (const void *)(uintptr_t)s, NULL, PROF_LOCK_SPIN, PROF_LOCK_OP_SPIN_LOCK, stack, t0, t1, rc, 0);
		errno = err;
	}
	if (rc == 0 && e)
		acquired_excl(th, e);
	return rc;
}

PROF_EXPORT int pthread_spin_trylock(pthread_spinlock_t *s)
{
	uintptr_t site = CALLER;
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th || !(e = lock_get(th, (const void *)(uintptr_t)s, PROF_LOCK_SPIN, site)))
		return real.spin_trylock(s);
	int rc = real.spin_trylock(s);
	if (rc == 0)
		acquired_excl(th, e);
	else if (rc == EBUSY)
		ADD_SH(e->busy, 1);
	return rc;
}

PROF_EXPORT int pthread_spin_unlock(pthread_spinlock_t *s)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th)
		return real.spin_unlock(s);
	if ((e = lock_find_released((const void *)(uintptr_t)s)))
		released_excl(th, e);
	int rc = real.spin_unlock(s);
	after_release(th);
	return rc;
}

/* ---- condition variables ------------------------------------------------------------------ */

/* Time blocked in a condition wait is a wait on the condition variable, not contention on the
 * mutex; the mutex's hold ends when the wait releases it and a new one starts when glibc
 * takes it back inside the call (not through our hooks). */
static __thread uint32_t cond_ticks;  /* samples the holds that follow condition waits */

/* A condition or semaphore wait that blocks: what its end needs, on return or on the
 * thread's cancellation inside it (pthread_cancel(): both waits are cancellation points). */
struct wait_call {
	struct prof_thread *th;
	struct lock_entry *e, *me;  /* the waited lock's; a condition's mutex's (or NULL) */
	const void *lock, *m;
	uint64_t t0;
	uint32_t stack, depth;      /* depth: the mutex's, held by this thread before the wait */
	unsigned kind, op;
};

/* A condition's mutex is the waiter's again (glibc took it back): a new hold, perhaps after
 * another owner. */
static void cond_mutex_again(struct wait_call *cc)
{
	struct lock_entry *me = cc->me;
	uint32_t serial = cc->th->serial;
	if (!cc->depth)
		return;
	uint32_t last = LD(me->last_owner);
	if (last != serial) {
		ST(me->last_owner, serial);
		ADD_EX(me->owner_changes, 1);
	}
	ST(me->holder, serial);
	me->depth = cc->depth;
	me->hold_t0 = 0;
	if (LD(me->acquisitions) <= HOLD_EXACT || (++cond_ticks & hold_mask) == 0) {
		me->hold_w = LD(me->acquisitions) <= HOLD_EXACT ? 1 : hold_sample;
		hold_begin(cc->th, me);
	}
}

/* The thread was cancelled in the wait: the time waited is recorded as a wait that ended
 * without a signal (ECANCELED), where it was lost with the hook's frame; a condition's mutex
 * glibc took back before the thread's cleanup handlers run (which unlock it, as a rule). */
static void wait_cancelled(void *arg)
{
	struct wait_call *wc = arg;
	uint64_t t1 = prof_now();
	int err = errno;
	cond_mutex_again(wc);
	waited(wc->th, wc->e, wc->lock, wc->m, wc->kind, wc->op, wc->stack, wc->t0, t1, ECANCELED,
	       1);
	errno = err;
}

static int cond_common(pthread_cond_t *c, pthread_mutex_t *m, int how, clockid_t clk,
		       const struct timespec *abs, uintptr_t site)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th) {
		switch (how) {
		case CALL_TIMED: return real.cond_timedwait(c, m, abs);
		case CALL_CLOCK: return real.cond_clockwait(c, m, clk, abs);
		default: return real.cond_wait(c, m);
		}
	}
	struct wait_call cc = { .th = th, .lock = c, .m = m, .kind = PROF_LOCK_COND,
				.op = how == CALL_PLAIN ? PROF_LOCK_OP_COND_WAIT
							: PROF_LOCK_OP_COND_TIMEDWAIT };
	cc.e = lock_get(th, c, PROF_LOCK_COND, site);  /* NULL: its waits alone */
	after_release(th);
	uint64_t t_stack = prof_now();
	cc.stack = wait_stack(th, site, &t_stack);
	cc.me = lock_find(m);
	if (cc.me && LD(cc.me->holder) == th->serial) {
		cc.depth = cc.me->depth;
		cc.me->depth = 1;
		released_excl(th, cc.me);
	}
	cc.t0 = prof_now();
	int rc;
	pthread_cleanup_push(wait_cancelled, &cc);
	switch (how) {
	case CALL_TIMED: rc = real.cond_timedwait(c, m, abs); break;
	case CALL_CLOCK: rc = real.cond_clockwait(c, m, clk, abs); break;
	default: rc = real.cond_wait(c, m); break;
	}
	pthread_cleanup_pop(0);
	uint64_t t1 = prof_now();
	int err = errno;
	cond_mutex_again(&cc);
	if (rc == 0 || rc == ETIMEDOUT) {
		if (rc == 0 && cc.e)
			ADD_SH(cc.e->acquisitions, 1);
		waited(th, cc.e, c, m, PROF_LOCK_COND, cc.op, cc.stack, cc.t0, t1, rc, 1);
	}
	errno = err;
	return rc;
}

PROF_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_common(c, m, CALL_PLAIN, 0, NULL, CALLER);
}

PROF_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct timespec *abs)
{
	return cond_common(c, m, CALL_TIMED, 0, abs, CALLER);
}

PROF_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
				       const struct timespec *abs)
{
	return cond_common(c, m, CALL_CLOCK, clk, abs, CALLER);
}

/* ---- barriers and semaphores -------------------------------------------------------------- */

/* Every barrier wait is a wait. The stack is taken after it, so the last thread to arrive
 * does not keep the others waiting while it unwinds. */
PROF_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	uintptr_t site = CALLER;
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th)
		return real.barrier_wait(b);
	struct lock_entry *e = lock_get(th, b, PROF_LOCK_BARRIER, site);  /* NULL: its waits alone */
	uint64_t t0 = prof_now();
	int rc = real.barrier_wait(b);
	uint64_t t1 = prof_now();
	int err = errno;
	if (rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD) {
		if (e)
			ADD_SH(e->acquisitions, 1);
		uint64_t t_stack = t1;
		waited(th, e, b, NULL, PROF_LOCK_BARRIER, PROF_LOCK_OP_BARRIER_WAIT,
		       wait_stack(th, site, &t_stack), t0, t1, 0, 1);
	}
	errno = err;
	return rc;
}

/* A timed wait that CPU sampling's signal interrupts fails with EINTR (SA_RESTART or not):
 * that one is waited again, to the same deadline. The program's own signals still end it. */
static int sem_call(sem_t *s, int how, clockid_t clk, const struct timespec *abs)
{
	for (;;) {
		uint32_t ticks = prof_ticks();
		int rc = how == CALL_TIMED ? real.sem_timedwait(s, abs)
			 : how == CALL_CLOCK ? real.sem_clockwait(s, clk, abs) : real.sem_wait(s);
		if (!prof_eintr_ours(rc, ticks))
			return rc;
	}
}

/* Semaphores have no owner: a successful wait is an acquisition, one that blocked is
 * contended; no hold time. Results follow errno (-1 and errno set on failure). The second
 * return of pthread_cleanup_push()'s setjmp only unwinds a cancelled thread further, never
 * back into the function: no local is read after it, which -Wclobbered cannot know. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclobbered"
#endif
static int sem_common(sem_t *s, int how, clockid_t clk, const struct timespec *abs,
		      uintptr_t site)
{
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	if (!th || !timeout_ok(how, clk, abs))
		return sem_call(s, how, clk, abs);
	struct lock_entry *e = lock_get(th, s, PROF_LOCK_SEM, site);  /* NULL: its waits alone */
	/* sem_wait acts on a pending cancellation even when it need not block: so do we. */
	pthread_testcancel();
	int saved = errno;
	if (real.sem_trywait(s) == 0) {
		errno = saved;
		if (e)
			acquired_shared(th, e, 0);
		return 0;
	}
	if (errno != EAGAIN) {  /* EINVAL: let the real call say it its own way */
		errno = saved;
		return sem_call(s, how, clk, abs);
	}
	errno = saved;
	struct wait_call sc = { .th = th, .e = e, .lock = s, .kind = PROF_LOCK_SEM,
				.op = how == CALL_PLAIN ? PROF_LOCK_OP_SEM_WAIT
							: PROF_LOCK_OP_SEM_TIMEDWAIT };
	sc.t0 = prof_now();
	sc.stack = wait_stack(th, site, &sc.t0);
	int rc;
	pthread_cleanup_push(wait_cancelled, &sc);
	rc = sem_call(s, how, clk, abs);
	pthread_cleanup_pop(0);
	uint64_t t1 = prof_now();
	int err = errno;
	int res = rc == 0 ? 0 : err;
	if (blocked_rc(res))
		waited(th, e, s, NULL, PROF_LOCK_SEM, sc.op, sc.stack, sc.t0, t1, res, 1);
	if (rc == 0 && e)
		acquired_shared(th, e, 0);
	errno = err;
	return rc;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

PROF_EXPORT int sem_wait(sem_t *s)
{
	return sem_common(s, CALL_PLAIN, 0, NULL, CALLER);
}

PROF_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs)
{
	return sem_common(s, CALL_TIMED, 0, abs, CALLER);
}

PROF_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abs)
{
	return sem_common(s, CALL_CLOCK, clk, abs, CALLER);
}

PROF_EXPORT int sem_trywait(sem_t *s)
{
	uintptr_t site = CALLER;
	RESOLVED(mutex_lock);
	struct prof_thread *th = lock_thread();
	struct lock_entry *e;
	if (!th || !(e = lock_get(th, s, PROF_LOCK_SEM, site)))
		return real.sem_trywait(s);
	int rc = real.sem_trywait(s);
	int err = errno;
	if (rc == 0)
		acquired_shared(th, e, 0);
	else if (err == EAGAIN)
		ADD_SH(e->busy, 1);
	errno = err;
	return rc;
}
