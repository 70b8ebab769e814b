/* dlopens argv[1] with RTLD_DEEPBIND and allocates and frees through it: a strdup of 35
 * bytes, 3 mallocs of 100; frees them all; leaks one block of 7 on purpose. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	char *(*dup)(const char *) = (char *(*)(const char *))dlsym(h, "deep_dup");
	void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
	void (*release)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	char *s = dup("thirty-four bytes and its NUL byte");
	void *b[3];
	for (int i = 0; i < 3; i++)
		b[i] = alloc(100);
	static void *kept;
	kept = alloc(7);
	release(s);
	for (int i = 0; i < 3; i++)
		release(b[i]);
	printf("%s\n", kept ? "done" : "failed");
	return 0;
}
