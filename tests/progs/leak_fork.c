/* Leaks of a fork child, as memcheck classifies them. The parent makes a holder block; the
 * child (no exec) stores a new block of 100 bytes in it, which is reachable through the
 * inherited holder, and loses a block of 77 bytes and one of 40 that points to one of 24.
 * The child should show 117 bytes in 2 blocks definitely lost, 24 in 1 indirectly lost and
 * the block of 100 still reachable. Prints "child PID". */
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

int main(void)
{
	holder = calloc(1, sizeof(*holder));
	strcpy(holder->name, "made by the parent");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_work();
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	printf("child %d\n", (int)pid);
	free(holder);
	return 0;
}
