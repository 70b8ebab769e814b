/* CUPTI activity record -> the fields of a CUDA_GPU or CUDA_XCORR record (cupti_convert.c).
 * Needs no CUDA type, so tests can include it next to the toolkit's own headers. */
#ifndef PROF_CUPTI_CONVERT_H
#define PROF_CUPTI_CONVERT_H

#include <stdint.h>

struct cupti_out {
	int type;          /* PROF_REC_CUDA_GPU or PROF_REC_CUDA_XCORR */
	unsigned activity, copy_kind;
	uint64_t start, end, corr, bytes, ext_id;
	uint32_t device, stream, grid[3], block[3];
	const char *name;  /* kernel name (CUPTI's string) or NULL */
};
/* 0, or -1 for a kind we do not convert. Fields are read at the offsets that are the same in
 * every record version CUDA 11-13 ship (CUDA.md). */
int cupti_convert(const void *record, struct cupti_out *out);

#endif
