/* Event-pair timing, when CUPTI is not used: an event recorded on the launch's stream before
 * and after each kernel or copy. Pairs wait in a list until a sync point (or exit) finds them
 * complete; their GPU times are placed on our clock from an anchor event whose CPU time we took
 * while the device was idle, re-taken at each context sync (float ms drift stays small). */
#include "cuda.h"

#include <string.h>

#define POOL 4096

struct cuda_pair {
	CUevent a, b;
	struct cuda_pair *next;
	uint64_t corr, bytes;
	uint32_t name;
	uint16_t activity, copy_kind;
	uint32_t grid[3], block[3];
};

static void *_Atomic pool_map;  /* POOL pairs, made on first use */
static struct cuda_pair *free_list, *pending, **pending_tail = &pending;
static int pool_ready;
static atomic_flag lock = ATOMIC_FLAG_INIT;
static atomic_flag draining = ATOMIC_FLAG_INIT;
static CUcontext ctx;           /* events belong to the context current at first use */
static CUevent anchor;
static uint64_t anchor_ns;
static int anchored;

static void spin_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static void spin_unlock(void)
{
	atomic_flag_clear_explicit(&lock, memory_order_release);
}

/* Called with the lock held. Without memory the pool stays empty: no pair, no event timing. */
static void pool_init(void)
{
	struct cuda_pair *pool = prof_lazy(&pool_map, POOL * sizeof(struct cuda_pair));
	for (int i = POOL - 1; pool && i >= 0; i--) {
		pool[i].next = free_list;
		free_list = &pool[i];
	}
	pool_ready = 1;
}

/* The anchor: an event on the legacy stream of an idle device, and our clock just before. */
static int take_anchor(void)
{
	if (!anchor && cuda_drv.cuEventCreate(&anchor, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
		anchor = NULL;
		return -1;
	}
	uint64_t t = prof_now();
	if (cuda_drv.cuEventRecord(anchor, NULL) != CUDA_SUCCESS ||
	    cuda_drv.cuEventSynchronize(anchor) != CUDA_SUCCESS)
		return -1;
	anchor_ns = t;
	anchored = 1;
	return 0;
}

struct cuda_pair *cuda_events_begin(CUstream stream, int per_thread)
{
	if (!cuda_drv.cuEventRecord || !cuda_drv.cuEventElapsedTime)
		return NULL;
	struct prof_thread *th = prof_thread_get();
	prof_hook_enter(th);
	struct cuda_pair *p = NULL;
	CUcontext cur = NULL;
	if (cuda_drv.cuCtxGetCurrent)
		cuda_drv.cuCtxGetCurrent(&cur);
	if (!stream && per_thread)
		stream = CU_STREAM_PER_THREAD;
	int capturing = 0;
	/* Events recorded into a stream being captured would become graph nodes. */
	if (cuda_drv.cuStreamIsCapturing && cuda_drv.cuStreamIsCapturing(stream, &capturing) == CUDA_SUCCESS &&
	    capturing)
		goto out;
	spin_lock();
	if (!pool_ready)
		pool_init();
	if (!ctx)
		ctx = cur;
	if (cur != ctx) {  /* another context (device): untimed */
		spin_unlock();
		goto out;
	}
	p = free_list;
	if (p)
		free_list = p->next;
	int need_anchor = !anchored && !pending;
	spin_unlock();
	if (!p) {
		cuda_events_drain(0);  /* recycle what completed; this one goes untimed */
		goto out;
	}
	if (need_anchor && take_anchor() < 0) {
		spin_lock();
		p->next = free_list;
		free_list = p;
		spin_unlock();
		p = NULL;
		goto out;
	}
	if ((!p->a && cuda_drv.cuEventCreate(&p->a, CU_EVENT_DEFAULT) != CUDA_SUCCESS) ||
	    (!p->b && cuda_drv.cuEventCreate(&p->b, CU_EVENT_DEFAULT) != CUDA_SUCCESS) ||
	    cuda_drv.cuEventRecord(p->a, stream) != CUDA_SUCCESS) {
		spin_lock();
		p->next = free_list;
		free_list = p;
		spin_unlock();
		p = NULL;
		goto out;
	}
	p->bytes = (uint64_t)(uintptr_t)stream;  /* kept for end; replaced there */
out:
	th->in_hook--;
	return p;
}

/* c NULL: the call failed, nothing to time. */
void cuda_events_end(struct cuda_pair *p, struct cuda_call *c, unsigned activity, unsigned copy_kind,
		     uint64_t bytes, uint32_t name, const unsigned grid[3], const unsigned block[3])
{
	struct prof_thread *th = prof_thread_get();
	prof_hook_enter(th);
	CUstream stream = (CUstream)(uintptr_t)p->bytes;
	if (!c || cuda_drv.cuEventRecord(p->b, stream) != CUDA_SUCCESS) {
		spin_lock();
		p->next = free_list;
		free_list = p;
		spin_unlock();
		th->in_hook--;
		return;
	}
	p->corr = c->corr;
	p->bytes = bytes;
	p->name = name;
	p->activity = (uint16_t)activity;
	p->copy_kind = (uint16_t)copy_kind;
	for (int i = 0; i < 3; i++) {
		p->grid[i] = grid ? grid[i] : 0;
		p->block[i] = block ? block[i] : 0;
	}
	p->next = NULL;
	spin_lock();
	*pending_tail = p;
	pending_tail = &p->next;
	spin_unlock();
	th->in_hook--;
}

/* Times the pairs that completed (all of them when synced_all: after a context sync or at
 * exit, waiting for each), then re-anchors if nothing is left pending. */
void cuda_events_drain(int synced_all)
{
	if (!pool_ready || atomic_flag_test_and_set(&draining))
		return;
	struct prof_thread *th = prof_thread_get();
	uint64_t own = prof_own_begin(th);
	prof_hook_enter(th);
	spin_lock();
	struct cuda_pair *list = pending;
	pending = NULL;
	pending_tail = &pending;
	spin_unlock();
	struct cuda_pair *keep = NULL, **keep_tail = &keep, *done = NULL;
	while (list) {
		struct cuda_pair *p = list;
		list = p->next;
		CUresult q = synced_all ? cuda_drv.cuEventSynchronize(p->b) : cuda_drv.cuEventQuery(p->b);
		if (q == CUDA_ERROR_NOT_READY) {
			p->next = NULL;
			*keep_tail = p;
			keep_tail = &p->next;
			continue;
		}
		float from_anchor = 0, ms = 0;
		if (q == CUDA_SUCCESS &&
		    cuda_drv.cuEventElapsedTime(&from_anchor, anchor, p->a) == CUDA_SUCCESS &&
		    cuda_drv.cuEventElapsedTime(&ms, p->a, p->b) == CUDA_SUCCESS) {
			double off = (double)from_anchor * 1e6;
			uint64_t start = off < 0 && (uint64_t)-off > anchor_ns ? 0 :
					 (uint64_t)((double)anchor_ns + off);
			uint64_t dur = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
			cuda_rec_gpu(PROF_CUDA_TIMING_EVENTS, start, start + dur, p->corr, 0,
				     p->activity, p->copy_kind, p->bytes, p->name, 0, 0, p->grid, p->block);
		}
		p->next = done;
		done = p;
	}
	spin_lock();
	if (keep) {  /* before anything pended meanwhile, to keep launch order */
		*keep_tail = pending;
		if (!pending)
			pending_tail = keep_tail;
		pending = keep;
	}
	while (done) {
		struct cuda_pair *p = done;
		done = p->next;
		p->next = free_list;
		free_list = p;
	}
	int idle = pending == NULL;
	spin_unlock();
	if (synced_all && idle)
		take_anchor();
	atomic_flag_clear(&draining);
	th->in_hook--;
	prof_own_end(th, own);
}

/* CUDA does not work in a fork child: forget the parent's pairs and events. */
void cuda_events_fork_child(void)
{
	atomic_flag_clear(&lock);
	atomic_flag_clear(&draining);
	struct cuda_pair *pool = atomic_load(&pool_map);
	if (pool)
		memset(pool, 0, POOL * sizeof(*pool));
	free_list = pending = NULL;
	pending_tail = &pending;
	pool_ready = 0;
	ctx = NULL;
	anchor = NULL;
	anchored = 0;
}
