/* The threads and locks event family's records: types 20-39, their payloads and enums.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_LOCK_H
#define PROF_FMT_LOCK_H

#include "prof_fmt_base.h"

#define PROF_LOCK_TYPE_FIRST 20
#define PROF_LOCK_TYPE_LAST 39

#define PROF_LOCK_RECORD_TYPES(X)                     \
	X(LOCK_WAIT, 20, prof_rec_lock_wait)          \
	X(LOCK_STATS, 21, prof_rec_lock_stats)        \
	X(THREAD_NAME, 22, prof_rec_thread_name)      \
	X(THREAD_JOIN, 23, prof_rec_thread_join)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_LOCK_STRING_RECORDS(Y) Y(THREAD_NAME, prof_rec_thread_name, name)

/* Payloads. Per lock, the writer keeps cheap counters and writes them as cumulative
 * LOCK_STATS snapshots; every wait that blocked is a LOCK_WAIT of its own. */

/* What a lock address is. */
#define PROF_LOCK_KINDS(X)          \
	X(MUTEX, "mutex", 0)        \
	X(RWLOCK, "rwlock", 1)      \
	X(SPIN, "spin", 2)          \
	X(COND, "cond", 3)          \
	X(BARRIER, "barrier", 4)    \
	X(SEM, "sem", 5)
enum prof_lock_kind {
#define PROF_X(name, str, v) PROF_LOCK_##name = (v),
	PROF_LOCK_KINDS(PROF_X)
#undef PROF_X
	PROF_LOCK_KIND_COUNT
};

/* LOCK_WAIT flags: the call that waited, and the kind of lock it waits on. */
#define PROF_LOCK_OPS(X)                                        \
	X(LOCK, "lock", 0, MUTEX)                               \
	X(TIMEDLOCK, "timedlock", 1, MUTEX)                     \
	X(RDLOCK, "rdlock", 2, RWLOCK)                          \
	X(WRLOCK, "wrlock", 3, RWLOCK)                          \
	X(TIMEDRDLOCK, "timedrdlock", 4, RWLOCK)                \
	X(TIMEDWRLOCK, "timedwrlock", 5, RWLOCK)                \
	X(COND_WAIT, "cond_wait", 6, COND)                      \
	X(COND_TIMEDWAIT, "cond_timedwait", 7, COND)            \
	X(BARRIER_WAIT, "barrier_wait", 8, BARRIER)             \
	X(SEM_WAIT, "sem_wait", 9, SEM)                         \
	X(SEM_TIMEDWAIT, "sem_timedwait", 10, SEM)              \
	X(SPIN_LOCK, "spin_lock", 11, SPIN)
enum prof_lock_op {
#define PROF_X(name, str, v, kind) PROF_LOCK_OP_##name = (v),
	PROF_LOCK_OPS(PROF_X)
#undef PROF_X
	PROF_LOCK_OP_COUNT
};

/* LOCK_WAIT: one call that blocked. Mutexes, rwlocks, spinlocks and semaphores: the try
 * failed and the blocking call was timed (contention). Condition variables and barriers: every
 * wait. h.time is when the wait ended; it began wait_ns earlier. */
struct prof_rec_lock_wait {
	struct prof_rec h;  /* flags: enum prof_lock_op */
	uint64_t lock;      /* address of the lock, condvar, barrier or semaphore */
	uint64_t other;     /* condition waits: the mutex; else 0 */
	uint64_t wait_ns;
	uint32_t stack;     /* where it waited */
	uint16_t kind;      /* enum prof_lock_kind */
	int16_t result;     /* 0: acquired (or woken); else the errno value returned (ETIMEDOUT) */
};

/* LOCK_STATS: cumulative counters of one lock since its first use (each snapshot supersedes
 * the earlier ones: the reader keeps the one with the most acquisitions). Written at the
 * lock's first use (with its stack), as its count of acquisitions grows, at exit, and when the
 * lock is destroyed or initialized again (flag PROF_LOCK_STATS_LAST: its final counts; records
 * about the same address after it are about a new lock). */
#define PROF_LOCK_STATS_LAST 1u
struct prof_rec_lock_stats {
	struct prof_rec h;  /* flags: PROF_LOCK_STATS_LAST or 0 */
	uint64_t lock;
	uint64_t acquisitions;   /* successful lock/trylock/wait calls (incl. contended ones) */
	uint64_t contended;      /* of them, those that had to wait */
	uint64_t wait_ns;        /* total time those waited */
	uint64_t max_wait_ns;
	uint64_t hold_ns;        /* total time held (estimated when sampled, see hold_sample) */
	uint64_t max_hold_ns;    /* longest hold that was timed */
	uint64_t holds_timed;    /* holds measured */
	uint64_t owner_changes;  /* acquisitions by a thread other than the previous owner */
	uint64_t busy;           /* trylocks that failed (EBUSY/EAGAIN), and timed waits that timed out */
	uint32_t first_stack;    /* stack of the first acquisition */
	uint16_t kind;           /* enum prof_lock_kind */
	uint16_t hold_sample;    /* after the first holds, 1 in hold_sample holds is timed */
};

/* THREAD_NAME: thread `serial` is now called name (pthread_setname_np, prctl PR_SET_NAME). */
struct prof_rec_thread_name {
	struct prof_rec h;
	uint32_t serial;  /* 0 if the thread is not known */
	uint32_t tid;
	char name[];      /* NUL-terminated, padded to 8 */
};

/* THREAD_JOIN: flags 0 pthread_join (the writer waited wait_ns for the thread to end),
 * 1 pthread_detach. */
#define PROF_THREAD_JOIN 0u
#define PROF_THREAD_DETACH 1u
struct prof_rec_thread_join {
	struct prof_rec h;
	uint32_t serial;  /* the joined/detached thread; 0 if not known */
	uint32_t tid;
	uint64_t wait_ns;
	int32_t result;   /* the call's return value */
	uint32_t stack;   /* where pthread_join was called; 0 if unknown (detach, older writers) */
};

static inline const char *prof_lock_kind_name(unsigned kind)
{
	switch (kind) {
#define PROF_X(name, str, v) case v: return str;
	PROF_LOCK_KINDS(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

static inline const char *prof_lock_op_name(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, kind) case v: return str;
	PROF_LOCK_OPS(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

/* The kind of lock an op waits on (enum prof_lock_kind), PROF_LOCK_KIND_COUNT if unknown. */
static inline unsigned prof_lock_op_kind(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, kind) case v: return PROF_LOCK_##kind;
	PROF_LOCK_OPS(PROF_X)
#undef PROF_X
	default: return PROF_LOCK_KIND_COUNT;
	}
}

#endif
