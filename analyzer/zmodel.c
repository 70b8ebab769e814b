/* The record model of compressed traces: see zmodel.h. The encoder walks the raw trace as
 * the reader would (header, chunks, records) only to choose how to cut it into operations;
 * the decoder just replays the operations, checking every column read and every reference
 * against what it has rebuilt so far. A blob is untrusted input like any trace. */
#include "zmodel.h"

#include <stdlib.h>
#include <string.h>

#include "prof_format.h"
#include "prof_short.h"

/* The columns of a blob, in this order. Each holds values of a fixed width, stored in planes. */
enum column {
	C_OPS,    /* one byte per operation (enum op) */
	C_LEN,    /* lengths of RAW and ZERO operations, LEB128 */
	C_RAW,    /* the bytes RAW operations copy */
	C_BASE,   /* BASE: the heap base (an address) */
	C_DT,     /* a short record's 24-bit time delta */
	C_ADDR,   /* a short ALLOC's or FREE's address delta, as written, when not predicted */
	C_AIDX,   /* ALLOC_HIT: the block's place in its size class's freed list, 0 = latest */
	C_AGE,    /* FREE_HIT: allocations made since the freed block's, 0 = the latest;
		   * ALLOC_FREED: frees made since the one of this address */
	C_SIZE,   /* a short ALLOC's size minus the last size allocated at its stack */
	C_STACK,  /* a short record's stack id */
	C_VAL,    /* a short LOCK_WAIT's or IO_CALL's top 32 bits (wait, duration) */
	C_LO,     /* ... and its lock delta or result */
	NCOLUMNS
};
static const uint8_t width[NCOLUMNS] = { 1, 1, 1, 8, 3, 4, 1, 2, 4, 4, 4, 4 };

/* Operations: copy, zeros, set the base, or a short record (kind in the low bits). */
enum op {
	OP_RAW = 0x00,
	OP_ZERO = 0x01,
	OP_BASE = 0x02,
	OP_ALLOC_HIT = 0x10,  /* | kind (0-15): a short ALLOC whose address is a freed block */
	OP_FREE_HIT = 0x20,   /* | kind - 16: a short FREE of a block allocated in this piece */
	OP_ALLOC_FREED = 0x30,  /* | kind (0-15): a short ALLOC at an address freed in this piece
				 * (a block of another size class, split or merged by malloc) */
	OP_SHORT = 0x80,      /* | kind (0-127): any short record, every field in its column */
};

#define BLOB_VERSION 1
#define BLOB_HEAD (4 + 4 * NCOLUMNS)  /* version, columns, 2 zero bytes, u32 length each */
#define RING 65536u     /* allocations a FREE, frees an ALLOC may refer back to (C_AGE: 2 bytes) */
#define CLASSES 320u    /* size classes: 16-byte steps to 4 KiB, powers of two above */
#define DEPTH 255u      /* freed blocks remembered per class (C_AIDX < DEPTH) */
#define DROP 64u        /* ... of which a full list forgets its oldest at once */
#define SIZES 16384u    /* stacks whose last size is remembered (direct-mapped) */
#define CACHE 65536u    /* encoder: address -> allocation number (direct-mapped, checked) */
#define ZERO_RUN 32     /* zeros shorter than this are copied */

struct zm_model {
	/* The model both sides keep, emptied at each piece. */
	uint64_t base;      /* the address the next short ALLOC or FREE's delta counts from */
	uint32_t n;         /* allocations so far in the piece */
	uint64_t ring_addr[RING];
	uint32_t ring_size[RING];
	uint32_t nf;        /* frees so far in the piece */
	uint64_t free_addr[RING];
	uint64_t freed[CLASSES][DEPTH];  /* oldest first */
	uint8_t nfreed[CLASSES];
	uint32_t piece;     /* which piece this is (from 1): a size slot of an earlier one is empty */
	uint64_t size_key[SIZES];  /* stack | piece << 32 */
	uint32_t size_last[SIZES];
	/* The encoder's own. */
	uint64_t cache_addr[CACHE], fcache_addr[CACHE];
	uint32_t cache_seq[CACHE], fcache_seq[CACHE];
	unsigned cache_shift;    /* a small piece's caches use fewer slots: fewer pages touched */
	uint8_t *col[NCOLUMNS];  /* values in order, each width[c] bytes little-endian */
	size_t used[NCOLUMNS], cap;
	int overflow;
	size_t pend_raw, pend_zero;  /* a RAW or ZERO operation still growing */
};

struct zm_model *zm_model_new(void)
{
	return calloc(1, sizeof(struct zm_model));
}

void zm_model_free(struct zm_model *m)
{
	if (!m)
		return;
	for (int c = 0; c < NCOLUMNS; c++)
		free(m->col[c]);
	free(m);
}

size_t zm_blob_cap(size_t len)
{
	return 2 * len + 4096;
}

static void model_reset(struct zm_model *m)
{
	m->base = 0;
	m->n = m->nf = 0;
	memset(m->nfreed, 0, sizeof(m->nfreed));
	if (++m->piece == 0) {  /* after 2^32 pieces: the slots emptied for real */
		memset(m->size_key, 0, sizeof(m->size_key));
		m->piece = 1;
	}
}

static unsigned size_class(uint64_t size)
{
	if (size <= 4096)
		return (unsigned)((size + 23) >> 4);  /* 1 .. 257: glibc's chunk sizes (size + 8, 16-aligned) */
	return 258 + (unsigned)(63 - __builtin_clzll(size)) - 12;  /* 258 .. 309 */
}

static void freed_push(struct zm_model *m, uint64_t size, uint64_t addr)
{
	unsigned c = size_class(size), k = m->nfreed[c];
	if (k == DEPTH) {  /* forgets many at once: a list that only grows costs little */
		memmove(m->freed[c], m->freed[c] + DROP, (DEPTH - DROP) * sizeof(uint64_t));
		k -= DROP;
	}
	m->freed[c][k] = addr;
	m->nfreed[c] = (uint8_t)(k + 1);
}

/* Takes the i-th latest freed block of class c (i < nfreed[c]). */
static uint64_t freed_take(struct zm_model *m, unsigned c, unsigned i)
{
	unsigned at = m->nfreed[c] - 1u - i;
	uint64_t a = m->freed[c][at];
	memmove(m->freed[c] + at, m->freed[c] + at + 1, (m->nfreed[c] - 1u - at) * sizeof(uint64_t));
	m->nfreed[c]--;
	return a;
}

static unsigned size_slot(uint32_t stack)
{
	return (stack * 2654435761u) >> 18;  /* 14 bits: SIZES */
}

static uint32_t size_guess(const struct zm_model *m, uint32_t stack)
{
	unsigned h = size_slot(stack);
	return m->size_key[h] == ((uint64_t)stack | (uint64_t)m->piece << 32) ? m->size_last[h] : 0;
}

static void size_note(struct zm_model *m, uint32_t stack, uint32_t size)
{
	unsigned h = size_slot(stack);
	m->size_key[h] = (uint64_t)stack | (uint64_t)m->piece << 32;
	m->size_last[h] = size;
}

/* An allocation's address and size, under the next allocation number. */
static void note_alloc(struct zm_model *m, uint64_t addr, uint32_t size)
{
	m->ring_addr[m->n % RING] = addr;
	m->ring_size[m->n % RING] = size;
	m->n++;
}

static void note_free(struct zm_model *m, uint64_t addr)
{
	m->free_addr[m->nf % RING] = addr;
	m->nf++;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* ---- encoding ---- */

static void put(struct zm_model *m, enum column c, uint64_t v)
{
	if (m->used[c] + 8 > m->cap) {
		m->overflow = 1;
		return;
	}
	memcpy(m->col[c] + m->used[c], &v, 8);  /* little-endian: the low width[c] bytes count */
	m->used[c] += width[c];
}

static void put_len(struct zm_model *m, uint64_t n)
{
	do {
		put(m, C_LEN, (n & 0x7f) | (n > 0x7f ? 0x80 : 0));
		n >>= 7;
	} while (n);
}

static void flush_pending(struct zm_model *m)
{
	if (m->pend_raw) {
		put(m, C_OPS, OP_RAW);
		put_len(m, m->pend_raw);
	} else if (m->pend_zero) {
		put(m, C_OPS, OP_ZERO);
		put_len(m, m->pend_zero);
	}
	m->pend_raw = m->pend_zero = 0;
}

static void emit_op(struct zm_model *m, enum op op)
{
	flush_pending(m);
	put(m, C_OPS, op);
}

static void emit_raw(struct zm_model *m, const uint8_t *s, size_t n)
{
	if (m->pend_zero)
		flush_pending(m);
	if (m->used[C_RAW] + n > m->cap) {
		m->overflow = 1;
		return;
	}
	memcpy(m->col[C_RAW] + m->used[C_RAW], s, n);
	m->used[C_RAW] += n;
	m->pend_raw += n;
}

static void emit_zero(struct zm_model *m, size_t n)
{
	if (m->pend_raw)
		flush_pending(m);
	m->pend_zero += n;
}

/* The piece being encoded: its bytes from raw offset off, avail of them readable. */
struct piece {
	struct zm_model *m;
	const uint8_t *p;
	uint64_t off, end;
	size_t avail;
};

/* Copies raw bytes [a, b) of the piece, runs of zeros as their length. */
static void span(struct piece *e, uint64_t a, uint64_t b)
{
	const uint8_t *s = e->p + (a - e->off);
	size_t n = (size_t)(b - a), i = 0, lit = 0;
	while (i < n) {
		if (s[i]) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !s[j])
			j++;
		if (j - i >= ZERO_RUN) {
			if (i > lit)
				emit_raw(e->m, s + lit, i - lit);
			emit_zero(e->m, j - i);
			lit = j;
		}
		i = j;
	}
	if (n > lit)
		emit_raw(e->m, s + lit, n - lit);
}

/* An item copied as it is: [pos, to), the part in this piece now, the rest in the next. */
static void item_span(struct piece *e, struct zm_walk *w, uint64_t to)
{
	span(e, w->pos, to < e->end ? to : e->end);
	w->pos = to;
}

static uint64_t cache_slot(const struct zm_model *m, uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) >> m->cache_shift;  /* up to 16 bits: CACHE */
}

/* A short record wholly in the piece: w1 is its second word (16-byte kinds). */
static void encode_short(struct piece *e, struct zm_walk *w, uint64_t w0, uint64_t w1)
{
	struct zm_model *m = e->m;
	unsigned kind = prof_short_kind(w0);
	uint32_t dt = (uint32_t)prof_short_dt(w0), top = (uint32_t)(w0 >> 32);
	if (kind >= PROF_SHORT_LOCK_KIND) {  /* LOCK_WAIT, IO_CALL, kinds to come: columns only */
		emit_op(m, OP_SHORT | kind);
		put(m, C_DT, dt);
		put(m, C_VAL, top);
		put(m, C_LO, (uint32_t)w1);
		put(m, C_STACK, w1 >> 32);
		return;
	}
	if (w->base_valid && m->base != w->base) {
		emit_op(m, OP_BASE);
		put(m, C_BASE, w->base);
		m->base = w->base;
	}
	uint64_t addr = m->base + (uint64_t)(int64_t)(int32_t)top;
	if (kind < PROF_SHORT_FREE_KIND) {
		uint32_t size = (uint32_t)w1, stack = (uint32_t)(w1 >> 32);
		unsigned c = size_class(size), i = 0;
		while (i < m->nfreed[c] && m->freed[c][m->nfreed[c] - 1u - i] != addr)
			i++;
		uint64_t fh = cache_slot(m, addr);
		uint32_t fseq = m->fcache_seq[fh];
		if (i < m->nfreed[c]) {
			emit_op(m, OP_ALLOC_HIT | kind);
			put(m, C_AIDX, i);
			freed_take(m, c, i);
		} else if (m->fcache_addr[fh] == addr && fseq < m->nf && m->nf - fseq <= RING &&
			   m->free_addr[fseq % RING] == addr) {
			emit_op(m, OP_ALLOC_FREED | kind);
			put(m, C_AGE, m->nf - 1 - fseq);
		} else {
			emit_op(m, OP_SHORT | kind);
			put(m, C_ADDR, top);
		}
		put(m, C_DT, dt);
		put(m, C_STACK, stack);
		put(m, C_SIZE, (uint32_t)(size - size_guess(m, stack)));
		size_note(m, stack, size);
		uint64_t h = cache_slot(m, addr);
		m->cache_addr[h] = addr;
		m->cache_seq[h] = m->n;
		note_alloc(m, addr, size);
	} else {
		uint64_t h = cache_slot(m, addr);
		uint32_t seq = m->cache_seq[h];
		if (m->cache_addr[h] == addr && seq < m->n && m->n - seq <= RING &&
		    m->ring_addr[seq % RING] == addr) {
			emit_op(m, OP_FREE_HIT | (kind - PROF_SHORT_FREE_KIND));
			put(m, C_AGE, m->n - 1 - seq);
			freed_push(m, m->ring_size[seq % RING], addr);
		} else {
			emit_op(m, OP_SHORT | kind);
			put(m, C_ADDR, top);
		}
		put(m, C_DT, dt);
		m->fcache_addr[h] = addr;
		m->fcache_seq[h] = m->nf;
		note_free(m, addr);
	}
	m->base = w->base = addr;
	w->base_valid = 1;
}

static void read_header(struct zm_walk *w, const uint8_t *q, size_t have)
{
	struct prof_file_header h;
	w->header_read = 1;
	w->data_off = UINT64_MAX;
	if (have < sizeof(h))
		return;
	memcpy(&h, q, sizeof(h));
	uint64_t unit = h.chunk_size;
	if (h.magic != PROF_MAGIC || unit < 1024 || unit > (64u << 20) || (unit & (unit - 1)) ||
	    h.data_offset < sizeof(h) || h.chunks_claimed > (UINT64_MAX - h.data_offset) / unit)
		return;
	w->runs = (h.features & PROF_FEAT_CHUNK_RUNS) != 0;
	w->shorts = (h.features & PROF_FEAT_SHORT_RECORDS) != 0;
	w->unit = unit;
	w->data_off = h.data_offset;
	w->data_end = h.data_offset + h.chunks_claimed * unit;
}

/* A chunk header, or a unit that is none (unused, or not what it should be). */
static void walk_chunk_start(struct piece *e, struct zm_walk *w, const uint8_t *q, size_t have)
{
	uint64_t hlen = w->runs ? sizeof(struct prof_chunk_header_run) : sizeof(struct prof_chunk_header);
	uint64_t units = have >= hlen && w->runs ? load32(q + 16) : 1;
	if (have < hlen || load32(q) != PROF_CHUNK_MAGIC || units == 0 ||
	    units > (w->data_end - w->pos) / w->unit) {
		item_span(e, w, w->pos + w->unit);
		return;
	}
	w->chunk_end = w->pos + units * w->unit;
	w->base_valid = 0;
	item_span(e, w, w->pos + hlen);
}

/* The record at w->pos inside a chunk, or the rest of the chunk where none is. */
static void walk_record(struct piece *e, struct zm_walk *w, const uint8_t *q, size_t have)
{
	uint64_t room = w->chunk_end - w->pos;
	uint64_t w0 = room >= 8 && have >= 8 ? load64(q) : 0;
	if (!w0) {
		item_span(e, w, w->chunk_end);
		return;
	}
	if (prof_is_short(w0)) {
		unsigned kind = prof_short_kind(w0);
		uint64_t len = prof_short_len(kind);
		if (!w->shorts || len > room || len > have) {
			item_span(e, w, w->chunk_end);
		} else if (w->pos + len > e->end) {  /* crosses into the next piece: copied */
			if (kind < PROF_SHORT_LOCK_KIND)
				w->base += (uint64_t)(int64_t)(int32_t)(w0 >> 32);
			item_span(e, w, w->pos + len);
		} else {
			encode_short(e, w, w0, len > 8 ? load64(q + 8) : 0);
			w->pos += len;
		}
		return;
	}
	uint32_t size = load32(q + 4);
	uint64_t len = ((uint64_t)size + 7) & ~7ull;
	if (size < sizeof(struct prof_rec) || len > room) {
		item_span(e, w, w->chunk_end);
		return;
	}
	unsigned type = (unsigned)(w0 & 0xffff);
	if ((type == PROF_REC_ALLOC || type == PROF_REC_FREE) && size >= 24 && have >= 24) {
		w->base = load64(q + 16);
		w->base_valid = 1;
	}
	item_span(e, w, w->pos + len);
}

static void walk(struct piece *e, struct zm_walk *w)
{
	const uint8_t *q = e->p + (w->pos - e->off);
	size_t have = e->avail - (size_t)(w->pos - e->off);
	if (!w->header_read)
		read_header(w, q, have);
	if (w->pos < w->data_off)
		item_span(e, w, w->data_off);
	else if (w->pos >= w->data_end)
		item_span(e, w, e->end);
	else if (!w->chunk_end)
		walk_chunk_start(e, w, q, have);
	else
		walk_record(e, w, q, have);
	if (w->chunk_end && w->pos >= w->chunk_end)
		w->chunk_end = 0;
}

/* Writes the columns, each in planes, after the blob's head. */
static size_t finish(struct zm_model *m, uint8_t *out, size_t cap)
{
	size_t total = BLOB_HEAD;
	for (int c = 0; c < NCOLUMNS; c++)
		total += m->used[c];
	if (total > cap)
		return 0;
	out[0] = BLOB_VERSION;
	out[1] = NCOLUMNS;
	out[2] = out[3] = 0;
	uint8_t *o = out + BLOB_HEAD;
	for (int c = 0; c < NCOLUMNS; c++) {
		uint32_t len = (uint32_t)m->used[c];
		memcpy(out + 4 + 4 * c, &len, 4);
		size_t w = width[c], count = len / w;
		for (size_t j = 0; j < w; j++)
			for (size_t i = 0; i < count; i++)
				*o++ = m->col[c][i * w + j];
	}
	return total;
}

size_t zm_encode(struct zm_model *m, struct zm_walk *w, const uint8_t *p, size_t len,
		 size_t avail, uint64_t off, uint8_t *out, size_t cap)
{
	size_t need = len + 4096;
	if (m->cap < need) {
		for (int c = 0; c < NCOLUMNS; c++) {
			free(m->col[c]);
			if (!(m->col[c] = malloc(need))) {
				m->cap = 0;
				return 0;
			}
		}
		m->cap = need;
	}
	model_reset(m);
	unsigned bits = 10;
	while (bits < 16 && (1ull << bits) < len / 8)  /* a slot per record it may hold */
		bits++;
	m->cache_shift = 64 - bits;
	memset(m->used, 0, sizeof(m->used));
	m->overflow = 0;
	m->pend_raw = m->pend_zero = 0;
	struct piece e = { m, p, off, off + len, avail };
	if (w->pos > off)
		span(&e, off, w->pos < e.end ? w->pos : e.end);
	while (w->pos < e.end)
		walk(&e, w);
	flush_pending(m);
	if (m->overflow) {  /* cannot happen (every column fits in len + 4096), but never trust it */
		model_reset(m);
		memset(m->used, 0, sizeof(m->used));
		m->overflow = 0;
		emit_raw(m, p, len);
		flush_pending(m);
	}
	return finish(m, out, cap);
}

int zm_blob_parts(const uint8_t *blob, size_t blen, size_t len[ZM_MAX_PARTS])
{
	_Static_assert(1 + NCOLUMNS <= ZM_MAX_PARTS, "a blob's parts: its head and columns");
	int k = 0;
	len[k++] = BLOB_HEAD;
	for (int c = 0; c < NCOLUMNS; c++)
		if ((len[k] = load32(blob + 4 + 4 * c)))
			k++;
	(void)blen;
	return k;
}

/* ---- decoding ---- */

struct reader {
	const uint8_t *p;
	size_t count, i;  /* values */
	unsigned w;
};

static inline int get(struct reader *r, uint64_t *v)
{
	if (r->i >= r->count)
		return -1;
	const uint8_t *p = r->p + r->i++;
	size_t n = r->count;
	switch (r->w) {  /* spelled out per width: this is the decoder's inner loop */
	case 1:
		*v = p[0];
		break;
	case 2:
		*v = p[0] | (uint64_t)p[n] << 8;
		break;
	case 3:
		*v = p[0] | (uint64_t)p[n] << 8 | (uint64_t)p[2 * n] << 16;
		break;
	case 4:
		*v = p[0] | (uint64_t)p[n] << 8 | (uint64_t)p[2 * n] << 16 | (uint64_t)p[3 * n] << 24;
		break;
	default: {
		uint64_t x = 0;
		for (unsigned j = 0; j < r->w; j++)
			x |= (uint64_t)p[j * n] << (8 * j);
		*v = x;
	}
	}
	return 0;
}

static int get_len(struct reader *r, uint64_t *n)
{
	uint64_t b, v = 0;
	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (get(r, &b) < 0)
			return -1;
		v |= (b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*n = v;
			return 0;
		}
	}
	return -1;
}

int zm_decode(struct zm_model *m, const uint8_t *blob, size_t blen, uint8_t *out, size_t len,
	      const char **why)
{
	struct reader r[NCOLUMNS];
	if (blen < BLOB_HEAD || blob[0] != BLOB_VERSION || blob[1] != NCOLUMNS || blob[2] || blob[3]) {
		*why = "not a column blob of this version";
		return -1;
	}
	size_t at = BLOB_HEAD;
	for (int c = 0; c < NCOLUMNS; c++) {
		uint32_t n = load32(blob + 4 + 4 * c);
		if (n > blen - at || n % width[c]) {
			*why = "column lengths do not fit the blob";
			return -1;
		}
		r[c] = (struct reader){ blob + at, n / width[c], 0, width[c] };
		at += n;
	}
	if (at != blen) {
		*why = "column lengths do not fit the blob";
		return -1;
	}
	model_reset(m);
	size_t o = 0;
	*why = "a column ends early";
	while (o < len) {
		uint64_t op, n, v;
		if (get(&r[C_OPS], &op) < 0)
			return -1;
		if (op == OP_RAW || op == OP_ZERO) {
			if (get_len(&r[C_LEN], &n) < 0)
				return -1;
			if (n == 0 || n > len - o) {
				*why = "a copy runs past the piece";
				return -1;
			}
			if (op == OP_RAW) {
				struct reader *raw = &r[C_RAW];
				if (n > raw->count - raw->i)
					return -1;
				memcpy(out + o, raw->p + raw->i, (size_t)n);
				raw->i += (size_t)n;
			} else {
				memset(out + o, 0, (size_t)n);
			}
			o += (size_t)n;
			continue;
		}
		if (op == OP_BASE) {
			if (get(&r[C_BASE], &m->base) < 0)
				return -1;
			continue;
		}
		unsigned kind;
		int hit = !(op & OP_SHORT);
		if (!hit)
			kind = (unsigned)op & 0x7f;
		else if ((op & 0xf0) == OP_ALLOC_HIT)
			kind = (unsigned)op & 0xf;
		else if ((op & 0xf0) == OP_FREE_HIT)
			kind = PROF_SHORT_FREE_KIND + ((unsigned)op & 0xf);
		else if ((op & 0xf0) == OP_ALLOC_FREED)
			kind = (unsigned)op & 0xf;
		else {
			*why = "an unknown operation";
			return -1;
		}
		size_t rlen = prof_short_len(kind);
		if (rlen > len - o) {
			*why = "a record runs past the piece";
			return -1;
		}
		uint64_t dt, top, w1 = 0;
		if (get(&r[C_DT], &dt) < 0)
			return -1;
		if (kind >= PROF_SHORT_LOCK_KIND) {
			uint64_t lo, stack;
			if (get(&r[C_VAL], &top) < 0 || get(&r[C_LO], &lo) < 0 ||
			    get(&r[C_STACK], &stack) < 0)
				return -1;
			w1 = lo | stack << 32;
		} else if (kind < PROF_SHORT_FREE_KIND) {
			uint64_t stack, dsize;
			if (get(&r[C_STACK], &stack) < 0 || get(&r[C_SIZE], &dsize) < 0)
				return -1;
			uint32_t size = (uint32_t)(dsize + size_guess(m, (uint32_t)stack));
			uint64_t addr;
			if ((op & 0xf0) == OP_ALLOC_HIT) {
				unsigned c = size_class(size);
				if (get(&r[C_AIDX], &v) < 0)
					return -1;
				if (v >= m->nfreed[c]) {
					*why = "an allocation refers to a freed block it has not seen";
					return -1;
				}
				addr = freed_take(m, c, (unsigned)v);
				top = (uint32_t)(addr - m->base);
			} else if (hit) {
				if (get(&r[C_AGE], &v) < 0)
					return -1;
				if (v >= m->nf) {
					*why = "an allocation refers to a free it has not seen";
					return -1;
				}
				addr = m->free_addr[(m->nf - 1 - (uint32_t)v) % RING];
				top = (uint32_t)(addr - m->base);
			} else {
				if (get(&r[C_ADDR], &top) < 0)
					return -1;
				addr = m->base + (uint64_t)(int64_t)(int32_t)top;
			}
			size_note(m, (uint32_t)stack, size);
			note_alloc(m, addr, size);
			m->base = addr;
			w1 = size | stack << 32;
		} else {
			uint64_t addr;
			if (hit) {
				if (get(&r[C_AGE], &v) < 0)
					return -1;
				if (v >= m->n) {
					*why = "a free refers to an allocation it has not seen";
					return -1;
				}
				uint32_t seq = m->n - 1 - (uint32_t)v;
				addr = m->ring_addr[seq % RING];
				freed_push(m, m->ring_size[seq % RING], addr);
				top = (uint32_t)(addr - m->base);
			} else {
				if (get(&r[C_ADDR], &top) < 0)
					return -1;
				addr = m->base + (uint64_t)(int64_t)(int32_t)top;
			}
			note_free(m, addr);
			m->base = addr;
		}
		uint64_t w0 = prof_short_w0(kind, dt, top);
		memcpy(out + o, &w0, 8);
		if (rlen > 8)
			memcpy(out + o + 8, &w1, 8);
		o += rlen;
	}
	for (int c = 0; c < NCOLUMNS; c++) {
		if (r[c].i != r[c].count) {
			*why = "a column is longer than the piece needs";
			return -1;
		}
	}
	return 0;
}
