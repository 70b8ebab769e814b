/* fork while other threads hold and contend locks: four threads hammer one mutex (and
 * malloc) while main forks FORKS children; each child takes fresh locks from two threads,
 * allocates, and exits 0. The parent exits 0 when every child did. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 8

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static volatile long counter;

static void *hammer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&busy);
		counter++;
		free(malloc(32));
		pthread_mutex_unlock(&busy);
	}
	return NULL;
}

static pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;

static void *child_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&child_lock);
		counter++;
		pthread_mutex_unlock(&child_lock);
	}
	return NULL;
}

static int child(void)
{
	pthread_mutex_t m;
	pthread_mutex_init(&m, NULL);
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&m);
		free(malloc(64));
		pthread_mutex_unlock(&m);
	}
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, child_worker, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	int failed = 0;
	for (int i = 0; i < FORKS; i++) {
		usleep(5000);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(child());
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return failed ? 1 : 0;
}
