/* Payloads of the CUDA event family's records (included by prof_format.h after struct prof_rec). */
#ifndef PROF_FMT_CUDA_STRUCTS_H
#define PROF_FMT_CUDA_STRUCTS_H

#endif
