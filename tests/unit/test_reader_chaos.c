/* Reader under allocation failure: the n-th allocation fails, for n = 0, 1, 2, ... until a
 * pass runs without reaching the failure. The reader must return NULL or -1 with a message
 * (or succeed), never crash or leak.
 *
 * malloc, calloc and realloc are replaced for this whole test binary: they forward to the
 * real allocator (glibc's, or ASan's under -fsanitize=address) and fail only while the
 * countdown is armed, which is only around the reader calls below, and only on the arming
 * thread. free() is not replaced: the real allocator owns every block. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"
#include "unit/tracegen.h"

#ifdef __SANITIZE_ADDRESS__
void *__interceptor_malloc(size_t n);
void *__interceptor_calloc(size_t n, size_t size);
void *__interceptor_realloc(void *p, size_t n);
#define real_malloc __interceptor_malloc
#define real_calloc __interceptor_calloc
#define real_realloc __interceptor_realloc
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
#define real_malloc __libc_malloc
#define real_calloc __libc_calloc
#define real_realloc __libc_realloc
#endif

static __thread int armed;      /* fail when countdown reaches zero */
static __thread long countdown; /* allocations left before the failing one */
static __thread int hit;        /* the failure happened */

static int should_fail(void)
{
	if (!armed)
		return 0;
	if (countdown-- == 0) {
		hit = 1;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return should_fail() ? NULL : real_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return should_fail() ? NULL : real_realloc(p, n);
}

static char dir[64];
static char path[128];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/chaos.trace", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(reader_chaos, .init = setup, .fini = teardown);

static void build(void)
{
	struct tg *tg = tg_create();
	const char *argv[] = {"a", "b", "c", "d", "e"};
	tg_set_argv(tg, 5, argv);
	for (uint32_t i = 0; i < 600; i++) {
		uint32_t s = (i % 7) * 2;
		tg_alloc(tg, s, i, i, 16, 0);
		if (i % 3 == 0)
			tg_free(tg, s, i, i);
	}
	tg_write(tg, path);
	tg_destroy(tg);
}

/* One open and two passes with the n-th allocation failing. Returns whether the failure was
 * reached. */
static int run_once(long n, uint64_t *records)
{
	char err[512] = "";
	struct trace_event ev;
	int rc = 0;

	hit = 0;
	countdown = n;
	armed = 1;
	struct trace *t = trace_open(path, err, sizeof(err));
	armed = 0;
	if (!t) {
		cr_assert(hit, "n=%ld: open failed without an allocation failure: %s", n, err);
		cr_assert_str_not_empty(err, "n=%ld: NULL without a message", n);
		cr_assert(strstr(err, path) == err, "n=%ld: %s", n, err);
		return 1;
	}
	*records = 0;
	for (int pass = 0; pass < 2; pass++) {
		armed = 1;
		while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1)
			++*records;
		armed = 0;
		if (rc < 0) {
			cr_assert(hit, "n=%ld: -1 without an allocation failure: %s", n, err);
			cr_assert_str_not_empty(err);
			break;
		}
		armed = 1;
		trace_rewind(t);
		armed = 0;
	}
	trace_close(t);
	return hit;
}

Test(reader_chaos, every_allocation_fails_in_turn)
{
	build();
	uint64_t records = 0;
	long n;
	for (n = 0; n < 10000; n++)
		if (!run_once(n, &records))
			break;
	cr_assert_lt(n, 10000, "never ran clean");
	cr_log_info("chaos: clean after %ld failing positions", n);
	cr_assert_gt(n, 0, "trace_open must allocate something");
	cr_assert_eq(records, 2 * (600 + 200));
}
