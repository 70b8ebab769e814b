/* Database client hooks: SQLite through libsqlite3 and PostgreSQL through libpq, each
 * execution of a statement one DB_QUERY record (normalized SQL, time, rows, status, stack).
 * libprof never links either library: the real functions are looked up on first use, so a
 * program that does not use them never loads them.
 *
 * SQLite. An execution runs from a statement's first sqlite3_step (after prepare or reset)
 * to SQLITE_DONE, an error, or the reset/finalize that ends it early; its time is the steps'
 * time plus, for a statement's first execution, its prepare. Per-statement state lives in a
 * map keyed by the sqlite3_stmt pointer (made at prepare, or at the first step of a statement
 * prepared before us; gone at finalize). sqlite3_exec is one execution of its whole text,
 * rows counted through a callback of ours around the program's.
 *
 * libpq. PQexec, PQexecParams and PQexecPrepared are one execution each (a PQprepare's time
 * counts with the statement's first PQexecPrepared); PQsendQuery, PQsendQueryParams and
 * PQsendQueryPrepared are one from the send to the PQgetResult that returns NULL.
 *
 * Both libraries call their own entry points (sqlite3_exec calls sqlite3_prepare_v2 and
 * sqlite3_step, PQexec calls PQgetResult): a per-thread depth keeps those inner calls out. */
#include "db.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SQLITE_ERROR 1
#define SQLITE_MISUSE 21
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQL_SCAN_MAX (1u << 16)  /* the most SQL read of a NUL-terminated text */

static __thread uintptr_t db_busy;  /* inside a real database call: its mark
				     * (prof_inside_call()) */

__attribute__((constructor)) static void db_config(void)
{
	const char *v = getenv("PROF_DB_LITERALS");
	db_literals = v && v[0] == '1';
}

#define RET_ADDR ((uintptr_t)__builtin_return_address(0))

/* Entry of a hook: the thread to record for, or NULL to pass straight through. */
static inline __attribute__((always_inline)) struct prof_thread *db_begin(void)
{
	return prof_inside_call(db_busy, prof_hook_frame()) ? NULL : prof_recording(PROF_EV_DB);
}

#define DB_CALL(th, result, call)             \
	db_busy = prof_hook_frame();          \
	uint64_t t0 = prof_now();             \
	result = call;                        \
	uint64_t t1 = prof_now();             \
	db_busy = 0;                          \
	int err_ = errno;                     \
	prof_hook_enter(th)
#define DB_DONE(th)      \
	(th)->in_hook--; \
	errno = err_

static void emit(struct prof_thread *th, unsigned system, uint64_t sql, uint64_t raw,
		 uint64_t start, uint64_t dur, uint64_t rows, int32_t status, uint32_t stack)
{
	th = prof_thread_get();
	struct prof_rec_db_query *r = prof_reserve(th, sizeof(*r));
	if (!r)
		return;
	r->sql = sql;
	r->raw = raw;
	r->duration_ns = dur;
	r->rows = rows;
	r->status = status;
	r->stack = stack;
	prof_commit(r, PROF_REC_DB_QUERY, system, sizeof(*r), start);
}

static size_t sql_len(const char *s, long n)
{
	if (!s)
		return 0;
	return n >= 0 ? strnlen(s, (size_t)n) : strnlen(s, SQL_SCAN_MAX);
}

/* Normalized and (with PROF_DB_LITERALS=1) raw ids of a text. */
static void sql_ids(struct prof_thread *th, unsigned system, const char *s, size_t n,
		    uint64_t *sql, uint64_t *raw)
{
	*sql = db_sql_id(th, system, s, n, 0);
	*raw = db_literals ? db_sql_id(th, system, s, n, 1) : 0;
}

/* ---- SQLite ----------------------------------------------------------------------------- */

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef int (*sqlite3_callback)(void *, int, char **, char **);

struct db_stmt {
	uint64_t sql, raw;
	uint64_t start, ns, rows;  /* the execution in progress */
	uint64_t prep_start, prep_ns;  /* a prepare not yet counted */
	uint32_t stack, pid;       /* pid: the process that made the entry */
	int active;
};
static struct prof_map stmts = PROF_MAP(1u << 16, struct db_stmt);

static struct {
	int (*prepare)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
	int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
	int (*prepare_v3)(sqlite3 *, const char *, int, unsigned, sqlite3_stmt **, const char **);
	int (*prepare16_v2)(sqlite3 *, const void *, int, sqlite3_stmt **, const void **);
	int (*prepare16_v3)(sqlite3 *, const void *, int, unsigned, sqlite3_stmt **, const void **);
	int (*step)(sqlite3_stmt *);
	int (*reset)(sqlite3_stmt *);
	int (*finalize)(sqlite3_stmt *);
	int (*exec)(sqlite3 *, const char *, sqlite3_callback, void *, char **);
	const char *(*sql)(sqlite3_stmt *);
} lite;

/* The entry of st; fresh: just prepared (an entry left by a statement whose finalize we did
 * not see is made anew). NULL when the map is full. */
static struct db_stmt *stmt_entry(struct prof_thread *th, sqlite3_stmt *st, int fresh)
{
	int created;
	struct db_stmt *s = prof_map_put(&stmts, (uintptr_t)st, &created);
	if (!s)
		return NULL;
	if (created || fresh || s->pid != prof_writer_pid()) {
		if (!lite.sql)
			lite.sql = (__typeof__(lite.sql))prof_real_sym("sqlite3_sql");
		const char *text = lite.sql ? lite.sql(st) : NULL;
		memset(s, 0, sizeof(*s));
		sql_ids(th, PROF_DB_SQLITE, text, sql_len(text, -1), &s->sql, &s->raw);
		s->pid = prof_writer_pid();
	}
	return s;
}

static void stmt_end(struct prof_thread *th, struct db_stmt *s, int32_t status)
{
	emit(th, PROF_DB_SQLITE, s->sql, s->raw, s->start, s->ns, s->rows, status, s->stack);
	s->active = 0;
}

/* After a prepare: a failure is an execution of its own; a statement remembers its time. */
static void prepared(struct prof_thread *th, int rc, const char *sql, long n, sqlite3_stmt *st,
		     uint64_t t0, uint64_t t1, uintptr_t ret)
{
	if (rc != 0) {
		uint64_t id, raw;
		sql_ids(th, PROF_DB_SQLITE, sql, sql_len(sql, n), &id, &raw);
		emit(th, PROF_DB_SQLITE, id, raw, t0, t1 - t0, 0, rc, prof_stack_at(th, ret));
		return;
	}
	struct db_stmt *s = st ? stmt_entry(th, st, 1) : NULL;
	if (s) {
		s->prep_start = t0;
		s->prep_ns = t1 - t0;
	}
}

#define PREPARE_HOOK(fn, sql, n, stp, utf8, ...)                                         \
	do {                                                                             \
		REAL_OR(lite.fn, "sqlite3_" #fn, SQLITE_MISUSE);                         \
		struct prof_thread *th = db_begin();                                     \
		if (!th)                                                                 \
			return lite.fn(__VA_ARGS__);                                     \
		DB_CALL(th, int rc, lite.fn(__VA_ARGS__));                               \
		prepared(th, rc, (utf8) ? (const char *)(sql) : NULL, n, stp ? *stp : NULL, \
			 t0, t1, RET_ADDR);                                              \
		DB_DONE(th);                                                             \
		return rc;                                                               \
	} while (0)

PROF_EXPORT int sqlite3_prepare(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st,
				const char **tail)
{
	PREPARE_HOOK(prepare, sql, n, st, 1, db, sql, n, st, tail);
}

PROF_EXPORT int sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st,
				   const char **tail)
{
	PREPARE_HOOK(prepare_v2, sql, n, st, 1, db, sql, n, st, tail);
}

PROF_EXPORT int sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags,
				   sqlite3_stmt **st, const char **tail)
{
	PREPARE_HOOK(prepare_v3, sql, n, st, 1, db, sql, n, flags, st, tail);
}

/* UTF-16 text: a statement's text comes from sqlite3_sql(); a failed one has none. */
PROF_EXPORT int sqlite3_prepare16_v2(sqlite3 *db, const void *sql, int n, sqlite3_stmt **st,
				     const void **tail)
{
	PREPARE_HOOK(prepare16_v2, sql, n, st, 0, db, sql, n, st, tail);
}

PROF_EXPORT int sqlite3_prepare16_v3(sqlite3 *db, const void *sql, int n, unsigned flags,
				     sqlite3_stmt **st, const void **tail)
{
	PREPARE_HOOK(prepare16_v3, sql, n, st, 0, db, sql, n, flags, st, tail);
}

PROF_EXPORT int sqlite3_step(sqlite3_stmt *st)
{
	REAL_OR(lite.step, "sqlite3_step", SQLITE_MISUSE);
	struct prof_thread *th = db_begin();
	if (!th || !st)
		return lite.step(st);
	DB_CALL(th, int rc, lite.step(st));
	struct db_stmt *s = stmt_entry(th, st, 0);
	if (s) {
		if (!s->active) {
			s->active = 1;
			s->start = s->prep_ns ? s->prep_start : t0;
			s->ns = s->prep_ns;
			s->prep_ns = 0;
			s->rows = 0;
			s->stack = prof_stack_at(th, RET_ADDR);
		}
		s->ns += t1 - t0;
		if (rc == SQLITE_ROW)
			s->rows++;
		else
			stmt_end(th, s, rc == SQLITE_DONE ? 0 : rc);
	}
	DB_DONE(th);
	return rc;
}

/* reset and finalize end an execution the program stopped reading. */
static void stmt_stop(struct prof_thread *th, sqlite3_stmt *st, int forget)
{
	struct db_stmt *s = prof_map_get(&stmts, (uintptr_t)st);
	if (s && s->active && s->pid == prof_writer_pid())
		stmt_end(th, s, 0);
	if (s && forget)
		prof_map_del(&stmts, (uintptr_t)st);
}

#define STOP_HOOK(fn, forget)                                     \
	do {                                                      \
		REAL_OR(lite.fn, "sqlite3_" #fn, SQLITE_MISUSE);  \
		struct prof_thread *th = db_begin();              \
		if (!th || !st)                                   \
			return lite.fn(st);                       \
		prof_hook_enter(th);                              \
		stmt_stop(th, st, forget);                        \
		th->in_hook--;                                    \
		return lite.fn(st);                               \
	} while (0)

PROF_EXPORT int sqlite3_reset(sqlite3_stmt *st)
{
	STOP_HOOK(reset, 0);
}

PROF_EXPORT int sqlite3_finalize(sqlite3_stmt *st)
{
	STOP_HOOK(finalize, 1);
}

/* sqlite3_exec's rows reach the program's callback through ours; its time is not the query's. */
struct exec_rows {
	sqlite3_callback cb;
	void *arg;
	uint64_t rows, cb_ns;
};

static int exec_row(void *p, int n, char **vals, char **cols)
{
	struct exec_rows *x = p;
	x->rows++;
	if (!x->cb)
		return 0;
	uint64_t t = prof_now();
	uintptr_t busy = db_busy;
	db_busy = 0;  /* the callback is the program's: its own queries count */
	int r = x->cb(x->arg, n, vals, cols);
	db_busy = busy;
	x->cb_ns += prof_now() - t;
	return r;
}

PROF_EXPORT int sqlite3_exec(sqlite3 *db, const char *sql, sqlite3_callback cb, void *arg,
			     char **errmsg)
{
	REAL_OR(lite.exec, "sqlite3_exec", SQLITE_MISUSE);
	struct prof_thread *th = db_begin();
	if (!th)
		return lite.exec(db, sql, cb, arg, errmsg);
	struct exec_rows x = { cb, arg, 0, 0 };
	DB_CALL(th, int rc, lite.exec(db, sql, exec_row, &x, errmsg));
	uint64_t id, raw;
	sql_ids(th, PROF_DB_SQLITE, sql, sql_len(sql, -1), &id, &raw);
	uint64_t dur = t1 - t0 > x.cb_ns ? t1 - t0 - x.cb_ns : 0;
	emit(th, PROF_DB_SQLITE, id, raw, t0, dur, x.rows, rc, prof_stack_at(th, RET_ADDR));
	DB_DONE(th);
	return rc;
}

/* ---- PostgreSQL (libpq) ------------------------------------------------------------------- */

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;

enum { PGRES_BAD_RESPONSE = 5, PGRES_FATAL_ERROR = 7, PGRES_PIPELINE_ABORTED = 11 };

/* A statement PQprepare'd on a connection, by name. */
struct pq_prepared {
	uint64_t sql, raw, prep_start, prep_ns;
};
static struct prof_map pq_names = PROF_MAP(1u << 14, struct pq_prepared);

/* A connection's queries sent and not yet complete (PQsend*), oldest first. */
#define PQ_PENDING 8
struct pq_pending {
	uint64_t sql, raw, start, rows, name;  /* name: a PQsendPrepare's statement key, else 0 */
	int32_t status;
	uint32_t stack;
};
struct pq_conn {
	uint32_t head, count;
	struct pq_pending q[PQ_PENDING];
};
static struct prof_map pq_conns = PROF_MAP(1u << 12, struct pq_conn);

static struct {
	PGresult *(*exec)(PGconn *, const char *);
	PGresult *(*exec_params)(PGconn *, const char *, int, const Oid *, const char *const *,
				 const int *, const int *, int);
	PGresult *(*prepare)(PGconn *, const char *, const char *, int, const Oid *);
	PGresult *(*exec_prepared)(PGconn *, const char *, int, const char *const *, const int *,
				   const int *, int);
	int (*send_query)(PGconn *, const char *);
	int (*send_query_params)(PGconn *, const char *, int, const Oid *, const char *const *,
				 const int *, const int *, int);
	int (*send_prepare)(PGconn *, const char *, const char *, int, const Oid *);
	int (*send_query_prepared)(PGconn *, const char *, int, const char *const *, const int *,
				   const int *, int);
	PGresult *(*get_result)(PGconn *);
	void (*finish)(PGconn *);
	int (*ntuples)(const PGresult *);
	int (*status)(const PGresult *);
} pq;

static uint64_t name_key(PGconn *conn, const char *name)
{
	return prof_hash(name ? name : "", name ? strnlen(name, 256) : 0, (uintptr_t)conn);
}

/* A result's rows and status (0 success, else its ExecStatusType, -1 for no result). */
static void pq_outcome(const PGresult *res, uint64_t *rows, int32_t *status)
{
	if (!pq.ntuples)
		pq.ntuples = (__typeof__(pq.ntuples))prof_real_sym("PQntuples");
	if (!pq.status)
		pq.status = (__typeof__(pq.status))prof_real_sym("PQresultStatus");
	if (!res || !pq.ntuples || !pq.status) {
		*status = res ? 0 : -1;
		return;
	}
	int st = pq.status(res);
	if (st == PGRES_BAD_RESPONSE || st == PGRES_FATAL_ERROR || st == PGRES_PIPELINE_ABORTED)
		*status = st;
	int n = pq.ntuples(res);
	*rows += n > 0 ? (uint64_t)n : 0;
}

/* One synchronous call with its result. */
static void pq_done(struct prof_thread *th, uint64_t sql, uint64_t raw, uint64_t start,
		    uint64_t dur, const PGresult *res, uintptr_t ret)
{
	uint64_t rows = 0;
	int32_t status = 0;
	pq_outcome(res, &rows, &status);
	emit(th, PROF_DB_POSTGRESQL, sql, raw, start, dur, rows, status, prof_stack_at(th, ret));
}

#define PQ_TEXT_HOOK(fn, name, text, ...)                                               \
	do {                                                                            \
		REAL_OR(pq.fn, name, NULL);                                             \
		struct prof_thread *th = db_begin();                                    \
		if (!th)                                                                \
			return pq.fn(__VA_ARGS__);                                      \
		DB_CALL(th, PGresult *res, pq.fn(__VA_ARGS__));                         \
		uint64_t sql, raw;                                                      \
		sql_ids(th, PROF_DB_POSTGRESQL, text, sql_len(text, -1), &sql, &raw);   \
		pq_done(th, sql, raw, t0, t1 - t0, res, RET_ADDR);                      \
		DB_DONE(th);                                                            \
		return res;                                                             \
	} while (0)

PROF_EXPORT PGresult *PQexec(PGconn *conn, const char *query)
{
	PQ_TEXT_HOOK(exec, "PQexec", query, conn, query);
}

PROF_EXPORT PGresult *PQexecParams(PGconn *conn, const char *command, int n, const Oid *types,
				   const char *const *values, const int *lengths,
				   const int *formats, int result_format)
{
	PQ_TEXT_HOOK(exec_params, "PQexecParams", command, conn, command, n, types, values,
		     lengths, formats, result_format);
}

/* A statement prepared under key (name_key()): its text, and a prepare time not yet counted. */
static void pq_remember(uint64_t key, uint64_t sql, uint64_t raw, uint64_t start, uint64_t ns)
{
	int created;
	struct pq_prepared *p = prof_map_put(&pq_names, key, &created);
	if (p)
		*p = (struct pq_prepared){ sql, raw, start, ns };
}

PROF_EXPORT PGresult *PQprepare(PGconn *conn, const char *name, const char *query, int n,
				const Oid *types)
{
	REAL_OR(pq.prepare, "PQprepare", NULL);
	struct prof_thread *th = db_begin();
	if (!th)
		return pq.prepare(conn, name, query, n, types);
	DB_CALL(th, PGresult *res, pq.prepare(conn, name, query, n, types));
	uint64_t rows = 0, sql, raw;
	int32_t status = 0;
	pq_outcome(res, &rows, &status);
	sql_ids(th, PROF_DB_POSTGRESQL, query, sql_len(query, -1), &sql, &raw);
	if (status)  /* a failed prepare is a call of its own */
		emit(th, PROF_DB_POSTGRESQL, sql, raw, t0, t1 - t0, 0, status,
		     prof_stack_at(th, RET_ADDR));
	else
		pq_remember(name_key(conn, name), sql, raw, t0, t1 - t0);
	DB_DONE(th);
	return res;
}

/* The text of a prepared statement (its prepare's time taken, once), or "EXECUTE name". */
static void pq_named(struct prof_thread *th, PGconn *conn, const char *name, uint64_t *sql,
		     uint64_t *raw, uint64_t *start, uint64_t *prep_ns)
{
	struct pq_prepared *p = prof_map_get(&pq_names, name_key(conn, name));
	if (p) {
		*sql = p->sql;
		*raw = p->raw;
		*prep_ns = p->prep_ns;
		if (p->prep_ns)
			*start = p->prep_start;
		p->prep_ns = 0;
		return;
	}
	char text[300];
	size_t n = 0;
	for (const char *s = "EXECUTE "; *s; s++)
		text[n++] = *s;
	for (const char *s = name ? name : ""; *s && n + 1 < sizeof(text); s++)
		text[n++] = *s;
	sql_ids(th, PROF_DB_POSTGRESQL, text, n, sql, raw);
	*prep_ns = 0;
}

PROF_EXPORT PGresult *PQexecPrepared(PGconn *conn, const char *name, int n,
				     const char *const *values, const int *lengths,
				     const int *formats, int result_format)
{
	REAL_OR(pq.exec_prepared, "PQexecPrepared", NULL);
	struct prof_thread *th = db_begin();
	if (!th)
		return pq.exec_prepared(conn, name, n, values, lengths, formats, result_format);
	DB_CALL(th, PGresult *res,
		pq.exec_prepared(conn, name, n, values, lengths, formats, result_format));
	uint64_t sql, raw, start = t0, prep_ns;
	pq_named(th, conn, name, &sql, &raw, &start, &prep_ns);
	pq_done(th, sql, raw, start, t1 - t0 + prep_ns, res, RET_ADDR);
	DB_DONE(th);
	return res;
}

/* A query sent: queued on its connection until PQgetResult says it is complete. */
static void pq_sent(struct prof_thread *th, PGconn *conn, int ok, uint64_t sql, uint64_t raw,
		    uint64_t name, uint64_t t0, uint64_t t1, uintptr_t ret)
{
	uint32_t stack = prof_stack_at(th, ret);
	int created;
	struct pq_conn *c = ok ? prof_map_put(&pq_conns, (uintptr_t)conn, &created) : NULL;
	if (!ok || !c || c->count == PQ_PENDING) {  /* failed, or no room: a call of its own */
		emit(th, PROF_DB_POSTGRESQL, sql, raw, t0, t1 - t0, 0, ok ? 0 : -1, stack);
		return;
	}
	c->q[(c->head + c->count++) % PQ_PENDING] =
		(struct pq_pending){ sql, raw, t0, 0, name, 0, stack };
}

#define PQ_SEND_HOOK(fn, name, ids, key, ...)                                       \
	do {                                                                        \
		REAL_OR(pq.fn, name, 0);                                            \
		struct prof_thread *th = db_begin();                                \
		if (!th)                                                            \
			return pq.fn(__VA_ARGS__);                                  \
		DB_CALL(th, int ok, pq.fn(__VA_ARGS__));                            \
		uint64_t sql, raw;                                                  \
		ids;                                                                \
		pq_sent(th, conn, ok, sql, raw, key, t0, t1, RET_ADDR);             \
		DB_DONE(th);                                                        \
		return ok;                                                          \
	} while (0)

#define TEXT_IDS(text) sql_ids(th, PROF_DB_POSTGRESQL, text, sql_len(text, -1), &sql, &raw)

PROF_EXPORT int PQsendQuery(PGconn *conn, const char *query)
{
	PQ_SEND_HOOK(send_query, "PQsendQuery", TEXT_IDS(query), 0, conn, query);
}

PROF_EXPORT int PQsendQueryParams(PGconn *conn, const char *command, int n, const Oid *types,
				  const char *const *values, const int *lengths,
				  const int *formats, int result_format)
{
	PQ_SEND_HOOK(send_query_params, "PQsendQueryParams", TEXT_IDS(command), 0, conn, command,
		     n, types, values, lengths, formats, result_format);
}

PROF_EXPORT int PQsendPrepare(PGconn *conn, const char *name, const char *query, int n,
			      const Oid *types)
{
	PQ_SEND_HOOK(send_prepare, "PQsendPrepare", TEXT_IDS(query), name_key(conn, name), conn,
		     name, query, n, types);
}

PROF_EXPORT int PQsendQueryPrepared(PGconn *conn, const char *name, int n,
				    const char *const *values, const int *lengths,
				    const int *formats, int result_format)
{
	uint64_t start, prep_ns;  /* unused: the send is the start */
	PQ_SEND_HOOK(send_query_prepared, "PQsendQueryPrepared",
		     pq_named(th, conn, name, &sql, &raw, &start, &prep_ns), 0, conn, name, n,
		     values, lengths, formats, result_format);
}

PROF_EXPORT PGresult *PQgetResult(PGconn *conn)
{
	REAL_OR(pq.get_result, "PQgetResult", NULL);
	struct prof_thread *th = db_begin();
	if (!th || prof_map_empty(&pq_conns))
		return pq.get_result(conn);
	DB_CALL(th, PGresult *res, pq.get_result(conn));
	(void)t0;
	struct pq_conn *c = prof_map_get(&pq_conns, (uintptr_t)conn);
	if (c && c->count) {
		struct pq_pending *q = &c->q[c->head];
		if (res) {
			pq_outcome(res, &q->rows, &q->status);
		} else {  /* the query is complete */
			c->head = (c->head + 1) % PQ_PENDING;
			c->count--;
			if (q->name && q->status == 0)  /* a PQsendPrepare: remembered */
				pq_remember(q->name, q->sql, q->raw, 0, 0);
			else
				emit(th, PROF_DB_POSTGRESQL, q->sql, q->raw, q->start,
				     t1 - q->start, q->rows, q->status, q->stack);
		}
	}
	DB_DONE(th);
	return res;
}

PROF_EXPORT void PQfinish(PGconn *conn)
{
	if (!pq.finish && !(pq.finish = (__typeof__(pq.finish))prof_real_sym("PQfinish")))
		return;
	if (prof_recording(PROF_EV_DB))
		prof_map_del(&pq_conns, (uintptr_t)conn);
	pq.finish(conn);
}
