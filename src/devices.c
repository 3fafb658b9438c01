/*
 * devices.c
 *		Which GPUs a join runs on: the simjoin.devices setting, and the load
 *		of each device across sessions.
 *
 * simjoin.devices is "all" (every device found) or a list of device
 * numbers.  A join takes the least loaded device of the list, and spreads
 * over every device of it where the operator judges the join large enough
 * (its spread(): every operator's GPU engine can spread); a parallel
 * worker, which runs only its part of a join, takes the one least loaded.
 * A number may repeat ('0,0'): two shares of one device, which runs the
 * multi-device path on a one-GPU machine (for testing).
 *
 * The load is a small counter per device in shared memory (joins running
 * there now, and the ends of joins still freeing its memory: the drain
 * hooks, which the GPU engine calls from the thread that frees it; a join
 * about to begin there waits for those), present when simjoin is in
 * shared_preload_libraries; without it each process chooses by its
 * process id.  A process counts what it holds (sj_held) and gives all of
 * it back at exit, so a counter never leaks past its process, even after
 * a FATAL; a run gives its devices back when it ends, normally or through
 * its memory context's reset callback after an ERROR (SjRunCallback).
 */
#include "postgres.h"

#include <ctype.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "devices.h"
#include "simjoin.h"
#include "sjgpu.h"

/* The parsed setting: n == 0 means every device found. */
typedef struct SjDeviceList
{
	int			n;
	int			ordinals[SJ_MAX_DEVICES];
} SjDeviceList;

/*
 * Joins running on each device now, over all processes; and the ends of
 * joins still freeing their memory there (the drain hooks).
 */
typedef struct SjDeviceLoad
{
	pg_atomic_uint32 joins[SJ_MAX_DEVICES];
	pg_atomic_uint32 draining[SJ_MAX_DEVICES];
} SjDeviceLoad;

char	   *sj_devices_string = NULL;
static SjDeviceList sj_devices_list;
static SjDeviceLoad *sj_load = NULL;
static int	sj_held[SJ_MAX_DEVICES];	/* this process's share of sj_load */
static bool sj_exit_registered = false;

static shmem_request_hook_type sj_prev_shmem_request = NULL;
static shmem_startup_hook_type sj_prev_shmem_startup = NULL;

/* Parse "all" or "0, 1,1"; false with a detail on a bad list. */
static bool
SjDevicesParse(const char *s, SjDeviceList *out)
{
	const char *p = s;

	memset(out, 0, sizeof(*out));
	while (isspace((unsigned char) *p))
		p++;
	if (*p == '\0' || pg_strncasecmp(p, "all", 3) == 0)
	{
		if (*p != '\0')
			p += 3;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			return true;
		GUC_check_errdetail("Use \"all\" or a list of device numbers such as \"0,1\".");
		return false;
	}
	for (;;)
	{
		char	   *end;
		long		v;

		while (isspace((unsigned char) *p))
			p++;
		if (!isdigit((unsigned char) *p))
		{
			GUC_check_errdetail("Use \"all\" or a list of device numbers such as \"0,1\".");
			return false;
		}
		v = strtol(p, &end, 10);
		if (v < 0 || v >= SJ_MAX_DEVICES)
		{
			GUC_check_errdetail("Device numbers go from 0 to %d.", SJ_MAX_DEVICES - 1);
			return false;
		}
		if (out->n >= SJ_MAX_DEVICES)
		{
			GUC_check_errdetail("At most %d entries are allowed.", SJ_MAX_DEVICES);
			return false;
		}
		out->ordinals[out->n++] = (int) v;
		p = end;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			return true;
		if (*p != ',')
		{
			GUC_check_errdetail("Use \"all\" or a list of device numbers such as \"0,1\".");
			return false;
		}
		p++;
	}
}

/* GUC check hook of simjoin.devices: parse into extra. */
static bool
SjDevicesCheck(char **newval, void **extra, GucSource source)
{
	SjDeviceList list;
	SjDeviceList *copy;

	if (!SjDevicesParse(*newval ? *newval : "", &list))
		return false;
	copy = (SjDeviceList *) malloc(sizeof(SjDeviceList));
	if (copy == NULL)
		return false;
	*copy = list;
	*extra = copy;
	return true;
}

/* GUC assign hook of simjoin.devices. */
static void
SjDevicesAssign(const char *newval, void *extra)
{
	if (extra)
		sj_devices_list = *(SjDeviceList *) extra;
	else
		memset(&sj_devices_list, 0, sizeof(sj_devices_list));
}

/* Ask for the load counters' shared memory (preloaded only). */
static void
SjDevicesShmemRequest(void)
{
	if (sj_prev_shmem_request)
		sj_prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SjDeviceLoad)));
}

/* Create or attach to the load counters. */
static void
SjDevicesShmemStartup(void)
{
	bool		found;

	if (sj_prev_shmem_startup)
		sj_prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sj_load = ShmemInitStruct("simjoin device load", sizeof(SjDeviceLoad), &found);
	if (!found)
		for (int i = 0; i < SJ_MAX_DEVICES; i++)
		{
			pg_atomic_init_u32(&sj_load->joins[i], 0);
			pg_atomic_init_u32(&sj_load->draining[i], 0);
		}
	LWLockRelease(AddinShmemInitLock);
}

/* Define simjoin.devices and, when preloaded, the load counters. */
void
SjDevicesInit(void)
{
	DefineCustomStringVariable("simjoin.devices",
							   "GPUs a join may use.",
							   "all: every device found; else a list of device "
							   "numbers such as 0,1. A join takes the least loaded; "
							   "a large one spreads over all of them. A number may "
							   "repeat (for testing).",
							   &sj_devices_string, "all",
							   PGC_USERSET, GUC_LIST_INPUT,
							   SjDevicesCheck, SjDevicesAssign, NULL);
	if (process_shared_preload_libraries_in_progress)
	{
		sj_prev_shmem_request = shmem_request_hook;
		shmem_request_hook = SjDevicesShmemRequest;
		sj_prev_shmem_startup = shmem_startup_hook;
		shmem_startup_hook = SjDevicesShmemStartup;
	}
}

/*
 * Drain hooks (sjgpu_set_drain_hooks): a join's end that frees its device
 * memory off the caller's path counts as a load there until it has, and
 * a join about to begin there waits for it (SjDevicesAwaitDrains).  Run on
 * the engine's threads: atomics only.  SjDevicesAtExit closes them before
 * the process leaves shared memory: every end counted has run by then, and
 * a join ended later (an abort's, after this callback) is not counted.
 */
static void
SjDrainBegin(int ordinal)
{
	if (sj_load && ordinal >= 0 && ordinal < SJ_MAX_DEVICES)
		pg_atomic_fetch_add_u32(&sj_load->draining[ordinal], 1);
}

static void
SjDrainEnd(int ordinal)
{
	if (sj_load && ordinal >= 0 && ordinal < SJ_MAX_DEVICES)
		pg_atomic_fetch_sub_u32(&sj_load->draining[ordinal], 1);
}

/*
 * A join sizes its device memory to what is free there when it begins:
 * wait until no ended join, of any process, still frees memory on the
 * hold's devices (15-20 ms for a 1 M x 384-D eps join; given up after a
 * quarter of a second, the join then sizing itself to what is free).
 */
static void
SjDevicesAwaitDrains(const SjDeviceHold *hold)
{
	if (!sj_load)
		return;
	for (int waited = 0; waited < 250; waited++)
	{
		bool		busy = false;

		for (int i = 0; i < hold->n; i++)
			if (pg_atomic_read_u32(&sj_load->draining[hold->ordinals[i]]) > 0)
				busy = true;
		if (!busy)
			return;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(1000L);
	}
}

/* At exit: the joins' ends counted done, give back whatever this process still holds. */
static void
SjDevicesAtExit(int code, Datum arg)
{
	sjgpu_close_drains();
	for (int i = 0; i < SJ_MAX_DEVICES; i++)
	{
		if (sj_load && sj_held[i] > 0)
			pg_atomic_fetch_sub_u32(&sj_load->joins[i], (uint32) sj_held[i]);
		sj_held[i] = 0;
	}
}

/*
 * The setting's devices: the list, or every device found (count them);
 * errors for a device that does not exist.  Returns the number of entries.
 */
static int
SjDevicesResolve(int *ordinals)
{
	char		engmsg[SJ_ERRMSG_LEN] = "";
	int			found = 0;
	SjStatus	status = sjgpu_device_count(&found, engmsg);

	SjReportStatus(status, engmsg, "simjoin.devices");
	if (sj_devices_list.n == 0)
	{
		found = Min(found, SJ_MAX_DEVICES);
		for (int i = 0; i < found; i++)
			ordinals[i] = i;
		return found;
	}
	for (int i = 0; i < sj_devices_list.n; i++)
	{
		if (sj_devices_list.ordinals[i] >= found)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simjoin.devices names GPU %d, but %d %s found",
							sj_devices_list.ordinals[i], found,
							found == 1 ? "was" : "were"),
					 errhint("SELECT * FROM simjoin_devices() lists them.")));
		ordinals[i] = sj_devices_list.ordinals[i];
	}
	return sj_devices_list.n;
}

/* The load of a device now (0 without shared memory). */
static uint32
SjDeviceLoadOf(int ordinal)
{
	return sj_load ? pg_atomic_read_u32(&sj_load->joins[ordinal]) +
		pg_atomic_read_u32(&sj_load->draining[ordinal]) : 0;
}

/* Of the entries, the least loaded device; ties by process id. */
static int
SjDevicesLeastLoaded(const int *ordinals, int n)
{
	int			best = ordinals[MyProcPid % n];

	if (sj_load == NULL)
		return best;
	for (int k = 0; k < n; k++)
	{
		int			ord = ordinals[(MyProcPid + k) % n];

		if (SjDeviceLoadOf(ord) < SjDeviceLoadOf(best))
			best = ord;
	}
	return best;
}

/*
 * Choose the devices of a GPU join and count them as loaded: every entry
 * of simjoin.devices, the least loaded first, for a join that may spread
 * (spread(job) true; asked only where several devices are listed, as the
 * engine may read the data to tell); else (and in a parallel worker) the
 * least loaded one.  Sets options->gpu_device (and gpu_devices, pointing
 * into hold, when several): a join the engine keeps on one device runs on
 * the first.
 */
void
SjDevicesAcquire(SjJoinOptions *options, SjDeviceHold *hold,
				 bool (*spread) (void *job), void *job)
{
	int			ordinals[SJ_MAX_DEVICES];
	int			n = SjDevicesResolve(ordinals);

	memset(hold, 0, sizeof(*hold));
	if (n <= 0 || n > SJ_MAX_DEVICES)
		return;					/* the engine reports no device */
	if (!sj_exit_registered)
	{
		before_shmem_exit(SjDevicesAtExit, (Datum) 0);
		sjgpu_set_drain_hooks(SjDrainBegin, SjDrainEnd);
		sj_exit_registered = true;
	}
	if (n == 1 || IsParallelWorker() || spread == NULL || !spread(job))
	{
		hold->n = 1;
		hold->ordinals[0] = SjDevicesLeastLoaded(ordinals, n);
	}
	else
	{
		int			first = SjDevicesLeastLoaded(ordinals, n),
					k = 0;
		bool		moved = false;

		/* the list, its least loaded entry moved to the front */
		hold->n = n;
		hold->ordinals[k++] = first;
		for (int i = 0; i < n; i++)
		{
			if (!moved && ordinals[i] == first)
			{
				moved = true;
				continue;
			}
			hold->ordinals[k++] = ordinals[i];
		}
	}
	SjDevicesAwaitDrains(hold);	/* before it counts: may be cancelled */
	for (int i = 0; i < hold->n; i++)
	{
		if (sj_load)
			pg_atomic_fetch_add_u32(&sj_load->joins[hold->ordinals[i]], 1);
		sj_held[hold->ordinals[i]]++;
	}
	options->gpu_device = hold->ordinals[0];
	options->gpu_ndevices = hold->n > 1 ? hold->n : 0;
	options->gpu_devices = hold->n > 1 ? hold->ordinals : NULL;
	options->gpu_spread_judged = hold->n > 1;	/* spread(job) said yes */
}

/* Give back the devices of a hold (idempotent). */
void
SjDevicesRelease(SjDeviceHold *hold)
{
	for (int i = 0; i < hold->n; i++)
	{
		int			ord = hold->ordinals[i];

		if (sj_held[ord] <= 0)
			continue;			/* already given back at exit */
		sj_held[ord]--;
		if (sj_load)
			pg_atomic_fetch_sub_u32(&sj_load->joins[ord], 1);
	}
	hold->n = 0;
}

/*
 * Start the devices a join will likely use (SjStartDevice): every one of
 * the list (all found for "all"); in a parallel worker the one least
 * loaded now.
 */
void
SjDevicesStart(void)
{
	int			ordinals[SJ_MAX_DEVICES];
	int			n;
	int			one;
	char		engmsg[SJ_ERRMSG_LEN] = "";

	if (!IsParallelWorker())
	{
		if (sj_devices_list.n == 0)
			sjgpu_start_devices(NULL, 0);	/* every device, counted there */
		else
			sjgpu_start_devices(sj_devices_list.ordinals, sj_devices_list.n);
		return;
	}
	if (sj_devices_list.n > 0)
	{
		n = sj_devices_list.n;
		memcpy(ordinals, sj_devices_list.ordinals, n * sizeof(int));
	}
	else
	{
		if (sjgpu_device_count(&n, engmsg) != SJ_OK || n == 0)
			return;
		n = Min(n, SJ_MAX_DEVICES);
		for (int i = 0; i < n; i++)
			ordinals[i] = i;
	}
	one = SjDevicesLeastLoaded(ordinals, n);
	sjgpu_start_devices(&one, 1);
}

/* "gpu0" or "gpu0, gpu1": a hold's devices, for statistics. */
void
SjDevicesDescribe(const SjDeviceHold *hold, char *buf, size_t len)
{
	size_t		used = 0;

	buf[0] = '\0';
	for (int i = 0; i < hold->n && used < len; i++)
	{
		int			w = snprintf(buf + used, len - used, "%sgpu%d", i ? ", " : "",
								 hold->ordinals[i]);

		used += w > 0 ? (size_t) w : 0;
	}
}
