/*
 * cs_rows.c
 *		Custom Scan (SimJoin), the rows it keeps: reading a child, room for
 *		a side's rows and copies of their values, deforming the minimal
 *		tuples parallel workers copy,
 *		join clauses comparing a column of each side decided on the kept
 *		values.
 *
 * Shared by execution (cs_exec.c) and the parallel protocol (cs_parallel.c).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/executor.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "customscan.h"

/* The next row of child (NULL at its end), run in the query's context. */
TupleTableSlot *
SjChildNext(SjScanState *state, PlanState *child)
{
	MemoryContext old = MemoryContextSwitchTo(state->css.ss.ps.state->es_query_cxt);
	TupleTableSlot *slot = ExecProcNode(child);

	MemoryContextSwitchTo(old);
	return TupIsNull(slot) ? NULL : slot;
}

/* Room for cap rows of natts values in rows, which is emptied. */
void
SjRowsAlloc(SjSideRows *rows, int natts, int64 cap)
{
	rows->natts = natts;
	rows->n = 0;
	rows->cap = cap;
	rows->values = palloc_extended(cap * Max(natts, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);
	rows->isnull = palloc_extended(cap * Max(natts, 1) * sizeof(bool), MCXT_ALLOC_HUGE);
}

/*
 * Copies of the values a node keeps (SjKeepValues) go one after another
 * into blocks that double from SJ_KEEP_BLOCK_MIN to SJ_KEEP_BLOCK_MAX
 * bytes, on huge pages from 2 MB up (SjAllocLarge), rather than into a
 * tuple a row: a serial read of 1 M 384-D real[] rows spent most of its
 * time faulting in the 4 kB pages of a million 2 kB chunks, and forming
 * and deforming each tuple (test/bench/BENCHMARKS.md, "Twentieth
 * session").  A block is wasted at most one value's length at its end; a
 * value over half a block has room of its own.
 */
#define SJ_KEEP_BLOCK_MIN	((Size) 64 << 10)
#define SJ_KEEP_BLOCK_MAX	((Size) 128 << 20)

static char *
SjKeepAlloc(SjKeptValues *kept, Size bytes)
{
	char	   *p;

	bytes = MAXALIGN(bytes);
	if (bytes > kept->left)
	{
		Size		block = Max(kept->block, SJ_KEEP_BLOCK_MIN);

		if (bytes > block / 2)
			return SjAllocLarge(bytes); /* a large value: room of its own */
		kept->block = Min(block * 2, SJ_KEEP_BLOCK_MAX);
		kept->next = SjAllocLarge(block);
		kept->left = block;
	}
	p = kept->next;
	kept->next += bytes;
	kept->left -= bytes;
	return p;
}

/*
 * Replace each by-reference value of a row (values/nulls, as desc
 * describes it) with a copy in kept, in CurrentMemoryContext: what
 * datumCopy would make (an expanded object flattened, a TOAST pointer
 * copied as the pointer it is), without a palloc each.
 */
void
SjKeepValues(SjKeptValues *kept, TupleDesc desc, Datum *values, const bool *nulls)
{
	for (int k = 0; k < desc->natts; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, k);
		Pointer		src;
		Size		size;
		char	   *dst;

		if (att->attbyval || nulls[k])
			continue;
		src = DatumGetPointer(values[k]);
		if (att->attlen == -1 && VARATT_IS_EXTERNAL_EXPANDED(src))
		{
			ExpandedObjectHeader *eoh = DatumGetEOHP(values[k]);

			size = EOH_get_flat_size(eoh);
			dst = SjKeepAlloc(kept, size);
			EOH_flatten_into(eoh, dst, size);
		}
		else
		{
			size = datumGetSize(values[k], false, att->attlen);
			dst = SjKeepAlloc(kept, size);
			memcpy(dst, src, size);
		}
		values[k] = PointerGetDatum(dst);
	}
}

/* Deform a minimal tuple into values/nulls; byref values point into it. */
void
SjDeformMinimal(MinimalTuple mt, TupleDesc desc, Datum *values, bool *nulls)
{
	HeapTupleData htup;

	htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
	heap_deform_tuple(&htup, desc, values, nulls);
}

/* Column (0-based, in the side's row) an argument reads, or -1. */
int
SjArgColumn(Expr *arg, int base, int natts)
{
	while (arg && IsA(arg, RelabelType))
		arg = ((RelabelType *) arg)->arg;
	if (arg && IsA(arg, Var) && ((Var *) arg)->varno == INDEX_VAR &&
		((Var *) arg)->varattno > base && ((Var *) arg)->varattno <= base + natts)
		return ((Var *) arg)->varattno - base - 1;
	return -1;
}

/*
 * Column (0-based, in its side's rows) of a scan tuple Var, and its side;
 * false where expr is not a plain column of one side.
 */
static bool
SjScanColumn(SjScanState *state, Expr *expr, int *side, int *col)
{
	int			base1 = state->nprefix + state->natts[0];

	*side = 0;
	*col = SjArgColumn(expr, state->nprefix, state->natts[0]);
	if (*col < 0)
	{
		*side = 1;
		*col = SjArgColumn(expr, base1, state->natts[1]);
	}
	return *col >= 0;
}

/*
 * The inline form of a btree comparison function of two integers of one
 * type (SJ_CMP_*, *width its type's), or SJ_CMP_CALL.
 */
static int
SjFastCompare(Oid fn, int *width)
{
	static const struct
	{
		Oid			fn;
		int			width;
		int			fast;
	}			known[] = {
		{F_INT2LT, 2, SJ_CMP_LT}, {F_INT2LE, 2, SJ_CMP_LE}, {F_INT2EQ, 2, SJ_CMP_EQ},
		{F_INT2GE, 2, SJ_CMP_GE}, {F_INT2GT, 2, SJ_CMP_GT}, {F_INT2NE, 2, SJ_CMP_NE},
		{F_INT4LT, 4, SJ_CMP_LT}, {F_INT4LE, 4, SJ_CMP_LE}, {F_INT4EQ, 4, SJ_CMP_EQ},
		{F_INT4GE, 4, SJ_CMP_GE}, {F_INT4GT, 4, SJ_CMP_GT}, {F_INT4NE, 4, SJ_CMP_NE},
		{F_INT8LT, 8, SJ_CMP_LT}, {F_INT8LE, 8, SJ_CMP_LE}, {F_INT8EQ, 8, SJ_CMP_EQ},
		{F_INT8GE, 8, SJ_CMP_GE}, {F_INT8GT, 8, SJ_CMP_GT}, {F_INT8NE, 8, SJ_CMP_NE},
	};
	int			k;

	for (k = 0; k < lengthof(known); k++)
		if (known[k].fn == fn)
		{
			*width = known[k].width;
			return known[k].fast;
		}
	*width = 0;
	return SJ_CMP_CALL;
}

/*
 * Take out of a join's other clauses those that compare a column of each
 * side with a btree operator whose function is strict and leakproof (a.id
 * < b.id in a self-join, which the engine hands over in both orders and
 * with each row paired with itself): they are decided on the rows' kept
 * values before a pair's tuple is formed (SjColumnComparesPass), most pairs
 * of such a self-join never becoming a tuple.  Being leakproof, they raise
 * no error, so deciding them first changes no answer.  Returns the clauses
 * left for the residual filter.
 */
List *
SjColumnComparesInit(SjScanState *state, List *clauses)
{
	List	   *rest = NIL;
	ListCell   *lc;

	state->compares = palloc0(Max(list_length(clauses), 1) * sizeof(SjColumnCompare));
	state->ncompares = 0;
	foreach(lc, clauses)
	{
		Expr	   *clause = lfirst(lc);
		SjColumnCompare *c = &state->compares[state->ncompares];
		OpExpr	   *op = (OpExpr *) clause;
		Oid			fn;

		if (IsA(clause, OpExpr) && list_length(op->args) == 2 &&
			op->opresulttype == BOOLOID && !op->opretset &&
			SjScanColumn(state, linitial(op->args), &c->side[0], &c->col[0]) &&
			SjScanColumn(state, lsecond(op->args), &c->side[1], &c->col[1]) &&
			c->side[0] != c->side[1] &&
			get_op_btree_interpretation(op->opno) != NIL &&
			OidIsValid(fn = get_opcode(op->opno)) &&
			func_strict(fn) && get_func_leakproof(fn))
		{
			fmgr_info(fn, &c->flinfo);
			c->collation = op->inputcollid;
			c->fast = SjFastCompare(fn, &c->width);
			state->ncompares++;
		}
		else
			rest = lappend(rest, clause);
	}
	return rest;
}

/*
 * Do outer row i and inner row j pass every column compare?  A NULL
 * operand fails, as the strict operator's NULL fails a qual; integers of
 * one type are compared inline, as their functions do.
 */
bool
SjColumnComparesPass(SjScanState *state, int64 i, int64 j)
{
	int			k;

	for (k = 0; k < state->ncompares; k++)
	{
		SjColumnCompare *c = &state->compares[k];
		Datum		v[2];
		int			a;

		for (a = 0; a < 2; a++)
		{
			SjSideRows *rows = &state->rows[c->side[a]];
			int64		at = (c->side[a] == 0 ? i : j) * rows->natts + c->col[a];

			if (rows->isnull[at])
				return false;
			v[a] = rows->values[at];
		}
		if (c->fast != SJ_CMP_CALL)
		{
			int64		x = c->width == 8 ? DatumGetInt64(v[0]) :
				c->width == 4 ? DatumGetInt32(v[0]) : DatumGetInt16(v[0]);
			int64		y = c->width == 8 ? DatumGetInt64(v[1]) :
				c->width == 4 ? DatumGetInt32(v[1]) : DatumGetInt16(v[1]);
			bool		pass;

			switch (c->fast)
			{
				case SJ_CMP_LT:
					pass = x < y;
					break;
				case SJ_CMP_LE:
					pass = x <= y;
					break;
				case SJ_CMP_EQ:
					pass = x == y;
					break;
				case SJ_CMP_GE:
					pass = x >= y;
					break;
				case SJ_CMP_GT:
					pass = x > y;
					break;
				default:
					pass = x != y;
					break;
			}
			if (!pass)
				return false;
		}
		else if (!DatumGetBool(FunctionCall2Coll(&c->flinfo, c->collation, v[0], v[1])))
			return false;
	}
	return true;
}

/*
 * Lay rows out anew: row k of the result is old row from[k] for k < n (each
 * old row at most once), then the rows from does not name, in their order.
 */
void
SjRowsPermute(SjSideRows *rows, const uint32 *from, int64 n)
{
	int			natts = Max(rows->natts, 1);
	Datum	   *values;
	bool	   *isnull;
	bool	   *named;
	int64		k,
				at;

	Assert(n <= rows->n);
	values = palloc_extended(Max(rows->n, 1) * natts * sizeof(Datum), MCXT_ALLOC_HUGE);
	isnull = palloc_extended(Max(rows->n, 1) * natts * sizeof(bool), MCXT_ALLOC_HUGE);
	named = palloc_extended(Max(rows->n, 1) * sizeof(bool),
							MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (k = 0; k < n; k++)
	{
		memcpy(values + k * natts, rows->values + (int64) from[k] * natts,
			   natts * sizeof(Datum));
		memcpy(isnull + k * natts, rows->isnull + (int64) from[k] * natts,
			   natts * sizeof(bool));
		named[from[k]] = true;
	}
	for (at = 0; at < rows->n && k < rows->n; at++)
	{
		if (named[at])
			continue;
		memcpy(values + k * natts, rows->values + at * natts, natts * sizeof(Datum));
		memcpy(isnull + k * natts, rows->isnull + at * natts, natts * sizeof(bool));
		k++;
	}
	pfree(named);
	pfree(rows->values);
	pfree(rows->isnull);
	rows->values = values;
	rows->isnull = isnull;
	rows->cap = Max(rows->n, 1);
}
