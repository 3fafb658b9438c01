/*
 * eps_join.h
 *		The eps join over vectors (eps_join.c, distance.c): what the custom scan
 *		and postgis.c need of it.
 */
#ifndef EPS_JOIN_H
#define EPS_JOIN_H

#include "marshal.h"
#include "sjrun.h"

/* distance.c */
extern int	SjVectorDim(ArrayType *a, const char *what);
extern void SjErrorDims(int a, int b);

/* eps_join.c: marshalled vectors of one relation */
typedef struct SjVectorInput
{
	SjVectors	vectors;		/* SoA coordinates of the joining rows */
	int64	   *keys;			/* key of each joining row */
	int64		skipped;		/* NULL, NaN or infinite vectors */
} SjVectorInput;

/* State of one side's scan. */
typedef struct SjEpsScan
{
	Oid			relid;			/* InvalidOid when fed by the custom scan */
	SjColumn	cols[2];		/* key, vector */
	int			dim;			/* -1 until the first vector */
	size_t		n;				/* joining rows */
	size_t		cap_rows;		/* coordinates rows holds */
	size_t		cap_keys;
	int			elem;			/* bytes of a coordinate in rows: 4 while every
								 * vector stored was real[] (from the first
								 * row on), else 8 */
	void	   *rows;			/* row-major while scanning */
	int64	   *keys;
	int64		skipped;
	bool		keep_real;		/* a join likely on the GPU (function form or
								 * custom scan): columns of real[] vectors stay
								 * real (SjVectors.fcoords) until an engine
								 * needs doubles */
	bool		keep_rows;		/* with keep_real, the function form: real
								 * rows stay rows, the parallel workers' parts
								 * read in place (SjVectors.pieces, kept
								 * until SjEpsSideUnmap) */
	SjParts    *kept;			/* parts kept for pieces, else NULL */
	char		what[NAMEDATALEN * 2 + 32];
} SjEpsScan;

/* What the engine begin callback and the emitter need. */
typedef struct SjEpsJob
{
	SjVectorInput left;
	SjVectorInput right;
	bool		self;
	double		eps;
	int			metric;			/* SjMetric (sjdist.h) */
	struct Tuplestorestate *store;
	TupleDesc	desc;
} SjEpsJob;

extern void SjEpsSideInit(SjEpsScan *scan, const char *what);
extern bool SjEpsPreferCpu(void *arg);
extern void SjEpsRow(void *arg, Datum *values, bool *isnull);
extern void SjEpsSideFinish(SjEpsScan *scan, SjParts *parts,
							SjVectorInput *out);
extern void SjEpsSideUnmap(SjEpsScan *scan);
extern void *SjEpsPartBegin(const SjPartSpec *spec);
extern Size SjEpsPartSize(void *side);
extern void SjEpsPartWrite(void *side, char *dst);
extern int64 SjEpsJoinRun(Oid left_relid, text *left_key, text *left_vec,
						  Oid right_relid, text *right_key, text *right_vec,
						  double eps, int metric, struct Tuplestorestate *store,
						  TupleDesc desc);
extern void SjEpsColumnsWide(SjVectors *v, int threads);
extern uint32 *SjEpsSelfRows(const SjEpsJob *job, int64 *n);
extern SjStatus SjEpsBegin(void *arg, bool gpu, const SjJoinOptions *options,
						   SjRun *run, char *errmsg);

extern const char *SjEpsStrategyName(bool gpu, int planned);
extern const SjOperatorMethods sj_eps_methods;
extern const SjPartOps sj_eps_part_ops;	/* SJ_PART_EPS */

#endif							/* EPS_JOIN_H */
