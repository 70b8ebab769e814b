/* CUDA runtime API hooks, by interposition: they bind when the program uses the shared cudart
 * (`nvcc -cudart shared`, PyTorch). A statically linked cudart is seen at the driver level only
 * (cuda_driver.c). Kernel names come from __cudaRegisterFunction (host stub -> device name) and
 * __cudaGetKernel (kernel handle -> host stub). GPU timing is done by the driver-level hooks
 * the runtime calls into; these record the call, its correlation id and what it asked for. */
#include "cuda.h"

#include <dlfcn.h>

/* Real function of a runtime hook, looked up once. */
#define REAL_RT(sym, type)                                                        \
	static __typeof__(type) real_;                                            \
	if (unlikely(!real_))                                                     \
		real_ = (__typeof__(type))cuda_real_dlsym(RTLD_NEXT, #sym);       \
	__typeof__(type) real = real_;                                                     \
	if (unlikely(!real))                                                      \
		return 35 /* cudaErrorInsufficientDriver: no cudart behind us */

#define CALL_SITE ((uintptr_t)__builtin_return_address(0))
#define HOOK_FRAME ((const uintptr_t *)__builtin_frame_address(0))  /* returns to CALL_SITE */
#define RT_BEGIN(label)                                                            \
	static uint32_t name_id_;                                                  \
	struct cuda_call c;                                                        \
	int rec = cuda_call_begin(&c, &name_id_, label, PROF_CUDA_RUNTIME, CALL_SITE, \
				  HOOK_FRAME)

static unsigned rt_copy_kind(int kind)
{
	switch (kind) {
	case CUDART_H2H: return PROF_CUDA_COPY_HTOH;
	case CUDART_H2D: return PROF_CUDA_COPY_HTOD;
	case CUDART_D2H: return PROF_CUDA_COPY_DTOH;
	case CUDART_D2D: return PROF_CUDA_COPY_DTOD;
	default: return PROF_CUDA_COPY_UNKNOWN;
	}
}

/* ---- plain calls and synchronisation --------------------------------------------------- */

#define RT_PLAIN(sym, params, args)                                   \
	PROF_EXPORT cudaError_t sym params                            \
	{                                                             \
		REAL_RT(sym, cudaError_t(*) params);                  \
		RT_BEGIN(#sym);                                       \
		if (!rec)                                             \
			return real args;                             \
		cudaError_t rc = real args;                           \
		cuda_call_end(&c, rc);                                \
		return rc;                                            \
	}

RT_PLAIN(cudaDeviceSynchronize, (void), ())
RT_PLAIN(cudaStreamSynchronize, (cudaStream_t s), (s))
RT_PLAIN(cudaStreamSynchronize_ptsz, (cudaStream_t s), (s))
RT_PLAIN(cudaEventSynchronize, (void *e), (e))

/* ---- memory ---------------------------------------------------------------------------- */

#define RT_ALLOC(sym, params, args, size_expr, kind)                          \
	PROF_EXPORT cudaError_t sym params                                    \
	{                                                                     \
		REAL_RT(sym, cudaError_t(*) params);                          \
		RT_BEGIN(#sym);                                               \
		if (!rec)                                                     \
			return real args;                                     \
		cudaError_t rc = real args;                                   \
		if (rc == 0 && p)                                             \
			cuda_rec_malloc(&c, (uint64_t)(uintptr_t)*p, (size_expr), (kind)); \
		cuda_call_end(&c, rc);                                        \
		return rc;                                                    \
	}

RT_ALLOC(cudaMalloc, (void **p, size_t n), (p, n), n, PROF_CUDA_MEM_DEVICE)
RT_ALLOC(cudaMallocPitch, (void **p, size_t *pitch, size_t w, size_t h), (p, pitch, w, h),
	 (pitch ? *pitch : w) * h, PROF_CUDA_MEM_DEVICE)
RT_ALLOC(cudaMallocManaged, (void **p, size_t n, unsigned flags), (p, n, flags), n,
	 PROF_CUDA_MEM_MANAGED)
RT_ALLOC(cudaMallocHost, (void **p, size_t n), (p, n), n, PROF_CUDA_MEM_HOST)
RT_ALLOC(cudaHostAlloc, (void **p, size_t n, unsigned flags), (p, n, flags), n, PROF_CUDA_MEM_HOST)
RT_ALLOC(cudaMallocAsync, (void **p, size_t n, cudaStream_t s), (p, n, s), n, PROF_CUDA_MEM_ASYNC)
RT_ALLOC(cudaMallocAsync_ptsz, (void **p, size_t n, cudaStream_t s), (p, n, s), n,
	 PROF_CUDA_MEM_ASYNC)

#define RT_FREE(sym, params, args, kind)                                      \
	PROF_EXPORT cudaError_t sym params                                    \
	{                                                                     \
		REAL_RT(sym, cudaError_t(*) params);                          \
		RT_BEGIN(#sym);                                               \
		if (!rec)                                                     \
			return real args;                                     \
		cudaError_t rc = real args;                                   \
		if (rc == 0 && p)                                             \
			cuda_rec_free(&c, (uint64_t)(uintptr_t)p, (kind));    \
		cuda_call_end(&c, rc);                                        \
		return rc;                                                    \
	}

RT_FREE(cudaFree, (void *p), (p), PROF_CUDA_MEM_DEVICE)
RT_FREE(cudaFreeHost, (void *p), (p), PROF_CUDA_MEM_HOST)
RT_FREE(cudaFreeAsync, (void *p, cudaStream_t s), (p, s), PROF_CUDA_MEM_ASYNC)
RT_FREE(cudaFreeAsync_ptsz, (void *p, cudaStream_t s), (p, s), PROF_CUDA_MEM_ASYNC)

/* ---- copies ---------------------------------------------------------------------------- */

#define RT_COPY(sym, params, args, kind_expr, bytes_expr, stream_expr, async) \
	PROF_EXPORT cudaError_t sym params                                    \
	{                                                                     \
		REAL_RT(sym, cudaError_t(*) params);                          \
		RT_BEGIN(#sym);                                               \
		if (!rec)                                                     \
			return real args;                                     \
		cudaError_t rc = real args;                                   \
		if (rc == 0)                                                  \
			cuda_rec_copy(&c, (kind_expr), (bytes_expr), (stream_expr), (async)); \
		cuda_call_end(&c, rc);                                        \
		return rc;                                                    \
	}

RT_COPY(cudaMemcpy, (void *d, const void *s, size_t n, int kind), (d, s, n, kind),
	rt_copy_kind(kind), n, NULL, 0)
RT_COPY(cudaMemcpy_ptds, (void *d, const void *s, size_t n, int kind), (d, s, n, kind),
	rt_copy_kind(kind), n, NULL, 0)
RT_COPY(cudaMemcpyAsync, (void *d, const void *s, size_t n, int kind, cudaStream_t st),
	(d, s, n, kind, st), rt_copy_kind(kind), n, st, 1)
RT_COPY(cudaMemcpyAsync_ptsz, (void *d, const void *s, size_t n, int kind, cudaStream_t st),
	(d, s, n, kind, st), rt_copy_kind(kind), n, st, 1)
RT_COPY(cudaMemcpyPeer, (void *d, int dd, const void *s, int sd, size_t n), (d, dd, s, sd, n),
	PROF_CUDA_COPY_PTOP, n, NULL, 0)
RT_COPY(cudaMemcpyPeerAsync, (void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st),
	(d, dd, s, sd, n, st), PROF_CUDA_COPY_PTOP, n, st, 1)
RT_COPY(cudaMemset, (void *d, int v, size_t n), (d, v, n), PROF_CUDA_COPY_MEMSET, n, NULL, 0)
RT_COPY(cudaMemset_ptds, (void *d, int v, size_t n), (d, v, n), PROF_CUDA_COPY_MEMSET, n, NULL, 0)
RT_COPY(cudaMemsetAsync, (void *d, int v, size_t n, cudaStream_t st), (d, v, n, st),
	PROF_CUDA_COPY_MEMSET, n, st, 1)
RT_COPY(cudaMemsetAsync_ptsz, (void *d, int v, size_t n, cudaStream_t st), (d, v, n, st),
	PROF_CUDA_COPY_MEMSET, n, st, 1)

/* ---- kernels --------------------------------------------------------------------------- */

/* Host stub -> device function name, at start-up (a void function: never recorded as a call). */
PROF_EXPORT void __cudaRegisterFunction(void **fatbin, const char *host_fun, char *device_fun,
					const char *device_name, int thread_limit, void *tid,
					void *bid, void *bdim, void *gdim, int *wsize)
{
	typedef void (*fn)(void **, const char *, char *, const char *, int, void *, void *, void *,
			   void *, int *);
	static fn real;
	if (!real)
		real = (fn)cuda_real_dlsym(RTLD_NEXT, "__cudaRegisterFunction");
	if (real)
		real(fatbin, host_fun, device_fun, device_name, thread_limit, tid, bid, bdim, gdim, wsize);
	if (prof_enabled(PROF_EV_CUDA) && host_fun) {
		struct prof_thread *th = prof_thread_get();
		prof_hook_enter(th);
		const char *name = device_fun ? device_fun : device_name;
		cuda_handle_set_str((uint64_t)(uintptr_t)host_fun, name);
		th->in_hook--;
	}
}

/* CUDA 13 <<<>>>: the launch names a kernel handle got from the host stub here. */
PROF_EXPORT cudaError_t __cudaGetKernel(void **kernel, const void *host_fun)
{
	REAL_RT(__cudaGetKernel, cudaError_t (*)(void **, const void *));
	cudaError_t rc = real(kernel, host_fun);
	if (rc == 0 && kernel && *kernel && prof_enabled(PROF_EV_CUDA)) {
		uint32_t id = cuda_handle_name((uint64_t)(uintptr_t)host_fun);
		if (id)
			cuda_handle_set((uint64_t)(uintptr_t)*kernel, id);
	}
	return rc;
}

static cudaError_t rt_launched(struct cuda_call *c, cudaError_t rc, const void *func,
			       cuda_dim3 g, cuda_dim3 b, size_t smem, cudaStream_t s)
{
	cuda_call_done(c);
	if (rc == 0) {
		prof_hook_enter(c->th);
		uint32_t name = cuda_handle_name((uint64_t)(uintptr_t)func);
		c->th->in_hook--;
		unsigned grid[3] = { g.x, g.y, g.z }, block[3] = { b.x, b.y, b.z };
		cuda_rec_launch(c, (uint64_t)(uintptr_t)func, name, s, grid, block, (unsigned)smem, 0);
	}
	cuda_call_end(c, rc);
	return rc;
}

#define RT_LAUNCH(sym, label, func_t)                                                        \
	PROF_EXPORT cudaError_t sym(func_t func, cuda_dim3 g, cuda_dim3 b, void **args,      \
				    size_t smem, cudaStream_t s)                             \
	{                                                                                    \
		REAL_RT(sym, cudaError_t (*)(func_t, cuda_dim3, cuda_dim3, void **, size_t,  \
					     cudaStream_t));                                 \
		RT_BEGIN(label);                                                             \
		if (!rec)                                                                    \
			return real(func, g, b, args, smem, s);                              \
		return rt_launched(&c, real(func, g, b, args, smem, s), func, g, b, smem, s); \
	}

RT_LAUNCH(cudaLaunchKernel, "cudaLaunchKernel", const void *)
RT_LAUNCH(cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", const void *)
RT_LAUNCH(__cudaLaunchKernel, "cudaLaunchKernel", void *)
RT_LAUNCH(__cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", void *)
RT_LAUNCH(cudaLaunchCooperativeKernel, "cudaLaunchCooperativeKernel", const void *)
RT_LAUNCH(cudaLaunchCooperativeKernel_ptsz, "cudaLaunchCooperativeKernel_ptsz", const void *)

#define RT_LAUNCH_EX(sym)                                                                    \
	PROF_EXPORT cudaError_t sym(const cudart_launch_config *cfg, const void *func,       \
				    void **args)                                             \
	{                                                                                    \
		REAL_RT(sym, cudaError_t (*)(const cudart_launch_config *, const void *,     \
					     void **));                                      \
		RT_BEGIN(#sym);                                                              \
		if (!rec || !cfg) {                                                          \
			cudaError_t rc_ = real(cfg, func, args);                             \
			if (rec)                                                             \
				cuda_call_end(&c, rc_);                                      \
			return rc_;                                                          \
		}                                                                            \
		return rt_launched(&c, real(cfg, func, args), func, cfg->gridDim,            \
				   cfg->blockDim, cfg->dynamicSmemBytes, cfg->stream);       \
	}

RT_LAUNCH_EX(cudaLaunchKernelExC)
RT_LAUNCH_EX(cudaLaunchKernelExC_ptsz)

#define RT_GRAPH(sym)                                                                        \
	PROF_EXPORT cudaError_t sym(void *exec, cudaStream_t s)                              \
	{                                                                                    \
		REAL_RT(sym, cudaError_t (*)(void *, cudaStream_t));                         \
		RT_BEGIN(#sym);                                                              \
		if (!rec)                                                                    \
			return real(exec, s);                                                \
		cudaError_t rc = real(exec, s);                                              \
		if (rc == 0)                                                                 \
			cuda_rec_launch(&c, (uint64_t)(uintptr_t)exec, 0, s, NULL, NULL, 0, 1); \
		cuda_call_end(&c, rc);                                                       \
		return rc;                                                                   \
	}

RT_GRAPH(cudaGraphLaunch)
RT_GRAPH(cudaGraphLaunch_ptsz)
