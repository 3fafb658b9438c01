/*
 * customscan.h
 *		Custom Scan (SimJoin): the node's private types and the functions its
 *		files call across each other.
 *
 * The node is one family of files, by lifecycle: cs_planner.c (clause
 * matching, paths, plans, registration), cs_cost.c (the cost model),
 * cs_exec.c (execution), cs_sides.c (the operators' sides), cs_rows.c
 * (the rows kept), cs_parallel.c (parallel execution in shared memory) and
 * cs_explain.c (EXPLAIN).  Only they include this header; simjoin.h is the
 * module-wide one (SjCustomScanInit).
 */
#ifndef CUSTOMSCAN_H
#define CUSTOMSCAN_H

#include "access/parallel.h"
#include "commands/explain.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "storage/barrier.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/dsa.h"

#include "eps_join.h"
#include "jaccard_join.h"
#include "postgis.h"
#include "simjoin.h"
#include "sjdist.h"
#include "sjrun.h"
#include "sjtheta.h"
#include "theta_join.h"

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
	Expr	   *spheroid;		/* geography: use_spheroid, not a constant */
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
	bool		self;			/* a table joined with itself: one scan, each
								 * pair computed once (SjSelfJoinable) */
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
	SJ_PRIV_SELF,				/* a self-join read once (SjJoinPlanInfo.self) */
	SJ_PRIV_N
};

/* Indexes of CustomScan.custom_exprs (a list of lists). */
enum
{
	SJ_EXPR_ARGS,				/* eps/jaccard: outer arg, inner arg, threshold
								 * (geography: then a use_spheroid that is not
								 * a constant) */
	SJ_EXPR_ENGINE,				/* clauses the engine evaluates */
	SJ_EXPR_RESIDUAL,			/* other join clauses */
	SJ_EXPR_RECHECK,			/* every join clause, in the order a
								 * recheck evaluates them (SjScanRecheck) */
	SJ_EXPR_N
};

/* Where pairs come from in one run. */
typedef enum SjPairSource
{
	SJ_SRC_ENGINE,				/* the engine's cursor */
	SJ_SRC_NESTLOOP,			/* every pair, condition by PostgreSQL */
	SJ_SRC_EMPTY				/* no pair can satisfy the condition */
} SjPairSource;

/* Copies of by-reference values a node keeps (SjKeepValues); zeroed to begin. */
typedef struct SjKeptValues
{
	char	   *next;			/* the current block's free space */
	Size		left;
	Size		block;			/* the next block's size */
} SjKeptValues;

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
 * In phase 1 nobody writes the shares: every participant has all of the
 * inner rows, shares in slot order, each share's rows in reading order,
 * read in place, and merges the parts into its engine input instead of
 * marshalling every inner row itself.  Where the operator's sides can be
 * exported (SjSideMethods.export: PostGIS points), the first participant
 * past the barrier merges the parts once, lays the side out (its spatial
 * order) and writes the engine's input and the kept rows' order into the
 * DSA area (prepared, SjPreparedInner in cs_parallel.c), while the others
 * read their outer rows; then each reads the engine's input in place and
 * deforms the rows in that order.
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
	int			prep_state;		/* SjIndexState of the prepared inner,
								 * under mutex */
	dsa_pointer prepared;		/* SjPreparedInner, once READY */
	ConditionVariable prep_cv;	/* prep_state left BUILDING */
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
	int			prep_role;
	double		prep_ms;
	int64		inner_read;
	SjStats		stats;
} SjWorkerReport;

/*
 * A join clause comparing a column of each side with a btree operator
 * (a.id < b.id), decided on the rows' kept values before a pair's tuple is
 * formed (cs_rows.c): side[k] and col[k] are the operator's k-th argument.
 */
typedef struct SjColumnCompare
{
	int			side[2];
	int			col[2];
	Oid			collation;
	FmgrInfo	flinfo;
	int			fast;			/* SJ_CMP_*: an integer compare made inline */
	int			width;			/* ... of int2 (2), int4 (4) or int8 (8) */
} SjColumnCompare;

/* SjColumnCompare.fast: the comparison of two integers of one type */
#define SJ_CMP_CALL	0			/* none: the operator's function is called */
#define SJ_CMP_LT	1
#define SJ_CMP_LE	2
#define SJ_CMP_EQ	3
#define SJ_CMP_GE	4
#define SJ_CMP_GT	5
#define SJ_CMP_NE	6

/* What this participant did with the shared index (SjScanState.index_role). */
#define SJ_INDEX_ROLE_NONE		0
#define SJ_INDEX_ROLE_BUILT		1
#define SJ_INDEX_ROLE_PROBED	2

typedef struct SjScanState
{
	CustomScanState css;

	/* from the plan */
	SjOperator	op;
	const SjOperatorMethods *ops;	/* op's, or PostGIS points' */
	JoinType	jointype;
	bool		strict;
	bool		swapped;
	bool		count;
	int			metric;			/* eps: SjMetric */
	int			gis;			/* eps over PostGIS points: SJ_GIS_* flags */
	bool		self;			/* a self-join: the outer read once, the
								 * inner its copy (rows[1] = rows[0]), each
								 * row with itself (SjEpsSelfRows,
								 * SjJaccardSelfRows), then each engine pair
								 * in both orders */
	int			workers;
	bool		plan_cpu;		/* planned for the CPU engine (device = auto) */
	int			nprefix;
	int			natts[2];
	int			theta_strategy;
	List	   *engine_exprs;	/* plan's engine clauses (for theta) */
	ExprState  *arg[2];			/* eps/jaccard arguments, outer and inner */
	int			arg_var[2];		/* >= 0: the argument is that column */
	ExprState  *threshold;
	ExprState  *spheroid;		/* geography: use_spheroid, not a constant */
	ExprState  *engine_qual;	/* the engine's clauses, for the nested loop */
	ExprState  *residual;		/* other join clauses, but for compares */
	ExprState  *recheck_qual;	/* EvalPlanQual: every join clause */
	SjColumnCompare *compares;	/* join clauses decided on the kept values */
	int			ncompares;

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
	bool		mirror;			/* self: the last pair's other order next */
	int64		mirror_i;
	int64		mirror_j;
	const uint32 *self_rows;	/* self: engine rows joining themselves,
								 * formed before the engine's pairs */
	int64		nself_rows;
	int64		self_pos;		/* ... emitted so far */
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
	SjPointBounds gis_bounds;	/* points: settle candidates (SjPointSettle) */
	SjSettle	pair_settled;	/* ... the last pair */
	bool		streaming;		/* marshal while reading, keep no rows */
	const struct SjSideMethods *side_ops;	/* the operator's sides */
	void	   *sides;			/* the engine's input being built
								 * (cs_sides.c; theta: SjThetaPrepared) */
	bool		side_done[2];	/* side read by workers and finished */
	bool		side_shared[2]; /* ... prepared once for all participants:
								 * read only, in shared memory */
	int64		rows_out;
	SjSharedInner *shared;		/* parallel-aware: the shared inner input */
	int64		inner_read;		/* inner rows this participant read */
	int			inner_readers;	/* participants that read the inner */
	int			inner_parts;	/* their parts merged (0: marshalled here) */
	bool		inner_merge;	/* ... to be merged (SjReadInnerShared) */
	int			index_role;		/* SJ_INDEX_ROLE_* */
	double		index_ms;		/* building or waiting for the shared index */
	int			prep_role;		/* SJ_INDEX_ROLE_*: the prepared inner side
								 * built (BUILT) or read (PROBED) */
	double		prep_ms;		/* preparing or waiting for it */
	SjWorkerReport *reports;	/* leader: the workers', copied at shutdown */
	int			nreports;
	SjStats		stats;
	double		t0;
	double		fetch_ms;
	double		load_done_ms;
} SjScanState;

/*
 * One operator's sides in the node (cs_sides.c), a const table per operator
 * and PostGIS points: execution and the parallel protocol call these
 * instead of branching on the operator.
 */
typedef struct SjSideMethods
{
	SjPartKind	kind;			/* the part format workers build a side in */
	const char *what;			/* a side's values, in messages */
	bool		whole_rows;		/* row takes the input row, not (key, arg) */
	/* empty sides for a run, behind state->sides */
	void		(*begin) (SjScanState *state);
	/* marshal row r of side s: (key, argument) or the whole row */
	void		(*row) (SjScanState *state, int s, int64 r, Datum *values,
						bool *nulls);
	/* side s for workers to build (theta: its columns too) */
	void	   *(*side) (SjScanState *state, int s, int *ncols, int *positions,
						 Oid *typids);
	/* side s from the parts workers built, and its keys then */
	void		(*add_parts) (SjScanState *state, int s, void *side,
							  SjParts *parts);
	int64	   *(*keys) (SjScanState *state, int s, void *side, int64 *n);
	/* both sides in: the engine's job, state->spec's arg, keys and rows */
	void		(*end) (SjScanState *state);

	/*
	 * The shared inner side prepared once (cs_parallel.c), or NULL where
	 * each participant prepares its own: the order side s's engine rows
	 * are to take, its parts merged, for its nrows kept rows (the engine
	 * row at each place; NULL: theirs); the side written into dst in that
	 * order, the engine's row k then its kept row k (dst NULL: its size);
	 * read in place from src by every participant.
	 */
	uint32	   *(*order) (SjScanState *state, int s, int64 nrows);
	Size		(*export) (SjScanState *state, int s, const uint32 *order,
						   char *dst);
	void		(*import) (SjScanState *state, int s, const char *src);
	/*
	 * Once no engine reads the sides (the cursor closed, on a rescan or at
	 * the end, not on an abort): unmap what they kept mapped for it (NULL:
	 * nothing is kept)
	 */
	void		(*release) (SjScanState *state);
} SjSideMethods;

/* The paths offered for a join. */
typedef enum SjPathMode
{
	SJ_PATH_SERIAL,				/* one process reads both inputs */
	SJ_PATH_PARTIAL,			/* outer split across workers, each reads the inner */
	SJ_PATH_SHARED_INNER		/* outer split, inner read once by all together */
} SjPathMode;

/*
 * Rates of the cost model (cs_cost.c, measured with the others there) that
 * the counting node's path (cs_planner.c) uses too.
 */
#define SJ_MARSHAL_MS_PER_ROW	0.0002	/* keep a tuple, marshal its value */
/*
 * The counting node keeps no tuple: marshalling a value costs about 10 ns
 * a row on top of the input's scan (theta_join_count and SELECT count(*)
 * of its inputs, measured on the 2-core build machine, 2026-11-24).
 */
#define SJ_COUNT_MARSHAL_MS_PER_ROW	0.00002

/* cs_cost.c */
extern Cost SjMs(double ms);
extern double SjParallelDivisor(Path *path);
extern void SjCostPath(PlannerInfo *root, SjJoinPlanInfo *info,
					   Path *outer_path, Path *inner_path, double outer_rows,
					   double inner_rows, SjPathMode mode, Cost *startup,
					   Cost *total);
extern Cost SjParallelReadDiscount(PlannerInfo *root, SjJoinPlanInfo *info,
								   Path *path, Expr *arg);

/*
 * Is the node kept on the CPU engine by its plan?  Under simjoin.device =
 * auto it runs on the device the plan was costed on (SjCostPath); cpu and
 * gpu decide for themselves, as SjUseGpu does for every join.
 */
static inline bool
SjPlanKeepsCpu(SjScanState *state)
{
	return sj_device == SJ_DEVICE_AUTO && state->plan_cpu;
}

/*
 * The pairs a run formed of npairs of its engine: a self-join's in both
 * orders, and its rows that joined themselves so far (SjNextPair).
 */
static inline int64
SjPairsFormed(const SjScanState *state, int64 npairs)
{
	return state->self ? 2 * npairs + state->self_pos : npairs;
}

/* cs_exec.c */
extern Node *SjCreateScanState(CustomScan *cscan);

/* cs_sides.c */
extern const SjSideMethods *SjSideMethodsOf(SjOperator op, int gis);

/* cs_rows.c */
extern TupleTableSlot *SjChildNext(SjScanState *state, PlanState *child);
extern void SjRowsAlloc(SjSideRows *rows, int natts, int64 cap);
extern void SjDeformMinimal(MinimalTuple mt, TupleDesc desc, Datum *values,
							bool *nulls);
extern void SjKeepValues(SjKeptValues *kept, TupleDesc desc, Datum *values,
						 const bool *nulls);
extern int	SjArgColumn(Expr *arg, int base, int natts);
extern List *SjColumnComparesInit(SjScanState *state, List *clauses);
extern bool SjColumnComparesPass(SjScanState *state, int64 i, int64 j);
extern void SjRowsPermute(SjSideRows *rows, const uint32 *from, int64 n);

/* cs_parallel.c */
extern bool SjReadSideParallel(SjScanState *state, int s);
extern bool SjReadBothParallel(SjScanState *state);
extern bool SjReadInnerShared(SjScanState *state);
extern void SjReadInnerRows(SjScanState *state);
extern const void *SjSharedIndex(SjScanState *state);
extern Size SjEstimateDSM(CustomScanState *node, ParallelContext *pcxt);
extern void SjInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							void *coordinate);
extern void SjReInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
extern void SjInitializeWorker(CustomScanState *node, shm_toc *toc,
							   void *coordinate);
extern void SjShutdownScan(CustomScanState *node);

/* cs_explain.c */
extern void SjExplainScan(CustomScanState *node, List *ancestors,
						  ExplainState *es);

#endif							/* CUSTOMSCAN_H */
