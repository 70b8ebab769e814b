/* Return codes and errno of lock calls, printed one per line; the same with and without
 * libprof: recursive and error-checking mutexes (EDEADLK, EPERM, EBUSY), timed locks that
 * time out (ETIMEDOUT) or get a bad timeout (EINVAL), rwlocks, spinlocks, semaphores, and
 * destroying them (EBUSY for a held mutex). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void show(const char *what, int rc)
{
	printf("%-36s %d (%s)\n", what, rc, rc > 0 ? strerrorname_np(rc) : "-");
}

static void show_errno(const char *what, int rc)
{
	printf("%-36s %d errno %s\n", what, rc, rc ? strerrorname_np(errno) : "-");
}

static struct timespec soon(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t errchk;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *other_thread(void *arg)
{
	(void)arg;
	struct timespec ts = soon(20);
	show("other: timedlock(held)", pthread_mutex_timedlock(&held, &ts));
	show("other: trylock(held)", pthread_mutex_trylock(&held));
	show("other: unlock(errorcheck, not owner)", pthread_mutex_unlock(&errchk));
	ts = soon(20);
	show("other: rwlock timedwrlock(rd held)", pthread_rwlock_timedwrlock(&rw, &ts));
	show("other: rwlock tryrdlock(rd held)", pthread_rwlock_tryrdlock(&rw));
	show("other: rwlock unlock(rd)", pthread_rwlock_unlock(&rw));
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t rec;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&errchk, &a);

	errno = 1234;
	show("recursive lock", pthread_mutex_lock(&rec));
	show("recursive lock again", pthread_mutex_lock(&rec));
	show("recursive trylock", pthread_mutex_trylock(&rec));
	show("recursive unlock", pthread_mutex_unlock(&rec));
	show("recursive unlock", pthread_mutex_unlock(&rec));
	show("recursive unlock", pthread_mutex_unlock(&rec));
	show("recursive unlock (not held)", pthread_mutex_unlock(&rec));
	printf("errno still %d\n", errno);

	show("errorcheck lock", pthread_mutex_lock(&errchk));
	show("errorcheck lock again", pthread_mutex_lock(&errchk));
	show("errorcheck trylock", pthread_mutex_trylock(&errchk));
	struct timespec ts = soon(10);
	show("errorcheck timedlock", pthread_mutex_timedlock(&errchk, &ts));

	pthread_mutex_lock(&held);
	show("rwlock rdlock", pthread_rwlock_rdlock(&rw));
	pthread_t t;
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_join(t, NULL);
	show("rwlock unlock (main's rd)", pthread_rwlock_unlock(&rw));
	show("errorcheck unlock", pthread_mutex_unlock(&errchk));
	show("errorcheck unlock (not held)", pthread_mutex_unlock(&errchk));
	show("unlock held", pthread_mutex_unlock(&held));

	ts.tv_sec = 0;
	ts.tv_nsec = 2000000000;  /* invalid */
	show("timedlock bad timeout (free)", pthread_mutex_timedlock(&held, &ts));
	show("unlock", pthread_mutex_unlock(&held));
	show("rwlock timedwrlock bad timeout", pthread_rwlock_timedwrlock(&rw, &ts));
	show("rwlock wrlock", pthread_rwlock_wrlock(&rw));
	show("rwlock wrlock again", pthread_rwlock_wrlock(&rw));
	show("rwlock rdlock while writing", pthread_rwlock_rdlock(&rw));
	show("rwlock trywrlock", pthread_rwlock_trywrlock(&rw));
	show("rwlock unlock", pthread_rwlock_unlock(&rw));

	pthread_spinlock_t s;
	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	show("spin lock", pthread_spin_lock(&s));
	show("spin trylock", pthread_spin_trylock(&s));
	show("spin unlock", pthread_spin_unlock(&s));

	sem_t sem;
	sem_init(&sem, 0, 1);
	errno = 0;
	show_errno("sem_wait", sem_wait(&sem));
	show_errno("sem_trywait (0)", sem_trywait(&sem));
	ts = soon(10);
	show_errno("sem_timedwait (0)", sem_timedwait(&sem, &ts));
	ts.tv_nsec = -1;
	show_errno("sem_timedwait bad timeout", sem_timedwait(&sem, &ts));
	sem_post(&sem);
	ts.tv_nsec = -1;
	show_errno("sem_timedwait bad timeout (1)", sem_timedwait(&sem, &ts));
	errno = 77;
	show_errno("sem_wait (1)", sem_wait(&sem));
	printf("errno still %d\n", errno);

	pthread_mutex_t doomed;
	show("mutex init", pthread_mutex_init(&doomed, NULL));
	pthread_mutex_lock(&doomed);
	show("destroy held mutex", pthread_mutex_destroy(&doomed));
	show("unlock after refused destroy", pthread_mutex_unlock(&doomed));
	show("destroy", pthread_mutex_destroy(&doomed));
	show("rwlock destroy", pthread_rwlock_destroy(&rw));
	show("spin destroy", pthread_spin_destroy(&s));
	errno = 55;
	show_errno("sem_destroy", sem_destroy(&sem));
	printf("errno still %d\n", errno);
	return 0;
}
