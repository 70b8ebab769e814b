/* What the database (db.c) and HTTP (http.c) hooks share: a fixed lock-free map from 64-bit
 * keys to small values in memory of our own, and the lookup of the real functions of
 * libraries the program may load privately (libsqlite3, libpq, libssl). */
#ifndef PROF_PRELOAD_DB_H
#define PROF_PRELOAD_DB_H

#include "prof.h"

#include <sys/types.h>

/* A map of `slots` entries of vsize bytes, mmap'd at the first insertion. Keys are never 0 or
 * 1 (empty, deleted). One thread at a time uses a given key (a statement, a connection), so
 * values are plain memory; only the claiming of slots is atomic. Lookups probe a bounded
 * number of slots: a crowded map refuses an insertion rather than slow every call. */
struct prof_map {
	_Atomic uint64_t *keys;
	char *vals;
	uint32_t slots, vsize;
	_Atomic int state;  /* 0 none, 1 being made, 2 ready, 3 failed */
};
#define PROF_MAP(slots_, type) { NULL, NULL, (slots_), sizeof(type), 0 }
void *prof_map_get(struct prof_map *m, uint64_t key);
/* The value of key, made zeroed when new (*created set); NULL if full or not possible. */
void *prof_map_put(struct prof_map *m, uint64_t key, int *created);
void prof_map_del(struct prof_map *m, uint64_t key);
static inline int prof_map_empty(const struct prof_map *m)
{
	return atomic_load_explicit(&m->state, memory_order_relaxed) != 2;
}

/* The real function `name` after ours: dlsym(RTLD_NEXT), or where that cannot see it (a
 * library dlopen'ed privately, as Python loads libssl and libsqlite3), the first loaded
 * object that defines it. Loads nothing. NULL if no loaded object has it. */
void *prof_real_sym(const char *name);
/* In a hook: the real function in `var`, looked up on first use; `fail` is returned when no
 * loaded object has it. */
#define REAL_OR(var, name, fail)                                                      \
	do {                                                                          \
		if (unlikely(!var) && !(var = (__typeof__(var))prof_real_sym(name)))   \
			return fail;                                                  \
	} while (0)

/* 64-bit FNV-1a of s[0..n), never 0 or 1. */
uint64_t prof_hash(const char *s, size_t n, uint64_t seed);

/* The id of SQL text s[0..n) for `system`, its DB_SQL record written the first time this
 * process sees it; normalized (literals -> ?) unless raw. */
uint64_t db_sql_id(struct prof_thread *th, unsigned system, const char *s, size_t n, int raw);
extern int db_literals;  /* PROF_DB_LITERALS=1 */

/* http.c, called by the I/O hooks on a socket read (out 0) or write (out 1) that moved
 * buf[0..n), and when a descriptor is closed. */
extern struct prof_map http_conns;  /* the connections seen to speak HTTP */
void http_fd_data_seen(struct prof_thread *th, int fd, int out, const void *buf, size_t n,
		       uint64_t t0, uint64_t t1);
static inline void http_fd_data(struct prof_thread *th, int fd, int out, const void *buf,
				size_t n, uint64_t t0, uint64_t t1)
{
	const char *b = buf;
	if (prof_map_empty(&http_conns) && (n < 6 || b[0] < 'A' || b[0] > 'Z'))
		return;  /* the common case, inline: no HTTP yet, and not a request line */
	http_fd_data_seen(th, fd, out, buf, n, t0, t1);
}
void http_fd_closed(struct prof_thread *th, int fd, uint32_t id);
/* n bytes that did not pass through our hands were written to fd (sendfile: a body). */
void http_fd_sent(struct prof_thread *th, int fd, size_t n, uint64_t t1);

#endif
