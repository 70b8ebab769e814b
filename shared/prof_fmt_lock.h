/* Record types of the threads and locks event family (values 20-39, prof_format.h). */
#ifndef PROF_FMT_LOCK_H
#define PROF_FMT_LOCK_H

#define PROF_LOCK_RECORD_TYPES(X)                     \
	X(LOCK_WAIT, 20, prof_rec_lock_wait)          \
	X(LOCK_STATS, 21, prof_rec_lock_stats)        \
	X(THREAD_NAME, 22, prof_rec_thread_name)      \
	X(THREAD_JOIN, 23, prof_rec_thread_join)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_LOCK_STRING_RECORDS(Y) Y(THREAD_NAME, prof_rec_thread_name, name)

#endif
