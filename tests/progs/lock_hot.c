/* Four threads that each take one mutex 200 times and hold it ~100 us, so they spend much of
 * their life waiting for it (the Findings rule lock_wait), and a fifth that waits on a
 * condition variable until they are done (blocked_thread). */
#include <pthread.h>
#include <time.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&done_lock);
	while (!done)
		pthread_cond_wait(&done_cond, &done_lock);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

static void spin_us(long us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&hot);
		counter++;
		spin_us(100);
		pthread_mutex_unlock(&hot);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4], w;
	pthread_create(&w, NULL, waiter, NULL);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_lock(&done_lock);
	done = 1;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&done_lock);
	pthread_join(w, NULL);
	return counter == 800 ? 0 : 1;
}
