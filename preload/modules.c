/* The loaded ELF objects, as MODULE records, so that stacks can be symbolized offline. The
 * table is append-only; a rescan (at start, when a stack has an unknown frame, after dlclose,
 * at exit) records what appeared and what went away. dlopen is not wrapped: glibc uses its
 * caller's address to find the RUNPATH to search, and a wrapper would change that. */
#include "prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODULES 4096

struct module {
	uintptr_t start, end, bias;
	uint64_t name_hash;
	int present;  /* read by any thread, cleared by a rescan: __atomic */
	int seen;  /* in the current rescan */
	const char *path;  /* the loader's name of it (valid while it is loaded), or ours */
	uint8_t build_id[20];
	uint32_t build_id_len;
};

static PROF_BULK struct module modules[MAX_MODULES];
static _Atomic uint32_t module_count;
/* The loader's counts of objects loaded and unloaded (dl_phdr_info) at the latest rescan: a
 * fork child that finds them the same describes the table's objects without a rescan. */
static unsigned long long scanned_adds, scanned_subs;
static int carried;  /* a fork child's table, its parent's and still true: not emptied */
static pthread_mutex_t rescan_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int prof_modules_stale;  /* prof_modules_mark_stale() */
static uintptr_t ours_start, ours_end;  /* set by a rescan, read by any thread: __atomic */

/* ---- the loader's lock ---------------------------------------------------------------------
 * The loader's write lock (dl_load_write_lock in ld.so's _rtld_global), which dl_iterate_phdr
 * and dlopen/dlclose hold while they walk or change the list of objects. libunwind (Debian's
 * build) takes a lock of its own in each step and, holding it, calls dl_iterate_phdr. So no
 * thread may unwind with libunwind while it holds the loader's lock, or while it is half way
 * through taking it: it would wait for libunwind's lock, held by another thread that waits
 * for the loader's, for ever (prof_loader_lock_busy() for CPU samples, prof_loader_lock_held()
 * for the hooks' stacks inside a dl_iterate_phdr callback: prof.h). It happened under mpirun (a dlclose unmapping an MCA
 * component met an allocation hook's unwind). The lock is found once: the one mutex in
 * _rtld_global that a dl_iterate_phdr callback owns. NULL where it is not found (another
 * libc): stacks are then unwound as before. */
const pthread_mutex_t *prof_loader_lock;

struct owner_search {
	const char *lo;
	size_t len;
	int tid;
	const pthread_mutex_t *found;
	int matches;
};

static int find_loader_lock(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	struct owner_search *a = arg;
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <= a->len; off += 8) {
		const pthread_mutex_t *m = (const void *)(a->lo + off);
		if (m->__data.__owner == a->tid && m->__data.__lock != 0 && m->__data.__count >= 1) {
			a->found = m;
			a->matches++;
		}
	}
	return 1;  /* once is enough */
}

void prof_loader_lock_find(void)
{
	if (prof_loader_lock)
		return;  /* a fork child's: the same */
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	void *rtld = dlsym(RTLD_DEFAULT, "_rtld_global");
	if (!rtld || !dladdr1(rtld, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return;
	struct owner_search a = { rtld, sym->st_size, (int)gettid(), NULL, 0 };
	prof_dl_iterate(find_loader_lock, &a);
	if (a.matches == 1 && a.found->__data.__owner != a.tid)  /* held inside the walk only */
		prof_loader_lock = a.found;
	else
		prof_dbg(1, "the loader's lock was not found (%d candidates): stacks are unwound "
			 "even inside dlopen, dlclose and dl_iterate_phdr", a.matches);
}

int prof_addr_is_ours(uintptr_t ip)
{
	return ip >= __atomic_load_n(&ours_start, __ATOMIC_RELAXED) &&
	       ip < __atomic_load_n(&ours_end, __ATOMIC_RELAXED);
}

int prof_addr_known(uintptr_t ip)
{
	uint32_t n = atomic_load_explicit(&module_count, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&modules[i].present, __ATOMIC_RELAXED) && ip >= modules[i].start && ip < modules[i].end)
			return 1;
	return 0;
}

uint32_t prof_modules_known(void)
{
	return atomic_load_explicit(&module_count, memory_order_acquire);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* The GNU build-id note of a loaded object, read from its mapped PT_NOTE segments. */
static uint32_t find_build_id(const struct dl_phdr_info *info, uint8_t out[24])
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);
			const char *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				uint32_t len = nh->n_descsz > 20 ? 20 : nh->n_descsz;
				memcpy(out, desc, len);
				return len;
			}
			p = next;
		}
	}
	return 0;
}

static void write_module(uint32_t id, const struct module *m, const char *path,
			 const uint8_t *build_id, uint32_t build_id_len)
{
	struct prof_thread *th = prof_thread_get();
	size_t len = strlen(path) + 1;
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_module) + len));
	struct prof_rec_module *r = prof_reserve(th, size);
	if (!r)
		return;
	r->start = m->start;
	r->end = m->end;
	r->bias = m->bias;
	r->id = id;
	r->build_id_len = build_id_len;
	memset(r->build_id, 0, sizeof(r->build_id));
	memcpy(r->build_id, build_id, build_id_len);
	memset(r->path, 0, size - sizeof(*r));
	memcpy(r->path, path, len);
	prof_commit(r, PROF_REC_MODULE, 0, size, prof_now());
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
	}
	if (hi == 0)
		return 0;
	const char *path = info->dlpi_name;
	if (!path || !*path)
		path = prof_exe_path();  /* the main program */
	else if (!strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
		path = "[vdso]";
	uint64_t nh = hash_str(path);
	uint32_t n = atomic_load(&module_count);
	for (uint32_t i = 0; i < n; i++) {
		struct module *m = &modules[i];
		if (m->present && m->start == lo && m->bias == info->dlpi_addr && m->name_hash == nh) {
			m->seen = 1;
			return 0;
		}
	}
	if (n >= MAX_MODULES)
		return 0;
	struct module *m = &modules[n];
	*m = (struct module){ .start = lo, .end = hi, .bias = info->dlpi_addr, .name_hash = nh,
			      .present = 1, .seen = 1 };
	uint8_t build_id[24] = { 0 };
	uint32_t blen = find_build_id(info, build_id);
	m->path = path;
	memcpy(m->build_id, build_id, sizeof(m->build_id));
	m->build_id_len = blen;
	atomic_store_explicit(&module_count, n + 1, memory_order_release);
	write_module(n, m, path, build_id, blen);
	if ((uintptr_t)prof_addr_is_ours >= lo && (uintptr_t)prof_addr_is_ours < hi) {
		__atomic_store_n(&ours_end, hi, __ATOMIC_RELAXED);
		__atomic_store_n(&ours_start, lo, __ATOMIC_RELAXED);
	}
	return 0;
}

/* ---- the objects' segments, which an unwind reads without a check (stacks.c) ---------------
 * Each rescan builds them, sorted, into the buffer readers are not using and publishes it by
 * the generation (even: segs[(gen >> 1) & 1]; odd: none to trust). A dlclose withdraws them
 * before the object goes, and a rescan that began before that publishes nothing. */
#define SEGS_MAX 4096
struct seg {
	uintptr_t lo, hi;
};
static PROF_BULK struct seg segs[2][SEGS_MAX];
static uint32_t nsegs[2];
static _Atomic uint32_t seg_gen;  /* 0: never built */
static _Atomic int dlcloses;      /* in progress */
_Atomic uint32_t prof_code_unloads;
static _Atomic uint32_t seg_hint; /* the index of the segment found last: looked at first */

static int collect_segs(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uint32_t b = *(uint32_t *)arg;
	for (int i = 0; i < info->dlpi_phnum && nsegs[b] < SEGS_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || !ph->p_memsz)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		/* whole pages: the file's part, then the zero-filled rest (.bss) */
		struct seg g = { s & ~(uintptr_t)4095, (s + ph->p_memsz + 4095) & ~(uintptr_t)4095 };
		uint32_t k = nsegs[b]++;
		for (; k > 0 && segs[b][k - 1].lo > g.lo; k--)
			segs[b][k] = segs[b][k - 1];
		segs[b][k] = g;
	}
	return 0;
}

static void segs_rebuild(void)
{
	uint32_t gen = atomic_load(&seg_gen);
	if (atomic_load(&dlcloses))
		return;
	uint32_t next = (gen | 1) + 1, b = (next >> 1) & 1;
	nsegs[b] = 0;
	prof_dl_iterate(collect_segs, &b);
	atomic_compare_exchange_strong(&seg_gen, &gen, next);
}

static void segs_withdraw(void)
{
	uint32_t gen = atomic_load(&seg_gen);
	while (!atomic_compare_exchange_weak(&seg_gen, &gen, (gen | 1) + 2))
		;
}

int prof_addr_in_objects(uintptr_t addr, size_t len)
{
	uint32_t gen = atomic_load_explicit(&seg_gen, memory_order_acquire);
	if (!gen || (gen & 1))
		return 0;
	const struct seg *g = segs[(gen >> 1) & 1];
	uint32_t n = nsegs[(gen >> 1) & 1], k = atomic_load_explicit(&seg_hint, memory_order_relaxed);
	if (addr + len < addr)
		return 0;
	if (k >= n || g[k].lo > addr || addr + len > g[k].hi) {
		uint32_t lo = 0, hi = n;
		while (lo < hi) {  /* the first segment that starts above addr */
			uint32_t mid = (lo + hi) / 2;
			if (g[mid].lo <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0 || addr + len > g[lo - 1].hi)
			return 0;
		atomic_store_explicit(&seg_hint, lo - 1, memory_order_relaxed);
	}
	return atomic_load_explicit(&seg_gen, memory_order_acquire) == gen;
}

/* The loader's counts of loads and unloads, the same in every object's dl_phdr_info. */
static int loader_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *counts = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		counts[0] = info->dlpi_adds;
		counts[1] = info->dlpi_subs;
	}
	return 1;
}

void prof_loader_counts(unsigned long long counts[2])
{
	counts[0] = counts[1] = 0;
	prof_dl_iterate(loader_counts, counts);
}

/* Whether the table and the segments are as the loader's objects are now: nothing loaded or
 * unloaded since the latest rescan (counts, from loader_counts()), the segments published. */
static int table_current(const unsigned long long counts[2])
{
	uint32_t gen = atomic_load(&seg_gen);
	return counts[0] && counts[0] == scanned_adds && counts[1] == scanned_subs && gen &&
	       !(gen & 1) && atomic_load(&module_count) > 0;
}

/* counts: the loader's, taken before (a dlopen meanwhile leaves them stale: rescanned again). */
static void rescan_locked(const unsigned long long counts[2])
{
	uint32_t n = atomic_load(&module_count);
	for (uint32_t i = 0; i < n; i++)
		modules[i].seen = 0;
	prof_dl_iterate(scan_one, NULL);
	n = atomic_load(&module_count);
	for (uint32_t i = 0; i < n; i++) {
		if (!modules[i].present || modules[i].seen)
			continue;
		__atomic_store_n(&modules[i].present, 0, __ATOMIC_RELAXED);
		struct prof_thread *th = prof_thread_get();
		struct prof_rec_module_unload *r = prof_reserve(th, sizeof(*r));
		if (r) {
			r->id = i;
			r->pad = 0;
			prof_commit(r, PROF_REC_MODULE_UNLOAD, 0, sizeof(*r), prof_now());
		}
	}
	segs_rebuild();
	scanned_adds = counts[0];
	scanned_subs = counts[1];
}

/* Never waits: the caller may be inside dlopen, holding the loader lock that a rescan in
 * another thread (holding ours) is waiting for. A skipped rescan is retried on a later stack. */
void prof_modules_rescan(void)
{
	if (pthread_mutex_trylock(&rescan_lock) != 0)
		return;
	atomic_store(&prof_modules_stale, 0);
	/* Nothing loaded or unloaded since: the walk would find what the table holds (every
	 * process's exit asks, and a CPU sample in code of no object, JIT code, asks again). */
	unsigned long long counts[2];
	prof_loader_counts(counts);
	if (!table_current(counts))
		rescan_locked(counts);
	pthread_mutex_unlock(&rescan_lock);
}

/* A CPU sample saw a frame in no module we described: its signal handler cannot rescan
 * (that takes locks), so the next stack unwound outside a handler does. */
void prof_modules_mark_stale(void)
{
	atomic_store_explicit(&prof_modules_stale, 1, memory_order_relaxed);
}

void prof_modules_init(void)
{
	prof_exe_path();  /* read now, not inside the rescan's dl_iterate_phdr */
	pthread_mutex_lock(&rescan_lock);
	if (carried) {  /* a fork child's: the same objects, described into its own trace */
		uint32_t n = atomic_load(&module_count);
		for (uint32_t i = 0; i < n; i++)
			write_module(i, &modules[i], modules[i].path, modules[i].build_id,
				     modules[i].build_id_len);
		carried = 0;
	} else {
		unsigned long long counts[2];
		prof_loader_counts(counts);
		rescan_locked(counts);
	}
	pthread_mutex_unlock(&rescan_lock);
}

/* Fork child: the parent's records went to the parent's trace; everything is described again.
 * Where the loader has loaded and unloaded nothing since the parent's latest rescan, and every
 * object of its table is still loaded, the table is the child's too: a rescan read every
 * object's headers and notes again, pages a fork child faults in, and the segments twice. */
void prof_modules_reset(void)
{
	pthread_mutex_init(&rescan_lock, NULL);
	atomic_store(&dlcloses, 0);  /* another thread's, which the child does not have */
	uint32_t n = atomic_load(&module_count);
	carried = 1;
	for (uint32_t i = 0; carried && i < n; i++)
		carried = __atomic_load_n(&modules[i].present, __ATOMIC_RELAXED);
	if (carried) {
		unsigned long long counts[2];
		prof_loader_counts(counts);
		carried = table_current(counts);
	}
	if (!carried)
		atomic_store(&module_count, 0);
}

/* ---- TLS modules that exist only because we are loaded --------------------------------- */

struct tls_scan {
	uintptr_t ours;     /* an address inside libprof.so */
	const char *soname; /* of the dependency being asked about */
	int needed;         /* some other object lists it in DT_NEEDED */
	size_t modid;       /* its TLS module id, 0 if it has no TLS (or is not loaded) */
};

static const char *dyn_string(const ElfW(Dyn) *dyn, ElfW(Addr) off)
{
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			return (const char *)d->d_un.d_ptr + off;
	return NULL;
}

static int scan_needed(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_scan *ts = arg;
	const ElfW(Dyn) *dyn = NULL;
	int is_ours = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)s;
		if (ph->p_type == PT_LOAD && ts->ours >= s && ts->ours < s + ph->p_memsz)
			is_ours = 1;
	}
	if (!dyn || is_ours || !info->dlpi_name || !strncmp(info->dlpi_name, "linux-vdso", 10))
		return 0;
	const char *base = strrchr(info->dlpi_name, '/');
	if (!strcmp(base ? base + 1 : info->dlpi_name, ts->soname) &&
	    size >= offsetof(struct dl_phdr_info, dlpi_tls_data))
		ts->modid = info->dlpi_tls_modid;
	const char *strtab = dyn_string(dyn, 0);
	for (const ElfW(Dyn) *d = dyn; strtab && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && !strcmp(strtab + d->d_un.d_val, ts->soname))
			ts->needed = 1;
	return 0;
}

/* How many TLS modules the process has because libprof.so was preloaded: ours, and each of
 * our dependencies with TLS that nothing else in the process needs (libunwind). Found by
 * walking the loaded objects: a dlopen() of one (even RTLD_NOLOAD) makes the loader allocate
 * its list of initializers, which the exit's __libc_freeres then frees as the program's. */
int prof_tls_modules_added(void)
{
	struct tls_scan ts = { (uintptr_t)prof_tls_modules_added, "libunwind.so.8", 0, 0 };
	prof_dl_iterate(scan_needed, &ts);
	return 1 + (ts.modid != 0 && !ts.needed);  /* 1: libprof.so's own prof_self */
}

struct range_scan {
	uintptr_t addr, lo, hi;
};

static int scan_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct range_scan *rs = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		lo = s < lo ? s : lo;
		hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
	}
	if (rs->addr >= lo && rs->addr < hi) {
		rs->lo = lo;
		rs->hi = hi;
		return 1;
	}
	return 0;
}

/* The address range of the object that contains addr; 0 if none does. */
int prof_module_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	struct range_scan rs = { addr, 0, 0 };
	if (!prof_dl_iterate(scan_range, &rs))
		return 0;
	*lo = rs.lo;
	*hi = rs.hi;
	return 1;
}

PROF_EXPORT int dlclose(void *handle)
{
	static int (*real)(void *);
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	atomic_fetch_add(&dlcloses, 1);
	segs_withdraw();
	int rc = real(handle);
	atomic_fetch_add(&prof_code_unloads, 1);
	atomic_fetch_sub(&dlcloses, 1);
	if (atomic_load(&prof_active)) {
		int saved = errno;
		struct prof_thread *th = prof_thread_get();
		prof_hook_enter(th);
		prof_modules_rescan();
		th->in_hook--;
		errno = saved;
	}
	return rc;
}
