/*
 * postgis.h
 *		The eps join over PostGIS points (postgis.c): the body of eps_join's
 *		functions for points, the custom scan's clauses and sides.
 */
#ifndef POSTGIS_H
#define POSTGIS_H

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

extern int	SjGisCondition(Expr *clause, Expr **a, Expr **b, Expr **threshold,
						   bool *strict);
extern void *SjPointSideNew(bool geography, const char *what);
extern void SjPointSideDone(void *side, SjParts *parts, SjVectorInput *out);
extern double SjPointEngineEps(void *left, void *right, SjVectorInput *lin,
							   SjVectorInput *rin, double d, double *lo);

/* postgis.c: PostGIS's catalog, for postgis_plan.c */
extern Oid	SjExtensionSchema(Oid ext);
extern Oid	SjGisType(Oid nsp, const char *name);

extern const SjOperatorMethods sj_point_methods;
extern const SjPartOps sj_point_part_ops;	/* SJ_PART_POINTS */

#endif							/* POSTGIS_H */
