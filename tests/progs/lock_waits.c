/* Many contended waits on several locks, for the trace's LOCK_WAIT records (short ones, and
 * ordinary ones where they cannot be): THREADS threads each make ROUNDS passes over 8 mutexes
 * of a static array, a mutex of a heap block (far from the array: its deltas do not fit), a
 * timed lock, a rwlock taken for writing and a condition variable, holding each a few
 * microseconds so that the others wait, and every 32nd hold of a thread 200 us: on a loaded
 * machine, where the threads may take turns on one CPU, every lock still has waiters. Prints
 * each lock's address: "NAME 0xADDR".
 *
 *	lock_waits [THREADS [ROUNDS]]   (defaults 4 and 400) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t array[8];
static pthread_mutex_t *far_lock;
static pthread_mutex_t timed = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static unsigned long turn;
static int rounds;
static volatile unsigned long counter;

static void hold_briefly(void)
{
	static __thread unsigned holds;
	for (int i = 0; i < 2000; i++)
		counter++;
	if (++holds % 32 == 0)  /* 11 locks a round: over the rounds, each of them */
		nanosleep(&(struct timespec){ 0, 200 * 1000 }, NULL);
}

__attribute__((noinline)) static void take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	hold_briefly();
	pthread_mutex_unlock(m);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	struct timespec later;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 8; i++)
			take(&array[(i + id) % 8]);
		take(far_lock);
		clock_gettime(CLOCK_REALTIME, &later);
		later.tv_sec += 10;
		if (pthread_mutex_timedlock(&timed, &later) == 0) {
			hold_briefly();
			pthread_mutex_unlock(&timed);
		}
		pthread_rwlock_wrlock(&rw);
		hold_briefly();
		pthread_rwlock_unlock(&rw);
		/* Every tenth round: a condition wait inside a hold of array[0]. */
		if (r % 10 == 0) {
			pthread_mutex_lock(&turn_lock);
			turn++;
			pthread_cond_broadcast(&turn_cond);
			clock_gettime(CLOCK_REALTIME, &later);
			later.tv_nsec += 200000;
			if (later.tv_nsec >= 1000000000L) {
				later.tv_sec++;
				later.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&turn_cond, &turn_lock, &later);
			pthread_mutex_unlock(&turn_lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	rounds = argc > 2 ? atoi(argv[2]) : 400;
	if (threads < 1 || threads > 64 || rounds < 0) {
		fprintf(stderr, "usage: lock_waits [THREADS (1-64) [ROUNDS]]\n");
		return 2;
	}
	for (int i = 0; i < 8; i++)
		pthread_mutex_init(&array[i], NULL);
	/* Big enough to be mmap'd apart from the program's data. */
	char *block = malloc(1 << 20);
	far_lock = (pthread_mutex_t *)(block + 4096);
	pthread_mutex_init(far_lock, NULL);
	for (int i = 0; i < 8; i++)
		printf("array%d %p\n", i, (void *)&array[i]);
	printf("far %p\ntimed %p\nrw %p\n", (void *)far_lock, (void *)&timed, (void *)&rw);
	fflush(stdout);
	pthread_t t[64];
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(far_lock);
	free(block);
	return 0;
}
