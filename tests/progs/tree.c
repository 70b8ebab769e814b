/* A tree of processes, each allocating a known amount (K blocks of K*1000+1 bytes, K its
 * role): the root (1) forks a child (2) that execs an image (3); posix_spawn (4), system (5),
 * vfork and exec (6) and popen (7) start the others; the exec'd image exits 3, the vfork'd
 * one dies of SIGTERM; the root exits 0 (1 when a child ended otherwise). */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void allocate(int k)
{
	for (int i = 0; i < k; i++) {
		char *volatile p = malloc((size_t)k * 1000 + 1);
		free(p);
	}
}

static int role_exit(const char *role)
{
	static const char *const roles[] = { [3] = "exec", "spawn", "system", "vfork", "popen" };
	for (int k = 3; k < 8; k++)
		if (!strcmp(role, roles[k])) {
			allocate(k);
			if (k == 6)
				raise(SIGTERM);
			return k == 3 ? 3 : 0;
		}
	return 100;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return role_exit(argv[1]);
	allocate(1);
	const char *self = "/proc/self/exe";
	char exe[4096], cmd[4200];
	ssize_t len = readlink(self, exe, sizeof(exe) - 1);
	if (len <= 0)
		return 99;
	exe[len] = '\0';
	int st, bad = 0;
	pid_t pid = fork();
	if (pid == 0) {
		allocate(2);
		execl(exe, exe, "exec", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 3;
	char *spawn_argv[] = { exe, "spawn", NULL };
	if (posix_spawn(&pid, exe, NULL, NULL, spawn_argv, environ) != 0)
		return 98;
	waitpid(pid, &st, 0);
	bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	snprintf(cmd, sizeof(cmd), "'%s' system", exe);
	bad |= system(cmd) != 0;
	pid = vfork();
	if (pid == 0) {
		execl(exe, exe, "vfork", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	bad |= !WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM;
	snprintf(cmd, sizeof(cmd), "'%s' popen", exe);
	FILE *f = popen(cmd, "r");
	bad |= !f || pclose(f) != 0;
	return bad;
}
