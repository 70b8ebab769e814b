/* The threads and locks family: what init.c, locks.c and threads.c share. */
#ifndef PROF_PRELOAD_LOCKS_H
#define PROF_PRELOAD_LOCKS_H

#include <stdint.h>

struct prof_thread;

/* locks.c */
void prof_locks_init(void);        /* at start-up: real functions, the lock table */
void prof_locks_fork_child(int pristine);  /* fork child: the parent's locks were the parent's trace */
void prof_locks_flush(void);       /* at exit: a LOCK_STATS snapshot of every lock */

/* threads.c */
void prof_threads_init(void);
void prof_threads_fork_child(void);

/* init.c: registers the calling thread, started by pthread_create from thread parent_serial
 * at stack, running start_routine (THREAD_START carries them). */
struct prof_thread *prof_thread_start_child(uint32_t parent_serial, uint32_t stack,
					    uint64_t start_routine);

#endif
