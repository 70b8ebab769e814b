/* Per-call cost of driver calls against the fake driver (build/cuda/libcuda.so.1), to measure
 * what libprof adds per traced call. usage: cuda_bench init|memset|launch ITERATIONS
 *   init    cuInit(0): the fake does almost nothing, so this is the interception cost itself
 *   memset  cuMemsetD8Async(1 byte) on a stream
 *   launch  cuLaunchKernel of a zero-length kernel on a stream
 * The stream is synchronised every 256 calls (the fake's queue stays short). Prints ns/call. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;
CUresult cuInit(unsigned);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, void *);
CUresult cuModuleLoadData(void **, const void *);
CUresult cuModuleGetFunction(void **, void *, const char *);
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			unsigned, void *, void **, void **);
CUresult cuStreamCreate(void **, unsigned);
CUresult cuStreamSynchronize(void *);

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return fprintf(stderr, "usage: cuda_bench init|memset|launch N\n"), 2;
	long n = atol(argv[2]);
	cuInit(0);
	CUdeviceptr d;
	void *s, *m, *f;
	cuMemAlloc_v2(&d, 4096);
	cuStreamCreate(&s, 0);
	cuModuleLoadData(&m, "bench");
	cuModuleGetFunction(&f, m, "_Z4zerov");
	unsigned zero = 0;
	void *params[] = { &zero };
	uint64_t t0 = now();
	if (!strcmp(argv[1], "init")) {
		for (long i = 0; i < n; i++)
			cuInit(0);
	} else if (!strcmp(argv[1], "memset")) {
		for (long i = 0; i < n; i++) {
			cuMemsetD8Async(d, 1, 1, s);
			if ((i & 255) == 255)
				cuStreamSynchronize(s);
		}
	} else {
		for (long i = 0; i < n; i++) {
			cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
			if ((i & 255) == 255)
				cuStreamSynchronize(s);
		}
	}
	cuStreamSynchronize(s);
	printf("%.1f\n", (double)(now() - t0) / (double)n);
	return 0;
}
