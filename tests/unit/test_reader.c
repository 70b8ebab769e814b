/* Reader tests, valid traces: merge order, chunk handling, SIGKILL ends, compatibility with
 * newer writers. Malformed files: test_reader_errors.c; fuzzing and allocation failure:
 * test_reader_fuzz.c, test_reader_chaos.c. */
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
	snprintf(path, sizeof(path), "%s/t.trace", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(reader, .init = setup, .fini = teardown);

#define MAXEV 4096
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

static size_t write_and_read(struct tg *tg, struct trace **out)
{
	tg_write(tg, path);
	tg_destroy(tg);
	*out = open_ok();
	return read_all(*out);
}

Test(reader, header_strings_and_fields)
{
	struct tg *tg = tg_create();
	const char *argv[] = {"prog", "-x", "", "last arg"};
	tg_set_exe(tg, "/usr/bin/prog");
	tg_set_host(tg, "node17");
	tg_set_argv(tg, 4, argv);
	tg_header(tg)->pid = 77;
	tg_header(tg)->rank = 3;
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 0);
	cr_assert_str_eq(trace_exe(t), "/usr/bin/prog");
	cr_assert_str_eq(trace_host(t), "node17");
	cr_assert_eq(trace_argc(t), 4);
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_str_eq(trace_argv(t, i), argv[i]);
	cr_assert_null(trace_argv(t, 4));
	cr_assert_eq(trace_header(t)->pid, 77);
	cr_assert_eq(trace_header(t)->rank, 3);
	cr_assert_str_eq(trace_path(t), path);
	trace_close(t);
}

Test(reader, merge_order_across_streams)
{
	struct tg *tg = tg_create();
	uint32_t ids[] = {0, 2, 3, 6};
	/* Stream k writes times k+1, k+1+4, ...: interleaved; stream 6 shares times with 0. */
	for (int i = 0; i < 40; i++)
		for (int k = 0; k < 4; k++) {
			uint64_t time = k == 3 ? (uint64_t)i * 4 + 1 : (uint64_t)i * 4 + k + 1;
			tg_alloc(tg, ids[k], time, (uint64_t)ids[k] << 32 | (uint64_t)i, 8, 0);
		}
	struct trace *t;
	size_t n = write_and_read(tg, &t);
	cr_assert_eq(n, 160);
	int next[7] = {0};
	for (size_t i = 0; i < n; i++) {
		const struct prof_rec_alloc *a = (const void *)evs[i].rec;
		cr_assert_eq(a->h.type, PROF_REC_ALLOC);
		cr_assert_eq(a->ptr >> 32, evs[i].stream);
		cr_assert_eq((int)(a->ptr & 0xffffffff), next[evs[i].stream]++, "stream order");
		cr_assert_eq(evs[i].tid, 4242 + evs[i].stream / 2);
		if (i) {
			uint64_t t0 = evs[i - 1].rec->time, t1 = evs[i].rec->time;
			cr_assert(t0 < t1 || (t0 == t1 && evs[i - 1].stream < evs[i].stream),
				  "order at %zu: (%lu,%u) then (%lu,%u)", i, t0, evs[i - 1].stream,
				  t1, evs[i].stream);
		}
	}
	trace_close(t);
}

Test(reader, offsets_match_writer)
{
	struct tg *tg = tg_create();
	uint64_t o1 = tg_alloc(tg, 0, 10, 1, 1, 0);
	uint64_t o2 = tg_free(tg, 2, 20, 1);
	uint64_t o3 = tg_exit(tg, 0, 30, 0, 3);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 3);
	cr_assert_eq(evs[0].offset, o1);
	cr_assert_eq(evs[1].offset, o2);
	cr_assert_eq(evs[2].offset, o3);
	cr_assert_eq(evs[1].stream, 2);
	trace_close(t);
}

Test(reader, time_backwards_in_stream_keeps_stream_order)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 100, 1, 1, 0);
	tg_alloc(tg, 0, 50, 2, 1, 0);  /* clock went back: still after ptr 1 */
	tg_alloc(tg, 0, 200, 3, 1, 0);
	tg_alloc(tg, 2, 60, 4, 1, 0);
	tg_alloc(tg, 2, 150, 5, 1, 0);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 5);
	/* Heads (100, 60): 4; (100, 150): 1; (50, 150): 2; (200, 150): 5; then 3. */
	uint64_t want[] = {4, 1, 2, 5, 3};
	for (int i = 0; i < 5; i++)
		cr_assert_eq(((const struct prof_rec_alloc *)evs[i].rec)->ptr, want[i]);
	trace_close(t);
}

Test(reader, chunk_overflow)
{
	struct tg *tg = tg_create();
	for (uint64_t i = 0; i < 1000; i++) {
		tg_alloc(tg, 0, 10 + 2 * i, i, i, 0);
		if (i % 7 == 0)
			tg_free(tg, 2, 11 + 2 * i, i);
	}
	cr_assert_gt(tg_chunk_count(tg), 10);
	struct trace *t;
	size_t n = write_and_read(tg, &t);
	cr_assert_eq(n, 1000 + 143);
	uint64_t next = 0;
	for (size_t i = 0; i < n; i++)
		if (evs[i].rec->type == PROF_REC_ALLOC)
			cr_assert_eq(((const struct prof_rec_alloc *)evs[i].rec)->ptr, next++);
	cr_assert_eq(next, 1000);
	trace_close(t);
}

Test(reader, chunks_follow_seq_not_file_order)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_new_chunk(tg, 0);
	tg_alloc(tg, 0, 20, 2, 1, 0);
	uint64_t c0 = tg_chunk_offset(tg, 0), c1 = tg_chunk_offset(tg, 1);
	tg_write(tg, path);
	tg_destroy(tg);
	uint32_t seq = 1;
	tg_patch(path, c0 + offsetof(struct prof_chunk_header, seq), &seq, 4);
	seq = 0;
	tg_patch(path, c1 + offsetof(struct prof_chunk_header, seq), &seq, 4);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 2);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[0].rec)->ptr, 2);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[1].rec)->ptr, 1);
	trace_close(t);
}

Test(reader, unknown_type_returned_and_skipped)
{
	struct tg *tg = tg_create();
	uint8_t junk[36];
	memset(junk, 0x5a, sizeof(junk));
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_rec(tg, 0, 200, 7, 20, junk, sizeof(junk));
	tg_rec(tg, 0, 0, 0, 25, NULL, 0);  /* type 0 is unknown too */
	tg_alloc(tg, 0, 30, 2, 1, 0);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 4);
	cr_assert_eq(evs[1].rec->type, 200);
	cr_assert_eq(evs[1].rec->size, 56);
	cr_assert_eq(evs[2].rec->type, 0);
	cr_assert_eq(evs[3].rec->type, PROF_REC_ALLOC);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[3].rec)->ptr, 2);
	trace_close(t);
}

Test(reader, every_known_type_round_trips)
{
	struct tg *tg = tg_create();
	uint64_t frames[3] = {0x401000, 0x401234, 0x7f0000001000};
	uint8_t bid[20];
	for (int i = 0; i < 20; i++)
		bid[i] = (uint8_t)i;
	tg_module(tg, 0, 1, 1, 0x400000, 0x500000, 0, bid, 20, "/usr/bin/prog");
	tg_stack(tg, 0, 2, 9, frames, 3);
	tg_stack(tg, 0, 2, 10, NULL, 0);
	tg_thread_start(tg, 2, 3, 1, 4243, 0, 9, 0x401100);
	tg_alloc_fn(tg, 2, 4, PROF_ALLOC_CALLOC, 0x1000, 32, 9);
	tg_realloc(tg, 2, 5, 0x1000, 0x2000, 64, 9);
	tg_lost(tg, 2, 6, 12);
	tg_thread_end(tg, 2, 7, 1, 4243, 5000, "worker-thread-long-name");
	tg_module_unload(tg, 0, 8, 1);
	tg_fork(tg, 0, 9, 999);
	tg_exec(tg, 0, 10, "/bin/sh");
	tg_exit(tg, 0, 11, 0, 0);
	tg_rec(tg, 0, PROF_REC_PAD, 0, 12, NULL, 16);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 14);
	const struct prof_rec_stack *s = (const void *)evs[1].rec;
	cr_assert_eq(s->depth, 3);
	cr_assert_eq(s->frames[2], 0x7f0000001000);
	const struct prof_rec_module *m = (const void *)evs[0].rec;
	cr_assert_str_eq(m->path, "/usr/bin/prog");
	cr_assert_eq(m->build_id[19], 19);
	cr_assert_eq(evs[5].rec->type, PROF_REC_FREE);
	cr_assert_eq(evs[5].rec->flags, PROF_FREE_REALLOC);
	cr_assert_eq(evs[6].rec->flags, PROF_ALLOC_REALLOC);
	const struct prof_rec_thread_end *te = (const void *)evs[8].rec;
	cr_assert_eq(strnlen(te->name, 16), 15);
	cr_assert_str_eq(((const struct prof_rec_exec *)evs[11].rec)->path, "/bin/sh");
	cr_assert_eq(evs[13].rec->type, PROF_REC_PAD);
	trace_close(t);
}

Test(reader, empty_trace_has_no_records)
{
	struct tg *tg = tg_create();
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 0);
	trace_close(t);
}

Test(reader, claimed_zero_chunk_skipped)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_claim_empty(tg);
	tg_new_chunk(tg, 0);
	tg_alloc(tg, 0, 20, 2, 1, 0);
	tg_claim_empty(tg);
	cr_assert_eq(tg_chunk_count(tg), 4);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 2);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[1].rec)->ptr, 2);
	trace_close(t);
}

/* A SIGKILL leaves the record being written with a zero prefix: the chunk ends there, the
 * records before it are read, and the stream goes on in its next chunk. */
Test(reader, zero_prefix_ends_chunk)
{
	struct tg *tg = tg_create();
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_alloc(tg, 0, 20, 2, 1, 0);
	uint64_t cut = tg_alloc(tg, 0, 30, 3, 1, 0);
	tg_alloc(tg, 0, 40, 4, 1, 0);
	tg_new_chunk(tg, 0);
	tg_alloc(tg, 0, 50, 5, 1, 0);
	tg_alloc(tg, 2, 35, 6, 1, 0);
	tg_write(tg, path);
	tg_destroy(tg);
	uint64_t zero = 0;
	tg_patch(path, cut, &zero, 8);
	struct trace *t = open_ok();
	cr_assert_eq(read_all(t), 4);
	uint64_t want[] = {1, 2, 6, 5};
	for (int i = 0; i < 4; i++)
		cr_assert_eq(((const struct prof_rec_alloc *)evs[i].rec)->ptr, want[i]);
	trace_close(t);
}

Test(reader, running_state_full_length_file)
{
	/* What a SIGKILL leaves: state RUNNING, last chunk half written, no EXIT. */
	struct tg *tg = tg_create();
	tg_header(tg)->state = PROF_STATE_RUNNING;
	for (uint64_t i = 0; i < 10; i++)
		tg_alloc(tg, 0, i, i, 1, 0);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 10);
	trace_close(t);
}

Test(reader, newer_version_readable)
{
	struct tg *tg = tg_create();
	tg_header(tg)->version = 5;
	tg_header(tg)->min_version = 1;
	tg_header(tg)->features = 1ull << 40;  /* informational: ignored */
	tg_set_header_extra(tg, 64);
	/* A newer ALLOC with 16 more bytes appended. */
	struct prof_rec_alloc a = {.ptr = 0x1234, .size = 5, .stack = 1};
	uint8_t payload[sizeof(a) - 16 + 16];
	memset(payload, 0xee, sizeof(payload));
	memcpy(payload, (uint8_t *)&a + 16, sizeof(a) - 16);
	tg_rec(tg, 0, PROF_REC_ALLOC, 0, 10, payload, sizeof(payload));
	tg_stack(tg, 0, 11, 1, (uint64_t[]){1, 2}, 2);
	tg_alloc(tg, 0, 12, 0x5678, 1, 1);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 3);
	cr_assert_eq(evs[0].rec->size, 56);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[0].rec)->ptr, 0x1234);
	cr_assert_eq(((const struct prof_rec_alloc *)evs[2].rec)->ptr, 0x5678);
	cr_assert_eq(trace_header(t)->version, 5);
	trace_close(t);
}

Test(reader, larger_header_size)
{
	struct tg *tg = tg_create();
	tg_set_header_extra(tg, 6000);  /* header past 4096: data_offset moves to 8192 */
	tg_alloc(tg, 0, 10, 1, 1, 0);
	tg_alloc(tg, 2, 5, 2, 1, 0);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 2);
	cr_assert_gt(trace_header(t)->header_size, 6000);
	cr_assert_eq(trace_header(t)->data_offset, 8192);
	cr_assert_str_eq(trace_exe(t), "/bin/test");
	cr_assert_str_eq(trace_argv(t, 1), "--flag");
	cr_assert_eq(((const struct prof_rec_alloc *)evs[0].rec)->ptr, 2);
	trace_close(t);
}

Test(reader, big_chunks)
{
	struct tg *tg = tg_create();
	tg_header(tg)->chunk_size = 1u << 20;
	for (uint64_t i = 0; i < 3000; i++)
		tg_alloc(tg, (uint32_t)(i % 3), i, i, 1, 0);
	struct trace *t;
	cr_assert_eq(write_and_read(tg, &t), 3000);
	for (uint64_t i = 0; i < 3000; i++)
		cr_assert_eq(((const struct prof_rec_alloc *)evs[i].rec)->ptr, i);
	trace_close(t);
}

/* Streams longer than the reader's window (64 KiB): records cross its end, and one record is
 * larger than it. */
Test(reader, records_across_windows)
{
	struct tg *tg = tg_create();
	tg_header(tg)->chunk_size = 1u << 20;
	static uint8_t big[200000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	uint64_t t = 0, big_off = 0;
	for (uint64_t i = 0; i < 3500; i++) {
		tg_alloc(tg, (uint32_t)(i % 2) * 2, ++t, i, 1, 0);
		if (i == 2500)
			big_off = tg_rec(tg, 2, 200, 0, ++t, big, sizeof(big));
		if (i % 97 == 0)
			tg_exec(tg, 0, ++t, "/some/path/that/is/a/string/record");
	}
	struct trace *tr;
	size_t n = write_and_read(tg, &tr);
	cr_assert_eq(n, 3500 + 1 + 37);
	uint64_t next = 0;
	int seen_big = 0;
	for (size_t i = 0; i < n; i++) {
		if (evs[i].rec->type == PROF_REC_ALLOC) {
			cr_assert_eq(((const struct prof_rec_alloc *)evs[i].rec)->ptr, next++);
		} else if (evs[i].rec->type == 200) {
			cr_assert_eq(evs[i].offset, big_off);
			cr_assert_eq(evs[i].rec->size, 16 + sizeof(big));
			cr_assert_eq(memcmp(evs[i].rec + 1, big, sizeof(big)), 0);
			seen_big = 1;
		} else {
			cr_assert_eq(evs[i].rec->type, PROF_REC_EXEC);
		}
	}
	cr_assert_eq(next, 3500);
	cr_assert(seen_big);
	trace_rewind(tr);
	cr_assert_eq(read_all(tr), n, "a second pass");
	trace_close(tr);
}

Test(reader, rewind_repeats_the_pass)
{
	struct tg *tg = tg_create();
	for (uint64_t i = 0; i < 300; i++)
		tg_alloc(tg, (uint32_t)(i % 4), 1000 - i, i, 1, 0);
	struct trace *t;
	size_t n = write_and_read(tg, &t);
	cr_assert_eq(n, 300);
	uint64_t first[300];
	for (size_t i = 0; i < n; i++)
		first[i] = evs[i].offset;
	trace_rewind(t);
	cr_assert_eq(read_all(t), 300);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(evs[i].offset, first[i]);
	/* Rewinding mid-pass too. */
	trace_rewind(t);
	char err[256];
	cr_assert_eq(trace_next(t, &evs[0], err, sizeof(err)), 1);
	trace_rewind(t);
	cr_assert_eq(read_all(t), 300);
	cr_assert_eq(evs[0].offset, first[0]);
	struct trace_event ev;
	cr_assert_eq(trace_next(t, &ev, err, sizeof(err)), 0, "end stays the end");
	trace_close(t);
}

Test(reader, merge_many_streams_random_times)
{
	struct tg *tg = tg_create();
	uint64_t last[40] = {0}, x = 12345;
	/* Records are added in a shuffled stream order; each stream's times never decrease and
	 * often tie with other streams'. */
	for (int i = 0; i < 2400; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t k = (uint32_t)(x >> 33) % 40;
		last[k] += (x >> 20) % 4;
		tg_alloc(tg, k * 2 + (k % 3 == 0), last[k], (uint64_t)i, 1, 0);
	}
	struct trace *t;
	size_t n = write_and_read(tg, &t);
	cr_assert_eq(n, 2400);
	for (size_t i = 1; i < n; i++) {
		uint64_t t0 = evs[i - 1].rec->time, t1 = evs[i].rec->time;
		uint32_t s0 = evs[i - 1].stream, s1 = evs[i].stream;
		uint64_t p0 = ((const struct prof_rec_alloc *)evs[i - 1].rec)->ptr;
		uint64_t p1 = ((const struct prof_rec_alloc *)evs[i].rec)->ptr;
		cr_assert(t0 < t1 || (t0 == t1 && (s0 < s1 || (s0 == s1 && p0 < p1))),
			  "at %zu: (%lu, %u, %lu) then (%lu, %u, %lu)", i, t0, s0, p0, t1, s1, p1);
	}
	trace_close(t);
}
