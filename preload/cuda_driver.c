/* CUDA driver API hooks. Each wrapped entry point is one variant, keyed as the driver keys it:
 * (base name, ABI version it appeared in, per-thread-stream flag), with a slot for the driver's
 * real function. A variant is reached three ways: as an exported symbol (programs linked with
 * -lcuda), from dlsym(libcuda, "cu...") (cuda_dlsym.c), and from cuGetProcAddress*, which
 * cudart (shared or static) uses for every call it makes. Entry points not listed pass through. */
#include "cuda.h"

#include <dlfcn.h>
#include <string.h>

enum { PT_LEGACY = 0, PT_PER_THREAD = 1, PT_ANY = 2 };

/* X(symbol, base name, version, stream flavour) */
#define DRV_VARIANTS(X)                                                 \
	X(cuGetProcAddress, "cuGetProcAddress", 11030, PT_ANY)          \
	X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, PT_ANY)       \
	X(cuInit, "cuInit", 2000, PT_ANY)                               \
	X(cuMemAlloc_v2, "cuMemAlloc", 3020, PT_ANY)                    \
	X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, PT_ANY)          \
	X(cuMemAllocManaged, "cuMemAllocManaged", 6000, PT_ANY)         \
	X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, PT_ANY)            \
	X(cuMemHostAlloc, "cuMemHostAlloc", 2020, PT_ANY)               \
	X(cuMemAllocAsync, "cuMemAllocAsync", 11020, PT_LEGACY)         \
	X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, PT_PER_THREAD) \
	X(cuMemFree_v2, "cuMemFree", 3020, PT_ANY)                      \
	X(cuMemFreeHost, "cuMemFreeHost", 2000, PT_ANY)                 \
	X(cuMemFreeAsync, "cuMemFreeAsync", 11020, PT_LEGACY)           \
	X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, PT_PER_THREAD)  \
	X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, PT_LEGACY)             \
	X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, PT_PER_THREAD)    \
	X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, PT_LEGACY)             \
	X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, PT_PER_THREAD)    \
	X(cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020, PT_LEGACY)             \
	X(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 7000, PT_PER_THREAD)    \
	X(cuMemcpy, "cuMemcpy", 4000, PT_LEGACY)                        \
	X(cuMemcpy_ptds, "cuMemcpy", 7000, PT_PER_THREAD)               \
	X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, PT_LEGACY)   \
	X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, PT_PER_THREAD) \
	X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, PT_LEGACY)   \
	X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, PT_PER_THREAD) \
	X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020, PT_LEGACY)   \
	X(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 7000, PT_PER_THREAD) \
	X(cuMemcpyAsync, "cuMemcpyAsync", 4000, PT_LEGACY)              \
	X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, PT_PER_THREAD)     \
	X(cuMemcpyPeer, "cuMemcpyPeer", 4000, PT_LEGACY)                \
	X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 7000, PT_PER_THREAD)       \
	X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, PT_LEGACY)      \
	X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 7000, PT_PER_THREAD) \
	X(cuMemsetD8_v2, "cuMemsetD8", 3020, PT_LEGACY)                 \
	X(cuMemsetD8_v2_ptds, "cuMemsetD8", 7000, PT_PER_THREAD)        \
	X(cuMemsetD16_v2, "cuMemsetD16", 3020, PT_LEGACY)               \
	X(cuMemsetD16_v2_ptds, "cuMemsetD16", 7000, PT_PER_THREAD)      \
	X(cuMemsetD32_v2, "cuMemsetD32", 3020, PT_LEGACY)               \
	X(cuMemsetD32_v2_ptds, "cuMemsetD32", 7000, PT_PER_THREAD)      \
	X(cuMemsetD8Async, "cuMemsetD8Async", 3020, PT_LEGACY)          \
	X(cuMemsetD8Async_ptsz, "cuMemsetD8Async", 7000, PT_PER_THREAD) \
	X(cuMemsetD16Async, "cuMemsetD16Async", 3020, PT_LEGACY)        \
	X(cuMemsetD16Async_ptsz, "cuMemsetD16Async", 7000, PT_PER_THREAD) \
	X(cuMemsetD32Async, "cuMemsetD32Async", 3020, PT_LEGACY)        \
	X(cuMemsetD32Async_ptsz, "cuMemsetD32Async", 7000, PT_PER_THREAD) \
	X(cuLaunchKernel, "cuLaunchKernel", 4000, PT_LEGACY)            \
	X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, PT_PER_THREAD)   \
	X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, PT_LEGACY)       \
	X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, PT_PER_THREAD) \
	X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, PT_LEGACY) \
	X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, PT_PER_THREAD) \
	X(cuGraphLaunch, "cuGraphLaunch", 10000, PT_LEGACY)             \
	X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, PT_PER_THREAD)    \
	X(cuModuleLoadData, "cuModuleLoadData", 2000, PT_ANY)           \
	X(cuModuleGetFunction, "cuModuleGetFunction", 2000, PT_ANY)     \
	X(cuLibraryGetKernel, "cuLibraryGetKernel", 12000, PT_ANY)      \
	X(cuKernelGetFunction, "cuKernelGetFunction", 12000, PT_ANY)    \
	X(cuCtxSynchronize, "cuCtxSynchronize", 2000, PT_ANY)           \
	X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, PT_ANY)       \
	X(cuStreamSynchronize, "cuStreamSynchronize", 2000, PT_LEGACY)  \
	X(cuStreamSynchronize_ptsz, "cuStreamSynchronize", 7000, PT_PER_THREAD) \
	X(cuEventSynchronize, "cuEventSynchronize", 2000, PT_ANY)       \
	X(cuEventRecord, "cuEventRecord", 2000, PT_LEGACY)              \
	X(cuEventRecord_ptsz, "cuEventRecord", 7000, PT_PER_THREAD)     \
	X(cuEventCreate, "cuEventCreate", 2000, PT_ANY)                 \
	X(cuEventDestroy_v2, "cuEventDestroy", 4000, PT_ANY)            \
	X(cuEventElapsedTime, "cuEventElapsedTime", 2000, PT_ANY)       \
	X(cuEventElapsedTime_v2, "cuEventElapsedTime", 12080, PT_ANY)   \
	X(cuStreamCreate, "cuStreamCreate", 2000, PT_ANY)               \
	X(cuStreamDestroy_v2, "cuStreamDestroy", 4000, PT_ANY)

enum {
#define PROF_X(sym, base, ver, pt) D_##sym,
	DRV_VARIANTS(PROF_X)
#undef PROF_X
	D_COUNT
};

struct drv_variant {
	const char *symbol, *base;
	int version, pt;
	void *wrapper;
	void *_Atomic real;
	uint32_t name_id;
};
static struct drv_variant drv_tab[D_COUNT];

/* The real function of a variant: the one a lookup handed out, or else the next definition
 * of the symbol after ours (programs linked with -lcuda). */
static void *drv_real(int idx)
{
	void *p = atomic_load_explicit(&drv_tab[idx].real, memory_order_relaxed);
	if (likely(p))
		return p;
	p = cuda_real_dlsym(RTLD_NEXT, drv_tab[idx].symbol);
	if (p && !prof_addr_is_ours((uintptr_t)p)) {
		void *expected = NULL;
		atomic_compare_exchange_strong(&drv_tab[idx].real, &expected, p);
		return atomic_load(&drv_tab[idx].real);
	}
	return NULL;
}

/* Takes the driver's pointer for a variant; returns the wrapper, or NULL where the slot
 * already holds a different function (never call one through the other's slot). */
static void *drv_adopt(int idx, void *real)
{
	if (!real || prof_addr_is_ours((uintptr_t)real))
		return NULL;
	void *expected = NULL;
	if (atomic_compare_exchange_strong(&drv_tab[idx].real, &expected, real) || expected == real)
		return drv_tab[idx].wrapper;
	prof_dbg(1, "cuda: %s: a second driver function, passed through", drv_tab[idx].symbol);
	return NULL;
}

#define CALL_SITE ((uintptr_t)__builtin_return_address(0))
#define HOOK_FRAME ((const uintptr_t *)__builtin_frame_address(0))  /* returns to CALL_SITE */
#define ERR_NO_DRIVER 999  /* CUDA_ERROR_UNKNOWN: our export called with no driver behind it */

/* Start of every wrapper: `real` and, when recording, `c`. */
#define BEGIN(sym)                                                                        \
	__typeof__(&w_##sym) real = (__typeof__(&w_##sym))drv_real(D_##sym);              \
	if (unlikely(!real))                                                              \
		return ERR_NO_DRIVER;                                                     \
	struct cuda_call c;                                                               \
	int rec = cuda_call_begin(&c, &drv_tab[D_##sym].name_id, #sym, PROF_CUDA_DRIVER,  \
				  CALL_SITE, HOOK_FRAME)

static inline int events_on(void)
{
	return cuda_timing_now() == PROF_CUDA_TIMING_EVENTS;
}

/* Event pair around GPU work when timing by events. */
#define PAIR_BEGIN(stream, pt) \
	struct cuda_pair *pair = events_on() ? cuda_events_begin((stream), (pt)) : NULL

static inline void pair_end(struct cuda_pair *pair, struct cuda_call *c, CUresult rc,
			    unsigned act, unsigned kind, uint64_t bytes, uint32_t name,
			    const unsigned grid[3], const unsigned block[3])
{
	cuda_call_done(c);  /* the end event is not part of the call's time */
	if (pair)
		cuda_events_end(pair, rc == CUDA_SUCCESS ? c : NULL, act, kind, bytes, name, grid, block);
}

/* ---- plain calls ----------------------------------------------------------------------- */

#define PLAIN(sym, params, args)                      \
	static CUresult w_##sym params                \
	{                                             \
		BEGIN(sym);                           \
		if (!rec)                             \
			return real args;             \
		CUresult rc = real args;              \
		cuda_call_end(&c, rc);                \
		return rc;                            \
	}

PLAIN(cuInit, (unsigned flags), (flags))
PLAIN(cuModuleLoadData, (CUmodule *m, const void *image), (m, image))
PLAIN(cuEventRecord, (CUevent e, CUstream s), (e, s))
PLAIN(cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s))
PLAIN(cuEventCreate, (CUevent *e, unsigned flags), (e, flags))
PLAIN(cuEventDestroy_v2, (CUevent e), (e))
PLAIN(cuEventElapsedTime, (float *ms, CUevent a, CUevent b), (ms, a, b))
PLAIN(cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b), (ms, a, b))
PLAIN(cuStreamCreate, (CUstream *s, unsigned flags), (s, flags))
PLAIN(cuStreamDestroy_v2, (CUstream s), (s))

/* Synchronisation: afterwards, event pairs that completed are timed. */
#define SYNC(sym, params, args, all)                  \
	static CUresult w_##sym params                \
	{                                             \
		BEGIN(sym);                           \
		if (!rec)                             \
			return real args;             \
		CUresult rc = real args;              \
		if (events_on())                      \
			cuda_events_drain(all);       \
		cuda_call_end(&c, rc);                \
		return rc;                            \
	}

SYNC(cuCtxSynchronize, (void), (), 1)
SYNC(cuCtxSynchronize_v2, (CUcontext ctx), (ctx), 1)
SYNC(cuStreamSynchronize, (CUstream s), (s), 0)
SYNC(cuStreamSynchronize_ptsz, (CUstream s), (s), 0)
SYNC(cuEventSynchronize, (CUevent e), (e), 0)

/* ---- memory ---------------------------------------------------------------------------- */

#define ALLOC(sym, params, args, ptr_expr, size_expr, kind) \
	static CUresult w_##sym params                      \
	{                                                   \
		BEGIN(sym);                                 \
		if (!rec)                                   \
			return real args;                   \
		CUresult rc = real args;                    \
		if (rc == CUDA_SUCCESS && p)                \
			cuda_rec_malloc(&c, (uint64_t)(uintptr_t)(ptr_expr), (size_expr), (kind)); \
		cuda_call_end(&c, rc);                      \
		return rc;                                  \
	}

ALLOC(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), (p, n), *p, n, PROF_CUDA_MEM_DEVICE)
ALLOC(cuMemAllocPitch_v2, (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem),
      (p, pitch, w, h, elem), *p, (pitch ? *pitch : w) * h, PROF_CUDA_MEM_DEVICE)
ALLOC(cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned flags), (p, n, flags), *p, n,
      PROF_CUDA_MEM_MANAGED)
ALLOC(cuMemAllocHost_v2, (void **p, size_t n), (p, n), *p, n, PROF_CUDA_MEM_HOST)
ALLOC(cuMemHostAlloc, (void **p, size_t n, unsigned flags), (p, n, flags), *p, n,
      PROF_CUDA_MEM_HOST)
ALLOC(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s), *p, n,
      PROF_CUDA_MEM_ASYNC)
ALLOC(cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s), *p, n,
      PROF_CUDA_MEM_ASYNC)

#define FREE(sym, params, args, ptr_expr, kind)                  \
	static CUresult w_##sym params                           \
	{                                                        \
		BEGIN(sym);                                      \
		if (!rec)                                        \
			return real args;                        \
		CUresult rc = real args;                         \
		if (rc == CUDA_SUCCESS && (ptr_expr))            \
			cuda_rec_free(&c, (uint64_t)(uintptr_t)(ptr_expr), (kind)); \
		cuda_call_end(&c, rc);                           \
		return rc;                                       \
	}

FREE(cuMemFree_v2, (CUdeviceptr p), (p), p, PROF_CUDA_MEM_DEVICE)
FREE(cuMemFreeHost, (void *p), (p), p, PROF_CUDA_MEM_HOST)
FREE(cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s), p, PROF_CUDA_MEM_ASYNC)
FREE(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s), p, PROF_CUDA_MEM_ASYNC)

/* ---- copies and memsets ---------------------------------------------------------------- */

/* A copy or memset of `bytes` on `stream` (NULL for the synchronous forms). */
#define COPY(sym, params, args, kind, bytes_expr, stream_expr, async, pt)              \
	static CUresult w_##sym params                                                 \
	{                                                                              \
		BEGIN(sym);                                                            \
		if (!rec)                                                              \
			return real args;                                              \
		CUstream st_ = (stream_expr);                                          \
		uint64_t bytes_ = (bytes_expr);                                        \
		PAIR_BEGIN(st_, pt);                                                   \
		if (pair)                                                              \
			cuda_call_restart(&c);                                         \
		CUresult rc = real args;                                               \
		pair_end(pair, &c, rc, PROF_CUDA_ACT_COPY, (kind), bytes_, 0, NULL, NULL); \
		if (rc == CUDA_SUCCESS)                                                \
			cuda_rec_copy(&c, (kind), bytes_, st_, (async));               \
		cuda_call_end(&c, rc);                                                 \
		return rc;                                                             \
	}

#define H2D PROF_CUDA_COPY_HTOD
#define D2H PROF_CUDA_COPY_DTOH
#define D2D PROF_CUDA_COPY_DTOD
#define P2P PROF_CUDA_COPY_PTOP
#define UNK PROF_CUDA_COPY_UNKNOWN
#define MST PROF_CUDA_COPY_MEMSET

COPY(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), (d, s, n), H2D, n, NULL, 0, 0)
COPY(cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void *s, size_t n), (d, s, n), H2D, n, NULL, 0, 1)
COPY(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), (d, s, n), D2H, n, NULL, 0, 0)
COPY(cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n), (d, s, n), D2H, n, NULL, 0, 1)
COPY(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n), D2D, n, NULL, 0, 0)
COPY(cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n), D2D, n, NULL, 0, 1)
COPY(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n), UNK, n, NULL, 0, 0)
COPY(cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n), UNK, n, NULL, 0, 1)
COPY(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st),
     H2D, n, st, 1, 0)
COPY(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void *s, size_t n, CUstream st),
     (d, s, n, st), H2D, n, st, 1, 1)
COPY(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     D2H, n, st, 1, 0)
COPY(cuMemcpyDtoHAsync_v2_ptsz, (void *d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     D2H, n, st, 1, 1)
COPY(cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     D2D, n, st, 1, 0)
COPY(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),
     (d, s, n, st), D2D, n, st, 1, 1)
COPY(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     UNK, n, st, 1, 0)
COPY(cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     UNK, n, st, 1, 1)
COPY(cuMemcpyPeer, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
     (d, dc, s, sc, n), P2P, n, NULL, 0, 0)
COPY(cuMemcpyPeer_ptds, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
     (d, dc, s, sc, n), P2P, n, NULL, 0, 1)
COPY(cuMemcpyPeerAsync, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
			 CUstream st), (d, dc, s, sc, n, st), P2P, n, st, 1, 0)
COPY(cuMemcpyPeerAsync_ptsz, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
			      CUstream st), (d, dc, s, sc, n, st), P2P, n, st, 1, 1)
COPY(cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n), MST, n, NULL, 0, 0)
COPY(cuMemsetD8_v2_ptds, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n), MST, n, NULL, 0, 1)
COPY(cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n), MST, n * 2, NULL, 0, 0)
COPY(cuMemsetD16_v2_ptds, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n), MST, n * 2, NULL,
     0, 1)
COPY(cuMemsetD32_v2, (CUdeviceptr d, unsigned v, size_t n), (d, v, n), MST, n * 4, NULL, 0, 0)
COPY(cuMemsetD32_v2_ptds, (CUdeviceptr d, unsigned v, size_t n), (d, v, n), MST, n * 4, NULL, 0, 1)
COPY(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream st), (d, v, n, st), MST,
     n, st, 1, 0)
COPY(cuMemsetD8Async_ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream st), (d, v, n, st),
     MST, n, st, 1, 1)
COPY(cuMemsetD16Async, (CUdeviceptr d, unsigned short v, size_t n, CUstream st), (d, v, n, st),
     MST, n * 2, st, 1, 0)
COPY(cuMemsetD16Async_ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream st),
     (d, v, n, st), MST, n * 2, st, 1, 1)
COPY(cuMemsetD32Async, (CUdeviceptr d, unsigned v, size_t n, CUstream st), (d, v, n, st), MST,
     n * 4, st, 1, 0)
COPY(cuMemsetD32Async_ptsz, (CUdeviceptr d, unsigned v, size_t n, CUstream st), (d, v, n, st),
     MST, n * 4, st, 1, 1)

/* ---- kernels --------------------------------------------------------------------------- */

/* The name of a CUfunction or CUkernel: from the lookups we saw, else asked of the driver
 * once (both getters: a launch may pass either handle). */
static uint32_t function_name(CUfunction f)
{
	uint32_t id = cuda_handle_name((uint64_t)(uintptr_t)f);
	if (id || !f)
		return id;
	const char *s = NULL;
	if (cuda_drv.cuFuncGetName && cuda_drv.cuFuncGetName(&s, f) != CUDA_SUCCESS)
		s = NULL;
	if (!s && cuda_drv.cuKernelGetName && cuda_drv.cuKernelGetName(&s, f) != CUDA_SUCCESS)
		s = NULL;
	if (s && (id = cuda_name(s, PROF_CUDA_NAME_KERNEL)))
		cuda_handle_set((uint64_t)(uintptr_t)f, id);
	return id;
}

static CUresult launch_common(struct cuda_call *c, CUresult (*call)(void *), void *arg,
			      CUfunction f, const unsigned grid[3], const unsigned block[3],
			      unsigned smem, CUstream s, int pt)
{
	prof_hook_enter(c->th);
	uint32_t name = function_name(f);
	c->th->in_hook--;
	PAIR_BEGIN(s, pt);
	if (pair)
		cuda_call_restart(c);  /* the start event is ours */
	CUresult rc = call(arg);
	pair_end(pair, c, rc, PROF_CUDA_ACT_KERNEL, 0, 0, name, grid, block);
	if (rc == CUDA_SUCCESS)
		cuda_rec_launch(c, (uint64_t)(uintptr_t)f, name, s, grid, block, smem, 0);
	cuda_call_end(c, rc);
	return rc;
}

struct launch_args {
	void *real;
	CUfunction f;
	unsigned g[3], b[3], smem;
	CUstream s;
	void **params, **extra;
	const cuda_launch_config *cfg;
};

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, CUstream, void **);
typedef CUresult (*launch_ex_fn)(const cuda_launch_config *, CUfunction, void **, void **);

static CUresult call_launch(void *p)
{
	struct launch_args *a = p;
	return ((launch_fn)a->real)(a->f, a->g[0], a->g[1], a->g[2], a->b[0], a->b[1], a->b[2],
				    a->smem, a->s, a->params, a->extra);
}

static CUresult call_coop(void *p)
{
	struct launch_args *a = p;
	return ((coop_fn)a->real)(a->f, a->g[0], a->g[1], a->g[2], a->b[0], a->b[1], a->b[2],
				  a->smem, a->s, a->params);
}

static CUresult call_launch_ex(void *p)
{
	struct launch_args *a = p;
	return ((launch_ex_fn)a->real)(a->cfg, a->f, a->params, a->extra);
}

#define LAUNCH(sym, pt)                                                                     \
	static CUresult w_##sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz,        \
				unsigned bx, unsigned by, unsigned bz, unsigned smem,       \
				CUstream s, void **params, void **extra)                    \
	{                                                                                   \
		BEGIN(sym);                                                                 \
		if (!rec)                                                                   \
			return real(f, gx, gy, gz, bx, by, bz, smem, s, params, extra);     \
		struct launch_args a = { (void *)real, f, { gx, gy, gz }, { bx, by, bz },   \
					 smem, s, params, extra, NULL };                    \
		return launch_common(&c, call_launch, &a, f, a.g, a.b, smem, s, pt);        \
	}
LAUNCH(cuLaunchKernel, 0)
LAUNCH(cuLaunchKernel_ptsz, 1)

#define COOP(sym, pt)                                                                       \
	static CUresult w_##sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz,        \
				unsigned bx, unsigned by, unsigned bz, unsigned smem,       \
				CUstream s, void **params)                                  \
	{                                                                                   \
		BEGIN(sym);                                                                 \
		if (!rec)                                                                   \
			return real(f, gx, gy, gz, bx, by, bz, smem, s, params);            \
		struct launch_args a = { (void *)real, f, { gx, gy, gz }, { bx, by, bz },   \
					 smem, s, params, NULL, NULL };                     \
		return launch_common(&c, call_coop, &a, f, a.g, a.b, smem, s, pt);          \
	}
COOP(cuLaunchCooperativeKernel, 0)
COOP(cuLaunchCooperativeKernel_ptsz, 1)

#define LAUNCH_EX(sym, pt)                                                                  \
	static CUresult w_##sym(const cuda_launch_config *cfg, CUfunction f, void **params, \
				void **extra)                                               \
	{                                                                                   \
		BEGIN(sym);                                                                 \
		if (!rec)                                                                   \
			return real(cfg, f, params, extra);                                 \
		if (!cfg) {                                                                 \
			CUresult rc = real(cfg, f, params, extra);                          \
			cuda_call_end(&c, rc);                                              \
			return rc;                                                          \
		}                                                                           \
		struct launch_args a = { (void *)real, f,                                   \
			{ cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ },                    \
			{ cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ },                 \
			cfg->sharedMemBytes, cfg->hStream, params, extra, cfg };            \
		return launch_common(&c, call_launch_ex, &a, f, a.g, a.b, a.smem, a.s, pt); \
	}
LAUNCH_EX(cuLaunchKernelEx, 0)
LAUNCH_EX(cuLaunchKernelEx_ptsz, 1)

#define GRAPH(sym, pt)                                                                      \
	static CUresult w_##sym(CUgraphExec g, CUstream s)                                  \
	{                                                                                   \
		BEGIN(sym);                                                                 \
		if (!rec)                                                                   \
			return real(g, s);                                                  \
		PAIR_BEGIN(s, pt);                                                          \
		if (pair)                                                                   \
			cuda_call_restart(&c);                                              \
		CUresult rc = real(g, s);                                                   \
		pair_end(pair, &c, rc, PROF_CUDA_ACT_KERNEL, 0, 0, 0, NULL, NULL);          \
		if (rc == CUDA_SUCCESS)                                                     \
			cuda_rec_launch(&c, (uint64_t)(uintptr_t)g, 0, s, NULL, NULL, 0, 1); \
		cuda_call_end(&c, rc);                                                      \
		return rc;                                                                  \
	}
GRAPH(cuGraphLaunch, 0)
GRAPH(cuGraphLaunch_ptsz, 1)

/* ---- kernel names ---------------------------------------------------------------------- */

#define LOOKUP(sym, handle_t, owner_t)                                                      \
	static CUresult w_##sym(handle_t *out, owner_t owner, const char *name)             \
	{                                                                                   \
		BEGIN(sym);                                                                 \
		if (!rec)                                                                   \
			return real(out, owner, name);                                      \
		CUresult rc = real(out, owner, name);                                       \
		if (rc == CUDA_SUCCESS && out && name) {                                    \
			prof_hook_enter(c.th);                                              \
			cuda_handle_set((uint64_t)(uintptr_t)*out,                          \
					cuda_name(name, PROF_CUDA_NAME_KERNEL));            \
			c.th->in_hook--;                                                    \
		}                                                                           \
		cuda_call_end(&c, rc);                                                      \
		return rc;                                                                  \
	}
LOOKUP(cuModuleGetFunction, CUfunction, CUmodule)
LOOKUP(cuLibraryGetKernel, CUkernel, CUlibrary)

static CUresult w_cuKernelGetFunction(CUfunction *out, CUkernel k)
{
	BEGIN(cuKernelGetFunction);
	if (!rec)
		return real(out, k);
	CUresult rc = real(out, k);
	if (rc == CUDA_SUCCESS && out)
		cuda_handle_set((uint64_t)(uintptr_t)*out, cuda_handle_name((uint64_t)(uintptr_t)k));
	cuda_call_end(&c, rc);
	return rc;
}

/* ---- cuGetProcAddress ------------------------------------------------------------------ */

static void *wrap_proc(const char *symbol, void **pfn, int version, uint64_t flags)
{
	if (!pfn || !*pfn || !symbol || !prof_enabled(PROF_EV_CUDA))
		return NULL;
	return cuda_driver_wrapper(symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
				   *pfn);
}

/* Not recorded as calls (cudart makes hundreds at start-up): they only hand out wrappers. */
static CUresult w_cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	CUresult (*real)(const char *, void **, int, uint64_t) =
		(CUresult (*)(const char *, void **, int, uint64_t))drv_real(D_cuGetProcAddress);
	if (!real)
		return ERR_NO_DRIVER;
	CUresult rc = real(symbol, pfn, version, flags);
	void *w;
	if (rc == CUDA_SUCCESS && (w = wrap_proc(symbol, pfn, version, flags)))
		*pfn = w;
	return rc;
}

static CUresult w_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
				      int *status)
{
	CUresult (*real)(const char *, void **, int, uint64_t, int *) =
		(CUresult (*)(const char *, void **, int, uint64_t, int *))drv_real(D_cuGetProcAddress_v2);
	if (!real)
		return ERR_NO_DRIVER;
	CUresult rc = real(symbol, pfn, version, flags, status);
	void *w;
	if (rc == CUDA_SUCCESS && (w = wrap_proc(symbol, pfn, version, flags)))
		*pfn = w;
	return rc;
}

/* ---- the table ------------------------------------------------------------------------- */

static struct drv_variant drv_tab[D_COUNT] = {
#define PROF_X(sym, b, ver, p) [D_##sym] = { .symbol = #sym, .base = b, .version = ver, .pt = p, \
					     .wrapper = (void *)w_##sym },
	DRV_VARIANTS(PROF_X)
#undef PROF_X
};

/* The exported names: programs linked with -lcuda call these. */
#define PROF_X(sym, b, ver, p) \
	extern __typeof__(w_##sym) sym __attribute__((alias("w_" #sym), visibility("default")));
DRV_VARIANTS(PROF_X)
#undef PROF_X

/* The variant the driver hands out for (name, version, flag): of those with this base name,
 * the newest at most `version`, of the stream flavour asked for where the name has both. */
void *cuda_driver_wrapper(const char *name, int version, int per_thread, void *real)
{
	int best = -1;
	for (int pass = 0; pass < 2 && best < 0; pass++) {
		for (int i = 0; i < D_COUNT; i++) {
			const struct drv_variant *v = &drv_tab[i];
			if (v->version > version || strcmp(v->base, name))
				continue;
			/* pass 0: the flavour asked for (or one without streams); pass 1: a
			 * per-thread request at a version older than the per-thread form */
			int ok = v->pt == PT_ANY || v->pt == (pass == 0 ? per_thread : PT_LEGACY);
			if (ok && (best < 0 || v->version > drv_tab[best].version))
				best = i;
		}
		if (!per_thread)
			break;
	}
	return best < 0 ? NULL : drv_adopt(best, real);
}

void *cuda_driver_wrapper_by_symbol(const char *symbol, void *real)
{
	for (int i = 0; i < D_COUNT; i++)
		if (!strcmp(drv_tab[i].symbol, symbol))
			return drv_adopt(i, real);
	return NULL;
}
