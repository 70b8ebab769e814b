/* Names with terminal escapes, control characters and markup (issue 16): a thread named
 * ESC "]0;x" BEL "\n<b>", and a file named ESC "[31m" "\n<i>&\"'.txt" in argv[1] (a
 * directory) that it writes; both end up in every output format of the analyzer. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *named(void *dir)
{
	prctl(PR_SET_NAME, "\033]0;x\007\n<b>", 0, 0, 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s/\033[31m\n<i>&\"'.txt", (const char *)dir);
	for (int i = 0; i < 50; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		char *p = malloc(100);
		if (fd >= 0) {
			if (write(fd, "x", 1) != 1)
				i = 50;
			close(fd);
		}
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pthread_create(&t, NULL, named, argc > 1 ? argv[1] : (char *)".");
	pthread_join(t, NULL);
	return 0;
}
