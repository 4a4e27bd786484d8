"""Fit the T_overlap coefficients of Huang & Li's Eq. 11 to measured placements.

MEASUREMENTS.csv has the columns trace (a trace of the sample placement, relative
to the CSV's folder), placement (OBJ=SPACE,... or empty for the sample) and
measured_ns. Prints the fit's residuals and the leave-one-kernel-out error and
writes the coefficients for `placement evaluate --overlap`.
"""

from __future__ import annotations

from ..choices import QUEUE_MODES as MODES
from ..units import plural
from ._output import print_json, table

NAME = "train"
HELP = "fit T_overlap coefficients (Eq. 11) to measured placements"


def add_arguments(p) -> None:
    p.add_argument("measurements", help="CSV with columns trace, placement, measured_ns")
    p.add_argument("--gpu", required=True, help="the GPU the times were measured on")
    p.add_argument("-o", "--output", required=True, help="coefficients file to write (.toml)")
    p.add_argument("--queue", choices=MODES, default="kingman", help="DRAM queuing mode of the model")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args) -> int:
    from traces.atomic import check_output_folder

    from ..gpu import get_gpu
    from ..hms import Options
    from ..overlap import COEFFICIENT_NAMES, FEATURES, save
    from ..training import read_measurements, train

    check_output_folder(args.output, (args.measurements, args.gpu))  # before the fit, not after it
    gpu = get_gpu(args.gpu)
    samples = read_measurements(args.measurements, gpu, Options(queue=args.queue))
    check_output_folder(args.output, sorted({s.trace for s in samples}))  # the traces the CSV names
    report = train(samples, gpu, source=str(args.measurements))
    save(report.model, args.output)
    if args.json:
        print_json({
            "coefficients": dict(zip(COEFFICIENT_NAMES, report.model.coef_)),
            "residuals_pct": [
                {"kernel": s.kernel, "placement": s.placement, "measured_ns": s.measured_ns, "residual_pct": r}
                for s, r in zip(samples, report.residuals_pct)
            ],
            "loko_mape": report.loko_mape,
            "loko_per_kernel": report.loko_per_kernel,
            "output": args.output,
        })  # fmt: skip
        return 0
    print(
        f"fitted Eq. 11 on {plural(len(samples), 'measured placement')} of "
        f"{plural(len({s.kernel for s in samples}), 'kernel')}"
    )
    print(table([[n, f, v] for n, f, v in zip(COEFFICIENT_NAMES, FEATURES, report.model.coef_)],
                ["coef", "feature", "value"], "llr"))  # fmt: skip
    print()
    # residual: (predicted - measured) / measured, to 0.01 % (a fit through its point prints 0.00, not 1e-13)
    rows = [[s.kernel, s.placement or "sample", s.measured_ns, f"{r + 0.0:+.2f}" if abs(r) >= 0.005 else "0.00"]
            for s, r in zip(samples, report.residuals_pct)]  # fmt: skip
    print(table(rows, ["kernel", "placement", "measured ns", "residual %"], "llrr"))
    if report.loko_mape is not None:
        print()
        print(f"leave-one-kernel-out MAPE: {report.loko_mape:.1f} %  (" +
              ", ".join(f"{k} {v:.1f} %" for k, v in report.loko_per_kernel.items()) + ")")  # fmt: skip
    else:
        print()
        print("leave-one-kernel-out MAPE: none (the measurements hold one kernel; it needs two or more)")
    print(f"wrote {args.output}")
    return 0
