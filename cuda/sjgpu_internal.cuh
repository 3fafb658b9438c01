/*
 * sjgpu_internal.cuh
 *		Helpers shared by the GPU operators (eps, jaccard, theta); private to
 *		cuda/, never included from C.
 *
 * Error model: inside the engine, failures are C++ exceptions of type
 * sjgpu::Error (a status and a message).  Every extern "C" entry point runs
 * its body through sjgpu::guard(), which catches everything and turns it
 * into an SjStatus plus a message in errmsg:
 *
 *		sjgpu::Error       -> its own status (SJ_ERR_DEVICE, ..._DEVICE_NOMEM, ...)
 *		std::bad_alloc     -> SJ_ERR_NOMEM
 *		anything else      -> SJ_ERR_INTERNAL
 *
 * Every CUDA call goes through SJGPU_CHECK(call), every kernel launch is
 * followed by SJGPU_CHECK_LAUNCH("name_kernel").  cudaErrorMemoryAllocation
 * becomes SJ_ERR_DEVICE_NOMEM, any other error SJ_ERR_DEVICE, with a message
 * that names the call.
 *
 * Ownership: device memory is held only through DeviceBuffer, which charges
 * a Budget (the join's share of device memory, options->gpu_memory_limit or
 * 80% of the free memory) and frees itself on every path.  Pinned host
 * memory is held through PinnedBuffer, streams and events through Stream and
 * Event.  None of the wrappers can be copied; all can be moved.
 */
#ifndef SJGPU_INTERNAL_CUH
#define SJGPU_INTERNAL_CUH

#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <utility>

#include "sjgpu.h"

namespace sjgpu
{

/*
 * Milliseconds this thread spent in cudaMalloc and cudaFree since reset
 * (test hooks; per thread, as a spread join's devices run on their own).
 */
extern thread_local double alloc_ms;


/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

/* The one exception type the engine throws on purpose. */
class Error : public std::exception
{
public:
	Error(SjStatus status, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	SjStatus	status() const noexcept { return status_; }
	const char *what() const noexcept override { return msg_; }

private:
	SjStatus	status_;
	char		msg_[SJ_ERRMSG_LEN];
};

/* Throw an Error for a failed CUDA call (no-op on cudaSuccess). */
void		check_cuda(cudaError_t err, const char *what, const char *file,
					   int line);

/* Map a cudaError_t to SjStatus without throwing (for cleanup paths). */
SjStatus	status_from_cuda(cudaError_t err, const char *what, char *errmsg);

#define SJGPU_CHECK(call) \
	::sjgpu::check_cuda((call), #call, __FILE__, __LINE__)

/* After every kernel launch: launch errors (bad configuration, ...). */
#define SJGPU_CHECK_LAUNCH(kernel_name) \
	::sjgpu::check_cuda(cudaGetLastError(), "launch of " kernel_name, \
						__FILE__, __LINE__)

/* Write msg into errmsg (SJ_ERRMSG_LEN bytes; NULL allowed). */
void		set_errmsg(char *errmsg, const char *msg);

/*
 * Run body() and turn whatever it throws into a status and a message.
 * Use as the whole body of every extern "C" entry point:
 *
 *		return sjgpu::guard(errmsg, [&] { ... });
 */
template <class F>
SjStatus
guard(char *errmsg, F &&body) noexcept
{
	try
	{
		body();
		return SJ_OK;
	}
	catch (const Error &e)
	{
		set_errmsg(errmsg, e.what());
		return e.status();
	}
	catch (const std::bad_alloc &)
	{
		set_errmsg(errmsg, "out of host memory in the GPU engine");
		return SJ_ERR_NOMEM;
	}
	catch (const std::exception &e)
	{
		set_errmsg(errmsg, e.what());
		return SJ_ERR_INTERNAL;
	}
	catch (...)
	{
		set_errmsg(errmsg, "unknown exception in the GPU engine");
		return SJ_ERR_INTERNAL;
	}
}

/* ------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------ */

/* Throw SJ_ERR_NO_DEVICE unless `ordinal` names a device found. */
void		check_ordinal(int ordinal);

/*
 * Initialise CUDA lazily (once per process) and make `ordinal` the current
 * device of the calling thread, after waiting for sjgpu_start_device's
 * thread to start that device (not the others it starts).  Throws SJ_ERR_NO_DEVICE when no device is usable or the ordinal
 * is out of range.  Returns the milliseconds it took: the device's start-up,
 * or what was left of it, on a process's first join.
 */
double		use_device(int ordinal);

/*
 * End a join on device off the caller's path: fn (the join's end: its
 * device memory freed, its streams destroyed) runs on a thread of its
 * own, every signal blocked, while the caller goes on; where no thread
 * starts, here.  The device counts as loaded until fn returns (the drain
 * hooks, sjgpu_set_drain_hooks).  Whatever reads the devices' memory or
 * begins a join waits for the ends handed off so far first, and joins
 * their threads (wait_deferred: use_device, sjgpu_device_info,
 * sjgpu_start_device_wait, sjgpu_close_drains, a process's exit), so that
 * no join sees memory a finished one still holds.
 */
void		defer_end(void (*fn) (void *), void *arg, int device) noexcept;
void		wait_deferred() noexcept;

/*
 * Device bytes one join may hold on the current device: options_limit when
 * it is non-zero, else 80% of the device's free memory now.
 */
size_t		memory_limit(size_t options_limit);

/* Multiprocessor count of the current device (cached per ordinal). */
int			multiprocessor_count();

/* Whether the device has FP16 mma.sync m16n8k16 (compute capability 8.0+). */
bool		tensor_cores_usable(int ordinal);

/* ------------------------------------------------------------------------
 * Device memory budget and owning buffers
 * ------------------------------------------------------------------------ */

/*
 * The device memory of one join: a limit, what is held now, and the peak.
 * reserve() throws SJ_ERR_DEVICE_NOMEM when the limit would be exceeded;
 * fits() asks first (for choosing a batch size).
 */
class Budget
{
public:
	explicit Budget(size_t limit = 0) : limit_(limit) {}

	void		set_limit(size_t limit) { limit_ = limit; }
	size_t		limit() const { return limit_; }
	size_t		used() const { return used_; }
	size_t		peak() const { return peak_; }
	size_t		available() const { return used_ < limit_ ? limit_ - used_ : 0; }
	bool		fits(size_t bytes) const { return bytes <= available(); }

	void		reserve(size_t bytes, const char *what);
	void		release(size_t bytes) { used_ -= bytes < used_ ? bytes : used_; }

private:
	size_t		limit_;
	size_t		used_ = 0;
	size_t		peak_ = 0;
};

/* Untyped owning device allocation, charged to a Budget (may be NULL). */
class DeviceMemory
{
public:
	DeviceMemory() = default;
	DeviceMemory(Budget *budget, size_t bytes, const char *what);
	~DeviceMemory() { reset(); }

	DeviceMemory(const DeviceMemory &) = delete;
	DeviceMemory &operator=(const DeviceMemory &) = delete;
	DeviceMemory(DeviceMemory &&o) noexcept { swap(o); }
	DeviceMemory &operator=(DeviceMemory &&o) noexcept
	{
		if (this != &o)
		{
			reset();
			swap(o);
		}
		return *this;
	}

	/* Free now (errors of cudaFree are ignored: nothing can be done). */
	void		reset() noexcept;
	/* No longer charged to its Budget (which may end first); stays allocated. */
	void		uncharge() noexcept
	{
		if (budget_)
			budget_->release(bytes_);
		budget_ = nullptr;
	}
	void	   *get() const { return ptr_; }
	size_t		bytes() const { return bytes_; }

private:
	void		swap(DeviceMemory &o) noexcept
	{
		std::swap(ptr_, o.ptr_);
		std::swap(bytes_, o.bytes_);
		std::swap(budget_, o.budget_);
	}

	void	   *ptr_ = nullptr;
	size_t		bytes_ = 0;
	Budget	   *budget_ = nullptr;
};

/* Typed owning device array of `count` elements. */
template <class T>
class DeviceBuffer
{
public:
	DeviceBuffer() = default;
	DeviceBuffer(Budget *budget, size_t count, const char *what)
		: mem_(budget, count * sizeof(T), what), count_(count) {}

	void		reset() noexcept { mem_.reset(); count_ = 0; }
	void		uncharge() noexcept { mem_.uncharge(); }
	T		   *get() const { return static_cast<T *>(mem_.get()); }
	size_t		size() const { return count_; }
	size_t		bytes() const { return mem_.bytes(); }

private:
	DeviceMemory mem_;
	size_t		count_ = 0;
};

/*
 * Pinned host blocks come from a small process-wide cache (page-locking is
 * slow: milliseconds per ten megabytes), so consecutive joins reuse their
 * staging buffers.  pinned_alloc returns a block of at least `bytes` and
 * its real size; it throws SJ_ERR_NOMEM.  pinned_free keeps the block for
 * reuse while the cache holds less than a fixed amount, else frees it.
 */
void	   *pinned_alloc(size_t bytes, size_t *got);
void		pinned_free(void *ptr, size_t bytes) noexcept;

/* Owning pinned (page-locked) host array; not charged to a Budget. */
template <class T>
class PinnedBuffer
{
public:
	PinnedBuffer() = default;
	explicit PinnedBuffer(size_t count) { allocate(count); }
	~PinnedBuffer() { reset(); }

	PinnedBuffer(const PinnedBuffer &) = delete;
	PinnedBuffer &operator=(const PinnedBuffer &) = delete;
	PinnedBuffer(PinnedBuffer &&o) noexcept { swap(o); }
	PinnedBuffer &operator=(PinnedBuffer &&o) noexcept
	{
		if (this != &o)
		{
			reset();
			swap(o);
		}
		return *this;
	}

	void		allocate(size_t count)
	{
		reset();
		if (count == 0)
			return;
		ptr_ = static_cast<T *>(pinned_alloc(count * sizeof(T), &bytes_));
		count_ = count;
	}
	void		reset() noexcept
	{
		if (ptr_)
			pinned_free(ptr_, bytes_);
		ptr_ = nullptr;
		count_ = 0;
		bytes_ = 0;
	}
	T		   *get() const { return ptr_; }
	size_t		size() const { return count_; }

private:
	void		swap(PinnedBuffer &o) noexcept
	{
		std::swap(ptr_, o.ptr_);
		std::swap(count_, o.count_);
		std::swap(bytes_, o.bytes_);
	}

	T		   *ptr_ = nullptr;
	size_t		count_ = 0;
	size_t		bytes_ = 0;		/* size of the pinned block */
};

/*
 * Every signal blocked on the calling thread while in scope, so that the
 * threads it starts meanwhile inherit the mask: PostgreSQL's handlers stay
 * with the backend's main thread.
 */
class SignalsBlocked
{
public:
	SignalsBlocked()
	{
		sigset_t	all;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old_);
	}
	~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
	SignalsBlocked(const SignalsBlocked &) = delete;
	SignalsBlocked &operator=(const SignalsBlocked &) = delete;

private:
	sigset_t	old_;
};

/* ------------------------------------------------------------------------
 * Streams and events
 * ------------------------------------------------------------------------ */

/* Owning non-blocking stream. */
class Stream
{
public:
	Stream() = default;
	~Stream() { reset(); }
	Stream(const Stream &) = delete;
	Stream &operator=(const Stream &) = delete;

	void		create();		/* cudaStreamCreateWithFlags(NonBlocking) */
	void		reset() noexcept;
	void		synchronize() const;	/* throws on error */
	cudaStream_t get() const { return s_; }

private:
	cudaStream_t s_ = nullptr;
};

/* Owning event (timing enabled unless created with timing = false). */
class Event
{
public:
	Event() = default;
	~Event() { reset(); }
	Event(const Event &) = delete;
	Event &operator=(const Event &) = delete;

	void		create(bool timing = true);
	void		reset() noexcept;
	void		record(cudaStream_t stream);
	void		synchronize() const;
	bool		query() const;	/* true when complete; throws on error */
	cudaEvent_t get() const { return e_; }

private:
	cudaEvent_t e_ = nullptr;
};

/*
 * A start/stop event pair around work on one stream.  elapsed_ms() waits
 * for the stop event and returns the time between the two.
 */
class EventTimer
{
public:
	void		create()
	{
		start_.create();
		stop_.create();
	}
	void		start(cudaStream_t stream) { start_.record(stream); }
	void		stop(cudaStream_t stream) { stop_.record(stream); }
	double		elapsed_ms() const;

private:
	Event		start_;
	Event		stop_;
};

/*
 * Copy `height` rows of `width` bytes from host memory (row pitch spitch)
 * to device memory (row pitch dpitch), after the work already queued on
 * `stream`; only bytes [lo, hi) of the rows taken as one run of
 * width * height bytes, where a range is given.  Small copies are one
 * cudaMemcpy2DAsync on the stream.  Large ones (and ranges) go through
 * pinned staging blocks, filled by several host threads (each with its own
 * stream and two halves of a block, so its next copy into pinned memory
 * overlaps its last transfer): a pageable copy is staged by one driver
 * thread at a fraction of the link's speed.  Either way the copy has
 * completed, or failed, when this returns.  Returns the host milliseconds
 * it took.
 */
double		upload_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
					  size_t width, size_t height, cudaStream_t stream, size_t lo = 0,
					  size_t hi = SIZE_MAX);

/*
 * A contiguous destination's bytes gathered from pieces of host memory:
 * bytes [at[k], at[k + 1]) (the last to total) come from src[k], at[0] = 0,
 * ascending (a parallel scan's parts, SjVectors.pieces).
 */
struct Gather
{
	const unsigned char *const *src;
	const size_t *at;
	size_t		npieces;
	size_t		total;
};

/* upload_2d's copy, of bytes [lo, hi) of g into dst (contiguous). */
double		upload_gather(void *dst, const Gather &g, cudaStream_t stream, size_t lo = 0,
						  size_t hi = SIZE_MAX);

/* upload_2d of one contiguous array of `bytes` bytes. */
inline double
upload_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
	return upload_2d(dst, bytes, src, bytes, bytes, bytes ? 1 : 0, stream);
}

/*
 * Copy `bytes` bytes of device memory to host memory after the work
 * already queued on `stream`, staged as upload_2d's large copies are from
 * a few megabytes on (the driver copies into pageable memory, a fresh
 * allocation's pages faulted in one at a time, at a small fraction of the
 * link's speed); complete, or failed, when this returns.  Returns the host
 * milliseconds it took.
 */
double		download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream);

/*
 * A spread join's devices copy at the same time: stage_share(n) as it
 * starts and stage_share(-n) as it ends divide the staging threads among
 * them.
 */
void		stage_share(int devices);

/* Ceiling division for sizes. */
template <class T>
constexpr T
div_up(T a, T b)
{
	return (a + b - 1) / b;
}

}								/* namespace sjgpu */

#endif							/* SJGPU_INTERNAL_CUH */
