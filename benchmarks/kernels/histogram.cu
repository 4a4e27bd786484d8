// Textbook histogram with global atomics, one element per thread: bins[data[i]] += 1.
// data holds bin indices (0 <= data[i] < number of bins); bins is written only by the atomic
// (the placement tool may privatize it into shared memory). Both plain global arrays.
extern "C" __global__ void histogram(const unsigned int *data, unsigned int *bins, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1u);
}
