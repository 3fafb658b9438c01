/*
 * simjoin.c
 *		Module entry: registers the settings, the custom scan and the utility
 *		hook, and the device and statistics functions (simjoin_devices,
 *		simjoin_last_stats), and checks that the library is preloaded.
 *
 * Running a join (device choice, run loop, cursor, status mapping) is
 * sjrun.c's; this file calls into the rest and nothing calls into it.
 */
#include "postgres.h"

#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "simjoin.h"
#include "sjgpu.h"
#include "devices.h"
#include "sjrun.h"

PG_MODULE_MAGIC;

int			sj_device = SJ_DEVICE_AUTO;
int			sj_gpu_memory_limit_mb = 0;
int			sj_cpu_threads = 1;
bool		sj_enable_customscan = true;
bool		sj_enable_shared_index = true;
bool		sj_debug_row_pieces = false;
bool		sj_debug_detoast_each = false;

static ProcessUtility_hook_type sj_prev_utility_hook = NULL;

/* whether the library was loaded through shared_preload_libraries */
static bool sj_preloaded = false;

static const struct config_enum_entry sj_device_options[] = {
	{"auto", SJ_DEVICE_AUTO, false},
	{"gpu", SJ_DEVICE_GPU, false},
	{"cpu", SJ_DEVICE_CPU, false},
	{NULL, 0, false}
};

void		_PG_init(void);

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
	DefineCustomBoolVariable("simjoin.debug_row_pieces",
							 "Reads real[] rows of eps joins (the functions and the custom scan) "
							 "in place, as for the GPU, whichever engine runs (a developer option, for tests).",
							 "The parallel workers' parts stay mapped until the join "
							 "ends, and the CPU engine transposes them itself.",
							 &sj_debug_row_pieces, false,
							 PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("simjoin.debug_detoast_each",
							 "Reads each out-of-line value of a scanned table with "
							 "PostgreSQL's own detoast (a developer option, for tests).",
							 "Off: a table's scan reads its out-of-line values through "
							 "one TOAST index scan a column (toastread.c).",
							 &sj_debug_detoast_each, false,
							 PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	SjDevicesInit();
	MarkGUCPrefixReserved("simjoin");
	SjCustomScanInit();
	sj_prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = SjProcessUtility;
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
	Datum		values[17];
	bool		nulls[17];
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
	values[16] = Int64GetDatum(s->decided);
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
