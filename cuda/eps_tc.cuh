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
 * double values before rounding, X, Y the FP16 rows, e = X - x^ the
 * rounding error of each coordinate, computed exactly when the row is
 * made, d the padded dimension):
 *
 *	products X_k Y_k are exact in FP32; their accumulation (tensor cores
 *	truncate, in blocks; the bound holds for any grouping of the sum, so
 *	for wgmma and mma.sync alike) errs by at most gamma sum_k |X_k Y_k| <=
 *	gamma ||X|| ||Y|| with gamma = (d + 32) 2^-22, twice the recursive-
 *	summation bound for a unit roundoff of 2^-23 (truncation);
 *	x^.y^ = X.Y - X.e_y - e_x.Y + e_x.e_y, so with Cauchy-Schwarz
 *
 *	|S - x^.y^| <= gamma A_x A_y + A_x E_y + E_x A_y + E_x E_y
 *	             = C_x C_y - (1 - gamma) A_x A_y
 *		A = ||X||, E = ||e||, C = A + E.
 *
 * The rows' actual rounding errors (E is about 0.4 u A for FP16's
 * u = 2^-11, where the worst case is u A) make the bound about half the
 * worst-case one, and the band the double check must decide that much
 * narrower.  A pair whose exact distance is at most R (the threshold in
 * this space, widened by 1e-9 relatively, which covers the canonical
 * computation's own rounding and that of centring and scaling) has
 * 2 x^.y^ >= N_x^2 + N_y^2 - R^2 (N = ||x^||), so it is kept whenever
 *
 *	S >= P_x + P_y - C_x C_y + A'_x A'_y,
 *	P_x = N_x^2 / 2 - delta N_x^2 - R^2 / 4,  A' = A sqrt(1 - gamma)
 *
 * with delta = d 2^-52 + 2^-40 absorbing the double rounding of N^2.  P
 * and A' are rounded down to FP32, C up, and the right-hand side is
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

#include <algorithm>
#include <cstdint>

#include "sjgpu_internal.cuh"

namespace sjgpu
{

constexpr int kTcTile = 128;	/* rows of a filter tile, both sides */
constexpr int kTcK = 32;		/* FP16 row padding and K step */
constexpr uint32_t kTcGroup = 16;	/* probe tiles a run of the filter's walk */

/* Threads a block of the row-at-a-thread kernels (eps_tc.cu, eps_tiles.cu). */
constexpr int kTcThreads = 256;

/* Blocks of kTcThreads for n threads (one at least). */
inline unsigned int
tc_blocks(uint64_t n)
{
	return (unsigned int) std::max<uint64_t>(1, (n + kTcThreads - 1) / kTcThreads);
}

/*
 * Append v of every lane that keeps one to out[*count...] with one atomic
 * a warp (all lanes call, lane their lane); values past cap are counted,
 * not written.
 */
template <typename T>
__device__ __forceinline__ void
tc_warp_append(bool keep, T v, T *out, unsigned long long cap, unsigned long long *count,
			   int lane)
{
	unsigned	mask = __ballot_sync(0xffffffffu, keep);
	unsigned long long base = 0;
	int			leader;

	if (mask == 0)
		return;
	leader = __ffs(mask) - 1;
	if (lane == leader)
		base = atomicAdd(count, (unsigned long long) __popc(mask));
	base = __shfl_sync(0xffffffffu, base, leader);
	if (keep)
	{
		unsigned long long at = base + __popc(mask & ((1u << lane) - 1));

		if (at < cap)
			out[at] = v;
	}
}

/* Padded FP16 row length for dim dimensions. */
inline int
tc_padded_dim(int dim)
{
	return (dim + kTcK - 1) / kTcK * kTcK;
}

/*
 * The bound's constants of one row: (P, C, A', unused).  A row that never
 * joins has P = +inf; one that must be a candidate with every row has
 * P = -inf (C = A' = 0, so no NaN arises but from +inf - inf: a pair with
 * a row that never joins, which the test then drops).
 */
typedef float4 TcBound;

/* The constants of a row that joins nothing (padding, NaN rows). */
__host__ __device__ inline TcBound
tc_bound_none()
{
	return make_float4(INFINITY, 0.0f, 0.0f, 0.0f);
}

/*
 * Coordinate k of row i in the filter's space: centred on mean, scaled by
 * scale, for cosine (norms given) of the unit row.  Written once, so that
 * the FP16 rows and the tiles' centres and radii see the same values.
 */
__device__ __forceinline__ double
tc_coord(const double *coords, uint32_t n, const double *norms, const double *mean,
		 double scale, int k, uint32_t i)
{
	double		x = coords[(size_t) k * n + i];

	if (norms)
		x /= sqrt(norms[i]);
	return (x - mean[k]) * scale;
}

/* One side of the filter: FP16 rows and the bound's per-row constants. */
struct TcSide
{
	__half	   *rows;			/* n x padded dim, row-major */
	TcBound    *pn;				/* the bound's constants of each row */
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
	double		r2;				/* R^2: the threshold in the filter's space */
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

/* The power-of-two scale, from the largest |x|. */
void		tc_params(int dim, int metric, double eps, double maxabs, TcParams *p);

/*
 * Candidates of probe rows [p0, p1) against all build rows (self: build
 * rows after the probe row): keys (p - p0) << 32 | j appended at
 * *count, at most cap of them; *count may end above cap (overflow: the
 * caller retries with fewer probe rows).  With list, only the nlist tile
 * pairs it names (tc_tile_list) are computed; the others cannot join.
 */
void		tc_filter(const TcSide &probe, const TcSide &build, const TcParams &p,
					  bool self, uint32_t p0, uint32_t p1, unsigned long long *keys,
					  unsigned long long cap, unsigned long long *count,
					  const uint32_t *list, uint32_t nlist, cudaStream_t st);

/*
 * Tile pruning (eps_tiles.cu).  Rows are ordered so that each tile of
 * kTcTile rows holds near rows: every row goes to the nearest of a few
 * thousand seed rows in a 16-dimensional random projection, and the rows
 * are sorted by seed.  Each tile then gets a centre and a radius in the
 * filter's space; a tile pair whose centres lie further apart than the
 * two radii and R (the filter's threshold) together holds no pair that
 * can join (triangle inequality), and is never computed.  The clustering
 * only orders the rows: nothing it decides affects which pairs join.
 */
constexpr int kTcProj = 16;		/* dimensions of the projection */
constexpr uint32_t kTcMaxSeeds = 4096;
constexpr int kTcSeedNbrs = 4;	/* neighbours a seed in the seeds' order */

/* Seeds for n rows: how many (0: too few rows to prune). */
uint32_t	tc_seed_count(uint32_t n);

/*
 * The projections of nseeds rows taken at an even stride (seeds[nseeds]
 * [kTcProj]) and the seeds' order (rank[nseeds], on the device): breadth-
 * first over each seed's kTcSeedNbrs nearest seeds, so that near seeds get
 * near ranks.  scratch: nseeds * kTcSeedNbrs.  Waits for the stream.
 */
void		tc_seeds(const double *coords, uint32_t n, int dim, const double *norms,
					 const double *mean, double scale, uint32_t nseeds, float *seeds,
					 uint32_t *rank, uint32_t *scratch, cudaStream_t st);

/* keys[i] = the rank of the seed nearest row i in the projection, vals[i] = i. */
void		tc_assign(const double *coords, uint32_t n, int dim, const double *norms,
					  const double *mean, double scale, const float *seeds,
					  const uint32_t *rank, uint32_t nseeds, unsigned long long *keys,
					  uint32_t *vals, cudaStream_t st);

/* Tiles of one side: centres (dim x ntiles, tile-minor) and radii. */
struct TcTiles
{
	double	   *centre;
	double	   *radius;
	uint32_t	ntiles;
};

/*
 * Centre and radius of every tile of n rows (after tc_convert: rows whose
 * bound says they never join are left out; a tile with a row that must be
 * a candidate with every row gets an infinite radius).
 */
void		tc_tile_bounds(const double *coords, uint32_t n, const double *norms,
						   const double *mean, const TcParams &p, const TcBound *pn,
						   TcTiles *t, cudaStream_t st);

/*
 * The tile pairs of probe rows [p0, p1) (p0 a multiple of kTcTile) and
 * the build side that may hold a pair within R, as probe tile (from p0)
 * times build tiles plus build tile, in the order the filter walks them;
 * *count of them, at most cap written.
 */
void		tc_tile_list(const TcTiles &probe, const TcTiles &build, const TcParams &p,
						 bool self, uint32_t p0, uint32_t p1, uint32_t *list,
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
