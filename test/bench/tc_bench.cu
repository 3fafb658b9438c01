/*
 * tc_bench.cu
 *		Measures the shapes of the tensor-core filter kernel (cuda/eps_tc.cu)
 *		on a mixture of Gaussians, cosine metric, as the GPU eps_join
 *		prepares it: achieved TFLOP/s beside the card's peak, and the kept
 *		pairs, which every shape must agree on (count and key sum).
 *
 *	nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -fmad=false \
 *		-Icuda -Isrc/engine test/bench/tc_bench.cu -o tc_bench
 *	./tc_bench [dim ...]		(default 128 384 1536)
 *
 * A benchmark, not a test: the answers are checked by test/engine and
 * test/diff; this only refuses to time a shape whose kept pairs differ.
 */
#include "../../cuda/eps_tc.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sjgpu
{
/* The library's check_cuda throws; a benchmark stops. */
void
check_cuda(cudaError_t err, const char *what, const char *file, int line)
{
	if (err != cudaSuccess)
	{
		fprintf(stderr, "%s: %s (%s:%d)\n", what, cudaGetErrorString(err), file, line);
		exit(1);
	}
}
}								/* namespace sjgpu */

using namespace sjgpu;

namespace tcbench
{

/* A deterministic standard normal (xorshift + Box-Muller). */
struct Rng
{
	uint64_t	s;
	double
	uniform()
	{
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		return ((s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	}
	double
	normal()
	{
		return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
	}
};

/* n rows (SoA, coords[k * n + i]) around ncent unit centres, spread s. */
std::vector<double>
mixture(uint32_t n, int dim, int ncent, double s, uint64_t seed)
{
	Rng			r{seed};
	std::vector<double> cent((size_t) ncent * dim), out((size_t) n * dim);

	for (int c = 0; c < ncent; c++)
	{
		double		nn = 0;

		for (int k = 0; k < dim; k++)
			nn += (cent[(size_t) c * dim + k] = r.normal()) * cent[(size_t) c * dim + k];
		for (int k = 0; k < dim; k++)
			cent[(size_t) c * dim + k] /= sqrt(nn);
	}
	for (uint32_t i = 0; i < n; i++)
	{
		int			c = (int) (r.uniform() * ncent) % ncent;

		for (int k = 0; k < dim; k++)
			out[(size_t) k * n + i] = cent[(size_t) c * dim + k] + s * r.normal() / sqrt(dim);
	}
	return out;
}

struct Side
{
	double	   *coords;
	double	   *norms;
	TcSide		tc;
};

/* Upload and convert one side, centred on mean. */
Side
prepare(const std::vector<double> &h, uint32_t n, int dim, const TcParams &p,
		const double *mean)
{
	Side		s;

	SJGPU_CHECK(cudaMalloc(&s.coords, h.size() * sizeof(double)));
	SJGPU_CHECK(cudaMemcpy(s.coords, h.data(), h.size() * sizeof(double),
						   cudaMemcpyHostToDevice));
	SJGPU_CHECK(cudaMalloc(&s.norms, n * sizeof(double)));
	tc_norms(s.coords, n, dim, s.norms, 0);
	SJGPU_CHECK(cudaMalloc(&s.tc.rows, (size_t) n * p.pdim * sizeof(__half)));
	SJGPU_CHECK(cudaMalloc(&s.tc.pn, n * sizeof(sjgpu::TcBound)));
	if (mean)
		tc_convert(s.coords, n, s.norms, mean, p, &s.tc, 0);
	return s;
}

struct Result
{
	unsigned long long count,
				sum;
	double		ms;
};

unsigned long long *d_keys,
		   *d_count;
constexpr unsigned long long kCap = 1ull << 26;

/* Sum of the kept keys (order-free) and their number. */
__global__ void
keysum_kernel(const unsigned long long *keys, unsigned long long n, unsigned long long *out)
{
	unsigned long long s = 0;

	for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (unsigned long long) gridDim.x * blockDim.x)
		s += keys[i];
	atomicAdd(out, s);
}

template <class S, bool WG>
Result
run_shape(const Side &pr, const Side &bu, const TcParams &p, uint32_t group = 1)
{
	std::vector<float> ms;
	cudaEvent_t e0,
				e1;
	Result		r;
	unsigned long long *d_sum;

	SJGPU_CHECK(cudaEventCreate(&e0));
	SJGPU_CHECK(cudaEventCreate(&e1));
	for (int it = 0; it < 3 + 11; it++)
	{
		SJGPU_CHECK(cudaMemset(d_count, 0, sizeof(*d_count)));
		SJGPU_CHECK(cudaEventRecord(e0));
		if constexpr (WG)
			launch_wg_filter<S>(pr.tc, bu.tc, p, false, 0, pr.tc.n, d_keys, kCap, d_count, 0,
								group);
		else
			launch_filter<S>(pr.tc, bu.tc, p, false, 0, pr.tc.n, d_keys, kCap, d_count, 0, group);
		SJGPU_CHECK(cudaEventRecord(e1));
		SJGPU_CHECK(cudaEventSynchronize(e1));
		float		t;

		SJGPU_CHECK(cudaEventElapsedTime(&t, e0, e1));
		if (it >= 3)
			ms.push_back(t);
	}
	std::sort(ms.begin(), ms.end());
	r.ms = ms[ms.size() / 2];
	SJGPU_CHECK(cudaMemcpy(&r.count, d_count, sizeof(r.count), cudaMemcpyDeviceToHost));
	SJGPU_CHECK(cudaMalloc(&d_sum, sizeof(*d_sum)));
	SJGPU_CHECK(cudaMemset(d_sum, 0, sizeof(*d_sum)));
	keysum_kernel<<<1024, 256>>>(d_keys, std::min(r.count, kCap), d_sum);
	SJGPU_CHECK(cudaMemcpy(&r.sum, d_sum, sizeof(r.sum), cudaMemcpyDeviceToHost));
	SJGPU_CHECK(cudaFree(d_sum));
	return r;
}

/* Time shape S (wgmma when WG) and print it beside the card's peak. */
template <class S, bool WG>
void
report(const char *name, const Side &pr, const Side &bu, const TcParams &p,
	   const Result *ref, double peak, uint32_t group = 1)
{
	cudaFuncAttributes fa;
	Result		r = run_shape<S, WG>(pr, bu, p, group);
	double		flop = 2.0 * pr.tc.n * bu.tc.n * p.pdim;
	char		shape[64];
	bool		bad = ref->count != r.count || ref->sum != r.sum;

	if constexpr (WG)
	{
		SJGPU_CHECK(cudaFuncGetAttributes(&fa, wg_filter_kernel<false, S>));
		snprintf(shape, sizeof(shape), "128x%3d wgmma k%2d s%d b%d", S::BN, S::KS, S::ST,
				 S::MINB);
	}
	else
	{
		SJGPU_CHECK(cudaFuncGetAttributes(&fa, filter_kernel<false, S>));
		snprintf(shape, sizeof(shape), "%3dx%3d w%2dx%2d k%2d s%d b%d", S::BM, S::BN, S::WM,
				 S::WN, S::KS, S::ST, S::MINB);
	}
	printf("  %-7s g%-2u %-28s regs %3d spill %3zu  %8.3f ms  %6.1f TFLOP/s"
		   "  %4.1f%% of peak  kept %llu%s\n",
		   name, group, shape, fa.numRegs, fa.localSizeBytes, r.ms, flop / r.ms / 1e9,
		   100.0 * flop / r.ms / 1e9 / peak, r.count, bad ? "  MISMATCH" : "");
	if (bad)
		exit(2);
}

}								/* namespace tcbench */

using namespace tcbench;

int
main(int argc, char **argv)
{
	std::vector<int> dims;
	cudaDeviceProp prop;
	double		peak;

	for (int i = 1; i < argc; i++)
		dims.push_back(atoi(argv[i]));
	if (dims.empty())
		dims = {128, 384, 1536};
	SJGPU_CHECK(cudaGetDeviceProperties(&prop, 0));
	/* dense FP16 tensor peak of the SXM H100/H200: 989.4 TFLOP/s */
	peak = 989.4;
	printf("%s, %d SMs; peak dense FP16 %.1f TFLOP/s\n", prop.name,
		   prop.multiProcessorCount, peak);
	SJGPU_CHECK(cudaMalloc(&d_keys, kCap * sizeof(unsigned long long)));
	SJGPU_CHECK(cudaMalloc(&d_count, sizeof(unsigned long long)));

	for (int dim : dims)
	{
		const uint32_t nb = 131072,
					np = 16384;
		std::vector<double> hb = mixture(nb, dim, 1000, 0.2, 42);
		std::vector<double> hp = mixture(np, dim, 1000, 0.2, 42);	/* same centres */
		TcParams	p;
		double	   *mean,
				   *maxabs,
					hmax = 0;

		tc_params(dim, SJ_METRIC_COSINE, 0.05, 1.0, &p);
		Side		bu = prepare(hb, nb, dim, p, nullptr);

		SJGPU_CHECK(cudaMalloc(&mean, dim * sizeof(double)));
		SJGPU_CHECK(cudaMalloc(&maxabs, sizeof(double)));
		SJGPU_CHECK(cudaMemset(maxabs, 0, sizeof(double)));
		tc_mean(bu.coords, nb, dim, bu.norms, mean, 0);
		tc_maxabs(bu.coords, nb, dim, bu.norms, mean, maxabs, 0);
		SJGPU_CHECK(cudaMemcpy(&hmax, maxabs, sizeof(double), cudaMemcpyDeviceToHost));
		tc_params(dim, SJ_METRIC_COSINE, 0.05, hmax, &p);
		tc_convert(bu.coords, nb, bu.norms, mean, p, &bu.tc, 0);
		Side		pr = prepare(hp, np, dim, p, mean);

		SJGPU_CHECK(cudaDeviceSynchronize());
		printf("d = %d (padded %d): %u x %u pairs, cosine eps 0.05\n", dim, p.pdim, np, nb);
		Result		ref = run_shape<TcShapeOld, false>(pr, bu, p);

		for (uint32_t g : {1u, 16u})
		{
			report<TcShapeOld, false>("mma-old", pr, bu, p, &ref, peak, g);
			report<TcShapeMma, false>("mma", pr, bu, p, &ref, peak, g);
			if (!tc_wgmma())
				continue;
			report<WgShapeMain, true>("wgmma", pr, bu, p, &ref, peak, g);
		}
		printf("  tc_filter (the engine's choice: %s)\n", tc_wgmma() ? "wgmma" : "mma.sync");
		for (Side *s : {&bu, &pr})
		{
			cudaFree(s->coords);
			cudaFree(s->norms);
			cudaFree(s->tc.rows);
			cudaFree(s->tc.pn);
		}
		cudaFree(mean);
		cudaFree(maxabs);
	}
	return 0;
}
