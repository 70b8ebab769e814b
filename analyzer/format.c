/* Numbers for people: sizes, counts with thousands separators, durations. */
#include "format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	if (n < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)n);
		return buf;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}

const char *fmt_count(uint64_t n, char *buf, size_t len)
{
	char digits[32];
	int nd = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < nd && o + 1 < len; i++) {
		if (i > 0 && (nd - i) % 3 == 0 && o + 2 < len)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

const char *fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
	return buf;
}

void fmt_quoted(FILE *out, const char *s, size_t max)
{
	fputc('"', out);
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

const char *fmt_arg(const char *s, char *buf, size_t len)
{
	int plain = *s != 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f || *c == ' ' || *c == '"' || *c == '\\' || *c == '\'')
			plain = 0;
	if (plain || len < 8)
		return s;
	static const char named[] = "\a\b\t\n\v\f\r";
	size_t o = 0;
	buf[o++] = '"';
	for (const unsigned char *c = (const unsigned char *)s; *c && o + 6 < len; c++) {
		const char *n = *c && *c < 0x20 ? strchr(named, *c) : NULL;
		if (*c == '"' || *c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)*c;
		} else if (n) {
			buf[o++] = '\\';
			buf[o++] = "abtnvfr"[n - named];
		} else if (*c < 0x20 || *c == 0x7f) {
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *c);
		} else {
			buf[o++] = (char)*c;
		}
	}
	buf[o++] = '"';
	buf[o] = 0;
	return buf;
}

static int color;

int fmt_color_set(const char *when, int to_terminal)
{
	const char *term = getenv("TERM"), *no = getenv("NO_COLOR");
	if (!when || !strcmp(when, "auto"))
		color = to_terminal && !(no && *no) && !(term && !strcmp(term, "dumb"));
	else if (!strcmp(when, "always"))
		color = 1;
	else if (!strcmp(when, "never"))
		color = 0;
	else
		return -1;
	return 0;
}

const char *fmt_sgr(const char *code)
{
	static char buf[4][16];
	static unsigned next;
	if (!color)
		return "";
	char *b = buf[next++ % 4];
	snprintf(b, sizeof(buf[0]), "\033[%sm", code ? code : "0");
	return b;
}

void fmt_where_verror(char *err, size_t len, const char *where, const char *fmt, va_list ap)
{
	if (!err || !len)
		return;
	int n = snprintf(err, len, "%s: ", where);
	if (n < 0 || (size_t)n >= len)
		return;
	vsnprintf(err + n, len - (size_t)n, fmt, ap);
}

void fmt_where_error(char *err, size_t len, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fmt_where_verror(err, len, where, fmt, ap);
	va_end(ap);
}
