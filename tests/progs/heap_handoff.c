/* One thread allocates blocks of 1 to 300 bytes and hands them through a queue to another,
 * which frees them; the queue holds up to QUEUE blocks (about 1.5 MB at the peak), and the
 * last LEFT stay allocated. Every free is of a block another thread allocated: the sampled
 * heap mode's counts must still add up (tests/e2e/test_heap_sample.c). Deterministic. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 400000
#define QUEUE 10000
#define LEFT 100

static void *queue[QUEUE];
static long head, tail;  /* blocks put, blocks taken */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static void *consumer(void *arg)
{
	(void)arg;
	unsigned long sum = 0;
	for (long i = 0; i < BLOCKS - LEFT; i++) {
		pthread_mutex_lock(&lock);
		while (tail == head)
			pthread_cond_wait(&changed, &lock);
		unsigned char *p = queue[tail++ % QUEUE];
		pthread_cond_signal(&changed);
		pthread_mutex_unlock(&lock);
		sum += p[0];
		free(p);
	}
	return (void *)sum;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, consumer, NULL) != 0)
		return 1;
	for (long i = 0; i < BLOCKS; i++) {
		size_t size = (size_t)(i * 7919 % 300) + 1;
		unsigned char *p = malloc(size);
		if (!p)
			return 1;
		memset(p, (int)(i & 0xff), size);
		pthread_mutex_lock(&lock);
		while (head - tail == QUEUE)
			pthread_cond_wait(&changed, &lock);
		queue[head++ % QUEUE] = p;
		pthread_cond_signal(&changed);
		pthread_mutex_unlock(&lock);
	}
	void *sum;
	pthread_join(t, &sum);
	printf("heap_handoff %lu\n", (unsigned long)(uintptr_t)sum);
	return 0;
}
