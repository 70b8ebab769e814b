/* Timed calls that make other hooks run inside them (own-time test, issue 18 part 4).
 *
 *	own_time DIR N
 *
 * N rounds, each from a different call depth (so every allocation inside has a stack never
 * seen before and is unwound afresh): fopen DIR/own.out, fprintf one line (the first write
 * allocates the FILE's buffer), fclose; then, holding a mutex, malloc and free 16 blocks.
 * The fprintf and the hold do the same work whatever is recorded; under libprof with every
 * family on, the allocation hooks inside them unwind, and that must not show in their times. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static const char *path;
static volatile unsigned long sink;

static __attribute__((noinline)) void leaf(int round)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "round %d\n", round);
	fclose(f);
	pthread_mutex_lock(&m);
	for (int i = 0; i < 16; i++) {
		void *p = malloc(64 + (size_t)i);
		sink += (unsigned long)p;
		free(p);
	}
	pthread_mutex_unlock(&m);
}

static __attribute__((noinline)) void down(int depth, int round)
{
	if (depth > 0)
		down(depth - 1, round);
	else
		leaf(round);
	sink++;  /* not a tail call: each level keeps its frame */
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: own_time DIR N\n");
		return 2;
	}
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/own.out", argv[1]);
	path = buf;
	int n = atoi(argv[2]);
	for (int r = 0; r < n; r++)
		down(r % 48, r);
	printf("own_time %d rounds\n", n);
	return 0;
}
