// A host program around benchmarks/kernels/histogram.cu for `placement trace` (tests/test_sanitizer_gpu.py):
// the size and block of `placement bench gen histogram` (n = 65536, 256 bins, block 256). Its input is the
// generator's (argv[1]: n little-endian uint32 bin indices, written by the test from the generator's seed), so
// that the traced atomics fall on the generator's bins. Checked results, exit 1 on error.
#include <cstdio>
#include <vector>

#include "../kernels/histogram.cu"

int main(int argc, char** argv) {
    const int n = 65536, bins = 256, block = 256;
    std::vector<unsigned> hdata(n), hbins(bins);
    FILE* f = argc > 1 ? fopen(argv[1], "rb") : nullptr;
    if (!f || fread(hdata.data(), sizeof(unsigned), n, f) != (size_t)n) {
        fprintf(stderr, "histogram_app: cannot read %d bin indices from %s\n", n, argc > 1 ? argv[1] : "(no file)");
        return 1;
    }
    fclose(f);
    unsigned *data, *dbins;
    if (cudaMalloc(&data, n * sizeof(unsigned)) || cudaMalloc(&dbins, bins * sizeof(unsigned))) {
        fprintf(stderr, "histogram_app: cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(data, hdata.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice);
    cudaMemset(dbins, 0, bins * sizeof(unsigned));
    histogram<<<(n + block - 1) / block, block>>>(data, dbins, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "histogram_app: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(hbins.data(), dbins, bins * sizeof(unsigned), cudaMemcpyDeviceToHost);
    std::vector<unsigned> want(bins, 0);
    for (int i = 0; i < n; ++i) want[hdata[i] % bins]++;
    for (int b = 0; b < bins; ++b)
        if (hbins[b] != want[b]) {
            fprintf(stderr, "histogram_app: bins[%d] = %u, expected %u\n", b, hbins[b], want[b]);
            return 1;
        }
    return 0;
}
