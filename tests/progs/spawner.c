/* Starts itself again ("child", which allocates 9 blocks) with an environment that has
 * neither LD_PRELOAD nor PROF_OUTPUT: by execve ("exec") or by posix_spawn ("spawn"). */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *clean_env[] = { "SPAWNER=1", NULL };
	char *child_argv[] = { argv[0], "child", NULL };
	if (argc > 1 && !strcmp(argv[1], "child")) {
		for (int i = 0; i < 9; i++)
			free(malloc(90));
		return getenv("SPAWNER") ? 0 : 3;  /* the environment given was used */
	}
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		execve("/proc/self/exe", child_argv, clean_env);
		return 127;
	}
	pid_t pid;
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, clean_env) != 0)
		return 126;
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
}
