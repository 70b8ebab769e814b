/* Threads with the smallest stack a program may give one (PTHREAD_STACK_MIN, 16 KiB, of which
 * TLS takes about half, libprof's included): each allocates and frees, takes a mutex, and
 * reads and writes FILE through stdio and descriptors. With "exit", one more such thread
 * then calls exit() from its small stack while a block it allocated is held by its stack
 * alone (a reachable block, as memcheck finds it). libprof must never overflow such a stack:
 * there its hooks record the call site alone as a stack and leave I/O unrecorded, and the
 * exit's work runs on a stack of its own.
 *   small_stacks FILE [exit]
 * Output (write(2): no stdout buffer left at exit): "ok", or "exit" from the exiting thread. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 1000
#define FILE_ROUNDS 50

static const char *path;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		exit(3);
}

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		char *p = malloc(16 + (size_t)(i % 200));
		if (!p)
			return NULL;
		p[0] = (char)i;
		pthread_mutex_lock(&lock);
		total += p[0];
		pthread_mutex_unlock(&lock);
		free(p);
	}
	for (int i = 0; i < FILE_ROUNDS; i++) {
		FILE *f = fopen(path, "a");
		if (!f || fprintf(f, "%d\n", i) < 0 || fclose(f) != 0)
			return NULL;
		char buf[64];
		int fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, buf, sizeof(buf)) < 0 || close(fd) != 0)
			return NULL;
	}
	return arg ? arg : (void *)1;
}

static void *exit_here(void *arg)
{
	(void)arg;
	void *volatile held = malloc(4000);  /* only this stack holds it */
	say(held ? "exit\n" : "no memory\n");
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (argc == 3 && strcmp(argv[2], "exit")) || argc > 3) {
		say("usage: small_stacks FILE [exit]\n");
		return 2;
	}
	path = argv[1];
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) != 0)
		return 1;
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], &attr, work, NULL) != 0)
			return 1;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		if (pthread_join(t[i], &r) != 0 || !r)
			return 1;
	}
	if (argc == 3) {
		pthread_t last;
		if (pthread_create(&last, &attr, exit_here, NULL) != 0)
			return 1;
		pthread_join(last, NULL);
		return 1;  /* not reached: the thread exits */
	}
	say("ok\n");
	return 0;
}
