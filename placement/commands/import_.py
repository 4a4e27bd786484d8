"""Import a real trace (Accel-Sim, NVBit mem_trace, PORPLE, `placement trace` records) into a placement trace.

  placement import accelsim DIR|FILE -o T.parquet [--kernel N]
  placement import nvbit LOG -o T.parquet [--launch N]
  placement import porple FILE -o T.parquet
  placement import sanitizer RECORDS -o T.parquet [--ctas SPEC] [--max-rows N] [--cubin FILE]
                                                                (placement trace --keep-records)

Objects come from --objects FILE.toml (which wins), from the MemcpyHtoD lines of
kernelslist.g, and otherwise from the addresses each instruction touches.
"""

from __future__ import annotations

import logging
import time

from traces.errors import InputError

from ..units import plural
from ._output import print_json

NAME = "import"
HELP = "import an Accel-Sim, NVBit mem_trace, PORPLE or placement trace record file"

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="format", metavar="FORMAT")
    sub.required = True

    def common(q, skip: bool = True) -> None:
        q.add_argument("-o", "--output", required=True, help="trace file to write (.arrow, .feather or .ipc: Arrow IPC; else Parquet)")  # fmt: skip
        q.add_argument(
            "--objects",
            metavar="FILE.toml",
            help="[[object]] tables (name, base, size, ...) that name and bound objects explicitly",
        )
        if skip:
            q.add_argument(
                "--skip-bad-lines", action="store_true", help="count and skip unparsable lines instead of failing"
            )
        q.add_argument("--json", action="store_true", help="print one JSON document describing the result")

    a = sub.add_parser("accelsim", help="Accel-Sim kernel-N.traceg[.xz], or a folder with kernelslist.g")
    a.add_argument("path", help="kernel-N.traceg, kernel-N.traceg.xz, or a folder holding kernelslist.g")
    a.add_argument(
        "--kernel", type=int, metavar="N", help="which kernel-N of kernelslist.g (needed when it lists several)"
    )
    common(a)
    n = sub.add_parser("nvbit", help="NVBit mem_trace log (MEMTRACE: lines or the older form)")
    n.add_argument("path", help="the log file")
    n.add_argument(
        "--launch", type=int, metavar="N", help="which grid launch to import (needed when the log holds several)"
    )
    common(n)
    r = sub.add_parser("porple", help="PORPLE array-level access trace")
    r.add_argument("path", help="the trace file")
    common(r)
    z = sub.add_parser(
        "sanitizer", help="record file of `placement trace`'s injection library (traces/sanitizer/records.py)"
    )
    z.add_argument("path", help="the record file")
    z.add_argument(
        "--ctas", metavar="SPEC", help="the blocks the records hold, as --ctas was given (kept in the metadata)"
    )
    z.add_argument("--max-rows", type=int, metavar="N", help="keep the first N warp-level memory instructions")
    z.add_argument("--cubin", metavar="FILE", help="the kernel's module (placement trace keeps it): instruction "
                   "totals and seq from its SASS (nvdisasm)")  # fmt: skip
    common(z, skip=False)


def run(args) -> int:
    import traces
    from traces.atomic import check_output_folder
    from traces.importers import import_trace
    from traces.importers.objects import load_objects_toml

    check_output_folder(args.output, (args.path, args.objects, getattr(args, "cubin", None)))  # before the parse
    objects = load_objects_toml(args.objects) if args.objects else ()
    t0 = time.perf_counter()
    option = {"accelsim": "kernel", "nvbit": "launch"}.get(args.format)
    if args.format == "sanitizer":  # decoded in two passes, the second part by part as it is written
        from traces.sanitizer.decode import open_records

        decoder = open_records(args.path, objects=objects, ctas=args.ctas, max_rows=args.max_rows, cubin=args.cubin)
        info = decoder.info
        if decoder.n == 0:  # a trace of no rows, which every command then refuses ("nothing to place")
            raise InputError(f"{args.path}: no memory access follows the launch record (none of the launch's loads, "
                             "stores or atomics was recorded): nothing to place; no trace written")  # fmt: skip
        rows = traces.write_parts(args.output, decoder.parts(), info, decoder.n)
    else:
        cols, info = import_trace(
            args.format,
            args.path,
            objects=objects,
            **({"skip_bad_lines": args.skip_bad_lines} if hasattr(args, "skip_bad_lines") else {}),
            **({option: getattr(args, option)} if option else {}),
        )
        traces.write(args.output, cols, info)
        rows = int(cols["cta"].shape[0])
    dt = time.perf_counter() - t0
    doc = {
        "output": str(args.output),
        "format": args.format,
        "kernel": info.kernel,
        "rows": rows,
        "objects": [
            {
                "id": o.id,
                "name": o.name,
                "space": o.space,
                "base": o.base,
                "size": o.size,
                "written": o.written,
                "origin": info.source.get("objects", {}).get(o.name),
            }
            for o in info.objects
        ],  # fmt: skip
        "instructions": info.instructions.executed,
        "warps": info.instructions.warps,
        "estimated": info.source.get("estimated", []),
        "skipped_lines": info.source.get("skipped_lines", 0),
        "seconds": round(dt, 3),
    }
    if args.json:
        print_json(doc)
        return 0
    print(f"wrote {args.output}: {plural(rows, 'warp-level memory instruction')}, {plural(len(info.objects), 'object')}, "
          f"{plural(info.instructions.executed, 'instruction')} over {plural(info.instructions.warps, 'warp')} "
          f"({dt:.2f} s)")  # fmt: skip
    for o in doc["objects"]:
        print(f"  {o['id']:>3}  {o['name']:<12} {o['space']:<9} {o['base']:#x} +{o['size']:,}  {o['origin']}")
    if doc["estimated"]:
        print("estimated: " + ", ".join(doc["estimated"]))
    if doc["skipped_lines"]:
        print(f"skipped {plural(doc['skipped_lines'], 'bad line')}")
    return 0
