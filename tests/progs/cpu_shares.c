/* Known shares of CPU time in known functions, over three threads: hot_a 50%, hot_b 30%,
 * hot_c 20% of the process's CPU time. Each function spins until its thread's CPU clock has
 * advanced by its share, so the shares hold whatever the scheduler does. Argument: the unit
 * of CPU time in ms (default 100; the whole run uses 10 units). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static long unit_ms = 100;
static volatile double sink;

static long long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Arithmetic only; the clock is read once per ~50 us, so the samples land here. */
static void spin_for(long ms)
{
	long long end = thread_cpu_ns() + ms * 1000000LL;
	double x = sink;
	while (thread_cpu_ns() < end)
		for (int i = 0; i < 20000; i++)  /* HOT-LOOP */
			x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void hot_a(long units) { spin_for(units * unit_ms); }
__attribute__((noinline)) void hot_b(long units) { spin_for(units * unit_ms); }
__attribute__((noinline)) void hot_c(long units) { spin_for(units * unit_ms); }

static void *first(void *arg)
{
	(void)arg;
	hot_a(3);
	hot_b(1);
	return NULL;
}

static void *second(void *arg)
{
	(void)arg;
	hot_b(2);
	hot_c(1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		unit_ms = atol(argv[1]);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, first, NULL);
	pthread_create(&t2, NULL, second, NULL);
	hot_a(2);
	hot_c(1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	return 0;
}
