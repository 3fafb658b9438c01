/*
 * sjtheta.h
 *		The theta_join boundary: columns, condition programs, strategies, and
 *		the CPU engine's entry points (the GPU engine's twins are in
 *		cuda/sjgpu.h).  Plain C99, no PostgreSQL or CUDA types.
 *
 * INPUT
 *
 * Each side is a table of n rows and the columns the condition reads, each a
 * typed array plus an optional NULL byte array:
 *
 *	SJ_TI64	 int64_t: int2/int4/int8, date (days), timestamp[tz] (microseconds),
 *			 bool (0/1), text equality as dictionary codes shared by both
 *			 sides, numeric rank-encoded jointly where it is only compared
 *			 and fixed point (sjnumeric.h) where the condition computes with it
 *	SJ_TF64	 double: float4 and float8 (a float4 widened exactly)
 *
 * nulls == NULL means no NULLs; otherwise nulls[i] != 0 marks row i NULL (its
 * value is then never read).  Columns the program does not load may have
 * values == NULL.  Everything belongs to the caller and must stay valid until
 * end.
 *
 * PROGRAM
 *
 * The condition is a postfix (stack) program: an array of SjThetaInstr run
 * left to right for one (left row, right row) pair.  Every stack slot holds a
 * typed value that is either a value, SQL NULL, or an error (see below).
 * Writing a PostgreSQL expression tree out post-order gives the program:
 * children left to right, then the operator.  Example,
 *	r.k BETWEEN l.k - 5 AND l.k + 5		(PostgreSQL: r.k >= l.k - 5 AND r.k <= l.k + 5)
 * with k an int8 column 0 on both sides:
 *	LOAD_R 0; LOAD_L 0; CONST_I 5; SUB_I 64; GE_I;
 *	LOAD_R 0; LOAD_L 0; CONST_I 5; ADD_I 64; LE_I; AND
 *
 * Operators (arg is SjThetaInstr.arg; "i" int64, "f" double, "b" bool):
 *
 *	LOAD_L, LOAD_R		push column arg of the left / right row (its type)
 *	CONST_I / _F / _B	push ival (i) / fval (f) / ival != 0 (b)
 *	CONST_NULL			push NULL of type arg (SJ_TI64, SJ_TF64, SJ_TBOOL)
 *	ADD_I SUB_I MUL_I DIV_I MOD_I   i,i -> i;  NEG_I  i -> i
 *		arg = result width in bits: 16 (int2), 32 (int4), 0 or 64 (int8).
 *		PostgreSQL's semantics: a result outside the width's range is an
 *		error ("smallint/integer/bigint out of range"); DIV_I and MOD_I by
 *		zero are "division by zero"; DIV truncates toward zero; x % -1 = 0.
 *		Operands are int64 and must already lie in the width's range (the
 *		types PostgreSQL resolved: int4 + int4 is width 32, int4 + int8 64).
 *	ADD_F SUB_F MUL_F DIV_F   f,f -> f;  NEG_F  f -> f
 *		arg = 32 for float4 arithmetic (operands and result rounded to
 *		float), 0 or 64 for float8.  IEEE arithmetic with PostgreSQL's checks:
 *		a finite/finite op giving infinity is "value out of range: overflow",
 *		a nonzero product or quotient giving zero "value out of range:
 *		underflow", x / 0 (x not NaN) "division by zero".
 *	I2F					i -> f: arg 0/64 int -> float8, 32 int -> float4
 *	ADD_N SUB_N   i,i -> i;  NEG_N  i -> i;  MUL_N  i -> i
 *		numeric as int64 fixed point at one scale with NaN and +-Infinity as
 *		sentinels (src/engine/sjnumeric.h); MUL_N multiplies by the constant
 *		ival / 10^arg.  Never an error: the adapter proves that every finite
 *		value stays within SJ_NUM_LIMIT.  Compared with EQ_I .. GE_I, whose
 *		int64 order is numeric's (NaN greatest and equal to itself).
 *	WIDEN_N  i -> w;  ADD_W SUB_W  w,w -> w;  NEG_W MUL_W DIV_W  w -> w
 *	EQ_W NE_W LT_W LE_W GT_W GE_W  w,w -> b
 *		numeric for conditions that divide: 128-bit fixed point (SJ_TNW,
 *		sjnumeric.h's sj_nw) at one common scale S.  WIDEN_N turns an
 *		int64 fixed-point value into it (times 10^arg).  MUL_W multiplies by
 *		ival / 10^arg.  DIV_W divides by the constant ival / 10^kc as
 *		PostgreSQL's numeric_div, rounding the quotient to the scale
 *		select_div_scale() gives for the row's dividend (display scale dsx)
 *		and the divisor (display scale kc); arg = SJ_DIVW_ARG(S, kc, dsx).
 *		The only error is DIV_W's "division by zero" (ival == 0, dividend
 *		not NaN).  The adapter proves the scales and magnitudes fit.
 *	EQ_I NE_I LT_I LE_I GT_I GE_I	i,i -> b
 *	EQ_F NE_F LT_F LE_F GT_F GE_F	f,f -> b, PostgreSQL's float order:
 *		NaN equals NaN and is greater than everything, -0 equals +0
 *	AND OR				b,b -> b, Kleene logic
 *	NOT					b -> b
 *	IS_NULL IS_NOT_NULL	any -> b (never NULL)
 *
 * Binary operators pop the right operand (top) and then the left one.  Mixed
 * int/float arithmetic needs an explicit I2F; bool columns enter as
 * LOAD (i) + CONST_I 0 + NE_I.  The program must leave exactly one bool.
 *
 * NULLs: every operator except AND, OR, IS_NULL and IS_NOT_NULL returns NULL
 * when an operand is NULL.  AND is FALSE if either side is FALSE, else NULL
 * if either is NULL, else TRUE; OR dually.  A pair joins only when the whole
 * program yields TRUE.
 *
 * Errors follow PostgreSQL's evaluation order exactly, as if each pair were
 * evaluated left to right with AND/OR short-circuiting: an error is a value
 * that propagates through every operator, where the left operand's error
 * wins over the right's, and AND (OR) whose left operand is FALSE (TRUE)
 * discards an error in its right operand.  So "r.b <> 0 AND l.a / r.b > 1"
 * never reports division by zero.  A pair whose program yields an error makes
 * next() return SJ_ERR_DATA with PostgreSQL's message (sj_theta_error_message)
 * and the code from *_data_error() for the SQLSTATE.  Which pairs get
 * evaluated depends on the strategy, as with PostgreSQL's own plans: the
 * nested loop evaluates every pair; hash and range evaluate the program only
 * on candidate pairs, and never on pairs that a NULL key or bound excludes.
 *
 * STRATEGIES (derived by the engine from the program; no hints needed)
 *
 * The top-level AND conjuncts of the program are classified:
 *	- hash key: EQ_I / EQ_F between a plain left column load and a plain
 *	  right column load (either order).
 *	- range term: a comparison (= < <= > >=) between a plain column load b of
 *	  one side and an expression E over the other side only (and constants):
 *	  "b op E", "E op b", and for either type "b + E op C", "b - E op C",
 *	  and for int64 also "E - b op C" (C another expression over the other
 *	  side only; the comparison may be written either way round).  BETWEEN
 *	  becomes two terms.
 * hash is chosen when there is a hash key (all keys are used; the build side
 * is the smaller side); else range when there is a range term (the sorted
 * side is the side of b; among the (side, column) pairs with terms, the one
 * bounded on both sides wins, then the one whose terms are all direct, then
 * the one with more terms, then the smaller side); else the nested loop
 * (outer side the larger).  The whole program is always re-evaluated on every candidate
 * pair unless the candidates are exactly the joining pairs (plan.exact: the
 * program is only hash keys, or only direct "b op E" terms on one column),
 * in which case count_only counts without touching pairs.
 *
 * Range bounds are computed per probe row by evaluating E (and C) with the
 * program's own semantics: NULL excludes the row; an error sends the row to
 * the nested loop (every pair of it evaluated), so errors and pairs are as
 * PostgreSQL's; int64 bounds are exact (128-bit); float forms with arithmetic
 * are widened by a margin covering the rounding, and a non-finite E or C
 * sends the row to the nested loop.
 *
 * Translating PostgreSQL expressions (for the adapter):
 *	- a BETWEEN x AND y			  a >= x AND a <= y, as PostgreSQL expands it
 *	- NOT BETWEEN, <>, OR, NOT	  as written (such conjuncts are residual only)
 *	- x IS TRUE					  x; IS_NOT_NULL; x; AND (x twice is harmless)
 *	- bool column b				  LOAD b; CONST_I 0; NE_I
 *	- int4 + int4, int2 * int2	  ADD_I 32, MUL_I 16 (the result type's width)
 *	- float4 op float4			  op_F 32;  float4 op float8: op_F 64
 *	- int = float8				  I2F 64 on the int side, then EQ_F
 *	- text = text				  dictionary codes (SJ_TI64), EQ_I / NE_I only
 *	- numeric + - and * const	  ADD_N SUB_N NEG_N MUL_N over fixed point
 *								  (SJ_TI64 at the adapter's common scale)
 *	- numeric / const			  every numeric value WIDEN_N, then the _W
 *								  operators (comparisons included)
 *	- a constant folded to NULL	  CONST_NULL of the operand's type
 * Not modelled (refuse them): date/timestamp arithmetic with its range
 * checks, numeric division by a non-constant, casts from float to int,
 * CASE, COALESCE, functions.  Constant subexpressions should be folded by the planner first
 * (as PostgreSQL does), so that a constant error is raised once, up front.
 *
 * OUTPUT
 *
 * Pair batches (left row, right row) with value == NULL, through the usual
 * begin / next / timings / end iterator (sjengine.h): at most max_batch_pairs
 * (0: 1,048,576) a batch, resumable, any order, no duplicates; count_only
 * returns counts only.  One next() call does a bounded amount of work (about
 * 50 ms on the CPU, 100 ms on the GPU) and may return an empty batch with
 * done == 0.  SjTimings.strategy is "hash", "range" or "nested-loop"
 * (sj_theta_plan() tells the same before running, for EXPLAIN); the GPU
 * engine appends "(P partitions)" or "(N inner pieces)" when the inner side
 * did not fit in device memory whole.
 *
 * Limits: SJ_THETA_MAX_INSTR instructions, SJ_THETA_MAX_STACK deep,
 * SJ_THETA_MAX_COLS columns a side; the GPU engine keeps the inner (build,
 * sorted or smaller) side on the device and batches the outer side to fit
 * options->gpu_memory_limit; an inner side too large for it is partitioned
 * by key hash (hash) or cut into row ranges (range, nested loop), one piece
 * on the device at a time.  It takes sides of fewer than 2^31 rows.
 */
#ifndef SJTHETA_H
#define SJTHETA_H

#include "sjengine.h"

#ifdef __cplusplus
extern "C"
{
#endif

#define SJ_THETA_MAX_INSTR	256		/* instructions in a program */
#define SJ_THETA_MAX_STACK	16		/* stack depth */
#define SJ_THETA_MAX_COLS	64		/* columns per side */
#define SJ_THETA_MAX_KEYS	8		/* hash keys used */
#define SJ_THETA_MAX_TERMS	8		/* range terms used */

/* Value types.  Columns are SJ_TI64 or SJ_TF64; SJ_TBOOL is for programs. */
typedef enum SjThetaType
{
	SJ_TI64 = 0,
	SJ_TF64 = 1,
	SJ_TBOOL = 2,
	SJ_TNW = 3					/* wide numeric (sj_nw), in programs only */
} SjThetaType;

typedef struct SjThetaColumn
{
	SjThetaType type;			/* SJ_TI64 or SJ_TF64 */
	const void *values;			/* n int64_t or n double */
	const uint8_t *nulls;		/* NULL, or n bytes, nonzero = NULL */
} SjThetaColumn;

typedef struct SjThetaTable
{
	uint32_t	n;				/* rows */
	int			ncols;			/* columns, <= SJ_THETA_MAX_COLS */
	const SjThetaColumn *cols;
} SjThetaTable;

/* Opcodes; the numbers are stable. */
typedef enum SjThetaOp
{
	SJ_OP_LOAD_L = 1,
	SJ_OP_LOAD_R = 2,
	SJ_OP_CONST_I = 3,
	SJ_OP_CONST_F = 4,
	SJ_OP_CONST_B = 5,
	SJ_OP_CONST_NULL = 6,
	SJ_OP_ADD_I = 10,
	SJ_OP_SUB_I = 11,
	SJ_OP_MUL_I = 12,
	SJ_OP_DIV_I = 13,
	SJ_OP_MOD_I = 14,
	SJ_OP_NEG_I = 15,
	SJ_OP_ADD_F = 20,
	SJ_OP_SUB_F = 21,
	SJ_OP_MUL_F = 22,
	SJ_OP_DIV_F = 23,
	SJ_OP_NEG_F = 24,
	SJ_OP_I2F = 25,
	SJ_OP_EQ_I = 30,
	SJ_OP_NE_I = 31,
	SJ_OP_LT_I = 32,
	SJ_OP_LE_I = 33,
	SJ_OP_GT_I = 34,
	SJ_OP_GE_I = 35,
	SJ_OP_EQ_F = 40,
	SJ_OP_NE_F = 41,
	SJ_OP_LT_F = 42,
	SJ_OP_LE_F = 43,
	SJ_OP_GT_F = 44,
	SJ_OP_GE_F = 45,
	SJ_OP_AND = 50,
	SJ_OP_OR = 51,
	SJ_OP_NOT = 52,
	SJ_OP_IS_NULL = 53,
	SJ_OP_IS_NOT_NULL = 54,
	SJ_OP_ADD_N = 60,
	SJ_OP_SUB_N = 61,
	SJ_OP_NEG_N = 62,
	SJ_OP_MUL_N = 63,
	SJ_OP_WIDEN_N = 64,
	SJ_OP_ADD_W = 65,
	SJ_OP_SUB_W = 66,
	SJ_OP_NEG_W = 67,
	SJ_OP_MUL_W = 68,
	SJ_OP_DIV_W = 69,
	SJ_OP_EQ_W = 70,
	SJ_OP_NE_W = 71,
	SJ_OP_LT_W = 72,
	SJ_OP_LE_W = 73,
	SJ_OP_GT_W = 74,
	SJ_OP_GE_W = 75
} SjThetaOp;

/* The opcodes that push a value without popping one, as case labels */
#define SJ_THETA_LEAF_CASES \
	case SJ_OP_LOAD_L: \
	case SJ_OP_LOAD_R: \
	case SJ_OP_CONST_I: \
	case SJ_OP_CONST_F: \
	case SJ_OP_CONST_B: \
	case SJ_OP_CONST_NULL

/* The six comparison opcodes of a type (T: I, F or W), as case labels */
#define SJ_THETA_CMP_CASES(T) \
	case SJ_OP_EQ_##T: \
	case SJ_OP_NE_##T: \
	case SJ_OP_LT_##T: \
	case SJ_OP_LE_##T: \
	case SJ_OP_GT_##T: \
	case SJ_OP_GE_##T

/* The unary opcodes over integers, floats and truth values, as case labels */
#define SJ_THETA_UNARY_CASES \
	case SJ_OP_NEG_I: \
	case SJ_OP_NEG_F: \
	case SJ_OP_I2F: \
	case SJ_OP_NOT: \
	case SJ_OP_IS_NULL: \
	case SJ_OP_IS_NOT_NULL

/* The integer arithmetic opcodes (arg: the width), as case labels */
#define SJ_THETA_INT_ARITH_CASES \
	case SJ_OP_ADD_I: \
	case SJ_OP_SUB_I: \
	case SJ_OP_MUL_I: \
	case SJ_OP_DIV_I: \
	case SJ_OP_MOD_I: \
	case SJ_OP_NEG_I

/* The float arithmetic opcodes (arg: the width), as case labels */
#define SJ_THETA_FLOAT_ARITH_CASES \
	case SJ_OP_ADD_F: \
	case SJ_OP_SUB_F: \
	case SJ_OP_MUL_F: \
	case SJ_OP_DIV_F: \
	case SJ_OP_NEG_F

/* DIV_W's arg: the common scale, the divisor's scale, the dividend's display scale */
#define SJ_DIVW_ARG(s, kc, dsx)	((s) | ((kc) << 8) | ((dsx) << 16))
#define SJ_DIVW_S(arg)		((arg) & 255)
#define SJ_DIVW_KC(arg)		(((arg) >> 8) & 255)
#define SJ_DIVW_DSX(arg)	(((arg) >> 16) & 255)

typedef struct SjThetaInstr
{
	int32_t		op;				/* SjThetaOp */
	int32_t		arg;			/* column, width or type, by op */
	int64_t		ival;			/* CONST_I, CONST_B */
	double		fval;			/* CONST_F */
} SjThetaInstr;

typedef struct SjThetaProgram
{
	int			ninstr;			/* 1 .. SJ_THETA_MAX_INSTR */
	const SjThetaInstr *instr;
} SjThetaProgram;

/* Strategy: SJ_THETA_AUTO lets the engine choose; others force one. */
typedef enum SjThetaStrategy
{
	SJ_THETA_AUTO = 0,
	SJ_THETA_HASH,
	SJ_THETA_RANGE,
	SJ_THETA_NESTED_LOOP
} SjThetaStrategy;

/* Data exceptions a program can raise (SQLSTATE in the comment). */
typedef enum SjThetaDataError
{
	SJ_THETA_OK = 0,
	SJ_THETA_ERR_SMALLINT_RANGE = 1,	/* 22003 smallint out of range */
	SJ_THETA_ERR_INTEGER_RANGE = 2, /* 22003 integer out of range */
	SJ_THETA_ERR_BIGINT_RANGE = 3,	/* 22003 bigint out of range */
	SJ_THETA_ERR_DIVISION_BY_ZERO = 4,	/* 22012 division by zero */
	SJ_THETA_ERR_FLOAT_OVERFLOW = 5,	/* 22003 value out of range: overflow */
	SJ_THETA_ERR_FLOAT_UNDERFLOW = 6	/* 22003 value out of range:
										 * underflow */
} SjThetaDataError;

/* Operands an opcode takes (0, 1 or 2), or -1 for an unknown opcode. */
extern int	sj_theta_arity(int op);

/* PostgreSQL's message for a data error ("" for SJ_THETA_OK). */
extern const char *sj_theta_error_message(SjThetaDataError code);

/*
 * Check a program against the two tables: known opcodes, column indexes and
 * types, operand types, stack depth, widths, one bool result.
 */
extern SjStatus sj_theta_validate(const SjThetaProgram *program,
								  const SjThetaTable *left,
								  const SjThetaTable *right, char *errmsg);

/* ---------------------------------------------------------------------
 * The plan: what the engine will do (for EXPLAIN and costing; the fields
 * past `description` are shared by the CPU and GPU engines).
 * --------------------------------------------------------------------- */

/* Comparison of a range term, normalised to "b CMP bound". */
typedef enum SjThetaCmp
{
	SJ_CMP_EQ = 0,
	SJ_CMP_LT,
	SJ_CMP_LE,
	SJ_CMP_GT,
	SJ_CMP_GE
} SjThetaCmp;

/* How the bound of a range term is computed from E and C. */
typedef enum SjThetaTermForm
{
	SJ_TERM_DIRECT = 0,			/* b CMP E				bound = E */
	SJ_TERM_PLUS,				/* b + E CMP C			bound = C - E */
	SJ_TERM_MINUS,				/* b - E CMP C			bound = C + E */
	SJ_TERM_NEG					/* E - b CMP' C			bound = E - C (int only) */
} SjThetaTermForm;

typedef struct SjThetaTerm
{
	int			form;			/* SjThetaTermForm */
	int			cmp;			/* SjThetaCmp: b cmp bound */
	int			e_begin;		/* E: instructions [e_begin, e_end) */
	int			e_end;
	int			c_begin;		/* C (not DIRECT): [c_begin, c_end) */
	int			c_end;
} SjThetaTerm;

typedef struct SjThetaPlan
{
	SjThetaStrategy strategy;	/* HASH, RANGE or NESTED_LOOP */
	int			probe_left;		/* 1: left is the probe (outer) side */
	int			exact;			/* candidates == joining pairs */
	int			nconjuncts;		/* top-level AND conjuncts */
	char		description[64];	/* "hash", "range", "nested-loop" */

	/* hash: probe column = build column, for each key */
	int			nkeys;
	int			key_probe_col[SJ_THETA_MAX_KEYS];
	int			key_build_col[SJ_THETA_MAX_KEYS];
	int			key_type[SJ_THETA_MAX_KEYS];	/* SjThetaType */

	/* range: column b of the sorted (build) side, and its terms */
	int			range_col;
	int			range_type;		/* SjThetaType */
	int			nterms;
	SjThetaTerm terms[SJ_THETA_MAX_TERMS];

	int			max_stack;		/* deepest stack the program reaches */
} SjThetaPlan;

/*
 * Validate the program and choose the strategy (strategy != AUTO forces one;
 * SJ_ERR_INVALID when it does not apply to the program).
 */
extern SjStatus sj_theta_plan(const SjThetaProgram *program,
							  const SjThetaTable *left,
							  const SjThetaTable *right,
							  SjThetaStrategy strategy, SjThetaPlan *plan,
							  char *errmsg);

/*
 * The same, with build_right: a hash or nested-loop plan builds on (and a
 * range plan prefers, where its columns score the same) the right side
 * whatever the sides' sizes, as an index that several joins share needs.
 */
extern SjStatus sj_theta_plan_side(const SjThetaProgram *program,
								   const SjThetaTable *left,
								   const SjThetaTable *right,
								   SjThetaStrategy strategy, int build_right,
								   SjThetaPlan *plan, char *errmsg);

/* ---------------------------------------------------------------------
 * The CPU engine (src/engine/theta_cpu.c).  Contract of sjengine.h's
 * iterators; the program and tables are copied or referenced as described
 * above.  *_data_error() gives the code behind an SJ_ERR_DATA.
 * --------------------------------------------------------------------- */
typedef struct SjThetaJoin SjThetaJoin;

extern SjStatus sj_theta_cpu_begin(const SjThetaTable *left,
								   const SjThetaTable *right,
								   const SjThetaProgram *program,
								   SjThetaStrategy strategy,
								   const SjJoinOptions *options,
								   SjThetaJoin **join, char *errmsg);
extern SjStatus sj_theta_cpu_next(SjThetaJoin *join, SjPairBatch *batch,
								  int *done, char *errmsg);
extern void sj_theta_cpu_timings(const SjThetaJoin *join, SjTimings *timings);
extern SjThetaDataError sj_theta_cpu_data_error(const SjThetaJoin *join);
extern void sj_theta_cpu_end(SjThetaJoin *join);

/*
 * A CPU join's index of its right side, flattened for sharing (one
 * relocatable block, offsets only): a join begun with options->index_right
 * gives its size (0 when it has none: a nested-loop plan, an index on the
 * left side, an empty side) and writes it; joins begun with
 * options->shared_index pointing at such a block, over the same program and
 * the same right table, probe it instead of building their own.  With
 * options->index_only as well, the join returns no pairs.
 */
extern size_t sj_theta_cpu_index_size(const SjThetaJoin *join);
extern void sj_theta_cpu_index_write(const SjThetaJoin *join, void *dst);

#ifdef __cplusplus
}
#endif

#endif							/* SJTHETA_H */
