/*
 * cs_rows.c
 *		Custom Scan (SimJoin), the rows it keeps: reading a child, room for
 *		a side's rows, deforming the minimal tuples parallel workers copy.
 *
 * Shared by execution (cs_exec.c) and the parallel protocol (cs_parallel.c).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/executor.h"

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

/* Deform a minimal tuple into values/nulls; byref values point into it. */
void
SjDeformMinimal(MinimalTuple mt, TupleDesc desc, Datum *values, bool *nulls)
{
	HeapTupleData htup;

	htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
	heap_deform_tuple(&htup, desc, values, nulls);
}
