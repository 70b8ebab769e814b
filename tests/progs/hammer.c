/* Faults (issue 16): `hammer threads N` runs N threads that allocate, lock and write at once
 * and prints a checksum; `hammer forks N` forks N children that each do a little of the same;
 * `hammer closeall` closes every descriptor but 1 and 2 then works; `hammer nofile N` sets
 * RLIMIT_NOFILE to N and opens files until it fails; `hammer loop` works until it is killed.
 * Each prints what it did, the same with or without libprof. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static long work(int rounds)
{
	long sum = 0;
	int fd = open("/dev/null", O_WRONLY);
	for (int i = 0; i < rounds; i++) {
		char *p = malloc((size_t)(16 + i % 512));
		memset(p, i, 16);
		sum += p[3];
		pthread_mutex_lock(&lock);
		total++;
		pthread_mutex_unlock(&lock);
		if (fd >= 0 && i % 16 == 0 && write(fd, p, 16) != 16)
			sum = -1;
		free(p);
	}
	if (fd >= 0)
		close(fd);
	return sum;
}

static void *thread_main(void *arg)
{
	(void)arg;
	work(20000);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "threads";
	int n = argc > 2 ? atoi(argv[2]) : 64;
	if (!strcmp(what, "threads")) {
		pthread_t *t = calloc((size_t)n, sizeof(*t));
		for (int i = 0; i < n; i++)
			pthread_create(&t[i], NULL, thread_main, NULL);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		free(t);
		printf("threads %d total %ld\n", n, total);
	} else if (!strcmp(what, "forks")) {
		int ok = 0;
		for (int i = 0; i < n; i++) {
			pid_t pid = fork();
			if (pid == 0)
				_exit(work(200) >= 0 ? i % 7 : 99);
			int st;
			if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == i % 7)
				ok++;
		}
		printf("forks %d ok %d\n", n, ok);
	} else if (!strcmp(what, "closeall")) {
		for (int fd = 0; fd < 1024; fd++)
			if (fd != 1 && fd != 2)
				close(fd);
		printf("closed, work %ld\n", work(5000));
		fflush(stdout);
	} else if (!strcmp(what, "nofile")) {
		struct rlimit r = { (rlim_t)n, (rlim_t)n };
		if (setrlimit(RLIMIT_NOFILE, &r))
			return 3;
		int opened = 0;
		while (open("/dev/null", O_RDONLY) >= 0)
			opened++;
		printf("limit %d: work %ld\n", n, work(2000));
		return opened > 0 ? 0 : 4;
	} else if (!strcmp(what, "loop")) {
		for (;;)
			work(1000);
	}
	return 0;
}
