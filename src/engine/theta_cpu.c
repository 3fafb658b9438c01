/*
 * theta_cpu.c
 *		The CPU engine of theta_join: hash join, sort + binary-search range
 *		join and nested loop over one vectorised program interpreter.
 *
 * Shape (after He et al. 2008, INLJ/HJ/NINLJ on data-parallel primitives):
 *
 *	begin	validate and plan the program (theta_prog.c), then index the
 *			inner side: hash sorts (hash, row) by a parallel LSD radix sort
 *			into groups of equal hash with a directory over the hash's top
 *			bits; range sorts (order key of b, row) the same way, NULL rows
 *			last; the nested loop needs nothing.
 *	next	walks the outer side in blocks of rows.  Loading a block finds
 *			each row's candidates, a contiguous slice [cstart, cstart + clen)
 *			of the inner permutation (hash: its group; range: two binary
 *			searches per term; nested loop or a range row whose bound failed:
 *			all inner rows), and a prefix sum over the slices.  The block's
 *			candidates are then evaluated in windows of TH_WINDOW pairs split
 *			into tasks over sj_parallel_for; each task writes its matches at
 *			the start of its own slice of the window buffer, and the slices
 *			are compacted into the pending pairs, which next() hands out in
 *			batches of at most max_batch_pairs.  A call stops after
 *			TH_CALL_MS of work, possibly with an empty batch.
 *
 * Invariants:
 * - The whole program decides every candidate pair, except when the plan
 *   is exact (candidates are exactly the joining pairs): then count_only
 *   adds the slice lengths, and pairs are emitted without evaluation.
 * - Row states: a value, NULL, or an error code (TS_ERR + code); errors
 *   propagate with PostgreSQL's left-to-right, short-circuit order (see
 *   sjtheta.h), and the first error a task meets stops the join with
 *   SJ_ERR_DATA.
 * - Range bounds are supersets of the joining pairs (see th_term_interval);
 *   rows whose bounds cannot be trusted are evaluated against every inner
 *   row, so the pairs and errors equal a nested loop's for that row.
 *
 * Memory is the engine's own (malloc); nothing here prints or exits.
 *
 * Why this file is larger than ~1000 lines: the interpreter, the index
 * (hash groups, range keys with fences, the shared flattened index) and the
 * block/window driver all work on SjThetaJoin's state; the scalar semantics
 * live in sjthetaops.h and sjnumeric.h.  The index is the seam for a split.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sjnumeric.h"
#include "sjtheta.h"
#include "sjthetaops.h"

#define TH_LANES			256		/* pairs one interpreter pass evaluates */
#define TH_BLOCK_ROWS		65536	/* outer rows per block and thread */
#define TH_WINDOW			(1u << 22)	/* candidates per window (pairs) */
#define TH_COUNT_WINDOW		(1u << 24)	/* candidates per window (count) */
#define TH_TASK_MIN			8192	/* candidates per task at least */
#define TH_CALL_MS			50.0	/* work one next() aims at */
#define TH_DEFAULT_BATCH	1048576 /* max_batch_pairs of 0 */
#define TH_SORT_CHUNK		(1u << 18)	/* rows per key task */
#define TH_FENCE			64		/* keys between fences (one 512-byte block) */

/* Value states: a value, NULL, or an error (TS_ERR + SjThetaDataError - 1). */
#define TS_VAL		SJ_TH_VAL
#define TS_NULL		SJ_TH_NULL
#define TS_ERR(code)	((uint8_t) SJ_TH_ERR(code))

typedef union ThVal
{
	int64_t		i;
	double		f;
} ThVal;

/* One stack slot for TH_LANES pairs. */
typedef struct ThReg
{
	ThVal		v[TH_LANES];
	uint8_t		s[TH_LANES];
} ThReg;

/* A worker's interpreter registers and index buffers. */
typedef struct ThScratch
{
	ThReg		reg[SJ_THETA_MAX_STACK];
	ThReg		e[SJ_THETA_MAX_TERMS];	/* range: E per term */
	ThReg		c[SJ_THETA_MAX_TERMS];	/* range: C per term */
	sj_nw		w[SJ_THETA_MAX_STACK][TH_LANES];	/* wide numeric values of reg */
	uint32_t	idx[TH_LANES];
} ThScratch;

/* A group of equal hash: rows perm[start .. next group's start). */
typedef struct ThGroup
{
	uint64_t	hash;
	uint64_t	start;
} ThGroup;

/* Rows of one side seen by the interpreter: per-lane rows or one row. */
typedef struct ThSideRef
{
	const SjThetaTable *t;
	const uint32_t *idx;		/* NULL: every lane reads `row` */
	uint32_t	row;
	int			contig;			/* idx[k] == idx[0] + k */
} ThSideRef;

/*
 * A flattened index of the right side (sj_theta_cpu_index_write): this
 * header, then the arrays at their offsets from its start, 8-byte aligned.
 * The plan and the right side's size tell a join whether it may probe it.
 */
#define TH_INDEX_MAGIC	UINT64_C(0x73696d6a6f696e31)	/* "simjoin1" */

typedef struct ThIndexHeader
{
	uint64_t	magic;
	uint64_t	size;			/* bytes, header included */
	SjThetaPlan plan;
	uint32_t	nright;			/* rows of the right side */
	uint32_t	nperm;
	uint32_t	nkeys;
	uint32_t	ngroups;
	int32_t		dir_bits;
	int32_t		collision;
	uint64_t	off_perm;
	uint64_t	off_keys;		/* 0: none */
	uint64_t	off_groups;		/* 0: none */
	uint64_t	off_dir;		/* 0: none */
} ThIndexHeader;

struct SjThetaJoin
{
	SjThetaPlan plan;
	SjThetaInstr prog[SJ_THETA_MAX_INSTR];
	int			ninstr;
	SjThetaColumn lcols[SJ_THETA_MAX_COLS];
	SjThetaColumn rcols[SJ_THETA_MAX_COLS];
	SjThetaTable left;
	SjThetaTable right;
	const SjThetaTable *outer;	/* the probe side */
	const SjThetaTable *inner;	/* the indexed side */
	int			outer_left;
	int			exact;			/* candidates are exactly the pairs */
	int			direct_count;	/* exact and count_only: count slices */
	int			count_only;
	int			threads;
	size_t		cap;

	/* inner index */
	uint32_t   *perm;			/* inner rows in index order */
	uint32_t	nperm;
	uint64_t   *keys;			/* range: order keys of perm[0..nkeys) */
	uint32_t	nkeys;
	uint64_t   *fence;			/* range: keys[i * TH_FENCE], i < nfence */
	uint32_t	nfence;
	ThGroup    *groups;			/* hash: ngroups + 1, hashes ascending */
	uint32_t	ngroups;
	uint32_t   *dir;			/* (1 << dir_bits) + 1 group offsets */
	int			dir_bits;
	int			collision;		/* two key tuples share a hash */
	int			index_shared;	/* perm .. dir point into a shared index */

	/* current block of outer rows */
	uint32_t	next_row;
	uint32_t	blk_begin;
	uint32_t	blk_n;
	uint32_t	blk_cap;		/* rows a block holds */
	uint32_t   *cstart;
	uint32_t   *clen;
	uint8_t    *ceval;			/* exact plans: row must be evaluated */
	uint64_t   *cum;			/* blk_n + 1 prefix sums of clen */
	uint64_t	blk_pos;
	uint64_t   *direct;			/* per worker: exact counts of a block */
	int			have_block;
	int			finished;		/* every block evaluated */

	ThScratch **scratch;		/* per worker */
	uint32_t   *wl;				/* window buffer */
	uint32_t   *wr;
	size_t		wcap;
	uint64_t   *task_n;			/* matches per task */
	uint32_t   *pl;				/* pending pairs [ppos, pn) */
	uint32_t   *pr;
	size_t		pcap;
	size_t		ppos;
	size_t		pn;

	atomic_int	error;			/* SjThetaDataError of the first error */
	SjTimings	timings;
};

/* ------------------------------------------------------------------------
 * Scalar semantics: PostgreSQL's int and float operators, float order and
 * keys are sjthetaops.h's, shared with the GPU engine
 * ------------------------------------------------------------------------ */

/* NULL or the first error of two operand states (both not TS_VAL-only). */
static inline uint8_t
th_merge(uint8_t sa, uint8_t sb)
{
	return sa > TS_NULL ? sa : (sb > TS_NULL ? sb : TS_NULL);
}

/*
 * For every lane k of the operands a and b: where either holds NULL or an
 * error the lane takes the merged state, elsewhere stmt computes it.
 */
#define TH_BINARY_LANES(a, b, n, k, stmt) \
	do { \
		for ((k) = 0; (k) < (n); (k)++) \
		{ \
			if ((a)->s[k] | (b)->s[k]) \
				(a)->s[k] = th_merge((a)->s[k], (b)->s[k]); \
			else \
				stmt; \
		} \
	} while (0)

/* ------------------------------------------------------------------------
 * The vectorised interpreter
 * ------------------------------------------------------------------------ */

/* Load a column for every lane. */
static void
th_load(const ThSideRef *ref, int col, ThReg *d, int n)
{
	const SjThetaColumn *c = &ref->t->cols[col];
	const ThVal *v = (const ThVal *) c->values;
	const uint8_t *nu = c->nulls;
	int			k;

	if (ref->idx && ref->contig)
	{
		uint32_t	r0 = ref->idx[0];

		memcpy(d->v, v + r0, n * sizeof(ThVal));
		if (nu)
			for (k = 0; k < n; k++)
				d->s[k] = nu[r0 + k] != 0;
		else
			memset(d->s, TS_VAL, n);
	}
	else if (ref->idx)
	{
		const uint32_t *ix = ref->idx;

		for (k = 0; k < n; k++)
			d->v[k] = v[ix[k]];
		if (nu)
			for (k = 0; k < n; k++)
				d->s[k] = nu[ix[k]] != 0;
		else
			memset(d->s, TS_VAL, n);
	}
	else
	{
		ThVal		x = v[ref->row];

		for (k = 0; k < n; k++)
			d->v[k] = x;
		memset(d->s, nu && nu[ref->row] ? TS_NULL : TS_VAL, n);
	}
}

/* Does any lane of a or b hold NULL or an error? */
static inline int
th_any_state(const ThReg *a, const ThReg *b, int n)
{
	uint8_t		any = 0;
	int			k;

	for (k = 0; k < n; k++)
		any |= a->s[k] | b->s[k];
	return any != 0;
}

/* int comparison over lanes without NULLs (vectorisable loops). */
static void
th_icmp_fast(int base, ThReg *a, const ThReg *b, int n)
{
	int			k;

#define TH_ICMP(expr) for (k = 0; k < n; k++) { int64_t x = a->v[k].i, y = b->v[k].i; a->v[k].i = (expr); } break
	switch (base)
	{
		case 0:
			TH_ICMP(x == y);
		case 1:
			TH_ICMP(x != y);
		case 2:
			TH_ICMP(x < y);
		case 3:
			TH_ICMP(x <= y);
		case 4:
			TH_ICMP(x > y);
		default:
			TH_ICMP(x >= y);
	}
#undef TH_ICMP
}

/* float comparison over lanes without NULLs, PostgreSQL's NaN order. */
static void
th_fcmp_fast(int base, ThReg *a, const ThReg *b, int n)
{
	int			k;

	for (k = 0; k < n; k++)
	{
		double		x = a->v[k].f,
					y = b->v[k].f;
		int64_t		xn = x != x,
					yn = y != y;

		a->v[k].i = (xn | yn) ? xn - yn : (int64_t) (x > y) - (int64_t) (x < y);
	}
#define TH_HOLDS(expr) for (k = 0; k < n; k++) { int64_t c = a->v[k].i; a->v[k].i = (expr); } break
	switch (base)
	{
		case 0:
			TH_HOLDS(c == 0);
		case 1:
			TH_HOLDS(c != 0);
		case 2:
			TH_HOLDS(c < 0);
		case 3:
			TH_HOLDS(c <= 0);
		case 4:
			TH_HOLDS(c > 0);
		default:
			TH_HOLDS(c >= 0);
	}
#undef TH_HOLDS
}

/*
 * int + or - over lanes without NULLs; returns 0 (leaving a untouched)
 * when some lane overflows, for the checked path to redo.
 */
static int
th_iaddsub_fast(int op, ThReg *a, const ThReg *b, int w, int n)
{
	int64_t		r[TH_LANES];
	int64_t		bad = 0;
	int64_t		lo = w == 16 ? INT16_MIN : w == 32 ? INT32_MIN : INT64_MIN;
	int64_t		hi = w == 16 ? INT16_MAX : w == 32 ? INT32_MAX : INT64_MAX;
	int			k;

	if (op == SJ_OP_ADD_I)
		for (k = 0; k < n; k++)
		{
			int64_t		x = a->v[k].i,
						y = b->v[k].i;

			r[k] = (int64_t) ((uint64_t) x + (uint64_t) y);
			bad |= ((x ^ r[k]) & (y ^ r[k])) | -(int64_t) ((r[k] < lo) | (r[k] > hi));
		}
	else
		for (k = 0; k < n; k++)
		{
			int64_t		x = a->v[k].i,
						y = b->v[k].i;

			r[k] = (int64_t) ((uint64_t) x - (uint64_t) y);
			bad |= ((x ^ y) & (x ^ r[k])) | -(int64_t) ((r[k] < lo) | (r[k] > hi));
		}
	if (bad < 0)
		return 0;
	for (k = 0; k < n; k++)
		a->v[k].i = r[k];
	return 1;
}

/* th_eval's numeric operators (sjnumeric.h): returns the new stack depth. */
static int
th_eval_numeric(const SjThetaInstr *in, ThScratch *sc, int sp, int n)
{
	ThReg	   *a,
			   *b;
	int			op = in->op,
				k;

	switch (op)
	{
		case SJ_OP_ADD_N:
		case SJ_OP_SUB_N:
			a = &sc->reg[sp - 2];
			b = &sc->reg[sp - 1];
			sp--;
			TH_BINARY_LANES(a, b, n, k,
							a->v[k].i = op == SJ_OP_ADD_N ?
								sj_num_add(a->v[k].i, b->v[k].i) :
								sj_num_sub(a->v[k].i, b->v[k].i));
			break;
		case SJ_OP_NEG_N:
		case SJ_OP_MUL_N:
			a = &sc->reg[sp - 1];
			for (k = 0; k < n; k++)
				if (!a->s[k])
					a->v[k].i = op == SJ_OP_NEG_N ? sj_num_neg(a->v[k].i) :
						sj_num_mul(a->v[k].i, in->ival, in->arg);
			break;
		case SJ_OP_WIDEN_N:
			a = &sc->reg[sp - 1];
			for (k = 0; k < n; k++)
				if (!a->s[k])
					sc->w[sp - 1][k] = sj_nw_widen(a->v[k].i, in->arg);
			break;
		case SJ_OP_ADD_W:
		case SJ_OP_SUB_W:
			a = &sc->reg[sp - 2];
			b = &sc->reg[sp - 1];
			sp--;
			TH_BINARY_LANES(a, b, n, k,
							sc->w[sp - 1][k] = op == SJ_OP_ADD_W ?
								sj_nw_add(sc->w[sp - 1][k], sc->w[sp][k]) :
								sj_nw_sub(sc->w[sp - 1][k], sc->w[sp][k]));
			break;
		case SJ_OP_NEG_W:
		case SJ_OP_MUL_W:
		case SJ_OP_DIV_W:
			a = &sc->reg[sp - 1];
			for (k = 0; k < n; k++)
			{
				sj_nw	   *x = &sc->w[sp - 1][k];

				if (a->s[k])
					continue;
				if (op == SJ_OP_NEG_W)
					*x = sj_nw_neg(*x);
				else if (op == SJ_OP_MUL_W)
					*x = sj_nw_mul(*x, in->ival, in->arg);
				else if (sj_nw_div(*x, in->ival, SJ_DIVW_KC(in->arg),
								   SJ_DIVW_DSX(in->arg), SJ_DIVW_S(in->arg), x))
					a->s[k] = TS_ERR(SJ_THETA_ERR_DIVISION_BY_ZERO);
			}
			break;
		default:
			break;
	}
	return sp;
}

/* Three-way comparison of lane k of a and b (wa, wb: their wide values). */
static inline int
th_lane_cmp(int type, const ThReg *a, const ThReg *b, const sj_nw *wa,
			const sj_nw *wb, int k)
{
	if (type == SJ_TNW)
		return sj_nw_cmp(wa[k], wb[k]);
	if (type == SJ_TF64)
		return sj_th_fcmp(a->v[k].f, b->v[k].f);
	return (a->v[k].i > b->v[k].i) - (a->v[k].i < b->v[k].i);
}

/*
 * th_eval's comparisons of two ints, floats or wide numerics: returns the
 * new stack depth.
 */
static int
th_eval_compare(const SjThetaInstr *in, ThScratch *sc, int sp, int n)
{
	int			op = in->op;
	int			type = op >= SJ_OP_EQ_W ? SJ_TNW : op >= SJ_OP_EQ_F ? SJ_TF64 : SJ_TI64;
	int			base = op - (type == SJ_TNW ? SJ_OP_EQ_W :
							 type == SJ_TF64 ? SJ_OP_EQ_F : SJ_OP_EQ_I);
	ThReg	   *a = &sc->reg[sp - 2];
	const ThReg *b = &sc->reg[sp - 1];
	const sj_nw *wa = sc->w[sp - 2];
	const sj_nw *wb = sc->w[sp - 1];
	int			k;

	if (type != SJ_TNW && !th_any_state(a, b, n))
	{
		if (type == SJ_TF64)
			th_fcmp_fast(base, a, b, n);
		else
			th_icmp_fast(base, a, b, n);
		return sp - 1;
	}
	TH_BINARY_LANES(a, b, n, k,
					a->v[k].i = sj_th_holds(base, th_lane_cmp(type, a, b, wa, wb, k)));
	return sp - 1;
}

/* th_eval's AND, OR, NOT, IS [NOT] NULL: returns the new stack depth. */
static int
th_eval_logic(const SjThetaInstr *in, ThScratch *sc, int sp, int n)
{
	ThReg	   *a,
			   *b;
	int			op = in->op,
				k;

	switch (op)
	{
		case SJ_OP_AND:
		case SJ_OP_OR:
			{
				int64_t		dom = op == SJ_OP_OR;	/* the dominant value */

				a = &sc->reg[sp - 2];
				b = &sc->reg[sp - 1];
				sp--;
				if (!th_any_state(a, b, n))
				{
					if (dom)
						for (k = 0; k < n; k++)
							a->v[k].i |= b->v[k].i;
					else
						for (k = 0; k < n; k++)
							a->v[k].i &= b->v[k].i;
					break;
				}
				for (k = 0; k < n; k++)
				{
					uint8_t		sa = a->s[k],
								sb = b->s[k];

					if (sa > TS_NULL)
						continue;	/* left error */
					if (sa == TS_VAL && a->v[k].i == dom)
						continue;	/* short circuit */
					if (sb > TS_NULL)
						a->s[k] = sb;
					else if (sb == TS_VAL && b->v[k].i == dom)
					{
						a->s[k] = TS_VAL;
						a->v[k].i = dom;
					}
					else if (sa == TS_NULL || sb == TS_NULL)
						a->s[k] = TS_NULL;
					else
						a->v[k].i = !dom;
				}
				break;
			}
		case SJ_OP_NOT:
			a = &sc->reg[sp - 1];
			for (k = 0; k < n; k++)
				a->v[k].i = !a->v[k].i;
			break;
		case SJ_OP_IS_NULL:
		case SJ_OP_IS_NOT_NULL:
			a = &sc->reg[sp - 1];
			for (k = 0; k < n; k++)
			{
				if (a->s[k] > TS_NULL)
					continue;
				a->v[k].i = (a->s[k] == TS_NULL) == (op == SJ_OP_IS_NULL);
				a->s[k] = TS_VAL;
			}
			break;
		default:
			break;
	}
	return sp;
}

/*
 * Run instructions [begin, end) for n lanes; returns the register holding
 * the result (the slice must leave exactly one value).
 */
static ThReg *
th_eval(const SjThetaInstr *prog, int begin, int end, const ThSideRef *L,
		const ThSideRef *R, int n, ThScratch *sc)
{
	int			sp = 0;
	int			pc,
				k;

	for (pc = begin; pc < end; pc++)
	{
		const SjThetaInstr *in = &prog[pc];
		ThReg	   *a,
				   *b;
		int			op = in->op;

		switch (op)
		{
			case SJ_OP_LOAD_L:
				th_load(L, in->arg, &sc->reg[sp++], n);
				break;
			case SJ_OP_LOAD_R:
				th_load(R, in->arg, &sc->reg[sp++], n);
				break;
			case SJ_OP_CONST_I:
			case SJ_OP_CONST_F:
			case SJ_OP_CONST_B:
				a = &sc->reg[sp++];
				for (k = 0; k < n; k++)
				{
					if (op == SJ_OP_CONST_F)
						a->v[k].f = in->fval;
					else
						a->v[k].i = op == SJ_OP_CONST_B ? in->ival != 0 : in->ival;
				}
				memset(a->s, TS_VAL, n);
				break;
			case SJ_OP_CONST_NULL:
				a = &sc->reg[sp++];
				memset(a->v, 0, sizeof(ThVal) * n);
				memset(a->s, TS_NULL, n);
				break;
			case SJ_OP_ADD_I:
			case SJ_OP_SUB_I:
			case SJ_OP_MUL_I:
			case SJ_OP_DIV_I:
			case SJ_OP_MOD_I:
				{
					int			w = in->arg ? in->arg : 64;

					a = &sc->reg[sp - 2];
					b = &sc->reg[sp - 1];
					sp--;
					if ((op == SJ_OP_ADD_I || op == SJ_OP_SUB_I) &&
						!th_any_state(a, b, n) && th_iaddsub_fast(op, a, b, w, n))
						break;
					TH_BINARY_LANES(a, b, n, k,
									a->s[k] = sj_th_iarith(op, a->v[k].i, b->v[k].i, w, &a->v[k].i));
					break;
				}
			case SJ_OP_NEG_I:
				{
					int			w = in->arg ? in->arg : 64;

					a = &sc->reg[sp - 1];
					for (k = 0; k < n; k++)
					{
						if (a->s[k])
							continue;
						if (a->v[k].i == INT64_MIN || !sj_th_fits(-a->v[k].i, w))
							a->s[k] = sj_th_range_err(w);
						else
							a->v[k].i = -a->v[k].i;
					}
					break;
				}
			case SJ_OP_ADD_N:
			case SJ_OP_SUB_N:
			case SJ_OP_NEG_N:
			case SJ_OP_MUL_N:
			case SJ_OP_WIDEN_N:
			case SJ_OP_ADD_W:
			case SJ_OP_SUB_W:
			case SJ_OP_NEG_W:
			case SJ_OP_MUL_W:
			case SJ_OP_DIV_W:
				sp = th_eval_numeric(in, sc, sp, n);
				break;
			case SJ_OP_ADD_F:
			case SJ_OP_SUB_F:
			case SJ_OP_MUL_F:
			case SJ_OP_DIV_F:
				{
					int			w = in->arg;

					a = &sc->reg[sp - 2];
					b = &sc->reg[sp - 1];
					sp--;
					TH_BINARY_LANES(a, b, n, k,
									a->s[k] = sj_th_farith(op, a->v[k].f, b->v[k].f, w, &a->v[k].f));
					break;
				}
			case SJ_OP_NEG_F:
				a = &sc->reg[sp - 1];
				for (k = 0; k < n; k++)
					a->v[k].f = in->arg == 32 ? (double) -(float) a->v[k].f : -a->v[k].f;
				break;
			case SJ_OP_I2F:
				a = &sc->reg[sp - 1];
				for (k = 0; k < n; k++)
					a->v[k].f = in->arg == 32 ? (double) (float) a->v[k].i : (double) a->v[k].i;
				break;
			SJ_THETA_CMP_CASES(I):
			SJ_THETA_CMP_CASES(F):
			SJ_THETA_CMP_CASES(W):
				sp = th_eval_compare(in, sc, sp, n);
				break;
			case SJ_OP_AND:
			case SJ_OP_OR:
			case SJ_OP_NOT:
			case SJ_OP_IS_NULL:
			case SJ_OP_IS_NOT_NULL:
				sp = th_eval_logic(in, sc, sp, n);
				break;
			default:
				break;			/* rejected by the validator */
		}
	}
	return &sc->reg[0];
}

/* ------------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------------ */

/* Do rows a (table ta, columns ca) and b (tb, cb) have equal keys? */
static inline int
th_keys_equal(const SjThetaTable *ta, const int *ca, uint32_t a,
			  const SjThetaTable *tb, const int *cb, uint32_t b, int nkeys)
{
	int			k;

	for (k = 0; k < nkeys; k++)
		if (sj_th_nkey(&ta->cols[ca[k]], a) != sj_th_nkey(&tb->cols[cb[k]], b))
			return 0;
	return 1;
}

/*
 * Bounds in the range index's keys: a search of the fences (every
 * TH_FENCE-th key, a small array that stays in cache) narrows the search of
 * the keys to one block between two fences, so that a probe row touches a
 * few cache lines of a large index instead of one per halving.
 */
static inline uint32_t
th_keys_bound(const SjThetaJoin *j, uint64_t key, int upper)
{
	uint32_t	f,
				lo,
				hi;

	if (j->fence == NULL)
		return sj_th_bound(j->keys, j->nkeys, key, upper);
	/* the fences on either side of the bound: it is in ((f - 1) F, f F] */
	f = sj_th_bound(j->fence, j->nfence, key, upper);
	lo = f == 0 ? 0 : (f - 1) * TH_FENCE + 1;
	hi = (uint64_t) f * TH_FENCE < j->nkeys ? f * TH_FENCE : j->nkeys;
	return lo + sj_th_bound(j->keys + lo, hi - lo, key, upper);
}

#define th_keys_lower(j, key)	th_keys_bound(j, key, 0)
#define th_keys_upper(j, key)	th_keys_bound(j, key, 1)

/* The fences of a range index of more than two blocks (0: none needed). */
static int
th_fences(SjThetaJoin *j)
{
	uint32_t	i;

	if (j->plan.strategy != SJ_THETA_RANGE || j->keys == NULL ||
		j->nkeys <= 2 * TH_FENCE)
		return 1;
	j->nfence = (j->nkeys + TH_FENCE - 1) / TH_FENCE;
	j->fence = malloc((size_t) j->nfence * sizeof(uint64_t));
	if (j->fence == NULL)
		return 0;
	for (i = 0; i < j->nfence; i++)
		j->fence[i] = j->keys[(size_t) i * TH_FENCE];
	return 1;
}

/* ------------------------------------------------------------------------
 * Build: index the inner side
 * ------------------------------------------------------------------------ */

typedef struct ThKeyTask
{
	SjThetaJoin *j;
	uint64_t   *k;
	uint8_t    *valid;
} ThKeyTask;

/* Hash (hash join) or order key (range join) of each inner row. */
static void
th_key_task(void *arg, uint64_t c, int worker)
{
	ThKeyTask  *t = (ThKeyTask *) arg;
	SjThetaJoin *j = t->j;
	const SjThetaTable *in = j->inner;
	uint32_t	r = (uint32_t) (c * TH_SORT_CHUNK),
				e = r + TH_SORT_CHUNK < in->n ? r + TH_SORT_CHUNK : in->n;

	for (; r < e; r++)
	{
		if (j->plan.strategy == SJ_THETA_HASH)
		{
			t->valid[r] = !sj_th_key_null(in, j->plan.key_build_col, j->plan.nkeys, r);
			if (t->valid[r])
				t->k[r] = sj_th_key_hash(in, j->plan.key_build_col, j->plan.nkeys, r);
		}
		else
		{
			const SjThetaColumn *col = &in->cols[j->plan.range_col];

			t->valid[r] = !(col->nulls && col->nulls[r]);
			if (t->valid[r])
				t->k[r] = col->type == SJ_TF64 ?
					sj_th_okey_f(((const double *) col->values)[r]) :
					sj_th_okey_i(((const int64_t *) col->values)[r]);
		}
	}
}

/* Sort the inner side into perm (+ keys or hash groups). */
static SjStatus
th_build(SjThetaJoin *j, char *errmsg)
{
	const SjThetaTable *in = j->inner;
	uint32_t	n = in->n,
				nv = 0,
				r;
	uint64_t   *k = malloc((size_t) (n ? n : 1) * sizeof(uint64_t));
	uint8_t    *valid = malloc(n ? n : 1);
	ThKeyTask	kt;

	j->perm = malloc((size_t) (n ? n : 1) * sizeof(uint32_t));
	if (!k || !valid || !j->perm)
	{
		free(k);
		free(valid);
		return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory building the index");
	}
	kt.j = j;
	kt.k = k;
	kt.valid = valid;
	if (sj_parallel_for(j->threads, (n + TH_SORT_CHUNK - 1) / TH_SORT_CHUNK,
						th_key_task, &kt) != SJ_OK)
	{
		free(k);
		free(valid);
		return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory building the index");
	}

	/* compact valid rows to the front (keys too), invalid rows after */
	for (r = 0; r < n; r++)
		if (valid[r])
		{
			k[nv] = k[r];
			j->perm[nv++] = r;
		}
	j->nperm = nv;
	if (j->plan.strategy == SJ_THETA_RANGE)
	{
		uint32_t	p = nv;

		for (r = 0; r < n; r++)
			if (!valid[r])
				j->perm[p++] = r;
		j->nperm = n;			/* NULL rows are candidates of fallback rows */
	}
	free(valid);
	if (!sj_radix_sort(k, j->perm, nv, 64, j->threads))
	{
		free(k);
		return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory sorting the index");
	}

	if (j->plan.strategy == SJ_THETA_RANGE)
	{
		j->keys = k;
		j->nkeys = nv;
		return SJ_OK;
	}

	/* hash: groups of equal hash, and a directory over the top bits */
	{
		uint32_t	ng = 0,
					i,
					g,
					s;
		int			bits = 1;

		for (i = 0; i < nv; i++)
		{
			if (i == 0 || k[i] != k[i - 1])
				ng++;
			else if (!j->collision && j->plan.nkeys > 1 &&
					 !th_keys_equal(in, j->plan.key_build_col, j->perm[i],
									in, j->plan.key_build_col, j->perm[i - 1],
									j->plan.nkeys))
				j->collision = 1;
		}
		while (bits < 30 && (UINT64_C(1) << bits) < ng)
			bits++;
		j->dir_bits = bits;
		j->groups = malloc(((size_t) ng + 1) * sizeof(ThGroup));
		j->dir = malloc(((size_t) (UINT64_C(1) << bits) + 1) * sizeof(uint32_t));
		if (!j->groups || !j->dir)
		{
			free(k);
			return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory building the hash table");
		}
		for (i = 0, g = 0; i < nv; i++)
			if (i == 0 || k[i] != k[i - 1])
			{
				j->groups[g].hash = k[i];
				j->groups[g++].start = i;
			}
		j->groups[ng].hash = UINT64_MAX;
		j->groups[ng].start = nv;
		j->ngroups = ng;
		for (s = 0, g = 0; s < (UINT32_C(1) << bits); s++)
		{
			while (g < ng && (j->groups[g].hash >> (64 - bits)) < s)
				g++;
			j->dir[s] = g;
		}
		j->dir[UINT32_C(1) << bits] = ng;
		free(k);
	}
	return SJ_OK;
}

/* ------------------------------------------------------------------------
 * Blocks: candidates of each outer row
 * ------------------------------------------------------------------------ */

/*
 * Narrow [*start, *end) of the sorted keys by one range term, given E (e)
 * and C (c) of this row (both values).  Returns 0 when the row's bound
 * cannot be trusted (the row then goes to the nested loop); see
 * sj_th_term_keys.
 */
static int
th_term_interval(const SjThetaJoin *j, const SjThetaTerm *t, ThVal e, ThVal c,
				 uint32_t *start, uint32_t *end)
{
	SjThKeyRange kr;
	uint32_t	lo = 0,
				hi = j->nkeys;

	if (!sj_th_term_keys(t->form, t->cmp, j->plan.range_type, (uint64_t) e.i,
						 (uint64_t) c.i, &kr))
		return 0;
	if (kr.empty)
		lo = hi = 0;
	else
	{
		if (kr.has_lo)
			lo = th_keys_bound(j, kr.klo, kr.lo_upper);
		if (kr.has_hi)
			hi = th_keys_bound(j, kr.khi, kr.hi_upper);
	}
	if (lo > *start)
		*start = lo;
	if (hi < *end)
		*end = hi;
	return 1;
}

/*
 * Candidates of hash block rows r0 .. r0 + n - 1: each row's key group.
 * Three passes over the rows so that each pass's random reads (directory,
 * groups) are independent and overlap.  With one key the hash is a
 * bijection of the key: equal hash is equal key.
 */
static void
th_block_hash(SjThetaJoin *j, uint32_t r0, int n, int worker)
{
	const SjThetaTable *out = j->outer;
	uint64_t	direct = 0;
	int			k;
	const SjThetaPlan *p = &j->plan;
	uint64_t	h[TH_LANES];
	uint32_t	g[TH_LANES];
	uint8_t		null[TH_LANES];
	int			shift = 64 - j->dir_bits;

	for (k = 0; k < n; k++)
	{
		uint32_t	row = j->blk_begin + r0 + k;

		null[k] = j->ngroups == 0 || sj_th_key_null(out, p->key_probe_col, p->nkeys, row);
		if (!null[k])
		{
			h[k] = sj_th_key_hash(out, p->key_probe_col, p->nkeys, row);
			__builtin_prefetch(&j->dir[h[k] >> shift]);
		}
	}
	for (k = 0; k < n; k++)
		if (!null[k])
		{
			g[k] = j->dir[h[k] >> shift];
			__builtin_prefetch(&j->groups[g[k]]);
		}
	for (k = 0; k < n; k++)
	{
		uint32_t	row = j->blk_begin + r0 + k;
		uint32_t	gs = 0,
					gl = 0;

		if (!null[k])
		{
			uint32_t	x = g[k],
						e = j->dir[(h[k] >> shift) + 1];

			while (x < e && j->groups[x].hash < h[k])
				x++;
			if (x < e && j->groups[x].hash == h[k] &&
				(p->nkeys == 1 || j->collision ||
				 th_keys_equal(out, p->key_probe_col, row,
							   j->inner, p->key_build_col,
							   j->perm[j->groups[x].start], p->nkeys)))
			{
				gs = (uint32_t) j->groups[x].start;
				gl = (uint32_t) (j->groups[x + 1].start - gs);
			}
		}
		if (j->direct_count)
		{
			direct += gl;
			gl = 0;
		}
		j->cstart[r0 + k] = gs;
		j->clen[r0 + k] = gl;
		j->ceval[r0 + k] = 0;
	}
	j->direct[worker] += direct;
}

/*
 * Candidates of range block rows r0 .. r0 + n - 1: E and C of every term
 * evaluated for the n rows, then each row's slice of the sorted keys.
 */
static void
th_block_range(SjThetaJoin *j, uint32_t r0, int n, int worker)
{
	const SjThetaTable *out = j->outer;
	uint64_t	direct = 0;
	int			k;
	ThScratch  *sc = j->scratch[worker];
	ThSideRef	o,
				none;
	const ThSideRef *L,
			   *R;
	int			t;

	for (k = 0; k < n; k++)
		sc->idx[k] = j->blk_begin + r0 + k;
	o.t = out;
	o.idx = sc->idx;
	o.row = 0;
	o.contig = 1;
	none.t = j->inner;
	none.idx = NULL;
	none.row = 0;
	none.contig = 0;
	L = j->outer_left ? &o : &none;
	R = j->outer_left ? &none : &o;
	for (t = 0; t < j->plan.nterms; t++)
	{
		const SjThetaTerm *tm = &j->plan.terms[t];

		memcpy(&sc->e[t], th_eval(j->prog, tm->e_begin, tm->e_end, L, R, n, sc),
			   sizeof(ThReg));
		if (tm->form != SJ_TERM_DIRECT)
			memcpy(&sc->c[t], th_eval(j->prog, tm->c_begin, tm->c_end, L, R, n, sc),
				   sizeof(ThReg));
	}
	for (k = 0; k < n; k++)
	{
		int			fallback = 0,
					empty = 0;
		uint32_t	start = 0,
					end = j->nkeys;

		for (t = 0; t < j->plan.nterms; t++)
		{
			uint8_t		se = sc->e[t].s[k];
			uint8_t		scc = j->plan.terms[t].form == SJ_TERM_DIRECT ? TS_VAL : sc->c[t].s[k];

			if (se > TS_NULL || scc > TS_NULL)
				fallback = 1;
			else if (se == TS_NULL || scc == TS_NULL)
				empty = 1;
		}
		for (t = 0; t < j->plan.nterms && !fallback && !empty; t++)
			if (!th_term_interval(j, &j->plan.terms[t], sc->e[t].v[k],
								  sc->c[t].v[k], &start, &end))
				fallback = 1;
		j->ceval[r0 + k] = (uint8_t) fallback;
		if (fallback)
		{
			j->cstart[r0 + k] = 0;
			j->clen[r0 + k] = j->nperm;
		}
		else if (empty || end <= start)
		{
			j->cstart[r0 + k] = 0;
			j->clen[r0 + k] = 0;
		}
		else if (j->direct_count)
		{
			direct += end - start;
			j->cstart[r0 + k] = 0;
			j->clen[r0 + k] = 0;
		}
		else
		{
			j->cstart[r0 + k] = start;
			j->clen[r0 + k] = end - start;
		}
	}
	j->direct[worker] += direct;
}

/* Load candidates of block rows [c * TH_LANES, ...): one parallel task. */
static void
th_block_task(void *arg, uint64_t c, int worker)
{
	SjThetaJoin *j = (SjThetaJoin *) arg;
	uint32_t	r0 = (uint32_t) c * TH_LANES;
	int			n = j->blk_n - r0 < TH_LANES ? (int) (j->blk_n - r0) : TH_LANES;
	int			k;

	if (j->plan.strategy == SJ_THETA_NESTED_LOOP)
	{
		for (k = 0; k < n; k++)
		{
			j->cstart[r0 + k] = 0;
			j->clen[r0 + k] = j->inner->n;
			j->ceval[r0 + k] = 1;
		}
	}
	else if (j->plan.strategy == SJ_THETA_HASH)
		th_block_hash(j, r0, n, worker);
	else
		th_block_range(j, r0, n, worker);
}

/* Load the next block of outer rows; returns the exact count it holds. */
static uint64_t
th_load_block(SjThetaJoin *j)
{
	uint32_t	left = j->outer->n - j->next_row;
	uint64_t	direct = 0;
	uint32_t	r;
	int			w;

	j->blk_begin = j->next_row;
	j->blk_n = left < j->blk_cap ? left : j->blk_cap;
	j->next_row += j->blk_n;
	for (w = 0; w < j->threads; w++)
		j->direct[w] = 0;
	sj_parallel_for(j->threads, (j->blk_n + TH_LANES - 1) / TH_LANES, th_block_task, j);
	for (w = 0; w < j->threads; w++)
		direct += j->direct[w];
	j->cum[0] = 0;
	for (r = 0; r < j->blk_n; r++)
		j->cum[r + 1] = j->cum[r] + j->clen[r];
	j->blk_pos = 0;
	j->have_block = 1;
	return direct;
}

/* ------------------------------------------------------------------------
 * Windows: evaluate candidates in parallel
 * ------------------------------------------------------------------------ */

typedef struct ThWindow
{
	SjThetaJoin *j;
	uint64_t	g0;				/* first block position */
	uint64_t	total;			/* positions in the window */
	uint64_t	per_task;
} ThWindow;

/* Evaluate one task's candidate positions [a, b) of the block. */
static void
th_window_task(void *arg, uint64_t task, int worker)
{
	ThWindow   *w = (ThWindow *) arg;
	SjThetaJoin *j = w->j;
	ThScratch  *sc = j->scratch[worker];
	uint64_t	a = w->g0 + task * w->per_task;
	uint64_t	b = a + w->per_task < w->g0 + w->total ? a + w->per_task : w->g0 + w->total;
	uint64_t	pos = a;
	size_t		base = (size_t) (a - w->g0);
	size_t		nout = 0;
	uint32_t	lo = 0,
				hi = j->blk_n;
	ThSideRef	o,
				in;
	const ThSideRef *L = j->outer_left ? &o : &in;
	const ThSideRef *R = j->outer_left ? &in : &o;

	/* row holding position a: last r with cum[r] <= a */
	while (lo + 1 < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (j->cum[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	o.t = j->outer;
	o.idx = NULL;
	o.contig = 0;
	in.t = j->inner;
	in.idx = sc->idx;
	in.row = 0;
	in.contig = !(j->perm && j->plan.strategy != SJ_THETA_NESTED_LOOP);

	for (uint32_t r = lo; pos < b && r < j->blk_n; r++)
	{
		uint64_t	off,
					take;
		int			eval;

		if (j->cum[r + 1] <= pos)
			continue;
		off = pos - j->cum[r];
		take = j->cum[r + 1] - pos < b - pos ? j->cum[r + 1] - pos : b - pos;
		o.row = j->blk_begin + r;
		eval = !j->exact || j->ceval[r];
		while (take > 0)
		{
			int			n = take < TH_LANES ? (int) take : TH_LANES;
			uint32_t	p0 = j->cstart[r] + (uint32_t) off;
			int			k;

			if (atomic_load_explicit(&j->error, memory_order_relaxed))
				return;
			if (j->perm && j->plan.strategy != SJ_THETA_NESTED_LOOP)
				for (k = 0; k < n; k++)
					sc->idx[k] = j->perm[p0 + k];
			else
				for (k = 0; k < n; k++)
					sc->idx[k] = p0 + k;

			if (eval)
			{
				ThReg	   *res = th_eval(j->prog, 0, j->ninstr, L, R, n, sc);
				uint8_t		err = 0;

				for (k = 0; k < n; k++)
					err |= res->s[k] > TS_NULL;
				if (err)
				{
					int			expected = 0;

					for (k = 0; res->s[k] <= TS_NULL; k++)
						;
					atomic_compare_exchange_strong(&j->error, &expected,
												   (int) res->s[k] - 1);
					return;
				}
				/* branch-free append: always write, advance on TRUE */
				if (j->count_only)
					for (k = 0; k < n; k++)
						nout += (res->s[k] == TS_VAL) & (res->v[k].i != 0);
				else
				{
					uint32_t   *ol = j->wl + base,
							   *or = j->wr + base;
					uint32_t   *oo = j->outer_left ? ol : or;
					uint32_t   *oi = j->outer_left ? or : ol;

					for (k = 0; k < n; k++)
					{
						oo[nout] = o.row;
						oi[nout] = sc->idx[k];
						nout += (res->s[k] == TS_VAL) & (res->v[k].i != 0);
					}
				}
			}
			else
			{
				if (!j->count_only)
					for (k = 0; k < n; k++)
					{
						j->wl[base + nout + k] = j->outer_left ? o.row : sc->idx[k];
						j->wr[base + nout + k] = j->outer_left ? sc->idx[k] : o.row;
					}
				nout += n;
			}
			off += n;
			pos += n;
			take -= n;
		}
	}
	j->task_n[task] = nout;
}

/* Make room for `need` pairs in a pair of uint32 arrays. */
static int
th_grow(uint32_t **a, uint32_t **b, size_t *cap, size_t need)
{
	uint32_t   *na,
			   *nb;

	if (need <= *cap)
		return 1;
	na = realloc(*a, need * sizeof(uint32_t));
	if (!na)
		return 0;
	*a = na;
	nb = realloc(*b, need * sizeof(uint32_t));
	if (!nb)
		return 0;
	*b = nb;
	*cap = need;
	return 1;
}

/*
 * One step of work: load a block, or evaluate one window of it.  Counts go
 * to *count, pairs to the pending buffer.
 */
static SjStatus
th_step(SjThetaJoin *j, uint64_t *count, char *errmsg)
{
	ThWindow	w;
	uint64_t	ntasks,
				t;

	if (!j->have_block || j->blk_pos >= j->cum[j->blk_n])
	{
		uint64_t	direct;

		if (j->next_row >= j->outer->n)
		{
			j->finished = 1;
			return SJ_OK;
		}
		direct = th_load_block(j);
		*count += direct;
		return SJ_OK;
	}

	w.j = j;
	w.g0 = j->blk_pos;
	w.total = j->cum[j->blk_n] - j->blk_pos;
	if (w.total > (j->count_only ? TH_COUNT_WINDOW : TH_WINDOW))
		w.total = j->count_only ? TH_COUNT_WINDOW : TH_WINDOW;
	ntasks = (w.total + TH_TASK_MIN - 1) / TH_TASK_MIN;
	if (ntasks > (uint64_t) j->threads * 4)
		ntasks = (uint64_t) j->threads * 4;
	w.per_task = (w.total + ntasks - 1) / ntasks;
	ntasks = (w.total + w.per_task - 1) / w.per_task;

	if (!j->count_only)
	{
		/* room for the window, and for the pending pairs it may add */
		if (j->ppos > 0)
		{
			memmove(j->pl, j->pl + j->ppos, (j->pn - j->ppos) * sizeof(uint32_t));
			memmove(j->pr, j->pr + j->ppos, (j->pn - j->ppos) * sizeof(uint32_t));
			j->pn -= j->ppos;
			j->ppos = 0;
		}
		if (!th_grow(&j->wl, &j->wr, &j->wcap, (size_t) w.total) ||
			!th_grow(&j->pl, &j->pr, &j->pcap, j->pn + (size_t) w.total))
			return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory for result pairs");
	}
	for (t = 0; t < ntasks; t++)
		j->task_n[t] = 0;
	sj_parallel_for(j->threads, ntasks, th_window_task, &w);
	if (atomic_load(&j->error))
	{
		SjThetaDataError e = (SjThetaDataError) atomic_load(&j->error);

		return sj_error(errmsg, SJ_ERR_DATA, "%s", sj_theta_error_message(e));
	}
	for (t = 0; t < ntasks; t++)
	{
		if (j->count_only)
			*count += j->task_n[t];
		else
		{
			memcpy(j->pl + j->pn, j->wl + t * w.per_task, j->task_n[t] * sizeof(uint32_t));
			memcpy(j->pr + j->pn, j->wr + t * w.per_task, j->task_n[t] * sizeof(uint32_t));
			j->pn += j->task_n[t];
		}
	}
	j->blk_pos += w.total;
	return SJ_OK;
}

/* ------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */

/*
 * Probe a shared index of the right side instead of building one: it must
 * come from a join of the same plan over a right side of the same size.
 */
static SjStatus
th_attach(SjThetaJoin *j, const ThIndexHeader *h, char *errmsg)
{
	const char *base = (const char *) h;

	if (h->magic != TH_INDEX_MAGIC || !j->outer_left ||
		j->plan.strategy == SJ_THETA_NESTED_LOOP ||
		h->nright != j->right.n ||
		memcmp(&h->plan, &j->plan, sizeof(SjThetaPlan)) != 0)
		return sj_error(errmsg, SJ_ERR_INVALID,
						"theta_join: the shared index does not fit this join");
	j->perm = (uint32_t *) (base + h->off_perm);
	j->nperm = h->nperm;
	j->keys = h->off_keys ? (uint64_t *) (base + h->off_keys) : NULL;
	j->nkeys = h->nkeys;
	j->groups = h->off_groups ? (ThGroup *) (base + h->off_groups) : NULL;
	j->ngroups = h->ngroups;
	j->dir = h->off_dir ? (uint32_t *) (base + h->off_dir) : NULL;
	j->dir_bits = h->dir_bits;
	j->collision = h->collision;
	j->index_shared = 1;
	return SJ_OK;
}

/*
 * The flattened index of j's right side (see ThIndexHeader), written into
 * dst where given; its size, 0 if it has none.
 */
static size_t
th_index(const SjThetaJoin *j, void *dst)
{
	ThIndexHeader h;
	SjFlatPart	parts[4];

	memset(&h, 0, sizeof(h));
	if (j == NULL || j->perm == NULL || j->index_shared || !j->outer_left ||
		j->plan.strategy == SJ_THETA_NESTED_LOOP)
		return 0;
	h.magic = TH_INDEX_MAGIC;
	h.plan = j->plan;
	h.nright = j->right.n;
	h.nperm = j->nperm;
	h.nkeys = j->nkeys;
	h.ngroups = j->ngroups;
	h.dir_bits = j->dir_bits;
	h.collision = j->collision;
	parts[0] = (SjFlatPart) {&h.off_perm, j->perm, (uint64_t) j->nperm * sizeof(uint32_t), 1};
	parts[1] = (SjFlatPart) {&h.off_keys, j->keys, (uint64_t) j->nkeys * sizeof(uint64_t),
		j->keys != NULL};
	parts[2] = (SjFlatPart) {&h.off_groups, j->groups,
		((uint64_t) j->ngroups + 1) * sizeof(ThGroup), j->groups != NULL};
	parts[3] = (SjFlatPart) {&h.off_dir, j->dir,
		((UINT64_C(1) << j->dir_bits) + 1) * sizeof(uint32_t), j->dir != NULL};
	return (size_t) sj_flat_index(dst, &h, sizeof(h), &h.size, parts, 4);
}

size_t
sj_theta_cpu_index_size(const SjThetaJoin *j)
{
	return th_index(j, NULL);
}

void
sj_theta_cpu_index_write(const SjThetaJoin *j, void *dst)
{
	th_index(j, dst);
}

SjStatus
sj_theta_cpu_begin(const SjThetaTable *left, const SjThetaTable *right,
				   const SjThetaProgram *program, SjThetaStrategy strategy,
				   const SjJoinOptions *options, SjThetaJoin **join,
				   char *errmsg)
{
	SjThetaJoin *j;
	SjStatus	st;
	double		t0 = sj_now_ms();
	int			w;

	*join = NULL;
	if (options == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: no options");
	j = calloc(1, sizeof(SjThetaJoin));
	if (!j)
		return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory");
	if ((st = sj_theta_plan_side(program, left, right, strategy,
								  options->index_right || options->shared_index,
								  &j->plan, errmsg)) != SJ_OK)
	{
		free(j);
		return st;
	}
	sj_theta_copy_inputs(program, left, right, j->prog, &j->ninstr, j->lcols,
						 j->rcols, &j->left, &j->right);
	j->outer_left = j->plan.probe_left;
	j->outer = j->outer_left ? &j->left : &j->right;
	j->inner = j->outer_left ? &j->right : &j->left;
	j->count_only = options->count_only != 0;
	j->threads = options->cpu_threads > 0 ? options->cpu_threads : 1;
	j->cap = options->max_batch_pairs ? options->max_batch_pairs : TH_DEFAULT_BATCH;
	atomic_init(&j->error, 0);
	snprintf(j->timings.strategy, sizeof(j->timings.strategy), "%s", j->plan.description);
	*join = j;

	if (left->n == 0 || right->n == 0)
	{
		j->finished = 1;
		return SJ_OK;
	}

	j->scratch = calloc(j->threads, sizeof(ThScratch *));
	j->direct = calloc(j->threads, sizeof(uint64_t));
	j->task_n = calloc((size_t) j->threads * 4 + 1, sizeof(uint64_t));
	/* a block's loading stays short even on one thread */
	j->blk_cap = (uint32_t) (TH_BLOCK_ROWS * (uint64_t) (j->threads < 16 ? j->threads : 16));
	if (j->blk_cap > j->outer->n)
		j->blk_cap = j->outer->n;
	j->cstart = malloc(j->blk_cap * sizeof(uint32_t));
	j->clen = malloc(j->blk_cap * sizeof(uint32_t));
	j->ceval = malloc(j->blk_cap);
	j->cum = malloc(((size_t) j->blk_cap + 1) * sizeof(uint64_t));
	if (!j->scratch || !j->direct || !j->task_n || !j->cstart || !j->clen || !j->ceval || !j->cum)
		goto nomem;
	for (w = 0; w < j->threads; w++)
		if (!(j->scratch[w] = malloc(sizeof(ThScratch))))
			goto nomem;

	if (options->shared_index != NULL)
		st = th_attach(j, (const ThIndexHeader *) options->shared_index, errmsg);
	else if (j->plan.strategy != SJ_THETA_NESTED_LOOP)
		st = th_build(j, errmsg);
	else
		st = SJ_OK;
	if (st != SJ_OK)
	{
		sj_theta_cpu_end(j);
		*join = NULL;
		return st;
	}
	if (!th_fences(j))
	{
		sj_theta_cpu_end(j);
		*join = NULL;
		return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory");
	}
	j->exact = j->plan.exact && !j->collision;
	j->direct_count = j->exact && j->count_only;
	j->timings.build_ms = sj_now_ms() - t0;
	/* the index of the right side is all that is wanted */
	if (options->index_only && options->index_right)
		j->finished = 1;
	return SJ_OK;

nomem:
	sj_theta_cpu_end(j);
	*join = NULL;
	return sj_error(errmsg, SJ_ERR_NOMEM, "theta_join: out of memory");
}

SjStatus
sj_theta_cpu_next(SjThetaJoin *j, SjPairBatch *batch, int *done, char *errmsg)
{
	double		t0 = sj_now_ms();
	uint64_t	count = 0;
	SjStatus	st = SJ_OK;

	memset(batch, 0, sizeof(*batch));
	*done = 0;
	if (j == NULL)
		return sj_error(errmsg, SJ_ERR_INVALID, "theta_join: no join");
	if (atomic_load(&j->error))
		return sj_error(errmsg, SJ_ERR_DATA, "%s",
					   sj_theta_error_message((SjThetaDataError) atomic_load(&j->error)));

	if (j->count_only)
	{
		while (!j->finished && sj_now_ms() - t0 < TH_CALL_MS)
			if ((st = th_step(j, &count, errmsg)) != SJ_OK)
				break;
		batch->count = count;
		*done = j->finished;
	}
	else
	{
		while (j->pn - j->ppos < j->cap && !j->finished && sj_now_ms() - t0 < TH_CALL_MS)
			if ((st = th_step(j, &count, errmsg)) != SJ_OK)
				break;
		if (st == SJ_OK)
		{
			size_t		n = j->pn - j->ppos;

			if (n > j->cap)
				n = j->cap;
			batch->count = n;
			batch->left = n ? j->pl + j->ppos : NULL;
			batch->right = n ? j->pr + j->ppos : NULL;
			j->ppos += n;
			*done = j->finished && j->ppos == j->pn;
		}
	}
	j->timings.probe_ms += sj_now_ms() - t0;
	if (st != SJ_OK)
	{
		memset(batch, 0, sizeof(*batch));
		return st;
	}
	j->timings.batches++;
	return SJ_OK;
}

void
sj_theta_cpu_timings(const SjThetaJoin *j, SjTimings *timings)
{
	if (j)
		*timings = j->timings;
	else
		memset(timings, 0, sizeof(*timings));
}

SjThetaDataError
sj_theta_cpu_data_error(const SjThetaJoin *j)
{
	return j ? (SjThetaDataError) atomic_load(&((SjThetaJoin *) j)->error) : SJ_THETA_OK;
}

void
sj_theta_cpu_end(SjThetaJoin *j)
{
	int			w;

	if (j == NULL)
		return;
	if (j->scratch)
		for (w = 0; w < j->threads; w++)
			free(j->scratch[w]);
	free(j->scratch);
	free(j->direct);
	free(j->task_n);
	free(j->cstart);
	free(j->clen);
	free(j->ceval);
	free(j->cum);
	free(j->fence);
	if (!j->index_shared)
	{
		free(j->perm);
		free(j->keys);
		free(j->groups);
		free(j->dir);
	}
	free(j->wl);
	free(j->wr);
	free(j->pl);
	free(j->pr);
	free(j);
}
