/* The CUDA runtime and driver calls that put work on the GPU (kernels, graphs, copies,
 * memsets), by CUPTI callback id: libprof asks CUPTI for API records of these calls only, which
 * is all it needs to join GPU records to their launch (an EXTERNAL_CORRELATION record comes
 * beside an API record), instead of a record for each of the thousands of other calls a
 * framework makes. Numbers from CUDA 13's cupti_runtime_cbid.h and cupti_driver_cbid.h;
 * callback ids keep their meaning across versions (the enums only grow), and an id a CUPTI
 * does not know is refused harmlessly. */
#ifndef PROF_CUPTI_CBIDS_H
#define PROF_CUPTI_CBIDS_H

#include <stdint.h>

static const uint16_t cupti_runtime_work_cbids[] = {
	13, 213,                                    /* cudaLaunch, _ptsz */
	211, 214,                                   /* cudaLaunchKernel, _ptsz */
	269, 270, 272,                              /* cudaLaunchCooperativeKernel(MultiDevice) */
	430, 431,                                   /* cudaLaunchKernelExC, _ptsz */
	311, 312,                                   /* cudaGraphLaunch, _ptsz */
	31, 32, 33, 34, 35, 36, 37, 38, 39, 40,     /* cudaMemcpy* (synchronous) */
	41, 42, 43, 44, 45, 46, 47, 48,             /* cudaMemcpy*Async */
	144, 145, 160, 161, 162, 163,               /* cudaMemcpy3D*, Peer */
	215, 216, 217, 218, 219, 220, 221, 222, 223, 224,  /* cudaMemcpy*_ptds */
	225, 226, 227, 228, 229, 230, 231, 232,     /* cudaMemcpy*Async_ptsz */
	245, 246, 249, 250,                         /* cudaMemcpy3D*_ptds/_ptsz */
	482, 483, 484, 485, 509, 510, 511, 512,     /* cudaMemcpy(3D)BatchAsync */
	49, 50, 51, 52, 142, 143,                   /* cudaMemset* */
	233, 234, 235, 236, 243, 244,               /* cudaMemset*_ptds/_ptsz */
};

static const uint16_t cupti_driver_work_cbids[] = {
	115, 116, 117,                              /* cuLaunch, cuLaunchGrid(Async) */
	307, 442,                                   /* cuLaunchKernel, _ptsz */
	477, 478, 480,                              /* cuLaunchCooperativeKernel(MultiDevice) */
	652, 653,                                   /* cuLaunchKernelEx, _ptsz */
	514, 515,                                   /* cuGraphLaunch, _ptsz */
	43, 45, 47, 49, 51, 53, 54, 55, 56, 57, 58, /* cuMemcpy* (v1) */
	60, 62, 64, 66, 67, 68, 69,                 /* cuMemcpy*Async (v1) */
	248, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291,
	292, 293,                                   /* cuMemcpy*_v2 */
	305, 306, 318, 319, 320, 321,               /* cuMemcpy(Async), Peer */
	397, 398, 399, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410,  /* _ptds */
	418, 419, 420, 421, 422, 423, 424, 425, 426, 427,  /* _ptsz */
	776, 777, 778, 779, 796, 797, 798, 799,     /* cuMemcpy(3D)BatchAsync */
	71, 73, 75, 77, 79, 81,                     /* cuMemsetD* (v1) */
	216, 218, 220, 222, 224, 226,               /* cuMemsetD*Async */
	249, 250, 251, 252, 253, 254,               /* cuMemsetD*_v2 */
	411, 412, 413, 414, 415, 416,               /* cuMemsetD*_v2_ptds */
	428, 429, 430, 431, 432, 433,               /* cuMemsetD*Async_ptsz */
};

#endif
