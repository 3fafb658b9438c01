/*
 * eps_cpu_hd.c
 *		The CPU eps_join engine in high dimensions, without a server: a
 *		self-join of n clustered (or, with UNI set, uniform) vectors, count
 *		then pairs, wall and CPU time.  Not a test: it reports speed.
 *
 *	make NVCC= && cc -O2 -ffp-contract=off -pthread -Isrc/engine \
 *		-o /tmp/eps_cpu_hd test/bench/eps_cpu_hd.c src/engine/eps_cpu.o \
 *		src/engine/eps_cosine.o src/engine/sjthreads.o -lm
 *	/tmp/eps_cpu_hd N DIM EPS METRIC(0 l2, 1 cosine) THREADS
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sjengine.h"

/* CPU time of this process in milliseconds. */
static double
cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Run the join twice (count, pairs) and print the times. */
int
main(int argc, char **argv)
{
	uint32_t	n;
	int			dim,
				metric,
				threads,
				rep;
	double		eps;
	double	   *c;
	SjVectors	v;

	if (argc < 6)
	{
		fprintf(stderr, "usage: %s N DIM EPS METRIC THREADS\n", argv[0]);
		return 2;
	}
	n = (uint32_t) atol(argv[1]);
	dim = atoi(argv[2]);
	eps = atof(argv[3]);
	metric = atoi(argv[4]);
	threads = atoi(argv[5]);
	c = malloc(sizeof(double) * n * dim);
	srand(7);
	for (uint32_t i = 0; i < n; i++)
	{
		int			cl = rand() % 50;

		for (int k = 0; k < dim; k++)
			c[(size_t) k * n + i] = getenv("UNI") ? rand() / (double) RAND_MAX :
				sin(cl * 3.1 + k * 0.7) + 0.3 * (rand() / (double) RAND_MAX - 0.5);
	}
	v.n = n;
	v.dim = dim;
	v.coords = c;
	for (rep = 0; rep < 2; rep++)
	{
		SjJoinOptions o = {0};
		SjEpsJoin  *j;
		SjPairBatch b;
		SjTimings	t;
		char		e[SJ_ERRMSG_LEN];
		size_t		total = 0;
		int			done = 0;
		double		w0 = sj_now_ms(),
					c0 = cpu_ms();

		o.count_only = rep == 0;
		o.cpu_threads = threads;
		o.metric = metric;
		if (sj_eps_cpu_begin(&v, NULL, eps, &o, &j, e) != SJ_OK)
		{
			fprintf(stderr, "%s\n", e);
			return 1;
		}
		while (!done)
		{
			if (sj_eps_cpu_next(j, &b, &done, e) != SJ_OK)
			{
				fprintf(stderr, "%s\n", e);
				return 1;
			}
			total += b.count;
		}
		sj_eps_cpu_timings(j, &t);
		sj_eps_cpu_end(j);
		printf("%s: %zu pairs (%s) %.0f ms wall, %.0f ms cpu\n",
			   rep == 0 ? "count" : "pairs", total, t.strategy,
			   sj_now_ms() - w0, cpu_ms() - c0);
	}
	free(c);
	return 0;
}
