// Helpers shared by the calibration kernels (included by each .cu; NVRTC gets this folder
// as an include path, nvcc too).
#pragma once

// clock64() as an asm volatile with a memory clobber: the compiler keeps it after every
// memory access written before it (the timed load's result is stored to a volatile shared
// word first, so the clock is read only once that load has returned).
__device__ __forceinline__ long long clock_after_memory() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}
