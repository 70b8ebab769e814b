/* Every allocation function, stdio, strdup, and leaks at marked lines (the tests find the
 * LEAK-* markers to know which line a leak must point to). Deterministic. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[8];

__attribute__((noinline)) static void leak_small(void)
{
	keep[0] = malloc(48); /* LEAK-A */
}

__attribute__((noinline)) static void leak_array(int n)
{
	for (int i = 0; i < n; i++)
		keep[1 + i] = calloc(25, 4); /* LEAK-B */
}

int main(void)
{
	char *s = malloc(10);
	s = realloc(s, 100);          /* moves or grows: one alloc, one free */
	s = realloc(s, 0);            /* frees, returns NULL */
	void *a = realloc(NULL, 33);  /* an allocation */
	void *b = reallocarray(NULL, 10, 4);
	b = reallocarray(b, 20, 4);
	void *c;
	if (posix_memalign(&c, 64, 200) != 0)
		return 1;
	void *d = aligned_alloc(64, 128);
	void *e = memalign(32, 10);
	void *f = valloc(10);
	char *g = strdup("hello, profiler");
	void *z = malloc(0);
	free(NULL);
	printf("%s %p\n", g, (void *)s);
	free(a); free(b); free(c); free(d); free(e); free(f); free(g); free(z);
	for (int i = 0; i < 100; i++) {
		void *t = malloc((size_t)i * 8 + 1);
		free(t);
	}
	leak_small();
	leak_array(3);
	return 0;
}
