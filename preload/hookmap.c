/* The db and http families' shared pieces (db.h): a lock-free map in memory of our own, the
 * real functions of privately loaded libraries, and interned SQL text. */
#include "db.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdatomic.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof_norm.h"

#define MAP_PROBES 32

static int map_ready(struct prof_map *m)
{
	int st = atomic_load_explicit(&m->state, memory_order_acquire);
	if (st == 2)
		return 1;
	if (st != 0 || !atomic_compare_exchange_strong(&m->state, &st, 1))
		return 0;  /* another thread is making it, or it failed: skip this event */
	size_t keys = (size_t)m->slots * sizeof(uint64_t);
	void *p = mmap(NULL, keys + (size_t)m->slots * m->vsize, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		atomic_store(&m->state, 3);
		return 0;
	}
	/* Its keys are the program's handles (statements, connections), in its heap: never a
	 * root of the leak scan, or a handle the program lost would look reachable. */
	prof_own_memory(p, keys + (size_t)m->slots * m->vsize);
	m->keys = p;
	m->vals = (char *)p + keys;
	atomic_store_explicit(&m->state, 2, memory_order_release);
	return 1;
}

static uint32_t map_slot(const struct prof_map *m, uint64_t key)
{
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 32;
	return (uint32_t)(key % m->slots);
}

void *prof_map_get(struct prof_map *m, uint64_t key)
{
	if (prof_map_empty(m))
		return NULL;
	uint32_t pos = map_slot(m, key);
	for (int i = 0; i < MAP_PROBES; i++, pos = (pos + 1) % m->slots) {
		uint64_t k = atomic_load_explicit(&m->keys[pos], memory_order_acquire);
		if (k == key)
			return m->vals + (size_t)pos * m->vsize;
		if (k == 0)
			return NULL;
	}
	return NULL;
}

void *prof_map_put(struct prof_map *m, uint64_t key, int *created)
{
	*created = 0;
	void *v = prof_map_get(m, key);
	if (v || !map_ready(m))
		return v;
	uint32_t pos = map_slot(m, key);
	for (int i = 0; i < MAP_PROBES; i++, pos = (pos + 1) % m->slots) {
		uint64_t k = atomic_load_explicit(&m->keys[pos], memory_order_relaxed);
		if ((k == 0 || k == 1) && atomic_compare_exchange_strong(&m->keys[pos], &k, key)) {
			v = m->vals + (size_t)pos * m->vsize;
			memset(v, 0, m->vsize);
			*created = 1;
			return v;
		}
	}
	return NULL;
}

void prof_map_del(struct prof_map *m, uint64_t key)
{
	if (prof_map_empty(m))
		return;
	uint32_t pos = map_slot(m, key);
	for (int i = 0; i < MAP_PROBES; i++, pos = (pos + 1) % m->slots) {
		uint64_t k = atomic_load_explicit(&m->keys[pos], memory_order_relaxed);
		if (k == key) {
			atomic_store_explicit(&m->keys[pos], 1, memory_order_release);
			return;
		}
		if (k == 0)
			return;
	}
}

/* ---- real functions --------------------------------------------------------------------- */

#define OBJECTS_MAX 512
struct objects {
	const char *names[OBJECTS_MAX];
	int n;
};

static int list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct objects *o = arg;
	if (info->dlpi_name && info->dlpi_name[0] && o->n < OBJECTS_MAX)
		o->names[o->n++] = info->dlpi_name;
	return 0;
}

void *prof_dlsym_optional(void *handle, const char *name)
{
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);
	void *p = dlsym(handle, name);
	if (!p)
		(void)dlsym(RTLD_NEXT, "free");  /* found: the failure's message goes now */
	th->in_hook--;
	return p;
}

void *prof_real_sym(const char *name)
{
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);  /* dlsym and dlopen may allocate: not the program's */
	void *p = prof_dlsym_optional(RTLD_NEXT, name);
	if (!p) {
		/* Rare (once per function): one list for all threads, neither 4 KiB of the
		 * program's stack nor of every thread's static TLS (small thread stacks hold it). */
		static PROF_BULK struct objects objs;
		static atomic_flag objs_lock = ATOMIC_FLAG_INIT;
		while (atomic_flag_test_and_set_explicit(&objs_lock, memory_order_acquire))
			sched_yield();
		objs.n = 0;
		prof_dl_iterate(list_object, &objs);
		for (int i = 0; i < objs.n && !p; i++) {
			void *h = dlopen(objs.names[i], RTLD_LAZY | RTLD_NOLOAD);
			if (!h)
				continue;
			p = prof_dlsym_optional(h, name);
			if (p && prof_addr_is_ours((uintptr_t)p))
				p = NULL;
			dlclose(h);
		}
		atomic_flag_clear_explicit(&objs_lock, memory_order_release);
	}
	th->in_hook--;
	return p;
}

/* ---- SQL text --------------------------------------------------------------------------- */

int db_literals;

uint64_t prof_hash(const char *s, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h < 2 ? h + 2 : h;
}

/* Ids whose DB_SQL this process has written; cleared in a fork child (a new trace). */
#define SEEN_SLOTS 8192u
static PROF_BULK _Atomic uint64_t seen[SEEN_SLOTS];
static _Atomic uint32_t seen_pid;

static int seen_before(uint64_t id)
{
	uint32_t pid = prof_writer_pid();
	if (atomic_load_explicit(&seen_pid, memory_order_relaxed) != pid) {
		for (uint32_t i = 0; i < SEEN_SLOTS; i++)
			atomic_store_explicit(&seen[i], 0, memory_order_relaxed);
		atomic_store(&seen_pid, pid);
	}
	uint32_t pos = (uint32_t)(id % SEEN_SLOTS);
	for (uint32_t i = 0; i < 16; i++, pos = (pos + 1) % SEEN_SLOTS) {
		uint64_t k = atomic_load_explicit(&seen[pos], memory_order_relaxed);
		if (k == id)
			return 1;
		if (k == 0 && atomic_compare_exchange_strong(&seen[pos], &k, id))
			return 0;
		if (k == id)
			return 1;
	}
	return 0;  /* crowded: write it again, readers keep one */
}

uint64_t db_sql_id(struct prof_thread *th, unsigned system, const char *s, size_t n, int raw)
{
	char text[PROF_DB_SQL_MAX];
	size_t len;
	if (!s) {
		s = "";
		n = 0;
	}
	if (raw) {
		for (len = 0; len < n && len + 1 < sizeof(text) && s[len]; len++)
			text[len] = s[len];
		text[len] = '\0';
	} else {
		len = prof_sql_normalize(s, n, text, sizeof(text));
	}
	uint64_t id = prof_hash(text, len, system);
	if (seen_before(id))
		return id;
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_db_sql) + len + 1));
	struct prof_rec_db_sql *r = prof_reserve(th, size);
	if (!r)
		return id;
	r->id = id;
	memcpy(r->text, text, len);
	memset(r->text + len, 0, size - sizeof(*r) - len);
	prof_commit(r, PROF_REC_DB_SQL, system, size, prof_now());
	return id;
}
