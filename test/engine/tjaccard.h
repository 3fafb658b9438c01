/*
 * tjaccard.h
 *		Shared pieces of the jaccard_join engine tests: random set
 *		collections and their shapes, the brute-force oracle, running an
 *		engine to the end and comparing results (tjaccard.c), used by
 *		test_jaccard.c (CPU), test_jaccard_gpu.c (GPU) and
 *		test_jaccard_bench.c (benchmarks).
 */
#ifndef TJACCARD_H
#define TJACCARD_H

#include <stddef.h>
#include <stdint.h>

#include "sjengine.h"
#include "sjgpu.h"
#include "sjjaccard.h"
#include "sjtest.h"

/* GPU engine test hooks of the jaccard tests (cuda/; absent from CPU-only builds). */
#pragma weak sjgpu_jaccard_test_phases
extern void sjgpu_jaccard_test_phases(double *ms);
#pragma weak sjgpu_jaccard_test_prep_steps
extern void sjgpu_jaccard_test_prep_steps(double *ms);
#pragma weak sjgpu_jaccard_test_prepare
extern SjStatus sjgpu_jaccard_test_prepare(const SjSets *left, const SjSets *right,
										   double threshold, const SjJoinOptions *options,
										   SjJaccardJoin **join, int *on_device,
										   char *errmsg);

/* A random stream (splitmix64 state). */
typedef struct TjRng
{
	uint64_t	s;
} TjRng;

/* A growable collection of sets (CSR), viewed as SjSets by tj_view. */
typedef struct TjSets
{
	uint32_t	n;
	uint32_t	universe;
	uint64_t   *off;
	uint32_t   *tok;
	size_t		capset;
	size_t		captok;
} TjSets;

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

/* A result pair and its similarity (d), and a growable list of them. */
typedef SjTestPair TjPair;
typedef SjTestPairs TjList;

/* Which engine a run uses. */
typedef enum TjEngine
{
	TJ_CPU,
	TJ_GPU
} TjEngine;

extern const double tj_thresholds[];
extern const size_t tj_nthresh;
extern const TjShape tj_shapes[];
extern const size_t tj_nshapes;

#define TJ_NTHRESH tj_nthresh
#define TJ_NSHAPES tj_nshapes

/* tjaccard.c: random streams and collections */
extern uint64_t tj_next(TjRng *r);
extern uint32_t tj_below(TjRng *r, uint32_t n);
extern TjRng tj_rng(uint64_t salt);
extern void tj_init(TjSets *s, uint32_t universe);
extern void tj_free(TjSets *s);
extern void tj_add(TjSets *s, const uint32_t *t, uint32_t k);
extern SjSets tj_view(const TjSets *s);
extern void tj_shuffled(const TjSets *in, TjSets *out, TjRng *r);

/* A shape's collections for the unsorted tests, sorted and shuffled. */
typedef struct TjUnsorted
{
	TjSets		L,
				R,
				Ls,
				Rs;
} TjUnsorted;

extern void tj_unsorted_make(TjUnsorted *u, const TjShape *shape, TjRng *r);
extern void tj_unsorted_free(TjUnsorted *u);
extern void tj_generate(TjSets *s, const TjShape *sh, uint32_t base,
						uint32_t dict, TjRng *r);
extern void tj_boundary_sets(TjSets *s, TjRng *r);
extern void tj_collision_sets(TjSets *s, int side);

/* tjaccard.c: results, the oracle, the engines, comparison */
extern void tj_oracle(const TjSets *L, const TjSets *R, double t, TjList *out);
extern const char *tj_run(TjEngine eng, const TjSets *L, const TjSets *R,
						  double t, const SjJoinOptions *opt, TjList *out,
						  uint64_t *count, SjTimings *timings);
extern const char *tj_compare(const TjList *want, const TjList *got);
extern SjJoinOptions tj_options(int threads, size_t max_batch, int count_only);
extern const char *tj_check_cpu(const TjSets *L, const TjSets *R, TjRng *r,
								int tiny_ok);

#endif							/* TJACCARD_H */
