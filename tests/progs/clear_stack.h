/* For the leak test programs: zeroes the stack below main's frame before exit, so that no
 * stale pointer left there by the calls before keeps a block reachable in the leak scan. */
#ifndef TESTS_PROGS_CLEAR_STACK_H
#define TESTS_PROGS_CLEAR_STACK_H

#include <string.h>

__attribute__((noinline)) static void clear_stack(void)
{
	volatile char junk[16384];
	memset((char *)junk, 0, sizeof(junk));
}

#endif
