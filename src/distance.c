/*
 * distance.c
 *		l2_distance and the <-> operator, cosine_distance and the <=>
 *		operator, over float8[] and float4[] vectors.
 *
 * A vector is a one-dimensional array with at least one element and no
 * NULL elements.  The distance is computed in double precision exactly as
 * the engines compute it (sjdist.h: terms summed in dimension order, no
 * fused multiply-add), so that eps_join's distance column equals
 * l2_distance or cosine_distance bit for bit.  NaN or infinite coordinates
 * give NaN or infinity, as the arithmetic does; the cosine distance of a
 * zero vector is NaN.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

#include "eps_join.h"
#include "sjdist.h"

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

/* The two vector arguments of a distance function, checked; their dimension. */
static int
SjVectorArgs(FunctionCallInfo fcinfo, ArrayType **a, ArrayType **b)
{
	int			da,
				db;

	*a = PG_GETARG_ARRAYTYPE_P(0);
	*b = PG_GETARG_ARRAYTYPE_P(1);
	da = SjVectorDim(*a, "vector");
	db = SjVectorDim(*b, "vector");
	if (da != db)
		SjErrorDims(da, db);
	return da;
}

/*
 * The vector arguments of a distance function, checked: x and y, of TYPE
 * elements, and their dimension dim.
 */
#define SJ_VECTOR_ARGS(TYPE) \
	ArrayType  *a; \
	ArrayType  *b; \
	int			dim = SjVectorArgs(fcinfo, &a, &b); \
	const TYPE *x = (const TYPE *) ARR_DATA_PTR(a); \
	const TYPE *y = (const TYPE *) ARR_DATA_PTR(b)

/*
 * Sum of squared differences of the vector arguments (TYPE elements) in
 * dimension order, then sqrt.
 */
#define SJ_L2(TYPE) \
	do { \
		SJ_VECTOR_ARGS(TYPE); \
		double		sum = 0.0; \
		int			k; \
		for (k = 0; k < dim; k++) \
			sum = sj_l2_step(sum, (double) x[k], (double) y[k]); \
		PG_RETURN_FLOAT8(sj_l2_finish(sum)); \
	} while (0)

/*
 * a.b, |a|^2 and |b|^2 of the vector arguments (TYPE elements) in dimension
 * order, then 1 - cos.
 */
#define SJ_COSINE(TYPE) \
	do { \
		SJ_VECTOR_ARGS(TYPE); \
		double		dot = 0.0, \
					na = 0.0, \
					nb = 0.0; \
		int			k; \
		for (k = 0; k < dim; k++) \
		{ \
			double		xk = (double) x[k]; \
			double		yk = (double) y[k]; \
			dot = sj_dot_step(dot, xk, yk); \
			na = sj_dot_step(na, xk, xk); \
			nb = sj_dot_step(nb, yk, yk); \
		} \
		PG_RETURN_FLOAT8(sj_cosine_finish(dot, na, nb)); \
	} while (0)

PG_FUNCTION_INFO_V1(l2_distance_float8);

/* l2_distance(float8[], float8[]) and float8[] <-> float8[] */
Datum
l2_distance_float8(PG_FUNCTION_ARGS)
{
	SJ_L2(float8);
}

PG_FUNCTION_INFO_V1(l2_distance_float4);

/* l2_distance(float4[], float4[]) and float4[] <-> float4[], in double */
Datum
l2_distance_float4(PG_FUNCTION_ARGS)
{
	SJ_L2(float4);
}

PG_FUNCTION_INFO_V1(cosine_distance_float8);

/* cosine_distance(float8[], float8[]) and float8[] <=> float8[] */
Datum
cosine_distance_float8(PG_FUNCTION_ARGS)
{
	SJ_COSINE(float8);
}

PG_FUNCTION_INFO_V1(cosine_distance_float4);

/* cosine_distance(float4[], float4[]) and float4[] <=> float4[], in double */
Datum
cosine_distance_float4(PG_FUNCTION_ARGS)
{
	SJ_COSINE(float4);
}
