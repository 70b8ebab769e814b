/* many_sites: allocations through 2,048 functions, each its own call site, reached from four
 * callers in a pseudo-random order, many times each: more code addresses than the stack
 * cache's first table of frame rules holds, so that it grows (rules_grow() in
 * preload/stacks.c) while the paths are recorded by those rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_leaf.h"


#define F(n)                                                                          \
	static __attribute__((noinline, noclone)) uintptr_t f##n(unsigned k)           \
	{                                                                             \
		uintptr_t r = leaf(k + n, 64);                                         \
		__asm__ volatile("" : "+r"(r));                                       \
		return r + n;                                                         \
	}
#define F4(n) F(n##0) F(n##1) F(n##2) F(n##3)
#define F16(n) F4(n##0) F4(n##1) F4(n##2) F4(n##3)
#define F64(n) F16(n##0) F16(n##1) F16(n##2) F16(n##3)
#define F256(n) F64(n##0) F64(n##1) F64(n##2) F64(n##3)
F256(10) F256(11) F256(12) F256(13) F256(20) F256(21) F256(22) F256(23)

#define P(n) f##n,
#define P4(n) P(n##0) P(n##1) P(n##2) P(n##3)
#define P16(n) P4(n##0) P4(n##1) P4(n##2) P4(n##3)
#define P64(n) P16(n##0) P16(n##1) P16(n##2) P16(n##3)
#define P256(n) P64(n##0) P64(n##1) P64(n##2) P64(n##3)
typedef uintptr_t (*fn)(unsigned);
static const fn fns[] = { P256(10) P256(11) P256(12) P256(13) P256(20) P256(21) P256(22) P256(23) };
#define NFNS (sizeof(fns) / sizeof(fns[0]))

#define G(m)                                                                          \
	static __attribute__((noinline, noclone)) uintptr_t g##m(unsigned i)           \
	{                                                                             \
		uintptr_t r = fns[i % NFNS](i);                                        \
		__asm__ volatile("" : "+r"(r));                                       \
		return r * (m + 3);                                                   \
	}
G(0) G(1) G(2) G(3)
static uintptr_t (*const gs[4])(unsigned) = { g0, g1, g2, g3 };

int main(void)
{
	uintptr_t sum = 0;
	uint64_t rng = 88172645463325252ull;
	for (unsigned i = 0; i < 20 * NFNS * 4; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		unsigned path = (unsigned)(rng % (NFNS * 4));
		sum += gs[path % 4](path / 4);
	}
	printf("%lu\n", (unsigned long)sum);
	return 0;
}
