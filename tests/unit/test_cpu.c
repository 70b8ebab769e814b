/* The CPU family on synthetic traces: samples weighed by the CPU time they stand for, blocked
 * time by cause (its own CPU_BLOCKED and the lock, join and I/O records it observes) less the
 * CPU time sampled inside each call, the flame kinds with their cause frames, and which stacks
 * have an exact PC at frame 0. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "process.h"
#include "tracegen.h"

extern const struct family cpu_family;

static char dir[PATH_MAX];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(cpu_analysis, .init = setup, .fini = teardown);

#define T0 TG_START_NS
#define MS 1000000ull
#define PAYLOAD(r) ((const uint8_t *)&(r) + sizeof(struct prof_rec)), (sizeof(r) - sizeof(struct prof_rec))

/* Thread serial 1 writes in stream 2, its samples in stream 3. */
static void sample(struct tg *tg, uint64_t t, uint32_t stack, uint64_t period, unsigned flags)
{
	struct prof_rec_cpu_sample r = { .pc = 0x1000, .period_ns = period, .stack = stack };
	tg_rec(tg, 3, PROF_REC_CPU_SAMPLE, (uint16_t)flags, t, PAYLOAD(r));
}

static void blocked(struct tg *tg, uint64_t end, unsigned op, uint64_t dur, uint32_t stack)
{
	struct prof_rec_cpu_blocked r = { .duration_ns = dur, .stack = stack };
	tg_rec(tg, 2, PROF_REC_CPU_BLOCKED, (uint16_t)op, end, PAYLOAD(r));
}

/* A trace of one thread: 10 ms of samples at 1 ms in stack 1, one of 4 ms (a tick that came
 * late: 1 + 3 overruns) in stack 2 inside libprof, a 30 ms sleep, a 10 ms read with 2 ms of
 * samples inside it, a 5 ms condition wait and a 7 ms join. */
static void load(struct process *p)
{
	struct tg *tg = tg_create();
	tg_header(tg)->cpu_hz = 999;
	const uint64_t f1[] = { 0x1000, 0x2000 }, f2[] = { 0x3000 }, f3[] = { 0x4000, 0x2000 };
	tg_stack(tg, 2, T0, 1, f1, 2);
	tg_stack(tg, 2, T0, 2, f2, 1);
	tg_stack(tg, 2, T0, 3, f3, 2);
	tg_thread_start(tg, 2, T0, 1, 100, ~0u, 0, 0);
	for (int i = 1; i <= 10; i++)
		sample(tg, T0 + (uint64_t)i * MS, 1, MS, 0);
	sample(tg, T0 + 15 * MS, 2, 4 * MS, PROF_SAMPLE_IN_PROF);
	blocked(tg, T0 + 50 * MS, PROF_BLOCK_NANOSLEEP, 30 * MS, 3);
	struct prof_rec_io_call io = { .file = 1, .fd = 3, .result = 10, .duration_ns = 10 * MS, .stack = 3 };
	tg_rec(tg, 2, PROF_REC_IO_CALL, PROF_IO_READ, T0 + 60 * MS, PAYLOAD(io));
	sample(tg, T0 + 65 * MS, 1, MS, 0);
	sample(tg, T0 + 68 * MS, 1, MS, 0);
	struct prof_rec_lock_wait lw = { .lock = 0x77, .wait_ns = 5 * MS, .stack = 3, .kind = PROF_LOCK_COND };
	tg_rec(tg, 2, PROF_REC_LOCK_WAIT, PROF_LOCK_OP_COND_WAIT, T0 + 90 * MS, PAYLOAD(lw));
	struct prof_rec_thread_join j = { .serial = 2, .tid = 101, .wait_ns = 7 * MS, .stack = 3 };
	tg_rec(tg, 2, PROF_REC_THREAD_JOIN, PROF_THREAD_JOIN, T0 + 100 * MS, PAYLOAD(j));
	tg_thread_end(tg, 2, T0 + 110 * MS, 1, 100, 500 * MS, "t");
	tg_exit(tg, 2, T0 + 110 * MS, 0, 0);
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

static long jint(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b)
		v = json_object_get(v, b);
	cr_assert(json_is_integer(v), "%s.%s", a, b ? b : "");
	return (long)json_integer_value(v);
}

Test(cpu_analysis, samples_cpu_time_and_blocked_time_by_cause)
{
	struct process p;
	load(&p);
	json_t *cpu = cpu_family.json(&p, SIZE_MAX);
	cr_expect_eq(jint(cpu, "samples", NULL), 13);
	cr_expect_eq(jint(cpu, "hz", NULL), 999);
	cr_expect_eq(jint(cpu, "cpu_ns", NULL), (long)(16 * MS), "a late tick counts its overruns");
	cr_expect_eq(jint(cpu, "in_libprof", NULL), 1);
	cr_expect_eq(jint(cpu, "blocked", "sleep"), (long)(30 * MS));
	cr_expect_eq(jint(cpu, "blocked", "io"), (long)(8 * MS), "the read less its 2 ms of CPU");
	cr_expect_eq(jint(cpu, "blocked", "cond"), (long)(5 * MS));
	cr_expect_eq(jint(cpu, "blocked", "join"), (long)(7 * MS));
	cr_expect_eq(jint(cpu, "blocked_ns", NULL), (long)(50 * MS));
	json_t *t = json_array_get(json_object_get(cpu, "threads"), 0);
	cr_assert_not_null(t);
	cr_expect_eq(jint(t, "samples", NULL), 13);
	cr_expect_eq(jint(t, "cpu_ns", NULL), (long)(110 * MS),
		     "the clock's 500 ms, cut to the 110 ms the thread lived");
	cr_expect_eq(jint(t, "blocked", "sleep"), (long)(30 * MS));
	json_t *top = json_array_get(json_object_get(cpu, "top"), 0);
	cr_expect_eq(jint(top, "self", NULL), 12, "stack 1's frame 0 holds 12 samples");
	cr_expect_eq(jint(top, "self_ns", NULL), (long)(12 * MS));
	json_decref(cpu);
	/* Frame 0 of a sample's stack is the PC itself, except where libprof was left out. */
	cr_expect(process_stack(&p, 1)->leaf_exact);
	cr_expect_not(process_stack(&p, 2)->leaf_exact);
	cr_expect_not(process_stack(&p, 3)->leaf_exact);
	process_free(&p);
}

struct got {
	uint64_t cpu1, cpu2, leaf_sleep, leaf_io, leaf_other, n;
};

static void collect(void *ctx, uint32_t stack, const char *leaf, uint64_t weight)
{
	struct got *g = ctx;
	g->n++;
	if (!leaf && stack == 1)
		g->cpu1 += weight;
	else if (!leaf && stack == 2)
		g->cpu2 += weight;
	else if (leaf && !strcmp(leaf, "[sleep]"))
		g->leaf_sleep += weight;
	else if (leaf && !strcmp(leaf, "[I/O]"))
		g->leaf_io += weight;
	else
		g->leaf_other += weight;
}

static struct got flame(struct process *p, const char *kind, const char *by)
{
	const struct family *owner;
	const struct flame_kind *k = flame_kind_find(kind, &owner);
	cr_assert_not_null(k, "%s", kind);
	cr_assert_eq(owner, &cpu_family);
	struct got g = { 0 };
	cr_assert_eq(owner->flame_labeled(p, k, by, collect, &g), 0);
	return g;
}

Test(cpu_analysis, flame_kinds_cpu_offcpu_and_wall)
{
	struct process p;
	load(&p);
	struct got g = flame(&p, "cpu", "samples");
	cr_expect_eq(g.cpu1, 12);
	cr_expect_eq(g.cpu2, 1);
	cr_expect_eq(g.leaf_sleep + g.leaf_io + g.leaf_other, 0);
	g = flame(&p, "cpu", "ns");
	cr_expect_eq(g.cpu2, 4 * MS);
	g = flame(&p, "offcpu", "ns");
	cr_expect_eq(g.cpu1 + g.cpu2, 0);
	cr_expect_eq(g.leaf_sleep, 30 * MS);
	cr_expect_eq(g.leaf_io, 8 * MS);
	cr_expect_eq(g.leaf_other, 12 * MS, "the condition wait and the join");
	g = flame(&p, "wall", "ns");
	cr_expect_eq(g.cpu1 + g.cpu2 + g.leaf_sleep + g.leaf_io + g.leaf_other, 66 * MS,
		     "16 ms of CPU and 50 ms blocked");
	process_free(&p);
}

Test(cpu_analysis, records_have_names_and_sizes)
{
	cr_expect_str_eq(prof_rec_type_name(PROF_REC_CPU_SAMPLE), "CPU_SAMPLE");
	cr_expect_str_eq(prof_rec_type_name(PROF_REC_CPU_BLOCKED), "CPU_BLOCKED");
	cr_expect_eq(prof_rec_min_size(PROF_REC_CPU_SAMPLE), 40);
	cr_expect_eq(prof_rec_min_size(PROF_REC_CPU_BLOCKED), 40);
	for (unsigned op = 0; op < PROF_BLOCK_OP_COUNT; op++) {
		cr_expect_str_neq(prof_block_op_name(op), "?", "op %u", op);
		cr_expect_lt(prof_block_op_cause(op), PROF_CAUSE_COUNT);
	}
	for (unsigned c = 0; c < PROF_CAUSE_COUNT; c++)
		cr_expect_str_neq(prof_block_cause_name(c), "?");
	cr_expect_eq(family_of_type(PROF_REC_CPU_SAMPLE), &cpu_family);
	cr_expect_eq(family_observer[PROF_REC_LOCK_WAIT], family_index(&cpu_family) + 1);
	cr_expect_eq(family_observer[PROF_REC_IO_CALL], family_index(&cpu_family) + 1);
	cr_expect_eq(family_observer[PROF_REC_ALLOC], 0);
}

/* An MPI call is blocked time of cause "mpi": 100 ms in MPI_Allreduce, 10 ms of it sampled on
 * the CPU, 30 ms of it in a poll MPI made inside (recorded before the MPI call, as the
 * writer does: the poll ends first): mpi 60 ms, poll 30 ms, nothing counted twice. Without
 * sampling, the same less nothing sampled. */
static void load_mpi(struct process *p, unsigned hz)
{
	struct tg *tg = tg_create();
	tg_header(tg)->cpu_hz = hz;
	const uint64_t f1[] = { 0x1000, 0x2000 };
	tg_stack(tg, 2, T0, 1, f1, 2);
	tg_thread_start(tg, 2, T0, 1, 100, ~0u, 0, 0);
	for (int i = 1; i <= 10 && hz; i++)
		sample(tg, T0 + 10 * MS + (uint64_t)i * MS, 1, MS, 0);
	blocked(tg, T0 + 80 * MS, PROF_BLOCK_POLL, 30 * MS, 1);
	struct prof_rec_mpi_call m = { .duration_ns = 100 * MS, .peer = -1, .stack = 1 };
	tg_rec(tg, 2, PROF_REC_MPI_CALL, PROF_MPI_Allreduce, T0 + 5 * MS, PAYLOAD(m));
	tg_thread_end(tg, 2, T0 + 120 * MS, 1, 100, 20 * MS, "t");
	tg_exit(tg, 2, T0 + 120 * MS, 0, 0);
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

Test(cpu_analysis, mpi_calls_are_blocked_time_counted_once)
{
	for (unsigned hz = 0; hz <= 999; hz += 999) {
		struct process p;
		load_mpi(&p, hz);
		json_t *cpu = cpu_family.json(&p, SIZE_MAX);
		cr_expect_eq(jint(cpu, "blocked", "poll"), (long)(30 * MS), "hz %u", hz);
		cr_expect_eq(jint(cpu, "blocked", "mpi"), (long)((hz ? 60 : 70) * MS), "hz %u", hz);
		json_decref(cpu);
		process_free(&p);
	}
}
