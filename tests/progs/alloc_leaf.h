/* For the stack cache's test programs: the one call site that allocates, at the end of every
 * call path they take. */
#ifndef TESTS_PROGS_ALLOC_LEAF_H
#define TESTS_PROGS_ALLOC_LEAF_H

#include <stdint.h>
#include <stdlib.h>

/* Allocates 16 + k % spread bytes, touches and frees them; returns what it wrote. */
static __attribute__((noinline)) uintptr_t leaf(unsigned k, unsigned spread)
{
	char *p = malloc(16 + k % spread);
	if (!p)
		exit(1);
	p[0] = (char)k;
	uintptr_t v = (uintptr_t)p[0];
	free(p);
	return v;
}

#endif
