/* HTTP/1.x requests seen on the wire: the I/O hooks hand over what socket reads and writes
 * moved (http_fd_data), the OpenSSL hooks below what SSL_read/SSL_write moved in clear.
 * A connection becomes HTTP when a request line passes on it: written, this process is the
 * client; read, the server. Each request and its response is one HTTP_REQ record: method,
 * route (prof_http_route: ids and query collapsed), status, response bytes, latency, stack.
 *
 * Only the first bytes of a request or response are looked at (request line, status line,
 * the response headers that say where it ends: Content-Length, chunked, HEAD, 204, 304);
 * bodies are counted, never read or copied. A response ends when its length is reached, at
 * the connection's next request, or at its close (shutdown, close, SSL_free). */
#include "db.h"
#include "io.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "prof_norm.h"

#define HEADERS_SCAN 16384u  /* the most response-header bytes looked at */

enum { IDLE, REQUEST, RESPONSE };

struct http_conn {
	uint64_t start, last, bytes;
	uint64_t expect;         /* response bytes when complete, 0 if unknown */
	uint32_t phase, flags, status, stack;
	int chunked, head;
	char method[16];
	char target[PROF_HTTP_TARGET_MAX];
};
struct prof_map http_conns = PROF_MAP(1u << 12, struct http_conn);

static void emit(struct prof_thread *th, const struct http_conn *c)
{
	th = prof_thread_get();
	size_t tl = strnlen(c->target, sizeof(c->target) - 1);
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_http_req) + tl + 1));
	struct prof_rec_http_req *r = prof_reserve(th, size);
	if (!r)
		return;
	r->duration_ns = c->last > c->start ? c->last - c->start : 0;
	r->bytes = c->bytes;
	r->status = c->status;
	r->stack = c->stack;
	memcpy(r->method, c->method, sizeof(r->method));
	memcpy(r->target, c->target, tl);
	memset(r->target + tl, 0, size - sizeof(*r) - tl);
	prof_commit(r, PROF_REC_HTTP_REQ, c->flags, size, c->start);
}

/* The exchange in progress is over at time `end` (if no response came: when given up). */
static void finish(struct prof_thread *th, struct http_conn *c, uint64_t end)
{
	if (c->phase == IDLE)
		return;
	if (c->phase == REQUEST)
		c->last = end;
	emit(th, c);
	c->phase = IDLE;
}

/* Where the response that begins buf[0..n) ends, from its headers (when all are there). */
static void response_length(struct http_conn *c, const char *buf, size_t n)
{
	size_t lim = n < HEADERS_SCAN ? n : HEADERS_SCAN, end = 0;
	uint64_t length = 0;
	int has_length = 0;
	for (size_t i = 0; i + 3 < lim; i++)
		if (buf[i] == '\r' && !memcmp(buf + i, "\r\n\r\n", 4)) {
			end = i + 4;
			break;
		}
	if (!end)
		return;
	for (size_t i = 0; i < end; i++) {
		if (buf[i] != '\n')
			continue;
		const char *h = buf + i + 1;
		size_t left = end - i - 1;
		if (left > 15 && !strncasecmp(h, "content-length:", 15)) {
			size_t k = 15;
			while (k < left && h[k] == ' ')
				k++;
			for (has_length = 1; k < left && h[k] >= '0' && h[k] <= '9'; k++)
				length = length * 10 + (uint64_t)(h[k] - '0');
		} else if (left > 18 && !strncasecmp(h, "transfer-encoding:", 18)) {
			for (size_t k = 18; k + 7 <= left && h[k] != '\r'; k++)
				if (!strncasecmp(h + k, "chunked", 7))
					c->chunked = 1;
		}
	}
	if (c->head || c->status == 204 || c->status == 304)
		c->expect = c->bytes + end;
	else if (has_length && !c->chunked)
		c->expect = c->bytes + end + length;
}

/* n more response bytes (buf: what they were, NULL if not seen) at time t1; the exchange is
 * over when the response's length is reached or its last chunk passed. */
static void response_bytes(struct prof_thread *th, struct http_conn *c, const char *buf,
			   size_t n, uint64_t t1)
{
	c->bytes += n;
	c->last = t1;
	if (c->phase == RESPONSE &&
	    ((c->expect && c->bytes >= c->expect) ||
	     (c->chunked && buf && n >= 5 && !memcmp(buf + n - 5, "0\r\n\r\n", 5))))
		finish(th, c, t1);
}

/* Bytes buf[0..n) moved on connection `key`, written by this process when `out`. */
static void conn_data(struct prof_thread *th, struct http_conn *c, int out, const char *buf,
		      size_t n, uint64_t t0, uint64_t t1)
{
	int server = (c->flags & PROF_HTTP_SERVER) != 0;
	if (server != out) {  /* the request direction */
		char method[16], target[PROF_HTTP_TARGET_MAX];
		if (c->phase == REQUEST ||
		    !prof_http_request(buf, n, method, sizeof(method), target, sizeof(target)))
			return;  /* a request's body, or more of it */
		finish(th, c, t0);
		memcpy(c->method, method, sizeof(method));
		memcpy(c->target, target, sizeof(target));
		c->phase = REQUEST;
		c->start = server ? t1 : t0;
		c->last = c->start;
		c->bytes = c->expect = 0;
		c->status = 0;
		c->chunked = 0;
		c->head = !strcmp(method, "HEAD");
		c->stack = server ? 0 : prof_stack_here(th);
		return;
	}
	if (c->phase == IDLE)
		return;
	if (c->phase == REQUEST) {
		int status = prof_http_status(buf, n);
		if (!status)
			return;
		if (status >= 200) {  /* 1xx responses are interim: the final one follows */
			c->phase = RESPONSE;
			c->status = (uint32_t)status;
			if (server)
				c->stack = prof_stack_here(th);
			response_length(c, buf, n);
		}
	}
	response_bytes(th, c, buf, n, t1);
}

/* The connection of key, made when buf begins a request line; NULL otherwise. */
static struct http_conn *conn_of(uint64_t key, int out, int tls, const char *buf, size_t n,
				 int fd)
{
	struct http_conn *c = prof_map_get(&http_conns, key);
	if (c || n < 6 || buf[0] < 'A' || buf[0] > 'Z')
		return c;
	char method[16], target[8];
	if (!prof_http_request(buf, n, method, sizeof(method), target, sizeof(target)))
		return NULL;
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)))
		return NULL;
	int created;
	c = prof_map_put(&http_conns, key, &created);
	if (c && created)
		c->flags = (out ? 0 : PROF_HTTP_SERVER) | (tls ? PROF_HTTP_TLS : 0);
	return c;
}

static uint64_t fd_key(int fd, uint32_t id)
{
	return 1ull << 63 | (uint64_t)id << 32 | (uint32_t)fd;
}

void http_fd_data_seen(struct prof_thread *th, int fd, int out, const void *buf, size_t n,
		       uint64_t t0, uint64_t t1)
{
	uint32_t id = io_fd_peek(fd);
	if (!id)
		id = io_fd_id(th, fd);
	if (!id || id == IO_FD_OURS)
		return;
	struct http_conn *c = conn_of(fd_key(fd, id), out, 0, buf, n, fd);
	if (c)
		conn_data(th, c, out, buf, n, t0, t1);
}

void http_fd_sent(struct prof_thread *th, int fd, size_t n, uint64_t t1)
{
	if (prof_map_empty(&http_conns))
		return;
	uint32_t id = io_fd_peek(fd);
	struct http_conn *c = id ? prof_map_get(&http_conns, fd_key(fd, id)) : NULL;
	if (c && (c->flags & PROF_HTTP_SERVER) && c->phase == RESPONSE)
		response_bytes(th, c, NULL, n, t1);
}

void http_fd_closed(struct prof_thread *th, int fd, uint32_t id)
{
	if (prof_map_empty(&http_conns) || !id)
		return;
	uint64_t key = fd_key(fd, id);
	struct http_conn *c = prof_map_get(&http_conns, key);
	if (c) {
		finish(th, c, prof_now());
		prof_map_del(&http_conns, key);
	}
}

/* ---- OpenSSL ---------------------------------------------------------------------------- */

typedef struct ssl_st SSL;

static struct {
	int (*read)(SSL *, void *, int);
	int (*write)(SSL *, const void *, int);
	int (*read_ex)(SSL *, void *, size_t, size_t *);
	int (*write_ex)(SSL *, const void *, size_t, size_t *);
	void (*free)(SSL *);
} ssl;

/* Inside a real SSL call: its mark (prof_inside_call()); OpenSSL's own calls pass. */
static __thread uintptr_t tls_busy;

static inline __attribute__((always_inline)) struct prof_thread *tls_begin(void)
{
	return prof_inside_call(tls_busy, prof_hook_frame()) ? NULL : prof_recording(PROF_EV_HTTP);
}

static void tls_data(struct prof_thread *th, SSL *s, int out, const void *buf, size_t n,
		     uint64_t t0, uint64_t t1)
{
	struct http_conn *c = conn_of((uintptr_t)s, out, 1, buf, n, -1);
	if (c)
		conn_data(th, c, out, buf, n, t0, t1);
}

/* moved: the bytes the call moved (> 0), computed from its result r. */
#define TLS_HOOK(fn, name, out, buf, moved, ...)                         \
	do {                                                             \
		REAL_OR(ssl.fn, name, -1);                               \
		struct prof_thread *th = tls_begin();                    \
		if (!th)                                                 \
			return ssl.fn(__VA_ARGS__);                      \
		tls_busy = prof_hook_frame();                            \
		uint64_t t0 = prof_now();                                \
		int r = ssl.fn(__VA_ARGS__);                             \
		uint64_t t1 = prof_now();                                \
		tls_busy = 0;                                            \
		int err_ = errno;                                        \
		prof_hook_enter(th);                                     \
		size_t n_ = (moved);                                     \
		if (n_ > 0)                                              \
			tls_data(th, s, out, buf, n_, t0, t1);           \
		th->in_hook--;                                           \
		errno = err_;                                            \
		return r;                                                \
	} while (0)

PROF_EXPORT int SSL_read(SSL *s, void *buf, int num)
{
	TLS_HOOK(read, "SSL_read", 0, buf, r > 0 ? (size_t)r : 0, s, buf, num);
}

PROF_EXPORT int SSL_write(SSL *s, const void *buf, int num)
{
	TLS_HOOK(write, "SSL_write", 1, buf, r > 0 ? (size_t)r : 0, s, buf, num);
}

PROF_EXPORT int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *got)
{
	TLS_HOOK(read_ex, "SSL_read_ex", 0, buf, r == 1 && got ? *got : 0, s, buf, num, got);
}

PROF_EXPORT int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *put)
{
	TLS_HOOK(write_ex, "SSL_write_ex", 1, buf, r == 1 && put ? *put : 0, s, buf, num, put);
}

PROF_EXPORT void SSL_free(SSL *s)
{
	if (!ssl.free && !(ssl.free = (__typeof__(ssl.free))prof_real_sym("SSL_free")))
		return;
	struct prof_thread *th = tls_begin();
	if (th && s && !prof_map_empty(&http_conns)) {
		prof_hook_enter(th);
		struct http_conn *c = prof_map_get(&http_conns, (uintptr_t)s);
		if (c) {
			finish(th, c, prof_now());
			prof_map_del(&http_conns, (uintptr_t)s);
		}
		th->in_hook--;
	}
	ssl.free(s);
}
