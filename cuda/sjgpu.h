/*
 * sjgpu.h
 *		The only door into simjoin's GPU engine.
 *
 * C99, no CUDA or PostgreSQL types: opaque handles, status codes (SjStatus
 * from src/engine/sjengine.h) and flat arrays.  Every entry point catches
 * everything and returns a status with a message in errmsg (SJ_ERRMSG_LEN
 * bytes).  CUDA is initialised lazily by the first call that needs it, in the
 * calling process.
 *
 * Device memory belongs to the join handle that allocated it and is released
 * by the matching *_end, on every path, including after the caller's own
 * error (the adapter calls *_end from a memory-context reset callback).
 *
 * Builds without the CUDA toolkit link cuda/sjgpu_none.c instead, whose
 * every entry point reports SJ_ERR_NO_DEVICE.
 */
#ifndef SJGPU_H
#define SJGPU_H

#include "sjengine.h"
#include "sjtheta.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct SjGpuDeviceInfo
{
	int			ordinal;
	char		name[256];
	uint64_t	total_memory;	/* bytes */
	uint64_t	free_memory;	/* bytes */
	int			cc_major;		/* compute capability */
	int			cc_minor;
} SjGpuDeviceInfo;

/* 1 when this build contains the GPU engine, 0 for a CPU-only build. */
extern int	sjgpu_compiled(void);

/*
 * Number of usable devices (0 with no driver or no device: that is SJ_OK).
 * Initialises CUDA on first use.
 */
extern SjStatus sjgpu_device_count(int *count, char *errmsg);
extern SjStatus sjgpu_device_info(int ordinal, SjGpuDeviceInfo *info,
								  char *errmsg);

/*
 * Begin creating the process's context on device `ordinal` on a thread of
 * its own, so that it overlaps the caller's reading of its inputs; the
 * first join waits for it.  Returns at once; does nothing after the first
 * call in a process, or without a device.  sjgpu_start_device_wait waits
 * for that thread (before the process exits).
 */
extern void sjgpu_start_device(int ordinal);
extern void sjgpu_start_device_wait(void);

/*
 * sjgpu_start_device for several devices (a repeated ordinal once); NULL:
 * every device found.
 */
extern void sjgpu_start_devices(const int *ordinals, int n);

/*
 * An eps join's end (its device memory freed) runs off the caller's path,
 * on a thread of its own: begin(device) is called as it is handed off and
 * end(device) once its memory is freed, from that thread (plain atomic
 * counters only: no PostgreSQL call), so that a device counts as loaded
 * until then.  sjgpu_close_drains waits for every end handed off so far,
 * joins their threads, and stops the hooks' calls for ends handed off
 * later (before the process leaves the counters' shared memory).
 */
extern void sjgpu_set_drain_hooks(void (*begin) (int device), void (*end) (int device));
extern void sjgpu_close_drains(void);

/*
 * eps_join on the device: the same contract as sj_eps_cpu_* (sjengine.h),
 * the same pairs and bit-identical distances.  With options->gpu_ndevices
 * > 1 the join is spread over options->gpu_devices (cuda/sjgpu_multi.cuh);
 * pairs may then come in another order, and the memory limit is per device.  options->gpu_memory_limit
 * bounds the device memory the join holds; work beyond it is batched, and
 * SJ_ERR_DEVICE_NOMEM is returned only when even the smallest batch does
 * not fit.
 */
typedef struct SjGpuEpsJoin SjGpuEpsJoin;

extern SjStatus sjgpu_eps_begin(const SjVectors *left, const SjVectors *right,
								double eps, const SjJoinOptions *options,
								SjGpuEpsJoin **join, char *errmsg);
extern SjStatus sjgpu_eps_next(SjGpuEpsJoin *join, SjPairBatch *batch,
							   int *done, char *errmsg);
extern void sjgpu_eps_timings(const SjGpuEpsJoin *join, SjTimings *timings);
extern void sjgpu_eps_end(SjGpuEpsJoin *join);

/*
 * Is an eps join large enough to spread over several devices (every device
 * prepares the whole join and they share its segments)?  1: yes; 0: it
 * runs on the first device of a list (a join the grid would serve, judged
 * from a sample of the build side's rows, included).  right NULL: a
 * self-join.
 */
extern int	sjgpu_eps_spreads(const SjVectors *left, const SjVectors *right,
							  double eps, int metric);

/*
 * jaccard_join on the device: contract of sj_jaccard_cpu_* (sjengine.h);
 * several devices as for sjgpu_eps_begin.
 */
typedef struct SjGpuJaccardJoin SjGpuJaccardJoin;

extern SjStatus sjgpu_jaccard_begin(const SjSets *left, const SjSets *right,
									double threshold,
									const SjJoinOptions *options,
									SjGpuJaccardJoin **join, char *errmsg);
extern SjStatus sjgpu_jaccard_next(SjGpuJaccardJoin *join, SjPairBatch *batch,
								   int *done, char *errmsg);
extern void sjgpu_jaccard_timings(const SjGpuJaccardJoin *join,
								  SjTimings *timings);
extern void sjgpu_jaccard_end(SjGpuJaccardJoin *join);

/* sjgpu_eps_spreads for a Jaccard join (right NULL: a self-join). */
extern int	sjgpu_jaccard_spreads(const SjSets *left, const SjSets *right);

/* theta_join on the device: contract of sj_theta_cpu_* (sjtheta.h). */
typedef struct SjGpuThetaJoin SjGpuThetaJoin;

extern SjStatus sjgpu_theta_begin(const SjThetaTable *left,
								  const SjThetaTable *right,
								  const SjThetaProgram *program,
								  SjThetaStrategy strategy,
								  const SjJoinOptions *options,
								  SjGpuThetaJoin **join, char *errmsg);
extern SjStatus sjgpu_theta_next(SjGpuThetaJoin *join, SjPairBatch *batch,
								 int *done, char *errmsg);
extern void sjgpu_theta_timings(const SjGpuThetaJoin *join,
								SjTimings *timings);
extern SjThetaDataError sjgpu_theta_data_error(const SjGpuThetaJoin *join);
extern void sjgpu_theta_end(SjGpuThetaJoin *join);

#ifdef __cplusplus
}
#endif

#endif							/* SJGPU_H */
