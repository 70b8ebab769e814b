/* leak_early: every block held from the program's data, which the exit's leak scan reads
 * first, and 32 MiB of written memory (an mmap'd buffer of numbers) that it need not read
 * once every block is known reachable.
 *
 * 64 blocks of 48 bytes are held from a static array; each holds the only pointer to one of
 * 64 blocks of 24 bytes (reachable through a block, not from the roots themselves). With
 * "lose", one more block of 100 bytes is pointed to by nothing: definitely lost, and then the
 * scan must read everything. With "lose_last" that block is the last one allocated, and at
 * exit the chunk after it is the heap's top (stdout's buffer, freed by libc, merged into it),
 * whose address glibc's arena holds in libc's data, a root: a word that falls in the block's
 * last 8 bytes, which memcheck never sees. Still definitely lost. Prints "buffer 0xADDR". */
#include "clear_stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCKS 64
#define BUFFER (32u << 20)

static void **held[BLOCKS];

__attribute__((noinline)) static void lose(void)
{
	void *volatile lost = malloc(100);
	memset(lost, 2, 100);
	lost = NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "lose"))
		lose();  /* first: the heap's top chunk, whose address glibc keeps, is not next to it */
	for (int i = 0; i < BLOCKS; i++) {
		held[i] = malloc(48);
		memset(held[i], 0, 48);
		held[i][0] = malloc(24);
		memset(held[i][0], 1, 24);
	}
	if (argc > 1 && !strcmp(argv[1], "lose_last"))
		lose();  /* last: glibc's arena keeps the address of the chunk after it */

	unsigned char *buf = mmap(NULL, BUFFER, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 0x5a, BUFFER);  /* in memory: a scan that reads it reads all 32 MiB */
	printf("buffer %p\n", (void *)buf);
	fflush(stdout);
	clear_stack();
	return 0;
}
