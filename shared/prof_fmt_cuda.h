/* The CUDA event family's records: types 60-89, their payloads and enums.
 * Stands on its own (it needs only the record prefix); prof_format.h gathers every family. */
#ifndef PROF_FMT_CUDA_H
#define PROF_FMT_CUDA_H

#include "prof_fmt_base.h"

#define PROF_CUDA_TYPE_FIRST 60
#define PROF_CUDA_TYPE_LAST 89

#define PROF_CUDA_RECORD_TYPES(X)                   \
	X(CUDA_NAME, 60, prof_rec_cuda_name)        \
	X(CUDA_API, 61, prof_rec_cuda_api)          \
	X(CUDA_LAUNCH, 62, prof_rec_cuda_launch)    \
	X(CUDA_COPY, 63, prof_rec_cuda_copy)        \
	X(CUDA_MALLOC, 64, prof_rec_cuda_malloc)    \
	X(CUDA_FREE, 65, prof_rec_cuda_free)        \
	X(CUDA_GPU, 66, prof_rec_cuda_gpu)          \
	X(CUDA_XCORR, 67, prof_rec_cuda_xcorr)      \
	X(CUDA_NVTX, 68, prof_rec_cuda_nvtx)        \
	X(CUDA_STATE, 69, prof_rec_cuda_state)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_CUDA_STRING_RECORDS(Y)                   \
	Y(CUDA_NAME, prof_rec_cuda_name, name)        \
	Y(CUDA_NVTX, prof_rec_cuda_nvtx, message)     \
	Y(CUDA_STATE, prof_rec_cuda_state, detail)

/* Payloads.
 *
 * Names (API functions, kernels, NVTX domains) are interned: a CUDA_NAME record gives an id its
 * string once per trace, other records carry the id (0 = unknown). A NAME may come after the
 * records that use it, so readers resolve ids once the whole trace is read.
 *
 * One API call is one CUDA_API record, written when the call returns (h.time is when it began).
 * A runtime call and the driver calls it makes share one correlation id (corr). What a call did
 * is in records of the same corr written just before its CUDA_API: CUDA_LAUNCH, CUDA_COPY,
 * CUDA_MALLOC, CUDA_FREE; a runtime call and its driver call may both describe it (readers count
 * one per corr). When it ran on the GPU comes later in CUDA_GPU records. */

/* CUDA_NAME kinds (in flags). */
enum prof_cuda_name_kind {
	PROF_CUDA_NAME_API = 0,     /* a runtime or driver API function */
	PROF_CUDA_NAME_KERNEL = 1,  /* a kernel, as the toolchain spells it (mangled) */
	PROF_CUDA_NAME_DOMAIN = 2,  /* an NVTX domain */
};
struct prof_rec_cuda_name {
	struct prof_rec h;  /* flags: enum prof_cuda_name_kind */
	uint32_t id;        /* >= 1 */
	uint32_t pad;
	char name[];
};

/* Which layer a record comes from (flags of CUDA_API, CUDA_LAUNCH, CUDA_COPY, CUDA_MALLOC,
 * CUDA_FREE). */
#define PROF_CUDA_RUNTIME 0u
#define PROF_CUDA_DRIVER 1u

/* CUDA_API: one call. h.time is when it began; result is the CUresult / cudaError_t. */
struct prof_rec_cuda_api {
	struct prof_rec h;  /* flags: PROF_CUDA_RUNTIME or PROF_CUDA_DRIVER */
	uint64_t duration_ns;
	uint64_t corr;      /* correlation id, >= 1, process-unique */
	uint32_t name;      /* CUDA_NAME id of the function */
	int32_t result;
	uint32_t stack;     /* caller's stack (a driver call inside a runtime call: the runtime's) */
	uint32_t pad;
};

/* CUDA_LAUNCH: the shape of a kernel launch (also graph launches: name 0, grid/block 0). */
struct prof_rec_cuda_launch {
	struct prof_rec h;  /* flags: layer */
	uint64_t corr;
	uint64_t function;  /* host stub, CUfunction or CUkernel */
	uint64_t stream;
	uint32_t name;      /* CUDA_NAME id of the kernel, 0 if unknown */
	uint32_t stack;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared_mem;
	uint32_t graph;     /* 1: a graph launch */
};

/* A CUDA_LAUNCH with this flag is also its API call's record: the writer wrote no CUDA_API of
 * its own for the call, and the fields of struct prof_rec_cuda_launch_api follow. It stands
 * for the CUDA_API {time - api_duration_ns, duration api_duration_ns, corr, name api_name,
 * result api_result, stack} (prof_cuda_launch_api()); a reader that does not know the flag
 * sees the launch and misses the call. 32 bytes less per launch than two records. */
#define PROF_CUDA_LAUNCH_API 0x100u
#define PROF_CUDA_LAYER_MASK 0xffu
struct prof_rec_cuda_launch_api {
	struct prof_rec_cuda_launch l;
	uint64_t api_duration_ns;
	uint32_t api_name;
	int32_t api_result;
};

/* The CUDA_API record a CUDA_LAUNCH stands for too, into *a; 0 if it stands for none. */
static inline int prof_cuda_launch_api(const struct prof_rec_cuda_launch *l,
				       struct prof_rec_cuda_api *a)
{
	if (!(l->h.flags & PROF_CUDA_LAUNCH_API) || l->h.size < sizeof(struct prof_rec_cuda_launch_api))
		return 0;
	const struct prof_rec_cuda_launch_api *x = (const void *)l;
	*a = (struct prof_rec_cuda_api){
		/* CUDA_API: 61 (prof_format.h asserts it) */
		.h = { .type = 61, .flags = (uint16_t)(l->h.flags & PROF_CUDA_LAYER_MASK),
		       .size = sizeof(*a), .time = l->h.time - x->api_duration_ns },
		.duration_ns = x->api_duration_ns, .corr = l->corr, .name = x->api_name,
		.result = x->api_result, .stack = l->stack };
	return 1;
}

/* Copy directions, and memset (CUDA_COPY kind, CUDA_GPU copy_kind). */
#define PROF_CUDA_COPY_KINDS(X)             \
	X(UNKNOWN, "Default", 0)            \
	X(HTOD, "HtoD", 1)                  \
	X(DTOH, "DtoH", 2)                  \
	X(DTOD, "DtoD", 3)                  \
	X(HTOH, "HtoH", 4)                  \
	X(PTOP, "PtoP", 5)                  \
	X(MEMSET, "Memset", 6)
enum prof_cuda_copy_kind {
#define PROF_X(name, str, v) PROF_CUDA_COPY_##name = (v),
	PROF_CUDA_COPY_KINDS(PROF_X)
#undef PROF_X
	PROF_CUDA_COPY_KIND_COUNT
};

/* CUDA_COPY: a memcpy or memset call. */
struct prof_rec_cuda_copy {
	struct prof_rec h;  /* flags: layer */
	uint64_t corr;
	uint64_t bytes;
	uint64_t stream;
	uint32_t stack;
	uint16_t kind;      /* enum prof_cuda_copy_kind */
	uint16_t async;
};

/* Device memory kinds (CUDA_MALLOC / CUDA_FREE). */
#define PROF_CUDA_MEM_KINDS(X)              \
	X(DEVICE, "device", 0)              \
	X(HOST, "pinned", 1)                \
	X(MANAGED, "managed", 2)            \
	X(ASYNC, "async", 3)
enum prof_cuda_mem_kind {
#define PROF_X(name, str, v) PROF_CUDA_MEM_##name = (v),
	PROF_CUDA_MEM_KINDS(PROF_X)
#undef PROF_X
	PROF_CUDA_MEM_KIND_COUNT
};

/* CUDA_MALLOC: a successful allocation of GPU (or pinned / managed) memory. */
struct prof_rec_cuda_malloc {
	struct prof_rec h;  /* flags: layer */
	uint64_t corr;
	uint64_t ptr;
	uint64_t size;
	uint32_t stack;
	uint32_t kind;      /* enum prof_cuda_mem_kind */
};

/* CUDA_FREE: a successful release. */
struct prof_rec_cuda_free {
	struct prof_rec h;  /* flags: layer */
	uint64_t corr;
	uint64_t ptr;
	uint32_t kind;
	uint32_t pad;
};

/* CUDA_GPU activity kinds and timing sources. */
enum prof_cuda_activity {
	PROF_CUDA_ACT_KERNEL = 0,
	PROF_CUDA_ACT_COPY = 1,   /* memcpy and memset: copy_kind says which */
	PROF_CUDA_ACT_SYNC = 2,
};
#define PROF_CUDA_TIMING_KINDS(X)   \
	X(NONE, "none", 0)          \
	X(CUPTI, "cupti", 1)        \
	X(EVENTS, "events", 2)
enum prof_cuda_timing {
#define PROF_X(name, str, v) PROF_CUDA_TIMING_##name = (v),
	PROF_CUDA_TIMING_KINDS(PROF_X)
#undef PROF_X
	PROF_CUDA_TIMING_COUNT
};
#define PROF_CUDA_GPU_CUPTI_CORR 0x100u  /* corr is CUPTI's; CUDA_XCORR maps it to ours */

/* CUDA_GPU: when something ran on the GPU, on the trace clock. Written when known (CUPTI's
 * buffers, or event pairs drained at a sync point), long after the launch. */
struct prof_rec_cuda_gpu {
	struct prof_rec h;  /* flags: enum prof_cuda_timing | PROF_CUDA_GPU_CUPTI_CORR */
	uint64_t start, end;
	uint64_t corr;
	uint64_t bytes;     /* copies */
	uint32_t name;      /* kernels: CUDA_NAME id if the source knew it, else 0 */
	uint16_t activity;  /* enum prof_cuda_activity */
	uint16_t copy_kind; /* enum prof_cuda_copy_kind */
	uint32_t device;
	uint32_t stream;
	uint32_t grid[3];   /* kernels, when the source knew it (CUPTI), else 0 */
	uint32_t block[3];
};

/* CUDA_XCORR: CUPTI's correlation id of an API call of ours. */
struct prof_rec_cuda_xcorr {
	struct prof_rec h;
	uint64_t cupti_corr;
	uint64_t corr;
};

/* CUDA_NVTX: a range that ended (push/pop, start/end) or a mark (start == end). */
enum prof_cuda_nvtx_kind {
	PROF_CUDA_NVTX_PUSH = 0,
	PROF_CUDA_NVTX_RANGE = 1,
	PROF_CUDA_NVTX_MARK = 2,
};
struct prof_rec_cuda_nvtx {
	struct prof_rec h;  /* flags: enum prof_cuda_nvtx_kind; h.time is the end */
	uint64_t start, end;
	uint32_t domain;    /* CUDA_NAME id of the domain, 0 for the default domain */
	uint32_t depth;     /* push/pop nesting depth, from 0 */
	char message[];
};

/* CUDA_STATE: how GPU activity is timed in this process, and why. */
struct prof_rec_cuda_state {
	struct prof_rec h;
	uint32_t timing;    /* enum prof_cuda_timing */
	int32_t result;     /* the CUPTI result that decided it (0 if none) */
	uint32_t cupti_version;
	uint32_t pad;
	char detail[];      /* "libcupti: /path" or why it is not used */
};

#endif
