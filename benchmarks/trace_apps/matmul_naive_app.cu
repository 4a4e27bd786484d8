// A host program around benchmarks/kernels/matmul_naive.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen matmul_naive` (W = 128, 16 x 16 blocks), checked results, exit 1
// on error.
#include <cstdio>
#include <vector>

#include "../kernels/matmul_naive.cu"

int main() {
    const int W = 128, tile = 16;
    const size_t bytes = (size_t)W * W * sizeof(float);
    float *M, *N, *P;
    if (cudaMalloc(&M, bytes) || cudaMalloc(&N, bytes) || cudaMalloc(&P, bytes)) {
        fprintf(stderr, "matmul_naive_app: cudaMalloc failed\n");
        return 1;
    }
    std::vector<float> ones((size_t)W * W, 1.0f), hP((size_t)W * W);
    cudaMemcpy(M, ones.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(N, ones.data(), bytes, cudaMemcpyHostToDevice);
    matmul_naive<<<dim3(W / tile, W / tile), dim3(tile, tile)>>>(M, N, P, W);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "matmul_naive_app: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(hP.data(), P, bytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < W * W; ++i)
        if (hP[i] != (float)W) {
            fprintf(stderr, "matmul_naive_app: P[%d] = %g, expected %d\n", i, hP[i], W);
            return 1;
        }
    return 0;
}
