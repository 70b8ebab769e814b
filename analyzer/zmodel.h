/* The record model of compressed traces (PROFZIX2, zpack.h). Before zstd sees a piece of a raw
 * trace, prof pack rewrites it as columns that zstd compresses far better than the records
 * themselves: each field of the short records in a stream of its own, its bytes in planes (all
 * first bytes, then all second bytes...), and the fields that repeat something seen before
 * written as a reference to it: a freed block as the number of allocations since its own, an
 * allocation that reuses a block freed earlier (what malloc's bins and caches do) as its place
 * in a short list of the freed blocks of its size class, and a size as its difference to the
 * last size allocated at the same stack. Everything else (the header, chunk headers, ordinary
 * records) is copied as it is, runs of zeros as their length.
 *
 * The decoder rebuilds the piece byte for byte from the columns alone: it never parses the
 * trace, so a piece that is not what the encoder expected (or not a trace at all) still round-
 * trips, and the encoder only has to do what the decoder will do. Each piece starts from an
 * empty model, so any piece decodes alone. Layout: shared/FORMAT.md, "Compressed traces". */
#ifndef PROF_ZMODEL_H
#define PROF_ZMODEL_H

#include <stddef.h>
#include <stdint.h>

/* The encoder's place in the raw trace, carried from one piece to the next (zero it first). */
struct zm_walk {
	uint64_t pos;        /* raw offset of the next item to look at */
	int header_read;     /* the file header below has been read */
	int runs, shorts;    /* PROF_FEAT_CHUNK_RUNS, PROF_FEAT_SHORT_RECORDS */
	uint64_t data_off;   /* where chunks start; UINT64_MAX: no sane header, all copied */
	uint64_t unit;       /* chunk_size */
	uint64_t data_end;   /* data_off + chunks_claimed * unit */
	uint64_t chunk_end;  /* end of the chunk being walked; 0 between chunks */
	int base_valid;      /* the chunk's heap base: the previous ALLOC or FREE's address */
	uint64_t base;
};

/* Bytes past a piece's end that zm_encode() may be given to read. */
#define ZM_LOOKAHEAD 64

struct zm_model;
struct zm_model *zm_model_new(void);
void zm_model_free(struct zm_model *m);

/* The most bytes a piece of len raw bytes takes once modeled. */
size_t zm_blob_cap(size_t len);

/* Models the piece [off, off + len) of the raw trace into out (cap >= zm_blob_cap(len)). p holds
 * avail >= len bytes from off: up to ZM_LOOKAHEAD more than the piece where the file has them, so that an
 * item crossing the piece's end can be read. Returns the blob's length, 0 if out of memory. */
size_t zm_encode(struct zm_model *m, struct zm_walk *w, const uint8_t *p, size_t len,
		 size_t avail, uint64_t off, uint8_t *out, size_t cap);

/* The parts of a blob (its head, then each column) that compress best apart: their lengths in
 * len[], ZM_MAX_PARTS at most; returns how many. The blob is the parts back to back. */
#define ZM_MAX_PARTS 16
int zm_blob_parts(const uint8_t *blob, size_t blen, size_t len[ZM_MAX_PARTS]);

/* Rebuilds the len raw bytes of a piece from its blob. 0, or -1 with *why set (a corrupt blob:
 * a column too short, a reference to nothing, a length that is not the piece's). */
int zm_decode(struct zm_model *m, const uint8_t *blob, size_t blen, uint8_t *out, size_t len,
	      const char **why);

#endif
