// Achieved bandwidths (Lemeire et al. Sec. VI-A, the copy kernel): DRAM read, write and
// copy over a buffer far larger than the L2, and the L2 read over one that fits it. Each
// thread moves 16-byte float4 elements in a grid-stride loop; the host times the launch
// with events and divides the bytes moved by the time.

extern "C" __global__ void bw_read(const float4* __restrict__ a, unsigned long long n, float* sink) {
  float acc = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    float4 v = a[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1.2345f) sink[0] = acc;  // never true for the host's data; keeps the loads
}

extern "C" __global__ void bw_write(float4* a, unsigned long long n, float value) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    a[i] = make_float4(value, value, value, value);
}

extern "C" __global__ void bw_copy(const float4* __restrict__ a, float4* __restrict__ b, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    b[i] = a[i];
}

// The L2: `passes` grid-stride passes over an L2-resident buffer with ld.global.cg (the
// L1 bypassed, so every load is served by the L2).
extern "C" __global__ void bw_l2_read(const float4* a, unsigned long long n, int passes, float* sink) {
  float acc = 0.0f;
  for (int p = 0; p < passes; ++p)
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
      float4 v = __ldcg(a + i);
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == 1.2345f) sink[0] = acc;
}
