/* The trace writer: one mmap'd file per process, chunks claimed without a lock, records
 * committed by a release store of their prefix so a SIGKILL leaves a readable file. */
#include "prof.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define HEADER_AREA (64u * 1024u)  /* header + strings; argv past this is cut */

static struct {
	int fd;
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];
	char *base;                        /* the whole reserved mapping */
	uint64_t map_size;
	struct prof_file_header *hdr;
	_Atomic uint64_t capacity;          /* chunks backed by the file; 0 once closing */
	atomic_flag growing;
	_Atomic int warned_full;
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

/* Our descriptor may have been closed (or reused) by a program that closes every fd:
 * check it is still our file, reopen it by path if not. Pairs with grow(). */
static int writer_fd(void)
{
	struct stat st;
	if (w.fd >= 0 && fstat(w.fd, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino)
		return w.fd;
	int fd = prof_fd_hide(open(w.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_dev != w.dev || st.st_ino != w.ino) {
		close(fd);
		return -1;
	}
	w.fd = fd;
	return fd;
}

/* Makes the file long enough for `chunks` chunks: disk blocks are reserved now (fallocate),
 * so a full disk is an error here rather than a SIGBUS in the middle of a record. */
static int extend_file(uint64_t chunks)
{
	uint64_t size = w.hdr->data_offset + chunks * w.hdr->chunk_size;
	if (size > w.map_size)
		return -EFBIG;
	int fd = writer_fd();
	if (fd < 0)
		return -EBADF;
	int err = posix_fallocate(fd, 0, (off_t)size);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(fd, (off_t)size) < 0 ? errno : 0;
	return -err;
}

static void warn_full(int err)
{
	if (atomic_exchange(&w.warned_full, 1))
		return;
	if (err == -EFBIG)
		prof_log("trace %s reached its size limit (PROF_MAX_SIZE); later events are counted as lost",
			 w.path);
	else {
		prof_log("cannot extend trace %s (%s); profiling disabled", w.path, strerror(-err));
		atomic_store(&prof_active, 0);
		w.hdr->state = PROF_STATE_DISABLED;
	}
}

/* Adds file space for more chunks. Only one thread grows at a time; a signal handler never
 * waits for it (the thread it interrupted may be the one growing). */
static int grow(uint64_t need, int may_wait)
{
	while (atomic_flag_test_and_set_explicit(&w.growing, memory_order_acquire)) {
		if (!may_wait)
			return -1;
		sched_yield();
	}
	int rc = 0;
	uint64_t cap = atomic_load(&w.capacity);
	if (cap == 0) {
		rc = -1;  /* closing */
	} else if (cap <= need) {
		uint64_t step = cap / 8 < 16 ? 16 : cap / 8;  /* chunks; at least 1 MiB at 64 KiB */
		if (step > 1024)
			step = 1024;
		uint64_t target = need + step;
		int err = extend_file(target);
		if (err == -EFBIG && need + 1 <= (w.map_size - w.hdr->data_offset) / w.hdr->chunk_size)
			err = extend_file(target = (w.map_size - w.hdr->data_offset) / w.hdr->chunk_size);
		if (err < 0) {
			warn_full(err);
			rc = -1;
		} else {
			atomic_store(&w.capacity, target);
		}
	}
	atomic_flag_clear_explicit(&w.growing, memory_order_release);
	return rc;
}

/* Claims the next free chunk: one CAS on the header's counter. Returns NULL when no space. */
static char *claim_chunk(int may_wait)
{
	_Atomic uint64_t *claimed = (_Atomic uint64_t *)&w.hdr->chunks_claimed;
	uint64_t n = atomic_load(claimed);
	for (;;) {
		uint64_t cap = atomic_load(&w.capacity);
		if (cap == 0)
			return NULL;
		if (n >= cap) {
			if (grow(n, may_wait) < 0)
				return NULL;
			n = atomic_load(claimed);
			continue;
		}
		if (atomic_compare_exchange_weak(claimed, &n, n + 1))
			break;
	}
	/* Pairs with prof_writer_close(): once it has zeroed capacity and read the counter, a
	 * chunk claimed after that read may lie past the end it truncates to: don't use it. */
	if (atomic_load(&w.capacity) == 0)
		return NULL;
	return w.base + w.hdr->data_offset + n * (uint64_t)w.hdr->chunk_size;
}

static void count_lost(struct prof_stream *s)
{
	s->lost++;
	atomic_fetch_add((_Atomic uint64_t *)&w.hdr->lost_records, 1);
}

/* Space for one record of `size` bytes (a multiple of 8) in the thread's current stream, or
 * NULL (the record is counted as lost). Fill it, then prof_commit() it. */
void *prof_reserve(struct prof_thread *th, uint32_t size)
{
	struct prof_stream *s = &th->streams[th->in_signal > 0];
	uint32_t chunk_size = w.hdr->chunk_size;
	if (likely(s->chunk && s->used + size <= chunk_size)) {
		void *p = s->chunk + s->used;
		s->used += size;
		return p;
	}
	if (size + sizeof(struct prof_chunk_header) + sizeof(struct prof_rec_lost) > chunk_size) {
		count_lost(s);
		return NULL;
	}
	char *c = claim_chunk(th->in_signal == 0);
	if (!c) {
		count_lost(s);
		return NULL;
	}
	/* One call maps the whole chunk, instead of a page fault every 4 KiB while it fills. */
	madvise(c, chunk_size, MADV_POPULATE_WRITE);
	struct prof_chunk_header *ch = (struct prof_chunk_header *)c;
	ch->stream = th->serial * 2u + (th->in_signal > 0);
	ch->seq = s->chunk ? s->seq + 1 : 0;
	ch->tid = th->tid;
	atomic_store_explicit((_Atomic uint32_t *)&ch->magic, PROF_CHUNK_MAGIC, memory_order_release);
	s->seq = ch->seq;
	s->chunk = c;
	s->used = sizeof(*ch);
	if (s->lost) {
		struct prof_rec_lost *l = (struct prof_rec_lost *)(c + s->used);
		l->records = s->lost;
		s->used += sizeof(*l);
		prof_commit(l, PROF_REC_LOST, 0, sizeof(*l), prof_now());
		s->lost = 0;
	}
	void *p = c + s->used;
	s->used += size;
	return p;
}

/* Publishes a filled record: the prefix's first 8 bytes go last, with release order, so a
 * reader (or a SIGKILL) never sees a half-written record as valid. */
void prof_commit(void *rec, unsigned type, unsigned flags, uint32_t size, uint64_t time)
{
	struct prof_rec *r = rec;
	r->time = time;
	uint64_t word = (uint64_t)(uint16_t)type | (uint64_t)(uint16_t)flags << 16 |
			(uint64_t)size << 32;
	atomic_store_explicit((_Atomic uint64_t *)rec, word, memory_order_release);
}

void prof_writer_set_state(enum prof_state state)
{
	if (w.hdr)
		atomic_store((_Atomic uint32_t *)&w.hdr->state, state);
}

static uint64_t reserve_size(void)
{
	uint64_t want = prof_cfg.max_size;
	if (want < 4u << 20)
		want = 4u << 20;
	return want;
}

/* Fills the header and its strings: exe, host, argv. */
static uint32_t write_header(uint32_t ppid, int argc, char **argv, const char *exe,
			     const char *host, uint64_t realtime, uint64_t start)
{
	struct prof_file_header *h = w.hdr;
	char *strings = (char *)h + sizeof(*h);
	size_t cap = HEADER_AREA - sizeof(*h), len = 0;
	const char *fixed[2] = { exe, host };
	for (int i = 0; i < 2; i++) {
		len = put(strings, len, cap - 1, fixed[i]);
		len++;
	}
	uint32_t kept = 0;
	for (int i = 0; i < argc && argv && argv[i]; i++) {
		size_t l = strlen(argv[i]);
		if (len + l + 1 > cap)
			break;
		memcpy(strings + len, argv[i], l + 1);
		len += l + 1;
		kept++;
	}
	const char *rank = rank_from_env();
	h->version = PROF_FORMAT_VERSION;
	h->min_version = PROF_FORMAT_MIN_VERSION;
	h->header_size = (uint32_t)(sizeof(*h) + len);
	h->features = 0;
	h->chunk_size = PROF_DEFAULT_CHUNK_SIZE;
	h->data_offset = HEADER_AREA;
	h->pid = (uint32_t)getpid();
	h->ppid = ppid;
	h->start_realtime_ns = realtime;
	h->start_ns = start;
	h->clock_id = CLOCK_MONOTONIC;
	h->state = PROF_STATE_RUNNING;
	h->events = prof_cfg.events;
	h->stack_depth = prof_cfg.stack_depth;
	h->rank = rank ? atoi(rank) : -1;
	h->argc = kept;
	h->strings_offset = sizeof(*h);
	h->strings_size = (uint32_t)len;
	h->cpu_hz = (prof_cfg.events & PROF_EV_CPU) ? prof_cfg.cpu_hz : 0;
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, PROF_MAGIC, memory_order_release);
	return kept;
}

/* Starts this process's trace. Returns 0, or -1 after saying why once on stderr. */
int prof_writer_open(uint32_t ppid, int argc, char **argv)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	const char *prog = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	struct utsname un;
	if (uname(&un) < 0)
		strcpy(un.nodename, "?");
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t realtime = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	uint64_t start = prof_now();

	char want[PATH_MAX];
	expand_template(want, sizeof(want), prof_cfg.output, prog, un.nodename, realtime);
	w.fd = create_file(want, w.path, sizeof(w.path));
	if (w.fd < 0) {
		prof_log("cannot create trace file %s: %s; profiling disabled", want, strerror(errno));
		return -1;
	}
	struct stat st;
	fchmod(w.fd, 0600);
	if (fstat(w.fd, &st) < 0)
		goto fail;
	w.dev = st.st_dev;
	w.ino = st.st_ino;
	/* Reserve address space for the largest trace; back it with file space as it fills. */
	for (w.map_size = reserve_size(); w.map_size >= (4u << 20); w.map_size /= 2) {
		w.base = mmap(NULL, w.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, w.fd, 0);
		if (w.base != MAP_FAILED)
			break;
	}
	if (w.base == MAP_FAILED) {
		w.base = NULL;
		goto fail;
	}
	int err = posix_fallocate(w.fd, 0, HEADER_AREA + 16ull * PROF_DEFAULT_CHUNK_SIZE);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(w.fd, HEADER_AREA + 16ull * PROF_DEFAULT_CHUNK_SIZE) < 0 ? errno : 0;
	if (err) {
		errno = err;
		goto fail;
	}
	w.hdr = (struct prof_file_header *)w.base;
	write_header(ppid, argc, argv, exe, un.nodename, realtime, start);
	atomic_store(&w.capacity, 16);
	atomic_store(&w.warned_full, 0);
	return 0;
fail:
	prof_log("cannot set up trace file %s: %s; profiling disabled", w.path, strerror(errno));
	if (w.base)
		munmap(w.base, w.map_size);
	w.base = NULL;
	w.hdr = NULL;
	close(w.fd);
	unlink(w.path);
	w.fd = -1;
	return -1;
}

/* Ends the trace: no chunk is handed out any more, and the file is cut to the chunks used.
 * Threads still running may finish records in chunks they hold; those stay readable. */
void prof_writer_close(int other_threads_alive)
{
	if (!w.hdr)
		return;
	atomic_store(&w.capacity, 0);
	uint64_t used = w.hdr->data_offset +
			atomic_load((_Atomic uint64_t *)&w.hdr->chunks_claimed) * w.hdr->chunk_size;
	int fd = writer_fd();
	if (fd < 0)
		return;
	if (other_threads_alive)  /* they may still touch claimed chunks: free the rest only */
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)used,
			  (off_t)(w.map_size - used));
	else if (ftruncate(fd, (off_t)used) < 0)
		prof_dbg(1, "cannot truncate %s: %s", w.path, strerror(errno));
}

/* In a fork child: the mapping and descriptor belong to the parent's trace. Unmap them (the
 * parent keeps its own) and forget the path, so the child can start a trace of its own. */
void prof_writer_forget(void)
{
	if (w.base)
		munmap(w.base, w.map_size);
	if (w.fd >= 0)
		close(w.fd);
	w.base = NULL;
	w.hdr = NULL;
	w.fd = -1;
	atomic_store(&w.capacity, 0);
	atomic_flag_clear(&w.growing);
}
