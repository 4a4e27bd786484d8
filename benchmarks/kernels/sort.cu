// SHOC Sort reorderData: scatter one block's locally sorted keys and values (two per thread, read as
// uint2) to their global radix positions; sOffsets and sBlockOffsets (16 radices) in shared memory.
extern "C" __global__ void sort(unsigned int startbit, unsigned int *outKeys, unsigned int *outValues,
                                uint2 *keys, uint2 *values, unsigned int *blockOffsets,
                                unsigned int *offsets, unsigned int *sizes, unsigned int totalBlocks)
{
    __shared__ uint2 sKeys2[256];
    __shared__ uint2 sValues2[256];
    __shared__ unsigned int sOffsets[16];
    __shared__ unsigned int sBlockOffsets[16];
    unsigned int *sKeys1 = (unsigned int *)sKeys2;
    unsigned int *sValues1 = (unsigned int *)sValues2;
    unsigned int n = blockDim.x;
    unsigned int b = blockIdx.x, t = threadIdx.x;
    unsigned int i = b * n + t;
    sKeys2[t] = keys[i];
    sValues2[t] = values[i];
    if (t < 16) {
        sOffsets[t] = offsets[t * totalBlocks + b];
        sBlockOffsets[t] = blockOffsets[b * 16 + t];
    }
    __syncthreads();
    unsigned int r = (sKeys1[t] >> startbit) & 0xF;
    unsigned int g = sOffsets[r] + t - sBlockOffsets[r];
    outKeys[g] = sKeys1[t];
    outValues[g] = sValues1[t];
    r = (sKeys1[t + n] >> startbit) & 0xF;
    g = sOffsets[r] + t + n - sBlockOffsets[r];
    outKeys[g] = sKeys1[t + n];
    outValues[g] = sValues1[t + n];
}
