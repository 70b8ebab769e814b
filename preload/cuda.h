/* The CUDA family's internal interface: the few CUDA, CUPTI and NVTX types we use (declared
 * here, so libprof builds without the toolkit), and what cuda_*.c, cupti.c and nvtx.c share. */
#ifndef PROF_CUDA_H
#define PROF_CUDA_H

#include "prof.h"

#include <stdint.h>

/* ---- CUDA driver and runtime types (stable ABI; cuda.h, driver_types.h) ---------------- */
typedef int CUresult;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUkernel, *CUlibrary, *CUstream, *CUevent;
typedef void *CUgraphExec;
typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct { unsigned x, y, z; } cuda_dim3;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
#define CU_EVENT_DEFAULT 0
#define CU_LAUNCH_PARAM_END ((void *)0x00)

/* CUlaunchConfig (cuLaunchKernelEx): the leading fields we read. */
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	CUstream hStream;
} cuda_launch_config;
/* cudaLaunchConfig_t (cudaLaunchKernelExC). */
typedef struct {
	cuda_dim3 gridDim, blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
} cudart_launch_config;

/* cudaMemcpyKind */
enum { CUDART_H2H = 0, CUDART_H2D = 1, CUDART_D2H = 2, CUDART_D2D = 3, CUDART_DEFAULT = 4 };

/* ---- real driver functions libprof itself calls (events, names) ------------------------ */
struct cuda_driver_fns {
	CUresult (*cuEventCreate)(CUevent *, unsigned);
	CUresult (*cuEventDestroy)(CUevent);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventQuery)(CUevent);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuStreamIsCapturing)(CUstream, int *);
	CUresult (*cuFuncGetName)(const char **, CUfunction);
	CUresult (*cuKernelGetName)(const char **, CUkernel);
};
extern struct cuda_driver_fns cuda_drv;

/* ---- per-thread state and the call protocol ------------------------------------------- */
struct cuda_tls {
	uint64_t corr;       /* correlation id of the outermost API call in progress, 0 if none */
	uint32_t stack;      /* that call's stack */
	uint32_t depth;      /* API calls in progress on this thread */
	/* The last outermost call's site, stack and the stack cache's proof of it: a loop's next
	 * call from there takes the same stack with a few loads (prof_stack_still()). */
	uintptr_t last_site;
	uint32_t last_stack;
	struct prof_stack_proof last_proof;
};
extern __thread struct cuda_tls cuda_self;

/* One intercepted API call, from cuda_call_begin() to cuda_call_end(). */
struct cuda_call {
	struct prof_thread *th;
	uint64_t t0, own0;  /* a timed call: prof_timed_begin() */
	uint64_t t1;        /* its end, once cuda_call_done() took it; 0 before */
	uint64_t corr;
	uint32_t stack;
	uint32_t name;   /* CUDA_NAME id */
	int outer;       /* the thread's outermost API call */
	unsigned layer;  /* PROF_CUDA_RUNTIME / PROF_CUDA_DRIVER */
	int api_written; /* a CUDA_LAUNCH stood for the call's CUDA_API */
};

/* Name ids of static strings, interned on first use: `static uint32_t id;`. */
uint32_t cuda_name_static(uint32_t *slot, const char *name, unsigned kind);
/* Interns any string (kernel names); 0 if the table is full. */
uint32_t cuda_name(const char *name, unsigned kind);

/* Returns 0 (pass the call through: not recording) or 1. call_site: __builtin_return_address(0)
 * of the hook, and hook_frame its __builtin_frame_address(0), which spares the stack cache a
 * walk through libprof's frames to find the hook's (prof_stack_from()). The real call runs between begin and end with recording allowed (driver calls
 * made inside a runtime call are recorded, with its correlation id). */
int cuda_call_begin(struct cuda_call *c, uint32_t *name_slot, const char *name, unsigned layer,
		    uintptr_t call_site, const uintptr_t *hook_frame);
void cuda_call_end(struct cuda_call *c, int result);
/* The real call returned: its duration ends here (once), before the records about it are
 * written, so that their cost is not in it. cuda_call_end() and the cuda_rec_* calls do it
 * if the wrapper did not. */
static inline void cuda_call_done(struct cuda_call *c)
{
	if (!c->t1)
		c->t1 = prof_timed_end(c->th, c->t0, c->own0);
}
/* Work of the wrapper's own between cuda_call_begin() and the real call (kernel name lookup,
 * the start event of a pair) is done: the call's duration starts again here. */
static inline void cuda_call_restart(struct cuda_call *c)
{
	c->own0 = prof_own_total(c->th);
	c->t0 = prof_now();
}

void cuda_rec_launch(struct cuda_call *c, uint64_t func, uint32_t name, CUstream stream,
		     const unsigned grid[3], const unsigned block[3], unsigned smem, int graph);
void cuda_rec_copy(struct cuda_call *c, unsigned kind, uint64_t bytes, CUstream stream, int async);
void cuda_rec_malloc(struct cuda_call *c, uint64_t ptr, uint64_t size, unsigned kind);
void cuda_rec_free(struct cuda_call *c, uint64_t ptr, unsigned kind);
void cuda_rec_gpu(unsigned timing, uint64_t start, uint64_t end, uint64_t corr, int cupti_corr,
		  unsigned activity, unsigned copy_kind, uint64_t bytes, uint32_t name,
		  uint32_t device, uint32_t stream, const uint32_t grid[3], const uint32_t block[3]);
void cuda_rec_state(unsigned timing, int result, uint32_t version, const char *detail);

/* Kernel handles (host stubs, CUfunction, CUkernel) -> name id. */
void cuda_handle_set_str(uint64_t handle, const char *str);
void cuda_handle_set(uint64_t handle, uint32_t name);
uint32_t cuda_handle_name(uint64_t handle);

/* The first time CUDA is used (after the real call returned): choose the timing, register the
 * flush at exit. Cheap after the first call. */
void cuda_activate(void);
extern _Atomic int cuda_timing;  /* 0 until activated, then 0x100 | enum prof_cuda_timing */
static inline unsigned cuda_timing_now(void)
{
	return (unsigned)atomic_load_explicit(&cuda_timing, memory_order_relaxed) & 0xffu;
}

/* The real dlsym (ours is a hook): for libprof's own look-ups. */
void *cuda_real_dlsym(void *handle, const char *name);
/* The driver's real cuGetProcAddress_v2, once known; resolves cuda_drv entries through it. */
void cuda_driver_seen(void *libcuda_handle);
void cuda_driver_resolve_fns(void);

/* cuda_driver.c: the wrapper for (name, version, per-thread flag), or NULL to pass through;
 * real is the driver's pointer for that key. */
void *cuda_driver_wrapper(const char *name, int version, int per_thread, void *real);
/* The exported wrapper for a symbol name asked of dlsym, or NULL. */
void *cuda_driver_wrapper_by_symbol(const char *symbol, void *real);

/* cuda_events.c: event-pair timing, when CUPTI is not used. */
struct cuda_pair *cuda_events_begin(CUstream stream, int per_thread);
void cuda_events_end(struct cuda_pair *p, struct cuda_call *c, unsigned activity, unsigned copy_kind,
		     uint64_t bytes, uint32_t name, const unsigned grid[3], const unsigned block[3]);
void cuda_events_drain(int synced_all);
void cuda_events_fork_child(void);

/* cupti.c */
int cupti_start(char *why, size_t len, int *result, uint32_t *version);
void cupti_flush(void);
void cupti_push_corr(uint64_t corr);
/* CUPTI was taken over by the program: later GPU work is timed by event pairs. */
void cuda_cupti_lost(const char *why);
/* Our hook for a CUPTI function the program looks up by name, or NULL. */
void *cupti_hook_by_symbol(const char *name);
void cupti_pop_corr(void);
/* Our outermost driver-level call [start, end] that pushed corr: how a statically linked
 * cudart's runtime call around it is joined to it (cupti_convert.h). */
void cupti_note_driver_call(uint64_t start, uint64_t end, uint64_t corr);
extern int cupti_active;
#include "cupti_convert.h"

#endif
