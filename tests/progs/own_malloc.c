/* A program with an allocator of its own, defined in the executable (as a statically linked
 * jemalloc or tcmalloc is): it comes before libprof's malloc, and never passes calls on.
 * Allocates 1000 blocks and prints "done". */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static char arena[1 << 24] __attribute__((aligned(16)));
static size_t used;

void *malloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(arena) - used)
		return NULL;
	void *p = arena + used;
	used += n;
	return p;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t n, size_t size)
{
	void *p = n && size > sizeof(arena) / n ? NULL : malloc(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p = malloc(n);
	if (p && old)
		memcpy(p, old, n);  /* old blocks lie below: reading n bytes stays in the arena */
	return p;
}

int main(void)
{
	for (int i = 0; i < 1000; i++) {
		char *volatile p = malloc(100);
		free(p);
	}
	puts("done");
	return 0;
}
