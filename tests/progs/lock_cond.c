/* Condition-variable waits: a consumer waits ROUNDS times on a condition variable that a
 * producer signals every 30 ms; the mutex is held only briefly by either. Prints
 * "cond 0xADDR" and "mutex 0xADDR".
 *
 *   lock_cond cancel   a waiter that nothing signals is cancelled (pthread_cancel) after
 *                      60 ms inside pthread_cond_wait; its cleanup handler unlocks the mutex,
 *                      which the main thread then takes. Prints "cancelled 1" too. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready, consumed;

__attribute__((noinline)) static void wait_for_item(void)
{
	pthread_mutex_lock(&m);
	while (!ready)
		pthread_cond_wait(&c, &m);
	ready = 0;
	consumed++;
	pthread_mutex_unlock(&m);
}

static void *consumer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++)
		wait_for_item();
	return NULL;
}

static void unlock_mutex(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock_mutex, &m);
	for (;;)
		pthread_cond_wait(&c, &m);
	pthread_cleanup_pop(1);
	return NULL;
}

static int cancel_a_waiter(void)
{
	pthread_t t;
	void *res = NULL;
	pthread_create(&t, NULL, waiter, NULL);
	usleep(60 * 1000);
	pthread_cancel(t);
	pthread_join(t, &res);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	printf("cond %p\nmutex %p\ncancelled %d\n", (void *)&c, (void *)&m, res == PTHREAD_CANCELED);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "cancel"))
		return cancel_a_waiter();
	pthread_t t;
	pthread_create(&t, NULL, consumer, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		usleep(30 * 1000);
		pthread_mutex_lock(&m);
		ready = 1;
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
		/* wait until consumed, without holding the mutex for long */
		for (;;) {
			pthread_mutex_lock(&m);
			int done = consumed > i;
			pthread_mutex_unlock(&m);
			if (done)
				break;
			usleep(1000);
		}
	}
	pthread_join(t, NULL);
	/* a timed wait that times out */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 10 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&m);
	int rc = pthread_cond_timedwait(&c, &m, &ts);
	pthread_mutex_unlock(&m);
	printf("cond %p\nmutex %p\ntimedwait %d\n", (void *)&c, (void *)&m, rc);
	return 0;
}
