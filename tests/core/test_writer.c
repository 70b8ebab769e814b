/* The trace writer at work and at its limits: many threads claiming chunks at once, the size
 * limit reached in the middle of a burst, threads that come and go; each trace read back. */
#include "ctest.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"

TestSuite(writer, .timeout = 120);

#define MAX_SERIAL 4096

/* What a reader pass found: records per thread serial, in order. */
struct readback {
	uint64_t allocs, stacks, lost_in_records, next[MAX_SERIAL];
	uint32_t tid[MAX_SERIAL];
	uint64_t chunks_claimed, lost_in_header, file_size;
	uint32_t cpu_hz;
};

/* Reads the whole trace: ALLOC ptr is serial << 32 | i with i increasing in its stream (by
 * one where nothing may be lost); the stream is the serial's, the tid the thread's. */
static void read_back(const char *path, struct readback *rb, int lossless)
{
	memset(rb, 0, sizeof(*rb));
	struct trace *t = core_read(path);
	const struct prof_file_header *h = trace_header(t);
	rb->chunks_claimed = h->chunks_claimed;
	rb->lost_in_header = h->lost_records;
	rb->cpu_hz = h->cpu_hz;
	struct trace_event ev;
	char err[512] = "";
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		const struct prof_rec *r = ev.rec;
		if (r->type == PROF_REC_LOST) {
			rb->lost_in_records += ((const struct prof_rec_lost *)r)->records;
		} else if (r->type == PROF_REC_STACK) {
			rb->stacks++;
		} else if (r->type == PROF_REC_ALLOC) {
			const struct prof_rec_alloc *a = (const void *)r;
			uint32_t serial = (uint32_t)(a->ptr >> 32), i = (uint32_t)a->ptr;
			cr_assert_lt(serial, MAX_SERIAL);
			cr_assert_eq(ev.stream, serial * 2, "record of serial %u in stream %u", serial,
				     ev.stream);
			if (rb->tid[serial])
				cr_assert_eq(ev.tid, rb->tid[serial], "one thread, one tid");
			rb->tid[serial] = ev.tid;
			if (lossless)
				cr_assert_eq(i, rb->next[serial], "serial %u: record %u, expected %" PRIu64,
					     serial, i, rb->next[serial]);
			else
				cr_assert_geq(i, rb->next[serial], "serial %u: record %u out of order",
					      serial, i);
			rb->next[serial] = (uint64_t)i + 1;
			rb->allocs++;
		}
	}
	cr_assert_eq(rc, 0, "reader error: %s", err);
	trace_close(t);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	rb->file_size = (uint64_t)st.st_size;
}

struct worker {
	pthread_t thread;
	pthread_barrier_t *start;
	uint32_t records;       /* to try */
	uint32_t big_every;     /* 0, or a STACK record of 200 frames every that many */
	uint32_t serial, tid;
	uint64_t written, lost; /* ALLOC and STACK records alike */
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct prof_thread *th = core_thread_begin();
	wk->serial = th->serial;
	wk->tid = th->tid;
	if (wk->start)
		pthread_barrier_wait(wk->start);
	for (uint32_t i = 0; i < wk->records; i++) {
		int ok = core_alloc(th, (uint64_t)th->serial << 32 | i, i);
		wk->written += ok;
		wk->lost += !ok;
		if (wk->big_every && i % wk->big_every == 0) {
			ok = core_stack_record(th, i + 1, 200);
			wk->written += ok;
			wk->lost += !ok;
		}
	}
	core_thread_end(th);
	return NULL;
}

static void run_workers(struct worker *wk, int n, int together)
{
	pthread_barrier_t start;
	if (together)
		pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		wk[i].start = together ? &start : NULL;
		cr_assert_eq(pthread_create(&wk[i].thread, NULL, worker_main, &wk[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(wk[i].thread, NULL);
	if (together)
		pthread_barrier_destroy(&start);
}

Test(writer, many_threads_claim_chunks_at_once)
{
	core_open(0);
	enum { THREADS = 8, RECORDS = 30000 };
	struct worker wk[THREADS];
	memset(wk, 0, sizeof(wk));
	for (int i = 0; i < THREADS; i++)
		wk[i].records = RECORDS;
	run_workers(wk, THREADS, 1);
	const char *path = core_close();
	struct readback *rb = calloc(1, sizeof(*rb));
	read_back(path, rb, 1);
	cr_expect_eq(rb->allocs, (uint64_t)THREADS * RECORDS);
	for (int i = 0; i < THREADS; i++) {
		cr_expect_eq(rb->next[wk[i].serial], RECORDS, "thread %d lost records", i);
		cr_expect_eq(rb->tid[wk[i].serial], wk[i].tid);
	}
	cr_expect_eq(rb->lost_in_header, 0);
	cr_expect_eq(rb->lost_in_records, 0);
	cr_expect_eq(rb->cpu_hz, 0, "no CPU sampling: cpu_hz must be 0");
	/* Runs of up to 64 KiB: the chunks claimed are the ones used, give or take a run each. */
	uint64_t need = (uint64_t)THREADS * RECORDS * sizeof(struct prof_rec_alloc) /
			(PROF_DEFAULT_CHUNK_SIZE - 64);
	cr_expect_leq(rb->chunks_claimed, need + THREADS * 16 + 2, "%" PRIu64 " chunks for %" PRIu64,
		      rb->chunks_claimed, need);
	cr_expect_eq(core_log_count(), 0, "no warning: %s", core_log_last());
	free(rb);
}

/* The smallest size limit (4 MiB), reached while four threads write records of 40 and 1624
 * bytes: every record is either in the trace or counted in header.lost_records, exactly; the
 * file stays within the limit; one warning says so. */
Test(writer, size_limit_reached_mid_record)
{
	core_open(4u << 20);
	enum { THREADS = 4, RECORDS = 40000 };
	struct worker wk[THREADS];
	memset(wk, 0, sizeof(wk));
	for (int i = 0; i < THREADS; i++) {
		wk[i].records = RECORDS;
		wk[i].big_every = 7;
	}
	run_workers(wk, THREADS, 1);
	cr_expect(prof_writer_full(), "the trace must know it is full");
	/* Full: a new thread gets no chunk, and its losses are counted too. */
	struct worker late = { .records = 10 };
	run_workers(&late, 1, 0);
	cr_expect_eq(late.lost, 10);
	const char *path = core_close();
	uint64_t written = 0, lost = 0;
	for (int i = 0; i < THREADS; i++) {
		written += wk[i].written;
		lost += wk[i].lost;
	}
	lost += late.lost;
	cr_assert_gt(lost, 0, "4 MiB cannot hold %d records", THREADS * RECORDS);
	struct readback *rb = calloc(1, sizeof(*rb));
	read_back(path, rb, 0);
	cr_expect_eq(rb->allocs + rb->stacks, written, "records in the trace: %" PRIu64 " + %" PRIu64
		     ", written %" PRIu64, rb->allocs, rb->stacks, written);
	cr_expect_eq(rb->lost_in_header, lost, "header.lost_records %" PRIu64 ", lost %" PRIu64,
		     rb->lost_in_header, lost);
	cr_expect_leq(rb->lost_in_records, lost);
	cr_expect_leq(rb->file_size, 4u << 20);
	cr_expect_eq(core_log_count(), 1, "one warning, got %d", core_log_count());
	cr_expect_not_null(strstr(core_log_last(), "size limit"), "%s", core_log_last());
	free(rb);
}

/* 2000 threads in waves of 4: most write two records, every third a few chunks' worth. A
 * short thread costs one 4 KiB chunk; the run chunks a thread never wrote go to the next
 * ones, so few chunks stay unwritten. */
Test(writer, thread_churn_costs_little_and_recycles_runs)
{
	core_open(0);
	enum { THREADS = 2000, WAVE = 4, BIG = 500, SMALL = 2 };
	struct worker *wk = calloc(THREADS, sizeof(*wk));
	uint64_t expect = 0, used = 0;
	for (int i = 0; i < THREADS; i++) {
		wk[i].records = i % 3 == 0 ? BIG : SMALL;
		expect += wk[i].records;
		used += (wk[i].records * sizeof(struct prof_rec_alloc) + PROF_DEFAULT_CHUNK_SIZE - 17) /
			(PROF_DEFAULT_CHUNK_SIZE - 16);
	}
	for (int i = 0; i < THREADS; i += WAVE)
		run_workers(wk + i, WAVE, 0);
	const char *path = core_close();
	struct readback *rb = calloc(1, sizeof(*rb));
	read_back(path, rb, 1);
	cr_expect_eq(rb->allocs, expect);
	for (int i = 0; i < THREADS; i++)
		cr_expect_eq(rb->next[wk[i].serial], wk[i].records);
	cr_expect_eq(rb->lost_in_header, 0);
	/* Without recycling, each big thread (5 chunks: runs of 1, 1, 2, 4) leaves 3 chunks of its last run unwritten. */
	cr_expect_leq(rb->chunks_claimed, used + 4 * 16 + 16,
		      "%" PRIu64 " chunks claimed, %" PRIu64 " needed", rb->chunks_claimed, used);
	cr_expect_leq(rb->file_size, 65536 + (used + 4 * 16 + 16) * PROF_DEFAULT_CHUNK_SIZE);
	free(wk);
	free(rb);
}

/* Once the trace is full and the thread's chunks have no room, a hook gets no thread from
 * prof_recording() (it passes straight through) and its event is counted as lost. */
Test(writer, full_trace_hooks_pass_through_and_count)
{
	core_open(4u << 20);
	struct prof_thread *th = core_thread_begin();
	uint64_t lost = 0;
	for (uint32_t i = 0; !prof_writer_full(); i++)
		lost += !core_alloc(th, (uint64_t)th->serial << 32 | i, 8);
	for (uint32_t i = 0; prof_writer_has_room(th, 1024); i++)
		lost += !core_alloc(th, 0, 8);
	for (int i = 0; i < 1000; i++)
		cr_assert_null(prof_recording(PROF_EV_ALLOC), "a full trace records nothing more");
	core_thread_end(th);
	const char *path = core_close();
	struct trace *t = core_read(path);
	cr_expect_eq(trace_header(t)->lost_records, lost + 1000, "lost_records %" PRIu64 ", want %" PRIu64,
		     trace_header(t)->lost_records, lost + 1000);
	trace_close(t);
}
