/* Lock and thread analysis on synthetic traces: waits and snapshots merged, sorting, lost
 * records, condition variables, thread names, joins and blocked time, flame weights, and the
 * reader's checks of the family's records. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "locks.h"
#include "process.h"
#include "trace.h"
#include "tracegen.h"

static char dir[PATH_MAX];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(lock_analysis, .init = setup, .fini = teardown);

#define T0 TG_START_NS
#define PAYLOAD(r) ((const uint8_t *)&(r) + sizeof(struct prof_rec)), (sizeof(r) - sizeof(struct prof_rec))

static void wait_rec(struct tg *tg, uint32_t stream, uint64_t t, uint64_t lock, unsigned kind,
		     unsigned op, uint64_t wait_ns, uint32_t stack, int result)
{
	struct prof_rec_lock_wait r = { .lock = lock, .wait_ns = wait_ns, .stack = stack,
					.kind = (uint16_t)kind, .result = (int16_t)result };
	tg_rec(tg, stream, PROF_REC_LOCK_WAIT, (uint16_t)op, t, PAYLOAD(r));
}

static void stats_rec_flags(struct tg *tg, uint32_t stream, uint64_t t, uint64_t lock,
			    unsigned kind, uint64_t acq, uint64_t contended, uint64_t wait_ns,
			    uint64_t hold_ns, uint64_t changes, uint32_t first_stack, unsigned flags)
{
	struct prof_rec_lock_stats r = { .lock = lock, .acquisitions = acq, .contended = contended,
					 .wait_ns = wait_ns, .max_wait_ns = contended ? wait_ns / contended : 0,
					 .hold_ns = hold_ns,
					 .max_hold_ns = hold_ns / (acq ? acq : 1), .holds_timed = acq,
					 .owner_changes = changes, .first_stack = first_stack,
					 .kind = (uint16_t)kind, .hold_sample = 64 };
	tg_rec(tg, stream, PROF_REC_LOCK_STATS, (uint16_t)flags, t, PAYLOAD(r));
}

static void stats_rec(struct tg *tg, uint32_t stream, uint64_t t, uint64_t lock, unsigned kind,
		      uint64_t acq, uint64_t contended, uint64_t wait_ns, uint64_t hold_ns,
		      uint64_t changes, uint32_t first_stack)
{
	stats_rec_flags(tg, stream, t, lock, kind, acq, contended, wait_ns, hold_ns, changes,
			first_stack, 0);
}

static void name_rec(struct tg *tg, uint32_t stream, uint64_t t, uint32_t serial, const char *name)
{
	uint8_t buf[64] = { 0 };
	memcpy(buf, &serial, 4);
	memcpy(buf + 8, name, strlen(name) + 1);
	tg_rec(tg, stream, PROF_REC_THREAD_NAME, 0, t, buf, 8 + strlen(name) + 1);
}

static void load(struct tg *tg, struct process *p)
{
	char err[512];
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

/* The trace tg loaded into p, and its locks sorted (*n of them). */
static struct lock_summary *sorted_locks(struct tg *tg, struct process *p, size_t *n)
{
	load(tg, p);
	return locks_sorted(p, n);
}

/* Two threads, serials 1 (stream 2) and 2 (stream 4). */
static struct tg *two_threads(void)
{
	struct tg *tg = tg_create();
	tg_thread_start(tg, 2, T0 + 1, 1, 100, ~0u, 0, 0);
	tg_thread_start(tg, 4, T0 + 2, 2, 101, 1, 0, 0x1234);
	return tg;
}

Test(lock_analysis, waits_and_latest_snapshot_are_merged)
{
	struct tg *tg = two_threads();
	stats_rec(tg, 2, T0 + 10, 0xa000, PROF_LOCK_MUTEX, 1, 0, 0, 0, 0, 7);
	wait_rec(tg, 4, T0 + 20, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 500, 8, 0);
	wait_rec(tg, 2, T0 + 30, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 1500, 9, 0);
	stats_rec(tg, 4, T0 + 40, 0xa000, PROF_LOCK_MUTEX, 100, 2, 2000, 9000, 5, 7);
	/* an older snapshot merged later (another stream) must not win */
	stats_rec(tg, 2, T0 + 50, 0xa000, PROF_LOCK_MUTEX, 64, 1, 500, 10, 3, 7);
	tg_exit(tg, 2, T0 + 60, 0, 0);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(v[0].kind, "mutex");
	cr_expect_eq(v[0].acquisitions, 100);
	cr_expect_eq(v[0].contended, 2);
	cr_expect_eq(v[0].wait_ns, 2000);
	cr_expect_eq(v[0].avg_wait_ns, 1000);
	cr_expect_eq(v[0].max_wait_ns, 1500);
	cr_expect_eq(v[0].hold_ns, 9000);
	cr_expect_eq(v[0].avg_hold_ns, 90);
	cr_expect_eq(v[0].owner_changes, 5);
	cr_expect_eq(v[0].stack, 8, "first contended stack, not first used");
	cr_expect(v[0].stack_contended);
	free(v);
	struct thread_info *t1 = process_thread(&p, 1), *t2 = process_thread(&p, 2);
	cr_expect_eq(t1->lock_wait_ns, 1500);
	cr_expect_eq(t2->lock_wait_ns, 500);
	cr_expect_eq(t2->start_routine, 0x1234);
	process_free(&p);
}

Test(lock_analysis, sorted_by_wait_then_acquisitions)
{
	struct tg *tg = two_threads();
	stats_rec(tg, 2, T0 + 10, 0x1000, PROF_LOCK_MUTEX, 10, 0, 0, 0, 0, 1);
	stats_rec(tg, 2, T0 + 11, 0x2000, PROF_LOCK_SPIN, 50, 0, 0, 0, 0, 2);
	stats_rec(tg, 2, T0 + 12, 0x3000, PROF_LOCK_RWLOCK, 5, 1, 10, 0, 0, 3);
	wait_rec(tg, 2, T0 + 13, 0x3000, PROF_LOCK_RWLOCK, PROF_LOCK_OP_WRLOCK, 10, 4, 0);
	wait_rec(tg, 4, T0 + 14, 0x4000, PROF_LOCK_SEM, PROF_LOCK_OP_SEM_WAIT, 99, 5, 0);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 4);
	cr_expect_eq(v[0].addr, 0x4000);
	cr_expect_eq(v[1].addr, 0x3000);
	cr_expect_eq(v[2].addr, 0x2000);
	cr_expect_eq(v[3].addr, 0x1000);
	cr_expect_str_eq(v[0].kind, "sem");
	/* no snapshot (killed before the first): the waits that acquired are acquisitions */
	cr_expect_eq(v[0].acquisitions, 1);
	cr_expect_str_eq(v[2].kind, "spin");
	cr_expect_eq(v[2].contended, 0);
	cr_expect_eq(v[2].stack, 2);
	cr_expect(!v[2].stack_contended);
	free(v);
	cr_expect(!p.complete);
	process_free(&p);
}

/* After a lock's last snapshot (destroyed), its address names a new lock: two rows, each with
 * its own counts, waits and stack. */
Test(lock_analysis, a_last_snapshot_ends_the_lock_at_its_address)
{
	struct tg *tg = two_threads();
	stats_rec(tg, 2, T0 + 10, 0xa000, PROF_LOCK_MUTEX, 1, 0, 0, 0, 0, 7);
	wait_rec(tg, 4, T0 + 20, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 500, 8, 0);
	stats_rec_flags(tg, 2, T0 + 30, 0xa000, PROF_LOCK_MUTEX, 2, 1, 500, 60, 1, 7,
			PROF_LOCK_STATS_LAST);
	stats_rec(tg, 4, T0 + 40, 0xa000, PROF_LOCK_SEM, 1, 0, 0, 0, 0, 9);
	stats_rec(tg, 4, T0 + 50, 0xa000, PROF_LOCK_SEM, 1000, 0, 0, 0, 0, 9);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 2);
	cr_expect_eq(v[0].addr, 0xa000);
	cr_expect_str_eq(v[0].kind, "mutex");
	cr_expect_eq(v[0].acquisitions, 2);
	cr_expect_eq(v[0].contended, 1);
	cr_expect_eq(v[0].stack, 8);
	cr_expect_eq(v[1].addr, 0xa000);
	cr_expect_str_eq(v[1].kind, "sem");
	cr_expect_eq(v[1].acquisitions, 1000);
	cr_expect_eq(v[1].contended, 0);
	cr_expect_eq(v[1].stack, 9);
	free(v);
	process_free(&p);
}

Test(lock_analysis, lost_wait_records_fall_back_to_counters)
{
	struct tg *tg = two_threads();
	wait_rec(tg, 2, T0 + 10, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 100, 1, 0);
	stats_rec(tg, 2, T0 + 20, 0xa000, PROF_LOCK_MUTEX, 1000, 40, 7000, 0, 0, 1);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(v[0].contended, 40);
	cr_expect_eq(v[0].wait_ns, 7000);
	free(v);
	process_free(&p);
}

Test(lock_analysis, cond_waits_timeouts_names_and_joins)
{
	struct tg *tg = two_threads();
	wait_rec(tg, 4, T0 + 10, 0xc000, PROF_LOCK_COND, PROF_LOCK_OP_COND_WAIT, 3000, 1, 0);
	wait_rec(tg, 4, T0 + 11, 0xc000, PROF_LOCK_COND, PROF_LOCK_OP_COND_TIMEDWAIT, 4000, 1, 110);
	name_rec(tg, 2, T0 + 12, 2, "worker-7");
	struct prof_rec_thread_join j = { .serial = 2, .tid = 101, .wait_ns = 777 };
	tg_thread_end(tg, 4, T0 + 13, 2, 101, 555, "worker-7");
	tg_rec(tg, 2, PROF_REC_THREAD_JOIN, PROF_THREAD_JOIN, T0 + 14, PAYLOAD(j));
	tg_exit(tg, 2, T0 + 15, 0, 0);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(v[0].kind, "cond");
	cr_expect_eq(v[0].contended, 2);
	cr_expect_eq(v[0].timeouts, 1);
	cr_expect_eq(v[0].wait_ns, 7000);
	cr_expect_eq(v[0].acquisitions, 2, "each wait acquires: never fewer than contended");
	free(v);
	struct thread_info *t1 = process_thread(&p, 1), *t2 = process_thread(&p, 2);
	cr_expect_eq(t2->cond_wait_ns, 7000);
	cr_expect_eq(t2->lock_wait_ns, 0);
	cr_expect_str_eq(t2->name, "worker-7");
	cr_expect_eq(t2->parent_serial, 1);
	cr_expect_eq(t1->join_wait_ns, 777);
	cr_expect_eq(locks_of(&p)->joins, 1);
	process_free(&p);
}

/* Python's GIL: a snapshot counting fewer acquisitions than the waits recorded. */
Test(lock_analysis, cond_rows_never_show_more_contended_than_acquired)
{
	struct tg *tg = two_threads();
	stats_rec(tg, 2, T0 + 5, 0xd000, PROF_LOCK_COND, 2, 0, 0, 0, 0, 3);
	for (int i = 0; i < 5; i++)
		wait_rec(tg, 4, T0 + 10 + i, 0xd000, PROF_LOCK_COND, PROF_LOCK_OP_COND_TIMEDWAIT, 100, 1,
			 i % 2 ? 110 : 0);
	tg_exit(tg, 2, T0 + 20, 0, 0);
	struct process p;
	size_t n;
	struct lock_summary *v = sorted_locks(tg, &p, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(v[0].contended, 5);
	cr_expect_geq(v[0].acquisitions, v[0].contended);
	free(v);
	process_free(&p);
}

Test(lock_analysis, thread_cpu_time_fits_in_its_life)
{
	struct tg *tg = two_threads();
	tg_thread_end(tg, 4, T0 + 1002, 2, 101, 5000, "short");
	tg_thread_end(tg, 2, T0 + 3001, 1, 100, 700, "main");
	tg_exit(tg, 2, T0 + 3002, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_eq(process_thread(&p, 2)->cpu_ns, 1000, "5000 ns of CPU in 1000 ns of life");
	cr_expect_eq(process_thread(&p, 1)->cpu_ns, 700);
	process_free(&p);
}

static uint64_t flame_total;
static int flame_calls;

static void emit(void *ctx, uint32_t stack, uint64_t weight)
{
	(void)ctx;
	(void)stack;
	flame_total += weight;
	flame_calls++;
}

Test(lock_analysis, flame_weights_are_wait_ns_per_stack)
{
	struct tg *tg = two_threads();
	wait_rec(tg, 2, T0 + 10, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 100, 1, 0);
	wait_rec(tg, 4, T0 + 11, 0xa000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 200, 1, 0);
	wait_rec(tg, 4, T0 + 12, 0xb000, PROF_LOCK_MUTEX, PROF_LOCK_OP_LOCK, 50, 2, 0);
	struct process p;
	load(tg, &p);
	flame_total = 0;
	flame_calls = 0;
	cr_assert_eq(locks_flame(&p, "wait", emit, NULL), 0);
	cr_expect_eq(flame_total, 350);
	cr_expect_eq(flame_calls, 2);
	/* The family offers one weight, wait time: prof flame refuses any other --by. */
	const struct family *owner = NULL;
	const struct flame_kind *k = flame_kind_find("lock", &owner);
	cr_assert_not_null(k);
	cr_expect_eq(owner, &locks_family);
	cr_expect_str_eq(k->weights[0].by, "wait");
	cr_expect_null(k->weights[1].by);
	json_t *j = locks_json(&p, 1);
	cr_expect_eq(json_array_size(j), 1);
	json_t *l = json_array_get(j, 0);
	cr_expect_str_eq(json_string_value(json_object_get(l, "address")), "0xa000");
	cr_expect_eq(json_integer_value(json_object_get(l, "wait_ns")), 300);
	cr_expect(json_is_array(json_object_get(l, "stack")));
	json_decref(j);
	process_free(&p);
}

/* THREAD_NAME ends in a string: the reader refuses one whose NUL is missing. */
Test(lock_analysis, thread_name_without_nul_is_rejected)
{
	struct tg *tg = two_threads();
	uint8_t buf[16];
	memset(buf, 'x', sizeof(buf));
	memset(buf, 0, 8);
	tg_rec(tg, 2, PROF_REC_THREAD_NAME, 0, T0 + 5, buf, sizeof(buf));
	char err[512];
	struct process p;
	cr_expect_eq(tg_load(tg, dir, &p, err, sizeof(err)), -1);
	cr_expect_not_null(strstr(err, "name"), "%s", err);
	process_free(&p);
}

/* A LOCK_WAIT shorter than its fixed payload is refused like any known record. */
Test(lock_analysis, short_lock_record_is_rejected)
{
	struct tg *tg = two_threads();
	uint8_t buf[8] = { 0 };
	tg_rec(tg, 2, PROF_REC_LOCK_STATS, 0, T0 + 5, buf, sizeof(buf));
	char err[512];
	struct process p;
	cr_expect_eq(tg_load(tg, dir, &p, err, sizeof(err)), -1);
	process_free(&p);
}
