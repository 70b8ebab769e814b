/* io_paths: one I/O helper called from two functions at the same stack depth, in turns, so
 * that every call is made from one call site with one stack pointer by two call paths.
 *
 *   io_paths DIR         writes DIR/data (1000 bytes) and reads it with pread, 100 bytes a
 *                        call: by_alpha 300 calls and by_beta 500 calls a round, 6 rounds.
 *   io_paths DIR stdio   the same rounds, each call an fwrite of 100 bytes to DIR/out, a fully
 *                        buffered stream (calls that only fill its buffer), then 200 turns
 *                        of one call each.
 * Output: "alpha BYTES\nbeta BYTES\n", the bytes each path moved. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[100];
static FILE *out;  /* stdio mode */

__attribute__((noinline)) static long read_some(int fd, long at)
{
	if (out)
		return (long)fwrite(buf, 1, (size_t)(at % 100) + 1, out);
	return pread(fd, buf, sizeof(buf), at % 1000);
}

/* Two loops alike but for their steps, so that their frames are the same size (and not
 * folded into one function). */
__attribute__((noinline)) static long by_alpha(int fd, long from, long calls)
{
	long got = 0;
	for (long i = from; i < from + calls; i++)
		got += read_some(fd, i * 7);
	return got;
}

__attribute__((noinline)) static long by_beta(int fd, long from, long calls)
{
	long got = 0;
	for (long i = from; i < from + calls; i++)
		got += read_some(fd, i * 11);
	return got;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "stdio"))) {
		fprintf(stderr, "usage: io_paths DIR [stdio]\n");
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
	if (argc == 3) {
		snprintf(path, sizeof(path), "%s/out", argv[1]);
		if (!(out = fopen(path, "w")) || setvbuf(out, NULL, _IOFBF, 1 << 16)) {
			perror(path);
			return 1;
		}
	}
	long alpha = 0, beta = 0;
	for (int round = 0; round < 6; round++) {
		alpha += by_alpha(fd, 0, 300);
		beta += by_beta(fd, 0, 500);
	}
	if (out) {
		for (int i = 0; i < 200; i++) {
			alpha += by_alpha(fd, i, 1);
			beta += by_beta(fd, i, 1);
		}
		if (fclose(out)) {
			perror("fclose");
			return 1;
		}
	}
	close(fd);
	printf("alpha %ld\nbeta %ld\n", alpha, beta);
	return 0;
}
