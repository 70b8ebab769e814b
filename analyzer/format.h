/* Numbers and strings for people. */
#ifndef PROF_FORMAT_TEXT_H
#define PROF_FORMAT_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

const char *fmt_bytes(uint64_t n, char *buf, size_t len);   /* "1.50 MiB", "48 B" */
const char *fmt_count(uint64_t n, char *buf, size_t len);   /* "1,234,567" */
const char *fmt_ns(uint64_t ns, char *buf, size_t len);     /* "1.23 s", "45.6 us" */
/* A string from a trace, quoted, with anything unprintable escaped so that it stays on one
 * line; at most max bytes (stops earlier at a NUL). */
void fmt_quoted(FILE *out, const char *s, size_t max);
/* A command-line word as text shows it: as it is when plain, else in double quotes with
 * control characters, quotes and backslashes escaped (\n, \x1b); UTF-8 stays. */
const char *fmt_arg(const char *s, char *buf, size_t len);

/* "WHERE: message" into err, len bytes (nothing where err is NULL or len 0): the one-line
 * errors of the trace and compressed-trace readers; WHERE is a path, and maybe an offset. */
void fmt_where_error(char *err, size_t len, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void fmt_where_verror(char *err, size_t len, const char *where, const char *fmt, va_list ap);

/* Color in text output: --color=auto (stdout a terminal, no -o, NO_COLOR unset, TERM not
 * dumb), always or never; returns -1 for another word. fmt_sgr(code) is the escape sequence
 * "\033[<code>m" when color is on, else "" (fmt_sgr(NULL): the reset). */
int fmt_color_set(const char *when, int to_terminal);
const char *fmt_sgr(const char *code);
#define SGR_BOLD "1"
#define SGR_RED "31"
#define SGR_GREEN "32"

#endif
