/*
 * test_eps_gpu.c
 *		Tests of the GPU eps_join engine (cuda/eps_gpu.cu).
 *
 * Every case draws fresh data from the run's seed, runs the GPU iterator to
 * exhaustion and compares the sorted pairs with an independent oracle: a
 * brute-force double loop for small inputs, a sort-and-sweep join for large
 * ones, both using the contract's distance expression; distances are
 * compared bit for bit.  Where the CPU engine is linked (src/engine/
 * eps_cpu.c) it is compared too.  Every test skips where no GPU is usable.
 *
 * SJ_EPS_BENCH=1 turns on eps_gpu_bench: Syn2D2M (2,000,000 uniform points
 * in [0,100]^2, eps 0.2) count-only and materialised, median of 5 runs.
 *
 * Size: this file stays larger than the project's ~1,000 lines: its tests
 * all lean on the same private oracle, data generators and pair
 * comparison (static here), which a split would have to export to every
 * part; each test is a short function over them.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "sjdist.h"
#include "sjgpu.h"
#include "sjtest.h"

/* The CPU engine and the GPU test hook may be missing from a build. */
#pragma weak sj_eps_cpu_begin
#pragma weak sj_eps_cpu_next
#pragma weak sj_eps_cpu_end
#pragma weak sjgpu_test_alloc_ms
extern double sjgpu_test_alloc_ms(int reset);
#pragma weak sjgpu_eps_test_prep_steps
extern void sjgpu_eps_test_prep_steps(int on, double *ms);

typedef SjTestPair GPair;
typedef SjTestPairs GPairs;

typedef enum GShape
{
	G_UNIFORM,
	G_CLUSTERS,
	G_DUPLICATES,
	G_IDENTICAL,
	G_INTGRID,
	G_OFFSET,					/* large offset, tiny spread */
	G_UNDERFLOW,				/* multiples of 1e-170: squares underflow */
	G_NSHAPES
} GShape;

static uint64_t g_rng;

/* Seed the generator from the run seed and a per-test salt. */
static void
g_seed(uint64_t salt)
{
	g_rng = sj_test_seed() * 0x2545F4914F6CDD1DULL + salt;
}

/* The contract's distance expression. */
static double
g_dist(const SjVectors *L, uint32_t i, const SjVectors *R, uint32_t j)
{
	double		sum = 0;
	int			k;

	for (k = 0; k < L->dim; k++)
	{
		double		d = L->coords[(size_t) k * L->n + i] - R->coords[(size_t) k * R->n + j];

		sum = sum + d * d;
	}
	return sqrt(sum);
}

static const double *sweep_key;

static int
sweep_cmp(const void *a, const void *b)
{
	double		x = sweep_key[*(const uint32_t *) a],
				y = sweep_key[*(const uint32_t *) b];

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Sort-and-sweep oracle along dimension 0: candidates within a window
 * a little wider than eps, then the exact test.
 */
static void
oracle_sweep(const SjVectors *L, const SjVectors *R, double eps, GPairs *out)
{
	const SjVectors *B = R ? R : L;
	uint32_t   *li = malloc(sizeof(uint32_t) * (L->n + 1)),
			   *bi = malloc(sizeof(uint32_t) * (B->n + 1));
	double		win = eps * (1 + 1e-9) + 1e-150;	/* squares below ~1e-308 underflow */
	uint32_t	i,
				lo = 0;

	for (i = 0; i < L->n; i++)
		li[i] = i;
	for (i = 0; i < B->n; i++)
		bi[i] = i;
	sweep_key = L->coords;
	qsort(li, L->n, sizeof(uint32_t), sweep_cmp);
	sweep_key = B->coords;
	qsort(bi, B->n, sizeof(uint32_t), sweep_cmp);
	for (i = 0; i < L->n; i++)
	{
		double		x = L->coords[li[i]];
		uint32_t	k;

		while (lo < B->n && B->coords[bi[lo]] < x - win)
			lo++;
		for (k = lo; k < B->n && B->coords[bi[k]] <= x + win; k++)
		{
			uint32_t	a = li[i],
						b = bi[k];
			double		d;

			if (!R && a >= b)
				continue;
			d = g_dist(L, a, B, b);
			if (d <= eps)
				sj_test_pairs_add(out, a, b, d);
		}
	}
	free(li);
	free(bi);
}

/* Run the GPU join to exhaustion; checks batch invariants. */
static int
run_gpu(const SjVectors *L, const SjVectors *R, double eps, const SjJoinOptions *o,
		GPairs *out, uint64_t *count, SjTimings *tm, char *why)
{
	SjGpuEpsJoin *j = NULL;
	char		err[SJ_ERRMSG_LEN];
	SjStatus	st;
	int			done = 0;
	size_t		maxb = o->max_batch_pairs ? o->max_batch_pairs : 1048576;
	long		calls = 0;

	*count = 0;
	st = sjgpu_eps_begin(L, R, eps, o, &j, err);
	if (st != SJ_OK)
	{
		snprintf(why, 512, "begin: status %d: %s", st, err);
		return 0;
	}
	while (!done)
	{
		SjPairBatch b;
		size_t		i;

		st = sjgpu_eps_next(j, &b, &done, err);
		if (st != SJ_OK)
		{
			snprintf(why, 512, "next: status %d: %s", st, err);
			sjgpu_eps_end(j);
			return 0;
		}
		if (++calls > 100000000)
		{
			snprintf(why, 512, "too many calls");
			sjgpu_eps_end(j);
			return 0;
		}
		*count += b.count;
		if (o->count_only)
		{
			if (b.left || b.right || b.value)
			{
				snprintf(why, 512, "count_only batch has arrays");
				sjgpu_eps_end(j);
				return 0;
			}
			continue;
		}
		if (b.count > maxb)
		{
			snprintf(why, 512, "batch of %zu pairs exceeds %zu", b.count, maxb);
			sjgpu_eps_end(j);
			return 0;
		}
		for (i = 0; i < b.count; i++)
		{
			if (b.left[i] >= L->n || b.right[i] >= (R ? R->n : L->n) ||
				(!R && b.left[i] >= b.right[i]))
			{
				snprintf(why, 512, "bad pair (%u, %u)", b.left[i], b.right[i]);
				sjgpu_eps_end(j);
				return 0;
			}
			if (out)
				sj_test_pairs_add(out, b.left[i], b.right[i], b.value[i]);
		}
	}
	if (tm)
		sjgpu_eps_timings(j, tm);
	sjgpu_eps_end(j);
	return 1;
}

/* Compare sorted pair lists; distances bit for bit. */
static int
compare_pairs(GPairs *exp, GPairs *got, char *why)
{
	size_t		i;

	qsort(exp->p, exp->n, sizeof(GPair), sj_test_pair_cmp);
	qsort(got->p, got->n, sizeof(GPair), sj_test_pair_cmp);
	if (exp->n != got->n)
	{
		snprintf(why, 512, "expected %zu pairs, got %zu", exp->n, got->n);
		for (i = 0; i < exp->n && i < got->n; i++)
			if (sj_test_pair_cmp(&exp->p[i], &got->p[i]) != 0)
			{
				snprintf(why, 512, "expected %zu pairs, got %zu; first difference at %zu: "
						 "expected (%u,%u) got (%u,%u)", exp->n, got->n, i,
						 exp->p[i].l, exp->p[i].r, got->p[i].l, got->p[i].r);
				break;
			}
		return 0;
	}
	for (i = 0; i < exp->n; i++)
	{
		if (sj_test_pair_cmp(&exp->p[i], &got->p[i]) != 0)
		{
			snprintf(why, 512, "pair %zu: expected (%u,%u) got (%u,%u)", i,
					 exp->p[i].l, exp->p[i].r, got->p[i].l, got->p[i].r);
			return 0;
		}
		if (memcmp(&exp->p[i].d, &got->p[i].d, sizeof(double)) != 0)
		{
			snprintf(why, 512, "pair (%u,%u): distance %.17g, expected %.17g",
					 exp->p[i].l, exp->p[i].r, got->p[i].d, exp->p[i].d);
			return 0;
		}
	}
	return 1;
}

/* Fill n rows of one side (SoA) in a shape; pool/centres shared by sides. */
static double *
gen(GShape shape, uint32_t n, int dim, const double *pool, int npool)
{
	double	   *c = malloc(sizeof(double) * ((size_t) n * dim + 1));
	uint32_t	i;
	int			k;

	for (i = 0; i < n; i++)
	{
		int			p = (int) (sj_test_splitmix(&g_rng) % (uint64_t) npool);

		for (k = 0; k < dim; k++)
		{
			double		x;

			switch (shape)
			{
				case G_UNIFORM:
					x = 100.0 * sj_test_unit(&g_rng);
					break;
				case G_CLUSTERS:
					x = pool[p * dim + k] + (sj_test_unit(&g_rng) - 0.5);
					break;
				case G_DUPLICATES:
					x = pool[p * dim + k];
					break;
				case G_IDENTICAL:
					x = pool[k];
					break;
				case G_INTGRID:
					x = (double) (sj_test_splitmix(&g_rng) % 6);
					break;
				case G_OFFSET:
					x = 1e6 + 1e-3 * sj_test_unit(&g_rng);
					break;
				default:
					x = (double) (sj_test_splitmix(&g_rng) % 5) * 1e-170;
					break;
			}
			c[(size_t) k * n + i] = x;
		}
	}
	return c;
}

/* An eps that makes a few pairs: a low quantile of random pair distances. */
static double
pick_eps(GShape shape, const SjVectors *L, const SjVectors *R)
{
	const SjVectors *B = R ? R : L;
	double		d[64];
	int			m = 0,
				i,
				a;

	if (shape == G_INTGRID)
	{
		static const double e[] = {0.0, 1.0, 1.4142135623730951, 2.0, 3.0};

		return e[sj_test_splitmix(&g_rng) % 5];
	}
	if (shape == G_UNDERFLOW)
		return (sj_test_splitmix(&g_rng) % 2) ? 0.0 : 1e-170;
	if (sj_test_splitmix(&g_rng) % 10 == 0 || L->n == 0 || B->n == 0)
		return (sj_test_splitmix(&g_rng) % 2) ? 0.0 : 1.0;
	for (i = 0; i < 64; i++)
		d[m++] = g_dist(L, (uint32_t) (sj_test_splitmix(&g_rng) % L->n), B, (uint32_t) (sj_test_splitmix(&g_rng) % B->n));
	for (i = 1; i < m; i++)
		for (a = i; a > 0 && d[a - 1] > d[a]; a--)
		{
			double		t = d[a];

			d[a] = d[a - 1];
			d[a - 1] = t;
		}
	/* an exact pair distance: its pair sits on the boundary */
	return d[sj_test_splitmix(&g_rng) % 6];
}

/* Random cases a test runs (SJ_EPS_CASES overrides, e.g. under memcheck). */
static int
ncases(int dflt)
{
	const char *env = getenv("SJ_EPS_CASES");

	return env && atoi(env) > 0 ? atoi(env) : dflt;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
set_strategy(int s)
{
	if (sjgpu_eps_set_test_strategy)
		sjgpu_eps_set_test_strategy(s);
}

/* One random case against the brute-force oracle. */
static int
random_case(int strategy, uint64_t salt, char *why)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 5, 17, 64, 127, 256, 513, 1000};
	static const int dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 64};
	GShape		shape;
	int			dim,
				self,
				npool,
				ok;
	uint32_t	nl,
				nr;
	double	   *pool,
			   *lc,
			   *rc = NULL,
				eps;
	SjVectors	L,
				R;
	SjJoinOptions o;
	GPairs		exp = {0},
				got = {0};
	uint64_t	count;

	g_seed(salt);
	shape = (GShape) (sj_test_splitmix(&g_rng) % G_NSHAPES);
	dim = dims[sj_test_splitmix(&g_rng) % 10];
	self = sj_test_splitmix(&g_rng) % 2;
	nl = sizes[sj_test_splitmix(&g_rng) % 11];
	nr = sizes[sj_test_splitmix(&g_rng) % 11];
	npool = 1 + (int) (sj_test_splitmix(&g_rng) % 12);
	pool = malloc(sizeof(double) * npool * dim);
	for (int i = 0; i < npool * dim; i++)
		pool[i] = 10.0 * sj_test_unit(&g_rng);
	lc = gen(shape, nl, dim, pool, npool);
	L.n = nl;
	L.dim = dim;
	L.coords = lc;
	if (!self)
	{
		rc = gen(shape, nr, dim, pool, npool);
		R.n = nr;
		R.dim = dim;
		R.coords = rc;
	}
	eps = pick_eps(shape, &L, self ? NULL : &R);
	memset(&o, 0, sizeof(o));
	o.cpu_threads = 1;
	o.max_batch_pairs = (sj_test_splitmix(&g_rng) % 3 == 0) ? 1 + sj_test_splitmix(&g_rng) % 50 : 0;
	o.count_only = sj_test_splitmix(&g_rng) % 5 == 0;
	sj_test_brute_join(&L, self ? NULL : &R, eps, g_dist, &exp);
	/* keep the number of calls reasonable */
	if (o.max_batch_pairs && exp.n / o.max_batch_pairs > 20000)
		o.max_batch_pairs = exp.n / 20000 + 1;
	set_strategy(strategy);
	ok = run_gpu(&L, self ? NULL : &R, eps, &o, o.count_only ? NULL : &got, &count, NULL, why);
	set_strategy(0);
	if (ok && o.count_only && count != exp.n)
	{
		snprintf(why, 512, "count_only: %llu, expected %zu",
				 (unsigned long long) count, exp.n);
		ok = 0;
	}
	if (ok && !o.count_only)
		ok = compare_pairs(&exp, &got, why);
	if (!ok)
	{
		char		tmp[512];

		snprintf(tmp, sizeof(tmp), "%s [salt %llu: shape %d dim %d %s nl %u nr %u eps %.17g batch %zu count_only %d]",
				 why, (unsigned long long) salt, shape, dim, self ? "self" : "two",
				 nl, nr, eps, o.max_batch_pairs, o.count_only);
		memcpy(why, tmp, 512);
	}
	free(exp.p);
	free(got.p);
	free(pool);
	free(lc);
	free(rc);
	return ok;
}

SJ_TEST(eps_gpu_devices)
{
	int			n = 0;
	char		err[SJ_ERRMSG_LEN];
	SjGpuDeviceInfo info;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	SJ_CHECK(sjgpu_device_count(&n, err) == SJ_OK && n >= 1, "device count %d", n);
	SJ_CHECK(sjgpu_device_info(0, &info, err) == SJ_OK, "%s", err);
	SJ_CHECK(info.name[0] && info.total_memory > 0 && info.free_memory > 0 &&
			 info.free_memory <= info.total_memory && info.cc_major >= 3,
			 "info %s %llu %llu %d.%d", info.name,
			 (unsigned long long) info.total_memory,
			 (unsigned long long) info.free_memory, info.cc_major, info.cc_minor);
	printf("     device 0: %s, %.1f GiB (%.1f free), cc %d.%d\n", info.name,
		   info.total_memory / 1073741824.0, info.free_memory / 1073741824.0,
		   info.cc_major, info.cc_minor);
	SJ_CHECK(sjgpu_device_info(n, &info, err) == SJ_ERR_NO_DEVICE, "ordinal %d accepted", n);
}

/* ncases(n) random cases of one mode (random_case) from seed on. */
static void
random_cases(int mode, int seed, int n, int *sj_failed_)
{
	char		why[512];
	int			i;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	for (i = 0; i < ncases(n); i++)
		SJ_CHECK(random_case(mode, seed + i, why), "%s", why);
}

SJ_TEST(eps_gpu_random_auto)
{
	random_cases(0, 1000, 300, sj_failed_);
}

SJ_TEST(eps_gpu_random_grid)
{
	random_cases(1, 5000, 300, sj_failed_);
}

SJ_TEST(eps_gpu_random_brute)
{
	random_cases(2, 9000, 200, sj_failed_);
}

/* Integer lattice, eps exactly 1 and sqrt 2: every pair on the boundary. */
SJ_TEST(eps_gpu_boundary_lattice)
{
	static const double epss[] = {0.0, 1.0, 1.4142135623730951, 1.7320508075688772};
	int			dim,
				e,
				s;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	for (dim = 1; dim <= 3; dim++)
		for (e = 0; e < 4; e++)
			for (s = 0; s < 3; s++)
			{
				uint32_t	side = dim == 1 ? 300 : dim == 2 ? 20 : 7;
				uint32_t	n = 1,
							i;
				int			k;
				double	   *c;
				SjVectors	L;
				SjJoinOptions o;
				GPairs		exp = {0},
							got = {0};
				uint64_t	count;
				char		why[512];

				for (k = 0; k < dim; k++)
					n *= side;
				c = malloc(sizeof(double) * n * dim);
				for (i = 0; i < n; i++)
				{
					uint32_t	r = i;

					for (k = 0; k < dim; k++)
					{
						c[(size_t) k * n + i] = (double) (r % side) - 3.0;
						r /= side;
					}
				}
				L.n = n;
				L.dim = dim;
				L.coords = c;
				memset(&o, 0, sizeof(o));
				sj_test_brute_join(&L, NULL, epss[e], g_dist, &exp);
				set_strategy(s);
				SJ_CHECK(run_gpu(&L, NULL, epss[e], &o, &got, &count, NULL, why),
						 "dim %d eps %g: %s", dim, epss[e], why);
				set_strategy(0);
				SJ_CHECK(compare_pairs(&exp, &got, why), "dim %d eps %g strategy %d: %s",
						 dim, epss[e], s, why);
				free(exp.p);
				free(got.p);
				free(c);
			}
}

/* Many pairs, tiny batches: 1, 7 and 1000 pairs a batch. */
SJ_TEST(eps_gpu_tiny_batches)
{
	static const size_t batches[] = {1, 7, 1000};
	int			b,
				s;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(77);
	for (b = 0; b < 3; b++)
		for (s = 0; s < 3; s++)
		{
			double		pool[2 * 8];
			double	   *lc,
					   *rc;
			SjVectors	L,
						R;
			SjJoinOptions o;
			GPairs		exp = {0},
						got = {0};
			uint64_t	count;
			char		why[512];
			int			self = s != 1;

			for (int i = 0; i < 16; i++)
				pool[i] = 10.0 * sj_test_unit(&g_rng);
			lc = gen(G_CLUSTERS, 1500, 2, pool, 8);
			rc = gen(G_CLUSTERS, 1100, 2, pool, 8);
			L.n = 1500;
			L.dim = 2;
			L.coords = lc;
			R.n = 1100;
			R.dim = 2;
			R.coords = rc;
			memset(&o, 0, sizeof(o));
			o.max_batch_pairs = batches[b];
			sj_test_brute_join(&L, self ? NULL : &R, 0.1, g_dist, &exp);
			set_strategy(s == 2 ? 2 : 1);
			SJ_CHECK(run_gpu(&L, self ? NULL : &R, 0.1, &o, &got, &count, NULL, why),
					 "batch %zu: %s", batches[b], why);
			set_strategy(0);
			SJ_CHECK(exp.n > 1000, "only %zu pairs", exp.n);
			SJ_CHECK(compare_pairs(&exp, &got, why), "batch %zu self %d: %s",
					 batches[b], self, why);
			free(exp.p);
			free(got.p);
			free(lc);
			free(rc);
		}
}

/* 200k points under a 4 MB device limit: many chunks and batches. */
SJ_TEST(eps_gpu_tiny_memory)
{
	int			self;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(4242);
	for (self = 1; self >= 0; self--)
	{
		uint32_t	nl = self ? 200000 : 120000,
					nr = 170000;
		double	   *lc = gen(G_UNIFORM, nl, 2, NULL, 1),
				   *rc = gen(G_UNIFORM, nr, 2, NULL, 1);
		SjVectors	L = {nl, 2, lc},
					R = {nr, 2, rc};
		SjJoinOptions o;
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		SjTimings	tm;
		char		why[512];

		memset(&o, 0, sizeof(o));
		o.gpu_memory_limit = 4 << 20;
		o.max_batch_pairs = 4000000;
		oracle_sweep(&L, self ? NULL : &R, 0.3, &exp);
		SJ_CHECK(run_gpu(&L, self ? NULL : &R, 0.3, &o, &got, &count, &tm, why), "%s", why);
		printf("     %s: %zu pairs, %s, %llu batches, peak %llu bytes\n",
			   self ? "self" : "two-table", got.n, tm.strategy,
			   (unsigned long long) tm.batches, (unsigned long long) tm.device_bytes);
		SJ_CHECK(tm.device_bytes <= o.gpu_memory_limit, "peak %llu over the limit",
				 (unsigned long long) tm.device_bytes);
		SJ_CHECK(strstr(tm.strategy, "chunks") != NULL, "no chunks: %s", tm.strategy);
		SJ_CHECK(tm.batches > 10, "only %llu batches", (unsigned long long) tm.batches);
		SJ_CHECK(compare_pairs(&exp, &got, why), "%s", why);
		o.count_only = 1;
		SJ_CHECK(run_gpu(&L, self ? NULL : &R, 0.3, &o, NULL, &count, NULL, why), "%s", why);
		SJ_CHECK(count == exp.n, "count_only %llu, expected %zu",
				 (unsigned long long) count, exp.n);
		free(exp.p);
		free(got.p);
		free(lc);
		free(rc);
	}
}

/*
 * Uploads staged through pinned blocks by several threads, in odd-sized
 * pieces that split rows and values: a 2-D self-join whose build side is
 * uploaded in chunks (rows [first, first + n) of each dimension, pitched)
 * and a 64-D two-table join, against the oracle.
 */
SJ_TEST(eps_gpu_staged_upload)
{
	if (!sj_test_gpu_usable() || !sjgpu_set_test_upload_chunk)
	{
		sj_test_skip(sj_test_gpu_usable() ? "no upload hook" : "no GPU");
		return;
	}
	g_seed(2611);
	for (int t = 0; t < 2; t++)
	{
		int			dim = t == 0 ? 2 : 64;
		uint32_t	nl = t == 0 ? 60000 : 3000,
					nr = 2500;
		double		pool[64 * 6];
		double	   *lc,
				   *rc;
		SjVectors	L,
					R;
		SjJoinOptions o;
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		SjTimings	tm;
		char		why[512];
		double		eps = t == 0 ? 0.02 : sqrt(dim / 6.0 - 1.5 * sqrt(0.0389 * dim));

		for (int i = 0; i < 6 * dim; i++)
			pool[i] = (t == 0 ? 1.0 : 10.0) * sj_test_unit(&g_rng);
		lc = gen(t == 0 ? G_UNIFORM : G_CLUSTERS, nl, dim, pool, 6);
		rc = gen(G_CLUSTERS, nr, dim, pool, 6);
		L.n = nl;
		L.dim = dim;
		L.coords = lc;
		R.n = nr;
		R.dim = dim;
		R.coords = rc;
		memset(&o, 0, sizeof(o));
		if (t == 0)
			o.gpu_memory_limit = 2 << 20;
		if (t == 0)
			oracle_sweep(&L, NULL, eps, &exp);
		else
			sj_test_brute_join(&L, &R, eps, g_dist, &exp);
		sjgpu_set_test_upload_chunk(4099);
		SJ_CHECK(run_gpu(&L, t == 0 ? NULL : &R, eps, &o, &got, &count, &tm, why),
				 "dim %d: %s", dim, why);
		sjgpu_set_test_upload_chunk(0);
		printf("     dim %d: %zu pairs, %s, transfer %.1f ms\n", dim, got.n, tm.strategy,
			   tm.transfer_ms);
		SJ_CHECK(exp.n > 100, "dim %d: only %zu pairs", dim, exp.n);
		if (t == 0)
			SJ_CHECK(strstr(tm.strategy, "chunks") != NULL, "no chunks: %s", tm.strategy);
		SJ_CHECK(compare_pairs(&exp, &got, why), "dim %d (%zu pairs): %s", dim, exp.n, why);
		free(exp.p);
		free(got.p);
		free(lc);
		free(rc);
	}
}

/* High dimensions under a small limit (brute force in chunks). */
SJ_TEST(eps_gpu_high_dim)
{
	static const int dims[] = {64, 300, 1000};
	int			t;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(31337);
	for (t = 0; t < 3; t++)
	{
		int			dim = dims[t];
		uint32_t	n = dim == 64 ? 5000 : 700;
		double		pool[1000 * 6];
		double	   *c;
		SjVectors	L;
		SjJoinOptions o;
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		char		why[512];
		double		eps;

		for (int i = 0; i < 6 * dim; i++)
			pool[i] = 10.0 * sj_test_unit(&g_rng);
		c = gen(G_CLUSTERS, n, dim, pool, 6);
		L.n = n;
		L.dim = dim;
		L.coords = c;
		/* squared intra-cluster distances ~ N(dim/6, 0.0389 dim): take the low tail */
		eps = sqrt(dim / 6.0 - 1.5 * sqrt(0.0389 * dim));
		memset(&o, 0, sizeof(o));
		o.gpu_memory_limit = 1 << 20;
		o.max_batch_pairs = 5000;
		sj_test_brute_join(&L, NULL, eps, g_dist, &exp);
		SJ_CHECK(run_gpu(&L, NULL, eps, &o, &got, &count, NULL, why), "dim %d: %s", dim, why);
		SJ_CHECK(compare_pairs(&exp, &got, why), "dim %d (%zu pairs): %s", dim, exp.n, why);
		free(exp.p);
		free(got.p);
		free(c);
	}
}

/* Tiny segments: the work-estimate pass, segment cuts, per-call limits. */
SJ_TEST(eps_gpu_segments)
{
	int			t;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	if (!sjgpu_eps_set_test_segment_work)
	{
		sj_test_skip("no test hook");
		return;
	}
	for (t = 0; t < 8; t++)
	{
		int			self = t % 2 == 0,
					dim = 1 + t % 4;
		uint32_t	nl = 20000 + 7 * t,
					nr = 15001;
		double		pool[4 * 30];
		double	   *lc,
				   *rc;
		SjVectors	L,
					R;
		SjJoinOptions o;
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		char		why[512];
		double		eps = 0.05 * dim;

		g_seed(800 + t);
		for (int i = 0; i < 120; i++)
			pool[i] = 10.0 * sj_test_unit(&g_rng);
		lc = gen(G_CLUSTERS, nl, dim, pool, 30);
		rc = gen(G_CLUSTERS, nr, dim, pool, 30);
		L.n = nl;
		L.dim = dim;
		L.coords = lc;
		R.n = nr;
		R.dim = dim;
		R.coords = rc;
		memset(&o, 0, sizeof(o));
		o.max_batch_pairs = 50000;
		o.count_only = t >= 6;
		oracle_sweep(&L, self ? NULL : &R, eps, &exp);
		sjgpu_eps_set_test_segment_work(t % 4 < 2 ? 1e5 : 1e7);
		set_strategy(t % 4 == 3 ? 2 : 1);
		SJ_CHECK(run_gpu(&L, self ? NULL : &R, eps, &o, o.count_only ? NULL : &got, &count,
						 NULL, why), "case %d: %s", t, why);
		sjgpu_eps_set_test_segment_work(0);
		set_strategy(0);
		if (o.count_only)
			SJ_CHECK(count == exp.n, "case %d: count %llu, expected %zu", t,
					 (unsigned long long) count, exp.n);
		else
			SJ_CHECK(compare_pairs(&exp, &got, why), "case %d: %s", t, why);
		free(exp.p);
		free(got.p);
		free(lc);
		free(rc);
	}
}

/* A heavy join (all points identical) spread over calls of bounded time. */
SJ_TEST(eps_gpu_call_time)
{
	uint32_t	n = 150000;
	double	   *c = malloc(sizeof(double) * n * 3);
	SjVectors	L = {n, 3, c};
	SjJoinOptions o;
	SjGpuEpsJoin *j = NULL;
	char		err[SJ_ERRMSG_LEN];
	int			done = 0,
				calls = 0;
	uint64_t	count = 0;
	double		worst = 0,
				t0 = now_ms();

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		free(c);
		return;
	}
	for (uint32_t i = 0; i < n * 3; i++)
		c[i] = 42.5;
	memset(&o, 0, sizeof(o));
	o.count_only = 1;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 0.0, &o, &j, err) == SJ_OK, "%s", err);
	worst = now_ms() - t0;
	while (!done)
	{
		SjPairBatch b;
		double		t1 = now_ms();

		SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK, "%s", err);
		count += b.count;
		calls++;
		if (now_ms() - t1 > worst)
			worst = now_ms() - t1;
	}
	sjgpu_eps_end(j);
	free(c);
	printf("     %u identical points: %llu pairs in %d calls, longest %.1f ms, total %.1f ms\n",
		   n, (unsigned long long) count, calls, worst, now_ms() - t0);
	SJ_CHECK(count == (uint64_t) n * (n - 1) / 2, "count %llu", (unsigned long long) count);
	SJ_CHECK(worst < 500.0, "a call took %.1f ms", worst);
}

/* Against the CPU engine on medium random data, where it is linked. */
SJ_TEST(eps_gpu_vs_cpu)
{
	int			t;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	if (!sj_eps_cpu_begin)
	{
		sj_test_skip("CPU engine not linked");
		return;
	}
	for (t = 0; t < 8; t++)
	{
		int			dim = 1 + t % 6;
		int			self = t % 2 == 0;
		uint32_t	nl = 40000 + t * 1111,
					nr = 30001;
		double		pool[6 * 20];
		double	   *lc,
				   *rc;
		SjVectors	L,
					R;
		SjJoinOptions o;
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		char		why[512],
					err[SJ_ERRMSG_LEN];
		SjEpsJoin  *cj = NULL;
		int			done = 0;
		double		eps;

		g_seed(600 + t);
		for (int i = 0; i < 120; i++)
			pool[i] = 20.0 * sj_test_unit(&g_rng);
		lc = gen(t < 4 ? G_UNIFORM : G_CLUSTERS, nl, dim, pool, 20);
		rc = gen(t < 4 ? G_UNIFORM : G_CLUSTERS, nr, dim, pool, 20);
		L.n = nl;
		L.dim = dim;
		L.coords = lc;
		R.n = nr;
		R.dim = dim;
		R.coords = rc;
		eps = t < 4 ? 100.0 * pow(8.0 / nl, 1.0 / dim) : 0.05;
		memset(&o, 0, sizeof(o));
		o.cpu_threads = 4;
		o.max_batch_pairs = 100000;
		SJ_CHECK(sj_eps_cpu_begin(&L, self ? NULL : &R, eps, &o, &cj, err) == SJ_OK, "%s", err);
		while (!done)
		{
			SjPairBatch b;

			SJ_CHECK(sj_eps_cpu_next(cj, &b, &done, err) == SJ_OK, "%s", err);
			for (size_t i = 0; i < b.count; i++)
				sj_test_pairs_add(&exp, b.left[i], b.right[i], b.value[i]);
		}
		sj_eps_cpu_end(cj);
		SJ_CHECK(run_gpu(&L, self ? NULL : &R, eps, &o, &got, &count, NULL, why), "%s", why);
		SJ_CHECK(compare_pairs(&exp, &got, why), "case %d dim %d self %d: %s", t, dim, self, why);
		free(exp.p);
		free(got.p);
		free(lc);
		free(rc);
	}
}

/* Arguments the engine must refuse, and the iterator's edges. */
SJ_TEST(eps_gpu_errors)
{
	double		c[4] = {0, 1, 2, 3};
	SjVectors	L = {2, 2, c},
				R = {4, 1, c},
				E = {0, 2, NULL};
	SjJoinOptions o;
	SjGpuEpsJoin *j = (SjGpuEpsJoin *) 1;
	char		err[SJ_ERRMSG_LEN];
	SjPairBatch b;
	int			done = 0;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	memset(&o, 0, sizeof(o));
	SJ_CHECK(sjgpu_eps_begin(&L, &R, 1.0, &o, &j, err) == SJ_ERR_INVALID && j == NULL,
			 "dimension mismatch accepted");
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, -1.0, &o, &j, err) == SJ_ERR_INVALID, "negative eps");
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, NAN, &o, &j, err) == SJ_ERR_INVALID, "NaN eps");
	o.gpu_device = 999;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 1.0, &o, &j, err) == SJ_ERR_NO_DEVICE, "device 999");
	o.gpu_device = 0;
	o.gpu_memory_limit = 64;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 1.0, &o, &j, err) == SJ_ERR_DEVICE_NOMEM,
			 "64-byte limit accepted");
	o.gpu_memory_limit = 0;
	sjgpu_eps_end(NULL);

	/* empty side: one empty batch, done */
	SJ_CHECK(sjgpu_eps_begin(&E, &L, 1.0, &o, &j, err) == SJ_OK, "%s", err);
	SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK && done && b.count == 0, "empty");
	SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK && done && b.count == 0,
			 "after done");
	sjgpu_eps_end(j);

	/* end in the middle of a join */
	o.max_batch_pairs = 1;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 10.0, &o, &j, err) == SJ_OK, "%s", err);
	sjgpu_eps_end(j);
	L.n = 4;
	L.dim = 1;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 10.0, &o, &j, err) == SJ_OK, "%s", err);
	SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK && b.count == 1 && !done, "first");
	sjgpu_eps_end(j);
}

/*
 * Time one configuration end to end (begin, every next, end; the consumer
 * only reads each batch's last pair): median of 5 after a warm-up, with the
 * engine's own event-timed phases of the median run.
 */
static void
bench_one(const char *name, const SjVectors *L, const SjVectors *R, double eps,
		  int count_only, size_t batch, int *sj_failed_)
{
	double		wall[5],
				first = 0;
	SjTimings	tms[5],
				tm;
	uint64_t	count = 0;
	SjJoinOptions o;
	int			r,
				med = 0;

	memset(&o, 0, sizeof(o));
	o.count_only = count_only;
	o.max_batch_pairs = batch;
	for (r = -1; r < 5; r++)
	{
		SjGpuEpsJoin *j = NULL;
		char		err[SJ_ERRMSG_LEN];
		int			done = 0;
		double		t0 = now_ms();
		uint64_t	sink = 0;

		count = 0;
		SJ_CHECK(sjgpu_eps_begin(L, R, eps, &o, &j, err) == SJ_OK, "%s", err);
		while (!done)
		{
			SjPairBatch b;

			SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK, "%s", err);
			count += b.count;
			if (!count_only && b.count)
				sink += b.left[b.count - 1] + b.right[b.count - 1];
		}
		sjgpu_eps_timings(j, &tm);
		sjgpu_eps_end(j);
		if (r < 0)
			first = now_ms() - t0;
		else
		{
			wall[r] = now_ms() - t0;
			tms[r] = tm;
		}
		(void) sink;
	}
	for (r = 0; r < 5; r++)
	{
		int			below = 0;

		for (int q = 0; q < 5; q++)
			below += wall[q] < wall[r] || (wall[q] == wall[r] && q < r);
		if (below == 2)
			med = r;
	}
	tm = tms[med];
	printf("BENCH %-34s pairs %11llu  wall %8.2f ms (first %8.2f)  build %7.2f  probe %7.2f  "
		   "transfer %7.2f  batches %llu  peak %.1f MB  [%s]\n", name,
		   (unsigned long long) count, wall[med], first, tm.build_ms, tm.probe_ms,
		   tm.transfer_ms, (unsigned long long) tm.batches, tm.device_bytes / 1048576.0,
		   tm.strategy);
	fflush(stdout);
}

SJ_TEST(eps_gpu_bench)
{
	uint32_t	n = 2000000;
	double	   *c;
	SjVectors	L;
	const char *env = getenv("SJ_EPS_BENCH");

	if (!env || !*env || !sj_test_gpu_usable())
	{
		sj_test_skip("set SJ_EPS_BENCH=1 on a GPU machine");
		return;
	}
	g_seed(2002);
	c = gen(G_UNIFORM, n, 2, NULL, 1);
	L.n = n;
	L.dim = 2;
	L.coords = c;
	bench_one("Syn2D2M eps0.2 count", &L, NULL, 0.2, 1, 0, sj_failed_);
	bench_one("Syn2D2M eps0.2 pairs batch1M", &L, NULL, 0.2, 0, 0, sj_failed_);
	bench_one("Syn2D2M eps0.2 pairs batch4M", &L, NULL, 0.2, 0, 4000000, sj_failed_);
	bench_one("Syn2D2M eps1.0 count", &L, NULL, 1.0, 1, 0, sj_failed_);
	if (sj_eps_cpu_begin)
	{
		SjJoinOptions o;
		SjEpsJoin  *cj = NULL;
		char		err[SJ_ERRMSG_LEN];
		int			done = 0;
		uint64_t	cpu = 0,
					gpu = 0;
		double		t0 = now_ms();
		char		why[512];

		memset(&o, 0, sizeof(o));
		o.count_only = 1;
		o.cpu_threads = 16;
		SJ_CHECK(sj_eps_cpu_begin(&L, NULL, 0.2, &o, &cj, err) == SJ_OK, "%s", err);
		while (!done)
		{
			SjPairBatch b;

			SJ_CHECK(sj_eps_cpu_next(cj, &b, &done, err) == SJ_OK, "%s", err);
			cpu += b.count;
		}
		sj_eps_cpu_end(cj);
		printf("BENCH cpu engine Syn2D2M eps0.2 count: %llu pairs, %.1f ms (16 threads)\n",
			   (unsigned long long) cpu, now_ms() - t0);
		SJ_CHECK(run_gpu(&L, NULL, 0.2, &o, NULL, &gpu, NULL, why), "%s", why);
		SJ_CHECK(cpu == gpu, "cpu %llu gpu %llu", (unsigned long long) cpu,
				 (unsigned long long) gpu);
	}
	free(c);

	/* two-table 1M x 1M 3-D, 6-D self-join, 64-D brute force */
	{
		uint32_t	m = 1000000;
		double	   *a = gen(G_UNIFORM, m, 3, NULL, 1),
				   *b = gen(G_UNIFORM, m, 3, NULL, 1);
		SjVectors	A = {m, 3, a},
					B = {m, 3, b};

		bench_one("two-table 1Mx1M 3D eps1.0 count", &A, &B, 1.0, 1, 0, sj_failed_);
		bench_one("two-table 1Mx1M 3D eps1.0 pairs", &A, &B, 1.0, 0, 0, sj_failed_);
		free(a);
		free(b);
	}
	{
		double	   *a = gen(G_UNIFORM, 2000000, 6, NULL, 1);
		SjVectors	A = {2000000, 6, a};

		bench_one("Syn6D2M eps8 count", &A, NULL, 8.0, 1, 0, sj_failed_);
		free(a);
	}
	{
		double	   *a = gen(G_UNIFORM, 50000, 64, NULL, 1);
		SjVectors	A = {50000, 64, a};

		bench_one("64D 50k self eps180 count", &A, NULL, 180.0, 1, 0, sj_failed_);
		bench_one("64D 50k self eps180 pairs", &A, NULL, 180.0, 0, 0, sj_failed_);
		free(a);
	}
}

/*
 * A process's device start-up: sjgpu_start_device() begins it on a thread
 * of its own and the first join waits for it (what the extension does while
 * a join reads its inputs).  Each mode runs in a new process, where CUDA has
 * not started yet:
 *   cold:  no early start; the join reports the whole start-up;
 *   early: started (twice: the second call does nothing), the inputs made
 *          meanwhile, then the join;
 *   exit:  started, then the process waits for the thread and exits
 *          without a join (an error before the join, in the extension).
 * The joins' pairs and distances are checked against the brute-force
 * oracle; the start-up times are printed, not checked.
 */
int
sj_test_child(const char *mode)
{
	uint32_t	n = 3000;
	double	   *c;
	SjVectors	L;
	SjJoinOptions o;
	SjGpuEpsJoin *j = NULL;
	SjTimings	t;
	GPairs		got = {0},
				want = {0};
	char		err[SJ_ERRMSG_LEN],
				why[512];
	int			done = 0;
	double		t0 = now_ms();

	if (strcmp(mode, "exit") == 0)
	{
		sjgpu_start_device(0);
		sjgpu_start_device_wait();
		return 0;
	}
	if (strcmp(mode, "early") == 0)
	{
		sjgpu_start_device(0);
		sjgpu_start_device(0);
	}
	else if (strcmp(mode, "cold") != 0)
		return 2;
	g_seed(77);
	c = malloc(sizeof(double) * n * 2);
	for (uint32_t i = 0; i < n * 2; i++)
		c[i] = sj_test_unit(&g_rng) * 10.0;
	L = (SjVectors) {n, 2, c};
	memset(&o, 0, sizeof(o));
	if (sjgpu_eps_begin(&L, NULL, 0.3, &o, &j, err) != SJ_OK)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	while (!done)
	{
		SjPairBatch b;

		if (sjgpu_eps_next(j, &b, &done, err) != SJ_OK)
		{
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		for (size_t k = 0; k < b.count; k++)
			sj_test_pairs_add(&got, b.left[k], b.right[k], b.value[k]);
	}
	sjgpu_eps_timings(j, &t);
	sjgpu_eps_end(j);
	sjgpu_start_device_wait();
	sj_test_brute_join(&L, NULL, 0.3, g_dist, &want);
	printf("     %s: device start-up waited %.1f ms, join %.1f ms in all, %zu pairs\n",
		   mode, t.start_ms, now_ms() - t0, got.n);
	if (want.n == 0 || !compare_pairs(&want, &got, why))
	{
		fprintf(stderr, "%s: %s\n", mode, want.n ? why : "the oracle found no pairs");
		return 1;
	}
	free(got.p);
	free(want.p);
	free(c);
	return 0;
}

SJ_TEST(gpu_start_device)
{
	static const char *modes[] = {"cold", "early", "exit"};

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	for (int m = 0; m < 3; m++)
	{
		char		seedarg[32];
		pid_t		pid;
		int			status = 0;

		snprintf(seedarg, sizeof(seedarg), "%llu", sj_test_seed());
		fflush(stdout);
		pid = fork();
		SJ_CHECK(pid >= 0, "fork failed");
		if (pid == 0)
		{
			execl("/proc/self/exe", "engine_test", "--child", modes[m], seedarg, (char *) NULL);
			_exit(127);
		}
		SJ_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
		SJ_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				 "child %s: status 0x%x", modes[m], status);
	}
}

/* ---------------------------------------------------------------------
 * The tensor-core filter (cuda/eps_tc.cu): exact results at every
 * dimensionality and for both metrics, with adversarial data.
 * --------------------------------------------------------------------- */

/* The canonical value of a pair under a metric (sjdist.h), as the SQL does. */
static double
t_value(int metric, const SjVectors *L, uint32_t i, const SjVectors *R, uint32_t j)
{
	double		s = 0.0,
				na = 0.0,
				nb = 0.0;
	int			k;

	if (metric == SJ_METRIC_L2)
	{
		for (k = 0; k < L->dim; k++)
			s = sj_l2_step(s, L->coords[(size_t) k * L->n + i],
						   R->coords[(size_t) k * R->n + j]);
		return sj_l2_finish(s);
	}
	for (k = 0; k < L->dim; k++)
	{
		double		a = L->coords[(size_t) k * L->n + i],
					b = R->coords[(size_t) k * R->n + j];

		s = sj_dot_step(s, a, b);
		na = sj_dot_step(na, a, a);
		nb = sj_dot_step(nb, b, b);
	}
	return sj_cosine_finish(s, na, nb);
}

/* Ascending doubles. */
static int
t_dbl_cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Brute-force oracle under a metric. */
static void
t_oracle(int metric, const SjVectors *L, const SjVectors *R, double eps, GPairs *out)
{
	const SjVectors *B = R ? R : L;

	for (uint32_t i = 0; i < L->n; i++)
		for (uint32_t j = R ? 0 : i + 1; j < B->n; j++)
		{
			double		v = t_value(metric, L, i, B, j);

			if (v <= eps)
				sj_test_pairs_add(out, i, j, v);
		}
}

/*
 * eps for a case: the value at quantile 1 / div of every pair's non-NaN
 * value (so that pairs lie exactly at eps), 0 without any; *npairs: how
 * many pairs the inputs hold.
 */
static double
t_pick_eps(int metric, const SjVectors *L, const SjVectors *R, size_t div,
		   size_t *npairs)
{
	GPairs		all = {0};
	double	   *v;
	double		eps;
	size_t		m = 0;

	t_oracle(metric, L, R, INFINITY, &all);
	v = malloc(sizeof(double) * (all.n + 1));
	for (size_t i = 0; i < all.n; i++)
		if (!isnan(all.p[i].d))
			v[m++] = all.p[i].d;
	qsort(v, m, sizeof(double), t_dbl_cmp);
	eps = m ? v[m / div] : 0.0;
	*npairs = all.n;
	free(v);
	free(all.p);
	return eps;
}

/*
 * Data of one adversarial kind (0 clusters, 1 far from the origin, 2
 * nearly equal rows, 3 mixed magnitudes, 4 zero rows among others).
 */
static double *
t_data(int kind, uint32_t n, int dim)
{
	double	   *c = malloc(sizeof(double) * n * dim);
	int			nc = 1 + n / 8;

	for (uint32_t i = 0; i < n; i++)
	{
		int			cl = (int) (sj_test_splitmix(&g_rng) % nc);
		double		mag = kind == 3 ? pow(10.0, (double) (sj_test_splitmix(&g_rng) % 7) - 3.0) : 1.0;

		for (int k = 0; k < dim; k++)
		{
			double		centre = (double) ((cl * 7919 + k * 104729) % 1000) / 1000.0;
			double		jitter = kind == 2 ? 1e-12 * sj_test_unit(&g_rng) : 0.02 * (sj_test_unit(&g_rng) - 0.5);
			double		x = (centre + jitter) * mag;

			if (kind == 1)
				x += 1.0e6;
			if (kind == 4 && i % 5 == 0)
				x = 0.0;
			c[(size_t) k * n + i] = x;
		}
	}
	return c;
}

/* One case: oracle against the GPU, L self-join and L x R. */
static int
t_case(int metric, int kind, uint32_t n, int dim, char *why)
{
	double	   *lc = t_data(kind, n, dim),
			   *rc = t_data(kind, n / 2 + 1, dim);
	SjVectors	L = {n, dim, lc},
				R = {n / 2 + 1, dim, rc};
	SjJoinOptions o;
	int			ok = 1;

	memset(&o, 0, sizeof(o));
	o.metric = metric;
	o.max_batch_pairs = 777;
	for (int two = 0; two < 2 && ok; two++)
	{
		GPairs		exp = {0},
					got = {0};
		uint64_t	count;
		size_t		npairs;
		double		eps = t_pick_eps(metric, &L, two ? &R : NULL, 50, &npairs);

		if (npairs == 0)
			continue;
		t_oracle(metric, &L, two ? &R : NULL, eps, &exp);
		ok = run_gpu(&L, two ? &R : NULL, eps, &o, &got, &count, NULL, why) &&
			compare_pairs(&exp, &got, why);
		if (!ok)
			snprintf(why + strlen(why), 512 - strlen(why) - 1, " (eps %.17g, %s)",
					 eps, two ? "two tables" : "self");
		free(exp.p);
		free(got.p);
	}
	free(lc);
	free(rc);
	return ok;
}

SJ_TEST(eps_gpu_tensor_filter)
{
	static const int dims[] = {7, 33, 64, 128, 384, 1536};
	char		why[512];

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(4242);
	for (int metric = 0; metric < 2; metric++)
		for (int d = 0; d < 6; d++)
			for (int kind = 0; kind < 5; kind++)
			{
				int			dim = dims[d];
				uint32_t	n = dim >= 384 ? 300 : 900;

				if (metric == SJ_METRIC_L2 && dim < 16 && kind > 0)
					continue;	/* double brute force there */
				why[0] = 0;
				SJ_CHECK(t_case(metric, kind, n, dim, why), "metric %d dim %d kind %d: %s",
						 metric, dim, kind, why);
			}
}

/*
 * Clustered rows for tile pruning: nc clusters in partner pairs (2c and
 * 2c + 1 close together, so that pairs across a tile boundary lie near
 * eps), jitter 0.01 a coordinate, a few zero rows (cosine NaN) and huge
 * rows (cosine: the canonical product may overflow: every pair is a
 * candidate).
 */
static double *
t_pairs_clusters(uint32_t n, int dim, int nc)
{
	double	   *c = malloc(sizeof(double) * n * dim);

	for (uint32_t i = 0; i < n; i++)
	{
		int			cl = (int) (sj_test_splitmix(&g_rng) % nc);
		int			base = cl & ~1;

		for (int k = 0; k < dim; k++)
		{
			double		centre = (double) ((base * 7919 + k * 104729) % 1000) / 1000.0;
			double		x = centre + ((cl & 1) ? 0.004 : 0.0) + 0.01 * (sj_test_unit(&g_rng) - 0.5);

			if (i % 997 == 5)
				x = 0.0;
			if (i % 1499 == 7)
				x *= 1e200;
			c[(size_t) k * n + i] = x;
		}
	}
	return c;
}

/*
 * Tile pruning (cuda/eps_tiles.cu): clustered rows, eps the value of a
 * pair (so that pairs lie exactly at eps), the GPU with and without
 * pruning against the oracle; pruning must skip tile pairs somewhere.
 */
SJ_TEST(eps_gpu_tile_pruning)
{
	static const int dims[] = {33, 128, 384};
	char		why[512];
	double		best_share = 100.0;

	if (!sj_test_gpu_usable() || !sjgpu_eps_set_test_pruning)
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(9090);
	for (int metric = 0; metric < 2; metric++)
		for (int d = 0; d < 3; d++)
			for (int two = 0; two < 2; two++)
			{
				int			dim = dims[d];
				uint32_t	nl = 2600,
							nr = 1900;
				double	   *lc = t_pairs_clusters(nl, dim, 10),
						   *rc = t_pairs_clusters(nr, dim, 10);
				SjVectors	L = {nl, dim, lc},
							R = {nr, dim, rc};
				const SjVectors *Rp = two ? &R : NULL;
				GPairs		exp = {0};
				SjJoinOptions o;
				size_t		npairs;

				/* within clusters and partners */
				double		eps = t_pick_eps(metric, &L, Rp, 40, &npairs);

				t_oracle(metric, &L, Rp, eps, &exp);
				memset(&o, 0, sizeof(o));
				o.metric = metric;
				o.max_batch_pairs = 5000;
				for (int prune = 0; prune < 2; prune++)
				{
					GPairs		got = {0};
					SjTimings	tm;
					uint64_t	count;
					const char *share;
					int			ok;

					memset(&tm, 0, sizeof(tm));
					sjgpu_eps_set_test_pruning(prune);
					why[0] = 0;
					ok = run_gpu(&L, Rp, eps, &o, &got, &count, &tm, why) &&
						compare_pairs(&exp, &got, why);
					share = strstr(tm.strategy, ", tiles ");
					if (prune && share)
						best_share = fmin(best_share, atof(share + 8));
					SJ_CHECK(ok, "metric %d dim %d %s prune %d (%s): %s (eps %.17g)", metric,
							 dim, two ? "two tables" : "self", prune, tm.strategy, why, eps);
					free(got.p);
				}
				sjgpu_eps_set_test_pruning(1);
				free(exp.p);
				free(lc);
				free(rc);
			}
	SJ_CHECK(best_share < 50.0, "pruning never skipped half the tile pairs (best %.1f%%)",
			 best_share);
}

/* Count-only joins and a small memory limit (chunks, cut segments). */
SJ_TEST(eps_gpu_tensor_chunks)
{
	char		why[512];
	uint32_t	n = 3000;
	int			dim = 96;
	double	   *c;
	SjVectors	L;
	SjJoinOptions o;
	GPairs		exp = {0},
				got = {0};
	uint64_t	count,
				total;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(777);
	c = t_data(0, n, dim);
	L.n = n;
	L.dim = dim;
	L.coords = c;
	for (int metric = 0; metric < 2; metric++)
	{
		double		eps = metric ? 0.0005 : 0.12;

		memset(&o, 0, sizeof(o));
		o.metric = metric;
		o.gpu_memory_limit = 12 << 20;
		o.max_batch_pairs = 1000;
		exp.n = got.n = 0;
		t_oracle(metric, &L, NULL, eps, &exp);
		SJ_CHECK(exp.n > 1000, "metric %d: only %zu pairs", metric, exp.n);
		SJ_CHECK(run_gpu(&L, NULL, eps, &o, &got, &count, NULL, why), "metric %d: %s", metric, why);
		SJ_CHECK(compare_pairs(&exp, &got, why), "metric %d: %s", metric, why);
		o.count_only = 1;
		SJ_CHECK(run_gpu(&L, NULL, eps, &o, NULL, &total, NULL, why), "count: %s", why);
		SJ_CHECK(total == exp.n, "metric %d: count %llu, expected %zu", metric,
				 (unsigned long long) total, exp.n);
	}
	free(exp.p);
	free(got.p);
	free(c);
}

/* Clustered rows: ncentres uniform centres in [0,1]^dim, copies jittered by +-jit. */
static double *
t_clusters(uint32_t n, int dim, uint32_t ncentres, double jit)
{
	double	   *c = malloc(sizeof(double) * n * dim);
	double	   *ctr = malloc(sizeof(double) * ncentres * dim);

	for (size_t i = 0; i < (size_t) ncentres * dim; i++)
		ctr[i] = sj_test_unit(&g_rng);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	cl = i % ncentres;

		for (int k = 0; k < dim; k++)
			c[(size_t) k * n + i] = ctr[(size_t) cl * dim + k] + jit * (2.0 * sj_test_unit(&g_rng) - 1.0);
	}
	free(ctr);
	return c;
}

/* GPU count of a self-join under a metric: ms of build and probe, pairs. */
static void
t_bench(const char *name, const SjVectors *L, double eps, int metric, int cpu_too,
		int *sj_failed_)
{
	SjJoinOptions o;
	SjTimings	tm;
	uint64_t	gpu = 0;
	char		why[512];
	double		flops,
				best = INFINITY;

	int			devices[8],
				ndevices = sj_test_bench_devices(devices, 8);

	memset(&o, 0, sizeof(o));
	o.count_only = 1;
	o.metric = metric;
	if (ndevices > 1)
	{
		/*
		 * SJ_BENCH_DEVICES=0,1: that list, the engine deciding whether the
		 * join spreads over it (SJ_BENCH_SPREAD=1: every join spreads)
		 */
		o.gpu_ndevices = ndevices;
		o.gpu_devices = devices;
		if (sjgpu_eps_set_test_spread && getenv("SJ_BENCH_SPREAD"))
			sjgpu_eps_set_test_spread(1);
	}
	else if (ndevices == 1)
		o.gpu_device = devices[0];
	/* SJ_EPS_BENCH_STEPS=1: the preparation's steps (each then waits for the device) */
	int			steps_on = getenv("SJ_EPS_BENCH_STEPS") && sjgpu_eps_test_prep_steps;

	if (steps_on)
		sjgpu_eps_test_prep_steps(1, NULL);
	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = now_ms(),
					alloc;

		if (sjgpu_test_alloc_ms)
			(void) sjgpu_test_alloc_ms(1);
		SJ_CHECK(run_gpu(L, NULL, eps, &o, NULL, &gpu, &tm, why), "%s: %s", name, why);
		t0 = now_ms() - t0;
		alloc = sjgpu_test_alloc_ms ? sjgpu_test_alloc_ms(0) : 0.0;
		/*
		 * With SJ_BENCH_DEVICES (0 or 0,1 alike) the engine's wall time:
		 * spread, build and probe are sums over the devices.
		 */
		if (rep > 0 && (ndevices > 0 ? t0 : tm.build_ms + tm.probe_ms) < best)
			best = ndevices > 0 ? t0 : tm.build_ms + tm.probe_ms;
		printf("BENCH gpu %s: %llu pairs, wall %.1f ms, build %.1f probe %.1f (filter %.1f ms, %.0f TFLOP/s) transfer %.1f ms, this thread's cudaMalloc/cudaFree %.1f ms (an eps join's frees off it) [%s]%s%s\n",
			   name, (unsigned long long) gpu, t0, tm.build_ms, tm.probe_ms, tm.filter_ms,
			   tm.filter_ms > 0 ? tm.filter_pairs * 2.0 * ((L->dim + 31) / 32 * 32) / tm.filter_ms / 1e9 : 0.0,
			   tm.transfer_ms, alloc, tm.strategy, tm.devices[0] ? " devices: " : "", tm.devices);
		if (strstr(tm.devices, "units") && sjgpu_multi_test_trace)
		{
			char		trace[1024];

			sjgpu_multi_test_trace(trace, sizeof(trace));
			printf("BENCH trace: %s\n", trace);
		}
		if (steps_on)
		{
			double		ms[7];

			/* sums over the devices of a spread join */
			sjgpu_eps_test_prep_steps(1, ms);
			printf("BENCH prep steps (ms): norms %.1f, mean+max %.1f, seeds %.1f, assign+sort %.1f, "
				   "reorder %.1f, fp16 %.1f, tile bounds %.1f\n",
				   ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], ms[6]);
		}
	}
	if (sjgpu_eps_set_test_spread)
		sjgpu_eps_set_test_spread(0);
	if (steps_on)
		sjgpu_eps_test_prep_steps(0, NULL);
	flops = (double) L->n * L->n * ((L->dim + 31) / 32 * 32);
	printf("BENCH gpu %s: best engine %.1f ms%s on %d device(s)%s; all-pairs filter equivalent %.1f TFLOP/s\n",
		   name, best, ndevices > 0 ? " (wall)" : " (build + probe)",
		   strstr(tm.devices, "units") ? ndevices : 1,
		   ndevices > 1 && !strstr(tm.devices, "units") ? " (not spread)" : "",
		   flops / best / 1e9);
	if (cpu_too && sj_eps_cpu_begin)
	{
		SjEpsJoin  *cj = NULL;
		char		err[SJ_ERRMSG_LEN];
		int			done = 0;
		uint64_t	cpu = 0;
		double		t0 = now_ms();

		o.cpu_threads = 16;
		SJ_CHECK(sj_eps_cpu_begin(L, NULL, eps, &o, &cj, err) == SJ_OK, "%s", err);
		while (!done)
		{
			SjPairBatch b;

			SJ_CHECK(sj_eps_cpu_next(cj, &b, &done, err) == SJ_OK, "%s", err);
			cpu += b.count;
		}
		sj_eps_cpu_timings(cj, &tm);
		sj_eps_cpu_end(cj);
		printf("BENCH cpu %s: %llu pairs, %.1f ms (16 threads) [%s]\n", name,
			   (unsigned long long) cpu, now_ms() - t0, tm.strategy);
		SJ_CHECK(cpu == gpu, "%s: cpu %llu gpu %llu", name, (unsigned long long) cpu,
				 (unsigned long long) gpu);
	}
}

/* High-dimensional joins (issue suite a-d, generated here), SJ_EPS_BENCH=1. */
SJ_TEST(eps_gpu_hd_bench)
{
	const char *env = getenv("SJ_EPS_BENCH");
	const char *cpu_env = getenv("SJ_EPS_BENCH_CPU");
	static const struct
	{
		const char *name;
		uint32_t	n;
		int			dim;
		uint32_t	centres;
		double		jit;
		double		eps;
		int			metric;
		int			cpu;
	}			cases[] = {
		{"(b) 1M x 96-D clustered L2 eps0.09", 1000000, 96, 100000, 0.01, 0.09, 0, 1},
		{"(a) 1M x 128-D clustered L2 eps0.1", 1000000, 128, 100000, 0.01, 0.1, 0, 1},
		{"(c') 200K x 384-D clustered cosine eps0.0003", 200000, 384, 20000, 0.01, 0.0003, 1, 1},
		{"(c) 1M x 384-D clustered cosine eps0.0003", 1000000, 384, 100000, 0.01, 0.0003, 1, 0},
		{"(d) 200K x 1536-D clustered cosine eps0.0003", 200000, 1536, 20000, 0.01, 0.0003, 1, 1},
		{"200K x 128-D uniform L2 brute eps1.2", 200000, 128, 200000, 0.0, 1.2, 0, 1},
	};

	if (!env || !*env || !sj_test_gpu_usable())
	{
		sj_test_skip("set SJ_EPS_BENCH=1 on a GPU machine");
		return;
	}
	g_seed(1536);
	/* SJ_EPS_BENCH_PRUNE=0: the tensor filter computes every tile pair */
	if (getenv("SJ_EPS_BENCH_PRUNE") && sjgpu_eps_set_test_pruning)
		sjgpu_eps_set_test_pruning(strcmp(getenv("SJ_EPS_BENCH_PRUNE"), "0") != 0);
	/* SJ_BENCH_UPLOAD_CHUNK=-1: uploads not staged (pageable copies) */
	if (getenv("SJ_BENCH_UPLOAD_CHUNK") && sjgpu_set_test_upload_chunk)
		sjgpu_set_test_upload_chunk(atol(getenv("SJ_BENCH_UPLOAD_CHUNK")));
	/* SJ_BENCH_STAGE_THREADS=8: staged copies on up to 8 threads */
	if (getenv("SJ_BENCH_STAGE_THREADS") && sjgpu_set_test_stage_threads)
		sjgpu_set_test_stage_threads(atoi(getenv("SJ_BENCH_STAGE_THREADS")));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		/* SJ_EPS_BENCH=1 runs every case, another value the cases it names */
		if (strcmp(env, "1") != 0 && !strstr(cases[c].name, env))
			continue;

		double	   *x = t_clusters(cases[c].n, cases[c].dim, cases[c].centres, cases[c].jit);
		SjVectors	L = {cases[c].n, cases[c].dim, x};

		/* SJ_EPS_BENCH_CPU=0: the GPU alone (the CPU engine's times are known) */
		t_bench(cases[c].name, &L, cases[c].eps, cases[c].metric,
				cases[c].cpu && !(cpu_env && strcmp(cpu_env, "0") == 0), sj_failed_);
		free(x);
	}
	if (sjgpu_set_test_upload_chunk)
		sjgpu_set_test_upload_chunk(0);
	if (sjgpu_set_test_stage_threads)
		sjgpu_set_test_stage_threads(0);
}

/*
 * Columns given as floats (SjVectors.fcoords, coords NULL: real[] vectors
 * on the GPU) give the pairs and distances of the same values given as
 * doubles, bit for bit: the grid (3-D), the tensor-core filter (96-D,
 * 384-D, both metrics), chunks and cut segments under a small memory limit
 * (uploads of rows [first, first + n) of a side), staged uploads in small
 * pieces, joins spread over two shares of device 0 (the shared upload of
 * floats, with peer copies and from the host), and a float side joined
 * with a double one.  The same floats as row-major pieces (SjVectors.pieces:
 * a parallel scan's parts, transposed on the device; uneven pieces, one of
 * a single row, one empty) give them too.
 */
SJ_TEST(eps_gpu_real_columns)
{
	static const struct
	{
		uint32_t	n;
		int			dim;
		int			metric;
		double		eps;
		size_t		limit;		/* gpu_memory_limit, 0: the default */
		int			shares;		/* devices of the join: 1, or 2 of device 0 */
		long		chunk;		/* staged uploads' piece (test hook), 0: default */
		int			peer;		/* spread: copies between devices (else from the host) */
	}			cases[] = {
		{20000, 3, 0, 0.01, 0, 1, 0, 1},
		{20000, 3, 0, 0.01, 0, 2, 0, 1},
		{3000, 96, 0, 0.12, 12 << 20, 1, 0, 1},
		{3000, 96, 1, 0.0005, 12 << 20, 1, 4099, 1},
		{3000, 96, 1, 0.0005, 0, 2, 0, 1},
		{3000, 96, 0, 0.12, 0, 2, 0, 0},
		{4001, 384, 1, 0.0005, 0, 1, 0, 1},
		{4001, 384, 0, 0.2, 24 << 20, 2, 0, 1},
	};
	static const int zero2[2] = {0, 0};
	char		why[512];

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	g_seed(4242);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		uint32_t	n = cases[c].n,
					nr = n / 2 + 7;
		int			dim = cases[c].dim;
		double	   *lc = t_clusters(n, dim, n / 10 + 1, 0.01),
				   *rc = malloc(sizeof(double) * nr * dim);
		float	   *lf = malloc(sizeof(float) * n * dim),
				   *rf = malloc(sizeof(float) * nr * dim);
		float	   *lrow = malloc(sizeof(float) * n * dim),
				   *rrow = malloc(sizeof(float) * nr * dim);
		SjRowPiece	lp[4],
					rp[4];
		SjVectors	L = {n, dim, lc, NULL},
					R = {nr, dim, rc, NULL},
					Lf = {n, dim, NULL, lf},
					Rf = {nr, dim, NULL, rf},
					Lp = {n, dim, NULL, NULL, 4, lp},
					Rp = {nr, dim, NULL, NULL, 4, rp};
		SjJoinOptions o;

		/* the right side: every other left row, jittered (pairs across the sides) */
		for (int k = 0; k < dim; k++)
			for (uint32_t i = 0; i < nr; i++)
				rc[(size_t) k * nr + i] = lc[(size_t) k * n + (2 * i) % n] +
					0.002 * (2.0 * sj_test_unit(&g_rng) - 1.0);
		for (size_t i = 0; i < (size_t) n * dim; i++)
			lc[i] = (double) (lf[i] = (float) lc[i]);
		for (size_t i = 0; i < (size_t) nr * dim; i++)
			rc[i] = (double) (rf[i] = (float) rc[i]);
		/* row-major copies in four pieces: a third, one row, none, the rest */
		for (int k = 0; k < dim; k++)
		{
			for (uint32_t i = 0; i < n; i++)
				lrow[(size_t) i * dim + k] = lf[(size_t) k * n + i];
			for (uint32_t i = 0; i < nr; i++)
				rrow[(size_t) i * dim + k] = rf[(size_t) k * nr + i];
		}
		sj_test_row_pieces(lp, lrow, n, dim);
		sj_test_row_pieces(rp, rrow, nr, dim);
		memset(&o, 0, sizeof(o));
		o.metric = cases[c].metric;
		o.gpu_memory_limit = cases[c].limit;
		o.max_batch_pairs = 5000;
		if (cases[c].shares > 1)
		{
			o.gpu_ndevices = 2;
			o.gpu_devices = zero2;
		}
		for (int form = 0; form < 3; form++)
		{
			/* 0: self-join; 1: floats x floats; 2: floats x doubles */
			const SjVectors *rd = form ? &R : NULL,
					   *rfl = form == 1 ? &Rf : form == 2 ? &R : NULL;
			GPairs		exp = {0},
						got = {0};
			uint64_t	count,
						fcount;

			SJ_CHECK(run_gpu(&L, rd, cases[c].eps, &o, &exp, &count, NULL, why),
					 "case %zu form %d, doubles: %s", c, form, why);
			SJ_CHECK(exp.n > 100, "case %zu form %d: only %zu pairs", c, form, exp.n);
			for (int rep = 0; rep < 2; rep++)
			{
				/* 0: float columns; 1: the same floats as row pieces (a float right side's too) */
				const SjVectors *lv = rep ? &Lp : &Lf,
						   *rv = rep && form == 1 ? &Rp : rfl;
				const char *what = rep ? "row pieces" : "floats";

				if (cases[c].shares > 1 && sjgpu_eps_set_test_spread)
					sjgpu_eps_set_test_spread(1);
				if (!cases[c].peer && sjgpu_set_test_peer_copies)
					sjgpu_set_test_peer_copies(0);
				if (cases[c].chunk && sjgpu_set_test_upload_chunk)
					sjgpu_set_test_upload_chunk(cases[c].chunk);
				SJ_CHECK(run_gpu(lv, rv, cases[c].eps, &o, &got, &fcount, NULL, why),
						 "case %zu form %d, %s: %s", c, form, what, why);
				sj_test_reset_hooks();
				SJ_CHECK(compare_pairs(&exp, &got, why), "case %zu form %d, %s: %s",
						 c, form, what, why);
				free(got.p);
				memset(&got, 0, sizeof(got));
			}
			free(exp.p);
		}
		free(lc);
		free(rc);
		free(lf);
		free(rf);
		free(lrow);
		free(rrow);
	}
}
