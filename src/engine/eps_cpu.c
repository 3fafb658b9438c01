/*
 * eps_cpu.c
 *		The CPU engine of eps_join: a grid self-join and two-table join.
 *
 * The index is the grid of GPU-SJ (Gowanlock & Karsin): cells of width
 * w >= eps over K <= 6 chosen dimensions, only non-empty cells stored, as a
 * sorted list of linearised cell ids with the contiguous range of points of
 * each (points sorted by cell, coordinates copied point-major).  A point's
 * neighbours lie in the 3^K cells around its own; along the last grid
 * dimension (stride 1) three adjacent cells are one contiguous range of
 * points, so a probe cell costs 3^(K-1) binary searches.  The self-join
 * compares each unordered pair of cells once (unidirectional comparison: the
 * home cell against itself with j > i, and only neighbour offsets that are
 * lexicographically positive).  A two-table join grids both sides the same
 * way, builds on the right and probes with the left.
 *
 * Invariants:
 * - The decision is exactly sqrt(sum) <= eps, sum accumulated in dimension
 *   order without FMA (the GPU engine's order; which side is subtracted from
 *   which does not matter, as fl(a - b) == -fl(b - a)).  The prefilter
 *   sum > thr, thr the largest double whose sqrt is <= eps, rejects only
 *   pairs that test rejects, since partial sums never decrease; it lets a
 *   high-dimensional distance stop early.
 * - Cell assignment is floor((x - lo) / w), clamped to the grid.  w exceeds
 *   eps by a relative and an absolute margin covering the rounding of the
 *   distance, the subtraction and the division, so two points that join are
 *   never more than one cell apart in any grid dimension; clamping only
 *   brings cells closer.
 * - Work is a list of tasks (ranges of probe points in cell order), each
 *   with a resumable cursor (probe cell, candidate range, candidate block,
 *   probe point, candidate); blocks keep candidates in cache while every
 *   probe point of the cell passes over them.  One call of next runs a window of unfinished tasks in parallel, each writing
 *   into its own buffer capped so that the batch never exceeds
 *   max_batch_pairs, and stops them at a deadline so that a call stays
 *   short.  A stopped task resumes exactly where it stopped: nothing is
 *   dropped or repeated.
 *
 * The cosine metric (options->metric, eps_cosine.c) grids and filters
 * unit-normalised copies of the inputs with the same machinery, under a
 * threshold widened to cover rounding, and decides each candidate by the
 * canonical cosine distance of the original coordinates.  Zero vectors are
 * dropped before the grid (they join nothing).  A cosine join neither
 * writes nor probes a shared index: with index_right and index_only it
 * builds nothing (index size 0), and it ignores options->shared_index.
 *
 * Memory is the engine's own (malloc); nothing here prints or exits.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eps_cosine.h"
#include "sjdist.h"
#include "sjengine.h"

#define EPS_MAX_K			6		/* grid dimensions at most */
#define EPS_MAX_RANGES		243		/* 3^(EPS_MAX_K - 1) candidate ranges */
#define EPS_TASK_POINTS		1024	/* probe points per task */
#define EPS_DEFAULT_BATCH	1048576 /* max_batch_pairs of 0 */
#define EPS_CALL_MS			100.0	/* work one next() aims at */
#define EPS_WORK_CHECK		32768	/* candidates between clock reads */
#define EPS_BLOCK_BYTES		131072	/* candidate coordinates in one block */
#define EPS_MAX_WINDOW		4096	/* tasks one next() runs at most */
#define EPS_ROW_CHUNK		65536	/* rows per parallel build task */

/* Grid geometry, shared by both sides of a two-table join. */
typedef struct EpsGridSpec
{
	int			k;				/* grid dimensions, 1..EPS_MAX_K */
	int			gdim[EPS_MAX_K];	/* source dimension; -1: one cell */
	double		lo[EPS_MAX_K];	/* grid origin */
	double		w[EPS_MAX_K];	/* cell width, > eps */
	uint64_t	ncells[EPS_MAX_K];	/* cells along the dimension */
	uint64_t	stride[EPS_MAX_K];	/* linearisation; last is 1 */
} EpsGridSpec;

/* One side, sorted by cell. */
typedef struct EpsGrid
{
	uint32_t	n;				/* points */
	uint32_t	ncell;			/* non-empty cells */
	uint32_t   *perm;			/* sorted position -> input row */
	double	   *pts;			/* n * dim, point-major, sorted */
	double	   *orig;			/* cosine: the original coordinates, as pts */
	double	   *norms;			/* cosine: |x|^2 of each point, sorted */
	uint64_t   *cellid;			/* ncell ascending linearised ids */
	uint32_t   *cellstart;		/* ncell + 1 point offsets */
} EpsGrid;

/* Candidate points [lo, hi) of the build side for one probe cell. */
typedef struct EpsRange
{
	uint32_t	lo;
	uint32_t	hi;
	int			after_probe;	/* self-join home row: start at probe + 1 */
} EpsRange;

/* Cursor states of a task. */
#define EPS_TASK_FRESH	0		/* not started */
#define EPS_TASK_EXACT	1		/* resume at (p0, r, b, p, q) */
#define EPS_TASK_DONE	2

/* A range of probe points and where its work stopped. */
typedef struct EpsTask
{
	uint32_t	lo;				/* probe positions [lo, hi) */
	uint32_t	hi;
	uint32_t	p0;				/* first probe position of the cell */
	uint32_t	r;				/* candidate range of that cell */
	uint32_t	b;				/* candidate block start */
	uint32_t	p;				/* probe position */
	uint32_t	q;				/* candidate position */
	int			state;
} EpsTask;

/* One task of the current window and its private output. */
typedef struct EpsSlot
{
	size_t		task;
	size_t		limit;			/* pairs it may emit in this call */
	size_t		n;				/* pairs emitted (or counted) */
	size_t		alloc;
	uint32_t   *left;
	uint32_t   *right;
	double	   *value;
	int			nomem;
	int			late;			/* stopped at the deadline */
} EpsSlot;

/* The filter of four candidates at a time (eps_sums4_body). */
typedef void (*EpsSums4Fn) (const double *x, const double *y, int dim,
							double fthr, double *sums);

struct SjEpsJoin
{
	int			dim;
	int			self;
	int			count_only;
	int			threads;
	double		eps;
	double		thr;			/* largest sum whose sqrt is <= eps; cosine:
								 * sj_eps_cos_threshold (+inf: no filter) */
	double		geps;			/* the radius the grid is built for */
	double		fthr;			/* eps_sums4's filter threshold */
	double		ithr;			/* a filter sum at most this surely joins */
	EpsSums4Fn	sums4;			/* eps_sums4 for this CPU */
	int			metric;			/* SjMetric */
	EpsCosSide	cos[2];			/* cosine: normalised build and left sides */
	uint32_t	block;			/* candidates per cache block */
	size_t		max_batch;
	EpsGridSpec spec;
	EpsGrid		build;			/* right side, or the one side */
	int			build_shared;	/* build's arrays lie in a shared index */
	EpsGrid		left;			/* two-table: the left side */
	const EpsGrid *probe;		/* &left, or &build for a self-join */
	EpsTask    *tasks;
	size_t		ntasks;
	size_t		first_open;		/* tasks before it are done */
	EpsSlot    *slots;			/* EPS_MAX_WINDOW */
	size_t		nslot;			/* slots in the current window */
	size_t		window;			/* tasks per call, adapted */
	double		deadline;
	uint32_t   *out_left;
	uint32_t   *out_right;
	double	   *out_value;
	size_t		out_alloc;
	int			finished;		/* no work left */
	int			said_done;		/* next has returned done */
	SjTimings	timings;
};

/*
 * A flattened grid of the right side (sj_eps_cpu_index_write): this header,
 * then the arrays at their offsets from its start, 8-byte aligned.  The
 * geometry travels with it: joins that probe it grid their left side alike.
 */
#define EPS_INDEX_MAGIC	UINT64_C(0x73696d6a65707331)	/* "simjeps1" */

typedef struct EpsIndexHeader
{
	uint64_t	magic;
	uint64_t	size;			/* bytes, header included */
	EpsGridSpec spec;
	double		eps;
	int32_t		dim;
	uint32_t	n;				/* rows of the right side */
	uint32_t	ncell;
	uint32_t	pad;
	uint64_t	off_perm;
	uint64_t	off_pts;
	uint64_t	off_cellid;
	uint64_t	off_cellstart;
} EpsIndexHeader;

/* Free one side's grid. */
static void
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

/* Per-dimension bounds over both inputs. */
typedef struct EpsBounds
{
	const SjVectors *a;
	const SjVectors *b;			/* NULL for a self-join */
	double	   *mn;
	double	   *mx;
} EpsBounds;

/* Parallel task: bounds of dimension k. */
static void
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
static void
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
static double
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
static SjStatus
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

/* ---------------------------------------------------------------------
 * Probing
 * --------------------------------------------------------------------- */

/* First index in ids[from, n) whose id is >= key. */
static inline uint32_t
eps_lower_bound(const uint64_t *ids, uint32_t from, uint32_t n, uint64_t key)
{
	uint32_t	lo = from,
				hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (ids[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The cell of the probe side that holds sorted position p. */
static uint32_t
eps_cell_of(const EpsGrid *g, uint32_t p)
{
	uint32_t	lo = 0,
				hi = g->ncell;

	/* the last cell whose start is <= p */
	while (hi - lo > 1)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (g->cellstart[mid] <= p)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Candidate ranges of the build side for probe cell `cell': one contiguous
 * range per row of 3 cells along the last grid dimension.  A self-join keeps
 * the home row (home cell from probe + 1, and the next cell) and the rows
 * whose offset is lexicographically positive.
 */
static uint32_t
eps_cell_ranges(const SjEpsJoin *j, uint32_t cell, EpsRange *rg)
{
	const EpsGridSpec *g = &j->spec;
	const EpsGrid *bg = &j->build;
	uint64_t	id = j->probe->cellid[cell];
	int64_t		c[EPS_MAX_K];
	int			off[EPS_MAX_K];
	int			last = g->k - 1,
				i;
	uint32_t	nr = 0;
	int64_t		cl;

	for (i = 0; i < g->k; i++)
	{
		c[i] = (int64_t) ((id / g->stride[i]) % g->ncells[i]);
		off[i] = -1;
	}
	cl = c[last];

	for (;;)
	{
		uint64_t	base = 0;
		int			sign = 0,
					inside = 1;

		for (i = 0; i < last; i++)
		{
			int64_t		ci = c[i] + off[i];

			if (sign == 0)
				sign = off[i];
			if (ci < 0 || (uint64_t) ci >= g->ncells[i])
			{
				inside = 0;
				break;
			}
			base += (uint64_t) ci * g->stride[i];
		}
		if (inside && j->self && sign == 0)
		{
			uint32_t	end = cell + 1;

			if ((uint64_t) cl + 1 < g->ncells[last] && end < bg->ncell &&
				bg->cellid[end] == id + 1)
				end++;
			rg[nr].lo = bg->cellstart[cell];
			rg[nr].hi = bg->cellstart[end];
			rg[nr].after_probe = 1;
			nr++;
		}
		else if (inside && !(j->self && sign < 0))
		{
			uint64_t	idlo = base + (uint64_t) (cl > 0 ? cl - 1 : cl);
			uint64_t	idhi = base + (uint64_t) ((uint64_t) cl + 1 < g->ncells[last] ? cl + 1 : cl);
			uint32_t	f = eps_lower_bound(bg->cellid, j->self ? cell + 1 : 0,
											bg->ncell, idlo);
			uint32_t	e = f;

			while (e < bg->ncell && bg->cellid[e] <= idhi)
				e++;
			if (e > f)
			{
				rg[nr].lo = bg->cellstart[f];
				rg[nr].hi = bg->cellstart[e];
				rg[nr].after_probe = 0;
				nr++;
			}
		}

		/* next offset of the leading dimensions */
		for (i = last - 1; i >= 0; i--)
		{
			if (off[i] < 1)
			{
				off[i]++;
				break;
			}
			off[i] = -1;
		}
		if (i < 0)
			break;
	}
	return nr;
}

/* Make room for one more pair in a slot's buffer; 0 when out of memory. */
static int
eps_slot_grow(EpsSlot *s)
{
	size_t		want = s->alloc ? s->alloc * 2 : 4096;
	uint32_t   *l,
			   *r;
	double	   *v;

	if (want > s->limit)
		want = s->limit;
	l = realloc(s->left, want * sizeof(uint32_t));
	if (l)
		s->left = l;
	r = realloc(s->right, want * sizeof(uint32_t));
	if (r)
		s->right = r;
	v = realloc(s->value, want * sizeof(double));
	if (v)
		s->value = v;
	if (!l || !r || !v)
		return 0;
	s->alloc = want;
	return 1;
}

/* First candidate of range r at or after block start b for probe p. */
static inline uint32_t
eps_first_candidate(const EpsRange *r, uint32_t b, uint32_t p)
{
	return r->after_probe && p + 1 > b ? p + 1 : b;
}

/*
 * The filter of four candidates at a time (dim > 8): squared distances of x
 * to the four points from y, each summed in four lanes over the dimensions
 * (so out of the canonical order, and vectorised), stopping once all four
 * exceed fthr.  Every term is a nonnegative square, so in any order the
 * computed sum is within a factor 1 +- gamma(dim + 3) of the exact one,
 * and the exact one within the same factor of the canonical sum:
 * eps_filter_threshold widens thr by more than twice that (plus underflow),
 * so a pair whose canonical sum is <= thr always passes.  The survivors are
 * decided canonically.
 */
typedef double EpsV4 __attribute__((vector_size(32)));

/* Horizontal sum of a vector of four doubles. */
#define EPS_HSUM(a) (((a)[0] + (a)[1]) + ((a)[2] + (a)[3]))

/* The body of eps_sums4, compiled for the baseline ISA and for AVX2. */
static inline __attribute__((always_inline)) void
eps_sums4_body(const double *x, const double *y, int dim, double fthr,
			   double *sums)
{
	const double *y1 = y + dim,
			   *y2 = y + 2 * dim,
			   *y3 = y + 3 * dim;
	EpsV4		a0 = {0, 0, 0, 0},
				a1 = {0, 0, 0, 0},
				a2 = {0, 0, 0, 0},
				a3 = {0, 0, 0, 0};
	int			vend = dim - dim % 4;
	int			k = 0;
	double		t0 = 0.0,
				t1 = 0.0,
				t2 = 0.0,
				t3 = 0.0;

	while (k < vend)
	{
		int			kend = vend - k > 16 ? k + 16 : vend;

		for (; k < kend; k += 4)
		{
			EpsV4		xv,
						v0,
						v1,
						v2,
						v3;

			memcpy(&xv, x + k, sizeof(xv));
			memcpy(&v0, y + k, sizeof(v0));
			memcpy(&v1, y1 + k, sizeof(v1));
			memcpy(&v2, y2 + k, sizeof(v2));
			memcpy(&v3, y3 + k, sizeof(v3));
			v0 = xv - v0;
			v1 = xv - v1;
			v2 = xv - v2;
			v3 = xv - v3;
			a0 += v0 * v0;
			a1 += v1 * v1;
			a2 += v2 * v2;
			a3 += v3 * v3;
		}
		if (k < vend && EPS_HSUM(a0) > fthr && EPS_HSUM(a1) > fthr &&
			EPS_HSUM(a2) > fthr && EPS_HSUM(a3) > fthr)
			break;
	}
	if (k == vend)
		for (; k < dim; k++)
		{
			double		d0 = x[k] - y[k];
			double		d1 = x[k] - y1[k];
			double		d2 = x[k] - y2[k];
			double		d3 = x[k] - y3[k];

			t0 += d0 * d0;
			t1 += d1 * d1;
			t2 += d2 * d2;
			t3 += d3 * d3;
		}
	sums[0] = EPS_HSUM(a0) + t0;
	sums[1] = EPS_HSUM(a1) + t1;
	sums[2] = EPS_HSUM(a2) + t2;
	sums[3] = EPS_HSUM(a3) + t3;
}

/* eps_sums4 for the baseline ISA. */
static void
eps_sums4_base(const double *x, const double *y, int dim, double fthr,
			   double *sums)
{
	eps_sums4_body(x, y, dim, fthr, sums);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* eps_sums4 with AVX2 (chosen at run time where the CPU has it). */
__attribute__((target("avx2"))) static void
eps_sums4_avx2(const double *x, const double *y, int dim, double fthr,
			   double *sums)
{
	eps_sums4_body(x, y, dim, fthr, sums);
}
#endif

/* The best eps_sums4 for this CPU. */
static EpsSums4Fn
eps_sums4_choose(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		return eps_sums4_avx2;
#endif
	return eps_sums4_base;
}

/*
 * The threshold of eps_sums4's filter: thr widened by 16 (dim + 4) u (u =
 * DBL_EPSILON / 2), more than (1 + gamma(dim + 3))^2 / (1 - gamma(dim +
 * 3)) - 1 while dim u < 0.01, plus dim 2^-1070 for squares that underflow
 * (each loses less than 2^-1074 in either sum).
 */
static double
eps_filter_threshold(double thr, int dim)
{
	return thr * (1.0 + 8.0 * ((double) dim + 4.0) * DBL_EPSILON) +
		(double) dim * 0x1p-1070;
}

/*
 * The other side of the filter: an eps_sums4 sum at most this has a
 * canonical sum <= thr (the same factors as eps_filter_threshold, the other
 * way round), so a count-only L2 join counts the pair without its value
 * (cosine: sj_eps_cos_inner_threshold).
 */
static double
eps_inner_threshold(double thr, int dim)
{
	double		t = (thr - (double) dim * 0x1p-1070) *
		(1.0 - 8.0 * ((double) dim + 4.0) * DBL_EPSILON);

	return t > 0.0 ? t : -1.0;
}

/* The canonical sum of squares of x - y (sjdist.h). */
static inline double
eps_l2_sum(const double *x, const double *y, int dim)
{
	double		sum = 0.0;
	int			k;

	for (k = 0; k < dim; k++)
		sum = sj_l2_step(sum, x[k], y[k]);
	return sum;
}

/*
 * The canonical cosine distance of probe point p and build point q, from
 * their original coordinates (sjdist.h; symmetric bit for bit).
 */
static inline double
eps_cos_value(const EpsGrid *pg, uint32_t p, const EpsGrid *bg, uint32_t q,
			  int dim)
{
	const double *x = pg->orig + (size_t) p * dim;
	const double *y = bg->orig + (size_t) q * dim;
	double		dot = 0.0;
	int			k;

	for (k = 0; k < dim; k++)
		dot = sj_dot_step(dot, x[k], y[k]);
	return sj_cosine_finish(dot, pg->norms[p], bg->norms[q]);
}

/*
 * Emit (or count) the pair (p, q) with distance dist, or stop the task
 * when its slot is full.  Used inside eps_task_run_impl only.
 */
#define EPS_EMIT() \
	do { \
		if (count_only) \
		{ \
			n++; \
			break; \
		} \
		if (n >= s->limit) \
			goto stop; \
		if (n == s->alloc && !eps_slot_grow(s)) \
		{ \
			s->nomem = 1; \
			goto stop; \
		} \
		if (self) \
		{ \
			uint32_t	a_ = pg->perm[p], \
						c_ = bg->perm[q]; \
\
			s->left[n] = a_ < c_ ? a_ : c_; \
			s->right[n] = a_ < c_ ? c_ : a_; \
		} \
		else \
		{ \
			s->left[n] = pg->perm[p]; \
			s->right[n] = bg->perm[q]; \
		} \
		s->value[n] = dist; \
		n++; \
	} while (0)

/*
 * Run one task until it is done, its slot is full or the deadline passes.
 * Loop order: probe cell, candidate range, block of candidates (sized to
 * stay in cache), probe point of the cell, candidate.  dim, self,
 * count_only and cosine are constants at every call site, so the compiler
 * makes a tight loop of each combination.  Under cosine the points are the
 * normalised copies and the L2 test is only the filter: the canonical
 * cosine distance decides.
 */
static inline __attribute__((always_inline)) void
eps_task_run_impl(SjEpsJoin *j, EpsTask *t, EpsSlot *s, const int dim,
				  const int self, const int count_only, const int cosine)
{
	const EpsGrid *pg = j->probe;
	const EpsGrid *bg = &j->build;
	const double *ppts = pg->pts;
	const double *bpts = bg->pts;
	const double eps = j->eps;
	const double thr = j->thr;
	const double fthr = j->fthr;
	const double ithr = j->ithr;
	const EpsSums4Fn sums4 = j->sums4;
	const uint32_t blk = j->block;
	EpsRange	rg[EPS_MAX_RANGES];
	size_t		n = s->n;
	uint64_t	work = 0;
	uint32_t	p0,
				r,
				b,
				p,
				q,
				nr,
				cell;
	int			resume = t->state == EPS_TASK_EXACT;

	p0 = resume ? t->p0 : t->lo;
	cell = eps_cell_of(pg, p0);
	for (; p0 < t->hi; p0 = pg->cellstart[cell], resume = 0)
	{
		uint32_t	cend = pg->cellstart[cell + 1];

		if (cend > t->hi)
			cend = t->hi;
		nr = eps_cell_ranges(j, cell, rg);
		cell++;
		if (resume)
		{
			r = t->r;
			b = t->b;
			p = t->p;
			q = t->q;
		}
		else
		{
			r = 0;
			b = nr > 0 ? rg[0].lo : 0;
			p = p0;
			q = nr > 0 ? eps_first_candidate(&rg[0], b, p) : 0;
		}

		while (r < nr)
		{
			uint32_t	hi = rg[r].hi;

			while (b < hi)
			{
				uint32_t	bend = hi - b > blk ? b + blk : hi;

				while (p < cend)
				{
					const double *x = ppts + (size_t) p * dim;

					work += 4;
					if (q < bend)
						work += bend - q;
					for (; q < bend; q++)
					{
						const double *y = bpts + (size_t) q * dim;
						double		sum = 0.0;
						double		dist;
						int			k;

						/* four candidates at a time, each in its own order */
						if (dim > 8 && bend - q >= 4)
						{
							double		sums[4];
							int			i;

							sums4(x, y, dim, fthr, sums);
							for (i = 0; i < 4; i++, q++)
							{
								if (!(sums[i] <= fthr))
									continue;
								if (count_only && sums[i] <= ithr)
									dist = 0.0; /* joins for certain; no value */
								else if (cosine)
									dist = eps_cos_value(pg, p, bg, q, dim);
								else
								{
									double		c = eps_l2_sum(x, bpts + (size_t) q * dim, dim);

									if (!(c <= thr))
										continue;
									dist = sqrt(c);
								}
								if (!(dist <= eps))
									continue;
								EPS_EMIT();
							}
							q--;
							continue;
						}

						if (dim <= 8)
						{
							for (k = 0; k < dim; k++)
							{
								double		dd = x[k] - y[k];

								sum = sum + dd * dd;
							}
						}
						else
						{
							for (k = 0; k < dim;)
							{
								int			kend = k + 8 < dim ? k + 8 : dim;

								for (; k < kend; k++)
								{
									double		dd = x[k] - y[k];

									sum = sum + dd * dd;
								}
								if (sum > thr)
									break;
							}
						}
						if (!(sum <= thr))
							continue;
						if (cosine && count_only && sum <= ithr)
							dist = 0.0; /* joins for certain; no value */
						else
							dist = cosine ? eps_cos_value(pg, p, bg, q, dim) : sqrt(sum);
						if (!(dist <= eps))
							continue;
						EPS_EMIT();
					}
					p++;
					q = eps_first_candidate(&rg[r], b, p);
					if (work >= EPS_WORK_CHECK)
					{
						work = 0;
						if (sj_now_ms() > j->deadline)
						{
							s->late = 1;
							goto stop;
						}
					}
				}
				b = bend;
				p = p0;
				q = eps_first_candidate(&rg[r], b, p);
			}
			r++;
			if (r < nr)
			{
				b = rg[r].lo;
				q = eps_first_candidate(&rg[r], b, p);
			}
		}
	}
	t->state = EPS_TASK_DONE;
	s->n = n;
	return;

stop:
	t->p0 = p0;
	t->r = r;
	t->b = b;
	t->p = p;
	t->q = q;
	t->state = EPS_TASK_EXACT;
	s->n = n;
}

/* Dispatch to a specialised loop for small dimensions (L2) or cosine. */
#define EPS_RUN_DIMS(SELF, COUNT) \
	do { \
		if (j->metric == SJ_METRIC_COSINE) \
		{ \
			eps_task_run_impl(j, t, s, j->dim, SELF, COUNT, 1); \
			break; \
		} \
		switch (j->dim) \
		{ \
			case 1: eps_task_run_impl(j, t, s, 1, SELF, COUNT, 0); break; \
			case 2: eps_task_run_impl(j, t, s, 2, SELF, COUNT, 0); break; \
			case 3: eps_task_run_impl(j, t, s, 3, SELF, COUNT, 0); break; \
			case 4: eps_task_run_impl(j, t, s, 4, SELF, COUNT, 0); break; \
			default: eps_task_run_impl(j, t, s, j->dim, SELF, COUNT, 0); break; \
		} \
	} while (0)

/* Parallel task: run the task of window slot `slot'. */
static void
eps_slot_task(void *arg, uint64_t slot, int worker)
{
	SjEpsJoin  *j = (SjEpsJoin *) arg;
	EpsSlot    *s = &j->slots[slot];
	EpsTask    *t = &j->tasks[s->task];

	/* the first slot always moves, so every call makes progress */
	if (slot > 0 && sj_now_ms() > j->deadline)
	{
		s->late = 1;
		return;
	}
	if (j->count_only)
	{
		if (j->self)
			EPS_RUN_DIMS(1, 1);
		else
			EPS_RUN_DIMS(0, 1);
	}
	else
	{
		if (j->self)
			EPS_RUN_DIMS(1, 0);
		else
			EPS_RUN_DIMS(0, 0);
	}
}

/* ---------------------------------------------------------------------
 * Entry points
 * --------------------------------------------------------------------- */

/*
 * Probe a shared grid of the right side instead of building one: it must
 * come from a join of the same eps and dimension over a right side of the
 * same size.
 */
static SjStatus
eps_attach(SjEpsJoin *j, const EpsIndexHeader *h, const SjVectors *right,
		   char *errmsg)
{
	const char *base = (const char *) h;

	if (right == NULL || h->magic != EPS_INDEX_MAGIC || h->dim != j->dim ||
		h->n != right->n || memcmp(&h->eps, &j->eps, sizeof(double)) != 0)
		return sj_error(errmsg, SJ_ERR_INVALID,
						"eps_join: the shared index does not fit this join");
	j->spec = h->spec;
	j->build.n = h->n;
	j->build.ncell = h->ncell;
	j->build.perm = (uint32_t *) (base + h->off_perm);
	j->build.pts = (double *) (base + h->off_pts);
	j->build.cellid = (uint64_t *) (base + h->off_cellid);
	j->build.cellstart = (uint32_t *) (base + h->off_cellstart);
	j->build_shared = 1;
	return SJ_OK;
}

/* Lay out the flattened grid of j's right side; its size, 0 if none. */
static size_t
eps_index_layout(const SjEpsJoin *j, EpsIndexHeader *h)
{
	uint64_t	off;

	memset(h, 0, sizeof(*h));
	if (j == NULL || j->self || j->build_shared || j->build.perm == NULL ||
		j->metric != SJ_METRIC_L2)
		return 0;
	h->magic = EPS_INDEX_MAGIC;
	h->spec = j->spec;
	h->eps = j->eps;
	h->dim = j->dim;
	h->n = j->build.n;
	h->ncell = j->build.ncell;
	off = sizeof(EpsIndexHeader);
	h->off_perm = sj_flat_place(&off, (uint64_t) h->n * sizeof(uint32_t));
	h->off_pts = sj_flat_place(&off, (uint64_t) h->n * j->dim * sizeof(double));
	h->off_cellid = sj_flat_place(&off, (uint64_t) h->ncell * sizeof(uint64_t));
	h->off_cellstart = sj_flat_place(&off, ((uint64_t) h->ncell + 1) * sizeof(uint32_t));
	h->size = sj_flat_place(&off, 0);
	return (size_t) h->size;
}

size_t
sj_eps_cpu_index_size(const SjEpsJoin *j)
{
	EpsIndexHeader h;

	return eps_index_layout(j, &h);
}

void
sj_eps_cpu_index_write(const SjEpsJoin *j, void *dst)
{
	EpsIndexHeader h;
	char	   *base = (char *) dst;

	if (eps_index_layout(j, &h) == 0)
		return;
	memcpy(base, &h, sizeof(h));
	memcpy(base + h.off_perm, j->build.perm, (size_t) h.n * sizeof(uint32_t));
	memcpy(base + h.off_pts, j->build.pts, (size_t) h.n * j->dim * sizeof(double));
	memcpy(base + h.off_cellid, j->build.cellid, (size_t) h.ncell * sizeof(uint64_t));
	memcpy(base + h.off_cellstart, j->build.cellstart,
		   ((size_t) h.ncell + 1) * sizeof(uint32_t));
}

/*
 * Choose the grid's geometry from both sides' bounds, or, with index_right,
 * from the right side's widened by eps: a left point outside them falls
 * into an edge cell, whose neighbours hold every right point within eps of
 * it, so any left side may probe that grid.
 */
static SjStatus
eps_grid_spec(SjEpsJoin *j, const SjVectors *left, const SjVectors *right,
			  int index_right, char *errmsg)
{
	EpsBounds	eb;
	SjStatus	st;
	int			k;

	index_right = index_right && right != NULL;
	eb.a = index_right ? right : left;
	eb.b = index_right ? NULL : right;
	eb.mn = malloc(sizeof(double) * j->dim);
	eb.mx = malloc(sizeof(double) * j->dim);
	if (!eb.mn || !eb.mx)
	{
		free(eb.mn);
		free(eb.mx);
		return sj_error(errmsg, SJ_ERR_NOMEM, "out of memory starting eps_join");
	}
	st = sj_parallel_for(j->threads, (uint64_t) j->dim, eps_bounds_task, &eb);
	if (st == SJ_OK && index_right)
	{
		for (k = 0; k < j->dim; k++)
			if (isfinite(eb.mn[k] - j->geps) && isfinite(eb.mx[k] + j->geps))
			{
				eb.mn[k] -= j->geps;
				eb.mx[k] += j->geps;
			}
		/* the probing sides are not known: as many rows as the right */
		eps_choose_spec(j, eb.mn, eb.mx, (double) right->n, (double) right->n);
	}
	else if (st == SJ_OK)
		eps_choose_spec(j, eb.mn, eb.mx, (double) left->n,
						(double) (right ? right->n : left->n));
	free(eb.mn);
	free(eb.mx);
	if (st != SJ_OK)
		return sj_error(errmsg, st, "could not start worker threads");
	return SJ_OK;
}

/*
 * Cosine: after a grid of the normalised copies of a side is built, point
 * its permutation at the side's input rows and copy their original
 * coordinates and norms in sorted order, for the canonical test.
 */
static SjStatus
eps_cos_finish_grid(EpsGrid *g, const EpsCosSide *c, const SjVectors *v,
					char *errmsg)
{
	int			dim = v->dim;
	uint32_t	i;
	int			k;

	g->orig = malloc(sizeof(double) * ((size_t) g->n * dim + 1));
	g->norms = malloc(sizeof(double) * ((size_t) g->n + 1));
	if (!g->orig || !g->norms)
		return sj_error(errmsg, SJ_ERR_NOMEM,
						"out of memory building a grid of %u points", g->n);
	for (i = 0; i < g->n; i++)
	{
		uint32_t	r = c->map[g->perm[i]];

		g->perm[i] = r;
		g->norms[i] = c->norms[r];
		for (k = 0; k < dim; k++)
			g->orig[(size_t) i * dim + k] = v->coords[(size_t) k * v->n + r];
	}
	return SJ_OK;
}

/*
 * Cosine: normalised copies of both sides, zero vectors dropped, and the
 * filter's threshold; *left and *right become the copies.
 */
static SjStatus
eps_cos_begin(SjEpsJoin *j, const SjVectors **left, const SjVectors **right,
			  char *errmsg)
{
	SjStatus	st;

	st = sj_eps_cos_prepare(*right ? *right : *left, &j->cos[0], errmsg);
	if (st == SJ_OK && *right)
		st = sj_eps_cos_prepare(*left, &j->cos[1], errmsg);
	if (st != SJ_OK)
		return st;
	/* a row whose |x|^2 over- or underflows: compare every pair */
	j->thr = j->cos[0].irregular + j->cos[1].irregular > 0 ? INFINITY :
		sj_eps_cos_threshold(j->eps, j->dim);
	j->ithr = j->cos[0].irregular + j->cos[1].irregular > 0 ? -1.0 :
		sj_eps_cos_inner_threshold(j->eps, j->dim);
	j->geps = sqrt(j->thr);
	if (*right)
	{
		*right = &j->cos[0].unit;
		*left = &j->cos[1].unit;
	}
	else
		*left = &j->cos[0].unit;
	return SJ_OK;
}

/* Validate the inputs, grid them and plan the probe tasks. */
SjStatus
sj_eps_cpu_begin(const SjVectors *left, const SjVectors *right, double eps,
				 const SjJoinOptions *options, SjEpsJoin **join, char *errmsg)
{
	SjEpsJoin  *j;
	uint32_t	nprobe;
	const SjVectors *orig_left = left;
	const SjVectors *orig_right = right;
	double		t0 = sj_now_ms();
	size_t		i;
	SjStatus	st;

	if (join == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: no handle pointer");
	*join = NULL;
	if (left == NULL || options == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: missing input or options");
	if (left->dim < 1)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: dimension %d is not positive",
						 left->dim);
	if (right != NULL && right->dim != left->dim)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: different dimensions %d and %d",
						 left->dim, right->dim);
	if ((left->n > 0 && left->coords == NULL) ||
		(right != NULL && right->n > 0 && right->coords == NULL))
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: missing coordinates");
	if (!(eps >= 0.0))
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: eps %g is negative or NaN", eps);
	if (options->metric != SJ_METRIC_L2 && options->metric != SJ_METRIC_COSINE)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: unknown metric %d",
						options->metric);

	j = calloc(1, sizeof(SjEpsJoin));
	if (j == NULL)
		return sj_error(errmsg, SJ_ERR_NOMEM, "out of memory starting eps_join");
	j->dim = left->dim;
	j->self = right == NULL;
	j->count_only = options->count_only != 0;
	j->threads = options->cpu_threads >= 1 ? options->cpu_threads : 1;
	j->eps = eps;
	j->thr = eps_threshold(eps);
	j->geps = eps;
	j->metric = options->metric;
	j->block = EPS_BLOCK_BYTES / (8 * (uint32_t) j->dim);
	if (j->block < 32)
		j->block = 32;
	j->max_batch = options->max_batch_pairs ? options->max_batch_pairs : EPS_DEFAULT_BATCH;
	j->window = 4 * (size_t) j->threads;
	j->probe = j->self ? &j->build : &j->left;

	if (j->metric == SJ_METRIC_COSINE && options->index_only &&
		options->index_right && right != NULL)
	{
		/* no shared index under cosine: build nothing */
		j->finished = 1;
		snprintf(j->timings.strategy, sizeof(j->timings.strategy),
				 "grid (cosine, no shared index)");
		*join = j;
		return SJ_OK;
	}
	if (j->metric == SJ_METRIC_COSINE)
	{
		st = eps_cos_begin(j, &left, &right, errmsg);
		if (st != SJ_OK)
		{
			sj_eps_cpu_end(j);
			return st;
		}
	}
	nprobe = left->n;
	j->fthr = eps_filter_threshold(j->thr, j->dim);
	if (j->metric == SJ_METRIC_L2)
		j->ithr = eps_inner_threshold(j->thr, j->dim);
	j->sums4 = eps_sums4_choose();

	if (left->n == 0 || (right != NULL && right->n == 0) ||
		(j->self && left->n < 2))
	{
		j->finished = 1;
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "grid (empty)");
		*join = j;
		return SJ_OK;
	}

	j->slots = calloc(EPS_MAX_WINDOW, sizeof(EpsSlot));
	if (!j->slots)
	{
		sj_eps_cpu_end(j);
		return sj_error(errmsg, SJ_ERR_NOMEM, "out of memory starting eps_join");
	}
	if (options->shared_index != NULL && j->metric == SJ_METRIC_L2)
		st = eps_attach(j, (const EpsIndexHeader *) options->shared_index, right,
						errmsg);
	else
		st = eps_grid_spec(j, left, right, options->index_right, errmsg);
	if (st == SJ_OK && !j->build_shared)
		st = eps_grid_build(j, right ? right : left, &j->build, errmsg);
	if (st == SJ_OK && !j->self && !(options->index_only && options->index_right))
		st = eps_grid_build(j, left, &j->left, errmsg);
	if (st == SJ_OK && j->metric == SJ_METRIC_COSINE)
	{
		st = eps_cos_finish_grid(&j->build, &j->cos[0], right ? orig_right : orig_left,
								 errmsg);
		if (st == SJ_OK && !j->self)
			st = eps_cos_finish_grid(&j->left, &j->cos[1], orig_left, errmsg);
		sj_eps_cos_free(&j->cos[0]);
		sj_eps_cos_free(&j->cos[1]);
	}
	if (st != SJ_OK)
	{
		sj_eps_cpu_end(j);
		return st;
	}
	if (options->index_only && options->index_right && !j->self)
	{
		/* the grid of the right side is all that is wanted */
		j->finished = 1;
		j->timings.build_ms = sj_now_ms() - t0;
		snprintf(j->timings.strategy, sizeof(j->timings.strategy),
				 "grid K=%d cells=%u (index only)", j->spec.gdim[0] < 0 ? 0 : j->spec.k,
				 j->build.ncell);
		*join = j;
		return SJ_OK;
	}

	j->ntasks = ((size_t) nprobe + EPS_TASK_POINTS - 1) / EPS_TASK_POINTS;
	j->tasks = calloc(j->ntasks, sizeof(EpsTask));
	if (j->tasks == NULL)
	{
		sj_eps_cpu_end(j);
		return sj_error(errmsg, SJ_ERR_NOMEM, "out of memory planning eps_join");
	}
	for (i = 0; i < j->ntasks; i++)
	{
		j->tasks[i].lo = (uint32_t) (i * EPS_TASK_POINTS);
		j->tasks[i].hi = (uint32_t) ((i + 1) * EPS_TASK_POINTS < nprobe ?
									 (i + 1) * EPS_TASK_POINTS : nprobe);
	}

	j->timings.build_ms = sj_now_ms() - t0;
	snprintf(j->timings.strategy, sizeof(j->timings.strategy),
			 "grid K=%d cells=%u%s%s", j->spec.gdim[0] < 0 ? 0 : j->spec.k,
			 j->build.ncell, j->self ? " unidirectional" : "",
			 j->metric == SJ_METRIC_COSINE ? " cosine" : "");
	*join = j;
	return SJ_OK;
}

/* Gather the slots' pairs into the handle's batch arrays. */
static SjStatus
eps_collect(SjEpsJoin *j, size_t total, char *errmsg)
{
	size_t		at = 0,
				i;

	if (total > j->out_alloc)
	{
		uint32_t   *l = realloc(j->out_left, total * sizeof(uint32_t));
		uint32_t   *r;
		double	   *v;

		if (l)
			j->out_left = l;
		r = realloc(j->out_right, total * sizeof(uint32_t));
		if (r)
			j->out_right = r;
		v = realloc(j->out_value, total * sizeof(double));
		if (v)
			j->out_value = v;
		if (!l || !r || !v)
			return sj_error(errmsg, SJ_ERR_NOMEM,
							 "out of memory for a batch of %zu pairs", total);
		j->out_alloc = total;
	}
	for (i = 0; i < j->nslot; i++)
	{
		EpsSlot    *s = &j->slots[i];

		if (s->n == 0)
			continue;
		memcpy(j->out_left + at, s->left, s->n * sizeof(uint32_t));
		memcpy(j->out_right + at, s->right, s->n * sizeof(uint32_t));
		memcpy(j->out_value + at, s->value, s->n * sizeof(double));
		at += s->n;
	}
	return SJ_OK;
}

/* Run the next window of tasks and return its pairs. */
SjStatus
sj_eps_cpu_next(SjEpsJoin *j, SjPairBatch *batch, int *done, char *errmsg)
{
	double		t0 = sj_now_ms();
	size_t		want,
				limit,
				total = 0,
				t,
				i;
	int			late = 0;
	SjStatus	st;

	if (j == NULL || batch == NULL || done == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "eps_join: missing argument to next");
	memset(batch, 0, sizeof(*batch));
	*done = 0;
	if (j->finished)
	{
		/* an empty join still returns one (empty) batch */
		*done = 1;
		if (!j->said_done)
			j->timings.batches++;
		j->said_done = 1;
		return SJ_OK;
	}

	/* the window: the first unfinished tasks, each with an equal share */
	if (j->count_only)
		want = EPS_MAX_WINDOW;
	else
		want = j->window < j->max_batch ? j->window : j->max_batch;
	j->nslot = 0;
	for (t = j->first_open; t < j->ntasks && j->nslot < want; t++)
	{
		if (j->tasks[t].state == EPS_TASK_DONE)
			continue;
		j->slots[j->nslot++].task = t;
	}
	limit = j->count_only ? SIZE_MAX : j->max_batch / j->nslot;
	for (i = 0; i < j->nslot; i++)
	{
		EpsSlot    *s = &j->slots[i];

		s->n = 0;
		s->nomem = 0;
		s->late = 0;
		s->limit = limit;
		if (s->alloc > 2 * limit)
		{
			free(s->left);
			free(s->right);
			free(s->value);
			s->left = s->right = NULL;
			s->value = NULL;
			s->alloc = 0;
		}
	}

	j->deadline = t0 + EPS_CALL_MS;
	st = sj_parallel_for(j->threads, j->nslot, eps_slot_task, j);
	if (st != SJ_OK)
		return sj_error(errmsg, st, "could not start worker threads");
	for (i = 0; i < j->nslot; i++)
	{
		if (j->slots[i].nomem)
			return sj_error(errmsg, SJ_ERR_NOMEM,
							 "out of memory buffering eps_join pairs");
		total += j->slots[i].n;
		late |= j->slots[i].late;
	}

	if (j->count_only)
		batch->count = total;
	else
	{
		st = eps_collect(j, total, errmsg);
		if (st != SJ_OK)
			return st;
		batch->count = total;
		if (total > 0)
		{
			batch->left = j->out_left;
			batch->right = j->out_right;
			batch->value = j->out_value;
		}
		/* grow the window while batches come out small and calls short */
		if (late)
			j->window = j->window > 1 ? j->window / 2 : 1;
		else if (total < j->max_batch / 4 && j->nslot == want &&
				 j->window < EPS_MAX_WINDOW)
			j->window *= 2;
	}

	while (j->first_open < j->ntasks &&
		   j->tasks[j->first_open].state == EPS_TASK_DONE)
		j->first_open++;
	if (j->first_open == j->ntasks)
	{
		j->finished = 1;
		j->said_done = 1;
		*done = 1;
	}
	j->timings.batches++;
	j->timings.probe_ms += sj_now_ms() - t0;
	return SJ_OK;
}

/* Report where the time went. */
void
sj_eps_cpu_timings(const SjEpsJoin *j, SjTimings *timings)
{
	if (j == NULL)
	{
		memset(timings, 0, sizeof(*timings));
		return;
	}
	*timings = j->timings;
}

/* Free everything the join holds; NULL is a no-op. */
void
sj_eps_cpu_end(SjEpsJoin *j)
{
	size_t		i;

	if (j == NULL)
		return;
	if (j->build_shared)
		memset(&j->build, 0, sizeof(j->build));
	else
		eps_grid_free(&j->build);
	eps_grid_free(&j->left);
	sj_eps_cos_free(&j->cos[0]);
	sj_eps_cos_free(&j->cos[1]);
	if (j->slots)
	{
		for (i = 0; i < EPS_MAX_WINDOW; i++)
		{
			free(j->slots[i].left);
			free(j->slots[i].right);
			free(j->slots[i].value);
		}
		free(j->slots);
	}
	free(j->tasks);
	free(j->out_left);
	free(j->out_right);
	free(j->out_value);
	free(j);
}
