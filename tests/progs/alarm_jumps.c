/* A timeout by siglongjmp out of a SIGALRM handler, around work that allocates and writes:
 * the alarm (every 500 us, for JUMPS jumps) lands inside libprof's hooks as often as the
 * program spends time there. Each completed round is counted after its calls returned.
 * Usage: alarm_jumps JUMPS; prints "allocs A writes W jumps J". An alarm that finds the
 * program inside libc returns instead (a jump out of malloc's own updates would break the
 * allocator, with or without libprof: the program's undefined behaviour, not tested here). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "code_range.h"

static sigjmp_buf timeout;
static volatile long allocs, writes, jumps;
static struct code_range libc;

static void on_alarm(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	uintptr_t pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	if (pc >= libc.lo && pc < libc.hi)
		return;
	jumps++;
	siglongjmp(timeout, 1);
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 200;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 2;
	libc = code_range("/libc.so");
	if (!libc.hi)
		return 3;
	struct sigaction sa = { .sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 500 }, { 0, 500 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &every, NULL);
	sigsetjmp(timeout, 1);
	while (jumps < want) {
		char *volatile p = malloc(64);
		allocs++;
		if (write(fd, "x", 1) == 1)
			writes++;
		free(p);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	close(fd);
	printf("allocs %ld writes %ld jumps %ld\n", allocs, writes, jumps);
	return 0;
}
