/*
 * test_jaccard_bench.c
 *		jaccard_bench and jaccard_strategy_bench: the CPU and GPU engines
 *		timed on large Zipf collections (see the header of test_jaccard.c
 *		for the SJ_JACCARD_BENCH settings).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjaccard.h"


/* ----------------------------------------------------------------------
 * Timing mode
 * ---------------------------------------------------------------------- */

/* qsort order of doubles (medians). */
static int
tj_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double tj_time_limit_ms = 0;	/* > 0: give up a run after this long */

/* Time one join to the end (pairs drained, not kept); ms, or < 0. */
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
	int			gpu_only = getenv("SJ_JACCARD_BENCH_GPU_ONLY") != NULL;
	uint32_t	nsets = nenv ? (uint32_t) atol(nenv) : 1000000;
	uint32_t	universe = uenv && atol(uenv) > 1 ? (uint32_t) atol(uenv) : 50000;
	int			devices[8],
				ndevices = sj_test_bench_devices(devices, 8);
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
	/* SJ_BENCH_STAGE_THREADS=8: staged copies on up to 8 threads */
	if (getenv("SJ_BENCH_STAGE_THREADS") && sjgpu_set_test_stage_threads)
		sjgpu_set_test_stage_threads(atoi(getenv("SJ_BENCH_STAGE_THREADS")));
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
				if (e == 0 && gpu_only)
					continue;
				if (e == 1 && ndevices > 1)
				{
					/* SJ_BENCH_DEVICES=0,1: the GPU join spread over that list */
					o.gpu_ndevices = ndevices;
					o.gpu_devices = devices;
					if (sjgpu_jaccard_set_test_spread)
						sjgpu_jaccard_set_test_spread(1);
				}
				else if (e == 1 && ndevices == 1)
					o.gpu_device = devices[0];
				memset(&tm, 0, sizeof(tm));
				/* warm-up, then up to three timed runs within a budget */
				ms[0] = tj_time(eng, &L, ts[i], &o, &counted, &tm);
				for (k = 0; k < 3 && ms[0] >= 0 && ms[0] < 5000; k++)
					ms[runs++] = tj_time(eng, &L, ts[i], &o, &counted, &tm);
				if (runs == 0)
					runs = 1;
				qsort(ms, runs, sizeof(double), tj_cmp_double);
				/* one device only: a spread join's devices time theirs on their threads */
				if (e == 1 && sjgpu_jaccard_test_phases && o.gpu_ndevices <= 1)
				{
					double		ph[9];

					sjgpu_jaccard_test_phases(ph);
					printf("     gpu phases of the last count run (ms): prepare %.1f, strategy %.1f "
						   "(upload %.1f, cost model %.1f), memory %.1f, index %.1f, "
						   "estimate %.1f, device waits %.1f; cudaMalloc/cudaFree %.1f\n",
						   ph[0], ph[1], ph[6], ph[7], ph[2], ph[3], ph[4], ph[5], ph[8]);
					if (sjgpu_jaccard_test_prep_steps)
					{
						double		st[9];

						sjgpu_jaccard_test_prep_steps(st);
						printf("     its preparation's steps (ms): upload %.1f, ranks %.1f, "
							   "set sort %.1f, key sort %.1f, distinct %.1f, tokens %.1f, "
							   "members %.1f, download %.1f; host adoption %.1f\n",
							   st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8]);
					}
				}
				o.count_only = 0;
				full = -1;
				pairs = counted;
				if (pairs_run)
					full = tj_time(eng, &L, ts[i], &o, &pairs, &tm);
				printf("     %-6s %4u  %.1f  %10llu  %10.1f (%d)  %8.1f  %8.1f  %s%s%s%s\n",
					   e ? "gpu" : "cpu", avgs[a], ts[i], (unsigned long long) pairs,
					   ms[runs / 2], runs, tm.build_ms, full, tm.strategy,
					   counted == pairs ? "" : "  COUNT MISMATCH",
					   tm.devices[0] ? "; devices: " : "", tm.devices);
				if (e == 1 && strstr(tm.devices, "units") && sjgpu_multi_test_trace)
				{
					char		trace[1024];

					sjgpu_multi_test_trace(trace, sizeof(trace));
					printf("     trace of the last run (ms): %s\n", trace);
				}
				if (sjgpu_jaccard_set_test_spread)
					sjgpu_jaccard_set_test_spread(0);
				fflush(stdout);
			}
		}
		tj_free(&L);
	}
	if (sjgpu_set_test_stage_threads)
		sjgpu_set_test_stage_threads(0);
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
