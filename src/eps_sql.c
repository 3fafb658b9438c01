/*
 * eps_sql.c
 *		The SQL functions eps_join and eps_join_count: their arguments, and
 *		the body they run, over vectors (eps_join.c) or PostGIS points
 *		(postgis.c).
 *
 * They stand apart from eps_join.c because the join over points is built
 * on the join over vectors: this file calls both, neither calls it.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "eps_join.h"
#include "postgis.h"
#include "sjdist.h"
#include "sjrun.h"

/*
 * The metric argument of eps_join and eps_join_count (sjdist.h's SjMetric).
 */
static int
SjEpsMetric(text *metric)
{
	char	   *m = text_to_cstring(metric);

	if (strcmp(m, "l2") == 0)
		return SJ_METRIC_L2;
	if (strcmp(m, "cosine") == 0)
		return SJ_METRIC_COSINE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown eps_join metric \"%s\"", m),
			 errhint("The metric is 'l2' or 'cosine'.")));
	return SJ_METRIC_L2;		/* keep the compiler quiet */
}

/*
 * The body of the four functions: PostGIS points have their own
 * (postgis.c), vectors eps_join.c's.
 */
static int64
SjEpsFunctionRun(Oid left_relid, text *left_key, text *left_vec,
				 Oid right_relid, text *right_key, text *right_vec,
				 double eps, int metric, Tuplestorestate *store, TupleDesc desc)
{
	if (SjPointColumn(left_relid, left_vec))
	{
		if (metric != SJ_METRIC_L2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("eps_join over PostGIS points takes no metric but 'l2'"),
					 errhint("Points join by ST_DWithin's distance; omit the metric argument.")));
		return SjPointJoinRun(left_relid, left_key, left_vec, right_relid,
							  right_key, right_vec, eps, store, desc);
	}
	return SjEpsJoinRun(left_relid, left_key, left_vec, right_relid, right_key,
						right_vec, eps, metric, store, desc);
}

/* The metric argument (the last) of one of the four functions. */
#define SJ_EPS_METRIC_ARG(self) SjEpsMetric(PG_GETARG_TEXT_PP((self) ? 4 : 7))

PG_FUNCTION_INFO_V1(eps_join);

/* eps_join(left_table, left_key, left_col, right_table, right_key, right_col, param, metric) */
Datum
eps_join(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsFunctionRun, false, false,
						  SJ_EPS_METRIC_ARG(false));
}

PG_FUNCTION_INFO_V1(eps_join_self);

/* eps_join(tbl, key, col, param, metric) */
Datum
eps_join_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsFunctionRun, true, false,
						  SJ_EPS_METRIC_ARG(true));
}

PG_FUNCTION_INFO_V1(eps_join_count);

/* eps_join_count(left_table, left_key, left_col, right_table, right_key, right_col, param, metric) */
Datum
eps_join_count(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsFunctionRun, false, true,
						  SJ_EPS_METRIC_ARG(false));
}

PG_FUNCTION_INFO_V1(eps_join_count_self);

/* eps_join_count(tbl, key, col, param, metric) */
Datum
eps_join_count_self(PG_FUNCTION_ARGS)
{
	return SjPairJoinCall(fcinfo, SjEpsFunctionRun, true, true,
						  SJ_EPS_METRIC_ARG(true));
}
