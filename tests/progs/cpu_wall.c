/* Where a thread's wall-clock time goes, in known parts: the main thread waits about
 * 200 ms for a lock a worker holds, sleeps 200 ms, computes 200 ms of CPU time in compute(),
 * waits for a child (fork) that computes 100 ms, then joins the worker. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile double sink;
static volatile int held;

static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void compute(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	double x = sink;
	while (cpu_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	held = 1;
	usleep(200000);
	pthread_mutex_unlock(&lock);
	return NULL;
}

__attribute__((noinline)) void wait_for_lock(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, holder, NULL);
	while (!held)
		sched_yield();
	wait_for_lock();
	struct timespec ts = { 0, 200000000 };
	nanosleep(&ts, NULL);
	compute(200);
	pid_t child = fork();
	if (child == 0) {
		compute(100);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	pthread_join(t, NULL);
	return 0;
}
