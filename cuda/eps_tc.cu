/*
 * eps_tc.cu
 *		The tensor-core candidate filter of the GPU eps_join: FP16 rows with
 *		a rigorous error bound, an mma.sync product whose epilogue keeps
 *		only pairs that may join.  The bound and its derivation are in
 *		eps_tc.cuh; the canonical verification is in eps_gpu.cu.
 *
 * Two product kernels, the same tiles and the same epilogue:
 *	- on Hopper (an sm_90a image loaded: tc_wgmma()), wg_filter_kernel:
 *	  wgmma reads both operands from 128-byte-swizzled shared memory,
 *	  two warpgroups a 128 x 128 tile, K in steps of 64 through three
 *	  cp.async stages with one wgmma group in flight;
 *	- elsewhere (Ampere, or a build without sm_90a), filter_kernel:
 *	  mma.sync m16n8k16 from ldmatrix fragments, eight warps of 64 x 32.
 * Blocks walk the tiles in runs of kTcGroup probe tiles (tile_of), so the
 * blocks resident at once share their tiles in L2.  The epilogue turns
 * each dot product into a keep/drop decision and appends the kept pairs
 * with one atomic per warp and fragment.  test/bench/tc_bench.cu measures
 * the shapes.
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

/* fn(x) for the finite coordinates x of column blockIdx.x this thread takes. */
template <typename Fn>
__device__ __forceinline__ void
for_each_column_coord(const double *coords, uint32_t n, const double *norms, Fn fn)
{
	for (uint32_t i = threadIdx.x; i < n; i += kTcThreads)
	{
		double		x = filter_coord(coords, n, norms, blockIdx.x, i);

		if (isfinite(x))
			fn(x);
	}
}

/* Mean of column blockIdx.x (rows with a NaN unit vector are skipped). */
__global__ void
mean_kernel(const double *coords, uint32_t n, const double *norms, double *mean)
{
	using BlockReduce = cub::BlockReduce<double, kTcThreads>;
	__shared__ typename BlockReduce::TempStorage tmp;
	double		s = 0.0;

	for_each_column_coord(coords, n, norms, [&](double x) { s += x; });
	s = BlockReduce(tmp).Sum(s);
	if (threadIdx.x == 0)
		mean[blockIdx.x] = n ? s / n : 0.0;
}

/* max |x - mean| of column blockIdx.x, combined into *out. */
__global__ void
maxabs_kernel(const double *coords, uint32_t n, const double *norms,
			  const double *mean, double *out)
{
	using BlockReduce = cub::BlockReduce<double, kTcThreads>;
	__shared__ typename BlockReduce::TempStorage tmp;
	double		m = 0.0;

	for_each_column_coord(coords, n, norms,
						  [&](double x) { m = fmax(m, fabs(x - mean[blockIdx.x])); });
	m = BlockReduce(tmp).Reduce(m, [](double a, double b) { return fmax(a, b); });
	if (threadIdx.x == 0)
		atomicMax((unsigned long long *) out, (unsigned long long) __double_as_longlong(m));
}

/* Halves a row of a warp's staging tile in convert_kernel (kTcK and 2 of padding). */
constexpr int kConvPad = kTcK + 2;

/*
 * One row a thread: centred, scaled FP16 coordinates (zero padded), and
 * (P, N) of the bound.  A zero vector under cosine (NaN unit row) gets
 * P = +inf: it is never a candidate.  Each warp stages its 32 rows' FP16
 * values of one K step in shared memory and writes them row by row (16
 * lanes a row), so that the row-major stores are contiguous; the sums run
 * over k in order, as one thread's loop.
 */
__global__ void __launch_bounds__(kTcThreads)
convert_kernel(const double *coords, uint32_t n, const double *norms,
			   const double *mean, TcParams p, double r2, double delta,
			   double shrink, __half *rows, TcBound *pn)
{
	__shared__ __align__(16) __half tile[kTcThreads / 32][32][kConvPad];
	const int	lane = (int) (threadIdx.x & 31),
				w = (int) (threadIdx.x >> 5);
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	const uint64_t row0 = i - (uint64_t) lane;	/* the warp's first row */
	const bool	live = i < n;
	double		n2 = 0.0,
				a2 = 0.0,
				e2 = 0.0;
	bool		bad = false;

	for (int k0 = 0; k0 < p.pdim; k0 += kTcK)
	{
		for (int kk = 0; kk < kTcK; kk++)
		{
			const int	k = k0 + kk;
			double		v = 0.0;

			if (live && k < p.dim)
			{
				v = tc_coord(coords, n, norms, mean, p.scale, k, (uint32_t) i);
				if (!isfinite(v))
				{
					bad = true;
					v = 0.0;
				}
			}
			__half		h = __double2half(v);
			double		x = (double) __half2float(h);

			tile[w][lane][kk] = h;
			n2 += v * v;
			a2 += x * x;
			e2 += (x - v) * (x - v);	/* x - v is exact (Sterbenz, or x = 0) */
		}
		__syncwarp();
		for (int r = lane >> 4; r < 32; r += 2)
		{
			const uint64_t row = row0 + (uint64_t) r;
			const int	c = (lane & 15) * 2;

			if (row < n)
				*reinterpret_cast<__half2 *>(rows + row * p.pdim + k0 + c) =
					*reinterpret_cast<const __half2 *>(&tile[w][r][c]);
		}
		__syncwarp();
	}
	if (!live)
		return;

	/* the sums of squares err by at most pdim 2^-53 relatively */
	double		pv = n2 * 0.5 - delta * n2 - r2 * 0.25;
	double		av = sqrt(a2) * (1.0 + 1e-12);
	double		al = sqrt(a2) * (1.0 - 1e-12);
	double		ev = sqrt(e2) * (1.0 + 1e-12);

	/*
	 * Cosine of a row whose squared norm is tiny or huge: the canonical
	 * product of norms may underflow or overflow, so only the canonical
	 * computation can tell; such a row is a candidate with every row.
	 */
	if (norms && norms[i] > 0.0 && !(norms[i] > 0x1p-500 && norms[i] < 0x1p500))
		pn[i] = make_float4(-INFINITY, 0.0f, 0.0f, 0.0f);
	else if (bad)
		pn[i] = tc_bound_none();
	else
		pn[i] = make_float4(__double2float_rd(pv), __double2float_ru(av + ev),
							__double2float_rd(al * shrink), 0.0f);
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


/*
 * The (probe, build) tile of this block.  Blocks are numbered along runs
 * of `group` probe tiles, build tile by build tile, so that the blocks
 * resident at once share a few probe and build tiles in L2 instead of
 * streaming every build tile once per probe tile.
 */
__device__ __forceinline__ void
tile_of(uint32_t nx, uint32_t ny, uint32_t group, const uint32_t *list, uint32_t *ty,
		uint32_t *tx)
{
	if (list)
	{
		const uint32_t v = list[blockIdx.x];

		*ty = v / nx;
		*tx = v % nx;
		return;
	}

	const uint32_t per = group * nx;
	const uint32_t g = blockIdx.x / per;
	const uint32_t first = g * group;
	const uint32_t gs = min(group, ny - first);
	const uint32_t r = blockIdx.x - g * per;

	*ty = first + r % gs;
	*tx = r / gs;
}

/*
 * The bound's test (eps_tc.cuh) for a pair with FP32 dot product dot and
 * per-row constants a, b (P, C, A'): false only where the pair cannot
 * join.  Every step rounds the right-hand side down.
 */
__device__ __forceinline__ bool
may_join(float dot, TcBound a, TcBound b)
{
	float		rhs = __fadd_rd(__fsub_rd(__fadd_rd(a.x, b.x), __fmul_ru(a.y, b.y)),
								__fmul_rd(a.z, b.z));

	return dot >= rhs;
}

/*
 * Append the warp's kept pairs (one a lane at most) as (row - p0, col)
 * keys: one atomic a warp.  Keys past cap are counted, not written.
 */
__device__ __forceinline__ void
append_kept(bool keep, uint32_t row, uint32_t col, uint32_t p0,
			unsigned long long *keys, unsigned long long cap,
			unsigned long long *count, int lane)
{
	tc_warp_append<unsigned long long>(keep, ((unsigned long long) (row - p0) << 32) | col,
									   keys, cap, count, lane);
}

/*
 * The first probe row *pt and build row *jt of this block's tile of S
 * (tile_of over the tiles of [p0, p1) x nbuild build rows); false where a
 * self-join's tile holds no pair (every build row precedes every probe row).
 */
template <bool SELF, class S>
__device__ __forceinline__ bool
block_tile(uint32_t nbuild, uint32_t p0, uint32_t p1, uint32_t group, const uint32_t *list,
		   uint32_t *pt, uint32_t *jt)
{
	uint32_t	ty,
				tx;

	tile_of((nbuild + S::BN - 1) / S::BN, (p1 - p0 + S::BM - 1) / S::BM, group, list, &ty,
			&tx);
	*pt = p0 + ty * S::BM;
	*jt = tx * S::BN;
	return !(SELF && *jt + S::BN - 1 <= *pt);
}

/*
 * A cp.async pipeline's first PRE stages in flight, one commit group each:
 * load(stage, k) stages K step k, for the steps there are of nk.
 */
template <int PRE, typename Load>
__device__ __forceinline__ void
pipeline_start(int nk, Load load)
{
#pragma unroll
	for (int st = 0; st < PRE; st++)
	{
		if (st < nk)
			load(st, st);
		asm volatile("cp.async.commit_group;\n"::);
	}
}

/* K step kn (where kn < nk) into stage kn % ST, and its commit group. */
template <int ST, typename Load>
__device__ __forceinline__ void
pipeline_refill(int kn, int nk, Load load)
{
	if (kn < nk)
		load(kn % ST, kn);
	asm volatile("cp.async.commit_group;\n"::);
}

/*
 * The pairs of an n8 fragment that the bound cannot rule out, as bits
 * bit0 .. bit0 + 3: acc its four dot products, rows row and row + 8 (with
 * constants rp[0], rp[1]), columns col and col + 1 (b0, b1).
 */
template <bool SELF>
__device__ __forceinline__ uint32_t
fragment_kept(const float *acc, const TcBound *rp, TcBound b0, TcBound b1, uint32_t row,
			  uint32_t col, int bit0)
{
	uint32_t	bits = 0;

#pragma unroll
	for (int e = 0; e < 4; e++)
	{
		const uint32_t r = row + (e >> 1) * 8;
		const uint32_t c = col + (e & 1);

		if (may_join(acc[e], rp[e >> 1], (e & 1) ? b1 : b0) && !(SELF && c <= r))
			bits |= 1u << (bit0 + e);
	}
	return bits;
}

/* Append the kept pairs of an n8 fragment (fragment_kept's bits in kept). */
__device__ __forceinline__ void
append_fragment(uint32_t kept, int bit0, uint32_t row, uint32_t col, uint32_t p0,
				unsigned long long *keys, unsigned long long cap, unsigned long long *count,
				int lane)
{
#pragma unroll
	for (int e = 0; e < 4; e++)
		append_kept((kept >> (bit0 + e)) & 1, row + (e >> 1) * 8, col + (e & 1), p0, keys, cap,
					count, lane);
}

/*
 * A shape of the filter kernel: a block computes a BM x BN tile of dot
 * products (BM probe rows, BN build rows) with warps of WM x WN, K in
 * steps of KS through ST shared-memory stages; MINB blocks a
 * multiprocessor.  Rows in shared memory are padded by 16 bytes, so the
 * ldmatrix reads of eight rows hit eight different bank groups.
 */
template <int BM_, int BN_, int WM_, int WN_, int KS_, int ST_, int MINB_>
struct TcShape
{
	static constexpr int BM = BM_,
				BN = BN_,
				WM = WM_,
				WN = WN_,
				KS = KS_,
				ST = ST_,
				MINB = MINB_;
	static constexpr int WARPS_N = BN / WN;
	static constexpr int THREADS = (BM / WM) * WARPS_N * 32;
	static constexpr int PAD = KS + 8;	/* halves per shared-memory row */
	static constexpr int MI = WM / 16;	/* m16 fragments a warp */
	static constexpr int NI = WN / 8;	/* n8 fragments a warp */
	static constexpr size_t SMEM = (size_t) ST * (BM + BN) * PAD * sizeof(__half);

	static_assert(BM == kTcTile, "probe tiles are kTcTile rows (eps_gpu.cu)");
	static_assert(WN % 16 == 0 && NI * 4 <= 32, "a warp's row of pairs fits 32 bits");
	static_assert(KS % 16 == 0, "K steps of whole m16n8k16 products");
};

/*
 * Stage K columns [k0, k0 + KS) of ROWS rows starting at row0; rows past
 * nrows and columns past pdim (the last step of a KS that does not divide
 * the padded dimension) are zero-filled.
 */
template <class S, int ROWS>
__device__ __forceinline__ void
load_tile(__half (*dst)[S::PAD], const __half *rows, uint32_t row0, uint32_t nrows,
		  int pdim, int k0)
{
#pragma unroll
	for (int c = threadIdx.x; c < ROWS * (S::KS / 8); c += S::THREADS)
	{
		int			r = c / (S::KS / 8),
					col = k0 + (c % (S::KS / 8)) * 8;
		uint32_t	row = row0 + r;
		bool		valid = row < nrows && col < pdim;
		const __half *src = rows + (valid ? (size_t) row * pdim + col : 0);

		cp_async16(&dst[r][col - k0], src, valid);
	}
}

/*
 * One BM x BN tile of (probe, build) pairs: blockIdx.y the probe tile
 * within [p0, p1), blockIdx.x the build tile.  An ST-stage cp.async
 * pipeline, one barrier a K step.
 */
template <bool SELF, class S>
__global__ void __launch_bounds__(S::THREADS, S::MINB)
filter_kernel(TcSide probe, TcSide build, TcParams p, uint32_t p0, uint32_t p1,
			  unsigned long long *keys, unsigned long long cap,
			  unsigned long long *count, uint32_t group, const uint32_t *list)
{
	extern __shared__ __align__(16) unsigned char smem[];
	__half		(*sa)[S::PAD] = reinterpret_cast<__half (*)[S::PAD]>(smem);
	__half		(*sb)[S::PAD] = sa + S::ST * S::BM;
	uint32_t	pt,
				jt;

	if (!block_tile<SELF, S>(build.n, p0, p1, group, list, &pt, &jt))
		return;

	const int	warp = threadIdx.x / 32,
				lane = threadIdx.x % 32;
	const int	wm = (warp / S::WARPS_N) * S::WM,
				wn = (warp % S::WARPS_N) * S::WN;
	float		acc[S::MI][S::NI][4];

#pragma unroll
	for (int mi = 0; mi < S::MI; mi++)
#pragma unroll
		for (int ni = 0; ni < S::NI; ni++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[mi][ni][e] = 0.0f;

	const int	nk = (p.pdim + S::KS - 1) / S::KS;
	auto		load = [&](int st, int k) {
		load_tile<S, S::BM>(sa + st * S::BM, probe.rows, pt, p1, p.pdim, k * S::KS);
		load_tile<S, S::BN>(sb + st * S::BN, build.rows, jt, build.n, p.pdim, k * S::KS);
	};

	/* the first ST - 1 stages in flight */
	pipeline_start<S::ST - 1>(nk, load);
	for (int kt = 0; kt < nk; kt++)
	{
		const int	s = kt % S::ST;

		asm volatile("cp.async.wait_group %0;\n"::"n"(S::ST - 2));
		__syncthreads();
		/* refill the stage the previous step read (all are past it now) */
		pipeline_refill<S::ST>(kt + S::ST - 1, nk, load);

		const __half (*ta)[S::PAD] = sa + s * S::BM + wm;
		const __half (*tb)[S::PAD] = sb + s * S::BN + wn;

#pragma unroll
		for (int kk = 0; kk < S::KS; kk += 16)
		{
			uint32_t	af[S::MI][4],
						bf[S::NI][2];

#pragma unroll
			for (int mi = 0; mi < S::MI; mi++)
				ldmatrix_x4(af[mi], &ta[mi * 16 + (lane % 16)][kk + (lane / 16) * 8]);
#pragma unroll
			for (int nj = 0; nj < S::NI / 2; nj++)
			{
				uint32_t	r[4];

				ldmatrix_x4(r, &tb[nj * 16 + (lane & 7) + ((lane >> 4) << 3)]
							[kk + ((lane >> 3) & 1) * 8]);
				bf[nj * 2][0] = r[0];
				bf[nj * 2][1] = r[1];
				bf[nj * 2 + 1][0] = r[2];
				bf[nj * 2 + 1][1] = r[3];
			}
#pragma unroll
			for (int mi = 0; mi < S::MI; mi++)
#pragma unroll
				for (int ni = 0; ni < S::NI; ni++)
					mma16816(acc[mi][ni], af[mi], bf[ni]);
		}
	}
	asm volatile("cp.async.wait_group 0;\n"::);

	/* epilogue: keep the pairs the bound cannot rule out */
	TcBound		rp[S::MI][2],
				rb[S::NI][2];

#pragma unroll
	for (int mi = 0; mi < S::MI; mi++)
#pragma unroll
		for (int h = 0; h < 2; h++)
		{
			uint32_t	row = pt + wm + mi * 16 + lane / 4 + h * 8;

			rp[mi][h] = row < p1 ? probe.pn[row] : tc_bound_none();
		}
#pragma unroll
	for (int ni = 0; ni < S::NI; ni++)
#pragma unroll
		for (int h = 0; h < 2; h++)
		{
			uint32_t	col = jt + wn + ni * 8 + (lane % 4) * 2 + h;

			rb[ni][h] = col < build.n ? build.pn[col] : tc_bound_none();
		}

	/* which of the thread's pairs to keep: a bit each, a word per mi */
	uint32_t	kept[S::MI];
	bool		any = false;

#pragma unroll
	for (int mi = 0; mi < S::MI; mi++)
	{
		kept[mi] = 0;
#pragma unroll
		for (int ni = 0; ni < S::NI; ni++)
			kept[mi] |= fragment_kept<SELF>(acc[mi][ni], rp[mi], rb[ni][0], rb[ni][1],
											pt + wm + mi * 16 + lane / 4,
											jt + wn + ni * 8 + (lane % 4) * 2, ni * 4);
		any |= kept[mi] != 0;
	}
	/* most tiles keep nothing: one vote, then the appends */
	if (!__any_sync(0xffffffffu, any))
		return;
#pragma unroll
	for (int mi = 0; mi < S::MI; mi++)
#pragma unroll
		for (int ni = 0; ni < S::NI; ni++)
			append_fragment(kept[mi], ni * 4, pt + wm + mi * 16 + lane / 4,
							jt + wn + ni * 8 + (lane % 4) * 2, p0, keys, cap, count, lane);
}

/*
 * Launch one shape S of a filter kernel (self or not) over the tiles of
 * [p0, p1) x build (or the nlist of them that list names), its dynamic
 * shared memory asked for on this device.
 */
template <class S, class Kernel>
void
launch_shape(Kernel self_kernel, Kernel kernel, const char *name, const TcSide &probe,
			 const TcSide &build, const TcParams &p, bool self, uint32_t p0, uint32_t p1,
			 unsigned long long *keys, unsigned long long cap, unsigned long long *count,
			 cudaStream_t st, uint32_t group, const uint32_t *list, uint32_t nlist)
{
	const uint32_t nx = (build.n + S::BN - 1) / S::BN,
				ny = (p1 - p0 + S::BM - 1) / S::BM;
	Kernel		k = self ? self_kernel : kernel;
	const uint32_t nblocks = list ? nlist : nx * ny;

	static_assert(S::BN == kTcTile, "tile lists name kTcTile x kTcTile tiles");
	if (nblocks == 0)
		return;
	SJGPU_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
									 (int) S::SMEM));
	k<<<nblocks, S::THREADS, S::SMEM, st>>>(probe, build, p, p0, p1, keys, cap, count, group,
											 list);
	::sjgpu::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/* Launch one shape of filter_kernel (mma.sync). */
template <class S>
void
launch_filter(const TcSide &probe, const TcSide &build, const TcParams &p, bool self,
			  uint32_t p0, uint32_t p1, unsigned long long *keys, unsigned long long cap,
			  unsigned long long *count, cudaStream_t st, uint32_t group = kTcGroup,
			  const uint32_t *list = nullptr, uint32_t nlist = 0)
{
	launch_shape<S>(filter_kernel<true, S>, filter_kernel<false, S>, "launch of filter_kernel",
					probe, build, p, self, p0, p1, keys, cap, count, st, group, list, nlist);
}

/*
 * The Hopper filter: wgmma (sm_90a) reads both operands from shared memory,
 * a warpgroup computing 64 x BN dot products per instruction.  K steps of
 * 64 halves: a tile row is 128 bytes, stored in the 128-byte swizzled
 * layout (its 16-byte chunk c at c ^ (row % 8)), 8-row atoms of 1024
 * bytes, so the tensor cores and cp.async meet no bank conflict.  One
 * wgmma group stays in flight while the next stage is waited for.
 */
template <int BN_, int ST_, int MINB_>
struct WgShape
{
	static constexpr int BM = kTcTile,
				BN = BN_,
				KS = 64,
				ST = ST_,
				MINB = MINB_;
	static constexpr int THREADS = 256;	/* two warpgroups of 64 probe rows */
	static constexpr size_t STAGE = (size_t) (BM + BN) * KS;	/* halves */
	static constexpr size_t SMEM = ST * STAGE * sizeof(__half) + 1024;	/* + alignment */

	static_assert(BN == 128, "wgmma n128 (n256 measured slower: spills)");
	static_assert(ST >= 3, "a stage computing, one in flight, one loading");
};

/* The sm_90a pieces (the other device passes would warn of them unused). */
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* D[64 x 128] += A[64 x 16] B[16 x 128], both K-major in shared memory. */
__device__ __forceinline__ void
wgmma_n128(float (*d)[4], uint64_t da, uint64_t db)
{
	asm volatile("{\n"
				 ".reg .pred p;\n"
				 "setp.ne.b32 p, %66, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
				 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
				 "%64, %65, p, 1, 1, 0, 0;\n"
				 "}\n"
				 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
				 : "l"(da), "l"(db), "r"(1));
}

/* A shared-memory matrix descriptor: K-major, 128-byte swizzle. */
__device__ __forceinline__ uint64_t
wg_desc(const __half *p)
{
	uint32_t	addr = (uint32_t) __cvta_generic_to_shared(p);

	return (uint64_t) ((addr & 0x3FFFF) >> 4) |
		((uint64_t) 1 << 16) |	/* leading byte offset: unused here */
		((uint64_t) (1024 >> 4) << 32) |	/* 8-row atoms 1024 bytes apart */
		((uint64_t) 1 << 62);	/* 128-byte swizzle */
}

/* Keep the compiler from moving accumulator accesses across wgmma waits. */
__device__ __forceinline__ void
wg_fence_acc(float &r)
{
	asm volatile("" : "+f"(r)::"memory");
}

/* wg_fence_acc on every accumulator of a warp's part of a 64 x BN tile. */
template <int BN>
__device__ __forceinline__ void
wg_fence_tile(float (*acc)[4])
{
#pragma unroll
	for (int ni = 0; ni < BN / 8; ni++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			wg_fence_acc(acc[ni][e]);
}

#endif

/*
 * Stage K columns [k0, k0 + 64) of ROWS rows starting at row0 into the
 * swizzled layout; eight threads read a row's 128 bytes.
 */
template <class S, int ROWS>
__device__ __forceinline__ void
wg_load_tile(__half *dst, const __half *rows, uint32_t row0, uint32_t nrows, int pdim,
			 int k0)
{
#pragma unroll
	for (int c = threadIdx.x; c < ROWS * 8; c += S::THREADS)
	{
		int			r = c >> 3,
					ch = c & 7;
		uint32_t	row = row0 + r;
		int			col = k0 + ch * 8;
		bool		valid = row < nrows && col < pdim;
		const __half *src = rows + (valid ? (size_t) row * pdim + col : 0);

		cp_async16(dst + r * 64 + ((ch ^ (r & 7)) * 8), src, valid);
	}
}

/* The same tile of pairs as filter_kernel, on wgmma. */
template <bool SELF, class S>
__global__ void __launch_bounds__(S::THREADS, S::MINB)
wg_filter_kernel(TcSide probe, TcSide build, TcParams p, uint32_t p0, uint32_t p1,
				 unsigned long long *keys, unsigned long long cap,
				 unsigned long long *count, uint32_t group, const uint32_t *list)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	extern __shared__ __align__(16) unsigned char wsmem[];
	__half	   *sh = reinterpret_cast<__half *>(((uintptr_t) wsmem + 1023) & ~(uintptr_t) 1023);
	uint32_t	pt,
				jt;

	if (!block_tile<SELF, S>(build.n, p0, p1, group, list, &pt, &jt))
		return;

	const int	wg = threadIdx.x / 128,
				warp = (threadIdx.x / 32) % 4,
				lane = threadIdx.x % 32;
	float		acc[S::BN / 8][4];

#pragma unroll
	for (int ni = 0; ni < S::BN / 8; ni++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			acc[ni][e] = 0.0f;

	const int	nk = (p.pdim + S::KS - 1) / S::KS;
	auto		load = [&](int st, int k) {
		__half	   *d = sh + st * S::STAGE;

		wg_load_tile<S, S::BM>(d, probe.rows, pt, p1, p.pdim, k * S::KS);
		wg_load_tile<S, S::BN>(d + S::BM * S::KS, build.rows, jt, build.n, p.pdim, k * S::KS);
	};

	/* ST - 2 stages loading: one more is computing, one may still be read */
	pipeline_start<S::ST - 2>(nk, load);
	for (int kt = 0; kt < nk; kt++)
	{
		asm volatile("cp.async.wait_group %0;\n"::"n"(S::ST - 3));
		/* the tensor cores read what cp.async wrote: the async proxy */
		asm volatile("fence.proxy.async.shared::cta;\n"::: "memory");
		/* and every wgmma of step kt - 2 (stage kt + ST - 2) is complete */
		__syncthreads();
		pipeline_refill<S::ST>(kt + S::ST - 2, nk, load);

		const __half *ta = sh + (kt % S::ST) * S::STAGE + (size_t) wg * 64 * S::KS;
		const __half *tb = sh + (kt % S::ST) * S::STAGE + (size_t) S::BM * S::KS;

		wg_fence_tile<S::BN>(acc);
		asm volatile("wgmma.fence.sync.aligned;\n"::: "memory");
#pragma unroll
		for (int kk = 0; kk < S::KS; kk += 16)
		{
			/* k16 = 32 bytes further along the (swizzled) rows */
			uint64_t	da = wg_desc(ta + kk),
						db = wg_desc(tb + kk);

			wgmma_n128(acc, da, db);
		}
		asm volatile("wgmma.commit_group.sync.aligned;\n"::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 1;\n"::: "memory");
		wg_fence_tile<S::BN>(acc);
	}
	asm volatile("wgmma.wait_group.sync.aligned 0;\n"::: "memory");
	wg_fence_tile<S::BN>(acc);
	asm volatile("cp.async.wait_group 0;\n"::);

	/* epilogue: as filter_kernel's; a warp holds 16 probe rows */
	const uint32_t rbase = pt + wg * 64 + warp * 16 + lane / 4;
	TcBound		rp[2];
	uint32_t	kept[S::BN / 64];
	bool		any = false;

#pragma unroll
	for (int h = 0; h < 2; h++)
		rp[h] = rbase + h * 8 < p1 ? probe.pn[rbase + h * 8] : tc_bound_none();
#pragma unroll
	for (int w = 0; w < S::BN / 64; w++)
	{
		kept[w] = 0;
#pragma unroll
		for (int nn = 0; nn < 8; nn++)
		{
			const int	ni = w * 8 + nn;
			const uint32_t c0 = jt + ni * 8 + (lane % 4) * 2;
			const TcBound b0 = c0 < build.n ? build.pn[c0] : tc_bound_none(),
						b1 = c0 + 1 < build.n ? build.pn[c0 + 1] : tc_bound_none();

			kept[w] |= fragment_kept<SELF>(acc[ni], rp, b0, b1, rbase, c0, nn * 4);
		}
		any |= kept[w] != 0;
	}
	if (!__any_sync(0xffffffffu, any))
		return;
#pragma unroll
	for (int ni = 0; ni < S::BN / 8; ni++)
		append_fragment(kept[ni / 8], (ni % 8) * 4, rbase, jt + ni * 8 + (lane % 4) * 2, p0,
						keys, cap, count, lane);
#endif
}

/* Launch one shape of wg_filter_kernel (sm_90a only). */
template <class S>
void
launch_wg_filter(const TcSide &probe, const TcSide &build, const TcParams &p, bool self,
				 uint32_t p0, uint32_t p1, unsigned long long *keys, unsigned long long cap,
				 unsigned long long *count, cudaStream_t st, uint32_t group = kTcGroup,
				 const uint32_t *list = nullptr, uint32_t nlist = 0)
{
	launch_shape<S>(wg_filter_kernel<true, S>, wg_filter_kernel<false, S>,
					"launch of wg_filter_kernel", probe, build, p, self, p0, p1, keys, cap,
					count, st, group, list, nlist);
}

/*
 * The shapes in use, chosen with test/bench/tc_bench.cu (see
 * test/bench/BENCHMARKS.md): wgmma where the device runs the sm_90a image,
 * else mma.sync.  TcShapeOld is the earlier mma.sync kernel, kept for the
 * benchmark's comparison.
 */
using TcShapeOld = TcShape<128, 128, 64, 32, 32, 3, 2>;
using TcShapeMma = TcShape<128, 128, 64, 32, 64, 3, 2>;
using WgShapeMain = WgShape<128, 3, 2>;

/* Writes 1 where the sm_90a image (wgmma) is the one loaded. */
__global__ void
wg_probe_kernel(int *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	*out = 1;
#else
	*out = 0;
#endif
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

}								/* namespace */

void
tc_norms(const double *coords, uint32_t n, int dim, double *out, cudaStream_t st)
{
	if (n == 0)
		return;
	norms_kernel<<<tc_blocks(n), kTcThreads, 0, st>>>(coords, n, dim, out);
	SJGPU_CHECK_LAUNCH("norms_kernel");
}

void
tc_mean(const double *coords, uint32_t n, int dim, const double *norms, double *mean,
		cudaStream_t st)
{
	mean_kernel<<<dim, kTcThreads, 0, st>>>(coords, n, norms, mean);
	SJGPU_CHECK_LAUNCH("mean_kernel");
}

void
tc_maxabs(const double *coords, uint32_t n, int dim, const double *norms,
		  const double *mean, double *out, cudaStream_t st)
{
	if (n == 0)
		return;
	maxabs_kernel<<<dim, kTcThreads, 0, st>>>(coords, n, norms, mean, out);
	SJGPU_CHECK_LAUNCH("maxabs_kernel");
}

void
tc_params(int dim, int metric, double eps, double maxabs, TcParams *p)
{
	const double pd = (double) tc_padded_dim(dim);
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
	if (metric == SJ_METRIC_COSINE)
		p->r2 = (2.0 * eps * (1.0 + 1e-9) + 1e-9) * p->scale * p->scale;
	else
	{
		/*
		 * Underflow: the canonical squares and sums lose at most 2^-1075
		 * each (absolute), the centred differences at most 2^-1075 per
		 * coordinate; both widen R.
		 */
		int			es = std::ilogb(p->scale);
		double		r = (eps * (1.0 + 1e-9) + std::sqrt(pd) * 0x1p-1073) * p->scale;

		p->r2 = r * r * (1.0 + 1e-9) + std::ldexp(pd + 2.0, 2 * es - 1074);
	}
}

void
tc_convert(const double *coords, uint32_t n, const double *norms, const double *mean,
		   const TcParams &p, TcSide *side, cudaStream_t st)
{
	const double pd = (double) p.pdim;
	const double gamma = (pd + 32.0) * std::ldexp(1.0, -22);
	const double shrink = std::sqrt(1.0 - gamma) * (1.0 - 1e-12);
	const double delta = pd * std::ldexp(1.0, -52) + std::ldexp(1.0, -40);

	side->n = n;
	if (n == 0)
		return;
	convert_kernel<<<tc_blocks(n), kTcThreads, 0, st>>>(coords, n, norms, mean, p, p.r2,
														delta, shrink, side->rows,
														side->pn);
	SJGPU_CHECK_LAUNCH("convert_kernel");
}

bool
tc_wgmma()
{
	/* per device: 0 not yet asked, 1 no, 2 yes */
	static std::atomic<int> known[64];
	int			dev;

	SJGPU_CHECK(cudaGetDevice(&dev));
	if (dev < 0 || dev >= 64)
		return false;
	if (known[dev].load() == 0)
	{
		int			yes = 0,
				   *d = nullptr;

		SJGPU_CHECK(cudaMalloc(&d, sizeof(int)));
		wg_probe_kernel<<<1, 1>>>(d);
		cudaError_t err = cudaGetLastError();

		if (err == cudaSuccess)
			err = cudaMemcpy(&yes, d, sizeof(int), cudaMemcpyDeviceToHost);
		(void) cudaFree(d);
		SJGPU_CHECK(err);
		known[dev].store(yes ? 2 : 1);
	}
	return known[dev].load() == 2;
}

void
tc_filter(const TcSide &probe, const TcSide &build, const TcParams &p, bool self,
		  uint32_t p0, uint32_t p1, unsigned long long *keys, unsigned long long cap,
		  unsigned long long *count, const uint32_t *list, uint32_t nlist, cudaStream_t st)
{
	SJGPU_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), st));
	if (p1 <= p0 || build.n == 0)
		return;
	if (tc_wgmma())
		launch_wg_filter<WgShapeMain>(probe, build, p, self, p0, p1, keys, cap, count, st,
									  kTcGroup, list, nlist);
	else
		launch_filter<TcShapeMma>(probe, build, p, self, p0, p1, keys, cap, count, st,
								  kTcGroup, list, nlist);
}

void
tc_starts(const unsigned long long *keys, unsigned long long nkeys, uint32_t np,
		  uint32_t *start, cudaStream_t st)
{
	starts_kernel<<<tc_blocks((uint64_t) np + 1), kTcThreads, 0, st>>>(keys, nkeys, np,
																	   start);
	SJGPU_CHECK_LAUNCH("starts_kernel");
}

}								/* namespace sjgpu */
