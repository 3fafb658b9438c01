/*
 * eps_join.c
 *		eps_join and eps_join_count: pairs of rows whose float vectors lie
 *		within Euclidean distance eps.
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

#include "simjoin.h"
#include "sjgpu.h"

static void SjEpsSideAlloc(SjEpsScan *scan);

/* Row callback: keep one row's key and widened vector. */
void
SjEpsRow(void *arg, Datum *values, bool *isnull)
{
	SjEpsScan  *scan = (SjEpsScan *) arg;
	ArrayType  *a;
	int			dim;
	int			k;
	double	   *dst;

	if (isnull[0])
		SjErrorNullKey(scan->relid, &scan->cols[0]);
	if (isnull[1])
	{
		scan->skipped++;
		return;
	}
	a = DatumGetArrayTypeP(values[1]);
	dim = SjVectorDim(a, scan->what);
	if (scan->dim < 0)
		scan->dim = dim;
	else if (dim != scan->dim)
		SjErrorDims(scan->dim, dim);

	scan->rows = SjGrow(scan->rows, &scan->cap_rows, (scan->n + 1) * dim, sizeof(double));
	scan->keys = SjGrow(scan->keys, &scan->cap_keys, scan->n + 1, sizeof(int64));
	dst = scan->rows + scan->n * dim;
	if (ARR_ELEMTYPE(a) != FLOAT4OID && ARR_ELEMTYPE(a) != FLOAT8OID)
		elog(ERROR, "unexpected element type %u in %s", ARR_ELEMTYPE(a), scan->what);
	if (ARR_ELEMTYPE(a) == FLOAT4OID)
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
	scan->keys[scan->n] = SjKeyValue(values[0], scan->cols[0].typid);
	scan->n++;
}

/* Resolve and check the key and vector columns of one side. */
static void
SjEpsPrepare(SjEpsScan *scan, Oid relid, text *key, text *vector)
{
	Oid			elem;

	memset(scan, 0, sizeof(*scan));
	scan->relid = relid;
	SjCheckRelation(relid);
	SjResolveColumn(relid, text_to_cstring(key), &scan->cols[0]);
	SjResolveColumn(relid, text_to_cstring(vector), &scan->cols[1]);
	SjCheckKeyColumn(relid, &scan->cols[0]);
	elem = get_element_type(scan->cols[1].typid);
	if (elem != FLOAT8OID && elem != FLOAT4OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("vector column \"%s\" of relation \"%s\" must be real[] or double precision[], not %s",
						scan->cols[1].name, get_rel_name(relid),
						format_type_be(scan->cols[1].typid))));
	snprintf(scan->what, sizeof(scan->what), "vector in column \"%s\" of relation \"%s\"",
			 scan->cols[1].name, get_rel_name(relid));
	SjEpsSideAlloc(scan);
}

/* Allocate a side's buffers; relid and cols[0] (the key) are set. */
static void
SjEpsSideAlloc(SjEpsScan *scan)
{
	scan->dim = -1;
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

/* Scan one side and transpose it into the engine's layout. */
static void
SjEpsMarshal(SjEpsScan *scan, SjVectorInput *out)
{
	SjScanRelation(scan->relid, 2, scan->cols, SjEpsRow, scan);
	SjEpsSideFinish(scan, out);
}

/* Transpose the rows gathered so far into the engine's layout. */
void
SjEpsSideFinish(SjEpsScan *scan, SjVectorInput *out)
{
	double	   *coords;
	size_t		i;
	int			k;
	int			dim;

	if (scan->n > (size_t) UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows for eps_join: %zu", scan->n),
				 errdetail("At most %u rows with vectors can join.", UINT32_MAX)));

	dim = scan->dim < 0 ? 1 : scan->dim;
	coords = palloc_extended(Max(scan->n, 1) * dim * sizeof(double), MCXT_ALLOC_HUGE);
	for (k = 0; k < dim && scan->n > 0; k++)
	{
		double	   *col = coords + (size_t) k * scan->n;

		for (i = 0; i < scan->n; i++)
			col[i] = scan->rows[i * dim + k];
	}
	pfree(scan->rows);
	scan->rows = NULL;

	out->vectors.n = (uint32_t) scan->n;
	out->vectors.dim = dim;
	out->vectors.coords = coords;
	out->keys = scan->keys;
	out->skipped = scan->skipped;
}

/* Validate eps. */
static void
SjEpsCheck(double eps)
{
	if (isnan(eps) || eps < 0 || isinf(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be a finite number >= 0, not %g", eps)));
}

/* Engine dispatch: CPU */
static SjStatus
SjEpsCpuNext(void *h, SjPairBatch *b, int *done, char *e)
{
	return sj_eps_cpu_next((SjEpsJoin *) h, b, done, e);
}
static void
SjEpsCpuTimings(const void *h, SjTimings *t)
{
	sj_eps_cpu_timings((const SjEpsJoin *) h, t);
}
static void
SjEpsCpuEnd(void *h)
{
	sj_eps_cpu_end((SjEpsJoin *) h);
}

/* Engine dispatch: GPU */
static SjStatus
SjEpsGpuNext(void *h, SjPairBatch *b, int *done, char *e)
{
	return sjgpu_eps_next((SjGpuEpsJoin *) h, b, done, e);
}
static void
SjEpsGpuTimings(const void *h, SjTimings *t)
{
	sjgpu_eps_timings((const SjGpuEpsJoin *) h, t);
}
static void
SjEpsGpuEnd(void *h)
{
	sjgpu_eps_end((SjGpuEpsJoin *) h);
}

/* SjRunSpec.begin: start the CPU or GPU engine. */
SjStatus
SjEpsBegin(void *arg, bool gpu, const SjJoinOptions *options, SjRun *run,
		   char *errmsg)
{
	SjEpsJob   *job = (SjEpsJob *) arg;
	const SjVectors *right = job->self ? NULL : &job->right.vectors;

	run->op = SJ_OP_EPS;
	if (gpu)
	{
		SjGpuEpsJoin *h = NULL;
		SjStatus	s = sjgpu_eps_begin(&job->left.vectors, right, job->eps,
										options, &h, errmsg);

		run->handle = h;
		run->next = SjEpsGpuNext;
		run->timings = SjEpsGpuTimings;
		run->end = SjEpsGpuEnd;
		return s;
	}
	else
	{
		SjEpsJoin  *h = NULL;
		SjStatus	s = sj_eps_cpu_begin(&job->left.vectors, right, job->eps,
										 options, &h, errmsg);

		run->handle = h;
		run->next = SjEpsCpuNext;
		run->timings = SjEpsCpuTimings;
		run->end = SjEpsCpuEnd;
		return s;
	}
}

/* SjRunSpec.emit: one tuple per pair, keys in place of row indices. */
static void
SjEpsEmit(void *arg, const SjPairBatch *batch)
{
	SjEpsJob *job = (SjEpsJob *) arg;

	SjEmitKeyPairs(job->store, job->desc, job->left.keys,
				   job->self ? job->left.keys : job->right.keys, job->self, batch);
}


/*
 * The body shared by the four SQL functions: marshal, run, emit.
 * right_relid == InvalidOid means the self-join form.  Returns the count.
 */
static int64
SjEpsJoinRun(Oid left_relid, text *left_key, text *left_vec,
			 Oid right_relid, text *right_key, text *right_vec,
			 double eps, Tuplestorestate *store, TupleDesc desc)
{
	SjEpsScan	lscan,
				rscan;
	SjEpsJob	job;
	SjRunSpec	spec;
	SjStats		stats;
	double		t0 = sj_now_ms();

	SjEpsCheck(eps);
	SjStatsStart(&stats, store ? "eps_join" : "eps_join_count");
	memset(&job, 0, sizeof(job));
	job.self = !OidIsValid(right_relid);
	job.eps = eps;
	job.store = store;
	job.desc = desc;

	SjEpsPrepare(&lscan, left_relid, left_key, left_vec);
	if (!job.self)
		SjEpsPrepare(&rscan, right_relid, right_key, right_vec);
	SjEpsMarshal(&lscan, &job.left);
	if (!job.self)
	{
		SjEpsMarshal(&rscan, &job.right);
		if (lscan.dim >= 0 && rscan.dim >= 0 && lscan.dim != rscan.dim)
			SjErrorDims(lscan.dim, rscan.dim);
	}
	stats.left_rows = job.left.vectors.n;
	stats.right_rows = job.self ? job.left.vectors.n : job.right.vectors.n;
	stats.scan_ms = sj_now_ms() - t0;

	spec.name = store ? "eps_join" : "eps_join_count";
	spec.arg = &job;
	spec.begin = SjEpsBegin;
	spec.emit = SjEpsEmit;
	spec.store = store;
	return SjJoinAndReport(&spec,
						   job.left.vectors.n == 0 ||
						   (!job.self && job.right.vectors.n == 0),
						   &stats, t0);
}

PG_FUNCTION_INFO_V1(eps_join);

/* eps_join(left_table, left_key, left_col, right_table, right_key, right_col, param) */
Datum
eps_join(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsJoinRun, false, false);
}

PG_FUNCTION_INFO_V1(eps_join_self);

/* eps_join(tbl, key, col, param) */
Datum
eps_join_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsJoinRun, true, false);
}

PG_FUNCTION_INFO_V1(eps_join_count);

/* eps_join_count(left_table, left_key, left_col, right_table, right_key, right_col, param) */
Datum
eps_join_count(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsJoinRun, false, true);
}

PG_FUNCTION_INFO_V1(eps_join_count_self);

/* eps_join_count(tbl, key, col, param) */
Datum
eps_join_count_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsJoinRun, true, true);
}
