/* Holds of known length: a mutex and a rwlock (written) taken HOLDS times each by one thread,
 * each hold spinning for about US microseconds. The program times every hold itself and prints
 * what libprof's sampled hold time should come to for each lock: every hold of its first 256
 * acquisitions, then the holds of every SAMPLEth acquisition, each SAMPLE times (see
 * PROF_LOCK_HOLD_SAMPLE). Measured here hold by hold, the estimate does not depend on the
 * machine's load: a preempted hold is as long for both. Prints "NAME 0xADDR" and
 * "NAME_estimate NS" for each.
 *
 *	lock_holds HOLDS US SAMPLE */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define HOLD_EXACT 256

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* One hold: its length, spun from just after the lock to just before the unlock. */
static long spin(long us)
{
	long a = now_ns(), b;
	do
		b = now_ns();
	while (b - a < us * 1000);
	return b - a;
}

static long weight(long n, long sample)
{
	return n <= HOLD_EXACT ? 1 : n % sample == 0 ? sample : 0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long holds = atol(argv[1]), us = atol(argv[2]), sample = atol(argv[3]);
	long mutex_est = 0, rw_est = 0;
	for (long n = 1; n <= holds; n++) {
		pthread_mutex_lock(&mutex);
		long d = spin(us);
		pthread_mutex_unlock(&mutex);
		mutex_est += d * weight(n, sample);
		pthread_rwlock_wrlock(&rwlock);
		d = spin(us);
		pthread_rwlock_unlock(&rwlock);
		rw_est += d * weight(n, sample);
	}
	printf("mutex %p\nmutex_estimate %ld\nrwlock %p\nrwlock_estimate %ld\n", (void *)&mutex,
	       mutex_est, (void *)&rwlock, rw_est);
	return 0;
}
