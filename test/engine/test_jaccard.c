/*
 * test_jaccard.c
 *		Engine tests of jaccard_join: the CPU engine against an independent
 *		brute-force oracle; the GPU engine against the CPU engine is in
 *		test_jaccard_gpu.c, the benchmarks in test_jaccard_bench.c.
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
 * SJ_JACCARD_BENCH_CPU_ONLY=1 leaves out the GPU, SJ_JACCARD_BENCH_GPU_ONLY=1
 * the CPU engine, and
 * SJ_JACCARD_BENCH_COUNT_ONLY=1 leaves out the run that forms the pairs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjaccard.h"

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
 * Tokens in any order, as the SQL adapter hands them over: the same pairs
 * and similarities as the sorted sets give the oracle, self and two-table,
 * counted and formed, on 1 and 3 threads.  Sets of more than 128 tokens
 * take the check's sorted copy.
 */
SJ_TEST(jaccard_cpu_unsorted)
{
	TjRng		r = tj_rng(151);
	size_t		s;

	for (s = 0; s < TJ_NSHAPES; s++)
	{
		const TjShape *sh = &tj_shapes[s];
		TjUnsorted	u;
		size_t		ti;

		tj_unsorted_make(&u, sh, &r);
		for (ti = 0; ti < TJ_NTHRESH; ti += 2)
		{
			double		t = tj_thresholds[ti];
			int			two;

			/* the input check with the threads' stamps, and pairwise (a sorted copy past 128) */
			sj_jaccard_set_test_check_stamps(ti % 4 == 0);

			for (two = 0; two < 2; two++)
			{
				TjList		want = {0},
							got = {0};
				SjJoinOptions o = tj_options(1 + 2 * two, 0, 0);
				uint64_t	count = 0;
				const char *err;

				tj_oracle(&u.L, two ? &u.R : NULL, t, &want);
				err = tj_run(TJ_CPU, &u.Ls, two ? &u.Rs : NULL, t, &o, &got, &count, NULL);
				if (!err)
					err = tj_compare(&want, &got);
				SJ_CHECK(err == NULL, "%s %s, threshold %g: %s", sh->name,
						 two ? "two-table" : "self", t, err);
				o = tj_options(2, 0, 1);
				err = tj_run(TJ_CPU, &u.Ls, two ? &u.Rs : NULL, t, &o, &got, &count, NULL);
				SJ_CHECK(err == NULL && count == want.n, "%s %s, threshold %g: count %llu, expected %zu (%s)",
						 sh->name, two ? "two-table" : "self", t,
						 (unsigned long long) count, want.n, err ? err : "");
				free(want.p);
				free(got.p);
			}
		}
		tj_unsorted_free(&u);
	}
	sj_jaccard_set_test_check_stamps(1);
}

/*
 * The same set in three orders (and a fourth set) is one distinct set of
 * three members: the preparation groups sets whatever their order.
 */
SJ_TEST(jaccard_cpu_unsorted_groups)
{
	uint64_t	off[] = {0, 4, 8, 12, 15};
	uint32_t	tok[] = {7, 2, 9, 4, 4, 9, 2, 7, 9, 7, 4, 2, 1, 2, 3};
	SjSets		s = {4, 10, off, tok};
	SjJoinOptions o = tj_options(2, 0, 0);
	SjJaccardJoin *j = NULL;
	char		errmsg[SJ_ERRMSG_LEN];
	uint32_t	nsets = 0,
				universe = 0;
	const uint64_t *poff;
	const uint32_t *ptok,
			   *wl,
			   *wr;
	uint32_t	d,
				three = 0;

	SJ_CHECK(sj_jaccard_prepare(&s, NULL, 0.5, &o, &j, errmsg) == SJ_OK && j != NULL,
			 "prepare: %s", errmsg);
	if (j == NULL)
		return;
	sj_jaccard_prepared_sets(j, &nsets, &universe, &poff, &ptok, &wl, &wr);
	SJ_CHECK(nsets == 2, "%u distinct sets, expected 2", nsets);
	for (d = 0; d < nsets; d++)
	{
		uint64_t	k;

		for (k = poff[d] + 1; k < poff[d + 1]; k++)
			SJ_CHECK(ptok[k] > ptok[k - 1], "distinct set %u not sorted", d);
		if (wl[d] == 3)
			three++;
	}
	SJ_CHECK(three == 1, "no distinct set of three members");
	sj_jaccard_cpu_end(j);
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
			exact += want.p[k].d == ts[i];
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
	uint32_t	repeated[] = {3, 3, 2, 5};
	uint32_t	ok[] = {3, 1, 2, 5};	/* in any order: distinct is enough */
	SjSets		s = {2, 10, off, ok};
	SjSets		b = {2, 10, off, repeated};
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
			 "a repeated token accepted");
	SJ_CHECK(strstr(errmsg, "set 0") != NULL, "message without the set: %s", errmsg);
	/* the same without the thread's stamps: pairwise */
	sj_jaccard_set_test_check_stamps(0);
	SJ_CHECK(sj_jaccard_cpu_begin(&b, NULL, 0.5, &o, &j, errmsg) == SJ_ERR_INVALID,
			 "a repeated token accepted (pairwise)");
	SJ_CHECK(sj_jaccard_cpu_begin(&s, NULL, 0.5, &o, &j, errmsg) == SJ_OK && j != NULL,
			 "distinct unsorted tokens refused (pairwise): %s", errmsg);
	sj_jaccard_cpu_end(j);
	j = NULL;
	sj_jaccard_set_test_check_stamps(1);
	{
		/* 200 tokens, descending, one repeated: the stamps, and the sorted copy */
		uint64_t	loff[] = {0, 200};
		uint32_t	big[200];
		SjSets		bs = {1, 1000, loff, big};
		int			stamps;

		for (int k = 0; k < 200; k++)
			big[k] = 900 - 3 * k;
		for (stamps = 1; stamps >= 0; stamps--)
		{
			sj_jaccard_set_test_check_stamps(stamps);
			SJ_CHECK(sj_jaccard_cpu_begin(&bs, NULL, 0.5, &o, &j, errmsg) == SJ_OK && j != NULL,
					 "200 distinct descending tokens refused (stamps %d): %s", stamps, errmsg);
			sj_jaccard_cpu_end(j);
			j = NULL;
			big[150] = big[20];
			SJ_CHECK(sj_jaccard_cpu_begin(&bs, NULL, 0.5, &o, &j, errmsg) == SJ_ERR_INVALID,
					 "a repeated token among 200 accepted (stamps %d)", stamps);
			big[150] = 900 - 3 * 150;
		}
		sj_jaccard_set_test_check_stamps(1);
	}
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
 * borrow: through a second handle borrowing the first's preparation
 * (sj_jaccard_prepare_borrowed), ended before it.
 * Returns NULL or a failure; *batches counts the calls.
 */
static const char *
tj_filter_count(const TjSets *L, const TjSets *R, double t, int threads,
				size_t cap, int borrow, uint64_t *count, uint64_t *batches)
{
	static char why[SJ_ERRMSG_LEN + 64];
	char		errmsg[SJ_ERRMSG_LEN];
	SjSets		lv = tj_view(L),
				rv;
	SjJoinOptions o = tj_options(threads, 0, 1);
	SjJaccardJoin *j = NULL,
			   *owner = NULL;
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
	if (st == SJ_OK && borrow)
	{
		owner = j;
		j = NULL;
		st = sj_jaccard_prepare_borrowed(&lv, R ? &rv : NULL, t, &o, owner, &j, errmsg);
	}
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
	sj_jaccard_cpu_end(owner);	/* after the handle that borrowed from it */
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
					int			borrow;
				}			runs[] = {{1, 1, 0}, {7, 1, 0}, {250, 4, 0}, {4096, 2, 0}, {250, 2, 1}};
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
										  runs[k].borrow, &count, &batches);
					SJ_CHECK(err == NULL, "%s %s, threshold %g, buffer %zu%s: %s", sh.name,
							 side ? "two-table" : "self", ts[ti], runs[k].cap,
							 runs[k].borrow ? ", borrowed preparation" : "", err);
					SJ_CHECK(err != NULL || count == want.n,
							 "%s %s, threshold %g, buffer %zu%s: %llu pairs, expected %zu",
							 sh.name, side ? "two-table" : "self", ts[ti], runs[k].cap,
							 runs[k].borrow ? ", borrowed preparation" : "",
							 (unsigned long long) count, want.n);
				}
			}
		tj_free(&L);
		tj_free(&R);
	}
	free(want.p);
}

/* A shared counter of group ranges, as the devices of a spread join share one. */
typedef struct TjGroupCounter
{
	long long	next;
	uint32_t	n;			/* the units every handle asked for (0: none yet) */
	int			mismatch;
} TjGroupCounter;

static long long
tj_group_claim(void *ctx, uint32_t nunits)
{
	TjGroupCounter *c = (TjGroupCounter *) ctx;

	if (c->n == 0)
		c->n = nunits;
	else if (c->n != nunits)
		c->mismatch = 1;
	return c->next < (long long) nunits ? c->next++ : -1;
}

/*
 * A group claim that fails, as a spread join's would where its devices
 * disagreed (-2) or its host ran out of memory (-3): *ctx says which.
 */
static long long
tj_group_claim_fails(void *ctx, uint32_t nunits)
{
	(void) nunits;
	return *(const long long *) ctx;
}

/*
 * The pairs inside groups of identical sets shared by several handles of
 * one join (as the devices of a spread join share them,
 * sj_jaccard_share_groups): the handles' next() calls interleaved, small
 * batches (a group's pairs cut mid-way), 1 to 64 ranges.  Every handle
 * gives all pairs of distinct sets (similarity below 1: each probes the
 * whole join here), and the pairs of similarity 1, from groups, come from
 * exactly one handle each; counted, the handles' counts add up alike.  A
 * claim that fails fails the join.
 */
SJ_TEST(jaccard_cpu_shared_groups)
{
	static const uint32_t units[] = {1, 5, 64};
	TjRng		r = tj_rng(919);
	TjList		want = {0},
				want_lt = {0},
				want_eq = {0};

	for (size_t s = 0; s < TJ_NSHAPES; s++)
	{
		TjShape		sh = tj_shapes[s];
		TjSets		L,
					R;

		if (sh.dup_pct == 0)
			continue;
		sh.n = sh.n / 2 + 5;
		tj_generate(&L, &sh, 0, sh.universe, &r);
		tj_generate(&R, &sh, 0, sh.universe, &r);
		for (uint32_t i = 0; i < 5 && L.n > 0; i++)
		{
			/* identical sets on both sides too */
			uint32_t	src = tj_below(&r, L.n);

			tj_add(&R, L.tok + L.off[src], (uint32_t) (L.off[src + 1] - L.off[src]));
		}
		for (int side = 0; side < 2; side++)
		{
			const TjSets *rs = side ? &R : NULL;
			SjSets		lv = tj_view(&L),
						rv = tj_view(&R);

			tj_oracle(&L, rs, 0.5, &want);
			want_lt.n = want_eq.n = 0;
			for (size_t i = 0; i < want.n; i++)
				sj_test_pairs_add(want.p[i].d < 1.0 ? &want_lt : &want_eq, want.p[i].l,
								  want.p[i].r, want.p[i].d);
			for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
				for (int handles = 2; handles <= 3; handles++)
					for (int count_only = 0; count_only < 2; count_only++)
					{
						SjJoinOptions o = tj_options(2, 7, count_only);
						SjJaccardJoin *h[3] = {NULL, NULL, NULL};
						TjList		lt[3] = {{0}},
									eq = {0};
						TjGroupCounter c = {0, 0, 0};
						uint64_t	count = 0;
						int			done[3] = {0, 0, 0},
									left = handles;
						char		err[SJ_ERRMSG_LEN] = "";
						const char *why = NULL;

						for (int k = 0; k < handles && !why; k++)
						{
							if (sj_jaccard_cpu_begin(&lv, rs ? &rv : NULL, 0.5, &o, &h[k],
													 err) != SJ_OK)
								why = err;
							else
								sj_jaccard_share_groups(h[k], tj_group_claim, &c, units[u]);
						}
						while (left > 0 && !why)
							for (int k = 0; k < handles && !why; k++)
							{
								SjPairBatch b;

								if (done[k])
									continue;
								if (sj_jaccard_cpu_next(h[k], &b, &done[k], err) != SJ_OK)
								{
									why = err;
									break;
								}
								left -= done[k];
								if (count_only)
									count += b.count;
								else
									for (size_t i = 0; i < b.count; i++)
										sj_test_pairs_add(b.value[i] < 1.0 ? &lt[k] : &eq,
														  b.left[i], b.right[i], b.value[i]);
							}
						for (int k = 0; k < handles; k++)
							sj_jaccard_cpu_end(h[k]);
						if (!why && c.mismatch)
							why = "the handles asked for different numbers of ranges";
						if (!why && count_only &&
							count != want_eq.n + (uint64_t) handles * want_lt.n)
						{
							snprintf(err, sizeof(err), "counted %llu, expected %zu",
									 (unsigned long long) count,
									 want_eq.n + (size_t) handles * want_lt.n);
							why = err;
						}
						for (int k = 0; k < handles && !why && !count_only; k++)
						{
							qsort(lt[k].p, lt[k].n, sizeof(TjPair), sj_test_pair_cmp);
							why = tj_compare(&want_lt, &lt[k]);
						}
						if (!why && !count_only)
						{
							qsort(eq.p, eq.n, sizeof(TjPair), sj_test_pair_cmp);
							why = tj_compare(&want_eq, &eq);
						}
						SJ_CHECK(why == NULL, "%s %s, %u ranges, %d handles%s: %s", sh.name,
								 side ? "two-table" : "self", units[u], handles,
								 count_only ? ", count" : "", why);
						for (int k = 0; k < 3; k++)
							free(lt[k].p);
						free(eq.p);
					}
		}
		tj_free(&L);
		tj_free(&R);
	}
	free(want.p);
	free(want_lt.p);
	free(want_eq.p);

	/*
	 * a claim that fails fails the join: the devices cut the groups
	 * differently (internal), or out of memory
	 */
	for (int k = 0; k < 2; k++)
	{
		static const long long why[] = {-2, -3};
		static const SjStatus want_st[] = {SJ_ERR_INTERNAL, SJ_ERR_NOMEM};
		TjShape		sh = tj_shapes[3];	/* heavy duplication */
		TjSets		L;
		SjSets		lv;
		SjJoinOptions o = tj_options(2, 0, 0);
		SjJaccardJoin *h = NULL;
		char		err[SJ_ERRMSG_LEN] = "";
		SjStatus	st = SJ_OK;
		int			done = 0;

		tj_generate(&L, &sh, 0, sh.universe, &r);
		lv = tj_view(&L);
		SJ_CHECK(sj_jaccard_cpu_begin(&lv, NULL, 0.5, &o, &h, err) == SJ_OK, "%s", err);
		sj_jaccard_share_groups(h, tj_group_claim_fails, (void *) &why[k], 4);
		while (!done && st == SJ_OK)
		{
			SjPairBatch b;

			st = sj_jaccard_cpu_next(h, &b, &done, err);
		}
		SJ_CHECK(st == want_st[k] && (k == 1 || strstr(err, "pairs inside groups") != NULL),
				 "a group claim failing with %lld: status %d, \"%s\"", why[k], st, err);
		sj_jaccard_cpu_end(h);
		tj_free(&L);
	}
}
