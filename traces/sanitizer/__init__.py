"""``placement trace``: record one launch of a real CUDA program with NVIDIA's Compute Sanitizer API.

- ``records``: the binary record file the injection library writes, and its reader;
- ``decode``: records -> trace columns and metadata (the trace contract, DESIGN.md);
- ``ctas``: the ``--ctas`` and launch-selection options;
- ``build``: compiling the injection library (``inject.cpp``, ``patches.cu``) into a per-user cache.

Host side only: nothing here needs a GPU. The device side ran on an H100 (README, "Trace your own kernel").
"""
