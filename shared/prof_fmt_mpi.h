/* The MPI family's records (event family `mpi`): types 120-129. One record per MPI call the
 * program made (point-to-point, completion, collective), timed around the real call.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_MPI_H
#define PROF_FMT_MPI_H

#include "prof_fmt_base.h"

#define PROF_MPI_TYPE_FIRST 120
#define PROF_MPI_TYPE_LAST 129

#define PROF_MPI_RECORD_TYPES(X) X(MPI_CALL, 120, prof_rec_mpi_call)
#define PROF_MPI_STRING_RECORDS(Y)

/* The calls, X(NAME, value): the record's flags. Values never change once released. */
#define PROF_MPI_OPS(X)                                                            \
	X(MPI_Send, 1) X(MPI_Recv, 2) X(MPI_Isend, 3) X(MPI_Irecv, 4) X(MPI_Wait, 5)   \
	X(MPI_Waitall, 6) X(MPI_Waitany, 7) X(MPI_Barrier, 8) X(MPI_Bcast, 9)          \
	X(MPI_Reduce, 10) X(MPI_Allreduce, 11) X(MPI_Allgather, 12) X(MPI_Alltoall, 13) \
	X(MPI_Gather, 14) X(MPI_Scatter, 15) X(MPI_Sendrecv, 16) X(MPI_Ssend, 17)       \
	X(MPI_Waitsome, 18) X(MPI_Init, 19) X(MPI_Init_thread, 20) X(MPI_Finalize, 21)
enum {
#define PROF_X(name, v) PROF_##name = (v),
	PROF_MPI_OPS(PROF_X)
#undef PROF_X
	PROF_MPI_OP_MAX = 21
};

/* MPI_CALL: time is the call's start. MPI_Init and MPI_Finalize count too: they wait for the
 * job's other ranks. duration_ns: time inside the real call (for a wait,
 * a receive or a collective: time spent waiting for other ranks, mostly). bytes: data this
 * rank handed over or asked for (count times the datatype's size; a collective's send
 * buffer; 0 for waits and barriers). peer: the other rank of a point-to-point call, the
 * root of a rooted collective, -1 otherwise. */
struct prof_rec_mpi_call {
	struct prof_rec h;     /* flags: PROF_MPI_* */
	uint64_t duration_ns;
	uint64_t bytes;
	int32_t peer;
	uint32_t stack;        /* where the program called it */
};

#endif
