/* A CPU-bound workload for bench/cpu.sh: THREADS threads (default 2) each run ITERS calls
 * (default 200000) down a recursive chain 8 to 11 frames deep to a loop of arithmetic, so
 * samples find real stacks to unwind. Prints the loop's wall time, the process's CPU time
 * (user and system) and a checksum that is the same on every run. No allocation, no I/O, no locks while timed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static long iters = 200000;

__attribute__((noinline)) static double leaf(double x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 0.999999 + 1.0;
	return x;
}

__attribute__((noinline)) static double level(int depth, double x)
{
	if (depth == 0)
		return leaf(x);
	return level(depth - 1, x) * 0.5 + 0.5;
}

static void *work(void *arg)
{
	double *out = arg, x = 1.0;
	for (long i = 0; i < iters; i++)
		x = level(8 + (int)(i & 3), x);
	*out = x;
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2)
		iters = atol(argv[2]);
	if (threads < 1 || threads > 64 || iters < 1)
		return 2;
	pthread_t t[64];
	double res[64];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, work, &res[i]);
	double sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += res[i];
	}
	/* The process's CPU time too: other load on the machine stretches the wall time, not it. */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("seconds=%.4f cpu=%.4f checksum=%.6f\n", now() - t0, cpu, sum);
	return 0;
}
