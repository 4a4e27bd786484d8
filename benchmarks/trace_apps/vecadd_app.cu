// A host program around benchmarks/kernels/vecadd.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen vecadd` (n = 65536, block 256), checked results, exit 1 on error.
#include <cstdio>
#include <vector>

#include "../kernels/vecadd.cu"

int main() {
    const int n = 65536, block = 256;
    const size_t bytes = n * sizeof(float);
    float *a, *b, *v;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes) || cudaMalloc(&v, bytes)) {
        fprintf(stderr, "vecadd_app: cudaMalloc failed\n");
        return 1;
    }
    std::vector<float> ha(n), hb(n), hv(n);
    for (int i = 0; i < n; ++i) ha[i] = (float)i, hb[i] = 2.0f * i;
    cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice);
    vecadd<<<(n + block - 1) / block, block>>>(a, b, v, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "vecadd_app: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(hv.data(), v, bytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i)
        if (hv[i] != 3.0f * i) {
            fprintf(stderr, "vecadd_app: v[%d] = %g, expected %g\n", i, hv[i], 3.0f * i);
            return 1;
        }
    return 0;
}
