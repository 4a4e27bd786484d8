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
