/* The CUDA family's core: name interning, the call protocol every CUDA hook follows
 * (correlation ids, stacks, the CUDA_API record), the records the hooks write, and the
 * once-per-process activation that picks how GPU work is timed. */
#include "cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

__thread struct cuda_tls cuda_self;
struct cuda_driver_fns cuda_drv;
_Atomic int cuda_timing;  /* enum prof_cuda_timing */

/* Correlation ids are unique in the process without a shared counter: the thread's serial
 * above bit 40, a count of its own below (no atomic add on a line all threads write). */
static __thread uint64_t corr_count;
static _Atomic uint32_t trace_gen = 1;  /* bumped in a fork child: names are written again */

/* A spinlock that never enters a hooked function (pthread_mutex_* are hooked). */
static void spin_lock(atomic_flag *f)
{
	while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
		__builtin_ia32_pause();
}

static void spin_unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

/* ---- names ----------------------------------------------------------------------------- */

#define NAME_SLOTS 65536u       /* power of two; only names in use are interned */
#define NAME_ARENA (8u << 20)   /* bytes of name text, reserved (touched as used) */

struct name_ent {
	_Atomic uint64_t hash;   /* 0 = empty; published after str */
	const char *str;
	uint32_t len;
	uint16_t kind;
	_Atomic uint32_t gen;    /* trace_gen when its CUDA_NAME was written */
};
static void *_Atomic names_map;  /* NAME_SLOTS entries, made on first use */

static struct name_ent *name_table(void)
{
	return prof_lazy(&names_map, NAME_SLOTS * sizeof(struct name_ent));
}
static _Atomic uint32_t name_count;
static atomic_flag name_lock = ATOMIC_FLAG_INIT;
static char *arena;
static size_t arena_used;

static uint64_t hash_str(const char *s, size_t len, unsigned kind)
{
	uint64_t h = 1469598103934665603ull ^ kind;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h | 1;
}

static void write_name(uint32_t id)
{
	struct name_ent *e = &name_table()[id - 1];  /* an id: the table is there */
	uint32_t gen = atomic_load_explicit(&trace_gen, memory_order_relaxed);
	if (atomic_load_explicit(&e->gen, memory_order_relaxed) == gen ||
	    atomic_exchange(&e->gen, gen) == gen)
		return;
	struct prof_thread *th = prof_thread_get();
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_cuda_name) + e->len + 1));
	prof_hook_enter(th);
	struct prof_rec_cuda_name *r = prof_reserve(th, size);
	if (r) {
		r->id = id;
		r->pad = 0;
		memset(r->name, 0, size - sizeof(*r));
		memcpy(r->name, e->str, e->len);
		prof_commit(r, PROF_REC_CUDA_NAME, e->kind, size, prof_now());
	}
	th->in_hook--;
}

/* Id of the interned string (slot index + 1), inserting it; 0 when full. */
static uint32_t intern(const char *s, unsigned kind)
{
	struct name_ent *names = name_table();
	if (!names)
		return 0;
	size_t len = strnlen(s, 4000);
	uint64_t h = hash_str(s, len, kind);
	uint32_t i = (uint32_t)h & (NAME_SLOTS - 1);
	for (uint32_t n = 0; n < NAME_SLOTS; n++, i = (i + 1) & (NAME_SLOTS - 1)) {
		uint64_t k = atomic_load_explicit(&names[i].hash, memory_order_acquire);
		if (k == 0) {
			spin_lock(&name_lock);
			if (atomic_load_explicit(&names[i].hash, memory_order_relaxed) != 0) {
				spin_unlock(&name_lock);
				n--;  /* taken meanwhile: look at this slot again */
				i = (i - 1) & (NAME_SLOTS - 1);
				continue;
			}
			if (!arena)
				arena = mmap(NULL, NAME_ARENA, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (arena == MAP_FAILED || arena_used + len + 1 > NAME_ARENA ||
			    atomic_load(&name_count) >= NAME_SLOTS * 3 / 4) {
				if (arena == MAP_FAILED)
					arena = NULL;
				spin_unlock(&name_lock);
				return 0;
			}
			char *copy = arena + arena_used;
			memcpy(copy, s, len);
			copy[len] = '\0';
			arena_used += len + 1;
			names[i].str = copy;
			names[i].len = (uint32_t)len;
			names[i].kind = (uint16_t)kind;
			atomic_store_explicit(&names[i].hash, h, memory_order_release);
			atomic_fetch_add(&name_count, 1);
			spin_unlock(&name_lock);
			return i + 1;
		}
		if (k == h && names[i].len == len && names[i].kind == kind &&
		    !memcmp(names[i].str, s, len))
			return i + 1;
	}
	return 0;
}

uint32_t cuda_name(const char *name, unsigned kind)
{
	if (!name)
		return 0;
	uint32_t id = intern(name, kind);
	if (id)
		write_name(id);
	return id;
}

uint32_t cuda_name_static(uint32_t *slot, const char *name, unsigned kind)
{
	uint32_t id = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (unlikely(!id)) {
		id = intern(name, kind);
		__atomic_store_n(slot, id, __ATOMIC_RELAXED);
	}
	if (id && unlikely(atomic_load_explicit(&name_table()[id - 1].gen, memory_order_relaxed) !=
			   atomic_load_explicit(&trace_gen, memory_order_relaxed)))
		write_name(id);
	return id;
}

/* ---- kernel handles -> names ----------------------------------------------------------- */

/* Every kernel a library registers gets a slot (libtorch_cuda registers tens of thousands);
 * its name is interned, and its CUDA_NAME written, only when it is first launched. */
#define HANDLE_SLOTS (1u << 18)

struct handle_ent {
	_Atomic uint64_t key;          /* handle; 0 empty */
	_Atomic(const char *) str;     /* registered device name, not yet interned */
	_Atomic uint32_t name;         /* interned name id; 0 until first use */
};
static void *_Atomic handles_map;  /* HANDLE_SLOTS entries, made on first use */

static uint32_t handle_hash(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h & (HANDLE_SLOTS - 1);
}

/* The handle's slot, claimed if absent and insert is set; NULL if absent (or the table full,
 * or not to be had). */
static struct handle_ent *handle_slot(uint64_t handle, int insert)
{
	struct handle_ent *handles = prof_lazy(&handles_map, HANDLE_SLOTS * sizeof(*handles));
	if (!handles)
		return NULL;
	uint32_t i = handle_hash(handle);
	for (uint32_t n = 0; n < HANDLE_SLOTS / 2; n++, i = (i + 1) & (HANDLE_SLOTS - 1)) {
		uint64_t k = atomic_load_explicit(&handles[i].key, memory_order_acquire);
		if (k == handle)
			return &handles[i];
		if (k == 0) {
			if (!insert)
				return NULL;
			uint64_t expected = 0;
			if (atomic_compare_exchange_strong(&handles[i].key, &expected, handle) ||
			    expected == handle)
				return &handles[i];
		}
	}
	return NULL;
}

void cuda_handle_set(uint64_t handle, uint32_t name)
{
	struct handle_ent *e;
	if (!handle || !name || !(e = handle_slot(handle, 1)))
		return;
	atomic_store_explicit(&e->name, name, memory_order_relaxed);
}

/* At registration: the string lives in the registering library's data, as long as its
 * handles can be launched (a library loaded again at the same place registers again). */
void cuda_handle_set_str(uint64_t handle, const char *str)
{
	struct handle_ent *e;
	if (!handle || !str || !(e = handle_slot(handle, 1)))
		return;
	atomic_store_explicit(&e->name, 0, memory_order_relaxed);
	atomic_store_explicit(&e->str, str, memory_order_release);
}

uint32_t cuda_handle_name(uint64_t handle)
{
	struct handle_ent *e;
	if (!handle || !(e = handle_slot(handle, 0)))
		return 0;
	uint32_t id = atomic_load_explicit(&e->name, memory_order_relaxed);
	if (!id) {
		const char *str = atomic_load_explicit(&e->str, memory_order_acquire);
		if (str && (id = intern(str, PROF_CUDA_NAME_KERNEL)))
			atomic_store_explicit(&e->name, id, memory_order_relaxed);
	}
	if (id)
		write_name(id);  /* first use, or a fork child's trace needs it again */
	return id;
}

/* ---- the call protocol ----------------------------------------------------------------- */

int cuda_call_begin(struct cuda_call *c, uint32_t *name_slot, const char *name, unsigned layer,
		    uintptr_t call_site, const uintptr_t *hook_frame)
{
	struct prof_thread *th = prof_recording(PROF_EV_CUDA);
	if (!th)
		return 0;
	int saved = errno;
	th = prof_thread_get();
	uint64_t own = prof_own_begin(th);  /* an inner call: own work of the outer one */
	prof_hook_enter(th);
	struct cuda_tls *ct = &cuda_self;
	c->th = th;
	c->layer = layer;
	c->name = cuda_name_static(name_slot, name, PROF_CUDA_NAME_API);
	c->outer = ct->depth == 0;
	if (c->outer) {
		c->corr = (uint64_t)th->serial << 40 | (++corr_count & ((1ull << 40) - 1));
		if (call_site && call_site == ct->last_site &&
		    prof_stack_still(th, call_site, hook_frame, &ct->last_proof)) {
			c->stack = ct->last_stack;
		} else {
			c->stack = prof_stack_proven(th, call_site, hook_frame, &ct->last_proof);
			ct->last_site = call_site;
			ct->last_stack = c->stack;
		}
		ct->corr = c->corr;
		ct->stack = c->stack;
		if (cupti_active)
			cupti_push_corr(c->corr);
	} else {
		c->corr = ct->corr;
		c->stack = ct->stack;
	}
	ct->depth++;
	th->in_hook--;
	prof_own_end(th, own);
	errno = saved;
	c->t1 = 0;
	c->api_written = 0;
	c->t0 = prof_timed_begin(th, &c->own0);
	return 1;
}

void cuda_call_end(struct cuda_call *c, int result)
{
	struct prof_thread *th = c->th;
	cuda_call_done(c);
	uint64_t t1 = c->t1;
	int saved = errno;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_cuda_api *r = c->api_written ? NULL : prof_reserve(th, sizeof(*r));
	if (r) {
		r->duration_ns = t1 - c->t0;
		r->corr = c->corr;
		r->name = c->name;
		r->result = result;
		r->stack = c->stack;
		r->pad = 0;
		prof_commit(r, PROF_REC_CUDA_API, c->layer, sizeof(*r), c->t0);
	}
	struct cuda_tls *ct = &cuda_self;
	if (ct->depth)
		ct->depth--;
	if (c->outer) {
		ct->corr = 0;
		if (cupti_active) {
			cupti_pop_corr();
			if (c->layer == PROF_CUDA_DRIVER)
				cupti_note_driver_call(c->t0, t1, c->corr);
		}
	}
	th->in_hook--;
	prof_own_end(th, own);
	if (c->outer && unlikely(!atomic_load_explicit(&cuda_timing, memory_order_relaxed)))
		cuda_activate();
	errno = saved;
}

/* ---- records --------------------------------------------------------------------------- */

/* The launch succeeded: its CUDA_LAUNCH is also the call's CUDA_API (PROF_CUDA_LAUNCH_API), one
 * record instead of two; cuda_call_end() then writes none. */
void cuda_rec_launch(struct cuda_call *c, uint64_t func, uint32_t name, CUstream stream,
		     const unsigned grid[3], const unsigned block[3], unsigned smem, int graph)
{
	cuda_call_done(c);  /* the records are not part of the call's time */
	struct prof_thread *th = c->th;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_cuda_launch_api x = {
		.l = { .corr = c->corr, .function = func, .stream = (uint64_t)(uintptr_t)stream,
		       .name = name, .stack = c->stack, .shared_mem = smem, .graph = (uint32_t)graph },
		.api_duration_ns = c->t1 - c->t0,
		.api_name = c->name,
		.api_result = CUDA_SUCCESS,
	};
	for (int i = 0; i < 3; i++) {
		x.l.grid[i] = grid ? grid[i] : 0;
		x.l.block[i] = block ? block[i] : 0;
	}
	prof_write_cuda_launch(th, &x, c->layer | PROF_CUDA_LAUNCH_API, c->t1);
	c->api_written = 1;
	th->in_hook--;
	prof_own_end(th, own);
}

void cuda_rec_copy(struct cuda_call *c, unsigned kind, uint64_t bytes, CUstream stream, int async)
{
	cuda_call_done(c);  /* the records are not part of the call's time */
	struct prof_thread *th = c->th;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_cuda_copy *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->corr = c->corr;
		r->bytes = bytes;
		r->stream = (uint64_t)(uintptr_t)stream;
		r->stack = c->stack;
		r->kind = (uint16_t)kind;
		r->async = (uint16_t)async;
		prof_commit(r, PROF_REC_CUDA_COPY, c->layer, sizeof(*r), c->t1);
	}
	th->in_hook--;
	prof_own_end(th, own);
}

void cuda_rec_malloc(struct cuda_call *c, uint64_t ptr, uint64_t size, unsigned kind)
{
	cuda_call_done(c);  /* the records are not part of the call's time */
	struct prof_thread *th = c->th;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_cuda_malloc *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->corr = c->corr;
		r->ptr = ptr;
		r->size = size;
		r->stack = c->stack;
		r->kind = kind;
		prof_commit(r, PROF_REC_CUDA_MALLOC, c->layer, sizeof(*r), c->t1);
	}
	th->in_hook--;
	prof_own_end(th, own);
}

/* Timed before the memory is released, so a reuse of the address sorts after it. */
void cuda_rec_free(struct cuda_call *c, uint64_t ptr, unsigned kind)
{
	cuda_call_done(c);  /* the records are not part of the call's time */
	struct prof_thread *th = c->th;
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	struct prof_rec_cuda_free *r = prof_reserve(th, sizeof(*r));
	if (r) {
		r->corr = c->corr;
		r->ptr = ptr;
		r->kind = kind;
		r->pad = 0;
		prof_commit(r, PROF_REC_CUDA_FREE, c->layer, sizeof(*r), c->t0);
	}
	th->in_hook--;
	prof_own_end(th, own);
}

/* From any thread (CUPTI's, or whichever drains event pairs). */
void cuda_rec_gpu(unsigned timing, uint64_t start, uint64_t end, uint64_t corr, int cupti_corr,
		  unsigned activity, unsigned copy_kind, uint64_t bytes, uint32_t name,
		  uint32_t device, uint32_t stream, const uint32_t grid[3], const uint32_t block[3])
{
	if (!prof_enabled(PROF_EV_CUDA))
		return;
	struct prof_thread *th = prof_thread_get();
	prof_hook_enter(th);
	struct prof_rec_cuda_gpu g = { .start = start, .end = end, .corr = corr, .bytes = bytes,
				       .name = name, .activity = (uint16_t)activity,
				       .copy_kind = (uint16_t)copy_kind, .device = device,
				       .stream = stream };
	for (int i = 0; i < 3; i++) {
		g.grid[i] = grid ? grid[i] : 0;
		g.block[i] = block ? block[i] : 0;
	}
	prof_write_cuda_gpu(th, &g, timing | (cupti_corr ? PROF_CUDA_GPU_CUPTI_CORR : 0), prof_now());
	th->in_hook--;
}

void cuda_rec_state(unsigned timing, int result, uint32_t version, const char *detail)
{
	struct prof_thread *th = prof_thread_get();
	size_t len = strnlen(detail, 1000);
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_cuda_state) + len + 1));
	prof_hook_enter(th);
	struct prof_rec_cuda_state *r = prof_reserve(th, size);
	if (r) {
		r->timing = timing;
		r->result = result;
		r->cupti_version = version;
		r->pad = 0;
		memset(r->detail, 0, size - sizeof(*r));
		memcpy(r->detail, detail, len);
		prof_commit(r, PROF_REC_CUDA_STATE, 0, size, prof_now());
	}
	th->in_hook--;
}

/* ---- activation ------------------------------------------------------------------------ */

static atomic_flag activating = ATOMIC_FLAG_INIT;
static char state_detail[512];
static int state_result;
static uint32_t state_version;

/* Registered (atexit) only once CUDA is initialised, so it runs before CUDA's own teardown
 * handlers, and before libprof's final on_exit handler closes the trace. */
static void cuda_at_exit(void)
{
	if (!prof_enabled(PROF_EV_CUDA))
		return;
	struct prof_thread *th = prof_thread_get();
	int saved = errno;
	prof_hook_enter(th);
	if (cupti_active)
		cupti_flush();
	else
		cuda_events_drain(1);
	th->in_hook--;
	errno = saved;
}

/* The libcuda the program loaded (never loads one itself). */
void cuda_driver_resolve_fns(void)
{
	if (cuda_drv.cuEventRecord)
		return;
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return;
#define RESOLVE(field, sym) cuda_drv.field = (__typeof__(cuda_drv.field))cuda_real_dlsym(h, sym)
	RESOLVE(cuEventCreate, "cuEventCreate");
	RESOLVE(cuEventDestroy, "cuEventDestroy_v2");
	RESOLVE(cuEventQuery, "cuEventQuery");
	RESOLVE(cuEventSynchronize, "cuEventSynchronize");
	RESOLVE(cuEventElapsedTime, "cuEventElapsedTime");
	RESOLVE(cuCtxGetCurrent, "cuCtxGetCurrent");
	RESOLVE(cuStreamIsCapturing, "cuStreamIsCapturing");
	RESOLVE(cuFuncGetName, "cuFuncGetName");
	RESOLVE(cuKernelGetName, "cuKernelGetName");
	RESOLVE(cuEventRecord, "cuEventRecord");  /* last: its being set means all were tried */
#undef RESOLVE
	dlclose(h);
}

void cuda_activate(void)
{
	if (atomic_load(&cuda_timing) || atomic_flag_test_and_set(&activating))
		return;
	struct prof_thread *th = prof_thread_get();
	prof_hook_enter(th);
	cuda_driver_resolve_fns();
	const char *want = getenv("PROF_CUDA_TIMING");
	unsigned timing = PROF_CUDA_TIMING_NONE;
	if (want && !strcmp(want, "none")) {
		snprintf(state_detail, sizeof(state_detail), "PROF_CUDA_TIMING=none");
	} else if (want && !strcmp(want, "events")) {
		snprintf(state_detail, sizeof(state_detail), "PROF_CUDA_TIMING=events");
		timing = PROF_CUDA_TIMING_EVENTS;
	} else if (cupti_start(state_detail, sizeof(state_detail), &state_result, &state_version) == 0) {
		timing = PROF_CUDA_TIMING_CUPTI;
	} else {
		timing = PROF_CUDA_TIMING_EVENTS;
		if (!strncmp(state_detail, "CUPTI is in use", 15))
			prof_log("%s: GPU work is timed by event pairs", state_detail);
	}
	if (timing == PROF_CUDA_TIMING_EVENTS && !cuda_drv.cuEventRecord) {
		size_t l = strlen(state_detail);
		snprintf(state_detail + l, sizeof(state_detail) - l, "%sno CUDA driver loaded",
			 l ? "; " : "");
		timing = PROF_CUDA_TIMING_NONE;
	}
	cuda_rec_state(timing, state_result, state_version, state_detail);
	prof_dbg(1, "cuda: timing %s (%s)", timing == PROF_CUDA_TIMING_CUPTI ? "cupti" :
		 timing == PROF_CUDA_TIMING_EVENTS ? "events" : "none", state_detail);
	atexit(cuda_at_exit);
	/* NONE is 0: keep a non-zero "activated" value apart from the timing kind. */
	atomic_store(&cuda_timing, (int)timing | 0x100);
	th->in_hook--;
}

void cuda_cupti_lost(const char *why)
{
	unsigned timing = cuda_drv.cuEventRecord ? PROF_CUDA_TIMING_EVENTS : PROF_CUDA_TIMING_NONE;
	cuda_rec_state(timing, 0, state_version, why);
	prof_log("%s: GPU work is timed by event pairs from here on", why);
	atomic_store(&cuda_timing, (int)timing | 0x100);
}

/* A fork child writes a trace of its own: every name is written to it again on use; CUDA
 * itself is unusable in a fork child, so pending GPU work is forgotten. */
void prof_cuda_fork_child(void)
{
	/* No CUDA call was ever made (every one interns its name): nothing to forget, and these
	 * pages stay the parent's, not copied at each fork of a shell. */
	if (!atomic_load_explicit(&names_map, memory_order_relaxed))
		return;
	atomic_fetch_add(&trace_gen, 1);
	cuda_self.depth = 0;
	cuda_self.corr = 0;
	cuda_self.last_site = 0;  /* its stack is in the parent's trace, not yet in this one */
	cuda_events_fork_child();
}
