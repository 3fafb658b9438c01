/*
 * sjengine.h
 *		The engine boundary of simjoin: plain C99 types shared by the CPU
 *		engine (src/engine/) and the GPU engine (cuda/, behind cuda/sjgpu.h).
 *
 * Nothing here knows PostgreSQL or CUDA.  The adapter (the C files in src/) marshals
 * relations into these flat, columnar inputs; an engine returns pairs of row
 * indices into those inputs, in batches, through an iterator:
 *
 *		begin (build the index)  ->  next, next, ... (probe; one pair batch each)
 *		->  end (free everything)
 *
 * Ownership: every input array belongs to the caller and must stay valid
 * until end; every output array belongs to the engine handle and stays
 * valid until the following next or end.  Engines never call exit(), never
 * print, and never let a C++ exception or a longjmp cross this boundary:
 * failures are returned as an SjStatus with a message in the handle.
 *
 * Row indices are uint32_t: one side of a join holds fewer than 2^32 rows
 * that can join (NULL, NaN and infinite vectors are dropped before the
 * engine sees them).
 */
#ifndef SJENGINE_H
#define SJENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Status codes: the one list that the adapter maps to SQLSTATEs. */
typedef enum SjStatus
{
	SJ_OK = 0,
	SJ_ERR_INVALID,				/* bad argument (a bug in the caller) */
	SJ_ERR_NOMEM,				/* host memory exhausted */
	SJ_ERR_DEVICE_NOMEM,		/* device memory exhausted even at the
								 * smallest batch */
	SJ_ERR_NO_DEVICE,			/* no usable GPU (no driver, no device,
								 * CPU-only build) */
	SJ_ERR_DEVICE,				/* a CUDA call failed */
	SJ_ERR_TOO_LARGE,			/* input exceeds a hard engine limit */
	SJ_ERR_INTERNAL,			/* an invariant was violated */
	SJ_ERR_DATA					/* a data exception while evaluating a
								 * condition (overflow, division by zero) */
} SjStatus;

#define SJ_ERRMSG_LEN 256

/*
 * Rows first .. first + n - 1 of a side as n row-major rows of dim floats:
 * a parallel scan's part, read in place (SjVectors.pieces).
 */
typedef struct SjRowPiece
{
	uint32_t	first;
	uint32_t	n;
	const float *rows;
} SjRowPiece;

/*
 * Vectors in structure-of-arrays layout: coordinate k of row i is
 * coords[(size_t) k * n + i].  Every coordinate is finite.
 */
typedef struct SjVectors
{
	uint32_t	n;				/* rows */
	int			dim;			/* dimensions, >= 1 */
	const double *coords;		/* dim * n doubles */
	/*
	 * GPU engine only, read only where coords is NULL: the same columns as
	 * floats (every coordinate a real), half the bytes to build and upload;
	 * the device widens them to the same doubles.  The CPU engine needs
	 * coords.
	 */
	const float *fcoords;
	/*
	 * GPU engine only, read only where coords and fcoords are NULL: the
	 * same floats as npieces pieces of rows (in order, the first from row
	 * 0, each beginning where the one before ends), which the device
	 * transposes into its columns itself.
	 */
	int			npieces;
	const SjRowPiece *pieces;
} SjVectors;

/*
 * A batch of result pairs.  left[i] indexes the left (outer) input,
 * right[i] the right (inner) input; for a self-join both index the one
 * input and left[i] < right[i].  value[i] is the distance or similarity
 * (NULL for joins without a value, and for count-only joins).  In a
 * count-only join, left/right/value are NULL and only count is set.
 */
typedef struct SjPairBatch
{
	size_t		count;
	const uint32_t *left;
	const uint32_t *right;
	const double *value;
} SjPairBatch;

/* Where time went, accumulated over a whole join (milliseconds). */
typedef struct SjTimings
{
	double		build_ms;		/* index construction */
	double		probe_ms;		/* probing / verification */
	double		transfer_ms;	/* host <-> device copies (GPU only) */
	double		start_ms;		/* GPU only: waiting for the device to start
								 * (its context, on a process's first join) */
	uint64_t	batches;		/* pair batches produced */
	uint64_t	reruns;			/* batches re-run after an overflow */
	uint64_t	device_bytes;	/* peak device memory held (GPU only) */
	double		filter_ms;		/* GPU only: tensor-core filter kernels
								 * (part of probe_ms) */
	double		filter_pairs;	/* GPU only: pairs those kernels tested */
	char		strategy[64];	/* what the engine chose, for DEBUG/EXPLAIN */
	char		devices[192];	/* GPU only: the devices used and each one's
								 * share of the work and time ("gpu0 51%
								 * 12.0 ms, gpu1 49% 11.8 ms"); "" for one */
} SjTimings;

/* Options common to every join. */
typedef struct SjJoinOptions
{
	int			count_only;		/* count pairs, never materialise them */
	int			cpu_threads;	/* CPU engine: worker threads, >= 1 */
	size_t		max_batch_pairs;	/* upper bound on pairs in one batch */
	size_t		gpu_memory_limit;	/* GPU engine: device bytes one join may
									 * hold; 0 = engine's default */
	int			gpu_device;		/* GPU engine: CUDA device ordinal */
	int			gpu_ndevices;	/* GPU engine: > 1 spreads the join over
								 * gpu_devices[0..gpu_ndevices-1] (an
								 * ordinal may repeat: two shares of one
								 * device, for testing); else gpu_device */
	const int  *gpu_devices;
	int			gpu_spread_judged;	/* GPU engine, with gpu_ndevices > 1:
									 * the caller (SjDevicesAcquire) asked
									 * the operator's spread(), which said
									 * yes; the eps engine then does not ask
									 * sjgpu_eps_spreads again */
	int			index_right;	/* CPU engine: index the right side, to
								 * share the index (*_index_write) */
	const void *shared_index;	/* CPU engine: probe this shared index of
								 * the right side instead of building one */
	int			index_only;		/* CPU engine, with index_right: build that
								 * index and nothing else; no pairs */
	int			metric;			/* eps_join: an SjMetric (sjdist.h); 0 is
								 * SJ_METRIC_L2 */
} SjJoinOptions;

/* ---------------------------------------------------------------------
 * eps_join: pairs with sqrt(sum_k (l_k - r_k)^2) <= eps.
 *
 * The distance is computed in double, the squares summed in dimension
 * order 0..dim-1 without fused multiply-add, then sqrt; the pair joins
 * when that value is <= eps.  Both engines follow exactly this order so
 * that distances are bit-identical.  right == NULL means a self-join of
 * left: each unordered pair of distinct rows once, left index < right.
 * --------------------------------------------------------------------- */
typedef struct SjEpsJoin SjEpsJoin;

/*
 * CPU engine entry points for eps_join (src/engine/eps_cpu.c).  The GPU
 * engine's twins are in cuda/sjgpu.h.  errmsg points to SJ_ERRMSG_LEN bytes
 * that receive a message whenever a call returns anything but SJ_OK.
 * next() sets *done once the join is exhausted (the batch it returns with
 * done set may still hold pairs).  end() accepts NULL and frees everything.
 */
extern SjStatus sj_eps_cpu_begin(const SjVectors *left, const SjVectors *right,
								 double eps, const SjJoinOptions *options,
								 SjEpsJoin **join, char *errmsg);
extern SjStatus sj_eps_cpu_next(SjEpsJoin *join, SjPairBatch *batch,
								int *done, char *errmsg);
extern void sj_eps_cpu_timings(const SjEpsJoin *join, SjTimings *timings);
extern void sj_eps_cpu_end(SjEpsJoin *join);

/*
 * A two-table CPU join's grid of its right side, flattened for sharing (one
 * relocatable block, offsets only, the grid's geometry included): a join
 * begun with options->index_right (which grids the right side's bounds
 * widened by eps, whatever the left side holds) gives its size (0 when it
 * has none: an empty side, a self-join) and writes it; joins begun with
 * options->shared_index pointing at such a block, with the same eps over the
 * same right side, grid their left side alike and probe it.  With
 * options->index_only as well, the join builds that grid and nothing else
 * (no grid of its left side) and returns no pairs.
 */
extern size_t sj_eps_cpu_index_size(const SjEpsJoin *join);
extern void sj_eps_cpu_index_write(const SjEpsJoin *join, void *dst);

/* Parallel loop of the CPU engine (src/engine/sjthreads.c). */
typedef void (*SjTaskFn) (void *arg, uint64_t task, int worker);
extern SjStatus sj_parallel_for(int nthreads, uint64_t ntasks, SjTaskFn fn,
								void *arg);

/* Monotonic clock in milliseconds, for SjTimings. */
extern double sj_now_ms(void);

/*
 * Layout of a flattened index (*_index_write): place an array of bytes
 * bytes at *off, 8-byte aligned, and move *off past it; its offset.
 */
static inline uint64_t
sj_flat_place(uint64_t *off, uint64_t bytes)
{
	uint64_t	at = (*off + 7) & ~(uint64_t) 7;

	*off = at + bytes;
	return at;
}

/*
 * One array of a flattened index: its offset's field in the header, its
 * source and its size; an absent one (present 0) keeps offset 0.
 */
typedef struct SjFlatPart
{
	uint64_t   *off;
	const void *src;
	uint64_t	bytes;
	int			present;
} SjFlatPart;

/*
 * Lay out the present parts, in order, after a header of hsize bytes and
 * set the header's *size; with dst, write the header and the parts there.
 * The index's size.
 */
static inline uint64_t
sj_flat_index(void *dst, const void *header, size_t hsize, uint64_t *size,
			  SjFlatPart *parts, int nparts)
{
	uint64_t	off = hsize;
	int			i;

	for (i = 0; i < nparts; i++)
		if (parts[i].present)
			*parts[i].off = sj_flat_place(&off, parts[i].bytes);
	*size = sj_flat_place(&off, 0);
	if (dst == NULL)
		return *size;
	memcpy(dst, header, hsize);
	for (i = 0; i < nparts; i++)
		if (parts[i].present)
			memcpy((char *) dst + *parts[i].off, parts[i].src, (size_t) parts[i].bytes);
	return *size;
}

/* Parallel stable LSD radix sort of keys with values (src/engine/sjthreads.c). */
extern int	sj_radix_sort(uint64_t *keys, uint32_t *values, size_t n, int bits,
						  int nthreads);

/* Write a message into errmsg (may be NULL) and return status. */
extern SjStatus sj_error(char *errmsg, SjStatus status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------------
 * jaccard_join: pairs with |A n B| / |A u B| >= threshold.
 *
 * Sets in CSR layout over dense token ids: the tokens of set i are
 * tokens[offsets[i] .. offsets[i+1]), distinct, in any order (the adapter
 * dictionary-encodes and de-duplicates; the engines renumber and sort).
 * Every token is < universe, and both sides of a two-table join share one
 * dictionary.  The similarity is
 * (double) inter / (double) (|A| + |B| - inter), exactly this expression, in
 * both engines; a pair joins when it is >= threshold.  An empty set joins
 * nothing.  right == NULL means a self-join, as for eps_join.
 * --------------------------------------------------------------------- */
typedef struct SjSets
{
	uint32_t	n;				/* sets */
	uint32_t	universe;		/* token ids are < universe */
	const uint64_t *offsets;	/* n + 1 entries, offsets[0] == 0 */
	const uint32_t *tokens;		/* offsets[n] token ids */
} SjSets;

typedef struct SjJaccardJoin SjJaccardJoin;

extern SjStatus sj_jaccard_cpu_begin(const SjSets *left, const SjSets *right,
									 double threshold,
									 const SjJoinOptions *options,
									 SjJaccardJoin **join, char *errmsg);
extern SjStatus sj_jaccard_cpu_next(SjJaccardJoin *join, SjPairBatch *batch,
									int *done, char *errmsg);
extern void sj_jaccard_cpu_timings(const SjJaccardJoin *join,
								   SjTimings *timings);
extern void sj_jaccard_cpu_end(SjJaccardJoin *join);

/* ---------------------------------------------------------------------
 * theta_join: declared in sjtheta.h (condition programs and strategies).
 * --------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

/*
 * SJ_ENGINE_FNS(Handle, prefix) defines static prefix##_next_any,
 * _timings_any and _end_any: an engine's typed prefix##_next, _timings and
 * _end (taking a Handle *) over a void * handle, for dispatch tables (the
 * adapter's SjEngine, sjrun.h; the engine tests').  SJ_ENGINE_READ(Handle,
 * fn, Arg) defines fn##_any(const void *, Arg) over fn(const Handle *, Arg).
 */
#define SJ_ENGINE_READ(Handle, fn, Arg) \
static void \
fn##_any(const void *h, Arg a) \
{ \
	fn((const Handle *) h, a); \
}

#define SJ_ENGINE_FNS(Handle, prefix) \
static SjStatus \
prefix##_next_any(void *h, SjPairBatch *b, int *done, char *e) \
{ \
	return prefix##_next((Handle *) h, b, done, e); \
} \
SJ_ENGINE_READ(Handle, prefix##_timings, SjTimings *) \
static void \
prefix##_end_any(void *h) \
{ \
	prefix##_end((Handle *) h); \
}

#endif							/* SJENGINE_H */
