/* CUPTI activity records -> what a CUDA_GPU or CUDA_XCORR record needs. Reads fields at the
 * offsets that have been the same in every record version CUDA 11-13 ship (CUDA.md), so it
 * builds without the CUPTI headers. Pure: tests feed it hand-built buffers walked by the real
 * cuptiActivityGetNextRecord. */
#include "cupti_convert.h"
#include "prof_format.h"

#include <stdio.h>
#include <string.h>

/* CUpti_ActivityKind values we ask for. */
enum {
	ACT_MEMCPY = 1, ACT_MEMSET = 2, ACT_KERNEL = 3, ACT_CONCURRENT_KERNEL = 10,
	ACT_MEMCPY2 = 22, ACT_SYNCHRONIZATION = 38, ACT_EXTERNAL_CORRELATION = 39,
};

static uint32_t u32_at(const void *r, size_t off)
{
	uint32_t v;
	memcpy(&v, (const char *)r + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const void *r, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)r + off, sizeof(v));
	return v;
}

/* CUpti_ActivityMemcpyKind -> ours. Arrays count as device memory. */
static unsigned copy_kind(unsigned k)
{
	switch (k) {
	case 1: return PROF_CUDA_COPY_HTOD;           /* HTOD */
	case 2: case 4: return PROF_CUDA_COPY_DTOH;   /* DTOH, ATOH */
	case 3: return PROF_CUDA_COPY_HTOD;           /* HTOA */
	case 5: case 6: case 7: case 8: return PROF_CUDA_COPY_DTOD;  /* ATOA, ATOD, DTOA, DTOD */
	case 9: return PROF_CUDA_COPY_HTOH;
	case 10: return PROF_CUDA_COPY_PTOP;
	default: return PROF_CUDA_COPY_UNKNOWN;
	}
}

int cupti_convert(const void *rec, struct cupti_out *o)
{
	memset(o, 0, sizeof(*o));
	switch (u32_at(rec, 0)) {
	case ACT_KERNEL:
	case ACT_CONCURRENT_KERNEL: {
		o->type = PROF_REC_CUDA_GPU;
		o->activity = PROF_CUDA_ACT_KERNEL;
		o->start = u64_at(rec, 16);
		o->end = u64_at(rec, 24);
		o->device = u32_at(rec, 40);
		o->stream = u32_at(rec, 48);
		for (int i = 0; i < 3; i++) {
			o->grid[i] = u32_at(rec, 52 + 4 * (size_t)i);
			o->block[i] = u32_at(rec, 64 + 4 * (size_t)i);
		}
		o->corr = u32_at(rec, 92);
		o->name = (const char *)(uintptr_t)u64_at(rec, 104);
		return 0;
	}
	case ACT_MEMCPY:
	case ACT_MEMCPY2:
		o->type = PROF_REC_CUDA_GPU;
		o->activity = PROF_CUDA_ACT_COPY;
		o->copy_kind = copy_kind(((const uint8_t *)rec)[4]);
		o->bytes = u64_at(rec, 8);
		o->start = u64_at(rec, 16);
		o->end = u64_at(rec, 24);
		o->device = u32_at(rec, 32);
		o->stream = u32_at(rec, 40);
		o->corr = u32_at(rec, u32_at(rec, 0) == ACT_MEMCPY ? 44 : 60);
		return 0;
	case ACT_MEMSET:
		o->type = PROF_REC_CUDA_GPU;
		o->activity = PROF_CUDA_ACT_COPY;
		o->copy_kind = PROF_CUDA_COPY_MEMSET;
		o->bytes = u64_at(rec, 8);
		o->start = u64_at(rec, 16);
		o->end = u64_at(rec, 24);
		o->device = u32_at(rec, 32);
		o->stream = u32_at(rec, 40);
		o->corr = u32_at(rec, 44);
		return 0;
	case ACT_SYNCHRONIZATION:
		o->type = PROF_REC_CUDA_GPU;
		o->activity = PROF_CUDA_ACT_SYNC;
		o->start = u64_at(rec, 8);
		o->end = u64_at(rec, 16);
		o->corr = u32_at(rec, 24);
		o->stream = u32_at(rec, 32);
		return 0;
	case ACT_EXTERNAL_CORRELATION:
		o->type = PROF_REC_CUDA_XCORR;
		o->ext_id = u64_at(rec, 8);
		o->corr = u32_at(rec, 16);
		return 0;
	default:
		return -1;
	}
}

/* CUpti_ActivityAPI: kind@0, start@8, end@16, threadId@28, correlationId@32 (every CUPTI since
 * 4.0). */
#define ACT_DRIVER 4
#define ACT_RUNTIME 5

void cupti_describe(const void *rec, char *buf, size_t len)
{
	uint32_t kind = u32_at(rec, 0);
	struct cupti_out o;
	if (kind == ACT_DRIVER || kind == ACT_RUNTIME)
		snprintf(buf, len, "%s cbid %u tid %u %llu-%llu corr %u",
			 kind == ACT_DRIVER ? "DRIVER" : "RUNTIME", u32_at(rec, 4), u32_at(rec, 28),
			 (unsigned long long)u64_at(rec, 8), (unsigned long long)u64_at(rec, 16),
			 u32_at(rec, 32));
	else if (kind == ACT_EXTERNAL_CORRELATION)
		snprintf(buf, len, "EXTERNAL ext %llu corr %u", (unsigned long long)u64_at(rec, 8),
			 u32_at(rec, 16));
	else if (cupti_convert(rec, &o) == 0)
		snprintf(buf, len, "kind %u corr %llu start %llu", kind, (unsigned long long)o.corr,
			 (unsigned long long)o.start);
	else
		snprintf(buf, len, "kind %u", kind);
}

void cupti_link_learn(struct cupti_links *l, uint32_t corr, uint64_t ext)
{
	l->link[corr % CUPTI_LINK_SLOTS].corr = corr;
	l->link[corr % CUPTI_LINK_SLOTS].ext = ext;
}

static int inside(const struct cupti_span *in, const struct cupti_span *out)
{
	return in->tid == out->tid && in->start >= out->start && in->end <= out->end;
}

void cupti_link_call(struct cupti_links *l, uint32_t tid, uint64_t start, uint64_t end,
		     uint64_t ext)
{
	typeof(l->calls[0]) *ring = &l->calls[tid % CUPTI_CALL_RINGS];
	ring->call[ring->next++ % CUPTI_CALL_SLOTS] =
		(struct cupti_span){ .tid = tid, .start = start, .end = end, .ext = ext };
}

/* Our call inside the runtime span rt, newest first; 0 if none is kept. */
static uint64_t call_inside(struct cupti_links *l, const struct cupti_span *rt)
{
	typeof(l->calls[0]) *ring = &l->calls[rt->tid % CUPTI_CALL_RINGS];
	for (uint32_t i = 0; i < CUPTI_CALL_SLOTS && i < ring->next; i++) {
		struct cupti_span *c = &ring->call[(ring->next - 1 - i) % CUPTI_CALL_SLOTS];
		if (c->tid != rt->tid || c->start > rt->end)
			continue;
		if (c->end < rt->start)
			break;  /* a thread's calls are in time order: the rest are older */
		if (inside(c, rt) && c->ext) {
			uint64_t ext = c->ext;
			c->ext = 0;  /* one runtime call per driver call */
			return ext;
		}
	}
	return 0;
}

int cupti_link_api(struct cupti_links *l, const void *record, uint32_t *corr_out, uint64_t *ext_out)
{
	const uint8_t *rec = record;
	uint32_t kind, corr;
	memcpy(&kind, rec, 4);
	if (kind != ACT_DRIVER && kind != ACT_RUNTIME)
		return 0;
	struct cupti_span a = { 0 };
	memcpy(&a.start, rec + 8, 8);
	memcpy(&a.end, rec + 16, 8);
	memcpy(&a.tid, rec + 28, 4);
	memcpy(&corr, rec + 32, 4);
	*corr_out = 0;
	*ext_out = 0;
	uint64_t linked = l->link[corr % CUPTI_LINK_SLOTS].corr == corr ?
		l->link[corr % CUPTI_LINK_SLOTS].ext : 0;
	typeof(l->nest[0]) *n = &l->nest[a.tid % CUPTI_NEST_SLOTS];
	if (kind == ACT_DRIVER && linked) {
		a.ext = linked;
		if (n->rt.corr && inside(&a, &n->rt)) {  /* its runtime record came first */
			*corr_out = n->rt.corr;
			*ext_out = a.ext;
			n->rt.corr = 0;
		} else {
			n->drv = a;
		}
	} else if (kind == ACT_RUNTIME && !linked) {
		a.corr = corr;
		if (n->drv.ext && inside(&n->drv, &a)) {
			*corr_out = corr;
			*ext_out = n->drv.ext;
			n->drv.ext = 0;
		} else if ((*ext_out = call_inside(l, &a))) {
			*corr_out = corr;
		} else {
			n->rt = a;
		}
	}
	return 1;
}
