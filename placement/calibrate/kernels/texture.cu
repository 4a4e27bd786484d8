// Texture units' throughput: every thread fetches `iters` x 4 texels of a small 1D texture
// (tex1Dfetch of 32-bit texels, point sampling: what `placement evaluate --place X=T` advises),
// four independent fetches in flight, the 32 lanes of a warp on 32 consecutive texels, and
// the texture small enough (`mask` + 1 texels, the host keeps it in L1) that no DRAM or L2
// traffic bounds it. The host times the launch with events over all SMs: texels per second.

extern "C" __global__ void tex_throughput(cudaTextureObject_t t, int iters, unsigned mask, unsigned* sink) {
  unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) & mask;
  unsigned a = 0, b = 0, c = 0, d = 0;
  for (int k = 0; k < iters; ++k) {
    a += tex1Dfetch<unsigned>(t, i);
    b += tex1Dfetch<unsigned>(t, (i + 32u) & mask);
    c += tex1Dfetch<unsigned>(t, (i + 64u) & mask);
    d += tex1Dfetch<unsigned>(t, (i + 96u) & mask);
    i = (i + 128u) & mask;
  }
  if ((a ^ b ^ c ^ d) == 0xFFFFFFFFu) sink[0] = a;
}
