/*
 * theta_join.c
 *		theta_join and theta_join_count: pairs of rows of two relations for
 *		which a boolean condition over their columns is true.  This file is
 *		the adapter around the engines; the condition's compiler is in
 *		theta_compile.c, theta_values.c and theta_precheck.c.
 *
 * The condition text is parsed by PostgreSQL's own parser as a single
 * expression and analysed against the two relations under the aliases "l"
 * and "r", exactly as a join's ON clause would be: names resolve, operators
 * and casts are chosen, and the columns it reads are marked for privilege
 * checking, which ExecCheckRTPerms then enforces.  The text is never pasted
 * into SQL.  Rows are read by marshal.c, so row-level security holds.
 *
 * The analysed tree is compiled into the engines' postfix program
 * (sjtheta.h).  Only a whitelist of nodes and built-in functions is
 * accepted (identified by function OID, never by name); anything else is
 * refused with an error that names the construct.  theta_join checks the
 * tree as parse analysis left it, before constants are folded or SQL
 * functions inlined (SjThetaPrecheck), so no function the caller defined
 * ever runs.  Types map to the
 * engines' two column types:
 *
 *	int2, int4, int8, date (days), timestamp, timestamptz (microseconds),
 *	bool (0/1)						-> int64
 *	float4, float8					-> double
 *	text, numeric					-> int64 ranks: every value of the type
 *									   read by the condition, on either side,
 *									   and every constant of the type, sorted
 *									   together (text under the comparison's
 *									   collation), equal values sharing a rank;
 *									   comparisons of ranks are exactly the
 *									   comparisons of the values.
 *
 * Arithmetic is supported on integer, float, date and timestamp values;
 * text can only be compared.  Numeric + - and * by a constant (and unary
 * minus) run exactly, in the engines' int64 fixed point (sjnumeric.h): with
 * such arithmetic in the condition, every numeric value it reads, on either
 * side, and every numeric constant, is that value times 10^S for one common
 * scale S (the largest scale among them, plus the scales of the constant
 * multipliers), NaN and +-Infinity sentinels; SjNumericFixAll refuses
 * values, or results the condition could compute, that do not fit
 * (22003), and SjThetaCompilable proves the same from the columns' declared
 * precision before the planner offers the custom scan (a parameter, whose
 * value the generic plan does not know, leaves the join to PostgreSQL).  An
 * integer or float column cast to numeric is read as its type and cast by
 * PostgreSQL once read (SjNumericCasts).  Numeric division by a constant,
 * whose quotient PostgreSQL rounds to a scale that depends on each value,
 * makes every numeric value of the condition wide (128-bit fixed point,
 * WIDEN_N and the _W operators): SjNumericWide finds a common scale at least
 * every quotient's select_div_scale() scale and proves that everything fits
 * at it, or refuses (22003).  Timestamp +/- an interval constant
 * that is a fixed number of microseconds runs in the engines as int64
 * arithmetic.  Intervals that are not (months or years; days on
 * timestamptz, which depend on the session's TimeZone; any interval added
 * to a date) are handled as derived columns: a date/timestamp[tz] column of
 * one side with its chain of constant intervals (and date->timestamp casts,
 * SJ_DERIVE_MAX_STEPS steps) is one column of that side (SjThetaDerive),
 * computed by PostgreSQL's own functions (timestamp_pl_interval, ...) as
 * each row is read, so the engines see an ordinary int64 column and the
 * result is exactly PostgreSQL's: a band of months stays a range join.  The
 * derivation travels with the column everywhere a side is built: the serial
 * scan, parallel workers (SjPartSpec.derive, filled by SjThetaPartDescribe;
 * workers inherit the TimeZone) and the custom scan.  A row whose result is
 * out of range is kept with its input and flagged (nulls = 2); once both
 * sides are read, SjThetaDerivedErrors raises PostgreSQL's error for it by
 * computing it again, unless the other side is empty.
 *
 * The files: this one is the adapter (the SQL functions, the sides and
 * their rows, the engines' begin/emit/method tables, the parallel part
 * format, the custom scan's entry points of theta_join.h); theta_compile.c
 * compiles the analysed tree into the program; theta_values.c ranks text and
 * numeric values and puts numerics into fixed point; theta_precheck.c parses
 * and analyses the condition and holds the whitelist.  They share
 * theta_int.h, and each calls only the files after it in that list.
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "theta_int.h"

/* What the engine begin callback and the emitter need. */
typedef struct SjThetaJob
{
	SjThetaTable tables[2];
	SjThetaColumn engine_cols[2][SJ_THETA_MAX_COLS];
	SjThetaProgram program;
	SjThetaSide *sides[2];
	Tuplestorestate *store;
	TupleDesc	desc;
	SjThetaDataError data_error;
} SjThetaJob;

/* Row callback: keep one row's key and condition columns. */
static void
SjThetaRow(void *arg, Datum *values, bool *isnull)
{
	SjThetaSide *side = (SjThetaSide *) arg;
	size_t		i = side->n;
	int			k;

	if (isnull[0])
		SjErrorNullKey(side->relid, &side->key);
	if (i == side->cap)
	{
		size_t		cap = side->cap;

		if (side->nokeys)
			cap = Max(cap * 2, Max(i + 1, (size_t) 1024));	/* as SjGrow */
		else
			side->keys = SjGrow(side->keys, &cap, i + 1, sizeof(int64));
		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];
			size_t		c2 = side->cap;

			col->nulls = SjGrow(col->nulls, &c2, i + 1, sizeof(uint8));
			c2 = side->cap;
			if (col->kind == SJ_KIND_F64)
				col->fvals = SjGrow(col->fvals, &c2, i + 1, sizeof(double));
			else if (col->kind == SJ_KIND_I64)
				col->ivals = SjGrow(col->ivals, &c2, i + 1, sizeof(int64));
			else
				col->dvals = SjGrow(col->dvals, &c2, i + 1, sizeof(Datum));
		}
		side->cap = cap;
	}
	if (!side->nokeys)
		side->keys[i] = SjKeyValue(values[0], side->key.typid);
	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];
		Datum		d = values[k + 1];

		col->nulls[i] = isnull[k + 1] ? 1 : 0;
		if (col->derive.nsteps > 0 && !isnull[k + 1])
		{
			if (!SjDeriveTry(col, d, &col->ivals[i]))
			{
				/* kept with the value read, for SjThetaDerivedErrors */
				col->nulls[i] = SJ_DERIVE_FAILED;
				col->ivals[i] = col->typid == DATEOID ? DatumGetDateADT(d) : DatumGetInt64(d);
				col->any_error = true;
			}
			continue;
		}
		if (isnull[k + 1])
		{
			col->any_null = true;
			if (col->kind == SJ_KIND_F64)
				col->fvals[i] = 0;
			else if (col->kind == SJ_KIND_I64)
				col->ivals[i] = 0;
			else
				col->dvals[i] = (Datum) 0;
			continue;
		}
		switch (col->typid)
		{
			case INT2OID:
				col->ivals[i] = DatumGetInt16(d);
				break;
			case INT4OID:
			case DATEOID:
				col->ivals[i] = DatumGetInt32(d);
				break;
			case BOOLOID:
				col->ivals[i] = DatumGetBool(d) ? 1 : 0;
				break;
			case INT8OID:
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				col->ivals[i] = DatumGetInt64(d);
				break;
			case FLOAT4OID:
				col->fvals[i] = (double) DatumGetFloat4(d);
				break;
			case FLOAT8OID:
				col->fvals[i] = DatumGetFloat8(d);
				break;
			default:
				{
					/* text or numeric: a detoasted copy in the side's context */
					MemoryContext rowcxt = MemoryContextSwitchTo(GetMemoryChunkContext(col->nulls));
					struct varlena *v = PG_DETOAST_DATUM_COPY(d);

					MemoryContextSwitchTo(rowcxt);
					col->dvals[i] = PointerGetDatum(v);
				}
				break;
		}
	}
	side->n++;
}

/* The engines' entry points (sjrun.h). */
SJ_ENGINE_INDEX(SjThetaJoin, sj_theta_cpu);
SJ_ENGINE(SjGpuThetaJoin, sjgpu_theta);

/* SjOperatorMethods.begin: start the CPU or GPU engine. */
static SjStatus
SjThetaBegin(void *arg, bool gpu, const SjJoinOptions *options, SjRun *run,
			 char *errmsg)
{
	SjThetaJob *job = (SjThetaJob *) arg;

	run->op = SJ_OP_THETA;
	if (gpu)
	{
		SjGpuThetaJoin *h = NULL;
		SjStatus	s = sjgpu_theta_begin(&job->tables[0], &job->tables[1], &job->program,
										  SJ_THETA_AUTO, options, &h, errmsg);

		return SjRunStarted(run, h, &sjgpu_theta_engine, s);
	}
	else
	{
		SjThetaJoin *h = NULL;
		SjStatus	s = sj_theta_cpu_begin(&job->tables[0], &job->tables[1], &job->program,
										   SJ_THETA_AUTO, options, &h, errmsg);

		return SjRunStarted(run, h, &sj_theta_cpu_engine, s);
	}
}

/* SjOperatorMethods.emit: one tuple per pair, keys in place of row indices. */
static void
SjThetaEmit(void *arg, const SjPairBatch *batch)
{
	SjThetaJob *job = (SjThetaJob *) arg;

	SjEmitKeyPairs(job->store, job->desc, job->sides[0]->keys, job->sides[1]->keys,
				   false, batch);
}

/* EXPLAIN's strategy of a theta join: the planned one (SjThetaStrategy). */
static const char *
SjThetaStrategyName(bool gpu, int planned)
{
	static const char *const names[] = {"auto", "hash", "range", "nested loop"};

	return names[Max(0, Min(3, planned))];
}

/*
 * SjOperatorMethods.spread: a theta join may spread; the GPU engine keeps
 * all but a large nested loop on the first device (cuda/theta_gpu.cu).
 */
static bool
SjThetaSpread(void *arg)
{
	return true;
}

/* The theta join's methods (sjrun.h). */
const SjOperatorMethods sj_theta_methods = {
	"theta_join", SjThetaBegin, SjThetaEmit, NULL, SjThetaStrategyName, SjThetaSpread
};

/* Allocate a side's buffers for the columns the condition reads. */
static void
SjThetaSideAlloc(SjThetaSide *side)
{
	int			k,
				j;

	side->cap = 1024;
	if (!side->nokeys)
		side->keys = palloc_extended(side->cap * sizeof(int64), MCXT_ALLOC_HUGE);
	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];

		for (j = 0; j < col->derive.nsteps; j++)
		{
			FmgrInfo	flinfo;

			fmgr_info(col->derive.fn[j], &flinfo);
			col->derive_fn[j] = flinfo.fn_addr;
		}
		col->nulls = palloc_extended(side->cap, MCXT_ALLOC_HUGE);
		if (col->kind == SJ_KIND_F64)
			col->fvals = palloc_extended(side->cap * sizeof(double), MCXT_ALLOC_HUGE);
		else if (col->kind == SJ_KIND_I64)
			col->ivals = palloc_extended(side->cap * sizeof(int64), MCXT_ALLOC_HUGE);
		else
			col->dvals = palloc_extended(side->cap * sizeof(Datum), MCXT_ALLOC_HUGE);
	}
}

/* The columns to read of a side: the key, then the condition's columns. */
static void
SjThetaColumns(SjThetaSide *side, SjColumn *cols)
{
	int			k;

	cols[0] = side->key;
	for (k = 0; k < side->ncols; k++)
	{
		cols[k + 1].name = get_attname(side->relid, side->cols[k].attnum, false);
		cols[k + 1].attnum = side->cols[k].attnum;
		cols[k + 1].typid = side->cols[k].typid;
		cols[k + 1].typmod = -1;
	}
}

/* Merge the workers' parts of a side that was read, and check its size. */
static void
SjThetaSideFinish(SjThetaSide *side, SjParts *parts)
{
	double		t0 = sj_now_ms();

	SjThetaSideAddParts(side, parts);
	if (parts)
		elog(DEBUG2, "simjoin: merged %d parts of \"%s\" in %.1f ms",
			 parts->nparts, get_rel_name(side->relid), sj_now_ms() - t0);
	SjPartsRelease(parts);
	if (side->n > (size_t) UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("relation \"%s\" has too many rows for theta_join",
						get_rel_name(side->relid))));
}

/*
 * Scan both sides (together where parallel workers read them).  Returns
 * the parallel workers that read them.
 */
static int
SjThetaMarshal(SjThetaSide **sides)
{
	SjColumn	cols[2][SJ_THETA_MAX_COLS + 1];
	Oid			relids[2];
	int			ncols[2];
	const SjColumn *colp[2];
	const char *what[2] = {"", ""};
	SjParts    *parts[2];
	int			workers;
	int			s;

	for (s = 0; s < 2; s++)
	{
		SjThetaColumns(sides[s], cols[s]);
		SjThetaSideAlloc(sides[s]);
		relids[s] = sides[s]->relid;
		ncols[s] = sides[s]->ncols + 1;
		colp[s] = cols[s];
	}
	if (SjScanRelationPair(relids, ncols, colp, SJ_PART_THETA, (void **) sides, what, parts))
	{
		workers = Max(parts[0]->workers, parts[1]->workers);
		for (s = 0; s < 2; s++)
			SjThetaSideFinish(sides[s], parts[s]);
		return workers;
	}
	/* one side after the other, each merged and released before the next */
	workers = 0;
	for (s = 0; s < 2; s++)
	{
		parts[s] = SjScanRelation(relids[s], ncols[s], colp[s], SJ_PART_THETA,
								  sides[s], what[s]);
		workers = Max(workers, parts[s] ? parts[s]->workers : 0);
		SjThetaSideFinish(sides[s], parts[s]);
	}
	return workers;
}

/*
 * A side as a parallel worker sends it (SjThetaPartWrite): this header, the
 * keys, then each column's values (8 bytes each) and NULL flags.  Workers
 * build sides without text or numeric columns only (SjPartTypesOk).
 */
typedef struct SjThetaPartHeader
{
	uint64		n;
	int32		ncols;
	uint8		flags[SJ_THETA_MAX_COLS];	/* SJ_PART_ANY_* */
	int32		nokeys;			/* no keys follow the header */
} SjThetaPartHeader;

#define SJ_PART_ANY_NULL	1
#define SJ_PART_ANY_ERROR	2

/* Spec of a worker's side: how its columns are derived (parscan.c). */
void
SjThetaPartDescribe(void *side, SjPartSpec *spec)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	int			k;

	Assert(spec->ncols == sd->ncols + 1);
	for (k = 0; k < sd->ncols; k++)
		spec->derive[k + 1] = sd->cols[k].derive;
	spec->nokeys = sd->nokeys;
}

#define SJ_ALIGN8(x) (((x) + 7) & ~((Size) 7))

/* A parallel worker's side, for the columns of spec (cols[0] the key). */
void *
SjThetaPartBegin(const SjPartSpec *spec)
{
	SjThetaSide *side = palloc0(sizeof(SjThetaSide));
	int			k;

	side->relid = spec->relid;
	side->key.typid = spec->typids[0];
	side->key.name = pstrdup(NameStr(spec->keyname));
	side->ncols = spec->ncols - 1;
	side->nokeys = spec->nokeys;
	for (k = 0; k < side->ncols; k++)
	{
		side->cols[k].attnum = spec->attnums[k + 1];
		side->cols[k].typid = spec->typids[k + 1];
		side->cols[k].derive = spec->derive[k + 1];
		side->cols[k].valtype = spec->derive[k + 1].nsteps > 0 ?
			spec->derive[k + 1].restype : spec->typids[k + 1];
		side->cols[k].kind = SjTypeKind(spec->typids[k + 1]);
	}
	SjThetaSideAlloc(side);
	return side;
}

/* Row function of a side: values[0] the key, then the side's columns. */
void
SjThetaPartRow(void *arg, Datum *values, bool *isnull)
{
	SjThetaRow(arg, values, isnull);
}

/* Bytes of a worker's side in the part format. */
Size
SjThetaPartSize(void *side)
{
	SjThetaSide *sd = (SjThetaSide *) side;

	return sizeof(SjThetaPartHeader) + (sd->nokeys ? 0 : sd->n * sizeof(int64)) +
		sd->ncols * (sd->n * 8 + SJ_ALIGN8(sd->n));
}

/* Serialize a worker's side into dst (SjThetaPartSize bytes). */
void
SjThetaPartWrite(void *side, char *dst)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	SjThetaPartHeader *h = (SjThetaPartHeader *) dst;
	char	   *p = (char *) (h + 1);
	int			k;

	memset(h, 0, sizeof(*h));
	h->n = sd->n;
	h->ncols = sd->ncols;
	h->nokeys = sd->nokeys;
	if (!sd->nokeys)
	{
		memcpy(p, sd->keys, sd->n * sizeof(int64));
		p += sd->n * sizeof(int64);
	}
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		Assert(col->kind == SJ_KIND_I64 || col->kind == SJ_KIND_F64);
		h->flags[k] = (col->any_null ? SJ_PART_ANY_NULL : 0) |
			(col->any_error ? SJ_PART_ANY_ERROR : 0);
		memcpy(p, col->kind == SJ_KIND_F64 ? (void *) col->fvals : (void *) col->ivals,
			   sd->n * 8);
		p += sd->n * 8;
		memcpy(p, col->nulls, sd->n);
		p += SJ_ALIGN8(sd->n);
	}
}

/* The part format of SJ_PART_THETA sides (parscan.c). */
const SjPartOps sj_theta_part_ops = {SjThetaPartDescribe, SjThetaPartBegin, SjThetaPartRow, SjThetaPartSize, SjThetaPartWrite};

/* One participant's rows as the merge reads them. */
typedef struct SjThetaPiece
{
	size_t		n;
	size_t		offset;			/* of its first row in the merged side */
	const int64 *keys;
	const char *values[SJ_THETA_MAX_COLS];	/* 8 bytes a row */
	const uint8 *nulls[SJ_THETA_MAX_COLS];
} SjThetaPiece;

typedef struct SjThetaMerge
{
	SjThetaPiece *pieces;
	int			ncols;
	int64	   *keys;
	char	   *values[SJ_THETA_MAX_COLS];
	uint8	   *nulls[SJ_THETA_MAX_COLS];
} SjThetaMerge;

#define SJ_THETA_MERGE_BLOCK	262144	/* rows a merge task copies */

/* SjMergeFn: rows of one piece, every column. */
static void
SjThetaMergeRows(void *arg, int p, size_t first, size_t last)
{
	SjThetaMerge *m = (SjThetaMerge *) arg;
	const SjThetaPiece *pc = &m->pieces[p];
	size_t		len = last - first;
	int			k;

	if (m->keys)
		memcpy(m->keys + pc->offset + first, pc->keys + first, len * sizeof(int64));
	for (k = 0; k < m->ncols; k++)
	{
		memcpy(m->values[k] + (pc->offset + first) * 8, pc->values[k] + first * 8, len * 8);
		memcpy(m->nulls[k] + pc->offset + first, pc->nulls[k] + first, len);
	}
}

/*
 * Add to side the rows of parts that parallel workers built (NULL: none),
 * after its own.
 */
void
SjThetaSideAddParts(void *side, const SjParts *parts)
{
	SjThetaSide *sd = (SjThetaSide *) side;
	SjThetaMerge m;
	size_t		n = sd->n;
	int			p,
				k;

	if (parts == NULL || parts->nparts == 0)
		return;
	memset(&m, 0, sizeof(m));
	m.ncols = sd->ncols;
	m.pieces = palloc0((parts->nparts + 1) * sizeof(SjThetaPiece));
	m.pieces[0].n = sd->n;
	m.pieces[0].keys = sd->keys;
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		m.pieces[0].values[k] = col->kind == SJ_KIND_F64 ? (char *) col->fvals : (char *) col->ivals;
		m.pieces[0].nulls[k] = col->nulls;
	}
	for (p = 0; p < parts->nparts; p++)
	{
		const SjThetaPartHeader *h = (const SjThetaPartHeader *) parts->part[p];
		SjThetaPiece *pc = &m.pieces[p + 1];
		const char *ptr = (const char *) (h + 1);

		Assert(h->ncols == sd->ncols && h->nokeys == sd->nokeys);
		pc->n = h->n;
		pc->offset = n;
		if (!sd->nokeys)
		{
			pc->keys = (const int64 *) ptr;
			ptr += h->n * sizeof(int64);
		}
		for (k = 0; k < sd->ncols; k++)
		{
			pc->values[k] = ptr;
			ptr += h->n * 8;
			pc->nulls[k] = (const uint8 *) ptr;
			ptr += SJ_ALIGN8(h->n);
			if (h->flags[k] & SJ_PART_ANY_NULL)
				sd->cols[k].any_null = true;
			if (h->flags[k] & SJ_PART_ANY_ERROR)
				sd->cols[k].any_error = true;
		}
		n += h->n;
	}
	m.keys = sd->nokeys ? NULL : SjAllocLarge(n * sizeof(int64));
	for (k = 0; k < sd->ncols; k++)
	{
		m.values[k] = SjAllocLarge(n * 8);
		m.nulls[k] = SjAllocLarge(n);
	}
	SjMergePieces(parts->nparts + 1, m.pieces, sizeof(SjThetaPiece),
				  SJ_THETA_MERGE_BLOCK, SjThetaMergeRows, &m);

	if (sd->keys)
		pfree(sd->keys);
	sd->keys = m.keys;
	for (k = 0; k < sd->ncols; k++)
	{
		SjThetaCol *col = &sd->cols[k];

		pfree((void *) m.pieces[0].values[k]);
		pfree(col->nulls);
		if (col->kind == SJ_KIND_F64)
			col->fvals = (double *) m.values[k];
		else
			col->ivals = (int64 *) m.values[k];
		col->nulls = m.nulls[k];
	}
	sd->n = n;
	sd->cap = Max(n, 1);
	pfree(m.pieces);
}

/* The engine's view of one side. */
static void
SjThetaTableInit(SjThetaJob *job, int s)
{
	SjThetaSide *side = job->sides[s];
	int			k;

	for (k = 0; k < side->ncols; k++)
	{
		SjThetaCol *col = &side->cols[k];
		SjThetaColumn *ec = &job->engine_cols[s][k];

		ec->type = col->kind == SJ_KIND_F64 ? SJ_TF64 : SJ_TI64;
		ec->values = col->kind == SJ_KIND_F64 ? (const void *) col->fvals : (const void *) col->ivals;
		ec->nulls = col->any_null ? col->nulls : NULL;
	}
	job->tables[s].n = (uint32_t) side->n;
	job->tables[s].ncols = side->ncols;
	job->tables[s].cols = job->engine_cols[s];
}

/* The engines' view of the compiled program and sides, and their plan. */
static SjStatus
SjThetaPlanJob(SjThetaCompiler *comp, SjThetaJob *job, SjThetaPlan *plan,
			   char *errmsg)
{
	job->sides[0] = comp->sides[0];
	job->sides[1] = comp->sides[1];
	job->program.ninstr = comp->ninstr;
	job->program.instr = comp->instr;
	SjThetaTableInit(job, 0);
	SjThetaTableInit(job, 1);
	return sj_theta_plan(&job->program, &job->tables[0], &job->tables[1],
						 SJ_THETA_AUTO, plan, errmsg);
}

/*
 * Drop the rows set aside (aside, NULL: none) from a side; returns the
 * input row (key, or place) of each row kept.
 */
static int64 *
SjThetaSideCompact(SjThetaSide *side, const bool *aside)
{
	int64	   *map = palloc_extended(Max(side->n, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	size_t		i,
				m = 0;
	int			k;

	for (i = 0; i < side->n; i++)
	{
		if (aside && aside[i])
			continue;
		map[m] = side->nokeys ? (int64) i : side->keys[i];
		if (!side->nokeys)
			side->keys[m] = side->keys[i];
		for (k = 0; k < side->ncols; k++)
		{
			SjThetaCol *col = &side->cols[k];

			col->nulls[m] = col->nulls[i];
			if (col->kind == SJ_KIND_F64)
				col->fvals[m] = col->fvals[i];
			else if (col->kind == SJ_KIND_I64)
				col->ivals[m] = col->ivals[i];
			else
				col->dvals[m] = col->dvals[i];
		}
		m++;
	}
	side->n = m;
	return map;
}

/*
 * After both sides are read: check date/time ranges (setting the custom
 * scan's inexact rows aside, maps[s] then giving the input row of each row
 * the engines see), rank text and numeric values jointly, give the engines
 * their view of the data and plan the strategy.
 */
static void
SjThetaJobInit(SjThetaCompiler *comp, SjThetaJob *job, SjThetaPlan *plan,
			   bool **aside, int64 **maps)
{
	char		errmsg[SJ_ERRMSG_LEN] = "";
	SjStatus	status;
	int			s;

	SjThetaDerivedErrors(comp);
	SjThetaCheckTemporal(comp, aside);
	if (aside[0] || aside[1])
		for (s = 0; s < 2; s++)
			maps[s] = SjThetaSideCompact(comp->sides[s], aside[s]);
	SjRankAll(comp, SJ_KIND_TEXT);
	SjNumericCasts(comp);
	if (comp->numeric_arith)
		SjNumericFixAll(comp, true);
	else
		SjRankAll(comp, SJ_KIND_NUMERIC);
	status = SjThetaPlanJob(comp, job, plan, errmsg);
	SjReportStatus(status, errmsg, "theta_join");
	elog(DEBUG1, "simjoin: theta_join strategy %s (%d instructions)",
		 plan->description, comp->ninstr);
}

/* ---------------------------------------------------------------------
 * The custom scan's door: a condition already analysed by the planner,
 * whose Vars are varno 1 (left) or 2 (right) with varattno the 1-based
 * position of the value in the row the caller hands to SjThetaAddRow.
 * --------------------------------------------------------------------- */
struct SjThetaPrepared
{
	SjThetaSide sides[2];
	SjThetaCompiler comp;
	SjThetaJob	job;
	SjThetaPlan plan;
	bool	   *aside[2];		/* rows set aside by SjThetaCheckTemporal */
	int64	   *maps[2];		/* engine row -> input row, where any are */
};

/*
 * Can the engines evaluate cond?  Compiles it into a scratch context;
 * on refusal returns false with the reason in *why (when why is given).
 */
bool
SjThetaCompilable(Node *cond, int *strategy, char **why)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "simjoin theta check",
											  ALLOCSET_SMALL_SIZES);
	volatile bool ok = true;
	char		errmsg[SJ_ERRMSG_LEN] = "";

	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		SjThetaPrepared *tp = palloc0(sizeof(SjThetaPrepared));
		SjStatus	status;

		tp->comp.sides[0] = &tp->sides[0];
		tp->comp.sides[1] = &tp->sides[1];
		SjCompileCondition(&tp->comp, cond);
		/* numeric arithmetic: provably exact from the declared precisions */
		if (tp->comp.numeric_arith)
			SjNumericFixAll(&tp->comp, false);
		/* plan it as the engines would; no rows yet (n = 0): the strategy
		 * depends on the program */
		status = SjThetaPlanJob(&tp->comp, &tp->job, &tp->plan, errmsg);
		if (status != SJ_OK)
			SjReportStatus(status, errmsg, "theta_join");
		*strategy = (int) tp->plan.strategy;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (why)
			*why = edata->message;
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return ok;
}

/*
 * Compile cond and prepare both sides to receive rows; nokeys for a count,
 * whose sides keep no row numbers.
 */
SjThetaPrepared *
SjThetaPrepare(Node *cond, bool nokeys)
{
	SjThetaPrepared *tp = palloc0(sizeof(SjThetaPrepared));
	int			s;

	tp->comp.sides[0] = &tp->sides[0];
	tp->comp.sides[1] = &tp->sides[1];
	SjCompileCondition(&tp->comp, cond);
	for (s = 0; s < 2; s++)
	{
		tp->sides[s].key.typid = INT8OID;
		tp->sides[s].nokeys = nokeys;
		SjThetaSideAlloc(&tp->sides[s]);
	}
	return tp;
}

/* One row of a side: its key and all its values, by position. */
void
SjThetaAddRow(SjThetaPrepared *tp, int side, int64 key,
			  const Datum *values, const bool *isnull)
{
	SjThetaSide *sd = &tp->sides[side];
	Datum		vals[SJ_THETA_MAX_COLS + 1];
	bool		nulls[SJ_THETA_MAX_COLS + 1];
	int			k;

	vals[0] = Int64GetDatum(key);
	nulls[0] = false;
	for (k = 0; k < sd->ncols; k++)
	{
		vals[k + 1] = values[sd->cols[k].attnum - 1];
		nulls[k + 1] = isnull[sd->cols[k].attnum - 1];
	}
	SjThetaRow(sd, vals, nulls);
}

/*
 * Side s of a prepared condition, for a scan that feeds it directly: the
 * side (for SjThetaPartRow and SjThetaSideAddParts), and its columns as
 * positions in the caller's rows with their types, after a leading row
 * number (position 0, bigint).  *ncols counts that too.
 */
void *
SjThetaPreparedSide(SjThetaPrepared *tp, int side, int *ncols, int *positions,
					Oid *typids)
{
	SjThetaSide *sd = &tp->sides[side];
	int			k;

	positions[0] = 0;
	typids[0] = INT8OID;
	for (k = 0; k < sd->ncols; k++)
	{
		positions[k + 1] = sd->cols[k].attnum;
		typids[k + 1] = sd->cols[k].typid;
	}
	*ncols = sd->ncols + 1;
	return sd;
}

/* The keys of a side's rows (NULL when it keeps none), and how many. */
int64 *
SjThetaSideKeys(void *side, int64 *n)
{
	SjThetaSide *sd = (SjThetaSide *) side;

	*n = (int64) sd->n;
	return sd->keys;
}

/*
 * Whether every column of a side holds its own values, none ranked together
 * with the other side's (text and numeric are): only then is an index of
 * that side the same in every process that joins it with rows of its own.
 */
bool
SjThetaSideUnranked(SjThetaPrepared *tp, int side)
{
	SjThetaSide *sd = &tp->sides[side];
	int			k;

	for (k = 0; k < sd->ncols; k++)
		if ((sd->cols[k].kind != SJ_KIND_I64 && sd->cols[k].kind != SJ_KIND_F64) ||
			sd->cols[k].to_numeric)
			return false;
	return true;
}

/*
 * After SjThetaFinish: whether the CPU engine, asked to index the inner
 * (right) side, does (a hash or range plan on that side) rather than sort
 * the outer side or loop over both.  The same answer in every process.
 */
bool
SjThetaIndexesInner(SjThetaPrepared *tp)
{
	SjThetaJob *job = &tp->job;
	SjThetaPlan plan;
	char		errmsg[SJ_ERRMSG_LEN];

	if (sj_theta_plan_side(&job->program, &job->tables[0], &job->tables[1],
						   SJ_THETA_AUTO, 1, &plan, errmsg) != SJ_OK)
		return false;
	return plan.strategy != SJ_THETA_NESTED_LOOP && plan.probe_left;
}

/*
 * Does the condition do date/time arithmetic, whose rows SjThetaFinish may
 * find the engines cannot compute exactly?  The custom scan keeps its rows
 * then, to join those with PostgreSQL's operators.
 */
bool
SjThetaMayNeedRows(SjThetaPrepared *tp)
{
	return tp->comp.temporal_arith;
}

/*
 * Both sides are in: fill spec to run the join (emit left to the caller).
 * Rows whose values the engines cannot compute exactly (an infinite date
 * or timestamp under arithmetic) are set aside: SjThetaAside tells which.
 */
void
SjThetaFinish(SjThetaPrepared *tp, SjRunSpec *spec, int64 *nleft,
			  int64 *nright, char *strategy, int len)
{
	SjThetaJobInit(&tp->comp, &tp->job, &tp->plan, tp->aside, tp->maps);
	memset(spec, 0, sizeof(*spec));
	spec->name = "theta_join";
	spec->ops = &sj_theta_methods;
	spec->arg = &tp->job;
	*nleft = tp->sides[0].n;
	*nright = tp->sides[1].n;
	strlcpy(strategy, tp->plan.description, len);
}

/*
 * After SjThetaFinish: the rows of side s set aside, by input row (NULL:
 * none), for the caller to join with PostgreSQL's operators against every
 * row of the other side; *map (NULL: the same) gives the input row of each
 * row the engines see.
 */
const bool *
SjThetaAside(SjThetaPrepared *tp, int side, const int64 **map)
{
	*map = tp->maps[side];
	return tp->aside[side];
}

/* The body shared by theta_join and theta_join_count. */
static int64
SjThetaJoinRun(Oid left_relid, text *left_key, Oid right_relid, text *right_key,
			   text *condition, Tuplestorestate *store, TupleDesc desc)
{
	SjThetaSide *sides[2];
	SjThetaCompiler comp;
	SjThetaJob	job;
	SjRunSpec	spec;
	SjStats		stats;
	Relation	lrel,
				rrel;
	Node	   *expr;
	double		t0 = sj_now_ms();
	int			s;
	SjThetaPlan plan;

	SjStatsStart(&stats, store ? "theta_join" : "theta_join_count");
	SjStartDevice();
	for (s = 0; s < 2; s++)
	{
		Oid			relid = s == 0 ? left_relid : right_relid;

		sides[s] = palloc0(sizeof(SjThetaSide));
		sides[s]->relid = relid;
		sides[s]->nokeys = store == NULL;
		SjCheckRelation(relid);
		SjResolveColumn(relid, text_to_cstring(s == 0 ? left_key : right_key), &sides[s]->key);
		SjCheckKeyColumn(relid, &sides[s]->key);
	}

	/* analyse and compile the condition */
	lrel = relation_open(left_relid, AccessShareLock);
	rrel = relation_open(right_relid, AccessShareLock);
	expr = SjThetaAnalyze(lrel, rrel, text_to_cstring(condition));
	relation_close(lrel, NoLock);
	relation_close(rrel, NoLock);
	memset(&comp, 0, sizeof(comp));
	comp.sides[0] = sides[0];
	comp.sides[1] = sides[1];
	SjCompileCondition(&comp, expr);

	/* read both sides; rank text and numeric values jointly */
	stats.scan_workers = SjThetaMarshal(sides);
	memset(&job, 0, sizeof(job));
	job.store = store;
	job.desc = desc;
	{
		bool	   *aside[2] = {NULL, NULL};	/* only the custom scan's */
		int64	   *maps[2] = {NULL, NULL};

		SjThetaJobInit(&comp, &job, &plan, aside, maps);
	}

	stats.left_rows = sides[0]->n;
	stats.right_rows = sides[1]->n;
	stats.scan_ms = sj_now_ms() - t0;

	memset(&spec, 0, sizeof(spec));
	spec.name = store ? "theta_join" : "theta_join_count";
	spec.ops = &sj_theta_methods;
	spec.arg = &job;
	spec.store = store;
	return SjJoinAndReport(&spec, sides[0]->n == 0 || sides[1]->n == 0,
						   &stats, t0);
}

PG_FUNCTION_INFO_V1(theta_join);

/* theta_join(left_table, left_key, right_table, right_key, condition) */
Datum
theta_join(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	SjThetaJoinRun(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_GETARG_OID(2),
				   PG_GETARG_TEXT_PP(3), PG_GETARG_TEXT_PP(4),
				   rsinfo->setResult, rsinfo->setDesc);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(theta_join_count);

/* theta_join_count(left_table, left_key, right_table, right_key, condition) */
Datum
theta_join_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(SjThetaJoinRun(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1),
								   PG_GETARG_OID(2), PG_GETARG_TEXT_PP(3),
								   PG_GETARG_TEXT_PP(4), NULL, NULL));
}
