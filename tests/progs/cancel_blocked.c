/* Threads cancelled (pthread_cancel) while blocked: "sleeper" in nanosleep, "poller" in
 * poll() on a pipe nothing writes, "waiter" in waitpid() for a child that sleeps, "joiner" in
 * pthread_join() of the sleeper, "semwaiter" in sem_wait() of a semaphore nothing posts; each
 * is cancelled 80 ms after it began (the joiner first). Prints "cancelled N" (5). */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static sem_t sem;
static pid_t child;

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	struct timespec ts = { 30, 0 };
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

static void *poller(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "poller");
	struct pollfd p = { pipefd[0], POLLIN, 0 };
	for (;;)
		poll(&p, 1, -1);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	int status;
	for (;;)
		waitpid(child, &status, 0);
	return NULL;
}

static void *semwaiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "semwaiter");
	for (;;)
		sem_wait(&sem);
	return NULL;
}

static pthread_t sleeping;

static void *joiner(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "joiner");
	for (;;)
		pthread_join(sleeping, NULL);
	return NULL;
}

int main(void)
{
	if (pipe(pipefd) < 0 || sem_init(&sem, 0, 0) < 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		sleep(30);
		_exit(0);
	}
	void *(*fn[])(void *) = { joiner, sleeper, poller, waiter, semwaiter };
	pthread_t t[5];
	pthread_create(&t[1], NULL, sleeper, NULL);
	sleeping = t[1];
	for (int i = 0; i < 5; i++)
		if (i != 1)
			pthread_create(&t[i], NULL, fn[i], NULL);
	usleep(80 * 1000);
	int cancelled = 0;
	for (int i = 0; i < 5; i++) {
		void *res;
		pthread_cancel(t[i]);
		pthread_join(t[i], &res);
		cancelled += res == PTHREAD_CANCELED;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("cancelled %d\n", cancelled);
	return 0;
}
