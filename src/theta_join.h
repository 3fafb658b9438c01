/*
 * theta_join.h
 *		The theta join (theta_join.c and the files of theta_int.h,
 *		selectivity.c): a condition compiled for the custom scan, its sides,
 *		its pair estimate.
 */
#ifndef THETA_JOIN_H
#define THETA_JOIN_H

#include "marshal.h"
#include "sjrun.h"

/* selectivity.c: the theta engine's pairs over the cross product */
struct PlannerInfo;
struct SpecialJoinInfo;
extern double SjThetaPairSelectivity(struct PlannerInfo *root, List *clauses,
									 Bitmapset *outer, Bitmapset *inner,
									 struct SpecialJoinInfo *sjinfo);

/* theta_join.c: a condition compiled for the custom scan */
typedef struct SjThetaPrepared SjThetaPrepared;

extern bool SjThetaCompilable(Node *cond, int *strategy, char **why);
extern SjThetaPrepared *SjThetaPrepare(Node *cond, bool nokeys);
extern void SjThetaAddRow(SjThetaPrepared *tp, int side, int64 key,
						  const Datum *values, const bool *isnull);
extern bool SjThetaMayNeedRows(SjThetaPrepared *tp);
extern void SjThetaFinish(SjThetaPrepared *tp, SjRunSpec *spec,
						  int64 *nleft, int64 *nright, char *strategy, int len);
extern const bool *SjThetaAside(SjThetaPrepared *tp, int side, const int64 **map);
extern void *SjThetaPreparedSide(SjThetaPrepared *tp, int side, int *ncols,
								 int *positions, Oid *typids);
extern void SjThetaSideAddParts(void *side, const SjParts *parts);
extern int64 *SjThetaSideKeys(void *side, int64 *n);
extern bool SjThetaSideUnranked(SjThetaPrepared *tp, int side);
extern bool SjThetaIndexesInner(SjThetaPrepared *tp);
extern void SjThetaPartDescribe(void *side, SjPartSpec *spec);
extern void *SjThetaPartBegin(const SjPartSpec *spec);
extern void SjThetaPartRow(void *arg, Datum *values, bool *isnull);
extern Size SjThetaPartSize(void *side);
extern void SjThetaPartWrite(void *side, char *dst);

extern const SjOperatorMethods sj_theta_methods;
extern const SjPartOps sj_theta_part_ops;	/* SJ_PART_THETA */

#endif							/* THETA_JOIN_H */
