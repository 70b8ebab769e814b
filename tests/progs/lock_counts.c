/* Exact lock counts: THREADS threads each take the shared mutex ITERS times (the first time
 * while main still holds it, so it is contended), their own private mutex ITERS times, and a
 * rwlock, a spinlock and a semaphore ITERS/10 times each, and wait at a barrier 3 times.
 * Prints each lock's address: "NAME 0xADDR".
 *
 *	lock_counts THREADS ITERS [_exit]   (_exit: the process ends by _exit()) */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t private_lock[64];
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static sem_t sem;
static pthread_barrier_t barrier;
static int iters;
static volatile long counter, rw_counter, spin_counter, sem_counter;

__attribute__((noinline)) static void contend_shared(void)
{
	pthread_mutex_lock(&shared_lock);
	counter++;
	pthread_mutex_unlock(&shared_lock);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < iters; i++)
		contend_shared();
	for (int i = 0; i < iters; i++) {
		pthread_mutex_lock(&private_lock[id]);
		pthread_mutex_unlock(&private_lock[id]);
	}
	for (int i = 0; i < iters / 10; i++) {
		pthread_rwlock_rdlock(&rw);
		long v = rw_counter;
		pthread_rwlock_unlock(&rw);
		pthread_rwlock_wrlock(&rw);
		rw_counter = v + 1;
		pthread_rwlock_unlock(&rw);
		pthread_spin_lock(&spin);
		spin_counter++;
		pthread_spin_unlock(&spin);
		sem_wait(&sem);
		sem_counter++;
		sem_post(&sem);
	}
	for (int i = 0; i < 3; i++)
		pthread_barrier_wait(&barrier);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (n < 1 || n > 64)
		return 2;
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&sem, 0, 1);
	pthread_barrier_init(&barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		pthread_mutex_init(&private_lock[i], NULL);
	pthread_t t[64];
	pthread_mutex_lock(&shared_lock);  /* the workers' first acquisition has to wait */
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	usleep(100 * 1000);
	pthread_mutex_unlock(&shared_lock);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("shared %p\nprivate0 %p\nrwlock %p\nspin %p\nsem %p\nbarrier %p\n",
	       (void *)&shared_lock, (void *)&private_lock[0], (void *)&rw, (void *)&spin,
	       (void *)&sem, (void *)&barrier);
	int rc = counter == (long)n * iters ? 0 : 1;
	if (argc > 3 && !strcmp(argv[3], "_exit")) {
		fflush(stdout);
		_exit(rc);
	}
	return rc;
}
