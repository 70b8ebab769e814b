/* exit() from a signal handler (a SIGTERM handler that cleans up and exits, here SIGALRM):
 * the first alarm, every 200 us, that finds the program inside libprof's code (or the first
 * one at all, unprofiled) exits 3 from the handler, while the main loop allocates. Usage:
 * signal_exit [_exit] (_exit(3) instead). */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t prof_lo, prof_hi;  /* libprof's code, when it is loaded */
static int quick;

static int find_libprof(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	if (!strstr(info->dlpi_name, "libprof"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			prof_lo = info->dlpi_addr + ph->p_vaddr;
			prof_hi = prof_lo + ph->p_memsz;
		}
	}
	return 1;
}

static void on_alarm(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	uintptr_t pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	if (!prof_hi || (pc >= prof_lo && pc < prof_hi)) {
		if (quick)
			_exit(3);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	quick = argc > 1 && !strcmp(argv[1], "_exit");
	dl_iterate_phdr(find_libprof, NULL);
	struct sigaction sa = { .sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &every, NULL);
	for (;;) {
		char *volatile p = malloc(64);
		free(p);
	}
}
