// A host program around benchmarks/kernels/matvec.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen matvec` (1024 x 1024, block 256), checked results, exit 1 on error.
#include <cstdio>
#include <vector>

#include "../kernels/matvec.cu"

int main() {
    const int rows = 1024, cols = 1024, block = 256;
    float *A, *x, *y;
    if (cudaMalloc(&A, (size_t)rows * cols * sizeof(float)) || cudaMalloc(&x, cols * sizeof(float)) ||
        cudaMalloc(&y, rows * sizeof(float))) {
        fprintf(stderr, "matvec_app: cudaMalloc failed\n");
        return 1;
    }
    std::vector<float> hA((size_t)rows * cols, 1.0f), hx(cols, 2.0f), hy(rows);
    cudaMemcpy(A, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice);
    matvec<<<(rows + block - 1) / block, block>>>(A, x, y, rows, cols);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "matvec_app: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(hy.data(), y, rows * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < rows; ++i)
        if (hy[i] != 2.0f * cols) {
            fprintf(stderr, "matvec_app: y[%d] = %g, expected %g\n", i, hy[i], 2.0f * cols);
            return 1;
        }
    return 0;
}
