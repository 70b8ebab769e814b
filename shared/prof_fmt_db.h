/* The database family's records (event family `db`): types 100-109. SQL statements are
 * interned: DB_SQL gives a 64-bit id its text once, DB_QUERY is one execution of it.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_DB_H
#define PROF_FMT_DB_H

#include "prof_fmt_base.h"

#define PROF_DB_TYPE_FIRST 100
#define PROF_DB_TYPE_LAST 109

#define PROF_DB_RECORD_TYPES(X)          \
	X(DB_SQL, 100, prof_rec_db_sql)  \
	X(DB_QUERY, 101, prof_rec_db_query)
#define PROF_DB_STRING_RECORDS(Y) Y(DB_SQL, prof_rec_db_sql, text)

/* The database client library: the flags of both records. */
#define PROF_DB_SYSTEMS(X) X(SQLITE, "sqlite", 0) X(POSTGRESQL, "postgresql", 1)
enum prof_db_system {
#define PROF_X(name, str, v) PROF_DB_##name = (v),
	PROF_DB_SYSTEMS(PROF_X)
#undef PROF_X
	PROF_DB_SYSTEM_COUNT
};

/* DB_SQL: statement text `id` is `text`. Normalized (literals replaced by `?`) unless the
 * process ran with PROF_DB_LITERALS=1, where the raw text of each call is interned too (and
 * named by DB_QUERY.raw). An id may be written more than once; the text is the same. */
struct prof_rec_db_sql {
	struct prof_rec h;     /* flags: enum prof_db_system */
	uint64_t id;           /* a hash of the text, never 0 */
	char text[];           /* NUL-terminated, padded to 8; at most PROF_DB_SQL_MAX bytes */
};
#define PROF_DB_SQL_MAX 2048

/* DB_QUERY: one execution of a statement. time: when it began (a prepare counted with it,
 * or the first step); duration_ns: time inside the library's calls for it (SQLite: the
 * prepare before a statement's first execution and its steps; libpq: the call, or from
 * PQsend* to the last PQgetResult). rows: rows returned (SQLite: SQLITE_ROW steps; libpq:
 * PQntuples). status: 0 success, else the library's error (SQLite result code, libpq
 * ExecStatusType). */
struct prof_rec_db_query {
	struct prof_rec h;     /* flags: enum prof_db_system */
	uint64_t sql;          /* DB_SQL id of the normalized text */
	uint64_t raw;          /* DB_SQL id of the raw text (PROF_DB_LITERALS=1), else 0 */
	uint64_t duration_ns;
	uint64_t rows;
	int32_t status;
	uint32_t stack;
};

static inline const char *prof_db_system_name(unsigned s)
{
	switch (s) {
#define PROF_X(name, str, v) case v: return str;
	PROF_DB_SYSTEMS(PROF_X)
#undef PROF_X
	default: return "?";
	}
}

#endif
