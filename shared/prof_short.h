/* Short records (PROF_FEAT_SHORT_RECORDS, format 2): ALLOC in 16 bytes and FREE in 8 instead
 * of 40 and 24, their time and address written as deltas from the previous ALLOC or FREE of
 * the same chunk; (PROF_FEAT_SHORT_LOCK_WAITS) LOCK_WAIT in 16 bytes instead of 48; and
 * (PROF_FEAT_SHORT_IO_CALLS) IO_CALL in 16 bytes instead of 48; and (PROF_FEAT_SHORT_CUDA)
 * CUDA_LAUNCH, with the API call it stands for, in 16 bytes instead of 96, and CUDA_GPU in 16
 * instead of 88. The
 * writer (writer.c) encodes with these functions, the reader (trace.c) and the exit-time leak
 * scan (leakscan.c) decode with them, so the three cannot disagree.
 *
 * A record's first 8 bytes, read as a little-endian u64 w, tell the two encodings apart:
 *   bit 15 clear: an ordinary record (struct prof_rec: type in bits 0-15, below 0x8000);
 *   bit 15 set:   a short one:
 *     bits  0-7   time delta, low 8 bits          bits 16-31  time delta, high 16 bits
 *     bits  8-14  kind: 0-15 ALLOC (flags = kind: enum prof_alloc_fn), 16-31 FREE (flags =
 *                 kind - 16: PROF_FREE_REALLOC), 32-43 LOCK_WAIT (flags = kind - 32: enum
 *                 prof_lock_op), 48-97 IO_CALL (flags = kind - 48: enum prof_io_op),
 *                 104-111 CUDA_GPU (slot = kind - 104), 112-127 CUDA_LAUNCH (slot = kind - 112)
 *   ALLOC and FREE:
 *     bits 32-63  address delta, signed, in bytes
 *     An ALLOC has a second word: size (bits 0-31), stack id (bits 32-63).
 *   LOCK_WAIT, 16 bytes, for a wait on the op's own kind of lock (prof_lock_op_kind()) with
 *   other 0, result 0 and wait_ns below 2^32 (a contended mutex, most of them):
 *     bits 32-63  wait_ns
 *     second word: lock address delta, signed (bits 0-31), stack id (bits 32-63).
 *   IO_CALL, 16 bytes, for a call on the same file id and descriptor as the io base, with a
 *   result that fits 32 bits signed and a duration below 2^32 ns (most calls of a loop):
 *     bits 32-63  duration_ns
 *     second word: result, signed (bits 0-31), stack id (bits 32-63).
 *   CUDA_LAUNCH, 16 bytes, a successful launch that is its API call's record too
 *   (PROF_CUDA_LAUNCH_API) and repeats the launch its slot holds: the same function, stream,
 *   kernel name, grid, block, shared memory, graph flag, API name and layer:
 *     bits 32-63  api_duration_ns
 *     second word: corr delta, unsigned (bits 0-31), stack id (bits 32-63).
 *   Its slot is prof_short_cuda_slot(function): the chunk keeps the last launch of each of 16
 *   slots, so that the kernels of a loop, interleaved, each find their own.
 *   CUDA_GPU, 16 bytes, GPU work that repeats the record its slot holds (slot by kernel name,
 *   activity and copy kind: prof_short_gpu_slot()): the same flags, activity, copy kind,
 *   bytes, name, device, stream, grid and block, and end - start below 2^32 ns:
 *     bits 32-63  end - start
 *     second word: corr delta, signed (bits 0-31), start delta, signed (bits 32-63).
 * The heap records' time delta (ns, 24 bits: up to 16.7 ms) and address delta count from the
 * heap base: the time and address of the previous ALLOC or FREE (short or not) in the same
 * chunk, in file order. A LOCK_WAIT's deltas count from the lock base, the time and lock of
 * the previous LOCK_WAIT in the chunk, and its time delta is signed (+-8.4 ms): a contended
 * acquisition's record is written when the lock is released, so a later wait (a condition
 * wait inside the hold) may come first. An IO_CALL's time delta, signed too, counts from the
 * io base: the time of the previous IO_CALL or IO_NAME in the chunk, whose file id and
 * descriptor it repeats. A CUDA_LAUNCH's time delta, signed, and its corr delta count from
 * the chunk's previous CUDA_LAUNCH (of any slot); what it repeats, from its slot's last. A
 * CUDA_GPU's time, corr and start deltas count from the chunk's previous CUDA_GPU. A
 * chunk starts without bases: its first record of
 * each sort is an ordinary one, and so is any whose deltas or fields do not fit. The first
 * word is stored last (release), as for every record, so a short record is committed as
 * atomically as any other; it is never zero. */
#ifndef PROF_SHORT_H
#define PROF_SHORT_H

#include "prof_format.h"

#define PROF_SHORT_BIT 0x8000u
#define PROF_SHORT_FREE_KIND 16u
#define PROF_SHORT_LOCK_KIND 32u
#define PROF_SHORT_IO_KIND 48u
#define PROF_SHORT_GPU_KIND 104u
#define PROF_SHORT_GPU_SLOTS 8u
#define PROF_SHORT_CUDA_KIND 112u
#define PROF_SHORT_CUDA_SLOTS 16u
#define PROF_SHORT_DT_MAX ((1u << 24) - 1)
#define PROF_SHORT_LOCK_DT_MAX ((1 << 23) - 1)  /* signed: -(2^23) .. 2^23 - 1 */
#define PROF_SHORT_ALLOC_SIZE 16u
#define PROF_SHORT_FREE_SIZE 8u
#define PROF_SHORT_LOCK_SIZE 16u
#define PROF_SHORT_IO_SIZE 16u
#define PROF_SHORT_CUDA_SIZE 16u
_Static_assert(PROF_SHORT_LOCK_KIND + PROF_LOCK_OP_COUNT <= PROF_SHORT_IO_KIND &&
		       PROF_SHORT_IO_KIND + PROF_IO_OP_COUNT <= PROF_SHORT_GPU_KIND &&
		       PROF_SHORT_GPU_KIND + PROF_SHORT_GPU_SLOTS <= PROF_SHORT_CUDA_KIND &&
		       PROF_SHORT_CUDA_KIND + PROF_SHORT_CUDA_SLOTS <= 128,
	       "short record kinds are 7 bits: lock ops, I/O ops and CUDA slots must fit their ranges");
#define PROF_SHORT_GPU_SIZE 16u

/* The CUDA bases of a chunk (PROF_FEAT_SHORT_CUDA), as a reader keeps them: the
 * time and corr of its last CUDA_LAUNCH, and in each slot the last launch of that slot that a
 * short one may repeat (empty: size 0). All zero at a chunk's start. The writer keeps the
 * same in its own form (preload/writer.c: keys, not whole records). */
struct prof_short_cuda {
	int valid;
	uint64_t time, corr;
	struct prof_rec_cuda_launch_api last[PROF_SHORT_CUDA_SLOTS];
	/* the same of CUDA_GPU records, whose start moves with them too */
	int gpu_valid;
	uint64_t gpu_time, gpu_corr, gpu_start;
	struct prof_rec_cuda_gpu gpu_last[PROF_SHORT_GPU_SLOTS];
};

static inline void prof_short_cuda_reset(struct prof_short_cuda *c)
{
	c->valid = 0;
	for (unsigned i = 0; i < PROF_SHORT_CUDA_SLOTS; i++)
		c->last[i].l.h.size = 0;
	c->gpu_valid = 0;
	for (unsigned i = 0; i < PROF_SHORT_GPU_SLOTS; i++)
		c->gpu_last[i].h.size = 0;
}

/* What a short CUDA_GPU repeats of its slot's last record. */
struct prof_short_gpu_key {
	uint64_t bytes;
	uint32_t name, device, stream, grid[3], block[3];
	uint16_t activity, copy_kind, flags, pad;
};

/* What a short CUDA_LAUNCH repeats of its slot's last launch. */
struct prof_short_cuda_key {
	uint64_t function, stream;
	uint32_t name, api_name, grid[3], block[3], shared_mem, graph, flags;
};

/* The bases a chunk's short records count from: heap (time, ptr: valid), lock (lock_time,
 * lock: lock_valid) and io (io_time, io_file, io_fd: io_valid). All zero at a chunk's start. */
struct prof_short_base {
	uint64_t time;
	uint64_t ptr;
	int valid;
	int lock_valid;
	uint64_t lock_time;
	uint64_t lock;
	int io_valid;
	uint32_t io_file;
	int32_t io_fd;
	uint64_t io_time;
	struct prof_short_cuda *cuda;  /* NULL: short CUDA_LAUNCHes are skipped, not decoded */
};

/* What a short record decodes to: the ordinary record it stands for. */
union prof_short_rec {
	struct prof_rec h;
	struct prof_rec_alloc alloc;
	struct prof_rec_free free;
	struct prof_rec_lock_wait lock_wait;
	struct prof_rec_io_call io_call;
	struct prof_rec_cuda_launch_api cuda_launch;
	struct prof_rec_cuda_gpu cuda_gpu;
};

static inline int prof_is_short(uint64_t w0)
{
	return (w0 & PROF_SHORT_BIT) != 0;
}

/* The slot of a CUDA_LAUNCH of function (a host stub, CUfunction or CUkernel). */
static inline unsigned prof_short_cuda_slot(uint64_t function)
{
	return (unsigned)((function * 0x9e3779b97f4a7c15ull) >> 60);
}

/* Whether a CUDA_LAUNCH record (the ordinary form) is one a short record may repeat: a launch
 * that stands for its successful API call too. */
static inline int prof_short_cuda_repeatable(const struct prof_rec *r)
{
	const struct prof_rec_cuda_launch_api *x = (const void *)r;
	return (r->flags & PROF_CUDA_LAUNCH_API) && r->size == sizeof(*x) && x->api_result == 0;
}

static inline struct prof_short_cuda_key prof_short_cuda_key_of(const struct prof_rec_cuda_launch_api *x)
{
	const struct prof_rec_cuda_launch *l = &x->l;
	return (struct prof_short_cuda_key){
		.function = l->function, .stream = l->stream, .name = l->name,
		.api_name = x->api_name, .grid = { l->grid[0], l->grid[1], l->grid[2] },
		.block = { l->block[0], l->block[1], l->block[2] }, .shared_mem = l->shared_mem,
		.graph = l->graph, .flags = l->h.flags };
}

static inline int prof_short_cuda_key_eq(const struct prof_short_cuda_key *a,
					 const struct prof_short_cuda_key *b)
{
	return a->function == b->function && a->stream == b->stream && a->name == b->name &&
	       a->api_name == b->api_name && a->grid[0] == b->grid[0] && a->grid[1] == b->grid[1] &&
	       a->grid[2] == b->grid[2] && a->block[0] == b->block[0] &&
	       a->block[1] == b->block[1] && a->block[2] == b->block[2] &&
	       a->shared_mem == b->shared_mem && a->graph == b->graph && a->flags == b->flags;
}

/* The CUDA bases after an ordinary CUDA_LAUNCH: the chunk's last, and its slot's where a short
 * one may repeat it (else that slot is emptied: a short record never repeats an older one).
 * The writer follows the same rule (writer.c: prof_write_cuda_launch()). */
static inline void prof_short_cuda_note(struct prof_short_cuda *c, const struct prof_rec *r)
{
	if (r->size < sizeof(struct prof_rec_cuda_launch)) {
		c->valid = 0;
		return;
	}
	const struct prof_rec_cuda_launch *l = (const void *)r;
	c->valid = 1;
	c->time = r->time;
	c->corr = l->corr;
	struct prof_rec_cuda_launch_api *last = &c->last[prof_short_cuda_slot(l->function)];
	if (prof_short_cuda_repeatable(r))
		__builtin_memcpy(last, r, sizeof(*last));
	else
		last->l.h.size = 0;
}

/* The slot of a CUDA_GPU record. */
static inline unsigned prof_short_gpu_slot(uint32_t name, unsigned activity, unsigned copy_kind)
{
	uint64_t k = name | (uint64_t)activity << 32 | (uint64_t)copy_kind << 48;
	return (unsigned)(((k + 1) * 0x9e3779b97f4a7c15ull) >> 61);
}

static inline struct prof_short_gpu_key prof_short_gpu_key_of(const struct prof_rec_cuda_gpu *g)
{
	return (struct prof_short_gpu_key){
		.bytes = g->bytes, .name = g->name, .device = g->device, .stream = g->stream,
		.grid = { g->grid[0], g->grid[1], g->grid[2] },
		.block = { g->block[0], g->block[1], g->block[2] }, .activity = g->activity,
		.copy_kind = g->copy_kind, .flags = g->h.flags };
}

static inline int prof_short_gpu_key_eq(const struct prof_short_gpu_key *a,
					const struct prof_short_gpu_key *b)
{
	return a->bytes == b->bytes && a->name == b->name && a->device == b->device &&
	       a->stream == b->stream && a->grid[0] == b->grid[0] && a->grid[1] == b->grid[1] &&
	       a->grid[2] == b->grid[2] && a->block[0] == b->block[0] &&
	       a->block[1] == b->block[1] && a->block[2] == b->block[2] &&
	       a->activity == b->activity && a->copy_kind == b->copy_kind && a->flags == b->flags;
}

/* The CUDA_GPU bases after an ordinary CUDA_GPU: the chunk's last, and its slot's (the writer
 * follows the same rule: writer.c, prof_write_cuda_gpu()). */
static inline void prof_short_gpu_note(struct prof_short_cuda *c, const struct prof_rec *r)
{
	if (r->size != sizeof(struct prof_rec_cuda_gpu)) {
		c->gpu_valid = 0;
		return;
	}
	const struct prof_rec_cuda_gpu *g = (const void *)r;
	c->gpu_valid = 1;
	c->gpu_time = r->time;
	c->gpu_corr = g->corr;
	c->gpu_start = g->start;
	__builtin_memcpy(&c->gpu_last[prof_short_gpu_slot(g->name, g->activity, g->copy_kind)], g,
			 sizeof(*g));
}

/* Updates the bases after an ordinary ALLOC, FREE, LOCK_WAIT, IO_CALL, IO_NAME, CUDA_LAUNCH or
 * CUDA_GPU record (any other type leaves them). */
static inline void prof_short_note(struct prof_short_base *b, const struct prof_rec *r)
{
	if (r->type == PROF_REC_ALLOC || r->type == PROF_REC_FREE) {
		b->time = r->time;
		b->ptr = ((const struct prof_rec_free *)r)->ptr;  /* ptr is first in both */
		b->valid = 1;
	} else if (r->type == PROF_REC_LOCK_WAIT && r->size >= sizeof(struct prof_rec_lock_wait)) {
		b->lock_time = r->time;
		b->lock = ((const struct prof_rec_lock_wait *)r)->lock;
		b->lock_valid = 1;
	} else if ((r->type == PROF_REC_IO_CALL || r->type == PROF_REC_IO_NAME) &&
		   r->size >= sizeof(struct prof_rec_io_call)) {
		const struct prof_rec_io_call *io = (const struct prof_rec_io_call *)r;
		b->io_time = r->time;
		b->io_file = io->file;
		b->io_fd = io->fd;
		b->io_valid = 1;
	}
	if (r->type == PROF_REC_CUDA_LAUNCH && b->cuda)
		prof_short_cuda_note(b->cuda, r);
	else if (r->type == PROF_REC_CUDA_GPU && b->cuda)
		prof_short_gpu_note(b->cuda, r);
}

/* A short record's first word: kind, a 24-bit time delta (bits 0-7 and 16-31) and the kind's
 * own 32 bits on top. */
static inline uint64_t prof_short_w0(unsigned kind, uint64_t dt24, uint64_t top32)
{
	return (dt24 & 0xff) | (uint64_t)kind << 8 | PROF_SHORT_BIT | (dt24 >> 8) << 16 |
	       top32 << 32;
}

/* ... and its parts back: the kind, the time delta (24 bits, unsigned) and the length of the
 * record in the file (an unknown kind's too: 16, as LOCK_WAIT and IO_CALL). */
static inline unsigned prof_short_kind(uint64_t w0)
{
	return (unsigned)(w0 >> 8) & 0x7f;
}

static inline uint64_t prof_short_dt(uint64_t w0)
{
	return (w0 & 0xff) | ((w0 >> 16) & 0xffff) << 8;
}

static inline uint32_t prof_short_len(unsigned kind)
{
	return kind < PROF_SHORT_FREE_KIND || kind >= PROF_SHORT_LOCK_KIND ? PROF_SHORT_ALLOC_SIZE
									    : PROF_SHORT_FREE_SIZE;
}

/* A short ALLOC or FREE (kind below PROF_SHORT_LOCK_KIND; the base valid): the heap base moves
 * to its time and address. */
static inline void prof_short_heap_step(struct prof_short_base *b, uint64_t w0)
{
	b->time += prof_short_dt(w0);
	b->ptr += (uint64_t)(int64_t)(int32_t)(uint32_t)(w0 >> 32);
}

/* A signed time delta of 24 bits, as short LOCK_WAITs and IO_CALLs hold it, or 0 with *ok
 * clear when it does not fit. */
static inline uint64_t prof_short_signed_dt(uint64_t time, uint64_t base, int *ok)
{
	int64_t dt = (int64_t)(time - base);
	*ok = dt >= -PROF_SHORT_LOCK_DT_MAX - 1 && dt <= PROF_SHORT_LOCK_DT_MAX;
	return *ok ? (uint64_t)dt & 0xffffff : 0;
}

/* A signed 32-bit delta from base to v, or 0 with *ok clear when it does not fit. */
static inline uint32_t prof_short_delta32(uint64_t v, uint64_t base, int *ok)
{
	int64_t d = (int64_t)(v - base);
	*ok = d >= INT32_MIN && d <= INT32_MAX;
	return *ok ? (uint32_t)(int32_t)d : 0;
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
	return prof_short_w0(kind, dt, (uint32_t)(int32_t)dp);
}

static inline uint64_t prof_short_alloc_word2(uint64_t size, uint32_t stack)
{
	return size | (uint64_t)stack << 32;
}

/* The two words of a short LOCK_WAIT in w, or 0 when the wait needs an ordinary record. */
static inline int prof_short_lock_words(const struct prof_short_base *b, unsigned op,
					unsigned kind, uint64_t time, uint64_t lock,
					uint64_t other, uint64_t wait_ns, uint32_t stack, int result,
					uint64_t w[2])
{
	if (!b->lock_valid || op >= PROF_LOCK_OP_COUNT || kind != prof_lock_op_kind(op) ||
	    other || result || wait_ns > UINT32_MAX)
		return 0;
	int ok, ok_l;
	uint64_t udt = prof_short_signed_dt(time, b->lock_time, &ok);
	uint32_t dl = prof_short_delta32(lock, b->lock, &ok_l);
	if (!ok || !ok_l)
		return 0;
	w[0] = prof_short_w0(PROF_SHORT_LOCK_KIND + op, udt, wait_ns);
	w[1] = dl | (uint64_t)stack << 32;
	return 1;
}

/* The two words of a short IO_CALL in w, or 0 when the call needs an ordinary record. */
static inline int prof_short_io_words(const struct prof_short_base *b, unsigned op,
				      uint64_t time, uint32_t file, int32_t fd, int64_t result,
				      uint64_t duration_ns, uint32_t stack, uint64_t w[2])
{
	if (!b->io_valid || op >= PROF_IO_OP_COUNT || file != b->io_file || fd != b->io_fd ||
	    result < INT32_MIN || result > INT32_MAX || duration_ns > UINT32_MAX)
		return 0;
	int ok;
	uint64_t udt = prof_short_signed_dt(time, b->io_time, &ok);
	if (!ok)
		return 0;
	w[0] = prof_short_w0(PROF_SHORT_IO_KIND + op, udt, duration_ns);
	w[1] = (uint64_t)(uint32_t)(int32_t)result | (uint64_t)stack << 32;
	return 1;
}

/* The two words of a short CUDA_LAUNCH for the launch x (its ordinary form, header filled in
 * but for the first word) in w, or 0 when it needs an ordinary record. valid, time and corr:
 * the chunk's CUDA base; repeats: x's slot holds a launch with x's key. */
static inline int prof_short_cuda_words(int valid, uint64_t time, uint64_t corr, int repeats,
					const struct prof_rec_cuda_launch_api *x, uint64_t w[2])
{
	if (!valid || !repeats || !prof_short_cuda_repeatable(&x->l.h) ||
	    x->api_duration_ns > UINT32_MAX || x->l.corr - corr > UINT32_MAX)
		return 0;
	int ok;
	uint64_t udt = prof_short_signed_dt(x->l.h.time, time, &ok);
	if (!ok)
		return 0;
	w[0] = prof_short_w0(PROF_SHORT_CUDA_KIND + prof_short_cuda_slot(x->l.function), udt,
			     x->api_duration_ns);
	w[1] = (x->l.corr - corr) | (uint64_t)x->l.stack << 32;
	return 1;
}

/* The two words of a short CUDA_GPU for g (its ordinary form, header filled in but for the
 * first word) in w, or 0 when it needs an ordinary record. valid, time, corr and start: the
 * chunk's CUDA_GPU base; repeats: g's slot holds a record with g's key. */
static inline int prof_short_gpu_words(int valid, uint64_t time, uint64_t corr, uint64_t start,
				       int repeats, const struct prof_rec_cuda_gpu *g, uint64_t w[2])
{
	if (!valid || !repeats || g->h.size != sizeof(*g) || g->end < g->start ||
	    g->end - g->start > UINT32_MAX)
		return 0;
	int ok_t, ok_c, ok_s;
	uint64_t udt = prof_short_signed_dt(g->h.time, time, &ok_t);
	uint32_t dc = prof_short_delta32(g->corr, corr, &ok_c);
	uint32_t ds = prof_short_delta32(g->start, start, &ok_s);
	if (!ok_t || !ok_c || !ok_s)
		return 0;
	w[0] = prof_short_w0(PROF_SHORT_GPU_KIND + prof_short_gpu_slot(g->name, g->activity,
									g->copy_kind),
			     udt, g->end - g->start);
	w[1] = dc | (uint64_t)ds << 32;
	return 1;
}

/* Whether kind is one a writer makes (the gaps between the families' kinds are not). */
static inline int prof_short_kind_known(unsigned kind)
{
	return !((kind >= PROF_SHORT_LOCK_KIND + PROF_LOCK_OP_COUNT && kind < PROF_SHORT_IO_KIND) ||
		 (kind >= PROF_SHORT_IO_KIND + PROF_IO_OP_COUNT && kind < PROF_SHORT_GPU_KIND));
}

/* Decodes the short record at p (whose first word w0 has PROF_SHORT_BIT; `room` bytes of the
 * chunk from p on, all in memory) into the ordinary record it stands for, at out, and moves
 * its base. Returns its length in the file (8 or 16), or a negative value: -1 no base in this
 * chunk, -2 it runs past the chunk, -3 an unknown kind. */
static inline int prof_short_decode(struct prof_short_base *b, uint64_t w0, const void *p,
				    uint64_t room, union prof_short_rec *out)
{
	unsigned kind = prof_short_kind(w0);
	if (!prof_short_kind_known(kind))
		return -3;
	uint32_t len = prof_short_len(kind);
	if (room < len)
		return -2;
	uint64_t dt = prof_short_dt(w0);
	uint64_t w1 = 0;
	if (len > 8)
		__builtin_memcpy(&w1, (const char *)p + 8, 8);
	int64_t sdt = (int64_t)(dt << 40) >> 40;  /* sign-extends the 24 bits */
	if (kind >= PROF_SHORT_CUDA_KIND) {
		struct prof_short_cuda *c = b->cuda;
		if (!c) {  /* a reader with no use for it (the exit's leak scan): its type alone */
			out->h = (struct prof_rec){ .type = PROF_REC_CUDA_LAUNCH, .size = len };
			return (int)len;
		}
		const struct prof_rec_cuda_launch_api *last = &c->last[kind - PROF_SHORT_CUDA_KIND];
		if (!c->valid || !last->l.h.size)
			return -1;
		c->time += (uint64_t)sdt;
		c->corr += (uint32_t)w1;
		out->cuda_launch = *last;
		out->cuda_launch.l.h.time = c->time;
		out->cuda_launch.l.corr = c->corr;
		out->cuda_launch.l.stack = (uint32_t)(w1 >> 32);
		out->cuda_launch.api_duration_ns = w0 >> 32;
		return (int)len;
	}
	if (kind >= PROF_SHORT_GPU_KIND) {
		struct prof_short_cuda *c = b->cuda;
		if (!c) {  /* a reader with no use for it (the exit's leak scan): its type alone */
			out->h = (struct prof_rec){ .type = PROF_REC_CUDA_GPU, .size = len };
			return (int)len;
		}
		const struct prof_rec_cuda_gpu *last = &c->gpu_last[kind - PROF_SHORT_GPU_KIND];
		if (!c->gpu_valid || !last->h.size)
			return -1;
		c->gpu_time += (uint64_t)sdt;
		c->gpu_corr += (uint64_t)(int64_t)(int32_t)(uint32_t)w1;
		c->gpu_start += (uint64_t)(int64_t)(int32_t)(uint32_t)(w1 >> 32);
		out->cuda_gpu = *last;
		out->cuda_gpu.h.time = c->gpu_time;
		out->cuda_gpu.corr = c->gpu_corr;
		out->cuda_gpu.start = c->gpu_start;
		out->cuda_gpu.end = c->gpu_start + (w0 >> 32);
		return (int)len;
	}
	if (kind >= PROF_SHORT_IO_KIND) {
		if (!b->io_valid)
			return -1;
		b->io_time += (uint64_t)sdt;
		out->io_call = (struct prof_rec_io_call){
			.h = { .type = PROF_REC_IO_CALL, .flags = (uint16_t)(kind - PROF_SHORT_IO_KIND),
			       .size = (uint32_t)sizeof(struct prof_rec_io_call), .time = b->io_time },
			.file = b->io_file,
			.fd = b->io_fd,
			.result = (int32_t)(uint32_t)w1,
			.duration_ns = w0 >> 32,
			.stack = (uint32_t)(w1 >> 32),
		};
		return (int)len;
	}
	if (kind >= PROF_SHORT_LOCK_KIND) {
		if (!b->lock_valid)
			return -1;
		b->lock_time += (uint64_t)sdt;
		b->lock += (uint64_t)(int64_t)(int32_t)(uint32_t)w1;
		unsigned op = kind - PROF_SHORT_LOCK_KIND;
		out->lock_wait = (struct prof_rec_lock_wait){
			.h = { .type = PROF_REC_LOCK_WAIT, .flags = (uint16_t)op,
			       .size = (uint32_t)sizeof(struct prof_rec_lock_wait), .time = b->lock_time },
			.lock = b->lock,
			.wait_ns = w0 >> 32,
			.stack = (uint32_t)(w1 >> 32),
			.kind = (uint16_t)prof_lock_op_kind(op),
		};
		return (int)len;
	}
	if (!b->valid)
		return -1;
	prof_short_heap_step(b, w0);
	if (kind < PROF_SHORT_FREE_KIND) {
		out->alloc.h.type = PROF_REC_ALLOC;
		out->alloc.h.flags = (uint16_t)kind;
		out->alloc.h.size = (uint32_t)sizeof(struct prof_rec_alloc);
		out->alloc.size = (uint32_t)w1;
		out->alloc.stack = (uint32_t)(w1 >> 32);
		out->alloc.pad = 0;
	} else {
		out->free.h.type = PROF_REC_FREE;
		out->free.h.flags = (uint16_t)(kind - PROF_SHORT_FREE_KIND);
		out->free.h.size = (uint32_t)sizeof(struct prof_rec_free);
	}
	out->h.time = b->time;
	out->free.ptr = b->ptr;
	return (int)len;
}

#endif
