/* fork: parent and child allocate different amounts; then the child execs this program again
 * with "exec" as argument, which allocates once more. Each image writes its own trace. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void alloc_n(int n, size_t size)
{
	for (int i = 0; i < n; i++)
		free(malloc(size));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		alloc_n(7, 70);
		return 7;
	}
	alloc_n(10, 100);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		alloc_n(5, 50);
		char *args[] = { argv[0], "exec", NULL };
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	alloc_n(3, 30);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
