/* A fork child that counts the trace files mapped into it (lines of /proc/self/maps naming a
 * *.trace file) and prints "child_trace_maps N": its own trace only where it records, none
 * where it does not (prof-run --no-follow), never its parent's. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		FILE *maps = fopen("/proc/self/maps", "r");
		if (!maps)
			_exit(2);
		char line[4096];
		int n = 0;
		while (fgets(line, sizeof(line), maps)) {
			size_t len = strcspn(line, "\n");
			n += len > 6 && !strncmp(line + len - 6, ".trace", 6);
		}
		fclose(maps);
		printf("child_trace_maps %d\n", n);
		fflush(stdout);
		_exit(0);
	}
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
