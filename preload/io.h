/* What the I/O hooks (io.c) and the descriptor table (fdtable.c) share. */
#ifndef PROF_PRELOAD_IO_H
#define PROF_PRELOAD_IO_H

#include "prof.h"

#include <sys/socket.h>

#define IO_FD_OURS 0xffffffffu  /* a descriptor of libprof's own: never reported */
#define IO_NAME_MAX 4096

/* fdtable.c: descriptor number -> file id (0: not known yet). */
extern _Atomic uint32_t *io_fd_table;
extern uint32_t io_fd_table_size;
extern _Atomic uint32_t io_fd_pid;  /* the process whose descriptors the table holds */

/* Makes the table and names the inherited descriptors: once per process (and again in a
 * fork child, where an atfork handler sets io_fd_pid to 0). Hooks call io_ready() first: one
 * load of a variable written only then (the trace header's pid shares its cache line with the
 * chunk counter every thread writes). */
void io_fd_setup(struct prof_thread *th);

static inline int io_setup_pending(void)
{
	return unlikely(atomic_load_explicit(&io_fd_pid, memory_order_acquire) == 0);
}

static inline void io_ready(struct prof_thread *th)
{
	if (io_setup_pending())
		io_fd_setup(th);
}

static inline uint32_t io_fd_peek(int fd)
{
	if ((unsigned)fd >= io_fd_table_size)
		return 0;
	return atomic_load_explicit(&io_fd_table[fd], memory_order_relaxed);
}

/* The id of fd, naming it now (IO_NAME "found") if it was opened by a call we do not hook.
 * 0 if fd is not open or out of the table; IO_FD_OURS for our own descriptors. */
uint32_t io_fd_id(struct prof_thread *th, int fd);

/* fd has just been opened by the call `op` of the program: gives it a new id named `name`
 * (NULL: ask the kernel) and writes the IO_NAME record of the call. Returns the id. */
uint32_t io_fd_opened(struct prof_thread *th, int fd, unsigned op, const char *name,
		      int64_t result, uint64_t t0, uint64_t dur, uint32_t stack);
/* A call that named nothing (a failed open): IO_NAME with file 0 and the path it asked for. */
void io_name_failed(struct prof_thread *th, unsigned op, const char *name, int64_t result,
		    uint64_t t0, uint64_t dur, uint32_t stack);
/* The same for a path opened relative to dirfd (AT_FDCWD), named absolute. */
void io_path_failed(struct prof_thread *th, unsigned op, int dirfd, const char *path,
		    int64_t result, uint64_t t0, uint64_t dur, uint32_t stack);
/* Renames id (a socket that connected or was accepted) with the IO_NAME record of the call. */
void io_fd_rename(struct prof_thread *th, int fd, uint32_t id, unsigned op, const char *name,
		  int64_t result, uint64_t t0, uint64_t dur, uint32_t stack);
/* fd was closed (it had id): forget it, unless someone has reused the number already. */
void io_fd_closed(int fd, uint32_t id);
/* 1 + the highest descriptor ever named: every descriptor with a name is below it. */
unsigned io_fd_high(void);
/* newfd is now a copy of the descriptor that has id. */
void io_fd_dup(int newfd, uint32_t id);

/* io.c: the buffered stdio calls counted and not yet written (IO_BATCH): the calling
 * thread's (a thread that ends), or every thread's (exit, exec). */
void io_batches_flush(struct prof_thread *th);
void io_batches_flush_all(struct prof_thread *th);

/* Names. */
int io_name_of_fd(int fd, char *buf, size_t len);  /* readlink /proc/self/fd/N, sockets by address */
int io_name_of_pipe(int fd, char *buf, size_t cap);  /* "pipe:[inode]" from fstat; -1: no pipe */
void io_name_of_sockaddr(const struct sockaddr *sa, socklen_t len, int type, char *buf,
			 size_t cap);

#endif
