/*
 * postgis.c
 *		eps_join and eps_join_count over PostGIS points: geometry (planar,
 *		2-D or 3-D) and geography (metres on the spheroid).
 *
 * simjoin has no compile-time dependency on PostGIS.  The geometry and
 * geography types, and the PostGIS functions used here, are found by name
 * in the schema of the postgis extension at run time; a server without
 * PostGIS never reaches this file.  Points are read from their bytes where
 * they are in PostGIS 3's plain serialized form of a point (SjPointBytes),
 * else through PostGIS's own SQL functions (ST_GeometryType, ST_SRID, ST_X,
 * ST_Y, ST_Z) by fmgr, and marshalled into the same double
 * structure-of-arrays sides as float vectors (eps_join.c), so that the CPU
 * and GPU eps engines run unchanged.
 *
 * Semantics (the same as PostGIS's own predicates):
 *	- geometry points without Z join on ST_DWithin(a, b, eps); points with Z
 *	  on ST_3DDWithin(a, b, eps).  A join of 2-D with 3-D points is refused
 *	  (PostGIS would silently drop Z).  M is ignored, as PostGIS ignores it.
 *	- geography points join on ST_DWithin(a, b, eps) with use_spheroid =
 *	  true, eps in metres.
 *	- every point of a join has the same SRID, else the join is refused as
 *	  PostGIS refuses an operation on mixed SRIDs; NULL and empty points, and
 *	  points with a NaN or infinite coordinate, never join; any other
 *	  geometry type is refused.
 *
 * Exactness.  For geometry, simjoin's canonical L2 (sjdist.h) and PostGIS's
 * point distance, sqrt(dx*dx + dy*dy [+ dz*dz]), are both within 3 units in
 * the last place of the exact distance whatever PostGIS's build does (fused
 * multiply-add, hypot), and they agree bit for bit on builds without
 * contraction.  The engine therefore runs with eps widened by a margin
 * (SJ_GIS_REL relative, SJ_GIS_ABS absolute, which also covers squares
 * that underflow), and every pair whose canonical distance lies in the band
 * (eps_lo, eps_hi] is decided by PostGIS's own ST_DWithin / ST_3DDWithin on
 * points rebuilt from the same coordinates.  The distance column is the
 * canonical L2 of the coordinates, which is what ST_Distance /
 * ST_3DDistance return for points on common (x86-64) builds.
 *
 * For geography the engine filters on the chord between unit vectors
 * (cos lat cos lon, cos lat sin lon, sin lat) with the outer bound below;
 * each candidate is then settled by the tighter bounds of postgis_geog.c,
 * or, where those do not apply, by the inner bound below, and PostGIS
 * decides the rest, the pairs near eps; the distance column is
 * PostGIS's ST_Distance(geography, geography, true).  Latitudes are
 * geodetic, so the unit vector of a point is the normal of the ellipsoid
 * there (the Gauss map), a diffeomorphism of the ellipsoid onto the unit
 * sphere whose derivative along the surface is the shape operator, with
 * principal curvatures 1 / M and 1 / N (the radii of curvature).  Let rmin
 * and rmax bound M and N: for an ellipsoid of revolution the extremes are
 * at the equator (M = b^2 / a, N = a) and the pole (M = N = a^2 / b).
 *	- Outer bound: a geodesic of length s maps to a curve of length at most
 *	  s / rmin on the unit sphere, which is at least the central angle theta
 *	  between the two normals, so theta <= s / rmin: every pair with s <= eps
 *	  has chord = 2 sin(theta / 2) <= 2 sin(min(eps / rmin, pi) / 2).
 *	- Inner bound: the preimage of the great-circle arc between the normals
 *	  is a surface curve of length at most theta * rmax, so s <= theta * rmax:
 *	  a pair with theta * rmax clearly below eps is within eps (PostGIS's
 *	  ST_DWithin, whose point distance is the geodesic, accurate to
 *	  nanometres, agrees), and only the band between the bounds is asked.
 * rmin and rmax are measured once a join on the SRID's own ellipsoid with
 * PostGIS's ST_Distance along short meridian and equator arcs (SjGeogRadii),
 * widened by SJ_GIS_RADIUS_SLACK; SJ_GIS_CHORD_PAD covers the rounding of
 * the unit vectors and of the engine's distance (each a few 1e-16).
 *
 * Size: this file stays whole (about 1,100 lines, a sixth of them this
 * comment; the geography bounds are postgis_geog.c, the planner's
 * recognition of ST_DWithin conditions postgis_plan.c) on purpose: the
 * run-time lookup of PostGIS's types and functions, the marshalling of
 * points (for the functions and for the custom scan's sides, shared inner
 * side included), and the exactness band and its decision by PostGIS are
 * one optional dependency that shares its lookups and bounds, and keeping
 * it in one file keeps PostGIS out of everything else.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "postgis.h"

#define SJ_GIS_REL			(16.0 * DBL_EPSILON)	/* relative band */
#define SJ_GIS_ABS			1e-150	/* absolute band: underflowed squares */
#define SJ_GIS_RADIUS_SLACK	1e-4	/* relative, on measured radii */
#define SJ_GIS_ARC_DEG		1e-3	/* degrees of the measuring arcs */
#define SJ_GIS_CHORD_PAD	1e-9	/* unit sphere: rounding of the filter */

/* PostGIS's types and the functions used here, looked up by name. */
typedef struct SjGis
{
	Oid			extension;		/* pg_extension OID of postgis */
	Oid			geometry;
	Oid			geography;
	FmgrInfo	geomtype;		/* ST_GeometryType(geometry) */
	FmgrInfo	srid;			/* ST_SRID(geometry) */
	FmgrInfo	x;				/* ST_X(geometry) */
	FmgrInfo	y;				/* ST_Y(geometry) */
	FmgrInfo	z;				/* ST_Z(geometry) */
	FmgrInfo	to_geometry;	/* geometry(geography) */
	FmgrInfo	to_geography;	/* geography(geometry) */
	FmgrInfo	makepoint2;		/* ST_MakePoint(float8, float8) */
	FmgrInfo	makepoint3;		/* ST_MakePoint(float8, float8, float8) */
	FmgrInfo	setsrid;		/* ST_SetSRID(geometry, int4) */
	FmgrInfo	dwithin;		/* ST_DWithin(geometry, geometry, float8) */
	FmgrInfo	dwithin3d;		/* ST_3DDWithin(geometry, geometry, float8) */
	FmgrInfo	gdwithin;		/* ST_DWithin(geography, geography, float8,
								 * bool) */
	FmgrInfo	gdistance;		/* ST_Distance(geography, geography, bool) */
} SjGis;

static SjGis sj_gis;
static bool sj_gis_valid = false;

/*
 * A side of points as it is scanned: an eps side (keys and row-major
 * coordinates) and what the points had in common.  Geography rows carry
 * five coordinates: the unit vector, then longitude and latitude.
 */
typedef struct SjPointScan
{
	SjEpsScan	eps;			/* first: SjEpsPartSize reads it */
	bool		geography;
	bool		have_srid;
	int32		srid;
	int64		geoms;			/* non-NULL geometries seen */
} SjPointScan;

/* The header a worker's part starts with; the eps part follows. */
typedef struct SjPointPartHeader
{
	int32		have_srid;
	int32		srid;
	int32		dim;			/* the eps side's dim, -1 if none */
	int32		pad;
} SjPointPartHeader;

#define SJ_POINT_HEADER_SIZE	MAXALIGN(sizeof(SjPointPartHeader))

/* One PostGIS function in schema nsp, by name and argument types. */
static void
SjGisFunc(FmgrInfo *finfo, Oid nsp, const char *name, int nargs, const Oid *argtypes)
{
	List	   *qname = list_make2(makeString(get_namespace_name(nsp)),
								   makeString(pstrdup(name)));
	Oid			fn = LookupFuncName(qname, nargs, argtypes, true);

	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function %s of the postgis extension was not found", name),
				 errhint("simjoin needs PostGIS 3.")));
	fmgr_info_cxt(fn, finfo, TopMemoryContext);
}

/* The schema of an extension (get_extension_schema, which PG 15 keeps static). */
Oid
SjExtensionSchema(Oid ext)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/* A type of schema nsp by name, or InvalidOid. */
Oid
SjGisType(Oid nsp, const char *name)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(name),
						   ObjectIdGetDatum(nsp));
}

/*
 * Look PostGIS up (again, when the extension was dropped and created since
 * the last lookup).  False where PostGIS is not installed in this database.
 */
static bool
SjGisLookup(void)
{
	Oid			ext = get_extension_oid("postgis", true);
	Oid			nsp;
	Oid			g[4];

	if (!OidIsValid(ext))
	{
		sj_gis_valid = false;
		return false;
	}
	if (sj_gis_valid && sj_gis.extension == ext)
		return true;
	sj_gis_valid = false;
	nsp = SjExtensionSchema(ext);
	memset(&sj_gis, 0, sizeof(sj_gis));
	sj_gis.geometry = SjGisType(nsp, "geometry");
	sj_gis.geography = SjGisType(nsp, "geography");
	if (!OidIsValid(sj_gis.geometry) || !OidIsValid(sj_gis.geography))
		return false;

	g[0] = sj_gis.geometry;
	SjGisFunc(&sj_gis.geomtype, nsp, "st_geometrytype", 1, g);
	SjGisFunc(&sj_gis.srid, nsp, "st_srid", 1, g);
	SjGisFunc(&sj_gis.x, nsp, "st_x", 1, g);
	SjGisFunc(&sj_gis.y, nsp, "st_y", 1, g);
	SjGisFunc(&sj_gis.z, nsp, "st_z", 1, g);
	SjGisFunc(&sj_gis.to_geography, nsp, "geography", 1, g);
	g[1] = INT4OID;
	SjGisFunc(&sj_gis.setsrid, nsp, "st_setsrid", 2, g);
	g[0] = sj_gis.geography;
	SjGisFunc(&sj_gis.to_geometry, nsp, "geometry", 1, g);
	g[0] = g[1] = g[2] = FLOAT8OID;
	SjGisFunc(&sj_gis.makepoint2, nsp, "st_makepoint", 2, g);
	SjGisFunc(&sj_gis.makepoint3, nsp, "st_makepoint", 3, g);
	g[0] = g[1] = sj_gis.geometry;
	SjGisFunc(&sj_gis.dwithin, nsp, "st_dwithin", 3, g);
	SjGisFunc(&sj_gis.dwithin3d, nsp, "st_3ddwithin", 3, g);
	g[0] = g[1] = sj_gis.geography;
	g[3] = BOOLOID;
	SjGisFunc(&sj_gis.gdwithin, nsp, "st_dwithin", 4, g);
	g[2] = BOOLOID;
	SjGisFunc(&sj_gis.gdistance, nsp, "st_distance", 3, g);
	sj_gis.extension = ext;
	sj_gis_valid = true;
	return true;
}

/* Call a one-argument PostGIS function; *isnull set where it returns NULL. */
static Datum
SjGisCall1(FmgrInfo *finfo, Datum arg, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, finfo, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = arg;
	fcinfo->args[0].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/*
 * Is the named column of relid a PostGIS geometry or geography?  The
 * relation is locked first, so that the answer holds for the statement.
 */
bool
SjPointColumn(Oid relid, text *column)
{
	AttrNumber	attnum;
	Oid			typid;

	if (!OidIsValid(get_extension_oid("postgis", true)))
		return false;
	SjCheckRelation(relid);
	attnum = get_attnum(relid, text_to_cstring(column));
	if (attnum == InvalidAttrNumber || attnum < 0)
		return false;
	typid = getBaseType(get_atttype(relid, attnum));
	if (!SjGisLookup())
		return false;
	return typid == sj_gis.geometry || typid == sj_gis.geography;
}

/* The mixed-SRID error, worded as PostGIS words it. */
static void
SjErrorSrid(int32 a, int32 b)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("operation on mixed SRID geometries (Point, %d) != (Point, %d)", a, b)));
}

/* Two-dimensional and three-dimensional points do not join. */
static void
SjErrorPointDims(int a, int b)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("cannot join %d-D points with %d-D points", a, b),
			 errhint("Use ST_Force2D or ST_Force3D on one side (through a view).")));
}

/*
 * The coordinates of a point in PostGIS 3's serialized form (GSERIALIZED
 * version 2: a varlena header, a 21-bit SRID in 3 bytes, a flags byte, then
 * for a point without bounding box or extended flags its type, its number of
 * points, 0 or 1, and its coordinates), read from its bytes without a copy.
 * False for anything else (another version, a bounding box, extended flags,
 * another type, a geography point without SRID), which SjPointRow then reads
 * through PostGIS's functions: this only reads faster what they return.
 */
static bool
SjPointBytes(Datum value, bool geography, int32 *srid, bool *empty, double *c,
			 int *dim)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(value);
	const uint8 *p;
	uint8		flags;
	uint32		type,
				npoints;
	int			ndims;
	int32		s;

	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		return false;			/* compressed or out of line */
	p = (const uint8 *) VARDATA_ANY(v);
	if (VARSIZE_ANY_EXHDR(v) < 12)
		return false;
	flags = p[3];
	/* version 2 (0x40); no bounding box (0x04) nor extended flags (0x20) */
	if ((flags & 0x40) == 0 || (flags & (0x04 | 0x20)) != 0 ||
		((flags & 0x08) != 0) != geography)
		return false;
	s = ((int32) p[0] << 16) | ((int32) p[1] << 8) | (int32) p[2];
	s = (int32) ((uint32) s << 11) >> 11;	/* 21 bits, signed */
	if (geography && s == 0)
		return false;
	memcpy(&type, p + 4, sizeof(uint32));
	memcpy(&npoints, p + 8, sizeof(uint32));
	ndims = 2 + (flags & 0x01) + ((flags & 0x02) >> 1);
	if (type != 1 || npoints > 1 ||
		VARSIZE_ANY_EXHDR(v) != 12 + npoints * ndims * sizeof(double))
		return false;
	*srid = s;
	*empty = npoints == 0;
	*dim = (flags & 0x01) ? 3 : 2;
	if (npoints == 1)
		memcpy(c, p + 12, *dim * sizeof(double));
	return true;
}

/* Row callback: keep one row's key and point coordinates. */
void
SjPointRow(void *arg, Datum *values, bool *isnull)
{
	SjPointScan *scan = (SjPointScan *) arg;
	Datum		g;
	Datum		d;
	bool		null;
	bool		empty;
	double		c[5];
	int			dim;
	int			k;
	int32		srid;
	char	   *type;

	if (isnull[0])
		SjErrorNullKey(scan->eps.relid, &scan->eps.cols[0]);
	if (isnull[1])
	{
		scan->eps.skipped++;
		return;
	}
	if (!sj_gis_valid && !SjGisLookup())
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"postgis\" is not installed")));
	g = values[1];
	if (SjPointBytes(g, scan->geography, &srid, &empty, c, &dim))
	{
		scan->geoms++;
		if (!scan->have_srid)
		{
			scan->srid = srid;
			scan->have_srid = true;
		}
		else if (srid != scan->srid)
			SjErrorSrid(scan->srid, srid);
		if (empty)
		{
			scan->eps.skipped++;
			return;
		}
		goto have_point;
	}
	if (scan->geography)
		g = SjGisCall1(&sj_gis.to_geometry, g, &null);
	scan->geoms++;

	type = TextDatumGetCString(SjGisCall1(&sj_gis.geomtype, g, &null));
	if (strcmp(type, "ST_Point") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("eps_join joins points only, but %s holds a %s",
						scan->eps.what, type + 3),
				 errhint("Join ST_Centroid or ST_PointOnSurface of the geometries, or leave other types out through a view.")));
	srid = DatumGetInt32(SjGisCall1(&sj_gis.srid, g, &null));
	if (!scan->have_srid)
	{
		scan->srid = srid;
		scan->have_srid = true;
	}
	else if (srid != scan->srid)
		SjErrorSrid(scan->srid, srid);

	d = SjGisCall1(&sj_gis.x, g, &null);
	if (null)
	{
		/* an empty point never joins */
		scan->eps.skipped++;
		return;
	}
	c[0] = DatumGetFloat8(d);
	c[1] = DatumGetFloat8(SjGisCall1(&sj_gis.y, g, &null));
	d = SjGisCall1(&sj_gis.z, g, &null);
	dim = null ? 2 : 3;
	if (!null)
		c[2] = DatumGetFloat8(d);
have_point:
	if (scan->geography)
	{
		/* the unit vector of (lon, lat) in degrees, then lon and lat */
		double		lon = c[0] * (M_PI / 180.0);
		double		lat = c[1] * (M_PI / 180.0);

		c[3] = c[0];
		c[4] = c[1];
		c[0] = cos(lat) * cos(lon);
		c[1] = cos(lat) * sin(lon);
		c[2] = sin(lat);
		dim = 5;
	}
	if (scan->eps.dim < 0)
		scan->eps.dim = dim;
	else if (dim != scan->eps.dim)
		SjErrorPointDims(scan->eps.dim, dim);

	for (k = 0; k < dim; k++)
	{
		/* NaN and infinite coordinates never join */
		if (!isfinite(c[k]))
		{
			scan->eps.skipped++;
			return;
		}
	}
	scan->eps.rows = SjGrow(scan->eps.rows, &scan->eps.cap_rows,
							(scan->eps.n + 1) * dim, sizeof(double));
	scan->eps.keys = SjGrow(scan->eps.keys, &scan->eps.cap_keys, scan->eps.n + 1,
							sizeof(int64));
	memcpy((double *) scan->eps.rows + scan->eps.n * dim, c, dim * sizeof(double));
	scan->eps.keys[scan->eps.n] = SjKeyValue(values[0], scan->eps.cols[0].typid);
	scan->eps.n++;
}

/* A parallel worker's side of points, for the columns of spec. */
void *
SjPointPartBegin(const SjPartSpec *spec)
{
	SjPointScan *scan = palloc0(sizeof(SjPointScan));

	SjEpsSideInit(&scan->eps, spec->what);
	scan->eps.relid = spec->relid;
	scan->eps.cols[0].typid = spec->typids[0];
	scan->eps.cols[0].name = pstrdup(NameStr(spec->keyname));
	if (!SjGisLookup())
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"postgis\" is not installed")));
	scan->geography = getBaseType(spec->typids[1]) == sj_gis.geography;
	return scan;
}

/* Bytes of a worker's side of points: a header, then an eps part. */
Size
SjPointPartSize(void *side)
{
	return SJ_POINT_HEADER_SIZE + SjEpsPartSize(side);
}

/* Serialize a worker's side of points into dst (SjPointPartSize bytes). */
void
SjPointPartWrite(void *side, char *dst)
{
	SjPointScan *scan = (SjPointScan *) side;
	SjPointPartHeader *h = (SjPointPartHeader *) dst;

	h->have_srid = scan->have_srid;
	h->srid = scan->srid;
	h->dim = scan->eps.dim;
	h->pad = 0;
	SjEpsPartWrite(&scan->eps, dst + SJ_POINT_HEADER_SIZE);
}

/* The part format of SJ_PART_POINTS sides (parscan.c). */
const SjPartOps sj_point_part_ops = {NULL, SjPointPartBegin, SjPointRow, SjPointPartSize, SjPointPartWrite};

/*
 * Merge the leader's side with the workers' parts (checking that SRIDs and
 * dimensions agree) into the engine's layout.
 */
static void
SjPointSideFinish(SjPointScan *scan, SjParts *parts, SjVectorInput *out)
{
	SjParts		eparts;
	int			p;

	if (parts)
	{
		eparts = *parts;
		eparts.part = palloc(Max(parts->nparts, 1) * sizeof(char *));
		for (p = 0; p < parts->nparts; p++)
		{
			const SjPointPartHeader *h = (const SjPointPartHeader *) parts->part[p];

			if (h->have_srid && !scan->have_srid)
			{
				scan->srid = h->srid;
				scan->have_srid = true;
			}
			else if (h->have_srid && h->srid != scan->srid)
				SjErrorSrid(scan->srid, h->srid);
			if (h->dim >= 0 && scan->eps.dim < 0)
				scan->eps.dim = h->dim;
			else if (h->dim >= 0 && h->dim != scan->eps.dim)
				SjErrorPointDims(scan->eps.dim, h->dim);
			eparts.part[p] = parts->part[p] + SJ_POINT_HEADER_SIZE;
		}
	}
	SjEpsSideFinish(&scan->eps, parts ? &eparts : NULL, out);
	if (parts)
		pfree(eparts.part);
}

/* Resolve and check the key and point columns of one side. */
static void
SjPointPrepare(SjPointScan *scan, Oid relid, text *key, text *column)
{
	Oid			typid;

	memset(scan, 0, sizeof(*scan));
	SjCheckRelation(relid);
	SjEpsSideInit(&scan->eps, "");
	scan->eps.relid = relid;
	SjResolveColumn(relid, text_to_cstring(key), &scan->eps.cols[0]);
	SjResolveColumn(relid, text_to_cstring(column), &scan->eps.cols[1]);
	SjCheckKeyColumn(relid, &scan->eps.cols[0]);
	typid = getBaseType(scan->eps.cols[1].typid);
	if (typid != sj_gis.geometry && typid != sj_gis.geography)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" must be geometry or geography like the other side's, not %s",
						scan->eps.cols[1].name, get_rel_name(relid),
						format_type_be(scan->eps.cols[1].typid))));
	scan->geography = typid == sj_gis.geography;
	snprintf(scan->eps.what, sizeof(scan->eps.what), "column \"%s\" of relation \"%s\"",
			 scan->eps.cols[1].name, get_rel_name(relid));
}

/* SjSideFinishFn of a side of points: into its SjVectorInput. */
static void
SjPointFinishScan(void *side, SjParts *parts, void *out)
{
	SjPointSideFinish((SjPointScan *) side, parts, (SjVectorInput *) out);
}

/*
 * Scan one side of points, or both of a two-table join (rscan not NULL).
 * Returns the parallel workers that read them.
 */
static int
SjPointMarshal(SjPointScan *lscan, SjPointScan *rscan, SjVectorInput *lout,
			   SjVectorInput *rout)
{
	SjJoinSide	sides[2] = {{lscan->eps.relid, 2, lscan->eps.cols, lscan->eps.what, lscan, lout}};

	if (rscan)
		sides[1] = (SjJoinSide) {rscan->eps.relid, 2, rscan->eps.cols, rscan->eps.what, rscan, rout};
	return SjScanJoinSides(sides, rscan ? 2 : 1, SJ_PART_POINTS, SjPointFinishScan);
}

/* What the emitter of a join of points needs. */
typedef struct SjPointJob
{
	SjEpsJob	eps;			/* first: SjEpsBegin takes it */
	bool		geography;
	int			dim;			/* 2 or 3 (geometry) */
	int32		srid;
	double		eps_user;		/* the eps asked for */
	SjPointBounds bounds;		/* settle candidates (SjPointSettle) */
	int64		count;			/* pairs kept */
	int64		decided;		/* pairs PostGIS's predicate decided */
	MemoryContext cxt;			/* PostGIS's decisions, reset every batch */
	/* a batch's kept pairs */
	uint32	   *left;
	uint32	   *right;
	double	   *value;
	size_t		cap;
} SjPointJob;

/* A geometry point from column k of a side's SoA coordinates. */
static Datum
SjPointDatum(const SjPointJob *job, const SjVectors *v, uint32 i)
{
	Datum		x = Float8GetDatum(v->coords[i]);
	Datum		y = Float8GetDatum(v->coords[(size_t) v->n + i]);

	if (job->dim == 3)
		return FunctionCall3(&sj_gis.makepoint3, x, y,
							 Float8GetDatum(v->coords[2 * (size_t) v->n + i]));
	return FunctionCall2(&sj_gis.makepoint2, x, y);
}

/* A geography point from the longitude and latitude kept with a side. */
static Datum
SjGeogDatum(const SjPointJob *job, const SjVectorInput *side, uint32 i)
{
	size_t		n = side->vectors.n;
	Datum		p = FunctionCall2(&sj_gis.makepoint2,
								  Float8GetDatum(side->vectors.coords[3 * n + i]),
								  Float8GetDatum(side->vectors.coords[4 * n + i]));

	p = FunctionCall2(&sj_gis.setsrid, p, Int32GetDatum(job->srid));
	return FunctionCall1(&sj_gis.to_geography, p);
}

/*
 * Decide one candidate pair by PostGIS's own predicate; for geography,
 * *value becomes PostGIS's distance.
 */
static bool
SjPointDecide(SjPointJob *job, uint32 l, uint32 r, double *value)
{
	const SjVectorInput *ls = &job->eps.left;
	const SjVectorInput *rs = job->eps.self ? &job->eps.left : &job->eps.right;
	MemoryContext old = MemoryContextSwitchTo(job->cxt);
	bool		ok;

	if (job->geography)
	{
		Datum		a = SjGeogDatum(job, ls, l);
		Datum		b = SjGeogDatum(job, rs, r);

		ok = DatumGetBool(FunctionCall4(&sj_gis.gdwithin, a, b,
										Float8GetDatum(job->eps_user), BoolGetDatum(true)));
		if (ok && job->eps.store)
			*value = DatumGetFloat8(FunctionCall3(&sj_gis.gdistance, a, b,
												  BoolGetDatum(true)));
	}
	else
		ok = DatumGetBool(FunctionCall3(job->dim == 3 ? &sj_gis.dwithin3d : &sj_gis.dwithin,
										SjPointDatum(job, &ls->vectors, l),
										SjPointDatum(job, &rs->vectors, r),
										Float8GetDatum(job->eps_user)));
	MemoryContextSwitchTo(old);
	return ok;
}

/* PostGIS's geography distance of a pair, the distance column's value. */
static double
SjPointGeogValue(SjPointJob *job, uint32 l, uint32 r)
{
	const SjVectorInput *ls = &job->eps.left;
	const SjVectorInput *rs = job->eps.self ? &job->eps.left : &job->eps.right;
	MemoryContext old = MemoryContextSwitchTo(job->cxt);
	double		v;

	v = DatumGetFloat8(FunctionCall3(&sj_gis.gdistance, SjGeogDatum(job, ls, l),
									 SjGeogDatum(job, rs, r), BoolGetDatum(true)));
	MemoryContextSwitchTo(old);
	return v;
}

/*
 * SjOperatorMethods.emit: keep the pairs the canonical distance settles
 * and those PostGIS's predicate accepts, count them, and store them when
 * returning rows.
 */
static void
SjPointEmit(void *arg, const SjPairBatch *batch)
{
	SjPointJob *job = (SjPointJob *) arg;
	SjPairBatch kept;
	size_t		i;

	if (batch->count > job->cap)
	{
		size_t		cap = Max(batch->count, job->cap * 2);

		if (job->left)
		{
			pfree(job->left);
			pfree(job->right);
			pfree(job->value);
		}
		job->left = palloc_extended(cap * sizeof(uint32), MCXT_ALLOC_HUGE);
		job->right = palloc_extended(cap * sizeof(uint32), MCXT_ALLOC_HUGE);
		job->value = palloc_extended(cap * sizeof(double), MCXT_ALLOC_HUGE);
		job->cap = cap;
	}
	kept.count = 0;
	kept.left = job->left;
	kept.right = job->right;
	kept.value = job->value;
	for (i = 0; i < batch->count; i++)
	{
		double		v = batch->value ? batch->value[i] : NAN;
		SjSettle	settled;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		/* the bounds settle the pair, or PostGIS decides */
		settled = SjPointSettle(&job->bounds, batch->left[i], batch->right[i], v);
		if (settled == SJ_SETTLE_OUT)
			continue;
		if (settled == SJ_SETTLE_ASK)
		{
			job->decided++;
			if (!SjPointDecide(job, batch->left[i], batch->right[i], &v))
				continue;
		}
		else if (job->geography && job->eps.store)
			v = SjPointGeogValue(job, batch->left[i], batch->right[i]);
		job->left[kept.count] = batch->left[i];
		job->right[kept.count] = batch->right[i];
		job->value[kept.count] = v;
		kept.count++;
	}
	MemoryContextReset(job->cxt);
	job->count += kept.count;
	if (job->eps.store && kept.count > 0)
		SjEmitKeyPairs(job->eps.store, job->eps.desc, job->eps.left.keys,
					   job->eps.self ? job->eps.left.keys : job->eps.right.keys,
					   job->eps.self, &kept);
}

/*
 * The eps join's methods over points: the engine of vectors, PostGIS's
 * decision on each pair of the superset it returns (sjrun.h).
 */
const SjOperatorMethods sj_point_methods = {
	"eps_join", SjEpsBegin, SjPointEmit, SjEpsPreferCpu, SjEpsStrategyName, NULL
};

/*
 * PostGIS's geography distance between two (lon, lat) points of an SRID, on
 * its spheroid or (spheroid false) on its sphere.
 */
static double
SjGeogDistance(int32 srid, double lon1, double lat1, double lon2, double lat2,
			   bool spheroid)
{
	Datum		a,
				b;

	a = FunctionCall2(&sj_gis.makepoint2, Float8GetDatum(lon1), Float8GetDatum(lat1));
	a = FunctionCall1(&sj_gis.to_geography,
					  FunctionCall2(&sj_gis.setsrid, a, Int32GetDatum(srid)));
	b = FunctionCall2(&sj_gis.makepoint2, Float8GetDatum(lon2), Float8GetDatum(lat2));
	b = FunctionCall1(&sj_gis.to_geography,
					  FunctionCall2(&sj_gis.setsrid, b, Int32GetDatum(srid)));
	return DatumGetFloat8(FunctionCall3(&sj_gis.gdistance, a, b, BoolGetDatum(spheroid)));
}

/*
 * Bounds on the radii of curvature of the SRID's ellipsoid, measured with
 * PostGIS's own distance over short arcs: along the meridian at the equator
 * (b^2 / a), along the equator (a) and along the meridian at the pole
 * (a^2 / b).  Over arcs of SJ_GIS_ARC_DEG the radius varies by a relative
 * 1e-13 at most, far inside SJ_GIS_RADIUS_SLACK.
 */
static void
SjGeogRadii(int32 srid, double *rmin, double *rmax)
{
	double		arc = SJ_GIS_ARC_DEG * (M_PI / 180.0);
	double		r[3];

	r[0] = SjGeogDistance(srid, 0, 0, 0, SJ_GIS_ARC_DEG, true) / arc;
	r[1] = SjGeogDistance(srid, 0, 0, SJ_GIS_ARC_DEG, 0, true) / arc;
	r[2] = SjGeogDistance(srid, 0, 90, 0, 90 - SJ_GIS_ARC_DEG, true) / arc;
	*rmin = Min(r[0], Min(r[1], r[2])) * (1.0 - SJ_GIS_RADIUS_SLACK);
	*rmax = Max(r[0], Max(r[1], r[2])) * (1.0 + SJ_GIS_RADIUS_SLACK);
	if (!(*rmin > 0) || !isfinite(*rmax))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not measure the ellipsoid of SRID %d", srid)));
}

/*
 * The band of a join of points at eps (see "Exactness" above): returns
 * eps_hi, the engine's eps, which keeps every pair PostGIS could accept,
 * and sets *lo, the canonical distance at or below which a pair surely
 * joins (-1 where none does).  Geometry: eps widened and narrowed by the
 * rounding margins; geography: the outer and inner bounds on the chord.
 */
static double
SjPointBand(bool geography, int32 srid, double eps, double *lo)
{
	double		rmin,
				rmax,
				inner;

	if (!geography)
	{
		*lo = eps * (1.0 - SJ_GIS_REL) - SJ_GIS_ABS;
		return eps * (1.0 + SJ_GIS_REL) + SJ_GIS_ABS;
	}
	SjGeogRadii(srid, &rmin, &rmax);
	/* chords surely within eps (the inner bound); the band is PostGIS's */
	inner = (eps * (1.0 - SJ_GIS_RADIUS_SLACK)) / rmax;
	*lo = inner < M_PI ? 2.0 * sin(inner / 2.0) - SJ_GIS_CHORD_PAD : -1.0;
	return 2.0 * sin(Min(eps / rmin, M_PI) / 2.0) + SJ_GIS_CHORD_PAD;
}

/*
 * eps_join's body for geometry and geography columns (the counterpart of
 * SjEpsJoinRun, which hands such columns here).  Returns the count.
 */
int64
SjPointJoinRun(Oid left_relid, text *left_key, text *left_col,
			   Oid right_relid, text *right_key, text *right_col,
			   double eps, Tuplestorestate *store, TupleDesc desc)
{
	SjPointScan lscan,
				rscan;
	SjPointJob	job;
	SjRunSpec	spec;
	SjStats		stats;
	double		t0 = sj_now_ms();
	double		eps_hi;
	int64		pairs = 0;
	bool		settled = false;
	bool		empty;

	if (isnan(eps) || eps < 0 || isinf(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be a finite number >= 0, not %g", eps)));
	if (!SjGisLookup())
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"postgis\" is not installed")));
	SjStatsStart(&stats, store ? "eps_join" : "eps_join_count");
	SjStartDevice();
	memset(&job, 0, sizeof(job));
	job.eps.self = !OidIsValid(right_relid);
	job.eps.store = store;
	job.eps.desc = desc;
	job.eps_user = eps;
	job.cxt = AllocSetContextCreate(CurrentMemoryContext, "simjoin postgis",
									ALLOCSET_DEFAULT_SIZES);

	SjPointPrepare(&lscan, left_relid, left_key, left_col);
	if (!job.eps.self)
	{
		SjPointPrepare(&rscan, right_relid, right_key, right_col);
		if (lscan.geography != rscan.geography)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("cannot join geometry with geography"),
					 errhint("Cast one side through a view.")));
		stats.scan_workers = SjPointMarshal(&lscan, &rscan, &job.eps.left,
											&job.eps.right);
		if (lscan.have_srid && rscan.have_srid && lscan.srid != rscan.srid)
			SjErrorSrid(lscan.srid, rscan.srid);
		if (lscan.eps.dim >= 0 && rscan.eps.dim >= 0 && lscan.eps.dim != rscan.eps.dim)
			SjErrorPointDims(lscan.eps.dim, rscan.eps.dim);
	}
	else
		stats.scan_workers = SjPointMarshal(&lscan, NULL, &job.eps.left, NULL);
	job.geography = lscan.geography;
	job.srid = lscan.srid;
	job.dim = lscan.eps.dim;
	if (!job.eps.self)
	{
		if (!lscan.have_srid)
			job.srid = rscan.srid;
		job.dim = Max(job.dim, rscan.eps.dim);
	}
	stats.left_rows = job.eps.left.vectors.n;
	stats.right_rows = job.eps.self ? job.eps.left.vectors.n : job.eps.right.vectors.n;
	stats.scan_ms = sj_now_ms() - t0;

	if (job.geography)
	{
		/* the engine sees the unit vectors; lon and lat ride behind them */
		job.eps.left.vectors.dim = 3;
		job.eps.right.vectors.dim = 3;
	}
	eps_hi = SjPointBand(job.geography, job.srid, eps, &job.bounds.lo);
	empty = job.eps.left.vectors.n == 0 ||
		(!job.eps.self && job.eps.right.vectors.n == 0);
	if (job.geography && !empty)
		job.bounds.band = SjGeogBandOf(SjGeogDistance, job.srid, eps, true,
									   &job.eps.left,
									   job.eps.self ? NULL : &job.eps.right);

	memset(&spec, 0, sizeof(spec));
	spec.name = store ? "eps_join" : "eps_join_count";
	spec.ops = &sj_point_methods;
	spec.arg = &job;
	spec.store = store;
	if (empty)
		return SjJoinAndReport(&spec, true, &stats, t0);

	if (store == NULL && !job.geography && job.bounds.lo >= 0)
	{
		int64		lo,
					hi;

		/* count: the pairs settled within (bounds.lo), the band only if any */
		job.eps.eps = job.bounds.lo;
		lo = SjRunJoin(&spec, true, &stats);
		job.eps.eps = eps_hi;
		hi = SjRunJoin(&spec, true, &stats);
		settled = hi == lo;
		pairs = lo;
	}
	if (!settled)
	{
		job.eps.eps = eps_hi;
		SjRunJoin(&spec, false, &stats);
		pairs = job.count;
	}
	stats.pairs = pairs;
	stats.decided = job.decided;
	SjStatsFinish(&stats, t0);
	MemoryContextDelete(job.cxt);
	return pairs;
}

/* ---------------------------------------------------------------------
 * Custom Scan (SimJoin) over PostGIS points: its sides (cs_exec.c).  The
 * planner's recognition of PostGIS conditions is postgis_plan.c's.
 * --------------------------------------------------------------------- */

/* A side of points for the custom scan, fed row by row (SjPointRow). */
void *
SjPointSideNew(bool geography, const char *what)
{
	SjPointScan *scan = palloc0(sizeof(SjPointScan));

	if (!SjGisLookup())
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"postgis\" is not installed")));
	SjEpsSideInit(&scan->eps, what);
	scan->geography = geography;
	return scan;
}

/* The engine's input of a custom scan's side (parts: the workers', or NULL). */
void
SjPointSideDone(void *side, SjParts *parts, SjVectorInput *out)
{
	SjPointSideFinish((SjPointScan *) side, parts, out);
}

/* A custom scan's side of points as one participant exports it. */
typedef struct SjPointExport
{
	int32		have_srid;
	int32		srid;
	int32		scan_dim;		/* the side's dim, -1 if no point */
	int32		dim;			/* the engine input's */
	int64		n;
	int64		skipped;
	int32		has_keys;
	int32		pad;
	/* then, MAXALIGNed: dim * n coordinates, n keys */
} SjPointExport;

#define SJ_POINT_EXPORT_SIZE	MAXALIGN(sizeof(SjPointExport))

/*
 * Write a custom scan's side of points, its engine input in (merged), into
 * dst for the other participants of a parallel join (dst NULL: the bytes it
 * takes), its rows in order (the row to take each place; NULL: as they
 * are) and the keys then 0 .. n - 1, and free in's arrays: the side is
 * read from dst from then on (SjPointSideImport).
 */
Size
SjPointSideExport(void *side, SjVectorInput *in, const uint32 *order, char *dst)
{
	SjPointScan *scan = (SjPointScan *) side;
	size_t		n = in->vectors.n;
	Size		coords = (Size) in->vectors.dim * n * sizeof(double);
	Size		keys = in->keys ? (Size) n * sizeof(int64) : 0;
	SjPointExport *h = (SjPointExport *) dst;
	double	   *c;
	int64	   *kd;
	size_t		k;
	int			d;

	if (dst == NULL)
		return SJ_POINT_EXPORT_SIZE + MAXALIGN(coords) + keys;
	memset(h, 0, sizeof(*h));
	h->have_srid = scan->have_srid;
	h->srid = scan->srid;
	h->scan_dim = scan->eps.dim;
	h->dim = in->vectors.dim;
	h->n = n;
	h->skipped = in->skipped;
	h->has_keys = in->keys != NULL;
	c = (double *) (dst + SJ_POINT_EXPORT_SIZE);
	kd = (int64 *) (dst + SJ_POINT_EXPORT_SIZE + MAXALIGN(coords));
	if (order == NULL)
	{
		memcpy(c, in->vectors.coords, coords);
		if (keys > 0)
			memcpy(kd, in->keys, keys);
	}
	else
	{
		/* a column at a time */
		for (d = 0; d < in->vectors.dim; d++)
		{
			const double *from = in->vectors.coords + (size_t) d * n;
			double	   *to = c + (size_t) d * n;

			for (k = 0; k < n; k++)
				to[k] = from[order[k]];
		}
		for (k = 0; k < n && keys > 0; k++)
			kd[k] = k;
	}
	if (in->vectors.coords)
		pfree((void *) in->vectors.coords);
	if (in->keys)
		pfree(in->keys);
	if (scan->eps.keys == in->keys)
		scan->eps.keys = NULL;
	memset(in, 0, sizeof(*in));
	return SJ_POINT_EXPORT_SIZE + MAXALIGN(coords) + keys;
}

/*
 * A custom scan's side of points as a participant exported it into src
 * (SjPointSideExport): its engine input *out, read in place, and what its
 * points had in common.
 */
void
SjPointSideImport(void *side, const char *src, SjVectorInput *out)
{
	SjPointScan *scan = (SjPointScan *) side;
	const SjPointExport *h = (const SjPointExport *) src;
	Size		coords = (Size) h->dim * h->n * sizeof(double);

	scan->have_srid = h->have_srid;
	scan->srid = h->srid;
	scan->eps.dim = h->scan_dim;
	scan->eps.n = h->n;
	scan->eps.skipped = h->skipped;
	memset(out, 0, sizeof(*out));
	out->vectors.n = (uint32_t) h->n;
	out->vectors.dim = h->dim;
	out->vectors.coords = (const double *) (src + SJ_POINT_EXPORT_SIZE);
	out->keys = h->has_keys ?
		(int64 *) (src + SJ_POINT_EXPORT_SIZE + MAXALIGN(coords)) : NULL;
	out->skipped = h->skipped;
}

/*
 * The eps the engine runs a custom scan's join at, for the eps (or
 * tolerance) d of its condition (gis: its SJ_GIS_* flags): one that keeps
 * every pair PostGIS could accept; and *bounds, which settle candidates
 * without PostGIS as eps_join's do (SjPointSettle): for geometry, a
 * canonical distance at most lo is within d (and below it) for PostGIS too
 * (see "Exactness" above); for geography, the inner bound on the chord,
 * which holds on the spheroid and on the sphere alike, and the band of the
 * model use_spheroid names where it is a constant and the band applies
 * (see "Geography without PostGIS").  Checks that the sides agree;
 * geography sides are narrowed to their unit vectors.
 */
double
SjPointEngineEps(void *left, void *right, SjVectorInput *lin, SjVectorInput *rin,
				 double d, int gis, SjPointBounds *bounds)
{
	SjPointScan *l = (SjPointScan *) left;
	SjPointScan *r = (SjPointScan *) right;
	double		hi;

	if (l->have_srid && r->have_srid && l->srid != r->srid)
		SjErrorSrid(l->srid, r->srid);
	if (l->eps.dim >= 0 && r->eps.dim >= 0 && l->eps.dim != r->eps.dim)
		SjErrorPointDims(l->eps.dim, r->eps.dim);
	bounds->lo = -1.0;
	bounds->band = NULL;
	if (!l->geography)
		return SjPointBand(false, 0, d, &bounds->lo);
	lin->vectors.dim = 3;
	rin->vectors.dim = 3;
	if (lin->vectors.n == 0 || rin->vectors.n == 0)
		return d;
	/* both bounds hold for the sphere too: its R is within [rmin, rmax] */
	hi = SjPointBand(true, l->srid, d, &bounds->lo);
	if (gis & (SJ_GIS_SPHEROID | SJ_GIS_SPHERE))
		bounds->band = SjGeogBandOf(SjGeogDistance, l->have_srid ? l->srid : r->srid,
									d, (gis & SJ_GIS_SPHEROID) != 0, lin, rin);
	return hi;
}
