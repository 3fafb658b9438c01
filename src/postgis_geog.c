/*
 * postgis_geog.c
 *		Candidates of joins of points settled without PostGIS: the one rule
 *		(SjPointSettle) by which eps_join's functions and the custom scan
 *		(postgis.c, cs_exec.c) take a candidate as surely within d, surely
 *		beyond it, or PostGIS's to decide, and the bounds that put a pair of
 *		geography points surely within or beyond d.
 */
#include "postgres.h"

#include <math.h>

#include "postgis.h"

#define SJ_GEOG_REL			1e-7	/* relative margin of the bounds */
#define SJ_GEOG_ABS			1e-4	/* absolute margin, metres */
#define SJ_GEOG_MAX_D		5e6		/* metres: beyond, PostGIS decides all */

/*
 * Geography without PostGIS.  PostGIS 3's ST_DWithin(geography, geography,
 * d, use_spheroid) on two points (geography_dwithin; its tree cache is never
 * used for two points) is lwgeom_distance_spheroid(...) <= d, whose point
 * case (ptarray_distance_spheroid) converts degrees to radians, computes the
 * great-circle distance R theta on PostGIS's sphere, R = (2a + b) / 3 of the
 * SRID's spheroid (spheroid_init), and returns it for use_spheroid = false;
 * for true it returns R theta where R theta < 0.95 d, else the geodesic
 * distance s on the ellipsoid (a, b) by GeographicLib's geod_inverse
 * (spheroid_distance; error below 15 nm).  Both return 0 for points whose
 * latitudes and longitudes differ by less than 5e-14 rad (3e-7 m).
 * ST_Distance(geography, ...) computes the same distances through its
 * circle tree and rounds them to 1e-8 m.  A pair is settled without PostGIS
 * where it is surely within d (and below it) or surely beyond it whichever
 * of these PostGIS computes; margins: SJ_GEOG_REL relative and SJ_GEOG_ABS
 * (0.1 mm) absolute, against errors of at most a few 1e-8 m: PostGIS's and
 * GeographicLib's rounding, ours (unit vectors from sin and cos, the chord,
 * a and b measured to a few ulps below) and the 3e-7 m of the zero case.
 *
 * Sphere.  theta is the angle between the unit vectors u = (cos lat cos lon,
 * cos lat sin lon, sin lat), chord q = |u1 - u2| = 2 sin(theta / 2).  Within:
 * q <= 2 sin(theta_lo / 2), theta_lo = (d (1 - REL) - ABS) / R; beyond:
 * q >= 2 sin(theta_hi / 2), theta_hi = (d (1 + REL) + ABS) / R <= pi / 2
 * (where q still resolves theta to a few ulps).
 *
 * Spheroid.  Let P be the point at geodetic (lat, lon) on the ellipsoid,
 * P = N (ux, uy, (1 - e^2) uz) with N = a / sqrt(1 - e^2 uz^2), and c =
 * |P1 - P2| the straight chord.
 *	- Beyond: a straight line is the shortest path, so s >= c; c >= d (1 +
 *	  REL) + ABS puts s beyond d.  PostGIS's sphere shortcut cannot accept
 *	  such a pair: lat and lon map the sphere of radius R onto the ellipsoid
 *	  with line elements R^2 (dlat^2 + cos^2 lat dlon^2) and M^2 dlat^2 +
 *	  N^2 cos^2 lat dlon^2, whose ratio is at most max(M, N) / R <= (a^2 / b)
 *	  / R (1.0045 for WGS 84), so the image of the great circle gives s <=
 *	  1.0045 R theta and R theta > 0.995 d, not below 0.95 d.
 *	- Within: the shortest geodesic from P1 to P2 (length s, unit speed
 *	  gamma) has no geodesic curvature, so its curvature in space is its
 *	  normal curvature, at most the largest principal curvature of the
 *	  ellipsoid, kappa = 1 / M(equator) = a / b^2.  With T the tangent at the
 *	  middle, the tangent at distance t from the middle is within angle
 *	  kappa t of T, so for kappa s <= 2 pi, c >= <P2 - P1, T> = integral of
 *	  cos(angle) >= integral over [-s/2, s/2] of cos(kappa t) = (2 / kappa)
 *	  sin(kappa s / 2) (Schur's comparison of a curve with the circle of
 *	  curvature kappa).  Every s is below pi a (along two meridians through a
 *	  pole) < 2 pi / kappa.  Let D = d (1 - REL) - ABS with kappa D <= pi and
 *	  2 pi / kappa - D >= pi a: then c < (2 / kappa) sin(kappa D / 2) gives
 *	  sin(kappa s / 2) < sin(kappa D / 2), so s < D or s > 2 pi / kappa - D
 *	  >= pi a, impossible: s < D, and PostGIS's value (R theta < 0.95 d or
 *	  s) is below d.  So c <= (2 / kappa) sin(kappa D / 2) - ABS is within.
 *	  The band between is c in ((2 / kappa) sin(kappa D / 2), d]: a relative
 *	  (kappa d)^2 / 24 (8e-6 at d = 90 km), against the 2 % between the
 *	  normals' inner and outer bounds (SjPointBand).
 * a and R are measured once a join with PostGIS's own distances along 90
 * degrees of the equator, where the geodesic is the equator (s = a pi / 2
 * to round-off) and the sphere's angle is pi / 2, and b = 3 R - 2 a; a check
 * pair confirms the model.  Joins at d > SJ_GEOG_MAX_D, or on an SRID whose
 * ellipsoid fails the conditions above, leave every candidate to PostGIS.
 */
static bool
SjGeogBandInit(SjGeogBand *band, SjGeogDistanceFn dist, int32 srid, double d,
			   bool spheroid)
{
	static const double check[2][4] = {{12.5, 41.9, 12.9, 42.4}, {0, 89.9, 120, 89.95}};
	double		a,
				r,
				b,
				kappa,
				dlo,
				dhi;
	int			k;

	memset(band, 0, sizeof(*band));
	if (!(d <= SJ_GEOG_MAX_D))
		return false;
	a = dist(srid, 0, 0, 90, 0, true) / M_PI_2;
	r = dist(srid, 0, 0, 90, 0, false) / M_PI_2;
	b = Min(a, 3.0 * r - 2.0 * a);
	if (!isfinite(a) || !(b > 0.9 * a) || !(a * a / b <= 1.02 * r))
		return false;
	kappa = a / (b * b) * (1.0 + SJ_GEOG_REL);
	dlo = d * (1.0 - SJ_GEOG_REL) - SJ_GEOG_ABS;
	dhi = d * (1.0 + SJ_GEOG_REL) + SJ_GEOG_ABS;
	band->spheroid = spheroid;
	band->a = spheroid ? a : 1.0;
	band->e2 = spheroid ? 1.0 - (b * b) / (a * a) : 0.0;
	if (spheroid)
	{
		if (!(kappa * dlo <= M_PI) || !(2.0 * M_PI / kappa - dlo >= M_PI * a))
			return false;
		band->lo = dlo > 0 ? (2.0 / kappa) * sin(kappa * dlo / 2.0) - SJ_GEOG_ABS : -1.0;
		band->hi = dhi;
	}
	else
	{
		if (!(dhi / r <= M_PI_2))
			return false;
		band->lo = dlo > 0 ? 2.0 * sin(dlo / r / 2.0) - SJ_GEOG_ABS / r : -1.0;
		band->hi = 2.0 * sin(dhi / r / 2.0) + SJ_GEOG_ABS / r;
	}

	/* the model against PostGIS on two pairs, one near the pole */
	for (k = 0; k < 2; k++)
	{
		double		u[2][3];
		double		lon[2] = {check[k][0], check[k][2]};
		double		lat[2] = {check[k][1], check[k][3]};
		double		s = dist(srid, lon[0], lat[0], lon[1], lat[1], spheroid);
		double		c = 0;
		int			p,
					i;

		for (p = 0; p < 2; p++)
		{
			double		f = lat[p] * (M_PI / 180.0);
			double		l = lon[p] * (M_PI / 180.0);
			double		n = band->a / sqrt(1.0 - band->e2 * sin(f) * sin(f));

			u[p][0] = n * cos(f) * cos(l);
			u[p][1] = n * cos(f) * sin(l);
			u[p][2] = n * (1.0 - band->e2) * sin(f);
		}
		for (i = 0; i < 3; i++)
			c += (u[0][i] - u[1][i]) * (u[0][i] - u[1][i]);
		c = sqrt(c);
		if (spheroid ? !(s >= c - SJ_GEOG_ABS &&
						 s <= (2.0 / kappa) * asin(kappa * c / 2.0) + SJ_GEOG_ABS) :
			!(fabs(s - r * 2.0 * asin(c / 2.0)) <= SJ_GEOG_ABS))
			return false;
	}
	return true;
}

/*
 * The band of a geography join at d over sides l and r (r NULL: a
 * self-join), measured with dist, PostGIS's distance; NULL where the bounds
 * do not apply.
 */
SjGeogBand *
SjGeogBandOf(SjGeogDistanceFn dist, int32 srid, double d, bool spheroid,
			 const SjVectorInput *l, const SjVectorInput *r)
{
	SjGeogBand *band = palloc(sizeof(SjGeogBand));

	if (!SjGeogBandInit(band, dist, srid, d, spheroid))
	{
		pfree(band);
		return NULL;
	}
	if (r == NULL)
		r = l;
	band->u[0] = l->vectors.coords;
	band->n[0] = l->vectors.n;
	band->u[1] = r->vectors.coords;
	band->n[1] = r->vectors.n;
	return band;
}

/* Settle candidate (l, r) of a geography join by band's bounds. */
static inline SjSettle
SjGeogSettle(const SjGeogBand *band, uint32 l, uint32 r)
{
	const double *u = band->u[0];
	const double *v = band->u[1];
	size_t		n = band->n[0];
	size_t		m = band->n[1];
	double		dx,
				dy,
				dz,
				c;

	if (band->spheroid)
	{
		/* the points on the ellipsoid: N (ux, uy, (1 - e2) uz) */
		double		nl = band->a / sqrt(1.0 - band->e2 * u[2 * n + l] * u[2 * n + l]);
		double		nr = band->a / sqrt(1.0 - band->e2 * v[2 * m + r] * v[2 * m + r]);

		dx = nl * u[l] - nr * v[r];
		dy = nl * u[n + l] - nr * v[m + r];
		dz = (1.0 - band->e2) * (nl * u[2 * n + l] - nr * v[2 * m + r]);
	}
	else
	{
		dx = u[l] - v[r];
		dy = u[n + l] - v[m + r];
		dz = u[2 * n + l] - v[2 * m + r];
	}
	c = sqrt(dx * dx + dy * dy + dz * dz);
	if (c <= band->lo)
		return SJ_SETTLE_IN;
	if (c >= band->hi)
		return SJ_SETTLE_OUT;
	return SJ_SETTLE_ASK;
}

/*
 * The rule: is candidate (l, r) of a join of points, v its engine distance
 * (NaN: none), surely within d, surely beyond it, or for PostGIS to decide?
 * Geography with a band: by the band's bounds on the chord of its model
 * (spheroid or sphere); otherwise (geometry, and geography where no band
 * applies: use_spheroid not a constant, d beyond SJ_GEOG_MAX_D) within
 * where v <= lo, the rest PostGIS's (the engine only returns candidates
 * within its outer bound).  Both of PostGIS's models agree on what lo
 * settles: the sphere's radius is below rmax (postgis.c, "Inner bound").
 */
SjSettle
SjPointSettle(const SjPointBounds *bounds, uint32 l, uint32 r, double v)
{
	if (bounds->band)
		return SjGeogSettle(bounds->band, l, r);
	return v <= bounds->lo ? SJ_SETTLE_IN : SJ_SETTLE_ASK;
}
