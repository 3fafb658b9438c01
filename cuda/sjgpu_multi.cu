/*
 * sjgpu_multi.cu
 *		One join on several devices (see sjgpu_multi.cuh): pieces or shared
 *		units, workers (one host thread per entry of the device list), the
 *		hand-over of pair batches to the caller's thread, and the per-device
 *		statistics.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>

#include <pthread.h>

#include "sjgpu_multi.cuh"

namespace sjgpu
{

/* Pieces a worker gets on average: more balance, more copies of the inner side. */
constexpr int kPiecesPerWorker = 4;

/* How long multi_next waits before returning an empty batch. */
constexpr int kWaitMs = 100;

/* One entry of the device list and the thread that drives it. */
struct Worker
{
	class MultiJoin *m = nullptr;
	int			index = 0;		/* in the device list */
	int			ordinal = 0;
	SjJoinOptions options;
	pthread_t	thread;
	bool		started = false;

	/* the hand-over: a batch the caller may take */
	bool		has_batch = false;
	SjPairBatch batch;
	std::vector<uint32_t> lbuf;	/* indices with the piece's offsets added */
	std::vector<uint32_t> rbuf;

	/* statistics (under m->mu) */
	uint64_t	pieces = 0;
	double		work = 0.0;
	double		busy_ms = 0.0;	/* in its joins, not waiting for the caller */
	uint64_t	pairs = 0;
	uint64_t	peak = 0;		/* largest device memory of one piece */
	bool		dropped = false;	/* shared units: out of memory, left */
	SjTimings	t;

	/* the test hook's trace: when its thread began, its join had begun,
	 * its last batch came, its join had ended; its waits for the caller */
	double		at_thread = 0.0,
				at_begun = 0.0,
				at_done = 0.0,
				at_ended = 0.0,
				waited_ms = 0.0,
				alloc_begin_ms = 0.0,	/* cudaMalloc/cudaFree in its begin */
				alloc_ms = 0.0,	/* ... until its last join was done */
				alloc_end_ms = 0.0;	/* ... until its thread ended (an eps
									 * join's frees run later, off it) */
};

class MultiJoin
{
public:
	std::unique_ptr<PieceOps> ops;
	std::vector<Piece> pieces;
	std::atomic<size_t> next_piece{0};
	std::vector<std::unique_ptr<Worker>> workers;
	std::unique_ptr<SharedUnits> units;	/* set: worker k runs pieces[k] */

	mutable std::mutex mu;
	std::condition_variable cv_main;	/* a batch is ready, a worker ended */
	std::condition_variable cv_worker;	/* a batch was consumed, or stop */
	std::atomic<bool> stop{false};	/* set under mu; workers also read it without */
	int			running = 0;
	SjStatus	failed = SJ_OK;
	char		failure[SJ_ERRMSG_LEN] = "";
	std::deque<Worker *> ready;
	Worker	   *held = nullptr; /* whose batch the caller holds */

	bool		count_only = false;
	bool		strategy_did_work = false;	/* strategy from a device with units */
	uint64_t	batches = 0;
	double		start_ms = 0.0;
	double		total_work = 0.0;
	char		strategy[64] = "";
	double		at_created = 0.0;	/* the test hook's trace: the join's start */
	int			staging = 0;	/* stage_share(staging) made at its start */

	/* Record the first failure and stop every worker (caller holds mu). */
	void		fail_locked(SjStatus st, const char *msg)
	{
		if (failed == SJ_OK)
		{
			failed = st;
			snprintf(failure, sizeof(failure), "%s", msg ? msg : "");
		}
		stop = true;
		if (units)
			units->cancel();
		cv_main.notify_all();
		cv_worker.notify_all();
	}
	void		fail(SjStatus st, const char *msg)
	{
		std::lock_guard<std::mutex> lk(mu);

		fail_locked(st, msg);
	}
};

static double
now_ms()
{
	return std::chrono::duration<double, std::milli>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* Ends a piece's one-device join on every way out of the worker's loop. */
struct PieceGuard
{
	PieceOps   *ops;
	void	   *h = nullptr;

	~PieceGuard()
	{
		if (h)
			ops->end(h);
	}
};

/* Add offsets to a batch's indices, into the worker's own buffers. */
static void
shift_batch(Worker *w, SjPairBatch *b, uint32_t loff, uint32_t roff)
{
	if (!b->left || !b->right || (loff == 0 && roff == 0))
		return;
	w->lbuf.resize(b->count);
	w->rbuf.resize(b->count);
	for (size_t i = 0; i < b->count; i++)
	{
		w->lbuf[i] = b->left[i] + loff;
		w->rbuf[i] = b->right[i] + roff;
	}
	b->left = w->lbuf.data();
	b->right = w->rbuf.data();
}

/* A worker: take pieces until none is left, a failure, or stop. */
static void
worker_run(Worker *w)
{
	MultiJoin  *m = w->m;

	for (;;)
	{
		size_t		p;
		PieceGuard	g{m->ops.get()};
		char		msg[SJ_ERRMSG_LEN] = "";
		double		t0 = now_ms(),
					waited = 0.0;
		SjStatus	st;
		SjTimings	t;

		{
			std::lock_guard<std::mutex> lk(m->mu);

			if (m->stop)
				return;
		}
		if (m->units)
		{
			/* shared units: this worker's whole-join replica, once */
			if (w->pieces > 0)
				return;
			p = (size_t) w->index;
		}
		else
			p = m->next_piece.fetch_add(1);
		if (p >= m->pieces.size())
			return;

		const Piece &pc = m->pieces[p];
		uint32_t	loff = pc.left_first;
		uint32_t	roff = pc.self ? pc.left_first : pc.right_first;

		alloc_ms = 0.0;
		st = m->ops->begin(pc, &w->options, &g.h, msg);
		w->at_begun = now_ms();
		w->alloc_begin_ms += alloc_ms;
		if (st == SJ_ERR_DEVICE_NOMEM && m->units && m->units->drop(w->index))
		{
			/* out of memory on this device: the others share the join */
			std::lock_guard<std::mutex> lk(m->mu);

			w->dropped = true;
			return;
		}
		if (st != SJ_OK)
		{
			m->fail(st, msg);
			return;
		}
		if (m->stop)
			return;
		for (;;)
		{
			SjPairBatch b;
			int			done = 0;

			memset(&b, 0, sizeof(b));
			st = m->ops->next(g.h, &b, &done, msg);
			if (st != SJ_OK)
			{
				m->fail(st, msg);
				return;
			}

			/*
			 * Stopped (early end, cancel, another device's error): a shared
			 * units replica is the whole join, and its empty batches (a
			 * stretch of units without pairs, count-only segments) would
			 * otherwise keep it claiming units while multi_end waits.
			 */
			if (m->stop)
				return;
			if (b.count > 0)
			{
				double		tw;

				shift_batch(w, &b, loff, roff);
				tw = now_ms();
				std::unique_lock<std::mutex> lk(m->mu);

				if (m->stop)
					return;
				w->pairs += b.count;
				w->batch = b;
				w->has_batch = true;
				m->ready.push_back(w);
				m->cv_main.notify_one();
				/*
				 * Stopped by another device's failure, a worker whose batch
				 * the caller holds still waits for the caller to let it go
				 * (its next multi_next, or multi_end): ending the join now
				 * would free the batch under the caller's reads.
				 */
				m->cv_worker.wait(lk, [&] {
					return !w->has_batch || (m->stop && m->held != w);
				});
				waited += now_ms() - tw;
				if (m->stop)
					return;
			}
			if (done)
				break;
		}
		w->at_done = now_ms();
		memset(&t, 0, sizeof(t));
		m->ops->timings(g.h, &t);
		{
			std::lock_guard<std::mutex> lk(m->mu);

			w->t.build_ms += t.build_ms;
			w->t.probe_ms += t.probe_ms;
			w->t.transfer_ms += t.transfer_ms;
			w->t.filter_ms += t.filter_ms;
			w->t.filter_pairs += t.filter_pairs;
			w->t.reruns += t.reruns;
			w->t.start_ms = std::max(w->t.start_ms, t.start_ms);
			w->peak = std::max<uint64_t>(w->peak, t.device_bytes);
			w->pieces++;
			w->work += pc.work;
			w->busy_ms += now_ms() - t0 - waited;
			w->waited_ms += waited;
			w->alloc_ms = alloc_ms;	/* since its begin; its end's frees follow */
			/* shared units: the strategy of a device that did some of them */
			if (m->strategy[0] == '\0' ||
				(m->units && !m->strategy_did_work && m->units->taken(w->index) > 0))
			{
				snprintf(m->strategy, sizeof(m->strategy), "%s", t.strategy);
				m->strategy_did_work = m->units && m->units->taken(w->index) > 0;
			}
		}
	}
}

/* The worker thread's body: nothing may leave it as an exception. */
static void *
worker_main(void *arg)
{
	Worker	   *w = static_cast<Worker *>(arg);
	MultiJoin  *m = w->m;

	w->at_thread = now_ms();
	try
	{
		worker_run(w);
	}
	catch (const std::bad_alloc &)
	{
		m->fail(SJ_ERR_NOMEM, "out of host memory in the GPU engine");
	}
	catch (...)
	{
		m->fail(SJ_ERR_INTERNAL, "unknown exception in a GPU worker thread");
	}
	{
		std::lock_guard<std::mutex> lk(m->mu);

		w->alloc_end_ms = alloc_ms;
		w->at_ended = now_ms();	/* its last piece's join has ended */
		m->running--;
		m->cv_main.notify_all();
	}
	return nullptr;
}

std::vector<Piece>
split_pieces(uint32_t nleft, uint32_t nright, bool self, int nworkers)
{
	std::vector<Piece> out;
	uint32_t	n = self || nleft >= nright ? nleft : nright;
	uint32_t	k = (uint32_t) std::max(1, nworkers) * kPiecesPerWorker;

	k = std::max<uint32_t>(1, std::min(k, n));
	if (self)
	{
		/* bands of rows with equal shares of the upper triangle */
		uint32_t	a = 0;

		for (uint32_t i = 1; i <= k && a < n; i++)
		{
			double		f = 1.0 - std::sqrt(std::max(0.0, 1.0 - (double) i / k));
			uint32_t	b = i == k ? n : (uint32_t) std::llround(f * n);
			uint32_t	len;

			b = std::min(n, std::max(b, a + 1));
			len = b - a;
			if (len >= 2)
				out.push_back(Piece{a, len, 0, 0, true, (double) len * (len - 1) / 2});
			if (b < n)
				out.push_back(Piece{a, len, b, n - b, false, (double) len * (n - b)});
			a = b;
		}
	}
	else
	{
		bool		left = nleft >= nright;
		uint32_t	other = left ? nright : nleft;

		for (uint32_t i = 0; i < k; i++)
		{
			uint32_t	a = (uint32_t) ((uint64_t) n * i / k);
			uint32_t	b = (uint32_t) ((uint64_t) n * (i + 1) / k);

			if (b == a)
				continue;
			if (left)
				out.push_back(Piece{a, b - a, 0, other, false, (double) (b - a) * other});
			else
				out.push_back(Piece{0, other, a, b - a, false, (double) (b - a) * other});
		}
	}
	std::stable_sort(out.begin(), out.end(),
					 [](const Piece &x, const Piece &y) { return x.work > y.work; });
	return out;
}

/*
 * Make the workers of m and start their threads: each device's memory
 * limit shared by the entries that name it (common: every entry gets the
 * smallest of them).  Throws.
 */
static MultiJoin *
start_workers(std::unique_ptr<MultiJoin> m, const SjJoinOptions *options, bool common)
{
	int			n = options->gpu_ndevices;
	int			started = 0;
	size_t		smallest = SIZE_MAX;

	m->count_only = options->count_only != 0;
	for (const Piece &p : m->pieces)
		m->total_work += p.work;

	/* each device's memory limit, shared by the entries that name it */
	for (int i = 0; i < n; i++)
	{
		int			ord = options->gpu_devices[i];
		int			same = 0;
		size_t		limit;
		std::unique_ptr<Worker> w(new Worker());

		for (int k = 0; k < n; k++)
			same += options->gpu_devices[k] == ord;
		m->start_ms = std::max(m->start_ms, use_device(ord));
		limit = memory_limit(options->gpu_memory_limit) / same;
		w->m = m.get();
		w->index = i;
		w->ordinal = ord;
		w->options = *options;
		w->options.gpu_device = ord;
		w->options.gpu_ndevices = 0;
		w->options.gpu_devices = nullptr;
		w->options.gpu_memory_limit = limit;
		memset(&w->batch, 0, sizeof(w->batch));
		memset(&w->t, 0, sizeof(w->t));
		smallest = std::min(smallest, limit);
		m->workers.push_back(std::move(w));
	}
	if (common)
		for (auto &w : m->workers)
			w->options.gpu_memory_limit = smallest;

	/* the devices copy at once: they share the staging threads */
	stage_share(n);
	m->staging = n;

	/* the threads block every signal: PostgreSQL's handlers stay on ours */
	{
		SignalsBlocked quiet;

		for (auto &w : m->workers)
		{
			std::lock_guard<std::mutex> lk(m->mu);

			w->started = pthread_create(&w->thread, nullptr, worker_main, w.get()) == 0;
			if (w->started)
			{
				m->running++;
				started++;
			}
			else if (m->units && !m->units->drop(w->index) && started > 0)
			{
				/* no thread and no leaving (another left already): the join fails */
				m->fail_locked(SJ_ERR_INTERNAL, "could not start a thread for a GPU");
			}
		}
	}
	if (started == 0)
	{
		multi_end(m.release());
		throw Error(SJ_ERR_INTERNAL, "could not start a thread for any GPU");
	}
	return m.release();
}

MultiJoin *
multi_begin(std::unique_ptr<PieceOps> ops, std::vector<Piece> pieces,
			const SjJoinOptions *options)
{
	std::unique_ptr<MultiJoin> m(new MultiJoin());

	m->at_created = now_ms();
	if (options->gpu_ndevices < 1 || !options->gpu_devices)
		throw Error(SJ_ERR_INVALID, "multi-device join without a device list");
	m->ops = std::move(ops);
	m->pieces = std::move(pieces);
	return start_workers(std::move(m), options, false);
}

MultiJoin *
multi_begin_shared(std::unique_ptr<PieceOps> ops, const SjJoinOptions *options)
{
	std::unique_ptr<MultiJoin> m(new MultiJoin());
	int			n = options->gpu_ndevices;

	m->at_created = now_ms();
	if (n < 1 || !options->gpu_devices)
		throw Error(SJ_ERR_INVALID, "multi-device join without a device list");
	m->ops = std::move(ops);
	m->units.reset(new SharedUnits(n));
	for (int i = 0; i < n; i++)
		m->pieces.push_back(Piece{0, 0, 0, 0, false, 0.0, UnitClaim{m->units.get(), i}});
	return start_workers(std::move(m), options, true);
}

SjStatus
multi_next(MultiJoin *m, SjPairBatch *batch, int *done, char *errmsg)
{
	std::unique_lock<std::mutex> lk(m->mu);

	memset(batch, 0, sizeof(*batch));
	*done = 0;
	if (m->held)
	{
		m->held->has_batch = false;
		m->held = nullptr;
		m->cv_worker.notify_all();
	}
	m->cv_main.wait_for(lk, std::chrono::milliseconds(kWaitMs), [&] {
		return !m->ready.empty() || m->running == 0 || m->failed != SJ_OK;
	});
	if (m->failed != SJ_OK)
	{
		set_errmsg(errmsg, m->failure);
		return m->failed;
	}
	if (!m->ready.empty())
	{
		Worker	   *w = m->ready.front();

		m->ready.pop_front();
		*batch = w->batch;
		m->held = w;
		m->batches++;
	}
	else if (m->running == 0)
		*done = 1;
	return SJ_OK;
}

void
multi_timings(const MultiJoin *m, SjTimings *t)
{
	std::lock_guard<std::mutex> lk(m->mu);
	size_t		len = 0;

	memset(t, 0, sizeof(*t));
	t->start_ms = m->start_ms;
	t->batches = m->batches;
	snprintf(t->strategy, sizeof(t->strategy), "%s", m->strategy);
	uint64_t	units = m->units ? m->units->taken_all() : 0;

	for (const auto &w : m->workers)
	{
		double		share = m->total_work > 0 ? 100.0 * w->work / m->total_work : 0.0;
		int			wrote;

		if (m->units)
			share = units > 0 ? 100.0 * m->units->taken(w->index) / units : 0.0;

		t->build_ms += w->t.build_ms;
		t->probe_ms += w->t.probe_ms;
		t->transfer_ms += w->t.transfer_ms;
		t->filter_ms += w->t.filter_ms;
		t->filter_pairs += w->t.filter_pairs;
		t->reruns += w->t.reruns;
		t->start_ms = std::max(t->start_ms, w->t.start_ms);
		t->device_bytes += w->peak;
		if (len >= sizeof(t->devices))
			continue;
		if (w->dropped)
			wrote = snprintf(t->devices + len, sizeof(t->devices) - len,
							 "%sgpu%d left (out of memory)", len ? ", " : "", w->ordinal);
		else if (m->units)
			wrote = snprintf(t->devices + len, sizeof(t->devices) - len,
							 "%sgpu%d %.0f%% (%llu units) %.1f ms", len ? ", " : "",
							 w->ordinal, share,
							 (unsigned long long) m->units->taken(w->index), w->busy_ms);
		else
			wrote = snprintf(t->devices + len, sizeof(t->devices) - len,
							 "%sgpu%d %.0f%% %.1f ms", len ? ", " : "", w->ordinal,
							 share, w->busy_ms);
		len += wrote > 0 ? (size_t) wrote : 0;
	}
}

/* ------------------------------------------------------------------------
 * The operators' pieces: each a one-device join through the C boundary
 * ------------------------------------------------------------------------ */

/*
 * The next unit of t, cut into n units with digest by the caller (the
 * first caller fixes both; another cut throws, naming it `what` id); -1
 * when every unit is taken.  Counts it in *taken (caller holds mu_).
 */
static long long
next_unit(SharedUnits::Task *t, uint32_t n, uint64_t digest, uint64_t *taken,
		  const char *what, long long id)
{
	if (t->n < 0)
	{
		t->n = n;
		t->digest = digest;
	}
	else if (t->n != (long long) n || t->digest != digest)
		throw Error(SJ_ERR_INTERNAL,
					"the devices of a spread join cut %s %lld differently (%u units, not %lld)",
					what, id, n, t->n);
	if (t->next >= n)
		return -1;
	if (taken)
		(*taken)++;
	return t->next++;
}

long long
SharedUnits::claim(int worker, size_t task, uint32_t n, uint64_t digest)
{
	std::lock_guard<std::mutex> lk(mu_);

	if (cancelled_)
		return -1;
	if (tasks_.size() <= task)
		tasks_.resize(task + 1);
	return next_unit(&tasks_[task], n, digest,
					 worker >= 0 && (size_t) worker < taken_.size() ? &taken_[worker] : nullptr,
					 "task", (long long) task);
}

bool
devices_alike(const SjJoinOptions *options)
{
	int			major0 = -1,
				minor0 = -1;

	for (int i = 0; i < options->gpu_ndevices; i++)
	{
		int			major,
					minor;

		check_ordinal(options->gpu_devices[i]);
		if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
								   options->gpu_devices[i]) != cudaSuccess ||
			cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
								   options->gpu_devices[i]) != cudaSuccess)
		{
			cudaGetLastError();
			return false;
		}
		if (i > 0 && (major != major0 || minor != minor0))
			return false;
		major0 = major;
		minor0 = minor;
	}
	return true;
}

long long
SharedUnits::job_unit(int worker, int job, uint32_t n)
{
	std::lock_guard<std::mutex> lk(mu_);

	if (cancelled_)
		return -1;
	/* std::map: the entry stays where it is */
	return next_unit(&jobs_[job], n, 0,
					 worker >= 0 && (size_t) worker < job_taken_.size() ? &job_taken_[worker]
					 : nullptr,
					 "job", job);
}

std::shared_ptr<void>
SharedUnits::shared(int key, const std::function<std::shared_ptr<void>()> &make)
{
	std::shared_ptr<void> v;

	{
		std::unique_lock<std::mutex> lk(mu_);
		Shared	   &s = shared_[key];	/* std::map: the reference stays valid */

		if (s.state != 0)
		{
			cv_.wait(lk, [&] { return s.state >= 2 || cancelled_; });
			if (s.state == 2)
				return s.value;
			if (cancelled_)
				throw Error(SJ_ERR_INTERNAL, "the join stopped while a device prepared it");
			if (s.state == 4)
				std::rethrow_exception(s.error);
			return nullptr;
		}
		s.state = 1;
	}
	try
	{
		v = make();
	}
	catch (...)
	{
		std::exception_ptr error = std::current_exception();
		bool		own = false;	/* out of its device's memory: the others try */

		try
		{
			throw;
		}
		catch (const Error &e)
		{
			own = e.status() == SJ_ERR_DEVICE_NOMEM;
		}
		catch (...)
		{
		}
		{
			std::lock_guard<std::mutex> lk(mu_);
			Shared	   &s = shared_[key];

			s.state = own ? 3 : 4;
			if (!own)
				s.error = error;
			cv_.notify_all();
		}
		throw;
	}
	{
		std::lock_guard<std::mutex> lk(mu_);
		Shared	   &s = shared_[key];

		s.value = v;
		s.state = v ? 2 : 3;
		cv_.notify_all();
	}
	return v;
}

void
SharedUnits::cancel()
{
	std::lock_guard<std::mutex> lk(mu_);

	cancelled_ = true;
	cv_.notify_all();
}

bool
SharedUnits::drop(int worker)
{
	std::lock_guard<std::mutex> lk(mu_);

	if (cancelled_ || participants_ <= 1 || worker < 0 || (size_t) worker >= taken_.size() ||
		taken_[worker] > 0 || job_taken_[worker] > 0)
		return false;
	participants_--;
	cv_.notify_all();
	return true;
}

constexpr int kMaxPeers = 64;	/* device ordinals peer_reachable remembers */

static bool peer_copies = true; /* test hook: false, every share from the host */

/* Can device read peer's memory directly?  Enables it on first use. */
bool
peer_reachable(int device, int peer)
{
	static std::mutex mu;
	static signed char known[kMaxPeers][kMaxPeers];	/* 0 unknown, 1, -1 */
	std::lock_guard<std::mutex> lk(mu);
	int			can = 0;

	if (!peer_copies)
		return false;
	if (device == peer)
		return true;
	if (device < 0 || peer < 0 || device >= kMaxPeers || peer >= kMaxPeers)
		return false;
	if (known[device][peer] == 0)
	{
		cudaError_t err = cudaDeviceCanAccessPeer(&can, device, peer);

		/* the calling thread's current device is `device` */
		if (err == cudaSuccess && can)
		{
			err = cudaDeviceEnablePeerAccess(peer, 0);
			if (err == cudaErrorPeerAccessAlreadyEnabled)
				err = cudaSuccess;
		}
		(void) cudaGetLastError();
		known[device][peer] = err == cudaSuccess && can ? 1 : -1;
	}
	return known[device][peer] > 0;
}

double
SharedUnits::upload(int worker, size_t seq, int device, unsigned char *dst,
					const unsigned char *src, size_t spitch, size_t width, size_t height,
					cudaStream_t stream)
{
	return exchange(worker, seq, device, dst, width * height, stream,
					[&](size_t lo, size_t hi) {
		upload_2d(dst, width, src, spitch, width, height, stream, lo, hi);
	});
}

double
SharedUnits::upload(int worker, size_t seq, int device, unsigned char *dst,
					const Gather &g, cudaStream_t stream)
{
	return exchange(worker, seq, device, dst, g.total, stream,
					[&](size_t lo, size_t hi) { upload_gather(dst, g, stream, lo, hi); });
}

double
SharedUnits::exchange(int worker, size_t seq, int device, unsigned char *dst, size_t total,
					  cudaStream_t stream,
					  const std::function<void(size_t, size_t)> &from_host)
{
	double		t0 = now_ms(),
				waited = 0;		/* for the other devices: not copying */
	int			n = workers();
	auto		range = [&](int k, size_t *lo, size_t *hi) {
		/* 256-byte aligned shares of the bytes, the last takes the rest */
		*lo = k == 0 ? 0 : (size_t) ((double) total * k / n) & ~(size_t) 255;
		*hi = k + 1 == n ? total : (size_t) ((double) total * (k + 1) / n) & ~(size_t) 255;
	};
	size_t		lo,
				hi;
	Exchange   *e;
	bool		ok = true;
	Error		why(SJ_ERR_INTERNAL, "shared upload failed");

	range(worker, &lo, &hi);
	from_host(lo, hi);
	{
		std::unique_lock<std::mutex> lk(mu_);

		e = &exchanges_[seq];
		if (e->dst.empty())
		{
			e->dst.assign(n, nullptr);
			e->device.assign(n, -1);
			e->total = total;
		}
		if (e->total != total || e->go)
			throw Error(SJ_ERR_INTERNAL,
						"the devices of a spread join uploaded differently (%zu bytes, not %zu)",
						total, e->total);
		e->dst[worker] = dst;
		e->device[worker] = device;
		e->arrived++;
		cv_.notify_all();
		{
			double		w0 = now_ms();

			cv_.wait(lk, [&] { return e->go || e->arrived >= participants_ || cancelled_; });
			waited += now_ms() - w0;
		}
		if (!e->go && e->arrived < participants_)
		{
			/* stopped before every device arrived: nobody has read anything */
			e->dst[worker] = nullptr;
			if (--e->arrived == 0)
				exchanges_.erase(seq);
			throw Error(SJ_ERR_INTERNAL, "the spread join stopped during an upload");
		}
		if (!e->go)
		{
			e->go = true;
			e->readers = e->arrived;
		}
	}

	/* the others' shares: from their devices, else from the host */
	try
	{
		for (int k = 0; k < n; k++)
		{
			size_t		l,
						h;

			range(k, &l, &h);
			if (k == worker || l >= h)
				continue;
			if (e->dst[k] && peer_reachable(device, e->device[k]))
				SJGPU_CHECK(cudaMemcpyPeerAsync(dst + l, device, e->dst[k] + l, e->device[k],
												h - l, stream));
			else
				from_host(l, h);
		}
		SJGPU_CHECK(cudaStreamSynchronize(stream));
	}
	catch (const Error &err)
	{
		why = err;
		ok = false;
	}
	catch (const std::bad_alloc &)
	{
		why = Error(SJ_ERR_NOMEM, "out of host memory in a shared upload");
		ok = false;
	}
	catch (...)
	{
		why = Error(SJ_ERR_INTERNAL, "unknown exception in a shared upload");
		ok = false;
	}
	if (!ok)
	{
		(void) cudaStreamSynchronize(stream);
		(void) cudaGetLastError();
	}

	/* nobody goes on (and may free or overwrite its rows) until all have read */
	{
		std::unique_lock<std::mutex> lk(mu_);
		int			readers = e->readers;

		double		w0;

		e->finished++;
		cv_.notify_all();
		w0 = now_ms();
		cv_.wait(lk, [&] { return e->finished >= readers; });
		waited += now_ms() - w0;
		if (++e->left == readers)
			exchanges_.erase(seq);
	}
	if (!ok)
		throw why;
	return std::max(0.0, now_ms() - t0 - waited);
}

bool
SharedUnits::exhausted(size_t task)
{
	std::lock_guard<std::mutex> lk(mu_);

	return cancelled_ || task < tasks_.size() && tasks_[task].n >= 0 &&
		tasks_[task].next >= (uint64_t) tasks_[task].n;
}

uint64_t
SharedUnits::taken(int worker) const
{
	std::lock_guard<std::mutex> lk(mu_);

	return worker >= 0 && (size_t) worker < taken_.size() ? taken_[worker] : 0;
}

uint64_t
SharedUnits::taken_all() const
{
	std::lock_guard<std::mutex> lk(mu_);
	uint64_t	sum = 0;

	for (uint64_t k : taken_)
		sum += k;
	return sum;
}

uint64_t
plan_digest(const uint32_t *cuts, size_t n, uint64_t seed)
{
	uint64_t	h = seed;

	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
		{
			h ^= (cuts[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ULL;
		}
	return h;
}

/*
 * The replica of an eps or jaccard join spread with shared units: the
 * whole join (Begin with the piece's claim), its batches, timings and end,
 * with the join's one parameter (eps or threshold).
 */
/* Test hook: the replica of this worker fails its begin, out of memory. */
static int	replica_nomem = -1;

template <typename Input, typename Join,
		  SjStatus (*Begin) (const Input *, const Input *, double, const SjJoinOptions *,
							 UnitClaim, Join **, char *),
		  SjStatus (*Next) (Join *, SjPairBatch *, int *, char *),
		  void (*Timings) (const Join *, SjTimings *),
		  void (*End) (Join *)>
class ReplicaOps : public PieceOps
{
public:
	ReplicaOps(const Input &left, const Input *right, double param)
		: left_(left), right_(right ? *right : left), self_(right == nullptr),
		  param_(param) {}

	SjStatus	begin(const Piece &p, const SjJoinOptions *options, void **h,
					  char *errmsg) override
	{
		Join	   *j = nullptr;
		SjStatus	st;

		if (p.claim.units && (p.claim.worker == replica_nomem || replica_nomem == -2))
		{
			set_errmsg(errmsg, "test: out of device memory");
			*h = nullptr;
			return SJ_ERR_DEVICE_NOMEM;
		}
		st = Begin(&left_, self_ ? nullptr : &right_, param_, options, p.claim, &j, errmsg);
		*h = j;
		return st;
	}
	SjStatus	next(void *h, SjPairBatch *batch, int *done, char *errmsg) override
	{
		return Next(static_cast<Join *>(h), batch, done, errmsg);
	}
	void		timings(void *h, SjTimings *t) override
	{
		Timings(static_cast<Join *>(h), t);
	}
	void		end(void *h) override
	{
		End(static_cast<Join *>(h));
	}

private:
	Input		left_;
	Input		right_;			/* == left_ for a self-join */
	bool		self_;
	double		param_;
};

typedef ReplicaOps<SjVectors, SjGpuEpsJoin, eps_begin_shared, sjgpu_eps_next,
				   sjgpu_eps_timings, sjgpu_eps_end> EpsReplicaOps;
typedef ReplicaOps<SjSets, SjGpuJaccardJoin, jaccard_begin_shared, sjgpu_jaccard_next,
				   sjgpu_jaccard_timings, sjgpu_jaccard_end> JaccardReplicaOps;

/* One piece of a multi-device theta join. */
struct ThetaPiece
{
	std::vector<SjThetaColumn> l;
	std::vector<SjThetaColumn> r;
	SjGpuThetaJoin *j = nullptr;
};

/* Rows [first, first + n) of t: its columns' arrays offset, into cols. */
static SjThetaTable
slice_table(const SjThetaTable &t, uint32_t first, uint32_t n,
			std::vector<SjThetaColumn> *cols)
{
	SjThetaTable out = t;

	cols->assign(t.cols, t.cols + t.ncols);
	for (SjThetaColumn &c : *cols)
	{
		/* both column types are 8 bytes a value */
		c.values = static_cast<const char *>(c.values) + (size_t) first * 8;
		if (c.nulls)
			c.nulls += first;
	}
	out.n = n;
	out.cols = cols->data();
	return out;
}

/* A piece of a theta join is a one-device theta join (no self-joins). */
class ThetaPieceOps : public PieceOps
{
public:
	ThetaPieceOps(const SjThetaTable &left, const SjThetaTable &right,
				  const SjThetaProgram &program, SjThetaStrategy strategy)
		: left_(left), right_(right), lcols_(left.cols, left.cols + left.ncols),
		  rcols_(right.cols, right.cols + right.ncols),
		  instr_(program.instr, program.instr + program.ninstr), strategy_(strategy)
	{
		left_.cols = lcols_.data();
		right_.cols = rcols_.data();
		program_.ninstr = program.ninstr;
		program_.instr = instr_.data();
	}

	SjStatus	begin(const Piece &p, const SjJoinOptions *options, void **h,
					  char *errmsg) override
	{
		ThetaPiece *e;
		SjThetaTable l,
					r;

		try
		{
			e = new ThetaPiece();
			*h = e;
			l = slice_table(left_, p.left_first, p.left_n, &e->l);
			r = slice_table(right_, p.right_first, p.right_n, &e->r);
		}
		catch (const std::bad_alloc &)
		{
			set_errmsg(errmsg, "out of host memory in the GPU engine");
			return SJ_ERR_NOMEM;
		}
		return sjgpu_theta_begin(&l, &r, &program_, strategy_, options, &e->j, errmsg);
	}
	SjStatus	next(void *h, SjPairBatch *batch, int *done, char *errmsg) override
	{
		SjGpuThetaJoin *j = static_cast<ThetaPiece *>(h)->j;
		SjStatus	st = sjgpu_theta_next(j, batch, done, errmsg);
		int			none = SJ_THETA_OK;

		if (st == SJ_ERR_DATA)
			data_error.compare_exchange_strong(none, (int) sjgpu_theta_data_error(j));
		return st;
	}
	void		timings(void *h, SjTimings *t) override
	{
		sjgpu_theta_timings(static_cast<ThetaPiece *>(h)->j, t);
	}
	void		end(void *h) override
	{
		ThetaPiece *e = static_cast<ThetaPiece *>(h);

		sjgpu_theta_end(e->j);
		delete e;
	}

	std::atomic<int> data_error{SJ_THETA_OK};	/* the first piece's */

private:
	SjThetaTable left_;
	SjThetaTable right_;
	std::vector<SjThetaColumn> lcols_;
	std::vector<SjThetaColumn> rcols_;
	std::vector<SjThetaInstr> instr_;
	SjThetaProgram program_;
	SjThetaStrategy strategy_;
};

bool
multi_wanted(const SjJoinOptions *options, uint32_t nleft, uint32_t nright, bool self)
{
	return options && options->gpu_ndevices > 1 && options->gpu_devices &&
		nleft > 0 && (self ? nleft > 1 : nright > 0);
}

MultiJoin *
multi_eps_begin(const SjVectors *left, const SjVectors *right, double eps,
				const SjJoinOptions *options)
{
	return multi_begin_shared(std::unique_ptr<PieceOps>(new EpsReplicaOps(*left, right, eps)),
							  options);
}

MultiJoin *
multi_jaccard_begin(const SjSets *left, const SjSets *right, double threshold,
					const SjJoinOptions *options)
{
	return multi_begin_shared(std::unique_ptr<PieceOps>(new JaccardReplicaOps(*left, right,
																			   threshold)),
							  options);
}

MultiJoin *
multi_theta_begin(const SjThetaTable *left, const SjThetaTable *right,
				  const SjThetaProgram *program, SjThetaStrategy strategy,
				  const SjJoinOptions *options)
{
	if (!program || program->ninstr < 1 || !program->instr)
		throw Error(SJ_ERR_INVALID, "theta_join: no program");
	return multi_begin(std::unique_ptr<PieceOps>(new ThetaPieceOps(*left, *right, *program,
																	 strategy)),
					   split_pieces(left->n, right->n, false, options->gpu_ndevices),
					   options);
}

SjThetaDataError
multi_theta_data_error(const MultiJoin *m)
{
	const ThetaPieceOps *ops = dynamic_cast<const ThetaPieceOps *>(m->ops.get());

	return ops ? (SjThetaDataError) ops->data_error.load() : SJ_THETA_OK;
}

/* The test hook's trace of the last join that ended (sjgpu_multi_test_trace). */
static std::mutex trace_mu;
static char last_trace[1024];

void
multi_end(MultiJoin *m) noexcept
{
	if (!m)
		return;
	{
		std::lock_guard<std::mutex> lk(m->mu);

		m->stop = true;
		if (m->units)
			m->units->cancel();
		m->held = nullptr;
		m->cv_worker.notify_all();
		m->cv_main.notify_all();
	}
	for (auto &w : m->workers)
		if (w->started)
			pthread_join(w->thread, nullptr);
	stage_share(-m->staging);
	{
		/* the test hook's trace, ms from the join's start */
		std::lock_guard<std::mutex> lk(trace_mu);
		int			len = snprintf(last_trace, sizeof(last_trace), "ended %.1f",
								   now_ms() - m->at_created);

		for (auto &w : m->workers)
			if (len >= 0 && (size_t) len < sizeof(last_trace))
				len += snprintf(last_trace + len, sizeof(last_trace) - len,
								"; gpu%d thread %.1f begun %.1f done %.1f ended %.1f waited %.1f"
								" (alloc %.1f in begin, %.1f to done, %.1f to end; transfer %.1f build %.1f)",
								w->ordinal, w->at_thread - m->at_created,
								w->at_begun - m->at_created, w->at_done - m->at_created,
								w->at_ended - m->at_created, w->waited_ms,
								w->alloc_begin_ms, w->alloc_ms, w->alloc_end_ms,
								w->t.transfer_ms, w->t.build_ms);
	}
	delete m;
}

}								/* namespace sjgpu */

/*
 * Test hook (not in sjgpu.h): on = 0 makes every device of a spread join
 * upload the others' shares from the host instead of copying them from
 * their devices.
 */
extern "C" void
sjgpu_set_test_peer_copies(int on)
{
	sjgpu::peer_copies = on != 0;
}

/*
 * Test hook (not in sjgpu.h): worker >= 0 makes that entry of a spread eps
 * or jaccard join's device list fail its begin with SJ_ERR_DEVICE_NOMEM,
 * -2 every entry, -1 none.
 */
extern "C" void
sjgpu_set_test_replica_nomem(int worker)
{
	sjgpu::replica_nomem = worker;
}

/*
 * Test hook (not in sjgpu.h): when the last multi-device join's workers
 * began, had begun their joins, had their last batch and had ended them,
 * and their waits for the caller (ms from the join's start), into buf.
 */
extern "C" void
sjgpu_multi_test_trace(char *buf, size_t len)
{
	std::lock_guard<std::mutex> lk(sjgpu::trace_mu);

	snprintf(buf, len, "%s", sjgpu::last_trace);
}
