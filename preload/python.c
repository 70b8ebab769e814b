/* Python frames in native stacks: finds CPython at start-up, reads the calling thread's frame
 * chain where libprof already records (hooks, CPU samples), writes each code object once
 * (PY_CODE) and splices the frames into the native stack (shared/prof_fmt_py.h).
 *
 * Every read of the interpreter's memory goes through process_vm_readv() on our own process:
 * the kernel checks it, so a frame chain that points into unmapped memory ends the walk
 * instead of faulting, and it is async-signal-safe. Nothing of the interpreter is written or
 * called besides PyGILState_GetThisThreadState() (a thread-local read: no lock, no GIL, no
 * allocation); reference counts are never touched. */
#include "prof.h"
#include "python.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

int prof_py_on;
static const struct py_layout *L;
static uintptr_t eval_lo, eval_hi;  /* _PyEval_EvalFrameDefault */
static uintptr_t code_type;          /* &PyCode_Type */
static void *(*this_thread_state)(void);
static pid_t self_pid;

#define WALK_MAX 128     /* Python frames kept per stack */
#define CHAIN_MAX 4096   /* frames followed at most, kept or not */
#define FRAME_BYTES 72   /* every field read of a frame lies below (all versions) */
#define CODE_BYTES 192   /* every field read of a code object lies below (co_firsttraceable) */

/* ---- reading the interpreter's memory ---------------------------------------------------- */

/* len bytes at addr into dst; 0, or -1 where any of it is not readable. */
static int peek(void *dst, uintptr_t addr, size_t len)
{
	if (addr < 4096 || addr + len < addr)
		return -1;
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	return process_vm_readv(self_pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* A frame and, where the code object it ran last time is known (code != 0), that code object's
 * head too, in one call: returns 2 (both read), 1 (the frame only) or -1. */
static int peek2(void *frame_dst, uintptr_t frame, size_t flen, void *code_dst, uintptr_t code,
		 size_t clen)
{
	if (frame < 4096 || frame + flen < frame)
		return -1;
	struct iovec local[2] = { { frame_dst, flen }, { code_dst, clen } };
	struct iovec remote[2] = { { (void *)frame, flen }, { (void *)code, clen } };
	int two = code >= 4096 && code + clen > code;
	ssize_t got = process_vm_readv(self_pid, local, two ? 2 : 1, remote, two ? 2 : 1, 0);
	if (got < (ssize_t)flen)
		return -1;
	return got == (ssize_t)(flen + clen) && two ? 2 : 1;
}

static uintptr_t word_at(const unsigned char *buf, unsigned off)
{
	uintptr_t v;
	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static int32_t int_at(const unsigned char *buf, unsigned off)
{
	int32_t v;
	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* ---- code objects: interned as stacks are ------------------------------------------------ */

#define CODE_SLOTS (1u << 16)
struct code_slot {
	_Atomic uint64_t key;  /* hash of the code object's address and identity; 0 empty */
	_Atomic uint32_t id;   /* 0 while its PY_CODE record is being written */
	uint32_t pad;
};
static struct code_slot *codes;
static _Atomic uint32_t next_code = 1;

/* A str object's text as UTF-8, at most cap bytes, into dst (NULL: only measures); returns
 * the bytes (0 for anything that is not a compact str we can read). */
static size_t str_utf8(uintptr_t obj, char *dst, size_t cap)
{
	unsigned char h[80];
	if (!obj || peek(h, obj, L->str_compact_size) < 0)
		return 0;
	uint64_t len = word_at(h, 16);
	uint32_t state = (uint32_t)int_at(h, 32);
	unsigned kind = (state >> 2) & 7;
	if (!(state & 0x20) || (kind != 1 && kind != 2 && kind != 4))
		return 0;  /* not compact: a legacy string, never a code object's name */
	if (len > PROF_PY_NAME_MAX)
		len = PROF_PY_NAME_MAX;
	if (state & 0x40) {  /* ASCII: the bytes follow the header */
		size_t n = len < cap ? (size_t)len : cap;
		if (dst && n && peek(dst, obj + L->str_ascii_size, n) < 0)
			return 0;
		return n;
	}
	/* Latin-1, UCS-2 or UCS-4 after the compact header: UTF-8 by hand, a piece at a time. */
	size_t out = 0;
	uintptr_t at = obj + L->str_compact_size;
	for (uint64_t done = 0; done < len;) {
		unsigned char piece[256];
		uint64_t chars = len - done;
		if (chars > sizeof(piece) / kind)
			chars = sizeof(piece) / kind;
		if (peek(piece, at + done * kind, (size_t)chars * kind) < 0)
			return out;
		for (uint64_t i = 0; i < chars; i++) {
			uint32_t c = kind == 1 ? piece[i] : kind == 2 ? (uint32_t)piece[2 * i] | (uint32_t)piece[2 * i + 1] << 8
				   : (uint32_t)piece[4 * i] | (uint32_t)piece[4 * i + 1] << 8 |
				     (uint32_t)piece[4 * i + 2] << 16 | (uint32_t)piece[4 * i + 3] << 24;
			unsigned char u[4];
			size_t k;
			if (c < 0x80) {
				u[0] = (unsigned char)c, k = 1;
			} else if (c < 0x800) {
				u[0] = (unsigned char)(0xc0 | c >> 6), u[1] = (unsigned char)(0x80 | (c & 0x3f)), k = 2;
			} else if (c < 0x10000) {
				u[0] = (unsigned char)(0xe0 | c >> 12), u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
				u[2] = (unsigned char)(0x80 | (c & 0x3f)), k = 3;
			} else {
				u[0] = (unsigned char)(0xf0 | (c >> 18 & 7)), u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
				u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f)), u[3] = (unsigned char)(0x80 | (c & 0x3f)), k = 4;
			}
			if (out + k > cap)
				return out;
			if (dst)
				memcpy(dst + out, u, k);
			out += k;
		}
		done += chars;
	}
	return out;
}

/* The bytes object's size (at most max), and where its bytes are. */
static size_t bytes_len(uintptr_t obj, size_t max)
{
	unsigned char h[32];
	if (!obj || peek(h, obj, sizeof(h)) < 0)
		return 0;
	int64_t n = (int64_t)word_at(h, 16);
	return n <= 0 ? 0 : (size_t)n < max ? (size_t)n : max;
}

/* Writes the code object's PY_CODE record (cbuf: its first CODE_BYTES); returns its id, 0
 * when it could not be written. */
static uint32_t write_code(struct prof_thread *th, const unsigned char *cbuf)
{
	uintptr_t name = word_at(cbuf, L->co_name), qual = word_at(cbuf, L->co_qualname);
	uintptr_t file = word_at(cbuf, L->co_filename), table = word_at(cbuf, L->co_linetable);
	size_t nl = str_utf8(name, NULL, PROF_PY_NAME_MAX), ql = str_utf8(qual, NULL, PROF_PY_NAME_MAX);
	size_t fl = str_utf8(file, NULL, PROF_PY_NAME_MAX), tl = bytes_len(table, PROF_PY_LINETABLE_MAX);
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_py_code) + nl + ql + fl + tl));
	struct prof_rec_py_code *r = prof_reserve(th, size);
	if (!r)
		return 0;
	memset(r->data, 0, size - sizeof(*r));
	nl = str_utf8(name, r->data, nl);
	ql = str_utf8(qual, r->data + nl, ql);
	fl = str_utf8(file, r->data + nl + ql, fl);
	if (tl && peek(r->data + nl + ql + fl, table + 32, tl) < 0)
		tl = 0;
	uint32_t id = atomic_fetch_add(&next_code, 1);
	r->id = id;
	r->firstlineno = int_at(cbuf, L->co_firstlineno);
	r->name_len = (uint16_t)nl;
	r->qualname_len = (uint16_t)ql;
	r->file_len = (uint16_t)fl;
	r->linetable_fmt = PROF_PY_LINETABLE_311;
	r->pad = 0;
	r->linetable_len = (uint32_t)tl;
	r->pad2 = 0;
	prof_commit(r, PROF_REC_PY_CODE, 0, size, prof_now());
	return id;
}

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/* A code object by its address and the fields its PY_CODE record shows: another code object
 * later at the same address has another key. */
static uint64_t code_key(uintptr_t addr, const unsigned char *cbuf)
{
	uint64_t k = addr;
	const unsigned fields[] = { L->co_name, L->co_qualname, L->co_filename, L->co_linetable };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		k = (k ^ word_at(cbuf, fields[i])) * 0xff51afd7ed558ccdull, k ^= k >> 31;
	k = (k ^ (uint32_t)int_at(cbuf, L->co_firstlineno)) * 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 29;
	return k | 1;
}

/* The id of the code object whose code_key() is k (cbuf: its first CODE_BYTES), writing it
 * first if new. The key covers what the record says, so a code object freed and another made
 * at the same address are two entries. Lock-free, as stacks.c's table. */
static uint32_t code_id(struct prof_thread *th, uint64_t k, const unsigned char *cbuf)
{
	if (!codes)
		return write_code(th, cbuf);
	for (uint32_t i = 0, pos = (uint32_t)k & (CODE_SLOTS - 1); i < 64;
	     i++, pos = (pos + 1) & (CODE_SLOTS - 1)) {
		struct code_slot *s = &codes[pos];
		uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
		if (cur == 0) {
			if (atomic_compare_exchange_strong(&s->key, &cur, k)) {
				uint32_t id = write_code(th, cbuf);
				atomic_store_explicit(&s->id, id ? id : UINT32_MAX, memory_order_release);
				return id;
			}
			if (cur != k)
				continue;
		}
		if (cur == k) {
			uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
			if (id == UINT32_MAX && atomic_compare_exchange_strong(&s->id, &id, 0)) {
				id = write_code(th, cbuf);  /* its record was lost: once more */
				atomic_store_explicit(&s->id, id ? id : UINT32_MAX, memory_order_release);
				return id;
			}
			return id && id != UINT32_MAX ? id : write_code(th, cbuf);
		}
	}
	return write_code(th, cbuf);
}

/* ---- the frame chain --------------------------------------------------------------------- */

/* The code object each frame read through the kernel ran, by frame address: shared by the
 * threads (no TLS: a thread's static TLS comes out of its stack, which may be 16 KiB) and only
 * a guess, checked against the frame read with it. */
#define GUESSES 64
static _Atomic uintptr_t code_guess[GUESSES][2];

struct py_raw {           /* 12 bytes: a CPU sample's handler has little stack */
	uint32_t id;          /* the code object's PY_CODE id (0 when not interned: tests) */
	int32_t lasti;        /* instruction index, -1 before the first */
	int32_t seg;          /* which run of the evaluation loop, 0 the innermost */
};

/* Memory known to be mapped without asking the kernel: the chunks of the calling thread's
 * own data stack, where CPython puts the frames of the functions it runs (not generators').
 * Only in a hook: there the thread is between two of its own steps, so its frame chain and
 * the data stack agree, and a frame found in them holds a reference to its code object,
 * which is therefore alive. A CPU sample may interrupt a push or a pop half done, so it
 * trusts nothing and asks the kernel for every read. */
#define TRUST_MAX 8
struct trust {
	int n;
	uintptr_t lo[TRUST_MAX], hi[TRUST_MAX];
	uintptr_t c_lo, c_hi;  /* the thread's C stack in use: 3.12+ entry frames live there */
};

static void *const *main_stack_end;  /* &__libc_stack_end: the main thread's stack top */

/* The part of the calling thread's stack in use, from here up: every byte of it is mapped.
 * glibc puts a thread's descriptor (pthread_self()) at the top of its stack; the main
 * thread's stack ends at __libc_stack_end. */
static void trust_c_stack(struct prof_thread *th, struct trust *t)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0), top = 0;
	if (th->tid && th->tid == (uint32_t)self_pid)
		top = main_stack_end ? (uintptr_t)*main_stack_end : 0;
	else if (th->tid)
		top = (uintptr_t)pthread_self();
	t->c_lo = here;
	t->c_hi = top > here && top - here < (1u << 30) ? top : here;
}

static void trust_data_stack(const struct py_layout *lay, uintptr_t ts, struct trust *t)
{
	t->n = 0;
	uintptr_t chunk = *(const uintptr_t *)(ts + lay->ts_datastack_chunk);
	uintptr_t top = *(const uintptr_t *)(ts + lay->ts_datastack_top);
	/* struct _PyStackChunk { previous; size; top; data[] }: the same in 3.11-3.13 */
	for (; chunk && !(chunk & 7) && t->n < TRUST_MAX; chunk = *(const uintptr_t *)chunk) {
		size_t size = *(const size_t *)(chunk + 8);
		if (size < 32 || size > (1u << 30))
			break;
		t->lo[t->n] = chunk + 24;
		/* the current chunk ends at the top of the stack; older ones are full */
		t->hi[t->n] = t->n == 0 && top > chunk && top <= chunk + size ? top : chunk + size;
		t->n++;
	}
}

static int trusted(const struct trust *t, uintptr_t at, size_t len)
{
	for (int i = 0; t && i < t->n; i++)
		if (at >= t->lo[i] && at < t->hi[i] && len <= t->hi[i] - at)
			return 1;
	return t && at >= t->c_lo && at < t->c_hi && len <= t->c_hi - at;
}

/* A generator's (or coroutine's) frame lives in the generator object, outside the data stack.
 * While it runs, whoever resumed it holds the object: a Python frame's stack (a for loop's
 * iterator, a call's argument), which lies in the data stack. So a frame whose generator's
 * address is a word of the live data stack is in a live object, mapped. A bounded scan of the
 * newest words (*budget of them per walk); not found: the kernel reads it. */
static int gen_trusted(const struct py_layout *lay, const struct trust *t, uintptr_t frame,
		       int *budget)
{
	uintptr_t gen = frame - lay->gen_iframe;
	for (int i = 0; t && i < t->n && *budget > 0; i++)
		for (uintptr_t p = (t->hi[i] - 8) & ~(uintptr_t)7; p >= t->lo[i] && *budget > 0;
		     p -= 8, (*budget)--)
			if (*(const uintptr_t *)p == gen)
				return 1;
	return 0;
}

/* One kept frame into the hash of a chain: its code object (address and the fields its
 * PY_CODE shows, as code_key() but folded without multiplying: this runs for each frame of
 * each hook) and position. One multiply per frame is the whole dependent chain. */
static uint64_t chain_step(const struct py_layout *lay, uint64_t h, uintptr_t code,
			   const unsigned char *cb, int32_t lasti, int32_t seg)
{
	uint64_t x = code ^ rotl64(word_at(cb, lay->co_name), 17) ^
		rotl64(word_at(cb, lay->co_qualname), 29) ^
		rotl64(word_at(cb, lay->co_filename), 41) ^ rotl64(word_at(cb, lay->co_linetable), 53) ^
		((uint64_t)(uint32_t)int_at(cb, lay->co_firstlineno) << 32) ^
		((uint64_t)(uint32_t)lasti << 12 | (uint64_t)(uint32_t)seg);
	return (h ^ x) * 0xff51afd7ed558ccdull;
}

/* Follows the chain from frame; fills raw[0..max) and returns the count, or -1 (with what was
 * read kept in *kept) when the chain loops or leaves readable memory. With th, each code
 * object is interned (written once) on the way; without, ids are 0 (the hash is enough for
 * the stack cache, and the interning table's lookups are most of a walk's cost). With hash,
 * the chain's hash. Frames inside tr (and their code objects) are read directly, everything
 * else through the kernel. */
static int walk(const struct py_layout *lay, uintptr_t frame, uintptr_t ctype,
		struct prof_thread *th, const struct trust *tr, struct py_raw *raw, int max,
		int *kept, uintptr_t *codes, uint64_t *hash)
{
	uint64_t h = 0x84222325cbf29ce4ull;
	int n = 0, seg = 0, rc = 0;
	uintptr_t mark = 0;  /* Brent's loop check: a frame seen again ends the walk */
	unsigned power = 1, lam = 0;
	int budget = 4096;
	for (int steps = 0; frame && n < max; steps++) {
		if (steps == CHAIN_MAX || (frame & 7) || frame == mark) {
			rc = -1;
			break;
		}
		if (++lam == power) {
			mark = frame;
			power *= 2;
			lam = 0;
		}
		unsigned char fb[FRAME_BYTES], cb[CODE_BYTES];
		int direct = trusted(tr, frame, sizeof(fb)) || gen_trusted(lay, tr, frame, &budget);
		int have_code = 0;
		/* a frame read through the kernel (a generator's, say) is read with the code
		 * object it ran the last time it was seen, in one call */
		_Atomic uintptr_t *guess = code_guess[(frame >> 4) & (GUESSES - 1)];
		uintptr_t guessed = 0;
		/* what is read directly is read in place: a walk runs on every hook */
		const unsigned char *f = fb, *c = cb;
		if (direct) {
			f = (const unsigned char *)frame;
		} else {
			if (atomic_load_explicit(&guess[0], memory_order_relaxed) == frame)
				guessed = atomic_load_explicit(&guess[1], memory_order_relaxed);
			int got = peek2(fb, frame, sizeof(fb), cb, guessed, sizeof(cb));
			if (got < 0) {
				rc = -1;
				break;
			}
			have_code = got == 2;
		}
		uintptr_t prev = word_at(f, lay->fr_previous);
		int owner = (signed char)f[lay->fr_owner];
		if (lay->owner_cstack >= 0 && owner == lay->owner_cstack) {
			seg++;  /* the entry frame of a run of the loop: the next frames are another's */
			frame = prev;
			continue;
		}
		int entry = lay->fr_is_entry >= 0 && f[lay->fr_is_entry];
		uintptr_t code = word_at(f, lay->fr_code), instr = word_at(f, lay->fr_instr);
		int got_code;
		if (have_code && guessed == code)
			got_code = 1;
		else if (direct && code > 4096 && !(code & 7))
			/* the object's head first: only a code object is as long as cb */
			got_code = *(const uintptr_t *)(code + 8) == ctype ?
				(c = (const unsigned char *)code, 1) : (memset(cb, 0, 16), 1);
		else
			got_code = peek(cb, code, sizeof(cb)) == 0;
		if (!direct && got_code && guessed != code) {
			atomic_store_explicit(&guess[0], frame, memory_order_relaxed);
			atomic_store_explicit(&guess[1], code, memory_order_relaxed);
		}
		if (got_code && word_at(c, 8) == ctype) {
			uintptr_t start = code + lay->co_code_adaptive;
			int64_t first = int_at(c, lay->co_firsttraceable);
			int64_t lasti = ((int64_t)instr - (int64_t)start) / 2;
			/* a frame being set up (before its first traceable instruction) is not shown */
			if (owner == lay->owner_generator || lasti >= first) {
				if (codes)
					codes[n] = code;
				raw[n].id = th ? code_id(th, code_key(code, c), c) : 0;
				raw[n].lasti = lasti < 0 || lasti > INT32_MAX ? -1 : (int32_t)lasti;
				raw[n].seg = seg;
				h = chain_step(lay, h, code, c, raw[n].lasti, seg);
				n++;
			}
		} else if (lay->minor < 13) {
			rc = -1;  /* before 3.13 every frame runs a code object: this is no frame */
			break;
		}
		if (entry)
			seg++;
		frame = prev;
	}
	*kept = n;
	if (hash) {
		h ^= (uint64_t)n;
		h = (h ^ h >> 29) * 0xbf58476d1ce4e5b9ull;
		*hash = (h ^ h >> 32) | 1;
	}
	return rc < 0 ? -1 : n;
}

/* The calling thread's innermost frame, 0 if it has none (not a Python thread); in a hook
 * (not a signal handler), the memory that can be read directly in *tr. */
static uintptr_t current_frame(struct prof_thread *th, struct trust *tr)
{
	uintptr_t ts = (uintptr_t)this_thread_state(), p;
	tr->n = 0;
	tr->c_lo = tr->c_hi = 0;
	if (!ts)
		return 0;
	if (th && th->in_signal == 0) {
		trust_c_stack(th, tr);
		/* the thread's own state, alive while it runs, and its cframe, a local variable of
		 * a function it is in */
		trust_data_stack(L, ts, tr);
		p = *(const uintptr_t *)(ts + L->ts_frame);
		if (L->cframe_frame >= 0)
			p = p && !(p & 7) ? *(const uintptr_t *)(p + (unsigned)L->cframe_frame) : 0;
		return p;
	}
	if (peek(&p, ts + L->ts_frame, sizeof(p)) < 0)
		return 0;
	if (L->cframe_frame >= 0 && (!p || peek(&p, p + (unsigned)L->cframe_frame, sizeof(p)) < 0))
		return 0;
	return p;
}

static int in_eval(void *ip)
{
	return (uintptr_t)ip >= eval_lo && (uintptr_t)ip < eval_hi;
}

/* The thread's frames (their code objects interned where intern is set) and their hash;
 * n >= 0 (a walk cut short keeps what it read). */
static int read_chain(struct prof_thread *th, struct py_raw *raw, int max, int intern,
		      uint64_t *hash)
{
	int saved = errno, kept = 0;
	struct trust tr;
	uintptr_t f = current_frame(th, &tr);
	*hash = 1;
	if (f)
		walk(L, f, code_type, intern ? th : NULL, &tr, raw, max, &kept, NULL, hash);
	errno = saved;
	return kept;
}

/* Puts each run of the loop's Python frames (raw, by seg) just inside the loop frame it belongs
 * to (the innermost loop frame gets seg 0): in place, from the outermost frame back; native
 * frame i moves up by the Python frames of the loop frames at or inside it. What lands at
 * cap or beyond (the outermost) is left out. Returns the new count. */
static int merge(void **frames, int n, int cap, const struct py_raw *raw, int nr, int evals)
{
	if (cap > PROF_MAX_STACK_DEPTH)
		cap = PROF_MAX_STACK_DEPTH;
	int total = n, r = nr;
	for (int k = 0; k < nr; k++)
		total += raw[k].seg < evals;
	while (r > 0 && raw[r - 1].seg >= evals)
		r--;  /* runs of the loop beyond the native stack (cut at PROF_STACK_DEPTH) */
	int j = total - 1, e = evals;
	for (int i = n - 1; i >= 0; i--) {
		int loop = in_eval(frames[i]);
		if (j < cap)
			frames[j] = frames[i];
		j--;
		if (!loop)
			continue;
		for (e--; r > 0 && raw[r - 1].seg == e; r--, j--)
			if (j < cap)
				frames[j] = (void *)(uintptr_t)PROF_PY_FRAME(raw[r - 1].id,
									   (uint32_t)raw[r - 1].lasti);
	}
	return total < cap ? total : cap;
}

uint64_t prof_py_chain_now(struct prof_thread *th)
{
	if (!prof_py_on)
		return 0;
	struct py_raw raw[WALK_MAX];
	uint64_t hash;
	read_chain(th, raw, WALK_MAX, 0, &hash);
	return hash;
}

int prof_py_splice(struct prof_thread *th, void **frames, int n, int cap, uint64_t *chain)
{
	*chain = 0;
	if (!prof_py_on)
		return n;
	int evals = 0;
	for (int i = 0; i < n; i++)
		evals += in_eval(frames[i]);
	if (!evals)
		return n;
	struct py_raw raw[WALK_MAX];
	int nr = read_chain(th, raw, WALK_MAX, 1, chain);
	return merge(frames, n, cap, raw, nr, evals);
}

int prof_py_merge_for_test(void **frames, int n, int cap, uintptr_t loop_lo, uintptr_t loop_hi,
			   const uint32_t *ids, const int32_t *segs, int nr)
{
	struct py_raw raw[WALK_MAX];
	uintptr_t lo = eval_lo, hi = eval_hi;
	eval_lo = loop_lo;
	eval_hi = loop_hi;
	int evals = 0;
	for (int i = 0; i < n; i++)
		evals += in_eval(frames[i]);
	for (int i = 0; i < nr && i < WALK_MAX; i++)
		raw[i] = (struct py_raw){ ids[i], (int32_t)i, segs[i] };
	n = merge(frames, n, cap, raw, nr < WALK_MAX ? nr : WALK_MAX, evals);
	eval_lo = lo;
	eval_hi = hi;
	return n;
}

int prof_py_walk_from(const struct py_layout *lay, uintptr_t frame, uintptr_t ctype,
		      uintptr_t *codes_out, int32_t *lastis, int *segs, int max)
{
	struct py_raw raw[WALK_MAX];
	if (max > WALK_MAX)
		max = WALK_MAX;
	self_pid = getpid();
	int kept, rc = walk(lay, frame, ctype, NULL, NULL, raw, max, &kept, codes_out, NULL);
	for (int i = 0; i < kept; i++) {
		lastis[i] = raw[i].lasti;
		segs[i] = raw[i].seg;
	}
	return rc < 0 ? -1 : kept;
}

/* ---- start-up ---------------------------------------------------------------------------- */

static void note(const char *what, const char *version)
{
	prof_say("Python ", version, what, 0);
}

/* Which CPython this process runs, if any: nothing is looked at in a process that has no
 * Py_Version or Py_GetVersion (not Python). */
static void detect(void)
{
	const char *env = getenv("PROF_PYTHON");  /* 0: native stacks only */
	if (env && !strcmp(env, "0"))
		return;
	const unsigned long *ver = prof_dlsym_optional(RTLD_DEFAULT, "Py_Version");
	if (!ver) {
		const char *(*get)(void) = (const char *(*)(void))prof_dlsym_optional(RTLD_DEFAULT, "Py_GetVersion");
		if (get) {
			char v[16];
			const char *s = get();
			size_t i = 0;
			for (; s && s[i] && s[i] != ' ' && i < sizeof(v) - 1; i++)
				v[i] = s[i];
			v[i] = 0;
			note(": Python frames need CPython 3.11 to 3.13; stacks show native frames only", v);
		}
		return;
	}
	unsigned major = (unsigned)(*ver >> 24) & 0xff, minor = (unsigned)(*ver >> 16) & 0xff;
	char v[16] = "3.";
	v[2] = (char)('0' + minor / 10);
	v[3] = (char)('0' + minor % 10);
	v[4] = 0;
	if (minor < 10) {
		v[2] = (char)('0' + minor);
		v[3] = 0;
	}
	const struct py_layout *lay = NULL;
	if (major == 3 && minor == 11)
		lay = &prof_py_layout_311;
	else if (major == 3 && minor == 12)
		lay = &prof_py_layout_312;
	else if (major == 3 && minor == 13)
		lay = &prof_py_layout_313;
	if (!lay) {
		note(": no frame layout known for this version; stacks show native frames only", v);
		return;
	}
	/* Debug (Py_REF_DEBUG) and free-threaded builds lay their objects out otherwise. */
	if (prof_dlsym_optional(RTLD_DEFAULT, "_Py_NegativeRefcount") || prof_dlsym_optional(RTLD_DEFAULT, "_Py_MergeZeroLocalRefcount")) {
		note(": a debug or free-threaded build; stacks show native frames only", v);
		return;
	}
	main_stack_end = prof_dlsym_optional(RTLD_DEFAULT, "__libc_stack_end");
	void *eval = prof_dlsym_optional(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	void *ctype = prof_dlsym_optional(RTLD_DEFAULT, "PyCode_Type");
	void *get_ts = prof_dlsym_optional(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!eval || !ctype || !get_ts || !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) ||
	    !sym || !sym->st_size) {
		note(": the interpreter's symbols were not found; stacks show native frames only", v);
		return;
	}
	self_pid = getpid();
	unsigned char probe[8];
	if (peek(probe, (uintptr_t)ctype, sizeof(probe)) < 0) {
		prof_say("Python ", v, ": reading the interpreter's frames failed (process_vm_readv); "
			 "stacks show native frames only", errno);
		return;
	}
	L = lay;
	eval_lo = (uintptr_t)eval;
	eval_hi = eval_lo + sym->st_size;
	code_type = (uintptr_t)ctype;
	this_thread_state = (void *(*)(void))get_ts;
	prof_py_on = 1;
	prof_dbg(1, "Python %s: Python frames on", v);
}

void prof_py_start(void)
{
	static int detected;
	if (!detected) {
		detected = 1;
		detect();
	}
	if (!prof_py_on)
		return;
	self_pid = getpid();  /* a fork child reads its own memory */
	size_t bytes = CODE_SLOTS * sizeof(struct code_slot);
	if (codes) {
		madvise(codes, bytes, MADV_DONTNEED);  /* a new trace: every code object anew */
	} else {
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			codes = p;
			prof_own_memory(p, bytes);
		}
	}
	atomic_store(&next_code, 1);
}
