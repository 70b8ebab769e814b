/* A program with an address-space limit (RLIMIT_AS, a shell's or a batch system's
 * `ulimit -v`): `as_limit LIMIT_MB ALLOC_MB` sets the limit, executes itself so that it holds
 * from the start (as it would for a job), then allocates ALLOC_MB in one block, touches it,
 * and prints "ok" (or "malloc failed", exit 1). Well below the limit, so it succeeds
 * unprofiled: it must under libprof too, whose own reservations must leave it room.
 * `as_limit LIMIT_MB ALLOC_MB now` lowers its own limit as it runs (setrlimit, as Python's
 * resource.setrlimit would), then allocates the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* RLIMIT_AS to mb MiB: 0, or -1. */
static int limit_to(const char *mb)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0)
		return -1;
	rl.rlim_cur = strtoull(mb, NULL, 10) << 20;
	return setrlimit(RLIMIT_AS, &rl);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[3], "now")) {
		if (limit_to(argv[1]) != 0)
			return 2;
	} else if (argc == 3) {
		if (limit_to(argv[1]) != 0)
			return 2;
		char *again[] = { argv[0], argv[1], argv[2], "run", NULL };
		execv("/proc/self/exe", again);
		return 2;
	}
	if (argc != 4)
		return 2;
	size_t bytes = strtoull(argv[2], NULL, 10) << 20;
	char *p = malloc(bytes);
	if (!p) {
		printf("malloc failed\n");
		return 1;
	}
	memset(p, 1, bytes);
	printf("ok\n");
	free(p);
	return 0;
}
