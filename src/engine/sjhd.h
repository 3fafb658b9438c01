/*
 * sjhd.h
 *		SJ_HD: a function compiled for the host (static inline) and, under
 *		nvcc, for the device too.  The arithmetic headers written once for
 *		both engines (sjdist.h, sjnumeric.h, sjjrules.h, and sjthetaops.h
 *		through sjnumeric.h) mark their functions with it.
 */
#ifndef SJHD_H
#define SJHD_H

#ifdef __CUDACC__
#define SJ_HD __host__ __device__ __forceinline__
#else
#define SJ_HD static inline
#endif

#endif							/* SJHD_H */
