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

/* Whatever order the values come in (mostly rising, many per bucket, now and then an earlier
 * time), each bucket ends with the largest value whose time falls in it at the final width:
 * the bucket kept for the next value must never outlive a merge or take a value not its own. */
Test(series, each_bucket_holds_the_largest_of_its_values)
{
	static struct series s;
	enum { N = 200000 };
	static uint64_t ts[N], vs[N];
	uint64_t x = 88172645463325252ull, t = 0;
	for (size_t i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		t += x % 5000;                                    /* several values per bucket */
		ts[i] = x % 97 == 0 && t > 100000 ? t - x % 100000 : t;  /* and some from before */
		vs[i] = x >> 40;
		series_add(&s, ts[i], vs[i]);
	}
	static uint64_t want[SERIES_POINTS];
	static uint8_t seen[SERIES_POINTS];
	for (size_t i = 0; i < N; i++) {
		size_t b = (size_t)(ts[i] / s.width);
		cr_assert_lt(b, SERIES_POINTS);
		if (!seen[b] || vs[i] > want[b])
			want[b] = vs[i];
		seen[b] = 1;
	}
	for (size_t b = 0; b < SERIES_POINTS; b++) {
		cr_expect_eq(s.set[b], seen[b], "bucket %zu", b);
		if (seen[b])
			cr_expect_eq(s.max[b], want[b], "bucket %zu", b);
	}
	cr_expect_eq(s.values, N);
}
