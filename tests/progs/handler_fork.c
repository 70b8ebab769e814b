/* fork() from a signal handler, whose child returns from the handler and goes on: every 2 ms
 * a SIGALRM handler forks, 20 times, while the main loop allocates (the alarm often lands in
 * libprof's malloc hook, which the child then finishes). Each child allocates 20000 times
 * more and _exits 0; the parent exits 0 if every child did. */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 20

static volatile int forks, is_child;
static pid_t kids[FORKS];

static void on_alarm(int sig)
{
	(void)sig;
	if (is_child || forks >= FORKS)
		return;
	pid_t pid = fork();
	if (pid == 0)
		is_child = 1;
	else if (pid > 0)
		kids[forks++] = pid;
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	struct itimerval every = { { 0, 2000 }, { 0, 2000 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &every, NULL);
	for (long n = 1;; n++) {
		char *volatile p = malloc(64 + n % 100);
		free(p);
		if (is_child && n % 20000 == 0)
			_exit(0);
		if (!is_child && forks >= FORKS)
			break;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	int ok = 1;
	for (int i = 0; i < forks; i++) {
		int st;
		ok &= waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return !ok;
}
