/*
 * multi_check.cu
 *		Host-only check of the multi-device driver (cuda/sjgpu_multi.cu), on
 *		any machine with nvcc, no GPU needed: `make multi-check`.
 *
 * A fake operator stands in for the one-device joins: a piece's pairs are
 * its (left, right) rows with (l + r) % 7 == 0, handed out in small batches
 * after random short sleeps, so that workers race.  The check compares the
 * union of the batches with the expected set (no pair twice, none missing)
 * and the counts of count-only joins, for many sizes, self-joins and lists
 * of 1 to 4 workers; then an early end, a failing begin and next (the first
 * failure is reported, every worker stops), and a device that does not
 * exist.  The CUDA helpers the driver calls are stubbed below.
 */
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "sjgpu_multi.cuh"

namespace sjgpu
{

Error::Error(SjStatus status, const char *fmt, ...)
	: status_(status)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg_, sizeof(msg_), fmt, ap);
	va_end(ap);
}

void
set_errmsg(char *errmsg, const char *msg)
{
	if (errmsg)
		snprintf(errmsg, SJ_ERRMSG_LEN, "%s", msg ? msg : "");
}

/* Stub: devices 0..3 exist. */
void
check_ordinal(int ordinal)
{
	if (ordinal < 0 || ordinal >= 4)
		throw Error(SJ_ERR_NO_DEVICE, "GPU device %d does not exist (4 found)", ordinal);
}

double
use_device(int ordinal)
{
	check_ordinal(ordinal);
	return 0.0;
}

/* Stub: 1 GiB unless limited. */
size_t
memory_limit(size_t options_limit)
{
	return options_limit ? options_limit : ((size_t) 1 << 30);
}

/*
 * Stub: no GPU here, so the CUDA calls of the shared upload fail; ignored.
 * (No device can reach another's memory, so every share a device does not
 * upload itself comes through upload_2d below, from the "host".)
 */
void
check_cuda(cudaError_t, const char *, const char *, int)
{
}

/* The trace's cudaMalloc/cudaFree time: nothing is allocated here. */
thread_local double alloc_ms = 0.0;

/* The staging threads' sharing: nothing is staged here. */
void
stage_share(int)
{
}

/* Stub: "device" memory is host memory; bytes [lo, hi), after a random sleep. */
double
upload_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
		  size_t height, cudaStream_t, size_t lo, size_t hi)
{
	hi = std::min(hi, width * height);
	std::this_thread::sleep_for(std::chrono::microseconds(rand() % 300));
	for (size_t o = lo; o < hi; o++)
		((unsigned char *) dst)[(o / width) * dpitch + o % width] =
			((const unsigned char *) src)[(o / width) * spitch + o % width];
	return 0.0;
}

/* Stub: upload_2d's, from pieces of "host" memory (Gather). */
double
upload_gather(void *dst, const Gather &g, cudaStream_t, size_t lo, size_t hi)
{
	hi = std::min(hi, g.total);
	std::this_thread::sleep_for(std::chrono::microseconds(rand() % 300));
	for (size_t o = lo; o < hi; o++)
	{
		size_t		k = (size_t) (std::upper_bound(g.at, g.at + g.npieces, o) - g.at) - 1;

		((unsigned char *) dst)[o] = g.src[k][o - g.at[k]];
	}
	return 0.0;
}

/* Stubs: the operators' joins with shared units are not linked here. */
SjStatus
eps_begin_shared(const SjVectors *, const SjVectors *, double, const SjJoinOptions *,
				 UnitClaim, SjGpuEpsJoin **, char *)
{
	return SJ_ERR_NO_DEVICE;
}

SjStatus
jaccard_begin_shared(const SjSets *, const SjSets *, double, const SjJoinOptions *,
					 UnitClaim, SjGpuJaccardJoin **, char *)
{
	return SJ_ERR_NO_DEVICE;
}

}								/* namespace sjgpu */

using namespace sjgpu;

/* The operators' one-device joins are not linked here: stubs. */
extern "C"
{
SjStatus	sjgpu_eps_begin(const SjVectors *, const SjVectors *, double,
							const SjJoinOptions *, SjGpuEpsJoin **, char *) { return SJ_ERR_NO_DEVICE; }
SjStatus	sjgpu_eps_next(SjGpuEpsJoin *, SjPairBatch *, int *, char *) { return SJ_ERR_NO_DEVICE; }
void		sjgpu_eps_timings(const SjGpuEpsJoin *, SjTimings *) {}
void		sjgpu_eps_end(SjGpuEpsJoin *) {}
SjStatus	sjgpu_jaccard_begin(const SjSets *, const SjSets *, double,
								const SjJoinOptions *, SjGpuJaccardJoin **, char *) { return SJ_ERR_NO_DEVICE; }
SjStatus	sjgpu_jaccard_next(SjGpuJaccardJoin *, SjPairBatch *, int *, char *) { return SJ_ERR_NO_DEVICE; }
void		sjgpu_jaccard_timings(const SjGpuJaccardJoin *, SjTimings *) {}
void		sjgpu_jaccard_end(SjGpuJaccardJoin *) {}
SjStatus	sjgpu_theta_begin(const SjThetaTable *, const SjThetaTable *, const SjThetaProgram *,
							  SjThetaStrategy, const SjJoinOptions *, SjGpuThetaJoin **,
							  char *) { return SJ_ERR_NO_DEVICE; }
SjStatus	sjgpu_theta_next(SjGpuThetaJoin *, SjPairBatch *, int *, char *) { return SJ_ERR_NO_DEVICE; }
void		sjgpu_theta_timings(const SjGpuThetaJoin *, SjTimings *) {}
SjThetaDataError sjgpu_theta_data_error(const SjGpuThetaJoin *) { return SJ_THETA_OK; }
void		sjgpu_theta_end(SjGpuThetaJoin *) {}
SjStatus	sjgpu_device_count(int *count, char *) { *count = 4; return SJ_OK; }	/* as check_ordinal */
}

static std::atomic<int> fail_begin_at{-1};
static std::atomic<int> fail_next_at{-1};
static std::atomic<int> begins{0};
static std::atomic<int> nexts{0};

/* The pairs of a fake join and its next batch. */
struct FakeBatches
{
	std::vector<std::pair<uint32_t, uint32_t>> all;
	size_t		pos = 0;
	size_t		batch = 1;
	bool		count_only = false;
	std::vector<uint32_t> l;
	std::vector<uint32_t> r;
	std::vector<double> v;

	/* The next batch of all, after a short random sleep. */
	void		emit(SjPairBatch *b)
	{
		size_t		n = std::min(batch, all.size() - pos);

		std::this_thread::sleep_for(std::chrono::microseconds(rand() % 200));
		l.clear();
		r.clear();
		v.assign(n, 1.0);
		for (size_t i = 0; i < n; i++)
		{
			l.push_back(all[pos + i].first);
			r.push_back(all[pos + i].second);
		}
		pos += n;
		b->count = n;
		if (!count_only)
		{
			b->left = l.data();
			b->right = r.data();
			b->value = v.data();
		}
	}
};

/* A fake one-device join of one piece. */
struct FakeJoin : FakeBatches
{
};

static bool
joins(uint32_t a, uint32_t b)
{
	return (a + b) % 7 == 0;
}

/* The fake operator. */
class FakeOps : public PieceOps
{
public:
	size_t		batch = 1;

	SjStatus	begin(const Piece &p, const SjJoinOptions *o, void **h, char *err) override
	{
		FakeJoin   *j = new FakeJoin();

		*h = j;
		j->batch = batch;
		j->count_only = o->count_only != 0;
		if (begins++ == fail_begin_at)
		{
			set_errmsg(err, "begin failed");
			return SJ_ERR_DEVICE;
		}
		for (uint32_t a = 0; a < p.left_n; a++)
			if (p.self)
			{
				for (uint32_t b = a + 1; b < p.left_n; b++)
					if (joins(a + p.left_first, b + p.left_first))
						j->all.push_back({a, b});
			}
			else
				for (uint32_t b = 0; b < p.right_n; b++)
					if (joins(a + p.left_first, b + p.right_first))
						j->all.push_back({a, b});
		return SJ_OK;
	}
	SjStatus	next(void *h, SjPairBatch *b, int *done, char *err) override
	{
		FakeJoin   *j = static_cast<FakeJoin *>(h);

		memset(b, 0, sizeof(*b));
		*done = 0;
		if (nexts++ == fail_next_at)
		{
			set_errmsg(err, "next failed");
			return SJ_ERR_DEVICE_NOMEM;
		}
		j->emit(b);
		*done = j->pos == j->all.size();
		return SJ_OK;
	}
	void		timings(void *, SjTimings *t) override
	{
		memset(t, 0, sizeof(*t));
		strcpy(t->strategy, "fake");
	}
	void		end(void *h) override
	{
		delete static_cast<FakeJoin *>(h);
	}
};

/* A fake whole-join replica of a join spread with shared units. */
struct SharedFake : FakeBatches	/* all: the current unit's pairs */
{
	UnitClaim	claim;
	uint32_t	nl = 0;
	uint32_t	nr = 0;
	bool		self = false;
	uint32_t	task = 0;		/* tasks: bands of 50 left rows */
	std::vector<uint32_t> cuts; /* the task's units: left rows */
};

static std::atomic<int> shared_live{0};
static std::atomic<int> shared_skew{-1};	/* this worker plans differently */
static std::atomic<bool> shared_sparse{false};	/* units past the first: no pairs, 2 ms each */
static std::atomic<int> shared_nomem{-1};	/* this worker's begin: out of device memory */

/* The fake operator spread with shared units: each unit a band of left rows. */
class SharedFakeOps : public PieceOps
{
public:
	uint32_t	nl = 0;
	uint32_t	nr = 0;
	bool		self = false;
	size_t		batch = 1;

	SjStatus	begin(const Piece &p, const SjJoinOptions *o, void **h, char *err) override
	{
		SharedFake *j = new SharedFake();

		shared_live++;
		*h = j;
		j->claim = p.claim;
		j->nl = nl;
		j->nr = nr;
		j->self = self;
		j->batch = batch;
		j->count_only = o->count_only != 0;
		if (p.claim.worker == shared_nomem)
		{
			set_errmsg(err, "out of device memory");
			return SJ_ERR_DEVICE_NOMEM;
		}
		return SJ_OK;
	}

	/* The units of task t: its rows cut into 8 a worker (skewed: one fewer). */
	static void plan(SharedFake *j)
	{
		uint32_t	a = j->task * 50,
					b = std::min(j->nl, a + 50);
		uint32_t	k = 8 * j->claim.units->workers() - (shared_skew == j->claim.worker);

		j->cuts.assign(1, a);
		for (uint32_t i = 1; i < k; i++)
		{
			uint32_t	c = a + (uint32_t) ((uint64_t) (b - a) * i / k);

			if (c > j->cuts.back() && c < b)
				j->cuts.push_back(c);
		}
		j->cuts.push_back(b);
	}

	SjStatus	next(void *h, SjPairBatch *b, int *done, char *err) override
	{
		SharedFake *j = static_cast<SharedFake *>(h);

		memset(b, 0, sizeof(*b));
		*done = 0;
		try
		{
			while (j->pos == j->all.size())
			{
				long long	u;

				if (j->task * 50 >= j->nl)
				{
					*done = 1;
					return SJ_OK;
				}
				if (j->cuts.empty())
					plan(j);
				u = j->claim.units->claim(j->claim.worker, j->task,
										  (uint32_t) j->cuts.size() - 1,
										  plan_digest(j->cuts.data(), j->cuts.size()));
				if (u < 0)
				{
					j->task++;
					j->cuts.clear();
					continue;
				}
				j->all.clear();
				j->pos = 0;
				if (shared_sparse && (j->task > 0 || u > 0))
				{
					/* a unit without pairs: an empty batch, as the engines return */
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
					return SJ_OK;
				}
				for (uint32_t x = j->cuts[u]; x < j->cuts[u + 1]; x++)
					for (uint32_t y = j->self ? x + 1 : 0; y < (j->self ? j->nl : j->nr); y++)
						if (joins(x, y))
							j->all.push_back({x, y});
			}
		}
		catch (const Error &e)
		{
			set_errmsg(err, e.what());
			return e.status();
		}
		j->emit(b);
		return SJ_OK;
	}
	void		timings(void *, SjTimings *t) override
	{
		memset(t, 0, sizeof(*t));
		strcpy(t->strategy, "fake shared");
	}
	void		end(void *h) override
	{
		shared_live--;
		delete static_cast<SharedFake *>(h);
	}
};

/*
 * One join (shared: spread with shared units, else in pieces); stop_after
 * >= 0 ends it early after that many batches.
 */
static bool
run(uint32_t nl, uint32_t nr, bool self, std::vector<int> devs, size_t batch,
	bool count_only, int stop_after = -1, SjStatus expect = SJ_OK, bool shared = false)
{
	std::set<std::pair<uint32_t, uint32_t>> exp,
				got;
	uint64_t	count = 0;
	SjJoinOptions o;
	std::unique_ptr<FakeOps> ops(new FakeOps());
	std::unique_ptr<SharedFakeOps> sops(new SharedFakeOps());
	MultiJoin  *m;
	int			done = 0,
				calls = 0;
	char		err[SJ_ERRMSG_LEN] = "";
	SjStatus	st = SJ_OK;
	SjTimings	t;

	for (uint32_t a = 0; a < nl; a++)
		for (uint32_t b = self ? a + 1 : 0; b < (self ? nl : nr); b++)
			if (joins(a, b))
				exp.insert({a, b});
	memset(&o, 0, sizeof(o));
	o.gpu_ndevices = (int) devs.size();
	o.gpu_devices = devs.data();
	o.count_only = count_only;
	ops->batch = batch;
	sops->nl = nl;
	sops->nr = nr;
	sops->self = self;
	sops->batch = batch;
	try
	{
		if (shared)
			m = multi_begin_shared(std::move(sops), &o);
		else
			m = multi_begin(std::move(ops), split_pieces(nl, nr, self, (int) devs.size()), &o);
	}
	catch (const Error &e)
	{
		if (e.status() != expect)
			printf("begin: %s\n", e.what());
		return e.status() == expect;
	}
	while (!done)
	{
		SjPairBatch b;

		st = multi_next(m, &b, &done, err);
		if (st != SJ_OK)
			break;
		count += b.count;
		for (size_t i = 0; !count_only && i < b.count; i++)
			if (!got.insert({b.left[i], b.right[i]}).second)
			{
				printf("pair (%u, %u) twice\n", b.left[i], b.right[i]);
				multi_end(m);
				return false;
			}
		if (stop_after >= 0 && ++calls > stop_after)
			break;
	}
	multi_timings(m, &t);
	multi_end(m);
	if (shared_live != 0)
	{
		printf("%d replicas not ended\n", shared_live.load());
		return false;
	}
	if (st != expect)
	{
		printf("status %d, expected %d: %s\n", (int) st, (int) expect, err);
		return false;
	}
	if (st != SJ_OK || stop_after >= 0)
		return true;
	if (count != exp.size() || (!count_only && got != exp))
	{
		printf("%u x %u self %d on %zu: %llu pairs, expected %zu\n", nl, nr, self,
			   devs.size(), (unsigned long long) count, exp.size());
		return false;
	}
	if (devs.size() == 3 && nl == 333 && nr == 333 && self && !count_only)
		printf("%sdevices: %s; strategy %s; %llu batches\n", shared ? "shared: " : "",
			   t.devices, t.strategy, (unsigned long long) t.batches);
	return true;
}

/*
 * A batch the caller holds stays valid when another device fails: the
 * device whose batch it is must not end its join (which frees the batch's
 * memory) before the caller lets the batch go, with its next multi_next or
 * multi_end.  The piece at row 0 (the first handed out, taken at once by
 * one of the two workers) returns one batch of eight pairs (7, 0), its
 * own arrays (a piece at other rows would have them copied, shifted);
 * every other piece waits until the caller holds that batch, then fails.
 * An ended join's arrays are poisoned and kept, so that a read after its
 * end is seen rather than undefined.
 */
static std::atomic<bool> held_taken{false};

struct HeldJoin
{
	std::vector<uint32_t> l;
	std::vector<uint32_t> r;
	bool		first = false;
	bool		sent = false;
};

static std::mutex held_mu;
static std::vector<HeldJoin *> held_ended;

class HeldOps : public PieceOps
{
public:
	SjStatus	begin(const Piece &p, const SjJoinOptions *o, void **h, char *err) override
	{
		HeldJoin   *j = new HeldJoin();

		j->first = p.left_first == 0;
		j->l.assign(8, 7);
		j->r.assign(8, 0);
		*h = j;
		return SJ_OK;
	}
	SjStatus	next(void *h, SjPairBatch *b, int *done, char *err) override
	{
		HeldJoin   *j = static_cast<HeldJoin *>(h);

		memset(b, 0, sizeof(*b));
		*done = 0;
		if (!j->first)
		{
			for (int i = 0; i < 5000 && !held_taken; i++)
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			set_errmsg(err, "next failed");
			return SJ_ERR_DEVICE;
		}
		if (j->sent)
		{
			*done = 1;
			return SJ_OK;
		}
		j->sent = true;
		b->count = j->l.size();
		b->left = j->l.data();
		b->right = j->r.data();
		return SJ_OK;
	}
	void		timings(void *, SjTimings *t) override
	{
		memset(t, 0, sizeof(*t));
	}
	void		end(void *h) override
	{
		HeldJoin   *j = static_cast<HeldJoin *>(h);
		std::lock_guard<std::mutex> lk(held_mu);

		std::fill(j->l.begin(), j->l.end(), 0xFFFFFFFFu);
		std::fill(j->r.begin(), j->r.end(), 0xFFFFFFFFu);
		held_ended.push_back(j);
	}
};

static bool
check_held_batch()
{
	SjJoinOptions o;
	int			devs[2] = {0, 1};
	SjPairBatch b;
	int			done = 0;
	char		err[SJ_ERRMSG_LEN] = "";
	SjStatus	st;
	bool		ok = true;
	MultiJoin  *m;

	memset(&o, 0, sizeof(o));
	o.gpu_ndevices = 2;
	o.gpu_devices = devs;
	held_taken = false;
	m = multi_begin(std::unique_ptr<PieceOps>(new HeldOps()),
					std::vector<Piece> {Piece{0, 50, 0, 0, true, 3.0}, Piece{50, 25, 0, 0, true, 2.0},
										Piece{75, 25, 0, 0, true, 1.0}}, &o);
	st = multi_next(m, &b, &done, err);
	if (st != SJ_OK || b.count != 8)
	{
		printf("held batch: first batch status %d, %zu pairs\n", (int) st, (size_t) b.count);
		ok = false;
	}
	else
	{
		held_taken = true;
		/* another device fails now, while this batch is held */
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		for (size_t i = 0; i < b.count; i++)
			if (b.left[i] != 7 || b.right[i] != 0)
			{
				printf("held batch: pair %zu read (%u, %u) after another device failed: its join had ended\n",
					   i, b.left[i], b.right[i]);
				ok = false;
				break;
			}
		st = multi_next(m, &b, &done, err);
		if (st != SJ_ERR_DEVICE)
		{
			printf("held batch: status %d after the failure, expected %d\n", (int) st,
				   (int) SJ_ERR_DEVICE);
			ok = false;
		}
	}
	multi_end(m);
	{
		std::lock_guard<std::mutex> lk(held_mu);

		for (HeldJoin *j : held_ended)
			delete j;
		held_ended.clear();
	}
	return ok;
}

/*
 * SharedUnits::upload: k devices (nrun of them running, the others
 * dropped) upload four pitched arrays in turn; each must end up with all
 * of every one.  cancel_after_ms >= 0: only nrun run and none is dropped,
 * so the uploads wait until the cancel, and every device must throw.
 * late_drop: the others are dropped only after 20 ms, while the running
 * ones wait for them.
 */
static bool
check_upload(int k, int nrun, size_t width, size_t height, int cancel_after_ms,
			 bool late_drop = false)
{
	SharedUnits units(k);
	size_t		spitch = width + 13;
	std::vector<unsigned char> src(spitch * height + 1);
	std::vector<std::vector<unsigned char>> dst(k);
	std::atomic<int> threw{0};
	std::vector<std::thread> th;
	bool		ok = true;

	for (auto &c : src)
		c = (unsigned char) rand();
	if (cancel_after_ms < 0 && !late_drop)
		for (int w = nrun; w < k; w++)
			units.drop(w);
	for (int w = 0; w < nrun; w++)
		th.emplace_back([&, w] {
			dst[w].assign(width * height, 0);
			try
			{
				for (size_t seq = 0; seq < 4; seq++)
				{
					const unsigned char *from = src.data() + seq % 2;

					units.upload(w, seq, w, dst[w].data(), from, spitch, width, height, nullptr);
					/* a wrong byte is reported, and the device goes on to the next upload */
					for (size_t o = 0; o < width * height; o++)
						if (dst[w][o] != from[(o / width) * spitch + o % width])
						{
							printf("shared upload: %d devices, %zu x %zu: device %d byte %zu wrong\n",
								   k, width, height, w, o);
							threw += 1000;
							break;
						}
				}
			}
			catch (const Error &)
			{
				threw++;
			}
		});
	if (cancel_after_ms >= 0)
	{
		std::this_thread::sleep_for(std::chrono::milliseconds(cancel_after_ms));
		units.cancel();
	}
	else if (late_drop)
	{
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		for (int w = nrun; w < k; w++)
			if (!units.drop(w))
			{
				printf("shared upload: device %d could not leave\n", w);
				ok = false;
			}
	}
	for (auto &t : th)
		t.join();
	if (cancel_after_ms >= 0 ? threw != nrun : threw != 0)
	{
		printf("shared upload: %d devices (%d running), cancel %d: %d threw\n", k, nrun,
			   cancel_after_ms, threw.load());
		ok = false;
	}
	return ok;
}

/*
 * SharedUnits::upload from a gathered source: k devices upload `total`
 * bytes held in uneven pieces (some empty, as a parallel scan's parts may
 * be) of separate buffers, twice; each must end up with all of them.
 */
static bool
check_upload_gather(int k, size_t total)
{
	SharedUnits units(k);
	std::vector<std::vector<unsigned char>> bufs;
	std::vector<unsigned char> whole;
	std::vector<const unsigned char *> src;
	std::vector<size_t> at;
	std::vector<std::vector<unsigned char>> dst(k);
	std::atomic<int> wrong{0};
	std::vector<std::thread> th;
	Gather		g;

	for (size_t o = 0; o < total || src.empty();)
	{
		size_t		len = std::min(total - o, (size_t) (rand() % 4 == 0 ? 0 : rand() % 2000));

		bufs.emplace_back(len + 1);
		for (size_t i = 0; i < len; i++)
			whole.push_back(bufs.back()[i] = (unsigned char) rand());
		src.push_back(bufs.back().data());
		at.push_back(o);
		o += len;
	}
	g.src = src.data();
	g.at = at.data();
	g.npieces = src.size();
	g.total = total;
	for (int w = 0; w < k; w++)
		th.emplace_back([&, w] {
			dst[w].assign(total, 0);
			try
			{
				for (size_t seq = 0; seq < 2; seq++)
				{
					units.upload(w, seq, w, dst[w].data(), g, nullptr);
					if (dst[w] != whole)
						wrong++;
				}
			}
			catch (const Error &)
			{
				wrong += 100;
			}
		});
	for (auto &t : th)
		t.join();
	if (wrong != 0)
		printf("gathered upload: %d devices, %zu bytes in %zu pieces: %d wrong or threw\n", k,
			   total, src.size(), wrong.load());
	return wrong == 0;
}

/*
 * SharedUnits::shared: n workers ask for one value at once.  Mode 0: it is
 * made once and every worker gets it; 1: the maker runs out of device
 * memory, gets its error, and the others nullptr (each makes its own);
 * 2: the join is cancelled while it is made, the waiting workers throw
 * and the maker still returns it; 3: the maker fails otherwise, and every
 * worker gets its error.
 */
static bool
check_shared(int n)
{
	bool		ok = true;

	for (int mode = 0; mode < 4; mode++)
	{
		SharedUnits u(n);
		std::atomic<int> made(0),
					got(0),
					none(0),
					threw(0);
		std::vector<std::thread> t;

		for (int w = 0; w < n; w++)
			t.emplace_back([&] {
				try
				{
					std::shared_ptr<void> v = u.shared(7, [&]() -> std::shared_ptr<void> {
						made++;
						std::this_thread::sleep_for(std::chrono::milliseconds(mode == 2 ? 200 : 20));
						if (mode == 1)
							throw Error(SJ_ERR_DEVICE_NOMEM, "test: the maker ran out");
						if (mode == 3)
							throw Error(SJ_ERR_DATA, "test: the maker failed");
						return std::make_shared<int>(42);
					});

					if (v && *static_cast<int *>(v.get()) == 42)
						got++;
					else if (!v)
						none++;
				}
				catch (const Error &)
				{
					threw++;
				}
			});
		if (mode == 2)
		{
			std::this_thread::sleep_for(std::chrono::milliseconds(30));
			u.cancel();
		}
		for (auto &th : t)
			th.join();
		if (made != 1 ||
			(mode == 0 && got != n) ||
			(mode == 1 && (threw != 1 || none != n - 1)) ||
			(mode == 2 && (got != 1 || threw != n - 1)) ||
			(mode == 3 && threw != n))
		{
			printf("shared value, %d workers, mode %d: made %d, got %d, none %d, threw %d\n",
				   n, mode, made.load(), got.load(), none.load(), threw.load());
			ok = false;
		}
	}
	return ok;
}

/*
 * Job units (SharedUnits::job_unit) and guided unit sizes: n workers claim
 * the units of two jobs at once, every unit exactly once; a worker that
 * cuts a job differently throws; a cancelled join hands out nothing; the
 * guided ends rise to 1, their units shrink, none below the least.
 */
static bool
check_jobs(int n)
{
	bool		ok = true;
	SharedUnits u(n);
	std::vector<std::atomic<int>> seen(2 * 37);
	std::vector<std::thread> t;

	for (auto &x : seen)
		x = 0;
	for (int w = 0; w < n; w++)
		t.emplace_back([&, w] {
			for (int job = 0; job < 2; job++)
				for (long long k; (k = u.job_unit(w, job, 37)) >= 0;)
				{
					seen[job * 37 + k]++;
					std::this_thread::sleep_for(std::chrono::microseconds(rand() % 200));
				}
		});
	for (auto &th : t)
		th.join();
	for (size_t i = 0; i < seen.size(); i++)
		if (seen[i] != 1)
		{
			printf("job units, %d workers: unit %zu of job %zu taken %d times\n",
				   n, i % 37, i / 37, seen[i].load());
			ok = false;
		}
	try
	{
		(void) u.job_unit(0, 1, 36);
		printf("job units, %d workers: a job cut differently did not throw\n", n);
		ok = false;
	}
	catch (const Error &)
	{
	}
	{
		SharedUnits c(n);

		c.cancel();
		if (c.job_unit(0, 0, 5) != -1)
		{
			printf("job units, %d workers: a cancelled join handed a unit out\n", n);
			ok = false;
		}
	}
	{
		std::vector<double> e = u.guided_ends();
		double		least = 1.0 / (4.0 * (double) u.target_units()),
					prev = 0.0,
					last = 2.0;

		for (size_t i = 0; i < e.size(); i++)
		{
			double		size = e[i] - prev;

			/* the last unit may be up to 1.5 least, the others shrink */
			if (!(size > 0.0) || (i + 1 < e.size() && (size < least * 0.999 || size > last * 1.0001)))
			{
				printf("guided ends, %d workers: unit %zu is %g (least %g, before %g)\n",
					   n, i, size, least, last);
				ok = false;
			}
			last = size;
			prev = e[i];
		}
		if (e.empty() || e.back() != 1.0 || e.size() > 8 * u.target_units())
		{
			printf("guided ends, %d workers: %zu units ending at %g\n", n, e.size(),
				   e.empty() ? 0.0 : e.back());
			ok = false;
		}
	}
	return ok;
}

int
main()
{
	static const uint32_t sizes[] = {1, 2, 3, 5, 17, 100, 333};
	bool		ok = true;
	int			n = 0;

	for (uint32_t a : sizes)
		for (uint32_t b : sizes)
			for (int self = 0; self < 2; self++)
				for (int k = 1; k <= 4; k++)
					for (int co = 0; co < 2; co++, n++)
						ok &= run(a, b, self, std::vector<int>(k, k % 2), 1 + (a * b) % 50, co);
	ok &= run(300, 300, true, {0, 1}, 10, false, 5);
	ok &= run(300, 300, false, {0, 1, 2}, 10, false, 0);
	begins = 0;
	fail_begin_at = 3;
	ok &= run(300, 300, true, {0, 0}, 10, false, -1, SJ_ERR_DEVICE);
	fail_begin_at = -1;
	nexts = 0;
	fail_next_at = 20;
	ok &= run(300, 300, false, {0, 0, 1}, 10, false, -1, SJ_ERR_DEVICE_NOMEM);
	fail_next_at = -1;
	ok &= run(30, 30, false, {0, 7}, 10, false, -1, SJ_ERR_NO_DEVICE);
	ok &= check_held_batch();
	for (uint32_t a : sizes)
		for (uint32_t b : sizes)
			for (int self = 0; self < 2; self++)
				for (int k = 1; k <= 4; k++)
					for (int co = 0; co < 2; co++, n++)
						ok &= run(a, b, self, std::vector<int>(k, k % 2), 1 + (a * b) % 50, co,
								  -1, SJ_OK, true);
	ok &= run(300, 300, true, {0, 1}, 10, false, 5, SJ_OK, true);
	ok &= run(300, 300, false, {0, 1, 2}, 10, false, 0, SJ_OK, true);
	shared_skew = 1;
	ok &= run(300, 300, true, {0, 0}, 10, false, -1, SJ_ERR_INTERNAL, true);
	shared_skew = -1;
	/* a replica out of memory at its begin leaves; the others do the join */
	shared_nomem = 1;
	ok &= run(300, 300, true, {0, 1}, 10, false, -1, SJ_OK, true);
	ok &= run(300, 200, false, {0, 1, 2}, 7, true, -1, SJ_OK, true);
	shared_nomem = 0;
	ok &= run(300, 300, true, {0}, 10, false, -1, SJ_ERR_DEVICE_NOMEM, true);
	shared_nomem = -1;

	/*
	 * Ended early while the replicas return empty batches (6,400 units of
	 * 2 ms without pairs): they stop at once, not after every unit.
	 */
	{
		auto		t0 = std::chrono::steady_clock::now();
		double		s;

		shared_sparse = true;
		ok &= run(20000, 1, false, {0, 1}, 10, false, 0, SJ_OK, true);
		shared_sparse = false;
		s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (s > 2.0)
		{
			printf("an early end waited %.1f s for the replicas' empty units\n", s);
			ok = false;
		}
	}
	/* the shared upload: shares, pitches, dropped devices, a stop mid-upload */
	for (int k = 1; k <= 4; k++)
		for (size_t total : {(size_t) 1, (size_t) 300, (size_t) 5000, (size_t) 70001})
		{
			ok &= check_upload(k, k, total, 1, -1);
			ok &= check_upload(k, k, total / 7 + 1, 7, -1);
			if (k > 1)
				ok &= check_upload(k, k - 1, total / 3 + 1, 3, -1);
		}
	for (int k = 1; k <= 4; k++)
		for (size_t total : {(size_t) 0, (size_t) 1, (size_t) 5000, (size_t) 70001})
			ok &= check_upload_gather(k, total);
	ok &= check_upload(3, 2, 4000, 5, 30);
	ok &= check_upload(3, 2, 4000, 5, -1, true);
	ok &= check_upload(4, 1, 999, 3, -1, true);
	for (int k = 1; k <= 4; k++)
		ok &= check_shared(k) && check_jobs(k);
	printf("multi-device driver: %d joins, 13 failure, early-end or drop-out cases, shared uploads (pitched and gathered), shared values, job units: %s\n",
		   n, ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
