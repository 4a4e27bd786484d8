// The read-only path's issue rate: every thread issues 4 independent __ldg (LDG.E.CONSTANT) an
// iteration from a small array (`mask` + 1 words, a multiple of 128; 16 KiB: the L1 holds it after
// the first pass), each warp-load on one 128-byte line (the 32 lanes on its 32 consecutive words:
// one wavefront, so the data path is not the bound where it moves one a cycle). The warp's line
// advances every iteration, wrapped by the run-time `mask`, so the compiler can neither hoist nor
// merge the loads; the four loads of an iteration share one address (immediate offsets). The host
// times the launch with events: warp-instructions = blocks x threads x iters x 4 / 32.
extern "C" __global__ void ldg_nc32(const unsigned* __restrict__ p, int iters, unsigned mask, unsigned* sink) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned line = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 128u;  // the warp's first 4 lines
  unsigned a = 0, b = 0, c = 0, d = 0;
  for (int k = 0; k < iters; ++k) {
    const unsigned* q = p + ((line & mask) + lane);
    a += __ldg(q);
    b += __ldg(q + 32);
    c += __ldg(q + 64);
    d += __ldg(q + 96);
    line += 128u;
  }
  if ((a ^ b ^ c ^ d) == 0xFFFFFFFFu) sink[0] = a;
}
