/* leak_sparse: pointers to blocks kept in large memory of which the program touched little.
 *
 * A 512 MiB private anonymous mapping (as a JVM commits its heap, or a Go or V8 arena) is
 * touched on one page only, which holds the one pointer to block `in_mapping`; a 64 MiB
 * block from malloc (glibc maps it on its own) likewise holds the one pointer to block
 * `in_big_block`; a shared anonymous mapping (named "/dev/zero (deleted)") and a file of
 * /dev/shm, mapped shared and unlinked, hold the one pointers to blocks `in_shared` and
 * `in_shm`; a file mapped private holds the one pointers to block `in_cow`, in a page the
 * program wrote (its own copy now), and to block `in_file`, in a page it only read (the
 * file's page, written to the file before). All six are still reachable, as memcheck says.
 * Block `lost` is pointed to by nothing: definitely lost.
 * The leak scan need not read the untouched pages to know that (it reads the pages in memory
 * or swapped out), and reading them would map each one in. */
#include "clear_stack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAPPING (512ul << 20)
#define BIG_BLOCK (64ul << 20)

static void **sparse, **big, **shared, **shm, **file;

__attribute__((noinline)) static void keep(void)
{
	sparse = mmap(NULL, MAPPING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	shared = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char name[64];
	snprintf(name, sizeof(name), "/leak_sparse.%d", (int)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, 1 << 16) < 0)
		exit(1);
	shm = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	shm_unlink(name);
	close(fd);
	char path[] = "/tmp/leak_sparse.XXXXXX";
	if ((fd = mkstemp(path)) < 0 || ftruncate(fd, 2 << 12) < 0)
		exit(1);
	void *in_file = malloc(72);
	if (pwrite(fd, &in_file, sizeof(in_file), (1 << 12) + 16) != sizeof(in_file))
		exit(1);
	in_file = NULL;
	file = mmap(NULL, 2 << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	unlink(path);
	close(fd);
	if (file == MAP_FAILED)
		exit(1);
	void *volatile seen = file[(1 << 12) / sizeof(void *) + 2];  /* read, not written */
	(void)seen;
	seen = NULL;
	file[3] = malloc(56);                                          /* in_cow */
	big = malloc(BIG_BLOCK);  /* not calloc: its pages stay untouched */
	if (sparse == MAP_FAILED || shared == MAP_FAILED || shm == MAP_FAILED || !big)
		exit(1);
	/* Far inside each: a page in the middle of untouched ones. */
	sparse[MAPPING / sizeof(void *) / 2 + 3] = malloc(48);        /* in_mapping */
	big[BIG_BLOCK / sizeof(void *) / 2 + 5] = malloc(80);         /* in_big_block */
	shared[1000] = malloc(112);                                    /* in_shared */
	shm[2000] = malloc(144);                                       /* in_shm */
	void *volatile lost = malloc(208);
	memset(lost, 1, 208);
	lost = NULL;
	/* The addresses of the mappings themselves stay only there: globals, not the stack. */
}

int main(void)
{
	keep();
	clear_stack();
	printf("kept in %lu MiB mapped, %lu MiB allocated\n", MAPPING >> 20, BIG_BLOCK >> 20);
	return 0;
}
