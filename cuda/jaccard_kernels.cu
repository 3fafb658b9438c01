/*
 * jaccard_kernels.cu
 *		The GPU jaccard engine's device code: the device helpers, the index
 *		and probe kernels of the strategies (prefix-block, brute-force
 *		overlap, bitmap) and co-processing's verification, with the
 *		JaccardDevice methods that launch them (see jaccard_gpu.cu).
 *
 * Every pair is decided by the rules of sjjrules.h, as on the CPU.
 */
#include <cub/cub.cuh>

#include "jaccard_gpu.cuh"

namespace sjjaccard_gpu
{

/* ------------------------------------------------------------------------
 * Device helpers
 * ------------------------------------------------------------------------ */

/* True when two sorted lists share no token. */
__device__ __forceinline__ bool
dev_disjoint(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	uint32_t	i = 0,
				k = 0;

	while (i < na && k < nb)
	{
		uint32_t	x = a[i],
					y = b[k];

		if (x == y)
			return false;
		if (x < y)
			i++;
		else
			k++;
	}
	return true;
}

/* Member pairs that distinct pair (u, v) stands for. */
__device__ __forceinline__ unsigned long long
dev_weight(const ProbeArgs &a, uint32_t u, uint32_t v)
{
	return (unsigned long long) sj_jaccard_pair_weight(a.self, a.wl, a.wr, u, v);
}

/* Two-table: do u and v have members on opposite sides? */
__device__ __forceinline__ bool
dev_compatible(const ProbeArgs &a, uint32_t u, uint32_t v)
{
	return a.self || (a.wl[u] && a.wr[v]) || (a.wr[u] && a.wl[v]);
}

/*
 * Record the hits of a warp (all 32 lanes call this together): one atomic
 * per warp reserves the slots; slots past the capacity are not written, the
 * counter still tells the host how many there were.
 */
__device__ __forceinline__ void
dev_emit(const ProbeArgs &a, bool hit, uint32_t u, uint32_t v, double sim,
		 unsigned long long &local_count)
{
	unsigned	mask = __ballot_sync(0xffffffffu, hit);
	int			lane = threadIdx.x & (kWarp - 1);

	if (mask == 0)
		return;
	if (a.count_only)
	{
		if (hit)
			local_count += dev_weight(a, u, v);
		return;
	}
	{
		int			leader = __ffs(mask) - 1;
		unsigned long long base = 0;

		if (lane == leader)
			base = atomicAdd(&a.counter[0], (unsigned long long) __popc(mask));
		base = __shfl_sync(0xffffffffu, base, leader);
		if (hit)
		{
			unsigned long long idx = base + __popc(mask & ((1u << lane) - 1u));

			if (idx < a.cap)
			{
				a.out_u[idx] = u;
				a.out_v[idx] = v;
				a.out_sim[idx] = sim;
			}
		}
	}
}

/*
 * The decision on a pair whose overlap is inter (0 or below alpha: no):
 * the CPU engine's quotient and double comparison, so that the
 * similarity is the same bits on both.
 */
__device__ __forceinline__ bool
dev_similar(const ProbeArgs &a, uint32_t inter, uint32_t alpha, uint32_t lu,
			uint32_t lv, double &sim)
{
	if (inter == 0 || inter < alpha)
		return false;
	sim = sj_jaccard_sim(inter, lu, lv);
	return sim >= a.threshold;
}

/* A thread's pairs, added to the count form's total once at its end. */
__device__ __forceinline__ void
dev_count_flush(const ProbeArgs &a, unsigned long long local_count)
{
	if (a.count_only && local_count)
		atomicAdd(&a.counter[1], local_count);
}

/* First entry in post[lo, hi) whose set is >= id. */
__device__ __forceinline__ uint64_t
dev_lower_bound(const uint64_t *post, uint64_t lo, uint64_t hi, uint32_t id)
{
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if ((uint32_t) (post[mid] >> 32) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------ */

/* Index entries of sets [v0, v1): token -> set << 32 | position. */
__global__ void
index_fill_kernel(const uint64_t *off, const uint32_t *tok,
				  const uint32_t *minov, const uint64_t *ent_off,
				  uint32_t v0, uint32_t v1, int prefix_only,
				  uint32_t *keys, uint64_t *vals)
{
	uint32_t	stride = gridDim.x * blockDim.x;

	for (uint32_t v = v0 + blockIdx.x * blockDim.x + threadIdx.x; v < v1; v += stride)
	{
		uint64_t	b = off[v];
		uint32_t	len = (uint32_t) (off[v + 1] - b);
		uint32_t	n = prefix_only ? sj_jaccard_index_prefix(minov, len) : len;
		uint64_t	dst = ent_off[v - v0];

		for (uint32_t p = 0; p < n; p++)
		{
			keys[dst + p] = tok[b + p];
			vals[dst + p] = ((uint64_t) v << 32) | p;
		}
	}
}

/* List offsets from the sorted keys: list_off[t] = first entry of token t. */
__global__ void
list_offsets_kernel(const uint32_t *keys, uint64_t n, uint32_t universe,
					uint64_t *list_off)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t k = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; k <= n; k += stride)
	{
		int64_t		prev = k == 0 ? -1 : (int64_t) keys[k - 1];
		int64_t		cur = k == n ? (int64_t) universe : (int64_t) keys[k];

		for (int64_t t = prev + 1; t <= cur; t++)
			list_off[t] = k;
	}
}

/*
 * Prefix-filtered probe: one warp per probe set u.  For each probing-prefix
 * token, the warp's lanes take consecutive list entries (sets v in the
 * allowed range); a lane keeps the pair only at its smallest common prefix
 * token, checks the positional bound there, and verifies by merging the
 * rest of both sets.
 */
__global__ void __launch_bounds__(kBlock)
prefix_probe_kernel(ProbeArgs a)
{
	uint32_t	lane = threadIdx.x & (kWarp - 1);
	uint32_t	nwarps = gridDim.x * (blockDim.x / kWarp);
	unsigned long long local_count = 0;

	for (uint32_t u = a.u0 + blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
		 u < a.u1; u += nwarps)
	{
		const uint32_t *tu = a.tok + a.off[u];
		uint32_t	lu = (uint32_t) (a.off[u + 1] - a.off[u]);
		uint32_t	ms = a.minsize[lu];
		uint32_t	lo = max(a.v0, a.size_start[ms]);
		uint32_t	hi = min(a.v1, u);
		uint32_t	plen;

		if (lo >= hi)
			continue;
		plen = sj_jaccard_probe_prefix(a.minov, a.minsize, lu);
		for (uint32_t i = 0; i < plen; i++)
		{
			uint32_t	t = tu[i];
			uint64_t	lb = a.list_off[t],
						le = a.list_off[t + 1];
			uint64_t	s = dev_lower_bound(a.post, lb, le, lo);
			uint64_t	e = dev_lower_bound(a.post, s, le, hi);
			uint32_t	rx = lu - i - 1;

			for (uint64_t base = s; base < e; base += kWarp)
			{
				uint64_t	k = base + lane;
				bool		hit = false;
				uint32_t	v = 0;
				double		sim = 0.0;

				if (k < e)
				{
					uint64_t	pv = a.post[k];
					uint32_t	j = (uint32_t) pv;

					v = (uint32_t) (pv >> 32);
					if (dev_compatible(a, u, v))
					{
						uint64_t	ov = a.off[v];
						uint32_t	lv = (uint32_t) (a.off[v + 1] - ov);
						uint32_t	alpha = a.minov[lu + lv];
						const uint32_t *tv = a.tok + ov;

						if (sj_jaccard_positional(0, rx, lv - j - 1, alpha) &&
							dev_disjoint(tu, i, tv, j))
						{
							uint32_t	inter = 1 + sj_jaccard_overlap(tu + i + 1, rx,
																tv + j + 1, lv - j - 1,
																alpha - 1);

							hit = dev_similar(a, inter, alpha, lu, lv, sim);
						}
					}
				}
				dev_emit(a, hit, u, v, sim, local_count);
			}
		}
	}
	dev_count_flush(a, local_count);
}

/*
 * Brute-force overlap counting: one block per probe set u.  Candidates are
 * taken a window of kWindow sets at a time; every token of u adds 1 to the
 * window counter of each set in its (full) list; then each counter is an
 * exact overlap and is tested.
 */
__global__ void __launch_bounds__(kBlock)
brute_probe_kernel(ProbeArgs a)
{
	__shared__ uint32_t cnt[kWindow];
	uint32_t	lane = threadIdx.x & (kWarp - 1);
	uint32_t	warp = threadIdx.x / kWarp;
	uint32_t	nwarps = blockDim.x / kWarp;
	unsigned long long local_count = 0;

	for (uint32_t u = a.u0 + blockIdx.x; u < a.u1; u += gridDim.x)
	{
		const uint32_t *tu = a.tok + a.off[u];
		uint32_t	lu = (uint32_t) (a.off[u + 1] - a.off[u]);
		uint32_t	lo = max(a.v0, a.size_start[a.minsize[lu]]);
		uint32_t	hi = min(a.v1, u);

		for (uint32_t wb = lo; wb < hi; wb += kWindow)
		{
			uint32_t	wn = min((uint32_t) kWindow, hi - wb);

			for (uint32_t k = threadIdx.x; k < wn; k += blockDim.x)
				cnt[k] = 0;
			__syncthreads();
			for (uint32_t i = warp; i < lu; i += nwarps)
			{
				uint32_t	t = tu[i];
				uint64_t	le = a.list_off[t + 1];
				uint64_t	s = dev_lower_bound(a.post, a.list_off[t], le, wb);

				for (uint64_t k = s + lane; k < le; k += kWarp)
				{
					uint32_t	v = (uint32_t) (a.post[k] >> 32);

					if (v >= wb + wn)
						break;
					atomicAdd(&cnt[v - wb], 1u);
				}
			}
			__syncthreads();
			for (uint32_t base = warp * kWarp; base < wn; base += blockDim.x)
			{
				uint32_t	k = base + lane;
				uint32_t	v = wb + k;
				bool		hit = false;
				double		sim = 0.0;

				if (k < wn && cnt[k] > 0 && dev_compatible(a, u, v))
					hit = dev_similar(a, cnt[k], 1, lu,
									  (uint32_t) (a.off[v + 1] - a.off[v]), sim);
				dev_emit(a, hit, u, v, sim, local_count);
			}
			__syncthreads();
		}
	}
	dev_count_flush(a, local_count);
}

/* Signatures of sets [0, nsets): one thread per (word, set). */
__global__ void
signature_kernel(const uint64_t *off, const uint32_t *tok, uint32_t nsets,
				 uint32_t words, unsigned long long *sig)
{
	uint64_t	n = (uint64_t) nsets * words;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;
	uint32_t	mask = words * 64 - 1;

	for (uint64_t k = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride)
	{
		uint32_t	w = (uint32_t) (k / nsets);
		uint32_t	v = (uint32_t) (k % nsets);
		unsigned long long bits = 0;

		for (uint64_t i = off[v]; i < off[v + 1]; i++)
		{
			uint32_t	b = tok[i] & mask;

			if (b / 64 == w)
				bits |= 1ull << (b % 64);
		}
		sig[k] = bits;
	}
}

/*
 * Bitmap-filtered probe: one warp per probe set u, its signature in shared
 * memory; lanes take consecutive candidates v of the length-filtered range,
 * bound (or, exact signatures, count) the overlap from the signatures, and
 * verify what the bound lets through by a merge.
 */
__global__ void __launch_bounds__(kBlock)
bitmap_probe_kernel(ProbeArgs a)
{
	__shared__ unsigned long long ssig[kBlock / kWarp][kMaxSigWords];
	uint32_t	lane = threadIdx.x & (kWarp - 1);
	uint32_t	wib = threadIdx.x / kWarp;
	uint32_t	nwarps = gridDim.x * (blockDim.x / kWarp);
	unsigned long long *mine = ssig[wib];
	unsigned long long local_count = 0;

	for (uint32_t u = a.u0 + blockIdx.x * (blockDim.x / kWarp) + wib; u < a.u1; u += nwarps)
	{
		const uint32_t *tu = a.tok + a.off[u];
		uint32_t	lu = (uint32_t) (a.off[u + 1] - a.off[u]);
		uint32_t	lo = max(a.v0, a.size_start[a.minsize[lu]]);
		uint32_t	hi = min(a.v1, u);

		if (lo >= hi)
			continue;
		__syncwarp();
		if (lane < a.sig_words)
			mine[lane] = a.sig[(uint64_t) lane * a.nsets + u];
		__syncwarp();
		for (uint32_t base = lo; base < hi; base += kWarp)
		{
			uint32_t	v = base + lane;
			bool		hit = false;
			double		sim = 0.0;

			if (v < hi && dev_compatible(a, u, v))
			{
				uint64_t	ov = a.off[v];
				uint32_t	lv = (uint32_t) (a.off[v + 1] - ov);
				uint32_t	alpha = a.minov[lu + lv];
				uint32_t	bits = 0;
				uint32_t	inter = 0;

				if (a.sig_exact)
				{
					for (uint32_t w = 0; w < a.sig_words; w++)
						bits += __popcll(mine[w] & a.sig[(uint64_t) w * a.nsets + v]);
					inter = bits;
				}
				else
				{
					for (uint32_t w = 0; w < a.sig_words; w++)
						bits += __popcll(mine[w] ^ a.sig[(uint64_t) w * a.nsets + v]);
					if (bits <= lu + lv && (lu + lv - bits) / 2 >= alpha)
						inter = sj_jaccard_overlap(tu, lu, a.tok + ov, lv, alpha);
				}
				hit = dev_similar(a, inter, alpha, lu, lv, sim);
			}
			dev_emit(a, hit, u, v, sim, local_count);
		}
	}
	dev_count_flush(a, local_count);
}

/*
 * Co-processing verification: one thread per candidate pair of
 * cand[u0, u1) (x << 32 | y, from the CPU engine's filters), a merge of the
 * two sorted token lists that stops once the required overlap is out of
 * reach, then the double test of the CPU engine.  Lanes of a warp take
 * consecutive candidates, mostly of one probe set; every lane of a warp
 * runs the same number of rounds (dev_emit is warp-wide).
 */
__global__ void __launch_bounds__(kBlock)
verify_kernel(ProbeArgs a, const uint64_t *cand)
{
	uint32_t	lane = threadIdx.x & (kWarp - 1);
	uint64_t	nwarps = (uint64_t) gridDim.x * (blockDim.x / kWarp);
	uint64_t	warp = (uint64_t) blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
	unsigned long long local_count = 0;

	for (uint64_t base = a.u0 + warp * kWarp; base < a.u1; base += nwarps * kWarp)
	{
		uint64_t	k = base + lane;
		bool		hit = false;
		uint32_t	u = 0,
					v = 0;
		double		sim = 0.0;

		if (k < a.u1)
		{
			uint64_t	pv = cand[k];
			uint64_t	ou,
						ov;
			uint32_t	lu,
						lv,
						alpha,
						inter;

			u = (uint32_t) (pv >> 32);
			v = (uint32_t) pv;
			ou = a.off[u];
			ov = a.off[v];
			lu = (uint32_t) (a.off[u + 1] - ou);
			lv = (uint32_t) (a.off[v + 1] - ov);
			alpha = a.minov[lu + lv];
			inter = sj_jaccard_overlap(a.tok + ou, lu, a.tok + ov, lv, alpha);
			hit = dev_similar(a, inter, alpha, lu, lv, sim);
		}
		dev_emit(a, hit, u, v, sim, local_count);
	}
	dev_count_flush(a, local_count);
}

/*
 * The cost model's token counts (jaccard_plan.cu): a warp a set (its
 * lanes reading consecutive tokens) adds its tokens to hist[0 .. u) (all),
 * hist[u .. 2u) (its indexing prefix) and hist[2u .. 3u) (its probing
 * prefix), u = universe + 1, and the sets of its size range before it to
 * *rt.
 */
__global__ void
model_counts_kernel(const uint64_t *off, const uint32_t *tok, uint32_t nsets, size_t ucnt,
					const uint32_t *minov, const uint32_t *minsize, const uint32_t *size_start,
					uint32_t *hist, unsigned long long *rt)
{
	uint32_t	lane = threadIdx.x & (kWarp - 1);
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) / kWarp,
				nwarps = (uint64_t) gridDim.x * blockDim.x / kWarp;
	unsigned long long r = 0;

	for (uint64_t v = warp; v < nsets; v += nwarps)
	{
		uint64_t	b = off[v];
		uint32_t	len = (uint32_t) (off[v + 1] - b);
		uint32_t	ip = sj_jaccard_index_prefix(minov, len);
		uint32_t	pl = sj_jaccard_probe_prefix(minov, minsize, len);

		for (uint32_t i = lane; i < len; i += kWarp)
		{
			uint32_t	t = tok[b + i];

			atomicAdd(hist + t, 1u);
			if (i < ip)
				atomicAdd(hist + ucnt + t, 1u);
			if (i < pl)
				atomicAdd(hist + 2 * ucnt + t, 1u);
		}
		if (lane == 0)
		{
			uint32_t	lo = size_start[minsize[len]];

			if (v > lo)
				r += v - lo;
		}
	}
	if (lane == 0 && r)
		atomicAdd(rt, r);
}

/* The token counts of the cost model into hist (zeroed) and rt (zeroed). */
void
JaccardDevice::launch_model_counts(uint32_t *hist, unsigned long long *rt)
{
	int			grid = (int) std::min<uint64_t>(div_up<uint64_t>((uint64_t) nsets_ * kWarp,
																 kBlock),
												 (uint64_t) sms_ * 32);

	model_counts_kernel<<<std::max(grid, 1), kBlock, 0, stream_.get()>>>(
		dev_off_, dev_tok_, nsets_, (size_t) universe_ + 1, d_minov_.get(),
		d_minsize_.get(), d_size_start_.get(), hist, rt);
	SJGPU_CHECK_LAUNCH("model_counts_kernel");
}

/*
 * The bitmap pass fraction's sample on the device (jaccard_plan.cu): a
 * thread a pair (u << 32 | v) builds both sets' signatures of `words`
 * words as host_signature does and counts, in *passed, the pairs whose
 * signature bound reaches the required overlap.
 */
__global__ void
pass_sample_kernel(const uint64_t *off, const uint32_t *tok, const uint32_t *minov,
				   const uint64_t *pairs, uint32_t npairs, uint32_t words,
				   unsigned long long *passed)
{
	uint32_t	k = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned	pass = 0;

	if (k < npairs)
	{
		uint32_t	u = (uint32_t) (pairs[k] >> 32),
					v = (uint32_t) pairs[k];
		uint64_t	su[kMaxSigWords],
					sv[kMaxSigWords];
		uint32_t	lu = (uint32_t) (off[u + 1] - off[u]),
					lv = (uint32_t) (off[v + 1] - off[v]),
					bits = 0;

		for (uint32_t w = 0; w < words; w++)
			su[w] = sv[w] = 0;
		for (uint64_t i = off[u]; i < off[u + 1]; i++)
		{
			uint32_t	b = tok[i] & (words * 64 - 1);

			su[b / 64] |= (uint64_t) 1 << (b % 64);
		}
		for (uint64_t i = off[v]; i < off[v + 1]; i++)
		{
			uint32_t	b = tok[i] & (words * 64 - 1);

			sv[b / 64] |= (uint64_t) 1 << (b % 64);
		}
		for (uint32_t w = 0; w < words; w++)
			bits += (uint32_t) __popcll(su[w] ^ sv[w]);
		pass = bits <= lu + lv && (lu + lv - bits) / 2 >= minov[lu + lv];
	}
	pass = __popc(__ballot_sync(0xffffffffu, pass));
	if ((threadIdx.x & (kWarp - 1)) == 0 && pass)
		atomicAdd(passed, (unsigned long long) pass);
}

/* Count into *passed (zeroed) the sample pairs whose signature bound passes. */
void
JaccardDevice::launch_pass_sample(const uint64_t *pairs, uint32_t npairs,
								  unsigned long long *passed)
{
	pass_sample_kernel<<<(unsigned) div_up<uint64_t>(npairs, kBlock), kBlock, 0,
						 stream_.get()>>>(dev_off_, dev_tok_, d_minov_.get(), pairs, npairs,
										  sig_words_, passed);
	SJGPU_CHECK_LAUNCH("pass_sample_kernel");
}

/* Build the inverted index of candidate sets [v0, v1) with CUB. */
void
JaccardDevice::build_index(uint32_t v0, uint32_t v1)
{
	cudaStream_t s = stream_.get();
	uint64_t	n = ent_prefix_[v1] - ent_prefix_[v0];
	double		t0 = sj_now_ms();

	d_post_.reset();
	d_list_off_.reset();
	d_list_off_ = DeviceBuffer<uint64_t>(&budget_, (size_t) universe_ + 2, "index lists");
	if (n == 0)
	{
		SJGPU_CHECK(cudaMemsetAsync(d_list_off_.get(), 0,
									((size_t) universe_ + 2) * sizeof(uint64_t), s));
		d_post_ = DeviceBuffer<uint64_t>(&budget_, 1, "index entries");
		return;
	}
	{
		DeviceBuffer<uint32_t> keys0(&budget_, n, "index keys"),
					keys1(&budget_, n, "index keys");
		DeviceBuffer<uint64_t> vals0(&budget_, n, "index entries"),
					vals1(&budget_, n, "index entries");
		std::vector<uint64_t> rel(v1 - v0);
		size_t		temp_bytes = 0;
		int			end_bit = bits_for(universe_);

		for (uint32_t v = v0; v < v1; v++)
			rel[v - v0] = ent_prefix_[v] - ent_prefix_[v0];
		{
			DeviceBuffer<uint64_t> d_rel = upload(&budget_, rel.data(), rel.size(),
												  "index offsets", s);
			int			grid = (int) std::min<uint64_t>(div_up<uint64_t>(v1 - v0, kBlock),
														 (uint64_t) sms_ * 16);

			index_fill_kernel<<<grid, kBlock, 0, s>>>(dev_off_, dev_tok_,
													  d_minov_.get(), d_rel.get(), v0, v1,
													  strategy_ == Strategy::Prefix,
													  keys0.get(), vals0.get());
			SJGPU_CHECK_LAUNCH("index_fill_kernel");
			SJGPU_CHECK(cudaStreamSynchronize(s));
		}

		cub::DoubleBuffer<uint32_t> k(keys0.get(), keys1.get());
		cub::DoubleBuffer<uint64_t> vv(vals0.get(), vals1.get());

		SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k, vv, (int) n,
													0, end_bit, s));
		{
			/* never a null scratch pointer: CUB would take it for a size query */
			DeviceBuffer<unsigned char> temp(&budget_, temp_bytes + 256, "sort scratch");

			SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, k, vv,
														(int) n, 0, end_bit, s));
			{
				int			grid = (int) std::min<uint64_t>(div_up<uint64_t>(n + 1, kBlock),
															 (uint64_t) sms_ * 32);

				list_offsets_kernel<<<grid, kBlock, 0, s>>>(k.Current(), n, universe_,
															d_list_off_.get());
				SJGPU_CHECK_LAUNCH("list_offsets_kernel");
			}
			SJGPU_CHECK(cudaStreamSynchronize(s));
		}
		/* keep the sorted entries, drop the rest */
		if (vv.Current() == vals0.get())
		{
			d_post_ = std::move(vals0);
			vals1.reset();
		}
		else
		{
			d_post_ = std::move(vals1);
			vals0.reset();
		}
	}
	build_ms_ += sj_now_ms() - t0;
}

/* The kernels' arguments for one piece of work. */
ProbeArgs
JaccardDevice::probe_args(const Work &w) const
{
	ProbeArgs	a;

	a.off = dev_off_;
	a.tok = dev_tok_;
	a.wl = dev_wl_;
	a.wr = self_ ? dev_wl_ : dev_wr_;
	a.minov = d_minov_.get();
	a.minsize = d_minsize_.get();
	a.size_start = d_size_start_.get();
	a.list_off = d_list_off_.get();
	a.post = d_post_.get();
	a.sig = d_sig_.get();
	a.nsets = nsets_;
	a.sig_words = sig_words_;
	a.sig_exact = sig_exact_;
	a.u0 = w.u0;
	a.u1 = w.u1;
	a.v0 = w.v0;
	a.v1 = w.v1;
	a.threshold = threshold_;
	a.self = self_;
	a.count_only = count_only_;
	a.out_u = d_out_u_.get();
	a.out_v = d_out_v_.get();
	a.out_sim = d_out_sim_.get();
	a.cap = cap_;
	a.counter = d_counter_.get();
	return a;
}

/*
 * Launch one piece of work (asynchronously; counter copied back after it)
 * in slot 0 (stream_) or, count_only, slot 1 (stream2_; fetch_counts).
 */
void
JaccardDevice::launch(const Work &w, int slot)
{
	cudaStream_t s = slot ? stream2_.get() : stream_.get();
	ProbeArgs	a = probe_args(w);
	unsigned long long *counter = slot ? d_counter2_.get() : d_counter_.get();
	sjgpu::EventTimer &timer = slot ? kernel_timer2_ : kernel_timer_;

	a.counter = counter;
	SJGPU_CHECK(cudaMemsetAsync(counter, 0, 2 * sizeof(unsigned long long), s));
	timer.start(s);
	if (strategy_ == Strategy::Prefix)
	{
		uint32_t	warps_per_block = kBlock / kWarp;
		int			grid = (int) std::min<uint64_t>(div_up<uint64_t>(w.u1 - w.u0, warps_per_block),
													 (uint64_t) sms_ * 64);

		prefix_probe_kernel<<<grid, kBlock, 0, s>>>(a);
		SJGPU_CHECK_LAUNCH("prefix_probe_kernel");
	}
	else if (strategy_ == Strategy::Bitmap)
	{
		uint32_t	warps_per_block = kBlock / kWarp;
		int			grid = (int) std::min<uint64_t>(div_up<uint64_t>(w.u1 - w.u0, warps_per_block),
													 (uint64_t) sms_ * 64);

		bitmap_probe_kernel<<<grid, kBlock, 0, s>>>(a);
		SJGPU_CHECK_LAUNCH("bitmap_probe_kernel");
	}
	else
	{
		int			grid = (int) std::min<uint64_t>(w.u1 - w.u0, (uint64_t) sms_ * 16);

		brute_probe_kernel<<<grid, kBlock, 0, s>>>(a);
		SJGPU_CHECK_LAUNCH("brute_probe_kernel");
	}
	timer.stop(s);
	SJGPU_CHECK(cudaMemcpyAsync(slot ? h_counter2_.get() : h_counter_.get(), counter,
								2 * sizeof(unsigned long long),
								cudaMemcpyDeviceToHost, s));
	if (slot)
	{
		cur2_ = w;
		cur_work2_ = work_prefix_[w.u1] - work_prefix_[w.u0];
		inflight2_ = true;
	}
	else
	{
		cur_ = w;
		cur_work_ = work_prefix_[w.u1] - work_prefix_[w.u0];
		inflight_ = true;
	}
}

/*
 * Co-processing: verify candidates [w.u0, w.u1) of the device's slot
 * (asynchronously; the counter comes back and batch_done_ is recorded
 * after it).
 */
void
JaccardDevice::launch_verify(const Work &w)
{
	cudaStream_t s = stream_.get();
	ProbeArgs	a = probe_args(w);
	int			grid = (int) std::min<uint64_t>(div_up<uint64_t>(w.u1 - w.u0, kBlock),
												 (uint64_t) sms_ * 32);

	SJGPU_CHECK(cudaMemsetAsync(d_counter_.get(), 0, 2 * sizeof(unsigned long long), s));
	kernel_timer_.start(s);
	verify_kernel<<<std::max(grid, 1), kBlock, 0, s>>>(a, d_cand_[dev_slot_].get());
	SJGPU_CHECK_LAUNCH("verify_kernel");
	kernel_timer_.stop(s);
	SJGPU_CHECK(cudaMemcpyAsync(h_counter_.get(), d_counter_.get(),
								2 * sizeof(unsigned long long),
								cudaMemcpyDeviceToHost, s));
	batch_done_.record(s);
	cur_ = w;
	inflight_ = true;
}

/* The bitmap strategy's signatures of every distinct set, on the device. */
void
JaccardDevice::build_signatures()
{
	cudaStream_t s = stream_.get();
	int			grid = (int) std::min<uint64_t>(div_up<uint64_t>((uint64_t) nsets_ * sig_words_,
															  kBlock),
												 (uint64_t) sms_ * 32);

	d_sig_ = DeviceBuffer<unsigned long long>(&budget_, (size_t) nsets_ * sig_words_,
											  "bitmap signatures");
	signature_kernel<<<grid, kBlock, 0, s>>>(dev_off_, dev_tok_, nsets_,
											 sig_words_, d_sig_.get());
	SJGPU_CHECK_LAUNCH("signature_kernel");
}

}								/* namespace sjjaccard_gpu */
