/*
 * sjdist.h
 *		The canonical distances of eps_join, written once for the SQL
 *		functions (src/distance.c), the CPU engine and the GPU engine.
 *
 * Every value simjoin reports is computed by these functions, in double,
 * one dimension after another in order 0..dim-1, without fused multiply-add
 * (the C code builds with -ffp-contract=off, nvcc with -fmad=false), with
 * IEEE division and a correctly rounded sqrt.  Under those rules the same
 * inputs give the same bits on the host and on the device, so a distance
 * from either engine equals l2_distance or cosine_distance exactly.
 *
 * Faster arithmetic (reduced precision, the expanded form of the squared
 * distance) may filter candidates, but the decision dist <= eps for pairs
 * near the threshold, and every reported value, come from here.
 *
 * Compiled as C99 (static inline) and by nvcc (__host__ __device__).
 */
#ifndef SJDIST_H
#define SJDIST_H

#include <math.h>

#include "sjhd.h"

/* The metric of an eps_join (SjJoinOptions.metric). */
typedef enum SjMetric
{
	SJ_METRIC_L2 = 0,			/* sqrt(sum_k (a_k - b_k)^2) */
	SJ_METRIC_COSINE = 1		/* 1 - a.b / sqrt(|a|^2 |b|^2), NaN for a
								 * zero vector */
} SjMetric;

/* One dimension's term of the squared Euclidean distance. */
SJ_HD double
sj_l2_step(double sum, double a, double b)
{
	double		d = a - b;

	return sum + d * d;
}

/* The Euclidean distance from its sum of squares. */
SJ_HD double
sj_l2_finish(double sum)
{
	return sqrt(sum);
}

/* One dimension's term of a dot product (also |a|^2 with b = a). */
SJ_HD double
sj_dot_step(double dot, double a, double b)
{
	return dot + a * b;
}

/*
 * The cosine distance from a.b, |a|^2 and |b|^2 (each summed with
 * sj_dot_step in dimension order).  The similarity is clamped into
 * [-1, 1] (rounding can leave it just outside); NaN, from a zero vector,
 * stays NaN, so such a vector joins nothing.
 */
SJ_HD double
sj_cosine_finish(double dot, double na, double nb)
{
	double		sim = dot / sqrt(na * nb);

	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

#endif							/* SJDIST_H */
