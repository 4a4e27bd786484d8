// A host program around benchmarks/kernels/vecadd.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen vecadd` (n = 65536, block 256), checked results, exit 1 on error.
// An optional argument sets n (benchmarks/bench_trace.py traces larger launches).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../kernels/vecadd.cu"

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 65536, block = 256;
    if (n <= 0) {
        fprintf(stderr, "vecadd_app: n must be positive, got %s\n", argv[1]);
        return 1;
    }
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
