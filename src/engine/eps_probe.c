/*
 * eps_probe.c
 *		The CPU eps engine's probe: candidate ranges of a probe cell, the
 *		four-at-a-time filter, the canonical L2 and cosine decisions, and
 *		the resumable loop of one task (see the header of eps_cpu.c).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eps_int.h"
#include "sjdist.h"

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
EpsSums4Fn
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
double
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
double
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
 * Emit (or count) the pair (p, q) with distance dist; 0 when the slot is
 * full or out of memory, which stops the task.
 */
static inline __attribute__((always_inline)) int
eps_emit(EpsSlot *s, const EpsGrid *pg, const EpsGrid *bg, uint32_t p,
		 uint32_t q, double dist, const int self, const int count_only,
		 size_t *np)
{
	size_t		n = *np;

	if (count_only)
	{
		(*np)++;
		return 1;
	}
	if (n >= s->limit)
		return 0;
	if (n == s->alloc && !eps_slot_grow(s))
	{
		s->nomem = 1;
		return 0;
	}
	if (self)
	{
		uint32_t	a = pg->perm[p],
					c = bg->perm[q];

		s->left[n] = a < c ? a : c;
		s->right[n] = a < c ? c : a;
	}
	else
	{
		s->left[n] = pg->perm[p];
		s->right[n] = bg->perm[q];
	}
	s->value[n] = dist;
	*np = n + 1;
	return 1;
}

/*
 * The L2 sum of one pair in dimension order; above 8 dimensions it stops
 * early, a block of 8 at a time, once the sum passes thr.
 */
static inline __attribute__((always_inline)) double
eps_filter_sum(const double *x, const double *y, const int dim, double thr)
{
	double		sum = 0.0;
	int			k;

	if (dim <= 8)
	{
		for (k = 0; k < dim; k++)
		{
			double		dd = x[k] - y[k];

			sum = sum + dd * dd;
		}
		return sum;
	}
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
	return sum;
}

/*
 * Test probe point p against the candidates [*qp, bend) of a block and emit
 * those within eps; 0 when the slot stopped the task (*qp is then the
 * candidate to resume at), 1 when the block is done for p.
 */
static inline __attribute__((always_inline)) int
eps_scan_block(const SjEpsJoin *j, EpsSlot *s, uint32_t p, uint32_t *qp,
			   uint32_t bend, size_t *np, const int dim, const int self,
			   const int count_only, const int cosine)
{
	const EpsGrid *pg = j->probe;
	const EpsGrid *bg = &j->build;
	const double *x = pg->pts + (size_t) p * dim;
	const double *bpts = bg->pts;
	const double eps = j->eps;
	const double thr = j->thr;
	const double fthr = j->fthr;
	const double ithr = j->ithr;
	const EpsSums4Fn sums4 = j->sums4;
	uint32_t	q = *qp;
	int			ok = 1;

	for (; q < bend; q++)
	{
		const double *y = bpts + (size_t) q * dim;
		double		sum;
		double		dist;

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
				if (!eps_emit(s, pg, bg, p, q, dist, self, count_only, np))
				{
					ok = 0;
					goto out;
				}
			}
			q--;
			continue;
		}

		sum = eps_filter_sum(x, y, dim, thr);
		if (!(sum <= thr))
			continue;
		if (cosine && count_only && sum <= ithr)
			dist = 0.0;			/* joins for certain; no value */
		else
			dist = cosine ? eps_cos_value(pg, p, bg, q, dim) : sqrt(sum);
		if (!(dist <= eps))
			continue;
		if (!eps_emit(s, pg, bg, p, q, dist, self, count_only, np))
		{
			ok = 0;
			goto out;
		}
	}
out:
	*qp = q;
	return ok;
}

/*
 * Run one task until it is done, its slot is full or the deadline passes.
 * Loop order: probe cell, candidate range, block of candidates (sized to
 * stay in cache), probe point of the cell, candidate (eps_scan_block).
 * dim, self, count_only and cosine are constants at every call site, so the
 * compiler makes a tight loop of each combination.  Under cosine the points
 * are the normalised copies and the L2 test is only the filter: the
 * canonical cosine distance decides.
 */
static inline __attribute__((always_inline)) void
eps_task_run_impl(SjEpsJoin *j, EpsTask *t, EpsSlot *s, const int dim,
				  const int self, const int count_only, const int cosine)
{
	const EpsGrid *pg = j->probe;
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
					work += 4;
					if (q < bend)
						work += bend - q;
					if (!eps_scan_block(j, s, p, &q, bend, &n, dim, self,
										count_only, cosine))
						goto stop;
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
void
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
