/*
 * sjrun.c
 *		Running one join on an engine: the device choice, the run loop and
 *		the cursor over an engine's pair batches, the one mapping from engine
 *		status to SQLSTATE, and the statistics of the last join.
 *
 * CUDA is never touched at load time: the first function that needs to know
 * whether a GPU is usable asks the GPU engine, which initialises CUDA in
 * this backend then.  The answer is cached for the backend's life.
 *
 * Every engine status reaches the user through SjReportStatus (sjstatus.c).
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/tuplestore.h"

#include "simjoin.h"
#include "sjgpu.h"
#include "sjrun.h"

SjStats		sj_last_stats;

/* the user the last join ran as: simjoin_last_stats() shows it to no other */
Oid			sj_last_stats_user = InvalidOid;

/* -1 unknown, 0 no usable GPU, 1 usable */
static int	sj_gpu_state = -1;

/* When this process first asked for the GPU, and whether a join used it. */
static double sj_gpu_start_at = 0;
static bool sj_gpu_joined = false;

/* Forget the last join's statistics. */
void
SjStatsForget(void)
{
	memset(&sj_last_stats, 0, sizeof(sj_last_stats));
	sj_last_stats_user = InvalidOid;
}

/* Is a GPU usable in this backend?  Initialises CUDA on first call. */
bool
SjGpuUsable(void)
{
	if (sj_gpu_state < 0)
	{
		char		engmsg[SJ_ERRMSG_LEN] = "";
		int			n = 0;
		SjStatus	status;

		status = sjgpu_device_count(&n, engmsg);
		if (status != SJ_OK)
		{
			/* a broken driver is worth a word, not a failure of auto */
			elog(DEBUG1, "simjoin: GPU not usable: %s", engmsg);
			n = 0;
		}
		sj_gpu_state = n > 0 ? 1 : 0;
	}
	return sj_gpu_state == 1;
}

/* Before the process exits: the device's start-up thread must be done. */
static void
SjStartDeviceWait(int code, Datum arg)
{
	sjgpu_start_device_wait();
}

/*
 * A join that may run on the GPU is about to read its inputs: start the
 * device (its CUDA context, 0.15-0.3 s in a new process, more when several
 * start at once) on a thread of its own meanwhile.  The engine waits for it
 * when the join begins; a process does this once, and not with
 * simjoin.device = cpu or no GPU found.
 */
void
SjStartDevice(void)
{
	static bool registered = false;

	if (sj_device == SJ_DEVICE_CPU || sj_gpu_state == 0 || !sjgpu_compiled())
		return;
	if (sj_gpu_start_at == 0)
		sj_gpu_start_at = sj_now_ms();
	if (!registered)
	{
		on_proc_exit(SjStartDeviceWait, (Datum) 0);
		registered = true;
	}
	SjDevicesStart();			/* every device a join may spread over */
}

/*
 * What starting the GPU still costs this process: a context takes about
 * 160 ms to create (test/bench/BENCHMARKS.md, "start-up"), started by
 * SjStartDevice while the inputs are read; nothing once a join has used it.
 */
double
SjGpuStartMs(void)
{
	if (sj_gpu_joined)
		return SJ_GPU_JOIN_START_MS;
	return Max(SJ_GPU_JOIN_START_MS, SJ_GPU_CONTEXT_MS - (sj_now_ms() - sj_gpu_start_at));
}

/*
 * Will a join run on the GPU, as far as the settings say (SjUseGpu without
 * its error: for choices made before a join starts, such as keeping real[]
 * vectors as floats)?
 */
bool
SjGpuLikely(void)
{
	return sj_device != SJ_DEVICE_CPU && SjGpuUsable();
}

/* Should this join run on the GPU?  Errors for device = gpu without one. */
bool
SjUseGpu(void)
{
	if (SjGpuLikely())
		return true;
	if (sj_device == SJ_DEVICE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("simjoin.device is \"gpu\" but no GPU is usable"),
				 errdetail(sjgpu_compiled() ?
						   "No CUDA device was found, or the NVIDIA driver is missing." :
						   "simjoin was built without CUDA support."),
				 errhint("Set simjoin.device = auto or cpu.")));
	return false;
}

/* Engine options from the settings. */
void
SjJoinOptionsInit(SjJoinOptions *options, bool count_only)
{
	memset(options, 0, sizeof(*options));
	options->count_only = count_only ? 1 : 0;
	options->cpu_threads = sj_cpu_threads;
	options->max_batch_pairs = 1024 * 1024;
	options->gpu_memory_limit = (size_t) sj_gpu_memory_limit_mb * 1024 * 1024;
	options->gpu_device = 0;
}

/*
 * The cursors whose engine runs now (SjStopLiveJoin): the set-returning
 * functions' (SjRunJoin) and the custom scan's, open across its calls.
 */
static SjCursor *sj_live_cursors = NULL;

/* Take cur off the live cursors' list (not on it: nothing). */
static void
SjCursorUnlive(SjCursor *cur)
{
	SjCursor  **p;

	for (p = &sj_live_cursors; *p != NULL; p = &(*p)->live_next)
		if (*p == cur)
		{
			*p = cur->live_next;
			break;
		}
	cur->live_next = NULL;
}

/*
 * Reset callback: end an engine run that an ERROR left behind (and, called
 * again, nothing).  Its cursor is no longer live.
 */
static void
SjRunCallback(void *arg)
{
	SjRun	   *run = (SjRun *) arg;

	if (run->cursor)
	{
		SjCursorUnlive(run->cursor);
		run->cursor = NULL;
	}
	if (run->handle)
	{
		void	   *h = run->handle;

		run->handle = NULL;
		run->engine->end(h);
	}
	SjDevicesRelease(&run->hold);
}

/*
 * Tie the run's engine handle to CurrentMemoryContext's lifetime, and put
 * its cursor on the live cursors' list until the run ends.
 */
static void
SjRunRegister(SjRun *run, SjCursor *cur)
{
	run->cb.func = SjRunCallback;
	run->cb.arg = run;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &run->cb);
	run->cursor = cur;
	cur->live_next = sj_live_cursors;
	sj_live_cursors = cur;
}

/* Collect the engine's timings into stats. */
static void
SjRunCollect(SjRun *run, SjStats *stats)
{
	SjTimings	t;

	memset(&t, 0, sizeof(t));
	run->engine->timings(run->handle, &t);
	stats->build_ms += t.build_ms;
	stats->probe_ms += t.probe_ms;
	stats->transfer_ms += t.transfer_ms;
	stats->start_ms += t.start_ms;
	stats->batches += (int64) t.batches;
	stats->device_bytes = Max(stats->device_bytes, (int64) t.device_bytes);
	strlcpy(stats->strategy, t.strategy, sizeof(stats->strategy));
	strlcpy(stats->device, run->gpu ? "gpu" : "cpu", sizeof(stats->device));
	if (run->gpu)
	{
		sj_gpu_joined = true;
		if (t.devices[0])
			strlcpy(stats->devices, t.devices, sizeof(stats->devices));
		else
		{
			/* the engine kept the join on one device: the hold's first */
			SjDeviceHold one = run->hold;

			one.n = Min(one.n, 1);
			SjDevicesDescribe(&one, stats->devices, sizeof(stats->devices));
		}
	}
}

/*
 * Open a cursor over one join's pair batches on the engine the settings
 * choose.  Nothing starts until the first SjCursorFetch.
 */
void
SjCursorOpen(SjCursor *cur, const SjRunSpec *spec, bool count_only)
{
	memset(cur, 0, sizeof(*cur));
	cur->spec = spec;
	cur->count_only = count_only;
	cur->gpu = SjUseGpu();
	if (cur->gpu && sj_device == SJ_DEVICE_AUTO && spec->ops->prefer_cpu &&
		spec->ops->prefer_cpu(spec->arg))
		cur->gpu = false;
}

/*
 * Fetch the next batch of pairs (count only, when counting).  Returns false
 * once the join is done, after ending the engine and adding its timings to
 * stats.  Checks for interrupts before every batch.  With simjoin.device =
 * auto, a GPU that runs out of memory even at its smallest batch hands the
 * join to the CPU engine with a NOTICE, as long as nothing of it has been
 * handed out that cannot be taken back (spec->store is emptied; a caller
 * without a store must not have consumed a pair).  Engine handles are tied
 * to CurrentMemoryContext at open time, so an ERROR anywhere (cancel
 * included) still frees engine and device memory.
 */
bool
SjCursorFetch(SjCursor *cur, SjPairBatch *batch, SjStats *stats)
{
	const SjRunSpec *spec = cur->spec;

	for (;;)
	{
		char		engmsg[SJ_ERRMSG_LEN] = "";
		SjStatus	status;
		int			done = 0;

		memset(batch, 0, sizeof(*batch));
		SjCursorCheckStopped(cur);
		if (cur->ending)
			SjCursorClose(cur);
		if (cur->done)
			return false;
		if (cur->run == NULL)
		{
			SjJoinOptions options;

			cur->run = palloc0(sizeof(SjRun));
			SjJoinOptionsInit(&options, cur->count_only);
			if (cur->cpu_threads > 0)
				options.cpu_threads = cur->cpu_threads;
			if (!cur->gpu)
				options.shared_index = cur->shared_index;
			else
				SjDevicesAcquire(&options, &cur->run->hold, spec->ops->spread,
								 spec->arg);
			cur->run->gpu = cur->gpu;
			cur->began_at = sj_now_ms();
			status = spec->ops->begin(spec->arg, cur->gpu, &options, cur->run, engmsg);
			if (status == SJ_ERR_INVALID && options.shared_index != NULL)
			{
				/* a shared index that does not fit: build one of our own */
				elog(DEBUG1, "simjoin: %s", engmsg);
				cur->shared_index = NULL;
				options.shared_index = NULL;
				memset(cur->run, 0, sizeof(SjRun));	/* a CPU run: holds no device */
				cur->run->gpu = cur->gpu;
				engmsg[0] = '\0';
				status = spec->ops->begin(spec->arg, cur->gpu, &options, cur->run, engmsg);
			}
			cur->begun_at = sj_now_ms();
			if (status == SJ_OK)
				SjRunRegister(cur->run, cur);
			else
				cur->run->handle = NULL;	/* a failed begin leaves nothing */
		}
		else
			status = SJ_OK;
		if (status == SJ_OK)
		{
			CHECK_FOR_INTERRUPTS();
			status = cur->run->engine->next(cur->run->handle, batch, &done, engmsg);
			if (status == SJ_OK)
			{
				cur->pairs += (int64) batch->count;
				if (done)
				{
					cur->last_at = sj_now_ms();
					SjRunCollect(cur->run, stats);
					stats->pairs = cur->pairs;
					cur->ending = true;
				}
				if (batch->count > 0)
					return true;	/* the engine keeps the batch until the next call */
				if (done)
				{
					SjCursorClose(cur);
					return false;
				}
				continue;
			}
		}
		if (cur->run)
			SjRunCallback(cur->run);
		cur->run = NULL;
		if (status == SJ_ERR_DEVICE_NOMEM && cur->gpu && sj_device == SJ_DEVICE_AUTO &&
			(spec->store != NULL || cur->pairs == 0))
		{
			ereport(NOTICE,
					(errmsg("%s does not fit in GPU memory, using the CPU engine",
							spec->name),
					 errdetail("%s", engmsg),
					 errhint("Raise simjoin.gpu_memory_limit or free GPU memory.")));
			if (spec->store)
				tuplestore_clear(spec->store);
			cur->gpu = false;
			cur->pairs = 0;
			continue;
		}
		SjReportStatus(status, engmsg, spec->name);
	}
}

/*
 * A cursor that SjStopLiveJoin stopped is an error to read on, its batch
 * included (never a short result).
 */
void
SjCursorCheckStopped(const SjCursor *cur)
{
	if (cur->stopped)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s was stopped: the memory of its input was released",
						cur->spec->name)));
}

/* End a cursor early (a rescan, or a consumer that stopped reading). */
void
SjCursorClose(SjCursor *cur)
{
	if (cur->run)
	{
		SjRunCallback(cur->run);
		if (cur->last_at > 0)
			elog(DEBUG2, "simjoin: %s on %s: the engine's begin took %.1f ms, its batches "
				 "%.1f ms more, its end %.1f ms",
				 cur->spec->name, cur->gpu ? "gpu" : "cpu", cur->begun_at - cur->began_at,
				 cur->last_at - cur->begun_at, sj_now_ms() - cur->last_at);
	}
	cur->run = NULL;
	cur->done = true;
}

/*
 * Run one join to completion, handing each batch to spec->ops->emit unless
 * counting.  Returns the number of pairs.
 */
int64
SjRunJoin(const SjRunSpec *spec, bool count_only, SjStats *stats)
{
	SjCursor	cur;
	SjPairBatch batch;

	SjCursorOpen(&cur, spec, count_only);
	PG_TRY();
	{
		while (SjCursorFetch(&cur, &batch, stats))
		{
			if (!count_only)
			{
				double		t0 = sj_now_ms();

				spec->ops->emit(spec->arg, &batch);
				stats->emit_ms += sj_now_ms() - t0;
			}
		}
	}
	PG_CATCH();
	{
		/* the engine stops before the abort unmaps what it may read */
		SjCursorClose(&cur);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return cur.pairs;
}

/*
 * Stop the joins whose engines run now and read the kept parts named by
 * token (their specs' reads): each engine ended (its threads joined; an
 * eps join's device memory freed on a thread of its own, which reads none
 * of them) before those parts go away with other memory than the join's
 * own (an abort's resource owner, a FATAL exit's shutdown).  An ERROR's
 * path stops SjRunJoin's in SjRunJoin already; the custom scan's
 * stays open across its calls.  Other joins go on: a subtransaction's
 * abort that unmaps a function's parts leaves an outer query's open cursor
 * alone.  A stopped cursor's next fetch is an error, never a short result.
 */
void
SjStopLiveJoin(uint32 token)
{
	SjCursor   *cur = sj_live_cursors;

	while (cur != NULL)
	{
		SjCursor   *next = cur->live_next;

		/* (closing it ends its run, which takes it off the list) */
		if (token != 0 && (cur->spec->reads[0] == token || cur->spec->reads[1] == token))
		{
			cur->stopped = true;
			SjCursorClose(cur);
		}
		cur = next;
	}
}

/*
 * Store a batch of pairs as rows (left key, right key[, value]): the keys
 * of the row indices, and the batch's value when the result has a third
 * column.  A self-join orients each pair so that left key <= right key.
 */
void
SjEmitKeyPairs(Tuplestorestate *store, TupleDesc desc, const int64 *left_keys,
			   const int64 *right_keys, bool self, const SjPairBatch *batch)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	bool		with_value = desc->natts >= 3 && batch->value != NULL;
	size_t		i;

	for (i = 0; i < batch->count; i++)
	{
		int64		a = left_keys[batch->left[i]];
		int64		b = right_keys[batch->right[i]];

		if (self && a > b)
		{
			int64		t = a;

			a = b;
			b = t;
		}
		values[0] = Int64GetDatum(a);
		values[1] = Int64GetDatum(b);
		if (with_value)
			values[2] = Float8GetDatum(batch->value[i]);
		else
			nulls[2] = true;
		tuplestore_putvalues(store, desc, values, nulls);
	}
}

/*
 * The end of an operator's begin: the engine it started (handle, NULL when
 * it failed) and that engine's entry points go into run.  Returns status.
 */
SjStatus
SjRunStarted(SjRun *run, void *handle, const SjEngine *engine, SjStatus status)
{
	run->handle = handle;
	run->engine = engine;
	return status;
}

/*
 * Run a prepared join, unless one side has no row that can join (then no
 * engine starts, and no GPU is touched), and publish its statistics.
 * Counts when spec->store is NULL.  Returns the number of pairs.
 */
int64
SjJoinAndReport(const SjRunSpec *spec, bool empty, SjStats *stats, double start_ms)
{
	int64		pairs = 0;

	if (empty)
	{
		strlcpy(stats->device, "none", sizeof(stats->device));
		strlcpy(stats->strategy, "empty input", sizeof(stats->strategy));
	}
	else
		pairs = SjRunJoin(spec, spec->store == NULL, stats);
	SjStatsFinish(stats, start_ms);
	return pairs;
}

/*
 * The four SQL entry points of a pair join (two-table or self-join, rows or
 * count) unpack their arguments here.
 */
Datum
SjPairJoinCall(FunctionCallInfo fcinfo, SjPairJoinFn fn, bool self, bool count,
			   int option)
{
	Tuplestorestate *store = NULL;
	TupleDesc	desc = NULL;
	int64		pairs;

	if (!count)
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

		InitMaterializedSRF(fcinfo, 0);
		store = rsinfo->setResult;
		desc = rsinfo->setDesc;
	}
	if (self)
		pairs = fn(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2),
				   InvalidOid, NULL, NULL, PG_GETARG_FLOAT8(3), option, store, desc);
	else
		pairs = fn(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2),
				   PG_GETARG_OID(3), PG_GETARG_TEXT_PP(4), PG_GETARG_TEXT_PP(5),
				   PG_GETARG_FLOAT8(6), option, store, desc);
	if (count)
		PG_RETURN_INT64(pairs);
	return (Datum) 0;
}

/* Start collecting statistics for one join. */
void
SjStatsStart(SjStats *stats, const char *operator_name)
{
	memset(stats, 0, sizeof(*stats));
	strlcpy(stats->operator_name, operator_name, sizeof(stats->operator_name));
}

/* Finish and publish the statistics of one join. */
void
SjStatsFinish(SjStats *stats, double start_ms)
{
	stats->total_ms = sj_now_ms() - start_ms;
	sj_last_stats = *stats;
	sj_last_stats_user = GetUserId();
	elog(DEBUG1,
		 "simjoin: %s on %s (%s): %lld x %lld rows, %lld pairs in %lld batches; "
		 "scan %.1f ms (%d workers), device start %.1f ms, build %.1f ms, probe %.1f ms, "
		 "transfer %.1f ms, emit %.1f ms, total %.1f ms",
		 stats->operator_name, stats->device, stats->strategy,
		 (long long) stats->left_rows, (long long) stats->right_rows,
		 (long long) stats->pairs, (long long) stats->batches,
		 stats->scan_ms, stats->scan_workers, stats->start_ms, stats->build_ms, stats->probe_ms,
		 stats->transfer_ms, stats->emit_ms, stats->total_ms);
}
