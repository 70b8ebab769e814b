// stack_paths: allocations from call paths that make a stack cache go wrong if it can: the same
// call site at the same stack depth from different callers, recursion, alloca'd frames,
// longjmp and exceptions out of deep calls, a signal handler (on the thread's stack and on an
// alternate one), swapcontext coroutines whose stacks are freed and reused, and threads.
// Deterministic: the same allocations from the same stacks on every run. `stack_paths
// siblings` runs it all in each of 5 fork children, one after another.
#include <alloca.h>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <stdexcept>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile long sink;

NOINLINE static void leaf(size_t size)
{
	void *p = malloc(size);
	sink += (long)(size_t)p & 1;
	free(p);
}

NOINLINE static void via_a(size_t size) { leaf(size); sink++; }
NOINLINE static void via_b(size_t size) { leaf(size + 1); sink++; }

NOINLINE static void recurse(int depth, size_t size)
{
	leaf(size + (size_t)depth);
	if (depth > 0)
		recurse(depth - 1, size);
	sink++;
}

NOINLINE static void with_alloca(int n)
{
	char *buf = (char *)alloca((size_t)n * 48 + 16);
	memset(buf, n, 16);
	leaf(200 + (size_t)n);
	sink += buf[3];
}

static thread_local jmp_buf jump;
static volatile int jump_armed = 1;

NOINLINE static void jump_out(int depth)
{
	leaf(300 + (size_t)depth);
	if (depth == 0 && jump_armed)
		longjmp(jump, 1);
	if (depth > 0)
		jump_out(depth - 1);
	sink++;
}

NOINLINE static void throw_out(int depth)
{
	leaf(400 + (size_t)depth);
	if (depth == 0 && jump_armed)
		throw std::runtime_error("out");
	if (depth > 0)
		throw_out(depth - 1);
	sink++;
}

static void on_signal(int sig)
{
	via_a(500 + (size_t)sig);
	recurse(2, 510);
}

static ucontext_t main_ctx, co_ctx;

NOINLINE static void co_body_a(void)
{
	for (int i = 0; i < 3; i++) {
		via_a(600);
		recurse(i, 610);
		swapcontext(&co_ctx, &main_ctx);
	}
}

NOINLINE static void co_body_b(void)
{
	for (int i = 0; i < 3; i++) {
		via_b(600);
		recurse(i + 1, 610);
		swapcontext(&co_ctx, &main_ctx);
	}
}

/* Runs body as a coroutine on a stack of its own, freed at the end: the next one reuses it. */
static void coroutine(void (*body)(void))
{
	size_t size = 64 * 1024;
	char *stack = (char *)malloc(size);
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, body, 0);
	for (int i = 0; i < 4; i++)
		swapcontext(&main_ctx, &co_ctx);
	free(stack);
}

static void everything(int round)
{
	for (int i = 0; i < 4; i++) {
		via_a(100);
		via_b(100);
		recurse(i + round % 3, 120);
		with_alloca(i + round % 2);
		if (!setjmp(jump))
			jump_out(i + 1);
		try {
			throw_out(i + 2);
		} catch (const std::exception &e) {
			leaf(450 + strlen(e.what()));
		}
	}
}

static void *thread_main(void *arg)
{
	for (int round = 0; round < 20; round++)
		everything(round + (int)(long)arg);
	return NULL;
}

static int run_all(void)
{
	signal(SIGUSR1, on_signal);
	stack_t alt;
	alt.ss_sp = malloc(64 * 1024);
	alt.ss_size = 64 * 1024;
	alt.ss_flags = 0;
	sigaltstack(&alt, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t threads[3];
	for (long t = 0; t < 3; t++)
		pthread_create(&threads[t], NULL, thread_main, (void *)t);
	for (int round = 0; round < 20; round++) {
		everything(round);
		raise(round % 2 ? SIGUSR1 : SIGUSR2);
		coroutine(round % 2 ? co_body_a : co_body_b);
	}
	for (int t = 0; t < 3; t++)
		pthread_join(threads[t], NULL);
	return 0;
}

// `stack_paths siblings`: all of it in each of 5 fork children made one after another, as a
// shell's subshells run the same code: the family shares its stacks (a book).
int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "siblings"))
		return run_all();
	for (int k = 0; k < 5; k++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			exit(run_all());
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
