/*
 * theta_compile.c
 *		The theta compiler: from the analysed condition to the engines'
 *		postfix program (sjtheta.h).
 *
 * SjCompileCondition walks the tree, maps each column to one of the
 * engines' two column types (SjTypeKind), records which text and numeric
 * constants must be ranked with the data, and emits one instruction per
 * node: comparisons, arithmetic on integers, floats, dates and timestamps,
 * date/time values derived through PostgreSQL's functions (SjDeriveChain),
 * and exact numeric arithmetic in fixed point (SjCompileNumeric), widened to
 * 128 bits when the condition divides a numeric (SjWidenNumeric).  The
 * values themselves are converted later, once read (theta_values.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "sjnumeric.h"
#include "theta_int.h"

/* Result type of a compiled subexpression. */
typedef enum SjValType
{
	SJ_V_INT,
	SJ_V_FLOAT,
	SJ_V_BOOL,					/* a genuine boolean (TBOOL) */
	SJ_V_BOOLINT,				/* a bool column loaded as 0/1 */
	SJ_V_RANK					/* ranked text or numeric */
} SjValType;

/* Append one instruction. */
static int
SjEmit(SjThetaCompiler *c, int op, int arg, int64 ival, double fval)
{
	SjThetaInstr *in;

	if (c->ninstr >= SJ_THETA_MAX_INSTR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("theta_join condition is too long"),
				 errdetail("At most %d operations are supported.", SJ_THETA_MAX_INSTR)));
	/* track the evaluation stack, whose depth the engines bound */
	c->depth += 1 - sj_theta_arity(op);
	if (c->depth > SJ_THETA_MAX_STACK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("theta_join condition is nested too deeply"),
				 errdetail("At most %d operands can be pending at once.", SJ_THETA_MAX_STACK)));
	in = &c->instr[c->ninstr];
	in->op = op;
	in->arg = arg;
	in->ival = ival;
	in->fval = fval;
	return c->ninstr++;
}

/* The engine kind of a column type, or refuse. */
SjThetaKind
SjTypeKind(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case BOOLOID:
			return SJ_KIND_I64;
		case FLOAT4OID:
		case FLOAT8OID:
			return SJ_KIND_F64;
		case TEXTOID:
		case VARCHAROID:
			return SJ_KIND_TEXT;
		case NUMERICOID:
			return SJ_KIND_NUMERIC;
		default:
			SjThetaRefuse(psprintf("values of type %s", format_type_be(typid)));
			return SJ_KIND_I64;		/* not reached */
	}
}

/* The value type a compiled load or constant of typid has. */
static SjValType
SjTypeVal(Oid typid)
{
	switch (SjTypeKind(typid))
	{
		case SJ_KIND_F64:
			return SJ_V_FLOAT;
		case SJ_KIND_TEXT:
		case SJ_KIND_NUMERIC:
			return SJ_V_RANK;
		default:
			return typid == BOOLOID ? SJ_V_BOOLINT : SJ_V_INT;
	}
}

/*
 * Index of a column in a side's registry, adding it when new: column attnum
 * of type typid, derived as derive says (NULL: read as it is).
 */
static int
SjSideColumn(SjThetaSide *side, AttrNumber attnum, Oid typid,
			 const SjThetaDerive *derive)
{
	SjThetaDerive plain;
	int			i;

	if (derive == NULL)
	{
		memset(&plain, 0, sizeof(plain));
		derive = &plain;
	}
	for (i = 0; i < side->ncols; i++)
		if (side->cols[i].attnum == attnum && !side->cols[i].to_numeric &&
			memcmp(&side->cols[i].derive, derive, sizeof(SjThetaDerive)) == 0)
			return i;
	if (side->ncols >= SJ_THETA_MAX_COLS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("theta_join condition reads too many columns"),
				 errdetail("At most %d columns of each side are supported.", SJ_THETA_MAX_COLS)));
	memset(&side->cols[side->ncols], 0, sizeof(SjThetaCol));
	side->cols[side->ncols].attnum = attnum;
	side->cols[side->ncols].typid = typid;
	side->cols[side->ncols].derive = *derive;
	side->cols[side->ncols].valtype = derive->nsteps > 0 ? derive->restype : typid;
	side->cols[side->ncols].kind = SjTypeKind(typid);
	return side->ncols++;
}

static SjValType SjCompile(SjThetaCompiler *c, Node *node);
static SjValType SjCompileValue(SjThetaCompiler *c, Node *node);

/* Compile a node that must yield a boolean (TBOOL). */
static void
SjCompileBool(SjThetaCompiler *c, Node *node)
{
	SjValType	t = SjCompile(c, node);

	if (t == SJ_V_BOOLINT)
	{
		SjEmit(c, SJ_OP_CONST_I, 0, 0, 0);
		SjEmit(c, SJ_OP_NE_I, 0, 0, 0);
	}
	else if (t != SJ_V_BOOL)
		SjThetaRefuse("a non-boolean expression where a boolean is needed");
}

/* Compile an operand that must be an integer-like or float value. */
static SjValType
SjCompileValue(SjThetaCompiler *c, Node *node)
{
	SjValType	t = SjCompile(c, node);

	if (t == SJ_V_BOOL)
		SjThetaRefuse("a comparison used as a value");
	return t;
}

/* An operand of = or <> between booleans, as 0/1 (or NULL). */
static void
SjCompileBoolOperand(SjThetaCompiler *c, Node *node)
{
	if (IsA(node, Const))
	{
		Const	   *k = (Const *) node;

		if (k->constisnull)
			SjEmit(c, SJ_OP_CONST_NULL, SJ_TI64, 0, 0);
		else
			SjEmit(c, SJ_OP_CONST_I, 0, DatumGetBool(k->constvalue) ? 1 : 0, 0);
		return;
	}
	if (SjCompile(c, node) != SJ_V_BOOLINT)
		SjThetaRefuse("comparisons between boolean expressions");
}

/* An interval constant as microseconds, for timestamp arithmetic. */
static int64
SjIntervalMicros(Node *node, bool tz)
{
	Interval   *iv;

	if (!IsA(node, Const) || ((Const *) node)->consttype != INTERVALOID)
		SjThetaRefuse("interval arithmetic with a non-constant interval");
	if (((Const *) node)->constisnull)
		return 0;
	iv = DatumGetIntervalP(((Const *) node)->constvalue);
	if (iv->month != 0)
		SjThetaRefuse("intervals with months or years");
	if (tz && iv->day != 0)
		SjThetaRefuse("intervals with days added to timestamp with time zone");
	return iv->time + (int64) iv->day * USECS_PER_DAY;
}

/* The function and arguments of an operator or function call, or false. */
static bool
SjCallParts(Node *node, Oid *fn, List **args)
{
	if (IsA(node, OpExpr))
	{
		set_opfuncid((OpExpr *) node);
		*fn = ((OpExpr *) node)->opfuncid;
		*args = ((OpExpr *) node)->args;
		return true;
	}
	if (IsA(node, FuncExpr))
	{
		*fn = ((FuncExpr *) node)->funcid;
		*args = ((FuncExpr *) node)->args;
		return true;
	}
	return false;
}

/*
 * Describe node as a derived column into d: a date, timestamp or
 * timestamptz column of one side, cast from date to timestamp or with
 * constant intervals added or subtracted, SJ_DERIVE_MAX_STEPS steps at
 * most.  Returns the column, or NULL where node is not of that form.  Sets
 * *needed where a step is no fixed offset the engines could add: months,
 * days on timestamptz (which depend on the time zone), or a date plus an
 * interval.
 */
static Var *
SjDeriveChain(Node *node, SjThetaDerive *d, bool *needed, bool *overflow)
{
	Oid			fn;
	List	   *args;
	Var		   *v;
	Const	   *k = NULL;
	int			j;

	if (IsA(node, Var))
	{
		v = (Var *) node;
		if (v->varlevelsup != 0 || v->varno < 1 || v->varno > 2 || v->varattno <= 0 ||
			(v->vartype != DATEOID && v->vartype != TIMESTAMPOID &&
			 v->vartype != TIMESTAMPTZOID))
			return NULL;
		return v;
	}
	if (!SjCallParts(node, &fn, &args))
		return NULL;
	if (fn == F_DATE_PL_INTERVAL || fn == F_DATE_MI_INTERVAL ||
		fn == F_TIMESTAMP_PL_INTERVAL || fn == F_TIMESTAMP_MI_INTERVAL ||
		fn == F_TIMESTAMPTZ_PL_INTERVAL || fn == F_TIMESTAMPTZ_MI_INTERVAL)
	{
		k = (Const *) lsecond(args);
		if (!IsA(k, Const) || k->consttype != INTERVALOID || k->constisnull)
			return NULL;
	}
	else if (fn != F_TIMESTAMP_DATE)
		return NULL;
	v = SjDeriveChain(linitial(args), d, needed, overflow);
	if (v == NULL)
		return NULL;
	if (d->nsteps >= SJ_DERIVE_MAX_STEPS)
	{
		/*
		 * A step beyond what a derived column holds: a fixed offset is for
		 * the engines to add over the chain below (NULL: compiled as
		 * arithmetic); a calendar step is refused by name.
		 */
		if (k != NULL)
		{
			Interval   *iv = DatumGetIntervalP(k->constvalue);

			if (iv->month != 0 || fn == F_DATE_PL_INTERVAL || fn == F_DATE_MI_INTERVAL ||
				((fn == F_TIMESTAMPTZ_PL_INTERVAL || fn == F_TIMESTAMPTZ_MI_INTERVAL) &&
				 iv->day != 0))
				*needed = *overflow = true;
		}
		return *overflow ? v : NULL;
	}
	j = d->nsteps++;
	d->fn[j] = fn;
	d->restype = (fn == F_TIMESTAMPTZ_PL_INTERVAL || fn == F_TIMESTAMPTZ_MI_INTERVAL) ?
		TIMESTAMPTZOID : TIMESTAMPOID;
	if (k != NULL)
	{
		Interval   *iv = DatumGetIntervalP(k->constvalue);

		d->time[j] = iv->time;
		d->day[j] = iv->day;
		d->month[j] = iv->month;
		if (iv->month != 0 || fn == F_DATE_PL_INTERVAL || fn == F_DATE_MI_INTERVAL ||
			(d->restype == TIMESTAMPTZOID && iv->day != 0))
			*needed = true;
	}
	return v;
}

/*
 * Compile node as a derived column where it is a column with intervals
 * that the engines cannot add as fixed offsets (SjDeriveChain): PostgreSQL's
 * own functions compute it when the rows are read, so calendar months,
 * days across daylight saving changes (in the session's TimeZone) and the
 * types' range checks are PostgreSQL's.  False where that does not apply.
 */
static bool
SjCompileDerived(SjThetaCompiler *c, Node *node)
{
	SjThetaDerive d;
	bool		needed = false;
	bool		overflow = false;
	Var		   *v;
	int			col;

	memset(&d, 0, sizeof(d));
	v = SjDeriveChain(node, &d, &needed, &overflow);
	if (v == NULL || !needed)
		return false;
	if (overflow)
		SjThetaRefuse(psprintf("more than %d interval steps or casts on one column",
							   SJ_DERIVE_MAX_STEPS));
	col = SjSideColumn(c->sides[v->varno - 1], v->varattno, v->vartype, &d);
	SjEmit(c, v->varno == 1 ? SJ_OP_LOAD_L : SJ_OP_LOAD_R, col, 0, 0);
	return true;
}

/*
 * Text ranks are ordered under one collation: the one of the ordering
 * comparisons, and of equalities under a nondeterministic collation (which
 * merge values that differ in bytes).  Equality under a deterministic
 * collation is byte equality, which ranks under any deterministic collation
 * preserve, so it only requires that the rank collation be deterministic.
 */
static void
SjNoteTextCollation(SjThetaCompiler *c, Oid fn, Oid collid)
{
	if (!OidIsValid(collid))
		SjThetaRefuse("a text comparison whose collation cannot be determined");
	if ((fn == F_TEXTEQ || fn == F_TEXTNE) && get_collation_isdeterministic(collid))
		c->have_text_byte_eq = true;
	else
	{
		if (c->have_text_order && c->text_collation != collid)
			SjThetaRefuse("text comparisons under different collations");
		c->text_collation = collid;
		c->have_text_order = true;
	}
	if (c->have_text_order && c->have_text_byte_eq &&
		!get_collation_isdeterministic(c->text_collation))
		SjThetaRefuse("text equality under a deterministic collation together with "
					  "comparisons under a nondeterministic one");
}

/* Is a date or timestamp constant infinite? */
static bool
SjConstInfinite(Const *k)
{
	if (k->constisnull)
		return false;
	if (k->consttype == DATEOID)
		return DATE_NOT_FINITE(DatumGetDateADT(k->constvalue));
	if (k->consttype == TIMESTAMPOID || k->consttype == TIMESTAMPTZOID)
		return TIMESTAMP_NOT_FINITE(DatumGetTimestamp(k->constvalue));
	return false;
}

/*
 * Date and timestamp arithmetic runs as int64 arithmetic in the engines,
 * which know neither infinity nor the types' ranges.  Record how far the
 * condition's constants can shift a value, so that SjThetaCheckTemporal can
 * make sure no row comes near infinity or a range limit (where PostgreSQL
 * would keep infinity or raise an error); refuse what cannot be bounded.
 */
static void
SjTemporalOperands(SjThetaCompiler *c, Oid fn, List *args)
{
	ListCell   *lc;

	foreach(lc, args)
	{
		Node	   *arg = lfirst(lc);

		if (IsA(arg, Const) && SjConstInfinite((Const *) arg))
			SjThetaRefuse("date/time arithmetic on an infinite constant");
	}
	if (fn == F_DATE_PLI || fn == F_DATE_MII)
	{
		Node	   *days = lsecond(args);

		if (!IsA(days, Const))
			SjThetaRefuse("date arithmetic with a non-constant number of days");
		if (!((Const *) days)->constisnull)
			c->shift_days += Abs((int64) DatumGetInt32(((Const *) days)->constvalue));
	}
	else if (fn != F_DATE_MI && fn != F_TIMESTAMP_DATE)
	{
		Node	   *iv = lsecond(args);

		if (IsA(iv, Const) && !((Const *) iv)->constisnull &&
			((Const *) iv)->consttype == INTERVALOID)
		{
			Interval   *v = DatumGetIntervalP(((Const *) iv)->constvalue);
			int64		us;

			if (pg_mul_s64_overflow((int64) v->day, USECS_PER_DAY, &us) ||
				pg_add_s64_overflow(us, v->time, &us) || us == PG_INT64_MIN ||
				pg_add_s64_overflow(c->shift_usecs, Abs(us), &c->shift_usecs))
				SjThetaRefuse("intervals this large");
		}
	}
}

/*
 * The value just compiled is an operand of the engines' date/time
 * arithmetic: where it is a derived column (whose values PostgreSQL
 * computed, infinity included), SjThetaCheckTemporal must check it too.
 * Other derived columns are only compared, which int64 order does exactly.
 */
static void
SjNoteArithOperand(SjThetaCompiler *c)
{
	const SjThetaInstr *in;

	if (c->ninstr == 0)
		return;
	in = &c->instr[c->ninstr - 1];
	if (in->op == SJ_OP_LOAD_L || in->op == SJ_OP_LOAD_R)
		c->sides[in->op == SJ_OP_LOAD_L ? 0 : 1]->cols[in->arg].arith = true;
}

/*
 * A numeric constant as mantissa / 10^scale with the fewest digits (with
 * keep_scale, at its display scale); false where it is NaN or infinite or
 * has more than SJ_NUM_MAX_DIGITS digits.
 */
static bool
SjNumericMultiplier(Datum num, bool keep_scale, int64 *mantissa, int *scale)
{
	int			k;
	Datum		m;

	if (numeric_is_nan(DatumGetNumeric(num)) || numeric_is_inf(DatumGetNumeric(num)))
		return false;
	k = DatumGetInt32(DirectFunctionCall1(numeric_scale, num));
	if (k > SJ_NUM_MAX_DIGITS)
		return false;
	m = DirectFunctionCall2(numeric_mul, num,
							NumericGetDatum(int64_to_numeric(sj_num_pow10(k))));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, DirectFunctionCall1(numeric_abs, m),
										  NumericGetDatum(int64_to_numeric(sj_num_pow10(SJ_NUM_MAX_DIGITS))))) >= 0)
		return false;
	*mantissa = DatumGetInt64(DirectFunctionCall1(numeric_int8, m));
	while (!keep_scale && k > 0 && *mantissa % 10 == 0)
	{
		*mantissa /= 10;
		k--;
	}
	*scale = k;
	return true;
}

/* After a numeric value is pushed: widen it where the condition divides. */
static void
SjWidenNumeric(SjThetaCompiler *c)
{
	if (c->numeric_wide)
		SjEmit(c, SJ_OP_WIDEN_N, 0, 0, 0);	/* the scale: SjNumericWide */
}

/* Does the condition divide a numeric? */
static bool
SjHasNumericDiv(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, OpExpr))
		set_opfuncid((OpExpr *) node);
	if ((IsA(node, OpExpr) && ((OpExpr *) node)->opfuncid == F_NUMERIC_DIV) ||
		(IsA(node, FuncExpr) && ((FuncExpr *) node)->funcid == F_NUMERIC_DIV))
		return true;
	return expression_tree_walker(node, SjHasNumericDiv, context);
}

/* Compile a whole condition (a boolean). */
void
SjCompileCondition(SjThetaCompiler *c, Node *cond)
{
	c->numeric_wide = SjHasNumericDiv(cond, NULL);
	SjCompileBool(c, cond);
}

/*
 * Compile numeric + - * / and unary minus into fixed-point arithmetic
 * (sjnumeric.h).  A product or quotient needs a constant factor or divisor.
 */
static SjValType
SjCompileNumeric(SjThetaCompiler *c, Oid fn, List *args, const char *what)
{
	const SjFnMap *m = SjFnLookup(fn);
	Node	   *x = linitial(args);
	Node	   *y = list_length(args) > 1 ? lsecond(args) : NULL;
	bool		wide = c->numeric_wide;

	c->numeric_arith = true;
	if (fn == F_NUMERIC_MUL || fn == F_NUMERIC_DIV)
	{
		Const	   *k;
		int64		mantissa;
		int			scale;

		if (fn == F_NUMERIC_MUL && !IsA(y, Const) && IsA(x, Const))
		{
			Node	   *t = x;

			x = y;
			y = t;
		}
		if (!IsA(y, Const))
			SjThetaRefuse(fn == F_NUMERIC_MUL ?
						  "numeric multiplication without a constant factor" :
						  "numeric division by anything but a constant");
		k = (Const *) y;
		if (SjCompileValue(c, x) != SJ_V_RANK)
			SjThetaRefuse(what);
		if (k->constisnull)
		{
			/* x * NULL and x / NULL are NULL */
			c->numeric_null = true;
			SjEmit(c, SJ_OP_CONST_NULL, SJ_TI64, 0, 0);
			SjWidenNumeric(c);
			SjEmit(c, wide ? SJ_OP_ADD_W : SJ_OP_ADD_N, 0, 0, 0);
			return SJ_V_RANK;
		}
		if (!SjNumericMultiplier(k->constvalue, wide, &mantissa, &scale))
			SjThetaRefuse(psprintf("numeric %s by %s",
								   fn == F_NUMERIC_MUL ? "multiplication" : "division",
								   DatumGetCString(DirectFunctionCall1(numeric_out,
																	   k->constvalue))));
		if (fn == F_NUMERIC_DIV)
			SjEmit(c, SJ_OP_DIV_W, SJ_DIVW_ARG(0, scale, 0), mantissa, 0);
		else if (wide)
			SjEmit(c, SJ_OP_MUL_W, scale, mantissa, 0);
		else
		{
			c->numeric_mul_scale += scale;
			SjEmit(c, SJ_OP_MUL_N, scale, mantissa, 0);
		}
		return SJ_V_RANK;
	}
	if (SjCompileValue(c, x) != SJ_V_RANK)
		SjThetaRefuse(what);
	if (y != NULL && SjCompileValue(c, y) != SJ_V_RANK)
		SjThetaRefuse(what);
	if (m->op != 0)
		SjEmit(c, !wide ? m->op : m->op == SJ_OP_ADD_N ? SJ_OP_ADD_W :
			   m->op == SJ_OP_SUB_N ? SJ_OP_SUB_W : SJ_OP_NEG_W, 0, 0, 0);
	return SJ_V_RANK;
}

/*
 * A cast of an integer or float column to numeric: the column is read as
 * its type and converted by PostgreSQL's cast once read (SjNumericCasts),
 * then ranked or made fixed point with the other numerics.
 */
static SjValType
SjCompileNumericCast(SjThetaCompiler *c, Node *arg, const char *what)
{
	Var		   *v;
	SjThetaSide *side;
	int			i;

	while (IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	v = (Var *) arg;
	if (!IsA(arg, Var) || v->varlevelsup != 0 || v->varno < 1 || v->varno > 2 ||
		v->varattno <= 0)
		SjThetaRefuse(psprintf("%s of anything but a column", what));
	side = c->sides[v->varno - 1];
	for (i = 0; i < side->ncols; i++)
		if (side->cols[i].attnum == v->varattno && side->cols[i].to_numeric)
			break;
	if (i == side->ncols)
	{
		int			before = side->ncols;

		i = SjSideColumn(side, v->varattno, v->vartype, NULL);
		if (side->ncols == before)
		{
			/* the column is read as it is too: a second entry for the cast */
			if (side->ncols >= SJ_THETA_MAX_COLS)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("theta_join condition reads too many columns"),
						 errdetail("At most %d columns of each side are supported.", SJ_THETA_MAX_COLS)));
			side->cols[side->ncols] = side->cols[i];
			i = side->ncols++;
		}
		side->cols[i].to_numeric = true;
		side->cols[i].valtype = NUMERICOID;
		/* the precision of the values cast, for SjNumericFixAll's proof */
		side->cols[i].typmod = v->vartype == INT2OID ? ((5 << 16) | 0) + VARHDRSZ :
			v->vartype == INT4OID ? ((10 << 16) | 0) + VARHDRSZ :
			v->vartype == INT8OID ? ((19 << 16) | 0) + VARHDRSZ : -1;
	}
	SjEmit(c, v->varno == 1 ? SJ_OP_LOAD_L : SJ_OP_LOAD_R, i, 0, 0);
	SjWidenNumeric(c);
	return SJ_V_RANK;
}

/*
 * Two numeric leaves compared where the condition divides, each pushed and
 * widened (the second from instruction b0): compare them as they are, int64
 * at the common scale, which orders them as their wide values (WIDEN_N is
 * monotonic, sentinels included), so that hash and range plans see plain
 * column loads.
 */
static void
SjUnwidenLeaves(SjThetaCompiler *c, int b0)
{
	ListCell   *lc;

	c->instr[b0 - 1] = c->instr[b0];
	foreach(lc, c->rank_consts)
	{
		SjRankConst *rc = lfirst(lc);

		if (rc->instr == b0)
			rc->instr = b0 - 1;
	}
	c->ninstr -= 2;
}

/* Compile a call of a built-in function (operator or cast). */
static SjValType
SjCompileCall(SjThetaCompiler *c, Node *node, Oid fn, List *args,
			  Oid inputcollid, const char *what)
{
	const SjFnMap *m = SjFnLookup(fn);
	SjValType	a,
				b;
	int			a0,
				b0;

	if (m == NULL)
		SjThetaRefuse(what);
	switch (m->cls)
	{
		case 'u':
			a = SjCompileValue(c, linitial(args));
			SjEmit(c, m->op, m->arg, 0, 0);
			return a;
		case 'k':
			a = SjCompileValue(c, linitial(args));
			if (m->op != 0)
			{
				SjEmit(c, m->op, m->arg, 0, 0);
				return SJ_V_FLOAT;
			}
			return a;
		case 'a':
			a = SjCompileValue(c, linitial(args));
			b = SjCompileValue(c, lsecond(args));
			if (a == SJ_V_RANK || b == SJ_V_RANK || a == SJ_V_BOOLINT || b == SJ_V_BOOLINT)
				SjThetaRefuse(what);
			SjEmit(c, m->op, m->arg, 0, 0);
			return a;
		case 'b':
			SjCompileBoolOperand(c, linitial(args));
			SjCompileBoolOperand(c, lsecond(args));
			SjEmit(c, m->op, 0, 0, 0);
			return SJ_V_BOOL;
		case 'c':
			a = SjCompileValue(c, linitial(args));
			b = SjCompileValue(c, lsecond(args));
			if (a == SJ_V_RANK || b == SJ_V_RANK)
				SjThetaRefuse(what);
			SjEmit(c, m->op, 0, 0, 0);
			return SJ_V_BOOL;
		case 'r':
			if (fn == F_TEXT_LT || fn == F_TEXT_LE || fn == F_TEXT_GT || fn == F_TEXT_GE ||
				fn == F_TEXTEQ || fn == F_TEXTNE)
				SjNoteTextCollation(c, fn, inputcollid);
			a0 = c->ninstr;
			a = SjCompileValue(c, linitial(args));
			b0 = c->ninstr;
			b = SjCompileValue(c, lsecond(args));
			if (a != SJ_V_RANK || b != SJ_V_RANK)
				SjThetaRefuse(what);
			if (c->numeric_wide &&
				(fn == F_NUMERIC_EQ || fn == F_NUMERIC_NE || fn == F_NUMERIC_LT ||
				 fn == F_NUMERIC_LE || fn == F_NUMERIC_GT || fn == F_NUMERIC_GE))
			{
				if (b0 - a0 == 2 && c->ninstr - b0 == 2 &&
					c->instr[b0 - 1].op == SJ_OP_WIDEN_N &&
					c->instr[c->ninstr - 1].op == SJ_OP_WIDEN_N)
					SjUnwidenLeaves(c, b0);
				else
				{
					SjEmit(c, m->op - SJ_OP_EQ_I + SJ_OP_EQ_W, 0, 0, 0);
					return SJ_V_BOOL;
				}
			}
			SjEmit(c, m->op, 0, 0, 0);
			return SJ_V_BOOL;
		case 'n':
			return SjCompileNumeric(c, fn, args, what);
		case 'm':
			return SjCompileNumericCast(c, linitial(args), what);
		case 't':
			if (SjCompileDerived(c, node))
				return SJ_V_INT;
			if (fn == F_DATE_PL_INTERVAL || fn == F_DATE_MI_INTERVAL)
				SjThetaRefuse(psprintf("%s other than on a column with constant intervals",
									   what));
			c->temporal_arith = true;
			SjTemporalOperands(c, fn, args);
			if (fn == F_TIMESTAMP_DATE)
			{
				SjCompileValue(c, linitial(args));
				SjNoteArithOperand(c);
				SjEmit(c, SJ_OP_CONST_I, 0, USECS_PER_DAY, 0);
				SjEmit(c, SJ_OP_MUL_I, 64, 0, 0);
				return SJ_V_INT;
			}
			SjCompileValue(c, linitial(args));
			SjNoteArithOperand(c);
			if (fn == F_DATE_PLI || fn == F_DATE_MII || fn == F_DATE_MI)
			{
				SjCompileValue(c, lsecond(args));
				SjNoteArithOperand(c);
			}
			else
			{
				Node	   *iv = lsecond(args);

				if (IsA(iv, Const) && ((Const *) iv)->constisnull)
					SjEmit(c, SJ_OP_CONST_NULL, SJ_TI64, 0, 0);
				else
					SjEmit(c, SJ_OP_CONST_I, 0,
						   SjIntervalMicros(iv, fn == F_TIMESTAMPTZ_PL_INTERVAL ||
											fn == F_TIMESTAMPTZ_MI_INTERVAL), 0);
			}
			SjEmit(c, m->op, m->arg, 0, 0);
			return SJ_V_INT;
	}
	SjThetaRefuse(what);
	return SJ_V_BOOL;			/* not reached */
}

/* Compile a constant. */
static SjValType
SjCompileConst(SjThetaCompiler *c, Const *k)
{
	SjValType	t = SjTypeVal(k->consttype);

	if (k->constisnull)
	{
		SjEmit(c, SJ_OP_CONST_NULL, t == SJ_V_FLOAT ? SJ_TF64 : SJ_TI64, 0, 0);
		if (k->consttype == NUMERICOID)
		{
			c->numeric_null = true;
			SjWidenNumeric(c);
		}
		return t;
	}
	switch (k->consttype)
	{
		case INT2OID:
			SjEmit(c, SJ_OP_CONST_I, 0, DatumGetInt16(k->constvalue), 0);
			break;
		case INT4OID:
		case DATEOID:
			SjEmit(c, SJ_OP_CONST_I, 0, DatumGetInt32(k->constvalue), 0);
			break;
		case INT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			SjEmit(c, SJ_OP_CONST_I, 0, DatumGetInt64(k->constvalue), 0);
			break;
		case BOOLOID:
			SjEmit(c, SJ_OP_CONST_B, 0, DatumGetBool(k->constvalue) ? 1 : 0, 0);
			return SJ_V_BOOL;
		case FLOAT4OID:
			SjEmit(c, SJ_OP_CONST_F, 0, 0, (double) DatumGetFloat4(k->constvalue));
			break;
		case FLOAT8OID:
			SjEmit(c, SJ_OP_CONST_F, 0, 0, DatumGetFloat8(k->constvalue));
			break;
		default:
			{
				/* text or numeric: ranked with the data later */
				SjRankConst *rc = palloc(sizeof(SjRankConst));

				rc->kind = SjTypeKind(k->consttype);
				rc->value = datumCopy(k->constvalue, k->constbyval, k->constlen);
				if (rc->kind == SJ_KIND_TEXT)
					rc->value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(rc->value));
				rc->instr = SjEmit(c, SJ_OP_CONST_I, 0, 0, 0);
				c->rank_consts = lappend(c->rank_consts, rc);
				if (rc->kind == SJ_KIND_NUMERIC)
					SjWidenNumeric(c);
			}
			break;
	}
	return t;
}

/* Compile one node of the analysed condition; returns its value type. */
static SjValType
SjCompile(SjThetaCompiler *c, Node *node)
{
	check_stack_depth();
	switch (nodeTag(node))
	{
		case T_Var:
			{
				Var		   *v = (Var *) node;
				SjThetaSide *side;
				int			col;

				if (v->varlevelsup != 0 || v->varno < 1 || v->varno > 2 || v->varattno <= 0)
					SjThetaRefuse("whole-row or system column references");
				side = c->sides[v->varno - 1];
				col = SjSideColumn(side, v->varattno, v->vartype, NULL);
				side->cols[col].typmod = v->vartypmod;
				SjEmit(c, v->varno == 1 ? SJ_OP_LOAD_L : SJ_OP_LOAD_R, col, 0, 0);
				if (v->vartype == NUMERICOID)
					SjWidenNumeric(c);
				return SjTypeVal(v->vartype);
			}
		case T_Const:
			return SjCompileConst(c, (Const *) node);
		case T_RelabelType:
			return SjCompile(c, (Node *) ((RelabelType *) node)->arg);
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) node;

				set_opfuncid(op);	/* unset where the folding negated NOT */
				return SjCompileCall(c, node, op->opfuncid, op->args, op->inputcollid,
									 SjOpWhat(op));
			}
		case T_FuncExpr:
			{
				FuncExpr   *f = (FuncExpr *) node;

				return SjCompileCall(c, node, f->funcid, f->args, f->inputcollid,
									 SjFuncWhat(f));
			}
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;
				ListCell   *lc;
				bool		first = true;

				if (b->boolop == NOT_EXPR)
				{
					SjCompileBool(c, linitial(b->args));
					SjEmit(c, SJ_OP_NOT, 0, 0, 0);
					return SJ_V_BOOL;
				}
				foreach(lc, b->args)
				{
					SjCompileBool(c, lfirst(lc));
					if (!first)
						SjEmit(c, b->boolop == AND_EXPR ? SJ_OP_AND : SJ_OP_OR, 0, 0, 0);
					first = false;
				}
				return SJ_V_BOOL;
			}
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				if (nt->argisrow)
					SjThetaRefuse("IS NULL on a row");
				SjCompile(c, (Node *) nt->arg);
				SjEmit(c, nt->nulltesttype == IS_NULL ? SJ_OP_IS_NULL : SJ_OP_IS_NOT_NULL, 0, 0, 0);
				return SJ_V_BOOL;
			}
		default:
			break;
	}
	SjRefuseNode(node);
	return SJ_V_BOOL;			/* not reached */
}
