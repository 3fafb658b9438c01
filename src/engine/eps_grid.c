/*
 * eps_grid.c
 *		The CPU eps engine's grid: the geometry (bounds, grid dimensions,
 *		cell widths safe for eps, the filter threshold) and the building of
 *		one side, sorted by cell (see the header of eps_cpu.c).
 *
 * A side's arrays are malloc'd into its EpsGrid, owned by the handle.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eps_int.h"

/* Free one side's grid. */
void
eps_grid_free(EpsGrid *g)
{
	free(g->perm);
	free(g->pts);
	free(g->orig);
	free(g->norms);
	free(g->cellid);
	free(g->cellstart);
	memset(g, 0, sizeof(*g));
}

/* ---------------------------------------------------------------------
 * Grid geometry
 * --------------------------------------------------------------------- */

/* Parallel task: bounds of dimension k. */
void
eps_bounds_task(void *arg, uint64_t k, int worker)
{
	EpsBounds  *eb = (EpsBounds *) arg;
	double		mn = INFINITY,
				mx = -INFINITY;
	int			side;

	for (side = 0; side < 2; side++)
	{
		const SjVectors *v = side == 0 ? eb->a : eb->b;
		const double *x;
		uint32_t	i;

		if (v == NULL || v->n == 0)
			continue;
		x = v->coords + (size_t) k * v->n;
		for (i = 0; i < v->n; i++)
		{
			if (x[i] < mn)
				mn = x[i];
			if (x[i] > mx)
				mx = x[i];
		}
	}
	eb->mn[k] = mn;
	eb->mx[k] = mx;
}

/* The smallest cell width that is safe for eps along a dimension. */
static double
eps_safe_width(double eps, double mn, double mx)
{
	double		mag = fmax(fabs(mn), fabs(mx));

	/*
	 * A joining pair differs by at most eps (1 + 4u) + 2^-537 in any
	 * coordinate (rounding and underflow of the squares, the sum and the
	 * sqrt); the computed cell quotients of two points carry an error of at
	 * most 8 u mag / w.  1e-6 relative, 64 u mag and 1e-150 absolute cover
	 * both with a wide margin.
	 */
	return eps * (1.0 + 1e-6) + 64.0 * DBL_EPSILON * mag + 1e-150;
}

/* Cells per dimension that keep K dimensions' ids within 62 bits. */
static double
eps_cell_cap(int k)
{
	int			bits = 62 / k;

	return ldexp(1.0, bits > 52 ? 52 : bits);
}

/*
 * Choose the grid dimensions and geometry.  Dimensions are ranked by how
 * many eps-cells they span; K (0..6) minimises a cost model under a uniform
 * assumption: candidate distance tests plus cell lookups.  K = 0 (nothing
 * worth gridding: eps huge or all points alike) is one cell.
 */
void
eps_choose_spec(SjEpsJoin *j, const double *mn, const double *mx,
				double nprobe, double nbuild)
{
	EpsGridSpec *g = &j->spec;
	int			order[EPS_MAX_K];
	double		span[EPS_MAX_K];
	int			nuse = 0,
				best_k = 0,
				k,
				i;
	double		best_cost = INFINITY;
	double		dimcost = 1.0 + 0.5 * (j->dim < 8 ? j->dim : 8);

	/* the EPS_MAX_K dimensions spanning the most cells, at least 3 each */
	for (k = 0; k < j->dim; k++)
	{
		double		ext = mx[k] - mn[k];
		double		w = eps_safe_width(j->geps, mn[k], mx[k]);
		double		r;
		int			pos;

		if (!isfinite(ext) || !isfinite(w))
			continue;
		r = fmin(ext / w, 1e300);
		if (r < 2.0)
			continue;
		if (nuse == EPS_MAX_K && r <= span[nuse - 1])
			continue;
		pos = nuse < EPS_MAX_K ? nuse++ : nuse - 1;
		while (pos > 0 && span[pos - 1] < r)
		{
			span[pos] = span[pos - 1];
			order[pos] = order[pos - 1];
			pos--;
		}
		span[pos] = r;
		order[pos] = k;
	}

	for (k = 0; k <= nuse; k++)
	{
		double		cap = k > 0 ? eps_cell_cap(k) : 1.0;
		double		cells = 1.0,
					frac = 1.0,
					rows = 1.0,
					occb,
					occp,
					cand,
					cost;

		for (i = 0; i < k; i++)
		{
			double		c = fmin(floor(span[i]) + 1.0, cap);

			cells *= c;
			frac *= fmin(1.0, 3.0 / c);
		}
		for (i = 1; i < k; i++)
			rows *= 3.0;
		if (j->self)
			rows = (rows + 1.0) / 2.0;
		occb = fmin(nbuild, cells);
		occp = fmin(nprobe, cells);
		cand = nprobe * nbuild * frac * (j->self ? 0.5 : 1.0);
		cost = cand * dimcost + occp * rows * (log2(occb + 1.0) + 4.0) * 2.0;
		if (cost < best_cost)
		{
			best_cost = cost;
			best_k = k;
		}
	}

	memset(g, 0, sizeof(*g));
	if (best_k == 0)
	{
		g->k = 1;
		g->gdim[0] = -1;
		g->lo[0] = 0.0;
		g->w[0] = 1.0;
		g->ncells[0] = 1;
		g->stride[0] = 1;
		return;
	}

	/* keep the chosen dimensions in source order */
	for (i = 1; i < best_k; i++)
	{
		int			d = order[i],
					p = i;

		while (p > 0 && order[p - 1] > d)
		{
			order[p] = order[p - 1];
			p--;
		}
		order[p] = d;
	}

	g->k = best_k;
	for (i = 0; i < best_k; i++)
	{
		int			d = order[i];
		double		cap = eps_cell_cap(best_k);
		double		ext = mx[d] - mn[d];
		double		w = fmax(eps_safe_width(j->geps, mn[d], mx[d]), ext / cap);
		double		c = floor(ext / w) + 1.0;

		g->gdim[i] = d;
		g->lo[i] = mn[d];
		g->w[i] = w;
		g->ncells[i] = c >= cap ? (uint64_t) cap : (uint64_t) c;
	}
	g->stride[best_k - 1] = 1;
	for (i = best_k - 2; i >= 0; i--)
		g->stride[i] = g->stride[i + 1] * g->ncells[i + 1];
}

/* Cell coordinate of value x along grid dimension i. */
static inline uint64_t
eps_cell_coord(const EpsGridSpec *g, int i, double x)
{
	double		q = (x - g->lo[i]) / g->w[i];
	double		top = (double) (g->ncells[i] - 1);

	if (!(q > 0.0))
		return 0;
	if (q >= top)
		return g->ncells[i] - 1;
	return (uint64_t) q;
}

/* The largest double whose sqrt is <= eps (+inf for eps = +inf). */
double
eps_threshold(double eps)
{
	double		t;

	if (isinf(eps))
		return INFINITY;
	t = eps * eps;
	while (t > 0.0 && sqrt(t) > eps)
		t = nextafter(t, 0.0);
	while (t < DBL_MAX && sqrt(nextafter(t, INFINITY)) <= eps)
		t = nextafter(t, INFINITY);
	return t;
}

/* ---------------------------------------------------------------------
 * Building one side
 * --------------------------------------------------------------------- */

/* Context of the parallel key and gather passes. */
typedef struct EpsBuildCtx
{
	const EpsGridSpec *spec;
	const SjVectors *v;
	uint64_t   *key;
	EpsGrid    *grid;
} EpsBuildCtx;

/* Parallel task: linearised cell ids of a chunk of rows. */
static void
eps_key_task(void *arg, uint64_t chunk, int worker)
{
	EpsBuildCtx *c = (EpsBuildCtx *) arg;
	const EpsGridSpec *g = c->spec;
	uint32_t	n = c->v->n;
	uint64_t	start = chunk * EPS_ROW_CHUNK;
	uint64_t	end = start + EPS_ROW_CHUNK < n ? start + EPS_ROW_CHUNK : n;
	uint64_t	i;
	int			d;

	for (i = start; i < end; i++)
		c->key[i] = 0;
	for (d = 0; d < g->k; d++)
	{
		const double *x;

		if (g->gdim[d] < 0)
			continue;
		x = c->v->coords + (size_t) g->gdim[d] * n;
		for (i = start; i < end; i++)
			c->key[i] += eps_cell_coord(g, d, x[i]) * g->stride[d];
	}
}

/* Parallel task: copy a chunk of sorted points to point-major layout. */
static void
eps_gather_task(void *arg, uint64_t chunk, int worker)
{
	EpsBuildCtx *c = (EpsBuildCtx *) arg;
	EpsGrid    *grid = c->grid;
	uint32_t	n = c->v->n;
	int			dim = c->v->dim;
	uint64_t	start = chunk * EPS_ROW_CHUNK;
	uint64_t	end = start + EPS_ROW_CHUNK < n ? start + EPS_ROW_CHUNK : n;
	uint64_t	i;
	int			d;

	for (d = 0; d < dim; d++)
	{
		const double *x = c->v->coords + (size_t) d * n;

		for (i = start; i < end; i++)
			grid->pts[i * dim + d] = x[grid->perm[i]];
	}
}

/* Grid one side: sort its points by cell and list the non-empty cells. */
SjStatus
eps_grid_build(SjEpsJoin *j, const SjVectors *v, EpsGrid *g, char *errmsg)
{
	EpsBuildCtx ctx;
	uint32_t	n = v->n;
	uint64_t	maxid = 0;
	uint64_t	nchunk = ((uint64_t) n + EPS_ROW_CHUNK - 1) / EPS_ROW_CHUNK;
	uint64_t   *key;
	uint32_t   *idx;
	uint32_t	i,
				c;
	int			bits = 0,
				d;
	SjStatus	st;

	memset(g, 0, sizeof(*g));
	g->n = n;
	key = malloc(sizeof(uint64_t) * (size_t) n);
	idx = malloc(sizeof(uint32_t) * (size_t) n);
	if (!key || !idx)
	{
		st = sj_error(errmsg, SJ_ERR_NOMEM,
					   "out of memory sorting %u points into grid cells", n);
		goto fail;
	}

	ctx.spec = &j->spec;
	ctx.v = v;
	ctx.key = key;
	ctx.grid = g;
	st = sj_parallel_for(j->threads, nchunk, eps_key_task, &ctx);
	if (st != SJ_OK)
	{
		sj_error(errmsg, st, "could not start worker threads");
		goto fail;
	}
	for (i = 0; i < n; i++)
		idx[i] = i;
	for (d = 0; d < j->spec.k; d++)
		maxid += (j->spec.ncells[d] - 1) * j->spec.stride[d];
	while (bits < 64 && (maxid >> bits) != 0)
		bits++;
	if (!sj_radix_sort(key, idx, n, bits, j->threads))
	{
		st = sj_error(errmsg, SJ_ERR_NOMEM,
					   "out of memory sorting %u points into grid cells", n);
		goto fail;
	}
	g->perm = idx;
	idx = NULL;

	/* non-empty cells */
	g->ncell = 0;
	for (i = 0; i < n; i++)
		if (i == 0 || key[i] != key[i - 1])
			g->ncell++;
	g->cellid = malloc(sizeof(uint64_t) * (size_t) g->ncell);
	g->cellstart = malloc(sizeof(uint32_t) * ((size_t) g->ncell + 1));
	g->pts = malloc(sizeof(double) * (size_t) n * v->dim);
	if (!g->cellid || !g->cellstart || !g->pts)
	{
		st = sj_error(errmsg, SJ_ERR_NOMEM,
					   "out of memory building a grid of %u points", n);
		goto fail;
	}
	for (i = 0, c = 0; i < n; i++)
		if (i == 0 || key[i] != key[i - 1])
		{
			g->cellid[c] = key[i];
			g->cellstart[c] = i;
			c++;
		}
	g->cellstart[g->ncell] = n;
	free(key);
	key = NULL;

	st = sj_parallel_for(j->threads, nchunk, eps_gather_task, &ctx);
	if (st != SJ_OK)
	{
		sj_error(errmsg, st, "could not start worker threads");
		goto fail;
	}
	return SJ_OK;

fail:
	free(key);
	free(idx);
	eps_grid_free(g);
	return st;
}
