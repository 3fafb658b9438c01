/*
 * sjnumeric.h
 *		Exact numeric arithmetic of theta conditions, written once for the
 *		CPU engine (theta_cpu.c) and the GPU engine (theta_gpu.cu).
 *
 * A numeric value is an int64 fixed-point number: the value times 10^S for
 * one scale S common to every numeric value of a program (the adapter
 * chooses S as the largest scale of the values and constants plus the
 * scales of the constant multipliers, so that every result below is exact).
 * The three special values of PostgreSQL's numeric are sentinels placed so
 * that plain int64 order is PostgreSQL's numeric order:
 *
 *	-Infinity < every finite value < Infinity < NaN, NaN = NaN
 *
 * Finite values and every finite intermediate result lie strictly within
 * +-SJ_NUM_LIMIT: the adapter proves this from the data (or the columns'
 * declared precision) before it runs a program, so the arithmetic here
 * never overflows and never raises an error, exactly as PostgreSQL's
 * numeric + - * raise none at these magnitudes.
 *
 * Special values follow PostgreSQL: NaN op x = NaN; Inf + finite = Inf;
 * Inf + -Inf = NaN; Inf * c = +-Inf by the sign of c, Inf * 0 = NaN.
 *
 * Compiled as C99 (static inline) and by nvcc (__host__ __device__).
 */
#ifndef SJNUMERIC_H
#define SJNUMERIC_H

#include <stdint.h>

#ifndef SJ_HD
#ifdef __CUDACC__
#define SJ_HD __host__ __device__ __forceinline__
#else
#define SJ_HD static inline
#endif
#endif

#define SJ_NUM_NAN		INT64_MAX	/* NaN */
#define SJ_NUM_PINF		(INT64_MAX - 1) /* Infinity */
#define SJ_NUM_NINF		(-(INT64_MAX - 1))	/* -Infinity */
#define SJ_NUM_LIMIT	(((int64_t) 1) << 62)	/* |finite value| < this */
#define SJ_NUM_MAX_DIGITS	18	/* digits of a multiplier and of a scale */

/* Is x one of the special values (NaN, +-Infinity)? */
SJ_HD int
sj_num_special(int64_t x)
{
	return x == SJ_NUM_NAN || x == SJ_NUM_PINF || x == SJ_NUM_NINF;
}

/* -x */
SJ_HD int64_t
sj_num_neg(int64_t x)
{
	if (x == SJ_NUM_NAN)
		return x;
	return -x;					/* swaps the infinities too */
}

/* x + y */
SJ_HD int64_t
sj_num_add(int64_t x, int64_t y)
{
	if (x == SJ_NUM_NAN || y == SJ_NUM_NAN)
		return SJ_NUM_NAN;
	if (x == SJ_NUM_PINF || x == SJ_NUM_NINF)
		return (y == -x) ? SJ_NUM_NAN : x;
	if (y == SJ_NUM_PINF || y == SJ_NUM_NINF)
		return y;
	return x + y;
}

/* x - y */
SJ_HD int64_t
sj_num_sub(int64_t x, int64_t y)
{
	return sj_num_add(x, sj_num_neg(y));
}

/* 10^k for 0 <= k <= 18 */
SJ_HD int64_t
sj_num_pow10(int k)
{
	int64_t		p = 1;

	while (k-- > 0)
		p *= 10;
	return p;
}

/*
 * x * (m / 10^k), the product by a constant of mantissa m and scale k.  The
 * common scale S leaves k more digits than x carries, so x is a multiple of
 * 10^k and the product is exact; the adapter has bounded it.
 */
SJ_HD int64_t
sj_num_mul(int64_t x, int64_t m, int k)
{
	if (x == SJ_NUM_NAN)
		return x;
	if (x == SJ_NUM_PINF || x == SJ_NUM_NINF)
		return m == 0 ? SJ_NUM_NAN : (m > 0 ? x : -x);
	return (x / sj_num_pow10(k)) * m;
}

#endif							/* SJNUMERIC_H */
