/* The file and network I/O event family's records: types 40-59, their payloads and enums.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_IO_H
#define PROF_FMT_IO_H

#include "prof_fmt_base.h"

#define PROF_IO_TYPE_FIRST 40
#define PROF_IO_TYPE_LAST 59

#define PROF_IO_RECORD_TYPES(X)               \
	X(IO_NAME, 40, prof_rec_io_name)      \
	X(IO_CALL, 41, prof_rec_io_call)      \
	X(IO_BATCH, 42, prof_rec_io_batch)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_IO_STRING_RECORDS(Y) Y(IO_NAME, prof_rec_io_name, path)

/* Payloads.
 *
 * Every descriptor the program uses is known by a process-unique file id: IO_NAME gives an
 * id its name (an absolute path, "pipe:[inode]", "socket:[inode]", or a socket endpoint such
 * as "tcp 127.0.0.1:8080", "tcp6 [::1]:80", "udp 10.0.0.1:53", "unix /run/x.sock"); IO_CALL
 * is one call on an id. A later IO_NAME of the same id renames it (a socket that connected).
 * Reuse of a descriptor number gets a new id, so events never mix two files. */

/* The calls, X(NAME, "name", value, class). class: what the call counts as in reports:
 * 'o' open (counted in opens), 'r' read (bytes read), 'w' write (bytes written), 'c' close,
 * 'n' naming only (not a call of the program: inherited descriptors, late discovery),
 * 'x' other (seek, sync, dup, mmap, shutdown, ...). Values never change. */
#define PROF_IO_OPS(X)                                  \
	X(INHERITED, "inherited", 0, 'n')               \
	X(FOUND, "found", 1, 'n')                       \
	X(OPEN, "open", 2, 'o')                         \
	X(OPENAT, "openat", 3, 'o')                     \
	X(CREAT, "creat", 4, 'o')                       \
	X(FOPEN, "fopen", 5, 'o')                       \
	X(FREOPEN, "freopen", 6, 'o')                   \
	X(FDOPEN, "fdopen", 7, 'x')                     \
	X(PIPE, "pipe", 8, 'o')                         \
	X(SOCKET, "socket", 9, 'o')                     \
	X(SOCKETPAIR, "socketpair", 10, 'o')            \
	X(CONNECT, "connect", 11, 'x')                  \
	X(ACCEPT, "accept", 12, 'o')                    \
	X(CLOSE, "close", 13, 'c')                      \
	X(FCLOSE, "fclose", 14, 'c')                    \
	X(DUP, "dup", 15, 'x')                          \
	X(READ, "read", 16, 'r')                        \
	X(PREAD, "pread", 17, 'r')                      \
	X(READV, "readv", 18, 'r')                      \
	X(PREADV, "preadv", 19, 'r')                    \
	X(RECV, "recv", 20, 'r')                        \
	X(RECVFROM, "recvfrom", 21, 'r')                \
	X(RECVMSG, "recvmsg", 22, 'r')                  \
	X(FREAD, "fread", 23, 'r')                      \
	X(FGETS, "fgets", 24, 'r')                      \
	X(FGETC, "fgetc", 25, 'r')                      \
	X(GETLINE, "getline", 26, 'r')                  \
	X(WRITE, "write", 27, 'w')                      \
	X(PWRITE, "pwrite", 28, 'w')                    \
	X(WRITEV, "writev", 29, 'w')                    \
	X(PWRITEV, "pwritev", 30, 'w')                  \
	X(SEND, "send", 31, 'w')                        \
	X(SENDTO, "sendto", 32, 'w')                    \
	X(SENDMSG, "sendmsg", 33, 'w')                  \
	X(FWRITE, "fwrite", 34, 'w')                    \
	X(FPUTS, "fputs", 35, 'w')                      \
	X(FPUTC, "fputc", 36, 'w')                      \
	X(FPRINTF, "fprintf", 37, 'w')                  \
	X(SENDFILE, "sendfile", 38, 'w')                \
	X(SENDFILE_IN, "sendfile(in)", 39, 'r')         \
	X(COPY_FILE_RANGE, "copy_file_range", 40, 'w')  \
	X(COPY_FILE_RANGE_IN, "copy_file_range(in)", 41, 'r') \
	X(LSEEK, "lseek", 42, 'x')                      \
	X(FSYNC, "fsync", 43, 'x')                      \
	X(FDATASYNC, "fdatasync", 44, 'x')              \
	X(FFLUSH, "fflush", 45, 'x')                    \
	X(MMAP, "mmap", 46, 'x')                        \
	X(SHUTDOWN, "shutdown", 47, 'x')                \
	X(DPRINTF, "dprintf", 48, 'w')                  \
	X(LISTEN, "listen", 49, 'x')
enum prof_io_op {
#define PROF_X(name, str, v, cls) PROF_IO_##name = (v),
	PROF_IO_OPS(PROF_X)
#undef PROF_X
	PROF_IO_OP_COUNT
};

/* IO_NAME: file id `file` is now called `path` (flags: enum prof_io_op, the call that named
 * it). For a call that opens (class 'o'), the record is also that call: result is what it
 * returned (the descriptor, or -errno), duration_ns how long it took, stack where it was
 * made. A failed open names no descriptor: file is 0 and path is what the program asked for
 * (made absolute). A pipe or socketpair is one record per end. */
struct prof_rec_io_name {
	struct prof_rec h;     /* time: when the call began */
	uint32_t file;         /* process-unique id, from 1; 0: none (the call failed) */
	int32_t fd;            /* the descriptor named, or -1 */
	int64_t result;        /* >= 0 the call's result, < 0 -errno */
	uint64_t duration_ns;
	uint32_t stack;
	uint32_t pad;
	char path[];           /* NUL-terminated, padded to 8 */
};

/* IO_CALL: one call on a named descriptor (flags: enum prof_io_op). result: bytes read or
 * written (0 at end of file), the new offset (lseek), the new descriptor (dup), the mapped
 * length (mmap), 0 for others; < 0 is -errno. Stdio calls count the bytes the program handed
 * to or received from stdio, which is what reaches the file once buffers are flushed. */
struct prof_rec_io_call {
	struct prof_rec h;     /* time: when the call began */
	uint32_t file;         /* id from IO_NAME; 0 if the descriptor was not open (EBADF) */
	int32_t fd;
	int64_t result;
	uint64_t duration_ns;
	uint32_t stack;
	uint32_t pad;
};

/* IO_BATCH: `calls` stdio calls (flags: enum prof_io_op) on one file from one call site of
 * one thread, each of which only moved bytes between the program and the stream's buffer,
 * without a system call: counted, not timed (duration_ns is 0). result: their bytes
 * together. time: when the batch was written (its count full, its stream closing, the
 * thread ending, the process exiting or exec'ing), after its calls. */
struct prof_rec_io_batch {
	struct prof_rec h;
	uint32_t file;
	int32_t fd;
	int64_t result;
	uint64_t duration_ns;  /* 0 */
	uint32_t stack;
	uint32_t pad;
	uint64_t calls;
};

/* IO_NAME is an IO_CALL with a name after it, IO_BATCH one with a count: readers take any of
 * them as an IO_CALL. */
#define PROF_IO_SAME_FIELD(f)                                                               \
	_Static_assert(offsetof(struct prof_rec_io_name, f) == offsetof(struct prof_rec_io_call, f) && \
		       offsetof(struct prof_rec_io_batch, f) == offsetof(struct prof_rec_io_call, f), \
		       "IO_NAME and IO_BATCH must begin as IO_CALL does: " #f)
PROF_IO_SAME_FIELD(file);
PROF_IO_SAME_FIELD(fd);
PROF_IO_SAME_FIELD(result);
PROF_IO_SAME_FIELD(duration_ns);
PROF_IO_SAME_FIELD(stack);
#undef PROF_IO_SAME_FIELD
_Static_assert(sizeof(struct prof_rec_io_call) <= offsetof(struct prof_rec_io_name, path),
	       "IO_NAME holds a whole IO_CALL before its path");

static inline const char *prof_io_op_name(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, cls) case v: return str;
	PROF_IO_OPS(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

/* The class letter of an op (see PROF_IO_OPS), 'x' if unknown. */
static inline char prof_io_op_class(unsigned op)
{
	switch (op) {
#define PROF_X(name, str, v, cls) case v: return cls;
	PROF_IO_OPS(PROF_X)
#undef PROF_X
	default: return 'x';
	}
}

#endif
