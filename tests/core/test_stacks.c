/* Stack interning (preload/stacks.c) on top of the writer: a stack is written once, a STACK
 * record that could not be written is written once later (not once per lookup), and a full
 * trace costs no unwinding. */
#include "ctest.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

TestSuite(stacks, .timeout = 60);

/* The same call site, so the same stack, each time. */
static __attribute__((noinline)) uint32_t lookup(struct prof_thread *th)
{
	uint32_t id = prof_stack_here(th);
	__asm__ volatile("" ::: "memory");  /* not a tail call: this frame stays on the stack */
	return id;
}

static int count_type(const char *path, unsigned type)
{
	struct trace *t = core_read(path);
	struct trace_event ev;
	char err[512] = "";
	int n = 0, rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1)
		n += ev.rec->type == type;
	cr_assert_eq(rc, 0, "%s", err);
	trace_close(t);
	return n;
}

Test(stacks, one_record_per_distinct_stack)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	uint32_t first = 0;
	for (int i = 0; i < 100; i++) {
		uint32_t id = lookup(th);
		cr_assert_neq(id, 0);
		if (i == 0)
			first = id;
		cr_assert_eq(id, first, "the same stack keeps its id");
	}
	core_thread_end(th);
	cr_expect_eq(count_type(core_close(), PROF_REC_STACK), 1);
}

/* The STACK record is lost (the writer has no trace), then there is a trace again: the next
 * lookup writes the record, and the 99 after it reuse it. */
Test(stacks, lost_stack_record_is_written_once_later)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	prof_writer_close(0);
	prof_writer_forget();
	char path[4096] = "";
	uint32_t ids[2][100];
	for (int round = 0; round < 2; round++) {
		if (round == 1) {  /* a new file; the intern table stays as the loss left it */
			char *argv[] = { "core-test", NULL };
			snprintf(prof_cfg.output, sizeof(prof_cfg.output), "%s/second.trace", core_dir());
			cr_assert_eq(prof_writer_open(0, 1, argv), 0);
			snprintf(path, sizeof(path), "%s", prof_writer_path());
		}
		memset(th->streams, 0, sizeof(th->streams));
		for (int i = 0; i < 100; i++)
			ids[round][i] = lookup(th);  /* one call site: one stack */
	}
	for (int i = 0; i < 100; i++) {
		cr_expect_eq(ids[0][i], 0, "no trace: no stack id");
		cr_expect_neq(ids[1][i], 0);
		cr_expect_eq(ids[1][i], ids[1][0], "the same stack keeps its id");
	}
	core_thread_end(th);
	prof_writer_close(0);
	cr_expect_eq(count_type(path, PROF_REC_STACK), 1, "one STACK record, not one per lookup");
}

/* A full trace: a thread without room gets no stack and claims nothing. */
Test(stacks, full_trace_gives_no_stack_and_claims_nothing)
{
	core_open(4u << 20);
	struct prof_thread *th = core_thread_begin();
	for (uint32_t i = 0; !prof_writer_full(); i++)
		core_alloc(th, (uint64_t)th->serial << 32 | i, 8);
	while (core_alloc(th, 0, 8))  /* use up what this thread holds */
		;
	uint32_t before = count_type(prof_writer_path(), PROF_REC_STACK);
	for (int i = 0; i < 1000; i++)
		cr_expect_eq(lookup(th), 0);
	core_thread_end(th);
	const char *path = core_close();
	cr_expect_eq((uint32_t)count_type(path, PROF_REC_STACK), before);
	struct trace *t = core_read(path);
	cr_expect_geq(trace_header(t)->lost_records, 1);
	trace_close(t);
}

/* More stacks than the intern table's first two levels hold (4096 and 131072 slots): those
 * past them go to the next, where a later lookup finds them; none is written twice. */
Test(stacks, stacks_past_the_first_level_keep_their_ids)
{
	enum { STACKS = 300000 };
	static uint32_t ids[STACKS];
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < STACKS; i++) {
			void *frames[2] = { (void *)(uintptr_t)(0x400000u + i), (void *)(uintptr_t)0x401000u };
			uint32_t id = prof_stack_intern(th, frames, 2);
			cr_assert_neq(id, 0, "stack %u", i);
			if (round == 0)
				ids[i] = id;
			else
				cr_assert_eq(id, ids[i], "stack %u: id %u, then %u", i, ids[i], id);
		}
	}
	core_thread_end(th);
	cr_expect_eq(count_type(core_close(), PROF_REC_STACK), STACKS);
}

/* The stack of the call that called this function. */
static __attribute__((noinline)) uint32_t stack_of_caller(struct prof_thread *th)
{
	uint32_t id = prof_stack_at(th, (uintptr_t)__builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
	return id;
}

static uint32_t depth_of(const char *path, uint32_t id)
{
	struct trace *t = core_read(path);
	struct trace_event ev;
	char err[512] = "";
	uint32_t depth = 0;
	while (trace_next(t, &ev, err, sizeof(err)) == 1)
		if (ev.rec->type == PROF_REC_STACK && ((const struct prof_rec_stack *)ev.rec)->id == id)
			depth = ((const struct prof_rec_stack *)ev.rec)->depth;
	trace_close(t);
	return depth;
}

/* Holds the loader's stand-in from `held` until `done`. */
static pthread_barrier_t held, done;
static void *hold_loader(void *m)
{
	pthread_mutex_lock(m);
	pthread_barrier_wait(&held);
	pthread_barrier_wait(&done);
	pthread_mutex_unlock(m);
	return NULL;
}

/* A thread that holds the loader's lock (inside a dl_iterate_phdr callback) must not unwind
 * with libunwind, which may wait for that lock in another thread holding its own: its stack is
 * the call site alone, counted. Another thread holding it changes nothing (this one may
 * unwind: libunwind then waits for that holder to let go, which needs nothing of ours). */
Test(stacks, holding_the_loader_lock_gives_the_call_site_alone)
{
	static pthread_mutex_t loader;
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&loader, &a);
	prof_loader_lock = &loader;
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	uint32_t free_id = stack_of_caller(th);
	uint64_t before = atomic_load(&prof_loader_stacks);
	pthread_mutex_lock(&loader);
	uint32_t held_id = stack_of_caller(th);
	pthread_mutex_unlock(&loader);
	uint64_t after = atomic_load(&prof_loader_stacks);
	pthread_barrier_init(&held, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_t holder;
	pthread_create(&holder, NULL, hold_loader, &loader);
	pthread_barrier_wait(&held);
	uint32_t other_id = stack_of_caller(th);
	uint64_t other_after = atomic_load(&prof_loader_stacks);
	pthread_barrier_wait(&done);
	pthread_join(holder, NULL);
	core_thread_end(th);
	prof_loader_lock = NULL;
	const char *path = core_close();
	cr_assert(free_id && held_id && other_id && free_id != held_id && other_id != held_id);
	cr_expect_gt(depth_of(path, free_id), 1, "unwound");
	cr_expect_eq(depth_of(path, held_id), 1, "the call site alone");
	cr_expect_gt(depth_of(path, other_id), 1, "unwound while another thread holds it");
	cr_expect_eq(after, before + 1);
	cr_expect_eq(other_after, after);
}
