// SHOC Scan, first kernel reduce<float, 256>: each block sums its region of g_idata.
#define BLOCK 256
extern "C" __global__ void scan(const float *in, float *isums, const int n)
{
    __shared__ float sdata[BLOCK];
    int region_size = ((n / gridDim.x) / 4) * 4;
    int block_start = blockIdx.x * region_size;
    int block_stop = (blockIdx.x == gridDim.x - 1) ? n : block_start + region_size;
    int i = block_start + threadIdx.x;
    float sum = 0.0f;
    while (i < block_stop) { sum += in[i]; i += BLOCK; }
    sdata[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned int s = BLOCK / 2; s > 32; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        volatile float *v = sdata;
        v[threadIdx.x] += v[threadIdx.x + 32]; v[threadIdx.x] += v[threadIdx.x + 16];
        v[threadIdx.x] += v[threadIdx.x + 8];  v[threadIdx.x] += v[threadIdx.x + 4];
        v[threadIdx.x] += v[threadIdx.x + 2];  v[threadIdx.x] += v[threadIdx.x + 1];
    }
    if (threadIdx.x == 0) isums[blockIdx.x] = sdata[0];
}
