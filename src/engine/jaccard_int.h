/*
 * jaccard_int.h
 *		Internal header of the CPU jaccard engine: the handle and the state of
 *		its phases, shared by jaccard_prep.c (input checks, preparation,
 *		bounds), jaccard_probe.c (index, probing, co-processing's filters)
 *		and jaccard_cpu.c (expansion and entry points).  Not for the GPU
 *		engine or the adapter; they see the handle only through sjjaccard.h.
 */
#ifndef JACCARD_INT_H
#define JACCARD_INT_H

#include <stdatomic.h>
#include <stdio.h>

#include "sjengine.h"
#include "sjjaccard.h"
#include "sjjrules.h"

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
	/*
	 * pairs inside groups shared with other devices (sj_jaccard_share_groups):
	 * ranges gcuts[u] .. gcuts[u + 1] of the distinct sets, claimed by number
	 */
	SjJaccardGroupClaim group_claim;
	void	   *group_ctx;
	uint32_t	ngroup_units;
	uint32_t   *gcuts;			/* ngroup_units + 1, made on first use */
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
	int			borrowed;		/* the arrays above are another handle's */

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

	/* group cursor: distinct sets gset .. gend (gstarted: gend is set) */
	int			gstarted;
	uint32_t	gend;
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

/* Write an error message. */
static inline SjStatus
jc_error(char *errmsg, SjStatus status, const char *msg)
{
	if (errmsg)
		snprintf(errmsg, SJ_ERRMSG_LEN, "%s", msg);
	return status;
}

/* The similarity test of sjengine.h for overlap o and |x| + |y| = s. */
static inline int
jc_pass(uint64_t o, uint64_t s, double t)
{
	return sj_jaccard_pass(o, s, t);
}

/* Tokens of the probing prefix of a set of length l. */
static inline uint32_t
jc_probe_prefix(const SjJaccardJoin *j, uint32_t l)
{
	return sj_jaccard_probe_prefix(j->minov, j->minsize, l);
}

/* Tokens of the indexing prefix of a set of length l (probes are longer). */
static inline uint32_t
jc_index_prefix(const SjJaccardJoin *j, uint32_t l)
{
	return sj_jaccard_index_prefix(j->minov, l);
}

/* Sides on which distinct set d has members: bit 0 left, bit 1 right. */
static inline uint32_t
jc_sides(const SjJaccardJoin *j, uint32_t d)
{
	if (j->self)
		return 1;
	return (j->weight[0][d] ? 1u : 0u) | (j->weight[1][d] ? 2u : 0u);
}

/* jaccard_prep.c */
extern SjStatus jc_check_input(const SjSets *s, const char *name, int nthreads,
							   char *errmsg);
extern SjStatus jc_prepare(SjJaccardJoin *j, const SjSets *left,
						   const SjSets *right, char *errmsg);
extern SjStatus jc_bounds(SjJaccardJoin *j, char *errmsg);

/* jaccard_probe.c */
extern SjStatus jc_build_index(SjJaccardJoin *j, char *errmsg);
extern SjStatus jc_cpu_chunk(SjJaccardJoin *j, char *errmsg);
extern SjStatus jc_filter_chunk(SjJaccardJoin *j, uint64_t *buf, size_t cap,
								size_t *n, char *errmsg);

#endif							/* JACCARD_INT_H */
