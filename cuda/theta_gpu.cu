/*
 * theta_gpu.cu
 *		theta_join on the GPU: hash join, sort + binary-search range join and
 *		the tiled sliding-window nested loop, with the condition program
 *		interpreted on the device.
 *
 * The plan (strategy, keys, range terms, exactness) comes from theta_prog.c,
 * shared with the CPU engine, so both engines choose the same strategy and
 * the same candidate pairs; the device interpreter (d_run) has the CPU
 * interpreter's semantics (sjtheta.h): values, NULL or an error state per
 * slot, errors propagating left to right, AND/OR discarding a right error
 * after a dominant left operand.  An error sets a device flag (first code
 * wins, atomicCAS), which the host turns into SJ_ERR_DATA.
 *
 * Build (He et al. 2008 on CUB primitives; the inner side, or the current
 * piece of it, stays resident):
 *	hash	rows with no NULL key are partitioned to the front, their 64-bit
 *			hashes (the CPU engine's function) radix-sorted with the row ids,
 *			run-length encoded into groups of equal hash, and a directory
 *			over the top bits of the hash points at the groups.  Adjacent
 *			rows of equal hash but different keys set a collision flag (the
 *			candidates then go through the program).
 *	range	rows with b not NULL are sorted by an order-preserving 64-bit key
 *			(PostgreSQL's order: NaN greatest, -0 = +0); NULL rows follow in
 *			the permutation, for rows whose bounds fail.
 * Probe, per chunk of outer rows (sized to the memory budget): one thread a
 * row finds its candidate slice of the permutation (hash: its group; range:
 * evaluate E and C of every term and binary-search the bounds; an error
 * sends the row to all inner rows), counting exact slices directly; an
 * exclusive scan of the slice lengths numbers the candidates; windows of at
 * most the output buffer's size are then evaluated one thread a candidate.
 * The nested loop (Bellas ch. 3, "sliding window") gives each thread one
 * outer row (its cached columns in registers) and streams the inner side
 * through shared memory tiles; a rectangle of the join matrix is one launch.
 *
 * Passes: when the inner side, its index and a probe of kMinChunk outer
 * rows fit in the budget, the join is one pass and the probe buffers get
 * what the index leaves (SjTimings.strategy is the plan's word: "hash").
 * Otherwise the probe buffers take a quarter to a half of the budget first
 * and the inner side is cut into pieces of at most k rows, k the most whose
 * index peaks within the rest (inner_bytes() follows build_index's buffers
 * and asks CUB for its temporary bytes); each pass uploads and indexes one
 * piece, the outer rows that can meet it probe it in chunks, and its index
 * is freed before the next piece is built into the same column buffers.
 *	hash	a Grace hash join: on the host, the rows of both sides with no
 *			NULL key (the others never have candidates) are grouped into P
 *			partitions by the low bits of the same 64-bit key hash (the
 *			directory uses the top bits); P, a power of two up to 2^16, is
 *			the cheapest from a histogram of the hashes (outer rows probed,
 *			plus a fixed cost a pass).  A partition of more than k inner rows
 *			(a frequent key) is cut into pieces, each probed by all of the
 *			partition's outer rows.  Gathered rows are renumbered on the
 *			device; collect() maps pairs back to the tables' rows.
 *			Strategy "hash (P partitions)", or "hash (P partitions, N
 *			passes)" when a partition was cut.
 *	range, nested loop
 *			contiguous row ranges of the inner side, each probed by every
 *			outer row ("range (N inner pieces)").
 * The passes together see exactly the candidate pairs of the join in one
 * pass, each once, so pairs, counts and the errors that can be raised are
 * the same; only their order differs.  The pass loop is part of step(): beginning a pass
 * is one step, so next() stays bounded and resumable.  The largest piece
 * is built in begin, where running out of memory can still fall back.
 *
 * Output: matches are staged per warp in shared memory and appended to the
 * device buffer with one atomicAdd per flush (at most 512 pairs).  Candidate
 * windows never exceed the buffer; a nested-loop rectangle is sized from the
 * selectivity seen so far and re-run smaller on overflow (SjTimings.reruns).
 * count_only reduces counts per block, one atomicAdd a block.
 *
 * Overlap with the caller: when next() hands back a batch of pairs and the
 * next call will need more, the next window or rectangle of the chunk is
 * launched first (launch_ahead), so the device evaluates it while the
 * caller emits the batch; the next step() waits for it (finish_work).  The
 * batch lives in host memory and the device buffer was copied back before,
 * so one output buffer suffices.  Loading a chunk and beginning a pass stay
 * synchronous.
 *
 * Ownership: device memory belongs to the handle through DeviceBuffer
 * charged to its Budget; a pass's index is freed before the next pass's is
 * built; sjgpu_theta_end frees everything.
 *
 * Why this file is larger than ~1000 lines: the kernels, the index build
 * and the host driver (passes, partitions, pieces, windows) share the join's
 * state; the scalar semantics live in sjthetaops.h and sjnumeric.h, shared
 * with the CPU engine.  The host driver, being reworked for several GPUs, is
 * the seam for a split once that settles.
 */
#include <cub/device/device_partition.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "sjgpu_internal.cuh"
#include "sjgpu_multi.cuh"
#include "sjnumeric.h"
#include "sjthetaops.h"

using sjgpu::Budget;
using sjgpu::DeviceBuffer;
using sjgpu::Error;
using sjgpu::Stream;

namespace
{

constexpr int kThreads = 256;		/* threads a block */
constexpr int kWarps = kThreads / 32;
constexpr int kStage = 512;			/* staged pairs a warp */
constexpr int kNlStep = 8;			/* inner rows a nested-loop step */
constexpr size_t kDefaultBatch = 1048576;
constexpr size_t kMaxOut = size_t(1) << 22;	/* device output buffer, pairs */
constexpr uint64_t kCountWindow = uint64_t(1) << 28;	/* candidates a count launch */
constexpr uint64_t kNlMaxCells = uint64_t(1) << 31;	/* cells a nested-loop launch */
constexpr double kCallMs = 100.0;	/* work one next() aims at */
constexpr size_t kSlack = size_t(1) << 20;	/* device bytes left unplanned */
constexpr unsigned kMinChunk = 16384;	/* outer rows a probe should hold */
constexpr int kPartBits = 16;		/* at most 2^16 hash partitions */
constexpr double kPassRows = 65536;	/* a pass costs as much as probing these rows */
constexpr int kFlyNone = 0;			/* work in flight between next() calls */
constexpr int kFlyWindow = 1;
constexpr int kFlyRectangle = 2;

/* Value states, as in the CPU engine. */
constexpr int kVal = 0;
constexpr int kNull = 1;

__host__ __device__ constexpr int
err_state(int code)
{
	return code + 1;
}

/* One column on the device (NULL bytes optional). */
struct DevCol
{
	const long long *v;
	const unsigned char *nul;
};

/* A device instruction: code = opcode | arity << 8; k the constant's bits. */
struct DInstr
{
	int			code;
	int			arg;
	long long	k;
};

/*
 * Scalar semantics: PostgreSQL's int and float operators, float order and
 * keys are sjthetaops.h's, shared with the CPU engine (kVal, kNull and
 * err_state() are its SJ_TH_VAL, SJ_TH_NULL and SJ_TH_ERR()).
 */
static_assert(kVal == SJ_TH_VAL && kNull == SJ_TH_NULL && err_state(1) == SJ_TH_ERR(1),
			  "value states differ from sjthetaops.h's");

/* ------------------------------------------------------------------------
 * The device interpreter
 * ------------------------------------------------------------------------ */

struct DV
{
	long long	v;				/* int64, double bits, bool; a wide value's low half */
	int			s;
	long long	h;				/* a wide numeric value's high half */
};

/* A slot's wide numeric value (sjnumeric.h's sj_nw). */
__device__ __forceinline__ sj_nw
d_wide(const DV &a)
{
	return (sj_nw) (((sj_nwu) (unsigned long long) a.h << 64) | (unsigned long long) a.v);
}

/* Set a slot's wide numeric value. */
__device__ __forceinline__ void
d_set_wide(DV &a, sj_nw x)
{
	a.v = (long long) (unsigned long long) (sj_nwu) x;
	a.h = (long long) (unsigned long long) ((sj_nwu) x >> 64);
}

__device__ __forceinline__ DV
d_unary(int op, int arg, long long k, DV a)
{
	switch (op)
	{
		case SJ_OP_NEG_N:
			if (a.s == kVal)
				a.v = sj_num_neg(a.v);
			return a;
		case SJ_OP_MUL_N:
			if (a.s == kVal)
				a.v = sj_num_mul(a.v, k, arg);
			return a;
		case SJ_OP_WIDEN_N:
			if (a.s == kVal)
				d_set_wide(a, sj_nw_widen(a.v, arg));
			return a;
		case SJ_OP_NEG_W:
			if (a.s == kVal)
				d_set_wide(a, sj_nw_neg(d_wide(a)));
			return a;
		case SJ_OP_MUL_W:
			if (a.s == kVal)
				d_set_wide(a, sj_nw_mul(d_wide(a), k, arg));
			return a;
		case SJ_OP_DIV_W:
			if (a.s == kVal)
			{
				sj_nw		q = 0;

				if (sj_nw_div(d_wide(a), k, SJ_DIVW_KC(arg), SJ_DIVW_DSX(arg),
							  SJ_DIVW_S(arg), &q))
					a.s = err_state(SJ_THETA_ERR_DIVISION_BY_ZERO);
				else
					d_set_wide(a, q);
			}
			return a;
		case SJ_OP_NOT:
			if (a.s == kVal)
				a.v = !a.v;
			return a;
		case SJ_OP_IS_NULL:
		case SJ_OP_IS_NOT_NULL:
			if (a.s > kNull)
				return a;
			a.v = (a.s == kNull) == (op == SJ_OP_IS_NULL);
			a.s = kVal;
			return a;
		case SJ_OP_NEG_I:
			{
				int			w = arg ? arg : 64;

				if (a.s)
					return a;
				if (a.v == LLONG_MIN || !sj_th_fits(-a.v, w))
					a.s = sj_th_range_err(w);
				else
					a.v = -a.v;
				return a;
			}
		case SJ_OP_NEG_F:
			if (a.s == kVal)
			{
				double		x = __longlong_as_double(a.v);

				a.v = __double_as_longlong(arg == 32 ? (double) -(float) x : -x);
			}
			return a;
		default:				/* I2F */
			if (a.s == kVal)
				a.v = __double_as_longlong(arg == 32 ? (double) (float) a.v : (double) a.v);
			return a;
	}
}

__device__ __forceinline__ DV
d_binary(int op, int arg, DV a, DV b)
{
	DV			r;

	if (op == SJ_OP_AND || op == SJ_OP_OR)
	{
		long long	dom = op == SJ_OP_OR;

		if (a.s > kNull)
			return a;
		if (a.s == kVal && a.v == dom)
			return a;
		if (b.s > kNull)
			return b;
		if (b.s == kVal && b.v == dom)
			return b;
		r.s = (a.s == kNull || b.s == kNull) ? kNull : kVal;
		r.v = !dom;
		return r;
	}
	if (a.s | b.s)
	{
		r.v = 0;
		r.s = a.s > kNull ? a.s : (b.s > kNull ? b.s : kNull);
		return r;
	}
	r.s = kVal;
	r.v = 0;
	r.h = 0;
	if (op == SJ_OP_ADD_W)
		d_set_wide(r, sj_nw_add(d_wide(a), d_wide(b)));
	else if (op == SJ_OP_SUB_W)
		d_set_wide(r, sj_nw_sub(d_wide(a), d_wide(b)));
	else if (op >= SJ_OP_EQ_W && op <= SJ_OP_GE_W)
		r.v = sj_th_holds(op - SJ_OP_EQ_W, sj_nw_cmp(d_wide(a), d_wide(b)));
	else if (op == SJ_OP_ADD_N)
		r.v = sj_num_add(a.v, b.v);
	else if (op == SJ_OP_SUB_N)
		r.v = sj_num_sub(a.v, b.v);
	else if (op >= SJ_OP_ADD_I && op <= SJ_OP_MOD_I)
	{
		int64_t		o = 0;

		r.s = sj_th_iarith(op, a.v, b.v, arg ? arg : 64, &o);
		r.v = o;
	}
	else if (op >= SJ_OP_ADD_F && op <= SJ_OP_DIV_F)
	{
		double		o = 0;

		r.s = sj_th_farith(op, __longlong_as_double(a.v), __longlong_as_double(b.v), arg, &o);
		r.v = __double_as_longlong(o);
	}
	else if (op >= SJ_OP_EQ_I && op <= SJ_OP_GE_I)
		r.v = sj_th_holds(op - SJ_OP_EQ_I, (a.v > b.v) - (a.v < b.v));
	else
		r.v = sj_th_holds(op - SJ_OP_EQ_F,
					  sj_th_fcmp(__longlong_as_double(a.v), __longlong_as_double(b.v)));
	return r;
}

/*
 * Run instructions [begin, end) for one pair; Ld supplies column loads.
 * The top two stack slots live in registers, deeper ones in `spill`.
 */
template <class Ld>
__device__ __forceinline__ DV
d_run(const DInstr *prog, int begin, int end, const Ld &ld)
{
	DV			t0 = {0, kNull},
				t1 = {0, kNull};
	DV			spill[SJ_THETA_MAX_STACK];
	int			sp = 0;

	for (int pc = begin; pc < end; pc++)
	{
		const DInstr in = prog[pc];
		const int	op = in.code & 255;
		const int	arity = in.code >> 8;

		if (arity == 0)
		{
			DV			x;

			if (op == SJ_OP_LOAD_L || op == SJ_OP_LOAD_R)
				ld.load(op == SJ_OP_LOAD_L, in.arg, x);
			else if (op == SJ_OP_CONST_NULL)
			{
				x.v = 0;
				x.s = kNull;
			}
			else
			{
				x.v = in.k;
				x.s = kVal;
			}
			if (sp >= 2)
				spill[sp - 2] = t1;
			t1 = t0;
			t0 = x;
			sp++;
		}
		else if (arity == 1)
			t0 = d_unary(op, in.arg, in.k, t0);
		else
		{
			t0 = d_binary(op, in.arg, t1, t0);
			sp--;
			if (sp >= 2)
				t1 = spill[sp - 2];
		}
	}
	return t0;
}

__device__ __forceinline__ void
d_load_col(const DevCol &c, unsigned r, DV &x)
{
	x.v = c.v[r];
	x.s = (c.nul && c.nul[r]) ? kNull : kVal;
}

/* Loads for one (outer row, inner row) pair from global memory. */
struct PairLoader
{
	const DevCol *oc;
	const DevCol *ic;
	unsigned	orow;
	unsigned	irow;
	bool		outer_left;

	__device__ __forceinline__ void load(bool left, int col, DV &x) const
	{
		if (left == outer_left)
			d_load_col(oc[col], orow, x);
		else
			d_load_col(ic[col], irow, x);
	}
};

/* Loads for the nested loop: outer from registers/global, inner from a tile. */
struct TileLoader
{
	const DevCol *oc;
	unsigned	orow;
	bool		outer_left;
	int			c0,
				c1;				/* cached outer columns (-1: none) */
	DV			v0,
				v1;
	const long long *tv;		/* tile values, slot-major */
	const unsigned char *tn;	/* tile NULL flags */
	const signed char *slot;	/* inner column -> tile slot */
	int			tile;			/* tile stride */
	int			ti;				/* row within the tile */

	__device__ __forceinline__ void load(bool left, int col, DV &x) const
	{
		if (left == outer_left)
		{
			if (col == c0)
				x = v0;
			else if (col == c1)
				x = v1;
			else
				d_load_col(oc[col], orow, x);
		}
		else
		{
			int			k = slot[col] * tile + ti;

			x.v = tv[k];
			x.s = tn[k];
		}
	}
};

/* ------------------------------------------------------------------------
 * Keys (same functions as theta_cpu.c)
 * ------------------------------------------------------------------------ */

__host__ __device__ __forceinline__ unsigned long long
mix64(unsigned long long x)
{
	return sj_th_mix(x);
}

__device__ __forceinline__ unsigned long long
d_fbits(long long bits)
{
	return sj_th_fbits(__longlong_as_double(bits));
}

__device__ __forceinline__ unsigned long long
d_nkey(const DevCol &c, int type, unsigned r)
{
	return type == SJ_TF64 ? d_fbits(c.v[r]) : (unsigned long long) c.v[r];
}

__device__ __forceinline__ unsigned long long
d_okey(long long bits, int type)
{
	return type == SJ_TI64 ? sj_th_okey_i(bits) : sj_th_okey_f(__longlong_as_double(bits));
}

/* Hash keys of a join: probe and build columns and types. */
struct KKeys
{
	int			n;
	int			pcol[SJ_THETA_MAX_KEYS];
	int			bcol[SJ_THETA_MAX_KEYS];
	int			type[SJ_THETA_MAX_KEYS];
};

__device__ __forceinline__ bool
d_key_null(const DevCol *cols, const int *kc, int n, unsigned r)
{
	for (int k = 0; k < n; k++)
		if (cols[kc[k]].nul && cols[kc[k]].nul[r])
			return true;
	return false;
}

__device__ __forceinline__ unsigned long long
d_hash(const DevCol *cols, const int *kc, const int *type, int n, unsigned r)
{
	unsigned long long h = mix64(d_nkey(cols[kc[0]], type[0], r));

	for (int k = 1; k < n; k++)
		h = sj_th_hash_step(h, d_nkey(cols[kc[k]], type[k], r), k);
	return h;
}

__device__ __forceinline__ unsigned
d_lower_bound(const unsigned long long *a, unsigned n, unsigned long long key)
{
	return sj_th_bound((const uint64_t *) a, n, key, 0);
}

/* ------------------------------------------------------------------------
 * Output staging
 * ------------------------------------------------------------------------ */

struct Out
{
	unsigned   *l;
	unsigned   *r;
	unsigned long long cap;
	unsigned long long *counter;
	int		   *err;
};

/* Append a warp's staged pairs to the output (one atomicAdd). */
__device__ __forceinline__ void
warp_flush(const unsigned *sl, const unsigned *sr, int fill, const Out &o, int lane)
{
	unsigned long long base = 0;

	if (lane == 0 && fill > 0)
		base = atomicAdd(o.counter, (unsigned long long) fill);
	base = __shfl_sync(0xffffffffu, base, 0);
	for (int k = lane; k < fill; k += 32)
		if (base + k < o.cap)
		{
			o.l[base + k] = sl[k];
			o.r[base + k] = sr[k];
		}
	__syncwarp();
}

/*
 * Stage total more pairs of the warp in its buffers (wl, wr) after the
 * *fill there, flushing them first where they would overflow: write(base)
 * has each lane put its pairs from index base on.  All lanes call.
 */
template <typename Write>
__device__ __forceinline__ void
stage_pairs(unsigned *wl, unsigned *wr, int *fill, int total, const Out &o, int lane,
			Write write)
{
	if (*fill + total > kStage)
	{
		warp_flush(wl, wr, *fill, o, lane);
		*fill = 0;
	}
	write(*fill);
	*fill += total;
	__syncwarp();
}

/* Put the pair of outer row og and inner row ir at off, left row in wl. */
__device__ __forceinline__ void
stage_pair(unsigned *wl, unsigned *wr, int off, unsigned og, unsigned ir, bool outer_left)
{
	wl[off] = outer_left ? og : ir;
	wr[off] = outer_left ? ir : og;
}

/* Sum a per-thread count over the block into *dst (one atomicAdd). */
__device__ __forceinline__ void
block_count(unsigned long long cnt, unsigned long long *dst)
{
	__shared__ unsigned long long part[kWarps];
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;

	for (int d = 16; d > 0; d >>= 1)
		cnt += __shfl_down_sync(0xffffffffu, cnt, d);
	if (lane == 0)
		part[warp] = cnt;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		unsigned long long s = 0;

		for (int w = 0; w < kWarps; w++)
			s += part[w];
		if (s)
			atomicAdd(dst, s);
	}
}

__device__ __forceinline__ void
set_error(int *err, int state)
{
	atomicCAS(err, 0, state - 1);
}

/* Copy the program and column descriptors into shared memory. */
__device__ __forceinline__ void
stage_common(const DInstr *prog, int ninstr, const DevCol *oc, int noc,
			 const DevCol *ic, int nic, DInstr *sprog, DevCol *soc, DevCol *sic)
{
	for (int k = threadIdx.x; k < ninstr; k += blockDim.x)
		sprog[k] = prog[k];
	for (int k = threadIdx.x; k < noc; k += blockDim.x)
		soc[k] = oc[k];
	for (int k = threadIdx.x; k < nic; k += blockDim.x)
		sic[k] = ic[k];
}

/* ------------------------------------------------------------------------
 * Build kernels
 * ------------------------------------------------------------------------ */

__global__ void
iota_kernel(unsigned *a, unsigned n)
{
	unsigned	i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = i;
}

/* valid[i]: the row can join (no NULL key / b not NULL). */
__global__ void
valid_kernel(const DevCol *cols, KKeys keys, int range_col, unsigned n,
			 unsigned char *valid)
{
	unsigned	i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	if (range_col >= 0)
		valid[i] = !(cols[range_col].nul && cols[range_col].nul[i]);
	else
		valid[i] = !d_key_null(cols, keys.bcol, keys.n, i);
}

/* Sort keys of the valid rows: hash or order key. */
__global__ void
sortkey_kernel(const DevCol *cols, KKeys keys, int range_col, int range_type,
			   const unsigned *perm, unsigned nv, unsigned long long *out)
{
	unsigned	p = blockIdx.x * blockDim.x + threadIdx.x;

	if (p >= nv)
		return;
	if (range_col >= 0)
		out[p] = d_okey(cols[range_col].v[perm[p]], range_type);
	else
		out[p] = d_hash(cols, keys.bcol, keys.type, keys.n, perm[p]);
}

/* Rows of equal hash but different keys: a collision. */
__global__ void
collision_kernel(const DevCol *cols, KKeys keys, const unsigned long long *sk,
				 const unsigned *perm, unsigned nv, int *collision)
{
	unsigned	p = blockIdx.x * blockDim.x + threadIdx.x;

	if (p == 0 || p >= nv || sk[p] != sk[p - 1])
		return;
	for (int k = 0; k < keys.n; k++)
		if (d_nkey(cols[keys.bcol[k]], keys.type[k], perm[p]) !=
			d_nkey(cols[keys.bcol[k]], keys.type[k], perm[p - 1]))
		{
			*collision = 1;
			return;
		}
}

/* dir[s] = first group whose hash's top `bits` bits are >= s. */
__global__ void
dir_kernel(const unsigned long long *ghash, unsigned ng, int bits, unsigned *dir)
{
	unsigned	s = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned	nslots = 1u << bits;

	if (s > nslots)
		return;
	if (s == nslots)
		dir[s] = ng;
	else
		dir[s] = d_lower_bound(ghash, ng, (unsigned long long) s << (64 - bits));
}

/* ------------------------------------------------------------------------
 * Probe kernels: candidate slice of each outer row of a chunk
 * ------------------------------------------------------------------------ */

struct Slices
{
	unsigned   *start;			/* R */
	unsigned long long *len;	/* R + 1 (len[R] = 0 for the scan) */
	unsigned char *eval;		/* R: evaluate the program on the slice */
	unsigned long long *direct; /* exact count of rows not evaluated */
};

__global__ void
hash_probe_kernel(const DevCol *oc, const DevCol *ic, KKeys keys, unsigned R,
				  const unsigned long long *ghash, const unsigned *gstart,
				  unsigned ng, const unsigned *dir, int bits,
				  const unsigned *perm, int collision, int exact,
				  int direct_count, Slices sl)
{
	unsigned	r = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long cnt = 0;

	if (r == R)
		sl.len[R] = 0;
	if (r < R)
	{
		unsigned	gs = 0,
					gl = 0;

		if (ng > 0 && !d_key_null(oc, keys.pcol, keys.n, r))
		{
			unsigned long long h = d_hash(oc, keys.pcol, keys.type, keys.n, r);
			unsigned	s = (unsigned) (h >> (64 - bits));

			for (unsigned g = dir[s]; g < dir[s + 1]; g++)
				if (ghash[g] == h)
				{
					bool		eq = true;

					/* one key: the hash is a bijection of it */
					if (!collision && keys.n > 1)
					{
						unsigned	rep = perm[gstart[g]];

						for (int k = 0; k < keys.n && eq; k++)
							eq = d_nkey(oc[keys.pcol[k]], keys.type[k], r) ==
								d_nkey(ic[keys.bcol[k]], keys.type[k], rep);
					}
					if (eq)
					{
						gs = gstart[g];
						gl = gstart[g + 1] - gs;
					}
					break;
				}
		}
		if (direct_count)
		{
			cnt = gl;
			gl = 0;
		}
		sl.start[r] = gs;
		sl.len[r] = gl;
		sl.eval[r] = !exact;
	}
	block_count(cnt, sl.direct);
}

/* Range terms of a join. */
struct KTerms
{
	int			n;
	int			type;			/* of b */
	SjThetaTerm t[SJ_THETA_MAX_TERMS];
};

/* Loads of the outer side only (range bounds). */
struct OuterLoader
{
	const DevCol *oc;
	unsigned	orow;

	__device__ __forceinline__ void load(bool left, int col, DV &x) const
	{
		d_load_col(oc[col], orow, x);
	}
};

/* Narrow [*lo, *hi) by one term (sj_th_term_keys); false: unsure. */
__device__ bool
d_term_interval(const SjThetaTerm &t, int type, DV e, DV c,
				const unsigned long long *keys, unsigned n, unsigned *lo,
				unsigned *hi)
{
	SjThKeyRange kr;
	unsigned	a = 0,
				b = n;

	if (!sj_th_term_keys(t.form, t.cmp, type, (uint64_t) e.v, (uint64_t) c.v, &kr))
		return false;
	if (kr.empty)
		a = b = 0;
	else
	{
		if (kr.has_lo)
			a = sj_th_bound((const uint64_t *) keys, n, kr.klo, kr.lo_upper);
		if (kr.has_hi)
			b = sj_th_bound((const uint64_t *) keys, n, kr.khi, kr.hi_upper);
	}
	if (a > *lo)
		*lo = a;
	if (b < *hi)
		*hi = b;
	return true;
}

__global__ void
range_probe_kernel(const DInstr *prog, int ninstr, const DevCol *oc, KTerms terms,
				   unsigned R, const unsigned long long *keys, unsigned nkeys,
				   unsigned nperm, int exact, int direct_count, Slices sl)
{
	extern __shared__ unsigned char smem[];
	DInstr	   *sprog = (DInstr *) smem;
	unsigned	r = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long cnt = 0;

	for (int k = threadIdx.x; k < ninstr; k += blockDim.x)
		sprog[k] = prog[k];
	__syncthreads();
	if (r == R)
		sl.len[R] = 0;
	if (r < R)
	{
		OuterLoader ld = {oc, r};
		bool		fallback = false,
					empty = false;
		unsigned	lo = 0,
					hi = nkeys;
		DV			e[SJ_THETA_MAX_TERMS],
					c[SJ_THETA_MAX_TERMS];

		for (int t = 0; t < terms.n; t++)
		{
			const SjThetaTerm &tm = terms.t[t];

			e[t] = d_run(sprog, tm.e_begin, tm.e_end, ld);
			if (tm.form != SJ_TERM_DIRECT)
				c[t] = d_run(sprog, tm.c_begin, tm.c_end, ld);
			else
			{
				c[t].v = 0;
				c[t].s = kVal;
			}
			if (e[t].s > kNull || c[t].s > kNull)
				fallback = true;
			else if (e[t].s == kNull || c[t].s == kNull)
				empty = true;
		}
		for (int t = 0; t < terms.n && !fallback && !empty; t++)
			if (!d_term_interval(terms.t[t], terms.type, e[t], c[t], keys, nkeys, &lo, &hi))
				fallback = true;
		sl.eval[r] = fallback || !exact;
		if (fallback)
		{
			sl.start[r] = 0;
			sl.len[r] = nperm;
		}
		else if (empty || hi <= lo)
		{
			sl.start[r] = 0;
			sl.len[r] = 0;
		}
		else if (direct_count)
		{
			cnt = hi - lo;
			sl.start[r] = 0;
			sl.len[r] = 0;
		}
		else
		{
			sl.start[r] = lo;
			sl.len[r] = hi - lo;
		}
	}
	block_count(cnt, sl.direct);
}

/* ------------------------------------------------------------------------
 * Evaluation kernels
 * ------------------------------------------------------------------------ */

struct EvalArgs
{
	const DInstr *prog;
	int			ninstr;
	const DevCol *oc;
	int			noc;
	const DevCol *ic;
	int			nic;
	bool		outer_left;
	unsigned	orow0;			/* global index of chunk row 0 */
	int			count_only;
	Out			out;
	unsigned long long *count;
};

/* An evaluation kernel's end: the block's count, or the warp's last pairs. */
__device__ __forceinline__ void
finish_eval(const EvalArgs &a, unsigned long long cnt, const unsigned *wl, const unsigned *wr,
			int fill, int lane)
{
	if (a.count_only)
		block_count(cnt, a.count);
	else
		warp_flush(wl, wr, fill, a.out, lane);
}

/* Candidates [p0, p1) of a chunk: one thread a candidate. */
__global__ void __launch_bounds__(kThreads)
cand_kernel(EvalArgs a, const unsigned long long *cum, unsigned R,
			const unsigned *start, const unsigned char *eval,
			const unsigned *perm, unsigned long long p0, unsigned long long p1)
{
	extern __shared__ unsigned char smem[];
	DInstr	   *sprog = (DInstr *) smem;
	DevCol	   *soc = (DevCol *) (sprog + a.ninstr);
	DevCol	   *sic = soc + a.noc;
	unsigned   *sl = (unsigned *) (sic + a.nic);
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;
	unsigned   *wl = sl + warp * 2 * kStage;
	unsigned   *wr = wl + kStage;
	int			fill = 0;
	unsigned long long cnt = 0;

	stage_common(a.prog, a.ninstr, a.oc, a.noc, a.ic, a.nic, sprog, soc, sic);
	__syncthreads();

	for (unsigned long long base = p0 + ((unsigned long long) blockIdx.x * kWarps + warp) * 32;
		 base < p1; base += (unsigned long long) gridDim.x * kThreads)
	{
		unsigned long long pos = base + lane;
		bool		hit = false;
		unsigned	orow = 0,
					irow = 0;

		if (pos < p1)
		{
			unsigned	lo = 0,
						hi = R;

			while (lo + 1 < hi)
			{
				unsigned	mid = lo + (hi - lo) / 2;

				if (cum[mid] <= pos)
					lo = mid;
				else
					hi = mid;
			}
			orow = lo;
			irow = perm[start[lo] + (unsigned) (pos - cum[lo])];
			if (eval[lo])
			{
				PairLoader	ld = {soc, sic, orow, irow, a.outer_left};
				DV			res = d_run(sprog, 0, a.ninstr, ld);

				if (res.s > kNull)
					set_error(a.out.err, res.s);
				hit = res.s == kVal && res.v;
			}
			else
				hit = true;
		}
		if (a.count_only)
			cnt += hit;
		else
		{
			unsigned	mask = __ballot_sync(0xffffffffu, hit);

			stage_pairs(wl, wr, &fill, __popc(mask), a.out, lane, [&](int base) {
				if (hit)
					stage_pair(wl, wr, base + __popc(mask & ((1u << lane) - 1)),
							   a.orow0 + orow, irow, a.outer_left);
			});
		}
	}
	finish_eval(a, cnt, wl, wr, fill, lane);
}

/* Nested-loop rectangle geometry. */
struct NlArgs
{
	unsigned	r0,
				r1;				/* chunk-local outer rows */
	unsigned	c0,
				c1;				/* inner rows */
	unsigned	slice;			/* inner rows a block (multiple of tile) */
	int			tile;
	int			nused;			/* inner columns in the tile */
	int			used[SJ_THETA_MAX_COLS];
	int			oc0,
				oc1;			/* outer columns cached in registers */
};

/* Sliding window: a thread per outer row, inner tiles in shared memory. */
__global__ void __launch_bounds__(kThreads)
nl_kernel(EvalArgs a, NlArgs g)
{
	extern __shared__ unsigned char smem[];
	DInstr	   *sprog = (DInstr *) smem;
	DevCol	   *soc = (DevCol *) (sprog + a.ninstr);
	DevCol	   *sic = soc + a.noc;
	long long  *tv = (long long *) (sic + a.nic);
	unsigned char *tn = (unsigned char *) (tv + (size_t) g.nused * g.tile);
	signed char *slot = (signed char *) (tn + (size_t) g.nused * g.tile);
	unsigned   *sl = (unsigned *) (slot + ((SJ_THETA_MAX_COLS + 15) & ~15));
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;
	unsigned   *wl = sl + warp * 2 * kStage;
	unsigned   *wr = wl + kStage;
	int			fill = 0;
	unsigned long long cnt = 0;
	unsigned	orow = g.r0 + blockIdx.x * kThreads + threadIdx.x;
	bool		valid = orow < g.r1;
	unsigned	ibeg = g.c0 + blockIdx.y * g.slice;
	unsigned	iend = min(g.c1, ibeg + g.slice);
	TileLoader	ld;

	stage_common(a.prog, a.ninstr, a.oc, a.noc, a.ic, a.nic, sprog, soc, sic);
	for (int k = threadIdx.x; k < SJ_THETA_MAX_COLS; k += blockDim.x)
		slot[k] = -1;
	__syncthreads();
	for (int k = threadIdx.x; k < g.nused; k += blockDim.x)
		slot[g.used[k]] = (signed char) k;

	ld.oc = soc;
	ld.orow = valid ? orow : g.r0;
	ld.outer_left = a.outer_left;
	ld.c0 = g.oc0;
	ld.c1 = g.oc1;
	ld.v0.v = ld.v1.v = 0;
	ld.v0.s = ld.v1.s = kNull;
	if (g.oc0 >= 0)
		d_load_col(soc[g.oc0], ld.orow, ld.v0);
	if (g.oc1 >= 0)
		d_load_col(soc[g.oc1], ld.orow, ld.v1);
	ld.tv = tv;
	ld.tn = tn;
	ld.slot = slot;
	ld.tile = g.tile;

	for (unsigned t0 = ibeg; t0 < iend; t0 += g.tile)
	{
		int			tcount = (int) min((unsigned) g.tile, iend - t0);

		__syncthreads();
		for (int k = threadIdx.x; k < g.nused * g.tile; k += blockDim.x)
		{
			int			s = k / g.tile,
						i = k - s * g.tile;

			if (i < tcount)
			{
				const DevCol &c = sic[g.used[s]];

				tv[k] = c.v[t0 + i];
				tn[k] = (c.nul && c.nul[t0 + i]) ? kNull : kVal;
			}
		}
		__syncthreads();
		for (int j = 0; j < tcount; j += kNlStep)
		{
			unsigned	bits = 0;

			if (valid)
				for (int q = 0; q < kNlStep; q++)
					if (j + q < tcount)
					{
						DV			res;

						ld.ti = j + q;
						res = d_run(sprog, 0, a.ninstr, ld);
						if (res.s > kNull)
							set_error(a.out.err, res.s);
						if (res.s == kVal && res.v)
							bits |= 1u << q;
					}
			if (a.count_only)
				cnt += __popc(bits);
			else
			{
				int			c = __popc(bits),
							incl = c;
				unsigned	og = a.orow0 + orow;

				for (int d = 1; d < 32; d <<= 1)
				{
					int			t = __shfl_up_sync(0xffffffffu, incl, d);

					if (lane >= d)
						incl += t;
				}
				stage_pairs(wl, wr, &fill, __shfl_sync(0xffffffffu, incl, 31), a.out, lane,
							[&](int base) {
					int			off = base + incl - c;

					while (bits)
					{
						int			q = __ffs(bits) - 1;

						bits &= bits - 1;
						stage_pair(wl, wr, off++, og, t0 + j + q, a.outer_left);
					}
				});
			}
		}
	}
	finish_eval(a, cnt, wl, wr, fill, lane);
}

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* Device copy of a table's used columns. */
struct DevTable
{
	std::vector<DeviceBuffer<long long>> vals;
	std::vector<DeviceBuffer<unsigned char>> nuls;
	DeviceBuffer<DevCol> desc;
	std::vector<DevCol> hdesc;
};

/*
 * One pass of the join: a piece of the inner side, resident while the
 * outer rows that can meet it probe it.  Positions index in_ids / out_ids
 * when those hold the rows of hash partitions, else rows themselves.
 */
struct Pass
{
	unsigned	in_begin;
	unsigned	in_n;
	unsigned	out_begin;
	unsigned	out_n;
};

}								/* namespace */

struct SjGpuThetaJoin
{
	sjgpu::MultiJoin *multi = nullptr;	/* set: on several devices, and
										 * nothing below is used */
	SjThetaPlan plan;
	SjThetaInstr prog[SJ_THETA_MAX_INSTR];
	int			ninstr = 0;
	SjThetaColumn lcols[SJ_THETA_MAX_COLS];
	SjThetaColumn rcols[SJ_THETA_MAX_COLS];
	SjThetaTable left;
	SjThetaTable right;
	const SjThetaTable *outer = nullptr;
	const SjThetaTable *inner = nullptr;
	bool		outer_left = true;
	bool		used_outer[SJ_THETA_MAX_COLS] = {};
	bool		used_inner[SJ_THETA_MAX_COLS] = {};
	int			exact = 0;
	int			direct_count = 0;
	int			count_only = 0;
	size_t		cap = kDefaultBatch;
	int			sms = 1;

	Budget		budget;
	Stream		stream;
	DeviceBuffer<DInstr> d_prog;
	DevTable	din;			/* inner side, one piece */
	DevTable	dout;			/* outer side, one chunk */

	/* passes: one when the inner side fits, else one per piece */
	std::vector<Pass> passes;
	size_t		pass = 0;
	std::vector<unsigned> in_ids;	/* hash partitions: rows by partition */
	std::vector<unsigned> out_ids;
	unsigned	nparts = 0;		/* hash partitions (0: not partitioned) */
	unsigned	in_cap = 0;		/* inner rows a piece holds */
	unsigned	in_begin = 0;	/* the current pass */
	unsigned	in_n = 0;
	unsigned	out_begin = 0;
	unsigned	out_n = 0;
	std::vector<long long> stage_v; /* host rows gathered for upload */
	std::vector<unsigned char> stage_n;

	/* inner index */
	DeviceBuffer<unsigned> perm;
	unsigned	nperm = 0;
	DeviceBuffer<unsigned long long> keys;	/* range: sorted order keys */
	unsigned	nkeys = 0;
	DeviceBuffer<unsigned long long> ghash;
	DeviceBuffer<unsigned> gstart;
	unsigned	ngroups = 0;
	DeviceBuffer<unsigned> dir;
	int			dir_bits = 1;
	int			collision = 0;

	/* chunk of outer rows */
	unsigned	chunk_cap = 0;	/* rows a chunk holds */
	unsigned	next_row = 0;	/* within the pass's outer rows */
	unsigned	chunk_begin = 0;	/* row (or out_ids position) of chunk row 0 */
	unsigned	chunk_n = 0;
	bool		have_chunk = false;
	DeviceBuffer<unsigned> c_start;
	DeviceBuffer<unsigned long long> c_len;
	DeviceBuffer<unsigned long long> c_cum;
	DeviceBuffer<unsigned char> c_eval;
	DeviceBuffer<unsigned char> scan_tmp;
	size_t		scan_tmp_bytes = 0;
	unsigned long long c_total = 0;
	unsigned long long c_pos = 0;
	unsigned	nl_row = 0;		/* nested loop cursor (chunk-local) */
	unsigned	nl_col = 0;
	double		nl_cells = 0;	/* cells of the next rectangle */

	/* work in flight: a window or rectangle launched, not yet read back */
	int			inflight = kFlyNone;
	unsigned long long fly_w = 0;	/* window: candidates */
	unsigned	fly_r1 = 0;		/* rectangle: its end row and column */
	unsigned	fly_c1 = 0;
	unsigned long long fly_cells = 0;

	/* output */
	size_t		out_cap = 0;
	DeviceBuffer<unsigned> d_l;
	DeviceBuffer<unsigned> d_r;
	DeviceBuffer<unsigned long long> d_stat;	/* counter, count, direct */
	DeviceBuffer<int> d_err;
	std::vector<unsigned> pl;
	std::vector<unsigned> pr;
	size_t		ppos = 0;
	size_t		pn = 0;

	bool		finished = false;
	int			error = 0;		/* SjThetaDataError */
	SjTimings	timings;
};

namespace
{

/* Opcode arity for the device encoding. */
int
op_arity(int op)
{
	return sj_theta_arity(op);
}

double
now_ms()
{
	return sj_now_ms();
}

/*
 * Upload n rows of the used columns of t into dt: rows ids[pos ..] when ids
 * is given (gathered on the host), else rows [pos, pos + n).  The first
 * call allocates dt for `capacity` rows.
 */
void
upload_table(SjGpuThetaJoin *j, const SjThetaTable *t, const bool *used,
			 DevTable &dt, const unsigned *ids, unsigned pos, unsigned n,
			 unsigned capacity)
{
	cudaStream_t s = j->stream.get();
	double		t0 = now_ms();

	if (dt.vals.empty())
	{
		dt.vals.resize(t->ncols);
		dt.nuls.resize(t->ncols);
		dt.hdesc.assign(t->ncols > 0 ? t->ncols : 1, DevCol{nullptr, nullptr});
		dt.desc = DeviceBuffer<DevCol>(&j->budget, t->ncols > 0 ? t->ncols : 1,
									   "theta column descriptors");
		for (int c = 0; c < t->ncols; c++)
		{
			if (!used[c])
				continue;
			dt.vals[c] = DeviceBuffer<long long>(&j->budget, capacity ? capacity : 1,
												 "theta column");
			dt.hdesc[c].v = dt.vals[c].get();
			if (t->cols[c].nulls)
			{
				dt.nuls[c] = DeviceBuffer<unsigned char>(&j->budget, capacity ? capacity : 1,
														 "theta NULL flags");
				dt.hdesc[c].nul = dt.nuls[c].get();
			}
		}
		SJGPU_CHECK(cudaMemcpyAsync(dt.desc.get(), dt.hdesc.data(),
									dt.hdesc.size() * sizeof(DevCol),
									cudaMemcpyHostToDevice, s));
	}
	if (n > capacity)
		throw Error(SJ_ERR_INTERNAL, "theta_join: %u rows for a device table of %u", n,
					capacity);
	if (ids)
	{
		int			nused = 0;

		for (int c = 0; c < t->ncols; c++)
			nused += used[c];
		j->stage_v.resize((size_t) nused * n);
		j->stage_n.resize((size_t) nused * n);
	}
	for (int c = 0, u = 0; c < t->ncols && n > 0; c++)
	{
		const long long *v = (const long long *) t->cols[c].values;
		const unsigned char *nu = t->cols[c].nulls;
		const long long *src;
		const unsigned char *srcn;

		if (!used[c])
			continue;
		if (ids)
		{
			/* gather; the staging rows stay untouched until the synchronize */
			long long  *sv = j->stage_v.data() + (size_t) u * n;
			unsigned char *sn = j->stage_n.data() + (size_t) u * n;

			for (unsigned i = 0; i < n; i++)
				sv[i] = v[ids[pos + i]];
			if (nu)
				for (unsigned i = 0; i < n; i++)
					sn[i] = nu[ids[pos + i]];
			src = sv;
			srcn = nu ? sn : nullptr;
			u++;
		}
		else
		{
			src = v + pos;
			srcn = nu ? nu + pos : nullptr;
		}
		sjgpu::upload_bytes(dt.vals[c].get(), src, (size_t) n * sizeof(long long), s);
		if (srcn)
			sjgpu::upload_bytes(dt.nuls[c].get(), srcn, n, s);
	}
	j->stream.synchronize();
	j->timings.transfer_ms += now_ms() - t0;
}

KKeys
make_keys(const SjThetaPlan &p)
{
	KKeys		k;

	memset(&k, 0, sizeof(k));
	k.n = p.nkeys;
	for (int i = 0; i < p.nkeys; i++)
	{
		k.pcol[i] = p.key_probe_col[i];
		k.bcol[i] = p.key_build_col[i];
		k.type[i] = p.key_type[i];
	}
	return k;
}

unsigned
blocks_for(unsigned long long n)
{
	return (unsigned) ((n + kThreads - 1) / kThreads);
}

/* Free the inner index (before the next piece's is built). */
void
free_index(SjGpuThetaJoin *j)
{
	j->perm.reset();
	j->keys.reset();
	j->ghash.reset();
	j->gstart.reset();
	j->dir.reset();
	j->nperm = j->nkeys = j->ngroups = 0;
	j->collision = 0;
}

/* Build the index of the inner piece in din (hash groups or sorted keys). */
void
build_index(SjGpuThetaJoin *j)
{
	cudaStream_t s = j->stream.get();
	unsigned	n = j->in_n;
	bool		hash = j->plan.strategy == SJ_THETA_HASH;
	KKeys		keys = make_keys(j->plan);
	int			range_col = hash ? -1 : j->plan.range_col;
	size_t		bytes = 0,
				b2 = 0;
	unsigned	nv = 0;

	DeviceBuffer<unsigned> iota(&j->budget, n, "theta row ids");
	DeviceBuffer<unsigned char> valid(&j->budget, n, "theta valid flags");
	DeviceBuffer<unsigned> part(&j->budget, n, "theta partition");
	DeviceBuffer<int> nsel(&j->budget, 1, "theta counter");

	iota_kernel<<<blocks_for(n), kThreads, 0, s>>>(iota.get(), n);
	SJGPU_CHECK_LAUNCH("iota_kernel");
	valid_kernel<<<blocks_for(n), kThreads, 0, s>>>(j->din.desc.get(), keys, range_col, n,
													 valid.get());
	SJGPU_CHECK_LAUNCH("valid_kernel");
	SJGPU_CHECK(cub::DevicePartition::Flagged(nullptr, bytes, iota.get(), valid.get(),
											  part.get(), nsel.get(), (int) n, s));
	{
		DeviceBuffer<unsigned char> tmp(&j->budget, std::max<size_t>(bytes, 16), "theta partition temp");

		SJGPU_CHECK(cub::DevicePartition::Flagged(tmp.get(), bytes, iota.get(), valid.get(),
												  part.get(), nsel.get(), (int) n, s));
		int			h = 0;

		SJGPU_CHECK(cudaMemcpyAsync(&h, nsel.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
		j->stream.synchronize();
		nv = (unsigned) h;
	}
	iota.reset();
	valid.reset();

	/* sort the valid rows by key */
	DeviceBuffer<unsigned long long> k0(&j->budget, nv ? nv : 1, "theta sort keys");
	DeviceBuffer<unsigned long long> k1(&j->budget, nv ? nv : 1, "theta sort keys");
	DeviceBuffer<unsigned> v1(&j->budget, nv ? nv : 1, "theta sort values");

	if (nv > 0)
	{
		sortkey_kernel<<<blocks_for(nv), kThreads, 0, s>>>(j->din.desc.get(), keys, range_col,
															j->plan.range_type, part.get(),
															nv, k0.get());
		SJGPU_CHECK_LAUNCH("sortkey_kernel");
	}
	cub::DoubleBuffer<unsigned long long> dk(k0.get(), k1.get());
	cub::DoubleBuffer<unsigned> dv(part.get(), v1.get());

	if (nv > 1)
	{
		SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, dk, dv, (int) nv, 0, 64, s));
		DeviceBuffer<unsigned char> tmp(&j->budget, std::max<size_t>(bytes, 16), "theta sort temp");

		SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(tmp.get(), bytes, dk, dv, (int) nv, 0, 64, s));
	}

	if (!hash)
	{
		/* perm = sorted valid rows, then the NULL rows */
		j->perm = DeviceBuffer<unsigned>(&j->budget, n, "theta permutation");
		if (nv > 0)
			SJGPU_CHECK(cudaMemcpyAsync(j->perm.get(), dv.Current(), (size_t) nv * sizeof(unsigned),
										cudaMemcpyDeviceToDevice, s));
		if (n > nv)
			SJGPU_CHECK(cudaMemcpyAsync(j->perm.get() + nv, part.get() + nv,
										(size_t) (n - nv) * sizeof(unsigned),
										cudaMemcpyDeviceToDevice, s));
		j->nperm = n;
		j->keys = DeviceBuffer<unsigned long long>(&j->budget, nv ? nv : 1, "theta sorted keys");
		if (nv > 0)
			SJGPU_CHECK(cudaMemcpyAsync(j->keys.get(), dk.Current(),
										(size_t) nv * sizeof(unsigned long long),
										cudaMemcpyDeviceToDevice, s));
		j->nkeys = nv;
		j->stream.synchronize();
		return;
	}

	/* hash: groups of equal hash */
	j->perm = DeviceBuffer<unsigned>(&j->budget, nv ? nv : 1, "theta permutation");
	if (nv > 0)
		SJGPU_CHECK(cudaMemcpyAsync(j->perm.get(), dv.Current(), (size_t) nv * sizeof(unsigned),
									cudaMemcpyDeviceToDevice, s));
	j->nperm = nv;
	j->ghash = DeviceBuffer<unsigned long long>(&j->budget, nv ? nv : 1, "theta group hashes");
	j->gstart = DeviceBuffer<unsigned>(&j->budget, (size_t) nv + 1, "theta group starts");
	{
		DeviceBuffer<unsigned> counts(&j->budget, (size_t) nv + 1, "theta group sizes");
		DeviceBuffer<int> coll(&j->budget, 1, "theta collision flag");
		int			h[2] = {0, 0};

		SJGPU_CHECK(cudaMemsetAsync(coll.get(), 0, sizeof(int), s));
		SJGPU_CHECK(cudaMemsetAsync(counts.get(), 0, ((size_t) nv + 1) * sizeof(unsigned), s));
		if (nv > 1 && keys.n > 1)
		{
			collision_kernel<<<blocks_for(nv), kThreads, 0, s>>>(j->din.desc.get(), keys,
																  dk.Current(), dv.Current(),
																  nv, coll.get());
			SJGPU_CHECK_LAUNCH("collision_kernel");
		}
		if (nv > 0)
		{
			SJGPU_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, dk.Current(),
														   j->ghash.get(), counts.get(),
														   nsel.get(), (int) nv, s));
			DeviceBuffer<unsigned char> tmp(&j->budget, std::max<size_t>(bytes, 16), "theta encode temp");

			SJGPU_CHECK(cub::DeviceRunLengthEncode::Encode(tmp.get(), bytes, dk.Current(),
														   j->ghash.get(), counts.get(),
														   nsel.get(), (int) nv, s));
			SJGPU_CHECK(cudaMemcpyAsync(&h[0], nsel.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
		}
		SJGPU_CHECK(cudaMemcpyAsync(&h[1], coll.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
		j->stream.synchronize();
		j->ngroups = (unsigned) h[0];
		j->collision = h[1];
		/* counts[ng] is 0: the exclusive sum's last entry is nv */
		SJGPU_CHECK(cudaMemsetAsync(counts.get() + j->ngroups, 0, sizeof(unsigned), s));
		SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, b2, counts.get(), j->gstart.get(),
												  (int) j->ngroups + 1, s));
		DeviceBuffer<unsigned char> tmp(&j->budget, std::max<size_t>(b2, 16), "theta scan temp");

		SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(tmp.get(), b2, counts.get(), j->gstart.get(),
												  (int) j->ngroups + 1, s));
	}
	int			bits = 1;

	while (bits < 30 && (1ull << bits) < j->ngroups)
		bits++;
	j->dir_bits = bits;
	j->dir = DeviceBuffer<unsigned>(&j->budget, (size_t) (1u << bits) + 1, "theta directory");
	dir_kernel<<<blocks_for((1u << bits) + 1), kThreads, 0, s>>>(j->ghash.get(), j->ngroups,
																  bits, j->dir.get());
	SJGPU_CHECK_LAUNCH("dir_kernel");
	j->stream.synchronize();
}

/* Bytes of shared memory of the evaluation kernels (without the tile). */
size_t
common_smem(const SjGpuThetaJoin *j)
{
	return (size_t) j->ninstr * sizeof(DInstr) +
		(size_t) (j->outer->ncols + j->inner->ncols) * sizeof(DevCol);
}

EvalArgs
eval_args(SjGpuThetaJoin *j)
{
	EvalArgs	a;

	a.prog = j->d_prog.get();
	a.ninstr = j->ninstr;
	a.oc = j->dout.desc.get();
	a.noc = j->outer->ncols;
	a.ic = j->din.desc.get();
	a.nic = j->inner->ncols;
	a.outer_left = j->outer_left;
	/* hash partitions: chunk-local outer rows, mapped back in collect() */
	a.orow0 = j->nparts > 0 ? 0 : j->chunk_begin;
	a.count_only = j->count_only;
	a.out.l = j->d_l.get();
	a.out.r = j->d_r.get();
	a.out.cap = j->out_cap;
	a.out.counter = j->d_stat.get();
	a.out.err = j->d_err.get();
	a.count = j->d_stat.get() + 1;
	return a;
}

/* Read counter, count and error after a launch; throws nothing. */
void
read_stats(SjGpuThetaJoin *j, unsigned long long *counter, unsigned long long *count,
		   unsigned long long *direct)
{
	unsigned long long st[3];
	int			err = 0;
	cudaStream_t s = j->stream.get();

	SJGPU_CHECK(cudaMemcpyAsync(st, j->d_stat.get(), sizeof(st), cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaMemcpyAsync(&err, j->d_err.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
	j->stream.synchronize();
	if (counter)
		*counter = st[0];
	if (count)
		*count = st[1];
	if (direct)
		*direct = st[2];
	if (err && !j->error)
		j->error = err;
	SJGPU_CHECK(cudaMemsetAsync(j->d_stat.get(), 0, sizeof(st), s));
}

/* Load the next chunk of outer rows and find their candidate slices. */
void
load_chunk(SjGpuThetaJoin *j, uint64_t *count)
{
	cudaStream_t s = j->stream.get();
	unsigned	R = std::min(j->chunk_cap, j->out_n - j->next_row);

	j->chunk_begin = j->out_begin + j->next_row;
	j->chunk_n = R;
	j->next_row += R;
	j->have_chunk = true;
	upload_table(j, j->outer, j->used_outer, j->dout,
				 j->nparts > 0 ? j->out_ids.data() : nullptr, j->chunk_begin, R, j->chunk_cap);

	if (j->plan.strategy == SJ_THETA_NESTED_LOOP)
	{
		j->nl_row = 0;
		j->nl_col = 0;
		j->c_total = (unsigned long long) R * j->in_n;
		j->c_pos = 0;
		return;
	}

	Slices		sl = {j->c_start.get(), j->c_len.get(), j->c_eval.get(), j->d_stat.get() + 2};

	if (j->plan.strategy == SJ_THETA_HASH)
	{
		hash_probe_kernel<<<blocks_for((unsigned long long) R + 1), kThreads, 0, s>>>(
			j->dout.desc.get(), j->din.desc.get(), make_keys(j->plan), R, j->ghash.get(),
			j->gstart.get(), j->ngroups, j->dir.get(), j->dir_bits, j->perm.get(),
			j->collision, j->exact, j->direct_count, sl);
		SJGPU_CHECK_LAUNCH("hash_probe_kernel");
	}
	else
	{
		KTerms		kt;

		memset(&kt, 0, sizeof(kt));
		kt.n = j->plan.nterms;
		kt.type = j->plan.range_type;
		for (int t = 0; t < kt.n; t++)
			kt.t[t] = j->plan.terms[t];
		range_probe_kernel<<<blocks_for((unsigned long long) R + 1), kThreads,
			j->ninstr * sizeof(DInstr), s>>>(j->d_prog.get(), j->ninstr, j->dout.desc.get(), kt,
											 R, j->keys.get(), j->nkeys, j->nperm, j->exact,
											 j->direct_count, sl);
		SJGPU_CHECK_LAUNCH("range_probe_kernel");
	}
	SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(j->scan_tmp.get(), j->scan_tmp_bytes,
											  j->c_len.get(), j->c_cum.get(), (int) R + 1, s));
	unsigned long long total = 0,
				direct = 0;

	SJGPU_CHECK(cudaMemcpyAsync(&total, j->c_cum.get() + R, sizeof(total),
								cudaMemcpyDeviceToHost, s));
	read_stats(j, nullptr, nullptr, &direct);
	j->c_total = total;
	j->c_pos = 0;
	*count += direct;
}

/*
 * Map n pairs of the current pass from device-local row numbers (chunk
 * row of a partition's outer rows, row of the inner piece) to rows of the
 * tables.
 */
void
map_rows(const SjGpuThetaJoin *j, unsigned *l, unsigned *r, size_t n)
{
	unsigned   *o = j->outer_left ? l : r;
	unsigned   *in = j->outer_left ? r : l;

	if (j->nparts > 0)
	{
		const unsigned *ids = j->out_ids.data() + j->chunk_begin;

		for (size_t k = 0; k < n; k++)
			o[k] = ids[o[k]];
	}
	if (j->nparts > 0)
	{
		const unsigned *ids = j->in_ids.data() + j->in_begin;

		for (size_t k = 0; k < n; k++)
			in[k] = ids[in[k]];
	}
	else if (j->in_begin > 0)
		for (size_t k = 0; k < n; k++)
			in[k] += j->in_begin;
}

/* Append `n` pairs from the device output to the pending pairs. */
void
collect(SjGpuThetaJoin *j, unsigned long long n)
{
	cudaStream_t s = j->stream.get();
	double		t0 = now_ms();

	if (n == 0)
		return;
	if (j->ppos > 0)
	{
		j->pl.erase(j->pl.begin(), j->pl.begin() + j->ppos);
		j->pr.erase(j->pr.begin(), j->pr.begin() + j->ppos);
		j->pn -= j->ppos;
		j->ppos = 0;
	}
	j->pl.resize(j->pn + n);
	j->pr.resize(j->pn + n);
	SJGPU_CHECK(cudaMemcpyAsync(j->pl.data() + j->pn, j->d_l.get(), n * sizeof(unsigned),
								cudaMemcpyDeviceToHost, s));
	SJGPU_CHECK(cudaMemcpyAsync(j->pr.data() + j->pn, j->d_r.get(), n * sizeof(unsigned),
								cudaMemcpyDeviceToHost, s));
	j->stream.synchronize();
	map_rows(j, j->pl.data() + j->pn, j->pr.data() + j->pn, n);
	j->pn += n;
	j->timings.transfer_ms += now_ms() - t0;
}

/* Launch the next window of candidates (hash, range); finish_window waits. */
void
launch_window(SjGpuThetaJoin *j)
{
	cudaStream_t s = j->stream.get();
	unsigned long long w = j->c_total - j->c_pos;
	unsigned long long limit = j->count_only ? kCountWindow : j->out_cap;

	if (w > limit)
		w = limit;
	unsigned	grid = (unsigned) std::min<unsigned long long>(blocks_for(w),
															  (unsigned long long) j->sms * 8);
	size_t		smem = common_smem(j) +
		(j->count_only ? 0 : (size_t) kWarps * 2 * kStage * sizeof(unsigned));

	cand_kernel<<<grid, kThreads, smem, s>>>(eval_args(j), j->c_cum.get(), j->chunk_n,
											 j->c_start.get(), j->c_eval.get(), j->perm.get(),
											 j->c_pos, j->c_pos + w);
	SJGPU_CHECK_LAUNCH("cand_kernel");
	j->inflight = kFlyWindow;
	j->fly_w = w;
}

/*
 * Wait for the window or rectangle in flight: its pairs written (counter)
 * and its count; false where it met a data error.
 */
bool
land_work(SjGpuThetaJoin *j, unsigned long long *counter, unsigned long long *cnt)
{
	*counter = *cnt = 0;
	j->inflight = kFlyNone;
	read_stats(j, counter, cnt, nullptr);
	return !j->error;
}

/* Wait for the window in flight and take its pairs or count. */
void
finish_window(SjGpuThetaJoin *j, uint64_t *count)
{
	unsigned long long counter,
				cnt;

	if (!land_work(j, &counter, &cnt))
		return;
	if (counter > j->out_cap)
		throw Error(SJ_ERR_INTERNAL, "theta_join: candidate window overflowed its buffer");
	if (j->count_only)
		*count += cnt;
	else
		collect(j, counter);
	j->c_pos += j->fly_w;
}

/* Launch the next rectangle of the nested loop; finish_rectangle waits. */
void
launch_rectangle(SjGpuThetaJoin *j)
{
	cudaStream_t s = j->stream.get();
	unsigned	m = j->in_n;
	double		cells = j->count_only ? (double) kNlMaxCells : j->nl_cells;
	NlArgs		g;
	unsigned long long ncells;

	memset(&g, 0, sizeof(g));
	if (cells < 1)
		cells = 1;
	g.r0 = j->nl_row;
	if (j->nl_col > 0 || cells < m)
	{
		/* part of one row */
		g.r1 = g.r0 + 1;
		g.c0 = j->nl_col;
		g.c1 = (unsigned) std::min<double>(m, j->nl_col + cells);
	}
	else
	{
		unsigned	rows = (unsigned) std::min<double>(j->chunk_n - j->nl_row, cells / m);

		g.r1 = g.r0 + std::max(1u, rows);
		g.c0 = 0;
		g.c1 = m;
	}
	ncells = (unsigned long long) (g.r1 - g.r0) * (g.c1 - g.c0);

	/* tile: the used inner columns, about 24 KB */
	for (int c = 0; c < j->inner->ncols; c++)
		if (j->used_inner[c])
			g.used[g.nused++] = c;
	{
		int			per = 9 * std::max(1, g.nused);

		g.tile = std::max(32, std::min(256, (24 * 1024 / per) & ~31));
	}
	g.oc0 = g.oc1 = -1;
	for (int c = 0; c < j->outer->ncols; c++)
		if (j->used_outer[c])
		{
			if (g.oc0 < 0)
				g.oc0 = c;
			else if (g.oc1 < 0)
				g.oc1 = c;
		}

	unsigned	gx = blocks_for(g.r1 - g.r0);
	unsigned	tiles = (g.c1 - g.c0 + g.tile - 1) / g.tile;
	unsigned	target = (unsigned) j->sms * 8;
	unsigned	gy = std::max(1u, std::min(tiles, (target + gx - 1) / gx));
	unsigned	per_block = (tiles + gy - 1) / gy;

	g.slice = per_block * g.tile;
	gy = (g.c1 - g.c0 + g.slice - 1) / g.slice;
	if (gy > 65535)
	{
		g.slice = ((g.c1 - g.c0 + 65534) / 65535 + g.tile - 1) / g.tile * g.tile;
		gy = (g.c1 - g.c0 + g.slice - 1) / g.slice;
	}

	size_t		smem = common_smem(j) + (size_t) g.nused * g.tile * 9 +
		((SJ_THETA_MAX_COLS + 15) & ~15) + 16 +
		(j->count_only ? 0 : (size_t) kWarps * 2 * kStage * sizeof(unsigned));

	smem = (smem + 15) & ~(size_t) 15;
	SJGPU_CHECK(cudaFuncSetAttribute(nl_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
									 (int) smem));
	nl_kernel<<<dim3(gx, gy), kThreads, smem, s>>>(eval_args(j), g);
	SJGPU_CHECK_LAUNCH("nl_kernel");
	j->inflight = kFlyRectangle;
	j->fly_r1 = g.r1;
	j->fly_c1 = g.c1;
	j->fly_cells = ncells;
}

/*
 * Wait for the rectangle in flight and take its pairs or count; on an
 * overflow of the output buffer, shrink the next rectangle and leave the
 * cursor for it to run again.
 */
void
finish_rectangle(SjGpuThetaJoin *j, uint64_t *count)
{
	unsigned	m = j->in_n;
	unsigned long long ncells = j->fly_cells;
	unsigned long long counter,
				cnt;

	if (!land_work(j, &counter, &cnt))
		return;
	if (!j->count_only && counter > j->out_cap)
	{
		/* too many pairs for the buffer: run the rectangle again, smaller */
		j->timings.reruns++;
		j->nl_cells = std::max((double) j->out_cap, (double) ncells / 4);
		if ((double) ncells <= (double) j->out_cap)
			throw Error(SJ_ERR_INTERNAL, "theta_join: nested-loop rectangle overflowed");
		return;
	}
	if (j->count_only)
		*count += cnt;
	else
	{
		double		sel = (double) counter / (double) ncells;

		collect(j, counter);
		/* aim at half the buffer at the selectivity seen */
		j->nl_cells = std::min((double) kNlMaxCells,
							   std::max((double) j->out_cap,
										sel > 0 ? j->out_cap / (2 * sel) : (double) kNlMaxCells));
	}
	if (j->fly_c1 == m)
	{
		j->nl_row = j->fly_r1;
		j->nl_col = 0;
	}
	else
		j->nl_col = j->fly_c1;
	j->c_pos = (unsigned long long) j->nl_row * m + j->nl_col;
}

/* Launch the next window or rectangle of the current chunk. */
void
launch_work(SjGpuThetaJoin *j)
{
	if (j->plan.strategy == SJ_THETA_NESTED_LOOP)
		launch_rectangle(j);
	else
		launch_window(j);
}

/* Wait for the work in flight and take its results. */
void
finish_work(SjGpuThetaJoin *j, uint64_t *count)
{
	if (j->inflight == kFlyRectangle)
		finish_rectangle(j, count);
	else
		finish_window(j, count);
}

/*
 * Overlap with the caller: before a batch of pairs goes back, launch the
 * next window or rectangle when the next call will need one, so the device
 * works while the caller emits the batch; the next step() finishes it.
 * Its pairs go to the device buffer, whose last contents were copied back
 * already; the batch handed over lives in host memory.
 */
void
launch_ahead(SjGpuThetaJoin *j)
{
	if (j->count_only || j->finished || j->error || j->inflight != kFlyNone ||
		!j->have_chunk || j->c_pos >= j->c_total || j->pn - j->ppos >= j->cap)
		return;
	launch_work(j);
}

/* Make pass p current: free the last piece's index, upload and index p's. */
void
begin_pass(SjGpuThetaJoin *j, size_t p)
{
	const Pass &ps = j->passes[p];
	double		t0 = now_ms();

	free_index(j);
	j->pass = p;
	j->in_begin = ps.in_begin;
	j->in_n = ps.in_n;
	j->out_begin = ps.out_begin;
	j->out_n = ps.out_n;
	j->next_row = 0;
	j->have_chunk = false;
	j->c_total = 0;
	j->c_pos = 0;
	upload_table(j, j->inner, j->used_inner, j->din,
				 j->nparts > 0 ? j->in_ids.data() : nullptr, j->in_begin, j->in_n, j->in_cap);
	if (j->plan.strategy != SJ_THETA_NESTED_LOOP)
		build_index(j);
	j->exact = j->plan.exact && !j->collision;
	j->direct_count = j->exact && j->count_only;
	j->timings.build_ms += now_ms() - t0;
}

/*
 * One step: finish the work in flight, load a chunk, evaluate one window /
 * rectangle, or begin a pass.
 */
void
step(SjGpuThetaJoin *j, uint64_t *count)
{
	if (j->inflight != kFlyNone)
	{
		finish_work(j, count);
		return;
	}
	if (!j->have_chunk || j->c_pos >= j->c_total)
	{
		if (j->next_row < j->out_n)
			load_chunk(j, count);
		else if (j->pass + 1 < j->passes.size())
			begin_pass(j, j->pass + 1);
		else
			j->finished = true;
		return;
	}
	launch_work(j);
	finish_work(j, count);
}

/* Device bytes of one outer row of a chunk: its slice and its columns. */
size_t
probe_row_bytes(const SjGpuThetaJoin *j)
{
	size_t		per_row = 4 + 8 + 8 + 1;

	for (int c = 0; c < j->outer->ncols; c++)
		if (j->used_outer[c])
			per_row += 8 + (j->outer->cols[c].nulls ? 1 : 0);
	return per_row;
}

/* Temporary bytes of the scan over the slices of `rows` outer rows. */
size_t
scan_bytes(SjGpuThetaJoin *j, unsigned rows)
{
	size_t		bytes = 0;

	SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, (unsigned long long *) nullptr,
											  (unsigned long long *) nullptr, (int) rows + 1,
											  j->stream.get()));
	return bytes;
}

/*
 * Device bytes of a piece of n inner rows: its columns and its index, at
 * the peak of build_index (peak) or as kept for probing.  The terms follow
 * build_index's buffers (n rows: ids 4 + flags 1 + partition 4, then sort
 * keys 2 x 8 + values 4, then permutation 4 + group hashes 8 + starts 4 +
 * sizes 4 + directory <= 8) and CUB's own temporary bytes for n items.
 */
size_t
inner_bytes(SjGpuThetaJoin *j, unsigned n, bool peak)
{
	cudaStream_t s = j->stream.get();
	bool		hash = j->plan.strategy == SJ_THETA_HASH;
	size_t		N = n;
	size_t		cols = (size_t) std::max(1, j->inner->ncols) * sizeof(DevCol);
	size_t		need;
	size_t		t_part = 0,
				t_sort = 0,
				t_rle = 0,
				t_scan = 0;

	for (int c = 0; c < j->inner->ncols; c++)
		if (j->used_inner[c])
			cols += N * (8 + (j->inner->cols[c].nulls ? 1 : 0));
	if (j->plan.strategy == SJ_THETA_NESTED_LOOP || n == 0)
		return cols + 4096;
	if (!peak)
		return cols + (hash ? 24 : 12) * N + 4096;

	cub::DoubleBuffer<unsigned long long> dk(nullptr, nullptr);
	cub::DoubleBuffer<unsigned> dv(nullptr, nullptr);

	SJGPU_CHECK(cub::DevicePartition::Flagged(nullptr, t_part, (unsigned *) nullptr,
											  (unsigned char *) nullptr, (unsigned *) nullptr,
											  (int *) nullptr, (int) n, s));
	SJGPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, t_sort, dk, dv, (int) n, 0, 64, s));
	need = std::max(9 * N + std::max<size_t>(t_part, 16), 24 * N + std::max<size_t>(t_sort, 16));
	if (hash)
	{
		SJGPU_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, t_rle,
													   (unsigned long long *) nullptr,
													   (unsigned long long *) nullptr,
													   (unsigned *) nullptr, (int *) nullptr,
													   (int) n, s));
		SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t_scan, (unsigned *) nullptr,
												  (unsigned *) nullptr, (int) n + 1, s));
		need = std::max(need, 44 * N + std::max<size_t>(std::max(t_rle, t_scan), 16));
		need = std::max(need, 48 * N);
	}
	else
		need = std::max(need, 36 * N);
	return cols + need + 4096;
}

/*
 * The output buffer and the outer side's chunk buffers within `room`
 * bytes (the scan's temporary bytes included); throws SJ_ERR_DEVICE_NOMEM
 * when not even one outer row fits.
 */
void
alloc_probe(SjGpuThetaJoin *j, size_t room)
{
	cudaStream_t s = j->stream.get();
	unsigned	n_out = j->outer->n;
	size_t		per_row = probe_row_bytes(j);
	size_t		scan = scan_bytes(j, n_out);
	unsigned long long bound = (unsigned long long) n_out * j->inner->n;
	size_t		avail;

	if (room < scan + per_row + 64 * 8)
		throw Error(SJ_ERR_DEVICE_NOMEM,
					"theta_join: %zu bytes of device memory left for the outer side, too few (limit %zu)",
					room, j->budget.limit());
	avail = room - scan;
	if (!j->count_only)
	{
		size_t		out = std::min<unsigned long long>(kMaxOut, std::max<unsigned long long>(bound, 1));

		out = std::min(out, avail / 2 / 8);
		out = std::max<size_t>(out, 64);
		j->out_cap = out;
		j->d_l = DeviceBuffer<unsigned>(&j->budget, out, "theta output");
		j->d_r = DeviceBuffer<unsigned>(&j->budget, out, "theta output");
		avail -= out * 8;
	}
	j->chunk_cap = (unsigned) std::min<size_t>(n_out, avail / per_row);
	j->chunk_cap = std::min(j->chunk_cap, 1u << 30);
	if (j->chunk_cap < 1)
		throw Error(SJ_ERR_DEVICE_NOMEM, "theta_join: no room for a chunk of outer rows");
	j->c_start = DeviceBuffer<unsigned>(&j->budget, j->chunk_cap, "theta slices");
	j->c_len = DeviceBuffer<unsigned long long>(&j->budget, (size_t) j->chunk_cap + 1,
												"theta slices");
	j->c_cum = DeviceBuffer<unsigned long long>(&j->budget, (size_t) j->chunk_cap + 1,
												"theta slices");
	j->c_eval = DeviceBuffer<unsigned char>(&j->budget, j->chunk_cap, "theta slices");
	SJGPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, j->scan_tmp_bytes, j->c_len.get(),
											  j->c_cum.get(), (int) j->chunk_cap + 1, s));
	j->scan_tmp_bytes = std::max<size_t>(j->scan_tmp_bytes, 16);
	j->scan_tmp = DeviceBuffer<unsigned char>(&j->budget, j->scan_tmp_bytes,
											  "theta scan temp");
	j->nl_cells = (double) std::max<size_t>(j->out_cap, 1);
	/* the chunk's columns (per_row counted them) */
	upload_table(j, j->outer, j->used_outer, j->dout, nullptr, 0, 0, j->chunk_cap);
}

/*
 * Hash partitions (Grace hash join).  Rows with a NULL key are dropped:
 * they never have candidates.  A row's partition is the low bits of its key
 * hash (the directory of a piece's index uses the top bits), so equal keys
 * meet in one partition.  The number of partitions P, a power of two up to
 * 2^kPartBits, is chosen from a histogram of the low kPartBits bits: the
 * fewest outer rows probed, counting a pass as kPassRows rows.  A partition
 * of more than k inner rows (a frequent key) is cut into pieces of at most
 * k rows, each probed by all of the partition's outer rows.  Partitions
 * lacking inner or outer rows are skipped.
 */
void
plan_partitions(SjGpuThetaJoin *j, unsigned k)
{
	const unsigned F = 1u << kPartBits;
	const SjThetaTable *in = j->inner,
			   *out = j->outer;
	KKeys		keys = make_keys(j->plan);
	std::vector<unsigned> fin(F, 0),
				fout(F, 0);
	unsigned	P = 2;
	double		best = -1;
	bool		cut = false;

	for (unsigned r = 0; r < in->n; r++)
		if (!sj_th_key_null(in, keys.bcol, keys.n, r))
			fin[sj_th_key_hash(in, keys.bcol, keys.n, r) & (F - 1)]++;
	for (unsigned r = 0; r < out->n; r++)
		if (!sj_th_key_null(out, keys.pcol, keys.n, r))
			fout[sj_th_key_hash(out, keys.pcol, keys.n, r) & (F - 1)]++;

	for (unsigned np = 2; np <= F; np <<= 1)
	{
		double		cost = 0;

		for (unsigned p = 0; p < np; p++)
		{
			unsigned long long a = 0,
						b = 0;

			for (unsigned f = p; f < F; f += np)
			{
				a += fin[f];
				b += fout[f];
			}
			if (a > 0 && b > 0)
				cost += (double) ((a + k - 1) / k) * ((double) b + kPassRows);
		}
		if (best < 0 || cost < best)
		{
			best = cost;
			P = np;
		}
	}

	/* rows by partition (a counting sort) */
	std::vector<unsigned> ioff(P + 1, 0),
				ooff(P + 1, 0);

	for (unsigned f = 0; f < F; f++)
	{
		ioff[(f & (P - 1)) + 1] += fin[f];
		ooff[(f & (P - 1)) + 1] += fout[f];
	}
	for (unsigned p = 0; p < P; p++)
	{
		ioff[p + 1] += ioff[p];
		ooff[p + 1] += ooff[p];
	}
	j->in_ids.resize(ioff[P]);
	j->out_ids.resize(ooff[P]);
	{
		std::vector<unsigned> ipos(ioff.begin(), ioff.end() - 1),
					opos(ooff.begin(), ooff.end() - 1);

		for (unsigned r = 0; r < in->n; r++)
			if (!sj_th_key_null(in, keys.bcol, keys.n, r))
				j->in_ids[ipos[sj_th_key_hash(in, keys.bcol, keys.n, r) & (P - 1)]++] = r;
		for (unsigned r = 0; r < out->n; r++)
			if (!sj_th_key_null(out, keys.pcol, keys.n, r))
				j->out_ids[opos[sj_th_key_hash(out, keys.pcol, keys.n, r) & (P - 1)]++] = r;
	}
	j->nparts = P;
	for (unsigned p = 0; p < P; p++)
	{
		unsigned	a = ioff[p + 1] - ioff[p],
					b = ooff[p + 1] - ooff[p];

		if (a == 0 || b == 0)
			continue;

		unsigned	npieces = (a + k - 1) / k,
					size = (a + npieces - 1) / npieces;

		if (npieces > 1)
			cut = true;
		for (unsigned q = 0; q < a; q += size)
			j->passes.push_back(Pass{ioff[p] + q, std::min(size, a - q), ooff[p], b});
	}
	if (cut)
		snprintf(j->timings.strategy, sizeof(j->timings.strategy),
				 "%.20s (%u partitions, %zu passes)", j->plan.description, P, j->passes.size());
	else
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "%.20s (%u partitions)",
				 j->plan.description, P);
}

/* Contiguous pieces of at most k inner rows, each probed by every outer row. */
void
plan_ranges(SjGpuThetaJoin *j, unsigned k)
{
	unsigned	n = j->inner->n,
				npieces = (n + k - 1) / k,
				size = (n + npieces - 1) / npieces;

	for (unsigned q = 0; q < n; q += size)
		j->passes.push_back(Pass{q, std::min(size, n - q), 0, j->outer->n});
}

/*
 * Plan the passes over the inner side, allocate the probe's buffers and
 * begin the first pass.  When the inner side with its index fits beside a
 * probe of kMinChunk rows: one pass, the probe sized from what the index
 * leaves.  Otherwise the probe takes its share first (a quarter to a half
 * of the budget) and the inner side is cut into pieces of the most rows
 * whose index fits in the rest: hash partitions, else row ranges.
 */
void
plan_passes(SjGpuThetaJoin *j)
{
	unsigned	n_in = j->inner->n,
				n_out = j->outer->n;
	unsigned long long bound = (unsigned long long) n_out * n_in;
	size_t		scan = scan_bytes(j, n_out);
	size_t		per_row = probe_row_bytes(j);
	size_t		want = scan + per_row * std::min(n_out, kMinChunk) +
		(j->count_only ? 0 : 8 * (size_t) std::min<unsigned long long>(bound, kMinChunk));
	size_t		full = scan + per_row * n_out +
		(j->count_only ? 0 : 8 * (size_t) std::min<unsigned long long>(bound, kMaxOut));
	size_t		avail = j->budget.available();
	size_t		room = avail > kSlack ? avail - kSlack : 0;
	unsigned	k,
				lo = 0,
				hi = n_in;

	if (inner_bytes(j, n_in, true) <= avail &&
		inner_bytes(j, n_in, false) + kSlack + want <= avail)
	{
		/* the inner side fits whole: the probe gets what the index leaves */
		j->passes.push_back(Pass{0, n_in, 0, n_out});
		j->in_cap = n_in;
		begin_pass(j, 0);
		avail = j->budget.available();
		alloc_probe(j, avail > kSlack ? avail - kSlack : 0);
		return;
	}

	alloc_probe(j, std::min(full, std::min(room / 2, std::max(room / 4, want))));
	avail = j->budget.available();
	room = avail > kSlack ? avail - kSlack : 0;
	while (lo < hi)
	{
		unsigned	mid = lo + (hi - lo + 1) / 2;

		if (inner_bytes(j, mid, true) <= room)
			lo = mid;
		else
			hi = mid - 1;
	}
	k = lo;
	if (k == 0)
		throw Error(SJ_ERR_DEVICE_NOMEM,
					"theta_join: %zu bytes of device memory leave no room for the inner side",
					j->budget.limit());
	if (k >= n_in)
		j->passes.push_back(Pass{0, n_in, 0, n_out});
	else if (j->plan.strategy == SJ_THETA_HASH)
		plan_partitions(j, k);
	else
		plan_ranges(j, k);

	if (j->nparts == 0 && j->passes.size() > 1)
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "%.20s (%zu inner pieces)",
				 j->plan.description, j->passes.size());
	if (j->passes.empty())
	{
		j->finished = true;
		return;
	}

	/* the largest piece first: begin() then fails if any would */
	size_t		big = 0;

	for (size_t p = 1; p < j->passes.size(); p++)
		if (j->passes[p].in_n > j->passes[big].in_n)
			big = p;
	std::swap(j->passes[0], j->passes[big]);
	for (const Pass &p : j->passes)
		j->in_cap = std::max(j->in_cap, p.in_n);
	begin_pass(j, 0);
}

/* Set up device state, plan the passes and begin the first; throws on failure. */
void
begin_device(SjGpuThetaJoin *j, const SjJoinOptions *options)
{
	cudaStream_t s;
	unsigned	n_out = j->outer->n,
				n_in = j->inner->n;

	j->timings.start_ms = sjgpu::use_device(options->gpu_device);
	j->budget.set_limit(sjgpu::memory_limit(options->gpu_memory_limit));
	j->sms = sjgpu::multiprocessor_count();
	j->stream.create();
	s = j->stream.get();
	if (n_in > (unsigned) INT_MAX || n_out > (unsigned) INT_MAX)
		throw Error(SJ_ERR_TOO_LARGE, "theta_join: a side of more than %d rows on the GPU", INT_MAX);

	/* program */
	{
		DInstr		h[SJ_THETA_MAX_INSTR];

		for (int i = 0; i < j->ninstr; i++)
		{
			const SjThetaInstr &in = j->prog[i];

			h[i].code = in.op | op_arity(in.op) << 8;
			h[i].arg = in.arg;
			if (in.op == SJ_OP_CONST_F)
			{
				double		f = in.fval;

				memcpy(&h[i].k, &f, sizeof(f));
			}
			else
				h[i].k = in.op == SJ_OP_CONST_B ? (in.ival != 0) : in.ival;
		}
		j->d_prog = DeviceBuffer<DInstr>(&j->budget, j->ninstr, "theta program");
		SJGPU_CHECK(cudaMemcpyAsync(j->d_prog.get(), h, j->ninstr * sizeof(DInstr),
									cudaMemcpyHostToDevice, s));
	}
	j->d_stat = DeviceBuffer<unsigned long long>(&j->budget, 3, "theta counters");
	j->d_err = DeviceBuffer<int>(&j->budget, 1, "theta error flag");
	SJGPU_CHECK(cudaMemsetAsync(j->d_stat.get(), 0, 3 * sizeof(unsigned long long), s));
	SJGPU_CHECK(cudaMemsetAsync(j->d_err.get(), 0, sizeof(int), s));

	plan_passes(j);
	j->stream.synchronize();
}

/*
 * A nested loop spreads over the devices from this many pairs on: 100 K x
 * 100 K (10^10) ran 1.9 times faster on two H200s than on one, where the
 * hash join of 5 M x 5 M and the range joins ran slower (every piece reads
 * and indexes its inputs again).
 */
constexpr double kSpreadMinPairs = 2.0e9;

/* Test hook: every theta join spreads where several devices are named. */
bool		spread_always = false;

}								/* namespace */

/* Test hook (not in sjgpu.h): spread every theta join over the devices. */
extern "C" void
sjgpu_theta_set_test_spread(int always)
{
	spread_always = always != 0;
}

extern "C" SjStatus
sjgpu_theta_begin(const SjThetaTable *left, const SjThetaTable *right,
				  const SjThetaProgram *program, SjThetaStrategy strategy,
				  const SjJoinOptions *options, SjGpuThetaJoin **join,
				  char *errmsg)
{
	SjGpuThetaJoin *j = nullptr;
	SjStatus	st;

	*join = nullptr;
	st = sjgpu::guard(errmsg, [&] {
		double		t0 = now_ms();
		SjStatus	ps;

		if (options == nullptr)
			throw Error(SJ_ERR_INVALID, "theta_join: no options");
		j = new SjGpuThetaJoin();
		memset(&j->timings, 0, sizeof(j->timings));
		ps = sj_theta_plan(program, left, right, strategy, &j->plan, errmsg);
		if (ps != SJ_OK)
			throw Error(ps, "%s", errmsg);
		if (left && right && sjgpu::multi_wanted(options, left->n, right->n, false) &&
			(spread_always ||
			 (j->plan.strategy == SJ_THETA_NESTED_LOOP &&
			  (double) left->n * (double) right->n >= kSpreadMinPairs)))
		{
			/*
			 * Several devices, for the nested loop over many pairs (compute
			 * bound: it scales with the devices): pieces of this join, each
			 * a one-device join.  The hash and range joins are bound by
			 * reading their inputs; every piece would upload and index its
			 * inputs again, so they stay on the first device of the list.
			 */
			j->multi = sjgpu::multi_theta_begin(left, right, program, strategy, options);
			return;
		}
		sj_theta_copy_inputs(program, left, right, j->prog, &j->ninstr, j->lcols,
							 j->rcols, &j->left, &j->right);
		j->outer_left = j->plan.probe_left != 0;
		j->outer = j->outer_left ? &j->left : &j->right;
		j->inner = j->outer_left ? &j->right : &j->left;
		for (int i = 0; i < j->ninstr; i++)
			if (j->prog[i].op == SJ_OP_LOAD_L || j->prog[i].op == SJ_OP_LOAD_R)
			{
				bool		is_outer = (j->prog[i].op == SJ_OP_LOAD_L) == j->outer_left;

				(is_outer ? j->used_outer : j->used_inner)[j->prog[i].arg] = true;
			}
		if (j->plan.strategy == SJ_THETA_HASH)
			for (int k = 0; k < j->plan.nkeys; k++)
			{
				j->used_outer[j->plan.key_probe_col[k]] = true;
				j->used_inner[j->plan.key_build_col[k]] = true;
			}
		if (j->plan.strategy == SJ_THETA_RANGE)
			j->used_inner[j->plan.range_col] = true;
		j->count_only = options->count_only != 0;
		j->cap = options->max_batch_pairs ? options->max_batch_pairs : kDefaultBatch;
		snprintf(j->timings.strategy, sizeof(j->timings.strategy), "%s", j->plan.description);
		if (left->n == 0 || right->n == 0)
			j->finished = true;
		else
			begin_device(j, options);
		j->timings.build_ms = now_ms() - t0 - j->timings.start_ms;
		j->timings.device_bytes = j->budget.peak();
	});
	if (st != SJ_OK)
	{
		delete j;
		return st;
	}
	*join = j;
	return SJ_OK;
}

extern "C" SjStatus
sjgpu_theta_next(SjGpuThetaJoin *j, SjPairBatch *batch, int *done, char *errmsg)
{
	memset(batch, 0, sizeof(*batch));
	*done = 0;
	if (j == nullptr)
	{
		sjgpu::set_errmsg(errmsg, "theta_join: no join");
		return SJ_ERR_INVALID;
	}
	if (j->multi)
	{
		SjStatus	inner = SJ_OK;
		SjStatus	st = sjgpu::guard(errmsg, [&] {
			inner = sjgpu::multi_next(j->multi, batch, done, errmsg);
		});

		return st != SJ_OK ? st : inner;
	}
	if (j->error)
	{
		sjgpu::set_errmsg(errmsg, sj_theta_error_message((SjThetaDataError) j->error));
		return SJ_ERR_DATA;
	}
	SjStatus	st = sjgpu::guard(errmsg, [&] {
		double		t0 = now_ms();
		uint64_t	count = 0;

		if (j->count_only)
		{
			while (!j->finished && !j->error && now_ms() - t0 < kCallMs)
				step(j, &count);
			batch->count = count;
			*done = j->finished;
		}
		else
		{
			while (j->pn - j->ppos < j->cap && !j->finished && !j->error &&
				   now_ms() - t0 < kCallMs)
				step(j, &count);
			size_t		n = std::min(j->pn - j->ppos, j->cap);

			batch->count = n;
			batch->left = n ? j->pl.data() + j->ppos : nullptr;
			batch->right = n ? j->pr.data() + j->ppos : nullptr;
			j->ppos += n;
			*done = j->finished && j->ppos == j->pn;
			launch_ahead(j);
		}
		j->timings.probe_ms += now_ms() - t0;
		j->timings.device_bytes = j->budget.peak();
	});

	if (st == SJ_OK && j->error)
	{
		memset(batch, 0, sizeof(*batch));
		*done = 0;
		sjgpu::set_errmsg(errmsg, sj_theta_error_message((SjThetaDataError) j->error));
		return SJ_ERR_DATA;
	}
	if (st != SJ_OK)
	{
		memset(batch, 0, sizeof(*batch));
		*done = 0;
		return st;
	}
	j->timings.batches++;
	return SJ_OK;
}

extern "C" void
sjgpu_theta_timings(const SjGpuThetaJoin *j, SjTimings *timings)
{
	if (j && j->multi)
		sjgpu::multi_timings(j->multi, timings);
	else if (j)
		*timings = j->timings;
	else
		memset(timings, 0, sizeof(*timings));
}

extern "C" SjThetaDataError
sjgpu_theta_data_error(const SjGpuThetaJoin *j)
{
	if (j && j->multi)
		return sjgpu::multi_theta_data_error(j->multi);
	return j ? (SjThetaDataError) j->error : SJ_THETA_OK;
}

extern "C" void
sjgpu_theta_end(SjGpuThetaJoin *j)
{
	if (j && j->multi)
	{
		sjgpu::multi_end(j->multi);
		delete j;
		return;
	}
	/* a launch ahead may still run: let it end before its buffers go */
	if (j && j->inflight != kFlyNone)
		(void) cudaStreamSynchronize(j->stream.get());
	delete j;
}
