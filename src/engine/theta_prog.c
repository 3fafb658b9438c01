/*
 * theta_prog.c
 *		Condition programs of theta_join: the validator and the planner that
 *		derives the strategy from the program (shared by the CPU and GPU
 *		engines).
 *
 * A postfix program is a tree written post-order, so every subtree is a
 * contiguous slice of instructions ending at its root.  The validator runs
 * the program symbolically (types and stack depth only) and records, for
 * each instruction, the first instruction of the subtree it roots and which
 * sides the subtree loads.  The planner splits the root into its top-level
 * AND conjuncts and classifies each as a hash key, a range term or residual
 * (the rules are in sjtheta.h).  The evaluators live with each engine.
 */
#include <stdio.h>
#include <string.h>

#include "sjnumeric.h"
#include "sjtheta.h"

#define SIDE_L	1
#define SIDE_R	2

/* What the symbolic run learns about each instruction's subtree. */
typedef struct ThetaTree
{
	int			n;
	int			type[SJ_THETA_MAX_INSTR];	/* result type */
	int			start[SJ_THETA_MAX_INSTR];	/* first instruction of subtree */
	int			sides[SJ_THETA_MAX_INSTR];	/* SIDE_L | SIDE_R loaded */
	int			max_stack;
} ThetaTree;

static const char *const theta_messages[] = {
	"",
	"smallint out of range",
	"integer out of range",
	"bigint out of range",
	"division by zero",
	"value out of range: overflow",
	"value out of range: underflow"
};

/* PostgreSQL's message for a data error. */
const char *
sj_theta_error_message(SjThetaDataError code)
{
	if ((int) code < 0 || (int) code >= (int) (sizeof(theta_messages) / sizeof(theta_messages[0])))
		return "unknown data error";
	return theta_messages[code];
}

/* Arity of an opcode (0, 1, 2), or -1 for an unknown one. */
int
sj_theta_arity(int op)
{
	switch (op)
	{
		SJ_THETA_LEAF_CASES:
			return 0;
		SJ_THETA_UNARY_CASES:
		case SJ_OP_NEG_N:
		case SJ_OP_MUL_N:
		case SJ_OP_WIDEN_N:
		case SJ_OP_NEG_W:
		case SJ_OP_MUL_W:
		case SJ_OP_DIV_W:
			return 1;
		case SJ_OP_ADD_W:
		case SJ_OP_SUB_W:
		SJ_THETA_CMP_CASES(W):
		case SJ_OP_ADD_N:
		case SJ_OP_SUB_N:
		case SJ_OP_ADD_I:
		case SJ_OP_SUB_I:
		case SJ_OP_MUL_I:
		case SJ_OP_DIV_I:
		case SJ_OP_MOD_I:
		case SJ_OP_ADD_F:
		case SJ_OP_SUB_F:
		case SJ_OP_MUL_F:
		case SJ_OP_DIV_F:
		SJ_THETA_CMP_CASES(I):
		SJ_THETA_CMP_CASES(F):
		case SJ_OP_AND:
		case SJ_OP_OR:
			return 2;
		default:
			return -1;
	}
}

/* Operand type (both operands) and result type of a non-load opcode. */
static void
theta_signature(int op, int *operand, int *result)
{
	*operand = -1;				/* -1: any */
	switch (op)
	{
		SJ_THETA_INT_ARITH_CASES:
		case SJ_OP_ADD_N:
		case SJ_OP_SUB_N:
		case SJ_OP_NEG_N:
		case SJ_OP_MUL_N:
			*operand = SJ_TI64;
			*result = SJ_TI64;
			break;
		SJ_THETA_FLOAT_ARITH_CASES:
			*operand = SJ_TF64;
			*result = SJ_TF64;
			break;
		case SJ_OP_I2F:
			*operand = SJ_TI64;
			*result = SJ_TF64;
			break;
		case SJ_OP_WIDEN_N:
			*operand = SJ_TI64;
			*result = SJ_TNW;
			break;
		case SJ_OP_ADD_W:
		case SJ_OP_SUB_W:
		case SJ_OP_NEG_W:
		case SJ_OP_MUL_W:
		case SJ_OP_DIV_W:
			*operand = SJ_TNW;
			*result = SJ_TNW;
			break;
		SJ_THETA_CMP_CASES(W):
			*operand = SJ_TNW;
			*result = SJ_TBOOL;
			break;
		SJ_THETA_CMP_CASES(I):
			*operand = SJ_TI64;
			*result = SJ_TBOOL;
			break;
		SJ_THETA_CMP_CASES(F):
			*operand = SJ_TF64;
			*result = SJ_TBOOL;
			break;
		case SJ_OP_AND:
		case SJ_OP_OR:
		case SJ_OP_NOT:
			*operand = SJ_TBOOL;
			*result = SJ_TBOOL;
			break;
		default:				/* IS_NULL, IS_NOT_NULL */
			*result = SJ_TBOOL;
			break;
	}
}

static const char *
theta_type_name(int t)
{
	return t == SJ_TI64 ? "int64" : t == SJ_TF64 ? "float8" : t == SJ_TBOOL ? "bool" :
		t == SJ_TNW ? "numeric" : "?";
}

/* Check one side's table. */
static SjStatus
theta_check_table(const SjThetaTable *t, const char *side, char *errmsg)
{
	int			c;

	if (t == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: %s table is NULL", side);
	if (t->ncols < 0 || t->ncols > SJ_THETA_MAX_COLS)
		return sj_error(errmsg, SJ_ERR_INVALID,
						  "theta_join: %s table has %d columns (at most %d)",
						  side, t->ncols, SJ_THETA_MAX_COLS);
	if (t->ncols > 0 && t->cols == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: %s columns are NULL", side);
	for (c = 0; c < t->ncols; c++)
		if (t->cols[c].type != SJ_TI64 && t->cols[c].type != SJ_TF64)
			return sj_error(errmsg, SJ_ERR_INVALID,
							  "theta_join: %s column %d has invalid type %d",
							  side, c, (int) t->cols[c].type);
	return SJ_OK;
}

/* Symbolic run: types, depth, subtree starts and sides. */
static SjStatus
theta_build_tree(const SjThetaProgram *p, const SjThetaTable *left,
				 const SjThetaTable *right, ThetaTree *tree, char *errmsg)
{
	int			stack[SJ_THETA_MAX_STACK];	/* instruction index of each slot */
	int			depth = 0;
	int			i;
	SjStatus	st;

	if (p == NULL || p->instr == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: no program");
	if (p->ninstr < 1 || p->ninstr > SJ_THETA_MAX_INSTR)
		return sj_error(errmsg, SJ_ERR_INVALID,
						  "theta_join: program has %d instructions (1 to %d allowed)",
						  p->ninstr, SJ_THETA_MAX_INSTR);
	if ((st = theta_check_table(left, "left", errmsg)) != SJ_OK ||
		(st = theta_check_table(right, "right", errmsg)) != SJ_OK)
		return st;

	tree->n = p->ninstr;
	tree->max_stack = 0;
	for (i = 0; i < p->ninstr; i++)
	{
		const SjThetaInstr *in = &p->instr[i];
		int			ar = sj_theta_arity(in->op);

		if (ar < 0)
			return sj_error(errmsg, SJ_ERR_INVALID,
							  "theta_join: instruction %d has unknown opcode %d", i, in->op);
		if (depth < ar)
			return sj_error(errmsg, SJ_ERR_INVALID,
							  "theta_join: instruction %d (opcode %d) needs %d operands, stack holds %d",
							  i, in->op, ar, depth);
		if (ar == 0)
		{
			if (depth >= SJ_THETA_MAX_STACK)
				return sj_error(errmsg, SJ_ERR_INVALID,
								  "theta_join: instruction %d exceeds the stack depth of %d",
								  i, SJ_THETA_MAX_STACK);
			tree->start[i] = i;
			tree->sides[i] = 0;
			switch (in->op)
			{
				case SJ_OP_LOAD_L:
				case SJ_OP_LOAD_R:
					{
						const SjThetaTable *t = in->op == SJ_OP_LOAD_L ? left : right;
						const char *side = in->op == SJ_OP_LOAD_L ? "left" : "right";

						if (in->arg < 0 || in->arg >= t->ncols)
							return sj_error(errmsg, SJ_ERR_INVALID,
											  "theta_join: instruction %d loads %s column %d of %d",
											  i, side, in->arg, t->ncols);
						if (t->n > 0 && t->cols[in->arg].values == NULL)
							return sj_error(errmsg, SJ_ERR_INVALID,
											  "theta_join: %s column %d has no values", side, in->arg);
						tree->type[i] = t->cols[in->arg].type;
						tree->sides[i] = in->op == SJ_OP_LOAD_L ? SIDE_L : SIDE_R;
						break;
					}
				case SJ_OP_CONST_I:
					tree->type[i] = SJ_TI64;
					break;
				case SJ_OP_CONST_F:
					tree->type[i] = SJ_TF64;
					break;
				case SJ_OP_CONST_B:
					tree->type[i] = SJ_TBOOL;
					break;
				default:		/* CONST_NULL */
					if (in->arg != SJ_TI64 && in->arg != SJ_TF64 && in->arg != SJ_TBOOL)
						return sj_error(errmsg, SJ_ERR_INVALID,
										  "theta_join: instruction %d: NULL of invalid type %d",
										  i, in->arg);
					tree->type[i] = in->arg;
					break;
			}
			stack[depth++] = i;
		}
		else
		{
			int			operand,
						result;
			int			a = ar == 2 ? stack[depth - 2] : stack[depth - 1];
			int			b = stack[depth - 1];

			theta_signature(in->op, &operand, &result);
			if (operand >= 0 &&
				(tree->type[a] != operand || tree->type[b] != operand))
				return sj_error(errmsg, SJ_ERR_INVALID,
								  "theta_join: instruction %d (opcode %d) expects %s operands, got %s%s%s",
								  i, in->op, theta_type_name(operand),
								  theta_type_name(tree->type[a]),
								  ar == 2 ? " and " : "",
								  ar == 2 ? theta_type_name(tree->type[b]) : "");
			switch (in->op)
			{
				SJ_THETA_INT_ARITH_CASES:
					if (in->arg != 0 && in->arg != 16 && in->arg != 32 && in->arg != 64)
						return sj_error(errmsg, SJ_ERR_INVALID,
										  "theta_join: instruction %d: integer width %d (0, 16, 32 or 64)",
										  i, in->arg);
					break;
				case SJ_OP_MUL_N:
					if (in->arg < 0 || in->arg > SJ_NUM_MAX_DIGITS ||
						in->ival <= -SJ_NUM_LIMIT || in->ival >= SJ_NUM_LIMIT)
						return sj_error(errmsg, SJ_ERR_INVALID,
										"theta_join: instruction %d: numeric multiplier out of range",
										i);
					break;
				case SJ_OP_WIDEN_N:
				case SJ_OP_MUL_W:
				case SJ_OP_DIV_W:
					if ((in->op == SJ_OP_DIV_W ?
						 (SJ_DIVW_S(in->arg) > SJ_NW_MAX_DIGITS ||
						  SJ_DIVW_KC(in->arg) > SJ_DIVW_S(in->arg) ||
						  SJ_DIVW_DSX(in->arg) > SJ_DIVW_S(in->arg) ||
						  in->arg >> 24 != 0) :
						 (in->arg < 0 || in->arg > SJ_NW_MAX_DIGITS)) ||
						(in->op != SJ_OP_WIDEN_N &&
						 (in->ival <= -sj_num_pow10(SJ_NUM_MAX_DIGITS) ||
						  in->ival >= sj_num_pow10(SJ_NUM_MAX_DIGITS))))
						return sj_error(errmsg, SJ_ERR_INVALID,
										"theta_join: instruction %d: numeric scale or constant out of range",
										i);
					break;
				SJ_THETA_FLOAT_ARITH_CASES:
				case SJ_OP_I2F:
					if (in->arg != 0 && in->arg != 32 && in->arg != 64)
						return sj_error(errmsg, SJ_ERR_INVALID,
										  "theta_join: instruction %d: float width %d (0, 32 or 64)",
										  i, in->arg);
					break;
				default:
					break;
			}
			tree->type[i] = result;
			tree->start[i] = tree->start[a];
			tree->sides[i] = tree->sides[a] | tree->sides[b];
			depth -= ar;
			stack[depth++] = i;
		}
		if (depth > tree->max_stack)
			tree->max_stack = depth;
	}
	if (depth != 1)
		return sj_error(errmsg, SJ_ERR_INVALID,
						  "theta_join: program leaves %d values on the stack (1 expected)", depth);
	if (tree->type[p->ninstr - 1] != SJ_TBOOL)
		return sj_error(errmsg, SJ_ERR_INVALID,
						  "theta_join: program yields %s, not bool",
						  theta_type_name(tree->type[p->ninstr - 1]));
	return SJ_OK;
}

SjStatus
sj_theta_validate(const SjThetaProgram *program, const SjThetaTable *left,
				  const SjThetaTable *right, char *errmsg)
{
	ThetaTree	tree;

	return theta_build_tree(program, left, right, &tree, errmsg);
}

/* Root of the left operand of the binary instruction at i. */
static int
theta_left_child(const ThetaTree *t, int i)
{
	return t->start[i - 1] - 1;
}

/* Collect top-level AND conjuncts (roots) under instruction i. */
static void
theta_conjuncts(const SjThetaInstr *in, const ThetaTree *t, int i, int *roots,
				int *n)
{
	if (in[i].op == SJ_OP_AND)
	{
		theta_conjuncts(in, t, theta_left_child(t, i), roots, n);
		theta_conjuncts(in, t, i - 1, roots, n);
	}
	else
		roots[(*n)++] = i;
}

/* Comparison opcode -> SjThetaCmp, or -1 (NE, non-comparison). */
static int
theta_cmp_of(int op, int *type)
{
	int			base;

	if (op >= SJ_OP_EQ_I && op <= SJ_OP_GE_I)
	{
		*type = SJ_TI64;
		base = op - SJ_OP_EQ_I;
	}
	else if (op >= SJ_OP_EQ_F && op <= SJ_OP_GE_F)
	{
		*type = SJ_TF64;
		base = op - SJ_OP_EQ_F;
	}
	else
		return -1;
	switch (base)
	{
		case 0:
			return SJ_CMP_EQ;
		case 2:
			return SJ_CMP_LT;
		case 3:
			return SJ_CMP_LE;
		case 4:
			return SJ_CMP_GT;
		case 5:
			return SJ_CMP_GE;
		default:
			return -1;			/* NE */
	}
}

/* a CMP b  <=>  b FLIP(CMP) a */
static int
theta_flip(int cmp)
{
	switch (cmp)
	{
		case SJ_CMP_LT:
			return SJ_CMP_GT;
		case SJ_CMP_LE:
			return SJ_CMP_GE;
		case SJ_CMP_GT:
			return SJ_CMP_LT;
		case SJ_CMP_GE:
			return SJ_CMP_LE;
		default:
			return cmp;
	}
}

/* A candidate range term: sorted side, column, type and the term. */
typedef struct ThetaCand
{
	int			side;			/* SIDE_L or SIDE_R: side of column b */
	int			col;
	int			type;
	SjThetaTerm term;
} ThetaCand;

/*
 * Is "x CMP y" (roots x, y) a range term with the plain column on `side`?
 * Tries x as the column side expression (b, b + E, b - E, E - b) and y as
 * the bound side, in that orientation only.
 */
static int
theta_term_of(const SjThetaInstr *in, const ThetaTree *t, int x, int y,
			  int cmp, int type, int side, ThetaCand *out)
{
	int			load = side == SIDE_L ? SJ_OP_LOAD_L : SJ_OP_LOAD_R;

	if (t->sides[y] & side)
		return 0;
	out->side = side;
	out->type = type;
	out->term.cmp = cmp;
	if (in[x].op == load)
	{
		out->col = in[x].arg;
		out->term.form = SJ_TERM_DIRECT;
		out->term.e_begin = t->start[y];
		out->term.e_end = y + 1;
		out->term.c_begin = out->term.c_end = 0;
		return 1;
	}
	if ((type == SJ_TI64 && (in[x].op == SJ_OP_ADD_I || in[x].op == SJ_OP_SUB_I)) ||
		(type == SJ_TF64 && (in[x].op == SJ_OP_ADD_F || in[x].op == SJ_OP_SUB_F)))
	{
		int			p = theta_left_child(t, x);
		int			q = x - 1;
		int			plus = in[x].op == SJ_OP_ADD_I || in[x].op == SJ_OP_ADD_F;

		out->term.c_begin = t->start[y];
		out->term.c_end = y + 1;
		if (in[p].op == load && !(t->sides[q] & side))
		{
			/* b + E, b - E */
			out->col = in[p].arg;
			out->term.form = plus ? SJ_TERM_PLUS : SJ_TERM_MINUS;
			out->term.e_begin = t->start[q];
			out->term.e_end = q + 1;
			return 1;
		}
		if (in[q].op == load && !(t->sides[p] & side))
		{
			out->col = in[q].arg;
			out->term.e_begin = t->start[p];
			out->term.e_end = p + 1;
			if (plus)
			{
				/* E + b */
				out->term.form = SJ_TERM_PLUS;
				return 1;
			}
			if (type == SJ_TI64)
			{
				/* E - b CMP C  <=>  b FLIP(CMP) E - C */
				out->term.form = SJ_TERM_NEG;
				out->term.cmp = theta_flip(cmp);
				return 1;
			}
		}
	}
	return 0;
}

/* Is conjunct root i a range term on `side`?  Tries both orientations. */
static int
theta_range_term(const SjThetaInstr *in, const ThetaTree *t, int i, int side,
				 ThetaCand *out)
{
	int			type;
	int			cmp = theta_cmp_of(in[i].op, &type);
	int			x,
				y;

	if (cmp < 0)
		return 0;
	x = theta_left_child(t, i);
	y = i - 1;
	if (theta_term_of(in, t, x, y, cmp, type, side, out))
		return 1;
	return theta_term_of(in, t, y, x, theta_flip(cmp), type, side, out);
}

/* Is conjunct root i a hash key (plain left load = plain right load)? */
static int
theta_hash_key(const SjThetaInstr *in, const ThetaTree *t, int i, int *lcol,
			   int *rcol, int *type)
{
	int			x,
				y;

	if (in[i].op != SJ_OP_EQ_I && in[i].op != SJ_OP_EQ_F)
		return 0;
	x = theta_left_child(t, i);
	y = i - 1;
	if (in[x].op == SJ_OP_LOAD_L && in[y].op == SJ_OP_LOAD_R)
	{
		*lcol = in[x].arg;
		*rcol = in[y].arg;
	}
	else if (in[x].op == SJ_OP_LOAD_R && in[y].op == SJ_OP_LOAD_L)
	{
		*lcol = in[y].arg;
		*rcol = in[x].arg;
	}
	else
		return 0;
	*type = in[i].op == SJ_OP_EQ_I ? SJ_TI64 : SJ_TF64;
	return 1;
}

SjStatus
sj_theta_plan(const SjThetaProgram *program, const SjThetaTable *left,
			  const SjThetaTable *right, SjThetaStrategy strategy,
			  SjThetaPlan *plan, char *errmsg)
{
	return sj_theta_plan_side(program, left, right, strategy, 0, plan, errmsg);
}

SjStatus
sj_theta_plan_side(const SjThetaProgram *program, const SjThetaTable *left,
				   const SjThetaTable *right, SjThetaStrategy strategy,
				   int build_right, SjThetaPlan *plan, char *errmsg)
{
	ThetaTree	tree;
	const SjThetaInstr *in;
	int			roots[SJ_THETA_MAX_INSTR];
	int			nroots = 0;
	int			keyof[SJ_THETA_MAX_INSTR];
	ThetaCand	cand[2 * SJ_THETA_MAX_INSTR];
	int			ncand = 0;
	int			nkeys = 0;
	int			i;
	SjStatus	st;
	uint32_t	nl,
				nr;

	if ((st = theta_build_tree(program, left, right, &tree, errmsg)) != SJ_OK)
		return st;
	if (strategy < SJ_THETA_AUTO || strategy > SJ_THETA_NESTED_LOOP)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: unknown strategy %d", (int) strategy);
	in = program->instr;
	nl = left->n;
	nr = right->n;
	memset(plan, 0, sizeof(*plan));
	plan->max_stack = tree.max_stack;
	plan->range_col = -1;
	theta_conjuncts(in, &tree, program->ninstr - 1, roots, &nroots);
	plan->nconjuncts = nroots;

	/* classify conjuncts */
	for (i = 0; i < nroots; i++)
	{
		int			lc,
					rc,
					ty,
					s;

		keyof[i] = 0;
		if (theta_hash_key(in, &tree, roots[i], &lc, &rc, &ty) &&
			nkeys < SJ_THETA_MAX_KEYS)
			keyof[i] = 1, nkeys++;
		for (s = SIDE_L; s <= SIDE_R; s++)
			if (theta_range_term(in, &tree, roots[i], s, &cand[ncand]))
				ncand++;
	}

	if ((strategy == SJ_THETA_AUTO && nkeys > 0) || strategy == SJ_THETA_HASH)
	{
		if (nkeys == 0)
			return sj_error(errmsg, SJ_ERR_INVALID,
							  "theta_join: hash join needs an equality between a left and a right column");
		plan->strategy = SJ_THETA_HASH;
		/* build on the smaller side, probe with the larger */
		plan->probe_left = build_right || nl >= nr;
		for (i = 0; i < nroots; i++)
		{
			int			lc,
						rc,
						ty;

			if (!keyof[i])
				continue;
			theta_hash_key(in, &tree, roots[i], &lc, &rc, &ty);
			plan->key_probe_col[plan->nkeys] = plan->probe_left ? lc : rc;
			plan->key_build_col[plan->nkeys] = plan->probe_left ? rc : lc;
			plan->key_type[plan->nkeys] = ty;
			plan->nkeys++;
		}
		plan->exact = plan->nkeys == nroots;
		snprintf(plan->description, sizeof(plan->description), "hash");
		return SJ_OK;
	}

	if ((strategy == SJ_THETA_AUTO && ncand > 0) || strategy == SJ_THETA_RANGE)
	{
		int			best = -1;
		int			best_score = -1;
		int			c,
					k;

		if (ncand == 0)
			return sj_error(errmsg, SJ_ERR_INVALID,
							  "theta_join: range join needs a comparison of a column with an expression over the other side");
		/* score each (side, column) that has terms */
		for (c = 0; c < ncand; c++)
		{
			int			lower = 0,
						upper = 0,
						terms = 0,
						direct = 0,
						score;
			uint32_t	sorted_n = cand[c].side == SIDE_L ? nl : nr;
			uint32_t	other_n = cand[c].side == SIDE_L ? nr : nl;

			for (k = 0; k < ncand; k++)
			{
				if (cand[k].side != cand[c].side || cand[k].col != cand[c].col ||
					cand[k].type != cand[c].type)
					continue;
				terms++;
				direct += cand[k].term.form == SJ_TERM_DIRECT;
				if (cand[k].term.cmp == SJ_CMP_EQ || cand[k].term.cmp == SJ_CMP_GT ||
					cand[k].term.cmp == SJ_CMP_GE)
					lower = 1;
				if (cand[k].term.cmp == SJ_CMP_EQ || cand[k].term.cmp == SJ_CMP_LT ||
					cand[k].term.cmp == SJ_CMP_LE)
					upper = 1;
			}
			if (terms > SJ_THETA_MAX_TERMS)
				terms = SJ_THETA_MAX_TERMS;
			/*
			 * two bounds, then exact (all direct), then more terms, then size
			 * (or, with build_right, the right side)
			 */
			score = (lower && upper) * 4096 + (direct == terms) * 1024 +
				terms * 2 + (build_right ? cand[c].side == SIDE_R :
							 sorted_n <= other_n);
			if (score > best_score)
			{
				best_score = score;
				best = c;
			}
		}
		plan->strategy = SJ_THETA_RANGE;
		plan->probe_left = cand[best].side == SIDE_R;
		plan->range_col = cand[best].col;
		plan->range_type = cand[best].type;
		for (k = 0; k < ncand && plan->nterms < SJ_THETA_MAX_TERMS; k++)
			if (cand[k].side == cand[best].side && cand[k].col == cand[best].col &&
				cand[k].type == cand[best].type)
				plan->terms[plan->nterms++] = cand[k].term;
		/* exact: every conjunct is a direct term on this column */
		plan->exact = plan->nterms == nroots;
		for (k = 0; k < plan->nterms; k++)
			if (plan->terms[k].form != SJ_TERM_DIRECT)
				plan->exact = 0;
		snprintf(plan->description, sizeof(plan->description), "range");
		return SJ_OK;
	}

	plan->strategy = SJ_THETA_NESTED_LOOP;
	plan->probe_left = build_right || nl >= nr;
	plan->exact = 0;
	snprintf(plan->description, sizeof(plan->description), "nested-loop");
	return SJ_OK;
}
