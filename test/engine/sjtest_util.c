/*
 * sjtest_util.c
 *		Helpers shared by the engine tests (declared in sjtest.h): the
 *		splitmix64 generator, a growable list of result pairs and a
 *		brute-force oracle over vectors.
 */
#include <stdlib.h>

#include "sjtest.h"

/* splitmix64: the next value of the generator whose state is *state. */
uint64_t
sj_test_splitmix(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from the generator *state. */
double
sj_test_unit(uint64_t *state)
{
	return (sj_test_splitmix(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* SJ_BENCH_DEVICES as a device list (sjtest.h). */
int
sj_test_bench_devices(int *list, int max)
{
	const char *p = getenv("SJ_BENCH_DEVICES");
	int			n = 0;

	while (p && *p && n < max)
	{
		char	   *end;
		long		v = strtol(p, &end, 10);

		if (end == p)
			break;
		list[n++] = (int) v;
		p = *end ? end + 1 : end;
	}
	return n;
}

/* Append a pair (aborts when out of memory: a test harness). */
void
sj_test_pairs_add(SjTestPairs *ps, uint32_t l, uint32_t r, double d)
{
	if (ps->n == ps->alloc)
	{
		ps->alloc = ps->alloc ? ps->alloc * 2 : 1024;
		ps->p = realloc(ps->p, ps->alloc * sizeof(SjTestPair));
		if (!ps->p)
			abort();
	}
	ps->p[ps->n].l = l;
	ps->p[ps->n].r = r;
	ps->p[ps->n].d = d;
	ps->n++;
}

/* n row-major rows of dim floats in four pieces: a third, one row, none, the rest. */
void
sj_test_row_pieces(SjRowPiece *p, const float *rows, uint32_t n, int dim)
{
	uint32_t	a = n / 3,
				b = a + 1;

	p[0] = (SjRowPiece) {0, a, rows};
	p[1] = (SjRowPiece) {a, 1, rows + (size_t) a * dim};
	p[2] = (SjRowPiece) {b, 0, NULL};
	p[3] = (SjRowPiece) {b, n - b, rows + (size_t) b * dim};
}

/* qsort order of pairs: by (left, right). */
int
sj_test_pair_cmp(const void *a, const void *b)
{
	const SjTestPair *x = a,
			   *y = b;

	if (x->l != y->l)
		return x->l < y->l ? -1 : 1;
	if (x->r != y->r)
		return x->r < y->r ? -1 : 1;
	return 0;
}

/* Every pair within eps, by brute force; R NULL: self-join (i < j). */
void
sj_test_brute_join(const SjVectors *L, const SjVectors *R, double eps,
				   SjTestDistFn dist, SjTestPairs *out)
{
	uint32_t	i,
				j;

	for (i = 0; i < L->n; i++)
		for (j = R ? 0 : i + 1; j < (R ? R->n : L->n); j++)
		{
			double		d = dist(L, i, R ? R : L, j);

			if (d <= eps)
				sj_test_pairs_add(out, i, j, d);
		}
}
