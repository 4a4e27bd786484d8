// __syncthreads(): a block of 1..32 warps passes `iters` barriers; thread 0 reads
// clock64() around them. out[block] = cycles.
extern "C" __global__ void syncthreads_cost(int iters, long long* out) {
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
}
