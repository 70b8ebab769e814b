/* Threads still running when the process ends: three named threads spin until the main
 * thread ends the process (argv[1]): "exit" (exit(0)), "_exit" (_exit(0)), "exec" (execs
 * /bin/true), or "killed": a child does all that, its parent kills it with SIGKILL and
 * prints the CPU time the kernel counted for it (wait4's rusage). Each other mode prints
 * the process's CPU time just before it ends. Output: "cpu_ns N". */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int spinning = 1;

static void *spin(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "spinner%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	while (spinning)
		;
	return NULL;
}

static void spin_for_a_while(void)
{
	pthread_t t;
	for (long i = 0; i < 3; i++)
		if (pthread_create(&t, NULL, spin, (void *)i) != 0)
			exit(2);
	struct timespec d = { 0, 300 * 1000000L };
	nanosleep(&d, NULL);
}

static void print_cpu(long long ns)
{
	printf("cpu_ns %lld\n", ns);
	fflush(stdout);
}

static long long process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	if (!strcmp(how, "killed")) {
		pid_t pid = fork();
		if (pid == 0) {
			spin_for_a_while();
			pause();
		}
		struct timespec d = { 0, 400 * 1000000L };
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		struct rusage ru;
		int st;
		if (wait4(pid, &st, 0, &ru) != pid || !WIFSIGNALED(st))
			return 1;
		print_cpu((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
			  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
		return 0;
	}
	spin_for_a_while();
	print_cpu(process_cpu_ns());
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 1;
	}
	exit(0);
}
