/*
 * eps_join.c
 *		eps_join and eps_join_count: pairs of rows whose float vectors lie
 *		within Euclidean (metric 'l2') or cosine (metric 'cosine') distance
 *		eps.
 *
 * Each side is scanned once (marshal.c) into a structure-of-arrays copy of
 * its joining rows, float4 widened to double; rows whose vector is NULL or
 * has a NaN or infinite coordinate never join and are left out, so the
 * engines see only finite vectors.  A NULL key, a NULL element, an array
 * that is not one-dimensional, or two dimensions that differ are errors.
 *
 * The engine (CPU grid or GPU grid, sjengine.h / sjgpu.h) returns row
 * indices; here they become keys.  The self-join form returns each
 * unordered pair of distinct rows once, oriented so that left_id <=
 * right_id.  Pairs go into the SRF's tuplestore (which spills to disk past
 * work_mem); the count form never materialises a pair.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "eps_join.h"
#include "sjdist.h"
#include "sjgpu.h"

static void SjEpsSideAlloc(SjEpsScan *scan);

/*
 * The rows kept so far as doubles: a double precision[] vector came after
 * real[] ones (a side whose vectors are all real[] keeps them as they are,
 * half the memory to fault in and copy, and widens them in the transpose).
 */
static void
SjEpsWiden(SjEpsScan *scan)
{
	size_t		count = scan->n * (size_t) Max(scan->dim, 0);
	const float4 *narrow = (const float4 *) scan->rows;
	double	   *wide = SjAllocLarge(Max(scan->cap_rows, 1) * sizeof(double));
	size_t		i;

	for (i = 0; i < count; i++)
		wide[i] = (double) narrow[i];
	pfree(scan->rows);
	scan->rows = wide;
	scan->elem = sizeof(double);
}

/* Row callback: keep one row's key and vector (real[] as it is, while all are). */
void
SjEpsRow(void *arg, Datum *values, bool *isnull)
{
	SjEpsScan  *scan = (SjEpsScan *) arg;
	ArrayType  *a;
	int			dim;
	int			k;
	bool		narrow;

	a = SjRowArray(scan->relid, &scan->cols[0], values, isnull, &scan->skipped);
	if (a == NULL)
		return;
	dim = SjVectorDim(a, scan->what);
	if (scan->dim < 0)
		scan->dim = dim;
	else if (dim != scan->dim)
		SjErrorDims(scan->dim, dim);
	if (ARR_ELEMTYPE(a) != FLOAT4OID && ARR_ELEMTYPE(a) != FLOAT8OID)
		elog(ERROR, "unexpected element type %u in %s", ARR_ELEMTYPE(a), scan->what);
	narrow = ARR_ELEMTYPE(a) == FLOAT4OID;
	if (scan->n == 0)
	{
		/* nothing kept yet: the first vector's type; the same bytes */
		int			elem = narrow ? sizeof(float4) : sizeof(double);

		scan->cap_rows = scan->cap_rows * scan->elem / elem;
		scan->elem = elem;
	}
	else if (scan->elem == sizeof(float4) && !narrow)
		SjEpsWiden(scan);

	scan->rows = SjGrow(scan->rows, &scan->cap_rows, (scan->n + 1) * dim, scan->elem);
	scan->keys = SjGrow(scan->keys, &scan->cap_keys, scan->n + 1, sizeof(int64));
	if (scan->elem == sizeof(float4))
	{
		float4	   *dst = (float4 *) scan->rows + scan->n * dim;

		memcpy(dst, ARR_DATA_PTR(a), sizeof(float4) * dim);
		for (k = 0; k < dim; k++)
		{
			if (!isfinite(dst[k]))
			{
				/* NaN and infinite coordinates never join */
				scan->skipped++;
				return;
			}
		}
	}
	else
	{
		double	   *dst = (double *) scan->rows + scan->n * dim;

		if (narrow)
		{
			const float4 *src = (const float4 *) ARR_DATA_PTR(a);

			for (k = 0; k < dim; k++)
				dst[k] = (double) src[k];
		}
		else
			memcpy(dst, ARR_DATA_PTR(a), sizeof(double) * dim);
		for (k = 0; k < dim; k++)
		{
			if (!isfinite(dst[k]))
			{
				/* NaN and infinite coordinates never join */
				scan->skipped++;
				return;
			}
		}
	}
	scan->keys[scan->n] = SjKeyValue(values[0], scan->cols[0].typid);
	scan->n++;
}

/* Resolve and check the key and vector columns of one side. */
static void
SjEpsPrepare(SjEpsScan *scan, Oid relid, text *key, text *vector)
{
	static const SjArrayKind vectors = {
		"vector", {FLOAT8OID, FLOAT4OID}, "real[] or double precision[]"
	};

	memset(scan, 0, sizeof(*scan));
	scan->relid = relid;
	SjResolveArraySide(relid, key, vector, &vectors, scan->cols, scan->what,
					   sizeof(scan->what));
	SjEpsSideAlloc(scan);
}

/* Allocate a side's buffers; relid and cols[0] (the key) are set. */
static void
SjEpsSideAlloc(SjEpsScan *scan)
{
	scan->dim = -1;
	scan->elem = sizeof(double);
	scan->cap_rows = 1024;
	scan->cap_keys = 1024;
	scan->rows = palloc_extended(scan->cap_rows * sizeof(double), MCXT_ALLOC_HUGE);
	scan->keys = palloc_extended(scan->cap_keys * sizeof(int64), MCXT_ALLOC_HUGE);
}

/*
 * A side fed by the caller through SjEpsRow, with bigint keys: the custom
 * scan's row numbers.  "what" names the vectors in error messages.
 */
void
SjEpsSideInit(SjEpsScan *scan, const char *what)
{
	memset(scan, 0, sizeof(*scan));
	scan->cols[0].typid = INT8OID;
	strlcpy(scan->what, what, sizeof(scan->what));
	SjEpsSideAlloc(scan);
}

/* SjSideFinishFn of an eps side: into its SjVectorInput. */
static void
SjEpsFinishScan(void *side, SjParts *parts, void *out)
{
	SjEpsSideFinish((SjEpsScan *) side, parts, (SjVectorInput *) out);
}

/*
 * Scan one side, or both of a two-table join (rscan not NULL), and
 * transpose them into the engine's layout.  Returns the parallel workers
 * that read them.
 */
static int
SjEpsMarshal(SjEpsScan *lscan, SjEpsScan *rscan, SjVectorInput *lout,
			 SjVectorInput *rout)
{
	SjJoinSide	sides[2] = {{lscan->relid, 2, lscan->cols, lscan->what, lscan, lout}};

	if (rscan)
		sides[1] = (SjJoinSide) {rscan->relid, 2, rscan->cols, rscan->what, rscan, rout};
	return SjScanJoinSides(sides, rscan ? 2 : 1, SJ_PART_EPS, SjEpsFinishScan);
}

/*
 * A side as a parallel worker sends it (SjEpsPartWrite): this header, the
 * keys, then the vectors row by row.
 */
typedef struct SjEpsPartHeader
{
	uint64		n;
	int64		skipped;
	int32		dim;			/* -1: no vector seen */
	int32		elem;			/* bytes of a coordinate (SjEpsScan.elem) */
} SjEpsPartHeader;

/* One participant's rows as the merge reads them. */
typedef struct SjEpsPiece
{
	size_t		n;
	size_t		offset;			/* of its first row in the merged side */
	const int64 *keys;
	const void *rows;			/* row-major, dim a row */
	int			elem;			/* 4: real, 8: double precision */
} SjEpsPiece;

typedef struct SjEpsMerge
{
	SjEpsPiece *pieces;
	int			npieces;
	int			dim;
	size_t		n;
	int64	   *keys;
	double	   *coords;
	float4	   *fcoords;		/* instead of coords: every piece is real */
} SjEpsMerge;

/*
 * Rows a merge task copies: 2 MB of columns, in whole transpose tiles, at
 * most 65,536 rows.  A high-dimensional side then has hundreds of tasks for
 * simjoin.cpu_threads threads, not one per participant's piece.
 */
#define SJ_MERGE_TASK_BYTES	(2 * 1024 * 1024)
#define SJ_MERGE_MAX_ROWS	65536
#define SJ_WIDEN_BLOCK		(256 * 1024)	/* coordinates a widening task */
/*
 * The transpose's tile: rows at a time, and coordinates of a row at a time
 * (a cache line of them), so that each line of the rows is read once
 * while the tile's columns are written in order.
 */
#define SJ_TRANSPOSE_ROWS	256
#define SJ_TRANSPOSE_COLS	8

/*
 * Transpose rows [first, last) of src (a row of dim coordinates of type
 * T) into columns of stride n at dst (its own type: widened to double, or
 * real kept), a tile at a time.
 */
#define SJ_EPS_TRANSPOSE(T, src, dst, n, dim, first, last) \
	do { \
		const T    *s_ = (const T *) (src); \
		size_t		i0_; \
		for (i0_ = (first); i0_ < (last); i0_ += SJ_TRANSPOSE_ROWS) \
		{ \
			size_t		i1_ = Min((last), i0_ + SJ_TRANSPOSE_ROWS); \
			int			k0_; \
			for (k0_ = 0; k0_ < (dim); k0_ += SJ_TRANSPOSE_COLS) \
			{ \
				int			k1_ = Min((dim), k0_ + SJ_TRANSPOSE_COLS); \
				size_t		i_; \
				int			k_; \
				for (i_ = i0_; i_ < i1_; i_++) \
					for (k_ = k0_; k_ < k1_; k_++) \
						(dst)[(size_t) k_ * (n) + i_] = s_[i_ * (dim) + k_]; \
			} \
		} \
	} while (0)

/* SjMergeFn: rows of one piece, keys copied and rows transposed (and widened). */
static void
SjEpsMergeRows(void *arg, int p, size_t first, size_t last)
{
	SjEpsMerge *m = (SjEpsMerge *) arg;
	const SjEpsPiece *pc = &m->pieces[p];

	if (m->keys != pc->keys)
		memcpy(m->keys + pc->offset + first, pc->keys + first,
			   (last - first) * sizeof(int64));
	if (m->fcoords)
	{
		float4	   *dst = m->fcoords + pc->offset;

		SJ_EPS_TRANSPOSE(float4, pc->rows, dst, m->n, m->dim, first, last);
	}
	else
	{
		double	   *dst = m->coords + pc->offset;

		if (pc->elem == sizeof(float4))
			SJ_EPS_TRANSPOSE(float4, pc->rows, dst, m->n, m->dim, first, last);
		else
			SJ_EPS_TRANSPOSE(double, pc->rows, dst, m->n, m->dim, first, last);
	}
}

/* Rows a merge task transposes, for dim coordinates of elem bytes. */
static size_t
SjEpsMergeBlock(int dim, size_t elem)
{
	size_t		block = SJ_MERGE_TASK_BYTES / ((size_t) dim * elem);

	return Min(Max(block / SJ_TRANSPOSE_ROWS, 1) * SJ_TRANSPOSE_ROWS, SJ_MERGE_MAX_ROWS);
}

/* SjTaskFn of SjEpsColumnsWide: a block of coordinates widened. */
static void
SjEpsWidenTask(void *arg, uint64_t task, int worker)
{
	SjVectors  *v = (SjVectors *) arg;
	size_t		total = (size_t) v->n * v->dim;
	size_t		first = (size_t) task * SJ_WIDEN_BLOCK;
	size_t		last = Min(total, first + SJ_WIDEN_BLOCK);
	double	   *dst = (double *) v->coords;
	size_t		i;

	for (i = first; i < last; i++)
		dst[i] = (double) v->fcoords[i];
}

/*
 * A side kept as real columns (SjVectors.fcoords) in doubles, for an
 * engine that needs them (the CPU engine, the GPU's fallback to it): the
 * same values the transpose would have written.
 */
void
SjEpsColumnsWide(SjVectors *v, int threads)
{
	size_t		total = (size_t) v->n * v->dim;
	SjStatus	status;
	char		errmsg[SJ_ERRMSG_LEN] = "";

	if (v->coords)
		return;
	if (v->fcoords == NULL && v->npieces > 0)
	{
		/* rows in pieces: transposed and widened, as the merge would have */
		SjEpsMerge	m;
		int			p;

		memset(&m, 0, sizeof(m));
		m.pieces = palloc0(v->npieces * sizeof(SjEpsPiece));
		m.npieces = v->npieces;
		m.dim = v->dim;
		m.n = v->n;
		for (p = 0; p < v->npieces; p++)
		{
			m.pieces[p].n = v->pieces[p].n;
			m.pieces[p].offset = v->pieces[p].first;
			m.pieces[p].rows = v->pieces[p].rows;
			m.pieces[p].elem = sizeof(float4);
		}
		m.coords = SjAllocLarge(Max(total, 1) * sizeof(double));
		SjMergePieces(m.npieces, m.pieces, sizeof(SjEpsPiece),
					  SjEpsMergeBlock(m.dim, sizeof(double)), SjEpsMergeRows, &m);
		pfree(m.pieces);
		v->coords = m.coords;
		v->npieces = 0;
		v->pieces = NULL;
		return;
	}
	if (v->fcoords == NULL)
		return;
	v->coords = SjAllocLarge(Max(total, 1) * sizeof(double));
	status = sj_parallel_for(Max(1, threads),
							 (total + SJ_WIDEN_BLOCK - 1) / SJ_WIDEN_BLOCK,
							 SjEpsWidenTask, v);
	if (status != SJ_OK)
	{
		sj_error(errmsg, status, "could not start the threads that widen vectors");
		SjReportStatus(status, errmsg, "simjoin");
	}
	pfree((void *) v->fcoords);
	v->fcoords = NULL;
}

/*
 * Transpose the rows gathered so far, and those of parts that parallel
 * workers built (NULL: none), into the engine's layout; or, for a side
 * that keeps real rows (keep_rows), hand them to the GPU engine as they
 * are (SjVectors.pieces: the leader's rows and the parts, kept mapped until
 * SjEpsSideUnmap), which transposes them on the device: the merge's pass
 * over every coordinate, and its fresh memory, saved.
 */
void
SjEpsSideFinish(SjEpsScan *scan, SjParts *parts, SjVectorInput *out)
{
	SjEpsMerge	m;
	int			nparts = parts ? parts->nparts : 0;
	int			p;
	size_t		block;
	bool		narrow;

	memset(&m, 0, sizeof(m));
	m.pieces = palloc0((nparts + 1) * sizeof(SjEpsPiece));
	m.dim = scan->dim;
	m.pieces[0].n = scan->n;
	m.pieces[0].keys = scan->keys;
	m.pieces[0].rows = scan->rows;
	m.pieces[0].elem = scan->elem;
	m.npieces = 1;
	m.n = scan->n;
	for (p = 0; p < nparts; p++)
	{
		const SjEpsPartHeader *h = (const SjEpsPartHeader *) parts->part[p];
		SjEpsPiece *piece = &m.pieces[m.npieces++];

		if (h->dim >= 0 && m.dim < 0)
			m.dim = h->dim;
		else if (h->dim >= 0 && h->dim != m.dim)
			SjErrorDims(m.dim, h->dim);
		piece->n = h->n;
		piece->offset = m.n;
		piece->keys = (const int64 *) (h + 1);
		piece->rows = (const void *) (piece->keys + h->n);
		piece->elem = h->elem == sizeof(float4) ? sizeof(float4) : sizeof(double);
		m.n += h->n;
		scan->skipped += h->skipped;
	}
	if (m.n > (size_t) UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows for eps_join: %zu", m.n),
				 errdetail("At most %u rows with vectors can join.", UINT32_MAX)));

	scan->dim = m.dim;			/* -1 still when no vector was seen */
	m.dim = m.dim < 0 ? 1 : m.dim;
	narrow = scan->keep_real;
	for (p = 0; p < m.npieces; p++)
		if (m.pieces[p].n > 0 && m.pieces[p].elem != sizeof(float4))
			narrow = false;
	m.keys = nparts > 0 ?
		palloc_extended(Max(m.n, 1) * sizeof(int64), MCXT_ALLOC_HUGE) : scan->keys;
	/* parts in place only where they can be kept mapped (a parallel scan's) */
	if (narrow && scan->keep_rows && SjPartsKeepable(parts))
	{
		SjRowPiece *pieces = palloc(m.npieces * sizeof(SjRowPiece));
		int			np = 0;

		for (p = 0; p < m.npieces; p++)
		{
			const SjEpsPiece *pc = &m.pieces[p];

			if (m.keys != pc->keys)
				memcpy(m.keys + pc->offset, pc->keys, pc->n * sizeof(int64));
			if (pc->n == 0)
				continue;
			pieces[np].first = (uint32) pc->offset;
			pieces[np].n = (uint32) pc->n;
			pieces[np].rows = (const float *) pc->rows;
			np++;
		}
		out->vectors.npieces = np;
		out->vectors.pieces = pieces;
		/* the leader's rows are the first piece: scan->rows stays */
		if (parts != NULL && parts->nparts > 0)
		{
			SjPartsKeep(parts);
			scan->kept = parts;
		}
	}
	else
	{
		if (narrow)
			m.fcoords = SjAllocLarge(Max(m.n * m.dim, 1) * sizeof(float4));
		else
			m.coords = SjAllocLarge(m.n * m.dim * sizeof(double));
		/* the leader's rows go to the columns too, in parallel blocks */
		block = SjEpsMergeBlock(m.dim, narrow ? sizeof(float4) : sizeof(double));
		SjMergePieces(m.npieces, m.pieces, sizeof(SjEpsPiece), block,
					  SjEpsMergeRows, &m);
		pfree(scan->rows);
		scan->rows = NULL;
	}
	if (m.keys != scan->keys)
		pfree(scan->keys);
	scan->keys = m.keys;
	scan->n = m.n;

	out->vectors.n = (uint32_t) m.n;
	out->vectors.dim = m.dim;
	out->vectors.coords = m.coords;
	out->vectors.fcoords = m.fcoords;
	out->keys = m.keys;
	out->skipped = scan->skipped;
	pfree(m.pieces);
}

/*
 * Unmap the parts a side kept for its pieces (SjEpsSideFinish), once no
 * engine reads them: after the join.  An error's abort unmaps them too,
 * after stopping the join (parscan.c's SjKeptPartDetach).
 */
void
SjEpsSideUnmap(SjEpsScan *scan)
{
	if (scan->kept)
	{
		SjPartsUnmap(scan->kept);
		scan->kept = NULL;
	}
}

/* A parallel worker's side, for the columns of spec. */
void *
SjEpsPartBegin(const SjPartSpec *spec)
{
	SjEpsScan  *scan = palloc(sizeof(SjEpsScan));

	SjEpsSideInit(scan, spec->what);
	SjPartKey(spec, &scan->relid, &scan->cols[0]);
	return scan;
}

/* Bytes of a worker's side in the part format. */
Size
SjEpsPartSize(void *side)
{
	SjEpsScan  *scan = (SjEpsScan *) side;
	Size		dim = scan->dim < 0 ? 0 : scan->dim;

	return sizeof(SjEpsPartHeader) + scan->n * sizeof(int64) +
		scan->n * dim * scan->elem;
}

/* Serialize a worker's side into dst (SjEpsPartSize bytes). */
void
SjEpsPartWrite(void *side, char *dst)
{
	SjEpsScan  *scan = (SjEpsScan *) side;
	SjEpsPartHeader *h = (SjEpsPartHeader *) dst;
	Size		dim = scan->dim < 0 ? 0 : scan->dim;
	char	   *p = (char *) (h + 1);

	h->n = scan->n;
	h->skipped = scan->skipped;
	h->dim = scan->dim;
	h->elem = scan->elem;
	memcpy(p, scan->keys, scan->n * sizeof(int64));
	p += scan->n * sizeof(int64);
	memcpy(p, scan->rows, scan->n * dim * scan->elem);
}

/* The part format of SJ_PART_EPS sides (parscan.c). */
const SjPartOps sj_eps_part_ops = {NULL, SjEpsPartBegin, SjEpsRow, SjEpsPartSize, SjEpsPartWrite};

/*
 * Rows a task of SjEpsSelfRows takes: their sums of squares on the stack,
 * the columns read in runs of this many coordinates.
 */
#define SJ_SELF_BLOCK		1024

typedef struct SjSelfTask
{
	const SjVectors *v;
	double		eps;
	bool	   *joins;			/* row i's distance to itself <= eps */
} SjSelfTask;

/* SjTaskFn of SjEpsSelfRows: the cosine distance of a block of rows to themselves. */
static void
SjEpsSelfTask(void *arg, uint64_t task, int worker)
{
	SjSelfTask *t = (SjSelfTask *) arg;
	const SjVectors *v = t->v;
	uint32		first = (uint32) (task * SJ_SELF_BLOCK);
	uint32		n = Min(v->n - first, SJ_SELF_BLOCK);
	double		na[SJ_SELF_BLOCK];
	uint32		i;
	int			k;

	for (i = 0; i < n; i++)
		na[i] = 0.0;
	/* each row's |x|^2 summed in dimension order, as the engines sum it */
	if (v->npieces > 0)
	{
		/* real rows in pieces (SjVectors.pieces): a row's floats in a run */
		int			p = 0;

		for (i = 0; i < n; i++)
		{
			uint32		row = first + i;
			const float *x;

			while (row >= v->pieces[p].first + v->pieces[p].n)
				p++;
			x = v->pieces[p].rows + (size_t) (row - v->pieces[p].first) * v->dim;
			for (k = 0; k < v->dim; k++)
				na[i] = sj_dot_step(na[i], (double) x[k], (double) x[k]);
		}
	}
	else
		for (k = 0; k < v->dim; k++)
		{
			size_t		col = (size_t) k * v->n + first;

			if (v->coords)
				for (i = 0; i < n; i++)
					na[i] = sj_dot_step(na[i], v->coords[col + i], v->coords[col + i]);
			else
				for (i = 0; i < n; i++)
				{
					double		x = (double) v->fcoords[col + i];

					na[i] = sj_dot_step(na[i], x, x);
				}
		}
	for (i = 0; i < n; i++)
		t->joins[first + i] = sj_cosine_finish(na[i], na[i], na[i]) <= t->eps;
}

/*
 * A self-join's rows that join themselves, for the custom scan, whose
 * engine computes each pair of distinct rows once (SjSelfJoinable,
 * cs_planner.c): the engine rows whose distance to themselves is <= eps,
 * in order, palloc'd, their number in *n.  Under l2 that distance is
 * sqrt(sum (x_k - x_k)^2) = 0 for every row (the engines' rows are
 * finite), so every row; under cosine it is computed as the engines
 * compute a pair's (sjdist.h): NaN for a zero vector, which joins nothing.
 * The side is columns (SjVectors.coords or .fcoords) or real rows in
 * pieces (.pieces, in row order).
 */
uint32 *
SjEpsSelfRows(const SjEpsJob *job, int64 *n)
{
	const SjVectors *v = &job->left.vectors;
	uint32	   *rows = palloc_extended(Max(v->n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	int64		count = 0;
	uint32		i;

	if (job->metric == SJ_METRIC_COSINE && v->n > 0)
	{
		SjSelfTask	t;
		SjStatus	status;
		char		errmsg[SJ_ERRMSG_LEN] = "";

		if (v->coords == NULL && v->fcoords == NULL && v->npieces == 0)
			elog(ERROR, "simjoin: a self-join's side holds no vectors");

		t.v = v;
		t.eps = job->eps;
		t.joins = palloc_extended(v->n * sizeof(bool), MCXT_ALLOC_HUGE);
		status = sj_parallel_for(Max(1, sj_cpu_threads),
								 (v->n + SJ_SELF_BLOCK - 1) / SJ_SELF_BLOCK,
								 SjEpsSelfTask, &t);
		if (status != SJ_OK)
		{
			sj_error(errmsg, status, "could not start the threads of a self-join");
			SjReportStatus(status, errmsg, "simjoin");
		}
		for (i = 0; i < v->n; i++)
			if (t.joins[i])
				rows[count++] = i;
		pfree(t.joins);
	}
	else
		for (i = 0; i < v->n; i++)
			rows[count++] = i;
	*n = count;
	return rows;
}

/* Validate eps. */
static void
SjEpsCheck(double eps)
{
	SjCheckParam(!(isnan(eps) || eps < 0 || isinf(eps)),
				 "eps must be a finite number >= 0", eps);
}

/* The engines' entry points (sjrun.h). */
SJ_ENGINE_INDEX(SjEpsJoin, sj_eps_cpu);
SJ_ENGINE(SjGpuEpsJoin, sjgpu_eps);

/* SjOperatorMethods.begin: start the CPU or GPU engine. */
SjStatus
SjEpsBegin(void *arg, bool gpu, const SjJoinOptions *options, SjRun *run,
		   char *errmsg)
{
	SjEpsJob   *job = (SjEpsJob *) arg;
	const SjVectors *right = job->self ? NULL : &job->right.vectors;
	SjJoinOptions opts = *options;

	/* the job's metric, for both engines alike */
	opts.metric = job->metric;
	options = &opts;
	run->op = SJ_OP_EPS;
	if (gpu)
	{
		SjGpuEpsJoin *h = NULL;
		SjStatus	s = sjgpu_eps_begin(&job->left.vectors, right, job->eps,
										options, &h, errmsg);

		return SjRunStarted(run, h, &sjgpu_eps_engine, s);
	}
	else
	{
		SjEpsJoin  *h = NULL;
		SjStatus	s;

		SjEpsColumnsWide(&job->left.vectors, options->cpu_threads);
		if (!job->self)
			SjEpsColumnsWide(&job->right.vectors, options->cpu_threads);
		s = sj_eps_cpu_begin(&job->left.vectors, right, job->eps,
							 options, &h, errmsg);

		return SjRunStarted(run, h, &sj_eps_cpu_engine, s);
	}
}

/*
 * SjOperatorMethods.prefer_cpu: the engines' milliseconds from the rows and the
 * dimension (test/bench/BENCHMARKS.md, "device choice"): per row, 68 ns on
 * the CPU engine (all cores) and 2.1 ns on the GPU at up to 10 dimensions,
 * both growing with the dimension beyond; the GPU adds its start-up and the
 * upload of the coordinates (about 9 GB/s).  Brute force, where no grid
 * prunes, costs both per pair; the GPU's tensor-core filter is so much
 * faster there that the per-row terms already choose it.
 */
bool
SjEpsPreferCpu(void *arg)
{
	SjEpsJob   *job = (SjEpsJob *) arg;
	double		rows = (double) job->left.vectors.n +
		(job->self ? 0.0 : (double) job->right.vectors.n);
	double		dim = Max(1, job->left.vectors.dim);
	double		grow = Max(1.0, dim / 10.0);
	double		cpu_ms = 0.15 + 0.000068 * grow * rows;
	double		elem = job->left.vectors.coords ? sizeof(double) : sizeof(float4);
	double		gpu_ms = SjGpuStartMs() + 0.0000021 * grow * rows +
		rows * dim * elem / 9.0e6;

	return cpu_ms < gpu_ms;
}

/* SjOperatorMethods.emit: one tuple per pair, keys in place of row indices. */
static void
SjEpsEmit(void *arg, const SjPairBatch *batch)
{
	SjEpsJob *job = (SjEpsJob *) arg;

	SjEmitKeyPairs(job->store, job->desc, job->left.keys,
				   job->self ? job->left.keys : job->right.keys, job->self, batch);
}

/* EXPLAIN's strategy of an eps join: the engines choose from the data. */
const char *
SjEpsStrategyName(bool gpu, int planned)
{
	return "grid or tiled brute force, chosen when run";
}

/*
 * SjOperatorMethods.spread: the GPU engine's estimate (sjgpu_eps_spreads:
 * the tensor filter over many pairs, not the grid).
 */
static bool
SjEpsSpread(void *arg)
{
	SjEpsJob   *job = (SjEpsJob *) arg;

	return sjgpu_eps_spreads(&job->left.vectors, job->self ? NULL : &job->right.vectors,
							 job->eps, job->metric) != 0;
}

/* The eps join's methods (sjrun.h). */
const SjOperatorMethods sj_eps_methods = {
	"eps_join", SjEpsBegin, SjEpsEmit, SjEpsPreferCpu, SjEpsStrategyName, SjEpsSpread
};

/*
 * The body of the four SQL functions over vectors (eps_sql.c): marshal,
 * run, emit.  right_relid == InvalidOid means the self-join form.  Returns
 * the count.
 */
int64
SjEpsJoinRun(Oid left_relid, text *left_key, text *left_vec,
			 Oid right_relid, text *right_key, text *right_vec,
			 double eps, int metric, Tuplestorestate *store, TupleDesc desc)
{
	SjEpsScan	lscan,
				rscan;
	SjEpsJob	job;
	SjRunSpec	spec;
	SjStats		stats;
	double		t0 = sj_now_ms();
	int64		pairs;

	SjEpsCheck(eps);
	SjStatsStart(&stats, store ? "eps_join" : "eps_join_count");
	SjStartDevice();
	memset(&job, 0, sizeof(job));
	job.self = !OidIsValid(right_relid);
	job.eps = eps;
	job.metric = metric;
	job.store = store;
	job.desc = desc;

	SjEpsPrepare(&lscan, left_relid, left_key, left_vec);
	if (!job.self)
		SjEpsPrepare(&rscan, right_relid, right_key, right_vec);
	/*
	 * real[] vectors stay real rows for the GPU, which transposes and
	 * widens them itself (and for any engine under the developer option
	 * simjoin.debug_row_pieces, so that the CPU-only tests read them too)
	 */
	lscan.keep_real = lscan.keep_rows = SjGpuLikely() || sj_debug_row_pieces;
	if (!job.self)
		rscan.keep_real = rscan.keep_rows = lscan.keep_real;
	if (job.self)
		stats.scan_workers = SjEpsMarshal(&lscan, NULL, &job.left, NULL);
	else
	{
		stats.scan_workers = SjEpsMarshal(&lscan, &rscan, &job.left, &job.right);
		if (lscan.dim >= 0 && rscan.dim >= 0 && lscan.dim != rscan.dim)
			SjErrorDims(lscan.dim, rscan.dim);
	}
	stats.left_rows = job.left.vectors.n;
	stats.right_rows = job.self ? job.left.vectors.n : job.right.vectors.n;
	stats.scan_ms = sj_now_ms() - t0;

	memset(&spec, 0, sizeof(spec));
	spec.name = store ? "eps_join" : "eps_join_count";
	spec.ops = &sj_eps_methods;
	spec.arg = &job;
	spec.store = store;
	/* the workers' parts its engine reads in place, kept for it */
	spec.reads[0] = SjPartsToken(lscan.kept);
	spec.reads[1] = job.self ? 0 : SjPartsToken(rscan.kept);
	pairs = SjJoinAndReport(&spec,
							job.left.vectors.n == 0 ||
							(!job.self && job.right.vectors.n == 0),
							&stats, t0);
	SjEpsSideUnmap(&lscan);
	if (!job.self)
		SjEpsSideUnmap(&rscan);
	return pairs;
}
