/* Record types of the CUDA event family (values 60-89, see prof_format.h). */
#ifndef PROF_FMT_CUDA_H
#define PROF_FMT_CUDA_H

#define PROF_CUDA_RECORD_TYPES(X)                   \
	X(CUDA_NAME, 60, prof_rec_cuda_name)        \
	X(CUDA_API, 61, prof_rec_cuda_api)          \
	X(CUDA_LAUNCH, 62, prof_rec_cuda_launch)    \
	X(CUDA_COPY, 63, prof_rec_cuda_copy)        \
	X(CUDA_MALLOC, 64, prof_rec_cuda_malloc)    \
	X(CUDA_FREE, 65, prof_rec_cuda_free)        \
	X(CUDA_GPU, 66, prof_rec_cuda_gpu)          \
	X(CUDA_XCORR, 67, prof_rec_cuda_xcorr)      \
	X(CUDA_NVTX, 68, prof_rec_cuda_nvtx)        \
	X(CUDA_STATE, 69, prof_rec_cuda_state)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_CUDA_STRING_RECORDS(Y)                   \
	Y(CUDA_NAME, prof_rec_cuda_name, name)        \
	Y(CUDA_NVTX, prof_rec_cuda_nvtx, message)     \
	Y(CUDA_STATE, prof_rec_cuda_state, detail)

#endif
