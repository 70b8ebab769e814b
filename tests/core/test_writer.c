/* The trace writer at work and at its limits: many threads claiming chunks at once, the size
 * limit reached in the middle of a burst, threads that come and go; each trace read back. */
#include "ctest.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"

TestSuite(writer, .timeout = 120);

#define MAX_SERIAL 4096

/* What a reader pass found: records per thread serial, in order. */
struct readback {
	uint64_t allocs, stacks, lost_in_records, next[MAX_SERIAL];
	uint32_t tid[MAX_SERIAL];
	uint64_t chunks_claimed, lost_in_header, file_size;
	uint32_t cpu_hz, data_offset;
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
	rb->data_offset = h->data_offset;
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
	/* Runs of up to 64 KiB: the units claimed are the ones used, give or take a run each. */
	uint64_t need = (uint64_t)THREADS * RECORDS * sizeof(struct prof_rec_alloc) /
			(PROF_RUN_UNIT - 16);
	cr_expect_leq(rb->chunks_claimed, need + THREADS * 64 + 2, "%" PRIu64 " units for %" PRIu64,
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

/* 2000 threads in waves of 4: most write two records, every third 20 KB. A short thread
 * costs one 1 KiB unit; the units of its last chunk a thread never wrote go to the next ones,
 * so few units stay unwritten. */
Test(writer, thread_churn_costs_little_and_recycles_runs)
{
	core_open(0);
	enum { THREADS = 2000, WAVE = 4, BIG = 500, SMALL = 2 };
	struct worker *wk = calloc(THREADS, sizeof(*wk));
	uint64_t expect = 0, used = 0;
	for (int i = 0; i < THREADS; i++) {
		wk[i].records = i % 3 == 0 ? BIG : SMALL;
		expect += wk[i].records;
		/* Its records, a header per chunk (runs of 1, 1, 2, 4, 8, 16 units) and what a
		 * chunk left for the next leaves unused (less than a record). */
		used += (wk[i].records * sizeof(struct prof_rec_alloc) + 6 * (24 + 40) +
			 PROF_RUN_UNIT - 1) / PROF_RUN_UNIT;
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
	/* Without recycling, each big thread would leave about 12 units of its last run (16)
	 * unwritten: 8000 units in all. With it, what the pool could not keep at most. */
	cr_expect_leq(rb->chunks_claimed, used + 4 * 64 + 64,
		      "%" PRIu64 " units claimed, %" PRIu64 " needed", rb->chunks_claimed, used);
	cr_expect_leq(rb->file_size, rb->data_offset + (used + 4 * 64 + 64) * PROF_RUN_UNIT);
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

/* One record of `size` bytes of an unknown type (200), filled with its size: 1 written. */
static int big_record(struct prof_thread *th, uint32_t size)
{
	uint8_t *r = prof_reserve(th, size);
	if (!r)
		return 0;
	memset(r + sizeof(struct prof_rec), (int)(size & 0xff), size - sizeof(struct prof_rec));
	prof_commit(r, 200, 0, size, prof_now());
	return 1;
}

/* A record needs no more than a chunk: a run grows to fit it, up to 64 KiB less the chunk
 * header and room for a LOST record. Larger ones are counted as lost. */
Test(writer, records_up_to_a_whole_run_are_written)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	enum { MAX = 65536 - 24 - 24 };
	uint32_t sizes[] = { 8000, MAX, 4096, MAX + 8, 200000 & ~7u, 72 };
	int want[] = { 1, 1, 1, 0, 0, 1 };
	for (int i = 0; i < 6; i++) {
		cr_expect_eq(core_alloc(th, (uint64_t)th->serial << 32 | (uint32_t)i, 1), 1);
		cr_expect_eq(big_record(th, sizes[i]), want[i], "record of %u bytes", sizes[i]);
	}
	core_thread_end(th);
	struct trace *t = core_read(core_close());
	struct trace_event ev;
	char err[512] = "";
	int rc, n = 0, allocs = 0;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		if (ev.rec->type == PROF_REC_ALLOC) {
			allocs++;
			continue;
		}
		if (ev.rec->type != 200)
			continue;
		while (n < 6 && !want[n])
			n++;
		cr_assert_lt(n, 6);
		cr_expect_eq(ev.rec->size, sizes[n]);
		cr_expect_eq(((const uint8_t *)ev.rec)[ev.rec->size - 1], sizes[n] & 0xff);
		n++;
	}
	cr_assert_eq(rc, 0, "%s", err);
	cr_expect_eq(n, 6);
	cr_expect_eq(allocs, 6);
	cr_expect_eq(trace_header(t)->lost_records, 2);
	trace_close(t);
}

/* The chunk headers of a trace, from the file: (first unit, units) of each, and the units
 * left zero. */
struct layout {
	uint32_t n, zero;
	uint64_t first[64];
	uint32_t units[64], stream[64];
};

static void read_layout(const char *path, struct layout *l)
{
	memset(l, 0, sizeof(*l));
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	struct prof_file_header h;
	cr_assert_eq(fread(&h, sizeof(h), 1, f), 1);
	cr_assert_eq(h.features & PROF_FEAT_CHUNK_RUNS, PROF_FEAT_CHUNK_RUNS);
	cr_assert_eq(h.chunk_size, PROF_RUN_UNIT);
	for (uint64_t i = 0; i < h.chunks_claimed;) {
		struct prof_chunk_header_run ch;
		cr_assert_eq(fseek(f, (long)(h.data_offset + i * h.chunk_size), SEEK_SET), 0);
		cr_assert_eq(fread(&ch, sizeof(ch), 1, f), 1);
		if (ch.magic == 0) {
			l->zero++;
			i++;
			continue;
		}
		cr_assert_lt(l->n, 64);
		l->first[l->n] = i;
		l->units[l->n] = ch.units;
		l->stream[l->n++] = ch.stream;
		i += ch.units;
	}
	fclose(f);
}

/* A thread that ends gives the units of its chunk it never wrote to the next thread: its
 * chunk header shrinks to what it used, and the next thread's first chunk is those units. */
Test(writer, an_ended_threads_unused_units_go_to_the_next_thread)
{
	core_open(0);
	struct worker a = { .records = 300 }, b = { .records = 1 };
	run_workers(&a, 1, 0);
	run_workers(&b, 1, 0);
	const char *path = core_close();
	struct layout *l = calloc(1, sizeof(*l));
	read_layout(path, l);
	/* A: runs of 1, 1, 2, 4, 8 units (16), 12000 bytes of records: 4 units of the last
	 * kept. B's one record: those 4 units, kept 1. Nothing else claimed. */
	uint64_t first[] = { 0, 1, 2, 4, 8, 12 };
	uint32_t units[] = { 1, 1, 2, 4, 4, 1 };
	cr_assert_eq(l->n, 6, "%u chunks", l->n);
	for (int i = 0; i < 6; i++) {
		cr_expect_eq(l->first[i], first[i], "chunk %d at unit %lu", i, (unsigned long)l->first[i]);
		cr_expect_eq(l->units[i], units[i], "chunk %d: %u units", i, l->units[i]);
		cr_expect_eq(l->stream[i], (i < 5 ? a.serial : b.serial) * 2);
	}
	cr_expect_eq(l->zero, 3, "B's 3 unused units given back, zero");
	struct readback *rb = calloc(1, sizeof(*rb));
	read_back(path, rb, 1);
	cr_expect_eq(rb->chunks_claimed, 16);
	cr_expect_eq(rb->next[a.serial], 300);
	cr_expect_eq(rb->next[b.serial], 1);
	free(rb);
	free(l);
}

/* SIGKILL after threads ended (their units shrunk and handed on) and while one writes: the
 * full-length file reads back with every committed record. */
Test(writer, killed_process_after_recycling_leaves_a_readable_trace)
{
	core_open(0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", prof_writer_path());
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct worker wk[3] = { { .records = 300 }, { .records = 1 }, { .records = 5 } };
		run_workers(&wk[0], 1, 0);
		run_workers(&wk[1], 1, 0);
		struct prof_thread *th = core_thread_begin();
		for (uint32_t i = 0; i < 2000; i++)
			core_alloc(th, (uint64_t)th->serial << 32 | i, i);
		raise(SIGKILL);
		_exit(1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	struct readback *rb = calloc(1, sizeof(*rb));
	read_back(path, rb, 1);
	cr_expect_eq(rb->allocs, 300 + 1 + 2000);
	cr_expect_eq(rb->lost_in_header, 0);
	struct trace *t = core_read(path);
	cr_expect_eq(trace_header(t)->state, PROF_STATE_RUNNING);
	trace_close(t);
	free(rb);
}

/* A signal handler that writes while the thread it interrupted is writing (a CPU sample, a
 * fatal signal, a program's handler that calls a hooked function): on the interrupted stream
 * it either gets bytes of its own or, inside a reservation, drops its record and counts it
 * lost; never the same bytes. Every record written is read back whole. */
static struct prof_thread *volatile nested_th;
static volatile sig_atomic_t nested_written, nested_lost;
static _Atomic int nested_kicking;  /* between threads: atomic, not sig_atomic_t */

static void nested_handler(int sig)
{
	(void)sig;
	struct prof_thread *th = nested_th;
	for (int s = 0; s < 2; s++) {
		th->in_signal += s;
		int ok = core_alloc(th, 2ull << 32 | (uint32_t)(nested_written + nested_lost), 0);
		th->in_signal -= s;
		nested_written += ok;
		nested_lost += !ok;
	}
}

static void *nested_kicker(void *arg)
{
	pthread_t target = *(pthread_t *)arg;
	for (int i = 0; i < 20000 && !nested_th->tid; i++)
		sched_yield();
	atomic_store(&nested_kicking, 1);
	for (int i = 0; i < 20000; i++)
		if (pthread_kill(target, SIGUSR1) != 0)
			break;
	return NULL;
}

Test(writer, a_nested_signal_handler_never_shares_a_records_bytes)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	nested_th = th;
	signal(SIGUSR1, nested_handler);
	pthread_t self = pthread_self(), kicker;
	cr_assert_eq(pthread_create(&kicker, NULL, nested_kicker, &self), 0);
	/* the signals must come while the loop writes: on a loaded machine the kicker may start
	 * only after the loop, when the trace is full and every nested record is lost */
	while (!atomic_load(&nested_kicking))
		sched_yield();
	uint64_t written = 0;
	for (uint32_t i = 0; i < 400000; i++) {
		th->in_signal += i & 1;  /* half on the signal-handler stream, as samples are */
		written += (uint64_t)core_alloc(th, 1ull << 32 | i, 0);
		th->in_signal -= i & 1;
	}
	pthread_join(kicker, NULL);
	signal(SIGUSR1, SIG_DFL);
	/* Inside a reservation, nested writers drop their record. */
	th->streams[0].busy = 1;
	cr_expect_eq(core_alloc(th, 3ull << 32, 0), 0);
	th->streams[0].busy = 0;
	core_thread_end(th);
	struct trace *t = core_read(core_close());
	struct trace_event ev;
	char err[512] = "";
	uint64_t mine = 0, theirs = 0;
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		if (ev.rec->type != PROF_REC_ALLOC)
			continue;
		uint64_t tag = ((const struct prof_rec_alloc *)(const void *)ev.rec)->ptr >> 32;
		cr_assert(tag == 1 || tag == 2, "a record made of two: ptr tag %" PRIu64, tag);
		mine += tag == 1;
		theirs += tag == 2;
	}
	cr_assert_eq(rc, 0, "reader error: %s", err);
	trace_close(t);
	cr_expect_eq(mine, written);
	cr_expect_eq(theirs, (uint64_t)nested_written, "%" PRIu64 " of %d read back", theirs,
		     (int)nested_written);
	cr_expect_gt(nested_written, 0);
}
