/*
 * sjgpu_none.c
 *		The GPU engine's door in a CPU-only build (no CUDA toolkit found).
 *
 * It reports that no device is usable (simjoin_devices() returns no rows)
 * and refuses every GPU join with SJ_ERR_NO_DEVICE, so that
 * simjoin.device = auto uses the CPU engine and simjoin.device = gpu errors.
 */
#include <stdio.h>

#include "sjgpu.h"

#define SJGPU_NONE_MSG "simjoin was built without CUDA support"

/* Write the standard refusal. */
static SjStatus
sjgpu_none(char *errmsg)
{
	if (errmsg)
		snprintf(errmsg, SJ_ERRMSG_LEN, "%s", SJGPU_NONE_MSG);
	return SJ_ERR_NO_DEVICE;
}

int
sjgpu_compiled(void)
{
	return 0;
}

SjStatus
sjgpu_device_count(int *count, char *errmsg)
{
	*count = 0;
	return SJ_OK;
}

SjStatus
sjgpu_device_info(int ordinal, SjGpuDeviceInfo *info, char *errmsg)
{
	return sjgpu_none(errmsg);
}

void
sjgpu_start_device(int ordinal)
{
}

void
sjgpu_start_devices(const int *ordinals, int n)
{
}

void
sjgpu_start_device_wait(void)
{
}

void
sjgpu_set_drain_hooks(void (*begin) (int device), void (*end) (int device))
{
}

void
sjgpu_close_drains(void)
{
}

SjStatus
sjgpu_eps_begin(const SjVectors *left, const SjVectors *right, double eps,
				const SjJoinOptions *options, SjGpuEpsJoin **join, char *errmsg)
{
	*join = NULL;
	return sjgpu_none(errmsg);
}

SjStatus
sjgpu_eps_next(SjGpuEpsJoin *join, SjPairBatch *batch, int *done, char *errmsg)
{
	return sjgpu_none(errmsg);
}

void
sjgpu_eps_timings(const SjGpuEpsJoin *join, SjTimings *timings)
{
}

void
sjgpu_eps_end(SjGpuEpsJoin *join)
{
}

int
sjgpu_eps_spreads(const SjVectors *left, const SjVectors *right, double eps, int metric)
{
	return 0;
}

SjStatus
sjgpu_jaccard_begin(const SjSets *left, const SjSets *right, double threshold,
					const SjJoinOptions *options, SjGpuJaccardJoin **join,
					char *errmsg)
{
	*join = NULL;
	return sjgpu_none(errmsg);
}

SjStatus
sjgpu_jaccard_next(SjGpuJaccardJoin *join, SjPairBatch *batch, int *done,
				   char *errmsg)
{
	return sjgpu_none(errmsg);
}

void
sjgpu_jaccard_timings(const SjGpuJaccardJoin *join, SjTimings *timings)
{
}

void
sjgpu_jaccard_end(SjGpuJaccardJoin *join)
{
}

int
sjgpu_jaccard_spreads(const SjSets *left, const SjSets *right)
{
	return 0;
}

SjStatus
sjgpu_theta_begin(const SjThetaTable *left, const SjThetaTable *right,
				  const SjThetaProgram *program, SjThetaStrategy strategy,
				  const SjJoinOptions *options, SjGpuThetaJoin **join,
				  char *errmsg)
{
	*join = NULL;
	return sjgpu_none(errmsg);
}

SjStatus
sjgpu_theta_next(SjGpuThetaJoin *join, SjPairBatch *batch, int *done,
				 char *errmsg)
{
	return sjgpu_none(errmsg);
}

void
sjgpu_theta_timings(const SjGpuThetaJoin *join, SjTimings *timings)
{
}

SjThetaDataError
sjgpu_theta_data_error(const SjGpuThetaJoin *join)
{
	return SJ_THETA_OK;
}

void
sjgpu_theta_end(SjGpuThetaJoin *join)
{
}
