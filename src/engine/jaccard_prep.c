/*
 * jaccard_prep.c
 *		The CPU jaccard engine's preparation: input checks, token
 *		renumbering by frequency, sorting, hashing and grouping of identical
 *		sets into distinct sets, and the exact bounds (steps 1 to 3 of the
 *		header of jaccard_cpu.c).  The GPU engine computes the same arrays on
 *		the device (cuda/jaccard_prep.cu) and falls back on these.
 *
 * Every array is malloc'd into the handle, which owns it; the inputs are
 * only read.
 */
#include <stdlib.h>
#include <string.h>

#include "jaccard_int.h"

/* qsort comparison of two uint32. */
static int
jc_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Sort a small or large array of uint32 ascending. */
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

/* Bits needed to write x. */
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

/*
 * Are the n tokens t distinct?  Ascending ones are (one pass).  Others are
 * marked in seen (a stamp a token id, the set's number plus one) where the
 * checking thread has that array, else compared pairwise up to
 * JC_PAIRWISE_MAX of them, beyond that as a sorted copy (pairwise again if
 * the copy cannot be allocated: slower, never wrong).
 */
#define JC_PAIRWISE_MAX 128

static int
jc_distinct(const uint32_t *t, uint64_t n, uint32_t *seen, uint32_t stamp)
{
	uint64_t	k,
				l;
	uint32_t   *copy;
	int			ok = 1;

	for (k = 1; k < n && t[k] > t[k - 1]; k++)
		;
	if (k >= n)
		return 1;
	if (seen)
	{
		for (k = 0; k < n; k++)
		{
			if (seen[t[k]] == stamp)
				return 0;
			seen[t[k]] = stamp;
		}
		return 1;
	}
	if (n > JC_PAIRWISE_MAX && (copy = malloc(n * sizeof(uint32_t))) != NULL)
	{
		memcpy(copy, t, n * sizeof(uint32_t));
		jc_sort_u32(copy, (uint32_t) n);
		for (k = 1; k < n && ok; k++)
			ok = copy[k] != copy[k - 1];
		free(copy);
		return ok;
	}
	for (k = 1; k < n; k++)
	{
		uint32_t	v = t[k];
		int			same = 0;

		for (l = 0; l < k; l++)
			same |= t[l] == v;
		if (same)
			return 0;
	}
	return 1;
}

/*
 * Is set i of s well formed (offsets, distinct tokens below universe)?
 * seen: NULL, or universe stamps that no set after i has written.
 */
static inline int
jc_set_ok(const SjSets *s, uint32_t i, uint32_t *seen)
{
	uint64_t	a = s->offsets[i],
				b = s->offsets[i + 1],
				k;

	if (b < a || b > s->offsets[s->n] || b - a >= JC_MAX_SET_SIZE)
		return 0;
	for (k = a; k < b; k++)
		if (s->tokens[k] >= s->universe)
			return 0;
	return jc_distinct(s->tokens + a, b - a, seen, i + 1);
}

/* Shared state of the parallel input check. */
typedef struct JcCheckArg
{
	const SjSets *s;
	atomic_int	bad;
	uint32_t  **seen;			/* a thread's stamps (NULL: pairwise), or NULL */
} JcCheckArg;

#define JC_CHECK_TASK 16384

/*
 * Stamps a checking thread (universe entries, zeroed) while they take at
 * most this many bytes over all threads; pages are backed as they are
 * written.
 */
#define JC_CHECK_STAMP_BYTES ((uint64_t) 512 << 20)

static int	jc_check_stamps = 1;	/* sj_jaccard_set_test_check_stamps */

void
sj_jaccard_set_test_check_stamps(int on)
{
	jc_check_stamps = on != 0;
}

/* Parallel task: check a range of JC_CHECK_TASK sets. */
static void
jc_check_task(void *p, uint64_t task, int worker)
{
	JcCheckArg *c = (JcCheckArg *) p;
	uint64_t	i = task * JC_CHECK_TASK,
				end = i + JC_CHECK_TASK;

	if (end > c->s->n)
		end = c->s->n;
	for (; i < end; i++)
		if (!jc_set_ok(c->s, (uint32_t) i, c->seen ? c->seen[worker] : NULL))
		{
			atomic_store(&c->bad, 1);
			return;
		}
}

/*
 * Check one input: offsets, distinct tokens below universe.  The
 * check runs in parallel; a failure is located again serially for the
 * message.
 */
SjStatus
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
	c.seen = NULL;
	if (nthreads < 1)
		nthreads = 1;
	if (jc_check_stamps &&
		(uint64_t) s->universe * sizeof(uint32_t) * nthreads <= JC_CHECK_STAMP_BYTES &&
		(c.seen = calloc(nthreads, sizeof(uint32_t *))) != NULL)
	{
		int			w;

		for (w = 0; w < nthreads; w++)
			if ((c.seen[w] = calloc((size_t) s->universe + 1, sizeof(uint32_t))) == NULL)
				break;
		if (w < nthreads)
		{
			/* pairwise, for want of memory */
			while (w > 0)
				free(c.seen[--w]);
			free(c.seen);
			c.seen = NULL;
		}
	}
	if (sj_parallel_for(nthreads, (s->n + (uint64_t) JC_CHECK_TASK - 1) / JC_CHECK_TASK,
						jc_check_task, &c) != SJ_OK)
		atomic_store(&c.bad, 1);
	if (c.seen)
	{
		int			w;

		for (w = 0; w < nthreads; w++)
			free(c.seen[w]);
		free(c.seen);
	}
	if (!atomic_load(&c.bad))
		return SJ_OK;
	for (i = 0; i < s->n; i++)
	{
		uint64_t	a = s->offsets[i],
					b = s->offsets[i + 1];

		if (jc_set_ok(s, i, NULL))
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
					 "%s set %u: a token repeated or not below the universe",
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
	uint64_t   *tk;				/* sort scratch; then member fill cursor */
	uint64_t   *tv;				/* sort scratch; then representatives */
	uint32_t   *gid;			/* distinct set of each sorted set */
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

/* Free the preparation's scratch arrays (not those moved into the handle). */
static void
jc_prep_free(JcPrepArg *a)
{
	free(a->keys);
	free(a->vals);
	free(a->tk);
	free(a->tv);
	free(a->gid);
	free(a->isnew);
	free(a->rtok[0]);
	free(a->rtok[1]);
	free((void *) a->map);
	free((void *) a->dict);
	free((void *) a->dict_rank);
}

/* Total tokens of both inputs and the largest set's size. */
static void
jc_input_totals(const JcPrepArg *a, int nsides, uint64_t *total,
				uint32_t *maxsize)
{
	int			side;
	uint64_t	k;

	*total = 0;
	*maxsize = 0;
	for (side = 0; side < nsides; side++)
	{
		const SjSets *s = a->in[side];

		if (s->n > 0)
		{
			*total += s->offsets[s->n];
			for (k = 0; k < s->n; k++)
				if (s->offsets[k + 1] - s->offsets[k] > *maxsize)
					*maxsize = (uint32_t) (s->offsets[k + 1] - s->offsets[k]);
		}
	}
}

/*
 * Renumbered, sorted and hashed copies of every input set (in parallel),
 * then all sets sorted by their grouping key (size, hash); 0 when out of
 * memory.
 */
static int
jc_renumber_sets(JcPrepArg *a, int nsides, uint64_t nall, uint32_t maxsize)
{
	uint64_t	ntasks = 0;
	int			side;

	a->keys = malloc(nall * sizeof(uint64_t));
	a->vals = malloc(nall * sizeof(uint64_t));
	a->tk = malloc(nall * sizeof(uint64_t));
	a->tv = malloc(nall * sizeof(uint64_t));
	a->gid = malloc(nall * sizeof(uint32_t));
	if (a->keys == NULL || a->vals == NULL || a->tk == NULL || a->tv == NULL ||
		a->gid == NULL)
		return 0;
	for (side = 0; side < nsides; side++)
	{
		const SjSets *s = a->in[side];

		a->kbase[side] = side == 0 ? 0 : a->in[0]->n;
		a->roff[side] = s->offsets;
		a->rtok[side] = malloc((s->n > 0 ? s->offsets[s->n] : 0) * sizeof(uint32_t) + 1);
		if (a->rtok[side] == NULL)
			return 0;
		ntasks += (s->n + JC_PREP_TASK - 1) / JC_PREP_TASK;
	}
	if (nsides == 1)
	{
		static const SjSets empty = {0, 0, NULL, NULL};

		a->in[1] = &empty;
	}
	if (sj_parallel_for(a->nthreads, ntasks, jc_prep_task, a) != SJ_OK)
		return 0;
	jc_radix_sort(a->keys, a->vals, a->tk, a->tv, nall, 40 + jc_bits(maxsize));
	return 1;
}

/*
 * Pass 1: which sets start a distinct set (in parallel: a set belongs to
 * the group of its predecessor iff key and tokens are equal), then number
 * the distinct sets (a->gid per sorted set, a->tv their representatives)
 * and count members and tokens; 0 when out of memory.
 */
static int
jc_group_sets(JcPrepArg *a, uint64_t nall, uint32_t *ndistinct,
			  uint64_t *dtok, uint64_t mcount[2])
{
	uint32_t	nd = 0;
	uint64_t	k;

	a->isnew = malloc(nall + 1);
	if (a->isnew == NULL)
		return 0;
	a->keys_sorted = a->keys;
	a->vals_sorted = a->vals;
	if (sj_parallel_for(a->nthreads, (nall + JC_GROUP_TASK - 1) / JC_GROUP_TASK,
						jc_group_task, a) != SJ_OK)
		return 0;
	for (k = 0; k < nall; k++)
	{
		uint32_t	n = (uint32_t) (a->keys[k] >> 40);

		if (n == 0)
			continue;
		if (a->isnew[k])
		{
			a->tv[nd] = a->vals[k]; /* representative of distinct set nd */
			nd++;
			*dtok += n;
		}
		a->gid[k] = nd - 1;
		mcount[a->vals[k] >> 32]++;
	}
	*ndistinct = nd;
	return 1;
}

/*
 * Pass 2: the handle's distinct sets in order (tokens copied in parallel)
 * and its member arrays, allocated; 0 when out of memory.
 */
static int
jc_distinct_sets(SjJaccardJoin *j, JcPrepArg *a, int nsides, uint32_t nd,
				 uint64_t dtok, const uint64_t mcount[2])
{
	int			side;
	uint32_t	d;

	j->nsets = nd;
	j->off = malloc(((size_t) nd + 1) * sizeof(uint64_t));
	j->tok = malloc((dtok + 1) * sizeof(uint32_t));
	j->len = malloc(((size_t) nd + 1) * sizeof(uint32_t));
	if (j->off == NULL || j->tok == NULL || j->len == NULL)
		return 0;
	for (side = 0; side < nsides; side++)
	{
		j->moff[side] = calloc((size_t) nd + 1, sizeof(uint64_t));
		j->mem[side] = malloc((mcount[side] + 1) * sizeof(uint32_t));
		j->weight[side] = calloc((size_t) nd + 1, sizeof(uint32_t));
		if (j->moff[side] == NULL || j->mem[side] == NULL || j->weight[side] == NULL)
			return 0;
	}
	j->off[0] = 0;
	for (d = 0; d < nd; d++)
	{
		int			sd = (int) (a->tv[d] >> 32);
		uint32_t	idx = (uint32_t) a->tv[d];
		uint32_t	n = (uint32_t) (a->roff[sd][idx + 1] - a->roff[sd][idx]);

		j->len[d] = n;
		j->off[d + 1] = j->off[d] + n;
	}
	a->join = j;
	a->reps = a->tv;
	return sj_parallel_for(j->nthreads, (nd + (uint64_t) JC_GROUP_TASK - 1) / JC_GROUP_TASK,
						   jc_copy_task, a) == SJ_OK;
}

/*
 * The member lists of every distinct set, per side, in input order (the
 * sort is stable); 0 when out of memory.
 */
static int
jc_fill_members(SjJaccardJoin *j, JcPrepArg *a, int nsides, uint64_t nall)
{
	uint32_t	nd = j->nsets,
				d;
	uint64_t	k;
	int			side;
	uint64_t   *pos[2] = {a->tk, NULL};

	for (k = 0; k < nall; k++)
		if ((a->keys[k] >> 40) != 0)
			j->weight[a->vals[k] >> 32][a->gid[k]]++;
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

	/* a->tk is free again: use it as the fill cursor of side 0 */
	for (d = 0; d < nd; d++)
		a->tk[d] = j->moff[0][d];
	if (nsides == 2)
	{
		pos[1] = malloc(((size_t) nd + 1) * sizeof(uint64_t));
		if (pos[1] == NULL)
			return 0;
		for (d = 0; d < nd; d++)
			pos[1][d] = j->moff[1][d];
	}
	for (k = 0; k < nall; k++)
	{
		if ((a->keys[k] >> 40) == 0)
			continue;
		side = (int) (a->vals[k] >> 32);
		j->mem[side][pos[side][a->gid[k]]++] = (uint32_t) a->vals[k];
	}
	free(pos[1]);
	return 1;
}

/*
 * Preparation proper: renumber, sort, hash and group the sets of both
 * inputs into the handle's distinct sets and member lists.
 */
SjStatus
jc_prepare(SjJaccardJoin *j, const SjSets *left, const SjSets *right,
		   char *errmsg)
{
	JcPrepArg	a;
	SjStatus	st;
	uint64_t	nall,
				total,
				dtok = 0,
				mcount[2] = {0, 0};
	uint32_t	universe,
				nd = 0,
				maxsize;
	int			nsides = right ? 2 : 1;
	int			ok;

	memset(&a, 0, sizeof(a));
	a.in[0] = left;
	a.in[1] = right;
	a.nthreads = j->nthreads;
	universe = left->universe;
	if (right && right->universe > universe)
		universe = right->universe;
	jc_input_totals(&a, nsides, &total, &maxsize);
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
	ok = jc_renumber_sets(&a, nsides, nall, maxsize) &&
		jc_group_sets(&a, nall, &nd, &dtok, mcount) &&
		jc_distinct_sets(j, &a, nsides, nd, dtok, mcount) &&
		jc_fill_members(j, &a, nsides, nall);
	if (ok)
		j->maxsize = nd > 0 ? j->len[nd - 1] : 0;
	jc_prep_free(&a);
	if (!ok)
		return jc_error(errmsg, SJ_ERR_NOMEM, "out of memory preparing jaccard_join");
	return SJ_OK;
}

/*
 * Exact bounds from the double test (see the file header).  minov[s] is
 * non-decreasing in s (a larger denominator can only lower the quotient),
 * so one sweep finds every entry.
 */
SjStatus
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
