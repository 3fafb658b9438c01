/*
 * customscan.c
 *		Custom Scan (SimJoin): ordinary SQL joins run by simjoin's engines.
 *
 * Planner.  set_join_pathlist_hook looks at every inner, left, semi and anti
 * join whose inputs are unparameterized, and at its join clauses:
 *
 *	- l2_distance(a, b) <= c (also <, the <-> operator, either order),
 *	- jaccard(a, b) >= c (also >, either order),
 *	- PostGIS's ST_DWithin(a, b, c), ST_Distance(a, b) <= c and their 3-D and
 *	  geography forms over point columns (postgis.c, SjGisCondition): an eps
 *	  join at a widened c whose candidates the clause itself decides,
 *	- otherwise the clauses comparing columns of both sides that the theta
 *	  compiler accepts (theta_join.c),
 *
 * where a reads only one input, b only the other, and c is free of Vars and
 * volatile functions (a constant, a parameter, an initplan).  The first
 * kind found becomes the engine's condition; every other join clause stays
 * a residual filter evaluated on each pair.  The path is costed with the
 * model of SjCostPath (calibrated by test/bench/calibrate.sql) and competes
 * with PostgreSQL's own paths; a partial path (outer input split across
 * parallel workers, each worker joining its share against the whole inner
 * input) is offered too.  create_upper_paths_hook adds a counting node for
 * "SELECT count(*) FROM <one such join>", which never forms a pair tuple.
 *
 * Executor.  The node reads both inputs to the end, keeping each row's
 * values (a copy of its tuple), evaluates the condition's arguments on each
 * row and marshals them for the engine, then streams the engine's pair
 * batches through a cursor (simjoin.c): each pair becomes a scan tuple
 * (outer columns, then inner columns), filtered by the residual quals and
 * projected by ExecScan.  Left and anti joins track matched outer rows;
 * semi joins emit an outer row at its first match.  A threshold outside the
 * engines' domain (NaN or infinite eps, a Jaccard threshold <= 0), and
 * vectors of different lengths, are evaluated row pair by row pair with
 * PostgreSQL's own operators, so the answer is always that of the SQL; the
 * rows whose dates or timestamps a theta condition's arithmetic cannot
 * compute exactly on the engines (infinities, values near the types'
 * limits) are set aside and joined that way with every row of the other
 * side, the engine joining the rest.  All memory, engine and device memory
 * included, belongs to one context reset on rescan and at the end.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/pg_class.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "storage/barrier.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/datum.h"
#include "utils/dsa.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "simjoin.h"
#include "sjdist.h"
#include "sjtheta.h"

/* Which of our functions a call is. */
typedef enum SjFnKind
{
	SJ_FN_NONE,
	SJ_FN_L2,
	SJ_FN_COSINE,
	SJ_FN_JACCARD
} SjFnKind;

/* What the planner hook found in a join's clauses (path-private). */
typedef struct SjJoinPlanInfo
{
	SjOperator	op;
	JoinType	jointype;
	bool		strict;			/* < (eps) or > (jaccard) */
	bool		swapped;		/* the call's first argument reads the inner */
	bool		count;			/* the counting node of an aggregate */
	int			metric;			/* eps: SjMetric (sjdist.h) */
	int			gis;			/* eps over PostGIS points: SJ_GIS_* flags */
	Expr	   *outer_arg;		/* eps/jaccard: argument over the outer */
	Expr	   *inner_arg;
	Expr	   *threshold;
	List	   *engine_clauses; /* Exprs the engine evaluates */
	List	   *residual;		/* other join clauses (Exprs) */
	List	   *other_quals;	/* outer joins: filters above the join */
	int			theta_strategy; /* SjThetaStrategy planned, theta only */
	bool		cpu;			/* simjoin.device = auto with a GPU: the CPU
								 * engine costs less for this path */
	double		clause_sel;		/* PostgreSQL's estimate of engine_clauses
								 * over the cross product, as an inner join */
	double		pair_sel;		/* the engine's (theta: selectivity.c) */
	double		pairs;			/* the pairs the engine is costed for */
	Relids		relids;			/* the join's relids */
	Cost		emit_cost;		/* part of the total spent forming pairs */
} SjJoinPlanInfo;

/* Indexes of CustomScan.custom_private (Integers, the pairs a Float). */
enum
{
	SJ_PRIV_OP,
	SJ_PRIV_JOINTYPE,
	SJ_PRIV_STRICT,
	SJ_PRIV_COUNT,
	SJ_PRIV_NPREFIX,			/* scan tuple columns before the outer's */
	SJ_PRIV_OUTER_NATTS,
	SJ_PRIV_INNER_NATTS,
	SJ_PRIV_THETA_STRATEGY,
	SJ_PRIV_SWAPPED,
	SJ_PRIV_WORKERS,			/* parallel workers sharing the outer side */
	SJ_PRIV_CPU,				/* device = auto: run on the CPU engine */
	SJ_PRIV_PAIRS,				/* the pairs planned (EXPLAIN) */
	SJ_PRIV_METRIC,				/* eps: SjMetric */
	SJ_PRIV_GIS,				/* eps over PostGIS points: SJ_GIS_* flags */
	SJ_PRIV_N
};

/* Indexes of CustomScan.custom_exprs (a list of lists). */
enum
{
	SJ_EXPR_ARGS,				/* eps/jaccard: outer arg, inner arg, threshold */
	SJ_EXPR_ENGINE,				/* clauses the engine evaluates */
	SJ_EXPR_RESIDUAL,			/* other join clauses */
	SJ_EXPR_N
};

/* Where pairs come from in one run. */
typedef enum SjPairSource
{
	SJ_SRC_ENGINE,				/* the engine's cursor */
	SJ_SRC_NESTLOOP,			/* every pair, condition by PostgreSQL */
	SJ_SRC_EMPTY				/* no pair can satisfy the condition */
} SjPairSource;

/* One input's rows, deformed once. */
typedef struct SjSideRows
{
	int			natts;
	int64		n;
	int64		cap;
	Datum	   *values;			/* n * natts */
	bool	   *isnull;
} SjSideRows;

/*
 * The inner input of a parallel-aware node, read once by all participants
 * together (dynamic shared memory).  Each participant that attaches while
 * the barrier is in phase 0 takes a share: it reads its part of the
 * (partial) inner plan into chunks of minimal tuples in the query's DSA
 * area and, where the operator's part format can hold the join columns,
 * marshals their values as it goes into a part of its own, then arrives.
 * In phase 1 nobody writes: every participant has all of the inner rows,
 * shares in slot order, each share's rows in reading order, read in place,
 * and merges the parts into its engine input instead of marshalling every
 * inner row itself.
 */
typedef struct SjInnerShare
{
	dsa_pointer first;			/* its chunks, in reading order */
	int64		ntuples;
	dsa_pointer part;			/* its join values, or InvalidDsaPointer */
} SjInnerShare;

typedef struct SjSharedInner
{
	Barrier		barrier;
	slock_t		mutex;
	int			nshares;		/* shares taken, under mutex */
	int			maxshares;		/* participants at most */
	int			index_state;	/* SjIndexState, under mutex */
	dsa_pointer index;			/* the engine's index, once READY */
	ConditionVariable index_cv; /* index_state left BUILDING */
	SjInnerShare share[FLEXIBLE_ARRAY_MEMBER];
	/* then, MAXALIGNed, an SjWorkerReport per planned worker */
} SjSharedInner;

/*
 * What a worker did, for the leader's EXPLAIN ANALYZE: written by the
 * worker when it shuts its node down, copied by the leader when it shuts
 * its own down (the workers have finished by then, their tuple queues
 * being drained), before the shared memory goes.
 */
typedef struct SjWorkerReport
{
	bool		filled;			/* written, after the fields below */
	int			index_role;
	double		index_ms;
	int64		inner_read;
	SjStats		stats;
} SjWorkerReport;

#define SjWorkerReports(sh) \
	((SjWorkerReport *) ((char *) (sh) + \
						 MAXALIGN(offsetof(SjSharedInner, share) + \
								  (sh)->maxshares * sizeof(SjInnerShare))))

/*
 * The CPU engine's index of the shared inner input (eps grids, theta
 * indexes over columns that are not ranked): the first participant to need
 * it builds it into the DSA area on the threads of all participants, while
 * the others wait; then every participant probes it with its own outer rows.
 */
typedef enum SjIndexState
{
	SJ_INDEX_NONE,				/* nobody has started it */
	SJ_INDEX_BUILDING,
	SJ_INDEX_READY,
	SJ_INDEX_UNUSABLE			/* the engine's plan keeps no inner index */
} SjIndexState;

/* What this participant did with the shared index (SjScanState.index_role). */
#define SJ_INDEX_ROLE_NONE		0
#define SJ_INDEX_ROLE_BUILT		1
#define SJ_INDEX_ROLE_PROBED	2

/* ... as EXPLAIN names it */
static const char *const sj_index_role_names[] = {"none", "built", "probed"};

typedef struct SjInnerChunk
{
	dsa_pointer next;
	int64		ntuples;
	Size		used;			/* bytes of data */
	/* then the data: MAXALIGNed MinimalTuples */
} SjInnerChunk;

/* A marshalled row's key during a shared read: its share and its place. */
#define SJ_SHARE_KEY_BITS		40
#define SjShareKey(slot, local)	(((int64) (slot) << SJ_SHARE_KEY_BITS) | (local))

#define SJ_INNER_CHUNK_SIZE		(1024 * 1024)	/* header included */
#define SJ_INNER_CHUNK_HEADER	MAXALIGN(sizeof(SjInnerChunk))
#define SjInnerChunkData(chunk)	((char *) (chunk) + SJ_INNER_CHUNK_HEADER)

typedef struct SjScanState
{
	CustomScanState css;

	/* from the plan */
	SjOperator	op;
	JoinType	jointype;
	bool		strict;
	bool		swapped;
	bool		count;
	int			metric;			/* eps: SjMetric */
	int			gis;			/* eps over PostGIS points: SJ_GIS_* flags */
	int			workers;
	bool		plan_cpu;		/* planned for the CPU engine (device = auto) */
	int			nprefix;
	int			natts[2];
	int			theta_strategy;
	List	   *engine_exprs;	/* plan's engine clauses (for theta) */
	ExprState  *arg[2];			/* eps/jaccard arguments, outer and inner */
	int			arg_var[2];		/* >= 0: the argument is that column */
	ExprState  *threshold;
	ExprState  *engine_qual;	/* the engine's clauses, for the nested loop */
	ExprState  *residual;

	/* one run */
	MemoryContext cxt;
	bool		loaded;
	bool		finished;
	SjPairSource source;
	SjSideRows	rows[2];
	SjRunSpec	spec;
	SjCursor	cursor;
	SjPairBatch batch;
	size_t		pos;
	const int64 *keys[2];		/* engine row -> input row */
	int64		nl_i;
	int64		nl_j;
	const bool *aside[2];		/* theta: rows the engine does not see, by
								 * row number (NULL: none) */
	int64	   *aside_rows;		/* ... the inner's, listed */
	int64		naside_rows;
	bool		engine_done;	/* engine pairs done: now the set-aside
								 * rows' pairs, by PostgreSQL's operators */
	bool		residual_first; /* nested loop: the other clauses first */
	bool	   *matched;		/* left, semi, anti: outer rows matched */
	int64		unmatched_pos;
	bool		pairs_done;
	double		param;			/* the threshold the engine runs with */
	bool		streaming;		/* marshal while reading, keep no rows */
	SjEpsScan  *escan;			/* the engine's input being built */
	void	   *pscan[2];		/* ... PostGIS points (postgis.c) */
	SjSetScan  *sscan;
	SjDict	   *dict;
	SjThetaPrepared *tp;
	bool		side_done[2];	/* side read by workers and finished */
	SjVectorInput eps_in[2];	/* ... its input, eps */
	SjSets		set_in[2];		/* ... jaccard */
	int64	   *set_keys[2];
	int64		rows_out;
	SjSharedInner *shared;		/* parallel-aware: the shared inner input */
	int64		inner_read;		/* inner rows this participant read */
	int			inner_readers;	/* participants that read the inner */
	int			inner_parts;	/* their parts merged (0: marshalled here) */
	int			index_role;		/* SJ_INDEX_ROLE_* */
	double		index_ms;		/* building or waiting for the shared index */
	SjWorkerReport *reports;	/* leader: the workers', copied at shutdown */
	int			nreports;
	SjStats		stats;
	double		t0;
	double		fetch_ms;
	double		load_done_ms;
} SjScanState;

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;
static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

static Plan *SjPlanCustomPath(PlannerInfo *root, RelOptInfo *rel,
							  CustomPath *best_path, List *tlist,
							  List *clauses, List *custom_plans);
static Node *SjCreateScanState(CustomScan *cscan);
static void SjBeginScan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *SjExecScan(CustomScanState *node);
static void SjEndScan(CustomScanState *node);
static void SjRescan(CustomScanState *node);
static void SjExplainScan(CustomScanState *node, List *ancestors,
						  ExplainState *es);
static Size SjEstimateDSM(CustomScanState *node, ParallelContext *pcxt);
static void SjInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							void *coordinate);
static void SjReInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
static void SjInitializeWorker(CustomScanState *node, shm_toc *toc,
							   void *coordinate);
static void SjShutdownScan(CustomScanState *node);

static const CustomPathMethods sj_path_methods = {
	.CustomName = "SimJoin",
	.PlanCustomPath = SjPlanCustomPath,
};

static const CustomScanMethods sj_scan_methods = {
	.CustomName = "SimJoin",
	.CreateCustomScanState = SjCreateScanState,
};

static const CustomExecMethods sj_exec_methods = {
	.CustomName = "SimJoin",
	.BeginCustomScan = SjBeginScan,
	.ExecCustomScan = SjExecScan,
	.EndCustomScan = SjEndScan,
	.ReScanCustomScan = SjRescan,
	.ExplainCustomScan = SjExplainScan,
	.EstimateDSMCustomScan = SjEstimateDSM,
	.InitializeDSMCustomScan = SjInitializeDSM,
	.ReInitializeDSMCustomScan = SjReInitializeDSM,
	.InitializeWorkerCustomScan = SjInitializeWorker,
	.ShutdownCustomScan = SjShutdownScan,
};

static const char *const sj_op_names[] = {"eps_join", "jaccard_join", "theta_join"};

/* The paths offered for a join. */
typedef enum SjPathMode
{
	SJ_PATH_SERIAL,				/* one process reads both inputs */
	SJ_PATH_PARTIAL,			/* outer split across workers, each reads the inner */
	SJ_PATH_SHARED_INNER		/* outer split, inner read once by all together */
} SjPathMode;

/* ---------------------------------------------------------------------
 * Cost model
 *
 * Times in milliseconds, measured by test/bench/calibrate.sql on the
 * reference machine (README, "Cost model"), converted to PostgreSQL cost
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
 * Measured 2026-11-22 by test/bench/calibrate.sql on one NVIDIA H100 with 16
 * CPU cores (README, "Cost model"): one cost unit is the median over three
 * native plans run in one process; the rates are fitted to the set-returning
 * functions' phases at two sizes or thresholds; the jaccard row rate includes
 * its tokenising marshal (about 0.5 us a row more than the others').
 */
#define SJ_MS_PER_COST_UNIT		0.0038	/* one cost unit, in ms */
#define SJ_MARSHAL_MS_PER_ROW	0.0002	/* keep a tuple, marshal its value */
/*
 * The counting node keeps no tuple: marshalling a value costs about 10 ns
 * a row on top of the input's scan (theta_join_count and SELECT count(*)
 * of its inputs, measured on the 2-core build machine, 2026-11-24).
 */
#define SJ_COUNT_MARSHAL_MS_PER_ROW	0.00002
/*
 * The shared inner: forming a row's minimal tuple and copying it into shared
 * memory, on top of what every input row costs.  Measured on the 2-core
 * build machine, 2026-11-24: a band join's 1 M-row inner read by the
 * leader alone, shared against not, median Scan and Marshal Time 280
 * against 231 ms over five runs each (49 ns a row).
 */
#define SJ_SHARE_MS_PER_ROW		0.00005
/*
 * A parallel worker is a new process: its first GPU join creates a CUDA
 * context (the leader's backend keeps its own from join to join), and
 * processes that create theirs at the same time all wait for all of them.
 * Measured on the H100 host, 2026-11-24 (README, "Cost model"; bash
 * test/bench/run.sh startup): a fresh backend's first GPU join of 1,000
 * points took 161-184 ms (the host's very first 342 ms), its second 1-2
 * ms; eight fresh backends at once took 1,193-1,337 ms each, 149-167 ms a
 * process.  A partial GPU path is charged this per worker, less the time a
 * worker reads its inputs meanwhile (the context starts on a thread of its
 * own, SjStartDevice).
 */
#define SJ_GPU_PROCESS_START_MS	160.0
/*
 * Emitting a pair (about 0.18 us measured, the consumer above included) is
 * charged as PostgreSQL charges any join's output rows, cpu_tuple_cost a
 * pair: the nodes above charge their own share.
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
 * pair.  Measured 2026-11-24 (calibrate.sql on the same H100 host): the
 * band fit's row rate is 0.84 of the hash fit's on the CPU (31.5 against
 * 37.4 ns) and 0.97 on the GPU (3.97 against 4.09 ns), 0.11 ns a pair on
 * the CPU; scaled to the hash rates above.
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
 * collection (2026-11-24) the CPU's row time net of the pair rate was
 * 87, 101 and 103 ns at 0.5, 0.7 and 0.9, and the GPU's engine time did
 * not grow with the pairs (20.4, 22.8, 20.8 ms): within the noise of one
 * rate, which every threshold keeps until a collection shows otherwise.
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
static Cost
SjMs(double ms)
{
	return (Cost) (ms / SJ_MS_PER_COST_UNIT);
}

/* The divisor of a partial path's rows (as costsize.c computes it). */
static double
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
static void
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
	/* what this participant reads: its shares of a shared inner's rows */
	read_ms = (outer_path->total_cost + inner_path->total_cost) * SJ_MS_PER_COST_UNIT +
		SJ_MARSHAL_MS_PER_ROW * (outer_rows + inner_path->rows);

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

	/*
	 * Parallel workers are new processes, each starting the device at once:
	 * every one waits about SJ_GPU_PROCESS_START_MS for each of them, less
	 * the time it reads its inputs meanwhile.
	 */
	if (gpu && mode != SJ_PATH_SERIAL)
		start_ms = Max(0.0, SJ_GPU_PROCESS_START_MS * outer_path->parallel_workers -
					   read_ms);
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

	*startup = outer_path->total_cost + inner_path->total_cost +
		SjMs(SJ_MARSHAL_MS_PER_ROW * (outer_rows + inner_rows)) +
		SjMs(engine_ms * 0.5) + SjMs(start_ms);
	/* the shared inner: this participant's share copied to shared memory */
	if (mode == SJ_PATH_SHARED_INNER)
		*startup += SjMs(SJ_SHARE_MS_PER_ROW * inner_path->rows);
	info->emit_cost = cpu_tuple_cost * pairs +
		(residual.startup + residual.per_tuple * engine_pairs);
	*total = *startup + SjMs(engine_ms * 0.5) + info->emit_cost;
}

/* ---------------------------------------------------------------------
 * Planner
 * --------------------------------------------------------------------- */

/* Is funcid one of simjoin's l2_distance or jaccard functions? */
static SjFnKind
SjFunctionKind(Oid funcid)
{
	HeapTuple	tup;
	SjFnKind	kind = SJ_FN_NONE;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tup))
		return SJ_FN_NONE;
	if (((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId)
	{
		bool		isnull;
		Datum		bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);

		if (!isnull && strstr(TextDatumGetCString(bin), "simjoin") != NULL)
		{
			char	   *src = TextDatumGetCString(SysCacheGetAttr(PROCOID, tup,
																  Anum_pg_proc_prosrc,
																  &isnull));

			if (strcmp(src, "l2_distance_float8") == 0 ||
				strcmp(src, "l2_distance_float4") == 0)
				kind = SJ_FN_L2;
			else if (strcmp(src, "cosine_distance_float8") == 0 ||
					 strcmp(src, "cosine_distance_float4") == 0)
				kind = SJ_FN_COSINE;
			else if (strcmp(src, "jaccard_int") == 0 || strcmp(src, "jaccard_text") == 0)
				kind = SJ_FN_JACCARD;
		}
	}
	ReleaseSysCache(tup);
	return kind;
}

/* The kind and arguments of a call of l2_distance, <-> or jaccard. */
static SjFnKind
SjCallOf(Node *node, List **args)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL)
		return SJ_FN_NONE;
	if (IsA(node, FuncExpr))
	{
		*args = ((FuncExpr *) node)->args;
		return SjFunctionKind(((FuncExpr *) node)->funcid);
	}
	if (IsA(node, OpExpr))
	{
		set_opfuncid((OpExpr *) node);
		*args = ((OpExpr *) node)->args;
		return SjFunctionKind(((OpExpr *) node)->opfuncid);
	}
	return SJ_FN_NONE;
}

/* Can expr be the threshold: evaluated once, before the join? */
static bool
SjIsThreshold(Node *expr)
{
	return !contain_var_clause(expr) && !contain_volatile_functions(expr) &&
		!contain_subplans(expr) && !contain_agg_clause(expr) &&
		!contain_window_function(expr);
}

/* Does expr read exactly the relations of one side (and no other)? */
static bool
SjReadsOnly(PlannerInfo *root, Node *expr, Relids side)
{
	Relids		varnos = pull_varnos(root, expr);

	return !bms_is_empty(varnos) && bms_is_subset(varnos, side) &&
		!contain_volatile_functions(expr);
}

/*
 * Is clause an eps or jaccard condition between the two sides?  Fills the
 * operator, arguments (outer first), threshold and strictness.
 */
static bool
SjMatchSimilarity(PlannerInfo *root, Expr *clause, Relids outer, Relids inner,
				  SjJoinPlanInfo *info)
{
	OpExpr	   *op;
	Oid			fn;
	List	   *args = NIL;
	SjFnKind	kind;
	bool		call_left;
	Node	   *other;
	bool		le,
				lt,
				ge,
				gt;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	op = (OpExpr *) clause;
	set_opfuncid(op);
	fn = op->opfuncid;
	if (fn != F_FLOAT8LE && fn != F_FLOAT8LT && fn != F_FLOAT8GE && fn != F_FLOAT8GT)
		return false;
	kind = SjCallOf(linitial(op->args), &args);
	call_left = kind != SJ_FN_NONE;
	if (!call_left)
		kind = SjCallOf(lsecond(op->args), &args);
	if (kind == SJ_FN_NONE || list_length(args) != 2)
		return false;
	other = call_left ? lsecond(op->args) : linitial(op->args);
	if (!SjIsThreshold(other))
		return false;

	/* normalise to "call CMP threshold" */
	le = call_left ? fn == F_FLOAT8LE : fn == F_FLOAT8GE;
	lt = call_left ? fn == F_FLOAT8LT : fn == F_FLOAT8GT;
	ge = call_left ? fn == F_FLOAT8GE : fn == F_FLOAT8LE;
	gt = call_left ? fn == F_FLOAT8GT : fn == F_FLOAT8LT;
	if ((kind == SJ_FN_L2 || kind == SJ_FN_COSINE) && (le || lt))
	{
		info->op = SJ_OP_EPS;
		info->strict = lt;
		info->metric = kind == SJ_FN_COSINE ? SJ_METRIC_COSINE : SJ_METRIC_L2;
	}
	else if (kind == SJ_FN_JACCARD && (ge || gt))
	{
		info->op = SJ_OP_JACCARD;
		info->strict = gt;
	}
	else
		return false;

	if (SjReadsOnly(root, linitial(args), outer) && SjReadsOnly(root, lsecond(args), inner))
	{
		info->outer_arg = linitial(args);
		info->inner_arg = lsecond(args);
	}
	else if (SjReadsOnly(root, linitial(args), inner) && SjReadsOnly(root, lsecond(args), outer))
	{
		info->outer_arg = lsecond(args);
		info->inner_arg = linitial(args);
		info->swapped = true;
	}
	else
		return false;
	info->threshold = (Expr *) other;
	return true;
}

/*
 * Is clause a PostGIS distance condition between point columns of the two
 * sides (postgis.c, SjGisCondition)?  It runs as an eps join that keeps
 * every pair PostGIS could accept, the clause deciding each one.
 */
static bool
SjMatchGis(PlannerInfo *root, Expr *clause, Relids outer, Relids inner,
		   SjJoinPlanInfo *info)
{
	Expr	   *a,
			   *b,
			   *threshold;
	bool		strict;
	int			gis = SjGisCondition(clause, &a, &b, &threshold, &strict);

	if (gis == 0 || !SjIsThreshold((Node *) threshold))
		return false;
	if (SjReadsOnly(root, (Node *) a, outer) && SjReadsOnly(root, (Node *) b, inner))
	{
		info->outer_arg = a;
		info->inner_arg = b;
		info->swapped = false;
	}
	else if (SjReadsOnly(root, (Node *) a, inner) && SjReadsOnly(root, (Node *) b, outer))
	{
		info->outer_arg = b;
		info->inner_arg = a;
		info->swapped = true;
	}
	else
		return false;
	info->op = SJ_OP_EPS;
	info->metric = SJ_METRIC_L2;
	info->strict = strict;
	info->gis = gis;
	info->threshold = threshold;
	return true;
}

/* Context of SjRemapVars: Vars of each side, numbered in order of use. */
typedef struct SjRemapContext
{
	Relids		sides[2];
	List	   *vars[2];
	bool		ok;
} SjRemapContext;

/*
 * A copy of a planner clause whose Vars are varno 1 (outer) or 2 (inner)
 * and varattno their order of first use: the theta compiler's form, to
 * check at plan time that it compiles.
 */
static Node *
SjRemapVars(Node *node, SjRemapContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		int			s;

		for (s = 0; s < 2; s++)
		{
			if (v->varlevelsup == 0 && bms_is_member(v->varno, cxt->sides[s]))
			{
				Var		   *nv = copyObject(v);
				ListCell   *lc;
				int			pos = 1;

				foreach(lc, cxt->vars[s])
				{
					Var		   *o = lfirst(lc);

					if (o->varno == v->varno && o->varattno == v->varattno)
						break;
					pos++;
				}
				if (lc == NULL)
					cxt->vars[s] = lappend(cxt->vars[s], v);
				nv->varno = s + 1;
				nv->varattno = pos;
				return (Node *) nv;
			}
		}
		cxt->ok = false;
		return node;
	}
	if (IsA(node, Param) && (((Param *) node)->paramkind == PARAM_EXTERN ||
							 ((Param *) node)->paramkind == PARAM_EXEC))
	{
		/* known when the join starts: a constant of its type stands in */
		Param	   *p = (Param *) node;

		return (Node *) makeNullConst(p->paramtype, p->paramtypmod, p->paramcollid);
	}
	if (IsA(node, PlaceHolderVar) || IsA(node, SubPlan) || IsA(node, Param) ||
		IsA(node, Aggref) || IsA(node, WindowFunc))
	{
		cxt->ok = false;
		return node;
	}
	return expression_tree_mutator(node, SjRemapVars, (void *) cxt);
}

/*
 * Does expr, with its Vars renumbered per side, compile for the theta
 * engines?  Sets the strategy they would pick; logs why not at DEBUG1.
 */
static bool
SjThetaCheck(Node *expr, Relids outer, Relids inner, int *strategy)
{
	SjRemapContext cxt;
	Node	   *remapped;
	char	   *why = NULL;

	memset(&cxt, 0, sizeof(cxt));
	cxt.sides[0] = outer;
	cxt.sides[1] = inner;
	cxt.ok = true;
	remapped = SjRemapVars(expr, &cxt);
	if (!cxt.ok)
		return false;
	if (!SjThetaCompilable(remapped, strategy, &why))
	{
		elog(DEBUG1, "simjoin: join clause left to PostgreSQL: %s", why);
		return false;
	}
	return true;
}

/* Does a theta clause read both sides and compile? */
static bool
SjThetaClauseOk(PlannerInfo *root, Expr *clause, Relids outer, Relids inner)
{
	Relids		varnos = pull_varnos(root, (Node *) clause);
	int			strategy;

	if (!bms_overlap(varnos, outer) || !bms_overlap(varnos, inner) ||
		contain_volatile_functions((Node *) clause))
		return false;
	return SjThetaCheck((Node *) clause, outer, inner, &strategy);
}

/* The theta strategy the engines would pick for the whole condition. */
static int
SjThetaStrategyOf(List *clauses, Relids outer, Relids inner)
{
	int			strategy;

	if (!SjThetaCheck((Node *) make_ands_explicit(clauses), outer, inner, &strategy))
		return -1;
	return strategy;
}

/* A CustomPath for the join. */
static CustomPath *
SjMakePath(PlannerInfo *root, RelOptInfo *joinrel, SjJoinPlanInfo *proto,
		   Path *outer_path, Path *inner_path, JoinPathExtraData *extra,
		   SjPathMode mode)
{
	bool		partial = mode != SJ_PATH_SERIAL;
	CustomPath *cpath = makeNode(CustomPath);
	SjJoinPlanInfo *info = palloc(sizeof(SjJoinPlanInfo));
	double		outer_rows = outer_path->rows;
	double		rows = joinrel->rows;
	Cost		startup,
				total;

	*info = *proto;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = mode == SJ_PATH_SHARED_INNER;
	cpath->path.parallel_safe = joinrel->consider_parallel &&
		outer_path->parallel_safe && inner_path->parallel_safe;
	cpath->path.parallel_workers = partial ? outer_path->parallel_workers : 0;
	if (partial)
		rows = clamp_row_est(rows / SjParallelDivisor(outer_path));
	cpath->path.rows = rows;
	cpath->path.pathkeys = NIL;
	SjCostPath(root, info, outer_path, inner_path, outer_rows,
			   mode == SJ_PATH_SHARED_INNER ? inner_path->parent->rows : inner_path->rows,
			   mode, &startup, &total);
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = total;
	cpath->flags = 0;
	cpath->custom_paths = list_make2(outer_path, inner_path);
	cpath->custom_private = list_make1(info);
	cpath->methods = &sj_path_methods;
	return cpath;
}

/*
 * Join paths kept for the counting node.  A SimJoin join path that loses to
 * PostgreSQL's own paths is pruned from the join relation's paths, yet its
 * counting form (no pair formed) may still be the cheapest way to count the
 * join; so the cheapest one of each join relation (by cost less the pairs'
 * emission) is remembered for create_upper_paths_hook.  The list belongs to
 * the planner call that made it (SjPlanner saves and restores it around
 * every call, planning being reentrant).
 */
typedef struct SjKept
{
	PlannerInfo *root;
	Relids		relids;
	CustomPath *path;
} SjKept;

static List *sj_kept_paths = NIL;
static planner_hook_type prev_planner_hook = NULL;

/* Keep a copy of path: add_path frees the paths it rejects. */
static void
SjKeepCopy(SjKept *k, CustomPath *path)
{
	CustomPath *copy = palloc(sizeof(CustomPath));
	SjJoinPlanInfo *info = palloc(sizeof(SjJoinPlanInfo));

	*copy = *path;
	*info = *(SjJoinPlanInfo *) linitial(path->custom_private);
	copy->custom_private = list_make1(info);
	copy->custom_paths = list_copy(path->custom_paths);
	k->path = copy;
}

/* Remember path if it is the cheapest to count joinrel so far. */
static void
SjKeepPath(PlannerInfo *root, RelOptInfo *joinrel, CustomPath *path)
{
	SjJoinPlanInfo *info = linitial(path->custom_private);
	ListCell   *lc;
	SjKept	   *k;

	/*
	 * The genetic optimizer builds each candidate join order in a memory
	 * context of its own, deleted afterwards: nothing is kept from it (the
	 * counting node then needs the join path to survive on its own).
	 */
	if (root->join_search_private != NULL)
		return;

	foreach(lc, sj_kept_paths)
	{
		k = lfirst(lc);
		if (k->root == root && bms_equal(k->relids, joinrel->relids))
		{
			SjJoinPlanInfo *old = linitial(k->path->custom_private);

			if (path->path.total_cost - info->emit_cost <
				k->path->path.total_cost - old->emit_cost)
				SjKeepCopy(k, path);
			return;
		}
	}
	k = palloc(sizeof(SjKept));
	k->root = root;
	k->relids = bms_copy(joinrel->relids);
	k->path = NULL;
	sj_kept_paths = lappend(sj_kept_paths, k);
	SjKeepCopy(k, path);
}

/* The kept path of rel, or NULL. */
static CustomPath *
SjKeptPath(PlannerInfo *root, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, sj_kept_paths)
	{
		SjKept	   *k = lfirst(lc);

		if (k->root == root && bms_equal(k->relids, rel->relids))
			return k->path;
	}
	return NULL;
}

/* Does the plan tree contain a SimJoin node? */
static bool
SjPlanHasNode(Plan *plan)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return false;
	if (IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &sj_scan_methods)
		return true;
	switch (nodeTag(plan))
	{
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_SubqueryScan:
			return SjPlanHasNode(((SubqueryScan *) plan)->subplan);
		default:
			break;
	}
	foreach(lc, children)
		if (SjPlanHasNode(lfirst(lc)))
			return true;
	return SjPlanHasNode(plan->lefttree) || SjPlanHasNode(plan->righttree);
}

/*
 * planner_hook: a fresh list of kept paths for each planner call; and no
 * JIT compilation for a plan with a SimJoin node.  The planner estimates a
 * similarity join's pairs at a third of the cross product, so such a plan
 * looks costly enough for JIT, whose compilation (a tenth of a second or
 * more) takes longer than the expressions it would speed up here: the
 * node's inputs are marshalled by its own code.
 */
static PlannedStmt *
SjPlanner(Query *parse, const char *query_string, int cursorOptions,
		  ParamListInfo boundParams)
{
	List	   *saved = sj_kept_paths;
	PlannedStmt *result;
	ListCell   *lc;

	sj_kept_paths = NIL;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		sj_kept_paths = saved;
	}
	PG_END_TRY();
	if (result->jitFlags != PGJIT_NONE)
	{
		bool		has = SjPlanHasNode(result->planTree);

		foreach(lc, result->subplans)
			has = has || SjPlanHasNode(lfirst(lc));
		if (has)
			result->jitFlags = PGJIT_NONE;
	}
	return result;
}

/* set_join_pathlist_hook: offer Custom Scan (SimJoin) where it applies. */
static void
SjJoinPathlist(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			   RelOptInfo *innerrel, JoinType jointype,
			   JoinPathExtraData *extra)
{
	SjJoinPlanInfo info;
	SpecialJoinInfo inner_sjinfo;
	Path	   *outer_path = outerrel->cheapest_total_path;
	Path	   *inner_path = innerrel->cheapest_total_path;
	List	   *joinclauses = NIL;
	List	   *theta = NIL;
	ListCell   *lc;
	bool		found = false;
	CustomPath *path;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
	if (!sj_enable_customscan)
		return;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		jointype != JOIN_SEMI && jointype != JOIN_ANTI)
		return;
	if (outer_path == NULL || inner_path == NULL ||
		PATH_REQ_OUTER(outer_path) || PATH_REQ_OUTER(inner_path) ||
		!bms_is_empty(joinrel->lateral_relids))
		return;

	memset(&info, 0, sizeof(info));
	info.jointype = jointype;
	info.relids = joinrel->relids;
	info.theta_strategy = -1;
	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			return;				/* gating quals: leave to PostgreSQL */
		if ((jointype == JOIN_LEFT || jointype == JOIN_ANTI) &&
			RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			info.other_quals = lappend(info.other_quals, rinfo->clause);
		else
			joinclauses = lappend(joinclauses, rinfo->clause);
	}

	/* an eps or jaccard condition first */
	foreach(lc, joinclauses)
	{
		Expr	   *clause = lfirst(lc);

		if (!found && (SjMatchSimilarity(root, clause, outerrel->relids,
										 innerrel->relids, &info) ||
					   SjMatchGis(root, clause, outerrel->relids,
								  innerrel->relids, &info)))
		{
			found = true;
			info.engine_clauses = list_make1(clause);
		}
		else
			info.residual = lappend(info.residual, clause);
	}
	/* else the comparisons between the sides that the theta engine takes */
	if (!found)
	{
		info.residual = NIL;
		foreach(lc, joinclauses)
		{
			Expr	   *clause = lfirst(lc);

			if (SjThetaClauseOk(root, clause, outerrel->relids, innerrel->relids))
				theta = lappend(theta, clause);
			else
				info.residual = lappend(info.residual, clause);
		}
		if (theta == NIL)
			return;
		info.op = SJ_OP_THETA;
		info.engine_clauses = theta;
		info.theta_strategy = SjThetaStrategyOf(theta, outerrel->relids,
												innerrel->relids);
		if (info.theta_strategy < 0)
			return;
	}

	/* pairs as an inner join forms them, whatever the join's type */
	inner_sjinfo = *extra->sjinfo;
	inner_sjinfo.jointype = JOIN_INNER;
	info.clause_sel = clauselist_selectivity(root, info.engine_clauses, 0,
											 JOIN_INNER, &inner_sjinfo);
	info.pair_sel = info.op == SJ_OP_THETA ?
		SjThetaPairSelectivity(root, info.engine_clauses, outerrel->relids,
							   innerrel->relids, &inner_sjinfo) :
		info.clause_sel;

	path = SjMakePath(root, joinrel, &info, outer_path, inner_path, extra,
					  SJ_PATH_SERIAL);
	SjKeepPath(root, joinrel, path);
	add_path(joinrel, (Path *) path);

	/*
	 * The outer side split across parallel workers, each joining its share
	 * against all of the inner rows: read by each participant, or read once
	 * by all of them together into shared memory (a partial inner path).
	 */
	if (joinrel->consider_parallel && outerrel->partial_pathlist != NIL)
	{
		Path	   *partial_outer = linitial(outerrel->partial_pathlist);

		if (PATH_REQ_OUTER(partial_outer))
			return;
		if (inner_path->parallel_safe)
			add_partial_path(joinrel, (Path *) SjMakePath(root, joinrel, &info,
														  partial_outer, inner_path,
														  extra, SJ_PATH_PARTIAL));
		if (innerrel->partial_pathlist != NIL)
		{
			Path	   *partial_inner = linitial(innerrel->partial_pathlist);

			if (!PATH_REQ_OUTER(partial_inner))
				add_partial_path(joinrel, (Path *) SjMakePath(root, joinrel, &info,
															  partial_outer, partial_inner,
															  extra, SJ_PATH_SHARED_INNER));
		}
	}
}

/*
 * What reading input path with parallel workers saves, when the counting
 * node will do so: a plain Seq Scan of a table large enough for workers
 * (the rule of SjParallelWorkers), whose join value arg (eps, jaccard;
 * NULL for theta) is one of its columns.  The scan and the marshal of its
 * rows are shared among the workers and the leader; starting them costs
 * parallel_setup_cost.
 */
static Cost
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

/* Our join path among rel's paths (possibly under a projection), or NULL. */
static CustomPath *
SjFindJoinPath(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (IsA(p, ProjectionPath))
			p = ((ProjectionPath *) p)->subpath;
		if (IsA(p, CustomPath) && ((CustomPath *) p)->methods == &sj_path_methods)
			return (CustomPath *) p;
	}
	return NULL;
}

/* Is every output column of the grouping target a plain count(*)? */
static bool
SjOnlyCountStar(PathTarget *target)
{
	ListCell   *lc;

	if (target->exprs == NIL)
		return false;
	foreach(lc, target->exprs)
	{
		Aggref	   *agg = lfirst(lc);

		if (!IsA(agg, Aggref) || agg->aggfnoid != F_COUNT_ || !agg->aggstar ||
			agg->aggfilter || agg->aggdistinct || agg->aggorder ||
			agg->agglevelsup != 0 || agg->aggsplit != AGGSPLIT_SIMPLE)
			return false;
	}
	return true;
}

/*
 * create_upper_paths_hook: "SELECT count(*) FROM <a SimJoin join>" as one
 * node that counts pairs (the engines' count mode when nothing else filters
 * them) and returns one row.
 */
static void
SjUpperPaths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
			 RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	CustomPath *join;
	CustomPath *cpath;
	SjJoinPlanInfo *info;
	Cost		read_discount;

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (!sj_enable_customscan || stage != UPPERREL_GROUP_AGG)
		return;
	if (parse->groupClause || parse->groupingSets || parse->havingQual ||
		parse->hasTargetSRFs || !parse->hasAggs ||
		!SjOnlyCountStar(output_rel->reltarget))
		return;
	join = SjKeptPath(root, input_rel);
	if (join == NULL)
		join = SjFindJoinPath(input_rel);
	if (join == NULL || join->path.parallel_workers > 0)
		return;
	info = palloc(sizeof(SjJoinPlanInfo));
	*info = *(SjJoinPlanInfo *) linitial(join->custom_private);
	if (info->other_quals != NIL)
		return;
	info->count = true;

	cpath = makeNode(CustomPath);
	/* counting reads plain table scans with parallel workers (parscan.c) */
	read_discount = 0;
	if (info->jointype == JOIN_INNER && info->residual == NIL && !info->gis)
	{
		Path	   *outer = linitial(join->custom_paths);
		Path	   *inner = lsecond(join->custom_paths);

		/* values are marshalled as they stream in, no tuple is kept */
		read_discount = SjMs((SJ_MARSHAL_MS_PER_ROW - SJ_COUNT_MARSHAL_MS_PER_ROW) *
							 (outer->rows + inner->rows)) +
			SjParallelReadDiscount(root, info, outer, info->outer_arg) +
			SjParallelReadDiscount(root, info, inner, info->inner_arg);
	}
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = 1;
	cpath->path.pathkeys = NIL;
	cpath->path.startup_cost = join->path.total_cost - info->emit_cost +
		(info->residual || info->gis ? info->emit_cost / 2 : 0) + cpu_tuple_cost -
		read_discount;
	cpath->path.total_cost = cpath->path.startup_cost;
	cpath->flags = 0;
	cpath->custom_paths = join->custom_paths;
	cpath->custom_private = list_make1(info);
	cpath->methods = &sj_path_methods;
	add_path(output_rel, (Path *) cpath);
}

/* Append the expressions of tlist to scan_tlist as new entries. */
static List *
SjAppendTlist(List *scan_tlist, List *tlist)
{
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(te->expr),
											 list_length(scan_tlist) + 1,
											 NULL, false));
	}
	return scan_tlist;
}

/*
 * PlanCustomPath: the scan tuple is [count columns,] outer columns, inner
 * columns; every expression refers to it (setrefs turns Vars into
 * INDEX_VAR references).
 */
/*
 * A copy of clauses, cheapest first (stable), as PostgreSQL's
 * order_qual_clauses (static in createplan.c) orders a join's quals: the
 * theta engines evaluate the conjuncts left to right with short-circuits,
 * so an error (division by zero) is raised for exactly the pairs on which
 * PostgreSQL's own plan would raise it.
 */
static List *
SjOrderQuals(PlannerInfo *root, List *clauses)
{
	int			n = list_length(clauses);
	Node	  **items;
	Cost	   *costs;
	List	   *result = NIL;
	ListCell   *lc;
	int			i = 0;

	if (n <= 1)
		return copyObject(clauses);
	items = palloc(n * sizeof(Node *));
	costs = palloc(n * sizeof(Cost));
	foreach(lc, clauses)
	{
		QualCost	qcost;
		Node	   *clause = (Node *) lfirst(lc);
		int			j;

		cost_qual_eval_node(&qcost, clause, root);
		/* insertion sort: equal costs keep their order */
		for (j = i; j > 0 && costs[j - 1] > qcost.per_tuple; j--)
		{
			items[j] = items[j - 1];
			costs[j] = costs[j - 1];
		}
		items[j] = clause;
		costs[j] = qcost.per_tuple;
		i++;
	}
	for (i = 0; i < n; i++)
		result = lappend(result, copyObject(items[i]));
	pfree(items);
	pfree(costs);
	return result;
}

static Plan *
SjPlanCustomPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				 List *tlist, List *clauses, List *custom_plans)
{
	SjJoinPlanInfo *info = linitial(best_path->custom_private);
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	Plan	   *inner_plan = lsecond(custom_plans);
	List	   *scan_tlist = NIL;
	List	   *args = NIL;
	int			nprefix = 0;

	if (info->count)
	{
		scan_tlist = SjAppendTlist(scan_tlist, tlist);
		nprefix = list_length(tlist);
	}
	scan_tlist = SjAppendTlist(scan_tlist, outer_plan->targetlist);
	scan_tlist = SjAppendTlist(scan_tlist, inner_plan->targetlist);
	if (info->op != SJ_OP_THETA)
		args = list_make3(copyObject(info->outer_arg), copyObject(info->inner_arg),
						  copyObject(info->threshold));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = copyObject(info->other_quals);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_make3(args,
									 info->op == SJ_OP_THETA ?
									 SjOrderQuals(root, info->engine_clauses) :
									 copyObject(info->engine_clauses),
									 copyObject(info->residual));
	cscan->custom_private = list_make5(makeInteger(info->op),
									   makeInteger(info->jointype),
									   makeInteger(info->strict),
									   makeInteger(info->count),
									   makeInteger(nprefix));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(outer_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(inner_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(info->theta_strategy));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(info->swapped));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(best_path->path.parallel_workers));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->cpu));
	cscan->custom_private = lappend(cscan->custom_private,
									makeFloat(psprintf("%.0f", info->pairs)));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->metric));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->gis));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_copy(info->relids);
	cscan->methods = &sj_scan_methods;
	return &cscan->scan.plan;
}

/* ---------------------------------------------------------------------
 * Executor
 * --------------------------------------------------------------------- */

static Node *
SjCreateScanState(CustomScan *cscan)
{
	SjScanState *state = palloc0(sizeof(SjScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &sj_exec_methods;
	return (Node *) state;
}

/* Column (0-based, in the side's row) an argument reads, or -1. */
static int
SjArgColumn(Expr *arg, int base, int natts)
{
	while (arg && IsA(arg, RelabelType))
		arg = ((RelabelType *) arg)->arg;
	if (arg && IsA(arg, Var) && ((Var *) arg)->varno == INDEX_VAR &&
		((Var *) arg)->varattno > base && ((Var *) arg)->varattno <= base + natts)
		return ((Var *) arg)->varattno - base - 1;
	return -1;
}

static void
SjBeginScan(CustomScanState *node, EState *estate, int eflags)
{
	SjScanState *state = (SjScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *args = linitial(cscan->custom_exprs);

	state->op = intVal(list_nth(priv, SJ_PRIV_OP));
	state->jointype = intVal(list_nth(priv, SJ_PRIV_JOINTYPE));
	state->strict = intVal(list_nth(priv, SJ_PRIV_STRICT));
	state->count = intVal(list_nth(priv, SJ_PRIV_COUNT));
	state->nprefix = intVal(list_nth(priv, SJ_PRIV_NPREFIX));
	state->natts[0] = intVal(list_nth(priv, SJ_PRIV_OUTER_NATTS));
	state->natts[1] = intVal(list_nth(priv, SJ_PRIV_INNER_NATTS));
	state->theta_strategy = intVal(list_nth(priv, SJ_PRIV_THETA_STRATEGY));
	state->swapped = intVal(list_nth(priv, SJ_PRIV_SWAPPED));
	state->workers = intVal(list_nth(priv, SJ_PRIV_WORKERS));
	state->plan_cpu = intVal(list_nth(priv, SJ_PRIV_CPU));
	state->metric = intVal(list_nth(priv, SJ_PRIV_METRIC));
	state->gis = intVal(list_nth(priv, SJ_PRIV_GIS));
	state->engine_exprs = lsecond(cscan->custom_exprs);

	node->custom_ps = list_make2(ExecInitNode(linitial(cscan->custom_plans), estate, eflags),
								 ExecInitNode(lsecond(cscan->custom_plans), estate, eflags));
	if (args != NIL)
	{
		state->arg[0] = ExecInitExpr(linitial(args), &node->ss.ps);
		state->arg[1] = ExecInitExpr(lsecond(args), &node->ss.ps);
		state->arg_var[0] = SjArgColumn(linitial(args), state->nprefix, state->natts[0]);
		state->arg_var[1] = SjArgColumn(lsecond(args), state->nprefix + state->natts[0],
										state->natts[1]);
		state->threshold = ExecInitExpr(lthird(args), &node->ss.ps);
	}
	state->engine_qual = ExecInitQual(state->engine_exprs, &node->ss.ps);
	state->residual = ExecInitQual(lthird(cscan->custom_exprs), &node->ss.ps);
	state->cxt = AllocSetContextCreate(estate->es_query_cxt, "SimJoin",
									   ALLOCSET_DEFAULT_SIZES);
}

static void SjMarshalRow(SjScanState *state, int s, int64 r, const Datum *values,
						 const bool *nulls);

/*
 * What workers need to build side s of a counting node: its kind, the
 * operator's side, and its columns as positions in the child's rows with
 * their types.  False where the side cannot be read by workers.
 */
static bool
SjSideSpec(SjScanState *state, int s, SjPartKind *kind, void **side, int *ncols,
		   int *positions, Oid *typids)
{
	PlanState  *child = list_nth(state->css.custom_ps, s);

	if (state->op == SJ_OP_THETA)
	{
		*kind = SJ_PART_THETA;
		*side = SjThetaPreparedSide(state->tp, s, ncols, positions, typids);
		return true;
	}
	if (state->arg_var[s] < 0)
		return false;
	*ncols = 2;
	positions[0] = 0;
	typids[0] = INT8OID;
	positions[1] = state->arg_var[s] + 1;
	typids[1] = TupleDescAttr(ExecGetResultType(child), state->arg_var[s])->atttypid;
	*kind = state->op == SJ_OP_EPS ? SJ_PART_EPS : SJ_PART_SETS;
	*side = state->op == SJ_OP_EPS ? (void *) &state->escan[s] : (void *) &state->sscan[s];
	if (state->gis)
	{
		*kind = SJ_PART_POINTS;
		*side = state->pscan[s];
	}
	return true;
}

/* What the values of a side are, in error messages. */
static const char *
SjSideWhat(SjScanState *state)
{
	if (state->gis)
		return "point";
	return state->op == SJ_OP_EPS ? "vector" : "set";
}

/*
 * Side s was read with workers, or by the shared inner's readers: merge
 * their parts, release, count.
 */
static void
SjSideAddParts(SjScanState *state, int s, void *side, SjParts *parts)
{
	state->rows[s].n = parts->rows;
	state->stats.scan_workers = Max(state->stats.scan_workers, parts->workers);
	if (state->op == SJ_OP_THETA)
		SjThetaSideAddParts(side, parts);
	else if (state->gis)
		SjPointSideDone(side, parts, &state->eps_in[s]);
	else if (state->op == SJ_OP_EPS)
		SjEpsSideFinish(side, parts, &state->eps_in[s]);
	else
		SjSetSideFinish(side, parts, &state->set_in[s], &state->set_keys[s]);
	SjPartsRelease(parts);
	state->side_done[s] = true;
}

/*
 * Counting: read input s with parallel workers straight into the engine's
 * input, where it is a Seq Scan of a plain table whose join columns are
 * plain columns (parscan.c).  False, having read nothing, otherwise.
 */
static bool
SjReadSideParallel(SjScanState *state, int s)
{
	PlanState  *child = list_nth(state->css.custom_ps, s);
	int			positions[SJ_PART_MAX_COLS];
	Oid			typids[SJ_PART_MAX_COLS];
	int			ncols;
	SjPartKind	kind;
	void	   *side;
	SjParts    *parts;

	if (!SjSideSpec(state, s, &kind, &side, &ncols, positions, typids))
		return false;
	parts = SjScanChildParallel(child, kind, ncols, positions, typids, side,
								SjSideWhat(state));
	if (parts == NULL)
		return false;
	/* merge now: the workers' slots are free again for the other side */
	SjSideAddParts(state, s, side, parts);
	return true;
}

/*
 * Both inputs of a counting node in one parallel context (parscan.c), where
 * workers can read both; false, having read nothing, otherwise.
 */
static bool
SjReadBothParallel(SjScanState *state)
{
	PlanState  *children[2];
	int			positions[2][SJ_PART_MAX_COLS];
	Oid			typids[2][SJ_PART_MAX_COLS];
	const int  *posp[2] = {positions[0], positions[1]};
	const Oid  *typp[2] = {typids[0], typids[1]};
	const char *what[2];
	int			ncols[2];
	SjPartKind	kind[2];
	void	   *sides[2];
	SjParts    *parts[2];
	int			s;

	for (s = 0; s < 2; s++)
	{
		children[s] = list_nth(state->css.custom_ps, s);
		what[s] = SjSideWhat(state);
		if (!SjSideSpec(state, s, &kind[s], &sides[s], &ncols[s], positions[s],
						typids[s]))
			return false;
	}
	if (!SjScanChildrenParallel(children, kind[0], ncols, posp, typp, sides, what, parts))
		return false;
	for (s = 0; s < 2; s++)
		SjSideAddParts(state, s, sides[s], parts[s]);
	return true;
}

/* The next row of child (NULL at its end), run in the query's context. */
static TupleTableSlot *
SjChildNext(SjScanState *state, PlanState *child)
{
	MemoryContext old = MemoryContextSwitchTo(state->css.ss.ps.state->es_query_cxt);
	TupleTableSlot *slot = ExecProcNode(child);

	MemoryContextSwitchTo(old);
	return TupIsNull(slot) ? NULL : slot;
}

/* Room for cap rows of natts values in rows, which is emptied. */
static void
SjRowsAlloc(SjSideRows *rows, int natts, int64 cap)
{
	rows->natts = natts;
	rows->n = 0;
	rows->cap = cap;
	rows->values = palloc_extended(cap * Max(natts, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);
	rows->isnull = palloc_extended(cap * Max(natts, 1) * sizeof(bool), MCXT_ALLOC_HUGE);
}

/* Deform a minimal tuple into values/nulls; byref values point into it. */
static void
SjDeformMinimal(MinimalTuple mt, TupleDesc desc, Datum *values, bool *nulls)
{
	HeapTupleData htup;

	htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
	heap_deform_tuple(&htup, desc, values, nulls);
}

/* Read one input to its end, keeping each row's values. */
static void
SjReadSide(SjScanState *state, int s)
{
	PlanState  *child = list_nth(state->css.custom_ps, s);
	SjSideRows *rows = &state->rows[s];
	TupleDesc	desc = ExecGetResultType(child);
	bool		byval = true;
	int			natts = state->natts[s];
	int			k;

	for (k = 0; k < desc->natts; k++)
		if (!TupleDescAttr(desc, k)->attbyval)
			byval = false;
	Assert(desc->natts == natts);
	if (state->streaming && SjReadSideParallel(state, s))
		return;
	SjRowsAlloc(rows, natts, 1024);
	for (;;)
	{
		TupleTableSlot *slot = SjChildNext(state, child);
		Datum	   *dst;
		bool	   *dnull;

		if (slot == NULL)
			break;
		if (state->streaming)
		{
			/* counting: marshal the join value, keep nothing else */
			slot_getallattrs(slot);
			SjMarshalRow(state, s, rows->n++, slot->tts_values, slot->tts_isnull);
			continue;
		}
		if (rows->n == rows->cap)
		{
			rows->cap *= 2;
			rows->values = repalloc_huge(rows->values, rows->cap * Max(natts, 1) * sizeof(Datum));
			rows->isnull = repalloc_huge(rows->isnull, rows->cap * Max(natts, 1) * sizeof(bool));
		}
		dst = rows->values + rows->n * natts;
		dnull = rows->isnull + rows->n * natts;
		if (byval)
		{
			slot_getallattrs(slot);
			memcpy(dst, slot->tts_values, natts * sizeof(Datum));
			memcpy(dnull, slot->tts_isnull, natts * sizeof(bool));
		}
		else
		{
			/* a copy of the tuple; the values point into it */
			SjDeformMinimal(ExecCopySlotMinimalTuple(slot), desc, dst, dnull);
		}
		rows->n++;
	}
}

/*
 * Where the operator's part format can hold the inner's join columns: a
 * side of that format for this participant's share (its kind and the
 * columns' positions in the inner rows, 0 the key); NULL otherwise.  Every
 * participant comes to the same answer: it depends on the plan and on the
 * run's parameters only.
 */
static void *
SjInnerPartBegin(SjScanState *state, SjPartKind *kind, int *ncols, int *positions)
{
	Oid			typids[SJ_PART_MAX_COLS];
	void	   *model;

	if (state->source != SJ_SRC_ENGINE ||
		!SjSideSpec(state, 1, kind, &model, ncols, positions, typids) ||
		!SjPartTypesOk(*kind, *ncols, typids))
		return NULL;
	return SjPartSideBegin(*kind, *ncols, positions, typids, SjSideWhat(state), model);
}

/* Marshal one inner row of this participant's share into its part. */
static void
SjInnerPartRow(SjScanState *state, SjPartKind kind, void *part, int ncols,
			   const int *positions, int64 key, TupleTableSlot *slot)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	Datum		vals[SJ_PART_MAX_COLS];
	bool		nulls[SJ_PART_MAX_COLS];
	MemoryContext old;
	int			i;

	slot_getallattrs(slot);
	vals[0] = Int64GetDatum(key);
	nulls[0] = false;
	for (i = 1; i < ncols; i++)
	{
		vals[i] = slot->tts_values[positions[i] - 1];
		nulls[i] = slot->tts_isnull[positions[i] - 1];
	}
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	SjPartRowFn(kind) (part, vals, nulls);
	MemoryContextSwitchTo(old);
	ResetExprContext(econtext);
}

/*
 * This participant's share of the inner input: read its part of the inner
 * plan into chunks (and its join values into a part, where possible).
 */
static void
SjReadInnerShare(SjScanState *state, SjInnerShare *share, int slotno)
{
	PlanState  *child = list_nth(state->css.custom_ps, 1);
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	int			positions[SJ_PART_MAX_COLS];
	int			ncols = 0;
	SjPartKind	kind = SJ_PART_EPS;
	MemoryContext partcxt = AllocSetContextCreate(CurrentMemoryContext,
												  "simjoin shared inner part",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(partcxt);
	void	   *part = SjInnerPartBegin(state, &kind, &ncols, positions);
	SjInnerChunk *chunk = NULL;
	Size		cap = 0;

	MemoryContextSwitchTo(old);

	for (;;)
	{
		TupleTableSlot *slot = SjChildNext(state, child);
		MinimalTuple mt;
		bool		should_free;
		Size		len;

		if (slot == NULL)
			break;
		mt = ExecFetchSlotMinimalTuple(slot, &should_free);
		len = MAXALIGN(mt->t_len);
		if (chunk == NULL || chunk->used + len > cap)
		{
			dsa_pointer dp;

			cap = Max(SJ_INNER_CHUNK_SIZE - SJ_INNER_CHUNK_HEADER, len);
			dp = dsa_allocate_extended(area, SJ_INNER_CHUNK_HEADER + cap,
									   DSA_ALLOC_HUGE);
			/* linked in reading order, the share's own list */
			if (chunk == NULL)
				share->first = dp;
			else
				chunk->next = dp;
			chunk = dsa_get_address(area, dp);
			chunk->next = InvalidDsaPointer;
			chunk->ntuples = 0;
			chunk->used = 0;
		}
		memcpy(SjInnerChunkData(chunk) + chunk->used, mt, mt->t_len);
		chunk->used += len;
		chunk->ntuples++;
		if (should_free)
			pfree(mt);
		if (part != NULL)
			SjInnerPartRow(state, kind, part, ncols, positions,
						   SjShareKey(slotno, share->ntuples), slot);
		share->ntuples++;
	}
	state->inner_read = share->ntuples;
	if (part != NULL)
	{
		Size		size = SjPartSideSize(kind, part);
		dsa_pointer dp = dsa_allocate_extended(area, Max(size, 1), DSA_ALLOC_HUGE);

		SjPartSideWrite(kind, part, dsa_get_address(area, dp));
		share->part = dp;
	}
	/* the part is in shared memory now: free this process's copy */
	MemoryContextDelete(partcxt);
}

/*
 * Every share wrote a part: merge them into the engine's inner input, and
 * turn their keys (share, place) into row numbers of rows[1], where the
 * shares lie one after the other in slot order, as the merge puts them.
 */
static void
SjInnerMergeParts(SjScanState *state, int nshares, const int64 *base)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	SjParts		parts;
	int			positions[SJ_PART_MAX_COLS];
	Oid			typids[SJ_PART_MAX_COLS];
	int			ncols;
	SjPartKind	kind;
	void	   *side;
	int64	   *keys;
	int64		n,
				i;
	int			p;

	memset(&parts, 0, sizeof(parts));
	parts.nparts = nshares;
	parts.part = palloc(nshares * sizeof(char *));
	for (p = 0; p < nshares; p++)
		parts.part[p] = dsa_get_address(area, sh->share[p].part);
	parts.rows = state->rows[1].n;
	if (!SjSideSpec(state, 1, &kind, &side, &ncols, positions, typids))
		elog(ERROR, "shared inner parts without a side");
	SjSideAddParts(state, 1, side, &parts);
	if (state->op == SJ_OP_THETA)
		keys = SjThetaSideKeys(side, &n);
	else if (state->op == SJ_OP_EPS)
	{
		keys = state->eps_in[1].keys;
		n = state->eps_in[1].vectors.n;
	}
	else
	{
		keys = state->set_keys[1];
		n = state->set_in[1].n;
	}
	for (i = 0; keys != NULL && i < n; i++)
		keys[i] = base[keys[i] >> SJ_SHARE_KEY_BITS] +
			(keys[i] & ((INT64CONST(1) << SJ_SHARE_KEY_BITS) - 1));
	pfree(parts.part);
	state->inner_parts = nshares;
}

/*
 * Parallel-aware node: take a share of the inner input if it is still
 * being read (SjReadInnerShare), wait until every participant reading it is
 * done, then deform all of its rows, in place in shared memory, into
 * rows[1], and merge the shares' parts into the engine's input where each
 * wrote one.  False, having read nothing, where the node runs without
 * shared memory (no Gather set it up): the inner plan then returns all of
 * its rows to this process alone.
 */
static bool
SjReadInnerShared(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	PlanState  *child = list_nth(state->css.custom_ps, 1);
	TupleDesc	desc = ExecGetResultType(child);
	SjSideRows *rows = &state->rows[1];
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	int64	   *base;
	int64		total = 0;
	bool		all_parts = true;
	int			nshares,
				p;

	/* counting marshals rows as they are read (never parallel-aware) */
	if (sh == NULL || area == NULL || state->streaming)
		return false;
	Assert(desc->natts == state->natts[1]);
	state->inner_read = 0;
	if (BarrierAttach(&sh->barrier) == 0)
	{
		int			slotno;

		SpinLockAcquire(&sh->mutex);
		slotno = sh->nshares < sh->maxshares ? sh->nshares++ : -1;
		SpinLockRelease(&sh->mutex);
		if (slotno < 0)
			elog(ERROR, "more participants than planned read the shared inner input");
		SjReadInnerShare(state, &sh->share[slotno], slotno);
		BarrierArriveAndWait(&sh->barrier, PG_WAIT_EXTENSION);
	}
	BarrierDetach(&sh->barrier);

	/* phase 1: nobody writes any more */
	nshares = sh->nshares;
	base = palloc((nshares + 1) * sizeof(int64));
	for (p = 0; p < nshares; p++)
	{
		base[p] = total;
		total += sh->share[p].ntuples;
		if (!DsaPointerIsValid(sh->share[p].part))
			all_parts = false;
	}
	base[nshares] = total;
	state->inner_readers = nshares;
	SjRowsAlloc(rows, state->natts[1], Max(total, 1));
	for (p = 0; p < nshares; p++)
	{
		dsa_pointer dp;

		for (dp = sh->share[p].first; DsaPointerIsValid(dp);)
		{
			SjInnerChunk *chunk = dsa_get_address(area, dp);
			Size		off = 0;
			int64		n;

			for (n = 0; n < chunk->ntuples; n++)
			{
				MinimalTuple mt = (MinimalTuple) (SjInnerChunkData(chunk) + off);

				SjDeformMinimal(mt, desc, rows->values + rows->n * rows->natts,
								rows->isnull + rows->n * rows->natts);
				rows->n++;
				off += MAXALIGN(mt->t_len);
			}
			dp = chunk->next;
		}
		Assert(rows->n == base[p + 1]);
	}
	Assert(rows->n == total);
	if (all_parts && nshares > 0 && state->source == SJ_SRC_ENGINE)
		SjInnerMergeParts(state, nshares, base);
	pfree(base);
	return true;
}

/*
 * Begin the CPU engine over this participant's inputs with index_right, on
 * threads threads, and write its index of the inner (right) side into a
 * new chunk of the query's DSA area (*dp).  NULL where the engine keeps
 * none of that side (an engine without index_size, a theta nested loop, or
 * a range plan that sorts the outer side).
 */
static void *
SjSharedIndexBuild(SjScanState *state, int threads, dsa_area *area,
				   dsa_pointer *dp)
{
	SjJoinOptions options;
	SjRun		run;
	char		errmsg[SJ_ERRMSG_LEN] = "";
	SjStatus	st;
	void	   *volatile dst = NULL;

	SjJoinOptionsInit(&options, false);
	options.cpu_threads = Max(threads, 1);
	options.index_right = 1;
	options.index_only = 1;
	memset(&run, 0, sizeof(run));
	st = state->spec.begin(state->spec.arg, false, &options, &run, errmsg);
	if (st != SJ_OK)
	{
		if (run.handle != NULL)
			run.end(run.handle);
		SjReportStatus(st, errmsg, sj_op_names[state->op]);
	}
	PG_TRY();
	{
		Size		size = run.index_size ? run.index_size(run.handle) : 0;

		if (size > 0)
		{
			*dp = dsa_allocate_extended(area, size, DSA_ALLOC_HUGE);
			dst = dsa_get_address(area, *dp);
			run.index_write(run.handle, dst);
		}
	}
	PG_FINALLY();
	{
		run.end(run.handle);
	}
	PG_END_TRY();
	return dst;
}

/*
 * The CPU engine's index of the shared inner input, for this participant's
 * join to probe: built here by the first participant to ask, on the
 * threads of all participants (the others wait for it, idle), or waited
 * for.  NULL where the join builds its own: with simjoin.enable_shared_index
 * off, on the GPU, for jaccard (its
 * token dictionary spans both sides) and text and numeric theta columns
 * (ranked with the outer side's), where the inner's parts were not merged
 * (eps arguments that are expressions), or where the engine keeps no index
 * of the inner side.  An ERROR while building aborts the query, and with it
 * the participants waiting.
 */
static const void *
SjSharedIndex(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	double		t0 = sj_now_ms();
	bool		build = false;
	int			st;

	if (!sj_enable_shared_index || sh == NULL || area == NULL ||
		state->inner_parts == 0 || state->cursor.gpu || state->op == SJ_OP_JACCARD ||
		(state->op == SJ_OP_THETA &&
		 (!SjThetaSideUnranked(state->tp, 1) || !SjThetaIndexesInner(state->tp))))
		return NULL;
	SpinLockAcquire(&sh->mutex);
	if (sh->index_state == SJ_INDEX_NONE)
	{
		sh->index_state = SJ_INDEX_BUILDING;
		build = true;
	}
	SpinLockRelease(&sh->mutex);
	if (build)
	{
		dsa_pointer dp = InvalidDsaPointer;
		void	   *index;

		index = SjSharedIndexBuild(state, Max(sj_cpu_threads, state->workers + 1),
								   area, &dp);
		SpinLockAcquire(&sh->mutex);
		sh->index = dp;
		sh->index_state = index ? SJ_INDEX_READY : SJ_INDEX_UNUSABLE;
		st = sh->index_state;
		SpinLockRelease(&sh->mutex);
		ConditionVariableBroadcast(&sh->index_cv);
	}
	else
	{
		ConditionVariablePrepareToSleep(&sh->index_cv);
		for (;;)
		{
			SpinLockAcquire(&sh->mutex);
			st = sh->index_state;
			SpinLockRelease(&sh->mutex);
			if (st != SJ_INDEX_BUILDING)
				break;
			ConditionVariableSleep(&sh->index_cv, PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	state->index_ms = sj_now_ms() - t0;
	if (st != SJ_INDEX_READY)
		return NULL;
	state->index_role = build ? SJ_INDEX_ROLE_BUILT : SJ_INDEX_ROLE_PROBED;
	return dsa_get_address(area, sh->index);
}

/* Free the shared inner's chunks and parts and make it ready for a new run. */
static void
SjInnerReset(SjSharedInner *sh, dsa_area *area)
{
	int			p;

	for (p = 0; p < sh->maxshares; p++)
	{
		SjInnerShare *share = &sh->share[p];
		dsa_pointer dp = share->first;

		while (area != NULL && DsaPointerIsValid(dp))
		{
			dsa_pointer next = ((SjInnerChunk *) dsa_get_address(area, dp))->next;

			dsa_free(area, dp);
			dp = next;
		}
		if (area != NULL && DsaPointerIsValid(share->part))
			dsa_free(area, share->part);
		share->first = InvalidDsaPointer;
		share->part = InvalidDsaPointer;
		share->ntuples = 0;
	}
	if (area != NULL && DsaPointerIsValid(sh->index))
		dsa_free(area, sh->index);
	sh->index = InvalidDsaPointer;
	memset(SjWorkerReports(sh), 0, (sh->maxshares - 1) * sizeof(SjWorkerReport));
	sh->index_state = SJ_INDEX_NONE;
	ConditionVariableInit(&sh->index_cv);
	BarrierInit(&sh->barrier, 0);
	SpinLockInit(&sh->mutex);
	sh->nshares = 0;
}

/* A share for the leader and each planned worker. */
static Size
SjSharedInnerSize(int nworkers)
{
	return add_size(MAXALIGN(add_size(offsetof(SjSharedInner, share),
									  mul_size(nworkers + 1, sizeof(SjInnerShare)))),
					mul_size(nworkers, sizeof(SjWorkerReport)));
}

static Size
SjEstimateDSM(CustomScanState *node, ParallelContext *pcxt)
{
	return MAXALIGN(SjSharedInnerSize(pcxt->nworkers));
}

static void
SjInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	SjScanState *state = (SjScanState *) node;
	SjSharedInner *sh = coordinate;

	sh->maxshares = pcxt->nworkers + 1;
	SjInnerReset(sh, NULL);		/* without an area: frees nothing */
	state->shared = sh;
}

/* Before a rescan's new workers start: the inner is read again. */
static void
SjReInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	SjScanState *state = (SjScanState *) node;

	/* ExecParallelReinitialize installs the query's DSA area around this */
	SjInnerReset(state->shared, node->ss.ps.state->es_query_dsa);
}

static void
SjInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	((SjScanState *) node)->shared = coordinate;
}

/*
 * Before the parallel query's shared memory goes: a worker leaves its
 * report there, the leader copies the workers' (SjWorkerReport).
 */
static void
SjShutdownScan(CustomScanState *node)
{
	SjScanState *state = (SjScanState *) node;
	SjSharedInner *sh = state->shared;
	SjWorkerReport *reports;
	int			nworkers;

	if (sh == NULL)
		return;
	reports = SjWorkerReports(sh);
	nworkers = sh->maxshares - 1;
	if (IsParallelWorker())
	{
		SjWorkerReport *r;

		if (!state->loaded || ParallelWorkerNumber < 0 || ParallelWorkerNumber >= nworkers)
			return;
		r = &reports[ParallelWorkerNumber];
		r->index_role = state->index_role;
		r->index_ms = state->index_ms;
		r->inner_read = state->inner_read;
		r->stats = state->stats;
		pg_write_barrier();
		r->filled = true;
	}
	else
	{
		if (state->reports == NULL)
			state->reports = MemoryContextAllocZero(node->ss.ps.state->es_query_cxt,
													Max(nworkers, 1) * sizeof(SjWorkerReport));
		pg_read_barrier();
		memcpy(state->reports, reports, nworkers * sizeof(SjWorkerReport));
		state->nreports = nworkers;
	}
}

/* Fill the scan slot from an outer and an inner row's values (NULL: NULLs). */
static TupleTableSlot *
SjFillSlotFrom(SjScanState *state, const Datum *ov, const bool *on,
			   const Datum *iv, const bool *in)
{
	TupleTableSlot *slot = state->css.ss.ss_ScanTupleSlot;
	int			base1 = state->nprefix + state->natts[0];

	ExecClearTuple(slot);
	if (state->nprefix > 0)
		memset(slot->tts_isnull, true, state->nprefix * sizeof(bool));
	if (ov)
	{
		memcpy(slot->tts_values + state->nprefix, ov, state->natts[0] * sizeof(Datum));
		memcpy(slot->tts_isnull + state->nprefix, on, state->natts[0] * sizeof(bool));
	}
	else
		memset(slot->tts_isnull + state->nprefix, true, state->natts[0] * sizeof(bool));
	if (iv)
	{
		memcpy(slot->tts_values + base1, iv, state->natts[1] * sizeof(Datum));
		memcpy(slot->tts_isnull + base1, in, state->natts[1] * sizeof(bool));
	}
	else
		memset(slot->tts_isnull + base1, true, state->natts[1] * sizeof(bool));
	return ExecStoreVirtualTuple(slot);
}

/* Fill the scan slot with outer row i and inner row j (-1: NULLs). */
static TupleTableSlot *
SjFillSlot(SjScanState *state, int64 i, int64 j)
{
	SjSideRows *o = &state->rows[0];
	SjSideRows *n = &state->rows[1];

	return SjFillSlotFrom(state,
						  i >= 0 ? o->values + i * o->natts : NULL,
						  i >= 0 ? o->isnull + i * o->natts : NULL,
						  j >= 0 ? n->values + j * n->natts : NULL,
						  j >= 0 ? n->isnull + j * n->natts : NULL);
}

/* The value of side s's argument on a row of that side. */
static Datum
SjArgValue(SjScanState *state, int s, const Datum *values, const bool *nulls,
		   bool *isnull)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;

	if (state->arg_var[s] >= 0)
	{
		*isnull = nulls[state->arg_var[s]];
		return values[state->arg_var[s]];
	}
	econtext->ecxt_scantuple = s == 0 ?
		SjFillSlotFrom(state, values, nulls, NULL, NULL) :
		SjFillSlotFrom(state, NULL, NULL, values, nulls);
	return ExecEvalExprSwitchContext(state->arg[s], econtext, isnull);
}

/* Context of SjIndexVarsToSides. */
typedef struct SjSideVarsContext
{
	int			nprefix;
	int			outer_natts;
} SjSideVarsContext;

static Node *
SjIndexVarsMutator(Node *node, SjSideVarsContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		Var		   *v = copyObject((Var *) node);
		int			k = v->varattno - cxt->nprefix;

		v->varno = k <= cxt->outer_natts ? 1 : 2;
		v->varattno = k <= cxt->outer_natts ? k : k - cxt->outer_natts;
		return (Node *) v;
	}
	return expression_tree_mutator(node, SjIndexVarsMutator, (void *) cxt);
}

/*
 * The plan's theta condition, whose Vars refer to the scan tuple, with
 * Vars of side 1 (outer) and 2 (inner) numbered within their side's row:
 * the theta compiler's form.
 */
static Node *
SjIndexVarsToSides(Node *expr, int nprefix, int outer_natts)
{
	SjSideVarsContext cxt;

	cxt.nprefix = nprefix;
	cxt.outer_natts = outer_natts;
	return SjIndexVarsMutator(expr, &cxt);
}

/* Context of SjParamsToConsts. */
typedef struct SjParamContext
{
	PlanState  *ps;
	ExprContext *econtext;
} SjParamContext;

static Node *
SjParamsMutator(Node *node, SjParamContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param))
	{
		Param	   *p = (Param *) node;
		ExprState  *es = ExecInitExpr((Expr *) p, cxt->ps);
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(es, cxt->econtext, &isnull);
		int16		typlen;
		bool		typbyval;

		get_typlenbyval(p->paramtype, &typlen, &typbyval);
		if (!isnull)
			value = datumCopy(value, typbyval, typlen);
		return (Node *) makeConst(p->paramtype, p->paramtypmod, p->paramcollid,
								  typlen, value, isnull, typbyval);
	}
	return expression_tree_mutator(node, SjParamsMutator, (void *) cxt);
}

/*
 * The condition with each parameter (of a prepared statement, an initplan,
 * an enclosing query) replaced by its value for this run: constants the
 * theta compiler folds into its program.
 */
static Node *
SjParamsToConsts(SjScanState *state, Node *expr)
{
	SjParamContext cxt;

	cxt.ps = &state->css.ss.ps;
	cxt.econtext = state->css.ss.ps.ps_ExprContext;
	return SjParamsMutator(expr, &cxt);
}

/* Prepare the engine's input for the rows to come. */
static void
SjMarshalBegin(SjScanState *state)
{
	int			s;

	if (state->gis)
	{
		for (s = 0; s < 2; s++)
			state->pscan[s] = SjPointSideNew((state->gis & SJ_GIS_GEOGRAPHY) != 0,
											 "point");
	}
	else if (state->op == SJ_OP_EPS)
	{
		state->escan = palloc0(2 * sizeof(SjEpsScan));
		for (s = 0; s < 2; s++)
			SjEpsSideInit(&state->escan[s], "vector");	/* l2_distance's word */
	}
	else if (state->op == SJ_OP_JACCARD)
	{
		List	   *args = linitial(((CustomScan *) state->css.ss.ps.plan)->custom_exprs);

		state->dict = SjDictCreate(get_element_type(exprType(linitial(args))));
		state->sscan = palloc0(2 * sizeof(SjSetScan));
		for (s = 0; s < 2; s++)
			SjSetSideInit(&state->sscan[s], "set", state->dict);
	}
	else
		state->tp = SjThetaPrepare(SjParamsToConsts(state,
													SjIndexVarsToSides((Node *) make_ands_explicit(state->engine_exprs),
																	   state->nprefix, state->natts[0])),
								   state->streaming);	/* counting: no row numbers */
}

/* Marshal row r of side s: its join value (or values, for theta). */
static void
SjMarshalRow(SjScanState *state, int s, int64 r, const Datum *values,
			 const bool *nulls)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	Datum		vals[2];
	bool		isnull[2] = {false, false};
	MemoryContext old;

	if (state->op == SJ_OP_THETA)
	{
		SjThetaAddRow(state->tp, s, r, values, nulls);
		return;
	}
	vals[0] = Int64GetDatum(r);
	vals[1] = SjArgValue(state, s, values, nulls, &isnull[1]);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	if (state->gis)
		SjPointRow(state->pscan[s], vals, isnull);
	else if (state->op == SJ_OP_EPS)
		SjEpsRow(&state->escan[s], vals, isnull);
	else
		SjSetRow(&state->sscan[s], vals, isnull);
	MemoryContextSwitchTo(old);
	ResetExprContext(econtext);
}

/* Both sides are in: the engine's input and the spec that runs it. */
static void
SjMarshalEnd(SjScanState *state)
{
	int			s;

	memset(&state->spec, 0, sizeof(state->spec));
	state->spec.name = sj_op_names[state->op];
	if (state->gis)
	{
		SjEpsJob   *job = palloc0(sizeof(SjEpsJob));

		for (s = 0; s < 2; s++)
		{
			SjVectorInput *in = s == 0 ? &job->left : &job->right;

			if (state->side_done[s])
				*in = state->eps_in[s];
			else
				SjPointSideDone(state->pscan[s], NULL, in);
		}
		/* a superset of PostGIS's pairs; its own clause decides each */
		job->eps = SjPointEngineEps(state->pscan[0], state->pscan[1], &job->left,
									&job->right, state->param);
		job->metric = SJ_METRIC_L2;
		state->keys[0] = job->left.keys;
		state->keys[1] = job->right.keys;
		state->spec.arg = job;
		state->spec.begin = SjEpsBegin;
		state->stats.left_rows = job->left.vectors.n;
		state->stats.right_rows = job->right.vectors.n;
	}
	else if (state->op == SJ_OP_EPS)
	{
		SjEpsJob   *job = palloc0(sizeof(SjEpsJob));
		SjEpsScan  *sc = state->escan;

		for (s = 0; s < 2; s++)
		{
			SjVectorInput *in = s == 0 ? &job->left : &job->right;

			if (state->side_done[s])
				*in = state->eps_in[s];
			else
				SjEpsSideFinish(&sc[s], NULL, in);
		}
		/* in the order of l2_distance's arguments, as its own error */
		if (sc[0].dim >= 0 && sc[1].dim >= 0 && sc[0].dim != sc[1].dim)
			SjErrorDims(sc[state->swapped ? 1 : 0].dim, sc[state->swapped ? 0 : 1].dim);
		job->eps = state->param;
		job->metric = state->metric;
		state->keys[0] = job->left.keys;
		state->keys[1] = job->right.keys;
		state->spec.arg = job;
		state->spec.begin = SjEpsBegin;
		state->stats.left_rows = job->left.vectors.n;
		state->stats.right_rows = job->right.vectors.n;
	}
	else if (state->op == SJ_OP_JACCARD)
	{
		SjJaccardJob *job = palloc0(sizeof(SjJaccardJob));

		for (s = 0; s < 2; s++)
		{
			SjSets	   *in = s == 0 ? &job->left : &job->right;
			int64	  **keys = s == 0 ? &job->left_keys : &job->right_keys;

			if (state->side_done[s])
			{
				*in = state->set_in[s];
				*keys = state->set_keys[s];
			}
			else
				SjSetSideFinish(&state->sscan[s], NULL, in, keys);
		}
		job->left.universe = job->right.universe = SjDictSize(state->dict);
		job->threshold = state->param;
		state->keys[0] = job->left_keys;
		state->keys[1] = job->right_keys;
		state->spec.arg = job;
		state->spec.begin = SjJaccardBegin;
		state->stats.left_rows = job->left.n;
		state->stats.right_rows = job->right.n;
	}
	else
	{
		int64		nl,
					nr;

		SjThetaFinish(state->tp, &state->spec, &nl, &nr, state->stats.strategy,
					  sizeof(state->stats.strategy));
		state->keys[0] = state->keys[1] = NULL;	/* theta keys are row numbers */
		/* values the engines cannot compute exactly: PostgreSQL's operators */
		for (s = 0; s < 2; s++)
			state->aside[s] = SjThetaAside(state->tp, s, &state->keys[s]);
		if (state->aside[1])
		{
			int64		r;

			state->aside_rows = palloc_extended(Max(state->rows[1].n, 1) * sizeof(int64),
												MCXT_ALLOC_HUGE);
			for (r = 0; r < state->rows[1].n; r++)
				if (state->aside[1][r])
					state->aside_rows[state->naside_rows++] = r;
		}
		/* all of one side set aside: every pair by PostgreSQL's operators */
		if ((state->aside[0] || state->aside[1]) && (nl == 0 || nr == 0))
			state->source = SJ_SRC_NESTLOOP;
		state->stats.left_rows = nl;
		state->stats.right_rows = nr;
	}
}

/*
 * Where the pairs of this run come from: the engine, with the threshold
 * turned into the engine's parameter, or, outside the engines' domain, a
 * nested loop with PostgreSQL's own operators (NaN or infinite eps, a
 * Jaccard threshold <= 0), or nothing (a NULL threshold, or one no pair
 * can reach).
 */
static SjPairSource
SjChooseSource(SjScanState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	bool		isnull;
	double		c;

	if (state->op == SJ_OP_THETA)
		return SJ_SRC_ENGINE;
	c = DatumGetFloat8(ExecEvalExprSwitchContext(state->threshold, econtext, &isnull));
	ResetExprContext(econtext);
	if (isnull)
		return SJ_SRC_EMPTY;
	if (state->op == SJ_OP_EPS)
	{
		/* distances are >= 0 or NaN; NaN compares above every number */
		if (isnan(c) || c == INFINITY)
			return SJ_SRC_NESTLOOP;
		/* a negative tolerance: PostGIS's own error, on the first pair */
		if ((state->gis & SJ_GIS_TOLERANCE) && c < 0)
			return SJ_SRC_NESTLOOP;
		/* PostGIS's clause decides each pair the engine keeps */
		if (state->gis)
		{
			if (c < 0)
				return SJ_SRC_EMPTY;
			state->param = c;
			return SJ_SRC_ENGINE;
		}
		if (c < 0 || (state->strict && c <= 0))
			return SJ_SRC_EMPTY;
		state->param = state->strict ? nextafter(c, -INFINITY) : c;
	}
	else
	{
		/* similarities are in [0, 1] */
		if (isnan(c) || c > 1 || (state->strict && c >= 1))
			return SJ_SRC_EMPTY;
		if (c <= 0)
			return SJ_SRC_NESTLOOP;
		state->param = state->strict ? nextafter(c, INFINITY) : c;
	}
	return SJ_SRC_ENGINE;
}

/*
 * Eps over arrays (not PostGIS points, whose clause PostGIS decides): do
 * the vectors read differ in length, or is one of them one the
 * engines refuse (not one-dimensional, empty, with a NULL element)?  Then
 * l2_distance raises an error on the pairs it is evaluated on, and the node
 * evaluates the join pair by pair with PostgreSQL's operators, the other
 * join clauses first, as PostgreSQL's plans order the cheaper clauses
 * first: an error only where PostgreSQL's plan meets one too, not for rows
 * a hash join on the other clauses never pairs.
 */
static bool
SjVectorsIrregular(SjScanState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	int			dim = -1;
	int			s;
	int64		r;

	for (s = 0; s < 2; s++)
	{
		SjSideRows *rows = &state->rows[s];

		for (r = 0; r < rows->n; r++)
		{
			bool		isnull;
			Datum		d = SjArgValue(state, s, rows->values + r * rows->natts,
									   rows->isnull + r * rows->natts, &isnull);
			MemoryContext old;
			ArrayType  *a;
			bool		bad;

			if (isnull)
				continue;
			old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			a = DatumGetArrayTypeP(d);
			bad = ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] < 1 || array_contains_nulls(a) ||
				(dim >= 0 && ARR_DIMS(a)[0] != dim);
			if (!bad)
				dim = ARR_DIMS(a)[0];
			MemoryContextSwitchTo(old);
			ResetExprContext(econtext);
			if (bad)
				return true;
		}
	}
	return false;
}

/*
 * Is the node kept on the CPU engine by its plan?  Under simjoin.device =
 * auto it runs on the device the plan was costed on (SjCostPath); cpu and
 * gpu decide for themselves, as SjUseGpu does for every join.
 */
static bool
SjPlanKeepsCpu(SjScanState *state)
{
	return sj_device == SJ_DEVICE_AUTO && state->plan_cpu;
}

/* Read both inputs, marshal, and open the engine's cursor. */
static void
SjLoad(SjScanState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->cxt);
	bool		count_only;

	SjStatsStart(&state->stats, state->count ? "SimJoin count" : "SimJoin");
	strlcpy(state->stats.operator_name, sj_op_names[state->op],
			sizeof(state->stats.operator_name));
	state->t0 = sj_now_ms();
	state->fetch_ms = 0;
	state->source = SjChooseSource(state);
	/* before SjCursorOpen: under auto, the thread probes for the GPU too */
	if (state->source == SJ_SRC_ENGINE && !SjPlanKeepsCpu(state))
		SjStartDevice();
	/* counting with nothing else to check: the engine's count mode */
	count_only = state->source == SJ_SRC_ENGINE && state->count &&
		state->jointype == JOIN_INNER && state->residual == NULL && !state->gis;
	state->streaming = count_only;
	if (state->source == SJ_SRC_ENGINE)
		SjMarshalBegin(state);
	/* rows the engines may not compute exactly are joined from the rows kept */
	if (state->streaming && state->op == SJ_OP_THETA && SjThetaMayNeedRows(state->tp))
		state->streaming = false;
	if (!(state->streaming && SjReadBothParallel(state)))
	{
		SjReadSide(state, 0);
		if (!SjReadInnerShared(state))
			SjReadSide(state, 1);
	}
	if (state->jointype != JOIN_INNER)
		state->matched = palloc_extended(Max(state->rows[0].n, 1) * sizeof(bool),
										 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	state->residual_first = false;
	if (state->source == SJ_SRC_ENGINE && state->op == SJ_OP_EPS && !state->gis &&
		!state->streaming && !state->side_done[0] && !state->side_done[1] &&
		state->inner_parts == 0 && SjVectorsIrregular(state))
	{
		state->source = SJ_SRC_NESTLOOP;
		state->residual_first = true;
	}
	if (state->source == SJ_SRC_ENGINE)
	{
		int			s;
		int64		r;

		for (s = 0; s < 2 && !state->streaming; s++)
			for (r = 0; r < state->rows[s].n && !state->side_done[s]; r++)
				SjMarshalRow(state, s, r,
							 state->rows[s].values + r * state->natts[s],
							 state->rows[s].isnull + r * state->natts[s]);
		SjMarshalEnd(state);
		if (state->source == SJ_SRC_ENGINE && state->aside[0] == NULL &&
			state->aside[1] == NULL &&
			(state->stats.left_rows == 0 || state->stats.right_rows == 0))
			state->source = SJ_SRC_EMPTY;
	}
	if (state->source == SJ_SRC_ENGINE)
	{
		SjCursorOpen(&state->cursor, &state->spec, count_only);
		if (SjPlanKeepsCpu(state))
			state->cursor.gpu = false;
		/* the leader and each worker run a join: share the CPU's threads */
		if (state->workers > 0)
			state->cursor.cpu_threads = Max(1, sj_cpu_threads / (state->workers + 1));
		state->cursor.shared_index = SjSharedIndex(state);
	}
	else
	{
		strlcpy(state->stats.device, "none", sizeof(state->stats.device));
		strlcpy(state->stats.strategy,
				state->source == SJ_SRC_EMPTY ? "empty" : "nested loop (PostgreSQL)",
				sizeof(state->stats.strategy));
		state->stats.left_rows = state->rows[0].n;
		state->stats.right_rows = state->rows[1].n;
	}
	/* building or waiting for the shared index counts as building */
	state->stats.scan_ms = sj_now_ms() - state->t0 - state->index_ms;
	state->stats.build_ms += state->index_ms;
	state->load_done_ms = sj_now_ms();
	state->batch.count = 0;
	state->pos = 0;
	state->nl_i = 0;
	state->nl_j = 0;
	state->engine_done = false;
	state->unmatched_pos = 0;
	state->pairs_done = false;
	state->rows_out = 0;
	state->loaded = true;
	MemoryContextSwitchTo(old);
}

/*
 * The engine's next batch, fetched in the run's context (which owns the
 * engine handle); false when the join is done.
 */
static bool
SjFetch(SjScanState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->cxt);
	double		t = sj_now_ms();
	bool		more = SjCursorFetch(&state->cursor, &state->batch, &state->stats);

	state->fetch_ms += sj_now_ms() - t;
	MemoryContextSwitchTo(old);
	return more;
}

/*
 * The next pair with a row the theta engine did not see (SjThetaAside):
 * each outer row set aside with every inner row, then every other outer
 * row with each inner row set aside.  False when none is left.
 */
static bool
SjNextAsidePair(SjScanState *state, int64 *i, int64 *j)
{
	if (state->aside[0] == NULL && state->aside[1] == NULL)
		return false;
	while (state->nl_i < state->rows[0].n)
	{
		if (state->aside[0] && state->aside[0][state->nl_i])
		{
			if (state->nl_j < state->rows[1].n)
			{
				*i = state->nl_i;
				*j = state->nl_j++;
				return true;
			}
		}
		else if (state->nl_j < state->naside_rows)
		{
			*i = state->nl_i;
			*j = state->aside_rows[state->nl_j++];
			return true;
		}
		state->nl_i++;
		state->nl_j = 0;
		CHECK_FOR_INTERRUPTS();
	}
	return false;
}

/* The next candidate pair (outer row, inner row); false when none is left. */
static bool
SjNextPair(SjScanState *state, int64 *i, int64 *j)
{
	switch (state->source)
	{
		case SJ_SRC_ENGINE:
			while (!state->engine_done && state->pos >= state->batch.count)
			{
				state->pos = 0;
				if (!SjFetch(state))
					state->engine_done = true;
			}
			if (state->engine_done)
				return SjNextAsidePair(state, i, j);
			*i = state->batch.left[state->pos];
			*j = state->batch.right[state->pos];
			if (state->keys[0])
			{
				*i = state->keys[0][*i];
				*j = state->keys[1][*j];
			}
			state->pos++;
			return true;
		case SJ_SRC_NESTLOOP:
			if (state->nl_j >= state->rows[1].n)
			{
				state->nl_j = 0;
				state->nl_i++;
				CHECK_FOR_INTERRUPTS();
			}
			if (state->nl_i >= state->rows[0].n || state->rows[1].n == 0)
				return false;
			*i = state->nl_i;
			*j = state->nl_j++;
			return true;
		case SJ_SRC_EMPTY:
			return false;
	}
	return false;
}

/* Publish the statistics of a finished run. */
static void
SjFinish(SjScanState *state)
{
	if (state->finished)
		return;
	state->finished = true;
	state->stats.emit_ms = Max(0, sj_now_ms() - state->load_done_ms - state->fetch_ms);
	if (state->source != SJ_SRC_ENGINE)
		state->stats.pairs = 0;
	SjStatsFinish(&state->stats, state->t0);
}

/*
 * The next row of the join in the scan slot, or NULL: pairs that pass the
 * residual quals, then (left and anti joins) the unmatched outer rows.
 */
static TupleTableSlot *
SjNextRow(SjScanState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	JoinType	jt = state->jointype;
	int64		i,
				j;

	while (!state->pairs_done)
	{
		TupleTableSlot *slot;

		if (!SjNextPair(state, &i, &j))
		{
			state->pairs_done = true;
			break;
		}
		if ((jt == JOIN_SEMI || jt == JOIN_ANTI) && state->matched[i])
			continue;
		slot = SjFillSlot(state, i, j);
		if (state->source == SJ_SRC_NESTLOOP || state->engine_done || state->residual ||
			state->gis)
		{
			/* PostGIS's clause decides the pairs of an eps join of points */
			bool		by_pg = state->source == SJ_SRC_NESTLOOP || state->engine_done ||
				state->gis;

			econtext->ecxt_scantuple = slot;
			ResetExprContext(econtext);
			if (state->residual_first && !ExecQual(state->residual, econtext))
				continue;
			if (by_pg && !ExecQual(state->engine_qual, econtext))
				continue;
			if (!state->residual_first && !ExecQual(state->residual, econtext))
				continue;
		}
		if (jt != JOIN_INNER)
			state->matched[i] = true;
		if (jt == JOIN_ANTI)
			continue;
		if (jt == JOIN_SEMI)
			return SjFillSlot(state, i, -1);
		return slot;
	}
	if (jt == JOIN_LEFT || jt == JOIN_ANTI)
	{
		while (state->unmatched_pos < state->rows[0].n)
		{
			i = state->unmatched_pos++;
			if (!state->matched[i])
				return SjFillSlot(state, i, -1);
		}
	}
	SjFinish(state);
	return NULL;
}

/* ExecScan's access method. */
static TupleTableSlot *
SjScanAccess(ScanState *ss)
{
	SjScanState *state = (SjScanState *) ss;
	TupleTableSlot *slot;

	if (!state->loaded)
		SjLoad(state);
	if (state->finished)
		return ExecClearTuple(ss->ss_ScanTupleSlot);
	if (!state->count)
	{
		slot = SjNextRow(state);
		if (slot)
			state->rows_out++;
		return slot ? slot : ExecClearTuple(ss->ss_ScanTupleSlot);
	}
	else
	{
		/* the counting node: one row of count(*) values */
		int64		n = 0;
		int			k;

		if (state->source == SJ_SRC_ENGINE && state->cursor.count_only)
		{
			while (SjFetch(state))
				;				/* batches carry counts only */
			n = state->cursor.pairs;
			/* then the pairs of rows set aside */
			state->engine_done = true;
			while (SjNextRow(state) != NULL)
				n++;
		}
		else
		{
			while (SjNextRow(state) != NULL)
				n++;
		}
		slot = ss->ss_ScanTupleSlot;
		ExecClearTuple(slot);
		memset(slot->tts_isnull, true, slot->tts_tupleDescriptor->natts * sizeof(bool));
		for (k = 0; k < state->nprefix; k++)
		{
			slot->tts_values[k] = Int64GetDatum(n);
			slot->tts_isnull[k] = false;
		}
		state->rows_out = 1;
		return ExecStoreVirtualTuple(slot);
	}
}

static bool
SjScanRecheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
SjExecScan(CustomScanState *node)
{
	return ExecScan(&node->ss, SjScanAccess, SjScanRecheck);
}

/* Forget the current run: engine, device memory and rows. */
static void
SjResetRun(SjScanState *state)
{
	if (state->loaded && state->source == SJ_SRC_ENGINE)
		SjCursorClose(&state->cursor);
	MemoryContextReset(state->cxt);
	memset(&state->rows, 0, sizeof(state->rows));
	state->aside[0] = state->aside[1] = NULL;
	state->aside_rows = NULL;
	state->naside_rows = 0;
	memset(&state->batch, 0, sizeof(state->batch));
	state->matched = NULL;
	state->escan = NULL;
	state->pscan[0] = state->pscan[1] = NULL;
	state->sscan = NULL;
	state->dict = NULL;
	state->tp = NULL;
	state->side_done[0] = state->side_done[1] = false;
	state->inner_readers = 0;
	state->inner_parts = 0;
	state->inner_read = 0;
	state->index_role = SJ_INDEX_ROLE_NONE;
	state->index_ms = 0;
	state->loaded = false;
	state->finished = false;
}

static void
SjEndScan(CustomScanState *node)
{
	SjScanState *state = (SjScanState *) node;
	ListCell   *lc;

	if (state->loaded && !state->finished && state->source == SJ_SRC_ENGINE)
		SjCursorClose(&state->cursor);
	MemoryContextDelete(state->cxt);
	foreach(lc, node->custom_ps)
		ExecEndNode(lfirst(lc));
}

static void
SjRescan(CustomScanState *node)
{
	SjScanState *state = (SjScanState *) node;
	ListCell   *lc;

	SjResetRun(state);
	foreach(lc, node->custom_ps)
	{
		PlanState  *child = lfirst(lc);

		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(child, node->ss.ps.chgParam);
		if (child->chgParam == NULL)
			ExecReScan(child);
	}
}

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
							 "  Shared Inner Index: %s  Scan and Marshal Time: %.3f ms",
							 n, r->stats.pairs, r->stats.device, r->inner_read,
							 sj_index_role_names[r->index_role], r->stats.scan_ms);
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
		SjExplainMs("Scan and Marshal Time", r->stats.scan_ms, es);
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

static void
SjExplainScan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	SjScanState *state = (SjScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context;
	static const char *const theta_strategies[] = {"auto", "hash", "range", "nested loop"};
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
						psprintf("%s (count)", sj_op_names[state->op]) :
						sj_op_names[state->op], es);
	ExplainPropertyText("Join Type", jt, es);
	if (state->op == SJ_OP_EPS && state->metric == SJ_METRIC_COSINE)
		ExplainPropertyText("Metric", "cosine", es);
	if (state->gis)
		ExplainPropertyText("Metric", (state->gis & SJ_GIS_GEOGRAPHY) ?
							"geography (decided by PostGIS)" :
							"geometry (decided by PostGIS)", es);
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
							state->op == SJ_OP_EPS ? "grid or tiled brute force, chosen when run" :
							state->op == SJ_OP_JACCARD ?
							(gpu ? "prefix filter, brute-force overlap, bitmap or co-processing, chosen when run" :
							 "prefix filter") :
							theta_strategies[Max(0, Min(3, state->theta_strategy))], es);

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
		ExplainPropertyInteger("Pairs", NULL, state->stats.pairs, es);
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
			}
			SjExplainMs("Scan and Marshal Time", state->stats.scan_ms, es);
			if (strcmp(state->stats.device, "gpu") == 0)
				SjExplainMs("Device Start-up Time", state->stats.start_ms, es);
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

PG_FUNCTION_INFO_V1(simjoin_planner_support);

/*
 * Support function of l2_distance and jaccard.  It answers no request: the
 * planner calling it is what matters, since that loads this module (and
 * installs the hooks above) while the first query using them is planned.
 */
Datum
simjoin_planner_support(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(NULL);
}

/* Install the planner hooks and register the node (from _PG_init). */
void
SjCustomScanInit(void)
{
	RegisterCustomScanMethods(&sj_scan_methods);
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = SjJoinPathlist;
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = SjUpperPaths;
	prev_planner_hook = planner_hook;
	planner_hook = SjPlanner;
}
