"""Summarise a trace: its container and size, kernel, launch, rows, warps, objects and instruction totals."""

from __future__ import annotations

from dataclasses import asdict

from ..units import plural
from ._output import print_json, table

NAME = "info"
HELP = "summarise a trace file"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (Parquet or Arrow IPC)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _by_arch(by_arch: dict) -> str:
    """``{sm_XY: value}`` as ``sm_75 64, sm_80 32, ...``, in architecture order (sm_100 after sm_90)."""
    return ", ".join(f"{k} {v:g}" for k, v in sorted(by_arch.items(), key=lambda kv: int(kv[0][3:])))


def to_dict(s) -> dict:
    from ..builds import mlp_for

    info = s.info
    return {
        "path": s.path,
        "kernel": info.kernel,
        "grid": list(info.grid),
        "block": list(info.block),
        "regs_per_thread": info.regs_per_thread,
        "regs_by_arch": dict(info.extra.get("regs_by_arch") or {}),
        "regs_by_placement": {k: dict(v) for k, v in (info.extra.get("regs_by_placement") or {}).items()},
        "mlp": mlp_for(info),
        "mlp_by_arch": dict(info.extra.get("mlp_by_arch") or {}),
        "mlp_by_placement": {k: dict(v) for k, v in (info.extra.get("mlp_by_placement") or {}).items()},
        "inst_by_arch": dict(info.extra.get("inst_by_arch") or {}),
        "smem_per_block": info.smem_per_block,
        "rows": s.rows,
        "warps": s.warps,
        "rows_per_space": s.rows_per_space,
        "rows_per_op": s.rows_per_op,
        "unassigned_rows": s.unassigned_rows,
        "objects": [
            {
                "id": o.info.id,
                "name": o.info.name,
                "space": o.info.space,
                "base": o.info.base,
                "size": o.info.size,
                "elem_bytes": o.info.elem_bytes,
                "shape": list(o.info.shape) if o.info.shape else None,
                "written": o.info.written,
                "bytes_touched": o.bytes_touched,
                "accesses": o.accesses,
                "ops": o.ops,
            }
            for o in s.objects
        ],
        "instructions": asdict(info.instructions),
        "measured": asdict(info.measured) if info.measured else None,
        "source": info.source,
        "extra": info.extra,
    }


def run(args) -> int:
    import os

    from traces.ipcfile import sniff
    from traces.summary import summarize

    s = summarize(args.trace)
    d = to_dict(s)
    d["container"] = "arrow-ipc" if sniff(args.trace) == "ipc" else "parquet"
    d["file_bytes"] = os.path.getsize(args.trace)
    if args.json:
        print_json(d)
        return 0
    g, b = d["grid"], d["block"]
    print(f"kernel        {d['kernel']}")
    per_row = f"{d['file_bytes'] / d['rows']:.0f} a row" if d["rows"] else "no rows"
    print(f"file          {d['container']}, {d['file_bytes']:,} bytes ({per_row})")
    print(f"grid x block  ({g[0]}, {g[1]}, {g[2]}) x ({b[0]}, {b[1]}, {b[2]}); "
          f"{d['regs_per_thread']} registers/thread, {d['smem_per_block']} B shared/block")  # fmt: skip
    if "traced_ctas" in d["extra"] or "launch_ctas" in d["extra"]:
        print(f"blocks        {s.info.traced_ctas:,} of its launch's {s.info.launch_ctas:,} in the trace (extra.traced_ctas, "
              "extra.launch_ctas): the model scales their time to the launch's")  # fmt: skip
    if d["regs_by_arch"]:
        print("registers     per architecture (the model takes the GPU's): " + _by_arch(d["regs_by_arch"]))
    for build, by_arch in d["regs_by_placement"].items():
        print(f"  built {build}: " + _by_arch(by_arch))
    if d["mlp_by_arch"] or d["mlp_by_placement"]:
        print(f"MLP           {d['mlp']:g} in this build; per architecture (the model takes the GPU's): "
              + _by_arch(d["mlp_by_arch"]))  # fmt: skip
    elif "mlp" in d["extra"]:
        print(f"MLP           {d['mlp']:g} (this build's)")
    else:  # a trace without its kernel's SASS (NVBit, or placement trace without nvdisasm)
        print(f"MLP           {d['mlp']:g}: none in the trace, the model's default")
    for build, by_arch in d["mlp_by_placement"].items():
        print(f"  built {build}: " + _by_arch(by_arch))
    if d["extra"].get("dlcm"):
        where = "L1 and L2" if d["extra"]["dlcm"] == "ca" else "the L2 only"
        print(f"build         -Xptxas -dlcm={d['extra']['dlcm']}: global loads cached in {where} where the GPU allows")
    print(f"rows          {plural(d['rows'], 'warp-level memory instruction')} from {plural(d['warps'], 'warp')}"
          + (f" ({d['unassigned_rows']:,} on no object)" if d["unassigned_rows"] else ""))  # fmt: skip
    print("by space      " + ", ".join(f"{k} {v:,}" for k, v in d["rows_per_space"].items()))
    print("by op         " + ", ".join(f"{k} {v:,}" for k, v in d["rows_per_op"].items()))
    ins = d["instructions"]
    classes = ", ".join(f"{k} {ins[k]:,}" for k in ("int", "fp32", "fp64", "sfu", "ldst", "sync", "branch") if ins[k])
    issued = f", issued {ins['issued']:,}" if ins["issued"] is not None else ""
    print(
        f"instructions  executed {ins['executed']:,}{issued} over {plural(ins['warps'], 'warp')}"
        + (f"; {classes}" if classes else "")
    )
    if d["inst_by_arch"]:
        print("  per architecture, times these (the model takes the GPU's): " + _by_arch(d["inst_by_arch"]))
    if d["measured"]:
        print(f"measured      {d['measured']['time_ns']:,.0f} ns on {d['measured']['gpu']}")
    if d["source"]:
        print("source        " + ", ".join(f"{k}={v}" for k, v in d["source"].items()))
    print()
    rows = [
        [o["id"], o["name"], o["space"], f"{o['base']:#x}", o["size"], o["bytes_touched"],
         "yes" if o["written"] else "no", "x".join(map(str, o["shape"])) if o["shape"] else "-",
         ", ".join(f"{k} {v:,}" for k, v in o["accesses"].items()) or "-"]
        for o in d["objects"]
    ]  # fmt: skip
    print(
        table(rows, ["id", "object", "space", "base", "size", "touched", "written", "shape", "accesses"], "rllrrrlll")
    )
    return 0
