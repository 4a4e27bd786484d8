// gpuperfpredict matrix_sum_normal / matrix_sum_coalesced: S[tid] = A[tid] + B[tid], tid = i*N + j.
extern "C" __global__ void matrix_sum_normal(const float *A, const float *B, float *S, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;   // row from x: lanes stride N (uncoalesced)
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < N && j < N) { int tid = i * N + j; S[tid] = A[tid] + B[tid]; }
}
extern "C" __global__ void matrix_sum_coalesced(const float *A, const float *B, float *S, int N)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;   // column from x: lanes consecutive
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < N && j < N) { int tid = i * N + j; S[tid] = A[tid] + B[tid]; }
}
