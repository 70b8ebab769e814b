/* leak_cycle: a lost structure whose blocks point both ways (an owner and its part, as a
 * connection and its statement), where the part, allocated after the owner, got a lower
 * address (the chunk of a block freed just before). memcheck, whose allocator hands out
 * blocks in order, reports the owner (OWNER bytes) definitely lost and the part (PART bytes)
 * indirectly: a scan that took the lowest address as the structure's head said the
 * opposite. */
#include <stdlib.h>
#include <string.h>

#include "clear_stack.h"

#define OWNER 848
#define PART 80

struct part {
	void *owner;
	char pad[PART - sizeof(void *)];
};

void *volatile head;

__attribute__((noinline)) static void build(void)
{
	void *filler = malloc(PART);  /* the chunk the part will get back */
	void **owner = malloc(OWNER);
	memset(owner, 0, OWNER);
	free(filler);
	struct part *p = malloc(sizeof(*p));
	memset(p, 0, sizeof(*p));
	p->owner = owner;
	owner[0] = p;
	head = owner;
	head = NULL;  /* dropped */
}

int main(void)
{
	build();
	clear_stack();
	return 0;
}
