/* io_short DIR: fd calls whose counts and bytes are known beforehand, in the patterns that
 * decide whether an IO_CALL record is short (shared/prof_short.h): runs of calls on one
 * descriptor (short after the first), calls alternating between two descriptors (ordinary),
 * failures on one descriptor, and a pause longer than a short record's time delta.
 *
 *   DIR/a.dat  200 writes of 1000 bytes; 2 writes of 1 byte around a 20 ms pause; 100
 *              pwrites of 10 bytes alternating with b's writes; then read back whole, 512
 *              bytes a read, to the end of file (one read returns 0)
 *   DIR/b.dat  100 writes of 7 bytes (alternating with a's pwrites); 5 reads that fail
 *              (EBADF: opened write-only)
 * Prints nothing; exits 1 on any unexpected result. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
	perror(what);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: io_short DIR\n");
		return 2;
	}
	char pa[PATH_MAX], pb[PATH_MAX];
	snprintf(pa, sizeof(pa), "%s/a.dat", argv[1]);
	snprintf(pb, sizeof(pb), "%s/b.dat", argv[1]);
	int a = open(pa, O_RDWR | O_CREAT | O_TRUNC, 0644);
	int b = open(pb, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (a < 0 || b < 0)
		return fail("open");
	static char buf[1000];
	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < 200; i++)
		if (write(a, buf, 1000) != 1000)
			return fail("write a");
	if (write(a, "1", 1) != 1)
		return fail("write a");
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	if (write(a, "2", 1) != 1)
		return fail("write a");
	for (int i = 0; i < 100; i++)
		if (pwrite(a, buf, 10, (off_t)i * 10) != 10 || write(b, buf, 7) != 7)
			return fail("pwrite a / write b");
	for (int i = 0; i < 5; i++)
		if (read(b, buf, sizeof(buf)) != -1 || errno != EBADF)
			return fail("read b");
	if (lseek(a, 0, SEEK_SET) != 0)
		return fail("lseek");
	long total = 0;
	ssize_t n;
	while ((n = read(a, buf, 512)) > 0)
		total += n;
	if (n < 0 || total != 200 * 1000 + 2)
		return fail("read a");
	close(a);
	close(b);
	return 0;
}
