// Dependent pointer chases, one thread, timed with clock64(): the random walk and the
// varying-size random walk of Lemeire et al. (Sec. VI-B and VI-C, Eq. 6).
//
// a[j] holds the index (in 32-bit words) of the next node; the host lays out a random
// cyclic permutation of nodes `stride` bytes apart (or, for a stride sweep, nodes in
// order). Before timing, the block's threads read the first `warm_words` words with the
// same kind of load as the walk (the lines then sit in this SM's L1 / texture / constant
// cache and in the L2); thread 0 then walks `settle` hops untimed and `hops` hops timed.
// out[0] = cycles of the timed hops, out[1] = the last index (keeps the walk alive).
#include "common.cuh"

struct PlainLoad {  // ld.global: cached in the L1 on Volta and later
  const unsigned* a;
  __device__ __forceinline__ unsigned operator()(unsigned i) const { return a[i]; }
};
struct LdgLoad {  // the read-only data path (__ldg: LDG.CONSTANT)
  const unsigned* a;
  __device__ __forceinline__ unsigned operator()(unsigned i) const { return __ldg(a + i); }
};
struct CgLoad {  // ld.global.cg: cached in the L2 only
  const unsigned* a;
  __device__ __forceinline__ unsigned operator()(unsigned i) const { return __ldcg(a + i); }
};
struct TexLoad {  // tex1Dfetch over linear memory
  cudaTextureObject_t t;
  __device__ __forceinline__ unsigned operator()(unsigned i) const { return tex1Dfetch<unsigned>(t, i); }
};

// 64 KiB: the whole constant bank.
__constant__ unsigned const_nodes[16384];
struct ConstLoad {  // LDC with a register index
  __device__ __forceinline__ unsigned operator()(unsigned i) const { return const_nodes[i]; }
};

template <class Load>
__device__ __forceinline__ void chase(Load load, unsigned warm_words, unsigned start, int settle, int hops,
                                      long long* out) {
  volatile __shared__ unsigned sink;
  unsigned acc = 0;
  for (unsigned i = threadIdx.x; i < warm_words; i += blockDim.x) acc += load(i);
  if (acc == 0xFFFFFFFFu) out[2] = acc;  // keeps the warm-up loads
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned j = start;
  for (int i = 0; i < settle; ++i) j = load(j);
  sink = j;
  long long t0 = clock_after_memory();
#pragma unroll 8
  for (int i = 0; i < hops; ++i) j = load(j);
  sink = j;
  long long t1 = clock_after_memory();
  out[0] = t1 - t0;
  out[1] = sink;
}

extern "C" __global__ void chase_ld(const unsigned* a, unsigned warm_words, unsigned start, int settle, int hops,
                                    long long* out) {
  chase(PlainLoad{a}, warm_words, start, settle, hops, out);
}

extern "C" __global__ void chase_ldg(const unsigned* __restrict__ a, unsigned warm_words, unsigned start, int settle,
                                     int hops, long long* out) {
  chase(LdgLoad{a}, warm_words, start, settle, hops, out);
}

extern "C" __global__ void chase_ldcg(const unsigned* a, unsigned warm_words, unsigned start, int settle, int hops,
                                      long long* out) {
  chase(CgLoad{a}, warm_words, start, settle, hops, out);
}

extern "C" __global__ void chase_tex(cudaTextureObject_t t, unsigned warm_words, unsigned start, int settle,
                                     int hops, long long* out) {
  chase(TexLoad{t}, warm_words, start, settle, hops, out);
}

extern "C" __global__ void chase_const(unsigned warm_words, unsigned start, int settle, int hops, long long* out) {
  chase(ConstLoad{}, warm_words, start, settle, hops, out);
}

// Shared memory: the block copies `words` words of `a` into dynamic shared memory, then
// thread 0 walks them (LDS).
extern "C" __global__ void chase_shared(const unsigned* a, unsigned words, unsigned start, int settle, int hops,
                                        long long* out) {
  extern __shared__ unsigned s[];
  volatile __shared__ unsigned sink;
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = a[i];
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned j = start;
  for (int i = 0; i < settle; ++i) j = s[j];
  sink = j;
  long long t0 = clock_after_memory();
#pragma unroll 8
  for (int i = 0; i < hops; ++i) j = s[j];
  sink = j;
  long long t1 = clock_after_memory();
  out[0] = t1 - t0;
  out[1] = sink;
}

// 64-bit pointers: each node holds the address of the next, no index arithmetic between
// loads (the hardware's load-to-use latency alone).
extern "C" __global__ void chase_ptr64(const unsigned long long* first, unsigned long long warm_words, int settle,
                                       int hops, long long* out) {
  volatile __shared__ unsigned long long sink;
  unsigned long long acc = 0;
  for (unsigned long long i = threadIdx.x; i < warm_words; i += blockDim.x) acc += first[i];
  if (acc == ~0ull) out[2] = (long long)acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  const unsigned long long* p = first;
  for (int i = 0; i < settle; ++i) p = (const unsigned long long*)*p;
  sink = (unsigned long long)p;
  long long t0 = clock_after_memory();
#pragma unroll 8
  for (int i = 0; i < hops; ++i) p = (const unsigned long long*)*p;
  sink = (unsigned long long)p;
  long long t1 = clock_after_memory();
  out[0] = t1 - t0;
  out[1] = (long long)sink;
}
