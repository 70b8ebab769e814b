/* NVTX: libprof is its own NVTX injection library. NVTX v3 (header-only, compiled into the
 * program or its libraries) asks getenv("NVTX_INJECTION64_PATH") on its first call; our getenv
 * answers with libprof's own path when the variable is unset, so the program's environment is
 * not changed. NVTX then calls InitializeInjectionNvtx2(), which fills its function tables with
 * the handlers below: push/pop and start/end ranges, marks, domains, registered strings. */
#include "cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <wchar.h>

extern char **environ;

/* ---- getenv ---------------------------------------------------------------------------- */

static char self_path[1024];

static const char *env_lookup(const char *name)
{
	size_t len = strlen(name);
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, len) && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

PROF_EXPORT char *getenv(const char *name)
{
	const char *v = env_lookup(name);
	if (unlikely(!v) && name[0] == 'N' && !strcmp(name, "NVTX_INJECTION64_PATH") &&
	    prof_enabled(PROF_EV_CUDA)) {
		if (!self_path[0]) {
			Dl_info info;
			if (dladdr((void *)env_lookup, &info) && info.dli_fname)
				strncpy(self_path, info.dli_fname, sizeof(self_path) - 1);
		}
		if (self_path[0])
			return self_path;
	}
	return (char *)v;
}

/* ---- event attributes ------------------------------------------------------------------ */

/* nvtxEventAttributes_t v2/v3: the fields we read. */
struct nvtx_attr {
	uint16_t version, size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type, reserved0;
	uint64_t payload;
	int32_t message_type;
	int32_t pad;
	const void *message;
};
_Static_assert(sizeof(struct nvtx_attr) == 48, "nvtxEventAttributes_t layout");
enum { MSG_ASCII = 1, MSG_UNICODE = 2, MSG_REGISTERED = 3 };

struct nvtx_domain {
	uint32_t name;  /* CUDA_NAME id */
};

/* Our own memory, never the program's allocator (its heap must not change): registered
 * strings, domains and per-thread range stacks live as long as the process; few and small. */
static void *nvtx_mem(size_t size)
{
	static _Atomic(char *) arena;
	static _Atomic size_t used;
	enum { ARENA = 4u << 20 };
	char *a = atomic_load(&arena);
	if (!a) {
		char *m = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		if (!atomic_compare_exchange_strong(&arena, &a, m))
			munmap(m, ARENA);  /* another thread won: a is theirs */
		else
			a = m;
	}
	size = (size + 15) & ~(size_t)15;
	size_t off = atomic_fetch_add(&used, size);
	return off + size <= ARENA ? a + off : NULL;  /* zeroed: fresh anonymous memory */
}

static char *copy_message(const char *s)
{
	size_t n = strlen(s ? s : "") + 1;
	char *c = nvtx_mem(n);
	if (c)
		memcpy(c, s ? s : "", n);
	return c;
}

#define MSG_MAX 128  /* a range's message as kept until the range ends (records cut it too) */

static void keep_message(char dst[MSG_MAX], const char *msg)
{
	snprintf(dst, MSG_MAX, "%s", msg ? msg : "");
}

/* A narrow copy of a wide message (non-ASCII shown as '?'). */
static void narrow(const wchar_t *w, char *out, size_t len)
{
	size_t i = 0;
	for (; w && w[i] && i + 1 < len; i++)
		out[i] = w[i] < 128 ? (char)w[i] : '?';
	out[i] = '\0';
}

static const char *attr_message(const struct nvtx_attr *a, char *buf, size_t len)
{
	if (!a || !a->message)
		return "";
	switch (a->message_type) {
	case MSG_ASCII:
	case MSG_REGISTERED:  /* our handle is the string itself */
		return a->message;
	case MSG_UNICODE:
		narrow(a->message, buf, len);
		return buf;
	default:
		return "";
	}
}

/* ---- ranges ---------------------------------------------------------------------------- */

#define MAX_DEPTH 64

struct nvtx_stack {
	uint32_t depth;
	uint64_t start[MAX_DEPTH];
	uint32_t domain[MAX_DEPTH];
	char msg[MAX_DEPTH][MSG_MAX];
};
static __thread struct nvtx_stack *nvtx_tls;

static void write_range(struct prof_thread *th, unsigned kind, uint64_t start, uint64_t end,
			uint32_t domain, uint32_t depth, const char *msg)
{
	size_t len = msg ? strnlen(msg, 1000) : 0;
	uint32_t size = prof_align8((uint32_t)(sizeof(struct prof_rec_cuda_nvtx) + len + 1));
	struct prof_rec_cuda_nvtx *r = prof_reserve(th, size);
	if (!r)
		return;
	r->start = start;
	r->end = end;
	r->domain = domain;
	r->depth = depth;
	memset(r->message, 0, size - sizeof(*r));
	if (len)
		memcpy(r->message, msg, len);
	prof_commit(r, PROF_REC_CUDA_NVTX, kind, size, end);
}

/* Recording state for a handler: NULL when not recording. */
static struct prof_thread *nvtx_enter(void)
{
	struct prof_thread *th = prof_recording(PROF_EV_CUDA);
	if (!th)
		return NULL;
	th = prof_thread_get();
	prof_hook_enter(th);
	return th;
}

static int push(uint32_t domain, const char *msg)
{
	uint64_t t = prof_now();
	struct prof_thread *th = nvtx_enter();
	if (!th)
		return 0;
	struct nvtx_stack *s = nvtx_tls;
	if (!s)
		s = nvtx_tls = nvtx_mem(sizeof(*s));
	int level = s ? (int)s->depth : 0;
	if (s) {
		if (s->depth < MAX_DEPTH) {
			s->start[s->depth] = t;
			s->domain[s->depth] = domain;
			keep_message(s->msg[s->depth], msg);
		}
		s->depth++;
	}
	th->in_hook--;
	return level;
}

static int pop(void)
{
	uint64_t t = prof_now();
	struct prof_thread *th = nvtx_enter();
	if (!th)
		return -1;
	struct nvtx_stack *s = nvtx_tls;
	int level = -1;
	if (s && s->depth) {
		level = (int)--s->depth;
		if (s->depth < MAX_DEPTH) {
			write_range(th, PROF_CUDA_NVTX_PUSH, s->start[s->depth], t, s->domain[s->depth],
				    s->depth, s->msg[s->depth]);
		}
	}
	th->in_hook--;
	return level;
}

static void mark(uint32_t domain, const char *msg)
{
	uint64_t t = prof_now();
	struct prof_thread *th = nvtx_enter();
	if (!th)
		return;
	write_range(th, PROF_CUDA_NVTX_MARK, t, t, domain, 0, msg);
	th->in_hook--;
}

/* Start/end ranges may end on another thread: a small table of open ones. */
#define OPEN_RANGES 1024
static PROF_BULK struct {
	_Atomic uint64_t id;  /* 0 = free */
	uint64_t start;
	uint32_t domain;
	char msg[MSG_MAX];
} open_ranges[OPEN_RANGES];
static _Atomic uint64_t next_range_id = 1;

static uint64_t range_start(uint32_t domain, const char *msg)
{
	uint64_t t = prof_now();
	struct prof_thread *th = nvtx_enter();
	uint64_t id = atomic_fetch_add(&next_range_id, 1);
	if (!th)
		return id;
	for (uint32_t n = 0, i = (uint32_t)id % OPEN_RANGES; n < OPEN_RANGES; n++, i = (i + 1) % OPEN_RANGES) {
		uint64_t expected = 0;
		if (atomic_load(&open_ranges[i].id) == 0 &&
		    atomic_compare_exchange_strong(&open_ranges[i].id, &expected, ~0ull)) {
			open_ranges[i].start = t;
			open_ranges[i].domain = domain;
			keep_message(open_ranges[i].msg, msg);
			atomic_store(&open_ranges[i].id, id);
			break;
		}
	}
	th->in_hook--;
	return id;
}

static void range_end(uint64_t id)
{
	uint64_t t = prof_now();
	struct prof_thread *th = nvtx_enter();
	if (!th)
		return;
	for (uint32_t n = 0, i = (uint32_t)id % OPEN_RANGES; n < OPEN_RANGES; n++, i = (i + 1) % OPEN_RANGES) {
		if (atomic_load(&open_ranges[i].id) != id)
			continue;
		write_range(th, PROF_CUDA_NVTX_RANGE, open_ranges[i].start, t, open_ranges[i].domain,
			    0, open_ranges[i].msg);
		atomic_store(&open_ranges[i].id, 0);
		break;
	}
	th->in_hook--;
}

static uint32_t domain_id(const struct nvtx_domain *d)
{
	return d ? d->name : 0;
}

/* ---- the handlers NVTX calls ----------------------------------------------------------- */

static void h_mark_ex(const struct nvtx_attr *a)
{
	char buf[256];
	mark(0, attr_message(a, buf, sizeof(buf)));
}
static void h_mark_a(const char *m) { mark(0, m); }
static void h_mark_w(const wchar_t *m)
{
	char buf[256];
	narrow(m, buf, sizeof(buf));
	mark(0, buf);
}
static uint64_t h_start_ex(const struct nvtx_attr *a)
{
	char buf[256];
	return range_start(0, attr_message(a, buf, sizeof(buf)));
}
static uint64_t h_start_a(const char *m) { return range_start(0, m); }
static uint64_t h_start_w(const wchar_t *m)
{
	char buf[256];
	narrow(m, buf, sizeof(buf));
	return range_start(0, buf);
}
static void h_end(uint64_t id) { range_end(id); }
static int h_push_ex(const struct nvtx_attr *a)
{
	char buf[256];
	return push(0, attr_message(a, buf, sizeof(buf)));
}
static int h_push_a(const char *m) { return push(0, m); }
static int h_push_w(const wchar_t *m)
{
	char buf[256];
	narrow(m, buf, sizeof(buf));
	return push(0, buf);
}
static int h_pop(void) { return pop(); }

static void h_dmark_ex(struct nvtx_domain *d, const struct nvtx_attr *a)
{
	char buf[256];
	mark(domain_id(d), attr_message(a, buf, sizeof(buf)));
}
static uint64_t h_dstart_ex(struct nvtx_domain *d, const struct nvtx_attr *a)
{
	char buf[256];
	return range_start(domain_id(d), attr_message(a, buf, sizeof(buf)));
}
static void h_dend(struct nvtx_domain *d, uint64_t id)
{
	(void)d;
	range_end(id);
}
static int h_dpush_ex(struct nvtx_domain *d, const struct nvtx_attr *a)
{
	char buf[256];
	return push(domain_id(d), attr_message(a, buf, sizeof(buf)));
}
static int h_dpop(struct nvtx_domain *d)
{
	(void)d;
	return pop();
}
/* A registered string's handle is a copy of the string (MSG_REGISTERED reads it as one). */
static const char *h_dregister_a(struct nvtx_domain *d, const char *s)
{
	(void)d;
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);
	char *copy = copy_message(s ? s : "");
	th->in_hook--;
	return copy;
}
static struct nvtx_domain *h_dcreate_a(const char *name)
{
	struct prof_thread *th = &prof_self;
	prof_hook_enter(th);
	struct nvtx_domain *d = nvtx_mem(sizeof(*d));
	if (d && prof_enabled(PROF_EV_CUDA))
		d->name = cuda_name(name ? name : "", PROF_CUDA_NAME_DOMAIN);
	th->in_hook--;
	return d;
}
static void h_ddestroy(struct nvtx_domain *d)
{
	(void)d;  /* handles may still be in records' future: keep */
}

/* ---- injection entry point ------------------------------------------------------------- */

typedef void (*nvtx_fn)(void);
struct nvtx_callbacks_table {
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtx_fn ***table, unsigned *size);
};
enum { MODULE_CORE = 1, MODULE_CORE2 = 5, ETID_CALLBACKS = 1 };

static void fill(nvtx_fn **table, unsigned size, unsigned idx, nvtx_fn f)
{
	if (table && idx <= size && table[idx])
		*table[idx] = f;
}

PROF_EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t))
{
	if (!get_export_table)
		return 0;
	const struct nvtx_callbacks_table *cb = get_export_table(ETID_CALLBACKS);
	if (!cb || !cb->get_module_function_table)
		return 0;
	nvtx_fn **t = NULL;
	unsigned n = 0;
	if (cb->get_module_function_table(MODULE_CORE, &t, &n)) {
		fill(t, n, 1, (nvtx_fn)h_mark_ex);
		fill(t, n, 2, (nvtx_fn)h_mark_a);
		fill(t, n, 3, (nvtx_fn)h_mark_w);
		fill(t, n, 4, (nvtx_fn)h_start_ex);
		fill(t, n, 5, (nvtx_fn)h_start_a);
		fill(t, n, 6, (nvtx_fn)h_start_w);
		fill(t, n, 7, (nvtx_fn)h_end);
		fill(t, n, 8, (nvtx_fn)h_push_ex);
		fill(t, n, 9, (nvtx_fn)h_push_a);
		fill(t, n, 10, (nvtx_fn)h_push_w);
		fill(t, n, 11, (nvtx_fn)h_pop);
	}
	t = NULL;
	n = 0;
	if (cb->get_module_function_table(MODULE_CORE2, &t, &n)) {
		fill(t, n, 1, (nvtx_fn)h_dmark_ex);
		fill(t, n, 2, (nvtx_fn)h_dstart_ex);
		fill(t, n, 3, (nvtx_fn)h_dend);
		fill(t, n, 4, (nvtx_fn)h_dpush_ex);
		fill(t, n, 5, (nvtx_fn)h_dpop);
		fill(t, n, 10, (nvtx_fn)h_dregister_a);
		fill(t, n, 12, (nvtx_fn)h_dcreate_a);
		fill(t, n, 14, (nvtx_fn)h_ddestroy);
	}
	return 1;
}

/* CUDA_INJECTION64_PATH: the driver calls this when it loads us as its injection library.
 * Nothing to do beyond what the first intercepted call does (not verifiable without a GPU). */
PROF_EXPORT int InitializeInjection(void)
{
	return 1;
}
