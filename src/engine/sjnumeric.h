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
 * Division by a constant (and every numeric value of a condition that
 * divides) runs wide: a 128-bit fixed-point number (sj_nw) at one scale
 * common to the program, with its own sentinels, |finite| < 10^36.  The
 * quotient is PostgreSQL's numeric_div: rounded half away from zero to the
 * scale select_div_scale() picks for each pair of operands (at least 16
 * significant digits, at least either operand's display scale), which the
 * adapter proves never exceeds the common scale.  NaN / c = NaN, +-Inf / c =
 * +-Inf by the sign of c, and anything but NaN divided by 0 is "division by
 * zero".
 *
 * Compiled as C99 (static inline) and by nvcc (__host__ __device__).
 */
#ifndef SJNUMERIC_H
#define SJNUMERIC_H

#include <stdint.h>

#include "sjhd.h"

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

/* ------------------------------------------------------------------------
 * Wide (128-bit) fixed point, for conditions that divide
 * ------------------------------------------------------------------------ */

typedef __int128 sj_nw;
typedef unsigned __int128 sj_nwu;

#define SJ_NW_NAN		((sj_nw) (((sj_nwu) 1 << 127) - 1))	/* NaN */
#define SJ_NW_PINF		(SJ_NW_NAN - 1) /* Infinity */
#define SJ_NW_NINF		(-SJ_NW_PINF)	/* -Infinity */
#define SJ_NW_MAX_DIGITS	36	/* |finite value| < 10^36 */
#define SJ_NW_MIN_SIG_DIGITS	16	/* PostgreSQL's NUMERIC_MIN_SIG_DIGITS */

/* 10^k for 0 <= k <= 38 */
SJ_HD sj_nwu
sj_nw_pow10(int k)
{
	sj_nwu		p = 1;

	while (k-- > 0)
		p *= 10;
	return p;
}

/* 10^k for 0 <= k <= 18 */
SJ_HD int64_t
sj_num_pow10(int k)
{
	return (int64_t) sj_nw_pow10(k);
}

/* An int64 fixed-point value (scale S) at scale S + k. */
SJ_HD sj_nw
sj_nw_widen(int64_t x, int k)
{
	if (x == SJ_NUM_NAN)
		return SJ_NW_NAN;
	if (x == SJ_NUM_PINF)
		return SJ_NW_PINF;
	if (x == SJ_NUM_NINF)
		return SJ_NW_NINF;
	return (sj_nw) x * (sj_nw) sj_nw_pow10(k);
}

/*
 * -x, x + y, x - y and x * (m / 10^k) of both fixed points, written once:
 * P the prefix, T the type, NAN_, PINF_, NINF_ its sentinels.  In x * (m /
 * 10^k) the common scale leaves k more digits than x carries, so x is a
 * multiple of 10^k and the product is exact; the adapter has bounded it.
 */
#define SJ_NUM_DEFINE_OPS(P, T, NAN_, PINF_, NINF_) \
SJ_HD T \
P##_neg(T x) \
{ \
	return x == NAN_ ? x : -x;	/* swaps the infinities too */ \
} \
\
SJ_HD T \
P##_add(T x, T y) \
{ \
	if (x == NAN_ || y == NAN_) \
		return NAN_; \
	if (x == PINF_ || x == NINF_) \
		return (y == -x) ? NAN_ : x; \
	if (y == PINF_ || y == NINF_) \
		return y; \
	return x + y; \
} \
\
SJ_HD T \
P##_sub(T x, T y) \
{ \
	return P##_add(x, P##_neg(y)); \
} \
\
SJ_HD T \
P##_mul(T x, int64_t m, int k) \
{ \
	if (x == NAN_) \
		return x; \
	if (x == PINF_ || x == NINF_) \
		return m == 0 ? NAN_ : (m > 0 ? x : -x); \
	return (x / (T) P##_pow10(k)) * m; \
}

SJ_NUM_DEFINE_OPS(sj_num, int64_t, SJ_NUM_NAN, SJ_NUM_PINF, SJ_NUM_NINF)
SJ_NUM_DEFINE_OPS(sj_nw, sj_nw, SJ_NW_NAN, SJ_NW_PINF, SJ_NW_NINF)

/* Three-way order of two wide values (NaN greatest, equal to itself). */
SJ_HD int
sj_nw_cmp(sj_nw x, sj_nw y)
{
	return (x > y) - (x < y);
}

/*
 * The weight and first digit, in base 10000, of v / 10^s (v > 0): those of
 * PostgreSQL's normalized NumericVar.
 */
SJ_HD void
sj_nw_digits(sj_nwu v, int s, int *weight, int *first)
{
	int			e = -s;			/* floor(log10(v / 10^s)) */
	int			w,
				sh;
	sj_nwu		t = v;

	while (t >= 10)
	{
		t /= 10;
		e++;
	}
	w = e >= 0 ? e / 4 : -((-e + 3) / 4);
	sh = s + 4 * w;
	*weight = w;
	*first = (int) (sh >= 0 ? v / sj_nw_pow10(sh) : v * sj_nw_pow10(-sh));
}

/*
 * PostgreSQL's select_div_scale() for nonzero operands of weights w1, w2,
 * first digits f1, f2 and display scales d1, d2.
 */
SJ_HD int
sj_nw_div_scale(int w1, int f1, int d1, int w2, int f2, int d2)
{
	int			qweight = w1 - w2 - (f1 <= f2 ? 1 : 0);
	int			r = SJ_NW_MIN_SIG_DIGITS - qweight * 4;

	r = r > d1 ? r : d1;
	r = r > d2 ? r : d2;
	r = r > 0 ? r : 0;
	return r < 1000 ? r : 1000;
}

/*
 * x / (m / 10^kc), x at scale s with display scale dsx, as PostgreSQL's
 * numeric_div computes it (see the top); the divisor's display scale is kc.
 * Returns 0, or 1 for division by zero.  The adapter proves that the
 * quotient's scale r is at most s, that |x| * 10^(r + kc) < 10^37 (twice it
 * fits) and that the result fits.
 */
SJ_HD int
sj_nw_div(sj_nw x, int64_t m, int kc, int dsx, int s, sj_nw *out)
{
	sj_nwu		ax,
				am,
				n,
				d,
				q1,
				q2;
	int			w1,
				f1,
				w2,
				f2,
				r,
				a;

	if (x == SJ_NW_NAN)
	{
		*out = x;
		return 0;
	}
	if (m == 0)
		return 1;
	if (x == SJ_NW_PINF || x == SJ_NW_NINF)
	{
		*out = m > 0 ? x : -x;
		return 0;
	}
	if (x == 0)
	{
		*out = 0;
		return 0;
	}
	ax = x < 0 ? (sj_nwu) (-x) : (sj_nwu) x;
	am = m < 0 ? (sj_nwu) (-(sj_nw) m) : (sj_nwu) m;
	sj_nw_digits(ax, s, &w1, &f1);
	sj_nw_digits(am, kc, &w2, &f2);
	r = sj_nw_div_scale(w1, f1, dsx, w2, f2, kc);
	/* round(ax / 10^s / (am / 10^kc) * 10^r) = round(ax * 10^a / am) */
	a = r + kc - s;
	n = a > 0 ? ax * sj_nw_pow10(a) : ax;
	d = a < 0 ? sj_nw_pow10(-a) : 1;
	/* floor(t) and floor(2t): the half rounds away from zero */
	q1 = (n / d) / am;
	q2 = ((2 * n) / d) / am;
	q1 += q2 - 2 * q1;
	q1 *= sj_nw_pow10(s - r);
	*out = (x < 0) != (m < 0) ? -(sj_nw) q1 : (sj_nw) q1;
	return 0;
}

#endif							/* SJNUMERIC_H */
