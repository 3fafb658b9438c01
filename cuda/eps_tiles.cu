/*
 * eps_tiles.cu
 *		Tile pruning for the tensor-core filter of the GPU eps_join: an
 *		order of the rows in which each filter tile holds near rows, each
 *		tile's centre and radius, and the list of tile pairs that may hold
 *		a pair within the threshold (eps_tc.cuh says why it is exact).
 *
 * Clustered data (embeddings of a few thousand topics, near-duplicates)
 * puts most tile pairs far apart: the filter then computes only the tile
 * pairs of the same or neighbouring clusters.  On data without clusters
 * no tile pair is pruned, and the cost is the ordering (a sort and a
 * gather of the rows) and one pass over the tile pairs' centres.
 */
#include <algorithm>
#include <cmath>
#include <vector>

#include "eps_tc.cuh"

namespace sjgpu
{

namespace
{

/* Sign bits of coordinate k in the kTcProj projection directions. */
__device__ __forceinline__ uint32_t
proj_signs(int k)
{
	uint32_t	h = (uint32_t) k * 0x9E3779B1u + 0x7F4A7C15u;

	h ^= h >> 16;
	h *= 0x85EBCA6Bu;
	h ^= h >> 13;
	return h;
}

/* The projection of row i (NaN where a coordinate is not finite). */
__device__ __forceinline__ void
project(const double *coords, uint32_t n, int dim, const double *norms,
		const double *mean, double scale, uint32_t i, float *out)
{
	float		acc[kTcProj];

#pragma unroll
	for (int m = 0; m < kTcProj; m++)
		acc[m] = 0.0f;
	for (int k = 0; k < dim; k++)
	{
		const float x = (float) tc_coord(coords, n, norms, mean, scale, k, i);
		const uint32_t s = proj_signs(k);

#pragma unroll
		for (int m = 0; m < kTcProj; m++)
			acc[m] += ((s >> m) & 1) ? x : -x;
	}
#pragma unroll
	for (int m = 0; m < kTcProj; m++)
		out[m] = acc[m];
}

/* Projections of the seed rows (row s * stride for seed s). */
__global__ void
seeds_kernel(const double *coords, uint32_t n, int dim, const double *norms,
			 const double *mean, double scale, uint32_t nseeds, uint64_t stride,
			 float *seeds)
{
	uint64_t	s = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	float		v[kTcProj];

	if (s >= nseeds)
		return;
	project(coords, n, dim, norms, mean, scale, (uint32_t) (s * stride), v);
#pragma unroll
	for (int m = 0; m < kTcProj; m++)
		seeds[s * kTcProj + m] = isfinite(v[m]) ? v[m] : 1e30f;
}

/* Is (d, o) ahead of (e, q): nearer, or as near and earlier? */
__device__ __forceinline__ bool
seed_ahead(float d, uint32_t o, float e, uint32_t q)
{
	return d < e || (d == e && o < q);
}

/*
 * The kTcSeedNbrs nearest other seeds of each seed, nearest first (ties:
 * the earlier seed first; an unfilled place, where fewer seeds are finitely
 * near, names the seed itself).  One warp a seed: each lane keeps the
 * nearest of every 32nd other seed, then the warp merges the lanes' lists.
 */
__global__ void
seed_knn_kernel(const float *seeds, uint32_t nseeds, uint32_t *nbr)
{
	const int	lane = (int) (threadIdx.x & 31);
	const uint64_t s = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	float		me[kTcProj];
	float		bd[kTcSeedNbrs];
	uint32_t	bi[kTcSeedNbrs];
	int			head = 0;

	if (s >= nseeds)
		return;					/* whole warps leave together */
#pragma unroll
	for (int m = 0; m < kTcProj; m++)
		me[m] = seeds[s * kTcProj + m];
#pragma unroll
	for (int q = 0; q < kTcSeedNbrs; q++)
	{
		bd[q] = INFINITY;
		bi[q] = (uint32_t) s;
	}
	for (uint32_t o = (uint32_t) lane; o < nseeds; o += 32)
	{
		float		d = 0.0f;

		if (o == s)
			continue;
#pragma unroll
		for (int m = 0; m < kTcProj; m++)
		{
			const float e = me[m] - __ldg(seeds + (size_t) o * kTcProj + m);

			d += e * e;
		}
		if (!(d < bd[kTcSeedNbrs - 1]))
			continue;
		/* insert, keeping bd ascending (an equal one stays ahead: earlier) */
		int			q = kTcSeedNbrs - 1;

		while (q > 0 && bd[q - 1] > d)
		{
			bd[q] = bd[q - 1];
			bi[q] = bi[q - 1];
			q--;
		}
		bd[q] = d;
		bi[q] = o;
	}

	/* the warp's kTcSeedNbrs nearest: each round the lane with the nearest head pops it */
	for (int q = 0; q < kTcSeedNbrs; q++)
	{
		float		d = INFINITY;
		uint32_t	o = UINT32_MAX;

#pragma unroll
		for (int h = 0; h < kTcSeedNbrs; h++)
			if (h == head)
			{
				d = bd[h];
				o = bd[h] < INFINITY ? bi[h] : UINT32_MAX;
			}
		float		bestd = d;
		uint32_t	besto = o;

#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
		{
			const float od = __shfl_xor_sync(0xffffffffu, bestd, off);
			const uint32_t oo = __shfl_xor_sync(0xffffffffu, besto, off);

			if (seed_ahead(od, oo, bestd, besto))
			{
				bestd = od;
				besto = oo;
			}
		}
		if (besto != UINT32_MAX && o == besto && d == bestd)
			head++;
		if (lane == 0)
			nbr[s * kTcSeedNbrs + q] = besto == UINT32_MAX ? (uint32_t) s : besto;
	}
}

/*
 * Each row's nearest seed in the projection (seed 0 for rows with NaN),
 * keyed by that seed's rank in the seeds' order.
 */
__global__ void
assign_kernel(const double *coords, uint32_t n, int dim, const double *norms,
			  const double *mean, double scale, const float *seeds, const uint32_t *rank,
			  uint32_t nseeds, unsigned long long *keys, uint32_t *vals)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	float		v[kTcProj];
	float		best = INFINITY;
	uint32_t	arg = 0;

	if (i >= n)
		return;
	project(coords, n, dim, norms, mean, scale, (uint32_t) i, v);
	for (uint32_t s = 0; s < nseeds; s++)
	{
		const float4 *c = reinterpret_cast<const float4 *>(seeds + (size_t) s * kTcProj);
		float		d = 0.0f;

#pragma unroll
		for (int q = 0; q < kTcProj / 4; q++)
		{
			const float4 w = __ldg(c + q);
			const float a = v[q * 4] - w.x,
						b = v[q * 4 + 1] - w.y,
						e = v[q * 4 + 2] - w.z,
						f = v[q * 4 + 3] - w.w;

			d += a * a + b * b + e * e + f * f;
		}
		if (d < best)
		{
			best = d;
			arg = s;
		}
	}
	keys[i] = rank[arg];
	vals[i] = (uint32_t) i;
}

/*
 * One block a tile of kTcTile rows (one thread a row): the centre (the
 * mean of the rows that may join), then the radius (the largest distance
 * of those rows from it), widened for the rounding of both.  A row whose
 * bound is P = +inf never joins and is left out; one with P = -inf must
 * meet every row, so its tile's radius is infinite.  A tile without a row
 * that may join gets radius -inf: it meets nothing.
 */
__global__ void __launch_bounds__(kTcTile)
tile_bounds_kernel(const double *coords, uint32_t n, int dim, const double *norms,
				   const double *mean, double scale, const TcBound *pn, double *centre,
				   double *radius, uint32_t ntiles)
{
	__shared__ int good[kTcTile];
	__shared__ int nall,
				ngood;
	__shared__ double far[kTcTile];
	const uint32_t t = blockIdx.x;
	const uint32_t row = t * kTcTile + threadIdx.x;
	const uint32_t rows = min((uint32_t) kTcTile, n - t * kTcTile);
	int			g = 0;

	if (threadIdx.x == 0)
	{
		nall = 0;
		ngood = 0;
	}
	__syncthreads();
	if (threadIdx.x < rows)
	{
		const float p = pn[row].x;

		g = p < INFINITY;
		if (p == -INFINITY)
			atomicAdd(&nall, 1);
	}
	good[threadIdx.x] = g;
	if (g)
		atomicAdd(&ngood, 1);
	__syncthreads();

	/* the centre, a dimension a thread */
	for (int k = threadIdx.x; k < dim; k += kTcTile)
	{
		double		s = 0.0;

		for (uint32_t r = 0; r < rows; r++)
			if (good[r])
				s += tc_coord(coords, n, norms, mean, scale, k, t * kTcTile + r);
		centre[(size_t) k * ntiles + t] = ngood ? s / ngood : 0.0;
	}
	__syncthreads();

	/* the radius, a row a thread */
	double		d2 = 0.0;

	if (g)
		for (int k = 0; k < dim; k++)
		{
			const double d = tc_coord(coords, n, norms, mean, scale, k, row) -
				centre[(size_t) k * ntiles + t];

			d2 += d * d;
		}
	far[threadIdx.x] = g ? d2 : -1.0;
	__syncthreads();
	for (int w = kTcTile / 2; w > 0; w /= 2)
	{
		if (threadIdx.x < w)
			far[threadIdx.x] = fmax(far[threadIdx.x], far[threadIdx.x + w]);
		__syncthreads();
	}
	if (threadIdx.x == 0)
	{
		/* 1e-158: the squares' underflow, at most dim 2^-1074 in all */
		double		r = sqrt(far[0]) * (1.0 + 1e-9) + 1e-158;

		if (nall > 0)
			r = INFINITY;
		else if (ngood == 0)
			r = -INFINITY;
		else if (!(r >= 0.0))
			r = INFINITY;		/* NaN: never prune */
		radius[t] = r;
	}
}

/* Tile pairs a block of tile_list_kernel: probe tiles by build tiles. */
constexpr int kListP = 16;
constexpr int kListB = 64;
constexpr int kListK = 32;		/* dimensions a shared-memory stage */

/*
 * The tile pairs of the segment that may hold a pair within R: a block
 * takes kListP probe tiles by kListB build tiles, a thread one probe tile
 * and four build tiles, the centres staged in shared memory a few
 * dimensions at a time.  Kept pairs are appended as ty * nx + tx, a warp
 * at a time, so the list keeps about the order the blocks take.
 */
__global__ void __launch_bounds__(256)
tile_list_kernel(const double *pcentre, const double *pradius, uint32_t ptiles,
				 const double *bcentre, const double *bradius, uint32_t btiles,
				 int dim, double r, bool self, uint32_t t0, uint32_t ny,
				 uint32_t *list, unsigned long long cap, unsigned long long *count)
{
	__shared__ double sp[kListK][kListP];
	__shared__ double sb[kListK][kListB];
	const uint32_t by = blockIdx.y * kListP,
				bx = blockIdx.x * kListB;
	const int	tid = threadIdx.x,
				lane = tid % 32;
	const int	ly = tid % kListP,
				lx = (tid / kListP) * 4;
	double		s[4] = {0.0, 0.0, 0.0, 0.0};

	/* a block wholly before the diagonal of a self-join */
	if (self && bx + kListB <= t0 + by)
		return;
	for (int k0 = 0; k0 < dim; k0 += kListK)
	{
		for (int e = tid; e < kListK * kListP; e += blockDim.x)
		{
			const int	kk = e / kListP,
						yy = e % kListP;

			sp[kk][yy] = k0 + kk < dim && by + yy < ny ?
				pcentre[(size_t) (k0 + kk) * ptiles + t0 + by + yy] : 0.0;
		}
		for (int e = tid; e < kListK * kListB; e += blockDim.x)
		{
			const int	kk = e / kListB,
						xx = e % kListB;

			sb[kk][xx] = k0 + kk < dim && bx + xx < btiles ?
				bcentre[(size_t) (k0 + kk) * btiles + bx + xx] : 0.0;
		}
		__syncthreads();
#pragma unroll 4
		for (int kk = 0; kk < kListK; kk++)
		{
			const double a = sp[kk][ly];

#pragma unroll
			for (int q = 0; q < 4; q++)
			{
				const double d = a - sb[kk][lx + q];

				s[q] += d * d;
			}
		}
		__syncthreads();
	}

	const uint32_t ty = by + ly;

#pragma unroll
	for (int q = 0; q < 4; q++)
	{
		const uint32_t tx = bx + lx + q;
		bool		keep = ty < ny && tx < btiles && !(self && tx < t0 + ty);

		if (keep)
		{
			const double reach = r + pradius[t0 + ty] + bradius[tx];

			if (reach < 0.0)
				keep = false;	/* a tile that meets nothing */
			else if (reach < INFINITY)
			{
				/*
				 * Apart when |c_p - c_b| (1 - 1e-9) - 1e-158 > reach: the
				 * sum's rounding is far below 1e-9 relatively, its
				 * underflow below 1e-158 in the root.
				 */
				const double lim = (reach + 1e-158) * (reach + 1e-158) * (1.0 + 4e-9);

				keep = !(s[q] > lim);
			}
		}

		tc_warp_append<uint32_t>(keep, ty * btiles + tx, list, cap, count, lane);
	}
}

}								/* namespace */

uint32_t
tc_seed_count(uint32_t n)
{
	if (n < 4 * (uint32_t) kTcTile)
		return 0;
	return std::min<uint32_t>(kTcMaxSeeds, std::max<uint32_t>(2, n / 64));
}

void
tc_seeds(const double *coords, uint32_t n, int dim, const double *norms, const double *mean,
		 double scale, uint32_t nseeds, float *seeds, uint32_t *rank, uint32_t *scratch,
		 cudaStream_t st)
{
	std::vector<uint32_t> nbr((size_t) nseeds * kTcSeedNbrs),
				order,
				pos(nseeds, UINT32_MAX);

	if (nseeds == 0)
		return;
	seeds_kernel<<<tc_blocks(nseeds), kTcThreads, 0, st>>>(coords, n, dim, norms, mean,
														   scale, nseeds, n / nseeds, seeds);
	SJGPU_CHECK_LAUNCH("seeds_kernel");
	seed_knn_kernel<<<tc_blocks((uint64_t) nseeds * 32), kTcThreads, 0, st>>>(seeds, nseeds,
																		   scratch);
	SJGPU_CHECK_LAUNCH("seed_knn_kernel");
	SJGPU_CHECK(cudaMemcpyAsync(nbr.data(), scratch, nbr.size() * sizeof(uint32_t),
								cudaMemcpyDeviceToHost, st));
	SJGPU_CHECK(cudaStreamSynchronize(st));

	/*
	 * Breadth-first over the seeds' nearest-neighbour graph (both ways):
	 * seeds of one cluster of rows come out together, so that the rows
	 * sorted by their seed's rank fill tiles from one cluster.
	 */
	std::vector<std::vector<uint32_t>> adj(nseeds);

	for (uint32_t s = 0; s < nseeds; s++)
		for (int q = 0; q < kTcSeedNbrs; q++)
		{
			uint32_t	o = nbr[(size_t) s * kTcSeedNbrs + q];

			if (o != s && o < nseeds)
			{
				adj[s].push_back(o);
				adj[o].push_back(s);
			}
		}
	order.reserve(nseeds);
	for (uint32_t root = 0; root < nseeds; root++)
	{
		if (pos[root] != UINT32_MAX)
			continue;
		pos[root] = (uint32_t) order.size();
		order.push_back(root);
		for (size_t h = order.size() - 1; h < order.size(); h++)
			for (uint32_t o : adj[order[h]])
				if (pos[o] == UINT32_MAX)
				{
					pos[o] = (uint32_t) order.size();
					order.push_back(o);
				}
	}
	SJGPU_CHECK(cudaMemcpyAsync(rank, pos.data(), nseeds * sizeof(uint32_t),
								cudaMemcpyHostToDevice, st));
	SJGPU_CHECK(cudaStreamSynchronize(st));
}

void
tc_assign(const double *coords, uint32_t n, int dim, const double *norms, const double *mean,
		  double scale, const float *seeds, const uint32_t *rank, uint32_t nseeds,
		  unsigned long long *keys, uint32_t *vals, cudaStream_t st)
{
	if (n == 0)
		return;
	assign_kernel<<<tc_blocks(n), kTcThreads, 0, st>>>(coords, n, dim, norms, mean, scale,
													   seeds, rank, nseeds, keys, vals);
	SJGPU_CHECK_LAUNCH("assign_kernel");
}

void
tc_tile_bounds(const double *coords, uint32_t n, const double *norms, const double *mean,
			   const TcParams &p, const TcBound *pn, TcTiles *t, cudaStream_t st)
{
	t->ntiles = (n + kTcTile - 1) / kTcTile;
	if (t->ntiles == 0)
		return;
	tile_bounds_kernel<<<t->ntiles, kTcTile, 0, st>>>(coords, n, p.dim, norms, mean, p.scale,
													  pn, t->centre, t->radius, t->ntiles);
	SJGPU_CHECK_LAUNCH("tile_bounds_kernel");
}

void
tc_tile_list(const TcTiles &probe, const TcTiles &build, const TcParams &p, bool self,
			 uint32_t p0, uint32_t p1, uint32_t *list, unsigned long long cap,
			 unsigned long long *count, cudaStream_t st)
{
	const uint32_t ny = (p1 - p0 + kTcTile - 1) / kTcTile;
	const double r = std::sqrt(p.r2) * (1.0 + 1e-12);
	dim3		grid((build.ntiles + kListB - 1) / kListB, (ny + kListP - 1) / kListP);

	SJGPU_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), st));
	if (ny == 0 || build.ntiles == 0)
		return;
	tile_list_kernel<<<grid, 256, 0, st>>>(probe.centre, probe.radius, probe.ntiles,
										   build.centre, build.radius, build.ntiles, p.dim,
										   r, self, p0 / kTcTile, ny, list, cap, count);
	SJGPU_CHECK_LAUNCH("tile_list_kernel");
}

}								/* namespace sjgpu */
