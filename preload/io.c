/* I/O hooks: descriptor calls (open ... mmap), sockets and stdio. Each call the program makes
 * is an IO_CALL record (or IO_NAME for a call that names a descriptor) with its result,
 * duration and stack; results and errno are exactly the real function's.
 *
 * Guards. prof_recording() sends our own work (in_hook) straight through. The real call is
 * made with in_hook as the program had it, so what libc allocates inside fopen or getline is
 * the program's allocation, recorded as valgrind sees it; a separate per-thread mark (io_busy)
 * keeps I/O hooks reached from inside a real I/O call from counting the same bytes twice.
 *
 * Stacks. Each call's stack comes from the stack cache (stacks.c), which checks a repeated
 * call path in a few loads and is exact: two paths reaching one call site at the same depth
 * get their own stacks.
 *
 * HTTP. Socket reads and writes also hand the bytes they moved to the http family (http.c),
 * which looks at request and status lines in place; with only `http` recording, the hooks run
 * for it and write no I/O records. */
#undef _FORTIFY_SOURCE
#include "io.h"
#include "db.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc defines these as macros when optimizing; we define the functions. */
#undef fread_unlocked
#undef fwrite_unlocked

/* The fortified entry points (-D_FORTIFY_SOURCE, as Debian builds) and other internal names;
 * glibc declares them only under fortification. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *alen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
char *__fgets_chk(char *s, size_t slen, int n, FILE *f);
char *__fgets_unlocked_chk(char *s, size_t slen, int n, FILE *f);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __printf_chk(int flag, const char *fmt, ...);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f);

/* Every real function, resolved on first use with dlsym(RTLD_NEXT). */
#define IO_REALS(X)                                                                        \
	X(open) X(open64) X(__open_2) X(__open64_2) X(openat) X(openat64) X(__openat_2)    \
	X(__openat64_2) X(creat) X(creat64) X(close) X(close_range) X(closefrom) X(dup)    \
	X(dup2) X(dup3) X(fcntl)                                                           \
	X(fcntl64) X(pipe) X(pipe2) X(read) X(__read_chk) X(write) X(pread) X(pread64)     \
	X(__pread_chk) X(__pread64_chk) X(pwrite) X(pwrite64) X(readv) X(writev) X(preadv) \
	X(preadv64) X(pwritev) X(pwritev64) X(preadv2) X(preadv64v2) X(pwritev2)           \
	X(pwritev64v2) X(lseek) X(lseek64) X(fsync) X(fdatasync) X(sendfile) X(sendfile64) \
	X(copy_file_range) X(mmap) X(mmap64)                                               \
	X(socket) X(socketpair) X(connect) X(listen) X(accept) X(accept4) X(send) X(sendto)          \
	X(sendmsg) X(recv) X(__recv_chk) X(recvfrom) X(__recvfrom_chk) X(recvmsg)          \
	X(shutdown)                                                                        \
	X(fopen) X(fopen64) X(fdopen) X(freopen) X(freopen64) X(fclose) X(fread)           \
	X(fread_unlocked) X(__fread_chk) X(__fread_unlocked_chk) X(fwrite)                 \
	X(fwrite_unlocked) X(fgets) X(fgets_unlocked) X(__fgets_chk)                       \
	X(__fgets_unlocked_chk) X(fputs) X(fputs_unlocked) X(puts) X(fputc) X(putc)        \
	X(putchar) X(fputc_unlocked) X(putc_unlocked) X(putchar_unlocked) X(fgetc) X(getc) \
	X(getchar) X(fgetc_unlocked) X(getc_unlocked) X(getchar_unlocked) X(vfprintf)      \
	X(vprintf) X(__vfprintf_chk) X(__vprintf_chk) X(vdprintf) X(__vdprintf_chk)        \
	X(fflush) X(fflush_unlocked) X(getline) X(getdelim) X(__getdelim)

static struct {
#define IO_X(name) __typeof__(&name) name;
	IO_REALS(IO_X)
#undef IO_X
} real;

static inline void *io_real(void **slot, const char *name)
{
	void *p = *slot;
	if (unlikely(!p))
		*slot = p = dlsym(RTLD_NEXT, name);
	return p;
}

#define REAL(name) ((__typeof__(real.name))io_real((void **)&real.name, #name))

__attribute__((constructor)) static void io_resolve_all(void)
{
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);  /* dlsym may allocate: not the program's */
#define IO_X(name) REAL(name);
	IO_REALS(IO_X)
#undef IO_X
	th->in_hook--;
}

/* ---- recording -------------------------------------------------------------------------- */

static __thread uintptr_t io_busy;  /* inside a real I/O call made from a hook: its mark
				     * (prof_inside_call()) */

#define RET_ADDR ((uintptr_t)__builtin_return_address(0))
#define FRAME_ADDR ((uintptr_t)__builtin_frame_address(0))

/* The stack of a hooked call: ret and frame are the hook's return address and own frame. A
 * loop's next call from the same place has the last call's stack, proven by its words alone
 * (prof_stack_again(): the proof is checked whole, so a signal handler's call in between,
 * which takes the proof for its own, costs a lookup, never a wrong stack). */
static uint32_t io_stack(struct prof_thread *th, uintptr_t ret, uintptr_t frame)
{
	uint32_t id = prof_stack_again(th, ret, (const uintptr_t *)frame, &th->io_proof);
	return id ? id : prof_stack_proven(th, ret, (const uintptr_t *)frame, &th->io_proof);
}

/* One IO_CALL on a descriptor whose id is known (id 0: not open). */
static void record_id(struct prof_thread *th, unsigned op, int fd, uint32_t id, int64_t result,
		      uint64_t t0, uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	if (id == IO_FD_OURS || !(prof_cfg.events & PROF_EV_IO))
		return;
	th = prof_thread_get();
	uint32_t stack = io_stack(th, ret, frame);
	prof_write_io_call(th, op, id, fd, result, t1 - t0, stack, t0);
}

static void record(struct prof_thread *th, unsigned op, int fd, int64_t result, uint64_t t0,
		   uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	uint32_t id = io_fd_peek(fd);
	if (unlikely(id == 0) && result != -EBADF)
		id = io_fd_id(th, fd);
	record_id(th, op, fd, id, result, t0, t1, ret, frame);
}

_Atomic uint64_t prof_tight_io;

static __attribute__((noinline, cold)) struct prof_thread *io_tight(void)
{
	atomic_fetch_add_explicit(&prof_tight_io, 1, memory_order_relaxed);
	return NULL;
}

/* Entry of a recording hook: NULL means "just call the real function". So it is where the
 * thread's stack has too little room left for the names of a call (prof_stack_tight()). */
static inline __attribute__((always_inline)) struct prof_thread *io_begin(void)
{
	struct prof_thread *th = prof_recording(PROF_EV_IO | PROF_EV_HTTP);  /* http: socket data */
	uintptr_t hook = prof_hook_frame();  /* always inline: the hook's */
	if (!th || prof_inside_call(io_busy, hook))
		return NULL;
	/* The setup names every open descriptor: a few KiB more, once, at a call with room. */
	if (unlikely(prof_stack_tight(th, io_setup_pending() ? PROF_IO_SETUP_ROOM : PROF_IO_ROOM)))
		return io_tight();
	prof_hook_enter(th);
	io_ready(th);
	th->in_hook--;
	io_busy = hook;
	return th;
}

/* After the real call: errno as the call left it. Our work runs under in_hook, and counts
 * as own time of any timed call or hold around this one (prof_own_begin()). */
#define IO_END_BEGIN(th) \
	int err_ = errno; \
	io_busy = 0;      \
	uint64_t own_t_ = prof_own_begin(th); \
	prof_hook_enter(th)
#define IO_END_FINISH(th)  \
	(th)->in_hook--;   \
	prof_own_end(th, own_t_); \
	errno = err_

#define RESULT(r, value) ((r) < 0 ? -(int64_t)err_ : (int64_t)(value))

/* A call on one descriptor returning a count (or -1 with errno); after runs once the call is
 * recorded, with r its result and t0, t1 its times. */
#define FD_HOOK_THEN(op, type, fd, call, after)                                            \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		type r = call;                                                             \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                                                  \
		IO_END_BEGIN(th);                                                          \
		record(th, op, fd, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR);            \
		after;                                                                     \
		IO_END_FINISH(th);                                                         \
		return r;                                                                  \
	} while (0)
#define FD_HOOK(op, type, fd, call) FD_HOOK_THEN(op, type, fd, call, (void)0)

/* A read or write on a descriptor that also hands the bytes it moved (at most cap of them,
 * from buf) to the HTTP family (http.c): out is 1 for a write. */
#define DATA_HOOK(op, fd, out, buf, cap, call)                                             \
	FD_HOOK_THEN(op, ssize_t, fd, call,                                                \
		     if (r > 0 && (prof_cfg.events & PROF_EV_HTTP) && (buf))               \
			     http_fd_data(th, fd, out, buf,                                \
					  (size_t)r < (cap) ? (size_t)r : (cap), t0, t1))
#define IOV0(iov, cnt) ((cnt) > 0 ? (iov)[0].iov_base : NULL)
#define IOV0_LEN(iov, cnt) ((cnt) > 0 ? (iov)[0].iov_len : 0)

/* ---- opening and closing ---------------------------------------------------------------- */

static int open_common(struct prof_thread *th, unsigned op, int dirfd, const char *path, int r,
		       uint64_t t0, uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	IO_END_BEGIN(th);
	uint32_t stack = io_stack(th, ret, frame);
	if (r >= 0) {
		io_fd_opened(th, r, op, NULL, r, t0, t1 - t0, stack);
	} else {
		io_path_failed(th, op, dirfd, path, -(int64_t)err_, t0, t1 - t0, stack);
	}
	IO_END_FINISH(th);
	return r;
}

static inline int needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define OPEN_HOOK(op, dirfd, path, call)                                                   \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		int r = call;                                                              \
		return open_common(th, op, dirfd, path, r, t0, prof_timed_end(th, t0, own0_), RET_ADDR,        \
				   FRAME_ADDR);                                            \
	} while (0)

#define MODE_ARG(flags)                                  \
	mode_t mode = 0;                                 \
	if (needs_mode(flags)) {                         \
		va_list ap;                              \
		va_start(ap, flags);                     \
		mode = (mode_t)va_arg(ap, int);          \
		va_end(ap);                              \
	}

PROF_EXPORT int open(const char *path, int flags, ...)
{
	MODE_ARG(flags);
	OPEN_HOOK(PROF_IO_OPEN, AT_FDCWD, path, REAL(open)(path, flags, mode));
}

PROF_EXPORT int open64(const char *path, int flags, ...)
{
	MODE_ARG(flags);
	OPEN_HOOK(PROF_IO_OPEN, AT_FDCWD, path, REAL(open64)(path, flags, mode));
}

PROF_EXPORT int __open_2(const char *path, int flags)
{
	OPEN_HOOK(PROF_IO_OPEN, AT_FDCWD, path, REAL(__open_2)(path, flags));
}

PROF_EXPORT int __open64_2(const char *path, int flags)
{
	OPEN_HOOK(PROF_IO_OPEN, AT_FDCWD, path, REAL(__open64_2)(path, flags));
}

PROF_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags);
	OPEN_HOOK(PROF_IO_OPENAT, dirfd, path, REAL(openat)(dirfd, path, flags, mode));
}

PROF_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags);
	OPEN_HOOK(PROF_IO_OPENAT, dirfd, path, REAL(openat64)(dirfd, path, flags, mode));
}

PROF_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	OPEN_HOOK(PROF_IO_OPENAT, dirfd, path, REAL(__openat_2)(dirfd, path, flags));
}

PROF_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	OPEN_HOOK(PROF_IO_OPENAT, dirfd, path, REAL(__openat64_2)(dirfd, path, flags));
}

PROF_EXPORT int creat(const char *path, mode_t mode)
{
	OPEN_HOOK(PROF_IO_CREAT, AT_FDCWD, path, REAL(creat)(path, mode));
}

PROF_EXPORT int creat64(const char *path, mode_t mode)
{
	OPEN_HOOK(PROF_IO_CREAT, AT_FDCWD, path, REAL(creat64)(path, mode));
}

/* A close not recorded (where the thread's stack is tight, say): the number is forgotten all
 * the same, so that a file opened at it next, unrecorded too, is found later by its own name
 * rather than taken for the one closed here. */
static int close_unrecorded(int fd)
{
	uint32_t id = io_fd_peek(fd);
	int r = REAL(close)(fd);
	if (id && (r == 0 || errno != EBADF))
		io_fd_closed(fd, id);
	return r;
}

PROF_EXPORT int close(int fd)
{
	struct prof_thread *th = io_begin();
	if (!th)
		return close_unrecorded(fd);
	prof_hook_enter(th);
	uint32_t id = io_fd_id(th, fd);  /* named before it goes */
	th->in_hook--;
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	int r = REAL(close)(fd);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	if (r == 0 || err_ != EBADF) {  /* Linux frees the number even when close fails */
		io_fd_closed(fd, id);
		http_fd_closed(th, fd, id);
	}
	record_id(th, PROF_IO_CLOSE, fd, id, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR);
	IO_END_FINISH(th);
	return r;
}

/* close_range and closefrom: every named descriptor in [first, last] that the call closed
 * is closed as by close(): its name goes (a descriptor made later with the same number, by a
 * call we do not hook, is not taken for it), and it gets a CLOSE call, the call's time going
 * to the first. */
static void range_closed(struct prof_thread *th, unsigned first, unsigned last, uint64_t t0,
			 uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	for (unsigned fd = first, high = io_fd_high(); fd < high && fd <= last; fd++) {
		uint32_t id = io_fd_peek((int)fd);
		if (!id)
			continue;
		io_fd_closed((int)fd, id);
		http_fd_closed(th, (int)fd, id);
		record_id(th, PROF_IO_CLOSE, (int)fd, id, 0, t0, t1, ret, frame);
		t0 = t1;
	}
}

/* CLOSE_RANGE_CLOEXEC closes nothing now: the descriptors close at an exec, which starts a
 * new table. */
PROF_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	struct prof_thread *th = io_begin();
	if (!th)  /* a vfork child among others: the table is its parent's */
		return REAL(close_range)(first, last, flags);
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	int r = REAL(close_range)(first, last, flags);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		range_closed(th, first, last, t0, t1, RET_ADDR, FRAME_ADDR);
	IO_END_FINISH(th);
	return r;
}

PROF_EXPORT void closefrom(int lowfd)
{
	if (!REAL(closefrom))
		return;
	struct prof_thread *th = io_begin();
	if (!th) {
		REAL(closefrom)(lowfd);
		return;
	}
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	REAL(closefrom)(lowfd);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	if (lowfd >= 0)
		range_closed(th, (unsigned)lowfd, ~0u, t0, t1, RET_ADDR, FRAME_ADDR);
	IO_END_FINISH(th);
}

/* dup and friends: a DUP call on the old descriptor; the new one shares its id (name). */
static int dup_common(struct prof_thread *th, int oldfd, int r, uint64_t t0, uint64_t t1,
		      uintptr_t ret, uintptr_t frame)
{
	IO_END_BEGIN(th);
	uint32_t id = io_fd_peek(oldfd);
	if (!id && r >= 0)
		id = io_fd_id(th, oldfd);
	if (r >= 0 && r != oldfd && id != 0)
		io_fd_dup(r, id);
	record_id(th, PROF_IO_DUP, oldfd, id, RESULT(r, r), t0, t1, ret, frame);
	IO_END_FINISH(th);
	return r;
}

#define DUP_HOOK(oldfd, call)                                                              \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		int r = call;                                                              \
		return dup_common(th, oldfd, r, t0, prof_timed_end(th, t0, own0_), RET_ADDR, FRAME_ADDR);     \
	} while (0)

PROF_EXPORT int dup(int fd)
{
	DUP_HOOK(fd, REAL(dup)(fd));
}

PROF_EXPORT int dup2(int fd, int newfd)
{
	DUP_HOOK(fd, REAL(dup2)(fd, newfd));
}

PROF_EXPORT int dup3(int fd, int newfd, int flags)
{
	DUP_HOOK(fd, REAL(dup3)(fd, newfd, flags));
}

/* fcntl: only F_DUPFD and F_DUPFD_CLOEXEC are I/O events; the rest pass straight through. */
#define FCNTL_BODY(name)                                                                   \
	va_list ap;                                                                        \
	va_start(ap, cmd);                                                                 \
	void *arg = va_arg(ap, void *);                                                    \
	va_end(ap);                                                                        \
	if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)                                      \
		return REAL(name)(fd, cmd, arg);                                           \
	DUP_HOOK(fd, REAL(name)(fd, cmd, arg))

PROF_EXPORT int fcntl(int fd, int cmd, ...)
{
	FCNTL_BODY(fcntl);
}

PROF_EXPORT int fcntl64(int fd, int cmd, ...)
{
	FCNTL_BODY(fcntl64);
}

/* pipe, socketpair: one IO_NAME per end; the call's time goes to the first. */
static int pair_common(struct prof_thread *th, unsigned op, int *fds, int r, uint64_t t0,
		       uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	IO_END_BEGIN(th);
	uint32_t stack = io_stack(th, ret, frame);
	char name[32];
	if (r == 0) {
		const char *both = op == PROF_IO_PIPE && io_name_of_pipe(fds[0], name, sizeof(name)) == 0 ?
					   name : NULL;  /* both ends name one inode */
		io_fd_opened(th, fds[0], op, both, 0, t0, t1 - t0, stack);
		io_fd_opened(th, fds[1], op, both, 0, t1, 0, stack);
	} else {
		io_name_failed(th, op, op == PROF_IO_PIPE ? "pipe" : "socketpair", -(int64_t)err_,
			       t0, t1 - t0, stack);
	}
	IO_END_FINISH(th);
	return r;
}

#define PAIR_HOOK(op, fds, call)                                                           \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		int r = call;                                                              \
		return pair_common(th, op, fds, r, t0, prof_timed_end(th, t0, own0_), RET_ADDR, FRAME_ADDR);  \
	} while (0)

/* A pipe made for our own work (libunwind makes one, inside our hooks, to validate
 * addresses) moves above the program's descriptors, so the program's next open() still gets
 * the number it would get without us. */
static int own_pipe(int fds[2], int r)
{
	int saved = errno;
	if (r == 0) {
		fds[0] = prof_fd_hide(fds[0]);
		fds[1] = prof_fd_hide(fds[1]);
	}
	errno = saved;
	return r;
}

PROF_EXPORT int pipe(int fds[2])
{
	if (prof_in_hook(&prof_self))
		return own_pipe(fds, REAL(pipe)(fds));
	PAIR_HOOK(PROF_IO_PIPE, fds, REAL(pipe)(fds));
}

PROF_EXPORT int pipe2(int fds[2], int flags)
{
	if (prof_in_hook(&prof_self))
		return own_pipe(fds, REAL(pipe2)(fds, flags));
	PAIR_HOOK(PROF_IO_PIPE, fds, REAL(pipe2)(fds, flags));
}

PROF_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
	PAIR_HOOK(PROF_IO_SOCKETPAIR, fds, REAL(socketpair)(domain, type, protocol, fds));
}

/* ---- reading and writing ---------------------------------------------------------------- */

PROF_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	DATA_HOOK(PROF_IO_READ, fd, 0, buf, n, REAL(read)(fd, buf, n));
}

PROF_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	DATA_HOOK(PROF_IO_READ, fd, 0, buf, n, REAL(__read_chk)(fd, buf, n, buflen));
}

PROF_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	DATA_HOOK(PROF_IO_WRITE, fd, 1, buf, n, REAL(write)(fd, buf, n));
}

PROF_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	FD_HOOK(PROF_IO_PREAD, ssize_t, fd, REAL(pread)(fd, buf, n, off));
}

PROF_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	FD_HOOK(PROF_IO_PREAD, ssize_t, fd, REAL(pread64)(fd, buf, n, off));
}

PROF_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	FD_HOOK(PROF_IO_PREAD, ssize_t, fd, REAL(__pread_chk)(fd, buf, n, off, buflen));
}

PROF_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	FD_HOOK(PROF_IO_PREAD, ssize_t, fd, REAL(__pread64_chk)(fd, buf, n, off, buflen));
}

PROF_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	FD_HOOK(PROF_IO_PWRITE, ssize_t, fd, REAL(pwrite)(fd, buf, n, off));
}

PROF_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	FD_HOOK(PROF_IO_PWRITE, ssize_t, fd, REAL(pwrite64)(fd, buf, n, off));
}

PROF_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	DATA_HOOK(PROF_IO_READV, fd, 0, IOV0(iov, cnt), IOV0_LEN(iov, cnt),
		  REAL(readv)(fd, iov, cnt));
}

PROF_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	DATA_HOOK(PROF_IO_WRITEV, fd, 1, IOV0(iov, cnt), IOV0_LEN(iov, cnt),
		  REAL(writev)(fd, iov, cnt));
}

PROF_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	FD_HOOK(PROF_IO_PREADV, ssize_t, fd, REAL(preadv)(fd, iov, cnt, off));
}

PROF_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	FD_HOOK(PROF_IO_PREADV, ssize_t, fd, REAL(preadv64)(fd, iov, cnt, off));
}

PROF_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	FD_HOOK(PROF_IO_PWRITEV, ssize_t, fd, REAL(pwritev)(fd, iov, cnt, off));
}

PROF_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	FD_HOOK(PROF_IO_PWRITEV, ssize_t, fd, REAL(pwritev64)(fd, iov, cnt, off));
}

PROF_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	FD_HOOK(PROF_IO_PREADV, ssize_t, fd, REAL(preadv2)(fd, iov, cnt, off, flags));
}

PROF_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	FD_HOOK(PROF_IO_PREADV, ssize_t, fd, REAL(preadv64v2)(fd, iov, cnt, off, flags));
}

PROF_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	FD_HOOK(PROF_IO_PWRITEV, ssize_t, fd, REAL(pwritev2)(fd, iov, cnt, off, flags));
}

PROF_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	FD_HOOK(PROF_IO_PWRITEV, ssize_t, fd, REAL(pwritev64v2)(fd, iov, cnt, off, flags));
}

PROF_EXPORT off_t lseek(int fd, off_t off, int whence)
{
	FD_HOOK(PROF_IO_LSEEK, off_t, fd, REAL(lseek)(fd, off, whence));
}

PROF_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
	FD_HOOK(PROF_IO_LSEEK, off64_t, fd, REAL(lseek64)(fd, off, whence));
}

PROF_EXPORT int fsync(int fd)
{
	FD_HOOK(PROF_IO_FSYNC, int, fd, REAL(fsync)(fd));
}

PROF_EXPORT int fdatasync(int fd)
{
	FD_HOOK(PROF_IO_FDATASYNC, int, fd, REAL(fdatasync)(fd));
}

PROF_EXPORT int shutdown(int fd, int how)
{
	FD_HOOK(PROF_IO_SHUTDOWN, int, fd, REAL(shutdown)(fd, how));
}

/* sendfile and copy_file_range move bytes between two descriptors: a write on the
 * destination (which is charged the time) and a read of the same bytes on the source
 * (recorded with duration 0; the analyzer counts its bytes, not its time). */
#define TRANSFER_HOOK(op, op_in, in_fd, out_fd, call)                                      \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		ssize_t r = call;                                                          \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                                                  \
		IO_END_BEGIN(th);                                                          \
		record(th, op, out_fd, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR);        \
		record(th, op_in, in_fd, RESULT(r, r), t1, t1, RET_ADDR, FRAME_ADDR);      \
		if (r > 0 && (prof_cfg.events & PROF_EV_HTTP))                             \
			http_fd_sent(th, out_fd, (size_t)r, t1);                           \
		IO_END_FINISH(th);                                                         \
		return r;                                                                  \
	} while (0)

PROF_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t count)
{
	TRANSFER_HOOK(PROF_IO_SENDFILE, PROF_IO_SENDFILE_IN, in_fd, out_fd,
		      REAL(sendfile)(out_fd, in_fd, off, count));
}

PROF_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t count)
{
	TRANSFER_HOOK(PROF_IO_SENDFILE, PROF_IO_SENDFILE_IN, in_fd, out_fd,
		      REAL(sendfile64)(out_fd, in_fd, off, count));
}

PROF_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off,
				    size_t len, unsigned flags)
{
	TRANSFER_HOOK(PROF_IO_COPY_FILE_RANGE, PROF_IO_COPY_FILE_RANGE_IN, in_fd, out_fd,
		      REAL(copy_file_range)(in_fd, in_off, out_fd, out_off, len, flags));
}

/* mmap of a descriptor: recorded (result: the length mapped); its bytes are not knowable. */
#define MMAP_HOOK(name)                                                                    \
	do {                                                                               \
		if (fd < 0 || (flags & MAP_ANONYMOUS))                                     \
			return REAL(name)(addr, len, prot, flags, fd, off);                \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return REAL(name)(addr, len, prot, flags, fd, off);                \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		void *r = REAL(name)(addr, len, prot, flags, fd, off);                     \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                                                  \
		IO_END_BEGIN(th);                                                          \
		record(th, PROF_IO_MMAP, fd, r == MAP_FAILED ? -(int64_t)err_ : (int64_t)len, \
		       t0, t1, RET_ADDR, FRAME_ADDR);                                      \
		IO_END_FINISH(th);                                                         \
		return r;                                                                  \
	} while (0)

PROF_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	MMAP_HOOK(mmap);
}

PROF_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	MMAP_HOOK(mmap64);
}

/* ---- sockets ---------------------------------------------------------------------------- */

PROF_EXPORT int socket(int domain, int type, int protocol)
{
	OPEN_HOOK(PROF_IO_SOCKET, AT_FDCWD, "socket", REAL(socket)(domain, type, protocol));
}

static int sock_type(int fd)
{
	int type = 0;
	socklen_t l = sizeof(type);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0 ? type : 0;
}

/* connect names the socket after the address it was asked to reach (a non-blocking connect
 * that is still in progress included). */
PROF_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	struct prof_thread *th = io_begin();
	if (!th)
		return REAL(connect)(fd, addr, alen);
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	int r = REAL(connect)(fd, addr, alen);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	uint32_t id = err_ == EBADF && r < 0 ? io_fd_peek(fd) : io_fd_id(th, fd);
	if (id && id != IO_FD_OURS) {
		char name[IO_NAME_MAX];
		io_name_of_sockaddr(addr, alen, sock_type(fd), name, sizeof(name));
		if (!name[0] && io_name_of_fd(fd, name, sizeof(name)) < 0)
			strcpy(name, "socket");
		uint32_t stack = io_stack(th, RET_ADDR, FRAME_ADDR);
		io_fd_rename(th, fd, id, PROF_IO_CONNECT, name, RESULT(r, r), t0, t1 - t0, stack);
	} else {
		record_id(th, PROF_IO_CONNECT, fd, id, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR);
	}
	IO_END_FINISH(th);
	return r;
}

/* A listening socket is named after its address ("tcp 0.0.0.0:8080 (listening)"). */
PROF_EXPORT int listen(int fd, int backlog)
{
	struct prof_thread *th = io_begin();
	if (!th)
		return REAL(listen)(fd, backlog);
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	int r = REAL(listen)(fd, backlog);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	uint32_t id = r == 0 ? io_fd_id(th, fd) : io_fd_peek(fd);
	char name[IO_NAME_MAX];
	if (r == 0 && id && id != IO_FD_OURS && io_name_of_fd(fd, name, sizeof(name)) == 0) {
		uint32_t stack = io_stack(th, RET_ADDR, FRAME_ADDR);
		io_fd_rename(th, fd, id, PROF_IO_LISTEN, name, 0, t0, t1 - t0, stack);
	} else {
		record_id(th, PROF_IO_LISTEN, fd, id, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR);
	}
	IO_END_FINISH(th);
	return r;
}

/* An accepted connection is named after the local address it came in on: all connections
 * to one server port are one row. */
static int accept_common(struct prof_thread *th, int lfd, int r, uint64_t t0, uint64_t t1,
			 uintptr_t ret, uintptr_t frame)
{
	IO_END_BEGIN(th);
	if (r >= 0) {
		char name[IO_NAME_MAX];
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		name[0] = '\0';
		if (getsockname(r, (struct sockaddr *)&ss, &len) == 0)
			io_name_of_sockaddr((struct sockaddr *)&ss, len, sock_type(r), name,
					    sizeof(name) - 16);
		if (name[0])
			strcat(name, " (accepted)");
		uint32_t stack = io_stack(th, ret, frame);
		io_fd_opened(th, r, PROF_IO_ACCEPT, name[0] ? name : NULL, r, t0, t1 - t0, stack);
	} else {
		record(th, PROF_IO_ACCEPT, lfd, -(int64_t)err_, t0, t1, ret, frame);
	}
	IO_END_FINISH(th);
	return r;
}

#define ACCEPT_HOOK(call)                                                                  \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		int r = call;                                                              \
		return accept_common(th, fd, r, t0, prof_timed_end(th, t0, own0_), RET_ADDR, FRAME_ADDR);     \
	} while (0)

PROF_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	ACCEPT_HOOK(REAL(accept)(fd, addr, alen));
}

PROF_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	ACCEPT_HOOK(REAL(accept4)(fd, addr, alen, flags));
}

PROF_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	DATA_HOOK(PROF_IO_SEND, fd, 1, buf, n, REAL(send)(fd, buf, n, flags));
}

PROF_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			   const struct sockaddr *addr, socklen_t alen)
{
	DATA_HOOK(PROF_IO_SENDTO, fd, 1, buf, n, REAL(sendto)(fd, buf, n, flags, addr, alen));
}

PROF_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	DATA_HOOK(PROF_IO_SENDMSG, fd, 1, IOV0(msg->msg_iov, msg->msg_iovlen),
		  IOV0_LEN(msg->msg_iov, msg->msg_iovlen), REAL(sendmsg)(fd, msg, flags));
}

PROF_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	DATA_HOOK(PROF_IO_RECV, fd, 0, buf, n, REAL(recv)(fd, buf, n, flags));
}

PROF_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	DATA_HOOK(PROF_IO_RECV, fd, 0, buf, n, REAL(__recv_chk)(fd, buf, n, buflen, flags));
}

PROF_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
			     socklen_t *alen)
{
	DATA_HOOK(PROF_IO_RECVFROM, fd, 0, buf, n, REAL(recvfrom)(fd, buf, n, flags, addr, alen));
}

PROF_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				   struct sockaddr *addr, socklen_t *alen)
{
	DATA_HOOK(PROF_IO_RECVFROM, fd, 0, buf, n,
		  REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, addr, alen));
}

PROF_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	DATA_HOOK(PROF_IO_RECVMSG, fd, 0, IOV0(msg->msg_iov, msg->msg_iovlen),
		  IOV0_LEN(msg->msg_iov, msg->msg_iovlen), REAL(recvmsg)(fd, msg, flags));
}

/* ---- stdio ------------------------------------------------------------------------------
 * Counted at the stdio level, the bytes the program hands over or receives (libc's own
 * buffered read(2)/write(2) calls use internal names and never reach the hooks above).
 * Covered: fopen fopen64 fdopen freopen freopen64 fclose fflush fread fwrite fgets fputs
 * puts fputc putc putchar fgetc getc getchar (and their _unlocked forms), fprintf vfprintf
 * printf vprintf dprintf vdprintf (and the __*_chk forms), getline getdelim. Not covered:
 * scanf family, fseek/ftell, ungetc, memory streams (fmemopen, open_memstream: no fd). */

/* result: bytes, 0 at end of file, -errno on error. */
/* ---- buffered stdio calls -----------------------------------------------------------------
 * A stdio call that only moves bytes between the program and the stream's buffer, without a
 * system call, takes tens of ns: two clock reads and a record cost more than the call (they
 * made most of git log -p's profiling cost). glibc's FILE tells beforehand whether a call
 * will: a write that fits a fully buffered stream's buffer in write mode, a read of bytes
 * the buffer holds. Such a call is counted, per thread, stream, op and call site, and its
 * batch written as one IO_BATCH record (untimed calls, their bytes) when BATCH_MAX calls are
 * in it, when another site takes its place, before its stream is closed, when the thread
 * ends, and at exit or exec (every thread's). A call that reached the system after all
 * (another thread filled the buffer meanwhile) is counted the same. The batches of a thread
 * live in a table of ours (batch_tables), never in its TLS, which dies with it while the exit
 * may still read it; a thread without one (more than BATCH_THREADS at once, or past its end)
 * writes each such call as a batch of one. */
#define BATCH_SET_BITS 4
#define BATCH_SETS (1 << BATCH_SET_BITS)  /* per thread: sets of BATCH_WAYS batches, by call site */
#define BATCH_WAYS 8
#define BATCH_SLOTS (BATCH_SETS * BATCH_WAYS)
#define BATCH_MAX 4096      /* calls in one IO_BATCH at most */
#define BATCH_THREADS 256   /* threads with a table at once */
#define PRINTF_ROOM 512     /* buffer room taken to be enough for one printf */

/* glibc's FILE flags (libio.h, stable since glibc 2.0) */
#define STDIO_UNBUFFERED 0x0002
#define STDIO_LINE_BUF 0x0200
#define STDIO_PUTTING 0x0800

struct io_batch {
	FILE *f;
	uintptr_t ret, frame;
	_Atomic uint64_t calls;  /* the exit reads other threads' */
	uint64_t bytes;
	uint32_t file, stack;
	int32_t fd;
	uint32_t op;
	struct prof_stack_proof proof;  /* that a call's stack is `stack` (several call paths
					 * reach one site with one frame) */
};
static void *_Atomic batch_tables;  /* BATCH_THREADS tables of BATCH_SLOTS, made on first use */
static _Atomic uint64_t batch_taken[BATCH_THREADS / 64];
static __thread struct io_batch *io_batches;  /* the thread's table, NULL if none */
static __thread int batch_state;  /* 0: none asked for yet; 1: has one; -1: none to be had, or
				   * the thread has ended (stdio in its TLS destructors) */
static __thread unsigned batch_next;  /* the way a new site takes when none is free */

/* A write of len bytes will only fill f's buffer; a read of len bytes only empty it. */
static inline int stdio_write_fits(FILE *f, size_t len)
{
	return (f->_flags & (STDIO_UNBUFFERED | STDIO_LINE_BUF | STDIO_PUTTING)) == STDIO_PUTTING &&
	       f->_IO_write_ptr && (size_t)(f->_IO_write_end - f->_IO_write_ptr) > len;
}

static inline int stdio_read_fits(FILE *f, size_t len)
{
	return !(f->_flags & STDIO_PUTTING) && f->_IO_read_ptr &&
	       (size_t)(f->_IO_read_end - f->_IO_read_ptr) >= len && len;
}

/* A read up to delim (fgets, getline) will only empty f's buffer: the buffer holds delim, or
 * `most` bytes (the most the call takes; 0: no limit). */
static inline int stdio_line_fits(FILE *f, int delim, size_t most)
{
	if ((f->_flags & STDIO_PUTTING) || !f->_IO_read_ptr || f->_IO_read_end <= f->_IO_read_ptr)
		return 0;
	size_t avail = (size_t)(f->_IO_read_end - f->_IO_read_ptr);
	if (most && avail >= most)
		return 1;
	return memchr(f->_IO_read_ptr, delim, avail) != NULL;
}

/* The set of a call site (its return address and the hook's frame: one call path). */
static inline struct io_batch *batch_set(uintptr_t ret, uintptr_t frame)
{
	uint64_t h = ((uint64_t)ret ^ (uint64_t)frame * 31) * 0x9e3779b97f4a7c15ull;
	return &io_batches[(h >> (64 - BATCH_SET_BITS)) * BATCH_WAYS];
}

static inline int batch_is(const struct io_batch *b, FILE *f, unsigned op, uintptr_t ret,
			   uintptr_t frame)
{
	return b->ret == ret && b->frame == frame && b->f == f && b->op == op;
}

/* Whether batch b can count one more call of stream f: it has calls, room, and still names
 * the stream's file (the descriptor or its id may have changed behind stdio's back). */
static inline int batch_open(const struct io_batch *b, FILE *f)
{
	uint64_t n = atomic_load_explicit(&b->calls, memory_order_relaxed);
	return n && n < BATCH_MAX && b->fd == f->_fileno && io_fd_peek(b->fd) == b->file;
}

static inline void batch_add(struct io_batch *b, uint64_t bytes)
{
	atomic_store_explicit(&b->calls, atomic_load_explicit(&b->calls, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	b->bytes += bytes;
}

/* Counts a buffered call in the batch of its site, stream and stack, if one is open and
 * proves the call's stack its own: 0 if not. */
static inline int batch_count(struct prof_thread *th, FILE *f, unsigned op, uintptr_t ret,
			      uintptr_t frame, uint64_t bytes)
{
	if (!io_batches)
		return 0;
	struct io_batch *set = batch_set(ret, frame);
	for (int i = 0; i < BATCH_WAYS; i++) {
		struct io_batch *b = &set[i];
		if (batch_is(b, f, op, ret, frame) && batch_open(b, f) &&
		    prof_stack_still(th, ret, (const uintptr_t *)frame, &b->proof)) {
			batch_add(b, bytes);
			return 1;
		}
	}
	return 0;
}

/* Writes batch b (its calls are taken first: the exit may write other threads' batches). */
static void batch_write(struct prof_thread *th, struct io_batch *b)
{
	uint64_t calls = atomic_exchange_explicit(&b->calls, 0, memory_order_relaxed);
	if (!calls)
		return;
	struct prof_rec_io_batch *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->file = b->file;
	r->fd = b->fd;
	r->result = (int64_t)b->bytes;
	r->duration_ns = 0;
	r->stack = b->stack;
	r->pad = 0;
	r->calls = calls;
	prof_commit(r, PROF_REC_IO_BATCH, b->op, sizeof(*r), prof_now());
}

static void batch_claim(void)
{
	batch_state = -1;
	struct io_batch *all = prof_lazy(&batch_tables,
					 BATCH_THREADS * BATCH_SLOTS * sizeof(struct io_batch));
	int i = all ? prof_slot_claim(batch_taken, BATCH_THREADS) : -1;
	if (i >= 0) {
		io_batches = &all[i * BATCH_SLOTS];
		batch_state = 1;
	}
}

/* A new batch for this call (the one in its place written first). Under in_hook, errno
 * saved. */
static __attribute__((noinline)) void batch_start(struct prof_thread *th, FILE *f, unsigned op,
						   uintptr_t ret, uintptr_t frame, uint64_t bytes)
{
	if (!(prof_cfg.events & PROF_EV_IO))
		return;
	if (batch_state == 0)
		batch_claim();
	int fd = f->_fileno;
	uint32_t id = io_fd_peek(fd);
	if (unlikely(id == 0))
		id = io_fd_id(th, fd);
	if (id == 0 || id == IO_FD_OURS)
		return;  /* not open (the call failed, and is not one to count), or ours */
	struct prof_stack_proof proof;
	uint32_t stack = prof_stack_proven(th, ret, (const uintptr_t *)frame, &proof);
	struct io_batch one, *b = NULL;
	if (io_batches) {
		struct io_batch *set = batch_set(ret, frame);
		for (int i = 0; !b && i < BATCH_WAYS; i++)
			if (batch_is(&set[i], f, op, ret, frame) && set[i].stack == stack)
				b = &set[i];
		if (b && batch_open(b, f)) {
			/* its stack, not proven by the last call's entry: this call's instead */
			batch_add(b, bytes);
			b->proof = proof;
			return;
		}
		for (int i = 0; !b && i < BATCH_WAYS; i++)
			if (!atomic_load_explicit(&set[i].calls, memory_order_relaxed))
				b = &set[i];
		if (!b)
			b = &set[batch_next++ % BATCH_WAYS];
		batch_write(th, b);  /* full, its file changed, or another's place */
	} else {
		b = &one;  /* no table: a batch of one */
	}
	b->f = f;
	b->ret = ret;
	b->frame = frame;
	b->op = op;
	b->fd = fd;
	b->file = id;
	b->bytes = bytes;
	b->stack = stack;
	b->proof = proof;
	atomic_store_explicit(&b->calls, 1, memory_order_relaxed);
	if (b == &one)
		batch_write(th, b);
}

/* The calling thread's batches of stream f (NULL: all), written. Under in_hook. */
static void batches_write(struct prof_thread *th, FILE *f)
{
	for (int i = 0; io_batches && i < BATCH_SLOTS; i++)
		if (!f || io_batches[i].f == f)
			batch_write(th, &io_batches[i]);
}

void io_batches_flush(struct prof_thread *th)
{
	int err = errno;
	prof_hook_enter(th);
	batches_write(th, NULL);
	if (io_batches) {
		struct io_batch *all = atomic_load(&batch_tables);
		unsigned i = (unsigned)((io_batches - all) / BATCH_SLOTS);
		memset(io_batches, 0, BATCH_SLOTS * sizeof(*io_batches));
		prof_slot_give(batch_taken, i);
	}
	io_batches = NULL;
	batch_state = -1;  /* the thread has ended: batches of one from here on */
	th->in_hook--;
	errno = err;
}

void io_batches_flush_all(struct prof_thread *th)
{
	struct io_batch *all = atomic_load(&batch_tables);
	if (!all)
		return;
	int err = errno;
	prof_hook_enter(th);
	for (unsigned i = 0; i < BATCH_THREADS; i++)
		if (prof_slot_taken(batch_taken, i))
			for (int k = 0; k < BATCH_SLOTS; k++)
				batch_write(th, &all[i * BATCH_SLOTS + k]);
	th->in_hook--;
	errno = err;
}

/* A fork child's batches are its parent's calls, and of the parent's threads only the
 * forking one lives on: every table is free again, and the child starts its own. */
void prof_io_batches_fork_child(void)
{
	struct io_batch *all = atomic_load(&batch_tables);
	for (unsigned i = 0; all && i < BATCH_THREADS; i++)
		if (prof_slot_taken(batch_taken, i))
			for (int k = 0; k < BATCH_SLOTS; k++)
				if (atomic_load(&all[i * BATCH_SLOTS + k].calls))  /* no page copied */
					atomic_store(&all[i * BATCH_SLOTS + k].calls, 0);
	for (unsigned i = 0; i < BATCH_THREADS / 64; i++)
		if (atomic_load(&batch_taken[i]))  /* a write to a page the parent wrote copies it */
			atomic_store(&batch_taken[i], 0);
	io_batches = NULL;  /* TLS, beside prof_self, which the fork child writes anyway */
	batch_state = 0;
}

/* A stream's descriptor, -1 for a stream without one (fopencookie, fmemopen): read in place,
 * as fileno() would set errno there. */
static inline int stream_fd(FILE *f)
{
	return f ? f->_fileno : -1;
}

static void record_stdio(struct prof_thread *th, unsigned op, FILE *f, int failed, int64_t bytes,
			 int err, uint64_t t0, uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	int fd = stream_fd(f);
	if (fd < 0)
		return;
	int64_t result = bytes;
	if (failed)
		result = ferror(f) ? -(int64_t)(err ? err : EIO) : 0;
	record(th, op, fd, result, t0, t1, ret, frame);
}

/* After a stdio call made untimed, its stream's buffer being enough for it: counted in its
 * batch, else (a new site, a full batch) a new batch started, or its failure recorded. */
static __attribute__((noinline)) void buffered_slow(struct prof_thread *th, unsigned op, FILE *f,
						    int failed, uint64_t bytes, uintptr_t ret,
						    uintptr_t frame)
{
	uint64_t t = prof_now();
	IO_END_BEGIN(th);
	if (failed)
		record_stdio(th, op, f, 1, 0, err_, t, t, ret, frame);
	else
		batch_start(th, f, op, ret, frame, bytes);
	IO_END_FINISH(th);
}

static inline void buffered_done(struct prof_thread *th, unsigned op, FILE *f, int failed,
				 uint64_t bytes, uintptr_t ret, uintptr_t frame)
{
	io_busy = 0;
	if (failed || !batch_count(th, f, op, ret, frame, bytes))
		buffered_slow(th, op, f, failed, bytes, ret, frame);
}

/* A stdio call: `fits` says beforehand whether it will only use the stream's buffer (then
 * it is counted in a batch, untimed), else it is timed and recorded. */
#define STDIO_HOOK_BUFFERED(op, type, f, call, failed, bytes, fits)                        \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		if (unlikely(stream_fd(f) < 0)) {                                          \
			io_busy = 0;  /* no descriptor: I/O its functions make is theirs */ \
			return call;                                                       \
		}                                                                          \
		if (fits) {                                                                \
			type r = call;                                                     \
			buffered_done(th, op, f, failed, (uint64_t)(bytes), RET_ADDR, FRAME_ADDR); \
			return r;                                                          \
		}                                                                          \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                         \
		type r = call;                                                             \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                               \
		IO_END_BEGIN(th);                                                          \
		record_stdio(th, op, f, failed, (int64_t)(bytes), err_, t0, t1, RET_ADDR,  \
			     FRAME_ADDR);                                                  \
		IO_END_FINISH(th);                                                         \
		return r;                                                                  \
	} while (0)

/* One that always reaches the system (fflush). */
#define STDIO_HOOK(op, type, f, call, failed, bytes) \
	STDIO_HOOK_BUFFERED(op, type, f, call, failed, bytes, 0)

static FILE *fopen_common(struct prof_thread *th, unsigned op, const char *path, FILE *r,
			  uint64_t t0, uint64_t t1, uintptr_t ret, uintptr_t frame)
{
	IO_END_BEGIN(th);
	uint32_t stack = io_stack(th, ret, frame);
	int fd = stream_fd(r);
	if (fd >= 0) {
		io_fd_opened(th, fd, op, NULL, fd, t0, t1 - t0, stack);
	} else if (!r) {
		io_path_failed(th, op, AT_FDCWD, path, -(int64_t)err_, t0, t1 - t0, stack);
	}
	IO_END_FINISH(th);
	return r;
}

#define FOPEN_HOOK(op, path, call)                                                         \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return call;                                                       \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		FILE *r = call;                                                            \
		return fopen_common(th, op, path, r, t0, prof_timed_end(th, t0, own0_), RET_ADDR, FRAME_ADDR); \
	} while (0)

PROF_EXPORT FILE *fopen(const char *path, const char *mode)
{
	FOPEN_HOOK(PROF_IO_FOPEN, path, REAL(fopen)(path, mode));
}

PROF_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	FOPEN_HOOK(PROF_IO_FOPEN, path, REAL(fopen64)(path, mode));
}

/* freopen closes the stream's descriptor and opens another (usually the same number). */
#define FREOPEN_HOOK(name)                                                                 \
	do {                                                                               \
		struct prof_thread *th = io_begin();                                       \
		if (!th)                                                                   \
			return REAL(name)(path, mode, f);                                  \
		int oldfd = stream_fd(f);                                                  \
		uint32_t oldid = io_fd_peek(oldfd);                                        \
		prof_hook_enter(th);                                                       \
		batches_write(th, f);                                                      \
		th->in_hook--;                                                             \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                                                  \
		FILE *r = REAL(name)(path, mode, f);                                       \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                                                  \
		if (oldid)                                                                 \
			io_fd_closed(oldfd, oldid);                                        \
		return fopen_common(th, PROF_IO_FREOPEN, path, r, t0, t1, RET_ADDR,         \
				    FRAME_ADDR);                                           \
	} while (0)

PROF_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
	FREOPEN_HOOK(freopen);
}

PROF_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	FREOPEN_HOOK(freopen64);
}

PROF_EXPORT FILE *fdopen(int fd, const char *mode)
{
	struct prof_thread *th = io_begin();
	if (!th)
		return REAL(fdopen)(fd, mode);
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	FILE *r = REAL(fdopen)(fd, mode);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	record(th, PROF_IO_FDOPEN, fd, r ? 0 : -(int64_t)err_, t0, t1, RET_ADDR, FRAME_ADDR);
	IO_END_FINISH(th);
	return r;
}

PROF_EXPORT int fclose(FILE *f)
{
	struct prof_thread *th = io_begin();
	if (!th)
		return REAL(fclose)(f);
	int fd = stream_fd(f);
	if (fd < 0) {  /* no descriptor: what its cookie functions write at the close is theirs */
		io_busy = 0;
		return REAL(fclose)(f);
	}
	prof_hook_enter(th);
	batches_write(th, f);  /* while its descriptor still has its id */
	uint32_t id = io_fd_id(th, fd);
	th->in_hook--;
	uint64_t own0_, t0 = prof_timed_begin(th, &own0_);
	int r = REAL(fclose)(f);
	uint64_t t1 = prof_timed_end(th, t0, own0_);
	IO_END_BEGIN(th);
	io_fd_closed(fd, id);
	http_fd_closed(th, fd, id);
	record_id(th, PROF_IO_FCLOSE, fd, id, r == EOF ? -(int64_t)err_ : 0, t0, t1, RET_ADDR,
		  FRAME_ADDR);
	IO_END_FINISH(th);
	return r;
}

PROF_EXPORT int fflush(FILE *f)
{
	if (!f)  /* all streams: no one file to charge */
		return REAL(fflush)(f);
	STDIO_HOOK(PROF_IO_FFLUSH, int, f, REAL(fflush)(f), r == EOF, 0);
}

PROF_EXPORT int fflush_unlocked(FILE *f)
{
	if (!f)
		return REAL(fflush_unlocked)(f);
	STDIO_HOOK(PROF_IO_FFLUSH, int, f, REAL(fflush_unlocked)(f), r == EOF, 0);
}

/* fread/fwrite: items * size bytes; a call that moved nothing is EOF or an error. */
static inline size_t items_bytes(size_t size, size_t n)
{
	size_t total;
	return __builtin_mul_overflow(size, n, &total) ? SIZE_MAX : total;
}
#define FREAD_HOOK(op, f, size, n, call)                                                  \
	STDIO_HOOK_BUFFERED(op, size_t, f, call, r == 0 && (size) && (n), r * (size),      \
			    op == PROF_IO_FWRITE ? stdio_write_fits(f, items_bytes(size, n)) : \
						   stdio_read_fits(f, items_bytes(size, n)))

PROF_EXPORT size_t fread(void *p, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FREAD, f, size, n, REAL(fread)(p, size, n, f));
}

PROF_EXPORT size_t fread_unlocked(void *p, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FREAD, f, size, n, REAL(fread_unlocked)(p, size, n, f));
}

PROF_EXPORT size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FREAD, f, size, n, REAL(__fread_chk)(p, plen, size, n, f));
}

PROF_EXPORT size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FREAD, f, size, n, REAL(__fread_unlocked_chk)(p, plen, size, n, f));
}

PROF_EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FWRITE, f, size, n, REAL(fwrite)(p, size, n, f));
}

PROF_EXPORT size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
	FREAD_HOOK(PROF_IO_FWRITE, f, size, n, REAL(fwrite_unlocked)(p, size, n, f));
}

#define FGETS_HOOK(f, call)                                                                \
	STDIO_HOOK_BUFFERED(PROF_IO_FGETS, char *, f, call, !r, r ? strlen(r) : 0,          \
			    n > 1 && stdio_line_fits(f, '\n', (size_t)n - 1))

PROF_EXPORT char *fgets(char *s, int n, FILE *f)
{
	FGETS_HOOK(f, REAL(fgets)(s, n, f));
}

PROF_EXPORT char *fgets_unlocked(char *s, int n, FILE *f)
{
	FGETS_HOOK(f, REAL(fgets_unlocked)(s, n, f));
}

PROF_EXPORT char *__fgets_chk(char *s, size_t slen, int n, FILE *f)
{
	FGETS_HOOK(f, REAL(__fgets_chk)(s, slen, n, f));
}

PROF_EXPORT char *__fgets_unlocked_chk(char *s, size_t slen, int n, FILE *f)
{
	FGETS_HOOK(f, REAL(__fgets_unlocked_chk)(s, slen, n, f));
}

#define FPUTS_HOOK(f, call, len)                                                           \
	do {                                                                               \
		size_t len_ = (len);                                                       \
		STDIO_HOOK_BUFFERED(PROF_IO_FPUTS, int, f, call, r == EOF, len_,           \
				    stdio_write_fits(f, len_));                            \
	} while (0)

PROF_EXPORT int fputs(const char *s, FILE *f)
{
	FPUTS_HOOK(f, REAL(fputs)(s, f), strlen(s));
}

PROF_EXPORT int fputs_unlocked(const char *s, FILE *f)
{
	FPUTS_HOOK(f, REAL(fputs_unlocked)(s, f), strlen(s));
}

PROF_EXPORT int puts(const char *s)
{
	FPUTS_HOOK(stdout, REAL(puts)(s), strlen(s) + 1);
}

#define PUTC_HOOK(f, call) \
	STDIO_HOOK_BUFFERED(PROF_IO_FPUTC, int, f, call, r == EOF, 1, stdio_write_fits(f, 1))
#define GETC_HOOK(f, call) \
	STDIO_HOOK_BUFFERED(PROF_IO_FGETC, int, f, call, r == EOF, 1, stdio_read_fits(f, 1))

PROF_EXPORT int fputc(int c, FILE *f) { PUTC_HOOK(f, REAL(fputc)(c, f)); }
PROF_EXPORT int putc(int c, FILE *f) { PUTC_HOOK(f, REAL(putc)(c, f)); }
PROF_EXPORT int putchar(int c) { PUTC_HOOK(stdout, REAL(putchar)(c)); }
PROF_EXPORT int fputc_unlocked(int c, FILE *f) { PUTC_HOOK(f, REAL(fputc_unlocked)(c, f)); }
PROF_EXPORT int putc_unlocked(int c, FILE *f) { PUTC_HOOK(f, REAL(putc_unlocked)(c, f)); }
PROF_EXPORT int putchar_unlocked(int c) { PUTC_HOOK(stdout, REAL(putchar_unlocked)(c)); }
PROF_EXPORT int fgetc(FILE *f) { GETC_HOOK(f, REAL(fgetc)(f)); }
PROF_EXPORT int getc(FILE *f) { GETC_HOOK(f, REAL(getc)(f)); }
PROF_EXPORT int getchar(void) { GETC_HOOK(stdin, REAL(getchar)()); }
PROF_EXPORT int fgetc_unlocked(FILE *f) { GETC_HOOK(f, REAL(fgetc_unlocked)(f)); }
PROF_EXPORT int getc_unlocked(FILE *f) { GETC_HOOK(f, REAL(getc_unlocked)(f)); }
PROF_EXPORT int getchar_unlocked(void) { GETC_HOOK(stdin, REAL(getchar_unlocked)()); }

#define PRINTF_HOOK(f, call) \
	STDIO_HOOK_BUFFERED(PROF_IO_FPRINTF, int, f, call, r < 0, r, stdio_write_fits(f, PRINTF_ROOM))

PROF_EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap)
{
	PRINTF_HOOK(f, REAL(vfprintf)(f, fmt, ap));
}

PROF_EXPORT int vprintf(const char *fmt, va_list ap)
{
	PRINTF_HOOK(stdout, REAL(vprintf)(fmt, ap));
}

PROF_EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
	PRINTF_HOOK(f, REAL(__vfprintf_chk)(f, flag, fmt, ap));
}

PROF_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
	PRINTF_HOOK(stdout, REAL(__vprintf_chk)(flag, fmt, ap));
}

/* The variadic forms call the real va_list form: the same bytes, one record (record_call,
 * which sees r, err_, t0 and t1), or, where `fits` (a printf into the buffer), `buffered`. */
#define VA_HOOK(last, fits, call, buffered, record_call)                                   \
	do {                                                                               \
		va_list ap;                                                                \
		va_start(ap, last);                                                        \
		struct prof_thread *th = io_begin();                                       \
		if (!th || (fits)) {                                                       \
			int r = call;                                                      \
			va_end(ap);                                                        \
			if (th)                                                            \
				buffered;                                                  \
			return r;                                                          \
		}                                                                          \
		uint64_t own0_, t0 = prof_timed_begin(th, &own0_);                         \
		int r = call;                                                              \
		uint64_t t1 = prof_timed_end(th, t0, own0_);                               \
		va_end(ap);                                                                \
		IO_END_BEGIN(th);                                                          \
		record_call;                                                               \
		IO_END_FINISH(th);                                                         \
		return r;                                                                  \
	} while (0)

#define VA_PRINTF(f, last, call)                                                           \
	VA_HOOK(last, stdio_write_fits(f, PRINTF_ROOM), call,                              \
		buffered_done(th, PROF_IO_FPRINTF, f, r < 0, (uint64_t)r, RET_ADDR, FRAME_ADDR), \
		record_stdio(th, PROF_IO_FPRINTF, f, r < 0, r, err_, t0, t1, RET_ADDR, FRAME_ADDR))

PROF_EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
	VA_PRINTF(f, fmt, REAL(vfprintf)(f, fmt, ap));
}

PROF_EXPORT int printf(const char *fmt, ...)
{
	VA_PRINTF(stdout, fmt, REAL(vprintf)(fmt, ap));
}

PROF_EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	VA_PRINTF(f, fmt, REAL(__vfprintf_chk)(f, flag, fmt, ap));
}

PROF_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
	VA_PRINTF(stdout, fmt, REAL(__vprintf_chk)(flag, fmt, ap));
}

/* dprintf writes to a descriptor directly (no stdio buffer). */
#define VA_DPRINTF(fd, last, call)                                                         \
	VA_HOOK(last, 0, call, (void)0,                                                    \
		record(th, PROF_IO_DPRINTF, fd, RESULT(r, r), t0, t1, RET_ADDR, FRAME_ADDR))

PROF_EXPORT int dprintf(int fd, const char *fmt, ...)
{
	VA_DPRINTF(fd, fmt, REAL(vdprintf)(fd, fmt, ap));
}

PROF_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	VA_DPRINTF(fd, fmt, REAL(__vdprintf_chk)(fd, flag, fmt, ap));
}

PROF_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
	FD_HOOK(PROF_IO_DPRINTF, int, fd, REAL(vdprintf)(fd, fmt, ap));
}

PROF_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	FD_HOOK(PROF_IO_DPRINTF, int, fd, REAL(__vdprintf_chk)(fd, flag, fmt, ap));
}

#define GETLINE_HOOK(f, delim, call) \
	STDIO_HOOK_BUFFERED(PROF_IO_GETLINE, ssize_t, f, call, r < 0, r, stdio_line_fits(f, delim, 0))

PROF_EXPORT ssize_t getline(char **line, size_t *n, FILE *f)
{
	GETLINE_HOOK(f, '\n', REAL(getline)(line, n, f));
}

PROF_EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
	GETLINE_HOOK(f, delim, REAL(getdelim)(line, n, delim, f));
}

PROF_EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f)
{
	GETLINE_HOOK(f, delim, REAL(__getdelim)(line, n, delim, f));
}
