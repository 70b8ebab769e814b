/* Blocks in each of memcheck's leak classes, built the way valgrind's own leak tests build
 * them (leak-cases: start and interior pointers from roots and from other blocks; leak-cycle:
 * lost cycles; leak-tree: a lost tree). Expected at exit (64-bit):
 *   definitely lost  94 bytes in 3 blocks  (a dropped block, the tree's root, one of a cycle)
 *   indirectly lost 224 bytes in 7 blocks  (the tree's 6 other nodes, the cycle's other one)
 *   possibly lost 12372 bytes in 4 blocks  (interior pointers from roots, one into the
 *                                           third page of a 12 KiB block, and what the
 *                                           block the other points into points to)
 *   still reachable  74 bytes in 3 blocks  (start pointers from roots, and a chain)
 * The stack is cleared before exit so that no stale pointer in it keeps anything alive. */
#include <stdlib.h>
#include <string.h>

#include "clear_stack.h"

struct node {
	struct node *l, *r;
	char pad[16];
};

void *volatile root_start;
char *volatile root_interior;
struct node *volatile chain;
char *volatile via_interior;
char *volatile far_interior;
void *volatile sink;

__attribute__((noinline)) static struct node *mk(struct node *l, struct node *r)
{
	struct node *n = malloc(sizeof(*n));
	n->l = l;
	n->r = r;
	memset(n->pad, 0, sizeof(n->pad));
	return n;
}

__attribute__((noinline)) static void build(void)
{
	root_start = malloc(10);
	root_interior = (char *)malloc(20) + 4;
	sink = malloc(30);
	sink = NULL;
	chain = mk(mk(NULL, NULL), NULL);
	via_interior = (char *)mk(mk(NULL, NULL), NULL) + 8;
	far_interior = (char *)calloc(1, 12288) + 9000;
	sink = mk(mk(mk(NULL, NULL), mk(NULL, NULL)), mk(mk(NULL, NULL), mk(NULL, NULL)));
	sink = NULL;
	struct node *a = mk(NULL, NULL);
	a->l = mk(a, NULL);
	sink = NULL;
}

int main(void)
{
	build();
	clear_stack();
	return 0;
}
