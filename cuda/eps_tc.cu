/*
 * eps_tc.cu
 *		The tensor-core candidate filter of the GPU eps_join: FP16 rows with
 *		a rigorous error bound, an mma.sync product whose epilogue keeps
 *		only pairs that may join.  The bound and its derivation are in
 *		eps_tc.cuh; the canonical verification is in eps_gpu.cu.
 *
 * The product kernel is a plain two-stage cp.async pipeline: a block
 * computes a 128 x 128 tile of dot products with eight warps (each 64 x 32,
 * 4 x 4 m16n8k16 fragments), K in steps of 32, operands through ldmatrix
 * from rows padded by 16 bytes (no bank conflicts).  The epilogue turns
 * each dot product into a keep/drop decision and appends the kept pairs
 * with one atomic per warp and fragment.
 */
#include <cub/block/block_reduce.cuh>

#include <atomic>
#include <cmath>

#include "eps_tc.cuh"
#include "sjdist.h"

namespace sjgpu
{

namespace
{

constexpr int kThreads = 256;
constexpr int kRowPad = kTcK + 8;	/* halves per shared-memory row */
constexpr double kU = 1.0 / 2048.0 * (1.0 + 1.0 / 1024.0);
constexpr double kEta = 1.0 / 33554432.0;	/* 2^-25 */

/* Squared norm of row i in dimension order. */
__global__ void
norms_kernel(const double *coords, uint32_t n, int dim, double *out)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		s = 0.0;

	if (i >= n)
		return;
	for (int k = 0; k < dim; k++)
	{
		double		x = coords[(size_t) k * n + i];

		s = sj_dot_step(s, x, x);
	}
	out[i] = s;
}

/* Coordinate k of row i as the filter sees it (unit rows for cosine). */
__device__ __forceinline__ double
filter_coord(const double *coords, uint32_t n, const double *norms, int k,
			 uint32_t i)
{
	double		x = coords[(size_t) k * n + i];

	return norms ? x / sqrt(norms[i]) : x;
}

/* Mean of column blockIdx.x (rows with a NaN unit vector are skipped). */
__global__ void
mean_kernel(const double *coords, uint32_t n, const double *norms, double *mean)
{
	using BlockReduce = cub::BlockReduce<double, kThreads>;
	__shared__ typename BlockReduce::TempStorage tmp;
	double		s = 0.0;

	for (uint32_t i = threadIdx.x; i < n; i += kThreads)
	{
		double		x = filter_coord(coords, n, norms, blockIdx.x, i);

		if (isfinite(x))
			s += x;
	}
	s = BlockReduce(tmp).Sum(s);
	if (threadIdx.x == 0)
		mean[blockIdx.x] = n ? s / n : 0.0;
}

/* max |x - mean| of column blockIdx.x, combined into *out. */
__global__ void
maxabs_kernel(const double *coords, uint32_t n, const double *norms,
			  const double *mean, double *out)
{
	using BlockReduce = cub::BlockReduce<double, kThreads>;
	__shared__ typename BlockReduce::TempStorage tmp;
	double		m = 0.0;

	for (uint32_t i = threadIdx.x; i < n; i += kThreads)
	{
		double		x = filter_coord(coords, n, norms, blockIdx.x, i);

		if (isfinite(x))
			m = fmax(m, fabs(x - mean[blockIdx.x]));
	}
	m = BlockReduce(tmp).Reduce(m, [](double a, double b) { return fmax(a, b); });
	if (threadIdx.x == 0)
		atomicMax((unsigned long long *) out, (unsigned long long) __double_as_longlong(m));
}

/*
 * One row: centred, scaled FP16 coordinates (zero padded), and (P, N) of
 * the bound.  A zero vector under cosine (NaN unit row) gets P = +inf: it
 * is never a candidate.
 */
__global__ void
convert_kernel(const double *coords, uint32_t n, const double *norms,
			   const double *mean, TcParams p, double r2, double beta,
			   double zeta, double delta, __half *rows, float2 *pn)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		n2 = 0.0,
				l1 = 0.0;
	bool		bad = false;

	if (i >= n)
		return;
	for (int k = 0; k < p.pdim; k++)
	{
		double		v = 0.0;

		if (k < p.dim)
		{
			v = (filter_coord(coords, n, norms, k, (uint32_t) i) - mean[k]) * p.scale;
			if (!isfinite(v))
			{
				bad = true;
				v = 0.0;
			}
		}
		rows[i * p.pdim + k] = __double2half(v);
		n2 += v * v;
		l1 += fabs(v);
	}

	double		pv = n2 * 0.5 - beta * l1 - delta * n2 - r2 * 0.25 - zeta * 0.5;
	double		nv = sqrt(n2) * (1.0 + 1e-15);

	/*
	 * Cosine of a row whose squared norm is tiny or huge: the canonical
	 * product of norms may underflow or overflow, so only the canonical
	 * computation can tell; such a row is a candidate with every row.
	 */
	if (norms && norms[i] > 0.0 && !(norms[i] > 0x1p-500 && norms[i] < 0x1p500))
		pn[i] = make_float2(-INFINITY, 0.0f);
	else
		pn[i] = make_float2(bad ? INFINITY : __double2float_rd(pv), __double2float_ru(nv));
}

/*
 * mma.sync m16n8k16, FP16 inputs, FP32 accumulators.  Not volatile: it
 * reads and writes registers only, so the compiler may interleave it with
 * the (volatile) shared-memory loads.
 */
__device__ __forceinline__ void
mma16816(float *c, const uint32_t *a, const uint32_t *b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
				 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
				 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Four 8x8 FP16 matrices from shared memory. */
__device__ __forceinline__ void
ldmatrix_x4(uint32_t *r, const __half *ptr)
{
	uint32_t	addr = (uint32_t) __cvta_generic_to_shared(ptr);

	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
				 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

/* 16 bytes global -> shared, zero-filled where valid is false. */
__device__ __forceinline__ void
cp_async16(__half *dst, const __half *src, bool valid)
{
	uint32_t	addr = (uint32_t) __cvta_generic_to_shared(dst);
	int			bytes = valid ? 16 : 0;

	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
				 :: "r"(addr), "l"(src), "r"(bytes));
}

/* Stage K columns [k0, k0 + kTcK) of 128 rows starting at row0. */
__device__ __forceinline__ void
load_tile(__half (*dst)[kRowPad], const __half *rows, uint32_t row0, uint32_t nrows,
		  int pdim, int k0)
{
#pragma unroll
	for (int c = threadIdx.x; c < kTcTile * (kTcK / 8); c += kThreads)
	{
		int			r = c / (kTcK / 8),
					part = c % (kTcK / 8);
		uint32_t	row = row0 + r;
		bool		valid = row < nrows;
		const __half *src = rows + (size_t) (valid ? row : 0) * pdim + k0 + part * 8;

		cp_async16(&dst[r][part * 8], src, valid);
	}
}

/* Shared memory of filter_kernel: kStages stages of the two tiles. */
constexpr int kStages = 3;
constexpr size_t kFilterSmem = (size_t) kStages * 2 * kTcTile * kRowPad * sizeof(__half);

/*
 * One 128 x 128 tile of (probe, build) pairs: blockIdx.y the probe tile
 * within [p0, p1), blockIdx.x the build tile.  A three-stage cp.async
 * pipeline (one barrier a K step); two blocks a multiprocessor.
 */
template <bool SELF>
__global__ void __launch_bounds__(kThreads, 2)
filter_kernel(TcSide probe, TcSide build, TcParams p, uint32_t p0, uint32_t p1,
			  unsigned long long *keys, unsigned long long cap,
			  unsigned long long *count)
{
	extern __shared__ __align__(16) unsigned char smem[];
	__half		(*sa)[kTcTile][kRowPad] = reinterpret_cast<__half (*)[kTcTile][kRowPad]>(smem);
	__half		(*sb)[kTcTile][kRowPad] = sa + kStages;
	const uint32_t pt = p0 + blockIdx.y * kTcTile;
	const uint32_t jt = blockIdx.x * kTcTile;
	const int	warp = threadIdx.x / 32,
				lane = threadIdx.x % 32;
	const int	wm = (warp / 4) * 64,
				wn = (warp % 4) * 32;
	float		acc[4][4][4];

	if (SELF && jt + kTcTile - 1 <= pt)
		return;					/* every build row precedes every probe row */

#pragma unroll
	for (int mi = 0; mi < 4; mi++)
#pragma unroll
		for (int ni = 0; ni < 4; ni++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[mi][ni][e] = 0.0f;

	const int	nk = p.pdim / kTcK;

	/* the first kStages - 1 stages in flight, one commit group each */
#pragma unroll
	for (int st = 0; st < kStages - 1; st++)
	{
		if (st < nk)
		{
			load_tile(sa[st], probe.rows, pt, p1, p.pdim, st * kTcK);
			load_tile(sb[st], build.rows, jt, build.n, p.pdim, st * kTcK);
		}
		asm volatile("cp.async.commit_group;\n"::);
	}
	for (int kt = 0; kt < nk; kt++)
	{
		const int	s = kt % kStages;
		const int	kn = kt + kStages - 1;

		asm volatile("cp.async.wait_group %0;\n"::"n"(kStages - 2));
		__syncthreads();
		/* refill the stage the previous step read (all are past it now) */
		if (kn < nk)
		{
			load_tile(sa[kn % kStages], probe.rows, pt, p1, p.pdim, kn * kTcK);
			load_tile(sb[kn % kStages], build.rows, jt, build.n, p.pdim, kn * kTcK);
		}
		asm volatile("cp.async.commit_group;\n"::);
#pragma unroll
		for (int kk = 0; kk < kTcK; kk += 16)
		{
			uint32_t	af[4][4],
						bf[4][2];

#pragma unroll
			for (int mi = 0; mi < 4; mi++)
				ldmatrix_x4(af[mi], &sa[s][wm + mi * 16 + (lane % 16)][kk + (lane / 16) * 8]);
#pragma unroll
			for (int nj = 0; nj < 2; nj++)
			{
				uint32_t	r[4];

				ldmatrix_x4(r, &sb[s][wn + nj * 16 + (lane & 7) + ((lane >> 4) << 3)]
							[kk + ((lane >> 3) & 1) * 8]);
				bf[nj * 2][0] = r[0];
				bf[nj * 2][1] = r[1];
				bf[nj * 2 + 1][0] = r[2];
				bf[nj * 2 + 1][1] = r[3];
			}
#pragma unroll
			for (int mi = 0; mi < 4; mi++)
#pragma unroll
				for (int ni = 0; ni < 4; ni++)
					mma16816(acc[mi][ni], af[mi], bf[ni]);
		}
	}
	asm volatile("cp.async.wait_group 0;\n"::);

	/* epilogue: keep the pairs the bound cannot rule out */
	float2		rp[4][2],
				rb[4][2];

#pragma unroll
	for (int mi = 0; mi < 4; mi++)
#pragma unroll
		for (int h = 0; h < 2; h++)
		{
			uint32_t	row = pt + wm + mi * 16 + lane / 4 + h * 8;

			rp[mi][h] = row < p1 ? probe.pn[row] : make_float2(INFINITY, 0.0f);
		}
#pragma unroll
	for (int ni = 0; ni < 4; ni++)
#pragma unroll
		for (int h = 0; h < 2; h++)
		{
			uint32_t	col = jt + wn + ni * 8 + (lane % 4) * 2 + h;

			rb[ni][h] = col < build.n ? build.pn[col] : make_float2(INFINITY, 0.0f);
		}

	/* which of the thread's 64 pairs to keep: a bit each */
	unsigned long long kept = 0;

#pragma unroll
	for (int mi = 0; mi < 4; mi++)
#pragma unroll
		for (int ni = 0; ni < 4; ni++)
#pragma unroll
			for (int e = 0; e < 4; e++)
			{
				const float2 a = rp[mi][e >> 1],
							b = rb[ni][e & 1];
				float		rhs = __fsub_rd(__fadd_rd(a.x, b.x),
											__fmul_ru(__fmul_ru(p.alpha, a.y), b.y));

				if (acc[mi][ni][e] >= rhs)
					kept |= 1ull << ((mi * 4 + ni) * 4 + e);
			}
	if (SELF)
	{
#pragma unroll
		for (int mi = 0; mi < 4; mi++)
#pragma unroll
			for (int ni = 0; ni < 4; ni++)
#pragma unroll
				for (int e = 0; e < 4; e++)
				{
					const uint32_t row = pt + wm + mi * 16 + lane / 4 + (e >> 1) * 8;
					const uint32_t col = jt + wn + ni * 8 + (lane % 4) * 2 + (e & 1);

					if (col <= row)
						kept &= ~(1ull << ((mi * 4 + ni) * 4 + e));
				}
	}
	/* most tiles keep nothing: one vote, then the appends */
	if (!__any_sync(0xffffffffu, kept != 0))
		return;
#pragma unroll
	for (int mi = 0; mi < 4; mi++)
#pragma unroll
		for (int ni = 0; ni < 4; ni++)
#pragma unroll
			for (int e = 0; e < 4; e++)
			{
				const bool	keep = (kept >> ((mi * 4 + ni) * 4 + e)) & 1;
				unsigned	mask = __ballot_sync(0xffffffffu, keep);

				if (mask == 0)
					continue;

				const uint32_t row = pt + wm + mi * 16 + lane / 4 + (e >> 1) * 8;
				const uint32_t col = jt + wn + ni * 8 + (lane % 4) * 2 + (e & 1);
				unsigned long long base = 0;
				int			leader = __ffs(mask) - 1;

				if (lane == leader)
					base = atomicAdd(count, (unsigned long long) __popc(mask));
				base = __shfl_sync(0xffffffffu, base, leader);
				if (keep)
				{
					unsigned long long at = base + __popc(mask & ((1u << lane) - 1));

					if (at < cap)
						keys[at] = ((unsigned long long) (row - p0) << 32) | col;
				}
			}
}

/* First key of each probe offset (binary search over sorted keys). */
__global__ void
starts_kernel(const unsigned long long *keys, unsigned long long nkeys, uint32_t np,
			  uint32_t *start)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long target,
				lo = 0,
				hi = nkeys;

	if (i > np)
		return;
	target = (unsigned long long) i << 32;
	while (lo < hi)
	{
		unsigned long long mid = lo + (hi - lo) / 2;

		if (keys[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	start[i] = (uint32_t) lo;
}

inline unsigned int
blocks(uint64_t n)
{
	return (unsigned int) std::max<uint64_t>(1, (n + kThreads - 1) / kThreads);
}

}								/* namespace */

void
tc_norms(const double *coords, uint32_t n, int dim, double *out, cudaStream_t st)
{
	if (n == 0)
		return;
	norms_kernel<<<blocks(n), kThreads, 0, st>>>(coords, n, dim, out);
	SJGPU_CHECK_LAUNCH("norms_kernel");
}

void
tc_mean(const double *coords, uint32_t n, int dim, const double *norms, double *mean,
		cudaStream_t st)
{
	mean_kernel<<<dim, kThreads, 0, st>>>(coords, n, norms, mean);
	SJGPU_CHECK_LAUNCH("mean_kernel");
}

void
tc_maxabs(const double *coords, uint32_t n, int dim, const double *norms,
		  const double *mean, double *out, cudaStream_t st)
{
	if (n == 0)
		return;
	maxabs_kernel<<<dim, kThreads, 0, st>>>(coords, n, norms, mean, out);
	SJGPU_CHECK_LAUNCH("maxabs_kernel");
}

void
tc_params(int dim, int metric, double eps, double maxabs, TcParams *p)
{
	const double pd = (double) tc_padded_dim(dim);
	const double gamma = (pd + 32.0) * std::ldexp(1.0, -22);
	double		alpha = 2.0 * kU + kU * kU + gamma * (1.0 + kU) * (1.0 + kU);
	int			e = 0;

	p->dim = dim;
	p->pdim = (int) pd;
	p->metric = metric;
	p->eps = eps;
	/* largest |value| at most 2^14: far from FP16's 65504, products fit */
	p->scale = 1.0;
	if (maxabs > 0.0 && std::isfinite(maxabs))
	{
		std::frexp(maxabs, &e);	/* maxabs < 2^e */
		p->scale = std::ldexp(1.0, 14 - e);
	}
	p->alpha = std::nextafter((float) (alpha * (1.0 + 1e-6)), INFINITY);
}

void
tc_convert(const double *coords, uint32_t n, const double *norms, const double *mean,
		   const TcParams &p, TcSide *side, cudaStream_t st)
{
	const double pd = (double) p.pdim;
	const double gamma = (pd + 32.0) * std::ldexp(1.0, -22);
	const double beta = kEta * (1.0 + kU) * (1.0 + gamma) * (1.0 + 1e-6);
	const double zeta = pd * kEta * kEta * (1.0 + gamma) * (1.0 + 1e-6);
	const double delta = pd * std::ldexp(1.0, -52) + std::ldexp(1.0, -40);
	double		r2;

	if (p.metric == SJ_METRIC_COSINE)
		r2 = (2.0 * p.eps * (1.0 + 1e-9) + 1e-9) * p.scale * p.scale;
	else
	{
		/*
		 * Underflow: the canonical squares and sums lose at most 2^-1075
		 * each (absolute), the centred differences at most 2^-1075 per
		 * coordinate; both widen R.
		 */
		int			es = std::ilogb(p.scale);
		double		r = (p.eps * (1.0 + 1e-9) + std::sqrt(pd) * 0x1p-1073) * p.scale;

		r2 = r * r * (1.0 + 1e-9) + std::ldexp(pd + 2.0, 2 * es - 1074);
	}
	side->n = n;
	if (n == 0)
		return;
	convert_kernel<<<blocks(n), kThreads, 0, st>>>(coords, n, norms, mean, p, r2, beta,
												   zeta, delta, side->rows, side->pn);
	SJGPU_CHECK_LAUNCH("convert_kernel");
}

void
tc_filter(const TcSide &probe, const TcSide &build, const TcParams &p, bool self,
		  uint32_t p0, uint32_t p1, unsigned long long *keys, unsigned long long cap,
		  unsigned long long *count, cudaStream_t st)
{
	dim3		grid((build.n + kTcTile - 1) / kTcTile, (p1 - p0 + kTcTile - 1) / kTcTile);
	/* devices whose kernel was sized: a bit per device (an attribute is per device) */
	static std::atomic<unsigned long long> sized[2];
	int			dev = 0;
	unsigned long long bit;

	SJGPU_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), st));
	if (p1 <= p0 || build.n == 0)
		return;
	SJGPU_CHECK(cudaGetDevice(&dev));
	bit = dev >= 0 && dev < 64 ? 1ULL << dev : 0;
	if (bit == 0 || !(sized[self].load() & bit))
	{
		/* more than 48 KB of dynamic shared memory must be asked for */
		SJGPU_CHECK(cudaFuncSetAttribute(self ? filter_kernel<true> : filter_kernel<false>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 (int) kFilterSmem));
		sized[self].fetch_or(bit);
	}
	if (self)
		filter_kernel<true><<<grid, kThreads, kFilterSmem, st>>>(probe, build, p, p0, p1, keys,
																 cap, count);
	else
		filter_kernel<false><<<grid, kThreads, kFilterSmem, st>>>(probe, build, p, p0, p1, keys,
																  cap, count);
	SJGPU_CHECK_LAUNCH("filter_kernel");
}

void
tc_starts(const unsigned long long *keys, unsigned long long nkeys, uint32_t np,
		  uint32_t *start, cudaStream_t st)
{
	starts_kernel<<<blocks((uint64_t) np + 1), kThreads, 0, st>>>(keys, nkeys, np, start);
	SJGPU_CHECK_LAUNCH("starts_kernel");
}

}								/* namespace sjgpu */
