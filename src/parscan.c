/*
 * parscan.c
 *		Reading the join columns of a table with parallel workers.
 *
 * Scanning and marshalling one backend's way through a large table bounds
 * the joins (tens of nanoseconds a row, against a few for the engines), so
 * a plain table of at least min_parallel_table_scan_size is read by
 * PostgreSQL parallel workers, as a Parallel Seq Scan would read it:
 *
 *	- the leader creates a parallel context (entry point SjParallelScanMain
 *	  in this library) whose shared memory holds the parallel heap scan
 *	  descriptor (with the statement's snapshot), a description of the side
 *	  to build (SjPartSpec), the scan's filter when the custom scan reads
 *	  a filtered Seq Scan (nodeToString form), and a dynamic shared area;
 *	- each worker, and the leader unless parallel_leader_participation is
 *	  off, takes blocks of the table in turn and runs the operator's own row
 *	  function (SjEpsRow, SjSetRow, SjThetaRow) into a side of its own, so
 *	  every row is checked exactly as in a serial scan and errors are the
 *	  same (a worker's error is re-thrown in the leader);
 *	- a worker serializes its side into the shared area (the operator's
 *	  "part" format) and exits; the leader keeps its side where it is and
 *	  hands the parts to the operator, which merges them with its own side
 *	  (on the CPU engine's threads) before the context is released.
 *
 * Ownership: the parts live in the parallel context's shared area; they are
 * valid until SjPartsRelease, or until the (sub)transaction aborts, which
 * releases the context with everything in it.  Workers take no privilege
 * decisions: the leader checked every column before the scan, and a table
 * with row-level security in force is read serially through the executor
 * (marshal.c), or, for the custom scan, with its policies already among the
 * Seq Scan's filter.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shm_toc.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "simjoin.h"

/* Keys of the parallel context's table of contents. */
#define SJ_PAR_KEY_SHARED	UINT64CONST(0x53494D4A4F494E01)
#define SJ_PAR_KEY_SCAN		UINT64CONST(0x53494D4A4F494E02)
#define SJ_PAR_KEY_AREA		UINT64CONST(0x53494D4A4F494E03)
#define SJ_PAR_KEY_QUAL		UINT64CONST(0x53494D4A4F494E04)

/* What the participants share. */
typedef struct SjParShared
{
	SjPartSpec	spec;
	slock_t		mutex;
	int64		rows;			/* rows read by the workers */
	int64		filtered;		/* rows the filter removed, workers */
	int			published;		/* workers whose part is in */
	int			nslots;
	dsa_pointer part[FLEXIBLE_ARRAY_MEMBER];	/* by ParallelWorkerNumber */
} SjParShared;

/* One kind's side: how a participant builds and serializes it. */
typedef struct SjPartOps
{
	void		(*describe) (void *side, SjPartSpec *spec);	/* or NULL */
	void	   *(*begin) (const SjPartSpec *spec);
	SjRowFn		row;
	Size		(*size) (void *side);
	void		(*write) (void *side, char *dst);
} SjPartOps;

static const SjPartOps sj_part_ops[] = {
	[SJ_PART_EPS] = {NULL, SjEpsPartBegin, SjEpsRow, SjEpsPartSize, SjEpsPartWrite},
	[SJ_PART_SETS] = {NULL, SjSetPartBegin, SjSetRow, SjSetPartSize, SjSetPartWrite},
	[SJ_PART_THETA] = {SjThetaPartDescribe, SjThetaPartBegin, SjThetaPartRow, SjThetaPartSize, SjThetaPartWrite},
};

/* The parallel run behind an SjParts. */
typedef struct SjParRun
{
	ParallelContext *pcxt;
	dsa_area   *area;
	const char **part;
} SjParRun;

PGDLLEXPORT void SjParallelScanMain(dsm_segment *seg, shm_toc *toc);

/*
 * Read every row of an open scan into fn: the columns attnums[0..ncols)
 * (an attnum of 0 gives the row's ordinal number as a bigint, for sides
 * whose keys are row numbers), rows failing qual skipped.  fn runs in a
 * per-row context reset after every row.  Returns the rows handed to fn;
 * *filtered counts those the qual removed.
 */
int64
SjScanRows(TableScanDesc scan, TupleTableSlot *slot, int ncols,
		   const AttrNumber *attnums, ExprState *qual, ExprContext *econtext,
		   SjRowFn fn, void *arg, int64 *filtered)
{
	TupleDesc	desc = RelationGetDescr(scan->rs_rd);

	/*
	 * A heap without a filter: tuples straight from the scan's pinned page,
	 * only the columns needed taken from each (no slot filled and pinned
	 * per tuple), which halves the cost of a narrow row.
	 */
	bool		heap = qual == NULL &&
		scan->rs_rd->rd_tableam == GetHeapamTableAmRoutine();
	AttrNumber	maxatt = 0;
	Datum		values[SJ_PART_MAX_COLS];
	bool		isnull[SJ_PART_MAX_COLS];
	MemoryContext rowcxt;
	int64		nread = 0,
				nrows = 0;
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	for (i = 0; i < ncols; i++)
		maxatt = Max(maxatt, attnums[i]);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "simjoin row",
								   ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		HeapTuple	tup = NULL;
		MemoryContext old;

		if (heap)
		{
			if ((tup = heap_getnext(scan, ForwardScanDirection)) == NULL)
				break;
		}
		else if (!table_scan_getnextslot(scan, ForwardScanDirection, slot))
			break;
		if ((++nread & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (qual)
		{
			econtext->ecxt_scantuple = slot;
			if (!ExecQual(qual, econtext))
			{
				ResetExprContext(econtext);
				(*filtered)++;
				continue;
			}
			ResetExprContext(econtext);
		}
		if (!heap && maxatt > 0)
			slot_getsomeattrs(slot, maxatt);
		for (i = 0; i < ncols; i++)
		{
			if (attnums[i] == 0)
			{
				values[i] = Int64GetDatum(nrows);
				isnull[i] = false;
			}
			else if (heap)
				values[i] = heap_getattr(tup, attnums[i], desc, &isnull[i]);
			else
			{
				values[i] = slot->tts_values[attnums[i] - 1];
				isnull[i] = slot->tts_isnull[attnums[i] - 1];
			}
		}
		old = MemoryContextSwitchTo(rowcxt);
		fn(arg, values, isnull);
		MemoryContextSwitchTo(old);
		MemoryContextReset(rowcxt);
		nrows++;
	}
	MemoryContextDelete(rowcxt);
	return nrows;
}

/*
 * How many workers should read rel: none for a table smaller than
 * min_parallel_table_scan_size, or when parallel query is off or we are a
 * worker ourselves; else one per min_parallel_table_scan_size of table (all
 * of max_parallel_workers_per_gather when that size is 0), or the table's
 * parallel_workers option, within max_parallel_workers_per_gather.
 */
int
SjParallelWorkers(Relation rel)
{
	BlockNumber pages;
	int			workers;

	/* workers cannot read the leader's local buffers of a temporary table */
	if (max_parallel_workers_per_gather <= 0 || IsParallelWorker() ||
		!IsUnderPostmaster || RelationUsesLocalBuffers(rel))
		return 0;
	workers = RelationGetParallelWorkers(rel, -1);
	if (workers < 0)
	{
		pages = RelationGetNumberOfBlocks(rel);
		if (min_parallel_table_scan_size <= 0)
			workers = max_parallel_workers_per_gather;
		else if (pages < (BlockNumber) min_parallel_table_scan_size)
			workers = 0;
		else
			workers = (int) Min(pages / (BlockNumber) min_parallel_table_scan_size,
								(BlockNumber) max_parallel_workers_per_gather);
	}
	return Min(workers, max_parallel_workers_per_gather);
}

/* The row function that builds a side of this kind. */
SjRowFn
SjPartRowFn(SjPartKind kind)
{
	return sj_part_ops[kind].row;
}

/*
 * Run fn over ntasks on simjoin.cpu_threads threads: the merges of the
 * parts, which touch only memory the caller allocated.
 */
void
SjParallelCopy(uint64 ntasks, SjTaskFn fn, void *arg)
{
	char		errmsg[SJ_ERRMSG_LEN] = "";
	SjStatus	status;

	status = sj_parallel_for(Max(1, sj_cpu_threads), ntasks, fn, arg);
	if (status != SJ_OK)
	{
		sj_error(errmsg, status, "could not start the threads that merge a parallel scan");
		SjReportStatus(status, errmsg, "simjoin");
	}
}

/* Number the merge tasks of the pieces. */
void
SjMergeTasksInit(SjMergeTasks *tasks, int npieces, const void *pieces,
				 size_t stride, size_t block)
{
	int			p;

	tasks->npieces = npieces;
	tasks->block = block;
	tasks->first = palloc((npieces + 1) * sizeof(uint64));
	tasks->first[0] = 0;
	for (p = 0; p < npieces; p++)
	{
		size_t		rows = *(const size_t *) ((const char *) pieces + p * stride);

		tasks->first[p + 1] = tasks->first[p] + (rows + block - 1) / block;
	}
}

/* The piece of a merge task, and the first of its rows in that piece. */
int
SjMergeTaskPiece(const SjMergeTasks *tasks, uint64 task, size_t *first_row)
{
	int			lo = 0,
				hi = tasks->npieces;

	/* the last piece whose first task is <= task (empty pieces have none) */
	while (hi - lo > 1)
	{
		int			mid = (lo + hi) / 2;

		if (tasks->first[mid] <= task)
			lo = mid;
		else
			hi = mid;
	}
	while (tasks->first[lo + 1] <= task)
		lo++;
	*first_row = (task - tasks->first[lo]) * tasks->block;
	return lo;
}

/* Can a side with these column types be built by workers? */
bool
SjPartTypesOk(SjPartKind kind, int ncols, const Oid *typids)
{
	int			i;

	if (kind != SJ_PART_THETA)
		return true;
	/* text and numeric values are ranked from datums the leader keeps */
	for (i = 0; i < ncols; i++)
		if (typids[i] == TEXTOID || typids[i] == VARCHAROID || typids[i] == NUMERICOID)
			return false;
	return true;
}

/*
 * The worker's side: begin, read its share of the blocks, serialize into
 * the shared area.
 */
static void
SjParticipate(SjParShared *sh, Relation rel, ParallelTableScanDesc pscan,
			  List *quals, dsa_area *area, void *leader_side, int64 *rows,
			  int64 *filtered)
{
	const SjPartOps *ops = &sj_part_ops[sh->spec.kind];
	void	   *side = leader_side ? leader_side : ops->begin(&sh->spec);
	TableScanDesc scan = table_beginscan_parallel(rel, pscan);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	EState	   *estate = NULL;
	ExprContext *econtext = NULL;
	ExprState  *qual = NULL;

	if (quals != NIL)
	{
		estate = CreateExecutorState();
		econtext = CreateExprContext(estate);
		qual = ExecInitQual(quals, NULL);
	}
	*rows = SjScanRows(scan, slot, sh->spec.ncols, sh->spec.attnums, qual,
					   econtext, ops->row, side, filtered);
	if (estate)
		FreeExecutorState(estate);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);

	if (leader_side == NULL)
	{
		Size		size = ops->size(side);
		dsa_pointer dp = dsa_allocate_extended(area, size, DSA_ALLOC_HUGE);

		ops->write(side, dsa_get_address(area, dp));
		SpinLockAcquire(&sh->mutex);
		sh->part[ParallelWorkerNumber] = dp;
		sh->rows += *rows;
		sh->filtered += *filtered;
		sh->published++;
		SpinLockRelease(&sh->mutex);
	}
}

/* Entry point of a parallel worker (CreateParallelContext). */
void
SjParallelScanMain(dsm_segment *seg, shm_toc *toc)
{
	SjParShared *sh = shm_toc_lookup(toc, SJ_PAR_KEY_SHARED, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, SJ_PAR_KEY_SCAN, false);
	char	   *qualstr = shm_toc_lookup(toc, SJ_PAR_KEY_QUAL, true);
	dsa_area   *area = dsa_attach_in_place(shm_toc_lookup(toc, SJ_PAR_KEY_AREA, false), seg);
	List	   *quals = qualstr ? (List *) stringToNode(qualstr) : NIL;
	Relation	rel = table_open(sh->spec.relid, AccessShareLock);
	int64		rows = 0,
				filtered = 0;

	SjParticipate(sh, rel, pscan, quals, area, NULL, &rows, &filtered);
	table_close(rel, AccessShareLock);
	dsa_detach(area);
}

/*
 * Wait until every launched worker has published its part: the merge need
 * not wait for the workers to exit (they do while it runs).  A worker that
 * stopped without a part failed: WaitForParallelWorkersToFinish then
 * reports its error.  Errors of workers are raised here as they come, by
 * CHECK_FOR_INTERRUPTS.
 */
static void
SjWaitForParts(ParallelContext *pcxt, SjParShared *sh)
{
	for (;;)
	{
		int			published;
		int			i;

		CHECK_FOR_INTERRUPTS();
		SpinLockAcquire(&sh->mutex);
		published = sh->published;
		SpinLockRelease(&sh->mutex);
		if (published >= pcxt->nworkers_launched)
			return;
		for (i = 0; i < pcxt->nworkers_launched; i++)
		{
			pid_t		pid;

			if (DsaPointerIsValid(sh->part[i]))
				continue;
			if (pcxt->worker[i].error_mqh == NULL ||
				GetBackgroundWorkerPid(pcxt->worker[i].bgwhandle, &pid) == BGWH_STOPPED)
			{
				/* reports the worker's error; no part and no error is a bug */
				WaitForParallelWorkersToFinish(pcxt);
				for (i = 0; i < pcxt->nworkers_launched; i++)
					if (!DsaPointerIsValid(sh->part[i]))
						elog(ERROR, "parallel worker %d of a simjoin scan ended without its rows", i);
				return;
			}
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Read rel with nworkers parallel workers into leader_side (the leader's
 * share) and parts (the workers'), under snapshot, keeping the rows that
 * pass quals (a list of expressions over rel's attributes, or NIL).
 */
static SjParts *
SjParallelScan(Relation rel, Snapshot snapshot, const SjPartSpec *spec,
			   List *quals, int nworkers, void *leader_side)
{
	SjParts    *parts = palloc0(sizeof(SjParts));
	SjParRun   *run = palloc0(sizeof(SjParRun));
	ParallelContext *pcxt;
	SjParShared *sh;
	ParallelTableScanDesc pscan;
	Size		shared_size = add_size(offsetof(SjParShared, part),
									   mul_size(nworkers, sizeof(dsa_pointer)));
	Size		scan_size;
	Size		area_size = dsa_minimum_size();
	char	   *qualstr = quals != NIL ? nodeToString(quals) : NULL;
	void	   *area_space;
	int64		rows = 0,
				filtered = 0;
	int			i;

	double		t0 = sj_now_ms(),
				t_launched,
				t_leader;

	EnterParallelMode();
	pcxt = CreateParallelContext("simjoin", "SjParallelScanMain", nworkers);
	scan_size = table_parallelscan_estimate(rel, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_size);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_size);
	shm_toc_estimate_chunk(&pcxt->estimator, area_size);
	if (qualstr)
		shm_toc_estimate_chunk(&pcxt->estimator, strlen(qualstr) + 1);
	shm_toc_estimate_keys(&pcxt->estimator, qualstr ? 4 : 3);
	InitializeParallelDSM(pcxt);

	sh = shm_toc_allocate(pcxt->toc, shared_size);
	sh->spec = *spec;
	SpinLockInit(&sh->mutex);
	sh->rows = 0;
	sh->filtered = 0;
	sh->published = 0;
	sh->nslots = nworkers;
	for (i = 0; i < nworkers; i++)
		sh->part[i] = InvalidDsaPointer;
	shm_toc_insert(pcxt->toc, SJ_PAR_KEY_SHARED, sh);
	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(rel, pscan, snapshot);
	shm_toc_insert(pcxt->toc, SJ_PAR_KEY_SCAN, pscan);
	area_space = shm_toc_allocate(pcxt->toc, area_size);
	shm_toc_insert(pcxt->toc, SJ_PAR_KEY_AREA, area_space);
	run->area = dsa_create_in_place(area_space, area_size,
									LWTRANCHE_PARALLEL_QUERY_DSA, pcxt->seg);
	if (qualstr)
	{
		char	   *q = shm_toc_allocate(pcxt->toc, strlen(qualstr) + 1);

		strcpy(q, qualstr);
		shm_toc_insert(pcxt->toc, SJ_PAR_KEY_QUAL, q);
	}
	run->pcxt = pcxt;

	LaunchParallelWorkers(pcxt);
	t_launched = sj_now_ms();
	/* the leader reads too, unless told not to while workers run */
	if (parallel_leader_participation || pcxt->nworkers_launched == 0)
		SjParticipate(sh, rel, pscan, quals, run->area, leader_side, &rows,
					  &filtered);
	t_leader = sj_now_ms();
	SjWaitForParts(pcxt, sh);
	elog(DEBUG2, "simjoin: parallel scan of \"%s\": %d workers; set-up %.1f ms, "
		 "leader's share %.1f ms (%lld rows), workers' end %.1f ms later (%lld rows)",
		 RelationGetRelationName(rel), pcxt->nworkers_launched, t_launched - t0,
		 t_leader - t_launched, (long long) rows, sj_now_ms() - t_leader,
		 (long long) sh->rows);

	run->part = palloc0(Max(nworkers, 1) * sizeof(char *));
	for (i = 0; i < nworkers; i++)
		if (DsaPointerIsValid(sh->part[i]))
			run->part[parts->nparts++] = dsa_get_address(run->area, sh->part[i]);
	parts->part = run->part;
	parts->rows = rows + sh->rows;
	parts->filtered = filtered + sh->filtered;
	parts->workers = pcxt->nworkers_launched;
	parts->run = run;
	return parts;
}

/* Release the shared memory behind parts (NULL: nothing). */
void
SjPartsRelease(SjParts *parts)
{
	SjParRun   *run;

	if (parts == NULL || parts->run == NULL)
		return;
	run = parts->run;
	/* workers that published exit by now; their late errors still count */
	WaitForParallelWorkersToFinish(run->pcxt);
	dsa_detach(run->area);
	DestroyParallelContext(run->pcxt);
	ExitParallelMode();
	parts->run = NULL;
	parts->nparts = 0;
}

/*
 * A side's description for the workers: the columns to read with their
 * types (the key first; keyname, when not NULL, names it in errors), and
 * what the kind adds from the leader's side.
 */
static void
SjPartSpecFill(SjPartSpec *spec, SjPartKind kind, Oid relid, int ncols,
			   const AttrNumber *attnums, const Oid *typids,
			   const char *keyname, const char *what, void *side)
{
	memset(spec, 0, sizeof(*spec));
	spec->kind = kind;
	spec->relid = relid;
	spec->ncols = ncols;
	memcpy(spec->attnums, attnums, ncols * sizeof(AttrNumber));
	memcpy(spec->typids, typids, ncols * sizeof(Oid));
	if (keyname)
		namestrcpy(&spec->keyname, keyname);
	strlcpy(spec->what, what, sizeof(spec->what));
	if (sj_part_ops[kind].describe)
		sj_part_ops[kind].describe(side, spec);
}

/*
 * Read a plain table (the fast path of SjScanRelation) into side: with
 * parallel workers where the table is large enough and the kind allows,
 * returning their parts for the operator to merge; else serially,
 * returning NULL.
 */
SjParts *
SjScanTable(Relation rel, int ncols, const SjColumn *cols, SjPartKind kind,
			void *side, const char *what)
{
	int			nworkers = SjParallelWorkers(rel);
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	Oid			typids[SJ_PART_MAX_COLS];
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	for (i = 0; i < ncols; i++)
	{
		attnums[i] = cols[i].attnum;
		typids[i] = cols[i].typid;
	}
	if (nworkers > 0 && SjPartTypesOk(kind, ncols, typids))
	{
		SjPartSpec	spec;

		SjPartSpecFill(&spec, kind, RelationGetRelid(rel), ncols, attnums, typids,
					   cols[0].name, what, side);
		return SjParallelScan(rel, GetActiveSnapshot(), &spec, NIL, nworkers, side);
	}
	else
	{
		TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
		TupleTableSlot *slot = table_slot_create(rel, NULL);
		int64		filtered = 0;

		SjScanRows(scan, slot, ncols, attnums, NULL, NULL,
				   sj_part_ops[kind].row, side, &filtered);
		ExecDropSingleTupleTableSlot(slot);
		table_endscan(scan);
		return NULL;
	}
}

/* Does expr contain a parameter or a subplan (which workers lack)? */
static bool
SjHasParams(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, SjHasParams, context);
}

/*
 * The custom scan's door: read the input child (a Seq Scan node already
 * initialized by the executor) with parallel workers into side, where it
 * is a filtered scan of a plain table that workers can evaluate; columns
 * are positions in the child's target list (0: a row number), each of
 * which must be a plain column of the table.  Returns NULL, having read
 * nothing, where that does not apply or the table is too small.
 */
SjParts *
SjScanChildParallel(PlanState *child, SjPartKind kind, int ncols,
					const int *positions, const Oid *typids, void *side,
					const char *what)
{
	Plan	   *plan = child->plan;
	SeqScan    *seq;
	EState	   *estate = child->state;
	Relation	rel;
	SjPartSpec	spec;
	SjParts    *parts;
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	int			nworkers;
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	if (!IsA(plan, SeqScan) || plan->parallel_aware || !plan->parallel_safe ||
		plan->initPlan != NIL || child->chgParam != NULL ||
		!IsMVCCSnapshot(estate->es_snapshot) ||
		SjHasParams((Node *) plan->qual, NULL) ||
		!SjPartTypesOk(kind, ncols, typids))
		return NULL;
	seq = (SeqScan *) plan;
	rel = ((ScanState *) child)->ss_currentRelation;
	if (rel == NULL || rel->rd_rel->relkind != RELKIND_RELATION)
		return NULL;

	for (i = 0; i < ncols; i++)
	{
		if (positions[i] == 0)
			attnums[i] = 0;
		else
		{
			TargetEntry *te = list_nth_node(TargetEntry, plan->targetlist, positions[i] - 1);
			Var		   *var = (Var *) te->expr;

			if (!IsA(var, Var) || var->varno != seq->scan.scanrelid ||
				var->varattno <= 0 || var->varlevelsup != 0)
				return NULL;
			attnums[i] = var->varattno;
		}
	}
	SjPartSpecFill(&spec, kind, RelationGetRelid(rel), ncols, attnums, typids,
				   NULL, what, side);
	nworkers = SjParallelWorkers(rel);
	if (nworkers == 0)
		return NULL;

	if (child->instrument)
		InstrStartNode(child->instrument);
	parts = SjParallelScan(rel, estate->es_snapshot, &spec, plan->qual,
						   nworkers, side);
	if (child->instrument)
	{
		InstrStopNode(child->instrument, (double) parts->rows);
		child->instrument->nfiltered1 += (double) parts->filtered;
	}
	return parts;
}
