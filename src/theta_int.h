/*
 * theta_int.h
 *		Private to the theta join's files: the compiler's state, the sides it
 *		reads, and the functions that cross between
 *
 *		theta_join.c		the adapter: SQL functions, sides, engines, parts
 *		theta_compile.c		the analysed tree -> the engines' postfix program
 *		theta_values.c		ranks, numeric fixed point, derived date/time values
 *		theta_precheck.c	parse analysis and the whitelist of constructs
 *
 * Each file calls only the files listed below it (test/tools/filegraph.sh).
 */
#ifndef THETA_INT_H
#define THETA_INT_H

#include "nodes/primnodes.h"
#include "utils/relcache.h"

#include "sjgpu.h"
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

/* theta_precheck.c */
extern void SjThetaRefuse(const char *construct) pg_attribute_noreturn();
extern const SjFnMap *SjFnLookup(Oid fn);
extern char *SjOpWhat(OpExpr *op);
extern char *SjFuncWhat(FuncExpr *f);
extern void SjRefuseNode(Node *node);
extern Node *SjThetaAnalyze(Relation lrel, Relation rrel, const char *condition);

/* theta_values.c */
extern bool SjDeriveTry(const SjThetaCol *col, Datum d, int64 *result);
extern void SjRankAll(SjThetaCompiler *c, SjThetaKind kind);
extern void SjNumericCasts(SjThetaCompiler *c);
extern void SjNumericFixAll(SjThetaCompiler *c, bool from_data);
extern void SjThetaCheckTemporal(SjThetaCompiler *c, bool **aside);
extern void SjThetaDerivedErrors(SjThetaCompiler *c);

/* theta_compile.c */
extern SjThetaKind SjTypeKind(Oid typid);
extern void SjCompileCondition(SjThetaCompiler *c, Node *cond);

#endif							/* THETA_INT_H */
