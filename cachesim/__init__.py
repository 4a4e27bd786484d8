"""cachesim: the memory hierarchy of gpu-placement (coalescing, caches, DRAM)."""
