/* Short records (prof_short.h): the encoding's edges, and the reader on short records that
 * are good, misplaced or broken, and on format-1 files, which have none. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "prof_short.h"
#include "trace.h"
#include "tracegen.h"

static char path[64];

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/prof-short-%d.trace", (int)getpid());
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(short_records, .init = setup, .fini = teardown);

/* Encodes one event against base b and decodes it back against a copy of b. */
static int round_trip(struct prof_short_base b, unsigned kind, uint64_t time, uint64_t ptr,
		      uint64_t size, uint32_t stack, union prof_short_rec *out)
{
	uint64_t w[2] = { prof_short_word(&b, kind, time, ptr), prof_short_alloc_word2(size, stack) };
	if (!w[0])
		return 0;
	cr_assert(prof_is_short(w[0]));
	struct prof_short_base d = b;
	int len = prof_short_decode(&d, w[0], w, sizeof(w), out);
	cr_assert_gt(len, 0);
	cr_assert_eq(d.time, time);
	cr_assert_eq(d.ptr, ptr);
	return len;
}

Test(short_records, encoding_edges)
{
	struct prof_short_base b = { .time = 1000, .ptr = 0x7f0000001000ull, .valid = 1 };
	union prof_short_rec u;
	struct prof_rec_alloc r;
	/* Widest deltas that fit: time + 2^24 - 1, address +- 2^31. */
	cr_assert_eq(round_trip(b, PROF_ALLOC_CALLOC, 1000 + PROF_SHORT_DT_MAX, b.ptr + INT32_MAX,
				UINT32_MAX, UINT32_MAX, &u), 16);
	r = u.alloc;
	cr_assert_eq(r.h.type, PROF_REC_ALLOC);
	cr_assert_eq(r.h.flags, PROF_ALLOC_CALLOC);
	cr_assert_eq(r.h.size, sizeof(struct prof_rec_alloc));
	cr_assert_eq(r.h.time, 1000 + PROF_SHORT_DT_MAX);
	cr_assert_eq(r.ptr, b.ptr + INT32_MAX);
	cr_assert_eq(r.size, UINT32_MAX);
	cr_assert_eq(r.stack, UINT32_MAX);
	cr_assert_eq(round_trip(b, PROF_SHORT_FREE_KIND + PROF_FREE_REALLOC, 1000,
				b.ptr - 0x80000000ull, 0, 0, &u), 8);
	r = u.alloc;
	cr_assert_eq(r.h.type, PROF_REC_FREE);
	cr_assert_eq(r.h.flags, PROF_FREE_REALLOC);
	cr_assert_eq(r.ptr, b.ptr - 0x80000000ull);
	/* What does not fit: no base, time before the base or 2^24 after, address 2^31 away. */
	struct prof_short_base none = { 0 };
	cr_assert_eq(prof_short_word(&none, 0, 1000, b.ptr), 0);
	cr_assert_eq(prof_short_word(&b, 0, 999, b.ptr), 0);
	cr_assert_eq(prof_short_word(&b, 0, 1000 + PROF_SHORT_DT_MAX + 1, b.ptr), 0);
	cr_assert_eq(prof_short_word(&b, 0, 1000, b.ptr + 0x80000000ull), 0);
	cr_assert_eq(prof_short_word(&b, 0, 1000, b.ptr - 0x80000001ull), 0);
	cr_assert_eq(prof_short_word(&b, 32, 1000, b.ptr), 0);
	/* Decoding errors: no base, past the chunk, unknown kind. */
	uint64_t w[2] = { prof_short_word(&b, 0, 1001, b.ptr), 0 };
	cr_assert_eq(prof_short_decode(&none, w[0], w, 16, &u), -1);
	struct prof_short_base c = b;
	cr_assert_eq(prof_short_decode(&c, w[0], w, 8, &u), -2);
	cr_assert_eq(prof_short_decode(&c, PROF_SHORT_BIT | 44u << 8, w, 16, &u), -3);
	cr_assert_eq(prof_short_decode(&c, PROF_SHORT_BIT | (PROF_SHORT_GPU_KIND - 1) << 8, w, 16, &u),
		     -3);
}

/* A short LOCK_WAIT encoded against base b (its lock base) and decoded against a copy. */
static int lock_round_trip(struct prof_short_base b, unsigned op, uint64_t time, uint64_t lock,
			   uint64_t wait_ns, uint32_t stack, struct prof_rec_lock_wait *out)
{
	uint64_t w[2];
	if (!prof_short_lock_words(&b, op, prof_lock_op_kind(op), time, lock, 0, wait_ns, stack, 0,
				   w))
		return 0;
	cr_assert(prof_is_short(w[0]));
	cr_assert_neq(w[0], 0);
	struct prof_short_base d = b;
	union prof_short_rec u;
	memset(&u, 0xa5, sizeof(u));
	int len = prof_short_decode(&d, w[0], w, sizeof(w), &u);
	cr_assert_eq(len, PROF_SHORT_LOCK_SIZE);
	cr_assert_eq(d.lock_time, time);
	cr_assert_eq(d.lock, lock);
	cr_assert_eq(d.time, b.time, "the heap base stays");
	cr_assert_eq(d.ptr, b.ptr);
	*out = u.lock_wait;
	return len;
}

Test(short_records, lock_wait_encoding_edges)
{
	struct prof_short_base b = { .time = 7, .ptr = 0x9000, .valid = 1, .lock_valid = 1,
				     .lock_time = 1 << 24, .lock = 0x555500001000ull };
	struct prof_rec_lock_wait r;
	/* Widest that fit: time +-2^23, lock +-2^31, a 32-bit wait, any stack. */
	cr_assert_eq(lock_round_trip(b, PROF_LOCK_OP_LOCK, b.lock_time + PROF_SHORT_LOCK_DT_MAX,
				     b.lock + INT32_MAX, UINT32_MAX, UINT32_MAX, &r), 16);
	cr_assert_eq(r.h.type, PROF_REC_LOCK_WAIT);
	cr_assert_eq(r.h.flags, PROF_LOCK_OP_LOCK);
	cr_assert_eq(r.h.size, sizeof(struct prof_rec_lock_wait));
	cr_assert_eq(r.h.time, b.lock_time + PROF_SHORT_LOCK_DT_MAX);
	cr_assert_eq(r.lock, b.lock + INT32_MAX);
	cr_assert_eq(r.other, 0);
	cr_assert_eq(r.wait_ns, UINT32_MAX);
	cr_assert_eq(r.stack, UINT32_MAX);
	cr_assert_eq(r.kind, PROF_LOCK_MUTEX);
	cr_assert_eq(r.result, 0);
	cr_assert_eq(lock_round_trip(b, PROF_LOCK_OP_WRLOCK, b.lock_time - PROF_SHORT_LOCK_DT_MAX - 1,
				     b.lock - 0x80000000ull, 0, 0, &r), 16);
	cr_assert_eq(r.h.time, b.lock_time - PROF_SHORT_LOCK_DT_MAX - 1);
	cr_assert_eq(r.lock, b.lock - 0x80000000ull);
	cr_assert_eq(r.kind, PROF_LOCK_RWLOCK);
	/* Every op, with its own kind of lock. */
	for (unsigned op = 0; op < PROF_LOCK_OP_COUNT; op++) {
		cr_assert_eq(lock_round_trip(b, op, b.lock_time + op, b.lock, 1000 + op, op, &r), 16);
		cr_assert_eq(r.h.flags, op);
		cr_assert_eq(r.kind, prof_lock_op_kind(op));
		cr_assert_lt(r.kind, PROF_LOCK_KIND_COUNT);
		cr_assert_eq(r.wait_ns, 1000 + op);
	}
	/* What needs an ordinary record. */
	uint64_t w[2];
	uint64_t t = b.lock_time, l = b.lock;
	cr_assert_not(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t + PROF_SHORT_LOCK_DT_MAX + 1, l,
					    0, 1, 1, 0, w));
	cr_assert_not(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t - PROF_SHORT_LOCK_DT_MAX - 2, l,
					    0, 1, 1, 0, w));
	cr_assert_not(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t, l + 0x80000000ull, 0, 1, 1, 0, w));
	cr_assert_not(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t, l - 0x80000001ull, 0, 1, 1, 0, w));
	cr_assert_not(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t, l, 0, 1ull << 32, 1, 0, w));
	cr_assert_not(prof_short_lock_words(&b, PROF_LOCK_OP_COND_WAIT, PROF_LOCK_COND, t, l, l + 64,
					    1, 1, 0, w), "a condition wait's mutex");
	cr_assert_not(prof_short_lock_words(&b, PROF_LOCK_OP_COND_TIMEDWAIT, PROF_LOCK_COND, t, l, 0,
					    1, 1, 110, w), "a result");
	cr_assert_not(prof_short_lock_words(&b, PROF_LOCK_OP_LOCK, PROF_LOCK_RWLOCK, t, l, 0, 1, 1, 0,
					    w), "another kind");
	cr_assert_not(prof_short_lock_words(&b, PROF_LOCK_OP_COUNT, PROF_LOCK_MUTEX, t, l, 0, 1, 1, 0,
					    w));
	struct prof_short_base heap_only = b;
	heap_only.lock_valid = 0;
	cr_assert_not(prof_short_lock_words(&heap_only, 0, PROF_LOCK_MUTEX, t, l, 0, 1, 1, 0, w));
	/* Each sort of short record needs its own base. */
	union prof_short_rec u;
	cr_assert(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, t, l, 0, 1, 1, 0, w));
	cr_assert_eq(prof_short_decode(&heap_only, w[0], w, 16, &u), -1);
	cr_assert_eq(prof_short_decode(&b, w[0], w, 15, &u), -2);
	struct prof_short_base lock_only = b;
	lock_only.valid = 0;
	uint64_t hw[2] = { prof_short_word(&b, PROF_SHORT_FREE_KIND, b.time, b.ptr), 0 };
	cr_assert_eq(prof_short_decode(&lock_only, hw[0], hw, 8, &u), -1);
}

static struct trace *open_ok(void)
{
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "trace_open: %s", err);
	return t;
}

static void put_short(struct tg *tg, struct prof_short_base *b, unsigned kind, uint64_t time,
		      uint64_t ptr, uint64_t size, uint32_t stack)
{
	uint64_t w[2] = { prof_short_word(b, kind, time, ptr), prof_short_alloc_word2(size, stack) };
	cr_assert_neq(w[0], 0);
	tg_raw(tg, 0, w, kind < PROF_SHORT_FREE_KIND ? 16 : 8);
	b->time = time;
	b->ptr = ptr;
}

/* Ordinary and short records mixed, as the writer writes them, read back as ordinary ones. */
Test(short_records, reader_decodes_short_records)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS;
	tg_alloc(tg, 0, 100, 0x5000, 64, 3);
	struct prof_short_base b = { .time = 100, .ptr = 0x5000, .valid = 1 };
	put_short(tg, &b, PROF_ALLOC_MALLOC, 150, 0x5100, 32, 4);
	put_short(tg, &b, PROF_SHORT_FREE_KIND, 160, 0x5000, 0, 0);
	tg_free(tg, 2, 170, 0x9000);  /* another stream, merged by time */
	put_short(tg, &b, PROF_SHORT_FREE_KIND + PROF_FREE_REALLOC, 180, 0x5100, 0, 0);
	put_short(tg, &b, PROF_ALLOC_REALLOC, 180, 0x4f00, 100, 5);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	static const struct { unsigned type, flags; uint64_t time, ptr, size; uint32_t stack; } want[] = {
		{ PROF_REC_ALLOC, 0, 100, 0x5000, 64, 3 },
		{ PROF_REC_ALLOC, PROF_ALLOC_MALLOC, 150, 0x5100, 32, 4 },
		{ PROF_REC_FREE, 0, 160, 0x5000, 0, 0 },
		{ PROF_REC_FREE, 0, 170, 0x9000, 0, 0 },
		{ PROF_REC_FREE, PROF_FREE_REALLOC, 180, 0x5100, 0, 0 },
		{ PROF_REC_ALLOC, PROF_ALLOC_REALLOC, 180, 0x4f00, 100, 5 },
	};
	static const uint32_t file_size[] = { 40, 16, 8, 24, 8, 16 };  /* short or not */
	struct trace_event ev;
	char err[512] = "";
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "record %zu: %s", i, err);
		cr_assert_eq(ev.file_size, file_size[i], "record %zu", i);
		cr_assert_eq(ev.rec->type, want[i].type, "record %zu", i);
		cr_assert_eq(ev.rec->flags, want[i].flags, "record %zu", i);
		cr_assert_eq(ev.rec->time, want[i].time, "record %zu", i);
		cr_assert_eq(((const struct prof_rec_free *)ev.rec)->ptr, want[i].ptr, "record %zu", i);
		if (want[i].type == PROF_REC_ALLOC) {
			const struct prof_rec_alloc *a = (const void *)ev.rec;
			cr_assert_eq(a->size, want[i].size, "record %zu", i);
			cr_assert_eq(a->stack, want[i].stack, "record %zu", i);
		}
	}
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0, "%s", err);
	/* A second pass reads the same. */
	trace_rewind(t);
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1);
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1);
	cr_assert_eq(ev.rec->time, 150);
	trace_close(t);
}

static void next_fails_with(const char *want)
{
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1)
		;
	cr_assert_eq(rc, -1, "no error; wanted '%s'", want);
	cr_assert_null(strchr(err, '\n'));
	cr_assert(!strncmp(err, path, strlen(path)), "names the file: %s", err);
	cr_assert_not_null(strstr(err, want), "'%s' lacks '%s'", err, want);
	trace_close(t);
}

/* A short record that opens its chunk has nothing to count from. */
Test(short_records, short_record_without_a_base_is_an_error)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS;
	struct prof_short_base b = { .time = 100, .ptr = 0x5000, .valid = 1 };
	put_short(tg, &b, PROF_ALLOC_MALLOC, 150, 0x5100, 32, 4);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record before any ordinary ALLOC or FREE");
}

Test(short_records, short_record_of_unknown_kind_is_an_error)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS;
	tg_alloc(tg, 0, 100, 0x5000, 64, 3);
	uint64_t w[2] = { PROF_SHORT_BIT | 99u << 8, 0 };
	tg_raw(tg, 0, w, 16);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record of unknown kind 99");
}

/* In a file without the feature bit (format 1), a type with bit 15 is an unknown type, passed
 * through and skipped by size as before; format-1 headers still open. */
Test(short_records, format_1_files_read_as_before)
{
	struct tg *tg = tg_create();
	tg_header(tg)->version = 1;
	tg_header(tg)->min_version = 1;
	tg_alloc(tg, 0, 100, 0x5000, 64, 3);
	tg_rec(tg, 0, 0x8123, 0, 110, NULL, 8);
	tg_free(tg, 0, 120, 0x5000);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	unsigned types[3];
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "%s", err);
		types[i] = ev.rec->type;
	}
	cr_assert_eq(types[0], PROF_REC_ALLOC);
	cr_assert_eq(types[1], 0x8123);
	cr_assert_eq(types[2], PROF_REC_FREE);
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0);
	trace_close(t);
}

static void put_lock_wait(struct tg *tg, uint32_t stream, uint64_t time, unsigned op,
			  uint64_t lock, uint64_t other, uint64_t wait_ns, uint32_t stack, int result)
{
	struct prof_rec_lock_wait r = { .lock = lock, .other = other, .wait_ns = wait_ns,
					.stack = stack, .kind = (uint16_t)prof_lock_op_kind(op),
					.result = (int16_t)result };
	tg_rec(tg, stream, PROF_REC_LOCK_WAIT, (uint16_t)op, time, (const char *)&r + sizeof(r.h),
	       sizeof(r) - sizeof(r.h));
}

static void put_short_lock(struct tg *tg, struct prof_short_base *b, uint64_t time, unsigned op,
			   uint64_t lock, uint64_t wait_ns, uint32_t stack)
{
	uint64_t w[2];
	cr_assert(prof_short_lock_words(b, op, prof_lock_op_kind(op), time, lock, 0, wait_ns, stack,
					0, w));
	tg_raw(tg, 0, w, 16);
	b->lock_time = time;
	b->lock = lock;
}

/* Short LOCK_WAITs count from the chunk's last LOCK_WAIT, not from its heap records, which
 * keep their own base between them; a wait may end before the one written ahead of it. */
Test(short_records, reader_decodes_short_lock_waits)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_LOCK_WAITS;
	put_lock_wait(tg, 0, 1000, PROF_LOCK_OP_LOCK, 0x600000, 0, 500, 9, 0);
	struct prof_short_base b = { .lock_valid = 1, .lock_time = 1000, .lock = 0x600000 };
	put_short_lock(tg, &b, 1400, PROF_LOCK_OP_LOCK, 0x600040, 300, 10);
	tg_alloc(tg, 0, 1500, 0x5000, 64, 3);
	b.time = 1500, b.ptr = 0x5000, b.valid = 1;
	put_short_lock(tg, &b, 1450, PROF_LOCK_OP_TIMEDLOCK, 0x600000, 20, 11);  /* earlier */
	put_short(tg, &b, PROF_SHORT_FREE_KIND, 1600, 0x5000, 0, 0);
	put_lock_wait(tg, 0, 1700, PROF_LOCK_OP_COND_WAIT, 0x600080, 0x600000, 90, 12, 0);
	b.lock_time = 1700, b.lock = 0x600080;
	put_short_lock(tg, &b, 1800, PROF_LOCK_OP_SEM_WAIT, 0x6000c0, 40, 13);
	tg_write(tg, path);
	tg_destroy(tg);
	static const struct {
		unsigned type, op, kind;
		uint64_t time, lock, other, wait;
		uint32_t stack, file_size;
	} want[] = {
		{ PROF_REC_LOCK_WAIT, PROF_LOCK_OP_LOCK, PROF_LOCK_MUTEX, 1000, 0x600000, 0, 500, 9, 48 },
		{ PROF_REC_LOCK_WAIT, PROF_LOCK_OP_LOCK, PROF_LOCK_MUTEX, 1400, 0x600040, 0, 300, 10, 16 },
		{ PROF_REC_ALLOC, 0, 0, 1500, 0x5000, 0, 0, 0, 40 },
		{ PROF_REC_LOCK_WAIT, PROF_LOCK_OP_TIMEDLOCK, PROF_LOCK_MUTEX, 1450, 0x600000, 0, 20, 11, 16 },
		{ PROF_REC_FREE, 0, 0, 1600, 0x5000, 0, 0, 0, 8 },
		{ PROF_REC_LOCK_WAIT, PROF_LOCK_OP_COND_WAIT, PROF_LOCK_COND, 1700, 0x600080, 0x600000, 90, 12, 48 },
		{ PROF_REC_LOCK_WAIT, PROF_LOCK_OP_SEM_WAIT, PROF_LOCK_SEM, 1800, 0x6000c0, 0, 40, 13, 16 },
	};
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "record %zu: %s", i, err);
		cr_assert_eq(ev.rec->type, want[i].type, "record %zu", i);
		cr_assert_eq(ev.rec->time, want[i].time, "record %zu", i);
		cr_assert_eq(ev.file_size, want[i].file_size, "record %zu", i);
		if (want[i].type != PROF_REC_LOCK_WAIT) {
			cr_assert_eq(((const struct prof_rec_free *)ev.rec)->ptr, want[i].lock);
			continue;
		}
		const struct prof_rec_lock_wait *l = (const void *)ev.rec;
		cr_assert_eq(ev.rec->size, sizeof(*l));
		cr_assert_eq(ev.rec->flags, want[i].op, "record %zu", i);
		cr_assert_eq(l->kind, want[i].kind, "record %zu", i);
		cr_assert_eq(l->lock, want[i].lock, "record %zu", i);
		cr_assert_eq(l->other, want[i].other, "record %zu", i);
		cr_assert_eq(l->wait_ns, want[i].wait, "record %zu", i);
		cr_assert_eq(l->stack, want[i].stack, "record %zu", i);
		cr_assert_eq(l->result, 0);
	}
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0, "%s", err);
	trace_close(t);
}

/* A short LOCK_WAIT before any ordinary one in its chunk: heap records give it no base. */
Test(short_records, short_lock_wait_without_a_base_is_an_error)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_LOCK_WAITS;
	tg_alloc(tg, 0, 100, 0x5000, 64, 3);
	struct prof_short_base b = { .lock_valid = 1, .lock_time = 100, .lock = 0x600000 };
	put_short_lock(tg, &b, 150, PROF_LOCK_OP_LOCK, 0x600000, 10, 1);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record before any ordinary LOCK_WAIT in its chunk");
}

static int io_round_trip(struct prof_short_base b, unsigned op, uint64_t time, int64_t result,
			 uint64_t duration_ns, uint32_t stack, struct prof_rec_io_call *out)
{
	uint64_t w[2];
	if (!prof_short_io_words(&b, op, time, b.io_file, b.io_fd, result, duration_ns, stack, w))
		return 0;
	cr_assert(prof_is_short(w[0]));
	cr_assert_neq(w[0], 0);
	struct prof_short_base d = b;
	union prof_short_rec u;
	memset(&u, 0xa5, sizeof(u));
	int len = prof_short_decode(&d, w[0], w, sizeof(w), &u);
	cr_assert_eq(len, PROF_SHORT_IO_SIZE);
	cr_assert_eq(d.io_time, time);
	cr_assert_eq(d.io_file, b.io_file, "the io base keeps its file");
	cr_assert_eq(d.io_fd, b.io_fd);
	cr_assert_eq(d.lock_time, b.lock_time, "the lock base stays");
	cr_assert_eq(d.time, b.time, "the heap base stays");
	*out = u.io_call;
	return len;
}

Test(short_records, io_call_encoding_edges)
{
	struct prof_short_base b = { .time = 7, .ptr = 0x9000, .valid = 1, .lock_valid = 1,
				     .lock_time = 5, .lock = 0x1000, .io_valid = 1,
				     .io_time = 1 << 24, .io_file = 12, .io_fd = 1000 };
	struct prof_rec_io_call r;
	/* Widest that fit: time +-2^23, a 32-bit result either way, a 32-bit duration. */
	cr_assert_eq(io_round_trip(b, PROF_IO_READ, b.io_time + PROF_SHORT_LOCK_DT_MAX, INT32_MAX,
				   UINT32_MAX, UINT32_MAX, &r), 16);
	cr_assert_eq(r.h.type, PROF_REC_IO_CALL);
	cr_assert_eq(r.h.flags, PROF_IO_READ);
	cr_assert_eq(r.h.size, sizeof(struct prof_rec_io_call));
	cr_assert_eq(r.h.time, b.io_time + PROF_SHORT_LOCK_DT_MAX);
	cr_assert_eq(r.file, 12);
	cr_assert_eq(r.fd, 1000);
	cr_assert_eq(r.result, INT32_MAX);
	cr_assert_eq(r.duration_ns, UINT32_MAX);
	cr_assert_eq(r.stack, UINT32_MAX);
	cr_assert_eq(r.pad, 0);
	cr_assert_eq(io_round_trip(b, PROF_IO_WRITE, b.io_time - PROF_SHORT_LOCK_DT_MAX - 1, -EAGAIN,
				   0, 0, &r), 16);
	cr_assert_eq(r.h.time, b.io_time - PROF_SHORT_LOCK_DT_MAX - 1);
	cr_assert_eq(r.result, -EAGAIN);
	cr_assert_eq(io_round_trip(b, PROF_IO_LSEEK, b.io_time, INT32_MIN, 1, 1, &r), 16);
	cr_assert_eq(r.result, INT32_MIN);
	/* Every op. */
	for (unsigned op = 0; op < PROF_IO_OP_COUNT; op++) {
		cr_assert_eq(io_round_trip(b, op, b.io_time + op, op, 100 + op, op, &r), 16);
		cr_assert_eq(r.h.flags, op);
		cr_assert_eq(r.duration_ns, 100 + op);
	}
	/* What needs an ordinary record. */
	uint64_t w[2];
	uint64_t t = b.io_time;
	cr_assert_not(prof_short_io_words(&b, 0, t + PROF_SHORT_LOCK_DT_MAX + 1, 12, 1000, 1, 1, 1, w));
	cr_assert_not(prof_short_io_words(&b, 0, t - PROF_SHORT_LOCK_DT_MAX - 2, 12, 1000, 1, 1, 1, w));
	cr_assert_not(prof_short_io_words(&b, 0, t, 13, 1000, 1, 1, 1, w), "another file");
	cr_assert_not(prof_short_io_words(&b, 0, t, 12, 1001, 1, 1, 1, w), "another descriptor");
	cr_assert_not(prof_short_io_words(&b, 0, t, 12, 1000, (int64_t)INT32_MAX + 1, 1, 1, w));
	cr_assert_not(prof_short_io_words(&b, 0, t, 12, 1000, (int64_t)INT32_MIN - 1, 1, 1, w));
	cr_assert_not(prof_short_io_words(&b, 0, t, 12, 1000, 1, 1ull << 32, 1, w));
	cr_assert_not(prof_short_io_words(&b, PROF_IO_OP_COUNT, t, 12, 1000, 1, 1, 1, w));
	struct prof_short_base no_io = b;
	no_io.io_valid = 0;
	cr_assert_not(prof_short_io_words(&no_io, 0, t, 12, 1000, 1, 1, 1, w));
	/* Each sort of short record needs its own base. */
	union prof_short_rec u;
	cr_assert(prof_short_io_words(&b, 0, t, 12, 1000, 1, 1, 1, w));
	cr_assert_eq(prof_short_decode(&no_io, w[0], w, 16, &u), -1);
	cr_assert_eq(prof_short_decode(&b, w[0], w, 15, &u), -2);
	struct prof_short_base io_only = { .io_valid = 1, .io_time = t };
	uint64_t lw[2];
	cr_assert(prof_short_lock_words(&b, 0, PROF_LOCK_MUTEX, b.lock_time, b.lock, 0, 1, 1, 0, lw));
	cr_assert_eq(prof_short_decode(&io_only, lw[0], lw, 16, &u), -1);
	/* The kinds between lock waits and I/O calls, and past the last op, are nobody's. */
	for (unsigned kind = PROF_SHORT_LOCK_KIND + PROF_LOCK_OP_COUNT; kind < PROF_SHORT_GPU_KIND;
	     kind++) {
		if (kind == PROF_SHORT_IO_KIND)
			kind += PROF_IO_OP_COUNT;
		uint64_t bad[2] = { PROF_SHORT_BIT | (uint64_t)kind << 8, 0 };
		cr_assert_eq(prof_short_decode(&b, bad[0], bad, 16, &u), -3, "kind %u", kind);
	}
}

static void put_io(struct tg *tg, unsigned type, uint64_t time, unsigned op, uint32_t file,
		   int32_t fd, int64_t result, uint64_t duration_ns, uint32_t stack)
{
	struct prof_rec_io_name r = { .file = file, .fd = fd, .result = result,
				      .duration_ns = duration_ns, .stack = stack };
	size_t len = type == PROF_REC_IO_NAME ? sizeof(r) + 8 : sizeof(struct prof_rec_io_call);
	char body[sizeof(r) + 8] = "";
	memcpy(body, &r, sizeof(r));
	memcpy(body + sizeof(r), "/tmp/x", 7);
	tg_rec(tg, 0, (uint16_t)type, (uint16_t)op, time, body + sizeof(r.h), len - sizeof(r.h));
}

static void put_short_io(struct tg *tg, struct prof_short_base *b, uint64_t time, unsigned op,
			 int64_t result, uint64_t duration_ns, uint32_t stack)
{
	uint64_t w[2];
	cr_assert(prof_short_io_words(b, op, time, b->io_file, b->io_fd, result, duration_ns, stack,
				      w));
	tg_raw(tg, 0, w, 16);
	b->io_time = time;
}

/* Short IO_CALLs repeat the file and descriptor of the chunk's last IO_CALL or IO_NAME (an
 * open names one); heap and lock records neither give nor move their base. */
Test(short_records, reader_decodes_short_io_calls)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_IO_CALLS;
	put_io(tg, PROF_REC_IO_NAME, 1000, PROF_IO_OPEN, 5, 3, 3, 900, 7);
	struct prof_short_base b = { .io_valid = 1, .io_time = 1000, .io_file = 5, .io_fd = 3 };
	put_short_io(tg, &b, 2000, PROF_IO_READ, 4096, 300, 8);
	tg_alloc(tg, 0, 2500, 0x5000, 64, 3);
	put_short_io(tg, &b, 2400, PROF_IO_READ, 0, 100, 8);  /* began before the ALLOC */
	put_io(tg, PROF_REC_IO_CALL, 3000, PROF_IO_WRITE, 6, 1, 12, 5000, 9);
	b.io_time = 3000, b.io_file = 6, b.io_fd = 1;
	put_short_io(tg, &b, 9000, PROF_IO_WRITE, -EPIPE, 70, 9);
	tg_write(tg, path);
	tg_destroy(tg);
	static const struct {
		unsigned type, op;
		uint64_t time;
		uint32_t file;
		int32_t fd;
		int64_t result;
		uint64_t duration;
		uint32_t stack, file_size;
	} want[] = {
		{ PROF_REC_IO_NAME, PROF_IO_OPEN, 1000, 5, 3, 3, 900, 7, 56 },
		{ PROF_REC_IO_CALL, PROF_IO_READ, 2000, 5, 3, 4096, 300, 8, 16 },
		{ PROF_REC_ALLOC, 0, 2500, 0, 0, 0, 0, 0, 40 },
		{ PROF_REC_IO_CALL, PROF_IO_READ, 2400, 5, 3, 0, 100, 8, 16 },
		{ PROF_REC_IO_CALL, PROF_IO_WRITE, 3000, 6, 1, 12, 5000, 9, 48 },
		{ PROF_REC_IO_CALL, PROF_IO_WRITE, 9000, 6, 1, -EPIPE, 70, 9, 16 },
	};
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "record %zu: %s", i, err);
		cr_assert_eq(ev.rec->type, want[i].type, "record %zu", i);
		cr_assert_eq(ev.rec->time, want[i].time, "record %zu", i);
		cr_assert_eq(ev.file_size, want[i].file_size, "record %zu", i);
		if (want[i].type == PROF_REC_ALLOC)
			continue;
		const struct prof_rec_io_call *c = (const void *)ev.rec;
		cr_assert_geq(ev.rec->size, sizeof(*c));
		cr_assert_eq(ev.rec->flags, want[i].op, "record %zu", i);
		cr_assert_eq(c->file, want[i].file, "record %zu", i);
		cr_assert_eq(c->fd, want[i].fd, "record %zu", i);
		cr_assert_eq(c->result, want[i].result, "record %zu", i);
		cr_assert_eq(c->duration_ns, want[i].duration, "record %zu", i);
		cr_assert_eq(c->stack, want[i].stack, "record %zu", i);
	}
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0, "%s", err);
	trace_close(t);
}

/* A short IO_CALL before any ordinary IO_CALL or IO_NAME in its chunk: other records give it
 * no base. */
Test(short_records, short_io_call_without_a_base_is_an_error)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_IO_CALLS;
	tg_alloc(tg, 0, 100, 0x5000, 64, 3);
	put_lock_wait(tg, 0, 110, PROF_LOCK_OP_LOCK, 0x600000, 0, 500, 9, 0);
	struct prof_short_base b = { .io_valid = 1, .io_time = 100, .io_file = 1, .io_fd = 3 };
	put_short_io(tg, &b, 150, PROF_IO_READ, 10, 10, 1);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record before any ordinary IO_CALL or IO_NAME in its chunk");
}

/* ---- CUDA_LAUNCH ---------------------------------------------------------------------------- */

static struct prof_rec_cuda_launch_api launch(uint64_t time, uint64_t corr, uint64_t function,
					      uint32_t stack, uint64_t api_ns)
{
	return (struct prof_rec_cuda_launch_api){
		.l = { .h = { .type = PROF_REC_CUDA_LAUNCH, .flags = 2 | PROF_CUDA_LAUNCH_API,
			      .size = sizeof(struct prof_rec_cuda_launch_api), .time = time },
		       .corr = corr, .function = function, .stream = 0x7000, .name = 5, .stack = stack,
		       .grid = { 4, 2, 1 }, .block = { 128, 1, 1 }, .shared_mem = 256 },
		.api_duration_ns = api_ns, .api_name = 9 };
}

/* The bases after x, ordinary, as both sides keep them. */
static void cuda_noted(struct prof_short_cuda *c, const struct prof_rec_cuda_launch_api *x)
{
	prof_short_cuda_note(c, &x->l.h);
}

/* The short record w decoded into *u against a copy of the bases c (c stays the encoder's):
 * the copy, moved as the decoder moves it. */
static const struct prof_short_cuda *cuda_decoded(const struct prof_short_cuda *c,
						  const uint64_t w[2], union prof_short_rec *u)
{
	static struct prof_short_cuda d;
	cr_assert(prof_is_short(w[0]));
	d = *c;
	struct prof_short_base b = { .cuda = &d };
	cr_assert_eq(prof_short_decode(&b, w[0], w, 2 * sizeof(w[0]), u), 16);
	return &d;
}

/* Encodes x against c (x's slot repeating it where it holds the same key) and decodes it back
 * against a copy of c: the record's length, 0 where it needs an ordinary one. */
static int cuda_round_trip(const struct prof_short_cuda *c, const struct prof_rec_cuda_launch_api *x,
			   struct prof_rec_cuda_launch_api *out)
{
	const struct prof_rec_cuda_launch_api *last = &c->last[prof_short_cuda_slot(x->l.function)];
	struct prof_short_cuda_key kx = prof_short_cuda_key_of(x), kl = prof_short_cuda_key_of(last);
	int repeats = last->l.h.size && prof_short_cuda_key_eq(&kx, &kl);
	uint64_t w[2];
	if (!prof_short_cuda_words(c->valid, c->time, c->corr, repeats, x, w))
		return 0;
	union prof_short_rec u;
	const struct prof_short_cuda *d = cuda_decoded(c, w, &u);
	*out = u.cuda_launch;
	cr_assert_eq(d->time, x->l.h.time);
	cr_assert_eq(d->corr, x->l.corr);
	return 16;
}

Test(short_records, cuda_launch_encoding_edges)
{
	static struct prof_short_cuda c;
	prof_short_cuda_reset(&c);
	struct prof_rec_cuda_launch_api first = launch(1 << 24, 1000, 0x5000, 3, 700), x, got;
	struct prof_rec_cuda_launch_api other = launch(1 << 24, 999, 0x5010, 3, 700);
	cr_assert_neq(prof_short_cuda_slot(first.l.function), prof_short_cuda_slot(other.l.function),
		      "the test wants two slots");
	cr_assert_eq(cuda_round_trip(&c, &first, &got), 0, "no base yet");
	cuda_noted(&c, &other);
	cr_assert_eq(cuda_round_trip(&c, &first, &got), 0, "its slot is empty");
	cuda_noted(&c, &first);
	/* Widest that fit: time +-2^23, corr + 2^32 - 1, a 32-bit API duration, any stack. */
	x = launch(c.time + PROF_SHORT_LOCK_DT_MAX, c.corr + UINT32_MAX, 0x5000, UINT32_MAX,
		   UINT32_MAX);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 16);
	cr_assert_eq(memcmp(&got, &x, sizeof(x)), 0, "the short record decodes to another launch");
	x = launch(c.time - PROF_SHORT_LOCK_DT_MAX - 1, c.corr, 0x5000, 0, 0);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 16);
	cr_assert_eq(memcmp(&got, &x, sizeof(x)), 0);
	/* What needs an ordinary record. */
	x = launch(c.time + PROF_SHORT_LOCK_DT_MAX + 1, c.corr + 1, 0x5000, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "time delta");
	x = launch(c.time - PROF_SHORT_LOCK_DT_MAX - 2, c.corr + 1, 0x5000, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "time delta");
	x = launch(c.time, c.corr + (1ull << 32), 0x5000, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "corr delta");
	x = launch(c.time, c.corr - 1, 0x5000, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "corr before the base's");
	x = launch(c.time, c.corr + 1, 0x5000, 3, 1ull << 32);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "API duration");
	for (int f = 0; f < 13; f++) {
		x = launch(c.time + 1, c.corr + 1, 0x5000, 3, 700);
		switch (f) {
		case 0: x.l.stream++; break;
		case 1: x.l.name++; break;
		case 2: x.l.grid[0]++; break;
		case 3: x.l.grid[1]++; break;
		case 4: x.l.grid[2]++; break;
		case 5: x.l.block[0]++; break;
		case 6: x.l.block[1]++; break;
		case 7: x.l.block[2]++; break;
		case 8: x.l.shared_mem++; break;
		case 9: x.l.graph = 1; break;
		case 10: x.api_name++; break;
		case 11: x.l.h.flags = 1 | PROF_CUDA_LAUNCH_API; break;  /* the other layer */
		case 12: x.api_result = 1; break;  /* a failed launch is never repeatable */
		}
		cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "field %d differs", f);
	}
	x = launch(c.time, c.corr + 1, 0x5000 + 16 * 1024, 3, 700);  /* another function... */
	if (prof_short_cuda_slot(x.l.function) == prof_short_cuda_slot(0x5000))  /* ...its slot */
		cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "another function in the slot");
	/* A launch that is not its call's record empties its slot; other slots keep theirs. */
	struct prof_rec_cuda_launch_api plain = launch(c.time + 5, c.corr + 2, 0x5000, 3, 700);
	plain.l.h.flags = 2;
	cuda_noted(&c, &plain);
	x = launch(c.time + 6, c.corr + 1, 0x5000, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 0, "slot emptied");
	x = launch(c.time + 6, c.corr + 1, 0x5010, 3, 700);
	cr_assert_eq(cuda_round_trip(&c, &x, &got), 16, "the other slot keeps its launch");
	cr_assert_eq(got.l.corr, x.l.corr);
	/* Without a CUDA table (the exit's leak scan) a short launch is its type and length. */
	uint64_t w[2];
	cr_assert(prof_short_cuda_words(1, x.l.h.time, x.l.corr, 1, &x, w));
	struct prof_short_base none = { 0 };
	union prof_short_rec u;
	cr_assert_eq(prof_short_decode(&none, w[0], w, 16, &u), 16);
	cr_assert_eq(u.h.type, PROF_REC_CUDA_LAUNCH);
	static struct prof_short_cuda empty;
	prof_short_cuda_reset(&empty);
	struct prof_short_base no_base = { .cuda = &empty };
	cr_assert_eq(prof_short_decode(&no_base, w[0], w, 16, &u), -1);
	cr_assert_eq(prof_short_decode(&no_base, w[0], w, 15, &u), -2);
}

static void put_launch(struct tg *tg, const struct prof_rec_cuda_launch_api *x)
{
	tg_rec(tg, 0, PROF_REC_CUDA_LAUNCH, x->l.h.flags, x->l.h.time, (const char *)x + sizeof(x->l.h),
	       x->l.h.size - sizeof(x->l.h));
}

static void put_short_launch(struct tg *tg, struct prof_short_cuda *c,
			     const struct prof_rec_cuda_launch_api *x)
{
	uint64_t w[2];
	cr_assert(prof_short_cuda_words(c->valid, c->time, c->corr, 1, x, w));
	tg_raw(tg, 0, w, 16);
	c->time = x->l.h.time;
	c->corr = x->l.corr;
}

/* Reads the trace at path to its end: its records but those of type skip are want[0..n), each
 * of `each` bytes (its header included), byte for byte, file_size[i] bytes in the file. */
static void expect_records(const void *want, size_t each, size_t n, const uint32_t *file_size,
			   unsigned skip)
{
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	for (size_t i = 0; i < n;) {
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "record %zu: %s", i, err);
		if (ev.rec->type == skip)
			continue;
		cr_assert_eq(ev.file_size, file_size[i], "record %zu", i);
		cr_assert_eq(memcmp(ev.rec, (const char *)want + i * each, each), 0,
			     "record %zu decodes wrong", i);
		i++;
	}
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0, "%s", err);
	trace_close(t);
}

/* A trace with short CUDA records, and c, the encoder's CUDA bases, empty. */
static struct tg *cuda_tg(struct prof_short_cuda *c)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_CUDA;
	prof_short_cuda_reset(c);
	return tg;
}

/* Two kernels launched in turn, each repeating its own slot's last launch; other records
 * between them neither give nor move their bases. */
Test(short_records, reader_decodes_short_cuda_launches)
{
	static struct prof_short_cuda c;
	struct tg *tg = cuda_tg(&c);
	struct prof_rec_cuda_launch_api want[6] = {
		launch(1000, 50, 0x5000, 3, 700), launch(1100, 51, 0x5010, 4, 800),
		launch(1300, 53, 0x5000, 3, 90), launch(1200, 54, 0x5010, 7, 80),
		launch(1400, 55, 0x5000, 8, 70), launch(9000, 60, 0x5010, 4, 60),
	};
	put_launch(tg, &want[0]);
	cuda_noted(&c, &want[0]);
	put_launch(tg, &want[1]);
	cuda_noted(&c, &want[1]);
	put_short_launch(tg, &c, &want[2]);
	tg_alloc(tg, 0, 1250, 0x9000, 64, 3);
	put_short_launch(tg, &c, &want[3]);  /* its time before the one before it */
	put_short_launch(tg, &c, &want[4]);
	put_short_launch(tg, &c, &want[5]);
	tg_write(tg, path);
	tg_destroy(tg);
	static const uint32_t file_size[] = { 96, 96, 16, 16, 16, 16 };
	expect_records(want, sizeof(want[0]), 6, file_size, PROF_REC_ALLOC);
}

/* A short CUDA_LAUNCH whose slot holds no launch in its chunk: another slot's gives it none. */
Test(short_records, short_cuda_launch_without_a_base_is_an_error)
{
	static struct prof_short_cuda c;
	struct tg *tg = cuda_tg(&c);
	struct prof_rec_cuda_launch_api a = launch(1000, 50, 0x5000, 3, 700);
	struct prof_rec_cuda_launch_api b = launch(1100, 51, 0x5010, 3, 700);
	put_launch(tg, &a);
	cuda_noted(&c, &a);
	cuda_noted(&c, &b);  /* in the encoder's bases only */
	put_short_launch(tg, &c, &b);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record before any ordinary CUDA_LAUNCH of its slot in its chunk");
}

/* ---- CUDA_GPU ------------------------------------------------------------------------------- */

static struct prof_rec_cuda_gpu gpu(uint64_t time, uint64_t corr, uint32_t name, uint64_t start,
				    uint64_t ns)
{
	return (struct prof_rec_cuda_gpu){
		.h = { .type = PROF_REC_CUDA_GPU, .flags = 2, .size = sizeof(struct prof_rec_cuda_gpu),
		       .time = time },
		.start = start, .end = start + ns, .corr = corr, .name = name, .device = 1,
		.stream = 7, .grid = { 8, 1, 1 }, .block = { 256, 1, 1 } };
}

/* Encodes g against c (g's slot repeating it where it holds g's key) and decodes it back
 * against a copy of c: the record's length, 0 where it needs an ordinary one. */
static int gpu_round_trip(const struct prof_short_cuda *c, const struct prof_rec_cuda_gpu *g,
			  struct prof_rec_cuda_gpu *out)
{
	const struct prof_rec_cuda_gpu *last =
		&c->gpu_last[prof_short_gpu_slot(g->name, g->activity, g->copy_kind)];
	struct prof_short_gpu_key kg = prof_short_gpu_key_of(g), kl = prof_short_gpu_key_of(last);
	uint64_t w[2];
	if (!prof_short_gpu_words(c->gpu_valid, c->gpu_time, c->gpu_corr, c->gpu_start,
				  last->h.size && prof_short_gpu_key_eq(&kg, &kl), g, w))
		return 0;
	union prof_short_rec u;
	const struct prof_short_cuda *d = cuda_decoded(c, w, &u);
	*out = u.cuda_gpu;
	cr_assert_eq(d->gpu_time, g->h.time);
	cr_assert_eq(d->gpu_corr, g->corr);
	cr_assert_eq(d->gpu_start, g->start);
	return 16;
}

Test(short_records, cuda_gpu_encoding_edges)
{
	static struct prof_short_cuda c;
	prof_short_cuda_reset(&c);
	struct prof_rec_cuda_gpu first = gpu(1 << 24, 1000, 5, 1ull << 40, 900), g, got;
	cr_assert_eq(gpu_round_trip(&c, &first, &got), 0, "no base yet");
	prof_short_note(&(struct prof_short_base){ .cuda = &c }, &first.h);
	/* Widest that fit: time +-2^23, corr and start +-2^31, end - start below 2^32. */
	g = gpu(c.gpu_time + PROF_SHORT_LOCK_DT_MAX, c.gpu_corr + INT32_MAX, 5,
		c.gpu_start + INT32_MAX, UINT32_MAX);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 16);
	cr_assert_eq(memcmp(&got, &g, sizeof(g)), 0, "the short record decodes to other work");
	g = gpu(c.gpu_time - PROF_SHORT_LOCK_DT_MAX - 1, c.gpu_corr + (uint64_t)INT32_MIN, 5,
		c.gpu_start + (uint64_t)INT32_MIN, 0);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 16);
	cr_assert_eq(memcmp(&got, &g, sizeof(g)), 0);
	/* What needs an ordinary record. */
	g = gpu(c.gpu_time + PROF_SHORT_LOCK_DT_MAX + 1, c.gpu_corr, 5, c.gpu_start, 10);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "time delta");
	g = gpu(c.gpu_time, c.gpu_corr + (1ull << 31), 5, c.gpu_start, 10);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "corr delta");
	g = gpu(c.gpu_time, c.gpu_corr, 5, c.gpu_start + (1ull << 31), 10);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "start delta");
	g = gpu(c.gpu_time, c.gpu_corr, 5, c.gpu_start, 1ull << 32);
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "duration");
	g = gpu(c.gpu_time, c.gpu_corr, 5, c.gpu_start, 10);
	g.end = g.start - 1;
	cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "end before start");
	for (int f = 0; f < 11; f++) {
		g = gpu(c.gpu_time + 1, c.gpu_corr + 1, 5, c.gpu_start + 1, 10);
		switch (f) {
		case 0: g.bytes = 1; break;
		case 1: g.device++; break;
		case 2: g.stream++; break;
		case 3: g.grid[0]++; break;
		case 4: g.grid[1]++; break;
		case 5: g.grid[2]++; break;
		case 6: g.block[0]++; break;
		case 7: g.block[1]++; break;
		case 8: g.block[2]++; break;
		case 9: g.h.flags |= PROF_CUDA_GPU_CUPTI_CORR; break;
		case 10: g.name = 6; break;  /* in whatever slot: none holds its name */
		}
		cr_assert_eq(gpu_round_trip(&c, &g, &got), 0, "field %d differs", f);
	}
	/* Without a CUDA table (the exit's leak scan) a short one is its type and length. */
	uint64_t w[2];
	g = gpu(c.gpu_time, c.gpu_corr, 5, c.gpu_start, 10);
	cr_assert(prof_short_gpu_words(1, g.h.time, g.corr, g.start, 1, &g, w));
	struct prof_short_base none = { 0 };
	union prof_short_rec u;
	cr_assert_eq(prof_short_decode(&none, w[0], w, 16, &u), 16);
	cr_assert_eq(u.h.type, PROF_REC_CUDA_GPU);
	static struct prof_short_cuda empty;
	prof_short_cuda_reset(&empty);
	struct prof_short_base no_base = { .cuda = &empty };
	cr_assert_eq(prof_short_decode(&no_base, w[0], w, 16, &u), -1);
}

static void put_gpu(struct tg *tg, const struct prof_rec_cuda_gpu *g)
{
	tg_rec(tg, 0, PROF_REC_CUDA_GPU, g->h.flags, g->h.time, (const char *)g + sizeof(g->h),
	       sizeof(*g) - sizeof(g->h));
}

static void put_short_gpu(struct tg *tg, struct prof_short_cuda *c, const struct prof_rec_cuda_gpu *g)
{
	uint64_t w[2];
	cr_assert(prof_short_gpu_words(c->gpu_valid, c->gpu_time, c->gpu_corr, c->gpu_start, 1, g, w));
	tg_raw(tg, 0, w, 16);
	c->gpu_time = g->h.time;
	c->gpu_corr = g->corr;
	c->gpu_start = g->start;
}

/* Kernels and a copy in turn, each repeating its own slot's last; launches between them
 * neither give nor move their bases. */
Test(short_records, reader_decodes_short_cuda_gpu_records)
{
	static struct prof_short_cuda c;
	struct tg *tg = cuda_tg(&c);
	struct prof_rec_cuda_gpu want[5] = {
		gpu(5000, 40, 5, 100000, 900), gpu(5100, 41, 0, 101000, 300),
		gpu(5200, 42, 5, 102000, 800), gpu(5150, 39, 0, 99000, 200),
		gpu(9000, 45, 5, 104000, 700),
	};
	want[1].activity = PROF_CUDA_ACT_COPY;
	want[1].copy_kind = PROF_CUDA_COPY_HTOD;
	want[1].bytes = 4096;
	want[3].activity = PROF_CUDA_ACT_COPY;
	want[3].copy_kind = PROF_CUDA_COPY_HTOD;
	want[3].bytes = 4096;
	cr_assert_neq(prof_short_gpu_slot(5, 0, 0),
		      prof_short_gpu_slot(0, PROF_CUDA_ACT_COPY, PROF_CUDA_COPY_HTOD));
	struct prof_short_base b = { .cuda = &c };
	put_gpu(tg, &want[0]);
	prof_short_note(&b, &want[0].h);
	put_gpu(tg, &want[1]);
	prof_short_note(&b, &want[1].h);
	put_short_gpu(tg, &c, &want[2]);
	struct prof_rec_cuda_launch_api l = launch(5180, 43, 0x5000, 3, 700);
	put_launch(tg, &l);
	put_short_gpu(tg, &c, &want[3]);  /* earlier work, written later */
	put_short_gpu(tg, &c, &want[4]);
	tg_write(tg, path);
	tg_destroy(tg);
	static const uint32_t file_size[] = { 88, 88, 16, 16, 16 };
	expect_records(want, sizeof(want[0]), 5, file_size, PROF_REC_CUDA_LAUNCH);
}

Test(short_records, short_cuda_gpu_record_without_a_base_is_an_error)
{
	static struct prof_short_cuda c;
	struct tg *tg = cuda_tg(&c);
	struct prof_rec_cuda_launch_api l = launch(1000, 50, 0x5000, 3, 700);
	put_launch(tg, &l);
	struct prof_rec_cuda_gpu g = gpu(1100, 50, 5, 900, 80);
	prof_short_note(&(struct prof_short_base){ .cuda = &c }, &g.h);  /* the encoder's only */
	put_short_gpu(tg, &c, &g);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails_with("short record before any ordinary CUDA_GPU of its slot in its chunk");
}
