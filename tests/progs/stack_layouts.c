/* stack_layouts: one allocation site reached at the same stack depth by call paths whose
 * frames differ in size (the return addresses lie at other places), taken in a random order:
 * PATHS paths, each a chain of two levels through functions with 16-, 48-, 80- or 112-byte
 * locals, chosen so that each level's frames add up to the same depth. The stack cache's
 * layout of a site's key (stacks.c) then mostly does not fit, and the cache must still serve
 * every repeated call from its entries, with the stacks an unwind gives. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 4000u

static volatile uintptr_t sink;

static __attribute__((noinline)) void leaf(unsigned n)
{
	char *p = malloc(16 + n % 64);
	if (!p)
		exit(1);
	p[0] = (char)n;
	sink += (uintptr_t)p[0];
	free(p);
}

/* A function with `bytes` of locals that calls next. Two levels whose locals add up to 128
 * bytes: 16 + 112, 48 + 80, 80 + 48, 112 + 16. */
#define FRAME(name, bytes, next)                              \
	static __attribute__((noinline)) void name(unsigned n) \
	{                                                      \
		volatile char pad[bytes];                      \
		memset((char *)pad, (int)n, sizeof(pad));     \
		next(n + pad[0]);                              \
		sink += pad[bytes - 1];                        \
	}
FRAME(inner16, 16, leaf)
FRAME(inner48, 48, leaf)
FRAME(inner80, 80, leaf)
FRAME(inner112, 112, leaf)
FRAME(outer112, 112, inner16)
FRAME(outer80, 80, inner48)
FRAME(outer48, 48, inner80)
FRAME(outer16, 16, inner112)

int main(void)
{
	static void (*const paths[4])(unsigned) = { outer112, outer80, outer48, outer16 };
	uint64_t x = 88172645463325252ull;
	for (unsigned i = 0; i < ROUNDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		paths[x % 4](i);
	}
	printf("%lu\n", (unsigned long)sink);
	return 0;
}
