/* The stand-in runner of ctest.h (built only with -DCORE_SHIM): runs each registered test in
 * a forked child and reports like Criterion's synthesis line. */
#ifdef CORE_SHIM
#include "ctest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 64
static struct {
	const char *name;
	void (*fn)(void);
} tests[MAX_TESTS];
static int ntests, failed_here;

void shim_register(const char *name, void (*fn)(void))
{
	if (ntests < MAX_TESTS)
		tests[ntests++] = (typeof(tests[0])){ name, fn };
}

void shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[----] %s:%d: %s is false", file, line, expr);
	if (fmt[1]) {  /* ctest.h puts a space before the message, so it is never empty */
		fprintf(stderr, ":");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	failed_here = 1;
	if (fatal)
		exit(1);
}

void shim_skip(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[SKIP] %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(void)
{
	int failing = 0;
	for (int i = 0; i < ntests; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			tests[i].fn();
			exit(failed_here);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		int ok = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		fprintf(stderr, "[%s] %s\n", ok ? "PASS" : "FAIL", tests[i].name);
		failing += !ok;
	}
	fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d\n", ntests,
		ntests - failing, failing);
	return failing != 0;
}
#endif
