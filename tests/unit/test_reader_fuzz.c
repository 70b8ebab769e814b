/* Reader fuzzing: a valid multi-stream trace, mutated at random (fixed seed) thousands of
 * times; every open + full pass must end in 0 or -1 with a message, never crash or hang.
 * `make asan` runs it under ASan and UBSan. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_short.h"
#include "trace.h"
#include "unit/tracegen.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fuzz.trace", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(reader_fuzz, .init = setup, .fini = teardown);

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return tg_rand(&rng_state);
}

/* runs: the runs layout (1 KiB units, chunks of 3, a tail given back and reused); 2: also
 * short records (format 2) in a stream of their own. */
static void build_valid(int runs)
{
	struct tg *tg = tg_create();
	if (runs)
		tg_set_runs(tg, 1024, 3);
	if (runs == 2) {
		tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS;
		tg_alloc(tg, 20, 0, 0x9000, 64, 1);
		struct prof_short_base b = { .time = 0, .ptr = 0x9000, .valid = 1 };
		for (uint32_t i = 0; i < 60; i++) {
			uint64_t w[2] = { prof_short_word(&b, i % 2 ? PROF_SHORT_FREE_KIND : i % 9,
							  i, 0x9000 + 48 * i),
					  prof_short_alloc_word2(i, i) };
			tg_raw(tg, 20, w, i % 2 ? 8 : 16);
			b.time = i;
			b.ptr = 0x9000 + 48 * i;
		}
		/* Short LOCK_WAITs after an ordinary one, some of their times going back. */
		tg_header(tg)->features |= PROF_FEAT_SHORT_LOCK_WAITS;
		struct prof_rec_lock_wait lw = { .lock = 0x600000, .wait_ns = 5 };
		tg_rec(tg, 22, PROF_REC_LOCK_WAIT, PROF_LOCK_OP_LOCK, 100, (const char *)&lw + 16,
		       sizeof(lw) - 16);
		b.lock_valid = 1, b.lock_time = 100, b.lock = 0x600000;
		for (uint32_t i = 0; i < 40; i++) {
			uint64_t w[2], t = 100 + i * 7 - (i % 3) * 10, l = 0x600000 + 64 * (i % 5);
			unsigned op = i % PROF_LOCK_OP_COUNT;
			if (!prof_short_lock_words(&b, op, prof_lock_op_kind(op), t, l, 0, i, i % 4,
						   0, w))
				abort();
			tg_raw(tg, 22, w, 16);
			b.lock_time = t;
			b.lock = l;
		}
		/* Short IO_CALLs after an IO_NAME, on its file, then after an IO_CALL on another. */
		tg_header(tg)->features |= PROF_FEAT_SHORT_IO_CALLS;
		struct prof_rec_io_call io = { .file = 3, .fd = 5, .result = 5, .duration_ns = 9 };
		char name[sizeof(io) + 8] = "";
		memcpy(name, &io, sizeof(io));
		memcpy(name + sizeof(io), "/dev/x", 7);
		tg_rec(tg, 24, PROF_REC_IO_NAME, PROF_IO_OPEN, 200, name + 16, sizeof(name) - 16);
		b.io_valid = 1, b.io_time = 200, b.io_file = 3, b.io_fd = 5;
		for (uint32_t i = 0; i < 40; i++) {
			uint64_t w[2], t = 200 + i * 9 - (i % 4) * 12;
			if (i == 20) {
				io.file = 4, io.fd = 6;
				tg_rec(tg, 24, PROF_REC_IO_CALL, PROF_IO_WRITE, t, (const char *)&io + 16,
				       sizeof(io) - 16);
				b.io_time = t, b.io_file = 4, b.io_fd = 6;
				continue;
			}
			if (!prof_short_io_words(&b, i % PROF_IO_OP_COUNT, t, b.io_file, b.io_fd,
						 (int64_t)i - 3, i, i % 4, w))
				abort();
			tg_raw(tg, 24, w, 16);
			b.io_time = t;
		}
		/* Short CUDA_LAUNCHes of two kernels in turn, each after an ordinary one of its
		 * slot, some of their times going back. */
		tg_header(tg)->features |= PROF_FEAT_SHORT_CUDA;
		static struct prof_short_cuda cuda;
		prof_short_cuda_reset(&cuda);
		struct prof_rec_cuda_launch_api x = {
			.l = { .h = { .type = PROF_REC_CUDA_LAUNCH, .flags = 2 | PROF_CUDA_LAUNCH_API,
				      .size = sizeof(x) },
			       .corr = 1ull << 40, .name = 3, .grid = { 1, 1, 1 }, .block = { 32, 1, 1 } },
			.api_name = 4 };
		for (uint32_t i = 0; i < 40; i++) {
			uint64_t w[2];
			x.l.h.time = 300 + i * 5 - (i % 3) * 8;
			x.l.corr++;
			x.l.function = i % 2 ? 0x5000 : 0x5010;
			x.l.stack = i % 4;
			x.api_duration_ns = i;
			if (i < 2) {
				tg_rec(tg, 26, PROF_REC_CUDA_LAUNCH, x.l.h.flags, x.l.h.time,
				       (const char *)&x + 16, sizeof(x) - 16);
				prof_short_cuda_note(&cuda, &x.l.h);
				continue;
			}
			if (!prof_short_cuda_words(cuda.valid, cuda.time, cuda.corr, 1, &x, w))
				abort();
			tg_raw(tg, 26, w, 16);
			cuda.time = x.l.h.time;
			cuda.corr = x.l.corr;
		}
		/* Short CUDA_GPU records of a kernel and a copy in turn, in another stream. */
		struct prof_rec_cuda_gpu g = { .h = { .type = PROF_REC_CUDA_GPU, .flags = 2,
						      .size = sizeof(g) },
					       .device = 1, .grid = { 4, 1, 1 }, .block = { 64, 1, 1 } };
		for (uint32_t i = 0; i < 40; i++) {
			uint64_t w[2];
			g.h.time = 400 + i * 6 - (i % 4) * 9;
			g.corr = 1000 + i - (i % 3) * 2;
			g.start = 5000 + i * 50 - (i % 2) * 70;
			g.end = g.start + i * 3;
			g.name = i % 2 ? 3 : 0;
			g.activity = i % 2 ? PROF_CUDA_ACT_KERNEL : PROF_CUDA_ACT_COPY;
			g.bytes = i % 2 ? 0 : 4096;
			if (i < 2) {
				tg_rec(tg, 28, PROF_REC_CUDA_GPU, g.h.flags, g.h.time,
				       (const char *)&g + 16, sizeof(g) - 16);
				prof_short_gpu_note(&cuda, &g.h);
				continue;
			}
			if (!prof_short_gpu_words(cuda.gpu_valid, cuda.gpu_time, cuda.gpu_corr,
						  cuda.gpu_start, 1, &g, w))
				abort();
			tg_raw(tg, 28, w, 16);
			cuda.gpu_time = g.h.time;
			cuda.gpu_corr = g.corr;
			cuda.gpu_start = g.start;
		}
	}
	uint64_t frames[8] = {0x401000, 0x401100, 0x401200, 0x401300, 0x7f00, 0x7f01, 1, 2};
	uint8_t bid[20] = {1, 2, 3};
	tg_module(tg, 0, 1, 1, 0x400000, 0x500000, 0, bid, 20, "/usr/bin/fuzz");
	for (uint32_t i = 0; i < 400; i++) {
		uint32_t s = (i % 5) * 2 + (i % 11 == 0);
		switch (i % 6) {
		case 0: tg_stack(tg, s, i, i, frames, 1 + i % 8); break;
		case 1: tg_alloc(tg, s, i, 0x1000 + i, i, i - 1); break;
		case 2: tg_free(tg, s, i, 0x1000 + i - 1); break;
		case 3: tg_realloc(tg, s, i, 0x1000, 0x2000, 10, 1); break;
		case 4: tg_rec(tg, s, 77, 0, i, frames, 24); break;
		default: tg_thread_end(tg, s, i, s / 2, 100, 5, "t"); break;
		}
		if (i == 200)
			tg_claim_empty(tg);
		if (runs && i == 300)
			tg_shrink(tg, 2, 0);
	}
	tg_exec(tg, 0, 500, "/bin/next");
	tg_exit(tg, 0, 501, 0, 0);
	tg_write(tg, path);
	tg_destroy(tg);
}

static uint8_t *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	uint8_t *buf = malloc(*len);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void spit(const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static const uint64_t interesting[] = {
	0, 1, 7, 8, 15, 16, 24, 4095, 4096, 4097, 65536, 0x7fffffff, 0x80000000, 0xffffffff,
	0xfffffff8, 0x100000000ull, ~0ull, ~0ull - 7, 1ull << 63, 256, 257, 20, 21,
};

static void put(uint8_t *buf, size_t len, size_t off, uint64_t v, size_t width)
{
	if (off + width <= len)
		memcpy(buf + off, &v, width);
}

/* One random change to buf; may shrink *len. */
static void mutate(uint8_t *buf, size_t *len, size_t hdr_len)
{
	size_t n = *len;
	uint64_t v = rnd() % 3 ? interesting[rnd() % (sizeof(interesting) / sizeof(interesting[0]))]
			      : rnd();
	size_t width = (size_t[]){1, 2, 4, 8}[rnd() % 4];
	switch (rnd() % 8) {
	case 0: /* flip bits anywhere */
		for (int k = 1 + (int)(rnd() % 8); k > 0; k--)
			buf[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
		break;
	case 1: /* a header field */
		put(buf, n, (size_t)(rnd() % hdr_len) & ~(width - 1), v, width);
		break;
	case 2: /* a value at an aligned place in the data: record prefixes, chunk headers */
		put(buf, n, (size_t)(rnd() % n) & ~(size_t)7, v, width);
		put(buf, n, ((size_t)(rnd() % n) & ~(size_t)7) + 4, v, 4);
		break;
	case 3: /* a chunk header field */
		if (n >= 4096)
			put(buf, n, 4096 * (size_t)(rnd() % (n / 4096)) + 4 * (size_t)(rnd() % 4), v,
			    4);
		break;
	case 4: /* truncate */
		*len = (size_t)(rnd() % (n + 1));
		break;
	case 5: /* zero a run: uncommitted records, never-written chunks */
	{
		size_t off = (size_t)(rnd() % n) & ~(size_t)7, k = 8 * (1 + rnd() % 64);
		if (off + k > n)
			k = n - off;
		memset(buf + off, 0, k);
		break;
	}
	case 6: /* random bytes */
	{
		size_t off = (size_t)(rnd() % n), k = 1 + rnd() % 32;
		for (; k && off < n; k--, off++)
			buf[off] = (uint8_t)rnd();
		break;
	}
	default: /* record size/type/depth fields: offsets 0..31 of an 8-aligned place */
		put(buf, n, ((size_t)(rnd() % n) & ~(size_t)7) + (size_t)(rnd() % 4) * 4, v, 4);
		break;
	}
}

static void fuzz(int runs)
{
	build_valid(runs);
	size_t len0;
	uint8_t *orig = slurp(&len0);
	uint8_t *buf = malloc(len0);
	cr_assert_not_null(buf);
	uint32_t hdr_len = ((struct prof_file_header *)orig)->header_size;
	int opened = 0, ended = 0, failed = 0;
	{  /* the trace the mutations start from reads to its end */
		char err[512] = "";
		struct trace *t = trace_open(path, err, sizeof(err));
		cr_assert_not_null(t, "the valid trace: %s", err);
		struct trace_event ev;
		int rc;
		while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1)
			;
		cr_assert_eq(rc, 0, "the valid trace: %s", err);
		trace_close(t);
	}

	for (int iter = 0; iter < 3000; iter++) {
		size_t len = len0;
		memcpy(buf, orig, len0);
		for (int m = 1 + (int)(rnd() % 4); m > 0 && len > 0; m--)
			mutate(buf, &len, hdr_len);
		spit(buf, len);

		char err[512] = "";
		struct trace *t = trace_open(path, err, sizeof(err));
		if (!t) {
			cr_assert_str_not_empty(err, "iteration %d: NULL without a message", iter);
			cr_assert_null(strchr(err, '\n'));
			failed++;
			continue;
		}
		opened++;
		for (int pass = 0; pass < 2; pass++) {
			struct trace_event ev;
			uint64_t n = 0;
			int rc;
			while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
				/* Touch what the reader vouched for. */
				volatile uint8_t last = ((const uint8_t *)ev.rec)[ev.rec->size - 1];
				(void)last;
				cr_assert_lt(++n, 100000, "iteration %d: no end", iter);
			}
			cr_assert(rc == 0 || rc == -1, "iteration %d: rc %d", iter, rc);
			if (rc < 0) {
				cr_assert_str_not_empty(err, "iteration %d", iter);
				cr_assert_null(strchr(err, '\n'));
			}
			if (pass == 0)
				ended += rc == 0;
			trace_rewind(t);
		}
		trace_close(t);
	}
	free(buf);
	free(orig);
	cr_log_info("fuzz: %d refused at open, %d opened, %d of them read to the end",
		    failed, opened, ended);
	/* The mutations must exercise both the header checks and the record pass. */
	cr_assert_gt(opened, 300, "opened %d", opened);
	cr_assert_gt(failed, 300, "failed %d", failed);
	cr_assert_gt(ended, 100, "ended %d", ended);
}

Test(reader_fuzz, mutations_never_crash, .timeout = 300)
{
	fuzz(0);
}

Test(reader_fuzz, runs_mutations_never_crash, .timeout = 300)
{
	fuzz(1);
}

Test(reader_fuzz, short_records_mutations_never_crash, .timeout = 300)
{
	fuzz(2);
}

/* Every prefix of a valid file: open fails or the pass ends cleanly. */
static void truncations(int runs)
{
	build_valid(runs);
	size_t len0;
	uint8_t *orig = slurp(&len0);
	for (size_t len = 0; len < len0; len += (len < 1024 ? 1 : 61)) {
		spit(orig, len);
		char err[512] = "";
		struct trace *t = trace_open(path, err, sizeof(err));
		if (!t) {
			cr_assert_str_not_empty(err);
			continue;
		}
		struct trace_event ev;
		int rc;
		while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1)
			;
		cr_assert(rc == 0 || (rc == -1 && err[0]));
		trace_close(t);
	}
	free(orig);
}

Test(reader_fuzz, every_truncation, .timeout = 300)
{
	truncations(0);
}

Test(reader_fuzz, runs_every_truncation, .timeout = 300)
{
	truncations(1);
}

Test(reader_fuzz, short_records_every_truncation, .timeout = 300)
{
	truncations(2);
}
