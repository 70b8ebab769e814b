/* Allocates blocks it never frees, then execs another program: the blocks go with the old
 * image, so the first trace shows no leaks. With an argument, execs that program. */
#include <stdlib.h>
#include <unistd.h>

void *volatile held;

int main(int argc, char **argv)
{
	held = malloc(100);
	void *volatile lost = malloc(200);
	(void)lost;
	execl(argc > 1 ? argv[1] : "/bin/true", "next", (char *)NULL);
	return 1;
}
