/*
 * distance.c
 *		l2_distance and the <-> operator over float8[] and float4[] vectors.
 *
 * A vector is a one-dimensional array with at least one element and no
 * NULL elements.  The distance is computed in double precision exactly as
 * the engines compute it (squares summed in dimension order, no fused
 * multiply-add, then sqrt), so that eps_join's distance column equals
 * l2_distance bit for bit.  NaN or infinite coordinates give NaN or
 * infinity, as the arithmetic does.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

#include "simjoin.h"

/*
 * Check that an array is a usable vector and return its dimension.
 * "what" names the vector in messages ("vector", "column \"v\"").
 */
int
SjVectorDim(ArrayType *a, const char *what)
{
	int			dim;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must be a one-dimensional array", what)));
	dim = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
	if (dim < 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must have at least 1 dimension", what)));
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL elements", what)));
	return dim;
}

/* Error for two vectors of different dimensions. */
void
SjErrorDims(int a, int b)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("different vector dimensions %d and %d", a, b)));
}

/* Sum of squared differences in dimension order, then sqrt. */
#define SJ_L2(TYPE, a, b, dim) \
	do { \
		const TYPE *x = (const TYPE *) ARR_DATA_PTR(a); \
		const TYPE *y = (const TYPE *) ARR_DATA_PTR(b); \
		double		sum = 0.0; \
		int			k; \
		for (k = 0; k < (dim); k++) \
		{ \
			double		d = (double) x[k] - (double) y[k]; \
			sum = sum + d * d; \
		} \
		PG_RETURN_FLOAT8(sqrt(sum)); \
	} while (0)

PG_FUNCTION_INFO_V1(l2_distance_float8);

/* l2_distance(float8[], float8[]) and float8[] <-> float8[] */
Datum
l2_distance_float8(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			da = SjVectorDim(a, "vector");
	int			db = SjVectorDim(b, "vector");

	if (da != db)
		SjErrorDims(da, db);
	SJ_L2(float8, a, b, da);
}

PG_FUNCTION_INFO_V1(l2_distance_float4);

/* l2_distance(float4[], float4[]) and float4[] <-> float4[], in double */
Datum
l2_distance_float4(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			da = SjVectorDim(a, "vector");
	int			db = SjVectorDim(b, "vector");

	if (da != db)
		SjErrorDims(da, db);
	SJ_L2(float4, a, b, da);
}
