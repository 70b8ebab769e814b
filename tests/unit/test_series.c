/* series.c: a value over time in bounded memory, peaks kept. */
#include <criterion/criterion.h>

#include "series.h"

Test(series, stays_bounded_and_keeps_the_peak)
{
	static struct series s;
	uint64_t peak_at = 7777777777u;  /* ns */
	for (uint64_t t = 0; t < 20000000000u; t += 1000003) {
		uint64_t v = t / 1000;
		series_add(&s, t, t == 7777777777u - 7777777777u % 1000003 ? 1u << 30 : v);
		if (t <= peak_at && t + 1000003 > peak_at)
			peak_at = t;
	}
	cr_expect_leq(s.n, SERIES_POINTS);
	cr_expect_gt(s.n, SERIES_POINTS / 2, "most points in use");
	uint64_t top = 0;
	size_t at = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.set[i] && s.max[i] > top) {
			top = s.max[i];
			at = i;
		}
	cr_expect_eq(top, 1u << 30, "the peak survives every merge");
	cr_expect_eq(at, (size_t)(peak_at / s.width));
	cr_expect_eq(s.values, (20000000000u + 1000002) / 1000003);
}
