/* Two marks 200 ms apart: malloc(777), a 200 ms sleep, malloc(888). The trace clock must put
 * the two ALLOC records 200 ms apart, whatever clock source the writer reads. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void)
{
	void *a = malloc(777);
	struct timespec d = { 0, 200000000 };
	while (nanosleep(&d, &d) != 0)
		;
	void *b = malloc(888);
	printf("%d\n", a && b);
	free(a);
	free(b);
	return 0;
}
