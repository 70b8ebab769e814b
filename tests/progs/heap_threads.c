/* THREADS threads allocate at once, each ITERS malloc/free pairs of (i % 64 + 1) bytes and
 * one leaked block of 16 bytes. Totals are exact: see the test. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int iters;
static void *leaks[256];

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < iters; i++) {
		volatile char *p = malloc((size_t)(i % 64) + 1);
		p[0] = (char)i;
		free((void *)p);
	}
	leaks[id] = malloc(16); /* LEAK-T */
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 16;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (threads < 1 || threads > 256)
		return 2;
	pthread_t t[256];
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
