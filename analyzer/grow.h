/* Growable arrays: GROW(arr, n, cap) makes room for element n of arr (capacity cap, a size_t),
 * doubling it from 16. 0, or -1 when out of memory (arr and cap untouched). */
#ifndef PROF_GROW_H
#define PROF_GROW_H

#include <stdlib.h>

#define GROW(arr, n, cap)                                                           \
	((n) < (cap) ? 0 : grow_array((void **)&(arr), &(cap), sizeof(*(arr))))

static inline int grow_array(void **arr, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

#endif
