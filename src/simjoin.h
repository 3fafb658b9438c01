/*
 * simjoin.h
 *		Declarations shared by simjoin's PostgreSQL-side (adapter) files.
 *
 * The adapter scans relations, marshals join columns into the engines' flat
 * inputs (sjengine.h), runs the CPU or GPU engine through one iterator
 * (SjRun), and turns pair batches into tuples.  Engine handles are owned by
 * an SjRun, which registers a memory-context reset callback so that engine
 * memory, device memory included, is released even when an ERROR unwinds
 * the query.
 */
#ifndef SIMJOIN_H
#define SIMJOIN_H

#include "postgres.h"

#include "access/attnum.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "nodes/bitmapset.h"
#include "nodes/nodes.h"
#include "storage/block.h"
#include "utils/array.h"
#include "utils/palloc.h"

#include "sjengine.h"

/* simjoin.device */
typedef enum SjDeviceSetting
{
	SJ_DEVICE_AUTO,
	SJ_DEVICE_GPU,
	SJ_DEVICE_CPU
} SjDeviceSetting;

/* settings (simjoin.c) */
extern int	sj_device;
extern int	sj_gpu_memory_limit_mb;
extern int	sj_cpu_threads;
extern bool sj_enable_customscan;
extern bool sj_enable_shared_index;

/* Which operator an SjRun runs. */
typedef enum SjOperator
{
	SJ_OP_EPS,
	SJ_OP_JACCARD,
	SJ_OP_THETA
} SjOperator;

/* Most entries of simjoin.devices; device numbers are below it. */
#define SJ_MAX_DEVICES 64

/* The GPUs one run holds (counted as loaded until SjDevicesRelease). */
typedef struct SjDeviceHold
{
	int			n;
	int			ordinals[SJ_MAX_DEVICES];
} SjDeviceHold;

/*
 * One engine run: the chosen engine's handle behind a small dispatch table.
 * Created by SjRunBegin* in CurrentMemoryContext, ended by SjRunEnd or, after
 * an ERROR, by that context's reset callback.
 */
typedef struct SjRun
{
	SjOperator	op;
	bool		gpu;			/* running on the GPU engine */
	void	   *handle;			/* engine handle, NULL once ended */
	SjStatus	(*next) (void *handle, SjPairBatch *batch, int *done,
						 char *errmsg);
	void		(*timings) (const void *handle, SjTimings *timings);
	void		(*end) (void *handle);
	/* CPU engines begun with index_right: their flattened index, or NULL */
	size_t		(*index_size) (const void *handle);
	void		(*index_write) (const void *handle, void *dst);
	SjDeviceHold hold;			/* GPU runs: the devices it runs on */
	MemoryContextCallback cb;
} SjRun;

/*
 * What an operator gives SjRunJoin: how to begin its engine on the CPU or
 * the GPU (filling run's handle and dispatch table), how to emit a batch of
 * pairs, and the tuplestore receiving them (NULL when counting), which is
 * emptied when the join restarts on the CPU after the GPU ran out of memory.
 */
typedef struct SjRunSpec
{
	const char *name;			/* "eps_join", for messages */
	void	   *arg;
	SjStatus	(*begin) (void *arg, bool gpu, const SjJoinOptions *options,
						  SjRun *run, char *errmsg);
	void		(*emit) (void *arg, const SjPairBatch *batch);
	struct Tuplestorestate *store;
	/* simjoin.device = auto: is the CPU engine cheaper? (NULL: no) */
	bool		(*prefer_cpu) (void *arg);
} SjRunSpec;

/* Statistics of the last join run in this backend (simjoin_last_stats()). */
typedef struct SjStats
{
	char		operator_name[32];
	char		device[8];
	char		strategy[64];
	int64		left_rows;		/* rows handed to the engine */
	int64		right_rows;
	int64		pairs;
	int64		batches;
	double		scan_ms;		/* scan and marshal */
	double		build_ms;
	double		probe_ms;
	double		transfer_ms;
	double		start_ms;		/* GPU: waiting for the device to start */
	double		emit_ms;
	double		total_ms;
	int64		device_bytes;
	int			scan_workers;	/* parallel workers that read an input */
	char		devices[192];	/* GPU: devices, and shares when several */
} SjStats;

extern SjStats sj_last_stats;

/* simjoin.c */
extern void SjReportStatus(SjStatus status, const char *errmsg,
						   const char *what);
extern bool SjGpuUsable(void);
/*
 * GPU start-up: creating a process's CUDA context, and starting one join on
 * a device already started (milliseconds; measured on the H100/H200 hosts).
 */
#define SJ_GPU_CONTEXT_MS		160.0
#define SJ_GPU_JOIN_START_MS	0.4

extern bool SjUseGpu(void);
extern double SjGpuStartMs(void);
extern void SjStartDevice(void);
extern void SjJoinOptionsInit(SjJoinOptions *options, bool count_only);

/* devices.c */
extern char *sj_devices_string;
extern void SjDevicesInit(void);
extern void SjDevicesAcquire(SjJoinOptions *options, SjDeviceHold *hold,
							 bool spread);
extern bool SjSpreads(const char *operator_name);
extern void SjDevicesRelease(SjDeviceHold *hold);
extern void SjDevicesStart(bool spread);
extern void SjDevicesDescribe(const SjDeviceHold *hold, char *buf, size_t len);
extern int64 SjRunJoin(const SjRunSpec *spec, bool count_only, SjStats *stats);

/* A pull-style run of one join: SjRunJoin's loop, for the custom scan. */
typedef struct SjCursor
{
	const SjRunSpec *spec;
	bool		count_only;
	int			cpu_threads;	/* > 0: instead of simjoin.cpu_threads */
	const void *shared_index;	/* CPU engine: probe this index of the inner */
	bool		gpu;			/* the engine in use (or to start) */
	bool		ending;			/* the engine returned its last batch */
	bool		done;
	SjRun	   *run;			/* NULL before the first fetch */
	int64		pairs;			/* pairs fetched so far */
} SjCursor;

extern void SjCursorOpen(SjCursor *cur, const SjRunSpec *spec, bool count_only);
extern bool SjCursorFetch(SjCursor *cur, SjPairBatch *batch, SjStats *stats);
extern void SjCursorClose(SjCursor *cur);
/*
 * The body of a pair join taking (left table, key, column, right table, key,
 * column, parameter); right_relid InvalidOid is the self-join form, store
 * NULL the count form.  SjPairJoinCall unpacks the SQL arguments for it.
 */
typedef int64 (*SjPairJoinFn) (Oid left_relid, text *left_key, text *left_col,
							   Oid right_relid, text *right_key, text *right_col,
							   double param, int option,
							   struct Tuplestorestate *store, TupleDesc desc);
extern Datum SjPairJoinCall(FunctionCallInfo fcinfo, SjPairJoinFn fn,
							bool self, bool count, int option);
extern int64 SjJoinAndReport(const SjRunSpec *spec, bool empty, SjStats *stats,
							 double start_ms);
extern void SjEmitKeyPairs(struct Tuplestorestate *store, TupleDesc desc,
						   const int64 *left_keys, const int64 *right_keys,
						   bool self, const SjPairBatch *batch);
extern void SjStatsStart(SjStats *stats, const char *operator_name);
extern void SjStatsFinish(SjStats *stats, double start_ms);

/* cs_planner.c: the Custom Scan node (its files share customscan.h) */
extern void SjCustomScanInit(void);

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
 * with a constant interval (theta_join.c).  nsteps == 0: a plain column.
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
extern int64 SjKeyValue(Datum value, Oid typid);
extern void SjErrorNullKey(Oid relid, const SjColumn *col);

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
extern void SjParallelCopy(uint64 ntasks, SjTaskFn fn, void *arg);

/*
 * A merge of pieces (the leader's side and the workers' parts) into one
 * side, as tasks of up to `block` rows of one piece each.  The pieces are
 * an array of structs of `stride` bytes, each beginning with its row count
 * (a size_t).
 */
typedef struct SjMergeTasks
{
	int			npieces;
	size_t		block;
	uint64	   *first;			/* first task of each piece; [npieces]: all */
} SjMergeTasks;

extern void SjMergeTasksInit(SjMergeTasks *tasks, int npieces, const void *pieces,
							 size_t stride, size_t block);
extern int	SjMergeTaskPiece(const SjMergeTasks *tasks, uint64 task, size_t *first_row);

/* distance.c */
extern int	SjVectorDim(ArrayType *a, const char *what);
extern void SjErrorDims(int a, int b);

/* jaccard.c */
extern void SjCheckSetNulls(ArrayType *a, const char *what);
extern double SjJaccardValue(int64 la, int64 lb, int64 inter);

/* postgis.c: eps_join over PostGIS points */
extern bool SjPointColumn(Oid relid, text *column);
extern int64 SjPointJoinRun(Oid left_relid, text *left_key, text *left_col,
							Oid right_relid, text *right_key, text *right_col,
							double eps, struct Tuplestorestate *store,
							TupleDesc desc);
extern void SjPointRow(void *arg, Datum *values, bool *isnull);
extern void *SjPointPartBegin(const SjPartSpec *spec);
extern Size SjPointPartSize(void *side);
extern void SjPointPartWrite(void *side, char *dst);

/* eps_join.c: marshalled vectors of one relation */
typedef struct SjVectorInput
{
	SjVectors	vectors;		/* SoA coordinates of the joining rows */
	int64	   *keys;			/* key of each joining row */
	int64		skipped;		/* NULL, NaN or infinite vectors */
} SjVectorInput;

/* State of one side's scan. */
typedef struct SjEpsScan
{
	Oid			relid;			/* InvalidOid when fed by the custom scan */
	SjColumn	cols[2];		/* key, vector */
	int			dim;			/* -1 until the first vector */
	size_t		n;				/* joining rows */
	size_t		cap_rows;
	size_t		cap_keys;
	double	   *rows;			/* row-major while scanning */
	int64	   *keys;
	int64		skipped;
	char		what[NAMEDATALEN * 2 + 32];
} SjEpsScan;

/* What the engine begin callback and the emitter need. */
typedef struct SjEpsJob
{
	SjVectorInput left;
	SjVectorInput right;
	bool		self;
	double		eps;
	int			metric;			/* SjMetric (sjdist.h) */
	struct Tuplestorestate *store;
	TupleDesc	desc;
} SjEpsJob;

extern void SjEpsSideInit(SjEpsScan *scan, const char *what);
extern bool SjEpsPreferCpu(void *arg);
extern void SjEpsRow(void *arg, Datum *values, bool *isnull);
extern void SjEpsSideFinish(SjEpsScan *scan, const SjParts *parts,
							SjVectorInput *out);
extern void *SjEpsPartBegin(const SjPartSpec *spec);
extern Size SjEpsPartSize(void *side);
extern void SjEpsPartWrite(void *side, char *dst);
extern SjStatus SjEpsBegin(void *arg, bool gpu, const SjJoinOptions *options,
						   SjRun *run, char *errmsg);

/* postgis.c: the custom scan's joins of PostGIS points */
#define SJ_GIS_GEOMETRY		1	/* SjGisCondition's flags */
#define SJ_GIS_GEOGRAPHY	2
#define SJ_GIS_TOLERANCE	4	/* a tolerance argument: < 0 is PostGIS's error */

/* The PostGIS functions the planner recognises. */
enum
{
	SJ_GIS_FN_NONE,
	SJ_GIS_FN_DWITHIN,			/* ST_DWithin(geometry, geometry, float8) */
	SJ_GIS_FN_DWITHIN3D,		/* ST_3DDWithin(geometry, geometry, float8) */
	SJ_GIS_FN_DISTANCE,			/* ST_Distance(geometry, geometry) */
	SJ_GIS_FN_DISTANCE3D,		/* ST_3DDistance(geometry, geometry) */
	SJ_GIS_FN_KNN,				/* geometry <-> geometry */
	SJ_GIS_FN_GDWITHIN,			/* ST_DWithin(geography, geography, float8, bool) */
	SJ_GIS_FN_GDISTANCE,		/* ST_Distance(geography, geography, bool) */
	SJ_GIS_FN_N
};

extern int	SjGisCondition(Expr *clause, Expr **a, Expr **b, Expr **threshold,
						   bool *strict);
extern void *SjPointSideNew(bool geography, const char *what);
extern void SjPointSideDone(void *side, SjParts *parts, SjVectorInput *out);
extern double SjPointEngineEps(void *left, void *right, SjVectorInput *lin,
							   SjVectorInput *rin, double d);

/* jaccard_join.c: one side's sets, dictionary-encoded */
typedef struct SjDict SjDict;

typedef struct SjSetScan
{
	Oid			relid;			/* InvalidOid when fed by the custom scan */
	SjColumn	cols[2];		/* key, set */
	SjDict	   *dict;
	uint32	   *rowbuf;			/* token ids of the current row */
	size_t		cap_rowbuf;
	uint64	   *offsets;
	size_t		cap_offsets;
	uint32	   *tokens;
	size_t		cap_tokens;
	uint64		ntokens;
	int64	   *keys;
	size_t		cap_keys;
	size_t		n;
	int64		skipped;
	char		what[NAMEDATALEN * 2 + 32];
} SjSetScan;

typedef struct SjJaccardJob
{
	SjSets		left;
	SjSets		right;
	int64	   *left_keys;
	int64	   *right_keys;
	bool		self;
	double		threshold;
	struct Tuplestorestate *store;
	TupleDesc	desc;
} SjJaccardJob;

extern SjDict *SjDictCreate(Oid elem);
extern uint32 SjDictSize(const SjDict *dict);
extern void SjSetSideInit(SjSetScan *scan, const char *what, SjDict *dict);
extern void SjSetRow(void *arg, Datum *values, bool *isnull);
extern void SjSetSideFinish(SjSetScan *scan, const SjParts *parts, SjSets *out,
							int64 **keys);
extern void *SjSetPartBegin(const SjPartSpec *spec);
extern Size SjSetPartSize(void *side);
extern void SjSetPartWrite(void *side, char *dst);
extern SjStatus SjJaccardBegin(void *arg, bool gpu, const SjJoinOptions *options,
							   SjRun *run, char *errmsg);

/* selectivity.c: the theta engine's pairs over the cross product */
struct PlannerInfo;
struct SpecialJoinInfo;
extern double SjThetaPairSelectivity(struct PlannerInfo *root, List *clauses,
									 Bitmapset *outer, Bitmapset *inner,
									 struct SpecialJoinInfo *sjinfo);

/* theta_join.c: a condition compiled for the custom scan */
typedef struct SjThetaPrepared SjThetaPrepared;

extern bool SjThetaCompilable(Node *cond, int *strategy, char **why);
extern SjThetaPrepared *SjThetaPrepare(Node *cond, bool nokeys);
extern void SjThetaAddRow(SjThetaPrepared *tp, int side, int64 key,
						  const Datum *values, const bool *isnull);
extern bool SjThetaMayNeedRows(SjThetaPrepared *tp);
extern void SjThetaFinish(SjThetaPrepared *tp, SjRunSpec *spec,
						  int64 *nleft, int64 *nright, char *strategy, int len);
extern const bool *SjThetaAside(SjThetaPrepared *tp, int side, const int64 **map);
extern void *SjThetaPreparedSide(SjThetaPrepared *tp, int side, int *ncols,
								 int *positions, Oid *typids);
extern void SjThetaSideAddParts(void *side, const SjParts *parts);
extern int64 *SjThetaSideKeys(void *side, int64 *n);
extern bool SjThetaSideUnranked(SjThetaPrepared *tp, int side);
extern bool SjThetaIndexesInner(SjThetaPrepared *tp);
extern void SjThetaPartDescribe(void *side, SjPartSpec *spec);
extern void *SjThetaPartBegin(const SjPartSpec *spec);
extern void SjThetaPartRow(void *arg, Datum *values, bool *isnull);
extern Size SjThetaPartSize(void *side);
extern void SjThetaPartWrite(void *side, char *dst);

#endif							/* SIMJOIN_H */
