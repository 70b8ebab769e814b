/* Short ALLOC and FREE records (prof_short.h) through the real writer and reader: every event
 * reads back as written, whether it fit a short record or took an ordinary one (huge sizes,
 * far addresses, time gaps wider than the delta, chunk starts), and a process killed with
 * SIGKILL at any moment leaves every record it committed readable. */
#include "ctest.h"
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

TestSuite(short_records, .timeout = 120);

/* Event i of a deterministic sequence: two ALLOCs then a FREE of the block before, with
 * escapes sprinkled in: a size over 32 bits every 101st, an address 2^40 away every 97th, a
 * 20 ms gap (wider than the 16.7 ms delta) every 500th, all allocation functions. */
struct ev {
	int is_free;
	unsigned flags;
	uint64_t ptr, size, time;
	uint32_t stack;
};

static uint64_t ev_ptr(uint64_t i)
{
	if (i % 97 == 0)
		return 0x10000000000ull + i * 64;
	return 0x7f0000000000ull + (i * 7919 % 100000) * 16;
}

static void ev_get(uint64_t i, struct ev *e)
{
	e->time = 1000000000ull + i * 137 + (i / 500) * 20000000ull;
	e->is_free = i % 3 == 2;
	if (e->is_free) {
		e->flags = (unsigned)(i / 3) % 2;  /* PROF_FREE_REALLOC or not */
		e->ptr = ev_ptr(i - 1);
		e->size = 0;
		e->stack = 0;
	} else {
		e->flags = (unsigned)(i % PROF_ALLOC_FN_COUNT);
		e->ptr = ev_ptr(i);
		e->size = i % 101 == 0 ? (1ull << 40) + i : i % 4096;
		e->stack = (uint32_t)(i * 2654435761u);
	}
}

static int direct_every;  /* every that many events: written with prof_reserve/commit */

static void ev_write(struct prof_thread *th, uint64_t i)
{
	struct ev e;
	ev_get(i, &e);
	if (direct_every && i % direct_every == 0) {
		/* An ordinary record written around prof_write_*() (as another hook might): it
		 * becomes the base of the short records after it, for writer and reader alike. */
		if (e.is_free) {
			struct prof_rec_free *r = prof_reserve(th, sizeof(*r));
			cr_assert_not_null(r);
			r->ptr = e.ptr;
			prof_commit(r, PROF_REC_FREE, e.flags, sizeof(*r), e.time);
		} else {
			struct prof_rec_alloc *r = prof_reserve(th, sizeof(*r));
			cr_assert_not_null(r);
			r->ptr = e.ptr;
			r->size = e.size;
			r->stack = e.stack;
			r->pad = 0;
			prof_commit(r, PROF_REC_ALLOC, e.flags, sizeof(*r), e.time);
		}
	} else if (e.is_free)
		prof_write_free(th, e.flags, e.ptr, e.time);
	else
		prof_write_alloc(th, e.flags, e.ptr, e.size, e.stack, e.time);
}

/* Reads the trace's ALLOC and FREE records and checks they are events 0, 1, ... in order;
 * returns how many. Also counts the bytes of heap records in the file (short or not). */
static uint64_t ev_check(const char *path, uint64_t *bytes)
{
	struct trace *t = core_read(path);
	cr_assert(trace_header(t)->features & PROF_FEAT_SHORT_RECORDS);
	struct trace_event ev;
	char err[512] = "";
	int rc;
	uint64_t n = 0, last_off = 0;
	*bytes = 0;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		const struct prof_rec *r = ev.rec;
		if (r->type != PROF_REC_ALLOC && r->type != PROF_REC_FREE)
			continue;
		struct ev e;
		ev_get(n, &e);
		cr_assert_eq(r->type, e.is_free ? PROF_REC_FREE : PROF_REC_ALLOC, "event %" PRIu64, n);
		cr_assert_eq(r->flags, e.flags, "event %" PRIu64, n);
		cr_assert_eq(r->time, e.time, "event %" PRIu64 " time", n);
		cr_assert_eq(((const struct prof_rec_free *)r)->ptr, e.ptr, "event %" PRIu64 " ptr", n);
		if (!e.is_free) {
			const struct prof_rec_alloc *a = (const void *)r;
			cr_assert_eq(a->size, e.size, "event %" PRIu64 " size", n);
			cr_assert_eq(a->stack, e.stack, "event %" PRIu64 " stack", n);
		}
		cr_assert_gt(ev.offset, last_off);
		last_off = ev.offset;
		n++;
	}
	cr_assert_eq(rc, 0, "reader error: %s", err);
	trace_close(t);
	return n;
}

Test(short_records, every_event_reads_back_as_written)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	const uint64_t n = 200000;
	for (uint64_t i = 0; i < n; i++)
		ev_write(th, i);
	const char *path = core_close();
	uint64_t bytes;
	cr_assert_eq(ev_check(path, &bytes), n);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	/* Two ALLOCs (16) and a FREE (8) in three events, plus the escapes: under 16 a record. */
	struct trace *t = core_read(path);
	uint64_t data = (uint64_t)st.st_size - trace_header(t)->data_offset;
	trace_close(t);
	cr_expect_lt((double)data / n, 16.0, "%.2f bytes per event", (double)data / n);
	unlink(path);
}

/* Ordinary heap records written directly (prof_reserve, prof_commit) between short ones. */
Test(short_records, ordinary_records_written_directly_move_the_base_too)
{
	core_open(0);
	struct prof_thread *th = core_thread_begin();
	direct_every = 7;
	const uint64_t n = 50000;
	for (uint64_t i = 0; i < n; i++)
		ev_write(th, i);
	direct_every = 0;
	const char *path = core_close();
	uint64_t bytes;
	cr_assert_eq(ev_check(path, &bytes), n);
	unlink(path);
}

/* A process killed at a random moment while it writes: every record it committed (counted in
 * shared memory after each one) reads back, in order, and nothing else does. */
Test(short_records, sigkill_at_random_moments_loses_nothing_committed)
{
	uint64_t *done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(done, MAP_FAILED);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int round = 0; round < 6; round++) {
		core_open(0);
		char path[4096];
		snprintf(path, sizeof(path), "%s", prof_writer_path());
		*done = 0;
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct prof_thread *th = core_thread_begin();
			for (uint64_t i = 0; i < 4000000; i++) {
				ev_write(th, i);
				__atomic_store_n(done, i + 1, __ATOMIC_RELEASE);
			}
			for (;;)
				pause();
		}
		/* Once it writes (a loaded machine may start it late), at a random moment. */
		struct timespec tick = { 0, 100000 };
		for (int k = 0; k < 100000 && __atomic_load_n(done, __ATOMIC_ACQUIRE) == 0; k++)
			nanosleep(&tick, NULL);
		struct timespec d = { 0, (long)(rand() % 40000) * 1000 };
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		uint64_t committed = __atomic_load_n(done, __ATOMIC_ACQUIRE), bytes;
		uint64_t n = ev_check(path, &bytes);
		cr_assert(n == committed || n == committed + 1,
			  "round %d: %" PRIu64 " records read, %" PRIu64 " committed", round, n,
			  committed);
		cr_assert_gt(n, 0);
		prof_writer_forget();
		unlink(path);
	}
	munmap(done, 4096);
}
