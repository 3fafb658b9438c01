/*
 * toastread.h
 *		Reading out-of-line (TOAST) values in a scan's loop (toastread.c).
 */
#ifndef TOASTREAD_H
#define TOASTREAD_H

#include "utils/relcache.h"
#include "utils/snapshot.h"

/* The reader of one column's values: opened on its first value. */
typedef struct SjToastReader
{
	Oid			toastrelid;		/* InvalidOid until opened */
	Relation	rel;
	Relation   *indexes;
	int			nindexes;
	struct IndexScanDescData *scan;
	struct TupleTableSlot *slot;
	SnapshotData snapshot;		/* SnapshotToast, as detoast's own */
	struct varlena *buf;		/* the last value read */
	Size		cap;
	MemoryContext cxt;			/* buf's: the context of the first open */
	int64		values;			/* values read here */
} SjToastReader;

/*
 * Call outside any per-row context that is reset between rows: the first
 * call opens the reader's scan and buffer in CurrentMemoryContext, which
 * must live until SjToastReaderEnd.
 */
extern Datum SjToastRead(SjToastReader *tr, Datum value);
extern void SjToastReaderEnd(SjToastReader *tr);

#endif							/* TOASTREAD_H */
