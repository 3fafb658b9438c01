/*
 * eps_cosine.c
 *		The cosine metric of the CPU eps_join engine: unit-normalised copies
 *		of the inputs that the L2 grid filters, and the filter's radius.
 *
 * For unit vectors |u - v|^2 = 2 (1 - cos(u, v)), so the pairs within cosine
 * distance eps are, in exact arithmetic, the pairs of normalised vectors
 * within Euclidean distance sqrt(2 eps).  eps_cpu.c grids and filters the
 * normalised copies with its L2 machinery under the enlarged threshold of
 * sj_eps_cos_threshold, then decides every candidate canonically
 * (sj_cosine_finish on the original coordinates, sjdist.h), so the filter
 * need only never reject a pair that the canonical test accepts.
 *
 * Rows are sorted into three kinds:
 * - zero vectors (every coordinate 0): their cosine distance is NaN with
 *   any vector, so they are dropped;
 * - regular rows, 2^-500 <= |x|^2 <= 2^500 (as summed): no overflow or
 *   underflow disturbs |x|^2, |a|^2 |b|^2 or the normalisation, and the
 *   error bound of sj_eps_cos_threshold holds;
 * - irregular rows (any other): the canonical value may be far from the
 *   exact cosine (an overflowing or underflowing |x|^2), so no filter is
 *   safe; where a side holds one, the join compares every pair
 *   (threshold +inf) and the canonical test alone decides.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eps_cosine.h"
#include "sjdist.h"

/*
 * Normalised, compacted copy of v: the rows that are not zero vectors, each
 * divided by sqrt(|x|^2) (irregular rows: all zeros), with the map back to
 * v's rows and |x|^2 of every row of v.
 */
SjStatus
sj_eps_cos_prepare(const SjVectors *v, EpsCosSide *out, char *errmsg)
{
	uint32_t	n = v->n;
	int			dim = v->dim;
	uint32_t	i,
				m = 0;
	int			k;

	memset(out, 0, sizeof(*out));
	out->norms = malloc(sizeof(double) * ((size_t) n + 1));
	out->map = malloc(sizeof(uint32_t) * ((size_t) n + 1));
	out->coords = malloc(sizeof(double) * ((size_t) n * dim + 1));
	if (!out->norms || !out->map || !out->coords)
	{
		sj_eps_cos_free(out);
		return sj_error(errmsg, SJ_ERR_NOMEM,
						"out of memory normalising %u vectors", n);
	}
	for (i = 0; i < n; i++)
	{
		double		na = 0.0;
		int			zero = 1;

		for (k = 0; k < dim; k++)
		{
			double		x = v->coords[(size_t) k * n + i];

			na = sj_dot_step(na, x, x);
			zero &= x == 0.0;
		}
		out->norms[i] = na;
		if (zero)
			continue;
		out->map[m++] = i;
	}

	/* the kept rows, in structure-of-arrays layout over m rows */
	for (i = 0; i < m; i++)
	{
		uint32_t	r = out->map[i];
		double		na = out->norms[r];
		int			regular = na >= 0x1p-500 && na <= 0x1p500;
		double		s = sqrt(na);

		out->irregular += !regular;
		for (k = 0; k < dim; k++)
			out->coords[(size_t) k * m + i] =
				regular ? v->coords[(size_t) k * n + r] / s : 0.0;
	}
	out->unit.n = m;
	out->unit.dim = dim;
	out->unit.coords = out->coords;
	return SJ_OK;
}

/* Free a side's copies. */
void
sj_eps_cos_free(EpsCosSide *side)
{
	free(side->norms);
	free(side->map);
	free(side->coords);
	memset(side, 0, sizeof(*side));
}

/*
 * The threshold on the squared distance of the normalised copies (summed
 * as sj_l2_step does) that no pair of regular rows with canonical cosine
 * distance <= eps exceeds.
 *
 * With u = DBL_EPSILON / 2, d = dim and g = d u / (1 - d u):
 * - the canonical value c differs from 1 - cos (cos exact) by at most
 *   2 g + 5 u: the dot product errs by g |a| |b| (Cauchy-Schwarz), |a|^2
 *   and |b|^2 by g relative each, product, sqrt and division by u each;
 *   clamping only moves towards the exact value; 1 - sim adds 2 u;
 * - a normalised copy is the exact unit vector plus an error of norm at
 *   most g/2 + 2 u (sqrt of |x|^2, then one division per coordinate);
 * - the computed sum of squared differences exceeds the exact one of the
 *   copies by at most a factor (1 + g)(1 + u)^3.
 * Underflow of products and quotients adds absolute errors of d 2^-1074
 * against norms of at least 2^-250, far inside the margins.  So with
 * h = 8 (d + 8) DBL_EPSILON, which exceeds 2 g + 5 u and g + 4 u
 * while d u < 0.01, a pair with c <= eps has
 *		|u - v| <= sqrt(2 (eps + h)) + h,
 * and its computed sum at most that squared times (1 + h); the last factor
 * also covers the rounding of this computation.
 */
double
sj_eps_cos_threshold(double eps, int dim)
{
	double		h = 8.0 * ((double) dim + 8.0) * DBL_EPSILON;
	double		r = sqrt(2.0 * (eps + h)) + h;

	return r * r * (1.0 + h) + 1e-300;
}

/*
 * The other side: a filter sum of two regular rows (summed in any order,
 * sj_l2_step's or eps_sums4's) at most this has a canonical cosine
 * distance <= eps, so a count-only join counts the pair without computing
 * it; -1 where no sum qualifies.  With h as above (which also exceeds the
 * relative error of either sum, g + 3 u, and 2 u of the rounding here): a
 * sum s <= (sqrt(2 (eps - h)) - h)^2 (1 - 2 h) has exact |u - v|^2 <=
 * (sqrt(2 (eps - h)) - h)^2, so the exact unit vectors are within
 * sqrt(2 (eps - h)) and 1 - cos <= eps - h, so c <= eps.
 */
double
sj_eps_cos_inner_threshold(double eps, int dim)
{
	double		h = 8.0 * ((double) dim + 8.0) * DBL_EPSILON;
	double		r;

	if (!(eps > 2.0 * h))
		return -1.0;
	r = sqrt(2.0 * (eps - h)) - h;
	if (!(r > 0.0))
		return -1.0;
	return r * r * (1.0 - 2.0 * h);
}
