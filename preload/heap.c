/* Heap hooks: malloc and friends. Each successful call is an ALLOC or FREE record with the
 * caller's interned stack; errno and results are exactly those of the real allocator. */
#include "prof.h"
#include "heap_tally.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
} real;

/* dlsym() may allocate (calloc) before we know where the real allocator is: serve those few
 * requests from a static arena. Its blocks are never freed; free() recognises them. */
static PROF_BULK _Alignas(64) char arena[64 * 1024];
static _Atomic size_t arena_used;
static int resolving;  /* a thread is in resolve(): __atomic, as are the real.malloc tests */

static void *arena_alloc(size_t size)
{
	size = (size + 63) & ~(size_t)63;
	size_t off = atomic_fetch_add(&arena_used, size);
	if (off + size > sizeof(arena))
		return NULL;
	return arena + off;  /* static storage: already zero */
}

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof(arena);
}

static inline int resolved(void)
{
	return __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL;
}

static void resolve(void)
{
	int idle = 0;
	if (resolved() || !__atomic_compare_exchange_n(&resolving, &idle, 1, 0, __ATOMIC_ACQUIRE,
						       __ATOMIC_RELAXED))
		return;
#define RESOLVE(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)
	RESOLVE(free);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(malloc_usable_size);
	/* malloc last, released: its being set means all are. */
	__atomic_store_n(&real.malloc, (__typeof__(real.malloc))dlsym(RTLD_NEXT, "malloc"),
			 __ATOMIC_RELEASE);
#undef RESOLVE
	__atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
}

/* ld.so sizes each new thread's DTV (calloc(n, sizeof(dtv_t)), 16 bytes) by the number of
 * TLS modules, and preloading us adds some (libprof.so, libunwind). Report the size the
 * program asks for without us, so heap totals match an unprofiled run (and valgrind's). */
static uintptr_t ldso_lo, ldso_hi;
static size_t dtv_extra_slots;

/* Exact mode, with stacks through the stack cache: an allocation's stack lookup starts
 * before its real call (prof_stack_prefetch()). Not sampled: few allocations take a stack. */
static int stacks_ahead;

/* The sampled mode's lean way, for glibc's allocator (heap_glibc_chunks): a call by a thread
 * with a tally slot of its own (which it has only in that mode, once the allocation hooks
 * recorded it), while recording is on and no hook of ours is under way, that only counts (an
 * allocation that holds no sample point and is not large, a free of a block without a record)
 * runs with no guard raised and no more than its counts: nothing of ours runs inside glibc's
 * allocator, and the seldom work of a tally raises the guard itself (heap_tally_flush()). */
static inline __attribute__((always_inline)) struct heap_tally *lean_tally(void)
{
	const struct prof_thread *th = &prof_self;
	if (atomic_load_explicit(&prof_active, memory_order_relaxed) != 1 || th->in_hook ||
	    !th->heap_tally)
		return NULL;
	struct heap_tally *t = &heap_tallies[th->heap_tally - 1];
	return likely(t->lean) ? t : NULL;
}

/* Our malloc, as this library defines it (the name `malloc` here is whichever comes first). */
extern void *prof_own_malloc(size_t)
	__attribute__((alias("malloc"), visibility("hidden"), copy(malloc)));

/* A malloc found before ours: the program's executable defines one (a statically linked
 * jemalloc or tcmalloc), or an allocator preloaded before libprof. Calls reach our hook only
 * if that allocator forwards to the next malloc: said once, so that an empty heap report is
 * not taken for a program that allocates nothing. */
static void say_foreign_malloc(void)
{
	void *first = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	/* A non-PIE executable that calls malloc has its PLT slot as malloc's address: the
	 * symbol there is undefined (SHN_UNDEF), the definition is elsewhere. */
	if (!first || first == (void *)prof_own_malloc ||
	    !dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    sym->st_shndx == SHN_UNDEF)
		return;
	prof_log("malloc comes from %s, found before libprof's: allocations it does not pass on to "
		 "the C library's malloc are not recorded (an allocator in LD_PRELOAD must go after "
		 "libprof)", info.dli_fname && *info.dli_fname ? info.dli_fname : "the program");
}

void prof_heap_init(void)
{
	resolve();
	if (prof_cfg.events & PROF_EV_ALLOC)
		say_foreign_malloc();
	stacks_ahead = !prof_cfg.heap_sample && prof_cfg.stack_depth && prof_cfg.stack_cache;
	if (prof_cfg.heap_sample)
		heap_tally_init(real.malloc_usable_size, real.malloc, real.free);
	void *dl_allocate_tls = dlsym(RTLD_DEFAULT, "_dl_allocate_tls");
	if (dl_allocate_tls && prof_module_range((uintptr_t)dl_allocate_tls, &ldso_lo, &ldso_hi))
		dtv_extra_slots = (size_t)prof_tls_modules_added();
}

static inline size_t calloc_size_unprofiled(size_t n, size_t size, uintptr_t caller)
{
	if (size == 16 && n > dtv_extra_slots && caller >= ldso_lo && caller < ldso_hi)
		return (n - dtv_extra_slots) * size;
	return n * size;
}

/* ---- sampling (PROF_HEAP_SAMPLE) ----------------------------------------------------------
 * As tcmalloc, Go and heapprofd do: the bytes each thread allocates are a stream in which
 * sample points fall at random, one per `heap_sample` bytes on average (a Poisson process, so
 * the gaps are exponential). An allocation that holds a point is sampled: it gets its stack.
 * Its chance is p = 1 - exp(-size / heap_sample), so the analyzer counts it as 1/p calls and
 * size/p bytes of its site. Every other allocation is only counted (heap_tally.c), unless it
 * is large: calls and bytes stay exact, the peak and what is left at exit nearly so. */
static __thread int64_t sample_left;   /* bytes to the next sample point */
static __thread uint64_t sample_rng;   /* xorshift64* state; 0 = not seeded yet */

static uint64_t rng_next(void)
{
	uint64_t x = sample_rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	sample_rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* -ln(u) for u in (0, 1], without libm: u = m * 2^e, ln m = 2 atanh((m-1)/(m+1)) with m in
 * [1, 2), a series good to 1e-6, which is plenty for a sampling gap. */
static double neg_log(double u)
{
	int e = 0;
	while (u < 1.0) {
		u *= 2.0;
		e--;
	}
	double z = (u - 1.0) / (u + 1.0), z2 = z * z;
	double ln_m = 2.0 * z * (1.0 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 / 9))));
	return -(ln_m + e * 0.69314718055994530942);
}

static int64_t sample_gap(void)
{
	double u = (double)((rng_next() >> 11) + 1) * (1.0 / 9007199254740992.0);  /* (0, 1] */
	double g = neg_log(u) * (double)prof_cfg.heap_sample;
	return g < 1.0 ? 1 : g > 4e18 ? (int64_t)4e18 : (int64_t)g;
}

static __attribute__((noinline)) void sample_seed(struct prof_thread *th)
{
	uint64_t seed = prof_cfg.heap_sample_seed;
	if (!seed)
		seed = prof_now() ^ ((uint64_t)th->tid << 32) ^ (uint64_t)(uintptr_t)&sample_rng;
	seed ^= (uint64_t)th->serial * 0x9e3779b97f4a7c15ull;
	sample_rng = seed ? seed : 1;
	sample_left = sample_gap();
}

/* Whether an allocation of size bytes holds a sample point. */
static inline int sampled(struct prof_thread *th, size_t size)
{
	if (unlikely(!sample_rng))
		sample_seed(th);
	int64_t s = size > (1ull << 62) ? (int64_t)(1ull << 62) : (int64_t)size;
	if (likely((sample_left -= s) > 0))
		return 0;
	sample_left = sample_gap();  /* memoryless: the next point is a fresh gap away */
	return 1;
}

static void record_alloc(struct prof_thread *th, unsigned fn, void *ptr, size_t size, uint64_t t,
			 uintptr_t call_site, const uintptr_t *frame, int with_stack)
{
	uint32_t stack = with_stack ? prof_stack_from(th, call_site, frame) : 0;
	prof_write_alloc(th, fn, (uint64_t)(uintptr_t)ptr, size, stack, t);
}

/* t is taken before the block is released, so a reuse of the address by another thread
 * always sorts after this free. */
static void record_free(struct prof_thread *th, void *ptr, unsigned flags, uint64_t t)
{
	prof_write_free(th, flags, (uint64_t)(uintptr_t)ptr, t);
}

/* Sampled mode: whether an allocation of size bytes is only counted, holding no sample point
 * (a thread whose sampler is not seeded yet has sample_left 0: no) and not being large. */
static inline int only_counted(size_t size)
{
	return size < PROF_HEAP_LARGE && sample_left > (int64_t)size;
}

/* Sampled mode, the short way of nearly every allocation: one that is only counted is
 * tallied, which leaves errno as it was (heap_tally.c). 0: it is not such a one, and
 * sample_left is as it was: allocated() decides. */
static inline __attribute__((always_inline)) int tallied(struct prof_thread *th, void *p,
							  size_t size)
{
	if (!prof_cfg.heap_sample || unlikely(th->serial == 0) || !only_counted(size))
		return 0;
	sample_left -= (int64_t)size;
	heap_tally_alloc(th, p, size);
	return 1;
}

/* A successful allocation, in either mode. Sampled (heap_tally.c): only a sampled or large
 * block gets a record, and goes into the set of blocks with records, which its free looks
 * in; the others are tallied, without a clock read. */
static inline __attribute__((always_inline)) void allocated(struct prof_thread *th, unsigned fn,
							      void *p, size_t size, uintptr_t site,
							      const uintptr_t *frame)
{
	th = prof_thread_get();
	int with_stack = 1;
	if (prof_cfg.heap_sample) {
		with_stack = sampled(th, size);  /* every byte counts for the sampler's stream */
		if (!with_stack && size < PROF_HEAP_LARGE) {
			heap_tally_alloc(th, p, size);
			return;
		}
		if (heap_rec_add(p) < 0) {  /* no room to remember it: counted, not recorded */
			heap_tally_alloc(th, p, size);
			return;
		}
		if (with_stack)
			fn |= PROF_ALLOC_SAMPLED;  /* too wide for a short record: an ordinary one */
		heap_tally_sync(th);
	}
	uint64_t t = prof_now();
	record_alloc(th, fn, p, size, t, site, frame, with_stack);
	if (unlikely(th->timed))  /* own time since t */
		th->own_ns += prof_now() - t;
}

/* allocated() for a hook, out of its short way (the registers it saves are then saved only
 * here). */
static __attribute__((noinline)) void allocated_keeping_errno(struct prof_thread *th, unsigned fn,
							     void *p, size_t size, uintptr_t site,
							     const uintptr_t *frame)
{
	int err = errno;
	allocated(th, fn, p, size, site, frame);
	errno = err;
}

/* Sampled mode: whether a call we let pass (inside a hook of ours, or while recording is off:
 * starting) may be of a block the program frees itself later. */
static inline int passing_tracked(void)
{
	return unlikely(prof_cfg.heap_sample) &&
	       (prof_self.in_hook || !atomic_load_explicit(&prof_active, memory_order_relaxed));
}

/* An allocation we let pass (fopen's FILE, inside our fopen hook): the program may free it
 * itself, and that free must be no tallied one (exact mode: a free of a block never seen
 * allocated, not counted). In the set of blocks with records, it is a FREE record. */
static void *passed(void *p)
{
	if (p && passing_tracked())
		heap_rec_add(p);
	return p;
}

/* Sampled mode, before the real free of ptr (or its realloc): whether it has a record, which
 * leaves the set now (another thread may get the address once it is freed), and then the
 * thread's tally is written first (heap_tally_sync()); else its usable size, taken while the
 * block is still ours, in *usable. errno stays the program's. */
static __attribute__((noinline)) void tally_sync_keeping_errno(void)
{
	int err = errno;
	heap_tally_sync(prof_thread_get());
	errno = err;
}

static inline __attribute__((always_inline)) int recorded_before_free(void *ptr, size_t *usable)
{
	if (!heap_tally_before_free(ptr, usable))
		return 0;
	tally_sync_keeping_errno();
	return 1;
}

/* Where the hook was called from, and the hook's own frame: hints for stack interning
 * (prof_stack_from). */
#define CALL_SITE ((uintptr_t)__builtin_return_address(0))
#define CALL_FRAME ((const uintptr_t *)__builtin_frame_address(0))

/* Wraps the real call: guard, errno as the real function left it, record on success. A
 * block the sampled mode only tallies takes the short way (tallied()). */
#define ALLOC_HOOK(fn_id, call, size_expr, site, frame)                     \
	do {                                                               \
		struct prof_thread *th = prof_recording(PROF_EV_ALLOC);    \
		if (!th)                                                   \
			return passed(call);                               \
		prof_hook_enter(th);                                       \
		if (stacks_ahead)                                          \
			prof_stack_prefetch(th, site, frame);              \
		void *p = call;                                            \
		if (p) {                                                   \
			size_t size_ = size_expr;                          \
			if (!tallied(th, p, size_))                        \
				allocated_keeping_errno(th, fn_id, p, size_, site, frame); \
		}                                                          \
		th->in_hook--;                                             \
		return p;                                                  \
	} while (0)

/* The work a lean count left (heap_tally_due()), then p back: hooks end in it. */
static __attribute__((noinline)) void *lean_due(void *p, struct heap_tally *t, size_t c,
						unsigned due)
{
	heap_tally_due(&prof_self, t, c, due);
	return p;
}

/* The lean way's allocation of size bytes (asked), only counted: p, the block the real call
 * gave, is counted in t, if there is one, and returned. */
static inline __attribute__((always_inline)) void *lean_allocated(struct heap_tally *t, void *p,
								   size_t size)
{
	size_t c;
	unsigned due;
	if (likely(p)) {
		sample_left -= (int64_t)size;
		if (unlikely(due = heap_own_alloc(t, size, heap_chunk_usable(p), &c)))
			return lean_due(p, t, c, due);
	}
	return p;
}

/* Each hook below is a choice between two ways, both out of line, so that each saves only the
 * registers it needs: the whole way (_hooked), and the lean way (_lean, lean_tally()) where the
 * thread has a tally slot, which takes the whole way where the call does not fit it. site and
 * frame are the hook's (CALL_SITE, CALL_FRAME). */
static __attribute__((noinline)) void *malloc_hooked(size_t size, uintptr_t site,
						     const uintptr_t *frame)
{
	if (unlikely(!resolved())) {
		resolve();
		if (!resolved())
			return arena_alloc(size);
	}
	ALLOC_HOOK(PROF_ALLOC_MALLOC, real.malloc(size), size, site, frame);
}

static __attribute__((noinline)) void *malloc_lean(size_t size, uintptr_t site,
						   const uintptr_t *frame)
{
	struct heap_tally *t = lean_tally();
	if (t && only_counted(size))
		return lean_allocated(t, real.malloc(size), size);
	return malloc_hooked(size, site, frame);
}

PROF_EXPORT void *malloc(size_t size)
{
	if (unlikely(prof_self.heap_tally))
		return malloc_lean(size, CALL_SITE, CALL_FRAME);
	return malloc_hooked(size, CALL_SITE, CALL_FRAME);
}

static __attribute__((noinline)) void *calloc_hooked(size_t n, size_t size, uintptr_t site,
						     const uintptr_t *frame)
{
	if (unlikely(!resolved())) {
		resolve();
		if (!resolved()) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total))
				return NULL;
			return arena_alloc(total);
		}
	}
	ALLOC_HOOK(PROF_ALLOC_CALLOC, real.calloc(n, size), calloc_size_unprofiled(n, size, site),
		   site, frame);
}

static __attribute__((noinline)) void *calloc_lean(size_t n, size_t size, uintptr_t site,
						   const uintptr_t *frame)
{
	struct heap_tally *t = lean_tally();
	size_t total;
	if (t && !__builtin_mul_overflow(n, size, &total) &&
	    only_counted(total = calloc_size_unprofiled(n, size, site)))
		return lean_allocated(t, real.calloc(n, size), total);
	return calloc_hooked(n, size, site, frame);
}

PROF_EXPORT void *calloc(size_t n, size_t size)
{
	if (unlikely(prof_self.heap_tally))
		return calloc_lean(n, size, CALL_SITE, CALL_FRAME);
	return calloc_hooked(n, size, CALL_SITE, CALL_FRAME);
}

PROF_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	resolve();
	ALLOC_HOOK(PROF_ALLOC_ALIGNED_ALLOC, real.aligned_alloc(align, size), size, CALL_SITE,
		   CALL_FRAME);
}

PROF_EXPORT void *memalign(size_t align, size_t size)
{
	resolve();
	ALLOC_HOOK(PROF_ALLOC_MEMALIGN, real.memalign(align, size), size, CALL_SITE, CALL_FRAME);
}

PROF_EXPORT void *valloc(size_t size)
{
	resolve();
	ALLOC_HOOK(PROF_ALLOC_VALLOC, real.valloc(size), size, CALL_SITE, CALL_FRAME);
}

PROF_EXPORT void *pvalloc(size_t size)
{
	resolve();
	ALLOC_HOOK(PROF_ALLOC_PVALLOC, real.pvalloc(size), size, CALL_SITE, CALL_FRAME);
}

PROF_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	resolve();
	struct prof_thread *th = prof_recording(PROF_EV_ALLOC);
	if (!th) {
		int rc = real.posix_memalign(out, align, size);
		if (rc == 0)
			passed(*out);
		return rc;
	}
	prof_hook_enter(th);
	int rc = real.posix_memalign(out, align, size);
	if (rc == 0)
		allocated_keeping_errno(th, PROF_ALLOC_POSIX_MEMALIGN, *out, size, CALL_SITE,
					CALL_FRAME);
	th->in_hook--;
	return rc;
}

static __attribute__((noinline)) void free_hooked(void *ptr)
{
	if (!ptr || unlikely(in_arena(ptr)))
		return;
	if (unlikely(!resolved()))
		resolve();
	struct prof_thread *th = prof_recording(PROF_EV_ALLOC);
	if (!th) {
		if (passing_tracked())
			heap_rec_take(ptr);  /* one of passed()'s, freed inside the hook */
		real.free(ptr);
		return;
	}
	prof_hook_enter(th);
	size_t usable = 0;  /* set by recorded_before_free() where it is used */
	if (prof_cfg.heap_sample && !recorded_before_free(ptr, &usable)) {  /* tallied */
		real.free(ptr);
		heap_tally_free(prof_thread_get(), usable);  /* errno stays */
		th->in_hook--;
		return;
	}
	uint64_t t = prof_now();
	real.free(ptr);
	int err = errno;
	uint64_t own = prof_own_begin(th);
	record_free(prof_thread_get(), ptr, 0, t);
	prof_own_end(th, own);
	errno = err;
	th->in_hook--;
}

/* The lean way's free: a block without a record (none in the set's counts), of glibc's heap
 * (not the arena's). Its count comes before the real free, which is then the hook's last. */
static inline __attribute__((always_inline)) int lean_frees(const void *ptr)
{
	return ptr && !in_arena(ptr) && !heap_rec_maybe(ptr);
}

/* The work a lean free's count left, then the real free. */
static __attribute__((noinline)) void lean_free_due(void *ptr, struct heap_tally *t, size_t c,
						    unsigned due)
{
	heap_tally_due(&prof_self, t, c, due);
	real.free(ptr);
}

static __attribute__((noinline)) void free_lean(void *ptr)
{
	struct heap_tally *t = lean_tally();
	size_t c;
	unsigned due;
	if (!t || !lean_frees(ptr))
		free_hooked(ptr);
	else if (unlikely(due = heap_own_free(t, heap_chunk_usable(ptr), &c)))
		lean_free_due(ptr, t, c, due);
	else
		real.free(ptr);
}

PROF_EXPORT void free(void *ptr)
{
	if (unlikely(prof_self.heap_tally))
		free_lean(ptr);
	else
		free_hooked(ptr);
}

/* realloc and reallocarray: a moved or resized block is a FREE (timed before the call) and an
 * ALLOC; realloc(p, 0) frees p; a failed call changes nothing and records nothing. */
static void *realloc_common(unsigned fn, void *old, size_t n, size_t size,
			    void *(*call)(void *, size_t, size_t), uintptr_t call_site,
			    const uintptr_t *frame)
{
	size_t total = n * size;
	struct prof_thread *th = prof_recording(PROF_EV_ALLOC);
	if (!th) {
		if (!passing_tracked())
			return call(old, n, size);
		int had = old && heap_rec_take(old);  /* see passed() */
		void *p = call(old, n, size);
		if (!p && had && total)
			heap_rec_add(old);  /* failed: still there */
		return passed(p);
	}
	prof_hook_enter(th);
	/* Sampled mode: an old block without a record is tallied as freed; one with a record goes
	 * back into the set if the call fails. */
	int old_recorded = 1;
	size_t old_usable = 0;
	if (old && prof_cfg.heap_sample)
		old_recorded = recorded_before_free(old, &old_usable);
	uint64_t t0 = old && old_recorded ? prof_now() : 0;
	void *p = call(old, n, size);
	int err = errno;
	if (old && (p || total == 0)) {
		if (old_recorded)
			record_free(prof_thread_get(), old, PROF_FREE_REALLOC, t0);
		else
			heap_tally_free(prof_thread_get(), old_usable);
	} else if (old && prof_cfg.heap_sample && old_recorded) {
		heap_rec_add(old);
	}
	if (p)
		allocated(th, fn, p, total, call_site, frame);
	errno = err;
	th->in_hook--;
	return p;
}

static void *call_realloc(void *old, size_t n, size_t size)
{
	(void)n;
	return real.realloc(old, size);
}

static void *call_reallocarray(void *old, size_t n, size_t size)
{
	return real.reallocarray(old, n, size);
}

static __attribute__((noinline)) void *realloc_hooked(void *old, size_t size, uintptr_t site,
						      const uintptr_t *frame)
{
	if (unlikely(!resolved()) || unlikely(in_arena(old))) {
		resolve();
		if (!resolved())
			return arena_alloc(size);
		if (in_arena(old)) {  /* moving an early block out of the arena */
			void *p = malloc(size);
			if (p)
				memcpy(p, old, size < sizeof(arena) - (size_t)((char *)old - arena) ?
						       size : sizeof(arena) - (size_t)((char *)old - arena));
			return p;
		}
	}
	return realloc_common(PROF_ALLOC_REALLOC, old, 1, size, call_realloc, site, frame);
}

static __attribute__((noinline)) void *realloc_lean(void *old, size_t size, uintptr_t site,
						    const uintptr_t *frame)
{
	struct heap_tally *t = lean_tally();
	if (t && lean_frees(old) && size && only_counted(size)) {
		size_t old_usable = heap_chunk_usable(old);
		void *p = real.realloc(old, size);
		if (likely(p)) {  /* else the old block stays, and nothing happened */
			size_t c;
			unsigned due = heap_own_free(t, old_usable, &c);
			if (unlikely(due))
				heap_tally_due(&prof_self, t, c, due);
		}
		return lean_allocated(t, p, size);
	}
	return realloc_hooked(old, size, site, frame);
}

PROF_EXPORT void *realloc(void *old, size_t size)
{
	if (unlikely(prof_self.heap_tally))
		return realloc_lean(old, size, CALL_SITE, CALL_FRAME);
	return realloc_hooked(old, size, CALL_SITE, CALL_FRAME);
}

PROF_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	resolve();
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return real.reallocarray(old, n, size);  /* it sets ENOMEM, records nothing */
	return realloc_common(PROF_ALLOC_REALLOCARRAY, old, n, size, call_reallocarray,
			      CALL_SITE, CALL_FRAME);
}
