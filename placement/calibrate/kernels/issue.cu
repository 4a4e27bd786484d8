// The issue model (Lemeire et al. Sec. V: CPI with occupancy; Hong & Kim's Issue_cycles):
// every thread runs ILP independent chains of `iters` dependent FP32 FMAs (or INT
// multiply-adds). One block per SM; thread 0 reads clock64() around the loop after a
// barrier, so out[block] = the SM's cycles for warps x iters x ILP warp-instructions.
// With one warp and ILP 1 a step costs the pipeline's latency; with many warps the SM's
// issue rate (cycles per warp-instruction) shows.

template <int ILP>
__device__ __forceinline__ void fp32_chains(int iters, float a, float b, float* sink, long long* out) {
  float x[ILP];
#pragma unroll
  for (int k = 0; k < ILP; ++k) x[k] = (float)(threadIdx.x + k);
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < ILP; ++k) x[k] = fmaf(x[k], a, b);
  }
  __syncthreads();
  long long t1 = clock64();
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < ILP; ++k) s += x[k];
  if (s == 1.2345f) sink[0] = s;
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
}

template <int ILP>
__device__ __forceinline__ void int_chains(int iters, unsigned a, unsigned b, unsigned* sink, long long* out) {
  unsigned x[ILP];
#pragma unroll
  for (int k = 0; k < ILP; ++k) x[k] = threadIdx.x + k;
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < ILP; ++k) x[k] = x[k] * a + b;
  }
  __syncthreads();
  long long t1 = clock64();
  unsigned s = 0;
#pragma unroll
  for (int k = 0; k < ILP; ++k) s += x[k];
  if (s == 12345u) sink[0] = s;
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
}

extern "C" __global__ void issue_fp32_ilp1(int iters, float a, float b, float* sink, long long* out) {
  fp32_chains<1>(iters, a, b, sink, out);
}
extern "C" __global__ void issue_fp32_ilp4(int iters, float a, float b, float* sink, long long* out) {
  fp32_chains<4>(iters, a, b, sink, out);
}
extern "C" __global__ void issue_int_ilp1(int iters, unsigned a, unsigned b, unsigned* sink, long long* out) {
  int_chains<1>(iters, a, b, sink, out);
}
extern "C" __global__ void issue_int_ilp4(int iters, unsigned a, unsigned b, unsigned* sink, long long* out) {
  int_chains<4>(iters, a, b, sink, out);
}

// The double-precision units' throughput (compute.fp64_per_cycle): every thread runs
// FP64_CHAINS independent chains of `iters` dependent DFMAs, enough in flight over 8
// blocks of 256 threads an SM that the units, not their latency, bound the rate on every
// GPU (DFMA latency 8 cycles on GV100 to GH100, and at 2 results a clock an SM on GA10x a
// warp's DFMA occupies the units 16 cycles). Timed with events: DFMA results per second.
#define FP64_CHAINS 8
extern "C" __global__ void dfma_throughput(int iters, double a, double b, double* sink) {
  double x[FP64_CHAINS];
#pragma unroll
  for (int k = 0; k < FP64_CHAINS; ++k) x[k] = (double)(threadIdx.x + k);
#pragma unroll 4
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < FP64_CHAINS; ++k) x[k] = fma(x[k], a, b);
  }
  double s = 0.0;
#pragma unroll
  for (int k = 0; k < FP64_CHAINS; ++k) s += x[k];
  if (s == 1.2345) sink[0] = s;
}
