/* Call stacks: unwound with libunwind and interned in a lock-free table, so each distinct
 * stack is written once (a STACK record) and events carry only its id. */
#include "prof.h"
#include "python.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TABLE_SLOTS (1u << 20)  /* 16 MiB of address space, touched as it fills */
/* The table fills in levels, each touched only by programs with more stacks than the one
 * before holds: a table whose every huge page was zeroed on first use cost a short run more
 * than all its unwinding. A stack whose probe window in a level is full goes to the next; a
 * lookup goes on to the next level only past a full window, which never empties again: a
 * stack not in one level is in none after it. Level 0, 16 KiB in small pages (a short
 * program's few hundred stacks: four pages made, not a huge page zeroed; a subshell's 60
 * stacks landed on all 16 pages of a 64 KiB level, each made at every fork); level 1, 2 MiB
 * in one huge page (thousands: one zeroing, not hundreds of faults); level 2, 8 MiB of huge
 * pages. Each level takes other bits of the hash, so that stacks crowded together in one
 * are not in the next. */
#define LEVELS 3
#define LEVEL0_SLOTS (1u << 10)  /* 16 KiB */
#define LEVEL0_FIRST (1u << 17)
static const struct level {
	uint32_t first, mask, probes, shift;
} levels[LEVELS] = {
	{ LEVEL0_FIRST, LEVEL0_SLOTS - 1, 8, 0 }, /* slots 128K..: a 2 MiB stretch of small pages */
	{ 0, (1u << 17) - 1, 16, 16 },            /* slots 0..128K: the first huge page */
	{ 1u << 19, (1u << 19) - 1, 64, 32 },     /* the upper half */
};

struct slot {
	_Atomic uint64_t hash;  /* 0 = empty; set first, by CAS, to claim the slot */
	_Atomic uint32_t id;    /* 0 while the claimer is still writing the STACK record */
	uint32_t pad;
};

static struct slot *table;
static uintptr_t unwinder_lo, unwinder_hi;  /* libunwind's code (prof_stacks_reset()) */

int prof_addr_in_unwinder(uintptr_t addr)
{
	return addr >= unwinder_lo && addr < unwinder_hi;
}

static void unwind_reads_install(void);

/* The slot of the i-th probe for hash h in a level. */
static inline struct slot *slot_at(uint64_t h, int level, uint32_t i)
{
	const struct level *l = &levels[level];
	return &table[l->first + (((uint32_t)(h >> l->shift) + i) & l->mask)];
}
static _Atomic uint32_t cache_gen = 1;  /* bumped by prof_stacks_reset(): cached ids are void */
static _Atomic uint32_t next_id = 1;

#define TABLE_BYTES (TABLE_SLOTS * sizeof(struct slot))
#define HUGE_PAGE (2u << 20)
/* Under an address-space limit too tight for the whole table (prof_vm_budget()), only levels
 * 0 and 1 (slots 0 to SMALL_TABLE_SLOTS, 2 MiB) are mapped, in small pages; tighter still,
 * none: stacks are then written without interning. */
#define SMALL_TABLE_SLOTS ((1u << 17) + LEVEL0_SLOTS)  /* levels 0 and 1 */
static void *table_map;  /* the mapping: the table, 2 MiB aligned inside it */
static size_t table_map_bytes;
static int table_wiped;  /* a fork child gets it zero-filled (prof_wipe_on_fork()) */
static int table_empty;  /* so this fork child's is: no need to empty it */
static int table_levels;  /* levels mapped */

static void table_reserve(void)
{
	size_t whole = TABLE_BYTES + HUGE_PAGE, small = SMALL_TABLE_SLOTS * sizeof(struct slot);
	size_t room = prof_vm_budget(whole, 32);
	table_map_bytes = room >= whole ? whole : room >= small ? small : 0;
	if (!table_map_bytes)
		return;  /* stacks are then written without interning */
	table_map = mmap(NULL, table_map_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (table_map == MAP_FAILED) {
		table_map = NULL;
		return;
	}
	prof_own_memory(table_map, table_map_bytes);
	table_wiped = prof_wipe_on_fork(table_map, table_map_bytes);
	if (table_map_bytes == small) {
		madvise(table_map, small, MADV_NOHUGEPAGE);
		table_levels = 2;
		table = table_map;
		return;
	}
	table_levels = LEVELS;
	table = (struct slot *)(((uintptr_t)table_map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	/* Huge pages for levels 1 and 2 (not in the sampled mode: few stacks), small ones for
	 * level 0, each advice over the slots no level uses beside it too: three mappings where
	 * the levels' own bounds made five, and each is copied by every fork and torn down by
	 * every exit. */
	if (!prof_cfg.heap_sample)
		madvise(table_map, table_map_bytes, MADV_HUGEPAGE);
	madvise(slot_at(0, 0, 0), (size_t)((char *)slot_at(0, 2, 0) - (char *)slot_at(0, 0, 0)),
		MADV_NOHUGEPAGE);
}
_Static_assert(1u << 17 == LEVEL0_FIRST && LEVEL0_FIRST < 1u << 19,
	       "level 0 lies between levels 1 and 2");

/* Lookups land on random slots: with 4 KiB pages each one is a TLB miss, which cost more
 * than the rest of the lookup; 2 MiB pages (where the kernel allows) make them hits. */
/* The table is libprof's own memory, never a root of the leak scan (its hashes are random
 * words, and reading 18 MiB cost a short run's exit milliseconds); a fork child empties the
 * parent's table in place, so the range registered stays the table's. */
void prof_stacks_reset(void)
{
	if (!table_map)
		table_reserve();
	else if (!table_empty)
		madvise(table_map, table_map_bytes, MADV_DONTNEED);  /* zero-filled again */
	table_empty = 0;
	if (table) {
		/* Level 0's 16 KiB at once: a short process's first stacks land on every page
		 * of it, each read (a zero page mapped) then written (a page allocated), which
		 * was 32 faults of a bash subshell. */
		int saved = errno;
		madvise(slot_at(0, 0, 0), (levels[0].mask + 1) * sizeof(struct slot),
			MADV_POPULATE_WRITE);
		errno = saved;
	}
	atomic_store(&next_id, 1);
	atomic_fetch_add(&cache_gen, 1);
	if (!unwinder_hi)
		prof_module_range((uintptr_t)unw_backtrace, &unwinder_lo, &unwinder_hi);
	unwind_reads_install();
	/* libunwind's settings, once per address space: a fork child has its parent's (and the
	 * calls again cost a child a tenth of a millisecond). */
	static int unwinder_set;
	if (unwinder_set)
		return;
	unwinder_set = 1;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	/* The stack cache's misses step through frames (unw_step), each looked up in this cache:
	 * its default 128 entries are too few for a program's call sites. */
	unw_set_cache_size(unw_local_addr_space, 8192, 0);
}

static uint64_t hash_frames(void *const *frames, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(uintptr_t)frames[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h | 1;  /* never 0, the empty-slot mark */
}

#define ID_FAILED UINT32_MAX  /* a slot whose STACK record could not be written */

/* The last stacks a thread wrote (outside signal handlers): a new one is written as a
 * STACK_TAIL of the one it shares the most outer frames with, when that saves enough. */
#define RECENT_STACKS 4
#define TAIL_MIN_SHARED 4  /* frames: a STACK_TAIL's header is 8 bytes longer */

struct recent_stack {
	uint32_t id, n, gen, pad;
	uint64_t frames[PROF_MAX_STACK_DEPTH];
};

struct stack_cache;
static struct recent_stack *tail_parent(struct stack_cache *c, void *const *frames, int n,
					int *shared);
static void tail_remember(struct stack_cache *c, uint32_t id, void *const *frames, int n);

static uint32_t write_stack(struct prof_thread *th, void *const *frames, int n)
{
	/* A frame in an object we have not described (dlopen'ed since) needs its MODULE record
	 * before anyone can symbolize it. Not from a signal handler: the rescan takes a lock. */
	if (th->in_signal == 0)
		for (int i = 0; i < n; i++)
			if (!prof_py_frame_is((uintptr_t)frames[i]) &&
			    !prof_addr_known((uintptr_t)frames[i])) {
				prof_modules_rescan();
				break;
			}
	/* a signal handler's records go to another stream, where a parent may not precede them */
	struct stack_cache *c = th->in_signal ? NULL : th->stack_cache;
	int shared = 0;
	struct recent_stack *parent = c ? tail_parent(c, frames, n, &shared) : NULL;
	int own = n - shared;
	uint32_t size = parent ? (uint32_t)(sizeof(struct prof_rec_stack_tail) + 8u * (uint32_t)own)
			       : (uint32_t)(sizeof(struct prof_rec_stack) + 8u * (uint32_t)n);
	void *r = prof_reserve(th, size);
	if (!r)
		return 0;
	uint32_t id = atomic_fetch_add(&next_id, 1);
	if (parent) {
		struct prof_rec_stack_tail *t = r;
		t->id = id;
		t->depth = (uint32_t)own;
		t->parent = parent->id;
		t->shared = (uint32_t)shared;
		for (int i = 0; i < own; i++)
			t->frames[i] = (uint64_t)(uintptr_t)frames[i];
		prof_commit(t, PROF_REC_STACK_TAIL, 0, size, prof_now());
	} else {
		struct prof_rec_stack *f = r;
		f->id = id;
		f->depth = (uint32_t)n;
		for (int i = 0; i < n; i++)
			f->frames[i] = (uint64_t)(uintptr_t)frames[i];
		prof_commit(f, PROF_REC_STACK, 0, size, prof_now());
	}
	if (c)
		tail_remember(c, id, frames, n);
	return id;
}

/* Writes the stack of a slot this thread claimed and gives the slot its id; a lost record
 * marks the slot ID_FAILED, so the next lookup writes it rather than every lookup a copy. */
static uint32_t publish(struct prof_thread *th, struct slot *s, void *const *frames, int n)
{
	uint32_t id = write_stack(th, frames, n);
	atomic_store_explicit(&s->id, id ? id : ID_FAILED, memory_order_release);
	return id;
}

/* The table is far bigger than the caches and a program's own data evicts it, so a lookup
 * is a cache miss. The stack last seen from the same call site is usually the one coming:
 * fetch its slot now, and the miss overlaps the unwinding instead of following it. */
static inline uint64_t *prediction(struct prof_thread *th, uintptr_t call_site)
{
	return &th->predicted[(call_site >> 2) & 63];
}

static uint32_t intern(struct prof_thread *th, void *const *frames, int n, uint64_t h);
static uint32_t prof_stack_at_uncached(struct prof_thread *th, uintptr_t call_site, uint64_t *guess);
static int backtrace_frames(struct prof_thread *th, uintptr_t call_site,
			    void *buf[PROF_MAX_STACK_DEPTH + 16], void ***frames);

/* ---- The stack cache ----------------------------------------------------------------------
 * Most calls come again from a call path already seen, at the same depth. Unwinding, which
 * parses DWARF rules frame by frame, is most of a hook's cost; checking that the stack still
 * holds what the last unwind read from it is a few loads. Per thread, an entry remembers for a
 * call site and the stack pointer at the call (sp0) every word of the stack that decided the
 * unwind of that call (each frame's return address and, where a frame above takes its CFA
 * from rbp, the saved rbp it uses) and the interned stack that came of it. The unwind is a
 * function of the registers it starts from and the words it reads: x86-64 compilers express a
 * frame's CFA as rsp or rbp plus a constant, and where to find the return address and the
 * caller's rbp as offsets from the CFA, fixed per code address. So if the call site, sp0 and
 * (where some frame took its CFA from the rbp the program had at the call) that rbp are the
 * same, and every word still holds its value, a full unwind reads the same words in the same
 * places and gives the same stack: the entry's. The words are compared through a 64-bit hash
 * of their values (ENTRY_CHECK), as the stack table compares stacks: an entry keeps 2
 * bytes a word where it would keep 16 with the values, and a deep stack's entry, which
 * missed the CPU's caches line after line, is one or two lines. Stacks through a signal frame (whose registers
 * libunwind reads from a ucontext) and unwinds that failed are not cached. Limit: a
 * stack-realigning (DRAP) function reads its CFA from its frame, a word not among those
 * checked. The program's sp0 and rbp at the call come from libprof's own frame pointers. */

#define INDEX_BITS 14           /* per thread: chains of entries, by call site, sp0, callers */
#define INDEX_SLOTS (1u << INDEX_BITS)
#define RULE_SLOTS 16384        /* per thread: frame rules learned, by code address, at most */
#define RULE_SLOTS_FIRST 1024   /* ... at first (rules_grow()) */
#define CHAIN_MAX 16            /* entries tried per lookup */
#define CHAIN_CLOSED UINT32_MAX /* an index slot whose calls go uncached (cache_find) */
#define CACHE_STACK_NEEDED (64u << 10)  /* stack left for a recording unwind */
#define ARENA_BYTES (16u << 20)  /* entries, appended; all dropped when it is full */

struct cached_stack {
	uintptr_t site, sp;      /* key: call site, sp0 */
	uint64_t check;          /* ENTRY_CHECK: sp0, the rbp if need_bp, generation, words */
	uint64_t hash;           /* of the frames: the thread's prediction (prof_stack_last_at) */
	uint32_t id;             /* interned stack */
	uint32_t next;           /* 1 + offset of the next entry of the chain, 0 = none */
	uint16_t n;              /* words to check */
	uint8_t need_bp;         /* the call's rbp decides the unwind */
	uint8_t python;          /* Python frames spliced in: entry_pychain() says which */
	uint16_t off[];          /* where the words are: sp0 + 8 * off[i] */
};

/* While an unwind records, the words it read, as (address, value), from ENTRY_SCRATCH bytes
 * into the entry: entry_seal() then turns them into off[] in place (off[i] ends before word
 * i begins, so it overwrites only words already read). */
struct entry_word {
	uintptr_t addr, val;
};
#define ENTRY_SCRATCH 64u
#define ENTRY_ALIGN 64u  /* an entry of up to 10 words is one cache line */
_Static_assert(sizeof(struct cached_stack) + 2 <= ENTRY_SCRATCH, "off[0] ends before word 0");

static inline struct entry_word *entry_words(struct cached_stack *e)
{
	return (struct entry_word *)((char *)e + ENTRY_SCRATCH);
}

/* The Python frames spliced in (prof_py_splice()), after off[]: 0 if none. */
static inline uint64_t *entry_pychain_at(const struct cached_stack *e)
{
	return (uint64_t *)((char *)e + ((sizeof(*e) + 2u * e->n + 7u) & ~7u));
}

static inline uint64_t entry_pychain(const struct cached_stack *e)
{
	return e->python ? *entry_pychain_at(e) : 0;
}

static inline uint32_t entry_size(const struct cached_stack *e)
{
	uint32_t size = (uint32_t)sizeof(*e) + 2u * e->n;
	if (e->python)
		size = ((size + 7u) & ~7u) + 8u;
	return (size + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1);
}

/* Many call paths reach a call site at the same depth (a helper called from everywhere): the
 * callers' return addresses tell them apart. Chains are keyed by the first KEY_FRAMES of them,
 * read where an unwind reads them: at a fixed offset from the frame's stack pointer where its
 * CFA is rsp-based, or through its frame pointer (rbp + 8, the caller's rbp at rbp) where the
 * CFA is rbp + 16, as learned per code address from the unwinds made (below). A frame pointer
 * is the program's data until proven otherwise, so it is followed only inside the thread's own
 * stack, above the frame's stack pointer: there every word is mapped (the bounds are known for
 * the first thread and for threads started through pthread_create). The key only picks a
 * chain; cached_holds() decides. */
#define KEY_FRAMES 8

struct frame_rule {
	uintptr_t ip;
	int32_t ra_at;    /* offset of the return address from the frame's sp, or RA_AT_RBP */
	uint32_t suffix;  /* the frames above ip in the unwinds made (a tag of their hash), or
			   * SUFFIX_NONE, SUFFIX_VARIES */
	int32_t bp_at;    /* where the frame saved its caller's rbp, from its CFA, or BP_KEPT */
	uint32_t flags;   /* RULE_* */
};
#define RA_AT_RBP (-1)            /* the frame's CFA is rbp + 16 */
#define RA_AT_VARIES INT32_MIN    /* seen both ways, or at two offsets: a realigned frame */
#define BP_KEPT INT32_MIN         /* the caller's rbp is the frame's own (not saved) */
/* A frame's whole rule (rules_walk()) is known once an unwind stepped past ip (RULE_STEP) or
 * ended there with no return address (RULE_END: _start, clone3). RULE_ODD: one that cannot be
 * walked from its rule: a signal frame, a CFA that is not where the return address ends, the
 * caller's rbp read from elsewhere than the frame or seen in two places. Whole rules are
 * learned for code in a loaded object only (generated code may be replaced by other code at
 * the same address) and forgotten after a dlclose (another object may be loaded where it was). */
#define RULE_STEP 1u
#define RULE_END 2u
#define RULE_ODD 4u
/* Where every unwind through ip went on alike above it (a thread's start_thread and clone3,
 * main's libc start-up), the frames above tell no two call paths apart: the key stops at
 * ip, short of reading them. A second suffix seen there makes it SUFFIX_VARIES for good. */
#define SUFFIX_NONE 0u
#define SUFFIX_VARIES 1u

/* A recording unwind (unw_step: libunwind's DWARF cache is small and, in Debian's build,
 * masks signals on every step) costs up to ten unw_backtrace calls, so it is spent only where
 * it will be paid back; a recording by the rules its frames are known to follow (rules_walk(),
 * with the unw_backtrace that checks it) costs little more than one. A call is recorded the
 * second time its key is seen (a bit per key in seen[], the first sighting unwinds fast): a
 * call path that comes once is never recorded.
 * Once the arena has overflowed (a working set of stacks larger than it, where entries are
 * dropped before they pay) a thread records only as long as its hits pay for that: otherwise
 * one miss in RECORD_EVERY times the debt in units of DEBT_MAX, so the cache still fills
 * where it will pay later and records ever less where it does not. */
#define RECORD_COST 16    /* hits a recording must be paid back with */
#define RULES_COST 2      /* ... one made by rules_walk() */
#define DEBT_MAX 1024
#define RECORD_EVERY 16
#define SEEN_BITS (1u << 16)

/* Most call sites are reached at a given depth by one call path only (a loop's call, a helper
 * called from one place): for those, the entry is checked at once, without reading the callers
 * for the key or the index. A site and sp whose second path is recorded, or whose entry fails
 * to hold, is marked multi and looked up by its key from then on. */
#define SITE_SLOTS 256

/* Python runs every function through the same native frames of its evaluation loop, so one
 * native entry stands for as many stacks as there are Python call chains reaching it: those
 * stacks are kept by (the entry's frames, the chain's hash), so that a hit with other Python
 * frames than the entry's costs the walk of the chain, not an unwind. */
#define PY_VARIANT_SLOTS 4096

struct py_variant {
	uint64_t key;         /* the entry's hash mixed with the chain's, 0 = empty */
	uint64_t hash;        /* of the stack's frames */
	uint32_t id, gen;
};

/* A site reached by several paths at one depth keeps where the last walk of its key (below)
 * found the callers' return addresses, as offsets from the stack pointer: while the paths
 * there have the same frames (as a loop calling through helpers alike), the key is those
 * words, read all at once, not a walk from frame to frame. A key so read that finds no entry
 * is walked again; a site whose layouts keep differing walks from then on (LAYOUT_OFF). */
#define LAYOUT_OFF UINT32_MAX
#define LAYOUT_MISSES_MAX 16

struct site_memo {
	uintptr_t site, sp;
	uint32_t at;       /* 1 + offset of its entry, 0 = none */
	uint32_t multi;    /* more than one path seen here */
	uint32_t layout;   /* 1 + words in key_at; 0 none yet; LAYOUT_OFF */
	uint32_t misses;   /* keys read by the layout that found nothing a walk's key found */
	int32_t key_at[KEY_FRAMES];
};

/* Where a walk of a key read its words; n = UINT32_MAX when the thread's stack bounds are not
 * known (a layout read again is then not known to stay in the stack). */
struct key_layout {
	uint32_t n;
	int32_t at[KEY_FRAMES];
};

/* A key computed ahead of its lookup (prof_stack_prefetch()), for the call at site, sp, bp. */
struct key_ahead {
	uintptr_t site, sp, bp;
	uint64_t key;
	int by_layout;  /* read by the site's layout, not walked */
};

struct stack_cache {
	uint32_t used;                /* bytes of arena taken */
	int32_t debt;                 /* RECORD_COST per recording, less one per hit */
	uint32_t unrecorded;          /* misses not recorded, for RECORD_EVERY */
	uint32_t overflowed;          /* the arena was full once: debt counts */
	uint32_t epoch;               /* arena resets: a proof of an earlier one is void */
	uint64_t seen[SEEN_BITS / 64];  /* keys missed once, by a hash of the key */
	uint64_t hits, recorded, first_seen, throttled, closed, py_hits;  /* said with PROF_DEBUG=1 */
	uint64_t by_steps, by_rules, walks_wrong;  /* recordings made each way; walks unlike */
	uint64_t book_hits, book_kept;  /* stacks found in the fork family's book; added to it */
	uint32_t rules_unloads;       /* prof_code_unloads when the rules were learned */
	uint32_t rules_forgotten;     /* times they were forgotten for a dlclose */
	uint32_t rule_slots;          /* of rules[] in use: RULE_SLOTS_FIRST and up */
	uint32_t rule_evictions;      /* since rule_slots last grew */
	uintptr_t stack_lo, stack_hi;  /* the thread's own stack; 0, 0 if not known */
	struct site_memo sites[SITE_SLOTS];
	struct key_ahead ahead;
	uint32_t index[INDEX_SLOTS];  /* 1 + offset of the chain's newest entry, 0 = none */
	struct frame_rule rules[RULE_SLOTS];
	struct py_variant py_variants[PY_VARIANT_SLOTS];
	uint32_t recent_next;
	struct recent_stack recent[RECENT_STACKS];
	_Alignas(ENTRY_ALIGN) char arena[ARENA_BYTES];
};

static _Atomic uint64_t cache_hits, cache_misses, cache_wrong;  /* PROF_STACK_CACHE=check */

/* The recent stack sharing the most outer frames with frames[0..n), if enough; *shared: how
 * many. Stacks of an earlier generation (before a fork's reset) name ids of another trace. */
static struct recent_stack *tail_parent(struct stack_cache *c, void *const *frames, int n,
					int *shared)
{
	uint32_t gen = atomic_load_explicit(&cache_gen, memory_order_relaxed);
	struct recent_stack *best = NULL;
	int most = TAIL_MIN_SHARED - 1;
	for (int i = 0; i < RECENT_STACKS; i++) {
		struct recent_stack *r = &c->recent[i];
		if (!r->id || r->gen != gen)
			continue;
		int k = 0, m = n < (int)r->n ? n : (int)r->n;
		while (k < m && r->frames[r->n - 1 - k] == (uint64_t)(uintptr_t)frames[n - 1 - k])
			k++;
		if (k > most) {
			most = k;
			best = r;
		}
	}
	*shared = best ? most : 0;
	return best;
}

static void tail_remember(struct stack_cache *c, uint32_t id, void *const *frames, int n)
{
	struct recent_stack *r = &c->recent[c->recent_next++ % RECENT_STACKS];
	r->id = id;
	r->n = (uint32_t)n;
	r->gen = atomic_load_explicit(&cache_gen, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		r->frames[i] = (uint64_t)(uintptr_t)frames[i];
}

/* Rules live in sets of RULE_WAYS by a hash of the code address: a program's hot call sites
 * are a few dozen, and a direct-mapped table let two of them (often a function's call and
 * its caller's, a page apart) evict each other on every unwind, which left the callers out
 * of every key. */
#define RULE_WAYS 4

static inline uint32_t rule_index(const struct stack_cache *c, uintptr_t ip)
{
	uint64_t h = (uint64_t)ip * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 40) & (c->rule_slots - RULE_WAYS);
}

static struct frame_rule *rule_set(struct stack_cache *c, uintptr_t ip)
{
	return &c->rules[rule_index(c, ip)];
}

/* A program with more call sites than the rules in use (a compiler's tens of thousands) evicts
 * them from full sets: twice the slots, up to RULE_SLOTS. A small program touches the first
 * pages of the table only. A set's index gains one bit: each rule stays in its set or moves
 * to the same set of the new half. */
static void rules_grow(struct stack_cache *c)
{
	uint32_t old = c->rule_slots;
	c->rule_slots = old * 2;
	c->rule_evictions = 0;
	for (uint32_t i = 0; i < old; i++) {
		struct frame_rule *r = &c->rules[i];
		uint32_t at = r->ip ? rule_index(c, r->ip) : 0;
		if (at < old)
			continue;
		for (int w = 0; w < RULE_WAYS; w++)
			if (!c->rules[at + w].ip) {
				c->rules[at + w] = *r;
				break;
			}
		*r = (struct frame_rule){ 0 };
	}
}

static struct frame_rule *frame_rule(struct stack_cache *c, uintptr_t ip)
{
	struct frame_rule *set = rule_set(c, ip);
	for (int i = 0; i < RULE_WAYS; i++)
		if (set[i].ip == ip)
			return &set[i];
	return NULL;
}

/* An unwind found the return address of the frame at ip, sp at ra, its CFA rsp- or rbp-based:
 * the same holds for every frame at ip, unless it realigns its stack. A new ip takes a free
 * way of its set, else one picked by its address. */
static struct frame_rule *rule_claim(struct stack_cache *c, uintptr_t ip, int32_t ra_at)
{
	for (;;) {
		struct frame_rule *set = rule_set(c, ip), *r = NULL;
		for (int i = 0; i < RULE_WAYS && !r; i++)
			if (!set[i].ip)
				r = &set[i];
		if (!r && c->rule_slots < RULE_SLOTS && ++c->rule_evictions > c->rule_slots / 8) {
			rules_grow(c);
			continue;
		}
		if (!r)
			r = &set[(ip >> 4) % RULE_WAYS];
		*r = (struct frame_rule){ ip, ra_at, SUFFIX_NONE, BP_KEPT, 0 };
		return r;
	}
}

static struct frame_rule *frame_learn(struct stack_cache *c, uintptr_t ip, uintptr_t sp,
				      uintptr_t ra, int rsp_based)
{
	intptr_t off = (intptr_t)(ra - sp);
	int32_t at = !rsp_based ? RA_AT_RBP : off >= 0 && off <= INT32_MAX ? (int32_t)off : RA_AT_VARIES;
	struct frame_rule *r = frame_rule(c, ip);
	if (!r)
		r = rule_claim(c, ip, at);
	else if (r->ra_at != at)
		r->ra_at = RA_AT_VARIES;
	return r;
}

/* An unwind stepped past the frame of rule r to one with stack pointer cfa, return address
 * read at ra and rbp read at bp_loc (0: not in memory) or, where the frame saved none, kept. */
static void step_learn(struct frame_rule *r, uintptr_t cfa, uintptr_t ra, uintptr_t bp_loc,
		       int kept)
{
	int odd = ra + 8 != cfa;
	int32_t bp_at = BP_KEPT;
	intptr_t d = (intptr_t)(bp_loc - cfa);
	if (!kept && bp_loc && d > INT32_MIN && d <= INT32_MAX)
		bp_at = (int32_t)d;
	else if (!kept)
		odd = 1;
	if (((r->flags & RULE_STEP) && r->bp_at != bp_at) || (r->flags & RULE_END))
		odd = 1;
	r->bp_at = bp_at;
	r->flags |= RULE_STEP | (odd ? RULE_ODD : 0);
}

/* An unwind ended at ip, with no return address read (its rule says there is none). */
static void end_learn(struct stack_cache *c, uintptr_t ip)
{
	struct frame_rule *r = frame_rule(c, ip);
	if (!r)
		r = rule_claim(c, ip, RA_AT_VARIES);
	r->flags |= RULE_END;
	if (r->flags & RULE_STEP)
		r->flags |= RULE_ODD;  /* ended here and went past here: not the rule alone */
}

/* A whole unwind (to the stack's end) of n frames: what lies above each of its frames. */
static void suffixes_learn(struct stack_cache *c, void *const *frames, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (int i = n - 1; i >= 0; i--) {
		uint32_t tag = (uint32_t)(h >> 32) | 2u;  /* never NONE or VARIES */
		struct frame_rule *r = frame_rule(c, (uintptr_t)frames[i]);
		if (r && r->suffix == SUFFIX_NONE)
			r->suffix = tag;
		else if (r && r->suffix != tag)
			r->suffix = SUFFIX_VARIES;
		h = (h ^ (uint64_t)(uintptr_t)frames[i]) * 0xc2b2ae3d27d4eb4full;
		h ^= h >> 29;
	}
}

/* A hash of a call: its site and the stack pointer at it. */
static uint64_t site_hash(uintptr_t site, uintptr_t sp)
{
	return (site ^ (sp * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
}

/* The key's words are mixed each by a constant of its place: products that do not wait for
 * each other, which a layout reads at once (key_by_layout()) and a walk gets one by one. */
static const uint64_t key_mult[KEY_FRAMES] = {
	0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x85ebca77c2b2ae63ull, 0x27d4eb2f165667c5ull,
	0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 0xff51afd7ed558ccdull,
};

static inline uint64_t key_final(uint64_t h)
{
	h ^= h >> 31;
	h *= 0xd6e8feb86659fd93ull;
	return h ^ (h >> 32);
}

static inline uint32_t *chain_of(struct stack_cache *c, uint64_t key)
{
	return &c->index[key >> (64 - INDEX_BITS)];
}

/* The chain for a call, by a walk of its callers' frames; where the walk read its words goes
 * to *lay. */
static uint32_t *cache_chain_walk(struct stack_cache *c, uintptr_t site, uintptr_t sp, uintptr_t bp,
				  uint64_t *key, struct key_layout *lay)
{
	uint64_t h = site_hash(site, sp);
	uintptr_t sp0 = sp, ip = site, hi = c->stack_lo <= sp && sp < c->stack_hi ? c->stack_hi : 0;
	int i = 0;
	for (; i < KEY_FRAMES; i++) {
		struct frame_rule *r = frame_rule(c, ip);
		uintptr_t *ra;
		if (!r || r->ra_at == RA_AT_VARIES || r->suffix > SUFFIX_VARIES)
			break;
		if (r->ra_at != RA_AT_RBP) {
			ra = (uintptr_t *)(sp + (uintptr_t)r->ra_at);
			if (hi && (uintptr_t)ra >= hi - 8)
				break;
		} else if (hi && bp >= sp && bp < hi - 16 && !(bp & 7)) {
			ra = (uintptr_t *)(bp + 8);
			bp = *(volatile uintptr_t *)bp;
		} else {
			break;
		}
		if ((uintptr_t)ra - sp0 > INT32_MAX)
			break;  /* out of a layout's reach: the key stops here */
		lay->at[i] = (int32_t)((uintptr_t)ra - sp0);
		ip = *(volatile uintptr_t *)ra;
		sp = (uintptr_t)(ra + 1);
		h += ip * key_mult[i];
	}
	lay->n = hi ? (uint32_t)i : UINT32_MAX;
	*key = key_final(h);
	return chain_of(c, *key);
}

/* The key of a call read by its site's layout: what a walk finds while the frames are
 * those the layout was taken from. The words are in the thread's stack above sp (a walk
 * read them there at this same sp). */
static uint64_t key_by_layout(const struct site_memo *m, uintptr_t site, uintptr_t sp)
{
	uint64_t h = site_hash(site, sp);
	for (uint32_t i = 0; i + 1 < m->layout; i++)
		h += *(volatile uintptr_t *)(sp + (uintptr_t)m->key_at[i]) * key_mult[i];
	return key_final(h);
}

/* A walk's layout for the memo of its site (if the memo is that site's). */
static void layout_keep(struct site_memo *m, uintptr_t site, uintptr_t sp,
			const struct key_layout *lay)
{
	if (m->site != site || m->sp != sp || m->layout == LAYOUT_OFF || lay->n == UINT32_MAX)
		return;
	for (uint32_t i = 0; i < lay->n; i++)
		m->key_at[i] = lay->at[i];
	m->layout = lay->n + 1;
}

/* Whether memo m is this site's and has seen one path there: its entry is the one to check. */
static inline int memo_one_path(const struct site_memo *m, uintptr_t site, uintptr_t sp)
{
	return m->site == site && m->sp == sp && m->at && !m->multi;
}

static inline int layout_usable(const struct site_memo *m, uintptr_t site, uintptr_t sp)
{
	return m->site == site && m->sp == sp && m->layout && m->layout != LAYOUT_OFF;
}

/* The chain for a call by a walk of its callers' frames, the walk's layout kept for its site. */
static uint32_t *walked_chain(struct stack_cache *c, struct site_memo *m, uintptr_t site,
			      uintptr_t sp, uintptr_t bp, uint64_t *key)
{
	struct key_layout lay;
	uint32_t *chain = cache_chain_walk(c, site, sp, bp, key, &lay);
	layout_keep(m, site, sp, &lay);
	return chain;
}

/* The key of a call, by its site's layout where there is one (1), else walked (0). */
static int call_key(struct stack_cache *c, struct site_memo *m, uintptr_t site, uintptr_t sp,
		    uintptr_t bp, uint64_t *key)
{
	if (layout_usable(m, site, sp)) {
		*key = key_by_layout(m, site, sp);
		return 1;
	}
	walked_chain(c, m, site, sp, bp, key);
	return 0;
}

/* The chain for a call: by the key prof_stack_prefetch() found for it if it did, else by the
 * site's layout, else walked (the walk's layout then kept). *by_layout: the key was not
 * walked, and a miss must walk before it says the call is new. */
static uint32_t *cache_chain(struct stack_cache *c, struct site_memo *m, uintptr_t site,
			     uintptr_t sp, uintptr_t bp, uint64_t *key, int *by_layout)
{
	struct key_ahead *a = &c->ahead;
	if (a->site == site && a->sp == sp && a->bp == bp) {
		a->site = 0;
		*key = a->key;
		*by_layout = a->by_layout;
		return chain_of(c, *key);
	}
	*by_layout = call_key(c, m, site, sp, bp, key);
	return chain_of(c, *key);
}

uintptr_t prof_main_stack_lo(void)
{
	extern void *__libc_stack_end;
	struct rlimit rl;
	/* The limit counts from the stack's top, above the environment: the page that ends with
	 * the program's file name, the last string the kernel put there. */
	uintptr_t top = (uintptr_t)__libc_stack_end, name = (uintptr_t)getauxval(AT_EXECFN);
	if (name > top)
		top = (name + 4095) & ~(uintptr_t)4095;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= (1ull << 34) || top <= rl.rlim_cur || here >= top ||
	    here < top - rl.rlim_cur)
		return 0;
	return top - rl.rlim_cur;
}

/* The calling thread's own stack, if sp lies in it: [*lo, *hi), where [sp, *hi) is mapped for
 * any sp inside it. From th->stack_lo (the first thread's rlimit below where it began, or what
 * glibc said as a thread started through pthread_create began, threads.c) up to the thread's
 * descriptor, which glibc puts at its stack's top, or for the first thread up to where its
 * stack began. 0, 0 where not known. Async-signal-safe. */
static void own_stack(const struct prof_thread *th, uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	extern void *__libc_stack_end;
	uintptr_t l = th->stack_lo, h = (uintptr_t)pthread_self();
	if (!(l <= sp && sp < h))
		h = (uintptr_t)__libc_stack_end;  /* the first thread's */
	if (!(l && l <= sp && sp < h))
		l = h = 0;
	*lo = l;
	*hi = h;
}

/* The thread's own stack, for the cache's walks: own_stack() from its floor, so wherever the
 * thread runs now (a handler on an alternate stack). */
static void stack_bounds(struct prof_thread *th, struct stack_cache *c)
{
	own_stack(th, th->stack_lo, &c->stack_lo, &c->stack_hi);
}

static int cached_holds(const struct cached_stack *e, uintptr_t site, uintptr_t sp, uintptr_t bp);

static struct site_memo *site_memo(struct stack_cache *c, uintptr_t site, uintptr_t sp)
{
	return &c->sites[site_hash(site, sp) >> 56];
}

/* A lookup found e: it pays back some of the recordings' debt. */
static struct cached_stack *cache_hit(struct stack_cache *c, struct cached_stack *e)
{
	c->debt -= c->debt > 0;
	c->hits++;
	return e;
}

/* The entry of the chain that holds for this call, or NULL; *full (when given): CHAIN_MAX
 * entries were tried. */
static struct cached_stack *chain_search(const uint32_t *chain, struct stack_cache *c,
					 uintptr_t site, uintptr_t sp, uintptr_t bp, int *full)
{
	uint32_t at = *chain;
	int i = 0;
	for (; at && i < CHAIN_MAX; i++) {
		struct cached_stack *e = (struct cached_stack *)(c->arena + at - 1);
		if (cached_holds(e, site, sp, bp))
			return e;
		at = e->next;
	}
	if (full)
		*full = i == CHAIN_MAX;
	return NULL;
}

/* The entry that holds for this call, or NULL; *key: the chain's key. A site reached by one
 * path is checked first, without the key. *coarse is set where the chain is CHAIN_MAX entries
 * long without one that holds: its key cannot tell this call's paths apart (the callers'
 * frames could not be read for it, as where a frame pointer leads outside the thread's known
 * stack), so the chain is closed (CHAIN_CLOSED) and its calls unwind without the cache from
 * then on, rather than walk and record again and again. */
static struct cached_stack *cache_find(struct prof_thread *th, uintptr_t site, uintptr_t sp,
				       uintptr_t bp, int *coarse, uint64_t *key)
{
	struct stack_cache *c = th->stack_cache;
	*coarse = 0;
	*key = 0;
	if (!c)
		return NULL;
	struct site_memo *m = site_memo(c, site, sp);
	if (memo_one_path(m, site, sp)) {
		struct cached_stack *e = (struct cached_stack *)(c->arena + m->at - 1);
		if (cached_holds(e, site, sp, bp))
			return cache_hit(c, e);
		m->multi = 1;
	}
	int by_layout, searched = 0, full = 0;
	uint32_t *chain = cache_chain(c, m, site, sp, bp, key, &by_layout);
	struct cached_stack *e;
	if (by_layout) {
		if (*chain != CHAIN_CLOSED && (e = chain_search(chain, c, site, sp, bp, &full)))
			return cache_hit(c, e);
		/* Not found by the layout's key: the frames may be another path's. */
		uint64_t walked;
		uint32_t *other = walked_chain(c, m, site, sp, bp, &walked);
		if (walked != *key && m->layout != LAYOUT_OFF && ++m->misses > LAYOUT_MISSES_MAX)
			m->layout = LAYOUT_OFF;
		*key = walked;
		searched = other == chain;
		chain = other;
	}
	if (*chain == CHAIN_CLOSED) {
		*coarse = 1;
		c->closed++;
		return NULL;
	}
	if (!searched && (e = chain_search(chain, c, site, sp, bp, &full)))
		return cache_hit(c, e);
	if (full) {
		*chain = CHAIN_CLOSED;
		*coarse = 1;
	}
	return NULL;
}

/* The caches of the threads live in one mapping, made on first use and registered once as
 * libprof's own memory (never a root of the leak scan: saved rbp values may be pointers), in
 * CACHE_THREADS slots; a thread that finds none free goes without. A slot given back is
 * zeroed (MADV_DONTNEED) before it is free. */
#define CACHE_THREADS 128
/* Slots start on page boundaries: MADV_DONTNEED takes whole pages, and one that began inside
 * a slot (or ran past its end) would fail, or zero the start of the next, a live thread's. */
#define CACHE_STRIDE (((sizeof(struct stack_cache)) + 4095) & ~(size_t)4095)
#define CACHE_VM_SHARE 32  /* of an address-space limit, the most the caches take */
static void *_Atomic caches;
static _Atomic uint64_t caches_taken[CACHE_THREADS / 64];

/* As many slots as an address-space limit leaves room for, in a thirty-second of it (none
 * under 512 MiB: threads then unwind without a cache). */
static int cache_slots(void)
{
	return (int)(prof_vm_budget(CACHE_THREADS * CACHE_STRIDE, CACHE_VM_SHARE) / CACHE_STRIDE);
}

static _Atomic int cache_known = -1;  /* slots; threads racing to set it compute the same */

static struct stack_cache *cache_claim(void)
{
	int slots = atomic_load_explicit(&cache_known, memory_order_relaxed);
	if (slots < 0)
		atomic_store_explicit(&cache_known, slots = cache_slots(), memory_order_relaxed);
	if (slots == 0)
		return NULL;
	/* Small pages (prof_lazy()): a thread touches its tables and what its entries fill. */
	struct stack_cache *all = prof_lazy(&caches, (size_t)slots * CACHE_STRIDE);
	if (!all)
		return NULL;
	int i = prof_slot_claim(caches_taken, (unsigned)slots);
	return i < 0 ? NULL : (struct stack_cache *)((char *)all + (size_t)i * CACHE_STRIDE);
}

/* The slots past a thirty-second of the new limit are taken for good and unmapped: now where
 * no thread holds them, else when their thread ends (prof_stacks_thread_done()). */
static _Atomic int cache_fit = CACHE_THREADS;

void prof_stacks_fit_limit(uint64_t limit)
{
	uint64_t fit = (limit / CACHE_VM_SHARE) / CACHE_STRIDE;
	if (fit < (uint64_t)atomic_load(&cache_fit))
		atomic_store(&cache_fit, (int)fit);
	char *all = atomic_load(&caches);
	if (!all) {  /* not mapped yet: cache_claim() sizes it by the limits then */
		atomic_store(&cache_known, -1);
		return;
	}
	for (int i = (int)fit; i < atomic_load(&cache_known); i++)
		if (prof_slot_take(caches_taken, (unsigned)i))
			munmap(all + (size_t)i * CACHE_STRIDE, CACHE_STRIDE);
}

/* Room for a new entry of the thread's (made on first use), to fill while unwinding; NULL if
 * the thread has no cache. cache_keep() adds it to the chain of its key. */
static struct cached_stack *cache_room(struct prof_thread *th)
{
	struct stack_cache *c = th->stack_cache;
	if (!c) {
		if (th->stack_cache_done)
			return NULL;
		if (!(c = cache_claim())) {
			th->stack_cache_done = 1;
			return NULL;
		}
		th->stack_cache = c;
		stack_bounds(th, c);
		c->rules_unloads = atomic_load(&prof_code_unloads);  /* no rules yet to forget */
		c->rule_slots = RULE_SLOTS_FIRST;
	}
	/* A return address and a saved rbp per frame, and the word that ended the unwind. */
	size_t most = ENTRY_SCRATCH + (2u * prof_cfg.stack_depth + 2u) * sizeof(struct entry_word);
	if (c->used + most > sizeof(c->arena)) {
		memset(c->index, 0, sizeof(c->index));
		memset(c->sites, 0, sizeof(c->sites));
		c->used = 0;
		c->overflowed = 1;
		c->epoch++;
	}
	return (struct cached_stack *)(c->arena + c->used);
}

/* Adds e, just filled, to its chain; 0 if the chain is closed (e is then not kept). */
static int cache_keep(struct prof_thread *th, struct cached_stack *e, uintptr_t bp)
{
	struct stack_cache *c = th->stack_cache;
	uint64_t key;
	struct key_layout lay;
	uint32_t *chain = cache_chain_walk(c, e->site, e->sp, bp, &key, &lay);
	if (*chain == CHAIN_CLOSED)
		return 0;
	e->next = *chain;
	*chain = c->used + 1;
	struct site_memo *m = site_memo(c, e->site, e->sp);
	if (m->site == e->site && m->sp == e->sp && m->at)
		m->multi = 1;
	else
		*m = (struct site_memo){ .site = e->site, .sp = e->sp, .at = c->used + 1 };
	layout_keep(m, e->site, e->sp, &lay);
	c->used += entry_size(e);
	return 1;
}

void prof_stacks_fork_child(struct prof_thread *th, struct stack_cache *cache, int pristine)
{
	table_empty = table_wiped && pristine;
	th->stack_cache = cache;
	if (cache) {
		cache->hits = cache->recorded = cache->first_seen = cache->throttled = 0;
		cache->closed = cache->py_hits = cache->by_steps = cache->by_rules = 0;
		cache->walks_wrong = cache->book_hits = cache->book_kept = 0;
	}
	atomic_store(&cache_hits, 0);
	atomic_store(&cache_misses, 0);
	atomic_store(&cache_wrong, 0);
}

void prof_stacks_thread_done(struct prof_thread *th, int process_ends)
{
	struct stack_cache *c = th->stack_cache, *all = atomic_load(&caches);
	th->stack_cache_done = 1;
	th->stack_cache = NULL;
	if (c) {
		if (prof_cfg.debug)
			prof_log("stack cache of thread %d: %llu hits, %llu recorded, %llu first seen, "
				 "%llu throttled, %llu closed, %u KiB, %llu hits with other Python "
				 "frames, %llu recorded by steps, %llu by rules, %llu walks wrong, rules "
				 "forgotten %u times, %llu found in the fork family's book, %llu added "
				 "to it", th->tid,
				 (unsigned long long)c->hits, (unsigned long long)c->recorded,
				 (unsigned long long)c->first_seen, (unsigned long long)c->throttled,
				 (unsigned long long)c->closed, c->used >> 10,
				 (unsigned long long)c->py_hits,
				 (unsigned long long)c->by_steps, (unsigned long long)c->by_rules,
				 (unsigned long long)c->walks_wrong, c->rules_forgotten,
				 (unsigned long long)c->book_hits, (unsigned long long)c->book_kept);
		size_t i = (size_t)((char *)c - (char *)all) / CACHE_STRIDE;
		if (process_ends) {
			/* its memory goes with the process */
		} else if (i >= (size_t)atomic_load(&cache_fit)) {
			munmap(c, CACHE_STRIDE);  /* past a lowered limit's share: never again */
		} else {
			madvise(c, CACHE_STRIDE, MADV_DONTNEED);
			prof_slot_give(caches_taken, (unsigned)i);
		}
	}
	if (prof_cfg.stack_cache == 2 && prof_cfg.debug)
		prof_log("stack cache: %llu hits checked, %llu wrong, %llu misses",
			 (unsigned long long)cache_hits, (unsigned long long)cache_wrong,
			 (unsigned long long)cache_misses);
}

/* The program's stack pointer and rbp at call_site, from our own frame pointers (libprof is
 * built with them): the hook's frame is the one that returns to call_site. Only frames of ours
 * are read; 0 if call_site is not where the last of them returns. */
static __attribute__((noinline)) int hook_frame(uintptr_t call_site, uintptr_t *sp, uintptr_t *bp)
{
	uintptr_t *fp = __builtin_frame_address(0);
	for (int i = 0; i < 8; i++) {
		if (fp[1] == call_site) {
			*sp = (uintptr_t)(fp + 2);
			*bp = fp[0];
			return 1;
		}
		uintptr_t *next = (uintptr_t *)fp[0];
		if (!prof_addr_is_ours(fp[1]) || next <= fp || ((uintptr_t)next & 7))
			return 0;
		fp = next;
	}
	return 0;
}

/* One step of ENTRY_CHECK: the mixing of hash_frames(). */
static inline uint64_t check_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* What an entry's words hold, with the rest of what decides its unwind, as one 64-bit value:
 * the words at sp + 8 * off[i] (word(i)), sp, the rbp where it decides, the cache's
 * generation. As exact as the stack table, which takes two stacks whose frames hash alike
 * for one. Two lanes, so that the multiplications of a long stack overlap. */
#define ENTRY_CHECK(n, need_bp, sp, bp, word) \
	ENTRY_CHECK_GEN(n, need_bp, sp, bp, word, atomic_load_explicit(&cache_gen, memory_order_relaxed))
#define ENTRY_CHECK_GEN(n, need_bp, sp, bp, word, gen)                                     \
	({                                                                                 \
		uint64_t a_ = check_mix(0x9e3779b97f4a7c15ull ^ (n), (need_bp) ? (bp) : 0); \
		uint64_t b_ = check_mix((sp), (gen));                                      \
		uint32_t i_ = 0;                                                           \
		for (; i_ + 1 < (n); i_ += 2) {                                            \
			a_ = check_mix(a_, word(i_));                                      \
			b_ = check_mix(b_, word(i_ + 1));                                  \
		}                                                                          \
		if (i_ < (n))                                                              \
			a_ = check_mix(a_, word(i_));                                      \
		check_mix(a_, b_);                                                         \
	})

static int cached_holds(const struct cached_stack *e, uintptr_t site, uintptr_t sp, uintptr_t bp)
{
	if (e->site != site || e->sp != sp)
		return 0;
	const volatile uintptr_t *at = (const volatile uintptr_t *)sp;
#define WORD_NOW(i) at[e->off[i]]
	return ENTRY_CHECK(e->n, e->need_bp, sp, bp, WORD_NOW) == e->check;
#undef WORD_NOW
}

/* Makes entry e, whose words an unwind from sp, bp just recorded (entry_words()), one that
 * cached_holds() can check. 0 where it cannot be: a word too far above sp, or not aligned. */
static int entry_seal(struct cached_stack *e, uintptr_t site, uintptr_t sp, uintptr_t bp)
{
	const struct entry_word *w = entry_words(e);
	uint32_t n = e->n;
	for (uint32_t i = 0; i < n; i++)
		if (w[i].addr < sp || ((w[i].addr - sp) & 7) || (w[i].addr - sp) / 8 > UINT16_MAX)
			return 0;
#define WORD_THEN(i) w[i].val
	e->check = ENTRY_CHECK(n, e->need_bp, sp, bp, WORD_THEN);
#undef WORD_THEN
	for (uint32_t i = 0; i < n; i++)
		e->off[i] = (uint16_t)((w[i].addr - sp) / 8);  /* w[i] read: off[i] ends before it */
	e->site = site;
	e->sp = sp;
	return 1;
}

/* Where libunwind read register reg of the cursor's frame: a word of the program's stack at or
 * above sp0 (else a register of the call itself, or of our own frames: 0). */
static uintptr_t read_from(unw_cursor_t *c, int reg, uintptr_t sp0)
{
	unw_save_loc_t loc;
	if (unw_get_save_loc(c, reg, &loc) < 0 || loc.type != UNW_SLT_MEMORY || loc.u.addr < sp0)
		return 0;
	return (uintptr_t)loc.u.addr;
}

/* ---- signals during an unwind -------------------------------------------------------------
 * Debian's libunwind blocks every signal around each step that takes its global lock and each
 * lookup its caches miss: two sigprocmask calls each, most of the cost of an unwind through
 * new frames (a program's start, JIT code, whose lookups always miss: 170,000 of them in a
 * second of node). So the first such call inside an unwind of ours blocks every signal for
 * real, for the rest of the unwind, and every call after it is answered without a system
 * call (cpu.c); an unwind that makes none (libunwind's fast trace, all cached) blocks nothing.
 * A program's signal handler may run before that first call: its own calls are told from
 * libunwind's by their caller. */
int prof_unwind_masks(struct prof_thread *th, uintptr_t caller)
{
	if (th->unwinding == UNWINDING_MASKED)
		return 1;
	if (!prof_addr_in_unwinder(caller))
		return 0;
	uint64_t all = ~0ull;
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &th->unwind_saved_mask, sizeof(all)))
		return 0;
	th->unwinding = UNWINDING_MASKED;
	return 1;
}

/* The signal mask as it is with every signal blocked (the kernel never blocks these two). */
#define MASK_ALL_BLOCKED (~0ull & ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1))))

void prof_unwind_begin(struct prof_thread *th, uintptr_t sp)
{
	uintptr_t lo, hi;
	own_stack(th, sp, &lo, &hi);
	if (lo) {
		th->unwind_lo = sp;
		th->unwind_hi = hi;
	}
	th->unwinding = UNWINDING_LAZY;
	atomic_signal_fence(memory_order_seq_cst);
}

/* The mask as it was, if the unwind blocked signals; unless it is no longer the one the
 * unwind set (a handler of the program's that ran before, and used libunwind itself, had its
 * mask restored by its return): that one stays. */
void prof_unwind_end(struct prof_thread *th)
{
	atomic_signal_fence(memory_order_seq_cst);
	int masked = th->unwinding == UNWINDING_MASKED;
	th->unwinding = 0;
	atomic_signal_fence(memory_order_seq_cst);
	th->unwind_lo = th->unwind_hi = 0;
	if (!masked)
		return;
	uint64_t was = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &th->unwind_saved_mask, &was, sizeof(was));
	if (was != MASK_ALL_BLOCKED)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &was, NULL, sizeof(was));
}

/* ---- memory reads during an unwind ----------------------------------------------------------
 * Past a frame without unwind info (JIT code) libunwind checks every address it reads, for the
 * rest of the unwind: mincore and a write and a read of a pipe, three system calls for each
 * page its four-entry cache misses (540,000 calls in a headless Chromium page load). Two kinds
 * of reads need no check: in the live part of the thread's stack, from where the unwind began
 * up to the stack's top (all of it mapped while the thread runs), and in the loaded objects'
 * segments (their code and unwind tables, which libunwind reads unchecked before such a frame).
 * Everything else (JIT code, other memory) is checked by libunwind as before. */
static int (*libunwind_read)(unw_addr_space_t, unw_word_t, unw_word_t *, int, void *);

static int unwind_read(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	const struct prof_thread *th = &prof_self;
	if (!write && ((th->unwind_hi && addr >= th->unwind_lo &&
			addr <= th->unwind_hi - sizeof(*val)) ||
		       (th->unwinding && prof_addr_in_objects(addr, sizeof(*val))))) {
		*val = *(const unw_word_t *)addr;
		return 0;
	}
	return libunwind_read(as, addr, val, write, arg);
}

static void unwind_reads_install(void)
{
	unw_accessors_t *a = unw_get_accessors(unw_local_addr_space);
	if (a && a->access_mem && !libunwind_read) {
		libunwind_read = a->access_mem;
		a->access_mem = unwind_read;
	}
}

/* The rbp a frame's CFA was taken from, read from word src of an entry (-1: the call's own
 * rbp), decides the unwind: that word is checked (keep), or the call's rbp (need_bp). */
static inline void rbp_decides(uint8_t *keep, int src, uint32_t *need_bp)
{
	if (src < 0)
		*need_bp = 1;
	else
		keep[src] = 1;
}

/* e's words, w of them: the kept ones, in order. Their count. */
static uint32_t words_kept(struct cached_stack *e, const uint8_t *keep, uint32_t w)
{
	struct entry_word *word = entry_words(e);
	uint32_t kept = 0;
	for (uint32_t i = 0; i < w; i++)
		if (keep[i])
			word[kept++] = word[i];
	return kept;
}

/* A fork while another thread is inside unw_step (a recording unwind) leaves libunwind's lock
 * held in the child, whose first unwind then waits forever. So a fork waits until no recording
 * unwind is under way, and none starts while it forks (they fall back to unw_backtrace).
 * One thread records at a time: libunwind, as Debian builds it (no per-thread cache), takes
 * one global lock for every step, and threads that recorded at once spent their start-up
 * waiting on it (futex sleeps). A thread that finds another recording unwinds fast instead
 * and records the call when it comes again. */
static _Atomic int recording_unwinds, forking;
static _Atomic int fork_prepared;  /* fork_prepare() ran: no recording unwind under way */

static int recording_begin(void)
{
	if (atomic_load(&forking) || atomic_load_explicit(&recording_unwinds, memory_order_relaxed))
		return 0;
	if (atomic_fetch_add(&recording_unwinds, 1) == 0 && !atomic_load(&forking))
		return 1;
	atomic_fetch_sub(&recording_unwinds, 1);
	return 0;
}

static void recording_end(void)
{
	atomic_fetch_sub(&recording_unwinds, 1);
}

static void book_prepare(void);
static void book_joined(void);

static void fork_prepare(void)
{
	book_prepare();
	atomic_store(&forking, 1);
	while (atomic_load(&recording_unwinds))
		sched_yield();
	atomic_store(&fork_prepared, 1);
}

static void fork_done(void)
{
	atomic_store(&forking, 0);
	atomic_store(&recording_unwinds, 0);  /* the child has only the forking thread */
}

static void fork_parent_done(void)
{
	atomic_store(&fork_prepared, 0);
	fork_done();
}

static void fork_child_done(void)
{
	fork_done();
	book_joined();
}

__attribute__((constructor)) static void stacks_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent_done, fork_child_done);
}

int prof_stacks_fork_was_safe(void)
{
	return atomic_exchange(&fork_prepared, 0);
}

/* Unwinds frame by frame into frames (ours left out), and where e is given, records in it the
 * words read; e->n is left 0 when this unwind must not be reused. Returns the frame count. */
static int unwind_recording(struct stack_cache *sc, void **frames, int max, uintptr_t call_site,
			    uintptr_t sp0, uintptr_t bp0, struct cached_stack *e)
{
	unw_context_t uc;
	unw_cursor_t c;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&c, &uc) < 0)
		return 0;
	int n = 0, ok = 1, step = 1, sig = 0, past_sig = 0;
	/* Where each frame's rbp came from: -1 the call's own rbp (bp0), else the word that holds
	 * it. A saved rbp is checked only where a frame above takes its CFA from it: elsewhere it
	 * is the program's data (rbp as a general register), which changes from call to call. */
	int bp_src = -1, prev_src = -1;
	uintptr_t bp_at = 0;  /* where the rbp in use was read: a frame that saves none keeps it */
	uint32_t w = 0, need_bp = 0;
	uint8_t keep[2 * PROF_MAX_STACK_DEPTH + 2];
	struct entry_word *word = entry_words(e);
	unw_word_t prev_ip = 0, prev_sp = 0, prev_bp = 0;
	do {
		unw_word_t ip, sp, bp;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			break;
		if (n == 0 && prof_addr_is_ours(ip))
			continue;
		if (unw_get_reg(&c, UNW_REG_SP, &sp) < 0 || unw_get_reg(&c, UNW_X86_64_RBP, &bp) < 0)
			ok = 0;
		uintptr_t at;
		if (n == 0) {
			ok &= ip == call_site && sp == sp0 && bp == bp0;
		} else {
			int rbp_based = sp == prev_bp + 16;  /* the frame below, as far as we can tell */
			if (rbp_based)
				rbp_decides(keep, prev_src, &need_bp);
			struct frame_rule *r = NULL;
			uintptr_t ra = read_from(&c, UNW_REG_IP, sp0);
			if (ra) {
				keep[w] = 1;
				word[w++] = (struct entry_word){ ra, ip };
				r = frame_learn(sc, prev_ip, prev_sp, ra, !rbp_based);
			} else {
				ok = 0;
			}
			int saved = (at = read_from(&c, UNW_X86_64_RBP, sp0)) && at != bp_at;
			if (saved) {
				keep[w] = 0;
				bp_src = (int)w;
				word[w++] = (struct entry_word){ at, bp };
				bp_at = at;
			}
			/* A signal frame's registers come from its ucontext, not from a rule; the
			 * frames past it are where the signal came, not return addresses. */
			if (r && sig)
				r->flags |= RULE_ODD;
			else if (r && !past_sig && prof_addr_in_objects(prev_ip, 1))
				step_learn(r, sp, ra, saved ? at : 0, !saved && bp == prev_bp);
			past_sig |= sig;
		}
		if ((sig = unw_is_signal_frame(&c) > 0))
			ok = 0;
		frames[n++] = (void *)ip;
		prev_ip = ip;
		prev_sp = sp;
		prev_bp = bp;
		prev_src = bp_src;
	} while (n < max && (step = unw_step(&c)) > 0);
	if (step < 0) {
		ok = 0;
	} else if (step == 0 && n < max) {
		if (ok)
			suffixes_learn(sc, frames, n);
		/* The end: from the frame's rules alone, or a return address of 0 read here. */
		uintptr_t at = read_from(&c, UNW_REG_IP, sp0);
		if (at) {
			keep[w] = 1;
			word[w++] = (struct entry_word){ at, *(uintptr_t *)at };
		} else if (ok && prof_addr_in_objects(prev_ip, 1)) {
			end_learn(sc, prev_ip);
		}
		rbp_decides(keep, prev_src, &need_bp);
	}
	uint32_t kept = words_kept(e, keep, w);
	e->n = ok ? kept : 0;
	e->need_bp = (uint8_t)need_bp;
	return n;
}

/* The unwind of a call by the rules earlier unwinds learned for its frames (the same for every
 * frame at a code address: a CFA that is rsp or rbp plus a constant, the return address just
 * below it, the caller's rbp saved at a fixed offset from it or not at all), and in e the words
 * it read, as unwind_recording() notes them; *whole: it went to the stack's end. Reads only the
 * thread's stack above sp0. Returns the frame count, 0 where some frame's rule is not known. */
static int rules_walk(struct stack_cache *c, void **frames, int max, uintptr_t call_site,
		      uintptr_t sp0, uintptr_t bp0, struct cached_stack *e, int *whole)
{
	uintptr_t hi = c->stack_hi, ip = call_site, sp = sp0, bp = bp0;
	if (!c->stack_lo || sp0 < c->stack_lo || sp0 >= hi)
		return 0;
	int n = 0, bp_src = -1;  /* where the rbp in use was read, -1: the call's own */
	uint32_t w = 0, need_bp = 0;
	uint8_t keep[2 * PROF_MAX_STACK_DEPTH + 2];
	struct entry_word *word = entry_words(e);
	for (;;) {
		const struct frame_rule *r = frame_rule(c, ip);
		if (!r || (r->flags & RULE_ODD))
			return 0;
		frames[n++] = (void *)ip;
		if (n == max)
			break;
		if (r->flags & RULE_END) {
			rbp_decides(keep, bp_src, &need_bp);
			*whole = 1;
			break;
		}
		if (!(r->flags & RULE_STEP) || r->ra_at == RA_AT_VARIES)
			return 0;
		uintptr_t ra;
		if (r->ra_at == RA_AT_RBP) {
			rbp_decides(keep, bp_src, &need_bp);
			ra = bp + 8;
		} else {
			ra = sp + (uint32_t)r->ra_at;
		}
		if (ra < sp || ra > hi - 16 || (ra & 7))
			return 0;
		ip = *(volatile uintptr_t *)ra;
		keep[w] = 1;
		word[w++] = (struct entry_word){ ra, ip };
		sp = ra + 8;
		if (r->bp_at != BP_KEPT) {
			uintptr_t at = sp + (uintptr_t)(intptr_t)r->bp_at;
			if (at < sp0 || at > hi - 8 || (at & 7))
				return 0;
			bp = *(volatile uintptr_t *)at;
			keep[w] = 0;
			bp_src = (int)w;
			word[w++] = (struct entry_word){ at, bp };
		}
	}
	e->n = words_kept(e, keep, w);
	e->need_bp = (uint8_t)need_bp;
	return n;
}

/* PROF_STACK_CACHE=check: a hit (stack id, whose frames hash to hash) unwound as if there were
 * no cache, the frames compared (by their hash: two threads interning one stack at once may
 * give it two ids); how says what kind of hit it was. */
static __attribute__((noinline)) uint32_t hit_unwound(struct prof_thread *th, uintptr_t call_site,
						      uint32_t id, uint64_t hash, uint64_t *guess,
						      const char *how)
{
	uint32_t full = prof_stack_at_uncached(th, call_site, guess);
	atomic_fetch_add(&cache_hits, 1);
	if (!full || *guess != hash) {
		atomic_fetch_add(&cache_wrong, 1);
		prof_log("stack cache: call site %#lx gave stack %u%s, an unwind %u",
			 (unsigned long)call_site, id, how, full);
	}
	return full;
}

/* A hit: stack id, whose frames hash to hash. */
static inline uint32_t hit_checked(struct prof_thread *th, uintptr_t call_site, uint32_t id,
				   uint64_t hash, uint64_t *guess, const char *how)
{
	*guess = hash;
	return likely(prof_cfg.stack_cache == 1) ? id : hit_unwound(th, call_site, id, hash, guess, how);
}

/* The stack of a call whose native frames are entry e's, with the Python frames of chain. */
static uint32_t py_variant(struct prof_thread *th, const struct cached_stack *e, uint64_t chain,
			   uintptr_t call_site, uint64_t *guess)
{
	struct stack_cache *c = th->stack_cache;
	uint64_t key = ((e->hash ^ chain) * 0x9e3779b97f4a7c15ull) | 1;
	struct py_variant *v = &c->py_variants[(key >> 40) & (PY_VARIANT_SLOTS - 1)];
	uint32_t gen = atomic_load_explicit(&cache_gen, memory_order_relaxed);
	if (v->key == key && v->gen == gen) {
		c->py_hits++;
		*guess = v->hash;
		return v->id;
	}
	uint32_t id = prof_stack_at_uncached(th, call_site, guess);
	if (id && id != ID_FAILED)
		*v = (struct py_variant){ key, *guess, id, gen };
	return id;
}

/* A hook about to make its real call (malloc) starts the lookup of the stack it will take:
 * the entry to check is a cache miss (a program's thousands of entries outgrow the caches),
 * which then overlaps the call rather than follow it. The key found is kept for the lookup,
 * which makes it again if another call (a signal handler's) came in between. */
void prof_stack_prefetch(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook)
{
	struct stack_cache *c = th->stack_cache;
	if (!c || hook[1] != call_site)
		return;
	uintptr_t sp = (uintptr_t)(hook + 2), bp = hook[0];
	struct site_memo *m = site_memo(c, call_site, sp);
	uint32_t at = m->at;
	if (!memo_one_path(m, call_site, sp)) {
		struct key_ahead *a = &c->ahead;
		a->by_layout = call_key(c, m, call_site, sp, bp, &a->key);
		at = *chain_of(c, a->key);
		a->site = call_site;
		a->sp = sp;
		a->bp = bp;
	}
	if (at && at != CHAIN_CLOSED) {
		const char *e = c->arena + at - 1;
		__builtin_prefetch(e);
		__builtin_prefetch(e + 64);
		__builtin_prefetch(e + 128);
	}
}

uint32_t prof_stack_at(struct prof_thread *th, uintptr_t call_site)
{
	return prof_stack_from(th, call_site, NULL);
}

/* A proof of entry e of c, whose stack a call just took: only a plain cache's (a checking
 * one unwinds each hit again) and only of stacks without Python frames (those live outside
 * the stack, and cached_holds() cannot see them change). */
static inline void proof_of(const struct stack_cache *c, const struct cached_stack *e,
			    struct prof_stack_proof *proof)
{
	if (prof_cfg.stack_cache == 1 && !e->python)
		*proof = (struct prof_stack_proof){ (uint32_t)((const char *)e - c->arena) + 1,
						    c->epoch };
}

/* A recording by the rules learned (rules_walk()), its frames checked against libunwind's fast
 * backtrace: into buf, *frames pointing at the first. The frame count, 0 if the rules did not
 * make the recording (some frame's not known, or the walk and the backtrace differ). */
static int record_by_rules(struct prof_thread *th, struct cached_stack *e, uintptr_t call_site,
			   uintptr_t sp0, uintptr_t bp0, void *buf[PROF_MAX_STACK_DEPTH + 16],
			   void ***frames)
{
	struct stack_cache *c = th->stack_cache;
	uint32_t unloads = atomic_load_explicit(&prof_code_unloads, memory_order_relaxed);
	if (unlikely(c->rules_unloads != unloads)) {
		memset(c->rules, 0, c->rule_slots * sizeof(c->rules[0]));
		c->rules_unloads = unloads;
		c->rules_forgotten++;
	}
	void *walked[PROF_MAX_STACK_DEPTH];
	int whole = 0;
	int n = rules_walk(c, walked, (int)prof_cfg.stack_depth, call_site, sp0, bp0, e, &whole);
	if (n <= 0)
		return 0;
	if (backtrace_frames(th, call_site, buf, frames) != n ||
	    memcmp(*frames, walked, (size_t)n * sizeof(walked[0]))) {
		c->walks_wrong++;
		return 0;
	}
	if (whole)
		suffixes_learn(c, walked, n);
	c->recorded++;
	c->by_rules++;
	c->debt += RULES_COST;
	return n;
}

/* ---- The fork family's book ----------------------------------------------------------------
 * A shell's subshells, a prefork server's workers: the fork children of one process run the
 * same new call paths, each one's first time in that child, where the parent never went. Each
 * unwound them anew with libunwind (a bash subshell: 50 unwinds, libunwind's caches copied
 * page by page on write, 0.8 ms of its 2). So a process that forks maps a book, shared with
 * every fork child it has after that (and theirs): the stack cache's entries, with frames in
 * place of the trace's stack id, which each member appends and every member may read. An
 * entry is checked as the thread's own are (cached_holds(): the same call site and stack
 * pointer, and every word that decided the unwind holding the same value), which proves the
 * same unwind where the code is the same: every member has the objects its creator had (no
 * more described, none unloaded), and every frame of an entry lies in one of them. The
 * highest word of an entry lies in the reading thread's own stack, or it is not read. From
 * its second child on, a family records (rather than unwinds fast) the calls it meets first,
 * so that its later children find them; after its second, only while they do (children that
 * each run code of their own, as a test runner's, would record what none finds). */
#define BOOK_BYTES (8u << 20)
#define BOOK_HEADS 4096
#define BOOK_CHAIN_MAX 32
/* Many paths reach one call site at one depth (a helper called from everywhere): a chain is
 * picked by the values of an entry's first BOOK_KEY_WORDS words as well, each read where the
 * first entry of the paths alike so far had it (its layout, kept per prefix: the callers'
 * frames are the same where their return addresses are). */
#define BOOK_KEY_WORDS 8
#define BOOK_LAYOUTS 16384
#define BOOK_LAYOUT_PROBES 8
#define BOOK_GEN 0  /* ENTRY_CHECK's generation for book entries: they name frames, not ids */
#define BOOK_RECORD_FROM 2  /* the child from which a family records its first sightings */
#define BOOK_PAYS 4         /* ... and goes on to, while a hit comes of every 4 it added
			     * (and some came: a Python child's stacks are not added) */
/* A thread takes a call it has seen before from the book too, rather than record it into its
 * own cache, until it has taken this many from the book: a short life (a subshell's) ends
 * before a recording pays, a worker's does not. */
#define BOOK_SHORT 256

struct book_entry {
	uintptr_t site, sp;
	uint64_t check;   /* ENTRY_CHECK_GEN(..., BOOK_GEN) */
	uint32_t next;    /* 1 + offset of the next entry of the chain, 0 = none */
	uint16_t n;       /* words */
	uint16_t top;     /* the highest off[] */
	uint16_t frames;
	uint8_t need_bp;
	uint8_t pad;
	uint16_t off[];   /* then the frames, 8-aligned */
};

struct book_layout {
	_Atomic uint64_t prefix;  /* a hash of site, sp and the words before; 0: free */
	_Atomic uint32_t off;     /* 1 + where the next word is; 0 while being claimed */
	uint32_t pad;
};

/* The layouts' offsets last followed from a call site and depth, level by level: a guess from
 * which a reader hashes the prefixes of every level at once and fetches their layouts
 * together (book_prefetch()), where each waited for the one before, eight cache misses in a
 * row (two thirds of a bash subshell's lookups in the book). */
#define BOOK_GUESSES 4096
struct book_guess {
	_Atomic uint64_t off[2];  /* 16 bits a level: 1 + the offset followed; 0: no guess */
};
_Static_assert(BOOK_KEY_WORDS <= 8, "a guess holds 8 levels");

struct book {
	uint32_t modules, unloads;  /* its creator's objects: what every reader must have */
	_Atomic uint32_t used;      /* bytes of arena taken */
	_Atomic uint32_t children;  /* fork children started in the family */
	_Atomic uint32_t hits, adds;  /* entries found, and added by children */
	_Atomic uint32_t heads[BOOK_HEADS];
	struct book_layout layouts[BOOK_LAYOUTS];
	struct book_guess guesses[BOOK_GUESSES];
	_Alignas(64) char arena[];
};
#define BOOK_ARENA (BOOK_BYTES - offsetof(struct book, arena))

static struct book *_Atomic book;  /* inherited by fork children; gone with an exec */
static int book_child;     /* this process is a fork child in book's family */

static inline uint64_t *book_frames(const struct book_entry *be)
{
	return (uint64_t *)((char *)be + ((sizeof(*be) + 2u * be->n + 7u) & ~7u));
}

static inline uint32_t book_entry_size(uint32_t words, uint32_t frames)
{
	return (((uint32_t)sizeof(struct book_entry) + 2u * words + 7u) & ~7u) + 8u * frames;
}

/* The layout slot of prefix: where it is, or (claim) where it goes; NULL if neither. */
static struct book_layout *book_layout(struct book *b, uint64_t prefix, int claim)
{
	for (uint32_t i = 0; i < BOOK_LAYOUT_PROBES; i++) {
		struct book_layout *l = &b->layouts[((prefix >> 32) + i) & (BOOK_LAYOUTS - 1)];
		uint64_t cur = atomic_load_explicit(&l->prefix, memory_order_acquire);
		if (cur == prefix)
			return l;
		if (cur == 0 && claim &&
		    (atomic_compare_exchange_strong(&l->prefix, &cur, prefix) || cur == prefix))
			return l;
	}
	return NULL;
}

/* The layouts and the chain's head a lookup will read, asked for at once from the offsets
 * followed last from this call site and depth (g); a wrong guess costs a fetch for nothing. */
static void book_prefetch(struct book *b, const struct book_guess *g, uint64_t h,
			  const volatile uintptr_t *word, uint64_t room)
{
	__builtin_prefetch(&b->layouts[(h >> 32) & (BOOK_LAYOUTS - 1)]);
	uint64_t guess[2] = { atomic_load_explicit(&g->off[0], memory_order_relaxed),
			      atomic_load_explicit(&g->off[1], memory_order_relaxed) };
	for (uint32_t k = 0; k < BOOK_KEY_WORDS; k++) {
		uint32_t off = (uint32_t)(guess[k / 4] >> (16 * (k % 4))) & 0xffff;
		if (!off || off - 1 >= room)
			break;
		h = check_mix(h, word[off - 1]) | 1;
		__builtin_prefetch(&b->layouts[(h >> 32) & (BOOK_LAYOUTS - 1)]);
	}
	__builtin_prefetch(&b->heads[h >> (64 - 12)]);
}

/* The chain of the call at site, sp whose stack is word[] (room: how many words of it lie in
 * the thread's stack): the hash of site, sp and its first words, each read where the layout
 * of the words before says. A writer (be) makes the layouts its entry takes where none is
 * yet; a layout made by another path's entry is followed all the same, by writer and reader
 * alike (the words are only a key: each entry is checked by its own). A writer leaves the
 * offsets it followed as the next readers' guess. */
static _Atomic uint32_t *book_chain(struct book *b, uintptr_t site, uintptr_t sp,
				    const volatile uintptr_t *word, uint64_t room,
				    const struct book_entry *be)
{
	uint64_t h = site_hash(site, sp) | 1;
	struct book_guess *g = &b->guesses[h >> (64 - 12)];
	if (!be)
		book_prefetch(b, g, h, word, room);
	uint64_t followed[2] = { 0, 0 };
	for (uint32_t k = 0; k < BOOK_KEY_WORDS; k++) {
		int claim = be && k < be->n;
		struct book_layout *l = book_layout(b, h, claim);
		if (!l)
			break;
		uint32_t off = atomic_load_explicit(&l->off, memory_order_acquire);
		if (!off && claim) {
			off = be->off[k] + 1u;
			uint32_t none = 0;
			if (!atomic_compare_exchange_strong(&l->off, &none, off))
				off = none;
		}
		if (!off || off - 1 >= room)
			break;
		if (off <= 0xffff)
			followed[k / 4] |= (uint64_t)off << (16 * (k % 4));
		h = check_mix(h, word[off - 1]) | 1;
	}
	if (be) {
		atomic_store_explicit(&g->off[0], followed[0], memory_order_relaxed);
		atomic_store_explicit(&g->off[1], followed[1], memory_order_relaxed);
	}
	return &b->heads[h >> (64 - 12)];
}
_Static_assert(BOOK_HEADS == 1u << 12 && BOOK_GUESSES == 1u << 12, "book_chain() takes 12 bits");

/* The book, where this process may read and add to it now. */
static inline struct book *book_open(const struct prof_thread *th)
{
	struct book *b = atomic_load_explicit(&book, memory_order_acquire);
	if (!b || th->in_signal || !th->stack_cache)
		return NULL;
	if (prof_modules_known() != b->modules ||
	    atomic_load_explicit(&prof_code_unloads, memory_order_relaxed) != b->unloads)
		return NULL;
	return b;
}

/* Whether the thread should record a call it meets for the first time: to add it. */
static int book_records(const struct prof_thread *th)
{
	struct book *b = book_open(th);
	if (!b || !book_child)
		return 0;
	uint32_t children = atomic_load_explicit(&b->children, memory_order_relaxed);
	uint64_t hits = atomic_load_explicit(&b->hits, memory_order_relaxed);
	return children == BOOK_RECORD_FROM ||
	       (children > BOOK_RECORD_FROM && hits &&
		hits * BOOK_PAYS >= atomic_load_explicit(&b->adds, memory_order_relaxed));
}

/* Whether every word of entry be lies in the room words above the stack pointer. */
static int book_fits(const struct book_entry *be, uint64_t room)
{
	if (room <= be->top)
		return 0;
	for (uint32_t i = 0; i < be->n; i++)
		if (be->off[i] > be->top)
			return 0;
	return 1;
}

/* The words of the thread's own stack from sp up, 0 where sp is not in it (or its bounds are
 * not known): what the book's entries and keys may read there. */
static uint64_t book_room(const struct stack_cache *c, uintptr_t sp)
{
	return c->stack_hi && sp >= c->stack_lo && sp < c->stack_hi ? (c->stack_hi - sp) / 8 : 0;
}

/* The entry of the book that holds for the call at site, sp, bp, or NULL. An entry's fields
 * are checked before use: another member may have written anything into the shared pages. */
static const struct book_entry *book_search(struct book *b, const struct stack_cache *c,
					    uintptr_t site, uintptr_t sp, uintptr_t bp)
{
	uint64_t room = book_room(c, sp);
	if (!room)
		return NULL;
	const volatile uintptr_t *word = (const volatile uintptr_t *)sp;
	uint32_t at = atomic_load_explicit(book_chain(b, site, sp, word, room, NULL),
					   memory_order_acquire);
	for (int i = 0; at && i < BOOK_CHAIN_MAX; i++) {
		if (at - 1 > BOOK_ARENA - sizeof(struct book_entry) || ((at - 1) & 7))
			return NULL;
		const struct book_entry *be = (const struct book_entry *)(b->arena + at - 1);
		if (be->site == site && be->sp == sp && be->n && be->frames &&
		    be->frames <= prof_cfg.stack_depth &&
		    at - 1 + book_entry_size(be->n, be->frames) <= BOOK_ARENA && book_fits(be, room)) {
#define WORD_NOW(i) word[be->off[i]]
			if (ENTRY_CHECK_GEN(be->n, be->need_bp, sp, bp, WORD_NOW, BOOK_GEN) == be->check)
				return be;
#undef WORD_NOW
		}
		at = atomic_load_explicit((const _Atomic uint32_t *)&be->next, memory_order_relaxed);
	}
	return NULL;
}

/* Entry e, just recorded and sealed for the call at sp, bp, and its frames: into the book,
 * once the family has a second child (a process that forks once, to run its work in the
 * child, has no one to find what its child adds). */
static void book_add(struct prof_thread *th, const struct cached_stack *e, uintptr_t bp,
		     void *const *frames, int n)
{
	struct book *b = book_open(th);
	const struct stack_cache *c = th->stack_cache;
	uint64_t room = b ? book_room(c, e->sp) : 0;
	if (!room || n <= 0 || !e->n ||
	    atomic_load_explicit(&b->children, memory_order_relaxed) < BOOK_RECORD_FROM)
		return;  /* no second child yet: none to find it */
	for (int i = 0; i < n; i++)
		if (!prof_addr_known((uintptr_t)frames[i]))
			return;  /* code described by some member only (dlopen'ed since) */
	uint32_t size = book_entry_size(e->n, (uint32_t)n);
	if (atomic_load_explicit(&b->used, memory_order_relaxed) + size > BOOK_ARENA ||
	    book_search(b, c, e->site, e->sp, bp))  /* another member's, or the thread's own */
		return;
	uint32_t at = atomic_fetch_add(&b->used, size);
	if (at + size > BOOK_ARENA)
		return;
	struct book_entry *be = (struct book_entry *)(b->arena + at);
	uint16_t top = 0;
	for (uint32_t i = 0; i < e->n; i++)
		top = e->off[i] > top ? e->off[i] : top;
	*be = (struct book_entry){ .site = e->site, .sp = e->sp, .n = e->n, .top = top,
				   .frames = (uint16_t)n, .need_bp = e->need_bp };
	memcpy(be->off, e->off, 2u * e->n);
	const volatile uintptr_t *word = (const volatile uintptr_t *)e->sp;
#define WORD_NOW(i) word[be->off[i]]
	be->check = ENTRY_CHECK_GEN(be->n, be->need_bp, be->sp, bp, WORD_NOW, BOOK_GEN);
#undef WORD_NOW
	uint64_t *f = book_frames(be);
	for (int i = 0; i < n; i++)
		f[i] = (uint64_t)(uintptr_t)frames[i];
	_Atomic uint32_t *head = book_chain(b, be->site, be->sp, word, room, be);
	uint32_t next = atomic_load_explicit(head, memory_order_relaxed);
	do
		be->next = next;
	while (!atomic_compare_exchange_weak_explicit(head, &next, at + 1, memory_order_release,
						      memory_order_relaxed));
	th->stack_cache->book_kept++;
	if (book_child)
		atomic_fetch_add_explicit(&b->adds, 1, memory_order_relaxed);
}

/* The stack of the call at call_site from the book, interned: its id, 0 if the book has none
 * that holds. The book's entries are not copied into the thread's cache: its keys follow the
 * callers by the rules of their frames, learned from its own recordings (without them, every
 * path at a call site and depth had one key, whose chain filled and closed). */
static uint32_t book_hit(struct prof_thread *th, uintptr_t call_site, uintptr_t sp, uintptr_t bp,
			 uint64_t *guess)
{
	struct book *b = book_open(th);
	const struct book_entry *be = b && atomic_load_explicit(&b->used, memory_order_relaxed) ?
					      book_search(b, th->stack_cache, call_site, sp, bp) : NULL;
	if (!be)
		return 0;
	void *frames[PROF_MAX_STACK_DEPTH + 16];
	const uint64_t *f = book_frames(be);
	int n = be->frames;
	for (int k = 0; k < n; k++)
		frames[k] = (void *)(uintptr_t)f[k];
	uint64_t pychain;
	n = prof_py_splice(th, frames, n, PROF_MAX_STACK_DEPTH + 16, &pychain);
	*guess = hash_frames(frames, n);
	uint32_t id = intern(th, frames, n, *guess);
	if (!id || id == ID_FAILED)
		return 0;
	atomic_fetch_add_explicit(&b->hits, 1, memory_order_relaxed);
	th->stack_cache->book_hits++;
	return id;
}

/* Before a fork (the forking thread, others may run): the book the child will share, made by
 * the first fork, and again by one whose objects changed since, up to BOOKS_MAX in all. An
 * older one stays mapped (a thread may be reading it), libprof's own memory for the leak
 * scan: the ranges it keeps are few. */
#define BOOKS_MAX 4
static void book_prepare(void)
{
	static int made;
	if (!atomic_load(&prof_active) || prof_cfg.stack_cache == 0 || prof_cfg.stack_depth == 0)
		return;
	uint32_t modules = prof_modules_known(), unloads = atomic_load(&prof_code_unloads);
	struct book *b = atomic_load(&book);
	if ((b && b->modules == modules && b->unloads == unloads) || made >= BOOKS_MAX ||
	    prof_vm_budget(BOOK_BYTES, 64) < BOOK_BYTES)  /* under a tight ulimit -v: none */
		return;
	int saved = errno;
	void *p = mmap(NULL, BOOK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	if (p == MAP_FAILED)
		return;
	prof_own_memory(p, BOOK_BYTES);
	b = p;
	b->modules = modules;
	b->unloads = unloads;
	book_child = 0;
	made++;
	atomic_store_explicit(&book, b, memory_order_release);
}

static void book_joined(void)
{
	struct book *b = atomic_load(&book);
	if (b) {
		book_child = 1;
		atomic_fetch_add(&b->children, 1);
	}
}

/* A miss, recorded into entry e: by the rules where every frame's is known, else with
 * libunwind's steps, noting the words each read (unwind_recording()). Out of
 * prof_stack_proven(): the unwind's cursor, context and frames take some 5 KiB of stack,
 * which every hit would otherwise reserve too. */
static __attribute__((noinline)) uint32_t record_miss(struct prof_thread *th,
						       struct cached_stack *e, uintptr_t call_site,
						       uintptr_t sp0, uintptr_t bp0, uint64_t *guess,
						       struct prof_stack_proof *proof)
{
	struct stack_cache *c = th->stack_cache;
	/* Both ways of recording call libunwind (record_by_rules() checks its walk with
	 * unw_backtrace): not while this thread holds the loader's lock. */
	if (prof_loader_lock_held(th))
		return prof_stack_at_uncached(th, call_site, guess);
	if (table && *guess)
		__builtin_prefetch(slot_at(*guess, 0, 0));
	void *buf[PROF_MAX_STACK_DEPTH + 16], **frames = buf;
	int n = record_by_rules(th, e, call_site, sp0, bp0, buf, &frames);
	if (!n) {
		if (!recording_begin())
			return prof_stack_at_uncached(th, call_site, guess);
		c->debt += RECORD_COST;
		c->recorded++;
		c->by_steps++;
		th->hook_site = call_site;
		prof_unwind_begin(th, (uintptr_t)__builtin_frame_address(0));
		n = unwind_recording(c, buf, (int)prof_cfg.stack_depth, call_site, sp0, bp0, e);
		prof_unwind_end(th);
		recording_end();
		frames = buf;
	}
	atomic_fetch_add_explicit(&cache_misses, 1, memory_order_relaxed);
	if (n <= 0)
		return 0;
	uint64_t pychain;
	n = prof_py_splice(th, frames, n, PROF_MAX_STACK_DEPTH + 16 - (int)(frames - buf), &pychain);
	*guess = hash_frames(frames, n);
	uint32_t id = intern(th, frames, n, *guess);
	if (id && id != ID_FAILED && e->n && entry_seal(e, call_site, sp0, bp0)) {
		e->hash = *guess;
		e->id = id;
		e->python = pychain != 0;
		if (pychain)
			*entry_pychain_at(e) = pychain;
		if (cache_keep(th, e, bp0) && proof)
			proof_of(th->stack_cache, e, proof);
		if (!pychain)
			book_add(th, e, bp0, frames, n);
	}
	return id;
}

/* Not inlined into prof_stack_from(), which jumps here: one copy, with cache_find() and the
 * rest inlined. */
__attribute__((noinline)) uint32_t prof_stack_proven(struct prof_thread *th, uintptr_t call_site,
						     const uintptr_t *hook,
						     struct prof_stack_proof *proof)
{
	if (proof)
		proof->at = 0;
	if (prof_cfg.stack_depth == 0)
		return 0;
	/* A full trace takes no STACK record and no event that would name one: skip unwinding,
	 * unless the thread's chunk still has room for both. */
	if (prof_writer_full() &&
	    !prof_writer_has_room(th, (uint32_t)sizeof(struct prof_rec_stack) +
					  8u * prof_cfg.stack_depth + 256u))
		return 0;
	prof_modules_rescan_if_stale();  /* a CPU sample ran in a library loaded since */
	uint64_t *guess = prediction(th, call_site);
	uintptr_t sp0, bp0;
	struct cached_stack *e = NULL;
	/* The hook's frame, where given, returns to call_site (checked: else it is found). */
	if (hook && hook[1] == call_site) {
		sp0 = (uintptr_t)(hook + 2);
		bp0 = hook[0];
	} else {
		hook = NULL;
	}
	/* The recording unwind (unw_step) takes more stack than unw_backtrace: not where the
	 * program sized the thread's stack and little of it is left. */
	if (!prof_cfg.stack_cache || !call_site || (!hook && !hook_frame(call_site, &sp0, &bp0)) ||
	    (th->stack_lo && sp0 < th->stack_lo + CACHE_STACK_NEEDED))
		return prof_stack_at_uncached(th, call_site, guess);
	/* The Python frames live outside the stack: a hit that went through the interpreter's
	 * loop holds only with the same ones. Else the native part is known to unwind well:
	 * the fast unwind, not a second recording of it (which would hide this entry). */
	int coarse;
	uint64_t key, chain;
	e = cache_find(th, call_site, sp0, bp0, &coarse, &key);
	if (coarse)
		return prof_stack_at_uncached(th, call_site, guess);
	if (e && e->python && (chain = prof_py_chain_now(th)) != entry_pychain(e)) {
		uint32_t id = py_variant(th, e, chain, call_site, guess);
		return hit_checked(th, call_site, id, *guess, guess, " with other Python frames");
	}
	if (e) {
		if (proof)
			proof_of(th->stack_cache, e, proof);
		return hit_checked(th, call_site, e->id, e->hash, guess, "");
	}
	if (!(e = cache_room(th)))
		return prof_stack_at_uncached(th, call_site, guess);
	struct stack_cache *c = th->stack_cache;
	uint64_t *seen = &c->seen[(key >> 16) % (SEEN_BITS / 64)], bit = 1ull << (key & 63);
	int first = key && !(*seen & bit);
	if (first)
		*seen |= bit;
	if (unlikely(atomic_load_explicit(&book, memory_order_relaxed) != NULL) &&
	    (first || c->book_hits < BOOK_SHORT)) {
		uint32_t id = book_hit(th, call_site, sp0, bp0, guess);
		if (id)
			return hit_checked(th, call_site, id, *guess, guess, " from the fork family's book");
	}
	if (first && !book_records(th)) {
		c->first_seen++;
		return prof_stack_at_uncached(th, call_site, guess);
	}
	if (c->overflowed && c->debt > DEBT_MAX &&
	    ++c->unrecorded % (RECORD_EVERY * (uint32_t)(c->debt / DEBT_MAX))) {
		c->throttled++;
		return prof_stack_at_uncached(th, call_site, guess);
	}
	return record_miss(th, e, call_site, sp0, bp0, guess, proof);
}

uint32_t prof_stack_from(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook)
{
	return prof_stack_proven(th, call_site, hook, NULL);
}

uint32_t prof_stack_again(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook,
			  const struct prof_stack_proof *proof)
{
	const struct stack_cache *c = th->stack_cache;
	if (!proof->at || !c || proof->epoch != c->epoch || hook[1] != call_site)
		return 0;
	const struct cached_stack *e = (const struct cached_stack *)(c->arena + proof->at - 1);
	return cached_holds(e, call_site, (uintptr_t)(hook + 2), hook[0]) ? e->id : 0;
}

/* A proof names a sealed entry, whose id is never 0. */
int prof_stack_still(struct prof_thread *th, uintptr_t call_site, const uintptr_t *hook,
		     const struct prof_stack_proof *proof)
{
	return prof_cfg.stack_depth == 0 ||  /* no stacks: every call's is 0 */
	       prof_stack_again(th, call_site, hook, proof) != 0;
}

_Atomic uint64_t prof_tight_stacks, prof_loader_stacks;

/* The stack of a call that cannot be unwound: too little of the thread's stack is left
 * (prof_tight_stacks), or the thread holds the loader's lock (prof_loader_stacks: inside a
 * dl_iterate_phdr callback). Its call site alone (counted, and said at exit). */
static __attribute__((noinline)) uint32_t call_site_alone(struct prof_thread *th,
							  uintptr_t call_site, uint64_t *guess,
							  _Atomic uint64_t *why)
{
	atomic_fetch_add_explicit(why, 1, memory_order_relaxed);
	if (!call_site)
		return 0;
	void *frame = (void *)call_site;
	*guess = hash_frames(&frame, 1);
	return intern(th, &frame, 1, *guess);
}

/* The frames of the call at call_site by libunwind's fast backtrace (unw_backtrace()), ours
 * left out, at most the configured depth: *frames points into buf. Their count. */
static int backtrace_frames(struct prof_thread *th, uintptr_t call_site,
			    void *buf[PROF_MAX_STACK_DEPTH + 16], void ***frames)
{
	/* A CPU sample taken meanwhile must not unwind too (libunwind's per-thread cache). */
	th->hook_site = call_site;
	prof_unwind_begin(th, (uintptr_t)__builtin_frame_address(0));
	int n = unw_backtrace(buf, (int)prof_cfg.stack_depth + 16);
	prof_unwind_end(th);
	int skip = 0;
	while (skip < n && prof_addr_is_ours((uintptr_t)buf[skip]))
		skip++;
	*frames = buf + skip;
	n -= skip;
	return n > (int)prof_cfg.stack_depth ? (int)prof_cfg.stack_depth : n;
}

/* The stack by libunwind's fast backtrace, without the cache. */
static __attribute__((noinline)) uint32_t unwind_fast(struct prof_thread *th, uintptr_t call_site,
						      uint64_t *guess)
{
	if (table && *guess && call_site)
		__builtin_prefetch(slot_at(*guess, 0, 0));
	void *buf[PROF_MAX_STACK_DEPTH + 16], **frames;
	int n = backtrace_frames(th, call_site, buf, &frames);
	if (n <= 0)
		return 0;
	uint64_t pychain;
	n = prof_py_splice(th, frames, n, PROF_MAX_STACK_DEPTH + 16 - (int)(frames - buf), &pychain);
	*guess = hash_frames(frames, n);
	return intern(th, frames, n, *guess);
}

/* The stack without the cache: unwound, or where little of the thread's stack is left, the
 * call site alone. */
/* unw_backtrace() has run: libunwind binds its functions lazily, and the first call also
 * runs the dynamic linker (a few KiB of stack) and sets up its own cache. */
static _Atomic int backtrace_bound;

static uint32_t prof_stack_at_uncached(struct prof_thread *th, uintptr_t call_site, uint64_t *guess)
{
	/* Its first call takes twice the room: the first hook of a deep recursion waits. */
	if (prof_stack_tight(th, atomic_load_explicit(&backtrace_bound, memory_order_relaxed) ?
					 PROF_UNWIND_ROOM : 2 * PROF_UNWIND_ROOM))
		return call_site_alone(th, call_site, guess, &prof_tight_stacks);
	if (unlikely(prof_loader_lock_held(th)))
		return call_site_alone(th, call_site, guess, &prof_loader_stacks);
	uint32_t id = unwind_fast(th, call_site, guess);
	atomic_store_explicit(&backtrace_bound, 1, memory_order_relaxed);
	return id;
}

/* The id of a slot another thread claimed and is writing the STACK record of, once written:
 * two threads that meet a new stack at once (the workers of a pool, started together) would
 * otherwise give it two ids, and every report would list the one call path as two sites. The
 * writer needs the time of a record; one that does not come within a few descheduled slices
 * (or whose record was lost) gets 0, and the caller writes its own copy. Not from a signal
 * handler, which may have interrupted that very writer. */
static uint32_t id_when_written(struct slot *s)
{
	for (unsigned spins = 0; spins < 256 + 64;) {
		uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
		if (id)
			return id == ID_FAILED ? 0 : id;
		prof_backoff(&spins);
	}
	return 0;
}

/* Finds the stack in the table, or claims a slot and writes it. Lock-free, so a signal
 * handler may intern while the thread it interrupted was interning too. */
static uint32_t intern(struct prof_thread *th, void *const *frames, int n, uint64_t h)
{
	if (!table)
		return write_stack(th, frames, n);
	for (int level = 0; level < table_levels; level++) {
		for (uint32_t i = 0; i < levels[level].probes; i++) {
			struct slot *s = slot_at(h, level, i);
			uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
			if (cur == 0) {
				if (!atomic_compare_exchange_strong(&s->hash, &cur, h)) {
					if (cur != h)
						continue;
				} else {
					return publish(th, s, frames, n);
				}
			}
			if (cur == h) {
				uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
				/* Its record was lost: one lookup (the one that takes the mark)
				 * writes it again, and the slot serves every later one. */
				if (id == ID_FAILED) {
					if (atomic_compare_exchange_strong(&s->id, &id, 0))
						return publish(th, s, frames, n);
				}
				if (!id && !th->in_signal)
					id = id_when_written(s);
				return id ? id : write_stack(th, frames, n);
			}
		}
	}
	return write_stack(th, frames, n);  /* table crowded here: correct, just not shared */
}

/* The stack this thread last unwound at call_site, as prof_stack_at() left it in the table,
 * or 0: what a CPU sample that interrupts that unwinding takes instead. Reads only. */
uint32_t prof_stack_last_at(struct prof_thread *th, uintptr_t call_site)
{
	uint64_t h = call_site ? *prediction(th, call_site) : 0;
	if (!h || !table)
		return 0;
	for (int level = 0; level < table_levels; level++) {
		for (uint32_t i = 0; i < levels[level].probes; i++) {
			struct slot *s = slot_at(h, level, i);
			uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
			if (cur == 0)
				return 0;
			if (cur == h) {
				uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
				return id == ID_FAILED ? 0 : id;
			}
		}
	}
	return 0;
}

uint32_t prof_stack_intern(struct prof_thread *th, void *const *frames, int n)
{
	if (n <= 0)
		return 0;
	if (prof_py_on) {  /* a CPU sample in a Python process: its Python frames too */
		int cap = n + 128 < PROF_MAX_STACK_DEPTH ? n + 128 : PROF_MAX_STACK_DEPTH;
		void *buf[cap];
		uint64_t pychain;
		memcpy(buf, frames, (size_t)(n < cap ? n : cap) * sizeof(buf[0]));
		n = prof_py_splice(th, buf, n < cap ? n : cap, cap, &pychain);
		return intern(th, buf, n, hash_frames(buf, n));
	}
	return intern(th, frames, n, hash_frames(frames, n));
}

uint32_t prof_stack_here(struct prof_thread *th)
{
	return prof_stack_at(th, 0);
}
