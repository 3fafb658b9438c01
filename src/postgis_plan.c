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

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

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

/* ---------------------------------------------------------------------
 * The pairs within d, from the points' statistics
 *
 * PostGIS estimates ST_DWithin between two columns without d (its
 * selectivity of the condition does not change with d), so the cost of
 * the engines, which turns on the pairs they form, would not either.  The
 * pairs are estimated here from the histograms PostGIS's ANALYZE keeps for
 * each point column (pg_statistic, the stanumbers of its own statistics
 * kinds: a header, then a grid of cells over the sample's extent, each
 * with the sampled points it holds): for each cell of the outer's grid,
 * its share of the outer points, times the inner's share within a cube of
 * the ball's volume around the cell's centre, the inner's points taken as
 * spread evenly within each of its cells.  Geography (a histogram of
 * geocentric coordinates of points on a sphere: even spreading within a
 * cell does not hold) keeps PostGIS's estimate, as do parameters for d and
 * columns without statistics or whose statistics the user may not read.
 * --------------------------------------------------------------------- */
#define SJ_GIS_STATS_ND		102 /* PostGIS's STATISTIC_KIND_ND */
#define SJ_GIS_STATS_2D		103 /* PostGIS's STATISTIC_KIND_2D */
#define SJ_GIS_STATS_DIMS	4	/* its ND_DIMS */
/* the header's floats: ndims, size[4], extent min[4] and max[4], then six
 * counts (table, sample, not null, histogram features, cells, covered) */
#define SJ_GIS_STATS_HEADER (1 + 3 * SJ_GIS_STATS_DIMS + 6)

/* One column's histogram, over its first dims dimensions. */
typedef struct SjGisHist
{
	int			dims;
	int			size[3];
	double		min[3];
	double		width[3];		/* a cell's */
	double		points;			/* share of the rows holding a point */
	double		sampled;		/* points in the histogram */
	double		rows;			/* the table's, when analysed */
	Oid			relid;			/* whose statistics row (one sample) */
	AttrNumber	attnum;
	bool		inherit;
	double	   *mass;			/* each cell's share of the points */
	double	   *cum;			/* points below each grid corner, (size + 1)^dims */
} SjGisHist;

/* Free what SjGisHistLoad allocated (h zeroed first: any part may be NULL). */
static void
SjGisHistFree(SjGisHist *h)
{
	if (h->mass)
		pfree(h->mass);
	if (h->cum)
		pfree(h->cum);
}

/*
 * Read the histogram of arg (a Var) over dims dimensions: false where there
 * is none, it is not PostGIS's layout, or the user may not read it.
 */
static bool
SjGisHistLoad(PlannerInfo *root, Expr *arg, int dims, SjGisHist *h)
{
	VariableStatData vardata;
	AttStatsSlot sslot;
	bool		ok = false;
	const float4 *f;
	int			ndims,
				cells = 1,
				dcells = 1,
				corners = 1,
				i,
				k;
	double		total = 0;

	memset(h, 0, sizeof(*h));
	examine_variable(root, (Node *) arg, 0, &vardata);
	if (!HeapTupleIsValid(vardata.statsTuple) || !vardata.acl_ok ||
		!(get_attstatsslot(&sslot, vardata.statsTuple,
						   dims == 2 ? SJ_GIS_STATS_2D : SJ_GIS_STATS_ND,
						   InvalidOid, ATTSTATSSLOT_NUMBERS) ||
		  (dims == 2 && get_attstatsslot(&sslot, vardata.statsTuple,
										 SJ_GIS_STATS_ND, InvalidOid,
										 ATTSTATSSLOT_NUMBERS))))
	{
		ReleaseVariableStats(vardata);
		return false;
	}
	f = sslot.numbers;
	if (sslot.nnumbers <= SJ_GIS_STATS_HEADER ||
		!(f[0] >= dims && f[0] <= SJ_GIS_STATS_DIMS))
		goto done;
	ndims = (int) f[0];
	for (k = 0; k < ndims; k++)
	{
		/* sizes checked before their product, which stays within int */
		if (!(f[1 + k] >= 1 && f[1 + k] <= 1e6) || isnan(f[5 + k]) || isnan(f[9 + k]) ||
			f[9 + k] < f[5 + k] || (double) cells * (int) f[1 + k] > 1000000)
			goto done;
		cells *= (int) f[1 + k];
	}
	/* the cells, the counts of points sampled and with a point */
	if ((double) cells != f[17] || sslot.nnumbers < SJ_GIS_STATS_HEADER + cells ||
		!(f[14] > 0))
		goto done;
	h->dims = dims;
	for (k = 0; k < dims; k++)
	{
		h->size[k] = (int) f[1 + k];
		h->min[k] = f[5 + k];
		h->width[k] = (f[9 + k] - h->min[k]) / h->size[k];
		dcells *= h->size[k];
		corners *= h->size[k] + 1;
	}
	h->points = Max(0.0, Min(1.0, f[15] / f[14]));
	h->rows = f[13];
	{
		Form_pg_statistic st = (Form_pg_statistic) GETSTRUCT(vardata.statsTuple);

		h->relid = st->starelid;
		h->attnum = st->staattnum;
		h->inherit = st->stainherit;
	}
	h->mass = palloc0(sizeof(double) * dcells);
	h->cum = palloc0(sizeof(double) * corners);

	/* the cells of the first dims dimensions, the others summed over */
	for (i = 0; i < cells; i++)
	{
		double		v = f[SJ_GIS_STATS_HEADER + i];
		int			rest = i,
					at = 0,
					stride = 1;

		if (!(v > 0))
			continue;
		for (k = 0; k < ndims; k++)
		{
			int			size = (int) f[1 + k];

			if (k < dims)
			{
				at += (rest % size) * stride;
				stride *= size;
			}
			rest /= size;
		}
		h->mass[at] += v;
		total += v;
	}
	if (!(total > 0))
		goto done;
	h->sampled = total;

	/* the points below each corner: prefix sums along each dimension */
	for (i = 0; i < corners; i++)
	{
		int			rest = i,
					at = 0,
					stride = 1;
		bool		edge = false;

		for (k = 0; k < dims; k++)
		{
			int			c = rest % (h->size[k] + 1);

			rest /= h->size[k] + 1;
			if (c == 0)
				edge = true;
			else
				at += (c - 1) * stride;
			stride *= h->size[k];
		}
		h->cum[i] = edge ? 0 : h->mass[at] / total;
	}
	for (k = 0, i = 1; k < dims; i *= h->size[k] + 1, k++)
	{
		int			c;

		for (c = 0; c < corners; c++)
			if ((c / i) % (h->size[k] + 1) > 0)
				h->cum[c] += h->cum[c - i];
	}
	for (i = 0; i < dcells; i++)
		h->mass[i] /= total;
	ok = true;
done:
	if (!ok)
		SjGisHistFree(h);
	free_attstatsslot(&sslot);
	ReleaseVariableStats(vardata);
	return ok;
}

/* The share of h's points below x (points spread evenly within a cell). */
static double
SjGisHistBelow(const SjGisHist *h, const double *x)
{
	double		u[3],
				sum = 0;
	int			lo[3],
				corner,
				k;

	for (k = 0; k < h->dims; k++)
	{
		if (x[k] <= h->min[k])
			return 0;
		u[k] = h->width[k] > 0 ? Min((x[k] - h->min[k]) / h->width[k], h->size[k]) :
			h->size[k];
		lo[k] = Min((int) u[k], h->size[k] - 1);
		u[k] -= lo[k];
	}
	/* multilinear between the cell's corners */
	for (corner = 0; corner < (1 << h->dims); corner++)
	{
		double		w = 1;
		int			at = 0,
					stride = 1;

		for (k = 0; k < h->dims; k++)
		{
			bool		up = (corner >> k) & 1;

			w *= up ? u[k] : 1 - u[k];
			at += (lo[k] + up) * stride;
			stride *= h->size[k] + 1;
		}
		if (w > 0)
			sum += w * h->cum[at];
	}
	return sum;
}

/* The share of h's points in the cube of side s centred on c. */
static double
SjGisHistCube(const SjGisHist *h, const double *c, double s)
{
	double		sum = 0;
	int			corner,
				k;

	for (corner = 0; corner < (1 << h->dims); corner++)
	{
		double		x[3];
		int			sign = 1;

		for (k = 0; k < h->dims; k++)
		{
			bool		up = (corner >> k) & 1;

			x[k] = up ? c[k] + s / 2 : c[k] - s / 2;
			if (!up)
				sign = -sign;
		}
		sum += sign * SjGisHistBelow(h, x);
	}
	return Max(0.0, sum);
}

/*
 * The share of the rows of outer_arg x inner_arg within threshold of each
 * other, for a condition SjGisCondition recognised (gis: its flags), or -1
 * where it cannot be estimated from the columns' statistics (see above).
 */
double
SjGisPairSelectivity(PlannerInfo *root, int gis, Expr *outer_arg, Expr *inner_arg,
					 Expr *threshold)
{
	Node	   *t = estimate_expression_value(root, (Node *) threshold);
	SjGisHist	a,
				b;
	double		d,
				s,
				sel = 0;
	int32		srid;
	int			dims,
				cells,
				i,
				k;

	if (!(gis & SJ_GIS_GEOMETRY) || !IsA(t, Const) || ((Const *) t)->constisnull ||
		((Const *) t)->consttype != FLOAT8OID)
		return -1;
	d = DatumGetFloat8(((Const *) t)->constvalue);
	dims = SjGisColumnDims(outer_arg, false, &srid);
	if (isnan(d) || (dims != 2 && dims != 3))
		return -1;
	if (d < 0)
		return 0;
	if (!SjGisHistLoad(root, outer_arg, dims, &a))
		return -1;
	if (!SjGisHistLoad(root, inner_arg, dims, &b))
	{
		SjGisHistFree(&a);
		return -1;
	}
	/* the cube of the ball's volume */
	s = dims == 2 ? d * sqrt(M_PI) : d * cbrt(4.0 * M_PI / 3.0);
	for (cells = 1, k = 0; k < dims; k++)
		cells *= a.size[k];
	for (i = 0; i < cells; i++)
	{
		double		c[3];
		int			rest = i;

		if (a.mass[i] <= 0)
			continue;
		for (k = 0; k < dims; k++)
		{
			c[k] = a.width[k] > 0 ?
				a.min[k] + ((rest % a.size[k]) + 0.5) * a.width[k] : a.min[k];
			rest /= a.size[k];
		}
		sel += a.mass[i] * SjGisHistCube(&b, c, s);
	}

	/*
	 * One column's statistics on both sides (a self-join): the sample's
	 * points meet themselves.  A cell's share m of n sampled points has
	 * E[m^2] = p^2 + p/n for its true share p, so the cell's pairs with
	 * itself are counted p/n too many (the cube's overlap of the cell
	 * times); the rows meeting themselves, at distance 0, are added.
	 */
	if (a.relid == b.relid && a.attnum == b.attnum && a.inherit == b.inherit)
	{
		double		own = 1;

		for (k = 0; k < dims; k++)
			if (a.width[k] > 0)
				own *= Min(1.0, s / a.width[k]);
		sel = Max(0.0, sel - own / a.sampled);	/* the shares sum to 1 */
		if (a.rows >= 1)
			sel += 1.0 / (a.rows * a.points);
	}
	sel *= a.points * b.points;
	SjGisHistFree(&a);
	SjGisHistFree(&b);
	return Max(0.0, Min(1.0, sel));
}
