/*
 * jaccard_probe.c
 *		The CPU jaccard engine's join: the inverted index over indexing
 *		prefixes, the probe of a distinct set (length, prefix and positional
 *		filters, then verification), the parallel chunks of probes, and the
 *		same filters handing out unverified candidates for co-processing
 *		(see the header of jaccard_cpu.c).
 *
 * The records of a chunk stay in the per-thread workers of the handle
 * until jaccard_cpu.c expands them.
 */
#include <stdlib.h>
#include <string.h>

#include "jaccard_int.h"

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

/* Build the inverted index over the indexing prefixes, lists by set order. */
SjStatus
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

/* Append a result record (a distinct pair) to a worker; 0 on failure. */
static int
jc_emit(SjJaccardJoin *j, JcWorker *w, uint32_t x, uint32_t y, double sim)
{
	if (j->count_only)
	{
		w->count += sj_jaccard_pair_weight(j->self, j->weight[0], j->weight[1],
										   x, y);
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
				cd->overlap = sj_jaccard_positional(0, rx, ly - pos - 1, alpha) ? 1 : JC_DEAD;
			}
			else
			{
				JcCand	   *cd = &cand[s - 1];

				if (cd->overlap == JC_DEAD)
					continue;
				if (sj_jaccard_positional(cd->overlap, rx, cd->len - pos - 1, cd->alpha))
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
		inter += sj_jaccard_overlap(tx + cd->xpos + 1, lx - cd->xpos - 1,
							cd->tok + cd->ypos + 1, ly - cd->ypos - 1, need);
		if (inter < cd->alpha)
			continue;
		sim = sj_jaccard_sim(inter, lx, ly);
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
SjStatus
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
SjStatus
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
