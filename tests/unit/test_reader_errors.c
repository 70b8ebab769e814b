/* Reader tests, malformed files: each must be refused with one line naming the file and,
 * where it applies, the byte offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"
#include "unit/tracegen.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/bad.trace", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(reader_errors, .init = setup, .fini = teardown);

static void assert_one_line(const char *err)
{
	cr_assert_str_not_empty(err);
	cr_assert_null(strchr(err, '\n'), "one line: %s", err);
	cr_assert(!strncmp(err, path, strlen(path)), "names the file: %s", err);
}

/* trace_open() must fail with a message containing want. */
static void open_fails(const char *want)
{
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_null(t, "opened; wanted '%s'", want);
	assert_one_line(err);
	cr_assert_not_null(strstr(err, want), "'%s' lacks '%s'", err, want);
}

/* trace_open() succeeds, `good` records come out, then trace_next() fails with want, and
 * keeps failing. The message has "offset N" with N the record's offset if off != 0. */
static void next_fails(size_t good, uint64_t off, const char *want)
{
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "trace_open: %s", err);
	struct trace_event ev;
	for (size_t i = 0; i < good; i++)
		cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 1, "record %zu: %s", i, err);
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), -1, "wanted '%s'", want);
	assert_one_line(err);
	cr_assert_not_null(strstr(err, want), "'%s' lacks '%s'", err, want);
	if (off) {
		char o[64];
		snprintf(o, sizeof(o), ": offset %lu: ", (unsigned long)off);
		cr_assert_not_null(strstr(err, o), "'%s' lacks '%s'", err, o);
	}
	err[0] = '\0';
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), -1, "errors stick");
	cr_assert_not_null(strstr(err, want));
	trace_close(t);
}

static void write_default(void)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_free(tg, 2, 20, 1);
	tg_write(tg, path);
	tg_destroy(tg);
}

Test(reader_errors, missing_file)
{
	open_fails("No such file");
}

Test(reader_errors, directory)
{
	snprintf(path, sizeof(path), "%s", dir);
	open_fails("not a regular file");
}

Test(reader_errors, empty)
{
	write_default();
	tg_truncate(path, 0);
	open_fails("empty file");
}

Test(reader_errors, shorter_than_header)
{
	write_default();
	tg_truncate(path, 100);
	open_fails("shorter than the header");
	tg_truncate(path, 3);
	open_fails("shorter than the header");
}

Test(reader_errors, wrong_magic)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("hello, I am a text file and not a trace at all\n", f);
	fclose(f);
	open_fails("not a libprof trace");
	write_default();
	tg_patch_header(path, magic, 0x1122334455667788ull);
	open_fails("not a libprof trace");
}

Test(reader_errors, byte_swapped)
{
	struct tg *tg = tg_create();
	tg_header(tg)->magic = PROF_MAGIC_SWAPPED;
	tg_write(tg, path);
	tg_destroy(tg);
	open_fails("written on a big-endian machine");
}

Test(reader_errors, newer_min_version)
{
	struct tg *tg = tg_create();
	tg_header(tg)->version = PROF_FORMAT_VERSION + 2;
	tg_header(tg)->min_version = PROF_FORMAT_VERSION + 1;
	tg_write(tg, path);
	tg_destroy(tg);
	char want[128];
	snprintf(want, sizeof(want),
		 "written by a newer libprof (format %d, this prof reads up to %d)",
		 PROF_FORMAT_VERSION + 2, PROF_FORMAT_VERSION);
	open_fails(want);
}

Test(reader_errors, unknown_required_feature)
{
	write_default();
	tg_patch_header(path, features, (1ull << 40) | 0x80);
	open_fails("required features 0x80");
}

Test(reader_errors, header_size)
{
	write_default();
	tg_patch_header(path, header_size, 100);
	open_fails("header_size 100");
	tg_patch_header(path, header_size, 0xfffffff0u);
	open_fails("truncated");
}

Test(reader_errors, bad_chunk_size)
{
	uint32_t bad[] = {0, 1000, 4097, 2048, 12288, 128u << 20, 0x80000000u};
	write_default();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tg_patch_header(path, chunk_size, bad[i]);
		open_fails("chunk_size");
	}
}

Test(reader_errors, bad_data_offset)
{
	write_default();
	tg_patch_header(path, data_offset, 100);
	open_fails("data_offset 100");
	tg_patch_header(path, data_offset, 4100);
	open_fails("data_offset 4100");
	tg_patch_header(path, data_offset, 0);
	open_fails("data_offset 0");
}

Test(reader_errors, data_offset_below_header_size)
{
	struct tg *tg = tg_create();
	tg_set_header_extra(tg, 5000);
	tg_write(tg, path);
	tg_destroy(tg);
	tg_patch_header(path, data_offset, 4096);
	open_fails("data_offset 4096");
}

Test(reader_errors, bad_strings)
{
	write_default();
	tg_patch_header(path, strings_offset, 0);
	open_fails("string area");
	write_default();
	tg_patch_header(path, strings_offset, 8);  /* inside the fixed fields */
	open_fails("string area");
	write_default();
	tg_patch_header(path, strings_size, 4000);  /* past header_size */
	open_fails("string area");
	write_default();
	tg_patch_header(path, strings_size, 0);
	open_fails("string area");
	write_default();
	tg_patch_header(path, argc, 3);  /* only 2 argv strings */
	open_fails("holds 4 strings, need 5");
	write_default();
	tg_patch_header(path, argc, 0xffffffffu);
	open_fails("need 4294967297");
	write_default();
	tg_patch_header(path, strings_size, 12);  /* "/bin/test\0th": ends inside a string */
	open_fails("not NUL-terminated");
}

Test(reader_errors, truncated)
{
	struct tg *tg = tg_create();
	for (int i = 0; i < 300; i++)
		tg_alloc(tg, 0, (uint64_t)i, 1, 1, 0);
	uint64_t n = tg_chunk_count(tg);
	tg_write(tg, path);
	tg_destroy(tg);
	uint64_t full = 4096 + n * 4096;
	tg_truncate(path, full - 4096 - 100);
	/* Read as far as it goes: every record of the chunks that are whole, then the end. */
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(trace_promised(t), full);
	struct trace_event ev;
	size_t allocs = 0;
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) > 0)
		allocs += ev.rec->type == PROF_REC_ALLOC;
	cr_expect_eq(rc, 0, "%s", err);
	cr_expect_gt(allocs, 0);
	cr_expect_lt(allocs, 300);
	trace_close(t);
}

Test(reader_errors, chunks_claimed_huge)
{
	write_default();
	tg_patch_header(path, chunks_claimed, ~0ull);
	open_fails("truncated");
	tg_patch_header(path, chunks_claimed, 1ull << 52);
	open_fails("truncated");
	/* Representable, only far past the end: read as a cut file. */
	tg_patch_header(path, chunks_claimed, 1ull << 40);
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_gt(trace_promised(t), 0);
	trace_close(t);
}

Test(reader_errors, bad_chunk_magic)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_alloc(tg, 2, 10, 1, 1, 0);
	uint64_t c1 = tg_chunk_offset(tg, 1);
	tg_write(tg, path);
	tg_destroy(tg);
	uint32_t m = 0xdeadbeef;
	tg_patch(path, c1, &m, 4);
	char want[64];
	snprintf(want, sizeof(want), "offset %lu: bad chunk magic 0xdeadbeef", (unsigned long)c1);
	open_fails(want);
}

Test(reader_errors, duplicate_seq)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_new_chunk(tg, 0);
	tg_alloc(tg, 0, 20, 2, 1, 0);
	uint64_t c1 = tg_chunk_offset(tg, 1);
	tg_write(tg, path);
	tg_destroy(tg);
	uint32_t seq = 0;
	tg_patch(path, c1 + offsetof(struct prof_chunk_header, seq), &seq, 4);
	open_fails("appears twice");
	open_fails("offset");
}

/* Appends one raw 16-byte-or-more record to stream 0 after `good` valid ones. */
static uint64_t write_with_bad(size_t good, const void *bytes, size_t len)
{
	struct tg *tg = tg_create();
	for (size_t i = 0; i < good; i++)
		tg_alloc(tg, 0, 10 + i, 1, 1, 0);
	tg_alloc(tg, 2, 1000, 1, 1, 0);
	uint64_t off = tg_raw(tg, 0, bytes, len);
	tg_alloc(tg, 0, 2000, 1, 1, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	return off;
}

Test(reader_errors, zero_size_record)
{
	struct prof_rec r = {.type = PROF_REC_ALLOC, .size = 0, .time = 500};
	uint64_t off = write_with_bad(2, &r, sizeof(r));
	next_fails(2, off, "record size 0");
}

Test(reader_errors, size_below_prefix)
{
	struct prof_rec r = {.type = 99, .size = 8, .time = 500};
	uint64_t off = write_with_bad(1, &r, sizeof(r));
	next_fails(1, off, "record size 8");
}

Test(reader_errors, unaligned_size)
{
	uint8_t b[24] = {0};
	struct prof_rec r = {.type = 99, .size = 20, .time = 500};
	memcpy(b, &r, sizeof(r));
	uint64_t off = write_with_bad(2, b, sizeof(b));
	next_fails(2, off, "not a multiple of 8");
}

Test(reader_errors, record_past_chunk_end)
{
	struct prof_rec r = {.type = PROF_REC_ALLOC, .size = 4096, .time = 500};
	uint64_t off = write_with_bad(3, &r, sizeof(r));
	next_fails(3, off, "past the chunk end");
	r.size = 0xfffffff8u;
	off = write_with_bad(3, &r, sizeof(r));
	next_fails(3, off, "past the chunk end");
}

Test(reader_errors, known_record_too_short)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	uint64_t off = tg_rec(tg, 0, PROF_REC_ALLOC, 0, 20, NULL, 8);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails(1, off, "ALLOC record size 24 is smaller than 40");
}

/* A STACK or STACK_TAIL whose header words (id, depth[, parent, shared]) are head and which
 * holds `frames` frames, after `before` ALLOC records: the reader must fail on it. */
static void bad_stack(uint16_t type, const uint32_t *head, size_t nhead, size_t frames,
		      int before, const char *want)
{
	struct tg *tg = tg_create();
	uint8_t payload[16 + 8 * 300] = {0};
	memcpy(payload, head, 4 * nhead);
	for (int i = 0; i < before; i++)
		tg_alloc(tg, 0, 10, 1, 1, 0);
	uint64_t off = tg_rec(tg, 0, type, 0, 20, payload, 4 * nhead + 8 * frames);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails((size_t)before, off, want);
}

Test(reader_errors, stack_too_deep)
{
	const uint32_t head[] = { 0, 300 };
	bad_stack(PROF_REC_STACK, head, 2, 300, 0, "STACK depth 300 is over");
}

Test(reader_errors, stack_depth_past_size)
{
	const uint32_t head[] = { 0, 3 };
	bad_stack(PROF_REC_STACK, head, 2, 2, 1, "STACK depth 3 does not fit in size 40");
}

Test(reader_errors, stack_tail_too_deep)
{
	const uint32_t head[] = { 0, 200, 1, 100 };
	bad_stack(PROF_REC_STACK_TAIL, head, 4, 200, 0, "STACK_TAIL depth 200 + shared 100 is over");
}

Test(reader_errors, stack_tail_depth_past_size)
{
	const uint32_t head[] = { 0, 3, 0, 0 };
	bad_stack(PROF_REC_STACK_TAIL, head, 4, 2, 0, "STACK_TAIL depth 3 does not fit in size 48");
}

static uint64_t write_module(uint32_t build_id_len, const char *path_bytes, size_t plen)
{
	struct tg *tg = tg_create();
	struct prof_rec_module m = {.id = 1, .build_id_len = build_id_len};
	uint8_t payload[256];
	size_t fixed = sizeof(m) - 16;
	memcpy(payload, (uint8_t *)&m + 16, fixed);
	memcpy(payload + fixed, path_bytes, plen);
	uint64_t off = tg_rec(tg, 0, PROF_REC_MODULE, 0, 20, payload, fixed + plen);
	tg_write(tg, path);
	tg_destroy(tg);
	return off;
}

Test(reader_errors, module_path_unterminated)
{
	uint64_t off = write_module(0, "/lib/x.so", 8);  /* 8 bytes, no NUL: no padding either */
	next_fails(0, off, "MODULE path is not NUL-terminated");
	off = write_module(0, "", 0);  /* no path at all */
	next_fails(0, off, "MODULE path is not NUL-terminated");
}

Test(reader_errors, module_build_id_too_long)
{
	uint64_t off = write_module(21, "/lib/x.so", 10);
	next_fails(0, off, "build_id_len 21");
}

Test(reader_errors, exec_path_unterminated)
{
	struct tg *tg = tg_create();
	uint64_t off = tg_rec(tg, 0, PROF_REC_EXEC, 0, 20, "/bin/bad", 8);
	tg_write(tg, path);
	tg_destroy(tg);
	next_fails(0, off, "EXEC path is not NUL-terminated");
}

Test(reader_errors, prefix_crossing_chunk_end)
{
	/* Fill a chunk to its last 8 bytes, then put a nonzero half-prefix there. */
	struct tg *tg = tg_create();
	uint64_t off = 0;
	for (int i = 0; i < 100; i++)
		off = tg_alloc(tg, 0, (uint64_t)i, 1, 1, 0);  /* 16 + 100*40 = 4016 */
	uint8_t b[72] = {0};
	struct prof_rec r = {.type = 99, .size = 72};
	memcpy(b, &r, 16);
	off = tg_raw(tg, 0, b, 72);  /* ends at 4088 */
	cr_assert_eq(off % 4096, 4016);
	tg_write(tg, path);
	tg_destroy(tg);
	uint64_t bad = 0x0000001800000063ull;  /* type 99, size 24, in the last 8 bytes */
	tg_patch(path, off + 72, &bad, 8);
	next_fails(101, off + 72, "crosses the chunk end");
}

/* The file is cut after trace_open() (it was copied while written, or truncated meanwhile):
 * the read that comes back short is an error at the offset it read, never a crash. */
Test(reader_errors, cut_while_reading)
{
	struct tg *tg = tg_create();
	tg_header(tg)->chunk_size = 1u << 20;
	uint64_t first = tg_alloc(tg, 0, 1, 1, 1, 0);
	for (uint64_t i = 1; i < 3000; i++)
		tg_alloc(tg, 0, i + 1, i + 1, 1, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	char err[512] = "";
	struct trace *t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "trace_open: %s", err);
	tg_truncate(path, first + 1000);
	struct trace_event ev;
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), -1);
	assert_one_line(err);
	cr_assert_not_null(strstr(err, "short read"), "%s", err);
	char o[64];
	snprintf(o, sizeof(o), ": offset %lu: ", (unsigned long)first);
	cr_assert_not_null(strstr(err, o), "'%s' lacks '%s'", err, o);
	trace_close(t);

	/* Cut further in: the records read before the cut come out, then the error. */
	tg = tg_create();
	tg_header(tg)->chunk_size = 1u << 20;
	uint64_t off[3000];
	for (uint64_t i = 0; i < 3000; i++)
		off[i] = tg_alloc(tg, 0, i + 1, i + 1, 1, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	t = trace_open(path, err, sizeof(err));
	cr_assert_not_null(t, "trace_open: %s", err);
	size_t n = 0;
	int rc;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		cr_assert_eq(ev.offset, off[n]);
		if (++n == 10)
			tg_truncate(path, off[2000]);
	}
	cr_assert_eq(rc, -1);
	assert_one_line(err);
	cr_assert_not_null(strstr(err, "short read"), "%s", err);
	cr_assert_lt(n, 2000, "records past the cut came out");
	cr_assert_gt(n, 10);
	snprintf(o, sizeof(o), ": offset %lu: ", (unsigned long)off[n]);
	cr_assert_not_null(strstr(err, o), "'%s' lacks '%s'", err, o);
	trace_close(t);
}
