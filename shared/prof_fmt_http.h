/* The HTTP family's records (event family `http`): types 110-119. One record per request and
 * response seen on a connection, HTTP/1.x on plain sockets or through OpenSSL.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_HTTP_H
#define PROF_FMT_HTTP_H

#include "prof_fmt_base.h"

#define PROF_HTTP_TYPE_FIRST 110
#define PROF_HTTP_TYPE_LAST 119

#define PROF_HTTP_RECORD_TYPES(X) X(HTTP_REQ, 110, prof_rec_http_req)
#define PROF_HTTP_STRING_RECORDS(Y) Y(HTTP_REQ, prof_rec_http_req, target)

/* The record's flags: which side of the connection this process was, and how it was seen. */
#define PROF_HTTP_SERVER 1u  /* set: the process received the request; clear: it sent it */
#define PROF_HTTP_TLS 2u     /* seen through SSL_read/SSL_write */

/* HTTP_REQ: one request and its response. time: the request's first bytes (client: the call
 * that sent them began; server: the call that received them ended). duration_ns: from there
 * to the end of the last call that moved response bytes before the connection's next request
 * or its close. bytes: response bytes on the wire (status line, headers, body). status: the
 * response's status code, 0 if none came. target: the route, its ids collapsed to `{id}` and
 * its query string to `?`; nothing of a body is ever recorded. */
struct prof_rec_http_req {
	struct prof_rec h;     /* flags: PROF_HTTP_* */
	uint64_t duration_ns;
	uint64_t bytes;
	uint32_t status;
	uint32_t stack;        /* client: where the request was sent; server: the response */
	char method[16];       /* NUL-terminated */
	char target[];         /* NUL-terminated, padded to 8; at most PROF_HTTP_TARGET_MAX */
};
#define PROF_HTTP_TARGET_MAX 256

#endif
