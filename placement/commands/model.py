"""Run one of the seed analytical models on a kernel parameter file, nvprof counters or a trace.

  placement model mwp-cwp  --kernel configs/examples/hong-kim-table2.toml
  placement model gpuperf  --gpu k80 --trace T.parquet
  placement model bsp      --counters vectorAdd-GTX-680.csv --fit-lambda 12
  placement model gpuperf  --counters kernel.ncu.csv            (Nsight Compute: ncu --csv --page raw)
  placement model lemeire  --runs RUNS.csv --gpu k80  |  --chase LATENCY.txt

Without --gpu, a parameter file's [machine] table completes the model's own paper
machine (MWP-CWP: Hong & Kim Sec. 3.6; GPUPerf and BSP: Sim et al.'s Tesla C2050),
each nvprof counters row is modeled on the GPU its specification columns describe,
and an Nsight Compute export on the catalog GPU its device name gives. With --gpu, the
GPU's machine is modeled and a parameter file's [machine] table is not used (said).

BSP has no default lambda: Amaris et al. fit one per GPU and application from a
measured run (their lambdas for the gpuperfpredict kernels on one GTX-680 range from
0.6 to 68), so a prediction without one would be a number with no meaning. Give
``--lambda L`` or ``--fit-lambda [ROW]`` (a row number, or ``size=N[,block=BXxBY]``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace

from traces.errors import InputError

from .. import units
from ..units import plural
from ._output import print_json, table

NAME = "model"
HELP = "run a seed analytical model (mwp-cwp, gpuperf, bsp, lemeire)"

log = logging.getLogger(__name__)

MODELS = ("mwp-cwp", "gpuperf", "bsp")


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="model", metavar="MODEL")
    sub.required = True
    for name, helptext in (
        ("mwp-cwp", "Hong & Kim 2009, MWP-CWP (Eq. 1-27)"),
        ("gpuperf", "Sim et al. 2012, GPUPerf (Eq. 1-23) with benefit metrics"),
        ("bsp", "Amaris et al., BSP model (Eq. 3-5)"),
    ):
        s = sub.add_parser(name, help=helptext, description=helptext)
        s.add_argument("--gpu", help="GPU configuration name or .toml path")
        src = s.add_mutually_exclusive_group(required=True)
        src.add_argument("--kernel", metavar="PARAMS.toml", help="kernel parameter file ([kernel], optional [machine])")
        src.add_argument(
            "--counters",
            metavar="COUNTERS.csv",
            help="nvprof counters in the gpuperfpredict format, or an Nsight Compute export (ncu --csv --page raw)",
        )
        src.add_argument("--trace", metavar="T.parquet", help="a memory trace (Parquet or Arrow IPC)")
        s.add_argument("--json", action="store_true", help="print one JSON document")
        if name == "bsp":
            lam = s.add_mutually_exclusive_group()
            lam.add_argument("--lambda", dest="lam", type=float, default=None, help="lambda (Amaris et al. Eq. 3)")
            lam.add_argument(
                "--fit-lambda",
                nargs="?",
                const="",
                default=None,
                metavar="ROW",
                help="fit lambda on one measured run: a counters row number or size=N[,block=BXxBY] "
                "(required with --counters); the kernel itself with --kernel or --trace",
            )
    lemeire_help = "Lemeire et al.: CPI, latencies, occupancy roofline, cache levels"
    le = sub.add_parser("lemeire", help=lemeire_help, description=lemeire_help)
    le.add_argument("--gpu", help="GPU configuration (clock, SMs, warp limits) for --runs")
    src = le.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--runs", metavar="RUNS.csv", help="measured runs: work_items, wg_size, local_mem, runtime_s[, instr_kernel]"
    )
    src.add_argument("--chase", metavar="LATENCY.txt", help="pointer-chase latency versus footprint table")
    le.add_argument(
        "--instr-kernel", type=float, default=None, help="instructions per work item when RUNS lacks the column"
    )
    le.add_argument("--json", action="store_true", help="print one JSON document")


# --- machines ---------------------------------------------------------------------


def _preset(model: str):
    from placement.models.params import c2050, hong_kim_example

    return hong_kim_example() if model == "mwp-cwp" else c2050()


def _machine(args, overrides: dict | None = None):
    from placement.gpu import get_gpu
    from placement.models.params import machine_from_gpu

    base = machine_from_gpu(get_gpu(args.gpu)) if args.gpu else _preset(args.model)
    return replace(base, **overrides) if overrides else base


_SPEC_CACHE: dict = {}


def _spec_machine(spec: dict, where: str):
    """The machine a counters row describes: its spec columns (nvprof), or its device name in the
    GPU catalog (Nsight Compute)."""
    from placement.gpu import get_gpu
    from placement.models.counters import gpu_from_spec
    from placement.models.params import machine_from_gpu

    key = tuple(sorted((k, str(v)) for k, v in spec.items()))
    if key not in _SPEC_CACHE:
        if "ncu_device" in spec:
            if not spec["ncu_device"]:
                raise InputError(f"{where}: the export has no device__attribute_display_name; give --gpu NAME")
            try:
                g = get_gpu(spec["ncu_device"])
            except InputError as exc:
                raise InputError(f"{where}: device {spec['ncu_device']!r}: {exc}; give --gpu NAME") from None
        else:
            g = gpu_from_spec(spec, where)
        _SPEC_CACHE[key] = machine_from_gpu(g)
    return _SPEC_CACHE[key]


# --- running one model ------------------------------------------------------------


def predict(model: str, k, m, lam: float = 1.0):
    """The model's result object for kernel ``k`` on machine ``m``."""
    from placement.models import bsp, gpuperf, mwp_cwp

    if model == "mwp-cwp":
        return mwp_cwp.predict(k, m)
    if model == "gpuperf":
        return gpuperf.predict(k, m)
    if model == "bsp":
        return bsp.predict(k, m, lam)
    raise InputError(f"unknown model {model!r}; known: {', '.join(MODELS)}")


_SUMMARY = {
    "mwp-cwp": ("mwp", "cwp", "case"),
    "gpuperf": ("mwp", "cwp", "bound"),
    "bsp": ("lam",),
}


NO_LAMBDA = (
    "BSP needs lambda: give --lambda L, or --fit-lambda{row} to fit it on a measured run "
    "(Amaris et al. fit one lambda per GPU and application, from 0.6 to 68 on one GTX-680: there is no default)"
)
ROW_HELP = " ROW (a row number, or size=N[,block=BXxBY])"


def _lambda(args, k, m) -> float:
    from placement.models import bsp

    if args.fit_lambda is not None:
        if args.fit_lambda:
            raise InputError(
                f"--fit-lambda {args.fit_lambda}: a row selector needs --counters; with --kernel or --trace "
                "lambda is fitted on the kernel's own measured time"
            )
        if not k.measured_s:
            raise InputError("--fit-lambda needs a measured time (kernel.measured_s, or a trace with a measurement)")
        return bsp.fit_lambda(k, m, k.measured_s)
    if args.lam is None:
        raise InputError(NO_LAMBDA.format(row=""))
    return args.lam


def select_row(rows: list, selector: str, where: str):
    """The counters row a --fit-lambda selector names: a row number (1 = first data row) or
    ``size=N[,block=BXxBY[xBZ]]`` (the first row with that input size and block)."""
    sel = selector.strip()
    if sel.isdigit():
        idx = int(sel)
        if not 1 <= idx <= len(rows):
            raise InputError(f"{where}: --fit-lambda {sel}: no row {idx} (rows 1..{len(rows)})")
        return rows[idx - 1]
    want: dict = {}
    for part in sel.split(","):
        key, _, val = part.partition("=")
        key, val = key.strip().lower(), val.strip()
        try:
            if key == "size":
                want["size"] = float(val)
            elif key == "block":
                dims = [int(x) for x in val.lower().split("x")]
                want["block"] = tuple((dims + [1, 1])[:3])
            else:
                raise ValueError
        except ValueError:
            raise InputError(
                f"{where}: --fit-lambda {selector!r}: expected a row number or size=N[,block=BXxBY]"
            ) from None
    for r in rows:
        if ("size" not in want or r.input_size == want["size"]) and (
            "block" not in want or tuple(r.block) == want["block"]
        ):
            return r
    raise InputError(f"{where}: --fit-lambda {selector!r}: no row matches")


def _seconds(v) -> str:
    """A time in seconds as the tool's other times print (``4.25 µs``; '-' for none); ``--json`` keeps seconds."""
    return "-" if v is None else units.time_ns(float(v) * 1e9)


def run(args) -> int:
    if args.model == "lemeire":
        return _run_lemeire(args)
    if args.counters:
        return _run_counters(args)
    from placement.models.kernel import kernel_from_trace, load_kernel_file

    if args.kernel:
        k, overrides = load_kernel_file(args.kernel)
        if args.gpu and overrides:  # the command line wins over the file: the file's values were taken before
            log.warning("%s: --gpu %s given: the file's [machine] table (%s) is not used", args.kernel, args.gpu,
                        ", ".join(sorted(overrides)))  # fmt: skip
        m = _machine(args, None if args.gpu else overrides)
        source = args.kernel
    else:
        if not args.gpu:
            raise InputError("--trace needs --gpu (the trace does not say which GPU to model)")
        m = _machine(args)
        k = kernel_from_trace(args.trace, m.gpu)
        source = args.trace
    lam = _lambda(args, k, m) if args.model == "bsp" else 1.0
    res = predict(args.model, k, m, lam)
    doc = {"model": args.model, "machine": m.name, "kernel": k.name, "source": source}
    doc.update(res.as_dict())
    if k.measured_s:
        doc["measured_s"] = k.measured_s
        doc["error_pct"] = 100.0 * (res.time_s - k.measured_s) / k.measured_s
    if args.json:
        print_json(doc)
        return 0
    print(f"{args.model} on {m.name}: {k.name} ({source})")
    rows = [[key[:-2], _seconds(val)] if key.endswith("_s") else [key, "unbounded" if val is None else val] for key, val in doc.items()
            if key not in ("model", "machine", "kernel", "source")]  # fmt: skip
    print(table(rows, ["quantity", "value"], "lr"))
    return 0


def read_counter_rows(path: str):
    """The rows of a counters file (nvprof in the gpuperfpredict format, or an Nsight Compute
    CSV export), and the column names each canonical counter was looked up under."""
    from placement.models.counters import NVPROF_NAMES, read_counters
    from placement.models.gpuperfpredict import rows_with_code_facts
    from placement.models.ncu import NCU_NAMES, is_ncu_csv, read_ncu

    if is_ncu_csv(path):
        return read_ncu(path), NCU_NAMES
    # The known kernels of the gpuperfpredict set get the MLP and barriers of their code,
    # which nvprof cannot count (placement.models.gpuperfpredict); others keep their counters.
    return rows_with_code_facts(read_counters(path)), NVPROF_NAMES


def missing_summary(rows, names: dict) -> str:
    """Which counters the rows lack, how many rows each, and the column names tried."""
    counts: dict[str, int] = {}
    for r in rows:
        for c in r.missing:
            counts[c] = counts.get(c, 0) + 1
    return "; ".join(f"{c} in {n} rows (tried {', '.join(names.get(c, (c,)))})" for c, n in counts.items())


def _run_counters(args) -> int:
    from placement.models import bsp

    rows, names = read_counter_rows(args.counters)
    fixed = _machine(args) if args.gpu else None
    if fixed is not None:
        from placement.catalog import same_gpu

        others = sorted({d for r in rows if (d := r.spec.get("ncu_device")) and not same_gpu(d, args.gpu)})
        if others:  # the errors compare the model on --gpu with times measured on another GPU
            log.warning("%s: the measured times are the %s's; the model runs on --gpu %s, so its errors against them "
                        "compare two GPUs", args.counters, " and ".join(others), args.gpu)  # fmt: skip
    lam = 1.0
    fitted = None
    usable = [r for r in rows if r.params is not None]
    if not usable:
        raise InputError(f"{args.counters}: no row can be predicted: {missing_summary(rows, names)}")
    if args.model == "bsp":
        if args.fit_lambda is not None:
            if not args.fit_lambda:
                raise InputError(f"{args.counters}: --fit-lambda needs a row to fit on: --fit-lambda{ROW_HELP}")
            r = select_row(rows, args.fit_lambda, args.counters)
            if r.params is None:
                raise InputError(
                    f"{args.counters} row {r.row}: cannot fit lambda, counters missing: {missing_summary([r], names)}"
                )
            if not r.measured_s > 0:
                raise InputError(f"{args.counters} row {r.row}: cannot fit lambda, no measured time")
            m = fixed or _spec_machine(r.spec, f"{args.counters} row {r.row}")
            lam = bsp.fit_lambda(r.params, m, r.measured_s)
            fitted = r
        elif args.lam is not None:
            lam = args.lam
        else:
            raise InputError(f"{args.counters}: " + NO_LAMBDA.format(row=ROW_HELP))
    out = []
    errors = []
    for r in rows:
        d = {"row": r.row, "kernel": r.kernel, "input_size": _finite_or_none(r.input_size), "block": list(r.block),
             "predicted_s": None, "measured_s": _finite_or_none(r.measured_s), "error_pct": None}  # fmt: skip
        for key in ("texture", "atomics"):  # Nsight Compute: how texture loads and atomics were read
            if f"{key}_source" in r.raw:
                d[key] = r.raw[f"{key}_source"]
        if r.params is None:
            d["missing"] = list(r.missing)
            out.append(d)
            continue
        m = fixed or _spec_machine(r.spec, f"{args.counters} row {r.row}")
        res = predict(args.model, r.params, m, lam)
        d["predicted_s"] = res.time_s
        if r.measured_s > 0:
            d["error_pct"] = 100.0 * (res.time_s - r.measured_s) / r.measured_s
            if r is not fitted:  # the row lambda was fitted on is 0 by construction: not in the MAPE
                errors.append(abs(d["error_pct"]))
        for key in _SUMMARY[args.model]:
            d[key] = getattr(res, key)
        d["machine"] = m.name
        out.append(d)
    mape = sum(errors) / len(errors) if errors else None
    skipped = sum(1 for d in out if d["predicted_s"] is None)
    if skipped:
        log.warning(
            "%s: %d of %d rows lack counters and were not predicted: %s",
            args.counters,
            skipped,
            len(out),
            missing_summary(rows, names),
        )
    doc = {"model": args.model, "source": args.counters, "rows": out, "mape": mape, "mape_rows": len(errors),
           "predicted_rows": len(out) - skipped,
           "skipped_rows": skipped}  # fmt: skip
    if args.model == "bsp":
        doc["lambda"] = lam
        doc["lambda_fitted_on_row"] = fitted.row if fitted else None
    if args.json:
        print_json(doc)
        return 0
    keys = _SUMMARY[args.model]
    trows = []
    for d in out:
        pred = _seconds(d["predicted_s"])
        err = "-" if d["error_pct"] is None else f"{d['error_pct']:+.1f}"
        meas = _seconds(d["measured_s"])
        size = "-" if d["input_size"] is None else f"{d['input_size']:g}"
        extra = [("-" if d.get(k) is None else (f"{d[k]:.3g}" if isinstance(d[k], float) else str(d[k]))) for k in keys]
        trows.append([d["row"], d["kernel"], size, "x".join(map(str, d["block"][:2])), pred, meas, err, *extra])
    print(
        table(
            trows,
            ["row", "kernel", "size", "block", "predicted", "measured", "error_%", *keys],
            "rllrrrr" + "r" * len(keys),
        )
    )
    held_out = " besides the one lambda was fitted on" if fitted is not None else ""
    if mape is not None:
        tail = f"MAPE {mape:.1f} % over {plural(len(errors), 'row')}{held_out}"
    else:
        tail = f"{plural(len(out) - skipped, 'row')} predicted (no measured time{held_out})"
    if skipped:
        tail += f"; {plural(skipped, 'row')} {'lacks' if skipped == 1 else 'lack'} counters"
    if args.model == "bsp":
        tail += f"; lambda {lam:.4g}"
        if fitted is not None:
            size = "" if not math.isfinite(fitted.input_size) else f", size {fitted.input_size:g}"
            tail += (
                f" (fitted on row {fitted.row}: {fitted.kernel}{size}, block {'x'.join(map(str, fitted.block[:2]))})"
            )
    print(tail)
    return 0


def _finite_or_none(x):
    return x if x is not None and math.isfinite(x) else None


def _run_lemeire(args) -> int:
    from placement.models import lemeire

    if args.chase:
        levels = lemeire.cache_levels_from_file(args.chase)
        doc = {"model": "lemeire", "source": args.chase, "levels": [lv.as_dict() for lv in levels]}
        if args.json:
            print_json(doc)
            return 0
        rows = [[lv.name, f"{lv.latency:.1f}", "-" if lv.size_bytes is None else units.nbytes(round(lv.size_bytes)),
                 f"{_kb(lv.from_kb)}-{_kb(lv.to_kb)}"] for lv in levels]  # fmt: skip
        print(table(rows, ["level", "latency_cycles", "capacity", "footprint_kB"], "lrrl"))
        return 0
    from placement.gpu import get_gpu

    if not args.gpu:
        raise InputError("--runs needs --gpu (clock, SMs and occupancy limits)")
    gpu = get_gpu(args.gpu)
    runs = lemeire.read_runs(args.runs, instr_kernel=args.instr_kernel)
    rep = lemeire.analyze_runs(runs, gpu)
    doc = {"model": "lemeire", "source": args.runs, "gpu": gpu.name}
    doc.update(rep.as_dict())
    if args.json:
        print_json(doc)
        return 0
    rows = [
        [p.work_items, p.wg_size, p.conc_warps, f"{p.cpi_warp:.3g}", f"{p.performance / 1e9:.4g}"] for p in rep.points
    ]
    print(table(rows, ["work_items", "wg_size", "conc_warps", "CPI_warp", "Gop/s"], "rrrrr"))
    print(
        f"issue latency (min CPI_warp) {rep.issue_latency:.3g} cycles; completion latency (max) {rep.completion_latency:.3g} cycles"
    )
    print(
        f"peak {rep.peak / 1e9:.4g} Gop/s; ridge point {rep.ridge_concurrency} concurrent work items per CU (within {rep.ridge_tolerance:.0%} of peak)"
    )
    return 0


def _kb(kb: float) -> str:
    """A footprint in kB as the chase file gives it: whole kB with separators (1,529,080), fractions to 3 figures."""
    return units.count(kb) if kb >= 10 else f"{kb:.3g}"
