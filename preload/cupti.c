/* GPU timing through CUPTI's activity API. libcupti is dlopen'ed (never linked) the first time
 * the program uses CUDA: the copy the program loaded, else from where CUDA.md says it lives;
 * its functions go into a table. Its clock is set to ours; records arrive in buffers on a
 * CUPTI thread and become CUDA_GPU and CUDA_XCORR records. Any failure (no driver: 999,
 * another subscriber under Nsight, missing library) leaves cupti_active 0 and the caller falls
 * back to event pairs; so does a program that starts a CUPTI client of its own (the hooks at
 * the end). */
#include "cuda.h"
#include "cupti_cbids.h"

#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
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
	X(CUptiResult, cuptiGetResultString, (CUptiResult, const char **))                  \
	X(CUptiResult, cuptiActivityEnableDriverApi, (uint32_t, uint8_t))                   \
	X(CUptiResult, cuptiActivityEnableRuntimeApi, (uint32_t, uint8_t))

static struct {
#define PROF_X(ret, name, args) ret(*name) args;
	CUPTI_FNS(PROF_X)
#undef PROF_X
} cupti;

int cupti_active;
/* The CUPTI entry point by which the program took CUPTI over, once it has (see below). */
static _Atomic(const char *) cupti_taken_by;
static void *cupti_handle;

#define EXT_KIND_CUSTOM0 3
#define FLUSH_FORCED 1
#define BUF_SIZE (1u << 20)
/* CUPTI writes an EXTERNAL_CORRELATION record only next to an API record (cupti_activity.h,
 * cuptiActivityPushExternalCorrelationId): without API records no kernel could be joined to the
 * call that launched it. Where CUPTI can (cuptiActivityEnableDriverApi/RuntimeApi, CUDA 12+),
 * only the calls that start GPU work get API records (cupti_cbids.h): a framework makes
 * thousands of other calls, and each record costs a timestamp and buffer space. Elsewhere, or
 * with PROF_CUPTI_API=all, the DRIVER and RUNTIME kinds record every call. */
static const int kinds[] = { 10 /* CONCURRENT_KERNEL */, 1 /* MEMCPY */, 22 /* MEMCPY2 */,
			     2 /* MEMSET */, 38 /* SYNCHRONIZATION */,
			     39 /* EXTERNAL_CORRELATION */, 4 /* DRIVER */, 5 /* RUNTIME */ };
#define KINDS_ALWAYS 6  /* the kinds before DRIVER and RUNTIME */
static size_t kinds_on;  /* how many of kinds[] are enabled: all, or KINDS_ALWAYS */
static int api_by_cbid;  /* API records of the work calls only */

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void api_by_cbid_set(uint8_t on)
{
	for (size_t i = 0; i < N_OF(cupti_runtime_work_cbids); i++)
		cupti.cuptiActivityEnableRuntimeApi(cupti_runtime_work_cbids[i], on);
	for (size_t i = 0; i < N_OF(cupti_driver_work_cbids); i++)
		cupti.cuptiActivityEnableDriverApi(cupti_driver_work_cbids[i], on);
}

/* Records of the work calls only, where CUPTI has the calls and the user did not ask for all;
 * 1 if so. The launch calls must take (a CUPTI that refuses them gets the whole kinds). */
static int api_by_cbid_start(void)
{
	const char *mode = getenv("PROF_CUPTI_API");
	if ((mode && !strcmp(mode, "all")) || !cupti.cuptiActivityEnableDriverApi ||
	    !cupti.cuptiActivityEnableRuntimeApi)
		return 0;
	if (cupti.cuptiActivityEnableRuntimeApi(211 /* cudaLaunchKernel */, 1) != 0 ||
	    cupti.cuptiActivityEnableDriverApi(307 /* cuLaunchKernel */, 1) != 0) {
		api_by_cbid_set(0);
		return 0;
	}
	api_by_cbid_set(1);
	return 1;
}

static void kinds_stop(void)
{
	for (size_t i = 0; cupti.cuptiActivityDisable && i < kinds_on; i++)
		cupti.cuptiActivityDisable(kinds[i]);
	if (api_by_cbid)
		api_by_cbid_set(0);
	kinds_on = 0;
	api_by_cbid = 0;
}

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

static void write_xcorr(struct prof_thread *th, uint32_t cupti_corr, uint64_t corr)
{
	struct prof_rec_cuda_xcorr *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->cupti_corr = cupti_corr;
		r->corr = corr;
		prof_commit(r, PROF_REC_CUDA_XCORR, 0, sizeof(*r), prof_now());
	}
}

/* Links between CUPTI's correlation ids and ours (cupti_convert.c); buffers may complete on
 * several threads at once. */
static void *_Atomic links_map;  /* a struct cupti_links, made on first use */
static atomic_flag links_lock = ATOMIC_FLAG_INIT;

static struct cupti_links *links_of(void)
{
	return prof_lazy(&links_map, sizeof(struct cupti_links));
}

static void links_take(void)
{
	while (atomic_flag_test_and_set_explicit(&links_lock, memory_order_acquire))
		;
}

static void links_give(void)
{
	atomic_flag_clear_explicit(&links_lock, memory_order_release);
}

static void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	struct prof_thread *th = prof_thread_get();  /* CUPTI's thread registers here */
	prof_hook_enter(th);
	void *rec = NULL;
	while (valid && cupti.cuptiActivityGetNextRecord(buf, valid, &rec) == 0) {
		uint32_t corr;
		uint64_t ext;
		if (prof_cfg.debug >= 2) {  /* how CUPTI links the records of a CUDA we have not met */
			char what[160];
			cupti_describe(rec, what, sizeof(what));
			prof_log("cupti %s", what);
		}
		struct cupti_links *links = links_of();
		if (!links)
			continue;  /* no memory for the links: no record can be placed */
		links_take();
		int api = cupti_link_api(links, rec, &corr, &ext);
		links_give();
		if (api) {
			if (ext)
				write_xcorr(th, corr, ext);
			continue;
		}
		struct cupti_out o;
		if (cupti_convert(rec, &o) < 0)
			continue;
		if (o.type == PROF_REC_CUDA_XCORR) {
			write_xcorr(th, (uint32_t)o.corr, o.ext_id);
			links_take();
			cupti_link_learn(links, (uint32_t)o.corr, o.ext_id);
			links_give();
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
	/* One the program already loaded comes first (torch's wheel brings its own): a second
	 * copy of CUPTI in one process would fight the first for the driver's callbacks. */
	for (size_t i = 0; i < 3; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			snprintf(path, len, "%s (loaded by the program)", names[i]);
			return h;
		}
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
	if (atomic_load(&cupti_taken_by)) {
		snprintf(why, len, "CUPTI is in use by the program (it called %s)",
			 atomic_load(&cupti_taken_by));
		return -1;
	}
	char path[600];
	void *h = open_cupti(path, sizeof(path));
	if (!h) {
		snprintf(why, len, "libcupti not found");
		return -1;
	}
#define PROF_X(ret, name, args) cupti.name = (ret(*) args)cuda_real_dlsym(h, #name);
	CUPTI_FNS(PROF_X)
#undef PROF_X
	cupti_handle = h;
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
	api_by_cbid = api_by_cbid_start();
	size_t want = api_by_cbid ? KINDS_ALWAYS : N_OF(kinds);
	for (kinds_on = 0; kinds_on < want; kinds_on++) {
		step = "cuptiActivityEnable";
		if ((r = cupti.cuptiActivityEnable(kinds[kinds_on])) != 0 && kinds_on < 1)
			goto fail;  /* kernels are a must; older CUPTI may lack a later kind */
	}
	cupti_active = 1;
	snprintf(why, len, "%.400s (CUPTI API version %u; API records: %s)", path, *version,
		 api_by_cbid ? "work calls" : "all calls");
	return 0;
fail:
	kinds_stop();
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
	if (cupti_active && cupti.cuptiActivityPushExternalCorrelationId)
		cupti.cuptiActivityPushExternalCorrelationId(EXT_KIND_CUSTOM0, corr);
}

void cupti_note_driver_call(uint64_t start, uint64_t end, uint64_t corr)
{
	struct cupti_links *links = links_of();
	if (!links)
		return;
	links_take();
	cupti_link_call(links, (uint32_t)pthread_self(), start, end, corr);
	links_give();
}

void cupti_pop_corr(void)
{
	uint64_t last;
	if (cupti_active && cupti.cuptiActivityPopExternalCorrelationId)
		cupti.cuptiActivityPopExternalCorrelationId(EXT_KIND_CUSTOM0, &last);
}

/* ---- the program's own CUPTI client ------------------------------------------------------
 * CUPTI has one set of activity buffer callbacks and one clock per process, so a program that
 * profiles itself (torch.profiler's Kineto, a tool of its own) and libprof cannot both use the
 * activity API. The program wins: its first call that would take the activity API over reaches
 * these hooks first; libprof flushes what CUPTI holds for it, disables its kinds, says so once
 * and times later GPU work with event pairs (cuda_cupti_lost). Calls from CUPTI itself, and
 * libprof's own (through the table above, never through these symbols), pass straight on. */

static void cupti_yield(const char *fn, const void *caller)
{
	Dl_info info;
	if (prof_in_hook(&prof_self) || (dladdr(caller, &info) && info.dli_fname &&
				  strstr(info.dli_fname, "libcupti")))
		return;
	const char *none = NULL;
	if (!atomic_compare_exchange_strong(&cupti_taken_by, &none, fn))
		return;
	if (!cupti_active)
		return;  /* not started yet: cupti_start will see cupti_taken_by */
	prof_hook_enter(&prof_self);
	cupti.cuptiActivityFlushAll(FLUSH_FORCED);
	kinds_stop();
	cupti_active = 0;
	prof_self.in_hook--;
	char why[160];
	snprintf(why, sizeof(why), "CUPTI taken over by the program (it called %s)", fn);
	cuda_cupti_lost(why);
}

/* The real function: in the CUPTI libprof opened, else the one the program loaded (possibly
 * in a local scope that RTLD_NEXT does not search), else the next definition. */
static void *cupti_real(const char *name)
{
	void *h = cupti_handle;
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };
	for (size_t i = 0; !h && i < 3; i++)
		h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
	void *p = h ? cuda_real_dlsym(h, name) : NULL;
	return p ? p : cuda_real_dlsym(RTLD_NEXT, name);
}

#define CUPTI_NOT_INITIALIZED 15
#define CUPTI_HOOK(name, params, args)                                                      \
	PROF_EXPORT CUptiResult name params                                                 \
	{                                                                                   \
		static CUptiResult(*real) params;                                           \
		cupti_yield(#name, __builtin_return_address(0));                            \
		if (!real)                                                                  \
			real = (CUptiResult(*) params)cupti_real(#name);                    \
		return real ? real args : CUPTI_NOT_INITIALIZED;                            \
	}

CUPTI_HOOK(cuptiActivityRegisterCallbacks, (void (*req)(uint8_t **, size_t *, size_t *),
	   void (*done)(CUcontext, uint32_t, uint8_t *, size_t, size_t)), (req, done))
CUPTI_HOOK(cuptiActivityRegisterTimestampCallback, (uint64_t (*clock)(void)), (clock))
CUPTI_HOOK(cuptiActivityEnable, (int kind), (kind))
CUPTI_HOOK(cuptiActivityEnableContext, (CUcontext ctx, int kind), (ctx, kind))
CUPTI_HOOK(cuptiFinalize, (void), ())

/* For a program that looks CUPTI up with dlsym rather than linking it. */
void *cupti_hook_by_symbol(const char *name)
{
	static const struct { const char *name; void *hook; } hooks[] = {
		{ "cuptiActivityRegisterCallbacks", (void *)cuptiActivityRegisterCallbacks },
		{ "cuptiActivityRegisterTimestampCallback", (void *)cuptiActivityRegisterTimestampCallback },
		{ "cuptiActivityEnable", (void *)cuptiActivityEnable },
		{ "cuptiActivityEnableContext", (void *)cuptiActivityEnableContext },
		{ "cuptiFinalize", (void *)cuptiFinalize },
	};
	if (strncmp(name, "cupti", 5))
		return NULL;
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
		if (!strcmp(name, hooks[i].name))
			return hooks[i].hook;
	return NULL;
}
