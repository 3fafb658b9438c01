/*
 * jaccard_cpu.c
 *		The CPU engine of jaccard_join: exact set-similarity join by prefix
 *		filtering (AllPairs, Bayardo et al. WWW 2007; PPJoin, Xiao et al.
 *		WWW 2008), with identical sets grouped, multi-threaded over probe sets.
 *
 * Preparation (begin), shared with the GPU engine (cuda/jaccard_gpu.cu):
 *	1. Count token frequencies over both inputs and renumber tokens by
 *	   ascending frequency, ties by token id: rare tokens come first, so
 *	   prefixes hold the most selective tokens.
 *	2. Renumber and sort every non-empty set, hash it, and sort all sets by
 *	   (size, hash).  A run of identical sets becomes one distinct set with a
 *	   member list per side (left, right); it is verified once and expanded
 *	   to all members.  Distinct sets are numbered in size order.  (A hash
 *	   collision only splits a group: two identical distinct sets then join
 *	   through the normal path with similarity 1.)
 *	3. Exact bounds.  minov[s] is the least overlap o for which
 *	   (double) o / (double) (s - o) >= threshold, found by testing exactly
 *	   that expression; the division is monotone in o, so a pair of sizes
 *	   (lx, ly) joins iff its overlap is at least minov[lx + ly].  The length
 *	   filter (minsize), the probing prefix, the indexing prefix and the
 *	   positional filter are all derived from minov, so none of them can
 *	   prune a pair that the double comparison accepts, even at thresholds
 *	   such as 0.7 that have no exact binary value.
 * The input check, token counting, renumbering, grouping comparisons and
 * copies run on options->cpu_threads threads; the rest is linear and serial.
 *
 * Join: a distinct set x (the probe) is compared with distinct sets y < x,
 * which are never longer.  Every distinct set's indexing prefix
 * (|y| - minov[2|y|] + 1 tokens) is in one inverted index whose lists are
 * ordered by set number; the probe walks the lists of its probing prefix
 * (|x| - minov[|x| + minsize(|x|)] + 1 tokens) from the first set of
 * length minsize(|x|) to x - 1.  This equals AllPairs' incremental index
 * (probe, then insert) but leaves the probes independent, so they run in
 * parallel.  Each list entry passes PPJoin's positional filter; survivors
 * are verified by a merge that starts after the last prefix match and stops
 * as soon as the required overlap is out of reach.  The final decision is
 * always the double expression of sjengine.h.
 *
 * A two-table join uses the same single index over the distinct sets of
 * both inputs (Xiao et al.'s reduction of an R-S join to a self-join): both
 * sides get the short indexing prefix, and an entry is skipped unless its
 * set has members on the side opposite to the probe's.
 *
 * Iteration: next() probes a chunk of distinct sets (sized adaptively to
 * about 100 ms and a bounded number of result records), keeps the matching
 * distinct pairs as records, and expands them to member pairs into the
 * batch; pairs inside a group of identical sets (similarity 1) come last.
 * A cursor makes every step resumable at any pair, so no batch exceeds
 * max_batch_pairs and nothing is truncated.  A call returns after about
 * 250 ms even when its batch is still empty (done not set), so that the
 * caller can check for interrupts.
 *
 * The GPU engine reuses the preparation, the bounds and the expansion: it
 * computes the preparation's arrays on the device (cuda/jaccard_prep.cu,
 * the same arrays as jc_prepare's, element for element) and hands them to
 * sj_jaccard_prepare_checked(), or has this file prepare when the device
 * cannot; then it installs a record source that probes on the device
 * (sj_jaccard_set_source()); see sjjaccard.h and the exported functions at
 * the end of this file.
 * Its co-processing strategy (after Bellas and Gounaris) also reuses the
 * filters: sj_jaccard_filter_next() runs the same probe (jc_probe_mode,
 * stopping before verification) over chunks of probes on the same threads,
 * but hands each surviving candidate pair out into the caller's buffer
 * instead of verifying it.  The buffer is shared by the threads through one
 * atomic reservation per probe; when it is full, the chunk's unfinished
 * ranges wait for the next call, a probe cut off inside its candidates
 * resumes after those already handed out (JcTask.skip), so every candidate
 * comes out exactly once.
 *
 * Files: this one fetches records and expands them into member pairs, and
 * holds the entry points; jaccard_prep.c checks the inputs, prepares and
 * derives the bounds; jaccard_probe.c indexes, probes and filters;
 * jaccard_int.h declares the handle for the three.  The rules both engines
 * apply to a pair (similarity, prefixes, positional filter, verification)
 * are written once in sjjrules.h.
 *
 * Ownership: every array is malloc'd and owned by the handle; the inputs
 * are only read.  Nothing here prints, exits or calls into PostgreSQL.
 */
#include <stdlib.h>
#include <string.h>

#include "jaccard_int.h"

/* Get the next records, from the CPU probe or the external source. */
static SjStatus
jc_fetch(SjJaccardJoin *j, int *exhausted, char *errmsg)
{
	SjStatus	st;

	j->seg = 0;
	j->rec = 0;
	j->part = 0;
	j->ia = j->ib = 0;
	j->nsegs = 0;
	if (j->source)
	{
		JcSegment  *sg = &j->segs[0];
		uint64_t	count = 0;
		size_t		n = 0;

		if (j->source_done)
		{
			*exhausted = 1;
			return SJ_OK;
		}
		st = j->source(j->source_ctx, &sg->u, &sg->v, &sg->sim, &n, &count,
					   &j->source_done, errmsg);
		if (st != SJ_OK)
			return st;
		sg->n = n;
		if (n > 0)
			j->nsegs = 1;
		j->pending_count += count;
		*exhausted = j->source_done && n == 0 && count == 0;
		return SJ_OK;
	}
	if (j->next_probe >= j->nsets && j->npending == 0)
	{
		*exhausted = 1;
		return SJ_OK;
	}
	*exhausted = 0;
	return jc_cpu_chunk(j, errmsg);
}

/* ----------------------------------------------------------------------
 * Expansion of distinct pairs into member pairs
 * ---------------------------------------------------------------------- */

/* Append one output pair. */
static inline void
jc_put(SjJaccardJoin *j, size_t *n, uint32_t a, uint32_t b, double sim)
{
	j->out_left[*n] = a;
	j->out_right[*n] = b;
	j->out_value[*n] = sim;
	(*n)++;
}

/*
 * Emit the rectangle A x B from cursor (ia, ib) until the batch is full;
 * returns 1 when the rectangle is finished.  minmax orients self-join pairs.
 */
static int
jc_rect(SjJaccardJoin *j, size_t *n, const uint32_t *A, uint64_t na,
		const uint32_t *B, uint64_t nb, int minmax, double sim)
{
	while (j->ia < na)
	{
		uint32_t	a = A[j->ia];

		while (j->ib < nb)
		{
			uint32_t	b = B[j->ib];

			if (*n == j->out_cap)
				return 0;
			if (minmax && b < a)
				jc_put(j, n, b, a, sim);
			else
				jc_put(j, n, a, b, sim);
			j->ib++;
		}
		j->ib = 0;
		j->ia++;
	}
	j->ia = 0;
	return 1;
}

/* Expand the current segments; returns 1 when all are expanded. */
static int
jc_expand(SjJaccardJoin *j, size_t *n)
{
	while (j->seg < j->nsegs)
	{
		const JcSegment *sg = &j->segs[j->seg];

		while (j->rec < sg->n)
		{
			uint32_t	u = sg->u[j->rec],
						v = sg->v[j->rec];
			double		sim = sg->sim[j->rec];

			if (j->self)
			{
				if (!jc_rect(j, n, j->mem[0] + j->moff[0][u], j->weight[0][u],
							 j->mem[0] + j->moff[0][v], j->weight[0][v], 1, sim))
					return 0;
			}
			else
			{
				if (j->part == 0 &&
					!jc_rect(j, n, j->mem[0] + j->moff[0][u], j->weight[0][u],
							 j->mem[1] + j->moff[1][v], j->weight[1][v], 0, sim))
					return 0;
				j->part = 1;
				if (!jc_rect(j, n, j->mem[0] + j->moff[0][v], j->weight[0][v],
							 j->mem[1] + j->moff[1][u], j->weight[1][u], 0, sim))
					return 0;
				j->part = 0;
			}
			j->rec++;
		}
		j->rec = 0;
		j->seg++;
	}
	return 1;
}

/* Emit pairs inside groups of identical sets (similarity 1). */
static int
jc_groups(SjJaccardJoin *j, size_t *n)
{
	for (; j->gset < j->gend; j->gset++)
	{
		uint32_t	d = j->gset;
		const uint32_t *m0 = j->mem[0] + j->moff[0][d];
		uint64_t	n0 = j->weight[0][d];

		if (j->self)
		{
			/* the triangle a < b of one sorted member list */
			if (n0 < 2)
				continue;
			if (j->gb <= j->ga)
				j->gb = j->ga + 1;
			while (j->ga + 1 < n0)
			{
				while (j->gb < n0)
				{
					if (*n == j->out_cap)
						return 0;
					jc_put(j, n, m0[j->ga], m0[j->gb], 1.0);
					j->gb++;
				}
				j->ga++;
				j->gb = j->ga + 1;
			}
			j->ga = 0;
			j->gb = 0;
		}
		else
		{
			j->ia = j->ga;
			j->ib = j->gb;
			if (!jc_rect(j, n, m0, n0, j->mem[1] + j->moff[1][d],
						 j->weight[1][d], 0, 1.0))
			{
				j->ga = j->ia;
				j->gb = j->ib;
				return 0;
			}
			j->ga = 0;
			j->gb = 0;
		}
	}
	return 1;
}

/* Pairs inside the group of distinct set d. */
static inline uint64_t
jc_group_pairs(const SjJaccardJoin *j, uint32_t d)
{
	uint64_t	n0 = j->weight[0][d];

	return j->self ? n0 * (n0 - (n0 > 0)) / 2 : n0 * j->weight[1][d];
}

/* Pairs inside groups gset .. gend, counted. */
static uint64_t
jc_group_count(const SjJaccardJoin *j)
{
	uint64_t	c = 0;
	uint32_t	d;

	for (d = j->gset; d < j->gend; d++)
		c += jc_group_pairs(j, d);
	return c;
}

/*
 * The next range of groups for the cursor: [0, nsets) once where the
 * groups are not shared, else the next range claimed (the ranges cut
 * first, at equal sums of pairs).  Returns 0 when none is left, -1 out of
 * memory, -2 where the claim failed (the devices cut them differently).
 */
static int
jc_next_groups(SjJaccardJoin *j)
{
	long long	u;

	if (j->group_claim == NULL)
	{
		if (j->gstarted)
			return 0;
		j->gstarted = 1;
		j->gset = 0;
		j->gend = j->nsets;
		return 1;
	}
	if (j->gcuts == NULL)
	{
		uint64_t	total = 0,
					acc = 0;
		uint32_t	k = 1,
					d;

		j->gcuts = malloc(((size_t) j->ngroup_units + 1) * sizeof(uint32_t));
		if (j->gcuts == NULL)
			return -1;
		for (d = 0; d < j->nsets; d++)
			total += jc_group_pairs(j, d);
		j->gcuts[0] = 0;
		for (d = 0; d < j->nsets && k < j->ngroup_units; d++)
		{
			acc += jc_group_pairs(j, d);
			/* a cut after d once the pairs so far reach k / n of all */
			while (k < j->ngroup_units &&
				   (double) acc >= (double) total * k / j->ngroup_units)
				j->gcuts[k++] = d + 1;
		}
		while (k <= j->ngroup_units)
			j->gcuts[k++] = j->nsets;
	}
	u = j->group_claim(j->group_ctx, j->ngroup_units);
	if (u == -3)
		return -1;
	if (u < -1 || u >= (long long) j->ngroup_units)
		return -2;
	if (u < 0)
		return 0;
	j->gstarted = 1;
	j->gset = j->gcuts[u];
	j->gend = j->gcuts[u + 1];
	j->ga = 0;
	j->gb = 0;
	return 1;
}

/* ----------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------- */

/* Common part of begin: checks, preparation, bounds, optional CPU index. */
/* Argument and input checks, in the order of their messages. */
static SjStatus
jc_check(const SjSets *left, const SjSets *right, double threshold,
		 const SjJoinOptions *options, char *errmsg)
{
	SjStatus	st;

	if (left == NULL || options == NULL)
		return jc_error(errmsg, SJ_ERR_INVALID, "jaccard_join: missing input or options");
	if (!(threshold > 0.0 && threshold <= 1.0))
		return jc_error(errmsg, SJ_ERR_INVALID,
						"jaccard_join: threshold must be in (0, 1]");
	st = jc_check_input(left, "left", options->cpu_threads, errmsg);
	if (st == SJ_OK && right)
		st = jc_check_input(right, "right", options->cpu_threads, errmsg);
	return st;
}

/* Take over a preparation's arrays (adopt is left empty). */
static void
jc_adopt(SjJaccardJoin *j, SjJaccardPrepared *p)
{
	int			side;

	j->nsets = p->nsets;
	j->universe = p->universe;
	j->maxsize = p->maxsize;
	j->off = p->off;
	j->tok = p->tok;
	j->len = p->len;
	for (side = 0; side < 2; side++)
	{
		j->moff[side] = p->moff[side];
		j->mem[side] = p->mem[side];
		j->weight[side] = p->weight[side];
	}
	memset(p, 0, sizeof(*p));
}

/*
 * Begin a join: check (unless the caller has), prepare on the host, adopt
 * a preparation or borrow another handle's (which must outlive this one),
 * derive the bounds, and index for CPU probing if asked.
 */
static SjStatus
jc_begin(const SjSets *left, const SjSets *right, double threshold,
		 const SjJoinOptions *options, int cpu_index, int checked,
		 SjJaccardPrepared *adopt, const SjJaccardJoin *borrow,
		 SjJaccardJoin **join, char *errmsg)
{
	SjJaccardJoin *j;
	SjStatus	st;
	double		t0 = sj_now_ms(),
				prep_ms = adopt ? adopt->prep_ms : 0.0;

	if (join == NULL)
		return jc_error(errmsg, SJ_ERR_INVALID, "jaccard_join: no handle pointer");
	*join = NULL;
	if (checked)
		st = left == NULL || options == NULL ?
			jc_error(errmsg, SJ_ERR_INVALID, "jaccard_join: missing input or options") :
			SJ_OK;
	else
		st = jc_check(left, right, threshold, options, errmsg);
	if (st != SJ_OK)
		return st;

	j = calloc(1, sizeof(SjJaccardJoin));
	if (j == NULL)
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory in jaccard_join");
	j->threshold = threshold;
	j->self = right == NULL;
	j->count_only = options->count_only != 0;
	j->nthreads = options->cpu_threads > 0 ? options->cpu_threads : 1;
	j->max_batch = options->max_batch_pairs ? options->max_batch_pairs : JC_DEFAULT_BATCH;
	atomic_init(&j->chunk_records, 0);
	atomic_init(&j->worker_error, 0);
	j->phase = JC_FETCH;

	if (borrow)
	{
		SjJaccardPrepared view;

		sj_jaccard_prepared_view(borrow, &view);
		jc_adopt(j, &view);
		j->borrowed = 1;
		st = SJ_OK;
	}
	else if (adopt)
	{
		jc_adopt(j, adopt);
		st = SJ_OK;
	}
	else
		st = jc_prepare(j, left, right, errmsg);
	if (st == SJ_OK)
		st = jc_bounds(j, errmsg);
	if (st == SJ_OK && cpu_index)
		st = jc_build_index(j, errmsg);
	if (st == SJ_OK)
	{
		j->workers = aligned_alloc(_Alignof(JcWorker),
								   (size_t) j->nthreads * sizeof(JcWorker));
		if (j->workers)
			memset(j->workers, 0, (size_t) j->nthreads * sizeof(JcWorker));
		j->segs = calloc((size_t) j->nthreads + 1, sizeof(JcSegment));
		if (j->workers == NULL || j->segs == NULL)
			st = jc_error(errmsg, SJ_ERR_NOMEM, "out of memory in jaccard_join");
	}
	if (st == SJ_OK && !j->count_only)
	{
		j->out_cap = j->max_batch < 65536 ? j->max_batch : 65536;
		j->out_left = malloc(j->out_cap * sizeof(uint32_t));
		j->out_right = malloc(j->out_cap * sizeof(uint32_t));
		j->out_value = malloc(j->out_cap * sizeof(double));
		if (j->out_left == NULL || j->out_right == NULL || j->out_value == NULL)
			st = jc_error(errmsg, SJ_ERR_NOMEM, "out of memory in jaccard_join");
	}
	if (st != SJ_OK)
	{
		sj_jaccard_cpu_end(j);
		return st;
	}
	j->chunk = (uint32_t) (256 * j->nthreads);
	if (j->chunk > j->nsets)
		j->chunk = j->nsets > 0 ? j->nsets : 1;
	j->timings.build_ms = sj_now_ms() - t0 + prep_ms;
	snprintf(j->timings.strategy, sizeof(j->timings.strategy),
			 "cpu ppjoin, %u distinct sets", j->nsets);
	*join = j;
	return SJ_OK;
}

/* Begin a jaccard_join on the CPU: prepare and index. */
SjStatus
sj_jaccard_cpu_begin(const SjSets *left, const SjSets *right, double threshold,
					 const SjJoinOptions *options, SjJaccardJoin **join,
					 char *errmsg)
{
	return jc_begin(left, right, threshold, options, 1, 0, NULL, NULL, join, errmsg);
}

/* Grow the output arrays towards max_batch (they start small). */
static int
jc_grow_output(SjJaccardJoin *j)
{
	size_t		cap = j->out_cap * 2;
	uint32_t   *l,
			   *r;
	double	   *v;

	if (cap > j->max_batch)
		cap = j->max_batch;
	l = realloc(j->out_left, cap * sizeof(uint32_t));
	if (l == NULL)
		return 0;
	j->out_left = l;
	r = realloc(j->out_right, cap * sizeof(uint32_t));
	if (r == NULL)
		return 0;
	j->out_right = r;
	v = realloc(j->out_value, cap * sizeof(double));
	if (v == NULL)
		return 0;
	j->out_value = v;
	j->out_cap = cap;
	return 1;
}

/* The next batch of pairs (or of the count); see the file header. */
SjStatus
sj_jaccard_cpu_next(SjJaccardJoin *j, SjPairBatch *batch, int *done,
					char *errmsg)
{
	double		t0 = sj_now_ms();
	size_t		n = 0;
	SjStatus	st = SJ_OK;

	if (j == NULL || batch == NULL || done == NULL)
		return jc_error(errmsg, SJ_ERR_INVALID, "jaccard_join: bad arguments to next");
	memset(batch, 0, sizeof(*batch));
	*done = 0;

	while (j->phase != JC_DONE)
	{
		if (j->phase == JC_FETCH)
		{
			int			exhausted = 0;

			if (sj_now_ms() - t0 > JC_CALL_MS &&
				(n > 0 || j->pending_count > 0 || sj_now_ms() - t0 > 2 * JC_CALL_MS))
				break;
			st = jc_fetch(j, &exhausted, errmsg);
			if (st != SJ_OK)
				break;
			j->phase = exhausted ? JC_GROUPS : JC_EXPAND;
		}
		else if (j->phase == JC_EXPAND)
		{
			if (j->count_only || jc_expand(j, &n))
				j->phase = JC_FETCH;
			else if (j->out_cap < j->max_batch && jc_grow_output(j))
				continue;
			else
				break;
		}
		else if (j->phase == JC_GROUPS)
		{
			/* the current range of groups, or the next one */
			if (!j->gstarted || j->gset >= j->gend)
			{
				int			more = jc_next_groups(j);

				if (more < 0)
				{
					st = more == -1
						? jc_error(errmsg, SJ_ERR_NOMEM, "jaccard_join: out of memory")
						: jc_error(errmsg, SJ_ERR_INTERNAL,
								   "jaccard_join: the devices could not share the pairs inside groups");
					break;
				}
				if (!more)
				{
					j->phase = JC_DONE;
					continue;
				}
			}
			if (j->count_only)
			{
				j->pending_count += jc_group_count(j);
				j->gset = j->gend;
			}
			else if (jc_groups(j, &n))
				j->gset = j->gend;
			else if (j->out_cap < j->max_batch && jc_grow_output(j))
				continue;
			else
				break;
		}
	}
	j->timings.probe_ms += sj_now_ms() - t0;
	if (st != SJ_OK)
		return st;
	if (j->count_only)
	{
		batch->count = (size_t) j->pending_count;
		j->pending_count = 0;
	}
	else
	{
		batch->count = n;
		batch->left = j->out_left;
		batch->right = j->out_right;
		batch->value = j->out_value;
	}
	if (batch->count > 0 || j->phase == JC_DONE)
		j->timings.batches++;
	*done = j->phase == JC_DONE;
	return SJ_OK;
}

/* Time spent so far, and the strategy. */
void
sj_jaccard_cpu_timings(const SjJaccardJoin *j, SjTimings *timings)
{
	if (timings == NULL)
		return;
	if (j == NULL)
	{
		memset(timings, 0, sizeof(*timings));
		return;
	}
	*timings = j->timings;
}

/* Free everything (NULL is a no-op). */
void
sj_jaccard_cpu_end(SjJaccardJoin *j)
{
	int			w,
				side;

	if (j == NULL)
		return;
	if (j->workers)
	{
		for (w = 0; w < j->nthreads; w++)
		{
			free(j->workers[w].slot);
			free(j->workers[w].cand);
			free(j->workers[w].ru);
			free(j->workers[w].rv);
			free(j->workers[w].rsim);
		}
		free(j->workers);
	}
	for (side = 0; side < 2 && !j->borrowed; side++)
	{
		free(j->moff[side]);
		free(j->mem[side]);
		free(j->weight[side]);
	}
	if (!j->borrowed)
	{
		free(j->off);
		free(j->tok);
		free(j->len);
	}
	free(j->minov);
	free(j->minsize);
	free(j->size_start);
	free(j->list_off);
	free(j->post);
	free(j->tasks);
	free(j->gcuts);
	free(j->pending);
	free(j->segs);
	free(j->out_left);
	free(j->out_right);
	free(j->out_value);
	free(j);
}

/* ----------------------------------------------------------------------
 * For the GPU engine and the engine tests (declared in sjjaccard.h; none
 * is part of the adapter's boundary)
 * ---------------------------------------------------------------------- */

/*
 * Prepare a join without a CPU index: the distinct sets, their members and
 * the bounds, for a device engine that probes on its own and feeds records
 * back through sj_jaccard_set_source().  next/timings/end are the CPU
 * engine's.
 */
SjStatus
sj_jaccard_prepare(const SjSets *left, const SjSets *right, double threshold,
				   const SjJoinOptions *options, SjJaccardJoin **join,
				   char *errmsg)
{
	return jc_begin(left, right, threshold, options, 0, 0, NULL, NULL, join, errmsg);
}

/*
 * The distinct sets in probe order (size ascending), tokens renumbered by
 * frequency and sorted, and member counts per side (weight_right is NULL
 * for a self-join).
 */
void
sj_jaccard_prepared_sets(const SjJaccardJoin *j, uint32_t *nsets,
						 uint32_t *universe, const uint64_t **offsets,
						 const uint32_t **tokens, const uint32_t **weight_left,
						 const uint32_t **weight_right)
{
	*nsets = j->nsets;
	*universe = j->universe;
	*offsets = j->off;
	*tokens = j->tok;
	*weight_left = j->weight[0];
	*weight_right = j->self ? NULL : j->weight[1];
}

/*
 * The exact bounds: minov (2 * maxsize + 1 entries, by the sum of the two
 * lengths), minsize (maxsize + 1, by length) and size_start (maxsize + 2).
 */
void
sj_jaccard_prepared_bounds(const SjJaccardJoin *j, uint32_t *maxsize,
						   const uint32_t **minov, const uint32_t **minsize,
						   const uint32_t **size_start)
{
	*maxsize = j->maxsize;
	*minov = j->minov;
	*minsize = j->minsize;
	*size_start = j->size_start;
}

/*
 * Replace CPU probing by a record source.  Each call of source returns the
 * next records (distinct pairs u > v with their similarity; arrays owned by
 * the source until its next call) or, for count_only, a count of member
 * pairs, and sets *exhausted once nothing more will come.
 */
void
sj_jaccard_set_source(SjJaccardJoin *j, SjJaccardSource source, void *ctx,
					  const char *strategy)
{
	j->source = source;
	j->source_ctx = ctx;
	j->source_done = 0;
	if (strategy)
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "%s", strategy);
}

/*
 * Share the pairs inside groups of identical sets with the other devices
 * of a spread join (see sjjaccard.h): each device's replica prepares the
 * whole join, and each emits the ranges of groups it claims.
 */
void
sj_jaccard_share_groups(SjJaccardJoin *j, SjJaccardGroupClaim claim, void *ctx,
						uint32_t nunits)
{
	j->group_claim = claim;
	j->group_ctx = ctx;
	j->ngroup_units = nunits > 0 ? nunits : 1;
}

/* Argument and input checks of a preparation (see sjjaccard.h). */
SjStatus
sj_jaccard_check(const SjSets *left, const SjSets *right, double threshold,
				 const SjJoinOptions *options, char *errmsg)
{
	return jc_check(left, right, threshold, options, errmsg);
}

/*
 * sj_jaccard_prepare for checked inputs, preparing on the host or adopting
 * a preparation made elsewhere (the GPU's); see sjjaccard.h.
 */
SjStatus
sj_jaccard_prepare_checked(const SjSets *left, const SjSets *right,
						   double threshold, const SjJoinOptions *options,
						   SjJaccardPrepared *adopt, SjJaccardJoin **join,
						   char *errmsg)
{
	SjStatus	st = jc_begin(left, right, threshold, options, 0, 1, adopt, NULL,
							  join, errmsg);

	sj_jaccard_prepared_free(adopt);	/* whatever was not taken over */
	return st;
}

/*
 * A handle over another's preparation (see sjjaccard.h): the same inputs,
 * threshold and options, the arrays borrowed, the bounds its own.
 */
SjStatus
sj_jaccard_prepare_borrowed(const SjSets *left, const SjSets *right,
							double threshold, const SjJoinOptions *options,
							const SjJaccardJoin *from, SjJaccardJoin **join,
							char *errmsg)
{
	if (from == NULL)
		return jc_error(errmsg, SJ_ERR_INVALID, "jaccard_join: nothing to borrow");
	return jc_begin(left, right, threshold, options, 0, 1, NULL, from, join, errmsg);
}

/* Free a preparation's arrays and zero it. */
void
sj_jaccard_prepared_free(SjJaccardPrepared *p)
{
	int			side;

	if (p == NULL)
		return;
	free(p->off);
	free(p->tok);
	free(p->len);
	for (side = 0; side < 2; side++)
	{
		free(p->moff[side]);
		free(p->mem[side]);
		free(p->weight[side]);
	}
	memset(p, 0, sizeof(*p));
}

/* The handle's prepared arrays, still owned by the handle (tests). */
void
sj_jaccard_prepared_view(const SjJaccardJoin *j, SjJaccardPrepared *view)
{
	int			side;

	memset(view, 0, sizeof(*view));
	view->nsets = j->nsets;
	view->universe = j->universe;
	view->maxsize = j->maxsize;
	view->off = j->off;
	view->tok = j->tok;
	view->len = j->len;
	for (side = 0; side < 2; side++)
	{
		view->moff[side] = j->moff[side];
		view->mem[side] = j->mem[side];
		view->weight[side] = j->weight[side];
	}
}

/*
 * Co-processing: build the CPU engine's index over a prepared join, so that
 * its filters can feed a device that verifies (sj_jaccard_filter_next).
 */
SjStatus
sj_jaccard_filter_begin(SjJaccardJoin *j, char *errmsg)
{
	if (j->post != NULL)
		return SJ_OK;
	return jc_build_index(j, errmsg);
}

/*
 * The next candidate pairs of the CPU engine's filters (length, prefix and
 * positional, on options->cpu_threads threads), unverified: distinct sets
 * x > y as x << 32 | y, at most cap of them into buf, each pair exactly once
 * over the whole join.  *n may be 0 before the end (a chunk of probes with
 * no candidates); *exhausted is set once every probe is done.  A call
 * takes about JC_CHUNK_MS (chunks are sized as the CPU engine's are).
 */
SjStatus
sj_jaccard_filter_next(SjJaccardJoin *j, uint64_t *buf, size_t cap, size_t *n,
					   int *exhausted, char *errmsg)
{
	SjStatus	st;

	*n = 0;
	*exhausted = 0;
	if (j->post == NULL || buf == NULL || cap == 0)
		return jc_error(errmsg, SJ_ERR_INVALID,
						"jaccard_join: candidate filtering without an index or a buffer");
	if (j->next_probe < j->nsets || j->npending > 0)
	{
		st = jc_filter_chunk(j, buf, cap, n, errmsg);
		if (st != SJ_OK)
			return st;
	}
	*exhausted = j->next_probe >= j->nsets && j->npending == 0;
	return SJ_OK;
}
