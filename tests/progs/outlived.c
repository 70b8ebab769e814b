/* A program outlived by its helper: it forks a child that goes on alone for a moment (as a
 * browser's crash handler does), allocates, and exits 0; the parent exits 0 at once. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		setsid();
		usleep(300000);
		free(malloc(100));
		exit(0);
	}
	return 0;
}
