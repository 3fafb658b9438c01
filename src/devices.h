/*
 * devices.h
 *		The GPUs a join runs on: simjoin.devices, the least-loaded choice
 *		and the per-device load counters (devices.c).
 */
#ifndef SJ_DEVICES_H
#define SJ_DEVICES_H

#include "sjengine.h"

/* Most entries of simjoin.devices; device numbers are below it. */
#define SJ_MAX_DEVICES 64

/* The GPUs one run holds (counted as loaded until SjDevicesRelease). */
typedef struct SjDeviceHold
{
	int			n;
	int			ordinals[SJ_MAX_DEVICES];
} SjDeviceHold;

extern char *sj_devices_string;
extern void SjDevicesInit(void);
extern void SjDevicesAcquire(SjJoinOptions *options, SjDeviceHold *hold,
							 bool (*spread) (void *job), void *job);
extern void SjDevicesRelease(SjDeviceHold *hold);
extern void SjDevicesStart(void);
extern void SjDevicesDescribe(const SjDeviceHold *hold, char *buf, size_t len);

#endif							/* SJ_DEVICES_H */
