// Huang & Li, Algorithm 1 (address mapping detection): one thread loads two 32-bit words
// that differ in one address bit, with uncached loads (ld.global.cs, __ldcs), and times
// each. The host zeroes the buffer and flushes the L2 before every launch, so the first
// load is a row-buffer miss; the second is a row hit (the bit is a column bit), a miss in
// another bank (a bank or channel bit) or a row conflict (a row bit).
// out[0] = cycles of the first load, out[1] = of the second.
#include "common.cuh"

extern "C" __global__ void address_bit_pair(const unsigned* base, unsigned long long first_word,
                                            unsigned long long second_word, long long* out) {
  volatile __shared__ unsigned sink;
  long long t0 = clock_after_memory();
  unsigned v = __ldcs(base + first_word);
  sink = v;
  long long t1 = clock_after_memory();
  unsigned w = __ldcs(base + second_word + v);  // v is 0: the address depends on the first load
  sink = w;
  long long t2 = clock_after_memory();
  out[0] = t1 - t0;
  out[1] = t2 - t1;
  out[2] = sink;
}
