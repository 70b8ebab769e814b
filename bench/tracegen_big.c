/* tracegen_big FAMILY EVENTS OUT: writes a synthetic libprof trace of about EVENTS events of one
 * event family (heap, locks, io, cuda) straight to OUT, streaming: memory is one 64 KiB chunk
 * per stream, whatever EVENTS is. The workloads keep their live state constant, so an analyzer
 * whose memory follows live state (not trace length) uses the same memory for any EVENTS:
 *
 *   heap   alloc/free pairs over a fixed ring of live blocks per thread, a few temporaries and
 *          reallocs, on a fixed set of stacks
 *   locks  LOCK_WAIT on a fixed set of locks, with a cumulative LOCK_STATS every few waits
 *   io     IO_CALL (read, write, pread, lseek, fsync) on a fixed set of files named up front
 *   cuda   per launch: CUDA_LAUNCH + CUDA_API (driver cuLaunchKernel), and its CUDA_GPU (event
 *          timing) once a bounded number of launches are outstanding, as the preload drains them
 *
 * Two threads (streams 2 and 4) interleave in runs; the program's own text is the one MODULE,
 * and stack frames are return addresses inside it, so the analyzer's symbolizer resolves them.
 * Prints "EVENTS BYTES" (records of the family written, file size). Layout: shared/FORMAT.md. */
#define _GNU_SOURCE
#include "prof_format.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64u * 1024u)
#define DATA_OFFSET 4096u
#define NTHREADS 2
#define NSTACKS 2000      /* distinct stacks per workload */
#define HEAP_RING 4096    /* live blocks per thread */
#define NLOCKS 64
#define NFILES 32
#define NKERNELS 16
#define CUDA_OUTSTANDING 256  /* launches whose GPU time is not yet written */

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tracegen_big: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- deterministic pseudo-random numbers (xorshift64*) ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}
static uint32_t rnd_below(uint32_t n) { return (uint32_t)((rnd() >> 32) % n); }

/* ---- the file: chunks are written in the order they fill up ---- */
static int out_fd;
static const char *out_path;
static uint64_t chunks_written;

static void write_all(const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = pwrite(out_fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("%s: write: %s", out_path, w < 0 ? strerror(errno) : "short write");
		p += w;
		n -= (size_t)w;
		off += w;
	}
}

struct stream {
	uint32_t id, tid, seq;
	uint32_t pos;
	uint64_t time;  /* last record time: records of a stream are in time order */
	uint8_t buf[CHUNK];
};
static struct stream streams[NTHREADS];
static uint64_t now_ns = 1000000000ull;  /* the trace clock */

static void stream_flush(struct stream *s)
{
	if (s->pos <= sizeof(struct prof_chunk_header))
		return;
	memset(s->buf + s->pos, 0, CHUNK - s->pos);  /* a zero prefix ends the chunk */
	struct prof_chunk_header *c = (void *)s->buf;
	*c = (struct prof_chunk_header){ .magic = PROF_CHUNK_MAGIC, .stream = s->id,
					 .seq = s->seq++, .tid = s->tid };
	write_all(s->buf, CHUNK, (off_t)DATA_OFFSET + (off_t)(chunks_written++ * CHUNK));
	s->pos = sizeof(struct prof_chunk_header);
}

/* Room for a record of `size` bytes (a multiple of 8) in s, prefix filled in; the caller fills
 * the payload. Times advance by 40..200 ns per record. */
static void *rec(struct stream *s, unsigned type, unsigned flags, uint32_t size)
{
	if (s->pos + size > CHUNK)
		stream_flush(s);
	now_ns += 40 + rnd_below(160);
	s->time = now_ns;
	struct prof_rec *r = (void *)(s->buf + s->pos);
	memset(r, 0, size);
	*r = (struct prof_rec){ .type = (uint16_t)type, .flags = (uint16_t)flags, .size = size,
				.time = now_ns };
	s->pos += size;
	return r;
}
#define REC(s, TYPE, st, flags) ((struct st *)rec((s), PROF_REC_##TYPE, (flags), sizeof(struct st)))

/* ---- the module and its stacks: return addresses inside this program's text ---- */
static uint64_t text_lo, text_hi, load_bias;
static char exe_path[4096];

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!text_hi || lo < text_lo)
			text_lo = lo;
		if (hi > text_hi)
			text_hi = hi;
	}
	load_bias = info->dlpi_addr;
	return 1;  /* the first object is the program itself */
}

/* Functions that appear in the stacks; their bodies only need to exist. */
#define FRAME_FN(n) \
	static __attribute__((noinline)) uint64_t frame_fn##n(uint64_t x) { return x * (n + 3) + n; }
FRAME_FN(0) FRAME_FN(1) FRAME_FN(2) FRAME_FN(3) FRAME_FN(4) FRAME_FN(5) FRAME_FN(6) FRAME_FN(7)
static uint64_t (*const frame_fns[8])(uint64_t) = {
	frame_fn0, frame_fn1, frame_fn2, frame_fn3, frame_fn4, frame_fn5, frame_fn6, frame_fn7,
};

static uint8_t stack_written[NSTACKS + 1];
static uint32_t stack_depth_of[NSTACKS + 1];

/* Stack id (1..NSTACKS), its STACK record written in s before the first record that uses it. */
static uint32_t use_stack(struct stream *s, uint32_t id)
{
	if (stack_written[id])
		return id;
	stack_written[id] = 1;
	uint32_t depth = stack_depth_of[id];
	struct prof_rec_stack *r = rec(s, PROF_REC_STACK, 0, (uint32_t)(sizeof(*r) + 8u * depth));
	r->id = id;
	r->depth = depth;
	uint64_t x = id * 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < depth; i++) {
		x ^= x >> 17;
		x *= 0xbf58476d1ce4e5b9ull;
		r->frames[i] = (uint64_t)(uintptr_t)frame_fns[(x >> 40) & 7] + 4 + ((x >> 20) & 15);
	}
	return id;
}

/* A stack id, skewed: a few hot stacks, a long tail. */
static uint32_t pick_stack(void)
{
	uint32_t r = rnd_below(100);
	return 1 + (r < 60 ? rnd_below(NSTACKS / 20) : rnd_below(NSTACKS));
}

static void write_prelude(void)
{
	for (int t = 0; t < NTHREADS; t++) {
		struct stream *s = &streams[t];
		struct prof_rec_thread_start *r = REC(s, THREAD_START, prof_rec_thread_start, 0);
		r->serial = s->id / 2;
		r->tid = s->tid;
		r->parent_serial = t ? streams[0].id / 2 : ~0u;
	}
	size_t plen = strlen(exe_path) + 1;
	struct prof_rec_module *m = rec(&streams[0], PROF_REC_MODULE, 0,
					prof_align8((uint32_t)(sizeof(*m) + plen)));
	m->start = text_lo;
	m->end = text_hi;
	m->bias = load_bias;
	m->id = 1;
	memcpy(m->path, exe_path, plen);
	for (uint32_t i = 1; i <= NSTACKS; i++)
		stack_depth_of[i] = 5 + rnd_below(36);
}

static void write_epilogue(void)
{
	for (int t = NTHREADS - 1; t >= 0; t--) {
		struct stream *s = &streams[t];
		if (t == 0) {
			struct prof_rec_exit *e = REC(s, EXIT, prof_rec_exit, 0);
			e->how = 0;
			e->code = 0;
		} else {
			struct prof_rec_thread_end *r = REC(s, THREAD_END, prof_rec_thread_end, 0);
			r->serial = s->id / 2;
			r->tid = s->tid;
			r->cpu_ns = now_ns / 2;
			memcpy(r->name, "worker", 7);
		}
	}
}

/* ---- workloads: each writes one "step" of about `n` events on stream t, returns events ---- */

/* heap */
struct heap_slot {
	uint64_t ptr;
	uint32_t stack;
};
static struct heap_slot heap_ring[NTHREADS][HEAP_RING];
static uint32_t heap_next[NTHREADS];
static uint64_t heap_serial[NTHREADS];

static uint64_t heap_size_of(uint32_t stack) { return 8 + (stack * 2654435761u) % 4089; }

static uint64_t heap_step(int t)
{
	struct stream *s = &streams[t];
	uint64_t ev = 0;
	struct heap_slot *slot = &heap_ring[t][heap_next[t]];
	heap_next[t] = (heap_next[t] + 1) % HEAP_RING;
	uint32_t stack = use_stack(s, pick_stack());
	/* Addresses: a per-thread arena, reused as blocks come and go. */
	uint64_t arena = 0x7f0000000000ull + (uint64_t)t * 0x100000000ull;
	uint64_t ptr = arena + ((heap_serial[t]++ * 48) % (HEAP_RING * 64)) * 16;
	unsigned r = rnd_below(100);
	if (slot->ptr && r < 10) {
		/* realloc of the ring's oldest block: FREE (realloc half) then ALLOC */
		REC(s, FREE, prof_rec_free, PROF_FREE_REALLOC)->ptr = slot->ptr;
		struct prof_rec_alloc *a = REC(s, ALLOC, prof_rec_alloc, PROF_ALLOC_REALLOC);
		a->ptr = ptr;
		a->size = heap_size_of(stack) * 2;
		a->stack = slot->stack;
		slot->ptr = ptr;
		return 2;
	}
	if (slot->ptr) {
		REC(s, FREE, prof_rec_free, 0)->ptr = slot->ptr;
		ev++;
	}
	struct prof_rec_alloc *a = REC(s, ALLOC, prof_rec_alloc,
				       r < 70 ? PROF_ALLOC_MALLOC : PROF_ALLOC_CALLOC);
	a->ptr = ptr;
	a->size = heap_size_of(stack);
	a->stack = stack;
	slot->ptr = ptr;
	slot->stack = stack;
	ev++;
	if (r >= 80) {
		/* a temporary: allocated and freed before anything else */
		uint32_t ts = use_stack(s, pick_stack());
		uint64_t tp = arena + 0x80000000ull + (heap_serial[t] % 64) * 4096;
		a = REC(s, ALLOC, prof_rec_alloc, PROF_ALLOC_MALLOC);
		a->ptr = tp;
		a->size = heap_size_of(ts);
		a->stack = ts;
		REC(s, FREE, prof_rec_free, 0)->ptr = tp;
		ev += 2;
	}
	return ev;
}

/* locks */
struct lock_state {
	uint64_t acq, contended, wait_ns, max_wait, hold_ns, owner_changes;
	uint32_t first_stack;
};
static struct lock_state locks[NLOCKS];

static uint64_t lock_addr(uint32_t i) { return 0x5555aaaa0000ull + (uint64_t)i * 64; }

static uint64_t locks_step(int t)
{
	struct stream *s = &streams[t];
	uint32_t i = rnd_below(100) < 70 ? rnd_below(8) : rnd_below(NLOCKS);
	struct lock_state *l = &locks[i];
	uint32_t stack = use_stack(s, pick_stack());
	uint64_t wait = 500 + rnd_below(20000);
	int cond = i % 8 == 7;
	struct prof_rec_lock_wait *w = REC(s, LOCK_WAIT, prof_rec_lock_wait,
					   cond ? PROF_LOCK_OP_COND_WAIT : PROF_LOCK_OP_LOCK);
	w->lock = lock_addr(i) + (cond ? 0x100000 : 0);
	w->other = cond ? lock_addr(i) : 0;
	w->wait_ns = wait;
	w->stack = stack;
	w->kind = cond ? PROF_LOCK_COND : PROF_LOCK_MUTEX;
	l->acq += 1 + rnd_below(20);
	l->contended++;
	l->wait_ns += wait;
	if (wait > l->max_wait)
		l->max_wait = wait;
	l->hold_ns += l->acq % 977;
	l->owner_changes += rnd_below(3);
	if (!l->first_stack)
		l->first_stack = stack;
	if (l->contended % 16 != 1)
		return 1;
	/* a cumulative snapshot, as the writer does when the count of acquisitions grows */
	struct prof_rec_lock_stats *st = REC(s, LOCK_STATS, prof_rec_lock_stats, 0);
	st->lock = lock_addr(i);
	st->acquisitions = l->acq;
	st->contended = l->contended;
	st->wait_ns = l->wait_ns;
	st->max_wait_ns = l->max_wait;
	st->hold_ns = l->hold_ns;
	st->max_hold_ns = 977;
	st->holds_timed = l->acq / 2;
	st->owner_changes = l->owner_changes;
	st->first_stack = l->first_stack;
	st->kind = PROF_LOCK_MUTEX;
	st->hold_sample = 8;
	return 2;
}

/* I/O */
static void io_prelude(void)
{
	for (uint32_t f = 1; f <= NFILES; f++) {
		struct stream *s = &streams[f % NTHREADS];
		char path[64];
		int n = snprintf(path, sizeof(path), "/data/bench/input-%02u.dat", f);
		struct prof_rec_io_name *r = rec(s, PROF_REC_IO_NAME, PROF_IO_OPENAT,
						 prof_align8((uint32_t)(sizeof(*r) + (size_t)n + 1)));
		r->file = f;
		r->fd = (int32_t)(2 + f);
		r->result = r->fd;
		r->duration_ns = 3000;
		r->stack = use_stack(s, 1 + f);
		memcpy(r->path, path, (size_t)n + 1);
	}
}

static uint64_t io_step(int t)
{
	struct stream *s = &streams[t];
	uint32_t f = 1 + rnd_below(NFILES);
	unsigned r = rnd_below(100);
	unsigned op = r < 50 ? PROF_IO_READ : r < 80 ? PROF_IO_WRITE : r < 95 ? PROF_IO_PREAD :
		      r < 99 ? PROF_IO_LSEEK : PROF_IO_FSYNC;
	struct prof_rec_io_call *c = REC(s, IO_CALL, prof_rec_io_call, op);
	c->file = f;
	c->fd = (int32_t)(2 + f);
	c->result = op == PROF_IO_FSYNC ? 0 : op == PROF_IO_LSEEK ? (int64_t)rnd_below(1 << 20) :
		    (int64_t)(1 + rnd_below(65536));
	if (r % 50 == 49)
		c->result = -EAGAIN;
	c->duration_ns = 200 + rnd_below(50000);
	c->stack = use_stack(s, pick_stack());
	return 1;
}

/* CUDA */
enum { NAME_LAUNCH = 1, NAME_KERNEL0 = 2 };
static uint64_t cuda_corr;
struct launch {
	uint64_t corr, start;
	uint32_t name;
};
static struct launch cuda_ring[NTHREADS][CUDA_OUTSTANDING];
static uint32_t cuda_count[NTHREADS];

static void cuda_name(struct stream *s, uint32_t id, unsigned kind, const char *name)
{
	size_t n = strlen(name) + 1;
	struct prof_rec_cuda_name *r = rec(s, PROF_REC_CUDA_NAME, kind,
					   prof_align8((uint32_t)(sizeof(*r) + n)));
	r->id = id;
	memcpy(r->name, name, n);
}

static void cuda_prelude(void)
{
	struct stream *s = &streams[0];
	const char detail[] = "cupti not used: event timing (benchmark)";
	struct prof_rec_cuda_state *st = rec(s, PROF_REC_CUDA_STATE, 0,
					     prof_align8((uint32_t)(sizeof(*st) + sizeof(detail))));
	st->timing = PROF_CUDA_TIMING_EVENTS;
	memcpy(st->detail, detail, sizeof(detail));
	cuda_name(s, NAME_LAUNCH, PROF_CUDA_NAME_API, "cuLaunchKernel");
	for (uint32_t k = 0; k < NKERNELS; k++) {
		char name[64];
		snprintf(name, sizeof(name), "_Z%ukernel_%02uPfS_i", 9 + (k >= 10), k);
		cuda_name(s, NAME_KERNEL0 + k, PROF_CUDA_NAME_KERNEL, name);
	}
}

static void cuda_gpu(struct stream *s, const struct launch *l)
{
	struct prof_rec_cuda_gpu *g = REC(s, CUDA_GPU, prof_rec_cuda_gpu, PROF_CUDA_TIMING_EVENTS);
	g->start = l->start + 5000;
	g->end = g->start + 2000 + l->name * 500;
	g->corr = l->corr;
	g->name = l->name;
	g->activity = PROF_CUDA_ACT_KERNEL;
	g->grid[0] = 256;
	g->grid[1] = g->grid[2] = 1;
	g->block[0] = 128;
	g->block[1] = g->block[2] = 1;
}

static uint64_t cuda_step(int t)
{
	struct stream *s = &streams[t];
	uint64_t ev = 0;
	struct launch *slot = &cuda_ring[t][cuda_count[t]++ % CUDA_OUTSTANDING];
	if (slot->corr) {  /* the oldest outstanding launch completed: its GPU time */
		cuda_gpu(s, slot);
		ev++;
	}
	uint32_t k = rnd_below(100) < 50 ? rnd_below(3) : rnd_below(NKERNELS);
	uint32_t stack = use_stack(s, 1 + rnd_below(64));
	uint64_t corr = ++cuda_corr;
	struct prof_rec_cuda_launch *l = REC(s, CUDA_LAUNCH, prof_rec_cuda_launch, PROF_CUDA_DRIVER);
	l->corr = corr;
	l->function = 0x7e0000001000ull + k * 0x100;
	l->stream = 0x5600000000ull + (uint64_t)t * 0x1000;
	l->name = NAME_KERNEL0 + k;
	l->stack = stack;
	l->grid[0] = 256;
	l->grid[1] = l->grid[2] = 1;
	l->block[0] = 128;
	l->block[1] = l->block[2] = 1;
	uint64_t start = now_ns;
	struct prof_rec_cuda_api *a = rec(s, PROF_REC_CUDA_API, PROF_CUDA_DRIVER, sizeof(*a));
	a->h.time = start - 30;  /* when the call began; written when it returned */
	a->duration_ns = 3000;
	a->corr = corr;
	a->name = NAME_LAUNCH;
	a->stack = stack;
	*slot = (struct launch){ .corr = corr, .start = start, .name = NAME_KERNEL0 + k };
	return ev + 2;
}

static void cuda_epilogue(void)
{
	for (int t = 0; t < NTHREADS; t++)
		for (uint32_t i = 0; i < CUDA_OUTSTANDING; i++) {
			struct launch *l = &cuda_ring[t][(cuda_count[t] + i) % CUDA_OUTSTANDING];
			if (l->corr)
				cuda_gpu(&streams[t], l);
		}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		die("usage: tracegen_big heap|locks|io|cuda EVENTS OUT");
	const char *family = argv[1];
	char *end;
	unsigned long long want = strtoull(argv[2], &end, 10);
	if (*end || !want)
		die("bad event count '%s'", argv[2]);
	uint64_t (*step)(int);
	unsigned events;
	if (!strcmp(family, "heap"))
		step = heap_step, events = PROF_EV_ALLOC;
	else if (!strcmp(family, "locks"))
		step = locks_step, events = PROF_EV_LOCK | PROF_EV_THREAD;
	else if (!strcmp(family, "io"))
		step = io_step, events = PROF_EV_IO;
	else if (!strcmp(family, "cuda"))
		step = cuda_step, events = PROF_EV_CUDA;
	else
		die("unknown family '%s' (heap, locks, io, cuda)", family);

	out_path = argv[3];
	out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0)
		die("%s: %s", out_path, strerror(errno));
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	if (n <= 0)
		die("/proc/self/exe: %s", strerror(errno));
	exe_path[n] = '\0';
	dl_iterate_phdr(find_text, NULL);

	for (int t = 0; t < NTHREADS; t++)
		streams[t] = (struct stream){ .id = 2 + 2 * (uint32_t)t, .tid = 10000 + (uint32_t)t,
					      .pos = sizeof(struct prof_chunk_header) };
	write_prelude();
	if (step == io_step)
		io_prelude();
	else if (step == cuda_step)
		cuda_prelude();

	/* The threads take turns in runs of 1..32 steps. */
	uint64_t done = 0;
	int t = 0;
	while (done < want) {
		uint32_t run = 1 + rnd_below(32);
		for (uint32_t i = 0; i < run && done < want; i++)
			done += step(t);
		t = (t + 1) % NTHREADS;
	}
	if (step == cuda_step)
		cuda_epilogue();
	write_epilogue();
	for (t = 0; t < NTHREADS; t++)
		stream_flush(&streams[t]);

	/* The header last, once the number of chunks is known. */
	char strings[4352];
	int slen = snprintf(strings, sizeof(strings), "%s%cbenchhost%c%s%c%s%c%s", exe_path, 0, 0,
			    "tracegen_big", 0, family, 0, argv[2]);
	if (slen < 0 || (size_t)slen >= sizeof(strings) ||
	    sizeof(struct prof_file_header) + (size_t)slen + 1 > DATA_OFFSET)
		die("strings too long");
	uint8_t head[DATA_OFFSET];
	memset(head, 0, sizeof(head));
	struct prof_file_header *h = (void *)head;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	*h = (struct prof_file_header){
		.magic = PROF_MAGIC,
		.version = PROF_FORMAT_VERSION,
		.min_version = PROF_FORMAT_MIN_VERSION,
		.header_size = (uint32_t)(sizeof(*h) + (size_t)slen + 1),
		.chunk_size = CHUNK,
		.data_offset = DATA_OFFSET,
		.chunks_claimed = chunks_written,
		.pid = 4242,
		.ppid = 1,
		.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull,
		.start_ns = 1000000000ull,
		.clock_id = CLOCK_MONOTONIC,
		.state = PROF_STATE_EXITED,
		.events = events,
		.stack_depth = 64,
		.rank = -1,
		.argc = 3,
		.strings_offset = sizeof(*h),
		.strings_size = (uint32_t)slen + 1,
	};
	memcpy(head + sizeof(*h), strings, (size_t)slen + 1);
	write_all(head, sizeof(head), 0);
	if (close(out_fd) < 0)
		die("%s: %s", out_path, strerror(errno));
	printf("%llu %llu\n", (unsigned long long)done,
	       (unsigned long long)(DATA_OFFSET + chunks_written * CHUNK));
	return 0;
}
