/* Lock benchmark: lock/unlock loops, uncontended (each thread its own mutex) or contended
 * (all threads one mutex), with optional work inside and outside the critical section.
 * Prints its wall time; bench/locks.sh compares runs with and without libprof.
 *
 *	lock_bench uncontended|contended THREADS ITERATIONS [WORK_INSIDE [WORK_OUTSIDE]]
 *
 * WORK_* are steps of a dependent multiply chain (a few ns each) per iteration. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct worker {
	pthread_mutex_t *lock;
	long iters;
	volatile long *counter;
	int inside, outside;
	unsigned long sink;
} __attribute__((aligned(64)));

static struct {
	pthread_mutex_t m;
	long counter;
} __attribute__((aligned(64))) locks[64];

static unsigned long work(unsigned long x, int steps)
{
	for (int i = 0; i < steps; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static void *run(void *p)
{
	struct worker *w = p;
	unsigned long x = (unsigned long)(uintptr_t)w;
	for (long i = 0; i < w->iters; i++) {
		pthread_mutex_lock(w->lock);
		(*w->counter)++;
		x = work(x, w->inside);
		pthread_mutex_unlock(w->lock);
		x = work(x, w->outside);
	}
	w->sink = x;
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 6 || (strcmp(argv[1], "uncontended") && strcmp(argv[1], "contended"))) {
		fprintf(stderr, "usage: lock_bench uncontended|contended THREADS ITERATIONS "
			"[WORK_INSIDE [WORK_OUTSIDE]]\n");
		return 2;
	}
	int contended = !strcmp(argv[1], "contended");
	int n = atoi(argv[2]);
	long iters = atol(argv[3]);
	int inside = argc > 4 ? atoi(argv[4]) : 0, outside = argc > 5 ? atoi(argv[5]) : 0;
	if (n < 1 || n > 64 || iters < 1)
		return 2;
	struct worker w[64];
	pthread_t t[64];
	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&locks[i].m, NULL);
		int k = contended ? 0 : i;
		w[i] = (struct worker){ &locks[k].m, iters, &locks[k].counter, inside, outside, 0 };
	}
	double t0 = now();
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, run, &w[i]);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	double t1 = now();
	long total = 0;
	for (int i = 0; i < n; i++)
		total += locks[i].counter;
	printf("%s threads=%d iterations=%ld total=%ld seconds=%.6f ns_per_pair=%.2f\n", argv[1], n,
	       iters, total, t1 - t0, (t1 - t0) * 1e9 / (double)iters);
	return total == (long)n * iters ? 0 : 1;
}
