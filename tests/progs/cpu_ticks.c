/* The retry path of libprof's hooks, made certain: while a thread blocks in calls that
 * SA_RESTART does not restart, the main thread sends it libprof's own tick (its signal,
 * SIGRTMAX-3, with the SI_TIMER code and value its timers use) every 2 ms. Each call (and a
 * read from a pipe, which SA_RESTART restarts in the kernel) must
 * still take its whole timeout and never fail with EINTR. Then the program's own signal
 * (SIGUSR1, handled) must still end a poll with EINTR. Run only under libprof. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int done, tid, failures, reading;
static int wake[2];  /* the main thread writes a byte now and then: a read that blocks */
static void on_usr1(int sig) { (void)sig; }

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A call that should take want_ms: it must not fail with EINTR nor end early. */
static void check(const char *what, int failed, double t0, double want_ms)
{
	double took = now_ms() - t0;
	if (failed && errno == EINTR) {
		printf("%s: EINTR\n", what);
		failures++;
	} else if (took < want_ms - 1) {
		printf("%s: %.1f ms of %.0f\n", what, took, want_ms);
		failures++;
	}
}

static void *blocker(void *arg)
{
	(void)arg;
	tid = (int)syscall(SYS_gettid);
	int p[2];
	pipe(p);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	sem_t sem;
	sem_init(&sem, 0, 0);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	for (int round = 0; round < 3; round++) {
		double t0 = now_ms();
		struct timespec ts = { 0, 30000000 };
		check("nanosleep", nanosleep(&ts, NULL) < 0, t0, 30);
		t0 = now_ms();
		check("usleep", usleep(30000) < 0, t0, 30);
		t0 = now_ms();
		int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		errno = rc;
		check("clock_nanosleep", rc != 0, t0, 30);
		t0 = now_ms();
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		check("poll", poll(&pfd, 1, 30) < 0, t0, 30);
		t0 = now_ms();
		check("ppoll", ppoll(&pfd, 1, &ts, NULL) < 0, t0, 30);
		t0 = now_ms();
		fd_set r;
		FD_ZERO(&r);
		FD_SET(p[0], &r);
		struct timeval tv = { 0, 30000 };
		check("select", select(p[0] + 1, &r, NULL, NULL, &tv) < 0, t0, 30);
		t0 = now_ms();
		struct epoll_event out;
		check("epoll_wait", epoll_wait(ep, &out, 1, 30) < 0, t0, 30);
		t0 = now_ms();
		struct timespec abs;
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_nsec += 30000000;
		if (abs.tv_nsec >= 1000000000) {
			abs.tv_sec++;
			abs.tv_nsec -= 1000000000;
		}
		rc = sem_timedwait(&sem, &abs);
		check("sem_timedwait", rc < 0 && errno != ETIMEDOUT, t0, 29);
		t0 = now_ms();
		check("sigtimedwait", sigtimedwait(&usr2, NULL, &ts) < 0 && errno != EAGAIN, t0, 30);
		char c;
		reading = 1;
		check("read", read(wake[0], &c, 1) < 0, t0, 0);  /* SA_RESTART's part */
		reading = 0;
	}
	done = 1;
	/* The program's own signal still interrupts a poll. */
	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	int rc = poll(&pfd, 1, 5000);
	printf("own signal: poll %d %s\n", rc, rc < 0 ? strerror(errno) : "");
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pipe(wake);
	pthread_t t;
	pthread_create(&t, NULL, blocker, NULL);
	while (!tid)
		usleep(1000);
	int sent = 0;
	while (!done) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		si.si_signo = SIGRTMAX - 3;
		si.si_code = SI_TIMER;
		si.si_value.sival_int = 0x70726f66;
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, si.si_signo, &si) == 0)
			sent++;
		usleep(2000);
		if (reading && sent % 15 == 0)  /* about 30 ms into a blocked read */
			write(wake[1], "x", 1);
	}
	usleep(50000);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	printf("ticks sent %d\nfailures %d\n", sent, (int)failures);
	return failures ? 1 : 0;
}
