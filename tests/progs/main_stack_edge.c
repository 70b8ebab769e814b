/* The first thread close to the end of its stack (RLIMIT_STACK, as `ulimit -s` sets it): it
 * recurses until about ROOM KiB are left above the limit, then allocates, writes a file and
 * frees there. Unprofiled this runs fine down to a few KiB; libprof's hooks must not take
 * more than what is left. Usage: main_stack_edge ROOM_KIB FILE; prints "ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>

extern void *__libc_stack_end;
static uintptr_t floor_at;  /* the lowest address the stack may reach, plus ROOM */
static const char *path;

__attribute__((noinline)) static int at_the_edge(void)
{
	char *volatile p = malloc(100);
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "deep %p\n", (void *)p);
	fclose(f);
	free(p);
	return 0;
}

__attribute__((noinline)) static int down(int n)
{
	volatile char pad[512];
	memset((char *)pad, n, sizeof(pad));
	if ((uintptr_t)__builtin_frame_address(0) < floor_at + sizeof(pad))
		return at_the_edge() + pad[1] - (char)n;
	return down(n + 1) + pad[2] - (char)n;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	if (argc < 3 || getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 2;
	path = argv[2];
	/* The limit counts from the stack's top: the page that ends with the file name. */
	uintptr_t top = ((uintptr_t)getauxval(AT_EXECFN) + 4095) & ~(uintptr_t)4095;
	if (top < (uintptr_t)__libc_stack_end)
		return 2;
	floor_at = top - rl.rlim_cur + (uintptr_t)atoi(argv[1]) * 1024;
	int rc = down(0);
	puts(rc ? "failed" : "ok");
	return rc;
}
