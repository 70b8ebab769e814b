/* io_paths: one read helper called from two functions at the same stack depth, in turns, so
 * that every read() is made from one call site with one stack pointer by two call paths.
 *
 *   io_paths DIR    writes DIR/data (1000 bytes) and reads it with pread, 100 bytes a call:
 *                   by_alpha 300 calls and by_beta 500 calls a round, 6 rounds.
 * Output: "alpha BYTES\nbeta BYTES\n", the bytes each path read. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[100];

__attribute__((noinline)) static long read_some(int fd, long at)
{
	return pread(fd, buf, sizeof(buf), at % 1000);
}

/* Two loops alike but for their counts, so that their frames are the same size (and not
 * folded into one function: the counts differ). */
__attribute__((noinline)) static long by_alpha(int fd)
{
	long got = 0;
	for (long i = 0; i < 300; i++)
		got += read_some(fd, i * 7);
	return got;
}

__attribute__((noinline)) static long by_beta(int fd)
{
	long got = 0;
	for (long i = 0; i < 500; i++)
		got += read_some(fd, i * 11);
	return got;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: io_paths DIR\n");
		return 2;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/data", argv[1]);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char block[1000];
	for (int i = 0; i < 1000; i++)
		block[i] = (char)('a' + i % 26);
	if (fd < 0 || write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
		perror(path);
		return 1;
	}
	long alpha = 0, beta = 0;
	for (int round = 0; round < 6; round++) {
		alpha += by_alpha(fd);
		beta += by_beta(fd);
	}
	close(fd);
	printf("alpha %ld\nbeta %ld\n", alpha, beta);
	return 0;
}
