/* Compressed traces (analyzer/zpack.c): prof pack's output reads exactly as the raw trace did,
 * a file that is not prof's is refused with one line, and mutated or cut compressed files end
 * in an error, never a crash (`make asan` runs these under ASan and UBSan). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "prof_short.h"
#include "trace.h"
#include "unit/tracegen.h"
#include "zpack.h"

static char dir[64], path[128], zpath[140];

static void setup(void)
{
	tg_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	snprintf(zpath, sizeof(zpath), "%s/t.trace.zst", dir);
}

static void teardown(void)
{
	tg_tmpdir_remove(dir);
}

TestSuite(zpack, .init = setup, .fini = teardown);

/* A trace of several streams, long enough for many frames, with short records. */
static void build(void)
{
	struct tg *tg = tg_create();
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS;
	uint64_t frames[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	tg_stack(tg, 0, 1, 1, frames, 4);
	for (uint32_t i = 0; i < 30000; i++) {
		uint32_t s = (i % 3) * 2;
		if (i % 100 == 0) {
			tg_alloc(tg, s, 10 + i, 0x1000 + i, i, 1);
		} else {
			tg_free(tg, s, 10 + i, 0x1000 + i - 1);
		}
	}
	/* Short records after an ordinary ALLOC in a fresh stream. */
	tg_alloc(tg, 8, 40000, 0x9000, 64, 1);
	struct prof_short_base b = { .time = 40000, .ptr = 0x9000, .valid = 1 };
	for (uint32_t i = 0; i < 100; i++) {
		uint64_t w[2] = { prof_short_word(&b, i % 2 ? PROF_SHORT_FREE_KIND : 0, 40001 + i,
						  0x9000 + 16 * i), prof_short_alloc_word2(i, 1) };
		tg_raw(tg, 8, w, i % 2 ? 8 : 16);
		b.time = 40001 + i;
		b.ptr = 0x9000 + 16 * i;
	}
	tg_exit(tg, 0, 50000, 0, 0);
	tg_write(tg, path);
	tg_destroy(tg);
}

/* A digest of every record a full pass returns: type, flags, time, size, offset, bytes. */
static uint64_t digest(const char *p, uint64_t *count)
{
	char err[512] = "";
	struct trace *t = trace_open(p, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	uint64_t h = 1469598103934665603ull;
	struct trace_event ev;
	int rc;
	*count = 0;
	while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
		const uint8_t *b = (const uint8_t *)ev.rec;
		for (uint32_t i = 0; i < ev.rec->size; i++)
			h = (h ^ b[i]) * 1099511628211ull;
		h = (h ^ ev.offset ^ (uint64_t)ev.stream << 40) * 1099511628211ull;
		(*count)++;
	}
	cr_assert_eq(rc, 0, "%s", err);
	trace_close(t);
	return h;
}

Test(zpack, packed_trace_reads_as_the_raw_one)
{
	build();
	uint64_t n1, n2;
	uint64_t d1 = digest(path, &n1);
	cr_assert_eq(n1, 2 + 30000 + 1 + 100);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	char err[512] = "";
	uint64_t raw, packed;
	cr_assert_eq(zpack_file(path, 3, &raw, &packed, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(raw, (uint64_t)st.st_size);
	cr_assert_neq(access(path, F_OK), 0, "the raw trace is gone");
	struct stat zs;
	cr_assert_eq(stat(zpath, &zs), 0);
	cr_assert_eq((uint64_t)zs.st_size, packed);
	cr_assert_eq(zs.st_mode & 0777, st.st_mode & 0777);
	cr_assert_lt(packed, raw / 4);
	cr_assert_gt(raw, 4 * ZPACK_FRAME_RAW, "several frames");
	cr_assert_eq(digest(zpath, &n2), d1);
	cr_assert_eq(n2, n1);
	/* Packing it again does nothing. */
	cr_assert_eq(zpack_file(zpath, 3, &raw, &packed, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, "already compressed"));
}

static void open_fails(const char *p, const char *want)
{
	char err[512] = "";
	struct trace *t = trace_open(p, err, sizeof(err));
	cr_assert_null(t, "opened; wanted '%s'", want);
	cr_assert_null(strchr(err, '\n'));
	cr_assert(!strncmp(err, p, strlen(p)), "names the file: %s", err);
	cr_assert_not_null(strstr(err, want), "'%s' lacks '%s'", err, want);
}

static void spit(const char *p, const void *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static uint8_t *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	uint8_t *buf = malloc(*len ? *len : 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

/* zstd's own output (one frame, no index) and a file that is no trace. */
Test(zpack, foreign_files_are_refused_with_one_line)
{
	build();
	size_t len;
	uint8_t *raw = slurp(path, &len);
	size_t cap = ZSTD_compressBound(len);
	uint8_t *z = malloc(cap);
	size_t zl = ZSTD_compress(z, cap, raw, len, 1);
	cr_assert(!ZSTD_isError(zl));
	spit(zpath, z, zl);
	open_fails(zpath, "zstd-compressed, but not by prof pack");
	free(z);
	free(raw);
	char err[512] = "";
	uint64_t a, b;
	spit(path, "hello, world, not a trace", 25);
	cr_assert_eq(zpack_file(path, 3, &a, &b, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "not a libprof trace"), "%s", err);
	cr_assert_eq(access(path, F_OK), 0, "left as it is");
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

/* Mutated and cut compressed traces: open fails or the pass ends, with one line, never a
 * crash or a hang. */
Test(zpack, mutated_compressed_traces_never_crash, .timeout = 300)
{
	build();
	char err[512] = "";
	uint64_t a, b;
	cr_assert_eq(zpack_file(path, 3, &a, &b, err, sizeof(err)), 1, "%s", err);
	size_t len0;
	uint8_t *orig = slurp(zpath, &len0), *buf = malloc(len0);
	int opened = 0, failed = 0;
	for (int iter = 0; iter < 1500; iter++) {
		size_t len = len0;
		memcpy(buf, orig, len0);
		if (iter % 10 == 9) {
			len = (size_t)(rnd() % len0);
		} else {
			for (int m = 1 + (int)(rnd() % 3); m > 0; m--) {
				size_t at = iter % 3 ? (size_t)(rnd() % len0)
						     : len0 - 1 - (size_t)(rnd() % (len0 < 600 ? len0 : 600));
				buf[at] ^= (uint8_t)(1u << (rnd() % 8));
				if (rnd() % 4 == 0 && at + 4 <= len0)
					memcpy(buf + at, &(uint32_t){ (uint32_t)rnd() }, 4);
			}
		}
		spit(zpath, buf, len);
		struct trace *t = trace_open(zpath, err, sizeof(err));
		if (!t) {
			cr_assert_str_not_empty(err);
			cr_assert_null(strchr(err, '\n'));
			failed++;
			continue;
		}
		opened++;
		struct trace_event ev;
		int rc;
		uint64_t n = 0;
		while ((rc = trace_next(t, &ev, err, sizeof(err))) == 1) {
			volatile uint8_t last = ((const uint8_t *)ev.rec)[ev.rec->size - 1];
			(void)last;
			cr_assert_lt(++n, 1000000);
		}
		cr_assert(rc == 0 || (rc == -1 && err[0] && !strchr(err, '\n')));
		trace_close(t);
	}
	cr_log_info("zpack fuzz: %d refused, %d opened", failed, opened);
	cr_assert_gt(failed, 100);
	cr_assert_gt(opened, 50);
	free(buf);
	free(orig);
}
