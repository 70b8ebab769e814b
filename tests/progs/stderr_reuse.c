/* A program whose descriptor 2 becomes a file of its own: with "reuse" it closes stderr and
 * opens FILE, which takes descriptor 2 (as a daemon's first open after closing 0-2 does);
 * with "keep" it leaves stderr alone and writes to FILE on another descriptor. Either way it
 * writes one line to FILE, then allocates and frees N blocks (enough to fill a small
 * PROF_MAX_SIZE, so that libprof has something to say while it runs). Prints "fd N" (FILE's
 * descriptor) and "done". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "reuse") && strcmp(argv[1], "keep"))) {
		fprintf(stderr, "usage: stderr_reuse reuse|keep FILE N\n");
		return 2;
	}
	if (!strcmp(argv[1], "reuse"))
		close(2);
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	const char line[] = "program data\n";
	if (write(fd, line, sizeof(line) - 1) != (ssize_t)(sizeof(line) - 1))
		return 1;
	long n = atol(argv[3]);
	for (long i = 0; i < n; i++)
		free(malloc(16 + (size_t)(i & 255)));
	printf("fd %d\ndone\n", fd);
	return 0;
}
