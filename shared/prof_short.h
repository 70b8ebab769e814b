/* Short records (PROF_FEAT_SHORT_RECORDS, format 2): ALLOC in 16 bytes and FREE in 8 instead
 * of 40 and 24, their time and address written as deltas from the previous ALLOC or FREE of
 * the same chunk. The writer (writer.c) encodes with these functions, the reader (trace.c) and
 * the exit-time leak scan (leakscan.c) decode with them, so the three cannot disagree.
 *
 * A record's first 8 bytes, read as a little-endian u64 w, tell the two encodings apart:
 *   bit 15 clear: an ordinary record (struct prof_rec: type in bits 0-15, below 0x8000);
 *   bit 15 set:   a short one:
 *     bits  0-7   time delta, low 8 bits          bits 16-31  time delta, high 16 bits
 *     bits  8-14  kind: 0-15 ALLOC (flags = kind: enum prof_alloc_fn), 16-31 FREE (flags =
 *                 kind - 16: PROF_FREE_REALLOC)
 *     bits 32-63  address delta, signed, in bytes
 *   An ALLOC has a second word: size (bits 0-31), stack id (bits 32-63).
 * The time delta (ns, 24 bits: up to 16.7 ms) and the address delta count from the base: the
 * time and address of the previous ALLOC or FREE (short or not) in the same chunk, in file
 * order. A chunk starts without a base: its first heap record is an ordinary one, and so is any
 * whose deltas or size do not fit. The first word is stored last (release), as for every
 * record, so a short record is committed as atomically as any other; it is never zero. */
#ifndef PROF_SHORT_H
#define PROF_SHORT_H

#include "prof_format.h"

#define PROF_SHORT_BIT 0x8000u
#define PROF_SHORT_FREE_KIND 16u
#define PROF_SHORT_DT_MAX ((1u << 24) - 1)
#define PROF_SHORT_ALLOC_SIZE 16u
#define PROF_SHORT_FREE_SIZE 8u

/* The base a chunk's short records count from. */
struct prof_short_base {
	uint64_t time;
	uint64_t ptr;
	int valid;
};

static inline int prof_is_short(uint64_t w0)
{
	return (w0 & PROF_SHORT_BIT) != 0;
}

/* Updates the base after an ordinary ALLOC or FREE record (any other type leaves it). */
static inline void prof_short_note(struct prof_short_base *b, const struct prof_rec *r)
{
	if (r->type == PROF_REC_ALLOC || r->type == PROF_REC_FREE) {
		b->time = r->time;
		b->ptr = ((const struct prof_rec_free *)r)->ptr;  /* ptr is first in both */
		b->valid = 1;
	}
}

/* The first word of a short record, or 0 when the event does not fit one (no base, a delta
 * out of range, a size over 32 bits): then an ordinary record is written. */
static inline uint64_t prof_short_word(const struct prof_short_base *b, unsigned kind,
				       uint64_t time, uint64_t ptr)
{
	if (!b->valid || time < b->time || time - b->time > PROF_SHORT_DT_MAX || kind > 31)
		return 0;
	int64_t dp = (int64_t)(ptr - b->ptr);
	if (dp < INT32_MIN || dp > INT32_MAX)
		return 0;
	uint64_t dt = time - b->time;
	return (dt & 0xff) | (uint64_t)kind << 8 | PROF_SHORT_BIT | (dt >> 8) << 16 |
	       (uint64_t)(uint32_t)(int32_t)dp << 32;
}

static inline uint64_t prof_short_alloc_word2(uint64_t size, uint32_t stack)
{
	return size | (uint64_t)stack << 32;
}

/* Decodes the short record at p (whose first word w0 has PROF_SHORT_BIT; `room` bytes of the
 * chunk from p on, all in memory) into the ordinary record it stands for, at out (room for a
 * struct prof_rec_alloc), and moves the base. Returns its length in the file (8 or 16), or a
 * negative value: -1 no base in this chunk, -2 it runs past the chunk, -3 an unknown kind. */
static inline int prof_short_decode(struct prof_short_base *b, uint64_t w0, const void *p,
				    uint64_t room, struct prof_rec_alloc *out)
{
	unsigned kind = (unsigned)(w0 >> 8) & 0x7f;
	if (kind >= 32)
		return -3;
	uint32_t len = kind < PROF_SHORT_FREE_KIND ? PROF_SHORT_ALLOC_SIZE : PROF_SHORT_FREE_SIZE;
	if (room < len)
		return -2;
	if (!b->valid)
		return -1;
	uint64_t dt = (w0 & 0xff) | ((w0 >> 16) & 0xffff) << 8;
	int32_t dp = (int32_t)(uint32_t)(w0 >> 32);
	uint64_t time = b->time + dt, ptr = b->ptr + (uint64_t)(int64_t)dp;
	b->time = time;
	b->ptr = ptr;
	if (kind < PROF_SHORT_FREE_KIND) {
		uint64_t w1;
		__builtin_memcpy(&w1, (const char *)p + 8, 8);
		out->h.type = PROF_REC_ALLOC;
		out->h.flags = (uint16_t)kind;
		out->h.size = (uint32_t)sizeof(struct prof_rec_alloc);
		out->size = (uint32_t)w1;
		out->stack = (uint32_t)(w1 >> 32);
		out->pad = 0;
	} else {
		out->h.type = PROF_REC_FREE;
		out->h.flags = (uint16_t)(kind - PROF_SHORT_FREE_KIND);
		out->h.size = (uint32_t)sizeof(struct prof_rec_free);
	}
	out->h.time = time;
	out->ptr = ptr;
	return (int)len;
}

#endif
