// Runtime-API test program (nvcc): allocations, copies, a <<<>>> launch, sync, frees. Without
// a driver every call fails (35); it prints what it got, the same with and without libprof.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= 2.0f;
}

int main()
{
	int v = 0;
	printf("runtime version %d\n", cudaRuntimeGetVersion(&v) == cudaSuccess ? v : -1);
	float *d = nullptr, h[256] = { 0 };
	printf("cudaMalloc: %d\n", (int)cudaMalloc(&d, sizeof(h)));
	printf("cudaMemcpy: %d\n", (int)cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
	scale<<<1, 256>>>(d, 256);
	printf("launch: %d\n", (int)cudaGetLastError());
	printf("sync: %d\n", (int)cudaDeviceSynchronize());
	printf("cudaFree: %d\n", (int)cudaFree(d));
	return 0;
}
