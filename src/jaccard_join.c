/*
 * jaccard_join.c
 *		jaccard_join and jaccard_join_count: pairs of rows whose sets have a
 *		Jaccard similarity of at least a threshold.
 *
 * Each side is scanned once (marshal.c).  Set elements (int4, int8 or text)
 * are dictionary-encoded into dense uint32 token ids through one dictionary
 * shared by both sides of the join, then each set is de-duplicated into
 * the engines' CSR layout (sjengine.h), its ids in the order of the array:
 * the engines renumber them by frequency and sort them anyway.  A NULL set
 * and an empty set never join and are left out; a NULL element or a NULL
 * key is an error.  int4[] and int8[] sets can be joined with each other
 * (elements compare as integers); text[] only with text[] (elements compare
 * by bytes).
 *
 * The similarity of a pair is computed by the engine with the expression of
 * jaccard() (jaccard.c), so the two agree bit for bit.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "jaccard_join.h"
#include "sjgpu.h"

static void SjSetSideAlloc(SjSetScan *scan);

/* Dictionary of integer elements. */
typedef struct SjIntEntry
{
	int64		key;
	uint32		id;
	char		status;
} SjIntEntry;

#define SH_PREFIX sjintdict
#define SH_ELEMENT_TYPE SjIntEntry
#define SH_KEY_TYPE int64
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((uint32) hash_bytes_uint32((uint32) (k)) ^ murmurhash32((uint32) ((uint64) (k) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Dictionary of text elements; keys point into the dictionary's arena. */
typedef struct SjTextKey
{
	const char *p;
	int			len;
} SjTextKey;

typedef struct SjTextEntry
{
	SjTextKey	key;
	uint32		id;
	uint32		hash;
	char		status;
} SjTextEntry;

#define SH_PREFIX sjtextdict
#define SH_ELEMENT_TYPE SjTextEntry
#define SH_KEY_TYPE SjTextKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) hash_bytes((const unsigned char *) (k).p, (k).len)
#define SH_EQUAL(tb, a, b) ((a).len == (b).len && memcmp((a).p, (b).p, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* The dictionary shared by both sides of one join. */
struct SjDict
{
	bool		is_text;
	uint32		next_id;
	sjintdict_hash *ints;		/* integers outside [0, SJ_DICT_DIRECT) */
	uint32	   *direct;			/* id + 1 of each integer v below ndirect, 0:
								 * not seen */
	uint32		ndirect;
	MemoryContext cxt;			/* where ints, direct and seen live */
	sjtextdict_hash *texts;
	MemoryContext arena;		/* copies of text keys */
	uint32	   *seen;			/* of each id below nseen: the last row holding it */
	uint32		nseen;
	uint32		row;			/* rows de-duplicated so far (wraps to 1) */
};

/*
 * Integers in [0, SJ_DICT_DIRECT) are looked up in an array (4 bytes a
 * value up to the largest seen, 16 MB at most), others in the hash table:
 * a set's tokens are usually small ids, and the hash lookups were a
 * quarter of the scan of 1 M sets of 25 integers.
 */
#define SJ_DICT_DIRECT	((int64) 1 << 22)

/*
 * A dictionary's array of uint32 (direct, seen) grown from *len to n
 * entries in dict->cxt, the new ones zero.
 */
static uint32 *
SjDictGrowZeroed(SjDict *dict, uint32 *a, uint32 *len, uint32 n)
{
	if (a == NULL)
		a = MemoryContextAllocExtended(dict->cxt, (Size) n * sizeof(uint32),
									   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	else
	{
		a = repalloc_huge(a, (Size) n * sizeof(uint32));
		memset(a + *len, 0, (Size) (n - *len) * sizeof(uint32));
	}
	*len = n;
	return a;
}

/* The id of an integer element, added to the dictionary when new. */
static uint32
SjDictInt(SjDict *dict, int64 v)
{
	bool		found;
	SjIntEntry *e;

	if (v >= 0 && v < SJ_DICT_DIRECT)
	{
		if ((uint64) v >= dict->ndirect)
		{
			uint32		n = (uint32) Min(SJ_DICT_DIRECT, Max(v + 1, (int64) dict->ndirect * 2));

			dict->direct = SjDictGrowZeroed(dict, dict->direct, &dict->ndirect,
											Max(n, 65536));
		}
		if (dict->direct[v] == 0)
			dict->direct[v] = ++dict->next_id;
		return dict->direct[v] - 1;
	}
	e = sjintdict_insert(dict->ints, v, &found);
	if (!found)
		e->id = dict->next_id++;
	return e->id;
}

/* The id of a text element, added to the dictionary when new. */
static uint32
SjDictText(SjDict *dict, const char *p, int len)
{
	bool		found;
	SjTextKey	k = {p, len};
	SjTextEntry *e = sjtextdict_insert(dict->texts, k, &found);

	if (!found)
	{
		char	   *copy = MemoryContextAlloc(dict->arena, Max(len, 1));

		memcpy(copy, p, len);
		e->key.p = copy;
		e->id = dict->next_id++;
	}
	return e->id;
}

/* Row callback: encode one row's set. */
void
SjSetRow(void *arg, Datum *values, bool *isnull)
{
	SjSetScan  *scan = (SjSetScan *) arg;
	SjDict	   *dict = scan->dict;
	ArrayType  *a;
	int			nitems;
	int			i,
				m = 0;

	a = SjRowArray(scan->relid, &scan->cols[0], values, isnull, &scan->skipped);
	if (a == NULL)
		return;
	if ((ARR_ELEMTYPE(a) == TEXTOID) != dict->is_text ||
		(ARR_ELEMTYPE(a) != TEXTOID && ARR_ELEMTYPE(a) != INT4OID && ARR_ELEMTYPE(a) != INT8OID))
		elog(ERROR, "unexpected element type %u in %s", ARR_ELEMTYPE(a), scan->what);
	SjCheckSetNulls(a, scan->what);
	nitems = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	if (nitems == 0)
	{
		scan->skipped++;
		return;
	}
	scan->rowbuf = SjGrow(scan->rowbuf, &scan->cap_rowbuf, nitems, sizeof(uint32));
	if (dict->is_text)
	{
		const char *ptr = ARR_DATA_PTR(a);

		for (i = 0; i < nitems; i++)
		{
			scan->rowbuf[i] = SjDictText(dict, VARDATA_ANY(ptr), VARSIZE_ANY_EXHDR(ptr));
			ptr = att_addlength_pointer(ptr, -1, ptr);
			ptr = (const char *) att_align_nominal(ptr, TYPALIGN_INT);
		}
	}
	else if (ARR_ELEMTYPE(a) == INT4OID)
	{
		const int32 *src = (const int32 *) ARR_DATA_PTR(a);

		for (i = 0; i < nitems; i++)
			scan->rowbuf[i] = SjDictInt(dict, src[i]);
	}
	else
	{
		const int64 *src = (const int64 *) ARR_DATA_PTR(a);

		for (i = 0; i < nitems; i++)
			scan->rowbuf[i] = SjDictInt(dict, src[i]);
	}
	/*
	 * Drop repeated elements: an id is kept unless seen[id] already holds
	 * this row's number.  Sorting each set here (to find its repeats) was
	 * 40% of the scan of 1 M sets of 25 integers.
	 */
	if (dict->next_id > dict->nseen)
		dict->seen = SjDictGrowZeroed(dict, dict->seen, &dict->nseen,
									  Max(dict->next_id, Max(dict->nseen * 2, 65536)));
	if (++dict->row == 0)
	{
		memset(dict->seen, 0, (Size) dict->nseen * sizeof(uint32));
		dict->row = 1;
	}
	scan->tokens = SjGrow(scan->tokens, &scan->cap_tokens, scan->ntokens + nitems, sizeof(uint32));
	for (i = 0; i < nitems; i++)
	{
		uint32		id = scan->rowbuf[i];

		if (dict->seen[id] != dict->row)
		{
			dict->seen[id] = dict->row;
			scan->tokens[scan->ntokens + m++] = id;
		}
	}
	scan->ntokens += m;
	scan->keys = SjGrow(scan->keys, &scan->cap_keys, scan->n + 1, sizeof(int64));
	scan->offsets = SjGrow(scan->offsets, &scan->cap_offsets, scan->n + 2, sizeof(uint64));
	scan->keys[scan->n] = SjKeyValue(values[0], scan->cols[0].typid);
	scan->n++;
	scan->offsets[scan->n] = scan->ntokens;
}

/* Resolve and check the key and set columns of one side. */
static void
SjSetPrepare(SjSetScan *scan, Oid relid, text *key, text *set, SjDict *dict)
{
	static const SjArrayKind sets = {
		"set", {INT4OID, INT8OID, TEXTOID}, "integer[], bigint[] or text[]"
	};

	memset(scan, 0, sizeof(*scan));
	scan->relid = relid;
	scan->dict = dict;
	SjResolveArraySide(relid, key, set, &sets, scan->cols, scan->what,
					   sizeof(scan->what));
	SjSetSideAlloc(scan);
}

/* Allocate a side's buffers. */
static void
SjSetSideAlloc(SjSetScan *scan)
{
	scan->cap_rowbuf = scan->cap_offsets = scan->cap_tokens = scan->cap_keys = 1024;
	scan->rowbuf = palloc_extended(1024 * sizeof(uint32), MCXT_ALLOC_HUGE);
	scan->offsets = palloc_extended(1024 * sizeof(uint64), MCXT_ALLOC_HUGE);
	scan->tokens = palloc_extended(1024 * sizeof(uint32), MCXT_ALLOC_HUGE);
	scan->keys = palloc_extended(1024 * sizeof(int64), MCXT_ALLOC_HUGE);
	scan->offsets[0] = 0;
}

/*
 * A side fed by the caller through SjSetRow, with bigint keys: the custom
 * scan's row numbers.  "what" names the sets in error messages.
 */
void
SjSetSideInit(SjSetScan *scan, const char *what, SjDict *dict)
{
	memset(scan, 0, sizeof(*scan));
	scan->dict = dict;
	scan->cols[0].typid = INT8OID;
	strlcpy(scan->what, what, sizeof(scan->what));
	SjSetSideAlloc(scan);
}

/* Distinct elements seen so far by both sides. */
uint32
SjDictSize(const SjDict *dict)
{
	return dict->next_id;
}

/* A dictionary for sets of the given element type. */
SjDict *
SjDictCreate(Oid elem)
{
	SjDict	   *dict = palloc0(sizeof(SjDict));

	dict->is_text = (elem == TEXTOID);
	dict->cxt = CurrentMemoryContext;
	dict->arena = AllocSetContextCreate(CurrentMemoryContext, "simjoin dictionary",
										ALLOCSET_DEFAULT_SIZES);
	if (dict->is_text)
		dict->texts = sjtextdict_create(CurrentMemoryContext, 1024, NULL);
	else
		dict->ints = sjintdict_create(CurrentMemoryContext, 1024, NULL);
	return dict;
}

/* What a set side's finish fills: the engine's sets and the keys. */
typedef struct SjSetOut
{
	SjSets	   *sets;
	int64	  **keys;
} SjSetOut;

/* SjSideFinishFn of a set side: into its SjSetOut. */
static void
SjSetFinishScan(void *side, SjParts *parts, void *out)
{
	SjSetOut   *o = (SjSetOut *) out;

	SjSetSideFinish((SjSetScan *) side, parts, o->sets, o->keys);
}

/*
 * Scan one side, or both of a two-table join (rscan not NULL), into the
 * engine's layout.  Returns the parallel workers that read them.
 */
static int
SjSetMarshal(SjSetScan *lscan, SjSetScan *rscan, SjSets *lout, int64 **lkeys,
			 SjSets *rout, int64 **rkeys)
{
	SjSetOut	outs[2] = {{lout, lkeys}, {rout, rkeys}};
	SjJoinSide	sides[2] = {{lscan->relid, 2, lscan->cols, lscan->what, lscan, &outs[0]}};

	if (rscan)
		sides[1] = (SjJoinSide) {rscan->relid, 2, rscan->cols, rscan->what, rscan, &outs[1]};
	return SjScanJoinSides(sides, rscan ? 2 : 1, SJ_PART_SETS, SjSetFinishScan);
}

/*
 * A side as a parallel worker sends it (SjSetPartWrite): this header, the
 * keys, the set offsets, the tokens (ids of the worker's own dictionary),
 * then that dictionary in id order: int8 values, or for text the lengths
 * followed by the bytes.
 */
typedef struct SjSetPartHeader
{
	uint64		n;
	int64		skipped;
	uint64		ntokens;
	uint64		textbytes;
	uint32		ndistinct;
	uint32		is_text;
} SjSetPartHeader;

#define SJ_ALIGN8(x) (((x) + 7) & ~((Size) 7))

/* One participant's sets as the merge reads them. */
typedef struct SjSetPiece
{
	size_t		n;
	size_t		offset;			/* of its first set in the merged side */
	uint64		token_offset;	/* of its first token */
	const int64 *keys;
	const uint64 *offsets;
	const uint32 *tokens;
	const uint32 *map;			/* its token ids -> the join's, or NULL */
} SjSetPiece;

typedef struct SjSetMerge
{
	SjSetPiece *pieces;
	int64	   *keys;
	uint64	   *offsets;
	uint32	   *tokens;
} SjSetMerge;

#define SJ_SET_MERGE_BLOCK	16384	/* sets a merge task copies */

/* SjMergeFn: sets of one piece, their tokens renumbered (still distinct). */
static void
SjSetMergeRows(void *arg, int p, size_t first, size_t last)
{
	SjSetMerge *m = (SjSetMerge *) arg;
	const SjSetPiece *pc = &m->pieces[p];
	size_t		i;

	memcpy(m->keys + pc->offset + first, pc->keys + first, (last - first) * sizeof(int64));
	for (i = first; i < last; i++)
	{
		uint64		a = pc->offsets[i],
					b = pc->offsets[i + 1],
					k;
		uint32	   *dst = m->tokens + pc->token_offset + a;

		m->offsets[pc->offset + i + 1] = pc->token_offset + b;
		if (pc->map == NULL)
		{
			memcpy(dst, pc->tokens + a, (b - a) * sizeof(uint32));
			continue;
		}
		for (k = 0; k < b - a; k++)
			dst[k] = pc->map[pc->tokens[a + k]];
	}
}

/*
 * The engine's view of the sets gathered so far and of those in parts that
 * parallel workers built (NULL: none), whose tokens are renumbered into
 * this side's dictionary.
 */
void
SjSetSideFinish(SjSetScan *scan, const SjParts *parts, SjSets *out, int64 **keys)
{
	SjSetMerge	m;
	int			nparts = parts ? parts->nparts : 0;
	size_t		n = scan->n;
	uint64		ntok = scan->ntokens;
	int			p;

	if (nparts > 0)
	{
		memset(&m, 0, sizeof(m));
		m.pieces = palloc0((nparts + 1) * sizeof(SjSetPiece));
		m.pieces[0].n = scan->n;
		m.pieces[0].keys = scan->keys;
		m.pieces[0].offsets = scan->offsets;
		m.pieces[0].tokens = scan->tokens;
		for (p = 0; p < nparts; p++)
		{
			const SjSetPartHeader *h = (const SjSetPartHeader *) parts->part[p];
			SjSetPiece *pc = &m.pieces[p + 1];
			const char *ptr = (const char *) (h + 1);
			uint32	   *map;
			uint32		d;

			pc->n = h->n;
			pc->offset = n;
			pc->token_offset = ntok;
			pc->keys = (const int64 *) ptr;
			ptr += h->n * sizeof(int64);
			pc->offsets = (const uint64 *) ptr;
			ptr += (h->n + 1) * sizeof(uint64);
			pc->tokens = (const uint32 *) ptr;
			ptr += SJ_ALIGN8(h->ntokens * sizeof(uint32));
			/* the worker's dictionary into this side's */
			map = palloc_extended(Max(h->ndistinct, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
			if (h->is_text)
			{
				const uint32 *lens = (const uint32 *) ptr;
				const char *bytes = ptr + SJ_ALIGN8(h->ndistinct * sizeof(uint32));

				for (d = 0; d < h->ndistinct; d++)
				{
					map[d] = SjDictText(scan->dict, bytes, lens[d]);
					bytes += lens[d];
				}
			}
			else
			{
				const int64 *vals = (const int64 *) ptr;

				for (d = 0; d < h->ndistinct; d++)
					map[d] = SjDictInt(scan->dict, vals[d]);
			}
			pc->map = map;
			n += h->n;
			ntok += h->ntokens;
			scan->skipped += h->skipped;
		}
		if (n > (size_t) UINT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many rows for jaccard_join: %zu", n)));
		m.keys = palloc_extended(Max(n, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
		m.offsets = palloc_extended((n + 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
		m.tokens = palloc_extended(Max(ntok, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		m.offsets[0] = 0;
		SjMergePieces(nparts + 1, m.pieces, sizeof(SjSetPiece), SJ_SET_MERGE_BLOCK,
					  SjSetMergeRows, &m);
		for (p = 1; p <= nparts; p++)
			pfree((void *) m.pieces[p].map);
		pfree(m.pieces);
		pfree(scan->keys);
		pfree(scan->offsets);
		pfree(scan->tokens);
		scan->keys = m.keys;
		scan->offsets = m.offsets;
		scan->tokens = m.tokens;
		scan->n = n;
		scan->ntokens = ntok;
		scan->cap_keys = Max(n, 1);
		scan->cap_offsets = n + 1;
		scan->cap_tokens = Max(ntok, 1);
	}
	if (scan->n > (size_t) UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows for jaccard_join: %zu", scan->n)));
	out->n = (uint32) scan->n;
	out->offsets = scan->offsets;
	out->tokens = scan->tokens;
	*keys = scan->keys;
}

/* A parallel worker's side, for the columns of spec, with its own dictionary. */
void *
SjSetPartBegin(const SjPartSpec *spec)
{
	SjSetScan  *scan = palloc(sizeof(SjSetScan));

	SjSetSideInit(scan, spec->what, SjDictCreate(get_base_element_type(spec->typids[1])));
	SjPartKey(spec, &scan->relid, &scan->cols[0]);
	return scan;
}

/* Bytes of the dictionary's text keys. */
static uint64
SjDictTextBytes(SjDict *dict)
{
	sjtextdict_iterator it;
	SjTextEntry *e;
	uint64		bytes = 0;

	sjtextdict_start_iterate(dict->texts, &it);
	while ((e = sjtextdict_iterate(dict->texts, &it)) != NULL)
		bytes += e->key.len;
	return bytes;
}

/* Bytes of a worker's side in the part format. */
Size
SjSetPartSize(void *side)
{
	SjSetScan  *scan = (SjSetScan *) side;
	SjDict	   *dict = scan->dict;
	Size		size = sizeof(SjSetPartHeader) + scan->n * sizeof(int64) +
		(scan->n + 1) * sizeof(uint64) + SJ_ALIGN8(scan->ntokens * sizeof(uint32));

	if (dict->is_text)
		size += SJ_ALIGN8(dict->next_id * sizeof(uint32)) + SjDictTextBytes(dict);
	else
		size += dict->next_id * sizeof(int64);
	return size;
}

/* Serialize a worker's side into dst (SjSetPartSize bytes). */
void
SjSetPartWrite(void *side, char *dst)
{
	SjSetScan  *scan = (SjSetScan *) side;
	SjDict	   *dict = scan->dict;
	SjSetPartHeader *h = (SjSetPartHeader *) dst;
	char	   *p = (char *) (h + 1);

	h->n = scan->n;
	h->skipped = scan->skipped;
	h->ntokens = scan->ntokens;
	h->ndistinct = dict->next_id;
	h->is_text = dict->is_text;
	h->textbytes = dict->is_text ? SjDictTextBytes(dict) : 0;
	memcpy(p, scan->keys, scan->n * sizeof(int64));
	p += scan->n * sizeof(int64);
	memcpy(p, scan->offsets, (scan->n + 1) * sizeof(uint64));
	p += (scan->n + 1) * sizeof(uint64);
	memcpy(p, scan->tokens, scan->ntokens * sizeof(uint32));
	p += SJ_ALIGN8(scan->ntokens * sizeof(uint32));
	if (dict->is_text)
	{
		uint32	   *lens = (uint32 *) p;
		char	   *bytes = p + SJ_ALIGN8(dict->next_id * sizeof(uint32));
		uint64	   *start = palloc_extended(Max(dict->next_id, 1) * sizeof(uint64),
											MCXT_ALLOC_HUGE);
		sjtextdict_iterator it;
		SjTextEntry *e;
		uint64		at = 0;
		uint32		d;

		sjtextdict_start_iterate(dict->texts, &it);
		while ((e = sjtextdict_iterate(dict->texts, &it)) != NULL)
			lens[e->id] = e->key.len;
		for (d = 0; d < dict->next_id; d++)
		{
			start[d] = at;
			at += lens[d];
		}
		sjtextdict_start_iterate(dict->texts, &it);
		while ((e = sjtextdict_iterate(dict->texts, &it)) != NULL)
			memcpy(bytes + start[e->id], e->key.p, e->key.len);
		pfree(start);
	}
	else
	{
		int64	   *vals = (int64 *) p;
		sjintdict_iterator it;
		SjIntEntry *e;
		uint32		v;

		sjintdict_start_iterate(dict->ints, &it);
		while ((e = sjintdict_iterate(dict->ints, &it)) != NULL)
			vals[e->id] = e->key;
		for (v = 0; v < dict->ndirect; v++)
			if (dict->direct[v] != 0)
				vals[dict->direct[v] - 1] = v;
	}
}

/* The part format of SJ_PART_SETS sides (parscan.c). */
const SjPartOps sj_set_part_ops = {NULL, SjSetPartBegin, SjSetRow, SjSetPartSize, SjSetPartWrite};

/* Validate the threshold. */
static void
SjThresholdCheck(double t)
{
	SjCheckParam(!(isnan(t) || t <= 0.0 || t > 1.0),
				 "threshold must be greater than 0 and at most 1", t);
}

/* The engines' entry points (sjrun.h). */
SJ_ENGINE(SjJaccardJoin, sj_jaccard_cpu);
SJ_ENGINE(SjGpuJaccardJoin, sjgpu_jaccard);

/* SjOperatorMethods.begin: start the CPU or GPU engine. */
static SjStatus
SjJaccardBegin(void *arg, bool gpu, const SjJoinOptions *options, SjRun *run,
			   char *errmsg)
{
	SjJaccardJob *job = (SjJaccardJob *) arg;
	const SjSets *right = job->self ? NULL : &job->right;

	run->op = SJ_OP_JACCARD;
	if (gpu)
	{
		SjGpuJaccardJoin *h = NULL;
		SjStatus	s = sjgpu_jaccard_begin(&job->left, right, job->threshold,
											options, &h, errmsg);

		return SjRunStarted(run, h, &sjgpu_jaccard_engine, s);
	}
	else
	{
		SjJaccardJoin *h = NULL;
		SjStatus	s = sj_jaccard_cpu_begin(&job->left, right, job->threshold,
											 options, &h, errmsg);

		return SjRunStarted(run, h, &sj_jaccard_cpu_engine, s);
	}
}

/* SjOperatorMethods.emit: one tuple per pair, keys in place of row indices. */
static void
SjJaccardEmit(void *arg, const SjPairBatch *batch)
{
	SjJaccardJob *job = (SjJaccardJob *) arg;

	SjEmitKeyPairs(job->store, job->desc, job->left_keys,
				   job->self ? job->left_keys : job->right_keys, job->self, batch);
}

/* EXPLAIN's strategy of a Jaccard join: the GPU engine chooses from the data. */
static const char *
SjJaccardStrategyName(bool gpu, int planned)
{
	return gpu ? "prefix filter, brute-force overlap, bitmap or co-processing, chosen when run" :
		"prefix filter";
}

/* SjOperatorMethods.spread: the GPU engine's estimate (sjgpu_jaccard_spreads). */
static bool
SjJaccardSpread(void *arg)
{
	SjJaccardJob *job = (SjJaccardJob *) arg;

	return sjgpu_jaccard_spreads(&job->left, job->self ? NULL : &job->right) != 0;
}

/* The Jaccard join's methods (sjrun.h). */
const SjOperatorMethods sj_jaccard_methods = {
	"jaccard_join", SjJaccardBegin, SjJaccardEmit, NULL, SjJaccardStrategyName,
	SjJaccardSpread
};


/*
 * A self-join's sets that join themselves, for the custom scan (as
 * SjEpsSelfRows): a set's similarity to itself is 1, at least any
 * threshold the engines run with (in (0, 1]), but for the empty set,
 * whose similarity is 0.  The engine rows of the non-empty sets, in
 * order, palloc'd, their number in *n.
 */
uint32 *
SjJaccardSelfRows(const SjJaccardJob *job, int64 *n)
{
	const SjSets *v = &job->left;
	uint32	   *rows = palloc_extended(Max(v->n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	int64		count = 0;
	uint32		i;

	for (i = 0; i < v->n; i++)
		if (v->offsets[i + 1] > v->offsets[i])
			rows[count++] = i;
	*n = count;
	return rows;
}

/*
 * The body shared by the four SQL functions.  right_relid == InvalidOid
 * means the self-join form.  Returns the number of pairs.
 */
static int64
SjJaccardJoinRun(Oid left_relid, text *left_key, text *left_set,
				 Oid right_relid, text *right_key, text *right_set,
				 double threshold, int option, Tuplestorestate *store,
				 TupleDesc desc)
{
	SjSetScan	lscan,
				rscan;
	SjJaccardJob job;
	SjRunSpec	spec;
	SjStats		stats;
	SjDict	   *dict;
	double		t0 = sj_now_ms();
	Oid			lelem,
				relem;

	SjThresholdCheck(threshold);
	SjStatsStart(&stats, store ? "jaccard_join" : "jaccard_join_count");
	SjStartDevice();
	memset(&job, 0, sizeof(job));
	job.self = !OidIsValid(right_relid);
	job.threshold = threshold;
	job.store = store;
	job.desc = desc;

	SjSetPrepare(&lscan, left_relid, left_key, left_set, NULL);
	lelem = get_element_type(lscan.cols[1].typid);
	dict = SjDictCreate(lelem);
	lscan.dict = dict;
	if (!job.self)
	{
		SjSetPrepare(&rscan, right_relid, right_key, right_set, dict);
		relem = get_element_type(rscan.cols[1].typid);
		if ((lelem == TEXTOID) != (relem == TEXTOID))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("cannot join sets of %s with sets of %s",
							format_type_be(lscan.cols[1].typid),
							format_type_be(rscan.cols[1].typid)),
					 errhint("Cast one side in a view, or use the same element type on both sides.")));
	}
	if (job.self)
		stats.scan_workers = SjSetMarshal(&lscan, NULL, &job.left, &job.left_keys,
										  NULL, NULL);
	else
		stats.scan_workers = SjSetMarshal(&lscan, &rscan, &job.left, &job.left_keys,
										  &job.right, &job.right_keys);
	job.left.universe = dict->next_id;
	job.right.universe = dict->next_id;
	stats.left_rows = job.left.n;
	stats.right_rows = job.self ? job.left.n : job.right.n;
	stats.scan_ms = sj_now_ms() - t0;

	memset(&spec, 0, sizeof(spec));
	spec.name = store ? "jaccard_join" : "jaccard_join_count";
	spec.ops = &sj_jaccard_methods;
	spec.arg = &job;
	spec.store = store;
	return SjJoinAndReport(&spec, job.left.n == 0 || (!job.self && job.right.n == 0),
						   &stats, t0);
}

PG_FUNCTION_INFO_V1(jaccard_join);

/* jaccard_join(left_table, left_key, left_col, right_table, right_key, right_col, param) */
Datum
jaccard_join(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjJaccardJoinRun, false, false, 0);
}

PG_FUNCTION_INFO_V1(jaccard_join_self);

/* jaccard_join(tbl, key, col, param) */
Datum
jaccard_join_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjJaccardJoinRun, true, false, 0);
}

PG_FUNCTION_INFO_V1(jaccard_join_count);

/* jaccard_join_count(left_table, left_key, left_col, right_table, right_key, right_col, param) */
Datum
jaccard_join_count(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjJaccardJoinRun, false, true, 0);
}

PG_FUNCTION_INFO_V1(jaccard_join_count_self);

/* jaccard_join_count(tbl, key, col, param) */
Datum
jaccard_join_count_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjJaccardJoinRun, true, true, 0);
}
