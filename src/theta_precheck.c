/*
 * theta_precheck.c
 *		The theta condition before compilation: parse analysis of its text
 *		against the aliases "l" and "r" (SjThetaAnalyze), and the whitelist of
 *		node types, built-in functions and casts (sj_fn_map) that the engines
 *		can evaluate.
 *
 * SjThetaPrecheck walks the tree as parse analysis left it, before constants
 * are folded or SQL functions inlined, so no function the caller defined
 * ever runs; a construct outside the whitelist is refused with an error that
 * names it (SjThetaRefuse, SjRefuseNode).  Functions are identified by OID,
 * never by name.  This file calls no other file of the theta join.
 */
#include "postgres.h"

#include "catalog/pg_proc.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "theta_int.h"

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
void
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
const SjFnMap *
SjFnLookup(Oid fn)
{
	int			i;

	for (i = 0; i < lengthof(sj_fn_map); i++)
		if (sj_fn_map[i].fn == fn)
			return &sj_fn_map[i];
	return NULL;
}

/* The name an operator is refused under: "the operator + for int and int". */
char *
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
char *
SjFuncWhat(FuncExpr *f)
{
	if (f->funcformat == COERCE_EXPLICIT_CALL)
		return psprintf("the function %s()", get_func_name(f->funcid));
	return psprintf("a cast to %s", format_type_be(f->funcresulttype));
}

/* Refuse a node that no engine evaluates, naming it. */
void
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
Node *
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
