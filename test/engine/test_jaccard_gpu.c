/*
 * test_jaccard_gpu.c
 *		Engine tests of jaccard_join's GPU engine against the CPU engine:
 *		every strategy, co-processing's pipeline, small and tiny memory
 *		limits, exact boundaries, and the device preparation array by array
 *		(see the header of test_jaccard.c).  Every test skips where no GPU is
 *		usable.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjaccard.h"

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
	/* every cost model here also counts its tokens on the host: the same counts */
	if (sjgpu_jaccard_set_test_model_check)
		sjgpu_jaccard_set_test_model_check(1);
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
	if (sjgpu_jaccard_set_test_model_check)
		sjgpu_jaccard_set_test_model_check(0);
}

/*
 * Tokens in any order (the SQL adapter's): the GPU's preparation and join
 * against the CPU engine's on the same shuffled sets (jaccard_cpu_unsorted
 * checks the CPU engine on them against the oracle).
 */
SJ_TEST(jaccard_gpu_unsorted)
{
	TjRng		r = tj_rng(616);
	size_t		s;

	if (!sj_test_gpu_usable())
	{
		sj_test_skip("no usable GPU");
		return;
	}
	for (s = 0; s < TJ_NSHAPES; s++)
	{
		const TjShape *sh = &tj_shapes[s];
		TjUnsorted	u;
		size_t		ti;

		tj_unsorted_make(&u, sh, &r);
		for (ti = 0; ti < TJ_NTHRESH; ti += 2)
		{
			double		t = tj_thresholds[ti];
			SjJoinOptions o = tj_options(2, 0, (int) (ti % 4 == 2));
			SjTimings	gt;
			const char *err;

			memset(&gt, 0, sizeof(gt));
			err = tj_gpu_vs_cpu(&u.Ls, NULL, t, o, &gt);
			SJ_CHECK(err == NULL, "%s self, threshold %g (%s): %s", sh->name, t,
					 gt.strategy, err);
			err = tj_gpu_vs_cpu(&u.Ls, &u.Rs, t, o, &gt);
			SJ_CHECK(err == NULL, "%s two-table, threshold %g (%s): %s", sh->name, t,
					 gt.strategy, err);
		}
		tj_unsorted_free(&u);
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
			/* short signatures: the model's bitmap sample, device against host */
			if (sjgpu_jaccard_set_test_model_check)
				sjgpu_jaccard_set_test_model_check(forced[f].words > 0);
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
		if (sjgpu_jaccard_set_test_model_check)
			sjgpu_jaccard_set_test_model_check(0);
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

/* The first difference between two preparations' arrays, or NULL. */
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
 * have prepared, 0 the host must have (fallback), -1 either.  keep: the
 * device keeps its arrays and sends the tokens back in the background, as
 * in a join.
 */
static const char *
tj_prepare_one(const TjSets *L, const TjSets *R, double t, SjJoinOptions o,
			   int want_device, int keep)
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
	if (sjgpu_jaccard_set_test_keep)
		sjgpu_jaccard_set_test_keep(keep);
	gs = sjgpu_jaccard_test_prepare(&l, R ? &r : NULL, t, &o, &g, &dev, gerr);
	if (sjgpu_jaccard_set_test_keep)
		sjgpu_jaccard_set_test_keep(0);
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
	if (err && keep)
	{
		static char kept_why[560];

		snprintf(kept_why, sizeof(kept_why), "%.500s (sets kept on the device)", err);
		err = kept_why;
	}
	return err;
}

/* tj_prepare_one with the tokens downloaded at once, then in the background. */
static const char *
tj_prepare_both(const TjSets *L, const TjSets *R, double t, SjJoinOptions o,
				int want_device)
{
	const char *err = tj_prepare_one(L, R, t, o, want_device, 0);

	if (err == NULL && sjgpu_jaccard_set_test_keep)
		err = tj_prepare_one(L, R, t, o, want_device, 1);
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
		{
			/* the same sets, each in a random order (the SQL adapter's) */
			TjSets		Ls,
						Rs;

			tj_shuffled(&L, &Ls, &r);
			tj_shuffled(&R, &Rs, &r);
			err = tj_prepare_both(&Ls, &Rs, t, o, tj_has_tokens(&Ls, &Rs));
			SJ_CHECK(err == NULL, "%s two-table, tokens shuffled: %s", sh.name, err);
			tj_free(&Ls);
			tj_free(&Rs);
		}

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
		if (sjgpu_set_test_upload_chunk)
		{
			/* every copy staged, in odd pieces: the same arrays */
			sjgpu_set_test_upload_chunk(4099);
			err = tj_prepare_both(&L, NULL, 0.75, tj_options(4, 0, 0), 1);
			sjgpu_set_test_upload_chunk(0);
			SJ_CHECK(err == NULL, "zipf big, copies staged in 4,099-byte pieces: %s", err);
		}
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
		uint32_t	repeated[] = {3, 3, 2, 5};
		uint32_t	ok[] = {3, 1, 2, 5};	/* in any order */
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
		b.tok = repeated;
		small = good;
		small.universe = 4;
		dec = good;
		dec.off = bad_off;
		err = tj_prepare_both(&good, NULL, 0.0, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "threshold 0: %s", err);
		err = tj_prepare_both(&b, NULL, 0.5, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "a repeated token: %s", err);
		err = tj_prepare_both(&good, &small, 0.5, tj_options(2, 0, 0), -1);
		SJ_CHECK(err == NULL, "token beyond the universe: %s", err);
		err = tj_prepare_both(&dec, &good, 0.5, tj_options(1, 0, 0), -1);
		SJ_CHECK(err == NULL, "decreasing offsets: %s", err);
	}
}
