/*
 * sjrun.h
 *		Running one join on an engine (sjrun.c): the engine run and its
 *		dispatch table, what an operator hands the run loop (SjRunSpec), the
 *		cursor over pair batches, the device choice, the status mapping and
 *		the statistics of the last join.
 *
 * Engine handles are owned by an SjRun, which registers a memory-context
 * reset callback so that engine memory, device memory included, is released
 * even when an ERROR unwinds the query.
 */
#ifndef SJRUN_H
#define SJRUN_H

#include "simjoin.h"
#include "devices.h"

/*
 * One engine's entry points past its begin, a const table per operator and
 * engine (SJ_ENGINE below): the next pair batch, the timings, the end; a
 * CPU engine whose index other processes can probe (simjoin.enable_shared_
 * index) also the index's size and its flattened copy, else NULL.
 */
typedef struct SjEngine
{
	SjStatus	(*next) (void *handle, SjPairBatch *batch, int *done,
						 char *errmsg);
	void		(*timings) (const void *handle, SjTimings *timings);
	void		(*end) (void *handle);
	size_t		(*index_size) (const void *handle);
	void		(*index_write) (const void *handle, void *dst);
} SjEngine;

/*
 * SJ_ENGINE(Handle, prefix) defines the const SjEngine prefix##_engine over
 * an engine's typed functions prefix##_next, _timings and _end (taking a
 * Handle *; their void * forms from SJ_ENGINE_FNS, sjengine.h);
 * SJ_ENGINE_INDEX also takes prefix##_index_size and _index_write.  The
 * conversions from void * are written once, instead of a wrapper per
 * operator and function.
 */
#define SJ_ENGINE(Handle, prefix) \
SJ_ENGINE_FNS(Handle, prefix) \
static const SjEngine prefix##_engine = { \
	prefix##_next_any, prefix##_timings_any, prefix##_end_any, NULL, NULL \
}

#define SJ_ENGINE_INDEX(Handle, prefix) \
SJ_ENGINE_FNS(Handle, prefix) \
static size_t \
prefix##_index_size_any(const void *h) \
{ \
	return prefix##_index_size((const Handle *) h); \
} \
SJ_ENGINE_READ(Handle, prefix##_index_write, void *) \
static const SjEngine prefix##_engine = { \
	prefix##_next_any, prefix##_timings_any, prefix##_end_any, \
	prefix##_index_size_any, prefix##_index_write_any \
}

/*
 * One engine run: the chosen engine's handle and entry points.  Created by
 * an operator's begin (SjRunSpec) in CurrentMemoryContext, ended by the run
 * loop or, after an ERROR, by that context's reset callback.
 */
typedef struct SjRun
{
	SjOperator	op;
	bool		gpu;			/* running on the GPU engine */
	void	   *handle;			/* engine handle, NULL once ended */
	const SjEngine *engine;
	SjDeviceHold hold;			/* GPU runs: the devices it runs on */
	MemoryContextCallback cb;
	struct SjCursor *cursor;	/* the cursor running it, while live */
} SjRun;

/*
 * One operator's methods, a const table per operator (as an index access
 * method's IndexAmRoutine): what the run loop, the set-returning functions
 * and the custom scan call instead of branching on the operator.  The job
 * is the operator's own (SjRunSpec.arg).
 */
typedef struct SjOperatorMethods
{
	const char *name;			/* "eps_join", for EXPLAIN and messages */
	/* begin the CPU or GPU engine, filling run's handle and engine */
	SjStatus	(*begin) (void *job, bool gpu, const SjJoinOptions *options,
						  SjRun *run, char *errmsg);
	/* the set-returning functions: a batch of pairs into the job's rows */
	void		(*emit) (void *job, const SjPairBatch *batch);
	/* simjoin.device = auto: is the CPU engine cheaper? (NULL: no) */
	bool		(*prefer_cpu) (void *job);
	/* EXPLAIN's strategy before the run: on the GPU?, the planned one */
	const char *(*strategy_name) (bool gpu, int planned);
	/*
	 * May this job's join spread over the devices of simjoin.devices?  NULL
	 * or false (too small to gain: every device prepares it again), the
	 * join takes the least loaded device of the list.
	 */
	bool		(*spread) (void *job);
} SjOperatorMethods;

/*
 * What SjRunJoin and the cursor run: an operator's methods on a job, and
 * the tuplestore receiving the pairs (NULL when counting), which is emptied
 * when the join restarts on the CPU after the GPU ran out of memory.
 */
typedef struct SjRunSpec
{
	const char *name;			/* "eps_join_count", for messages */
	const SjOperatorMethods *ops;
	void	   *arg;			/* the job */
	struct Tuplestorestate *store;
	uint32		reads[2];		/* tokens of kept parts its engine reads in
								 * place (SjPartsToken; 0: none) */
} SjRunSpec;

/* Statistics of the last join run in this backend (simjoin_last_stats()). */
typedef struct SjStats
{
	char		operator_name[32];
	char		device[8];
	char		strategy[64];
	int64		left_rows;		/* rows handed to the engine */
	int64		right_rows;
	int64		pairs;
	int64		batches;
	double		scan_ms;		/* scan and marshal */
	double		build_ms;
	double		probe_ms;
	double		transfer_ms;
	double		start_ms;		/* GPU: waiting for the device to start */
	double		emit_ms;
	double		total_ms;
	int64		device_bytes;
	int			scan_workers;	/* parallel workers that read an input */
	char		devices[192];	/* GPU: devices, and shares when several */
	int64		decided;		/* PostGIS points: candidates PostGIS decided */
} SjStats;

extern SjStats sj_last_stats;
extern Oid	sj_last_stats_user;	/* the user the last join ran as */

extern void SjStatsForget(void);

/* sjrun.c */
extern bool SjGpuUsable(void);
/*
 * GPU start-up: creating a process's CUDA context, and starting one join on
 * a device already started (milliseconds; measured on the H100/H200 hosts).
 */
#define SJ_GPU_CONTEXT_MS		160.0
#define SJ_GPU_JOIN_START_MS	0.4

extern bool SjUseGpu(void);
extern bool SjGpuLikely(void);
extern double SjGpuStartMs(void);
extern void SjStartDevice(void);
extern void SjJoinOptionsInit(SjJoinOptions *options, bool count_only);
extern int64 SjRunJoin(const SjRunSpec *spec, bool count_only, SjStats *stats);
extern SjStatus SjRunStarted(SjRun *run, void *handle, const SjEngine *engine,
							 SjStatus status);

/* A pull-style run of one join: SjRunJoin's loop, for the custom scan. */
typedef struct SjCursor
{
	const SjRunSpec *spec;
	bool		count_only;
	int			cpu_threads;	/* > 0: instead of simjoin.cpu_threads */
	const void *shared_index;	/* CPU engine: probe this index of the inner */
	bool		gpu;			/* the engine in use (or to start) */
	bool		ending;			/* the engine returned its last batch */
	bool		done;
	SjRun	   *run;			/* NULL before the first fetch */
	bool		stopped;		/* ended by SjStopLiveJoin */
	struct SjCursor *live_next;	/* the live cursors' list (sjrun.c) */
	int64		pairs;			/* pairs fetched so far */
	/* DEBUG2's timeline (sj_now_ms): the engine's begin, its last batch */
	double		began_at,
				begun_at,
				last_at;
} SjCursor;

extern void SjCursorOpen(SjCursor *cur, const SjRunSpec *spec, bool count_only);
extern bool SjCursorFetch(SjCursor *cur, SjPairBatch *batch, SjStats *stats);
extern void SjCursorClose(SjCursor *cur);
extern void SjCursorCheckStopped(const SjCursor *cur);
extern void SjStopLiveJoin(uint32 token);
/*
 * The body of a pair join taking (left table, key, column, right table, key,
 * column, parameter); right_relid InvalidOid is the self-join form, store
 * NULL the count form.  SjPairJoinCall unpacks the SQL arguments for it.
 */
typedef int64 (*SjPairJoinFn) (Oid left_relid, text *left_key, text *left_col,
							   Oid right_relid, text *right_key, text *right_col,
							   double param, int option,
							   struct Tuplestorestate *store, TupleDesc desc);
extern Datum SjPairJoinCall(FunctionCallInfo fcinfo, SjPairJoinFn fn,
							bool self, bool count, int option);
extern int64 SjJoinAndReport(const SjRunSpec *spec, bool empty, SjStats *stats,
							 double start_ms);
extern void SjEmitKeyPairs(struct Tuplestorestate *store, TupleDesc desc,
						   const int64 *left_keys, const int64 *right_keys,
						   bool self, const SjPairBatch *batch);
extern void SjStatsStart(SjStats *stats, const char *operator_name);
extern void SjStatsFinish(SjStats *stats, double start_ms);

#endif							/* SJRUN_H */
