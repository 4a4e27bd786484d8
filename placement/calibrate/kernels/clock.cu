// The SM clock and the launch cost.
#include "common.cuh"

// Each block's thread 0 spins until `cycles` SM cycles have passed on its clock64(); the
// host times the launch with events: clock (MHz) = cycles / elapsed microseconds.
// out[block] = the cycles the block actually spun.
extern "C" __global__ void spin(long long cycles, long long* out) {
  if (threadIdx.x != 0) return;
  long long t0 = clock_after_memory();
  long long t = t0;
  while (t - t0 < cycles) t = clock_after_memory();
  out[blockIdx.x] = t - t0;
}

// An empty kernel: its launch is all it costs (1 block, and many blocks).
extern "C" __global__ void empty_kernel() {}
