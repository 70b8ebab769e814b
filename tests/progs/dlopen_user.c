/* dlopens the plugin given as argv[1] and leaks what its plugin_make() allocates. */
#include <dlfcn.h>
#include <stdio.h>

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
	static void *kept;
	kept = make ? make() : NULL;
	return kept ? 0 : 1;
}
