/* The formats of prof export besides chrome (export.c): each writes the processes' data to
 * out; 0, or -1 after a message. */
#ifndef PROF_EXPORTS_H
#define PROF_EXPORTS_H

#include <stddef.h>
#include <stdio.h>

struct cmd_opts;
struct process;

int export_speedscope(const struct cmd_opts *o, struct process *ps, size_t n, FILE *out);
int export_pprof(const struct cmd_opts *o, struct process *ps, size_t n, FILE *out);
/* sqlite writes the database file o->outfile (required). */
int export_sqlite(const struct cmd_opts *o, struct process *ps, size_t n);

/* For the families' sql_row hooks (family.h): one row of table, its values by types, one
 * letter each: 'i' an int64_t, 't' a string (NULL: SQL NULL). 0, or -1 on error. */
#include <stdint.h>

struct sql_out;
int sql_row(struct sql_out *o, const char *table, const char *types, ...);
/* The pid column of the process being written: its pid, and for the n-th later image of an
 * exec chain (the same pid) pid + n * 2^32, so that each image's rows stay apart. */
int64_t sql_pid(const struct sql_out *o);

#endif
