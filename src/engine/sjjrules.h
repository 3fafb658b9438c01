/*
 * sjjrules.h
 *		The rules of jaccard_join written once for the CPU engine
 *		(src/engine/jaccard_*.c) and the GPU engine (cuda/jaccard_*.cu):
 *		the similarity and its double test, the prefix lengths derived from
 *		the exact bounds, PPJoin's positional filter, the merge that verifies
 *		a pair, and the member pairs a distinct pair stands for.
 *
 * Both engines must decide every pair the same way, to the bit: the
 * similarity is (double) o / (double) (|x| + |y| - o), IEEE division, no
 * contraction (both builds use -ffp-contract=off / -fmad=false).  minov and
 * minsize are the exact bounds of the CPU engine's preparation (see the
 * header of jaccard_cpu.c): minov[s] is the least overlap of a pair whose
 * sizes add up to s, minsize[l] the least size of a partner of a set of
 * size l.
 *
 * Compiled as C (static inline) and by nvcc (__host__ __device__).
 */
#ifndef SJJRULES_H
#define SJJRULES_H

#include <stdint.h>

#include "sjhd.h"

/* The smaller of two sizes. */
SJ_HD uint32_t
sj_jaccard_min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The double test: does overlap o pass when |x| + |y| = s? */
SJ_HD int
sj_jaccard_pass(uint64_t o, uint64_t s, double t)
{
	return (double) o / (double) (s - o) >= t;
}

/* The similarity of a pair of sizes lx, ly with overlap o (o > 0). */
SJ_HD double
sj_jaccard_sim(uint32_t o, uint32_t lx, uint32_t ly)
{
	return (double) o / (double) (lx + ly - o);
}

/* Tokens of the probing prefix of a set of length l. */
SJ_HD uint32_t
sj_jaccard_probe_prefix(const uint32_t *minov, const uint32_t *minsize,
						uint32_t l)
{
	return l - minov[l + minsize[l]] + 1;
}

/* Tokens of the indexing prefix of a set of length l (probes are longer). */
SJ_HD uint32_t
sj_jaccard_index_prefix(const uint32_t *minov, uint32_t l)
{
	return l - minov[2 * l] + 1;
}

/*
 * PPJoin's positional filter at a common token: with `seen` earlier
 * matches, this one, and rx and ry tokens left after it in the two sets,
 * can the overlap still reach alpha?
 */
SJ_HD int
sj_jaccard_positional(uint32_t seen, uint32_t rx, uint32_t ry, uint32_t alpha)
{
	return seen + 1 + sj_jaccard_min32(rx, ry) >= alpha;
}

/*
 * Overlap of two sorted lists, stopping early once `need` matches are out
 * of reach (the result is then below need, and the pair does not join).
 */
SJ_HD uint32_t
sj_jaccard_overlap(const uint32_t *a, uint32_t na, const uint32_t *b,
				   uint32_t nb, uint32_t need)
{
	uint32_t	i = 0,
				k = 0,
				c = 0;

	if (sj_jaccard_min32(na, nb) < need)
		return 0;
	while (i < na && k < nb)
	{
		uint32_t	x = a[i],
					y = b[k];

		if (x == y)
		{
			c++;
			i++;
			k++;
		}
		else
		{
			if (x < y)
				i++;
			else
				k++;
			if (c + sj_jaccard_min32(na - i, nb - k) < need)
				return c;
		}
	}
	return c;
}

/*
 * Member pairs that distinct pair (u, v) stands for, from the member counts
 * per side (wr unused for a self-join).
 */
SJ_HD uint64_t
sj_jaccard_pair_weight(int self, const uint32_t *wl, const uint32_t *wr,
					   uint32_t u, uint32_t v)
{
	if (self)
		return (uint64_t) wl[u] * wl[v];
	return (uint64_t) wl[u] * wr[v] + (uint64_t) wr[u] * wl[v];
}

#endif							/* SJJRULES_H */
