/*
 * theta_values.c
 *		The values a theta condition reads, as the engines need them: text
 *		and numeric ranks, numeric fixed point, derived date/time values.
 *
 * SjRankAll replaces text or numeric values, with the program's constants,
 * by their ranks.  Where the condition does numeric arithmetic,
 * SjNumericFixAll turns every numeric value and constant into int64 fixed
 * point at one common scale, or into 128-bit fixed point when the condition
 * divides (SjNumericWide, which proves that everything fits at a scale at
 * least every quotient's select_div_scale() scale), and refuses (22003)
 * what does not fit.  SjDeriveTry and SjThetaDerivedErrors compute derived
 * date/time columns and raise PostgreSQL's error for a row whose derivation
 * failed; SjThetaCheckTemporal sets aside rows whose values the engines'
 * date/time arithmetic cannot take.
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "sjnumeric.h"
#include "theta_int.h"

/* A derived column's value for the value d of its column (may raise). */
static int64
SjDeriveEval(const SjThetaCol *col, Datum d)
{
	int			j;

	for (j = 0; j < col->derive.nsteps; j++)
	{
		Interval	iv;

		if (col->derive.fn[j] == F_TIMESTAMP_DATE)
		{
			d = DirectFunctionCall1(col->derive_fn[j], d);
			continue;
		}
		iv.time = col->derive.time[j];
		iv.day = col->derive.day[j];
		iv.month = col->derive.month[j];
		d = DirectFunctionCall2(col->derive_fn[j], d, IntervalPGetDatum(&iv));
	}
	return DatumGetTimestamp(d);
}

/*
 * SjDeriveEval, but false where PostgreSQL finds the result out of range
 * (any other error is raised).
 */
bool
SjDeriveTry(const SjThetaCol *col, Datum d, int64 *result)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	PG_TRY();
	{
		*result = SjDeriveEval(col, d);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_DATETIME_VALUE_OUT_OF_RANGE)
			PG_RE_THROW();
		FlushErrorState();
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* One value to rank: where it comes from and its datum. */
typedef struct SjRankItem
{
	Datum		value;
	int64	   *dest;
} SjRankItem;

static int
SjRankCmp(const void *a, const void *b, void *arg)
{
	const SjRankItem *x = (const SjRankItem *) a;
	const SjRankItem *y = (const SjRankItem *) b;
	Oid			coll = *(Oid *) arg;

	if (coll == InvalidOid)
		return DatumGetInt32(DirectFunctionCall2(numeric_cmp, x->value, y->value));
	return varstr_cmp(VARDATA_ANY(DatumGetPointer(x->value)),
					  VARSIZE_ANY_EXHDR(DatumGetPointer(x->value)),
					  VARDATA_ANY(DatumGetPointer(y->value)),
					  VARSIZE_ANY_EXHDR(DatumGetPointer(y->value)), coll);
}

/*
 * Replace every text (or numeric) value read by the condition, on both
 * sides, and every such constant, by its rank in their joint order.
 */
void
SjRankAll(SjThetaCompiler *c, SjThetaKind kind)
{
	SjRankItem *items;
	size_t		n = 0,
				cap = 0,
				i;
	int			s,
				k;
	ListCell   *lc;
	Oid			coll = kind == SJ_KIND_TEXT ?
		(c->have_text_order ? c->text_collation : C_COLLATION_OID) : InvalidOid;
	int64		rank = 0;

	for (s = 0; s < 2; s++)
		for (k = 0; k < c->sides[s]->ncols; k++)
			if (c->sides[s]->cols[k].kind == kind)
				cap += c->sides[s]->n;
	cap += list_length(c->rank_consts);
	if (cap == 0)
		return;
	items = palloc_extended(cap * sizeof(SjRankItem), MCXT_ALLOC_HUGE);
	for (s = 0; s < 2; s++)
	{
		SjThetaSide *side = c->sides[s];

		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];

			if (col->kind != kind)
				continue;
			col->ivals = palloc_extended(Max(side->n, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
			for (i = 0; i < side->n; i++)
			{
				col->ivals[i] = 0;
				if (col->nulls[i])
					continue;
				items[n].value = col->dvals[i];
				items[n].dest = &col->ivals[i];
				n++;
			}
		}
	}
	foreach(lc, c->rank_consts)
	{
		SjRankConst *rc = lfirst(lc);

		if (rc->kind != kind)
			continue;
		items[n].value = rc->value;
		items[n].dest = &c->instr[rc->instr].ival;
		n++;
	}
	qsort_arg(items, n, sizeof(SjRankItem), SjRankCmp, &coll);
	for (i = 0; i < n; i++)
	{
		if (i > 0 && SjRankCmp(&items[i - 1], &items[i], &coll) != 0)
			rank++;
		*items[i].dest = rank;
	}
	pfree(items);
}

/*
 * Numeric arithmetic the engines' fixed point cannot hold exactly: a value
 * of column col of side (side NULL: a constant, or a result the condition
 * could compute).  Refuse it.
 */
static void
SjNumericTooLarge(SjThetaSide *side, SjThetaCol *col, int scale)
{
	if (side == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("theta_join cannot evaluate the numeric arithmetic of its condition exactly"),
				 errdetail("A constant, or a result the condition could compute from the values read, needs more than %d digits at the condition's scale of %d.",
						   SJ_NUM_MAX_DIGITS, scale),
				 errhint("Filter out the rows of largest magnitude, use fewer decimal places, or cast to float8.")));
	if (!OidIsValid(side->relid))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("simjoin cannot evaluate numeric arithmetic over a value of the join condition"),
				 errdetail("A value needs more than %d digits at the condition's scale of %d.",
						   SJ_NUM_MAX_DIGITS, scale),
				 errhint("Set simjoin.enable_customscan = off for this query, or filter such rows out first.")));
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("theta_join cannot evaluate numeric arithmetic over column \"%s\" of relation \"%s\"",
					get_attname(side->relid, col->attnum, false), get_rel_name(side->relid)),
			 errdetail("A value needs more than %d digits at the condition's scale of %d.",
					   SJ_NUM_MAX_DIGITS, scale),
			 errhint("Filter such rows out through a view, round the column, or cast it to float8.")));
}

/* The scale of a numeric value (-1 for NaN and the infinities). */
static int
SjNumericScale(Datum num)
{
	if (numeric_is_nan(DatumGetNumeric(num)) || numeric_is_inf(DatumGetNumeric(num)))
		return -1;
	return DatumGetInt32(DirectFunctionCall1(numeric_scale, num));
}

/*
 * A numeric value as fixed point at scale (its own scale at most), or a
 * sentinel; false where it does not fit.
 */
static bool
SjNumericFixed(Datum num, Datum pow10, Datum limit, Datum neglimit, int64 *out)
{
	Datum		m;

	if (numeric_is_nan(DatumGetNumeric(num)))
		*out = SJ_NUM_NAN;
	else if (numeric_is_inf(DatumGetNumeric(num)))
		*out = DatumGetInt32(DirectFunctionCall2(numeric_cmp, num, neglimit)) > 0 ?
			SJ_NUM_PINF : SJ_NUM_NINF;
	else
	{
		m = DirectFunctionCall2(numeric_mul, num, pow10);
		if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, m, limit)) >= 0 ||
			DatumGetInt32(DirectFunctionCall2(numeric_cmp, m, neglimit)) <= 0)
			return false;
		*out = DatumGetInt64(DirectFunctionCall1(numeric_int8, m));
	}
	return true;
}

/* The numeric type's declared precision and scale, or false (none). */
static bool
SjNumericTypmod(int32 typmod, int *precision, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return true;
}

/*
 * Check that no finite result of the program's numeric arithmetic can reach
 * SJ_NUM_LIMIT, given the largest |value| of each numeric load and constant
 * (leaf[i] for instruction i), by running the program over bounds.
 */
static void
SjNumericBounds(SjThetaCompiler *c, const uint64 *leaf, int scale)
{
	uint128		stack[SJ_THETA_MAX_STACK + 1];
	int			sp = 0;
	int			i;

	for (i = 0; i < c->ninstr; i++)
	{
		const SjThetaInstr *in = &c->instr[i];
		uint128		r = 0;

		switch (in->op)
		{
			SJ_THETA_LEAF_CASES:
				stack[sp++] = leaf[i];
				continue;
			SJ_THETA_UNARY_CASES:
				stack[sp - 1] = 0;
				continue;
			case SJ_OP_NEG_N:
				continue;
			case SJ_OP_MUL_N:
				{
					uint64		p = (uint64) sj_num_pow10(in->arg);

					r = stack[sp - 1] * (uint128) (uint64) Abs(in->ival);
					r = (r + p - 1) / p;
					stack[sp - 1] = r;
					break;
				}
			case SJ_OP_ADD_N:
			case SJ_OP_SUB_N:
				r = stack[sp - 2] + stack[sp - 1];
				stack[--sp - 1] = r;
				break;
			default:
				stack[--sp - 1] = 0;
				continue;
		}
		/* every bound stays below the limit, so none of this can wrap */
		if (r >= (uint128) SJ_NUM_LIMIT)
			SjNumericTooLarge(NULL, NULL, scale);
	}
}

/* A condition's numeric division that the wide fixed point cannot hold. */
static void
SjNumericWideRefuse(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("theta_join cannot evaluate the numeric division of its condition exactly"),
			 errdetail_internal("%s", detail),
			 errhint("Filter out the rows of largest magnitude, use fewer decimal places, "
					 "give the columns a declared scale, or cast to float8.")));
}

/* A wide stack slot during SjNumericWide: bounds of the values it holds. */
typedef struct SjWideSlot
{
	int			sc;				/* decimal places of the exact value, at most */
	int			dsmax;			/* display scale, at most */
	int			dsexact;		/* the display scale of every value, or -1 */
	double		mag;			/* |finite value|, at most */
} SjWideSlot;

/*
 * For a condition that divides: run the program over bounds to find the
 * wide common scale (every quotient's select_div_scale() scale at most),
 * prove that no value or intermediate reaches 10^SJ_NW_MAX_DIGITS at it,
 * and fill in WIDEN_N's and DIV_W's args.  leaf[i] is the largest |value|
 * of numeric leaf i at the int64 scale, leafdsmax/leafdsexact its display
 * scales (-1: they vary).  A quotient's scale depends on its dividend's
 * display scale; where that varies by row and could matter, refuse.
 */
static void
SjNumericWide(SjThetaCompiler *c, const uint64 *leaf, const int *leafdsmax,
			  const int *leafdsexact, int scale)
{
	SjWideSlot	stack[SJ_THETA_MAX_STACK + 1];
	SjWideSlot	slot[SJ_THETA_MAX_INSTR];
	double		divmag[SJ_THETA_MAX_INSTR];
	int			dsarg[SJ_THETA_MAX_INSTR];
	int			sp = 0;
	int			sw = scale;
	int			i;

	for (i = 0; i < c->ninstr; i++)
	{
		const SjThetaInstr *in = &c->instr[i];
		SjWideSlot	r = {0, 0, 0, 0.0};

		switch (in->op)
		{
			SJ_THETA_LEAF_CASES:
				r.sc = r.dsmax = leafdsmax[i];
				r.dsexact = leafdsexact[i];
				r.mag = (double) leaf[i] / pow(10.0, scale);
				stack[sp++] = r;
				break;
			case SJ_OP_WIDEN_N:
			case SJ_OP_NEG_W:
				break;
			case SJ_OP_MUL_W:
				r = stack[sp - 1];
				r.sc += in->arg;
				r.dsmax += in->arg;
				if (r.dsexact >= 0)
					r.dsexact += in->arg;
				r.mag *= fabs((double) in->ival) / pow(10.0, in->arg);
				stack[sp - 1] = r;
				break;
			case SJ_OP_ADD_W:
			case SJ_OP_SUB_W:
				{
					SjWideSlot	a = stack[sp - 2],
								b = stack[sp - 1];

					r.sc = Max(a.sc, b.sc);
					r.dsmax = Max(a.dsmax, b.dsmax);
					r.dsexact = a.dsexact >= 0 && b.dsexact >= 0 ?
						Max(a.dsexact, b.dsexact) : -1;
					r.mag = a.mag + b.mag;
					stack[--sp - 1] = r;
					break;
				}
			case SJ_OP_DIV_W:
				{
					SjWideSlot	x = stack[sp - 1];
					int			kc = SJ_DIVW_KC(in->arg);
					int			w1min = x.sc == 0 ? 0 : -((x.sc + 3) / 4);
					int			w1max = w1min;
					int			w2,
								f2,
								rmax;

					if (in->ival == 0)
					{
						/* an error or NaN: no finite result */
						dsarg[i] = 0;
						divmag[i] = 0;
						r.sc = r.dsmax = kc;
						stack[sp - 1] = r;
						break;
					}
					sj_nw_digits((sj_nwu) Abs(in->ival), kc, &w2, &f2);
					/* the smallest nonzero |x| is 10^-sc: the largest scale */
					rmax = SJ_NW_MIN_SIG_DIGITS - 4 * (w1min - w2 - 1);
					rmax = Max(rmax, Max(x.dsmax, kc));
					/* the largest |x|: the smallest scale, where dsx may count */
					while (w1max < 40 && pow(10000.0, w1max + 1) <= x.mag * 1.000001)
						w1max++;
					if (x.dsexact >= 0)
						dsarg[i] = x.dsexact;
					else if (x.dsmax <= SJ_NW_MIN_SIG_DIGITS - 4 * (w1max - w2))
						dsarg[i] = 0;	/* never more than the digits' scale */
					else
						SjNumericWideRefuse(psprintf("The display scale of the dividend varies by row (up to %d), and so does the quotient's scale.",
													 x.dsmax));
					/*
					 * sj_nw_div's numerator |x| * 10^(r + kc): below
					 * 10^(24 + 4 w2 + kc) where r is the digits' scale (r =
					 * 16 - 4 qweight, |x| < 10000^(w1 + 1)), else |x| *
					 * 10^(dsx or kc + kc)
					 */
					divmag[i] = pow(10.0, kc) * Max(pow(10.0, 24 + 4 * w2),
													x.mag * pow(10.0, Max(x.dsmax, kc)));
					r.sc = r.dsmax = rmax;
					r.dsexact = -1;
					r.mag = x.mag / (fabs((double) in->ival) / pow(10.0, kc)) + 1.0;
					stack[sp - 1] = r;
					break;
				}
			default:
				/* anything else: a result that is not wide */
				sp -= sj_theta_arity(in->op) - 1;
				stack[sp - 1] = r;
				break;
		}
		slot[i] = stack[sp - 1];
		if (in->op == SJ_OP_WIDEN_N || (in->op >= SJ_OP_ADD_W && in->op <= SJ_OP_DIV_W))
			sw = Max(sw, slot[i].sc);
	}
	if (sw > SJ_NW_MAX_DIGITS - 1)
		SjNumericWideRefuse(psprintf("A quotient or value needs %d decimal places, more than %d.",
									 sw, SJ_NW_MAX_DIGITS - 1));
	/* every wide value below 10^35 at the scale, with room for rounding */
	for (i = 0; i < c->ninstr; i++)
	{
		SjThetaInstr *in = &c->instr[i];

		if (in->op == SJ_OP_WIDEN_N || (in->op >= SJ_OP_ADD_W && in->op <= SJ_OP_DIV_W))
		{
			if (slot[i].mag * pow(10.0, sw) >= pow(10.0, SJ_NW_MAX_DIGITS - 1) ||
				(in->op == SJ_OP_DIV_W && divmag[i] >= pow(10.0, SJ_NW_MAX_DIGITS + 1)))
				SjNumericWideRefuse(psprintf("A value or result needs more than %d digits at the condition's scale of %d.",
											 SJ_NW_MAX_DIGITS - 1, sw));
		}
		if (in->op == SJ_OP_WIDEN_N)
			in->arg = sw - scale;
		else if (in->op == SJ_OP_DIV_W)
			in->arg = SJ_DIVW_ARG(sw, SJ_DIVW_KC(in->arg), dsarg[i]);
	}
}

/*
 * Once both sides are read: integer and float columns cast to numeric
 * become numeric columns, through PostgreSQL's casts.
 */
void
SjNumericCasts(SjThetaCompiler *c)
{
	int			s,
				k;
	size_t		r;

	for (s = 0; s < 2; s++)
		for (k = 0; k < c->sides[s]->ncols; k++)
		{
			SjThetaSide *side = c->sides[s];
			SjThetaCol *col = &side->cols[k];

			if (!col->to_numeric || col->kind == SJ_KIND_NUMERIC)
				continue;
			col->dvals = palloc_extended(Max(side->n, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);
			for (r = 0; r < side->n; r++)
			{
				if (col->nulls[r])
					col->dvals[r] = (Datum) 0;
				else if (col->typid == FLOAT4OID)
					col->dvals[r] = DirectFunctionCall1(float4_numeric,
														Float4GetDatum((float4) col->fvals[r]));
				else if (col->typid == FLOAT8OID)
					col->dvals[r] = DirectFunctionCall1(float8_numeric,
														Float8GetDatum(col->fvals[r]));
				else
					col->dvals[r] = NumericGetDatum(int64_to_numeric(col->ivals[r]));
			}
			col->kind = SJ_KIND_NUMERIC;
		}
}

/* Does numeric arithmetic read col as fixed point (numeric, or made numeric)? */
static bool
SjNumericRead(const SjThetaCol *col)
{
	return col->kind == SJ_KIND_NUMERIC || col->to_numeric;
}

/*
 * SjNumericFixAll's scales of a numeric column of side: the common scale
 * raised to its values' (or its declared) scale, and the least and largest
 * display scales of its values.
 */
static void
SjNumericColScale(SjThetaSide *side, SjThetaCol *col, bool from_data,
				  int *scale, int *dsmin, int *dsmax)
{
	int			p = 0,
				sc = 0;
	size_t		r;

	if (!from_data)
	{
		if (!SjNumericTypmod(col->typmod, &p, &sc))
			SjThetaRefuse("numeric arithmetic over numeric values without a declared precision");
		*scale = Max(*scale, sc);
		*dsmin = *dsmax = Max(sc, 0);
		return;
	}
	for (r = 0; r < side->n; r++)
		if (!col->nulls[r])
		{
			int			ds = SjNumericScale(col->dvals[r]);

			*scale = Max(*scale, ds);
			if (ds >= 0)
			{
				*dsmin = Min(*dsmin, ds);
				*dsmax = Max(*dsmax, ds);
			}
		}
}

/*
 * SjNumericFixAll's values of a numeric column of side, as fixed point at
 * scale (or with static, its declared bound): the largest |value|.
 */
static uint64
SjNumericColFix(SjThetaSide *side, SjThetaCol *col, bool from_data, int scale,
				Datum pow10, Datum limit, Datum neglimit)
{
	uint64		colmax = 0;
	int			p = 0,
				sc = 0;
	size_t		r;

	if (!from_data)
	{
		(void) SjNumericTypmod(col->typmod, &p, &sc);
		if (p - sc + scale > SJ_NUM_MAX_DIGITS)
			SjThetaRefuse(psprintf("numeric arithmetic over numeric(%d,%d) at scale %d (more than %d digits)",
								   p, sc, scale, SJ_NUM_MAX_DIGITS));
		return (uint64) sj_num_pow10(p - sc + scale) - 1;
	}
	col->ivals = palloc_extended(Max(side->n, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	for (r = 0; r < side->n; r++)
	{
		int64		v = 0;

		if (!col->nulls[r] &&
			!SjNumericFixed(col->dvals[r], pow10, limit, neglimit, &v))
			SjNumericTooLarge(side, col, scale);
		col->ivals[r] = v;
		if (!sj_num_special(v))
			colmax = Max(colmax, (uint64) Abs(v));
	}
	return colmax;
}

/*
 * With numeric arithmetic in the condition: the common scale, every
 * numeric value read and every numeric constant as fixed point, and the
 * proof that no result overflows (sjnumeric.h).  From the data read (the
 * values then replace their Datums), or, with static, from the columns'
 * declared precision alone: refused where a column has none.
 */
void
SjNumericFixAll(SjThetaCompiler *c, bool from_data)
{
	uint64		leaf[SJ_THETA_MAX_INSTR];
	uint64		colmax[2][SJ_THETA_MAX_COLS];
	int			dsmin[2][SJ_THETA_MAX_COLS];
	int			dsmax[2][SJ_THETA_MAX_COLS];
	int			leafdsmax[SJ_THETA_MAX_INSTR];
	int			leafdsexact[SJ_THETA_MAX_INSTR];
	int			scale = 0;
	int			s,
				k,
				i;
	ListCell   *lc;
	Datum		pow10,
				limit,
				neglimit;

	/*
	 * The planner's check sees a parameter as a NULL constant (the folding
	 * left no other): its value, unknown, could need any scale or magnitude
	 */
	if (!from_data && c->numeric_null)
		SjThetaRefuse("numeric arithmetic with a parameter");

	/* the common scale */
	for (s = 0; s < 2; s++)
		for (k = 0; k < c->sides[s]->ncols; k++)
		{
			dsmin[s][k] = INT_MAX;
			dsmax[s][k] = 0;
			if (SjNumericRead(&c->sides[s]->cols[k]))
				SjNumericColScale(c->sides[s], &c->sides[s]->cols[k], from_data,
								  &scale, &dsmin[s][k], &dsmax[s][k]);
		}
	foreach(lc, c->rank_consts)
	{
		SjRankConst *rc = lfirst(lc);

		if (rc->kind == SJ_KIND_NUMERIC)
			scale = Max(scale, SjNumericScale(rc->value));
	}
	scale += c->numeric_mul_scale;
	if (scale > SJ_NUM_MAX_DIGITS)
		SjNumericTooLarge(NULL, NULL, scale);
	pow10 = NumericGetDatum(int64_to_numeric(sj_num_pow10(scale)));
	limit = NumericGetDatum(int64_to_numeric(SJ_NUM_LIMIT));
	neglimit = NumericGetDatum(int64_to_numeric(-SJ_NUM_LIMIT));

	/* the values, and the largest |value| of each column */
	for (s = 0; s < 2; s++)
		for (k = 0; k < c->sides[s]->ncols; k++)
		{
			colmax[s][k] = 0;
			if (SjNumericRead(&c->sides[s]->cols[k]))
				colmax[s][k] = SjNumericColFix(c->sides[s], &c->sides[s]->cols[k],
											   from_data, scale, pow10, limit,
											   neglimit);
		}
	memset(leaf, 0, sizeof(leaf));
	memset(leafdsmax, 0, sizeof(leafdsmax));
	memset(leafdsexact, 0, sizeof(leafdsexact));
	foreach(lc, c->rank_consts)
	{
		SjRankConst *rc = lfirst(lc);
		int64		v;

		if (rc->kind != SJ_KIND_NUMERIC)
			continue;
		if (!SjNumericFixed(rc->value, pow10, limit, neglimit, &v))
			SjNumericTooLarge(NULL, NULL, scale);
		c->instr[rc->instr].ival = v;
		if (!sj_num_special(v))
			leaf[rc->instr] = (uint64) Abs(v);
		leafdsmax[rc->instr] = leafdsexact[rc->instr] = Max(SjNumericScale(rc->value), 0);
	}
	for (i = 0; i < c->ninstr; i++)
		if (c->instr[i].op == SJ_OP_LOAD_L || c->instr[i].op == SJ_OP_LOAD_R)
		{
			s = c->instr[i].op == SJ_OP_LOAD_L ? 0 : 1;
			k = c->instr[i].arg;
			leaf[i] = colmax[s][k];
			leafdsmax[i] = dsmax[s][k];
			/* one display scale for every value (or none at all) */
			leafdsexact[i] = dsmin[s][k] == INT_MAX ? 0 :
				dsmin[s][k] == dsmax[s][k] ? dsmax[s][k] : -1;
		}
	if (c->numeric_wide)
		SjNumericWide(c, leaf, leafdsmax, leafdsexact, scale);
	else
		SjNumericBounds(c, leaf, scale);
}

/*
 * With date/time arithmetic in the condition, every date and timestamp
 * value it reads must be finite and far enough from its type's limits that
 * the condition's constants cannot carry it past them: then the engines'
 * int64 arithmetic is exactly PostgreSQL's.  Otherwise theta_join refuses;
 * the custom scan's rows (sides without a relation) are set aside instead
 * (aside[s][i], allocated here), for the caller to join with PostgreSQL's
 * own operators.  Derived columns (computed by PostgreSQL) are exempt
 * unless the engines' own arithmetic applies to them.
 */
void
SjThetaCheckTemporal(SjThetaCompiler *c, bool **aside)
{
	int			s,
				k;

	if (!c->temporal_arith)
		return;
	for (s = 0; s < 2; s++)
	{
		SjThetaSide *side = c->sides[s];

		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];
			int64		lo,
						hi;
			size_t		i;

			/* PostgreSQL computed it; compared only, infinity is exact */
			if (col->derive.nsteps > 0 && !col->arith)
				continue;
			if (col->valtype == DATEOID)
			{
				/* within the timestamp range, so a cast to timestamp is safe too */
				lo = DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE + 1 + c->shift_days +
					c->shift_usecs / USECS_PER_DAY + 1;
				hi = TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE - 1 - c->shift_days -
					c->shift_usecs / USECS_PER_DAY - 1;
			}
			else if (col->valtype == TIMESTAMPOID || col->valtype == TIMESTAMPTZOID)
			{
				lo = MIN_TIMESTAMP + c->shift_usecs + c->shift_days * USECS_PER_DAY;
				hi = END_TIMESTAMP - 1 - c->shift_usecs - c->shift_days * USECS_PER_DAY;
			}
			else
				continue;
			for (i = 0; i < side->n; i++)
			{
				if (col->nulls[i] || (col->ivals[i] >= lo && col->ivals[i] <= hi))
					continue;
				if (!OidIsValid(side->relid))
				{
					/* the custom scan's rows */
					if (aside[s] == NULL)
						aside[s] = palloc_extended(Max(side->n, 1) * sizeof(bool),
												   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
					aside[s][i] = true;
					continue;
				}
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("theta_join cannot evaluate date/time arithmetic over column \"%s\" of relation \"%s\"",
								get_attname(side->relid, col->attnum, false),
								get_rel_name(side->relid)),
						 errdetail("The column holds an infinite value, or one too close to the limits of its type for the condition's offsets."),
						 errhint("Filter such rows out through a view, or write the condition without date/time arithmetic.")));
			}
		}
	}
}

/*
 * A derived value that PostgreSQL's functions found out of range is their
 * error as soon as the join evaluates it, that is whenever the other side
 * has rows (as a nested loop over the condition would): raise it, by
 * evaluating the first such value again.  With the other side empty no pair
 * is evaluated, and the values are NULL.
 */
void
SjThetaDerivedErrors(SjThetaCompiler *c)
{
	int			s,
				k;
	size_t		i;

	for (s = 0; s < 2; s++)
	{
		SjThetaSide *side = c->sides[s];

		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];

			if (!col->any_error)
				continue;
			if (c->sides[1 - s]->n > 0)
				for (i = 0; i < side->n; i++)
					if (col->nulls[i] == SJ_DERIVE_FAILED)
					{
						(void) SjDeriveEval(col, col->typid == DATEOID ?
											DateADTGetDatum((DateADT) col->ivals[i]) :
											Int64GetDatum(col->ivals[i]));
						elog(ERROR, "simjoin: a date/time value out of range did not raise its error again");
					}
			col->any_null = true;
		}
	}
}
