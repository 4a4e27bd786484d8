"""Predict a kernel's time under one placement of its arrays (Huang & Li's model).

Prints T = T_comp + T_mem - T_overlap for the target and the sample placement with
every intermediate: issued instructions, replays by cause, requests, hits and
misses per cache level and space, row-buffer hits, misses and conflicts, the mean
queuing delay, DRAM_lat, AMAT, MWP, CWP, ITILP, ITMLP and N, and why the placement
differs from the sample, object by object. `--hints` prints the CUDA changes it asks
for. The ablations of the paper's Figs. 7-9 are options.
"""

from __future__ import annotations

from ..choices import DLCM, STREAM_MODES
from ..choices import QUEUE_MODES as MODES
from ._output import print_json

NAME = "evaluate"
HELP = "predict the kernel time of one placement"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (Parquet or Arrow IPC) of the sample placement")
    p.add_argument("--gpu", required=True, help="GPU configuration: a name from `placement gpus` or a .toml file")
    p.add_argument("--place", action="append", default=[], metavar="OBJ=SPACE[,...]",
                   help="target spaces: G, T, 2T, C, R (read-only, __ldg), S (the sample's own shared array, or staged "
                        "from global: S/G), S/T, S/R; after a ';', the options windows=K, unrolled, pad=P. Objects not "
                        "named stay where the sample has them")  # fmt: skip
    p.add_argument(
        "--hints", action="store_true", help="print the CUDA changes the placement asks for, object by object"
    )
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def add_model_arguments(p) -> None:
    """The model options `evaluate` and `rank` share."""
    p.add_argument("--queue", choices=MODES, default="kingman",
                   help="DRAM queuing: corrected Kingman (default), Eq. 9 as printed, or the exact Lindley recursion")  # fmt: skip
    p.add_argument("--overlap", metavar="COEFFS.toml", help="trained T_overlap coefficients (placement train)")
    p.add_argument("--no-instruction-counting", action="store_true",
                   help="ablation: the sample's executed instructions for every placement (Fig. 7)")  # fmt: skip
    p.add_argument(
        "--no-queuing",
        action="store_true",
        help="ablation: no queuing delay in DRAM_lat (Figs. 8-9); it can make a kernel slower, as GPUPerf's MWP "
        "is DRAM_lat / Delta (benchmarks/ACCURACY.md)",
    )
    p.add_argument(
        "--even-banks", action="store_true", help="ablation: DRAM requests spread evenly over banks (Fig. 8)"
    )
    p.add_argument("--dlcm", choices=DLCM, default=None,
                   help="the build's -Xptxas -dlcm: ca caches global loads in the L1 where the GPU allows (Maxwell "
                        "cc 5.2, Pascal, and by default Volta on), cg in the L2 only; default: the trace's, else the "
                        "GPU's default")  # fmt: skip
    p.add_argument("--stream", choices=STREAM_MODES, default="auto",
                   help="read the trace in row groups (bounded memory) instead of whole: auto (default) when the "
                        "whole trace would take over 1 GiB, yes, or no; the results are the same")  # fmt: skip


def model_kwargs(args) -> dict:
    """The model options of the command line as ``placement.evaluate`` / ``placement.rank`` keywords."""
    return {"queue": args.queue, "overlap": args.overlap, "instruction_counting": not args.no_instruction_counting,
            "queuing": not args.no_queuing, "even_banks": args.even_banks, "dlcm": args.dlcm,
            "stream": args.stream}  # fmt: skip


def run(args) -> int:
    from ..api import evaluate

    result = evaluate(args.trace, args.gpu, args.place, hints=args.hints, **model_kwargs(args))
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.text())
    return 0
