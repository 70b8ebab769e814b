/* Prints the descriptors it finds open above stderr and what open() gives it after some heap
 * work: the same with and without the profiler (whose own descriptors live above 1000). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	for (int i = 0; i < 100; i++)
		free(malloc(16));
	for (int fd = 3; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			printf("open: %d\n", fd);
	int fd = open("/dev/null", O_RDONLY);
	printf("first open: %d\n", fd);
	return 0;
}
