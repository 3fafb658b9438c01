/*
 * sjthetaops.h
 *		The scalar semantics of theta programs, written once for the CPU
 *		engine (theta_cpu.c) and the GPU engine (theta_gpu.cu): PostgreSQL's
 *		integer and float operators with their errors, float order, the
 *		normalised and order-preserving keys of hash and range joins with a
 *		row's key hash, and a join's copy of its program and tables.
 *		Numeric fixed point is in sjnumeric.h.
 *
 * A value's state is SJ_TH_VAL, SJ_TH_NULL or SJ_TH_ERR(code) with code an
 * SjThetaDataError; the operators below return SJ_TH_VAL or an error state.
 * The float4 and float8 branches of the float operators are generated from
 * one definition (SJ_TH_FARITH_BODY).  On the device the float operations
 * are the round-to-nearest intrinsics, on the host plain C operations
 * compiled without contraction (-ffp-contract=off): the same IEEE results.
 *
 * Compiled as C99 (static inline) and by nvcc (__host__ __device__).
 */
#ifndef SJTHETAOPS_H
#define SJTHETAOPS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sjhd.h"
#include "sjnumeric.h"
#include "sjtheta.h"

/* Value states: a value, NULL, or an error (SJ_TH_ERR(SjThetaDataError)). */
#define SJ_TH_VAL		0
#define SJ_TH_NULL		1
#define SJ_TH_ERR(code)	((code) + 1)

/* Round-to-nearest float operations, the same on host and device. */
#ifdef __CUDA_ARCH__
#define SJ_TH_ADD32(a, b)	__fadd_rn(a, b)
#define SJ_TH_SUB32(a, b)	__fsub_rn(a, b)
#define SJ_TH_MUL32(a, b)	__fmul_rn(a, b)
#define SJ_TH_DIV32(a, b)	__fdiv_rn(a, b)
#define SJ_TH_ADD64(a, b)	__dadd_rn(a, b)
#define SJ_TH_SUB64(a, b)	__dsub_rn(a, b)
#define SJ_TH_MUL64(a, b)	__dmul_rn(a, b)
#define SJ_TH_DIV64(a, b)	__ddiv_rn(a, b)
#else
#define SJ_TH_ADD32(a, b)	((a) + (b))
#define SJ_TH_SUB32(a, b)	((a) - (b))
#define SJ_TH_MUL32(a, b)	((a) * (b))
#define SJ_TH_DIV32(a, b)	((a) / (b))
#define SJ_TH_ADD64(a, b)	((a) + (b))
#define SJ_TH_SUB64(a, b)	((a) - (b))
#define SJ_TH_MUL64(a, b)	((a) * (b))
#define SJ_TH_DIV64(a, b)	((a) / (b))
#endif

/* The bits of a double. */
SJ_HD uint64_t
sj_th_bits(double x)
{
#ifdef __CUDA_ARCH__
	return (uint64_t) __double_as_longlong(x);
#else
	uint64_t	b;

	memcpy(&b, &x, sizeof(b));
	return b;
#endif
}

/* The double of some bits. */
SJ_HD double
sj_th_double(uint64_t b)
{
#ifdef __CUDA_ARCH__
	return __longlong_as_double((long long) b);
#else
	double		x;

	memcpy(&x, &b, sizeof(x));
	return x;
#endif
}

/* Error state for a result outside an integer width. */
SJ_HD int
sj_th_range_err(int w)
{
	return SJ_TH_ERR(w == 16 ? SJ_THETA_ERR_SMALLINT_RANGE :
					 w == 32 ? SJ_THETA_ERR_INTEGER_RANGE : SJ_THETA_ERR_BIGINT_RANGE);
}

/* Does r fit integer width w (16, 32; anything else: 64)? */
SJ_HD int
sj_th_fits(int64_t r, int w)
{
	return w == 16 ? (r >= INT16_MIN && r <= INT16_MAX) :
		w == 32 ? (r >= INT32_MIN && r <= INT32_MAX) : 1;
}

/* x op y for int ops of width w; returns SJ_TH_VAL or an error state. */
SJ_HD int
sj_th_iarith(int op, int64_t x, int64_t y, int w, int64_t *out)
{
	int64_t		r;

	switch (op)
	{
		case SJ_OP_ADD_I:
			r = (int64_t) ((uint64_t) x + (uint64_t) y);
			if (((x ^ r) & (y ^ r)) < 0)
				return sj_th_range_err(w);
			break;
		case SJ_OP_SUB_I:
			r = (int64_t) ((uint64_t) x - (uint64_t) y);
			if (((x ^ y) & (x ^ r)) < 0)
				return sj_th_range_err(w);
			break;
		case SJ_OP_MUL_I:
			{
#ifdef __CUDA_ARCH__
				int64_t		hi = __mul64hi((long long) x, (long long) y);
#else
				int64_t		hi = (int64_t) (((__int128) x * y) >> 64);
#endif

				r = (int64_t) ((uint64_t) x * (uint64_t) y);
				if (hi != (r >> 63))
					return sj_th_range_err(w);
				break;
			}
		case SJ_OP_DIV_I:
			if (y == 0)
				return SJ_TH_ERR(SJ_THETA_ERR_DIVISION_BY_ZERO);
			if (y == -1)
			{
				if (x == INT64_MIN)
					return sj_th_range_err(w);
				r = -x;
			}
			else
				r = x / y;
			break;
		default:				/* MOD_I */
			if (y == 0)
				return SJ_TH_ERR(SJ_THETA_ERR_DIVISION_BY_ZERO);
			r = y == -1 ? 0 : x % y;
			break;
	}
	if (!sj_th_fits(r, w))
		return sj_th_range_err(w);
	*out = r;
	return SJ_TH_VAL;
}

/*
 * One float operator in type T with PostgreSQL's checks: a finite/finite
 * op giving infinity overflows, a nonzero product or quotient giving zero
 * underflows, x / 0 (x not NaN) is division by zero.
 */
#define SJ_TH_FARITH_BODY(T, BITS, op, a, b, r) \
	switch (op) \
	{ \
		case SJ_OP_ADD_F: \
			r = SJ_TH_ADD##BITS(a, b); \
			if (isinf(r) && !isinf(a) && !isinf(b)) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_OVERFLOW); \
			break; \
		case SJ_OP_SUB_F: \
			r = SJ_TH_SUB##BITS(a, b); \
			if (isinf(r) && !isinf(a) && !isinf(b)) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_OVERFLOW); \
			break; \
		case SJ_OP_MUL_F: \
			r = SJ_TH_MUL##BITS(a, b); \
			if (isinf(r) && !isinf(a) && !isinf(b)) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_OVERFLOW); \
			if (r == (T) 0 && a != (T) 0 && b != (T) 0) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_UNDERFLOW); \
			break; \
		default:				/* DIV_F */ \
			if (b == (T) 0 && !isnan(a)) \
				return SJ_TH_ERR(SJ_THETA_ERR_DIVISION_BY_ZERO); \
			r = SJ_TH_DIV##BITS(a, b); \
			if (isinf(r) && !isinf(a)) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_OVERFLOW); \
			if (r == (T) 0 && a != (T) 0 && !isinf(b)) \
				return SJ_TH_ERR(SJ_THETA_ERR_FLOAT_UNDERFLOW); \
			break; \
	}

/* x op y in float4: operands and result rounded to float. */
SJ_HD int
sj_th_farith32(int op, double x, double y, double *out)
{
	float		a = (float) x,
				b = (float) y,
				r;

	SJ_TH_FARITH_BODY(float, 32, op, a, b, r);
	*out = r;
	return SJ_TH_VAL;
}

/* x op y in float8. */
SJ_HD int
sj_th_farith64(int op, double a, double b, double *out)
{
	double		r;

	SJ_TH_FARITH_BODY(double, 64, op, a, b, r);
	*out = r;
	return SJ_TH_VAL;
}

/* x op y for float ops; w == 32 is float4 arithmetic. */
SJ_HD int
sj_th_farith(int op, double x, double y, int w, double *out)
{
	return w == 32 ? sj_th_farith32(op, x, y, out) : sj_th_farith64(op, x, y, out);
}

/* PostgreSQL's float8 order: NaN equal to NaN and above everything. */
SJ_HD int
sj_th_fcmp(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return a > b ? 1 : (a < b ? -1 : 0);
}

/* Comparison result (base: EQ NE LT LE GT GE) from a three-way order c. */
SJ_HD int64_t
sj_th_holds(int base, int c)
{
	switch (base)
	{
		case 0:
			return c == 0;
		case 1:
			return c != 0;
		case 2:
			return c < 0;
		case 3:
			return c <= 0;
		case 4:
			return c > 0;
		default:
			return c >= 0;
	}
}

/* -0 -> +0 and every NaN -> one NaN: equal under float8 = become equal bits. */
SJ_HD uint64_t
sj_th_fbits(double x)
{
	if (x == 0.0)
		return 0;
	if (isnan(x))
		return UINT64_C(0x7ff8000000000000);
	return sj_th_bits(x);
}

/* Order-preserving key of an int64: unsigned order == PostgreSQL's order. */
SJ_HD uint64_t
sj_th_okey_i(int64_t x)
{
	return (uint64_t) x ^ (UINT64_C(1) << 63);
}

/* The order-preserving key of a float8 (NaN greatest, -0 = 0). */
SJ_HD uint64_t
sj_th_okey_f(double x)
{
	uint64_t	b = sj_th_fbits(x);

	return (b >> 63) ? ~b : (b | (UINT64_C(1) << 63));
}

/* Bijective 64-bit mixer (splitmix64's finaliser), for key hashes. */
SJ_HD uint64_t
sj_th_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* One more key's normalised value k (the k-th, k >= 1) into a hash. */
SJ_HD uint64_t
sj_th_hash_step(uint64_t h, uint64_t key, int k)
{
	return sj_th_mix(h ^ sj_th_mix(key + (uint64_t) k));
}

/* The first of n sorted keys above key (upper) or not below it (lower). */
SJ_HD uint32_t
sj_th_bound(const uint64_t *a, uint32_t n, uint64_t key, int upper)
{
	uint32_t	lo = 0,
				hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (upper ? a[mid] <= key : a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Normalised key of column c, row r (value not NULL). */
SJ_HD uint64_t
sj_th_nkey(const SjThetaColumn *c, uint32_t r)
{
	if (c->type == SJ_TF64)
		return sj_th_fbits(((const double *) c->values)[r]);
	return (uint64_t) ((const int64_t *) c->values)[r];
}

/* Is any of the nkeys hash key columns cols of table t NULL at row r? */
SJ_HD int
sj_th_key_null(const SjThetaTable *t, const int *cols, int nkeys, uint32_t r)
{
	int			k;

	for (k = 0; k < nkeys; k++)
	{
		const uint8_t *nu = t->cols[cols[k]].nulls;

		if (nu && nu[r])
			return 1;
	}
	return 0;
}

/*
 * Hash of row r's key tuple (columns cols of table t): the CPU engine's
 * index, and the GPU engine's hash partitions (its device d_hash computes
 * the same from the uploaded columns).
 */
SJ_HD uint64_t
sj_th_key_hash(const SjThetaTable *t, const int *cols, int nkeys, uint32_t r)
{
	uint64_t	h = sj_th_mix(sj_th_nkey(&t->cols[cols[0]], r));
	int			k;

	for (k = 1; k < nkeys; k++)
		h = sj_th_hash_step(h, sj_th_nkey(&t->cols[cols[k]], r), k);
	return h;
}

/*
 * A join's copy of its program and of the two tables' column descriptors
 * (both engines keep them, the caller's may go): prog, ninstr, lcols and
 * rcols take the copies, *lt and *rt the tables pointing at them.
 */
static inline void
sj_theta_copy_inputs(const SjThetaProgram *program, const SjThetaTable *left,
					 const SjThetaTable *right, SjThetaInstr *prog, int *ninstr,
					 SjThetaColumn *lcols, SjThetaColumn *rcols,
					 SjThetaTable *lt, SjThetaTable *rt)
{
	memcpy(prog, program->instr, program->ninstr * sizeof(SjThetaInstr));
	*ninstr = program->ninstr;
	if (left->ncols > 0)
		memcpy(lcols, left->cols, left->ncols * sizeof(SjThetaColumn));
	if (right->ncols > 0)
		memcpy(rcols, right->cols, right->ncols * sizeof(SjThetaColumn));
	lt->n = left->n;
	lt->ncols = left->ncols;
	lt->cols = lcols;
	rt->n = right->n;
	rt->ncols = right->ncols;
	rt->cols = rcols;
}

/*
 * Where one range term puts a probe row's candidates in the sorted order
 * keys of column b (sjtheta.h's range terms): from the bound of key klo
 * (the upper bound where lo_upper, else the lower one; the first key where
 * !has_lo) to the bound of khi (the end where !has_hi).
 */
typedef struct SjThKeyRange
{
	int			empty;			/* no key can join */
	int			has_lo;
	int			lo_upper;
	uint64_t	klo;
	int			has_hi;
	int			hi_upper;
	uint64_t	khi;
} SjThKeyRange;

/*
 * The key range of a term given E (ebits) and C (cbits) of a probe row, both
 * values, as int64 or double bits by type; 0 when the bound cannot be
 * trusted (the row then goes to the nested loop).
 *
 * int64: the bound is exact in 128 bits.  float8 DIRECT: the keys compare
 * exactly as PostgreSQL does (NaN greatest).  float8 PLUS/MINUS: fl(b +- E)
 * cmp C implies b cmp (C -+ E) up to 2u|C| + u|C -+ E| + tiny, so the bound
 * is widened by (|E| + |C|) 2^-20 + 2^-100, far more than float4 or float8
 * rounding can move it; E and C must be finite.
 */
SJ_HD int
sj_th_term_keys(int form, int cmp, int type, uint64_t ebits, uint64_t cbits,
				SjThKeyRange *kr)
{
	kr->empty = 0;
	kr->has_lo = kr->has_hi = 0;
	kr->lo_upper = kr->hi_upper = 0;
	kr->klo = kr->khi = 0;
	if (type == SJ_TI64)
	{
		int64_t		e = (int64_t) ebits,
					c = (int64_t) cbits;
		__int128	bound,
					lo = (__int128) INT64_MIN,
					hi = (__int128) INT64_MAX;

		bound = form == SJ_TERM_DIRECT ? (__int128) e :
			form == SJ_TERM_PLUS ? (__int128) c - e :
			form == SJ_TERM_MINUS ? (__int128) c + e : (__int128) e - c;
		if (cmp == SJ_CMP_EQ || cmp == SJ_CMP_GE)
			lo = bound > lo ? bound : lo;
		else if (cmp == SJ_CMP_GT)
			lo = bound + 1 > lo ? bound + 1 : lo;
		if (cmp == SJ_CMP_EQ || cmp == SJ_CMP_LE)
			hi = bound < hi ? bound : hi;
		else if (cmp == SJ_CMP_LT)
			hi = bound - 1 < hi ? bound - 1 : hi;
		kr->empty = lo > hi;
		kr->has_lo = kr->has_hi = 1;
		kr->hi_upper = 1;
		kr->klo = sj_th_okey_i((int64_t) lo);
		kr->khi = sj_th_okey_i((int64_t) hi);
	}
	else if (form == SJ_TERM_DIRECT)
	{
		kr->klo = kr->khi = sj_th_okey_f(sj_th_double(ebits));
		kr->has_lo = cmp == SJ_CMP_EQ || cmp == SJ_CMP_GE || cmp == SJ_CMP_GT;
		kr->lo_upper = cmp == SJ_CMP_GT;
		kr->has_hi = cmp == SJ_CMP_EQ || cmp == SJ_CMP_LE || cmp == SJ_CMP_LT;
		kr->hi_upper = cmp != SJ_CMP_LT;
	}
	else
	{
		double		e = sj_th_double(ebits),
					c = sj_th_double(cbits),
					b,
					m,
					bl,
					bh;

		if (!isfinite(e) || !isfinite(c))
			return 0;
		b = form == SJ_TERM_PLUS ? SJ_TH_SUB64(c, e) : SJ_TH_ADD64(c, e);
		m = SJ_TH_ADD64(SJ_TH_MUL64(SJ_TH_ADD64(fabs(e), fabs(c)), 0x1p-20), 0x1p-100);
		bl = SJ_TH_SUB64(b, m);
		bh = SJ_TH_ADD64(b, m);
		if (!isfinite(bl) || !isfinite(bh))
			return 0;
		kr->klo = sj_th_okey_f(bl);
		kr->khi = sj_th_okey_f(bh);
		kr->has_lo = cmp == SJ_CMP_EQ || cmp == SJ_CMP_GE || cmp == SJ_CMP_GT;
		kr->has_hi = cmp == SJ_CMP_EQ || cmp == SJ_CMP_LE || cmp == SJ_CMP_LT;
		kr->hi_upper = 1;
	}
	return 1;
}

#endif							/* SJTHETAOPS_H */
