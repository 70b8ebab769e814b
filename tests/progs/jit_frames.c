/* jit_frames: allocations made through frames of generated code, as a JIT runtime's are
 * (node, java, Chromium). Copies of a function written at run time into anonymous executable
 * memory, one a page, with no unwind info, keep the frame pointer chain (push rbp;
 * mov rbp, rsp) and call back into C; C frames and generated ones alternate, DEPTH of each,
 * through a different copy each time. An unwind finds no unwind info for those frames and
 * goes on through their frame pointers, back to main.
 *
 *	jit_frames [CALLS [DEPTH]]   (default 20000 and 8) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STUBS 64

typedef void *(*callback)(size_t);
typedef void *(*jit_fn)(callback, size_t);

static char *stubs;  /* STUBS pages, a copy of the code at the start of each */

/* arg: depth left in its low byte, the next copy above it. */
__attribute__((noinline)) static void *through_jit(size_t arg)
{
	size_t depth = arg & 0xff, k = arg >> 8;
	if (depth == 0) {
		void *p = malloc(24 + k % 8 * 8);
		__asm__ volatile("" ::: "memory");
		return p;
	}
	jit_fn jit = (jit_fn)(void *)(stubs + k % STUBS * 4096);
	void *p = jit(through_jit, (k * 7 + 3) << 8 | (depth - 1));
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 20000;
	size_t depth = argc > 2 ? (size_t)atol(argv[2]) & 0xff : 8;
#if defined(__x86_64__)
	static const unsigned char code[] = {
		0x55,                   /* push %rbp */
		0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
		0x48, 0x89, 0xf8,       /* mov %rdi,%rax: the callback */
		0x48, 0x89, 0xf7,       /* mov %rsi,%rdi: its argument */
		0xff, 0xd0,             /* call *%rax */
		0x5d,                   /* pop %rbp */
		0xc3,                   /* ret */
	};
	stubs = mmap(NULL, STUBS * 4096ul, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stubs == MAP_FAILED)
		return 1;
	for (int k = 0; k < STUBS; k++)
		memcpy(stubs + k * 4096ul, code, sizeof(code));
	if (mprotect(stubs, STUBS * 4096ul, PROT_READ | PROT_EXEC) != 0)
		return 1;
	for (long i = 0; i < calls; i++)
		free(through_jit((size_t)i << 8 | depth));
	printf("%ld allocations through %zu frames of generated code\n", calls, depth);
	return 0;
#else
	(void)calls;
	(void)depth;
	(void)through_jit;
	printf("x86-64 only\n");
	return 0;
#endif
}
