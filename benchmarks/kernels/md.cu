// SHOC MD compute_lj_force<float> (one atom per thread, BLOCK_SIZE 256): neighbour j of atom i is
// neighList[j * inum + i]; positions (float4) are fetched through a 1D texture, the force is written.
extern "C" __global__ void md(float4 *__restrict__ force, cudaTextureObject_t position, const int neighCount,
                              const int *__restrict__ neighList, const float cutsq, const float lj1,
                              const float lj2, const int inum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= inum) return;
    float4 ipos = tex1Dfetch<float4>(position, i);
    float fx = 0.0f, fy = 0.0f, fz = 0.0f;
    for (int j = 0; j < neighCount; j++) {
        int jidx = neighList[j * inum + i];
        float4 jpos = tex1Dfetch<float4>(position, jidx);
        float dx = ipos.x - jpos.x, dy = ipos.y - jpos.y, dz = ipos.z - jpos.z;
        float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < cutsq) {
            float r2i = 1.0f / r2;
            float r6i = r2i * r2i * r2i;
            float f = r2i * r6i * (lj1 * r6i - lj2);
            fx += dx * f; fy += dy * f; fz += dz * f;
        }
    }
    force[i] = make_float4(fx, fy, fz, 0.0f);
}
