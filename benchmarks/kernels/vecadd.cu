// Huang & Li Fig. 2(a): vector addition, a and b in global memory.
extern "C" __global__ void vecadd(const float *a, const float *b, float *v, int n)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = a[id] + b[id];
}
