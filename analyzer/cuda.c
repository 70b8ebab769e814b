/* Analysis of CUDA activity: API calls per function, kernels per (name, grid, block) with
 * their GPU time, copies and memsets by direction, device memory and its leaks, NVTX ranges,
 * and GPU time per launching stack. A runtime call and the driver calls it made share one
 * correlation id; what both layers describe (an allocation, a launch, a copy) counts once. */
#include "cuda.h"
#include "grow.h"
#include "process.h"
#include "format.h"
#include "stackfmt.h"
#include "summary.h"
#include "trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cuda_name_ent {
	char *str;
	char *demangled;  /* NULL if not mangled */
	unsigned kind;
};

/* How GPU activity meets its call, streaming.
 *
 * Records of one call (corr) come from the calling thread, one call at a time: the driver's
 * CUDA_LAUNCH / CUDA_COPY and CUDA_API, then the runtime's (same corr), then the next call.
 * So each thread (stream) has one open call, merged from both layers' records; it closes when
 * that stream writes a record of another call (or goes quiet while many streams are open, or
 * the trace ends). Closing counts it: the launch into its kernel row (final once both layers
 * were seen: a record with a name replaces one without), the copy into its direction, the
 * call into "correlated" when both layers wrote an API record.
 *
 * A closed call that launched or copied waits (struct cuda_wait: its row, stack and copy,
 * ~40 bytes) for its GPU activity, which comes later from any thread (event pairs drained at
 * syncs; CUPTI buffers, through CUDA_XCORR). The first kernel or copy record releases it
 * (graph launches keep waiting: each node of a graph has a kernel record of the graph's
 * corr). GPU activity that comes before its call closed, or before the CUDA_XCORR naming its
 * call, waits for it (struct cuda_pend). Whatever GPU activity never finds a call counts as
 * a call of its own (a kernel row from what the GPU record says; a copy by its direction),
 * as before.
 *
 * Bounds, so memory follows what is outstanding rather than the trace: when the process says
 * nothing is timed (CUDA_STATE "none") a call waits for nothing; otherwise a call that got no
 * GPU activity while WAIT_MAX/2 later calls closed is let go (counted, untimed); GPU activity
 * that found no call while PEND_MAX/2 later GPU records came counts on its own (unless its
 * call is still open); a CUDA_XCORR is forgotten after XCORR_MAX/2 later ones. Within those
 * windows the result is the same as joining everything at the end. */
#define WAIT_MAX (1u << 18)
#define PEND_MAX (1u << 16)
#define XCORR_MAX (1u << 17)
#define OPEN_SWEEP 1024                  /* open calls before looking for quiet streams */
#define OPEN_IDLE_NS 1000000000ull       /* quiet for this long: the thread's call is over */

struct cuda_launch {
	uint32_t name, stack, grid[3], block[3];
	int graph;
};

struct cuda_copy {
	uint64_t bytes;
	uint16_t kind;
};

struct cuda_open {
	uint64_t corr, last_ns;
	uint64_t api_ns;             /* the call's longest API record (runtime holds driver) */
	uint8_t layers;              /* bit 0 runtime API record seen, bit 1 driver */
	uint8_t has_launch, has_copy;
	struct cuda_launch launch;
	struct cuda_copy copy;
};

struct cuda_wait {
	uint64_t seq, copy_bytes;
	uint32_t row, stack;         /* the launch's kernel row and stack */
	uint16_t copy_kind;
	uint8_t launch, copy, graph; /* launch / copy still waiting */
};

struct cuda_pend {
	uint64_t seq;                /* of the first */
	struct cuda_gpu_ev first;
	struct cuda_gpu_ev *more;
	uint32_t nmore, capmore;
};

struct cuda_xc {
	uint64_t seq, corr;
};

struct cuda_block {
	uint64_t size, corr;
	uint32_t stack, kind;
};

struct cuda_leak_site {
	uint64_t bytes, blocks;
};

/* ---- histograms ------------------------------------------------------------------------ */

#define HIST_BUCKETS (64 + 58 * 64)

static unsigned bucket_of(uint64_t v)
{
	if (v < 64)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);  /* >= 6 */
	return 64 + (e - 6) * 64 + (unsigned)((v >> (e - 6)) & 63);
}

static uint64_t bucket_mid(unsigned b)
{
	if (b < 64)
		return b;
	unsigned e = (b - 64) / 64 + 6, sub = (b - 64) % 64;
	uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 6));
	return lo + (1ull << (e - 6)) / 2;
}

int cuda_hist_add(struct cuda_hist *h, uint64_t v)
{
	if (h->n < CUDA_EXACT) {
		h->exact[h->n] = v;
	} else {
		if (!h->buckets) {
			if (!(h->buckets = calloc(HIST_BUCKETS, sizeof(uint32_t))))
				return -1;
			for (unsigned i = 0; i < CUDA_EXACT; i++)
				h->buckets[bucket_of(h->exact[i])]++;
		}
		h->buckets[bucket_of(v)]++;
	}
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	h->sum += (double)v;
	h->sumsq += (double)v * (double)v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t cuda_hist_median(const struct cuda_hist *h)
{
	if (!h->n)
		return 0;
	if (h->n <= CUDA_EXACT) {
		uint64_t v[CUDA_EXACT];
		memcpy(v, h->exact, h->n * sizeof(uint64_t));
		qsort(v, h->n, sizeof(uint64_t), cmp_u64);
		return h->n % 2 ? v[h->n / 2] : (v[h->n / 2 - 1] + v[h->n / 2]) / 2;
	}
	uint64_t rank = (h->n + 1) / 2, seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			uint64_t m = bucket_mid(b);
			return m < h->min ? h->min : m > h->max ? h->max : m;
		}
	}
	return h->max;
}

uint64_t cuda_hist_stddev(const struct cuda_hist *h)
{
	if (h->n < 2)
		return 0;
	double mean = h->sum / (double)h->n;
	double var = (h->sumsq - (double)h->n * mean * mean) / (double)(h->n - 1);
	return var > 0 ? (uint64_t)llround(sqrt(var)) : 0;
}

void cuda_hist_free(struct cuda_hist *h)
{
	free(h->buckets);
	h->buckets = NULL;
}

static uint64_t hist_avg(const struct cuda_hist *h)
{
	return h->n ? (uint64_t)llround(h->sum / (double)h->n) : 0;
}

/* ---- life cycle ------------------------------------------------------------------------ */

struct cuda_stats *cuda_of(const struct process *p)
{
	return process_family_state(p, &cuda_family);
}

void cuda_init(void *state)
{
	struct cuda_stats *s = state;
	memset(s, 0, sizeof(*s));
	u64map_init(&s->names, sizeof(struct cuda_name_ent));
	u64map_init(&s->api, sizeof(struct cuda_api_row));
	u64map_init(&s->thread_api, sizeof(uint64_t));
	u64map_init(&s->open, sizeof(struct cuda_open));
	u64map_init(&s->open_corr, sizeof(uint64_t));
	u64map_init(&s->waiting, sizeof(struct cuda_wait));
	u64map_init(&s->pend_ours, sizeof(struct cuda_pend));
	u64map_init(&s->pend_cupti, sizeof(struct cuda_pend));
	u64map_init(&s->xcorr, sizeof(struct cuda_xc));
	u64map_init(&s->live, sizeof(struct cuda_block));
	u64map_init(&s->nvtx, sizeof(struct cuda_nvtx_row));
	u64map_init(&s->kernel_index, sizeof(size_t));
	u64map_init(&s->gpu_by_stack, sizeof(uint64_t));
	u64map_init(&s->leak_sites, sizeof(struct cuda_leak_site));
	s->open_limit = OPEN_SWEEP;
	s->pend_limit = PEND_MAX;
}

static void pend_map_free(struct u64map *m)
{
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(m, &pos, &key, &val))
		free(((struct cuda_pend *)val)->more);
	u64map_free(m);
}

void cuda_free(void *state)
{
	struct cuda_stats *s = state;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&s->names, &pos, &key, &val)) {
		struct cuda_name_ent *e = val;
		free(e->str);
		free(e->demangled);
	}
	for (pos = 0; u64map_next(&s->api, &pos, &key, &val);)
		cuda_hist_free(&((struct cuda_api_row *)val)->h);
	for (pos = 0; u64map_next(&s->nvtx, &pos, &key, &val);) {
		struct cuda_nvtx_row *r = val;
		free(r->message);
		cuda_hist_free(&r->h);
	}
	for (size_t i = 0; i < s->nkernels; i++)
		cuda_hist_free(&s->kernels[i].h);
	for (int i = 0; i < PROF_CUDA_COPY_KIND_COUNT; i++)
		cuda_hist_free(&s->copy[i].h);
	free(s->kernels);
	free(s->timing_detail);
	u64map_free(&s->names);
	u64map_free(&s->api);
	u64map_free(&s->thread_api);
	u64map_free(&s->open);
	u64map_free(&s->open_corr);
	u64map_free(&s->waiting);
	pend_map_free(&s->pend_ours);
	pend_map_free(&s->pend_cupti);
	u64map_free(&s->xcorr);
	u64map_free(&s->live);
	u64map_free(&s->nvtx);
	u64map_free(&s->kernel_index);
	u64map_free(&s->gpu_by_stack);
	u64map_free(&s->leak_sites);
	memset(s, 0, sizeof(*s));
}

/* ---- records --------------------------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

static int on_name(struct cuda_stats *s, const struct prof_rec_cuda_name *r)
{
	int created;
	struct cuda_name_ent *e = u64map_put(&s->names, r->id, &created);
	if (!e)
		return -1;
	if (!created)
		return 0;  /* written again (fork child, or a race): the same string */
	e->kind = r->h.flags;
	if (!(e->str = strdup(r->name)))
		return -1;
	if (e->kind == PROF_CUDA_NAME_KERNEL)
		e->demangled = sym_demangle(r->name);
	return 0;
}

/* The row of (name, graph, grid, block), made if new; -1 if out of memory. */
static int kernel_row(struct cuda_stats *s, uint32_t name, int graph, const uint32_t grid[3],
		      const uint32_t block[3])
{
	uint64_t key = hash_bytes(1469598103934665603ull, &name, sizeof(name));
	key = hash_bytes(key, &graph, sizeof(graph));
	key = hash_bytes(key, grid, 12);
	key = hash_bytes(key, block, 12);
	int created;
	size_t *idx = u64map_put(&s->kernel_index, key, &created);
	if (!idx)
		return -1;
	if (created) {
		if (GROW(s->kernels, s->nkernels, s->kernels_cap) < 0) {
			u64map_del(&s->kernel_index, key, NULL);
			return -1;
		}
		struct cuda_kernel_row *k = &s->kernels[s->nkernels];
		memset(k, 0, sizeof(*k));
		k->name = name;
		k->graph = graph;
		memcpy(k->grid, grid, 12);
		memcpy(k->block, block, 12);
		*idx = s->nkernels++;
	}
	return (int)*idx;
}

/* One GPU record, joined to the waiting call corr (0 or not waiting: a call of its own).
 * *released: the call had nothing left to wait for and went. */
static int gpu_apply(struct cuda_stats *s, const struct cuda_gpu_ev *g, uint64_t corr, int *released)
{
	struct cuda_wait *w = corr ? u64map_get(&s->waiting, corr) : NULL;
	uint64_t dur = g->end - g->start;
	if (released)
		*released = 0;
	if (g->activity == PROF_CUDA_ACT_KERNEL) {
		int row;
		uint32_t stack = 0;
		if (w && w->launch) {
			row = (int)w->row;
			stack = w->stack;
			if (!s->kernels[row].name && g->name)
				s->kernels[row].name = g->name;
			if (!w->graph)
				w->launch = 0;
		} else {  /* a launch we did not see (CUPTI): a row of its own */
			if ((row = kernel_row(s, g->name, 0, g->grid, g->block)) < 0)
				return -1;
			s->kernels[row].launches++;
		}
		struct cuda_kernel_row *k = &s->kernels[row];
		if (cuda_hist_add(&k->h, dur) < 0)
			return -1;
		if (g->timing > k->timing)
			k->timing = g->timing;
		s->kernel_ns += dur;
		int created;
		uint64_t *wt = u64map_put(&s->gpu_by_stack, stack, &created);
		if (!wt)
			return -1;
		*wt += dur;
	} else if (g->activity == PROF_CUDA_ACT_COPY) {
		unsigned kind = g->copy_kind;
		if (w && w->copy) {
			unsigned ck = w->copy_kind;
			if (kind == PROF_CUDA_COPY_UNKNOWN || ck == PROF_CUDA_COPY_MEMSET)
				kind = ck;
			if (ck != kind && ck != PROF_CUDA_COPY_UNKNOWN)
				kind = ck;
			if (ck == PROF_CUDA_COPY_UNKNOWN && kind != PROF_CUDA_COPY_UNKNOWN) {
				/* the GPU knew the direction the call did not say */
				s->copy[PROF_CUDA_COPY_UNKNOWN].count--;
				s->copy[PROF_CUDA_COPY_UNKNOWN].bytes -= w->copy_bytes;
				s->copy[kind].count++;
				s->copy[kind].bytes += w->copy_bytes;
			}
			w->copy = 0;
		} else {
			s->copy[kind].count++;
			s->copy[kind].bytes += g->bytes;
		}
		struct cuda_copy_row *row = &s->copy[kind];
		row->timed++;
		if (g->timing > row->timing)
			row->timing = g->timing;
		if (cuda_hist_add(&row->h, dur) < 0)
			return -1;
	}
	if (w && !w->launch && !w->copy) {
		u64map_del(&s->waiting, corr, NULL);
		if (released)
			*released = 1;
	}
	return 0;
}

static int pend_add(struct cuda_stats *s, struct u64map *m, uint64_t key, const struct cuda_gpu_ev *g)
{
	int created;
	struct cuda_pend *p = u64map_put(m, key, &created);
	if (!p)
		return -1;
	if (created) {
		p->seq = ++s->pend_seq;
		p->first = *g;
	} else {
		if (p->nmore == p->capmore) {
			uint32_t cap = p->capmore ? p->capmore * 2 : 4;
			struct cuda_gpu_ev *v = realloc(p->more, cap * sizeof(*v));
			if (!v)
				return -1;
			p->more = v;
			p->capmore = cap;
		}
		p->more[p->nmore++] = *g;
		s->pend_seq++;
	}
	s->npend++;
	return 0;
}

/* Applies a taken-out pending list to corr (0: each on its own) and frees it. */
static int pend_apply(struct cuda_stats *s, struct cuda_pend *p, uint64_t corr)
{
	int rc = gpu_apply(s, &p->first, corr, NULL);
	for (uint32_t i = 0; rc == 0 && i < p->nmore; i++)
		rc = gpu_apply(s, &p->more[i], corr, NULL);
	s->npend -= 1 + (uint64_t)p->nmore;
	free(p->more);
	p->more = NULL;
	return rc;
}

/* GPU activity of our corr: joined now if its call waits, else kept until the call closes. */
static int gpu_for_corr(struct cuda_stats *s, const struct cuda_gpu_ev *g, uint64_t corr, int *released)
{
	if (released)
		*released = 0;
	if (!corr || u64map_get(&s->waiting, corr))
		return gpu_apply(s, g, corr, released);
	return pend_add(s, &s->pend_ours, corr, g);
}

/* Keeps the entries of a map whose seq (first field of the value) is above cutoff; the
 * others go to drop() (may be NULL). */
static int map_keep_newer(struct cuda_stats *s, struct u64map *m, uint64_t cutoff,
			  int (*keep)(struct cuda_stats *, uint64_t key, void *val),
			  int (*drop)(struct cuda_stats *, uint64_t key, void *val))
{
	struct u64map n;
	u64map_init(&n, m->vsize);
	size_t pos = 0;
	uint64_t key;
	void *val;
	int rc = 0;
	while (u64map_next(m, &pos, &key, &val)) {
		uint64_t seq;
		memcpy(&seq, val, sizeof(seq));
		if (seq > cutoff || (keep && keep(s, key, val))) {
			void *v = u64map_put(&n, key, NULL);
			if (!v) {
				rc = -1;
				break;
			}
			memcpy(v, val, m->vsize);
		} else {
			s->expired++;
			if (drop && drop(s, key, val) < 0)
				rc = -1;
		}
	}
	if (rc < 0) {  /* leave m as it was (values already handed to drop() are gone) */
		u64map_free(&n);
		return -1;
	}
	u64map_free(m);
	*m = n;
	return 0;
}

static int pend_is_open(struct cuda_stats *s, uint64_t corr, void *val)
{
	(void)val;
	return u64map_get(&s->open_corr, corr) != NULL;
}

static int pend_drop(struct cuda_stats *s, uint64_t key, void *val)
{
	(void)key;
	return pend_apply(s, val, 0);
}

static int pend_bound(struct cuda_stats *s)
{
	if (s->npend < s->pend_limit)
		return 0;
	uint64_t cutoff = s->pend_seq - PEND_MAX / 2;
	if (map_keep_newer(s, &s->pend_ours, cutoff, pend_is_open, pend_drop) < 0 ||
	    map_keep_newer(s, &s->pend_cupti, cutoff, NULL, pend_drop) < 0)
		return -1;
	/* what open calls keep does not make every record sweep again */
	s->pend_limit = s->npend > PEND_MAX / 2 ? s->npend + PEND_MAX / 2 : PEND_MAX;
	return 0;
}

/* A call is over: count it, join what GPU activity came early, and let it wait for more. */
static int close_call(struct cuda_stats *s, struct cuda_open *o)
{
	u64map_del(&s->open_corr, o->corr, NULL);
	if (o->layers == 3)
		s->correlated++;
	struct cuda_pend early;
	int have_early = u64map_del(&s->pend_ours, o->corr, &early);
	if (!o->has_launch && !o->has_copy)
		return have_early ? pend_apply(s, &early, 0) : 0;
	int row = 0;
	if (o->has_launch) {
		const struct cuda_launch *l = &o->launch;
		if ((row = kernel_row(s, l->name, l->graph, l->grid, l->block)) < 0)
			goto fail;
		s->kernels[row].launches++;
	}
	if (o->has_copy) {
		s->copy[o->copy.kind].count++;
		s->copy[o->copy.kind].bytes += o->copy.bytes;
	}
	struct cuda_wait *w = u64map_put(&s->waiting, o->corr, NULL);
	if (!w)
		goto fail;
	w->seq = ++s->wait_seq;
	w->row = (uint32_t)row;
	w->stack = o->launch.stack;
	w->graph = o->has_launch && o->launch.graph;
	w->launch = o->has_launch;
	w->copy = o->has_copy;
	w->copy_kind = o->copy.kind;
	w->copy_bytes = o->copy.bytes;
	if (have_early && pend_apply(s, &early, o->corr) < 0)
		return -1;
	if (s->have_state && s->timing == PROF_CUDA_TIMING_NONE)
		u64map_del(&s->waiting, o->corr, NULL);  /* nothing is timed: no GPU record comes */
	if (s->waiting.count >= WAIT_MAX &&
	    map_keep_newer(s, &s->waiting, s->wait_seq - WAIT_MAX / 2, NULL, NULL) < 0)
		return -1;
	return 0;
fail:
	if (have_early)
		free(early.more);
	return -1;
}

/* Closes the calls of streams quiet for OPEN_IDLE_NS (threads that ended), but not except's. */
static int open_sweep(struct cuda_stats *s, uint64_t except)
{
	uint64_t *quiet = malloc(s->open.count * sizeof(*quiet));
	size_t n = 0, pos = 0;
	uint64_t key;
	void *val;
	if (!quiet)
		return -1;
	while (u64map_next(&s->open, &pos, &key, &val)) {
		const struct cuda_open *o = val;
		if (key != except && o->last_ns + OPEN_IDLE_NS < s->now)
			quiet[n++] = key;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct cuda_open o;
		u64map_del(&s->open, quiet[i], &o);
		rc = close_call(s, &o);
	}
	free(quiet);
	if (s->open_limit < 2 * s->open.count)
		s->open_limit = 2 * s->open.count;
	return rc;
}

/* The open call of this record's stream, closing the stream's previous call if corr differs. */
static struct cuda_open *open_call(struct cuda_stats *s, const struct trace_event *ev, uint64_t corr)
{
	if (s->open.count >= s->open_limit && open_sweep(s, ev->stream) < 0)
		return NULL;
	int created;
	struct cuda_open *o = u64map_put(&s->open, ev->stream, &created);
	if (!o)
		return NULL;
	if (!created && o->corr != corr) {
		if (close_call(s, o) < 0)
			return NULL;
		memset(o, 0, sizeof(*o));
		created = 1;
	}
	if (created) {
		o->corr = corr;
		uint64_t *st = u64map_put(&s->open_corr, corr, NULL);
		if (!st)
			return NULL;
		*st = ev->stream;
	}
	if (ev->rec->time > o->last_ns)
		o->last_ns = ev->rec->time;
	return o;
}

static int on_api(struct cuda_stats *s, const struct trace_event *ev, const struct prof_rec_cuda_api *r)
{
	int created;
	struct cuda_api_row *row = u64map_put(&s->api, r->name, &created);
	if (!row)
		return -1;
	row->name = r->name;
	row->layer = r->h.flags & 1;
	if (r->result != 0)
		row->errors++;
	s->api_ns += r->duration_ns;
	if (cuda_hist_add(&row->h, r->duration_ns) < 0)
		return -1;
	struct cuda_open *o = open_call(s, ev, r->corr);
	if (!o)
		return -1;
	o->layers |= (uint8_t)(1u << (r->h.flags & 1));
	/* The thread's time in API calls: a runtime call and the driver calls inside it once. */
	if (r->duration_ns > o->api_ns) {
		uint64_t *t = u64map_put(&s->thread_api, ev->stream, NULL);
		if (!t)
			return -1;
		*t += r->duration_ns - o->api_ns;
		o->api_ns = r->duration_ns;
	}
	return 0;
}

static int on_launch(struct cuda_stats *s, const struct trace_event *ev,
		     const struct prof_rec_cuda_launch *r)
{
	struct cuda_open *o = open_call(s, ev, r->corr);
	if (!o)
		return -1;
	struct cuda_launch *l = &o->launch;
	if (!o->has_launch || (!l->name && r->name)) {
		l->name = r->name;
		l->stack = r->stack;
		memcpy(l->grid, r->grid, sizeof(l->grid));
		memcpy(l->block, r->block, sizeof(l->block));
		l->graph = r->graph != 0;
		o->has_launch = 1;
	}
	return 0;
}

static int on_copy(struct cuda_stats *s, const struct trace_event *ev, const struct prof_rec_cuda_copy *r)
{
	struct cuda_open *o = open_call(s, ev, r->corr);
	if (!o)
		return -1;
	if (!o->has_copy || o->copy.kind == PROF_CUDA_COPY_UNKNOWN) {
		o->copy.kind = r->kind < PROF_CUDA_COPY_KIND_COUNT ? r->kind : PROF_CUDA_COPY_UNKNOWN;
		o->copy.bytes = r->bytes;
		o->has_copy = 1;
	}
	return 0;
}

static int on_malloc(struct process *p, struct cuda_stats *s, const struct prof_rec_cuda_malloc *r)
{
	struct cuda_block *b = u64map_get(&s->live, r->ptr);
	if (b && b->corr == r->corr)
		return 0;  /* the other layer of the same call */
	if (b) {       /* reused without a free we saw: forget the old one */
		s->current -= b->size;
		u64map_del(&s->live, r->ptr, NULL);
	}
	int created;
	if (!(b = u64map_put(&s->live, r->ptr, &created)))
		return -1;
	b->size = r->size;
	b->corr = r->corr;
	b->stack = r->stack;
	b->kind = r->kind;
	s->alloc_calls++;
	s->bytes_allocated += r->size;
	s->current += r->size;
	if (s->current > s->peak) {
		s->peak = s->current;
		s->peak_ns = r->h.time > p->hdr.start_ns ? r->h.time - p->hdr.start_ns : 0;
	}
	return 0;
}

static int on_free(struct cuda_stats *s, const struct prof_rec_cuda_free *r)
{
	struct cuda_block b;
	if (u64map_del(&s->live, r->ptr, &b)) {
		s->current -= b.size;
		s->free_calls++;
		s->last_free_ptr = r->ptr;
		s->last_free_corr = r->corr;
	}
	return 0;
}

static int on_gpu(struct cuda_stats *s, const struct prof_rec_cuda_gpu *r)
{
	if (r->activity != PROF_CUDA_ACT_KERNEL && r->activity != PROF_CUDA_ACT_COPY)
		return 0;  /* nothing is counted of the rest */
	struct cuda_gpu_ev g;
	memset(&g, 0, sizeof(g));
	g.corr = r->corr;
	g.start = r->start;
	g.end = r->end >= r->start ? r->end : r->start;
	g.bytes = r->bytes;
	g.name = r->name;
	memcpy(g.grid, r->grid, sizeof(g.grid));
	memcpy(g.block, r->block, sizeof(g.block));
	g.activity = r->activity;
	g.copy_kind = r->copy_kind < PROF_CUDA_COPY_KIND_COUNT ? r->copy_kind : 0;
	g.timing = (uint8_t)(r->h.flags & 0xff);
	g.cupti_corr = (r->h.flags & PROF_CUDA_GPU_CUPTI_CORR) != 0;
	if (!g.cupti_corr)
		return gpu_for_corr(s, &g, g.corr, NULL);
	struct cuda_xc *x = u64map_get(&s->xcorr, g.corr);
	if (!x)  /* its CUDA_XCORR may come later */
		return pend_add(s, &s->pend_cupti, g.corr, &g);
	int released;
	if (gpu_for_corr(s, &g, x->corr, &released) < 0)
		return -1;
	if (released)  /* the call is done: so is CUPTI's name for it */
		u64map_del(&s->xcorr, g.corr, NULL);
	return 0;
}

static int on_xcorr(struct cuda_stats *s, const struct prof_rec_cuda_xcorr *r)
{
	struct cuda_xc *x = u64map_put(&s->xcorr, r->cupti_corr, NULL);
	if (!x)
		return -1;
	x->corr = r->corr;
	x->seq = ++s->xcorr_seq;
	struct cuda_pend p;
	if (u64map_del(&s->pend_cupti, r->cupti_corr, &p)) {  /* GPU activity that came first */
		int rc = 0, released = 0;
		for (uint32_t i = 0; i <= p.nmore && rc == 0; i++) {
			const struct cuda_gpu_ev *g = i ? &p.more[i - 1] : &p.first;
			rc = gpu_for_corr(s, g, r->corr, &released);
		}
		s->npend -= 1 + (uint64_t)p.nmore;
		free(p.more);
		if (rc < 0)
			return -1;
		if (released)
			u64map_del(&s->xcorr, r->cupti_corr, NULL);
	}
	if (s->xcorr.count >= XCORR_MAX &&
	    map_keep_newer(s, &s->xcorr, s->xcorr_seq - XCORR_MAX / 2, NULL, NULL) < 0)
		return -1;
	return 0;
}

static int on_nvtx(struct cuda_stats *s, const struct prof_rec_cuda_nvtx *r)
{
	size_t len = strlen(r->message);
	uint64_t key = hash_bytes(1469598103934665603ull ^ r->domain, r->message, len);
	int created;
	struct cuda_nvtx_row *row = u64map_put(&s->nvtx, key, &created);
	if (!row)
		return -1;
	if (created) {
		if (!(row->message = strdup(r->message)))
			return -1;
		row->domain = r->domain;
		row->kind = r->h.flags;
	}
	return cuda_hist_add(&row->h, r->end >= r->start ? r->end - r->start : 0);
}

static int dispatch(struct process *p, const struct trace_event *ev)
{
	struct cuda_stats *s = cuda_of(p);
	const struct prof_rec *h = ev->rec;
	switch (h->type) {
	case PROF_REC_CUDA_NAME:
		return on_name(s, (const void *)h);
	case PROF_REC_CUDA_API:
		return on_api(s, ev, (const void *)h);
	case PROF_REC_CUDA_LAUNCH: {
		struct prof_rec_cuda_api api;
		if (on_launch(s, ev, (const void *)h) < 0)
			return -1;
		return prof_cuda_launch_api((const void *)h, &api) ? on_api(s, ev, &api) : 0;
	}
	case PROF_REC_CUDA_COPY:
		return on_copy(s, ev, (const void *)h);
	case PROF_REC_CUDA_MALLOC:
		return on_malloc(p, s, (const void *)h);
	case PROF_REC_CUDA_FREE:
		return on_free(s, (const void *)h);
	case PROF_REC_CUDA_GPU:
		if (on_gpu(s, (const void *)h) < 0)
			return -1;
		return pend_bound(s);
	case PROF_REC_CUDA_XCORR:
		return on_xcorr(s, (const void *)h);
	case PROF_REC_CUDA_NVTX:
		return on_nvtx(s, (const void *)h);
	case PROF_REC_CUDA_STATE: {
		const struct prof_rec_cuda_state *r = (const void *)h;
		s->timing = r->timing < PROF_CUDA_TIMING_COUNT ? r->timing : 0;
		s->have_state = 1;
		free(s->timing_detail);
		return (s->timing_detail = strdup(r->detail)) ? 0 : -1;
	}
	default:
		return 0;
	}
}

static uint64_t held(const struct cuda_stats *s)
{
	return s->open.count + s->open_corr.count + s->waiting.count + s->npend + s->xcorr.count;
}

int cuda_on_record(struct process *p, void *state, const struct trace_event *ev)
{
	struct cuda_stats *s = state;
	s->records++;
	if (ev->rec->time > s->now)
		s->now = ev->rec->time;
	int rc = dispatch(p, ev);
	uint64_t n = held(s);
	if (n > s->pending_peak)
		s->pending_peak = n;
	return rc;
}

/* ---- finish ---------------------------------------------------------------------------- */

static int cmp_dims(const uint32_t *a, const uint32_t *b)
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct cuda_kernel_row *x = a, *y = b;
	uint64_t tx = (uint64_t)x->h.sum, ty = (uint64_t)y->h.sum;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->graph != y->graph)
		return x->graph < y->graph ? -1 : 1;
	int c = cmp_dims(x->grid, y->grid);
	return c ? c : cmp_dims(x->block, y->block);
}

static int cmp_pend(const void *a, const void *b)
{
	const struct cuda_pend *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Applies (each on its own) and empties a map of pending GPU records, oldest first. */
static int pend_flush(struct cuda_stats *s, struct u64map *m)
{
	size_t n = m->count, k = 0, pos = 0;
	struct cuda_pend *v = malloc((n ? n : 1) * sizeof(*v));
	uint64_t key;
	void *val;
	if (!v)
		return -1;
	while (u64map_next(m, &pos, &key, &val))
		v[k++] = *(struct cuda_pend *)val;
	u64map_free(m);  /* the lists are in v now */
	if (k)
		qsort(v, k, sizeof(*v), cmp_pend);
	int rc = 0;
	for (size_t i = 0; i < k; i++) {
		if (rc == 0)
			rc = pend_apply(s, &v[i], 0);
		else
			free(v[i].more);
	}
	free(v);
	return rc;
}

int cuda_finish(struct process *p)
{
	struct cuda_stats *s = cuda_of(p);
	size_t pos = 0;
	uint64_t key;
	void *val;
	/* the calls still open, then GPU activity that found no call */
	for (pos = 0; u64map_next(&s->open, &pos, &key, &val);)
		if (close_call(s, val) < 0)
			return -1;
	u64map_free(&s->open);
	u64map_free(&s->open_corr);
	if (pend_flush(s, &s->pend_cupti) < 0 || pend_flush(s, &s->pend_ours) < 0)
		return -1;
	u64map_free(&s->waiting);  /* untimed calls, already counted */
	u64map_free(&s->xcorr);
	u64map_free(&s->kernel_index);
	if (s->nkernels)  /* qsort(NULL, 0, ...) is undefined */
		qsort(s->kernels, s->nkernels, sizeof(*s->kernels), cmp_kernel);
	/* leaks: device blocks still live */
	for (pos = 0; u64map_next(&s->live, &pos, &key, &val);) {
		struct cuda_block *b = val;
		s->leaked_bytes += b->size;
		s->leaked_blocks++;
		int created;
		struct cuda_leak_site *site = u64map_put(&s->leak_sites, b->stack, &created);
		if (!site)
			return -1;
		site->bytes += b->size;
		site->blocks++;
	}
	return 0;
}

int cuda_has_data(const struct process *p)
{
	return cuda_of(p)->records > 0;
}

/* ---- names ----------------------------------------------------------------------------- */

const char *cuda_name_str(const struct process *p, uint32_t id)
{
	const struct cuda_name_ent *e = id ? u64map_get(&cuda_of(p)->names, id) : NULL;
	if (!e)
		return "";
	return e->demangled ? e->demangled : e->str;
}

const char *cuda_kernel_name(const struct process *p, const struct cuda_kernel_row *k)
{
	if (k->graph)
		return "[CUDA graph]";
	const char *n = cuda_name_str(p, k->name);
	return *n ? n : "[unknown kernel]";
}

const char *cuda_timing_str(unsigned timing)
{
	switch (timing) {
#define PROF_X(name, str, v) case v: return str;
		PROF_CUDA_TIMING_KINDS(PROF_X)
#undef PROF_X
	default:
		return "none";
	}
}

static const char *copy_kind_str(unsigned k)
{
	switch (k) {
#define PROF_X(name, str, v) case v: return str;
		PROF_CUDA_COPY_KINDS(PROF_X)
#undef PROF_X
	default:
		return "?";
	}
}

/* ---- sorted views ---------------------------------------------------------------------- */

static int cmp_api(const void *a, const void *b)
{
	const struct cuda_api_row *x = *(const struct cuda_api_row *const *)a;
	const struct cuda_api_row *y = *(const struct cuda_api_row *const *)b;
	if (x->h.sum != y->h.sum)
		return x->h.sum > y->h.sum ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static struct cuda_api_row **api_sorted(struct process *p, size_t *n)
{
	struct cuda_api_row **v = malloc((cuda_of(p)->api.count + 1) * sizeof(*v));
	size_t pos = 0, k = 0;
	uint64_t key;
	void *val;
	if (!v)
		return NULL;
	while (u64map_next(&cuda_of(p)->api, &pos, &key, &val))
		v[k++] = val;
	qsort(v, k, sizeof(*v), cmp_api);
	*n = k;
	return v;
}

static int cmp_nvtx(const void *a, const void *b)
{
	const struct cuda_nvtx_row *x = *(const struct cuda_nvtx_row *const *)a;
	const struct cuda_nvtx_row *y = *(const struct cuda_nvtx_row *const *)b;
	if (x->h.sum != y->h.sum)
		return x->h.sum > y->h.sum ? -1 : 1;
	return strcmp(x->message, y->message);
}

static struct cuda_nvtx_row **nvtx_sorted(struct process *p, size_t *n)
{
	struct cuda_nvtx_row **v = malloc((cuda_of(p)->nvtx.count + 1) * sizeof(*v));
	size_t pos = 0, k = 0;
	uint64_t key;
	void *val;
	if (!v)
		return NULL;
	while (u64map_next(&cuda_of(p)->nvtx, &pos, &key, &val))
		v[k++] = val;
	qsort(v, k, sizeof(*v), cmp_nvtx);
	*n = k;
	return v;
}

struct leak_ref {
	uint32_t stack;
	const struct cuda_leak_site *s;
};

static int cmp_leak(const void *a, const void *b)
{
	const struct leak_ref *x = a, *y = b;
	if (x->s->bytes != y->s->bytes)
		return x->s->bytes > y->s->bytes ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static struct leak_ref *leaks_sorted(struct process *p, size_t *n)
{
	struct leak_ref *v = malloc((cuda_of(p)->leak_sites.count + 1) * sizeof(*v));
	size_t pos = 0, k = 0;
	uint64_t key;
	void *val;
	if (!v)
		return NULL;
	while (u64map_next(&cuda_of(p)->leak_sites, &pos, &key, &val))
		v[k++] = (struct leak_ref){ (uint32_t)key, val };
	qsort(v, k, sizeof(*v), cmp_leak);
	*n = k;
	return v;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *dim_json(const uint32_t d[3])
{
	return json_pack("[I,I,I]", (json_int_t)d[0], (json_int_t)d[1], (json_int_t)d[2]);
}

static void hist_fields(json_t *o, const struct cuda_hist *h)
{
	json_object_set_new(o, "total_ns", json_integer((json_int_t)llround(h->sum)));
	json_object_set_new(o, "avg_ns", json_integer((json_int_t)hist_avg(h)));
	json_object_set_new(o, "med_ns", json_integer((json_int_t)cuda_hist_median(h)));
	json_object_set_new(o, "min_ns", json_integer((json_int_t)h->min));
	json_object_set_new(o, "max_ns", json_integer((json_int_t)h->max));
	json_object_set_new(o, "stddev_ns", json_integer((json_int_t)cuda_hist_stddev(h)));
}

static double pct(double part, double whole)
{
	return whole > 0 ? round(part * 10000.0 / whole) / 100.0 : 0.0;
}

json_t *cuda_kernels_json(struct process *p, size_t top)
{
	struct cuda_stats *s = cuda_of(p);
	json_t *arr = json_array();
	for (size_t i = 0; i < s->nkernels && i < top; i++) {
		const struct cuda_kernel_row *k = &s->kernels[i];
		const struct cuda_name_ent *e = k->name ? u64map_get(&s->names, k->name) : NULL;
		json_t *o = json_pack("{s:o,s:o,s:I,s:I}", "name", jstr(cuda_kernel_name(p, k)),
				      "mangled", e ? jstr(e->str) : json_null(),
				      "launches", (json_int_t)k->launches, "timed", (json_int_t)k->h.n);
		hist_fields(o, &k->h);
		json_object_set_new(o, "time_pct", json_real(pct(k->h.sum, (double)s->kernel_ns)));
		json_object_set_new(o, "grid", dim_json(k->grid));
		json_object_set_new(o, "block", dim_json(k->block));
		json_object_set_new(o, "timing", json_string(cuda_timing_str(k->timing)));
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *cuda_json(struct process *p, size_t top)
{
	struct cuda_stats *s = cuda_of(p);
	json_t *api = json_array();
	size_t n = 0;
	struct cuda_api_row **rows = api_sorted(p, &n);
	for (size_t i = 0; rows && i < n && i < top; i++) {
		const struct cuda_api_row *r = rows[i];
		json_t *o = json_pack("{s:o,s:s,s:I,s:I}", "name", jstr(cuda_name_str(p, r->name)),
				      "layer", r->layer ? "driver" : "runtime",
				      "calls", (json_int_t)r->h.n, "errors", (json_int_t)r->errors);
		hist_fields(o, &r->h);
		json_object_set_new(o, "time_pct", json_real(pct(r->h.sum, (double)s->api_ns)));
		json_array_append_new(api, o);
	}
	free(rows);
	json_t *memcpy_rows = json_array();
	for (unsigned k = 0; k < PROF_CUDA_COPY_KIND_COUNT; k++) {
		const struct cuda_copy_row *r = &s->copy[k];
		if (k == PROF_CUDA_COPY_MEMSET || !r->count)
			continue;
		json_array_append_new(memcpy_rows, json_pack("{s:s,s:I,s:I,s:I,s:I,s:s}",
			"kind", copy_kind_str(k), "count", (json_int_t)r->count,
			"bytes", (json_int_t)r->bytes, "total_ns", (json_int_t)llround(r->h.sum),
			"timed", (json_int_t)r->timed, "timing", cuda_timing_str(r->timing)));
	}
	const struct cuda_copy_row *ms = &s->copy[PROF_CUDA_COPY_MEMSET];
	json_t *nvtx = json_array();
	struct cuda_nvtx_row **nr = nvtx_sorted(p, &n);
	for (size_t i = 0; nr && i < n && i < top; i++) {
		json_t *o = json_pack("{s:o,s:o,s:s,s:I}", "name", jstr(nr[i]->message),
				      "domain", nr[i]->domain ? jstr(cuda_name_str(p, nr[i]->domain)) : json_null(),
				      "kind", nr[i]->kind == PROF_CUDA_NVTX_MARK ? "mark" :
					      nr[i]->kind == PROF_CUDA_NVTX_RANGE ? "range" : "push_pop",
				      "count", (json_int_t)nr[i]->h.n);
		hist_fields(o, &nr[i]->h);
		json_array_append_new(nvtx, o);
	}
	free(nr);
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:{s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:o,s:I}",
		"timing", cuda_timing_str(s->timing),
		"timing_detail", s->timing_detail ? jstr(s->timing_detail) : json_null(),
		"api", api, "kernels", cuda_kernels_json(p, top), "memcpy", memcpy_rows,
		"memset", "count", (json_int_t)ms->count, "bytes", (json_int_t)ms->bytes,
		"total_ns", (json_int_t)llround(ms->h.sum),
		"device_memory", "alloc_calls", (json_int_t)s->alloc_calls,
		"free_calls", (json_int_t)s->free_calls, "bytes_allocated", (json_int_t)s->bytes_allocated,
		"peak_bytes", (json_int_t)s->peak, "peak_ns", (json_int_t)s->peak_ns,
		"leaked_bytes", (json_int_t)s->leaked_bytes, "leaked_blocks", (json_int_t)s->leaked_blocks,
		"nvtx", nvtx, "correlated_driver_calls", (json_int_t)s->correlated);
	return o;
}

/* ---- text ------------------------------------------------------------------------------ */

void cuda_kernels_print(FILE *out, struct process *p, size_t top)
{
	struct cuda_stats *s = cuda_of(p);
	char a[32], b[32], c[32], d[32], e[32], f[32];
	fprintf(out, " Time(%%)      Total  Instances        Avg        Med        Min        Max     StdDev  Grid          Block         Timing  Name\n");
	for (size_t i = 0; i < s->nkernels && i < top; i++) {
		const struct cuda_kernel_row *k = &s->kernels[i];
		char grid[32], block[32];
		snprintf(grid, sizeof(grid), "%u,%u,%u", k->grid[0], k->grid[1], k->grid[2]);
		snprintf(block, sizeof(block), "%u,%u,%u", k->block[0], k->block[1], k->block[2]);
		fprintf(out, "  %5.1f %10s %10llu %10s %10s %10s %10s %10s  %-13s %-13s %-6s  %s\n",
			pct(k->h.sum, (double)s->kernel_ns), fmt_ns((uint64_t)k->h.sum, a, sizeof(a)),
			(unsigned long long)k->launches, fmt_ns(hist_avg(&k->h), b, sizeof(b)),
			fmt_ns(cuda_hist_median(&k->h), c, sizeof(c)), fmt_ns(k->h.min, d, sizeof(d)),
			fmt_ns(k->h.max, e, sizeof(e)), fmt_ns(cuda_hist_stddev(&k->h), f, sizeof(f)),
			k->graph ? "-" : grid, k->graph ? "-" : block, cuda_timing_str(k->timing),
			cuda_kernel_name(p, k));
	}
}

void cuda_print(FILE *out, struct process *p, size_t top, int frames)
{
	(void)frames;
	struct cuda_stats *s = cuda_of(p);
	char a[32], b[32], c[32], d[32], e[32], f[32];
	fprintf(out, "\n-- CUDA (GPU timing: %s%s%s%s)\n", cuda_timing_str(s->timing),
		s->timing_detail ? ": " : "", s->timing_detail ? s->timing_detail : "",
		s->correlated ? "" : "");
	size_t n = 0;
	struct cuda_api_row **rows = api_sorted(p, &n);
	if (rows && n) {
		char corr[32];
		fprintf(out, "\n   API calls (%s driver call%s made inside runtime calls)\n",
			fmt_count(s->correlated, corr, sizeof(corr)), s->correlated == 1 ? "" : "s");
		fprintf(out, " Time(%%)      Total      Calls        Avg        Med        Min        Max     StdDev  Errors  Name\n");
		for (size_t i = 0; i < n && i < top; i++) {
			const struct cuda_api_row *r = rows[i];
			fprintf(out, "  %5.1f %10s %10llu %10s %10s %10s %10s %10s  %6llu  %s\n",
				pct(r->h.sum, (double)s->api_ns), fmt_ns((uint64_t)r->h.sum, a, sizeof(a)),
				(unsigned long long)r->h.n, fmt_ns(hist_avg(&r->h), b, sizeof(b)),
				fmt_ns(cuda_hist_median(&r->h), c, sizeof(c)), fmt_ns(r->h.min, d, sizeof(d)),
				fmt_ns(r->h.max, e, sizeof(e)), fmt_ns(cuda_hist_stddev(&r->h), f, sizeof(f)),
				(unsigned long long)r->errors, cuda_name_str(p, r->name));
		}
		if (n > top)
			fprintf(out, "   ... %zu more\n", n - top);
	}
	free(rows);
	if (s->nkernels) {
		fprintf(out, "\n   GPU kernels (%s of GPU time)\n", fmt_ns(s->kernel_ns, a, sizeof(a)));
		cuda_kernels_print(out, p, top);
	}
	int any_copy = 0;
	for (unsigned k = 0; k < PROF_CUDA_COPY_KIND_COUNT; k++)
		any_copy |= s->copy[k].count != 0;
	if (any_copy) {
		fprintf(out, "\n   Memory operations\n   Operation       Count        Bytes      GPU time   Timing\n");
		for (unsigned k = 0; k < PROF_CUDA_COPY_KIND_COUNT; k++) {
			const struct cuda_copy_row *r = &s->copy[k];
			if (!r->count)
				continue;
			fprintf(out, "   %-10s %10llu %12s %13s   %s\n", copy_kind_str(k),
				(unsigned long long)r->count, fmt_bytes(r->bytes, a, sizeof(a)),
				fmt_ns((uint64_t)r->h.sum, b, sizeof(b)), cuda_timing_str(r->timing));
		}
	}
	if (s->alloc_calls)
	{
		char calls[32], blocks[32];
		fprintf(out, "\n   Device memory: %s allocation%s, %s allocated, peak %s, %s in %s block%s not freed\n",
			fmt_count(s->alloc_calls, calls, sizeof(calls)), s->alloc_calls == 1 ? "" : "s",
			fmt_bytes(s->bytes_allocated, a, sizeof(a)), fmt_bytes(s->peak, b, sizeof(b)),
			fmt_bytes(s->leaked_bytes, c, sizeof(c)),
			fmt_count(s->leaked_blocks, blocks, sizeof(blocks)), s->leaked_blocks == 1 ? "" : "s");
	}
	struct cuda_nvtx_row **nr = nvtx_sorted(p, &n);
	if (nr && n) {
		fprintf(out, "\n   NVTX ranges\n      Total      Count        Avg        Med        Min        Max  Name\n");
		for (size_t i = 0; i < n && i < top; i++) {
			const struct cuda_nvtx_row *r = nr[i];
			const char *dom = r->domain ? cuda_name_str(p, r->domain) : NULL;
			fprintf(out, " %10s %10llu %10s %10s %10s %10s  %s%s%s%s\n",
				fmt_ns((uint64_t)r->h.sum, a, sizeof(a)), (unsigned long long)r->h.n,
				fmt_ns(hist_avg(&r->h), b, sizeof(b)), fmt_ns(cuda_hist_median(&r->h), c, sizeof(c)),
				fmt_ns(r->h.min, d, sizeof(d)), fmt_ns(r->h.max, e, sizeof(e)),
				dom ? dom : "", dom ? ":" : "", r->message,
				r->kind == PROF_CUDA_NVTX_MARK ? " (mark)" : "");
		}
	}
	free(nr);
}

/* ---- leaks and flame graphs ------------------------------------------------------------ */

void cuda_leaks_json(struct process *p, json_t *proc, json_t *leaks, const struct leak_view *view)
{
	size_t top = view->top;
	(void)proc;  /* the device totals are in prof report's "cuda" section */
	size_t n = 0;
	struct leak_ref *v = leaks_sorted(p, &n);
	for (size_t i = 0; v && i < n && i < top; i++)
		json_array_append_new(leaks, json_pack("{s:s,s:I,s:I,s:o}", "kind", "device",
			"bytes", (json_int_t)v[i].s->bytes, "blocks", (json_int_t)v[i].s->blocks,
			"stack", stack_json(p, v[i].stack)));
	free(v);
}

void cuda_leaks_print(FILE *out, struct process *p, const struct leak_view *view)
{
	size_t top = view->top;
	int frames = view->frames;
	char a[32], b[32];
	size_t n = 0;
	struct leak_ref *v = leaks_sorted(p, &n);
	for (size_t i = 0; v && i < n && i < top; i++) {
		fprintf(out, "\n%s bytes in %s GPU device block%s %s, record %zu of %zu, from:\n",
			fmt_count(v[i].s->bytes, a, sizeof(a)), fmt_count(v[i].s->blocks, b, sizeof(b)),
			v[i].s->blocks == 1 ? "" : "s",
			p->complete ? "still allocated at exit" : "in use", i + 1, n);
		stack_print(out, p, v[i].stack, frames, "   ");
	}
	if (v && n)
		fprintf(out, "\nGPU LEAK SUMMARY: %s bytes in %s device block%s from %zu allocation site%s\n",
			fmt_count(cuda_of(p)->leaked_bytes, a, sizeof(a)),
			fmt_count(cuda_of(p)->leaked_blocks, b, sizeof(b)),
			cuda_of(p)->leaked_blocks == 1 ? "" : "s", n, n == 1 ? "" : "s");
	free(v);
}

int cuda_flame(struct process *p, const char *by,
	       void (*emit)(void *ctx, uint32_t stack, uint64_t weight), void *ctx)
{
	(void)by;
	size_t pos = 0;
	uint64_t key;
	void *val;
	while (u64map_next(&cuda_of(p)->gpu_by_stack, &pos, &key, &val))
		if (*(uint64_t *)val)
			emit(ctx, (uint32_t)key, *(uint64_t *)val);
	return 0;
}

/* ---- summaries ---------------------------------------------------------------------------- */

/* A histogram: its plain fields, then its non-empty buckets (present once n > CUDA_EXACT). */
static void hist_put(struct sum_out *w, const struct cuda_hist *h)
{
	struct cuda_hist plain = *h;
	plain.buckets = NULL;
	sum_put_fixed(w, &plain, sizeof(plain));
	uint32_t used = 0;
	for (unsigned b = 0; h->buckets && b < HIST_BUCKETS; b++)
		used += h->buckets[b] != 0;
	sum_put_u32(w, used);
	for (unsigned b = 0; h->buckets && b < HIST_BUCKETS; b++)
		if (h->buckets[b]) {
			sum_put_u32(w, b);
			sum_put_u32(w, h->buckets[b]);
		}
}

static int hist_get(struct sum_in *r, struct cuda_hist *h)
{
	sum_get_fixed(r, h, sizeof(*h));
	h->buckets = NULL;
	uint32_t used = sum_get_u32(r);
	if (r->bad || used > HIST_BUCKETS) {
		r->bad = 1;
		return 0;
	}
	if (h->n > CUDA_EXACT && !(h->buckets = calloc(HIST_BUCKETS, sizeof(uint32_t))))
		return -1;
	if (used && !h->buckets)  /* buckets only past the exact values */
		r->bad = 1;
	for (uint32_t i = 0; i < used && !r->bad; i++) {
		uint32_t b = sum_get_u32(r), c = sum_get_u32(r);
		if (b >= HIST_BUCKETS)
			r->bad = 1;
		else
			h->buckets[b] = c;
	}
	return 0;
}

int cuda_sum_write(struct sum_out *w, const struct process *p, const void *state)
{
	const struct cuda_stats *s = state;
	(void)p;
	const uint64_t v[] = { s->records, s->now, s->wait_seq, s->pend_seq, s->xcorr_seq, s->npend,
			       s->open_limit, s->pend_limit, s->pending_peak, s->expired,
			       s->alloc_calls, s->free_calls, s->bytes_allocated, s->current,
			       s->peak, s->peak_ns, s->leaked_bytes, s->leaked_blocks,
			       s->last_free_ptr, s->last_free_corr, s->timing,
			       (uint64_t)s->have_state, s->kernel_ns, s->correlated, s->api_ns };
	sum_put_fixed(w, v, sizeof(v));
	sum_put_str(w, s->timing_detail);
	size_t pos = 0;
	uint64_t key;
	void *val;
	sum_put_u64(w, s->names.count);
	while (u64map_next(&s->names, &pos, &key, &val)) {
		const struct cuda_name_ent *e = val;
		sum_put_u64(w, key);
		sum_put_str(w, e->str);
		sum_put_str(w, e->demangled);
		sum_put_u32(w, e->kind);
	}
	sum_put_u64(w, s->nvtx.count);
	for (pos = 0; u64map_next(&s->nvtx, &pos, &key, &val);) {
		const struct cuda_nvtx_row *n = val;
		sum_put_u64(w, key);
		sum_put_str(w, n->message);
		sum_put_u32(w, n->domain);
		sum_put_u32(w, n->kind);
		hist_put(w, &n->h);
	}
	sum_put_u64(w, s->api.count);
	for (pos = 0; u64map_next(&s->api, &pos, &key, &val);) {
		const struct cuda_api_row *a = val;
		sum_put_u64(w, key);
		sum_put_u32(w, a->name);
		sum_put_u32(w, a->layer);
		sum_put_u64(w, a->errors);
		hist_put(w, &a->h);
	}
	sum_put_u64(w, s->nkernels);
	for (size_t i = 0; i < s->nkernels; i++) {
		struct cuda_kernel_row plain = s->kernels[i];
		plain.h = (struct cuda_hist){ 0 };
		sum_put_fixed(w, &plain, sizeof(plain));
		hist_put(w, &s->kernels[i].h);
	}
	for (int i = 0; i < PROF_CUDA_COPY_KIND_COUNT; i++) {
		struct cuda_copy_row plain = s->copy[i];
		plain.h = (struct cuda_hist){ 0 };
		sum_put_fixed(w, &plain, sizeof(plain));
		hist_put(w, &s->copy[i].h);
	}
	sum_put_map(w, &s->thread_api);
	sum_put_map(w, &s->gpu_by_stack);
	sum_put_map(w, &s->leak_sites);
	return 0;
}

/* The names and NVTX rows: a key twice, or a name without its string, is bad input. */
static int read_names(struct sum_in *r, struct cuda_stats *s)
{
	int oom = 0;
	size_t n = sum_get_count(r, 20);
	for (size_t i = 0; i < n && !r->bad; i++) {
		uint64_t key = sum_get_u64(r);
		char *str = sum_get_str(r, &oom), *dem = sum_get_str(r, &oom);
		unsigned kind = sum_get_u32(r);
		int created = 0;
		struct cuda_name_ent *e = NULL;
		if (!oom && !r->bad && str && !(e = u64map_put(&s->names, key, &created)))
			oom = 1;
		if (!e || !created) {
			free(str);
			free(dem);
			if (oom)
				return -1;
			r->bad = 1;
			break;
		}
		*e = (struct cuda_name_ent){ str, dem, kind };
	}
	n = sum_get_count(r, 28);
	for (size_t i = 0; i < n && !r->bad; i++) {
		uint64_t key = sum_get_u64(r);
		char *msg = sum_get_str(r, &oom);
		int created = 0;
		struct cuda_nvtx_row *row = NULL;
		if (!oom && !r->bad && !(row = u64map_put(&s->nvtx, key, &created)))
			oom = 1;
		if (!row || !created) {
			free(msg);
			if (oom)
				return -1;
			r->bad = 1;
			break;
		}
		row->message = msg;
		row->domain = sum_get_u32(r);
		row->kind = sum_get_u32(r);
		if (hist_get(r, &row->h) < 0)
			return -1;
	}
	return 0;
}

int cuda_sum_read(struct sum_in *r, struct process *p, void *state)
{
	struct cuda_stats *s = state;
	(void)p;
	uint64_t v[25];
	int oom = 0;
	sum_get_fixed(r, v, sizeof(v));
	s->records = v[0];
	s->now = v[1];
	s->wait_seq = v[2];
	s->pend_seq = v[3];
	s->xcorr_seq = v[4];
	s->npend = v[5];
	s->open_limit = (size_t)v[6];
	s->pend_limit = (size_t)v[7];
	s->pending_peak = v[8];
	s->expired = v[9];
	s->alloc_calls = v[10];
	s->free_calls = v[11];
	s->bytes_allocated = v[12];
	s->current = v[13];
	s->peak = v[14];
	s->peak_ns = v[15];
	s->leaked_bytes = v[16];
	s->leaked_blocks = v[17];
	s->last_free_ptr = v[18];
	s->last_free_corr = v[19];
	s->timing = (unsigned)v[20];
	s->have_state = (int)v[21];
	s->kernel_ns = v[22];
	s->correlated = v[23];
	s->api_ns = v[24];
	s->timing_detail = sum_get_str(r, &oom);
	if (oom || read_names(r, s) < 0)
		return -1;
	size_t n = sum_get_count(r, 28);
	for (size_t i = 0; i < n && !r->bad; i++) {
		uint64_t key = sum_get_u64(r);
		int created;
		struct cuda_api_row *a = u64map_put(&s->api, key, &created);
		if (!a)
			return -1;
		if (!created) {
			r->bad = 1;
			break;
		}
		a->name = sum_get_u32(r);
		a->layer = sum_get_u32(r);
		a->errors = sum_get_u64(r);
		if (hist_get(r, &a->h) < 0)
			return -1;
	}
	n = sum_get_count(r, sizeof(struct cuda_kernel_row));
	if (n && !r->bad) {
		if (!(s->kernels = calloc(n, sizeof(*s->kernels))))
			return -1;
		s->kernels_cap = n;
	}
	for (size_t i = 0; i < n && !r->bad; i++) {
		struct cuda_kernel_row *k = &s->kernels[i];
		sum_get_fixed(r, k, sizeof(*k));
		k->h = (struct cuda_hist){ 0 };
		s->nkernels = i + 1;
		if (hist_get(r, &k->h) < 0)
			return -1;
	}
	for (int i = 0; i < PROF_CUDA_COPY_KIND_COUNT && !r->bad; i++) {
		sum_get_fixed(r, &s->copy[i], sizeof(s->copy[i]));
		s->copy[i].h = (struct cuda_hist){ 0 };
		if (hist_get(r, &s->copy[i].h) < 0)
			return -1;
	}
	if (sum_get_map(r, &s->thread_api) < 0 || sum_get_map(r, &s->gpu_by_stack) < 0 ||
	    sum_get_map(r, &s->leak_sites) < 0)
		return -1;
	return 0;
}
