/* Two marks about 200 ms apart: malloc(777), a 200 ms sleep, malloc(888). Prints the time
 * between the two calls' returns as CLOCK_MONOTONIC measured it here ("between_ns=N"); the
 * trace clock must put the two ALLOC records as far apart, whatever clock source the writer
 * reads. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	void *a = malloc(777);
	long long t0 = now_ns();
	struct timespec d = { 0, 200000000 };
	while (nanosleep(&d, &d) != 0)
		;
	void *b = malloc(888);
	long long t1 = now_ns();
	printf("between_ns=%lld ok=%d\n", t1 - t0, a && b);
	free(a);
	free(b);
	return 0;
}
