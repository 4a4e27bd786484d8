"""Measure the local NVIDIA GPU with microbenchmarks and write its configuration.

Runs the microbenchmarks of placement/calibrate (pointer chases, the varying-size random
walk, stride sweeps, bandwidths, bank conflicts, barriers, atomics, the texture units',
the load/store pipe's and L1-hit global loads' rates, launches, the issue model, Huang &
Li's DRAM address bits) on one GPU and writes a configuration that
`--gpu GPU.toml` accepts: the catalog entry of the detected GPU (or --base) with every
measured value in place, each commented with its benchmark, device, driver, date and
spread, and the measured curves kept in its [calibration] tables.

Needs the optional extra `gpu` (CuPy with NVRTC): pip install 'gpu-placement[gpu]'.
--quick takes under a minute, the full run under ten.
"""

from __future__ import annotations

from ._output import print_json, table

NAME = "calibrate"
HELP = "measure the local NVIDIA GPU with microbenchmarks and write its configuration (needs the 'gpu' extra)"


def add_arguments(p) -> None:
    p.add_argument("-o", "--output", required=True, metavar="GPU.toml", help="the configuration to write")
    p.add_argument(
        "--device", type=int, default=0, metavar="N", help="the GPU to measure (CUDA device index; default 0)"
    )
    p.add_argument("--base", metavar="NAME", help="start from this configuration (a catalog or bundled name, or a .toml) "
                   "instead of the catalog entry of the detected GPU")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="fewer points and repetitions: under a minute")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def base_for(device_name: str, base: str | None):
    """The configuration the measurements replace values of: --base, else the catalog's entry
    (or the bundled file) of the device's name."""
    from traces.errors import InputError

    from .. import catalog
    from ..gpu import get_gpu

    if base:
        return get_gpu(base)
    entry = catalog.find(device_name)
    if entry is None:
        raise InputError(f"the GPU {device_name!r} is not in the GPU catalog; give --base NAME (a catalog name from "
                         "`placement gpus`, or a .toml) to start from")  # fmt: skip
    return get_gpu(entry.name)


def to_dict(cal, g, path: str) -> dict:
    d = cal.device
    device = {"name": d.name, "index": d.index, "cc": f"{d.cc[0]}.{d.cc[1]}", "sms": d.sms, "driver": d.driver,
              "cuda_runtime": d.runtime}  # fmt: skip
    measured = {k: {"value": m.value, "unit": m.unit, "spread": m.stat.spread, "n": m.stat.n, "benchmark": m.benchmark}
                for k, m in sorted(cal.measured.items())}  # fmt: skip
    return {
        "output": path,
        "device": device,
        "date": cal.date,
        "quick": cal.quick,
        "config": {"name": g.name, "path": g.path},
        "measured": measured,
        "skipped": [{"benchmark": s.benchmark, "reason": s.reason} for s in cal.skipped],
        "notes": list(cal.notes),
    }


def run(args) -> int:
    from traces.atomic import check_output_folder

    from ..calibrate.runner import calibrate, open_device
    from ..calibrate.writer import write_config
    from ..gpu import get_gpu

    from ..gpu import gpu_dir, gpu_names

    # --base names a bundled configuration as often as a file: its file is an input too (-o configs/gpus/k80.toml)
    bundled = [str(gpu_dir() / f"{n}.toml") for n in gpu_names() if args.base and n == args.base]
    check_output_folder(args.output, (args.base, *bundled))
    if args.base:
        get_gpu(args.base)  # a bad --base is refused before the GPU is touched
    dev = open_device(args.device)
    base = base_for(dev.info.name, args.base)
    cal = calibrate(dev, base, quick=args.quick, progress=True)
    g, cal = write_config(args.output, base, cal)
    if args.json:
        print_json(to_dict(cal, g, args.output))
        return 0
    d = cal.device
    print(f"{d.name} (device {d.index}, compute capability {d.cc[0]}.{d.cc[1]}, driver {d.driver}): "
          f"{len(cal.measured)} values measured on {cal.date}")  # fmt: skip
    rows = [
        [k, f"{m.value:.4g}", m.unit, f"{100 * m.stat.rel_spread:.2g} %", m.benchmark]
        for k, m in sorted(cal.measured.items())
    ]
    if rows:
        print(table(rows, ["measured", "value", "unit", "spread", "benchmark"], "lrlrl"))
    for s in cal.skipped:
        print(f"skipped {s.benchmark}: {s.reason}")
    for n in cal.notes:
        print(f"note: {n}")
    print(f"wrote {args.output} (base {base.name}); use it with --gpu {args.output}")
    return 0
