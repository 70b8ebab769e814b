/* A CPU-bound workload for bench/cpu.sh: THREADS threads (default 2) each run ITERS calls
 * (default 200000) down a recursive chain 8 to 11 frames deep to a loop of arithmetic, so
 * samples find real stacks to unwind. Prints the loop's wall time, the process's CPU time
 * (user and system) and a checksum that is the same on every run. No allocation, no I/O, no
 * locks while timed.
 *
 * `cpu_bench ticks N SIGNAL`: the cost of one sample, without the noise of other load. From
 * 10 frames deep, the thread sends itself N signals SIGNAL with the code and value of
 * libprof's CPU timers (run it under libprof with SIGNAL 61, SIGRTMAX-3: each is a sample),
 * or of a signal with an empty handler (any other SIGNAL: the kernel's share); prints the
 * CPU time per signal. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/resource.h>
#include <time.h>

static long iters = 200000;

__attribute__((noinline)) static double leaf(double x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 0.999999 + 1.0;
	return x;
}

__attribute__((noinline)) static double level(int depth, double x)
{
	if (depth == 0)
		return leaf(x);
	return level(depth - 1, x) * 0.5 + 0.5;
}

static void *work(void *arg)
{
	double *out = arg, x = 1.0;
	for (long i = 0; i < iters; i++)
		x = level(8 + (int)(i & 3), x);
	*out = x;
	return NULL;
}

static double cpu_seconds(void);

static void on_signal(int sig)
{
	(void)sig;
}

/* Sends n signals sig to this thread, as a CPU timer of libprof's would. */
__attribute__((noinline)) static double send_ticks(int depth, long n, int sig)
{
	if (depth > 0)
		return send_ticks(depth - 1, n, sig) + 0.0;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_TIMER;
	si.si_value.sival_int = 0x70726f66;
	double t0 = cpu_seconds();
	for (long i = 0; i < n; i++)
		syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), sig, &si);
	return cpu_seconds() - t0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "ticks")) {
		long n = atol(argv[2]);
		int sig = atoi(argv[3]);
		if (sig != SIGRTMAX - 3)
			signal(sig, on_signal);
		double s = send_ticks(10, n, sig);
		printf("per_signal_us=%.3f\n", s * 1e6 / (double)n);
		return 0;
	}
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2)
		iters = atol(argv[2]);
	if (threads < 1 || threads > 64 || iters < 1)
		return 2;
	pthread_t t[64];
	double res[64];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, work, &res[i]);
	double sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += res[i];
	}
	/* The process's CPU time too: other load on the machine stretches the wall time, not it. */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("seconds=%.4f cpu=%.4f checksum=%.6f\n", now() - t0, cpu, sum);
	return 0;
}
