/*
 * cs_cost.c
 *		Custom Scan (SimJoin), the cost model of its paths.
 *
 * The planner's paths (cs_planner.c) are costed here: engine time per
 * device and strategy, reading and marshalling the inputs, forming pairs,
 * and what parallel workers and the shared inner input save.  The rates
 * are times measured by test/bench/calibrate.sql (test/bench/BENCHMARKS.md,
 * "Calibration of the cost model"), converted to PostgreSQL cost units with
 * the measured time of one unit.
 */

#include "postgres.h"

#include <math.h>

#include "catalog/pg_class.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "utils/float.h"

#include "customscan.h"

/* ---------------------------------------------------------------------
 * Cost model
 *
 * Times in milliseconds, measured by test/bench/calibrate.sql on the
 * reference machine (test/bench/BENCHMARKS.md), converted to PostgreSQL cost
 * units with the measured time of one unit.  Per side row: keeping the
 * tuple and marshalling its join value; per engine pair: forming and
 * returning a tuple; engine build and probe rates per device and strategy.
 * --------------------------------------------------------------------- */
typedef struct SjCostRates
{
	double		start_ms;		/* per join: engine start-up */
	double		row_ms;			/* build + probe, per input row */
	double		pair_ms;		/* engine time per pair produced */
	double		eval_ms;		/* nested-loop strategies: per pair tried */
} SjCostRates;

/*
 * From test/bench/calibrate.sql (test/bench/BENCHMARKS.md, "Calibration of
 * the cost model"): one cost unit is the median over three native plans run
 * in one process; the rates are fitted to the set-returning functions'
 * phases at two sizes or thresholds; the jaccard row rate includes its
 * tokenising marshal, dearer than the others'.
 */
#define SJ_MS_PER_COST_UNIT		0.0038	/* one cost unit, in ms */
/* SJ_MARSHAL_MS_PER_ROW and SJ_COUNT_MARSHAL_MS_PER_ROW: customscan.h */
/*
 * The shared inner: forming a row's minimal tuple and copying it into shared
 * memory, on top of what every input row costs: a large inner read by the
 * leader alone, shared against not (test/bench/BENCHMARKS.md, "Calibration
 * of the cost model").
 */
#define SJ_SHARE_MS_PER_ROW		0.00005
/*
 * A parallel worker is a new process: its first GPU join creates a CUDA
 * context (the leader's backend keeps its own from join to join), and
 * processes that create theirs at the same time all wait for all of them:
 * a fresh backend's first GPU join less its second, about the same per
 * process when several start at once (test/bench/BENCHMARKS.md,
 * "Calibration of the cost model"; bash test/bench/run.sh startup).  A
 * partial GPU path is charged this per worker, less the time a worker reads
 * its inputs meanwhile (the context starts on a thread of its own,
 * SjStartDevice), but never less than one process's: a context being
 * created slows the reading beside it (measured: a worker's scan and
 * marshal 680 against 500 ms; a band join of 1 M x 1 M rows with two
 * workers, whose reading outlasts their start, 345-375 ms on the GPU
 * against 202-273 ms on the CPU engine; test/bench/BENCHMARKS.md).
 */
#define SJ_GPU_PROCESS_START_MS	160.0
/*
 * Emitting a pair (the consumer above included: test/bench/BENCHMARKS.md)
 * is charged as PostgreSQL charges any join's output rows, cpu_tuple_cost
 * a pair: the nodes above charge their own share.
 */

/* [device][operator]: eps, jaccard (at 0.7), theta (hash; nested-loop eval) */
static const SjCostRates sj_rates[2][3] = {
	/* CPU engine (all cores) */
	{{0.15, 0.000068, 0.0000008, 0}, {0.15, 0.0006, 0.0000027, 0},
	{0.15, 0.00003, 0.00000001, 0.0000017}},
	/* GPU engine */
	{{0.4, 0.0000021, 0.00000001, 0}, {0.4, 0.00065, 0.0000012, 0},
	{0.4, 0.000004, 0.00000001, 0.00000003}},
};

/*
 * [device]: theta's range strategy (bands and inequalities), per row and
 * pair: calibrate.sql's band fit relative to its hash fit on each device,
 * scaled to the hash rates above (test/bench/BENCHMARKS.md, "Calibration
 * of the cost model").
 */
static const double sj_theta_range_rates[2][2] = {
	{0.000025, 0.0000001},
	{0.0000039, 0.00000001},
};

/*
 * [device][threshold 0.5, 0.7, 0.9]: jaccard's rates per row and pair.  How
 * much prefix filtering prunes turns on the threshold, so each threshold
 * has its own entry (calibrate.sql: 'jaccard t=...', the collection and its
 * half); the cost interpolates linearly between them, and takes 0.7's for a
 * threshold not known at planning (a parameter).  On the calibration
 * collection the three thresholds' rates agree within the noise
 * (test/bench/BENCHMARKS.md), so every threshold keeps one rate until a
 * collection shows otherwise.
 */
static const double sj_jaccard_rates[2][3][2] = {
	{{0.0006, 0.0000027}, {0.0006, 0.0000027}, {0.0006, 0.0000027}},
	{{0.00065, 0.0000012}, {0.00065, 0.0000012}, {0.00065, 0.0000012}},
};

/* Jaccard's row and pair rates at threshold t (NaN: unknown). */
static void
SjJaccardRates(int device, double t, double *row_ms, double *pair_ms)
{
	const double (*r)[2] = sj_jaccard_rates[device];
	double		x;
	int			i;

	if (isnan(t))
		t = 0.7;
	t = Max(0.5, Min(0.9, t));
	i = t < 0.7 ? 0 : 1;
	x = (t - (0.5 + 0.2 * i)) / 0.2;
	*row_ms = r[i][0] + x * (r[i + 1][0] - r[i][0]);
	*pair_ms = r[i][1] + x * (r[i + 1][1] - r[i][1]);
}

/* Cost units of ms milliseconds. */
Cost
SjMs(double ms)
{
	return (Cost) (ms / SJ_MS_PER_COST_UNIT);
}

/* The divisor of a partial path's rows (as costsize.c computes it). */
double
SjParallelDivisor(Path *path)
{
	double		divisor = path->parallel_workers;
	double		leader = 1.0 - (0.3 * path->parallel_workers);

	if (parallel_leader_participation && leader > 0)
		divisor += leader;
	return divisor;
}

/*
 * The engine's milliseconds on one device (gpu or the CPU engine) for
 * outer_rows x inner_rows producing pairs: start-up, rows and pairs.
 */
static double
SjEngineMs(PlannerInfo *root, SjJoinPlanInfo *info, bool gpu, double outer_rows,
		   double inner_rows, double pairs)
{
	const SjCostRates *r = &sj_rates[gpu ? 1 : 0][info->op];
	double		row_ms = r->row_ms,
				pair_ms = r->pair_ms,
				ms;

	if (info->op == SJ_OP_JACCARD)
	{
		Node	   *t = estimate_expression_value(root, (Node *) info->threshold);

		SjJaccardRates(gpu ? 1 : 0,
					   IsA(t, Const) && !((Const *) t)->constisnull &&
					   ((Const *) t)->consttype == FLOAT8OID ?
					   DatumGetFloat8(((Const *) t)->constvalue) : get_float8_nan(),
					   &row_ms, &pair_ms);
	}
	else if (info->op == SJ_OP_THETA && info->theta_strategy == SJ_THETA_RANGE)
	{
		row_ms = sj_theta_range_rates[gpu ? 1 : 0][0];
		pair_ms = sj_theta_range_rates[gpu ? 1 : 0][1];
	}
	ms = r->start_ms + row_ms * (outer_rows + inner_rows) + pair_ms * pairs;
	if (info->op == SJ_OP_THETA && info->theta_strategy == SJ_THETA_NESTED_LOOP)
		ms += r->eval_ms * outer_rows * inner_rows;
	return ms;
}

/*
 * Cost of the node over outer_path and inner_path: both inputs in full
 * before the first row (startup), then the engine's probe and the pairs.
 * With simjoin.device = auto and a GPU, the path runs on the device that
 * costs less (info->cpu): a parallel path's workers each start the GPU.
 */
void
SjCostPath(PlannerInfo *root, SjJoinPlanInfo *info, Path *outer_path,
		   Path *inner_path, double outer_rows, double inner_rows,
		   SjPathMode mode, Cost *startup, Cost *total)
{
	bool		gpu = sj_device != SJ_DEVICE_CPU &&
		(sj_device == SJ_DEVICE_GPU || SjGpuUsable());
	double		pairs,
				engine_pairs,
				read_ms,
				divisor,
				cpu_ms,
				engine_ms,
				start_ms = 0;
	QualCost	residual;

	pairs = clamp_row_est(info->clause_sel * outer_rows * inner_rows);

	/*
	 * The engine, and the residual filter that runs on every pair it
	 * forms, are costed for those pairs (theta: bands and inequalities
	 * from the columns' statistics, selectivity.c).  Emitting them is
	 * charged on PostgreSQL's estimate of the same conditions, as
	 * PostgreSQL's own paths of the join charge their output rows, so that
	 * the estimate does not tilt the choice between them.
	 */
	engine_pairs = clamp_row_est(info->pair_sel * outer_rows * inner_rows);
	info->pairs = engine_pairs;
	/*
	 * What this participant reads before its join: its share of a shared
	 * inner's scan, but every inner row kept and marshalled (as the
	 * startup below charges), as each participant forms pairs with any.
	 */
	read_ms = (outer_path->total_cost + inner_path->total_cost) * SJ_MS_PER_COST_UNIT +
		SJ_MARSHAL_MS_PER_ROW * (outer_rows + inner_rows);

	/*
	 * The CPU engine's rates are for all its threads.  A parallel path's
	 * participants share them (SjLoad), each joining its share of the outer
	 * side at once: together about as long as one join of the whole outer
	 * side on all threads, which each of them waits for.
	 */
	divisor = mode != SJ_PATH_SERIAL ? SjParallelDivisor(outer_path) : 1.0;
	cpu_ms = SjEngineMs(root, info, false, outer_rows * divisor, inner_rows,
						engine_pairs * divisor);
	engine_ms = gpu ? SjEngineMs(root, info, true, outer_rows, inner_rows, engine_pairs) :
		cpu_ms;
	/* a self-join (SjSelfJoinable): one scan, each unordered pair once */
	if (info->self)
	{
		cpu_ms *= 0.5;
		engine_ms *= 0.5;
	}

	/*
	 * Parallel workers are new processes, each starting the device at once:
	 * every one waits about SJ_GPU_PROCESS_START_MS for each of them, less
	 * the time it reads its inputs meanwhile, but at least for its own.
	 */
	if (gpu && mode != SJ_PATH_SERIAL && outer_path->parallel_workers > 0)
		start_ms = Max(SJ_GPU_PROCESS_START_MS,
					   SJ_GPU_PROCESS_START_MS * outer_path->parallel_workers - read_ms);
	info->cpu = false;
	if (gpu && sj_device == SJ_DEVICE_AUTO && cpu_ms < engine_ms + start_ms)
	{
		info->cpu = true;
		engine_ms = cpu_ms;
		start_ms = 0;
	}
	cost_qual_eval(&residual, info->gis ?
				   list_concat_copy(info->residual, info->engine_clauses) :
				   info->residual, root);

	*startup = outer_path->total_cost +
		(info->self ? 0 : inner_path->total_cost +
		 SjMs(SJ_MARSHAL_MS_PER_ROW * inner_rows)) +
		SjMs(SJ_MARSHAL_MS_PER_ROW * outer_rows) +
		SjMs(engine_ms * 0.5) + SjMs(start_ms);
	/* the shared inner: this participant's share copied to shared memory */
	if (mode == SJ_PATH_SHARED_INNER)
		*startup += SjMs(SJ_SHARE_MS_PER_ROW * inner_path->rows);
	info->emit_cost = cpu_tuple_cost * pairs +
		(residual.startup + residual.per_tuple * engine_pairs);

	/*
	 * Without the shared inner's barrier, the leader reads outer rows while
	 * the workers start, and takes more of them, and of the pairs to form,
	 * than its share: charged as one more share of them (measured: 39% of
	 * the outer rows with three workers, against 25%; with eight workers
	 * forming every pair took 3.4 times as long as with the barrier,
	 * test/bench/BENCHMARKS.md, "Plain SQL over points: the shared inner
	 * side on the GPU").  When the device's start outlasts reading under
	 * both parallel paths, this is what tells them apart.
	 */
	if (mode == SJ_PATH_PARTIAL)
		info->emit_cost *= 1.0 + 1.0 / divisor;
	*total = *startup + SjMs(engine_ms * 0.5) + info->emit_cost;
}

/*
 * What reading input path with parallel workers saves, when the counting
 * node will do so: a plain Seq Scan of a table large enough for workers
 * (the rule of SjParallelWorkers), whose join value arg (eps, jaccard;
 * NULL for theta) is one of its columns.  The scan and the marshal of its
 * rows are shared among the workers and the leader; starting them costs
 * parallel_setup_cost.
 */
Cost
SjParallelReadDiscount(PlannerInfo *root, SjJoinPlanInfo *info, Path *path,
					   Expr *arg)
{
	RelOptInfo *rel = path->parent;
	RangeTblEntry *rte;
	int			workers;

	while (arg && IsA(arg, RelabelType))
		arg = ((RelabelType *) arg)->arg;
	if (path->pathtype != T_SeqScan || !path->parallel_safe || path->param_info != NULL ||
		rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION ||
		(info->op != SJ_OP_THETA && (arg == NULL || !IsA(arg, Var))) ||
		max_parallel_workers_per_gather <= 0)
		return 0;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->relkind != RELKIND_RELATION || rte->inh)
		return 0;
	if (rel->rel_parallel_workers >= 0)
		workers = rel->rel_parallel_workers;
	else if (min_parallel_table_scan_size <= 0)
		workers = max_parallel_workers_per_gather;
	else
		workers = (int) ((rel->pages + SjToastBlocks(rte->relid)) /
						 (BlockNumber) min_parallel_table_scan_size);
	workers = Min(workers, max_parallel_workers_per_gather);
	if (workers <= 0)
		return 0;
	return (path->total_cost + SjMs(SJ_COUNT_MARSHAL_MS_PER_ROW * path->rows)) *
		workers / (workers + 1.0) - parallel_setup_cost;
}
