/*
 * cs_parallel.c
 *		Custom Scan (SimJoin), parallel execution in dynamic shared memory.
 *
 * The DSM callbacks of a parallel-aware node, a side read and marshalled
 * by the engine's own threads, the inner input read once by all
 * participants together (SjSharedInner, customscan.h), the CPU engine's
 * index of it built once into the DSA area, and the workers' reports for
 * the leader's EXPLAIN ANALYZE.  Invariant: in the barrier's phase 1 nobody
 * writes the shared inner input; everything in it is read in place.
 */

#include "postgres.h"

#include "pgstat.h"

#include "customscan.h"

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

/* Tuples asked of the memory ahead of the one deformed. */
#define SJ_DEFORM_PREFETCH		16

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

	if (!state->side_ops->whole_rows)
	{
		if (state->arg_var[s] < 0)
			return false;
		*ncols = 2;
		positions[0] = 0;
		typids[0] = INT8OID;
		positions[1] = state->arg_var[s] + 1;
		typids[1] = TupleDescAttr(ExecGetResultType(child), state->arg_var[s])->atttypid;
	}
	*kind = state->side_ops->kind;
	*side = state->side_ops->side(state, s, ncols, positions, typids);
	return true;
}

/* What the values of a side are, in error messages. */
static const char *
SjSideWhat(SjScanState *state)
{
	return state->side_ops->what;
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
	state->side_ops->add_parts(state, s, side, parts);
	SjPartsRelease(parts);
	state->side_done[s] = true;
}

/*
 * Counting: read input s with parallel workers straight into the engine's
 * input, where it is a Seq Scan of a plain table whose join columns are
 * plain columns (parscan.c).  False, having read nothing, otherwise.
 */
bool
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
bool
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
	/* (rows[1].n: all of the inner rows, base[nshares]) */
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
	parts.rows = base[nshares];
	if (!SjSideSpec(state, 1, &kind, &side, &ncols, positions, typids))
		elog(ERROR, "shared inner parts without a side");
	SjSideAddParts(state, 1, side, &parts);
	keys = state->side_ops->keys(state, 1, side, &n);
	for (i = 0; keys != NULL && i < n; i++)
		keys[i] = base[keys[i] >> SJ_SHARE_KEY_BITS] +
			(keys[i] & ((INT64CONST(1) << SJ_SHARE_KEY_BITS) - 1));
	pfree(parts.part);
	state->inner_parts = nshares;
}

/*
 * The shared inner side prepared once (SjSideMethods.export): the kept
 * rows' order, then the side as its methods exported it.
 */
typedef struct SjPreparedInner
{
	int64		nrows;			/* kept rows: all of the inner's */
	bool		ordered;		/* kept row k is tuple order[k] (else k) */
	Size		side;			/* offset of the exported side */
	/* then: nrows uint32 (ordered), the side MAXALIGNed */
} SjPreparedInner;

#define SjPreparedOrder(p)	((const uint32 *) ((char *) (p) + MAXALIGN(sizeof(SjPreparedInner))))

/*
 * Prepare the inner side once for all participants: merge the shares'
 * parts (their keys (share, place) become tuple numbers, base[p] the first
 * of share p), and write the side, its engine rows laid out in its order
 * (a gather straight into the DSA area), with the order the kept rows take
 * then; free the parts, now unused.  The DSA area grows by the engine's
 * input (dim doubles and a key a point) and 4 bytes a kept row, and the
 * parts freed held as much but for those 4 bytes (a key and dim doubles a
 * point): the shared inner takes about what it took (its tuples' chunks,
 * several times that, and the parts), where each participant also held
 * its own merged copy and its spatial order's arrays in private memory.
 */
static dsa_pointer
SjInnerPrepare(SjScanState *state, int nshares, const int64 *base)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	int64		nrows = base[nshares];
	uint32	   *order;
	Size		side_size,
				off;
	dsa_pointer dp;
	SjPreparedInner *prep;
	int			p;

	state->rows[1].n = nrows;
	SjInnerMergeParts(state, nshares, base);
	order = state->side_ops->order(state, 1, nrows);
	side_size = state->side_ops->export(state, 1, order, NULL);
	off = MAXALIGN(sizeof(SjPreparedInner));
	if (order)
		off = add_size(off, MAXALIGN(mul_size(nrows, sizeof(uint32))));
	dp = dsa_allocate_extended(area, add_size(off, Max(side_size, 1)), DSA_ALLOC_HUGE);
	prep = dsa_get_address(area, dp);
	prep->nrows = nrows;
	prep->ordered = order != NULL;
	prep->side = off;
	if (order)
	{
		uint32	   *from = (uint32 *) SjPreparedOrder(prep);
		int64	   *keys;
		int64		n;
		int64		k,
					at;
		bool	   *named;

		/* the engine's rows' kept rows first, in its order, then the others */
		keys = state->side_ops->keys(state, 1, NULL, &n);
		named = palloc_extended(Max(nrows, 1) * sizeof(bool),
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (k = 0; k < n; k++)
		{
			from[k] = (uint32) keys[order[k]];
			named[from[k]] = true;
		}
		for (at = 0; at < nrows && k < nrows; at++)
			if (!named[at])
				from[k++] = (uint32) at;
		pfree(named);
	}
	state->side_ops->export(state, 1, order, (char *) prep + off);
	if (order)
		pfree(order);
	/* the parts are merged: nobody reads them any more */
	for (p = 0; p < nshares; p++)
	{
		if (DsaPointerIsValid(sh->share[p].part))
			dsa_free(area, sh->share[p].part);
		sh->share[p].part = InvalidDsaPointer;
	}
	return dp;
}

/*
 * Is this participant the one to build what *field (an SjIndexState of sh,
 * under its mutex) stands for: the shared index, or the inner side
 * prepared once (the first to ask, having read its outer rows, prepares
 * it at once, SjInnerPublish, while the others wait, SjInnerPrepared)?
 * The first to ask is: the field goes to SJ_INDEX_BUILDING, and the others
 * wait for it (SjAwaitBuilt).
 */
static bool
SjClaimBuild(SjSharedInner *sh, int *field)
{
	bool		build = false;

	SpinLockAcquire(&sh->mutex);
	if (*field == SJ_INDEX_NONE)
	{
		*field = SJ_INDEX_BUILDING;
		build = true;
	}
	SpinLockRelease(&sh->mutex);
	return build;
}

/* Prepare the inner side and hand it to the participants waiting for it. */
static void
SjInnerPublish(SjScanState *state, int nshares, const int64 *base)
{
	SjSharedInner *sh = state->shared;
	double		t0 = sj_now_ms();
	dsa_pointer dp;

	state->prep_role = SJ_INDEX_ROLE_BUILT;
	dp = SjInnerPrepare(state, nshares, base);
	SpinLockAcquire(&sh->mutex);
	sh->prepared = dp;
	sh->prep_state = SJ_INDEX_READY;
	SpinLockRelease(&sh->mutex);
	ConditionVariableBroadcast(&sh->prep_cv);
	state->prep_ms = sj_now_ms() - t0;
}

/*
 * Sleep on cv until *field (an SjIndexState of sh, under its mutex) is no
 * longer SJ_INDEX_BUILDING: another participant builds what it stands for.
 * Returns the state it ended in.
 */
static int
SjAwaitBuilt(SjSharedInner *sh, int *field, ConditionVariable *cv)
{
	int			st;

	ConditionVariablePrepareToSleep(cv);
	for (;;)
	{
		SpinLockAcquire(&sh->mutex);
		st = *field;
		SpinLockRelease(&sh->mutex);
		if (st != SJ_INDEX_BUILDING)
			break;
		ConditionVariableSleep(cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return st;
}

/*
 * The inner side prepared once, waited for where another participant is
 * still preparing it.  An ERROR while preparing aborts the query, and with
 * it the participants waiting.
 */
static SjPreparedInner *
SjInnerPrepared(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	double		t0 = sj_now_ms();

	if (state->prep_role != SJ_INDEX_ROLE_BUILT)
	{
		(void) SjAwaitBuilt(sh, &sh->prep_state, &sh->prep_cv);
		state->prep_role = SJ_INDEX_ROLE_PROBED;
		state->prep_ms = sj_now_ms() - t0;
	}
	return dsa_get_address(area, sh->prepared);
}

/*
 * The shares of the shared inner input, in phase 1: base[p], the first
 * tuple of share p (base[nshares] all of them), and whether the shares'
 * parts are to be merged (each wrote one, and the engine runs): to be
 * asked before the side is prepared, which frees the parts.
 */
static int64 *
SjInnerBases(SjScanState *state, int *nshares, bool *merge)
{
	SjSharedInner *sh = state->shared;
	int64	   *base;
	int64		total = 0;
	bool		all_parts = true;
	int			p;

	*nshares = sh->nshares;
	base = palloc((*nshares + 1) * sizeof(int64));
	for (p = 0; p < *nshares; p++)
	{
		base[p] = total;
		total += sh->share[p].ntuples;
		if (!DsaPointerIsValid(sh->share[p].part))
			all_parts = false;
	}
	base[*nshares] = total;
	*merge = all_parts && *nshares > 0 && state->source == SJ_SRC_ENGINE;
	return base;
}

/*
 * Parallel-aware node: take a share of the inner input if it is still
 * being read (SjReadInnerShare) and wait until every participant reading
 * it is done.  The caller then reads the outer input (its parallel scan,
 * which every participant starts at about the same time, past the inner's
 * barrier, so that each takes about as many outer rows, and as many pairs
 * to form), then the inner's rows (SjReadInnerRows).  False, having
 * read nothing, where the node runs without shared memory (no Gather set
 * it up): the inner plan then returns all of its rows to this process
 * alone.
 */
bool
SjReadInnerShared(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	int64	   *base;
	bool		merge;
	int			nshares;

	/* counting marshals rows as they are read (never parallel-aware) */
	if (sh == NULL || area == NULL || state->streaming)
		return false;
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

	/* phase 1: nobody writes the shares any more */
	base = SjInnerBases(state, &nshares, &merge);
	state->inner_readers = nshares;
	state->inner_merge = merge;
	pfree(base);
	return true;
}

/*
 * The shared inner input's rows (SjReadInnerShared having returned true):
 * deform all of them, in place in shared memory, into rows[1], and merge
 * the shares' parts into the engine's input where each wrote one, or read
 * the side prepared once, and deform the rows in the order it gives: the
 * first participant here prepares it (its outer rows read, as the
 * others', rather than while they read theirs: a participant preparing
 * then found the outer scan done and formed no pairs), the others wait.
 */
void
SjReadInnerRows(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	PlanState  *child = list_nth(state->css.custom_ps, 1);
	TupleDesc	desc = ExecGetResultType(child);
	SjSideRows *rows = &state->rows[1];
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	int64	   *base;
	int64		total;
	int64		k;
	bool		merge;
	SjPreparedInner *prep = NULL;
	MinimalTuple *tuples;
	const uint32 *order;
	int			nshares,
				p;

	Assert(desc->natts == state->natts[1]);
	base = SjInnerBases(state, &nshares, &merge);
	merge = state->inner_merge; /* the parts may be freed by now */
	total = base[nshares];
	if (merge && state->side_ops->export != NULL)
	{
		if (SjClaimBuild(state->shared, &state->shared->prep_state))
			SjInnerPublish(state, nshares, base);
		prep = SjInnerPrepared(state);
	}
	/* the tuples in place, in the prepared order if any */
	tuples = palloc_extended(Max(total, 1) * sizeof(MinimalTuple), MCXT_ALLOC_HUGE);
	for (p = 0, k = 0; p < nshares; p++)
	{
		dsa_pointer dp;

		for (dp = sh->share[p].first; DsaPointerIsValid(dp);)
		{
			SjInnerChunk *chunk = dsa_get_address(area, dp);
			Size		off = 0;
			int64		n;

			for (n = 0; n < chunk->ntuples; n++)
			{
				tuples[k++] = (MinimalTuple) (SjInnerChunkData(chunk) + off);
				off += MAXALIGN(tuples[k - 1]->t_len);
			}
			dp = chunk->next;
		}
		Assert(k == base[p + 1]);
	}
	Assert(k == total);
	order = prep && prep->ordered ? SjPreparedOrder(prep) : NULL;
	if (order)
	{
		MinimalTuple *ordered = palloc_extended(Max(total, 1) * sizeof(MinimalTuple),
												MCXT_ALLOC_HUGE);

		for (k = 0; k < total; k++)
			ordered[k] = tuples[order[k]];
		pfree(tuples);
		tuples = ordered;
	}
	SjRowsAlloc(rows, state->natts[1], Max(total, 1));
	for (k = 0; k < total; k++)
	{
		/* in spatial order, the tuples lie scattered: ask for them ahead */
		if (k + SJ_DEFORM_PREFETCH < total)
			__builtin_prefetch(tuples[k + SJ_DEFORM_PREFETCH]);
		SjDeformMinimal(tuples[k], desc, rows->values + k * rows->natts,
						rows->isnull + k * rows->natts);
		rows->n++;
	}
	pfree(tuples);
	if (prep)
	{
		state->side_ops->import(state, 1, (const char *) prep + prep->side);
		state->side_done[1] = true;
		state->side_shared[1] = true;
		state->inner_parts = nshares;
	}
	else if (merge)
		SjInnerMergeParts(state, nshares, base);
	pfree(base);
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
	st = state->spec.ops->begin(state->spec.arg, false, &options, &run, errmsg);
	if (st != SJ_OK)
	{
		if (run.handle != NULL)
			run.engine->end(run.handle);
		SjReportStatus(st, errmsg, state->ops->name);
	}
	PG_TRY();
	{
		Size		size = run.engine->index_size ? run.engine->index_size(run.handle) : 0;

		if (size > 0)
		{
			*dp = dsa_allocate_extended(area, size, DSA_ALLOC_HUGE);
			dst = dsa_get_address(area, *dp);
			run.engine->index_write(run.handle, dst);
		}
	}
	PG_FINALLY();
	{
		run.engine->end(run.handle);
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
const void *
SjSharedIndex(SjScanState *state)
{
	SjSharedInner *sh = state->shared;
	dsa_area   *area = state->css.ss.ps.state->es_query_dsa;
	double		t0 = sj_now_ms();
	bool		build;
	int			st;

	if (!sj_enable_shared_index || sh == NULL || area == NULL ||
		state->inner_parts == 0 || state->cursor.gpu || state->op == SJ_OP_JACCARD ||
		(state->op == SJ_OP_THETA &&
		 (!SjThetaSideUnranked(state->sides, 1) || !SjThetaIndexesInner(state->sides))))
		return NULL;
	build = SjClaimBuild(sh, &sh->index_state);
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
		st = SjAwaitBuilt(sh, &sh->index_state, &sh->index_cv);
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
	if (area != NULL && DsaPointerIsValid(sh->prepared))
		dsa_free(area, sh->prepared);
	sh->prepared = InvalidDsaPointer;
	sh->prep_state = SJ_INDEX_NONE;
	ConditionVariableInit(&sh->prep_cv);
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

Size
SjEstimateDSM(CustomScanState *node, ParallelContext *pcxt)
{
	return MAXALIGN(SjSharedInnerSize(pcxt->nworkers));
}

void
SjInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	SjScanState *state = (SjScanState *) node;
	SjSharedInner *sh = coordinate;

	sh->maxshares = pcxt->nworkers + 1;
	SjInnerReset(sh, NULL);		/* without an area: frees nothing */
	state->shared = sh;
}

/* Before a rescan's new workers start: the inner is read again. */
void
SjReInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	SjScanState *state = (SjScanState *) node;

	/* ExecParallelReinitialize installs the query's DSA area around this */
	SjInnerReset(state->shared, node->ss.ps.state->es_query_dsa);
}

void
SjInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	((SjScanState *) node)->shared = coordinate;
}

/*
 * Before the parallel query's shared memory goes: a worker leaves its
 * report there, the leader copies the workers' (SjWorkerReport).
 */
void
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
		r->prep_role = state->prep_role;
		r->prep_ms = state->prep_ms;
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
