/* leak_reuse: blocks freed by one thread come back to another, which keeps them.
 *
 * The main thread allocates ROUNDS x BATCH blocks of 64 bytes and, batch by batch, hands them
 * to a second thread that frees them (into the arena's bins, past its own small cache; after
 * each free it allocates and frees a block of its own, at the address just freed); then
 * it allocates KEPT more, which glibc serves from those freed addresses, and keeps them in a
 * global until exit: KEPT blocks still reachable, as memcheck says, and no block lost. A
 * replay of the threads' records out of time order would see those addresses freed last, or
 * the first blocks never freed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20
#define BATCH 500
#define KEPT 200

static void *batch[BATCH];
static void *kept[KEPT];

/* Each free of the main thread's block is followed by a block of this thread's own, which
 * glibc serves from the address just freed, freed at once. */
static void *free_batch(void *arg)
{
	(void)arg;
	for (int i = 0; i < BATCH; i++) {
		free(batch[i]);
		void *again = malloc(64);
		memset(again, i, 64);
		free(again);
	}
	return NULL;
}

int main(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BATCH; i++) {
			batch[i] = malloc(64);
			memset(batch[i], r, 64);
		}
		pthread_t t;
		if (pthread_create(&t, NULL, free_batch, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	}
	int reused = 0;
	for (int i = 0; i < KEPT; i++) {
		kept[i] = malloc(64);
		for (int j = 0; j < BATCH && !reused; j++)
			reused = kept[i] == batch[j];
	}
	printf("kept %d blocks, %s\n", KEPT, reused ? "reusing freed addresses" : "all new");
	return 0;
}
