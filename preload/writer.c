/* The trace writer: one mmap'd file per process, chunks claimed without a lock, records
 * committed by a release store of their prefix so a SIGKILL leaves a readable file.
 *
 * The file is cut into 1 KiB units (PROF_FEAT_CHUNK_RUNS) and a chunk is a run of units with
 * one header saying how many, so that a thread that lives briefly costs one unit: a stream's
 * first claim takes what its first record needs (one unit), each later one as many units as the
 * stream has used so far, up to RUN_MAX, in one CAS. A stream that leaves a chunk (for its next
 * one, or because its thread ends) gives the whole units it never wrote back: it shrinks the
 * chunk header's count first, then puts the units in a pool that later claims take first. Once
 * the trace is full, events are counted per stream and summed into header.lost_records in
 * batches: no claims, no shared counter. */
#include "prof.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#define HEADER_AREA (64u * 1024u)  /* header + strings; argv past this is cut */
#define UNIT PROF_RUN_UNIT          /* header.chunk_size: 1 KiB */
#define RUN_MAX 64u                 /* units a busy stream claims at once: 64 KiB */
#define MAIN_RUN 4u                 /* units the main thread claims at least */
#define CHUNK_HDR ((uint32_t)sizeof(struct prof_chunk_header_run))
#define POOL_SLOTS 64u              /* unit ranges given back by streams */
#define LOST_BATCH 256u             /* losses a stream counts before adding them to the header */
/* Space is reserved ahead of the writers (fallocate). A short process (a shell's subshell)
 * writes a few KiB: reserving more for it, which tmpfs allocates and zeroes and the close
 * gives back, cost more than the rest of its trace (128 KiB and a 64 KiB header area: a
 * fifth of what libprof added to a subshell on tmpfs). So the data begins at the page after
 * the header's strings, the file starts small and grows by an eighth of its size, at least
 * GROW_MIN. */
#define FIRST_DATA (32u << 10)      /* data space of a new trace, bytes */
#define GROW_MIN (256ull << 10)     /* file growth steps, bytes */
#define MAP_MIN (2u << 20)          /* the least address space a trace is given */
#define TRACE_VM_SHARE 16           /* of an address-space limit, the most the trace takes */
_Static_assert(HEADER_AREA + FIRST_DATA <= MAP_MIN, "the first size of a trace fits its least map");
#define GROW_MAX (64ull << 20)

static struct {
	int fd;
	dev_t dev;
	int on_tmpfs;                      /* the file's pages are in memory once fallocated */
	int dev_known;                     /* dev and on_tmpfs are a trace's, maybe the parent's */
	ino_t ino;
	char path[PATH_MAX];
	char *base;                        /* the whole reserved mapping */
	char *stale;                       /* a fork child's: its parent's mapping (forget()) */
	uint64_t stale_size;
	uint64_t map_size;
	struct prof_file_header *hdr;
	uint32_t chunk_size;               /* = hdr->chunk_size (the unit), without the pointer chase */
	_Atomic uint64_t capacity;          /* units backed by the file; 0 once closing */
	atomic_flag growing;
	_Atomic int warned_full;
	_Atomic int final;                  /* the EXIT record is being written: see EXIT_RESERVE */
	uint64_t pool[POOL_SLOTS];          /* first unit << 8 | count; 0 empty (__atomic) */
	uint32_t pooled;                    /* ranges in the pool: 0 lets claims skip it */
} w = { .fd = -1, .growing = ATOMIC_FLAG_INIT };

const char *prof_writer_path(void)
{
	return w.path;
}

/* The trace's descriptor (-1 if none): the I/O hooks never report it. */
int prof_writer_fd(void)
{
	return w.fd;
}

uint32_t prof_writer_pid(void)
{
	return w.hdr ? w.hdr->pid : 0;
}

static const char *rank_from_env(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
					    "SLURM_PROCID", "MV2_COMM_WORLD_RANK" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return v;
	}
	return NULL;
}

/* Appends s to buf (bounded); returns the new length. */
static size_t put(char *buf, size_t len, size_t cap, const char *s)
{
	while (*s && len + 1 < cap)
		buf[len++] = *s++;
	buf[len] = '\0';
	return len;
}

/* Expands the PROF_OUTPUT template (%p %n %h %r %t %%). */
static void expand_template(char *out, size_t cap, const char *tmpl, const char *prog,
			    const char *host, uint64_t start_realtime)
{
	size_t len = 0;
	char num[32];
	out[0] = '\0';
	for (const char *p = tmpl; *p && len + 1 < cap; p++) {
		if (*p != '%' || !p[1]) {
			out[len++] = *p;
			out[len] = '\0';
			continue;
		}
		switch (*++p) {
		case 'p':
			snprintf(num, sizeof(num), "%d", (int)getpid());
			len = put(out, len, cap, num);
			break;
		case 'n':
			len = put(out, len, cap, prog);
			break;
		case 'h':
			len = put(out, len, cap, host);
			break;
		case 'r': {
			const char *r = rank_from_env();
			len = put(out, len, cap, r ? r : "0");
			break;
		}
		case 't': {
			time_t t = (time_t)(start_realtime / 1000000000u);
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(num, sizeof(num), "%Y%m%dT%H%M%SZ", &tm);
			len = put(out, len, cap, num);
			break;
		}
		case '%':
			len = put(out, len, cap, "%");
			break;
		default:  /* unknown: keep as written */
			num[0] = '%', num[1] = *p, num[2] = '\0';
			len = put(out, len, cap, num);
		}
	}
}

/* Moves a descriptor of ours out of the low numbers the program expects to get from open()
 * (and that some programs assume are theirs): to the first free one at or above 1000, or
 * just under the descriptor limit when that is lower. Returns the descriptor to use. */
int prof_fd_hide(int fd)
{
	struct rlimit rl;
	int floor = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)floor + 16)
		floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 16 : 0;
	if (fd < 0 || fd >= floor || floor == 0)
		return fd;
	int flags = fcntl(fd, F_GETFD);
	int high = fcntl(fd, flags >= 0 && (flags & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, floor);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* Creates the file 0600, never through a symbolic link. A taken name (an exec'd image keeps
 * its pid) gets a number before the .trace suffix, so run directories still list it. */
static int create_file(const char *want, char *got, size_t cap)
{
	size_t len = strlen(want);
	int stem = len > 6 && !strcmp(want + len - 6, ".trace") ? (int)(len - 6) : (int)len;
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(got, cap, "%s", want);
		else
			snprintf(got, cap, "%.*s.%d%s", stem, want, i, want + stem);
		int fd = open(got, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return prof_fd_hide(fd);
	}
	errno = EEXIST;
	return -1;
}

/* Whether fd is open on our trace file (a program may have closed it, or put a file of its
 * own at that number). Async-signal-safe. */
static int is_trace(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino;
}

/* Our descriptor may have been closed (or reused) by a program that closes every fd:
 * check it is still our file, reopen it by path if not. Pairs with grow(). */
static int writer_fd(void)
{
	if (is_trace(w.fd))
		return w.fd;
	int fd = prof_fd_hide(open(w.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0)
		return -1;
	if (!is_trace(fd)) {
		close(fd);
		return -1;
	}
	w.fd = fd;
	return fd;
}

/* How long the process may make a file (RLIMIT_FSIZE; UINT64_MAX if unlimited). Past it, a
 * write, fallocate or ftruncate of the trace would kill the program with SIGXFSZ (a shell's
 * `ulimit -f`, or the program's own setrlimit, may set it below our trace's size), where it
 * runs on unprofiled: the trace stops growing there instead. Asked each time: the program
 * may lower it while it runs. */
static uint64_t file_size_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}

/* Makes the file long enough for `chunks` units: disk blocks are reserved now (fallocate),
 * so a full disk is an error here rather than a SIGBUS in the middle of a record. */
static int extend_file(uint64_t chunks)
{
	uint64_t size = w.hdr->data_offset + chunks * w.chunk_size;
	if (size > w.map_size || size > file_size_limit())
		return -EFBIG;
	int fd = writer_fd();
	if (fd < 0)
		return -EBADF;
	int err = posix_fallocate(fd, 0, (off_t)size);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(fd, (off_t)size) < 0 ? errno : 0;
	return -err;
}

/* The trace can take no more chunks: from now on streams write only into chunks they hold,
 * and every other event is counted as lost. Said once. */
static void warn_full(int err)
{
	int on = 1;
	atomic_compare_exchange_strong(&prof_active, &on, PROF_ACTIVE_FULL);
	if (atomic_exchange(&w.warned_full, 1))
		return;
	/* This may run in a signal handler (a CPU sample's claim): no stdio, no strerror. */
	if (err == -EFBIG) {
		prof_say("trace ", w.path, " reached its size limit (PROF_MAX_SIZE, or the file "
			 "size limit of ulimit -f); later events "
			 "are counted as lost", 0);
	} else {
		prof_say("cannot extend trace ", w.path, "; recording disabled, later events are "
			 "counted as lost", -err);
		prof_writer_set_state(PROF_STATE_DISABLED);
	}
}

/* Adds file space until the file holds `need` units (and a step more, so growing is rare).
 * Only one thread grows at a time (with every signal blocked: next_chunk()); a signal
 * handler never waits for it (the thread it interrupted may be the one growing). At the size
 * limit the file grows to the limit, and the trace is full: -1, though claims may still take
 * what is left below the limit. */
static int growing_take(int may_wait)
{
	while (atomic_flag_test_and_set_explicit(&w.growing, memory_order_acquire)) {
		if (!may_wait)
			return -1;
		sched_yield();
	}
	return 0;
}

static void growing_drop(void)
{
	atomic_flag_clear_explicit(&w.growing, memory_order_release);
}

static int grow(uint64_t need, int may_wait)
{
	if (growing_take(may_wait) < 0)
		return -1;
	int rc = 0;
	uint64_t cap = atomic_load(&w.capacity);
	if (cap == 0) {
		rc = -1;  /* closing */
	} else if (cap < need) {
		uint64_t end = file_size_limit();
		if (end > w.map_size)
			end = w.map_size;
		uint64_t max = end > w.hdr->data_offset ? (end - w.hdr->data_offset) / w.chunk_size : 0;
		uint64_t step = cap * w.chunk_size / 8;
		step = (step < GROW_MIN ? GROW_MIN : step > GROW_MAX ? GROW_MAX : step) / w.chunk_size;
		uint64_t target = need + step < max ? need + step : max;
		int err = target > cap ? extend_file(target) : -EFBIG;
		if (err == 0)
			atomic_store(&w.capacity, target);
		if (err < 0 || target < need) {
			warn_full(err < 0 ? err : -EFBIG);
			rc = -1;
		}
	}
	growing_drop();
	return rc;
}

static inline char *unit_at(uint64_t i)
{
	return w.base + w.hdr->data_offset + i * w.chunk_size;
}

static inline uint64_t unit_index(const char *c)
{
	return (uint64_t)(c - w.base - w.hdr->data_offset) / w.chunk_size;
}

/* Keeps a range of never-written units for a later claim. Pairs with pool_take(). A full pool
 * drops the range: its units stay zero, which readers skip one by one. */
static void pool_put(uint64_t first, uint64_t count)
{
	uint64_t v = first << 8 | count;
	for (uint32_t i = 0; i < POOL_SLOTS; i++) {
		uint64_t empty = 0;
		if (__atomic_compare_exchange_n(&w.pool[i], &empty, v, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&w.pooled, 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

/* A pooled range of at least `min` units, taken whole. */
static int pool_take(uint32_t min, uint64_t *first, uint32_t *count)
{
	if (__atomic_load_n(&w.pooled, __ATOMIC_RELAXED) == 0)
		return 0;
	for (uint32_t i = 0; i < POOL_SLOTS; i++) {
		uint64_t v = __atomic_load_n(&w.pool[i], __ATOMIC_RELAXED);
		if (v && (v & 0xff) >= min &&
		    __atomic_compare_exchange_n(&w.pool[i], &v, 0, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_sub(&w.pooled, 1, __ATOMIC_RELAXED);
			*first = v >> 8;
			*count = (uint32_t)(v & 0xff);
			return 1;
		}
	}
	return 0;
}

/* The last units of the capacity are kept for the EXIT record (prof_writer_final()), which
 * must fit when the program's records have filled the trace: a full trace whose runs had
 * used the capacity to its last unit read as one whose process never ended. */
#define EXIT_RESERVE 2u
#define SIGNAL_ROOM 16u  /* units of the capacity (a 16th at most) only signal handlers claim */

static inline uint64_t claimable(uint64_t cap)
{
	if (atomic_load_explicit(&w.final, memory_order_relaxed) || cap <= 4 * EXIT_RESERVE)
		return cap;
	return cap - EXIT_RESERVE;
}

void prof_writer_final(void)
{
	atomic_store(&w.final, 1);
}

/* Claims a run of `want` units, `need` at the least: a pooled range of at least half of want
 * (and need), else one CAS on the header's counter (fewer than want where the size limit leaves
 * fewer). Returns the first unit, NULL when none. */
static char *claim_run(uint32_t want, uint32_t need, int may_wait, uint32_t *got, int *recycled)
{
	uint64_t first;
	*recycled = 0;
	if (atomic_load(&w.capacity) == 0)
		return NULL;
	if (pool_take((want + 1) / 2 > need ? (want + 1) / 2 : need, &first, got)) {
		*recycled = 1;
		return unit_at(first);
	}
	uint64_t n = __atomic_load_n(&w.hdr->chunks_claimed, __ATOMIC_RELAXED);
	/* A claim that may wait extends the file some units early: those stay for signal handlers
	 * (CPU samples), which never wait for the thread extending it, and lost their record
	 * when they needed a chunk meanwhile. Once the file cannot grow, every claim takes what
	 * is left. */
	int keep_room = may_wait;
	for (;;) {
		uint64_t cap = atomic_load(&w.capacity);
		if (cap == 0)
			return NULL;
		uint64_t top = claimable(cap);
		uint64_t room = cap / 16 < SIGNAL_ROOM ? cap / 16 : SIGNAL_ROOM;
		if (keep_room)
			top = top > room ? top - room : 0;
		if (n + want > top) {
			if (grow(n + want + (cap - top), may_wait) < 0) {
				keep_room = 0;
				top = claimable(atomic_load(&w.capacity));
				if (n >= top || top - n < need)
					return NULL;
				want = (uint32_t)(top - n);  /* what is left below the limit */
			}
			n = __atomic_load_n(&w.hdr->chunks_claimed, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_compare_exchange_n(&w.hdr->chunks_claimed, &n, n + want, 1,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	/* Pairs with prof_writer_close(): once it has zeroed capacity and read the counter, a
	 * chunk claimed after that read may lie past the end it truncates to: don't use it. */
	if (atomic_load(&w.capacity) == 0)
		return NULL;
	*got = want;
	return unit_at(n);
}

/* Adds the stream's uncounted losses to the header: one atomic add per LOST_BATCH losses
 * (the first at once, so even a killed process's trace says something was lost). */
static void sum_lost(struct prof_stream *s)
{
	if (s->unsummed && w.hdr)
		__atomic_fetch_add(&w.hdr->lost_records, s->unsummed, __ATOMIC_RELAXED);
	s->unsummed = 0;
	s->summed = 1;
}

static void count_lost(struct prof_stream *s)
{
	s->lost++;
	if (++s->unsummed >= LOST_BATCH || !s->summed)
		sum_lost(s);
}

/* The stream leaves its chunk: the whole units it never wrote go back. The header's count is
 * shrunk first (release), and only then are the units published to the pool, so a reader
 * never takes the next owner's chunk header for records of this one, even after a SIGKILL
 * between the two stores. Records written later fit in what is left of the last kept unit. */
static void give_back(struct prof_stream *s)
{
	if (!s->chunk || !w.hdr)
		return;
	uint32_t keep = (s->used + UNIT - 1) / UNIT, units = s->span / UNIT;
	if (keep >= units)
		return;
	struct prof_chunk_header_run *ch = (struct prof_chunk_header_run *)s->chunk;
	__atomic_store_n(&ch->units, keep, __ATOMIC_RELEASE);
	s->span = keep * UNIT;
	pool_put(unit_index(s->chunk) + keep, units - keep);
}

/* The short LOCK_WAITs' base: the time and lock of the last LOCK_WAIT in streams[0]'s chunk,
 * both inverted (0: no base), as this is a root of the exit's leak scan too: neither a lock
 * in a leaked block nor a time that happens to look like an address may keep a block
 * referenced. */
static __thread struct {
	uint64_t time_inv, lock_inv;
} lock_base;

/* The short IO_CALLs' base: the time (inverted, as above), file id and descriptor of the
 * last IO_CALL or IO_NAME in streams[0]'s chunk; valid 0: none. */
static __thread struct {
	uint64_t time_inv;
	uint32_t file;
	int32_t fd;
	int valid;
} io_base;

/* The short CUDA_LAUNCHes' bases of a thread in streams[0]'s chunk, as prof_short_cuda_note()
 * keeps them (struct prof_short_cuda), with each slot's key in place of its whole record: a
 * slot holds one while its gen is the current one (0 never is), so that a new chunk empties
 * them all at once. Inverted, as the exit's leak scan may take this memory for a root: the
 * function, the stream and the key's function and stream. Over 1 KiB, so not in static TLS
 * (check-bss), but in a table of CUDA_BASE_THREADS, made at the first launch recorded: a
 * thread takes one there at its first launch and gives it back at its end; a thread that
 * finds none taken writes ordinary launch records. */
struct cuda_base {
	int valid;
	uint32_t gen;
	uint64_t time_inv, corr_inv;
	struct {
		struct prof_short_cuda_key key;
		uint32_t gen;
	} slot[PROF_SHORT_CUDA_SLOTS];
	/* the same of CUDA_GPU records (their keys hold no address) */
	int gpu_valid;
	uint64_t gpu_time_inv, gpu_corr_inv, gpu_start_inv;
	struct {
		struct prof_short_gpu_key key;
		uint32_t gen;
	} gpu_slot[PROF_SHORT_GPU_SLOTS];
};
#define CUDA_BASE_THREADS 256
static void *_Atomic cuda_bases;
static _Atomic uint64_t cuda_bases_taken[CUDA_BASE_THREADS / 64];
static __thread struct cuda_base *cuda_mine;
static __thread int cuda_mine_state;  /* 0: none asked for yet; 1: has one; -1: none to be had */

static __attribute__((noinline)) struct cuda_base *cuda_base_claim(void)
{
	cuda_mine_state = -1;
	struct cuda_base *all = prof_lazy(&cuda_bases, CUDA_BASE_THREADS * sizeof(struct cuda_base));
	int i = all ? prof_slot_claim(cuda_bases_taken, CUDA_BASE_THREADS) : -1;
	if (i < 0)
		return NULL;
	cuda_mine = &all[i];
	*cuda_mine = (struct cuda_base){ .gen = 1 };  /* a previous thread's: no slot holds */
	cuda_mine_state = 1;
	return cuda_mine;
}

/* The thread's table, taken at its first CUDA record; NULL if none is to be had (a signal
 * handler takes none: its records go to the stream without short ones). */
static inline struct cuda_base *cuda_base_mine(const struct prof_thread *th)
{
	struct cuda_base *c = cuda_mine;
	if (unlikely(!c) && cuda_mine_state == 0 && !th->in_signal)
		c = cuda_base_claim();
	return c;
}

static void cuda_base_give_back(void)
{
	struct cuda_base *all = atomic_load_explicit(&cuda_bases, memory_order_relaxed);
	if (cuda_mine && all)
		prof_slot_give(cuda_bases_taken, (unsigned)(cuda_mine - all));
	cuda_mine = NULL;
	cuda_mine_state = -1;  /* the thread has ended: ordinary launches from here on */
}

/* The short records' bases, heap, lock, io and CUDA, are no longer those of the file (a new
 * chunk, a hook left half way): the next heap record, LOCK_WAIT, IO_CALL and CUDA_LAUNCH are
 * ordinary ones. */
void prof_writer_forget_bases(struct prof_thread *th)
{
	th->base_ptr_lo = th->base_ptr_hi = 0;
	lock_base.lock_inv = 0;
	io_base.valid = 0;
	struct cuda_base *c = cuda_mine;
	if (c) {
		c->valid = 0;
		c->gpu_valid = 0;
		if (++c->gen == 0)
			c->gen = 1;
	}
}

/* Makes a new run ready to fill: its bytes written (zeros) into the file's page cache, then
 * mapped in one call. Written to by a fault alone, every page of the (fallocated) trace file
 * was first read (zero-filled from an unwritten extent) and then made writable, one page at a
 * time: most of what a record cost the kernel. The descriptor is used only while it is still
 * our trace (a program may close every descriptor): a write of zeros into another file would
 * destroy its data, so any doubt skips it, and the faults make the run ready as before. On
 * tmpfs, fallocate() made the pages already, zeroed, in memory: zeros written over them were
 * a copy for nothing (with the two calls that check the descriptor and the size limit). */
static void run_ready(char *c, uint32_t units)
{
	static PROF_BULK char zeros[RUN_MAX * UNIT];  /* never written: reads as the zero page */
	uint64_t off = (uint64_t)(c - w.base), len = (uint64_t)units * UNIT;
	int fd = __atomic_load_n(&w.fd, __ATOMIC_RELAXED);
	if (!w.on_tmpfs && len <= sizeof(zeros) && off + len <= file_size_limit() && is_trace(fd))
		syscall(SYS_pwrite64, fd, zeros, (size_t)len, (off_t)off);  /* not our pwrite hook */
	/* One call maps a long run, instead of a page fault every 4 KiB while it fills. */
	if (units > 4) {
		uintptr_t lo = (uintptr_t)c & ~(uintptr_t)4095;
		madvise((void *)lo, (uintptr_t)c + len - lo, MADV_POPULATE_WRITE);
	}
}

/* `size` bytes at the stream's end, which fit. They read as PAD until prof_commit(), written
 * before the end moves: a record left unfinished (a program's signal handler that longjmp'd
 * out of our hook: prof_in_hook()) is skipped by readers, not taken for the chunk's end. */
static inline void *take(struct prof_stream *s, uint32_t size)
{
	char *p = s->chunk + s->used;
	__atomic_store_n((uint64_t *)p, (uint64_t)PROF_REC_PAD | (uint64_t)size << 32,
			 __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
	s->used += size;
	return p;
}

/* The stream's next chunk: a new run of units, about as many as the stream has used so far
 * and enough for the record. Writes the chunk header and the LOST record owed, gives back the
 * unused units of the chunk it leaves, then reserves `size`. Called with every signal
 * blocked (next_chunk()). */
static void *chunk_switch(struct prof_thread *th, struct prof_stream *s, uint32_t size)
{
	uint32_t need = (uint32_t)(((uint64_t)CHUNK_HDR + sizeof(struct prof_rec_lost) + size +
				    UNIT - 1) / UNIT);
	if (need > RUN_MAX || prof_writer_full() || !w.hdr) {
		count_lost(s);
		return NULL;
	}
	/* The main thread claims at least MAIN_RUN units: its first chunk, after the start-up
	 * records, keeps room for the leak records and EXIT it writes last, which must fit if the
	 * trace fills meanwhile. */
	if (!th->in_signal)
		prof_clock_refine();
	uint32_t least = th->tid == w.hdr->pid && need < MAIN_RUN ? MAIN_RUN : need;
	uint32_t want = s->units_used < least ? least : s->units_used < RUN_MAX ? s->units_used : RUN_MAX;
	uint32_t got;
	int recycled;
	char *c = claim_run(want, need, th->in_signal == 0, &got, &recycled);
	if (!c) {
		count_lost(s);
		return NULL;
	}
	/* A recycled run was made ready by the thread that claimed it first. */
	if (!recycled)
		run_ready(c, got);
	give_back(s);
	struct prof_chunk_header_run *ch = (struct prof_chunk_header_run *)c;
	ch->stream = th->serial * 2u + (th->in_signal > 0);
	ch->seq = s->chunk ? s->seq + 1 : 0;
	ch->tid = th->tid;
	ch->units = got;
	ch->reserved = 0;
	__atomic_store_n(&ch->magic, PROF_CHUNK_MAGIC, __ATOMIC_RELEASE);
	s->seq = ch->seq;
	s->chunk = c;
	if (s == &th->streams[0])
		prof_writer_forget_bases(th);
	s->span = got * UNIT;
	s->used = CHUNK_HDR;
	s->units_used = s->units_used + got < RUN_MAX ? s->units_used + got : RUN_MAX;
	if (s->lost) {
		struct prof_rec_lost *l = take(s, sizeof(*l));
		l->records = s->lost;
		prof_commit(l, PROF_REC_LOST, 0, sizeof(*l), prof_now());
		s->lost = 0;
	}
	return take(s, size);
}

/* chunk_switch() with every signal blocked: a handler's longjmp out of it would leave the
 * trace growing (others waiting), or a chunk written and its stream not moved on (the next
 * would repeat its number, and no reader take the trace). Pairs with prof_reserve(). */
static __attribute__((noinline)) void *next_chunk(struct prof_thread *th, struct prof_stream *s,
						  uint32_t size)
{
	sigset_t saved;
	int blocked = prof_signals_block(&saved);
	void *p = chunk_switch(th, s, size);
	prof_signals_restore(blocked, &saved);
	return p;
}

/* Space for one record of `size` bytes (a multiple of 8) in the thread's current stream, or
 * NULL (the record is counted as lost). Fill it, then prof_commit() it. */
void *prof_reserve(struct prof_thread *th, uint32_t size)
{
	struct prof_stream *s = &th->streams[th->in_signal > 0];
	/* A signal handler of ours that interrupts a reservation on the same stream (a fatal
	 * signal inside a CPU sample's claim) must not take the same bytes: it drops its record.
	 * Once a reservation returns, the bytes are the caller's and nesting is harmless. */
	if (unlikely(s->busy)) {
		count_lost(s);
		return NULL;
	}
	s->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	void *p = likely(s->used + size <= s->span) ? take(s, size) : next_chunk(th, s, size);
	atomic_signal_fence(memory_order_seq_cst);
	s->busy = 0;
	return p;
}

/* Whether `size` bytes fit in what the stream holds already: worth unwinding for, once the
 * trace is full. */
int prof_writer_has_room(struct prof_thread *th, uint32_t size)
{
	const struct prof_stream *s = &th->streams[th->in_signal > 0];
	return s->used + size <= s->span;
}

/* A hook's event once the trace is full (prof_recording()): recorded while the thread's
 * chunk has room, else counted as one lost record and passed through. Lock hooks go on:
 * they count in memory and write only now and then (their records are counted lost then),
 * and a lock taken but not seen released would leave their state wrong. */
struct prof_thread *prof_recording_full(struct prof_thread *th, unsigned family)
{
	if (family == PROF_EV_LOCK || prof_writer_has_room(th, 1024))
		return th;
	count_lost(&th->streams[th->in_signal > 0]);
	return NULL;
}

/* The thread ends: the units of its chunks it never wrote go to the pool for the next thread,
 * and its losses reach the header. Records it writes later (other destructors) go into what
 * is left of its last unit, or claim anew. */
void prof_writer_thread_done(struct prof_thread *th)
{
	if (cuda_mine_state)
		cuda_base_give_back();
	for (int i = 0; i < 2; i++) {
		give_back(&th->streams[i]);
		sum_lost(&th->streams[i]);
	}
}

/* The short records' heap base, kept in holes of struct prof_thread (prof.h). */
static inline void base_get(const struct prof_thread *th, struct prof_short_base *b)
{
	uint64_t inv = th->base_ptr_lo | (uint64_t)th->base_ptr_hi << 32;
	b->time = th->streams[0].base_part | (uint64_t)th->streams[1].base_part << 32;
	b->ptr = ~inv;
	b->valid = inv != 0;
}

static inline void base_set(struct prof_thread *th, uint64_t time, uint64_t ptr)
{
	th->streams[0].base_part = (uint32_t)time;
	th->streams[1].base_part = (uint32_t)(time >> 32);
	th->base_ptr_lo = (uint32_t)~ptr;
	th->base_ptr_hi = (uint32_t)(~ptr >> 32);
}

static inline void lock_base_set(int valid, uint64_t time, uint64_t lock)
{
	lock_base.time_inv = ~time;
	lock_base.lock_inv = valid && lock != ~0ull ? ~lock : 0;
}

static inline void io_base_set(int valid, uint64_t time, uint32_t file, int32_t fd)
{
	io_base.time_inv = ~time;
	io_base.file = file;
	io_base.fd = fd;
	io_base.valid = valid;
}

/* The stream a short record of `len` bytes goes to, or NULL when the current chunk has no
 * room for it. Never a signal handler's stream. */
static inline struct prof_stream *short_room(struct prof_thread *th, uint32_t len)
{
	struct prof_stream *s = &th->streams[0];
	return th->in_signal || s->busy || s->used + len > s->span ? NULL : s;
}

/* Writes the short record w0 (w1 too when len is 16) at the stream's end, its base already
 * moved. Written before the end moves past it: a longjmp between leaves no hole (see
 * take()). Pairs with prof_short_decode(). */
static inline void short_store(struct prof_stream *s, uint64_t w0, uint64_t w1, uint32_t len)
{
	uint64_t *p = (uint64_t *)(s->chunk + s->used);
	if (len > 8)
		p[1] = w1;
	__atomic_store_n(p, w0, __ATOMIC_RELEASE);
	atomic_signal_fence(memory_order_seq_cst);
	s->used += len;
}

/* A short LOCK_WAIT in the current chunk (prof_short.h), or 0 when the wait needs an
 * ordinary record or the chunk has no room. */
static inline int write_short_lock(struct prof_thread *th, unsigned op, unsigned kind,
				   uint64_t lock, uint64_t other, uint64_t wait_ns, uint32_t stack,
				   int result, uint64_t time)
{
	struct prof_stream *s = short_room(th, PROF_SHORT_LOCK_SIZE);
	if (!s)
		return 0;
	struct prof_short_base b = { .lock_valid = lock_base.lock_inv != 0,
				     .lock_time = ~lock_base.time_inv,
				     .lock = ~lock_base.lock_inv };
	uint64_t w[2];
	if (!prof_short_lock_words(&b, op, kind, time, lock, other, wait_ns, stack, result, w))
		return 0;
	lock_base_set(1, time, lock);
	short_store(s, w[0], w[1], PROF_SHORT_LOCK_SIZE);
	return 1;
}

/* A short IO_CALL in the current chunk, or 0 when the call needs an ordinary record or the
 * chunk has no room. */
static inline int write_short_io(struct prof_thread *th, unsigned op, uint32_t file, int32_t fd,
				 int64_t result, uint64_t duration_ns, uint32_t stack, uint64_t time)
{
	struct prof_stream *s = short_room(th, PROF_SHORT_IO_SIZE);
	if (!s)
		return 0;
	struct prof_short_base b = { .io_valid = io_base.valid, .io_time = ~io_base.time_inv,
				     .io_file = io_base.file, .io_fd = io_base.fd };
	uint64_t w[2];
	if (!prof_short_io_words(&b, op, time, file, fd, result, duration_ns, stack, w))
		return 0;
	io_base_set(1, time, file, fd);
	short_store(s, w[0], w[1], PROF_SHORT_IO_SIZE);
	return 1;
}

/* A short ALLOC or FREE of `len` bytes (16 or 8) in the current chunk, or 0 when it does not
 * fit there or the event needs an ordinary record. */
static inline int write_short(struct prof_thread *th, unsigned kind, uint64_t ptr,
			      uint64_t time, uint32_t len, uint64_t w1)
{
	struct prof_stream *s = short_room(th, len);
	if (!s)
		return 0;
	struct prof_short_base b;
	base_get(th, &b);
	uint64_t w0 = prof_short_word(&b, kind, time, ptr);
	if (!w0)
		return 0;
	base_set(th, time, ptr);
	short_store(s, w0, w1, len);
	return 1;
}

/* Moves the base after an ordinary ALLOC or FREE, which prof_reserve() put in the stream's
 * current chunk (a new one, maybe): readers take every ordinary ALLOC and FREE as the base,
 * so prof_commit() calls this for each, whoever wrote it. Only streams[0] has short records. */
static inline void note_base(struct prof_thread *th, uint64_t time, uint64_t ptr)
{
	if (th->in_signal)
		return;
	if (ptr != ~0ull)
		base_set(th, time, ptr);
	else  /* ~0 is "no base" here (never a block's address): the next one is ordinary */
		th->base_ptr_lo = th->base_ptr_hi = 0;
}

/* Publishes a filled record: the prefix's first 8 bytes go last, with release order, so a
 * reader (or a SIGKILL) never sees a half-written record as valid. An ALLOC or FREE becomes
 * the heap base of the short records after it, a LOCK_WAIT their lock base, an IO_CALL or
 * IO_NAME their io base (the thread committing is the one that reserved). */
void prof_commit(void *rec, unsigned type, unsigned flags, uint32_t size, uint64_t time)
{
	struct prof_rec *r = rec;
	r->time = time;
	uint64_t word = (uint64_t)(uint16_t)type | (uint64_t)(uint16_t)flags << 16 |
			(uint64_t)size << 32;
	__atomic_store_n((uint64_t *)rec, word, __ATOMIC_RELEASE);
	if (unlikely(type == PROF_REC_ALLOC || type == PROF_REC_FREE ||
		     type == PROF_REC_LOCK_WAIT || type == PROF_REC_IO_CALL ||
		     type == PROF_REC_IO_NAME)) {
		struct prof_thread *th = &prof_self;
		const struct prof_stream *s = &th->streams[0];
		if (th->in_signal)
			return;
		/* Reserved before the stream moved to another chunk (a STACK record between
		 * reserve and commit, say): that chunk's base is not this record. No base then. */
		int here = (char *)rec >= s->chunk && (char *)rec < s->chunk + s->span;
		if (type == PROF_REC_LOCK_WAIT) {
			lock_base_set(here, time, ((const struct prof_rec_lock_wait *)rec)->lock);
		} else if (type == PROF_REC_IO_CALL || type == PROF_REC_IO_NAME) {
			const struct prof_rec_io_call *io = rec;  /* IO_NAME begins as IO_CALL */
			io_base_set(here && size >= sizeof(*io), time, io->file, io->fd);
		} else if (here)
			note_base(th, time, ((const struct prof_rec_free *)rec)->ptr);
		else
			th->base_ptr_lo = th->base_ptr_hi = 0;
	}
}

void prof_write_alloc(struct prof_thread *th, unsigned fn, uint64_t ptr, uint64_t size,
		      uint32_t stack, uint64_t time)
{
	if (size <= UINT32_MAX &&
	    write_short(th, fn, ptr, time, PROF_SHORT_ALLOC_SIZE, prof_short_alloc_word2(size, stack)))
		return;
	struct prof_rec_alloc *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->ptr = ptr;
	r->size = size;
	r->stack = stack;
	r->pad = 0;
	prof_commit(r, PROF_REC_ALLOC, fn, sizeof(*r), time);
}

void prof_write_free(struct prof_thread *th, unsigned flags, uint64_t ptr, uint64_t time)
{
	if (flags < 16 && write_short(th, PROF_SHORT_FREE_KIND + flags, ptr, time,
				      PROF_SHORT_FREE_SIZE, 0))
		return;
	struct prof_rec_free *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->ptr = ptr;
	prof_commit(r, PROF_REC_FREE, flags, sizeof(*r), time);
}

void prof_write_lock_wait(struct prof_thread *th, unsigned op, unsigned kind, uint64_t lock,
			  uint64_t other, uint64_t wait_ns, uint32_t stack, int result, uint64_t time)
{
	if (write_short_lock(th, op, kind, lock, other, wait_ns, stack, result, time))
		return;
	struct prof_rec_lock_wait *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->lock = lock;
	r->other = other;
	r->wait_ns = wait_ns;
	r->stack = stack;
	r->kind = (uint16_t)kind;
	r->result = (int16_t)result;
	prof_commit(r, PROF_REC_LOCK_WAIT, op, sizeof(*r), time);
}

void prof_write_io_call(struct prof_thread *th, unsigned op, uint32_t file, int32_t fd,
			int64_t result, uint64_t duration_ns, uint32_t stack, uint64_t time)
{
	if (write_short_io(th, op, file, fd, result, duration_ns, stack, time))
		return;
	struct prof_rec_io_call *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->file = file;
	r->fd = fd;
	r->result = result;
	r->duration_ns = duration_ns;
	r->stack = stack;
	r->pad = 0;
	prof_commit(r, PROF_REC_IO_CALL, op, sizeof(*r), time);
}

/* rec, a CUDA record of size bytes whose header is filled in, as an ordinary record. 1: it is
 * in streams[0]'s chunk, whose bases it moves (a new chunk, maybe: prof_reserve() forgot the
 * old bases then); 0: lost, or in the signal handler's stream, which has no short records. */
static int write_cuda_ordinary(struct prof_thread *th, const struct prof_rec *rec, uint32_t size)
{
	struct prof_rec *r = prof_reserve(th, size);
	if (!r)
		return 0;
	memcpy(r + 1, rec + 1, size - sizeof(*r));
	prof_commit(r, rec->type, rec->flags, size, rec->time);
	return !th->in_signal;
}

/* x's key as the writer keeps it (cuda_base): function and stream inverted. */
static inline struct prof_short_cuda_key cuda_key(const struct prof_rec_cuda_launch_api *x)
{
	struct prof_short_cuda_key k = prof_short_cuda_key_of(x);
	k.function = ~k.function;
	k.stream = ~k.stream;
	return k;
}

void prof_write_cuda_launch(struct prof_thread *th, struct prof_rec_cuda_launch_api *x,
			    unsigned flags, uint64_t time)
{
	x->l.h = (struct prof_rec){ .type = PROF_REC_CUDA_LAUNCH, .flags = (uint16_t)flags,
				     .size = sizeof(*x), .time = time };
	struct cuda_base *c = cuda_base_mine(th);
	struct prof_short_cuda_key key = cuda_key(x);
	unsigned slot = prof_short_cuda_slot(x->l.function);
	struct prof_stream *s = c ? short_room(th, PROF_SHORT_CUDA_SIZE) : NULL;
	uint64_t w[2];
	if (s && prof_short_cuda_words(c->valid, ~c->time_inv, ~c->corr_inv,
				       c->slot[slot].gen == c->gen &&
					       prof_short_cuda_key_eq(&c->slot[slot].key, &key),
				       x, w)) {
		c->time_inv = ~time;
		c->corr_inv = ~x->l.corr;
		short_store(s, w[0], w[1], PROF_SHORT_CUDA_SIZE);
		return;
	}
	if (!write_cuda_ordinary(th, &x->l.h, sizeof(*x)) || !c)
		return;
	/* prof_short_cuda_note(), for the record just written */
	c->valid = 1;
	c->time_inv = ~time;
	c->corr_inv = ~x->l.corr;
	if (prof_short_cuda_repeatable(&x->l.h)) {
		c->slot[slot].key = key;
		c->slot[slot].gen = c->gen;
	} else {
		c->slot[slot].gen = 0;
	}
}

void prof_write_cuda_gpu(struct prof_thread *th, struct prof_rec_cuda_gpu *g, unsigned flags,
			uint64_t time)
{
	g->h = (struct prof_rec){ .type = PROF_REC_CUDA_GPU, .flags = (uint16_t)flags,
				   .size = sizeof(*g), .time = time };
	struct cuda_base *c = cuda_base_mine(th);
	struct prof_short_gpu_key key = prof_short_gpu_key_of(g);
	unsigned slot = prof_short_gpu_slot(g->name, g->activity, g->copy_kind);
	struct prof_stream *s = c ? short_room(th, PROF_SHORT_GPU_SIZE) : NULL;
	uint64_t w[2];
	if (s && prof_short_gpu_words(c->gpu_valid, ~c->gpu_time_inv, ~c->gpu_corr_inv,
				      ~c->gpu_start_inv,
				      c->gpu_slot[slot].gen == c->gen &&
					      prof_short_gpu_key_eq(&c->gpu_slot[slot].key, &key),
				      g, w)) {
		c->gpu_time_inv = ~time;
		c->gpu_corr_inv = ~g->corr;
		c->gpu_start_inv = ~g->start;
		short_store(s, w[0], w[1], PROF_SHORT_GPU_SIZE);
		return;
	}
	if (!write_cuda_ordinary(th, &g->h, sizeof(*g)) || !c)
		return;
	/* prof_short_gpu_note(), for the record just written */
	c->gpu_valid = 1;
	c->gpu_time_inv = ~time;
	c->gpu_corr_inv = ~g->corr;
	c->gpu_start_inv = ~g->start;
	c->gpu_slot[slot].key = key;
	c->gpu_slot[slot].gen = c->gen;
}

/* The TSC took over from clock_gettime (prof_clock_calibrate()): the header says so from now
 * on, as the writer would have said it at the start. Async-signal-safe. */
void prof_writer_clock_changed(void)
{
	if (!w.hdr)
		return;
	w.hdr->tsc_hz = prof_clock_tsc_hz();
	w.hdr->clock_source = w.hdr->tsc_hz ? PROF_CLOCK_SRC_TSC : PROF_CLOCK_SRC_CLOCK_GETTIME;
}

int prof_writer_disabled(void)
{
	return w.hdr && __atomic_load_n(&w.hdr->state, __ATOMIC_RELAXED) == PROF_STATE_DISABLED;
}

/* A DISABLED trace stays so: it says the writer gave up before the end. */
void prof_writer_set_state(enum prof_state state)
{
	if (!w.hdr)
		return;
	uint32_t cur = __atomic_load_n(&w.hdr->state, __ATOMIC_RELAXED);
	while (cur != PROF_STATE_DISABLED &&
	       !__atomic_compare_exchange_n(&w.hdr->state, &cur, (uint32_t)state, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* The parent's mapping a fork child kept (prof_writer_forget()), unmapped. */
static void drop_stale(void)
{
	if (w.stale)
		munmap(w.stale, w.stale_size);
	w.stale = NULL;
}

void prof_writer_drop_stale(void)
{
	drop_stale();
}

/* The address space reserved for the trace: PROF_MAX_SIZE, but no more than a sixteenth of
 * an address-space limit (a trace that fills it says so, as at PROF_MAX_SIZE). */
static uint64_t reserve_size(void)
{
	uint64_t want = prof_cfg.max_size;
	if (want < 4u << 20)
		want = 4u << 20;
	return prof_vm_budget(want, TRACE_VM_SHARE);
}

/* The header's strings, each ending in a NUL: exe, host, then the arguments that fit in `cap`
 * bytes. Written to `strings`, or only measured where it is NULL. Returns their size; *kept:
 * how many arguments. */
static size_t header_strings(char *strings, size_t cap, int argc, char **argv, const char *exe,
			     const char *host, uint32_t *kept)
{
	size_t len = 0;
	const char *fixed[2] = { exe, host };
	for (int i = 0; i < 2; i++) {
		size_t l = strnlen(fixed[i], cap - 2 - len);
		if (strings) {
			memcpy(strings + len, fixed[i], l);
			strings[len + l] = '\0';
		}
		len += l + 1;
	}
	*kept = 0;
	for (int i = 0; i < argc && argv && argv[i]; i++) {
		size_t l = strlen(argv[i]);
		if (len + l + 1 > cap)
			break;
		if (strings)
			memcpy(strings + len, argv[i], l + 1);
		len += l + 1;
		(*kept)++;
	}
	return len;
}

/* Where the data begins: after the header and its strings, at the next page. */
static uint32_t data_offset_for(size_t strings_len)
{
	return (uint32_t)((sizeof(struct prof_file_header) + strings_len + 4095) & ~(size_t)4095);
}

/* Fills the header and its strings (exe, host, argv) up to data_offset, where the data
 * begins. */
static uint32_t write_header(uint32_t ppid, int argc, char **argv, const char *exe,
			     const char *host, uint64_t realtime, uint64_t start, uint32_t data_offset)
{
	struct prof_file_header *h = w.hdr;
	uint32_t kept;
	size_t len = header_strings((char *)h + sizeof(*h), data_offset - sizeof(*h), argc, argv,
				    exe, host, &kept);
	const char *rank = rank_from_env();
	h->version = PROF_FORMAT_VERSION;
	h->min_version = PROF_FORMAT_MIN_VERSION;
	h->header_size = (uint32_t)(sizeof(*h) + len);
	h->features = PROF_FEAT_CHUNK_RUNS | PROF_FEAT_SHORT_RECORDS | PROF_FEAT_STACK_TAILS |
		      PROF_FEAT_SHORT_LOCK_WAITS | PROF_FEAT_SHORT_IO_CALLS |
		      PROF_FEAT_SHORT_CUDA | (prof_cfg.heap_sample ? PROF_FEAT_HEAP_TALLY : 0);
	h->chunk_size = UNIT;
	h->data_offset = data_offset;
	h->pid = (uint32_t)getpid();
	h->ppid = ppid;
	h->start_realtime_ns = realtime;
	h->start_ns = start;
	h->clock_id = CLOCK_MONOTONIC;
	h->tsc_hz = prof_clock_tsc_hz();
	h->clock_source = h->tsc_hz ? PROF_CLOCK_SRC_TSC : PROF_CLOCK_SRC_CLOCK_GETTIME;
	__atomic_store_n(&h->state, PROF_STATE_RUNNING, __ATOMIC_RELAXED);
	h->events = prof_cfg.events;
	h->stack_depth = prof_cfg.stack_depth;
	h->rank = rank ? atoi(rank) : -1;
	h->argc = kept;
	h->strings_offset = sizeof(*h);
	h->strings_size = (uint32_t)len;
	h->cpu_hz = (prof_cfg.events & PROF_EV_CPU) ? prof_cfg.cpu_hz : 0;
	h->heap_sample = (uint32_t)prof_cfg.heap_sample;
	__atomic_store_n(&h->magic, PROF_MAGIC, __ATOMIC_RELEASE);
	return kept;
}

const char *prof_exe_path(void)
{
	static PROF_BULK char exe[PATH_MAX];
	if (!exe[0]) {  /* a fork child knows its parent's, the same file */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
	}
	return exe;
}

/* Starts this process's trace. Returns 0, or -1 after saying why once on stderr. */
int prof_writer_open(uint32_t ppid, int argc, char **argv)
{
	const char *exe = prof_exe_path();
	const char *prog = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	struct utsname un;
	if (uname(&un) < 0)
		strcpy(un.nodename, "?");
	prof_clock_init();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t realtime = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	uint64_t start = prof_now();

	char want[PATH_MAX];
	expand_template(want, sizeof(want), prof_cfg.output, prog, un.nodename, realtime);
	w.fd = create_file(want, w.path, sizeof(w.path));
	if (w.fd < 0) {
		prof_log("cannot create trace file %s: %s; profiling disabled", want, strerror(errno));
		drop_stale();
		return -1;
	}
	/* A fork child's file is most often beside its parent's: on the same file system, whose
	 * kind it knows then; and a umask leaves 0600 as it is but for an odd one (0277). */
	struct stat st;
	if (fstat(w.fd, &st) < 0)
		goto fail;
	if ((st.st_mode & 07777) != 0600)
		fchmod(w.fd, 0600);
	struct statfs fs;
	if (!w.dev_known || st.st_dev != w.dev)
		w.on_tmpfs = fstatfs(w.fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
	w.dev = st.st_dev;
	w.ino = st.st_ino;
	w.dev_known = 1;
	/* Reserve address space for the largest trace; back it with file space as it fills. A
	 * fork child's takes the place of its parent's, in one call. */
	w.base = MAP_FAILED;
	for (w.map_size = reserve_size(); w.map_size >= MAP_MIN; w.map_size /= 2) {
		int over = w.stale && w.stale_size == w.map_size;
		if (!over)
			drop_stale();  /* its address space first (ulimit -v) */
		w.base = mmap(over ? w.stale : NULL, w.map_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED | (over ? MAP_FIXED : 0), w.fd, 0);
		if (over && w.base != MAP_FAILED)
			w.stale = NULL;
		drop_stale();  /* a failed MAP_FIXED may have left the range half mapped */
		if (w.base != MAP_FAILED)
			break;
	}
	if (w.base == MAP_FAILED) {
		w.base = NULL;
		if (w.map_size < MAP_MIN) {
			prof_log("the address-space limit (ulimit -v, ulimit -d) leaves no room for trace "
				 "file %s; profiling disabled", w.path);
			goto fail_quiet;
		}
		goto fail;
	}
	/* No read-ahead: the file is new, and every fault on it read ahead (zero-filled) large
	 * folios beyond the page written, most of a short run's start-up; chunks are mapped a
	 * run at a time anyway (next_chunk()). */
	madvise(w.base, w.map_size, MADV_RANDOM);
	/* The first size, within the file size limit (a smaller trace fills sooner, and says so) */
	size_t room = HEADER_AREA - sizeof(struct prof_file_header);
	uint32_t kept, data = data_offset_for(header_strings(NULL, room, argc, argv, exe,
							     un.nodename, &kept));
	uint64_t first = data + FIRST_DATA, limit = file_size_limit();
	if (limit < first)
		first = limit / UNIT * UNIT;
	if (first < data + 4 * UNIT) {
		prof_log("the file size limit (ulimit -f: %llu bytes) leaves no room for trace file "
			 "%s; profiling disabled", (unsigned long long)limit, w.path);
		goto fail_quiet;
	}
	int err = posix_fallocate(w.fd, 0, (off_t)first);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(w.fd, (off_t)first) < 0 ? errno : 0;
	if (err) {
		errno = err;
		goto fail;
	}
	w.hdr = (struct prof_file_header *)w.base;
	w.chunk_size = UNIT;
	write_header(ppid, argc, argv, exe, un.nodename, realtime, start, data);
	atomic_store(&w.capacity, (first - data) / UNIT);
	atomic_store(&w.warned_full, 0);
	atomic_store(&w.final, 0);
	return 0;
fail:
	prof_log("cannot set up trace file %s: %s; profiling disabled", w.path, strerror(errno));
fail_quiet:
	drop_stale();
	if (w.base)
		munmap(w.base, w.map_size);
	w.base = NULL;
	w.hdr = NULL;
	close(w.fd);
	unlink(w.path);
	w.fd = -1;
	return -1;
}

/* The mapped file, for the exit-time leak scan (leakscan.c): its data units, and the whole
 * mapping, which is never a root. */
int prof_writer_units(const char **data, uint64_t *units, uint32_t *unit_size,
		      uintptr_t *map_lo, uintptr_t *map_hi)
{
	if (!w.hdr)
		return -1;
	*data = w.base + w.hdr->data_offset;
	*units = __atomic_load_n(&w.hdr->chunks_claimed, __ATOMIC_ACQUIRE);
	if (*units > atomic_load(&w.capacity))
		*units = atomic_load(&w.capacity);
	*unit_size = w.chunk_size;
	*map_lo = (uintptr_t)w.base;
	*map_hi = (uintptr_t)w.base + w.map_size;
	return 0;
}

uint64_t prof_writer_lost(void)
{
	return w.hdr ? __atomic_load_n(&w.hdr->lost_records, __ATOMIC_RELAXED) : 0;
}

/* The program lowers its address-space limit to `limit` bytes: the mapping beyond what the
 * file holds now, and beyond a sixteenth of the new limit, is given back before the limit
 * takes effect (the trace then fills sooner, and says so). Under w.growing: no thread is
 * extending the file, and none uses a byte past it. */
void prof_writer_fit_limit(uint64_t limit)
{
	if (!w.hdr)
		return;
	growing_take(1);
	uint64_t used = w.hdr->data_offset + atomic_load(&w.capacity) * w.chunk_size;
	uint64_t keep = limit / TRACE_VM_SHARE > used ? limit / TRACE_VM_SHARE : used;
	keep = (keep + 4095) & ~(uint64_t)4095;
	if (keep < w.map_size && munmap(w.base + keep, w.map_size - keep) == 0)
		w.map_size = keep;
	growing_drop();
}

/* Whether a thread is extending the file now (grow() holds w.growing): the leak scan lets
 * the threads it stopped go on if so, since the records it writes may need more file. */
int prof_writer_growing(void)
{
	if (growing_take(0) < 0)
		return 1;
	growing_drop();
	return 0;
}

/* Ends the trace: no chunk is handed out any more, and the file is cut to the chunks used.
 * Threads still running may finish records in chunks they hold; those stay readable. A tail
 * of at most KEEP_TAIL unused bytes stays (zeros, which readers skip, and prof pack drops):
 * cutting it was a short process's costliest system call (on ext4 mounted with discard,
 * 80 us of the 1.2 ms libprof added to a bash subshell; 16 us on tmpfs). */
#define KEEP_TAIL FIRST_DATA
void prof_writer_close(int other_threads_alive)
{
	if (!w.hdr)
		return;
	prof_writer_thread_done(&prof_self);  /* the closing thread's losses */
	uint64_t reserved = w.hdr->data_offset + atomic_exchange(&w.capacity, 0) * w.chunk_size;
	uint64_t used = w.hdr->data_offset +
			__atomic_load_n(&w.hdr->chunks_claimed, __ATOMIC_SEQ_CST) * w.chunk_size;
	int fd = writer_fd();
	if (fd < 0 || reserved - used <= KEEP_TAIL)
		return;
	if (other_threads_alive)  /* they may still touch claimed chunks: free the rest only */
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)used,
			  (off_t)(w.map_size - used));
	else if (ftruncate(fd, (off_t)used) < 0)
		prof_dbg(1, "cannot truncate %s: %s", w.path, strerror(errno));
}

/* In a fork child that goes on inside a hook (prof_fork_child()): the range stays mapped, as
 * scratch memory of the child's, and nothing more is claimed. */
void prof_writer_detach(void)
{
	if (w.base)
		mmap(w.base, w.map_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	if (w.fd >= 0)
		close(w.fd);
	w.fd = -1;
	atomic_store(&w.capacity, 0);
}

/* In a fork child: the mapping and descriptor belong to the parent's trace. Forget them (the
 * parent keeps its own) and the path, so the child can start a trace of its own. The mapping
 * stays, unused, until the child's own is mapped in its place (prof_writer_open(): one call
 * where unmapping it first made two, of some 10 us each), or is unmapped if the child makes
 * none (prof_writer_drop_stale()). */
void prof_writer_forget(void)
{
	drop_stale();
	if (w.base) {
		w.stale = w.base;
		w.stale_size = w.map_size;
	}
	if (w.fd >= 0)
		close(w.fd);
	w.base = NULL;
	w.hdr = NULL;
	w.fd = -1;
	atomic_store(&w.capacity, 0);
	atomic_flag_clear(&w.growing);
	for (uint32_t i = 0; i < POOL_SLOTS; i++)
		__atomic_store_n(&w.pool[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w.pooled, 0, __ATOMIC_RELAXED);
	/* The CUDA bases of the parent's threads are nobody's here, this thread's included (it
	 * takes one again at its next launch). Read before written: a shell's children leave the
	 * page alone. */
	prof_clear(cuda_bases_taken, sizeof(cuda_bases_taken));
	cuda_mine = NULL;
	cuda_mine_state = 0;
}
