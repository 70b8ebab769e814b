/* Compressed traces: the packer (prof pack, prof-run) and the reader's source (trace.c). A
 * compressed trace is untrusted input like a raw one: its index is checked against the file's
 * size before use, and a frame must decompress to exactly the bytes the index promises. The
 * reader's memory is the index (8 bytes a frame), at most CACHE_SLOTS decompressed frames and
 * (PROFZIX2) one modeled frame and the model, whatever the trace's size. */
#include "zpack.h"
#include "format.h"
#include "zmodel.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "prof_format.h"

#define CACHE_SLOTS 16u  /* decompressed frames kept: streams of a merge read from several */

struct slot {
	uint8_t *buf;
	uint64_t frame;  /* UINT64_MAX: empty */
	uint64_t used;   /* last use, for LRU */
};

struct zsrc {
	int fd;
	const char *path;
	struct zpack_footer f;
	uint64_t *coff;     /* nframes + 1 offsets of the frames in the file */
	uint8_t *cbuf;      /* one compressed frame: the longest */
	size_t cbuf_cap;
	ZSTD_DCtx *dctx;
	int modeled;        /* PROFZIX2: frames hold modeled pieces */
	struct zm_model *model;
	uint8_t *blob;      /* one modeled piece, zm_blob_cap(piece_cap) bytes */
	size_t piece_cap;   /* the longest piece: frame_raw, or a smaller trace's size */
	struct slot slots[CACHE_SLOTS];
	uint64_t clock;
};

int zpack_is_compressed(const void *head, size_t n)
{
	uint32_t m;
	if (n < 4)
		return 0;
	memcpy(&m, head, 4);
	return m == ZPACK_ZSTD_MAGIC;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			return -2;  /* short */
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const uint8_t *)buf + done, len - done);
		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* ---- reading ---- */

void zsrc_close(struct zsrc *z)
{
	if (!z)
		return;
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		free(z->slots[i].buf);
	free(z->coff);
	free(z->cbuf);
	free(z->blob);
	zm_model_free(z->model);
	ZSTD_freeDCtx(z->dctx);
	free(z);
}

struct zsrc *zsrc_open(int fd, uint64_t size, const char *path, char *err, size_t errlen)
{
	struct zsrc *z = calloc(1, sizeof(*z));
	uint32_t *csize = NULL;
	if (!z) {
		fmt_where_error(err, errlen, path, "out of memory");
		return NULL;
	}
	z->fd = fd;
	z->path = path;
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		z->slots[i].frame = UINT64_MAX;
	struct zpack_footer *f = &z->f;
	const uint64_t tail = 8 + sizeof(*f);  /* skippable frame header + footer */
	int rc;
	if (size < tail || (rc = pread_full(fd, f, sizeof(*f), size - sizeof(*f))) == -1) {
		fmt_where_error(err, errlen, path, size < tail ? "compressed, but too short for prof's frame index"
						    : "read: %s", strerror(errno));
		goto fail;
	}
	if (rc < 0 || (f->magic != ZPACK_MAGIC1 && f->magic != ZPACK_MAGIC2)) {
		fmt_where_error(err, errlen, path, "zstd-compressed, but not by prof pack (no frame index): "
			  "decompress it with zstd -d, or compress the raw trace with prof pack");
		goto fail;
	}
	uint32_t fr = f->frame_raw;
	if (fr < ZPACK_FRAME_MIN || fr > ZPACK_FRAME_MAX || (fr & (fr - 1))) {
		fmt_where_error(err, errlen, path, "bad frame index: frame size %u", fr);
		goto fail;
	}
	z->modeled = f->magic == ZPACK_MAGIC2;
	uint64_t n = f->nframes, want = f->raw_size / fr + (f->raw_size % fr != 0);
	if (n != want || n > (size - tail) / 4) {
		fmt_where_error(err, errlen, path, "bad frame index: %" PRIu64 " frames for %" PRIu64
			  " raw bytes in a file of %" PRIu64, n, f->raw_size, size);
		goto fail;
	}
	uint64_t idx = size - sizeof(*f) - 4 * n;  /* the skippable frame's header: 8 bytes before */
	uint32_t skip[2];
	if (idx < 8 || pread_full(fd, skip, 8, idx - 8) < 0 || skip[0] != ZPACK_SKIPPABLE ||
	    skip[1] != 4 * n + sizeof(*f)) {
		fmt_where_error(err, errlen, path, "bad frame index: no index frame at offset %" PRIu64,
		     idx >= 8 ? idx - 8 : 0);
		goto fail;
	}
	if (!(csize = malloc(n ? 4 * n : 1)) || !(z->coff = malloc(8 * (n + 1)))) {
		fmt_where_error(err, errlen, path, "out of memory (index of %" PRIu64 " frames)", n);
		goto fail;
	}
	if (n && pread_full(fd, csize, 4 * n, idx) < 0) {
		fmt_where_error(err, errlen, path, "cannot read the frame index: %s", strerror(errno));
		goto fail;
	}
	size_t bound = ZSTD_compressBound(z->modeled ? zm_blob_cap(fr) : fr);
	z->coff[0] = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (csize[i] == 0 || csize[i] > bound) {
			fmt_where_error(err, errlen, path, "bad frame index: frame %" PRIu64 " of %u bytes", i,
			     csize[i]);
			goto fail;
		}
		z->coff[i + 1] = z->coff[i] + csize[i];
		if (csize[i] > z->cbuf_cap)
			z->cbuf_cap = csize[i];
	}
	if (z->coff[n] != idx - 8) {
		fmt_where_error(err, errlen, path, "bad frame index: frames add up to %" PRIu64
			  " bytes, the index is at %" PRIu64, z->coff[n], idx - 8);
		goto fail;
	}
	free(csize);
	csize = NULL;
	/* A small trace's one piece needs buffers of its own size only. */
	z->piece_cap = z->f.raw_size < fr ? (size_t)z->f.raw_size : fr;
	if (!(z->cbuf = malloc(z->cbuf_cap ? z->cbuf_cap : 1)) || !(z->dctx = ZSTD_createDCtx()) ||
	    (z->modeled &&
	     (!(z->blob = malloc(zm_blob_cap(z->piece_cap))) || !(z->model = zm_model_new())))) {
		fmt_where_error(err, errlen, path, "out of memory");
		goto fail;
	}
	return z;
fail:
	free(csize);
	zsrc_close(z);
	return NULL;
}

uint64_t zsrc_raw_size(const struct zsrc *z)
{
	return z->f.raw_size;
}

/* The decompressed frame i, from the cache or read now. */
static const uint8_t *frame(struct zsrc *z, uint64_t i, char *err, size_t errlen)
{
	struct slot *victim = &z->slots[0];
	for (unsigned k = 0; k < CACHE_SLOTS; k++) {
		struct slot *s = &z->slots[k];
		if (s->frame == i) {
			s->used = ++z->clock;
			return s->buf;
		}
		if (s->used < victim->used)
			victim = s;
	}
	uint32_t fr = z->f.frame_raw;
	uint64_t raw = i + 1 < z->f.nframes ? fr : z->f.raw_size - i * fr;
	uint64_t clen = z->coff[i + 1] - z->coff[i];
	size_t cap = z->piece_cap;
	victim->frame = UINT64_MAX;
	if (!victim->buf && !(victim->buf = malloc(cap ? cap : 1))) {
		fmt_where_error(err, errlen, z->path, "out of memory (a frame of %zu bytes)", cap);
		return NULL;
	}
	int rc = pread_full(z->fd, z->cbuf, (size_t)clen, z->coff[i]);
	if (rc < 0) {
		fmt_where_error(err, errlen, z->path, "compressed offset %" PRIu64 ": %s", z->coff[i],
		     rc == -2 ? "short read (file truncated or changed while reading)"
			      : strerror(errno));
		return NULL;
	}
	uint8_t *dst = z->modeled ? z->blob : victim->buf;
	size_t got = ZSTD_decompressDCtx(z->dctx, dst, z->modeled ? zm_blob_cap(cap) : cap, z->cbuf,
					 (size_t)clen);
	if (ZSTD_isError(got) || (!z->modeled && got != raw)) {
		fmt_where_error(err, errlen, z->path, "compressed offset %" PRIu64 ": frame %" PRIu64 " %s%s",
		     z->coff[i], i, ZSTD_isError(got) ? "is corrupt: " : "has the wrong length",
		     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
		return NULL;
	}
	const char *why;
	if (z->modeled && zm_decode(z->model, z->blob, got, victim->buf, (size_t)raw, &why) < 0) {
		fmt_where_error(err, errlen, z->path, "compressed offset %" PRIu64 ": frame %" PRIu64
			  " is corrupt: %s", z->coff[i], i, why);
		return NULL;
	}
	victim->frame = i;
	victim->used = ++z->clock;
	return victim->buf;
}

int zsrc_read(struct zsrc *z, void *buf, size_t len, uint64_t off, char *err, size_t errlen)
{
	if (off > z->f.raw_size || len > z->f.raw_size - off) {
		fmt_where_error(err, errlen, z->path, "offset %" PRIu64 ": short read: past the end of the trace",
		     off);
		return -1;
	}
	uint32_t fr = z->f.frame_raw;
	while (len) {
		uint64_t i = off / fr, in = off % fr;
		const uint8_t *p = frame(z, i, err, errlen);
		if (!p)
			return -1;
		size_t take = fr - in < len ? (size_t)(fr - in) : len;
		memcpy(buf, p + in, take);
		buf = (uint8_t *)buf + take;
		off += take;
		len -= take;
	}
	return 0;
}

/* ---- packing ---- */

/* A trace whose process still runs (state RUNNING, its pid alive here) is still being
 * written: packing would take the file from under its writer. A killed process's trace is
 * RUNNING too, but its pid is gone. The pid, or 0. */
static uint32_t writer_running(int fd, uint64_t size)
{
	struct prof_file_header h;
	if (size >= sizeof(h) && pread_full(fd, &h, sizeof(h), 0) == 0 &&
	    h.state == PROF_STATE_RUNNING && h.pid > 0 && h.pid != (uint32_t)getpid() &&
	    (kill((pid_t)h.pid, 0) == 0 || errno == EPERM))
		return h.pid;
	return 0;
}

int zpack_still_running(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int running = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		      writer_running(fd, (uint64_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return running;
}

/* path opened for reading, a regular file (its status in *st), or -1 with the message. */
static int open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) < 0) {
		fmt_where_error(err, errlen, path, "%s", strerror(errno));
	} else if (!S_ISREG(st->st_mode)) {
		fmt_where_error(err, errlen, path, "not a regular file");
	} else {
		return fd;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* tmp created for writing, where path's new form dst does not exist yet; or -1 with the
 * message. */
static int create_tmp(const char *path, const char *dst, const char *tmp, char *err,
		      size_t errlen)
{
	if (access(dst, F_OK) == 0) {
		fmt_where_error(err, errlen, path, "%s exists already; left as it is", dst);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fmt_where_error(err, errlen, tmp, "%s", strerror(errno));
	return fd;
}

/* The end of a rewrite, whichever way it went: its files closed, and tmp removed after a
 * failure. */
static void rewrite_done(int in, int out, const char *tmp, int failed)
{
	if (out >= 0)
		close(out);
	if (failed && tmp)
		unlink(tmp);
	if (in >= 0)
		close(in);
}

/* The new file tmp (open as *out, written and synced) becomes dst, with path's mode, and path
 * goes. 0, or -1 with the message: path is then as it was (a dst renamed already is removed
 * again), and a tmp left is the caller's to remove. */
static int replace_with(int *out, const char *tmp, const char *dst, const char *path, mode_t mode,
			const char *done, char *err, size_t errlen)
{
	int bad = fchmod(*out, mode & 0777) < 0, saved = errno;
	if (close(*out) < 0 && !bad) {
		bad = 1;
		saved = errno;
	}
	*out = -1;
	if (bad) {
		fmt_where_error(err, errlen, tmp, "%s", strerror(saved));
		return -1;
	}
	if (rename(tmp, dst) < 0) {
		fmt_where_error(err, errlen, dst, "rename: %s", strerror(errno));
		return -1;
	}
	if (unlink(path) < 0) {
		fmt_where_error(err, errlen, path, "%s to %s, but cannot remove it: %s", done, dst,
				strerror(errno));
		unlink(dst);
		return -1;
	}
	return 0;
}

int zpack_file(const char *path, int level, uint64_t *raw, uint64_t *packed, char *err,
	       size_t errlen)
{
	int in = -1, out = -1, rc = -1;
	char *dst = NULL, *tmp = NULL;
	uint8_t *src = NULL, *cbuf = NULL, *check = NULL, *blob = NULL, *blob2 = NULL;
	uint32_t *csize = NULL;
	ZSTD_CCtx *cctx = NULL;
	ZSTD_DCtx *dctx = NULL;
	struct zm_model *model = NULL;
	struct zm_walk walk = { 0 };
	const uint32_t fr = ZPACK_FRAME_RAW;

	struct stat st, st2;
	if ((in = open_regular(path, &st, err, errlen)) < 0)
		goto out;
	uint64_t magic = 0;
	if (st.st_size >= 8 && pread_full(in, &magic, 8, 0) < 0) {
		fmt_where_error(err, errlen, path, "read: %s", strerror(errno));
		goto out;
	}
	if (zpack_is_compressed(&magic, st.st_size >= 4 ? 4 : 0)) {
		fmt_where_error(err, errlen, path, "already compressed");
		rc = 0;
		goto out;
	}
	if (magic != PROF_MAGIC) {
		fmt_where_error(err, errlen, path, "not a libprof trace (bad magic); left as it is");
		goto out;
	}
	uint32_t writer = writer_running(in, (uint64_t)st.st_size);
	if (writer) {
		fmt_where_error(err, errlen, path, "its process (pid %u) still runs; left as it is", writer);
		rc = 0;
		goto out;
	}
	uint64_t size = (uint64_t)st.st_size, n = size / fr + (size % fr != 0);
	if (n > UINT32_MAX) {
		fmt_where_error(err, errlen, path, "too large to compress");
		goto out;
	}
	if (asprintf(&dst, "%s.zst", path) < 0 || asprintf(&tmp, "%s.zst.tmp", path) < 0) {
		dst = tmp = NULL;
		fmt_where_error(err, errlen, path, "out of memory");
		goto out;
	}
	/* A trace smaller than a piece (a subshell's: tens of KiB) needs buffers of its size. */
	size_t piece = size < fr ? (size_t)size + 1 : fr;
	size_t bcap = zm_blob_cap(piece), bound = ZSTD_compressBound(bcap);
	src = malloc(piece + ZM_LOOKAHEAD);
	blob = malloc(bcap);
	blob2 = malloc(bcap);
	cbuf = malloc(bound);
	check = malloc(piece);
	csize = malloc(n ? 4 * n : 1);
	cctx = ZSTD_createCCtx();
	dctx = ZSTD_createDCtx();
	model = zm_model_new();
	if (!src || !blob || !blob2 || !cbuf || !check || !csize || !cctx || !dctx || !model) {
		fmt_where_error(err, errlen, path, "out of memory");
		goto out;
	}
	if ((out = create_tmp(path, dst, tmp, err, errlen)) < 0)
		goto out;
	uint64_t total = 0;
	for (uint64_t i = 0; i < n; i++) {
		size_t len = i + 1 < n ? fr : (size_t)(size - i * fr);
		uint64_t after = size - i * fr - len;
		size_t avail = len + (after < ZM_LOOKAHEAD ? (size_t)after : ZM_LOOKAHEAD);
		int r = pread_full(in, src, avail, i * fr);
		if (r < 0) {
			fmt_where_error(err, errlen, path, "offset %" PRIu64 ": read: %s", i * fr,
			     r == -2 ? "the file shrank while being compressed" : strerror(errno));
			goto out;
		}
		size_t b = zm_encode(model, &walk, src, len, avail, i * fr, blob, zm_blob_cap(len));
		if (!b) {
			fmt_where_error(err, errlen, path, "out of memory");
			goto out;
		}
		/* Each column a zstd frame of its own: the frames decompress back to back into the
		 * blob, and each gets the statistics of its own bytes. */
		size_t part[ZM_MAX_PARTS], c = 0, from = 0;
		int nparts = zm_blob_parts(blob, b, part);
		for (int k = 0; k < nparts; k++) {
			size_t got = ZSTD_compressCCtx(cctx, cbuf + c, bound - c, blob + from, part[k], level);
			if (ZSTD_isError(got)) {
				fmt_where_error(err, errlen, path, "zstd: %s", ZSTD_getErrorName(got));
				goto out;
			}
			c += got;
			from += part[k];
		}
		/* Every frame is read back, as the reader will, before the raw trace can go. */
		const char *why;
		size_t d = ZSTD_decompressDCtx(dctx, blob2, bcap, cbuf, c);
		if (ZSTD_isError(d) || zm_decode(model, blob2, d, check, len, &why) < 0 ||
		    memcmp(check, src, len)) {
			fmt_where_error(err, errlen, path, "offset %" PRIu64 ": the compressed frame does not "
				  "decompress to the original; left as it is", i * fr);
			goto out;
		}
		if (write_full(out, cbuf, c) < 0) {
			fmt_where_error(err, errlen, tmp, "write: %s", strerror(errno));
			goto out;
		}
		csize[i] = (uint32_t)c;
		total += c;
	}
	struct zpack_footer f = { .raw_size = size, .frame_raw = fr, .nframes = (uint32_t)n,
				  .magic = ZPACK_MAGIC2 };
	uint32_t skip[2] = { ZPACK_SKIPPABLE, (uint32_t)(4 * n + sizeof(f)) };
	if (write_full(out, skip, sizeof(skip)) < 0 || write_full(out, csize, 4 * n) < 0 ||
	    write_full(out, &f, sizeof(f)) < 0 || fsync(out) < 0) {
		fmt_where_error(err, errlen, tmp, "write: %s", strerror(errno));
		goto out;
	}
	/* A trace still being written (its process alive) changes under us: keep it raw. */
	if (fstat(in, &st2) < 0 || st2.st_size != st.st_size ||
	    st2.st_mtim.tv_sec != st.st_mtim.tv_sec || st2.st_mtim.tv_nsec != st.st_mtim.tv_nsec) {
		fmt_where_error(err, errlen, path, "changed while being compressed (still written?); left as it is");
		goto out;
	}
	if (replace_with(&out, tmp, dst, path, st.st_mode, "compressed", err, errlen) < 0)
		goto out;
	*raw = size;
	*packed = total + sizeof(skip) + 4 * n + sizeof(f);
	rc = 1;
out:
	rewrite_done(in, out, tmp, rc < 0);
	ZSTD_freeCCtx(cctx);
	ZSTD_freeDCtx(dctx);
	zm_model_free(model);
	free(src);
	free(blob);
	free(blob2);
	free(cbuf);
	free(check);
	free(csize);
	free(dst);
	free(tmp);
	return rc;
}

int zpack_unpack_file(const char *path, uint64_t *raw, uint64_t *packed, char *err,
		      size_t errlen)
{
	int in = -1, out = -1, rc = -1;
	char *dst = NULL, *tmp = NULL;
	uint8_t *buf = NULL;
	struct zsrc *z = NULL;
	size_t plen = strlen(path);
	uint8_t head[4];
	struct stat st;

	if ((in = open_regular(path, &st, err, errlen)) < 0)
		goto out;
	if (st.st_size < 4 || pread_full(in, head, 4, 0) < 0 || !zpack_is_compressed(head, 4)) {
		fmt_where_error(err, errlen, path, "not compressed");
		rc = 0;
		goto out;
	}
	if (plen < 5 || strcmp(path + plen - 4, ".zst")) {
		fmt_where_error(err, errlen, path, "a compressed trace's name ends in .zst; left as it is");
		goto out;
	}
	if (!(dst = strndup(path, plen - 4)) || asprintf(&tmp, "%s.tmp", dst) < 0) {
		tmp = NULL;
		fmt_where_error(err, errlen, path, "out of memory");
		goto out;
	}
	if (!(z = zsrc_open(in, (uint64_t)st.st_size, path, err, errlen)))
		goto out;
	uint64_t size = zsrc_raw_size(z), step = z->f.frame_raw;
	if (!(buf = malloc(step))) {
		fmt_where_error(err, errlen, path, "out of memory");
		goto out;
	}
	if ((out = create_tmp(path, dst, tmp, err, errlen)) < 0)
		goto out;
	for (uint64_t off = 0; off < size; off += step) {
		size_t len = size - off < step ? (size_t)(size - off) : (size_t)step;
		if (zsrc_read(z, buf, len, off, err, errlen) < 0)
			goto out;
		if (write_full(out, buf, len) < 0) {
			fmt_where_error(err, errlen, tmp, "write: %s", strerror(errno));
			goto out;
		}
	}
	if (fsync(out) < 0) {
		fmt_where_error(err, errlen, tmp, "%s", strerror(errno));
		goto out;
	}
	if (replace_with(&out, tmp, dst, path, st.st_mode, "decompressed", err, errlen) < 0)
		goto out;
	*raw = size;
	*packed = (uint64_t)st.st_size;
	rc = 1;
out:
	zsrc_close(z);
	rewrite_done(in, out, tmp, rc < 0);
	free(buf);
	free(dst);
	free(tmp);
	return rc;
}
