/* GPU timing through CUPTI's activity API. libcupti is dlopen'ed (never linked) the first time
 * the program uses CUDA, from where CUDA.md says it lives; its functions go into a table. Its
 * clock is set to ours; records arrive in buffers on a CUPTI thread and become CUDA_GPU and
 * CUDA_XCORR records. Any failure (no driver: 999, another subscriber under Nsight, missing
 * library) leaves cupti_active 0 and the caller falls back to event pairs. */
#include "cuda.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUptiResult;

#define CUPTI_FNS(X)                                                                        \
	X(CUptiResult, cuptiGetVersion, (uint32_t *))                                       \
	X(CUptiResult, cuptiActivityRegisterCallbacks, (void (*)(uint8_t **, size_t *, size_t *), \
		void (*)(CUcontext, uint32_t, uint8_t *, size_t, size_t)))                  \
	X(CUptiResult, cuptiActivityRegisterTimestampCallback, (uint64_t (*)(void)))        \
	X(CUptiResult, cuptiActivityEnable, (int))                                          \
	X(CUptiResult, cuptiActivityDisable, (int))                                         \
	X(CUptiResult, cuptiActivityFlushAll, (uint32_t))                                   \
	X(CUptiResult, cuptiActivityGetNextRecord, (uint8_t *, size_t, void **))            \
	X(CUptiResult, cuptiActivityPushExternalCorrelationId, (int, uint64_t))             \
	X(CUptiResult, cuptiActivityPopExternalCorrelationId, (int, uint64_t *))            \
	X(CUptiResult, cuptiGetResultString, (CUptiResult, const char **))

static struct {
#define PROF_X(ret, name, args) ret(*name) args;
	CUPTI_FNS(PROF_X)
#undef PROF_X
} cupti;

int cupti_active;

#define EXT_KIND_CUSTOM0 3
#define FLUSH_FORCED 1
#define BUF_SIZE (1u << 20)
static const int kinds[] = { 10 /* CONCURRENT_KERNEL */, 1 /* MEMCPY */, 22 /* MEMCPY2 */,
			     2 /* MEMSET */, 38 /* SYNCHRONIZATION */,
			     39 /* EXTERNAL_CORRELATION */ };

static uint64_t clock_cb(void)
{
	return prof_now();
}

static void buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	void *p = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*buf = p == MAP_FAILED ? NULL : p;
	*size = p == MAP_FAILED ? 0 : BUF_SIZE;
	*max_records = 0;
}

static void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	struct prof_thread *th = prof_thread_get();  /* CUPTI's thread registers here */
	th->in_hook++;
	void *rec = NULL;
	while (valid && cupti.cuptiActivityGetNextRecord(buf, valid, &rec) == 0) {
		struct cupti_out o;
		if (cupti_convert(rec, &o) < 0)
			continue;
		if (o.type == PROF_REC_CUDA_XCORR) {
			struct prof_rec_cuda_xcorr *r = prof_reserve(th, sizeof(*r));
			if (r) {
				r->cupti_corr = o.corr;
				r->corr = o.ext_id;
				prof_commit(r, PROF_REC_CUDA_XCORR, 0, sizeof(*r), prof_now());
			}
			continue;
		}
		uint32_t name = o.name ? cuda_name(o.name, PROF_CUDA_NAME_KERNEL) : 0;
		cuda_rec_gpu(PROF_CUDA_TIMING_CUPTI, o.start, o.end, o.corr, 1, o.activity,
			     o.copy_kind, o.bytes, name, o.device, o.stream, o.grid, o.block);
	}
	munmap(buf, BUF_SIZE);
	th->in_hook--;
}

/* Where libcupti may be: CUDA_HOME, the usual toolkit paths, ld.so's search, and the pip
 * wheel next to the cudart the program loaded. */
static void *open_cupti(char *path, size_t len)
{
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };
	char dirs[8][400];
	int nd = 0;
	const char *home = getenv("CUDA_HOME");
	if (!home || !*home)
		home = getenv("CUDA_PATH");
	if (home && *home) {
		snprintf(dirs[nd++], sizeof(dirs[0]), "%.360s/extras/CUPTI/lib64", home);
		snprintf(dirs[nd++], sizeof(dirs[0]), "%.360s/lib64", home);
	}
	snprintf(dirs[nd++], sizeof(dirs[0]), "/usr/local/cuda/extras/CUPTI/lib64");
	snprintf(dirs[nd++], sizeof(dirs[0]), "/usr/local/cuda/lib64");
	/* pip wheels: nvidia/cu13/lib holds cudart and cupti; cu12 splits them */
	static const char *const rts[] = { "libcudart.so.13", "libcudart.so.12" };
	for (size_t i = 0; i < 2 && nd < 7; i++) {
		void *h = dlopen(rts[i], RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		void *sym = cuda_real_dlsym(h, "cudaGetDeviceCount");
		Dl_info info;
		if (sym && dladdr(sym, &info) && info.dli_fname) {
			char tmp[360];
			snprintf(tmp, sizeof(tmp), "%.350s", info.dli_fname);
			char *dir = dirname(tmp);
			snprintf(dirs[nd++], sizeof(dirs[0]), "%.360s", dir);
			snprintf(dirs[nd++], sizeof(dirs[0]), "%.360s/../../cuda_cupti/lib", dir);
		}
		dlclose(h);
	}
	for (int d = 0; d < nd; d++)
		for (size_t i = 0; i < 3; i++) {
			snprintf(path, len, "%.400s/%.30s", dirs[d], names[i]);
			void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (h)
				return h;
		}
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, len, "%s", names[i]);
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	return NULL;
}

static const char *result_string(CUptiResult r)
{
	const char *s = NULL;
	if (cupti.cuptiGetResultString && cupti.cuptiGetResultString(r, &s) == 0 && s)
		return s;
	return "?";
}

int cupti_start(char *why, size_t len, int *result, uint32_t *version)
{
	*result = 0;
	*version = 0;
	char path[600];
	void *h = open_cupti(path, sizeof(path));
	if (!h) {
		snprintf(why, len, "libcupti not found");
		return -1;
	}
#define PROF_X(ret, name, args) cupti.name = (ret(*) args)cuda_real_dlsym(h, #name);
	CUPTI_FNS(PROF_X)
#undef PROF_X
	if (!cupti.cuptiActivityRegisterCallbacks || !cupti.cuptiActivityEnable ||
	    !cupti.cuptiActivityGetNextRecord || !cupti.cuptiActivityFlushAll) {
		snprintf(why, len, "%.440s: functions missing", path);
		return -1;
	}
	if (cupti.cuptiGetVersion)
		cupti.cuptiGetVersion(version);
	CUptiResult r = 0;
	const char *step = "cuptiActivityRegisterTimestampCallback";
	if (cupti.cuptiActivityRegisterTimestampCallback &&
	    (r = cupti.cuptiActivityRegisterTimestampCallback(clock_cb)) != 0)
		goto fail;
	step = "cuptiActivityRegisterCallbacks";
	if ((r = cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != 0)
		goto fail;
	size_t enabled = 0;
	for (; enabled < sizeof(kinds) / sizeof(kinds[0]); enabled++) {
		step = "cuptiActivityEnable";
		if ((r = cupti.cuptiActivityEnable(kinds[enabled])) != 0 && enabled < 1)
			goto fail;  /* kernels are a must; older CUPTI may lack a later kind */
	}
	cupti_active = 1;
	snprintf(why, len, "%.440s (CUPTI API version %u)", path, *version);
	return 0;
fail:
	if (cupti.cuptiActivityDisable)
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			cupti.cuptiActivityDisable(kinds[i]);
	*result = r;
	snprintf(why, len, "%.300s: %s returned %d (%.100s)", path, step, r, result_string(r));
	return -1;
}

void cupti_flush(void)
{
	if (cupti_active)
		cupti.cuptiActivityFlushAll(FLUSH_FORCED);
}

void cupti_push_corr(uint64_t corr)
{
	if (cupti.cuptiActivityPushExternalCorrelationId)
		cupti.cuptiActivityPushExternalCorrelationId(EXT_KIND_CUSTOM0, corr);
}

void cupti_pop_corr(void)
{
	uint64_t last;
	if (cupti.cuptiActivityPopExternalCorrelationId)
		cupti.cuptiActivityPopExternalCorrelationId(EXT_KIND_CUSTOM0, &last);
}
