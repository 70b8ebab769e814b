/* Children that die of a signal write no end of their own: their parent's wait calls see it.
 * Four children each wait for a signal; the parent kills them and reaps each a different way:
 * waitpid with no status (SIGTERM), wait (SIGKILL), waitid (SIGINT), wait3 (SIGHUP); a fifth
 * child exits 7 after it closed stdout. Exits 0 when each ended as planned. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t waiting_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

int main(void)
{
	int st, ok = 1;
	/* A background job of a shell script starts with SIGINT ignored, which its children
	 * inherit: the child sent SIGINT would live on and its wait never end. */
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	pid_t a = waiting_child(), b = waiting_child(), c = waiting_child(), d = waiting_child();
	usleep(50000);
	kill(a, SIGTERM);
	ok &= waitpid(a, NULL, 0) == a;
	kill(b, SIGKILL);
	ok &= wait(&st) == b && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	kill(c, SIGINT);
	siginfo_t si = { 0 };
	ok &= waitid(P_PID, (id_t)c, &si, WEXITED) == 0 && si.si_code == CLD_KILLED &&
	      si.si_status == SIGINT;
	kill(d, SIGHUP);
	ok &= wait3(&st, 0, NULL) == d && WIFSIGNALED(st) && WTERMSIG(st) == SIGHUP;
	pid_t e = fork();
	if (e == 0)
		_exit(7);
	ok &= waitpid(e, &st, 0) == e && WIFEXITED(st) && WEXITSTATUS(st) == 7;
	return !ok;
}
