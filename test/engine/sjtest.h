/*
 * sjtest.h
 *		A tiny self-registering test harness for the engine tests.
 *
 * Each test file defines tests with SJ_TEST(name) { ... } and checks with
 * SJ_CHECK(cond, fmt, ...); a failed check records the failure and returns
 * from the test.  engine_test.c runs every registered test (or those whose
 * names contain argv[1]) and ends with the line "N passed, N failed".
 * Tests that need a GPU call sj_test_gpu_usable() and return early (counted
 * as passed, with a "skipped" note) where none is usable.
 */
#ifndef SJTEST_H
#define SJTEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sjengine.h"

/*
 * Test hooks of the GPU engine that set its behaviour (cuda/; absent from
 * CPU-only builds: weak, NULL there).  The runner puts each back to its
 * default before every test (sj_test_reset_hooks), so that a test that
 * fails with one switched on leaves the others unaffected.  Each file
 * declares its own other hooks (those that only read).
 */
#pragma weak sjgpu_eps_set_test_strategy
extern void sjgpu_eps_set_test_strategy(int strategy);
#pragma weak sjgpu_eps_set_test_pruning
extern void sjgpu_eps_set_test_pruning(int on);
#pragma weak sjgpu_eps_set_test_spread
extern void sjgpu_eps_set_test_spread(int always);
#pragma weak sjgpu_jaccard_set_test_spread
extern void sjgpu_jaccard_set_test_spread(int always);
#pragma weak sjgpu_jaccard_set_test_model_check
extern void sjgpu_jaccard_set_test_model_check(int on);
#pragma weak sjgpu_jaccard_set_test_strategy
extern void sjgpu_jaccard_set_test_strategy(int strategy, int signature_words);
#pragma weak sjgpu_set_test_upload_chunk
extern void sjgpu_set_test_upload_chunk(long chunk);
#pragma weak sjgpu_set_test_stage_threads
extern void sjgpu_set_test_stage_threads(int threads);
#pragma weak sjgpu_eps_set_test_segment_work
extern void sjgpu_eps_set_test_segment_work(double units);
#pragma weak sjgpu_jaccard_set_test_keep
extern void sjgpu_jaccard_set_test_keep(int on);
#pragma weak sjgpu_jaccard_set_test_coproc
extern void sjgpu_jaccard_set_test_coproc(size_t candidates, size_t records);
#pragma weak sjgpu_theta_set_test_spread
extern void sjgpu_theta_set_test_spread(int always);
#pragma weak sjgpu_set_test_peer_copies
extern void sjgpu_set_test_peer_copies(int on);
#pragma weak sjgpu_set_test_replica_nomem
extern void sjgpu_set_test_replica_nomem(int worker);
#pragma weak sjgpu_multi_test_trace
extern void sjgpu_multi_test_trace(char *buf, size_t len);

typedef void (*SjTestFn) (int *failed);

extern void sj_test_register(const char *name, SjTestFn fn);
extern int	sj_test_gpu_usable(void);
extern void sj_test_reset_hooks(void);
extern void sj_test_skip(const char *why);
extern unsigned long long sj_test_seed(void);

/*
 * engine_test --child MODE SEED runs sj_test_child(MODE) in a process of its
 * own (a new process has no CUDA state yet) and exits with its result.
 */
extern int	sj_test_child(const char *mode);

/* A result pair of two rows and its value, and a growable list of them. */
typedef struct SjTestPair
{
	uint32_t	l;
	uint32_t	r;
	double		d;
} SjTestPair;

typedef struct SjTestPairs
{
	SjTestPair *p;
	size_t		n;
	size_t		alloc;
} SjTestPairs;

/* sjtest_util.c: splitmix64, uniform doubles, pair lists. */
extern uint64_t sj_test_splitmix(uint64_t *state);
extern double sj_test_unit(uint64_t *state);
extern void sj_test_pairs_add(SjTestPairs *ps, uint32_t l, uint32_t r, double d);
extern int	sj_test_pair_cmp(const void *a, const void *b);

/* n row-major rows of dim floats in four pieces: a third, one row, none, the rest. */
extern void sj_test_row_pieces(SjRowPiece *p, const float *rows, uint32_t n, int dim);

/*
 * The engine benchmarks' device list from SJ_BENCH_DEVICES ("0,1"), at
 * most max entries into list; 0 when unset (the one-device join).
 */
extern int	sj_test_bench_devices(int *list, int max);

/* A distance of left row i and right row j, for a brute-force oracle. */
typedef double (*SjTestDistFn) (const SjVectors *L, uint32_t i,
								const SjVectors *R, uint32_t j);

/* Every pair within eps, by brute force; R NULL: self-join (i < j). */
extern void sj_test_brute_join(const SjVectors *L, const SjVectors *R,
							   double eps, SjTestDistFn dist, SjTestPairs *out);

#define SJ_TEST(name) \
	static void name(int *sj_failed_); \
	__attribute__((constructor)) static void name##_register_(void) \
	{ sj_test_register(#name, name); } \
	static void name(int *sj_failed_)

#define SJ_CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fprintf(stderr, "\n"); \
			*sj_failed_ = 1; \
			return; \
		} \
	} while (0)

#endif							/* SJTEST_H */
