/*
 * postgis_plan.c
 *		Custom Scan (SimJoin) over PostGIS points, the planner's part: which
 *		PostGIS conditions between point columns the node runs (cs_planner.c).
 *
 * The planner recognises ST_DWithin(a, b, d), ST_3DDWithin(a, b, d),
 * ST_Distance(a, b) <= d and ST_3DDistance(a, b) <= d (also <, the
 * geometry <-> operator, and the comparison either way round), and for
 * geography ST_DWithin(a, b, d [, use_spheroid]) and ST_Distance(a, b
 * [, use_spheroid]) <= d, where a and b are columns whose typmods say they
 * hold points of one SRID (geometry(Point, srid) for the 2-D functions,
 * geometry(PointZ, srid) for the 3-D ones, geography(Point[, srid])).
 * The engine joins at eps widened as for eps_join (geometry) or at the
 * outer chord bound (geography, either use_spheroid: the sphere's radius
 * lies between the ellipsoid's extreme radii of curvature), which gives a
 * superset of the pairs; the clause itself is the node's filter on every
 * candidate but those the bounds settle as for eps_join (SjPointSettle,
 * postgis_geog.c: geometry and geography surely within d, geography with a
 * constant use_spheroid also surely beyond d), so every row is PostGIS's
 * own answer.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "postgis.h"

/* What the planner looks up, by OID (no FmgrInfo: nothing runs). */
typedef struct SjGisPlan
{
	Oid			extension;
	Oid			geometry;
	Oid			geography;
	Oid			typmod_type;	/* postgis_typmod_type(int4) */
	Oid			typmod_srid;	/* postgis_typmod_srid(int4) */
	Oid			fn[SJ_GIS_FN_N];
} SjGisPlan;

static SjGisPlan sj_gis_plan;
static bool sj_gis_plan_valid = false;

/* A function of schema nsp by name and argument types, or InvalidOid. */
static Oid
SjGisFuncOid(Oid nsp, const char *name, int nargs, Oid a, Oid b, Oid c, Oid d)
{
	Oid			argtypes[4] = {a, b, c, d};

	return LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
									 makeString(pstrdup(name))),
						  nargs, argtypes, true);
}

/*
 * PostGIS's functions for the planner; false (no error) where PostGIS is
 * not installed, is being installed, or lacks one of them.
 */
static bool
SjGisPlanLookup(void)
{
	Oid			ext;
	Oid			nsp;
	Oid			g,
				gg;
	SjGisPlan	p;
	int			i;

	if (creating_extension)
		return false;
	ext = get_extension_oid("postgis", true);
	if (!OidIsValid(ext))
		return false;
	if (sj_gis_plan_valid && sj_gis_plan.extension == ext)
		return true;
	sj_gis_plan_valid = false;
	memset(&p, 0, sizeof(p));
	nsp = SjExtensionSchema(ext);
	if (!OidIsValid(nsp))
		return false;
	g = p.geometry = SjGisType(nsp, "geometry");
	gg = p.geography = SjGisType(nsp, "geography");
	if (!OidIsValid(g) || !OidIsValid(gg))
		return false;
	p.typmod_type = SjGisFuncOid(nsp, "postgis_typmod_type", 1, INT4OID, 0, 0, 0);
	p.typmod_srid = SjGisFuncOid(nsp, "postgis_typmod_srid", 1, INT4OID, 0, 0, 0);
	p.fn[SJ_GIS_FN_DWITHIN] = SjGisFuncOid(nsp, "st_dwithin", 3, g, g, FLOAT8OID, 0);
	p.fn[SJ_GIS_FN_DWITHIN3D] = SjGisFuncOid(nsp, "st_3ddwithin", 3, g, g, FLOAT8OID, 0);
	p.fn[SJ_GIS_FN_DISTANCE] = SjGisFuncOid(nsp, "st_distance", 2, g, g, 0, 0);
	p.fn[SJ_GIS_FN_DISTANCE3D] = SjGisFuncOid(nsp, "st_3ddistance", 2, g, g, 0, 0);
	p.fn[SJ_GIS_FN_KNN] = SjGisFuncOid(nsp, "geometry_distance_centroid", 2, g, g, 0, 0);
	p.fn[SJ_GIS_FN_GDWITHIN] = SjGisFuncOid(nsp, "st_dwithin", 4, gg, gg, FLOAT8OID, BOOLOID);
	p.fn[SJ_GIS_FN_GDISTANCE] = SjGisFuncOid(nsp, "st_distance", 3, gg, gg, BOOLOID, 0);
	if (!OidIsValid(p.typmod_type) || !OidIsValid(p.typmod_srid))
		return false;
	for (i = 1; i < SJ_GIS_FN_N; i++)
		if (!OidIsValid(p.fn[i]))
			return false;
	p.extension = ext;
	sj_gis_plan = p;
	sj_gis_plan_valid = true;
	return true;
}

/* Which of the recognised PostGIS functions funcid is (SJ_GIS_FN_NONE: none). */
static int
SjGisFunctionOf(Oid funcid)
{
	int			i;

	for (i = 1; i < SJ_GIS_FN_N; i++)
		if (sj_gis_plan.fn[i] == funcid)
			return i;
	return SJ_GIS_FN_NONE;
}

/*
 * The points a column holds, from its type and typmod: 2 or 3 dimensions
 * (Point or PointM; PointZ or PointZM), 0 for anything else (other
 * geometries, or no typmod).  *srid: the typmod's SRID.
 */
static int
SjGisColumnDims(Expr *arg, bool geography, int32 *srid)
{
	Var		   *v;
	char	   *type;

	while (arg && IsA(arg, RelabelType))
		arg = ((RelabelType *) arg)->arg;
	if (arg == NULL || !IsA(arg, Var) || ((Var *) arg)->varlevelsup != 0)
		return 0;
	v = (Var *) arg;
	if (v->vartype != (geography ? sj_gis_plan.geography : sj_gis_plan.geometry) ||
		v->vartypmod < 0)
		return 0;
	type = TextDatumGetCString(OidFunctionCall1(sj_gis_plan.typmod_type,
												Int32GetDatum(v->vartypmod)));
	*srid = DatumGetInt32(OidFunctionCall1(sj_gis_plan.typmod_srid,
										   Int32GetDatum(v->vartypmod)));
	if (strcmp(type, "Point") == 0 || strcmp(type, "PointM") == 0)
		return 2;
	if (strcmp(type, "PointZ") == 0 || strcmp(type, "PointZM") == 0)
		return 3;
	return 0;
}

/*
 * Is clause a PostGIS distance condition between two point columns that
 * the node runs (see above)?  Returns SJ_GIS_* flags (0: not one) and sets
 * the call's two point arguments in order, the threshold and strictness,
 * and for geography *spheroid, its use_spheroid argument where that is not
 * a constant that is not NULL (else NULL): the node checks that it is not
 * NULL on each pair the bounds settle within d, as PostGIS's strict
 * functions return NULL for a NULL argument.
 * Which side each argument reads, and whether the threshold is known
 * before the join, is for the caller to check.
 */
int
SjGisCondition(Expr *clause, Expr **a, Expr **b, Expr **threshold, bool *strict,
			   Expr **spheroid)
{
	List	   *args;
	Expr	   *call;
	Expr	   *other = NULL;
	Oid			funcid;
	int			fn;
	int			flags;
	int			want_dims;
	int32		srid_a = 0,
				srid_b = 0;
	bool		geography;

	*strict = false;
	*spheroid = NULL;
	if (IsA(clause, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) clause;

		if (f->funcresulttype != BOOLOID || list_length(f->args) < 3 ||
			list_length(f->args) > 4)
			return 0;
		if (!SjGisPlanLookup())
			return 0;
		fn = SjGisFunctionOf(f->funcid);
		if (fn != SJ_GIS_FN_DWITHIN && fn != SJ_GIS_FN_DWITHIN3D &&
			fn != SJ_GIS_FN_GDWITHIN)
			return 0;
		args = f->args;
		*threshold = lthird(args);
		flags = SJ_GIS_TOLERANCE;
	}
	else if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) clause;
		bool		call_left;
		Oid			cmp;

		set_opfuncid(op);
		cmp = op->opfuncid;
		if (cmp != F_FLOAT8LE && cmp != F_FLOAT8LT && cmp != F_FLOAT8GE &&
			cmp != F_FLOAT8GT)
			return 0;
		call = linitial(op->args);
		call_left = IsA(call, FuncExpr) || IsA(call, OpExpr);
		if (!call_left)
		{
			call = lsecond(op->args);
			if (!IsA(call, FuncExpr) && !IsA(call, OpExpr))
				return 0;
		}
		other = call_left ? lsecond(op->args) : linitial(op->args);
		/* "distance <= d", "distance < d", "d >= distance", "d > distance" */
		if (call_left ? (cmp == F_FLOAT8GE || cmp == F_FLOAT8GT) :
			(cmp == F_FLOAT8LE || cmp == F_FLOAT8LT))
			return 0;
		*strict = cmp == F_FLOAT8LT || cmp == F_FLOAT8GT;
		if (IsA(call, FuncExpr))
		{
			funcid = ((FuncExpr *) call)->funcid;
			args = ((FuncExpr *) call)->args;
		}
		else
		{
			set_opfuncid((OpExpr *) call);
			funcid = ((OpExpr *) call)->opfuncid;
			args = ((OpExpr *) call)->args;
		}
		if (list_length(args) < 2 || !SjGisPlanLookup())
			return 0;
		fn = SjGisFunctionOf(funcid);
		if (fn != SJ_GIS_FN_DISTANCE && fn != SJ_GIS_FN_DISTANCE3D &&
			fn != SJ_GIS_FN_KNN && fn != SJ_GIS_FN_GDISTANCE)
			return 0;
		*threshold = other;
		flags = 0;
	}
	else
		return 0;

	geography = fn == SJ_GIS_FN_GDWITHIN || fn == SJ_GIS_FN_GDISTANCE;
	want_dims = fn == SJ_GIS_FN_DWITHIN3D || fn == SJ_GIS_FN_DISTANCE3D ? 3 : 2;
	*a = linitial(args);
	*b = lsecond(args);
	if (SjGisColumnDims(*a, geography, &srid_a) != want_dims ||
		SjGisColumnDims(*b, geography, &srid_b) != want_dims ||
		srid_a != srid_b || srid_a <= 0)
		return 0;
	if (geography)
	{
		/* use_spheroid: a constant lets the node settle most candidates */
		Node	   *sph = fn == SJ_GIS_FN_GDWITHIN ?
			(list_length(args) > 3 ? lfourth(args) : NULL) :
			(list_length(args) > 2 ? lthird(args) : NULL);

		if (sph && IsA(sph, Const) && !((Const *) sph)->constisnull)
			flags |= DatumGetBool(((Const *) sph)->constvalue) ?
				SJ_GIS_SPHEROID : SJ_GIS_SPHERE;
		else if (sph)
			*spheroid = (Expr *) sph;
	}
	return flags | (geography ? SJ_GIS_GEOGRAPHY : SJ_GIS_GEOMETRY);
}
