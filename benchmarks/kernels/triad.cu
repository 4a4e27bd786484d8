// SHOC Triad: C = A + s*B, one element per thread.
extern "C" __global__ void triad(const float *A, const float *B, float *C, float s)
{
    int gid = threadIdx.x + (blockIdx.x * blockDim.x);
    C[gid] = A[gid] + s * B[gid];
}
