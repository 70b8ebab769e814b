/* exit() from a signal handler (a SIGTERM handler that cleans up and exits, here SIGALRM):
 * the first alarm, every 200 us, that finds the program inside libprof's code (or the first
 * one at all, unprofiled) exits 3 from the handler, while the main loop allocates. Usage:
 * signal_exit [_exit] (_exit(3) instead). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "code_range.h"

static struct code_range prof;  /* libprof's code, when it is loaded */
static int quick;

static void on_alarm(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	uintptr_t pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	if (!prof.hi || (pc >= prof.lo && pc < prof.hi)) {
		if (quick)
			_exit(3);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	quick = argc > 1 && !strcmp(argv[1], "_exit");
	prof = code_range("libprof");
	struct sigaction sa = { .sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &every, NULL);
	for (;;) {
		char *volatile p = malloc(64);
		free(p);
	}
}
