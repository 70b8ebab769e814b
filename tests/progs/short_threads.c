/* THREADS short-lived threads, WAVE at a time: each allocates one block of 777 bytes and frees
 * it, then ends. The trace must stay small (a thread must not cost a whole chunk) and the
 * allocation counts exact: see tests/e2e/test_writer.c. */
#include <pthread.h>
#include <stdlib.h>

static void *worker(void *arg)
{
	(void)arg;
	volatile char *p = malloc(777); /* SHORT-ALLOC */
	p[0] = 1;
	free((void *)p);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 5000;
	int wave = argc > 2 ? atoi(argv[2]) : 50;
	if (threads < 0 || wave < 1 || wave > 1024)
		return 2;
	pthread_t t[1024];
	for (int done = 0; done < threads;) {
		int n = threads - done < wave ? threads - done : wave;
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, worker, NULL) != 0)
				return 1;
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		done += n;
	}
	return 0;
}
