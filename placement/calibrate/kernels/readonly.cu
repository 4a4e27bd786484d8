// Global loads that hit in the L1, by path and by lines a warp-load touches: every thread issues 4
// independent loads an iteration from a small array (`mask` + 1 words, a multiple of 128, 16 KiB:
// the L1 holds it after the first pass; the host allocates words past it for `shift`). The 32
// lanes of a warp read 32 consecutive words: one 128-byte line where `shift` is 0 (one wavefront,
// so the data path is not the bound where it moves one a cycle), two lines (5 sectors) where it is
// 1, as a stencil's taps read. The warp's line advances every iteration, wrapped by the run-time
// `mask`, so the compiler can neither hoist nor merge the loads; the four loads of an iteration
// share one address (immediate offsets). ldg_nc32 reads through __ldg (LDG.E.CONSTANT), ldg32 with
// plain loads (LDG.E: no __restrict__, and the sink may alias the array). The host times the
// launches with events: warp-instructions = blocks x threads x iters x 4 / 32. ldg_quarters reads
// with plain loads too, each 8 lanes 8 words, quarter j `shift` x j words on: 32 (the same 8 words
// of 4 lines, in the same 8 banks: a 4-way bank conflict where the L1's data is the shared memory's
// banks) or 40 (word 8j of line j: 32 banks, no conflict), four lines and four sectors either way,
// so the two differ in the banks alone (the host allocates 128 words past the mask).
#define LINES_BODY(LOAD, LANE_WORD)                                              \
  const unsigned lane = threadIdx.x & 31u;                                       \
  unsigned line = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 128u;         \
  unsigned a = 0, b = 0, c = 0, d = 0;                                           \
  for (int k = 0; k < iters; ++k) {                                              \
    const unsigned* q = p + ((line & mask) + (LANE_WORD));                       \
    a += LOAD(q);                                                                \
    b += LOAD(q + 32);                                                           \
    c += LOAD(q + 64);                                                           \
    d += LOAD(q + 96);                                                           \
    line += 128u;                                                                \
  }                                                                              \
  if ((a ^ b ^ c ^ d) == 0xFFFFFFFFu) sink[0] = a;

#define NC_LOAD(q) __ldg(q)
#define PLAIN_LOAD(q) (*(q))

extern "C" __global__ void ldg_nc32(const unsigned* __restrict__ p, int iters, unsigned mask, unsigned shift,
                                    unsigned* sink) {
  LINES_BODY(NC_LOAD, lane + shift)
}

extern "C" __global__ void ldg32(const unsigned* p, int iters, unsigned mask, unsigned shift, unsigned* sink) {
  LINES_BODY(PLAIN_LOAD, lane + shift)
}

extern "C" __global__ void ldg_quarters(const unsigned* p, int iters, unsigned mask, unsigned shift,
                                        unsigned* sink) {
  LINES_BODY(PLAIN_LOAD, (lane & 7u) + (lane >> 3) * shift)
}
