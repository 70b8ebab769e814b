/* THREADS threads (default 8) meet at a barrier before each of 16 rounds, then all allocate
 * at once from a call path none has taken before: path K (a function of its own) in round K.
 * Each path is one stack, whichever thread interns it first: a report must show one site per
 * path, with THREADS calls. */
#include <pthread.h>
#include <stdlib.h>

#define ROUNDS 16

static pthread_barrier_t meet;
static void *volatile sink;

#define PATH(k)                                                           \
	__attribute__((noinline)) void path##k(void)                      \
	{                                                                 \
		void *p = malloc(16 + k);                                 \
		sink = p;                                                 \
		free(p);                                                  \
	}
PATH(0) PATH(1) PATH(2) PATH(3) PATH(4) PATH(5) PATH(6) PATH(7)
PATH(8) PATH(9) PATH(10) PATH(11) PATH(12) PATH(13) PATH(14) PATH(15)

static void (*const paths[ROUNDS])(void) = {
	path0, path1, path2, path3, path4, path5, path6, path7,
	path8, path9, path10, path11, path12, path13, path14, path15,
};

static void *worker(void *arg)
{
	(void)arg;
	for (int k = 0; k < ROUNDS; k++) {
		pthread_barrier_wait(&meet);
		paths[k]();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	if (threads < 1 || threads > 64)
		return 2;
	pthread_t t[64];
	pthread_barrier_init(&meet, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
