// Atomics: every thread adds 1 to a counter `iters` times, either its own (distinct
// addresses) or one for the whole grid (same address). The next atomic's address depends
// on the last one's return value (v >> 31 is 0 for any count the host allows), so one
// warp's atomics are dependent. Thread 0 of each block reads clock64() around the loop
// (out[block] = cycles); the host also times the launch with events (throughput).

extern "C" __global__ void atomic_global(unsigned* counters, int same, int iters, long long* out) {
  unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned* p = counters + (same ? 0u : tid);
  unsigned v = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) v = atomicAdd(p + (v >> 31), 1u);
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (v == 0xFFFFFFFFu) counters[1] = v;
}

// The same on a shared-memory counter per thread, or one per block (blockDim.x <= 1024).
extern "C" __global__ void atomic_shared(int same, int iters, long long* out, unsigned* sink) {
  __shared__ unsigned s[1024];
  s[threadIdx.x] = 0;
  __syncthreads();
  unsigned* p = s + (same ? 0u : threadIdx.x);
  unsigned v = 0;
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) v = atomicAdd(p + (v >> 31), 1u);
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = t1 - t0;
    sink[blockIdx.x] = s[0] + v;
  }
}

// The L2's atomic units (benchmarks/atomic_contention.py, cachesim/atomics.py): every warp of the grid adds 1
// `iters` times to the same 32 words, lane l to word 0 of the l-th of `sectors` 32-byte sectors (all 32 lanes on one
// word with sectors = 1, on 32 sectors of 1 KiB with sectors = 32), the result unused (a reduction, as a histogram's
// atomicAdd). Timed with events: the 32 sectors run as many times faster than the one word as units share the KiB.
extern "C" __global__ void atomic_global_spread(unsigned* counters, int sectors, int iters) {
  unsigned* p = counters + ((threadIdx.x & 31u) % (unsigned)sectors) * 8u;
  for (int i = 0; i < iters; ++i) atomicAdd(p, 1u);
}
