/*
 * eps_cosine.h
 *		The cosine metric of the CPU eps_join engine (eps_cosine.c), for
 *		eps_cpu.c only.
 */
#ifndef EPS_COSINE_H
#define EPS_COSINE_H

#include "sjengine.h"

/* One side's normalised, compacted copy (zero vectors dropped). */
typedef struct EpsCosSide
{
	SjVectors	unit;			/* the kept rows, normalised */
	double	   *coords;			/* unit's coordinates (owned) */
	uint32_t   *map;			/* unit row -> input row */
	double	   *norms;			/* |x|^2 of every input row (sj_dot_step) */
	uint32_t	irregular;		/* kept rows with |x|^2 outside
								 * [2^-500, 2^500] */
} EpsCosSide;

extern SjStatus sj_eps_cos_prepare(const SjVectors *v, EpsCosSide *out,
								   char *errmsg);
extern void sj_eps_cos_free(EpsCosSide *side);
extern double sj_eps_cos_threshold(double eps, int dim);
extern double sj_eps_cos_inner_threshold(double eps, int dim);

#endif							/* EPS_COSINE_H */
