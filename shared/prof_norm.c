/* SQL and HTTP text normalization (prof_norm.h): one pass each, bounded by the output. */
#include "prof_norm.h"

#include <string.h>

static int is_ident(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c >= 0x80;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_hex(unsigned char c)
{
	return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len++] = c;
}

/* The last word written, if it is `word` (case-insensitive) standing alone. */
static int last_word_is(const struct out *o, const char *word)
{
	size_t n = strlen(word), end = o->len;
	while (end > 0 && o->buf[end - 1] == ' ')
		end--;
	if (end < n || (end > n && is_ident((unsigned char)o->buf[end - n - 1])))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((o->buf[end - n + i] | 0x20) != word[i])
			return 0;
	return 1;
}

/* The index after the quoted run that starts at in[i] with quote q (a doubled q stays
 * inside), or where the text ends. */
static size_t skip_quoted(const char *in, size_t i, size_t n, char q)
{
	for (i++; i < n && in[i]; i++) {
		if (in[i] != q)
			continue;
		if (i + 1 < n && in[i + 1] == q)
			i++;
		else
			return i + 1;
	}
	return i;
}

/* The index after the first two-character `end` at or after i, or where the text ends. */
static size_t skip_past(const char *in, size_t i, size_t n, const char *end)
{
	for (; i < n && in[i]; i++)
		if (in[i] == end[0] && i + 1 < n && in[i + 1] == end[1])
			return i + 2;
	return i;
}

/* The end of the number that starts at in[i]: digits, letters (hex digits, exponent,
 * suffix), dots, and a sign right after a decimal exponent's e. */
static size_t skip_number(const char *in, size_t i, size_t n)
{
	int hex = in[i] == '0' && i + 1 < n && (in[i + 1] | 0x20) == 'x';
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		int sign = (c == '-' || c == '+') && !hex && (in[i - 1] | 0x20) == 'e';
		if (!is_ident(c) && c != '.' && !sign)
			break;
	}
	return i;
}

/* A `(` at in[i], after IN, holding literals and commas only: returns the index after its
 * `)`, or 0 when it holds anything else (a subquery, names). */
static size_t in_list(const char *in, size_t i, size_t n)
{
	size_t items = 0;
	for (i++; i < n && in[i];) {
		unsigned char c = (unsigned char)in[i];
		if (is_space(c) || c == ',') {
			i++;
		} else if (c == ')') {
			return items ? i + 1 : 0;
		} else if (c == '\'') {
			i = skip_quoted(in, i, n, '\'');
			items++;
		} else if (is_digit(c) || c == '-' || c == '+' || c == '.' || c == '?') {
			i = skip_number(in, i, n);
			items++;
		} else {
			return 0;
		}
	}
	return 0;
}

/* A string literal's prefix letter just written (E'..', X'..', B'..', N'..') goes with it. */
static void drop_prefix(struct out *o)
{
	if (o->len > 0 && strchr("eExXbBnN", o->buf[o->len - 1]) &&
	    (o->len == 1 || !is_ident((unsigned char)o->buf[o->len - 2])))
		o->len--;
}

size_t prof_sql_normalize(const char *in, size_t n, char *outbuf, size_t cap)
{
	struct out o = { outbuf, 0, cap };
	int space = 0;
	size_t i = 0, end;
	while (i < n && in[i] && o.len + 1 < o.cap) {
		unsigned char c = (unsigned char)in[i];
		unsigned char next = i + 1 < n ? (unsigned char)in[i + 1] : 0;
		if (is_space(c) || (c == '-' && next == '-') || (c == '/' && next == '*')) {
			if (c == '-')
				while (i < n && in[i] && in[i] != '\n')
					i++;
			else
				i = c == '/' ? skip_past(in, i + 2, n, "*/") : i + 1;
			space = 1;
			continue;
		}
		if (space && o.len > 0)
			put(&o, ' ');
		space = 0;
		if (c == '(' && last_word_is(&o, "in") && (end = in_list(in, i, n)) != 0) {
			put(&o, '(');
			put(&o, '?');
			put(&o, ')');
			i = end;
		} else if (c == '\'') {
			i = skip_quoted(in, i, n, '\'');
			drop_prefix(&o);
			put(&o, '?');
		} else if (c == '$' && next == '$') {  /* $$dollar-quoted$$ */
			i = skip_past(in, i + 2, n, "$$");
			put(&o, '?');
		} else if (c == '"' || c == '`' || c == '[') {  /* a quoted name: kept */
			end = skip_quoted(in, i, n, c == '[' ? ']' : (char)c);
			for (; i < end; i++)
				put(&o, in[i]);
		} else if (is_digit(c) || (c == '.' && is_digit(next))) {
			i = skip_number(in, i, n);  /* (digits inside a name go with the name) */
			put(&o, '?');
		} else if (is_ident(c) || c == ':' || c == '@') {  /* names, placeholders */
			for (put(&o, (char)c), i++; i < n && is_ident((unsigned char)in[i]); i++)
				put(&o, in[i]);
		} else {
			put(&o, (char)c);
			i++;
		}
	}
	while (o.len > 0 && (o.buf[o.len - 1] == ';' || o.buf[o.len - 1] == ' '))
		o.len--;
	o.buf[o.len] = '\0';
	return o.len;
}

/* ---- HTTP ------------------------------------------------------------------------------- */

static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS",
				       "PATCH", "CONNECT", "TRACE", "PROPFIND", "PROPPATCH",
				       "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT", NULL };

int prof_http_request(const char *buf, size_t n, char *method, size_t mcap, char *route,
		      size_t rcap)
{
	size_t m = 0;
	while (m < n && m < 10 && buf[m] >= 'A' && buf[m] <= 'Z')
		m++;
	if (m == 0 || m >= n || buf[m] != ' ' || m + 1 >= n)
		return 0;
	int known = 0;
	for (const char *const *k = methods; *k && !known; k++)
		known = strlen(*k) == m && !memcmp(*k, buf, m);
	char t = buf[m + 1];
	if (!known || !(t == '/' || t == '*' || t == 'h'))
		return 0;
	size_t copy = m < mcap ? m : mcap - 1;
	memcpy(method, buf, copy);
	method[copy] = '\0';
	prof_http_route(buf + m + 1, n - m - 1, route, rcap);
	return 1;
}

int prof_http_status(const char *buf, size_t n)
{
	if (n < 12 || memcmp(buf, "HTTP/1.", 7) || buf[8] != ' ' || buf[9] < '1' || buf[9] > '9' ||
	    !is_digit((unsigned char)buf[10]) || !is_digit((unsigned char)buf[11]))
		return 0;
	return (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
}

/* What a path segment s[0..n) stands for, or NULL when it stays as it is. */
static const char *segment_class(const char *s, size_t n)
{
	size_t digits = 0, hex = 0;
	for (size_t i = 0; i < n; i++) {
		digits += is_digit((unsigned char)s[i]);
		hex += is_hex((unsigned char)s[i]);
	}
	if (n > 0 && digits == n)
		return "{id}";
	if (n == 36 && hex == 32 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-')
		return "{uuid}";
	if (n >= 8 && hex == n && digits > 0)
		return "{hex}";
	return NULL;
}

size_t prof_http_route(const char *t, size_t n, char *outbuf, size_t cap)
{
	struct out o = { outbuf, 0, cap };
	size_t end = 0;
	while (end < n && t[end] && t[end] != ' ' && t[end] != '\r' && t[end] != '\n')
		end++;
	size_t i = 0;
	if (end > 7 && (!memcmp(t, "http://", 7) || (end > 8 && !memcmp(t, "https://", 8)))) {
		i = t[4] == 's' ? 8 : 7;
		while (i < end && t[i] != '/' && t[i] != '?')
			i++;
		if (i == end || t[i] == '?')
			put(&o, '/');
	}
	while (i < end && t[i] != '?' && t[i] != '#') {
		if (t[i] == '/') {
			put(&o, '/');
			i++;
			continue;
		}
		size_t s = i;
		while (i < end && t[i] != '/' && t[i] != '?' && t[i] != '#')
			i++;
		const char *cls = segment_class(t + s, i - s);
		if (cls)
			for (; *cls; cls++)
				put(&o, *cls);
		else
			for (size_t k = s; k < i; k++)
				put(&o, (unsigned char)t[k] < 0x20 || t[k] == 0x7f ? '?' : t[k]);
	}
	o.buf[o.len] = '\0';
	return o.len;
}
