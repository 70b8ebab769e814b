/* CPU time spent mostly inside libprof's hooks: churn() allocates and frees in a loop, and
 * every call is recorded. Samples that land in the hooks must count for churn(), never show
 * libprof's own functions. Argument: iterations (default 3000000). */
#include <stdlib.h>

static void *volatile keep;

__attribute__((noinline)) void churn(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(32 + (size_t)(i & 255));
		keep = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	churn(argc > 1 ? atol(argv[1]) : 3000000);
	return 0;
}
