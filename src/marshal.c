/*
 * marshal.c
 *		Reading the join columns of a relation for the engines.
 *
 * A relation named by an operator is read under the statement's snapshot,
 * with exactly the visibility the caller's own SELECT would have:
 *
 *	- SELECT privilege is checked on every column read, up front, before any
 *	  row is touched;
 *	- a plain table without row-level security or inheritance children is
 *	  read by a direct table scan (the fast path), with parallel workers
 *	  when it is large (parscan.c);
 *	- a relation with row-level security in force for this user, a
 *	  partitioned table or inheritance parent, a view, a materialized view or
 *	  a foreign table is read through the executor (an SPI cursor over
 *	  "SELECT cols FROM rel"), so that policies, partitions and view
 *	  definitions apply as in any query.  Identifiers are quoted; nothing the
 *	  caller wrote is pasted into SQL.
 *
 * Rows are handed one at a time to the operator's row function with the
 * requested columns; it runs in a per-row memory context that is reset
 * after every row, so it must copy what it keeps into memory it owns.
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "marshal.h"

#define SJ_SPI_FETCH 10000

/*
 * Lock the relation for reading, and check that it is something a SELECT can
 * read rows from and that its schema may be used.  The lock is taken before
 * any column is looked up, so that the columns stay as resolved until the
 * end of the transaction.
 */
void
SjCheckRelation(Oid relid)
{
	char		relkind;
	Oid			nsp;

	LockRelationOid(relid, AccessShareLock);
	relkind = get_rel_relkind(relid);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	nsp = get_rel_namespace(relid);
	if (pg_namespace_aclcheck(nsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_SCHEMA, get_namespace_name(nsp));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE && relkind != RELKIND_VIEW &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table, view, materialized view or foreign table",
						get_rel_name(relid))));
}

/*
 * Look up a column by its exact name and check that the current user may
 * SELECT it.
 */
void
SjResolveColumn(Oid relid, const char *name, SjColumn *col)
{
	AttrNumber	attnum;
	Oid			collation;

	attnum = get_attnum(relid, name);
	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, get_rel_name(relid)),
				 errhint("Column names are matched exactly, without case folding.")));

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck(relid, attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error_col(ACLCHECK_NO_PRIV, get_relkind_objtype(get_rel_relkind(relid)),
						   get_rel_name(relid), name);

	col->name = name;
	col->attnum = attnum;
	get_atttypetypmodcoll(relid, attnum, &col->typid, &col->typmod, &collation);
}

/* A key column must be an integer. */
void
SjCheckKeyColumn(Oid relid, const SjColumn *col)
{
	if (col->typid != INT2OID && col->typid != INT4OID && col->typid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column \"%s\" of relation \"%s\" must be smallint, integer or bigint, not %s",
						col->name, get_rel_name(relid), format_type_be(col->typid))));
}

/* The int64 value of a key datum. */
int64
SjKeyValue(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

/* A NULL key cannot identify its row in the result. */
void
SjErrorNullKey(Oid relid, const SjColumn *col)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("key column \"%s\" of relation \"%s\" contains NULL",
					col->name, get_rel_name(relid)),
			 errhint("Filter the rows through a view, or use a key column without NULLs.")));
}

/*
 * Resolve a side's key and array columns (cols[0] and cols[1]) of relid:
 * the relation and the key are checked, the array's element type must be
 * one of kind's.  Fills what (whatlen bytes), which names the arrays in
 * error messages.  Returns the element type.
 */
Oid
SjResolveArraySide(Oid relid, text *key, text *array, const SjArrayKind *kind,
				   SjColumn *cols, char *what, size_t whatlen)
{
	Oid			elem;
	int			i;

	SjCheckRelation(relid);
	SjResolveColumn(relid, text_to_cstring(key), &cols[0]);
	SjResolveColumn(relid, text_to_cstring(array), &cols[1]);
	SjCheckKeyColumn(relid, &cols[0]);
	elem = get_element_type(cols[1].typid);
	for (i = 0; i < lengthof(kind->elems) && kind->elems[i] != elem; i++)
		;
	if (elem == InvalidOid || i == lengthof(kind->elems))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s column \"%s\" of relation \"%s\" must be %s, not %s",
						kind->noun, cols[1].name, get_rel_name(relid), kind->types,
						format_type_be(cols[1].typid))));
	snprintf(what, whatlen, "%s in column \"%s\" of relation \"%s\"",
			 kind->noun, cols[1].name, get_rel_name(relid));
	return elem;
}

/*
 * The array of a row of a side (key, array): a NULL key is an error, a
 * NULL array is counted in skipped and gives NULL.
 */
ArrayType *
SjRowArray(Oid relid, const SjColumn *key, Datum *values, bool *isnull,
		   int64 *skipped)
{
	if (isnull[0])
		SjErrorNullKey(relid, key);
	if (isnull[1])
	{
		(*skipped)++;
		return NULL;
	}
	return DatumGetArrayTypeP(values[1]);
}

/* A parallel worker's side: its relation and key column, from its spec. */
void
SjPartKey(const SjPartSpec *spec, Oid *relid, SjColumn *key)
{
	*relid = spec->relid;
	key->typid = spec->typids[0];
	key->name = pstrdup(NameStr(spec->keyname));
}

/* A join's parameter must be valid: else "<rule>, not <value>". */
void
SjCheckParam(bool valid, const char *rule, double value)
{
	if (!valid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s, not %s", rule, double_to_shortest_decimal(value))));
}

/*
 * Ask for transparent huge pages on an array of SJ_HUGE_ADVISED bytes or
 * more (where the kernel gives them on request only): a side of millions
 * of rows is written once, right after it is allocated, so its first
 * touches are page faults; huge pages shorten the merge of the workers'
 * parts (test/bench/BENCHMARKS.md, "Calibration of the cost model").  The
 * advice covers every page the array touches: on a block the C library
 * mapped on its own that is the whole mapping, which advice on a part of
 * it would split, and the kernel does not remap a split mapping (SjGrow).
 */
#define SJ_HUGE_ADVISED		((size_t) 2 << 20)

void
SjHugePages(void *ptr, size_t bytes)
{
#ifdef MADV_HUGEPAGE
	if (bytes >= SJ_HUGE_ADVISED)
	{
		const uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
		uintptr_t	start = (uintptr_t) ptr & ~(page - 1);
		uintptr_t	end = ((uintptr_t) ptr + bytes + page - 1) & ~(page - 1);

		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
	}
#endif
}

/* A large array (palloc_extended, huge), on huge pages where it pays. */
void *
SjAllocLarge(size_t bytes)
{
	void	   *ptr = palloc_extended(Max(bytes, 1), MCXT_ALLOC_HUGE);

	SjHugePages(ptr, bytes);
	return ptr;
}

/*
 * Arrays of SJ_HUGE_ADVISED bytes or more grow in whole 2 MB pages of
 * address space, advised onto huge pages, and from SJ_GROW_MAPPED on at
 * least SJ_GROW_MAPPED_MIN bytes (at most 2.25 times what they need): more
 * than the C library's largest dynamic threshold for a block mapped on its
 * own (32 MB).  A mapped block grows by remapping, its pages moved rather
 * than copied, and its new pages fault in 2 MB at a time.  A block in the
 * heap is copied as it doubles: a scan of 200 K 384-D real[] vectors had
 * spent two-thirds of its time copying and faulting in 4 kB pages
 * (test/bench/BENCHMARKS.md, "Twelfth session").
 *
 * The advice (SjHugePages) must cover the whole mapping: advice on a part
 * of it splits the mapping, and the kernel then refuses to remap it (the C
 * library falls back to a copy).  A mapped block is its size plus a few
 * dozen bytes of headers rounded up to whole pages, so an array of 2 MB
 * multiples less SJ_GROW_SLACK bytes fills its mapping up to the page that
 * holds its last byte.  Where the headers were larger than that, or the
 * C library placed the block in its heap (free space there, or a threshold
 * raised by the malloc tunables), the advice covers less, or a part of the
 * heap, and growth copies: slower, never wrong.  Beyond the capacity the
 * block is address space, backed as it is written (though counted against
 * the commit limit under vm.overcommit_memory = 2).
 */
#define SJ_GROW_MAPPED		((size_t) 16 << 20)
#define SJ_GROW_MAPPED_MIN	((size_t) 34 << 20)
#define SJ_GROW_HUGE		((size_t) 2 << 20)
#define SJ_GROW_SLACK		((size_t) 2048)

/*
 * Grow an array so that it holds at least "needed" elements.  The new
 * capacity is always max(2 * capacity, needed, 1024): callers that keep
 * arrays of different element sizes in step rely on it.
 */
void *
SjGrow(void *ptr, size_t *capacity, size_t needed, size_t elem)
{
	size_t		newcap;
	size_t		bytes;

	if (needed <= *capacity)
		return ptr;
	newcap = Max(*capacity * 2, Max(needed, (size_t) 1024));
	if (newcap > MaxAllocHugeSize / elem)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simjoin: an array of %zu elements of %zu bytes is too large",
						newcap, elem)));
	bytes = newcap * elem;
	if (bytes < SJ_HUGE_ADVISED)
		ptr = repalloc_huge(ptr, bytes);
	else
	{
		/* (bytes <= MaxAllocHugeSize: no overflow; repalloc_huge checks the size) */
		if (bytes >= SJ_GROW_MAPPED)
			bytes = Max(bytes, SJ_GROW_MAPPED_MIN);
		bytes = TYPEALIGN(SJ_GROW_HUGE, bytes + SJ_GROW_SLACK) - SJ_GROW_SLACK;
		ptr = repalloc_huge(ptr, bytes);
		SjHugePages(ptr, bytes);
	}
	*capacity = newcap;
	return ptr;
}

/* General path: the executor, through an SPI cursor. */
static void
SjScanQuery(Relation rel, int ncols, const SjColumn *cols, SjRowFn fn,
			void *arg)
{
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "simjoin row",
												 ALLOCSET_DEFAULT_SIZES);
	StringInfoData sql;
	SPIPlanPtr	plan;
	Portal		portal;
	Datum	   *values = palloc(sizeof(Datum) * ncols);
	bool	   *isnull = palloc(sizeof(bool) * ncols);
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < ncols; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "",
						 quote_identifier(cols[i].name));
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(sql.data, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql.data,
			 SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		uint64		r;

		SPI_cursor_fetch(portal, true, SJ_SPI_FETCH);
		if (SPI_processed == 0)
			break;
		for (r = 0; r < SPI_processed; r++)
		{
			HeapTuple	tup = SPI_tuptable->vals[r];
			MemoryContext old = MemoryContextSwitchTo(rowcxt);

			for (i = 0; i < ncols; i++)
				values[i] = SPI_getbinval(tup, SPI_tuptable->tupdesc, i + 1, &isnull[i]);
			fn(arg, values, isnull);
			MemoryContextSwitchTo(old);
			MemoryContextReset(rowcxt);
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_finish();
	MemoryContextDelete(rowcxt);
	pfree(values);
	pfree(isnull);
	pfree(sql.data);
}

/*
 * Read every row of relid that the current user's SELECT would see into
 * side (an operator's side of the given kind), with the values of cols
 * (already resolved and privilege-checked; cols[0] is the key).  A plain
 * table may be read by parallel workers: then the workers' sides come back
 * as parts, for the operator to merge and release; otherwise NULL.
 */
SjParts *
SjScanRelation(Oid relid, int ncols, const SjColumn *cols, SjPartKind kind,
			   void *side, const char *what)
{
	Relation	rel;
	SjParts    *parts = NULL;
	bool		fast;
	char		relkind;

	SjCheckRelation(relid);
	/* errors out, with a hint, where policies apply but row_security = off */
	fast = check_enable_rls(relid, InvalidOid, false) != RLS_ENABLED;

	rel = relation_open(relid, AccessShareLock);
	relkind = rel->rd_rel->relkind;
	/* inheritance children and matview population are the executor's job */
	if (relkind != RELKIND_RELATION || rel->rd_rel->relhassubclass)
		fast = false;

	if (fast)
		parts = SjScanTable(rel, ncols, cols, kind, side, what);
	else
		SjScanQuery(rel, ncols, cols, SjPartRowFn(kind), side);
	relation_close(rel, NoLock);
	return parts;
}

/*
 * Both relations of a two-table join in one parallel context (parts[s] for
 * side s, each to be merged and released), so that the workers start once.
 * False, having read nothing, where workers cannot read both (row-level
 * security, views, inheritance, temporary tables, types workers do not
 * build) or neither is large enough for them: the caller then reads one
 * side after the other, merging and releasing each before the next, so
 * that no parallel mode outlives a side.
 */
bool
SjScanRelationPair(const Oid *relids, const int *ncols, const SjColumn *const *cols,
				   SjPartKind kind, void **sides, const char *const *what,
				   SjParts **parts)
{
	Relation	rels[2];
	bool		fast = true;
	bool		done = false;
	int			s;

	for (s = 0; s < 2; s++)
	{
		SjCheckRelation(relids[s]);
		if (check_enable_rls(relids[s], InvalidOid, false) == RLS_ENABLED)
			fast = false;
	}
	for (s = 0; s < 2; s++)
	{
		rels[s] = relation_open(relids[s], AccessShareLock);
		if (rels[s]->rd_rel->relkind != RELKIND_RELATION || rels[s]->rd_rel->relhassubclass)
			fast = false;
	}
	if (fast)
		done = SjScanTablePair(rels, ncols, cols, kind, sides, what, parts);
	relation_close(rels[0], NoLock);
	relation_close(rels[1], NoLock);
	return done;
}

/*
 * Read one side, or both sides of a two-table join (together where parallel
 * workers can read them, else one after the other), and finish each with
 * the workers' parts, released after.  Returns the parallel workers that
 * read them.
 */
int
SjScanJoinSides(const SjJoinSide *sides, int nsides, SjPartKind kind,
			SjSideFinishFn finish)
{
	Oid			relids[2];
	int			ncols[2];
	const SjColumn *cols[2];
	void	   *scans[2];
	const char *what[2];
	SjParts    *parts[2] = {NULL, NULL};
	bool		together;
	int			workers = 0;
	int			s;
	double		t0;

	Assert(nsides == 1 || nsides == 2);
	for (s = 0; s < nsides; s++)
	{
		relids[s] = sides[s].relid;
		ncols[s] = sides[s].ncols;
		cols[s] = sides[s].cols;
		scans[s] = sides[s].side;
		what[s] = sides[s].what;
	}
	together = nsides == 2 &&
		SjScanRelationPair(relids, ncols, cols, kind, scans, what, parts);
	for (s = 0; s < nsides; s++)
	{
		if (!together)
			parts[s] = SjScanRelation(relids[s], ncols[s], cols[s], kind,
									  scans[s], what[s]);
		workers = Max(workers, parts[s] ? parts[s]->workers : 0);
		t0 = sj_now_ms();
		finish(scans[s], parts[s], sides[s].out);
		elog(DEBUG2, "simjoin: %s merged in %.1f ms", what[s], sj_now_ms() - t0);
		SjPartsRelease(parts[s]);
	}
	return workers;
}
