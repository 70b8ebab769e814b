/* fork_tables [LOCKS [CHILDREN]]: a prefork server's pattern (defaults 4000 and 20). The
 * parent takes LOCKS mutexes (each an entry of
 * libprof's lock table) and allocates from DEPTHS call paths (entries of its stack table),
 * then forks CHILDREN times; each child takes the same locks and allocates from the same
 * paths once, and exits 0 (exit(), which writes its locks' counts). After every fork the parent takes every lock again, and counts the
 * page faults that costs it (getrusage): the tables libprof empties in a child anyway need
 * not be shared with it, and writing memory that was shared faults once a page. Prints
 * "faults_after_fork N" (the most of any round) and "locks L paths P children C". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LOCKS 100000
#define DEPTHS 24

static pthread_mutex_t locks[MAX_LOCKS];
static int nlocks = 4000;

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void take_all(void)
{
	for (int i = 0; i < nlocks; i++) {
		pthread_mutex_lock(&locks[i]);
		pthread_mutex_unlock(&locks[i]);
	}
}

/* DEPTHS distinct call paths, one per depth. */
__attribute__((noinline)) static void *alloc_at(int depth)
{
	if (depth > 0) {
		void *p = alloc_at(depth - 1);
		__asm__ volatile("" ::: "memory");  /* not a tail call */
		return p;
	}
	return malloc(24);
}

static void alloc_all(void)
{
	for (int d = 0; d < DEPTHS; d++)
		free(alloc_at(d));
}

int main(int argc, char **argv)
{
	int children = argc > 2 ? atoi(argv[2]) : 20;
	if (argc > 1)
		nlocks = atoi(argv[1]);
	if (nlocks < 1 || nlocks > MAX_LOCKS || children < 1)
		return 2;
	for (int i = 0; i < nlocks; i++)
		pthread_mutex_init(&locks[i], NULL);
	take_all();
	alloc_all();
	long worst = 0;
	for (int c = 0; c < children; c++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			take_all();
			alloc_all();
			exit(0);  /* its lock counts written at exit */
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
		long before = minor_faults();
		take_all();
		long faults = minor_faults() - before;
		if (faults > worst)
			worst = faults;
		alloc_all();
	}
	printf("faults_after_fork %ld\nlocks %d paths %d children %d\n", worst, nlocks, DEPTHS,
	       children);
	return 0;
}
