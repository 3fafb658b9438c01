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
 * Ownership: every array is malloc'd and owned by the handle; the inputs
 * are only read.  Nothing here prints, exits or calls into PostgreSQL.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sjengine.h"
#include "sjjaccard.h"

#define JC_DEFAULT_BATCH	((size_t) 1 << 20)
#define JC_MAX_SET_SIZE		((uint32_t) 1 << 24)	/* bounds tables are this
													 * long at most */
#define JC_MAX_SETS			((uint64_t) 1 << 31)
#define JC_REC_CAP			((uint64_t) 1 << 22)	/* records per chunk, soft */
#define JC_CHUNK_MS			100.0	/* target time of one probe chunk */
#define JC_CALL_MS			250.0	/* next() returns after about this */
#define JC_DEAD				UINT32_MAX	/* candidate pruned for good */
#define JC_POS_MASK			0x3FFFFFFFu /* posting: position bits */
#define JC_SIDE_SHIFT		30		/* posting: side bits above */

/* A record source: how the GPU engine feeds distinct pairs to the handle. */
typedef SjStatus (*SjJaccardSource) (void *ctx, const uint32_t **u,
									 const uint32_t **v, const double **sim,
									 size_t *n, uint64_t *count,
									 int *exhausted, char *errmsg);

/* One inverted-list entry: a distinct set and its token's position in it. */
typedef struct JcPost
{
	uint32_t	id;
	uint32_t	pos;			/* position | side mask << JC_SIDE_SHIFT */
} JcPost;

/* A candidate of the running probe (PPJoin's accumulated overlap). */
typedef struct JcCand
{
	const uint32_t *tok;		/* the candidate's tokens */
	uint32_t	len;
	uint32_t	overlap;		/* prefix matches so far, or JC_DEAD */
	uint32_t	xpos;			/* position of the last match in the probe */
	uint32_t	ypos;			/* ... and in the candidate */
	uint32_t	alpha;			/* overlap required for this pair */
	uint32_t	id;
} JcCand;

/* A range of probe sets; one task of the parallel loop. */
typedef struct JcTask
{
	uint32_t	from;
	uint32_t	to;
	uint32_t	resume;			/* first probe not done (== to when done) */
	uint32_t	skip;			/* co-processing: candidates of probe resume
								 * already handed out */
} JcTask;

/* Per-thread state of the probe phase (cache-line aligned: no sharing). */
typedef struct JcWorker
{
	_Alignas(128) uint32_t *slot;			/* per distinct set: candidate index + 1 */
	JcCand	   *cand;
	size_t		ncand;
	size_t		capcand;
	uint32_t   *ru;				/* result records: probe, partner, sim */
	uint32_t   *rv;
	double	   *rsim;
	size_t		nrec;
	size_t		caprec;
	uint64_t	count;			/* count_only: member pairs found */
} JcWorker;

/* A run of result records (one per worker, or the GPU's buffer). */
typedef struct JcSegment
{
	const uint32_t *u;
	const uint32_t *v;
	const double *sim;
	size_t		n;
} JcSegment;

typedef enum JcPhase
{
	JC_FETCH,					/* get the next chunk of records */
	JC_EXPAND,					/* expand records into member pairs */
	JC_GROUPS,					/* pairs inside groups of identical sets */
	JC_DONE
} JcPhase;

struct SjJaccardJoin
{
	/* parameters */
	double		threshold;
	int			self;
	int			count_only;
	int			nthreads;
	size_t		max_batch;

	/* distinct sets in size order, tokens renumbered and sorted */
	uint32_t	nsets;
	uint32_t	universe;		/* renumbered token ids are < universe */
	uint64_t   *off;			/* nsets + 1 */
	uint32_t   *tok;
	uint32_t   *len;			/* nsets */

	/* members of each distinct set, per side (CSR; side 1 only two-table) */
	uint64_t   *moff[2];
	uint32_t   *mem[2];
	uint32_t   *weight[2];		/* member counts, nsets each */

	/* exact bounds (see the file header) */
	uint32_t	maxsize;
	uint32_t   *minov;			/* 2 * maxsize + 1 entries, by |x| + |y| */
	uint32_t   *minsize;		/* maxsize + 1 entries, by |x| */
	uint32_t   *size_start;		/* maxsize + 2: first set of length >= s */

	/* inverted index over indexing prefixes (CPU probing only) */
	uint64_t   *list_off;		/* universe + 1 */
	JcPost	   *post;

	/* probe progress */
	uint32_t	next_probe;
	uint32_t	chunk;			/* probes in the next chunk */
	JcTask	   *tasks;
	size_t		ntasks;
	size_t		captasks;
	JcTask	   *pending;		/* tasks cut short by the record cap */
	size_t		npending;
	size_t		cappending;
	JcWorker   *workers;
	atomic_uint_fast64_t chunk_records;
	atomic_int	worker_error;

	/* co-processing: the caller's candidate buffer (sj_jaccard_filter_next) */
	uint64_t   *cbuf;
	size_t		ccap;
	atomic_uint_fast64_t cand_used;

	/* an external record source replaces CPU probing (GPU engine) */
	SjJaccardSource source;
	void	   *source_ctx;
	int			source_done;

	/* records being expanded, and the expansion cursor */
	JcSegment  *segs;
	int			nsegs;
	int			seg;
	size_t		rec;
	int			part;
	uint64_t	ia;
	uint64_t	ib;
	JcPhase		phase;
	uint64_t	pending_count;	/* count_only: counted, not yet returned */

	/* group cursor */
	uint32_t	gset;
	uint64_t	ga;
	uint64_t	gb;

	/* output batch */
	uint32_t   *out_left;
	uint32_t   *out_right;
	double	   *out_value;
	size_t		out_cap;

	SjTimings	timings;
};

/* ----------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------- */

/* Write an error message. */
static SjStatus
jc_error(char *errmsg, SjStatus status, const char *msg)
{
	if (errmsg)
		snprintf(errmsg, SJ_ERRMSG_LEN, "%s", msg);
	return status;
}

static inline uint32_t
jc_min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The similarity test of sjengine.h for overlap o and |x| + |y| = s. */
static inline int
jc_pass(uint64_t o, uint64_t s, double t)
{
	return (double) o / (double) (s - o) >= t;
}

/* Grow *arr (elements of size elem) to hold at least need; 0 on failure. */
static int
jc_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t		ncap;
	void	   *p;

	if (need <= *cap)
		return 1;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (p == NULL)
		return 0;
	*arr = p;
	*cap = ncap;
	return 1;
}

/* Sort a small or large array of uint32 ascending. */
static int
jc_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static void
jc_sort_u32(uint32_t *a, uint32_t n)
{
	uint32_t	i,
				k;

	if (n > 32)
	{
		qsort(a, n, sizeof(uint32_t), jc_cmp_u32);
		return;
	}
	for (i = 1; i < n; i++)
	{
		uint32_t	x = a[i];

		for (k = i; k > 0 && a[k - 1] > x; k--)
			a[k] = a[k - 1];
		a[k] = x;
	}
}

/*
 * Stable LSD radix sort of n (key, value) pairs on the low `bits` bits of
 * the keys, 11 bits a pass.  tk/tv are scratch arrays of n entries; the
 * result is left in keys/vals.  vals may be NULL.
 */
static void
jc_radix_sort(uint64_t *keys, uint64_t *vals, uint64_t *tk, uint64_t *tv,
			  size_t n, int bits)
{
	size_t		hist[2048];
	int			shift;

	for (shift = 0; shift < bits; shift += 11)
	{
		size_t		i,
					sum = 0;
		uint64_t   *sw;

		memset(hist, 0, sizeof(hist));
		for (i = 0; i < n; i++)
			hist[(keys[i] >> shift) & 2047]++;
		for (i = 0; i < 2048; i++)
		{
			size_t		c = hist[i];

			hist[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
		{
			size_t		d = hist[(keys[i] >> shift) & 2047]++;

			tk[d] = keys[i];
			if (vals)
				tv[d] = vals[i];
		}
		/* the sorted run is now in tk/tv: swap roles (copied back below) */
		sw = keys;
		keys = tk;
		tk = sw;
		if (vals)
		{
			sw = vals;
			vals = tv;
			tv = sw;
		}
	}
	/* after an odd number of passes the result sits in the scratch arrays */
	if (((bits + 10) / 11) % 2 == 1)
	{
		memcpy(tk, keys, n * sizeof(uint64_t));
		if (vals)
			memcpy(tv, vals, n * sizeof(uint64_t));
	}
}

static int
jc_bits(uint64_t x)
{
	int			b = 0;

	while (x)
	{
		b++;
		x >>= 1;
	}
	return b;
}

/* ----------------------------------------------------------------------
 * Preparation
 * ---------------------------------------------------------------------- */

/* Is set i of s well formed (offsets, strictly ascending tokens below universe)? */
static inline int
jc_set_ok(const SjSets *s, uint32_t i)
{
	uint64_t	a = s->offsets[i],
				b = s->offsets[i + 1],
				k;

	if (b < a || b > s->offsets[s->n] || b - a >= JC_MAX_SET_SIZE)
		return 0;
	for (k = a; k < b; k++)
		if (s->tokens[k] >= s->universe || (k > a && s->tokens[k] <= s->tokens[k - 1]))
			return 0;
	return 1;
}

/* Shared state of the parallel input check. */
typedef struct JcCheckArg
{
	const SjSets *s;
	atomic_int	bad;
} JcCheckArg;

#define JC_CHECK_TASK 16384

static void
jc_check_task(void *p, uint64_t task, int worker)
{
	JcCheckArg *c = (JcCheckArg *) p;
	uint64_t	i = task * JC_CHECK_TASK,
				end = i + JC_CHECK_TASK;

	if (end > c->s->n)
		end = c->s->n;
	for (; i < end; i++)
		if (!jc_set_ok(c->s, (uint32_t) i))
		{
			atomic_store(&c->bad, 1);
			return;
		}
}

/*
 * Check one input: offsets, strictly ascending tokens below universe.  The
 * check runs in parallel; a failure is located again serially for the
 * message.
 */
static SjStatus
jc_check_input(const SjSets *s, const char *name, int nthreads, char *errmsg)
{
	JcCheckArg	c;
	uint32_t	i;
	char		msg[SJ_ERRMSG_LEN];

	if (s->n == 0)
		return SJ_OK;
	if (s->offsets == NULL || s->offsets[0] != 0 ||
		(s->offsets[s->n] > 0 && s->tokens == NULL))
	{
		snprintf(msg, sizeof(msg), "%s sets: bad offsets or tokens", name);
		return jc_error(errmsg, SJ_ERR_INVALID, msg);
	}
	c.s = s;
	atomic_init(&c.bad, 0);
	if (sj_parallel_for(nthreads, (s->n + (uint64_t) JC_CHECK_TASK - 1) / JC_CHECK_TASK,
						jc_check_task, &c) == SJ_OK && !atomic_load(&c.bad))
		return SJ_OK;
	for (i = 0; i < s->n; i++)
	{
		uint64_t	a = s->offsets[i],
					b = s->offsets[i + 1];

		if (jc_set_ok(s, i))
			continue;
		if (b < a || b > s->offsets[s->n])
			snprintf(msg, sizeof(msg), "%s sets: offsets decrease at set %u", name, i);
		else if (b - a >= JC_MAX_SET_SIZE)
		{
			snprintf(msg, sizeof(msg),
					 "%s set %u has %llu elements, more than the engine's limit of %u",
					 name, i, (unsigned long long) (b - a), JC_MAX_SET_SIZE - 1);
			return jc_error(errmsg, SJ_ERR_TOO_LARGE, msg);
		}
		else
			snprintf(msg, sizeof(msg),
					 "%s set %u: tokens not strictly ascending below the universe",
					 name, i);
		return jc_error(errmsg, SJ_ERR_INVALID, msg);
	}
	return SJ_OK;
}

/* Shared state of the parallel renumber-sort-hash step. */
typedef struct JcPrepArg
{
	const SjSets *in[2];
	const uint32_t *map;		/* token -> new id (direct), or NULL */
	const uint32_t *dict;		/* sorted distinct tokens (dictionary mode) */
	const uint32_t *dict_rank;	/* new id of dict[k] */
	uint32_t	ndict;
	const uint64_t *roff[2];	/* offsets of the renumbered copies */
	uint32_t   *rtok[2];
	uint64_t   *keys;			/* (size << 40 | hash >> 24) per set */
	uint64_t   *vals;			/* side << 32 | index */
	uint64_t	kbase[2];		/* first key slot of each side */
	int			nthreads;
	uint32_t  **hist;			/* per-worker token counts (frequency step) */
	const uint64_t *keys_sorted;	/* grouping step: sorted keys, values */
	const uint64_t *vals_sorted;
	uint8_t    *isnew;			/* grouping step: set starts a distinct set */
	SjJaccardJoin *join;		/* grouping step: destination */
	const uint64_t *reps;		/* grouping step: representative per distinct */
} JcPrepArg;

#define JC_PREP_TASK 4096

/* The side and first set of task `task` over both inputs' sets. */
static int
jc_task_range(const JcPrepArg *a, uint64_t task, uint64_t *first, uint64_t *last)
{
	int			side = 0;
	uint32_t	n0 = a->in[0]->n;

	*first = task * JC_PREP_TASK;
	if (*first >= n0)
	{
		side = 1;
		*first -= (uint64_t) ((n0 + JC_PREP_TASK - 1) / JC_PREP_TASK) * JC_PREP_TASK;
	}
	*last = *first + JC_PREP_TASK;
	if (*last > a->in[side]->n)
		*last = a->in[side]->n;
	return side;
}

/* Count the tokens of one task's sets into the worker's histogram. */
static void
jc_count_task(void *p, uint64_t task, int worker)
{
	JcPrepArg  *a = (JcPrepArg *) p;
	uint64_t	first,
				last;
	int			side = jc_task_range(a, task, &first, &last);
	const SjSets *s = a->in[side];
	uint32_t   *h = a->hist[worker];
	uint64_t	k;

	for (k = s->offsets[first]; k < s->offsets[last]; k++)
		h[s->tokens[k]]++;
}

/* Renumber, sort and hash the sets of one task. */
static void
jc_prep_task(void *p, uint64_t task, int worker)
{
	JcPrepArg  *a = (JcPrepArg *) p;
	uint64_t	first,
				last,
				i;
	int			side = jc_task_range(a, task, &first, &last);

	for (i = first; i < last; i++)
	{
		const SjSets *s = a->in[side];
		uint64_t	b = s->offsets[i];
		uint32_t	n = (uint32_t) (s->offsets[i + 1] - b);
		uint32_t   *dst = a->rtok[side] + a->roff[side][i];
		uint32_t	k;

		a->vals[a->kbase[side] + i] = ((uint64_t) side << 32) | i;
		if (n == 0)
		{
			a->keys[a->kbase[side] + i] = 0;
			continue;
		}
		for (k = 0; k < n; k++)
		{
			uint32_t	t = s->tokens[b + k];

			if (a->map)
				dst[k] = a->map[t];
			else
			{
				uint32_t	lo = 0,
							hi = a->ndict;

				while (hi - lo > 1)
				{
					uint32_t	mid = lo + (hi - lo) / 2;

					if (a->dict[mid] <= t)
						lo = mid;
					else
						hi = mid;
				}
				dst[k] = a->dict_rank[lo];
			}
		}
		jc_sort_u32(dst, n);
		a->keys[a->kbase[side] + i] = ((uint64_t) n << 40) | (sj_jaccard_hash(dst, n) >> 24);
	}
}

/*
 * Token frequencies with one histogram per worker, when those are small
 * next to the input; returns 0 (nothing counted) otherwise.
 */
static int
jc_count_parallel(JcPrepArg *a, uint32_t universe, uint64_t total, uint32_t *freq)
{
	int			w,
				ok = 1;
	uint64_t	ntasks,
				k;

	if (a->nthreads < 2 || total < ((uint64_t) 1 << 20) ||
		(uint64_t) universe * a->nthreads > total)
		return 0;
	a->hist = calloc((size_t) a->nthreads, sizeof(uint32_t *));
	if (a->hist == NULL)
		return 0;
	for (w = 0; w < a->nthreads && ok; w++)
		ok = (a->hist[w] = calloc((size_t) universe + 1, sizeof(uint32_t))) != NULL;
	ntasks = (a->in[0]->n + (uint64_t) JC_PREP_TASK - 1) / JC_PREP_TASK +
		(a->in[1] ? (a->in[1]->n + (uint64_t) JC_PREP_TASK - 1) / JC_PREP_TASK : 0);
	if (ok)
		ok = sj_parallel_for(a->nthreads, ntasks, jc_count_task, a) == SJ_OK;
	for (w = 0; w < a->nthreads; w++)
	{
		if (ok)
			for (k = 0; k < universe; k++)
				freq[k] += a->hist[w][k];
		free(a->hist[w]);
	}
	free(a->hist);
	a->hist = NULL;
	return ok;
}

/*
 * Token renumbering: new ids by ascending frequency over both inputs, ties
 * by token id.  Sets a->map (a direct map of universe entries) or, for a
 * sparse universe, a->dict/a->dict_rank (sorted distinct tokens and their
 * new ids); the caller frees whichever is set.  *ndistinct receives the
 * number of distinct tokens, the renumbered universe.
 */
static SjStatus
jc_rank_tokens(JcPrepArg *a, uint32_t universe, uint64_t total,
			   uint32_t *ndistinct, char *errmsg)
{
	uint32_t   *freq = NULL,
			   *dict = NULL;
	uint64_t   *keys = NULL,
			   *tk = NULL;
	uint64_t	ndist = 0,
				maxfreq = 0,
				k;
	int			side;
	int			direct = (uint64_t) universe <= total * 4 + 65536;

	if (direct)
	{
		freq = calloc((size_t) universe + 1, sizeof(uint32_t));
		if (freq == NULL)
			goto nomem;
		if (!jc_count_parallel(a, universe, total, freq))
		{
			for (side = 0; side < 2; side++)
			{
				const SjSets *s = a->in[side];

				for (k = 0; s && s->n > 0 && k < s->offsets[s->n]; k++)
					freq[s->tokens[k]]++;
			}
		}
		for (k = 0; k < universe; k++)
		{
			if (freq[k])
				ndist++;
			if (freq[k] > maxfreq)
				maxfreq = freq[k];
		}
	}
	else
	{
		/* a sparse universe: sort all tokens into a dictionary */
		uint64_t   *all = malloc((total + 1) * sizeof(uint64_t));
		uint64_t   *tmp = malloc((total + 1) * sizeof(uint64_t));
		uint64_t	n = 0;

		if (all == NULL || tmp == NULL)
		{
			free(all);
			free(tmp);
			goto nomem;
		}
		for (side = 0; side < 2; side++)
		{
			const SjSets *s = a->in[side];

			for (k = 0; s && s->n > 0 && k < s->offsets[s->n]; k++)
				all[n++] = s->tokens[k];
		}
		jc_radix_sort(all, NULL, tmp, NULL, n, 32);
		free(tmp);
		dict = malloc((n + 1) * sizeof(uint32_t));
		freq = malloc((n + 1) * sizeof(uint32_t));
		if (dict == NULL || freq == NULL)
		{
			free(all);
			goto nomem;
		}
		for (k = 0; k < n; k++)
		{
			if (ndist == 0 || dict[ndist - 1] != (uint32_t) all[k])
			{
				dict[ndist] = (uint32_t) all[k];
				freq[ndist] = 0;
				ndist++;
			}
			freq[ndist - 1]++;
			if (freq[ndist - 1] > maxfreq)
				maxfreq = freq[ndist - 1];
		}
		free(all);
	}

	/* order the present tokens by (frequency, id): key = freq << 32 | slot */
	keys = malloc((ndist + 1) * sizeof(uint64_t));
	tk = malloc((ndist + 1) * sizeof(uint64_t));
	if (keys == NULL || tk == NULL)
		goto nomem;
	if (direct)
	{
		uint64_t	m = 0;

		for (k = 0; k < universe; k++)
			if (freq[k])
				keys[m++] = ((uint64_t) freq[k] << 32) | k;
	}
	else
	{
		for (k = 0; k < ndist; k++)
			keys[k] = ((uint64_t) freq[k] << 32) | k;
	}
	jc_radix_sort(keys, NULL, tk, NULL, ndist, 32 + jc_bits(maxfreq));

	/* freq becomes the map from slot (token, or dictionary index) to new id */
	for (k = 0; k < ndist; k++)
		freq[(uint32_t) keys[k]] = (uint32_t) k;
	free(keys);
	free(tk);
	if (direct)
		a->map = freq;
	else
	{
		a->dict = dict;
		a->dict_rank = freq;
		a->ndict = (uint32_t) ndist;
	}
	*ndistinct = (uint32_t) ndist;
	return SJ_OK;

nomem:
	free(freq);
	free(dict);
	free(keys);
	free(tk);
	return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory preparing jaccard_join");
}

#define JC_GROUP_TASK 16384

/* Tokens of sorted entry k (side << 32 | index in vals). */
static inline const uint32_t *
jc_sorted_tokens(const JcPrepArg *a, uint64_t val)
{
	int			sd = (int) (val >> 32);

	return a->rtok[sd] + a->roff[sd][(uint32_t) val];
}

/* Grouping: does sorted entry k start a new distinct set? */
static void
jc_group_task(void *p, uint64_t task, int worker)
{
	JcPrepArg  *a = (JcPrepArg *) p;
	uint64_t	k = task * JC_GROUP_TASK,
				end = k + JC_GROUP_TASK,
				nall = (uint64_t) a->in[0]->n + a->in[1]->n;

	if (end > nall)
		end = nall;
	for (; k < end; k++)
	{
		uint64_t	key = a->keys_sorted[k];
		uint32_t	n = (uint32_t) (key >> 40);

		a->isnew[k] = n > 0 &&
			(k == 0 || a->keys_sorted[k - 1] != key ||
			 memcmp(jc_sorted_tokens(a, a->vals_sorted[k]),
					jc_sorted_tokens(a, a->vals_sorted[k - 1]),
					(size_t) n * sizeof(uint32_t)) != 0);
	}
}

/* Grouping: copy the tokens of a range of distinct sets. */
static void
jc_copy_task(void *p, uint64_t task, int worker)
{
	JcPrepArg  *a = (JcPrepArg *) p;
	SjJaccardJoin *j = a->join;
	uint64_t	d = task * JC_GROUP_TASK,
				end = d + JC_GROUP_TASK;

	if (end > j->nsets)
		end = j->nsets;
	for (; d < end; d++)
		memcpy(j->tok + j->off[d], jc_sorted_tokens(a, a->reps[d]),
			   (size_t) j->len[d] * sizeof(uint32_t));
}

/*
 * Preparation proper: renumber, sort, hash and group the sets of both
 * inputs into the handle's distinct sets and member lists.
 */
static SjStatus
jc_prepare(SjJaccardJoin *j, const SjSets *left, const SjSets *right,
		   char *errmsg)
{
	JcPrepArg	a;
	SjStatus	st;
	uint64_t	nall,
				total = 0,
				dtok = 0,
				mcount[2] = {0, 0},
				k;
	uint64_t   *tk = NULL,
			   *tv = NULL;
	uint32_t   *gid = NULL;
	uint32_t	universe,
				nd = 0,
				maxsize = 0,
				d;
	int			side,
				nsides = right ? 2 : 1;
	uint64_t	ntasks;

	memset(&a, 0, sizeof(a));
	a.in[0] = left;
	a.in[1] = right;
	a.nthreads = j->nthreads;
	universe = left->universe;
	if (right && right->universe > universe)
		universe = right->universe;
	for (side = 0; side < nsides; side++)
	{
		const SjSets *s = a.in[side];

		if (s->n > 0)
		{
			total += s->offsets[s->n];
			for (k = 0; k < s->n; k++)
				if (s->offsets[k + 1] - s->offsets[k] > maxsize)
					maxsize = (uint32_t) (s->offsets[k + 1] - s->offsets[k]);
		}
	}
	nall = (uint64_t) left->n + (right ? right->n : 0);
	if (nall >= JC_MAX_SETS)
		return jc_error(errmsg, SJ_ERR_TOO_LARGE,
						"jaccard_join supports fewer than 2^31 sets in all");
	if (total == 0)
	{
		j->nsets = 0;
		return SJ_OK;
	}

	st = jc_rank_tokens(&a, universe, total, &j->universe, errmsg);
	if (st != SJ_OK)
		return st;

	/* renumbered copies of every input, plus a grouping key per set */
	a.keys = malloc(nall * sizeof(uint64_t));
	a.vals = malloc(nall * sizeof(uint64_t));
	tk = malloc(nall * sizeof(uint64_t));
	tv = malloc(nall * sizeof(uint64_t));
	gid = malloc(nall * sizeof(uint32_t));
	if (a.keys == NULL || a.vals == NULL || tk == NULL || tv == NULL || gid == NULL)
		goto nomem;
	ntasks = 0;
	for (side = 0; side < nsides; side++)
	{
		const SjSets *s = a.in[side];

		a.kbase[side] = side == 0 ? 0 : left->n;
		a.roff[side] = s->offsets;
		a.rtok[side] = malloc((s->n > 0 ? s->offsets[s->n] : 0) * sizeof(uint32_t) + 1);
		if (a.rtok[side] == NULL)
			goto nomem;
		ntasks += (s->n + JC_PREP_TASK - 1) / JC_PREP_TASK;
	}
	if (nsides == 1)
	{
		static const SjSets empty = {0, 0, NULL, NULL};

		a.in[1] = &empty;
	}
	st = sj_parallel_for(j->nthreads, ntasks, jc_prep_task, &a);
	if (st != SJ_OK)
		goto nomem;
	jc_radix_sort(a.keys, a.vals, tk, tv, nall, 40 + jc_bits(maxsize));

	/*
	 * Pass 1: which sets start a distinct set (in parallel: a set belongs
	 * to the group of its predecessor iff key and tokens are equal), then
	 * number the distinct sets and count members and tokens.
	 */
	a.isnew = malloc(nall + 1);
	if (a.isnew == NULL)
		goto nomem;
	a.keys_sorted = a.keys;
	a.vals_sorted = a.vals;
	st = sj_parallel_for(j->nthreads, (nall + JC_GROUP_TASK - 1) / JC_GROUP_TASK,
						 jc_group_task, &a);
	if (st != SJ_OK)
		goto nomem;
	for (k = 0; k < nall; k++)
	{
		uint32_t	n = (uint32_t) (a.keys[k] >> 40);

		if (n == 0)
			continue;
		if (a.isnew[k])
		{
			tv[nd] = a.vals[k];	/* representative of distinct set nd */
			nd++;
			dtok += n;
		}
		gid[k] = nd - 1;
		mcount[a.vals[k] >> 32]++;
	}

	/* pass 2: distinct sets in order (tokens copied in parallel), members */
	j->nsets = nd;
	j->off = malloc(((size_t) nd + 1) * sizeof(uint64_t));
	j->tok = malloc((dtok + 1) * sizeof(uint32_t));
	j->len = malloc(((size_t) nd + 1) * sizeof(uint32_t));
	if (j->off == NULL || j->tok == NULL || j->len == NULL)
		goto nomem;
	for (side = 0; side < nsides; side++)
	{
		j->moff[side] = calloc((size_t) nd + 1, sizeof(uint64_t));
		j->mem[side] = malloc((mcount[side] + 1) * sizeof(uint32_t));
		j->weight[side] = calloc((size_t) nd + 1, sizeof(uint32_t));
		if (j->moff[side] == NULL || j->mem[side] == NULL || j->weight[side] == NULL)
			goto nomem;
	}
	j->off[0] = 0;
	for (d = 0; d < nd; d++)
	{
		int			sd = (int) (tv[d] >> 32);
		uint32_t	idx = (uint32_t) tv[d];
		uint32_t	n = (uint32_t) (a.roff[sd][idx + 1] - a.roff[sd][idx]);

		j->len[d] = n;
		j->off[d + 1] = j->off[d] + n;
	}
	a.join = j;
	a.reps = tv;
	st = sj_parallel_for(j->nthreads, (nd + (uint64_t) JC_GROUP_TASK - 1) / JC_GROUP_TASK,
						 jc_copy_task, &a);
	if (st != SJ_OK)
		goto nomem;
	for (k = 0; k < nall; k++)
		if ((a.keys[k] >> 40) != 0)
			j->weight[a.vals[k] >> 32][gid[k]]++;
	for (side = 0; side < nsides; side++)
	{
		uint64_t	fill = 0;

		for (d = 0; d < nd; d++)
		{
			j->moff[side][d] = fill;
			fill += j->weight[side][d];
		}
		j->moff[side][nd] = fill;
	}
	{
		uint64_t   *pos[2] = {tk, NULL};

		/* tk is free again: use it as the fill cursor of side 0 */
		for (d = 0; d < nd; d++)
			tk[d] = j->moff[0][d];
		if (nsides == 2)
		{
			pos[1] = malloc(((size_t) nd + 1) * sizeof(uint64_t));
			if (pos[1] == NULL)
				goto nomem;
			for (d = 0; d < nd; d++)
				pos[1][d] = j->moff[1][d];
		}
		for (k = 0; k < nall; k++)
		{
			if ((a.keys[k] >> 40) == 0)
				continue;
			side = (int) (a.vals[k] >> 32);
			j->mem[side][pos[side][gid[k]]++] = (uint32_t) a.vals[k];
		}
		free(pos[1]);
	}
	j->maxsize = nd > 0 ? j->len[nd - 1] : 0;

	free(a.keys);
	free(a.vals);
	free(tk);
	free(tv);
	free(gid);
	free(a.isnew);
	free(a.rtok[0]);
	free(a.rtok[1]);
	free((void *) a.map);
	free((void *) a.dict);
	free((void *) a.dict_rank);
	return SJ_OK;

nomem:
	free(a.keys);
	free(a.vals);
	free(tk);
	free(tv);
	free(gid);
	free(a.isnew);
	free(a.rtok[0]);
	free(a.rtok[1]);
	free((void *) a.map);
	free((void *) a.dict);
	free((void *) a.dict_rank);
	return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory preparing jaccard_join");
}

/*
 * Exact bounds from the double test (see the file header).  minov[s] is
 * non-decreasing in s (a larger denominator can only lower the quotient),
 * so one sweep finds every entry.
 */
static SjStatus
jc_bounds(SjJaccardJoin *j, char *errmsg)
{
	uint32_t	m = j->maxsize,
				s,
				o = 1,
				d;
	double		t = j->threshold;

	j->minov = malloc(((size_t) 2 * m + 2) * sizeof(uint32_t));
	j->minsize = malloc(((size_t) m + 2) * sizeof(uint32_t));
	j->size_start = malloc(((size_t) m + 3) * sizeof(uint32_t));
	if (j->minov == NULL || j->minsize == NULL || j->size_start == NULL)
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory preparing jaccard_join");

	j->minov[0] = j->minov[1] = 1;
	for (s = 2; s <= 2 * m; s++)
	{
		while (!jc_pass(o, s, t))
			o++;
		j->minov[s] = o;
	}

	/* minsize(l): least k with k / l >= t, the same expression at overlap k */
	j->minsize[0] = 0;
	for (s = 1; s <= m; s++)
	{
		uint32_t	k = (uint32_t) (t * s);

		if (k < 1)
			k = 1;
		while (k > 1 && jc_pass(k - 1, (uint64_t) s + k - 1, t))
			k--;
		while (!jc_pass(k, (uint64_t) s + k, t))
			k++;
		j->minsize[s] = k;
	}

	/* size_start[s]: the first distinct set of length >= s */
	d = 0;
	for (s = 0; s <= m + 1; s++)
	{
		while (d < j->nsets && j->len[d] < s)
			d++;
		j->size_start[s] = d;
	}
	return SJ_OK;
}

/* Tokens of the probing prefix of a set of length l. */
static inline uint32_t
jc_probe_prefix(const SjJaccardJoin *j, uint32_t l)
{
	return l - j->minov[l + j->minsize[l]] + 1;
}

/* Tokens of the indexing prefix of a set of length l (probes are longer). */
static inline uint32_t
jc_index_prefix(const SjJaccardJoin *j, uint32_t l)
{
	return l - j->minov[2 * l] + 1;
}

/* Sides on which distinct set d has members: bit 0 left, bit 1 right. */
static inline uint32_t
jc_sides(const SjJaccardJoin *j, uint32_t d)
{
	if (j->self)
		return 1;
	return (j->weight[0][d] ? 1u : 0u) | (j->weight[1][d] ? 2u : 0u);
}

/* Build the inverted index over the indexing prefixes, lists by set order. */
static SjStatus
jc_build_index(SjJaccardJoin *j, char *errmsg)
{
	uint64_t   *fill;
	uint32_t	d,
				i,
				u = j->universe;

	j->list_off = calloc((size_t) u + 2, sizeof(uint64_t));
	fill = malloc(((size_t) u + 1) * sizeof(uint64_t));
	if (j->list_off == NULL || fill == NULL)
	{
		free(fill);
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory building the jaccard_join index");
	}
	for (d = 0; d < j->nsets; d++)
	{
		const uint32_t *t = j->tok + j->off[d];
		uint32_t	p = jc_index_prefix(j, j->len[d]);

		for (i = 0; i < p; i++)
			j->list_off[t[i] + 1]++;
	}
	for (i = 0; i < u; i++)
	{
		j->list_off[i + 1] += j->list_off[i];
		fill[i] = j->list_off[i];
	}
	j->post = malloc((j->list_off[u] + 1) * sizeof(JcPost));
	if (j->post == NULL)
	{
		free(fill);
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory building the jaccard_join index");
	}
	for (d = 0; d < j->nsets; d++)
	{
		const uint32_t *t = j->tok + j->off[d];
		uint32_t	p = jc_index_prefix(j, j->len[d]);
		uint32_t	side = jc_sides(j, d) << JC_SIDE_SHIFT;

		for (i = 0; i < p; i++)
		{
			JcPost	   *e = &j->post[fill[t[i]]++];

			e->id = d;
			e->pos = i | side;
		}
	}
	free(fill);
	return SJ_OK;
}

/* ----------------------------------------------------------------------
 * Probing (CPU)
 * ---------------------------------------------------------------------- */

/*
 * Overlap of two sorted lists, stopping early once `need` matches are out
 * of reach (the result is then below need, and the pair does not join).
 */
static inline uint32_t
jc_overlap(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
		   uint32_t need)
{
	uint32_t	i = 0,
				k = 0,
				c = 0;

	if (jc_min32(na, nb) < need)
		return 0;
	while (i < na && k < nb)
	{
		if (a[i] == b[k])
		{
			c++;
			i++;
			k++;
		}
		else
		{
			if (a[i] < b[k])
				i++;
			else
				k++;
			if (c + jc_min32(na - i, nb - k) < need)
				return c;
		}
	}
	return c;
}

/* Append a result record (a distinct pair) to a worker; 0 on failure. */
static int
jc_emit(SjJaccardJoin *j, JcWorker *w, uint32_t x, uint32_t y, double sim)
{
	if (j->count_only)
	{
		if (j->self)
			w->count += (uint64_t) j->weight[0][x] * j->weight[0][y];
		else
			w->count += (uint64_t) j->weight[0][x] * j->weight[1][y] +
				(uint64_t) j->weight[1][x] * j->weight[0][y];
		return 1;
	}
	if (w->nrec == w->caprec)
	{
		size_t		cap = w->caprec ? w->caprec * 2 : 1024;
		uint32_t   *ru = realloc(w->ru, cap * sizeof(uint32_t));
		uint32_t   *rv;
		double	   *rs;

		if (ru == NULL)
			return 0;
		w->ru = ru;
		rv = realloc(w->rv, cap * sizeof(uint32_t));
		if (rv == NULL)
			return 0;
		w->rv = rv;
		rs = realloc(w->rsim, cap * sizeof(double));
		if (rs == NULL)
			return 0;
		w->rsim = rs;
		w->caprec = cap;
	}
	w->ru[w->nrec] = x;
	w->rv[w->nrec] = y;
	w->rsim[w->nrec] = sim;
	w->nrec++;
	return 1;
}

/* First entry of list [p, e) whose set is >= id (lists are by set order). */
static inline const JcPost *
jc_lower_bound(const JcPost *p, const JcPost *e, uint32_t id)
{
	size_t		n = (size_t) (e - p);

	while (n > 0)
	{
		size_t		half = n / 2;

		if (p[half].id < id)
		{
			p += half + 1;
			n -= half + 1;
		}
		else
			n = half;
	}
	return p;
}

/*
 * Probe distinct set x against the earlier distinct sets: candidates from
 * the probing prefix (length and positional filters), then verification.
 * With filter_only (co-processing) it stops before verifying: the
 * candidates are left in w->cand[0, *ncand) (pruned ones with overlap
 * JC_DEAD), their slots set for the caller to clear.  Always inlined with
 * a constant filter_only, so the CPU engine's own probe (jc_probe_one) is
 * the code it was.  Returns 0 when memory ran out.
 */
__attribute__((always_inline)) static inline int
jc_probe_mode(SjJaccardJoin *j, JcWorker *w, uint32_t x, int filter_only,
			  size_t *ncand_out)
{
	const uint32_t *tx = j->tok + j->off[x];
	uint32_t	lx = j->len[x];
	uint32_t	ms = j->minsize[lx];
	uint32_t	lo = j->size_start[ms];
	uint32_t   *slot = w->slot;
	JcCand	   *cand = w->cand;
	size_t		ncand = 0,
				c;
	uint32_t	plen,
				want,
				i;
	double		t = j->threshold;

	if (filter_only)
		*ncand_out = 0;
	if (lo >= x)
		return 1;
	plen = jc_probe_prefix(j, lx);
	want = 0;
	if (!j->self)
	{
		uint32_t	sx = jc_sides(j, x);

		/* partners need members opposite to ours */
		want = ((sx & 1) ? 2u : 0u) | ((sx & 2) ? 1u : 0u);
		want <<= JC_SIDE_SHIFT;
	}
	for (i = 0; i < plen; i++)
	{
		uint32_t	tk = tx[i];
		const JcPost *e = j->post + j->list_off[tk + 1];
		const JcPost *p = jc_lower_bound(j->post + j->list_off[tk], e, lo);
		uint32_t	rx = lx - i - 1;

		for (; p < e && p->id < x; p++)
		{
			uint32_t	y = p->id;
			uint32_t	pos = p->pos & JC_POS_MASK;
			uint32_t	s;

			if (want && !(p->pos & want))
				continue;
			s = slot[y];
			if (s == 0)
			{
				uint64_t	oy = j->off[y];
				uint32_t	ly = (uint32_t) (j->off[y + 1] - oy);
				uint32_t	alpha = j->minov[lx + ly];
				JcCand	   *cd;

				if (ncand == w->capcand)
				{
					if (!jc_reserve((void **) &w->cand, &w->capcand, ncand + 1,
									sizeof(JcCand)))
						return 0;
					cand = w->cand;
				}
				cd = &cand[ncand++];
				slot[y] = (uint32_t) ncand;
				cd->id = y;
				cd->tok = j->tok + oy;
				cd->len = ly;
				cd->alpha = alpha;
				cd->xpos = i;
				cd->ypos = pos;
				/* positional filter at the first (smallest) common token */
				cd->overlap = 1 + jc_min32(rx, ly - pos - 1) >= alpha ? 1 : JC_DEAD;
			}
			else
			{
				JcCand	   *cd = &cand[s - 1];

				if (cd->overlap == JC_DEAD)
					continue;
				if (cd->overlap + 1 + jc_min32(rx, cd->len - pos - 1) >= cd->alpha)
				{
					cd->overlap++;
					cd->xpos = i;
					cd->ypos = pos;
				}
				else
					cd->overlap = JC_DEAD;
			}
		}
	}
	if (filter_only)
	{
		*ncand_out = ncand;
		return 1;
	}

	/*
	 * Verify: the overlap so far is exact up to the last match, so the
	 * merge starts after it.  The candidates' tokens are fetched ahead.
	 */
	for (c = 0; c < ncand; c++)
	{
		JcCand	   *cd = &cand[c];
		uint32_t	ly = cd->len,
					inter = cd->overlap,
					need;
		double		sim;

		if (c + 6 < ncand)
			__builtin_prefetch(cand[c + 6].tok + cand[c + 6].ypos);
		slot[cd->id] = 0;
		if (inter == JC_DEAD)
			continue;
		need = inter < cd->alpha ? cd->alpha - inter : 0;
		inter += jc_overlap(tx + cd->xpos + 1, lx - cd->xpos - 1,
							cd->tok + cd->ypos + 1, ly - cd->ypos - 1, need);
		if (inter < cd->alpha)
			continue;
		sim = (double) inter / (double) (lx + ly - inter);
		if (sim >= t && !jc_emit(j, w, x, cd->id, sim))
			return 0;
	}
	return 1;
}

/* The CPU engine's probe of distinct set x (see jc_probe_mode). */
static int
jc_probe_one(SjJaccardJoin *j, JcWorker *w, uint32_t x)
{
	return jc_probe_mode(j, w, x, 0, NULL);
}

/*
 * A worker's candidate slots, allocated on its first task (probing or
 * filtering); 0, with the join's error flag set, if out of memory.
 */
static int
jc_worker_slots(SjJaccardJoin *j, JcWorker *w)
{
	if (w->slot == NULL)
		w->slot = calloc((size_t) j->nsets + 1, sizeof(uint32_t));
	if (w->slot == NULL)
	{
		atomic_store(&j->worker_error, 1);
		return 0;
	}
	return 1;
}

/* One task of a chunk: probe its range, stopping at the record cap. */
static void
jc_probe_task(void *arg, uint64_t task, int worker)
{
	SjJaccardJoin *j = (SjJaccardJoin *) arg;
	JcTask	   *tk = &j->tasks[task];
	JcWorker   *w = &j->workers[worker];
	uint32_t	x;

	if (atomic_load(&j->worker_error))
		return;
	if (!jc_worker_slots(j, w))
		return;
	for (x = tk->from; x < tk->to; x++)
	{
		size_t		before = w->nrec;

		if (atomic_load_explicit(&j->chunk_records, memory_order_relaxed) >= JC_REC_CAP)
			break;
		if (!jc_probe_one(j, w, x))
		{
			atomic_store(&j->worker_error, 1);
			/* leave the slot array clean for end(); it is freed anyway */
			break;
		}
		if (w->nrec > before)
			atomic_fetch_add_explicit(&j->chunk_records, w->nrec - before,
									  memory_order_relaxed);
	}
	tk->resume = x;
}

/*
 * The task list of the next chunk: the ranges a previous chunk left undone
 * (record or candidate cap) first, then up to j->chunk fresh probes.
 */
static SjStatus
jc_plan_tasks(SjJaccardJoin *j, char *errmsg)
{
	uint32_t	budget = j->chunk,
				tsize,
				x;
	size_t		k;
	uint64_t	probes = 0;

	tsize = budget / ((uint32_t) j->nthreads * 8);
	if (tsize < 1)
		tsize = 1;
	if (tsize > 256)
		tsize = 256;

	j->ntasks = 0;
	if (!jc_reserve((void **) &j->tasks, &j->captasks,
					j->npending + budget / tsize + 2, sizeof(JcTask)))
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory in jaccard_join");
	for (k = 0; k < j->npending; k++)
		j->tasks[j->ntasks++] = j->pending[k];
	j->npending = 0;
	x = j->next_probe;
	while (x < j->nsets && probes < budget)
	{
		JcTask	   *tk = &j->tasks[j->ntasks++];
		uint32_t	n = j->nsets - x;

		if (n > tsize)
			n = tsize;
		tk->from = x;
		tk->to = x + n;
		tk->skip = 0;
		x += n;
		probes += n;
	}
	j->next_probe = x;
	return SJ_OK;
}

/*
 * After a chunk: keep what its tasks left undone for the next chunk, and
 * count the probes done.
 */
static SjStatus
jc_keep_leftovers(SjJaccardJoin *j, uint64_t *probes, char *errmsg)
{
	size_t		k;

	*probes = 0;
	for (k = 0; k < j->ntasks; k++)
	{
		JcTask	   *tk = &j->tasks[k];

		*probes += tk->resume - tk->from;
		if (tk->resume < tk->to)
		{
			if (!jc_reserve((void **) &j->pending, &j->cappending,
							j->npending + 1, sizeof(JcTask)))
				return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory in jaccard_join");
			j->pending[j->npending].from = tk->resume;
			j->pending[j->npending].to = tk->to;
			j->pending[j->npending].resume = tk->resume;
			j->pending[j->npending].skip = tk->skip;
			j->npending++;
		}
	}
	return SJ_OK;
}

/*
 * Size the next chunk for about JC_CHUNK_MS and `target` outputs (records,
 * or candidates when co-processing), from the last chunk's probes, time and
 * outputs; smaller while leftovers wait.
 */
static void
jc_size_chunk(SjJaccardJoin *j, uint64_t probes, double ms, uint64_t outputs,
			  double target)
{
	double		next = (double) j->chunk * 4;

	if (probes > 0 && ms > 1.0)
	{
		double		by_time = JC_CHUNK_MS * (double) probes / ms;

		if (by_time < next)
			next = by_time;
	}
	if (probes > 0 && outputs > 0)
	{
		double		by_outputs = target * (double) probes / (double) outputs;

		if (by_outputs < next)
			next = by_outputs;
	}
	if (j->npending > 0 && next > (double) j->chunk / 2)
		next = (double) j->chunk / 2;
	if (next < 1)
		next = 1;
	if (next > (double) j->nsets)
		next = (double) j->nsets;
	j->chunk = (uint32_t) next;
}

/*
 * Probe the next chunk on the CPU threads: first the ranges a previous
 * chunk left undone (record cap), then fresh probes.  The records end up in
 * the workers, one segment each.
 */
static SjStatus
jc_cpu_chunk(SjJaccardJoin *j, char *errmsg)
{
	uint64_t	probes = 0;
	double		t0 = sj_now_ms();
	SjStatus	st;
	int			w;

	for (w = 0; w < j->nthreads; w++)
		j->workers[w].nrec = 0;
	st = jc_plan_tasks(j, errmsg);
	if (st != SJ_OK)
		return st;

	atomic_store(&j->chunk_records, 0);
	st = sj_parallel_for(j->nthreads, j->ntasks, jc_probe_task, j);
	if (st != SJ_OK || atomic_load(&j->worker_error))
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory probing jaccard_join");

	/* what the record cap left undone goes first next time */
	st = jc_keep_leftovers(j, &probes, errmsg);
	if (st != SJ_OK)
		return st;
	jc_size_chunk(j, probes, sj_now_ms() - t0, atomic_load(&j->chunk_records),
				  (double) (JC_REC_CAP / 2));

	/* hand the records over as segments */
	j->nsegs = 0;
	for (w = 0; w < j->nthreads; w++)
	{
		JcWorker   *wk = &j->workers[w];

		j->pending_count += wk->count;
		wk->count = 0;
		if (wk->nrec > 0)
		{
			JcSegment  *sg = &j->segs[j->nsegs++];

			sg->u = wk->ru;
			sg->v = wk->rv;
			sg->sim = wk->rsim;
			sg->n = wk->nrec;
		}
	}
	return SJ_OK;
}

/* ----------------------------------------------------------------------
 * Co-processing: CPU filtering for GPU verification
 * ---------------------------------------------------------------------- */

/*
 * Hand out the surviving candidates of probe x, from survivor `skip` on,
 * into the shared candidate buffer: as many as fit, reserved in one
 * contiguous piece (so the filled part of the buffer never has holes).
 * Returns the survivors handed out so far (skip included); fewer than
 * *alive means the buffer is full.  Clears the probe's slots.
 */
static uint32_t
jc_hand_out(SjJaccardJoin *j, JcWorker *w, uint32_t x, size_t ncand,
			uint32_t skip, uint32_t *alive)
{
	JcCand	   *cand = w->cand;
	uint_fast64_t at;
	uint64_t	got = 0;
	uint32_t	n = 0,
				seen = 0;
	size_t		c;

	for (c = 0; c < ncand; c++)
	{
		w->slot[cand[c].id] = 0;
		n += cand[c].overlap != JC_DEAD;
	}
	*alive = n;
	if (n <= skip)
		return n;
	at = atomic_load(&j->cand_used);
	do
	{
		if (at >= j->ccap)
			return skip;
		got = n - skip;
		if (got > j->ccap - at)
			got = j->ccap - at;
	} while (!atomic_compare_exchange_weak(&j->cand_used, &at, at + got));

	for (c = 0; c < ncand && got > 0; c++)
	{
		if (cand[c].overlap == JC_DEAD)
			continue;
		if (seen++ < skip)
			continue;
		j->cbuf[at++] = (uint64_t) x << 32 | cand[c].id;
		got--;
		skip++;
	}
	return skip;
}

/*
 * One task of a co-processing chunk: filter its range of probes and hand
 * the candidates out, stopping (resumably, inside a probe if need be) when
 * the candidate buffer is full.
 */
static void
jc_filter_task(void *arg, uint64_t task, int worker)
{
	SjJaccardJoin *j = (SjJaccardJoin *) arg;
	JcTask	   *tk = &j->tasks[task];
	JcWorker   *w = &j->workers[worker];
	uint32_t	x,
				skip = tk->skip;

	tk->resume = tk->from;
	if (atomic_load(&j->worker_error))
		return;
	if (!jc_worker_slots(j, w))
		return;
	for (x = tk->from; x < tk->to; x++)
	{
		size_t		ncand;
		uint32_t	alive;

		if (atomic_load_explicit(&j->cand_used, memory_order_relaxed) >= j->ccap)
			break;
		if (!jc_probe_mode(j, w, x, 1, &ncand))
		{
			atomic_store(&j->worker_error, 1);
			break;
		}
		skip = jc_hand_out(j, w, x, ncand, skip, &alive);
		if (skip < alive)
			break;				/* full: the rest of x goes next time */
		skip = 0;
	}
	tk->resume = x;
	tk->skip = x < tk->to ? skip : 0;
}

/*
 * The next chunk of candidates into buf (cap entries): leftovers first,
 * then fresh probes, on the CPU threads.
 */
static SjStatus
jc_filter_chunk(SjJaccardJoin *j, uint64_t *buf, size_t cap, size_t *n,
				char *errmsg)
{
	uint64_t	probes = 0;
	double		t0 = sj_now_ms();
	SjStatus	st;

	st = jc_plan_tasks(j, errmsg);
	if (st != SJ_OK)
		return st;
	j->cbuf = buf;
	j->ccap = cap;
	atomic_store(&j->cand_used, 0);
	st = sj_parallel_for(j->nthreads, j->ntasks, jc_filter_task, j);
	if (st != SJ_OK || atomic_load(&j->worker_error))
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory filtering jaccard_join");
	*n = (size_t) atomic_load(&j->cand_used);
	j->cbuf = NULL;
	st = jc_keep_leftovers(j, &probes, errmsg);
	if (st != SJ_OK)
		return st;
	jc_size_chunk(j, probes, sj_now_ms() - t0, *n, (double) cap / 2);
	return SJ_OK;
}

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
	for (; j->gset < j->nsets; j->gset++)
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

/* Pairs inside groups, counted. */
static uint64_t
jc_group_count(const SjJaccardJoin *j)
{
	uint64_t	c = 0;
	uint32_t	d;

	for (d = 0; d < j->nsets; d++)
	{
		uint64_t	n0 = j->weight[0][d];

		if (j->self)
			c += n0 * (n0 - (n0 > 0)) / 2;
		else
			c += n0 * j->weight[1][d];
	}
	return c;
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
 * Begin a join: check (unless the caller has), prepare on the host or adopt
 * a preparation, derive the bounds, and index for CPU probing if asked.
 */
static SjStatus
jc_begin(const SjSets *left, const SjSets *right, double threshold,
		 const SjJoinOptions *options, int cpu_index, int checked,
		 SjJaccardPrepared *adopt, SjJaccardJoin **join, char *errmsg)
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

	if (adopt)
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
	return jc_begin(left, right, threshold, options, 1, 0, NULL, join, errmsg);
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
			if (j->count_only)
			{
				j->pending_count += jc_group_count(j);
				j->phase = JC_DONE;
			}
			else if (jc_groups(j, &n))
				j->phase = JC_DONE;
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
	for (side = 0; side < 2; side++)
	{
		free(j->moff[side]);
		free(j->mem[side]);
		free(j->weight[side]);
	}
	free(j->off);
	free(j->tok);
	free(j->len);
	free(j->minov);
	free(j->minsize);
	free(j->size_start);
	free(j->list_off);
	free(j->post);
	free(j->tasks);
	free(j->pending);
	free(j->segs);
	free(j->out_left);
	free(j->out_right);
	free(j->out_value);
	free(j);
}

/* ----------------------------------------------------------------------
 * For the GPU engine (it declares the two below itself; the rest are in
 * sjjaccard.h; none is part of the adapter's boundary)
 * ---------------------------------------------------------------------- */

extern void sj_jaccard_prepared_sets(const SjJaccardJoin *j, uint32_t *nsets,
									 uint32_t *universe,
									 const uint64_t **offsets,
									 const uint32_t **tokens,
									 const uint32_t **weight_left,
									 const uint32_t **weight_right);
extern void sj_jaccard_set_source(SjJaccardJoin *j, SjJaccardSource source,
								  void *ctx, const char *strategy);
extern SjStatus sj_jaccard_filter_begin(SjJaccardJoin *j, char *errmsg);
extern SjStatus sj_jaccard_filter_next(SjJaccardJoin *j, uint64_t *buf,
									   size_t cap, size_t *n, int *exhausted,
									   char *errmsg);

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
	return jc_begin(left, right, threshold, options, 0, 0, NULL, join, errmsg);
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
	SjStatus	st = jc_begin(left, right, threshold, options, 0, 1, adopt,
							  join, errmsg);

	sj_jaccard_prepared_free(adopt);	/* whatever was not taken over */
	return st;
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
