// gpu-check's CUDA program: known GPU work, measured by the program itself, for libprof's
// numbers to be checked against. Usage: gc_cuda TRUTH.json
//
// - spin_long (2 ms) on stream A and spin_short (0.5 ms) on stream B, concurrently; spin_driver
//   (1 ms) launched through the driver's cuLaunchKernel, reached by cudaGetDriverEntryPoint
//   (that is, cuGetProcAddress). Each kernel's launches are timed by the program's own CUDA
//   events, and by the kernels themselves (their %globaltimer spin).
// - copies in each direction with exact byte counts, two memsets;
// - one device block that is never freed, allocated in leaky_alloc();
// - NVTX ranges gc_outer (once) around gc_inner (three times), and a mark.
// The truth file says what was launched, copied, leaked and timed, in libprof's JSON terms.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CK(x)                                                                                   \
	do {                                                                                    \
		cudaError_t e_ = (x);                                                           \
		if (e_ != cudaSuccess) {                                                        \
			fprintf(stderr, "gc_cuda: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,     \
				cudaGetErrorString(e_));                                        \
			exit(1);                                                                \
		}                                                                               \
	} while (0)

__device__ unsigned long long global_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// Spins for ns of wall time and adds the time it ran, by its own clock, to *sink.
#define SPIN_BODY                                                                               \
	unsigned long long t0 = global_ns();                                                    \
	while (global_ns() - t0 < ns) {                                                         \
	}                                                                                       \
	if (threadIdx.x == 0)                                                                   \
		atomicAdd(sink, global_ns() - t0);

__global__ void spin_long(unsigned long long ns, unsigned long long *sink) { SPIN_BODY }
__global__ void spin_short(unsigned long long ns, unsigned long long *sink) { SPIN_BODY }
__global__ void spin_driver(unsigned long long ns, unsigned long long *sink) { SPIN_BODY }
// Holds a stream back while the host queues the timed work behind it, so that each event pair
// brackets its kernel alone and not the host's time to submit it.
__global__ void gate(unsigned long long ns, unsigned long long *sink) { SPIN_BODY }

enum { N_LONG = 20, N_SHORT = 40, N_DRIVER = 10 };
static const unsigned long long LONG_NS = 2000000, SHORT_NS = 500000, DRIVER_NS = 1000000,
				 GATE_NS = 50000000;
static const size_t LEAK_BYTES = 3 * 1024 * 1024 + 512;

// One event pair around all launches of a kernel on its stream: queued behind a gate, the
// kernels run back to back, so the pair brackets their execution (plus gaps of a microsecond
// or so) rather than the host's time to submit them, as a pair per launch would.
struct timed {
	const char *name;
	int n;
	cudaEvent_t start, stop;
};

static void timed_init(struct timed *t, const char *name)
{
	t->name = name;
	t->n = 0;
	CK(cudaEventCreate(&t->start));
	CK(cudaEventCreate(&t->stop));
}

static double timed_total_ns(struct timed *t)
{
	float ms = 0;
	CK(cudaEventElapsedTime(&ms, t->start, t->stop));
	return ms * 1e6;
}

__attribute__((noinline)) void *leaky_alloc(size_t n)
{
	void *p = nullptr;
	CK(cudaMalloc(&p, n));
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gc_cuda TRUTH.json\n");
		return 2;
	}
	nvtxRangePushA("gc_outer");
	cudaStream_t a, b;
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	unsigned long long *sink;
	CK(cudaMalloc(&sink, 64 * sizeof(*sink)));
	CK(cudaMemset(sink, 0, 64 * sizeof(*sink)));

	// The driver's launch, through the runtime's view of cuGetProcAddress.
	typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				       unsigned, unsigned, CUstream, void **, void **);
	launch_fn launch = nullptr;
	cudaDriverEntryPointQueryResult q;
	CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void **)&launch, 12000,
					    cudaEnableDefault, &q));
	if (q != cudaDriverEntryPointSuccess || !launch) {
		fprintf(stderr, "gc_cuda: cuLaunchKernel entry point not found\n");
		return 1;
	}
	cudaFunction_t drv_fn;
	CK(cudaGetFuncBySymbol(&drv_fn, (const void *)spin_driver));

	static struct timed tl, ts, td;
	timed_init(&tl, "spin_long");
	timed_init(&ts, "spin_short");
	timed_init(&td, "spin_driver");
	gate<<<1, 32, 0, a>>>(GATE_NS, sink + 3);
	gate<<<1, 32, 0, b>>>(GATE_NS, sink + 4);
	CK(cudaGetLastError());
	// Interleaved so that the two streams overlap on the GPU.
	CK(cudaEventRecord(tl.start, a));
	CK(cudaEventRecord(ts.start, b));
	for (int i = 0; i < N_SHORT; i++) {
		if (i < N_LONG) {
			spin_long<<<1, 32, 0, a>>>(LONG_NS, sink);
			CK(cudaGetLastError());
			tl.n++;
		}
		spin_short<<<1, 32, 0, b>>>(SHORT_NS, sink + 1);
		CK(cudaGetLastError());
		ts.n++;
	}
	CK(cudaEventRecord(tl.stop, a));
	CK(cudaEventRecord(ts.stop, b));
	CK(cudaDeviceSynchronize());
	gate<<<1, 32, 0, a>>>(GATE_NS / 2, sink + 3);
	CK(cudaGetLastError());
	CK(cudaEventRecord(td.start, a));
	for (int i = 0; i < N_DRIVER; i++) {
		unsigned long long ns = DRIVER_NS;
		unsigned long long *s = sink + 2;
		void *args[] = { &ns, &s };
		CUresult r = launch((CUfunction)drv_fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)a, args, nullptr);
		if (r != CUDA_SUCCESS) {
			fprintf(stderr, "gc_cuda: cuLaunchKernel: %d\n", (int)r);
			return 1;
		}
		td.n++;
	}
	CK(cudaEventRecord(td.stop, a));
	CK(cudaDeviceSynchronize());

	// Copies with exact sizes: pageable and pinned, synchronous and asynchronous.
	const size_t H2D = 1000003, D2H = 524295, D2D = 262147, PIN = 65536;
	char *host = (char *)malloc(H2D), *pinned;
	memset(host, 7, H2D);
	CK(cudaMallocHost(&pinned, PIN));
	char *d1, *d2;
	CK(cudaMalloc(&d1, H2D));
	CK(cudaMalloc(&d2, H2D));
	for (int i = 0; i < 3; i++)
		CK(cudaMemcpy(d1, host, H2D, cudaMemcpyHostToDevice));
	for (int i = 0; i < 4; i++)
		CK(cudaMemcpyAsync(d1, pinned, PIN, cudaMemcpyHostToDevice, a));
	CK(cudaStreamSynchronize(a));
	for (int i = 0; i < 2; i++)
		CK(cudaMemcpy(host, d1, D2H, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(d2, d1, D2D, cudaMemcpyDeviceToDevice));
	CK(cudaMemset(d2, 0, 4096));
	CK(cudaMemset(d1, 1, 8192));
	CK(cudaDeviceSynchronize());

	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("gc_inner");
		CK(cudaMemset(d2, i, 512));
		nvtxRangePop();
	}
	nvtxMarkA("gc_mark");

	void *leak = leaky_alloc(LEAK_BYTES);
	(void)leak;
	unsigned long long spun[3];
	CK(cudaMemcpy(spun, sink, sizeof(spun), cudaMemcpyDeviceToHost));
	CK(cudaFree(d1));
	CK(cudaFree(d2));
	CK(cudaFree(sink));
	CK(cudaFreeHost(pinned));
	free(host);
	nvtxRangePop();

	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "{\"kernels\": {");
	struct timed *all[] = { &tl, &ts, &td };
	for (int i = 0; i < 3; i++)
		fprintf(f, "%s\"%s\": {\"launches\": %d, \"total_ns\": %.0f, \"kernel_clock_ns\": %llu}",
			i ? ", " : "", all[i]->name, all[i]->n, timed_total_ns(all[i]), spun[i]);
	fprintf(f, "},\n \"memcpy\": {\"HtoD\": {\"count\": %d, \"bytes\": %zu}, "
		   "\"DtoH\": {\"count\": %d, \"bytes\": %zu}, \"DtoD\": {\"count\": %d, \"bytes\": %zu}},\n",
		7, 3 * H2D + 4 * PIN, 3, 2 * D2H + sizeof(spun), 1, D2D);
	fprintf(f, " \"memset\": {\"count\": 6, \"bytes\": %zu},\n",
		4096 + 8192 + 3 * 512 + 64 * sizeof(*sink));
	fprintf(f, " \"leak\": {\"bytes\": %zu, \"blocks\": 1, \"function\": \"leaky_alloc\"},\n",
		LEAK_BYTES);
	fprintf(f, " \"nvtx\": {\"gc_outer\": 1, \"gc_inner\": 3}}\n");
	fclose(f);
	printf("gc_cuda: done\n");
	return 0;
}
