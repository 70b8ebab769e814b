/* dlsym(RTLD_NEXT, ...) from the main program: the next definition after the program. Under
 * libprof (whose dlsym is a hook) that is libprof's malloc, not libc's: the hook must pass the
 * caller's return address on (a tail jump), or glibc would search after libprof instead. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
	Dl_info info;
	void *p = dlsym(RTLD_NEXT, "malloc");
	printf("%s\n", p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?");
	return 0;
}
