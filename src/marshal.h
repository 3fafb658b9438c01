/*
 * marshal.h
 *		Reading relations for the engines (marshal.c) and with parallel workers
 *		(parscan.c): columns, scans, the sides parallel workers build.
 */
#ifndef MARSHAL_H
#define MARSHAL_H

#include "simjoin.h"

/* marshal.c: reading relations */
typedef void (*SjRowFn) (void *arg, Datum *values, bool *isnull);

/* What a scan builds: one operator's side (parscan.c). */
typedef enum SjPartKind
{
	SJ_PART_EPS,				/* SjEpsScan */
	SJ_PART_SETS,				/* SjSetScan */
	SJ_PART_THETA,				/* SjThetaSide (theta_join.c) */
	SJ_PART_POINTS				/* SjPointScan (postgis.c) */
} SjPartKind;

#define SJ_PART_MAX_COLS	65	/* a key and a theta side's columns */

#define SJ_DERIVE_MAX_STEPS	4	/* interval steps of a derived column */

/*
 * A theta column derived from a scanned date or timestamp[tz] value by
 * PostgreSQL's own functions: value = steps[nsteps-1](...steps[0](source,
 * interval 0)..., interval nsteps-1), each step one of date_pl_interval,
 * date_mi_interval, timestamp[tz]_pl_interval, timestamp[tz]_mi_interval
 * with a constant interval (theta_compile.c, theta_values.c).  nsteps == 0:
 * a plain column.
 */
typedef struct SjThetaDerive
{
	int			nsteps;
	Oid			restype;		/* timestamp or timestamptz */
	Oid			fn[SJ_DERIVE_MAX_STEPS];
	int64		time[SJ_DERIVE_MAX_STEPS];	/* the intervals, by field */
	int32		day[SJ_DERIVE_MAX_STEPS];
	int32		month[SJ_DERIVE_MAX_STEPS];
} SjThetaDerive;

/*
 * A side to build, as parallel workers see it: the columns to read (the
 * key first; attnum 0 gives row numbers instead), how theta columns are
 * derived from them, and what errors call the values.
 */
typedef struct SjPartSpec
{
	SjPartKind	kind;
	Oid			relid;
	int			ncols;
	AttrNumber	attnums[SJ_PART_MAX_COLS];
	Oid			typids[SJ_PART_MAX_COLS];
	SjThetaDerive derive[SJ_PART_MAX_COLS];
	bool		nokeys;			/* theta: a count's side keeps no keys */
	NameData	keyname;
	char		what[NAMEDATALEN * 2 + 32];
} SjPartSpec;

/*
 * One kind's side: how a participant builds and serializes it (the part
 * format, defined by the operator's file, read by parscan.c).
 */
typedef struct SjPartOps
{
	void		(*describe) (void *side, SjPartSpec *spec);	/* or NULL */
	void	   *(*begin) (const SjPartSpec *spec);
	SjRowFn		row;
	Size		(*size) (void *side);
	void		(*write) (void *side, char *dst);
} SjPartOps;

/*
 * The sides that parallel workers built, serialized in shared memory (each
 * kind's part format), for the operator to merge with the leader's own.
 */
typedef struct SjParts
{
	int			nparts;
	const char **part;
	int64		rows;			/* rows read, all participants */
	int64		filtered;		/* rows a filter removed */
	int			workers;		/* workers launched */
	void	   *run;			/* parscan.c's, until SjPartsRelease */
	void	  **segs;			/* the parts' shared memory (dsm_segment *) */
	bool		keep;			/* SjPartsKeep: mapped until SjPartsUnmap */
	uint32		keep_token;		/* SjPartsKeep's: names them to the cursor
								 * that reads them (SjRunSpec.reads) */
} SjParts;

typedef struct SjColumn
{
	const char *name;			/* as given by the caller */
	AttrNumber	attnum;
	Oid			typid;
	int32		typmod;
} SjColumn;

extern void SjCheckRelation(Oid relid);
extern void SjResolveColumn(Oid relid, const char *name, SjColumn *col);
extern void SjCheckKeyColumn(Oid relid, const SjColumn *col);
extern SjParts *SjScanRelation(Oid relid, int ncols, const SjColumn *cols,
							   SjPartKind kind, void *side, const char *what);
extern bool SjScanRelationPair(const Oid *relids, const int *ncols,
							   const SjColumn *const *cols, SjPartKind kind,
							   void **sides, const char *const *what, SjParts **parts);

/*
 * One side of a join for SjScanJoinSides: the relation and its columns (the key
 * first), the operator's side its rows go into, and what finishing it fills.
 */
typedef struct SjJoinSide
{
	Oid			relid;
	int			ncols;
	const SjColumn *cols;
	const char *what;			/* names the values in error messages */
	void	   *side;
	void	   *out;
} SjJoinSide;

/* An operator's merge of a side and the workers' parts (or NULL) into out. */
typedef void (*SjSideFinishFn) (void *side, SjParts *parts, void *out);

extern int	SjScanJoinSides(const SjJoinSide *sides, int nsides, SjPartKind kind,
						SjSideFinishFn finish);
extern int64 SjKeyValue(Datum value, Oid typid);
extern void SjErrorNullKey(Oid relid, const SjColumn *col);

/* An array column's kind: its noun and element types, as messages name them. */
typedef struct SjArrayKind
{
	const char *noun;			/* "vector" */
	Oid			elems[3];		/* the element types it takes; InvalidOid: none */
	const char *types;			/* "real[] or double precision[]" */
} SjArrayKind;

extern Oid	SjResolveArraySide(Oid relid, text *key, text *array,
							   const SjArrayKind *kind, SjColumn *cols,
							   char *what, size_t whatlen);
extern ArrayType *SjRowArray(Oid relid, const SjColumn *key, Datum *values,
							 bool *isnull, int64 *skipped);
extern void SjPartKey(const SjPartSpec *spec, Oid *relid, SjColumn *key);
extern void SjCheckParam(bool valid, const char *rule, double value);

/* Growable arrays of the adapter, allocated huge in one context. */
extern void *SjGrow(void *ptr, size_t *capacity, size_t needed, size_t elem);
extern void *SjAllocLarge(size_t bytes);
extern void SjHugePages(void *ptr, size_t bytes);

/* parscan.c: reading a table with parallel workers */
struct TableScanDescData;
struct TupleTableSlot;
struct ExprState;
struct ExprContext;
struct PlanState;
struct RelationData;

extern int64 SjScanRows(struct TableScanDescData *scan, struct TupleTableSlot *slot,
						int ncols, const AttrNumber *attnums, struct ExprState *qual,
						struct ExprContext *econtext, SjRowFn fn, void *arg,
						int64 *filtered);
extern int	SjParallelWorkers(struct RelationData *rel);
extern BlockNumber SjToastBlocks(Oid relid);
extern bool SjPartTypesOk(SjPartKind kind, int ncols, const Oid *typids);
extern SjRowFn SjPartRowFn(SjPartKind kind);
extern void *SjPartSideBegin(SjPartKind kind, int ncols, const int *positions,
							 const Oid *typids, const char *what, void *model);
extern Size SjPartSideSize(SjPartKind kind, void *side);
extern void SjPartSideWrite(SjPartKind kind, void *side, char *dst);
extern SjParts *SjScanTable(struct RelationData *rel, int ncols, const SjColumn *cols,
							SjPartKind kind, void *side, const char *what);
extern SjParts *SjScanChildParallel(struct PlanState *child, SjPartKind kind, int ncols,
									const int *positions, const Oid *typids,
									void *side, const char *what);
extern bool SjScanTablePair(struct RelationData **rels, const int *ncols,
							const SjColumn *const *cols, SjPartKind kind, void **sides,
							const char *const *what, SjParts **parts);
extern bool SjScanChildrenParallel(struct PlanState **children, SjPartKind kind,
								   const int *ncols, const int *const *positions,
								   const Oid *const *typids, void **sides,
								   const char *const *what, SjParts **parts);
extern void SjPartsRelease(SjParts *parts);
extern bool SjPartsKeepable(const SjParts *parts);
extern void SjPartsKeep(SjParts *parts);
extern uint32 SjPartsToken(const SjParts *parts);
extern void SjPartsUnmap(SjParts *parts);

/*
 * Merging pieces (the leader's side and the workers' parts) into one side:
 * the operator's copy of rows [first, last) of piece number piece.  The
 * pieces are an array of structs, each beginning with its row count (a
 * size_t).
 */
typedef void (*SjMergeFn) (void *arg, int piece, size_t first, size_t last);

extern void SjMergePieces(int npieces, const void *pieces, size_t stride,
						  size_t block, SjMergeFn fn, void *arg);

#endif							/* MARSHAL_H */
