/*
 * sjjaccard.h
 *		The prepared form of a jaccard_join, shared by the CPU engine
 *		(src/engine/jaccard_*.c), the GPU preparation (cuda/jaccard_prep.cu)
 *		and the engine tests.  Not part of the adapter's boundary.
 *
 * A preparation turns the two inputs into distinct sets (identical sets
 * grouped) in size order, tokens renumbered by ascending frequency and
 * sorted, with member lists per side; see the header of jaccard_cpu.c for
 * every rule.  The host computes it with sj_jaccard_prepare(); the GPU
 * engine computes the same arrays on the device and hands them over with
 * sj_jaccard_prepare_checked(), which then derives the bounds on the host
 * exactly as for a host preparation.  Plain C, no PostgreSQL or CUDA types.
 */
#ifndef SJJACCARD_H
#define SJJACCARD_H

#include "sjengine.h"

#ifdef __cplusplus
extern "C"
{
#endif

#ifdef __CUDACC__
#define SJ_JACCARD_HOSTDEV __host__ __device__
#else
#define SJ_JACCARD_HOSTDEV
#endif

/*
 * 64-bit hash of a sorted token list (FNV-1a over words, then a
 * finaliser), which groups identical sets.  One definition for the host
 * preparation and the device's, whose grouping must agree bit for bit.
 */
static inline SJ_JACCARD_HOSTDEV uint64_t
sj_jaccard_hash(const uint32_t *t, uint32_t n)
{
	uint64_t	h = 0xcbf29ce484222325ULL;
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		h ^= t[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * The arrays of a preparation.  Every array is malloc'd.  Side 1 (right)
 * arrays are NULL for a self-join.  len and weight have one spare entry
 * (nsets + 1 allocated; weight[s][nsets] is 0), as the host allocates them.
 */
typedef struct SjJaccardPrepared
{
	uint32_t	nsets;			/* distinct sets */
	uint32_t	universe;		/* renumbered token ids are < universe */
	uint32_t	maxsize;		/* len[nsets - 1], or 0 */
	uint64_t   *off;			/* nsets + 1: CSR offsets into tok */
	uint32_t   *tok;			/* off[nsets] tokens */
	uint32_t   *len;			/* nsets */
	uint64_t   *moff[2];		/* nsets + 1: CSR offsets into mem[side] */
	uint32_t   *mem[2];			/* input indices of the members, per side */
	uint32_t   *weight[2];		/* nsets: members per side */
	double		prep_ms;		/* time spent producing it (build_ms) */
} SjJaccardPrepared;

/*
 * Prepare on the host without a CPU index: the distinct sets, members and
 * bounds, for an engine that probes on its own (jaccard_cpu.c).
 */
extern SjStatus sj_jaccard_prepare(const SjSets *left, const SjSets *right,
								   double threshold,
								   const SjJoinOptions *options,
								   SjJaccardJoin **join, char *errmsg);

/*
 * Test hook: on = 0 makes the input check compare a set's tokens pairwise
 * (a sorted copy beyond 128) instead of marking them in a thread's stamps.
 */
extern void sj_jaccard_set_test_check_stamps(int on);

/* Argument and input checks of a preparation (the CPU engine's messages). */
extern SjStatus sj_jaccard_check(const SjSets *left, const SjSets *right,
								 double threshold, const SjJoinOptions *options,
								 char *errmsg);

/*
 * sj_jaccard_prepare for inputs that passed sj_jaccard_check: with adopt
 * NULL the host prepares; otherwise the handle takes over adopt's arrays
 * (always, also on failure: adopt is left empty) and derives the bounds.
 */
extern SjStatus sj_jaccard_prepare_checked(const SjSets *left,
										   const SjSets *right,
										   double threshold,
										   const SjJoinOptions *options,
										   SjJaccardPrepared *adopt,
										   SjJaccardJoin **join, char *errmsg);

/* Free a preparation's arrays and zero it (NULL is a no-op). */
extern void sj_jaccard_prepared_free(SjJaccardPrepared *p);

/* A view of a handle's prepared arrays (owned by the handle; for tests). */
extern void sj_jaccard_prepared_view(const SjJaccardJoin *j,
									 SjJaccardPrepared *view);

/*
 * The exact bounds: minov (2 * maxsize + 1 entries, by the sum of the two
 * lengths), minsize (maxsize + 1, by length) and size_start (maxsize + 2).
 */
extern void sj_jaccard_prepared_bounds(const SjJaccardJoin *j,
									   uint32_t *maxsize,
									   const uint32_t **minov,
									   const uint32_t **minsize,
									   const uint32_t **size_start);

/*
 * A record source: how the GPU engine feeds distinct pairs to the handle.
 * Each call returns the next records (distinct pairs u > v with their
 * similarity; arrays owned by the source until its next call) or, for
 * count_only, a count of member pairs, and sets *exhausted once nothing
 * more will come.
 */
typedef SjStatus (*SjJaccardSource) (void *ctx, const uint32_t **u,
									 const uint32_t **v, const double **sim,
									 size_t *n, uint64_t *count,
									 int *exhausted, char *errmsg);

/*
 * A second handle over the preparation of `from` (a join spread over
 * several devices prepares once): the same inputs, threshold and options
 * as from's, its arrays borrowed, not copied (from must outlive the new
 * handle), its bounds and probing state its own.
 */
extern SjStatus sj_jaccard_prepare_borrowed(const SjSets *left,
											const SjSets *right,
											double threshold,
											const SjJoinOptions *options,
											const SjJaccardJoin *from,
											SjJaccardJoin **join,
											char *errmsg);

/*
 * The distinct sets in probe order (size ascending), tokens renumbered and
 * sorted, and member counts per side (weight_right NULL for a self-join).
 */
extern void sj_jaccard_prepared_sets(const SjJaccardJoin *j, uint32_t *nsets,
									 uint32_t *universe,
									 const uint64_t **offsets,
									 const uint32_t **tokens,
									 const uint32_t **weight_left,
									 const uint32_t **weight_right);

/* Replace CPU probing by a record source (and name the strategy). */
extern void sj_jaccard_set_source(SjJaccardJoin *j, SjJaccardSource source,
								  void *ctx, const char *strategy);

/*
 * The pairs inside groups of identical sets, shared with the other devices
 * of a spread join: they are cut into nunits ranges of the distinct sets
 * of about equal pairs (the same on every device), and this join emits
 * (or counts) the ranges claim(ctx, nunits) hands it, until it returns -1
 * (-3: out of memory; another value below -1: an internal error; the join
 * fails).  Every range must go to exactly one of the joins.
 */
typedef long long (*SjJaccardGroupClaim) (void *ctx, uint32_t nunits);
extern void sj_jaccard_share_groups(SjJaccardJoin *j, SjJaccardGroupClaim claim,
									void *ctx, uint32_t nunits);

/*
 * Co-processing: build the CPU engine's index over a prepared join, then
 * take its unverified candidate pairs (x << 32 | y, x > y) a buffer at a
 * time, each pair exactly once over the join.
 */
extern SjStatus sj_jaccard_filter_begin(SjJaccardJoin *j, char *errmsg);
extern SjStatus sj_jaccard_filter_next(SjJaccardJoin *j, uint64_t *buf,
									   size_t cap, size_t *n, int *exhausted,
									   char *errmsg);

/*
 * The GPU engine's preparation (cuda/jaccard_prep.cu; GPU builds only):
 * sj_jaccard_prepare's result, computed on the device when it fits in
 * options->gpu_memory_limit, else on the host.
 */
extern SjStatus sjgpu_jaccard_prepare(const SjSets *left, const SjSets *right,
									  double threshold,
									  const SjJoinOptions *options,
									  SjJaccardJoin **join, char *errmsg);

#ifdef __cplusplus
}
#endif

#endif							/* SJJACCARD_H */
