// Tiled matrix multiplication P = M * N (Width x Width, Width a multiple of the tile), the
// textbook kernel of Kirk & Hwu that gpuperfpredict measures as matMul_gpu_sharedmem: blocks
// of TILE x TILE threads, each phase copies one TILE x TILE tile of M and of N into shared
// memory (Mds, Nds), __syncthreads(), TILE multiply-adds from shared memory, __syncthreads().
// One kernel per tile edge (8, 16, 32).
template <int TILE>
__device__ void matmul_tiled_body(const float *M, const float *N, float *P, int Width)
{
    __shared__ float Mds[TILE][TILE];
    __shared__ float Nds[TILE][TILE];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int Row = blockIdx.y * TILE + ty;
    const int Col = blockIdx.x * TILE + tx;
    float Pvalue = 0.0f;
    for (int m = 0; m < Width / TILE; ++m) {
        Mds[ty][tx] = M[Row * Width + m * TILE + tx];
        Nds[ty][tx] = N[(m * TILE + ty) * Width + Col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();
    }
    P[Row * Width + Col] = Pvalue;
}
extern "C" __global__ void matmul_tiled_8(const float *M, const float *N, float *P, int Width)
{
    matmul_tiled_body<8>(M, N, P, Width);
}
extern "C" __global__ void matmul_tiled_16(const float *M, const float *N, float *P, int Width)
{
    matmul_tiled_body<16>(M, N, P, Width);
}
extern "C" __global__ void matmul_tiled_32(const float *M, const float *N, float *P, int Width)
{
    matmul_tiled_body<32>(M, N, P, Width);
}
