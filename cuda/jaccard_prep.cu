/*
 * jaccard_prep.cu
 *		The preparation of jaccard_join on the device: the same arrays as the
 *		host's jc_prepare (src/engine/jaccard_prep.c), element for element,
 *		computed with CUB and handed to the host handle, which derives the
 *		bounds and expands pairs exactly as after a host preparation.
 *
 * Steps (all on one stream; every rule is the host's, see jc_prepare):
 *	1. Both inputs' tokens go to the device as one array, their offsets as
 *	   one CSR of 32-bit offsets (sets of the left input first).
 *	2. Token frequencies: a radix sort of all tokens and a run-length
 *	   encoding give the distinct tokens in id order and their counts.
 *	   Ranks come from a radix sort of (count << 32 | index of the token):
 *	   ascending frequency, ties by token id, only tokens that occur; the
 *	   renumbered universe is the number of distinct tokens.
 *	3. Every token is renumbered (a direct map over the input universe when
 *	   that is small next to the input, as on the host, else a binary search
 *	   of the distinct tokens) and every set sorted (CUB's segmented sort:
 *	   tokens within a set are distinct, so stability does not matter).
 *	4. One thread per set hashes its sorted tokens with the host's hash
 *	   (sj_jaccard_hash of sjjaccard.h, one definition for both) into the key
 *	   size << 40 | hash >> 24 (0 for an empty set), with the set's position
 *	   in the input order (left sets, then right) as value.  CUB's radix sort
 *	   of the pairs over all 64 bits is stable, as the host's LSD sort is,
 *	   so equal keys stay in input order: the same sequence.
 *	5. A non-empty set starts a distinct set unless its predecessor in that
 *	   sequence has the same key and the same tokens (so a hash collision
 *	   splits a group, as on the host); an inclusive scan numbers the
 *	   distinct sets.  The first set of a run is its representative: its
 *	   length and tokens make the distinct CSR.  Member counts per side are
 *	   atomic increments, their exclusive scans the member offsets, and the
 *	   member lists are the sequence's non-empty sets of each side in order
 *	   (CUB's select, which keeps order): within a run, ascending input
 *	   index, as on the host.
 * Everything is copied back into malloc'd arrays (SjJaccardPrepared).  A
 * join's preparation (jaccard_prepare_kept) keeps the distinct sets'
 * offsets, tokens and member counts on the device for its engine, and the
 * tokens go back in the background (DeviceSets in jaccard_gpu.cuh).
 *
 * Limits: fewer than 2^31 sets (the host's own limit) and fewer than 2^31
 * tokens in all (32-bit offsets and CUB item counts); beyond those, with
 * no tokens at all, or when the estimated peak does not fit in the join's
 * device budget (options->gpu_memory_limit), the host prepares instead.  A
 * device allocation that fails on the way also falls back to the host;
 * any other device error is the join's error.  The input is checked on the
 * host first (sj_jaccard_check), so errors are the CPU engine's.
 *
 * Ownership: device memory through DeviceBuffer charged to a Budget of its
 * own (freed before the join's engine allocates, but for the kept arrays,
 * which the engine's budget is charged for); host arrays are malloc'd and
 * owned by a PreparedOwner until the host handle adopts them.
 */
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "jaccard_gpu.cuh"
#include "sjgpu_internal.cuh"
#include "sjjaccard.h"

namespace
{

using sjgpu::Budget;
using sjgpu::DeviceBuffer;
using sjgpu::Error;
using sjgpu::div_up;

constexpr int kBlock = 256;
constexpr int kWarp = 32;
constexpr uint64_t kMaxItems = ((uint64_t) 1 << 31) - 2;	/* tokens, sets: n + 1 fits an int */
constexpr uint32_t kNone = UINT32_MAX;	/* member key of an empty set */

/*
 * Test hook: host milliseconds of the last device preparation's steps on
 * this thread (upload, ranks, renumber and set sort, key sort, distinct
 * sets, their tokens, members, download), then the host handle's adoption.
 */
constexpr int kSteps = 9;
thread_local double step_ms[kSteps];

bool		test_keep = false;	/* test hook: sjgpu_jaccard_set_test_keep */

/* Blocks for a grid-stride loop over n items (threads_per_item 1 or 32). */
static unsigned
grid_for(uint64_t n, int threads_per_item = 1)
{
	uint64_t	blocks = div_up<uint64_t>(n * threads_per_item, kBlock);

	return (unsigned) std::max<uint64_t>(1, std::min<uint64_t>(blocks, 65536));
}

/* ------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------ */

/*
 * One CSR over both inputs: off64 holds the left offsets [0, n0) and the
 * right offsets [1, n1] (n0 + n1 entries); t0 is the left input's total.
 */
__global__ void
concat_offsets_kernel(const uint64_t *off64, uint32_t n0, uint32_t n1,
					  uint64_t t0, uint32_t *goff)
{
	uint64_t	n = (uint64_t) n0 + n1;

	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i <= n;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	o = i < n0 ? off64[i] : i == n0 ? t0 : t0 + off64[i - 1];

		goff[i] = (uint32_t) o;
	}
}

/* Rank keys of the distinct tokens: count << 32 | index (index = id order). */
__global__ void
rank_keys_kernel(const uint32_t *cnt, uint32_t ndist, uint64_t *keys)
{
	for (uint64_t k = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; k < ndist;
		 k += (uint64_t) gridDim.x * blockDim.x)
		keys[k] = ((uint64_t) cnt[k] << 32) | k;
}

/* rank[index] = position in (frequency, id) order; map[token] too if given. */
__global__ void
rank_scatter_kernel(const uint64_t *sorted, const uint32_t *uniq, uint32_t ndist,
					uint32_t *rank, uint32_t *map)
{
	for (uint64_t r = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; r < ndist;
		 r += (uint64_t) gridDim.x * blockDim.x)
	{
		uint32_t	k = (uint32_t) sorted[r];

		rank[k] = (uint32_t) r;
		if (map)
			map[uniq[k]] = (uint32_t) r;
	}
}

/* Renumber every token: through map, or by binary search of uniq. */
__global__ void
renumber_kernel(uint32_t *tok, uint64_t ntok, const uint32_t *map,
				const uint32_t *uniq, const uint32_t *rank, uint32_t ndist)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < ntok;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint32_t	t = tok[i];

		if (map)
			tok[i] = map[t];
		else
		{
			/* the host's search: last entry <= t (t is always present) */
			uint32_t	lo = 0,
						hi = ndist;

			while (hi - lo > 1)
			{
				uint32_t	mid = lo + (hi - lo) / 2;

				if (uniq[mid] <= t)
					lo = mid;
				else
					hi = mid;
			}
			tok[i] = rank[lo];
		}
	}
}

/* Grouping key (size << 40 | hash >> 24, 0 if empty) and position per set. */
__global__ void
set_keys_kernel(const uint32_t *goff, const uint32_t *tok, uint32_t nall,
				uint64_t *keys, uint32_t *vals)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < nall;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint32_t	b = goff[i],
					n = goff[i + 1] - b;

		vals[i] = (uint32_t) i;
		keys[i] = n == 0 ? 0 : ((uint64_t) n << 40) | (sj_jaccard_hash(tok + b, n) >> 24);
	}
}

/*
 * Does sorted entry k start a distinct set (non-empty, and key or tokens
 * differ from entry k - 1)?  Also the member key: the input position, or
 * kNone for an empty set.
 */
__global__ void
group_flags_kernel(const uint64_t *keys, const uint32_t *vals, const uint32_t *goff,
				   const uint32_t *tok, uint32_t nall, uint32_t *isnew,
				   uint32_t *member)
{
	for (uint64_t k = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; k < nall;
		 k += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	key = keys[k];
		uint32_t	n = (uint32_t) (key >> 40);
		uint32_t	f = 0;

		if (n > 0)
		{
			if (k == 0 || keys[k - 1] != key)
				f = 1;
			else
			{
				const uint32_t *a = tok + goff[vals[k]],
						   *b = tok + goff[vals[k - 1]];

				for (uint32_t i = 0; i < n && !f; i++)
					f = a[i] != b[i];
			}
		}
		isnew[k] = f;
		member[k] = n > 0 ? vals[k] : kNone;
	}
}

/*
 * Per distinct set d (gid[k] = d + 1 at its first entry k): the
 * representative's position and length.  len64 is zeroed beforehand, so
 * its last entry stays 0 for the exclusive scan.
 */
__global__ void
distinct_kernel(const uint64_t *keys, const uint32_t *vals, const uint32_t *isnew,
				const uint32_t *gid, uint32_t nall, uint32_t *rep, uint32_t *len,
				uint64_t *len64)
{
	for (uint64_t k = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; k < nall;
		 k += (uint64_t) gridDim.x * blockDim.x)
		if (isnew[k])
		{
			uint32_t	d = gid[k] - 1,
						n = (uint32_t) (keys[k] >> 40);

			rep[d] = vals[k];
			len[d] = n;
			len64[d] = n;
		}
}

/* Tokens of each distinct set's representative into the distinct CSR (a warp a set). */
__global__ void
copy_tokens_kernel(const uint32_t *rep, const uint32_t *goff, const uint32_t *tok,
				   const uint64_t *off, uint32_t nd, uint32_t *out)
{
	uint64_t	warp = (blockIdx.x * (uint64_t) blockDim.x + threadIdx.x) / kWarp,
				nwarps = (uint64_t) gridDim.x * blockDim.x / kWarp;
	uint32_t	lane = threadIdx.x % kWarp;

	for (uint64_t d = warp; d < nd; d += nwarps)
	{
		const uint32_t *src = tok + goff[rep[d]];
		uint32_t   *dst = out + off[d];
		uint32_t	n = (uint32_t) (off[d + 1] - off[d]);

		for (uint32_t i = lane; i < n; i += kWarp)
			dst[i] = src[i];
	}
}

/* Member counts per side (weights zeroed beforehand). */
__global__ void
weight_kernel(const uint32_t *member, const uint32_t *gid, uint32_t nall, uint32_t n0,
			  uint32_t *w0, uint32_t *w1)
{
	for (uint64_t k = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; k < nall;
		 k += (uint64_t) gridDim.x * blockDim.x)
	{
		uint32_t	g = member[k];

		if (g != kNone)
			atomicAdd(g < n0 ? &w0[gid[k] - 1] : &w1[gid[k] - 1], 1u);
	}
}

/* out[i] = in[i] widened (n entries), out[n] = 0: input of an exclusive scan. */
__global__ void
widen_kernel(const uint32_t *in, uint32_t n, uint64_t *out)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i <= n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		out[i] = i < n ? in[i] : 0;
}

/* Right members: input position to index in the right input. */
__global__ void
subtract_kernel(uint32_t *a, uint64_t n, uint32_t base)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		a[i] -= base;
}

/* Member keys of one side: left positions [0, n0), right [n0, kNone). */
struct SideOf
{
	uint32_t	n0;
	int			side;

	__host__ __device__ bool operator()(const uint32_t &g) const
	{
		return side == 0 ? g < n0 : g >= n0 && g != kNone;
	}
};

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* The malloc'd result until the host handle adopts it. */
struct PreparedOwner
{
	SjJaccardPrepared p;

	PreparedOwner() { memset(&p, 0, sizeof(p)); }
	~PreparedOwner() { sj_jaccard_prepared_free(&p); }
	PreparedOwner(const PreparedOwner &) = delete;
	PreparedOwner &operator=(const PreparedOwner &) = delete;
};

/* malloc or throw std::bad_alloc (one spare element, as the host allocates). */
template <class T>
static T *
host_array(size_t n)
{
	T		   *p = static_cast<T *>(malloc((n + 1) * sizeof(T)));

	if (p == nullptr)
		throw std::bad_alloc();
	return p;
}

/* Copy n elements back to the host (staged when large; returns when done). */
template <class T>
static void
download(T *dst, const T *src, size_t n, cudaStream_t s)
{
	sjgpu::download_bytes(dst, src, n * sizeof(T), s);
}

/* Copy n elements to the device. */
template <class T>
static void
upload(T *dst, const T *src, size_t n, cudaStream_t s)
{
	sjgpu::upload_bytes(dst, src, n * sizeof(T), s);
}

/*
 * Run a CUB device-wide call f(temp, bytes) in CUB's two phases: size the
 * scratch, allocate it from the budget, run, and wait before it is freed.
 */
template <class F>
static void
cub_run(Budget *budget, cudaStream_t s, const char *what, F &&f)
{
	size_t		bytes = 0;

	sjgpu::check_cuda(f(nullptr, bytes), what, __FILE__, __LINE__);
	{
		/* never a null scratch pointer: CUB would take it for a size query */
		DeviceBuffer<unsigned char> temp(budget, bytes + 256, what);

		sjgpu::check_cuda(f(temp.get(), bytes), what, __FILE__, __LINE__);
		SJGPU_CHECK(cudaStreamSynchronize(s));
	}
}

/* Read one value back from the device. */
template <class T>
static T
read_back(const T *src, cudaStream_t s)
{
	T			v;

	SJGPU_CHECK(cudaMemcpyAsync(&v, src, sizeof(T), cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaStreamSynchronize(s));
	return v;
}

/* Free device arrays that the later steps no longer read. */
template <class... Buffers>
static void
release(Buffers &... bufs)
{
	(bufs.reset(), ...);
}

/* Input sizes, and whether the direct token map is used (the host's rule). */
struct PrepShape
{
	uint32_t	n0 = 0;			/* left sets */
	uint32_t	n1 = 0;			/* right sets (0 for a self-join) */
	uint64_t	nall = 0;
	uint64_t	t0 = 0;			/* left tokens */
	uint64_t	t1 = 0;
	uint64_t	total = 0;
	uint32_t	universe = 0;	/* input universe: the larger of the two */
	bool		direct = false;
};

/* The sizes of both inputs. */
static PrepShape
shape_of(const SjSets *left, const SjSets *right)
{
	PrepShape	sh;

	sh.n0 = left->n;
	sh.n1 = right ? right->n : 0;
	sh.nall = (uint64_t) sh.n0 + sh.n1;
	sh.t0 = left->n > 0 ? left->offsets[left->n] : 0;
	sh.t1 = right && right->n > 0 ? right->offsets[right->n] : 0;
	sh.total = sh.t0 + sh.t1;
	sh.universe = left->universe;
	if (right && right->universe > sh.universe)
		sh.universe = right->universe;
	sh.direct = (uint64_t) sh.universe <= sh.total * 4 + 65536;
	return sh;
}

/*
 * Device bytes the preparation may hold at its peak, generously: the
 * token sorts hold about five token arrays, the set sort and the grouping
 * about twenty-five words a set; plus the direct map and scratch slack.
 */
static size_t
peak_estimate(const PrepShape &sh)
{
	return (size_t) (20 * sh.total + 100 * sh.nall + 64 + (sh.direct ? 4 * (uint64_t) sh.universe : 0)) +
		((size_t) 4 << 20);
}

/*
 * The device arrays of one preparation between its steps.  The stream is
 * declared first, so destroyed last; buffers freed on an error path while
 * work is queued are safe because cudaFree waits for the device.  Each
 * step allocates and frees in the order of the steps of the file header,
 * so the peak is the one peak_estimate() covers.
 */
struct PrepDevice
{
	sjgpu::Stream stream;
	cudaStream_t s = nullptr;
	Budget	   *budget;
	const PrepShape &sh;
	uint32_t	nall;
	uint64_t	total;
	int			nsides;
	uint32_t	ndist = 0;		/* distinct tokens: the renumbered universe */
	uint32_t	nd = 0;			/* distinct sets */
	uint64_t	dtok = 0;		/* their tokens */
	uint64_t	mcount[2] = {0, 0};	/* members per side */

	DeviceBuffer<uint32_t> d_goff;	/* one CSR over both inputs */
	DeviceBuffer<uint32_t> d_tok;
	DeviceBuffer<uint32_t> d_uniq;	/* token ranks (steps 2 and 3) */
	DeviceBuffer<uint32_t> d_rank;
	DeviceBuffer<uint32_t> d_map;
	DeviceBuffer<uint32_t> d_rtok;	/* renumbered, sorted sets */
	DeviceBuffer<uint64_t> d_skeys; /* sorted (key, input position) */
	DeviceBuffer<uint32_t> d_svals;
	DeviceBuffer<uint32_t> d_member;	/* distinct sets and members */
	DeviceBuffer<uint32_t> d_gid;
	DeviceBuffer<uint32_t> d_rep;
	DeviceBuffer<uint32_t> d_len;
	DeviceBuffer<uint64_t> d_off;
	DeviceBuffer<uint32_t> d_dtok;
	DeviceBuffer<uint32_t> d_w[2];
	DeviceBuffer<uint64_t> d_moff[2];
	DeviceBuffer<uint32_t> d_mem[2];

	PrepDevice(Budget *b, const PrepShape &shape, int sides)
		: budget(b), sh(shape), nall((uint32_t) shape.nall), total(shape.total),
		  nsides(sides)
	{
		stream.create();
		s = stream.get();
	}
};

/* Step 1: both inputs' tokens and one CSR of 32-bit offsets. */
static void
prep_upload(PrepDevice &p, const SjSets *left, const SjSets *right)
{
	const PrepShape &sh = p.sh;
	cudaStream_t s = p.s;

	p.d_goff = DeviceBuffer<uint32_t>(p.budget, (size_t) p.nall + 1, "prepare: set offsets");
	p.d_tok = DeviceBuffer<uint32_t>(p.budget, p.total, "prepare: tokens");
	{
		DeviceBuffer<uint64_t> d_off64(p.budget, std::max<uint64_t>(p.nall, 1),
									   "prepare: input offsets");

		upload(d_off64.get(), left->offsets, sh.n0, s);
		if (sh.n1 > 0)
			upload(d_off64.get() + sh.n0, right->offsets + 1, sh.n1, s);
		upload(p.d_tok.get(), left->tokens, sh.t0, s);
		if (sh.t1 > 0)
			upload(p.d_tok.get() + sh.t0, right->tokens, sh.t1, s);
		concat_offsets_kernel<<<grid_for((uint64_t) p.nall + 1), kBlock, 0, s>>>(
			d_off64.get(), sh.n0, sh.n1, sh.t0, p.d_goff.get());
		SJGPU_CHECK_LAUNCH("concat_offsets_kernel");
		SJGPU_CHECK(cudaStreamSynchronize(s));
	}
}

/* Step 2: token frequencies, and ranks by (frequency, token id). */
static void
prep_rank_tokens(PrepDevice &p)
{
	const PrepShape &sh = p.sh;
	cudaStream_t s = p.s;
	Budget	   *budget = p.budget;
	uint64_t	total = p.total;
	uint64_t	maxdist = std::min<uint64_t>(total, sh.universe);
	uint32_t	ndist;
	int			end_bit = 1;
	DeviceBuffer<uint32_t> d_cnt;

	while (end_bit < 32 && ((uint64_t) sh.universe - 1) >> end_bit)
		end_bit++;
	p.d_uniq = DeviceBuffer<uint32_t>(budget, maxdist, "prepare: distinct tokens");
	d_cnt = DeviceBuffer<uint32_t>(budget, maxdist, "prepare: token counts");
	{
		DeviceBuffer<uint32_t> d_sorted(budget, total, "prepare: sorted tokens");
		DeviceBuffer<int> d_nruns(budget, 1, "prepare: token count");

		cub_run(budget, s, "prepare: token sort", [&](void *t, size_t &b) {
			return cub::DeviceRadixSort::SortKeys(t, b, (const uint32_t *) p.d_tok.get(),
												  d_sorted.get(), (int) total, 0,
												  end_bit, s);
		});
		cub_run(budget, s, "prepare: token counts", [&](void *t, size_t &b) {
			return cub::DeviceRunLengthEncode::Encode(t, b, d_sorted.get(), p.d_uniq.get(),
													  d_cnt.get(), d_nruns.get(),
													  (int) total, s);
		});
		ndist = (uint32_t) read_back(d_nruns.get(), s);
	}
	if (ndist == 0 || ndist > maxdist)
		throw Error(SJ_ERR_INTERNAL, "jaccard_join: %u distinct tokens on the device",
					ndist);
	p.ndist = ndist;

	DeviceBuffer<uint64_t> d_keys(budget, ndist, "prepare: token ranks");
	DeviceBuffer<uint64_t> d_keys_sorted(budget, ndist, "prepare: token ranks");

	rank_keys_kernel<<<grid_for(ndist), kBlock, 0, s>>>(d_cnt.get(), ndist, d_keys.get());
	SJGPU_CHECK_LAUNCH("rank_keys_kernel");
	cub_run(budget, s, "prepare: rank sort", [&](void *t, size_t &b) {
		return cub::DeviceRadixSort::SortKeys(t, b, (const uint64_t *) d_keys.get(),
											  d_keys_sorted.get(), (int) ndist, 0, 64, s);
	});
	p.d_rank = DeviceBuffer<uint32_t>(budget, ndist, "prepare: token map");
	if (sh.direct)
		p.d_map = DeviceBuffer<uint32_t>(budget, sh.universe, "prepare: token map");
	rank_scatter_kernel<<<grid_for(ndist), kBlock, 0, s>>>(d_keys_sorted.get(),
														   p.d_uniq.get(), ndist,
														   p.d_rank.get(), p.d_map.get());
	SJGPU_CHECK_LAUNCH("rank_scatter_kernel");
	SJGPU_CHECK(cudaStreamSynchronize(s));
}

/* Step 3: renumber every token and sort every set; frees step 2's arrays. */
static void
prep_renumber(PrepDevice &p)
{
	cudaStream_t s = p.s;
	uint64_t	total = p.total;

	p.d_rtok = DeviceBuffer<uint32_t>(p.budget, total, "prepare: renumbered tokens");
	renumber_kernel<<<grid_for(total), kBlock, 0, s>>>(p.d_tok.get(), total, p.d_map.get(),
													   p.d_uniq.get(), p.d_rank.get(),
													   p.ndist);
	SJGPU_CHECK_LAUNCH("renumber_kernel");
	cub_run(p.budget, s, "prepare: set sort", [&](void *t, size_t &b) {
		return cub::DeviceSegmentedSort::SortKeys(t, b, (const uint32_t *) p.d_tok.get(),
												  p.d_rtok.get(), (int64_t) total,
												  (int64_t) p.nall, p.d_goff.get(),
												  p.d_goff.get() + 1, s);
	});
	release(p.d_tok, p.d_map, p.d_rank, p.d_uniq);
}

/* Step 4: keys and the stable sort of (key, input position). */
static void
prep_sort_keys(PrepDevice &p)
{
	cudaStream_t s = p.s;
	uint32_t	nall = p.nall;

	p.d_skeys = DeviceBuffer<uint64_t>(p.budget, nall, "prepare: sorted keys");
	p.d_svals = DeviceBuffer<uint32_t>(p.budget, nall, "prepare: sorted sets");
	{
		DeviceBuffer<uint64_t> d_keys(p.budget, nall, "prepare: keys");
		DeviceBuffer<uint32_t> d_vals(p.budget, nall, "prepare: sets");

		set_keys_kernel<<<grid_for(nall), kBlock, 0, s>>>(p.d_goff.get(), p.d_rtok.get(), nall,
														  d_keys.get(), d_vals.get());
		SJGPU_CHECK_LAUNCH("set_keys_kernel");
		cub_run(p.budget, s, "prepare: set key sort", [&](void *t, size_t &b) {
			return cub::DeviceRadixSort::SortPairs(t, b, (const uint64_t *) d_keys.get(),
												   p.d_skeys.get(),
												   (const uint32_t *) d_vals.get(),
												   p.d_svals.get(), (int) nall, 0, 64, s);
		});
	}
}

/*
 * Step 5: group starts, distinct numbering, representatives, lengths and
 * offsets of the distinct sets; frees step 4's arrays.
 */
static void
prep_distinct(PrepDevice &p)
{
	cudaStream_t s = p.s;
	Budget	   *budget = p.budget;
	uint32_t	nall = p.nall;
	uint32_t	nd;

	p.d_member = DeviceBuffer<uint32_t>(budget, nall, "prepare: member keys");
	p.d_gid = DeviceBuffer<uint32_t>(budget, nall, "prepare: distinct ids");
	{
		DeviceBuffer<uint32_t> d_isnew(budget, nall, "prepare: group starts");

		group_flags_kernel<<<grid_for(nall), kBlock, 0, s>>>(p.d_skeys.get(), p.d_svals.get(),
															 p.d_goff.get(), p.d_rtok.get(), nall,
															 d_isnew.get(), p.d_member.get());
		SJGPU_CHECK_LAUNCH("group_flags_kernel");
		cub_run(budget, s, "prepare: distinct numbering", [&](void *t, size_t &b) {
			return cub::DeviceScan::InclusiveSum(t, b, (const uint32_t *) d_isnew.get(),
												 p.d_gid.get(), (int) nall, s);
		});
		nd = read_back(p.d_gid.get() + (nall - 1), s);
		if (nd == 0)
			throw Error(SJ_ERR_INTERNAL, "jaccard_join: no distinct sets on the device");
		p.nd = nd;

		DeviceBuffer<uint64_t> d_len64(budget, (size_t) nd + 1, "prepare: lengths");

		p.d_rep = DeviceBuffer<uint32_t>(budget, nd, "prepare: representatives");
		p.d_len = DeviceBuffer<uint32_t>(budget, nd, "prepare: lengths");
		p.d_off = DeviceBuffer<uint64_t>(budget, (size_t) nd + 1, "prepare: offsets");
		SJGPU_CHECK(cudaMemsetAsync(d_len64.get(), 0, ((size_t) nd + 1) * sizeof(uint64_t), s));
		distinct_kernel<<<grid_for(nall), kBlock, 0, s>>>(p.d_skeys.get(), p.d_svals.get(),
														  d_isnew.get(), p.d_gid.get(), nall,
														  p.d_rep.get(), p.d_len.get(),
														  d_len64.get());
		SJGPU_CHECK_LAUNCH("distinct_kernel");
		cub_run(budget, s, "prepare: offsets", [&](void *t, size_t &b) {
			return cub::DeviceScan::ExclusiveSum(t, b, (const uint64_t *) d_len64.get(),
												 p.d_off.get(), (int) nd + 1, s);
		});
	}
	release(p.d_skeys, p.d_svals);
}

/* The distinct sets' tokens, copied from their representatives. */
static void
prep_copy_tokens(PrepDevice &p)
{
	cudaStream_t s = p.s;
	uint32_t	nd = p.nd;
	uint64_t	dtok = read_back(p.d_off.get() + nd, s);

	if (dtok == 0 || dtok > p.total)
		throw Error(SJ_ERR_INTERNAL, "jaccard_join: %llu distinct tokens on the device",
					(unsigned long long) dtok);
	p.dtok = dtok;
	p.d_dtok = DeviceBuffer<uint32_t>(p.budget, dtok, "prepare: distinct tokens");
	copy_tokens_kernel<<<grid_for(nd, kWarp), kBlock, 0, s>>>(p.d_rep.get(), p.d_goff.get(),
															  p.d_rtok.get(), p.d_off.get(), nd,
															  p.d_dtok.get());
	SJGPU_CHECK_LAUNCH("copy_tokens_kernel");
}

/* Members: counts, offsets and lists per side. */
static void
prep_members(PrepDevice &p)
{
	cudaStream_t s = p.s;
	Budget	   *budget = p.budget;
	uint32_t	nall = p.nall,
				nd = p.nd,
				n0 = p.sh.n0;
	int			nsides = p.nsides;

	for (int side = 0; side < nsides; side++)
	{
		p.d_w[side] = DeviceBuffer<uint32_t>(budget, (size_t) nd + 1, "prepare: weights");
		SJGPU_CHECK(cudaMemsetAsync(p.d_w[side].get(), 0, ((size_t) nd + 1) * sizeof(uint32_t), s));
	}
	weight_kernel<<<grid_for(nall), kBlock, 0, s>>>(p.d_member.get(), p.d_gid.get(), nall, n0,
													p.d_w[0].get(), p.d_w[nsides - 1].get());
	SJGPU_CHECK_LAUNCH("weight_kernel");
	for (int side = 0; side < nsides; side++)
	{
		DeviceBuffer<uint64_t> d_w64(budget, (size_t) nd + 1, "prepare: weights");
		DeviceBuffer<int64_t> d_nsel(budget, 1, "prepare: member count");
		SideOf		pick = {n0, side};
		uint64_t   &mcount = p.mcount[side];

		p.d_moff[side] = DeviceBuffer<uint64_t>(budget, (size_t) nd + 1, "prepare: member offsets");
		widen_kernel<<<grid_for((uint64_t) nd + 1), kBlock, 0, s>>>(p.d_w[side].get(), nd,
																   d_w64.get());
		SJGPU_CHECK_LAUNCH("widen_kernel");
		cub_run(budget, s, "prepare: member offsets", [&](void *t, size_t &b) {
			return cub::DeviceScan::ExclusiveSum(t, b, (const uint64_t *) d_w64.get(),
												 p.d_moff[side].get(), (int) nd + 1, s);
		});
		mcount = read_back(p.d_moff[side].get() + nd, s);
		p.d_mem[side] = DeviceBuffer<uint32_t>(budget, std::max<uint64_t>(mcount, 1),
											   "prepare: members");
		cub_run(budget, s, "prepare: members", [&](void *t, size_t &b) {
			return cub::DeviceSelect::If(t, b, (const uint32_t *) p.d_member.get(),
										 p.d_mem[side].get(), d_nsel.get(), (int64_t) nall,
										 pick, s);
		});
		if ((uint64_t) read_back(d_nsel.get(), s) != mcount)
			throw Error(SJ_ERR_INTERNAL, "jaccard_join: member lists disagree on the device");
		if (side == 1 && mcount > 0)
		{
			subtract_kernel<<<grid_for(mcount), kBlock, 0, s>>>(p.d_mem[1].get(), mcount, n0);
			SJGPU_CHECK_LAUNCH("subtract_kernel");
		}
	}
}

/*
 * Copy the result back into malloc'd arrays; with keep, all but the
 * tokens (their array allocated, not filled), and keep takes the device's
 * offsets, tokens and member counts, no longer charged to the
 * preparation's budget.
 */
static void
prep_download(PrepDevice &p, SjJaccardPrepared *out, sjjaccard_gpu::DeviceSets *keep)
{
	cudaStream_t s = p.s;
	uint32_t	nd = p.nd;

	out->nsets = nd;
	out->universe = p.ndist;
	out->off = host_array<uint64_t>((size_t) nd + 1);
	out->tok = host_array<uint32_t>(p.dtok);
	out->len = host_array<uint32_t>(nd);
	out->len[nd] = 0;
	download(out->off, p.d_off.get(), (size_t) nd + 1, s);
	if (!keep)
		download(out->tok, p.d_dtok.get(), p.dtok, s);
	download(out->len, p.d_len.get(), nd, s);
	for (int side = 0; side < p.nsides; side++)
	{
		out->moff[side] = host_array<uint64_t>((size_t) nd + 1);
		out->mem[side] = host_array<uint32_t>(p.mcount[side]);
		out->weight[side] = host_array<uint32_t>(nd);
		download(out->moff[side], p.d_moff[side].get(), (size_t) nd + 1, s);
		download(out->mem[side], p.d_mem[side].get(), p.mcount[side], s);
		download(out->weight[side], p.d_w[side].get(), (size_t) nd + 1, s);
	}
	SJGPU_CHECK(cudaStreamSynchronize(s));
	out->maxsize = out->len[nd - 1];
	if (keep)
	{
		SJGPU_CHECK(cudaGetDevice(&keep->device));
		keep->nsets = nd;
		keep->ntok = p.dtok;
		keep->off = std::move(p.d_off);
		keep->tok = std::move(p.d_dtok);
		keep->off.uncharge();
		keep->tok.uncharge();
		for (int side = 0; side < p.nsides; side++)
		{
			keep->weight[side] = std::move(p.d_w[side]);
			keep->weight[side].uncharge();
		}
	}
}

/*
 * The preparation proper, the steps of the file header in order: fills out
 * (throws sjgpu::Error or bad_alloc).  The caller has checked the sizes
 * (fewer than 2^31 sets and tokens, at least one token).
 */
static void
device_prepare(const SjSets *left, const SjSets *right, const PrepShape &sh,
			   Budget *budget, SjJaccardPrepared *out, sjjaccard_gpu::DeviceSets *keep)
{
	PrepDevice	p(budget, sh, right ? 2 : 1);
	double		t = sj_now_ms();
	int			k = 0;
	auto		step = [&] {
		/* the test hook's times: each step waited for (a few microseconds) */
		SJGPU_CHECK(cudaStreamSynchronize(p.s));
		step_ms[k++] = sj_now_ms() - t;
		t = sj_now_ms();
	};

	memset(step_ms, 0, sizeof(step_ms));
	prep_upload(p, left, right);
	step();
	prep_rank_tokens(p);
	step();
	prep_renumber(p);
	step();
	prep_sort_keys(p);
	step();
	prep_distinct(p);
	step();
	prep_copy_tokens(p);
	step();
	prep_members(p);
	step();
	prep_download(p, out, keep);
	step();
}

/*
 * Prepare on the device when the input allows and fits, else on the host;
 * *on_device says which.  Input errors are the host's (checked first).
 */
static SjStatus
prepare(const SjSets *left, const SjSets *right, double threshold,
		const SjJoinOptions *options, SjJaccardJoin **join, int *on_device,
		std::shared_ptr<sjjaccard_gpu::DeviceSets> *kept, char *errmsg)
{
	double		t0 = sj_now_ms();
	SjStatus	st;
	PrepShape	sh;
	PreparedOwner res;
	bool		device = false;
	uint32_t   *host_tok;

	*on_device = 0;
	if (kept)
		kept->reset();
	if (join == nullptr)
	{
		sjgpu::set_errmsg(errmsg, "jaccard_join: no handle pointer");
		return SJ_ERR_INVALID;
	}
	*join = nullptr;
	st = sj_jaccard_check(left, right, threshold, options, errmsg);
	if (st != SJ_OK)
		return st;
	sh = shape_of(left, right);
	if (sh.total > 0 && sh.total <= kMaxItems && sh.nall <= kMaxItems)
	{
		st = sjgpu::guard(errmsg, [&] {
			sjgpu::use_device(options->gpu_device);

			Budget		budget(sjgpu::memory_limit(options->gpu_memory_limit));

			if (!budget.fits(peak_estimate(sh)))
				return;
			try
			{
				if (kept)
					kept->reset(new sjjaccard_gpu::DeviceSets);
				device_prepare(left, right, sh, &budget, &res.p, kept ? kept->get() : nullptr);
				device = true;
			}
			catch (const Error &e)
			{
				/* out of device memory on the way: the host prepares */
				if (e.status() != SJ_ERR_DEVICE_NOMEM)
					throw;
				sj_jaccard_prepared_free(&res.p);
				if (kept)
					kept->reset();
			}
		});
		if (st != SJ_OK)
		{
			if (kept)
				kept->reset();
			return st;
		}
	}
	if (!device)
		return sj_jaccard_prepare_checked(left, right, threshold, options, nullptr,
										  join, errmsg);
	res.p.prep_ms = sj_now_ms() - t0;
	*on_device = 1;
	host_tok = res.p.tok;		/* the handle takes it over, unfilled if kept */
	{
		double		t1 = sj_now_ms();

		st = sj_jaccard_prepare_checked(left, right, threshold, options, &res.p, join,
										errmsg);
		step_ms[kSteps - 1] = sj_now_ms() - t1;
	}
	if (kept && *kept)
	{
		if (st != SJ_OK)
			kept->reset();
		else
			st = sjgpu::guard(errmsg, [&] {
				(*kept)->start_download(host_tok);
			});
	}
	return st;
}

}								/* namespace */

/*
 * The GPU engine's preparation (sjjaccard.h): sj_jaccard_prepare's result,
 * computed on the device where it fits.
 */
extern "C" SjStatus
sjgpu_jaccard_prepare(const SjSets *left, const SjSets *right, double threshold,
					  const SjJoinOptions *options, SjJaccardJoin **join,
					  char *errmsg)
{
	int			on_device;

	return prepare(left, right, threshold, options, join, &on_device, nullptr, errmsg);
}

SjStatus
sjjaccard_gpu::jaccard_prepare_kept(const SjSets *left, const SjSets *right, double threshold,
									const SjJoinOptions *options, SjJaccardJoin **join,
									std::shared_ptr<DeviceSets> *kept, char *errmsg)
{
	int			on_device;

	return prepare(left, right, threshold, options, join, &on_device, kept, errmsg);
}

/* Test hook (not in sjgpu.h): the same, and whether the device prepared. */
extern "C" SjStatus
sjgpu_jaccard_test_prepare(const SjSets *left, const SjSets *right, double threshold,
						   const SjJoinOptions *options, SjJaccardJoin **join,
						   int *on_device, char *errmsg)
{
	std::shared_ptr<sjjaccard_gpu::DeviceSets> kept;
	SjStatus	st = prepare(left, right, threshold, options, join, on_device,
							 test_keep ? &kept : nullptr, errmsg);

	/* kept: the host's tokens as the join would have them, once it waited */
	if (st == SJ_OK && kept)
		st = sjgpu::guard(errmsg, [&] {
			kept->host_tokens();
		});
	if (st != SJ_OK && join && *join)
	{
		sj_jaccard_cpu_end(*join);
		*join = nullptr;
	}
	return st;
}

/*
 * Test hook (not in sjgpu.h): on != 0 makes sjgpu_jaccard_test_prepare keep
 * the sets on the device, as a join does, and download the tokens in the
 * background (waited for before it returns).
 */
extern "C" void
sjgpu_jaccard_set_test_keep(int on)
{
	test_keep = on != 0;
}

/* Test hook (not in sjgpu.h): step_ms above, kSteps values. */
extern "C" void
sjgpu_jaccard_test_prep_steps(double *ms)
{
	memcpy(ms, step_ms, sizeof(step_ms));
}
