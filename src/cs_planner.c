/*
 * cs_planner.c
 *		Custom Scan (SimJoin), planning: clause matching, paths and plans.
 *
 * set_join_pathlist_hook looks at every inner, left, semi and anti join
 * whose inputs are unparameterized, and at its join clauses:
 *
 *	- l2_distance(a, b) <= c (also <, the <-> operator, either order),
 *	- jaccard(a, b) >= c (also >, either order),
 *	- PostGIS's ST_DWithin(a, b, c), ST_Distance(a, b) <= c and their 3-D and
 *	  geography forms over point columns (postgis.c, SjGisCondition): an eps
 *	  join at a widened c whose candidates the clause itself decides,
 *	- otherwise the clauses comparing columns of both sides that the theta
 *	  compiler accepts (theta_compile.c),
 *
 * where a reads only one input, b only the other, and c is free of Vars and
 * volatile functions (a constant, a parameter, an initplan).  The first
 * kind found becomes the engine's condition; every other join clause stays
 * a residual filter evaluated on each pair.  The path is costed with the
 * model of SjCostPath (cs_cost.c, calibrated by test/bench/calibrate.sql)
 * and competes with PostgreSQL's own paths; a partial path (outer input
 * split across parallel workers, each worker joining its share against the
 * whole inner input) is offered too.  create_upper_paths_hook adds a
 * counting node for "SELECT count(*) FROM <one such join>", which never
 * forms a pair tuple.  The plan carries what the executor needs in
 * custom_private (SJ_PRIV_*) and custom_exprs (SJ_EXPR_*), customscan.h.
 */

#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "jit/jit.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/syscache.h"

#include "customscan.h"

/* Which of our functions a call is. */
typedef enum SjFnKind
{
	SJ_FN_NONE,
	SJ_FN_L2,
	SJ_FN_COSINE,
	SJ_FN_JACCARD
} SjFnKind;

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;
static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

static Plan *SjPlanCustomPath(PlannerInfo *root, RelOptInfo *rel,
							  CustomPath *best_path, List *tlist,
							  List *clauses, List *custom_plans);

static const CustomPathMethods sj_path_methods = {
	.CustomName = "SimJoin",
	.PlanCustomPath = SjPlanCustomPath,
};

static const CustomScanMethods sj_scan_methods = {
	.CustomName = "SimJoin",
	.CreateCustomScanState = SjCreateScanState,
};

/* ---------------------------------------------------------------------
 * Planner
 * --------------------------------------------------------------------- */

/* Is funcid one of simjoin's l2_distance or jaccard functions? */
static SjFnKind
SjFunctionKind(Oid funcid)
{
	HeapTuple	tup;
	SjFnKind	kind = SJ_FN_NONE;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tup))
		return SJ_FN_NONE;
	if (((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId)
	{
		bool		isnull;
		Datum		bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);

		if (!isnull && strstr(TextDatumGetCString(bin), "simjoin") != NULL)
		{
			char	   *src = TextDatumGetCString(SysCacheGetAttr(PROCOID, tup,
																  Anum_pg_proc_prosrc,
																  &isnull));

			if (strcmp(src, "l2_distance_float8") == 0 ||
				strcmp(src, "l2_distance_float4") == 0)
				kind = SJ_FN_L2;
			else if (strcmp(src, "cosine_distance_float8") == 0 ||
					 strcmp(src, "cosine_distance_float4") == 0)
				kind = SJ_FN_COSINE;
			else if (strcmp(src, "jaccard_int") == 0 || strcmp(src, "jaccard_text") == 0)
				kind = SJ_FN_JACCARD;
		}
	}
	ReleaseSysCache(tup);
	return kind;
}

/* The kind and arguments of a call of l2_distance, <-> or jaccard. */
static SjFnKind
SjCallOf(Node *node, List **args)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL)
		return SJ_FN_NONE;
	if (IsA(node, FuncExpr))
	{
		*args = ((FuncExpr *) node)->args;
		return SjFunctionKind(((FuncExpr *) node)->funcid);
	}
	if (IsA(node, OpExpr))
	{
		set_opfuncid((OpExpr *) node);
		*args = ((OpExpr *) node)->args;
		return SjFunctionKind(((OpExpr *) node)->opfuncid);
	}
	return SJ_FN_NONE;
}

/* Can expr be the threshold: evaluated once, before the join? */
static bool
SjIsThreshold(Node *expr)
{
	return !contain_var_clause(expr) && !contain_volatile_functions(expr) &&
		!contain_subplans(expr) && !contain_agg_clause(expr) &&
		!contain_window_function(expr);
}

/* Does expr read exactly the relations of one side (and no other)? */
static bool
SjReadsOnly(PlannerInfo *root, Node *expr, Relids side)
{
	Relids		varnos = pull_varnos(root, expr);

	return !bms_is_empty(varnos) && bms_is_subset(varnos, side) &&
		!contain_volatile_functions(expr);
}

/*
 * Is clause an eps or jaccard condition between the two sides?  Fills the
 * operator, arguments (outer first), threshold and strictness.
 */
static bool
SjMatchSimilarity(PlannerInfo *root, Expr *clause, Relids outer, Relids inner,
				  SjJoinPlanInfo *info)
{
	OpExpr	   *op;
	Oid			fn;
	List	   *args = NIL;
	SjFnKind	kind;
	bool		call_left;
	Node	   *other;
	bool		le,
				lt,
				ge,
				gt;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	op = (OpExpr *) clause;
	set_opfuncid(op);
	fn = op->opfuncid;
	if (fn != F_FLOAT8LE && fn != F_FLOAT8LT && fn != F_FLOAT8GE && fn != F_FLOAT8GT)
		return false;
	kind = SjCallOf(linitial(op->args), &args);
	call_left = kind != SJ_FN_NONE;
	if (!call_left)
		kind = SjCallOf(lsecond(op->args), &args);
	if (kind == SJ_FN_NONE || list_length(args) != 2)
		return false;
	other = call_left ? lsecond(op->args) : linitial(op->args);
	if (!SjIsThreshold(other))
		return false;

	/* normalise to "call CMP threshold" */
	le = call_left ? fn == F_FLOAT8LE : fn == F_FLOAT8GE;
	lt = call_left ? fn == F_FLOAT8LT : fn == F_FLOAT8GT;
	ge = call_left ? fn == F_FLOAT8GE : fn == F_FLOAT8LE;
	gt = call_left ? fn == F_FLOAT8GT : fn == F_FLOAT8LT;
	if ((kind == SJ_FN_L2 || kind == SJ_FN_COSINE) && (le || lt))
	{
		info->op = SJ_OP_EPS;
		info->strict = lt;
		info->metric = kind == SJ_FN_COSINE ? SJ_METRIC_COSINE : SJ_METRIC_L2;
	}
	else if (kind == SJ_FN_JACCARD && (ge || gt))
	{
		info->op = SJ_OP_JACCARD;
		info->strict = gt;
	}
	else
		return false;

	if (SjReadsOnly(root, linitial(args), outer) && SjReadsOnly(root, lsecond(args), inner))
	{
		info->outer_arg = linitial(args);
		info->inner_arg = lsecond(args);
	}
	else if (SjReadsOnly(root, linitial(args), inner) && SjReadsOnly(root, lsecond(args), outer))
	{
		info->outer_arg = lsecond(args);
		info->inner_arg = linitial(args);
		info->swapped = true;
	}
	else
		return false;
	info->threshold = (Expr *) other;
	return true;
}

/*
 * Is clause a PostGIS distance condition between point columns of the two
 * sides (postgis.c, SjGisCondition)?  It runs as an eps join that keeps
 * every pair PostGIS could accept, the clause deciding each one.
 */
static bool
SjMatchGis(PlannerInfo *root, Expr *clause, Relids outer, Relids inner,
		   SjJoinPlanInfo *info)
{
	Expr	   *a,
			   *b,
			   *threshold;
	Expr	   *spheroid;
	bool		strict;
	int			gis = SjGisCondition(clause, &a, &b, &threshold, &strict, &spheroid);

	if (gis == 0 || !SjIsThreshold((Node *) threshold))
		return false;
	if (SjReadsOnly(root, (Node *) a, outer) && SjReadsOnly(root, (Node *) b, inner))
	{
		info->outer_arg = a;
		info->inner_arg = b;
		info->swapped = false;
	}
	else if (SjReadsOnly(root, (Node *) a, inner) && SjReadsOnly(root, (Node *) b, outer))
	{
		info->outer_arg = b;
		info->inner_arg = a;
		info->swapped = true;
	}
	else
		return false;
	info->op = SJ_OP_EPS;
	info->metric = SJ_METRIC_L2;
	info->strict = strict;
	info->gis = gis;
	info->threshold = threshold;
	info->spheroid = spheroid;
	return true;
}

/* Context of SjRemapVars: Vars of each side, numbered in order of use. */
typedef struct SjRemapContext
{
	Relids		sides[2];
	List	   *vars[2];
	bool		ok;
} SjRemapContext;

/*
 * A copy of a planner clause whose Vars are varno 1 (outer) or 2 (inner)
 * and varattno their order of first use: the theta compiler's form, to
 * check at plan time that it compiles.
 */
static Node *
SjRemapVars(Node *node, SjRemapContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		int			s;

		for (s = 0; s < 2; s++)
		{
			if (v->varlevelsup == 0 && bms_is_member(v->varno, cxt->sides[s]))
			{
				Var		   *nv = copyObject(v);
				ListCell   *lc;
				int			pos = 1;

				foreach(lc, cxt->vars[s])
				{
					Var		   *o = lfirst(lc);

					if (o->varno == v->varno && o->varattno == v->varattno)
						break;
					pos++;
				}
				if (lc == NULL)
					cxt->vars[s] = lappend(cxt->vars[s], v);
				nv->varno = s + 1;
				nv->varattno = pos;
				return (Node *) nv;
			}
		}
		cxt->ok = false;
		return node;
	}
	if (IsA(node, Param) && (((Param *) node)->paramkind == PARAM_EXTERN ||
							 ((Param *) node)->paramkind == PARAM_EXEC))
	{
		/* known when the join starts: a constant of its type stands in */
		Param	   *p = (Param *) node;

		return (Node *) makeNullConst(p->paramtype, p->paramtypmod, p->paramcollid);
	}
	if (IsA(node, PlaceHolderVar) || IsA(node, SubPlan) || IsA(node, Param) ||
		IsA(node, Aggref) || IsA(node, WindowFunc))
	{
		cxt->ok = false;
		return node;
	}
	return expression_tree_mutator(node, SjRemapVars, (void *) cxt);
}

/*
 * Does expr, with its Vars renumbered per side, compile for the theta
 * engines?  Sets the strategy they would pick; logs why not at DEBUG1.
 */
static bool
SjThetaCheck(Node *expr, Relids outer, Relids inner, int *strategy)
{
	SjRemapContext cxt;
	Node	   *remapped;
	char	   *why = NULL;

	memset(&cxt, 0, sizeof(cxt));
	cxt.sides[0] = outer;
	cxt.sides[1] = inner;
	cxt.ok = true;
	remapped = SjRemapVars(expr, &cxt);
	if (!cxt.ok)
		return false;
	if (!SjThetaCompilable(remapped, strategy, &why))
	{
		elog(DEBUG1, "simjoin: join clause left to PostgreSQL: %s", why);
		return false;
	}
	return true;
}

/* Does a theta clause read both sides and compile? */
static bool
SjThetaClauseOk(PlannerInfo *root, Expr *clause, Relids outer, Relids inner)
{
	Relids		varnos = pull_varnos(root, (Node *) clause);
	int			strategy;

	if (!bms_overlap(varnos, outer) || !bms_overlap(varnos, inner) ||
		contain_volatile_functions((Node *) clause))
		return false;
	return SjThetaCheck((Node *) clause, outer, inner, &strategy);
}

/* The theta strategy the engines would pick for the whole condition. */
static int
SjThetaStrategyOf(List *clauses, Relids outer, Relids inner)
{
	int			strategy;

	if (!SjThetaCheck((Node *) make_ands_explicit(clauses), outer, inner, &strategy))
		return -1;
	return strategy;
}

/*
 * Is node_i, over the inner relation inner_relid, node_o over outer_relid
 * with its Vars renumbered, neither calling a volatile function nor
 * holding a subquery (whose plan a copy would not share)?
 */
static bool
SjSameOnSides(Node *node_o, Node *node_i, Index outer_relid, Index inner_relid)
{
	Node	   *mapped;

	if (contain_volatile_functions(node_o) || contain_volatile_functions(node_i) ||
		contain_subplans(node_o) || contain_subplans(node_i))
		return false;
	mapped = copyObject(node_i);
	ChangeVarNodes(mapped, inner_relid, outer_relid, 0);
	return equal(node_o, mapped);
}

/* Does inheritance parent relid have a foreign table among its members? */
static bool
SjForeignMember(PlannerInfo *root, Index relid)
{
	ListCell   *lc;

	foreach(lc, root->append_rel_list)
	{
		AppendRelInfo *ai = lfirst_node(AppendRelInfo, lc);

		if (ai->parent_relid != relid)
			continue;
		if (planner_rt_fetch(ai->child_relid, root)->relkind == RELKIND_FOREIGN_TABLE ||
			SjForeignMember(root, ai->child_relid))
			return true;
	}
	return false;
}

/*
 * Is the join a table joined with itself under its eps or Jaccard
 * condition, as in "FROM t a JOIN t b ON a.v <-> b.v <= 0.1"?  Both sides
 * then hold the same rows: one table (all of it, not a sample; an
 * inheritance parent both times or neither), the same filters in the same
 * order, row-level security's included, the same columns kept and the
 * same argument; and l2_distance, cosine_distance (sjdist.h) and jaccard
 * (counts of elements) give a pair's two orders the same bits.  The node
 * then reads the table once, the engine computes each unordered pair of
 * rows once (its self-join), and the node forms both orders of each and
 * every row with itself that joins (SjEpsSelfRows, SjJaccardSelfRows),
 * where PostgreSQL's plans compute every ordered pair.  Inner joins only
 * (an outer join tracks each outer row's matches), not PostGIS points
 * (PostGIS's clause decides their pairs) nor theta conditions (not
 * symmetric in general).  The plan checks the child plans' columns again
 * (SjPlanCustomPath); should they differ after all, the path costed as a
 * self-join runs as two inputs, with the same answer.
 */
static bool
SjSelfJoinable(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel,
			   const SjJoinPlanInfo *info)
{
	RangeTblEntry *ro;
	RangeTblEntry *ri;
	ListCell   *lo;
	ListCell   *li;

	if ((info->op != SJ_OP_EPS && info->op != SJ_OP_JACCARD) || info->gis ||
		info->jointype != JOIN_INNER)
		return false;
	if (outerrel->reloptkind != RELOPT_BASEREL || innerrel->reloptkind != RELOPT_BASEREL ||
		outerrel->rtekind != RTE_RELATION || innerrel->rtekind != RTE_RELATION)
		return false;
	ro = planner_rt_fetch(outerrel->relid, root);
	ri = planner_rt_fetch(innerrel->relid, root);
	/*
	 * Read as the same user (a view's owner reads its tables: a foreign
	 * table's user mapping follows), no foreign table, itself or among an
	 * inheritance parent's members (another server's rows, which a second
	 * read need not find again)
	 */
	if (ro->relid != ri->relid || ro->inh != ri->inh ||
		ro->tablesample != NULL || ri->tablesample != NULL ||
		outerrel->userid != innerrel->userid || ro->relkind == RELKIND_FOREIGN_TABLE ||
		(ro->inh && SjForeignMember(root, outerrel->relid)))
		return false;
	if (!SjSameOnSides((Node *) info->outer_arg, (Node *) info->inner_arg,
					   outerrel->relid, innerrel->relid) ||
		!SjSameOnSides((Node *) outerrel->reltarget->exprs,
					   (Node *) innerrel->reltarget->exprs,
					   outerrel->relid, innerrel->relid))
		return false;
	if (list_length(outerrel->baserestrictinfo) != list_length(innerrel->baserestrictinfo))
		return false;
	forboth(lo, outerrel->baserestrictinfo, li, innerrel->baserestrictinfo)
	{
		RestrictInfo *a = lfirst_node(RestrictInfo, lo);
		RestrictInfo *b = lfirst_node(RestrictInfo, li);

		if (a->security_level != b->security_level ||
			!SjSameOnSides((Node *) a->clause, (Node *) b->clause,
						   outerrel->relid, innerrel->relid))
			return false;
	}
	return true;
}

/*
 * The child plans of a self-join path (SjSelfJoinable) return the same
 * columns: the inner's target list is the outer's over the other relation.
 */
static bool
SjSelfPlansMatch(CustomPath *best_path, Plan *outer_plan, Plan *inner_plan)
{
	RelOptInfo *orel = ((Path *) linitial(best_path->custom_paths))->parent;
	RelOptInfo *irel = ((Path *) lsecond(best_path->custom_paths))->parent;
	ListCell   *lo;
	ListCell   *li;

	if (list_length(outer_plan->targetlist) != list_length(inner_plan->targetlist) ||
		orel->reloptkind != RELOPT_BASEREL || irel->reloptkind != RELOPT_BASEREL)
		return false;
	forboth(lo, outer_plan->targetlist, li, inner_plan->targetlist)
	{
		TargetEntry *a = lfirst_node(TargetEntry, lo);
		TargetEntry *b = lfirst_node(TargetEntry, li);

		if (a->resjunk != b->resjunk ||
			!SjSameOnSides((Node *) a->expr, (Node *) b->expr, orel->relid, irel->relid))
			return false;
	}
	return true;
}

/* A CustomPath for the join. */
static CustomPath *
SjMakePath(PlannerInfo *root, RelOptInfo *joinrel, SjJoinPlanInfo *proto,
		   Path *outer_path, Path *inner_path, JoinPathExtraData *extra,
		   SjPathMode mode)
{
	bool		partial = mode != SJ_PATH_SERIAL;
	CustomPath *cpath = makeNode(CustomPath);
	SjJoinPlanInfo *info = palloc(sizeof(SjJoinPlanInfo));
	double		outer_rows = outer_path->rows;
	double		rows = joinrel->rows;
	Cost		startup,
				total;

	*info = *proto;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = mode == SJ_PATH_SHARED_INNER;
	cpath->path.parallel_safe = joinrel->consider_parallel &&
		outer_path->parallel_safe && inner_path->parallel_safe;
	cpath->path.parallel_workers = partial ? outer_path->parallel_workers : 0;
	if (partial)
		rows = clamp_row_est(rows / SjParallelDivisor(outer_path));
	cpath->path.rows = rows;
	cpath->path.pathkeys = NIL;
	SjCostPath(root, info, outer_path, inner_path, outer_rows,
			   mode == SJ_PATH_SHARED_INNER ? inner_path->parent->rows : inner_path->rows,
			   mode, &startup, &total);
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = total;
	cpath->flags = 0;
	cpath->custom_paths = list_make2(outer_path, inner_path);
	cpath->custom_private = list_make1(info);
	cpath->methods = &sj_path_methods;
	return cpath;
}

/*
 * Join paths kept for the counting node.  A SimJoin join path that loses to
 * PostgreSQL's own paths is pruned from the join relation's paths, yet its
 * counting form (no pair formed) may still be the cheapest way to count the
 * join; so the cheapest one of each join relation (by cost less the pairs'
 * emission) is remembered for create_upper_paths_hook.  The list belongs to
 * the planner call that made it (SjPlanner saves and restores it around
 * every call, planning being reentrant).
 */
typedef struct SjKept
{
	PlannerInfo *root;
	Relids		relids;
	CustomPath *path;
} SjKept;

static List *sj_kept_paths = NIL;
static planner_hook_type prev_planner_hook = NULL;

/* Keep a copy of path: add_path frees the paths it rejects. */
static void
SjKeepCopy(SjKept *k, CustomPath *path)
{
	CustomPath *copy = palloc(sizeof(CustomPath));
	SjJoinPlanInfo *info = palloc(sizeof(SjJoinPlanInfo));

	*copy = *path;
	*info = *(SjJoinPlanInfo *) linitial(path->custom_private);
	copy->custom_private = list_make1(info);
	copy->custom_paths = list_copy(path->custom_paths);
	k->path = copy;
}

/* Remember path if it is the cheapest to count joinrel so far. */
static void
SjKeepPath(PlannerInfo *root, RelOptInfo *joinrel, CustomPath *path)
{
	SjJoinPlanInfo *info = linitial(path->custom_private);
	ListCell   *lc;
	SjKept	   *k;

	/*
	 * The genetic optimizer builds each candidate join order in a memory
	 * context of its own, deleted afterwards: nothing is kept from it (the
	 * counting node then needs the join path to survive on its own).
	 */
	if (root->join_search_private != NULL)
		return;

	foreach(lc, sj_kept_paths)
	{
		k = lfirst(lc);
		if (k->root == root && bms_equal(k->relids, joinrel->relids))
		{
			SjJoinPlanInfo *old = linitial(k->path->custom_private);

			if (path->path.total_cost - info->emit_cost <
				k->path->path.total_cost - old->emit_cost)
				SjKeepCopy(k, path);
			return;
		}
	}
	k = palloc(sizeof(SjKept));
	k->root = root;
	k->relids = bms_copy(joinrel->relids);
	k->path = NULL;
	sj_kept_paths = lappend(sj_kept_paths, k);
	SjKeepCopy(k, path);
}

/* The kept path of rel, or NULL. */
static CustomPath *
SjKeptPath(PlannerInfo *root, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, sj_kept_paths)
	{
		SjKept	   *k = lfirst(lc);

		if (k->root == root && bms_equal(k->relids, rel->relids))
			return k->path;
	}
	return NULL;
}

/* Does the plan tree contain a SimJoin node? */
static bool
SjPlanHasNode(Plan *plan)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return false;
	if (IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &sj_scan_methods)
		return true;
	switch (nodeTag(plan))
	{
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_SubqueryScan:
			return SjPlanHasNode(((SubqueryScan *) plan)->subplan);
		default:
			break;
	}
	foreach(lc, children)
		if (SjPlanHasNode(lfirst(lc)))
			return true;
	return SjPlanHasNode(plan->lefttree) || SjPlanHasNode(plan->righttree);
}

/*
 * planner_hook: a fresh list of kept paths for each planner call; and no
 * JIT compilation for a plan with a SimJoin node.  The planner estimates a
 * similarity join's pairs at a third of the cross product, so such a plan
 * looks costly enough for JIT, whose compilation (a tenth of a second or
 * more) takes longer than the expressions it would speed up here: the
 * node's inputs are marshalled by its own code.
 */
static PlannedStmt *
SjPlanner(Query *parse, const char *query_string, int cursorOptions,
		  ParamListInfo boundParams)
{
	List	   *saved = sj_kept_paths;
	PlannedStmt *result;
	ListCell   *lc;

	sj_kept_paths = NIL;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		sj_kept_paths = saved;
	}
	PG_END_TRY();
	if (result->jitFlags != PGJIT_NONE)
	{
		bool		has = SjPlanHasNode(result->planTree);

		foreach(lc, result->subplans)
			has = has || SjPlanHasNode(lfirst(lc));
		if (has)
			result->jitFlags = PGJIT_NONE;
	}
	return result;
}

/* set_join_pathlist_hook: offer Custom Scan (SimJoin) where it applies. */
static void
SjJoinPathlist(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			   RelOptInfo *innerrel, JoinType jointype,
			   JoinPathExtraData *extra)
{
	SjJoinPlanInfo info;
	SpecialJoinInfo inner_sjinfo;
	Path	   *outer_path = outerrel->cheapest_total_path;
	Path	   *inner_path = innerrel->cheapest_total_path;
	List	   *joinclauses = NIL;
	List	   *theta = NIL;
	ListCell   *lc;
	bool		found = false;
	CustomPath *path;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
	if (!sj_enable_customscan)
		return;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		jointype != JOIN_SEMI && jointype != JOIN_ANTI)
		return;
	if (outer_path == NULL || inner_path == NULL ||
		PATH_REQ_OUTER(outer_path) || PATH_REQ_OUTER(inner_path) ||
		!bms_is_empty(joinrel->lateral_relids))
		return;

	memset(&info, 0, sizeof(info));
	info.jointype = jointype;
	info.relids = joinrel->relids;
	info.theta_strategy = -1;
	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			return;				/* gating quals: leave to PostgreSQL */
		if ((jointype == JOIN_LEFT || jointype == JOIN_ANTI) &&
			RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			info.other_quals = lappend(info.other_quals, rinfo->clause);
		else
			joinclauses = lappend(joinclauses, rinfo->clause);
	}

	/* an eps or jaccard condition first */
	foreach(lc, joinclauses)
	{
		Expr	   *clause = lfirst(lc);

		if (!found && (SjMatchSimilarity(root, clause, outerrel->relids,
										 innerrel->relids, &info) ||
					   SjMatchGis(root, clause, outerrel->relids,
								  innerrel->relids, &info)))
		{
			found = true;
			info.engine_clauses = list_make1(clause);
		}
		else
			info.residual = lappend(info.residual, clause);
	}
	/* else the comparisons between the sides that the theta engine takes */
	if (!found)
	{
		info.residual = NIL;
		foreach(lc, joinclauses)
		{
			Expr	   *clause = lfirst(lc);

			if (SjThetaClauseOk(root, clause, outerrel->relids, innerrel->relids))
				theta = lappend(theta, clause);
			else
				info.residual = lappend(info.residual, clause);
		}
		if (theta == NIL)
			return;
		info.op = SJ_OP_THETA;
		info.engine_clauses = theta;
		info.theta_strategy = SjThetaStrategyOf(theta, outerrel->relids,
												innerrel->relids);
		if (info.theta_strategy < 0)
			return;
	}

	/* pairs as an inner join forms them, whatever the join's type */
	inner_sjinfo = *extra->sjinfo;
	inner_sjinfo.jointype = JOIN_INNER;
	info.clause_sel = clauselist_selectivity(root, info.engine_clauses, 0,
											 JOIN_INNER, &inner_sjinfo);
	info.pair_sel = info.op == SJ_OP_THETA ?
		SjThetaPairSelectivity(root, info.engine_clauses, outerrel->relids,
							   innerrel->relids, &inner_sjinfo) :
		info.clause_sel;
	/* points: from d and the points' statistics, which PostGIS's omits */
	if (info.gis)
	{
		double		sel = SjGisPairSelectivity(root, info.gis, info.outer_arg,
											   info.inner_arg, info.threshold);

		if (sel >= 0)
			info.pair_sel = sel;
	}

	/* one process: a self-join reads its table once (parallel paths: twice) */
	{
		SjJoinPlanInfo serial = info;

		serial.self = SjSelfJoinable(root, outerrel, innerrel, &info);
		path = SjMakePath(root, joinrel, &serial, outer_path, inner_path, extra,
						  SJ_PATH_SERIAL);
	}
	SjKeepPath(root, joinrel, path);
	add_path(joinrel, (Path *) path);

	/*
	 * A self-join is not split: its partial paths would read and join two
	 * inputs, twice the engine's work, and their cost, which spreads the
	 * pairs' emission over the workers, rests on PostgreSQL's estimate of
	 * an eps or Jaccard clause (a third of the cross product, where
	 * near-duplicate joins find a few pairs a row).  Measured on two H100
	 * (test/bench/BENCHMARKS.md, "Eighteenth session"): a 200 K x 384-D
	 * self-join forming its pairs took 1.4-1.6 s as a parallel plan of two
	 * inputs, whose workers each start the GPU, against 0.21 s for its
	 * count as a self-join.
	 */
	if (((SjJoinPlanInfo *) linitial(path->custom_private))->self)
		return;

	/*
	 * The outer side split across parallel workers, each joining its share
	 * against all of the inner rows: read by each participant, or read once
	 * by all of them together into shared memory (a partial inner path).
	 */
	if (joinrel->consider_parallel && outerrel->partial_pathlist != NIL)
	{
		Path	   *partial_outer = linitial(outerrel->partial_pathlist);

		if (PATH_REQ_OUTER(partial_outer))
			return;
		if (inner_path->parallel_safe)
			add_partial_path(joinrel, (Path *) SjMakePath(root, joinrel, &info,
														  partial_outer, inner_path,
														  extra, SJ_PATH_PARTIAL));
		if (innerrel->partial_pathlist != NIL)
		{
			Path	   *partial_inner = linitial(innerrel->partial_pathlist);

			if (!PATH_REQ_OUTER(partial_inner))
				add_partial_path(joinrel, (Path *) SjMakePath(root, joinrel, &info,
															  partial_outer, partial_inner,
															  extra, SJ_PATH_SHARED_INNER));
		}
	}
}

/* Our join path among rel's paths (possibly under a projection), or NULL. */
static CustomPath *
SjFindJoinPath(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (IsA(p, ProjectionPath))
			p = ((ProjectionPath *) p)->subpath;
		if (IsA(p, CustomPath) && ((CustomPath *) p)->methods == &sj_path_methods)
			return (CustomPath *) p;
	}
	return NULL;
}

/* Is every output column of the grouping target a plain count(*)? */
static bool
SjOnlyCountStar(PathTarget *target)
{
	ListCell   *lc;

	if (target->exprs == NIL)
		return false;
	foreach(lc, target->exprs)
	{
		Aggref	   *agg = lfirst(lc);

		if (!IsA(agg, Aggref) || agg->aggfnoid != F_COUNT_ || !agg->aggstar ||
			agg->aggfilter || agg->aggdistinct || agg->aggorder ||
			agg->agglevelsup != 0 || agg->aggsplit != AGGSPLIT_SIMPLE)
			return false;
	}
	return true;
}

/*
 * create_upper_paths_hook: "SELECT count(*) FROM <a SimJoin join>" as one
 * node that counts pairs (the engines' count mode when nothing else filters
 * them) and returns one row.
 */
static void
SjUpperPaths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
			 RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	CustomPath *join;
	CustomPath *cpath;
	SjJoinPlanInfo *info;
	Cost		read_discount;

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (!sj_enable_customscan || stage != UPPERREL_GROUP_AGG)
		return;
	if (parse->groupClause || parse->groupingSets || parse->havingQual ||
		parse->hasTargetSRFs || !parse->hasAggs ||
		!SjOnlyCountStar(output_rel->reltarget))
		return;
	join = SjKeptPath(root, input_rel);
	if (join == NULL)
		join = SjFindJoinPath(input_rel);
	if (join == NULL || join->path.parallel_workers > 0)
		return;
	info = palloc(sizeof(SjJoinPlanInfo));
	*info = *(SjJoinPlanInfo *) linitial(join->custom_private);
	if (info->other_quals != NIL)
		return;
	info->count = true;

	cpath = makeNode(CustomPath);
	/* counting reads plain table scans with parallel workers (parscan.c) */
	read_discount = 0;
	if (info->jointype == JOIN_INNER && info->residual == NIL && !info->gis)
	{
		Path	   *outer = linitial(join->custom_paths);
		Path	   *inner = lsecond(join->custom_paths);

		/* values are marshalled as they stream in, no tuple is kept */
		read_discount = SjMs((SJ_MARSHAL_MS_PER_ROW - SJ_COUNT_MARSHAL_MS_PER_ROW) *
							 outer->rows) +
			SjParallelReadDiscount(root, info, outer, info->outer_arg);
		/* a self-join reads its inner input not at all */
		if (!info->self)
			read_discount += SjMs((SJ_MARSHAL_MS_PER_ROW - SJ_COUNT_MARSHAL_MS_PER_ROW) *
								  inner->rows) +
				SjParallelReadDiscount(root, info, inner, info->inner_arg);
	}
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = 1;
	cpath->path.pathkeys = NIL;
	cpath->path.startup_cost = join->path.total_cost - info->emit_cost +
		(info->residual || info->gis ? info->emit_cost / 2 : 0) + cpu_tuple_cost -
		read_discount;
	cpath->path.total_cost = cpath->path.startup_cost;
	cpath->flags = 0;
	cpath->custom_paths = join->custom_paths;
	cpath->custom_private = list_make1(info);
	cpath->methods = &sj_path_methods;
	add_path(output_rel, (Path *) cpath);
}

/* Append the expressions of tlist to scan_tlist as new entries. */
static List *
SjAppendTlist(List *scan_tlist, List *tlist)
{
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(te->expr),
											 list_length(scan_tlist) + 1,
											 NULL, false));
	}
	return scan_tlist;
}

/*
 * PlanCustomPath: the scan tuple is [count columns,] outer columns, inner
 * columns; every expression refers to it (setrefs turns Vars into
 * INDEX_VAR references).
 */
/*
 * A copy of clauses, cheapest first (stable), as PostgreSQL's
 * order_qual_clauses (static in createplan.c) orders a join's quals: the
 * theta engines evaluate the conjuncts left to right with short-circuits,
 * so an error (division by zero) is raised for exactly the pairs on which
 * PostgreSQL's own plan would raise it.
 */
static List *
SjOrderQuals(PlannerInfo *root, List *clauses)
{
	int			n = list_length(clauses);
	Node	  **items;
	Cost	   *costs;
	List	   *result = NIL;
	ListCell   *lc;
	int			i = 0;

	if (n <= 1)
		return copyObject(clauses);
	items = palloc(n * sizeof(Node *));
	costs = palloc(n * sizeof(Cost));
	foreach(lc, clauses)
	{
		QualCost	qcost;
		Node	   *clause = (Node *) lfirst(lc);
		int			j;

		cost_qual_eval_node(&qcost, clause, root);
		/* insertion sort: equal costs keep their order */
		for (j = i; j > 0 && costs[j - 1] > qcost.per_tuple; j--)
		{
			items[j] = items[j - 1];
			costs[j] = costs[j - 1];
		}
		items[j] = clause;
		costs[j] = qcost.per_tuple;
		i++;
	}
	for (i = 0; i < n; i++)
		result = lappend(result, copyObject(items[i]));
	pfree(items);
	pfree(costs);
	return result;
}

static Plan *
SjPlanCustomPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				 List *tlist, List *clauses, List *custom_plans)
{
	SjJoinPlanInfo *info = linitial(best_path->custom_private);
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	Plan	   *inner_plan = lsecond(custom_plans);
	List	   *scan_tlist = NIL;
	List	   *args = NIL;
	int			nprefix = 0;

	if (info->count)
	{
		scan_tlist = SjAppendTlist(scan_tlist, tlist);
		nprefix = list_length(tlist);
	}
	scan_tlist = SjAppendTlist(scan_tlist, outer_plan->targetlist);
	scan_tlist = SjAppendTlist(scan_tlist, inner_plan->targetlist);
	if (info->op != SJ_OP_THETA)
		args = list_make3(copyObject(info->outer_arg), copyObject(info->inner_arg),
						  copyObject(info->threshold));
	if (info->gis && info->spheroid)
		args = lappend(args, copyObject(info->spheroid));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = copyObject(info->other_quals);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_make4(args,
									 info->op == SJ_OP_THETA ?
									 SjOrderQuals(root, info->engine_clauses) :
									 copyObject(info->engine_clauses),
									 copyObject(info->residual),
									 info->op == SJ_OP_THETA ?
									 SjOrderQuals(root, list_concat_copy(info->engine_clauses,
																		 info->residual)) :
									 list_concat(SjOrderQuals(root, info->residual),
												 copyObject(info->engine_clauses)));
	cscan->custom_private = list_make5(makeInteger(info->op),
									   makeInteger(info->jointype),
									   makeInteger(info->strict),
									   makeInteger(info->count),
									   makeInteger(nprefix));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(outer_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(inner_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(info->theta_strategy));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(info->swapped));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(best_path->path.parallel_workers));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->cpu));
	cscan->custom_private = lappend(cscan->custom_private,
									makeFloat(psprintf("%.0f", info->pairs)));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->metric));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(info->gis));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(info->self &&
												best_path->path.parallel_workers == 0 &&
												!best_path->path.parallel_aware &&
												SjSelfPlansMatch(best_path, outer_plan,
																 inner_plan)));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_copy(info->relids);
	cscan->methods = &sj_scan_methods;
	return &cscan->scan.plan;
}

PG_FUNCTION_INFO_V1(simjoin_planner_support);

/*
 * Support function of l2_distance and jaccard.  It answers no request: the
 * planner calling it is what matters, since that loads this module (and
 * installs the hooks above) while the first query using them is planned.
 */
Datum
simjoin_planner_support(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(NULL);
}

/* Install the planner hooks and register the node (from _PG_init). */
void
SjCustomScanInit(void)
{
	RegisterCustomScanMethods(&sj_scan_methods);
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = SjJoinPathlist;
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = SjUpperPaths;
	prev_planner_hook = planner_hook;
	planner_hook = SjPlanner;
}
