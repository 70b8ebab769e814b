/* dlopen_user PLUGIN [fork]: dlopens PLUGIN and leaks what its plugin_make() allocates. With
 * "fork", a fork child then calls plugin_make() again (its own leak) and exits; the parent
 * waits for it. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void *(*make)(void) = (void *(*)(void))dlsym(h, "plugin_make");
	static void *kept, *kept_by_child;
	kept = make ? make() : NULL;
	if (!kept)
		return 1;
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			kept_by_child = make();
			return kept_by_child ? 0 : 1;
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	}
	return 0;
}
