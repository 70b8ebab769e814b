/* many_paths: allocations from PATHS call paths (chains of 3 to 8 calls through four functions,
 * chosen by a fixed hash of the path: about 2,100 distinct stacks), visited in a pseudo-random order ROUNDS times
 * each, as an allocation-heavy program with a few thousand stacks does: first in a thread of
 * its own, then in the first thread. Built with and without frame pointers. The stack cache
 * should serve nearly every allocation after a path's first two in each thread.
 * `many_paths handoff`: the first thread ends (pthread_exit) while the other is half way, so
 * that its stack cache is given back while the other's is in use.
 * `many_paths loader`: another thread spends its CPU time inside dl_iterate_phdr callbacks
 * (holding the loader's lock, as an exception's table lookup or a dlclose does) while the
 * paths are walked and unwound: a CPU sample of that thread must not unwind (cpu.c).
 * `many_paths unload`: the first thread walks the paths, dlopens and dlcloses libm, then
 * walks them again one frame deeper (new stack pointers: each path is recorded again).
 * `many_paths fork`: the first thread walks the paths, forks, and the child walks them again
 * and prints "child PID"; `many_paths fork-thread` does the same with another thread alive
 * (asleep) when it forks, and `many_paths _Fork-thread` makes the child with _Fork(), which
 * runs no fork handlers.
 * `many_paths siblings`: the first thread forks SIBLINGS children one after another, as a
 * shell forks its subshells; each walks every path once, in order (paths the parent never
 * took: each one's first sighting in each child), prints "child PID" and exits. */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_leaf.h"

#define PATHS 3000u
#define ROUNDS 20u

typedef uintptr_t (*step_fn)(unsigned path, int level, int depth);
static const step_fn steps[4];

static unsigned hash(unsigned a, unsigned b)
{
	unsigned h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu;
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	return h ^ (h >> 16);
}


static inline uintptr_t next(unsigned path, int level, int depth)
{
	if (level >= depth)
		return leaf(path, 200);
	return steps[hash(path, (unsigned)level) & 3](path, level + 1, depth);
}

#define STEP(name, k)                                                                     \
	static __attribute__((noinline, noclone)) uintptr_t name(unsigned path, int level, \
								 int depth)               \
	{                                                                                 \
		uintptr_t r = next(path, level, depth);                                   \
		__asm__ volatile("" : "+r"(r));                                           \
		return r * (k) + (uintptr_t)level;                                        \
	}
STEP(step_a, 3)
STEP(step_b, 5)
STEP(step_c, 7)
STEP(step_d, 11)
static const step_fn steps[4] = { step_a, step_b, step_c, step_d };

static void *run(void *seed)
{
	uintptr_t sum = 0;
	uint64_t rng = (uint64_t)(uintptr_t)seed;
	for (unsigned i = 0; i < PATHS * ROUNDS; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		unsigned path = (unsigned)(rng % PATHS);
		sum += next(path, 0, 3 + (int)(hash(path, 99) % 6));
	}
	return (void *)sum;
}

static _Atomic int half_way;

static void *run_through_handoff(void *seed)
{
	uintptr_t sum = (uintptr_t)run(seed);
	half_way = 1;
	usleep(200 * 1000);  /* the first thread ends meanwhile */
	sum ^= (uintptr_t)run((void *)((uintptr_t)seed + 1));
	printf("%lu\n", (unsigned long)sum);
	return NULL;
}

static volatile int walked;

static int burn(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	volatile uint64_t *sum = arg;
	for (int i = 0; i < 200000; i++)
		*sum += (uint64_t)i * 2654435761u;
	return 1;
}

static long thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until the paths are walked, and for 300 ms of CPU time at least: the walks may end first
 * (the loader's lock goes to either thread), and a test counts this thread's samples. */
static void *walker(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	while (!walked || thread_cpu_ms() < 300)
		dl_iterate_phdr(burn, &sum);
	return NULL;
}

/* run() from a frame of its own, 256 bytes deeper. */
static __attribute__((noinline)) uintptr_t run_deeper(void *seed)
{
	volatile char pad[256];
	pad[0] = 1;
	uintptr_t sum = (uintptr_t)run(seed);
	return sum + (uintptr_t)pad[0];
}

static _Atomic int sleeper_up;

static void *sleeper(void *arg)
{
	(void)arg;
	sleeper_up = 1;
	pause();  /* the process ends around it */
	return NULL;
}

/* A fork child's end: its pid and its sum printed, exit status 0. */
static void child_done(uintptr_t sum)
{
	printf("child %d %lu\n", (int)getpid(), (unsigned long)sum);
	exit(0);
}

/* 0 if child pid exited with status 0, else 1. */
static int child_ok(pid_t pid)
{
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}

static int walk_then_fork(int with_thread, int raw)
{
	pthread_t t;
	if (with_thread) {
		if (pthread_create(&t, NULL, sleeper, NULL) != 0)
			return 1;
		while (!sleeper_up)
			usleep(1000);
	}
	uintptr_t sum = (uintptr_t)run((void *)88172645463325252ull);
	fflush(stdout);
	pid_t pid = raw ? _Fork() : fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		child_done(sum ^ (uintptr_t)run((void *)0x9e3779b97f4a7c15ull));
	return child_ok(pid);
}

#define SIBLINGS 6

static int siblings(void)
{
	for (int k = 0; k < SIBLINGS; k++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			uintptr_t sum = 0;
			for (unsigned path = 0; path < PATHS; path++)
				sum += next(path, 0, 3 + (int)(hash(path, 99) % 6));
			child_done(sum);
		}
		if (child_ok(pid))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] == 's')
		return siblings();
	if (argc > 1 && (argv[1][0] == 'f' || argv[1][0] == '_'))
		return walk_then_fork(strstr(argv[1], "thread") != NULL, argv[1][0] == '_');
	if (argc > 1 && argv[1][0] == 'u') {
		uintptr_t sum = (uintptr_t)run((void *)88172645463325252ull);
		void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		if (!m || dlclose(m) != 0)
			return 1;
		sum ^= run_deeper((void *)0x9e3779b97f4a7c15ull);
		printf("%lu\n", (unsigned long)sum);
		return 0;
	}
	if (argc > 1 && argv[1][0] == 'l') {
		pthread_t w;
		if (pthread_create(&w, NULL, walker, NULL) != 0)
			return 1;
		uintptr_t sum = (uintptr_t)run((void *)88172645463325252ull);
		walked = 1;
		pthread_join(w, NULL);
		printf("%lu\n", (unsigned long)sum);
		return 0;
	}
	if (argc > 1 && argv[1][0] == 'h') {
		pthread_t t;
		if (pthread_create(&t, NULL, run_through_handoff, (void *)88172645463325252ull) != 0)
			return 1;
		while (!half_way)
			usleep(1000);
		pthread_exit(NULL);  /* the process exits with the last thread, status 0 */
	}
	pthread_t t;
	void *a, *b;
	if (pthread_create(&t, NULL, run, (void *)88172645463325252ull) != 0 ||
	    pthread_join(t, &a) != 0)
		return 1;
	b = run((void *)0x9e3779b97f4a7c15ull);
	printf("%lu\n", (unsigned long)((uintptr_t)a ^ (uintptr_t)b));
	return 0;
}
