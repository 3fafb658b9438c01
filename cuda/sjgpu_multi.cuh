/*
 * sjgpu_multi.cuh
 *		One join on several devices: the shared driver behind every operator's
 *		sjgpu_*_begin when options->gpu_ndevices > 1.  Private to cuda/.
 *
 * The join's work is cut into pieces (rows of one side against the other,
 * or bands of a self-join), largest first, and handed out dynamically: one
 * host thread per entry of the device list takes the next piece, runs it as
 * an ordinary one-device join of that operator on its device (each device
 * holding its own copy of the inner side), and hands each pair batch to the
 * caller's thread, which returns it from multi_next.  A device that is
 * slower or busier simply takes fewer pieces.  One device is the same path
 * with n = 1: the one-device join is the unit, never a second copy of it.
 *
 * The eps and Jaccard joins spread otherwise ("shared units"): every
 * device prepares the whole join once (its own upload, index, clustering,
 * tile bounds) and the devices then share that one join's work units (eps's
 * filter segments, Jaccard's blocks of probe sets) through SharedUnits, a
 * host-side counter: each unit is done by exactly one device, a faster
 * device takes more, and a self-join keeps its symmetry.  Every device's
 * plan of a task's units must be the same: it depends only on the inputs
 * and on one memory limit common to the devices (the smallest), and the
 * first device to plan a task records its digest for the others to match.
 *
 * Invariants: a worker holds at most one batch the caller has not consumed
 * (its one-device join keeps the next batch running meanwhile); the batch
 * multi_next returned stays valid until the next multi_next or multi_end.
 * multi_end stops every worker, waits for it, and each worker ends its
 * one-device join, so device memory is released on every device on every
 * path (error, cancel, early close).  Worker threads block all signals and
 * call only the CUDA runtime and the operator's engine, never PostgreSQL.
 */
#ifndef SJGPU_MULTI_CUH
#define SJGPU_MULTI_CUH

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "sjgpu_internal.cuh"

namespace sjgpu
{

/*
 * The work units of one join spread with shared units.  A task (a pair of
 * chunks, a partition of an index) is cut into n units by each device
 * alike; claim() hands each unit to exactly one device.
 */
/* Units a task of a join spread with shared units is cut into, a device. */
constexpr uint32_t kUnitsPerDevice = 8;

class SharedUnits
{
public:
	explicit	SharedUnits(int nworkers)
	:			participants_(nworkers), taken_(nworkers, 0), job_taken_(nworkers, 0) {}

	/*
	 * The next unit of task for worker, whose plan of the task has n units
	 * with the given digest; -1 when every unit of the task is taken.
	 * Throws when the plan differs from the first device's.
	 */
	long long	claim(int worker, size_t task, uint32_t n, uint64_t digest);

	/* Was task planned, and is every unit of it taken (or the join stopped)? */
	bool		exhausted(size_t task);

	/* The join stopped: claim() hands out nothing more. */
	void		cancel();

	/*
	 * The next unit of the join's job `job` (work outside the tasks' units,
	 * such as Jaccard's pairs inside groups of identical sets), which every
	 * worker cuts into the same n units; -1 when every unit of it is taken
	 * or the join stopped.  Each unit goes to exactly one worker.  Throws
	 * where n differs from the first worker's.
	 */
	long long	job_unit(int worker, int job, uint32_t n);

	/*
	 * The join's shared value `key`: a preparation every device would
	 * otherwise repeat, alike on each (host arrays, a cost model's
	 * choice).  The first worker to ask makes it with make() on its own
	 * thread and returns it; the others wait and share it.  They get
	 * nullptr where make() returned nullptr or ran out of its device's
	 * memory (SJ_ERR_DEVICE_NOMEM: each then does its own), and make()'s
	 * exception where it threw another; throws where the join stopped
	 * while they waited.
	 */
	std::shared_ptr<void> shared(int key, const std::function<std::shared_ptr<void>()> &make);

	/*
	 * Upload rows to every device of the join at once (upload_2d's
	 * arguments; dst contiguous): worker's call number seq, the same call
	 * on every device.  Each device uploads its 1/n of the bytes from the
	 * host, waits for the others, then copies theirs from their devices
	 * (peer to peer; from the host where it cannot reach another's memory,
	 * or another never started), and returns once every device has read
	 * what it needs of the others'.  Returns the host milliseconds it
	 * spent copying (not those it waited for the other devices).  Throws,
	 * also where the join stopped before every device arrived.
	 */
	double		upload(int worker, size_t seq, int device, unsigned char *dst,
					   const unsigned char *src, size_t spitch, size_t width, size_t height,
					   cudaStream_t stream);
	/* The same from pieces of host memory (upload_gather's source). */
	double		upload(int worker, size_t seq, int device, unsigned char *dst,
					   const Gather &g, cudaStream_t stream);

	/*
	 * Take worker out of the join: a thread that never started, or a
	 * replica whose begin ran out of device memory.  Only where it has
	 * claimed no unit and no one-off job, the join is not stopped and
	 * another worker remains: then no upload waits for it, the others do
	 * its share, and true is returned.
	 */
	bool		drop(int worker);

	/* The devices sharing the join. */
	int			workers() const
	{
		return (int) taken_.size();
	}

	/*
	 * Units a task should be cut into, at least: kUnitsPerDevice a device,
	 * so that the hand-out balances units of unequal work.
	 */
	uint64_t	target_units() const
	{
		return (uint64_t) kUnitsPerDevice * (uint64_t) std::max(1, workers());
	}

	/*
	 * Guided unit sizes: the fractions of a task's estimated work at which
	 * its units end (ascending, the last 1), each unit a 2·workers-th of
	 * the work left but none below a 4·target_units()-th of the whole: the
	 * first units large, the last ones small, so that devices finish
	 * together where the estimates of the units' work are rough.
	 */
	std::vector<double> guided_ends() const
	{
		std::vector<double> ends;
		double		done = 0.0,
					least = 1.0 / (4.0 * (double) target_units()),
					share = 1.0 / (2.0 * (double) std::max(1, workers()));

		while (1.0 - done > least * 1.5)
		{
			done += std::max((1.0 - done) * share, least);
			ends.push_back(std::min(done, 1.0));
		}
		if (ends.empty() || ends.back() < 1.0)
			ends.push_back(1.0);
		return ends;
	}

	/* Units worker took, and all taken. */
	uint64_t	taken(int worker) const;
	uint64_t	taken_all() const;

	/* A task's or job's units: how many, the plan's digest, the next one. */
	struct Task
	{
		long long	n = -1;
		uint64_t	digest = 0;
		uint32_t	next = 0;
	};

private:
	/* upload's exchange; from_host(lo, hi) copies bytes [lo, hi) from the host */
	double		exchange(int worker, size_t seq, int device, unsigned char *dst, size_t total,
						 cudaStream_t stream,
						 const std::function<void(size_t, size_t)> &from_host);


	/* One value shared by the devices (shared()). */
	struct Shared
	{
		int			state = 0;	/* 0 not asked, 1 being made, 2 made,
								 * 3 none (each its own), 4 failed */
		std::shared_ptr<void> value;
		std::exception_ptr error;	/* state 4: the maker's, for every worker */
	};

	/* One upload shared by the devices (upload()). */
	struct Exchange
	{
		std::vector<unsigned char *> dst;	/* NULL: that worker is not in it */
		std::vector<int> device;
		size_t		total = 0;
		int			arrived = 0;
		int			readers = 0;	/* arrived when all had: the copying starts */
		int			finished = 0;
		int			left = 0;
		bool		go = false;
	};

	mutable std::mutex mu_;
	std::condition_variable cv_;	/* an upload's arrivals, finishes; cancel */
	std::map<size_t, Exchange> exchanges_;
	std::map<int, Shared> shared_;
	int			participants_;
	std::vector<Task> tasks_;
	std::vector<uint64_t> taken_;
	std::map<int, Task> jobs_;	/* job_unit()'s jobs (digest unused) */
	std::vector<uint64_t> job_taken_;	/* job units each worker took */
	bool		cancelled_ = false;
};

/* A device's share of a join spread with shared units. */
struct UnitClaim
{
	SharedUnits *units = nullptr;	/* NULL: the join is all this device's */
	int			worker = 0;
};

/*
 * FNV-1a digest of a plan's cuts, continuing from seed (another digest:
 * that of what the cuts index, such as a task's chunks and strategy).
 */
uint64_t	plan_digest(const uint32_t *cuts, size_t n,
						uint64_t seed = 0xcbf29ce484222325ULL);

/*
 * May an eps or jaccard join spread with shared units over the devices of
 * options?  Only where they are alike (the same compute capability): a
 * unit's positions must name the same rows on every device, and the plan
 * depends on the architecture (tensor cores, CUB's temporary sizes).
 * Throws SJ_ERR_NO_DEVICE where the list names a device that does not exist.
 */
bool		devices_alike(const SjJoinOptions *options);

/*
 * Can `device` (the calling thread's current device) read peer's memory
 * directly?  Enables peer access on first use; false under the test hook
 * sjgpu_set_test_peer_copies(0).
 */
bool		peer_reachable(int device, int peer);

/*
 * One piece of a join: left rows [left_first, left_first + left_n) against
 * right rows [right_first, right_first + right_n); self: a self-join of
 * those left rows (right_* unused).  For a self-join's cross pieces, the
 * right rows are rows of the one input.  work: estimated pairs tested.
 */
struct Piece
{
	uint32_t	left_first;
	uint32_t	left_n;
	uint32_t	right_first;
	uint32_t	right_n;
	bool		self;
	double		work;
	UnitClaim	claim;			/* shared units: worker's whole-join replica */
};

/* How an operator runs one piece as a one-device join. */
class PieceOps
{
public:
	virtual		~PieceOps() = default;

	/*
	 * Begin piece p with options (gpu_device set, gpu_ndevices 0); *h
	 * receives an operator-owned handle that end() frees (also after a
	 * failed begin that set it).  Pairs the piece returns index the piece's
	 * own rows; the driver adds the offsets.  Must not throw.
	 */
	virtual SjStatus begin(const Piece &p, const SjJoinOptions *options,
						   void **h, char *errmsg) = 0;
	virtual SjStatus next(void *h, SjPairBatch *batch, int *done,
						  char *errmsg) = 0;
	virtual void timings(void *h, SjTimings *t) = 0;
	virtual void end(void *h) = 0;
};

class MultiJoin;

/*
 * Cut a join of nleft by nright rows (self: nleft rows, nright ignored)
 * into pieces for nworkers devices, largest first.
 */
std::vector<Piece> split_pieces(uint32_t nleft, uint32_t nright, bool self,
								int nworkers);

/*
 * Start a join spread with shared units: worker k runs the whole join on
 * its device once (ops->begin with a Piece whose claim names worker k and
 * the join's SharedUnits), every device with the smallest of the devices'
 * memory limits.  Throws.
 */
MultiJoin  *multi_begin_shared(std::unique_ptr<PieceOps> ops, const SjJoinOptions *options);

/*
 * Start the workers, one per entry of options->gpu_devices, each with the
 * device memory limit options->gpu_memory_limit (or 80% of its free
 * memory), shared by the entries that name the same device.  Throws.
 */
MultiJoin  *multi_begin(std::unique_ptr<PieceOps> ops, std::vector<Piece> pieces,
						const SjJoinOptions *options);

/*
 * The next batch of pairs (indices of the whole inputs).  Returns an empty
 * batch with *done = 0 after a short wait, so that the caller can check for
 * interrupts.  The first failure of any worker is returned, and repeated.
 */
SjStatus	multi_next(MultiJoin *m, SjPairBatch *batch, int *done, char *errmsg);

/* Timings summed over devices; strategy of the pieces; the devices line. */
void		multi_timings(const MultiJoin *m, SjTimings *t);

/* Stop every worker, end its join and wait for it; accepts NULL. */
void		multi_end(MultiJoin *m) noexcept;

/*
 * Should this join spread?  options name several devices, and the join
 * can pair anything (empty inputs take the one-device path).
 */
bool		multi_wanted(const SjJoinOptions *options, uint32_t nleft,
						 uint32_t nright, bool self);

/*
 * The operators' one-device joins that take their units from a claim
 * (claim.units NULL: the whole join), defined in eps_gpu.cu and
 * jaccard_gpu.cu; sjgpu_eps_begin and sjgpu_jaccard_begin with one device.
 */
SjStatus	eps_begin_shared(const SjVectors *left, const SjVectors *right, double eps,
							 const SjJoinOptions *options, UnitClaim claim,
							 SjGpuEpsJoin **join, char *errmsg);
SjStatus	jaccard_begin_shared(const SjSets *left, const SjSets *right, double threshold,
								 const SjJoinOptions *options, UnitClaim claim,
								 SjGpuJaccardJoin **join, char *errmsg);

/*
 * The operators: eps and Jaccard spread with shared units (every device
 * the whole join, through eps_begin_shared and jaccard_begin_shared),
 * theta with pieces that are one-device joins (sjgpu_theta_begin with
 * gpu_ndevices = 0).  right == NULL: a self-join.  The inputs must outlive
 * the join.
 */
MultiJoin  *multi_eps_begin(const SjVectors *left, const SjVectors *right,
							double eps, const SjJoinOptions *options);
MultiJoin  *multi_jaccard_begin(const SjSets *left, const SjSets *right,
								double threshold, const SjJoinOptions *options);
MultiJoin  *multi_theta_begin(const SjThetaTable *left, const SjThetaTable *right,
							  const SjThetaProgram *program, SjThetaStrategy strategy,
							  const SjJoinOptions *options);

/* A multi-device theta join's data error: the first piece's that had one. */
SjThetaDataError multi_theta_data_error(const MultiJoin *m);

}								/* namespace sjgpu */

#endif							/* SJGPU_MULTI_CUH */
