/* valgrind-style suppression files for `prof leaks --suppressions FILE`: entries of
 *   { name  Memcheck:Leak  [match-leak-kinds: definite,indirect,possible,reachable|all]
 *     fun:PATTERN | obj:PATTERN | ...   (innermost frame first) }
 * PATTERN takes * and ?; "..." stands for any number of frames. A leading fun: line naming
 * an allocator (malloc, calloc, operator new, ...) matches the allocation call itself,
 * which libprof's stacks begin after. */
#ifndef PROF_SUPPRESS_H
#define PROF_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"

struct suppressions;

/* Reads FILE (may be called again to add more). Returns 0, or -1 after a one-line message
 * naming the file and line. */
int supp_load(struct suppressions **s, const char *path);
void supp_free(struct suppressions *s);
/* The index of the first entry matching frames[0..n) for leak class cls (enum
 * prof_leak_class), or -1. */
int supp_match(const struct suppressions *s, const struct sym_frame *frames, int n, unsigned cls);
#endif
