/*
 * simjoin.h
 *		What every PostgreSQL-side (adapter) file shares: the settings, the
 *		operators, the module's registration of the custom scan.
 *
 * The adapter scans relations (marshal.h), marshals join columns into the
 * engines' flat inputs (sjengine.h), runs the CPU or GPU engine through one
 * iterator (sjrun.h), and turns pair batches into tuples; each operator has
 * its own header (eps_join.h, postgis.h, jaccard_join.h, theta_join.h), and
 * the custom scan's files share customscan.h.
 */
#ifndef SIMJOIN_H
#define SIMJOIN_H

#include "postgres.h"

#include "access/attnum.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "nodes/bitmapset.h"
#include "nodes/nodes.h"
#include "storage/block.h"
#include "utils/array.h"
#include "utils/palloc.h"

#include "sjengine.h"

/* simjoin.device */
typedef enum SjDeviceSetting
{
	SJ_DEVICE_AUTO,
	SJ_DEVICE_GPU,
	SJ_DEVICE_CPU
} SjDeviceSetting;

/* settings (simjoin.c) */
extern int	sj_device;
extern int	sj_gpu_memory_limit_mb;
extern int	sj_cpu_threads;
extern bool sj_enable_customscan;
extern bool sj_enable_shared_index;
extern bool sj_debug_row_pieces;
extern bool sj_debug_detoast_each;

/* Which operator an SjRun runs. */
typedef enum SjOperator
{
	SJ_OP_EPS,
	SJ_OP_JACCARD,
	SJ_OP_THETA
} SjOperator;

/* cs_planner.c: the Custom Scan node (its files share customscan.h) */
extern void SjCustomScanInit(void);

/* sjstatus.c: an engine status as an ERROR with a specific SQLSTATE */
extern void SjReportStatus(SjStatus status, const char *errmsg,
						   const char *what);

#endif							/* SIMJOIN_H */
