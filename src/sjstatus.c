/*
 * sjstatus.c
 *		The one mapping from an engine's status to an ERROR with a specific
 *		SQLSTATE; below the run loop and the device choice, which both call it.
 */
#include "postgres.h"

#include "simjoin.h"

/*
 * Report a failed engine call as an ERROR with a specific SQLSTATE.
 * "what" names the operation ("eps_join on the GPU").
 */
void
SjReportStatus(SjStatus status, const char *engmsg, const char *what)
{
	const char *msg = engmsg && engmsg[0] ? engmsg : "no detail";

	switch (status)
	{
		case SJ_OK:
			return;
		case SJ_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory in %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_DEVICE_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory in %s", what),
					 errdetail("%s", msg),
					 errhint("Lower simjoin.gpu_memory_limit, free GPU memory, "
							 "or set simjoin.device = auto to fall back to the CPU.")));
			break;
		case SJ_ERR_NO_DEVICE:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no usable GPU for %s", what),
					 errdetail("%s", msg),
					 errhint("Set simjoin.device = auto or cpu to use the CPU engine.")));
			break;
		case SJ_ERR_DEVICE:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU error in %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_TOO_LARGE:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("input too large for %s", what),
					 errdetail("%s", msg)));
			break;
		case SJ_ERR_DATA:
			/* the engines report PostgreSQL's own message for the condition */
			ereport(ERROR,
					(errcode(strstr(msg, "division by zero") ?
							 ERRCODE_DIVISION_BY_ZERO : ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("%s", msg)));
			break;
		case SJ_ERR_INVALID:
		case SJ_ERR_INTERNAL:
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("internal error in %s", what),
					 errdetail("%s (status %d)", msg, (int) status)));
			break;
	}
}
