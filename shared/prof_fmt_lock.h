/* Record types of the lock event family (values in the range prof_format.h assigns it). */
#ifndef PROF_FMT_LOCK_H
#define PROF_FMT_LOCK_H

#define PROF_LOCK_RECORD_TYPES(X)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_LOCK_STRING_RECORDS(Y)

#endif
