/*
 * test_theta.c
 *		Engine tests of theta_join: CPU and GPU against an independent oracle.
 *
 * Conditions are built as small trees (tn_* helpers).  A tree is written
 * out post-order as the engine's program, and evaluated directly by the
 * oracle below: a recursive evaluator with real short-circuit AND/OR,
 * 128-bit integer arithmetic and PostgreSQL's float checks, sharing no code
 * with the engines' interpreters.  For each case the oracle computes the
 * set of joining pairs and whether any pair raises an error; an engine must
 * then return exactly those pairs, or (only where some pair errs) fail with
 * SJ_ERR_DATA and one of the oracle's error messages; the nested loop must
 * fail exactly when the oracle errs.
 *
 * SJ_THETA_BENCH=1 adds the timing runs (CPU vs GPU, medians).
 *
 * Size: this file stays larger than the project's ~1,000 lines: the
 * oracle (tree builders, evaluator, error model) is private to it and every
 * test uses it; each test builds its conditions from those builders.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sjgpu.h"
#include "sjnumeric.h"
#include "sjtest.h"

/* a test hook of the GPU engine (absent from a build without CUDA) */

/* ------------------------------------------------------------------------
 * Random numbers
 * ------------------------------------------------------------------------ */

typedef struct Rng
{
	uint64_t	s;
} Rng;

static uint64_t
rng_next(Rng *r)
{
	uint64_t	z = (r->s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t
rng_below(Rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

static double
rng_unit(Rng *r)
{
	return (rng_next(r) >> 11) * 0x1p-53;
}

static Rng
rng_for(const char *name)
{
	Rng			r;
	uint64_t	h = 1469598103934665603ULL;

	while (*name)
		h = (h ^ (uint8_t) *name++) * 1099511628211ULL;
	r.s = sj_test_seed() ^ h;
	rng_next(&r);
	return r;
}

/* ------------------------------------------------------------------------
 * Condition trees
 * ------------------------------------------------------------------------ */

typedef struct TNode
{
	int			op;
	int			arg;
	int64_t		ival;
	double		fval;
	struct TNode *a;
	struct TNode *b;
} TNode;

#define TN_POOL 4096
static TNode tn_pool[TN_POOL];
static int	tn_used;

static TNode *
tn(int op, int arg, TNode *a, TNode *b)
{
	TNode	   *n = &tn_pool[tn_used++ % TN_POOL];

	memset(n, 0, sizeof(*n));
	n->op = op;
	n->arg = arg;
	n->a = a;
	n->b = b;
	return n;
}

static TNode *
L(int c)
{
	return tn(SJ_OP_LOAD_L, c, NULL, NULL);
}

static TNode *
R(int c)
{
	return tn(SJ_OP_LOAD_R, c, NULL, NULL);
}

static TNode *
CI(int64_t v)
{
	TNode	   *n = tn(SJ_OP_CONST_I, 0, NULL, NULL);

	n->ival = v;
	return n;
}

static TNode *
CF(double v)
{
	TNode	   *n = tn(SJ_OP_CONST_F, 0, NULL, NULL);

	n->fval = v;
	return n;
}

static TNode *
CB(int v)
{
	TNode	   *n = tn(SJ_OP_CONST_B, 0, NULL, NULL);

	n->ival = v;
	return n;
}

#define OP2(name, op) static TNode *name(TNode *a, TNode *b) { return tn(op, 0, a, b); }
#define OPW(name, op) static TNode *name(int w, TNode *a, TNode *b) { return tn(op, w, a, b); }
#define OP1(name, op) static TNode *name(TNode *a) { return tn(op, 0, a, NULL); }
#define OP1W(name, op) static TNode *name(int w, TNode *a) { return tn(op, w, a, NULL); }
/* OPM: a * (m / 10^k) */
#define OPM(name, op) \
static TNode * \
name(TNode *a, int64_t m, int k) \
{ \
	TNode	   *n = tn(op, k, a, NULL); \
	n->ival = m; \
	return n; \
}

OPW(ADDI, SJ_OP_ADD_I)
OPW(SUBI, SJ_OP_SUB_I)
OPW(MULI, SJ_OP_MUL_I)
OPW(DIVI, SJ_OP_DIV_I)
OPW(MODI, SJ_OP_MOD_I)
OPW(ADDF, SJ_OP_ADD_F)
OPW(SUBF, SJ_OP_SUB_F)
OPW(MULF, SJ_OP_MUL_F)
OPW(DIVF, SJ_OP_DIV_F)
OP2(EQI, SJ_OP_EQ_I)
OP2(NEI, SJ_OP_NE_I)
OP2(LTI, SJ_OP_LT_I)
OP2(LEI, SJ_OP_LE_I)
OP2(GTI, SJ_OP_GT_I)
OP2(GEI, SJ_OP_GE_I)
OP2(EQF, SJ_OP_EQ_F)
OP2(NEF, SJ_OP_NE_F)
OP2(LTF, SJ_OP_LT_F)
OP2(LEF, SJ_OP_LE_F)
OP2(GTF, SJ_OP_GT_F)
OP2(GEF, SJ_OP_GE_F)
OP2(AND, SJ_OP_AND)
OP2(OR, SJ_OP_OR)

OP1(NOT, SJ_OP_NOT)
OP1(ISNULL, SJ_OP_IS_NULL)
OP1(ISNOTNULL, SJ_OP_IS_NOT_NULL)
OP1W(NEGI, SJ_OP_NEG_I)
OP1(NEGF, SJ_OP_NEG_F)
OP1W(I2F, SJ_OP_I2F)

OP2(ADDN, SJ_OP_ADD_N)
OP2(SUBN, SJ_OP_SUB_N)
OP1(NEGN, SJ_OP_NEG_N)
OPM(MULN, SJ_OP_MUL_N)

/* Wide numeric (sjnumeric.h's sj_nw): the value at scale 3 widened by k places. */
static TNode *
WIDEN(TNode *a, int k)
{
	return tn(SJ_OP_WIDEN_N, k, a, NULL);
}

OP2(ADDW, SJ_OP_ADD_W)
OP2(SUBW, SJ_OP_SUB_W)
OP2(EQW, SJ_OP_EQ_W)
OP2(NEW, SJ_OP_NE_W)
OP2(LTW, SJ_OP_LT_W)
OP2(GEW, SJ_OP_GE_W)

/* a / (m / 10^kc), the common scale s, the dividend's display scale dsx */
static TNode *
DIVW(TNode *a, int64_t m, int kc, int dsx, int s)
{
	TNode	   *n = tn(SJ_OP_DIV_W, SJ_DIVW_ARG(s, kc, dsx), a, NULL);

	n->ival = m;
	return n;
}

/* wide */
OPM(MULW, SJ_OP_MUL_W)

static TNode *
CNULL(int type)
{
	return tn(SJ_OP_CONST_NULL, type, NULL, NULL);
}

/* Write a tree post-order into a program. */
static int
tn_emit(const TNode *n, SjThetaInstr *out, int k)
{
	if (n->a)
		k = tn_emit(n->a, out, k);
	if (n->b)
		k = tn_emit(n->b, out, k);
	out[k].op = n->op;
	out[k].arg = n->arg;
	out[k].ival = n->ival;
	out[k].fval = n->fval;
	return k + 1;
}

/* ------------------------------------------------------------------------
 * Tables: five columns a side
 *	0 int64 key (small domain)		1 int64 wide (extremes possible)
 *	2 float8 (NaN, inf, -0 mixed in)	3 float8 key (few values, NaN, -0)
 *	4 int64 small (int4-like)
 * ------------------------------------------------------------------------ */

#define NCOLS 5

typedef struct Side
{
	uint32_t	n;
	int64_t    *i[NCOLS];		/* int columns (NULL for float) */
	double	   *f[NCOLS];		/* float columns */
	uint8_t    *nul[NCOLS];
	SjThetaColumn cols[NCOLS];
	SjThetaTable t;
} Side;

typedef struct Shape
{
	uint32_t	n;
	int64_t		keys;			/* col 0 domain; 1 = all equal */
	double		nullp;			/* NULL probability (0: no bitmaps) */
	double		extremep;		/* col 1 near int64 limits, col 4 near int32 */
	double		zerop;			/* col 4 zero */
	int64_t		wide;			/* col 1 range */
} Shape;

static void
side_free(Side *s)
{
	int			c;

	for (c = 0; c < NCOLS; c++)
	{
		free(s->i[c]);
		free(s->f[c]);
		free(s->nul[c]);
	}
	memset(s, 0, sizeof(*s));
}

static void
side_make(Side *s, const Shape *sh, Rng *r)
{
	static const double fkeys[] = {0.0, -0.0, 1.5, -2.25, NAN, INFINITY, 3.0};
	uint32_t	n = sh->n,
				k;
	int			c;

	memset(s, 0, sizeof(*s));
	s->n = n;
	for (c = 0; c < NCOLS; c++)
	{
		int			isf = c == 2 || c == 3;

		if (isf)
			s->f[c] = malloc((n ? n : 1) * sizeof(double));
		else
			s->i[c] = malloc((n ? n : 1) * sizeof(int64_t));
		if (sh->nullp > 0)
			s->nul[c] = calloc(n ? n : 1, 1);
		for (k = 0; k < n; k++)
		{
			switch (c)
			{
				case 0:
					s->i[0][k] = (int64_t) rng_below(r, sh->keys) + (sh->keys == 1 ? 7 : 0);
					break;
				case 1:
					if (rng_unit(r) < sh->extremep)
						s->i[1][k] = rng_below(r, 2) ? INT64_MAX - (int64_t) rng_below(r, 8) :
							INT64_MIN + (int64_t) rng_below(r, 8);
					else
						s->i[1][k] = (int64_t) rng_below(r, (uint64_t) sh->wide * 2 + 1) - sh->wide;
					break;
				case 2:
					{
						double		u = rng_unit(r);

						if (u < 0.03)
							s->f[2][k] = NAN;
						else if (u < 0.05)
							s->f[2][k] = rng_below(r, 2) ? INFINITY : -INFINITY;
						else if (u < 0.08)
							s->f[2][k] = rng_below(r, 2) ? 0.0 : -0.0;
						else if (u < 0.10)
							s->f[2][k] = rng_below(r, 2) ? 1e308 : 1e-300;
						else
							s->f[2][k] = (double) ((int64_t) rng_below(r, 4001) - 2000) / 64.0 +
								rng_unit(r) * 0x1p-10;
						break;
					}
				case 3:
					s->f[3][k] = fkeys[rng_below(r, sizeof(fkeys) / sizeof(fkeys[0]))];
					break;
				default:
					if (rng_unit(r) < sh->zerop)
						s->i[4][k] = 0;
					else if (rng_unit(r) < sh->extremep)
						s->i[4][k] = rng_below(r, 2) ? INT32_MAX - (int64_t) rng_below(r, 4) :
							INT32_MIN + (int64_t) rng_below(r, 4);
					else
						s->i[4][k] = (int64_t) rng_below(r, 61) - 30;
					break;
			}
			if (s->nul[c] && rng_unit(r) < sh->nullp)
				s->nul[c][k] = 1;
		}
		s->cols[c].type = isf ? SJ_TF64 : SJ_TI64;
		s->cols[c].values = isf ? (const void *) s->f[c] : (const void *) s->i[c];
		s->cols[c].nulls = s->nul[c];
	}
	s->t.n = n;
	s->t.ncols = NCOLS;
	s->t.cols = s->cols;
}

/* ------------------------------------------------------------------------
 * The oracle: direct evaluation with real short circuits
 * ------------------------------------------------------------------------ */

typedef struct OVal
{
	int			st;				/* 0 value, 1 NULL, 2 error */
	int			err;			/* SjThetaDataError when st == 2 */
	int			type;			/* SjThetaType */
	__int128	i;
	double		f;
} OVal;

static OVal
o_err(int code)
{
	OVal		v = {2, code, 0, 0, 0};

	return v;
}

static OVal
o_null(int type)
{
	OVal		v = {1, 0, type, 0, 0};

	return v;
}

static OVal
o_int(__int128 x)
{
	OVal		v = {0, 0, SJ_TI64, x, 0};

	return v;
}

static OVal
o_flt(double x)
{
	OVal		v = {0, 0, SJ_TF64, 0, x};

	return v;
}

static OVal
o_bool(int b)
{
	OVal		v = {0, 0, SJ_TBOOL, b != 0, 0};

	return v;
}

/* Error for an int result outside width w, or the value. */
static OVal
o_ranged(__int128 x, int w)
{
	__int128	lim = w == 16 ? 32767 : w == 32 ? 2147483647 : (__int128) INT64_MAX;

	if (x > lim || x < -lim - 1)
		return o_err(w == 16 ? SJ_THETA_ERR_SMALLINT_RANGE :
					 w == 32 ? SJ_THETA_ERR_INTEGER_RANGE : SJ_THETA_ERR_BIGINT_RANGE);
	return o_int(x);
}

/*
 * Numeric in the oracle: the sentinels decoded into a kind (0 finite,
 * 1 Infinity, 2 -Infinity, 3 NaN), PostgreSQL's rules applied by kind, the
 * finite result computed in 128 bits and encoded again.
 */
static int
o_nkind(__int128 x)
{
	return x == SJ_NUM_NAN ? 3 : x == SJ_NUM_PINF ? 1 : x == SJ_NUM_NINF ? 2 : 0;
}

static OVal
o_nval(int kind, __int128 x)
{
	return o_int(kind == 3 ? SJ_NUM_NAN : kind == 1 ? SJ_NUM_PINF :
				 kind == 2 ? SJ_NUM_NINF : x);
}

static OVal
o_numeric(int op, int arg, int64_t m, __int128 x, __int128 y)
{
	int			kx = o_nkind(x),
				ky = o_nkind(y);
	__int128	p10 = 1;
	int			j;

	if (op == SJ_OP_NEG_N)
		return o_nval(kx == 1 ? 2 : kx == 2 ? 1 : kx, -x);
	if (op == SJ_OP_MUL_N)
	{
		for (j = 0; j < arg; j++)
			p10 *= 10;
		if (kx == 3 || (kx != 0 && m == 0))
			return o_nval(3, 0);
		if (kx != 0)
			return o_nval((kx == 1) == (m > 0) ? 1 : 2, 0);
		if ((x * m) % p10 != 0)
			return o_err(15);	/* the test broke the engines' precondition */
		return o_nval(0, x * m / p10);
	}
	if (op == SJ_OP_SUB_N)
	{
		ky = ky == 1 ? 2 : ky == 2 ? 1 : ky;
		y = -y;
	}
	if (kx == 3 || ky == 3)
		return o_nval(3, 0);
	if (kx != 0 && ky != 0)
		return o_nval(kx == ky ? kx : 3, 0);
	if (kx != 0 || ky != 0)
		return o_nval(kx ? kx : ky, 0);
	return o_nval(0, x + y);
}

static int
f8_eq(double a, double b)
{
	return isnan(a) ? isnan(b) : !isnan(b) && a == b;
}

static int
f8_lt(double a, double b)
{
	return !isnan(a) && (isnan(b) || a < b);
}

static OVal
o_eval(const TNode *n, const Side *ls, uint32_t li, const Side *rs, uint32_t ri)
{
	OVal		a,
				b;

	switch (n->op)
	{
		case SJ_OP_LOAD_L:
		case SJ_OP_LOAD_R:
			{
				const Side *s = n->op == SJ_OP_LOAD_L ? ls : rs;
				uint32_t	k = n->op == SJ_OP_LOAD_L ? li : ri;

				if (s->nul[n->arg] && s->nul[n->arg][k])
					return o_null(s->f[n->arg] ? SJ_TF64 : SJ_TI64);
				return s->f[n->arg] ? o_flt(s->f[n->arg][k]) : o_int(s->i[n->arg][k]);
			}
		case SJ_OP_CONST_I:
			return o_int(n->ival);
		case SJ_OP_CONST_F:
			return o_flt(n->fval);
		case SJ_OP_CONST_B:
			return o_bool(n->ival != 0);
		case SJ_OP_CONST_NULL:
			return o_null(n->arg);
		case SJ_OP_AND:
		case SJ_OP_OR:
			{
				int			isor = n->op == SJ_OP_OR;

				a = o_eval(n->a, ls, li, rs, ri);
				if (a.st == 2)
					return a;
				if (a.st == 0 && (a.i != 0) == isor)
					return a;	/* short circuit */
				b = o_eval(n->b, ls, li, rs, ri);
				if (b.st == 2)
					return b;
				if (b.st == 0 && (b.i != 0) == isor)
					return b;
				if (a.st == 1 || b.st == 1)
					return o_null(SJ_TBOOL);
				return o_bool(!isor);
			}
		case SJ_OP_IS_NULL:
		case SJ_OP_IS_NOT_NULL:
			a = o_eval(n->a, ls, li, rs, ri);
			if (a.st == 2)
				return a;
			return o_bool((a.st == 1) == (n->op == SJ_OP_IS_NULL));
		default:
			break;
	}

	/* strict operators: evaluate all operands, then errors, then NULLs */
	a = o_eval(n->a, ls, li, rs, ri);
	if (a.st == 2)
		return a;
	if (n->b)
	{
		b = o_eval(n->b, ls, li, rs, ri);
		if (b.st == 2)
			return b;
	}
	else
		b = o_int(0);
	if (a.st == 1 || b.st == 1)
		return o_null(SJ_TBOOL);

	switch (n->op)
	{
		case SJ_OP_NOT:
			return o_bool(!a.i);
		case SJ_OP_ADD_I:
			return o_ranged(a.i + b.i, n->arg ? n->arg : 64);
		case SJ_OP_SUB_I:
			return o_ranged(a.i - b.i, n->arg ? n->arg : 64);
		case SJ_OP_MUL_I:
			return o_ranged(a.i * b.i, n->arg ? n->arg : 64);
		case SJ_OP_DIV_I:
			if (b.i == 0)
				return o_err(SJ_THETA_ERR_DIVISION_BY_ZERO);
			return o_ranged(a.i / b.i, n->arg ? n->arg : 64);
		case SJ_OP_MOD_I:
			if (b.i == 0)
				return o_err(SJ_THETA_ERR_DIVISION_BY_ZERO);
			return o_int(a.i % b.i);
		case SJ_OP_NEG_I:
			return o_ranged(-a.i, n->arg ? n->arg : 64);
		case SJ_OP_ADD_N:
		case SJ_OP_SUB_N:
		case SJ_OP_NEG_N:
		case SJ_OP_MUL_N:
			return o_numeric(n->op, n->arg, n->ival, a.i, b.i);
		case SJ_OP_WIDEN_N:
			return o_int(sj_nw_widen((int64_t) a.i, n->arg));
		case SJ_OP_ADD_W:
			return o_int(sj_nw_add(a.i, b.i));
		case SJ_OP_SUB_W:
			return o_int(sj_nw_sub(a.i, b.i));
		case SJ_OP_NEG_W:
			return o_int(sj_nw_neg(a.i));
		case SJ_OP_MUL_W:
			return o_int(sj_nw_mul(a.i, n->ival, n->arg));
		case SJ_OP_DIV_W:
			{
				sj_nw		q = 0;

				if (sj_nw_div(a.i, n->ival, SJ_DIVW_KC(n->arg), SJ_DIVW_DSX(n->arg),
							  SJ_DIVW_S(n->arg), &q))
					return o_err(SJ_THETA_ERR_DIVISION_BY_ZERO);
				return o_int(q);
			}
		case SJ_OP_EQ_W:
		case SJ_OP_NE_W:
		case SJ_OP_LT_W:
		case SJ_OP_LE_W:
		case SJ_OP_GT_W:
		case SJ_OP_GE_W:
			{
				int			c = sj_nw_cmp(a.i, b.i);
				int			base = n->op - SJ_OP_EQ_W;

				return o_bool(base == 0 ? c == 0 : base == 1 ? c != 0 : base == 2 ? c < 0 :
							  base == 3 ? c <= 0 : base == 4 ? c > 0 : c >= 0);
			}
		case SJ_OP_I2F:
			return o_flt(n->arg == 32 ? (double) (float) (int64_t) a.i : (double) (int64_t) a.i);
		case SJ_OP_NEG_F:
			return o_flt(-a.f);
		case SJ_OP_ADD_F:
		case SJ_OP_SUB_F:
		case SJ_OP_MUL_F:
		case SJ_OP_DIV_F:
			{
				double		x = a.f,
							y = b.f,
							r;
				int			ovf,
							unf = 0;

				if (n->arg == 32)
				{
					float		fx = (float) x,
								fy = (float) y,
								fr;

					if (n->op == SJ_OP_DIV_F && fy == 0.0f && !isnan(fx))
						return o_err(SJ_THETA_ERR_DIVISION_BY_ZERO);
					fr = n->op == SJ_OP_ADD_F ? fx + fy : n->op == SJ_OP_SUB_F ? fx - fy :
						n->op == SJ_OP_MUL_F ? fx * fy : fx / fy;
					x = fx;
					y = fy;
					r = fr;
					if (n->op == SJ_OP_DIV_F)
					{
						ovf = isinf(fr) && !isinf(fx);
						unf = fr == 0.0f && fx != 0.0f && !isinf(fy);
					}
					else
					{
						ovf = isinf(fr) && !isinf(fx) && !isinf(fy);
						unf = n->op == SJ_OP_MUL_F && fr == 0.0f && fx != 0.0f && fy != 0.0f;
					}
				}
				else
				{
					if (n->op == SJ_OP_DIV_F && y == 0.0 && !isnan(x))
						return o_err(SJ_THETA_ERR_DIVISION_BY_ZERO);
					r = n->op == SJ_OP_ADD_F ? x + y : n->op == SJ_OP_SUB_F ? x - y :
						n->op == SJ_OP_MUL_F ? x * y : x / y;
					if (n->op == SJ_OP_DIV_F)
					{
						ovf = isinf(r) && !isinf(x);
						unf = r == 0.0 && x != 0.0 && !isinf(y);
					}
					else
					{
						ovf = isinf(r) && !isinf(x) && !isinf(y);
						unf = n->op == SJ_OP_MUL_F && r == 0.0 && x != 0.0 && y != 0.0;
					}
				}
				if (ovf)
					return o_err(SJ_THETA_ERR_FLOAT_OVERFLOW);
				if (unf)
					return o_err(SJ_THETA_ERR_FLOAT_UNDERFLOW);
				return o_flt(r);
			}
		case SJ_OP_EQ_I:
			return o_bool(a.i == b.i);
		case SJ_OP_NE_I:
			return o_bool(a.i != b.i);
		case SJ_OP_LT_I:
			return o_bool(a.i < b.i);
		case SJ_OP_LE_I:
			return o_bool(a.i <= b.i);
		case SJ_OP_GT_I:
			return o_bool(a.i > b.i);
		case SJ_OP_GE_I:
			return o_bool(a.i >= b.i);
		case SJ_OP_EQ_F:
			return o_bool(f8_eq(a.f, b.f));
		case SJ_OP_NE_F:
			return o_bool(!f8_eq(a.f, b.f));
		case SJ_OP_LT_F:
			return o_bool(f8_lt(a.f, b.f));
		case SJ_OP_LE_F:
			return o_bool(f8_lt(a.f, b.f) || f8_eq(a.f, b.f));
		case SJ_OP_GT_F:
			return o_bool(f8_lt(b.f, a.f));
		case SJ_OP_GE_F:
			return o_bool(f8_lt(b.f, a.f) || f8_eq(a.f, b.f));
		default:
			return o_err(-1);
	}
}

typedef struct Truth
{
	uint32_t	n,
				m;
	uint8_t    *bits;			/* n * m bits */
	uint64_t	count;
	int			errs;			/* bit e set: error code e seen */
} Truth;

static void
truth_free(Truth *t)
{
	free(t->bits);
	memset(t, 0, sizeof(*t));
}

/* The end of a case: its truth (or NULL) and sides freed; returns result. */
static const char *
case_end(Truth *t, Side *ls, Side *rs, const char *result)
{
	if (t)
		truth_free(t);
	side_free(ls);
	side_free(rs);
	return result;
}

static int
bit_get(const uint8_t *b, uint64_t k)
{
	return (b[k >> 3] >> (k & 7)) & 1;
}

static void
bit_set(uint8_t *b, uint64_t k)
{
	b[k >> 3] |= (uint8_t) (1 << (k & 7));
}

static void
oracle(const TNode *cond, const Side *ls, const Side *rs, Truth *t)
{
	uint32_t	i,
				j;

	memset(t, 0, sizeof(*t));
	t->n = ls->n;
	t->m = rs->n;
	t->bits = calloc(((uint64_t) ls->n * rs->n + 8) / 8, 1);
	for (i = 0; i < ls->n; i++)
		for (j = 0; j < rs->n; j++)
		{
			OVal		v = o_eval(cond, ls, i, rs, j);

			if (v.st == 2)
				t->errs |= 1 << v.err;
			else if (v.st == 0 && v.i)
			{
				bit_set(t->bits, (uint64_t) i * rs->n + j);
				t->count++;
			}
		}
}

/* ------------------------------------------------------------------------
 * Running an engine
 * ------------------------------------------------------------------------ */

typedef struct Engine
{
	const char *name;
	SjStatus	(*begin) (const SjThetaTable *, const SjThetaTable *,
						  const SjThetaProgram *, SjThetaStrategy,
						  const SjJoinOptions *, void **, char *);
	SjStatus	(*next) (void *, SjPairBatch *, int *, char *);
	void		(*timings) (const void *, SjTimings *);
	void		(*end) (void *);
} Engine;

SJ_ENGINE_FNS(SjThetaJoin, sj_theta_cpu)
SJ_ENGINE_FNS(SjGpuThetaJoin, sjgpu_theta)

static SjStatus
cpu_begin(const SjThetaTable *l, const SjThetaTable *r, const SjThetaProgram *p,
		  SjThetaStrategy s, const SjJoinOptions *o, void **j, char *e)
{
	return sj_theta_cpu_begin(l, r, p, s, o, (SjThetaJoin **) j, e);
}

static SjStatus
gpu_begin(const SjThetaTable *l, const SjThetaTable *r, const SjThetaProgram *p,
		  SjThetaStrategy s, const SjJoinOptions *o, void **j, char *e)
{
	return sjgpu_theta_begin(l, r, p, s, o, (SjGpuThetaJoin **) j, e);
}

static const Engine cpu_engine = {"cpu", cpu_begin, sj_theta_cpu_next_any,
sj_theta_cpu_timings_any, sj_theta_cpu_end_any};
static const Engine gpu_engine = {"gpu", gpu_begin, sjgpu_theta_next_any,
sjgpu_theta_timings_any, sjgpu_theta_end_any};

/*
 * The CPU engine probing a shared index: a first join, begun with
 * index_right over a different left side (its first half), flattens its
 * index of the right side into a block; the join under test probes that
 * block instead of building one.  shared_used counts the joins that did.
 * Every other first join is begun with index_only, as the custom scan
 * does, and must return no pairs.
 */
typedef struct SharedJoin
{
	SjThetaJoin *j;
	void	   *index;
} SharedJoin;

static int	shared_used;

static SjStatus
shared_begin(const SjThetaTable *l, const SjThetaTable *r, const SjThetaProgram *p,
			 SjThetaStrategy s, const SjJoinOptions *o, void **out, char *e)
{
	SharedJoin *sj = calloc(1, sizeof(SharedJoin));
	SjThetaJoin *b = NULL;
	SjThetaTable half = *l;
	SjJoinOptions bo = *o;
	SjStatus	st;
	size_t		size;

	*out = sj;
	if (half.n >= 2)
		half.n /= 2;
	bo.index_right = 1;
	bo.index_only = shared_used % 2;
	bo.cpu_threads = 3;
	if ((st = sj_theta_cpu_begin(&half, r, p, s, &bo, &b, e)) != SJ_OK)
		return st;
	if (bo.index_only)
	{
		SjPairBatch batch;
		int			done = 0;

		if ((st = sj_theta_cpu_next(b, &batch, &done, e)) != SJ_OK)
		{
			sj_theta_cpu_end(b);
			return st;
		}
		if (!done || batch.count != 0)
		{
			sj_theta_cpu_end(b);
			snprintf(e, SJ_ERRMSG_LEN, "an index-only join returned %zu pairs", batch.count);
			return SJ_ERR_INTERNAL;
		}
	}
	size = sj_theta_cpu_index_size(b);
	if (size > 0)
	{
		sj->index = malloc(size);
		sj_theta_cpu_index_write(b, sj->index);
		shared_used++;
	}
	sj_theta_cpu_end(b);
	bo = *o;
	bo.shared_index = sj->index;
	return sj_theta_cpu_begin(l, r, p, s, &bo, &sj->j, e);
}

static SjStatus
shared_next(void *j, SjPairBatch *b, int *d, char *e)
{
	return sj_theta_cpu_next(((SharedJoin *) j)->j, b, d, e);
}

static void
shared_timings(const void *j, SjTimings *t)
{
	sj_theta_cpu_timings(((const SharedJoin *) j)->j, t);
}

static void
shared_end(void *j)
{
	SharedJoin *sj = j;

	if (sj == NULL)
		return;
	sj_theta_cpu_end(sj->j);
	free(sj->index);			/* after the join that probes it */
	free(sj);
}

static const Engine shared_engine = {"cpu shared index", shared_begin, shared_next,
shared_timings, shared_end};

/* What one run returned. */
typedef struct Got
{
	SjStatus	status;
	char		msg[SJ_ERRMSG_LEN];
	uint64_t	count;
	uint64_t	batches;
	char		strategy[64];
} Got;

/*
 * Where a run's pairs go: one call per pair (left * m + right), returning a
 * description of a contract violation, or NULL.
 */
typedef const char *(*PairSink) (void *arg, uint64_t pair, uint32_t m);

/*
 * Run a join to the end within limit_s seconds, every pair checked and
 * handed to sink.  Returns a description of the first contract violation,
 * or NULL.
 */
static const char *
run_batches(const Engine *eng, const Side *ls, const Side *rs, const TNode *cond,
			SjThetaStrategy strat, const SjJoinOptions *opt, int limit_s,
			PairSink sink, void *arg, Got *got)
{
	static char why[512];
	SjThetaInstr prog[SJ_THETA_MAX_INSTR];
	SjThetaProgram p;
	void	   *j = NULL;
	SjTimings	tm;
	size_t		cap = opt->max_batch_pairs ? opt->max_batch_pairs : 1048576;
	int			done = 0;
	double		t0 = sj_now_ms();

	memset(got, 0, sizeof(*got));
	p.ninstr = tn_emit(cond, prog, 0);
	p.instr = prog;
	got->status = eng->begin(&ls->t, &rs->t, &p, strat, opt, &j, got->msg);
	if (got->status != SJ_OK)
	{
		eng->end(j);
		return NULL;
	}
	while (!done)
	{
		SjPairBatch b;
		size_t		k;

		got->status = eng->next(j, &b, &done, got->msg);
		if (got->status != SJ_OK)
			break;
		if (sj_now_ms() - t0 > limit_s * 1000.0)
		{
			snprintf(why, sizeof(why), "next() does not finish within %d s", limit_s);
			eng->end(j);
			return why;
		}
		if (opt->count_only)
		{
			if (b.left || b.right)
			{
				eng->end(j);
				return "count_only batch carries pairs";
			}
			got->count += b.count;
			continue;
		}
		if (b.count > cap)
		{
			snprintf(why, sizeof(why), "batch of %zu pairs exceeds max_batch_pairs %zu", b.count, cap);
			eng->end(j);
			return why;
		}
		if (b.value != NULL)
		{
			eng->end(j);
			return "theta batches carry no value";
		}
		for (k = 0; k < b.count; k++)
		{
			const char *bad;

			if (b.left[k] >= ls->n || b.right[k] >= rs->n)
			{
				snprintf(why, sizeof(why), "pair (%u, %u) out of range", b.left[k], b.right[k]);
				eng->end(j);
				return why;
			}
			bad = sink(arg, (uint64_t) b.left[k] * rs->n + b.right[k], rs->n);
			if (bad)
			{
				eng->end(j);
				return bad;
			}
		}
		got->count += b.count;
	}
	eng->timings(j, &tm);
	got->batches = tm.batches;
	snprintf(got->strategy, sizeof(got->strategy), "%s", tm.strategy);
	eng->end(j);
	return NULL;
}

/* PairSink of a bit matrix: each pair once. */
static const char *
bits_sink(void *arg, uint64_t pair, uint32_t m)
{
	static char why[128];
	uint8_t    *bits = (uint8_t *) arg;

	if (bit_get(bits, pair))
	{
		snprintf(why, sizeof(why), "pair (%llu, %llu) returned twice",
				 (unsigned long long) (pair / m), (unsigned long long) (pair % m));
		return why;
	}
	bit_set(bits, pair);
	return NULL;
}

/*
 * Run a join to the end.  Pairs go into bits (n * m, must start zeroed);
 * returns a description of the first contract violation, or NULL.
 */
static const char *
run_join(const Engine *eng, const Side *ls, const Side *rs, const TNode *cond,
		 SjThetaStrategy strat, const SjJoinOptions *opt, uint8_t *bits,
		 Got *got)
{
	return run_batches(eng, ls, rs, cond, strat, opt, 60, bits_sink, bits, got);
}

/* First pair in which two bit sets differ, written to why; 0 if equal. */
static int
bits_differ(const uint8_t *a, const uint8_t *b, uint32_t n, uint32_t m,
			char *why, size_t len)
{
	uint64_t	k,
				nb = (uint64_t) n * m,
				byte;

	for (byte = 0; byte < (nb + 7) / 8; byte++)
	{
		if (a[byte] == b[byte])
			continue;
		for (k = byte * 8; k < byte * 8 + 8 && k < nb; k++)
			if (bit_get(a, k) != bit_get(b, k))
			{
				snprintf(why, len, "pair (%llu, %llu) %s by the engine",
						 (unsigned long long) (k / m), (unsigned long long) (k % m),
						 bit_get(a, k) ? "missed" : "invented");
				return 1;
			}
	}
	return 0;
}

/*
 * Check one engine run against the oracle's truth.  Returns NULL when the
 * run is right, else a description.  strat NESTED_LOOP must err exactly when
 * the oracle does.
 */
static const char *
check_case(const Engine *eng, const Side *ls, const Side *rs, const TNode *cond,
		   SjThetaStrategy strat, int count_only, size_t max_batch,
		   const Truth *truth, int *skipped)
{
	static char why[1024];
	SjJoinOptions opt;
	uint8_t    *bits = calloc(((uint64_t) ls->n * rs->n + 8) / 8, 1);
	Got			got;
	const char *bad;

	*skipped = 0;
	memset(&opt, 0, sizeof(opt));
	opt.count_only = count_only;
	opt.cpu_threads = 4;
	opt.max_batch_pairs = max_batch;
	opt.gpu_memory_limit = 0;
	bad = run_join(eng, ls, rs, cond, strat, &opt, bits, &got);
	if (bad)
	{
		free(bits);
		return bad;
	}
	if (got.status == SJ_ERR_INVALID && strat != SJ_THETA_AUTO &&
		strat != SJ_THETA_NESTED_LOOP)
	{
		/* the forced strategy does not apply to this condition */
		free(bits);
		*skipped = 1;
		return NULL;
	}
	if (got.status == SJ_ERR_DATA)
	{
		int			code,
					ok = 0;

		for (code = 1; code <= 6; code++)
			if ((truth->errs >> code & 1) &&
				strcmp(got.msg, sj_theta_error_message((SjThetaDataError) code)) == 0)
				ok = 1;
		free(bits);
		if (!ok)
		{
			snprintf(why, sizeof(why), "%s: unexpected data error \"%s\" (oracle errors 0x%x)",
					 eng->name, got.msg, truth->errs);
			return why;
		}
		return NULL;
	}
	if (got.status != SJ_OK)
	{
		snprintf(why, sizeof(why), "%s: status %d: %s", eng->name, (int) got.status, got.msg);
		free(bits);
		return why;
	}
	if (strat == SJ_THETA_NESTED_LOOP && truth->errs)
	{
		snprintf(why, sizeof(why), "%s nested loop: no error, oracle errors 0x%x",
				 eng->name, truth->errs);
		free(bits);
		return why;
	}
	if (got.count != truth->count)
	{
		snprintf(why, sizeof(why), "%s [%s]: %llu pairs, oracle %llu", eng->name,
				 got.strategy, (unsigned long long) got.count,
				 (unsigned long long) truth->count);
		free(bits);
		return why;
	}
	if (!count_only && bits_differ(truth->bits, bits, ls->n, rs->n, why, sizeof(why)))
	{
		free(bits);
		return why;
	}
	free(bits);
	return NULL;
}

/* ------------------------------------------------------------------------
 * The condition catalogue
 * ------------------------------------------------------------------------ */

typedef struct Case
{
	const char *name;
	TNode	   *cond;
} Case;

#define MAX_CASES 64

/* Build every test condition (fresh nodes). */
static int
make_cases(Case *c)
{
	int			n = 0;

	tn_used = 0;
	c[n].name = "equi int";
	c[n++].cond = EQI(L(0), R(0));
	c[n].name = "equi float (NaN = NaN, -0 = 0)";
	c[n++].cond = EQF(R(3), L(3));
	c[n].name = "equi + residual";
	c[n++].cond = AND(EQI(L(0), R(0)), LTF(L(2), R(2)));
	c[n].name = "two keys";
	c[n++].cond = AND(EQI(L(0), R(0)), EQI(R(4), L(4)));
	c[n].name = "band int BETWEEN offsets";
	c[n++].cond = AND(GEI(R(4), SUBI(64, L(4), CI(5))), LEI(R(4), ADDI(64, L(4), CI(5))));
	c[n].name = "band float BETWEEN offsets";
	c[n++].cond = AND(GEF(R(2), SUBF(64, L(2), CF(0.5))), LEF(R(2), ADDF(64, L(2), CF(0.5))));
	c[n].name = "band int r - l BETWEEN";
	c[n++].cond = AND(GEI(SUBI(64, R(4), L(4)), CI(-3)), LEI(SUBI(64, R(4), L(4)), CI(3)));
	c[n].name = "band float r - l";
	c[n++].cond = AND(LEF(SUBF(64, R(2), L(2)), CF(1.0)), GEF(SUBF(64, R(2), L(2)), CF(-1.0)));
	c[n].name = "band float4 r + l";
	c[n++].cond = LTF(ADDF(32, R(2), L(2)), CF(0.75));
	c[n].name = "int l - r < 2";
	c[n++].cond = LTI(SUBI(64, L(4), R(4)), CI(2));
	c[n].name = "inequality l.a < r.b";
	c[n++].cond = LTI(L(1), R(1));
	c[n].name = "inequality float (NaN greatest)";
	c[n++].cond = GTF(L(2), R(2));
	c[n].name = "l.a >= r.a float keys";
	c[n++].cond = GEF(L(3), R(3));
	c[n].name = "<>";
	c[n++].cond = NEI(L(0), R(0));
	c[n].name = "<> float keys";
	c[n++].cond = NEF(L(3), R(3));
	c[n].name = "OR across sides";
	c[n++].cond = OR(EQI(L(0), R(0)), GTF(L(2), R(2)));
	c[n].name = "arithmetic mixing sides";
	c[n++].cond = GTI(ADDI(64, MULI(64, L(4), R(4)), L(0)), MULI(64, R(0), CI(3)));
	c[n].name = "NOT / IS NULL";
	c[n++].cond = OR(NOT(EQI(L(0), R(0))), ISNULL(R(2)));
	c[n].name = "IS NOT NULL + range";
	c[n++].cond = AND(ISNOTNULL(L(1)), LEI(L(4), R(4)));
	c[n].name = "float arithmetic, division";
	c[n++].cond = GTF(DIVF(64, ADDF(64, L(2), CF(1.0)), R(2)), CF(0.0));
	c[n].name = "float4 multiply";
	c[n++].cond = LTF(MULF(32, L(2), R(2)), CF(10.0));
	c[n].name = "int4 overflow";
	c[n++].cond = GTI(ADDI(32, L(4), R(4)), CI(0));
	c[n].name = "int2 negation";
	c[n++].cond = LTI(NEGI(16, L(4)), R(4));
	c[n].name = "bigint multiply overflow";
	c[n++].cond = GTI(MULI(64, L(1), R(4)), CI(0));
	c[n].name = "division by zero";
	c[n++].cond = GTI(DIVI(64, L(4), R(4)), CI(1));
	c[n].name = "guarded division (short circuit)";
	c[n++].cond = AND(NEI(R(4), CI(0)), GTI(DIVI(64, L(4), R(4)), CI(1)));
	c[n].name = "modulo";
	c[n++].cond = EQI(MODI(64, L(0), ADDI(64, R(4), CI(31))), CI(1));
	c[n].name = "int -> float";
	c[n++].cond = LTF(I2F(64, L(4)), R(2));
	c[n].name = "range bound overflow (l.k + 5 near max)";
	c[n++].cond = AND(GEI(R(1), SUBI(64, L(1), CI(5))), LEI(R(1), ADDI(64, L(1), CI(5))));
	c[n].name = "bound evaluated first overflows";
	c[n++].cond = AND(LEI(R(1), ADDI(64, L(1), CI(5))), GEI(R(1), SUBI(64, L(1), CI(5))));
	c[n].name = "constant true (cross join)";
	c[n++].cond = CB(1);
	c[n].name = "one-side filter r.b > 3";
	c[n++].cond = GTI(R(4), CI(3));
	c[n].name = "NULL constant";
	c[n++].cond = OR(EQI(L(0), CNULL(SJ_TI64)), LEI(L(0), R(0)));
	c[n].name = "equi on expression";
	c[n++].cond = EQI(ADDI(64, L(0), CI(1)), R(0));
	c[n].name = "neg float";
	c[n++].cond = LTF(NEGF(L(2)), R(3));
	c[n].name = "int4 from int2 wrap";
	c[n++].cond = AND(EQI(L(0), R(0)), GEI(MULI(16, L(4), CI(1000)), R(4)));
	return n;
}

static const char *
strat_name(SjThetaStrategy s)
{
	return s == SJ_THETA_AUTO ? "auto" : s == SJ_THETA_HASH ? "hash" :
		s == SJ_THETA_RANGE ? "range" : "nested-loop";
}

/*
 * Run every condition over one pair of shapes with every strategy and mode
 * on the given engine.  Returns a failure description or NULL.
 */
static const char *
run_catalogue(const Engine *eng, const char *label, const Shape *lsh,
			  const Shape *rsh, Rng *rng, int *ran)
{
	static char why[2048];
	Side		ls,
				rs;
	Case		cases[MAX_CASES];
	int			nc = make_cases(cases),
				c;
	static const SjThetaStrategy strats[] = {SJ_THETA_AUTO, SJ_THETA_NESTED_LOOP,
	SJ_THETA_HASH, SJ_THETA_RANGE};

	side_make(&ls, lsh, rng);
	side_make(&rs, rsh, rng);
	for (c = 0; c < nc; c++)
	{
		Truth		t;
		int			s,
					mode;

		oracle(cases[c].cond, &ls, &rs, &t);
		for (s = 0; s < 4; s++)
			for (mode = 0; mode < 2; mode++)
			{
				size_t		mb = rng_below(rng, 3) == 0 ? 0 : 1 + rng_below(rng, 300);
				int			skipped;
				const char *bad = check_case(eng, &ls, &rs, cases[c].cond, strats[s],
											 mode, mb, &t, &skipped);

				if (bad)
				{
					snprintf(why, sizeof(why), "%s, %u x %u, \"%s\", %s, %s, batch %zu: %s",
							 label, ls.n, rs.n, cases[c].name, strat_name(strats[s]),
							 mode ? "count" : "pairs", mb, bad);
					return case_end(&t, &ls, &rs, why);
				}
				*ran += !skipped;
			}
		truth_free(&t);
	}
	return case_end(NULL, &ls, &rs, NULL);
}

/* The shapes every engine is tested on. */
static const char *
run_shapes(const Engine *eng, const char *test, int *ran)
{
	Rng			rng = rng_for(test);
	const char *bad;
	int			round;
	Shape		a,
				b;

	/* empty and single-row sides */
	memset(&a, 0, sizeof(a));
	a.keys = 5;
	a.wide = 100;
	a.nullp = 0.1;
	b = a;
	a.n = 0;
	b.n = 17;
	if ((bad = run_catalogue(eng, "empty left", &a, &b, &rng, ran)))
		return bad;
	a.n = 23;
	b.n = 0;
	if ((bad = run_catalogue(eng, "empty right", &a, &b, &rng, ran)))
		return bad;
	a.n = 1;
	b.n = 1;
	if ((bad = run_catalogue(eng, "1 x 1", &a, &b, &rng, ran)))
		return bad;
	a.n = 1;
	b.n = 300;
	if ((bad = run_catalogue(eng, "1 x 300", &a, &b, &rng, ran)))
		return bad;

	for (round = 0; round < 8; round++)
	{
		char		label[128];

		memset(&a, 0, sizeof(a));
		a.n = 50 + (uint32_t) rng_below(&rng, 250);
		a.keys = round % 4 == 0 ? 3 : round % 4 == 1 ? 40 : 1 + (int64_t) rng_below(&rng, 400);
		a.nullp = round % 4 == 2 ? 0.0 : 0.02 + 0.2 * rng_unit(&rng);
		a.extremep = round % 4 == 3 ? 0.2 : 0.01;
		a.zerop = 0.1;
		a.wide = round % 4 == 1 ? 50 : 1000000;
		b = a;
		b.n = 50 + (uint32_t) rng_below(&rng, 250);
		if (round % 4 == 3)
			b.keys = 2;			/* skew: few keys on one side */
		snprintf(label, sizeof(label), "round %d", round);
		if ((bad = run_catalogue(eng, label, &a, &b, &rng, ran)))
			return bad;
	}
	return NULL;
}

SJ_TEST(theta_cpu_validate)
{
	SjThetaColumn ci = {SJ_TI64, NULL, NULL},
				cf = {SJ_TF64, NULL, NULL};
	int64_t		iv[1] = {1};
	double		fv[1] = {1.0};
	SjThetaColumn cols[2];
	SjThetaTable t = {1, 2, cols};
	char		msg[SJ_ERRMSG_LEN];
	SjThetaInstr p[8];
	SjThetaProgram pr = {0, p};
	SjThetaPlan plan;

	ci.values = iv;
	cf.values = fv;
	cols[0] = ci;
	cols[1] = cf;
	memset(p, 0, sizeof(p));

	/* stack underflow */
	p[0].op = SJ_OP_LOAD_L;
	p[1].op = SJ_OP_AND;
	pr.ninstr = 2;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "underflow accepted");
	/* type mismatch: int = float */
	p[0].op = SJ_OP_LOAD_L;
	p[0].arg = 0;
	p[1].op = SJ_OP_LOAD_R;
	p[1].arg = 1;
	p[2].op = SJ_OP_EQ_I;
	pr.ninstr = 3;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "int = float accepted");
	p[1].arg = 0;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_OK, "l.0 = r.0 rejected: %s", msg);
	SJ_CHECK(sj_theta_plan(&pr, &t, &t, SJ_THETA_AUTO, &plan, msg) == SJ_OK &&
			 plan.strategy == SJ_THETA_HASH && plan.exact, "plan of equi is not exact hash");
	/* bad column */
	p[1].arg = 2;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "column 2 accepted");
	p[1].arg = 0;
	/* result not bool */
	pr.ninstr = 1;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "int result accepted");
	/* leftover values */
	pr.ninstr = 2;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "two results accepted");
	/* unknown opcode, bad width */
	p[2].op = 99;
	pr.ninstr = 3;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "opcode 99 accepted");
	p[2].op = SJ_OP_ADD_I;
	p[2].arg = 8;
	SJ_CHECK(sj_theta_validate(&pr, &t, &t, msg) == SJ_ERR_INVALID, "width 8 accepted");
	/* too deep */
	{
		SjThetaInstr deep[2 * SJ_THETA_MAX_STACK + 2];
		SjThetaProgram dp = {0, deep};
		int			k;

		memset(deep, 0, sizeof(deep));
		for (k = 0; k <= SJ_THETA_MAX_STACK; k++)
		{
			deep[k].op = SJ_OP_CONST_B;
			deep[k].ival = 1;
		}
		for (; k < 2 * SJ_THETA_MAX_STACK + 1; k++)
			deep[k].op = SJ_OP_AND;
		dp.ninstr = k;
		SJ_CHECK(sj_theta_validate(&dp, &t, &t, msg) == SJ_ERR_INVALID, "stack overflow accepted");
		dp.ninstr = 0;
		SJ_CHECK(sj_theta_validate(&dp, &t, &t, msg) == SJ_ERR_INVALID, "empty program accepted");
	}
	/* forced strategy that does not apply */
	tn_used = 0;
	{
		TNode	   *c = NEI(L(0), R(0));
		SjThetaProgram q;

		q.ninstr = tn_emit(c, p, 0);
		q.instr = p;
		SJ_CHECK(sj_theta_plan(&q, &t, &t, SJ_THETA_HASH, &plan, msg) == SJ_ERR_INVALID,
				 "hash forced on <>");
		SJ_CHECK(sj_theta_plan(&q, &t, &t, SJ_THETA_AUTO, &plan, msg) == SJ_OK &&
				 plan.strategy == SJ_THETA_NESTED_LOOP, "<> is not a nested loop");
	}
	/* the plans of typical conditions */
	{
		TNode	   *c = AND(GEI(R(0), SUBI(64, L(0), CI(5))), LEI(R(0), ADDI(64, L(0), CI(5))));
		SjThetaProgram q;

		q.ninstr = tn_emit(c, p, 0);
		q.instr = p;
		SJ_CHECK(sj_theta_plan(&q, &t, &t, SJ_THETA_AUTO, &plan, msg) == SJ_OK &&
				 plan.strategy == SJ_THETA_RANGE && plan.exact && plan.nterms == 2 &&
				 plan.probe_left, "band is not an exact two-term range on the right");
	}
	SJ_CHECK(strcmp(sj_theta_error_message(SJ_THETA_ERR_BIGINT_RANGE), "bigint out of range") == 0,
			 "message");
	sj_theta_cpu_end(NULL);
}

SJ_TEST(theta_cpu_oracle)
{
	int			ran = 0;
	const char *bad = run_shapes(&cpu_engine, "theta_cpu_oracle", &ran);

	SJ_CHECK(bad == NULL, "%s", bad);
	SJ_CHECK(ran > 1000, "only %d runs", ran);
}

/* Equal keys on both sides: n * m pairs over many small batches. */
static const char *
all_equal(const Engine *eng, uint32_t n, uint32_t m, size_t batch, int nthreads)
{
	static char why[512];
	Shape		sh;
	Side		ls,
				rs;
	Rng			rng = rng_for("all_equal");
	SjJoinOptions opt;
	uint8_t    *bits;
	Got			got;
	const char *bad;
	uint64_t	k;
	int			mode;

	memset(&sh, 0, sizeof(sh));
	sh.keys = 1;
	sh.wide = 10;
	sh.n = n;
	side_make(&ls, &sh, &rng);
	sh.n = m;
	side_make(&rs, &sh, &rng);
	tn_used = 0;
	for (mode = 0; mode < 2; mode++)
	{
		memset(&opt, 0, sizeof(opt));
		opt.cpu_threads = nthreads;
		opt.max_batch_pairs = batch;
		opt.count_only = mode;
		bits = calloc(((uint64_t) n * m + 8) / 8, 1);
		bad = run_join(eng, &ls, &rs, EQI(L(0), R(0)), SJ_THETA_AUTO, &opt, bits, &got);
		if (!bad && got.status != SJ_OK)
		{
			snprintf(why, sizeof(why), "status %d: %.200s", (int) got.status, got.msg);
			bad = why;
		}
		if (!bad && got.count != (uint64_t) n * m)
		{
			snprintf(why, sizeof(why), "%llu pairs, expected %llu",
					 (unsigned long long) got.count, (unsigned long long) n * m);
			bad = why;
		}
		if (!bad && !mode)
		{
			for (k = 0; k < (uint64_t) n * m; k++)
				if ((k & 7) == 0 && k + 8 <= (uint64_t) n * m && bits[k >> 3] == 0xff)
					k += 7;
				else if (!bit_get(bits, k))
				{
					bad = "a pair is missing";
					break;
				}
			if (!bad && got.batches < (uint64_t) n * m / batch)
				bad = "too few batches";
		}
		free(bits);
		if (bad)
			break;
	}
	side_free(&ls);
	side_free(&rs);
	return bad;
}

/* Every shape and condition, probing an index that another join built. */
SJ_TEST(theta_cpu_shared_index)
{
	int			ran = 0;
	const char *bad;

	shared_used = 0;
	bad = run_shapes(&shared_engine, "theta_cpu_shared_index", &ran);
	SJ_CHECK(bad == NULL, "%s", bad);
	SJ_CHECK(ran > 1000 && shared_used > ran / 3, "only %d runs, %d shared", ran, shared_used);
}

/* A shared index fits only the plan and the right side it was built for. */
SJ_TEST(theta_cpu_shared_index_refused)
{
	int64_t		lv[4] = {1, 2, 3, 4},
				rv[3] = {2, 3, 9};
	SjThetaColumn lc = {SJ_TI64, lv, NULL},
				rc = {SJ_TI64, rv, NULL};
	SjThetaTable lt = {4, 1, &lc},
				rt = {3, 1, &rc},
				rt2 = {2, 1, &rc};
	SjThetaInstr eq[3] = {{SJ_OP_LOAD_L, 0}, {SJ_OP_LOAD_R, 0}, {SJ_OP_EQ_I, 0}};
	SjThetaInstr lt_[3] = {{SJ_OP_LOAD_L, 0}, {SJ_OP_LOAD_R, 0}, {SJ_OP_LT_I, 0}};
	SjThetaProgram pe = {3, eq},
				pl = {3, lt_};
	SjJoinOptions o;
	SjThetaJoin *b = NULL,
			   *j = NULL;
	SjPairBatch batch;
	char		msg[SJ_ERRMSG_LEN];
	void	   *index;
	size_t		size;
	int			done = 0;

	memset(&o, 0, sizeof(o));
	o.cpu_threads = 2;
	o.index_right = 1;
	SJ_CHECK(sj_theta_cpu_begin(&lt, &rt, &pe, SJ_THETA_AUTO, &o, &b, msg) == SJ_OK, "%s", msg);
	size = sj_theta_cpu_index_size(b);
	SJ_CHECK(size > 0, "no index of the right side");
	index = malloc(size);
	sj_theta_cpu_index_write(b, index);
	sj_theta_cpu_end(b);

	o.index_right = 0;
	o.shared_index = index;
	/* another plan (range), another right side: refused */
	SJ_CHECK(sj_theta_cpu_begin(&lt, &rt, &pl, SJ_THETA_AUTO, &o, &j, msg) == SJ_ERR_INVALID,
			 "a range plan took a hash index");
	SJ_CHECK(sj_theta_cpu_begin(&lt, &rt2, &pe, SJ_THETA_AUTO, &o, &j, msg) == SJ_ERR_INVALID,
			 "a right side of 2 rows took an index of 3");
	/* the same: pairs (1, 0) and (2, 1), and nothing of the index to free */
	SJ_CHECK(sj_theta_cpu_begin(&lt, &rt, &pe, SJ_THETA_AUTO, &o, &j, msg) == SJ_OK, "%s", msg);
	SJ_CHECK(sj_theta_cpu_index_size(j) == 0, "an attached join offers its index again");
	SJ_CHECK(sj_theta_cpu_next(j, &batch, &done, msg) == SJ_OK, "%s", msg);
	while (!done && batch.count == 0)
		SJ_CHECK(sj_theta_cpu_next(j, &batch, &done, msg) == SJ_OK, "%s", msg);
	SJ_CHECK(batch.count == 2, "%zu pairs", batch.count);
	SJ_CHECK((batch.left[0] == 1 && batch.right[0] == 0 && batch.left[1] == 2 && batch.right[1] == 1) ||
			 (batch.left[0] == 2 && batch.right[0] == 1 && batch.left[1] == 1 && batch.right[1] == 0),
			 "wrong pairs");
	sj_theta_cpu_end(j);
	free(index);
}

SJ_TEST(theta_cpu_all_equal)
{
	const char *bad = all_equal(&cpu_engine, 3000, 2000, 65536, 4);

	SJ_CHECK(bad == NULL, "%s", bad);
}

/* Specific error semantics on hand-made rows. */
static const char *
errors_case(const Engine *eng)
{
	static char why[512];
	int64_t		lk[3] = {INT64_MAX - 2, 10, 20};
	int64_t		rk[4] = {5, 12, INT64_MAX, 0};
	SjThetaColumn lc = {SJ_TI64, lk, NULL},
				rc = {SJ_TI64, rk, NULL};
	SjThetaTable lt = {3, 1, &lc},
				rt = {4, 1, &rc};
	SjThetaInstr p[64];
	SjThetaProgram pr;
	SjJoinOptions opt;
	void	   *j = NULL;
	char		msg[SJ_ERRMSG_LEN];
	SjPairBatch b;
	int			done = 0;
	SjStatus	st;
	int			s;

	memset(&opt, 0, sizeof(opt));
	opt.cpu_threads = 2;
	for (s = 0; s < 2; s++)
	{
		SjThetaStrategy strat = s ? SJ_THETA_NESTED_LOOP : SJ_THETA_AUTO;

		/* r.k BETWEEN l.k - 5 AND l.k + 5: l.k + 5 overflows for row 0 */
		tn_used = 0;
		pr.ninstr = tn_emit(AND(GEI(R(0), SUBI(64, L(0), CI(5))),
								LEI(R(0), ADDI(64, L(0), CI(5)))), p, 0);
		pr.instr = p;
		st = eng->begin(&lt, &rt, &pr, strat, &opt, &j, msg);
		while (st == SJ_OK && !done)
			st = eng->next(j, &b, &done, msg);
		eng->end(j);
		j = NULL;
		done = 0;
		if (st != SJ_ERR_DATA || strcmp(msg, "bigint out of range") != 0)
		{
			snprintf(why, sizeof(why), "%s: overflowing bound gave %d \"%s\"",
					 strat_name(strat), (int) st, msg);
			return why;
		}
	}
	/* 1 / r.k with r.k = 0 */
	tn_used = 0;
	pr.ninstr = tn_emit(GTI(DIVI(64, L(0), R(0)), CI(0)), p, 0);
	st = eng->begin(&lt, &rt, &pr, SJ_THETA_AUTO, &opt, &j, msg);
	while (st == SJ_OK && !done)
		st = eng->next(j, &b, &done, msg);
	if (st != SJ_ERR_DATA || strcmp(msg, "division by zero") != 0 ||
		(eng == &cpu_engine && sj_theta_cpu_data_error(j) != SJ_THETA_ERR_DIVISION_BY_ZERO) ||
		(eng == &gpu_engine && sjgpu_theta_data_error(j) != SJ_THETA_ERR_DIVISION_BY_ZERO))
	{
		snprintf(why, sizeof(why), "division by zero gave %d \"%s\"", (int) st, msg);
		eng->end(j);
		return why;
	}
	/* a second next() repeats the error */
	st = eng->next(j, &b, &done, msg);
	eng->end(j);
	j = NULL;
	done = 0;
	if (st != SJ_ERR_DATA)
		return "error not repeated by the next call";
	/* guarded: no error, and the pairs */
	tn_used = 0;
	pr.ninstr = tn_emit(AND(NEI(R(0), CI(0)), GTI(DIVI(64, R(0), L(0)), CI(0))), p, 0);
	st = eng->begin(&lt, &rt, &pr, SJ_THETA_AUTO, &opt, &j, msg);
	{
		size_t		total = 0;

		while (st == SJ_OK && !done)
		{
			st = eng->next(j, &b, &done, msg);
			if (st == SJ_OK)
				total += b.count;
		}
		eng->end(j);
		j = NULL;
		done = 0;
		/* r/l > 0: (row0: r=INT64_MAX) (row1: 12, MAX) (row2: MAX) */
		if (st != SJ_OK || total != 4)
		{
			snprintf(why, sizeof(why), "guarded division gave %d \"%s\", %zu pairs",
					 (int) st, st ? msg : "", total);
			return why;
		}
	}
	/* float overflow and underflow */
	{
		double		lf[2] = {1e300, 1e-300};
		double		rf[1] = {1e10};
		SjThetaColumn lfc = {SJ_TF64, lf, NULL},
					rfc = {SJ_TF64, rf, NULL};
		SjThetaTable lft = {1, 1, &lfc},
					rft = {1, 1, &rfc};

		tn_used = 0;
		pr.ninstr = tn_emit(GTF(MULF(64, L(0), R(0)), CF(0)), p, 0);
		st = eng->begin(&lft, &rft, &pr, SJ_THETA_AUTO, &opt, &j, msg);
		while (st == SJ_OK && !done)
			st = eng->next(j, &b, &done, msg);
		eng->end(j);
		j = NULL;
		done = 0;
		if (st != SJ_ERR_DATA || strcmp(msg, "value out of range: overflow") != 0)
			return "float overflow not reported";
		lf[0] = 1e-300;
		rf[0] = 1e300;
		tn_used = 0;
		pr.ninstr = tn_emit(GTF(DIVF(64, L(0), R(0)), CF(0)), p, 0);
		st = eng->begin(&lft, &rft, &pr, SJ_THETA_AUTO, &opt, &j, msg);
		while (st == SJ_OK && !done)
			st = eng->next(j, &b, &done, msg);
		eng->end(j);
		j = NULL;
		done = 0;
		if (st != SJ_ERR_DATA || strcmp(msg, "value out of range: underflow") != 0)
			return "float underflow not reported";
	}
	return NULL;
}

SJ_TEST(theta_cpu_errors)
{
	const char *bad = errors_case(&cpu_engine);

	SJ_CHECK(bad == NULL, "%s", bad);
}

/*
 * Float bands at rounding boundaries: right values a few ulps around
 * fl(left + c), so that fl(r - l) == c while r - l != c and the like.
 */
static const char *
rounding_case(const Engine *eng, const char *test)
{
	static char why[1024];
	Rng			rng = rng_for(test);
	Shape		sh;
	Side		ls,
				rs;
	uint32_t	k;
	int			c,
				s;
	static const double cs[] = {1.0, 0x1p53, 0.1, 1e-3, 3.0e10};

	memset(&sh, 0, sizeof(sh));
	sh.keys = 3;
	sh.wide = 10;
	sh.n = 60;
	side_make(&ls, &sh, &rng);
	sh.n = 60 * 7;
	side_make(&rs, &sh, &rng);
	for (c = 0; c < 5; c++)
	{
		double		cc = cs[c];
		Case		cases[8];
		int			nc = 0,
					i;

		for (k = 0; k < ls.n; k++)
		{
			double		base = ldexp(1.0 + rng_unit(&rng), (int) rng_below(&rng, 120) - 60);

			if (k % 3 == 0)
				base = (float) base;
			ls.f[2][k] = k % 5 == 0 ? 1.0 : base;
		}
		for (k = 0; k < rs.n; k++)
		{
			double		v = ls.f[2][k / 7] + cc;
			int			steps = (int) (k % 7) - 3;

			while (steps > 0)
				v = nextafter(v, INFINITY), steps--;
			while (steps < 0)
				v = nextafter(v, -INFINITY), steps++;
			rs.f[2][k] = k % 11 == 0 ? (double) (float) v : v;
		}
		tn_used = 0;
		cases[nc].name = "r - l <= c";
		cases[nc++].cond = LEF(SUBF(64, R(2), L(2)), CF(cc));
		cases[nc].name = "r - l >= c";
		cases[nc++].cond = GEF(SUBF(64, R(2), L(2)), CF(cc));
		cases[nc].name = "r - l = c";
		cases[nc++].cond = EQF(SUBF(64, R(2), L(2)), CF(cc));
		cases[nc].name = "r + l < c + 2l";
		cases[nc++].cond = LTF(ADDF(64, R(2), L(2)), ADDF(64, CF(cc), MULF(64, L(2), CF(2.0))));
		cases[nc].name = "float4 r - l <= c";
		cases[nc++].cond = LEF(SUBF(32, R(2), L(2)), CF((float) cc));
		cases[nc].name = "float4 r - l > c";
		cases[nc++].cond = GTF(SUBF(32, R(2), L(2)), CF((float) cc));
		cases[nc].name = "r between l + c and l + c";
		cases[nc++].cond = AND(GEF(R(2), ADDF(64, L(2), CF(cc))), LEF(R(2), ADDF(64, L(2), CF(cc))));
		for (i = 0; i < nc; i++)
		{
			Truth		t;

			oracle(cases[i].cond, &ls, &rs, &t);
			for (s = 0; s < 4; s++)
			{
				static const SjThetaStrategy st[] = {SJ_THETA_AUTO, SJ_THETA_NESTED_LOOP,
				SJ_THETA_HASH, SJ_THETA_RANGE};
				int			skipped;
				const char *bad = check_case(eng, &ls, &rs, cases[i].cond, st[s], s & 1,
											 0, &t, &skipped);

				if (bad)
				{
					snprintf(why, sizeof(why), "c = %g, \"%s\", %s: %.600s", cc,
							 cases[i].name, strat_name(st[s]), bad);
					return case_end(&t, &ls, &rs, why);
				}
			}
			truth_free(&t);
		}
	}
	return case_end(NULL, &ls, &rs, NULL);
}

SJ_TEST(theta_cpu_float_rounding)
{
	const char *bad = rounding_case(&cpu_engine, "theta_cpu_float_rounding");

	SJ_CHECK(bad == NULL, "%s", bad);
}

/*
 * Numeric fixed point (sjnumeric.h): columns 1 and 4 hold numerics at scale
 * 3 with two decimals used (so that a product by a one-decimal constant is
 * exact, as the adapter's common scale guarantees), NaN and +-Infinity.
 */
static const char *
numeric_case(const Engine *eng, const char *test, int wide)
{
	static char why[1024];
	Rng			rng = rng_for(test);
	Shape		sh;
	Side		ls,
				rs;
	Side	   *sides[2] = {&ls, &rs};
	uint32_t	k;
	int			c,
				s,
				i;
	struct
	{
		const char *name;
		TNode	   *cond;
	}			cases[12];
	int			nc = 0;

	memset(&sh, 0, sizeof(sh));
	sh.keys = 20;
	sh.nullp = 0.05;
	sh.wide = 100;
	sh.n = 700;
	side_make(&ls, &sh, &rng);
	sh.n = 500;
	side_make(&rs, &sh, &rng);
	for (s = 0; s < 2; s++)
		for (c = 1; c <= 4; c += 3)
			for (k = 0; k < sides[s]->n; k++)
			{
				double		u = rng_unit(&rng);

				sides[s]->i[c][k] = u < 0.03 ? SJ_NUM_NAN : u < 0.05 ? SJ_NUM_PINF :
					u < 0.07 ? SJ_NUM_NINF :
					u < 0.08 ? (wide ? INT64_C(9999999999999) : SJ_NUM_LIMIT / 40 * 10) *
					(rng_below(&rng, 2) ? 1 : -1) :
					((int64_t) rng_below(&rng, 4001) - 2000) * 10;
			}
	tn_used = 0;
	cases[nc].name = "l >= r + 0.99";
	cases[nc++].cond = GEI(L(1), ADDN(R(1), CI(990)));
	cases[nc].name = "r between l - 0.5 and l + 0.5";
	cases[nc++].cond = AND(GEI(R(1), SUBN(L(1), CI(500))), LEI(R(1), ADDN(L(1), CI(500))));
	cases[nc].name = "r - l = 1";
	cases[nc++].cond = EQI(SUBN(R(4), L(4)), CI(1000));
	cases[nc].name = "l * 1.5 - r > 0.1";
	cases[nc++].cond = GTI(SUBN(MULN(L(1), 15, 1), R(4)), CI(100));
	cases[nc].name = "-l = r * -2 + l4";
	cases[nc++].cond = EQI(NEGN(L(1)), ADDN(MULN(R(1), -2, 0), L(4)));
	cases[nc].name = "l * 0 = r * 0";
	cases[nc++].cond = EQI(MULN(L(1), 0, 0), MULN(R(1), 0, 0));
	cases[nc].name = "l1 + l4 < r1 - r4";
	cases[nc++].cond = LTI(ADDN(L(1), L(4)), SUBN(R(1), R(4)));
	cases[nc].name = "l = r and l - r4 >= 0";
	cases[nc++].cond = AND(EQI(L(1), R(1)), GEI(SUBN(L(1), R(4)), CI(0)));
	cases[nc].name = "l + Infinity = r";
	cases[nc++].cond = EQI(ADDN(L(1), CI(SJ_NUM_PINF)), R(1));
	cases[nc].name = "l - r <= NaN and l0 = r0";
	cases[nc++].cond = AND(LEI(SUBN(L(1), R(1)), CI(SJ_NUM_NAN)), EQI(L(0), R(0)));
	if (wide)
	{
		/*
		 * Division runs wide, at scale 24 (the values are at scale 3, within
		 * 10^11): the engines' plumbing of 128-bit values through lanes, the
		 * device stack and every strategy.  The quotients themselves are
		 * checked against PostgreSQL by the SQL tests.
		 */
		nc = 0;
		cases[nc].name = "r >= l / 3";
		cases[nc++].cond = GEW(WIDEN(R(1), 21), DIVW(WIDEN(L(1), 21), 3, 0, 2, 24));
		cases[nc].name = "r between l / 1.5 - 0.5 and l / 1.5 + 0.5";
		cases[nc++].cond = AND(GEW(WIDEN(R(4), 21), SUBW(DIVW(WIDEN(L(1), 21), 15, 1, 2, 24),
														  WIDEN(CI(500), 21))),
							   LTW(WIDEN(R(4), 21), ADDW(DIVW(WIDEN(L(1), 21), 15, 1, 2, 24),
														 WIDEN(CI(500), 21))));
		cases[nc].name = "(l1 + l4) / 2 = (r1 + r4) / 2";
		cases[nc++].cond = EQW(DIVW(ADDW(WIDEN(L(1), 21), WIDEN(L(4), 21)), 2, 0, 2, 24),
							   DIVW(ADDW(WIDEN(R(1), 21), WIDEN(R(4), 21)), 2, 0, 2, 24));
		cases[nc].name = "l0 = r0 and l / 7 * 7 <> l4 - r4 / -0.7";
		cases[nc++].cond = AND(EQI(L(0), R(0)),
							   NEW(MULW(DIVW(WIDEN(L(1), 21), 7, 0, 2, 24), 7, 0),
								   SUBW(WIDEN(L(4), 21), DIVW(WIDEN(R(4), 21), -7, 1, 2, 24))));
		cases[nc].name = "-l / 7.000 < r";
		cases[nc++].cond = LTW(tn(SJ_OP_NEG_W, 0, DIVW(WIDEN(L(4), 21), 7000, 3, 2, 24), NULL),
							   WIDEN(R(1), 21));
	}
	for (i = 0; i < nc; i++)
	{
		Truth		t;

		oracle(cases[i].cond, &ls, &rs, &t);
		for (s = 0; s < 8; s++)
		{
			static const SjThetaStrategy st[] = {SJ_THETA_AUTO, SJ_THETA_NESTED_LOOP,
			SJ_THETA_HASH, SJ_THETA_RANGE};
			int			skipped;
			const char *bad;

			if (t.errs)
			{
				snprintf(why, sizeof(why), "\"%s\": the oracle saw an error", cases[i].name);
				return case_end(&t, &ls, &rs, why);
			}
			bad = check_case(eng, &ls, &rs, cases[i].cond, st[s % 4], s >= 4, s & 1 ? 97 : 0,
							 &t, &skipped);
			if (bad)
			{
				snprintf(why, sizeof(why), "\"%s\", %s: %.600s", cases[i].name,
						 strat_name(st[s % 4]), bad);
				return case_end(&t, &ls, &rs, why);
			}
		}
		truth_free(&t);
	}
	return case_end(NULL, &ls, &rs, NULL);
}

SJ_TEST(theta_cpu_numeric)
{
	const char *bad = numeric_case(&cpu_engine, "theta_cpu_numeric", 0);

	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_cpu_numeric_div)
{
	const char *bad = numeric_case(&cpu_engine, "theta_cpu_numeric_div", 1);

	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_numeric_div)
{
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = numeric_case(&gpu_engine, "theta_gpu_numeric_div", 1);
	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_numeric)
{
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = numeric_case(&gpu_engine, "theta_gpu_numeric", 0);
	SJ_CHECK(bad == NULL, "%s", bad);
}

/* A larger join than the oracle can check: strategies must agree. */
static const char *
cross_check(const Engine *a, const Engine *b, uint32_t n, uint32_t m,
			const TNode *cond, SjThetaStrategy sa, SjThetaStrategy sb,
			size_t memlimit, int count_only)
{
	static char why[512];
	Shape		sh;
	Side		ls,
				rs;
	Rng			rng = rng_for("cross_check");
	SjJoinOptions opt;
	uint8_t    *ba,
			   *bb;
	Got			ga,
				gb;
	const char *bad;

	memset(&sh, 0, sizeof(sh));
	sh.keys = n / 4 + 1;
	sh.nullp = 0.01;
	sh.wide = n;
	sh.zerop = 0.0;
	sh.n = n;
	side_make(&ls, &sh, &rng);
	sh.n = m;
	side_make(&rs, &sh, &rng);
	memset(&opt, 0, sizeof(opt));
	opt.cpu_threads = 4;
	opt.count_only = count_only;
	opt.max_batch_pairs = 100000;
	opt.gpu_memory_limit = memlimit;
	ba = calloc(((uint64_t) n * m + 8) / 8, 1);
	bb = calloc(((uint64_t) n * m + 8) / 8, 1);
	bad = run_join(a, &ls, &rs, cond, sa, &opt, ba, &ga);
	if (!bad)
		bad = run_join(b, &ls, &rs, cond, sb, &opt, bb, &gb);
	if (!bad && (ga.status != SJ_OK || gb.status != SJ_OK))
	{
		snprintf(why, sizeof(why), "status %d \"%.200s\" / %d \"%.200s\"", (int) ga.status, ga.msg,
				 (int) gb.status, gb.msg);
		bad = why;
	}
	if (!bad && ga.count != gb.count)
	{
		snprintf(why, sizeof(why), "%s [%s] %llu pairs, %s [%s] %llu", a->name, ga.strategy,
				 (unsigned long long) ga.count, b->name, gb.strategy,
				 (unsigned long long) gb.count);
		bad = why;
	}
	if (!bad && !count_only && bits_differ(ba, bb, n, m, why, sizeof(why)))
		bad = why;
	free(ba);
	free(bb);
	side_free(&ls);
	side_free(&rs);
	return bad;
}

SJ_TEST(theta_cpu_strategies_agree)
{
	const char *bad;

	tn_used = 0;
	bad = cross_check(&cpu_engine, &cpu_engine, 8000, 6000,
					  AND(GEI(R(1), SUBI(64, L(1), CI(50))), LEI(R(1), ADDI(64, L(1), CI(50)))),
					  SJ_THETA_RANGE, SJ_THETA_NESTED_LOOP, 0, 0);
	SJ_CHECK(bad == NULL, "band: %s", bad);
	bad = cross_check(&cpu_engine, &cpu_engine, 8000, 6000,
					  AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
					  SJ_THETA_HASH, SJ_THETA_RANGE, 0, 0);
	SJ_CHECK(bad == NULL, "equi: %s", bad);
	bad = cross_check(&cpu_engine, &cpu_engine, 8000, 6000, LTI(L(1), R(1)),
					  SJ_THETA_RANGE, SJ_THETA_NESTED_LOOP, 0, 1);
	SJ_CHECK(bad == NULL, "inequality count: %s", bad);
}

/* ------------------------------------------------------------------------
 * Joins too large for a bit matrix: sorted pair lists
 * ------------------------------------------------------------------------ */

/* Pairs of one run, as left * m + right. */
typedef struct PairList
{
	uint64_t   *v;
	size_t		n;
	size_t		cap;
} PairList;

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* PairSink of a pair list. */
static const char *
list_sink(void *arg, uint64_t pair, uint32_t m)
{
	PairList   *list = (PairList *) arg;

	if (list->n == list->cap)
	{
		list->cap = list->cap ? list->cap * 2 : 1024;
		list->v = realloc(list->v, list->cap * sizeof(uint64_t));
	}
	list->v[list->n++] = pair;
	return NULL;
}

/*
 * Run a join to the end, appending its pairs to list (sorted at the end).
 * Returns a description of the first contract violation, or NULL.
 */
static const char *
run_list(const Engine *eng, const Side *ls, const Side *rs, const TNode *cond,
		 SjThetaStrategy strat, const SjJoinOptions *opt, PairList *list, Got *got)
{
	static char why[512];
	const char *bad;
	size_t		k;

	memset(list, 0, sizeof(*list));
	bad = run_batches(eng, ls, rs, cond, strat, opt, 120, list_sink, list, got);
	if (bad)
		return bad;
	if (list->n > 1)
		qsort(list->v, list->n, sizeof(uint64_t), cmp_u64);
	for (k = 1; k < list->n; k++)
		if (list->v[k] == list->v[k - 1])
		{
			snprintf(why, sizeof(why), "pair (%llu, %llu) returned twice",
					 (unsigned long long) (list->v[k] / rs->n),
					 (unsigned long long) (list->v[k] % rs->n));
			return why;
		}
	return NULL;
}

/*
 * Run engine a (the reference) and engine b on one join: the same status
 * (and message, for a data error), the same count, the same pairs.  b's
 * strategy text is copied to strategy.
 */
static const char *
list_check(const Engine *a, const Engine *b, const Side *ls, const Side *rs,
		   const TNode *cond, SjThetaStrategy sa, SjThetaStrategy sb,
		   const SjJoinOptions *opt, char *strategy, size_t len)
{
	static char why[1024];
	PairList	pa,
				pb;
	Got			ga,
				gb;
	const char *bad;
	size_t		k;

	bad = run_list(a, ls, rs, cond, sa, opt, &pa, &ga);
	if (!bad)
		bad = run_list(b, ls, rs, cond, sb, opt, &pb, &gb);
	else
		memset(&pb, 0, sizeof(pb));
	if (!bad)
		snprintf(strategy, len, "%s", gb.strategy);
	if (!bad && (ga.status != gb.status ||
				 (ga.status == SJ_ERR_DATA && strcmp(ga.msg, gb.msg) != 0) ||
				 (ga.status != SJ_OK && ga.status != SJ_ERR_DATA)))
	{
		snprintf(why, sizeof(why), "status %d \"%.200s\" / %d \"%.200s\"", (int) ga.status,
				 ga.msg, (int) gb.status, gb.msg);
		bad = why;
	}
	if (!bad && ga.status == SJ_OK && ga.count != gb.count)
	{
		snprintf(why, sizeof(why), "%s [%s] %llu pairs, %s [%s] %llu", a->name, ga.strategy,
				 (unsigned long long) ga.count, b->name, gb.strategy,
				 (unsigned long long) gb.count);
		bad = why;
	}
	for (k = 0; !bad && ga.status == SJ_OK && !opt->count_only && k < pa.n; k++)
		if (pa.v[k] != pb.v[k])
		{
			uint64_t	x = pa.v[k] < pb.v[k] ? pa.v[k] : pb.v[k];

			snprintf(why, sizeof(why), "pair (%llu, %llu) %s by %s [%s]",
					 (unsigned long long) (x / rs->n), (unsigned long long) (x % rs->n),
					 x == pa.v[k] ? "missed" : "invented", b->name, gb.strategy);
			bad = why;
		}
	free(pa.v);
	free(pb.v);
	return bad;
}

/*
 * Sides for the large joins: left n rows, right m rows, keys (column 0)
 * uniform over `keys` values; then a fraction hot_l / hot_r of the rows
 * gets the one key 7 (skew).  NULLs in every column with probability nullp.
 */
static void
large_sides(Side *ls, Side *rs, uint32_t n, uint32_t m, int64_t keys, double nullp,
			double hot_l, double hot_r, Rng *rng)
{
	Shape		sh;
	uint32_t	k;

	memset(&sh, 0, sizeof(sh));
	sh.keys = keys;
	sh.nullp = nullp;
	sh.wide = n;
	sh.zerop = 0.05;
	sh.n = n;
	side_make(ls, &sh, rng);
	sh.n = m;
	side_make(rs, &sh, rng);
	for (k = 0; k < n; k++)
		if (rng_unit(rng) < hot_l)
			ls->i[0][k] = 7;
	for (k = 0; k < m; k++)
		if (rng_unit(rng) < hot_r)
			rs->i[0][k] = 7;
}

/* The CPU engine's hash and range joins agree on a large equi-join. */
SJ_TEST(theta_cpu_large_lists)
{
	Rng			rng = rng_for("theta_cpu_large_lists");
	Side		ls,
				rs;
	SjJoinOptions opt;
	char		strategy[64];
	const char *bad;

	large_sides(&ls, &rs, 100000, 150000, 50000, 0.05, 0.0, 0.0, &rng);
	memset(&opt, 0, sizeof(opt));
	opt.cpu_threads = 2;
	opt.max_batch_pairs = 5000;
	tn_used = 0;
	bad = list_check(&cpu_engine, &cpu_engine, &ls, &rs, EQI(L(0), R(0)), SJ_THETA_HASH,
					 SJ_THETA_RANGE, &opt, strategy, sizeof(strategy));
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);
	SJ_CHECK(strcmp(strategy, "range") == 0, "strategy \"%s\"", strategy);
}

/* ------------------------------------------------------------------------
 * GPU
 * ------------------------------------------------------------------------ */

SJ_TEST(theta_gpu_oracle)
{
	int			ran = 0;
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = run_shapes(&gpu_engine, "theta_gpu_oracle", &ran);
	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_float_rounding)
{
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = rounding_case(&gpu_engine, "theta_gpu_float_rounding");
	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_all_equal)
{
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = all_equal(&gpu_engine, 3000, 2000, 65536, 4);
	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_errors)
{
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	bad = errors_case(&gpu_engine);
	SJ_CHECK(bad == NULL, "%s", bad);
}

SJ_TEST(theta_gpu_vs_cpu)
{
	const char *bad;
	int			mode;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	for (mode = 0; mode < 2; mode++)
	{
		size_t		lim = mode ? 0 : (size_t) 4 << 20;	/* force outer batches */

		tn_used = 0;
		bad = cross_check(&cpu_engine, &gpu_engine, 40000, 30000,
						  AND(GEI(R(1), SUBI(64, L(1), CI(20))), LEI(R(1), ADDI(64, L(1), CI(20)))),
						  SJ_THETA_AUTO, SJ_THETA_AUTO, lim, mode);
		SJ_CHECK(bad == NULL, "band: %s", bad);
		bad = cross_check(&cpu_engine, &gpu_engine, 40000, 30000,
						  AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
						  SJ_THETA_AUTO, SJ_THETA_AUTO, lim, mode);
		SJ_CHECK(bad == NULL, "equi + residual: %s", bad);
		bad = cross_check(&cpu_engine, &gpu_engine, 40000, 30000,
						  AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
						  SJ_THETA_HASH, SJ_THETA_NESTED_LOOP, lim, mode);
		SJ_CHECK(bad == NULL, "equi + residual, gpu nested loop: %s", bad);
		bad = cross_check(&cpu_engine, &gpu_engine, 20000, 30000,
						  OR(EQI(L(0), R(0)), GTF(ADDF(64, L(2), CF(60.0)), R(2))),
						  SJ_THETA_AUTO, SJ_THETA_AUTO, lim, mode);
		SJ_CHECK(bad == NULL, "OR: %s", bad);
		bad = cross_check(&cpu_engine, &gpu_engine, 40000, 30000,
						  AND(LEF(SUBF(64, R(2), L(2)), CF(1.0)), GEF(SUBF(64, R(2), L(2)), CF(-1.0))),
						  SJ_THETA_AUTO, SJ_THETA_AUTO, lim, mode);
		SJ_CHECK(bad == NULL, "float band: %s", bad);
	}
}

/*
 * Nested loop whose selectivity grows along the outer side, under a small
 * memory limit: rectangles sized from the first rows overflow the output
 * buffer and must be re-run, with no pair lost or repeated.
 */
SJ_TEST(theta_gpu_nl_rerun)
{
	uint32_t	n = 6000,
				m = 3000,
				k;
	int64_t    *lv = malloc(n * sizeof(int64_t)),
			   *rv = malloc(m * sizeof(int64_t));
	SjThetaColumn lc = {SJ_TI64, lv, NULL},
				rc = {SJ_TI64, rv, NULL};
	Side		ls,
				rs;
	Rng			rng = rng_for("theta_gpu_nl_rerun");
	SjJoinOptions opt;
	SjThetaInstr prog[8];
	SjThetaProgram p;
	SjGpuThetaJoin *j = NULL;
	char		msg[SJ_ERRMSG_LEN];
	uint8_t    *bits;
	uint64_t	count = 0,
				expect = 0;
	SjTimings	tm;
	int			done = 0;
	SjStatus	st;

	if (!sj_test_gpu_usable())
	{
		free(lv);
		free(rv);
		sj_test_skip("no usable GPU");
		return;
	}
	for (k = 0; k < n; k++)
		lv[k] = k;
	for (k = 0; k < m; k++)
		rv[k] = (int64_t) rng_below(&rng, n);
	memset(&ls, 0, sizeof(ls));
	memset(&rs, 0, sizeof(rs));
	ls.t.n = n;
	ls.t.ncols = 1;
	ls.t.cols = &lc;
	rs.t.n = m;
	rs.t.ncols = 1;
	rs.t.cols = &rc;
	for (k = 0; k < m; k++)
		expect += n - 1 - (uint64_t) rv[k];
	tn_used = 0;
	p.ninstr = tn_emit(GTI(L(0), R(0)), prog, 0);
	p.instr = prog;
	memset(&opt, 0, sizeof(opt));
	opt.max_batch_pairs = 1 << 20;
	opt.gpu_memory_limit = (size_t) 3 << 20;
	bits = calloc((uint64_t) n * m / 8 + 1, 1);
	st = sjgpu_theta_begin(&ls.t, &rs.t, &p, SJ_THETA_NESTED_LOOP, &opt, &j, msg);
	while (st == SJ_OK && !done)
	{
		SjPairBatch b;
		size_t		i;

		st = sjgpu_theta_next(j, &b, &done, msg);
		for (i = 0; st == SJ_OK && i < b.count; i++)
		{
			uint64_t	bit = (uint64_t) b.left[i] * m + b.right[i];

			if (bit_get(bits, bit) || lv[b.left[i]] <= rv[b.right[i]])
				st = SJ_ERR_INTERNAL;
			bit_set(bits, bit);
		}
		if (st == SJ_OK)
			count += b.count;
	}
	sjgpu_theta_timings(j, &tm);
	sjgpu_theta_end(j);
	free(bits);
	free(lv);
	free(rv);
	SJ_CHECK(st == SJ_OK, "status %d: %s", (int) st, msg);
	SJ_CHECK(count == expect, "%llu pairs, expected %llu", (unsigned long long) count,
			 (unsigned long long) expect);
	SJ_CHECK(tm.reruns > 0, "no rectangle was re-run (%llu batches)",
			 (unsigned long long) tm.batches);
}

/*
 * An inner side larger than the memory limit: partitioned hash joins (and
 * range and nested-loop joins in inner pieces) against the CPU engine,
 * pair for pair, in pairs and count form, over tiny batches.
 */
typedef struct BigCase
{
	const char *name;
	TNode	   *cond;
	SjThetaStrategy strat;		/* the GPU's (the CPU's is AUTO) */
	int			count_only;
	size_t		max_batch;
	size_t		memlimit;
	const char *expect;			/* in the GPU's strategy text (NULL: "=" below) */
	const char *equal;			/* the GPU's whole strategy text */
} BigCase;

static const char *
big_cases(const BigCase *cases, int ncases, const Side *ls, const Side *rs)
{
	static char why[1024];
	int			c;

	for (c = 0; c < ncases; c++)
	{
		const BigCase *bc = &cases[c];
		SjJoinOptions opt;
		char		strategy[64] = "";
		const char *bad;

		memset(&opt, 0, sizeof(opt));
		opt.cpu_threads = 4;
		opt.count_only = bc->count_only;
		opt.max_batch_pairs = bc->max_batch;
		opt.gpu_memory_limit = bc->memlimit;
		bad = list_check(&cpu_engine, &gpu_engine, ls, rs, bc->cond, SJ_THETA_AUTO, bc->strat,
						 &opt, strategy, sizeof(strategy));
		if (!bad && bc->expect && strstr(strategy, bc->expect) == NULL)
			bad = "the GPU's strategy text lacks the expected words";
		if (!bad && bc->equal && strcmp(strategy, bc->equal) != 0)
			bad = "the GPU's strategy text differs";
		if (bad)
		{
			snprintf(why, sizeof(why), "%s (%u x %u, %s, batch %zu, limit %zu, gpu \"%s\"): %s",
					 bc->name, ls->n, rs->n, bc->count_only ? "count" : "pairs",
					 bc->max_batch, bc->memlimit, strategy, bad);
			return why;
		}
	}
	return NULL;
}

SJ_TEST(theta_gpu_partitioned)
{
	Rng			rng = rng_for("theta_gpu_partitioned");
	const size_t mb4 = (size_t) 4 << 20;
	Side		ls,
				rs;
	const char *bad;
	int			nc;
	BigCase		cases[16];

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}

	/* uniform keys, no NULLs: a few hundred thousand pairs */
	large_sides(&ls, &rs, 200000, 300000, 100000, 0.0, 0.0, 0.0, &rng);
	tn_used = 0;
	nc = 0;
	cases[nc++] = (BigCase) {"uniform", EQI(L(0), R(0)), SJ_THETA_AUTO, 0, 100000, mb4,
	"hash (", NULL};
	cases[nc++] = (BigCase) {"uniform", EQI(L(0), R(0)), SJ_THETA_AUTO, 1, 0, mb4,
	"partitions", NULL};
	cases[nc++] = (BigCase) {"uniform, tiny batches", EQI(R(0), L(0)), SJ_THETA_AUTO, 0, 777,
	mb4, "partitions", NULL};
	cases[nc++] = (BigCase) {"uniform, whole", EQI(L(0), R(0)), SJ_THETA_AUTO, 0, 100000, 0,
	NULL, "hash"};
	cases[nc++] = (BigCase) {"uniform, whole", EQI(L(0), R(0)), SJ_THETA_AUTO, 1, 0, 0,
	NULL, "hash"};
	cases[nc++] = (BigCase) {"two keys, float (-0 = 0, NaN = NaN)",
		AND(EQI(L(0), R(0)), EQF(R(3), L(3))), SJ_THETA_AUTO, 0, 5000, mb4, "partitions", NULL};
	cases[nc++] = (BigCase) {"range in inner pieces",
		AND(GEI(R(1), SUBI(64, L(1), CI(3))), LEI(R(1), ADDI(64, L(1), CI(3)))),
	SJ_THETA_AUTO, 0, 100000, mb4, "range (", NULL};
	cases[nc++] = (BigCase) {"range in inner pieces",
		AND(GEI(R(1), SUBI(64, L(1), CI(3))), LEI(R(1), ADDI(64, L(1), CI(3)))),
	SJ_THETA_AUTO, 1, 0, mb4, "inner pieces", NULL};
	bad = big_cases(cases, nc, &ls, &rs);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);

	/* NULL keys and residuals (one that raises an error) */
	large_sides(&ls, &rs, 200000, 300000, 100000, 0.1, 0.0, 0.0, &rng);
	tn_used = 0;
	nc = 0;
	cases[nc++] = (BigCase) {"NULL keys, residual", AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
	SJ_THETA_AUTO, 0, 1000, mb4, "partitions", NULL};
	cases[nc++] = (BigCase) {"NULL keys, residual", AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
	SJ_THETA_AUTO, 1, 0, mb4, "partitions", NULL};
	cases[nc++] = (BigCase) {"NULL keys, exact", EQI(L(0), R(0)), SJ_THETA_AUTO, 1, 0, mb4,
	"partitions", NULL};
	cases[nc++] = (BigCase) {"guarded division",
		AND(EQI(L(0), R(0)), AND(NEI(R(4), CI(0)), GTI(DIVI(64, L(4), R(4)), CI(1)))),
	SJ_THETA_AUTO, 0, 3000, mb4, "partitions", NULL};
	cases[nc++] = (BigCase) {"division by zero (a data error)",
		AND(EQI(L(0), R(0)), GTI(DIVI(64, L(4), R(4)), CI(1))),
	SJ_THETA_AUTO, 0, 3000, mb4, NULL, NULL};
	bad = big_cases(cases, nc, &ls, &rs);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);

	/*
	 * Skew: key 7 in 30% of the build side's rows.  Pairs: the probe side
	 * has it in few rows; counts: in 30% too (billions of pairs, counted
	 * from group sizes).  Its partition is cut into pieces.
	 */
	large_sides(&ls, &rs, 200000, 300000, 100000, 0.02, 0.3, 0.0002, &rng);
	tn_used = 0;
	nc = 0;
	cases[nc++] = (BigCase) {"skew", EQI(L(0), R(0)), SJ_THETA_AUTO, 0, 100000, mb4,
	"passes", NULL};
	cases[nc++] = (BigCase) {"skew, residual", AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
	SJ_THETA_AUTO, 0, 4000, mb4, "passes", NULL};
	cases[nc++] = (BigCase) {"skew, residual", AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
	SJ_THETA_AUTO, 1, 0, mb4, "passes", NULL};
	bad = big_cases(cases, nc, &ls, &rs);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);

	large_sides(&ls, &rs, 200000, 300000, 100000, 0.0, 0.3, 0.3, &rng);
	tn_used = 0;
	nc = 0;
	cases[nc++] = (BigCase) {"skew both sides", EQI(L(0), R(0)), SJ_THETA_AUTO, 1, 0, mb4,
	"passes", NULL};
	bad = big_cases(cases, nc, &ls, &rs);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);

	/* nested loop in inner pieces: four columns a row of the inner (left) side */
	large_sides(&ls, &rs, 20000, 30000, 1000, 0.02, 0.0, 0.0, &rng);
	tn_used = 0;
	nc = 0;
	cases[nc++] = (BigCase) {"nested loop in inner pieces",
		AND(GTI(ADDI(64, R(4), L(4)), CI(57)), OR(ISNOTNULL(L(1)), LTF(L(2), L(3)))),
	SJ_THETA_NESTED_LOOP, 0, 2000, (size_t) 3 << 19, "nested-loop (", NULL};
	cases[nc++] = (BigCase) {"nested loop in inner pieces",
		AND(GTI(ADDI(64, R(4), L(4)), CI(57)), OR(ISNOTNULL(L(1)), LTF(L(2), L(3)))),
	SJ_THETA_NESTED_LOOP, 1, 0, (size_t) 3 << 19, "inner pieces", NULL};
	bad = big_cases(cases, nc, &ls, &rs);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(bad == NULL, "%s", bad);
}

/*
 * End a join while the window launched ahead of the caller may still run,
 * for each strategy; then a whole join on the same device must be right.
 */
SJ_TEST(theta_gpu_end_early)
{
	Rng			rng = rng_for("theta_gpu_end_early");
	Side		ls,
				rs;
	SjJoinOptions opt;
	SjThetaInstr prog[16];
	SjThetaProgram p;
	char		strategy[64];
	const char *bad = NULL;
	SjStatus	st = SJ_OK;
	char		msg[SJ_ERRMSG_LEN] = "";
	int			s;
	static const SjThetaStrategy strats[] = {SJ_THETA_HASH, SJ_THETA_RANGE,
	SJ_THETA_NESTED_LOOP};

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	large_sides(&ls, &rs, 20000, 30000, 10, 0.0, 0.0, 0.0, &rng);
	tn_used = 0;
	p.ninstr = tn_emit(EQI(L(0), R(0)), prog, 0);
	p.instr = prog;
	memset(&opt, 0, sizeof(opt));
	opt.max_batch_pairs = 1000;
	for (s = 0; s < 3 && st == SJ_OK; s++)
	{
		SjGpuThetaJoin *j = NULL;
		SjPairBatch b;
		int			done = 0,
					k;

		st = sjgpu_theta_begin(&ls.t, &rs.t, &p, strats[s], &opt, &j, msg);
		for (k = 0; k < 3 && st == SJ_OK && !done; k++)
			st = sjgpu_theta_next(j, &b, &done, msg);
		sjgpu_theta_end(j);
	}
	if (st == SJ_OK)
	{
		tn_used = 0;
		opt.max_batch_pairs = 100000;
		opt.cpu_threads = 4;
		bad = list_check(&cpu_engine, &gpu_engine, &ls, &rs,
						 AND(EQI(L(0), R(0)), LTI(ADDI(64, L(4), CI(50)), R(4))),
						 SJ_THETA_AUTO, SJ_THETA_AUTO,
						 &opt, strategy, sizeof(strategy));
	}
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(st == SJ_OK, "status %d: %s", (int) st, msg);
	SJ_CHECK(bad == NULL, "%s", bad);
}

/* A limit below the fixed reserve: SJ_ERR_DEVICE_NOMEM from begin, with a message. */
SJ_TEST(theta_gpu_partitioned_nomem)
{
	Rng			rng = rng_for("theta_gpu_partitioned_nomem");
	Side		ls,
				rs;
	SjJoinOptions opt;
	SjThetaInstr prog[8];
	SjThetaProgram p;
	SjGpuThetaJoin *j = NULL;
	char		msg[SJ_ERRMSG_LEN] = "";
	SjStatus	st;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	large_sides(&ls, &rs, 20000, 30000, 1000, 0.0, 0.0, 0.0, &rng);
	tn_used = 0;
	p.ninstr = tn_emit(EQI(L(0), R(0)), prog, 0);
	p.instr = prog;
	memset(&opt, 0, sizeof(opt));
	opt.gpu_memory_limit = (size_t) 1 << 19;
	st = sjgpu_theta_begin(&ls.t, &rs.t, &p, SJ_THETA_AUTO, &opt, &j, msg);
	sjgpu_theta_end(j);
	side_free(&ls);
	side_free(&rs);
	SJ_CHECK(st == SJ_ERR_DEVICE_NOMEM, "status %d: %s", (int) st, msg);
	SJ_CHECK(msg[0] != '\0', "no message");
}

/* ------------------------------------------------------------------------
 * Timing (SJ_THETA_BENCH=1)
 * ------------------------------------------------------------------------ */

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Median wall time of reps count-only runs (after one warm-up). */
static double
time_count(const Engine *eng, const SjThetaTable *l, const SjThetaTable *r,
		   const TNode *cond, SjThetaStrategy strat, int threads, int reps,
		   uint64_t *count, char *strategy)
{
	SjThetaInstr prog[SJ_THETA_MAX_INSTR];
	SjThetaProgram p;
	SjJoinOptions opt;
	double		t[16];
	int			k;

	p.ninstr = tn_emit(cond, prog, 0);
	p.instr = prog;
	memset(&opt, 0, sizeof(opt));
	opt.count_only = 1;
	opt.cpu_threads = threads;
	for (k = 0; k <= reps; k++)
	{
		void	   *j = NULL;
		char		msg[SJ_ERRMSG_LEN];
		SjPairBatch b;
		SjTimings	tm;
		int			done = 0;
		double		t0 = sj_now_ms();
		SjStatus	st = eng->begin(l, r, &p, strat, &opt, &j, msg);

		*count = 0;
		while (st == SJ_OK && !done)
		{
			st = eng->next(j, &b, &done, msg);
			*count += b.count;
		}
		eng->timings(j, &tm);
		eng->end(j);
		if (st != SJ_OK)
		{
			printf("  %s: error %d %s\n", eng->name, (int) st, msg);
			return -1;
		}
		snprintf(strategy, 64, "%s", tm.strategy);
		if (k > 0)
			t[k - 1] = sj_now_ms() - t0;
	}
	qsort(t, reps, sizeof(double), cmp_double);
	return t[reps / 2];
}

/* Int64 column of n rows, uniform in [0, domain). */
static int64_t *
bench_column(uint32_t n, uint64_t domain, Rng *rng)
{
	int64_t    *v = malloc((size_t) n * sizeof(int64_t));
	uint32_t	k;

	for (k = 0; k < n; k++)
		v[k] = (int64_t) rng_below(rng, domain);
	return v;
}

static void
bench_one(const char *what, uint32_t n, uint32_t m, uint64_t domain,
		  const TNode *cond, SjThetaStrategy strat, int cpu_ok, int reps)
{
	Rng			rng = rng_for(what);
	int64_t    *lv = bench_column(n, domain, &rng),
			   *rv = bench_column(m, domain, &rng);
	SjThetaColumn lc = {SJ_TI64, lv, NULL},
				rc = {SJ_TI64, rv, NULL};
	SjThetaTable lt = {n, 1, &lc},
				rt = {m, 1, &rc};
	uint64_t	cc = 0,
				gc = 0;
	char		cs[64] = "",
				gs[64] = "";
	double		tc = -1,
				tg = -1;

	if (cpu_ok)
		tc = time_count(&cpu_engine, &lt, &rt, cond, strat, 16, reps, &cc, cs);
	if (sj_test_gpu_usable())
		tg = time_count(&gpu_engine, &lt, &rt, cond, strat, 16, reps, &gc, gs);
	printf("  BENCH %-34s %8u x %-8u cpu(16t) %10.2f ms [%s] gpu %9.2f ms [%s] count %llu%s\n",
		   what, n, m, tc, cs, tg, gs, (unsigned long long) (cpu_ok ? cc : gc),
		   cpu_ok && sj_test_gpu_usable() && cc != gc ? "  MISMATCH" : "");
	fflush(stdout);
	free(lv);
	free(rv);
}

SJ_TEST(theta_timing)
{
	if (!getenv("SJ_THETA_BENCH"))
	{
		sj_test_skip("set SJ_THETA_BENCH=1");
		return;
	}
	tn_used = 0;
	bench_one("equi l.k = r.k", 10000000, 10000000, 10000000, EQI(L(0), R(0)),
			  SJ_THETA_AUTO, 1, 3);
	bench_one("band r.k between l.k-5, l.k+5", 1000000, 1000000, 1000000,
			  AND(GEI(R(0), SUBI(64, L(0), CI(5))), LEI(R(0), ADDI(64, L(0), CI(5)))),
			  SJ_THETA_AUTO, 1, 5);
	bench_one("l.a > r.a (range)", 500000, 50000, 1000000, GTI(L(0), R(0)),
			  SJ_THETA_AUTO, 1, 5);
	bench_one("l.a > r.a (nested loop)", 500000, 50000, 1000000, GTI(L(0), R(0)),
			  SJ_THETA_NESTED_LOOP, 0, 3);
	bench_one("band, nested loop", 200000, 50000, 1000000,
			  AND(GEI(R(0), SUBI(64, L(0), CI(5))), LEI(R(0), ADDI(64, L(0), CI(5)))),
			  SJ_THETA_NESTED_LOOP, 0, 3);
	bench_one("l.a > r.a (nested loop)", 50000, 50000, 1000000, GTI(L(0), R(0)),
			  SJ_THETA_NESTED_LOOP, 1, 3);
	bench_one("band + residual l.a*3 <> r.a", 1000000, 1000000, 1000000,
			  AND(AND(GEI(R(0), SUBI(64, L(0), CI(5))), LEI(R(0), ADDI(64, L(0), CI(5)))),
				  NEI(MULI(64, L(0), CI(3)), R(0))),
			  SJ_THETA_AUTO, 1, 3);
}

/* ------------------------------------------------------------------------
 * GPU, one join on two shares of device 0 (the multi-device path)
 * ------------------------------------------------------------------------ */

static SjStatus
gpu2_begin(const SjThetaTable *l, const SjThetaTable *r, const SjThetaProgram *p,
		   SjThetaStrategy s, const SjJoinOptions *o, void **j, char *e)
{
	static const int devices[2] = {0, 0};
	SjJoinOptions two = *o;

	two.gpu_ndevices = 2;
	two.gpu_devices = devices;
	return sjgpu_theta_begin(l, r, p, s, &two, (SjGpuThetaJoin **) j, e);
}

static const Engine gpu2_engine = {"gpu on 0,0", gpu2_begin, sjgpu_theta_next_any,
sjgpu_theta_timings_any, sjgpu_theta_end_any};

SJ_TEST(theta_multi_gpu)
{
	int			ran = 0;
	const char *bad;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	/* the pieces of every strategy, not only of the large nested loops */
	if (sjgpu_theta_set_test_spread)
		sjgpu_theta_set_test_spread(1);
	bad = run_shapes(&gpu2_engine, "theta_multi_gpu", &ran);
	SJ_CHECK(bad == NULL, "oracle: %s", bad);
	bad = errors_case(&gpu2_engine);
	SJ_CHECK(bad == NULL, "errors: %s", bad);
	bad = all_equal(&gpu2_engine, 3000, 2000, 65536, 4);
	SJ_CHECK(bad == NULL, "all equal: %s", bad);
	tn_used = 0;
	bad = cross_check(&gpu_engine, &gpu2_engine, 20000, 30000,
					  OR(EQI(L(0), R(0)), GTF(ADDF(64, L(2), CF(60.0)), R(2))),
					  SJ_THETA_AUTO, SJ_THETA_AUTO, 0, 0);
	SJ_CHECK(bad == NULL, "OR, one device against two: %s", bad);
	tn_used = 0;
	bad = cross_check(&gpu_engine, &gpu2_engine, 40000, 30000,
					  AND(EQI(L(0), R(0)), LTF(L(2), R(2))),
					  SJ_THETA_HASH, SJ_THETA_HASH, (size_t) 4 << 20, 1);
	SJ_CHECK(bad == NULL, "equi + residual, one device against two: %s", bad);
	if (sjgpu_theta_set_test_spread)
		sjgpu_theta_set_test_spread(0);
}
