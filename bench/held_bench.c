/* held_bench: a program that ends with many blocks allocated, for the exit's leak scan
 * (bench/leakscan.sh). held_bench BLOCKS [PAIRS_PER_BLOCK]: allocates BLOCKS blocks of 24
 * bytes kept in a global array (still reachable at exit), one in 64 of them dropped (lost,
 * each pointing to a child of 40 bytes: indirectly lost), and after each block
 * PAIRS_PER_BLOCK (default 1) short-lived blocks of 40 bytes, allocated and freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void **held;
void *volatile sink;

int main(int argc, char **argv)
{
	long blocks = argc > 1 ? atol(argv[1]) : 0, pairs = argc > 2 ? atol(argv[2]) : 1;
	if (blocks <= 0 || pairs < 0 || !(held = calloc((size_t)blocks, sizeof(*held)))) {
		fprintf(stderr, "usage: held_bench BLOCKS [PAIRS_PER_BLOCK]\n");
		return 2;
	}
	for (long i = 0; i < blocks; i++) {
		void **b = malloc(24);
		if (!b)
			return 1;
		memset(b, 0, 24);
		if (i % 64 == 0 && !(b[0] = calloc(1, 40)))
			return 1;
		held[i] = i % 64 == 0 ? NULL : b;  /* the lost ones: nothing points to them */
		for (long k = 0; k < pairs; k++) {
			sink = malloc(40);
			free(sink);
		}
	}
	printf("%ld blocks held\n", blocks - (blocks + 63) / 64);
	return 0;
}
