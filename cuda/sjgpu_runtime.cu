/*
 * sjgpu_runtime.cu
 *		CUDA start-up, device discovery and the helpers of sjgpu_internal.cuh.
 *
 * CUDA is initialised lazily: nothing here runs at load time, and the first
 * call of sjgpu_device_count (or of any join) creates the runtime's state in
 * the calling process.  The CUDA runtime is linked statically, so a machine
 * without a driver loads the library fine; cudaGetDeviceCount then fails
 * with cudaErrorInsufficientDriver or cudaErrorNoDevice and we report zero
 * devices.  The outcome of that first probe is cached for the process.
 */
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include "sjgpu_internal.cuh"

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

/* The status a CUDA error maps to. */
static SjStatus
cuda_status(cudaError_t err)
{
	switch (err)
	{
		case cudaErrorMemoryAllocation:
			return SJ_ERR_DEVICE_NOMEM;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
			return SJ_ERR_NO_DEVICE;
		default:
			return SJ_ERR_DEVICE;
	}
}

void
check_cuda(cudaError_t err, const char *what, const char *file, int line)
{
	if (err == cudaSuccess)
		return;
	/* clear a non-sticky error so that later calls do not see it again */
	(void) cudaGetLastError();
	{
		const char *base = strrchr(file, '/');

		throw Error(cuda_status(err), "CUDA error in %s (%s:%d): %s (%s)",
					what, base ? base + 1 : file, line,
					cudaGetErrorString(err), cudaGetErrorName(err));
	}
}

SjStatus
status_from_cuda(cudaError_t err, const char *what, char *errmsg)
{
	if (err == cudaSuccess)
		return SJ_OK;
	(void) cudaGetLastError();
	if (errmsg)
		snprintf(errmsg, SJ_ERRMSG_LEN, "CUDA error in %s: %s (%s)", what,
				 cudaGetErrorString(err), cudaGetErrorName(err));
	return cuda_status(err);
}

/* ------------------------------------------------------------------------
 * Lazy initialisation
 * ------------------------------------------------------------------------ */

#define SJGPU_MAX_DEVICES 64

static std::once_flag probe_once;
static int	probe_count;
static cudaError_t probe_error = cudaSuccess;
static int	sm_count[SJGPU_MAX_DEVICES];

/* Ask the runtime for the devices, once per process. */
static void
probe_devices()
{
	std::call_once(probe_once, [] {
		int			n = 0;
		cudaError_t err = cudaGetDeviceCount(&n);

		if (err != cudaSuccess)
		{
			(void) cudaGetLastError();
			probe_error = err;
			n = 0;
		}
		probe_count = n < 0 ? 0 : n;
	});
}

/*
 * Throw SJ_ERR_NO_DEVICE unless the ordinal names a device found (none
 * found: why, where the runtime said).
 */
void
check_ordinal(int ordinal)
{
	probe_devices();
	if (probe_count == 0 && probe_error != cudaSuccess)
		throw Error(SJ_ERR_NO_DEVICE, "no usable GPU: %s",
					cudaGetErrorString(probe_error));
	if (probe_count == 0)
		throw Error(SJ_ERR_NO_DEVICE, "no usable GPU: no CUDA device found");
	if (ordinal < 0 || ordinal >= probe_count)
		throw Error(SJ_ERR_NO_DEVICE, "GPU device %d does not exist (%d found)",
					ordinal, probe_count);
}

/*
 * Starting the device in the background.  Creating a process's CUDA context
 * takes 0.15-0.3 s, and each of several processes doing it at once waits
 * for all of them (the workers of a parallel plan are new processes).
 * sjgpu_start_devices() does it on a thread of its own (one more a device)
 * while the caller reads its inputs; use_device() waits until the device
 * it asks for has started, not for the others.  The thread blocks every
 * signal, calls only the CUDA runtime, and ignores failures: the join's own
 * calls meet and report them.
 */
static std::mutex start_mutex;
static pthread_t start_thread;
static bool start_running;		/* start_thread is to be joined */
static bool start_begun;		/* one was started in this process */
static int	start_ordinals[SJGPU_MAX_DEVICES];
static int	start_count;

/*
 * Each device's start is waited for on its own: a join on one device of a
 * list that starts several (simjoin.devices) does not wait for the others.
 */
static std::mutex started_mutex;
static std::condition_variable started_cv;
static bool started[SJGPU_MAX_DEVICES];	/* this device's start is over */
static bool started_all = true;	/* the thread is done, or none runs */

static double
clock_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void *
start_main(void *)
{
	int			n;
	std::vector<std::thread> others;

	probe_devices();
	n = start_count < 0 ? std::min(probe_count, SJGPU_MAX_DEVICES) : start_count;
	/* several devices start at once, each on a thread (signals stay blocked) */
	for (int i = 0; i < n; i++)
	{
		int			ord = start_count < 0 ? i : start_ordinals[i];
		auto		start_one = [ord] {
			if (ord < probe_count && cudaSetDevice(ord) == cudaSuccess)
				(void) cudaFree(nullptr);	/* makes sure the context exists */
			(void) cudaGetLastError();
			if (ord >= 0 && ord < SJGPU_MAX_DEVICES)
			{
				std::lock_guard<std::mutex> lock(started_mutex);

				started[ord] = true;
			}
			started_cv.notify_all();
		};

		if (i == n - 1)
		{
			start_one();
			break;
		}
		try
		{
			others.emplace_back(start_one);
		}
		catch (...)
		{
			start_one();
		}
	}
	for (std::thread &t : others)
		t.join();
	{
		std::lock_guard<std::mutex> lock(started_mutex);

		started_all = true;
	}
	started_cv.notify_all();
	return nullptr;
}

/* Wait until the start of this device (if it is one started) is over. */
static void
wait_started(int ordinal)
{
	std::unique_lock<std::mutex> lock(started_mutex);

	started_cv.wait(lock, [ordinal] {
		return started_all ||
			(ordinal >= 0 && ordinal < SJGPU_MAX_DEVICES && started[ordinal]);
	});
}

/* Wait for the start-up thread, if one runs; true if one did. */
static bool
wait_start()
{
	std::lock_guard<std::mutex> lock(start_mutex);

	if (!start_running)
		return false;
	pthread_join(start_thread, nullptr);
	start_running = false;
	return true;
}

/*
 * The ends of joins handed off the callers' paths (defer_end): how many
 * still run, and their threads, each joined by the first wait_deferred
 * after it began (a process's exit among them, so that no thread of ours
 * is left when the CUDA runtime tears down).  drain_begin and drain_end
 * (sjgpu_set_drain_hooks) count a device as loaded until its memory is
 * freed: an end is counted when it begins before drains_closed
 * (sjgpu_close_drains, before the process's shared memory goes), and
 * every counted end has run drain_end once that returns.
 */
static std::mutex deferred_mu;
static std::condition_variable deferred_cv;
static int	deferred_running = 0;
static std::vector<std::thread> deferred_threads;
static void (*drain_begin) (int device) = nullptr;
static void (*drain_end) (int device) = nullptr;
static bool drains_closed = false;

static void
deferred_done(int device, void (*counted) (int device)) noexcept
{
	if (counted)
		counted(device);		/* the drain_end of its hand-off */
	std::lock_guard<std::mutex> lk(deferred_mu);

	deferred_running--;
	deferred_cv.notify_all();
}

/* Wait for every end handed off so far; join their threads.  close: stop counting. */
static void
wait_ends(bool close) noexcept
{
	std::vector<std::thread> mine;

	{
		std::unique_lock<std::mutex> lk(deferred_mu);

		if (close)
			drains_closed = true;
		mine.swap(deferred_threads);
		deferred_cv.wait(lk, [] { return deferred_running == 0; });
	}
	for (std::thread &t : mine)
		if (t.joinable())
			t.join();
}

void
wait_deferred() noexcept
{
	wait_ends(false);
}

void
defer_end(void (*fn) (void *), void *arg, int device) noexcept
{
	static std::once_flag at_exit;
	bool		started = false;
	void		(*counted) (int device) = nullptr;

	/* a process that exits (an engine test's main) joins them first */
	std::call_once(at_exit, [] { atexit([] { wait_deferred(); }); });
	{
		std::lock_guard<std::mutex> lk(deferred_mu);

		if (drain_begin && drain_end && !drains_closed)
		{
			drain_begin(device);
			counted = drain_end;
		}
		deferred_running++;
		try
		{
			SignalsBlocked blocked;	/* the thread inherits the mask */

			deferred_threads.emplace_back([fn, arg, device, counted] {
				fn(arg);
				deferred_done(device, counted);
			});
			started = true;
		}
		catch (...)
		{
		}
	}
	if (!started)
	{
		fn(arg);
		deferred_done(device, counted);
	}
}

double
use_device(int ordinal)
{
	double		t0 = clock_ms();

	wait_deferred();			/* a finished join's memory, freed */
	wait_started(ordinal);
	check_ordinal(ordinal);
	SJGPU_CHECK(cudaSetDevice(ordinal));
	return clock_ms() - t0;
}

size_t
memory_limit(size_t options_limit)
{
	size_t		free_bytes = 0,
				total_bytes = 0;

	if (options_limit > 0)
		return options_limit;
	SJGPU_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
	return free_bytes / 10 * 8;
}

int
multiprocessor_count()
{
	int			dev = 0;

	SJGPU_CHECK(cudaGetDevice(&dev));
	if (dev >= 0 && dev < SJGPU_MAX_DEVICES && sm_count[dev] > 0)
		return sm_count[dev];
	{
		int			n = 0;

		SJGPU_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount,
										   dev));
		if (dev >= 0 && dev < SJGPU_MAX_DEVICES)
			sm_count[dev] = n;
		return n;
	}
}

bool
tensor_cores_usable(int ordinal)
{
	int			major = 0;

	SJGPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
	return major >= 8;
}

/* ------------------------------------------------------------------------
 * Budget and owning wrappers
 * ------------------------------------------------------------------------ */

void
Budget::reserve(size_t bytes, const char *what)
{
	if (!fits(bytes))
		throw Error(SJ_ERR_DEVICE_NOMEM,
					"device memory limit exceeded: %s needs %zu bytes, %zu of %zu in use",
					what, bytes, used_, limit_);
	used_ += bytes;
	if (used_ > peak_)
		peak_ = used_;
}

thread_local double alloc_ms = 0.0;

DeviceMemory::DeviceMemory(Budget *budget, size_t bytes, const char *what)
{
	if (bytes == 0)
		return;
	if (budget)
		budget->reserve(bytes, what);
	{
		void	   *p = nullptr;
		double		t0 = sj_now_ms();
		cudaError_t err = cudaMalloc(&p, bytes);

		alloc_ms += sj_now_ms() - t0;

		if (err != cudaSuccess)
		{
			if (budget)
				budget->release(bytes);
			(void) cudaGetLastError();
			throw Error(cuda_status(err),
						"cudaMalloc of %zu bytes for %s failed: %s",
						bytes, what, cudaGetErrorString(err));
		}
		ptr_ = p;
	}
	bytes_ = bytes;
	budget_ = budget;
}

void
DeviceMemory::reset() noexcept
{
	if (ptr_)
	{
		double		t0 = sj_now_ms();

		(void) cudaFree(ptr_);
		alloc_ms += sj_now_ms() - t0;
		if (budget_)
			budget_->release(bytes_);
	}
	ptr_ = nullptr;
	bytes_ = 0;
	budget_ = nullptr;
}

/*
 * The pinned-block cache: at most kPinnedSlots blocks, kPinnedCacheBytes in
 * all.  It is never freed explicitly (process exit releases it; freeing in
 * a static destructor could run after the CUDA runtime is gone).
 */
constexpr int kPinnedSlots = 40;
constexpr size_t kPinnedCacheBytes = (size_t) 160 << 20;

static std::mutex pinned_lock;
static void *pinned_ptr[kPinnedSlots];
static size_t pinned_size[kPinnedSlots];
static size_t pinned_total;

void *
pinned_alloc(size_t bytes, size_t *got)
{
	{
		std::lock_guard<std::mutex> hold(pinned_lock);
		int			best = -1;

		/* the smallest cached block that fits without wasting much */
		for (int i = 0; i < kPinnedSlots; i++)
			if (pinned_ptr[i] && pinned_size[i] >= bytes &&
				pinned_size[i] <= 2 * bytes + ((size_t) 1 << 20) &&
				(best < 0 || pinned_size[i] < pinned_size[best]))
				best = i;
		if (best >= 0)
		{
			void	   *p = pinned_ptr[best];

			*got = pinned_size[best];
			pinned_total -= pinned_size[best];
			pinned_ptr[best] = nullptr;
			pinned_size[best] = 0;
			return p;
		}
	}

	void	   *p = nullptr;
	cudaError_t err = cudaMallocHost(&p, bytes);

	if (err != cudaSuccess)
	{
		(void) cudaGetLastError();
		throw Error(SJ_ERR_NOMEM,
					"cudaMallocHost of %zu bytes of pinned host memory failed: %s",
					bytes, cudaGetErrorString(err));
	}
	*got = bytes;
	return p;
}

void
pinned_free(void *ptr, size_t bytes) noexcept
{
	if (!ptr)
		return;
	{
		std::lock_guard<std::mutex> hold(pinned_lock);

		if (pinned_total + bytes <= kPinnedCacheBytes)
			for (int i = 0; i < kPinnedSlots; i++)
				if (!pinned_ptr[i])
				{
					pinned_ptr[i] = ptr;
					pinned_size[i] = bytes;
					pinned_total += bytes;
					return;
				}
	}
	(void) cudaFreeHost(ptr);
}

/*
 * Staged uploads (upload_2d) and downloads (download_bytes).  Below
 * kStageMin bytes a copy is one cudaMemcpy2DAsync.  Above, up to
 * stage_threads() host threads (the caller and helpers, signals blocked)
 * claim kStageChunk-byte pieces of the source in order, copy each into one
 * half of their own pinned block and queue its transfer on their own
 * stream; a half is refilled once its last transfer has completed.  A download's threads bring a piece into one
 * half while they copy the last one out of the other.  A thread that
 * cannot have a pinned block (pinned memory short) sends its pieces as
 * pageable copies instead.
 */
constexpr size_t kStageMin = (size_t) 32 << 20;
constexpr size_t kStageChunk = (size_t) 2 << 20;

/*
 * Threads of a staged copy: 16, or half the host's hardware threads where
 * that is fewer, shared by the devices of a spread join, which copy at the
 * same time (at least 2 each).  2 MB pieces: a thread's two halves stay in
 * the host's cache while the device reads them.  On a 32-thread host with
 * two H200 (an emulation of this copy, 1.2 GB): 8 MB pieces took 27 ms
 * over 8 threads to one device and 33 ms over 4 threads each to two; 2 MB
 * pieces 26 ms and 16 ms (8 threads each); 4 threads each, 23 ms
 * (test/bench/BENCHMARKS.md).
 */
constexpr int kStageThreads = 16;

static std::atomic<int> stage_sharers{0};	/* devices of running spread joins */

static int
stage_threads()
{
	static const int n = std::max(2, std::min<int>(kStageThreads,
												   (int) std::thread::hardware_concurrency() / 2));

	return std::max(2, n / std::max(1, stage_sharers.load()));
}

void
stage_share(int devices)
{
	stage_sharers += devices;
}

/*
 * A download is staged from 4 MB on, in 2 MB pieces: copying out of the
 * pinned block is also where the destination's fresh pages are faulted in,
 * which several threads do faster than one.
 */
constexpr size_t kFetchMin = (size_t) 4 << 20;
constexpr size_t kFetchChunk = (size_t) 2 << 20;

static long stage_test_chunk;	/* test hook: > 0 stages all, in such pieces */
static int	stage_test_threads; /* test hook: > 0 threads a staged copy, at most */

/*
 * Queue the copy of bytes [off, end) of a pitched source (rows of width
 * bytes) on stream, each row's part on its own: through staging (the
 * pieces laid out there from its start; the caller keeps it until the
 * copies are done) or, NULL, from the source itself.
 */
static void
send_rows(unsigned char *dst, size_t dpitch, const unsigned char *src, size_t spitch,
		  size_t width, size_t off, size_t end, unsigned char *staging,
		  cudaStream_t stream)
{
	for (size_t o = off; o < end;)
	{
		size_t		row = o / width,
					col = o % width,
					len = std::min(end - o, width - col);
		const unsigned char *from = src + row * spitch + col;

		if (staging)
		{
			memcpy(staging + (o - off), from, len);
			from = staging + (o - off);
		}
		SJGPU_CHECK(cudaMemcpyAsync(dst + row * dpitch + col, from, len,
									cudaMemcpyHostToDevice, stream));
		o += len;
	}
}

/*
 * Queue the copy of bytes [off, end) of a gathered source on stream:
 * through staging (laid out there from its start, sent as one copy; the
 * caller keeps it until the copy is done) or, NULL, piece by piece.
 */
static void
send_gather(unsigned char *dst, const Gather &g, size_t off, size_t end,
			unsigned char *staging, cudaStream_t stream)
{
	size_t		k = (size_t) (std::upper_bound(g.at, g.at + g.npieces, off) - g.at) - 1;

	for (size_t o = off; o < end; k++)
	{
		size_t		stop = std::min(end, k + 1 < g.npieces ? g.at[k + 1] : g.total);
		const unsigned char *from = g.src[k] + (o - g.at[k]);

		if (stop <= o)
			continue;
		if (staging)
			memcpy(staging + (o - off), from, stop - o);
		else
			SJGPU_CHECK(cudaMemcpyAsync(dst + o, from, stop - o, cudaMemcpyHostToDevice,
										stream));
		o = stop;
	}
	if (staging && end > off)
		SJGPU_CHECK(cudaMemcpyAsync(dst + off, staging, end - off, cudaMemcpyHostToDevice,
									stream));
}

/* One staging thread's stream, events and pinned block of two halves. */
struct Stager
{
	Stream		s;
	Event		done[2];		/* the last copy through each half */
	PinnedBuffer<unsigned char> block;	/* freed first: after s has drained */
	size_t		piece = 0;		/* bytes of a half */
	bool		pageable = false;	/* no pinned block: the driver's copies */

	/* Half k % 2 of the block (allocated on first use); NULL: pinned memory short. */
	unsigned char *half(size_t k)
	{
		if (!block.get() && !pageable)
		{
			try
			{
				block.allocate(2 * piece);
			}
			catch (const Error &)
			{
				pageable = true;
			}
		}
		return pageable ? nullptr : block.get() + (k & 1) * piece;
	}
};

/*
 * One staging thread's share of a copy: body(stager) on device, after the
 * event `after`; false (and *why, and stop set for the other threads) on
 * failure, returned once the thread's stream has drained, so that no copy
 * still reads or writes its block.
 */
template <class Body>
static bool
staged(int device, cudaEvent_t after, size_t piece, const char *what,
	   std::atomic<bool> *stop, Error *why, Body &&body)
{
	Stager		st;

	st.piece = piece;
	try
	{
		SJGPU_CHECK(cudaSetDevice(device));
		st.s.create();
		st.done[0].create(false);
		st.done[1].create(false);
		SJGPU_CHECK(cudaStreamWaitEvent(st.s.get(), after, 0));
		body(st);
		st.s.synchronize();
		return true;
	}
	catch (const Error &e)
	{
		*why = e;
	}
	catch (const std::bad_alloc &)
	{
		*why = Error(SJ_ERR_NOMEM, "out of host memory staging %s", what);
	}
	catch (...)
	{
		*why = Error(SJ_ERR_INTERNAL, "unknown exception staging %s", what);
	}
	stop->store(true);
	if (st.s.get())
		(void) cudaStreamSynchronize(st.s.get());
	(void) cudaGetLastError();
	return false;
}

/*
 * One staging thread's share of an upload (upload_2d, upload_gather): it
 * claims chunk-byte pieces of [lo, hi) from next, each into one half of its
 * pinned block, sent by send(off, end, half, stream) (half NULL: pinned
 * memory short, send from the source itself); false (and *why) on failure.
 */
template <class Send>
static bool
stage_part(int device, cudaEvent_t after, size_t lo, size_t hi, size_t chunk,
		   std::atomic<size_t> *next, std::atomic<bool> *stop, Error *why, Send &&send)
{
	return staged(device, after, std::min(chunk, hi - lo), "an upload", stop, why,
				  [&](Stager &st) {
		size_t		used = 0;

		for (;;)
		{
			size_t		off = lo + next->fetch_add(1) * chunk;
			size_t		end;
			unsigned char *half;

			if (off >= hi || stop->load())
				break;
			end = std::min(hi, off + chunk);
			half = st.half(used);
			if (used >= 2 && half)
				st.done[used & 1].synchronize();
			send(off, end, half, st.s.get());
			st.done[used & 1].record(st.s.get());
			used++;
		}
	});
}

/*
 * The staging threads of a copy of `bytes` bytes in `chunk`-byte pieces
 * after the work queued on stream: part(device, after, next, stop, why) on
 * the caller and up to stage_threads() - 1 helpers (signals blocked, as they
 * stay with the backend's main thread), each claiming pieces from next
 * until none is left or another has failed.  Throws the first failure.
 */
template <class Part>
static void
run_staging(size_t bytes, size_t chunk, cudaStream_t stream, const char *what, Part &&part)
{
	int			device;
	int			nthreads = (int) std::min<size_t>(stage_test_threads > 0 ? stage_test_threads
												   : stage_threads(), div_up(bytes, chunk));
	Event		after;
	std::atomic<size_t> next(0);
	std::atomic<bool> stop(false);
	std::vector<Error> why(nthreads, Error(SJ_ERR_INTERNAL, "%s", what));
	std::vector<char> ok(nthreads, 0);
	std::vector<std::thread> helpers;

	SJGPU_CHECK(cudaGetDevice(&device));
	after.create(false);
	after.record(stream);
	auto		run = [&](int t) {
		ok[t] = part(device, after.get(), &next, &stop, &why[t]);
	};

	{
		SignalsBlocked quiet;

		for (int t = 1; t < nthreads; t++)
		{
			try
			{
				helpers.emplace_back(run, t);
			}
			catch (...)
			{
				ok[t] = 1;		/* no thread: the others take its pieces */
			}
		}
	}
	run(0);
	for (std::thread &h : helpers)
		h.join();
	for (int t = 0; t < nthreads; t++)
		if (!ok[t])
			throw why[t];
}

/* Does an upload of `bytes` bytes go through staging (test hook aside: kStageMin on)? */
static bool
upload_is_staged(size_t bytes)
{
	return stage_test_chunk > 0 || (stage_test_chunk == 0 && bytes >= kStageMin);
}

/*
 * Bytes [lo, hi) of an upload through staging, on the staging threads after
 * the work queued on stream: send(off, end, half, stream) sends each piece.
 */
template <class Send>
static void
staged_upload(size_t lo, size_t hi, cudaStream_t stream, Send &&send)
{
	size_t		chunk = stage_test_chunk > 0 ? (size_t) stage_test_chunk : kStageChunk;

	run_staging(hi - lo, chunk, stream, "upload failed",
				[&](int device, cudaEvent_t after, std::atomic<size_t> *next,
					std::atomic<bool> *stop, Error *why) {
		return stage_part(device, after, lo, hi, chunk, next, stop, why, send);
	});
}

double
upload_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
		  size_t height, cudaStream_t stream, size_t lo, size_t hi)
{
	double		t0 = clock_ms();
	size_t		total = width * height;
	bool		staged;

	hi = std::min(hi, total);
	if (lo >= hi)
		return 0;
	staged = upload_is_staged(hi - lo);
	if (spitch == width && dpitch == width)
	{
		width = total;			/* contiguous: one row */
		height = 1;
	}
	if (!staged)
	{
		bool		whole = lo == 0 && hi == total;

		if (whole && height == 1)
			SJGPU_CHECK(cudaMemcpyAsync(dst, src, width, cudaMemcpyHostToDevice, stream));
		else if (whole && std::max(spitch, dpitch) < ((size_t) 1 << 31))
			SJGPU_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height,
										  cudaMemcpyHostToDevice, stream));
		else
		{
			/* part of the rows, or past cudaMemcpy2D's pitch limit: each row's part */
			send_rows((unsigned char *) dst, dpitch, (const unsigned char *) src, spitch,
					  width, lo, hi, nullptr, stream);
		}
		SJGPU_CHECK(cudaStreamSynchronize(stream));
		return clock_ms() - t0;
	}

	staged_upload(lo, hi, stream,
				  [&](size_t off, size_t end, unsigned char *half, cudaStream_t st) {
		/* the piece may span rows: copy and send each row's part */
		send_rows((unsigned char *) dst, dpitch, (const unsigned char *) src, spitch,
				  width, off, end, half, st);
	});
	return clock_ms() - t0;
}

double
upload_gather(void *dst, const Gather &g, cudaStream_t stream, size_t lo, size_t hi)
{
	double		t0 = clock_ms();

	hi = std::min(hi, g.total);
	if (lo >= hi)
		return 0;
	if (!upload_is_staged(hi - lo))
	{
		send_gather((unsigned char *) dst, g, lo, hi, nullptr, stream);
		SJGPU_CHECK(cudaStreamSynchronize(stream));
		return clock_ms() - t0;
	}
	staged_upload(lo, hi, stream,
				  [&](size_t off, size_t end, unsigned char *half, cudaStream_t st) {
		send_gather((unsigned char *) dst, g, off, end, half, st);
	});
	return clock_ms() - t0;
}

/*
 * One staging thread's share of download_bytes; false (and *why) on
 * failure.  Each piece comes into one half of the thread's pinned block,
 * and is copied out of it while the next piece comes into the other half.
 */
static bool
fetch_part(int device, cudaEvent_t after, unsigned char *dst, const unsigned char *src,
		   size_t bytes, size_t chunk, std::atomic<size_t> *next, std::atomic<bool> *stop,
		   Error *why)
{
	return staged(device, after, std::min(chunk, bytes), "a download", stop, why,
				  [&](Stager &st) {
		size_t		used = 0,
					pend_off = 0,
					pend_len = 0;	/* the piece in the other half, not yet copied out */
		auto		copy_out = [&] {
			st.done[(used - 1) & 1].synchronize();
			memcpy(dst + pend_off, st.block.get() + ((used - 1) & 1) * st.piece, pend_len);
		};

		for (;;)
		{
			size_t		off = next->fetch_add(1) * chunk;
			size_t		len;
			unsigned char *half;

			if (off >= bytes || stop->load())
				break;
			len = std::min(bytes - off, chunk);
			half = st.half(used);
			if (!half)
			{
				SJGPU_CHECK(cudaMemcpyAsync(dst + off, src + off, len, cudaMemcpyDeviceToHost,
											st.s.get()));
				continue;
			}
			SJGPU_CHECK(cudaMemcpyAsync(half, src + off, len, cudaMemcpyDeviceToHost, st.s.get()));
			st.done[used & 1].record(st.s.get());
			if (pend_len > 0)
				copy_out();
			pend_off = off;
			pend_len = len;
			used++;
		}
		if (pend_len > 0)
			copy_out();
	});
}

double
download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
	double		t0 = clock_ms();
	size_t		chunk = stage_test_chunk > 0 ? (size_t) stage_test_chunk : kFetchChunk;

	if (bytes == 0)
		return 0;
	if (stage_test_chunk < 0 || (stage_test_chunk == 0 && bytes < kFetchMin))
	{
		SJGPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
		SJGPU_CHECK(cudaStreamSynchronize(stream));
		return clock_ms() - t0;
	}
#ifdef MADV_HUGEPAGE
	{
		/*
		 * The destination is usually fresh memory (a prepared join's host
		 * arrays): on huge pages its faults are a 512th as many.  Only the
		 * 2 MB pages inside it; contents are untouched, failure ignored.
		 */
		const uintptr_t huge = (uintptr_t) 2 << 20;
		uintptr_t	lo = ((uintptr_t) dst + huge - 1) & ~(huge - 1),
					hi = ((uintptr_t) dst + bytes) & ~(huge - 1);

		if (hi > lo)
			(void) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);
	}
#endif
	run_staging(bytes, chunk, stream, "download failed",
				[&](int device, cudaEvent_t after, std::atomic<size_t> *next,
					std::atomic<bool> *stop, Error *why) {
		return fetch_part(device, after, (unsigned char *) dst, (const unsigned char *) src,
						  bytes, chunk, next, stop, why);
	});
	return clock_ms() - t0;
}

}								/* namespace sjgpu */

/*
 * Test hook (not in sjgpu.h): chunk > 0 stages every upload and download
 * in pieces of that many bytes, -1 never stages, 0 (the default) decides
 * by size.
 */
extern "C" void
sjgpu_set_test_upload_chunk(long chunk)
{
	sjgpu::stage_test_chunk = chunk;
}

/*
 * Test hook (not in sjgpu.h): threads > 0 gives a staged copy that many
 * threads at most (benchmarks), 0 the default.
 */
extern "C" void
sjgpu_set_test_stage_threads(int threads)
{
	sjgpu::stage_test_threads = threads;
}

namespace sjgpu
{

void
Stream::create()
{
	reset();
	SJGPU_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}

void
Stream::reset() noexcept
{
	if (s_)
		(void) cudaStreamDestroy(s_);
	s_ = nullptr;
}

void
Stream::synchronize() const
{
	SJGPU_CHECK(cudaStreamSynchronize(s_));
}

void
Event::create(bool timing)
{
	reset();
	SJGPU_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault
										 : cudaEventDisableTiming));
}

void
Event::reset() noexcept
{
	if (e_)
		(void) cudaEventDestroy(e_);
	e_ = nullptr;
}

void
Event::record(cudaStream_t stream)
{
	SJGPU_CHECK(cudaEventRecord(e_, stream));
}

void
Event::synchronize() const
{
	SJGPU_CHECK(cudaEventSynchronize(e_));
}

bool
Event::query() const
{
	cudaError_t err = cudaEventQuery(e_);

	if (err == cudaErrorNotReady)
		return false;
	check_cuda(err, "cudaEventQuery", __FILE__, __LINE__);
	return true;
}

double
EventTimer::elapsed_ms() const
{
	float		ms = 0.0f;

	stop_.synchronize();
	SJGPU_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
	return ms;
}

}								/* namespace sjgpu */

/* ------------------------------------------------------------------------
 * The C boundary: device discovery
 * ------------------------------------------------------------------------ */

extern "C" int
sjgpu_compiled(void)
{
	return 1;
}

/* Begin creating the device's context on a thread of its own. */
extern "C" void
sjgpu_start_device(int ordinal)
{
	sjgpu_start_devices(&ordinal, 1);
}

/* Begin creating the contexts of several devices on a thread of its own. */
extern "C" void
sjgpu_start_devices(const int *ordinals, int n)
{
	std::lock_guard<std::mutex> lock(sjgpu::start_mutex);

	if (sjgpu::start_begun)
		return;
	sjgpu::start_count = ordinals ? 0 : -1; /* NULL: every device */
	for (int i = 0; ordinals && i < n && sjgpu::start_count < SJGPU_MAX_DEVICES; i++)
	{
		bool		seen = ordinals[i] < 0;

		for (int k = 0; k < sjgpu::start_count && !seen; k++)
			seen = sjgpu::start_ordinals[k] == ordinals[i];
		if (!seen)
			sjgpu::start_ordinals[sjgpu::start_count++] = ordinals[i];
	}
	if (sjgpu::start_count == 0)
		return;
	sjgpu::start_begun = true;
	{
		std::lock_guard<std::mutex> done(sjgpu::started_mutex);

		sjgpu::started_all = false;
	}
	{
		sjgpu::SignalsBlocked quiet;

		sjgpu::start_running =
			pthread_create(&sjgpu::start_thread, nullptr, sjgpu::start_main, nullptr) == 0;
	}
	if (!sjgpu::start_running)
	{
		std::lock_guard<std::mutex> done(sjgpu::started_mutex);

		sjgpu::started_all = true;
	}
}

extern "C" void
sjgpu_set_drain_hooks(void (*begin) (int device), void (*end) (int device))
{
	std::lock_guard<std::mutex> lk(sjgpu::deferred_mu);

	sjgpu::drain_begin = begin;
	sjgpu::drain_end = end;
}

extern "C" void
sjgpu_close_drains(void)
{
	sjgpu::wait_ends(true);
}

/* Wait for the thread sjgpu_start_device began, if it still runs; and for joins' ends. */
extern "C" void
sjgpu_start_device_wait(void)
{
	(void) sjgpu::wait_start();
	sjgpu::wait_deferred();
}

/* Zero devices (and SJ_OK) when there is no driver or no device. */
extern "C" SjStatus
sjgpu_device_count(int *count, char *errmsg)
{
	if (count)
		*count = 0;
	return sjgpu::guard(errmsg, [&] {
		if (!count)
			throw sjgpu::Error(SJ_ERR_INVALID, "count is NULL");
		sjgpu::probe_devices();
		*count = sjgpu::probe_count;
		if (sjgpu::probe_count == 0 && sjgpu::probe_error != cudaSuccess)
			sjgpu::set_errmsg(errmsg,
							  cudaGetErrorString(sjgpu::probe_error));
	});
}

/* Name, memory and compute capability of one device. */
extern "C" SjStatus
sjgpu_device_info(int ordinal, SjGpuDeviceInfo *info, char *errmsg)
{
	sjgpu::wait_deferred();		/* the free memory of joins that ended */
	return sjgpu::guard(errmsg, [&] {
		cudaDeviceProp prop;
		size_t		free_bytes = 0,
					total_bytes = 0;
		int			prev = -1;

		if (!info)
			throw sjgpu::Error(SJ_ERR_INVALID, "info is NULL");
		memset(info, 0, sizeof(*info));
		sjgpu::check_ordinal(ordinal);
		SJGPU_CHECK(cudaGetDeviceProperties(&prop, ordinal));
		SJGPU_CHECK(cudaGetDevice(&prev));
		SJGPU_CHECK(cudaSetDevice(ordinal));
		{
			cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);

			if (prev >= 0 && prev != ordinal)
				(void) cudaSetDevice(prev);
			sjgpu::check_cuda(err, "cudaMemGetInfo", __FILE__, __LINE__);
		}
		info->ordinal = ordinal;
		snprintf(info->name, sizeof(info->name), "%s", prop.name);
		info->total_memory = total_bytes;
		info->free_memory = free_bytes;
		info->cc_major = prop.major;
		info->cc_minor = prop.minor;
	});
}

/*
 * Test hook (not in sjgpu.h): milliseconds the calling thread spent in
 * cudaMalloc and cudaFree since the last call with reset != 0.
 */
extern "C" double
sjgpu_test_alloc_ms(int reset)
{
	double		ms = sjgpu::alloc_ms;

	if (reset)
		sjgpu::alloc_ms = 0.0;
	return ms;
}
