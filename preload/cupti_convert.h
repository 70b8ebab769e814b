/* CUPTI activity record -> the fields of a CUDA_GPU or CUDA_XCORR record (cupti_convert.c).
 * Needs no CUDA type, so tests can include it next to the toolkit's own headers. */
#ifndef PROF_CUPTI_CONVERT_H
#define PROF_CUPTI_CONVERT_H

#include <stddef.h>
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
/* One line (no newline) naming any record's kind and correlation fields, for PROF_DEBUG=2:
 * an API record's callback id, thread, span and corr; an external correlation's id and corr;
 * GPU work's corr and start. */
void cupti_describe(const void *record, char *buf, size_t len);

/* A statically linked cudart (the program's, cuBLAS's) is not hooked: only its driver call
 * pushes our id, while the kernel or copy carries the correlation id of the runtime call around
 * it. CUDA 13's static cudart launches through a path CUPTI gives no driver API record (seen on
 * an H100), so the runtime record cannot be joined through CUPTI's records alone: our own
 * outermost driver calls are kept too (by thread, in time order), and a runtime API record
 * without a link of its own takes the id of ours that ran inside it on the same thread. Where
 * CUPTI does record the driver call, its linked record serves the same way, whichever of the
 * two records CUPTI delivers first. */
#define CUPTI_LINK_SLOTS 4096
#define CUPTI_NEST_SLOTS 256
#define CUPTI_CALL_RINGS 64
#define CUPTI_CALL_SLOTS 512
struct cupti_span {
	uint32_t tid, corr;        /* corr: a runtime call's; 0 for a driver span */
	uint64_t start, end, ext;  /* ext: a driver call's link; 0 for a runtime span */
};
struct cupti_links {
	struct { uint32_t corr; uint64_t ext; } link[CUPTI_LINK_SLOTS];  /* recent, by corr */
	struct { struct cupti_span drv, rt; } nest[CUPTI_NEST_SLOTS];   /* by thread */
	struct {
		uint32_t next;
		struct cupti_span call[CUPTI_CALL_SLOTS];
	} calls[CUPTI_CALL_RINGS];  /* our driver calls, by thread */
};
/* An EXTERNAL_CORRELATION record: CUPTI's corr is our ext. */
void cupti_link_learn(struct cupti_links *l, uint32_t corr, uint64_t ext);
/* One of our outermost driver-level calls (none of our runtime hooks around it), with the id
 * we pushed; tid as CUPTI gives it (pthread_self()'s low 32 bits). */
void cupti_link_call(struct cupti_links *l, uint32_t tid, uint64_t start, uint64_t end,
		     uint64_t ext);
/* 1 for a DRIVER or RUNTIME API record, with *corr and *ext set when a runtime call can now be
 * linked to our id (0 in *ext otherwise); 0 for any other record. */
int cupti_link_api(struct cupti_links *l, const void *record, uint32_t *corr, uint64_t *ext);

#endif
