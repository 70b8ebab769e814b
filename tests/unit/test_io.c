/* Unit tests of the I/O analysis: latency histograms and percentiles, and per-file results
 * from synthetic traces (names, renames, failed opens, EOF, the slowest calls, flame weights). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "findings.h"
#include "io.h"
#include "process.h"
#include "tracegen.h"

/* ---- histograms -------------------------------------------------------------------------- */

Test(io_hist, buckets_are_monotonic_and_cover_their_values)
{
	unsigned prev = 0;
	for (uint64_t v = 0; v < 100000; v++) {
		unsigned b = io_hist_bucket(v);
		cr_assert_geq(b, prev, "bucket of %lu went down", (unsigned long)v);
		cr_assert_leq(io_hist_bucket_low(b), v);
		if (b + 1 < IO_HIST_BUCKETS)
			cr_assert_gt(io_hist_bucket_low(b + 1), v);
		prev = b;
	}
	cr_assert_lt(io_hist_bucket(UINT64_MAX), IO_HIST_BUCKETS);
	for (unsigned b = 0; b < 8; b++)
		cr_assert_eq(io_hist_bucket(b), b, "small values are exact");
}

Test(io_hist, quantiles_within_a_bucket_of_the_truth)
{
	struct io_hist h = { 0 };
	for (uint64_t v = 1; v <= 10000; v++)
		cr_assert_eq(io_hist_add(&h, v * 100), 0);
	const double qs[] = { 0.5, 0.95, 0.99 };
	const uint64_t truth[] = { 500000, 950000, 990000 };
	for (int i = 0; i < 3; i++) {
		uint64_t got = io_hist_quantile(&h, qs[i]);
		double err = (double)got / (double)truth[i] - 1.0;
		cr_expect(err > -0.125 && err < 0.125, "p%g: %lu, truth %lu", qs[i] * 100,
			  (unsigned long)got, (unsigned long)truth[i]);
	}
	cr_expect_eq(h.max, 1000000);
	cr_expect_eq(io_hist_quantile(&h, 1.0), h.max);
	io_hist_free(&h);
}

Test(io_hist, quantile_never_above_max_and_merge_adds)
{
	struct io_hist a = { 0 }, b = { 0 };
	cr_expect_eq(io_hist_quantile(&a, 0.5), 0, "empty: 0");
	io_hist_add(&a, 1000);
	cr_expect_eq(io_hist_quantile(&a, 0.5), 1000, "one value: that value");
	for (int i = 0; i < 99; i++)
		io_hist_add(&b, 5);
	cr_assert_eq(io_hist_merge(&a, &b), 0);
	cr_expect_eq(a.count, 100);
	cr_expect_eq(io_hist_quantile(&a, 0.5), 5);
	cr_expect_eq(io_hist_quantile(&a, 0.99), 5);
	cr_expect_eq(io_hist_quantile(&a, 1.0), 1000);
	io_hist_free(&a);
	io_hist_free(&b);
}

Test(io_hist, kinds_from_names)
{
	cr_expect_str_eq(io_kind("/etc/passwd"), "file");
	cr_expect_str_eq(io_kind("/dev/null"), "device");
	cr_expect_str_eq(io_kind("pipe:[123]"), "pipe");
	cr_expect_str_eq(io_kind("socket:[9]"), "socket");
	cr_expect_str_eq(io_kind("tcp 127.0.0.1:80"), "tcp");
	cr_expect_str_eq(io_kind("tcp6 [::1]:80"), "tcp");
	cr_expect_str_eq(io_kind("udp 10.0.0.1:53"), "udp");
	cr_expect_str_eq(io_kind("unix /run/x.sock"), "unix");
	cr_expect_str_eq(io_kind("(not open: fd 9)"), "other");
}

/* ---- analysis of synthetic traces --------------------------------------------------------- */

static uint64_t io_name(struct tg *tg, uint32_t stream, uint64_t t, unsigned op, uint32_t file,
			int32_t fd, int64_t result, uint64_t dur, uint32_t stack, const char *path)
{
	char payload[512];
	struct prof_rec_io_name r;
	size_t fixed = sizeof(r) - sizeof(struct prof_rec);
	memset(payload, 0, sizeof(payload));
	r.file = file;
	r.fd = fd;
	r.result = result;
	r.duration_ns = dur;
	r.stack = stack;
	r.pad = 0;
	memcpy(payload, (char *)&r + sizeof(struct prof_rec), fixed);
	size_t len = strlen(path) + 1;
	memcpy(payload + fixed, path, len);
	return tg_rec(tg, stream, PROF_REC_IO_NAME, (uint16_t)op, t, payload, fixed + len);
}

static uint64_t io_call(struct tg *tg, uint32_t stream, uint64_t t, unsigned op, uint32_t file,
			int32_t fd, int64_t result, uint64_t dur, uint32_t stack)
{
	struct prof_rec_io_call r;
	memset(&r, 0, sizeof(r));
	r.file = file;
	r.fd = fd;
	r.result = result;
	r.duration_ns = dur;
	r.stack = stack;
	return tg_rec(tg, stream, PROF_REC_IO_CALL, (uint16_t)op, t, (char *)&r + sizeof(struct prof_rec),
		      sizeof(r) - sizeof(struct prof_rec));
}

static char dir[128];

static void load(struct tg *tg, struct process *p)
{
	char err[512];
	tg_tmpdir(dir, sizeof(dir));
	cr_assert_eq(tg_load(tg, dir, p, err, sizeof(err)), 0, "%s", err);
}

static void unload(struct process *p)
{
	process_free(p);
	tg_tmpdir_remove(dir);
}

static const struct io_file *file(const struct process *p, const char *path)
{
	for (size_t i = 0; i < io_of(p)->nfiles; i++)
		if (io_of(p)->files[i].merged_into < 0 && !strcmp(io_of(p)->files[i].path, path))
			return &io_of(p)->files[i];
	return NULL;
}

#define T0 TG_START_NS

Test(io_analysis, connect_in_progress_is_not_an_error)
{
	struct tg *tg = tg_create();
	io_name(tg, 0, T0 + 10, PROF_IO_SOCKET, 2, 3, 3, 500, 0, "tcp 127.0.0.1:9");
	io_call(tg, 0, T0 + 20, PROF_IO_CONNECT, 2, 3, -EINPROGRESS, 100, 0);
	io_call(tg, 0, T0 + 30, PROF_IO_CONNECT, 2, 3, -ECONNREFUSED, 100, 0);
	tg_exit(tg, 0, T0 + 1000, 0, 0);
	struct process p;
	load(tg, &p);
	const struct io_file *f = file(&p, "tcp 127.0.0.1:9");
	cr_assert_not_null(f);
	cr_expect_eq(f->errors, 1, "only the refused connect failed");
	unload(&p);
}

/* The Findings rule for I/O: a file whose slowest calls dwarf its median. */
Test(io_analysis, a_long_tail_is_a_finding)
{
	struct tg *tg = tg_create();
	io_name(tg, 0, T0 + 10, PROF_IO_OPEN, 2, 3, 3, 500, 0, "/data/slow.db");
	io_name(tg, 0, T0 + 11, PROF_IO_OPEN, 3, 4, 4, 500, 0, "/data/even.txt");
	for (int i = 0; i < 100; i++) {
		io_call(tg, 0, T0 + 100 + i, PROF_IO_READ, 2, 3, 512, i % 50 == 49 ? 5000000 : 2000, 0);
		io_call(tg, 0, T0 + 300 + i, PROF_IO_READ, 3, 4, 512, 2000, 0);
	}
	tg_exit(tg, 0, T0 + 100000000, 0, 0);
	struct process p;
	load(tg, &p);
	struct findings f;
	cr_assert_eq(findings_collect(&f, &p, 1), 0);
	cr_assert_eq(f.n, 1, "%zu findings", f.n);
	cr_expect_str_eq(f.v[0].kind, "io");
	cr_expect_str_eq(json_string_value(json_object_get(f.v[0].evidence, "path")), "/data/slow.db");
	cr_expect_not_null(strstr(f.v[0].summary, "p99"));
	findings_free(&f);
	unload(&p);
}

Test(io_analysis, bytes_calls_and_latency_per_file)
{
	struct tg *tg = tg_create();
	const uint64_t frames[] = { 0x1000, 0x2000 };
	tg_stack(tg, 0, T0 + 1, 7, frames, 2);
	io_name(tg, 0, T0 + 2, PROF_IO_INHERITED, 1, 1, 0, 0, 0, "/dev/pts/0");
	io_name(tg, 0, T0 + 10, PROF_IO_OPEN, 2, 3, 3, 500, 7, "/data/in.txt");
	for (int i = 0; i < 10; i++)
		io_call(tg, 0, T0 + 100 + i, PROF_IO_READ, 2, 3, 4096, 1000 + i, 7);
	io_call(tg, 0, T0 + 200, PROF_IO_READ, 2, 3, 0, 300, 7);   /* EOF */
	io_call(tg, 0, T0 + 300, PROF_IO_CLOSE, 2, 3, 0, 200, 7);
	io_call(tg, 0, T0 + 400, PROF_IO_WRITE, 1, 1, 12, 50000, 7);
	io_call(tg, 0, T0 + 500, PROF_IO_READ, 0, -1, -9, 100, 7); /* EBADF */
	tg_exit(tg, 0, T0 + 1000, 0, 0);
	struct process p;
	load(tg, &p);
	const struct io_file *f = file(&p, "/data/in.txt");
	cr_assert_not_null(f);
	cr_expect_eq(f->opens, 1);
	cr_expect_eq(f->reads, 11);
	cr_expect_eq(f->read_bytes, 40960);
	cr_expect_eq(f->eof_reads, 1);
	cr_expect_eq(f->closes, 1);
	cr_expect_eq(f->time_ns, 500 + 10 * 1000 + 45 + 300 + 200);
	cr_expect_eq(f->first_stack, 7);
	cr_expect_eq(f->hist[IO_CLS_READ].max, 1009);
	const struct io_file *tty = file(&p, "/dev/pts/0");
	cr_assert_not_null(tty);
	cr_expect_eq(tty->opens, 0, "inherited: no open call");
	cr_expect_eq(tty->write_bytes, 12);
	const struct io_file *bad = file(&p, "(not open: fd -1)");
	cr_assert_not_null(bad);
	cr_expect_eq(bad->errors, 1);
	cr_expect_eq(io_of(&p)->calls, 15);

	json_t *j = io_json(&p, 10);
	json_t *files = json_object_get(j, "files");
	cr_expect_eq(json_array_size(files), 3);
	json_t *first = json_array_get(files, 0);  /* most time: the 50 us write */
	cr_expect_str_eq(json_string_value(json_object_get(first, "path")), "/dev/pts/0");
	json_t *in = json_array_get(files, 1);
	const char *keys[] = { "path", "opens", "reads", "read_bytes", "writes", "write_bytes",
			       "time_ns", "p50_ns", "p95_ns", "p99_ns", "max_ns", "kind", "errors" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect_not_null(json_object_get(in, keys[i]), "no key %s", keys[i]);
	cr_expect_eq(json_integer_value(json_object_get(in, "max_ns")), 1009);
	json_t *slow = json_object_get(j, "slowest");
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(slow, 0), "duration_ns")), 50000);
	json_t *tot = json_object_get(j, "totals");
	cr_expect_eq(json_integer_value(json_object_get(tot, "read_bytes")), 40960);
	cr_expect_eq(json_integer_value(json_object_get(tot, "errors")), 1);
	json_decref(j);
	unload(&p);
}

/* A socket named socket:[N] at socket() takes its calls along when connect renames it. */
Test(io_analysis, rename_moves_a_sockets_calls)
{
	struct tg *tg = tg_create();
	io_name(tg, 0, T0 + 10, PROF_IO_SOCKET, 5, 4, 4, 100, 0, "socket:[77]");
	io_name(tg, 0, T0 + 20, PROF_IO_CONNECT, 5, 4, 0, 1000, 0, "tcp 127.0.0.1:80");
	io_call(tg, 0, T0 + 30, PROF_IO_SEND, 5, 4, 100, 10, 0);
	io_name(tg, 0, T0 + 40, PROF_IO_OPEN, 0, -1, -2, 10, 0, "/nope");  /* ENOENT */
	io_name(tg, 0, T0 + 50, PROF_IO_OPEN, 6, 4, 4, 10, 0, "/a");      /* fd 4 reused */
	io_call(tg, 0, T0 + 60, PROF_IO_READ, 6, 4, 5, 10, 0);
	tg_exit(tg, 0, T0 + 1000, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_null(file(&p, "socket:[77]"));
	const struct io_file *s = file(&p, "tcp 127.0.0.1:80");
	cr_assert_not_null(s);
	cr_expect_eq(s->opens, 1);
	cr_expect_eq(s->write_bytes, 100);
	cr_expect_eq(s->time_ns, 1110);
	const struct io_file *n = file(&p, "/nope");
	cr_assert_not_null(n);
	cr_expect_eq(n->opens, 0);
	cr_expect_eq(n->errors, 1);
	const struct io_file *a = file(&p, "/a");
	cr_assert_not_null(a);
	cr_expect_eq(a->read_bytes, 5);
	unload(&p);
}

static void sum_weights(void *ctx, uint32_t stack, uint64_t w)
{
	uint64_t *sums = ctx;
	if (stack < 4)
		sums[stack] += w;
}

Test(io_analysis, flame_weights_by_time_or_bytes)
{
	struct tg *tg = tg_create();
	const uint64_t f1[] = { 0x1000 }, f2[] = { 0x2000 };
	tg_stack(tg, 0, T0 + 1, 1, f1, 1);
	tg_stack(tg, 0, T0 + 2, 2, f2, 1);
	io_name(tg, 0, T0 + 10, PROF_IO_OPEN, 1, 3, 3, 100, 1, "/f");
	io_call(tg, 0, T0 + 20, PROF_IO_WRITE, 1, 3, 4000, 700, 2);
	io_call(tg, 0, T0 + 30, PROF_IO_READ, 1, 3, 1000, 300, 1);
	tg_exit(tg, 0, T0 + 1000, 0, 0);
	struct process p;
	load(tg, &p);
	uint64_t t[4] = { 0 }, b[4] = { 0 };
	cr_assert_eq(io_flame(&p, "time", sum_weights, t), 0);
	cr_expect_eq(t[1], 400);
	cr_expect_eq(t[2], 700);
	cr_assert_eq(io_flame(&p, "bytes", sum_weights, b), 0);
	cr_expect_eq(b[1], 1000);
	cr_expect_eq(b[2], 4000);
	/* time and bytes are the io weights; prof flame refuses any other --by. */
	const struct flame_kind *k = flame_kind_find("io", NULL);
	cr_assert_not_null(k);
	cr_expect_str_eq(k->weights[0].by, "time");
	cr_expect_str_eq(k->weights[1].by, "bytes");
	cr_expect_null(k->weights[2].by);
	unload(&p);
}

/* Only the slowest IO_SLOWEST_KEPT calls are kept, whatever the order they come in. */
Test(io_analysis, slowest_calls_are_a_bounded_top_n)
{
	struct tg *tg = tg_create();
	io_name(tg, 0, T0 + 1, PROF_IO_OPEN, 1, 3, 3, 1, 0, "/f");
	for (int i = 0; i < 1000; i++)
		io_call(tg, 0, T0 + 10 + i, PROF_IO_READ, 1, 3, 1, (uint64_t)((i * 7919) % 1000) + 10, 0);
	tg_exit(tg, 0, T0 + 5000, 0, 0);
	struct process p;
	load(tg, &p);
	cr_expect_eq(io_of(&p)->nslow, IO_SLOWEST_KEPT);
	json_t *j = io_json(&p, 5);
	json_t *slow = json_object_get(j, "slowest");
	cr_assert_eq(json_array_size(slow), 5);
	for (int i = 0; i < 5; i++)
		cr_expect_eq(json_integer_value(json_object_get(json_array_get(slow, (size_t)i),
								"duration_ns")), 1009 - i);
	json_decref(j);
	unload(&p);
}
