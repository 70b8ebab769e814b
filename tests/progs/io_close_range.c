/* io_close_range DIR: descriptors closed by close_range() and closefrom(), then their numbers
 * taken again by calls that name nothing (eventfd), whose I/O must not count as the closed
 * files'.
 *
 *   DIR/a.txt, DIR/b.txt   opened, 1 and 2 bytes written, closed by close_range(first, ~0U)
 *   an eventfd             takes a.txt's number: 8 bytes written, 8 read
 *   DIR/c.txt              opened, marked close-on-exec by close_range(CLOSE_RANGE_CLOEXEC)
 *                          (still open): 3 bytes written, then closed by closefrom()
 *   a second eventfd       takes c.txt's number: 8 bytes written
 * Prints the descriptor numbers ("a 3 b 4 event 3 c 4 event 4"); exits 1 on any failure. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int open_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: io_close_range DIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	int a = open_in(argv[1], "a.txt"), b = open_in(argv[1], "b.txt");
	if (a < 0 || b < 0 || write(a, "1", 1) != 1 || write(b, "22", 2) != 2)
		return 1;
	int first = a < b ? a : b;
	if (close_range((unsigned)first, ~0u, 0) != 0)
		return 1;
	uint64_t v = 1;
	int e = eventfd(0, 0);
	if (e < 0 || write(e, &v, 8) != 8 || read(e, &v, 8) != 8)
		return 1;
	int c = open_in(argv[1], "c.txt");
	if (c < 0 || close_range((unsigned)c, (unsigned)c, CLOSE_RANGE_CLOEXEC) != 0 ||
	    write(c, "333", 3) != 3)
		return 1;
	closefrom(c);
	int e2 = eventfd(0, 0);
	if (e2 < 0 || write(e2, &v, 8) != 8)
		return 1;
	printf("a %d b %d event %d c %d event %d\n", a, b, e, c, e2);
	return 0;
}
