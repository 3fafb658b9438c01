/*
 * test_jaccard.c
 *		Engine tests of jaccard_join: the CPU engine against an independent
 *		brute-force oracle, the GPU engine against the CPU engine.
 *
 * Every test draws fresh random data from sj_test_seed().  Result lists are
 * sorted and compared exactly, the similarity bit for bit.  Shapes: tiny
 * and large sets, heavy duplication, Zipf-skewed tokens, one token in every
 * set, empty sets, n = 0 and 1, self and two-table joins over disjoint and
 * identical universes, exact-boundary similarities (1/2, 7/10, 9/10, 2/3),
 * sets whose grouping keys collide, count_only, tiny batches and 1 or 4
 * threads.  The GPU engine's preparation is compared with the host's array
 * by array (jaccard_gpu_prepare).
 *
 * SJ_JACCARD_BENCH=1 adds jaccard_bench: 1M Zipf sets (50K tokens, average
 * size 5 and 25), thresholds 0.5, 0.7, 0.9, CPU (all cores) against GPU,
 * a warm-up and the median of three runs.  For a per-core comparison,
 * SJ_JACCARD_BENCH_N (sets), SJ_JACCARD_BENCH_THREADS, SJ_JACCARD_BENCH_T
 * and SJ_JACCARD_BENCH_AVG (comma lists) change the runs,
 * SJ_JACCARD_BENCH_UNIVERSE the number of distinct tokens (50000),
 * SJ_JACCARD_BENCH_CPU_ONLY=1 leaves out the GPU, and
 * SJ_JACCARD_BENCH_COUNT_ONLY=1 leaves out the run that forms the pairs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sjengine.h"
#include "sjgpu.h"
#include "sjjaccard.h"
#include "sjtest.h"

/* GPU engine test hook (cuda/jaccard_gpu.cu; absent from CPU-only builds). */
#pragma weak sjgpu_jaccard_set_test_strategy
extern void sjgpu_jaccard_set_test_strategy(int strategy, int signature_words);
#pragma weak sjgpu_jaccard_test_phases
extern void sjgpu_jaccard_test_phases(double *ms);
#pragma weak sjgpu_jaccard_test_prepare
extern SjStatus sjgpu_jaccard_test_prepare(const SjSets *left, const SjSets *right,
										   double threshold, const SjJoinOptions *options,
										   SjJaccardJoin **join, int *on_device,
										   char *errmsg);
#pragma weak sjgpu_jaccard_set_test_coproc
extern void sjgpu_jaccard_set_test_coproc(size_t candidates, size_t records);

/* ----------------------------------------------------------------------
 * Random numbers and set collections
 * ---------------------------------------------------------------------- */

typedef struct TjRng
{
	uint64_t	s;
} TjRng;

static uint64_t
tj_next(TjRng *r)
{
	uint64_t	z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t
tj_below(TjRng *r, uint32_t n)
{
	return n ? (uint32_t) (tj_next(r) % n) : 0;
}

static TjRng
tj_rng(uint64_t salt)
{
	TjRng		r;

	r.s = sj_test_seed() * 0x2545F4914F6CDD1DULL + salt;
	return r;
}

typedef struct TjSets
{
	uint32_t	n;
	uint32_t	universe;
	uint64_t   *off;
	uint32_t   *tok;
	size_t		capset;
	size_t		captok;
} TjSets;

static void
tj_init(TjSets *s, uint32_t universe)
{
	memset(s, 0, sizeof(*s));
	s->universe = universe;
	s->capset = 16;
	s->captok = 64;
	s->off = malloc(s->capset * sizeof(uint64_t));
	s->tok = malloc(s->captok * sizeof(uint32_t));
	s->off[0] = 0;
}

static void
tj_free(TjSets *s)
{
	free(s->off);
	free(s->tok);
	memset(s, 0, sizeof(*s));
}

static int
tj_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Append a set given in any order, with repeats (sorted, de-duplicated). */
static void
tj_add(TjSets *s, const uint32_t *t, uint32_t k)
{
	uint32_t	i,
				m = 0;
	uint32_t   *dst;

	if (s->n + 2 > s->capset)
	{
		s->capset *= 2;
		s->off = realloc(s->off, s->capset * sizeof(uint64_t));
	}
	while (s->off[s->n] + k + 1 > s->captok)
	{
		s->captok *= 2;
		s->tok = realloc(s->tok, s->captok * sizeof(uint32_t));
	}
	dst = s->tok + s->off[s->n];
	memcpy(dst, t, (size_t) k * sizeof(uint32_t));
	qsort(dst, k, sizeof(uint32_t), tj_cmp_u32);
	for (i = 0; i < k; i++)
		if (m == 0 || dst[i] != dst[m - 1])
			dst[m++] = dst[i];
	s->off[s->n + 1] = s->off[s->n] + m;
	s->n++;
}

static SjSets
tj_view(const TjSets *s)
{
	SjSets		v;

	v.n = s->n;
	v.universe = s->universe;
	v.offsets = s->off;
	v.tokens = s->tok;
	return v;
}

/* Zipf(1) sampler over [0, n). */
typedef struct TjZipf
{
	uint32_t	n;
	double	   *cdf;
} TjZipf;

static void
tj_zipf_init(TjZipf *z, uint32_t n, double s)
{
	double		sum = 0;
	uint32_t	i;

	z->n = n;
	z->cdf = malloc(n * sizeof(double));
	for (i = 0; i < n; i++)
	{
		sum += 1.0 / pow((double) (i + 1), s);
		z->cdf[i] = sum;
	}
	for (i = 0; i < n; i++)
		z->cdf[i] /= sum;
}

static uint32_t
tj_zipf(TjZipf *z, TjRng *r)
{
	double		u = (double) (tj_next(r) >> 11) / 9007199254740992.0;
	uint32_t	lo = 0,
				hi = z->n - 1;

	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Shapes of random collections.  Tokens come from [base, base + universe)
 * of a shared dictionary of size dict (so two collections can have
 * disjoint or identical universes).
 */
typedef struct TjShape
{
	const char *name;
	uint32_t	n;
	uint32_t	minsize;
	uint32_t	maxsize;
	uint32_t	universe;
	int			zipf;			/* Zipf-skewed tokens */
	int			dup_pct;		/* % of sets copied from an earlier set */
	int			near_pct;		/* % of sets that are an earlier set, edited */
	int			empty_pct;		/* % of empty sets */
	int			common;			/* one token in every non-empty set */
} TjShape;

static void
tj_generate(TjSets *s, const TjShape *sh, uint32_t base, uint32_t dict,
			TjRng *r)
{
	uint32_t   *buf = malloc((sh->maxsize + 8) * sizeof(uint32_t));
	TjZipf		z = {0, NULL};
	uint32_t	i;

	if (sh->zipf)
		tj_zipf_init(&z, sh->universe, 1.0);
	tj_init(s, dict);
	for (i = 0; i < sh->n; i++)
	{
		uint32_t	k = 0,
					size,
					c;
		int			roll = (int) tj_below(r, 100);

		if (roll < sh->empty_pct)
		{
			tj_add(s, buf, 0);
			continue;
		}
		if (s->n > 0 && roll < sh->empty_pct + sh->dup_pct + sh->near_pct)
		{
			uint32_t	src = tj_below(r, s->n);
			uint32_t	len = (uint32_t) (s->off[src + 1] - s->off[src]);

			memcpy(buf, s->tok + s->off[src], len * sizeof(uint32_t));
			k = len;
			if (roll >= sh->empty_pct + sh->dup_pct && k > 0)
			{
				/* near duplicate: replace or add a token or two */
				uint32_t	edits = 1 + tj_below(r, 2);

				for (c = 0; c < edits; c++)
				{
					uint32_t	t = base + (sh->zipf ? tj_zipf(&z, r) : tj_below(r, sh->universe));

					if (tj_below(r, 2) && k > 1)
						buf[tj_below(r, k)] = t;
					else if (k < sh->maxsize)
						buf[k++] = t;
				}
			}
			tj_add(s, buf, k);
			continue;
		}
		size = sh->minsize + tj_below(r, sh->maxsize - sh->minsize + 1);
		if (size > sh->universe)
			size = sh->universe;
		for (c = 0; c < size * 4 && k < size; c++)
		{
			uint32_t	t = base + (sh->zipf ? tj_zipf(&z, r) : tj_below(r, sh->universe));
			uint32_t	m;

			for (m = 0; m < k && buf[m] != t; m++)
				;
			if (m == k)
				buf[k++] = t;
		}
		if (sh->common && k > 0)
			buf[0] = base;		/* token `base` ends up in every set */
		tj_add(s, buf, k);
	}
	if (sh->zipf)
		free(z.cdf);
	free(buf);
}

/* ----------------------------------------------------------------------
 * Results: the oracle, the engines, comparison
 * ---------------------------------------------------------------------- */

typedef struct TjPair
{
	uint32_t	l;
	uint32_t	r;
	double		sim;
} TjPair;

typedef struct TjList
{
	TjPair	   *p;
	size_t		n;
	size_t		cap;
} TjList;

static void
tj_push(TjList *l, uint32_t a, uint32_t b, double sim)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->p = realloc(l->p, l->cap * sizeof(TjPair));
	}
	l->p[l->n].l = a;
	l->p[l->n].r = b;
	l->p[l->n].sim = sim;
	l->n++;
}

static int
tj_cmp_pair(const void *a, const void *b)
{
	const TjPair *x = a,
			   *y = b;

	if (x->l != y->l)
		return x->l < y->l ? -1 : 1;
	if (x->r != y->r)
		return x->r < y->r ? -1 : 1;
	return 0;
}

/* Brute force: every pair, a plain merge, the formula of sjengine.h. */
static void
tj_oracle(const TjSets *L, const TjSets *R, double t, TjList *out)
{
	const TjSets *B = R ? R : L;
	uint32_t	i,
				k;

	out->n = 0;
	for (i = 0; i < L->n; i++)
	{
		const uint32_t *a = L->tok + L->off[i];
		uint32_t	na = (uint32_t) (L->off[i + 1] - L->off[i]);

		if (na == 0)
			continue;
		for (k = R ? 0 : i + 1; k < B->n; k++)
		{
			const uint32_t *b = B->tok + B->off[k];
			uint32_t	nb = (uint32_t) (B->off[k + 1] - B->off[k]);
			uint32_t	x = 0,
						y = 0,
						inter = 0;
			double		sim;

			if (nb == 0)
				continue;
			while (x < na && y < nb)
			{
				if (a[x] == b[y])
				{
					inter++;
					x++;
					y++;
				}
				else if (a[x] < b[y])
					x++;
				else
					y++;
			}
			sim = (double) inter / (double) (na + nb - inter);
			if (sim >= t)
				tj_push(out, i, k, sim);
		}
	}
}

/* Which engine a run uses. */
typedef enum TjEngine
{
	TJ_CPU,
	TJ_GPU
} TjEngine;

/*
 * Run a join to the end, checking each batch; the pairs go to out (or the
 * count, for count_only).  Returns NULL or a description of the failure.
 */
static const char *
tj_run(TjEngine eng, const TjSets *L, const TjSets *R, double t,
	   const SjJoinOptions *opt, TjList *out, uint64_t *count,
	   SjTimings *timings)
{
	static char why[SJ_ERRMSG_LEN + 64];
	char		errmsg[SJ_ERRMSG_LEN];
	SjSets		lv = tj_view(L),
				rv;
	SjJaccardJoin *cj = NULL;
	SjGpuJaccardJoin *gj = NULL;
	SjStatus	st;
	size_t		maxb = opt->max_batch_pairs ? opt->max_batch_pairs : ((size_t) 1 << 20);
	uint32_t	nright = R ? R->n : L->n;
	int			done = 0;
	long		calls = 0;

	if (R)
		rv = tj_view(R);
	out->n = 0;
	*count = 0;
	if (eng == TJ_CPU)
		st = sj_jaccard_cpu_begin(&lv, R ? &rv : NULL, t, opt, &cj, errmsg);
	else
		st = sjgpu_jaccard_begin(&lv, R ? &rv : NULL, t, opt, &gj, errmsg);
	if (st != SJ_OK)
	{
		snprintf(why, sizeof(why), "begin: status %d: %s", st, errmsg);
		return why;
	}
	while (!done)
	{
		SjPairBatch b;
		size_t		i;

		if (eng == TJ_CPU)
			st = sj_jaccard_cpu_next(cj, &b, &done, errmsg);
		else
			st = sjgpu_jaccard_next(gj, &b, &done, errmsg);
		if (st != SJ_OK)
		{
			snprintf(why, sizeof(why), "next: status %d: %s", st, errmsg);
			goto fail;
		}
		calls++;
		if (opt->count_only)
		{
			if (b.left || b.right || b.value)
			{
				snprintf(why, sizeof(why), "count_only batch with arrays");
				goto fail;
			}
			*count += b.count;
			continue;
		}
		if (b.count > maxb)
		{
			snprintf(why, sizeof(why), "batch of %zu pairs over the limit %zu",
					 b.count, maxb);
			goto fail;
		}
		for (i = 0; i < b.count; i++)
		{
			if (b.left[i] >= L->n || b.right[i] >= nright ||
				(!R && b.left[i] >= b.right[i]))
			{
				snprintf(why, sizeof(why), "bad pair (%u, %u)", b.left[i], b.right[i]);
				goto fail;
			}
			tj_push(out, b.left[i], b.right[i], b.value[i]);
		}
		*count += b.count;
	}
	if (timings)
	{
		if (eng == TJ_CPU)
			sj_jaccard_cpu_timings(cj, timings);
		else
			sjgpu_jaccard_timings(gj, timings);
	}
	sj_jaccard_cpu_end(cj);
	sjgpu_jaccard_end(gj);
	qsort(out->p, out->n, sizeof(TjPair), tj_cmp_pair);
	return NULL;

fail:
	sj_jaccard_cpu_end(cj);
	sjgpu_jaccard_end(gj);
	return why;
}

/* Compare two sorted lists; NULL when equal, bits of the similarity too. */
static const char *
tj_compare(const TjList *want, const TjList *got)
{
	static char why[256];
	size_t		i;

	for (i = 0; i < want->n && i < got->n; i++)
	{
		const TjPair *a = &want->p[i],
				   *b = &got->p[i];

		if (a->l != b->l || a->r != b->r)
		{
			snprintf(why, sizeof(why),
					 "pair %zu: expected (%u, %u) sim %.17g, got (%u, %u) sim %.17g",
					 i, a->l, a->r, a->sim, b->l, b->r, b->sim);
			return why;
		}
		if (memcmp(&a->sim, &b->sim, sizeof(double)) != 0)
		{
			snprintf(why, sizeof(why), "pair (%u, %u): sim %.17g, expected %.17g",
					 a->l, a->r, b->sim, a->sim);
			return why;
		}
	}
	if (want->n != got->n)
	{
		snprintf(why, sizeof(why), "%zu pairs, expected %zu", got->n, want->n);
		return why;
	}
	return NULL;
}

static SjJoinOptions
tj_options(int threads, size_t max_batch, int count_only)
{
	SjJoinOptions o;

	memset(&o, 0, sizeof(o));
	o.cpu_threads = threads;
	o.max_batch_pairs = max_batch;
	o.count_only = count_only;
	return o;
}

static const double tj_thresholds[] = {0.1, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};
#define TJ_NTHRESH (sizeof(tj_thresholds) / sizeof(tj_thresholds[0]))

/*
 * The CPU engine on one input against the oracle at every threshold, with
 * 1 and 4 threads, default and tiny batches, and count_only.  Returns NULL
 * or a failure description.
 */
static const char *
tj_check_cpu(const TjSets *L, const TjSets *R, TjRng *r, int tiny_ok)
{
	static char why[512];
	TjList		want = {0},
				got = {0};
	size_t		ti;
	const char *err = NULL;

	for (ti = 0; ti < TJ_NTHRESH && !err; ti++)
	{
		double		t = tj_thresholds[ti];
		SjJoinOptions o;
		uint64_t	count;
		size_t		tiny = tj_below(r, 2) ? 1 : 7;

		tj_oracle(L, R, t, &want);

		o = tj_options(1, 0, 0);
		err = tj_run(TJ_CPU, L, R, t, &o, &got, &count, NULL);
		if (!err)
			err = tj_compare(&want, &got);
		if (!err)
		{
			o = tj_options(4, tiny_ok || want.n < 20000 ? tiny : 4096, 0);
			err = tj_run(TJ_CPU, L, R, t, &o, &got, &count, NULL);
			if (!err)
				err = tj_compare(&want, &got);
		}
		if (!err)
		{
			o = tj_options(1 + tj_below(r, 4), 0, 1);
			err = tj_run(TJ_CPU, L, R, t, &o, &got, &count, NULL);
			if (!err && count != want.n)
			{
				snprintf(why, sizeof(why), "count_only %llu, expected %zu",
						 (unsigned long long) count, want.n);
				err = why;
			}
		}
		if (err)
		{
			char		inner[512];

			snprintf(inner, sizeof(inner), "%s", err);
			snprintf(why, sizeof(why), "threshold %g (%s join): %.400s", t,
					 R ? "two-table" : "self", inner);
			err = why;
		}
	}
	free(want.p);
	free(got.p);
	return err;
}

/* Shapes used by the CPU and GPU tests. */
static const TjShape tj_shapes[] = {
	{"tiny sets", 600, 1, 4, 30, 0, 5, 10, 5, 0},
	{"small sets", 800, 2, 12, 200, 0, 5, 20, 2, 0},
	{"zipf", 1000, 1, 30, 2000, 1, 5, 20, 2, 0},
	{"heavy duplication", 900, 1, 8, 60, 0, 70, 10, 3, 0},
	{"common token", 600, 1, 20, 400, 0, 5, 20, 0, 1},
	{"large sets", 150, 200, 1000, 3000, 0, 10, 40, 0, 0},
	{"mixed sizes", 400, 1, 400, 1500, 1, 10, 30, 5, 0},
	{"all empty", 50, 0, 0, 10, 0, 0, 0, 100, 0},
};
#define TJ_NSHAPES (sizeof(tj_shapes) / sizeof(tj_shapes[0]))

/* ----------------------------------------------------------------------
 * CPU tests
 * ---------------------------------------------------------------------- */

/* Self-joins of every shape against the oracle. */
SJ_TEST(jaccard_cpu_self)
{
	TjRng		r = tj_rng(101);
	size_t		s;

	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjSets		L;
		const char *err;

		tj_generate(&L, &tj_shapes[s], 0, tj_shapes[s].universe, &r);
		err = tj_check_cpu(&L, NULL, &r, tj_shapes[s].n < 700);
		tj_free(&L);
		SJ_CHECK(err == NULL, "%s: %s", tj_shapes[s].name, err);
	}
}

/* Two-table joins: identical universes, overlapping, and disjoint. */
SJ_TEST(jaccard_cpu_two_table)
{
	TjRng		r = tj_rng(202);
	size_t		s;

	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;
		const char *err;
		int			mode = (int) (s % 3);	/* 0 same, 1 overlapping, 2 disjoint */
		uint32_t	dict = sh.universe * 2;

		sh.n = sh.n * 2 / 3 + 1;
		tj_generate(&L, &sh, 0, dict, &r);
		sh.n = sh.n / 2 + 3;
		tj_generate(&R, &sh, mode == 0 ? 0 : mode == 1 ? sh.universe / 2 : sh.universe,
					dict, &r);
		if (mode == 0 && L.n > 3 && R.n > 3)
		{
			/* identical sets on both sides */
			uint32_t	i;

			for (i = 0; i < 3; i++)
			{
				uint32_t	src = tj_below(&r, L.n);

				tj_add(&R, L.tok + L.off[src], (uint32_t) (L.off[src + 1] - L.off[src]));
			}
		}
		err = tj_check_cpu(&L, &R, &r, 1);
		tj_free(&L);
		tj_free(&R);
		SJ_CHECK(err == NULL, "%s (universes %s): %s", sh.name,
				 mode == 0 ? "identical" : mode == 1 ? "overlapping" : "disjoint", err);
	}
}

/*
 * Pairs built to have similarity exactly 1/2, 7/10, 9/10 and 2/3 (and one
 * overlap less), joined at exactly those thresholds.
 */
static void
tj_boundary_sets(TjSets *s, TjRng *r)
{
	static const uint32_t cases[][3] = {
		/* |A|, |B|, overlap */
		{3, 3, 2}, {6, 6, 4}, {2, 2, 1}, {4, 4, 2},	/* 1/2 (and 1/3) */
		{8, 9, 7}, {16, 18, 14}, {24, 27, 21}, {17, 17, 14}, /* 7/10 */
		{9, 10, 9}, {19, 19, 18}, {18, 20, 18}, {27, 30, 27},	/* 9/10 */
		{2, 3, 2}, {5, 5, 4}, {4, 6, 4}, {10, 10, 8}, /* 2/3 */
	};
	uint32_t	buf[128];
	uint32_t	next = 0;
	size_t		c;
	int			rep;

	tj_init(s, 1u << 20);
	for (rep = 0; rep < 3; rep++)
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		{
			uint32_t	na = cases[c][0],
						nb = cases[c][1],
						ov = cases[c][2],
						k,
						shift = tj_below(r, 2);

			/* overlap ov and ov - 1 (the pair just below) */
			for (k = 0; k < 2; k++)
			{
				uint32_t	o = ov - k * shift,
							i,
							base = next + tj_below(r, 50);

				for (i = 0; i < na; i++)
					buf[i] = base + i;
				tj_add(s, buf, na);
				for (i = 0; i < nb; i++)
					buf[i] = base + na - o + i;
				tj_add(s, buf, nb);
				next = base + na + nb + 1;
			}
		}
}

SJ_TEST(jaccard_cpu_exact_boundaries)
{
	static const double ts[] = {0.5, 0.7, 0.9, 2.0 / 3.0, 1.0 / 3.0, 1.0};
	TjRng		r = tj_rng(303);
	TjSets		s;
	TjList		want = {0},
				got = {0};
	size_t		i;

	tj_boundary_sets(&s, &r);
	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
	{
		SjJoinOptions o = tj_options(1 + (int) (i % 2) * 3, 0, 0);
		uint64_t	count;
		const char *err;
		size_t		k,
					exact = 0;

		tj_oracle(&s, NULL, ts[i], &want);
		for (k = 0; k < want.n; k++)
			exact += want.p[k].sim == ts[i];
		SJ_CHECK(ts[i] == 1.0 / 3.0 || ts[i] == 1.0 || exact > 0,
				 "no pair exactly at %g", ts[i]);
		err = tj_run(TJ_CPU, &s, NULL, ts[i], &o, &got, &count, NULL);
		if (!err)
			err = tj_compare(&want, &got);
		SJ_CHECK(err == NULL, "threshold %.17g: %s", ts[i], err);
	}
	tj_free(&s);
	free(want.p);
	free(got.p);
}

/* n = 0 and 1 on either side, empty sets, a single set joined with itself. */
SJ_TEST(jaccard_cpu_degenerate)
{
	TjRng		r = tj_rng(404);
	TjSets		none,
				one,
				empties,
				two;
	uint32_t	t3[] = {1, 5, 9};
	TjList		want = {0},
				got = {0};
	const TjSets *cases[][2] = {
		{&none, NULL}, {&one, NULL}, {&empties, NULL}, {&none, &one},
		{&one, &none}, {&one, &one}, {&empties, &empties}, {&two, &one},
		{&one, &two}, {&two, NULL}, {&empties, &two},
	};
	size_t		c;

	tj_init(&none, 10);
	tj_init(&one, 10);
	tj_add(&one, t3, 3);
	tj_init(&empties, 10);
	tj_add(&empties, t3, 0);
	tj_add(&empties, t3, 0);
	tj_init(&two, 10);
	tj_add(&two, t3, 3);
	tj_add(&two, t3, 3);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		size_t		ti;

		for (ti = 0; ti < TJ_NTHRESH; ti++)
		{
			SjJoinOptions o = tj_options(1 + (int) tj_below(&r, 4), 1, (int) (ti % 2));
			uint64_t	count;
			const char *err;

			tj_oracle(cases[c][0], cases[c][1], tj_thresholds[ti], &want);
			err = tj_run(TJ_CPU, cases[c][0], cases[c][1], tj_thresholds[ti], &o,
						 &got, &count, NULL);
			if (!err && !o.count_only)
				err = tj_compare(&want, &got);
			SJ_CHECK(err == NULL, "case %zu, threshold %g: %s", c,
					 tj_thresholds[ti], err);
			SJ_CHECK(count == want.n, "case %zu, threshold %g: %llu pairs, expected %zu",
					 c, tj_thresholds[ti], (unsigned long long) count, want.n);
		}
	}
	tj_free(&none);
	tj_free(&one);
	tj_free(&empties);
	tj_free(&two);
	free(want.p);
	free(got.p);
}

/* Bad arguments are refused with a status and a message, never a crash. */
SJ_TEST(jaccard_cpu_invalid)
{
	uint64_t	off[] = {0, 2, 4};
	uint32_t	bad_order[] = {3, 1, 2, 5};
	uint32_t	ok[] = {1, 3, 2, 5};
	SjSets		s = {2, 10, off, ok};
	SjSets		b = {2, 10, off, bad_order};
	SjSets		small = {2, 4, off, ok};
	SjJoinOptions o = tj_options(1, 0, 0);
	SjJaccardJoin *j = (SjJaccardJoin *) 1;
	char		errmsg[SJ_ERRMSG_LEN];

	SJ_CHECK(sj_jaccard_cpu_begin(&s, NULL, 0.0, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "threshold 0 accepted");
	SJ_CHECK(j == NULL, "handle set on failure");
	SJ_CHECK(sj_jaccard_cpu_begin(&s, NULL, 1.5, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "threshold 1.5 accepted");
	SJ_CHECK(sj_jaccard_cpu_begin(&s, NULL, NAN, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "threshold NaN accepted");
	SJ_CHECK(sj_jaccard_cpu_begin(&b, NULL, 0.5, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "unsorted tokens accepted");
	SJ_CHECK(sj_jaccard_cpu_begin(&s, &small, 0.5, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "token beyond the universe accepted");
	SJ_CHECK(strlen(errmsg) > 0, "no message");
	sj_jaccard_cpu_end(NULL);
}

/* A larger skewed self-join with many batches, 4 threads (chunking). */
SJ_TEST(jaccard_cpu_chunked)
{
	TjRng		r = tj_rng(505);
	TjShape		sh = {"zipf large", 4000, 1, 16, 3000, 1, 20, 30, 1, 0};
	TjSets		L;
	TjList		want = {0},
				got = {0};
	double		ts[] = {0.3, 0.6, 0.85};
	size_t		i;

	tj_generate(&L, &sh, 0, sh.universe, &r);
	for (i = 0; i < 3; i++)
	{
		SjJoinOptions o = tj_options(4, 1 + tj_below(&r, 500), 0);
		uint64_t	count;
		const char *err;

		tj_oracle(&L, NULL, ts[i], &want);
		err = tj_run(TJ_CPU, &L, NULL, ts[i], &o, &got, &count, NULL);
		if (!err)
			err = tj_compare(&want, &got);
		SJ_CHECK(err == NULL, "threshold %g: %s", ts[i], err);
	}
	tj_free(&L);
	free(want.p);
	free(got.p);
}

/*
 * A large input (parallel preparation paths: frequency histograms per
 * thread): 1 and 4 threads must agree exactly; the 1-thread engine is the
 * one checked against the oracle above.
 */
SJ_TEST(jaccard_cpu_threads_agree)
{
	TjRng		r = tj_rng(606);
	TjShape		sh = {"zipf big", 120000, 1, 20, 20000, 1, 10, 20, 1, 0};
	TjSets		L;
	TjList		one = {0},
				four = {0};
	double		ts[] = {0.75, 0.95};
	size_t		i;

	tj_generate(&L, &sh, 0, sh.universe, &r);
	SJ_CHECK(L.off[L.n] >= ((uint64_t) 1 << 20), "input too small: %llu tokens",
			 (unsigned long long) L.off[L.n]);
	for (i = 0; i < 2; i++)
	{
		SjJoinOptions o1 = tj_options(1, 0, 0),
					o4 = tj_options(4, 0, 0);
		uint64_t	count;
		const char *err;

		err = tj_run(TJ_CPU, &L, NULL, ts[i], &o1, &one, &count, NULL);
		if (!err)
			err = tj_run(TJ_CPU, &L, NULL, ts[i], &o4, &four, &count, NULL);
		if (!err)
			err = tj_compare(&one, &four);
		SJ_CHECK(err == NULL, "threshold %g: %s", ts[i], err);
		SJ_CHECK(one.n > 0, "threshold %g: no pairs", ts[i]);
	}
	tj_free(&L);
	free(one.p);
	free(four.p);
}

/*
 * Sets whose grouping keys collide: {979, 1595} and {1283, 2753} have the
 * same 40-bit hash (sj_jaccard_hash >> 24) when tokens keep their ids, which they
 * do when every token of [0, 2754) occurs equally often (ranks by
 * frequency, ties by id).  Self (two = 0): A, B, A, B, then every other
 * token twice as singletons; the host sorts them A B A B and splits them
 * into four distinct sets.  Two-table: A, B and the singletons once on
 * each side, B, A on the right: A | B B | A, three distinct sets.
 */
#define TJ_COLL_UNIVERSE 2754

static void
tj_collision_sets(TjSets *s, int side)
{
	static const uint32_t a[] = {979, 1595},
				b[] = {1283, 2753};
	uint32_t	t;
	int			rep;

	tj_init(s, TJ_COLL_UNIVERSE);
	tj_add(s, side == 1 ? b : a, 2);
	tj_add(s, side == 1 ? a : b, 2);
	if (side < 0)
	{
		tj_add(s, a, 2);
		tj_add(s, b, 2);
	}
	for (rep = 0; rep < (side < 0 ? 2 : 1); rep++)
		for (t = 0; t < TJ_COLL_UNIVERSE; t++)
			if (t != a[0] && t != a[1] && t != b[0] && t != b[1])
				tj_add(s, &t, 1);
}

/* Distinct sets of size 2 after the host's preparation (collision check). */
static uint32_t
tj_pairs_distinct(const TjSets *L, const TjSets *R)
{
	SjSets		l = tj_view(L),
				r;
	SjJoinOptions o = tj_options(1, 0, 0);
	SjJaccardJoin *h = NULL;
	SjJaccardPrepared v;
	char		errmsg[SJ_ERRMSG_LEN];
	uint32_t	d,
				n = 0;

	if (R)
		r = tj_view(R);
	if (sj_jaccard_prepare(&l, R ? &r : NULL, 0.5, &o, &h, errmsg) != SJ_OK)
		return 0;
	sj_jaccard_prepared_view(h, &v);
	for (d = 0; d < v.nsets; d++)
		n += v.len[d] == 2;
	sj_jaccard_cpu_end(h);
	return n;
}

SJ_TEST(jaccard_cpu_hash_collision)
{
	TjRng		r = tj_rng(909);
	TjSets		S,
				L,
				R;
	const char *err;
	uint32_t	n;

	{
		static const uint32_t a[] = {979, 1595},
					b[] = {1283, 2753};

		SJ_CHECK(sj_jaccard_hash(a, 2) >> 24 == sj_jaccard_hash(b, 2) >> 24,
				 "the two sets' 40-bit grouping hashes no longer collide");
	}
	tj_collision_sets(&S, -1);
	tj_collision_sets(&L, 0);
	tj_collision_sets(&R, 1);
	n = tj_pairs_distinct(&S, NULL);
	SJ_CHECK(n == 4, "self: %u distinct sets of size 2, expected 4 (no collision?)", n);
	n = tj_pairs_distinct(&L, &R);
	SJ_CHECK(n == 3, "two-table: %u distinct sets of size 2, expected 3", n);
	err = tj_check_cpu(&S, NULL, &r, 0);
	SJ_CHECK(err == NULL, "self: %s", err);
	err = tj_check_cpu(&L, &R, &r, 0);
	SJ_CHECK(err == NULL, "two-table: %s", err);
	tj_free(&S);
	tj_free(&L);
	tj_free(&R);
}

/* Token ids spread over a huge universe (the engine's dictionary path). */
SJ_TEST(jaccard_cpu_sparse_universe)
{
	TjRng		r = tj_rng(707);
	TjShape		sh = tj_shapes[2];
	TjSets		L;
	uint64_t	k;
	const char *err;

	tj_generate(&L, &sh, 0, sh.universe, &r);
	L.universe = 2000000000u;
	for (k = 0; k < L.off[L.n]; k++)
		L.tok[k] = L.tok[k] * 997u + 13u;
	err = tj_check_cpu(&L, NULL, &r, 0);
	tj_free(&L);
	SJ_CHECK(err == NULL, "%s", err);
}

/* qsort comparison of two uint64. */
static int
tj_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * Co-processing's CPU half: the candidates of sj_jaccard_filter_next in
 * buffers of cap, verified here by a plain merge, counted as member pairs
 * (with the pairs inside groups of identical sets).  Checks that every
 * candidate is a pair of distinct sets x > y and that none comes twice.
 * Returns NULL or a failure; *batches counts the calls.
 */
static const char *
tj_filter_count(const TjSets *L, const TjSets *R, double t, int threads,
				size_t cap, uint64_t *count, uint64_t *batches)
{
	static char why[SJ_ERRMSG_LEN + 64];
	char		errmsg[SJ_ERRMSG_LEN];
	SjSets		lv = tj_view(L),
				rv;
	SjJoinOptions o = tj_options(threads, 0, 1);
	SjJaccardJoin *j = NULL;
	uint32_t	nsets = 0,
				universe,
				d;
	const uint64_t *off;
	const uint32_t *tok,
			   *wl,
			   *wr;
	uint64_t   *buf = malloc(cap * sizeof(uint64_t));
	uint64_t   *all = NULL;
	size_t		nall = 0,
				capall = 0,
				k;
	int			done = 0;
	SjStatus	st;
	const char *err = NULL;

	*count = 0;
	*batches = 0;
	if (R)
		rv = tj_view(R);
	st = sj_jaccard_prepare(&lv, R ? &rv : NULL, t, &o, &j, errmsg);
	if (st == SJ_OK)
		st = sj_jaccard_filter_begin(j, errmsg);
	if (st == SJ_OK)
		sj_jaccard_prepared_sets(j, &nsets, &universe, &off, &tok, &wl, &wr);
	while (st == SJ_OK && !done && !err)
	{
		size_t		n = 0;

		st = sj_jaccard_filter_next(j, buf, cap, &n, &done, errmsg);
		if (st != SJ_OK)
			break;
		if (n > cap || ++*batches > 50000000)
		{
			snprintf(why, sizeof(why), "%zu candidates in a buffer of %zu, call %llu",
					 n, cap, (unsigned long long) *batches);
			err = why;
			break;
		}
		for (k = 0; k < n; k++)
		{
			uint32_t	x = (uint32_t) (buf[k] >> 32),
						y = (uint32_t) buf[k],
						lx,
						ly,
						a = 0,
						b = 0,
						inter = 0;

			if (x >= nsets || y >= x)
			{
				snprintf(why, sizeof(why), "bad candidate (%u, %u) of %u sets", x, y, nsets);
				err = why;
				break;
			}
			if (nall == capall)
			{
				capall = capall ? capall * 2 : 4096;
				all = realloc(all, capall * sizeof(uint64_t));
			}
			all[nall++] = buf[k];
			lx = (uint32_t) (off[x + 1] - off[x]);
			ly = (uint32_t) (off[y + 1] - off[y]);
			while (a < lx && b < ly)
			{
				uint32_t	p = tok[off[x] + a],
							q = tok[off[y] + b];

				inter += p == q;
				a += p <= q;
				b += q <= p;
			}
			if ((double) inter / (double) (lx + ly - inter) >= t)
				*count += wr ? (uint64_t) wl[x] * wr[y] + (uint64_t) wr[x] * wl[y]
					: (uint64_t) wl[x] * wl[y];
		}
	}
	if (st != SJ_OK && !err)
	{
		snprintf(why, sizeof(why), "status %d: %s", st, errmsg);
		err = why;
	}
	for (d = 0; d < nsets && !err; d++)
		*count += wr ? (uint64_t) wl[d] * wr[d] : (uint64_t) wl[d] * (wl[d] - (wl[d] > 0)) / 2;
	if (!err && nall > 1)
	{
		qsort(all, nall, sizeof(uint64_t), tj_cmp_u64);
		for (k = 1; k < nall && !err; k++)
			if (all[k] == all[k - 1])
			{
				snprintf(why, sizeof(why), "candidate (%u, %u) twice",
						 (uint32_t) (all[k] >> 32), (uint32_t) all[k]);
				err = why;
			}
	}
	sj_jaccard_cpu_end(j);
	free(buf);
	free(all);
	return err;
}

/*
 * The CPU half of co-processing, without a device: over every shape, self
 * and two-table, the filters' candidates verified by a plain merge count
 * exactly the oracle's pairs, from buffers of one candidate (every probe's
 * candidates split across calls) up, on 1 to 4 threads.
 */
SJ_TEST(jaccard_coproc_filter)
{
	static const double ts[] = {0.1, 0.5, 0.7, 0.9, 1.0};
	TjRng		r = tj_rng(1515);
	TjList		want = {0};
	size_t		s;

	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;
		size_t		ti;
		int			side;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		sh.n = sh.n / 3 + 1;
		tj_generate(&R, &sh, 0, sh.universe, &r);
		for (side = 0; side < 2; side++)
			for (ti = 0; ti < sizeof(ts) / sizeof(ts[0]); ti++)
			{
				static const struct
				{
					size_t		cap;
					int			threads;
				}			runs[] = {{1, 1}, {7, 1}, {250, 4}, {4096, 2}};
				const TjSets *rs = side ? &R : NULL;
				size_t		k;

				tj_oracle(&L, rs, ts[ti], &want);
				for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++)
				{
					uint64_t	count = 0,
								batches = 0;
					const char *err;

					/* one candidate a call: only where probes have few */
					if (runs[k].cap == 1 && ts[ti] < 0.7)
						continue;
					err = tj_filter_count(&L, rs, ts[ti], runs[k].threads, runs[k].cap,
										  &count, &batches);
					SJ_CHECK(err == NULL, "%s %s, threshold %g, buffer %zu: %s", sh.name,
							 side ? "two-table" : "self", ts[ti], runs[k].cap, err);
					SJ_CHECK(err != NULL || count == want.n,
							 "%s %s, threshold %g, buffer %zu: %llu pairs, expected %zu",
							 sh.name, side ? "two-table" : "self", ts[ti], runs[k].cap,
							 (unsigned long long) count, want.n);
				}
			}
		tj_free(&L);
		tj_free(&R);
	}
	free(want.p);
}

/* ----------------------------------------------------------------------
 * GPU tests: the GPU engine against the CPU engine
 * ---------------------------------------------------------------------- */

/* Run both engines with the same options and compare. */
static const char *
tj_gpu_vs_cpu(const TjSets *L, const TjSets *R, double t, SjJoinOptions o,
			  SjTimings *gt)
{
	static char why[512];
	TjList		want = {0},
				got = {0};
	uint64_t	wc,
				gc;
	const char *err;
	SjJoinOptions co = o;

	co.gpu_memory_limit = 0;
	err = tj_run(TJ_CPU, L, R, t, &co, &want, &wc, NULL);
	if (!err)
		err = tj_run(TJ_GPU, L, R, t, &o, &got, &gc, gt);
	if (!err && o.count_only && wc != gc)
	{
		snprintf(why, sizeof(why), "GPU counted %llu, CPU %llu",
				 (unsigned long long) gc, (unsigned long long) wc);
		err = why;
	}
	if (!err && !o.count_only)
		err = tj_compare(&want, &got);
	free(want.p);
	free(got.p);
	return err;
}

SJ_TEST(jaccard_gpu_vs_cpu)
{
	TjRng		r = tj_rng(606);
	size_t		s;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;
		size_t		ti;

		tj_generate(&L, &sh, 0, sh.universe * 2, &r);
		sh.n = sh.n / 2 + 1;
		tj_generate(&R, &sh, (uint32_t) (s % 2) * sh.universe / 2, sh.universe * 2, &r);
		for (ti = 0; ti < TJ_NTHRESH; ti++)
		{
			double		t = tj_thresholds[ti];
			SjJoinOptions o = tj_options(2, tj_below(&r, 3) == 0 ? 7 : 0,
										 (int) (ti % 3 == 2));
			SjTimings	gt;
			const char *err;

			memset(&gt, 0, sizeof(gt));
			err = tj_gpu_vs_cpu(&L, NULL, t, o, &gt);
			SJ_CHECK(err == NULL, "%s self, threshold %g (%s): %s", sh.name, t,
					 gt.strategy, err);
			err = tj_gpu_vs_cpu(&L, &R, t, o, &gt);
			SJ_CHECK(err == NULL, "%s two-table, threshold %g (%s): %s", sh.name, t,
					 gt.strategy, err);
		}
		tj_free(&L);
		tj_free(&R);
	}
}

/*
 * Every GPU strategy forced on every shape: prefix-block, brute force, the
 * bitmap filter with exact signatures (the universe fits) and with hashed
 * ones (64 or 128 bits over larger universes, so the bound prunes and the
 * merge decides), and co-processing (CPU filters, GPU verifies) with its
 * batches from the budget and with 37 candidates a batch and 5 records a
 * verification (many pipeline batches, probes split across batches,
 * overflows re-run in halves).
 */
SJ_TEST(jaccard_gpu_strategies)
{
	static const struct
	{
		int			strategy;
		int			words;
		const char *name;
		size_t		candidates;
		size_t		records;
	}			forced[] = {
		{1, 0, "gpu prefix-block", 0, 0},
		{2, 0, "gpu brute-force overlap", 0, 0},
		{3, 0, "gpu bitmap", 0, 0},
		{3, 1, "gpu bitmap (64 bits", 0, 0},
		{3, 2, "gpu bitmap (128 bits", 0, 0},
		{4, 0, "co-processing (cpu filter, gpu verify)", 0, 0},
		{4, 0, "co-processing (cpu filter, gpu verify)", 37, 5},
	};
	static const double ts[] = {0.1, 0.5, 0.7, 0.9, 1.0};
	TjRng		r = tj_rng(1212);
	size_t		s,
				f;

	if (!sj_test_gpu_usable() || !sjgpu_jaccard_set_test_strategy ||
		!sjgpu_jaccard_set_test_coproc)
	{
		sj_test_skip("no usable GPU");
		return;
	}
	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		sh.n = sh.n / 3 + 1;
		tj_generate(&R, &sh, 0, sh.universe, &r);
		for (f = 0; f < sizeof(forced) / sizeof(forced[0]); f++)
		{
			size_t		ti;

			sjgpu_jaccard_set_test_strategy(forced[f].strategy, forced[f].words);
			sjgpu_jaccard_set_test_coproc(forced[f].candidates, forced[f].records);
			for (ti = 0; ti < sizeof(ts) / sizeof(ts[0]); ti++)
			{
				SjJoinOptions o = tj_options(2, ti == 2 ? 5 : 0, (int) (ti == 3));
				SjTimings	gt;
				const char *err;

				memset(&gt, 0, sizeof(gt));
				err = tj_gpu_vs_cpu(&L, NULL, ts[ti], o, &gt);
				SJ_CHECK(err == NULL, "%s self, %s, threshold %g (%s): %s", sh.name,
						 forced[f].name, ts[ti], gt.strategy, err);
				SJ_CHECK(L.n < 2 || sh.empty_pct == 100 || strncmp(gt.strategy, forced[f].name,
											strlen(forced[f].name)) == 0,
						 "%s: forced %s, ran %s", sh.name, forced[f].name, gt.strategy);
				err = tj_gpu_vs_cpu(&L, &R, ts[ti], o, &gt);
				SJ_CHECK(err == NULL, "%s two-table, %s, threshold %g (%s): %s", sh.name,
						 forced[f].name, ts[ti], gt.strategy, err);
			}
		}
		sjgpu_jaccard_set_test_strategy(0, 0);
		sjgpu_jaccard_set_test_coproc(0, 0);
		tj_free(&L);
		tj_free(&R);
	}
}

/*
 * Co-processing's pipeline at length: 4000 skewed sets (near duplicates,
 * so probes have many candidates) and 150 large ones, self and two-table,
 * 1 and 4 threads, with a few hundred candidates a batch (the CPU filters
 * batch k + 1 while the device verifies batch k, over many batches), few
 * records a verification (re-runs), tiny output batches, and count_only;
 * then with the batches from the budget.  Always the CPU engine's answer,
 * bit for bit.
 */
SJ_TEST(jaccard_gpu_coproc_pipeline)
{
	static const TjShape shapes[] = {
		{"zipf, near duplicates", 4000, 1, 16, 3000, 1, 20, 30, 1, 0},
		{"large sets", 150, 200, 1000, 3000, 0, 10, 40, 0, 0},
	};
	static const struct
	{
		size_t		candidates;
		size_t		records;
		size_t		max_batch;
		int			threads;
		int			count_only;
	}			runs[] = {
		{300, 40, 7, 4, 0},
		{300, 0, 1000, 1, 0},
		{1, 1, 3, 2, 0},
		{300, 0, 0, 4, 1},
		{0, 0, 0, 2, 0},
		{0, 0, 0, 4, 1},
	};
	static const double ts[] = {0.3, 0.6, 0.85};
	TjRng		r = tj_rng(1616);
	size_t		s,
				i,
				k;

	if (!sj_test_gpu_usable() || !sjgpu_jaccard_set_test_strategy ||
		!sjgpu_jaccard_set_test_coproc)
	{
		sj_test_skip("no usable GPU");
		return;
	}
	sjgpu_jaccard_set_test_strategy(4, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		TjShape		sh = shapes[s];
		TjSets		L,
					R;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		sh.n = sh.n / 2 + 1;
		tj_generate(&R, &sh, 0, sh.universe, &r);
		for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
			for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++)
			{
				SjJoinOptions o = tj_options(runs[k].threads, runs[k].max_batch,
											 runs[k].count_only);
				SjTimings	gt;
				const char *err;
				int			side;

				/* one candidate a batch: only where there are few */
				if (runs[k].candidates == 1 && (ts[i] < 0.85 || s == 1))
					continue;
				sjgpu_jaccard_set_test_coproc(runs[k].candidates, runs[k].records);
				for (side = 0; side < 2; side++)
				{
					memset(&gt, 0, sizeof(gt));
					err = tj_gpu_vs_cpu(&L, side ? &R : NULL, ts[i], o, &gt);
					SJ_CHECK(err == NULL, "%s %s, threshold %g, run %zu (%s): %s", sh.name,
							 side ? "two-table" : "self", ts[i], k, gt.strategy, err);
					SJ_CHECK(strcmp(gt.strategy, "co-processing (cpu filter, gpu verify)") == 0,
							 "%s: forced co-processing, ran %s", sh.name, gt.strategy);
					if (side == 0 && k == 0)
						printf("     %s, t %.2f: %llu batches, %llu re-runs\n", sh.name,
							   ts[i], (unsigned long long) gt.batches,
							   (unsigned long long) gt.reruns);
				}
			}
		tj_free(&L);
		tj_free(&R);
	}
	sjgpu_jaccard_set_test_strategy(0, 0);
	sjgpu_jaccard_set_test_coproc(0, 0);
}

/*
 * No device index fits (its list offsets alone, 8 bytes per distinct
 * token, exceed the limit), but the resident sets and co-processing's
 * batches do: the automatic choice runs co-processing instead of giving
 * up, and answers as the CPU engine.
 */
SJ_TEST(jaccard_gpu_coproc_no_index)
{
	TjRng		r = tj_rng(1717);
	TjShape		sh = {"small sets, 200K tokens", 6000, 1, 10, 200000, 0, 5, 20, 0, 0};
	TjSets		L;
	double		ts[] = {0.5, 0.9};
	size_t		i,
				resident,
				lists;
	uint64_t	k;
	uint8_t    *present;
	uint32_t	distinct = 0;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	tj_generate(&L, &sh, 0, sh.universe, &r);
	present = calloc(sh.universe, 1);
	for (k = 0; k < L.off[L.n]; k++)
	{
		distinct += !present[L.tok[k]];
		present[L.tok[k]] = 1;
	}
	free(present);
	SJ_CHECK(distinct >= 8192, "only %u distinct tokens", distinct);
	/* sets, member counts and bounds stay; the index lists would not fit */
	resident = L.off[L.n] * 4 + (size_t) L.n * 12 + (8 << 10);
	lists = ((size_t) distinct + 2) * 8;
	for (i = 0; i < 2; i++)
	{
		SjJoinOptions o = tj_options(2, 100, (int) i);
		SjTimings	gt;
		const char *err;

		o.gpu_memory_limit = resident + lists / 2;
		memset(&gt, 0, sizeof(gt));
		err = tj_gpu_vs_cpu(&L, NULL, ts[i], o, &gt);
		SJ_CHECK(err == NULL, "threshold %g (%s): %s", ts[i], gt.strategy, err);
		SJ_CHECK(strcmp(gt.strategy, "co-processing (cpu filter, gpu verify)") == 0,
				 "threshold %g: chose %s", ts[i], gt.strategy);
		printf("     no index in %zu KB, t %.1f: %s, %llu device bytes\n",
			   o.gpu_memory_limit >> 10, ts[i], gt.strategy,
			   (unsigned long long) gt.device_bytes);
	}
	tj_free(&L);
}

/*
 * Large sets over a small universe: the cost model picks the bitmap
 * filter, with exact signatures, and its answer is the CPU engine's.
 */
SJ_TEST(jaccard_gpu_bitmap_chosen)
{
	TjRng		r = tj_rng(1313);
	TjShape		sh = {"large sets, small universe", 3000, 60, 160, 400, 0, 5, 30, 0, 0};
	TjSets		L;
	double		ts[] = {0.3, 0.6};
	size_t		i;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	tj_generate(&L, &sh, 0, sh.universe, &r);
	for (i = 0; i < 2; i++)
	{
		SjTimings	gt;
		const char *err;

		memset(&gt, 0, sizeof(gt));
		err = tj_gpu_vs_cpu(&L, NULL, ts[i], tj_options(2, 0, (int) i), &gt);
		SJ_CHECK(err == NULL, "threshold %g (%s): %s", ts[i], gt.strategy, err);
		SJ_CHECK(strncmp(gt.strategy, "gpu bitmap (512 bits, exact)", 28) == 0,
				 "threshold %g: chose %s", ts[i], gt.strategy);
		printf("     large sets over 400 tokens, t %.1f: %s\n", ts[i], gt.strategy);
	}
	tj_free(&L);
}

/* Exact boundaries and degenerate inputs on the GPU. */
SJ_TEST(jaccard_gpu_boundaries)
{
	static const double ts[] = {0.5, 0.7, 0.9, 2.0 / 3.0, 1.0 / 3.0, 1.0, 0.1};
	TjRng		r = tj_rng(707);
	TjSets		s,
				none,
				one;
	uint32_t	t3[] = {2, 4, 6};
	size_t		i;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	tj_boundary_sets(&s, &r);
	tj_init(&none, 10);
	tj_init(&one, 10);
	tj_add(&one, t3, 3);
	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
	{
		const char *err = tj_gpu_vs_cpu(&s, NULL, ts[i], tj_options(1, 0, 0), NULL);

		SJ_CHECK(err == NULL, "boundaries, threshold %.17g: %s", ts[i], err);
		err = tj_gpu_vs_cpu(&s, &s, ts[i], tj_options(1, 0, 0), NULL);
		SJ_CHECK(err == NULL, "boundaries two-table, threshold %.17g: %s", ts[i], err);
		err = tj_gpu_vs_cpu(&none, NULL, ts[i], tj_options(1, 0, 0), NULL);
		SJ_CHECK(err == NULL, "n = 0: %s", err);
		err = tj_gpu_vs_cpu(&one, &none, ts[i], tj_options(1, 0, i % 2), NULL);
		SJ_CHECK(err == NULL, "1 x 0: %s", err);
		err = tj_gpu_vs_cpu(&one, &one, ts[i], tj_options(1, 1, 0), NULL);
		SJ_CHECK(err == NULL, "1 x 1: %s", err);
	}
	tj_free(&s);
	tj_free(&none);
	tj_free(&one);
}

/*
 * A small device-memory limit: index partitions, output overflow and
 * re-runs, tiny batches.
 */
SJ_TEST(jaccard_gpu_small_memory)
{
	TjRng		r = tj_rng(808);
	TjShape		sh = {"zipf", 6000, 1, 24, 3000, 1, 20, 30, 1, 0};
	TjSets		L;
	double		ts[] = {0.2, 0.5, 0.8};
	size_t		i;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	tj_generate(&L, &sh, 0, sh.universe, &r);
	for (i = 0; i < 3; i++)
	{
		SjJoinOptions o = tj_options(2, i == 1 ? 1 : 777, 0);
		SjTimings	gt;
		const char *err;

		o.gpu_memory_limit = (size_t) 3 << 19;
		memset(&gt, 0, sizeof(gt));
		err = tj_gpu_vs_cpu(&L, NULL, ts[i], o, &gt);
		SJ_CHECK(err == NULL, "threshold %g (%s): %s", ts[i], gt.strategy, err);
		printf("     small memory, t %.1f: %s, %llu batches, %llu re-runs, %llu device bytes\n",
			   ts[i], gt.strategy, (unsigned long long) gt.batches,
			   (unsigned long long) gt.reruns, (unsigned long long) gt.device_bytes);
	}
	tj_free(&L);
}

/*
 * Tiny device-memory limits on a shape where one probe has hundreds of
 * partners at low thresholds: the output buffer is at its minimum, so a
 * single probe overflows and its candidate range is split.  The smallest
 * limits may not fit at all (SJ_ERR_DEVICE_NOMEM is then the right answer);
 * from 256 KB up the join must run and match the CPU.
 */
SJ_TEST(jaccard_gpu_tiny_memory)
{
	static const size_t extra[] = {24 << 10, 40 << 10, 64 << 10, 128 << 10, 512 << 10};
	TjRng		r = tj_rng(1010);
	TjShape		sh = {"common token", 3000, 1, 12, 300, 0, 2, 3, 0, 1};
	TjSets		L;
	double		ts[] = {0.1, 0.25};
	size_t		i,
				k,
				resident;
	char		nomem[32];

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	snprintf(nomem, sizeof(nomem), "status %d:", SJ_ERR_DEVICE_NOMEM);
	tj_generate(&L, &sh, 0, sh.universe, &r);
	/* what the engine keeps on the device for the whole join */
	resident = L.off[L.n] * 4 + (size_t) L.n * 12 + (8 << 10);
	for (i = 0; i < 2; i++)
		for (k = 0; k < sizeof(extra) / sizeof(extra[0]); k++)
		{
			SjJoinOptions o = tj_options(2, 1000, 0);
			SjTimings	gt;
			const char *err;
			int			last = k + 1 == sizeof(extra) / sizeof(extra[0]);

			o.gpu_memory_limit = resident + extra[k];
			memset(&gt, 0, sizeof(gt));
			err = tj_gpu_vs_cpu(&L, NULL, ts[i], o, &gt);
			if (err && !last && strstr(err, nomem))
			{
				printf("     tiny memory, t %.2f, %zu KB: does not fit (%.80s)\n",
					   ts[i], o.gpu_memory_limit >> 10, err);
				continue;
			}
			SJ_CHECK(err == NULL, "limit %zu, threshold %g (%s): %s",
					 o.gpu_memory_limit, ts[i], gt.strategy, err);
			printf("     tiny memory, t %.2f, %zu KB: %s, %llu re-runs, %llu device bytes\n",
				   ts[i], o.gpu_memory_limit >> 10, gt.strategy,
				   (unsigned long long) gt.reruns, (unsigned long long) gt.device_bytes);
		}
	tj_free(&L);
}

/*
 * The GPU preparation against the host's, array by array: the distinct
 * sets (offsets, tokens, lengths), the renumbered universe, member offsets,
 * lists and weights per side, and the bounds derived from them.
 */
#define TJ_SAME(name, got, want, n) \
	do { \
		uint64_t	i_; \
		for (i_ = 0; i_ < (uint64_t) (n); i_++) \
			if ((got)[i_] != (want)[i_]) \
			{ \
				snprintf(why, sizeof(why), "%s[%llu] = %llu, host %llu", (name), \
						 (unsigned long long) i_, (unsigned long long) (got)[i_], \
						 (unsigned long long) (want)[i_]); \
				return why; \
			} \
	} while (0)

static const char *
tj_prepared_diff(const SjJaccardJoin *g, const SjJaccardJoin *h, int two_table)
{
	static char why[256];
	SjJaccardPrepared x,
				y;
	uint32_t	gm,
				hm;
	const uint32_t *gminov,
			   *gminsize,
			   *gstart,
			   *hminov,
			   *hminsize,
			   *hstart;
	int			side;

	sj_jaccard_prepared_view(g, &x);
	sj_jaccard_prepared_view(h, &y);
	if (x.nsets != y.nsets || x.universe != y.universe || x.maxsize != y.maxsize)
	{
		snprintf(why, sizeof(why), "nsets %u universe %u maxsize %u, host %u %u %u",
				 x.nsets, x.universe, x.maxsize, y.nsets, y.universe, y.maxsize);
		return why;
	}
	if (y.nsets > 0)
	{
		TJ_SAME("off", x.off, y.off, (uint64_t) y.nsets + 1);
		TJ_SAME("len", x.len, y.len, y.nsets);
		TJ_SAME("tok", x.tok, y.tok, y.off[y.nsets]);
		for (side = 0; side < 2; side++)
		{
			if ((x.moff[side] == NULL) != (y.moff[side] == NULL) ||
				(x.mem[side] == NULL) != (y.mem[side] == NULL) ||
				(x.weight[side] == NULL) != (y.weight[side] == NULL) ||
				(y.moff[side] == NULL) != (side == 1 && !two_table))
			{
				snprintf(why, sizeof(why), "side %d: member arrays present differ", side);
				return why;
			}
			if (y.moff[side] == NULL)
				continue;
			TJ_SAME(side ? "weight[1]" : "weight[0]", x.weight[side], y.weight[side], y.nsets);
			TJ_SAME(side ? "moff[1]" : "moff[0]", x.moff[side], y.moff[side],
					(uint64_t) y.nsets + 1);
			TJ_SAME(side ? "mem[1]" : "mem[0]", x.mem[side], y.mem[side],
					y.moff[side][y.nsets]);
		}
	}
	sj_jaccard_prepared_bounds(g, &gm, &gminov, &gminsize, &gstart);
	sj_jaccard_prepared_bounds(h, &hm, &hminov, &hminsize, &hstart);
	TJ_SAME("minov", gminov, hminov, 2 * (uint64_t) hm + 1);
	TJ_SAME("minsize", gminsize, hminsize, (uint64_t) hm + 1);
	TJ_SAME("size_start", gstart, hstart, (uint64_t) hm + 2);
	return NULL;
}

/*
 * Prepare on the host and through the GPU engine's preparation; the same
 * status and message, and the same arrays.  want_device: 1 the device must
 * have prepared, 0 the host must have (fallback), -1 either.
 */
static const char *
tj_prepare_both(const TjSets *L, const TjSets *R, double t, SjJoinOptions o,
				int want_device)
{
	static char why[512];
	SjSets		l = tj_view(L),
				r;
	SjJaccardJoin *h = NULL,
			   *g = NULL;
	char		herr[SJ_ERRMSG_LEN] = "",
				gerr[SJ_ERRMSG_LEN] = "";
	int			dev = -1;
	SjStatus	hs,
				gs;
	const char *err = NULL;

	if (R)
		r = tj_view(R);
	hs = sj_jaccard_prepare(&l, R ? &r : NULL, t, &o, &h, herr);
	gs = sjgpu_jaccard_test_prepare(&l, R ? &r : NULL, t, &o, &g, &dev, gerr);
	if (hs != gs || (hs != SJ_OK && strcmp(herr, gerr) != 0))
	{
		snprintf(why, sizeof(why), "status %d (%.200s), host %d (%.200s)", gs, gerr, hs, herr);
		err = why;
	}
	else if (hs == SJ_OK && want_device >= 0 && dev != want_device)
	{
		snprintf(why, sizeof(why), "prepared on the %s", dev ? "device" : "host");
		err = why;
	}
	else if (hs == SJ_OK)
		err = tj_prepared_diff(g, h, R != NULL);
	sj_jaccard_cpu_end(h);
	sj_jaccard_cpu_end(g);
	return err;
}

/* Does an input pair have tokens (else the host prepares: nothing to do)? */
static int
tj_has_tokens(const TjSets *L, const TjSets *R)
{
	return L->off[L->n] > 0 || (R && R->off[R->n] > 0);
}

SJ_TEST(jaccard_gpu_prepare)
{
	static const double ts[] = {0.5, 0.7, 0.9, 1.0, 0.1};
	TjRng		r = tj_rng(1414);
	size_t		s;
	const char *err;

	if (!sj_test_gpu_usable() || !sjgpu_jaccard_test_prepare)
	{
		sj_test_skip("no usable GPU");
		return;
	}

	/* every shape: self, two-table over identical, overlapping, disjoint universes */
	for (s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;
		int			mode = (int) (s % 3);
		uint32_t	dict = sh.universe * 2;
		double		t = ts[s % 5];
		SjJoinOptions o = tj_options(1 + (int) (s % 4), 0, 0);

		tj_generate(&L, &sh, 0, dict, &r);
		sh.n = sh.n / 2 + 3;
		tj_generate(&R, &sh, mode == 0 ? 0 : mode == 1 ? sh.universe / 2 : sh.universe,
					dict, &r);
		if (mode == 0 && L.n > 3)
		{
			uint32_t	i;

			for (i = 0; i < 3; i++)
			{
				uint32_t	src = tj_below(&r, L.n);

				tj_add(&R, L.tok + L.off[src], (uint32_t) (L.off[src + 1] - L.off[src]));
			}
		}
		err = tj_prepare_both(&L, NULL, t, o, tj_has_tokens(&L, NULL));
		SJ_CHECK(err == NULL, "%s self: %s", sh.name, err);
		err = tj_prepare_both(&L, &R, t, o, tj_has_tokens(&L, &R));
		SJ_CHECK(err == NULL, "%s two-table (universes %s): %s", sh.name,
				 mode == 0 ? "identical" : mode == 1 ? "overlapping" : "disjoint", err);
		err = tj_prepare_both(&R, &L, t, o, tj_has_tokens(&R, &L));
		SJ_CHECK(err == NULL, "%s two-table, sides swapped: %s", sh.name, err);
		err = tj_prepare_both(&L, &L, t, o, tj_has_tokens(&L, &L));
		SJ_CHECK(err == NULL, "%s joined with itself as two tables: %s", sh.name, err);

		/* a device budget far too small: the host prepares, the same arrays */
		o.gpu_memory_limit = (size_t) 64 << 10;
		err = tj_prepare_both(&L, &R, t, o, 0);
		SJ_CHECK(err == NULL, "%s, 64 KB device budget: %s", sh.name, err);
		tj_free(&L);
		tj_free(&R);
	}

	/* colliding grouping keys (see tj_collision_sets), also through the join */
	{
		TjSets		S,
					L,
					R;
		double		t;

		tj_collision_sets(&S, -1);
		tj_collision_sets(&L, 0);
		tj_collision_sets(&R, 1);
		err = tj_prepare_both(&S, NULL, 0.5, tj_options(2, 0, 0), 1);
		SJ_CHECK(err == NULL, "hash collision, self: %s", err);
		err = tj_prepare_both(&L, &R, 0.5, tj_options(2, 0, 0), 1);
		SJ_CHECK(err == NULL, "hash collision, two-table: %s", err);
		for (t = 0.5; t <= 1.0; t += 0.5)
		{
			err = tj_gpu_vs_cpu(&S, NULL, t, tj_options(2, 0, 0), NULL);
			SJ_CHECK(err == NULL, "hash collision, self join at %g: %s", t, err);
			err = tj_gpu_vs_cpu(&L, &R, t, tj_options(2, 0, 0), NULL);
			SJ_CHECK(err == NULL, "hash collision, two-table join at %g: %s", t, err);
		}
		tj_free(&S);
		tj_free(&L);
		tj_free(&R);
	}

	/* huge sets (segmented sort of long segments), many duplicates */
	{
		TjShape		sh = {"huge sets", 60, 1000, 5000, 50000, 1, 20, 20, 5, 0};
		TjSets		L,
					R;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		sh.n = 30;
		tj_generate(&R, &sh, 0, sh.universe, &r);
		err = tj_prepare_both(&L, &R, 0.8, tj_options(4, 0, 0), 1);
		SJ_CHECK(err == NULL, "huge sets: %s", err);
		tj_free(&L);
		tj_free(&R);
	}

	/* a larger Zipf input (the host's parallel counting), 4 threads */
	{
		TjShape		sh = {"zipf big", 120000, 1, 20, 20000, 1, 10, 20, 1, 0};
		TjSets		L;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		err = tj_prepare_both(&L, NULL, 0.75, tj_options(4, 0, 0), 1);
		SJ_CHECK(err == NULL, "zipf big: %s", err);
		tj_free(&L);
	}

	/* a sparse universe: the host's dictionary, the device's binary search */
	{
		TjShape		sh = tj_shapes[2];
		TjSets		L;
		uint64_t	k;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		L.universe = 2000000000u;
		for (k = 0; k < L.off[L.n]; k++)
			L.tok[k] = L.tok[k] * 997u + 13u;
		err = tj_prepare_both(&L, NULL, 0.6, tj_options(2, 0, 0), 1);
		SJ_CHECK(err == NULL, "sparse universe: %s", err);
		err = tj_prepare_both(&L, &L, 0.6, tj_options(2, 0, 0), 1);
		SJ_CHECK(err == NULL, "sparse universe, two-table: %s", err);
		tj_free(&L);
	}

	/* degenerate inputs: n = 0 on either side, only empty sets, one set */
	{
		TjSets		none,
					one,
					empties,
					two;
		uint32_t	t3[] = {1, 5, 9};
		const TjSets *cases[][2] = {
			{&none, NULL}, {&one, NULL}, {&empties, NULL}, {&none, &one},
			{&one, &none}, {&one, &one}, {&empties, &empties}, {&two, &one},
			{&empties, &two}, {&two, &empties},
		};
		size_t		c;

		tj_init(&none, 10);
		tj_init(&one, 10);
		tj_add(&one, t3, 3);
		tj_init(&empties, 10);
		tj_add(&empties, t3, 0);
		tj_add(&empties, t3, 0);
		tj_init(&two, 12);
		tj_add(&two, t3, 0);
		tj_add(&two, t3, 3);
		tj_add(&two, t3, 3);
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		{
			err = tj_prepare_both(cases[c][0], cases[c][1], 0.5, tj_options(1, 0, 0),
								  tj_has_tokens(cases[c][0], cases[c][1]));
			SJ_CHECK(err == NULL, "degenerate case %zu: %s", c, err);
		}
		tj_free(&none);
		tj_free(&one);
		tj_free(&empties);
		tj_free(&two);
	}

	/* invalid inputs: the host's status and message */
	{
		uint64_t	off[] = {0, 2, 4};
		uint64_t	bad_off[] = {0, 3, 2};
		uint32_t	bad_order[] = {3, 1, 2, 5};
		uint32_t	ok[] = {1, 3, 2, 5};
		TjSets		good,
					b,
					small,
					dec;

		memset(&good, 0, sizeof(good));
		good.n = 2;
		good.universe = 10;
		good.off = off;
		good.tok = ok;
		b = good;
		b.tok = bad_order;
		small = good;
		small.universe = 4;
		dec = good;
		dec.off = bad_off;
		err = tj_prepare_both(&good, NULL, 0.0, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "threshold 0: %s", err);
		err = tj_prepare_both(&b, NULL, 0.5, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "unsorted tokens: %s", err);
		err = tj_prepare_both(&good, &small, 0.5, tj_options(2, 0, 0), -1);
		SJ_CHECK(err == NULL, "token beyond the universe: %s", err);
		err = tj_prepare_both(&dec, &good, 0.5, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "decreasing offsets: %s", err);
	}
}

/* ----------------------------------------------------------------------
 * Timing mode
 * ---------------------------------------------------------------------- */

static int
tj_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Time one join to the end (pairs drained, not kept); ms, or < 0. */
static double tj_time_limit_ms = 0;	/* > 0: give up a run after this long */

static double
tj_time(TjEngine eng, const TjSets *L, double t, const SjJoinOptions *o,
		uint64_t *pairs, SjTimings *tm)
{
	char		errmsg[SJ_ERRMSG_LEN];
	SjSets		lv = tj_view(L);
	SjJaccardJoin *cj = NULL;
	SjGpuJaccardJoin *gj = NULL;
	SjStatus	st;
	int			done = 0;
	double		t0 = sj_now_ms();

	*pairs = 0;
	st = eng == TJ_CPU ? sj_jaccard_cpu_begin(&lv, NULL, t, o, &cj, errmsg)
		: sjgpu_jaccard_begin(&lv, NULL, t, o, &gj, errmsg);
	while (st == SJ_OK && !done)
	{
		SjPairBatch b;

		st = eng == TJ_CPU ? sj_jaccard_cpu_next(cj, &b, &done, errmsg)
			: sjgpu_jaccard_next(gj, &b, &done, errmsg);
		*pairs += b.count;
		if (tj_time_limit_ms > 0 && sj_now_ms() - t0 > tj_time_limit_ms)
			break;
	}
	if (st != SJ_OK)
		printf("     error %d: %s\n", st, errmsg);
	if (eng == TJ_CPU)
		sj_jaccard_cpu_timings(cj, tm);
	else
		sjgpu_jaccard_timings(gj, tm);
	sj_jaccard_cpu_end(cj);
	sjgpu_jaccard_end(gj);
	if (st == SJ_OK && !done)
		return -2.0;			/* over tj_time_limit_ms */
	return st == SJ_OK ? sj_now_ms() - t0 : -1.0;
}

SJ_TEST(jaccard_bench)
{
	uint32_t	avgs[4] = {5, 25};
	double		ts[8] = {0.5, 0.7, 0.9};
	size_t		navgs = 2,
				nts = 3;
	TjRng		r = tj_rng(909);
	int			threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	const char *nenv = getenv("SJ_JACCARD_BENCH_N");
	const char *thenv = getenv("SJ_JACCARD_BENCH_THREADS");
	const char *tenv = getenv("SJ_JACCARD_BENCH_T");
	const char *aenv = getenv("SJ_JACCARD_BENCH_AVG");
	const char *uenv = getenv("SJ_JACCARD_BENCH_UNIVERSE");
	int			pairs_run = getenv("SJ_JACCARD_BENCH_COUNT_ONLY") == NULL;
	int			cpu_only = getenv("SJ_JACCARD_BENCH_CPU_ONLY") != NULL;
	uint32_t	nsets = nenv ? (uint32_t) atol(nenv) : 1000000;
	uint32_t	universe = uenv && atol(uenv) > 1 ? (uint32_t) atol(uenv) : 50000;
	size_t		a,
				i;

	/* knobs for a per-core comparison: threads, thresholds, sizes */
	if (thenv)
		threads = atoi(thenv) > 0 ? atoi(thenv) : 1;
	if (tenv)
	{
		char	   *end;
		const char *p = tenv;

		for (nts = 0; nts < 8 && *p; p = *end ? end + 1 : end)
			ts[nts++] = strtod(p, &end);
	}
	if (aenv)
	{
		char	   *end;
		const char *p = aenv;

		for (navgs = 0; navgs < 4 && *p; p = *end ? end + 1 : end)
			avgs[navgs++] = (uint32_t) strtoul(p, &end, 10);
	}

	if (getenv("SJ_JACCARD_BENCH") == NULL)
	{
		sj_test_skip("set SJ_JACCARD_BENCH=1 to run");
		return;
	}
	printf("     %u Zipf sets over %u tokens, %d CPU threads; count_only: warm-up + median of up to 3; pairs: one run\n",
		   nsets, universe, threads);
	printf("     engine  avg  t    pairs       count ms (runs)  build ms  pairs ms  strategy\n");
	for (a = 0; a < navgs; a++)
	{
		TjShape		sh = {"bench", nsets, 1, 2 * avgs[a] - 1, universe, 1, 0, 0, 0, 0};
		TjSets		L;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		for (i = 0; i < nts; i++)
		{
			int			e;

			for (e = 0; e < 2; e++)
			{
				SjJoinOptions o = tj_options(threads, 0, 1);
				TjEngine	eng = e ? TJ_GPU : TJ_CPU;
				double		ms[4],
							full;
				int			runs = 0,
							k;
				uint64_t	pairs = 0,
							counted = 0;
				SjTimings	tm;

				if (e == 1 && (cpu_only || !sj_test_gpu_usable()))
					continue;
				memset(&tm, 0, sizeof(tm));
				/* warm-up, then up to three timed runs within a budget */
				ms[0] = tj_time(eng, &L, ts[i], &o, &counted, &tm);
				for (k = 0; k < 3 && ms[0] >= 0 && ms[0] < 5000; k++)
					ms[runs++] = tj_time(eng, &L, ts[i], &o, &counted, &tm);
				if (runs == 0)
					runs = 1;
				qsort(ms, runs, sizeof(double), tj_cmp_double);
				if (e == 1 && sjgpu_jaccard_test_phases)
				{
					double		ph[7];

					sjgpu_jaccard_test_phases(ph);
					printf("     gpu phases of the last count run (ms): prepare %.1f, strategy %.1f, "
						   "memory %.1f, index %.1f, estimate %.1f, device waits %.1f; "
						   "cudaMalloc/cudaFree %.1f\n",
						   ph[0], ph[1], ph[2], ph[3], ph[4], ph[5], ph[6]);
				}
				o.count_only = 0;
				full = -1;
				pairs = counted;
				if (pairs_run)
					full = tj_time(eng, &L, ts[i], &o, &pairs, &tm);
				printf("     %-6s %4u  %.1f  %10llu  %10.1f (%d)  %8.1f  %8.1f  %s%s\n",
					   e ? "gpu" : "cpu", avgs[a], ts[i], (unsigned long long) pairs,
					   ms[runs / 2], runs, tm.build_ms, full, tm.strategy,
					   counted == pairs ? "" : "  COUNT MISMATCH");
				fflush(stdout);
			}
		}
		tj_free(&L);
	}
}

/*
 * The GPU strategies side by side (SJ_JACCARD_BENCH=1): each forced in
 * turn (co-processing last), the cost model's own choice, and the CPU
 * engine, counting, one
 * run each after a warm-up of the automatic choice.  A run is given up
 * after 10 s (shown as > 10000); a strategy that gave up is not run again
 * at higher thresholds of that collection.
 * Shows whether the cost model picks the fastest.
 */
SJ_TEST(jaccard_strategy_bench)
{
	static const TjShape shapes[] = {
		{"30K sets, size 50-150, 1000 tokens", 30000, 50, 150, 1000, 0, 0, 0, 0, 0},
		{"300K sets, size 5-45, 2000 tokens Zipf", 300000, 5, 45, 2000, 1, 0, 0, 0, 0},
		{"1M sets, size 1-9, 50K tokens Zipf", 1000000, 1, 9, 50000, 1, 0, 0, 0, 0},
		{"10K sets, size 100-400, Zipf, near dups", 10000, 100, 400, 50000, 1, 0, 40, 0, 0},
	};
	static const double ts[] = {0.5, 0.7, 0.9};
	TjRng		r = tj_rng(1414);
	int			threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	size_t		s,
				i;

	if (getenv("SJ_JACCARD_BENCH") == NULL)
	{
		sj_test_skip("set SJ_JACCARD_BENCH=1 to run");
		return;
	}
	if (!sj_test_gpu_usable() || !sjgpu_jaccard_set_test_strategy)
	{
		sj_test_skip("no usable GPU");
		return;
	}
	printf("     count_only, ms of one run; %d CPU threads\n", threads);
	printf("     %-40s %4s %12s %9s %9s %9s %9s %9s %9s  %s\n", "collection", "t", "pairs",
		   "cpu", "auto", "prefix", "brute", "bitmap", "coproc", "auto chose");
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		TjSets		L;
		int			slow[5] = {0, 0, 0, 0, 0};

		tj_generate(&L, &shapes[s], 0, shapes[s].universe, &r);
		for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		{
			SjJoinOptions o = tj_options(threads, 0, 1);
			SjTimings	tm,
						auto_tm;
			uint64_t	cpu_pairs = 0,
						pairs = 0;
			double		cpu_ms,
						ms[5];
			int			f;
			const char *mismatch = "";

			memset(&tm, 0, sizeof(tm));
			memset(&auto_tm, 0, sizeof(auto_tm));
			tj_time_limit_ms = 10000;
			cpu_ms = tj_time(TJ_CPU, &L, ts[i], &o, &cpu_pairs, &tm);
			sjgpu_jaccard_set_test_strategy(0, 0);
			(void) tj_time(TJ_GPU, &L, ts[i], &o, &pairs, &tm);	/* warm-up */
			for (f = 0; f < 5; f++)
			{
				ms[f] = -1;
				if (slow[f])
					continue;
				sjgpu_jaccard_set_test_strategy(f, 0);
				memset(&tm, 0, sizeof(tm));
				ms[f] = tj_time(TJ_GPU, &L, ts[i], &o, &pairs, &tm);
				if (f == 0)
					auto_tm = tm;
				if (ms[f] >= 0 && cpu_ms >= 0 && pairs != cpu_pairs)
					mismatch = "  COUNT MISMATCH";
				if (ms[f] == -2.0)
					slow[f] = 1;
			}
			sjgpu_jaccard_set_test_strategy(0, 0);
			tj_time_limit_ms = 0;
			printf("     %-40s %4.1f %12llu", shapes[s].name, ts[i],
				   (unsigned long long) cpu_pairs);
			for (f = -1; f < 5; f++)
			{
				double		m = f < 0 ? cpu_ms : ms[f];

				if (m == -2.0)
					printf(" %9s", "> 10000");
				else if (m < 0)
					printf(" %9s", "-");
				else
					printf(" %9.1f", m);
			}
			printf("  %s%s\n", auto_tm.strategy, mismatch);
			SJ_CHECK(*mismatch == '\0', "%s t %g: a GPU strategy counted differently",
					 shapes[s].name, ts[i]);
			fflush(stdout);
		}
		tj_free(&L);
	}
}
