/* many_paths: allocations from PATHS distinct call paths (chains of 3 to 8 calls through four
 * functions, chosen by a fixed hash of the path), visited in a pseudo-random order ROUNDS times
 * each, as an allocation-heavy program with a few thousand stacks does. Built without frame
 * pointers (-O2) like most programs. The stack cache should serve nearly every allocation
 * after a path's first two. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PATHS 3000u
#define ROUNDS 40u

typedef uintptr_t (*step_fn)(unsigned path, int level, int depth);
static const step_fn steps[4];

static unsigned hash(unsigned a, unsigned b)
{
	unsigned h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu;
	return h ^ (h >> 15);
}

static __attribute__((noinline)) uintptr_t leaf(unsigned path)
{
	char *p = malloc(16 + path % 200);
	if (!p)
		exit(1);
	p[0] = (char)path;
	uintptr_t v = (uintptr_t)p[0];
	free(p);
	return v;
}

static inline uintptr_t next(unsigned path, int level, int depth)
{
	if (level >= depth)
		return leaf(path);
	return steps[hash(path, (unsigned)level) & 3](path, level + 1, depth);
}

#define STEP(name, k)                                                                     \
	static __attribute__((noinline, noclone)) uintptr_t name(unsigned path, int level, \
								 int depth)               \
	{                                                                                 \
		uintptr_t r = next(path, level, depth);                                   \
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
	uintptr_t sum = 0;
	uint64_t rng = 88172645463325252ull;
	for (unsigned i = 0; i < PATHS * ROUNDS; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		unsigned path = (unsigned)(rng % PATHS);
		sum += next(path, 0, 3 + (int)(hash(path, 99) % 6));
	}
	printf("%lu\n", (unsigned long)sum);
	return 0;
}
