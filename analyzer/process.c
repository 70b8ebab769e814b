/* Builds a struct process from a trace in one streaming pass: each record goes to the part of
 * the model it belongs to; memory grows with threads, modules, stacks and live blocks only. */
#include "process.h"
#include "python.h"
#include "commands.h"
#include "family.h"
#include "grow.h"
#include "summary.h"
#include "trace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


struct thread_info *process_thread(struct process *p, uint32_t serial)
{
	const uint32_t *i = u64map_get(&p->thread_index, serial);
	return i ? &p->threads[*i] : NULL;
}

void *process_family_state(const struct process *p, const struct family *f)
{
	return p->family_state[family_index(f)];
}

const struct stack_info *process_stack(const struct process *p, uint32_t id)
{
	return id ? u64map_get(&p->stacks, id) : NULL;
}

uint64_t process_rel_time(const struct process *p, uint64_t t)
{
	return t > p->hdr.start_ns ? t - p->hdr.start_ns : 0;
}

static int on_thread_start(struct process *p, const struct prof_rec_thread_start *r)
{
	if (GROW(p->threads, p->nthreads, p->threads_cap) < 0)
		return -1;
	/* A serial seen again (a fork child's copy of its parent's thread) names the latest. */
	uint32_t *slot = u64map_put(&p->thread_index, r->serial, NULL);
	if (!slot)
		return -1;
	*slot = (uint32_t)p->nthreads;
	struct thread_info *t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->serial = r->serial;
	t->tid = r->tid;
	t->parent_serial = r->parent_serial;
	t->start_ns = process_rel_time(p, r->h.time);
	t->create_stack = r->stack;
	t->start_routine = r->start_routine;
	return 0;
}

static void on_thread_end(struct process *p, const struct prof_rec_thread_end *r)
{
	struct thread_info *t = process_thread(p, r->serial);
	if (!t)
		return;
	t->ended = 1;
	t->end_ns = process_rel_time(p, r->h.time);
	/* The main thread's CPU clock started at exec, before the trace (the loader, the
	 * libraries' constructors): what it shows is at most the life the trace saw. */
	uint64_t life = t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0;
	t->cpu_ns = r->cpu_ns < life ? r->cpu_ns : life;
	memcpy(t->name, r->name, sizeof(r->name));
	t->name[16] = '\0';
}

/* The running maximum of end addresses, from position `from` on. */
static void index_max_ends(const struct process *p, struct module_index *ix, size_t from)
{
	for (size_t i = from; i < ix->n; i++) {
		uint64_t end = p->modules[ix->order[i]].end;
		uint64_t before = i ? ix->max_end[i - 1] : 0;
		ix->max_end[i] = end > before ? end : before;
	}
}

/* Adds module m (an index into p->modules) to ix, keeping it sorted by start. */
static int index_add(struct process *p, struct module_index *ix, uint32_t m)
{
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		uint32_t *order = realloc(ix->order, cap * sizeof(*order));
		if (order)
			ix->order = order;
		uint64_t *max_end = realloc(ix->max_end, cap * sizeof(*max_end));
		if (max_end)
			ix->max_end = max_end;
		if (!order || !max_end)
			return -1;
		ix->cap = cap;
	}
	uint64_t start = p->modules[m].start;
	size_t at = ix->n;
	while (at > 0 && p->modules[ix->order[at - 1]].start > start)
		at--;
	memmove(ix->order + at + 1, ix->order + at, (ix->n - at) * sizeof(*ix->order));
	ix->order[at] = m;
	ix->n++;
	index_max_ends(p, ix, at);
	return 0;
}

static void index_remove(struct process *p, struct module_index *ix, uint32_t m)
{
	size_t at = 0;
	while (at < ix->n && ix->order[at] != m)
		at++;
	if (at == ix->n)
		return;
	ix->n--;
	memmove(ix->order + at, ix->order + at + 1, (ix->n - at) * sizeof(*ix->order));
	index_max_ends(p, ix, at);
}

/* The latest-added module of ix holding addr: binary search for the last start <= addr,
 * then back while an earlier module may still reach addr (max_end). Modules rarely
 * overlap, so this is one or two steps. */
static uint32_t index_find(const struct process *p, const struct module_index *ix, uint64_t addr)
{
	size_t lo = 0, hi = ix->n;  /* first position whose start > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->modules[ix->order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t best = ~0u;
	for (size_t i = lo; i-- > 0 && ix->max_end[i] > addr;) {
		uint32_t m = ix->order[i];
		if (addr < p->modules[m].end && (best == ~0u || m > best))
			best = m;
	}
	return best;
}

static void index_free(struct module_index *ix)
{
	free(ix->order);
	free(ix->max_end);
}

static int on_module(struct process *p, const struct prof_rec_module *r)
{
	if (GROW(p->modules, p->nmodules, p->modules_cap) < 0)
		return -1;
	struct module_info *m = &p->modules[p->nmodules];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strdup(r->path)))
		return -1;
	m->id = r->id;
	m->start = r->start;
	m->end = r->end;
	m->bias = r->bias;
	m->build_id_len = r->build_id_len;
	memcpy(m->build_id, r->build_id, r->build_id_len);
	m->present = 1;
	uint32_t i = (uint32_t)p->nmodules++;
	return index_add(p, &p->loaded, i) < 0 || index_add(p, &p->seen, i) < 0 ? -1 : 0;
}

static void on_module_unload(struct process *p, const struct prof_rec_module_unload *r)
{
	for (size_t i = p->loaded.n; i-- > 0;) {
		uint32_t m = p->loaded.order[i];
		if (p->modules[m].id == r->id) {
			p->modules[m].present = 0;
			index_remove(p, &p->loaded, m);
			return;
		}
	}
}

uint32_t process_module_at(const struct process *p, uint64_t addr, int loaded_only)
{
	uint32_t m = index_find(p, loaded_only ? &p->loaded : &p->seen, addr);
	return m == ~0u ? ~0u : p->modules[m].id;
}

/* Interns stack id: frames[0..own), then the last `shared` frames of stack parent (0: none).
 * A parent lost with its chunk, or shorter than said (a damaged trace), leaves the stack its
 * own frames only. */
static int stack_define(struct process *p, uint32_t id, const uint64_t *frames, uint32_t own,
			uint32_t parent, uint32_t shared)
{
	int created;
	struct stack_info *s = u64map_put(&p->stacks, id, &created);
	if (!s)
		return -1;
	if (!created)  /* a second definition of an id: keep the first */
		return 0;
	/* looked up after the put, which may move the map's values */
	const struct stack_info *par = parent && parent != id ? u64map_get(&p->stacks, parent) : NULL;
	if (!par || shared > par->depth)
		shared = 0;
	uint32_t depth = own + shared;
	s->frames = malloc(sizeof(uint64_t) * (depth ? depth : 1));
	s->modules = malloc(sizeof(uint32_t) * (depth ? depth : 1));
	if (!s->frames || !s->modules)
		return -1;  /* depth stays 0: nothing reads the arrays */
	s->depth = depth;
	memcpy(s->frames, frames, sizeof(uint64_t) * own);
	for (uint32_t i = 0; i < own; i++)
		s->modules[i] = process_module_at(p, frames[i], 1);
	if (shared) {
		memcpy(s->frames + own, par->frames + par->depth - shared, sizeof(uint64_t) * shared);
		memcpy(s->modules + own, par->modules + par->depth - shared,
		       sizeof(uint32_t) * shared);
	}
	return 0;
}

static int on_stack(struct process *p, const struct prof_rec_stack *r)
{
	return stack_define(p, r->id, r->frames, r->depth, 0, 0);
}

/* Its parent came earlier in the same stream. */
static int on_stack_tail(struct process *p, const struct prof_rec_stack_tail *r)
{
	return stack_define(p, r->id, r->frames, r->depth, r->parent, r->shared);
}

/* A frame in no module known when its stack was recorded (a CPU sample in a library loaded
 * since, described later): the module the trace saw at that address, if any. */
static void resolve_late_modules(struct process *p)
{
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&p->stacks, &pos, &key, &val)) {
		struct stack_info *s = val;
		for (uint32_t i = 0; i < s->depth; i++)
			if (s->modules[i] == ~0u)
				s->modules[i] = process_module_at(p, s->frames[i], 0);
	}
}

static uint64_t window_from, window_to = UINT64_MAX;

void process_window_set(uint64_t from_ns, uint64_t to_ns)
{
	window_from = from_ns;
	window_to = to_ns;
}

static int on_record(struct process *p, const struct trace_event *ev)
{
	const struct prof_rec *h = ev->rec;
	uint64_t t = process_rel_time(p, h->time);
	/* Each event family owns a range of record types (family.h, families.c). */
	int fi = family_index_of_type(h->type);
	if (fi >= 0 && (t < window_from || t > window_to))
		return 0;
	if (t > p->end_ns && t <= window_to)
		p->end_ns = t;
	if (fi >= 0) {
		if (!prof_rec_known(h->type)) {
			p->unknown_records++;
			return 0;
		}
		int rc = families[fi]->on_record(p, p->family_state[fi], ev);
		int oi = family_observer[h->type] - 1;
		if (rc == 0 && oi >= 0)
			rc = families[oi]->observe(p, p->family_state[oi], ev);
		return rc;
	}
	switch (h->type) {
	case PROF_REC_PAD:
		return 0;
	case PROF_REC_LOST:
		p->lost_records += ((const struct prof_rec_lost *)h)->records;
		return 0;
	case PROF_REC_MODULE:
		return on_module(p, (const void *)h);
	case PROF_REC_MODULE_UNLOAD:
		on_module_unload(p, (const void *)h);
		return 0;
	case PROF_REC_STACK:
		return on_stack(p, (const void *)h);
	case PROF_REC_STACK_TAIL:
		return on_stack_tail(p, (const void *)h);
	case PROF_REC_THREAD_START:
		return on_thread_start(p, (const void *)h);
	case PROF_REC_THREAD_END:
		on_thread_end(p, (const void *)h);
		return 0;
	case PROF_REC_EXIT: {
		const struct prof_rec_exit *r = (const void *)h;
		p->exit_kind = r->how == 1 ? EXIT_SIGNAL : EXIT_CODE;  /* 2: _exit */
		p->exit_value = r->code;
		p->complete = r->how != 1;  /* exit() or _exit(): the program's own end */
		return 0;
	}
	case PROF_REC_EXEC: {
		const struct prof_rec_exec *r = (const void *)h;
		free(p->exec_path);
		p->exec_path = strdup(r->path);
		p->exit_kind = EXIT_EXEC;
		return p->exec_path ? 0 : -1;
	}
	case PROF_REC_PY_CODE:
		return python_on_code(p, (const void *)h);
	case PROF_REC_FORK:
		if (GROW(p->children, p->nchildren, p->children_cap) < 0)
			return -1;
		p->children[p->nchildren++] = ((const struct prof_rec_fork *)h)->child_pid;
		return 0;
	case PROF_REC_REAPED: {
		const struct prof_rec_reaped *r = (const void *)h;
		if (GROW(p->reaped, p->nreaped, p->reaped_cap) < 0)
			return -1;
		p->reaped[p->nreaped++] = (struct reaped){ r->child_pid, r->status };
		return 0;
	}
	default:
		p->unknown_records++;
		return 0;
	}
}

static int copy_identity(struct process *p, struct trace *t)
{
	p->hdr = *trace_header(t);
	p->exe = strdup(trace_exe(t));
	p->host = strdup(trace_host(t));
	p->argc = trace_argc(t);
	p->argv = calloc(p->argc + 1, sizeof(char *));
	if (!p->exe || !p->host || !p->argv)
		return -1;
	for (uint32_t i = 0; i < p->argc; i++)
		if (!(p->argv[i] = strdup(trace_argv(t, i))))
			return -1;
	return 0;
}

/* A first lookup in a module opens its files and inflates its compressed debug sections,
 * which on a short trace takes longer than reading it. So once the trace has shown its first
 * stack, a second thread does that for every module (those of that stack first) while the
 * records are read; when they are, it stops after the module at hand, and lookups do the
 * rest as they come. */
struct prewarm {
	pthread_t thread;
	struct symbolizer *sym;
	uint32_t *ids;      /* module ids, in the order to load them */
	size_t n;
	int stop;           /* atomic */
	int tried, running;
};

/* ---- symbolizers kept from one process to the next -------------------------------------
 * A symbolizer's costly part is the files it opens: each object's ELF and debug information,
 * decompressed and indexed on its first lookup (libc's: some 70 ms). The processes of a run
 * map mostly the same files, so a process's symbolizer, once the process is done with, serves
 * the next one a worker reads, which declares its own modules over the old ones (a module of
 * the same file, address and build reuses the old one's object and cached frames; any other
 * gets a declaration of its own: a process only ever looks up the modules it declared). Up to
 * SPARE_SYMS are kept, each while it holds under SPARE_SYM_BYTES and SPARE_SYM_OBJECTS. */
#define SPARE_SYMS 16
#define SPARE_SYM_BYTES (256u << 20)
#define SPARE_SYM_OBJECTS 64  /* their parsed debug information is not counted in bytes */
static struct symbolizer *spare_syms[SPARE_SYMS];
static size_t nspare_syms;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

struct symbolizer *process_sym_take(void)
{
	struct symbolizer *s = NULL;
	pthread_mutex_lock(&spare_lock);
	if (nspare_syms)
		s = spare_syms[--nspare_syms];
	pthread_mutex_unlock(&spare_lock);
	return s ? s : sym_new();
}

static void sym_give(struct symbolizer *s)
{
	size_t objects;
	if (sym_held_bytes(s, &objects) < SPARE_SYM_BYTES && objects < SPARE_SYM_OBJECTS) {
		pthread_mutex_lock(&spare_lock);
		int kept = nspare_syms < SPARE_SYMS;
		if (kept)
			spare_syms[nspare_syms++] = s;
		pthread_mutex_unlock(&spare_lock);
		if (kept)
			return;
	}
	sym_free(s);
}

static void *prewarm_run(void *arg)
{
	struct prewarm *w = arg;
	for (size_t i = 0; i < w->n && !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); i++)
		sym_preload(w->sym, w->ids[i]);
	return NULL;
}

static void prewarm_start(struct process *p, struct prewarm *w, const struct prof_rec_stack *first)
{
	if (!p->nmodules)
		return;  /* no module known yet: the next stack tries again */
	w->tried = 1;
	if (!(w->sym = process_sym_take()))
		return;
	w->ids = malloc(p->nmodules * sizeof(*w->ids));
	unsigned char *taken = calloc(p->nmodules, 1);
	int ok = w->ids && taken;
	for (uint32_t f = 0; ok && f < first->depth; f++) {
		/* the first stack's modules, innermost first; then the rest as they were loaded */
		uint32_t m = index_find(p, &p->loaded, first->frames[f]);
		if (m != ~0u && !taken[m]) {
			taken[m] = 1;
			w->ids[w->n++] = p->modules[m].id;
		}
	}
	for (size_t m = 0; ok && m < p->nmodules; m++) {
		const struct module_info *mi = &p->modules[m];
		if (!taken[m])
			w->ids[w->n++] = mi->id;
		ok = sym_add_module(w->sym, mi->id, mi->path, mi->start, mi->end, mi->bias,
				    mi->build_id, mi->build_id_len) == 0;
	}
	free(taken);
	p->sym = w->sym;  /* lookups will add the modules that come later */
	p->sym_modules = p->nmodules;
	w->running = ok && pthread_create(&w->thread, NULL, prewarm_run, w) == 0;
}

static void prewarm_finish(struct prewarm *w)
{
	if (w->running) {
		__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
		pthread_join(w->thread, NULL);
	}
	free(w->ids);
}

/* Progress for long traces, on stderr when it is a terminal (PROF_PROGRESS=1: anywhere, at
 * once), from half a second in, at most four times a second; quiet otherwise. */
struct progress {
	int on, shown;
	uint64_t start, next, done, total;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void progress_start(struct progress *pg, uint64_t total)
{
	const char *force = getenv("PROF_PROGRESS");
	int forced = force && !strcmp(force, "1");
	*pg = (struct progress){ .on = forced || (isatty(STDERR_FILENO) && !(force && !strcmp(force, "0"))),
				 .total = total ? total : 1 };
	pg->start = pg->on ? now_ns() : 0;
	pg->next = forced ? pg->start : pg->start + 500000000u;
}

static void progress_step(struct progress *pg, const char *path, uint32_t bytes)
{
	pg->done += bytes;
	if (!pg->on || (pg->done & 0xffff) >= bytes)  /* look at the clock every 64 KiB */
		return;
	uint64_t t = now_ns();
	if (t < pg->next)
		return;
	pg->next = t + 250000000u;
	pg->shown = 1;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	unsigned pct = (unsigned)(pg->done >= pg->total ? 100 : pg->done * 100 / pg->total);
	fprintf(stderr, "\rprof: reading %.60s %3u%%", base, pct);
	fflush(stderr);
}

static void progress_end(struct progress *pg)
{
	if (pg->shown)
		fputs("\r\033[K", stderr);  /* the line cleared: nothing stays behind */
}

int process_init(struct process *p, const char *path)
{
	memset(p, 0, sizeof(*p));
	u64map_init(&p->stacks, sizeof(struct stack_info));
	u64map_init(&p->thread_index, sizeof(uint32_t));
	int ok = (p->path = strdup(path)) != NULL;
	for (size_t i = 0; ok && families[i]; i++) {
		if ((p->family_state[i] = calloc(1, families[i]->state_size)))
			families[i]->init(p->family_state[i]);
		else
			ok = 0;
	}
	return ok ? 0 : -1;
}

int process_add_module(struct process *p, const struct module_info *m)
{
	if (GROW(p->modules, p->nmodules, p->modules_cap) < 0)
		return -1;
	uint32_t i = (uint32_t)p->nmodules++;
	p->modules[i] = *m;
	if (index_add(p, &p->seen, i) < 0)
		return -1;
	return m->present && index_add(p, &p->loaded, i) < 0 ? -1 : 0;
}

int process_load(const char *path, struct process *p, char *err, size_t errlen)
{
	if (summary_is(path)) {
		memset(p, 0, sizeof(*p));
		snprintf(err, errlen, "%s: a summary (prof summarize), not a trace: this needs the "
			 "traces", path);
		return -1;
	}
	if (process_init(p, path) < 0) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	struct trace *t = trace_open(path, err, errlen);
	if (!t)
		return -1;
	int rc = copy_identity(p, t);
	if (trace_promised(t))
		p->cut_bytes = trace_promised(t) - trace_size(t);
	struct trace_event ev;
	struct prewarm warm = { 0 };
	struct progress pg;
	int got = 0;
	progress_start(&pg, trace_size(t));
	while (rc == 0 && (got = trace_next(t, &ev, err, errlen)) > 0) {
		if (__builtin_expect(ev.rec->type == PROF_REC_STACK && !warm.tried, 0))
			prewarm_start(p, &warm, (const void *)ev.rec);
		rc = on_record(p, &ev);
		progress_step(&pg, path, ev.rec->size);
	}
	progress_end(&pg);
	prewarm_finish(&warm);
	if (rc == 0 && got < 0)
		rc = -2;
	if (rc == 0)
		resolve_late_modules(p);
	for (size_t i = 0; rc == 0 && families[i]; i++)
		if (families[i]->finish)
			rc = families[i]->finish(p);
	/* The exec'd image carries on in another trace; what ran here ended normally. */
	if (p->exit_kind == EXIT_EXEC && p->hdr.state == PROF_STATE_EXECED)
		p->complete = 1;
	if (p->hdr.lost_records > p->lost_records)
		p->lost_records = p->hdr.lost_records;
	if (p->cut_bytes)
		p->complete = 0;
	trace_close(t);
	if (rc == -1)
		snprintf(err, errlen, "%s: out of memory", path);
	return rc < 0 ? -1 : 0;
}

void process_free(struct process *p)
{
	python_free(p);
	free(p->path);
	free(p->exe);
	free(p->host);
	for (uint32_t i = 0; p->argv && i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->exec_path);
	free(p->threads);
	u64map_free(&p->thread_index);
	index_free(&p->loaded);
	index_free(&p->seen);
	for (size_t i = 0; i < p->nmodules; i++)
		free(p->modules[i].path);
	free(p->modules);
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&p->stacks, &pos, &key, &val)) {
		struct stack_info *s = val;
		free(s->frames);
		free(s->modules);
	}
	u64map_free(&p->stacks);
	free(p->children);
	free(p->reaped);
	for (size_t i = 0; families[i]; i++)
		if (p->family_state[i]) {
			families[i]->free(p->family_state[i]);
			free(p->family_state[i]);
		}
	if (p->sym)
		sym_give(p->sym);
	if (p->symtab)
		sum_symbols_free(p->symtab);
	memset(p, 0, sizeof(*p));
}

int proc_order_by_start(const struct proc_order *a, const struct proc_order *b)
{
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

static int cmp_start(const void *a, const void *b)
{
	const struct process *x = a, *y = b;
	struct proc_order ox = { .start_ns = x->hdr.start_ns, .pid = x->hdr.pid },
			  oy = { .start_ns = y->hdr.start_ns, .pid = y->hdr.pid };
	return proc_order_by_start(&ox, &oy);
}

/* One worker per item, as many at a time as there are cores (PROF_JOBS sets another number;
 * 1: one after the other); nothing is shared but the index of the next item to take. */
struct par_job {
	void (*fn)(void *ctx, size_t i);
	void *ctx;
	size_t n;
	_Atomic size_t next;
};

static void *par_worker(void *arg)
{
	struct par_job *j = arg;
	for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;)
		j->fn(j->ctx, i);
	return NULL;
}

void process_parallel(size_t n, void (*fn)(void *ctx, size_t i), void *ctx)
{
	const char *v = getenv("PROF_JOBS");
	long w = v && *v ? atol(v) : sysconf(_SC_NPROCESSORS_ONLN);
	size_t nw = w < 1 ? 1 : (size_t)w < n ? (size_t)w : n, started = 0;
	pthread_t tids[256];
	struct par_job job = { fn, ctx, n, 0 };
	family_route_init();  /* what the workers share, made before they start */
	u64_seed();
	json_object_seed(0);
	for (size_t k = 1; k < nw && started < 256; k++)
		started += pthread_create(&tids[started], NULL, par_worker, &job) == 0;
	par_worker(&job);
	for (size_t k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
}

static int reduce = 1;
static const char *traces_only;
static const char *doing = "reporting";

void processes_reduce_set(int on)
{
	reduce = on;
}

void processes_need_traces(const char *why)
{
	traces_only = why;
}

void processes_doing_set(const char *what)
{
	doing = what;
}

/* What processes_each() loads at a time: a trace, or one process of a summary (bytes [from, to)
 * of the file), so that the processes of a large summary are spread over the workers too. What
 * it left behind: an error (the first one, in the order of the units, is reported) and the
 * warnings of its processes, told once every unit was tried. */
struct unit {
	size_t at;             /* the index of its path */
	int summary;
	uint64_t from, to;
	char err[512];
	char **warn;
	size_t nwarn;
};

struct each_ctx {
	char **paths;
	struct unit *units;
	void (*fn)(void *ctx, struct process *p, size_t at);
	void *ctx;
};

static void warn_truncated(struct unit *u, const struct process *p)
{
	char *w = NULL, **v = realloc(u->warn, (u->nwarn + 1) * sizeof(*v));
	if (v)
		u->warn = v;
	if (v && asprintf(&w, "warning: %s: truncated (%" PRIu64 " bytes missing at its end); "
			  "%s what it holds", p->path, p->cut_bytes, doing) >= 0)
		v[u->nwarn++] = w;
}

static void each_one(void *ctx, size_t i)
{
	struct each_ctx *c = ctx;
	struct unit *u = &c->units[i];
	const char *path = c->paths[u->at];
	struct process *ps = NULL;
	size_t n = 0, cap = 0;
	if (u->err[0])
		return;  /* refused before it was read */
	if (u->summary) {
		summary_load_piece(path, u->from, u->to, &ps, &n, &cap, u->err, sizeof(u->err));
	} else if (!(ps = calloc(1, sizeof(*ps)))) {
		snprintf(u->err, sizeof(u->err), "out of memory");
	} else if (process_load(path, ps, u->err, sizeof(u->err)) < 0) {
		process_free(ps);
	} else {
		n = 1;
		/* Only what the reports read stays: the symbolizer, live blocks and the like go
		 * before this worker takes the next trace. */
		const char *env = getenv("PROF_REDUCE");
		int on = reduce && !(env && !strcmp(env, "0"));
		if (on && summary_reduce(ps, u->err, sizeof(u->err)) < 0) {
			process_free(ps);
			n = 0;
		}
	}
	for (size_t k = 0; k < n; k++) {
		if (ps[k].cut_bytes)
			warn_truncated(u, &ps[k]);
		c->fn(c->ctx, &ps[k], i);
	}
	free(ps);
}

/* The units of paths: a trace is one, a summary one per process in it. */
static struct unit *units_of(char **paths, size_t n, size_t *nunits)
{
	struct unit *v = NULL;
	size_t cap = 0;
	*nunits = 0;
	for (size_t i = 0; i < n; i++) {
		struct unit u = { .at = i, .summary = summary_is(paths[i]) };
		uint64_t *starts = NULL;
		size_t pieces = 1;
		if (!u.summary)
			;
		else if (traces_only)
			snprintf(u.err, sizeof(u.err), "%s: a summary (prof summarize): %s needs "
				 "the traces", paths[i], traces_only);
		else if (window_from != 0 || window_to != UINT64_MAX)
			snprintf(u.err, sizeof(u.err), "%s: a summary holds whole runs: a time "
				 "window (--from, --to, RUN@T) needs the traces", paths[i]);
		else if (summary_pieces(paths[i], &starts, &pieces, u.err, sizeof(u.err)) < 0)
			pieces = 1;
		for (size_t k = 0; k < pieces; k++) {
			if (*nunits == cap && grow_array((void **)&v, &cap, sizeof(*v)) < 0) {
				free(starts);
				free(v);
				return NULL;
			}
			v[*nunits] = u;
			if (starts) {
				v[*nunits].from = starts[k];
				v[*nunits].to = k + 1 < pieces ? starts[k + 1] : UINT64_MAX;
			}
			(*nunits)++;
		}
		free(starts);
	}
	return v;
}

int processes_each(char **paths, size_t n, size_t *count,
		   void (*fn)(void *ctx, struct process *p, size_t at), void *ctx)
{
	size_t nunits;
	struct unit *units = units_of(paths, n, &nunits);
	if (!units) {
		prof_error("out of memory");
		return -1;
	}
	if (count)
		*count = nunits;  /* a unit is one process (but a damaged one: an error) */
	struct each_ctx c = { paths, units, fn, ctx };
	process_parallel(nunits, each_one, &c);
	int rc = 0;
	for (size_t i = 0; i < nunits; i++) {
		if (units[i].err[0] && rc == 0) {
			prof_error("%s", units[i].err);
			rc = -1;
		}
		for (size_t k = 0; k < units[i].nwarn; k++) {
			if (rc == 0)
				prof_error("%s", units[i].warn[k]);
			free(units[i].warn[k]);
		}
		free(units[i].warn);
	}
	free(units);
	return rc;
}

/* processes_load(): every process kept in one list (in the order they came: sorted after). */
struct kept {
	struct process *ps;
	size_t n, cap;
	int oom;
	pthread_mutex_t lock;
};

static void keep_one(void *ctx, struct process *p, size_t at)
{
	struct kept *k = ctx;
	(void)at;
	pthread_mutex_lock(&k->lock);
	if (k->n < k->cap || grow_array((void **)&k->ps, &k->cap, sizeof(*k->ps)) == 0) {
		k->ps[k->n++] = *p;
	} else {
		process_free(p);
		k->oom = 1;
	}
	pthread_mutex_unlock(&k->lock);
}

int processes_load(char **paths, size_t n, struct process **out, size_t *nout)
{
	struct kept k = { .lock = PTHREAD_MUTEX_INITIALIZER };
	int rc = processes_each(paths, n, NULL, keep_one, &k);
	if (rc == 0 && k.oom) {
		prof_error("out of memory");
		rc = -1;
	}
	if (rc < 0) {
		processes_free(k.ps, k.n);
		return -1;
	}
	qsort(k.ps, k.n, sizeof(*k.ps), cmp_start);  /* in the order they started */
	*out = k.ps;
	*nout = k.n;
	return 0;
}

void processes_free(struct process *ps, size_t n)
{
	for (size_t i = 0; ps && i < n; i++)
		process_free(&ps[i]);
	free(ps);
}

uint64_t thread_cpu_ns(const struct process *p, const struct thread_info *t)
{
	uint64_t end = t->ended ? t->end_ns : p->end_ns;
	uint64_t life = end > t->start_ns ? end - t->start_ns : 0;
	uint64_t cpu = t->ended && t->cpu_ns ? t->cpu_ns : t->sampled_ns;
	return cpu < life ? cpu : life;
}

uint64_t process_cpu_ns(const struct process *p)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		ns += thread_cpu_ns(p, &p->threads[i]);
	return ns;
}

struct proc_order proc_order_of(const struct process *p, size_t at)
{
	return (struct proc_order){ p->hdr.start_ns, process_work(process_cpu_ns(p), p->end_ns),
				    p->hdr.pid, at };
}

int proc_order_by_work(const struct proc_order *a, const struct proc_order *b)
{
	if (a->work != b->work)
		return a->work < b->work ? 1 : -1;
	return proc_order_by_start(a, b);
}

/* processes_by_work()'s: the array (in start order) is the inputs, a process's place in it
 * its address. */
static int cmp_work(const void *a, const void *b)
{
	struct process *const *x = a, *const *y = b;
	struct proc_order ox = proc_order_of(*x, (size_t)(uintptr_t)*x),
			  oy = proc_order_of(*y, (size_t)(uintptr_t)*y);
	return proc_order_by_work(&ox, &oy);
}

struct process **processes_by_work(struct process *ps, size_t n)
{
	struct process **v = malloc(sizeof(*v) * (n ? n : 1));
	for (size_t i = 0; v && i < n; i++)
		v[i] = &ps[i];
	if (v && n > 1)
		qsort(v, n, sizeof(*v), cmp_work);
	return v;
}
