/*
 * simjoin.c
 *		Module entry: settings, devices, engine status mapping and the engine
 *		run wrapper shared by every operator.
 *
 * CUDA is never touched here at load time: the first function that needs
 * to know whether a GPU is usable asks the GPU engine, which initialises
 * CUDA in this backend then.  The answer is cached for the backend's life.
 *
 * Every engine status reaches the user through SjReportStatus, the one
 * mapping from SjStatus to SQLSTATE.
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "simjoin.h"
#include "sjgpu.h"

PG_MODULE_MAGIC;

int			sj_device = SJ_DEVICE_AUTO;
int			sj_gpu_memory_limit_mb = 0;
int			sj_cpu_threads = 1;
bool		sj_enable_customscan = true;
bool		sj_enable_shared_index = true;

SjStats		sj_last_stats;

/* the user the last join ran as: simjoin_last_stats() shows it to no other */
static Oid	sj_last_stats_user = InvalidOid;

static ProcessUtility_hook_type sj_prev_utility_hook = NULL;

/* -1 unknown, 0 no usable GPU, 1 usable */
static int	sj_gpu_state = -1;

/* When this process first asked for the GPU, and whether a join used it. */
static double sj_gpu_start_at = 0;
static bool sj_gpu_joined = false;

/* whether the library was loaded through shared_preload_libraries */
static bool sj_preloaded = false;

static const struct config_enum_entry sj_device_options[] = {
	{"auto", SJ_DEVICE_AUTO, false},
	{"gpu", SJ_DEVICE_GPU, false},
	{"cpu", SJ_DEVICE_CPU, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/* Forget the last join's statistics. */
static void
SjStatsForget(void)
{
	memset(&sj_last_stats, 0, sizeof(sj_last_stats));
	sj_last_stats_user = InvalidOid;
}

/*
 * Utility hook: a session handed on by a connection pooler (DISCARD ALL) or
 * to another role (SET ROLE, SET/RESET SESSION AUTHORIZATION) starts with no
 * statistics, so none of the previous user's row counts leak.
 */
static void
SjProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (sj_prev_utility_hook)
		sj_prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	if (IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL)
		SjStatsForget();
	else if (IsA(stmt, VariableSetStmt) && ((VariableSetStmt *) stmt)->name != NULL &&
			 (strcmp(((VariableSetStmt *) stmt)->name, "role") == 0 ||
			  strcmp(((VariableSetStmt *) stmt)->name, "session_authorization") == 0))
		SjStatsForget();
}

/* Define the settings. */
void
_PG_init(void)
{
	long		ncores = sysconf(_SC_NPROCESSORS_ONLN);

	if (ncores < 1)
		ncores = 1;
	if (ncores > 1024)
		ncores = 1024;
	sj_preloaded = process_shared_preload_libraries_in_progress;

	DefineCustomEnumVariable("simjoin.device",
							 "Where simjoin runs joins.",
							 "auto: the GPU when one is usable, else the CPU; "
							 "gpu: the GPU or an error; cpu: never the GPU.",
							 &sj_device, SJ_DEVICE_AUTO, sj_device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("simjoin.gpu_memory_limit",
							"Device memory one join may hold.",
							"0 means 80% of the device memory free when the "
							"join starts. Larger work is split into batches.",
							&sj_gpu_memory_limit_mb, 0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("simjoin.cpu_threads",
							"Threads the CPU engine may use for one join.",
							NULL,
							&sj_cpu_threads, (int) ncores, 1, 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simjoin.enable_customscan",
							 "Lets the planner use Custom Scan (SimJoin) for "
							 "joins simjoin understands.",
							 NULL,
							 &sj_enable_customscan, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simjoin.enable_shared_index",
							 "Lets the processes of a parallel SimJoin share "
							 "the CPU engine's index of the inner input.",
							 "Off: each process builds its own, in its own "
							 "memory instead of dynamic shared memory.",
							 &sj_enable_shared_index, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	SjDevicesInit();
	MarkGUCPrefixReserved("simjoin");
	SjCustomScanInit();
	sj_prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = SjProcessUtility;
}

/*
 * Report a failed engine call as an ERROR with a specific SQLSTATE.
 * "what" names the operation ("eps_join on the GPU").
 */
void
SjReportStatus(SjStatus status, const char *engmsg, const char *what)
{
	const char *msg = engmsg && engmsg[0] ? engmsg : "no detail";

	switch (status)
	{
		case SJ_OK:
			return;
		case SJ_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory in %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_DEVICE_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory in %s", what),
					 errdetail("%s", msg),
					 errhint("Lower simjoin.gpu_memory_limit, free GPU memory, "
							 "or set simjoin.device = auto to fall back to the CPU.")));
			break;
		case SJ_ERR_NO_DEVICE:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no usable GPU for %s", what),
					 errdetail("%s", msg),
					 errhint("Set simjoin.device = auto or cpu to use the CPU engine.")));
			break;
		case SJ_ERR_DEVICE:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU error in %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_TOO_LARGE:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("input too large for %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_DATA:
			/* the engines report PostgreSQL's own message for the condition */
			ereport(ERROR,
					(errcode(strstr(msg, "division by zero") ?
							 ERRCODE_DIVISION_BY_ZERO : ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("%s", msg)));
			break;
		case SJ_ERR_INVALID:
		case SJ_ERR_INTERNAL:
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("internal error in %s", what),
					 errdetail("%s (status %d)", msg, (int) status)));
			break;
	}
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
	SjDevicesStart(true);		/* every device a join may spread over */
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

/* Should this join run on the GPU?  Errors for device = gpu without one. */
bool
SjUseGpu(void)
{
	switch (sj_device)
	{
		case SJ_DEVICE_CPU:
			return false;
		case SJ_DEVICE_GPU:
			if (!SjGpuUsable())
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("simjoin.device is \"gpu\" but no GPU is usable"),
						 errdetail(sjgpu_compiled() ?
								   "No CUDA device was found, or the NVIDIA driver is missing." :
								   "simjoin was built without CUDA support."),
						 errhint("Set simjoin.device = auto or cpu.")));
			return true;
		default:
			return SjGpuUsable();
	}
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

/* Reset callback: end an engine run that an ERROR left behind. */
static void
SjRunCallback(void *arg)
{
	SjRun	   *run = (SjRun *) arg;

	if (run->handle)
	{
		void	   *h = run->handle;

		run->handle = NULL;
		run->end(h);
	}
	SjDevicesRelease(&run->hold);
}

/* Tie the run's engine handle to CurrentMemoryContext's lifetime. */
static void
SjRunRegister(SjRun *run)
{
	run->cb.func = SjRunCallback;
	run->cb.arg = run;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &run->cb);
}

/* Collect the engine's timings into stats. */
static void
SjRunCollect(SjRun *run, SjStats *stats)
{
	SjTimings	t;

	memset(&t, 0, sizeof(t));
	run->timings(run->handle, &t);
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
			SjDevicesDescribe(&run->hold, stats->devices, sizeof(stats->devices));
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
	if (cur->gpu && sj_device == SJ_DEVICE_AUTO && spec->prefer_cpu &&
		spec->prefer_cpu(spec->arg))
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
				SjDevicesAcquire(&options, &cur->run->hold, SjSpreads(spec->name));
			cur->run->gpu = cur->gpu;
			status = spec->begin(spec->arg, cur->gpu, &options, cur->run, engmsg);
			if (status == SJ_ERR_INVALID && options.shared_index != NULL)
			{
				/* a shared index that does not fit: build one of our own */
				elog(DEBUG1, "simjoin: %s", engmsg);
				cur->shared_index = NULL;
				options.shared_index = NULL;
				memset(cur->run, 0, sizeof(SjRun));	/* a CPU run: holds no device */
				cur->run->gpu = cur->gpu;
				engmsg[0] = '\0';
				status = spec->begin(spec->arg, cur->gpu, &options, cur->run, engmsg);
			}
			if (status == SJ_OK)
				SjRunRegister(cur->run);
			else
				cur->run->handle = NULL;	/* a failed begin leaves nothing */
		}
		else
			status = SJ_OK;
		if (status == SJ_OK)
		{
			CHECK_FOR_INTERRUPTS();
			status = cur->run->next(cur->run->handle, batch, &done, engmsg);
			if (status == SJ_OK)
			{
				cur->pairs += (int64) batch->count;
				if (done)
				{
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

/* End a cursor early (a rescan, or a consumer that stopped reading). */
void
SjCursorClose(SjCursor *cur)
{
	if (cur->run)
		SjRunCallback(cur->run);
	cur->run = NULL;
	cur->done = true;
}

/*
 * Run one join to completion, handing each batch to spec->emit unless
 * counting.  Returns the number of pairs.
 */
int64
SjRunJoin(const SjRunSpec *spec, bool count_only, SjStats *stats)
{
	SjCursor	cur;
	SjPairBatch batch;

	SjCursorOpen(&cur, spec, count_only);
	while (SjCursorFetch(&cur, &batch, stats))
	{
		if (!count_only)
		{
			double		t0 = sj_now_ms();

			spec->emit(spec->arg, &batch);
			stats->emit_ms += sj_now_ms() - t0;
		}
	}
	return cur.pairs;
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

PG_FUNCTION_INFO_V1(simjoin_devices);

/* simjoin_devices(): one row per usable CUDA device. */
Datum
simjoin_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = 0;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (!SjGpuUsable())
		PG_RETURN_NULL();

	{
		char		engmsg[SJ_ERRMSG_LEN] = "";
		SjStatus	status = sjgpu_device_count(&n, engmsg);

		SjReportStatus(status, engmsg, "simjoin_devices");
	}
	for (i = 0; i < n; i++)
	{
		SjGpuDeviceInfo info;
		char		engmsg[SJ_ERRMSG_LEN] = "";
		SjStatus	status;
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		char		cc[16];

		status = sjgpu_device_info(i, &info, engmsg);
		SjReportStatus(status, engmsg, "simjoin_devices");
		snprintf(cc, sizeof(cc), "%d.%d", info.cc_major, info.cc_minor);
		values[0] = Int32GetDatum(info.ordinal);
		values[1] = CStringGetTextDatum(info.name);
		values[2] = Int64GetDatum((int64) info.total_memory);
		values[3] = Int64GetDatum((int64) info.free_memory);
		values[4] = CStringGetTextDatum(cc);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(simjoin_last_stats);

/*
 * simjoin_last_stats(): where the time of this backend's last join went;
 * NULL when that join ran as another user than the current one.
 */
Datum
simjoin_last_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[16];
	bool		nulls[16];
	SjStats    *s = &sj_last_stats;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (s->operator_name[0] == '\0' || sj_last_stats_user != GetUserId())
		PG_RETURN_NULL();
	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(s->operator_name);
	values[1] = CStringGetTextDatum(s->device);
	values[2] = CStringGetTextDatum(s->strategy);
	values[3] = Int64GetDatum(s->left_rows);
	values[4] = Int64GetDatum(s->right_rows);
	values[5] = Int64GetDatum(s->pairs);
	values[6] = Int64GetDatum(s->batches);
	values[7] = Float8GetDatum(s->scan_ms);
	/* the wait for the GPU to start counts as building here */
	values[8] = Float8GetDatum(s->build_ms + s->start_ms);
	values[9] = Float8GetDatum(s->probe_ms);
	values[10] = Float8GetDatum(s->transfer_ms);
	values[11] = Float8GetDatum(s->emit_ms);
	values[12] = Float8GetDatum(s->total_ms);
	values[13] = Int64GetDatum(s->device_bytes);
	values[14] = Int32GetDatum(s->scan_workers);
	if (s->devices[0])
		values[15] = CStringGetTextDatum(s->devices);
	else
		nulls[15] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

/* Does the library list in setting guc (a preload setting) name simjoin? */
static bool
SjLibraryListed(const char *guc)
{
	const char *value = GetConfigOption(guc, true, false);
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (value == NULL || value[0] == '\0')
		return false;
	raw = pstrdup(value);
	if (!SplitDirectoriesString(raw, ',', &names))
		return false;
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		const char *base = strrchr(name, '/');
		size_t		len;

		base = base ? base + 1 : name;
		len = strlen(base);
		if (len >= 3 && strcmp(base + len - 3, ".so") == 0)
			len -= 3;
		if (len == strlen("simjoin") && strncmp(base, "simjoin", len) == 0)
			found = true;
	}
	return found;
}

PG_FUNCTION_INFO_V1(simjoin_check_preload);

/*
 * simjoin_check_preload(): called by the extension script, a WARNING naming
 * the command to run when no setting preloads the library: plain SQL joins
 * involve no simjoin function, so a session that has not loaded the library
 * plans them without Custom Scan (SimJoin).  (A NOTICE would not reach the
 * client: PostgreSQL runs extension scripts with client_min_messages at
 * WARNING or above.)
 */
Datum
simjoin_check_preload(PG_FUNCTION_ARGS)
{
	if (sj_preloaded || SjLibraryListed("session_preload_libraries") ||
		SjLibraryListed("local_preload_libraries"))
		PG_RETURN_BOOL(true);
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("simjoin is not in shared_preload_libraries"),
			 errdetail("Plain SQL joins are planned as Custom Scan (SimJoin) only in sessions that have loaded simjoin."),
			 errhint("Run ALTER SYSTEM SET shared_preload_libraries = 'simjoin' (keeping any libraries already listed) and restart the server, or LOAD 'simjoin' in each session.")));
	PG_RETURN_BOOL(false);
}
