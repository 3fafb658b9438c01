/*
 * tjaccard.c
 *		Shared pieces of the jaccard_join engine tests (see tjaccard.h and
 *		the header of test_jaccard.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjaccard.h"

/* ----------------------------------------------------------------------
 * Random numbers and set collections
 * ---------------------------------------------------------------------- */

/* The next value of a stream (splitmix64). */
uint64_t
tj_next(TjRng *r)
{
	uint64_t	z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A value below n from a stream. */
uint32_t
tj_below(TjRng *r, uint32_t n)
{
	return n ? (uint32_t) (tj_next(r) % n) : 0;
}

/* A stream seeded from the run seed and a per-test salt. */
TjRng
tj_rng(uint64_t salt)
{
	TjRng		r;

	r.s = sj_test_seed() * 0x2545F4914F6CDD1DULL + salt;
	return r;
}

/* An empty collection over a universe. */
void
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

/* Free a collection's arrays. */
void
tj_free(TjSets *s)
{
	free(s->off);
	free(s->tok);
	memset(s, 0, sizeof(*s));
}

/* qsort order of uint32. */
static int
tj_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Append a set given in any order, with repeats (sorted, de-duplicated). */
void
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

/*
 * A copy of in whose every set holds the same tokens in a random order:
 * the order the SQL adapter hands over (distinct ids in the order of the
 * array).
 */
void
tj_shuffled(const TjSets *in, TjSets *out, TjRng *r)
{
	uint32_t	i;

	tj_init(out, in->universe);
	for (i = 0; i < in->n; i++)
	{
		uint64_t	a = in->off[i],
					b = in->off[i + 1],
					k;
		uint32_t   *dst;

		tj_add(out, in->tok + a, (uint32_t) (b - a));
		dst = out->tok + out->off[i];
		for (k = b - a; k > 1; k--)
		{
			uint32_t	j = tj_below(r, (uint32_t) k),
						t = dst[k - 1];

			dst[k - 1] = dst[j];
			dst[j] = t;
		}
	}
}

/*
 * The collections of the unsorted tests for a shape: L over a dictionary of
 * twice its universe, R half as many sets from half-way into L's universe
 * (overlapping), and both again with every set shuffled (Ls, Rs).
 */
void
tj_unsorted_make(TjUnsorted *u, const TjShape *shape, TjRng *r)
{
	TjShape		sh = *shape;

	tj_generate(&u->L, &sh, 0, sh.universe * 2, r);
	sh.n = sh.n / 2 + 1;
	tj_generate(&u->R, &sh, sh.universe / 2, sh.universe * 2, r);
	tj_shuffled(&u->L, &u->Ls, r);
	tj_shuffled(&u->R, &u->Rs, r);
}

/* Free tj_unsorted_make's collections. */
void
tj_unsorted_free(TjUnsorted *u)
{
	tj_free(&u->L);
	tj_free(&u->R);
	tj_free(&u->Ls);
	tj_free(&u->Rs);
}

/* The engine's view of a collection (no copy). */
SjSets
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

/* The cumulative distribution of Zipf(s) over n ranks. */
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

/* A Zipf-distributed rank. */
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

/* A random collection of a shape, tokens from [base, base + universe). */
void
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

/* Brute force: every pair, a plain merge, the formula of sjengine.h. */
void
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
				sj_test_pairs_add(out, i, k, sim);
		}
	}
}

/*
 * Run a join to the end, checking each batch; the pairs go to out (or the
 * count, for count_only).  Returns NULL or a description of the failure.
 */
const char *
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
			sj_test_pairs_add(out, b.left[i], b.right[i], b.value[i]);
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
	qsort(out->p, out->n, sizeof(TjPair), sj_test_pair_cmp);
	return NULL;

fail:
	sj_jaccard_cpu_end(cj);
	sjgpu_jaccard_end(gj);
	return why;
}

/* Compare two sorted lists; NULL when equal, bits of the similarity too. */
const char *
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
					 i, a->l, a->r, a->d, b->l, b->r, b->d);
			return why;
		}
		if (memcmp(&a->d, &b->d, sizeof(double)) != 0)
		{
			snprintf(why, sizeof(why), "pair (%u, %u): sim %.17g, expected %.17g",
					 a->l, a->r, b->d, a->d);
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

/* Join options for the tests: threads, batch bound, count_only. */
SjJoinOptions
tj_options(int threads, size_t max_batch, int count_only)
{
	SjJoinOptions o;

	memset(&o, 0, sizeof(o));
	o.cpu_threads = threads;
	o.max_batch_pairs = max_batch;
	o.count_only = count_only;
	return o;
}

const double tj_thresholds[] = {0.1, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};
const size_t tj_nthresh = sizeof(tj_thresholds) / sizeof(tj_thresholds[0]);

/*
 * The CPU engine on one input against the oracle at every threshold, with
 * 1 and 4 threads, default and tiny batches, and count_only.  Returns NULL
 * or a failure description.
 */
const char *
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
const TjShape tj_shapes[] = {
	{"tiny sets", 600, 1, 4, 30, 0, 5, 10, 5, 0},
	{"small sets", 800, 2, 12, 200, 0, 5, 20, 2, 0},
	{"zipf", 1000, 1, 30, 2000, 1, 5, 20, 2, 0},
	{"heavy duplication", 900, 1, 8, 60, 0, 70, 10, 3, 0},
	{"common token", 600, 1, 20, 400, 0, 5, 20, 0, 1},
	{"large sets", 150, 200, 1000, 3000, 0, 10, 40, 0, 0},
	{"mixed sizes", 400, 1, 400, 1500, 1, 10, 30, 5, 0},
	{"all empty", 50, 0, 0, 10, 0, 0, 0, 100, 0},
};
const size_t tj_nshapes = sizeof(tj_shapes) / sizeof(tj_shapes[0]);

/*
 * Pairs built to have similarity exactly 1/2, 7/10, 9/10 and 2/3 (and one
 * overlap less), joined at exactly those thresholds.
 */
void
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

void
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
