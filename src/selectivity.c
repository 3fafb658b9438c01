/*
 * selectivity.c
 *		The theta join's pair estimate for bands and inequalities.
 *
 * PostgreSQL estimates a comparison between columns of two relations at a
 * fixed third of the cross product (DEFAULT_INEQ_SEL), so the band
 *
 *		r.k BETWEEN l.k - 5 AND l.k + 5
 *
 * is estimated at a ninth of it, whatever its width: 1.8 * 10^12 pairs for
 * two tables of 4 M rows where 1.8 * 10^6 come out.  The engines' time,
 * and the device simjoin.device = auto chooses, turn on the pairs, so the
 * custom scan estimates such conditions itself:
 *
 * - every comparison (<, <=, >, >=) of an expression over the outer side
 *   and one over the inner, either plus or minus constants, is a bound on
 *   X - Y, X being the outer expression and Y the inner one;
 * - the bounds of each (X, Y) pair give lo <= X - Y <= hi;
 * - the fraction of pairs within them is computed from the statistics of
 *   X and Y (null fraction, most common values, histogram; values uniform
 *   within a histogram bucket): the sum over X's values x, weighted, of
 *   the fraction of Y within [x - hi, x - lo].
 *
 * Integer and date columns count their values as points, a strict bound
 * being the next point in.  Numbers (integers, floats, numeric) compare
 * with numbers, dates and timestamps with dates and timestamps (in
 * microseconds; an interval's month is 30 days, as interval arithmetic
 * compares them).  Comparisons it cannot read, and expressions without
 * statistics the user may read (examine_variable's acl_ok: no row-level
 * security, SELECT on the column), keep PostgreSQL's estimate.  Groups are
 * taken as independent of each other and of the remaining clauses.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/timestamp.h"

#include "theta_join.h"

/* Kinds of value that compare with each other. */
typedef enum SjValueKind
{
	SJ_VAL_NONE,
	SJ_VAL_NUMBER,
	SJ_VAL_TIME					/* microseconds */
} SjValueKind;

/*
 * An expression's kind and, unless step is NULL, its step: the distance of
 * adjacent values, or 0.
 */
static SjValueKind
SjKindOf(Oid type, double *step)
{
	double		unused;

	if (step == NULL)
		step = &unused;
	*step = 0;
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			*step = 1;
			return SJ_VAL_NUMBER;
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			return SJ_VAL_NUMBER;
		case DATEOID:
			*step = (double) USECS_PER_DAY;
			return SJ_VAL_TIME;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return SJ_VAL_TIME;
		default:
			return SJ_VAL_NONE;
	}
}

/* A statistics value of type as a double; false when not finite. */
static bool
SjValueToDouble(Oid type, Datum d, double *out)
{
	switch (type)
	{
		case INT2OID:
			*out = DatumGetInt16(d);
			break;
		case INT4OID:
			*out = DatumGetInt32(d);
			break;
		case INT8OID:
			*out = (double) DatumGetInt64(d);
			break;
		case FLOAT4OID:
			*out = DatumGetFloat4(d);
			break;
		case FLOAT8OID:
			*out = DatumGetFloat8(d);
			break;
		case NUMERICOID:
			*out = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
			break;
		case DATEOID:
			if (DATE_NOT_FINITE(DatumGetDateADT(d)))
				return false;
			*out = (double) DatumGetDateADT(d) * USECS_PER_DAY;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)))
				return false;
			*out = (double) DatumGetTimestamp(d);
			break;
		default:
			return false;
	}
	return isfinite(*out);
}

/*
 * A constant added to an expression of kind (base type base_type) as a
 * double in the expression's unit: a number for numbers, microseconds for
 * times (an interval; days for a date's integer).
 */
static bool
SjOffsetToDouble(Const *c, SjValueKind kind, Oid base_type, double *out)
{
	if (c->constisnull)
		return false;
	if (c->consttype == INTERVALOID)
	{
		Interval   *iv = DatumGetIntervalP(c->constvalue);

		if (kind != SJ_VAL_TIME)
			return false;
		*out = (double) iv->time +
			((double) iv->day + (double) iv->month * DAYS_PER_MONTH) * USECS_PER_DAY;
		return isfinite(*out);
	}
	if (!SjValueToDouble(c->consttype, c->constvalue, out))
		return false;
	if (kind == SJ_VAL_TIME)
	{
		/* date + integer: days */
		if (base_type != DATEOID ||
			(c->consttype != INT2OID && c->consttype != INT4OID &&
			 c->consttype != INT8OID))
			return false;
		*out *= USECS_PER_DAY;
		return true;
	}
	return SjKindOf(c->consttype, NULL) == SJ_VAL_NUMBER;
}

/*
 * expr as base + offset, base an expression with no constant term at the
 * top: "+" and "-" of constants (as the planner folds them) peeled off.
 */
static bool
SjSplitOffset(PlannerInfo *root, Node *expr, Node **base, double *offset)
{
	*offset = 0;
	for (;;)
	{
		OpExpr	   *op;
		Node	   *l,
				   *r,
				   *term;
		Const	   *cst;
		char	   *name;
		double		c,
					sign;
		SjValueKind kind;

		while (IsA(expr, RelabelType))
			expr = (Node *) ((RelabelType *) expr)->arg;
		if (!IsA(expr, OpExpr) || list_length(((OpExpr *) expr)->args) != 2)
			break;
		op = (OpExpr *) expr;
		name = get_opname(op->opno);
		if (name == NULL || (strcmp(name, "+") != 0 && strcmp(name, "-") != 0))
			break;
		l = estimate_expression_value(root, linitial(op->args));
		r = estimate_expression_value(root, lsecond(op->args));
		/* term + c, term - c, c + term (c - term does not grow with term) */
		if (IsA(r, Const) && !IsA(l, Const))
		{
			term = l;
			cst = (Const *) r;
			sign = name[0] == '+' ? 1 : -1;
		}
		else if (IsA(l, Const) && !IsA(r, Const) && name[0] == '+')
		{
			term = r;
			cst = (Const *) l;
			sign = 1;
		}
		else
			break;
		kind = SjKindOf(exprType(term), NULL);
		if (kind == SJ_VAL_NONE ||
			!SjOffsetToDouble(cst, kind, exprType(term), &c))
			return false;
		*offset += sign * c;
		expr = term;
	}
	*base = expr;
	return SjKindOf(exprType(expr), NULL) != SJ_VAL_NONE;
}

/* Bounds on X - Y for one pair of expressions. */
typedef struct SjBand
{
	Node	   *x;				/* over the outer side */
	Node	   *y;				/* over the inner side */
	double		lo,
				hi;
	bool		lo_strict,
				hi_strict;
	List	   *clauses;		/* the comparisons giving them */
} SjBand;

/*
 * Add clause to bands if it compares an outer and an inner expression, or
 * return false.
 */
static bool
SjAddBound(PlannerInfo *root, Expr *clause, Relids outer, Relids inner,
		   List **bands)
{
	OpExpr	   *op;
	RegProcedure rest;
	Node	   *a,
			   *b;
	double		offa,
				offb,
				bound;
	bool		lt,
				strict;
	Relids		va,
				vb;
	SjBand	   *band = NULL;
	ListCell   *lc;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	op = (OpExpr *) clause;
	rest = get_oprrest(op->opno);
	if (rest == F_SCALARLTSEL || rest == F_SCALARLESEL)
		lt = true;
	else if (rest == F_SCALARGTSEL || rest == F_SCALARGESEL)
		lt = false;
	else
		return false;
	strict = rest == F_SCALARLTSEL || rest == F_SCALARGTSEL;
	if (!SjSplitOffset(root, linitial(op->args), &a, &offa) ||
		!SjSplitOffset(root, lsecond(op->args), &b, &offb) ||
		SjKindOf(exprType(a), NULL) != SjKindOf(exprType(b), NULL))
		return false;
	va = pull_varnos(root, a);
	vb = pull_varnos(root, b);
	if (bms_is_empty(va) || bms_is_empty(vb))
		return false;

	/*
	 * a + offa op b + offb: with a the outer expression, X - Y op offb -
	 * offa; with a the inner, X - Y (op reversed) offa - offb.
	 */
	if (bms_is_subset(va, outer) && bms_is_subset(vb, inner))
		bound = offb - offa;
	else if (bms_is_subset(va, inner) && bms_is_subset(vb, outer))
	{
		Node	   *t = a;

		a = b;
		b = t;
		bound = offa - offb;
		lt = !lt;
	}
	else
		return false;

	foreach(lc, *bands)
	{
		SjBand	   *g = lfirst(lc);

		if (equal(g->x, a) && equal(g->y, b))
			band = g;
	}
	if (band == NULL)
	{
		band = palloc0(sizeof(SjBand));
		band->x = a;
		band->y = b;
		band->lo = -get_float8_infinity();
		band->hi = get_float8_infinity();
		*bands = lappend(*bands, band);
	}
	if (lt && (bound < band->hi || (bound == band->hi && strict)))
	{
		band->hi = bound;
		band->hi_strict = strict;
	}
	else if (!lt && (bound > band->lo || (bound == band->lo && strict)))
	{
		band->lo = bound;
		band->lo_strict = strict;
	}
	band->clauses = lappend(band->clauses, clause);
	return true;
}

/* What the statistics say of one expression's values. */
typedef struct SjDist
{
	int			nmcv;
	double	   *mcv;			/* ascending */
	double	   *mcvcum;			/* mcvcum[i]: frequency of mcv[0..i-1] */
	int			nhist;			/* histogram bounds (0, or 2 and more) */
	double	   *hist;
	double		histfrac;		/* the fraction the histogram describes */
	double		step;			/* values are multiples of step (0: any) */
} SjDist;

static int
SjCmpPair(const void *a, const void *b)
{
	double		x = ((const double *) a)[0],
				y = ((const double *) b)[0];

	return x < y ? -1 : x > y;
}

/* Load expr's statistics into dist; false when there are none to use. */
static bool
SjDistLoad(PlannerInfo *root, Node *expr, SjDist *dist)
{
	VariableStatData vardata;
	AttStatsSlot sslot;
	double		nullfrac,
				mcvfrac = 0,
				lost = 0;
	double	   *pairs;
	int			i,
				n;
	bool		ok = false;

	memset(dist, 0, sizeof(SjDist));
	examine_variable(root, expr, 0, &vardata);
	if (!HeapTupleIsValid(vardata.statsTuple) || !vardata.acl_ok ||
		SjKindOf(vardata.atttype, &dist->step) == SJ_VAL_NONE)
	{
		ReleaseVariableStats(vardata);
		return false;
	}
	nullfrac = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac;

	if (get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_MCV,
						 InvalidOid, ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		pairs = palloc(sizeof(double) * 2 * Max(sslot.nvalues, 1));
		for (i = 0, n = 0; i < sslot.nvalues && i < sslot.nnumbers; i++)
		{
			mcvfrac += sslot.numbers[i];
			if (SjValueToDouble(vardata.atttype, sslot.values[i], &pairs[2 * n]))
			{
				pairs[2 * n + 1] = sslot.numbers[i];
				n++;
			}
			else
				lost += sslot.numbers[i];
		}
		free_attstatsslot(&sslot);
		qsort(pairs, n, 2 * sizeof(double), SjCmpPair);
		dist->nmcv = n;
		dist->mcv = palloc(sizeof(double) * Max(n, 1));
		dist->mcvcum = palloc(sizeof(double) * (n + 1));
		dist->mcvcum[0] = 0;
		for (i = 0; i < n; i++)
		{
			dist->mcv[i] = pairs[2 * i];
			dist->mcvcum[i + 1] = dist->mcvcum[i] + pairs[2 * i + 1];
		}
		pfree(pairs);
	}
	dist->histfrac = Max(0.0, 1.0 - nullfrac - mcvfrac);

	if (get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_HISTOGRAM,
						 InvalidOid, ATTSTATSSLOT_VALUES))
	{
		int			first = 0,
					last = sslot.nvalues - 1;
		double		v;

		/*
		 * Infinities (and NaN) sort to the ends: the values of their buckets
		 * are taken to lie at the nearest finite bound, beyond all others.
		 */
		while (first <= last && !SjValueToDouble(vardata.atttype, sslot.values[first], &v))
			first++;
		while (last >= first && !SjValueToDouble(vardata.atttype, sslot.values[last], &v))
			last--;
		if (sslot.nvalues >= 2 && last >= first)
		{
			dist->nhist = sslot.nvalues;
			dist->hist = palloc(sizeof(double) * dist->nhist);
			for (i = 0; i < dist->nhist; i++)
				(void) SjValueToDouble(vardata.atttype,
									   sslot.values[Max(first, Min(last, i))],
									   &dist->hist[i]);
		}
		free_attstatsslot(&sslot);
	}

	/*
	 * Usable when what is described covers the values: without a
	 * histogram, the most common values must be nearly all of them.
	 */
	if (dist->nhist == 0)
	{
		ok = dist->nmcv > 0 && dist->histfrac + lost < 0.01;
		dist->histfrac = 0;
	}
	else
		ok = lost < 0.01;
	ReleaseVariableStats(vardata);
	return ok;
}

/* Free what SjDistLoad allocated. */
static void
SjDistFree(SjDist *dist)
{
	if (dist->mcv)
		pfree(dist->mcv);
	if (dist->mcvcum)
		pfree(dist->mcvcum);
	if (dist->hist)
		pfree(dist->hist);
	memset(dist, 0, sizeof(SjDist));
}

/* The fraction of rows among the most common values <= v (< v if strict). */
static double
SjMcvCdf(const SjDist *d, double v, bool strict)
{
	int			lo = 0,
				hi = d->nmcv;

	/* the first index past v */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (d->mcv[mid] < v || (!strict && d->mcv[mid] == v))
			lo = mid + 1;
		else
			hi = mid;
	}
	return d->nmcv > 0 ? d->mcvcum[lo] : 0;
}

/* The fraction of rows in the histogram's spread below v. */
static double
SjHistCdf(const SjDist *d, double v)
{
	int			lo = 0,
				hi = d->nhist - 1;

	if (d->nhist == 0 || v < d->hist[0])
		return 0;
	if (v >= d->hist[d->nhist - 1])
		return d->histfrac;
	/* the bucket [hist[lo], hist[lo + 1]) holding v, never empty */
	while (hi - lo > 1)
	{
		int			mid = (lo + hi) / 2;

		if (d->hist[mid] <= v)
			lo = mid;
		else
			hi = mid;
	}
	return d->histfrac *
		(lo + (v - d->hist[lo]) / (d->hist[lo + 1] - d->hist[lo])) / (d->nhist - 1);
}

/*
 * The fraction of pairs with lo <= X - Y <= hi (ends strict as flagged),
 * in three parts:
 *
 * - each most common value x of X: the fraction of Y (most common values
 *   and histogram) within [x - hi, x - lo];
 * - each most common value y of Y: the fraction of X's histogram within
 *   [y + lo, y + hi] (so that a narrow window between common values is
 *   measured on the histogram's spread, not on points of it);
 * - X's histogram against Y's: points spread evenly through each bucket of
 *   X, the fraction of Y's histogram within [x - hi, x - lo].
 *
 * With both sides stepping alike, a strict end is the next value in, and a
 * window on a histogram reaches half a step out at each end, a value being
 * the middle of its step in the histogram's continuous spread; the window
 * on most common values is open at the top, so that it holds (hi - lo) /
 * step + 1 values wherever it falls.
 */
static double
SjBandFraction(const SjDist *x, const SjDist *y, const SjBand *band)
{
	const int	subpoints = 8;
	double		lo = band->lo,
				hi = band->hi,
				step = x->step == y->step ? x->step : 0,
				half,
				sum = 0;
	bool		lo_strict = band->lo_strict,
				hi_strict = band->hi_strict;
	int			i,
				k;

	if (step > 0)
	{
		if (isfinite(lo))
			lo = lo_strict ? (floor(lo / step) + 1) * step : ceil(lo / step) * step;
		if (isfinite(hi))
			hi = hi_strict ? (ceil(hi / step) - 1) * step : floor(hi / step) * step;
		if (lo > hi)
			return 0;
		lo_strict = hi_strict = false;
	}
	else if (lo > hi || (lo == hi && (lo_strict || hi_strict)))
		return 0;
	half = step / 2;

	for (i = 0; i < x->nmcv; i++)
	{
		double		v = x->mcv[i],
					w = x->mcvcum[i + 1] - x->mcvcum[i];

		sum += w * (SjMcvCdf(y, v - lo + half, lo_strict || step > 0) -
					SjMcvCdf(y, v - hi - half, !hi_strict) +
					SjHistCdf(y, v - lo + half) - SjHistCdf(y, v - hi - half));
	}
	for (i = 0; i < y->nmcv; i++)
	{
		double		v = y->mcv[i],
					w = y->mcvcum[i + 1] - y->mcvcum[i];

		sum += w * (SjHistCdf(x, v + hi + half) - SjHistCdf(x, v + lo - half));
	}
	for (i = 0; i + 1 < x->nhist; i++)
	{
		double		w = x->histfrac / (x->nhist - 1) / subpoints;

		for (k = 0; k < subpoints; k++)
		{
			double		v = x->hist[i] + (x->hist[i + 1] - x->hist[i]) * (k + 0.5) / subpoints;

			sum += w * (SjHistCdf(y, v - lo + half) - SjHistCdf(y, v - hi - half));
		}
	}
	return Max(0.0, Min(1.0, sum));
}

/*
 * The selectivity of a theta join's engine clauses over the cross product
 * of outer and inner: bands and inequalities from statistics, the rest as
 * PostgreSQL estimates them (clauselist_selectivity, as an inner join).
 */
double
SjThetaPairSelectivity(PlannerInfo *root, List *clauses, Relids outer,
					   Relids inner, SpecialJoinInfo *sjinfo)
{
	List	   *bands = NIL,
			   *rest = NIL;
	ListCell   *lc;
	double		sel = 1.0;

	foreach(lc, clauses)
	{
		Expr	   *clause = lfirst(lc);

		if (!SjAddBound(root, clause, outer, inner, &bands))
			rest = lappend(rest, clause);
	}
	foreach(lc, bands)
	{
		SjBand	   *band = lfirst(lc);
		SjDist		x = {0},
					y = {0};

		if (SjDistLoad(root, band->x, &x) && SjDistLoad(root, band->y, &y))
			sel *= SjBandFraction(&x, &y, band);
		else
			rest = list_concat(rest, band->clauses);
		SjDistFree(&x);
		SjDistFree(&y);
	}
	return sel * clauselist_selectivity(root, rest, 0, JOIN_INNER, sjinfo);
}
