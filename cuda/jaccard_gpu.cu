/*
 * jaccard_gpu.cu
 *		The GPU engine of jaccard_join, after Bellas' thesis ch. 5
 *		(fgSSJoin and sf-gSSJoin of Ribeiro-Junior, Quirino et al.) with the
 *		index built by CUB.
 *
 * Division of labour.  The preparation is the CPU engine's (jc_prepare in
 * src/engine/jaccard_cpu.c), computed on the device by cuda/jaccard_prep.cu
 * (the same arrays, element for element; the host's own code when it does
 * not fit in the budget): tokens renumbered by frequency, identical sets
 * grouped into distinct sets ordered by size.  The host derives the exact
 * integer bounds (minov, minsize, size_start) from the double similarity
 * test.  The device finds every similar pair of distinct sets (u > v); the host
 * expands those records to member pairs in batches, again with the CPU
 * engine's code, so both engines share one definition of what joins.  The
 * similarity is (double) inter / (double) (|u| + |v| - inter) on both: IEEE
 * division, no contraction, bit-identical.
 *
 * Strategies (one per join, in SjTimings.strategy):
 *
 *	"gpu prefix-block": fgSSJoin-style prefix filtering on the device.  The
 *	  indexing prefixes of a block (partition) of distinct sets become
 *	  (token, set, position) entries, sorted by token with CUB's radix sort
 *	  (stable, so every list is in set order); list offsets are filled from
 *	  the run boundaries.  One warp per probe set walks the lists of its
 *	  probing prefix, restricted by binary search to the sets allowed by the
 *	  length filter.  Instead of fgSSJoin's n x n count matrix, a pair is
 *	  claimed only at its smallest common prefix token (its prefixes share
 *	  nothing before it), so each pair is seen once, needs no memory of its
 *	  own, and passes PPJoin's positional filter exactly; the lane then
 *	  verifies it by a merge from there, with early termination.
 *
 *	"gpu brute-force overlap": sf-gSSJoin-style counting for low
 *	  thresholds, where prefixes are long and prune little.  The index holds
 *	  every token; one block per probe set adds 1 per shared token into a
 *	  window of counters in shared memory (8192 candidate sets at a time,
 *	  only those the length filter allows), then tests each count.
 *
 *	"gpu bitmap": the bitmap filter of Sandes et al. as Bellas evaluates it
 *	  (thesis 5.2), for large sets over small universes, where every index
 *	  list is long.  Each distinct set gets a signature of b = 64 W bits
 *	  (token t sets bit t mod b; W = 1..32 words, stored word-major so that
 *	  lanes reading consecutive sets coalesce).  One warp per probe set
 *	  walks every candidate the length filter allows.  When the universe
 *	  fits in b bits the signature is the set and popcount(sig_u AND
 *	  sig_v) is the exact overlap; otherwise each bit set in sig_u XOR
 *	  sig_v needs a token of the symmetric difference, so |u n v| <=
 *	  (|u| + |v| - popcount(sig_u XOR sig_v)) / 2, and only pairs whose
 *	  bound reaches the required overlap are verified by a merge.
 *
 *	"co-processing (cpu filter, gpu verify)": Bellas and Gounaris' CPU
 *	  filtering with GPU verification.  The CPU engine's own filters
 *	  (sj_jaccard_filter_next: its inverted index over indexing prefixes,
 *	  length and positional filters, candidates merged per probe in a slot
 *	  array, on options->cpu_threads threads) hand out candidate pairs
 *	  (x << 32 | y, x > y) into one of two pinned slots; the device
 *	  verifies them, one thread per pair, by a merge of the two sorted
 *	  lists that stops once the required overlap is out of reach.  A
 *	  two-slot pipeline: while the device verifies slot k (cudaMemcpyAsync,
 *	  kernel, counter copy and an event, on the one stream), the CPU
 *	  threads filter the next candidates into the other slot.  It needs no
 *	  device index, so the automatic choice also falls back to it when no
 *	  index (or signature table) of the others fits the memory limit.
 *
 * Cost model.  From token counts over the distinct sets the host estimates
 *	  prefix: P = sum over probes of the index-list lengths of their probing
 *	          prefix tokens, each visit costing a positional check and maybe
 *	          a merge from global memory: cost P * (8 + avg |set| / 2);
 *	  brute:  B = sum over probes of the full-list lengths of all their
 *	          tokens (a shared-memory atomic each) plus R, the candidate
 *	          sets the length filter leaves (a counter cleared and read
 *	          each): cost 1.5 * B + R / 4;
 *	  bitmap: R candidates of W signature words each, plus a merge for the
 *	          fraction f of candidates whose bound passes (0 when exact; f
 *	          measured on a sample of probes and candidates): cost
 *	          R * (1 + W / 2 + f * avg |set|);
 *	  co-processing: the slower of the two pipeline stages, the CPU's
 *	          filtering, P * kCpuEntryCost / threads, and the device's
 *	          verification, C * (kVerifyPairCost + 2 avg |set|), where the
 *	          candidates C = c R, c the fraction of sampled candidates that
 *	          pass the CPU's prefix and positional filters (sampled only
 *	          when the filtering alone would be the cheapest);
 *	all halved for the v < u restriction, and picks the cheapest.  Prefixes
 *	cover about (1 - t) of each set, so the brute force wins below about
 *	t = 0.5 on most data, and the prefix join above.  kCpuEntryCost (4096
 *	device units per index entry and CPU thread) and kVerifyPairCost (16)
 *	are estimates from the measured CPU engine and prefix-block rates, to
 *	be calibrated: with 16 threads co-processing wins only where sets
 *	average several hundred tokens and the CPU's filters leave few
 *	candidates (many entries per candidate pair: near duplicates), which
 *	is where the device's prefix-block pays a disjointness check per entry
 *	and the CPU's slot array does not.  Not counted: the CPU index build
 *	(serial, one pass over the indexing prefixes).
 *
 * Memory and batching.  The distinct sets (CSR), member counts and bounds
 * stay on the device for the whole join; SJ_ERR_DEVICE_NOMEM is returned
 * only when they, a minimal output buffer and the index of one distinct set
 * cannot fit in the budget (options->gpu_memory_limit), nor co-processing's
 * minimal batches (256 candidates in each slot and as many records).  The
 * index is built for a partition of distinct sets [V0, V1) at a time, as
 * large as the budget allows; probes u > V0 run against it in chunks sized
 * from a per-probe work estimate (about 50 ms of kernel each, adapted to
 * measured times and result density).  Results go through an atomic counter into a
 * bounded buffer; when the counter passes the capacity, the chunk is split
 * (its probe range, or for a single probe its candidate range) and re-run,
 * so nothing is ever truncated (SjTimings.reruns counts these).  count_only
 * sums member-pair weights on the device.
 *
 * Co-processing's batches: two slots of up to 2^21 candidates (8 bytes
 * each, device and pinned host) and one record buffer of as many records,
 * from the budget.  A verification whose records overflow (only with a
 * record buffer smaller than a slot: the test hook) is split in halves of
 * its candidate range, re-run from the candidates still on the device.
 *
 * Overlap with the caller: when a chunk's records have been copied back,
 * the next chunk is launched before the records are handed over, so the
 * device computes chunk k + 1 while the host expands chunk k into batches.
 */
#include <cub/cub.cuh>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "sjgpu_internal.cuh"
#include "sjgpu_multi.cuh"
#include "sjjaccard.h"

/*
 * The CPU engine's preparation and expansion, shared with this engine
 * (defined in src/engine/jaccard_cpu.c; not part of the adapter boundary).
 */
extern "C"
{
typedef SjStatus (*SjJaccardSource) (void *ctx, const uint32_t **u,
									 const uint32_t **v, const double **sim,
									 size_t *n, uint64_t *count,
									 int *exhausted, char *errmsg);

SjStatus	sj_jaccard_prepare(const SjSets *left, const SjSets *right,
							   double threshold, const SjJoinOptions *options,
							   SjJaccardJoin **join, char *errmsg);
void		sj_jaccard_prepared_sets(const SjJaccardJoin *j, uint32_t *nsets,
									 uint32_t *universe,
									 const uint64_t **offsets,
									 const uint32_t **tokens,
									 const uint32_t **weight_left,
									 const uint32_t **weight_right);
void		sj_jaccard_prepared_bounds(const SjJaccardJoin *j,
									   uint32_t *maxsize,
									   const uint32_t **minov,
									   const uint32_t **minsize,
									   const uint32_t **size_start);
void		sj_jaccard_set_source(SjJaccardJoin *j, SjJaccardSource source,
								  void *ctx, const char *strategy);
SjStatus	sj_jaccard_filter_begin(SjJaccardJoin *j, char *errmsg);
SjStatus	sj_jaccard_filter_next(SjJaccardJoin *j, uint64_t *buf, size_t cap,
								   size_t *n, int *exhausted, char *errmsg);
}

namespace
{

using sjgpu::Budget;
using sjgpu::DeviceBuffer;
using sjgpu::Error;
using sjgpu::PinnedBuffer;
using sjgpu::div_up;

constexpr int kWarp = 32;
constexpr int kBlock = 256;			/* threads per block, both kernels */
constexpr int kWindow = 8192;		/* brute force: counters per window */
constexpr double kChunkMs = 50.0;	/* target kernel time of one chunk */
constexpr size_t kMaxRecords = (size_t) 1 << 24;	/* output buffer, at most */
constexpr size_t kMinRecords = 256;

constexpr int kMaxSigWords = 32;		/* bitmap: at most 2048-bit signatures */

/* co-processing: candidate pairs per pipeline batch, at most */
constexpr size_t kMaxCandidates = (size_t) 1 << 21;

/*
 * Cost model constants of co-processing, in the device cost units of the
 * header (estimates to be calibrated with jaccard_strategy_bench): one
 * index entry visited by one CPU thread (slot lookup, positional filter,
 * a cache miss or two), from the CPU engine's and the prefix-block's
 * measured rates; one candidate verified by one device thread (offsets,
 * a divergent merge of both lists, the 8-byte copy), plus its merge steps.
 */
constexpr double kCpuEntryCost = 4096.0;
constexpr double kVerifyPairCost = 16.0;

enum class Strategy
{
	Prefix,
	Brute,
	Bitmap,
	Coproc
};

/* Test hooks: 0 automatic, 1 prefix, 2 brute force, 3 bitmap,
 * 4 co-processing; the signature words of the bitmap strategy (0 = from
 * the universe); co-processing's candidates per batch and result records
 * per verification (0 = from the memory budget). */
int			forced_strategy = 0;
int			forced_sig_words = 0;
size_t		forced_coproc_candidates = 0;
size_t		forced_coproc_records = 0;

/*
 * Test hook: host milliseconds of the last join's steps (prepare, choose
 * the strategy, upload and plan memory, index builds, work estimates,
 * waits for the device), for the engine benchmarks.
 */
enum
{
	kPhasePrepare,
	kPhaseStrategy,
	kPhaseMemory,
	kPhaseIndex,
	kPhaseEstimate,
	kPhaseWait,
	kPhases
};
double		phase_ms[kPhases];

/* Everything a probe kernel reads and writes. */
struct ProbeArgs
{
	const uint64_t *off;		/* distinct sets: CSR offsets */
	const uint32_t *tok;
	const uint32_t *wl;			/* member counts per side (wr: two-table) */
	const uint32_t *wr;
	const uint32_t *minov;		/* exact bounds of the host */
	const uint32_t *minsize;
	const uint32_t *size_start;
	const uint64_t *list_off;	/* index of the current partition */
	const uint64_t *post;		/* set << 32 | position, lists by set */
	const unsigned long long *sig;	/* bitmap: word w of set v at w * nsets + v */
	uint32_t	nsets;
	uint32_t	sig_words;
	int			sig_exact;		/* the signature is the set */
	uint32_t	u0;				/* probes [u0, u1) */
	uint32_t	u1;
	uint32_t	v0;				/* candidates [v0, v1) */
	uint32_t	v1;
	double		threshold;
	int			self;
	int			count_only;
	uint32_t   *out_u;			/* records, capacity cap */
	uint32_t   *out_v;
	double	   *out_sim;
	unsigned long long cap;
	unsigned long long *counter;	/* [0] records, [1] member pairs */
};

/* ------------------------------------------------------------------------
 * Device helpers
 * ------------------------------------------------------------------------ */

/* Overlap of two sorted lists; stops once `need` is out of reach. */
__device__ __forceinline__ uint32_t
dev_overlap(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
			uint32_t need)
{
	uint32_t	i = 0,
				k = 0,
				c = 0;

	if (min(na, nb) < need)
		return 0;
	while (i < na && k < nb)
	{
		uint32_t	x = a[i],
					y = b[k];

		if (x == y)
		{
			c++;
			i++;
			k++;
		}
		else
		{
			if (x < y)
				i++;
			else
				k++;
			if (c + min(na - i, nb - k) < need)
				return c;
		}
	}
	return c;
}

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
	if (a.self)
		return (unsigned long long) a.wl[u] * a.wl[v];
	return (unsigned long long) a.wl[u] * a.wr[v] +
		(unsigned long long) a.wr[u] * a.wl[v];
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
	sim = (double) inter / (double) (lu + lv - inter);
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
		uint32_t	n = prefix_only ? len - minov[2 * len] + 1 : len;
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
		plen = lu - a.minov[lu + ms] + 1;
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

						if (1 + min(rx, lv - j - 1) >= alpha &&
							dev_disjoint(tu, i, tv, j))
						{
							uint32_t	inter = 1 + dev_overlap(tu + i + 1, rx,
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
						inter = dev_overlap(tu, lu, a.tok + ov, lv, alpha);
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
			inter = dev_overlap(a.tok + ou, lu, a.tok + ov, lv, alpha);
			hit = dev_similar(a, inter, alpha, lu, lv, sim);
		}
		dev_emit(a, hit, u, v, sim, local_count);
	}
	dev_count_flush(a, local_count);
}

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* A piece of work: probes [u0, u1) against candidates [v0, v1). */
struct Work
{
	uint32_t	u0;
	uint32_t	u1;
	uint32_t	v0;
	uint32_t	v1;
};

/* Number of bits needed for values below n (at least 1). */
static int
bits_for(uint64_t n)
{
	int			b = 1;

	while (b < 64 && (n - 1) >> b)
		b++;
	return b;
}

/* Copy a host array to a new device buffer. */
template <class T>
static DeviceBuffer<T>
upload(Budget *budget, const T *src, size_t n, const char *what,
	   cudaStream_t stream)
{
	DeviceBuffer<T> buf(budget, n > 0 ? n : 1, what);

	if (n > 0)
		SJGPU_CHECK(cudaMemcpyAsync(buf.get(), src, n * sizeof(T),
									cudaMemcpyHostToDevice, stream));
	return buf;
}

/* sj_parallel_for over a callable f(task) (which must not throw). */
template <class F>
static void
parallel_for(int nthreads, uint64_t ntasks, F &f)
{
	auto		trampoline = [](void *arg, uint64_t task, int) {
		(*static_cast<F *>(arg)) (task);
	};

	if (sj_parallel_for(nthreads, ntasks, trampoline, &f) != SJ_OK)
		throw std::bad_alloc();
}

constexpr uint64_t kHostTask = 16384;	/* probes per host task */

/* The device half of one join; the record source of its host handle. */
class JaccardDevice
{
public:
	JaccardDevice(SjJaccardJoin *host, double threshold,
				  const SjJoinOptions *options);
	~JaccardDevice();

	const char *strategy_name() const;
	void		fetch(const uint32_t **u, const uint32_t **v, const double **sim,
					  size_t *n, uint64_t *count, int *exhausted);
	void		add_timings(SjTimings *t) const;

private:
	void		upload_sets();
	void		choose_strategy();
	double		bitmap_pass_fraction() const;
	double		coproc_candidate_fraction() const;
	void		plan_memory();
	void		plan_coproc();
	bool		coproc_instead();
	void		build_index(uint32_t v0, uint32_t v1);
	void		estimate_work();
	bool		launch_next();
	ProbeArgs	probe_args(const Work &w) const;
	void		launch(const Work &w);
	uint32_t	entries_of(uint32_t v) const;
	void		take_records(unsigned long long nrec, size_t *n, uint64_t *count);

	/* co-processing's pipeline */
	void		fetch_coproc(size_t *n, uint64_t *count, int *exhausted);
	void		filter_batch(int slot);
	bool		launch_next_coproc(bool may_filter);
	void		launch_verify(const Work &w);

	/* the prepared input (host memory owned by the host handle) */
	SjJaccardJoin *host_;
	uint32_t	nsets_ = 0;
	uint32_t	universe_ = 0;
	uint32_t	maxsize_ = 0;
	const uint64_t *off_ = nullptr;
	const uint32_t *tok_ = nullptr;
	const uint32_t *wl_ = nullptr;
	const uint32_t *wr_ = nullptr;
	const uint32_t *minov_ = nullptr;
	const uint32_t *minsize_ = nullptr;
	const uint32_t *size_start_ = nullptr;
	double		threshold_;
	int			threads_;
	bool		self_;
	bool		count_only_;
	Strategy	strategy_ = Strategy::Prefix;
	char		strategy_str_[64] = "gpu prefix-block";
	uint32_t	sig_words_ = 1;	/* bitmap: signature words, a power of 2 */
	bool		sig_exact_ = false;

	Budget		budget_;
	sjgpu::Stream stream_;
	sjgpu::EventTimer kernel_timer_;
	int			sms_ = 1;

	/* resident: the distinct sets, member counts, bounds */
	DeviceBuffer<uint64_t> d_off_;
	DeviceBuffer<uint32_t> d_tok_;
	DeviceBuffer<uint32_t> d_wl_;
	DeviceBuffer<uint32_t> d_wr_;
	DeviceBuffer<uint32_t> d_minov_;
	DeviceBuffer<uint32_t> d_minsize_;
	DeviceBuffer<uint32_t> d_size_start_;
	DeviceBuffer<unsigned long long> d_sig_;	/* bitmap signatures */

	/* output of one chunk */
	size_t		cap_ = 0;
	DeviceBuffer<uint32_t> d_out_u_;
	DeviceBuffer<uint32_t> d_out_v_;
	DeviceBuffer<double> d_out_sim_;
	DeviceBuffer<unsigned long long> d_counter_;
	PinnedBuffer<uint32_t> h_out_u_;
	PinnedBuffer<uint32_t> h_out_v_;
	PinnedBuffer<double> h_out_sim_;
	PinnedBuffer<unsigned long long> h_counter_;

	/* token counts over all distinct sets: indexing prefixes, all tokens */
	std::vector<uint32_t> cnt_idx_;
	std::vector<uint32_t> cnt_all_;

	/* index of the current partition of candidate sets */
	std::vector<uint64_t> ent_prefix_;	/* entries of sets [0, v), host */
	std::vector<Work> parts_;	/* [v0, v1) in u0/u1 unused */
	size_t		part_ = 0;
	bool		part_ready_ = false;
	uint64_t	max_entries_ = 0;	/* per partition, from the budget */
	DeviceBuffer<uint64_t> d_list_off_;
	DeviceBuffer<uint64_t> d_post_;

	/*
	 * Co-processing: two slots of candidate pairs (x << 32 | y).  The CPU
	 * filters into the slot that is not on the device while the device
	 * verifies the other; a Work's u0/u1 are then candidate indices.
	 */
	size_t		ccap_ = 0;		/* candidates per slot */
	PinnedBuffer<uint64_t> h_cand_[2];
	DeviceBuffer<uint64_t> d_cand_[2];
	int			dev_slot_ = 1;	/* the slot the device verifies (or did) */
	int			pending_slot_ = -1;	/* filled, not yet sent; or -1 */
	size_t		pending_n_ = 0;
	bool		filter_done_ = false;
	sjgpu::Event batch_done_;	/* after a verification's counter copy */

	/* probe progress */
	std::vector<uint64_t> work_prefix_;	/* estimated work of probes [0, u) */
	uint32_t	next_u_ = 0;
	std::vector<Work> stack_;	/* split work after an overflow */
	bool		inflight_ = false;
	Work		cur_ = {0, 0, 0, 0};
	uint64_t	cur_work_ = 0;
	double		target_work_ = (double) ((uint64_t) 1 << 24);
	double		records_per_work_ = 0.0;

	/* timings */
	double		build_ms_ = 0.0;
	double		transfer_ms_ = 0.0;
	uint64_t	reruns_ = 0;
};

JaccardDevice::JaccardDevice(SjJaccardJoin *host, double threshold,
							 const SjJoinOptions *options)
	: host_(host),
	  threshold_(threshold),
	  threads_(options->cpu_threads > 0 ? options->cpu_threads : 1),
	  count_only_(options->count_only != 0)
{
	double		t0 = sj_now_ms();

	sj_jaccard_prepared_sets(host, &nsets_, &universe_, &off_, &tok_, &wl_, &wr_);
	sj_jaccard_prepared_bounds(host, &maxsize_, &minov_, &minsize_, &size_start_);
	self_ = wr_ == nullptr;
	budget_.set_limit(sjgpu::memory_limit(options->gpu_memory_limit));
	if (nsets_ == 0)
		return;
	sms_ = sjgpu::multiprocessor_count();
	stream_.create();
	kernel_timer_.create();
	{
		double		t1 = sj_now_ms();
		std::exception_ptr upload_error;

		/*
		 * The sets go to the device (pageable copies: the host waits) while
		 * the host threads compute the cost model.
		 */
		{
			sigset_t	all,
						old;

			/* signals stay with the backend's main thread (sjthreads.c) */
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &old);
			std::thread uploader;

			try
			{
				uploader = std::thread([&] {
					try
					{
						sjgpu::use_device(options->gpu_device);
						upload_sets();
					}
					catch (...)
					{
						upload_error = std::current_exception();
					}
				});
			}
			catch (...)
			{
				pthread_sigmask(SIG_SETMASK, &old, nullptr);
				throw;
			}
			pthread_sigmask(SIG_SETMASK, &old, nullptr);

			try
			{
				choose_strategy();
			}
			catch (...)
			{
				uploader.join();
				throw;
			}
			uploader.join();
		}
		if (upload_error)
			std::rethrow_exception(upload_error);
		phase_ms[kPhaseStrategy] = sj_now_ms() - t1;
		t1 = sj_now_ms();
		plan_memory();
		phase_ms[kPhaseMemory] = sj_now_ms() - t1;
	}
	if (strategy_ == Strategy::Bitmap)
		snprintf(strategy_str_, sizeof(strategy_str_), "gpu bitmap (%u bits%s)",
				 sig_words_ * 64, sig_exact_ ? ", exact" : "");
	else if (strategy_ == Strategy::Coproc)
		snprintf(strategy_str_, sizeof(strategy_str_), "co-processing (cpu filter, gpu verify)");
	else
		snprintf(strategy_str_, sizeof(strategy_str_), "%s",
				 strategy_ == Strategy::Brute ? "gpu brute-force overlap" : "gpu prefix-block");
	if (parts_.size() > 1)
		snprintf(strategy_str_ + strlen(strategy_str_),
				 sizeof(strategy_str_) - strlen(strategy_str_), ", %zu index blocks",
				 parts_.size());
	build_ms_ += sj_now_ms() - t0;
}

JaccardDevice::~JaccardDevice()
{
	/* a chunk may still run: let it finish before its buffers go */
	if (stream_.get())
		(void) cudaStreamSynchronize(stream_.get());
}

const char *
JaccardDevice::strategy_name() const
{
	return strategy_str_;
}

/* Index entries of distinct set v under the chosen strategy. */
uint32_t
JaccardDevice::entries_of(uint32_t v) const
{
	uint32_t	len = (uint32_t) (off_[v + 1] - off_[v]);

	if (strategy_ == Strategy::Bitmap || strategy_ == Strategy::Coproc)
		return 0;				/* no device index */
	return strategy_ == Strategy::Prefix ? len - minov_[2 * len] + 1 : len;
}

/* Bitmap signature of set v (host, for the cost model's sample). */
static void
host_signature(const uint64_t *off, const uint32_t *tok, uint32_t v, uint32_t words,
			   uint64_t *sig)
{
	memset(sig, 0, words * sizeof(uint64_t));
	for (uint64_t i = off[v]; i < off[v + 1]; i++)
	{
		uint32_t	b = tok[i] & (words * 64 - 1);

		sig[b / 64] |= (uint64_t) 1 << (b % 64);
	}
}

/* Copy the distinct sets and their member counts to the device. */
void
JaccardDevice::upload_sets()
{
	cudaStream_t s = stream_.get();

	d_off_ = upload(&budget_, off_, (size_t) nsets_ + 1, "set offsets", s);
	d_tok_ = upload(&budget_, tok_, (size_t) off_[nsets_], "set tokens", s);
	d_wl_ = upload(&budget_, wl_, nsets_, "member counts", s);
	if (!self_)
		d_wr_ = upload(&budget_, wr_, nsets_, "member counts", s);
}

/* The cost model of the file header. */
void
JaccardDevice::choose_strategy()
{
	uint64_t	ntasks = div_up<uint64_t>(nsets_, kHostTask);
	std::vector<double> p(ntasks, 0.0),
				b(ntasks, 0.0),
				r(ntasks, 0.0);
	double		sp = 0,
				sb = 0,
				sr = 0;

	/*
	 * Token counts over the distinct sets, in parallel: private histograms
	 * over ranges of sets, as many as keep the histogram work within a
	 * quarter of the counting, then summed by token range.
	 */
	{
		uint64_t	total = off_[nsets_];
		size_t		ucnt = (size_t) universe_ + 1;
		int			parts = (int) std::max<uint64_t>(1, std::min<uint64_t>(threads_,
																			  total / (4 * ucnt)));
		std::vector<uint32_t> hist((size_t) parts * 2 * ucnt, 0);
		auto		count = [&](uint64_t part) {
			uint32_t   *all = hist.data() + part * 2 * ucnt,
					   *idx = all + ucnt;
			uint32_t	v0 = (uint32_t) ((uint64_t) nsets_ * part / parts),
						v1 = (uint32_t) ((uint64_t) nsets_ * (part + 1) / parts);

			for (uint32_t v = v0; v < v1; v++)
			{
				const uint32_t *t = tok_ + off_[v];
				uint32_t	len = (uint32_t) (off_[v + 1] - off_[v]);
				uint32_t	ip = len - minov_[2 * len] + 1;

				for (uint32_t i = 0; i < len; i++)
				{
					all[t[i]]++;
					if (i < ip)
						idx[t[i]]++;
				}
			}
		};
		auto		merge = [&](uint64_t task) {
			size_t		k0 = ucnt * task / parts,
						k1 = ucnt * (task + 1) / parts;

			for (size_t k = k0; k < k1; k++)
			{
				uint32_t	a = 0,
							b = 0;

				for (int p = 0; p < parts; p++)
				{
					a += hist[(size_t) p * 2 * ucnt + k];
					b += hist[(size_t) p * 2 * ucnt + ucnt + k];
				}
				cnt_all_[k] = a;
				cnt_idx_[k] = b;
			}
		};

		cnt_idx_.assign(ucnt, 0);
		cnt_all_.assign(ucnt, 0);
		parallel_for(threads_, parts, count);
		parallel_for(threads_, parts, merge);
	}
	auto		sums = [&](uint64_t task) {
		uint32_t	end = (uint32_t) std::min<uint64_t>(nsets_, (task + 1) * kHostTask);

		uint64_t	pt = 0,
					bt = 0,
					rt = 0;

		/* local sums: neighbouring tasks' totals share a cache line */
		for (uint32_t u = (uint32_t) (task * kHostTask); u < end; u++)
		{
			const uint32_t *t = tok_ + off_[u];
			uint32_t	len = (uint32_t) (off_[u + 1] - off_[u]);
			uint32_t	ms = minsize_[len];
			uint32_t	pl = len - minov_[len + ms] + 1;
			uint32_t	lo = size_start_[ms];

			for (uint32_t i = 0; i < len; i++)
			{
				bt += cnt_all_[t[i]];
				if (i < pl)
					pt += cnt_idx_[t[i]];
			}
			if (u > lo)
				rt += u - lo;
		}
		p[task] = pt;
		b[task] = bt;
		r[task] = rt;
	};

	parallel_for(threads_, ntasks, sums);
	for (uint64_t k = 0; k < ntasks; k++)
	{
		sp += p[k];
		sb += b[k];
		sr += r[k];
	}

	/* bitmap signatures: enough bits for the universe, at most 2048 */
	sig_words_ = 1;
	while (sig_words_ < (uint32_t) kMaxSigWords && (uint64_t) sig_words_ * 64 < universe_)
		sig_words_ *= 2;
	if (forced_sig_words > 0)
		sig_words_ = (uint32_t) forced_sig_words;
	sig_exact_ = (uint64_t) sig_words_ * 64 >= universe_;
	{
		double		avg = (double) off_[nsets_] / nsets_;
		double		cost_prefix = 0.5 * sp * (8.0 + avg / 2.0);
		double		cost_brute = 0.5 * 1.5 * sb + sr / 4.0;
		double		pass = sig_exact_ ? 0.0 : bitmap_pass_fraction();
		double		cost_bitmap = 0.5 * sr * (1.0 + sig_words_ / 2.0 + pass * avg);

		double		best;
		double		filter_cpu = 0.5 * sp * kCpuEntryCost / threads_;

		strategy_ = cost_brute < cost_prefix ? Strategy::Brute : Strategy::Prefix;
		if (cost_bitmap < std::min(cost_brute, cost_prefix))
			strategy_ = Strategy::Bitmap;
		best = std::min(cost_bitmap, std::min(cost_brute, cost_prefix));

		/*
		 * Co-processing: the CPU threads filter while the device verifies,
		 * so the slower of the two; the candidates are sampled only when
		 * the filtering alone could win.
		 */
		if (filter_cpu < best)
		{
			double		cand = coproc_candidate_fraction() * sr;
			double		verify = 0.5 * cand * (kVerifyPairCost + 2.0 * avg);

			if (std::max(filter_cpu, verify) < best)
				strategy_ = Strategy::Coproc;
		}
	}
	if (forced_strategy >= 1 && forced_strategy <= 4)
		strategy_ = forced_strategy == 1 ? Strategy::Prefix :
			forced_strategy == 2 ? Strategy::Brute :
			forced_strategy == 3 ? Strategy::Bitmap : Strategy::Coproc;
}

/*
 * The fraction of length-compatible candidates whose signature bound
 * reaches the required overlap, on a deterministic sample of up to 256
 * probes of 64 candidates each.
 */
double
JaccardDevice::bitmap_pass_fraction() const
{
	uint64_t	su[kMaxSigWords],
				sv[kMaxSigWords];
	uint64_t	tried = 0,
				passed = 0;
	uint32_t	probes = std::min<uint32_t>(nsets_, 256);
	uint64_t	x = 88172645463325252ull;

	for (uint32_t k = 0; k < probes; k++)
	{
		uint32_t	u = (uint32_t) ((uint64_t) k * nsets_ / probes);
		uint32_t	lu = (uint32_t) (off_[u + 1] - off_[u]);
		uint32_t	lo = size_start_[minsize_[lu]];

		if (lo >= u)
			continue;
		host_signature(off_, tok_, u, sig_words_, su);
		for (int c = 0; c < 64; c++)
		{
			uint32_t	v,
						lv,
						bits = 0;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = lo + (uint32_t) (x % (u - lo));
			lv = (uint32_t) (off_[v + 1] - off_[v]);
			host_signature(off_, tok_, v, sig_words_, sv);
			for (uint32_t w = 0; w < sig_words_; w++)
				bits += (uint32_t) __builtin_popcountll(su[w] ^ sv[w]);
			tried++;
			if (bits <= lu + lv && (lu + lv - bits) / 2 >= minov_[lu + lv])
				passed++;
		}
	}
	return tried ? (double) passed / tried : 1.0;
}

/*
 * The fraction of length-compatible candidates that survive the CPU
 * engine's prefix and positional filters (the co-processing strategy's
 * candidates), on the sample of bitmap_pass_fraction: the probing prefix of
 * u merged with the indexing prefix of v, each common token checked as
 * jc_filter_one checks it.
 */
double
JaccardDevice::coproc_candidate_fraction() const
{
	uint64_t	tried = 0,
				passed = 0;
	uint32_t	probes = std::min<uint32_t>(nsets_, 256);
	uint64_t	x = 88172645463325252ull;

	for (uint32_t k = 0; k < probes; k++)
	{
		uint32_t	u = (uint32_t) ((uint64_t) k * nsets_ / probes);
		const uint32_t *tu = tok_ + off_[u];
		uint32_t	lu = (uint32_t) (off_[u + 1] - off_[u]);
		uint32_t	ms = minsize_[lu];
		uint32_t	lo = size_start_[ms];
		uint32_t	pu = lu - minov_[lu + ms] + 1;

		if (lo >= u)
			continue;
		for (int c = 0; c < 64; c++)
		{
			uint32_t	v,
						lv,
						pv,
						alpha,
						i = 0,
						p = 0,
						ov = 0;
			const uint32_t *tv;
			bool		dead = false;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = lo + (uint32_t) (x % (u - lo));
			tv = tok_ + off_[v];
			lv = (uint32_t) (off_[v + 1] - off_[v]);
			pv = lv - minov_[2 * lv] + 1;
			alpha = minov_[lu + lv];
			tried++;
			while (i < pu && p < pv && !dead)
			{
				if (tu[i] < tv[p])
					i++;
				else if (tu[i] > tv[p])
					p++;
				else
				{
					if (ov + 1 + std::min(lu - i - 1, lv - p - 1) >= alpha)
						ov++;
					else
						dead = true;
					i++;
					p++;
				}
			}
			if (ov > 0 && !dead)
				passed++;
		}
	}
	return tried ? (double) passed / tried : 1.0;
}

/*
 * Upload the resident data, size the output buffer, and cut the candidate
 * sets into index partitions that fit what is left of the budget.
 */
void
JaccardDevice::plan_memory()
{
	cudaStream_t s = stream_.get();
	uint64_t	max_one = 0;

	d_minov_ = upload(&budget_, minov_, (size_t) 2 * maxsize_ + 1, "bounds", s);
	d_minsize_ = upload(&budget_, minsize_, (size_t) maxsize_ + 1, "bounds", s);
	d_size_start_ = upload(&budget_, size_start_, (size_t) maxsize_ + 2, "bounds", s);
	d_counter_ = DeviceBuffer<unsigned long long>(&budget_, 2, "result counter");
	h_counter_.allocate(2);
	if (strategy_ == Strategy::Coproc)
	{
		plan_coproc();
		return;
	}
	if (strategy_ == Strategy::Bitmap &&
		!budget_.fits((size_t) nsets_ * sig_words_ * sizeof(unsigned long long)) &&
		coproc_instead())
		return;
	if (strategy_ == Strategy::Bitmap)
	{
		int			grid = (int) std::min<uint64_t>(div_up<uint64_t>((uint64_t) nsets_ * sig_words_,
																  kBlock),
													 (uint64_t) sms_ * 32);

		d_sig_ = DeviceBuffer<unsigned long long>(&budget_, (size_t) nsets_ * sig_words_,
												  "bitmap signatures");
		signature_kernel<<<grid, kBlock, 0, s>>>(d_off_.get(), d_tok_.get(), nsets_,
												 sig_words_, d_sig_.get());
		SJGPU_CHECK_LAUNCH("signature_kernel");
	}

	/* entries per candidate set, and the largest partition that fits */
	ent_prefix_.assign((size_t) nsets_ + 1, 0);
	for (uint32_t v = 0; v < nsets_; v++)
	{
		uint32_t	e = entries_of(v);

		ent_prefix_[v + 1] = ent_prefix_[v] + e;
		max_one = std::max<uint64_t>(max_one, e);
	}
	{
		size_t		avail = budget_.available();
		size_t		list_bytes = ((size_t) universe_ + 2) * sizeof(uint64_t);
		size_t		out_bytes,
					temp = 0,
					idx_avail;
		uint64_t	emax;

		/* output: a quarter of what is left, within [kMinRecords, kMaxRecords] */
		cap_ = count_only_ ? 0 : std::min(kMaxRecords, avail / 4 / 16);
		/* never more than the distinct pairs there are */
		cap_ = (size_t) std::min<uint64_t>(cap_, (uint64_t) nsets_ * (nsets_ - 1) / 2 + 1);
		if (!count_only_ && cap_ < kMinRecords)
			cap_ = kMinRecords;
		out_bytes = cap_ * 16;
		if (out_bytes + list_bytes > avail)
		{
			if (coproc_instead())
				return;
			throw Error(SJ_ERR_DEVICE_NOMEM,
						"jaccard_join: %u distinct sets leave too little of the device memory limit (%zu bytes) for an index",
						nsets_, budget_.limit());
		}
		idx_avail = avail - out_bytes - list_bytes;
		/* per entry: keys and values twice (radix sort) and a set offset */
		emax = std::min<uint64_t>(idx_avail / 32, ent_prefix_[nsets_]);
		emax = std::min<uint64_t>(emax, (uint64_t) 1 << 30);
		if (emax > 0)
		{
			cub::DoubleBuffer<uint32_t> k(nullptr, nullptr);
			cub::DoubleBuffer<uint64_t> vv(nullptr, nullptr);

			SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, k, vv, (int) emax,
														0, bits_for(universe_), s));
			temp += 4096;
			emax = idx_avail > temp ? std::min<uint64_t>(emax, (idx_avail - temp) / 32) : 0;
		}
		if (strategy_ != Strategy::Bitmap && (emax < max_one || emax == 0))
		{
			if (coproc_instead())
				return;
			throw Error(SJ_ERR_DEVICE_NOMEM,
						"jaccard_join: the index of one set (%llu entries) does not fit in the device memory limit (%zu bytes)",
						(unsigned long long) max_one, budget_.limit());
		}
		max_entries_ = emax;
	}
	if (!count_only_)
	{
		d_out_u_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
		d_out_v_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
		d_out_sim_ = DeviceBuffer<double>(&budget_, cap_, "result records");
		h_out_u_.allocate(cap_);
		h_out_v_.allocate(cap_);
		h_out_sim_.allocate(cap_);
	}

	/* partitions [v0, v1) of at most max_entries_ entries */
	{
		uint32_t	v0 = 0;

		while (v0 < nsets_)
		{
			uint32_t	v1 = v0;

			while (v1 < nsets_ && ent_prefix_[v1 + 1] - ent_prefix_[v0] <= max_entries_)
				v1++;
			parts_.push_back(Work {0, 0, v0, v1});
			v0 = v1;
		}
	}
}

/*
 * Co-processing's memory: two slots of candidate pairs on the device and
 * pinned on the host, and result records for one slot (a candidate gives
 * at most one record), from what is left of the budget; the CPU engine's
 * index for its filters.
 */
void
JaccardDevice::plan_coproc()
{
	size_t		per = 2 * sizeof(uint64_t) + (count_only_ ? 0 : 16);
	uint64_t	pairs = (uint64_t) nsets_ * (nsets_ - 1) / 2 + 1;
	char		msg[SJ_ERRMSG_LEN] = "";
	SjStatus	st;

	ccap_ = std::min(kMaxCandidates, budget_.available() / per);
	if (ccap_ < kMinRecords)
		throw Error(SJ_ERR_DEVICE_NOMEM,
					"jaccard_join: %u distinct sets leave too little of the device memory limit (%zu bytes) for candidate batches",
					nsets_, budget_.limit());
	ccap_ = (size_t) std::min<uint64_t>(ccap_, pairs);
	if (forced_coproc_candidates > 0)
		ccap_ = std::min(ccap_, forced_coproc_candidates);
	cap_ = count_only_ ? 0 : ccap_;
	if (!count_only_ && forced_coproc_records > 0)
		cap_ = std::min(cap_, forced_coproc_records);
	for (int k = 0; k < 2; k++)
	{
		d_cand_[k] = DeviceBuffer<uint64_t>(&budget_, ccap_, "candidate pairs");
		h_cand_[k].allocate(ccap_);
	}
	if (!count_only_)
	{
		d_out_u_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
		d_out_v_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
		d_out_sim_ = DeviceBuffer<double>(&budget_, cap_, "result records");
		h_out_u_.allocate(cap_);
		h_out_v_.allocate(cap_);
		h_out_sim_.allocate(cap_);
	}
	batch_done_.create(false);
	st = sj_jaccard_filter_begin(host_, msg);
	if (st != SJ_OK)
		throw Error(st, "%s", msg);
}

/*
 * When no device index fits (automatic choice only): co-processing needs
 * none, so it takes over if its candidate batches fit.  Returns false
 * when they do not either.
 */
bool
JaccardDevice::coproc_instead()
{
	size_t		per = 2 * sizeof(uint64_t) + (count_only_ ? 0 : 16);

	if (forced_strategy != 0)
		return false;
	/* the signature kernel may still run: let it finish before its buffer goes */
	SJGPU_CHECK(cudaStreamSynchronize(stream_.get()));
	d_sig_.reset();
	if (budget_.available() < kMinRecords * per)
		return false;
	strategy_ = Strategy::Coproc;
	plan_coproc();
	return true;
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

			index_fill_kernel<<<grid, kBlock, 0, s>>>(d_off_.get(), d_tok_.get(),
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

/*
 * Work estimate of every probe against the current partition: the list
 * entries it will visit (prefix: probing-prefix lists; brute: all lists
 * plus the window counters), as prefix sums over the probes.
 */
void
JaccardDevice::estimate_work()
{
	const Work &p = parts_[part_];
	std::vector<uint32_t> part_cnt;
	const std::vector<uint32_t> *cnt;

	if (p.v0 == 0 && p.v1 == nsets_)
		cnt = strategy_ == Strategy::Prefix ? &cnt_idx_ : &cnt_all_;
	else
	{
		part_cnt.assign((size_t) universe_ + 1, 0);
		for (uint32_t v = p.v0; v < p.v1; v++)
		{
			const uint32_t *t = tok_ + off_[v];
			uint32_t	e = entries_of(v);

			for (uint32_t i = 0; i < e; i++)
				part_cnt[t[i]]++;
		}
		cnt = &part_cnt;
	}
	work_prefix_.assign((size_t) nsets_ + 1, 0);
	auto		per_probe = [&](uint64_t task) {
		uint32_t	end = (uint32_t) std::min<uint64_t>(nsets_, (task + 1) * kHostTask);

		for (uint32_t u = (uint32_t) (task * kHostTask); u < end; u++)
		{
			const uint32_t *t = tok_ + off_[u];
			uint32_t	len = (uint32_t) (off_[u + 1] - off_[u]);
			uint32_t	ms = minsize_[len];
			uint32_t	n = strategy_ == Strategy::Prefix ? len - minov_[len + ms] + 1 : len;
			uint64_t	w = 1 + n;

			if (u > p.v0)
			{
				uint32_t	lo = std::max(p.v0, size_start_[ms]);
				uint32_t	hi = std::min(p.v1, u);

				if (strategy_ == Strategy::Bitmap)
				{
					if (hi > lo)
						w += (uint64_t) (hi - lo) * (2 + sig_words_) / 2;
				}
				else
					for (uint32_t i = 0; i < n; i++)
						w += (*cnt)[t[i]];
				if (strategy_ == Strategy::Brute && hi > lo)
					w += (hi - lo) / 4 + (uint64_t) len * div_up<uint32_t>(hi - lo, kWindow);
			}
			work_prefix_[u + 1] = w;
		}
	};

	parallel_for(threads_, div_up<uint64_t>(nsets_, kHostTask), per_probe);
	for (uint32_t u = 0; u < nsets_; u++)
		work_prefix_[u + 1] += work_prefix_[u];
}

/* The kernels' arguments for one piece of work. */
ProbeArgs
JaccardDevice::probe_args(const Work &w) const
{
	ProbeArgs	a;

	a.off = d_off_.get();
	a.tok = d_tok_.get();
	a.wl = d_wl_.get();
	a.wr = self_ ? d_wl_.get() : d_wr_.get();
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

/* Launch one piece of work (asynchronously; counter copied back after it). */
void
JaccardDevice::launch(const Work &w)
{
	cudaStream_t s = stream_.get();
	ProbeArgs	a = probe_args(w);

	SJGPU_CHECK(cudaMemsetAsync(d_counter_.get(), 0, 2 * sizeof(unsigned long long), s));
	kernel_timer_.start(s);
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
	kernel_timer_.stop(s);
	SJGPU_CHECK(cudaMemcpyAsync(h_counter_.get(), d_counter_.get(),
								2 * sizeof(unsigned long long),
								cudaMemcpyDeviceToHost, s));
	cur_ = w;
	cur_work_ = work_prefix_[w.u1] - work_prefix_[w.u0];
	inflight_ = true;
}

/*
 * Start the next piece of work: a split piece after an overflow, else the
 * next chunk of probes of this partition, else the next partition.
 * Returns false when the join is finished.
 */
bool
JaccardDevice::launch_next()
{
	if (!stack_.empty())
	{
		Work		w = stack_.back();

		stack_.pop_back();
		launch(w);
		return true;
	}
	for (;;)
	{
		const Work *p;

		if (part_ >= parts_.size())
			return false;
		p = &parts_[part_];
		if (!part_ready_)
		{
			double		t1 = sj_now_ms();

			build_index(p->v0, p->v1);
			phase_ms[kPhaseIndex] += sj_now_ms() - t1;
			t1 = sj_now_ms();
			estimate_work();
			phase_ms[kPhaseEstimate] += sj_now_ms() - t1;
			next_u_ = p->v0 + 1;
			part_ready_ = true;
		}
		if (next_u_ < nsets_)
			break;
		part_++;
		part_ready_ = false;
	}
	{
		const Work &p = parts_[part_];
		uint32_t	u0 = next_u_;
		double		target = target_work_;
		uint64_t	goal;
		uint32_t	u1;

		if (!count_only_ && records_per_work_ > 0)
			target = std::min(target, (double) cap_ / 2 / records_per_work_);
		goal = work_prefix_[u0] + (uint64_t) std::max(target, 1.0);
		u1 = (uint32_t) (std::upper_bound(work_prefix_.begin() + u0 + 1,
										  work_prefix_.end(), goal) -
						 work_prefix_.begin()) - 1;
		u1 = std::max(u1, u0 + 1);
		u1 = std::min(u1, nsets_);
		next_u_ = u1;
		launch(Work {u0, u1, p.v0, p.v1});
	}
	return true;
}

/*
 * The record source: wait for the chunk in flight (re-running it in
 * smaller pieces if its output overflowed), copy its records back, launch
 * the next chunk, and hand the records over.
 */
void
JaccardDevice::fetch(const uint32_t **u, const uint32_t **v, const double **sim,
					 size_t *n, uint64_t *count, int *exhausted)
{
	*u = h_out_u_.get();
	*v = h_out_v_.get();
	*sim = h_out_sim_.get();
	*n = 0;
	*count = 0;
	*exhausted = 0;
	if (nsets_ == 0)
	{
		*exhausted = 1;
		return;
	}
	if (strategy_ == Strategy::Coproc)
	{
		fetch_coproc(n, count, exhausted);
		return;
	}
	for (;;)
	{
		unsigned long long nrec;
		double		ms;

		if (!inflight_ && !launch_next())
		{
			*exhausted = 1;
			return;
		}
		{
			double		t1 = sj_now_ms();

			stream_.synchronize();
			phase_ms[kPhaseWait] += sj_now_ms() - t1;
		}
		inflight_ = false;
		ms = kernel_timer_.elapsed_ms();
		nrec = h_counter_.get()[0];
		if (!count_only_ && nrec > cap_)
		{
			/* overflow: split the piece and run the halves */
			Work		w = cur_,
						a = w,
						b = w;

			reruns_++;
			if (w.u1 - w.u0 > 1)
			{
				a.u1 = b.u0 = w.u0 + (w.u1 - w.u0) / 2;
			}
			else
			{
				if (w.v1 - w.v0 <= 1)
					throw Error(SJ_ERR_INTERNAL, "jaccard_join: one pair overflowed the result buffer");
				a.v1 = b.v0 = w.v0 + (w.v1 - w.v0) / 2;
			}
			stack_.push_back(b);
			stack_.push_back(a);
			if (cur_work_ > 0)
				records_per_work_ = std::max(records_per_work_, (double) nrec / cur_work_);
			continue;
		}

		/* adapt the chunk size to the measured time and result density */
		if (cur_work_ > 0 && stack_.empty())
		{
			double		want = ms > 0.5 ? (double) cur_work_ / ms * kChunkMs
				: target_work_ * 4;

			want = std::min(target_work_ * 4, std::max(target_work_ / 4, want));
			target_work_ = std::max(1024.0, want);
			if (!count_only_)
				records_per_work_ = std::max(records_per_work_ * 0.5,
											 (double) nrec / cur_work_);
		}
		take_records(nrec, n, count);

		/* the device works on the next chunk while the caller expands this */
		if (!launch_next())
			*exhausted = 1;
		return;
	}
}

/*
 * Co-processing: filter the next candidates on the CPU threads into a free
 * slot (the one the device is not verifying); it becomes pending if any
 * came out.
 */
void
JaccardDevice::filter_batch(int slot)
{
	char		msg[SJ_ERRMSG_LEN] = "";
	size_t		n = 0;
	int			done = 0;
	SjStatus	st;

	st = sj_jaccard_filter_next(host_, h_cand_[slot].get(), ccap_, &n, &done, msg);
	if (st != SJ_OK)
		throw Error(st, "%s", msg);
	filter_done_ = done != 0;
	if (n > 0)
	{
		pending_slot_ = slot;
		pending_n_ = n;
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

/*
 * Co-processing: start the next verification: a split piece after an
 * overflow, else the pending slot (sent to the device first), else, when
 * may_filter, a slot filtered now.  Returns false when nothing was started.
 */
bool
JaccardDevice::launch_next_coproc(bool may_filter)
{
	if (!stack_.empty())
	{
		Work		w = stack_.back();

		stack_.pop_back();
		launch_verify(w);
		return true;
	}
	if (pending_slot_ < 0 && may_filter && !filter_done_)
		filter_batch(1 - dev_slot_);
	if (pending_slot_ < 0)
		return false;
	{
		int			slot = pending_slot_;
		size_t		n = pending_n_;

		/* the slot's last verification has finished: its copy may start */
		SJGPU_CHECK(cudaMemcpyAsync(d_cand_[slot].get(), h_cand_[slot].get(),
									n * sizeof(uint64_t), cudaMemcpyHostToDevice,
									stream_.get()));
		dev_slot_ = slot;
		pending_slot_ = -1;
		pending_n_ = 0;
		launch_verify(Work {0, (uint32_t) n, 0, 0});
	}
	return true;
}

/*
 * The record source under co-processing, a two-slot pipeline: while the
 * device verifies one slot, the CPU threads filter the next candidates
 * into the other; then the verified records come back (a verification
 * whose records overflow is split and re-run from the candidates still on
 * the device), the pending slot goes to the device, and the records are
 * handed over while it runs.
 */
/*
 * A finished launch's nrec records (or, counting, its total) handed to the
 * caller: copied from the device into the pinned host buffers.
 */
void
JaccardDevice::take_records(unsigned long long nrec, size_t *n, uint64_t *count)
{
	*count = count_only_ ? h_counter_.get()[1] : 0;
	if (!count_only_ && nrec > 0)
	{
		double		t0 = sj_now_ms();
		cudaStream_t s = stream_.get();

		SJGPU_CHECK(cudaMemcpyAsync(h_out_u_.get(), d_out_u_.get(), nrec * sizeof(uint32_t),
									cudaMemcpyDeviceToHost, s));
		SJGPU_CHECK(cudaMemcpyAsync(h_out_v_.get(), d_out_v_.get(), nrec * sizeof(uint32_t),
									cudaMemcpyDeviceToHost, s));
		SJGPU_CHECK(cudaMemcpyAsync(h_out_sim_.get(), d_out_sim_.get(), nrec * sizeof(double),
									cudaMemcpyDeviceToHost, s));
		stream_.synchronize();
		transfer_ms_ += sj_now_ms() - t0;
	}
	*n = (size_t) nrec;
}

void
JaccardDevice::fetch_coproc(size_t *n, uint64_t *count, int *exhausted)
{
	for (;;)
	{
		unsigned long long nrec;

		if (!inflight_ && !launch_next_coproc(true))
		{
			/* nothing left, or a chunk of probes without candidates */
			*exhausted = filter_done_ ? 1 : 0;
			return;
		}

		/* the CPU filters the next batch while the device verifies */
		if (pending_slot_ < 0 && !filter_done_)
			filter_batch(1 - dev_slot_);
		{
			double		t1 = sj_now_ms();

			batch_done_.synchronize();
			phase_ms[kPhaseWait] += sj_now_ms() - t1;
		}
		inflight_ = false;
		nrec = h_counter_.get()[0];
		if (!count_only_ && nrec > cap_)
		{
			/* overflow: verify the two halves of the candidates again */
			Work		a = cur_,
						b = cur_;

			reruns_++;
			if (cur_.u1 - cur_.u0 <= 1)
				throw Error(SJ_ERR_INTERNAL, "jaccard_join: one pair overflowed the result buffer");
			a.u1 = b.u0 = cur_.u0 + (cur_.u1 - cur_.u0) / 2;
			stack_.push_back(b);
			stack_.push_back(a);
			continue;
		}
		take_records(nrec, n, count);

		/* the device verifies the next slot while the caller expands this */
		if (!launch_next_coproc(false) && filter_done_)
			*exhausted = 1;
		return;
	}
}

void
JaccardDevice::add_timings(SjTimings *t) const
{
	t->build_ms += build_ms_;
	t->transfer_ms += transfer_ms_;
	t->reruns += reruns_;
	t->device_bytes = budget_.peak();
}

}								/* namespace */

/* ------------------------------------------------------------------------
 * The C boundary
 * ------------------------------------------------------------------------ */

struct SjGpuJaccardJoin
{
	SjJaccardJoin *host = nullptr;
	std::unique_ptr<JaccardDevice> dev;
	double		start_ms = 0;	/* waiting for the device to start */
	sjgpu::MultiJoin *multi = nullptr;	/* set: on several devices, and
										 * nothing above is used */

	~SjGpuJaccardJoin()
	{
		sjgpu::multi_end(multi);
		dev.reset();
		sj_jaccard_cpu_end(host);
	}
};

/* Record source callback of the host handle: the device's next chunk. */
static SjStatus
jaccard_source(void *ctx, const uint32_t **u, const uint32_t **v,
			   const double **sim, size_t *n, uint64_t *count, int *exhausted,
			   char *errmsg)
{
	return sjgpu::guard(errmsg, [&] {
		static_cast<JaccardDevice *>(ctx)->fetch(u, v, sim, n, count, exhausted);
	});
}

/*
 * Test hook (not in sjgpu.h): 0 automatic, 1 prefix, 2 brute force,
 * 3 bitmap, 4 co-processing.
 */
extern "C" void
sjgpu_jaccard_set_test_strategy(int strategy, int signature_words)
{
	forced_strategy = strategy;
	forced_sig_words = signature_words;
}

/*
 * Test hook (not in sjgpu.h): co-processing's candidate pairs per pipeline
 * batch and result records per verification, at most (0 = from the
 * memory budget); small values force many batches and re-runs.
 */
extern "C" void
sjgpu_jaccard_set_test_coproc(size_t candidates, size_t records)
{
	forced_coproc_candidates = candidates;
	forced_coproc_records = records;
}

/* Test hook (not in sjgpu.h): the phases above, then device allocation ms. */
extern "C" void
sjgpu_jaccard_test_phases(double *ms)
{
	memcpy(ms, phase_ms, sizeof(phase_ms));
	ms[kPhases] = sjgpu::alloc_ms;
}

extern "C" SjStatus
sjgpu_jaccard_begin(const SjSets *left, const SjSets *right, double threshold,
					const SjJoinOptions *options, SjGpuJaccardJoin **join,
					char *errmsg)
{
	if (join)
		*join = nullptr;
	return sjgpu::guard(errmsg, [&] {
		std::unique_ptr<SjGpuJaccardJoin> j(new SjGpuJaccardJoin);
		char		msg[SJ_ERRMSG_LEN] = "";
		SjStatus	st;

		if (join == nullptr || options == nullptr)
			throw Error(SJ_ERR_INVALID, "jaccard_join: bad arguments");
		if (left && sjgpu::multi_wanted(options, left->n, right ? right->n : 0, right == nullptr))
		{
			/* several devices: pieces of this join, each a one-device join */
			j->multi = sjgpu::multi_jaccard_begin(left, right, threshold, options);
			*join = j.release();
			return;
		}
		double		start_ms = sjgpu::use_device(options->gpu_device);
		double		t0 = sj_now_ms();

		j->start_ms = start_ms;
		memset(phase_ms, 0, sizeof(phase_ms));
		sjgpu::alloc_ms = 0;
		st = sjgpu_jaccard_prepare(left, right, threshold, options, &j->host, msg);
		phase_ms[kPhasePrepare] = sj_now_ms() - t0;
		if (st != SJ_OK)
			throw Error(st, "%s", msg);
		j->dev.reset(new JaccardDevice(j->host, threshold, options));
		sj_jaccard_set_source(j->host, jaccard_source, j->dev.get(),
							  j->dev->strategy_name());
		*join = j.release();
	});
}

extern "C" SjStatus
sjgpu_jaccard_next(SjGpuJaccardJoin *join, SjPairBatch *batch, int *done,
				   char *errmsg)
{
	if (join == nullptr)
	{
		sjgpu::set_errmsg(errmsg, "jaccard_join: no handle");
		return SJ_ERR_INVALID;
	}
	if (join->multi)
	{
		SjStatus	inner = SJ_OK;
		SjStatus	st = sjgpu::guard(errmsg, [&] {
			inner = sjgpu::multi_next(join->multi, batch, done, errmsg);
		});

		return st != SJ_OK ? st : inner;
	}
	return sj_jaccard_cpu_next(join->host, batch, done, errmsg);
}

extern "C" void
sjgpu_jaccard_timings(const SjGpuJaccardJoin *join, SjTimings *timings)
{
	if (timings == nullptr)
		return;
	memset(timings, 0, sizeof(*timings));
	if (join == nullptr)
		return;
	if (join->multi)
	{
		sjgpu::multi_timings(join->multi, timings);
		return;
	}
	sj_jaccard_cpu_timings(join->host, timings);
	timings->start_ms = join->start_ms;
	if (join->dev)
		join->dev->add_timings(timings);
}

extern "C" void
sjgpu_jaccard_end(SjGpuJaccardJoin *join)
{
	delete join;
}
