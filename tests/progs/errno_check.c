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
	return 0;
}
