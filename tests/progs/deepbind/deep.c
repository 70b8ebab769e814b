/* A library that tests/progs/deepbind.c loads with RTLD_DEEPBIND: its malloc and free bind to
 * libc's, past libprof's hooks, unless libprof redirects them. */
#include <stdlib.h>
#include <string.h>

char *deep_dup(const char *s)
{
	return strdup(s);  /* malloc inside libc: always caught */
}

void *deep_alloc(size_t n)
{
	return malloc(n);
}

void deep_free(void *p)
{
	free(p);
}
