/* Analysis of CUDA activity: API calls per function, kernels per (name, grid, block) with
 * their GPU time, copies and memsets by direction, device memory and its leaks, NVTX ranges,
 * and GPU time per launching stack. A runtime call and the driver calls it made share one
 * correlation id; what both layers describe (an allocation, a launch, a copy) counts once. */
#include "cuda.h"
#include "process.h"
#include "format.h"
#include "stackfmt.h"
#include "trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cuda_name_ent {
	char *str;
	char *demangled;  /* NULL if not mangled */
	unsigned kind;
};

struct cuda_launch {
	uint32_t name, stack, grid[3], block[3];
	int graph;
};

struct cuda_copy {
	uint64_t bytes;
	uint16_t kind;
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
	u64map_init(&s->launches, sizeof(struct cuda_launch));
	u64map_init(&s->copies, sizeof(struct cuda_copy));
	u64map_init(&s->xcorr, sizeof(uint64_t));
	u64map_init(&s->corr_layers, sizeof(uint8_t));
	u64map_init(&s->live, sizeof(struct cuda_block));
	u64map_init(&s->nvtx, sizeof(struct cuda_nvtx_row));
	u64map_init(&s->gpu_by_stack, sizeof(uint64_t));
	u64map_init(&s->leak_sites, sizeof(struct cuda_leak_site));
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
	free(s->gpu);
	free(s->timing_detail);
	u64map_free(&s->names);
	u64map_free(&s->api);
	u64map_free(&s->launches);
	u64map_free(&s->copies);
	u64map_free(&s->xcorr);
	u64map_free(&s->corr_layers);
	u64map_free(&s->live);
	u64map_free(&s->nvtx);
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

static int on_api(struct cuda_stats *s, const struct prof_rec_cuda_api *r)
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
	uint8_t *l = u64map_put(&s->corr_layers, r->corr, &created);
	if (!l)
		return -1;
	*l |= (uint8_t)(1u << (r->h.flags & 1));
	return cuda_hist_add(&row->h, r->duration_ns);
}

static int on_launch(struct cuda_stats *s, const struct prof_rec_cuda_launch *r)
{
	int created;
	struct cuda_launch *l = u64map_put(&s->launches, r->corr, &created);
	if (!l)
		return -1;
	if (created || (!l->name && r->name)) {
		l->name = r->name;
		l->stack = r->stack;
		memcpy(l->grid, r->grid, sizeof(l->grid));
		memcpy(l->block, r->block, sizeof(l->block));
		l->graph = r->graph != 0;
	}
	return 0;
}

static int on_copy(struct cuda_stats *s, const struct prof_rec_cuda_copy *r)
{
	int created;
	struct cuda_copy *c = u64map_put(&s->copies, r->corr, &created);
	if (!c)
		return -1;
	if (created || c->kind == PROF_CUDA_COPY_UNKNOWN) {
		c->kind = r->kind < PROF_CUDA_COPY_KIND_COUNT ? r->kind : PROF_CUDA_COPY_UNKNOWN;
		c->bytes = r->bytes;
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
	if (s->ngpu == s->gpu_cap) {
		size_t cap = s->gpu_cap ? s->gpu_cap * 2 : 1024;
		struct cuda_gpu_ev *v = realloc(s->gpu, cap * sizeof(*v));
		if (!v)
			return -1;
		s->gpu = v;
		s->gpu_cap = cap;
	}
	struct cuda_gpu_ev *g = &s->gpu[s->ngpu++];
	g->corr = r->corr;
	g->start = r->start;
	g->end = r->end >= r->start ? r->end : r->start;
	g->bytes = r->bytes;
	g->name = r->name;
	memcpy(g->grid, r->grid, sizeof(g->grid));
	memcpy(g->block, r->block, sizeof(g->block));
	g->activity = r->activity;
	g->copy_kind = r->copy_kind < PROF_CUDA_COPY_KIND_COUNT ? r->copy_kind : 0;
	g->timing = (uint8_t)(r->h.flags & 0xff);
	g->cupti_corr = (r->h.flags & PROF_CUDA_GPU_CUPTI_CORR) != 0;
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

int cuda_on_record(struct process *p, const struct trace_event *ev)
{
	struct cuda_stats *s = cuda_of(p);
	const struct prof_rec *h = ev->rec;
	s->records++;
	switch (h->type) {
	case PROF_REC_CUDA_NAME:
		return on_name(s, (const void *)h);
	case PROF_REC_CUDA_API:
		return on_api(s, (const void *)h);
	case PROF_REC_CUDA_LAUNCH:
		return on_launch(s, (const void *)h);
	case PROF_REC_CUDA_COPY:
		return on_copy(s, (const void *)h);
	case PROF_REC_CUDA_MALLOC:
		return on_malloc(p, s, (const void *)h);
	case PROF_REC_CUDA_FREE:
		return on_free(s, (const void *)h);
	case PROF_REC_CUDA_GPU:
		return on_gpu(s, (const void *)h);
	case PROF_REC_CUDA_XCORR: {
		const struct prof_rec_cuda_xcorr *r = (const void *)h;
		int created;
		uint64_t *v = u64map_put(&s->xcorr, r->cupti_corr, &created);
		if (!v)
			return -1;
		*v = r->corr;
		return 0;
	}
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

/* ---- finish: join GPU activity to launches and copies ---------------------------------- */

static int kernel_row_index(struct cuda_stats *s, struct u64map *index, uint32_t name, int graph,
			    const uint32_t grid[3], const uint32_t block[3])
{
	uint64_t key = hash_bytes(1469598103934665603ull, &name, sizeof(name));
	key = hash_bytes(key, &graph, sizeof(graph));
	key = hash_bytes(key, grid, 12);
	key = hash_bytes(key, block, 12);
	int created;
	size_t *idx = u64map_put(index, key, &created);
	if (!idx)
		return -1;
	if (created) {
		struct cuda_kernel_row *v = realloc(s->kernels, (s->nkernels + 1) * sizeof(*v));
		if (!v)
			return -1;
		s->kernels = v;
		memset(&v[s->nkernels], 0, sizeof(v[0]));
		v[s->nkernels].name = name;
		v[s->nkernels].graph = graph;
		memcpy(v[s->nkernels].grid, grid, 12);
		memcpy(v[s->nkernels].block, block, 12);
		*idx = s->nkernels++;
	}
	return (int)*idx;
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct cuda_kernel_row *x = a, *y = b;
	uint64_t tx = (uint64_t)x->h.sum, ty = (uint64_t)y->h.sum;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->launches > y->launches ? -1 : x->launches < y->launches;
}

int cuda_finish(struct process *p)
{
	struct cuda_stats *s = cuda_of(p);
	struct u64map index, launch_row;
	u64map_init(&index, sizeof(size_t));
	u64map_init(&launch_row, sizeof(size_t));
	int rc = -1;
	size_t pos = 0;
	uint64_t key;
	void *val;
	/* launches -> rows */
	while (u64map_next(&s->launches, &pos, &key, &val)) {
		struct cuda_launch *l = val;
		int i = kernel_row_index(s, &index, l->name, l->graph, l->grid, l->block);
		if (i < 0)
			goto out;
		s->kernels[i].launches++;
		int created;
		size_t *lr = u64map_put(&launch_row, key, &created);
		if (!lr)
			goto out;
		*lr = (size_t)i;
	}
	/* copies by direction */
	for (pos = 0; u64map_next(&s->copies, &pos, &key, &val);) {
		struct cuda_copy *c = val;
		s->copy[c->kind].count++;
		s->copy[c->kind].bytes += c->bytes;
	}
	/* GPU activity */
	for (size_t i = 0; i < s->ngpu; i++) {
		struct cuda_gpu_ev *g = &s->gpu[i];
		uint64_t corr = g->corr;
		if (g->cupti_corr) {
			uint64_t *ours = u64map_get(&s->xcorr, corr);
			corr = ours ? *ours : 0;
		}
		uint64_t dur = g->end - g->start;
		if (g->activity == PROF_CUDA_ACT_KERNEL) {
			size_t *lr = corr ? u64map_get(&launch_row, corr) : NULL;
			int row;
			if (lr) {
				row = (int)*lr;
				if (!s->kernels[row].name && g->name)
					s->kernels[row].name = g->name;
			} else {  /* a launch we did not see (CUPTI): a row of its own */
				row = kernel_row_index(s, &index, g->name, 0, g->grid, g->block);
				if (row < 0)
					goto out;
				s->kernels[row].launches++;
			}
			struct cuda_kernel_row *k = &s->kernels[row];
			if (cuda_hist_add(&k->h, dur) < 0)
				goto out;
			if (g->timing > k->timing)
				k->timing = g->timing;
			s->kernel_ns += dur;
			struct cuda_launch *l = corr ? u64map_get(&s->launches, corr) : NULL;
			int created;
			uint64_t *w = u64map_put(&s->gpu_by_stack, l ? l->stack : 0, &created);
			if (!w)
				goto out;
			*w += dur;
		} else if (g->activity == PROF_CUDA_ACT_COPY) {
			struct cuda_copy *c = corr ? u64map_get(&s->copies, corr) : NULL;
			unsigned kind = g->copy_kind;
			if (c && (kind == PROF_CUDA_COPY_UNKNOWN || c->kind == PROF_CUDA_COPY_MEMSET))
				kind = c->kind;
			if (c && c->kind != kind && c->kind != PROF_CUDA_COPY_UNKNOWN)
				kind = c->kind;
			if (c && c->kind == PROF_CUDA_COPY_UNKNOWN && kind != PROF_CUDA_COPY_UNKNOWN) {
				/* the GPU knew the direction the call did not say */
				s->copy[PROF_CUDA_COPY_UNKNOWN].count--;
				s->copy[PROF_CUDA_COPY_UNKNOWN].bytes -= c->bytes;
				s->copy[kind].count++;
				s->copy[kind].bytes += c->bytes;
				c->kind = (uint16_t)kind;
			}
			if (!c) {
				s->copy[kind].count++;
				s->copy[kind].bytes += g->bytes;
			}
			struct cuda_copy_row *row = &s->copy[kind];
			row->timed++;
			if (g->timing > row->timing)
				row->timing = g->timing;
			if (cuda_hist_add(&row->h, dur) < 0)
				goto out;
		}
	}
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
			goto out;
		site->bytes += b->size;
		site->blocks++;
	}
	/* driver calls made inside a runtime call */
	uint64_t corr_key;
	for (pos = 0; u64map_next(&s->corr_layers, &pos, &corr_key, &val);)
		if (*(uint8_t *)val == 3)
			s->correlated++;
	rc = 0;
out:
	u64map_free(&index);
	u64map_free(&launch_row);
	return rc;
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
		fprintf(out, "\n   API calls (%llu driver calls made inside runtime calls)\n",
			(unsigned long long)s->correlated);
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
		fprintf(out, "\n   Device memory: %llu allocations, %s allocated, peak %s, %s in %llu blocks not freed\n",
			(unsigned long long)s->alloc_calls, fmt_bytes(s->bytes_allocated, a, sizeof(a)),
			fmt_bytes(s->peak, b, sizeof(b)), fmt_bytes(s->leaked_bytes, c, sizeof(c)),
			(unsigned long long)s->leaked_blocks);
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

void cuda_leaks_json(struct process *p, json_t *leaks, size_t top)
{
	size_t n = 0;
	struct leak_ref *v = leaks_sorted(p, &n);
	for (size_t i = 0; v && i < n && i < top; i++)
		json_array_append_new(leaks, json_pack("{s:s,s:I,s:I,s:o}", "kind", "device",
			"bytes", (json_int_t)v[i].s->bytes, "blocks", (json_int_t)v[i].s->blocks,
			"stack", stack_json(p, v[i].stack)));
	free(v);
}

void cuda_leaks_print(FILE *out, struct process *p, size_t top, int frames)
{
	char a[32], b[32];
	size_t n = 0;
	struct leak_ref *v = leaks_sorted(p, &n);
	for (size_t i = 0; v && i < n && i < top; i++) {
		fprintf(out, "\n%s bytes in %s GPU device blocks %s, record %zu of %zu, from:\n",
			fmt_count(v[i].s->bytes, a, sizeof(a)), fmt_count(v[i].s->blocks, b, sizeof(b)),
			p->complete ? "still allocated at exit" : "in use", i + 1, n);
		stack_print(out, p, v[i].stack, frames, "   ");
	}
	if (v && n)
		fprintf(out, "\nGPU LEAK SUMMARY: %s bytes in %s device blocks from %zu allocation site%s\n",
			fmt_count(cuda_of(p)->leaked_bytes, a, sizeof(a)),
			fmt_count(cuda_of(p)->leaked_blocks, b, sizeof(b)), n, n == 1 ? "" : "s");
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
