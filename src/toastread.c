/*
 * toastread.c
 *		Reading out-of-line (TOAST) values in a scan's loop.
 *
 * A value over about 2 kB (a real[] of more than 500 dimensions) is stored
 * out of line: its row holds a pointer, and the value lies in chunks of the
 * table's TOAST relation, found through its index.  PostgreSQL's detoast
 * fetches each value on its own: it opens (and locks) the TOAST relation
 * and its indexes, begins an index scan, reads the chunks into a fresh
 * allocation, then ends the scan and closes everything again.  For a scan
 * that reads hundreds of thousands of such values (high-dimensional
 * embeddings), that set-up is a large part of the time.
 *
 * The reader here does the same reading, value by value, with the same
 * snapshot (SnapshotToast, from the oldest snapshot as detoast takes it)
 * and the same checks of every chunk, but opens the relation, its indexes
 * and one index scan once per scan and column, restarts the scan for each
 * value, and reads each value into one buffer it keeps.  What it returns
 * is the plain (untoasted) value, valid until its next call or the
 * reader's end: callers run in a per-row context and copy what they keep,
 * as they do with a detoasted copy.
 *
 * Values it does not read are returned as they are, for the caller's usual
 * detoast: compressed values (their decompression is detoast's), values
 * over SJ_TOAST_READ_MAX (a copy freed with its row rather than a buffer
 * kept for the scan), values in memory (expanded, indirect), and values
 * inline in the row.
 *
 * Locks: the TOAST relation and its indexes stay locked (AccessShareLock)
 * from the first value to the end of the scan, as for any index scan; a
 * plain REINDEX of the TOAST index waits for the scan.
 *
 * Ownership: the reader's relations, scan and buffer pins belong to the
 * current resource owner; SjToastReaderEnd releases them at the end of a
 * scan, and an error's abort releases them with the resource owner.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/toast_internals.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "toastread.h"

/* Out-of-line values larger than this are left to detoast (64 MB). */
#define SJ_TOAST_READ_MAX	(64 * 1024 * 1024)

/* Open the TOAST relation toastrelid, its indexes and a scan of the valid one. */
static void
SjToastOpen(SjToastReader *tr, Oid toastrelid)
{
	int			valid;

	tr->rel = table_open(toastrelid, AccessShareLock);
	valid = toast_open_indexes(tr->rel, AccessShareLock, &tr->indexes, &tr->nindexes);
	init_toast_snapshot(&tr->snapshot);
	tr->scan = index_beginscan(tr->rel, tr->indexes[valid], &tr->snapshot, 1, 0);
	tr->slot = table_slot_create(tr->rel, NULL);
	tr->toastrelid = toastrelid;
	if (tr->cxt == NULL)
		tr->cxt = CurrentMemoryContext;
}

/*
 * Release what SjToastOpen took and the buffer; the reader may open again
 * after.  A reader never opened (all zeros) has nothing to release.
 */
void
SjToastReaderEnd(SjToastReader *tr)
{
	if (!OidIsValid(tr->toastrelid))
		return;
	index_endscan(tr->scan);
	ExecDropSingleTupleTableSlot(tr->slot);
	toast_close_indexes(tr->indexes, tr->nindexes, AccessShareLock);
	table_close(tr->rel, AccessShareLock);
	tr->toastrelid = InvalidOid;
	tr->scan = NULL;
	tr->slot = NULL;
	if (tr->buf)
		pfree(tr->buf);
	tr->buf = NULL;
	tr->cap = 0;
}

/*
 * The plain value of value: an uncompressed out-of-line value read into
 * the reader's buffer, anything else as it is.
 */
Datum
SjToastRead(SjToastReader *tr, Datum value)
{
	struct varlena *attr = (struct varlena *) DatumGetPointer(value);
	struct varatt_external ptr;
	int32		size;
	int32		nchunks;
	int32		expected = 0;
	ScanKeyData key;

	if (!VARATT_IS_EXTERNAL_ONDISK(attr))
		return value;
	VARATT_EXTERNAL_GET_POINTER(ptr, attr);
	if (VARATT_EXTERNAL_IS_COMPRESSED(ptr))
		return value;
	size = VARATT_EXTERNAL_GET_EXTSIZE(ptr);
	if (size > SJ_TOAST_READ_MAX)
		return value;			/* detoast's copy, freed with the row */
	if (tr->toastrelid != ptr.va_toastrelid)
	{
		SjToastReaderEnd(tr);
		SjToastOpen(tr, ptr.va_toastrelid);
	}
	if (tr->cap < (Size) size + VARHDRSZ)
	{
		/* the largest value so far: a column's vectors are mostly one size */
		if (tr->buf)
			pfree(tr->buf);
		tr->cap = (Size) size + VARHDRSZ;
		tr->buf = MemoryContextAlloc(tr->cxt, tr->cap);
	}
	SET_VARSIZE(tr->buf, size + VARHDRSZ);
	tr->values++;
	if (size == 0)
		return PointerGetDatum(tr->buf);

	/* every chunk in order, each of its exact size, as detoast checks */
	nchunks = (size - 1) / TOAST_MAX_CHUNK_SIZE + 1;
	ScanKeyInit(&key, (AttrNumber) 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ptr.va_valueid));
	index_rescan(tr->scan, &key, 1, NULL, 0);
	while (index_getnext_slot(tr->scan, ForwardScanDirection, tr->slot))
	{
		bool		isnull;
		int32		seq = DatumGetInt32(slot_getattr(tr->slot, 2, &isnull));
		Pointer		chunk = DatumGetPointer(slot_getattr(tr->slot, 3, &isnull));
		char	   *data;
		int32		len;
		int32		want;

		if (!VARATT_IS_EXTENDED(chunk))
		{
			len = VARSIZE(chunk) - VARHDRSZ;
			data = VARDATA(chunk);
		}
		else if (VARATT_IS_SHORT(chunk))
		{
			len = VARSIZE_SHORT(chunk) - VARHDRSZ_SHORT;
			data = VARDATA_SHORT(chunk);
		}
		else
			elog(ERROR, "found toasted toast chunk for toast value %u in %s",
				 ptr.va_valueid, RelationGetRelationName(tr->rel));
		if (seq != expected)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk number %d (expected %d) for toast value %u in %s",
									 seq, expected, ptr.va_valueid,
									 RelationGetRelationName(tr->rel))));
		if (seq >= nchunks)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("chunk number %d (out of range %d..%d) for toast value %u in %s",
									 seq, 0, nchunks - 1, ptr.va_valueid,
									 RelationGetRelationName(tr->rel))));
		want = seq < nchunks - 1 ? TOAST_MAX_CHUNK_SIZE
			: size - (nchunks - 1) * TOAST_MAX_CHUNK_SIZE;
		if (len != want)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk size %d (expected %d) in chunk %d of %d for toast value %u in %s",
									 len, want, seq, nchunks, ptr.va_valueid,
									 RelationGetRelationName(tr->rel))));
		memcpy(VARDATA(tr->buf) + (Size) seq * TOAST_MAX_CHUNK_SIZE, data, len);
		expected++;
	}
	/* no pin on the last chunk's page while the row is processed */
	ExecClearTuple(tr->slot);
	if (expected != nchunks)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_internal("missing chunk number %d for toast value %u in %s",
								 expected, ptr.va_valueid,
								 RelationGetRelationName(tr->rel))));
	return PointerGetDatum(tr->buf);
}
