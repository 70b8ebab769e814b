/* A plugin loaded with dlopen after start-up: its frames must still be symbolized. */
#include <stdlib.h>
#include <time.h>

void *plugin_make(void);
void plugin_spin(long ms);

void *plugin_make(void)
{
	return malloc(77); /* LEAK-PLUGIN */
}

/* CPU time spent in the plugin alone, ms of this thread's CPU clock. */
void plugin_spin(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	long long end = ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
	static volatile double x;
	do {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000000000LL + ts.tv_nsec < end);
}
