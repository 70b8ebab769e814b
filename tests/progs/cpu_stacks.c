/* Threads with stacks the program sized: 16 KiB (about half of it taken by TLS, libprof's
 * included) and 256 KiB, each spending 200 ms of CPU time. A sample must never overflow a
 * small stack; where too little is left to unwind, it names the function by its PC. */
#include <pthread.h>
#include <time.h>

static volatile double sink;

static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	double x = sink;
	while (cpu_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) static void *on_small_stack(void *arg)
{
	(void)arg;
	spin(200);
	return NULL;
}

__attribute__((noinline)) static void *on_big_stack(void *arg)
{
	(void)arg;
	spin(200);
	return NULL;
}

int main(void)
{
	pthread_attr_t small, big;
	pthread_attr_init(&small);
	pthread_attr_init(&big);
	pthread_attr_setstacksize(&small, 16384);
	pthread_attr_setstacksize(&big, 256 * 1024);
	pthread_t a, b;
	if (pthread_create(&a, &small, on_small_stack, NULL) || pthread_create(&b, &big, on_big_stack, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
