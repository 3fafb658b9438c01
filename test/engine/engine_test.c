/*
 * engine_test.c
 *		Runner for the engine tests (no PostgreSQL server involved).
 *
 *	  engine_test [substring]     run all tests, or those whose name matches
 *
 * SJ_TEST_SEED fixes the random seed (printed at start) to replay a failure.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sjgpu.h"
#include "sjjaccard.h"
#include "sjtest.h"

#define SJ_MAX_TESTS 512

static struct
{
	const char *name;
	SjTestFn	fn;
}			tests[SJ_MAX_TESTS];
static int	ntests;
static unsigned long long seed;
static const char *skip_reason;

/* Called by SJ_TEST's constructors before main. */
void
sj_test_register(const char *name, SjTestFn fn)
{
	if (ntests < SJ_MAX_TESTS)
	{
		tests[ntests].name = name;
		tests[ntests].fn = fn;
		ntests++;
	}
}

/* 1 when the GPU engine is built and a device answers. */
int
sj_test_gpu_usable(void)
{
	static int	usable = -1;

	if (usable < 0)
	{
		char		errmsg[SJ_ERRMSG_LEN];
		int			n = 0;

		usable = sjgpu_compiled() &&
			sjgpu_device_count(&n, errmsg) == SJ_OK && n > 0;
	}
	return usable;
}

/*
 * Every GPU test hook that sets behaviour back to its default (the
 * engine's initial values): strategies automatic, pruning on, no forced
 * segment work, spreading only where the engine decides, the model check
 * and kept-set preparation off, co-processing batches from the budget,
 * peer copies on, no simulated replica failure, staged copies as
 * configured.  Called before every test.
 */
void
sj_test_reset_hooks(void)
{
	sj_jaccard_set_test_check_stamps(1);
	if (sjgpu_eps_set_test_strategy)
		sjgpu_eps_set_test_strategy(0);
	if (sjgpu_eps_set_test_pruning)
		sjgpu_eps_set_test_pruning(1);
	if (sjgpu_eps_set_test_segment_work)
		sjgpu_eps_set_test_segment_work(0.0);
	if (sjgpu_eps_set_test_spread)
		sjgpu_eps_set_test_spread(0);
	if (sjgpu_jaccard_set_test_spread)
		sjgpu_jaccard_set_test_spread(0);
	if (sjgpu_jaccard_set_test_strategy)
		sjgpu_jaccard_set_test_strategy(0, 0);
	if (sjgpu_jaccard_set_test_model_check)
		sjgpu_jaccard_set_test_model_check(0);
	if (sjgpu_jaccard_set_test_keep)
		sjgpu_jaccard_set_test_keep(0);
	if (sjgpu_jaccard_set_test_coproc)
		sjgpu_jaccard_set_test_coproc(0, 0);
	if (sjgpu_theta_set_test_spread)
		sjgpu_theta_set_test_spread(0);
	if (sjgpu_set_test_peer_copies)
		sjgpu_set_test_peer_copies(1);
	if (sjgpu_set_test_replica_nomem)
		sjgpu_set_test_replica_nomem(-1);
	if (sjgpu_set_test_upload_chunk)
		sjgpu_set_test_upload_chunk(0);
	if (sjgpu_set_test_stage_threads)
		sjgpu_set_test_stage_threads(0);
}

/* Mark the running test as skipped. */
void
sj_test_skip(const char *why)
{
	skip_reason = why;
}

/* The run's random seed; each test derives its own streams from it. */
unsigned long long
sj_test_seed(void)
{
	return seed;
}

static int
cmp_tests(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int
main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	const char *env = getenv("SJ_TEST_SEED");
	int			passed = 0,
				failed = 0,
				skipped = 0,
				i;

	seed = env ? strtoull(env, NULL, 10) : (unsigned long long) time(NULL);
	if (argc > 3 && strcmp(argv[1], "--child") == 0)
	{
		seed = strtoull(argv[3], NULL, 10);
		return sj_test_child(argv[2]);
	}
	qsort(tests, ntests, sizeof(tests[0]), cmp_tests);
	printf("engine tests: seed %llu, GPU %s\n", seed,
		   sj_test_gpu_usable() ? "usable" : "not usable");
	for (i = 0; i < ntests; i++)
	{
		int			f = 0;
		double		t0;
		struct timespec ts;

		if (filter && !strstr(tests[i].name, filter))
			continue;
		skip_reason = NULL;
		sj_test_reset_hooks();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t0 = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
		tests[i].fn(&f);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (f)
			failed++;
		else if (skip_reason)
			skipped++;
		else
			passed++;
		printf("%-4s %s (%.0f ms)%s%s\n", f ? "FAIL" : skip_reason ? "SKIP" : "ok",
			   tests[i].name, ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 - t0,
			   skip_reason ? ": " : "", skip_reason ? skip_reason : "");
		fflush(stdout);
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
