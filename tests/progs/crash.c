/* Allocates N blocks (never freed), then ends as asked: exit, _exit, abort, segv, kill (SIGKILL
 * to itself), or hang (waits to be killed from outside). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 1000;
	for (int i = 0; i < n; i++) {
		volatile char *p = malloc(32);
		p[0] = 1;
	}
	if (!strcmp(how, "exit"))
		exit(3);
	if (!strcmp(how, "_exit"))
		_exit(4);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "segv"))
		*(volatile int *)(uintptr_t)8 = 1;
	if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(how, "hang")) {
		if (write(1, "ready\n", 6) != 6)  /* not stdio: its buffer would be one more block */
			return 1;
		for (;;)
			pause();
	}
	return 0;
}
