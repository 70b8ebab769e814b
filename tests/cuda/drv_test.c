/* Driver-API test program for the fake driver: the same workload with the entry points got
 * one of four ways, as argv[1] says: "direct" (linked with -lcuda; built as drv_direct),
 * "dlsym" (dlopen + dlsym), "gpa" (cuGetProcAddress_v2 by name, version and flags), "ptsz"
 * (cuGetProcAddress_v2 with the per-thread-stream flag). argv[2]: how many kernel rounds.
 * Prints what it computed and the error codes it got, identical with and without libprof. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

#define API(X)                                                                                  \
	X(cuInit, CUresult, (unsigned), 2000)                                                   \
	X(cuMemAlloc_v2, CUresult, (CUdeviceptr *, size_t), 3020)                               \
	X(cuMemFree_v2, CUresult, (CUdeviceptr), 3020)                                          \
	X(cuMemcpyHtoD_v2, CUresult, (CUdeviceptr, const void *, size_t), 3020)                 \
	X(cuMemcpyDtoH_v2, CUresult, (void *, CUdeviceptr, size_t), 3020)                       \
	X(cuMemcpyDtoD_v2, CUresult, (CUdeviceptr, CUdeviceptr, size_t), 3020)                  \
	X(cuMemcpyHtoDAsync_v2, CUresult, (CUdeviceptr, const void *, size_t, void *), 3020)    \
	X(cuMemsetD8_v2, CUresult, (CUdeviceptr, unsigned char, size_t), 3020)                  \
	X(cuMemsetD32Async, CUresult, (CUdeviceptr, unsigned, size_t, void *), 3020)            \
	X(cuModuleLoadData, CUresult, (void **, const void *), 2000)                            \
	X(cuModuleGetFunction, CUresult, (void **, void *, const char *), 2000)                 \
	X(cuLaunchKernel, CUresult, (void *, unsigned, unsigned, unsigned, unsigned, unsigned,  \
				     unsigned, unsigned, void *, void **, void **), 4000)       \
	X(cuLaunchKernelEx, CUresult, (const void *, void *, void **, void **), 11060)          \
	X(cuStreamCreate, CUresult, (void **, unsigned), 2000)                                  \
	X(cuStreamSynchronize, CUresult, (void *), 2000)                                        \
	X(cuCtxSynchronize, CUresult, (void), 2000)                                             \
	X(cuEventCreate, CUresult, (void **, unsigned), 2000)                                   \
	X(cuEventRecord, CUresult, (void *, void *), 2000)                                      \
	X(cuEventSynchronize, CUresult, (void *), 2000)                                         \
	X(cuEventElapsedTime, CUresult, (float *, void *, void *), 2000)

#define BASE_cuMemAlloc_v2 "cuMemAlloc"
static struct {
#define F(name, ret, args, ver) ret(*name) args;
	API(F)
#undef F
	CUresult (*cuCtxSynchronize_13)(void *);
	CUresult (*cuEventElapsedTime_12080)(float *, void *, void *);
} cu;

/* "cuMemAlloc_v2" -> "cuMemAlloc": the base name cuGetProcAddress wants. */
static const char *base_name(const char *sym, char *buf)
{
	strcpy(buf, sym);
	char *v = strstr(buf, "_v2");
	if (v)
		*v = '\0';
	return buf;
}

#ifdef LINKED
#define F(name, ret, args, ver) extern ret name args;
API(F)
#undef F
extern CUresult cuCtxSynchronize_v2(void *);
extern CUresult cuEventElapsedTime_v2(float *, void *, void *);
#endif

static int load(const char *mode)
{
	if (!strcmp(mode, "direct")) {
#ifdef LINKED
#define F(name, ret, args, ver) cu.name = name;
		API(F)
#undef F
		cu.cuCtxSynchronize_13 = cuCtxSynchronize_v2;
		cu.cuEventElapsedTime_12080 = cuEventElapsedTime_v2;
		return 0;
#else
		fprintf(stderr, "direct: build with -DLINKED\n");
		return -1;
#endif
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "libcuda.so.1: %s\n", dlerror());
		return -1;
	}
	if (!strcmp(mode, "dlsym")) {
#define F(name, ret, args, ver) cu.name = (ret(*) args)dlsym(h, #name);
		API(F)
#undef F
		cu.cuCtxSynchronize_13 = (CUresult (*)(void *))dlsym(h, "cuCtxSynchronize_v2");
		cu.cuEventElapsedTime_12080 = (CUresult (*)(float *, void *, void *))dlsym(h, "cuEventElapsedTime_v2");
		return 0;
	}
	CUresult (*gpa)(const char *, void **, int, uint64_t, int *) =
		(CUresult (*)(const char *, void **, int, uint64_t, int *))dlsym(h, "cuGetProcAddress_v2");
	if (!gpa)
		return -1;
	uint64_t flags = !strcmp(mode, "ptsz") ? 2 : 0;
	char buf[64];
	int st;
	/* per-thread forms exist from 7000 on: ask at least that for them */
#define F(name, ret, args, ver) \
	if (gpa(base_name(#name, buf), (void **)&cu.name, flags && ver < 7000 ? 7000 : ver, flags, &st) || st) \
		return fprintf(stderr, "gpa %s failed\n", #name), -1;
	API(F)
#undef F
	if (gpa("cuCtxSynchronize", (void **)&cu.cuCtxSynchronize_13, 13000, flags, &st) ||
	    gpa("cuEventElapsedTime", (void **)&cu.cuEventElapsedTime_12080, 12080, flags, &st))
		return -1;
	/* a name that does not exist */
	void *p;
	int rc = gpa("cuNoSuchThing", &p, 13000, 0, &st);
	printf("gpa unknown: %d status %d\n", rc, st);
	return 0;
}

struct launch_config { unsigned gx, gy, gz, bx, by, bz, smem; void *stream; void *attrs; unsigned nattrs; };

/* DRV_TEST_PATHS=N: kernel k launched N times from one call site (launch_here), which two
 * callers reach in turn, one kernel each: every launch must keep its own caller's stack. */
static __attribute__((noinline)) int launch_here(void *k, void **params)
{
	return cu.cuLaunchKernel(k, 3, 3, 1, 1, 1, 1, 0, NULL, params, NULL);
}

static __attribute__((noinline)) int path_one(void *k, void **params)
{
	int rc = launch_here(k, params);
	return rc;
}

static __attribute__((noinline)) int path_two(void *k, void **params)
{
	int rc = launch_here(k, params);
	return rc;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "dlsym";
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	/* DRV_TEST_CUPTI=libcupti path: first act as a program with a CUPTI client of its own
	 * (torch.profiler's Kineto), which takes the activity API before any CUDA call. */
	const char *cupti = getenv("DRV_TEST_CUPTI");
	if (cupti && *cupti) {
		void *h = dlopen(cupti, RTLD_NOW);
		int (*reg)(void *, void *) = h ? (int (*)(void *, void *))dlsym(h,
			"cuptiActivityRegisterCallbacks") : NULL;
		if (!reg)
			return 3;
		reg(NULL, NULL);  /* its result does not matter here: the attempt does */
	}
	if (load(mode) < 0)
		return 2;
	printf("cuInit(1): %d\n", cu.cuInit(1));
	printf("cuInit(0): %d\n", cu.cuInit(0));
	CUdeviceptr a, b, leak, bad;
	size_t n = 1 << 20;
	printf("alloc: %d %d %d\n", cu.cuMemAlloc_v2(&a, n), cu.cuMemAlloc_v2(&b, n),
	       cu.cuMemAlloc_v2(&leak, 4096));
	printf("alloc 0: %d\n", cu.cuMemAlloc_v2(&bad, 0));
	unsigned char *host = malloc(n), *back = malloc(n);
	for (size_t i = 0; i < n; i++)
		host[i] = (unsigned char)(i * 7);
	void *stream;
	cu.cuStreamCreate(&stream, 0);
	cu.cuMemcpyHtoD_v2(a, host, n);
	cu.cuMemcpyDtoD_v2(b, a, n);
	cu.cuMemsetD8_v2(a, 0, 4096);
	cu.cuMemcpyHtoDAsync_v2(leak, host, 4096, stream);
	cu.cuMemsetD32Async(leak, 0x01010101, 1024, stream);
	cu.cuStreamSynchronize(stream);
	cu.cuMemcpyDtoH_v2(back, b, n);
	unsigned long sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += back[i];
	printf("checksum %lu\n", sum);

	void *mod, *k1, *k2, *missing;
	cu.cuModuleLoadData(&mod, "fake-image");
	cu.cuModuleGetFunction(&k1, mod, "_Z5scaleIfEvPT_i");
	cu.cuModuleGetFunction(&k2, mod, "sleep_kernel");
	printf("missing kernel: %d\n", cu.cuModuleGetFunction(&missing, mod, "missing"));
	void *ev0, *ev1;
	cu.cuEventCreate(&ev0, 0);
	cu.cuEventCreate(&ev1, 0);
	unsigned us2 = 2000, us5 = 5000;
	void *p2[] = { &us2 }, *p5[] = { &us5 };
	cu.cuEventRecord(ev0, NULL);
	for (int r = 0; r < rounds; r++) {
		cu.cuLaunchKernel(k1, 4, 1, 1, 128, 1, 1, 0, NULL, p2, NULL);
		cu.cuLaunchKernel(k2, 1, 1, 1, 32, 1, 1, 0, stream, p5, NULL);
	}
	unsigned us0 = 0;
	void *p0[] = { &us0 };
	const char *paths = getenv("DRV_TEST_PATHS");
	for (int i = 0, n = paths ? atoi(paths) : 0; i < n; i++)
		if (path_one(k1, p0) || path_two(k2, p0))
			return fprintf(stderr, "path launch failed\n"), 4;
	struct launch_config cfg = { 8, 2, 1, 64, 1, 1, 0, NULL, NULL, 0 };
	cu.cuLaunchKernelEx(&cfg, k1, p2, NULL);
	printf("bad launch: %d\n", cu.cuLaunchKernel(k1, 0, 1, 1, 1, 1, 1, 0, NULL, p2, NULL));
	cu.cuEventRecord(ev1, NULL);
	cu.cuEventSynchronize(ev1);
	float ms = 0, ms2 = 0;
	cu.cuEventElapsedTime(&ms, ev0, ev1);
	cu.cuEventElapsedTime_12080(&ms2, ev0, ev1);
	printf("events agree: %d\n", ms > 0 && ms == ms2);
	cu.cuCtxSynchronize();
	cu.cuCtxSynchronize_13(NULL);
	printf("free: %d\n", cu.cuMemFree_v2(a));
	printf("free: %d\n", cu.cuMemFree_v2(b));
	printf("double free: %d\n", cu.cuMemFree_v2(b));
	free(host);
	free(back);
	return 0;
}
