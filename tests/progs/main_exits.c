/* The main thread leaves by pthread_exit while a thread goes on: that thread writes 5 lines
 * to FILE, keeps a block of 1000 bytes in a global (still reachable), loses one of 500
 * (definitely lost) and returns, the last thread, which exits the process. Once the main
 * thread is gone, /proc/self's maps and descriptors read as empty: the leak scan and the
 * names of files must not come from there. Usage: main_exits FILE. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clear_stack.h"

char *kept;

__attribute__((noinline)) static void lose(void)
{
	char *volatile p = malloc(500);
	memset(p, 1, 500);
}

/* Whether the main thread has left (a zombie until the process ends). */
static int main_gone(void)
{
	char path[64], stat[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, stat, sizeof(stat) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 1;
	stat[n] = 0;
	const char *state = strrchr(stat, ')');
	return state && (state[2] == 'Z' || state[2] == 'X');
}

static void *go_on(void *path)
{
	for (int i = 0; i < 10000 && !main_gone(); i++)
		usleep(1000);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 5; i++)
		if (write(fd, "line\n", 5) != 5)
			exit(2);
	close(fd);
	kept = malloc(1000);
	memset(kept, 2, 1000);
	lose();
	clear_stack();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pthread_t t;
	if (pthread_create(&t, NULL, go_on, argv[1]) != 0)
		return 3;
	pthread_detach(t);
	pthread_exit(NULL);
}
