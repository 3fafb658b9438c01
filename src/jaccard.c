/*
 * jaccard.c
 *		jaccard() over int4[], int8[] and text[] sets, and the tokenizers
 *		simjoin_words() and simjoin_qgrams().
 *
 * A set is the array's elements, duplicates ignored, whatever the array's
 * shape; a NULL element is an error.  jaccard(a, b) = |a ∩ b| / |a ∪ b|, computed as
 * (double) inter / (double) (|a| + |b| - inter), the expression both join
 * engines use, so that jaccard_join's similarity equals jaccard() bit for
 * bit.  Two empty sets have similarity 0: an empty set is similar to
 * nothing.  Text elements are equal when their bytes are equal.
 *
 * simjoin_words(t) splits t into words, runs of letters and digits (as
 * pg_trgm defines them), lower-cased.  simjoin_qgrams(t, q) returns the
 * character q-grams of each word padded with q - 1 spaces in front and one
 * behind, so that for q = 3 they are pg_trgm's trigrams and
 * jaccard(simjoin_qgrams(a), simjoin_qgrams(b)) is pg_trgm's similarity(a, b).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "tsearch/ts_locale.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "jaccard_join.h"

#define SJ_QGRAM_MAX 64

/* A text element: bytes and length, pointing into a detoasted array. */
typedef struct SjBytes
{
	const char *p;
	int			len;
} SjBytes;

/* Reject NULL elements in a set. */
void
SjCheckSetNulls(ArrayType *a, const char *what)
{
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL elements", what)));
}

/* Order of int64 elements. */
static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Byte order of text elements, shorter first on a common prefix. */
static int
cmp_bytes(const void *a, const void *b)
{
	const SjBytes *x = (const SjBytes *) a;
	const SjBytes *y = (const SjBytes *) b;
	int			c = memcmp(x->p, y->p, Min(x->len, y->len));

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Sort n elements of the given size and drop duplicates; returns how many are left. */
static int
SjSortUnique(void *v, int n, size_t size, int (*cmp) (const void *, const void *))
{
	char	   *e = (char *) v;
	int			i,
				m = 0;

	qsort(v, n, size, cmp);
	for (i = 0; i < n; i++)
		if (m == 0 || cmp(e + (size_t) (m - 1) * size, e + (size_t) i * size) != 0)
		{
			if (m != i)
				memcpy(e + (size_t) m * size, e + (size_t) i * size, size);
			m++;
		}
	return m;
}

/* Number of elements two sorted, de-duplicated sets have in common. */
static int
SjSortedOverlap(const void *a, int na, const void *b, int nb, size_t size,
				int (*cmp) (const void *, const void *))
{
	const char *x = (const char *) a;
	const char *y = (const char *) b;
	int			i = 0,
				j = 0,
				inter = 0;

	while (i < na && j < nb)
	{
		int			c = cmp(x + (size_t) i * size, y + (size_t) j * size);

		if (c < 0)
			i++;
		else if (c > 0)
			j++;
		else
		{
			inter++;
			i++;
			j++;
		}
	}
	return inter;
}

/* The similarity expression shared with the engines. */
double
SjJaccardValue(int64 la, int64 lb, int64 inter)
{
	int64		uni = la + lb - inter;

	if (uni == 0)
		return 0.0;
	return (double) inter / (double) uni;
}

/* Sorted, de-duplicated int64 elements of an int4[] or int8[] set. */
static void *
SjIntSet(ArrayType *a, int *n)
{
	int			nitems = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	int64	   *v = palloc(sizeof(int64) * Max(nitems, 1));
	int			i;

	SjCheckSetNulls(a, "set");
	if (ARR_ELEMTYPE(a) == INT4OID)
	{
		const int32 *src = (const int32 *) ARR_DATA_PTR(a);

		for (i = 0; i < nitems; i++)
			v[i] = src[i];
	}
	else
		memcpy(v, ARR_DATA_PTR(a), sizeof(int64) * nitems);
	*n = SjSortUnique(v, nitems, sizeof(int64), cmp_int64);
	return v;
}

/* Sorted, de-duplicated text elements (SjBytes) of a text[] set. */
static void *
SjTextSet(ArrayType *a, int *n)
{
	int			nitems = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	SjBytes    *v = palloc(sizeof(SjBytes) * Max(nitems, 1));
	const char *ptr = ARR_DATA_PTR(a);
	int			i;

	SjCheckSetNulls(a, "set");
	for (i = 0; i < nitems; i++)
	{
		v[i].p = VARDATA_ANY(ptr);
		v[i].len = VARSIZE_ANY_EXHDR(ptr);
		ptr = att_addlength_pointer(ptr, -1, ptr);
		ptr = (const char *) att_align_nominal(ptr, TYPALIGN_INT);
	}
	*n = SjSortUnique(v, nitems, sizeof(SjBytes), cmp_bytes);
	return v;
}

/*
 * jaccard() of the two array arguments: each made a set by set_fn, of
 * elements of size bytes in cmp's order.
 */
static Datum
SjJaccardArgs(FunctionCallInfo fcinfo, void *(*set_fn) (ArrayType *a, int *n),
			  size_t size, int (*cmp) (const void *, const void *))
{
	int			na,
				nb;
	void	   *a = set_fn(PG_GETARG_ARRAYTYPE_P(0), &na);
	void	   *b = set_fn(PG_GETARG_ARRAYTYPE_P(1), &nb);

	PG_RETURN_FLOAT8(SjJaccardValue(na, nb, SjSortedOverlap(a, na, b, nb, size, cmp)));
}

PG_FUNCTION_INFO_V1(jaccard_int);

/* jaccard(int4[], int4[]) and jaccard(int8[], int8[]) */
Datum
jaccard_int(PG_FUNCTION_ARGS)
{
	return SjJaccardArgs(fcinfo, SjIntSet, sizeof(int64), cmp_int64);
}

PG_FUNCTION_INFO_V1(jaccard_text);

/* jaccard(text[], text[]) */
Datum
jaccard_text(PG_FUNCTION_ARGS)
{
	return SjJaccardArgs(fcinfo, SjTextSet, sizeof(SjBytes), cmp_bytes);
}

/* Is the character at p (of byte length len) part of a word? */
static bool
SjIsWordChar(const char *p, int len)
{
	return t_isalpha_with_len(p, len) || t_isdigit_with_len(p, len);
}

/*
 * Call fn for each lower-cased word of the string (pg_trgm's words: runs
 * of letters and digits).
 */
static void
SjForEachWord(const char *s, int len, void (*fn) (void *arg, const char *w, int wlen),
			  void *arg)
{
	const char *end = s + len;
	const char *p = s;

	while (p < end)
	{
		const char *start;
		int			clen = pg_mblen(p);

		if (!SjIsWordChar(p, clen))
		{
			p += clen;
			continue;
		}
		start = p;
		while (p < end && SjIsWordChar(p, clen = pg_mblen(p)))
			p += clen;
		{
			char	   *lower = lowerstr_with_len(start, p - start);

			fn(arg, lower, strlen(lower));
			pfree(lower);
		}
	}
}

typedef struct SjTokens
{
	ArrayBuildState *astate;
	int			q;
} SjTokens;

/* Collect a word. */
static void
SjAddWord(void *arg, const char *w, int wlen)
{
	SjTokens   *t = (SjTokens *) arg;

	t->astate = accumArrayResult(t->astate, PointerGetDatum(cstring_to_text_with_len(w, wlen)),
								 false, TEXTOID, CurrentMemoryContext);
}

/* Collect the q-grams of a padded word. */
static void
SjAddQgrams(void *arg, const char *w, int wlen)
{
	SjTokens   *t = (SjTokens *) arg;
	int			lpad = t->q > 1 ? t->q - 1 : 0;
	int			rpad = t->q > 1 ? 1 : 0;
	char	   *buf = palloc(wlen + lpad + rpad + 1);
	const char **starts;
	int			nchars = 0;
	const char *p;
	int			total = wlen + lpad + rpad;
	int			i;

	memset(buf, ' ', lpad);
	memcpy(buf + lpad, w, wlen);
	memset(buf + lpad + wlen, ' ', rpad);
	buf[total] = '\0';

	/* character boundaries of the padded word */
	starts = palloc(sizeof(char *) * (total + 1));
	for (p = buf; p < buf + total; p += pg_mblen(p))
		starts[nchars++] = p;
	starts[nchars] = buf + total;

	for (i = 0; i + t->q <= nchars; i++)
		t->astate = accumArrayResult(t->astate,
									 PointerGetDatum(cstring_to_text_with_len(starts[i],
																			  starts[i + t->q] - starts[i])),
									 false, TEXTOID, CurrentMemoryContext);
	pfree(starts);
	pfree(buf);
}

/* The collected tokens as a text[] (empty array when none). */
static Datum
SjTokensResult(SjTokens *t)
{
	if (t->astate == NULL)
		return PointerGetDatum(construct_empty_array(TEXTOID));
	return makeArrayResult(t->astate, CurrentMemoryContext);
}

PG_FUNCTION_INFO_V1(simjoin_words);

/* simjoin_words(text): the lower-cased words of a string */
Datum
simjoin_words(PG_FUNCTION_ARGS)
{
	text	   *s = PG_GETARG_TEXT_PP(0);
	SjTokens	t = {NULL, 0};

	SjForEachWord(VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), SjAddWord, &t);
	PG_RETURN_DATUM(SjTokensResult(&t));
}

PG_FUNCTION_INFO_V1(simjoin_qgrams);

/* simjoin_qgrams(text, q): the q-grams of each padded, lower-cased word */
Datum
simjoin_qgrams(PG_FUNCTION_ARGS)
{
	text	   *s = PG_GETARG_TEXT_PP(0);
	int32		q = PG_GETARG_INT32(1);
	SjTokens	t = {NULL, q};

	if (q < 1 || q > SJ_QGRAM_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("q must be between 1 and %d, not %d", SJ_QGRAM_MAX, q)));
	SjForEachWord(VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), SjAddQgrams, &t);
	PG_RETURN_DATUM(SjTokensResult(&t));
}
