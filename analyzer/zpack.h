/* Compressed traces (`prof pack`, prof-run): a raw trace cut into fixed-size pieces, each
 * compressed as one zstd frame, then a skippable frame holding the index of the frames. The
 * reader (trace.c) reads it in place, any piece at any time, holding a bounded cache of
 * decompressed frames. prof pack writes PROFZIX2 files, whose frames hold each piece as
 * columns (zmodel.h); PROFZIX1 files (earlier versions) hold the raw pieces, so that `zstd -d`
 * gives the raw trace back; `prof pack -d` does it for both. Layout: shared/FORMAT.md,
 * "Compressed traces". */
#ifndef PROF_ZPACK_H
#define PROF_ZPACK_H

#include <stddef.h>
#include <stdint.h>

#define ZPACK_MAGIC1 0x3158495a464f5250ULL  /* "PROFZIX1" read as a little-endian u64: raw pieces */
#define ZPACK_MAGIC2 0x3258495a464f5250ULL  /* "PROFZIX2": modeled pieces (zmodel.h) */
#define ZPACK_SKIPPABLE 0x184d2a5eu        /* a zstd skippable frame's magic (0x184D2A5?) */
#define ZPACK_ZSTD_MAGIC 0xfd2fb528u       /* a zstd frame's magic */
#define ZPACK_FRAME_RAW (1u << 20)         /* raw bytes per frame, what prof pack writes */
#define ZPACK_FRAME_MIN (4u << 10)         /* ... the range a reader accepts */
#define ZPACK_FRAME_MAX (4u << 20)

/* The last 32 bytes of a compressed trace. */
struct zpack_footer {
	uint64_t raw_size;   /* bytes of the raw trace */
	uint32_t frame_raw;  /* raw bytes per frame (the last one may hold fewer), a power of two */
	uint32_t nframes;    /* = ceil(raw_size / frame_raw) */
	uint64_t reserved;   /* 0 */
	uint64_t magic;      /* ZPACK_MAGIC2 (or ZPACK_MAGIC1) */
};
_Static_assert(sizeof(struct zpack_footer) == 32, "compressed trace footer layout");

/* Whether the file's first bytes (n of them) are a zstd frame's magic. */
int zpack_is_compressed(const void *head, size_t n);

/* A compressed trace opened for reading; the descriptor stays the caller's. */
struct zsrc;
struct zsrc *zsrc_open(int fd, uint64_t file_size, const char *path, char *err, size_t errlen);
uint64_t zsrc_raw_size(const struct zsrc *z);
/* len bytes of the raw trace at off (off + len <= raw size). 0, or -1 with the message. */
int zsrc_read(struct zsrc *z, void *buf, size_t len, uint64_t off, char *err, size_t errlen);
void zsrc_close(struct zsrc *z);

/* Compresses the raw trace at path into path.zst (level: zstd's), verifies every frame by
 * decompressing it, and removes path; on any failure path stays and path.zst does not exist.
 * 1 done (sizes in *raw, *packed), 0 skipped (already compressed: message in err), -1 error. */
int zpack_file(const char *path, int level, uint64_t *raw, uint64_t *packed, char *err,
	       size_t errlen);
/* Decompresses path (a compressed trace) back into the raw trace (path without ".zst"),
 * verified as zpack_file() verifies, and removes path. 1 done (sizes in *raw, *packed), 0
 * skipped (not compressed: message in err), -1 error. */
int zpack_unpack_file(const char *path, uint64_t *raw, uint64_t *packed, char *err,
		      size_t errlen);
/* Whether the trace at path is still being written by a running process (which
 * zpack_file() leaves as it is). */
int zpack_still_running(const char *path);

#endif
