/* Prints errno and results around allocation calls: the output must be the same with and
 * without the profiler. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	volatile size_t huge = SIZE_MAX / 2;  /* volatile: no compile-time overflow warnings */
	errno = 1234;
	void *p = malloc(10);
	free(p);
	printf("after malloc/free: %d\n", errno);
	errno = 0;
	p = malloc(huge);
	printf("huge malloc: %s errno=%d\n", p ? "ok" : "NULL", errno);
	errno = 77;
	p = calloc(huge / 2, 8);
	printf("overflowing calloc: %s errno=%d\n", p ? "ok" : "NULL", errno);
	errno = 55;
	void *q = NULL;
	int rc = posix_memalign(&q, 3, 16);
	printf("bad posix_memalign: rc=%d errno=%d\n", rc, errno);
	free(q);
	errno = 42;
	p = realloc(NULL, 16);
	p = realloc(p, huge);
	printf("failed realloc: %s errno=%d\n", p ? "ok" : "NULL", errno);
	errno = 9;
	p = reallocarray(NULL, huge, 4);
	printf("overflowing reallocarray: %s errno=%d\n", p ? "ok" : "NULL", errno);
	errno = 31;
	p = aligned_alloc(64, 64);
	free(p);
	printf("aligned_alloc/free: %d\n", errno);
	/* Many small blocks, some kept a while: the sampled mode's tallies and their records. */
	static void *kept[4096];
	long changed = 0;
	for (long i = 0; i < 300000; i++) {
		int e = (int)(i % 120) + 1;
		size_t k = (size_t)(i * 2654435761u) % 4096;
		errno = e;
		free(kept[k]);
		changed += errno != e;
		errno = e;
		kept[k] = i % 3 ? malloc((size_t)(i % 2000) + 1) : calloc(1, (size_t)(i % 300) + 1);
		changed += errno != e;
	}
	for (size_t k = 0; k < 4096; k++)
		free(kept[k]);
	printf("errno changed by %ld of 600000 calls\n", changed);
	return 0;
}
