/* Interior pointers that memcheck's default heuristics take for start pointers: a block whose
 * first word holds the length of the rest and is pointed to just after it (length64, as
 * sqlite's allocator does), and one whose first word counts the elements of the rest
 * (newarray, as new[] does for objects with destructors). A plain interior pointer stays
 * possibly lost. Expected: still reachable 72 bytes in 2 blocks (40 + 32), possibly lost
 * 24 bytes in 1 block. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clear_stack.h"

char *volatile with_length, *volatile with_count, *volatile plain;

__attribute__((noinline)) static void build(void)
{
	uint64_t *a = malloc(40);
	a[0] = 32;                      /* the bytes after it */
	with_length = (char *)(a + 1);
	uint64_t *b = malloc(32);
	b[0] = 3;                       /* 3 elements of 8 bytes */
	with_count = (char *)(b + 1);
	uint64_t *c = malloc(24);
	memset(c, 0, 24);
	plain = (char *)c + 16;
}

int main(void)
{
	build();
	clear_stack();
	return 0;
}
