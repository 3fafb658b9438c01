/*
 * cs_sides.c
 *		Custom Scan (SimJoin), the operators' sides: building the engine's
 *		input from the rows, one const table of methods per operator (and
 *		PostGIS points), the input behind one pointer (SjScanState.sides).
 *
 * Execution (cs_exec.c) and the parallel protocol (cs_parallel.c) call
 * these instead of branching on the operator: begin the sides, marshal a
 * row into side s, hand a side to parallel workers and merge their parts,
 * and, both sides in, make the engine's job and the spec that runs it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "customscan.h"

/* eps over vectors: each side as it is scanned, or as workers built it */
typedef struct SjEpsSides
{
	SjEpsScan	scan[2];
	SjVectorInput in[2];		/* a side finished from parts (side_done) */
} SjEpsSides;

/* eps over PostGIS points: postgis.c's sides */
typedef struct SjPointSides
{
	void	   *scan[2];
	SjVectorInput in[2];
} SjPointSides;

/* Jaccard: sets encoded with one dictionary for both sides */
typedef struct SjSetSides
{
	SjDict	   *dict;
	SjSetScan	scan[2];
	SjSets		in[2];
	int64	   *keys[2];
} SjSetSides;

/* theta: the sides behind SjThetaPrepared (theta_join.c) */

/* ---------------------------------------------------------------------
 * eps over vectors
 * --------------------------------------------------------------------- */

/* SjSideMethods.begin: two empty sides. */
static void
SjEpsSidesBegin(SjScanState *state)
{
	SjEpsSides *sd = palloc0(sizeof(SjEpsSides));
	bool		gpu = !SjPlanKeepsCpu(state) && SjGpuLikely();
	int			s;

	for (s = 0; s < 2; s++)
	{
		SjEpsSideInit(&sd->scan[s], "vector");	/* l2_distance's word */

		/*
		 * real[] vectors stay real rows for the GPU, which transposes and
		 * widens them itself: this process's rows, and the parts of the
		 * workers that read a counted side (SjReadSideParallel), kept
		 * mapped until SjEpsSidesRelease (for any engine under
		 * simjoin.debug_row_pieces, as in the function form)
		 */
		sd->scan[s].keep_real = sd->scan[s].keep_rows = gpu || sj_debug_row_pieces;
	}
	state->sides = sd;
}

/*
 * SjSideMethods.release: unmap the workers' parts that the sides kept for
 * the engine (SjEpsSideFinish), once it has ended.  An abort unmaps them
 * through its resource owner instead, having stopped the engine first
 * (parscan.c's SjKeptPartDetach, SjStopLiveJoin: the spec names them,
 * SjEpsSidesEnd).
 */
static void
SjEpsSidesRelease(SjScanState *state)
{
	SjEpsSides *sd = state->sides;

	SjEpsSideUnmap(&sd->scan[0]);
	SjEpsSideUnmap(&sd->scan[1]);
}

/* SjSideMethods.row: one row's key and vector. */
static void
SjEpsSidesRow(SjScanState *state, int s, int64 r, Datum *values, bool *nulls)
{
	SjEpsSides *sd = state->sides;

	SjEpsRow(&sd->scan[s], values, nulls);
}

/* SjSideMethods.side: side s, for workers to build in its part format. */
static void *
SjEpsSidesSide(SjScanState *state, int s, int *ncols, int *positions, Oid *typids)
{
	SjEpsSides *sd = state->sides;

	return &sd->scan[s];
}

/* SjSideMethods.add_parts: side s from the parts workers built. */
static void
SjEpsSidesAddParts(SjScanState *state, int s, void *side, SjParts *parts)
{
	SjEpsSides *sd = state->sides;

	SjEpsSideFinish(side, parts, &sd->in[s]);
}

/* SjSideMethods.keys: side s's keys once its parts are in. */
static int64 *
SjEpsSidesKeys(SjScanState *state, int s, void *side, int64 *n)
{
	SjEpsSides *sd = state->sides;

	*n = sd->in[s].vectors.n;
	return sd->in[s].keys;
}

/*
 * Are keys, the engine's rows' keys, the row numbers 0 .. n - 1 of side
 * rows (the rows past n, if any, not the engine's)?  Then the engine's row
 * numbers are the kept rows' and emitting a pair reads no key.
 */
static bool
SjKeysAreRows(const int64 *keys, int64 n, const SjSideRows *rows)
{
	int64		k;

	if (keys == NULL || n > rows->n)
		return false;
	for (k = 0; k < n; k++)
		if (keys[k] != k)
			return false;
	return true;
}

/* The run of an eps join (vectors or PostGIS points): keys, spec, rows. */
static void
SjEpsJobReady(SjScanState *state, SjEpsJob *job)
{
	state->keys[0] = job->left.keys;
	state->keys[1] = job->right.keys;
	if (!state->streaming &&
		SjKeysAreRows(job->left.keys, job->left.vectors.n, &state->rows[0]) &&
		SjKeysAreRows(job->right.keys, job->right.vectors.n, &state->rows[1]))
		state->keys[0] = state->keys[1] = NULL;
	state->spec.arg = job;
	state->stats.left_rows = job->left.vectors.n;
	state->stats.right_rows = job->right.vectors.n;
}

/* SjSideMethods.end: the eps job over both sides. */
static void
SjEpsSidesEnd(SjScanState *state)
{
	SjEpsSides *sd = state->sides;
	SjEpsJob   *job = palloc0(sizeof(SjEpsJob));
	SjEpsScan  *sc = sd->scan;
	int			s;

	for (s = 0; s < (state->self ? 1 : 2); s++)
	{
		SjVectorInput *in = s == 0 ? &job->left : &job->right;

		if (state->side_done[s])
			*in = sd->in[s];
		else
			SjEpsSideFinish(&sc[s], NULL, in);
	}
	/* in the order of l2_distance's arguments, as its own error */
	if (!state->self && sc[0].dim >= 0 && sc[1].dim >= 0 && sc[0].dim != sc[1].dim)
		SjErrorDims(sc[state->swapped ? 1 : 0].dim, sc[state->swapped ? 0 : 1].dim);
	job->eps = state->param;
	job->metric = state->metric;
	/* the workers' parts its engine reads in place, kept for it */
	state->spec.reads[0] = SjPartsToken(sc[0].kept);
	state->spec.reads[1] = SjPartsToken(sc[1].kept);
	if (state->self)
	{
		/* the engine's self-join; each row with itself decided here */
		job->self = true;
		job->right = job->left;
		state->self_rows = SjEpsSelfRows(job, &state->nself_rows);
	}
	SjEpsJobReady(state, job);
}

/* ---------------------------------------------------------------------
 * eps over PostGIS points
 * --------------------------------------------------------------------- */

/* SjSideMethods.begin: two empty sides of points. */
static void
SjPointSidesBegin(SjScanState *state)
{
	SjPointSides *sd = palloc0(sizeof(SjPointSides));
	int			s;

	for (s = 0; s < 2; s++)
		sd->scan[s] = SjPointSideNew((state->gis & SJ_GIS_GEOGRAPHY) != 0,
									 "point");
	state->sides = sd;
}

/* SjSideMethods.row: one row's key and point. */
static void
SjPointSidesRow(SjScanState *state, int s, int64 r, Datum *values, bool *nulls)
{
	SjPointSides *sd = state->sides;

	SjPointRow(sd->scan[s], values, nulls);
}

/* SjSideMethods.side: side s, for workers to build in its part format. */
static void *
SjPointSidesSide(SjScanState *state, int s, int *ncols, int *positions, Oid *typids)
{
	SjPointSides *sd = state->sides;

	return sd->scan[s];
}

/* SjSideMethods.add_parts: side s from the parts workers built. */
static void
SjPointSidesAddParts(SjScanState *state, int s, void *side, SjParts *parts)
{
	SjPointSides *sd = state->sides;

	SjPointSideDone(side, parts, &sd->in[s]);
}

/* SjSideMethods.keys: side s's keys once its parts are in. */
static int64 *
SjPointSidesKeys(SjScanState *state, int s, void *side, int64 *n)
{
	SjPointSides *sd = state->sides;

	*n = sd->in[s].vectors.n;
	return sd->in[s].keys;
}

/* Bits 0..15 of v spread to the even bits of the result. */
static inline uint32
SjSpreadBits(uint32 v)
{
	v &= 0xFFFF;
	v = (v | (v << 8)) & 0x00FF00FF;
	v = (v | (v << 4)) & 0x0F0F0F0F;
	v = (v | (v << 2)) & 0x33333333;
	v = (v | (v << 1)) & 0x55555555;
	return v;
}

/*
 * The Morton order of a side's points (the first two coordinates, on a
 * 2^12 grid over the side's bounds), for a side of nrows kept rows: order,
 * the engine row to take place k, or NULL where the side keeps its order.
 * The engines hand pairs out by grid cell, and a cell's rows are then next
 * to each other in the kept rows too: forming a pair reads lines of memory
 * the pairs before it read, where in reading order (spatially random)
 * nearly every pair missed the caches on each side.  A stable radix sort
 * of the codes, so the order only depends on the input.  Geometry only (a
 * geography side holds more than its dim coordinates).
 */
static uint32 *
SjPointOrder(SjScanState *state, const SjVectorInput *in, int64 nrows)
{
	uint32		n = in->vectors.n;
	int			dim = in->vectors.dim;
	const double *x = in->vectors.coords;
	const double *y = x + n;
	double		mn[2] = {INFINITY, INFINITY};
	double		mx[2] = {-INFINITY, -INFINITY};
	double		scale[2];
	uint64	   *code;
	uint32	   *order;
	uint32		k;
	int			d;
	int			threads;

	/* each participant of a parallel join its share of the threads */
	threads = Max(1, sj_cpu_threads / (state->workers + 1));
	if (n < 2 || dim < 2 || in->keys == NULL || (int64) n > nrows ||
		!(state->gis & SJ_GIS_GEOMETRY))
		return NULL;
	for (k = 0; k < n; k++)
	{
		if (in->keys[k] < 0 || in->keys[k] >= nrows)
			return NULL;
		mn[0] = Min(mn[0], x[k]);
		mx[0] = Max(mx[0], x[k]);
		mn[1] = Min(mn[1], y[k]);
		mx[1] = Max(mx[1], y[k]);
	}
	for (d = 0; d < 2; d++)
		scale[d] = mx[d] > mn[d] ? 4095.0 / (mx[d] - mn[d]) : 0.0;
	code = palloc_extended((Size) n * sizeof(uint64), MCXT_ALLOC_HUGE);
	order = palloc_extended((Size) n * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (k = 0; k < n; k++)
	{
		double		qx = Min((x[k] - mn[0]) * scale[0], 4095.0);
		double		qy = Min((y[k] - mn[1]) * scale[1], 4095.0);

		code[k] = SjSpreadBits((uint32) qx) | (SjSpreadBits((uint32) qy) << 1);
		order[k] = k;
	}
	/* the engine's stable sort: the same order on any number of threads */
	if (!sj_radix_sort(code, order, n, 24, threads))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory ordering %u points", n)));
	pfree(code);
	return order;
}

/*
 * Lay side s's engine rows and kept rows out in the Morton order of their
 * points (SjPointOrder), the engine's row k becoming kept row k: the
 * coordinates in place, the keys the row numbers.  Not where no rows are
 * kept (counting), nor for a side prepared in shared memory, which its
 * preparer laid out (SjPointSidesExport).
 */
static void
SjPointSpatialOrder(SjScanState *state, int s, SjVectorInput *in)
{
	SjSideRows *rows = &state->rows[s];
	uint32		n = in->vectors.n;
	uint32	   *order;
	double	   *column;
	uint32		k;
	int			d;

	if (rows->values == NULL || state->side_shared[s])
		return;
	order = SjPointOrder(state, in, rows->n);
	if (order == NULL)
		return;
	/* the coordinates, a column at a time (order[k]: the row at k) */
	column = palloc_extended((Size) n * sizeof(double), MCXT_ALLOC_HUGE);
	for (d = 0; d < in->vectors.dim; d++)
	{
		double	   *c = (double *) in->vectors.coords + (Size) d * n;

		for (k = 0; k < n; k++)
			column[k] = c[order[k]];
		memcpy(c, column, (Size) n * sizeof(double));
	}
	pfree(column);
	/* the kept rows by the keys, which become the row numbers */
	for (k = 0; k < n; k++)
		order[k] = (uint32) in->keys[order[k]];
	for (k = 0; k < n; k++)
		in->keys[k] = k;
	SjRowsPermute(rows, order, n);
	pfree(order);
}

/* SjSideMethods.order: side s (parts merged), its points' spatial order. */
static uint32 *
SjPointSidesOrder(SjScanState *state, int s, int64 nrows)
{
	SjPointSides *sd = state->sides;

	return SjPointOrder(state, &sd->in[s], nrows);
}

/*
 * SjSideMethods.export: side s (parts merged), its engine rows in order,
 * into dst for the other participants (dst NULL: its size).  Its local
 * copy is freed once written.
 */
static Size
SjPointSidesExport(SjScanState *state, int s, const uint32 *order, char *dst)
{
	SjPointSides *sd = state->sides;

	return SjPointSideExport(sd->scan[s], &sd->in[s], order, dst);
}

/* SjSideMethods.import: side s as a participant exported it, read in place. */
static void
SjPointSidesImport(SjScanState *state, int s, const char *src)
{
	SjPointSides *sd = state->sides;

	SjPointSideImport(sd->scan[s], src, &sd->in[s]);
}

/* SjSideMethods.end: the eps job over both sides of points. */
static void
SjPointSidesEnd(SjScanState *state)
{
	SjPointSides *sd = state->sides;
	SjEpsJob   *job = palloc0(sizeof(SjEpsJob));
	int			s;

	for (s = 0; s < 2; s++)
	{
		SjVectorInput *in = s == 0 ? &job->left : &job->right;

		if (state->side_done[s])
			*in = sd->in[s];
		else
			SjPointSideDone(sd->scan[s], NULL, in);
		if (!state->streaming)
			SjPointSpatialOrder(state, s, in);
	}
	/* a superset of PostGIS's pairs; its own clause decides the band */
	job->eps = SjPointEngineEps(sd->scan[0], sd->scan[1], &job->left,
								&job->right, state->param, state->gis,
								&state->gis_bounds);
	job->metric = SJ_METRIC_L2;
	SjEpsJobReady(state, job);
}

/* ---------------------------------------------------------------------
 * Jaccard
 * --------------------------------------------------------------------- */

/* SjSideMethods.begin: a dictionary of the sets' element type, two sides. */
static void
SjSetSidesBegin(SjScanState *state)
{
	List	   *args = linitial(((CustomScan *) state->css.ss.ps.plan)->custom_exprs);
	SjSetSides *sd = palloc0(sizeof(SjSetSides));
	int			s;

	sd->dict = SjDictCreate(get_element_type(exprType(linitial(args))));
	for (s = 0; s < 2; s++)
		SjSetSideInit(&sd->scan[s], "set", sd->dict);
	state->sides = sd;
}

/* SjSideMethods.row: one row's key and set. */
static void
SjSetSidesRow(SjScanState *state, int s, int64 r, Datum *values, bool *nulls)
{
	SjSetSides *sd = state->sides;

	SjSetRow(&sd->scan[s], values, nulls);
}

/* SjSideMethods.side: side s, for workers to build in its part format. */
static void *
SjSetSidesSide(SjScanState *state, int s, int *ncols, int *positions, Oid *typids)
{
	SjSetSides *sd = state->sides;

	return &sd->scan[s];
}

/* SjSideMethods.add_parts: side s from the parts workers built. */
static void
SjSetSidesAddParts(SjScanState *state, int s, void *side, SjParts *parts)
{
	SjSetSides *sd = state->sides;

	SjSetSideFinish(side, parts, &sd->in[s], &sd->keys[s]);
}

/* SjSideMethods.keys: side s's keys once its parts are in. */
static int64 *
SjSetSidesKeys(SjScanState *state, int s, void *side, int64 *n)
{
	SjSetSides *sd = state->sides;

	*n = sd->in[s].n;
	return sd->keys[s];
}

/* SjSideMethods.end: the Jaccard job over both sides. */
static void
SjSetSidesEnd(SjScanState *state)
{
	SjSetSides *sd = state->sides;
	SjJaccardJob *job = palloc0(sizeof(SjJaccardJob));
	int			s;

	for (s = 0; s < (state->self ? 1 : 2); s++)
	{
		SjSets	   *in = s == 0 ? &job->left : &job->right;
		int64	  **keys = s == 0 ? &job->left_keys : &job->right_keys;

		if (state->side_done[s])
		{
			*in = sd->in[s];
			*keys = sd->keys[s];
		}
		else
			SjSetSideFinish(&sd->scan[s], NULL, in, keys);
	}
	job->left.universe = job->right.universe = SjDictSize(sd->dict);
	job->threshold = state->param;
	if (state->self)
	{
		/* the engine's self-join; each set with itself decided here */
		job->self = true;
		job->right = job->left;
		job->right_keys = job->left_keys;
		state->self_rows = SjJaccardSelfRows(job, &state->nself_rows);
	}
	state->keys[0] = job->left_keys;
	state->keys[1] = job->right_keys;
	state->spec.arg = job;
	state->stats.left_rows = job->left.n;
	state->stats.right_rows = job->right.n;
}

/* ---------------------------------------------------------------------
 * theta
 * --------------------------------------------------------------------- */

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

/* SjSideMethods.begin: the plan's condition compiled for this run. */
static void
SjThetaSidesBegin(SjScanState *state)
{
	state->sides = SjThetaPrepare(SjParamsToConsts(state,
												   SjIndexVarsToSides((Node *) make_ands_explicit(state->engine_exprs),
																	  state->nprefix, state->natts[0])),
								  state->streaming);	/* counting: no row numbers */
}

/* SjSideMethods.row: row r of side s, all its values. */
static void
SjThetaSidesRow(SjScanState *state, int s, int64 r, Datum *values, bool *nulls)
{
	SjThetaAddRow(state->sides, s, r, values, nulls);
}

/* SjSideMethods.side: side s and its columns, for workers to build. */
static void *
SjThetaSidesSide(SjScanState *state, int s, int *ncols, int *positions, Oid *typids)
{
	return SjThetaPreparedSide(state->sides, s, ncols, positions, typids);
}

/* SjSideMethods.add_parts: side s from the parts workers built. */
static void
SjThetaSidesAddParts(SjScanState *state, int s, void *side, SjParts *parts)
{
	SjThetaSideAddParts(side, parts);
}

/* SjSideMethods.keys: side s's keys once its parts are in. */
static int64 *
SjThetaSidesKeys(SjScanState *state, int s, void *side, int64 *n)
{
	return SjThetaSideKeys(side, n);
}

/* SjSideMethods.end: the theta job, and the rows it sets aside. */
static void
SjThetaSidesEnd(SjScanState *state)
{
	int64		nl,
				nr;
	int			s;

	SjThetaFinish(state->sides, &state->spec, &nl, &nr, state->stats.strategy,
				  sizeof(state->stats.strategy));
	state->keys[0] = state->keys[1] = NULL;	/* theta keys are row numbers */
	/* values the engines cannot compute exactly: PostgreSQL's operators */
	for (s = 0; s < 2; s++)
		state->aside[s] = SjThetaAside(state->sides, s, &state->keys[s]);
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

/* ---------------------------------------------------------------------
 * The tables
 * --------------------------------------------------------------------- */

static const SjSideMethods sj_eps_sides = {
	SJ_PART_EPS, "vector", false, SjEpsSidesBegin, SjEpsSidesRow,
	SjEpsSidesSide, SjEpsSidesAddParts, SjEpsSidesKeys, SjEpsSidesEnd,
	NULL, NULL, NULL, SjEpsSidesRelease
};

static const SjSideMethods sj_point_sides = {
	SJ_PART_POINTS, "point", false, SjPointSidesBegin, SjPointSidesRow,
	SjPointSidesSide, SjPointSidesAddParts, SjPointSidesKeys, SjPointSidesEnd,
	SjPointSidesOrder, SjPointSidesExport, SjPointSidesImport, NULL
};

static const SjSideMethods sj_set_sides = {
	SJ_PART_SETS, "set", false, SjSetSidesBegin, SjSetSidesRow,
	SjSetSidesSide, SjSetSidesAddParts, SjSetSidesKeys, SjSetSidesEnd,
	NULL, NULL, NULL, NULL
};

/* (its part format ignores "what": the columns name themselves) */
static const SjSideMethods sj_theta_sides = {
	SJ_PART_THETA, "set", true, SjThetaSidesBegin, SjThetaSidesRow,
	SjThetaSidesSide, SjThetaSidesAddParts, SjThetaSidesKeys, SjThetaSidesEnd,
	NULL, NULL, NULL, NULL
};

/* The side methods of a node's operator (PostGIS points apart). */
const SjSideMethods *
SjSideMethodsOf(SjOperator op, int gis)
{
	if (gis)
		return &sj_point_sides;
	switch (op)
	{
		case SJ_OP_EPS:
			return &sj_eps_sides;
		case SJ_OP_JACCARD:
			return &sj_set_sides;
		case SJ_OP_THETA:
			break;
	}
	return &sj_theta_sides;
}
