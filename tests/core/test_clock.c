/* The trace clock (preload/clock.c): where the TSC serves, times come from clock_gettime
 * while its rate is measured, then from the TSC, with no step back and close to
 * CLOCK_MONOTONIC; the trace's header says which clock it was in the end. */
#include "ctest.h"
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core.h"

TestSuite(clock, .timeout = 60);

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock the trace's header names now, and its TSC rate. */
static uint32_t header_clock(uint64_t *hz)
{
	struct trace *t = core_read(prof_writer_path());
	const struct prof_file_header *h = trace_header(t);
	uint32_t src = h->clock_source;
	*hz = h->tsc_hz;
	trace_close(t);
	return src;
}

Test(clock, the_tsc_takes_over_without_a_step)
{
	unsetenv("PROF_CLOCK");
	core_open(0);  /* prof_clock_init(), once in this process */
	if (!__atomic_load_n(&prof_clock.calibrating, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&prof_clock.tsc, __ATOMIC_RELAXED)) {
		core_close();
		cr_skip_test("no TSC the kernel trusts here: clock_gettime throughout");
	}
	uint64_t header_hz;
	cr_expect_eq(header_clock(&header_hz), PROF_CLOCK_SRC_CLOCK_GETTIME,
		     "before the rate is known");
	uint64_t prev = prof_now(), start = mono();
	while (mono() - start < 5000000) {  /* 5 ms, the switch at 1 ms among them */
		uint64_t t = prof_now();
		cr_assert_geq(t, prev, "a step back: %llu after %llu", (unsigned long long)t,
			      (unsigned long long)prev);
		prev = t;
	}
	cr_assert(__atomic_load_n(&prof_clock.tsc, __ATOMIC_ACQUIRE), "the TSC took over");
	uint64_t hz = prof_clock_tsc_hz();
	cr_expect(hz >= 100000000ull && hz <= 20000000000ull, "rate %llu Hz", (unsigned long long)hz);
	uint64_t a = mono(), t = prof_now(), b = mono();
	cr_expect(t + 20000 >= a && t <= b + 20000, "TSC time %llu, CLOCK_MONOTONIC %llu..%llu",
		  (unsigned long long)t, (unsigned long long)a, (unsigned long long)b);
	cr_expect_eq(header_clock(&header_hz), PROF_CLOCK_SRC_TSC);
	cr_expect_eq(header_hz, hz);
	core_close();
}
