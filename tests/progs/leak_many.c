/* leak_many: a program that holds 100,000 blocks at once, then frees most of them: the exit
 * scan's replay then keeps a table that outgrows the caches (PREFETCH_FROM in
 * preload/leakscan.c), and its marking looks up pointers among many blocks to a page.
 * Of the blocks left: every 200th was the head of a lost pair (its pointer dropped: 500 blocks
 * of 32 bytes definitely lost, each pointing to a 48-byte child: 500 indirectly lost), and
 * every 200th from the 100th on is kept in a global array (500 blocks of 32 bytes still
 * reachable). memcheck says the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000
#define EVERY 200

static void *slots[N];

int main(void)
{
	for (int i = 0; i < N; i++) {
		if (!(slots[i] = malloc(32)))
			return 1;
		memset(slots[i], 0, 32);
	}
	for (int i = 0; i < N; i++) {
		if (i % EVERY == 0) {  /* a lost head and its child */
			void **head = slots[i];
			if (!(head[0] = malloc(48)))
				return 1;
			memset(head[0], 0, 48);
			slots[i] = NULL;
		} else if (i % EVERY != EVERY / 2) {
			free(slots[i]);
			slots[i] = NULL;
		}
	}
	printf("%d kept\n", N / EVERY);
	return 0;
}
