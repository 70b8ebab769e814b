/* Statically linked (see the Makefile): LD_PRELOAD cannot reach it, prof-run refuses it. */
#include <stdio.h>

int main(void)
{
	puts("static");
	return 0;
}
