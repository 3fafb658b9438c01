/*
 * jaccard_gpu.cuh
 *		Internal header of the GPU jaccard engine: constants, the probe
 *		kernels' arguments and the JaccardDevice class, whose methods are
 *		defined in jaccard_gpu.cu (construction, the probe loop,
 *		co-processing's pipeline, the C boundary), jaccard_plan.cu (cost
 *		model and memory plan) and jaccard_kernels.cu (kernels and their
 *		launches).  See the header of jaccard_gpu.cu for the design.
 */
#ifndef JACCARD_GPU_CUH
#define JACCARD_GPU_CUH

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "sjgpu_internal.cuh"
#include "sjgpu_multi.cuh"
#include "sjjaccard.h"
#include "sjjrules.h"

namespace sjjaccard_gpu
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

/*
 * Spread over several devices (shared units, sjgpu_multi.cuh): each index
 * partition's probes are cut into blocks of decreasing estimated work
 * (SharedUnits::guided_ends()), which the devices claim, and so are the
 * pairs inside groups of identical sets, after the probing (kJobGroups, at
 * equal numbers of pairs).  A join spreads from this many tokens
 * in its inputs on (1 M sets of 25 tokens ran 544 ms on one H200).
 */
constexpr int kJobGroups = 0;	/* SharedUnits::job_unit: pairs inside groups */
constexpr uint32_t kGroupUnitsPerDevice = 16;	/* ... cut into this many a device */
constexpr int kSharePrepare = 0;	/* SharedUnits::shared: the preparation */
constexpr int kShareModel = 1;	/* SharedUnits::shared: the cost model's choice */
constexpr double kSpreadMinTokens = 1.0e7;

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

/* The strategies of the header of jaccard_gpu.cu. */
enum class Strategy
{
	Prefix,
	Brute,
	Bitmap,
	Coproc
};

/*
 * Test hooks (defined in jaccard_gpu.cu): 0 automatic, 1 prefix, 2 brute
 * force, 3 bitmap, 4 co-processing; the signature words of the bitmap
 * strategy (0 = from the universe); co-processing's candidates per batch
 * and result records per verification (0 = from the memory budget).
 */
extern int	forced_strategy;
extern int	forced_sig_words;
extern bool model_check;		/* test hook: the host redoes the model's counts and sample */

/* The cost model's sums over all probes (jaccard_plan.cu). */
struct ModelSums
{
	uint64_t	sp = 0;			/* prefix-block list entries visited */
	uint64_t	sb = 0;			/* brute-force overlap list entries */
	uint64_t	sr = 0;			/* candidates of the probes' size ranges */
};
extern size_t forced_coproc_candidates;
extern size_t forced_coproc_records;

/*
 * Test hook: host milliseconds of the last join's steps (prepare, choose
 * the strategy while the sets are uploaded, upload and plan memory, index
 * builds, work estimates, waits for the device; then, inside the second,
 * the upload and the cost model on their own), for the engine benchmarks.
 */
enum
{
	kPhasePrepare,
	kPhaseStrategy,
	kPhaseMemory,
	kPhaseIndex,
	kPhaseEstimate,
	kPhaseWait,
	kPhaseUpload,
	kPhaseModel,
	kPhases
};
extern thread_local double phase_ms[kPhases];

/*
 * The distinct sets of a preparation made on the device, kept there
 * (jaccard_prep.cu), so that the join does not upload again what the
 * preparation has just computed: their offsets, tokens and member counts
 * per side.  The small arrays go back to the host at once; the tokens,
 * most of the bytes, in the background (start_download), into the array
 * the host handle owns, while the device goes on with the cost model,
 * memory plan and index: host_tokens() waits for them, and every reader
 * of the host's tokens on the way (the model's samples and host counts,
 * the work estimates, co-processing) calls it first.  A spread join's
 * devices share one (the others copy it device to device).  The last
 * holder joins the download and frees the device arrays; that must come
 * before the host handle owning the token array ends.
 */
class DeviceSets
{
public:
	int			device = -1;
	uint32_t	nsets = 0;
	uint64_t	ntok = 0;
	DeviceBuffer<uint64_t> off;		/* nsets + 1 */
	DeviceBuffer<uint32_t> tok;		/* ntok */
	DeviceBuffer<uint32_t> weight[2];	/* nsets (+ 1); [1] two-table only */

	DeviceSets() = default;
	~DeviceSets();
	DeviceSets(const DeviceSets &) = delete;
	DeviceSets &operator=(const DeviceSets &) = delete;

	/* Download tok into dst (the host handle's array) on a thread of its own. */
	void		start_download(uint32_t *dst);
	/* Wait for that download; throws its failure. */
	void		host_tokens();
	/* Device bytes of the arrays (what a join's budget is charged). */
	size_t		bytes() const
	{
		return off.bytes() + tok.bytes() + weight[0].bytes() + weight[1].bytes();
	}

private:
	void		download(uint32_t *dst) noexcept;

	std::mutex	mu_;
	std::thread fetch_;
	bool		running_ = false;
	bool		failed_ = false;
	Error		failure_ {SJ_ERR_INTERNAL, "jaccard_join: the prepared sets' download failed"};
};

/*
 * sjgpu_jaccard_prepare (jaccard_prep.cu), keeping the distinct sets on the
 * device where it prepares there (*kept, their tokens' download under
 * way; null where the host prepared).
 */
SjStatus	jaccard_prepare_kept(const SjSets *left, const SjSets *right, double threshold,
								 const SjJoinOptions *options, SjJaccardJoin **join,
								 std::shared_ptr<DeviceSets> *kept, char *errmsg);

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

/* A piece of work: probes [u0, u1) against candidates [v0, v1). */
struct Work
{
	uint32_t	u0;
	uint32_t	u1;
	uint32_t	v0;
	uint32_t	v1;
};

/* Number of bits needed for values below n (at least 1). */
static inline int
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

	sjgpu::upload_bytes(buf.get(), src, n * sizeof(T), stream);
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
				  const SjJoinOptions *options, sjgpu::UnitClaim claim,
				  std::shared_ptr<DeviceSets> kept);
	~JaccardDevice();

	const char *strategy_name() const;
	void		fetch(const uint32_t **u, const uint32_t **v, const double **sim,
					  size_t *n, uint64_t *count, int *exhausted);
	void		add_timings(SjTimings *t) const;

private:
	void		upload_sets();
	void		host_tokens() const;
	void		choose_strategy();
	void		choose_strategy_shared();
	void		host_counts(ModelSums *m);
	bool		device_counts(ModelSums *m);
	void		launch_model_counts(uint32_t *hist, unsigned long long *rt);
	void		launch_pass_sample(const uint64_t *pairs, uint32_t npairs,
								   unsigned long long *passed);
	bool		device_pass_fraction(double *fraction);
	void		upload_bounds();
	double		bitmap_pass_fraction();
	double		host_pass_fraction() const;
	double		coproc_candidate_fraction() const;
	void		plan_memory();
	void		build_signatures();
	void		plan_coproc();
	void		allocate_records();
	bool		coproc_instead();
	void		build_index(uint32_t v0, uint32_t v1);
	void		estimate_work();
	bool		launch_next();
	bool		next_work(Work *w);
	void		drain();
	void		fetch_counts(uint64_t *count, int *exhausted);
	void		adapt_target(uint64_t work, double ms, double chunk_ms);
	void		plan_units();
	ProbeArgs	probe_args(const Work &w) const;
	void		launch(const Work &w, int slot = 0);
	uint32_t	entries_of(uint32_t v) const;
	void		take_records(unsigned long long nrec, size_t *n, uint64_t *count);

	/* co-processing's pipeline */
	void		fetch_coproc(size_t *n, uint64_t *count, int *exhausted);
	void		filter_batch(int slot);
	bool		launch_next_coproc(bool may_filter);
	void		launch_verify(const Work &w);

	/* the prepared input (host memory owned by the host handle; tok_: host_tokens() first) */
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

	/*
	 * resident: the distinct sets and member counts (dev_*: the preparation's
	 * kept arrays where this is their device, else d_* copies), bounds
	 */
	std::shared_ptr<DeviceSets> kept_;
	const uint64_t *dev_off_ = nullptr;
	const uint32_t *dev_tok_ = nullptr;
	const uint32_t *dev_wl_ = nullptr;
	const uint32_t *dev_wr_ = nullptr;
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
	uint32_t	unit_end_ = 0;	/* probes of the current unit end here */

	/* spread: this device's claim, the partition's units of probes */
	sjgpu::UnitClaim claim_;
	std::vector<uint32_t> ucuts_;
	uint64_t	udigest_ = 0;
	int			coproc_mine_ = -1;	/* co-processing, one unit: 1 this device's */
	std::vector<Work> stack_;	/* split work after an overflow */
	bool		inflight_ = false;
	Work		cur_ = {0, 0, 0, 0};
	uint64_t	cur_work_ = 0;
	double		target_work_ = (double) ((uint64_t) 1 << 24);
	double		records_per_work_ = 0.0;

	/*
	 * count_only: a second chunk in flight on a stream of its own (slot 1;
	 * slot 0 is stream_, d_counter_, h_counter_, kernel_timer_, cur_ and
	 * inflight_), so that one kernel's last warps overlap the next one's
	 * first; order_ has the slots in flight, oldest first.
	 */
	sjgpu::Stream stream2_;
	sjgpu::EventTimer kernel_timer2_;
	DeviceBuffer<unsigned long long> d_counter2_;
	PinnedBuffer<unsigned long long> h_counter2_;
	bool		inflight2_ = false;
	Work		cur2_ = {0, 0, 0, 0};
	uint64_t	cur_work2_ = 0;
	std::deque<int> order_;
	bool		launched_all_ = false;

	/* timings */
	double		build_ms_ = 0.0;
	double		transfer_ms_ = 0.0;
	uint64_t	reruns_ = 0;
};

}								/* namespace sjjaccard_gpu */

#endif							/* JACCARD_GPU_CUH */
