/* The program's signal mask under libprof: recording unwinds run with every signal blocked
 * and libunwind's own mask changes answered without a system call (stacks.c, cpu.c); the
 * program must still see and keep exactly the mask it set, and get the signals it did not
 * block. Allocates through many call paths (recordings) with SIGUSR1 blocked and SIGUSR2
 * arriving from a timer, then checks. Exit 0 when all holds. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t usr2_seen;

static void on_usr2(int sig)
{
	(void)sig;
	usr2_seen++;
}

__attribute__((noinline)) static void *path(int depth, size_t size)
{
	if (depth == 0)
		return malloc(size);
	void *p = path(depth - 1, size + 1);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void)
{
	sigset_t block, cur;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &block, NULL) != 0)
		return 2;
	signal(SIGUSR2, on_usr2);
	for (int round = 0; round < 200; round++) {
		for (int d = 0; d < 40; d++)
			free(path(d, 16));
		raise(SIGUSR2);
		if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || !sigismember(&cur, SIGUSR1) ||
		    sigismember(&cur, SIGUSR2) || sigismember(&cur, SIGTERM)) {
			fprintf(stderr, "mask changed in round %d\n", round);
			return 1;
		}
	}
	if (usr2_seen != 200) {
		fprintf(stderr, "SIGUSR2 seen %d times of 200\n", (int)usr2_seen);
		return 1;
	}
	printf("mask kept\n");
	return 0;
}
