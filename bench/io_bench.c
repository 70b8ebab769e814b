/* I/O benchmark workload: many small reads and writes, for bench/io.sh.
 *
 *   io_bench read  FILE N   N 4 KiB read(2)s of FILE (cached), rewinding at its end
 *   io_bench write FILE N   N 512-byte write(2)s to FILE, rewinding every 2 MiB
 *   io_bench pipe  -    N   N 4 KiB write(2)+read(2) pairs through a pipe
 *
 * Prints the loop's own time (ns) on stdout. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[4096];

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: io_bench read|write|pipe FILE N\n");
		return 2;
	}
	long n = atol(argv[3]);
	uint64_t t0 = 0, t1;
	if (!strcmp(argv[1], "read")) {
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0)
			die("open");
		t0 = now();
		for (long i = 0; i < n; i++) {
			ssize_t r = read(fd, buf, sizeof(buf));
			if (r < 0)
				die("read");
			if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
				die("lseek");
		}
		t1 = now();
		close(fd);
	} else if (!strcmp(argv[1], "write")) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		memset(buf, 'w', sizeof(buf));
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (write(fd, buf, 512) != 512)
				die("write");
			if ((i & 4095) == 4095 && lseek(fd, 0, SEEK_SET) != 0)
				die("lseek");
		}
		t1 = now();
		close(fd);
	} else if (!strcmp(argv[1], "pipe")) {
		int p[2];
		if (pipe(p) < 0)
			die("pipe");
		memset(buf, 'p', sizeof(buf));
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (write(p[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
			    read(p[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				die("pipe");
		}
		t1 = now();
		close(p[0]);
		close(p[1]);
	} else {
		return 2;
	}
	printf("%llu\n", (unsigned long long)(t1 - t0));
	return 0;
}
