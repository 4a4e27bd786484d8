"""Predict a kernel's time under one placement of its arrays (Huang & Li's model).

Prints T = T_comp + T_mem - T_overlap for the target and the sample placement with
every intermediate: issued instructions, replays by cause, requests, hits and
misses per cache level and space, row-buffer hits, misses and conflicts, the mean
queuing delay, DRAM_lat, AMAT, MWP, CWP, ITILP, ITMLP and N. The ablations of the
paper's Figs. 7-9 are options.
"""

from __future__ import annotations

import traces

from ..gpu import get_gpu
from ..hms import Evaluator, Options
from ..overlap import load as load_overlap
from ..placements import parse_placement, sample_placement
from ..queuing import MODES
from ._output import print_json, table

NAME = "evaluate"
HELP = "predict the kernel time of one placement"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (.parquet) of the sample placement")
    p.add_argument("--gpu", required=True, help="GPU configuration: a name from `placement gpus` or a .toml file")
    p.add_argument("--place", action="append", default=[], metavar="OBJ=SPACE[,...]",
                   help="target spaces (G T 2T C S); objects not named stay where the sample has them")  # fmt: skip
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def add_model_arguments(p) -> None:
    """The model options `evaluate` and `rank` share."""
    p.add_argument("--queue", choices=MODES, default="kingman",
                   help="DRAM queuing: corrected Kingman (default), Eq. 9 as printed, or the exact Lindley recursion")  # fmt: skip
    p.add_argument("--overlap", metavar="COEFFS.toml", help="trained T_overlap coefficients (placement train)")
    p.add_argument("--no-instruction-counting", action="store_true",
                   help="ablation: the sample's executed instructions for every placement (Fig. 7)")  # fmt: skip
    p.add_argument("--no-queuing", action="store_true", help="ablation: no queuing delay in DRAM_lat (Figs. 8-9)")
    p.add_argument("--even-banks", action="store_true", help="ablation: DRAM requests spread evenly over banks (Fig. 8)")


def options_from_args(args) -> Options:
    return Options(
        queue=args.queue,
        instruction_counting=not args.no_instruction_counting,
        queuing=not args.no_queuing,
        even_banks=args.even_banks,
        overlap=load_overlap(args.overlap) if args.overlap else None,
    )


def run(args) -> int:
    gpu = get_gpu(args.gpu)
    opts = options_from_args(args)
    trace = traces.read(args.trace)
    placement = parse_placement(args.place, trace.info)
    ev = Evaluator(trace, gpu, opts).evaluate(placement)
    if args.json:
        print_json(ev.as_dict())
        return 0
    s, t = ev.sample, ev.target
    print(f"{ev.kernel} on {ev.gpu}: {placement.label(sample_placement(trace.info))}")
    print(f"predicted {t.time_ns:,.0f} ns, sample {s.time_ns:,.0f} ns: speedup {ev.speedup:.3f}")
    if ev.predicted_ns is not None:
        print(f"scaled by the measured sample ({ev.measured_sample_ns:,.0f} ns): {ev.predicted_ns:,.0f} ns")
    print(f"T_overlap: {t.overlap_source}")
    print()
    rows = [
        ["time (ns)", s.time_ns, t.time_ns],
        ["T_comp (cycles)", s.t_comp, t.t_comp],
        ["T_mem (cycles)", s.t_mem, t.t_mem],
        ["T_overlap (cycles)", s.t_overlap, t.t_overlap],
        ["issued instructions", s.issued_instructions, t.issued_instructions],
        ["addressing delta", s.addressing_delta, t.addressing_delta],
        *[[f"replays: {k}", s.replays[k], t.replays[k]] for k in t.replays],
        ["memory requests", s.mem_requests, t.mem_requests],
        ["AMAT (cycles)", s.amat, t.amat],
        ["DRAM_lat (cycles)", s.dram_lat, t.dram_lat],
        ["mean queuing delay", s.mean_queuing_delay, t.mean_queuing_delay],
        ["DRAM requests", s.dram_requests, t.dram_requests],
        *[[f"row buffer {k}", s.row_buffer.get(k, 0), t.row_buffer.get(k, 0)] for k in t.row_buffer],
        ["MWP", s.mwp, t.mwp],
        ["CWP", s.cwp, t.cwp],
        ["ITILP", s.itilp, t.itilp],
        ["ITMLP", s.itmlp, t.itmlp],
        ["N (warps/SM)", s.n, t.n],
        ["shared bytes/block", s.smem_per_block, t.smem_per_block],
    ]
    print(table(rows, ["", "sample", "target"], "lrr"))
    levels = sorted(set(s.caches) | set(t.caches))
    if levels:
        print()
        crow = []
        for lv in levels:
            a, b = s.caches.get(lv, {}), t.caches.get(lv, {})
            crow.append([lv, a.get("requests", 0), a.get("hits", 0), b.get("requests", 0), b.get("hits", 0)])
        print(table(crow, ["cache.space", "sample req", "sample hits", "target req", "target hits"], "lrrrr"))
    return 0
