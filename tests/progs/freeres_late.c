/* freeres_late [nofork]: forks once (the child exits at once; not with "nofork"), then loads
 * libstdc++ (dlopen), whose emergency exception pool is allocated as it loads, and exits.
 * libprof looks up the frees it makes at exit, as valgrind does (libstdc++'s
 * __gnu_cxx::__freeres, libc's __libc_freeres), before a fork, for its children; objects
 * loaded since must be looked up again at exit, or the pool stays in use. Exit status 77: no
 * libstdc++. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "nofork"))
		goto load;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, NULL, 0) != pid)
		return 1;
load:
	if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL))
		return 77;
	puts("libstdc++ loaded");
	return 0;
}
