/* CUPTI activity records -> what a CUDA_GPU or CUDA_XCORR record needs. Reads fields at the
 * offsets that have been the same in every record version CUDA 11-13 ship (CUDA.md), so it
 * builds without the CUPTI headers. Pure: tests feed it hand-built buffers walked by the real
 * cuptiActivityGetNextRecord. */
#include "cupti_convert.h"
#include "prof_format.h"

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
	case 1: case 6: return PROF_CUDA_COPY_HTOD;   /* HTOD, HTOA */
	case 2: case 4: return PROF_CUDA_COPY_DTOH;   /* DTOH, ATOH */
	case 3: return PROF_CUDA_COPY_HTOD;           /* HTOA */
	case 5: case 7: case 8: return PROF_CUDA_COPY_DTOD;  /* ATOA, DTOA, DTOD */
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
