// SHOC Reduction, reduce<float, 256>: sdata in shared memory.
#define BLOCK 256
extern "C" __global__ void reduction(const float *g_idata, float *g_odata, unsigned int n)
{
    __shared__ float sdata[BLOCK];
    const unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (BLOCK * 2) + tid;
    const unsigned int gridSize = BLOCK * 2 * gridDim.x;
    sdata[tid] = 0;
    while (i < n) { sdata[tid] += g_idata[i] + g_idata[i + BLOCK]; i += gridSize; }
    __syncthreads();
    if (BLOCK >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (BLOCK >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (BLOCK >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) {
        volatile float *s = sdata;
        s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; s[tid] += s[tid + 8];
        s[tid] += s[tid + 4]; s[tid] += s[tid + 2]; s[tid] += s[tid + 1];
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
