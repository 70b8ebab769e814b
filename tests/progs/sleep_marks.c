/* Two marks about 200 ms apart: malloc(777), a 200 ms sleep, malloc(888). Prints the time
 * between the two calls' returns as CLOCK_MONOTONIC measured it here ("between_ns=N"); the
 * trace clock must put the two ALLOC records as far apart, whatever clock source the writer
 * reads. The marks are made twice before, without the sleep: the profiler's work after its
 * timestamp (unwinding a call path it has not seen, which took milliseconds on a loaded
 * machine) is then short for the measured pair, and the program's interval, from return to
 * return, stays that of the records. */
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
	long long t0 = 0, t1 = 0;
	int ok = 1;
	for (int round = 0; round < 3; round++) {
		void *a = malloc(777);
		t0 = now_ns();
		struct timespec d = { 0, round == 2 ? 200000000 : 0 };
		while (nanosleep(&d, &d) != 0)
			;
		void *b = malloc(888);
		t1 = now_ns();
		ok &= a && b;
		free(a);
		free(b);
	}
	printf("between_ns=%lld ok=%d\n", t1 - t0, ok);
	return 0;
}
