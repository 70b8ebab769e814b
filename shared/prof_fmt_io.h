/* Record types of the io event family (values in the range prof_format.h assigns it). */
#ifndef PROF_FMT_IO_H
#define PROF_FMT_IO_H

#define PROF_IO_RECORD_TYPES(X)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_IO_STRING_RECORDS(Y)

#endif
