/*
 * jaccard_join.h
 *		The Jaccard join over sets (jaccard_join.c, jaccard.c): what the custom
 *		scan needs of it.
 */
#ifndef JACCARD_JOIN_H
#define JACCARD_JOIN_H

#include "marshal.h"
#include "sjrun.h"

/* jaccard.c */
extern void SjCheckSetNulls(ArrayType *a, const char *what);
extern double SjJaccardValue(int64 la, int64 lb, int64 inter);

/* jaccard_join.c: one side's sets, dictionary-encoded */
typedef struct SjDict SjDict;

typedef struct SjSetScan
{
	Oid			relid;			/* InvalidOid when fed by the custom scan */
	SjColumn	cols[2];		/* key, set */
	SjDict	   *dict;
	uint32	   *rowbuf;			/* token ids of the current row */
	size_t		cap_rowbuf;
	uint64	   *offsets;
	size_t		cap_offsets;
	uint32	   *tokens;
	size_t		cap_tokens;
	uint64		ntokens;
	int64	   *keys;
	size_t		cap_keys;
	size_t		n;
	int64		skipped;
	char		what[NAMEDATALEN * 2 + 32];
} SjSetScan;

typedef struct SjJaccardJob
{
	SjSets		left;
	SjSets		right;
	int64	   *left_keys;
	int64	   *right_keys;
	bool		self;
	double		threshold;
	struct Tuplestorestate *store;
	TupleDesc	desc;
} SjJaccardJob;

extern uint32 *SjJaccardSelfRows(const SjJaccardJob *job, int64 *n);

extern SjDict *SjDictCreate(Oid elem);
extern uint32 SjDictSize(const SjDict *dict);
extern void SjSetSideInit(SjSetScan *scan, const char *what, SjDict *dict);
extern void SjSetRow(void *arg, Datum *values, bool *isnull);
extern void SjSetSideFinish(SjSetScan *scan, const SjParts *parts, SjSets *out,
							int64 **keys);
extern void *SjSetPartBegin(const SjPartSpec *spec);
extern Size SjSetPartSize(void *side);
extern void SjSetPartWrite(void *side, char *dst);

extern const SjOperatorMethods sj_jaccard_methods;
extern const SjPartOps sj_set_part_ops;	/* SJ_PART_SETS */

#endif							/* JACCARD_JOIN_H */
