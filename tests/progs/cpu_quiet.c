/* Calls that a signal could interrupt, between bursts of CPU time, in two threads: none may
 * ever fail with EINTR, however fast libprof samples. The program's own SIGPROF profiler
 * (setitimer ITIMER_PROF, about 60 ticks in 300 ms of CPU) must keep ticking, a thread that blocks every signal must still
 * be sampled (and read back the mask it set), and the handler the program sets on libprof's
 * signal must be the one it reads back and the one its own raise() reaches. Prints what it saw; exits 1 on any EINTR. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t prof_ticks, own_signal;
static volatile double sink;
static _Atomic int eintr, mask_kept = -1;
static int rounds = 300;

static void on_prof(int sig) { (void)sig; prof_ticks++; }
static void on_own(int sig) { (void)sig; own_signal++; }

static void burn(int us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	double x = sink;
	do {
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001 + 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
	sink = x;
}

#define CHECK(what, failed) do { if (failed && errno == EINTR) { eintr++; \
	fprintf(stderr, "EINTR from %s\n", what); } } while (0)

static void *calls(void *arg)
{
	int blocked = arg != NULL;
	if (blocked) {  /* this thread blocks every signal: it must still be sampled */
		sigset_t all, back;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		pthread_sigmask(SIG_BLOCK, NULL, &back);  /* what it blocked is what it reads back */
		mask_kept = sigismember(&back, SIGRTMAX - 3) && sigismember(&back, SIGRTMIN);
	}
	int p[2];
	pipe(p);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	sem_t sem;
	sem_init(&sem, 0, 0);
	for (int i = 0; i < rounds; i++) {
		burn(300);
		struct timespec ts = { 0, 200000 };
		CHECK("nanosleep", nanosleep(&ts, NULL) < 0);
		burn(300);
		CHECK("usleep", usleep(200) < 0);
		burn(300);
		int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (rc == EINTR) {
			eintr++;
			fprintf(stderr, "EINTR from clock_nanosleep\n");
		}
		burn(300);
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		CHECK("poll", poll(&pfd, 1, 1) < 0);
		burn(300);
		fd_set r;
		FD_ZERO(&r);
		FD_SET(p[0], &r);
		struct timeval tv = { 0, 300 };
		CHECK("select", select(p[0] + 1, &r, NULL, NULL, &tv) < 0);
		burn(300);
		struct epoll_event out;
		CHECK("epoll_wait", epoll_wait(ep, &out, 1, 1) < 0);
		burn(300);
		struct timespec abs;
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_nsec += 300000;
		if (abs.tv_nsec >= 1000000000) {
			abs.tv_sec++;
			abs.tv_nsec -= 1000000000;
		}
		if (sem_timedwait(&sem, &abs) < 0 && errno != ETIMEDOUT)
			CHECK("sem_timedwait", 1);
	}
	close(p[0]);
	close(p[1]);
	close(ep);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	/* The program's own profiler: SIGPROF every 5 ms of process CPU time, over 300 ms of CPU
	 * (not during the calls below: its own signal would interrupt them, as it should). */
	signal(SIGPROF, on_prof);
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &it, NULL);
	burn(300000);
	setitimer(ITIMER_PROF, &off, NULL);
	/* A handler on every real-time signal: what it sets is what it reads back. */
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
		struct sigaction sa, back;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_own;
		sigaction(s, &sa, NULL);
		sigaction(s, NULL, &back);
		if (back.sa_handler != on_own) {
			printf("signal %d: handler not kept\n", s);
			return 1;
		}
	}
	raise(SIGRTMAX - 3);
	raise(SIGRTMIN);
	pthread_t t;
	pthread_create(&t, NULL, calls, (void *)1);
	calls(NULL);
	pthread_join(t, NULL);
	printf("eintr %d\nsigprof %d\nown %d\nmask %d\n", eintr, (int)prof_ticks, (int)own_signal,
	       (int)mask_kept);
	return eintr ? 1 : 0;
}
