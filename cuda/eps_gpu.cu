/*
 * eps_gpu.cu
 *		eps_join on the GPU: a grid index built on the device (GPU-SJ of
 *		Gowanlock & Karsin), and a tiled brute-force kernel where a grid
 *		would not prune (high dimensions, tiny inputs).
 *
 * Grid.  For a build chunk the engine picks up to 6 indexed dimensions (a
 * cost model over their extents), a cell width w_k >= w per dimension where
 * w is strictly larger than eps plus every rounding error of the cell
 * computation floor((x - lo) / w_k), so two points within eps always lie
 * in adjacent cells.  Each point gets a 64-bit row-major cell id; CUB sorts
 * (id, index) pairs, run-length-encodes the non-empty cells and scans their
 * sizes into point ranges; the coordinates are then gathered into cell order
 * (structure of arrays) so that the probe reads them coalesced.  One thread
 * per probe point (probes also in cell order) walks the rows of its 3^K
 * neighbourhood: a row of three adjacent cells along the last indexed
 * dimension is one contiguous range of sorted points, found with one
 * binary search.  Self-joins visit only the rows that are lexicographically
 * >= the point's own row, and within their own row only later points
 * (each unordered pair once, the unidirectional comparison of GPU-SJ).
 *
 * Exactness.  A candidate's distance is computed as the CPU engine does
 * (double, dimensions in order, no fused multiply-add, correctly rounded
 * sqrt); the decision is dist <= eps.  A prefilter sum <= thr, with thr a
 * little above eps^2, only skips the sqrt of pairs that cannot join.
 *
 * Batching.  Memory: inputs larger than the device budget are cut into
 * chunks and joined chunk against chunk (block nested loop of grid joins).
 * Time: each chunk pair's probe range is cut into segments of bounded
 * estimated work (a cheap pass counts candidates per probe point).  Result
 * size: a count pass gives every probe point its exact number of pairs; an
 * inclusive scan gives each point its place in the segment's pair sequence,
 * and a batch is the slice [s, s + cap) of that sequence, written without
 * atomics.  The write pass re-checks each point's count against the count
 * pass on the device; a mismatch is an internal error, never a silent
 * truncation.  Because counts are exact no batch ever overflows, so
 * SjTimings.reruns stays 0.
 *
 * Pipelining.  Two result slots (device buffer + pinned host buffer): while
 * the caller consumes batch k from one slot, batch k+1 is written on the
 * compute stream and copied back on the copy stream into the other.
 *
 * Ownership.  Everything on the device belongs to the SjGpuEpsJoin handle
 * through owning wrappers charged to its Budget; sjgpu_eps_end frees it on
 * every path.
 *
 * Size.  This file stays larger than the project's ~1,000 lines: its
 * kernels (grid probe, brute force, verification) share the pass protocol
 * (count, scan, write a slice) with the host code that plans segments and
 * batches, and their template instantiations live in one translation unit.
 * Where it would split: the grid index build (cell ids, CUB sort, runs)
 * and the chunk and segment planning, each behind a small internal header
 * as jaccard_gpu.cuh does; the tensor-core filter is already eps_tc.cu.
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "eps_tc.cuh"
#include "sjdist.h"
#include "sjgpu_internal.cuh"
#include "sjgpu_multi.cuh"

namespace
{

using sjgpu::Budget;
using sjgpu::DeviceBuffer;
using sjgpu::DeviceMemory;
using sjgpu::Error;
using sjgpu::Event;
using sjgpu::EventTimer;
using sjgpu::PinnedBuffer;
using sjgpu::Stream;
using sjgpu::div_up;

constexpr int kMaxIndexed = 6;			/* indexed dimensions at most */
constexpr int kBlock = 256;				/* threads of the grid kernels */
/*
 * The tensor path's verification: candidates a thread sums together, and
 * its blocks' threads (small blocks: a segment of a spread join has too
 * few positions to reach every multiprocessor in blocks of kBlock).
 */
constexpr int kVerifyGroup = 4;
constexpr int kVerifyBlock = 64;
/*
 * Candidates a position from which a segment's verification takes a warp
 * a position (verify_warp_kernel): a dense join's segments hold few
 * positions, thousands of candidates each, one thread each a few hundred
 * threads for the whole device.
 */
constexpr int kVerifyWarpMin = 64;
constexpr int kBfThreads = 128;			/* brute force: probes per block */
constexpr int kBfTile = 32;				/* brute force: build points a tile */
constexpr int kBfDimChunk = 32;			/* brute force: dimensions a tile */
constexpr int kMinmaxBlocks = 64;
constexpr uint64_t kDefaultBatch = 1048576;
constexpr uint32_t kMaxChunk = 1u << 30;
constexpr double kRowCost = 64.0;		/* work units of one binary search */

/*
 * Work of one segment, in candidate-dimension units (a grid row search
 * counts kRowCost).  A segment is one count pass (and at most one more pass
 * of writes); next() does at most about two segments' work.  A segment is
 * roughly 50 ms (grid) or 100 ms (brute force) at the device rates in
 * test/bench/BENCHMARKS.md, "Calibration of the cost model".
 */
constexpr double kSegmentWorkGrid = 1.0e11;
constexpr double kSegmentWorkBf = 2.0e11;

/*
 * The tensor-core filter (eps_tc.cu): used for brute force from this many
 * dimensions on (below, double brute force is as fast), and always for
 * cosine.  Pairs filtered a segment.
 * The cost model counts a filtered pair as 1/kTcSpeedup of a double one.
 */
constexpr int kTcMinDim = 16;
constexpr double kTcSegmentPairs = 4.0e9;
constexpr double kTcSpeedup = 16.0;

/*
 * A join spreads over the devices named (shared units, sjgpu_multi.cuh)
 * when the tensor filter is likely and it tests at least this many pairs
 * (a self-join of 150 K rows), or fewer where most of them join (below);
 * other joins, the grid's low dimensions, or a join the grid would serve
 * (grid_likely; bound by reading the inputs), take one device.  Spread, a device's
 * segments are at least kUnitsPerDevice times the devices, so that the
 * hand-out balances the unequal segments of a self-join's triangle.
 */
constexpr double kSpreadMinPairs = 1.0e10;

/*
 * A join over fewer pairs spreads too where most of them join: the tensor
 * filter keeps every such pair as a candidate, verified in double precision
 * over the whole vector, which costs about kVerifyPairCost filtered pairs
 * (on an H200, dense_bench.sql's 20 K x 384-D count join verifies 2 x 10^8
 * candidates in 850 ms; the 200 K x 384-D filter passes 2 x 10^10 pairs in
 * 77 ms).  Its pairs within eps are estimated from a sample of pairs of
 * rows (dense_fraction): at most kDenseSampleRows a side in runs of
 * kDenseSampleRun, fewer for fewer pairs and as the dimension grows (about
 * kDenseSampleWork coordinates in all, at least 8 rows a side; about a
 * millisecond on the host, read only where a join tests 10^7 to 10^10
 * pairs); fewer than kDenseMinHits pairs within eps in the sample count as
 * none.
 */
constexpr double kVerifyPairCost = 1000.0;
constexpr uint32_t kDenseSampleRows = 32;
constexpr uint32_t kDenseSampleRun = 8;
constexpr double kDenseSampleWork = 4.0e6;
constexpr uint32_t kDenseMinHits = 8;
constexpr uint32_t kGridSampleBlocks = 8;	/* grid_likely's runs of rows */
constexpr uint32_t kGridSampleRun = 512;	/* and their rows */

/* Test hook: every join spreads where several devices are named. */
bool		spread_always = false;

/* Test hooks: strategy (0 automatic, 1 grid wherever possible, 2 brute
 * force) and a segment size (work units; 0 = the defaults above). */
int			forced_strategy = 0;
double		forced_segment_work = 0.0;
bool		force_no_prune = false; /* test hook: the filter computes every tile */

inline double
segment_work(bool grid)
{
	if (forced_segment_work > 0.0)
		return forced_segment_work;
	return grid ? kSegmentWorkGrid : kSegmentWorkBf;
}

enum PassMode
{
	kModeWork,					/* candidates per probe point (grid) */
	kModeCount,					/* pairs per probe point */
	kModeTotal,					/* pairs in all, for count_only */
	kModeWrite					/* write a slice of the pair sequence */
};

/* The grid of one build chunk (passed by value to kernels). */
struct GridParams
{
	int			k;				/* indexed dimensions; 0 = brute force */
	int			dims[kMaxIndexed];	/* which coordinate each one is */
	double		lo[kMaxIndexed];
	double		w[kMaxIndexed];
	long long	nc[kMaxIndexed];	/* cells along each */
	unsigned long long stride[kMaxIndexed]; /* row-major cell id */
	unsigned long long pstride[kMaxIndexed];	/* probe sort key, over nc+2 */
	int			rows;			/* 3^(k-1) */
};

/* What choose_grid weighs: the join's shape, not its device or buffers. */
struct GridShape
{
	int			dim;
	double		eps;
	bool		self;
	bool		grid_capable;	/* L2 and a finite eps */
	bool		tc_capable;		/* brute force would filter on tensor cores */
};

/* Everything a probe kernel reads. */
struct JoinArgs
{
	GridParams	grid;
	const double *bcoords;		/* dim x nb, stride nb, cell order */
	const uint32_t *borig;		/* global row of each build position */
	const unsigned long long *cell_ids;
	const uint32_t *cell_start; /* ncells + 1 */
	uint32_t	nb;
	uint32_t	ncells;
	const double *pcoords;		/* dim x np, stride np */
	const uint32_t *porig;
	uint32_t	np;
	int			dim;
	double		eps;
	double		thr;			/* prefilter: sum > thr cannot join */
	int			metric;			/* SjMetric */
	const double *bnorm;		/* cosine: squared norms, build positions */
	const double *pnorm;		/* cosine: squared norms, probe positions */
	const unsigned long long *cand;	/* tensor path: sorted candidate keys */
	const uint32_t *cand_start; /* first candidate of each segment offset */
	uint32_t	cand_p0;		/* the segment's first probe position */
};

/* What one pass over probe positions reads and writes. */
struct PassArgs
{
	uint32_t	p0;
	uint32_t	p1;
	unsigned long long *per_point;	/* work or pair count per position */
	const unsigned long long *incl; /* inclusive scan of per_point */
	unsigned long long *total;	/* kModeTotal accumulator */
	const uint32_t *bounds;		/* kModeWrite: positions [lo, hi) */
	unsigned long long s;		/* kModeWrite: slice [s, e) */
	unsigned long long e;
	uint32_t   *out_left;
	uint32_t   *out_right;
	double	   *out_value;
	int		   *error_flag;
};

/* Small device scalars of a join. */
struct DeviceScalars
{
	unsigned long long total[2];	/* count_only, per slot */
	int			error[2];		/* write consistency, per slot */
	uint32_t	bounds[2];
	uint32_t	num_runs;
	uint32_t	max_cell;
	unsigned long long seg_total;
	unsigned long long candidates;	/* tensor filter: kept pairs */
	unsigned long long tiles;	/* tile pruning: tile pairs kept */
};

/* ------------------------------------------------------------------------
 * Device code
 * ------------------------------------------------------------------------ */

/* Cell coordinate of a build point, clamped into [0, nc). */
__device__ __forceinline__ long long
build_cell(double x, double lo, double w, long long nc)
{
	double		q = floor(__ddiv_rn(__dsub_rn(x, lo), w));

	if (!(q >= 0.0))
		return 0;
	if (q >= (double) (nc - 1))
		return nc - 1;
	return (long long) q;
}

/* Cell coordinate of a probe point, clamped into [-1, nc]. */
__device__ __forceinline__ long long
probe_cell(double x, double lo, double w, long long nc)
{
	double		q = floor(__ddiv_rn(__dsub_rn(x, lo), w));

	if (!(q >= -1.0))
		return -1;
	if (q >= (double) nc)
		return nc;
	return (long long) q;
}

/* First index in ids[0, n) whose id is >= key. */
__device__ __forceinline__ uint32_t
lower_bound_u64(const unsigned long long *ids, uint32_t n, unsigned long long key)
{
	uint32_t	lo = 0,
				hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + ((hi - lo) >> 1);

		if (__ldg(ids + mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A probe point's coordinates: registers for small fixed DIM. */
template <int DIM>
struct ProbePoint
{
	double		q[DIM > 0 ? DIM : 1];
	const double *col;
	uint32_t	stride;

	__device__ __forceinline__ void
	load(const double *coords, uint32_t n, uint32_t pos)
	{
		col = coords + pos;
		stride = n;
#pragma unroll
		for (int k = 0; k < DIM; k++)
			q[k] = col[(size_t) k * n];
	}
};

/*
 * Squared distance, summed in dimension order exactly like the CPU engine.
 * With a run-time dimension it may stop early once the partial sum exceeds
 * thr: partial sums never decrease, so such a pair cannot join.
 */
template <int DIM>
__device__ __forceinline__ double
squared_distance(const ProbePoint<DIM> &p, const double *bc, uint32_t nb,
				 uint32_t j, int dim, double thr)
{
	double		sum = 0.0;

	if (DIM > 0)
	{
#pragma unroll
		for (int k = 0; k < DIM; k++)
		{
			double		d = __dsub_rn(p.q[k], __ldg(bc + (size_t) k * nb + j));

			sum = __dadd_rn(sum, __dmul_rn(d, d));
		}
	}
	else
	{
		for (int k = 0; k < dim; k++)
		{
			double		d = __dsub_rn(p.col[(size_t) k * p.stride],
									  __ldg(bc + (size_t) k * nb + j));

			sum = __dadd_rn(sum, __dmul_rn(d, d));
			if ((k & 7) == 7 && sum > thr)
				break;
		}
	}
	return sum;
}

/*
 * Visit the candidate ranges of probe position pos: fn(j0, j1) for each
 * row of the neighbourhood, in a fixed order.  SELF: probe == build, only
 * rows >= the own row and, in the own row, positions after pos.
 */
template <bool SELF, class F>
__device__ __forceinline__ void
for_each_row(const JoinArgs &a, uint32_t pos, F &&fn)
{
	const GridParams &g = a.grid;
	long long	c[kMaxIndexed];
	const int	last = g.k - 1;

	for (int i = 0; i < g.k; i++)
	{
		double		x = a.pcoords[(size_t) g.dims[i] * a.np + pos];

		c[i] = SELF ? build_cell(x, g.lo[i], g.w[i], g.nc[i])
			: probe_cell(x, g.lo[i], g.w[i], g.nc[i]);
	}

	long long	lo_last = c[last] > 0 ? c[last] - 1 : 0;
	long long	hi_last = c[last] + 1 < g.nc[last] ? c[last] + 1 : g.nc[last] - 1;

	if (lo_last > hi_last)
		return;

	const int	r0 = SELF ? (g.rows - 1) / 2 : 0;

	for (int r = r0; r < g.rows; r++)
	{
		unsigned long long base = 0;
		int			rem = r;
		bool		inside = true;

		for (int i = last - 1; i >= 0; i--)
		{
			long long	ci = c[i] + (rem % 3) - 1;

			rem /= 3;
			if (ci < 0 || ci >= g.nc[i])
			{
				inside = false;
				break;
			}
			base += (unsigned long long) ci * g.stride[i];
		}
		if (!inside)
			continue;

		const bool	own = SELF && r == r0;
		unsigned long long id_lo = base + (unsigned long long) (own ? c[last] : lo_last);
		unsigned long long id_hi = base + (unsigned long long) hi_last;
		uint32_t	cb = lower_bound_u64(a.cell_ids, a.ncells, id_lo);
		uint32_t	ce = cb;

		while (ce < a.ncells && __ldg(a.cell_ids + ce) <= id_hi)
			ce++;
		if (ce == cb)
			continue;
		fn(own ? pos + 1 : __ldg(a.cell_start + cb), __ldg(a.cell_start + ce));
	}
}

/* Sum over the warp, added to *total by lane 0 (all lanes must call). */
__device__ __forceinline__ void
warp_add_total(unsigned long long v, unsigned long long *total)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, off);
	if ((threadIdx.x & 31) == 0 && v)
		atomicAdd(total, v);
}

/*
 * Pair number g of the pass (a probe position's first pair plus the ones
 * before it): written when it falls in the current slice [s, e) as
 * (left, right, value), the smaller row number first in a self-join.
 * Returns false when g is past the slice: the caller stops this position.
 */
template <bool SELF>
__device__ __forceinline__ bool
write_pair(const JoinArgs &a, const PassArgs &pa, unsigned long long g, uint32_t pos,
		   uint32_t j, double value)
{
	if (g >= pa.e)
		return false;
	if (g >= pa.s)
	{
		uint32_t	l = a.porig[pos],
					r = a.borig[j];
		size_t		o = (size_t) (g - pa.s);

		if (SELF && l > r)
		{
			uint32_t	t = l;

			l = r;
			r = t;
		}
		pa.out_left[o] = l;
		pa.out_right[o] = r;
		pa.out_value[o] = value;
	}
	return true;
}

/*
 * The probe positions [*lo, *hi) of a pass's kernel: the pass's, or in
 * kModeWrite the current slice's.
 */
template <int MODE>
__device__ __forceinline__ void
pass_positions(const PassArgs &pa, uint32_t *lo, uint32_t *hi)
{
	*lo = pa.p0;
	*hi = pa.p1;
	if (MODE == kModeWrite)
	{
		*lo = pa.bounds[0];
		*hi = pa.bounds[1];
	}
}

/*
 * One thread per probe position of the pass (grid-stride over the slice's
 * positions in kModeWrite): fn(pos) returns the position's pair count,
 * which kModeTotal adds to the pass's total (all lanes take part).
 */
template <int MODE, typename Fn>
__device__ __forceinline__ void
for_each_position(const PassArgs &pa, Fn fn)
{
	uint32_t	lo,
				hi;

	pass_positions<MODE>(pa, &lo, &hi);

	const uint64_t step = (MODE == kModeWrite) ? (uint64_t) gridDim.x * blockDim.x : 0;
	uint64_t	start = (uint64_t) lo + (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	for (uint64_t p = start;; p += step)
	{
		const bool	active = p < hi;
		unsigned long long n = 0;

		if (MODE == kModeWrite && !active)
			break;
		if (active)
			n = fn((uint32_t) p);
		if (MODE == kModeTotal)
			warp_add_total(n, pa.total);
		if (MODE != kModeWrite)
			break;
	}
}

/* The pass-wide number of position pos's first pair in kModeWrite, else 0. */
template <int MODE>
__device__ __forceinline__ unsigned long long
first_pair(const PassArgs &pa, uint32_t pos)
{
	return MODE == kModeWrite ? pa.incl[pos] - pa.per_point[pos] : 0;
}

/*
 * Pair (pos, j) of value v joins: the position's pair *n (first its first),
 * written in kModeWrite, and counted.  False when it falls past the slice:
 * the caller stops this position.
 */
template <bool SELF, int MODE>
__device__ __forceinline__ bool
take_pair(const JoinArgs &a, const PassArgs &pa, unsigned long long first,
		  unsigned long long *n, uint32_t pos, uint32_t j, double v)
{
	if (MODE == kModeWrite && !write_pair<SELF>(a, pa, first + *n, pos, j, v))
		return false;
	(*n)++;
	return true;
}

/*
 * Position pos is done with n pairs: kModeCount keeps the count; in
 * kModeWrite, a position that went through all its pairs (complete) and
 * found another count than the count pass flags an error.
 */
template <int MODE>
__device__ __forceinline__ void
end_position(const PassArgs &pa, uint32_t pos, unsigned long long n, bool complete)
{
	if (MODE == kModeCount)
		pa.per_point[pos] = n;
	if (MODE == kModeWrite && complete && n != pa.per_point[pos])
		atomicOr(pa.error_flag, 1);
}

/*
 * Grid probe, one thread per probe position.  kModeWork counts candidates,
 * kModeCount / kModeTotal count pairs, kModeWrite walks the positions of
 * the current slice (grid-stride) and writes its pairs.
 */
template <int DIM, bool SELF, int MODE>
__global__ void __launch_bounds__(kBlock)
grid_probe_kernel(JoinArgs a, PassArgs pa)
{
	for_each_position<MODE>(pa, [&](uint32_t pos) -> unsigned long long {
		unsigned long long n = 0;

		if (MODE == kModeWork)
		{
			double		work = 0.0;

			for_each_row<SELF>(a, pos, [&](uint32_t j0, uint32_t j1) {
				work += kRowCost + (double) (j1 - j0) * (a.dim + 1);
			});
			pa.per_point[pos] = (unsigned long long) work + 1;
			return n;
		}

		ProbePoint<DIM> q;
		unsigned long long first;
		bool		stopped = false;

		q.load(a.pcoords, a.np, pos);
		first = first_pair<MODE>(pa, pos);
		for_each_row<SELF>(a, pos, [&](uint32_t j0, uint32_t j1) {
			for (uint32_t j = j0; j < j1 && !stopped; j++)
			{
				double		sum = squared_distance<DIM>(q, a.bcoords, a.nb,
														j, a.dim, a.thr);

				if (!(sum <= a.thr))
					continue;

				double		dist = __dsqrt_rn(sum);

				if (!(dist <= a.eps))
					continue;
				if (!take_pair<SELF, MODE>(a, pa, first, &n, pos, j, dist))
				{
					stopped = true;
					break;
				}
			}
		});
		end_position<MODE>(pa, pos, n, !stopped);
		return n;
	});
}

/*
 * The canonical values of pairs (pos, j[t]), t < G, under the join's
 * metric (sjdist.h), NaN where an L2 sum exceeds thr: every pair summed on
 * its own in dimension order, the group's loads in flight together
 * (verification waits on scattered build rows).  An L2 partial sum only
 * grows, so the group stops early once all of its sums exceed thr.
 */
template <int G>
__device__ __forceinline__ void
canonical_values(const JoinArgs &a, uint32_t pos, const uint32_t *j, double *v)
{
	if (a.metric == SJ_METRIC_COSINE)
	{
		double		dot[G];

#pragma unroll
		for (int t = 0; t < G; t++)
			dot[t] = 0.0;
		for (int k = 0; k < a.dim; k++)
		{
			double		p = a.pcoords[(size_t) k * a.np + pos];

#pragma unroll
			for (int t = 0; t < G; t++)
				dot[t] = sj_dot_step(dot[t], p, __ldg(a.bcoords + (size_t) k * a.nb + j[t]));
		}
#pragma unroll
		for (int t = 0; t < G; t++)
			v[t] = sj_cosine_finish(dot[t], a.pnorm[pos], __ldg(a.bnorm + j[t]));
		return;
	}

	double		sum[G];

#pragma unroll
	for (int t = 0; t < G; t++)
		sum[t] = 0.0;
	for (int k = 0; k < a.dim; k++)
	{
		double		p = a.pcoords[(size_t) k * a.np + pos];
		bool		all_past = true;

#pragma unroll
		for (int t = 0; t < G; t++)
		{
			sum[t] = sj_l2_step(sum[t], p, __ldg(a.bcoords + (size_t) k * a.nb + j[t]));
			all_past = all_past && sum[t] > a.thr;
		}
		if ((k & 7) == 7 && all_past)
			break;
	}
#pragma unroll
	for (int t = 0; t < G; t++)
		v[t] = sum[t] <= a.thr ? sj_l2_finish(sum[t]) : NAN;
}

/*
 * Verification of the tensor filter's candidates, one thread per probe
 * position of the segment, in the modes of grid_probe_kernel: the
 * candidates of a position are its build positions in ascending order,
 * each decided by the canonical value alone, kVerifyGroup at a time (a
 * short group repeats its last candidate, whose copies are not taken).
 */
template <bool SELF, int MODE>
__global__ void __launch_bounds__(kBlock)
verify_kernel(JoinArgs a, PassArgs pa)
{
	for_each_position<MODE>(pa, [&](uint32_t pos) -> unsigned long long {
		unsigned long long n = 0;
		unsigned long long first = first_pair<MODE>(pa, pos);
		uint32_t	c0 = a.cand_start[pos - a.cand_p0],
					c1 = a.cand_start[pos - a.cand_p0 + 1];
		bool		stopped = false;

		for (uint32_t c = c0; c < c1 && !stopped; c += kVerifyGroup)
		{
			uint32_t	j[kVerifyGroup];
			double		v[kVerifyGroup];
			int			g = (int) min((uint32_t) kVerifyGroup, c1 - c);

#pragma unroll
			for (int t = 0; t < kVerifyGroup; t++)
				j[t] = (uint32_t) a.cand[c + min(t, g - 1)];
			canonical_values<kVerifyGroup>(a, pos, j, v);
			for (int t = 0; t < g; t++)
			{
				if (!(v[t] <= a.eps))
					continue;
				if (!take_pair<SELF, MODE>(a, pa, first, &n, pos, j[t], v[t]))
				{
					stopped = true;
					break;
				}
			}
		}
		end_position<MODE>(pa, pos, n, first + n < pa.e);
		return n;
	});
}

/*
 * Verification with a warp a probe position, for segments whose positions
 * have many candidates each (dense joins: a segment then holds few
 * positions, too few threads for verify_kernel to fill the device).  The
 * lanes take consecutive candidates, 32 at a time, kVerifyGroup such
 * rounds in flight; each pair is still summed on its own in dimension
 * order (canonical_values), and a ballot merges the lanes' decisions in
 * candidate order, so that a position's pairs are numbered, written and
 * counted exactly as verify_kernel numbers them.
 */
template <bool SELF, int MODE>
__global__ void __launch_bounds__(kBlock)
verify_warp_kernel(JoinArgs a, PassArgs pa)
{
	const uint32_t lane = threadIdx.x & 31;
	const unsigned int below = (1u << lane) - 1;
	const uint64_t warps = (uint64_t) gridDim.x * (blockDim.x / 32);
	uint32_t	lo,
				hi;

	pass_positions<MODE>(pa, &lo, &hi);
	for (uint64_t p = lo + ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) / 32; p < hi;
		 p += warps)
	{
		const uint32_t pos = (uint32_t) p;
		const unsigned long long first = first_pair<MODE>(pa, pos);
		const uint32_t c0 = a.cand_start[pos - a.cand_p0],
					c1 = a.cand_start[pos - a.cand_p0 + 1];
		unsigned long long n = 0;
		bool		stopped = false;

		for (uint32_t c = c0; c < c1 && !stopped; c += 32 * kVerifyGroup)
		{
			uint32_t	j[kVerifyGroup];
			double		v[kVerifyGroup];

#pragma unroll
			for (int t = 0; t < kVerifyGroup; t++)
				j[t] = (uint32_t) a.cand[min(c + t * 32 + lane, c1 - 1)];
			canonical_values<kVerifyGroup>(a, pos, j, v);
#pragma unroll
			for (int t = 0; t < kVerifyGroup; t++)
			{
				const bool	ok = c + t * 32 + lane < c1 && v[t] <= a.eps;
				const unsigned int mask = __ballot_sync(0xffffffffu, ok);
				unsigned long long taken = (unsigned long long) __popc(mask);

				if (MODE == kModeWrite)
				{
					/* pairs from pa.e on are the next slice's: stop there */
					const unsigned long long room = first + n < pa.e ? pa.e - (first + n) : 0;

					if (taken > room)
					{
						taken = room;
						stopped = true;
					}
					if (ok && (unsigned long long) __popc(mask & below) < taken)
						(void) write_pair<SELF>(a, pa, first + n + __popc(mask & below), pos,
												j[t], v[t]);
				}
				n += taken;
				if (stopped)
					break;
			}
		}
		if (lane == 0)
		{
			end_position<MODE>(pa, pos, n, first + n < pa.e);
			if (MODE == kModeTotal && n)
				atomicAdd(pa.total, n);
		}
		if (MODE != kModeWrite)
			break;
	}
}

/*
 * Brute force, tiled (after Böhm et al.'s NLJ and Crystal's tiles): each
 * thread holds one probe point, the block stages kBfTile build points by
 * kBfDimChunk dimensions in shared memory, and every thread keeps kBfTile
 * partial sums in registers, so each pair is still summed in dimension
 * order.  A tile is abandoned once no partial sum of the block can join.
 */
template <bool SELF, int MODE>
__global__ void __launch_bounds__(kBfThreads)
brute_force_kernel(JoinArgs a, PassArgs pa)
{
	__shared__ __align__(16) double tile[kBfDimChunk][kBfTile];
	uint32_t	lo,
				hi;

	pass_positions<MODE>(pa, &lo, &hi);

	for (uint64_t base = (uint64_t) lo + (uint64_t) blockIdx.x * kBfThreads;
		 base < hi; base += (uint64_t) gridDim.x * kBfThreads)
	{
		const uint64_t p = base + threadIdx.x;
		const bool	active = p < hi;
		const uint32_t pos = (uint32_t) (active ? p : base);
		unsigned long long n = 0;
		unsigned long long first = 0;
		bool		stopped = false;
		uint32_t	jstart = SELF ? (uint32_t) ((base + 1) / kBfTile * kBfTile) : 0;

		if (active)
			first = first_pair<MODE>(pa, pos);

		for (uint32_t j0 = jstart; j0 < a.nb; j0 += kBfTile)
		{
			double		acc[kBfTile];

#pragma unroll
			for (int t = 0; t < kBfTile; t++)
				acc[t] = 0.0;

			for (int k0 = 0; k0 < a.dim; k0 += kBfDimChunk)
			{
				const int	kn = min(kBfDimChunk, a.dim - k0);

				__syncthreads();
				for (int idx = threadIdx.x; idx < kBfDimChunk * kBfTile; idx += kBfThreads)
				{
					int			kk = idx / kBfTile,
								t = idx % kBfTile;
					uint32_t	j = j0 + t;

					tile[kk][t] = (kk < kn && j < a.nb)
						? a.bcoords[(size_t) (k0 + kk) * a.nb + j] : 0.0;
				}
				__syncthreads();
				if (active && !stopped)
				{
					for (int kk = 0; kk < kn; kk++)
					{
						double		qk = a.pcoords[(size_t) (k0 + kk) * a.np + pos];

						const double2 *row = reinterpret_cast<const double2 *>(tile[kk]);

#pragma unroll
						for (int t = 0; t < kBfTile; t += 2)
						{
							double2		b = row[t / 2];
							double		d0 = __dsub_rn(qk, b.x);
							double		d1 = __dsub_rn(qk, b.y);

							acc[t] = __dadd_rn(acc[t], __dmul_rn(d0, d0));
							acc[t + 1] = __dadd_rn(acc[t + 1], __dmul_rn(d1, d1));
						}
					}
				}
				if (k0 + kBfDimChunk < a.dim)
				{
					int			alive = 0;

					if (active && !stopped)
					{
#pragma unroll
						for (int t = 0; t < kBfTile; t++)
							alive |= acc[t] <= a.thr;
					}
					if (!__syncthreads_or(alive))
						break;
				}
			}

			if (active && !stopped)
			{
#pragma unroll
				for (int t = 0; t < kBfTile; t++)
				{
					uint32_t	j = j0 + t;

					if (stopped || j >= a.nb || (SELF && j <= pos) || !(acc[t] <= a.thr))
						continue;

					double		dist = __dsqrt_rn(acc[t]);

					if (!(dist <= a.eps))
						continue;
					if (!take_pair<SELF, MODE>(a, pa, first, &n, pos, j, dist))
						stopped = true;
				}
			}
			if (MODE == kModeWrite && __syncthreads_and(stopped || !active))
				break;
		}

		if (active)
			end_position<MODE>(pa, pos, n, !stopped);
		if (MODE == kModeTotal)
			warp_add_total(active ? n : 0, pa.total);
	}
}

/* Reduction operators for minmax_kernel. */
struct MinOp
{
	__device__ double operator() (double x, double y) const { return fmin(x, y); }
};

struct MaxOp
{
	__device__ double operator() (double x, double y) const { return fmax(x, y); }
};

/* Per-dimension min and max, one partial per block (blockIdx.y = dim). */
__global__ void
minmax_kernel(const double *coords, uint32_t n, double *partial)
{
	using BlockReduce = cub::BlockReduce<double, kBlock>;
	__shared__ typename BlockReduce::TempStorage tmp_lo;
	__shared__ typename BlockReduce::TempStorage tmp_hi;
	const double *col = coords + (size_t) blockIdx.y * n;
	double		lo = INFINITY,
				hi = -INFINITY;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		double		x = col[i];

		lo = fmin(lo, x);
		hi = fmax(hi, x);
	}

	lo = BlockReduce(tmp_lo).Reduce(lo, MinOp());
	hi = BlockReduce(tmp_hi).Reduce(hi, MaxOp());
	if (threadIdx.x == 0)
	{
		size_t		o = ((size_t) blockIdx.y * gridDim.x + blockIdx.x) * 2;

		partial[o] = lo;
		partial[o + 1] = hi;
	}
}

/*
 * Cell keys of n points, and their indices: of a build point its row-major
 * cell id; of a probe point (PROBE) its cell order over the clamped range
 * [-1, nc] of every dim.
 */
template <bool PROBE>
__global__ void
cell_keys_kernel(const double *coords, uint32_t n, GridParams g,
				 unsigned long long *keys, uint32_t *vals)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;

	unsigned long long id = 0;

	for (int d = 0; d < g.k; d++)
	{
		double		x = coords[(size_t) g.dims[d] * n + i];

		if (PROBE)
			id += (unsigned long long) (probe_cell(x, g.lo[d], g.w[d], g.nc[d]) + 1) *
				g.pstride[d];
		else
			id += (unsigned long long) build_cell(x, g.lo[d], g.w[d], g.nc[d]) * g.stride[d];
	}
	keys[i] = id;
	vals[i] = (uint32_t) i;
}

/* out[i] = in[perm[i]] */
template <typename T>
__global__ void
gather_kernel(const T *in, const uint32_t *perm, uint32_t n, T *out)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[perm[i]];
}

/* out[k * n + i] = in[k * n + perm[i]], for the ndim columns (stride n) */
template <typename T>
__global__ void
gather_columns_kernel(const T *in, const uint32_t *perm, uint32_t n, int ndim, T *out)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;

	uint32_t	from = perm[i];

	for (int k = blockIdx.y; k < ndim; k += gridDim.y)
		out[(size_t) k * n + i] = in[(size_t) k * n + from];
}

/*
 * Widen in place: the floats at f[nfl + i] become the doubles at d[i]
 * (d and f the same memory), for i in [a, b).  Double i covers floats
 * 2i and 2i + 1, so a launch may write no float at nfl or beyond that it
 * or a later launch still reads (widen_in_place sizes them); a thread
 * reads its float before it writes.
 */
__global__ void
widen_kernel(double *d, size_t nfl, size_t a, size_t b)
{
	size_t		i = a + (size_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < b)
		d[i] = (double) reinterpret_cast<const float *>(d)[nfl + i];
}

/* orig[i] = base + (perm ? perm[i] : i) */
__global__ void
orig_kernel(const uint32_t *perm, uint32_t n, uint32_t base, uint32_t *orig)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		orig[i] = base + (perm ? perm[i] : (uint32_t) i);
}

/*
 * Positions [lo, hi) whose pairs meet the slice [s, e) of the segment
 * [p0, p1): lo is the first with incl > s, hi the first whose first pair
 * (incl - count) is >= e.  One thread.
 */
__global__ void
slice_bounds_kernel(const unsigned long long *count, const unsigned long long *incl,
					uint32_t p0, uint32_t p1, unsigned long long s,
					unsigned long long e, uint32_t *bounds)
{
	uint32_t	a = p0,
				b = p1;

	while (a < b)
	{
		uint32_t	m = a + ((b - a) >> 1);

		if (incl[m] <= s)
			a = m + 1;
		else
			b = m;
	}
	bounds[0] = a;
	b = p1;
	while (a < b)
	{
		uint32_t	m = a + ((b - a) >> 1);

		if (incl[m] - count[m] < e)
			a = m + 1;
		else
			b = m;
	}
	bounds[1] = a;
}

/* Segment cuts: out[t] = first position in [p0, p1) with incl >= target t. */
__global__ void
segment_cuts_kernel(const unsigned long long *incl, uint32_t p0, uint32_t p1,
					unsigned long long total, uint32_t nseg, uint32_t *out)
{
	uint32_t	t = blockIdx.x * blockDim.x + threadIdx.x + 1;

	if (t >= nseg)
		return;

	unsigned long long target = (unsigned long long) ((double) total * t / nseg);
	uint32_t	a = p0,
				b = p1;

	while (a < b)
	{
		uint32_t	m = a + ((b - a) >> 1);

		if (incl[m] < target)
			a = m + 1;
		else
			b = m;
	}
	out[t - 1] = a;
}

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* Grid blocks for n threads of kBlock. */
inline unsigned int
blocks_for(uint64_t n)
{
	return (unsigned int) std::max<uint64_t>(1, div_up<uint64_t>(n, kBlock));
}

/* Blocks a dimension of minmax_kernel over n points. */
inline unsigned int
minmax_blocks(uint64_t n)
{
	return (unsigned int) std::max<uint64_t>(1, std::min<uint64_t>(kMinmaxBlocks,
																 div_up<uint64_t>(n, kBlock * 8)));
}

/* Significant bits of keys < limit. */
inline int
key_bits(unsigned long long limit)
{
	if (limit <= 1)
		return 1;
	return 64 - __builtin_clzll(limit - 1);
}

/* The prefilter bound: no pair with a squared sum above it can join. */
inline double
prefilter_bound(double eps)
{
	return eps * eps * (1.0 + 1e-6) + 1e-300;
}

/* One unit of work: join a probe chunk against a build chunk. */
struct Task
{
	uint32_t	build;			/* chunk of the build side */
	uint32_t	probe;			/* chunk of the probe side */
	bool		self;			/* probe chunk == build chunk of a self-join */
};

/* A result slot: device buffer, pinned host buffer, events. */
struct Slot
{
	DeviceMemory dev;
	uint64_t	dev_cap = 0;
	PinnedBuffer<unsigned char> host;
	uint64_t	host_cap = 0;
	Event		done;
	Event		probe_start;
	Event		probe_stop;
	Event		xfer_start;
	Event		xfer_stop;
	uint64_t	count = 0;		/* pairs (or counted pairs) in the batch */
	bool		pending = false;	/* device work in flight for it */
	bool		has_copy = false;
	bool		final = false;	/* the join's last batch */
};

/* Per-slot host mirror of the device scalars. */
struct SlotHost
{
	unsigned long long total;
	int			error;
};

}								/* namespace */

/* The join handle (opaque to C). */
struct SjGpuEpsJoin
{
	/* inputs */
	SjVectors	left;
	SjVectors	right;			/* == left for a self-join */
	bool		self = false;
	double		eps = 0.0;
	int			dim = 0;
	bool		count_only = false;
	int			device = 0;
	sjgpu::MultiJoin *multi = nullptr;	/* set: the join runs on several
										 * devices, and nothing below is used */
	sjgpu::UnitClaim claim;		/* units set: a device of a spread join */
	size_t		uploads = 0;	/* upload_rows calls so far (spread: shared) */

	/* plan */
	Budget		budget;
	uint32_t	chunk = 0;
	uint32_t	nbuild_chunks = 0;
	uint32_t	nprobe_chunks = 0;
	uint64_t	cap = 0;		/* pairs per batch */
	bool		grid_capable = false;
	bool		tc_capable = false; /* the tensor filter may be used */
	int			metric = SJ_METRIC_L2;
	bool		separate_probe = false;
	size_t		temp_bytes = 0;

	/* device memory */
	Stream		compute;
	Stream		copy;
	DeviceBuffer<double> bcoords;
	DeviceBuffer<uint32_t> borig;
	DeviceBuffer<unsigned long long> cell_ids;
	DeviceBuffer<uint32_t> cell_start;
	DeviceBuffer<double> pcoords;
	DeviceBuffer<uint32_t> porig;
	DeviceBuffer<unsigned long long> a; /* per-point counts / sort keys */
	DeviceBuffer<unsigned long long> b; /* scans / sort keys */
	DeviceBuffer<uint32_t> v0;	/* sort values, run lengths, cuts */
	DeviceBuffer<uint32_t> v1;
	DeviceBuffer<unsigned char> temp;	/* CUB temporary storage */
	DeviceBuffer<double> partials;
	DeviceBuffer<DeviceScalars> scalars;

	/* the tensor filter (eps_tc.cu): FP16 rows, norms, candidates */
	DeviceBuffer<__half> bhalf;
	DeviceBuffer<__half> phalf;
	DeviceBuffer<sjgpu::TcBound> bpn;
	DeviceBuffer<sjgpu::TcBound> ppn;
	DeviceBuffer<double> bnorm;
	DeviceBuffer<double> pnorm;
	DeviceBuffer<double> tcmean;	/* dim means, then the largest |x| */
	DeviceBuffer<unsigned long long> ckeys;
	DeviceBuffer<unsigned long long> ckeys2;
	DeviceBuffer<uint32_t> cstart;
	DeviceBuffer<unsigned char> ctemp;
	unsigned long long ccap = 0;
	size_t		ctemp_bytes = 0;
	bool		use_tc = false; /* the current task filters on tensor cores */
	bool		verify_warp = false;	/* the segment's candidates: a warp a
										 * position (verify_warp_kernel) */
	sjgpu::TcParams tcp;
	sjgpu::TcSide tcb;
	sjgpu::TcSide tcpr;
	const unsigned long long *cand = nullptr;	/* the segment's sorted keys */

	/* tile pruning of the tensor filter (eps_tiles.cu) */
	DeviceBuffer<float> tseeds;
	DeviceBuffer<uint32_t> tseedidx;	/* ranks, then the neighbours */
	DeviceBuffer<double> bcentre;
	DeviceBuffer<double> bradius;
	DeviceBuffer<double> pcentre;
	DeviceBuffer<double> pradius;
	DeviceBuffer<uint32_t> tlist;
	unsigned long long tlist_cap = 0;
	bool		tc_prune = false;	/* the current task prunes tile pairs */
	sjgpu::TcTiles btiles = {};
	sjgpu::TcTiles ptiles = {};
	double		tile_pairs = 0; /* tile pairs the filter would compute */
	double		tile_kept = 0;	/* of which it computed */
	double		prune_ms = 0;	/* ordering rows, tile bounds, tile lists */

	PinnedBuffer<unsigned long long> host_scalars;
	PinnedBuffer<SlotHost> slot_host;
	EventTimer	timer;
	EventTimer	filter_timer;
	EventTimer	prune_timer;
	Slot		slots[2];
	int			cur_slot = 0;

	/* the current build chunk, probe chunk and segment */
	std::vector<Task> tasks;
	size_t		task = 0;
	long long	loaded_build = -1;
	long long	loaded_probe = -1;	/* probe chunk sorted for loaded_build */
	GridParams	grid;
	uint32_t	nb = 0;
	uint32_t	ncells = 0;
	uint32_t	max_cell = 0;
	uint32_t	np = 0;
	std::vector<uint32_t> cuts; /* segment boundaries in probe positions */
	std::vector<uint32_t> plan_cuts;	/* spread: the task's units */
	uint64_t	plan_digest = 0;
	bool		task_started = false;	/* spread: plan_cuts are the task's */
	size_t		seg = 0;		/* current segment: [cuts[seg], cuts[seg+1]) */
	bool		seg_counted = false;
	uint64_t	seg_total = 0;	/* pairs of the current segment */
	uint64_t	seg_pos = 0;	/* next pair to write */
	bool		exhausted = false;	/* all tasks planned and consumed */
	bool		finished = false;	/* the final batch was returned */
	SjStatus	failed = SJ_OK;	/* a call failed: later calls repeat it */
	char		failure[SJ_ERRMSG_LEN] = "";

	SjTimings	timings;

	SjGpuEpsJoin()
	{
		memset(&timings, 0, sizeof(timings));
		memset(&grid, 0, sizeof(grid));
	}
};

namespace
{

/* Rows [first, first + count) of one side, as a chunk. */
inline uint32_t
chunk_first(const SjGpuEpsJoin *j, uint32_t c)
{
	return c * j->chunk;
}

inline uint32_t
chunk_rows(const SjGpuEpsJoin *j, uint32_t n, uint32_t c)
{
	uint64_t	first = (uint64_t) c * j->chunk;

	return (uint32_t) std::min<uint64_t>(j->chunk, n - first);
}

/* CUB temporary bytes for chunks of c points (the largest of all uses). */
size_t
cub_temp_bytes(uint32_t c, bool grid)
{
	size_t		need = 0,
				bytes = 0;
	int			nitems = (int) c;

	SJGPU_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes,
											  (unsigned long long *) nullptr,
											  (unsigned long long *) nullptr, nitems));
	need = std::max(need, bytes);
	if (grid)
	{
		cub::DoubleBuffer<unsigned long long> keys(nullptr, nullptr);
		cub::DoubleBuffer<uint32_t> vals(nullptr, nullptr);

		bytes = 0;
		SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, vals, nitems,
													0, 64));
		need = std::max(need, bytes);
		bytes = 0;
		SJGPU_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, bytes,
													   (unsigned long long *) nullptr,
													   (unsigned long long *) nullptr,
													   (uint32_t *) nullptr,
													   (uint32_t *) nullptr, nitems));
		need = std::max(need, bytes);
		bytes = 0;
		SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, (uint32_t *) nullptr,
												  (uint32_t *) nullptr, nitems + 1));
		need = std::max(need, bytes);
		bytes = 0;
		SJGPU_CHECK(cub::DeviceReduce::Max(nullptr, bytes, (uint32_t *) nullptr,
										   (uint32_t *) nullptr, nitems));
		need = std::max(need, bytes);
	}
	return need + 256;
}

/*
 * Capacity of the candidate buffer for chunks of c rows: twice what one
 * tile row of probes can keep, so that a segment always fits once cut.
 */
unsigned long long
tc_candidates(size_t c)
{
	return (unsigned long long) std::max<size_t>(c, 1) * sjgpu::kTcTile * 2;
}

/*
 * CUB temporary bytes to sort n candidate keys, or the c rows of a chunk
 * by their tile-pruning seed.
 */
size_t
tc_temp_bytes(unsigned long long n, size_t c)
{
	cub::DoubleBuffer<unsigned long long> keys(nullptr, nullptr);
	cub::DoubleBuffer<uint32_t> vals(nullptr, nullptr);
	size_t		bytes = 0,
				pairs = 0;

	SJGPU_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, (int) std::min<unsigned long long>(n, INT32_MAX), 0, 64));
	SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, pairs, keys, vals, (int) c, 0, 64));
	return std::max(bytes, pairs);
}

/* Tiles of a chunk of c rows. */
size_t
tc_tiles(size_t c)
{
	return (c + sjgpu::kTcTile - 1) / sjgpu::kTcTile;
}

/*
 * Capacity of the tile-pair list: a segment holds about kTcSegmentPairs
 * pairs (twice that for a self-join), plus the tiles cut at its edges.
 */
unsigned long long
tc_list_cap(size_t c)
{
	double		seg = 2.0 * kTcSegmentPairs / sjgpu::kTcTile / sjgpu::kTcTile;
	double		all = (double) tc_tiles(c) * (double) tc_tiles(c);

	return (unsigned long long) std::min(seg, all) + 4 * tc_tiles(c) + 64;
}

/* Tile-pruning seeds for chunks of c rows (at least one, for the buffers). */
uint32_t
seeds_for(size_t c)
{
	return std::max<uint32_t>(1, sjgpu::tc_seed_count((uint32_t) std::min<size_t>(c, UINT32_MAX)));
}

/* Device bytes a chunk size needs, results excluded. */
size_t
chunk_bytes(const SjGpuEpsJoin *j, uint32_t c, bool separate, size_t *temp)
{
	size_t		cc = c;
	size_t		coords = cc * j->dim * sizeof(double);
	size_t		need = 0;

	*temp = cub_temp_bytes(c, j->grid_capable);
	need += coords + cc * 4;	/* build coords, orig */
	need += 2 * cc * 8;			/* a, b */
	need += (cc + 1) * 4;		/* v0 */
	if (j->grid_capable)
	{
		need += cc * 8 + (cc + 1) * 4;	/* cell ids, cell starts */
		need += (cc + 1) * 4;	/* v1 */
		need += (size_t) j->dim * minmax_blocks(c) * 2 * sizeof(double);
	}
	if (separate)
		need += coords + cc * 4;
	if (j->tc_capable)
	{
		size_t		rows = cc * sjgpu::tc_padded_dim(j->dim) * sizeof(__half) +
			cc * (sizeof(sjgpu::TcBound) + 8);

		need += (separate ? 2 : 1) * rows + (size_t) j->dim * 8 + 64;
		need += tc_candidates(cc) * 16 + (cc + 1) * 4 + tc_temp_bytes(tc_candidates(cc), cc);
		/* tile pruning: seeds, centres and radii, the tile-pair list */
		need += (size_t) seeds_for(c) * (sjgpu::kTcProj * sizeof(float) +
										 (1 + sjgpu::kTcSeedNbrs) * sizeof(uint32_t));
		need += tc_list_cap(cc) * 4;
		need += (separate ? 2 : 1) * tc_tiles(cc) * ((size_t) j->dim + 1) * sizeof(double);
	}
	need += sizeof(DeviceScalars) + *temp;
	return need;
}

/* Choose the batch capacity and the chunk size within the budget. */
void
plan_memory(SjGpuEpsJoin *j, size_t max_batch)
{
	size_t		limit = j->budget.limit();
	uint32_t	nmax = j->self ? j->left.n : std::max(j->left.n, j->right.n);
	size_t		results = 0,
				avail,
				temp = 0;

	if (!j->count_only)
	{
		uint64_t	cap = max_batch ? max_batch : kDefaultBatch;

		cap = std::min<uint64_t>(cap, std::max<uint64_t>(1, limit / 4 / 32));
		j->cap = cap;
		results = 2 * (size_t) cap * 16;
	}
	if (results >= limit)
		throw Error(SJ_ERR_DEVICE_NOMEM,
					"device memory limit of %zu bytes is too small for eps_join",
					limit);
	avail = limit - results;

	nmax = std::min(nmax, kMaxChunk);
	j->chunk = nmax;
	j->separate_probe = !j->self;
	if (chunk_bytes(j, nmax, j->separate_probe, &temp) > avail)
	{
		uint32_t	lo = 1,
					hi = nmax;	/* largest fitting chunk is in [lo - 1, hi) */

		j->separate_probe = true;
		if (chunk_bytes(j, 1, true, &temp) > avail)
			throw Error(SJ_ERR_DEVICE_NOMEM,
						"device memory limit of %zu bytes is too small for eps_join over %d dimensions",
						limit, j->dim);
		while (lo < hi)
		{
			uint32_t	mid = lo + (hi - lo) / 2;

			if (chunk_bytes(j, mid, true, &temp) <= avail)
				lo = mid + 1;
			else
				hi = mid;
		}
		j->chunk = lo - 1;
		chunk_bytes(j, j->chunk, true, &temp);
	}
	j->temp_bytes = temp;
}

/* Allocate the per-chunk buffers once, sized for the chunk. */
void
allocate_buffers(SjGpuEpsJoin *j)
{
	Budget	   *bu = &j->budget;
	size_t		c = j->chunk;

	j->bcoords = DeviceBuffer<double>(bu, c * j->dim, "build coordinates");
	j->borig = DeviceBuffer<uint32_t>(bu, c, "build row numbers");
	j->a = DeviceBuffer<unsigned long long>(bu, c, "per-point counts");
	j->b = DeviceBuffer<unsigned long long>(bu, c, "per-point offsets");
	j->v0 = DeviceBuffer<uint32_t>(bu, c + 1, "sort values");
	if (j->grid_capable)
	{
		j->cell_ids = DeviceBuffer<unsigned long long>(bu, c, "cell ids");
		j->cell_start = DeviceBuffer<uint32_t>(bu, c + 1, "cell starts");
		j->v1 = DeviceBuffer<uint32_t>(bu, c + 1, "sort values");
		j->partials = DeviceBuffer<double>(bu, (size_t) j->dim * minmax_blocks(c) * 2,
										   "bounds");
	}
	if (j->tc_capable)
	{
		size_t		rows = c * sjgpu::tc_padded_dim(j->dim);

		j->bhalf = DeviceBuffer<__half>(bu, rows, "FP16 build rows");
		j->bpn = DeviceBuffer<sjgpu::TcBound>(bu, c, "build bounds");
		j->bnorm = DeviceBuffer<double>(bu, c, "build norms");
		if (j->separate_probe)
		{
			j->phalf = DeviceBuffer<__half>(bu, rows, "FP16 probe rows");
			j->ppn = DeviceBuffer<sjgpu::TcBound>(bu, c, "probe bounds");
			j->pnorm = DeviceBuffer<double>(bu, c, "probe norms");
		}
		j->tcmean = DeviceBuffer<double>(bu, (size_t) j->dim + 1, "means");
		j->ccap = tc_candidates(c);
		j->ckeys = DeviceBuffer<unsigned long long>(bu, j->ccap, "candidates");
		j->ckeys2 = DeviceBuffer<unsigned long long>(bu, j->ccap, "sorted candidates");
		j->cstart = DeviceBuffer<uint32_t>(bu, c + 1, "candidate starts");
		j->ctemp_bytes = tc_temp_bytes(j->ccap, c);
		j->ctemp = DeviceBuffer<unsigned char>(bu, j->ctemp_bytes, "candidate sort storage");
		j->tseeds = DeviceBuffer<float>(bu, (size_t) seeds_for(c) * sjgpu::kTcProj,
										"tile seeds");
		j->tseedidx = DeviceBuffer<uint32_t>(bu, (size_t) seeds_for(c) *
											 (1 + sjgpu::kTcSeedNbrs), "tile seed order");
		j->bcentre = DeviceBuffer<double>(bu, tc_tiles(c) * j->dim, "build tile centres");
		j->bradius = DeviceBuffer<double>(bu, tc_tiles(c), "build tile radii");
		if (j->separate_probe)
		{
			j->pcentre = DeviceBuffer<double>(bu, tc_tiles(c) * j->dim, "probe tile centres");
			j->pradius = DeviceBuffer<double>(bu, tc_tiles(c), "probe tile radii");
		}
		j->tlist_cap = tc_list_cap(c);
		j->tlist = DeviceBuffer<uint32_t>(bu, j->tlist_cap, "tile pairs");
	}
	if (j->separate_probe)
	{
		j->pcoords = DeviceBuffer<double>(bu, c * j->dim, "probe coordinates");
		j->porig = DeviceBuffer<uint32_t>(bu, c, "probe row numbers");
	}
	j->scalars = DeviceBuffer<DeviceScalars>(bu, 1, "scalars");
	j->temp = DeviceBuffer<unsigned char>(bu, j->temp_bytes, "CUB temporary storage");
	SJGPU_CHECK(cudaMemsetAsync(j->scalars.get(), 0, sizeof(DeviceScalars),
								j->compute.get()));
}

/* The list of chunk pairs, in the order they are joined. */
void
plan_tasks(SjGpuEpsJoin *j)
{
	uint32_t	nb = j->self ? j->left.n : j->right.n;
	uint32_t	np = j->left.n;

	if (j->left.n == 0 || (!j->self && j->right.n == 0) || (j->self && j->left.n < 2))
		return;
	j->nbuild_chunks = (uint32_t) div_up<uint64_t>(nb, j->chunk);
	j->nprobe_chunks = (uint32_t) div_up<uint64_t>(np, j->chunk);
	for (uint32_t bc = 0; bc < j->nbuild_chunks; bc++)
	{
		if (j->self)
		{
			j->tasks.push_back(Task {bc, bc, true});
			for (uint32_t pc = 0; pc < bc; pc++)
				j->tasks.push_back(Task {bc, pc, false});
		}
		else
		{
			for (uint32_t pc = 0; pc < j->nprobe_chunks; pc++)
				j->tasks.push_back(Task {bc, pc, false});
		}
	}
}

/*
 * The n floats in the upper half of d (n doubles) widened into all of it,
 * on the stream: launches over [a, b) with 2b <= n + a write only floats
 * already read, each half the rest.
 */
void
widen_in_place(double *d, size_t n, cudaStream_t st)
{
	size_t		a = 0;

	while (a < n)
	{
		size_t		b = std::max(a + 1, (n + a) / 2);

		widen_kernel<<<blocks_for(b - a), kBlock, 0, st>>>(d, n, a, b);
		SJGPU_CHECK(cudaGetLastError());
		a = b;
	}
}

/*
 * Rows [0, n) of dim floats, row-major at src, into columns of stride n at
 * dst (the bits as they are): 32 x 32 tiles through shared memory, so that
 * both the reads (along a row) and the writes (along a column) coalesce.
 * Blocks of 32 x 8 threads; gridDim.y tiles of rows at a time.
 */
__global__ void
transpose_kernel(const float *__restrict__ src, float *__restrict__ dst, uint32_t n,
				 int dim)
{
	__shared__ float tile[32][33];
	const uint32_t k0 = blockIdx.x * 32;

	for (uint64_t r0 = (uint64_t) blockIdx.y * 32; r0 < n; r0 += (uint64_t) gridDim.y * 32)
	{
		for (uint32_t dy = threadIdx.y; dy < 32; dy += blockDim.y)
		{
			uint64_t	r = r0 + dy;
			uint32_t	k = k0 + threadIdx.x;

			if (r < n && k < (uint32_t) dim)
				tile[dy][threadIdx.x] = src[r * dim + k];
		}
		__syncthreads();
		for (uint32_t dy = threadIdx.y; dy < 32; dy += blockDim.y)
		{
			uint64_t	r = r0 + threadIdx.x;
			uint32_t	k = k0 + dy;

			if (r < n && k < (uint32_t) dim)
				dst[(size_t) k * n + r] = tile[threadIdx.x][dy];
		}
		__syncthreads();
	}
}

/*
 * Rows [first, first + n) of a side given as pieces of row-major floats
 * (SjVectors.pieces, a parallel scan's parts in place): the range's rows
 * go as they are into dst's lower half, one copy gathered from the pieces
 * that hold them (a spread join's devices share it as they share
 * columns'), are transposed into its upper half and widened there.
 */
static void
upload_pieces(SjGpuEpsJoin *j, const SjVectors *v, uint32_t first, uint32_t n,
			  double *dst)
{
	const size_t total = (size_t) n * j->dim;
	const size_t rowbytes = (size_t) j->dim * sizeof(float);
	const uint64_t last = (uint64_t) first + n;
	float	   *rows = reinterpret_cast<float *>(dst);
	cudaStream_t st = j->compute.get();
	std::vector<const unsigned char *> src;
	std::vector<size_t> at;
	sjgpu::Gather g;
	dim3		block(32, 8);
	dim3		grid((unsigned) ((j->dim + 31) / 32),
					 (unsigned) std::min<uint64_t>(((uint64_t) n + 31) / 32, 65535));

	if (total == 0)
		return;
	/* one copy of the range's bytes, gathered from the pieces that hold them */
	for (int p = 0; p < v->npieces; p++)
	{
		const SjRowPiece *pc = &v->pieces[p];
		uint64_t	a = std::max<uint64_t>(first, pc->first),
					b = std::min<uint64_t>(last, (uint64_t) pc->first + pc->n);

		if (a >= b)
			continue;
		src.push_back(reinterpret_cast<const unsigned char *>(pc->rows + (a - pc->first) * j->dim));
		at.push_back((size_t) (a - first) * rowbytes);
	}
	g.src = src.data();
	g.at = at.data();
	g.npieces = src.size();
	g.total = total * sizeof(float);
	if (j->claim.units && j->claim.units->workers() > 1)
		j->timings.transfer_ms +=
			j->claim.units->upload(j->claim.worker, j->uploads++, j->device,
								   reinterpret_cast<unsigned char *>(rows), g, st);
	else
		j->timings.transfer_ms += sjgpu::upload_gather(rows, g, st);
	transpose_kernel<<<grid, block, 0, st>>>(rows, rows + total, n, j->dim);
	SJGPU_CHECK_LAUNCH("transpose_kernel");
	widen_in_place(dst, total, st);
}

/*
 * Copy rows [first, first + n) of one side into dst (stride n).  Columns
 * given as floats (SjVectors.fcoords) are uploaded into dst's upper half,
 * half the bytes, and widened there; rows given as pieces (SjVectors.pieces)
 * are transposed on the device first.
 */
void
upload_rows(SjGpuEpsJoin *j, const SjVectors *v, uint32_t first, uint32_t n,
			double *dst)
{
	const bool	narrow = v->coords == nullptr;

	if (!v->coords && !v->fcoords)
	{
		upload_pieces(j, v, first, n, dst);
		return;
	}
	const size_t elem = narrow ? sizeof(float) : sizeof(double);
	const size_t total = (size_t) n * j->dim;
	size_t		row = (size_t) n * elem;
	size_t		pitch = (size_t) v->n * elem;
	const unsigned char *src = narrow ?
		(const unsigned char *) (v->fcoords + first) :
		(const unsigned char *) (v->coords + first);
	unsigned char *to = narrow ?
		(unsigned char *) (reinterpret_cast<float *>(dst) + total) : (unsigned char *) dst;

	/* a spread join's devices each upload a share and copy the rest from the others */
	if (j->claim.units && j->claim.units->workers() > 1)
		j->timings.transfer_ms +=
			j->claim.units->upload(j->claim.worker, j->uploads++, j->device, to, src,
								   pitch, row, (size_t) j->dim, j->compute.get());
	else
		j->timings.transfer_ms += sjgpu::upload_2d(to, row, src, pitch, row,
												   (size_t) j->dim, j->compute.get());
	if (narrow)
		widen_in_place(dst, total, j->compute.get());
}

/*
 * Choose the grid for a build chunk from its bounds: indexed dimensions
 * and cell widths, by a cost model under a uniform-density assumption.
 * Leaves g->k = 0 where brute force is cheaper.
 */
void
choose_grid(const GridShape &j, const std::vector<double> &lo,
			const std::vector<double> &hi, uint32_t nb, GridParams *g)
{
	const int	dim = j.dim;
	const double eps = j.eps;
	const double half = j.self ? 0.5 : 1.0;
	double		best = (double) nb * (dim + 1) * 0.25 * half;	/* brute force */
	std::vector<int> order(dim);

	if (j.tc_capable)
		best /= kTcSpeedup;
	memset(g, 0, sizeof(*g));
	if (forced_strategy == 2 || !j.grid_capable)
		return;
	if (forced_strategy == 1)
		best = INFINITY;

	/* dimensions by how many eps-cells their extent spans, most first */
	std::vector<double> span(dim);
	std::vector<double> wbase(dim);

	for (int k = 0; k < dim; k++)
	{
		double		mag = std::max(std::fabs(lo[k]), std::fabs(hi[k])) + eps;
		double		extent = hi[k] - lo[k];

		wbase[k] = eps * (1.0 + 1e-6) + mag * 1e-13 + 1e-150;
		span[k] = std::isfinite(extent) && std::isfinite(wbase[k])
			? extent / wbase[k] : 0.0;
		order[k] = k;
	}
	std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return span[x] > span[y]; });

	for (int kk = 1; kk <= std::min(kMaxIndexed, dim); kk++)
	{
		GridParams	t;
		double		cells = 1.0,
					frac = 1.0,
					rows = 1.0;
		long long	cap = 1LL << (60 / kk);

		bool		prunes = true;

		memset(&t, 0, sizeof(t));
		t.k = kk;
		for (int i = 0; i < kk && prunes; i++)
		{
			int			d = order[i];
			double		extent = hi[d] - lo[d];
			double		w = wbase[d];

			/* a dimension narrower than a cell cannot prune */
			prunes = span[d] >= (forced_strategy == 1 ? 0.0 : 1.0);
			if (extent / w + 2.0 > (double) cap)
				w = std::max(w, extent / (double) (cap - 2));
			t.dims[i] = d;
			t.lo[i] = lo[d];
			t.w[i] = w;
			t.nc[i] = (long long) std::min((double) cap, std::floor(extent / w) + 2.0);
			cells *= (double) t.nc[i];
			frac *= std::min(1.0, 3.0 / (extent / w + 1.0));
		}
		if (!prunes)
			break;
		for (int i = 0; i < kk - 1; i++)
			rows *= 3.0;
		t.rows = (int) rows;
		{
			double		search = std::log2(std::min(cells, (double) nb) + 1.0) + 4.0;
			double		nrows = j.self ? (rows + 1.0) / 2.0 : rows;
			double		cost = nrows * search * kRowCost / 16.0 +
				(double) nb * frac * half * (dim + 1);

			if (cost < best)
			{
				best = cost;
				*g = t;
			}
		}
	}
	if (g->k == 0)
		return;

	/* strides of the row-major cell id and of the probe sort key */
	{
		unsigned long long s = 1,
					ps = 1;

		for (int i = g->k - 1; i >= 0; i--)
		{
			g->stride[i] = s;
			g->pstride[i] = ps;
			s *= (unsigned long long) g->nc[i];
			ps *= (unsigned long long) g->nc[i] + 2;
		}
	}
}

/* Per-dimension bounds of the build chunk in bcoords. */
void
chunk_bounds(SjGpuEpsJoin *j, uint32_t nb, std::vector<double> *lo,
			 std::vector<double> *hi)
{
	unsigned int bx = minmax_blocks(nb);
	std::vector<double> part((size_t) j->dim * bx * 2);

	minmax_kernel<<<dim3(bx, j->dim), kBlock, 0, j->compute.get()>>>(j->bcoords.get(), nb,
																	  j->partials.get());
	SJGPU_CHECK_LAUNCH("minmax_kernel");
	SJGPU_CHECK(cudaMemcpyAsync(part.data(), j->partials.get(), part.size() * sizeof(double),
								cudaMemcpyDeviceToHost, j->compute.get()));
	j->compute.synchronize();
	lo->assign(j->dim, INFINITY);
	hi->assign(j->dim, -INFINITY);
	for (int k = 0; k < j->dim; k++)
		for (unsigned int x = 0; x < bx; x++)
		{
			(*lo)[k] = std::min((*lo)[k], part[((size_t) k * bx + x) * 2]);
			(*hi)[k] = std::max((*hi)[k], part[((size_t) k * bx + x) * 2 + 1]);
		}
}

/* Sort n (key, index) pairs held in a / v0 by key; returns where they are. */
void
sort_keys(SjGpuEpsJoin *j, uint32_t n, int bits, unsigned long long **keys,
		  uint32_t **perm)
{
	cub::DoubleBuffer<unsigned long long> k(j->a.get(), j->b.get());
	cub::DoubleBuffer<uint32_t> v(j->v0.get(), j->v1.get());
	size_t		bytes = j->temp_bytes;

	SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(j->temp.get(), bytes, k, v, (int) n, 0,
												bits, j->compute.get()));
	*keys = k.Current();
	*perm = v.Current();
}

/* data[i] = data[perm[i]] for n elements, through tmp (n elements). */
template <typename T>
void
permute(SjGpuEpsJoin *j, T *data, uint32_t n, const uint32_t *perm, T *tmp)
{
	gather_kernel<T><<<blocks_for(n), kBlock, 0, j->compute.get()>>>(data, perm, n, tmp);
	SJGPU_CHECK_LAUNCH("gather_kernel");
	SJGPU_CHECK(cudaMemcpyAsync(data, tmp, (size_t) n * sizeof(T), cudaMemcpyDeviceToDevice,
								j->compute.get()));
}

/*
 * Reorder coordinates (stride n) by perm, as many dimensions at a time as
 * the FP16 rows' memory holds (a 1,536-dimensional side otherwise takes
 * 3,072 small operations), else one at a time through tmp (n elements).
 * Every reorder comes before the FP16 rows of a task are written (the
 * grid's in load_build and load_probe, the tensor filter's clustering in
 * tc_prepare before tc_convert), and only the task's probes read them.
 */
void
reorder_coords(SjGpuEpsJoin *j, double *coords, uint32_t n, const uint32_t *perm,
			   double *tmp)
{
	void	   *scratch = j->bhalf.get();
	int			group = (int) std::min<size_t>((size_t) j->dim,
											   j->bhalf.bytes() /
											   ((size_t) std::max<uint32_t>(n, 1) *
												sizeof(double)));

	if (group < 2)
	{
		for (int k = 0; k < j->dim; k++)
			permute(j, coords + (size_t) k * n, n, perm, tmp);
		return;
	}
	for (int k0 = 0; k0 < j->dim; k0 += group)
	{
		int			g = std::min(group, j->dim - k0);
		dim3		grid(blocks_for(n), (unsigned int) std::min(g, 32));

		gather_columns_kernel<double><<<grid, kBlock, 0, j->compute.get()>>>(
			coords + (size_t) k0 * n, perm, n, g, static_cast<double *>(scratch));
		SJGPU_CHECK_LAUNCH("gather_columns_kernel");
		SJGPU_CHECK(cudaMemcpyAsync(coords + (size_t) k0 * n, scratch,
									(size_t) g * n * sizeof(double),
									cudaMemcpyDeviceToDevice, j->compute.get()));
	}
}

/* Build the index of one build chunk (grid, or plain rows for brute force). */
void
load_build(SjGpuEpsJoin *j, uint32_t bc)
{
	const SjVectors *v = j->self ? &j->left : &j->right;
	uint32_t	first = chunk_first(j, bc);
	uint32_t	nb = chunk_rows(j, v->n, bc);
	cudaStream_t st = j->compute.get();

	upload_rows(j, v, first, nb, j->bcoords.get());
	j->timer.start(st);
	j->nb = nb;
	memset(&j->grid, 0, sizeof(j->grid));
	if (j->grid_capable)
	{
		std::vector<double> lo,
					hi;

		chunk_bounds(j, nb, &lo, &hi);
		choose_grid(GridShape {j->dim, j->eps, j->self, j->grid_capable, j->tc_capable},
					lo, hi, nb, &j->grid);
	}
	if (j->grid.k == 0)
	{
		orig_kernel<<<blocks_for(nb), kBlock, 0, st>>>(nullptr, nb, first, j->borig.get());
		SJGPU_CHECK_LAUNCH("orig_kernel");
		j->ncells = 0;
		j->max_cell = nb;
	}
	else
	{
		GridParams &g = j->grid;
		unsigned long long ncell_total = 1;
		unsigned long long *keys;
		uint32_t   *perm,
				   *runs;
		size_t		bytes;

		for (int i = 0; i < g.k; i++)
			ncell_total *= (unsigned long long) g.nc[i];
		cell_keys_kernel<false><<<blocks_for(nb), kBlock, 0, st>>>(j->bcoords.get(), nb, g,
																	j->a.get(), j->v0.get());
		SJGPU_CHECK_LAUNCH("cell_keys_kernel (build)");
		sort_keys(j, nb, key_bits(ncell_total), &keys, &perm);
		runs = perm == j->v0.get() ? j->v1.get() : j->v0.get();

		/* non-empty cells and their sizes, then their first positions */
		DeviceScalars *sc = j->scalars.get();

		bytes = j->temp_bytes;
		SJGPU_CHECK(cub::DeviceRunLengthEncode::Encode(j->temp.get(), bytes, keys,
													   j->cell_ids.get(), runs,
													   &sc->num_runs, (int) nb, st));
		SJGPU_CHECK(cudaMemcpyAsync(j->host_scalars.get(), &sc->num_runs, sizeof(uint32_t),
									cudaMemcpyDeviceToHost, st));
		j->compute.synchronize();
		memcpy(&j->ncells, j->host_scalars.get(), sizeof(uint32_t));
		SJGPU_CHECK(cudaMemsetAsync(runs + j->ncells, 0, sizeof(uint32_t), st));
		bytes = j->temp_bytes;
		SJGPU_CHECK(cub::DeviceReduce::Max(j->temp.get(), bytes, runs, &sc->max_cell,
										   (int) j->ncells, st));
		bytes = j->temp_bytes;
		SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(j->temp.get(), bytes, runs,
												  j->cell_start.get(), (int) j->ncells + 1,
												  st));
		SJGPU_CHECK(cudaMemcpyAsync(j->host_scalars.get(), &sc->max_cell, sizeof(uint32_t),
									cudaMemcpyDeviceToHost, st));

		/* rows and coordinates into cell order */
		orig_kernel<<<blocks_for(nb), kBlock, 0, st>>>(perm, nb, first, j->borig.get());
		SJGPU_CHECK_LAUNCH("orig_kernel");
		reorder_coords(j, j->bcoords.get(), nb, perm,
					   (double *) (keys == j->a.get() ? j->b.get() : j->a.get()));
		j->compute.synchronize();
		memcpy(&j->max_cell, j->host_scalars.get(), sizeof(uint32_t));
	}
	j->timer.stop(st);
	j->timings.build_ms += j->timer.elapsed_ms();
	j->loaded_build = bc;
	j->loaded_probe = -1;
}

/* Upload (and sort into the build grid's cell order) one probe chunk. */
void
load_probe(SjGpuEpsJoin *j, uint32_t pc)
{
	uint32_t	first = chunk_first(j, pc);
	uint32_t	np = chunk_rows(j, j->left.n, pc);
	cudaStream_t st = j->compute.get();

	upload_rows(j, &j->left, first, np, j->pcoords.get());
	j->timer.start(st);
	j->np = np;
	if (j->grid.k == 0)
	{
		orig_kernel<<<blocks_for(np), kBlock, 0, st>>>(nullptr, np, first, j->porig.get());
		SJGPU_CHECK_LAUNCH("orig_kernel");
	}
	else
	{
		const GridParams &g = j->grid;
		unsigned long long nkeys = 1;
		unsigned long long *keys;
		uint32_t   *perm;

		for (int i = 0; i < g.k; i++)
			nkeys *= (unsigned long long) g.nc[i] + 2;
		cell_keys_kernel<true><<<blocks_for(np), kBlock, 0, st>>>(j->pcoords.get(), np, g,
																   j->a.get(), j->v0.get());
		SJGPU_CHECK_LAUNCH("cell_keys_kernel (probe)");
		sort_keys(j, np, key_bits(nkeys), &keys, &perm);
		orig_kernel<<<blocks_for(np), kBlock, 0, st>>>(perm, np, first, j->porig.get());
		SJGPU_CHECK_LAUNCH("orig_kernel");
		reorder_coords(j, j->pcoords.get(), np, perm,
					   (double *) (keys == j->a.get() ? j->b.get() : j->a.get()));
	}
	j->timer.stop(st);
	j->timings.build_ms += j->timer.elapsed_ms();
	j->loaded_probe = pc;
}

/* Kernel arguments for the loaded build chunk and probe side. */
JoinArgs
join_args(const SjGpuEpsJoin *j, bool self)
{
	JoinArgs	a;

	a.grid = j->grid;
	a.bcoords = j->bcoords.get();
	a.borig = j->borig.get();
	a.cell_ids = j->cell_ids.get();
	a.cell_start = j->cell_start.get();
	a.nb = j->nb;
	a.ncells = j->ncells;
	if (self)
	{
		a.pcoords = a.bcoords;
		a.porig = a.borig;
		a.np = a.nb;
	}
	else
	{
		a.pcoords = j->pcoords.get();
		a.porig = j->porig.get();
		a.np = j->np;
	}
	a.dim = j->dim;
	a.eps = j->eps;
	a.thr = prefilter_bound(j->eps);
	a.metric = j->metric;
	a.bnorm = j->bnorm.get();
	a.pnorm = self ? j->bnorm.get() : j->pnorm.get();
	a.cand = j->cand;
	a.cand_start = j->cstart.get();
	a.cand_p0 = j->cuts.empty() ? 0 : j->cuts[std::min(j->seg, j->cuts.size() - 1)];
	return a;
}

/* Launch a grid probe kernel for a fixed DIM. */
template <int DIM, int MODE>
void
launch_grid_dim(const JoinArgs &a, const PassArgs &pa, bool self, unsigned int blocks,
				cudaStream_t st)
{
	if (self)
		grid_probe_kernel<DIM, true, MODE><<<blocks, kBlock, 0, st>>>(a, pa);
	else
		grid_probe_kernel<DIM, false, MODE><<<blocks, kBlock, 0, st>>>(a, pa);
	SJGPU_CHECK_LAUNCH("grid_probe_kernel");
}

/* Launch one pass (grid or brute force) over probe positions. */
template <int MODE>
void
launch_pass(const SjGpuEpsJoin *j, const JoinArgs &a, const PassArgs &pa, bool self,
			cudaStream_t st)
{
	uint64_t	npos = pa.p1 - pa.p0;

	static_assert(MODE != kModeWork, "use launch_work_pass");
	if (j->use_tc)
	{
		/* a warp a position in dense segments (verify_warp_kernel) */
		const bool	warp = j->verify_warp;
		const unsigned int threads = warp ? kBlock : kVerifyBlock;
		unsigned int blocks = (unsigned int) std::max<uint64_t>(1, div_up<uint64_t>(npos,
																				  warp ? kBlock / 32 : kVerifyBlock));

		if (MODE == kModeWrite)
			blocks = std::min<unsigned int>(blocks, sjgpu::multiprocessor_count() * (warp ? 8 : 32));
		if (warp && self)
			verify_warp_kernel<true, MODE><<<blocks, threads, 0, st>>>(a, pa);
		else if (warp)
			verify_warp_kernel<false, MODE><<<blocks, threads, 0, st>>>(a, pa);
		else if (self)
			verify_kernel<true, MODE><<<blocks, threads, 0, st>>>(a, pa);
		else
			verify_kernel<false, MODE><<<blocks, threads, 0, st>>>(a, pa);
		SJGPU_CHECK_LAUNCH("verify_kernel or verify_warp_kernel");
		return;
	}
	if (a.grid.k == 0)
	{
		unsigned int blocks = (unsigned int) std::max<uint64_t>(1, div_up<uint64_t>(npos, kBfThreads));

		if (MODE == kModeWrite)
			blocks = std::min<unsigned int>(blocks, sjgpu::multiprocessor_count() * 16);
		if (self)
			brute_force_kernel<true, MODE><<<blocks, kBfThreads, 0, st>>>(a, pa);
		else
			brute_force_kernel<false, MODE><<<blocks, kBfThreads, 0, st>>>(a, pa);
		SJGPU_CHECK_LAUNCH("brute_force_kernel");
		return;
	}

	unsigned int blocks = blocks_for(npos);

	if (MODE == kModeWrite)
		blocks = std::min<unsigned int>(blocks, sjgpu::multiprocessor_count() * 8);
	switch (j->dim)
	{
		case 1:
			launch_grid_dim<1, MODE>(a, pa, self, blocks, st);
			break;
		case 2:
			launch_grid_dim<2, MODE>(a, pa, self, blocks, st);
			break;
		case 3:
			launch_grid_dim<3, MODE>(a, pa, self, blocks, st);
			break;
		case 4:
			launch_grid_dim<4, MODE>(a, pa, self, blocks, st);
			break;
		case 5:
			launch_grid_dim<5, MODE>(a, pa, self, blocks, st);
			break;
		case 6:
			launch_grid_dim<6, MODE>(a, pa, self, blocks, st);
			break;
		default:
			launch_grid_dim<0, MODE>(a, pa, self, blocks, st);
			break;
	}
}

/* Launch the candidate-counting pass (grid only, no refinement). */
void
launch_work_pass(const JoinArgs &a, const PassArgs &pa, bool self, cudaStream_t st)
{
	launch_grid_dim<0, kModeWork>(a, pa, self, blocks_for(pa.p1 - pa.p0), st);
}

/* A PassArgs over positions [p0, p1) with the join's arrays. */
PassArgs
pass_args(SjGpuEpsJoin *j, uint32_t p0, uint32_t p1)
{
	PassArgs	pa;

	memset(&pa, 0, sizeof(pa));
	pa.p0 = p0;
	pa.p1 = p1;
	pa.per_point = j->a.get();
	pa.incl = j->b.get();
	pa.bounds = j->scalars.get()->bounds;
	return pa;
}

/* Read one device u64 (synchronously, on the compute stream). */
unsigned long long
read_u64(SjGpuEpsJoin *j, const unsigned long long *dev)
{
	unsigned long long v;

	SJGPU_CHECK(cudaMemcpyAsync(j->host_scalars.get(), dev, sizeof(v),
								cudaMemcpyDeviceToHost, j->compute.get()));
	j->compute.synchronize();
	memcpy(&v, j->host_scalars.get(), sizeof(v));
	return v;
}

/*
 * Positions a segment spans at most where the join is spread: at least
 * kUnitsPerDevice segments a device (the whole task where not spread).
 */
uint64_t
spread_step(const SjGpuEpsJoin *j, uint32_t np)
{
	uint64_t	units;

	if (!j->claim.units)
		return std::max<uint64_t>(1, np);
	units = j->claim.units->target_units();
	return std::max<uint64_t>(1, div_up<uint64_t>(np, units));
}

/* Cut positions [0, np) every step positions (after the cut at 0). */
void
uniform_cuts(SjGpuEpsJoin *j, uint32_t np, uint64_t step)
{
	for (uint64_t p = step; p < np; p += step)
		j->cuts.push_back((uint32_t) p);
}

/*
 * Cut the probe positions of the current task into segments of bounded
 * work: brute force uniformly, the grid from a candidate-count pass unless
 * a cheap upper bound already fits in one segment.
 */
void
plan_segments(SjGpuEpsJoin *j, bool self)
{
	uint32_t	np = self ? j->nb : j->np;
	double		dimw = (double) j->dim + 1.0;

	j->cuts.clear();
	j->cuts.push_back(0);
	if (j->use_tc)
	{
		double		per = std::max(1.0, (double) j->nb * (self ? 0.5 : 1.0));
		uint64_t	step = (uint64_t) std::max(1.0, std::floor(kTcSegmentPairs / per));

		step = std::min(step, spread_step(j, np));
		step = div_up<uint64_t>(step, sjgpu::kTcTile) * sjgpu::kTcTile;
		uniform_cuts(j, np, step);
	}
	else if (j->grid.k == 0)
	{
		double		per = (double) j->nb * dimw;
		uint64_t	step = (uint64_t) std::max(1.0, std::floor(segment_work(false) / per));

		uniform_cuts(j, np, std::min(step, spread_step(j, np)));
	}
	else
	{
		double		rows = j->grid.rows;
		double		bound = (double) np * (rows * kRowCost +
										   rows * 3.0 * (double) j->max_cell * dimw);

		if (bound <= segment_work(true))
			uniform_cuts(j, np, spread_step(j, np));	/* none unless spread */
		else
		{
			JoinArgs	a = join_args(j, self);
			PassArgs	pa = pass_args(j, 0, np);
			cudaStream_t st = j->compute.get();
			size_t		bytes = j->temp_bytes;
			unsigned long long total;
			uint32_t	nseg;

			j->timer.start(st);
			launch_work_pass(a, pa, self, st);
			SJGPU_CHECK(cub::DeviceScan::InclusiveSum(j->temp.get(), bytes, j->a.get(),
													  j->b.get(), (int) np, st));
			j->timer.stop(st);
			total = read_u64(j, j->b.get() + np - 1);
			j->timings.probe_ms += j->timer.elapsed_ms();
			nseg = (uint32_t) std::min<double>(np, std::ceil((double) total / segment_work(true)));
			if (j->claim.units)
				nseg = std::max<uint32_t>(nseg, np / spread_step(j, np));
			if (nseg > 1)
			{
				std::vector<uint32_t> cut(nseg - 1);

				segment_cuts_kernel<<<blocks_for(nseg), kBlock, 0, st>>>(j->b.get(), 0, np,
																		 total, nseg,
																		 j->v0.get());
				SJGPU_CHECK_LAUNCH("segment_cuts_kernel");
				SJGPU_CHECK(cudaMemcpyAsync(cut.data(), j->v0.get(),
											cut.size() * sizeof(uint32_t),
											cudaMemcpyDeviceToHost, st));
				j->compute.synchronize();
				for (uint32_t c : cut)
					if (c > j->cuts.back() && c < np)
						j->cuts.push_back(c);
			}
		}
	}
	j->cuts.push_back(np);
	j->seg = 0;
	j->seg_counted = false;
	j->seg_total = 0;
	j->seg_pos = 0;
}

/*
 * Test hook's step times of the tensor filter's preparation (sums over the
 * last join's tasks, ms; sjgpu_eps_test_prep_steps): norms, mean and
 * largest coordinate, seeds, assignment and sort, reorder, FP16 rows, tile
 * bounds.  Only while the hook is on: each step then ends with an event.
 */
constexpr int kPrepSteps = 7;
std::atomic<bool> prep_steps_on{false};
std::mutex	prep_steps_mu;
double		prep_steps_ms[kPrepSteps];

struct PrepSteps
{
	Event		ev[kPrepSteps + 1];
	bool		on = false;
	int			last = -1;

	void		begin(cudaStream_t st)
	{
		on = prep_steps_on.load();
		if (!on)
			return;
		for (Event &e : ev)
			e.create();
		ev[0].record(st);
		last = -1;
	}
	/* step k ends here (steps may repeat: they add up) */
	void		end(int k, cudaStream_t st)
	{
		if (!on)
			return;
		ev[k + 1].record(st);
		ev[k + 1].synchronize();
		{
			float		ms = 0;
			const Event &from = last < 0 ? ev[0] : ev[last + 1];

			if (cudaEventElapsedTime(&ms, from.get(), ev[k + 1].get()) == cudaSuccess)
			{
				std::lock_guard<std::mutex> lk(prep_steps_mu);

				prep_steps_ms[k] += ms;
			}
			(void) cudaGetLastError();
		}
		last = k;
	}
};

/*
 * Sort the n rows of one loaded chunk (coordinates, canonical norms for
 * cosine, global row numbers) by their nearest tile-pruning seed.
 */
void
cluster_rows(SjGpuEpsJoin *j, double *coords, uint32_t n, double *norms, uint32_t *orig,
			 uint32_t nseeds, PrepSteps *steps)
{
	cudaStream_t st = j->compute.get();
	cub::DoubleBuffer<unsigned long long> keys(j->ckeys.get(), j->ckeys2.get());
	cub::DoubleBuffer<uint32_t> vals(j->v0.get(), j->cstart.get());
	size_t		bytes = j->ctemp_bytes;
	double	   *tmp = reinterpret_cast<double *>(j->a.get());
	uint32_t   *utmp = reinterpret_cast<uint32_t *>(j->b.get());
	const uint32_t *perm;

	sjgpu::tc_assign(coords, n, j->dim, norms, j->tcmean.get(), j->tcp.scale, j->tseeds.get(),
					 j->tseedidx.get(), nseeds, keys.Current(), vals.Current(), st);
	SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(j->ctemp.get(), bytes, keys, vals, (int) n, 0,
												key_bits(nseeds), st));
	steps->end(3, st);
	perm = vals.Current();
	reorder_coords(j, coords, n, perm, tmp);
	if (norms)
		permute(j, norms, n, perm, tmp);
	permute(j, orig, n, perm, utmp);
	steps->end(4, st);
}

/*
 * The tensor filter's inputs for the loaded chunks: canonical norms (for
 * cosine), the build chunk's mean, a scale from the largest centred
 * coordinate of both chunks, the rows in tile-pruning order, the FP16
 * rows (eps_tc.cuh) and the tiles' centres and radii.
 */
void
tc_prepare(SjGpuEpsJoin *j, bool self)
{
	cudaStream_t st = j->compute.get();
	const bool	cosine = j->metric == SJ_METRIC_COSINE;
	const double *pc = self ? j->bcoords.get() : j->pcoords.get();
	uint32_t	np = self ? j->nb : j->np;
	const double *bn = cosine ? j->bnorm.get() : nullptr;
	const double *pn = cosine ? (self ? j->bnorm.get() : j->pnorm.get()) : nullptr;
	double	   *mean = j->tcmean.get();
	unsigned long long bits;
	double		maxabs;
	PrepSteps	steps;

	j->timer.start(st);
	steps.begin(st);
	if (cosine)
	{
		sjgpu::tc_norms(j->bcoords.get(), j->nb, j->dim, j->bnorm.get(), st);
		if (!self)
			sjgpu::tc_norms(pc, np, j->dim, j->pnorm.get(), st);
	}
	steps.end(0, st);
	sjgpu::tc_mean(j->bcoords.get(), j->nb, j->dim, bn, mean, st);
	SJGPU_CHECK(cudaMemsetAsync(mean + j->dim, 0, sizeof(double), st));
	sjgpu::tc_maxabs(j->bcoords.get(), j->nb, j->dim, bn, mean, mean + j->dim, st);
	if (!self)
		sjgpu::tc_maxabs(pc, np, j->dim, pn, mean, mean + j->dim, st);
	bits = read_u64(j, (const unsigned long long *) (mean + j->dim));
	memcpy(&maxabs, &bits, sizeof(maxabs));
	steps.end(1, st);
	sjgpu::tc_params(j->dim, j->metric, j->eps, maxabs, &j->tcp);

	/* rows in tile order: near rows share a tile (eps_tiles.cu) */
	uint32_t	nseeds = sjgpu::tc_seed_count(j->nb);

	j->tc_prune = nseeds > 0 && !force_no_prune;
	if (j->tc_prune)
	{
		j->prune_timer.start(st);
		sjgpu::tc_seeds(j->bcoords.get(), j->nb, j->dim, bn, mean, j->tcp.scale, nseeds,
						j->tseeds.get(), j->tseedidx.get(),
						j->tseedidx.get() + nseeds, st);
		steps.end(2, st);
		cluster_rows(j, j->bcoords.get(), j->nb, cosine ? j->bnorm.get() : nullptr,
					 j->borig.get(), nseeds, &steps);
		if (!self)
			cluster_rows(j, j->pcoords.get(), np, cosine ? j->pnorm.get() : nullptr,
						 j->porig.get(), nseeds, &steps);
	}
	j->tcb.rows = j->bhalf.get();
	j->tcb.pn = j->bpn.get();
	sjgpu::tc_convert(j->bcoords.get(), j->nb, bn, mean, j->tcp, &j->tcb, st);
	if (self)
		j->tcpr = j->tcb;
	else
	{
		j->tcpr.rows = j->phalf.get();
		j->tcpr.pn = j->ppn.get();
		sjgpu::tc_convert(pc, np, pn, mean, j->tcp, &j->tcpr, st);
	}
	steps.end(5, st);
	if (j->tc_prune)
	{
		j->btiles.centre = j->bcentre.get();
		j->btiles.radius = j->bradius.get();
		sjgpu::tc_tile_bounds(j->bcoords.get(), j->nb, bn, mean, j->tcp, j->tcb.pn, &j->btiles,
							  st);
		if (self)
			j->ptiles = j->btiles;
		else
		{
			j->ptiles.centre = j->pcentre.get();
			j->ptiles.radius = j->pradius.get();
			sjgpu::tc_tile_bounds(pc, np, pn, mean, j->tcp, j->tcpr.pn, &j->ptiles, st);
		}
		steps.end(6, st);
		j->prune_timer.stop(st);
		j->compute.synchronize();
		j->prune_ms += j->prune_timer.elapsed_ms();
	}
	j->timer.stop(st);
	j->timings.build_ms += j->timer.elapsed_ms();
}

/*
 * Candidates of the current segment on tensor cores, sorted, with the
 * first candidate of each probe position.  A segment whose candidates
 * overflow the buffer is cut in two (at a tile boundary) and retried.
 */
void
filter_segment(SjGpuEpsJoin *j)
{
	const bool	self = j->tasks[j->task].self;
	cudaStream_t st = j->compute.get();
	DeviceScalars *sc = j->scalars.get();
	uint32_t	p0 = j->cuts[j->seg];
	unsigned long long n;

	j->timer.start(st);
	for (;;)
	{
		uint32_t	p1 = j->cuts[j->seg + 1];

		const uint64_t ntile = (uint64_t) div_up<uint64_t>(p1 - p0, sjgpu::kTcTile) *
			j->btiles.ntiles;
		const uint32_t *list = nullptr;
		uint32_t	nlist = 0;

		/* the tile pairs that may join, where the segment has room for them */
		if (j->tc_prune && p0 % sjgpu::kTcTile == 0 && ntile <= j->tlist_cap)
		{
			j->prune_timer.start(st);
			sjgpu::tc_tile_list(j->ptiles, j->btiles, j->tcp, self, p0, p1, j->tlist.get(),
								j->tlist_cap, &sc->tiles, st);
			j->prune_timer.stop(st);
			nlist = (uint32_t) read_u64(j, &sc->tiles);
			j->prune_ms += j->prune_timer.elapsed_ms();
			list = j->tlist.get();
			/* the tile pairs the filter would compute without the list */
			double		all = (double) ntile;

			if (self)
			{
				const double nx = j->btiles.ntiles,
							t0 = p0 / sjgpu::kTcTile,
							ny = (double) ntile / nx;

				/* probe tile t meets build tiles t .. nx - 1 */
				all = ny * (nx - t0) - ny * (ny - 1) / 2.0;
			}
			j->tile_pairs += all;
			j->tile_kept += nlist;
			/* rows without clusters: the lists save nothing, stop making them */
			if (nlist > 0.95 * all)
				j->tc_prune = false;
		}
		j->filter_timer.start(st);
		sjgpu::tc_filter(j->tcpr, j->tcb, j->tcp, self, p0, p1, j->ckeys.get(), j->ccap,
						 &sc->candidates, list, nlist, st);
		j->filter_timer.stop(st);
		n = read_u64(j, &sc->candidates);
		j->timings.filter_ms += j->filter_timer.elapsed_ms();
		if (list)
			j->timings.filter_pairs += (double) nlist * sjgpu::kTcTile * sjgpu::kTcTile;
		else
			j->timings.filter_pairs += (double) (p1 - p0) * j->nb * (self ? 0.5 : 1.0);
		/* CUB sorts at most INT32_MAX keys: a larger segment is cut too */
		if (n <= std::min<unsigned long long>(j->ccap, INT32_MAX))
			break;

		uint32_t	mid = p0 + (uint32_t) std::max<uint64_t>(sjgpu::kTcTile,
															 (p1 - p0) / 2 / sjgpu::kTcTile * sjgpu::kTcTile);

		if (mid >= p1)
			throw Error(SJ_ERR_INTERNAL, "eps_join: %llu candidates overflow a buffer of %llu",
						n, j->ccap);
		j->cuts.insert(j->cuts.begin() + j->seg + 1, mid);
	}

	uint32_t	np = j->cuts[j->seg + 1] - p0;
	cub::DoubleBuffer<unsigned long long> keys(j->ckeys.get(), j->ckeys2.get());
	size_t		bytes = j->ctemp_bytes;

	if (n > 0)
		SJGPU_CHECK(cub::DeviceRadixSort::SortKeys(j->ctemp.get(), bytes, keys, (int) n, 0,
												   32 + key_bits((unsigned long long) np + 1), st));
	j->cand = keys.Current();
	/* many candidates a position: a warp each (kVerifyWarpMin) */
	j->verify_warp = n >= (unsigned long long) kVerifyWarpMin * np;
	sjgpu::tc_starts(j->cand, n, np, j->cstart.get(), st);
	j->timer.stop(st);
	j->timings.probe_ms += j->timer.elapsed_ms();
}

/* Load the chunks of the current task and plan its segments. */
void
start_task(SjGpuEpsJoin *j)
{
	const Task &t = j->tasks[j->task];

	if (j->loaded_build != (long long) t.build)
		load_build(j, t.build);
	if (!t.self && j->loaded_probe != (long long) t.probe)
		load_probe(j, t.probe);
	j->use_tc = j->tc_capable && j->grid.k == 0;
	if (j->use_tc)
		tc_prepare(j, t.self);
	plan_segments(j, t.self);
}

/* Is the current segment the join's last one?  (Spread: not known.) */
bool
last_segment(const SjGpuEpsJoin *j)
{
	return !j->claim.units && j->task + 1 >= j->tasks.size() && j->seg + 2 >= j->cuts.size();
}

/* Reset the pair counters for a new segment. */
void
begin_segment(SjGpuEpsJoin *j)
{
	j->seg_counted = false;
	j->seg_total = 0;
	j->seg_pos = 0;
}

/*
 * advance_segment of a spread join: the rest of the claimed unit (where
 * the filter cut it), else the next unit of the current task claimed from
 * the devices' shared counter, else the next task (prepared here like on
 * the other devices: chunks, filter, segments).
 */
bool
advance_shared(SjGpuEpsJoin *j)
{
	sjgpu::SharedUnits *units = j->claim.units;

	if (!j->cuts.empty() && j->task_started && j->seg + 2 < j->cuts.size())
	{
		j->seg++;
		begin_segment(j);
		return true;
	}
	for (;;)
	{
		if (j->task_started)
		{
			long long	u = units->claim(j->claim.worker, j->task,
										 (uint32_t) (j->plan_cuts.size() - 1), j->plan_digest);

			if (u >= 0)
			{
				j->cuts.assign(j->plan_cuts.begin() + u, j->plan_cuts.begin() + u + 2);
				j->seg = 0;
				begin_segment(j);
				return true;
			}
			j->task++;
			j->task_started = false;
		}
		if (j->task >= j->tasks.size())
		{
			j->exhausted = true;
			return false;
		}

		/*
		 * Every device prepares every task, in order, even one whose units
		 * the others took: the tensor filter re-orders a loaded chunk's rows
		 * in place, so that a unit's positions name the same rows on every
		 * device only where every device saw the same tasks.
		 */
		start_task(j);
		j->plan_cuts.swap(j->cuts);
		j->cuts.clear();
		{
			/* what the cuts index: the task's chunks and how it is joined */
			const Task &t = j->tasks[j->task];
			uint32_t	id[] = {t.build, t.probe, (uint32_t) t.self, j->nb, j->np,
				(uint32_t) j->use_tc, (uint32_t) j->tc_prune, (uint32_t) j->grid.k};

			j->plan_digest = sjgpu::plan_digest(j->plan_cuts.data(), j->plan_cuts.size(),
												sjgpu::plan_digest(id, sizeof(id) / sizeof(id[0])));
		}
		j->task_started = true;
	}
}

/*
 * Move to the next segment (the first one on the first call), loading
 * chunks as tasks change.  Returns false when there is none left.
 */
bool
advance_segment(SjGpuEpsJoin *j)
{
	if (j->exhausted)
		return false;
	if (j->claim.units)
		return advance_shared(j);
	if (j->cuts.empty())
	{
		if (j->tasks.empty())
		{
			j->exhausted = true;
			return false;
		}
		start_task(j);
		return true;
	}
	if (j->seg + 2 < j->cuts.size())
	{
		j->seg++;
		j->seg_counted = false;
		j->seg_total = 0;
		j->seg_pos = 0;
		return true;
	}
	if (j->task + 1 < j->tasks.size())
	{
		j->task++;
		start_task(j);
		return true;
	}
	j->exhausted = true;
	return false;
}

/* Count the pairs of each position of the current segment; scan them. */
void
count_segment(SjGpuEpsJoin *j)
{
	const bool	self = j->tasks[j->task].self;
	if (j->use_tc)
		filter_segment(j);

	uint32_t	p0 = j->cuts[j->seg],
				p1 = j->cuts[j->seg + 1];
	JoinArgs	a = join_args(j, self);
	PassArgs	pa = pass_args(j, p0, p1);
	cudaStream_t st = j->compute.get();
	size_t		bytes = j->temp_bytes;

	j->timer.start(st);
	launch_pass<kModeCount>(j, a, pa, self, st);
	SJGPU_CHECK(cub::DeviceScan::InclusiveSum(j->temp.get(), bytes, j->a.get() + p0,
											  j->b.get() + p0, (int) (p1 - p0), st));
	j->timer.stop(st);
	j->seg_total = read_u64(j, j->b.get() + p1 - 1);
	j->timings.probe_ms += j->timer.elapsed_ms();
	j->seg_counted = true;
	j->seg_pos = 0;
}

/* Make sure a slot can hold n pairs on the device and on the host. */
void
reserve_slot(SjGpuEpsJoin *j, Slot *s, uint64_t n)
{
	if (s->dev_cap < n)
	{
		uint64_t	c = std::min<uint64_t>(j->cap, std::max<uint64_t>(n, 2 * s->dev_cap));

		s->dev.reset();
		s->dev = DeviceMemory(&j->budget, (size_t) c * 16, "result pairs");
		s->dev_cap = c;
	}
	if (s->host_cap < n)
	{
		uint64_t	c = std::min<uint64_t>(j->cap, std::max<uint64_t>(n, 2 * s->host_cap));

		s->host.allocate((size_t) c * 16);
		s->host_cap = c;
	}
}

/* Enqueue the write of pairs [seg_pos, seg_pos + n) and their copy back. */
void
issue_write(SjGpuEpsJoin *j, int slot)
{
	Slot	   *s = &j->slots[slot];
	const bool	self = j->tasks[j->task].self;
	uint32_t	p0 = j->cuts[j->seg],
				p1 = j->cuts[j->seg + 1];
	uint64_t	n = std::min<uint64_t>(j->cap, j->seg_total - j->seg_pos);
	cudaStream_t st = j->compute.get();
	cudaStream_t cp = j->copy.get();
	JoinArgs	a = join_args(j, self);
	PassArgs	pa = pass_args(j, p0, p1);
	unsigned char *dev;
	DeviceScalars *sc = j->scalars.get();

	reserve_slot(j, s, n);
	dev = (unsigned char *) s->dev.get();
	pa.s = j->seg_pos;
	pa.e = j->seg_pos + n;
	pa.out_left = (uint32_t *) dev;
	pa.out_right = (uint32_t *) (dev + s->dev_cap * 4);
	pa.out_value = (double *) (dev + s->dev_cap * 8);
	pa.error_flag = &sc->error[slot];

	s->probe_start.record(st);
	SJGPU_CHECK(cudaMemsetAsync(&sc->error[slot], 0, sizeof(int), st));
	slice_bounds_kernel<<<1, 1, 0, st>>>(j->a.get(), j->b.get(), p0, p1, pa.s, pa.e,
										 sc->bounds);
	SJGPU_CHECK_LAUNCH("slice_bounds_kernel");
	launch_pass<kModeWrite>(j, a, pa, self, st);
	s->probe_stop.record(st);

	/* copy back on the copy stream once the kernel is done */
	{
		unsigned char *host = s->host.get();

		SJGPU_CHECK(cudaStreamWaitEvent(cp, s->probe_stop.get(), 0));
		s->xfer_start.record(cp);
		SJGPU_CHECK(cudaMemcpyAsync(host, pa.out_left, n * 4, cudaMemcpyDeviceToHost, cp));
		SJGPU_CHECK(cudaMemcpyAsync(host + s->host_cap * 4, pa.out_right, n * 4,
									cudaMemcpyDeviceToHost, cp));
		SJGPU_CHECK(cudaMemcpyAsync(host + s->host_cap * 8, pa.out_value, n * 8,
									cudaMemcpyDeviceToHost, cp));
		SJGPU_CHECK(cudaMemcpyAsync(&j->slot_host.get()[slot].error, &sc->error[slot],
									sizeof(int), cudaMemcpyDeviceToHost, cp));
		s->xfer_stop.record(cp);
		s->done.record(cp);
	}
	s->count = n;
	s->has_copy = true;
	s->pending = true;
	j->seg_pos += n;
}

/*
 * Prepare the batch of one slot: the next slice of pairs (materialised), or
 * the counts of a bounded amount of work (count_only).  Leaves an empty
 * batch when the work it may do in one call found no pair.
 */
void
enqueue_batch(SjGpuEpsJoin *j, int slot)
{
	Slot	   *s = &j->slots[slot];
	auto		t0 = std::chrono::steady_clock::now();

	s->count = 0;
	s->pending = false;
	s->has_copy = false;
	s->final = false;

	if (j->count_only)
	{
		/* one segment a batch keeps a call well inside its time */
		cudaStream_t st = j->compute.get();
		DeviceScalars *sc = j->scalars.get();
		bool		more = advance_segment(j);

		if (!more && j->tasks.empty())
		{
			/* nothing can join: no device memory was planned */
			j->exhausted = true;
			s->final = true;
			return;
		}
		if (more && j->use_tc)
			filter_segment(j);
		SJGPU_CHECK(cudaMemsetAsync(&sc->total[slot], 0, sizeof(unsigned long long), st));
		s->probe_start.record(st);
		if (more)
		{
			const bool	self = j->tasks[j->task].self;
			JoinArgs	a = join_args(j, self);
			PassArgs	pa = pass_args(j, j->cuts[j->seg], j->cuts[j->seg + 1]);

			pa.total = &sc->total[slot];
			launch_pass<kModeTotal>(j, a, pa, self, st);
		}
		s->probe_stop.record(st);
		SJGPU_CHECK(cudaMemcpyAsync(&j->slot_host.get()[slot].total, &sc->total[slot],
									sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
		s->done.record(st);
		s->pending = true;
		if (!more || last_segment(j))
		{
			j->exhausted = true;
			s->final = true;
		}
		return;
	}

	for (;;)
	{
		if (j->seg_counted && j->seg_pos < j->seg_total)
		{
			issue_write(j, slot);
			if (j->seg_pos == j->seg_total && last_segment(j))
			{
				j->exhausted = true;
				s->final = true;
			}
			return;
		}
		if (!advance_segment(j))
		{
			s->final = true;
			return;
		}
		count_segment(j);
		if (j->seg_total == 0 && last_segment(j))
		{
			j->exhausted = true;
			s->final = true;
			return;
		}
		/* bound the planning work of one call: return an empty batch */
		if (j->seg_total == 0 &&
			std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200))
			return;
	}
}

/* Do v's pieces (SjVectors.pieces) hold its rows, in order, each exactly once? */
static bool
pieces_cover(const SjVectors *v)
{
	uint64_t	next = 0;

	if (v->npieces <= 0 || !v->pieces)
		return false;
	for (int p = 0; p < v->npieces; p++)
	{
		if (v->pieces[p].first != next || (v->pieces[p].n > 0 && !v->pieces[p].rows))
			return false;
		next += v->pieces[p].n;
	}
	return next == v->n;
}

/*
 * Row i of v's pieces (pieces_cover(v) holds): its dim floats.  *piece is
 * a cursor, the piece of the row read last (0 to start), walked either way.
 */
static const float *
piece_row(const SjVectors *v, uint32_t i, int *piece)
{
	while (i < v->pieces[*piece].first)
		(*piece)--;
	while (i >= v->pieces[*piece].first + v->pieces[*piece].n)
		(*piece)++;
	return v->pieces[*piece].rows + (size_t) (i - v->pieces[*piece].first) * v->dim;
}

/* Validate the arguments of sjgpu_eps_begin. */
void
check_args(const SjVectors *left, const SjVectors *right, double eps,
		   const SjJoinOptions *options)
{
	if (!left || !options)
		throw Error(SJ_ERR_INVALID, "eps_join: left input and options are required");
	if (left->dim < 1)
		throw Error(SJ_ERR_INVALID, "eps_join: dimension must be at least 1, not %d",
					left->dim);
	if (left->n > 0 && !left->coords && !left->fcoords && !pieces_cover(left))
		throw Error(SJ_ERR_INVALID, "eps_join: left coordinates are NULL");
	if (right)
	{
		if (right->dim != left->dim)
			throw Error(SJ_ERR_INVALID, "eps_join: different vector dimensions %d and %d",
						left->dim, right->dim);
		if (right->n > 0 && !right->coords && !right->fcoords && !pieces_cover(right))
			throw Error(SJ_ERR_INVALID, "eps_join: right coordinates are NULL");
	}
	if (!(eps >= 0.0))
		throw Error(SJ_ERR_INVALID, "eps_join: eps must be a non-negative number");
	if (options->metric != SJ_METRIC_L2 && options->metric != SJ_METRIC_COSINE)
		throw Error(SJ_ERR_INVALID, "eps_join: unknown metric %d", options->metric);
	if ((uint64_t) left->dim * std::max<uint64_t>(left->n, right ? right->n : 0) >
		((uint64_t) 1 << 62))
		throw Error(SJ_ERR_TOO_LARGE, "eps_join: input too large");
}

/* Fill the strategy string of the timings. */
void
describe(SjGpuEpsJoin *j)
{
	char		chunks[48] = "";

	if (j->nbuild_chunks > 1 || j->nprobe_chunks > 1)
		snprintf(chunks, sizeof(chunks), ", %ux%u chunks", j->nprobe_chunks,
				 j->nbuild_chunks);
	if (j->tasks.empty())
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "gpu (no pairs possible)");
	else if (j->grid.k > 0)
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "gpu grid K=%d%s%s",
				 j->grid.k, j->self ? " unicomp" : "", chunks);
	else if (j->use_tc)
		snprintf(j->timings.strategy, sizeof(j->timings.strategy),
				 "gpu tensor-core filter%s%s",
				 j->metric == SJ_METRIC_COSINE ? " cosine" : "", chunks);
	else
		snprintf(j->timings.strategy, sizeof(j->timings.strategy),
				 "gpu brute-force tiled%s", chunks);
}

/* Wait for a slot's batch and account its time. */
void
finish_slot(SjGpuEpsJoin *j, int slot)
{
	Slot	   *s = &j->slots[slot];
	float		ms = 0.0f;

	if (!s->pending)
		return;
	s->done.synchronize();
	s->pending = false;
	SJGPU_CHECK(cudaEventElapsedTime(&ms, s->probe_start.get(), s->probe_stop.get()));
	j->timings.probe_ms += ms;
	if (s->has_copy)
	{
		SJGPU_CHECK(cudaEventElapsedTime(&ms, s->xfer_start.get(), s->xfer_stop.get()));
		j->timings.transfer_ms += ms;
		if (j->slot_host.get()[slot].error)
			throw Error(SJ_ERR_INTERNAL,
						"eps_join: a probe point's pairs changed between the count and write passes");
	}
	if (j->count_only)
		s->count = j->slot_host.get()[slot].total;
}

/* Record a failure so that later calls report it too. */
SjStatus
fail(SjGpuEpsJoin *j, SjStatus st, const char *errmsg)
{
	if (st != SJ_OK && j)
	{
		j->failed = st;
		snprintf(j->failure, sizeof(j->failure), "%s", errmsg ? errmsg : "");
	}
	return st;
}

}								/* namespace */

/* ------------------------------------------------------------------------
 * The C boundary
 * ------------------------------------------------------------------------ */

/* Test hook (not in sjgpu.h): 0 automatic, 1 prefer the grid, 2 brute force. */
extern "C" void
sjgpu_eps_set_test_strategy(int strategy)
{
	forced_strategy = strategy;
}

/* Test hook (not in sjgpu.h): tile pruning of the tensor filter on or off. */
extern "C" void
sjgpu_eps_set_test_pruning(int on)
{
	force_no_prune = !on;
}

/* Test hook (not in sjgpu.h): work units a segment (0 = default). */
extern "C" void
sjgpu_eps_set_test_segment_work(double units)
{
	forced_segment_work = units;
}

/* Test hook (not in sjgpu.h): spread every join over the devices named. */
extern "C" void
sjgpu_eps_set_test_spread(int always)
{
	spread_always = always != 0;
}

/*
 * Would the device choose the grid for the build side?  choose_grid over
 * the bounds of kGridSampleBlocks evenly spaced runs of kGridSampleRun rows
 * (runs: each column read in a few sequential stretches, or rows held in
 * pieces each read whole; the device takes
 * the whole chunk's bounds, and a sample's extent is at most the chunk's,
 * which favours brute force slightly), as if the side were one chunk and
 * the device had tensor cores.  About a millisecond, on the host.
 */
static bool
grid_likely(const SjVectors *build, double eps, bool self, int metric)
{
	const uint32_t n = build->n;
	const int	dim = build->dim;
	uint32_t	run = std::min(n, kGridSampleRun);
	std::vector<double> lo(dim, INFINITY),
				hi(dim, -INFINITY);
	GridParams	g;

	if (metric != SJ_METRIC_L2 || !std::isfinite(eps) || n == 0 ||
		(!build->coords && !build->fcoords && !pieces_cover(build)))
		return false;
	auto		first_of = [&](uint32_t b) {
		return (uint32_t) ((uint64_t) (n - run) * b / std::max(1u, kGridSampleBlocks - 1));
	};
	auto		widen = [&](int k, double x) {
		/* NaN compares false and widens nothing, as on the device */
		if (x < lo[k])
			lo[k] = x;
		if (x > hi[k])
			hi[k] = x;
	};

	if (build->coords || build->fcoords)
	{
		/* columns: each read in kGridSampleBlocks sequential stretches */
		for (int k = 0; k < dim; k++)
		{
			const double *dcol = build->coords ? build->coords + (size_t) k * n : nullptr;
			const float *fcol = dcol ? nullptr : build->fcoords + (size_t) k * n;

			for (uint32_t b = 0; b < kGridSampleBlocks; b++)
				for (uint32_t i = first_of(b); i < first_of(b) + run; i++)
					widen(k, dcol ? dcol[i] : (double) fcol[i]);
		}
	}
	else
	{
		/* rows in pieces: each sampled row read whole (each column's values in the same order) */
		int			piece = 0;	/* the piece that holds the last row read */

		for (uint32_t b = 0; b < kGridSampleBlocks; b++)
			for (uint32_t i = first_of(b); i < first_of(b) + run; i++)
			{
				const float *r = piece_row(build, i, &piece);

				for (int k = 0; k < dim; k++)
					widen(k, (double) r[k]);
			}
	}
	choose_grid(GridShape {dim, eps, self, true, dim >= kTcMinDim}, lo, hi, n, &g);
	return g.k > 0;
}

/* Row i of v (columns, or pieces that cover it) as doubles into out (dim of them). */
static void
sample_row(const SjVectors *v, uint32_t i, int *piece, double *out)
{
	const int	dim = v->dim;

	if (v->coords || v->fcoords)
	{
		for (int k = 0; k < dim; k++)
			out[k] = v->coords ? v->coords[(size_t) k * v->n + i] :
				(double) v->fcoords[(size_t) k * v->n + i];
		return;
	}

	const float *r = piece_row(v, i, piece);

	for (int k = 0; k < dim; k++)
		out[k] = (double) r[k];
}

/*
 * The fraction of a join's pairs within eps, from the pairs of two samples
 * of rows (runs of kDenseSampleRun consecutive rows, evenly spaced: a
 * column holds a run's values side by side), each distance computed here
 * in double precision; NaN is never within eps.  The right sample's runs
 * lie half a step after the left's: at the sizes sampled (10^7 pairs or
 * more: a self-join of 4,472 rows), a self-join's row never meets itself,
 * nor does a row of a table joined with itself as two tables.  A side too
 * small for its runs to lie apart is sampled row by row, evenly.  Fewer
 * rows for fewer pairs (the join's own work is smaller) and for more
 * dimensions.  0 where the rows cannot be read or the sample has fewer
 * than kDenseMinHits pairs within eps.
 */
static double
dense_fraction(const SjVectors *left, const SjVectors *right, double eps, int metric,
			   double pairs)
{
	const SjVectors *b = right ? right : left;
	const int	dim = left->dim;
	uint32_t	cap = (uint32_t) std::max(8.0, std::min({(double) kDenseSampleRows,
														  std::sqrt(pairs) / 300.0,
														  std::sqrt(kDenseSampleWork / dim)})),
				na = std::min(right ? left->n : left->n / 2, cap),
				nb = std::min(right ? right->n : left->n / 2, cap),
				hits = 0;
	/* sample row s of v's n rows, of ns: run s / kDenseSampleRun, half a step on for right */
	auto		row_of = [](uint32_t n, uint32_t ns, uint32_t s, bool half) {
		uint64_t	runs = (ns + kDenseSampleRun - 1) / kDenseSampleRun,
					r = s / kDenseSampleRun,
					at = half ? (uint64_t) n * (2 * r + 1) / (2 * runs) : (uint64_t) n * r / runs;

		if ((uint64_t) n < 2 * kDenseSampleRun * runs)	/* runs would overlap: rows apart */
			return (uint32_t) (half ? (uint64_t) n * (2 * s + 1) / (2 * ns) :
							   (uint64_t) n * s / ns);
		return (uint32_t) std::min<uint64_t>(at + s % kDenseSampleRun, n - 1);
	};

	if (na == 0 || nb == 0 || dim < 1 || (right && right->dim != dim) ||
		(!left->coords && !left->fcoords && !pieces_cover(left)) ||
		(!b->coords && !b->fcoords && !pieces_cover(b)))
		return 0.0;

	std::vector<double> ra((size_t) na * dim),
				rb((size_t) nb * dim);
	int			piece = 0;

	for (uint32_t s = 0; s < na; s++)
		sample_row(left, row_of(left->n, na, s, false), &piece, &ra[(size_t) s * dim]);
	piece = 0;
	for (uint32_t t = 0; t < nb; t++)
		sample_row(b, row_of(b->n, nb, t, true), &piece, &rb[(size_t) t * dim]);
	for (uint32_t s = 0; s < na; s++)
		for (uint32_t t = 0; t < nb; t++)
		{
			const double *x = &ra[(size_t) s * dim],
					   *y = &rb[(size_t) t * dim];
			double		d;

			/* the engines' distances (sjdist.h) */
			if (metric == SJ_METRIC_COSINE)
			{
				double		dot = 0,
							xx = 0,
							yy = 0;

				for (int k = 0; k < dim; k++)
				{
					dot = sj_dot_step(dot, x[k], y[k]);
					xx = sj_dot_step(xx, x[k], x[k]);
					yy = sj_dot_step(yy, y[k], y[k]);
				}
				d = sj_cosine_finish(dot, xx, yy);
			}
			else
			{
				double		sum = 0;

				for (int k = 0; k < dim; k++)
					sum = sj_l2_step(sum, x[k], y[k]);
				d = sj_l2_finish(sum);
			}
			hits += d <= eps;
		}
	return hits < kDenseMinHits ? 0.0 : (double) hits / ((double) na * nb);
}

extern "C" int
sjgpu_eps_spreads(const SjVectors *left, const SjVectors *right, double eps, int metric)
{
	uint32_t	nleft = left ? left->n : 0;
	double		pairs = right ? (double) nleft * right->n : (double) nleft * nleft / 2.0;

	if (spread_always)
		return 1;
	if (!left || !(metric == SJ_METRIC_COSINE || left->dim >= kTcMinDim) ||
		pairs * (1.0 + kVerifyPairCost) < kSpreadMinPairs)
		return 0;
	try
	{
		/* fewer pairs: spread where verifying the pairs within eps is the work */
		if (pairs < kSpreadMinPairs &&
			pairs * (1.0 + kVerifyPairCost * dense_fraction(left, right, eps, metric, pairs)) <
			kSpreadMinPairs)
			return 0;
		/* the grid's joins are bound by reading their inputs: one device */
		return !grid_likely(right ? right : left, eps, right == nullptr, metric);
	}
	catch (...)
	{
		return 0;				/* C callers: nothing may escape; one device */
	}
}

namespace sjgpu
{

SjStatus
eps_begin_shared(const SjVectors *left, const SjVectors *right, double eps,
				 const SjJoinOptions *options, UnitClaim claim, SjGpuEpsJoin **join,
				 char *errmsg)
{
	SjGpuEpsJoin *j = nullptr;
	SjStatus	st;

	/* the arguments were checked by sjgpu_eps_begin, join included */
	*join = nullptr;
	st = sjgpu::guard(errmsg, [&] {
		double		start_ms = sjgpu::use_device(options->gpu_device);

		j = new SjGpuEpsJoin();
		j->claim = claim;
		j->left = *left;
		j->self = right == nullptr;
		j->right = right ? *right : *left;
		j->eps = eps;
		j->dim = left->dim;
		j->count_only = options->count_only != 0;
		j->device = options->gpu_device;
		j->timings.start_ms = start_ms;
		j->metric = options->metric;
		j->grid_capable = std::isfinite(eps) && j->metric == SJ_METRIC_L2;
		j->tc_capable = sjgpu::tensor_cores_usable(j->device) &&
			(j->metric == SJ_METRIC_COSINE || (j->dim >= kTcMinDim && forced_strategy != 2));
		if (j->metric == SJ_METRIC_COSINE && !j->tc_capable)
			throw Error(SJ_ERR_NO_DEVICE,
						"eps_join: the cosine metric needs a GPU of compute capability 8.0 or later");
		j->budget.set_limit(sjgpu::memory_limit(options->gpu_memory_limit));

		j->compute.create();
		j->copy.create();
		j->timer.create();
		j->filter_timer.create();
		j->prune_timer.create();
		for (Slot &s : j->slots)
		{
			s.done.create(false);
			s.probe_start.create();
			s.probe_stop.create();
			s.xfer_start.create();
			s.xfer_stop.create();
		}
		j->host_scalars.allocate(4);
		j->slot_host.allocate(2);
		memset(j->slot_host.get(), 0, 2 * sizeof(SlotHost));
		if (!(j->left.n == 0 || (!j->self && j->right.n == 0) || (j->self && j->left.n < 2)))
		{
			plan_memory(j, options->max_batch_pairs);
			allocate_buffers(j);
			plan_tasks(j);
		}
		enqueue_batch(j, 0);
		describe(j);
		*join = j;
	});
	if (st != SJ_OK)
	{
		sjgpu_eps_end(j);
		*join = nullptr;
	}
	return st;
}

}								/* namespace sjgpu */

/*
 * Test hook (not in sjgpu.h): on != 0 times the steps of the tensor
 * filter's preparation from now on (each then waits for the device) and
 * clears their sums; ms (kPrepSteps entries, may be NULL) gets the sums
 * so far: norms, mean and largest coordinate, seeds, assignment and sort,
 * reorder, FP16 rows, tile bounds.
 */
extern "C" void
sjgpu_eps_test_prep_steps(int on, double *ms)
{
	std::lock_guard<std::mutex> lk(prep_steps_mu);

	if (ms)
		memcpy(ms, prep_steps_ms, sizeof(prep_steps_ms));
	if (on)
		memset(prep_steps_ms, 0, sizeof(prep_steps_ms));
	prep_steps_on = on != 0;
}

extern "C" SjStatus
sjgpu_eps_begin(const SjVectors *left, const SjVectors *right, double eps,
				const SjJoinOptions *options, SjGpuEpsJoin **join, char *errmsg)
{
	SjGpuEpsJoin *j = nullptr;
	bool		spread = false;
	SjStatus	st;

	if (join)
		*join = nullptr;
	st = sjgpu::guard(errmsg, [&] {
		if (!join)
			throw Error(SJ_ERR_INVALID, "eps_join: join handle pointer is NULL");
		check_args(left, right, eps, options);
		spread = sjgpu::multi_wanted(options, left->n, right ? right->n : 0, right == nullptr) &&
			(options->gpu_spread_judged ||
			 sjgpu_eps_spreads(left, right, eps, options->metric)) &&
			sjgpu::devices_alike(options);
		if (spread)
		{
			/* several devices: each prepares the whole join, they share its segments */
			j = new SjGpuEpsJoin();
			j->multi = sjgpu::multi_eps_begin(left, right, eps, options);
			*join = j;
		}
	});
	if (st != SJ_OK)
	{
		sjgpu_eps_end(j);
		if (join)
			*join = nullptr;
		return st;
	}
	if (spread)
		return SJ_OK;
	return sjgpu::eps_begin_shared(left, right, eps, options, sjgpu::UnitClaim(), join, errmsg);
}

extern "C" SjStatus
sjgpu_eps_next(SjGpuEpsJoin *join, SjPairBatch *batch, int *done, char *errmsg)
{
	SjStatus	st;

	if (batch)
		memset(batch, 0, sizeof(*batch));
	if (done)
		*done = 0;
	if (join && join->failed != SJ_OK)
	{
		sjgpu::set_errmsg(errmsg, join->failure);
		return join->failed;
	}
	st = sjgpu::guard(errmsg, [&] {
		if (!join || !batch || !done)
			throw Error(SJ_ERR_INVALID, "eps_join: next() needs a handle, a batch and done");
		if (join->multi)
		{
			SjStatus	inner = sjgpu::multi_next(join->multi, batch, done, errmsg);

			if (inner != SJ_OK)
				throw Error(inner, "%s", errmsg ? errmsg : "");
			return;
		}
		if (join->finished)
		{
			*done = 1;
			return;
		}
		SJGPU_CHECK(cudaSetDevice(join->device));

		int			cur = join->cur_slot;
		Slot	   *s = &join->slots[cur];

		finish_slot(join, cur);
		batch->count = s->count;
		if (!join->count_only && s->count > 0)
		{
			unsigned char *h = s->host.get();

			batch->left = (const uint32_t *) h;
			batch->right = (const uint32_t *) (h + s->host_cap * 4);
			batch->value = (const double *) (h + s->host_cap * 8);
		}
		join->timings.batches++;
		if (s->final)
		{
			join->finished = true;
			*done = 1;
		}
		else
		{
			join->cur_slot = cur ^ 1;
			enqueue_batch(join, cur ^ 1);
		}
	});
	return fail(join, st, errmsg);
}

extern "C" void
sjgpu_eps_timings(const SjGpuEpsJoin *join, SjTimings *timings)
{
	if (!timings)
		return;
	if (!join)
	{
		memset(timings, 0, sizeof(*timings));
		return;
	}
	if (join->multi)
	{
		sjgpu::multi_timings(join->multi, timings);
		return;
	}
	*timings = join->timings;
	timings->device_bytes = join->budget.peak();
	if (join->tile_pairs > 0)
	{
		size_t		len = strlen(timings->strategy);

		/*
		 * The share of tile pairs the filter computed after pruning, and
		 * the time pruning took (ordering, bounds, lists).
		 */
		snprintf(timings->strategy + len, sizeof(timings->strategy) - len,
				 ", tiles %.1f%% (%.0f ms)", 100.0 * join->tile_kept / join->tile_pairs,
				 join->prune_ms);
	}
}

/* A one-device join's end (defer_end's fn): streams drained, freed. */
static void
eps_end_now(void *arg)
{
	SjGpuEpsJoin *join = static_cast<SjGpuEpsJoin *>(arg);

	(void) cudaSetDevice(join->device);
	if (join->compute.get())
		(void) cudaStreamSynchronize(join->compute.get());
	if (join->copy.get())
		(void) cudaStreamSynchronize(join->copy.get());
	(void) cudaGetLastError();
	delete join;
}

extern "C" void
sjgpu_eps_end(SjGpuEpsJoin *join)
{
	if (!join)
		return;
	if (join->multi)
	{
		sjgpu::multi_end(join->multi);
		delete join;
		return;
	}
	if (!join->compute.get())
	{
		delete join;			/* a begin that failed early: nothing on a device */
		return;
	}
	/* its device memory freed off the caller's path: 5-20 ms (defer_end) */
	sjgpu::defer_end(eps_end_now, join, join->device);
}
