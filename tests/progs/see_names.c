/* Names that are markup: a function whose symbol is "<script>alert('x')&amp;</script>" and a
 * thread named <script>"&'; it allocates, spins, waits on a contended lock and writes a file,
 * so every section of a report carries them (each round spins long enough that CPU samples
 * land in it on a fast machine too). Built without -g: names come from the symbol
 * table. argv[1]: how many rounds (default 200). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

__attribute__((noinline)) void evil(int rounds) __asm__("\"<script>alert('x')&amp;</script>\"");
__attribute__((noinline)) void evil(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		volatile char *p = malloc(64 + (size_t)i);
		p[0] = 1;
		if (i % 2)
			free((void *)p);
		pthread_mutex_lock(&lock);
		for (int k = 0; k < 250000; k++)
			sink += (unsigned long)k * (unsigned long)i;
		pthread_mutex_unlock(&lock);
	}
}

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), "<script>\"&'x");
	evil(*(int *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	pthread_t t;
	/* The worker's first round waits for the lock: contention whatever the machine's load. */
	pthread_mutex_lock(&lock);
	pthread_create(&t, NULL, worker, &rounds);
	usleep(50000);
	pthread_mutex_unlock(&lock);
	evil(rounds);
	pthread_join(t, NULL);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/see_names.%d", (int)getpid());
	FILE *f = fopen(path, "w");
	if (f) {
		for (int i = 0; i < 100; i++)
			fprintf(f, "line %d\n", i);
		fclose(f);
		unlink(path);
	}
	return 0;
}
