/* The I/O family's descriptor table: descriptor number -> file id, seeded from /proc/self/fd
 * when a process first does I/O, and the names given to ids (absolute paths, pipe:[inode],
 * socket endpoints). Lock-free reads; never allocates (the table is mmap'd, names are built
 * in the caller's stack buffers). */
#include "io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define TABLE_MIN (1u << 16)
#define TABLE_MAX (1u << 24)  /* 64 MiB of address space at most, touched as used */

_Atomic uint32_t *io_fd_table;
uint32_t io_fd_table_size;
_Atomic uint32_t io_fd_pid;           /* the process whose descriptors the table holds */
static _Atomic uint32_t next_id = 1;
static _Atomic uint32_t fd_high;      /* 1 + the highest descriptor ever stored */
static atomic_flag setting_up = ATOMIC_FLAG_INIT;

static void note_high(int fd)
{
	uint32_t want = (uint32_t)fd + 1, cur = atomic_load_explicit(&fd_high, memory_order_relaxed);
	while (cur < want && !atomic_compare_exchange_weak(&fd_high, &cur, want))
		;
}

/* ---- names ------------------------------------------------------------------------------ */

static size_t put_str(char *buf, size_t len, size_t cap, const char *s)
{
	while (*s && len + 1 < cap)
		buf[len++] = *s++;
	buf[len < cap ? len : cap - 1] = '\0';
	return len;
}

static size_t put_uint(char *buf, size_t len, size_t cap, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	while (n > 0 && len + 1 < cap)
		buf[len++] = tmp[--n];
	buf[len < cap ? len : cap - 1] = '\0';
	return len;
}

static int proc_fd_link(int fd, char *buf, size_t cap)
{
	char link[48];
	size_t n = put_str(link, 0, sizeof(link), prof_proc_self());
	n = put_str(link, n, sizeof(link), "/fd/");
	put_uint(link, n, sizeof(link), (unsigned)fd);
	ssize_t got = readlink(link, buf, cap - 1);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	return 0;
}

/* "tcp 127.0.0.1:8080", "udp6 [::1]:53", "unix /run/x.sock", "unix @abstract"; "" when the
 * address says nothing (unnamed unix socket, unknown family). */
void io_name_of_sockaddr(const struct sockaddr *sa, socklen_t len, int type, char *buf,
			 size_t cap)
{
	buf[0] = '\0';
	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return;
	const char *proto = type == SOCK_STREAM ? "tcp" : type == SOCK_DGRAM ? "udp" : "ip";
	char host[INET6_ADDRSTRLEN];
	size_t n = 0;
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const void *)sa;
		if (len < (socklen_t)sizeof(*in) || !inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)))
			return;
		n = put_str(buf, n, cap, proto);
		n = put_str(buf, n, cap, " ");
		n = put_str(buf, n, cap, host);
		n = put_str(buf, n, cap, ":");
		put_uint(buf, n, cap, ntohs(in->sin_port));
		return;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		if (len < (socklen_t)sizeof(*in6) ||
		    !inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			return;
		n = put_str(buf, n, cap, proto);
		n = put_str(buf, n, cap, "6 [");
		n = put_str(buf, n, cap, host);
		n = put_str(buf, n, cap, "]:");
		put_uint(buf, n, cap, ntohs(in6->sin6_port));
		return;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const void *)sa;
		size_t plen = (size_t)len - offsetof(struct sockaddr_un, sun_path);
		if (len <= (socklen_t)offsetof(struct sockaddr_un, sun_path) || plen == 0)
			return;  /* unnamed */
		if (plen > sizeof(un->sun_path))
			plen = sizeof(un->sun_path);
		n = put_str(buf, n, cap, "unix ");
		size_t i = 0;
		if (un->sun_path[0] == '\0') {  /* abstract: not NUL-terminated */
			n = put_str(buf, n, cap, "@");
			i = 1;
		}
		for (; i < plen && un->sun_path[i] && n + 1 < cap; i++)
			buf[n++] = un->sun_path[i] >= 0x20 ? un->sun_path[i] : '?';
		buf[n] = '\0';
		return;
	}
	default:
		return;
	}
}

/* A socket's best name: its peer if connected, its address if listening, else what the
 * kernel calls it (socket:[inode], already in buf). */
static void name_socket(int fd, char *buf, size_t cap)
{
	int type = 0, listening = 0;
	socklen_t l = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0)
		return;
	struct sockaddr_storage ss;
	char name[256];
	socklen_t len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
		io_name_of_sockaddr((struct sockaddr *)&ss, len, type, name, sizeof(name));
		if (name[0]) {
			put_str(buf, 0, cap, name);
			return;
		}
	}
	l = sizeof(listening);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening) {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
			io_name_of_sockaddr((struct sockaddr *)&ss, len, type, name, sizeof(name));
			if (name[0]) {
				size_t n = put_str(buf, 0, cap, name);
				put_str(buf, n, cap, " (listening)");
			}
		}
	}
}

int io_name_of_fd(int fd, char *buf, size_t cap)
{
	if (proc_fd_link(fd, buf, cap) < 0)
		return -1;
	if (!strncmp(buf, "socket:[", 8))
		name_socket(fd, buf, cap);
	return 0;
}

/* A pipe's name as /proc/self/fd links it ("pipe:[inode]"), from one fstat: reading the link
 * was a path walk through /proc for each end of every pipe (a shell's command substitution
 * makes one). -1 if fd is no pipe. */
int io_name_of_pipe(int fd, char *buf, size_t cap)
{
	struct stat st;
	if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISFIFO(st.st_mode))
		return -1;
	size_t n = put_str(buf, 0, cap, "pipe:[");
	n = put_uint(buf, n, cap, (unsigned long)st.st_ino);
	put_str(buf, n, cap, "]");
	return 0;
}

/* Removes "." and ".." components and doubled slashes from an absolute path, in place. */
static void normalize(char *p)
{
	char *out = p;  /* p[0] == '/' */
	const char *in = p;
	while (*in) {
		while (*in == '/')
			in++;
		const char *end = in;
		while (*end && *end != '/')
			end++;
		size_t n = (size_t)(end - in);
		if (n == 0)
			break;
		if (n == 1 && in[0] == '.') {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in = end;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

/* path made absolute against dirfd (AT_FDCWD: the working directory), as it is now. */
static void io_abs_path(int dirfd, const char *path, char *buf, size_t cap)
{
	if (!path) {
		put_str(buf, 0, cap, "?");
		return;
	}
	if (path[0] == '/') {
		put_str(buf, 0, cap, path);
		normalize(buf);
		return;
	}
	int ok = dirfd == AT_FDCWD ? getcwd(buf, cap) != NULL : proc_fd_link(dirfd, buf, cap) == 0;
	if (!ok || buf[0] != '/') {
		put_str(buf, 0, cap, path);
		return;
	}
	size_t n = strlen(buf);
	n = put_str(buf, n, cap, "/");
	put_str(buf, n, cap, path);
	normalize(buf);
}

/* ---- names known ------------------------------------------------------------------------
 * The latest name given to each of a few descriptors, by descriptor number: a fork child,
 * whose descriptors are its parent's, names them from here instead of asking the kernel
 * (a readlink of /proc/self/fd/N costs a new process some 10 us each; a bash subshell has a
 * dozen). Kept as the hooks see descriptors open, close and dup, as io_fd_table is (a slot
 * of id 0 is empty); a slot being written has an odd seq (a writer racing another for the
 * slot leaves it to that one), and a fork in the middle of a write leaves it odd: not used. */
#define KNOWN_SLOTS 64
#define KNOWN_NAME 232
static PROF_BULK struct known_name {
	_Atomic uint32_t seq;
	int32_t fd;
	uint32_t id;
	char name[KNOWN_NAME];
} known[KNOWN_SLOTS];

static struct known_name *known_claim(int fd)
{
	struct known_name *k = &known[(unsigned)fd % KNOWN_SLOTS];
	uint32_t seq = atomic_load_explicit(&k->seq, memory_order_relaxed);
	if ((seq & 1) || !atomic_compare_exchange_strong(&k->seq, &seq, seq + 1))
		return NULL;
	return k;
}

static void known_release(struct known_name *k)
{
	atomic_fetch_add_explicit(&k->seq, 1, memory_order_release);
}

static void known_set(int fd, uint32_t id, const char *name)
{
	size_t len = strlen(name);
	struct known_name *k = known_claim(fd);
	if (!k)
		return;
	k->fd = len < KNOWN_NAME ? fd : -1;  /* a longer name: asked of the kernel */
	k->id = id;
	memcpy(k->name, name, len < KNOWN_NAME ? len + 1 : 1);
	known_release(k);
}

static void known_forget(int fd)
{
	struct known_name *k = &known[(unsigned)fd % KNOWN_SLOTS];
	if (k->fd != fd || !(k = known_claim(fd)))
		return;
	if (k->fd == fd) {
		k->fd = -1;
		k->id = 0;
	}
	known_release(k);
}

/* fd's name as the hooks last saw it given, into buf; 0, or -1 if not known. */
static int known_get(int fd, char *buf, size_t cap)
{
	const struct known_name *k = &known[(unsigned)fd % KNOWN_SLOTS];
	uint32_t seq = atomic_load_explicit(&k->seq, memory_order_acquire);
	if ((seq & 1) || k->fd != fd || !k->id || cap < KNOWN_NAME)
		return -1;
	memcpy(buf, k->name, KNOWN_NAME);
	buf[KNOWN_NAME - 1] = '\0';
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&k->seq, memory_order_relaxed) == seq ? 0 : -1;
}

/* newfd became a copy of the descriptor with id: its name, if known. */
static void known_dup(int newfd, uint32_t id)
{
	char name[KNOWN_NAME];
	for (int i = 0; i < KNOWN_SLOTS; i++) {
		const struct known_name *k = &known[i];
		if (id && k->id == id && k->fd >= 0 && known_get(k->fd, name, sizeof(name)) == 0) {
			known_set(newfd, id, name);
			return;
		}
	}
	known_forget(newfd);
}

/* ---- records ---------------------------------------------------------------------------- */

static void write_name(struct prof_thread *th, uint32_t id, int fd, unsigned op, const char *name,
		       int64_t result, uint64_t t0, uint64_t dur, uint32_t stack)
{
	if (fd >= 0 && id)
		known_set(fd, id, name);
	if (!(prof_cfg.events & PROF_EV_IO))
		return;  /* the hooks run for the http family alone: ids, no records */
	size_t len = strnlen(name, IO_NAME_MAX - 1);
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_io_name) + len + 1));
	th = prof_thread_get();
	struct prof_rec_io_name *r = prof_reserve(th, size);
	if (!r)
		return;
	r->file = id;
	r->fd = fd;
	r->result = result;
	r->duration_ns = dur;
	r->stack = stack;
	r->pad = 0;
	memset(r->path, 0, size - sizeof(*r));
	memcpy(r->path, name, len);
	prof_commit(r, PROF_REC_IO_NAME, op, size, t0);
}

/* Names fd if nobody has (op: INHERITED or FOUND). Returns its id, 0 if it is not open. */
static uint32_t discover(struct prof_thread *th, int fd, unsigned op)
{
	if ((unsigned)fd >= io_fd_table_size)
		return 0;
	uint32_t expected = 0;
	if (fd == prof_writer_fd()) {
		atomic_compare_exchange_strong(&io_fd_table[fd], &expected, IO_FD_OURS);
		return atomic_load(&io_fd_table[fd]);
	}
	char name[IO_NAME_MAX];
	if ((op != PROF_IO_INHERITED || known_get(fd, name, sizeof(name)) < 0) &&
	    io_name_of_fd(fd, name, sizeof(name)) < 0)
		return 0;
	uint32_t id = atomic_fetch_add(&next_id, 1);
	if (!atomic_compare_exchange_strong(&io_fd_table[fd], &expected, id))
		return expected;  /* named meanwhile by another thread */
	note_high(fd);
	write_name(th, id, fd, op, name, 0, prof_now(), 0, 0);
	return id;
}

uint32_t io_fd_id(struct prof_thread *th, int fd)
{
	uint32_t id = io_fd_peek(fd);
	return id ? id : discover(th, fd, PROF_IO_FOUND);
}

/* io_fd_opened() of a descriptor to be named by the kernel. Apart: the name's buffer is only
 * on the stack while it is needed. */
static __attribute__((noinline)) uint32_t opened_unnamed(struct prof_thread *th, int fd,
							 unsigned op, int64_t result, uint64_t t0,
							 uint64_t dur, uint32_t stack)
{
	char buf[IO_NAME_MAX];
	if (io_name_of_fd(fd, buf, sizeof(buf)) < 0)
		put_str(buf, 0, sizeof(buf), "?");
	return io_fd_opened(th, fd, op, buf, result, t0, dur, stack);
}

uint32_t io_fd_opened(struct prof_thread *th, int fd, unsigned op, const char *name,
		      int64_t result, uint64_t t0, uint64_t dur, uint32_t stack)
{
	if (!name)
		return opened_unnamed(th, fd, op, result, t0, dur, stack);
	uint32_t id = atomic_fetch_add(&next_id, 1);
	if ((unsigned)fd < io_fd_table_size) {
		atomic_store_explicit(&io_fd_table[fd], id, memory_order_relaxed);
		note_high(fd);
	}
	write_name(th, id, fd, op, name, result, t0, dur, stack);
	return id;
}

void io_name_failed(struct prof_thread *th, unsigned op, const char *name, int64_t result,
		    uint64_t t0, uint64_t dur, uint32_t stack)
{
	write_name(th, 0, -1, op, name, result, t0, dur, stack);
}

__attribute__((noinline)) void io_path_failed(struct prof_thread *th, unsigned op, int dirfd,
					      const char *path, int64_t result, uint64_t t0,
					      uint64_t dur, uint32_t stack)
{
	char name[IO_NAME_MAX];
	io_abs_path(dirfd, path, name, sizeof(name));
	write_name(th, 0, -1, op, name, result, t0, dur, stack);
}

void io_fd_rename(struct prof_thread *th, int fd, uint32_t id, unsigned op, const char *name,
		  int64_t result, uint64_t t0, uint64_t dur, uint32_t stack)
{
	write_name(th, id, fd, op, name, result, t0, dur, stack);
}

unsigned io_fd_high(void)
{
	uint32_t high = atomic_load_explicit(&fd_high, memory_order_relaxed);
	return high < io_fd_table_size ? high : io_fd_table_size;
}

void io_fd_closed(int fd, uint32_t id)
{
	known_forget(fd);
	if ((unsigned)fd < io_fd_table_size)
		atomic_compare_exchange_strong(&io_fd_table[fd], &id, 0);
}

void io_fd_dup(int newfd, uint32_t id)
{
	known_dup(newfd, id);
	if ((unsigned)newfd >= io_fd_table_size)
		return;
	atomic_store_explicit(&io_fd_table[newfd], id, memory_order_relaxed);
	note_high(newfd);
}

/* ---- set-up ----------------------------------------------------------------------------- */

static int make_table(void)
{
	struct rlimit rl;
	uint64_t n = TABLE_MIN;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		uint64_t lim = rl.rlim_max == RLIM_INFINITY ? TABLE_MAX : rl.rlim_max;
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > lim)
			lim = rl.rlim_cur;
		if (lim > n)
			n = lim;
	}
	if (n > TABLE_MAX)
		n = TABLE_MAX;
	n = prof_vm_budget(n * sizeof(uint32_t), 64) / sizeof(uint32_t);  /* ulimit -v: a share */
	if (n < TABLE_MIN)
		n = TABLE_MIN;
	void *p = mmap(NULL, n * sizeof(uint32_t), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	prof_own_memory(p, n * sizeof(uint32_t));  /* file ids: never roots of the leak scan */
	io_fd_table = p;
	io_fd_table_size = (uint32_t)n;
	return 0;
}

/* Names every descriptor the process has now (inherited ones, and in a fork child the
 * parent's), with raw system calls: nothing here reaches a hook or malloc. */
static void seed(struct prof_thread *th)
{
	char path[32];
	put_str(path, put_str(path, 0, sizeof(path), prof_proc_self()), sizeof(path), "/fd");
	int dir = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		for (int fd = 0; fd < 3; fd++)  /* no /proc: at least the standard three */
			discover(th, fd, PROF_IO_INHERITED);
		return;
	}
	char buf[1024];  /* not 4 KiB: discover() below takes that much again */
	long n;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			long fd = 0;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
				fd = fd * 10 + (*c - '0');
			if (fd != dir && fd < (long)io_fd_table_size)
				discover(th, (int)fd, PROF_IO_INHERITED);
		}
	}
	syscall(SYS_close, dir);
}

/* A fork child's descriptors are its parent's at the fork: those the parent's table holds
 * that are still open here (one fcntl each) are named anew, in the child's own trace; any the
 * parent had not met (opened by a raw system call) are found at their first use. Listing
 * /proc/self/fd instead made the kernel build an inode for each: some 50 us of a subshell's
 * life. Under setting_up, at the child's first recorded call, before any other. */
static void seed_inherited(struct prof_thread *th, uint32_t high)
{
	for (uint32_t fd = 0; fd < high && fd < io_fd_table_size; fd++) {
		uint32_t was = atomic_exchange_explicit(&io_fd_table[fd], 0, memory_order_relaxed);
		if (was && was != IO_FD_OURS && syscall(SYS_fcntl, (int)fd, F_GETFD) >= 0)
			discover(th, (int)fd, PROF_IO_INHERITED);
	}
}

static int table_inherited;  /* a fork child's table: its parent's, not yet named anew */

/* A fork child's trace is new: the ids its parent gave are not in it (io_ready()). */
void prof_io_fork_child(void)
{
	table_inherited = io_fd_table != NULL;
	atomic_store(&io_fd_pid, 0);
}

/* Once per process: at its first recorded I/O call (and again in a fork child, whose trace
 * is new: the ids its parent gave are not in it). Other threads wait the few microseconds;
 * signals wait too (prof_signals_block()). */
static void setup_table(struct prof_thread *th, uint32_t pid)
{
	if (!io_fd_table) {
		if (make_table() < 0) {  /* events then carry descriptor numbers only */
			atomic_store(&io_fd_pid, pid);
			return;
		}
	} else if (!table_inherited) {  /* another process's, without a fork handler to say so */
		memset((void *)io_fd_table, 0, atomic_load(&fd_high) * sizeof(uint32_t));
	}
	uint32_t high = atomic_exchange(&fd_high, 0);
	atomic_store(&next_id, 1);
	if (table_inherited)
		seed_inherited(th, high);
	else
		seed(th);
	table_inherited = 0;
	atomic_store(&io_fd_pid, pid);
}

void io_fd_setup(struct prof_thread *th)
{
	uint32_t pid = prof_writer_pid();
	sigset_t saved;
	int blocked = prof_signals_block(&saved);
	while (atomic_flag_test_and_set_explicit(&setting_up, memory_order_acquire)) {
		if (atomic_load(&io_fd_pid) == pid) {
			prof_signals_restore(blocked, &saved);
			return;
		}
		sched_yield();
	}
	if (atomic_load(&io_fd_pid) != pid) {
		int err = errno;  /* before the program's call: a failed lookup must not show */
		setup_table(th, pid);
		errno = err;
	}
	atomic_flag_clear_explicit(&setting_up, memory_order_release);
	prof_signals_restore(blocked, &saved);
}
