/* lock_array [N]: N mutexes side by side in an array (default 4000), each taken once, and
 * the minor page faults that pass cost (getrusage), the array itself written before: what
 * libprof's lock table adds to a program's first use of many locks. Prints "faults F locks N". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4000;
	pthread_mutex_t *locks = malloc((size_t)n * sizeof(*locks));
	if (n <= 0 || !locks)
		return 1;
	memset(locks, 0, (size_t)n * sizeof(*locks));  /* PTHREAD_MUTEX_INITIALIZER, faulted in */
	pthread_mutex_lock(&locks[0]);  /* the hooks' own first-call work, outside the count */
	pthread_mutex_unlock(&locks[0]);
	long before = minor_faults();
	for (long i = 1; i < n; i++) {
		pthread_mutex_lock(&locks[i]);
		pthread_mutex_unlock(&locks[i]);
	}
	printf("faults %ld locks %ld\n", minor_faults() - before, n);
	free(locks);
	return 0;
}
