/* Prints the disposition this program finds for the signals programs inspect at start-up
 * (Python installs its SIGINT handler only where it finds SIG_DFL): the profiler must not
 * change them. */
#include <signal.h>
#include <stdio.h>

int main(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1,
				    SIGUSR2, SIGALRM };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		sigaction(sigs[i], NULL, &sa);
		printf("%d %s\n", sigs[i], sa.sa_handler == SIG_DFL ? "default" :
					   sa.sa_handler == SIG_IGN ? "ignored" : "handled");
	}
	return 0;
}
