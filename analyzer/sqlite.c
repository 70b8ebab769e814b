/* prof export --format sqlite: one SQLite database, as `nsys export --type sqlite` writes
 * one: processes, threads, stacks and their symbolized frames from the process model, then
 * one pass over each trace in which every family writes the rows of its records (family.h:
 * sql_schema, sql_row). The schema is in README.md. */
#include "commands.h"
#include "exports.h"
#include "family.h"
#include "process.h"
#include "stackfmt.h"
#include "trace.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

static const char core_schema[] =
	"CREATE TABLE processes(pid INTEGER PRIMARY KEY, ppid INTEGER, exe TEXT, argv TEXT,"
	" host TEXT, start_realtime_ns INTEGER, duration_ns INTEGER, exit_code INTEGER,"
	" exit_signal INTEGER, complete INTEGER, trace TEXT, os_pid INTEGER, image INTEGER);\n"
	"CREATE TABLE threads(pid INTEGER, tid INTEGER, name TEXT, start_ns INTEGER, end_ns INTEGER,"
	" cpu_ns INTEGER, lock_wait_ns INTEGER, cond_wait_ns INTEGER, join_wait_ns INTEGER);\n"
	"CREATE TABLE stacks(pid INTEGER, stack INTEGER, depth INTEGER, PRIMARY KEY(pid, stack));\n"
	"CREATE TABLE frames(pid INTEGER, stack INTEGER, level INTEGER, function TEXT, file TEXT,"
	" line INTEGER, module TEXT, address INTEGER, inlined INTEGER, kind TEXT);\n";

#define SQL_TABLES 32

struct sql_out {
	sqlite3 *db;
	int64_t pid;  /* sql_pid() */
	struct { const char *table; sqlite3_stmt *st; } cache[SQL_TABLES];
	size_t ncache;
};

/* The INSERT of table, prepared on first use: "INSERT INTO t VALUES (?,?,...)". */
static sqlite3_stmt *insert_of(struct sql_out *o, const char *table, size_t ncols)
{
	for (size_t i = 0; i < o->ncache; i++)
		if (!strcmp(o->cache[i].table, table))
			return o->cache[i].st;
	if (o->ncache == SQL_TABLES)
		return NULL;
	char sql[512];
	size_t n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (", table);
	for (size_t i = 0; i < ncols && n + 3 < sizeof(sql); i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s?", i ? "," : "");
	snprintf(sql + n, sizeof(sql) - n, ")");
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(o->db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	o->cache[o->ncache].table = table;
	o->cache[o->ncache++].st = st;
	return st;
}

int64_t sql_pid(const struct sql_out *o)
{
	return o->pid;
}

int sql_row(struct sql_out *o, const char *table, const char *types, ...)
{
	sqlite3_stmt *st = insert_of(o, table, strlen(types));
	if (!st)
		return -1;
	va_list ap;
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 'i') {
			sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
		} else {
			const char *s = va_arg(ap, const char *);
			if (s)
				sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(st, i + 1);
		}
	}
	va_end(ap);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int model_rows(struct sql_out *o, struct process *p)
{
	char argv[4096] = "";
	size_t n = 0;
	for (uint32_t i = 0; i < p->argc && n < sizeof(argv); i++)
		n += (size_t)snprintf(argv + n, sizeof(argv) - n, "%s%s", i ? " " : "", p->argv[i]);
	int rc = sql_row(o, "processes", "iitttiiiiitii", o->pid, (int64_t)p->hdr.ppid,
			 p->exe, argv, p->host, (int64_t)p->hdr.start_realtime_ns, (int64_t)p->end_ns,
			 (int64_t)(p->exit_kind == EXIT_CODE ? p->exit_value : -1),
			 (int64_t)(p->exit_kind == EXIT_SIGNAL ? p->exit_value : 0),
			 (int64_t)p->complete, p->path, (int64_t)p->hdr.pid, o->pid >> 32);
	for (size_t i = 0; rc == 0 && i < p->nthreads; i++) {
		const struct thread_info *t = &p->threads[i];
		rc = sql_row(o, "threads", "iitiiiiii", o->pid, (int64_t)t->tid, t->name,
			     (int64_t)t->start_ns, (int64_t)(t->ended ? t->end_ns : p->end_ns),
			     (int64_t)thread_cpu_ns(p, t), (int64_t)t->lock_wait_ns, (int64_t)t->cond_wait_ns,
			     (int64_t)t->join_wait_ns);
	}
	size_t pos = 0;
	uint64_t id;
	void *val;
	struct sym_frame frames[PROF_MAX_STACK_DEPTH * 2];
	while (rc == 0 && u64map_next(&p->stacks, &pos, &id, &val)) {
		int nf = stack_symbolize(p, (uint32_t)id, frames, PROF_MAX_STACK_DEPTH * 2);
		rc = sql_row(o, "stacks", "iii", o->pid, (int64_t)id, (int64_t)nf);
		for (int f = 0; rc == 0 && f < nf; f++)
			rc = sql_row(o, "frames", "iiittitiit", o->pid, (int64_t)id,
				     (int64_t)f, frames[f].function, frames[f].file,
				     (int64_t)frames[f].line, frames[f].module,
				     (int64_t)frames[f].address, (int64_t)frames[f].inlined,
				     frames[f].python ? "python" : "native");
	}
	return rc;
}

/* Every record of the trace to the family owning it. */
static int record_rows(struct sql_out *o, struct process *p)
{
	char err[512];
	struct trace *t = trace_open(p->path, err, sizeof(err));
	if (!t) {
		prof_error("%s", err);
		return -1;
	}
	struct trace_event ev;
	int got, rc = 0;
	while (rc == 0 && (got = trace_next(t, &ev, err, sizeof(err))) > 0) {
		const struct family *f = family_of_type(ev.rec->type);
		if (f && f->sql_row && prof_rec_known(ev.rec->type))
			rc = f->sql_row(o, p, &ev);
	}
	if (rc == 0 && got < 0) {
		prof_error("%s", err);
		rc = -1;
	}
	trace_close(t);
	return rc;
}

int export_sqlite(const struct cmd_opts *opts, struct process *ps, size_t n)
{
	if (!opts->outfile) {
		prof_error("export: --format sqlite writes a database file: give -o FILE.sqlite");
		return -1;
	}
	unlink(opts->outfile);  /* a new database, not rows added to an old one */
	struct sql_out o = { 0 };
	int rc = sqlite3_open(opts->outfile, &o.db) == SQLITE_OK ? 0 : -1;
	char *msg = NULL;
	if (rc == 0 && (sqlite3_exec(o.db, core_schema, NULL, NULL, &msg) != SQLITE_OK))
		rc = -1;
	for (size_t i = 0; rc == 0 && families[i]; i++)
		if (families[i]->sql_schema &&
		    sqlite3_exec(o.db, families[i]->sql_schema, NULL, NULL, &msg) != SQLITE_OK)
			rc = -1;
	if (rc == 0)
		sqlite3_exec(o.db, "BEGIN", NULL, NULL, NULL);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int64_t image = 0;  /* earlier images of the same pid: an exec chain */
		for (size_t j = 0; j < i; j++)
			image += ps[j].hdr.pid == ps[i].hdr.pid;
		o.pid = (int64_t)ps[i].hdr.pid + (image << 32);
		rc = model_rows(&o, &ps[i]);
		if (rc == 0)
			rc = record_rows(&o, &ps[i]);
	}
	if (rc == 0 && sqlite3_exec(o.db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
		rc = -1;
	if (rc < 0)
		prof_error("%s: %s", opts->outfile, msg ? msg : o.db ? sqlite3_errmsg(o.db) :
			   "cannot open");
	sqlite3_free(msg);
	for (size_t i = 0; i < o.ncache; i++)
		sqlite3_finalize(o.cache[i].st);
	sqlite3_close(o.db);
	return rc;
}
