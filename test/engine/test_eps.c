/*
 * test_eps.c
 *		Tests of the CPU eps_join engine against a brute-force oracle.
 *
 * Every case draws fresh data from the run's seed (sj_test_seed, printed by
 * the runner; each failure also prints the case's own seed), runs the engine
 * to exhaustion through its iterator and compares the sorted (left, right)
 * pairs exactly and each distance bit for bit with a plain double loop that
 * uses the contract's distance expression.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sjengine.h"
#include "sjtest.h"

/* One pair of the expected or actual result. */
typedef SjTestPair EpsPair;
typedef SjTestPairs EpsPairs;

/* Data shapes. */
typedef enum EpsShape
{
	SHAPE_UNIFORM,				/* uniform in [lo, hi]^dim */
	SHAPE_CLUSTERS,				/* tight clusters around random centres */
	SHAPE_DUPLICATES,			/* drawn from a small pool of points */
	SHAPE_IDENTICAL,			/* one point repeated */
	SHAPE_INTGRID,				/* integer coordinates in [0, span] */
	SHAPE_LARGE_STEP,			/* lo + small multiples of a step */
	SHAPE_UNDERFLOW				/* multiples of 1e-170 */
} EpsShape;

/* One test case. */
typedef struct EpsCase
{
	uint32_t	nl;
	uint32_t	nr;				/* ignored for a self-join */
	int			self;
	int			dim;
	EpsShape	shape;
	double		lo;
	double		hi;				/* span or step, by shape */
	double		eps;
	int			threads;
	size_t		max_batch;
	int			count_only;
} EpsCase;

static uint64_t rng_state;
static double right_shift;		/* added to every right coordinate */

static double pool[5][2048];	/* shared by both sides of a case */
static double centre[8][2048];
static int	npool;

/* Draw the pool and cluster centres that both sides of a case share. */
static void
make_shape(const EpsCase *c)
{
	int			k,
				m;

	npool = 1 + (int) (sj_test_splitmix(&rng_state) % 5);
	for (k = 0; k < c->dim && k < 2048; k++)
	{
		for (m = 0; m < 5; m++)
			pool[m][k] = c->lo + sj_test_unit(&rng_state) * (c->hi - c->lo);
		for (m = 0; m < 8; m++)
			centre[m][k] = c->lo + sj_test_unit(&rng_state) * (c->hi - c->lo);
	}
}

/* Fill n rows of SoA coordinates with the case's shape. */
static double *
make_vectors(const EpsCase *c, uint32_t n)
{
	double	   *x = malloc(sizeof(double) * ((size_t) n * c->dim + 1));
	int			k;
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		int			m = (int) (sj_test_splitmix(&rng_state) % 8);
		int			pm = (int) (sj_test_splitmix(&rng_state) % npool);

		for (k = 0; k < c->dim; k++)
		{
			double		v;

			switch (c->shape)
			{
				case SHAPE_UNIFORM:
					v = c->lo + sj_test_unit(&rng_state) * (c->hi - c->lo);
					break;
				case SHAPE_CLUSTERS:
					v = centre[m][k] + (sj_test_unit(&rng_state) - 0.5) * c->eps * 3.0;
					break;
				case SHAPE_DUPLICATES:
					v = pool[pm][k];
					break;
				case SHAPE_IDENTICAL:
					v = pool[0][k];
					break;
				case SHAPE_INTGRID:
					v = (double) (sj_test_splitmix(&rng_state) % ((uint64_t) c->hi + 1));
					break;
				case SHAPE_LARGE_STEP:
					v = c->lo + (double) (sj_test_splitmix(&rng_state) % 6) * c->hi;
					break;
				case SHAPE_UNDERFLOW:
				default:
					v = (double) (sj_test_splitmix(&rng_state) % 4) * 1e-170;
					break;
			}
			x[(size_t) k * n + i] = v;
		}
	}
	return x;
}

/* The contract's distance of left row i and right row j. */
static double
oracle_dist(const double *L, uint32_t nl, uint32_t i,
			const double *R, uint32_t nr, uint32_t j, int dim)
{
	double		sum = 0;
	int			k;

	for (k = 0; k < dim; k++)
	{
		double		d = L[(size_t) k * nl + i] - R[(size_t) k * nr + j];

		sum = sum + d * d;
	}
	return sqrt(sum);
}

/* Brute-force join. */
static void
oracle(const double *L, uint32_t nl, const double *R, uint32_t nr, int self,
	   int dim, double eps, EpsPairs *out)
{
	uint32_t	i,
				j;

	for (i = 0; i < nl; i++)
		for (j = self ? i + 1 : 0; j < (self ? nl : nr); j++)
		{
			double		d = self ? oracle_dist(L, nl, i, L, nl, j, dim) :
				oracle_dist(L, nl, i, R, nr, j, dim);

			if (d <= eps)
				sj_test_pairs_add(out, i, j, d);
		}
}

/*
 * Run the engine to exhaustion; fills pairs (or *count) and checks batch
 * bounds.  Returns NULL or a message.
 */
static const char *
run_engine_on(const EpsCase *c, const double *L, const double *R,
			  EpsPairs *out, size_t *count, uint64_t *ncalls, char *strategy,
			  const void *shared_index)
{
	static char msg[512];
	SjVectors	lv = {c->nl, c->dim, L};
	SjVectors	rv = {c->nr, c->dim, R};
	SjJoinOptions opt;
	SjEpsJoin  *join = NULL;
	SjTimings	tm;
	char		errmsg[SJ_ERRMSG_LEN];
	size_t		cap = c->max_batch ? c->max_batch : 1048576;
	int			done = 0;

	memset(&opt, 0, sizeof(opt));
	opt.count_only = c->count_only;
	opt.cpu_threads = c->threads;
	opt.max_batch_pairs = c->max_batch;
	opt.shared_index = shared_index;
	*count = 0;
	*ncalls = 0;
	if (sj_eps_cpu_begin(&lv, c->self ? NULL : &rv, c->eps, &opt, &join,
						 errmsg) != SJ_OK)
	{
		snprintf(msg, sizeof(msg), "begin failed: %s", errmsg);
		return msg;
	}
	while (!done)
	{
		SjPairBatch b;
		size_t		i;

		if (sj_eps_cpu_next(join, &b, &done, errmsg) != SJ_OK)
		{
			snprintf(msg, sizeof(msg), "next failed: %s", errmsg);
			sj_eps_cpu_end(join);
			return msg;
		}
		(*ncalls)++;
		if (b.count > cap && !c->count_only)
		{
			snprintf(msg, sizeof(msg), "batch of %zu pairs exceeds %zu",
					 b.count, cap);
			sj_eps_cpu_end(join);
			return msg;
		}
		*count += b.count;
		if (c->count_only)
		{
			if (b.left || b.right || b.value)
			{
				snprintf(msg, sizeof(msg), "count-only batch has arrays");
				sj_eps_cpu_end(join);
				return msg;
			}
			continue;
		}
		for (i = 0; i < b.count; i++)
			sj_test_pairs_add(out, b.left[i], b.right[i], b.value[i]);
	}
	sj_eps_cpu_timings(join, &tm);
	if (strategy)
		snprintf(strategy, 64, "%s", tm.strategy);
	if (tm.batches != *ncalls)
	{
		snprintf(msg, sizeof(msg), "timings report %llu batches, saw %llu",
				 (unsigned long long) tm.batches, (unsigned long long) *ncalls);
		sj_eps_cpu_end(join);
		return msg;
	}
	/* after the end, next keeps saying done with nothing */
	{
		SjPairBatch b;

		done = 0;
		if (sj_eps_cpu_next(join, &b, &done, errmsg) != SJ_OK || !done ||
			b.count != 0)
		{
			snprintf(msg, sizeof(msg), "next after exhaustion misbehaves");
			sj_eps_cpu_end(join);
			return msg;
		}
	}
	sj_eps_cpu_end(join);
	return NULL;
}

/*
 * shared_mode: two-table joins probe a grid of the right side that another
 * join built (with index_right, over the right side as its left, so that
 * the grid covers the right side's bounds only); shared_used counts them.
 */
static int	shared_mode;
static int	shared_used;

static const char *
run_engine(const EpsCase *c, const double *L, const double *R,
		   EpsPairs *out, size_t *count, uint64_t *ncalls, char *strategy)
{
	static char msg[512];
	SjVectors	rv = {c->nr, c->dim, R};
	SjJoinOptions bo;
	SjEpsJoin  *b = NULL;
	void	   *index = NULL;
	const char *err;
	size_t		size;

	if (!shared_mode || c->self)
		return run_engine_on(c, L, R, out, count, ncalls, strategy, NULL);
	memset(&bo, 0, sizeof(bo));
	bo.cpu_threads = 3;
	bo.index_right = 1;
	bo.index_only = shared_used % 2;	/* as the custom scan builds it */
	if (sj_eps_cpu_begin(&rv, &rv, c->eps, &bo, &b, msg) != SJ_OK)
		return msg;
	if (bo.index_only)
	{
		SjPairBatch batch;
		int			done = 0;

		if (sj_eps_cpu_next(b, &batch, &done, msg) != SJ_OK)
		{
			sj_eps_cpu_end(b);
			return msg;
		}
		if (!done || batch.count != 0)
		{
			sj_eps_cpu_end(b);
			snprintf(msg, sizeof(msg), "an index-only join returned %zu pairs", batch.count);
			return msg;
		}
	}
	size = sj_eps_cpu_index_size(b);
	if (size == 0 && c->nr > 0)
	{
		sj_eps_cpu_end(b);
		snprintf(msg, sizeof(msg), "no index of %u right rows (index_only %d)", c->nr,
				 bo.index_only);
		return msg;
	}
	if (size > 0)
	{
		index = malloc(size);
		sj_eps_cpu_index_write(b, index);
		shared_used++;
	}
	sj_eps_cpu_end(b);
	err = run_engine_on(c, L, R, out, count, ncalls, strategy, index);
	free(index);
	return err;
}

/* Run one case against the oracle; NULL or a message naming the case. */
static const char *
check_case(const EpsCase *c, uint64_t seed)
{
	static char msg[1024];
	EpsPairs	want = {0},
				got = {0};
	double	   *L,
			   *R = NULL;
	const char *err;
	size_t		count,
				i;
	uint64_t	ncalls;
	char		strategy[64] = "";

	rng_state = seed;
	make_shape(c);
	L = make_vectors(c, c->nl);
	if (!c->self)
	{
		R = make_vectors(c, c->nr);
		for (i = 0; i < (size_t) c->nr * c->dim; i++)
			R[i] += right_shift;
	}
	oracle(L, c->nl, R, c->nr, c->self, c->dim, c->eps, &want);
	err = run_engine(c, L, R, &got, &count, &ncalls, strategy);
	msg[0] = '\0';
	if (err == NULL && c->count_only && count != want.n)
		err = "count differs";
	if (err == NULL && !c->count_only)
	{
		if (count != got.n || got.n != want.n)
			err = "pair count differs";
		else if (got.n > 0)
		{
			qsort(got.p, got.n, sizeof(EpsPair), sj_test_pair_cmp);
			qsort(want.p, want.n, sizeof(EpsPair), sj_test_pair_cmp);
			for (i = 0; i < got.n && err == NULL; i++)
			{
				if (got.p[i].l != want.p[i].l || got.p[i].r != want.p[i].r)
					err = "pair sets differ";
				else if (memcmp(&got.p[i].d, &want.p[i].d, sizeof(double)) != 0)
					err = "distance differs";
			}
		}
	}
	if (err)
		snprintf(msg, sizeof(msg),
				 "%s: seed %llu %s nl=%u nr=%u dim=%d shape=%d lo=%g hi=%g "
				 "eps=%.17g threads=%d batch=%zu count_only=%d: "
				 "want %zu, got %zu in %llu calls (%s)",
				 err, (unsigned long long) seed, c->self ? "self" : "two-table",
				 c->nl, c->nr, c->dim, (int) c->shape, c->lo, c->hi, c->eps,
				 c->threads, c->max_batch, c->count_only, want.n,
				 c->count_only ? count : got.n, (unsigned long long) ncalls,
				 strategy);
	free(L);
	free(R);
	free(want.p);
	free(got.p);
	return err ? msg : NULL;
}

/* A per-test seed derived from the run's seed and a test's name. */
static uint64_t
case_seed(const char *name, int i)
{
	uint64_t	h = sj_test_seed() * 0x100000001B3ULL + (uint64_t) i;

	while (*name)
		h = (h ^ (unsigned char) *name++) * 0x100000001B3ULL;
	return h;
}

/* Run a case in self-join and two-table form, several option sets. */
static const char *
check_variants(EpsCase c, const char *name, int i)
{
	static const size_t batches[] = {0, 1, 7, 1000};
	int			v;

	for (v = 0; v < 8; v++)
	{
		const char *err;

		c.self = v % 2 == 0;
		c.threads = (v / 2) % 2 ? 4 : 1;
		c.max_batch = batches[(v / 2 + i) % 4];
		c.count_only = v >= 6;
		/* cap the number of calls that a tiny batch size makes */
		if (c.max_batch == 1 && c.nl > 200)
			c.max_batch = 3;
		err = check_case(&c, case_seed(name, i * 16 + v));
		if (err)
			return err;
	}
	return NULL;
}

/* Sizes 0, 1, 2 and odd ones, both forms, empty sides. */
SJ_TEST(eps_small_sizes)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 5, 17, 64, 101};
	int			a,
				b;

	for (a = 0; a < 8; a++)
		for (b = 0; b < 8; b += 3)
		{
			EpsCase		c = {sizes[a], sizes[b], 0, 2, SHAPE_UNIFORM, 0, 10,
			1.5, 1, 0, 0};
			const char *err = check_variants(c, "eps_small_sizes", a * 8 + b);

			SJ_CHECK(err == NULL, "%s", err);
		}
}

/* Uniform data over dimensions 1..8, 16, 64. */
SJ_TEST(eps_uniform_dims)
{
	static const int dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 64};
	int			i;

	for (i = 0; i < 10; i++)
	{
		int			d = dims[i];

		/* eps so that a point has a few neighbours */
		double		eps = 100.0 * pow(4.0 / 600.0, 1.0 / d) * 0.6;
		EpsCase		c = {600 + (uint32_t) i, 437, 0, d, SHAPE_UNIFORM, -50, 50,
		eps, 1, 0, 0};
		const char *err = check_variants(c, "eps_uniform_dims", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Clusters in low and high dimensions. */
SJ_TEST(eps_clusters)
{
	static const int dims[] = {2, 3, 6, 16, 64, 512};
	int			i;

	for (i = 0; i < 6; i++)
	{
		EpsCase		c = {dims[i] > 64 ? 300 : 900, 500, 0, dims[i],
			SHAPE_CLUSTERS, 0, 1000,
		dims[i] > 8 ? 0.5 * sqrt((double) dims[i]) : 0.7, 1, 0, 0};
		const char *err = check_variants(c, "eps_clusters", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Duplicates and identical points, with eps 0 and eps > 0. */
SJ_TEST(eps_duplicates)
{
	int			i;

	for (i = 0; i < 8; i++)
	{
		EpsCase		c = {150 + (uint32_t) i, 77, 0, 1 + i % 4,
			i < 4 ? SHAPE_DUPLICATES : SHAPE_IDENTICAL, -3, 3,
		i % 2 ? 0.0 : 0.25, 1, 0, 0};
		const char *err = check_variants(c, "eps_duplicates", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Integer grids: many pairs exactly at eps (1, 2, sqrt 2, 0). */
SJ_TEST(eps_boundaries)
{
	static const double epss[] = {1.0, 2.0, 1.4142135623730951, 0.0, 3.0,
	1.4142135623730950};
	int			i;

	for (i = 0; i < 12; i++)
	{
		EpsCase		c = {400, 300, 0, 1 + i % 3, SHAPE_INTGRID, 0,
			i % 3 == 0 ? 60 : 12,
		epss[i % 6], 1, 0, 0};
		const char *err = check_variants(c, "eps_boundaries", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Large coordinates with tiny eps, negative ones, and underflowing ones. */
SJ_TEST(eps_precision)
{
	static const struct
	{
		EpsShape	shape;
		double		lo;
		double		step;
		double		eps;
	}			cases[] = {
		{SHAPE_LARGE_STEP, 1e6, 1e-3, 1e-3},
		{SHAPE_LARGE_STEP, 1e6, 1e-3, 2e-3},
		{SHAPE_LARGE_STEP, -1e6, 1e-3, 1e-3},
		{SHAPE_LARGE_STEP, 1e12, 1e-4, 1e-4},
		{SHAPE_LARGE_STEP, 1e6, 1e-9, 1e-9},
		{SHAPE_LARGE_STEP, 1e6, 1e-9, 0.0},
		{SHAPE_LARGE_STEP, 0.1, 0.1, 0.1},
		{SHAPE_LARGE_STEP, -7.3, 0.3, 0.3},
		{SHAPE_LARGE_STEP, 1e300, 1e290, 1e290},
		{SHAPE_UNDERFLOW, 0, 0, 0.0},
		{SHAPE_UNDERFLOW, 0, 0, 1e-170},
		{SHAPE_UNDERFLOW, 0, 0, 3e-170},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		EpsCase		c = {300, 200, 0, 1 + i % 3, cases[i].shape, cases[i].lo,
		cases[i].step, cases[i].eps, 1, 0, 0};
		const char *err = check_variants(c, "eps_precision", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Uniform data in negative ranges, tiny and huge eps. */
SJ_TEST(eps_extreme_eps)
{
	static const double epss[] = {0.0, 1e-12, 1e3, 1e200, INFINITY};
	int			i;

	for (i = 0; i < 10; i++)
	{
		EpsCase		c = {180, 120, 0, 1 + i % 4, SHAPE_UNIFORM, -90, -10,
		epss[i % 5], 1, 0, 0};
		const char *err = check_variants(c, "eps_extreme_eps", i);

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Many pairs over many tiny batches, with threads. */
SJ_TEST(eps_tiny_batches)
{
	static const size_t batches[] = {1, 3, 100, 1000};
	int			i;

	for (i = 0; i < 8; i++)
	{
		EpsCase		c = {i < 4 ? 120 : 1500, 900, i % 2 == 0, 2 + i % 3,
			SHAPE_CLUSTERS, 0, 30, 1.0, i % 2 ? 4 : 2, batches[i % 4], 0};
		const char *err;

		if (c.max_batch < 100 && c.nl > 200)
			c.max_batch = 100;
		err = check_case(&c, case_seed("eps_tiny_batches", i));
		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Larger inputs: counts and pairs against the oracle with 4 threads. */
SJ_TEST(eps_larger)
{
	static const int dims[] = {2, 3, 5, 8};
	int			i;

	for (i = 0; i < 4; i++)
	{
		EpsCase		c = {5000, 3000, i % 2 == 0, dims[i], SHAPE_UNIFORM, 0, 100,
			dims[i] == 2 ? 1.5 : dims[i] == 3 ? 5.0 : dims[i] == 5 ? 15.0 : 30.0,
		4, i == 1 ? 5000 : 0, i == 3};
		const char *err = check_case(&c, case_seed("eps_larger", i));

		SJ_CHECK(err == NULL, "%s", err);
	}
}

/* Two tables over different, partly overlapping or disjoint ranges. */
SJ_TEST(eps_shifted_sides)
{
	static const double shifts[] = {-30.0, 7.5, 19.0, 1e4};
	const char *err = NULL;
	int			i;

	for (i = 0; i < 8 && err == NULL; i++)
	{
		EpsCase		c = {500, 300, 0, 1 + i % 3, SHAPE_UNIFORM, 0, 20, 0.8,
		1 + i % 2 * 3, i % 4 == 3 ? 5 : 0, 0};

		right_shift = shifts[i % 4];
		err = check_case(&c, case_seed("eps_shifted_sides", i));
	}
	right_shift = 0.0;
	SJ_CHECK(err == NULL, "%s", err);
}

/*
 * Two-table joins probing a shared grid of the right side: left points
 * outside its bounds (shifted sides) fall into its edge cells.
 */
SJ_TEST(eps_shared_index)
{
	static const double shifts[] = {0.0, -30.0, 7.5, 19.0, 1e4, -0.5};
	static const EpsShape shapes[] = {SHAPE_UNIFORM, SHAPE_CLUSTERS,
	SHAPE_DUPLICATES, SHAPE_IDENTICAL, SHAPE_INTGRID, SHAPE_UNDERFLOW};
	const char *err = NULL;
	int			i;

	shared_mode = 1;
	shared_used = 0;
	for (i = 0; i < 36 && err == NULL; i++)
	{
		EpsCase		c = {300 + i * 7, 200 + i * 5, 0, 1 + i % 5, shapes[i % 6], 0, 20,
		i % 6 == 5 ? 3e-170 : 0.8, 1 + i % 2 * 3, i % 4 == 3 ? 5 : 0, i % 9 == 8};

		if (c.shape == SHAPE_UNDERFLOW)
			c.hi = 40;
		right_shift = c.shape == SHAPE_UNDERFLOW ? 0.0 : shifts[i % 6];
		err = check_case(&c, case_seed("eps_shared_index", i));
	}
	right_shift = 0.0;
	if (err == NULL)
	{
		EpsCase		c = {60, 41, 0, 300, SHAPE_CLUSTERS, -1, 1, 20.0, 1, 0, 0};

		err = check_variants(c, "eps_shared_index_dim", 0);
	}
	shared_mode = 0;
	SJ_CHECK(err == NULL, "%s", err);
	SJ_CHECK(shared_used >= 30, "only %d joins probed a shared grid", shared_used);
}

/* Grids of more points than one sort task holds, sorted on several threads. */
SJ_TEST(eps_parallel_sort)
{
	EpsCase		a = {300000, 40, 0, 2, SHAPE_UNIFORM, 0, 1000, 4.0, 4, 0, 0},
				b = {40, 300000, 0, 3, SHAPE_CLUSTERS, 0, 1000, 2.0, 3, 0, 0};
	const char *err = check_case(&a, case_seed("eps_parallel_sort", 0));

	if (err == NULL)
		err = check_case(&b, case_seed("eps_parallel_sort", 1));
	shared_mode = 1;
	if (err == NULL)
		err = check_case(&b, case_seed("eps_parallel_sort", 2));
	shared_mode = 0;
	SJ_CHECK(err == NULL, "%s", err);
}

/* A shared grid fits only the eps, dimension and right side it was built for. */
SJ_TEST(eps_shared_index_refused)
{
	double		l[4] = {0, 1, 2, 3},
				r[3] = {1.5, 2.5, 9};
	SjVectors	lv = {4, 1, l},
				rv = {3, 1, r},
				rv2 = {2, 1, r};
	SjJoinOptions o;
	SjEpsJoin  *b = NULL,
			   *j = NULL;
	char		msg[SJ_ERRMSG_LEN];
	void	   *index;
	size_t		size;

	memset(&o, 0, sizeof(o));
	o.cpu_threads = 1;
	o.index_right = 1;
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv, 0.5, &o, &b, msg) == SJ_OK, "%s", msg);
	size = sj_eps_cpu_index_size(b);
	SJ_CHECK(size > 0, "no grid of the right side");
	index = malloc(size);
	sj_eps_cpu_index_write(b, index);
	sj_eps_cpu_end(b);
	o.index_right = 0;
	o.shared_index = index;
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv, 0.25, &o, &j, msg) == SJ_ERR_INVALID,
			 "a grid for eps 0.5 taken for eps 0.25");
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv2, 0.5, &o, &j, msg) == SJ_ERR_INVALID,
			 "a right side of 2 rows took a grid of 3");
	SJ_CHECK(sj_eps_cpu_begin(&lv, NULL, 0.5, &o, &j, msg) == SJ_ERR_INVALID,
			 "a self-join took a shared grid");
	SJ_CHECK(sj_eps_cpu_begin(&lv, &rv, 0.5, &o, &j, msg) == SJ_OK, "%s", msg);
	SJ_CHECK(sj_eps_cpu_index_size(j) == 0, "a probing join offers its grid again");
	sj_eps_cpu_end(j);
	free(index);
}

/* Very high dimension, few rows. */
SJ_TEST(eps_high_dim)
{
	EpsCase		c = {60, 41, 0, 2000, SHAPE_CLUSTERS, -1, 1, 20.0, 1, 0, 0};
	const char *err = check_variants(c, "eps_high_dim", 0);

	SJ_CHECK(err == NULL, "%s", err);
}

/* Bad arguments are refused with a message; end(NULL) is a no-op. */
SJ_TEST(eps_bad_arguments)
{
	double		x[4] = {0, 1, 2, 3};
	SjVectors	v = {2, 2, x};
	SjVectors	v3 = {1, 3, x};
	SjVectors	v0 = {2, 0, x};
	SjJoinOptions opt;
	SjEpsJoin  *join = (SjEpsJoin *) &v;
	char		errmsg[SJ_ERRMSG_LEN];

	memset(&opt, 0, sizeof(opt));
	opt.cpu_threads = 1;
	errmsg[0] = '\0';
	SJ_CHECK(sj_eps_cpu_begin(&v, NULL, -1.0, &opt, &join, errmsg) == SJ_ERR_INVALID,
			 "negative eps");
	SJ_CHECK(join == NULL && errmsg[0] != '\0', "no handle and a message");
	SJ_CHECK(sj_eps_cpu_begin(&v, NULL, NAN, &opt, &join, errmsg) == SJ_ERR_INVALID,
			 "NaN eps");
	SJ_CHECK(sj_eps_cpu_begin(&v, &v3, 1.0, &opt, &join, errmsg) == SJ_ERR_INVALID,
			 "dimension mismatch");
	SJ_CHECK(sj_eps_cpu_begin(&v0, NULL, 1.0, &opt, &join, errmsg) == SJ_ERR_INVALID,
			 "dimension 0");
	SJ_CHECK(sj_eps_cpu_begin(&v, NULL, 1.0, NULL, &join, errmsg) == SJ_ERR_INVALID,
			 "no options");
	sj_eps_cpu_end(NULL);
}

/* Ending a join part way through frees everything (checked by valgrind). */
SJ_TEST(eps_partial_end)
{
	EpsCase		c = {2000, 0, 1, 2, SHAPE_CLUSTERS, 0, 20, 1.0, 2, 50, 0};
	double	   *x;
	SjVectors	v;
	SjJoinOptions opt;
	SjEpsJoin  *join;
	SjPairBatch b;
	char		errmsg[SJ_ERRMSG_LEN];
	int			done = 0,
				i;

	rng_state = case_seed("eps_partial_end", 0);
	make_shape(&c);
	x = make_vectors(&c, c.nl);
	v.n = c.nl;
	v.dim = c.dim;
	v.coords = x;
	memset(&opt, 0, sizeof(opt));
	opt.cpu_threads = 2;
	opt.max_batch_pairs = 50;
	SJ_CHECK(sj_eps_cpu_begin(&v, NULL, c.eps, &opt, &join, errmsg) == SJ_OK,
			 "%s", errmsg);
	for (i = 0; i < 3 && !done; i++)
	{
		if (sj_eps_cpu_next(join, &b, &done, errmsg) != SJ_OK)
			break;
		if (b.count > 50)
			break;
	}
	sj_eps_cpu_end(join);
	free(x);
	SJ_CHECK(i == 3 && !done, "expected 3 partial batches (seed %llu)",
			 (unsigned long long) case_seed("eps_partial_end", 0));
}
