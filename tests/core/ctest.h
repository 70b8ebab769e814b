/* Criterion, or where Criterion cannot run (under ThreadSanitizer its arena fails to map:
 * Criterion issue #274), a minimal stand-in with the same Test() and cr_* macros: each test
 * runs in a forked child, a failed assert ends it. Built with -DCORE_SHIM by `make tsan`. */
#ifndef PROF_CORE_CTEST_H
#define PROF_CORE_CTEST_H

#ifndef CORE_SHIM
#include <criterion/criterion.h>
#else

void shim_register(const char *name, void (*fn)(void));
void shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void shim_skip(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define TestSuite(...) extern int shim_suite_unused
#define Test(suite, name, ...)                                                      \
	static void suite##_##name(void);                                           \
	__attribute__((constructor)) static void shim_reg_##suite##_##name(void)    \
	{                                                                           \
		shim_register(#suite "::" #name, suite##_##name);                   \
	}                                                                           \
	static void suite##_##name(void)

#define SHIM_CHECK(fatal, cond, expr, ...)                                          \
	do {                                                                        \
		if (!(cond))                                                        \
			shim_fail(fatal, __FILE__, __LINE__, expr, " " __VA_ARGS__); \
	} while (0)

/* A test that cannot run here: says why, and passes. */
#define cr_skip_test(...)                                 \
	do {                                              \
		shim_skip(__FILE__, __LINE__, __VA_ARGS__); \
		return;                                   \
	} while (0)
#define cr_assert(c, ...) SHIM_CHECK(1, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...) SHIM_CHECK(0, (c), #c, __VA_ARGS__)
#define cr_assert_not_null(p, ...) SHIM_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_null(p, ...) SHIM_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) SHIM_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define SHIM_CMP(fatal, a, op, b, ...) SHIM_CHECK(fatal, (a) op (b), #a " " #op " " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) SHIM_CMP(1, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) SHIM_CMP(1, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) SHIM_CMP(1, a, <, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) SHIM_CMP(1, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) SHIM_CMP(1, a, >=, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) SHIM_CMP(1, a, <=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) SHIM_CMP(0, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) SHIM_CMP(0, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) SHIM_CMP(0, a, <, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) SHIM_CMP(0, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) SHIM_CMP(0, a, >=, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) SHIM_CMP(0, a, <=, b, __VA_ARGS__)

#endif
#endif
