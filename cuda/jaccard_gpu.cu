/*
 * jaccard_gpu.cu
 *		The GPU engine of jaccard_join, after Bellas' thesis ch. 5
 *		(fgSSJoin and sf-gSSJoin of Ribeiro-Junior, Quirino et al.) with the
 *		index built by CUB.
 *
 * Division of labour.  The preparation is the CPU engine's (jc_prepare in
 * src/engine/jaccard_prep.c), computed on the device by cuda/jaccard_prep.cu
 * (the same arrays, element for element; the host's own code when it does
 * not fit in the budget): tokens renumbered by frequency, identical sets
 * grouped into distinct sets ordered by size; the distinct sets stay on the
 * device that prepared them (a spread join's other devices copy them from
 * it), their tokens going back to the host in the background, for the
 * host's co-processing, fallbacks and work estimates (DeviceSets).  The
 * host derives the exact integer bounds (minov, minsize, size_start) from
 * the double similarity test.  The device finds every similar pair of distinct sets (u > v); the host
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
 * Cost model.  From token counts over the distinct sets (counted on the
 *	  device once the sets are uploaded; on the host where the device has
 *	  no room for the three histograms) the host estimates
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
 *
 * Files: this one constructs the device half of a join, runs its probe
 * loop and co-processing's pipeline, and holds the C boundary;
 * jaccard_plan.cu the cost model and the memory plan; jaccard_kernels.cu
 * the kernels and their launches; jaccard_gpu.cuh the class for the three.
 * The pair rules shared with the CPU engine are in src/engine/sjjrules.h.
 */

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "jaccard_gpu.cuh"
#include "sjgpu_multi.cuh"

namespace sjjaccard_gpu
{

/* Test hooks: 0 automatic, 1 prefix, 2 brute force, 3 bitmap,
 * 4 co-processing; the signature words of the bitmap strategy (0 = from
 * the universe); co-processing's candidates per batch and result records
 * per verification (0 = from the memory budget). */
int			forced_strategy = 0;
int			forced_sig_words = 0;
bool		model_check = false;
size_t		forced_coproc_candidates = 0;
size_t		forced_coproc_records = 0;

/*
 * Test hook: host milliseconds of the last join's steps (see
 * jaccard_gpu.cuh), for the engine benchmarks; per thread, as the devices
 * of a spread join run theirs on threads of their own.
 */
thread_local double phase_ms[kPhases];

/*
 * Set up the device half of a prepared join: upload the sets, count their
 * tokens there for the cost model, then plan the memory.
 */
JaccardDevice::JaccardDevice(SjJaccardJoin *host, double threshold,
							 const SjJoinOptions *options, sjgpu::UnitClaim claim,
							 std::shared_ptr<DeviceSets> kept)
	: host_(host),
	  threshold_(threshold),
	  threads_(options->cpu_threads > 0 ? options->cpu_threads : 1),
	  count_only_(options->count_only != 0),
	  kept_(std::move(kept)),
	  claim_(claim)
{
	double		t0 = sj_now_ms();

	sj_jaccard_prepared_sets(host, &nsets_, &universe_, &off_, &tok_, &wl_, &wr_);
	sj_jaccard_prepared_bounds(host, &maxsize_, &minov_, &minsize_, &size_start_);
	self_ = wr_ == nullptr;
	budget_.set_limit(sjgpu::memory_limit(options->gpu_memory_limit));
	if (options->gpu_memory_limit == 0 && kept_)
	{
		int			device;

		/*
		 * the default limit is a share of the free memory, which the kept
		 * sets, charged below, already left
		 */
		SJGPU_CHECK(cudaGetDevice(&device));
		if (kept_->device == device)
			budget_.set_limit(budget_.limit() + kept_->bytes());
	}
	if (nsets_ == 0)
		return;
	sms_ = sjgpu::multiprocessor_count();
	stream_.create();
	kernel_timer_.create();
	{
		double		t1 = sj_now_ms(),
					t2;

		/* the sets go to the device, whose token counts feed the cost model */
		upload_sets();
		upload_bounds();
		SJGPU_CHECK(cudaStreamSynchronize(stream_.get()));
		phase_ms[kPhaseUpload] = sj_now_ms() - t1;
		t2 = sj_now_ms();
		choose_strategy_shared();
		phase_ms[kPhaseModel] = sj_now_ms() - t2;
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

/* Wait for a running chunk; the buffers free themselves. */
JaccardDevice::~JaccardDevice()
{
	/* a chunk may still run: let it finish before its buffers go */
	if (stream_.get())
		(void) cudaStreamSynchronize(stream_.get());
	if (stream2_.get())
		(void) cudaStreamSynchronize(stream2_.get());
}

/* The strategy's name for EXPLAIN and SjTimings. */
const char *
JaccardDevice::strategy_name() const
{
	return strategy_str_;
}

/* Copy the size bounds (minov_, minsize_, size_start_) to the device. */
void
JaccardDevice::upload_bounds()
{
	cudaStream_t s = stream_.get();

	d_minov_ = upload(&budget_, minov_, (size_t) 2 * maxsize_ + 1, "bounds", s);
	d_minsize_ = upload(&budget_, minsize_, (size_t) maxsize_ + 1, "bounds", s);
	d_size_start_ = upload(&budget_, size_start_, (size_t) maxsize_ + 2, "bounds", s);
}

/*
 * The distinct sets and their member counts on this device: the
 * preparation's own arrays where it kept them here (charged to this
 * join's budget as an upload would be), copied from its device where it
 * kept them on another that this one reaches peer to peer, else uploaded
 * from the host.
 */
void
JaccardDevice::upload_sets()
{
	cudaStream_t s = stream_.get();
	int			device;

	SJGPU_CHECK(cudaGetDevice(&device));
	if (kept_ && kept_->device == device)
	{
		budget_.reserve(kept_->bytes(), "the prepared sets");
		dev_off_ = kept_->off.get();
		dev_tok_ = kept_->tok.get();
		dev_wl_ = kept_->weight[0].get();
		dev_wr_ = self_ ? nullptr : kept_->weight[1].get();
		return;
	}
	if (kept_ && !sjgpu::peer_reachable(device, kept_->device))
		host_tokens();			/* no peer access: from the host, as below */
	else if (kept_)
	{
		auto		peer = [&](auto *dst, const auto *src, size_t n) {
			SJGPU_CHECK(cudaMemcpyPeerAsync(dst, device, src, kept_->device,
											n * sizeof(*src), s));
		};

		d_off_ = DeviceBuffer<uint64_t>(&budget_, (size_t) nsets_ + 1, "set offsets");
		d_tok_ = DeviceBuffer<uint32_t>(&budget_, std::max<uint64_t>(kept_->ntok, 1),
										"set tokens");
		d_wl_ = DeviceBuffer<uint32_t>(&budget_, nsets_, "member counts");
		peer(d_off_.get(), kept_->off.get(), (size_t) nsets_ + 1);
		peer(d_tok_.get(), kept_->tok.get(), kept_->ntok);
		peer(d_wl_.get(), kept_->weight[0].get(), nsets_);
		if (!self_)
		{
			d_wr_ = DeviceBuffer<uint32_t>(&budget_, nsets_, "member counts");
			peer(d_wr_.get(), kept_->weight[1].get(), nsets_);
		}
	}
	if (!d_off_.get())
	{
		d_off_ = upload(&budget_, off_, (size_t) nsets_ + 1, "set offsets", s);
		d_tok_ = upload(&budget_, tok_, (size_t) off_[nsets_], "set tokens", s);
		d_wl_ = upload(&budget_, wl_, nsets_, "member counts", s);
		if (!self_)
			d_wr_ = upload(&budget_, wr_, nsets_, "member counts", s);
	}
	dev_off_ = d_off_.get();
	dev_tok_ = d_tok_.get();
	dev_wl_ = d_wl_.get();
	dev_wr_ = d_wr_.get();
}

/* Wait for the host's copy of the tokens (DeviceSets::host_tokens) if pending. */
void
JaccardDevice::host_tokens() const
{
	if (kept_)
		kept_->host_tokens();
}

DeviceSets::~DeviceSets()
{
	int			current;

	if (running_)
		fetch_.join();
	/* the arrays are freed on their own device */
	if (cudaGetDevice(&current) == cudaSuccess && cudaSetDevice(device) == cudaSuccess)
	{
		off.reset();
		tok.reset();
		weight[0].reset();
		weight[1].reset();
		(void) cudaSetDevice(current);
	}
	(void) cudaGetLastError();
}

/* The background download's body: on a stream of its own, staged as usual. */
void
DeviceSets::download(uint32_t *dst) noexcept
{
	char		msg[SJ_ERRMSG_LEN] = "";
	SjStatus	st = sjgpu::guard(msg, [&] {
		sjgpu::Stream s;

		SJGPU_CHECK(cudaSetDevice(device));
		s.create();
		sjgpu::download_bytes(dst, tok.get(), ntok * sizeof(uint32_t), s.get());
	});

	if (st != SJ_OK)
	{
		failure_ = Error(st, "%s", msg);
		failed_ = true;
	}
}

void
DeviceSets::start_download(uint32_t *dst)
{
	try
	{
		sjgpu::SignalsBlocked quiet;

		fetch_ = std::thread([this, dst] { download(dst); });
		running_ = true;
	}
	catch (...)
	{
		running_ = false;
	}
	if (!running_)
		download(dst);			/* no thread: here and now */
}

void
DeviceSets::host_tokens()
{
	std::lock_guard<std::mutex> hold(mu_);

	if (running_)
	{
		fetch_.join();
		running_ = false;
	}
	if (failed_)
		throw failure_;
}

/* Start the next piece of work (next_work); false when the join has no more. */
bool
JaccardDevice::launch_next()
{
	Work		w;

	if (!next_work(&w))
		return false;
	launch(w);
	return true;
}

/* Wait for the chunks in flight (their counters stay to be read). */
void
JaccardDevice::drain()
{
	if (inflight_)
		stream_.synchronize();
	if (inflight2_)
		stream2_.synchronize();
}

/*
 * The next piece of work: a split piece after an overflow, else the next
 * chunk of probes of this partition, else the next partition (whose index
 * is built once the chunks in flight, which read the last one, are done).
 * Returns false when the join has no more.
 */
bool
JaccardDevice::next_work(Work *out)
{
	if (!stack_.empty())
	{
		*out = stack_.back();
		stack_.pop_back();
		return true;
	}
	for (;;)
	{
		const Work *p;

		if (part_ >= parts_.size())
			return false;
		p = &parts_[part_];
		if (!part_ready_ && claim_.units && claim_.units->exhausted(part_))
		{
			/* the other devices took every unit of this partition */
			part_++;
			continue;
		}
		if (!part_ready_)
		{
			double		t1 = sj_now_ms();

			drain();
			build_index(p->v0, p->v1);
			/*
			 * the count form's second stream reads the index and the
			 * bitmap signatures that this stream built: they must be done
			 */
			stream_.synchronize();
			phase_ms[kPhaseIndex] += sj_now_ms() - t1;
			t1 = sj_now_ms();
			estimate_work();
			phase_ms[kPhaseEstimate] += sj_now_ms() - t1;
			next_u_ = std::min(p->v0 + 1, nsets_);
			unit_end_ = nsets_;
			part_ready_ = true;
			if (claim_.units)
			{
				plan_units();
				unit_end_ = next_u_;	/* nothing claimed yet */
			}
		}
		if (next_u_ < unit_end_)
			break;
		if (claim_.units)
		{
			long long	k = claim_.units->claim(claim_.worker, part_,
												(uint32_t) (ucuts_.size() - 1), udigest_);

			if (k >= 0)
			{
				next_u_ = ucuts_[k];
				unit_end_ = ucuts_[k + 1];
				continue;
			}
		}
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
		u1 = std::min(u1, unit_end_);
		next_u_ = u1;
		*out = Work {u0, u1, p.v0, p.v1};
	}
	return true;
}

/*
 * A spread join's units of the current partition: its probes [next_u_,
 * nsets_) cut into blocks of decreasing estimated work (work_prefix_; the
 * sizes of SharedUnits::guided_ends()), the same on every device.
 */
void
JaccardDevice::plan_units()
{
	uint32_t	a = next_u_,
				b = nsets_;
	std::vector<double> ends = claim_.units->guided_ends();
	uint64_t	w0 = work_prefix_[a],
				span = work_prefix_[b] - w0;

	ucuts_.assign(1, a);
	for (size_t i = 0; i + 1 < ends.size() && b > a; i++)
	{
		uint64_t	goal = w0 + (uint64_t) ((double) span * ends[i]);
		uint32_t	c = (uint32_t) (std::upper_bound(work_prefix_.begin() + a + 1,
													 work_prefix_.begin() + b + 1, goal) -
									work_prefix_.begin()) - 1;

		if (c > ucuts_.back() && c < b)
			ucuts_.push_back(c);
	}
	ucuts_.push_back(b);
	{
		/* what the cuts index: the partition, the strategy, the sets */
		const Work &p = parts_[part_];
		uint32_t	id[] = {p.v0, p.v1, (uint32_t) strategy_, sig_words_, nsets_};

		udigest_ = sjgpu::plan_digest(ucuts_.data(), ucuts_.size(),
									  sjgpu::plan_digest(id, sizeof(id) / sizeof(id[0])));
	}
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
		/* spread: the CPU filter is one unit, done by the device claiming it */
		if (coproc_mine_ < 0)
			coproc_mine_ = !claim_.units ||
				claim_.units->claim(claim_.worker, 0, 1, (uint64_t) Strategy::Coproc) >= 0;
		if (!coproc_mine_)
		{
			*exhausted = 1;
			return;
		}
		fetch_coproc(n, count, exhausted);
		return;
	}
	if (count_only_)
	{
		fetch_counts(count, exhausted);
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
			adapt_target(cur_work_, ms, kChunkMs);
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

/*
 * Size the next chunks from the last: work units that ran ms, so that a
 * chunk takes about chunk_ms (at most 4 times, at least a quarter of, the
 * current target; no less than 1,024 units).
 */
void
JaccardDevice::adapt_target(uint64_t work, double ms, double chunk_ms)
{
	double		want = ms > 0.5 ? (double) work / ms * chunk_ms : target_work_ * 4;

	want = std::min(target_work_ * 4, std::max(target_work_ / 4, want));
	target_work_ = std::max(1024.0, want);
}

/*
 * The count form's record source: two chunks in flight, one on each
 * stream, so that the device starts the next chunk while the last warps
 * of the one before finish; each call waits for the oldest, hands its
 * count over and launches the next chunk in its slot.
 */
void
JaccardDevice::fetch_counts(uint64_t *count, int *exhausted)
{
	Work		w;
	int			slot;
	double		ms;
	uint64_t	work;

	if (!stream2_.get())
	{
		stream2_.create();
		kernel_timer2_.create();
		d_counter2_ = DeviceBuffer<unsigned long long>(&budget_, 2, "result counter");
		h_counter2_.allocate(2);
	}
	while (!launched_all_ && order_.size() < 2)
	{
		if (!next_work(&w))
		{
			launched_all_ = true;
			break;
		}
		slot = inflight_ ? 1 : 0;
		launch(w, slot);
		order_.push_back(slot);
	}
	if (order_.empty())
	{
		*exhausted = 1;
		return;
	}
	slot = order_.front();
	order_.pop_front();
	{
		double		t1 = sj_now_ms();

		if (slot)
			stream2_.synchronize();
		else
			stream_.synchronize();
		phase_ms[kPhaseWait] += sj_now_ms() - t1;
	}
	ms = slot ? kernel_timer2_.elapsed_ms() : kernel_timer_.elapsed_ms();
	work = slot ? cur_work2_ : cur_work_;
	*count = slot ? h_counter2_.get()[1] : h_counter_.get()[1];
	if (slot)
		inflight2_ = false;
	else
		inflight_ = false;

	/* adapt the chunk size to the measured time (two run at once: each twice) */
	if (work > 0)
		adapt_target(work, ms, kChunkMs * 2.0);

	/* the freed slot takes the next chunk */
	if (!launched_all_)
	{
		if (next_work(&w))
		{
			launch(w, slot);
			order_.push_back(slot);
		}
		else
			launched_all_ = true;
	}
	if (launched_all_ && order_.empty())
		*exhausted = 1;
}

/* Co-processing's record source: the next verified batch of candidates. */
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

/* Add the device's times, transfers and re-runs to the handle's. */
void
JaccardDevice::add_timings(SjTimings *t) const
{
	t->build_ms += build_ms_;
	t->transfer_ms += transfer_ms_;
	t->reruns += reruns_;
	t->device_bytes = budget_.peak();
}

}								/* namespace sjjaccard_gpu */

using namespace sjjaccard_gpu;

/* ------------------------------------------------------------------------
 * The C boundary
 * ------------------------------------------------------------------------ */

/*
 * The preparation of a join spread over several devices, made once by the
 * first device to ask (SharedUnits::shared) and borrowed by every
 * device's handle; freed when the last of them ends.
 */
struct SharedPreparation
{
	SjJaccardJoin *host = nullptr;
	std::shared_ptr<DeviceSets> kept;	/* where the device prepared */

	~SharedPreparation()
	{
		kept.reset();			/* its download writes into host's tokens */
		sj_jaccard_cpu_end(host);
	}
};

struct SjGpuJaccardJoin
{
	SjJaccardJoin *host = nullptr;
	std::shared_ptr<void> prepared; /* spread: the SharedPreparation host borrows */
	std::unique_ptr<JaccardDevice> dev;
	double		start_ms = 0;	/* waiting for the device to start */
	sjgpu::MultiJoin *multi = nullptr;	/* set: on several devices, and
										 * nothing above is used */
	sjgpu::UnitClaim group_claim;	/* spread: the share of the pairs in groups */

	~SjGpuJaccardJoin()
	{
		sjgpu::multi_end(multi);
		dev.reset();			/* with it the kept sets, whose download writes
								 * into host's tokens */
		sj_jaccard_cpu_end(host);
		/* then prepared, which host borrowed from */
	}
};

/*
 * Group claim callback of the host handle (spread): the next range of the
 * pairs inside groups; -1 when none is left, -3 out of host memory, -2
 * where the devices cut them differently (an internal error: the join
 * fails).
 */
static long long
group_claim(void *ctx, uint32_t nunits)
{
	const sjgpu::UnitClaim *c = static_cast<const sjgpu::UnitClaim *>(ctx);

	try
	{
		return c->units->job_unit(c->worker, kJobGroups, nunits);
	}
	catch (const std::bad_alloc &)
	{
		return -3;
	}
	catch (...)
	{
		return -2;
	}
}

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
 * Test hook (not in sjgpu.h): on != 0 makes every cost model count the
 * tokens and test the bitmap sample on the host too, and fail the join
 * (SJ_ERR_INTERNAL) where the device's counts or pass fraction differ.
 */
extern "C" void
sjgpu_jaccard_set_test_model_check(int on)
{
	model_check = on != 0;
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

/*
 * Test hook (not in sjgpu.h): the phases above, then device allocation ms,
 * of the last one-device join this thread ran (a spread join's devices
 * keep theirs on their own threads).
 */
extern "C" void
sjgpu_jaccard_test_phases(double *ms)
{
	memcpy(ms, phase_ms, sizeof(phase_ms));
	ms[kPhases] = sjgpu::alloc_ms;
}

/* Test hook: every join spreads where several devices are named. */
static bool spread_always = false;

/* Test hook (not in sjgpu.h): spread every join over the devices named. */
extern "C" void
sjgpu_jaccard_set_test_spread(int always)
{
	spread_always = always != 0;
}

extern "C" int
sjgpu_jaccard_spreads(const SjSets *left, const SjSets *right)
{
	double		tokens = 0.0;

	if (spread_always)
		return 1;
	if (left && left->offsets)
		tokens += (double) left->offsets[left->n];
	if (right && right->offsets)
		tokens += (double) right->offsets[right->n];
	return tokens >= kSpreadMinTokens;
}

namespace sjgpu
{

SjStatus
jaccard_begin_shared(const SjSets *left, const SjSets *right, double threshold,
					 const SjJoinOptions *options, UnitClaim claim, SjGpuJaccardJoin **join,
					 char *errmsg)
{
	if (join)
		*join = nullptr;
	return sjgpu::guard(errmsg, [&] {
		std::unique_ptr<SjGpuJaccardJoin> j(new SjGpuJaccardJoin);
		char		msg[SJ_ERRMSG_LEN] = "";
		SjStatus	st;
		/* after j: on an error it goes first, joining its download */
		std::shared_ptr<DeviceSets> kept;

		if (join == nullptr || options == nullptr)
			throw Error(SJ_ERR_INVALID, "jaccard_join: bad arguments");
		double		start_ms = sjgpu::use_device(options->gpu_device);
		double		t0 = sj_now_ms();

		j->start_ms = start_ms;
		memset(phase_ms, 0, sizeof(phase_ms));
		sjgpu::alloc_ms = 0;
		if (claim.units)
		{
			/* spread: the first device prepares, every device borrows it */
			j->prepared = claim.units->shared(kSharePrepare, [&]() -> std::shared_ptr<void> {
				std::shared_ptr<SharedPreparation> p(new SharedPreparation);
				char		pmsg[SJ_ERRMSG_LEN] = "";
				SjStatus	ps = jaccard_prepare_kept(left, right, threshold, options,
													  &p->host, &p->kept, pmsg);

				if (ps != SJ_OK)
					throw Error(ps, "%s", pmsg);
				return p;
			});
		}
		if (j->prepared)
		{
			SharedPreparation *sp = static_cast<SharedPreparation *>(j->prepared.get());

			st = sj_jaccard_prepare_borrowed(left, right, threshold, options, sp->host,
											 &j->host, msg);
			kept = sp->kept;
		}
		else
			st = jaccard_prepare_kept(left, right, threshold, options, &j->host, &kept, msg);
		phase_ms[kPhasePrepare] = sj_now_ms() - t0;
		if (st != SJ_OK)
			throw Error(st, "%s", msg);
		j->dev.reset(new JaccardDevice(j->host, threshold, options, claim, kept));
		sj_jaccard_set_source(j->host, jaccard_source, j->dev.get(),
							  j->dev->strategy_name());
		/* spread: the devices' host threads share the pairs inside groups */
		if (claim.units)
		{
			j->group_claim = claim;
			sj_jaccard_share_groups(j->host, group_claim, &j->group_claim,
									kGroupUnitsPerDevice * (uint32_t) claim.units->workers());
		}
		*join = j.release();
	});
}

}								/* namespace sjgpu */

extern "C" SjStatus
sjgpu_jaccard_begin(const SjSets *left, const SjSets *right, double threshold,
					const SjJoinOptions *options, SjGpuJaccardJoin **join,
					char *errmsg)
{
	bool		spread = false;
	SjStatus	st;

	if (join)
		*join = nullptr;
	st = sjgpu::guard(errmsg, [&] {
		if (join == nullptr || options == nullptr)
			throw Error(SJ_ERR_INVALID, "jaccard_join: bad arguments");
		spread = left && sjgpu::multi_wanted(options, left->n, right ? right->n : 0,
											  right == nullptr) &&
			sjgpu_jaccard_spreads(left, right) && sjgpu::devices_alike(options);
		if (spread)
		{
			/* several devices: each prepares the whole join, they share its probes */
			std::unique_ptr<SjGpuJaccardJoin> j(new SjGpuJaccardJoin);

			j->multi = sjgpu::multi_jaccard_begin(left, right, threshold, options);
			*join = j.release();
		}
	});
	if (st != SJ_OK || spread)
		return st;
	return sjgpu::jaccard_begin_shared(left, right, threshold, options, sjgpu::UnitClaim(),
									   join, errmsg);
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
