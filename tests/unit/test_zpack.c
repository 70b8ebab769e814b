/* Compressed traces (analyzer/zpack.c, zmodel.c): prof pack's output reads exactly as the raw
 * trace did and `prof pack -d` gives it back byte for byte, the record model rebuilds any bytes
 * cut into pieces anywhere and makes heap records far smaller than zstd alone, files of the
 * earlier layout (PROFZIX1) still read, a file that is not prof's is refused with one line,
 * and mutated or cut compressed files and column blobs end in an error, never a crash (`make
 * asan` runs these under ASan and UBSan). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "prof_short.h"
#include "trace.h"
#include "unit/tracegen.h"
#include "zmodel.h"
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

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	return tg_rand(&rng);
}

/* ---- a heap trace as libprof writes one ---- */

#define RUN_UNITS 16
#define RUN_ROOM (RUN_UNITS * 1024 - 24)
#define LIVE 2048   /* blocks each thread keeps */
#define STACKS 600

struct gen {
	struct tg *tg;
	uint32_t stream;
	uint64_t used;  /* bytes of records in the current chunk */
	struct prof_short_base b;
	uint64_t t;
	uint64_t freed[300][8];  /* the toy allocator's freed blocks, per 16-byte class */
	unsigned nfreed[300];
	uint64_t top;           /* where fresh blocks are cut */
	uint64_t live[LIVE];
	uint32_t live_size[LIVE];
};

/* Room for a record of up to 48 bytes, or a new chunk (whose bases start empty). */
static void gen_room(struct gen *g)
{
	if (g->used + 48 <= RUN_ROOM)
		return;
	tg_new_run(g->tg, g->stream, RUN_UNITS);
	g->used = 0;
	memset(&g->b, 0, sizeof(g->b));
}

/* An ALLOC (alloc) or FREE, short where the chunk has a base, as the writer does. */
static void gen_heap(struct gen *g, int alloc, unsigned fn, uint64_t ptr, uint32_t size,
		     uint32_t stack)
{
	gen_room(g);
	g->t += 40 + rnd() % 400;
	uint64_t w[2] = { prof_short_word(&g->b, alloc ? fn : PROF_SHORT_FREE_KIND, g->t, ptr),
			  prof_short_alloc_word2(size, stack) };
	if (w[0]) {
		tg_raw(g->tg, g->stream, w, alloc ? 16 : 8);
		g->used += alloc ? 16 : 8;
		g->b.time = g->t;
		g->b.ptr = ptr;
	} else {
		/* in a union as wide as any record prof_short_note() reads (gcc checks its reads
		 * for every type it handles, taken or not) */
		union prof_short_rec u = { .alloc = { .h = { alloc ? PROF_REC_ALLOC : PROF_REC_FREE,
							     alloc ? (uint16_t)fn : 0, 0, g->t },
						      .ptr = ptr, .size = size, .stack = stack } };
		if (alloc)
			tg_alloc_fn(g->tg, g->stream, g->t, fn, ptr, size, stack);
		else
			tg_free(g->tg, g->stream, g->t, ptr);
		g->used += alloc ? 40 : 24;
		prof_short_note(&g->b, &u.h);
	}
}

static void gen_lock_wait(struct gen *g, uint64_t lock, uint32_t stack)
{
	gen_room(g);
	g->t += 100 + rnd() % 5000;
	uint64_t wait = 500 + rnd() % 100000, w[2];
	unsigned op = 0, kind = prof_lock_op_kind(op);
	if (prof_short_lock_words(&g->b, op, kind, g->t, lock, 0, wait, stack, 0, w)) {
		tg_raw(g->tg, g->stream, w, 16);
		g->used += 16;
		g->b.lock_time = g->t;
		g->b.lock = lock;
	} else {
		union prof_short_rec u = { .lock_wait = {
			.h = { PROF_REC_LOCK_WAIT, (uint16_t)op, sizeof(struct prof_rec_lock_wait), g->t },
			.lock = lock, .wait_ns = wait, .stack = stack, .kind = (uint16_t)kind } };
		const struct prof_rec_lock_wait *r = &u.lock_wait;
		tg_rec(g->tg, g->stream, PROF_REC_LOCK_WAIT, (uint16_t)op, g->t,
		       (const char *)r + sizeof(r->h), sizeof(*r) - sizeof(r->h));
		g->used += sizeof(*r);
		prof_short_note(&g->b, &u.h);
	}
}

static uint64_t gen_block(struct gen *g, uint32_t size)
{
	unsigned c = (size + 23) / 16;
	if (g->nfreed[c])
		return g->freed[c][--g->nfreed[c]];
	uint64_t p = g->top;
	g->top += (size + 23) & ~15u;
	return p;
}

static void gen_release(struct gen *g, uint64_t p, uint32_t size)
{
	unsigned c = (size + 23) / 16;
	if (g->nfreed[c] < 8)
		g->freed[c][g->nfreed[c]++] = p;
}

/* ops heap operations on each of three threads, in turns of a few: most blocks freed at once,
 * some kept in a ring of live blocks that replaces one at random, a lock wait now and then. */
static void build_heap(const char *p, unsigned ops)
{
	struct tg *tg = tg_create();
	tg_set_runs(tg, 1024, RUN_UNITS);
	tg_header(tg)->features |= PROF_FEAT_SHORT_RECORDS | PROF_FEAT_SHORT_LOCK_WAITS;
	uint64_t frames[3] = { 0x401000, 0x402000, 0x403000 };
	for (uint32_t id = 1; id <= STACKS; id++) {
		frames[0] = 0x401000 + id;
		tg_stack(tg, 0, TG_START_NS, id, frames, 3);
	}
	static struct gen gens[3];
	memset(gens, 0, sizeof(gens));
	for (uint32_t k = 0; k < 3; k++) {
		gens[k] = (struct gen){ .tg = tg, .stream = 2 * k, .t = TG_START_NS + 1000,
					.top = 0x7f0000000000ull + ((uint64_t)k << 32) };
		gens[k].used = RUN_ROOM;  /* the first record starts a chunk of its own */
	}
	for (unsigned i = 0; i < ops; i++) {
		struct gen *g = &gens[(i / 7) % 3];
		uint32_t stack = 1 + (uint32_t)(rnd() % STACKS);
		uint32_t size = 8 + (stack * 37) % 2000 + (uint32_t)(rnd() % 4) * 8;
		uint64_t p = gen_block(g, size);
		gen_heap(g, 1, stack % 3 ? PROF_ALLOC_MALLOC : PROF_ALLOC_CALLOC, p, size, stack);
		if (rnd() % 10 < 6) {
			gen_heap(g, 0, 0, p, 0, 0);
			gen_release(g, p, size);
		} else {
			unsigned slot = (unsigned)(rnd() % LIVE);
			if (g->live[slot]) {
				gen_heap(g, 0, 0, g->live[slot], 0, 0);
				gen_release(g, g->live[slot], g->live_size[slot]);
			}
			g->live[slot] = p;
			g->live_size[slot] = size;
		}
		if (i % 97 == 0)
			gen_lock_wait(g, 0x601000 + 64 * (rnd() % 8), stack);
	}
	tg_exit(tg, 0, gens[0].t + 1000000, 0, 0);
	tg_write(tg, p);
	tg_destroy(tg);
}

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

/* zstd alone, as PROFZIX1 packed: each piece of frame bytes compressed at level 3. */
static uint64_t plain_zstd_size(const uint8_t *raw, size_t len, size_t frame)
{
	size_t cap = ZSTD_compressBound(frame);
	uint8_t *z = malloc(cap);
	uint64_t total = 0;
	for (size_t off = 0; off < len; off += frame) {
		size_t n = len - off < frame ? len - off : frame;
		size_t c = ZSTD_compress(z, cap, raw + off, n, 3);
		cr_assert(!ZSTD_isError(c));
		total += c;
	}
	free(z);
	return total;
}

static uint8_t *slurp(const char *p, size_t *len);

Test(zpack, packed_trace_reads_as_the_raw_one)
{
	build_heap(path, 200000);
	uint64_t n1, n2;
	uint64_t d1 = digest(path, &n1);
	cr_assert_gt(n1, 350000, "%" PRIu64 " records", n1);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	size_t rawlen;
	uint8_t *rawbytes = slurp(path, &rawlen);
	uint64_t plain = plain_zstd_size(rawbytes, rawlen, 128 << 10);
	free(rawbytes);
	char err[512] = "";
	uint64_t raw, packed;
	cr_assert_eq(zpack_file(path, 3, &raw, &packed, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(raw, (uint64_t)st.st_size);
	cr_assert_neq(access(path, F_OK), 0, "the raw trace is gone");
	struct stat zs;
	cr_assert_eq(stat(zpath, &zs), 0);
	cr_assert_eq((uint64_t)zs.st_size, packed);
	cr_assert_eq(zs.st_mode & 0777, st.st_mode & 0777);
	cr_assert_gt(raw, 4 * ZPACK_FRAME_RAW, "several frames");
	/* The model: heap records in columns, freed and reused blocks as references, sizes
	 * against their stack's last. */
	cr_log_info("%" PRIu64 " records: raw %" PRIu64 ", zstd alone %" PRIu64 ", packed %" PRIu64,
		    n1, raw, plain, packed);
	cr_assert_lt(packed * 10, plain * 7, "packed %" PRIu64 " bytes, zstd alone %" PRIu64, packed,
		     plain);
	cr_assert_eq(digest(zpath, &n2), d1);
	cr_assert_eq(n2, n1);
	/* Packing it again does nothing. */
	cr_assert_eq(zpack_file(zpath, 3, &raw, &packed, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, "already compressed"));
}

/* prof pack -d: the raw trace back, byte for byte, and the compressed one gone. */
Test(zpack, unpacking_gives_the_raw_trace_back)
{
	build_heap(path, 60000);
	size_t len0, len1;
	uint8_t *orig = slurp(path, &len0);
	char err[512] = "";
	uint64_t raw, packed;
	cr_assert_eq(zpack_unpack_file(path, &raw, &packed, err, sizeof(err)), 0, "raw: skipped");
	cr_assert_not_null(strstr(err, "not compressed"), "%s", err);
	cr_assert_eq(zpack_file(path, 3, &raw, &packed, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(zpack_unpack_file(zpath, &raw, &packed, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(raw, len0);
	cr_assert_neq(access(zpath, F_OK), 0, "the compressed trace is gone");
	uint8_t *back = slurp(path, &len1);
	cr_assert_eq(len1, len0);
	cr_assert(!memcmp(back, orig, len0), "the same bytes");
	free(back);
	free(orig);
}

/* A PROFZIX1 file, as prof pack wrote before the record model: raw pieces of 128 KiB. */
static void write_zix1(const char *raw_path, const char *out_path)
{
	size_t len;
	uint8_t *raw = slurp(raw_path, &len);
	const size_t fr = 128 << 10, n = (len + fr - 1) / fr, cap = ZSTD_compressBound(fr);
	uint8_t *z = malloc(cap);
	uint32_t *csize = malloc(4 * n);
	FILE *f = fopen(out_path, "wb");
	cr_assert_not_null(f);
	for (size_t i = 0; i < n; i++) {
		size_t piece = len - i * fr < fr ? len - i * fr : fr;
		size_t c = ZSTD_compress(z, cap, raw + i * fr, piece, 3);
		cr_assert(!ZSTD_isError(c));
		cr_assert_eq(fwrite(z, 1, c, f), c);
		csize[i] = (uint32_t)c;
	}
	struct zpack_footer foot = { .raw_size = len, .frame_raw = (uint32_t)fr,
				     .nframes = (uint32_t)n, .magic = ZPACK_MAGIC1 };
	uint32_t skip[2] = { ZPACK_SKIPPABLE, (uint32_t)(4 * n + sizeof(foot)) };
	cr_assert_eq(fwrite(skip, 1, 8, f), 8);
	cr_assert_eq(fwrite(csize, 4, n, f), n);
	cr_assert_eq(fwrite(&foot, 1, sizeof(foot), f), sizeof(foot));
	fclose(f);
	free(csize);
	free(z);
	free(raw);
}

Test(zpack, files_of_the_earlier_layout_still_read)
{
	build_heap(path, 30000);
	uint64_t n1, n2;
	uint64_t d1 = digest(path, &n1);
	write_zix1(path, zpath);
	cr_assert_eq(digest(zpath, &n2), d1);
	cr_assert_eq(n2, n1);
	size_t len0, len1;
	uint8_t *orig = slurp(path, &len0);
	cr_assert_eq(unlink(path), 0);
	char err[512] = "";
	uint64_t raw, packed;
	cr_assert_eq(zpack_unpack_file(zpath, &raw, &packed, err, sizeof(err)), 1, "%s", err);
	uint8_t *back = slurp(path, &len1);
	cr_assert(len1 == len0 && !memcmp(back, orig, len0));
	free(back);
	free(orig);
}

/* Encodes buf as pieces of the given lengths (cycled) with one walker, decodes each alone. */
static void round_trip(const uint8_t *buf, size_t len, const size_t *pieces, size_t npieces)
{
	struct zm_model *enc = zm_model_new(), *dec = zm_model_new();
	struct zm_walk w = { 0 };
	size_t maxp = 0;
	for (size_t k = 0; k < npieces; k++)
		maxp = pieces[k] > maxp ? pieces[k] : maxp;
	uint8_t *blob = malloc(zm_blob_cap(maxp)), *out = malloc(maxp);
	size_t k = 0;
	for (size_t off = 0; off < len; k++) {
		size_t n = pieces[k % npieces] < len - off ? pieces[k % npieces] : len - off;
		size_t after = len - off - n, avail = n + (after < ZM_LOOKAHEAD ? after : ZM_LOOKAHEAD);
		size_t b = zm_encode(enc, &w, buf + off, n, avail, off, blob, zm_blob_cap(maxp));
		cr_assert_gt(b, 0);
		const char *why = "";
		cr_assert_eq(zm_decode(dec, blob, b, out, n, &why), 0, "piece at %zu: %s", off, why);
		cr_assert(!memcmp(out, buf + off, n), "piece at %zu of %zu bytes differs", off, n);
		off += n;
	}
	free(blob);
	free(out);
	zm_model_free(enc);
	zm_model_free(dec);
}

/* The decoder rebuilds whatever it is given, cut anywhere: a trace in pieces that split
 * records, chunk headers and the file header, random bytes, zeros, a trace whose header
 * lies. */
Test(zpack, the_model_rebuilds_any_bytes_cut_anywhere)
{
	build_heap(path, 20000);
	size_t len;
	uint8_t *trace = slurp(path, &len);
	const size_t odd[] = { 1000, 4096, 77, 65536 + 8, 3 }, big[] = { 1u << 20 };
	round_trip(trace, len, odd, 5);
	round_trip(trace, len, big, 1);
	for (size_t cut = 1; cut < 200; cut += 13) {  /* the first piece ends inside the header */
		const size_t p2[] = { cut, 5000 };
		round_trip(trace, len < 40000 ? len : 40000, p2, 2);
	}
	uint8_t *junk = malloc(300000);
	for (size_t i = 0; i < 300000; i++)
		junk[i] = (uint8_t)(i % 5000 < 2000 ? 0 : rnd());
	round_trip(junk, 300000, odd, 5);
	memset(junk, 0, 300000);
	round_trip(junk, 300000, big, 1);
	/* A header that claims more chunks than there are, in a file of random records. */
	memcpy(junk, trace, 4096);
	for (size_t i = 4096; i < 300000; i += 8) {
		uint64_t v = rnd() | 0x8000;
		memcpy(junk + i, &v, 8);
	}
	round_trip(junk, 300000, odd, 5);
	free(junk);
	free(trace);
}

/* Mutated blobs: an error or some bytes, never a crash, never a write past the piece. */
Test(zpack, mutated_blobs_never_crash, .timeout = 120)
{
	build_heap(path, 20000);
	size_t len;
	uint8_t *trace = slurp(path, &len);
	size_t n = len < (256 << 10) ? len : (256 << 10);
	struct zm_model *m = zm_model_new();
	struct zm_walk w = { 0 };
	size_t cap = zm_blob_cap(n);
	uint8_t *blob = malloc(cap), *mut = malloc(cap), *out = malloc(n);
	size_t b = zm_encode(m, &w, trace, n, n, 0, blob, cap);
	cr_assert_gt(b, 0);
	int failed = 0;
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(mut, blob, b);
		size_t ml = b;
		if (iter % 10 == 9) {
			ml = (size_t)(rnd() % b);
		} else {
			for (int k = 1 + (int)(rnd() % 3); k > 0; k--) {
				size_t at = iter % 2 ? (size_t)(rnd() % b) : (size_t)(rnd() % 60);
				mut[at] ^= (uint8_t)(1u << (rnd() % 8));
			}
		}
		const char *why = NULL;
		if (zm_decode(m, mut, ml, out, n, &why) < 0) {
			cr_assert_not_null(why);
			failed++;
		}
	}
	cr_log_info("mutated blobs: %d of 20000 refused", failed);
	cr_assert_gt(failed, 10000);
	free(blob);
	free(mut);
	free(out);
	free(trace);
	zm_model_free(m);
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
