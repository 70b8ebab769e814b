/* Takes libprof's trace descriptor from it: finds the descriptor open on a *.trace file,
 * puts FILE (1 MiB of 0xab bytes, made here) in its place with dup2, then allocates N
 * blocks (the trace grows and takes new runs meanwhile), and checks that FILE still holds
 * exactly what it wrote. Prints "stolen" if there was a trace descriptor to take, then
 * "intact" or "changed"; exits 1 if changed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (1 << 20)

static int trace_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	while (d && (e = readdir(d))) {
		char link[300], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 6 && (target[n] = 0, !strcmp(target + n - 6, ".trace")))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	static unsigned char buf[SIZE];
	memset(buf, 0xab, sizeof(buf));
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return 2;
	int victim = trace_fd();
	if (victim >= 0 && dup2(fd, victim) == victim)
		printf("stolen\n");
	long n = atol(argv[2]);
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc((size_t)(i % 128) + 1);
		free(p);
	}
	static unsigned char back[SIZE];
	int ok = pread(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back) && lseek(fd, 0, SEEK_END) == SIZE &&
		 !memcmp(buf, back, sizeof(buf));
	printf("%s\n", ok ? "intact" : "changed");
	return ok ? 0 : 1;
}
