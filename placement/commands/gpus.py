"""List the bundled GPU configurations (configs/gpus/*.toml)."""

from __future__ import annotations

from ..gpu import as_dict, get_gpu, gpu_names
from ._output import print_json, table

NAME = "gpus"
HELP = "list GPU configurations"


def add_arguments(p) -> None:
    p.add_argument("name", nargs="?", help="show one configuration in full (a bundled name or a .toml path)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args) -> int:
    gpus = [get_gpu(args.name)] if args.name else [get_gpu(n) for n in gpu_names()]
    if args.json:
        docs = [as_dict(g) for g in gpus]
        print_json(docs[0] if args.name else {"gpus": docs})
        return 0
    if args.name:
        g = gpus[0]
        print(f"{g.name}: {g.description} ({g.arch}, compute capability {g.compute_capability[0]}.{g.compute_capability[1]})")
        print(f"file: {g.path}")
        for section in ("compute", "memory", "caches", "dram"):
            print(f"[{section}]")
            for k, v in as_dict(g)[section].items():
                print(f"  {k} = {v!r}")
        return 0
    rows = [
        [g.name, g.arch, f"{g.compute_capability[0]}.{g.compute_capability[1]}", g.compute.sms,
         g.compute.sms * g.compute.cores_per_sm, g.compute.clock_mhz, g.memory.bandwidth_gbs,
         "yes" if g.caches.global_in_l1 else "no", g.caches.readonly_cache, g.description]
        for g in gpus
    ]  # fmt: skip
    print(table(rows, ["name", "arch", "cc", "SMs", "cores", "MHz", "GB/s", "L1 (global)", "read-only", "description"], "lllrrrrlll"))
    return 0
