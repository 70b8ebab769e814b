/* Thread names and parents: main starts "namer" (named by main with pthread_setname_np),
 * which names itself with prctl and starts "grandchild"; one thread is detached. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

static pthread_barrier_t named;

static void *grandchild_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "grandchild");
	return NULL;
}

static void *namer_main(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&named);  /* main has named us */
	prctl(PR_SET_NAME, "prctl-name");
	pthread_t g;
	pthread_create(&g, NULL, grandchild_main, NULL);
	pthread_join(g, NULL);
	usleep(20 * 1000);
	return NULL;
}

static void *detached_main(void *arg)
{
	(void)arg;
	return NULL;
}

int main(void)
{
	pthread_barrier_init(&named, NULL, 2);
	pthread_t t, d;
	pthread_create(&t, NULL, namer_main, NULL);
	pthread_setname_np(t, "setname-name");
	pthread_barrier_wait(&named);
	pthread_create(&d, NULL, detached_main, NULL);
	pthread_detach(d);
	pthread_join(t, NULL);
	usleep(10 * 1000);
	return 0;
}
