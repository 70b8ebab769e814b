/* Record types of the file and network I/O event family (values 40-59, prof_format.h). */
#ifndef PROF_FMT_IO_H
#define PROF_FMT_IO_H

#define PROF_IO_RECORD_TYPES(X)               \
	X(IO_NAME, 40, prof_rec_io_name)      \
	X(IO_CALL, 41, prof_rec_io_call)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_IO_STRING_RECORDS(Y) Y(IO_NAME, prof_rec_io_name, path)

#endif
