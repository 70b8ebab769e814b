/* A timeout by siglongjmp out of a SIGALRM handler, around work that allocates and writes:
 * the alarm (every 500 us, for JUMPS jumps) lands inside libprof's hooks as often as the
 * program spends time there. Each completed round is counted after its calls returned.
 * Usage: alarm_jumps JUMPS; prints "allocs A writes W jumps J". Only small blocks (the
 * allocator's thread cache): a jump out of malloc's own locked paths would be the program's
 * undefined behaviour, with or without libprof. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static sigjmp_buf timeout;
static volatile long allocs, writes, jumps;

static void on_alarm(int sig)
{
	(void)sig;
	jumps++;
	siglongjmp(timeout, 1);
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 200;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 2;
	signal(SIGALRM, on_alarm);
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
