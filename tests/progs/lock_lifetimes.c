/* Locks that live and die at one address: each pair below makes a lock in a heap block, uses
 * it, ends it and frees the block, then makes the second lock of the pair in a block of the
 * same size, which malloc hands back at the same address. A profiler that knows locks by
 * address alone merges each pair into one lock. Prints "NAME 0xADDR" for every lock.
 *
 *   mutex: the first is contended once (at wait_for_first_mutex), then destroyed; the second
 *          is taken SECOND_TAKES times, uncontended (at take_second_mutex).
 *   sem:   the first is waited FIRST_SEM_WAITS times, then destroyed; the second
 *          SECOND_SEM_WAITS times.
 *   reinit: the first is taken REINIT_FIRST_TAKES times and its block freed without a
 *          destroy; the second, initialized in the same memory, REINIT_SECOND_TAKES times. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SECOND_TAKES 1000
#define FIRST_SEM_WAITS 10
#define SECOND_SEM_WAITS 20
#define REINIT_FIRST_TAKES 30
#define REINIT_SECOND_TAKES 40

struct object {
	pthread_mutex_t lock;
	sem_t sem;
	long value;
};

__attribute__((noinline)) static void wait_for_first_mutex(struct object *o)
{
	pthread_mutex_lock(&o->lock);
	o->value++;
	pthread_mutex_unlock(&o->lock);
}

static void *waiter(void *arg)
{
	wait_for_first_mutex(arg);
	return NULL;
}

__attribute__((noinline)) static void take_second_mutex(struct object *o)
{
	for (int i = 0; i < SECOND_TAKES; i++) {
		pthread_mutex_lock(&o->lock);
		o->value++;
		pthread_mutex_unlock(&o->lock);
	}
}

__attribute__((noinline)) static void wait_sem(struct object *o, int times)
{
	for (int i = 0; i < times; i++) {
		sem_wait(&o->sem);
		sem_post(&o->sem);
	}
}

__attribute__((noinline)) static void take_mutex(struct object *o, int times)
{
	for (int i = 0; i < times; i++) {
		pthread_mutex_lock(&o->lock);
		pthread_mutex_unlock(&o->lock);
	}
}

static struct object *object_new(void)
{
	struct object *o = malloc(sizeof(*o));
	if (!o)
		exit(1);
	o->value = 0;
	return o;
}

/* A semaphore's life in a new object: made, waited `waits` times, destroyed, freed. */
static void sem_life(const char *name, int waits)
{
	struct object *o = object_new();
	sem_init(&o->sem, 0, 1);
	wait_sem(o, waits);
	printf("%s %p\n", name, (void *)&o->sem);
	sem_destroy(&o->sem);
	free(o);
}

/* A mutex's life in a new object: made, taken `takes` times, freed with no destroy. */
static void mutex_life_undestroyed(const char *name, int takes)
{
	struct object *o = object_new();
	pthread_mutex_init(&o->lock, NULL);
	take_mutex(o, takes);
	printf("%s %p\n", name, (void *)&o->lock);
	free(o);
}

int main(void)
{
	struct object *o = object_new();
	pthread_mutex_init(&o->lock, NULL);
	pthread_mutex_lock(&o->lock);
	pthread_t t;
	pthread_create(&t, NULL, waiter, o);
	usleep(50 * 1000);  /* the waiter blocks */
	pthread_mutex_unlock(&o->lock);
	pthread_join(t, NULL);
	printf("mutex1 %p\n", (void *)&o->lock);
	pthread_mutex_destroy(&o->lock);
	free(o);

	o = object_new();
	pthread_mutex_init(&o->lock, NULL);
	take_second_mutex(o);
	printf("mutex2 %p\n", (void *)&o->lock);
	pthread_mutex_destroy(&o->lock);
	free(o);

	sem_life("sem1", FIRST_SEM_WAITS);
	sem_life("sem2", SECOND_SEM_WAITS);
	mutex_life_undestroyed("reinit1", REINIT_FIRST_TAKES);
	mutex_life_undestroyed("reinit2", REINIT_SECOND_TAKES);
	return 0;
}
