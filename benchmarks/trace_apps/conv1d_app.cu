// A host program around benchmarks/kernels/conv1d.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen conv1d` (n = 65536, mask_width = 7, block 256; argv[1], if given,
// another n: benchmarks/gpu_session.sh traces 2^22 whole and as 2 waves of blocks), checked results, exit 1 on
// error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../kernels/conv1d.cu"

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 65536, mask_width = 7, block = 256;
    if (n < 1) {
        fprintf(stderr, "conv1d_app: n must be a positive number, got %s\n", argv[1]);
        return 1;
    }
    float *in, *mask, *out;
    if (cudaMalloc(&in, (n + mask_width - 1) * sizeof(float)) || cudaMalloc(&mask, mask_width * sizeof(float)) ||
        cudaMalloc(&out, n * sizeof(float))) {
        fprintf(stderr, "conv1d_app: cudaMalloc failed\n");
        return 1;
    }
    std::vector<float> hin(n + mask_width - 1, 1.0f), hmask(mask_width), hout(n);
    for (int j = 0; j < mask_width; ++j) hmask[j] = (float)(j + 1);
    cudaMemcpy(in, hin.data(), hin.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(mask, hmask.data(), hmask.size() * sizeof(float), cudaMemcpyHostToDevice);
    conv1d<<<(n + block - 1) / block, block>>>(in, mask, out, mask_width, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "conv1d_app: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(hout.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
    const float want = mask_width * (mask_width + 1) / 2.0f;
    for (int i = 0; i < n; ++i)
        if (hout[i] != want) {
            fprintf(stderr, "conv1d_app: out[%d] = %g, expected %g\n", i, hout[i], want);
            return 1;
        }
    return 0;
}
