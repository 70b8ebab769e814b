/* The program's signal mask under libprof: unwinds block every signal at libunwind's first
 * mask change and answer its changes without a system call (stacks.c, cpu.c); the program
 * must still see and keep exactly the mask it set, and get the signals it did not block.
 * Allocates through many call paths (unwinds) with SIGUSR1 blocked and SIGUSR2 raised, then
 * checks; meanwhile a timer's SIGALRM, which lands inside unwinds too, has its handler block
 * and unblock SIGURG and check that each change took. Exit 0 when all holds. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t usr2_seen, alarms, alarm_failures;

static int urg_blocked(void)
{
	sigset_t cur;
	return pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGURG);
}

/* A handler's own mask changes are real, whenever it runs. */
static void on_alarm(int sig)
{
	(void)sig;
	sigset_t urg;
	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	int was = urg_blocked();
	pthread_sigmask(SIG_BLOCK, &urg, NULL);
	if (!urg_blocked())
		alarm_failures++;
	pthread_sigmask(SIG_UNBLOCK, &urg, NULL);
	if (urg_blocked() || was)
		alarm_failures++;
	alarms++;
}

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
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &every, NULL);
	for (int round = 0; round < 200; round++) {
		for (int d = 0; d < 40; d++)
			free(path(d, 16));
		raise(SIGUSR2);
		if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || !sigismember(&cur, SIGUSR1) ||
		    sigismember(&cur, SIGUSR2) || sigismember(&cur, SIGTERM) ||
		    sigismember(&cur, SIGALRM) || sigismember(&cur, SIGURG)) {
			fprintf(stderr, "mask changed in round %d\n", round);
			return 1;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	if (alarm_failures || !alarms) {
		fprintf(stderr, "%d of %d SIGALRM handlers saw their mask changes fail\n",
			(int)alarm_failures, (int)alarms);
		return 1;
	}
	if (usr2_seen != 200) {
		fprintf(stderr, "SIGUSR2 seen %d times of 200\n", (int)usr2_seen);
		return 1;
	}
	printf("mask kept; %d alarms\n", (int)alarms);
	return 0;
}
