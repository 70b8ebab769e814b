/* Leaks of a fork child, as memcheck classifies them. The parent makes a holder block; the
 * child (no exec) stores a new block of 100 bytes in it, which is reachable through the
 * inherited holder, and loses a block of 77 bytes and one of 40 that points to one of 24.
 * The child should show 117 bytes in 2 blocks definitely lost, 24 in 1 indirectly lost and
 * the block of 100 still reachable. Prints "child PID".
 *
 *   leak_fork big    the parent first fills 48 MiB (a mapping of its own) that the child
 *                    inherits and never writes
 *   leak_fork keep   the child forks a grandchild that is still running when the child exits
 *                    (the pages the child wrote are then shared with it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clear_stack.h"

struct holder {
	char *kept;
	char name[56];
};

static struct holder *holder;
static char *ballast;
#define BALLAST_BYTES (48u << 20)

__attribute__((noinline)) static void lose_some(void)
{
	char *lost = malloc(77);
	memset(lost, 1, 77);
	void **head = malloc(40);
	memset(head, 0, 40);
	head[0] = malloc(24);
	lost = NULL;
	head = NULL;
}

__attribute__((noinline)) static void child_work(void)
{
	holder->kept = malloc(100);
	memset(holder->kept, 2, 100);
	lose_some();
	clear_stack();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "big")) {
		if (!(ballast = malloc(BALLAST_BYTES)))
			return 1;
		memset(ballast, 0x5a, BALLAST_BYTES);
	}
	int gate[2];
	if (pipe(gate) < 0)
		return 1;
	/* A page of its own, which nothing but the child's store of its block writes. */
	if (posix_memalign((void **)&holder, 4096, 4096))
		return 1;
	memset(holder, 0, 4096);
	strcpy(holder->name, "made by the parent");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(gate[1]);
		child_work();
		if (!strcmp(mode, "keep")) {
			pid_t grandchild = fork();
			if (grandchild == 0) {
				char c;
				while (read(gate[0], &c, 1) > 0)  /* until the parent closes the gate */
					;
				_exit(0);
			}
			if (grandchild < 0)
				exit(1);
		}
		exit(0);
	}
	close(gate[0]);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	close(gate[1]);
	printf("child %d\n", (int)pid);
	free(holder);
	free(ballast);
	return 0;
}
