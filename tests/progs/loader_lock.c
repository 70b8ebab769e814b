/* One thread spends its CPU time inside dl_iterate_phdr callbacks (holding the loader's lock,
 * as an exception's unwinder or a dlclose does), while another allocates through many call
 * paths, so that libprof unwinds it, and libunwind looks up objects with dl_iterate_phdr.
 * CPU samples of the first thread land inside the callbacks: unwinding there would wait for
 * libunwind's lock, held by the second thread, which waits for the loader's lock. Prints one
 * line and exits 0 when nothing waits for ever. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PATHS 4000u

static volatile int done;

static int burn(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	volatile uint64_t *sum = arg;
	for (int i = 0; i < 200000; i++)
		*sum += (uint64_t)i * 2654435761u;
	return 1;
}

static void *walker(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	while (!done)
		dl_iterate_phdr(burn, &sum);
	return (void *)(uintptr_t)sum;
}

typedef uintptr_t (*step_fn)(unsigned path, int level);
static const step_fn steps[4];

static __attribute__((noinline)) uintptr_t leaf(unsigned path)
{
	char *p = malloc(16 + path % 100);
	if (!p)
		exit(1);
	p[0] = (char)path;
	uintptr_t v = (uintptr_t)p[0];
	free(p);
	return v;
}

static inline uintptr_t next(unsigned path, int level)
{
	if (level >= 6)
		return leaf(path);
	return steps[(path >> (2 * level)) & 3](path, level + 1);
}

#define STEP(name, k)                                                                     \
	static __attribute__((noinline, noclone)) uintptr_t name(unsigned path, int level) \
	{                                                                                 \
		uintptr_t r = next(path, level);                                          \
		__asm__ volatile("" : "+r"(r));                                           \
		return r * (k) + (uintptr_t)level;                                        \
	}
STEP(step_a, 3)
STEP(step_b, 5)
STEP(step_c, 7)
STEP(step_d, 11)
static const step_fn steps[4] = { step_a, step_b, step_c, step_d };

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, walker, NULL) != 0)
		return 1;
	uintptr_t sum = 0;
	for (int round = 0; round < 3; round++)
		for (unsigned path = 0; path < PATHS; path++)
			sum += next(path * 2654435761u, 0);
	done = 1;
	pthread_join(t, NULL);
	printf("loader_lock %lu\n", (unsigned long)sum);
	return 0;
}
