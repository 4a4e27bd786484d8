#!/usr/bin/env bash
# Every check that waits on a GPU, in one device call (the tool library's `run`; carry [".whl"]), most wanted first,
# each step under its own time limit, cut to what is left of BUDGET (540 s; a step with under 10 s left is skipped),
# so that the call fits the 10 minutes one command may take. Each step's output goes to $OUT/<step>.log and its
# exit status to $OUT/steps.txt ($OUT: the device's result folder; ./gpu-session-out elsewhere; the device returns
# at most 8 files, so tar the folder). Without a GPU every step fails at once with its one-line reason. On an H200
# (30 Nov 2026, Firecracker, driver 580.159.04) the whole script took 198 s: steps 1, 2, 3b and 4-8 below took 0, 6,
# 12, 2, 4, 41, 82 and 49 s (step 3 came after).
#
#   .whl/  wheels the device cannot download (it reaches nothing outside): OR-Tools and what it needs, for the
#          device's Python (README, "Trace your own kernel"):
#          python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#            -d .whl ortools==9.15.6755 immutabledict 'protobuf>=6.33.1,<6.34'
#
#   bash benchmarks/gpu_session.sh            # on the device, from the repository root
#
# The steps:
# 1. nvidia-smi;
# 2. calibrate: `placement calibrate --quick` (6 s on the H200): the configuration of the GPU, written to
#    $OUT/calibrated.toml with every measurement in its [calibration] tables;
# 3. address-issue: benchmarks/address_issue.py, what a load's own IADD3 + IMAD.WIDE and the read-only path cost at
#    1-8 warps a scheduler (the H200's __ldg builds with 2 x 2 tiles, README "where it falls short"), to
#    $OUT/address_issue.json (added 30 Nov 2026, fortieth session: not yet run on a GPU);
# 3b. conv2d-kt: benchmarks/conv2d_kt_variants.py, Kernel Tuner's convolution in G, R, S/G and S/R at 4096^2 for the
#    A100 suite's 32 (block, tile) shapes, built for the device (registers checked against the tables), timed, and
#    written to $OUT/conv2d_kt.json; `python benchmarks/make_placement_suites.py --conv-cache conv2d_kt.json
#    --conv-gpu h200 --out DIR` (the device's catalog name) makes it a suite (configs/suites/kerneltuner_conv_h200.toml
#    is the H200's, 30 Nov 2026);
# 4. l1-wavefronts: benchmarks/l1_wavefronts.py, the L1 data path's cycles per warp-load by access pattern, plain and
#    __ldg, with the Kernel Tuner convolution's own loads at each alignment (--conv);
# 5. atomic-contention: benchmarks/atomic_contention.py, every pattern again;
# 6. trace-apps: tests/test_sanitizer_gpu.py, the five trace apps against the generators (10 passed on an H100,
#    27 Nov 2026, and on the H200, 30 Nov; needs a runtime where compute-sanitizer works: Firecracker, not gVisor);
# 7. trace-rank: the issue's own check, `placement trace --time -o conv1d.parquet -- conv1d_app` then
#    `placement rank conv1d.parquet --gpu "$GPU"`; then conv1d at n = 2^22 (16,384 blocks) traced whole with --time
#    and as 2 waves of blocks (--ctas waves=2), both evaluated with arg1=C (README, "Fewer blocks than the launch");
# 8. bench-trace: `placement trace`'s speed (benchmarks/bench_trace.py at n = 2^20, 2^22 and 2^24, medians of 3,
#    host side and whole command included), with the drain thread's seconds writing and waiting.
#
# GPU: the catalog key the evaluations take: h200 where nvidia-smi names an H200 (the tool library's `status`
# named its device an H200 on 30 Nov 2026, where the sessions before had an H100), else h100; GPU=... overrides.
set -u
PY=${PYTHON:-python3}
if [ -z "${GPU:-}" ]; then
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)" in
        *H200*) GPU=h200 ;;
        *) GPU=h100 ;;
    esac
fi
BUDGET=${BUDGET:-540}  # seconds for all steps: each step's limit is cut to what is left, and a step is skipped with
# under 10 s left, so the call ends inside the device call's limit whatever the steps take
OUT=${OUT:-$PWD/gpu-session-out}
mkdir -p "$OUT"
: >"$OUT/steps.txt"
export PYTHONPATH=$PWD
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --no-deps --target /tmp/gpu-session-site .whl/*.whl >"$OUT/wheels.log" 2>&1 \
        && export PYTHONPATH=/tmp/gpu-session-site:$PWD
fi

step() {  # step NAME LIMIT_S COMMAND... (the limit cut to what is left of BUDGET)
    local name=$1 limit=$2
    shift 2
    local left=$((BUDGET - SECONDS))
    if [ "$left" -lt 10 ]; then
        echo "$name skipped: ${left}s of the ${BUDGET}s budget left" | tee -a "$OUT/steps.txt"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc ${limit}s-limit $((SECONDS - t0))s" | tee -a "$OUT/steps.txt"
}

step nvidia-smi 15 nvidia-smi
step calibrate 90 "$PY" -m placement.cli calibrate --quick -o "$OUT/calibrated.toml" --json
step address-issue 30 "$PY" benchmarks/address_issue.py --json "$OUT/address_issue.json"
step conv2d-kt 75 "$PY" benchmarks/conv2d_kt_variants.py -o "$OUT/conv2d_kt.json"
step l1-wavefronts 45 "$PY" benchmarks/l1_wavefronts.py --conv
step atomic-contention 45 "$PY" benchmarks/atomic_contention.py
step trace-apps 90 "$PY" -m pytest -q -p no:cacheprovider tests/test_sanitizer_gpu.py
trace_rank() {
    local d
    d=$(mktemp -d)
    nvcc -O3 -o "$d/conv1d_app" benchmarks/trace_apps/conv1d_app.cu &&
        "$PY" -m placement.cli trace --time -o "$d/conv1d.parquet" -- "$d/conv1d_app" &&
        "$PY" -m placement.cli info "$d/conv1d.parquet" &&
        "$PY" -m placement.cli rank "$d/conv1d.parquet" --gpu "$GPU" &&
        "$PY" -m placement.cli trace --time -o "$d/conv1d_big.parquet" -- "$d/conv1d_app" 4194304 &&
        "$PY" -m placement.cli trace --ctas waves=2 -o "$d/conv1d_w2.parquet" -- "$d/conv1d_app" 4194304 &&
        "$PY" -m placement.cli info "$d/conv1d_w2.parquet" &&
        "$PY" -m placement.cli evaluate "$d/conv1d_w2.parquet" --gpu "$GPU" --place arg1=C &&
        "$PY" -m placement.cli evaluate "$d/conv1d_big.parquet" --gpu "$GPU" --place arg1=C
}
export PY OUT GPU
export -f trace_rank
step trace-rank 150 bash -c trace_rank
step bench-trace 120 "$PY" benchmarks/bench_trace.py --sizes 20,22,24 --repeat 3 --stages
