/* A thread that prints after each 10 s poll() while main exits after 0.1 s: unprofiled it
 * never prints. The exit-time leak scan stops it and must not let it run on (a poll()
 * interrupted by a signal returns EINTR, and the thread would print "tick"). */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *tick(void *arg)
{
	(void)arg;
	for (;;) {
		poll(NULL, 0, 10000);
		printf("tick\n");
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, tick, NULL);
	usleep(100000);
	printf("main done\n");
	return 0;
}
