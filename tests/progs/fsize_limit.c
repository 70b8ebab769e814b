/* A program with a file size limit (RLIMIT_FSIZE, a shell's `ulimit -f`) far below what a
 * trace takes: `fsize_limit BYTES now N` lowers the limit to BYTES while it runs, `fsize_limit
 * BYTES exec N` lowers it and executes itself (the limit then holds from the start); either
 * way it then allocates and frees N blocks and prints "done". Unprofiled it runs to the end:
 * so it must under libprof, which is not to grow its trace past the limit (SIGXFSZ). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 2;
	rl.rlim_cur = strtoull(argv[1], NULL, 10);
	if (strcmp(argv[2], "run") && setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 2;
	if (!strcmp(argv[2], "exec")) {
		char *again[] = { argv[0], argv[1], "run", argv[3], NULL };
		execv("/proc/self/exe", again);
		return 2;
	}
	long n = atol(argv[3]);
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc((size_t)(i % 100) + 1);
		free(p);
	}
	printf("done\n");
	return 0;
}
