/*
 * test_multi_gpu.c
 *		Tests of one join on several devices (cuda/sjgpu_multi.cu).
 *
 * A device may appear more than once in a device list, so every test runs
 * the multi-device path on one GPU with the lists {0,0} and {0,0,0}; where
 * two or more devices are visible, {0,1} and {1,0,1} too, and {3,2,1,0}
 * where four are (else a "skipped" note says so).  The one-device join
 * (gpu_ndevices = 0) is the oracle: the same pairs, distances bit for bit,
 * the same counts.  Every test skips
 * where no GPU is usable.  eps and Jaccard joins spread with shared units
 * (every device prepares the whole join, the devices claim its segments or
 * blocks of probes); the test hooks make every join spread, however small.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sjdist.h"
#include "sjgpu.h"
#include "sjtest.h"


/* The strategy and devices lines of the last spread join of m_case. */
static char m_strategy[128];
static char m_devices[256];

/* Every eps and Jaccard join spreads over the devices named (test hooks). */
static void
m_spread(int on)
{
	if (sjgpu_eps_set_test_spread)
		sjgpu_eps_set_test_spread(on);
	if (sjgpu_jaccard_set_test_spread)
		sjgpu_jaccard_set_test_spread(on);
}

typedef struct MPair
{
	uint32_t	l;
	uint32_t	r;
	double		d;
} MPair;

typedef struct MPairs
{
	MPair	   *p;
	size_t		n;
	size_t		alloc;
	uint64_t	count;
} MPairs;

static uint64_t m_rng;

/* splitmix64 */
static uint64_t
m_next(void)
{
	uint64_t	z = (m_rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static double
m_unit(void)
{
	return (m_next() >> 11) * (1.0 / 9007199254740992.0);
}

/* n rows (SoA) around ncentres centres in [0,1]^dim, jittered by +-jit. */
static double *
m_data(uint32_t n, int dim, uint32_t ncentres, double jit)
{
	double	   *centres = malloc(sizeof(double) * ncentres * dim);
	double	   *c = malloc(sizeof(double) * ((size_t) n * dim + 1));

	for (uint32_t i = 0; i < ncentres * (uint32_t) dim; i++)
		centres[i] = m_unit();
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	z = (uint32_t) (m_next() % ncentres);

		for (int k = 0; k < dim; k++)
			c[(size_t) k * n + i] = centres[(size_t) z * dim + k] + jit * (2 * m_unit() - 1);
	}
	free(centres);
	return c;
}

static int
m_cmp(const void *a, const void *b)
{
	const MPair *x = a,
			   *y = b;

	if (x->l != y->l)
		return x->l < y->l ? -1 : 1;
	if (x->r != y->r)
		return x->r < y->r ? -1 : 1;
	return 0;
}

/* Run an eps join to exhaustion into out (sorted); 0 and why on failure. */
static int
m_run(const SjVectors *L, const SjVectors *R, double eps, const SjJoinOptions *o,
	  MPairs *out, SjTimings *tm, char *why)
{
	SjGpuEpsJoin *j = NULL;
	char		err[SJ_ERRMSG_LEN] = "";
	SjStatus	st;
	int			done = 0;

	memset(out, 0, sizeof(*out));
	st = sjgpu_eps_begin(L, R, eps, o, &j, err);
	if (st != SJ_OK)
	{
		snprintf(why, 512, "begin: status %d: %s", st, err);
		return 0;
	}
	while (!done)
	{
		SjPairBatch b;

		st = sjgpu_eps_next(j, &b, &done, err);
		if (st != SJ_OK)
		{
			snprintf(why, 512, "next: status %d: %s", st, err);
			sjgpu_eps_end(j);
			return 0;
		}
		out->count += b.count;
		if (o->count_only || b.count == 0)
			continue;
		if (o->max_batch_pairs && b.count > o->max_batch_pairs)
		{
			snprintf(why, 512, "batch of %zu pairs over %zu", b.count, o->max_batch_pairs);
			sjgpu_eps_end(j);
			return 0;
		}
		if (out->n + b.count > out->alloc)
		{
			out->alloc = (out->n + b.count) * 2;
			out->p = realloc(out->p, out->alloc * sizeof(MPair));
		}
		for (size_t i = 0; i < b.count; i++)
		{
			if (b.left[i] >= L->n || b.right[i] >= (R ? R->n : L->n) ||
				(!R && b.left[i] >= b.right[i]))
			{
				snprintf(why, 512, "bad pair (%u, %u)", b.left[i], b.right[i]);
				sjgpu_eps_end(j);
				return 0;
			}
			out->p[out->n].l = b.left[i];
			out->p[out->n].r = b.right[i];
			out->p[out->n].d = b.value[i];
			out->n++;
		}
	}
	if (tm)
		sjgpu_eps_timings(j, tm);
	sjgpu_eps_end(j);
	qsort(out->p, out->n, sizeof(MPair), m_cmp);
	return 1;
}

/* The same pairs, distances bit for bit, and the same count. */
static int
m_same(const MPairs *a, const MPairs *b, char *why)
{
	if (a->count != b->count || a->n != b->n)
	{
		snprintf(why, 512, "one device: %llu pairs, several: %llu",
				 (unsigned long long) a->count, (unsigned long long) b->count);
		return 0;
	}
	for (size_t i = 0; i < a->n; i++)
		if (m_cmp(&a->p[i], &b->p[i]) != 0 || memcmp(&a->p[i].d, &b->p[i].d, sizeof(double)) != 0)
		{
			snprintf(why, 512, "pair %zu: (%u,%u,%.17g) against (%u,%u,%.17g)", i,
					 a->p[i].l, a->p[i].r, a->p[i].d, b->p[i].l, b->p[i].r, b->p[i].d);
			return 0;
		}
	return 1;
}

/* At most 5 device lists of at most 4 devices each (m_lists). */
enum
{
	kMaxLists = 5,
	kMaxListLen = 4
};

/*
 * The device lists to test: one GPU repeated, real pairs where there are
 * two, and four devices where there are four (the driver plans for any
 * number).
 */
static int
m_lists(int lists[kMaxLists][kMaxListLen], int sizes[kMaxLists])
{
	int			n = 0,
				found = 0;
	char		err[SJ_ERRMSG_LEN];

	(void) sjgpu_device_count(&found, err);
	lists[n][0] = 0;
	lists[n][1] = 0;
	sizes[n++] = 2;
	lists[n][0] = 0;
	lists[n][1] = 0;
	lists[n][2] = 0;
	sizes[n++] = 3;
	if (found >= 2)
	{
		lists[n][0] = 0;
		lists[n][1] = 1;
		sizes[n++] = 2;
		lists[n][0] = 1;
		lists[n][1] = 0;
		lists[n][2] = 1;
		sizes[n++] = 3;
		if (found >= 4)
		{
			for (int d = 0; d < 4; d++)
				lists[n][d] = 3 - d;
			sizes[n++] = 4;
		}
	}
	else
	{
		static int	said = 0;

		if (!said++)
			printf("     only one GPU visible: lists of two real devices skipped; {0,0} and {0,0,0} run\n");
	}
	{
		static int	shown = 0;

		if (!shown++)
		{
			printf("     device lists:");
			for (int k = 0; k < n; k++)
				for (int d = 0; d < sizes[k]; d++)
					printf("%s%d", d == 0 ? " " : ",", lists[k][d]);
			printf("\n");
		}
	}
	return n;
}

/* One case: the one-device join against every device list. */
static int
m_case(uint32_t nl, uint32_t nr, int dim, int self, int metric, int strategy,
	   int count_only, size_t max_batch, size_t mem, char *why)
{
	double	   *lc = m_data(nl, dim, 20, 0.02),
			   *rc = m_data(nr, dim, 20, 0.02);
	SjVectors	L = {nl, dim, lc},
				R = {nr, dim, rc};
	double		eps = metric == SJ_METRIC_COSINE ? 0.001 : 0.03 * sqrt((double) dim);
	SjJoinOptions o;
	MPairs		one,
				many;
	int			lists[kMaxLists][kMaxListLen],
				sizes[kMaxLists],
				nlists = m_lists(lists, sizes),
				ok;

	memset(&o, 0, sizeof(o));
	o.metric = metric;
	o.count_only = count_only;
	o.max_batch_pairs = max_batch;
	o.gpu_memory_limit = mem;
	if (sjgpu_eps_set_test_strategy)
		sjgpu_eps_set_test_strategy(strategy);
	m_spread(1);
	ok = m_run(&L, self ? NULL : &R, eps, &o, &one, NULL, why);
	for (int k = 0; k < nlists && ok; k++)
	{
		SjTimings	tm;

		o.gpu_ndevices = sizes[k];
		o.gpu_devices = lists[k];
		ok = m_run(&L, self ? NULL : &R, eps, &o, &many, &tm, why) && m_same(&one, &many, why);
		if (ok && nl > 0 && (self ? nl > 1 : nr > 0) && strstr(tm.devices, "gpu") == NULL)
		{
			snprintf(why, 512, "no devices in the timings: \"%s\"", tm.devices);
			ok = 0;
		}
		if (ok)
		{
			snprintf(m_strategy, sizeof(m_strategy), "%s", tm.strategy);
			snprintf(m_devices, sizeof(m_devices), "%s", tm.devices);
		}
		if (!ok)
			snprintf(why + strlen(why), 512 - strlen(why) - 1, " [list of %d starting %d]",
					 sizes[k], lists[k][0]);
		free(many.p);
		o.gpu_ndevices = 0;
		o.gpu_devices = NULL;
	}
	if (sjgpu_eps_set_test_strategy)
		sjgpu_eps_set_test_strategy(0);
	m_spread(0);
	free(one.p);
	free(lc);
	free(rc);
	return ok;
}

SJ_TEST(multi_gpu_eps)
{
	static const int dims[] = {2, 3, 8, 64, 128, 384};
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6d756c7469ULL;
	for (int d = 0; d < 6; d++)
		for (int self = 0; self < 2; self++)
			for (int strategy = 0; strategy < 3; strategy++)
				for (int count_only = 0; count_only < 2; count_only++)
				{
					uint32_t	nl = dims[d] >= 128 ? 700 : 2500;

					SJ_CHECK(m_case(nl, nl / 3 + 1, dims[d], self, SJ_METRIC_L2, strategy,
									count_only, 0, 0, why),
							 "dim %d self %d strategy %d count %d: %s", dims[d], self,
							 strategy, count_only, why);
				}
}

SJ_TEST(multi_gpu_eps_cosine)
{
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x636f73ULL;
	for (int self = 0; self < 2; self++)
		SJ_CHECK(m_case(1500, 400, 96, self, SJ_METRIC_COSINE, 0, 0, 0, 0, why),
				 "self %d: %s", self, why);
}

/* Small batches and a small memory limit: chunks inside the pieces. */
SJ_TEST(multi_gpu_eps_batches)
{
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6261ULL;
	SJ_CHECK(m_case(4000, 3000, 2, 1, SJ_METRIC_L2, 0, 0, 97, 0, why), "2-d batches: %s", why);
	SJ_CHECK(m_case(3000, 2000, 96, 0, SJ_METRIC_L2, 0, 0, 1000, 12 << 20, why),
			 "96-d memory: %s", why);
	SJ_CHECK(m_case(3000, 2000, 96, 1, SJ_METRIC_L2, 0, 1, 0, 12 << 20, why),
			 "96-d memory count: %s", why);
}

/* Fewer rows than pieces, empty sides, one row. */
SJ_TEST(multi_gpu_eps_tiny)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 7};
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x74ULL;
	for (int a = 0; a < 5; a++)
		for (int b = 0; b < 5; b++)
			for (int self = 0; self < 2; self++)
				SJ_CHECK(m_case(sizes[a], sizes[b], 3, self, SJ_METRIC_L2, 0, 0, 0, 0, why),
						 "nl %u nr %u self %d: %s", sizes[a], sizes[b], self, why);
}

/* Ended early, mid-join: every worker stops and frees; then a bad ordinal. */
SJ_TEST(multi_gpu_eps_early_end)
{
	int			list[2] = {0, 0};
	int			found = 0;
	uint32_t	n = 20000;
	double	   *c;
	SjVectors	L;
	SjJoinOptions o;
	SjGpuEpsJoin *j = NULL;
	SjPairBatch b;
	int			done = 0;
	char		err[SJ_ERRMSG_LEN] = "";
	SjGpuDeviceInfo before,
				after;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x65ULL;
	c = m_data(n, 2, 10, 0.05);
	L.n = n;
	L.dim = 2;
	L.coords = c;
	memset(&o, 0, sizeof(o));
	o.max_batch_pairs = 1000;
	o.gpu_ndevices = 2;
	o.gpu_devices = list;
	m_spread(1);
	SJ_CHECK(sjgpu_device_info(0, &before, err) == SJ_OK, "%s", err);
	for (int round = 0; round < 3; round++)
	{
		SJ_CHECK(sjgpu_eps_begin(&L, NULL, 0.05, &o, &j, err) == SJ_OK, "begin: %s", err);
		for (int k = 0; k < 3 && !done; k++)
			SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK, "next: %s", err);
		sjgpu_eps_end(j);
	}
	SJ_CHECK(sjgpu_device_info(0, &after, err) == SJ_OK, "%s", err);
	SJ_CHECK(after.free_memory + (64 << 20) >= before.free_memory,
			 "device memory not released: %llu free before, %llu after",
			 (unsigned long long) before.free_memory, (unsigned long long) after.free_memory);

	(void) sjgpu_device_count(&found, err);
	list[1] = found;
	j = NULL;
	SJ_CHECK(sjgpu_eps_begin(&L, NULL, 0.05, &o, &j, err) == SJ_ERR_NO_DEVICE && j == NULL,
			 "ordinal %d accepted", found);
	m_spread(0);
	free(c);
}

/*
 * n sets over a universe of u tokens, each a jittered copy of one of k
 * bases, every tenth the same as the one before.
 */
static void
m_sets(uint32_t n, uint32_t u, uint32_t k, SjSets *s, uint64_t **off, uint32_t **tok)
{
	unsigned char *mark = malloc(u);
	size_t		cap = (size_t) n * 40 + 1;

	*off = malloc(sizeof(uint64_t) * (n + 1));
	*tok = malloc(sizeof(uint32_t) * cap);
	(*off)[0] = 0;
	for (uint32_t i = 0; i < n; i++)
	{
		uint64_t	base = (m_next() % k) * 7919;
		size_t		at = (*off)[i];

		if (i % 10 == 9)
		{
			/* every tenth set a copy of the one before: groups of identical sets */
			size_t		len = (*off)[i] - (*off)[i - 1];

			memcpy(*tok + at, *tok + (*off)[i - 1], len * sizeof(uint32_t));
			(*off)[i + 1] = at + len;
			continue;
		}
		memset(mark, 0, u);
		for (int t = 0; t < 30; t++)
			if (m_next() % 10 < 8)
				mark[(base + (uint64_t) t * 31) % u] = 1;
		for (int t = 0; t < 4; t++)
			mark[m_next() % u] = 1;
		for (uint32_t t = 0; t < u && at < cap; t++)
			if (mark[t])
				(*tok)[at++] = t;
		(*off)[i + 1] = at;
	}
	s->n = n;
	s->universe = u;
	s->offsets = *off;
	s->tokens = *tok;
	free(mark);
}

/* Run a jaccard join to exhaustion into out (sorted). */
static int
m_run_jaccard(const SjSets *L, const SjSets *R, double t, const SjJoinOptions *o,
			  MPairs *out, SjTimings *tm, char *why)
{
	SjGpuJaccardJoin *j = NULL;
	char		err[SJ_ERRMSG_LEN] = "";
	int			done = 0;

	memset(out, 0, sizeof(*out));
	if (sjgpu_jaccard_begin(L, R, t, o, &j, err) != SJ_OK)
	{
		snprintf(why, 512, "begin: %s", err);
		return 0;
	}
	while (!done)
	{
		SjPairBatch b;

		if (sjgpu_jaccard_next(j, &b, &done, err) != SJ_OK)
		{
			snprintf(why, 512, "next: %s", err);
			sjgpu_jaccard_end(j);
			return 0;
		}
		out->count += b.count;
		if (o->count_only || b.count == 0)
			continue;
		if (out->n + b.count > out->alloc)
		{
			out->alloc = (out->n + b.count) * 2;
			out->p = realloc(out->p, out->alloc * sizeof(MPair));
		}
		for (size_t i = 0; i < b.count; i++)
		{
			if (b.left[i] >= L->n || b.right[i] >= (R ? R->n : L->n) ||
				(!R && b.left[i] >= b.right[i]))
			{
				snprintf(why, 512, "bad pair (%u, %u)", b.left[i], b.right[i]);
				sjgpu_jaccard_end(j);
				return 0;
			}
			out->p[out->n].l = b.left[i];
			out->p[out->n].r = b.right[i];
			out->p[out->n].d = b.value[i];
			out->n++;
		}
	}
	if (tm)
		sjgpu_jaccard_timings(j, tm);
	sjgpu_jaccard_end(j);
	qsort(out->p, out->n, sizeof(MPair), m_cmp);
	return 1;
}

/*
 * Jaccard: the one-device join against every device list, on nl and nr
 * sets over a universe of u tokens around k bases (m_sets); strat gets
 * the strategy of the last run.
 */
static int
m_jaccard_case(uint32_t nl, uint32_t nr, uint32_t u, uint32_t k, int self, double t,
			   int count_only, size_t max_batch, char *strat, char *why)
{
	SjSets		L,
				R;
	uint64_t   *lo,
			   *ro;
	uint32_t   *lt,
			   *rt;
	SjJoinOptions o;
	MPairs		one,
				many;
	int			lists[kMaxLists][kMaxListLen],
				sizes[kMaxLists],
				nlists = m_lists(lists, sizes),
				ok;

	m_sets(nl, u, k, &L, &lo, &lt);
	m_sets(nr, u, k, &R, &ro, &rt);
	memset(&o, 0, sizeof(o));
	o.cpu_threads = 2;
	o.count_only = count_only;
	o.max_batch_pairs = max_batch;
	ok = m_run_jaccard(&L, self ? NULL : &R, t, &o, &one, NULL, why);
	for (int i = 0; i < nlists && ok; i++)
	{
		SjTimings	tm;

		o.gpu_ndevices = sizes[i];
		o.gpu_devices = lists[i];
		ok = m_run_jaccard(&L, self ? NULL : &R, t, &o, &many, &tm, why) &&
			m_same(&one, &many, why);
		if (ok && strstr(tm.devices, "units") == NULL)
		{
			snprintf(why, 512, "not spread with shared units: \"%s\"", tm.devices);
			ok = 0;
		}
		snprintf(strat, 128, "%s", tm.strategy);
		free(many.p);
	}
	free(one.p);
	free(lo);
	free(lt);
	free(ro);
	free(rt);
	return ok;
}

/* Jaccard spread: self and two tables, thresholds, pairs and counts. */
SJ_TEST(multi_gpu_jaccard)
{
	static const double thresholds[] = {0.3, 0.6, 0.9};
	char		why[512] = "",
				strat[128] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6a6163ULL;
	m_spread(1);
	/* the cost model's device counts and bitmap sample checked against the host's */
	if (sjgpu_jaccard_set_test_model_check)
		sjgpu_jaccard_set_test_model_check(1);
	for (int self = 0; self < 2; self++)
		for (int ti = 0; ti < 3; ti++)
			for (int count_only = 0; count_only < 2; count_only++)
				SJ_CHECK(m_jaccard_case(3000, 1200, 5000, 60, self, thresholds[ti], count_only,
										5000, strat, why),
						 "self %d threshold %g count %d [%s]: %s", self, thresholds[ti],
						 count_only, strat, why);
	/* the other devices take the prepared sets from the host, not from a peer */
	if (sjgpu_set_test_peer_copies)
	{
		sjgpu_set_test_peer_copies(0);
		for (int self = 0; self < 2; self++)
			SJ_CHECK(m_jaccard_case(3000, 1200, 5000, 60, self, 0.6, self, 5000, strat, why),
					 "self %d, sets from the host [%s]: %s", self, strat, why);
		sjgpu_set_test_peer_copies(1);
	}
	if (sjgpu_jaccard_set_test_model_check)
		sjgpu_jaccard_set_test_model_check(0);
	m_spread(0);
}

/*
 * The tensor filter spread (the hd suite in small): 384 and 1536
 * dimensions, cosine and L2, clustered rows (tile pruning on), self-join
 * and two tables, results of many batches; every list against one device.
 */
SJ_TEST(multi_gpu_eps_tensor)
{
	static const int dims[] = {384, 1536};
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x7463ULL;
	for (int d = 0; d < 2; d++)
		for (int metric = 0; metric < 2; metric++)
			for (int self = 0; self < 2; self++)
			{
				uint32_t	nl = dims[d] == 384 ? 6000 : 3000;

				m_strategy[0] = '\0';
				SJ_CHECK(m_case(nl, nl / 2, dims[d], self, metric, 0, 0, 5000, 0, why),
						 "dim %d metric %d self %d: %s", dims[d], metric, self, why);
				SJ_CHECK(strstr(m_strategy, "tensor") != NULL,
						 "dim %d metric %d self %d: not the tensor filter: \"%s\"",
						 dims[d], metric, self, m_strategy);
				if (d == 0 && metric == 1 && self == 1)
					printf("     spread: %s [%s]\n", m_devices, m_strategy);
				SJ_CHECK(m_case(nl, nl / 2, dims[d], self, metric, 0, 1, 0, 0, why),
						 "dim %d metric %d self %d count: %s", dims[d], metric, self, why);
			}
	/* chunks: a memory limit that splits the 384-D join, the same on every device */
	SJ_CHECK(m_case(6000, 3000, 384, 1, SJ_METRIC_COSINE, 0, 0, 5000, 48 << 20, why),
			 "384-D chunks: %s", why);
	SJ_CHECK(m_case(6000, 3000, 384, 0, SJ_METRIC_L2, 0, 0, 5000, 48 << 20, why),
			 "384-D chunks two tables: %s", why);
	/* every device's shares of the uploads from the host, none from a peer */
	if (sjgpu_set_test_peer_copies)
	{
		sjgpu_set_test_peer_copies(0);
		SJ_CHECK(m_case(6000, 3000, 384, 1, SJ_METRIC_COSINE, 0, 0, 5000, 48 << 20, why),
				 "384-D chunks, uploads from the host: %s", why);
		sjgpu_set_test_peer_copies(1);
	}
	/* no pruning: every tile pair, shared alike */
	if (sjgpu_eps_set_test_pruning)
	{
		sjgpu_eps_set_test_pruning(0);
		SJ_CHECK(m_case(4000, 2000, 384, 1, SJ_METRIC_COSINE, 0, 0, 5000, 0, why),
				 "384-D unpruned: %s", why);
		sjgpu_eps_set_test_pruning(1);
	}
}

/* Free memory of device 0 after ending early, mid-join: within 64 MiB of before. */
static int
m_released(const SjGpuDeviceInfo *before, char *why)
{
	SjGpuDeviceInfo after;
	char		err[SJ_ERRMSG_LEN];

	if (sjgpu_device_info(0, &after, err) != SJ_OK)
	{
		snprintf(why, 512, "%s", err);
		return 0;
	}
	if (after.free_memory + (64 << 20) < before->free_memory)
	{
		snprintf(why, 512, "device memory not released: %llu free before, %llu after",
				 (unsigned long long) before->free_memory,
				 (unsigned long long) after.free_memory);
		return 0;
	}
	return 1;
}

/* The tensor filter and Jaccard spread, ended early: every device frees. */
SJ_TEST(multi_gpu_spread_early_end)
{
	int			lists[kMaxLists][kMaxListLen],
				sizes[kMaxLists],
				nlists;
	uint32_t	n = 8000;
	double	   *c;
	SjVectors	L;
	SjSets		S;
	uint64_t   *so;
	uint32_t   *st;
	SjJoinOptions o;
	char		err[SJ_ERRMSG_LEN] = "",
				why[512] = "";
	SjGpuDeviceInfo before;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6565ULL;
	nlists = m_lists(lists, sizes);
	c = m_data(n, 384, 20, 0.02);
	L.n = n;
	L.dim = 384;
	L.coords = c;
	m_sets(6000, 5000, 60, &S, &so, &st);
	m_spread(1);

	/*
	 * Round 0 warms the devices up: the memory the driver keeps for a
	 * context once its kernels ran (their code, the local memory sized for
	 * the largest stack frame) is not the joins'.  Round 1 must free all.
	 */
	for (int round = 0; round < 2; round++)
	{
	if (round == 1)
		SJ_CHECK(sjgpu_device_info(0, &before, err) == SJ_OK, "%s", err);
	for (int k = 0; k < nlists; k++)
		for (int stop = 0; stop < 3; stop++)
		{
			SjGpuEpsJoin *j = NULL;
			SjGpuJaccardJoin *jj = NULL;
			SjPairBatch b;
			int			done = 0;

			memset(&o, 0, sizeof(o));
			o.metric = SJ_METRIC_COSINE;
			o.max_batch_pairs = 1000;
			o.cpu_threads = 2;
			o.gpu_ndevices = sizes[k];
			o.gpu_devices = lists[k];
			/* stop 0: right after begin; 1: after a batch; 2: after a few */
			SJ_CHECK(sjgpu_eps_begin(&L, NULL, 0.001, &o, &j, err) == SJ_OK, "begin: %s", err);
			for (int i = 0; i < stop * 2 - 1 && !done; i++)
				SJ_CHECK(sjgpu_eps_next(j, &b, &done, err) == SJ_OK, "next: %s", err);
			sjgpu_eps_end(j);
			done = 0;
			SJ_CHECK(sjgpu_jaccard_begin(&S, NULL, 0.2, &o, &jj, err) == SJ_OK, "jaccard begin: %s",
					 err);
			for (int i = 0; i < stop * 2 - 1 && !done; i++)
				SJ_CHECK(sjgpu_jaccard_next(jj, &b, &done, err) == SJ_OK, "jaccard next: %s", err);
			sjgpu_jaccard_end(jj);
		}
	}
	SJ_CHECK(m_released(&before, why), "%s", why);
	m_spread(0);
	free(c);
	free(so);
	free(st);
}

/* Jaccard spread at low thresholds under every strategy, self and two tables. */
SJ_TEST(multi_gpu_jaccard_strategies)
{
	static const double thresholds[] = {0.1, 0.2};
	char		why[512] = "",
				strat[128] = "";

	if (!sj_test_gpu_usable() || !sjgpu_jaccard_set_test_strategy)
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6a7374ULL;
	m_spread(1);
	for (int strategy = 0; strategy <= 4; strategy++)
		for (int self = 0; self < 2; self++)
			for (int ti = 0; ti < 2; ti++)
			{
				sjgpu_jaccard_set_test_strategy(strategy, 0);
				SJ_CHECK(m_jaccard_case(4000, 2000, 3000, 40, self, thresholds[ti], 0, 3000,
										strat, why),
						 "strategy %d self %d threshold %g [%s]: %s", strategy, self,
						 thresholds[ti], strat, why);
			}
	sjgpu_jaccard_set_test_strategy(0, 0);
	m_spread(0);
}

/*
 * The eps spread gate (host only, any machine with the GPU build): the
 * tensor filter's joins over many pairs spread, small ones, low dimensions
 * and joins the grid would serve (judged from a sample of rows) do not.
 */
SJ_TEST(multi_gpu_spread_gate)
{
	if (!sjgpu_eps_set_test_spread)
	{
		sj_test_skip("CPU-only build");
		return;
	}
	m_rng = sj_test_seed() ^ 0x6a7eULL;
	m_spread(0);				/* the gate itself, whatever a test before left */
	{
		/* sizes alone decide these: no coordinates are read */
		SjVectors	big = {200000, 384, NULL},
					flat = {1000000, 2, NULL};

		SJ_CHECK(sjgpu_eps_spreads(&big, NULL, 0.001, SJ_METRIC_COSINE) == 1,
				 "the 200 K x 384-D self-join does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&flat, NULL, 0.01, SJ_METRIC_L2) == 0, "a 2-D join spreads");
	}
	{
		/*
		 * 150 K x 128-D L2 around 15 K centres: at eps 0.1 the grid serves
		 * it (one device), at 1.2 no dimension prunes and the tensor
		 * filter does (spread), self-join and two tables alike.
		 */
		SjVectors	cl = {150000, 128, NULL};
		double	   *cc = m_data(cl.n, cl.dim, 15000, 0.01);

		cl.coords = cc;
		SJ_CHECK(sjgpu_eps_spreads(&cl, NULL, 0.1, SJ_METRIC_L2) == 0,
				 "a clustered 128-D join the grid serves spreads");
		SJ_CHECK(sjgpu_eps_spreads(&cl, &cl, 0.1, SJ_METRIC_L2) == 0,
				 "a clustered 128-D two-table join the grid serves spreads");
		SJ_CHECK(sjgpu_eps_spreads(&cl, NULL, 1.2, SJ_METRIC_L2) == 1,
				 "a 128-D join no dimension prunes does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&cl, NULL, 0.1, SJ_METRIC_COSINE) == 1,
				 "a 128-D cosine join does not spread");
		free(cc);
	}
	{
		/*
		 * Under 10^10 pairs, joins in which most pairs join spread (their
		 * verification is the work, judged from a sample of pairs); the
		 * same rows with a small eps, and a dense join too small, do not.
		 * Rows as doubles, floats and uneven pieces of float rows (one empty) alike.
		 */
		SjVectors	d = {6000, 64, NULL},
					t = {3300, 64, NULL},
					small = {4000, 64, NULL};
		double	   *dc = m_data(d.n, d.dim, 5, 0.05),
				   *tc = m_data(t.n, t.dim, 5, 0.05);
		float	   *fc = malloc(sizeof(float) * d.n * d.dim),
				   *rows = malloc(sizeof(float) * d.n * d.dim);
		SjRowPiece	pieces[4];

		for (uint32_t i = 0; i < d.n; i++)
			for (int k = 0; k < d.dim; k++)
			{
				fc[(size_t) k * d.n + i] = (float) dc[(size_t) k * d.n + i];
				rows[(size_t) i * d.dim + k] = (float) dc[(size_t) k * d.n + i];
			}
		sj_test_row_pieces(pieces, rows, d.n, d.dim);
		d.coords = dc;
		t.coords = tc;
		small.coords = dc;		/* its first 4,000 of each column: other rows, same spread */
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 1e9, SJ_METRIC_L2) == 1,
				 "a 6,000-row self-join of every pair does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 0.5, SJ_METRIC_COSINE) == 1,
				 "a 6,000-row cosine self-join of nearly every pair does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 1e-6, SJ_METRIC_L2) == 0,
				 "a 6,000-row self-join of no pair spreads");
		SJ_CHECK(sjgpu_eps_spreads(&t, &t, 1e9, SJ_METRIC_L2) == 1,
				 "a 3,300 x 3,300 join of every pair does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&small, NULL, 1e9, SJ_METRIC_L2) == 0,
				 "a 4,000-row self-join of every pair spreads");
		{
			/* 9 x 10^8 pairs: a row met by itself in the sample would spread it */
			SjVectors	x = {30000, 64, NULL};
			double	   *xc = m_data(x.n, x.dim, 5, 0.05);

			x.coords = xc;
			SJ_CHECK(sjgpu_eps_spreads(&x, &x, 1e-9, SJ_METRIC_COSINE) == 0,
					 "a table joined with itself as two tables, no pair, spreads");
			SJ_CHECK(sjgpu_eps_spreads(&x, NULL, 1e-9, SJ_METRIC_COSINE) == 0,
					 "a 30,000-row self-join of no pair spreads");
			free(xc);
		}
		d.coords = NULL;
		d.fcoords = fc;
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 1e9, SJ_METRIC_L2) == 1,
				 "float columns: a dense join does not spread");
		d.fcoords = NULL;
		d.npieces = 4;
		d.pieces = pieces;
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 1e9, SJ_METRIC_L2) == 1,
				 "pieces of rows: a dense join does not spread");
		SJ_CHECK(sjgpu_eps_spreads(&d, NULL, 1e-6, SJ_METRIC_L2) == 0,
				 "pieces of rows: a join of no pair spreads");
		free(dc);
		free(tc);
		free(fc);
		free(rows);
	}
}

/*
 * Dense joins spread by the gate alone (no test hook): every device list
 * gives the one device's pairs, distances bit for bit (3,300 x 3,300 64-D
 * L2, every pair: 10.9 M), and its count (6,000-row 384-D cosine self-join,
 * nearly every pair), verified a warp a probe position on each device.
 */
SJ_TEST(multi_gpu_spread_dense)
{
	int			lists[kMaxLists][kMaxListLen],
				sizes[kMaxLists],
				nlists;
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x64656eULL;
	m_spread(0);				/* the gate itself, whatever a test before left */
	nlists = m_lists(lists, sizes);
	for (int c = 0; c < 2; c++)
	{
		uint32_t	nl = c == 0 ? 3300 : 6000;
		int			dim = c == 0 ? 64 : 384;
		double	   *lc = m_data(nl, dim, 5, 0.05),
				   *rc = c == 0 ? m_data(nl, dim, 5, 0.05) : NULL;
		SjVectors	L = {nl, dim, lc},
					R = {nl, dim, rc};
		const SjVectors *rp = c == 0 ? &R : NULL;
		double		eps = c == 0 ? 1e9 : 0.5;
		SjJoinOptions o;
		MPairs		one,
					many;
		SjTimings	tm;

		memset(&o, 0, sizeof(o));
		o.metric = c == 0 ? SJ_METRIC_L2 : SJ_METRIC_COSINE;
		o.count_only = c == 1;
		SJ_CHECK(sjgpu_eps_spreads(&L, rp, eps, o.metric) == 1, "case %d does not spread", c);
		SJ_CHECK(m_run(&L, rp, eps, &o, &one, NULL, why), "case %d, one device: %s", c, why);
		SJ_CHECK(one.count > (c == 0 ? 10000000u : 9000000u),
				 "case %d: only %llu pairs", c, (unsigned long long) one.count);
		for (int k = 0; k < nlists; k++)
		{
			o.gpu_ndevices = sizes[k];
			o.gpu_devices = lists[k];
			SJ_CHECK(m_run(&L, rp, eps, &o, &many, &tm, why) && m_same(&one, &many, why),
					 "case %d, list of %d from %d: %s", c, sizes[k], lists[k][0], why);
			SJ_CHECK(strstr(tm.devices, "units") != NULL,
					 "case %d, list of %d from %d: not spread: \"%s\"", c, sizes[k],
					 lists[k][0], tm.devices);
			if (c == 1 && k == nlists - 1)
				printf("     dense: %s\n", tm.devices);
			free(many.p);
		}
		free(one.p);
		free(lc);
		free(rc);
	}
}

/*
 * Without the hook, small joins stay on one device; a device list is no
 * error.  A join its caller judged spread (gpu_spread_judged) spreads.
 */
SJ_TEST(multi_gpu_spread_small)
{
	int			list[2] = {0, 0};
	double	   *c;
	SjVectors	L;
	SjJoinOptions o;
	MPairs		got;
	SjTimings	tm;
	char		why[512] = "";

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no GPU");
		return;
	}
	m_rng = sj_test_seed() ^ 0x736dULL;
	c = m_data(2000, 384, 10, 0.02);
	L.n = 2000;
	L.dim = 384;
	L.coords = c;
	memset(&o, 0, sizeof(o));
	o.metric = SJ_METRIC_COSINE;
	o.gpu_ndevices = 2;
	o.gpu_devices = list;
	SJ_CHECK(sjgpu_eps_spreads(&L, NULL, 0.001, SJ_METRIC_COSINE) == 0, "a small join spreads");
	SJ_CHECK(m_run(&L, NULL, 0.001, &o, &got, &tm, why), "%s", why);
	SJ_CHECK(strstr(tm.devices, "units") == NULL, "spread: %s", tm.devices);
	free(got.p);
	/* a caller that judged the join spread (SjDevicesAcquire): the engine does not ask again */
	o.gpu_spread_judged = 1;
	SJ_CHECK(m_run(&L, NULL, 0.001, &o, &got, &tm, why), "judged: %s", why);
	SJ_CHECK(strstr(tm.devices, "units") != NULL, "judged, not spread: \"%s\"", tm.devices);
	free(got.p);
	free(c);
}

/*
 * A device whose replica runs out of memory at its begin leaves a spread
 * join, and the others do all of it: the same pairs as one device, eps
 * (384-D cosine, self and two tables, whichever entry of three fails);
 * where every device runs out, the join fails as before.
 */
SJ_TEST(multi_gpu_spread_drop)
{
	int			list[3] = {0, 0, 0};
	int			found = 0;
	char		err[SJ_ERRMSG_LEN];
	char		why[512] = "";
	double	   *lc,
			   *rc;
	SjVectors	L,
				R;
	SjJoinOptions o;
	MPairs		one,
				many;
	SjTimings	tm;

	if (!sj_test_gpu_usable() || !sjgpu_set_test_replica_nomem)
	{
		sj_test_skip(sj_test_gpu_usable() ? "no replica hook" : "no GPU");
		return;
	}
	(void) sjgpu_device_count(&found, err);
	if (found > 1)
		list[1] = 1;			/* a second card where there is one */
	m_rng = sj_test_seed() ^ 0x6472ULL;
	lc = m_data(5000, 384, 20, 0.02);
	rc = m_data(3000, 384, 20, 0.02);
	L.n = 5000;
	L.dim = 384;
	L.coords = lc;
	R.n = 3000;
	R.dim = 384;
	R.coords = rc;
	memset(&o, 0, sizeof(o));
	o.metric = SJ_METRIC_COSINE;
	o.max_batch_pairs = 5000;
	m_spread(1);
	for (int self = 1; self >= 0; self--)
	{
		SJ_CHECK(m_run(&L, self ? NULL : &R, 0.001, &o, &one, NULL, why), "one device: %s", why);
		for (int fail = 0; fail < 3; fail++)
		{
			o.gpu_ndevices = 3;
			o.gpu_devices = list;
			sjgpu_set_test_replica_nomem(fail);
			SJ_CHECK(m_run(&L, self ? NULL : &R, 0.001, &o, &many, &tm, why) &&
					 m_same(&one, &many, why), "self %d, entry %d out of memory: %s",
					 self, fail, why);
			sjgpu_set_test_replica_nomem(-1);
			SJ_CHECK(strstr(tm.devices, "left (out of memory)") != NULL,
					 "no device left: \"%s\"", tm.devices);
			if (self && fail == 1)
				printf("     %s\n", tm.devices);
			free(many.p);
			o.gpu_ndevices = 0;
			o.gpu_devices = NULL;
		}
		free(one.p);
	}
	/* every device out of memory: the join fails, with the last one's error */
	{
		SjGpuEpsJoin *j = NULL;
		int			two[2] = {0, 0};
		SjPairBatch b;
		int			done = 0;
		SjStatus	st;

		o.gpu_ndevices = 2;
		o.gpu_devices = two;
		sjgpu_set_test_replica_nomem(-2);
		st = sjgpu_eps_begin(&L, NULL, 0.001, &o, &j, err);
		while (st == SJ_OK && !done)
			st = sjgpu_eps_next(j, &b, &done, err);
		sjgpu_eps_end(j);
		sjgpu_set_test_replica_nomem(-1);
		SJ_CHECK(st == SJ_ERR_DEVICE_NOMEM, "both out of memory: status %d (%s)", st, err);
		o.gpu_ndevices = 0;
		o.gpu_devices = NULL;
	}
	m_spread(0);
	free(lc);
	free(rc);
}
