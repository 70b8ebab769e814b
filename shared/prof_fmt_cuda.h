/* Record types of the CUDA event family (values 60-89, see prof_format.h). */
#ifndef PROF_FMT_CUDA_H
#define PROF_FMT_CUDA_H

#define PROF_CUDA_RECORD_TYPES(X)
/* Those of them that end in a NUL-terminated string: Y(NAME, payload struct, field). */
#define PROF_CUDA_STRING_RECORDS(Y)

#endif
