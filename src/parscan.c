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
 *	  a filtered Seq Scan (nodeToString form);
 *	- each worker, and the leader unless parallel_leader_participation is
 *	  off, takes blocks of the table in turn and runs the operator's own row
 *	  function (SjEpsRow, SjSetRow, SjThetaRow) into a side of its own, so
 *	  every row is checked exactly as in a serial scan and errors are the
 *	  same (a worker's error is re-thrown in the leader);
 *	- a worker serializes its side into a shared memory segment of its own
 *	  (the operator's "part" format), keeps it until the leader has merged
 *	  it and let it go, and exits; the leader keeps its side where it is
 *	  and hands the parts to the operator, which merges them with its own
 *	  side (on the CPU engine's threads) before the context is released.
 *	  A segment's memory goes back to the system with its last mapping, at
 *	  a cost that grows with its size (a tenth of a second or more for a
 *	  gigabyte of 4 kB pages): the leader unmaps the parts first, so that
 *	  each worker frees its own, all at once, rather than the leader all
 *	  of them in turn.
 *
 * The two tables of a two-table join (functions and counting node alike)
 * are read in one parallel context, one after the other by every
 * participant (SjScanTablePair, SjScanChildrenParallel): workers take tens
 * of milliseconds to start and to write their parts, which two contexts
 * paid twice, and a side too small for workers of its own rides along
 * (unless its parallel_workers option is 0).  Both sides are read before
 * either is merged, so where both would fail, the error raised may be the
 * other side's than in a serial read.
 *
 * Ownership: the parts live in segments the leader maps (under its
 * resource owner) once every worker has published; they are valid until
 * SjPartsRelease, or until the (sub)transaction aborts, which releases the
 * mappings and the context.  Workers take no privilege
 * decisions: the leader checked every column before the scan, and a table
 * with row-level security in force is read serially through the executor
 * (marshal.c), or, for the custom scan, with its policies already among the
 * Seq Scan's filter.
 *
 * Size: this file stays whole (about 1,100 lines) on purpose: it is the
 * parallel protocol, the leader's side (SjParallelScan, SjWaitForParts,
 * SjPartsRelease) and the workers' (SjParallelScanMain, SjParticipate)
 * over one shared layout (SjParShared and the table-of-contents keys), and
 * the two halves must be read and changed together.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
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
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shm_toc.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "eps_join.h"
#include "jaccard_join.h"
#include "marshal.h"
#include "postgis.h"
#include "sjrun.h"
#include "theta_join.h"
#include "toastread.h"

/*
 * Keys of the parallel context's table of contents: one scan descriptor
 * and one filter per relation read (job).
 */
#define SJ_PAR_KEY_SHARED	UINT64CONST(0x53494D4A4F494E01)
#define SJ_PAR_KEY_SCAN(j)	(UINT64CONST(0x53494D4A4F494E10) + (j))
#define SJ_PAR_KEY_QUAL(j)	(UINT64CONST(0x53494D4A4F494E20) + (j))

/*
 * How often a worker that waits for the leader looks again without being
 * woken (SjReleaseWorkers wakes them): a safety net.
 */
#define SJ_PAR_WORKER_POLL_MS	50L

/* Relations one parallel context reads, one after the other. */
#define SJ_PAR_MAX_JOBS		2

/* What the participants share. */
typedef struct SjParShared
{
	int			njobs;
	SjPartSpec	spec[SJ_PAR_MAX_JOBS];
	slock_t		mutex;
	int64		rows[SJ_PAR_MAX_JOBS];	/* rows read by the workers */
	int64		filtered[SJ_PAR_MAX_JOBS];	/* rows the filter removed, workers */
	int			published;		/* workers whose parts are all in */
	double		read_ms;		/* the slowest worker's read, its serialize */
	double		write_ms;
	bool		released;		/* the leader is done with the parts */
	int			nslots;
	/* [job * nslots + ParallelWorkerNumber]: each part's own segment */
	dsm_handle	part[FLEXIBLE_ARRAY_MEMBER];
} SjParShared;

/* One relation of a parallel read, as the leader describes it. */
typedef struct SjScanJob
{
	Relation	rel;
	SjPartSpec	spec;
	List	   *quals;			/* filter over rel's attributes, or NIL */
	void	   *side;			/* the leader's side */
	Instrumentation *instrument;	/* the custom scan child's, or NULL */
	bool		serial_only;	/* workers must not read rel */
} SjScanJob;

/* Each kind's part format, from its operator's file. */
static const SjPartOps *const sj_part_ops[] = {
	[SJ_PART_EPS] = &sj_eps_part_ops,
	[SJ_PART_SETS] = &sj_set_part_ops,
	[SJ_PART_THETA] = &sj_theta_part_ops,
	[SJ_PART_POINTS] = &sj_point_part_ops,
};

/* The parallel run behind the SjParts of its jobs. */
typedef struct SjParRun
{
	ParallelContext *pcxt;
	dsm_segment **segs;			/* the workers' parts, mapped */
	int			nsegs;
	int			refs;			/* SjParts not yet released */
	SjParShared *sh;			/* in the context's segment */
} SjParRun;

PGDLLEXPORT void SjParallelScanMain(dsm_segment *seg, shm_toc *toc);

/*
 * The heap fast path of SjScanRows: whole pages at a time.  heapgetpage()
 * reads a block, prunes it and leaves the offsets of the tuples the
 * snapshot sees (with the serializable checks done); the tuples are then
 * read straight from the pinned buffer, which page mode allows.  Blocks come
 * from the parallel scan's allocator, or in order from the first.  This
 * skips heap_getnext()'s per-tuple state machine, the largest cost of a
 * narrow row after the columns themselves.  Out-of-line values of the
 * columns read come through one TOAST reader a column (toastread.c), not
 * PostgreSQL's detoast a value, unless simjoin.debug_detoast_each.
 */
static int64
SjScanHeapPages(TableScanDesc sscan, int ncols, const AttrNumber *attnums,
				SjRowFn fn, void *arg, MemoryContext rowcxt)
{
	HeapScanDesc scan = (HeapScanDesc) sscan;
	Relation	rel = sscan->rs_rd;
	TupleDesc	desc = RelationGetDescr(rel);
	ParallelBlockTableScanDesc pbscan = (ParallelBlockTableScanDesc) sscan->rs_parallel;
	Datum		values[SJ_PART_MAX_COLS];
	bool		isnull[SJ_PART_MAX_COLS];
	BlockNumber blk;
	HeapTupleData tup;
	int64		nrows = 0;
	int			i;
	AttrNumber	maxatt = 0;
	bool		fixed = true;	/* every column up to maxatt fixed-width */
	int			offs[SJ_PART_MAX_COLS];
	bool		varlena[SJ_PART_MAX_COLS];	/* out-of-line values possible */
	SjToastReader *readers = NULL;	/* one a column, where any is varlena */

	/*
	 * Where every attribute up to the last one read has a fixed width, a
	 * tuple without nulls holds each at the same offset from t_hoff: the
	 * offsets fastgetattr() would cache, taken once here.
	 */
	for (i = 0; i < ncols; i++)
		maxatt = Max(maxatt, attnums[i]);
	{
		int			off = 0;
		int			a;
		int			attoff[MaxHeapAttributeNumber];

		for (a = 0; a < maxatt && fixed; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (att->attlen <= 0)
				fixed = false;
			else
			{
				off = att_align_nominal(off, att->attalign);
				attoff[a] = off;
				off += att->attlen;
			}
		}
		for (i = 0; i < ncols && fixed; i++)
			offs[i] = attnums[i] > 0 ? attoff[attnums[i] - 1] : 0;
	}

	/* out-of-line values through a reader a column (toastread.c) */
	for (i = 0; i < ncols; i++)
	{
		varlena[i] = attnums[i] > 0 && !sj_debug_detoast_each &&
			TupleDescAttr(desc, attnums[i] - 1)->attlen == -1;
		if (varlena[i] && readers == NULL)
			readers = palloc0(ncols * sizeof(SjToastReader));
	}

	tup.t_tableOid = RelationGetRelid(rel);
	if (pbscan)
	{
		table_block_parallelscan_startblock_init(rel, scan->rs_parallelworkerdata,
												 pbscan);
		blk = table_block_parallelscan_nextpage(rel, scan->rs_parallelworkerdata,
												pbscan);
	}
	else
		blk = scan->rs_nblocks > 0 ? 0 : InvalidBlockNumber;

	while (blk != InvalidBlockNumber)
	{
		Page		page;
		int			j;

		heapgetpage(sscan, blk);	/* checks for interrupts */
		page = BufferGetPage(scan->rs_cbuf);
		for (j = 0; j < scan->rs_ntuples; j++)
		{
			OffsetNumber off = scan->rs_vistuples[j];
			ItemId		lp = PageGetItemId(page, off);
			MemoryContext old;

			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			ItemPointerSet(&tup.t_self, blk, off);
			pgstat_count_heap_getnext(rel);
			if (fixed && !HeapTupleHasNulls(&tup) &&
				HeapTupleHeaderGetNatts(tup.t_data) >= maxatt)
			{
				char	   *data = (char *) tup.t_data + tup.t_data->t_hoff;

				for (i = 0; i < ncols; i++)
				{
					isnull[i] = false;
					if (attnums[i] == 0)
						values[i] = Int64GetDatum(nrows);
					else
						values[i] = fetchatt(TupleDescAttr(desc, attnums[i] - 1),
											 data + offs[i]);
				}
			}
			else
			{
				for (i = 0; i < ncols; i++)
				{
					if (attnums[i] == 0)
					{
						values[i] = Int64GetDatum(nrows);
						isnull[i] = false;
					}
					else
						values[i] = heap_getattr(&tup, attnums[i], desc, &isnull[i]);
				}
			}
			if (readers)
			{
				for (i = 0; i < ncols; i++)
					if (varlena[i] && !isnull[i])
						values[i] = SjToastRead(&readers[i], values[i]);
			}
			old = MemoryContextSwitchTo(rowcxt);
			fn(arg, values, isnull);
			MemoryContextSwitchTo(old);
			MemoryContextReset(rowcxt);
			nrows++;
		}
		if (pbscan)
			blk = table_block_parallelscan_nextpage(rel, scan->rs_parallelworkerdata,
													pbscan);
		else
			blk = blk + 1 < scan->rs_nblocks ? blk + 1 : InvalidBlockNumber;
	}
	if (readers)
	{
		for (i = 0; i < ncols; i++)
		{
			if (readers[i].values > 0)
				elog(DEBUG2, "simjoin: %lld out-of-line values of column %d of \"%s\" read "
					 "through one TOAST index scan", (long long) readers[i].values,
					 attnums[i], RelationGetRelationName(rel));
			SjToastReaderEnd(&readers[i]);
		}
		pfree(readers);
	}
	return nrows;
}

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
	if (heap && (scan->rs_flags & SO_ALLOW_PAGEMODE))
	{
		nrows = SjScanHeapPages(scan, ncols, attnums, fn, arg, rowcxt);
		MemoryContextDelete(rowcxt);
		return nrows;
	}
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
 * The blocks of relid's TOAST relation (0 where it has none).  Long vectors
 * and sets live there, out of line: a table of 768-D float4[] has a main
 * fork of a few pointers a row, and its reading time follows these blocks.
 */
BlockNumber
SjToastBlocks(Oid relid)
{
	HeapTuple	tuple;
	Oid			toastid;
	Relation	toast;
	BlockNumber blocks;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return 0;
	toastid = ((Form_pg_class) GETSTRUCT(tuple))->reltoastrelid;
	ReleaseSysCache(tuple);
	if (!OidIsValid(toastid))
		return 0;
	toast = try_relation_open(toastid, AccessShareLock);
	if (toast == NULL)
		return 0;
	blocks = RelationGetNumberOfBlocks(toast);
	relation_close(toast, AccessShareLock);
	return blocks;
}

/*
 * How many workers should read rel: none for a table smaller than
 * min_parallel_table_scan_size, or when parallel query is off or we are a
 * worker ourselves; else one per min_parallel_table_scan_size of table (all
 * of max_parallel_workers_per_gather when that size is 0), or the table's
 * parallel_workers option, within max_parallel_workers_per_gather.  The
 * table's size includes its TOAST relation: the workers that take the main
 * fork's blocks in turn detoast their own rows' values.
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
		pages = RelationGetNumberOfBlocks(rel) + SjToastBlocks(RelationGetRelid(rel));
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
	return sj_part_ops[kind]->row;
}

/*
 * A merge in progress: the pieces (structs of stride bytes, each beginning
 * with its row count, a size_t), cut into tasks of up to block rows of one
 * piece each, and the operator's copy of one task's rows.
 */
typedef struct SjMerge
{
	int			npieces;
	const char *pieces;
	size_t		stride;
	size_t		block;
	uint64	   *first;			/* first task of each piece; [npieces]: all */
	SjMergeFn	fn;
	void	   *arg;
} SjMerge;

/* The row count of a merge's piece p. */
static size_t
SjMergePieceRows(const SjMerge *merge, int p)
{
	return *(const size_t *) (merge->pieces + p * merge->stride);
}

/* Merge task: find its piece and rows, and let the operator copy them. */
static void
SjMergeTask(void *arg, uint64_t task, int worker)
{
	const SjMerge *merge = (const SjMerge *) arg;
	int			lo = 0,
				hi = merge->npieces;
	size_t		first;

	/* the last piece whose first task is <= task (empty pieces have none) */
	while (hi - lo > 1)
	{
		int			mid = (lo + hi) / 2;

		if (merge->first[mid] <= task)
			lo = mid;
		else
			hi = mid;
	}
	while (merge->first[lo + 1] <= task)
		lo++;
	first = (task - merge->first[lo]) * merge->block;
	merge->fn(merge->arg, lo, first,
			  Min(first + merge->block, SjMergePieceRows(merge, lo)));
}

/*
 * Merge pieces (the leader's side and the workers' parts) into one side on
 * simjoin.cpu_threads threads: fn copies rows [first, last) of one piece,
 * at most block of them, touching only memory the caller allocated.
 */
void
SjMergePieces(int npieces, const void *pieces, size_t stride, size_t block,
			  SjMergeFn fn, void *arg)
{
	SjMerge		merge;
	char		errmsg[SJ_ERRMSG_LEN] = "";
	SjStatus	status;
	int			p;

	merge.npieces = npieces;
	merge.pieces = (const char *) pieces;
	merge.stride = stride;
	merge.block = block;
	merge.fn = fn;
	merge.arg = arg;
	merge.first = palloc((npieces + 1) * sizeof(uint64));
	merge.first[0] = 0;
	for (p = 0; p < npieces; p++)
		merge.first[p + 1] = merge.first[p] +
			(SjMergePieceRows(&merge, p) + block - 1) / block;

	status = sj_parallel_for(Max(1, sj_cpu_threads), merge.first[npieces],
							 SjMergeTask, &merge);
	if (status != SJ_OK)
	{
		sj_error(errmsg, status, "could not start the threads that merge a parallel scan");
		SjReportStatus(status, errmsg, "simjoin");
	}
	pfree(merge.first);
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
	{
		Oid			base = getBaseType(typids[i]);

		if (base == TEXTOID || base == VARCHAROID || base == NUMERICOID)
			return false;
	}
	return true;
}

/*
 * Read an open scan into side (kind's row function, the columns attnums),
 * rows failing quals skipped, then end the scan.  Returns the rows kept;
 * *filtered counts those the quals removed.
 */
static int64
SjScanSide(TableScanDesc scan, SjPartKind kind, int ncols, const AttrNumber *attnums,
		   List *quals, void *side, int64 *filtered)
{
	TupleTableSlot *slot = table_slot_create(scan->rs_rd, NULL);
	EState	   *estate = NULL;
	ExprContext *econtext = NULL;
	ExprState  *qual = NULL;
	int64		rows;

	if (quals != NIL)
	{
		estate = CreateExecutorState();
		econtext = CreateExprContext(estate);
		qual = ExecInitQual(quals, NULL);
	}
	rows = SjScanRows(scan, slot, ncols, attnums, qual, econtext,
					  sj_part_ops[kind]->row, side, filtered);
	if (estate)
		FreeExecutorState(estate);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	return rows;
}

/*
 * A participant's share of one job: begin a side (the leader passes its
 * own), read blocks of the relation in turn, and, for a worker, serialize
 * the side into a shared memory segment of its own (*seg, which the worker
 * keeps mapped until the leader has merged and unmapped it).  Returns the
 * segment's handle (DSM_HANDLE_INVALID for the leader); ms, when not NULL,
 * gets the milliseconds of the read and of the serialization.  Each part
 * has its own segment, created by its worker while the others create
 * theirs: one shared area would create and zero them one at a time, under
 * its lock.
 */
static dsm_handle
SjParticipate(const SjPartSpec *spec, Relation rel, ParallelTableScanDesc pscan,
			  List *quals, dsm_segment **seg, void *leader_side, int64 *rows,
			  int64 *filtered, double *ms)
{
	double		t0 = sj_now_ms();
	const SjPartOps *ops = sj_part_ops[spec->kind];
	MemoryContext cxt = NULL,
				old = NULL;
	void	   *side;
	dsm_handle	handle = DSM_HANDLE_INVALID;

	/* a worker's side lives until it is serialized */
	if (leader_side == NULL)
	{
		cxt = AllocSetContextCreate(CurrentMemoryContext, "simjoin part",
									ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(cxt);
	}
	side = leader_side ? leader_side : ops->begin(spec);
	*rows = SjScanSide(table_beginscan_parallel(rel, pscan), spec->kind, spec->ncols,
					   spec->attnums, quals, side, filtered);
	if (ms)
		ms[0] = sj_now_ms() - t0;

	if (leader_side == NULL)
	{
		Size		size = ops->size(side);

		Assert(seg != NULL);
		*seg = dsm_create(Max(size, 1), 0);
		ops->write(side, dsm_segment_address(*seg));
		handle = dsm_segment_handle(*seg);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
	}
	if (ms)
		ms[1] = sj_now_ms() - t0 - ms[0];
	return handle;
}

/*
 * Entry point of a parallel worker (CreateParallelContext): every job in
 * turn, each part published as soon as it is written; the worker counts as
 * published once all its parts are in.  It then keeps its parts' segments
 * until the leader has merged and unmapped them (a segment goes with its
 * last mapping: the worker's detach frees its memory), and exits; should
 * the leader fail first, it terminates the worker.
 */
void
SjParallelScanMain(dsm_segment *seg, shm_toc *toc)
{
	SjParShared *sh = shm_toc_lookup(toc, SJ_PAR_KEY_SHARED, false);
	dsm_segment *parts[SJ_PAR_MAX_JOBS] = {NULL};
	int			j;

	for (j = 0; j < sh->njobs; j++)
	{
		ParallelTableScanDesc pscan = shm_toc_lookup(toc, SJ_PAR_KEY_SCAN(j), false);
		char	   *qualstr = shm_toc_lookup(toc, SJ_PAR_KEY_QUAL(j), true);
		List	   *quals = qualstr ? (List *) stringToNode(qualstr) : NIL;
		Relation	rel = table_open(sh->spec[j].relid, AccessShareLock);
		int64		rows = 0,
					filtered = 0;
		dsm_handle	handle;
		double		ms[2];

		handle = SjParticipate(&sh->spec[j], rel, pscan, quals, &parts[j], NULL, &rows,
							   &filtered, ms);
		table_close(rel, AccessShareLock);
		SpinLockAcquire(&sh->mutex);
		sh->read_ms = Max(sh->read_ms, ms[0]);
		sh->write_ms = Max(sh->write_ms, ms[1]);
		sh->part[j * sh->nslots + ParallelWorkerNumber] = handle;
		sh->rows[j] += rows;
		sh->filtered[j] += filtered;
		if (j == sh->njobs - 1)
			sh->published++;
		SpinLockRelease(&sh->mutex);
	}
	for (;;)
	{
		bool		released;

		CHECK_FOR_INTERRUPTS();
		SpinLockAcquire(&sh->mutex);
		released = sh->released;
		SpinLockRelease(&sh->mutex);
		if (released)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SJ_PAR_WORKER_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	for (j = 0; j < sh->njobs; j++)
		if (parts[j])
			dsm_detach(parts[j]);
}

/*
 * Let the workers that wait for the leader (SjParallelScanMain) detach
 * their parts and exit: once it has merged and unmapped them
 * (SjPartsRelease), or where the scan fails before mapping them.
 */
static void
SjReleaseWorkers(SjParShared *sh, ParallelContext *pcxt)
{
	int			i;

	SpinLockAcquire(&sh->mutex);
	sh->released = true;
	SpinLockRelease(&sh->mutex);
	/* wake them (a worker that has exited, or not started, is skipped) */
	for (i = 0; i < pcxt->nworkers_launched; i++)
	{
		pid_t		pid;
		PGPROC	   *proc;

		if (pcxt->worker[i].bgwhandle == NULL ||
			GetBackgroundWorkerPid(pcxt->worker[i].bgwhandle, &pid) != BGWH_STARTED)
			continue;
		proc = BackendPidGetProc(pid);
		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}
}

/*
 * Wait until every launched worker has published its parts (they exit once
 * the leader has merged them, SjPartsRelease).  A worker that
 * stopped without its last part failed: WaitForParallelWorkersToFinish
 * then reports its error.  Errors of workers are raised here as they come,
 * by CHECK_FOR_INTERRUPTS.
 */
static void
SjWaitForParts(ParallelContext *pcxt, SjParShared *sh)
{
	dsm_handle *last = &sh->part[(sh->njobs - 1) * sh->nslots];

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

			if (last[i] != DSM_HANDLE_INVALID)
				continue;
			if (pcxt->worker[i].error_mqh == NULL ||
				GetBackgroundWorkerPid(pcxt->worker[i].bgwhandle, &pid) == BGWH_STOPPED)
			{
				/*
				 * Let the workers that published go (they wait for the
				 * leader's merge, which this scan will not make), then
				 * report the worker's error; no part and no error is a bug.
				 */
				SjReleaseWorkers(sh, pcxt);
				WaitForParallelWorkersToFinish(pcxt);
				for (i = 0; i < pcxt->nworkers_launched; i++)
					if (last[i] == DSM_HANDLE_INVALID)
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
 * Read the jobs' relations with nworkers parallel workers in one parallel
 * context, under snapshot: every participant reads its share of the first
 * relation, then of the second, so that the workers start (tens of
 * milliseconds) once for both.  The leader's shares go into the jobs'
 * sides, the workers' come back as parts[j] (all sharing the context,
 * released by SjPartsRelease on each).
 */
static void
SjParallelScan(SjScanJob *jobs, int njobs, Snapshot snapshot, int nworkers,
			   SjParts **parts)
{
	SjParRun   *run = palloc0(sizeof(SjParRun));
	ParallelContext *pcxt;
	SjParShared *sh;
	Size		shared_size = add_size(offsetof(SjParShared, part),
									   mul_size(mul_size(nworkers, njobs),
												sizeof(dsm_handle)));
	Size		scan_size[SJ_PAR_MAX_JOBS];
	char	   *qualstr[SJ_PAR_MAX_JOBS];
	ParallelTableScanDesc pscan[SJ_PAR_MAX_JOBS];
	int64		rows[SJ_PAR_MAX_JOBS],
				filtered[SJ_PAR_MAX_JOBS];
	int			nkeys = 1;
	int			i,
				j;
	double		t0 = sj_now_ms(),
				t_launched,
				t_leader;

	Assert(njobs >= 1 && njobs <= SJ_PAR_MAX_JOBS);
	EnterParallelMode();
	pcxt = CreateParallelContext("simjoin", "SjParallelScanMain", nworkers);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_size);
	for (j = 0; j < njobs; j++)
	{
		scan_size[j] = table_parallelscan_estimate(jobs[j].rel, snapshot);
		shm_toc_estimate_chunk(&pcxt->estimator, scan_size[j]);
		nkeys++;
		qualstr[j] = jobs[j].quals != NIL ? nodeToString(jobs[j].quals) : NULL;
		if (qualstr[j])
		{
			shm_toc_estimate_chunk(&pcxt->estimator, strlen(qualstr[j]) + 1);
			nkeys++;
		}
	}
	shm_toc_estimate_keys(&pcxt->estimator, nkeys);
	InitializeParallelDSM(pcxt);

	sh = shm_toc_allocate(pcxt->toc, shared_size);
	memset(sh, 0, shared_size);
	sh->njobs = njobs;
	SpinLockInit(&sh->mutex);
	sh->nslots = nworkers;
	for (i = 0; i < nworkers * njobs; i++)
		sh->part[i] = DSM_HANDLE_INVALID;
	for (j = 0; j < njobs; j++)
		sh->spec[j] = jobs[j].spec;
	shm_toc_insert(pcxt->toc, SJ_PAR_KEY_SHARED, sh);
	for (j = 0; j < njobs; j++)
	{
		pscan[j] = shm_toc_allocate(pcxt->toc, scan_size[j]);
		table_parallelscan_initialize(jobs[j].rel, pscan[j], snapshot);
		shm_toc_insert(pcxt->toc, SJ_PAR_KEY_SCAN(j), pscan[j]);
		if (qualstr[j])
		{
			char	   *q = shm_toc_allocate(pcxt->toc, strlen(qualstr[j]) + 1);

			strcpy(q, qualstr[j]);
			shm_toc_insert(pcxt->toc, SJ_PAR_KEY_QUAL(j), q);
		}
	}
	run->pcxt = pcxt;
	run->sh = sh;

	LaunchParallelWorkers(pcxt);
	t_launched = sj_now_ms();

	/*
	 * The leader reads too, unless told not to while workers run.  A custom
	 * scan child's instrumentation times the leader's share of its own
	 * table (its buffers included), the last also the wait for the
	 * workers; rows count everyone's.
	 */
	for (j = 0; j < njobs; j++)
	{
		rows[j] = filtered[j] = 0;
		if (jobs[j].instrument)
			InstrStartNode(jobs[j].instrument);
		if (parallel_leader_participation || pcxt->nworkers_launched == 0)
			(void) SjParticipate(&jobs[j].spec, jobs[j].rel, pscan[j], jobs[j].quals,
								 NULL, jobs[j].side, &rows[j], &filtered[j], NULL);
		if (jobs[j].instrument && j < njobs - 1)
			InstrStopNode(jobs[j].instrument, 0);
	}
	t_leader = sj_now_ms();
	SjWaitForParts(pcxt, sh);
	elog(DEBUG2, "simjoin: parallel scan of \"%s\"%s%s%s: %d workers; set-up %.1f ms, "
		 "leader's share %.1f ms (%lld rows), workers' end %.1f ms later (%lld rows; "
		 "the slowest worker's read %.1f ms, its copy into shared memory %.1f ms)",
		 RelationGetRelationName(jobs[0].rel), njobs > 1 ? " and \"" : "",
		 njobs > 1 ? RelationGetRelationName(jobs[1].rel) : "", njobs > 1 ? "\"" : "",
		 pcxt->nworkers_launched, t_launched - t0, t_leader - t_launched,
		 (long long) (rows[0] + (njobs > 1 ? rows[1] : 0)), sj_now_ms() - t_leader,
		 (long long) (sh->rows[0] + (njobs > 1 ? sh->rows[1] : 0)),
		 sh->read_ms, sh->write_ms);

	run->refs = njobs;
	run->segs = palloc0(Max(nworkers * njobs, 1) * sizeof(dsm_segment *));
	for (j = 0; j < njobs; j++)
	{
		SjParts    *pt = palloc0(sizeof(SjParts));
		const char **part = palloc0(Max(nworkers, 1) * sizeof(char *));

		pt->segs = palloc0(Max(nworkers, 1) * sizeof(void *));

		for (i = 0; i < nworkers; i++)
		{
			dsm_handle	handle = sh->part[j * nworkers + i];
			dsm_segment *seg;

			if (handle == DSM_HANDLE_INVALID)
				continue;
			seg = dsm_attach(handle);
			if (seg == NULL)
				elog(ERROR, "could not map the rows of parallel worker %d of a simjoin scan", i);
			run->segs[run->nsegs++] = seg;
			pt->segs[pt->nparts] = seg;
			part[pt->nparts++] = dsm_segment_address(seg);
		}
		pt->part = part;
		pt->rows = rows[j] + sh->rows[j];
		pt->filtered = filtered[j] + sh->filtered[j];
		pt->workers = pcxt->nworkers_launched;
		pt->run = run;
		if (jobs[j].instrument)
		{
			if (j == njobs - 1)
				InstrStopNode(jobs[j].instrument, (double) pt->rows);
			else
				jobs[j].instrument->tuplecount += (double) pt->rows;
			jobs[j].instrument->nfiltered1 += (double) pt->filtered;
		}
		parts[j] = pt;
	}
	/* the workers keep their parts until SjPartsRelease */
}

/*
 * on_dsm_detach callback of a kept part (arg: its parts' keep_token):
 * whatever unmaps it other than SjPartsUnmap (an abort's resource owner, a
 * FATAL exit's shutdown) first stops the joins that may still read it on
 * other threads, those whose cursors name the token (SjStopLiveJoin); no
 * other join, such as an outer query's open cursor when a subtransaction
 * aborts.
 */
static void
SjKeptPartDetach(dsm_segment *seg, Datum arg)
{
	SjStopLiveJoin(DatumGetUInt32(arg));
}

/*
 * Keep parts mapped after SjPartsRelease, until SjPartsUnmap: an engine
 * that reads the workers' rows in place (SjVectors.pieces).  The workers
 * still go at SjPartsRelease; the leader's mapping, the last, then frees
 * the memory when it is unmapped.
 */
void
SjPartsKeep(SjParts *parts)
{
	static uint32 last_token = 0;

	if (parts != NULL && parts->run != NULL)
	{
		parts->keep = true;
		if (++last_token == 0)
			last_token = 1;
		parts->keep_token = last_token;
	}
}

/* The token of parts SjPartsKeep kept, for the cursor that reads them; else 0. */
uint32
SjPartsToken(const SjParts *parts)
{
	return parts != NULL && parts->keep ? parts->keep_token : 0;
}

/*
 * Can SjPartsKeep keep parts mapped (NULL or none: nothing to keep)?  Only
 * a parallel scan's (SjParallelScan), not parts gathered in a
 * parallel query's shared memory, which goes with its Gather.
 */
bool
SjPartsKeepable(const SjParts *parts)
{
	return parts == NULL || parts->nparts == 0 || parts->run != NULL;
}

/* Unmap the parts that SjPartsKeep kept (NULL, or not kept: nothing). */
void
SjPartsUnmap(SjParts *parts)
{
	double		t0 = sj_now_ms();
	int			i;

	if (parts == NULL || !parts->keep)
		return;
	parts->keep = false;
	for (i = 0; i < parts->nparts; i++)
	{
		dsm_segment *seg = (dsm_segment *) parts->segs[i];

		cancel_on_dsm_detach(seg, SjKeptPartDetach, UInt32GetDatum(parts->keep_token));
		dsm_detach(seg);
	}
	elog(DEBUG2, "simjoin: %d kept parts unmapped in %.1f ms", parts->nparts,
		 sj_now_ms() - t0);
	parts->nparts = 0;
}

/*
 * Release parts (NULL: nothing); the shared memory behind them goes with
 * the last SjParts of their parallel context, except kept parts'
 * (SjPartsKeep), which stay mapped until SjPartsUnmap.
 */
void
SjPartsRelease(SjParts *parts)
{
	SjParRun   *run;
	double		t0,
				t1;
	int			i,
				k;

	if (parts == NULL || parts->run == NULL)
		return;
	run = parts->run;
	parts->run = NULL;
	if (parts->keep)
	{
		/* the parallel context's teardown leaves them mapped */
		for (i = 0; i < parts->nparts; i++)
		{
			for (k = 0; k < run->nsegs; k++)
				if (run->segs[k] == parts->segs[i])
					run->segs[k] = NULL;
			on_dsm_detach((dsm_segment *) parts->segs[i], SjKeptPartDetach,
						  UInt32GetDatum(parts->keep_token));
		}
	}
	else
		parts->nparts = 0;
	if (--run->refs > 0)
		return;
	/*
	 * Unmap the parts, then let the workers go: each frees its own
	 * segments' memory as it detaches (the last mapping), in parallel,
	 * while the leader only unmaps.  Their late errors still count.
	 */
	t0 = sj_now_ms();
	while (run->nsegs > 0)
	{
		dsm_segment *seg = run->segs[--run->nsegs];

		if (seg != NULL)
			dsm_detach(seg);
	}
	t1 = sj_now_ms();
	SjReleaseWorkers(run->sh, run->pcxt);
	WaitForParallelWorkersToFinish(run->pcxt);
	DestroyParallelContext(run->pcxt);
	elog(DEBUG2, "simjoin: parallel scan's parts unmapped in %.1f ms, the workers gone %.1f ms later",
		 t1 - t0, sj_now_ms() - t1);
	ExitParallelMode();
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
	if (sj_part_ops[kind]->describe)
		sj_part_ops[kind]->describe(side, spec);
}

/*
 * A side of kind for rows its caller feeds one by one (a participant's
 * share of the custom scan's shared inner input), with the columns and
 * derivations of model, the operator's own side of that input; the
 * columns are positions in the caller's rows (0: the row's key).
 */
void *
SjPartSideBegin(SjPartKind kind, int ncols, const int *positions,
				const Oid *typids, const char *what, void *model)
{
	SjPartSpec	spec;
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	for (i = 0; i < ncols; i++)
		attnums[i] = (AttrNumber) positions[i];
	SjPartSpecFill(&spec, kind, InvalidOid, ncols, attnums, typids, "row",
				   what, model);
	return sj_part_ops[kind]->begin(&spec);
}

/* Bytes of such a side in its kind's part format. */
Size
SjPartSideSize(SjPartKind kind, void *side)
{
	return sj_part_ops[kind]->size(side);
}

/* Serialize such a side into dst (SjPartSideSize bytes). */
void
SjPartSideWrite(SjPartKind kind, void *side, char *dst)
{
	sj_part_ops[kind]->write(side, dst);
}

/*
 * The job of reading a plain table's columns into side with workers, if
 * workers can read it and build its kind; *nworkers says how many its size
 * asks for (maybe 0).
 */
static bool
SjTableJob(Relation rel, int ncols, const SjColumn *cols, SjPartKind kind,
		   void *side, const char *what, SjScanJob *job, int *nworkers)
{
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	Oid			typids[SJ_PART_MAX_COLS];
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	for (i = 0; i < ncols; i++)
	{
		attnums[i] = cols[i].attnum;
		typids[i] = cols[i].typid;
	}
	*nworkers = SjParallelWorkers(rel);
	/* parallel_workers = 0 opts a table out, even of riding along */
	if (RelationUsesLocalBuffers(rel) || RelationGetParallelWorkers(rel, -1) == 0 ||
		!SjPartTypesOk(kind, ncols, typids))
		return false;
	memset(job, 0, sizeof(*job));
	job->rel = rel;
	SjPartSpecFill(&job->spec, kind, RelationGetRelid(rel), ncols, attnums, typids,
				   cols[0].name, what, side);
	job->side = side;
	return true;
}

/* Read a plain table serially into side. */
static void
SjScanTableSerial(Relation rel, int ncols, const SjColumn *cols, SjPartKind kind,
				  void *side)
{
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	int64		filtered = 0;
	int			i;

	for (i = 0; i < ncols; i++)
		attnums[i] = cols[i].attnum;
	(void) SjScanSide(table_beginscan(rel, GetActiveSnapshot(), 0, NULL), kind, ncols,
					  attnums, NIL, side, &filtered);
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
	SjScanJob	job;
	SjParts    *parts;
	int			nworkers;

	if (SjTableJob(rel, ncols, cols, kind, side, what, &job, &nworkers) &&
		nworkers > 0)
	{
		SjParallelScan(&job, 1, GetActiveSnapshot(), nworkers, &parts);
		return parts;
	}
	SjScanTableSerial(rel, ncols, cols, kind, side);
	return NULL;
}

/*
 * Read the two plain tables of a two-table join in one parallel context
 * (parts[s] for side s, each to be merged and released), when either is
 * large enough for workers and both kinds allow.  False, having read
 * nothing, otherwise.
 */
bool
SjScanTablePair(Relation *rels, const int *ncols, const SjColumn *const *cols,
				SjPartKind kind, void **sides, const char *const *what, SjParts **parts)
{
	SjScanJob	jobs[2];
	int			nworkers[2];
	int			s;

	/* a table too small for workers of its own rides along with the other */
	for (s = 0; s < 2; s++)
		if (!SjTableJob(rels[s], ncols[s], cols[s], kind, sides[s], what[s], &jobs[s],
						&nworkers[s]))
			return false;
	if (Max(nworkers[0], nworkers[1]) == 0)
		return false;
	SjParallelScan(jobs, 2, GetActiveSnapshot(), Max(nworkers[0], nworkers[1]), parts);
	return true;
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
 * The job of reading a custom scan's input child (a Seq Scan node already
 * initialized by the executor) straight from its table into side, where it
 * is a filtered scan of a plain table (*nworkers: how many workers its size
 * asks for, maybe 0; job->serial_only where workers must not read it, for
 * one because parallel query is off); columns are positions in the child's
 * target list (0: a row number), each of which must be a plain column of
 * the table.
 */
static bool
SjChildJob(PlanState *child, SjPartKind kind, int ncols, const int *positions,
		   const Oid *typids, void *side, const char *what, SjScanJob *job,
		   int *nworkers)
{
	Plan	   *plan = child->plan;
	SeqScan    *seq;
	EState	   *estate = child->state;
	Relation	rel;
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	int			i;

	Assert(ncols <= SJ_PART_MAX_COLS);
	*nworkers = 0;
	if (!IsA(plan, SeqScan) || plan->parallel_aware ||
		plan->initPlan != NIL || child->chgParam != NULL ||
		!IsMVCCSnapshot(estate->es_snapshot) ||
		SjHasParams((Node *) plan->qual, NULL) ||
		!SjPartTypesOk(kind, ncols, typids))
		return false;
	seq = (SeqScan *) plan;
	rel = ((ScanState *) child)->ss_currentRelation;
	if (rel == NULL || rel->rd_rel->relkind != RELKIND_RELATION)
		return false;

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
				return false;
			attnums[i] = var->varattno;
		}
	}
	*nworkers = SjParallelWorkers(rel);
	memset(job, 0, sizeof(*job));
	/* parallel_safe is false whenever parallel query is off */
	job->serial_only = !plan->parallel_safe || RelationUsesLocalBuffers(rel) ||
		RelationGetParallelWorkers(rel, -1) == 0;
	job->rel = rel;
	SjPartSpecFill(&job->spec, kind, RelationGetRelid(rel), ncols, attnums, typids,
				   NULL, what, side);
	job->quals = plan->qual;
	job->side = side;
	job->instrument = child->instrument;
	return true;
}

/*
 * A job read by the leader alone, straight from the table (SjScanRows), as
 * parts without any: the custom scan's child when no worker can or need
 * help, still without the executor's per-tuple slot and buffer pin.
 */
static SjParts *
SjScanJobSerial(SjScanJob *job, Snapshot snapshot)
{
	SjParts    *parts = palloc0(sizeof(SjParts));

	if (job->instrument)
		InstrStartNode(job->instrument);
	parts->rows = SjScanSide(table_beginscan(job->rel, snapshot, 0, NULL), job->spec.kind,
							 job->spec.ncols, job->spec.attnums, job->quals, job->side,
							 &parts->filtered);
	parts->part = palloc0(sizeof(char *));
	if (job->instrument)
	{
		InstrStopNode(job->instrument, (double) parts->rows);
		job->instrument->nfiltered1 += (double) parts->filtered;
	}
	return parts;
}

/*
 * The custom scan's door: read the input child into side, with parallel
 * workers where its size asks for them (SjChildJob says when), else by the
 * leader alone, straight from the table.  Returns NULL, having read
 * nothing, where the child is not such a scan.
 */
SjParts *
SjScanChildParallel(PlanState *child, SjPartKind kind, int ncols,
					const int *positions, const Oid *typids, void *side,
					const char *what)
{
	SjScanJob	job;
	SjParts    *parts;
	int			nworkers;

	if (!SjChildJob(child, kind, ncols, positions, typids, side, what, &job, &nworkers))
		return NULL;
	if (nworkers == 0 || job.serial_only)
		return SjScanJobSerial(&job, child->state->es_snapshot);
	SjParallelScan(&job, 1, child->state->es_snapshot, nworkers, &parts);
	return parts;
}

/*
 * Both input children of the custom scan in one parallel context (parts[s]
 * for child s), where workers can read both and either is large enough
 * for them.  False, having read nothing, otherwise.
 */
bool
SjScanChildrenParallel(PlanState **children, SjPartKind kind, const int *ncols,
					   const int *const *positions, const Oid *const *typids,
					   void **sides, const char *const *what, SjParts **parts)
{
	SjScanJob	jobs[2];
	int			nworkers[2];
	int			s;

	for (s = 0; s < 2; s++)
		if (!SjChildJob(children[s], kind, ncols[s], positions[s], typids[s], sides[s],
						what[s], &jobs[s], &nworkers[s]) || jobs[s].serial_only)
			return false;
	if (Max(nworkers[0], nworkers[1]) == 0)
		return false;
	SjParallelScan(jobs, 2, children[0]->state->es_snapshot,
				   Max(nworkers[0], nworkers[1]), parts);
	return true;
}
