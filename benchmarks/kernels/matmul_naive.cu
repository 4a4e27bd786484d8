// gpuperfpredict matMul_gpu and matMul_gpu_uncoalesced: P = M * N, one element per thread.
extern "C" __global__ void matmul_naive(const float *M, const float *N, float *P, int W)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < W && j < W) {
        float s = 0.0f;
        for (int k = 0; k < W; ++k) s += M[i * W + k] * N[k * W + j];
        P[i * W + j] = s;
    }
}
extern "C" __global__ void matmul_naive_uncoalesced(const float *M, const float *N, float *P, int W)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < W && j < W) {
        float s = 0.0f;
        for (int k = 0; k < W; ++k) s += M[j * W + k] * N[k * W + i];
        P[j * W + i] = s;
    }
}
