/*
 * eps_int.h
 *		Internal header of the CPU eps engine: the handle, the grid and the
 *		resumable tasks, shared by eps_grid.c (geometry and building one
 *		side), eps_probe.c (the task loop and its filters) and eps_cpu.c
 *		(entry points).  See the header of eps_cpu.c for the invariants.
 */
#ifndef EPS_INT_H
#define EPS_INT_H

#include <stdint.h>

#include "eps_cosine.h"
#include "sjengine.h"

#define EPS_MAX_K			6		/* grid dimensions at most */
#define EPS_MAX_RANGES		243		/* 3^(EPS_MAX_K - 1) candidate ranges */
#define EPS_TASK_POINTS		1024	/* probe points per task */
#define EPS_DEFAULT_BATCH	1048576 /* max_batch_pairs of 0 */
#define EPS_CALL_MS			100.0	/* work one next() aims at */
#define EPS_WORK_CHECK		32768	/* candidates between clock reads */
#define EPS_BLOCK_BYTES		131072	/* candidate coordinates in one block */
#define EPS_MAX_WINDOW		4096	/* tasks one next() runs at most */
#define EPS_ROW_CHUNK		65536	/* rows per parallel build task */

/* Grid geometry, shared by both sides of a two-table join. */
typedef struct EpsGridSpec
{
	int			k;				/* grid dimensions, 1..EPS_MAX_K */
	int			gdim[EPS_MAX_K];	/* source dimension; -1: one cell */
	double		lo[EPS_MAX_K];	/* grid origin */
	double		w[EPS_MAX_K];	/* cell width, > eps */
	uint64_t	ncells[EPS_MAX_K];	/* cells along the dimension */
	uint64_t	stride[EPS_MAX_K];	/* linearisation; last is 1 */
} EpsGridSpec;

/* One side, sorted by cell. */
typedef struct EpsGrid
{
	uint32_t	n;				/* points */
	uint32_t	ncell;			/* non-empty cells */
	uint32_t   *perm;			/* sorted position -> input row */
	double	   *pts;			/* n * dim, point-major, sorted */
	double	   *orig;			/* cosine: the original coordinates, as pts */
	double	   *norms;			/* cosine: |x|^2 of each point, sorted */
	uint64_t   *cellid;			/* ncell ascending linearised ids */
	uint32_t   *cellstart;		/* ncell + 1 point offsets */
} EpsGrid;

/* Candidate points [lo, hi) of the build side for one probe cell. */
typedef struct EpsRange
{
	uint32_t	lo;
	uint32_t	hi;
	int			after_probe;	/* self-join home row: start at probe + 1 */
} EpsRange;

/* Cursor states of a task. */
#define EPS_TASK_FRESH	0		/* not started */
#define EPS_TASK_EXACT	1		/* resume at (p0, r, b, p, q) */
#define EPS_TASK_DONE	2

/* A range of probe points and where its work stopped. */
typedef struct EpsTask
{
	uint32_t	lo;				/* probe positions [lo, hi) */
	uint32_t	hi;
	uint32_t	p0;				/* first probe position of the cell */
	uint32_t	r;				/* candidate range of that cell */
	uint32_t	b;				/* candidate block start */
	uint32_t	p;				/* probe position */
	uint32_t	q;				/* candidate position */
	int			state;
} EpsTask;

/* One task of the current window and its private output. */
typedef struct EpsSlot
{
	size_t		task;
	size_t		limit;			/* pairs it may emit in this call */
	size_t		n;				/* pairs emitted (or counted) */
	size_t		alloc;
	uint32_t   *left;
	uint32_t   *right;
	double	   *value;
	int			nomem;
	int			late;			/* stopped at the deadline */
} EpsSlot;

/* The filter of four candidates at a time (eps_sums4_body). */
typedef void (*EpsSums4Fn) (const double *x, const double *y, int dim,
							double fthr, double *sums);

struct SjEpsJoin
{
	int			dim;
	int			self;
	int			count_only;
	int			threads;
	double		eps;
	double		thr;			/* largest sum whose sqrt is <= eps; cosine:
								 * sj_eps_cos_threshold (+inf: no filter) */
	double		geps;			/* the radius the grid is built for */
	double		fthr;			/* eps_sums4's filter threshold */
	double		ithr;			/* a filter sum at most this surely joins */
	EpsSums4Fn	sums4;			/* eps_sums4 for this CPU */
	int			metric;			/* SjMetric */
	EpsCosSide	cos[2];			/* cosine: normalised build and left sides */
	uint32_t	block;			/* candidates per cache block */
	size_t		max_batch;
	EpsGridSpec spec;
	EpsGrid		build;			/* right side, or the one side */
	int			build_shared;	/* build's arrays lie in a shared index */
	EpsGrid		left;			/* two-table: the left side */
	const EpsGrid *probe;		/* &left, or &build for a self-join */
	EpsTask    *tasks;
	size_t		ntasks;
	size_t		first_open;		/* tasks before it are done */
	EpsSlot    *slots;			/* EPS_MAX_WINDOW */
	size_t		nslot;			/* slots in the current window */
	size_t		window;			/* tasks per call, adapted */
	double		deadline;
	uint32_t   *out_left;
	uint32_t   *out_right;
	double	   *out_value;
	size_t		out_alloc;
	int			finished;		/* no work left */
	int			said_done;		/* next has returned done */
	SjTimings	timings;
};

/*
 * A flattened grid of the right side (sj_eps_cpu_index_write): this header,
 * then the arrays at their offsets from its start, 8-byte aligned.  The
 * geometry travels with it: joins that probe it grid their left side alike.
 */
#define EPS_INDEX_MAGIC	UINT64_C(0x73696d6a65707331)	/* "simjeps1" */

typedef struct EpsIndexHeader
{
	uint64_t	magic;
	uint64_t	size;			/* bytes, header included */
	EpsGridSpec spec;
	double		eps;
	int32_t		dim;
	uint32_t	n;				/* rows of the right side */
	uint32_t	ncell;
	uint32_t	pad;
	uint64_t	off_perm;
	uint64_t	off_pts;
	uint64_t	off_cellid;
	uint64_t	off_cellstart;
} EpsIndexHeader;

/* Per-dimension bounds over both inputs. */
typedef struct EpsBounds
{
	const SjVectors *a;
	const SjVectors *b;			/* NULL for a self-join */
	double	   *mn;
	double	   *mx;
} EpsBounds;

/* eps_grid.c */
extern void eps_grid_free(EpsGrid *g);
extern void eps_bounds_task(void *arg, uint64_t k, int worker);
extern void eps_choose_spec(SjEpsJoin *j, const double *mn, const double *mx,
							double nprobe, double nbuild);
extern double eps_threshold(double eps);
extern SjStatus eps_grid_build(SjEpsJoin *j, const SjVectors *v, EpsGrid *g,
							   char *errmsg);

/* eps_probe.c */
extern double eps_filter_threshold(double thr, int dim);
extern double eps_inner_threshold(double thr, int dim);
extern EpsSums4Fn eps_sums4_choose(void);
extern void eps_slot_task(void *arg, uint64_t slot, int worker);

#endif							/* EPS_INT_H */
