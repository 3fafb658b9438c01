/*
 * cs_exec.c
 *		Custom Scan (SimJoin), execution: state, loading, pairs and rows.
 *
 * The node reads both inputs to the end (a table joined with itself, once:
 * SjSelfJoinable), keeping each row's values (a copy of its tuple),
 * evaluates the condition's arguments on each row and marshals them for
 * the engine, then streams the engine's pair batches
 * through a cursor (sjrun.c): each pair becomes a scan tuple (outer
 * columns, then inner columns), filtered by the residual quals and projected
 * by ExecScan.  Left and anti joins track matched outer rows; semi joins
 * emit an outer row at its first match.  A threshold outside the engines'
 * domain (NaN or infinite eps, a Jaccard threshold <= 0), and vectors of
 * different lengths, are evaluated row pair by row pair with PostgreSQL's
 * own operators, so the answer is always that of the SQL; the rows whose
 * dates or timestamps a theta condition's arithmetic cannot compute exactly
 * on the engines (infinities, values near the types' limits) are set aside
 * and joined that way with every row of the other side, the engine joining
 * the rest.  All memory, engine and device memory included, belongs to one
 * context reset on rescan and at the end.  Reading an input with parallel
 * workers and the shared inner input are in cs_parallel.c, the operators'
 * sides in cs_sides.c, the kept rows in cs_rows.c, EXPLAIN in cs_explain.c.
 */

#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "customscan.h"

static void SjBeginScan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *SjExecScan(CustomScanState *node);
static void SjEndScan(CustomScanState *node);
static void SjRescan(CustomScanState *node);

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

/* Each SjOperator's methods (PostGIS points: sj_point_methods). */
static const SjOperatorMethods *const sj_op_methods[] = {
	&sj_eps_methods, &sj_jaccard_methods, &sj_theta_methods
};

/* ---------------------------------------------------------------------
 * Executor
 * --------------------------------------------------------------------- */

/* A new node's scan state (CustomScanMethods). */
Node *
SjCreateScanState(CustomScan *cscan)
{
	SjScanState *state = palloc0(sizeof(SjScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &sj_exec_methods;
	return (Node *) state;
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
	state->self = intVal(list_nth(priv, SJ_PRIV_SELF));
	/* until the sides are known: PostGIS decides */
	state->gis_bounds.lo = -1.0;
	state->gis_bounds.band = NULL;
	state->ops = state->gis ? &sj_point_methods : sj_op_methods[state->op];
	state->side_ops = SjSideMethodsOf(state->op, state->gis);
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
		if (list_length(args) > 3)
			state->spheroid = ExecInitExpr(lfourth(args), &node->ss.ps);
	}
	state->engine_qual = ExecInitQual(state->engine_exprs, &node->ss.ps);
	state->residual = ExecInitQual(SjColumnComparesInit(state, lthird(cscan->custom_exprs)),
								   &node->ss.ps);
	state->recheck_qual = ExecInitQual(list_nth(cscan->custom_exprs, SJ_EXPR_RECHECK),
									   &node->ss.ps);
	state->cxt = AllocSetContextCreate(estate->es_query_cxt, "SimJoin",
									   ALLOCSET_DEFAULT_SIZES);
}

static void SjMarshalRow(SjScanState *state, int s, int64 r, const Datum *values,
						 const bool *nulls);
static void SjReleaseSides(SjScanState *state);

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
	SjKeptValues kept = {0};

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
		slot_getallattrs(slot);
		memcpy(dst, slot->tts_values, natts * sizeof(Datum));
		memcpy(dnull, slot->tts_isnull, natts * sizeof(bool));
		if (!byval)
			SjKeepValues(&kept, desc, dst, dnull);	/* the values, copied */
		rows->n++;
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

/* Marshal row r of side s: its join value (or values, for theta). */
static void
SjMarshalRow(SjScanState *state, int s, int64 r, const Datum *values,
			 const bool *nulls)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	Datum		vals[2];
	bool		isnull[2] = {false, false};
	MemoryContext old;

	if (state->side_ops->whole_rows)
	{
		state->side_ops->row(state, s, r, (Datum *) values, (bool *) nulls);
		return;
	}
	vals[0] = Int64GetDatum(r);
	vals[1] = SjArgValue(state, s, values, nulls, &isnull[1]);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	state->side_ops->row(state, s, r, vals, isnull);
	MemoryContextSwitchTo(old);
	ResetExprContext(econtext);
}

/* Both sides are in: the engine's input and the spec that runs it. */
static void
SjMarshalEnd(SjScanState *state)
{
	memset(&state->spec, 0, sizeof(state->spec));
	state->spec.name = state->ops->name;
	state->spec.ops = state->ops;
	state->side_ops->end(state);
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

	for (s = 0; s < (state->self ? 1 : 2); s++)
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

/* Read both inputs, marshal, and open the engine's cursor. */
static void
SjLoad(SjScanState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->cxt);
	bool		count_only;

	SjStatsStart(&state->stats, state->count ? "SimJoin count" : "SimJoin");
	strlcpy(state->stats.operator_name, state->ops->name,
			sizeof(state->stats.operator_name));
	state->t0 = sj_now_ms();
	state->fetch_ms = 0;
	state->source = SjChooseSource(state);
	/* before SjCursorOpen: under auto, the thread probes for the GPU too */
	if (state->source == SJ_SRC_ENGINE && !SjPlanKeepsCpu(state))
		SjStartDevice();
	/* counting with nothing else to check: the engine's count mode */
	count_only = state->source == SJ_SRC_ENGINE && state->count &&
		state->jointype == JOIN_INNER && state->residual == NULL &&
		state->ncompares == 0 && !state->gis;
	state->streaming = count_only;
	if (state->source == SJ_SRC_ENGINE)
		state->side_ops->begin(state);
	/* rows the engines may not compute exactly are joined from the rows kept */
	if (state->streaming && state->op == SJ_OP_THETA && SjThetaMayNeedRows(state->sides))
		state->streaming = false;
	/*
	 * Parallel-aware: the shared inner input first, read by the participants
	 * together, then the outer's parallel scan, which every participant then
	 * starts at about the same time (past the inner's barrier): the leader
	 * no longer takes most of the outer rows, and of the pairs to form,
	 * while the workers start.  The inner's rows come last: the first
	 * participant past its outer rows prepares the inner side for all
	 * (cs_parallel.c), the others waiting for it.
	 */
	if (state->self)
	{
		/* one table, one scan: the inner side is the outer's rows */
		SjReadSide(state, 0);
		state->rows[1] = state->rows[0];
	}
	else if (state->streaming && SjReadBothParallel(state))
		;						/* both read by workers */
	else if (SjReadInnerShared(state))
	{
		SjReadSide(state, 0);
		SjReadInnerRows(state);
	}
	else
	{
		SjReadSide(state, 0);
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

		for (s = 0; s < (state->self ? 1 : 2) && !state->streaming; s++)
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
	/* no engine to read what the sides kept for one: unmapped now */
	if (state->source != SJ_SRC_ENGINE)
		SjReleaseSides(state);
	/* building or waiting for the shared index counts as building */
	state->stats.scan_ms = sj_now_ms() - state->t0 - state->index_ms;
	state->stats.build_ms += state->index_ms;
	state->load_done_ms = sj_now_ms();
	state->batch.count = 0;
	state->pos = 0;
	state->nl_i = 0;
	state->nl_j = 0;
	state->engine_done = false;
	state->mirror = false;
	state->self_pos = 0;
	state->unmatched_pos = 0;
	state->pairs_done = false;
	state->rows_out = 0;
	state->loaded = true;
	MemoryContextSwitchTo(old);
}

/*
 * Unmap what the sides kept mapped for the engine (SjSideMethods.release),
 * once it has ended; again, nothing.
 */
static void
SjReleaseSides(SjScanState *state)
{
	if (state->sides != NULL && state->side_ops->release != NULL)
		state->side_ops->release(state);
}

/*
 * The engine's next batch, fetched in the run's context (which owns the
 * engine handle); false when the join is done (its engine ended, and what
 * the sides kept for it released).
 */
static bool
SjFetch(SjScanState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->cxt);
	double		t = sj_now_ms();
	bool		more = SjCursorFetch(&state->cursor, &state->batch, &state->stats);

	state->fetch_ms += sj_now_ms() - t;
	if (!more)
		SjReleaseSides(state);
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

/*
 * The engine's pairs come in its order (grid cells, tiles), their rows
 * scattered over the kept rows (but for PostGIS geometry, whose rows are
 * laid out in a spatial order first, cs_sides.c): each pair's rows are
 * asked of the memory this many pairs ahead, so that forming a pair seldom
 * waits for them.
 */
#define SJ_EMIT_PREFETCH	16

/*
 * Ask the memory for the kept values of the batch's pair at pos: a macro,
 * as GCC drops a call of a function that only prefetches (it finds it pure).
 */
#define SjPrefetchPair(state, pos) \
	do { \
		int64		pi_ = (state)->batch.left[pos]; \
		int64		pj_ = (state)->batch.right[pos]; \
		SjSideRows *po_ = &(state)->rows[0]; \
		SjSideRows *pn_ = &(state)->rows[1]; \
		if ((state)->keys[0]) \
		{ \
			pi_ = (state)->keys[0][pi_]; \
			pj_ = (state)->keys[1][pj_]; \
		} \
		if (po_->values != NULL && pn_->values != NULL) \
		{ \
			__builtin_prefetch(po_->values + pi_ * po_->natts); \
			__builtin_prefetch(po_->isnull + pi_ * po_->natts); \
			__builtin_prefetch(pn_->values + pj_ * pn_->natts); \
			__builtin_prefetch(pn_->isnull + pj_ * pn_->natts); \
		} \
	} while (0)

/* The next candidate pair (outer row, inner row); false when none is left. */
static bool
SjNextPair(SjScanState *state, int64 *i, int64 *j)
{
	switch (state->source)
	{
		case SJ_SRC_ENGINE:
			/* an engine stopped under it (SjStopLiveJoin) left no batch */
			SjCursorCheckStopped(&state->cursor);
			for (;;)
			{
				/* a self-join: the other order of the pair before */
				if (state->mirror)
				{
					state->mirror = false;
					*i = state->mirror_i;
					*j = state->mirror_j;
					return true;
				}
				/*
				 * a self-join's rows that join themselves first, decided
				 * as the engine decides pairs (SjEpsSelfRows), not again
				 * by PostgreSQL's operator as pairs past the engine's are
				 */
				if (state->self_pos < state->nself_rows)
				{
					*i = state->self_rows[state->self_pos++];
					if (state->keys[0])
						*i = state->keys[0][*i];
					*j = *i;
					return true;
				}
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
				if (state->gis)
				{
					/* points: settled by the bounds, or PostGIS's to decide */
					state->pair_settled =
						SjPointSettle(&state->gis_bounds, (uint32) *i, (uint32) *j,
									  state->batch.value ?
									  state->batch.value[state->pos] : NAN);
					if (state->pair_settled == SJ_SETTLE_OUT)
					{
						state->pos++;
						continue;
					}
				}
				state->pos++;
				if (state->keys[0])
				{
					*i = state->keys[0][*i];
					*j = state->keys[1][*j];
				}
				if (state->pos + SJ_EMIT_PREFETCH <= state->batch.count)
					SjPrefetchPair(state, state->pos - 1 + SJ_EMIT_PREFETCH);
				if (state->self)
				{
					state->mirror = true;
					state->mirror_i = *j;
					state->mirror_j = *i;
				}
				return true;
			}
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

/*
 * Is the use_spheroid argument of a geography clause that is not a
 * constant NULL on the pair in the scan tuple?  Then PostGIS's function,
 * strict, returns NULL and the pair does not join, whatever the bounds say.
 */
static bool
SjSpheroidNull(SjScanState *state, ExprContext *econtext)
{
	bool		isnull;

	if (state->spheroid == NULL)
		return false;
	(void) ExecEvalExprSwitchContext(state->spheroid, econtext, &isnull);
	return isnull;
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
	else
		state->stats.pairs = SjPairsFormed(state, state->stats.pairs);
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
		if (state->ncompares > 0 && !SjColumnComparesPass(state, i, j))
			continue;
		slot = SjFillSlot(state, i, j);
		if (state->source == SJ_SRC_NESTLOOP || state->engine_done || state->residual ||
			state->gis)
		{
			/*
			 * PostGIS's clause decides the pairs of an eps join of points,
			 * but for those the bounds settle within d (SjPointSettle,
			 * eps_join's rule)
			 */
			bool		by_pg = state->source == SJ_SRC_NESTLOOP || state->engine_done ||
				(state->gis && !(state->source == SJ_SRC_ENGINE &&
								 state->pair_settled == SJ_SETTLE_IN));

			econtext->ecxt_scantuple = slot;
			ResetExprContext(econtext);
			if (state->residual_first && !ExecQual(state->residual, econtext))
				continue;
			if (by_pg && state->gis)
				state->stats.decided++;
			if (by_pg && !ExecQual(state->engine_qual, econtext))
				continue;
			/* settled within d, but PostGIS's strict clause is NULL */
			if (!by_pg && state->gis && SjSpheroidNull(state, econtext))
				continue;
			if (!state->residual_first && !ExecQual(state->residual, econtext))
				continue;
		}
		if (jt != JOIN_INNER)
			state->matched[i] = true;
		if (jt == JOIN_ANTI)
			continue;
		/* a semi join's row carries its first match, as PostgreSQL's do
		 * (a row mark of the inner relation reads its ctid) */
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
			/* a self-join's rows joining themselves: counted, not formed */
			state->self_pos = state->nself_rows;
			n = SjPairsFormed(state, state->cursor.pairs);
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

/*
 * EvalPlanQual (a row locked or updated by the query was changed by another
 * transaction): the node is a join, so ExecScan asks it for the join's row
 * of the test tuples.  Each input, a scan under EvalPlanQual, returns its
 * relations' test tuple, or none (a NULL-extended row, an anti join's
 * inner side); the pair is decided by PostgreSQL's operators over every
 * join clause, the other clauses before the eps or Jaccard condition and
 * a theta condition's clauses among them cheapest first (as a nested loop
 * of PostgreSQL's orders them, SJ_EXPR_RECHECK), and the join's row
 * formed as a pair of the join type forms it.
 */
static bool
SjScanRecheck(ScanState *ss, TupleTableSlot *slot)
{
	SjScanState *state = (SjScanState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	TupleTableSlot *o = ExecProcNode(linitial(state->css.custom_ps));
	TupleTableSlot *i = ExecProcNode(lsecond(state->css.custom_ps));
	bool		match = false;

	if (TupIsNull(o))
		return false;
	slot_getallattrs(o);
	if (!TupIsNull(i))
	{
		slot_getallattrs(i);
		econtext->ecxt_scantuple =
			SjFillSlotFrom(state, o->tts_values, o->tts_isnull, i->tts_values, i->tts_isnull);
		ResetExprContext(econtext);
		match = ExecQual(state->recheck_qual, econtext);
	}
	switch (state->jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
			return match;
		case JOIN_LEFT:
			if (!match)
				SjFillSlotFrom(state, o->tts_values, o->tts_isnull, NULL, NULL);
			return true;
		case JOIN_ANTI:
			if (match)
				return false;
			SjFillSlotFrom(state, o->tts_values, o->tts_isnull, NULL, NULL);
			return true;
		default:
			return false;
	}
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
	SjReleaseSides(state);
	MemoryContextReset(state->cxt);
	memset(&state->rows, 0, sizeof(state->rows));
	state->aside[0] = state->aside[1] = NULL;
	state->aside_rows = NULL;
	state->naside_rows = 0;
	state->self_rows = NULL;
	state->nself_rows = 0;
	memset(&state->batch, 0, sizeof(state->batch));
	state->matched = NULL;
	state->sides = NULL;
	state->side_done[0] = state->side_done[1] = false;
	state->side_shared[0] = state->side_shared[1] = false;
	state->inner_readers = 0;
	state->inner_parts = 0;
	state->inner_merge = false;
	state->inner_read = 0;
	state->index_role = SJ_INDEX_ROLE_NONE;
	state->index_ms = 0;
	state->prep_role = SJ_INDEX_ROLE_NONE;
	state->prep_ms = 0;
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
	SjReleaseSides(state);
	MemoryContextDelete(state->cxt);
	foreach(lc, node->custom_ps)
		ExecEndNode(lfirst(lc));
}

static void
SjRescan(CustomScanState *node)
{
	SjScanState *state = (SjScanState *) node;
	ListCell   *lc;

	ExecScanReScan(&node->ss);
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
