/* The trace clock: CLOCK_MONOTONIC nanoseconds, read from the TSC where the processor has an
 * invariant one (rdtsc and a multiply instead of clock_gettime()), else by clock_gettime().
 *
 * With the TSC, ticks become ns here, in the writer, not in the analyzer: hooks subtract two
 * prof_now() values for durations, CUPTI's timestamps come from prof_now() (cupti.c), and the
 * analyzer compares record times with start_ns and start_realtime_ns, so every time stays on
 * one clock and no reader converts anything. The rate is measured against CLOCK_MONOTONIC
 * while the program runs its first CALIBRATE_NS (its times meanwhile are clock_gettime's: no
 * process spends its start waiting on a calibration, and a shell script starts hundreds),
 * then the first clock read switches to the TSC (prof_clock_calibrate()). It is re-anchored
 * at the first chunk claim after FIRST_REFINE_NS, then about once a second while chunks are
 * claimed: a new segment starts where the old one is (no jump, no step back) with the rate
 * measured from the first pair to now, whose error shrinks as the run goes on. The offset
 * from CLOCK_MONOTONIC is then what each segment's rate error adds up to: about the jitter of
 * one (TSC, clock_gettime) pair (a few ns) per re-anchor, times the log of their number; more
 * where a process idles between the switch and its first chunk claim after 10 ms, on the
 * first rate (a few ns in 1 ms or more: 1e-6 to 1e-5, at most 0.6 ms after an idle minute).
 * Segments rotate through PROF_CLOCK_SEGS slots, so a reader would have to stall that many
 * seconds between reading the index and its slot to see one rewritten.
 *
 * PROF_CLOCK=auto (default) uses the TSC when CPUID says it is invariant and the kernel's own
 * clocksource is the TSC (so the kernel trusts it across CPUs); PROF_CLOCK=tsc whenever it is
 * invariant; PROF_CLOCK=monotonic never. Neither uses an rdtsc that a hypervisor traps (slower
 * than clock_gettime() would be). */
#include "prof.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALIBRATE_NS 1000000ull       /* clock_gettime for the first 1 ms, while the rate is measured */
#define FIRST_REFINE_NS 10000000ull   /* the first re-anchor, at the first chunk after 10 ms */
#define REFINE_NS 1000000000ull       /* re-anchor about this often */

struct prof_clock prof_clock;

static struct {
	int calibrated;       /* in this process image (a fork child keeps it) */
	int64_t tsc_start;    /* the first calibration pair: the long baseline of the rate */
	uint64_t ns_start;
	uint64_t next_refine; /* trace-clock ns */
	uint64_t hz;
	atomic_flag busy;
} cal = { .busy = ATOMIC_FLAG_INIT };

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static int tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;  /* EDX bit 8: invariant TSC */
}

/* Whether rdtsc costs more than clock_gettime() would (a hypervisor that traps it): then it
 * saves nothing. 64 reads must take under 64 * TRAPPED_NS. */
#define TRAPPED_NS 150u
static int tsc_trapped(void)
{
	uint64_t best = UINT64_MAX;
	for (int round = 0; round < 3; round++) {
		uint64_t n0 = mono_ns();
		for (int i = 0; i < 64; i++)
			(void)__builtin_ia32_rdtsc();
		uint64_t d = mono_ns() - n0;
		best = d < best ? d : best;
	}
	return best > 64u * TRAPPED_NS;
}

/* A (TSC, CLOCK_MONOTONIC) pair read as close together as a few tries allow. */
static void pair(int64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = __builtin_ia32_rdtsc();
		uint64_t n = mono_ns();
		uint64_t t1 = __builtin_ia32_rdtsc();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = (int64_t)(t0 + (t1 - t0) / 2);
			*ns = n;
		}
	}
}
#else
static int tsc_invariant(void)
{
	return 0;
}

static int tsc_trapped(void)
{
	return 1;
}

static void pair(int64_t *tsc, uint64_t *ns)
{
	*tsc = 0;
	*ns = mono_ns();
}
#endif

/* Whether the kernel keeps time with the TSC (it checks it across CPUs and marks it unstable
 * otherwise, switching clocksource). */
static int kernel_uses_tsc(void)
{
	char buf[32];
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && !memcmp(buf, "tsc", 3) && (n == 3 || buf[3] == '\n');
}

static uint64_t ns_per_tick_q32(uint64_t dns, uint64_t dtsc)
{
	return (uint64_t)(((unsigned __int128)dns << 32) / dtsc);
}

/* Decides the clock source and calibrates the TSC, once per process image. */
void prof_clock_init(void)
{
	if (cal.calibrated)
		return;  /* a fork child: the same TSC, the same rate */
	cal.calibrated = 1;
	prof_clock.tsc = 0;
	const char *want = getenv("PROF_CLOCK");
	int force = 0;
	if (want && *want) {
		if (!strcmp(want, "monotonic"))
			return;
		if (!strcmp(want, "tsc"))
			force = 1;
		else if (strcmp(want, "auto"))
			prof_log("PROF_CLOCK=%s: not auto, tsc or monotonic; using auto", want);
	}
	if (!tsc_invariant()) {
		if (force)
			prof_log("PROF_CLOCK=tsc: this processor has no invariant TSC; using "
				 "clock_gettime");
		return;
	}
	if (!force && !kernel_uses_tsc())
		return;
	if (tsc_trapped()) {
		prof_dbg(1, "rdtsc is slow here (trapped by a hypervisor?); using clock_gettime");
		return;
	}
	pair(&cal.tsc_start, &cal.ns_start);
	__atomic_store_n(&prof_clock.calibrating, 1, __ATOMIC_RELEASE);
}

/* The first clock read CALIBRATE_NS after prof_clock_init() measures the rate and switches
 * to the TSC: a new segment begins at the pair taken here, so the times go on from those of
 * clock_gettime without a step. Async-signal-safe (a CPU sample may be the one). */
void prof_clock_calibrate(uint64_t now)
{
	if (now - cal.ns_start < CALIBRATE_NS ||
	    atomic_flag_test_and_set_explicit(&cal.busy, memory_order_acquire))
		return;
	if (__atomic_load_n(&prof_clock.calibrating, __ATOMIC_RELAXED)) {
		int64_t t1;
		uint64_t n1;
		pair(&t1, &n1);
		uint64_t dt = (uint64_t)(t1 - cal.tsc_start), dn = n1 - cal.ns_start;
		uint64_t hz = t1 > cal.tsc_start ?
			(uint64_t)(((unsigned __int128)dt * 1000000000u) / dn) : 0;
		if (hz >= 100000000ull && hz <= 20000000000ull) {  /* else clock_gettime stays */
			cal.hz = hz;
			cal.next_refine = n1 + FIRST_REFINE_NS;  /* a first re-anchor soon */
			prof_clock.seg[0] = (struct prof_clock_seg){ .tsc0 = t1, .ns0 = n1,
								     .mult = ns_per_tick_q32(dn, dt) };
			atomic_store_explicit(&prof_clock.cur, 0, memory_order_release);
			__atomic_store_n(&prof_clock.tsc, 1, __ATOMIC_RELEASE);
			prof_writer_clock_changed();
		}
		__atomic_store_n(&prof_clock.calibrating, 0, __ATOMIC_RELAXED);
	}
	atomic_flag_clear_explicit(&cal.busy, memory_order_release);
}

uint64_t prof_clock_tsc_hz(void)
{
	return __atomic_load_n(&prof_clock.tsc, __ATOMIC_ACQUIRE) ? cal.hz : 0;
}

/* Re-anchors the TSC clock if a second has passed: the new segment begins where the current
 * one is now, with the long-run rate (from the first calibration pair to now). One thread at a
 * time; never waits. Not from a signal handler. */
void prof_clock_refine(void)
{
	if (!__atomic_load_n(&prof_clock.tsc, __ATOMIC_ACQUIRE) || prof_now() < __atomic_load_n(&cal.next_refine, __ATOMIC_RELAXED))
		return;
	if (atomic_flag_test_and_set_explicit(&cal.busy, memory_order_acquire))
		return;
	int64_t t;
	uint64_t n;
	pair(&t, &n);
	uint32_t cur = atomic_load_explicit(&prof_clock.cur, memory_order_relaxed);
	const struct prof_clock_seg *s = &prof_clock.seg[cur % PROF_CLOCK_SEGS];
	uint64_t conv = prof_clock_convert(s, t);
	if (t > cal.tsc_start && n > cal.ns_start) {
		uint64_t mult = ns_per_tick_q32(n - cal.ns_start, (uint64_t)(t - cal.tsc_start));
		struct prof_clock_seg *next = &prof_clock.seg[(cur + 1) % PROF_CLOCK_SEGS];
		*next = (struct prof_clock_seg){ .tsc0 = t, .ns0 = conv, .mult = mult };
		atomic_store_explicit(&prof_clock.cur, cur + 1, memory_order_release);
	}
	__atomic_store_n(&cal.next_refine, n + REFINE_NS, __ATOMIC_RELAXED);
	atomic_flag_clear_explicit(&cal.busy, memory_order_release);
}
