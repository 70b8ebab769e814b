/* CPU time in a library loaded with dlopen after start-up, which no hook's stack goes
 * through: dlopens argv[1], spends 200 ms of CPU in its plugin_spin(), then sleeps a moment
 * (whose hook describes the new library) and exits. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	void (*spin)(long) = h ? (void (*)(long))dlsym(h, "plugin_spin") : NULL;
	if (!spin) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	spin(200);
	usleep(1000);
	return 0;
}
