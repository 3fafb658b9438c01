/*
 * postgis.h
 *		The eps join over PostGIS points (postgis.c): the body of eps_join's
 *		functions for points, the custom scan's clauses and sides.
 */
#ifndef POSTGIS_H
#define POSTGIS_H

#include <math.h>

#include "nodes/pathnodes.h"
#include "nodes/primnodes.h"

#include "eps_join.h"
#include "marshal.h"

/* postgis.c: eps_join over PostGIS points */
extern bool SjPointColumn(Oid relid, text *column);
extern int64 SjPointJoinRun(Oid left_relid, text *left_key, text *left_col,
							Oid right_relid, text *right_key, text *right_col,
							double eps, struct Tuplestorestate *store,
							TupleDesc desc);
extern void SjPointRow(void *arg, Datum *values, bool *isnull);
extern void *SjPointPartBegin(const SjPartSpec *spec);
extern Size SjPointPartSize(void *side);
extern void SjPointPartWrite(void *side, char *dst);

/* postgis.c, postgis_plan.c: the custom scan's joins of PostGIS points */
#define SJ_GIS_GEOMETRY		1	/* SjGisCondition's flags */
#define SJ_GIS_GEOGRAPHY	2
#define SJ_GIS_TOLERANCE	4	/* a tolerance argument: < 0 is PostGIS's error */
#define SJ_GIS_SPHEROID		8	/* geography: use_spheroid is a constant true */
#define SJ_GIS_SPHERE		16	/* geography: use_spheroid is a constant false */

/* The PostGIS functions the planner recognises. */
enum
{
	SJ_GIS_FN_NONE,
	SJ_GIS_FN_DWITHIN,			/* ST_DWithin(geometry, geometry, float8) */
	SJ_GIS_FN_DWITHIN3D,		/* ST_3DDWithin(geometry, geometry, float8) */
	SJ_GIS_FN_DISTANCE,			/* ST_Distance(geometry, geometry) */
	SJ_GIS_FN_DISTANCE3D,		/* ST_3DDistance(geometry, geometry) */
	SJ_GIS_FN_KNN,				/* geometry <-> geometry */
	SJ_GIS_FN_GDWITHIN,			/* ST_DWithin(geography, geography, float8, bool) */
	SJ_GIS_FN_GDISTANCE,		/* ST_Distance(geography, geography, bool) */
	SJ_GIS_FN_N
};

/*
 * The bounds that settle a geography candidate without PostGIS (postgis.c,
 * "Geography without PostGIS"): a chord at most lo is surely within d, one
 * at least hi surely beyond it, PostGIS decides those between.  The chord
 * is between the points on the ellipsoid (spheroid) or between their unit
 * vectors (sphere); u[s] are side s's unit vectors, structure of arrays.
 */
typedef struct SjGeogBand
{
	bool		spheroid;
	double		a;				/* semi-major axis, metres */
	double		e2;				/* first eccentricity squared */
	double		lo;
	double		hi;
	const double *u[2];
	size_t		n[2];
} SjGeogBand;

/* What a candidate pair of a join of points is (SjPointSettle). */
typedef enum SjSettle
{
	SJ_SETTLE_ASK,				/* PostGIS's clause decides it */
	SJ_SETTLE_IN,				/* surely within d: joins */
	SJ_SETTLE_OUT				/* surely beyond d: does not */
} SjSettle;

/*
 * The bounds that settle candidates of a join of points at d without
 * PostGIS, for eps_join's functions and the custom scan alike: lo, an
 * engine distance (geometry: the canonical L2; geography: the chord of the
 * unit vectors) at most this is surely within d, -1 where none is; for
 * geography, band, the tighter bounds of postgis_geog.c, which replace lo
 * where they apply (NULL otherwise).
 */
typedef struct SjPointBounds
{
	double		lo;
	const SjGeogBand *band;
} SjPointBounds;

extern SjSettle SjPointSettle(const SjPointBounds *bounds, uint32 l, uint32 r,
							  double v);

/* PostGIS's distance of two (lon, lat) points of an SRID (postgis.c) */
typedef double (*SjGeogDistanceFn) (int32 srid, double lon1, double lat1,
									double lon2, double lat2, bool spheroid);

extern SjGeogBand *SjGeogBandOf(SjGeogDistanceFn dist, int32 srid, double d,
								bool spheroid, const SjVectorInput *l,
								const SjVectorInput *r);

extern int	SjGisCondition(Expr *clause, Expr **a, Expr **b, Expr **threshold,
						   bool *strict, Expr **spheroid);
extern double SjGisPairSelectivity(PlannerInfo *root, int gis, Expr *outer_arg,
								   Expr *inner_arg, Expr *threshold);
extern void *SjPointSideNew(bool geography, const char *what);
extern void SjPointSideDone(void *side, SjParts *parts, SjVectorInput *out);
extern Size SjPointSideExport(void *side, SjVectorInput *in, const uint32 *order,
							   char *dst);
extern void SjPointSideImport(void *side, const char *src, SjVectorInput *out);
extern double SjPointEngineEps(void *left, void *right, SjVectorInput *lin,
							   SjVectorInput *rin, double d, int gis,
							   SjPointBounds *bounds);


/* postgis.c: PostGIS's catalog, for postgis_plan.c */
extern Oid	SjExtensionSchema(Oid ext);
extern Oid	SjGisType(Oid nsp, const char *name);

extern const SjOperatorMethods sj_point_methods;
extern const SjPartOps sj_point_part_ops;	/* SJ_PART_POINTS */

#endif							/* POSTGIS_H */
