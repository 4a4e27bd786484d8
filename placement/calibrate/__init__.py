"""`placement calibrate`: microbenchmark the local NVIDIA GPU and write its configuration.

- ``analysis``: curves -> cache levels, capacities, latencies, line and sector sizes,
  Huang & Li's DRAM address bits; medians and spreads (numpy, no GPU);
- ``recorded``: readers of recorded outputs (gpu-benches, mt4g, the H100's microbenchmarks.csv);
- ``measurements``: the records a run fills (values with benchmark and spread, curves, skips);
- ``writer``: a GPU configuration (TOML) from a base configuration and the measurements;
- ``kernels/*.cu``: the microbenchmarks' CUDA sources;
- ``benchmarks``: what each microbenchmark launches and how its result is read;
- ``runner``: the GPU, through CuPy (the optional extra ``gpu``), and the progress bar.

Only ``runner`` touches the GPU library, and only when a calibration runs.
"""
