/* LD_PRELOAD shim for tests/fuzz/failalloc.sh: the FAILALLOC_AT-th call (from 1) of malloc,
 * calloc, realloc (and everything above them: strdup, fopen ...) fails with ENOMEM, and so
 * does every later one when FAILALLOC_ALL=1; the others go to libc. FAILALLOC_AT=0: none
 * fails, and the number of calls is written to stderr at exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
static long at = -1, n, all;

/* Says which library's allocation failed: a crash after a failure inside elfutils (libdw,
 * libelf) is elfutils' own (it asserts or dereferences NULL), not the analyzer's. */
static void tell(const void *caller)
{
	Dl_info info;
	if (dladdr(caller, &info) && info.dli_fname && (strstr(info.dli_fname, "libdw") || strstr(info.dli_fname, "libelf")))
		fputs("failalloc: the failed allocation was elfutils'\n", stderr);
}

static int fail(const void *caller)
{
	if (at < 0) {
		const char *s = getenv("FAILALLOC_AT"), *a = getenv("FAILALLOC_ALL");
		at = s ? atol(s) : 0;
		all = a && *a == '1';
	}
	n++;
	if (at > 0 && (n == at || (all && n > at))) {
		tell(caller);
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

#define CALLER __builtin_return_address(0)
void *malloc(size_t size) { return fail(CALLER) ? NULL : __libc_malloc(size); }
void *calloc(size_t k, size_t size) { return fail(CALLER) ? NULL : __libc_calloc(k, size); }
void *realloc(void *p, size_t size) { return fail(CALLER) ? NULL : __libc_realloc(p, size); }

__attribute__((destructor)) static void count(void)
{
	if (at == 0)
		fprintf(stderr, "failalloc: %ld allocations\n", n);
}
