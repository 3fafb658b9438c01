/*
 * sjthreads.c
 *		Utilities shared by the CPU engines: the parallel loop, the clock and
 *		the error-message helper.
 *
 * sj_parallel_for runs fn(arg, task, worker) for every task in [0, ntasks)
 * on up to nthreads threads, handing tasks out one at a time through an
 * atomic counter (dynamic scheduling copes with skewed cells and sets).  The
 * calling thread is worker 0 and takes part; the loop returns when every
 * task has run.
 *
 * These threads run inside a PostgreSQL backend, so they must never call
 * into the server: task functions touch only engine memory.  All signals are
 * blocked in the workers so that the backend's handlers (cancel, timeout)
 * keep running on the main thread only; the adapter checks for interrupts
 * between batches, which is why a batch is kept short.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sjengine.h"

typedef struct SjLoop
{
	SjTaskFn	fn;
	void	   *arg;
	uint64_t	ntasks;
	atomic_uint_fast64_t next;
} SjLoop;

typedef struct SjWorker
{
	SjLoop	   *loop;
	int			id;
	pthread_t	thread;
} SjWorker;

/* Take tasks until none are left. */
static void
sj_loop_run(SjLoop *loop, int worker)
{
	for (;;)
	{
		uint64_t	task = atomic_fetch_add(&loop->next, 1);

		if (task >= loop->ntasks)
			break;
		loop->fn(loop->arg, task, worker);
	}
}

/* Thread body of workers 1..n-1. */
static void *
sj_worker_main(void *p)
{
	SjWorker   *w = (SjWorker *) p;

	sj_loop_run(w->loop, w->id);
	return NULL;
}

/* Run fn over [0, ntasks) on up to nthreads threads. */
SjStatus
sj_parallel_for(int nthreads, uint64_t ntasks, SjTaskFn fn, void *arg)
{
	SjLoop		loop;
	SjWorker   *workers;
	sigset_t	all,
				old;
	int			started = 0;
	int			i;

	if (nthreads < 1)
		nthreads = 1;
	if ((uint64_t) nthreads > ntasks)
		nthreads = ntasks > 0 ? (int) ntasks : 1;

	loop.fn = fn;
	loop.arg = arg;
	loop.ntasks = ntasks;
	atomic_init(&loop.next, 0);

	if (nthreads == 1)
	{
		sj_loop_run(&loop, 0);
		return SJ_OK;
	}

	workers = calloc(nthreads, sizeof(SjWorker));
	if (workers == NULL)
		return SJ_ERR_NOMEM;

	/* workers inherit the blocked mask; the main thread restores its own */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < nthreads; i++)
	{
		workers[i].loop = &loop;
		workers[i].id = i;
		if (pthread_create(&workers[i].thread, NULL, sj_worker_main, &workers[i]) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	/* if some threads could not start, the ones that did (and we) do it all */
	sj_loop_run(&loop, 0);
	for (i = 1; i <= started; i++)
		pthread_join(workers[i].thread, NULL);
	free(workers);
	return SJ_OK;
}

/* Monotonic clock in milliseconds. */
double
sj_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Write a message into errmsg (SJ_ERRMSG_LEN bytes, may be NULL); return status. */
SjStatus
sj_error(char *errmsg, SjStatus status, const char *fmt,...)
{
	va_list		ap;

	if (errmsg)
	{
		va_start(ap, fmt);
		vsnprintf(errmsg, SJ_ERRMSG_LEN, fmt, ap);
		va_end(ap);
	}
	return status;
}

/* ---------------------------------------------------------------------
 * Parallel LSD radix sort of (uint64 key, uint32 value)
 * --------------------------------------------------------------------- */

#define SJ_SORT_CHUNK	(1u << 18)	/* keys per task */
#define SJ_RADIX_BITS	11			/* digit */
#define SJ_RADIX		(1 << SJ_RADIX_BITS)

typedef struct SjSort
{
	uint64_t   *k;
	uint32_t   *v;
	uint64_t   *tk;
	uint32_t   *tv;
	size_t		n;
	size_t		nchunks;
	int			shift;
	uint64_t   *hist;			/* nchunks * SJ_RADIX counts, then offsets */
} SjSort;

/* Chunk c of a sort pass: its rows [*begin, *end), and its digit counts. */
static uint64_t *
sj_sort_chunk(const SjSort *s, uint64_t c, size_t *begin, size_t *end)
{
	*begin = c * SJ_SORT_CHUNK;
	*end = *begin + SJ_SORT_CHUNK < s->n ? *begin + SJ_SORT_CHUNK : s->n;
	return s->hist + c * SJ_RADIX;
}

/* Task: the digit counts of one chunk. */
static void
sj_sort_hist_task(void *arg, uint64_t c, int worker)
{
	SjSort	   *s = (SjSort *) arg;
	size_t		i,
				e;
	uint64_t   *h = sj_sort_chunk(s, c, &i, &e);

	memset(h, 0, SJ_RADIX * sizeof(uint64_t));
	for (; i < e; i++)
		h[(s->k[i] >> s->shift) & (SJ_RADIX - 1)]++;
}

/* Task: scatter one chunk to its digits' offsets. */
static void
sj_sort_scatter_task(void *arg, uint64_t c, int worker)
{
	SjSort	   *s = (SjSort *) arg;
	size_t		i,
				e;
	uint64_t   *o = sj_sort_chunk(s, c, &i, &e);

	for (; i < e; i++)
	{
		uint64_t	p = o[(s->k[i] >> s->shift) & (SJ_RADIX - 1)]++;

		s->tk[p] = s->k[i];
		s->tv[p] = s->v[i];
	}
}

/*
 * Sort keys k, carrying values v, on their low bits bits (stable, so the
 * same order on any number of threads); a digit that every key shares is
 * skipped.  Returns 0 when out of memory or threads (k and v then hold
 * their keys and values in some order).
 */
int
sj_radix_sort(uint64_t *k, uint32_t *v, size_t n, int bits, int threads)
{
	SjSort		s;
	int			pass,
				ok = 1;

	if (n < 2)
		return 1;
	s.n = n;
	s.nchunks = (n + SJ_SORT_CHUNK - 1) / SJ_SORT_CHUNK;
	s.tk = malloc(n * sizeof(uint64_t));
	s.tv = malloc(n * sizeof(uint32_t));
	s.hist = malloc(s.nchunks * SJ_RADIX * sizeof(uint64_t));
	if (!s.tk || !s.tv || !s.hist)
	{
		free(s.tk);
		free(s.tv);
		free(s.hist);
		return 0;
	}
	s.k = k;
	s.v = v;
	for (pass = 0; pass * SJ_RADIX_BITS < bits && pass * SJ_RADIX_BITS < 64; pass++)
	{
		uint64_t	sum = 0;
		size_t		c;
		int			d,
					skip = 0;

		s.shift = pass * SJ_RADIX_BITS;
		if (sj_parallel_for(threads, s.nchunks, sj_sort_hist_task, &s) != SJ_OK)
		{
			ok = 0;
			break;
		}
		for (d = 0; d < SJ_RADIX && !skip; d++)
		{
			uint64_t	tot = 0;

			for (c = 0; c < s.nchunks; c++)
				tot += s.hist[c * SJ_RADIX + d];
			if (tot == n)
				skip = 1;
		}
		if (skip)
			continue;
		for (d = 0; d < SJ_RADIX; d++)
			for (c = 0; c < s.nchunks; c++)
			{
				uint64_t	h = s.hist[c * SJ_RADIX + d];

				s.hist[c * SJ_RADIX + d] = sum;
				sum += h;
			}
		if (sj_parallel_for(threads, s.nchunks, sj_sort_scatter_task, &s) != SJ_OK)
		{
			ok = 0;
			break;
		}
		/* the sorted data is now in tk/tv: swap */
		{
			uint64_t   *tk = s.k;
			uint32_t   *tv = s.v;

			s.k = s.tk;
			s.v = s.tv;
			s.tk = tk;
			s.tv = tv;
		}
	}
	/* keep k and v; on failure they hold an earlier pass's order */
	if (s.k != k)
	{
		if (ok)
		{
			memcpy(k, s.k, n * sizeof(uint64_t));
			memcpy(v, s.v, n * sizeof(uint32_t));
		}
		free(s.k);
		free(s.v);
	}
	else
	{
		free(s.tk);
		free(s.tv);
	}
	free(s.hist);
	return ok;
}
