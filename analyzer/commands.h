/* The analyzer's subcommands: one file each, `int cmd_NAME(int argc, char **argv)` with
 * argv[0] the command name; they return the process exit status. */
#ifndef PROF_COMMANDS_H
#define PROF_COMMANDS_H

#include <stddef.h>

int cmd_report(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_kernels(int argc, char **argv);

/* Expands TRACE arguments: a file stays as it is, a directory gives the *.trace files in it
 * (sorted). Returns 0 and a NULL-terminated malloc'd array in *out, or prints a one-line error
 * and returns -1 (nothing given, nothing found, unreadable). Free with inputs_free(). */
int inputs_expand(char *const *args, int nargs, char ***out, size_t *count);
void inputs_free(char **paths);

/* "prof: " + message, on stderr. */
void prof_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
