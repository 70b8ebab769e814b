/* loader_walks MODE [MS]: threads that take the loader's lock again and again, for MS
 * milliseconds (default 1000), then print "walks N" (N > 0).
 *
 * `loader_walks walks`: two threads call dl_iterate_phdr in a loop with a callback that does
 * nothing, so that much of their time goes into taking and giving back the loader's lock: a
 * CPU sample that lands between pthread_mutex_lock winning the lock word and setting its
 * owner must not unwind (libunwind calls dl_iterate_phdr, which would wait for the lock the
 * interrupted thread holds itself).
 * `loader_walks allocs`: one thread allocates inside its dl_iterate_phdr callback, from call
 * paths it has not taken before, while another allocates from new paths outside: the first
 * thread's hook must not unwind (libunwind would wait for its own lock, held by the other
 * thread, which waits for the loader's lock). */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int stop;
static atomic_long walks;

/* A block allocated depth calls down: each depth a call path of its own. */
static __attribute__((noinline)) void *alloc_at(int depth, size_t size)
{
	if (depth == 0)
		return malloc(size);
	void *p = alloc_at(depth - 1, size);
	__asm__ volatile("" ::: "memory");  /* no tail call: each level keeps its frame */
	return p;
}

static int nothing(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	return 0;
}

static int allocating(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	unsigned *n = arg;
	free(alloc_at((int)(++*n % 200), 32));
	return 0;
}

static void *walker(void *arg)
{
	int (*cb)(struct dl_phdr_info *, size_t, void *) = arg;
	unsigned n = 0;
	while (!atomic_load(&stop)) {
		dl_iterate_phdr(cb, &n);
		atomic_fetch_add(&walks, 1);
	}
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	for (unsigned n = 0; !atomic_load(&stop); n++)
		free(alloc_at((int)(n % 300) + 1, 16));
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "walks") && strcmp(argv[1], "allocs"))) {
		fprintf(stderr, "usage: loader_walks walks|allocs [MS]\n");
		return 2;
	}
	long ms = argc > 2 ? atol(argv[2]) : 1000;
	int allocs = !strcmp(argv[1], "allocs");
	pthread_t t[2];
	pthread_create(&t[0], NULL, walker, allocs ? (void *)allocating : (void *)nothing);
	pthread_create(&t[1], NULL, allocs ? allocator : walker, (void *)nothing);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("walks %ld\n", atomic_load(&walks));
	return 0;
}
