/* More mutexes than libprof's lock table holds (2^18), each taken once, then one more, taken
 * after the table is full, on which a second thread waits 50 ms: that wait must still be in
 * the report (the lock's counts cannot be).
 *   lock_many [N]   N mutexes first (default 300000). Prints "waited". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t late = PTHREAD_MUTEX_INITIALIZER;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&late);  /* held by main for 50 ms */
	pthread_mutex_unlock(&late);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	pthread_mutex_t *many = calloc((size_t)n, sizeof(*many));
	if (!many)
		return 1;
	for (long i = 0; i < n; i++) {
		pthread_mutex_init(&many[i], NULL);
		pthread_mutex_lock(&many[i]);
		pthread_mutex_unlock(&many[i]);
	}
	pthread_mutex_lock(&late);
	pthread_t t;
	if (pthread_create(&t, NULL, waiter, NULL) != 0)
		return 1;
	usleep(50 * 1000);
	pthread_mutex_unlock(&late);
	pthread_join(t, NULL);
	free(many);
	puts("waited");
	return 0;
}
