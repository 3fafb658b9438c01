/*
 * cs_explain.c
 *		Custom Scan (SimJoin), EXPLAIN output.
 *
 * The condition, the engine and device, the planned pairs and, under
 * ANALYZE, the run's statistics and the parallel workers' reports.  It only
 * reads the scan state.
 */

#include "postgres.h"

#include "nodes/makefuncs.h"
#include "utils/ruleutils.h"

#include "customscan.h"

/* SJ_INDEX_ROLE_* (customscan.h) as EXPLAIN names them */
static const char *const sj_index_role_names[] = {"none", "built", "probed"};
static const char *const sj_prep_role_names[] = {"none", "prepared", "read"};

/* A phase time for EXPLAIN ANALYZE. */
static void
SjExplainMs(const char *label, double ms, ExplainState *es)
{
	ExplainPropertyFloat(label, "ms", ms, 3, es);
}

/*
 * EXPLAIN ANALYZE, with timing: what each worker of a parallel-aware node
 * did.  Text format gives a line a worker, as Sort does; the others a
 * "SimJoin Workers" list (PostgreSQL's "Workers" is the node's own).
 */
static void
SjExplainWorkers(SjScanState *state, ExplainState *es)
{
	int			n;
	bool		any = false;

	for (n = 0; n < state->nreports; n++)
		any = any || state->reports[n].filled;
	if (!any)
		return;
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainOpenGroup("SimJoin Workers", "SimJoin Workers", false, es);
	for (n = 0; n < state->nreports; n++)
	{
		SjWorkerReport *r = &state->reports[n];
		bool		gpu = strcmp(r->stats.device, "gpu") == 0;

		if (!r->filled)
			continue;
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Worker %d:  Pairs: " INT64_FORMAT "  Run Device: %s"
							 "  Shared Inner Rows Read: " INT64_FORMAT
							 "  Shared Inner Index: %s  Shared Inner Side: %s (%.3f ms)"
							 "  Scan and Marshal Time: %.3f ms",
							 n, r->stats.pairs, r->stats.device, r->inner_read,
							 sj_index_role_names[r->index_role],
							 sj_prep_role_names[r->prep_role], r->prep_ms,
							 r->stats.scan_ms);
			if (gpu && r->stats.devices[0])
				appendStringInfo(es->str, "  GPU Devices: %s", r->stats.devices);
			if (gpu)
				appendStringInfo(es->str, "  Device Start-up Time: %.3f ms", r->stats.start_ms);
			appendStringInfo(es->str, "  Build Time: %.3f ms  Probe Time: %.3f ms"
							 "  Emit Time: %.3f ms\n",
							 r->stats.build_ms, r->stats.probe_ms, r->stats.emit_ms);
			continue;
		}
		ExplainOpenGroup("Worker", NULL, true, es);
		ExplainPropertyInteger("Worker Number", NULL, n, es);
		ExplainPropertyInteger("Pairs", NULL, r->stats.pairs, es);
		ExplainPropertyText("Run Device", r->stats.device, es);
		ExplainPropertyInteger("Shared Inner Rows Read", NULL, r->inner_read, es);
		ExplainPropertyText("Shared Inner Index", sj_index_role_names[r->index_role], es);
		ExplainPropertyText("Shared Inner Side", sj_prep_role_names[r->prep_role], es);
		SjExplainMs("Shared Inner Side Time", r->prep_ms, es);
		SjExplainMs("Scan and Marshal Time", r->stats.scan_ms, es);
		if (gpu && r->stats.devices[0])
			ExplainPropertyText("GPU Devices", r->stats.devices, es);	/* the one it took */
		if (gpu)
			SjExplainMs("Device Start-up Time", r->stats.start_ms, es);
		SjExplainMs("Build Time", r->stats.build_ms, es);
		SjExplainMs("Probe Time", r->stats.probe_ms, es);
		SjExplainMs("Emit Time", r->stats.emit_ms, es);
		ExplainCloseGroup("Worker", NULL, true, es);
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainCloseGroup("SimJoin Workers", "SimJoin Workers", false, es);
}

void
SjExplainScan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	SjScanState *state = (SjScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context;
	const char *jt;
	char	   *cond;

	context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan, ancestors);
	switch (state->jointype)
	{
		case JOIN_LEFT:
			jt = "Left";
			break;
		case JOIN_SEMI:
			jt = "Semi";
			break;
		case JOIN_ANTI:
			jt = "Anti";
			break;
		default:
			jt = "Inner";
			break;
	}
	ExplainPropertyText("Operator", state->count ?
						psprintf("%s (count)", state->ops->name) :
						state->ops->name, es);
	ExplainPropertyText("Join Type", jt, es);
	if (state->op == SJ_OP_EPS && state->metric == SJ_METRIC_COSINE)
		ExplainPropertyText("Metric", "cosine", es);
	if (state->gis)
		ExplainPropertyText("Metric", (state->gis & SJ_GIS_GEOGRAPHY) ?
							"geography (decided by PostGIS)" :
							"geometry (decided by PostGIS)", es);
	/* a table joined with itself (SjSelfJoinable): the inner input not read */
	if (state->self)
		ExplainPropertyText("Self-Join", "one scan, each pair computed once", es);
	cond = deparse_expression((Node *) make_ands_explicit(state->engine_exprs),
							  context, true, false);
	ExplainPropertyText("Join Condition", cond, es);
	if (lthird(cscan->custom_exprs) != NIL)
		ExplainPropertyText("Join Filter",
							deparse_expression((Node *) make_ands_explicit(lthird(cscan->custom_exprs)),
											   context, true, false), es);
	if (es->costs)
	{
		/* where it would run and how: depends on the machine, like costs */
		bool		gpu = sj_device != SJ_DEVICE_CPU && !SjPlanKeepsCpu(state) &&
			SjGpuUsable();
		Node	   *planned = list_nth(cscan->custom_private, SJ_PRIV_PAIRS);

		ExplainPropertyText("Device", gpu ? "gpu" : "cpu", es);
		/* eps and jaccard engines choose from the data (Run Strategy) */
		ExplainPropertyText("Strategy",
							state->ops->strategy_name(gpu, state->theta_strategy), es);

		/*
		 * The pairs the engine was costed for (Pairs: the pairs formed), a
		 * participant's in a parallel plan.  A plan read back from text
		 * holds a whole number that fits as an Integer.
		 */
		ExplainPropertyFloat("Planned Pairs", NULL,
							 IsA(planned, Integer) ? intVal(planned) : floatVal(planned),
							 0, es);
	}
	if (es->analyze && state->loaded)
	{
		/* the pairs formed (SjFinish counts them so once the run ends) */
		ExplainPropertyInteger("Pairs", NULL, state->finished ? state->stats.pairs :
							   SjPairsFormed(state, state->stats.pairs), es);
		if (es->timing)
		{
			ExplainPropertyText("Run Device", state->stats.device, es);
			ExplainPropertyText("Run Strategy", state->stats.strategy, es);
			ExplainPropertyInteger("Batches", NULL, state->stats.batches, es);
			if (state->stats.scan_workers > 0)
				ExplainPropertyInteger("Input Workers", NULL,
									   state->stats.scan_workers, es);
			if (state->inner_readers > 0)
			{
				ExplainPropertyInteger("Shared Inner Rows", NULL, state->rows[1].n, es);
				ExplainPropertyInteger("Shared Inner Rows Read", NULL, state->inner_read, es);
				ExplainPropertyInteger("Shared Inner Readers", NULL, state->inner_readers, es);
				ExplainPropertyInteger("Shared Inner Parts Merged", NULL, state->inner_parts, es);
				ExplainPropertyText("Shared Inner Index",
									sj_index_role_names[state->index_role], es);
				if (state->index_role != SJ_INDEX_ROLE_NONE)
					SjExplainMs(state->index_role == SJ_INDEX_ROLE_BUILT ?
								"Shared Index Build Time" : "Shared Index Wait Time",
								state->index_ms, es);
				/* the side merged and laid out once (cs_parallel.c) */
				ExplainPropertyText("Shared Inner Side",
									sj_prep_role_names[state->prep_role], es);
				if (state->prep_role != SJ_INDEX_ROLE_NONE)
					SjExplainMs(state->prep_role == SJ_INDEX_ROLE_BUILT ?
								"Shared Side Prepare Time" : "Shared Side Wait Time",
								state->prep_ms, es);
			}
			SjExplainMs("Scan and Marshal Time", state->stats.scan_ms, es);
			if (strcmp(state->stats.device, "gpu") == 0)
			{
				/* which GPUs, and each one's share of work and time */
				if (state->stats.devices[0])
					ExplainPropertyText("GPU Devices", state->stats.devices, es);
				SjExplainMs("Device Start-up Time", state->stats.start_ms, es);
			}
			SjExplainMs("Build Time", state->stats.build_ms, es);
			SjExplainMs("Probe Time", state->stats.probe_ms, es);
			SjExplainMs("Transfer Time", state->stats.transfer_ms, es);
			SjExplainMs("Emit Time", state->stats.emit_ms, es);
			ExplainPropertyInteger("Device Memory", "kB",
								   state->stats.device_bytes / 1024, es);
			SjExplainWorkers(state, es);
		}
	}
}
