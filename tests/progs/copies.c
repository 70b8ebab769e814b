/* New processes made without fork(): copies of the process (_Fork, clone without CLONE_VM,
 * syscall(SYS_fork)) and children that borrow its memory (vfork, clone(CLONE_VM |
 * CLONE_VFORK)). Usage: copies DIR.
 *
 * Copy K (K = 2, 3, 4) allocates K blocks of K*1000+1 bytes, writes K lines to DIR/copyK and
 * exits K. Borrower K (K = 5, 6) points descriptor 1 at a pipe, closes the pipe's ends and
 * the parent's file DIR/parent, allocates a block it never frees, and execs `copies DIR K`,
 * which writes "K\n" to the pipe and exits K; borrower 7 (vfork) execs a path that does not
 * exist and calls exit(), not _exit(), as careless programs do. The root allocates one block
 * of 1001 bytes before and one of 1002 after, writes 10 lines to DIR/parent, reads the 4
 * bytes the exec'd borrowers wrote from the pipe and exits 0 (1 if a child ended otherwise). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static char exe[4096];
static int pipe_fds[2], parent_fd;

static void allocate(int k)
{
	for (int i = 0; i < k; i++) {
		char *volatile p = malloc((size_t)k * 1000 + 1);
		free(p);
	}
}

static int copy_work(int k)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/copy%d", dir, k);
	allocate(k);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < k; i++)
		if (write(fd, "line\n", 5) != 5)
			return 100;
	close(fd);
	return k;
}

static int clone_copy(void *arg)
{
	return copy_work((int)(long)arg);
}

/* What a borrower does in the parent's memory before it execs (role k) or fails to. */
static void borrower(int k)
{
	dup2(pipe_fds[1], 1);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	close(parent_fd);
	char *volatile kept = malloc(4321);
	(void)kept;
	char role[16];
	snprintf(role, sizeof(role), "%d", k);
	if (k == 7) {
		execl("/nonexistent/copies", "copies", (char *)NULL);
		exit(127);
	}
	execl(exe, exe, dir, role, (char *)NULL);
	_exit(127);
}

static int clone_borrower(void *arg)
{
	borrower((int)(long)arg);
	return 127;
}

static int ended(pid_t pid, int code)
{
	int st;
	return pid > 0 && waitpid(pid, &st, __WALL) == pid && WIFEXITED(st) && WEXITSTATUS(st) == code;
}

static char clone_stack[256 << 10] __attribute__((aligned(16)));

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	dir = argv[1];
	if (argc > 2) {  /* an exec'd borrower */
		printf("%s\n", argv[2]);
		return atoi(argv[2]);
	}
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return 99;
	exe[len] = '\0';
	char path[4200];
	snprintf(path, sizeof(path), "%s/parent", dir);
	parent_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (parent_fd < 0 || pipe(pipe_fds) < 0)
		return 98;
	char *volatile before = malloc(1001);
	free(before);
	int ok = 1;
	pid_t pid = _Fork();
	if (pid == 0)
		_exit(copy_work(2));
	ok &= ended(pid, 2);
	ok &= ended(clone(clone_copy, clone_stack + sizeof(clone_stack), SIGCHLD, (void *)3L), 3);
	pid = (pid_t)syscall(SYS_fork);
	if (pid == 0)
		_exit(copy_work(4));
	ok &= ended(pid, 4);

	pid = vfork();
	if (pid == 0)
		borrower(5);
	ok &= ended(pid, 5);
	ok &= ended(clone(clone_borrower, clone_stack + sizeof(clone_stack),
			  CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)6L), 6);
	pid = vfork();
	if (pid == 0)
		borrower(7);
	ok &= ended(pid, 127);

	char *volatile after = malloc(1002);
	free(after);
	for (int i = 0; i < 10; i++)
		ok &= write(parent_fd, "parent\n", 7) == 7;
	close(parent_fd);
	close(pipe_fds[1]);
	char got[16] = "";
	ok &= read(pipe_fds[0], got, sizeof(got)) == 4 && !strcmp(got, "5\n6\n");
	close(pipe_fds[0]);
	return !ok;
}
