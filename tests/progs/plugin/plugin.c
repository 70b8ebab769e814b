/* A plugin loaded with dlopen after start-up: its frames must still be symbolized. */
#include <stdlib.h>

void *plugin_make(void);

void *plugin_make(void)
{
	return malloc(77); /* LEAK-PLUGIN */
}
