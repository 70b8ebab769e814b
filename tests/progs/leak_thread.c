/* Blocks a thread lost before it ended: their only pointers sit in the dead thread's stack,
 * which glibc keeps mapped for the next thread. memcheck calls them definitely lost (a dead
 * stack is no root): 3 blocks of 100 bytes. A thread still running at exit keeps its block
 * (still reachable, 50 bytes). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int started;

static void *lose(void *arg)
{
	(void)arg;
	char *volatile p = malloc(100);
	memset(p, 1, 100);
	return NULL;
}

static void *keep(void *arg)
{
	(void)arg;
	char *volatile p = malloc(50);
	memset(p, 2, 50);
	pthread_mutex_lock(&m);
	started = 1;
	pthread_cond_signal(&c);
	pthread_mutex_unlock(&m);
	for (;;)
		pause();
	return (void *)p;
}

int main(void)
{
	for (int i = 0; i < 3; i++) {
		pthread_t t;
		pthread_create(&t, NULL, lose, NULL);
		pthread_join(t, NULL);
	}
	pthread_t k;
	pthread_create(&k, NULL, keep, NULL);
	pthread_mutex_lock(&m);
	while (!started)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	return 0;
}
