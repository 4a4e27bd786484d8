"""List the benchmark kernels, or generate one kernel's trace.

  placement bench list [--json]
  placement bench gen NAME [--size S[xS...]] [--block B[xB...]] -o T.parquet

Sizes and blocks are integers separated by 'x' or ',' and fill the kernel's size
and block parameters in order (``placement bench list`` names them); the rest
keep their defaults.
"""

from __future__ import annotations

from traces.errors import InputError

from ..units import plural
from ._output import print_json, table

NAME = "bench"
HELP = "benchmark kernels: list them, or generate a kernel's trace"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="bench_command", metavar="ACTION")
    sub.required = True
    lp = sub.add_parser("list", help="list the kernels with their parameters")
    lp.add_argument("--json", action="store_true", help="print one JSON document")
    gp = sub.add_parser("gen", help="generate a kernel's trace")
    gp.add_argument("name", help="kernel name (see `placement bench list`)")
    gp.add_argument("--size", default=None, help="size parameters, e.g. 65536 or 512x512")
    gp.add_argument("--block", default=None, help="block parameters, e.g. 256 or 16")
    gp.add_argument("-o", "--output", required=True, help="trace file to write (.arrow, .feather or .ipc: Arrow IPC; else Parquet)")  # fmt: skip
    gp.add_argument("--json", action="store_true", help="print a JSON summary of what was written")


def parse_ints(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    parts = [s for s in text.replace(",", "x").split("x")]
    try:
        values = [int(s) for s in parts]
    except ValueError:
        raise InputError(f"--{what} {text!r}: expected integers separated by 'x' or ',' (e.g. 512x512)") from None
    return values


def _param_doc(params) -> str:
    return ", ".join(f"{p.name}={p.default}" for p in params) or "-"


def run(args) -> int:
    from traces import generators

    if args.bench_command == "list":
        specs = list(generators.registry().values())
        if args.json:
            print_json(
                [
                    {
                        "name": s.name,
                        "description": s.description,
                        "paper": s.paper,
                        "placement": s.placement,
                        "size": [{"name": p.name, "default": p.default, "meaning": p.meaning} for p in s.size],
                        "block": [{"name": p.name, "default": p.default, "meaning": p.meaning} for p in s.block],
                    }
                    for s in specs
                ]
            )
            return 0
        rows = [[s.name, _param_doc(s.size), _param_doc(s.block), s.placement, s.paper] for s in specs]
        print(table(rows, ["kernel", "size", "block", "sample placement", "source"], "lllll"))
        return 0
    size = parse_ints(args.size, "size")
    block = parse_ints(args.block, "block")
    info = generators.write(args.name, args.output, size, block)
    doc = {
        "path": args.output,
        "kernel": info.kernel,
        "grid": list(info.grid),
        "block": list(info.block),
        "warps": info.instructions.warps,
        "executed": info.instructions.executed,
        "params": info.extra.get("params", {}),
    }
    if args.json:
        print_json(doc)
    else:
        g, b = info.grid, info.block
        print(f"wrote {args.output}: {info.kernel} grid ({g[0]}, {g[1]}, {g[2]}) x block ({b[0]}, {b[1]}, {b[2]}), "
              f"{plural(info.instructions.executed, 'instruction')} over {plural(info.instructions.warps, 'warp')}")  # fmt: skip
    return 0
