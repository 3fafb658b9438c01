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
