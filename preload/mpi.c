/* MPI calls (event family `mpi`): point-to-point, completion and collective calls timed around
 * the real function, with the bytes they move, the peer or root, and the caller's stack. The
 * library never links MPI and includes none of its headers: handles (communicators, datatypes,
 * requests) are passed through as register-sized values, whatever the implementation makes
 * them (Open MPI: pointers; MPICH: ints), and the real functions and MPI_Type_size are looked
 * up on first use. A per-thread depth keeps MPI's own calls of its entry points out. */
#include "db.h"

#include <errno.h>

typedef uintptr_t mpi_h;  /* MPI_Comm, MPI_Datatype, MPI_Op: a handle passed through */

static __thread int mpi_depth;

static int (*type_size)(mpi_h, int *);

/* count elements of datatype dt, in bytes; 0 when unknown. */
static uint64_t bytes_of(int count, mpi_h dt)
{
	int size = 0;
	if (count <= 0)
		return 0;
	if (!type_size && !(type_size = (int (*)(mpi_h, int *))prof_real_sym("MPI_Type_size")))
		return 0;
	mpi_depth++;
	int rc = type_size(dt, &size);
	mpi_depth--;
	return rc == 0 && size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

static void record(struct prof_thread *th, unsigned op, uint64_t t0, uint64_t t1, uint64_t bytes,
		   int peer, uintptr_t site)
{
	int saved = errno;
	prof_hook_enter(th);
	prof_thread_get();
	uint32_t stack = prof_stack_at(th, site);
	struct prof_rec_mpi_call *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->duration_ns = t1 - t0;
		r->bytes = bytes;
		r->peer = peer;
		r->stack = stack;
		prof_commit(r, PROF_REC_MPI_CALL, op, sizeof(*r), t0);
	}
	th->in_hook--;
	errno = saved;
}

/* A hook's body: the real function (looked up once; MPI_ERR_INTERN-like 16 if absent), timed
 * when this call is to be recorded. args: the call's arguments; bytes, peer: expressions of
 * them, evaluated after the call (a receive's count is what was asked for). */
#define MPI_HOOK(name, proto, args, bytes, peer)                                         \
	static int (*real)proto;                                                         \
	REAL_OR(real, #name, 16);                                                        \
	struct prof_thread *th = mpi_depth ? NULL : prof_recording(PROF_EV_MPI);         \
	if (!th)                                                                         \
		return real args;                                                        \
	uintptr_t site = (uintptr_t)__builtin_return_address(0);                         \
	mpi_depth++;                                                                     \
	uint64_t t0 = prof_now();                                                        \
	int rc = real args;                                                              \
	uint64_t t1 = prof_now();                                                        \
	mpi_depth--;                                                                     \
	record(th, PROF_##name, t0, t1, (bytes), (peer), site);                          \
	return rc

PROF_EXPORT int MPI_Send(const void *b, int n, mpi_h dt, int dest, int tag, mpi_h comm)
{
	MPI_HOOK(MPI_Send, (const void *, int, mpi_h, int, int, mpi_h), (b, n, dt, dest, tag, comm),
		 bytes_of(n, dt), dest);
}

PROF_EXPORT int MPI_Ssend(const void *b, int n, mpi_h dt, int dest, int tag, mpi_h comm)
{
	MPI_HOOK(MPI_Ssend, (const void *, int, mpi_h, int, int, mpi_h), (b, n, dt, dest, tag, comm),
		 bytes_of(n, dt), dest);
}

PROF_EXPORT int MPI_Recv(void *b, int n, mpi_h dt, int src, int tag, mpi_h comm, void *st)
{
	MPI_HOOK(MPI_Recv, (void *, int, mpi_h, int, int, mpi_h, void *),
		 (b, n, dt, src, tag, comm, st), bytes_of(n, dt), src);
}

PROF_EXPORT int MPI_Isend(const void *b, int n, mpi_h dt, int dest, int tag, mpi_h comm, void *req)
{
	MPI_HOOK(MPI_Isend, (const void *, int, mpi_h, int, int, mpi_h, void *),
		 (b, n, dt, dest, tag, comm, req), bytes_of(n, dt), dest);
}

PROF_EXPORT int MPI_Irecv(void *b, int n, mpi_h dt, int src, int tag, mpi_h comm, void *req)
{
	MPI_HOOK(MPI_Irecv, (void *, int, mpi_h, int, int, mpi_h, void *),
		 (b, n, dt, src, tag, comm, req), bytes_of(n, dt), src);
}

PROF_EXPORT int MPI_Sendrecv(const void *sb, int sn, mpi_h sdt, int dest, int stag, void *rb,
			     int rn, mpi_h rdt, int src, int rtag, mpi_h comm, void *st)
{
	MPI_HOOK(MPI_Sendrecv, (const void *, int, mpi_h, int, int, void *, int, mpi_h, int, int,
				mpi_h, void *),
		 (sb, sn, sdt, dest, stag, rb, rn, rdt, src, rtag, comm, st),
		 bytes_of(sn, sdt) + bytes_of(rn, rdt), dest);
}

PROF_EXPORT int MPI_Wait(void *req, void *st)
{
	MPI_HOOK(MPI_Wait, (void *, void *), (req, st), 0, -1);
}

PROF_EXPORT int MPI_Waitall(int n, void *reqs, void *sts)
{
	MPI_HOOK(MPI_Waitall, (int, void *, void *), (n, reqs, sts), 0, -1);
}

PROF_EXPORT int MPI_Waitany(int n, void *reqs, int *idx, void *st)
{
	MPI_HOOK(MPI_Waitany, (int, void *, int *, void *), (n, reqs, idx, st), 0, -1);
}

PROF_EXPORT int MPI_Waitsome(int n, void *reqs, int *out, int *idx, void *sts)
{
	MPI_HOOK(MPI_Waitsome, (int, void *, int *, int *, void *), (n, reqs, out, idx, sts), 0, -1);
}

PROF_EXPORT int MPI_Barrier(mpi_h comm)
{
	MPI_HOOK(MPI_Barrier, (mpi_h), (comm), 0, -1);
}

PROF_EXPORT int MPI_Bcast(void *b, int n, mpi_h dt, int root, mpi_h comm)
{
	MPI_HOOK(MPI_Bcast, (void *, int, mpi_h, int, mpi_h), (b, n, dt, root, comm),
		 bytes_of(n, dt), root);
}

PROF_EXPORT int MPI_Reduce(const void *s, void *r, int n, mpi_h dt, mpi_h op, int root, mpi_h comm)
{
	MPI_HOOK(MPI_Reduce, (const void *, void *, int, mpi_h, mpi_h, int, mpi_h),
		 (s, r, n, dt, op, root, comm), bytes_of(n, dt), root);
}

PROF_EXPORT int MPI_Allreduce(const void *s, void *r, int n, mpi_h dt, mpi_h op, mpi_h comm)
{
	MPI_HOOK(MPI_Allreduce, (const void *, void *, int, mpi_h, mpi_h, mpi_h),
		 (s, r, n, dt, op, comm), bytes_of(n, dt), -1);
}

PROF_EXPORT int MPI_Allgather(const void *s, int sn, mpi_h sdt, void *r, int rn, mpi_h rdt,
			      mpi_h comm)
{
	MPI_HOOK(MPI_Allgather, (const void *, int, mpi_h, void *, int, mpi_h, mpi_h),
		 (s, sn, sdt, r, rn, rdt, comm), bytes_of(sn, sdt), -1);
}

PROF_EXPORT int MPI_Alltoall(const void *s, int sn, mpi_h sdt, void *r, int rn, mpi_h rdt,
			     mpi_h comm)
{
	MPI_HOOK(MPI_Alltoall, (const void *, int, mpi_h, void *, int, mpi_h, mpi_h),
		 (s, sn, sdt, r, rn, rdt, comm), bytes_of(sn, sdt), -1);
}

PROF_EXPORT int MPI_Gather(const void *s, int sn, mpi_h sdt, void *r, int rn, mpi_h rdt, int root,
			   mpi_h comm)
{
	MPI_HOOK(MPI_Gather, (const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h),
		 (s, sn, sdt, r, rn, rdt, root, comm), bytes_of(sn, sdt), root);
}

PROF_EXPORT int MPI_Scatter(const void *s, int sn, mpi_h sdt, void *r, int rn, mpi_h rdt, int root,
			    mpi_h comm)
{
	MPI_HOOK(MPI_Scatter, (const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h),
		 (s, sn, sdt, r, rn, rdt, root, comm), bytes_of(rn, rdt), root);
}

PROF_EXPORT int MPI_Init(int *argc, char ***argv)
{
	MPI_HOOK(MPI_Init, (int *, char ***), (argc, argv), 0, -1);
}

PROF_EXPORT int MPI_Init_thread(int *argc, char ***argv, int want, int *got)
{
	MPI_HOOK(MPI_Init_thread, (int *, char ***, int, int *), (argc, argv, want, got), 0, -1);
}

PROF_EXPORT int MPI_Finalize(void)
{
	MPI_HOOK(MPI_Finalize, (void), (), 0, -1);
}
