/* Text the db and http families record, made safe to keep: SQL with its literals replaced by
 * `?`, and HTTP request lines reduced to method and route. Both bounded, no allocation: the
 * preload library calls them inside the program; the analyzer's tests call them too. */
#ifndef PROF_NORM_H
#define PROF_NORM_H

#include <stddef.h>

/* Normalizes the SQL text in[0..n) (n stops earlier at a NUL) into out (cap > 0 bytes, always
 * NUL-terminated): string and number literals become `?`, a list of them after IN becomes
 * `(?)`, comments go, runs of white space become one space, a trailing `;` goes. Identifiers,
 * quoted identifiers, keywords and placeholders ($1, ?, :name) stay. Returns strlen(out). */
size_t prof_sql_normalize(const char *in, size_t n, char *out, size_t cap);

/* If buf[0..n) begins an HTTP/1.x request line ("GET /path HTTP/1.1"), copies its method
 * (uppercase, up to mcap-1 bytes) and its route (see prof_http_route) and returns 1; else 0. */
int prof_http_request(const char *buf, size_t n, char *method, size_t mcap, char *route,
		      size_t rcap);
/* If buf[0..n) begins an HTTP/1.x status line ("HTTP/1.1 404 Not Found"), returns the status
 * code (100..999); else 0. */
int prof_http_status(const char *buf, size_t n);
/* The route of a request target t[0..n) (ends at a space, NUL or n) into out (cap > 0): no
 * scheme and host, no query string or fragment, path segments that are
 * numbers `{id}`, UUIDs `{uuid}`, long hex strings `{hex}`. Returns strlen(out). */
size_t prof_http_route(const char *t, size_t n, char *out, size_t cap);

#endif
