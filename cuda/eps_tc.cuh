/*
 * eps_tc.cuh
 *		The tensor-core candidate filter of the GPU eps_join (eps_tc.cu);
 *		private to cuda/.
 *
 * Where no grid prunes (high dimensions) and for the cosine metric, the
 * GPU engine does not compute every pair in double.  Instead:
 *
 *	1. prepare: both chunks are centred on the build chunk's mean (of the
 *	   unit vectors, for cosine), scaled by a power of two and rounded to
 *	   FP16 rows, with per-row constants of the error bound below;
 *	2. filter: an FP16 x FP16 -> FP32 tensor-core product (wgmma on
 *	   Hopper, mma.sync m16n8k16 elsewhere) gives every pair's dot
 *	   product S; the pair is kept as a
 *	   candidate unless S proves, with the error bound, that it cannot join;
 *	3. the candidates, sorted by (probe, build) position, are verified by
 *	   the canonical double computation of sjdist.h (eps_gpu.cu), which
 *	   alone decides and gives every reported distance.
 *
 * The bound (all quantities in the scaled, centred space; x^, y^ the
 * double values before rounding, X, Y the FP16 values, d the padded
 * dimension, N = ||x^||_2, L = ||x^||_1):
 *
 *	|X_k - x^_k| <= u |x^_k| + eta		u = 2^-11 (1 + 2^-10): round to
 *										nearest, with room for a double
 *										rounding; eta = 2^-25: half the
 *										smallest FP16 subnormal
 *	products X_k Y_k are exact in FP32; their accumulation (tensor cores
 *	truncate, in blocks; the bound holds for any grouping of the sum, so
 *	for wgmma and mma.sync alike) errs by at most gamma sum_k |X_k Y_k| with
 *	gamma = (d + 32) 2^-22, twice the recursive-summation bound for a
 *	unit roundoff of 2^-23 (truncation).  Then, with Cauchy-Schwarz,
 *
 *	|S - x^.y^| <= alpha N_x N_y + beta (L_x + L_y) + zeta
 *		alpha = 2u + u^2 + gamma (1 + u)^2
 *		beta = eta (1 + u)(1 + gamma),  zeta = d eta^2 (1 + gamma)
 *
 * A pair whose exact distance is at most R (the threshold in this space,
 * widened by 1e-9 relatively, which covers the canonical computation's
 * own rounding and that of centring and scaling) has
 * 2 x^.y^ >= N_x^2 + N_y^2 - R^2, so it is kept whenever
 *
 *	S >= P_x + P_y - alpha N_x N_y,
 *	P_x = N_x^2 / 2 - beta L_x - delta N_x^2 - R^2 / 4 - zeta / 2
 *
 * with delta = d 2^-52 + 2^-40 absorbing the double rounding of N^2.  P is
 * rounded down to FP32, N and alpha up, and the right-hand side is
 * evaluated with directed rounding, so the FP32 test never drops a pair
 * that the exact test keeps.  For cosine, distance <= eps is
 * ||u - v||^2 <= 2 eps for unit vectors u, v; R^2 = 2 eps (1 + 1e-9) plus
 * an absolute 1e-9 covers the rounding of the canonical cosine and of
 * normalising.  test_eps_gpu.c checks the filter with pairs at eps, far
 * from the origin, nearly equal and of mixed magnitudes.
 */
#ifndef EPS_TC_CUH
#define EPS_TC_CUH

#include <cuda_fp16.h>

#include <cstdint>

#include "sjgpu_internal.cuh"

namespace sjgpu
{

constexpr int kTcTile = 128;	/* rows of a filter tile, both sides */
constexpr int kTcK = 32;		/* FP16 row padding and K step */

/* Padded FP16 row length for dim dimensions. */
inline int
tc_padded_dim(int dim)
{
	return (dim + kTcK - 1) / kTcK * kTcK;
}

/* One side of the filter: FP16 rows and the bound's per-row constants. */
struct TcSide
{
	__half	   *rows;			/* n x padded dim, row-major */
	float2	   *pn;				/* (P, N) of each row */
	uint32_t	n;
};

/* The filter's constants for one chunk pair. */
struct TcParams
{
	int			dim;
	int			pdim;			/* padded */
	int			metric;			/* SjMetric */
	double		eps;
	double		scale;			/* power of two */
	float		alpha;			/* rounded up */
};

/*
 * Centre (on mean, dim doubles on the device), scale and round the
 * coordinates of one side (SoA, stride n; for cosine divided by
 * sqrt(norms[i]) first) into side->rows and side->pn.
 */
void		tc_convert(const double *coords, uint32_t n, const double *norms,
					   const double *mean, const TcParams &p, TcSide *side,
					   cudaStream_t st);

/* Squared norms (sj_dot_step order) of n SoA rows into out. */
void		tc_norms(const double *coords, uint32_t n, int dim, double *out,
					 cudaStream_t st);

/* Column means of n SoA rows (unit rows for cosine) into mean (dim). */
void		tc_mean(const double *coords, uint32_t n, int dim, const double *norms,
					double *mean, cudaStream_t st);

/*
 * Largest |x - mean| (unit rows for cosine) over n SoA rows, written into
 * *out (a device double that must start at 0; results combine by max).
 */
void		tc_maxabs(const double *coords, uint32_t n, int dim, const double *norms,
					  const double *mean, double *out, cudaStream_t st);

/* The power-of-two scale and the bound's alpha, from the largest |x|. */
void		tc_params(int dim, int metric, double eps, double maxabs, TcParams *p);

/*
 * Candidates of probe rows [p0, p1) against all build rows (self: build
 * rows after the probe row): keys (p - p0) << 32 | j appended at
 * *count, at most cap of them; *count may end above cap (overflow: the
 * caller retries with fewer probe rows).
 */
void		tc_filter(const TcSide &probe, const TcSide &build, const TcParams &p,
					  bool self, uint32_t p0, uint32_t p1, unsigned long long *keys,
					  unsigned long long cap, unsigned long long *count,
					  cudaStream_t st);

/*
 * Whether the current device runs the wgmma filter (an sm_90a image is
 * loaded: Hopper, built with that target); asked once a device.
 */
bool		tc_wgmma();

/* start[i] = first key of probe offset i, for i in [0, np] (sorted keys). */
void		tc_starts(const unsigned long long *keys, unsigned long long nkeys,
					  uint32_t np, uint32_t *start, cudaStream_t st);

}								/* namespace sjgpu */

#endif							/* EPS_TC_CUH */
