// SHOC Spmv spmv_csr_vector_kernel<float>: one warp per row of a CSR matrix, BLOCK_SIZE 128;
// the dense vector is read through a 1D texture (tex1Dfetch), partial sums reduced in shared memory.
#define BLOCK_SIZE 128
extern "C" __global__ void spmv(const float *__restrict__ val, const int *__restrict__ cols,
                                const int *__restrict__ rowDelimiters, const int dim,
                                float *__restrict__ out, cudaTextureObject_t vec)
{
    int t = threadIdx.x;
    int lane = t & 31;
    int row = blockIdx.x * (BLOCK_SIZE / 32) + t / 32;
    __shared__ volatile float partial[BLOCK_SIZE];
    if (row < dim) {
        int begin = rowDelimiters[row];
        int end = rowDelimiters[row + 1];
        float acc = 0.0f;
        for (int j = begin + lane; j < end; j += 32)
            acc += val[j] * tex1Dfetch<float>(vec, cols[j]);
        partial[t] = acc;
        if (lane < 16) partial[t] += partial[t + 16];
        if (lane < 8) partial[t] += partial[t + 8];
        if (lane < 4) partial[t] += partial[t + 4];
        if (lane < 2) partial[t] += partial[t + 2];
        if (lane < 1) partial[t] += partial[t + 1];
        if (lane == 0) out[row] = partial[t];
    }
}
