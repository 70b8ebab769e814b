/* A fake CUDA driver (build/cuda/libcuda.so.1) for testing libprof without a GPU. Linked
 * -Bsymbolic, so its internal calls never reach the preloaded hooks. Device memory is host
 * memory; each stream is a worker thread that runs its operations in order: a "kernel" sleeps
 * for the microseconds in its first parameter, copies and memsets really copy, events take the
 * time when the stream reaches them. It answers cuGetProcAddress by (name, version, per-thread
 * flag) as the real driver does, and refuses cuGetExportTable (so the real cudart gives up).
 * Test-only: FAKE_CUDA_LOG=path writes when each kernel ran ("name start_ns end_ns") at exit.
 * FAKE_CUDA_SYNC=1 runs each operation at once in the calling thread instead (bench/cuda.sh: a
 * worker's wake-ups depend on how fast the caller submits, a real driver's queue does not). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;
#define EXPORT __attribute__((visibility("default")))

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_HANDLE = 400,
       NOT_FOUND = 500, NOT_READY = 600, NOT_SUPPORTED = 801 };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- streams ---------------------------------------------------------------------------- */

enum op_kind { OP_KERNEL, OP_COPY, OP_SET8, OP_SET16, OP_SET32, OP_EVENT };

struct event {
	uint64_t ts;
	int done;
};

struct op {
	enum op_kind kind;
	struct op *next;
	void *dst;
	const void *src;
	size_t n;
	uint32_t value;
	unsigned us;
	const char *name;
	struct event *ev;
};

struct stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct op *head, *tail;
	int busy;
	pthread_t thread;
	struct stream *next_all;
};

#define MAX_LOG 100000
static struct { const char *name; uint64_t start, end; } klog[MAX_LOG];
static unsigned nlog;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream *all_streams;
static struct stream *default_stream;
static int initialized;

static void run_op(struct op *o)
{
	switch (o->kind) {
	case OP_KERNEL: {
		uint64_t t0 = now_ns();
		if (o->us) {
			struct timespec ts = { o->us / 1000000, (long)(o->us % 1000000) * 1000 };
			nanosleep(&ts, NULL);
		}
		uint64_t t1 = now_ns();
		pthread_mutex_lock(&log_mu);
		if (nlog < MAX_LOG) {
			klog[nlog].name = o->name;
			klog[nlog].start = t0;
			klog[nlog].end = t1;
			nlog++;
		}
		pthread_mutex_unlock(&log_mu);
		break;
	}
	case OP_COPY:
		memmove(o->dst, o->src, o->n);
		break;
	case OP_SET8:
		memset(o->dst, (int)o->value, o->n);
		break;
	case OP_SET16:
		for (size_t i = 0; i < o->n; i++)
			((uint16_t *)o->dst)[i] = (uint16_t)o->value;
		break;
	case OP_SET32:
		for (size_t i = 0; i < o->n; i++)
			((uint32_t *)o->dst)[i] = o->value;
		break;
	case OP_EVENT:
		o->ev->ts = now_ns();
		__atomic_store_n(&o->ev->done, 1, __ATOMIC_RELEASE);
		break;
	}
}

static void *worker(void *arg)
{
	struct stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head)
			pthread_cond_wait(&s->cv, &s->mu);
		struct op *o = s->head;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		run_op(o);
		pthread_mutex_lock(&s->mu);
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = 0;
		free(o);
		pthread_cond_broadcast(&s->cv);
	}
	return NULL;
}

static struct stream *stream_new(void)
{
	struct stream *s = calloc(1, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&s->thread, &a, worker, s);
	pthread_attr_destroy(&a);
	pthread_mutex_lock(&all_mu);
	s->next_all = all_streams;
	all_streams = s;
	pthread_mutex_unlock(&all_mu);
	return s;
}

/* 0, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are all the default stream here. */
static struct stream *stream_of(void *h)
{
	if ((uintptr_t)h <= 2) {
		pthread_mutex_lock(&all_mu);
		if (!default_stream) {
			pthread_mutex_unlock(&all_mu);
			struct stream *s = stream_new();
			pthread_mutex_lock(&all_mu);
			default_stream = s;
		}
		pthread_mutex_unlock(&all_mu);
		return default_stream;
	}
	return h;
}

static int sync_ops = -1;

static void enqueue(void *h, struct op o)
{
	if (sync_ops < 0)
		sync_ops = getenv("FAKE_CUDA_SYNC") && !strcmp(getenv("FAKE_CUDA_SYNC"), "1");
	if (sync_ops) {
		run_op(&o);
		return;
	}
	struct stream *s = stream_of(h);
	struct op *p = malloc(sizeof(*p));
	*p = o;
	p->next = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void stream_wait(struct stream *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->head)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static void wait_all(void)
{
	stream_of(NULL);
	pthread_mutex_lock(&all_mu);
	struct stream *list = all_streams;
	pthread_mutex_unlock(&all_mu);
	for (struct stream *s = list; s; s = s->next_all)
		stream_wait(s);
}

/* ---- device memory: mmap'd, live blocks in a table (a double free is an error) ---------- */

#define MAX_BLOCKS 4096
static struct { void *p; size_t n; } blocks[MAX_BLOCKS];
static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;

static void *dev_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pthread_mutex_lock(&mem_mu);
	for (int i = 0; i < MAX_BLOCKS; i++)
		if (!blocks[i].p) {
			blocks[i].p = p;
			blocks[i].n = n;
			pthread_mutex_unlock(&mem_mu);
			return p;
		}
	pthread_mutex_unlock(&mem_mu);
	munmap(p, n);
	return NULL;
}

static int dev_free(void *q)
{
	pthread_mutex_lock(&mem_mu);
	for (int i = 0; q && i < MAX_BLOCKS; i++)
		if (blocks[i].p == q) {
			munmap(q, blocks[i].n);
			blocks[i].p = NULL;
			pthread_mutex_unlock(&mem_mu);
			return OK;
		}
	pthread_mutex_unlock(&mem_mu);
	return INVALID_VALUE;
}

/* ---- the API ---------------------------------------------------------------------------- */

#define NEED_INIT() do { if (!initialized) return NOT_INITIALIZED; } while (0)

EXPORT CUresult cuInit(unsigned flags)
{
	if (flags)
		return INVALID_VALUE;
	initialized = 1;
	return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return INVALID_VALUE;
	*v = 13000;
	return OK;
}

EXPORT CUresult cuDeviceGetCount(int *n) { NEED_INIT(); *n = 1; return OK; }
EXPORT CUresult cuDeviceGet(int *d, int i) { NEED_INIT(); if (i) return INVALID_VALUE; *d = 0; return OK; }

static int the_ctx;
EXPORT CUresult cuCtxGetCurrent(void **c) { *c = initialized ? &the_ctx : NULL; return OK; }
EXPORT CUresult cuGetExportTable(const void **t, const void *uuid) { (void)t; (void)uuid; return NOT_SUPPORTED; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	NEED_INIT();
	if (!p || !n)
		return INVALID_VALUE;
	if (n > (1ull << 40))
		return OUT_OF_MEMORY;
	void *q = dev_alloc(n);
	if (!q)
		return OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)q;
	return OK;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	NEED_INIT();
	wait_all();
	return dev_free((void *)(uintptr_t)p);
}

EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) { return cuMemAlloc_v2((CUdeviceptr *)p, n); }
EXPORT CUresult cuMemFreeHost(void *p) { return cuMemFree_v2((CUdeviceptr)(uintptr_t)p); }

static CUresult copy(void *d, const void *s, size_t n, void *stream, int sync)
{
	NEED_INIT();
	if ((!d || !s) && n)
		return INVALID_VALUE;
	enqueue(stream, (struct op){ .kind = OP_COPY, .dst = d, .src = s, .n = n });
	if (sync)
		stream_wait(stream_of(stream));
	return OK;
}

#define P(x) ((void *)(uintptr_t)(x))
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return copy(P(d), s, n, NULL, 1); }
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return copy(d, P(s), n, NULL, 1); }
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(P(d), P(s), n, NULL, 1); }
EXPORT CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(P(d), P(s), n, NULL, 1); }
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) { return copy(P(d), s, n, st, 0); }
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) { return copy(d, P(s), n, st, 0); }
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { return copy(P(d), P(s), n, st, 0); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { return copy(P(d), P(s), n, st, 0); }

static CUresult set(CUdeviceptr d, enum op_kind k, uint32_t v, size_t n, void *st, int sync)
{
	NEED_INIT();
	if (!d)
		return INVALID_VALUE;
	enqueue(st, (struct op){ .kind = k, .dst = P(d), .value = v, .n = n });
	if (sync)
		stream_wait(stream_of(st));
	return OK;
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return set(d, OP_SET8, v, n, NULL, 1); }
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return set(d, OP_SET16, v, n, NULL, 1); }
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { return set(d, OP_SET32, v, n, NULL, 1); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) { return set(d, OP_SET8, v, n, st, 0); }
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *st) { return set(d, OP_SET16, v, n, st, 0); }
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) { return set(d, OP_SET32, v, n, st, 0); }

/* Modules: the image is ignored; a function is its name. */
struct function { char name[256]; };
static int the_module;
EXPORT CUresult cuModuleLoadData(void **m, const void *image)
{
	NEED_INIT();
	if (!m || !image)
		return INVALID_VALUE;
	*m = &the_module;
	return OK;
}

EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
	NEED_INIT();
	if (!f || m != &the_module || !name)
		return INVALID_VALUE;
	if (!strcmp(name, "missing"))
		return NOT_FOUND;
	struct function *fn = calloc(1, sizeof(*fn));
	snprintf(fn->name, sizeof(fn->name), "%s", name);
	*f = fn;
	return OK;
}

EXPORT CUresult cuFuncGetName(const char **name, void *f)
{
	if (!name || !f)
		return INVALID_VALUE;
	*name = ((struct function *)f)->name;
	return OK;
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned smem, void *st, void **params,
			       void **extra)
{
	(void)smem;
	(void)extra;
	NEED_INIT();
	if (!f || !gx || !gy || !gz || !bx || !by || !bz)
		return INVALID_VALUE;
	unsigned us = params && params[0] ? *(unsigned *)params[0] : 0;
	enqueue(st, (struct op){ .kind = OP_KERNEL, .us = us, .name = ((struct function *)f)->name });
	return OK;
}

struct launch_config { unsigned gx, gy, gz, bx, by, bz, smem; void *stream; void *attrs; unsigned nattrs; };
EXPORT CUresult cuLaunchKernelEx(const struct launch_config *c, void *f, void **params, void **extra)
{
	if (!c)
		return INVALID_VALUE;
	return cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem, c->stream, params, extra);
}

EXPORT CUresult cuStreamCreate(void **s, unsigned flags)
{
	(void)flags;
	NEED_INIT();
	*s = stream_new();
	return OK;
}

EXPORT CUresult cuStreamDestroy_v2(void *s) { (void)s; return OK; }
EXPORT CUresult cuStreamSynchronize(void *s) { NEED_INIT(); stream_wait(stream_of(s)); return OK; }
EXPORT CUresult cuStreamIsCapturing(void *s, int *status) { (void)s; *status = 0; return OK; }
EXPORT CUresult cuCtxSynchronize(void) { NEED_INIT(); wait_all(); return OK; }
EXPORT CUresult cuCtxSynchronize_v2(void *ctx) { (void)ctx; return cuCtxSynchronize(); }

EXPORT CUresult cuEventCreate(void **e, unsigned flags)
{
	(void)flags;
	NEED_INIT();
	*e = calloc(1, sizeof(struct event));
	return OK;
}

EXPORT CUresult cuEventDestroy_v2(void *e) { free(e); return OK; }

EXPORT CUresult cuEventRecord(void *e, void *st)
{
	NEED_INIT();
	if (!e)
		return INVALID_HANDLE;
	__atomic_store_n(&((struct event *)e)->done, 0, __ATOMIC_RELEASE);
	enqueue(st, (struct op){ .kind = OP_EVENT, .ev = e });
	return OK;
}

EXPORT CUresult cuEventQuery(void *e)
{
	return __atomic_load_n(&((struct event *)e)->done, __ATOMIC_ACQUIRE) ? OK : NOT_READY;
}

EXPORT CUresult cuEventSynchronize(void *e)
{
	while (!__atomic_load_n(&((struct event *)e)->done, __ATOMIC_ACQUIRE))
		usleep(20);
	return OK;
}

EXPORT CUresult cuEventElapsedTime(float *ms, void *a, void *b)
{
	struct event *x = a, *y = b;
	if (!x || !y || !x->done || !y->done)
		return NOT_READY;
	*ms = (float)((double)((int64_t)(y->ts - x->ts)) / 1e6);
	return OK;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { return cuEventElapsedTime(ms, a, b); }

/* Per-thread-stream entry points: the same functions here. */
#define ALIAS(name, target) EXPORT __typeof__(target) name __attribute__((alias(#target)));
ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2)
ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2)
ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2)
ALIAS(cuMemcpy_ptds, cuMemcpy)
ALIAS(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2)
ALIAS(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2)
ALIAS(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2)
ALIAS(cuMemcpyAsync_ptsz, cuMemcpyAsync)
ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2)
ALIAS(cuMemsetD16_v2_ptds, cuMemsetD16_v2)
ALIAS(cuMemsetD32_v2_ptds, cuMemsetD32_v2)
ALIAS(cuMemsetD8Async_ptsz, cuMemsetD8Async)
ALIAS(cuMemsetD16Async_ptsz, cuMemsetD16Async)
ALIAS(cuMemsetD32Async_ptsz, cuMemsetD32Async)
ALIAS(cuLaunchKernel_ptsz, cuLaunchKernel)
ALIAS(cuLaunchKernelEx_ptsz, cuLaunchKernelEx)
ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize)
ALIAS(cuEventRecord_ptsz, cuEventRecord)

/* ---- cuGetProcAddress ------------------------------------------------------------------- */

/* (base name, version it appeared in, 1 if the per-thread form) -> function */
static const struct { const char *name; int version, pt; void *fn; } procs[] = {
#define E(n, v, pt, f) { n, v, pt, (void *)f },
	E("cuInit", 2000, 0, cuInit) E("cuDriverGetVersion", 2020, 0, cuDriverGetVersion)
	E("cuDeviceGetCount", 2000, 0, cuDeviceGetCount) E("cuDeviceGet", 2000, 0, cuDeviceGet)
	E("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent) E("cuGetExportTable", 3000, 0, cuGetExportTable)
	E("cuMemAlloc", 3020, 0, cuMemAlloc_v2) E("cuMemFree", 3020, 0, cuMemFree_v2)
	E("cuMemAllocHost", 3020, 0, cuMemAllocHost_v2) E("cuMemFreeHost", 2000, 0, cuMemFreeHost)
	E("cuMemcpyHtoD", 3020, 0, cuMemcpyHtoD_v2) E("cuMemcpyHtoD", 7000, 1, cuMemcpyHtoD_v2_ptds)
	E("cuMemcpyDtoH", 3020, 0, cuMemcpyDtoH_v2) E("cuMemcpyDtoH", 7000, 1, cuMemcpyDtoH_v2_ptds)
	E("cuMemcpyDtoD", 3020, 0, cuMemcpyDtoD_v2) E("cuMemcpyDtoD", 7000, 1, cuMemcpyDtoD_v2_ptds)
	E("cuMemcpy", 4000, 0, cuMemcpy) E("cuMemcpy", 7000, 1, cuMemcpy_ptds)
	E("cuMemcpyHtoDAsync", 3020, 0, cuMemcpyHtoDAsync_v2) E("cuMemcpyHtoDAsync", 7000, 1, cuMemcpyHtoDAsync_v2_ptsz)
	E("cuMemcpyDtoHAsync", 3020, 0, cuMemcpyDtoHAsync_v2) E("cuMemcpyDtoHAsync", 7000, 1, cuMemcpyDtoHAsync_v2_ptsz)
	E("cuMemcpyDtoDAsync", 3020, 0, cuMemcpyDtoDAsync_v2) E("cuMemcpyDtoDAsync", 7000, 1, cuMemcpyDtoDAsync_v2_ptsz)
	E("cuMemcpyAsync", 4000, 0, cuMemcpyAsync) E("cuMemcpyAsync", 7000, 1, cuMemcpyAsync_ptsz)
	E("cuMemsetD8", 3020, 0, cuMemsetD8_v2) E("cuMemsetD8", 7000, 1, cuMemsetD8_v2_ptds)
	E("cuMemsetD16", 3020, 0, cuMemsetD16_v2) E("cuMemsetD16", 7000, 1, cuMemsetD16_v2_ptds)
	E("cuMemsetD32", 3020, 0, cuMemsetD32_v2) E("cuMemsetD32", 7000, 1, cuMemsetD32_v2_ptds)
	E("cuMemsetD8Async", 3020, 0, cuMemsetD8Async) E("cuMemsetD8Async", 7000, 1, cuMemsetD8Async_ptsz)
	E("cuMemsetD16Async", 3020, 0, cuMemsetD16Async) E("cuMemsetD16Async", 7000, 1, cuMemsetD16Async_ptsz)
	E("cuMemsetD32Async", 3020, 0, cuMemsetD32Async) E("cuMemsetD32Async", 7000, 1, cuMemsetD32Async_ptsz)
	E("cuModuleLoadData", 2000, 0, cuModuleLoadData) E("cuModuleGetFunction", 2000, 0, cuModuleGetFunction)
	E("cuFuncGetName", 12030, 0, cuFuncGetName)
	E("cuLaunchKernel", 4000, 0, cuLaunchKernel) E("cuLaunchKernel", 7000, 1, cuLaunchKernel_ptsz)
	E("cuLaunchKernelEx", 11060, 0, cuLaunchKernelEx) E("cuLaunchKernelEx", 11060, 1, cuLaunchKernelEx_ptsz)
	E("cuStreamCreate", 2000, 0, cuStreamCreate) E("cuStreamDestroy", 4000, 0, cuStreamDestroy_v2)
	E("cuStreamSynchronize", 2000, 0, cuStreamSynchronize) E("cuStreamSynchronize", 7000, 1, cuStreamSynchronize_ptsz)
	E("cuStreamIsCapturing", 10000, 0, cuStreamIsCapturing)
	E("cuCtxSynchronize", 2000, 0, cuCtxSynchronize) E("cuCtxSynchronize", 13000, 0, cuCtxSynchronize_v2)
	E("cuEventCreate", 2000, 0, cuEventCreate) E("cuEventDestroy", 4000, 0, cuEventDestroy_v2)
	E("cuEventRecord", 2000, 0, cuEventRecord) E("cuEventRecord", 7000, 1, cuEventRecord_ptsz)
	E("cuEventQuery", 2000, 0, cuEventQuery) E("cuEventSynchronize", 2000, 0, cuEventSynchronize)
	E("cuEventElapsedTime", 2000, 0, cuEventElapsedTime) E("cuEventElapsedTime", 12080, 0, cuEventElapsedTime_v2)
#undef E
};
EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, uint64_t flags, int *status);

static int has_pt_form(const char *name)
{
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		if (procs[i].pt && !strcmp(procs[i].name, name))
			return 1;
	return 0;
}

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, uint64_t flags, int *status)
{
	if (!name || !pfn)
		return INVALID_VALUE;
	if (!strcmp(name, "cuGetProcAddress")) {
		*pfn = (void *)cuGetProcAddress_v2;
		if (status)
			*status = 0;
		return OK;
	}
	int want_pt = (flags & 2) && has_pt_form(name);
	int best = -1, found = 0;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, name))
			continue;
		found = 1;
		if (procs[i].version > version || procs[i].pt != want_pt)
			continue;
		if (best < 0 || procs[i].version > procs[best].version)
			best = (int)i;
	}
	if (best < 0 && want_pt)  /* per-thread asked at a version older than the form */
		for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
			if (!strcmp(procs[i].name, name) && !procs[i].pt && procs[i].version <= version &&
			    (best < 0 || procs[i].version > procs[best].version))
				best = (int)i;
	if (best < 0) {
		*pfn = NULL;
		if (status)
			*status = found ? 2 : 1;
		return NOT_FOUND;
	}
	*pfn = procs[best].fn;
	if (status)
		*status = 0;
	return OK;
}

EXPORT CUresult cuGetProcAddress(const char *name, void **pfn, int version, uint64_t flags)
{
	return cuGetProcAddress_v2(name, pfn, version, flags, NULL);
}

/* ---- test-only ground truth ------------------------------------------------------------- */

EXPORT unsigned fake_cuda_kernel_log(unsigned i, uint64_t *start, uint64_t *end, const char **name)
{
	pthread_mutex_lock(&log_mu);
	unsigned n = nlog;
	if (i < n) {
		*start = klog[i].start;
		*end = klog[i].end;
		*name = klog[i].name;
	}
	pthread_mutex_unlock(&log_mu);
	return n;
}

__attribute__((destructor)) static void write_log(void)
{
	const char *path = getenv("FAKE_CUDA_LOG");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	pthread_mutex_lock(&log_mu);
	for (unsigned i = 0; i < nlog; i++)
		fprintf(f, "%s %llu %llu\n", klog[i].name, (unsigned long long)klog[i].start,
			(unsigned long long)klog[i].end);
	pthread_mutex_unlock(&log_mu);
	fclose(f);
}
