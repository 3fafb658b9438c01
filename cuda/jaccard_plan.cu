/*
 * jaccard_plan.cu
 *		The GPU jaccard engine's planning: the cost model that picks a
 *		strategy (prefix-block, brute force, bitmap or co-processing, from
 *		token counts taken on the device and sampled filter rates) and the
 *		memory plan (output buffer, index partitions, co-processing's
 *		batches) within the join's device budget; then the per-probe work
 *		estimates that size the chunks.  See the header of jaccard_gpu.cu.
 */
#include <cub/cub.cuh>

#include <atomic>
#include <memory>

#include "jaccard_gpu.cuh"

namespace sjjaccard_gpu
{

/* Index entries of distinct set v under the chosen strategy. */
uint32_t
JaccardDevice::entries_of(uint32_t v) const
{
	uint32_t	len = (uint32_t) (off_[v + 1] - off_[v]);

	if (strategy_ == Strategy::Bitmap || strategy_ == Strategy::Coproc)
		return 0;				/* no device index */
	return strategy_ == Strategy::Prefix ? sj_jaccard_index_prefix(minov_, len) : len;
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

/* The cost model's choice, as a spread join's devices share it. */
struct ModelChoice
{
	Strategy	strategy;
	uint32_t	sig_words;
	bool		sig_exact;
	std::vector<uint32_t> cnt_all;
	std::vector<uint32_t> cnt_idx;
};

/*
 * choose_strategy, made once for a join spread over several devices (every
 * device's would be the same: the model reads only the prepared sets they
 * share and the options), the others taking its choice and token counts.
 */
void
JaccardDevice::choose_strategy_shared()
{
	std::shared_ptr<void> made;

	if (!claim_.units)
	{
		choose_strategy();
		return;
	}
	made = claim_.units->shared(kShareModel, [&]() -> std::shared_ptr<void> {
		std::shared_ptr<ModelChoice> c(new ModelChoice);

		choose_strategy();
		c->strategy = strategy_;
		c->sig_words = sig_words_;
		c->sig_exact = sig_exact_;
		c->cnt_all = cnt_all_;
		c->cnt_idx = cnt_idx_;
		return c;
	});
	if (!made)
	{
		choose_strategy();
		return;
	}
	{
		const ModelChoice *c = static_cast<const ModelChoice *>(made.get());

		if (c->cnt_all.size() != (size_t) universe_ + 1)
		{
			/* made over another preparation (one that was not shared) */
			choose_strategy();
			return;
		}
		strategy_ = c->strategy;
		sig_words_ = c->sig_words;
		sig_exact_ = c->sig_exact;
		cnt_all_ = c->cnt_all;
		cnt_idx_ = c->cnt_idx;
	}
}

/*
 * The cost model's token counts on the host: one pass over the distinct
 * sets' tokens, in parallel: private histograms over ranges of sets (as
 * many as keep the histogram work within a quarter of the counting) of
 * every token, of the indexing prefixes' and of the probing prefixes'
 * tokens, summed by token range.  The model's sums follow from them
 * without a second pass: a probe visits cnt_all_[t] lists entries for each
 * of its tokens t, so over all probes sb = sum of cnt_all_[t]^2, and sp =
 * sum of cnt_idx_[t] times the probing prefixes holding t (integers, so
 * exactly the sums over the probes); sr sums the candidates of every
 * probe's size range.  Sets cnt_all_ and cnt_idx_.
 */
void
JaccardDevice::host_counts(ModelSums *m)
{
	uint64_t	total = off_[nsets_];

	host_tokens();
	size_t		ucnt = (size_t) universe_ + 1;
	int			parts = (int) std::max<uint64_t>(1, std::min<uint64_t>(threads_,
																		  total / (4 * ucnt)));
	std::vector<std::vector<uint32_t>> hist(parts);
	std::vector<uint64_t> rpart(parts, 0),
				ppart(parts, 0),
				bpart(parts, 0);
	std::atomic<bool> short_of_memory(false);
	auto		count = [&](uint64_t part) {
		/* each thread clears its own (fresh pages: in parallel); no throwing here */
		try
		{
			hist[part].assign(3 * ucnt, 0);
		}
		catch (const std::bad_alloc &)
		{
			short_of_memory = true;
			return;
		}

		uint32_t   *all = hist[part].data(),
				   *idx = all + ucnt,
				   *prb = idx + ucnt;
		uint32_t	v0 = (uint32_t) ((uint64_t) nsets_ * part / parts),
					v1 = (uint32_t) ((uint64_t) nsets_ * (part + 1) / parts);
		uint64_t	rt = 0;

		for (uint32_t v = v0; v < v1; v++)
		{
			const uint32_t *t = tok_ + off_[v];
			uint32_t	len = (uint32_t) (off_[v + 1] - off_[v]);
			uint32_t	ip = sj_jaccard_index_prefix(minov_, len);
			uint32_t	pl = sj_jaccard_probe_prefix(minov_, minsize_, len);
			uint32_t	lo = size_start_[minsize_[len]];

			for (uint32_t i = 0; i < len; i++)
			{
				all[t[i]]++;
				if (i < ip)
					idx[t[i]]++;
				if (i < pl)
					prb[t[i]]++;
			}
			if (v > lo)
				rt += v - lo;
		}
		rpart[part] = rt;
	};
	auto		merge = [&](uint64_t task) {
		size_t		k0 = ucnt * task / parts,
					k1 = ucnt * (task + 1) / parts;
		uint64_t	pt = 0,
					bt = 0;

		for (size_t k = k0; k < k1; k++)
		{
			uint32_t	a = 0,
						b = 0,
						c = 0;

			for (int p = 0; p < parts; p++)
			{
				const uint32_t *h = hist[p].data();

				a += h[k];
				b += h[ucnt + k];
				c += h[2 * ucnt + k];
			}
			cnt_all_[k] = a;
			cnt_idx_[k] = b;
			bt += (uint64_t) a * a;
			pt += (uint64_t) b * c;
		}
		ppart[task] = pt;
		bpart[task] = bt;
	};

	cnt_idx_.assign(ucnt, 0);
	cnt_all_.assign(ucnt, 0);
	parallel_for(threads_, parts, count);
	if (short_of_memory)
		throw std::bad_alloc();
	parallel_for(threads_, parts, merge);
	*m = ModelSums();
	for (int k = 0; k < parts; k++)
	{
		m->sp += ppart[k];
		m->sb += bpart[k];
		m->sr += rpart[k];
	}
}

/*
 * The same counts on the device, from its copy of the sets (dev_off_, dev_tok_)
 * and bounds: a warp a set adds its tokens to three histograms, then the
 * host sums them (universe_ entries).  False where the device has no room
 * for the histograms (the host then counts).
 */
bool
JaccardDevice::device_counts(ModelSums *m)
{
	cudaStream_t s = stream_.get();
	size_t		ucnt = (size_t) universe_ + 1;
	std::vector<uint32_t> prb(ucnt);
	DeviceBuffer<uint32_t> hist;
	DeviceBuffer<unsigned long long> rt;
	unsigned long long rsum = 0;

	try
	{
		hist = DeviceBuffer<uint32_t>(&budget_, 3 * ucnt, "token counts");
		rt = DeviceBuffer<unsigned long long>(&budget_, 1, "candidate count");
	}
	catch (const Error &e)
	{
		if (e.status() != SJ_ERR_DEVICE_NOMEM)
			throw;
		return false;
	}
	SJGPU_CHECK(cudaMemsetAsync(hist.get(), 0, 3 * ucnt * sizeof(uint32_t), s));
	SJGPU_CHECK(cudaMemsetAsync(rt.get(), 0, sizeof(unsigned long long), s));
	launch_model_counts(hist.get(), rt.get());
	cnt_all_.resize(ucnt);
	cnt_idx_.resize(ucnt);
	SJGPU_CHECK(cudaMemcpyAsync(cnt_all_.data(), hist.get(), ucnt * sizeof(uint32_t),
								cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaMemcpyAsync(cnt_idx_.data(), hist.get() + ucnt, ucnt * sizeof(uint32_t),
								cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaMemcpyAsync(prb.data(), hist.get() + 2 * ucnt, ucnt * sizeof(uint32_t),
								cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaMemcpyAsync(&rsum, rt.get(), sizeof(rsum), cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaStreamSynchronize(s));
	*m = ModelSums();
	m->sr = rsum;
	for (size_t k = 0; k < ucnt; k++)
	{
		m->sb += (uint64_t) cnt_all_[k] * cnt_all_[k];
		m->sp += (uint64_t) cnt_idx_[k] * prb[k];
	}
	return true;
}

/* The cost model of the file header. */
void
JaccardDevice::choose_strategy()
{
	ModelSums	sums;
	double		sp,
				sb,
				sr;

	if (!device_counts(&sums))
		host_counts(&sums);
	else if (model_check)
	{
		/* test hook: the host's counts must be the device's */
		std::vector<uint32_t> dall = cnt_all_,
					didx = cnt_idx_;
		ModelSums	h;

		host_counts(&h);
		if (h.sp != sums.sp || h.sb != sums.sb || h.sr != sums.sr || dall != cnt_all_ ||
			didx != cnt_idx_)
			throw Error(SJ_ERR_INTERNAL,
						"jaccard_join: the device's token counts differ from the host's "
						"(sp %llu/%llu, sb %llu/%llu, sr %llu/%llu)",
						(unsigned long long) sums.sp, (unsigned long long) h.sp,
						(unsigned long long) sums.sb, (unsigned long long) h.sb,
						(unsigned long long) sums.sr, (unsigned long long) h.sr);
	}
	sp = (double) sums.sp;
	sb = (double) sums.sb;
	sr = (double) sums.sr;

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
 * The deterministic sample of the cost model: up to 256 probes u spread
 * over the distinct sets, 64 length-compatible candidates v each from a
 * fixed xorshift sequence.  probe(u) runs once a probe, passes(u, lu, v)
 * tests a candidate; returns the fraction that passes (1 when none tried).
 */
template <class Probe, class Passes>
static double
sample_fraction(uint32_t nsets, const uint64_t *off, const uint32_t *minsize,
				const uint32_t *size_start, Probe &&probe, Passes &&passes)
{
	uint64_t	tried = 0,
				passed = 0;
	uint32_t	probes = std::min<uint32_t>(nsets, 256);
	uint64_t	x = 88172645463325252ull;

	for (uint32_t k = 0; k < probes; k++)
	{
		uint32_t	u = (uint32_t) ((uint64_t) k * nsets / probes);
		uint32_t	lu = (uint32_t) (off[u + 1] - off[u]);
		uint32_t	lo = size_start[minsize[lu]];

		if (lo >= u)
			continue;
		probe(u);
		for (int c = 0; c < 64; c++)
		{
			uint32_t	v;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = lo + (uint32_t) (x % (u - lo));
			tried++;
			if (passes(u, lu, v))
				passed++;
		}
	}
	return tried ? (double) passed / tried : 1.0;
}

/*
 * The fraction of length-compatible candidates whose signature bound
 * reaches the required overlap, on the sample of sample_fraction.
 */
double
JaccardDevice::bitmap_pass_fraction()
{
	double		fraction;

	if (!device_pass_fraction(&fraction))
		return host_pass_fraction();
	if (model_check)
	{
		/* test hook: the host's sample must pass as many pairs */
		double		host = host_pass_fraction();

		if (host != fraction)
			throw Error(SJ_ERR_INTERNAL,
						"jaccard_join: the device's bitmap sample passes %.17g, the host's %.17g",
						fraction, host);
	}
	return fraction;
}

/*
 * The same sample on the device, which holds the sets' tokens while the
 * host's copy may still be on its way: the pairs drawn on the host (the
 * draw reads only lengths), their signatures built and tested by
 * pass_sample_kernel.  False where the device has no room for the pairs.
 */
bool
JaccardDevice::device_pass_fraction(double *fraction)
{
	cudaStream_t s = stream_.get();
	std::vector<uint64_t> pairs;
	DeviceBuffer<uint64_t> d_pairs;
	DeviceBuffer<unsigned long long> d_passed;
	unsigned long long passed = 0;

	(void) sample_fraction(nsets_, off_, minsize_, size_start_,
		[](uint32_t u) {
		},
		[&](uint32_t u, uint32_t lu, uint32_t v) {
			pairs.push_back((uint64_t) u << 32 | v);
			return false;
		});
	if (pairs.empty())
	{
		*fraction = 1.0;		/* as sample_fraction: none tried */
		return true;
	}
	try
	{
		d_pairs = DeviceBuffer<uint64_t>(&budget_, pairs.size(), "bitmap sample");
		d_passed = DeviceBuffer<unsigned long long>(&budget_, 1, "bitmap sample");
	}
	catch (const Error &e)
	{
		if (e.status() != SJ_ERR_DEVICE_NOMEM)
			throw;
		return false;
	}
	SJGPU_CHECK(cudaMemcpyAsync(d_pairs.get(), pairs.data(), pairs.size() * sizeof(uint64_t),
								cudaMemcpyHostToDevice, s));
	SJGPU_CHECK(cudaMemsetAsync(d_passed.get(), 0, sizeof(unsigned long long), s));
	launch_pass_sample(d_pairs.get(), (uint32_t) pairs.size(), d_passed.get());
	SJGPU_CHECK(cudaMemcpyAsync(&passed, d_passed.get(), sizeof(passed),
								cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaStreamSynchronize(s));
	*fraction = (double) passed / (double) pairs.size();
	return true;
}

/* bitmap_pass_fraction on the host (its tokens, once they are there). */
double
JaccardDevice::host_pass_fraction() const
{
	uint64_t	su[kMaxSigWords],
				sv[kMaxSigWords];

	host_tokens();
	return sample_fraction(nsets_, off_, minsize_, size_start_,
		[&](uint32_t u) {
			host_signature(off_, tok_, u, sig_words_, su);
		},
		[&](uint32_t u, uint32_t lu, uint32_t v) {
			uint32_t	lv = (uint32_t) (off_[v + 1] - off_[v]),
						bits = 0;

			host_signature(off_, tok_, v, sig_words_, sv);
			for (uint32_t w = 0; w < sig_words_; w++)
				bits += (uint32_t) __builtin_popcountll(su[w] ^ sv[w]);
			return bits <= lu + lv && (lu + lv - bits) / 2 >= minov_[lu + lv];
		});
}

/*
 * The fraction of length-compatible candidates that survive the CPU
 * engine's prefix and positional filters (the co-processing strategy's
 * candidates), on the sample of sample_fraction: the probing prefix of u
 * merged with the indexing prefix of v, each common token checked as
 * jc_probe_mode checks it.
 */
double
JaccardDevice::coproc_candidate_fraction() const
{
	host_tokens();
	return sample_fraction(nsets_, off_, minsize_, size_start_,
		[](uint32_t u) {
		},
		[&](uint32_t u, uint32_t lu, uint32_t v) {
			const uint32_t *tu = tok_ + off_[u];
			const uint32_t *tv = tok_ + off_[v];
			uint32_t	pu = sj_jaccard_probe_prefix(minov_, minsize_, lu),
						lv = (uint32_t) (off_[v + 1] - off_[v]),
						pv = sj_jaccard_index_prefix(minov_, lv),
						alpha = minov_[lu + lv],
						i = 0,
						p = 0,
						ov = 0;

			while (i < pu && p < pv)
			{
				if (tu[i] < tv[p])
					i++;
				else if (tu[i] > tv[p])
					p++;
				else
				{
					if (!sj_jaccard_positional(ov, lu - i - 1, lv - p - 1, alpha))
						return false;
					ov++;
					i++;
					p++;
				}
			}
			return ov > 0;
		});
}

/*
 * With the resident data on the device (upload_sets, upload_bounds): size
 * the output buffer, and cut the candidate sets into index partitions that
 * fit what is left of the budget.
 */
void
JaccardDevice::plan_memory()
{
	cudaStream_t s = stream_.get();
	uint64_t	max_one = 0;

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
		build_signatures();

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
		allocate_records();

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

/* The result records of a chunk: cap_ of them, on the device and pinned. */
void
JaccardDevice::allocate_records()
{
	d_out_u_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
	d_out_v_ = DeviceBuffer<uint32_t>(&budget_, cap_, "result records");
	d_out_sim_ = DeviceBuffer<double>(&budget_, cap_, "result records");
	h_out_u_.allocate(cap_);
	h_out_v_.allocate(cap_);
	h_out_sim_.allocate(cap_);
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

	/* the CPU engine's filters read the host's tokens */
	host_tokens();
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
		allocate_records();
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

	host_tokens();
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
			uint32_t	n = strategy_ == Strategy::Prefix ?
				sj_jaccard_probe_prefix(minov_, minsize_, len) : len;
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

}								/* namespace sjjaccard_gpu */
