/*
 * test_eps_cosine.c
 *		Tests of eps_join's cosine metric (options.metric = SJ_METRIC_COSINE)
 *		in the CPU engine and, where a GPU is usable, the GPU engine.
 *
 * Each case draws data from the run's seed, runs an engine to exhaustion
 * and compares the sorted pairs exactly, and each distance bit for bit,
 * with a brute-force loop over the canonical distance (sjdist.h:
 * sj_dot_step in dimension order, sj_cosine_finish).  Adversarial shapes:
 * integer vectors (many pairs exactly at eps 0, 1 and 2), nearly equal
 * vectors far from the origin, mixed magnitudes, zero vectors, and rows
 * whose |x|^2 under- or overflows.  The GPU tests also compare with the CPU
 * engine on inputs too large for the brute-force loop.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sjdist.h"
#include "sjengine.h"
#include "sjgpu.h"
#include "sjtest.h"

typedef SjTestPair CPair;
typedef SjTestPairs CPairs;

typedef enum CShape
{
	C_CLUSTERS,					/* tight bundles of directions */
	C_INTGRID,					/* integers in [-2, 2]: exact cosines */
	C_OFFSET,					/* 1e6 + 1e-3 u: nearly equal, far out */
	C_UNDERFLOW,				/* multiples of 1e-155: |x|^2 subnormal,
								 * |a|^2 |b|^2 underflows */
	C_HUGE,						/* ~1e150: |a|^2 |b|^2 overflows */
	C_UNIFORM					/* uniform in [-1, 1] */
} CShape;

static uint64_t c_rng;

/* The canonical cosine distance of left row i and right row j. */
static double
cos_dist(const SjVectors *L, uint32_t i, const SjVectors *R, uint32_t j)
{
	double		dot = 0.0,
				na = 0.0,
				nb = 0.0;
	int			k;

	for (k = 0; k < L->dim; k++)
	{
		double		x = L->coords[(size_t) k * L->n + i];
		double		y = R->coords[(size_t) k * R->n + j];

		dot = sj_dot_step(dot, x, y);
		na = sj_dot_step(na, x, x);
		nb = sj_dot_step(nb, y, y);
	}
	return sj_cosine_finish(dot, na, nb);
}

/*
 * n rows of a shape (SoA); every zero_every-th row a zero vector (0: none),
 * rows scaled by 10^[-3, 3) where mixed.  Bundles share `centres'.
 */
static double *
cos_gen(CShape shape, uint32_t n, int dim, const double *centres, int ncentres,
		double spread, int zero_every, int mixed)
{
	double	   *c = malloc(sizeof(double) * ((size_t) n * dim + 1));
	uint32_t	i;
	int			k;

	if (!c)
		abort();
	for (i = 0; i < n; i++)
	{
		int			m = (int) (sj_test_splitmix(&c_rng) % (uint64_t) ncentres);
		double		scale = mixed ? pow(10.0, 6.0 * sj_test_unit(&c_rng) - 3.0) : 1.0;
		int			zero = zero_every > 0 && i % zero_every == (uint32_t) zero_every / 2;

		for (k = 0; k < dim; k++)
		{
			double		x;

			switch (shape)
			{
				case C_CLUSTERS:
					x = centres[m * dim + k] + spread * (sj_test_unit(&c_rng) - 0.5);
					break;
				case C_INTGRID:
					x = (double) ((int) (sj_test_splitmix(&c_rng) % 5) - 2);
					break;
				case C_OFFSET:
					x = 1e6 + 1e-3 * sj_test_unit(&c_rng);
					break;
				case C_UNDERFLOW:
					x = (double) ((int) (sj_test_splitmix(&c_rng) % 5) - 2) * 1e-155;
					break;
				case C_HUGE:
					x = (sj_test_unit(&c_rng) - 0.5) * 1e150;
					break;
				default:
					x = 2.0 * sj_test_unit(&c_rng) - 1.0;
					break;
			}
			c[(size_t) k * n + i] = zero ? 0.0 : x * scale;
		}
	}
	return c;
}

/* A low quantile q of sampled pair distances (NaN ones left out). */
static double
cos_pick_eps(const SjVectors *L, const SjVectors *R, double q)
{
	double		d[256];
	int			m = 0,
				i,
				a;
	const SjVectors *B = R ? R : L;

	for (i = 0; i < 256; i++)
	{
		double		x = cos_dist(L, (uint32_t) (sj_test_splitmix(&c_rng) % L->n), B,
								 (uint32_t) (sj_test_splitmix(&c_rng) % B->n));

		if (!isnan(x))
			d[m++] = x;
	}
	if (m == 0)
		return 0.5;
	for (i = 1; i < m; i++)
		for (a = i; a > 0 && d[a - 1] > d[a]; a--)
		{
			double		t = d[a];

			d[a] = d[a - 1];
			d[a - 1] = t;
		}
	return d[(int) (q * (m - 1))];
}

/*
 * Run the CPU (gpu = 0) or GPU engine to exhaustion.  NULL or a message.
 */
static const char *
cos_run(int gpu, const SjVectors *L, const SjVectors *R, double eps,
		const SjJoinOptions *o, CPairs *out, uint64_t *count)
{
	static char msg[512];
	char		err[SJ_ERRMSG_LEN] = "";
	SjEpsJoin  *cj = NULL;
	SjGpuEpsJoin *gj = NULL;
	SjStatus	st;
	int			done = 0;
	size_t		maxb = o->max_batch_pairs ? o->max_batch_pairs : 1048576;

	*count = 0;
	st = gpu ? sjgpu_eps_begin(L, R, eps, o, &gj, err) :
		sj_eps_cpu_begin(L, R, eps, o, &cj, err);
	if (st != SJ_OK)
	{
		snprintf(msg, sizeof(msg), "begin: status %d: %s", st, err);
		return msg;
	}
	while (!done)
	{
		SjPairBatch b;
		size_t		i;

		st = gpu ? sjgpu_eps_next(gj, &b, &done, err) :
			sj_eps_cpu_next(cj, &b, &done, err);
		if (st != SJ_OK)
		{
			snprintf(msg, sizeof(msg), "next: status %d: %s", st, err);
			break;
		}
		*count += b.count;
		if (o->count_only)
			continue;
		if (b.count > maxb)
		{
			snprintf(msg, sizeof(msg), "batch of %zu pairs exceeds %zu", b.count, maxb);
			st = SJ_ERR_INTERNAL;
			break;
		}
		for (i = 0; i < b.count; i++)
			sj_test_pairs_add(out, b.left[i], b.right[i], b.value[i]);
	}
	if (gpu)
		sjgpu_eps_end(gj);
	else
		sj_eps_cpu_end(cj);
	return st == SJ_OK ? NULL : msg;
}

/* Compare pair lists, distances bit for bit.  NULL or a message. */
static const char *
cos_compare(CPairs *exp, CPairs *got)
{
	static char msg[512];
	size_t		i;

	qsort(exp->p, exp->n, sizeof(CPair), sj_test_pair_cmp);
	qsort(got->p, got->n, sizeof(CPair), sj_test_pair_cmp);
	for (i = 0; i < exp->n && i < got->n; i++)
	{
		if (sj_test_pair_cmp(&exp->p[i], &got->p[i]) != 0)
		{
			snprintf(msg, sizeof(msg), "%zu pairs expected, %zu got; first difference "
					 "at %zu: (%u,%u) expected, (%u,%u) got (distances %.17g, %.17g)",
					 exp->n, got->n, i, exp->p[i].l, exp->p[i].r, got->p[i].l,
					 got->p[i].r, exp->p[i].d, got->p[i].d);
			return msg;
		}
		if (memcmp(&exp->p[i].d, &got->p[i].d, sizeof(double)) != 0)
		{
			snprintf(msg, sizeof(msg), "pair (%u,%u): distance %.17g, expected %.17g",
					 exp->p[i].l, exp->p[i].r, got->p[i].d, exp->p[i].d);
			return msg;
		}
	}
	if (exp->n != got->n)
	{
		snprintf(msg, sizeof(msg), "%zu pairs expected, %zu got", exp->n, got->n);
		return msg;
	}
	return NULL;
}

/* One cosine case: sizes, dimension, shape, eps (< 0: a quantile -eps). */
typedef struct CosCase
{
	uint32_t	nl;
	uint32_t	nr;
	int			dim;
	CShape		shape;
	double		spread;
	double		eps;
	int			zero_every;
	int			mixed;
} CosCase;

/*
 * Run a case on one engine in several forms (self and two-table, threads,
 * batch sizes, count-only) against the oracle.  NULL or a message.
 */
static const char *
cos_check(const CosCase *c, int gpu, uint64_t salt)
{
	static char msg[1024];
	double	   *centres,
			   *lc,
			   *rc;
	SjVectors	L,
				R;
	double		eps;
	const char *err = NULL;
	int			v,
				i;

	c_rng = sj_test_seed() * 0x100000001B3ULL + salt;
	centres = malloc(sizeof(double) * 8 * c->dim);
	for (i = 0; i < 8 * c->dim; i++)
		centres[i] = sj_test_unit(&c_rng) - 0.5;
	lc = cos_gen(c->shape, c->nl, c->dim, centres, 8, c->spread, c->zero_every, c->mixed);
	rc = cos_gen(c->shape, c->nr, c->dim, centres, 8, c->spread, c->zero_every, c->mixed);
	L.n = c->nl;
	L.dim = c->dim;
	L.coords = lc;
	R.n = c->nr;
	R.dim = c->dim;
	R.coords = rc;
	eps = c->eps >= 0 ? c->eps : cos_pick_eps(&L, &R, -c->eps);

	for (v = 0; v < 4 && err == NULL; v++)
	{
		int			self = v % 2 == 0;
		SjJoinOptions o;
		CPairs		exp = {0},
					got = {0};
		uint64_t	count = 0;

		memset(&o, 0, sizeof(o));
		o.metric = SJ_METRIC_COSINE;
		o.cpu_threads = v < 2 ? 1 : 3;
		o.max_batch_pairs = v == 1 ? 7 : v == 2 ? 1000 : 0;
		o.count_only = v == 3;
		sj_test_brute_join(&L, self ? NULL : &R, eps, cos_dist, &exp);
		err = cos_run(gpu, &L, self ? NULL : &R, eps, &o, &got, &count);
		if (err == NULL && o.count_only && count != exp.n)
		{
			snprintf(msg, sizeof(msg), "count %llu, expected %zu",
					 (unsigned long long) count, exp.n);
			err = msg;
		}
		else if (err == NULL && !o.count_only)
			err = cos_compare(&exp, &got);
		if (err != NULL)
		{
			static char full[2048];

			snprintf(full, sizeof(full), "%s: %s seed %llu salt %llu %s nl=%u nr=%u "
					 "dim=%d shape=%d eps=%.17g variant=%d: %s", gpu ? "gpu" : "cpu",
					 "cosine", (unsigned long long) sj_test_seed(),
					 (unsigned long long) salt, self ? "self" : "two-table",
					 c->nl, c->nr, c->dim, (int) c->shape, eps, v, err);
			err = full;
		}
		free(exp.p);
		free(got.p);
	}
	free(centres);
	free(lc);
	free(rc);
	return err;
}

/* The cases both engines run: d in {1..3, 7, 33, 64, 128, 384, 1536}. */
static const CosCase cos_cases[] = {
	{300, 200, 1, C_UNIFORM, 0, -0.1, 0, 0},
	{300, 200, 2, C_INTGRID, 0, 1.0, 7, 0},
	{300, 200, 2, C_INTGRID, 0, 0.0, 0, 1},
	{300, 200, 3, C_INTGRID, 0, 2.0, 5, 0},
	{400, 300, 3, C_CLUSTERS, 0.05, -0.02, 11, 1},
	{400, 300, 7, C_CLUSTERS, 0.02, -0.05, 11, 0},
	{400, 300, 7, C_INTGRID, 0, 0.5, 13, 0},
	{300, 200, 7, C_OFFSET, 0, 0.0, 0, 0},
	{300, 200, 7, C_OFFSET, 0, 1e-16, 0, 1},
	{300, 250, 33, C_CLUSTERS, 0.1, -0.01, 9, 1},
	{300, 250, 33, C_UNIFORM, 0, 1.0, 9, 0},
	{300, 250, 64, C_CLUSTERS, 0.05, -0.1, 17, 0},
	{300, 250, 64, C_INTGRID, 0, -0.05, 0, 1},
	{200, 150, 128, C_CLUSTERS, 0.2, -0.05, 7, 1},
	{200, 150, 128, C_OFFSET, 0, 0.0, 0, 0},
	{120, 100, 384, C_CLUSTERS, 0.3, -0.2, 5, 0},
	{120, 100, 384, C_UNIFORM, 0, 2.0, 5, 1},
	{60, 50, 1536, C_CLUSTERS, 0.5, -0.3, 4, 1},
	{60, 50, 1536, C_INTGRID, 0, 1.0, 0, 0},
	{150, 100, 5, C_UNDERFLOW, 0, 0.5, 6, 0},
	{150, 100, 5, C_UNDERFLOW, 0, 0.0, 0, 1},
	{150, 100, 2, C_UNDERFLOW, 0, 2.0, 0, 1},
	{150, 100, 33, C_HUGE, 0, 1.0, 6, 0},
	{150, 100, 4, C_HUGE, 0, -0.3, 0, 1},
};

#define N_COS_CASES ((int) (sizeof(cos_cases) / sizeof(cos_cases[0])))

/* The CPU engine's cosine joins against the oracle. */
SJ_TEST(eps_cosine_cpu)
{
	int			i;

	for (i = 0; i < N_COS_CASES; i++)
	{
		const char *err = cos_check(&cos_cases[i], 0, 1000 + i);

		SJ_CHECK(err == NULL, "case %d: %s", i, err);
	}
}

/*
 * Under cosine the CPU engine neither offers nor takes a shared index: an
 * index-only join of the right side has none, and a join given an L2 grid
 * of the right side ignores it and still answers exactly.
 */
SJ_TEST(eps_cosine_cpu_no_shared_index)
{
	double		l[6] = {1, 0, -1, 0, 1, 1},
				r[6] = {2, 0, 0, 1, 3, -1};
	SjVectors	lv = {3, 2, l},
				rv = {3, 2, r};
	SjJoinOptions o;
	SjEpsJoin  *b = NULL;
	CPairs		exp = {0},
				got = {0};
	uint64_t	count;
	char		msg[SJ_ERRMSG_LEN];
	void	   *index;
	size_t		size;
	const char *err;

	memset(&o, 0, sizeof(o));
	o.cpu_threads = 1;
	o.index_right = 1;
	o.index_only = 1;
	o.metric = SJ_METRIC_COSINE;
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv, 0.5, &o, &b, msg) == SJ_OK, "%s", msg);
	SJ_CHECK(sj_eps_cpu_index_size(b) == 0, "a cosine join offers a shared index");
	sj_eps_cpu_end(b);

	o.metric = SJ_METRIC_L2;
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv, 0.5, &o, &b, msg) == SJ_OK, "%s", msg);
	size = sj_eps_cpu_index_size(b);
	SJ_CHECK(size > 0, "no L2 grid of the right side");
	index = malloc(size);
	sj_eps_cpu_index_write(b, index);
	sj_eps_cpu_end(b);

	memset(&o, 0, sizeof(o));
	o.cpu_threads = 1;
	o.metric = SJ_METRIC_COSINE;
	o.shared_index = index;
	sj_test_brute_join(&lv, &rv, 0.5, cos_dist, &exp);
	err = cos_run(0, &lv, &rv, 0.5, &o, &got, &count);
	if (err == NULL)
		err = cos_compare(&exp, &got);
	free(index);
	free(exp.p);
	free(got.p);
	SJ_CHECK(err == NULL, "%s", err);
}

/* An unknown metric is refused. */
SJ_TEST(eps_cosine_bad_metric)
{
	double		x[4] = {0, 1, 2, 3};
	SjVectors	v = {2, 2, x};
	SjJoinOptions o;
	SjEpsJoin  *j = NULL;
	char		msg[SJ_ERRMSG_LEN];

	memset(&o, 0, sizeof(o));
	o.cpu_threads = 1;
	o.metric = 7;
	SJ_CHECK(sj_eps_cpu_begin(&v, NULL, 1.0, &o, &j, msg) == SJ_ERR_INVALID,
			 "metric 7 accepted");
	SJ_CHECK(j == NULL, "a handle for a refused join");
}

/* The GPU engine's cosine joins against the oracle. */
SJ_TEST(eps_cosine_gpu)
{
	int			i;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	for (i = 0; i < N_COS_CASES; i++)
	{
		const char *err = cos_check(&cos_cases[i], 1, 1000 + i);

		SJ_CHECK(err == NULL, "case %d: %s", i, err);
	}
}

/* GPU against CPU on inputs too large for the oracle loop. */
SJ_TEST(eps_cosine_gpu_vs_cpu)
{
	static const int dims[] = {7, 33, 128, 384, 1536};
	int			t;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	for (t = 0; t < 10; t++)
	{
		int			dim = dims[t % 5];
		uint32_t	n = dim <= 33 ? 30000 : dim <= 384 ? 12000 : 4000;
		double	   *centres,
				   *lc,
				   *rc;
		SjVectors	L,
					R;
		SjJoinOptions o;
		CPairs		exp = {0},
					got = {0};
		uint64_t	count;
		const char *err;
		double		eps;
		int			self = t % 2 == 0;
		int			i;

		c_rng = sj_test_seed() * 0x100000001B3ULL + 5000 + t;
		centres = malloc(sizeof(double) * 16 * dim);
		for (i = 0; i < 16 * dim; i++)
			centres[i] = sj_test_unit(&c_rng) - 0.5;
		lc = cos_gen(C_CLUSTERS, n, dim, centres, 16, 0.3, 29, t >= 5);
		rc = cos_gen(C_CLUSTERS, n / 2 + 1, dim, centres, 16, 0.3, 29, t >= 5);
		L.n = n;
		L.dim = dim;
		L.coords = lc;
		R.n = n / 2 + 1;
		R.dim = dim;
		R.coords = rc;
		eps = cos_pick_eps(&L, &R, 0.01);
		memset(&o, 0, sizeof(o));
		o.metric = SJ_METRIC_COSINE;
		o.cpu_threads = 2;
		o.max_batch_pairs = 200000;
		err = cos_run(0, &L, self ? NULL : &R, eps, &o, &exp, &count);
		if (err == NULL)
			err = cos_run(1, &L, self ? NULL : &R, eps, &o, &got, &count);
		if (err == NULL)
			err = cos_compare(&exp, &got);
		free(exp.p);
		free(got.p);
		free(centres);
		free(lc);
		free(rc);
		SJ_CHECK(err == NULL, "case %d dim %d self %d eps %.17g: %s", t, dim, self, eps, err);
	}
}
