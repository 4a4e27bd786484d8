// Shared memory: the cost of an n-way bank conflict and the achieved bandwidth.
#include "common.cuh"

// One warp. Lane l walks the word s[l * stride_words] again and again (the word holds its
// own index, so each load depends on the last): with 32 banks of 4-byte words a stride of
// n words (n a power of two up to 32) puts n lanes on one bank, an n-way conflict.
// out[0] = cycles of `iters` dependent warp-wide loads, read by lane 0.
extern "C" __global__ void smem_conflict(int stride_words, int iters, long long* out) {
  __shared__ unsigned s[1024];
  volatile __shared__ unsigned sink[32];
  for (unsigned i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = i;
  __syncthreads();
  unsigned j = (threadIdx.x * (unsigned)stride_words) & 1023u;
  j = s[j];
  sink[threadIdx.x] = j;
  __syncwarp();
  long long t0 = clock_after_memory();
  for (int i = 0; i < iters; ++i) j = s[j];
  sink[threadIdx.x] = j;
  __syncwarp();
  long long t1 = clock_after_memory();
  if (threadIdx.x == 0) {
    out[0] = t1 - t0;
    out[1] = sink[0];
  }
}

// Bandwidth: every thread reads float4 elements of a 16 KiB shared array, consecutive
// lanes on consecutive elements (no conflict), `iters` times. The host times the launch
// with events: bytes = blocks x threads x iters x 16.
extern "C" __global__ void smem_bandwidth(int iters, float* sink) {
  __shared__ float4 s[1024];
  for (unsigned i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
  __syncthreads();
  float acc = 0.0f;
  unsigned k = threadIdx.x;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    float4 v = s[(k + 32u * (unsigned)i) & 1023u];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1.2345f) sink[0] = acc;
}

// Load/store pipe: every thread issues 4 independent LDS.32 an iteration (lanes on
// consecutive words, no conflict: one wavefront each; the array read through a volatile
// pointer so that none is hoisted or merged), and 4 integer adds. A GPU whose data path moves
// a wavefront a cycle then runs at its pipe's issue rate: warp-instructions = blocks x
// threads x iters x 4 / 32. The host times the launch with events.
extern "C" __global__ void smem_lds32(int iters, unsigned* sink) {
  __shared__ unsigned s[1024];
  for (unsigned i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = i;
  __syncthreads();
  volatile unsigned* v = s;
  unsigned a = 0, b = 0, c = 0, d = 0;
  unsigned k = threadIdx.x & 31u;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    unsigned base = (k + 128u * (unsigned)i) & 1023u;
    a += v[base];
    b += v[base + 32u];
    c += v[base + 64u];
    d += v[base + 96u];
  }
  if ((a ^ b ^ c ^ d) == 0xFFFFFFFFu) sink[0] = a;
}
