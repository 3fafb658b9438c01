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
 * Files: this one holds the entry points (begin, the shared index, next,
 * end); eps_grid.c the geometry and the building of one side; eps_probe.c
 * the task loop and its filters; eps_int.h the handle for the three.
 *
 * Memory is the engine's own (malloc); nothing here prints or exits.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eps_int.h"
#include "sjdist.h"

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

/*
 * The flattened grid of j's right side (see EpsIndexHeader), written into
 * dst where given; its size, 0 if it has none.
 */
static size_t
eps_index(const SjEpsJoin *j, void *dst)
{
	EpsIndexHeader h;
	SjFlatPart	parts[4];

	memset(&h, 0, sizeof(h));
	if (j == NULL || j->self || j->build_shared || j->build.perm == NULL ||
		j->metric != SJ_METRIC_L2)
		return 0;
	h.magic = EPS_INDEX_MAGIC;
	h.spec = j->spec;
	h.eps = j->eps;
	h.dim = j->dim;
	h.n = j->build.n;
	h.ncell = j->build.ncell;
	parts[0] = (SjFlatPart) {&h.off_perm, j->build.perm, (uint64_t) h.n * sizeof(uint32_t), 1};
	parts[1] = (SjFlatPart) {&h.off_pts, j->build.pts,
		(uint64_t) h.n * j->dim * sizeof(double), 1};
	parts[2] = (SjFlatPart) {&h.off_cellid, j->build.cellid,
		(uint64_t) h.ncell * sizeof(uint64_t), 1};
	parts[3] = (SjFlatPart) {&h.off_cellstart, j->build.cellstart,
		((uint64_t) h.ncell + 1) * sizeof(uint32_t), 1};
	return (size_t) sj_flat_index(dst, &h, sizeof(h), &h.size, parts, 4);
}

/* Bytes of the flattened grid of the right side (see EpsIndexHeader). */
size_t
sj_eps_cpu_index_size(const SjEpsJoin *j)
{
	return eps_index(j, NULL);
}

/* Write the flattened grid of the right side into dst. */
void
sj_eps_cpu_index_write(const SjEpsJoin *j, void *dst)
{
	eps_index(j, dst);
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
