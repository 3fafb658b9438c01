/*
 * theta_join.c
 *		theta_join and theta_join_count: pairs of rows of two relations for
 *		which a boolean condition over their columns is true.
 *
 * The condition text is parsed by PostgreSQL's own parser as a single
 * expression and analysed against the two relations under the aliases "l"
 * and "r", exactly as a join's ON clause would be: names resolve, operators
 * and casts are chosen, and the columns it reads are marked for privilege
 * checking, which ExecCheckRTPerms then enforces.  The text is never pasted
 * into SQL.  Rows are read by marshal.c, so row-level security holds.
 *
 * The analysed tree is compiled into the engines' postfix program
 * (sjtheta.h).  Only a whitelist of nodes and built-in functions is
 * accepted (identified by function OID, never by name); anything else is
 * refused with an error that names the construct.  theta_join checks the
 * tree as parse analysis left it, before constants are folded or SQL
 * functions inlined (SjThetaPrecheck), so no function the caller defined
 * ever runs.  Types map to the
 * engines' two column types:
 *
 *	int2, int4, int8, date (days), timestamp, timestamptz (microseconds),
 *	bool (0/1)						-> int64
 *	float4, float8					-> double
 *	text, numeric					-> int64 ranks: every value of the type
 *									   read by the condition, on either side,
 *									   and every constant of the type, sorted
 *									   together (text under the comparison's
 *									   collation), equal values sharing a rank;
 *									   comparisons of ranks are exactly the
 *									   comparisons of the values.
 *
 * Arithmetic is supported on integer, float, date and timestamp values;
 * text can only be compared.  Numeric + - and * by a constant (and unary
 * minus) run exactly, in the engines' int64 fixed point (sjnumeric.h): with
 * such arithmetic in the condition, every numeric value it reads, on either
 * side, and every numeric constant, is that value times 10^S for one common
 * scale S (the largest scale among them, plus the scales of the constant
 * multipliers), NaN and +-Infinity sentinels; SjNumericFixAll refuses
 * values, or results the condition could compute, that do not fit
 * (22003), and SjThetaCompilable proves the same from the columns' declared
 * precision before the planner offers the custom scan (a parameter, whose
 * value the generic plan does not know, leaves the join to PostgreSQL).  An
 * integer or float column cast to numeric is read as its type and cast by
 * PostgreSQL once read (SjNumericCasts).  Numeric division by a constant,
 * whose quotient PostgreSQL rounds to a scale that depends on each value,
 * makes every numeric value of the condition wide (128-bit fixed point,
 * WIDEN_N and the _W operators): SjNumericWide finds a common scale at least
 * every quotient's select_div_scale() scale and proves that everything fits
 * at it, or refuses (22003).  Timestamp +/- an interval constant
 * that is a fixed number of microseconds runs in the engines as int64
 * arithmetic.  Intervals that are not (months or years; days on
 * timestamptz, which depend on the session's TimeZone; any interval added
 * to a date) are handled as derived columns: a date/timestamp[tz] column of
 * one side with its chain of constant intervals (and date->timestamp casts,
 * SJ_DERIVE_MAX_STEPS steps) is one column of that side (SjThetaDerive),
 * computed by PostgreSQL's own functions (timestamp_pl_interval, ...) as
 * each row is read, so the engines see an ordinary int64 column and the
 * result is exactly PostgreSQL's: a band of months stays a range join.  The
 * derivation travels with the column everywhere a side is built: the serial
 * scan, parallel workers (SjPartSpec.derive, filled by SjThetaPartDescribe;
 * workers inherit the TimeZone) and the custom scan.  A row whose result is
 * out of range is kept with its input and flagged (nulls = 2); once both
 * sides are read, SjThetaDerivedErrors raises PostgreSQL's error for it by
 * computing it again, unless the other side is empty.
 *
 * Why this file is larger than ~1000 lines: the condition compiler (from
 * SjThetaPrecheck to SjNumericWide) and the adapter around the engines
 * (sides, marshalling, parallel parts, the custom scan's entry points) share
 * SjThetaCompiler and SjThetaSide.  The compiler is the seam for a split,
 * once the adapters' method tables (in progress) settle the adapter half.
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_proc.h"
#include "common/int.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "sjgpu.h"
#include "sjnumeric.h"
#include "theta_join.h"

/* How a column's values reach the engine. */
typedef enum SjThetaKind
{
	SJ_KIND_I64,				/* int2/4/8, date, timestamp[tz], bool */
	SJ_KIND_F64,				/* float4, float8 */
	SJ_KIND_TEXT,				/* ranked */
	SJ_KIND_NUMERIC				/* ranked */
} SjThetaKind;

/*
 * A column the condition reads: a column of the relation, or a value derived
 * from one by PostgreSQL's date/time functions (derive.nsteps > 0).
 */
typedef struct SjThetaCol
{
	AttrNumber	attnum;			/* the column read */
	Oid			typid;			/* its type */
	Oid			valtype;		/* the type of the values: typid, or the
								 * derivation's result type */
	SjThetaKind kind;
	SjThetaDerive derive;
	PGFunction	derive_fn[SJ_DERIVE_MAX_STEPS];
	int64	   *ivals;			/* SJ_KIND_I64 and ranked kinds */
	double	   *fvals;			/* SJ_KIND_F64 */
	Datum	   *dvals;			/* ranked kinds, before ranking */
	uint8	   *nulls;			/* 1: NULL; 2: the derivation failed
								 * (ivals holds the value read) */
	bool		any_null;
	bool		any_error;		/* some nulls[i] == 2 */
	bool		arith;			/* derived, and an operand of the engines'
								 * date/time arithmetic */
	int32		typmod;			/* declared typmod (numeric precision) */
	bool		to_numeric;		/* an int or float column cast to numeric:
								 * read as its type, then converted by
								 * SjNumericCasts (kind becomes NUMERIC) */
} SjThetaCol;

#define SJ_DERIVE_FAILED	2	/* nulls[i] of a failed derivation */

/* One side of the join. */
typedef struct SjThetaSide
{
	Oid			relid;
	SjColumn	key;
	int			ncols;
	SjThetaCol	cols[SJ_THETA_MAX_COLS];
	/* scan state */
	size_t		n;
	size_t		cap;
	bool		nokeys;			/* a count: keys checked, not kept */
	int64	   *keys;			/* NULL when nokeys */
} SjThetaSide;

/* A text or numeric constant of the program, ranked with the data. */
typedef struct SjRankConst
{
	int			instr;
	SjThetaKind kind;
	Datum		value;
} SjRankConst;

/* The compiler's state. */
typedef struct SjThetaCompiler
{
	SjThetaSide *sides[2];		/* varno 1 = l, 2 = r */
	SjThetaInstr instr[SJ_THETA_MAX_INSTR];
	int			ninstr;
	List	   *rank_consts;	/* SjRankConst * */
	Oid			text_collation; /* collation of text comparisons */
	bool		have_text_order;
	bool		have_text_byte_eq;	/* equality under a deterministic collation */
	int			depth;			/* stack depth after the last instruction */
	bool		temporal_arith; /* date/timestamp arithmetic in the program */
	int64		shift_days;		/* sum of |day constants| in date arithmetic */
	int64		shift_usecs;	/* sum of |interval constants| */
	bool		numeric_arith;	/* numeric arithmetic: fixed point, not ranks */
	int			numeric_mul_scale;	/* sum of the multipliers' scales */
	bool		numeric_null;	/* a NULL numeric constant: in the planner's
								 * check, a parameter of unknown value */
	bool		numeric_wide;	/* the condition divides a numeric: every
								 * numeric value is wide (sjnumeric.h) */
} SjThetaCompiler;

/* What the engine begin callback and the emitter need. */
typedef struct SjThetaJob
{
	SjThetaTable tables[2];
	SjThetaColumn engine_cols[2][SJ_THETA_MAX_COLS];
	SjThetaProgram program;
	SjThetaSide *sides[2];
	Tuplestorestate *store;
	TupleDesc	desc;
	SjThetaDataError data_error;
} SjThetaJob;

/* Result type of a compiled subexpression. */
typedef enum SjValType
{
	SJ_V_INT,
	SJ_V_FLOAT,
	SJ_V_BOOL,					/* a genuine boolean (TBOOL) */
	SJ_V_BOOLINT,				/* a bool column loaded as 0/1 */
	SJ_V_RANK					/* ranked text or numeric */
} SjValType;

/* Built-in functions the compiler understands. */
typedef struct SjFnMap
{
	Oid			fn;
	int			op;				/* SjThetaOp, or 0 for identity casts */
	int			arg;
	char		cls;			/* 'a' arith, 'c' compare, 'u' unary,
								 * 'k' cast, 'r' ranked compare, 'b' bool
								 * compare, 't' temporal */
} SjFnMap;

#define SJ_ARITH(P, W) \
	{F_##P##PL, SJ_OP_ADD_I, W, 'a'}, {F_##P##MI, SJ_OP_SUB_I, W, 'a'}, \
	{F_##P##MUL, SJ_OP_MUL_I, W, 'a'}, {F_##P##DIV, SJ_OP_DIV_I, W, 'a'}
#define SJ_FARITH(P, W) \
	{F_##P##PL, SJ_OP_ADD_F, W, 'a'}, {F_##P##MI, SJ_OP_SUB_F, W, 'a'}, \
	{F_##P##MUL, SJ_OP_MUL_F, W, 'a'}, {F_##P##DIV, SJ_OP_DIV_F, W, 'a'}
#define SJ_CMPS(P, T, C) \
	{F_##P##EQ, SJ_OP_EQ_##T, 0, C}, {F_##P##NE, SJ_OP_NE_##T, 0, C}, \
	{F_##P##LT, SJ_OP_LT_##T, 0, C}, {F_##P##LE, SJ_OP_LE_##T, 0, C}, \
	{F_##P##GT, SJ_OP_GT_##T, 0, C}, {F_##P##GE, SJ_OP_GE_##T, 0, C}

static const SjFnMap sj_fn_map[] = {
	SJ_ARITH(INT2, 16), SJ_ARITH(INT24, 32), SJ_ARITH(INT42, 32),
	SJ_ARITH(INT4, 32), SJ_ARITH(INT48, 64), SJ_ARITH(INT84, 64),
	SJ_ARITH(INT8, 64), SJ_ARITH(INT28, 64), SJ_ARITH(INT82, 64),
	{F_INT2MOD, SJ_OP_MOD_I, 16, 'a'}, {F_INT4MOD, SJ_OP_MOD_I, 32, 'a'},
	{F_INT8MOD, SJ_OP_MOD_I, 64, 'a'},
	{F_INT2UM, SJ_OP_NEG_I, 16, 'u'}, {F_INT4UM, SJ_OP_NEG_I, 32, 'u'},
	{F_INT8UM, SJ_OP_NEG_I, 64, 'u'},
	SJ_FARITH(FLOAT4, 32), SJ_FARITH(FLOAT48, 64), SJ_FARITH(FLOAT84, 64),
	SJ_FARITH(FLOAT8, 64),
	{F_FLOAT4UM, SJ_OP_NEG_F, 32, 'u'}, {F_FLOAT8UM, SJ_OP_NEG_F, 64, 'u'},
	SJ_CMPS(INT2, I, 'c'), SJ_CMPS(INT24, I, 'c'), SJ_CMPS(INT42, I, 'c'),
	SJ_CMPS(INT4, I, 'c'), SJ_CMPS(INT48, I, 'c'), SJ_CMPS(INT84, I, 'c'),
	SJ_CMPS(INT8, I, 'c'), SJ_CMPS(INT28, I, 'c'), SJ_CMPS(INT82, I, 'c'),
	SJ_CMPS(FLOAT4, F, 'c'), SJ_CMPS(FLOAT48, F, 'c'), SJ_CMPS(FLOAT84, F, 'c'),
	SJ_CMPS(FLOAT8, F, 'c'),
	SJ_CMPS(DATE_, I, 'c'), SJ_CMPS(TIMESTAMP_, I, 'c'), SJ_CMPS(TIMESTAMPTZ_, I, 'c'),
	{F_BOOLEQ, SJ_OP_EQ_I, 0, 'b'}, {F_BOOLNE, SJ_OP_NE_I, 0, 'b'},
	{F_TEXTEQ, SJ_OP_EQ_I, 0, 'r'}, {F_TEXTNE, SJ_OP_NE_I, 0, 'r'},
	{F_TEXT_LT, SJ_OP_LT_I, 0, 'r'}, {F_TEXT_LE, SJ_OP_LE_I, 0, 'r'},
	{F_TEXT_GT, SJ_OP_GT_I, 0, 'r'}, {F_TEXT_GE, SJ_OP_GE_I, 0, 'r'},
	SJ_CMPS(NUMERIC_, I, 'r'),
	/* casts between the engine's representations */
	{F_INT4_INT2, 0, 0, 'k'}, {F_INT8_INT2, 0, 0, 'k'}, {F_INT8_INT4, 0, 0, 'k'},
	{F_FLOAT8_FLOAT4, 0, 0, 'k'},
	{F_FLOAT8_INT2, SJ_OP_I2F, 64, 'k'}, {F_FLOAT8_INT4, SJ_OP_I2F, 64, 'k'},
	{F_FLOAT8_INT8, SJ_OP_I2F, 64, 'k'}, {F_FLOAT4_INT2, SJ_OP_I2F, 32, 'k'},
	{F_FLOAT4_INT4, SJ_OP_I2F, 32, 'k'}, {F_FLOAT4_INT8, SJ_OP_I2F, 32, 'k'},
	/* dates and timestamps */
	{F_DATE_PLI, SJ_OP_ADD_I, 64, 't'}, {F_DATE_MII, SJ_OP_SUB_I, 64, 't'},
	{F_DATE_MI, SJ_OP_SUB_I, 32, 't'},
	{F_TIMESTAMP_PL_INTERVAL, SJ_OP_ADD_I, 64, 't'},
	{F_TIMESTAMP_MI_INTERVAL, SJ_OP_SUB_I, 64, 't'},
	{F_TIMESTAMPTZ_PL_INTERVAL, SJ_OP_ADD_I, 64, 't'},
	{F_TIMESTAMPTZ_MI_INTERVAL, SJ_OP_SUB_I, 64, 't'},
	{F_TIMESTAMP_DATE, SJ_OP_MUL_I, 64, 't'},
	{F_DATE_PL_INTERVAL, 0, 0, 't'}, {F_DATE_MI_INTERVAL, 0, 0, 't'},
	/* numeric arithmetic in fixed point */
	{F_NUMERIC_ADD, SJ_OP_ADD_N, 0, 'n'}, {F_NUMERIC_SUB, SJ_OP_SUB_N, 0, 'n'},
	{F_NUMERIC_MUL, SJ_OP_MUL_N, 0, 'n'}, {F_NUMERIC_UMINUS, SJ_OP_NEG_N, 0, 'n'},
	{F_NUMERIC_UPLUS, 0, 0, 'n'}, {F_NUMERIC_DIV, 0, 0, 'n'},
	{F_NUMERIC_INT2, 0, 0, 'm'}, {F_NUMERIC_INT4, 0, 0, 'm'},
	{F_NUMERIC_INT8, 0, 0, 'm'}, {F_NUMERIC_FLOAT4, 0, 0, 'm'},
	{F_NUMERIC_FLOAT8, 0, 0, 'm'},
};

/* Refuse a construct, naming it. */
static void
SjThetaRefuse(const char *construct)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("theta_join does not support %s in a condition", construct),
			 errhint("Conditions may use comparisons, BETWEEN, AND, OR, NOT, IS [NOT] NULL, "
					 "+ - * / and constants over integer, float, numeric, date, timestamp, "
					 "bool and text columns of l and r.")));
}

/* Look a function up in sj_fn_map. */
static const SjFnMap *
SjFnLookup(Oid fn)
{
	int			i;

	for (i = 0; i < lengthof(sj_fn_map); i++)
		if (sj_fn_map[i].fn == fn)
			return &sj_fn_map[i];
	return NULL;
}

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
static SjThetaKind
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
static bool
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
static void
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

/* The name an operator is refused under: "the operator + for int and int". */
static char *
SjOpWhat(OpExpr *op)
{
	return psprintf("the operator %s for %s",
					get_opname(op->opno),
					list_length(op->args) == 2 ?
					psprintf("%s and %s",
							 format_type_be(exprType(linitial(op->args))),
							 format_type_be(exprType(lsecond(op->args)))) :
					format_type_be(exprType(llast(op->args))));
}

/* The name a function call or cast is refused under. */
static char *
SjFuncWhat(FuncExpr *f)
{
	if (f->funcformat == COERCE_EXPLICIT_CALL)
		return psprintf("the function %s()", get_func_name(f->funcid));
	return psprintf("a cast to %s", format_type_be(f->funcresulttype));
}

/* Refuse a node that no engine evaluates, naming it. */
static void
SjRefuseNode(Node *node)
{
	switch (nodeTag(node))
	{
		case T_SubLink:
			SjThetaRefuse("subqueries");
			break;
		case T_Aggref:
			SjThetaRefuse("aggregate functions");
			break;
		case T_WindowFunc:
			SjThetaRefuse("window functions");
			break;
		case T_CaseExpr:
			SjThetaRefuse("CASE expressions");
			break;
		case T_CoalesceExpr:
			SjThetaRefuse("COALESCE");
			break;
		case T_ScalarArrayOpExpr:
			SjThetaRefuse("IN lists and ANY/ALL");
			break;
		case T_BooleanTest:
			SjThetaRefuse("IS [NOT] TRUE/FALSE/UNKNOWN");
			break;
		case T_DistinctExpr:
			SjThetaRefuse("IS [NOT] DISTINCT FROM");
			break;
		case T_CoerceViaIO:
			SjThetaRefuse(psprintf("a cast to %s",
								   format_type_be(((CoerceViaIO *) node)->resulttype)));
			break;
		case T_CoerceToDomain:
			SjThetaRefuse(psprintf("a cast to the domain %s",
								   format_type_be(((CoerceToDomain *) node)->resulttype)));
			break;
		default:
			break;
	}
	SjThetaRefuse(psprintf("this kind of expression (node %d)", (int) nodeTag(node)));
}

static bool SjThetaPrecheck(Node *node);

/* SjThetaPrecheck over a list of arguments: does any read a column? */
static bool
SjThetaPrecheckArgs(List *args)
{
	ListCell   *lc;
	bool		vars = false;

	foreach(lc, args)
		vars |= SjThetaPrecheck(lfirst(lc));
	return vars;
}

/*
 * Check the condition as the user wrote it, after parse analysis and before
 * any constant folding or inlining, so that nothing the user defined ever
 * runs: only columns, constants, AND/OR/NOT, IS [NOT] NULL, COLLATE and
 * calls of the built-in functions and operators of sj_fn_map (by OID) pass,
 * and, on constants alone, built-in immutable casts (the numeric literal 1.5
 * compared with a float8 column), which the folding then computes.  A
 * user-defined function, operator or cast (an SQL function too, before it
 * could be inlined) and a cast to a domain (whose checks may call functions)
 * are refused with 0A000, naming them.  Returns whether node reads a column.
 */
static bool
SjThetaPrecheck(Node *node)
{
	check_stack_depth();
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Var:
			return true;
		case T_Const:
			return false;
		case T_RelabelType:
			return SjThetaPrecheck((Node *) ((RelabelType *) node)->arg);
		case T_CollateExpr:
			return SjThetaPrecheck((Node *) ((CollateExpr *) node)->arg);
		case T_BoolExpr:
			return SjThetaPrecheckArgs(((BoolExpr *) node)->args);
		case T_NullTest:
			return SjThetaPrecheck((Node *) ((NullTest *) node)->arg);
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) node;

				set_opfuncid(op);
				if (op->opno >= FirstNormalObjectId || op->opfuncid >= FirstNormalObjectId)
					SjThetaRefuse(psprintf("the user-defined operator %s",
										   get_opname(op->opno)));
				if (SjFnLookup(op->opfuncid) == NULL)
					SjThetaRefuse(SjOpWhat(op));
				return SjThetaPrecheckArgs(op->args);
			}
		case T_FuncExpr:
			{
				FuncExpr   *f = (FuncExpr *) node;
				bool		vars;

				if (f->funcid >= FirstNormalObjectId)
					SjThetaRefuse(f->funcformat == COERCE_EXPLICIT_CALL ?
								  psprintf("the user-defined function %s()",
										   get_func_name(f->funcid)) :
								  psprintf("a cast to %s through the user-defined function %s()",
										   format_type_be(f->funcresulttype),
										   get_func_name(f->funcid)));
				vars = SjThetaPrecheckArgs(f->args);
				if (SjFnLookup(f->funcid) == NULL &&
					(vars || f->funcformat == COERCE_EXPLICIT_CALL || f->funcretset ||
					 func_volatile(f->funcid) != PROVOLATILE_IMMUTABLE))
					SjThetaRefuse(SjFuncWhat(f));
				return vars;
			}
		default:
			SjRefuseNode(node);
	}
	return false;				/* not reached */
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

/* Error context: positions refer to the condition, not the calling query. */
static void
SjThetaErrorCallback(void *arg)
{
	const char *condition = (const char *) arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(condition);
	}
	errcontext("theta_join condition");
}

/*
 * Parse the condition as one expression and analyse it against l and r.
 * Checks SELECT privilege on every column it reads.
 */
static Node *
SjThetaAnalyze(Relation lrel, Relation rrel, const char *condition)
{
	List	   *raw;
	RawStmt    *rs;
	SelectStmt *sel;
	ResTarget  *rt;
	ParseState *pstate;
	ParseNamespaceItem *lns,
			   *rns;
	Node	   *expr;
	ErrorContextCallback errcb;

	errcb.callback = SjThetaErrorCallback;
	errcb.arg = (void *) condition;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	raw = raw_parser(condition, RAW_PARSE_PLPGSQL_EXPR);
	if (list_length(raw) != 1)
		SjThetaRefuse("more than one statement");
	rs = linitial_node(RawStmt, raw);
	sel = (SelectStmt *) rs->stmt;
	if (!IsA(sel, SelectStmt) || list_length(sel->targetList) != 1 ||
		sel->fromClause || sel->whereClause || sel->groupClause || sel->havingClause ||
		sel->windowClause || sel->distinctClause || sel->sortClause ||
		sel->limitCount || sel->limitOffset || sel->lockingClause ||
		sel->withClause || sel->intoClause || sel->valuesLists || sel->op != SETOP_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("theta_join condition must be a single boolean expression"),
				 errdetail("Condition: %s", condition)));
	rt = linitial_node(ResTarget, sel->targetList);
	if (rt->name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("theta_join condition must be a single boolean expression"),
				 errdetail("Condition: %s", condition)));

	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = condition;
	lns = addRangeTableEntryForRelation(pstate, lrel, AccessShareLock,
										makeAlias("l", NIL), true, true);
	rns = addRangeTableEntryForRelation(pstate, rrel, AccessShareLock,
										makeAlias("r", NIL), true, true);
	addNSItemToQuery(pstate, lns, false, true, true);
	addNSItemToQuery(pstate, rns, false, true, true);

	expr = transformExpr(pstate, rt->val, EXPR_KIND_JOIN_ON);
	expr = coerce_to_boolean(pstate, expr, "theta_join condition");
	assign_expr_collations(pstate, expr);
	/* nothing is folded, inlined or run before the whole tree is checked */
	SjThetaPrecheck(expr);
	/* fold constant subexpressions (casts of literals), as the planner would */
	expr = eval_const_expressions(NULL, expr);

	error_context_stack = errcb.previous;

	/* SELECT privilege on every column the condition reads */
	ExecCheckRTPerms(pstate->p_rtable, true);
	free_parsestate(pstate);
	return expr;
}

/* Row callback: keep one row's key and condition columns. */
static void
SjThetaRow(void *arg, Datum *values, bool *isnull)
{
	SjThetaSide *side = (SjThetaSide *) arg;
	size_t		i = side->n;
	int			k;

	if (isnull[0])
		SjErrorNullKey(side->relid, &side->key);
	if (i == side->cap)
	{
		size_t		cap = side->cap;

		if (side->nokeys)
			cap = Max(cap * 2, Max(i + 1, (size_t) 1024));	/* as SjGrow */
		else
			side->keys = SjGrow(side->keys, &cap, i + 1, sizeof(int64));
		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];
			size_t		c2 = side->cap;

			col->nulls = SjGrow(col->nulls, &c2, i + 1, sizeof(uint8));
			c2 = side->cap;
			if (col->kind == SJ_KIND_F64)
				col->fvals = SjGrow(col->fvals, &c2, i + 1, sizeof(double));
			else if (col->kind == SJ_KIND_I64)
				col->ivals = SjGrow(col->ivals, &c2, i + 1, sizeof(int64));
			else
				col->dvals = SjGrow(col->dvals, &c2, i + 1, sizeof(Datum));
		}
		side->cap = cap;
	}
	if (!side->nokeys)
		side->keys[i] = SjKeyValue(values[0], side->key.typid);
	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];
		Datum		d = values[k + 1];

		col->nulls[i] = isnull[k + 1] ? 1 : 0;
		if (col->derive.nsteps > 0 && !isnull[k + 1])
		{
			if (!SjDeriveTry(col, d, &col->ivals[i]))
			{
				/* kept with the value read, for SjThetaDerivedErrors */
				col->nulls[i] = SJ_DERIVE_FAILED;
				col->ivals[i] = col->typid == DATEOID ? DatumGetDateADT(d) : DatumGetInt64(d);
				col->any_error = true;
			}
			continue;
		}
		if (isnull[k + 1])
		{
			col->any_null = true;
			if (col->kind == SJ_KIND_F64)
				col->fvals[i] = 0;
			else if (col->kind == SJ_KIND_I64)
				col->ivals[i] = 0;
			else
				col->dvals[i] = (Datum) 0;
			continue;
		}
		switch (col->typid)
		{
			case INT2OID:
				col->ivals[i] = DatumGetInt16(d);
				break;
			case INT4OID:
			case DATEOID:
				col->ivals[i] = DatumGetInt32(d);
				break;
			case BOOLOID:
				col->ivals[i] = DatumGetBool(d) ? 1 : 0;
				break;
			case INT8OID:
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				col->ivals[i] = DatumGetInt64(d);
				break;
			case FLOAT4OID:
				col->fvals[i] = (double) DatumGetFloat4(d);
				break;
			case FLOAT8OID:
				col->fvals[i] = DatumGetFloat8(d);
				break;
			default:
				{
					/* text or numeric: a detoasted copy in the side's context */
					MemoryContext rowcxt = MemoryContextSwitchTo(GetMemoryChunkContext(col->nulls));
					struct varlena *v = PG_DETOAST_DATUM_COPY(d);

					MemoryContextSwitchTo(rowcxt);
					col->dvals[i] = PointerGetDatum(v);
				}
				break;
		}
	}
	side->n++;
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
static void
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
			case SJ_OP_LOAD_L:
			case SJ_OP_LOAD_R:
			case SJ_OP_CONST_I:
			case SJ_OP_CONST_F:
			case SJ_OP_CONST_B:
			case SJ_OP_CONST_NULL:
				stack[sp++] = leaf[i];
				continue;
			case SJ_OP_NEG_I:
			case SJ_OP_NEG_F:
			case SJ_OP_I2F:
			case SJ_OP_NOT:
			case SJ_OP_IS_NULL:
			case SJ_OP_IS_NOT_NULL:
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
			case SJ_OP_LOAD_L:
			case SJ_OP_LOAD_R:
			case SJ_OP_CONST_I:
			case SJ_OP_CONST_F:
			case SJ_OP_CONST_B:
			case SJ_OP_CONST_NULL:
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
static void
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

/*
 * With numeric arithmetic in the condition: the common scale, every
 * numeric value read and every numeric constant as fixed point, and the
 * proof that no result overflows (sjnumeric.h).  From the data read (the
 * values then replace their Datums), or, with static, from the columns'
 * declared precision alone: refused where a column has none.
 */
static void
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
	size_t		r;
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
			SjThetaSide *side = c->sides[s];
			SjThetaCol *col = &side->cols[k];
			int			p = 0,
						sc = 0;

			dsmin[s][k] = INT_MAX;
			dsmax[s][k] = 0;
			if (col->kind != SJ_KIND_NUMERIC && !col->to_numeric)
				continue;
			if (!from_data)
			{
				if (!SjNumericTypmod(col->typmod, &p, &sc))
					SjThetaRefuse("numeric arithmetic over numeric values without a declared precision");
				scale = Max(scale, sc);
				dsmin[s][k] = dsmax[s][k] = Max(sc, 0);
				continue;
			}
			for (r = 0; r < side->n; r++)
				if (!col->nulls[r])
				{
					int			ds = SjNumericScale(col->dvals[r]);

					scale = Max(scale, ds);
					if (ds >= 0)
					{
						dsmin[s][k] = Min(dsmin[s][k], ds);
						dsmax[s][k] = Max(dsmax[s][k], ds);
					}
				}
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
			SjThetaSide *side = c->sides[s];
			SjThetaCol *col = &side->cols[k];
			int			p = 0,
						sc = 0;

			colmax[s][k] = 0;
			if (col->kind != SJ_KIND_NUMERIC && !col->to_numeric)
				continue;
			if (!from_data)
			{
				(void) SjNumericTypmod(col->typmod, &p, &sc);
				if (p - sc + scale > SJ_NUM_MAX_DIGITS)
					SjThetaRefuse(psprintf("numeric arithmetic over numeric(%d,%d) at scale %d (more than %d digits)",
										   p, sc, scale, SJ_NUM_MAX_DIGITS));
				colmax[s][k] = (uint64) sj_num_pow10(p - sc + scale) - 1;
				continue;
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
					colmax[s][k] = Max(colmax[s][k], (uint64) Abs(v));
			}
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
static void
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
static void
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

/* The engines' entry points (sjrun.h). */
SJ_ENGINE_INDEX(SjThetaJoin, sj_theta_cpu);
SJ_ENGINE(SjGpuThetaJoin, sjgpu_theta);

/* SjOperatorMethods.begin: start the CPU or GPU engine. */
static SjStatus
SjThetaBegin(void *arg, bool gpu, const SjJoinOptions *options, SjRun *run,
			 char *errmsg)
{
	SjThetaJob *job = (SjThetaJob *) arg;

	run->op = SJ_OP_THETA;
	if (gpu)
	{
		SjGpuThetaJoin *h = NULL;
		SjStatus	s = sjgpu_theta_begin(&job->tables[0], &job->tables[1], &job->program,
										  SJ_THETA_AUTO, options, &h, errmsg);

		run->handle = h;
		run->engine = &sjgpu_theta_engine;
		return s;
	}
	else
	{
		SjThetaJoin *h = NULL;
		SjStatus	s = sj_theta_cpu_begin(&job->tables[0], &job->tables[1], &job->program,
										   SJ_THETA_AUTO, options, &h, errmsg);

		run->handle = h;
		run->engine = &sj_theta_cpu_engine;
		return s;
	}
}

/* SjOperatorMethods.emit: one tuple per pair, keys in place of row indices. */
static void
SjThetaEmit(void *arg, const SjPairBatch *batch)
{
	SjThetaJob *job = (SjThetaJob *) arg;

	SjEmitKeyPairs(job->store, job->desc, job->sides[0]->keys, job->sides[1]->keys,
				   false, batch);
}

/* EXPLAIN's strategy of a theta join: the planned one (SjThetaStrategy). */
static const char *
SjThetaStrategyName(bool gpu, int planned)
{
	static const char *const names[] = {"auto", "hash", "range", "nested loop"};

	return names[Max(0, Min(3, planned))];
}

/* The theta join's methods (sjrun.h). */
const SjOperatorMethods sj_theta_methods = {
	"theta_join", SjThetaBegin, SjThetaEmit, NULL, SjThetaStrategyName
};


/* Allocate a side's buffers for the columns the condition reads. */
static void
SjThetaSideAlloc(SjThetaSide *side)
{
	int			k,
				j;

	side->cap = 1024;
	if (!side->nokeys)
		side->keys = palloc_extended(side->cap * sizeof(int64), MCXT_ALLOC_HUGE);
	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];

		for (j = 0; j < col->derive.nsteps; j++)
		{
			FmgrInfo	flinfo;

			fmgr_info(col->derive.fn[j], &flinfo);
			col->derive_fn[j] = flinfo.fn_addr;
		}
		col->nulls = palloc_extended(side->cap, MCXT_ALLOC_HUGE);
		if (col->kind == SJ_KIND_F64)
			col->fvals = palloc_extended(side->cap * sizeof(double), MCXT_ALLOC_HUGE);
		else if (col->kind == SJ_KIND_I64)
			col->ivals = palloc_extended(side->cap * sizeof(int64), MCXT_ALLOC_HUGE);
		else
			col->dvals = palloc_extended(side->cap * sizeof(Datum), MCXT_ALLOC_HUGE);
	}
}

/* The columns to read of a side: the key, then the condition's columns. */
static void
SjThetaColumns(SjThetaSide *side, SjColumn *cols)
{
	int			k;

	cols[0] = side->key;
	for (k = 0; k < side->ncols; k++)
	{
		cols[k + 1].name = get_attname(side->relid, side->cols[k].attnum, false);
		cols[k + 1].attnum = side->cols[k].attnum;
		cols[k + 1].typid = side->cols[k].typid;
		cols[k + 1].typmod = -1;
	}
}

/* Merge the workers' parts of a side that was read, and check its size. */
static void
SjThetaSideFinish(SjThetaSide *side, SjParts *parts)
{
	double		t0 = sj_now_ms();

	SjThetaSideAddParts(side, parts);
	if (parts)
		elog(DEBUG2, "simjoin: merged %d parts of \"%s\" in %.1f ms",
			 parts->nparts, get_rel_name(side->relid), sj_now_ms() - t0);
	SjPartsRelease(parts);
	if (side->n > (size_t) UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("relation \"%s\" has too many rows for theta_join",
						get_rel_name(side->relid))));
}

/*
 * Scan both sides (together where parallel workers read them).  Returns
 * the parallel workers that read them.
 */
static int
SjThetaMarshal(SjThetaSide **sides)
{
	SjColumn	cols[2][SJ_THETA_MAX_COLS + 1];
	Oid			relids[2];
	int			ncols[2];
	const SjColumn *colp[2];
	const char *what[2] = {"", ""};
	SjParts    *parts[2];
	int			workers;
	int			s;

	for (s = 0; s < 2; s++)
	{
		SjThetaColumns(sides[s], cols[s]);
		SjThetaSideAlloc(sides[s]);
		relids[s] = sides[s]->relid;
		ncols[s] = sides[s]->ncols + 1;
		colp[s] = cols[s];
	}
	if (SjScanRelationPair(relids, ncols, colp, SJ_PART_THETA, (void **) sides, what, parts))
	{
		workers = Max(parts[0]->workers, parts[1]->workers);
		for (s = 0; s < 2; s++)
			SjThetaSideFinish(sides[s], parts[s]);
		return workers;
	}
	/* one side after the other, each merged and released before the next */
	workers = 0;
	for (s = 0; s < 2; s++)
	{
		parts[s] = SjScanRelation(relids[s], ncols[s], colp[s], SJ_PART_THETA,
								  sides[s], what[s]);
		workers = Max(workers, parts[s] ? parts[s]->workers : 0);
		SjThetaSideFinish(sides[s], parts[s]);
	}
	return workers;
}

/*
 * A side as a parallel worker sends it (SjThetaPartWrite): this header, the
 * keys, then each column's values (8 bytes each) and NULL flags.  Workers
 * build sides without text or numeric columns only (SjPartTypesOk).
 */
typedef struct SjThetaPartHeader
{
	uint64		n;
	int32		ncols;
	uint8		flags[SJ_THETA_MAX_COLS];	/* SJ_PART_ANY_* */
	int32		nokeys;			/* no keys follow the header */
} SjThetaPartHeader;

#define SJ_PART_ANY_NULL	1
#define SJ_PART_ANY_ERROR	2

/* Spec of a worker's side: how its columns are derived (parscan.c). */
void
SjThetaPartDescribe(void *side, SjPartSpec *spec)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	int			k;

	Assert(spec->ncols == sd->ncols + 1);
	for (k = 0; k < sd->ncols; k++)
		spec->derive[k + 1] = sd->cols[k].derive;
	spec->nokeys = sd->nokeys;
}

#define SJ_ALIGN8(x) (((x) + 7) & ~((Size) 7))

/* A parallel worker's side, for the columns of spec (cols[0] the key). */
void *
SjThetaPartBegin(const SjPartSpec *spec)
{
	SjThetaSide *side = palloc0(sizeof(SjThetaSide));
	int			k;

	side->relid = spec->relid;
	side->key.typid = spec->typids[0];
	side->key.name = pstrdup(NameStr(spec->keyname));
	side->ncols = spec->ncols - 1;
	side->nokeys = spec->nokeys;
	for (k = 0; k < side->ncols; k++)
	{
		side->cols[k].attnum = spec->attnums[k + 1];
		side->cols[k].typid = spec->typids[k + 1];
		side->cols[k].derive = spec->derive[k + 1];
		side->cols[k].valtype = spec->derive[k + 1].nsteps > 0 ?
			spec->derive[k + 1].restype : spec->typids[k + 1];
		side->cols[k].kind = SjTypeKind(spec->typids[k + 1]);
	}
	SjThetaSideAlloc(side);
	return side;
}

/* Row function of a side: values[0] the key, then the side's columns. */
void
SjThetaPartRow(void *arg, Datum *values, bool *isnull)
{
	SjThetaRow(arg, values, isnull);
}

/* Bytes of a worker's side in the part format. */
Size
SjThetaPartSize(void *side)
{
	SjThetaSide *sd = (SjThetaSide *) side;

	return sizeof(SjThetaPartHeader) + (sd->nokeys ? 0 : sd->n * sizeof(int64)) +
		sd->ncols * (sd->n * 8 + SJ_ALIGN8(sd->n));
}

/* Serialize a worker's side into dst (SjThetaPartSize bytes). */
void
SjThetaPartWrite(void *side, char *dst)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	SjThetaPartHeader *h = (SjThetaPartHeader *) dst;
	char	   *p = (char *) (h + 1);
	int			k;

	memset(h, 0, sizeof(*h));
	h->n = sd->n;
	h->ncols = sd->ncols;
	h->nokeys = sd->nokeys;
	if (!sd->nokeys)
	{
		memcpy(p, sd->keys, sd->n * sizeof(int64));
		p += sd->n * sizeof(int64);
	}
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		Assert(col->kind == SJ_KIND_I64 || col->kind == SJ_KIND_F64);
		h->flags[k] = (col->any_null ? SJ_PART_ANY_NULL : 0) |
			(col->any_error ? SJ_PART_ANY_ERROR : 0);
		memcpy(p, col->kind == SJ_KIND_F64 ? (void *) col->fvals : (void *) col->ivals,
			   sd->n * 8);
		p += sd->n * 8;
		memcpy(p, col->nulls, sd->n);
		p += SJ_ALIGN8(sd->n);
	}
}

/* The part format of SJ_PART_THETA sides (parscan.c). */
const SjPartOps sj_theta_part_ops = {SjThetaPartDescribe, SjThetaPartBegin, SjThetaPartRow, SjThetaPartSize, SjThetaPartWrite};

/* One participant's rows as the merge reads them. */
typedef struct SjThetaPiece
{
	size_t		n;
	size_t		offset;			/* of its first row in the merged side */
	const int64 *keys;
	const char *values[SJ_THETA_MAX_COLS];	/* 8 bytes a row */
	const uint8 *nulls[SJ_THETA_MAX_COLS];
} SjThetaPiece;

typedef struct SjThetaMerge
{
	SjThetaPiece *pieces;
	SjMergeTasks tasks;
	int			ncols;
	int64	   *keys;
	char	   *values[SJ_THETA_MAX_COLS];
	uint8	   *nulls[SJ_THETA_MAX_COLS];
} SjThetaMerge;

#define SJ_THETA_MERGE_BLOCK	262144	/* rows a merge task copies */

/* Merge task: one block of one piece, every column. */
static void
SjThetaMergeTask(void *arg, uint64_t task, int worker)
{
	SjThetaMerge *m = (SjThetaMerge *) arg;
	size_t		first,
				len;
	int			p = SjMergeTaskPiece(&m->tasks, task, &first);
	const SjThetaPiece *pc = &m->pieces[p];
	int			k;

	len = Min(first + SJ_THETA_MERGE_BLOCK, pc->n) - first;
	if (m->keys)
		memcpy(m->keys + pc->offset + first, pc->keys + first, len * sizeof(int64));
	for (k = 0; k < m->ncols; k++)
	{
		memcpy(m->values[k] + (pc->offset + first) * 8, pc->values[k] + first * 8, len * 8);
		memcpy(m->nulls[k] + pc->offset + first, pc->nulls[k] + first, len);
	}
}

/*
 * Add to side the rows of parts that parallel workers built (NULL: none),
 * after its own.
 */
void
SjThetaSideAddParts(void *side, const SjParts *parts)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	SjThetaMerge m;
	size_t		n = sd->n;
	int			p,
				k;

	if (parts == NULL || parts->nparts == 0)
		return;
	memset(&m, 0, sizeof(m));
	m.ncols = sd->ncols;
	m.pieces = palloc0((parts->nparts + 1) * sizeof(SjThetaPiece));
	m.pieces[0].n = sd->n;
	m.pieces[0].keys = sd->keys;
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		m.pieces[0].values[k] = col->kind == SJ_KIND_F64 ? (char *) col->fvals : (char *) col->ivals;
		m.pieces[0].nulls[k] = col->nulls;
	}
	for (p = 0; p < parts->nparts; p++)
	{
		const SjThetaPartHeader *h = (const SjThetaPartHeader *) parts->part[p];
		SjThetaPiece *pc = &m.pieces[p + 1];
		const char *ptr = (const char *) (h + 1);

		Assert(h->ncols == sd->ncols && h->nokeys == sd->nokeys);
		pc->n = h->n;
		pc->offset = n;
		if (!sd->nokeys)
		{
			pc->keys = (const int64 *) ptr;
			ptr += h->n * sizeof(int64);
		}
		for (k = 0; k < sd->ncols; k++)
		{
			pc->values[k] = ptr;
			ptr += h->n * 8;
			pc->nulls[k] = (const uint8 *) ptr;
			ptr += SJ_ALIGN8(h->n);
			if (h->flags[k] & SJ_PART_ANY_NULL)
				sd->cols[k].any_null = true;
			if (h->flags[k] & SJ_PART_ANY_ERROR)
				sd->cols[k].any_error = true;
		}
		n += h->n;
	}
	m.keys = sd->nokeys ? NULL : SjAllocLarge(n * sizeof(int64));
	for (k = 0; k < sd->ncols; k++)
	{
		m.values[k] = SjAllocLarge(n * 8);
		m.nulls[k] = SjAllocLarge(n);
	}
	SjMergeTasksInit(&m.tasks, parts->nparts + 1, m.pieces, sizeof(SjThetaPiece),
						 SJ_THETA_MERGE_BLOCK);
	SjParallelCopy(m.tasks.first[parts->nparts + 1], SjThetaMergeTask, &m);
	pfree(m.tasks.first);

	if (sd->keys)
		pfree(sd->keys);
	sd->keys = m.keys;
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		pfree((void *) m.pieces[0].values[k]);
		pfree(col->nulls);
		if (col->kind == SJ_KIND_F64)
			col->fvals = (double *) m.values[k];
		else
			col->ivals = (int64 *) m.values[k];
		col->nulls = m.nulls[k];
	}
	sd->n = n;
	sd->cap = Max(n, 1);
	pfree(m.pieces);
}

/* The engine's view of one side. */
static void
SjThetaTableInit(SjThetaJob *job, int s)
{
	SjThetaSide *side = job->sides[s];
	int			k;

	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];
		SjThetaColumn *ec = &job->engine_cols[s][k];

		ec->type = col->kind == SJ_KIND_F64 ? SJ_TF64 : SJ_TI64;
		ec->values = col->kind == SJ_KIND_F64 ? (const void *) col->fvals : (const void *) col->ivals;
		ec->nulls = col->any_null ? col->nulls : NULL;
	}
	job->tables[s].n = (uint32_t) side->n;
	job->tables[s].ncols = side->ncols;
	job->tables[s].cols = job->engine_cols[s];
}

/* The engines' view of the compiled program and sides, and their plan. */
static SjStatus
SjThetaPlanJob(SjThetaCompiler *comp, SjThetaJob *job, SjThetaPlan *plan,
			   char *errmsg)
{
	job->sides[0] = comp->sides[0];
	job->sides[1] = comp->sides[1];
	job->program.ninstr = comp->ninstr;
	job->program.instr = comp->instr;
	SjThetaTableInit(job, 0);
	SjThetaTableInit(job, 1);
	return sj_theta_plan(&job->program, &job->tables[0], &job->tables[1],
						 SJ_THETA_AUTO, plan, errmsg);
}

/*
 * Drop the rows set aside (aside, NULL: none) from a side; returns the
 * input row (key, or place) of each row kept.
 */
static int64 *
SjThetaSideCompact(SjThetaSide *side, const bool *aside)
{
	int64	   *map = palloc_extended(Max(side->n, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	size_t		i,
				m = 0;
	int			k;

	for (i = 0; i < side->n; i++)
	{
		if (aside && aside[i])
			continue;
		map[m] = side->nokeys ? (int64) i : side->keys[i];
		if (!side->nokeys)
			side->keys[m] = side->keys[i];
		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];

			col->nulls[m] = col->nulls[i];
			if (col->kind == SJ_KIND_F64)
				col->fvals[m] = col->fvals[i];
			else if (col->kind == SJ_KIND_I64)
				col->ivals[m] = col->ivals[i];
			else
				col->dvals[m] = col->dvals[i];
		}
		m++;
	}
	side->n = m;
	return map;
}

/*
 * After both sides are read: check date/time ranges (setting the custom
 * scan's inexact rows aside, maps[s] then giving the input row of each row
 * the engines see), rank text and numeric values jointly, give the engines
 * their view of the data and plan the strategy.
 */
static void
SjThetaJobInit(SjThetaCompiler *comp, SjThetaJob *job, SjThetaPlan *plan,
			   bool **aside, int64 **maps)
{
	char		errmsg[SJ_ERRMSG_LEN] = "";
	SjStatus	status;
	int			s;

	SjThetaDerivedErrors(comp);
	SjThetaCheckTemporal(comp, aside);
	if (aside[0] || aside[1])
		for (s = 0; s < 2; s++)
			maps[s] = SjThetaSideCompact(comp->sides[s], aside[s]);
	SjRankAll(comp, SJ_KIND_TEXT);
	SjNumericCasts(comp);
	if (comp->numeric_arith)
		SjNumericFixAll(comp, true);
	else
		SjRankAll(comp, SJ_KIND_NUMERIC);
	status = SjThetaPlanJob(comp, job, plan, errmsg);
	SjReportStatus(status, errmsg, "theta_join");
	elog(DEBUG1, "simjoin: theta_join strategy %s (%d instructions)",
		 plan->description, comp->ninstr);
}

/* ---------------------------------------------------------------------
 * The custom scan's door: a condition already analysed by the planner,
 * whose Vars are varno 1 (left) or 2 (right) with varattno the 1-based
 * position of the value in the row the caller hands to SjThetaAddRow.
 * --------------------------------------------------------------------- */
struct SjThetaPrepared
{
	SjThetaSide sides[2];
	SjThetaCompiler comp;
	SjThetaJob	job;
	SjThetaPlan plan;
	bool	   *aside[2];		/* rows set aside by SjThetaCheckTemporal */
	int64	   *maps[2];		/* engine row -> input row, where any are */
};

/*
 * Can the engines evaluate cond?  Compiles it into a scratch context;
 * on refusal returns false with the reason in *why (when why is given).
 */
bool
SjThetaCompilable(Node *cond, int *strategy, char **why)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "simjoin theta check",
											  ALLOCSET_SMALL_SIZES);
	volatile bool ok = true;
	char		errmsg[SJ_ERRMSG_LEN] = "";

	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		SjThetaPrepared *tp = palloc0(sizeof(SjThetaPrepared));
		SjStatus	status;

		tp->comp.sides[0] = &tp->sides[0];
		tp->comp.sides[1] = &tp->sides[1];
		SjCompileCondition(&tp->comp, cond);
		/* numeric arithmetic: provably exact from the declared precisions */
		if (tp->comp.numeric_arith)
			SjNumericFixAll(&tp->comp, false);
		/* plan it as the engines would; no rows yet (n = 0): the strategy
		 * depends on the program */
		status = SjThetaPlanJob(&tp->comp, &tp->job, &tp->plan, errmsg);
		if (status != SJ_OK)
			SjReportStatus(status, errmsg, "theta_join");
		*strategy = (int) tp->plan.strategy;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (why)
			*why = edata->message;
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return ok;
}

/*
 * Compile cond and prepare both sides to receive rows; nokeys for a count,
 * whose sides keep no row numbers.
 */
SjThetaPrepared *
SjThetaPrepare(Node *cond, bool nokeys)
{
	SjThetaPrepared *tp = palloc0(sizeof(SjThetaPrepared));
	int			s;

	tp->comp.sides[0] = &tp->sides[0];
	tp->comp.sides[1] = &tp->sides[1];
	SjCompileCondition(&tp->comp, cond);
	for (s = 0; s < 2; s++)
	{
		tp->sides[s].key.typid = INT8OID;
		tp->sides[s].nokeys = nokeys;
		SjThetaSideAlloc(&tp->sides[s]);
	}
	return tp;
}

/* One row of a side: its key and all its values, by position. */
void
SjThetaAddRow(SjThetaPrepared *tp, int side, int64 key,
			  const Datum *values, const bool *isnull)
{
	SjThetaSide *sd = &tp->sides[side];
	Datum		vals[SJ_THETA_MAX_COLS + 1];
	bool		nulls[SJ_THETA_MAX_COLS + 1];
	int			k;

	vals[0] = Int64GetDatum(key);
	nulls[0] = false;
	for (k = 0; k < sd->ncols; k++)
	{
		vals[k + 1] = values[sd->cols[k].attnum - 1];
		nulls[k + 1] = isnull[sd->cols[k].attnum - 1];
	}
	SjThetaRow(sd, vals, nulls);
}

/*
 * Side s of a prepared condition, for a scan that feeds it directly: the
 * side (for SjThetaPartRow and SjThetaSideAddParts), and its columns as
 * positions in the caller's rows with their types, after a leading row
 * number (position 0, bigint).  *ncols counts that too.
 */
void *
SjThetaPreparedSide(SjThetaPrepared *tp, int side, int *ncols, int *positions,
					Oid *typids)
{
	SjThetaSide *sd = &tp->sides[side];
	int			k;

	positions[0] = 0;
	typids[0] = INT8OID;
	for (k = 0; k < sd->ncols; k++)
	{
		positions[k + 1] = sd->cols[k].attnum;
		typids[k + 1] = sd->cols[k].typid;
	}
	*ncols = sd->ncols + 1;
	return sd;
}

/* The keys of a side's rows (NULL when it keeps none), and how many. */
int64 *
SjThetaSideKeys(void *side, int64 *n)
{
	SjThetaSide *sd = (SjThetaSide *) side;

	*n = (int64) sd->n;
	return sd->keys;
}

/*
 * Whether every column of a side holds its own values, none ranked together
 * with the other side's (text and numeric are): only then is an index of
 * that side the same in every process that joins it with rows of its own.
 */
bool
SjThetaSideUnranked(SjThetaPrepared *tp, int side)
{
	SjThetaSide *sd = &tp->sides[side];
	int			k;

	for (k = 0; k < sd->ncols; k++)
		if ((sd->cols[k].kind != SJ_KIND_I64 && sd->cols[k].kind != SJ_KIND_F64) ||
			sd->cols[k].to_numeric)
			return false;
	return true;
}

/*
 * After SjThetaFinish: whether the CPU engine, asked to index the inner
 * (right) side, does (a hash or range plan on that side) rather than sort
 * the outer side or loop over both.  The same answer in every process.
 */
bool
SjThetaIndexesInner(SjThetaPrepared *tp)
{
	SjThetaJob *job = &tp->job;
	SjThetaPlan plan;
	char		errmsg[SJ_ERRMSG_LEN];

	if (sj_theta_plan_side(&job->program, &job->tables[0], &job->tables[1],
						   SJ_THETA_AUTO, 1, &plan, errmsg) != SJ_OK)
		return false;
	return plan.strategy != SJ_THETA_NESTED_LOOP && plan.probe_left;
}

/*
 * Does the condition do date/time arithmetic, whose rows SjThetaFinish may
 * find the engines cannot compute exactly?  The custom scan keeps its rows
 * then, to join those with PostgreSQL's operators.
 */
bool
SjThetaMayNeedRows(SjThetaPrepared *tp)
{
	return tp->comp.temporal_arith;
}

/*
 * Both sides are in: fill spec to run the join (emit left to the caller).
 * Rows whose values the engines cannot compute exactly (an infinite date
 * or timestamp under arithmetic) are set aside: SjThetaAside tells which.
 */
void
SjThetaFinish(SjThetaPrepared *tp, SjRunSpec *spec, int64 *nleft,
			  int64 *nright, char *strategy, int len)
{
	SjThetaJobInit(&tp->comp, &tp->job, &tp->plan, tp->aside, tp->maps);
	memset(spec, 0, sizeof(*spec));
	spec->name = "theta_join";
	spec->ops = &sj_theta_methods;
	spec->arg = &tp->job;
	*nleft = tp->sides[0].n;
	*nright = tp->sides[1].n;
	strlcpy(strategy, tp->plan.description, len);
}

/*
 * After SjThetaFinish: the rows of side s set aside, by input row (NULL:
 * none), for the caller to join with PostgreSQL's operators against every
 * row of the other side; *map (NULL: the same) gives the input row of each
 * row the engines see.
 */
const bool *
SjThetaAside(SjThetaPrepared *tp, int side, const int64 **map)
{
	*map = tp->maps[side];
	return tp->aside[side];
}

/* The body shared by theta_join and theta_join_count. */
static int64
SjThetaJoinRun(Oid left_relid, text *left_key, Oid right_relid, text *right_key,
			   text *condition, Tuplestorestate *store, TupleDesc desc)
{
	SjThetaSide *sides[2];
	SjThetaCompiler comp;
	SjThetaJob	job;
	SjRunSpec	spec;
	SjStats		stats;
	Relation	lrel,
				rrel;
	Node	   *expr;
	double		t0 = sj_now_ms();
	int			s;
	SjThetaPlan plan;

	SjStatsStart(&stats, store ? "theta_join" : "theta_join_count");
	SjStartDevice();
	for (s = 0; s < 2; s++)
	{
		Oid			relid = s == 0 ? left_relid : right_relid;

		sides[s] = palloc0(sizeof(SjThetaSide));
		sides[s]->relid = relid;
		sides[s]->nokeys = store == NULL;
		SjCheckRelation(relid);
		SjResolveColumn(relid, text_to_cstring(s == 0 ? left_key : right_key), &sides[s]->key);
		SjCheckKeyColumn(relid, &sides[s]->key);
	}

	/* analyse and compile the condition */
	lrel = relation_open(left_relid, AccessShareLock);
	rrel = relation_open(right_relid, AccessShareLock);
	expr = SjThetaAnalyze(lrel, rrel, text_to_cstring(condition));
	relation_close(lrel, NoLock);
	relation_close(rrel, NoLock);
	memset(&comp, 0, sizeof(comp));
	comp.sides[0] = sides[0];
	comp.sides[1] = sides[1];
	SjCompileCondition(&comp, expr);

	/* read both sides; rank text and numeric values jointly */
	stats.scan_workers = SjThetaMarshal(sides);
	memset(&job, 0, sizeof(job));
	job.store = store;
	job.desc = desc;
	{
		bool	   *aside[2] = {NULL, NULL};	/* only the custom scan's */
		int64	   *maps[2] = {NULL, NULL};

		SjThetaJobInit(&comp, &job, &plan, aside, maps);
	}

	stats.left_rows = sides[0]->n;
	stats.right_rows = sides[1]->n;
	stats.scan_ms = sj_now_ms() - t0;

	spec.name = store ? "theta_join" : "theta_join_count";
	spec.ops = &sj_theta_methods;
	spec.arg = &job;
	spec.store = store;
	return SjJoinAndReport(&spec, sides[0]->n == 0 || sides[1]->n == 0,
						   &stats, t0);
}

PG_FUNCTION_INFO_V1(theta_join);

/* theta_join(left_table, left_key, right_table, right_key, condition) */
Datum
theta_join(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	SjThetaJoinRun(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_GETARG_OID(2),
				   PG_GETARG_TEXT_PP(3), PG_GETARG_TEXT_PP(4),
				   rsinfo->setResult, rsinfo->setDesc);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(theta_join_count);

/* theta_join_count(left_table, left_key, right_table, right_key, condition) */
Datum
theta_join_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(SjThetaJoinRun(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1),
								   PG_GETARG_OID(2), PG_GETARG_TEXT_PP(3),
								   PG_GETARG_TEXT_PP(4), NULL, NULL));
}
