/* Reader tests, the runs layout (PROF_FEAT_CHUNK_RUNS): chunk_size is a unit, a chunk a run of
 * units whose header says how many; unused units are zero; a writer shrinks its chunk when its
 * thread ends and hands the units after it to other streams. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"
#include "unit/readback.h"
#include "unit/tracegen.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/runs.trace", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(reader_runs, .init = setup, .fini = teardown);

#define MAXEV 8192
static struct trace_event evs[MAXEV];
/* The whole trace, each record checked against the file and copied. */
static size_t read_all(struct trace *t)
{
	return readback_all(t, evs, MAXEV);
}

static struct trace *open_ok(void)
{
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "trace_open: %s", err);
	return t;
}

static void open_fails(const char *want)
{
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_null(t, "opened; wanted '%s'", want);
	cr_assert_null(strchr(err, '\n'), "one line: %s", err);
	cr_assert(!strncmp(err, path, strlen(path)), "names the file: %s", err);
	cr_assert_not_null(strstr(err, want), "'%s' lacks '%s'", err, want);
}

static struct tg *runs_tg(uint32_t run_units)
{
	struct tg *tg = tg_create();
	tg_set_runs(tg, 1024, run_units);
	return tg;
}

static uint64_t ptr_of(size_t i)
{
	cr_assert_eq(evs[i].rec->type, PROF_REC_ALLOC);
	return ((const struct prof_rec_alloc *)evs[i].rec)->ptr;
}

/* Three streams, chunks of 4 units interleaved: every record in order, at the offset the
 * writer put it. */
Test(reader_runs, runs_of_several_units)
{
	struct tg *tg = runs_tg(4);
	uint64_t off[3 * 400];
	for (uint64_t i = 0; i < 3 * 400; i++)
		off[i] = tg_alloc(tg, (uint32_t)(i % 3) * 2, 100 + i, i, 8, 0);
	uint64_t units = tg_chunk_count(tg);
	/* 400 records of 40 bytes per stream, 4072 bytes of records per chunk. */
	cr_assert_eq(units, 3 * 4 * 4, "%lu units", (unsigned long)units);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(trace_header(t)->chunk_size, 1024);
	cr_assert_eq(read_all(t), 3 * 400);
	for (size_t i = 0; i < 3 * 400; i++) {
		cr_assert_eq(ptr_of(i), i);
		cr_assert_eq(evs[i].offset, off[i]);
		cr_assert_eq(evs[i].stream, (i % 3) * 2);
	}
	trace_rewind(t);
	cr_assert_eq(read_all(t), 3 * 400, "a second pass after rewind");
	trace_close(t);
}

/* Units never written (zero) between chunks, before the first and after the last. */
Test(reader_runs, zero_units_between_chunks)
{
	struct tg *tg = runs_tg(2);
	tg_claim_empty(tg);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	tg_claim_empty(tg);
	tg_claim_empty(tg);
	tg_alloc(tg, 2, 20, 2, 8, 0);
	tg_claim_empty(tg);
	tg_new_run(tg, 0, 3);
	tg_alloc(tg, 0, 30, 3, 8, 0);
	tg_claim_empty(tg);
	cr_assert_eq(tg_chunk_count(tg), 1 + 2 + 2 + 2 + 1 + 3 + 1);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 3);
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(ptr_of(i), i + 1);
	trace_close(t);
}

/* A record may use a chunk's whole span: far more than a unit, up to the chunk's last byte.
 * The last chunk ends exactly at the end of the file. */
Test(reader_runs, record_uses_whole_span)
{
	struct tg *tg = runs_tg(1);
	static uint8_t big[60000];
	memset(big, 0x5a, sizeof(big));
	tg_alloc(tg, 0, 10, 1, 8, 0);
	tg_new_run(tg, 0, 3);
	/* 3 units: 3072 bytes, 24 of header, 3048 of record. */
	uint64_t o1 = tg_rec(tg, 0, 200, 0, 20, big, 3048 - 16);
	tg_alloc(tg, 0, 30, 2, 8, 0);  /* no room left: a new chunk */
	uint64_t o2 = tg_rec(tg, 2, 201, 0, 40, big, sizeof(big));  /* 59 units */
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 4);
	cr_assert_eq(evs[1].rec->type, 200);
	cr_assert_eq(evs[1].rec->size, 3048);
	cr_assert_eq(evs[1].offset, o1);
	cr_assert_eq(o1 % 1024, 24);
	cr_assert_eq(ptr_of(2), 2);
	cr_assert_eq(evs[3].rec->type, 201);
	cr_assert_eq(evs[3].rec->size, 60016);
	cr_assert_eq(evs[3].offset, o2);
	cr_assert_eq(((const uint8_t *)evs[3].rec)[60015], 0x5a);
	trace_close(t);
}

/* A record one byte (eight) past its chunk's span is refused, as in a fixed-size chunk. */
Test(reader_runs, record_past_span_refused)
{
	struct tg *tg = runs_tg(2);
	uint64_t off = tg_rec(tg, 0, 200, 0, 20, NULL, 2048 - 24 - 16);
	tg_write(tg, path);
	tg_destroy(tg);
	uint32_t size = 2048 - 24 + 8;
	tg_patch(path, off + offsetof(struct prof_rec, size), &size, 4);
	struct trace *t = open_ok();
	struct trace_event ev;
	char err[512] = "";
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "past the chunk end"), "%s", err);
	trace_close(t);
}

/* A thread ends: its chunk shrinks to the units it wrote, and the units after them go to
 * other streams' chunks. Every stream reads back whole, in order. */
Test(reader_runs, recycled_tail_after_thread_end)
{
	struct tg *tg = runs_tg(8);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	tg_alloc(tg, 0, 11, 2, 8, 0);
	uint64_t first0 = tg_chunk_offset(tg, 0);
	tg_shrink(tg, 0, 1);
	uint64_t a = tg_alloc(tg, 0, 12, 3, 8, 0);  /* after the end: fits in the kept unit */
	cr_assert_lt(a, first0 + 1024);
	tg_new_run(tg, 2, 2);
	uint64_t b = tg_alloc(tg, 2, 20, 4, 8, 0);  /* in units 1-2, freed by stream 0 */
	tg_new_run(tg, 4, 5);
	uint64_t c = tg_alloc(tg, 4, 30, 5, 8, 0);  /* in units 3-7 */
	cr_assert_eq(b, first0 + 1024 + 24);
	cr_assert_eq(c, first0 + 3 * 1024 + 24);
	cr_assert_eq(tg_chunk_count(tg), 8, "nothing claimed past the first run");
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 5);
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(ptr_of(i), i + 1);
	cr_assert_eq(evs[3].stream, 2);
	cr_assert_eq(evs[4].stream, 4);
	trace_close(t);
}

/* SIGKILL between a writer's two steps (units shrunk, range not yet handed on): the freed
 * units are still zero, and read as unused. */
Test(reader_runs, shrunk_chunk_before_its_units_are_reused)
{
	struct tg *tg = runs_tg(8);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	tg_shrink(tg, 0, 1);
	tg_alloc(tg, 2, 20, 2, 8, 0);  /* 8 units: not in the 7 given back, after them */
	cr_assert_eq(tg_chunk_count(tg), 16, "%lu units", (unsigned long)tg_chunk_count(tg));
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 2);
	trace_close(t);

	/* The same state written by hand: a one-unit chunk, then seven zero units. */
	tg = runs_tg(1);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	for (int i = 0; i < 7; i++)
		tg_claim_empty(tg);
	tg_new_run(tg, 2, 8);
	tg_alloc(tg, 2, 20, 2, 8, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	t = open_ok();
	cr_assert_eq(read_all(t), 2);
	cr_assert_eq(ptr_of(1), 2);
	trace_close(t);
}

static void write_two_chunks(uint64_t *units_off0, uint64_t *units_off1)
{
	struct tg *tg = runs_tg(4);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	*units_off0 = tg_chunk_units_offset(tg, 0);
	tg_alloc(tg, 2, 20, 2, 8, 0);
	*units_off1 = tg_chunk_units_offset(tg, 2);
	tg_write(tg, path);
	tg_destroy(tg);
}

/* units 0, or more units than the data area has left: one line with the chunk's offset. */
Test(reader_runs, bad_units_refused)
{
	uint64_t u0, u1;
	char want[96];
	uint32_t bad[] = { 0, 9, 0xffffffffu };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_two_chunks(&u0, &u1);
		tg_patch(path, u0, &bad[i], 4);
		snprintf(want, sizeof(want), "offset %lu: bad chunk: spans %u units",
			 (unsigned long)(u0 - 16), bad[i]);
		open_fails(want);
	}
	/* The last chunk may not run past the end of the data area (the file's end). */
	uint32_t five = 5;
	write_two_chunks(&u0, &u1);
	tg_patch(path, u1, &five, 4);
	snprintf(want, sizeof(want), "offset %lu: bad chunk: spans 5 units, 4 left",
		 (unsigned long)(u1 - 16));
	open_fails(want);
	/* A chunk spanning the next one's header hides it: that is the writer's to avoid, and
	 * the reader reads what the first chunk holds. */
	uint32_t eight = 8;
	write_two_chunks(&u0, &u1);
	tg_patch(path, u0, &eight, 4);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 1);
	trace_close(t);
}

/* chunk_size is a unit from 1024 with the feature, a chunk from 4096 without it. */
Test(reader_runs, unit_size_bounds)
{
	struct tg *tg = runs_tg(4);
	tg_alloc(tg, 0, 10, 1, 8, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	trace_close(t);
	tg_patch_header(path, chunk_size, 512);
	open_fails("chunk_size 512 (must be a power of two from 1024");
	tg_patch_header(path, chunk_size, 1024);
	tg_patch_header(path, features, 0);
	open_fails("chunk_size 1024 (must be a power of two from 4096");
	/* Required bits other than this one are still refused. */
	tg_patch_header(path, features, PROF_FEAT_CHUNK_RUNS | 0x80);
	open_fails("required features 0x80");
}

/* A unit of 4 KiB or more works too, and streams that use many chunks keep their order. */
Test(reader_runs, larger_unit_and_many_chunks)
{
	struct tg *tg = tg_create();
	tg_set_runs(tg, 4096, 2);
	for (uint64_t i = 0; i < 2000; i++)
		tg_alloc(tg, (uint32_t)(i % 7) * 2, i, i, 8, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 2000);
	for (size_t i = 0; i < 2000; i++)
		cr_assert_eq(ptr_of(i), i);
	trace_close(t);
}
