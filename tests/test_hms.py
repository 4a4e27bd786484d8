"""The data-placement model (Huang & Li) end to end, against hand-worked numbers."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

import traces
from placement.gpu import get_gpu
from placement.staging import costs as staging_costs
from placement.evaluate_whole import WholeTraceEvaluator, evaluate
from placement.hms import Options
from placement.placements import IllegalPlacement, parse_placement, sample_placement
from traces.generators import generate
from tracemaker import vecadd

K80 = get_gpu("k80")


def one_load():
    """One warp of one block loading 32 consecutive floats of A: one 128-byte line."""
    cols, info = vecadd(ctas=1, warps_per_block=1)
    cols = {k: v[:1] for k, v in cols.items()}
    return traces.Trace(**cols, info=info)


def test_one_coalesced_load_by_hand():
    t = one_load()
    s = WholeTraceEvaluator(t, K80).sample
    # One L2 request, a miss; one DRAM request to a bank with no open row: the
    # row-buffer miss time, 742 ns = 649.25 cycles at 875 MHz, with no queue.
    assert (s.mem_requests, s.dram_requests) == (1, 1)
    assert s.row_buffer == {"hit": 0, "miss": 1, "conflict": 0}
    assert s.dram_lat == pytest.approx(742 * 0.875)
    assert s.amat == pytest.approx(742 * 0.875)
    assert s.mean_queuing_delay == 0.0
    # No replay: 32 lanes x 4 bytes = one 128-byte transaction.
    assert sum(s.replays.values()) == 0
    assert s.issued_instructions == 10  # the trace's executed count (tracemaker: 10 per warp)
    # One warp resident: N = 1, ITILP = min(1 x 1, 9 / (32 / 192)) = 1
    assert (s.n, s.itilp) == (1, 1.0)
    # T_comp = (10 x 1 / 1) x 9 / 1 = 90 cycles (Eq. 2-3, no W_serial)
    assert s.t_comp == pytest.approx(90.0)
    # MWP = CWP = N = 1, ITMLP = 1: T_mem = 1 request x AMAT (Eq. 4, 17)
    assert (s.mwp, s.cwp, s.itmlp) == (1.0, 1.0, 1.0)
    assert s.t_mem == pytest.approx(649.25)
    # CWP <= MWP: zeta = 1, F_overlap = (1 - 1) / 1 = 0, no overlap (GPUPerf Eq. 16-17)
    assert s.t_overlap == 0.0
    assert s.cycles == pytest.approx(739.25)
    assert s.time_ns == pytest.approx(739.25 / 0.875)


@pytest.fixture(scope="module")
def vec():
    cols, info = generate("vecadd", [65536], None)
    return traces.Trace(**cols, info=info)


def test_sample_as_target_predicts_the_sample(vec):
    ev = evaluate(vec, K80, sample_placement(vec.info))
    assert ev.target == ev.sample and ev.speedup == 1.0
    ev2 = evaluate(vec, K80, parse_placement("a=G", vec.info))
    assert ev2.target.time_ns == ev2.sample.time_ns


def test_inputs_to_texture_remove_two_address_instructions_per_load(vec):
    ev = evaluate(vec, K80, parse_placement("a=T,b=T", vec.info))
    warps = vec.info.instructions.warps
    loads = int(((vec.obj == 0) | (vec.obj == 1)).sum())
    assert loads == 2 * warps
    assert ev.target.addressing_delta == -2 * loads  # Kepler float: G 2 -> T 0 (Sec. III-B)
    # coalesced either way: no replay changes, so issued drops by exactly the addressing delta
    assert ev.target.issued_instructions == ev.sample.issued_instructions - 2 * loads
    assert ev.target.caches["tex.texture1d"]["requests"] > 0


def test_staged_placement_over_capacity_is_refused(run_cli, tmp_path):
    # one warp reads 32 floats 2 KB apart: its tile spans 62 KB even for a window of one access
    cols, info = vecadd(ctas=1, warps_per_block=1)
    cols = {k: v[:1].copy() for k, v in cols.items()}
    cols["addr"][0] = 0x10000 + 2048 * np.arange(32, dtype=np.uint64)
    info = dataclasses.replace(info, objects=(dataclasses.replace(info.objects[0], size=2048 * 32),) + info.objects[1:])
    path = tmp_path / "v.parquet"
    traces.write(path, cols, info)
    code, out, err = run_cli("evaluate", path, "--gpu", "k80", "--place", "A=S")
    assert code == 2 and out == ""
    assert "illegal placement (shared)" in err and "need 63,504 bytes" in err and "k80 allows 49,152 per block" in err
    with pytest.raises(IllegalPlacement, match="written"):
        evaluate(traces.read(path), K80, parse_placement("C=T", info))


def test_ablations(vec):
    p = parse_placement("a=T", vec.info)
    no_q = evaluate(vec, K80, p, Options(queuing=False)).target
    assert no_q.mean_queuing_delay == 0.0 and no_q.dram_lat == pytest.approx(no_q.mean_service)
    no_count = evaluate(vec, K80, p, Options(instruction_counting=False))
    assert no_count.target.issued_instructions == no_count.sample.issued_instructions == vec.info.instructions.executed
    even = evaluate(vec, K80, p, Options(even_banks=True)).target
    assert even.dram_requests == no_q.dram_requests
    exact = evaluate(vec, K80, p, Options(queue="exact")).target
    assert exact.dram_lat >= exact.mean_service


def test_measured_sample_scales_the_prediction(vec):
    info = dataclasses.replace(vec.info, measured=traces.Measured(time_ns=50_000.0, gpu="k80"))
    t = dataclasses.replace(vec, info=info)
    ev = evaluate(t, K80, parse_placement("a=T,b=T", info))
    assert ev.predicted_ns == pytest.approx(50_000.0 * ev.target.cycles / ev.sample.cycles)


@pytest.mark.parametrize("gpu, scaled", [("k80", True), ("Tesla K80", True), ("k80-calibrated", True),
                                         ("h100", False), ("gtx980", False)])  # fmt: skip
def test_a_time_measured_on_another_gpu_scales_nothing(vec, caplog, gpu, scaled):
    """An H100's measured 50 us scaled the K80's predictions, unsaid; now the prediction is the model's own and
    ``placement.api`` says why (the catalog's spellings of one GPU, and its calibrated copy, are that GPU)."""
    import placement

    info = dataclasses.replace(vec.info, measured=traces.Measured(time_ns=50_000.0, gpu=gpu))
    t = dataclasses.replace(vec, info=info)
    ev = evaluate(t, K80, parse_placement("a=T,b=T", info))
    assert (ev.predicted_ns is not None) == scaled and (ev.measured_sample_ns is not None) == scaled
    with caplog.at_level("WARNING", logger="placement.api"):
        placement.evaluate(t, K80, "a=T,b=T")
    said = [r.getMessage() for r in caplog.records if "measured time" in r.getMessage()]
    assert said == ([] if scaled else [f"kernel 'vecadd': the sample's measured time (50.0 µs) is {gpu}'s, not k80's: "
                                       "predictions are not scaled by it"])  # fmt: skip


def test_evaluate_command_json(run_cli, tmp_path):
    cols, info = generate("vecadd", [16384], None)
    path = tmp_path / "v.parquet"
    traces.write(path, cols, info)
    code, out, err = run_cli("evaluate", path, "--gpu", "k80", "--place", "a=T", "--place", "b=C", "--json")
    assert code == 0, err
    d = json.loads(out)
    for key in ("time_ns", "t_comp", "t_mem", "t_overlap", "issued_instructions", "replays", "caches", "row_buffer",
                "mean_queuing_delay", "dram_lat", "amat", "mwp", "cwp", "itilp", "itmlp", "n", "sample"):  # fmt: skip
        assert key in d, key
    assert d["placement"] == {"a": "T", "b": "C", "v": "G"}
    # which term is T, for the target and the sample, as rank's rows say (evaluate's JSON did not)
    assert d["bound"] in ("eq1", "round", "block", "atomic") and d["sample"]["bound"] in (
        "eq1",
        "round",
        "block",
        "atomic",
    )
    eq1 = d["t_comp"] + d["t_mem"] - d["t_overlap"]
    assert (d["bound"] == "eq1") == (eq1 >= max(d["t_round"], d["t_block"], d["t_atomic"]))
    assert d["time_ns"] == pytest.approx(d["cycles"] / 0.875)
    assert d["overlap_source"].startswith("GPUPerf fallback")
    code, out, err = run_cli("evaluate", path, "--gpu", "k80", "--place", "q=T")
    assert code == 2 and "no object 'q'" in err


def test_dram_stream_by_hand():
    from types import SimpleNamespace

    from placement.hms import dram_stream
    from placement.queuing import dram_latency

    d = SimpleNamespace(order=np.array([0, 1, 2]), arrival=np.array([0.0, 0.0, 10.0]), bank=np.array([0, 0, 1]),
                        service_ns=np.array([742.0, 352.0, 742.0]))  # fmt: skip
    h = SimpleNamespace(dram=d, dram_bytes=np.array([128, 128, 128]))
    bank, arrival, busy, latency = dram_stream(h, K80)
    # bytes over bytes per cycle at the sustained bandwidth, 0.775 x 240 GB/s (Kepler's dram_sustained_fraction,
    # configs/architectures.toml), and 875 MHz
    gap = 128 / (0.775 * 240e3 / 875)
    # the second request may leave one gap after the first; the third is late enough anyway
    np.testing.assert_allclose(arrival, [0.0, gap, 10.0])
    # busy: the transfer on one of 6 channels, x 742/352 for a row miss
    np.testing.assert_allclose(busy, [gap * 6 * 742 / 352, gap * 6, gap * 6 * 742 / 352])
    np.testing.assert_allclose(latency, [742 * 0.875, 352 * 0.875, 742 * 0.875])
    q = dram_latency(bank, arrival, busy, "exact", latency=latency)
    # bank 0: the second request waits busy[0] - gap; bank 1 never waits
    wq0 = (busy[0] - gap) / 2
    assert q.mean_queuing_delay == pytest.approx(2 / 3 * wq0)
    assert q.dram_lat == pytest.approx(2 / 3 * wq0 + latency.mean())


def test_eq3_replays_and_addressing_by_hand():
    # One warp reads 32 floats of A at a 16-byte stride (A is 512 bytes): in global
    # memory 32 words x 4 B = one 128-byte transaction's worth, so no replay of cause 1
    # (the paper's rule counts words, not lines); the sample issues its 10 executed.
    cols, info = vecadd(ctas=1, warps_per_block=1)
    cols = {k: v[:1].copy() for k, v in cols.items()}
    cols["addr"][0] = 0x10000 + 16 * np.arange(32, dtype=np.uint64)
    info = dataclasses.replace(info, objects=(dataclasses.replace(info.objects[0], size=512),) + info.objects[1:])
    ev = WholeTraceEvaluator(traces.Trace(**cols, info=info), K80)
    assert ev.sample.issued_instructions == 10 and sum(ev.sample.replays.values()) == 0
    # Constant: 32 distinct addresses, 31 replays of cause 3; they span 8 lines of the
    # 64-byte constant cache, 8 misses = 8 replays of cause 2; addressing 1 - 2 = -1.
    c = ev.evaluate(parse_placement("A=C", info)).target
    assert list(c.replays.values()) == [0, 8, 31, 0]
    assert c.addressing_delta == -1 and c.issued_instructions == 10 - 1 + 8 + 31  # Eq. 3
    # Staged in shared memory (A=S means S/G): the warp's tile is elements 0..124 (500 B), copied by the
    # block's 32 threads in 4 coalesced loads (the last of 29 lanes) and 4 shared stores (8-byte banks: two
    # lanes per 64-bit word, no conflict), each with the staging loop's int instructions, then a barrier.
    # The access reads its tile offsets 16 l: 8-byte banks, lane l hits bank 2l mod 32, so lanes l and
    # l + 16 collide: one 2-way conflict, one replay of cause 4; addressing S - G = 1 - 2 = -1.
    s = ev.evaluate(parse_placement("A=S", info)).target
    per = staging_costs(K80).stage[("global", "1d")]  # A is 1D: the unrolled 1D copy's count
    added = 4 + 4 + 4 * per + staging_costs(K80).barrier
    assert s.staging["inserted"] == {"loads": 4, "stores": 4, "int": 4 * per, "barriers": 1,
                                     "writeback_loads": 0, "writeback_stores": 0}  # fmt: skip
    assert s.staging["windows"] == 1 and s.staging["tiles"] == {"A": {"bytes": 500, "pitch": 125, "pad": 0}}
    assert list(s.replays.values()) == [0, 0, 0, 1] and s.issued_instructions == 10 - 1 + 1 + added
    assert s.smem_per_block == 512
    # 1D texture: no replay, addressing 0 - 2 = -2.
    t = ev.evaluate(parse_placement("A=T", info)).target
    assert t.issued_instructions == 8 and t.caches["tex.texture1d"] == {"requests": 4, "hits": 0, "misses": 4}


def test_volta_on_issues_l1tex_replays_once(monkeypatch):
    # The same warp on the H100. From Volta on an L1TEX instruction is issued once and its bank conflicts are
    # further wavefronts of its one request (configs/architectures.toml, [NCU-L1]), so cause 4 counts but is not
    # issued again; the constant cache's causes 2 and 3 still are.
    from placement.memory import reissued_replay_causes_of

    assert reissued_replay_causes_of(K80) == (1, 2, 3, 4)
    assert reissued_replay_causes_of(get_gpu("gtx980")) == reissued_replay_causes_of(get_gpu("p100")) == (1, 2, 3, 4)
    for name in ("v100", "t4", "a100", "rtx4090", "h100"):
        assert reissued_replay_causes_of(get_gpu(name)) == (2, 3), name
    cols, info = vecadd(ctas=1, warps_per_block=1)
    cols = {k: v[:1].copy() for k, v in cols.items()}
    cols["addr"][0] = 0x10000 + 16 * np.arange(32, dtype=np.uint64)
    info = dataclasses.replace(info, objects=(dataclasses.replace(info.objects[0], size=512),) + info.objects[1:])
    trace = traces.Trace(**cols, info=info)
    ev = WholeTraceEvaluator(trace, get_gpu("h100"))
    # 4-byte banks: lane l reads word 4 l of the tile, bank 4 l mod 32, so lanes l, l + 8, l + 16 and l + 24 read
    # 4 words of one bank: a 4-way conflict, 3 replays, which add wavefronts and no issue
    s = ev.evaluate(parse_placement("A=S", info)).target
    assert list(s.replays.values()) == [0, 0, 0, 3]
    assert s.issued_instructions == s.executed_instructions
    # Kepler's rule on the same GPU issues the 3 again and leaves the data path's cycles (T_LSU) as they are
    import placement.evaluator as evr  # both evaluators take the sample's and the targets' causes there

    monkeypatch.setattr(evr, "reissued_replay_causes_of", lambda gpu: (1, 2, 3, 4))
    k = WholeTraceEvaluator(trace, get_gpu("h100")).evaluate(parse_placement("A=S", info)).target
    assert k.issued_instructions == s.issued_instructions + 3 and k.t_lsu == s.t_lsu > 0
    monkeypatch.undo()
    # the constant cache's replays are issued again: 8 misses and 31 of divergence on top of the executed count
    c = ev.evaluate(parse_placement("A=C", info)).target
    assert list(c.replays.values()) == [0, 8, 31, 0] and c.issued_instructions == c.executed_instructions + 8 + 31
    # cause 1: the warp's A load 16 bytes a lane (LDG.128), 512 bytes over the 128-byte transaction size, 3 replays;
    # Kepler issues them (10 + 3), the H100 not (10)
    wide = {k: v.copy() for k, v in cols.items()}
    wide["width"][0] = 16
    wide["addr"][0] = 0x10000 + 16 * np.arange(32, dtype=np.uint64)
    for gpu, want in (("k80", 13), ("h100", 10)):
        w = WholeTraceEvaluator(traces.Trace(**wide, info=info), get_gpu(gpu)).sample
        assert list(w.replays.values()) == [3, 0, 0, 0] and w.issued_instructions == want, gpu


def test_placement_gpus_lists_the_replays_issued_again(capsys):
    import json

    from placement.cli import main

    for gpu, want in (("k80", 4), ("t4", 2), ("h100", 2)):
        assert main(["gpus", gpu, "--json"]) == 0
        again = json.loads(capsys.readouterr().out)["model"]["replays_issued_again"]
        assert len(again) == want and "constant cache misses" in again, gpu
        assert ("shared memory bank conflicts" in again) is (want == 4), gpu


def test_evaluate_says_which_replays_are_wavefronts(tmp_path, capsys):
    # the reasons of `placement evaluate` say so on the H100 and not on the K80, whose 8-byte banks give the same
    # 16-byte stride a 2-way conflict (lanes l and l + 16 in one bank, test_eq3_replays_and_addressing_by_hand)
    from placement.cli import main

    cols, info = vecadd(ctas=1, warps_per_block=1)
    cols = {k: v[:1].copy() for k, v in cols.items()}
    cols["addr"][0] = 0x10000 + 16 * np.arange(32, dtype=np.uint64)
    info = dataclasses.replace(info, objects=(dataclasses.replace(info.objects[0], size=512),) + info.objects[1:])
    path = tmp_path / "t.parquet"
    traces.write(path, cols, info)
    said = {}
    for gpu in ("h100", "k80"):
        assert main(["evaluate", str(path), "--gpu", gpu, "--place", "A=S"]) == 0
        said[gpu] = [ln for ln in capsys.readouterr().out.splitlines() if "shared-memory bank conflicts:" in ln]
    assert (
        "+3 replays (0 -> 3; on this GPU further wavefronts of the load/store path, not issued again)"
        in said["h100"][0]
    )
    assert "+1 replays (0 -> 1)" in said["k80"][0] and "wavefronts" not in said["k80"][0]


def test_w_serial_by_hand():
    from types import SimpleNamespace

    from placement.hms import Residency, w_serial

    # 4 blocks of 2 warps on 4 SMs, one block each (#Rep = 4 / (4 x 1) = 1); 2 barriers
    # and 8 SFU instructions per warp, 16 instructions per warp in all; MWP = 5.
    info = traces.KernelInfo("k", (4, 1, 1), (64, 1, 1), (),
                             traces.Instructions(executed=128, warps=8, sync=16, sfu=64))  # fmt: skip

    def hier(l2_requests: int, l2_misses: int) -> SimpleNamespace:
        """The global requests that reach the L2 and those of them that miss (``HierarchyTotals.stat``)."""
        at = {("l2", "global"): (l2_requests, l2_requests - l2_misses, l2_misses)}
        return SimpleNamespace(stat=lambda level, space: at.get((level, space), (0, 0, 0)))

    coalesced = SimpleNamespace(lines_per_request=1.0, hier=hier(40, 40))  # every L2 request goes on to DRAM
    res = Residency(total_warps=8, active_sms=4, blocks_per_sm=1, n=2, ilp=1.0, mlp=1.0)
    # Hong & Kim Eq. 26: Departure_del_coal x (MWP - 1) x #synch x blocks/SM x #Rep, with MWP
    # capped at the block's 2 warps: 6.07 x (2 - 1) x 2 x 1 x 1; the K80's 6.07 and 1.52 are derived from the
    # peak bandwidth, so at the sustained one (Kepler: 0.775 of it) they are 6.07 / 0.775 and 1.52 / 0.775
    coal, uncoal = 6.07 / 0.775, 1.52 / 0.775
    o_sync = coal * 1 * 2
    # GPUPerf Eq. 9-10: F_SFU = 8/16 - 32/192 = 1/3; O_SFU = 8 x (8 warps / 4 SMs) x (32 / 32) x 1/3
    o_sfu = 8 * 2 * 1 * (0.5 - 32 / 192)
    w = w_serial(info, K80, coalesced, res, 5.0, 16.0)
    assert w == pytest.approx(o_sync + o_sfu)
    # Uncoalesced, 4 lines a request: Departure_del_uncoal x 4
    w4 = w_serial(info, K80, SimpleNamespace(lines_per_request=4.0, hier=hier(40, 40)), res, 5.0, 16.0)
    assert w4 == pytest.approx(uncoal * 4 * 1 * 2 + o_sfu)
    # the L2 serves 30 of the 40 global requests that reach it: the departures queue behind DRAM for a quarter
    # of them (dram_share 10 / 40); none reach the L2: DRAM's delay whole (share 1)
    w_l2 = w_serial(info, K80, SimpleNamespace(lines_per_request=1.0, hier=hier(40, 10)), res, 5.0, 16.0)
    assert w_l2 == pytest.approx(coal * 0.25 * 1 * 2 + o_sfu)
    assert w_serial(
        info, K80, SimpleNamespace(lines_per_request=1.0, hier=hier(0, 0)), res, 5.0, 16.0
    ) == pytest.approx(w)
    # the read-only path's and the texture's requests reach the same L2: 40 global (30 of them hits) and 60 read-only
    # (all hits: a staging copy through __ldg) and 20 texture ones (10 hits): 10 + 0 + 10 of 120 go on to DRAM
    at = {("l2", "global"): (40, 30, 10), ("l2", "readonly"): (60, 60, 0), ("l2", "texture1d"): (20, 10, 10)}
    spaces = SimpleNamespace(stat=lambda level, space: at.get((level, space), (0, 0, 0)))
    w_ro = w_serial(info, K80, SimpleNamespace(lines_per_request=1.0, hier=spaces), res, 5.0, 16.0)
    assert w_ro == pytest.approx(coal * (20 / 120) * 1 * 2 + o_sfu)
    # MWP below the block's warps: MWP - 1 = 0.5
    w_low = w_serial(info, K80, coalesced, res, 1.5, 16.0)
    assert w_low == pytest.approx(coal * 0.5 * 2 + o_sfu)


def test_l2_throughput_bounds_t_mem(vec):
    """T_L2 = line requests reaching the L2 / (SMs x the architecture's rate per SM); Kepler has one (0.5), Ampere none."""
    k40 = get_gpu("k40")
    ev = WholeTraceEvaluator(vec, k40)
    s = ev.sample
    # vecadd: every warp reads two 128-byte lines and writes one, all through the L2
    lines = 3 * vec.info.instructions.warps
    assert s.t_l2 == pytest.approx(lines / (15 * 0.5))
    assert s.t_mem >= s.t_l2
    assert WholeTraceEvaluator(vec, get_gpu("a100")).sample.t_l2 == 0.0


def test_t_launch_by_hand():
    """The launch (hms.t_launch): the empty kernel's floor, plus the blocks' dispatch where it outlasts T."""
    from placement.hms import t_launch

    h100 = get_gpu("h100")  # 3.872 us and 0.602 ns a block (variants-extra.csv) at 1974.7 MHz
    floor = 3872.0 * 1974.7 / 1e3  # 7,646 cycles
    dispatch = 65536 * 0.602 * 1974.7 / 1e3  # 65,536 blocks: 39.45 us = 77,907 cycles
    assert t_launch(h100, 1, 1e6) == pytest.approx(floor)
    assert t_launch(h100, 65536, 1e6) == pytest.approx(floor)  # the blocks' work hides their dispatch
    assert t_launch(h100, 65536, 1000.0) == pytest.approx(floor + dispatch - 1000.0)
    assert t_launch(K80, 65536, 10.0) == 0.0  # not in the K80's configuration


def test_every_time_includes_the_launch(vec):
    """T (cycles, time_ns) = Eq. 1's T_comp + T_mem - T_overlap plus t_launch, on a GPU that knows its launch; the
    speedups are of those times."""
    ev = WholeTraceEvaluator(vec, get_gpu("h100"))
    s = ev.sample
    assert s.t_launch >= 3872.0 * 1974.7 / 1e3
    busiest = math.ceil(vec.info.ctas / 132)  # T is the busiest of the H100's 132 SMs' (hms.blocks_scale)
    assert s.blocks_scale == pytest.approx(busiest / (vec.info.ctas / 132))
    assert s.cycles == pytest.approx(
        max(s.t_comp + s.t_mem - s.t_overlap, s.t_round, s.t_block) * s.blocks_scale + s.t_launch
    )
    assert s.time_ns == pytest.approx(s.cycles * 1e3 / 1974.7)
    t = ev.evaluate(parse_placement("a=T", vec.info))
    assert t.speedup == pytest.approx(s.cycles / t.target.cycles)
    assert WholeTraceEvaluator(vec, K80).sample.t_launch == 0.0


def test_t_mem_counts_instructions_by_hand():
    """Eq. 17 over memory instructions: 2 warp-instructions of 32 requests each (r = 32), 48 served in the SM at
    40 cycles and 16 off it at 500; one SM, N = 4 warps, MLP 1, MWP 4, CWP 4, MWP_peak_bw 320 requests."""
    from types import SimpleNamespace

    from placement.hms import Parallelism, Residency, t_mem

    mem = SimpleNamespace(requests=64, requests_per_instruction=32.0, on_chip_requests=48, on_chip_amat=40.0,
                          off_chip_requests=16, off_chip_amat=500.0, atomic_max_updates=0,
                          hier=SimpleNamespace(rounds=0, slow_rounds=0))  # fmt: skip
    res = Residency(total_warps=4, active_sms=1, blocks_per_sm=1, n=4, ilp=1.0, mlp=1.0)
    par = Parallelism(inst_per_warp=1.0, itilp=1.0, w_parallel=0.0, mwp=4.0, cwp=4.0, mwp_peak_bw=320.0)
    mt = t_mem(mem, res, par, 64.0, get_gpu("h100"))  # the path: 64 cycles for 64 requests, 1 a request
    # off the SM: ITMLP = min(MLP x min(CWP - 1, MWP), MWP_peak_bw / r) = min(3, 10) = 3, 16 / 32 instructions
    # in the SM: 40 cycles / (1 cycle x 32 requests) = 1.25 instructions in flight, ITMLP 1.25, 48 / 32 of them
    assert mt.itmlp == 3.0
    assert mt.t_mem == pytest.approx(0.5 * 500 / 3 + 1.5 * 40 / 1.25)
    assert mt.effective_requests_per_sm == pytest.approx(0.5 / 3 + 1.5 / 1.25)
    # one request an instruction (coalesced): the same formula with r = 1, each request at its own latency
    mem1 = SimpleNamespace(**{**vars(mem), "requests_per_instruction": 1.0})
    mt1 = t_mem(mem1, res, par, 64.0, get_gpu("h100"))
    # in the SM: 40 / 1 = 40 in flight, MWP min(40, N = 4), ITMLP min(1 x min(3, 4), 40) = 3
    assert mt1.t_mem == pytest.approx(16 * 500 / 3 + 48 * 40 / 3)


def test_t_round_by_hand():
    """Hong & Kim's MWP = N case over rounds: 8 warps, 4 resident on one SM (#Rep 2), 8 rounds: 2 of a staging
    copy (at the H100's measured DRAM latency, 696.91 cycles), 4 more that waited on the L2 (its hit latency,
    290.02, whatever the off-chip requests' mean) and 2 of L1 hits (40 cycles); 10 instructions a warp at 4 cycles
    (the H100's avg_inst_lat), ILP 2."""
    from types import SimpleNamespace

    from placement.hms import Parallelism, Residency, t_kernel, t_round

    h100 = get_gpu("h100")
    mem = SimpleNamespace(off_chip_amat=500.0, first_hit_amat=40.0,
                          hier=SimpleNamespace(rounds=8, slow_rounds=6, copy_rounds=2))  # fmt: skip
    res = Residency(total_warps=8, active_sms=1, blocks_per_sm=1, n=4, ilp=2.0, mlp=3.0)
    par = Parallelism(inst_per_warp=10.0, itilp=1.0, w_parallel=0.0, mwp=4.0, cwp=4.0, mwp_peak_bw=320.0)
    # waits (2 x 696.91 + 4 x 290.02 + 2 x 40) / (1 SM x 4 warps) = 658.475, plus #Rep 2 x 10 x 4 / 2 = 40
    assert t_round(mem, res, par, h100) == pytest.approx(698.475)
    # ILP below 1 counts as 1; no rounds, no bound
    assert t_round(mem, dataclasses.replace(res, ilp=0.5), par, h100) == pytest.approx(658.475 + 80.0)
    mem0 = SimpleNamespace(**{**vars(mem), "hier": SimpleNamespace(rounds=0, slow_rounds=0, copy_rounds=0)})
    assert t_round(mem0, res, par, h100) == 0.0
    # T is Eq. 1's, or T_round where the waits outlast it
    assert t_kernel(100.0, 300.0, 80.0, 698.475) == 698.475 and t_kernel(100.0, 900.0, 80.0, 698.475) == 920.0


def test_t_block_by_hand():
    """4 blocks of 2 warps on one SM, 2 resident (B = 2), 3 barriers a warp (W = 2 windows), 4 copy rounds a warp
    at the H100's measured DRAM latency (696.91 cycles), 4,000 cycles of the SM's work: k = 4 x 696.91 / 2 =
    1,393.82 a window, c = 4,000 / (4 blocks x 2) = 500. The first window side by side, k + B c = 2,393.82; the
    other 4 / 2 x 2 - 1 = 3 each the two blocks' machine-repairman cycle (placement.repairman): Q(1) = c / (k +
    c) = 0.264017, R(2) = c (1 + Q(1)) = 632.008, k + R(2) = 2,025.83 (the hard max(B c, k + c) it replaced:
    1,893.82); 8,471.30 in all."""
    from types import SimpleNamespace

    from placement.hms import Residency, t_block, t_kernel

    h100 = get_gpu("h100")
    info = SimpleNamespace(ctas=4, traced_ctas=4, instructions=SimpleNamespace(sync=24.0))
    mem = SimpleNamespace(hier=SimpleNamespace(copy_rounds=32, block_copy_rounds=16))
    res = Residency(total_warps=8, active_sms=1, blocks_per_sm=2, n=4, ilp=1.0, mlp=4.0)
    k, c = 4 * 696.91 / 2, 500.0
    r2 = c * (1 + c / (k + c))
    assert t_block(info, mem, res, 4000.0, h100) == pytest.approx(k + 2 * c + 3 * (k + r2))
    assert t_block(info, mem, res, 4000.0, h100) == pytest.approx(8471.30, abs=0.01)
    # one block at a time: every window is its copy and then its work, 4 blocks x 2 windows x (k + c)
    one = dataclasses.replace(res, blocks_per_sm=1)
    assert t_block(info, mem, one, 4000.0, h100) == pytest.approx(8 * (k + c))
    # ten times the work: c = 5,000, R(2) = 5,000 (1 + 5,000 / 6,393.82) = 8,910.03, a window 10,303.85 where
    # the SM's issue alone (B c) is 10,000: the copies are mostly, not wholly, hidden
    assert t_block(info, mem, res, 40000.0, h100) == pytest.approx(k + 10000.0 + 3 * (k + 8910.03), abs=0.02)
    # a staged placement's barriers count with the sample's; no barriers or no copy rounds: no bound
    no_sync = SimpleNamespace(ctas=4, traced_ctas=4, instructions=SimpleNamespace(sync=0.0))
    assert t_block(no_sync, mem, res, 4000.0, h100, extra_sync=24.0) == pytest.approx(8471.30, abs=0.01)
    assert t_block(no_sync, mem, res, 4000.0, h100) == 0.0
    assert t_block(info, SimpleNamespace(hier=SimpleNamespace(copy_rounds=0, block_copy_rounds=0)), res, 4000.0,
                   h100) == 0.0  # fmt: skip
    # the same 32 copy rounds, but each block's first warp takes 6 and its second 2: the barrier waits for 6 a block
    # (3 a window), k = 3 x 696.91 = 2,090.73; R(2) = c (1 + c / (k + c)) = 596.50: 2,090.73 + 1,000 + 3 x 2,687.23
    skew = SimpleNamespace(hier=SimpleNamespace(copy_rounds=32, block_copy_rounds=24))
    k6 = 6 * 696.91 / 2
    assert t_block(info, skew, res, 4000.0, h100) == pytest.approx(k6 + 2 * c + 3 * (k6 + c * (1 + c / (k6 + c))))
    assert t_block(info, skew, res, 4000.0, h100) == pytest.approx(11152.41, abs=0.01)
    assert t_kernel(100.0, 300.0, 80.0, 698.475, 8075.28) == 8075.28
    # and at least T_atomic: the L2's busiest atomic unit's chain, beside Eq. 1 rather than added to it
    assert t_kernel(100.0, 300.0, 80.0, 0.0, 0.0, 500.0) == 500.0 and t_kernel(100.0, 300.0, 80.0, 0.0, 0.0, 3.0) == 320


def test_evaluate_says_when_t_block_binds():
    """The example matmul (64^2, 16 blocks of 16 x 16) staged on the K40: 16 blocks on 15 SMs, 4 windows, one copy
    round a window and warp (M's and N's loads together), 128 warps x 4 = 512; each window's copy comes before the
    block's work with nothing else on the SM: T_block is the time, and the output says so."""
    from conftest import ROOT

    import placement

    r = placement.evaluate(ROOT / "configs" / "examples" / "matmul.parquet", "k40", "M=S/G,N=S/G")
    t = r.target.evaluation.target
    assert t.copy_rounds == 512 and t.t_block > max(t.t_round, t.t_comp + t.t_mem - t.t_overlap)
    assert t.cycles == pytest.approx(t.t_block * t.blocks_scale + t.t_launch)
    text = r.text()
    assert "the placement bound by the blocks' barriers (T_block" in text and "0 copy rounds -> 512" in text
    assert t.blocks_per_sm == 2 and "; 2 blocks an SM, copying together in the first window" in text
    assert "T_block (each window's copy, then the block's work)" in text


def test_naive_matmul_waits_on_every_round_and_its_tiles_win():
    """matmul_naive at 256^2 in 16 x 16 blocks on the H100: each warp's 512 loads (2 x 256) go in rounds of its
    sm_90 build's MLP 6.625 (``mlp.toml``; the recipe's sm_80 build has 6.281), ceil(512 / 6.625) = 78 of them,
    and every one waits on the L2 (each line of N is read by
    the block's 8 warps in the same round, so 7 of its 8 L1 hits wait for the fill). The textbook tiling's
    rounds are its copy's, one a tile (M's and N's elements loaded, then stored, then the barrier) x 16 tiles.
    Measured (h100-placements, variants-run1/2, med_us): 19.31 us naive, 14.43 us tiled, 0.747."""
    cols, info = generate("matmul_naive", [256], [16])
    t = traces.Trace(**cols, info=info)
    ev = WholeTraceEvaluator(t, get_gpu("h100"))
    s = ev.sample
    assert s.mlp == 6.625 and (s.rounds, s.slow_rounds) == (2048 * 78, 2048 * 78)
    tiled = ev.evaluate(parse_placement("M=S/G,N=S/G;windows=16", info)).target
    assert (tiled.rounds, tiled.slow_rounds, tiled.copy_rounds) == (2048 * 16,) * 3
    assert s.copy_rounds == 0
    # the naive kernel is bound by its rounds; the tiled one is faster
    assert s.cycles - s.t_launch == pytest.approx(s.t_round * s.blocks_scale)
    assert s.t_round > s.t_comp + s.t_mem - s.t_overlap
    assert tiled.cycles < 0.8 * s.cycles
    # one window, 2 blocks an SM, 31 copy rounds a warp (M's 16 loads and N's 16, the first of N in M's last): the
    # copy's latency comes before all of the blocks' work. Measured 1.16x the naive kernel (22.39 us against
    # 19.31); T_round alone had it 0.98
    one = ev.evaluate(parse_placement("M=S/G,N=S/G;windows=1", info)).target
    assert one.copy_rounds == 2048 * 31 and one.t_block > one.t_round
    # 256 blocks on 132 SMs: the busiest runs 2 (hms.blocks_scale), against 256 / 132 spread evenly
    assert one.blocks_scale == pytest.approx(2 * 132 / 256)
    assert one.cycles - one.t_launch == pytest.approx(one.t_block * one.blocks_scale)
    assert one.cycles > 1.1 * s.cycles


def test_w_serial_is_not_overlapped():
    """GPUPerf's fallback over T_comp - W_serial: the barriers a staged placement adds (O_sync, in W_serial) stay
    in T; with W_serial overlapped as GPUPerf's Eq. 16 has it, they vanished under T_mem."""
    from conftest import ROOT

    import placement
    from placement.models import gpuperf

    e = placement.evaluate(ROOT / "configs" / "examples" / "conv1d.parquet", "k80", "in=S").target.evaluation.target
    assert e.w_serial > 0
    f = gpuperf.f_overlap(e.n, e.cwp, e.mwp)
    assert e.t_overlap == pytest.approx(min((e.t_comp - e.w_serial) * f, e.t_mem))
    assert e.t_overlap < min(e.t_comp * f, e.t_mem)
    assert e.cycles == pytest.approx(
        max(e.t_comp + e.t_mem - e.t_overlap, e.t_round, e.t_block) * e.blocks_scale + e.t_launch
    )


def test_mlp_scale_by_hand():
    # GPUPerf's MLP of a placement: the sample's long-latency loads (G, R, T, 2T) over the placement's; C and a
    # staged S are not long-latency. matvec: A and x loaded once an iteration each, so x in C or staged halves
    # the long-latency loads and doubles the MLP; in R it stays; y is only stored
    from placement.hms import is_long_latency, mlp_scale

    assert [is_long_latency(s) for s in ("G", "R", "T", "2T", "C", "S", "S/G", "S/R")] == [True] * 4 + [False] * 4
    loads = {"A": 32768, "x": 32768, "y": 0}
    g = {"A": "G", "x": "G", "y": "G"}
    assert mlp_scale(g, {**g, "x": "C"}, loads) == 2.0
    assert mlp_scale(g, {**g, "x": "S/G"}, loads) == 2.0
    assert mlp_scale(g, {**g, "x": "R"}, loads) == 1.0
    # the other way, x from C to G: loads put on the long-latency path, the sample's MLP (see below)
    assert mlp_scale({**g, "x": "C"}, g, loads) == 1.0
    assert mlp_scale(g, {"A": "S/G", "x": "C", "y": "G"}, loads) == 1.0  # no long-latency load left: unchanged
    # an object put on the long-latency path (a reduction's shared array to G): the sample's MLP, whatever else
    # moves; one with no loads (y) does not count
    red = {"g_idata": 4096, "sdata": 1600}
    assert mlp_scale({"g_idata": "G", "sdata": "S"}, {"g_idata": "S/G", "sdata": "G"}, red) == 1.0
    assert mlp_scale({"g_idata": "G", "sdata": "S"}, {"g_idata": "T", "sdata": "G"}, red) == 1.0
    assert mlp_scale({**g, "y": "C"}, {**g, "x": "C", "y": "G"}, loads) == 2.0
    # x read at several addresses a load (serialized): in C an LDC the warp waits on, so it keeps its slots
    assert is_long_latency("C", True) and not is_long_latency("S/G", True) and is_long_latency("G", True)
    assert mlp_scale(g, {**g, "x": "C"}, loads, serialized={"x"}) == 1.0
    assert mlp_scale(g, {**g, "x": "S/G"}, loads, serialized={"x"}) == 2.0
    assert mlp_scale(g, {**g, "x": "C"}, loads, serialized={"A"}) == 2.0
    # room: with 32 warps and the sample's MLP 6.625, A's 32768 loads (1024 a warp) allow x 2; vecadd's b, one
    # load a warp, allows nothing (1 / 2 < 1: never below the sample's)
    assert mlp_scale(g, {**g, "x": "C"}, loads, warps=32, mlp=6.625) == 2.0
    assert mlp_scale({"a": "G", "b": "G"}, {"a": "S/G", "b": "G"}, {"a": 256, "b": 256}, warps=256, mlp=2.0) == 1.0
    assert mlp_scale(g, {**g, "x": "C"}, loads, warps=21846, mlp=1.0) == pytest.approx(1.5, rel=1e-3)  # 1.5 a warp
    # conv1d's 7 taps of in and of mask, mask to C: 14 -> 7
    assert mlp_scale({"in": "G", "mask": "G"}, {"in": "G", "mask": "C"}, {"in": 7, "mask": 7}) == 2.0
    # across barriers no load waits in flight. The naive matmul at W = 64, 128 warps, each reading M and N once a
    # k step (64 of each a warp), sample MLP 6: M staged in 8 windows (15 barriers a warp added, 8 work phases)
    # leaves N 8 loads a phase, room for 8 / 6 of the sample's MLP, not 2; in 4 windows 16 a phase (2); in 16, 4
    # (0.67: the sample's)
    from placement.hms import barrier_phases

    naive, mn, m_staged = {"M": 8192, "N": 8192}, {"M": "G", "N": "G"}, {"M": "S/G", "N": "G"}
    assert mlp_scale(mn, m_staged, naive, 128, 6.0, phases=barrier_phases(0.0, 15.0)) == pytest.approx(8 / 6)
    assert mlp_scale(mn, m_staged, naive, 128, 6.0, phases=barrier_phases(0.0, 7.0)) == 2.0
    assert mlp_scale(mn, m_staged, naive, 128, 6.0, phases=barrier_phases(0.0, 31.0)) == 1.0
    # the textbook tiled one (16 x 16 tiles): a load of each a warp and phase, 4 phases and 8 barriers; M staged
    # once more (one window, one barrier) leaves N one load a phase: nothing to gain over the sample's 1.5, where
    # the whole kernel's 4 loads a warp made it 2
    tiled = {"M": 512, "N": 512}
    assert mlp_scale(mn, m_staged, tiled, 128, 1.5, phases=barrier_phases(8.0, 1.0)) == 1.0
    assert mlp_scale(mn, m_staged, tiled, 128, 1.5) == 2.0


def test_barrier_phases_by_hand():
    """Stretches between barriers: s barriers cut a warp's program in s + 1; a staging code's 2 W - 1 (W windows:
    copy, barrier, work, barrier, the last work without its barrier) add W - 1 work phases, its copy phases none."""
    from placement.hms import barrier_phases

    assert barrier_phases(0.0) == 1.0  # straight-line code, no barrier
    assert barrier_phases(0.0, 1.0) == 1.0  # one window: copy, barrier, work
    assert barrier_phases(0.0, 2.0) == 1.0  # the privatized histogram's zeroing, barrier, atomics, barrier
    assert barrier_phases(0.0, 7.0) == 4.0  # 4 windows
    assert barrier_phases(8.0, 31.0) == 24.0  # a tiled kernel's 8 barriers and 16 windows of its own staging


def test_mlp_scale_reaches_the_model():
    # matvec, x in constant memory: the target's MLP is twice the trace's (its recipe's 6.625), so its ITMLP
    # (Eq. 14-15: MLP x MWP_cp, MWP_cp = min(max(1, CWP - 1), MWP) = 3 with CWP = MWP = 4 warps) doubles; with
    # A's requests in flight doubled its T_mem falls; T_comp (the load/store path) loses x's cycles, the
    # constant cache being a unit of its own on the H100: 32 warps x 1,024 loads, one cycle each, over 8 SMs
    cols, info = generate("matvec", [1024, 1024], [128])
    ev = WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu("h100"))
    c = ev.evaluate(parse_placement("x=C", ev.info)).target
    s = ev.sample
    assert s.itmlp == pytest.approx(6.625 * 3) and c.itmlp == pytest.approx(2 * 6.625 * 3)
    assert c.t_mem < s.t_mem and c.t_comp == pytest.approx(s.t_comp - 32 * 1024 / 8) and c.cycles < s.cycles
    r = ev.evaluate(parse_placement("x=R", ev.info)).target
    assert r.itmlp == pytest.approx(s.itmlp)


def test_serialized_constant_loads_wait_like_global_ones():
    # the tiled matrix multiply (W = 64, 16 x 16 tiles: 16 blocks of 8 warps, 4 phases): each warp's tile load of
    # M reads 32 addresses (2 rows of 16), as does N's, so all 512 loads of each are divergent. M in constant
    # memory is an LDC the warp waits on: the rounds stay the sample's 128 warps x 4 phases x 2 loads = 1,024,
    # every one waiting on the L2 (each phase's constant lines are new), and the MLP the sample's (recipe 1.5);
    # it read 512 rounds and MLP 3 while constant loads were not waited on, and ranked M=C first on the A100
    cols, info = generate("matmul_tiled", [64], [16])
    ev = WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu("a100"))
    acc = ev.accesses
    assert (acc["M"].loads, acc["M"].divergent_loads, acc["N"].divergent_loads, acc["P"].loads) == (512, 512, 512, 0)
    assert ev.serialized_loads == {"M", "N", "Mds", "Nds"}  # the tiles' reads too: Mds[ty][k], 2 rows a warp
    s = ev.sample
    m = ev.evaluate(parse_placement("M=C", ev.info)).target
    assert s.rounds == m.rounds == 1024 and m.slow_rounds == 1024
    assert m.mlp == s.mlp == pytest.approx(1.5) and m.itmlp == pytest.approx(s.itmlp)


def test_constant_accesses_leave_the_data_path_from_volta_on():
    # configs/architectures.toml's constant_own_pipe (Volta to Blackwell): the hierarchy's const_on_path
    from placement.memory import hierarchy_config

    assert [hierarchy_config(get_gpu(g)).const_on_path for g in ("k80", "gtx980", "v100", "a100", "h100")] == [
        True, True, False, False, False]  # fmt: skip


def test_l1_reads_through_the_shared_banks_from_volta_on():
    # configs/architectures.toml's l1_data_banks (Volta to Blackwell: L1 and shared memory one array); Maxwell's
    # and Pascal's L1 / texture cache is an array of its own, Kepler's L1 too
    from placement.memory import hierarchy_config

    assert [hierarchy_config(get_gpu(g)).l1_data_banks for g in ("k80", "gtx980", "v100", "a100", "h100")] == [
        False, False, True, True, True]  # fmt: skip
    # Kernel Tuner's convolution in 16 x 4 blocks at 256^2 (row pitch 270 floats: the second row's 16 words sit
    # 14 banks on, 2 banks shared): each of a warp's 225 input loads and its output store reads two lines
    # through one bank, 1 conflict each; 2,048 warps. The staged input leaves only the copy's and the store's.
    cols, info = generate("conv2d_kt", [256, 256], [16, 4, 1, 1])
    ev = WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu("a100"))
    assert ev.sample.l1_bank_conflicts == 2048 * (225 + 1)
    assert ev.evaluate(parse_placement("input=S/G", ev.info)).target.l1_bank_conflicts < 2048 * 10
    assert WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu("k80")).sample.l1_bank_conflicts == 0


def test_a_measured_l1_bank_ratio_decides_the_bank_rule():
    # placement calibrate's memory.l1_bank_ratio (the same-bank quarters' time over the others'), where measured, wins
    # over the architecture's l1_data_banks, from L1_BANK_RULE_RATIO (1.5) on: 1.05 takes the rule from an A100, 1.9
    # gives it to a GTX 980 (Maxwell: none by its architecture), 1.5 is in, and 0 (not measured) keeps the
    # architecture's. The 16 x 4 convolution's 2,048 x 226 conflicts go with it.
    import dataclasses

    from placement.memory import L1_BANK_RULE_RATIO, hierarchy_config, l1_data_banks_of

    def measured(name, ratio):
        g = get_gpu(name)
        return dataclasses.replace(g, memory=dataclasses.replace(g.memory, l1_bank_ratio=ratio))

    assert L1_BANK_RULE_RATIO == 1.5
    ratios = (0.0, 1.05, 1.49, 1.5, 2.0)
    assert [l1_data_banks_of(measured("a100", r)) for r in ratios] == [True, False, False, True, True]
    assert [l1_data_banks_of(measured("gtx980", r)) for r in (0.0, 1.9)] == [False, True]
    assert hierarchy_config(measured("a100", 1.05)).l1_data_banks is False
    cols, info = generate("conv2d_kt", [256, 256], [16, 4, 1, 1])
    trace = traces.Trace(**cols, info=info)
    assert WholeTraceEvaluator(trace, measured("a100", 2.02)).sample.l1_bank_conflicts == 2048 * (225 + 1)
    assert WholeTraceEvaluator(trace, measured("a100", 1.02)).sample.l1_bank_conflicts == 0


def test_texture_units_bound_t_comp_by_hand():
    # conv1d of 2^16 outputs, 7 taps, its input in a 1D texture: 7 x 2^16 texels (every lane active, the
    # generator clamps at the edges instead of masking); the H100's SMs fetch 4 a cycle (4 texture units,
    # configs/architectures.toml), the K80's 16; over the active SMs. T_TEX bounds T_comp's parallel part.
    cols, info = generate("conv1d", [65536, 7], [256])
    t = traces.Trace(**cols, info=info)
    in_id = next(o.id for o in info.objects if o.name == "in")
    texels = int(np.unpackbits(t.mask[(t.op == 0) & (t.obj == in_id)].view(np.uint8)).sum())
    assert texels == 7 * 65536
    for name, rate in (("h100", 4), ("k80", 16)):
        ev = WholeTraceEvaluator(t, get_gpu(name))
        tgt = ev.evaluate(parse_placement("in=T", ev.info)).target
        assert ev.sample.t_tex == 0.0
        assert tgt.t_tex == pytest.approx(texels / rate / tgt.active_sms)
        assert tgt.t_comp >= tgt.t_tex + tgt.w_serial
    # the H100's 4 a cycle make it the bound here: 7 fetches x 8 cycles a warp against the L1's 1-2 a load
    h = WholeTraceEvaluator(t, get_gpu("h100"))
    tgt = h.evaluate(parse_placement("in=T", h.info)).target
    assert tgt.t_comp == pytest.approx(tgt.t_tex) and tgt.t_tex > 2 * tgt.t_lsu


def test_texels_per_cycle_from_the_architecture():
    from placement.memory import texels_per_cycle_of

    assert [texels_per_cycle_of(get_gpu(g)) for g in ("k80", "gtx980", "v100", "a100", "h100")] == [
        16, 8, 4, 4, 4]  # fmt: skip
    # a calibrated configuration's measured rate wins over its architecture's
    h = get_gpu("h100")
    measured = dataclasses.replace(h, compute=dataclasses.replace(h.compute, texels_per_cycle=4.5))
    assert texels_per_cycle_of(measured) == 4.5


def test_lsu_instructions_per_cycle_from_the_architecture():
    # configs/architectures.toml [NVF-LSU]: 1 on cc 7.0, 8.0 and 9.0, 0.5 on GA10x (and, assumed, Turing, Ada and
    # GeForce Blackwell); Fermi to Pascal from their whitepapers' load/store units per SM over 32 lanes
    from placement.memory import lsu_instructions_per_cycle_of

    names = ("c2050", "k80", "gtx980", "p100", "v100", "rtx2080ti", "a100", "rtx3090", "rtx4090", "h100", "rtx5090")
    assert [lsu_instructions_per_cycle_of(get_gpu(g)) for g in names] == [
        0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.5]  # fmt: skip
    # a calibrated configuration's measured rate (placement calibrate's lsu) wins over its architecture's
    h = get_gpu("h100")
    measured = dataclasses.replace(h, compute=dataclasses.replace(h.compute, lsu_instructions_per_cycle=0.6))
    assert lsu_instructions_per_cycle_of(measured) == 0.6


def test_lsu_pipe_issue_bounds_t_lsu_by_hand(monkeypatch):
    # matmul_tiled, 64 x 64 in 16 x 16 tiles: each warp issues 8 LDG (4 tiles x M and N), 8 STS, 16 LDS.128 of Mds,
    # 64 LDS of Nds and 1 STG: 97 load/store-pipe warp-instructions; 128 warps, 16 blocks on 16 SMs. A GA10x SM
    # issues them at 0.5 a cycle: 12,416 x 2 / 16 = 1,552 cycles, above its data path's; the A100 issues 1 a cycle,
    # under its data path (the LDG's sectors, the broadcast LDS.128), which binds as before.
    cols, info = generate("matmul_tiled", [64], [16])
    t = traces.Trace(**cols, info=info)
    assert len(t.op) == 128 * 97 and int((t.space == 2).sum()) == 128 * 88
    ga10x = WholeTraceEvaluator(t, get_gpu("rtx3090")).sample
    assert ga10x.active_sms == 16 and ga10x.t_lsu == pytest.approx(128 * 97 * 2 / 16)
    a100 = WholeTraceEvaluator(t, get_gpu("a100")).sample
    assert a100.t_lsu > 128 * 97 / 16
    monkeypatch.setattr("placement.hms.lsu_instructions_per_cycle_of", lambda gpu: 1.0)
    path = WholeTraceEvaluator(t, get_gpu("rtx3090")).sample
    assert path.t_lsu < ga10x.t_lsu and path.t_comp < ga10x.t_comp
    assert WholeTraceEvaluator(t, get_gpu("a100")).sample.t_lsu == a100.t_lsu


def test_read_only_loads_take_the_lsu_pipe_only_where_the_l1_serves_them():
    # conv1d, 2^16 outputs, 7 taps, 256 threads: 2,048 warps of 7 loads of in, 7 of mask and 1 store. From Volta on
    # __ldg (LDG.CONSTANT) is an L1 load of the load/store pipe; the P100's goes through the texture pipe. Both GPUs
    # issue 0.5 a cycle, so the plain build's T_LSU is 30,720 x 2 over the SMs on both; in=R keeps it on the RTX 3090
    # and leaves the P100's pipe with mask's and out's 16,384 (its data path, above that, binds)
    cols, info = generate("conv1d", [65536, 7], [256])
    t = traces.Trace(**cols, info=info)
    assert len(t.op) == 2048 * 15
    for name, sms in (("p100", 56), ("rtx3090", 82)):
        ev = WholeTraceEvaluator(t, get_gpu(name))
        assert ev.sample.active_sms == sms and ev.sample.t_lsu == pytest.approx(30720 * 2 / sms)
        r = ev.evaluate(parse_placement("in=R", ev.info)).target
        if name == "rtx3090":
            assert r.t_lsu == pytest.approx(ev.sample.t_lsu)
        else:
            assert 16384 * 2 / sms < r.t_lsu < ev.sample.t_lsu


def test_a_calibrated_read_only_rate_prices_the_read_only_loads_by_hand():
    # conv1d as above, in=R: 14,336 read-only warp-loads (2,048 warps x 7 of in) and 16,384 others (mask's 7 and
    # out's store). Uncalibrated, the read-only rate is the pipe's where the L1 serves them, none (the texture pipe's,
    # unknown) on the P100. placement calibrate's loads sets compute.readonly_instructions_per_cycle: on the RTX 3090
    # each __ldg then takes 1 / rate of the one pipe, beside the others' 1 / 0.5; on the P100 the texture pipe's
    # loads are a bound of their own.
    from placement.memory import readonly_instructions_per_cycle_of

    def calibrated(name, rate):
        g = get_gpu(name)
        return dataclasses.replace(g, compute=dataclasses.replace(g.compute, readonly_instructions_per_cycle=rate))

    assert [readonly_instructions_per_cycle_of(get_gpu(g)) for g in ("p100", "v100", "a100", "rtx3090", "h100")] == [
        0.0, 1.0, 1.0, 0.5, 1.0]  # fmt: skip
    assert readonly_instructions_per_cycle_of(calibrated("p100", 0.125)) == 0.125
    cols, info = generate("conv1d", [65536, 7], [256])
    t = traces.Trace(**cols, info=info)
    for rate, cycles in ((0.25, 16384 * 2 + 14336 * 4), (1.0, 16384 * 2 + 14336 * 1)):
        ev = WholeTraceEvaluator(t, calibrated("rtx3090", rate))
        assert ev.sample.t_lsu == pytest.approx(30720 * 2 / 82)  # no read-only load in the plain build
        assert ev.evaluate(parse_placement("in=R", ev.info)).target.t_lsu == pytest.approx(cycles / 82)
    ev = WholeTraceEvaluator(t, calibrated("p100", 0.125))
    assert ev.evaluate(parse_placement("in=R", ev.info)).target.t_lsu == pytest.approx(14336 * 8 / 56)


def test_a_calibrated_two_line_read_only_rate_prices_the_shifted_taps_by_hand():
    # conv1d in=R as above: a warp's 32 outputs read in[32 w + j], j = 0..6, from an array whose base is 256-byte
    # aligned, so tap 0 reads one line and taps 1..6 two: 2,048 warps x 6 = 12,288 read-only warp-loads on two lines,
    # 2,048 on one. placement calibrate's ro_split rate (compute.readonly_split_instructions_per_cycle) prices the
    # first, its one-line rate the others; uncalibrated, the two-line rate is the one-line rate.
    from placement.memory import readonly_split_instructions_per_cycle_of

    def calibrated(name, one, two):
        g = get_gpu(name)
        c = dataclasses.replace(
            g.compute, readonly_instructions_per_cycle=one, readonly_split_instructions_per_cycle=two
        )
        return dataclasses.replace(g, compute=c)

    assert [readonly_split_instructions_per_cycle_of(get_gpu(g)) for g in ("p100", "a100", "rtx3090")] == [
        0.0,
        1.0,
        0.5,
    ]
    assert readonly_split_instructions_per_cycle_of(calibrated("a100", 1.0, 0.0)) == 1.0
    cols, info = generate("conv1d", [65536, 7], [256])
    t = traces.Trace(**cols, info=info)
    assert next(o for o in info.objects if o.name == "in").base % 256 == 0
    for two, cycles in ((0.25, 16384 * 2 + 2048 * 1 + 12288 * 4), (1.0, 16384 * 2 + 14336 * 1)):
        ev = WholeTraceEvaluator(t, calibrated("rtx3090", 1.0, two))
        r = ev.evaluate(parse_placement("in=R", ev.info)).target
        assert r.t_lsu == pytest.approx(cycles / 82)
    # the texture path's own bound on the P100: 2,048 at 0.125 a cycle and 12,288 at 0.0625
    ev = WholeTraceEvaluator(t, calibrated("p100", 0.125, 0.0625))
    assert ev.evaluate(parse_placement("in=R", ev.info)).target.t_lsu == pytest.approx((2048 * 8 + 12288 * 16) / 56)


def test_a_calibrated_two_line_plain_load_rate_prices_the_shifted_taps_by_hand():
    # conv1d's plain build on the A100: 30,720 load/store warp-instructions (2,048 warps x 7 of in, 7 of mask, 1
    # store), of which in's taps 1..6, 12,288, are loads the L1 serves on two lines. placement calibrate's ldg_split
    # rate (compute.global_split_instructions_per_cycle) prices those, the pipe's rate (1 a cycle) the others:
    # 18,432 + 12,288 / 0.4 cycles over the 108 SMs. Uncalibrated the data path binds: a warp's aligned tap 1 cycle,
    # its 6 shifted ones 1.25 each (5 sectors), mask's 7 broadcasts a tag-stage cycle each, the store 1: 16.5 cycles,
    # 2,048 x 16.5 = 33,792 over the pipe's 30,720; and where the shifted taps' two lines (in's lines w and w + 1 of
    # warp w) share a tag-stage set (the XOR of the line index's 2-bit fields), those 6 take 2 tag cycles each, 4.5
    # more a warp. On the K80 the L1 does not serve global loads: no change.
    from placement.memory import global_split_instructions_per_cycle_of

    def calibrated(name, two):
        g = get_gpu(name)
        return dataclasses.replace(g, compute=dataclasses.replace(g.compute, global_split_instructions_per_cycle=two))

    assert [global_split_instructions_per_cycle_of(get_gpu(g)) for g in ("a100", "rtx3090")] == [1.0, 0.5]
    cols, info = generate("conv1d", [65536, 7], [256])
    t = traces.Trace(**cols, info=info)
    uncal = WholeTraceEvaluator(t, get_gpu("a100"))
    line0 = next(o.base for o in info.objects if o.name == "in") // 128
    fold = lambda x: 0 if x == 0 else (x & 3) ^ fold(x >> 2)  # noqa: E731
    shared = sum(fold(line0 + w) == fold(line0 + w + 1) for w in range(2048))
    assert shared == 137  # of 2,048 pairs of consecutive lines, 6.7 %
    assert uncal.sample.active_sms == 108 and uncal.sample.t_lsu == pytest.approx((2048 * 16.5 + 4.5 * shared) / 108)
    ev = WholeTraceEvaluator(t, calibrated("a100", 0.4))
    assert ev.sample.t_lsu == pytest.approx((18432 + 12288 / 0.4) / 108)
    # in=R moves the taps off the plain path: the calibrated plain rate no longer applies to them
    r = parse_placement("in=R", ev.info)
    assert ev.evaluate(r).target.t_lsu == pytest.approx(uncal.evaluate(r).target.t_lsu)
    k80 = WholeTraceEvaluator(t, get_gpu("k80")).sample.t_lsu
    assert WholeTraceEvaluator(t, calibrated("k80", 0.1)).sample.t_lsu == pytest.approx(k80)
    # on Pascal calibrate's plain loads take the L2's path (no -dlcm=ca): their rate does not price L1-served ones
    assert global_split_instructions_per_cycle_of(calibrated("p100", 0.1)) == global_split_instructions_per_cycle_of(
        get_gpu("p100")
    )


def test_a_builds_dlcm_routes_its_global_loads():
    # extra.dlcm, the build's -Xptxas -dlcm (placement.memory.build_hierarchy_config): "cg" keeps global loads out of
    # the L1 everywhere; "ca" caches them where the GPU does by default (Volta on) and where the architecture takes
    # the opt-in (configs/architectures.toml global_l1_opt_in: Maxwell cc 5.2, Pascal), not on Kepler or cc 5.0
    from placement.catalog import entries
    from placement.memory import build_hierarchy_config

    cc50 = next(e.name for e in entries() if e.cc == (5, 0))
    gpus = ("gtx980", "p6000", cc50, "k40", "k80", "a100", "h100")
    routes = {dlcm: [build_hierarchy_config(get_gpu(g), {"dlcm": dlcm} if dlcm else {}).global_in_l1 for g in gpus]
              for dlcm in (None, "ca", "cg")}  # fmt: skip
    assert routes == {
        None: [False, False, False, False, False, True, True],
        "ca": [True, True, False, False, False, True, True],
        "cg": [False] * 7,
    }


def test_dlcm_ca_on_the_gtx980_by_hand():
    # gpuperfpredict's naive matMul, built with -dlcm=ca: one warp of a 16 x 16 block reads M[i * 256 + k] for its
    # two rows i, k = 0..255: 512 requests of one 32-byte sector each. Cached in the GTX-980's L1, the first read of
    # each sector misses (8 floats a sector: 2 rows x 256 / 8 = 64), the other 448 hit; without -dlcm=ca all 512 go
    # to the L2. On the K40 (Kepler: no opt-in) the build changes nothing.
    import cachesim
    from placement.memory import build_hierarchy_config

    cols, info = generate("matmul_naive", [256], [16])
    m_id = next(o.id for o in info.objects if o.name == "M")
    sel = (cols["obj"] == m_id) & (cols["cta"] == 0) & (cols["warp"] == 0)
    one = {k: v[sel] for k, v in cols.items()}
    got = {}
    for dlcm in (None, "ca"):
        extra = {**info.extra, "dlcm": dlcm} if dlcm else info.extra
        t = traces.Trace(**one, info=dataclasses.replace(info, extra=extra))
        h = cachesim.simulate_hierarchy(t, build_hierarchy_config(get_gpu("gtx980"), extra), 8).totals()
        l1, l2 = cachesim.LEVELS.index("l1"), cachesim.LEVELS.index("l2")
        got[dlcm] = (int(h.requests[l1].sum()), int(h.hits[l1].sum()), int(h.requests[l2].sum()))
    assert got == {None: (0, 0, 512), "ca": (512, 448, 64)}
    # the whole kernel: the L1 serves part of the naive kernel's loads, so it runs faster; the K40 ignores the flag
    cols, info = generate("matmul_naive", [128], [16])
    ca = dataclasses.replace(info, extra={**info.extra, "dlcm": "ca"})
    t = {
        g: [WholeTraceEvaluator(traces.Trace(**cols, info=i), get_gpu(g)).sample for i in (info, ca)]
        for g in ("gtx980", "k40")
    }
    assert "l1.global" in t["gtx980"][1].caches and "l1.global" not in t["gtx980"][0].caches
    assert t["gtx980"][1].cycles < t["gtx980"][0].cycles
    assert t["k40"][1].cycles == t["k40"][0].cycles


def test_dlcm_on_the_command_line_overrides_the_trace(run_cli, tmp_path):
    # --dlcm (evaluate, rank; placement.api's dlcm=): the build's flag over the trace's extra.dlcm
    import placement
    from placement.choices import DLCM

    assert DLCM == traces.schema.DLCM
    cols, info = generate("matmul_naive", [64], [16])
    path = tmp_path / "mm.parquet"
    traces.write(path, cols, info)
    assert "l1.global" not in placement.evaluate(path, "gtx980").to_dict()["caches"]
    d = placement.evaluate(path, "gtx980", dlcm="ca").to_dict()
    assert d["caches"]["l1.global"]["requests"] > 0 and d["options"]["dlcm"] == "ca"
    assert "l1.global" not in placement.evaluate(path, "a100", dlcm="cg").to_dict()["caches"]
    code, out, err = run_cli("evaluate", path, "--gpu", "gtx980", "--dlcm", "ca", "--json")
    assert code == 0 and json.loads(out)["caches"]["l1.global"] == d["caches"]["l1.global"]
    ranked = placement.rank(path, "gtx980", top=2, dlcm="ca").to_dict()
    assert ranked["sample"]["caches"]["l1.global"] == d["sample"]["caches"]["l1.global"]
    code, out, err = run_cli("evaluate", path, "--gpu", "gtx980", "--dlcm", "cs")
    assert code == 2 and out == "" and "--dlcm" in err
    with pytest.raises(traces.InputError, match="^--dlcm 'cs': expected one of ca, cg$"):
        placement.evaluate(path, "gtx980", dlcm="cs")


def test_dlcm_ca_where_it_changes_nothing_is_said(caplog):
    """``--dlcm ca`` on the K80 (Kepler caches no global load in its L1) was accepted and changed nothing, unsaid."""
    import placement

    cols, info = generate("matmul_naive", [64], [16])
    t = traces.Trace(**cols, info=info)
    for gpu, said in (("k80", True), ("gtx980", False)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="placement.api"):
            d = placement.evaluate(t, gpu, dlcm="ca").to_dict()
        assert ("l1.global" in d["caches"]) != said
        assert any("--dlcm ca: k80 (kepler) caches no global load" in r.getMessage() for r in caplog.records) == said


@pytest.mark.parametrize("gpu_name", ["v100", "k80"])
def test_o_syncs_departure_counts_the_lines_of_every_path(gpu_name):
    # Eq. 26's Departure_delay from the lines per request: A read 64 bytes off its lines' start, so each of its 4
    # warp-loads touches 2 lines, B's loads and C's stores 1 each: (4 x 2 + 4 + 4) / 12 = 4/3 whether A is read by
    # plain loads, through the read-only path (__ldg) or a texture; before the thirty-fifth session a staging copy
    # through __ldg counted B and C alone, (4 + 4) / 8 = 1, coalesced, and took another departure than its S/G twin
    from placement.hms import _memory
    from traces.codes import SPACE_CODES

    cols, info = vecadd()
    a = cols["obj"] == 0
    cols["addr"][a] += np.uint64(64)
    gpu = get_gpu(gpu_name)
    for space in ("global", "readonly", "texture1d"):
        c = dict(cols, space=np.where(a, SPACE_CODES[space], 0).astype(np.int8))
        mem = _memory(traces.Trace(**c, info=info), gpu, 1, Options(), 8.0)
        assert mem.lines_per_request == pytest.approx(4 / 3), space
        # GPUPerf's avg_trans_warp (Eq. 13) stays the global loads' and stores'
        assert mem.avg_trans_warp == pytest.approx(4 / 3 if space == "global" else 1.0), space


def test_rank_text_gives_the_measured_scaled_times(vec):
    """The README says a measured sample time gives each prediction as measured x T(target) / T(sample): the JSON had
    them, the text of `rank` did not."""
    import placement
    from placement.textout import rank_text

    for gpu, said in (("k80", True), ("h100", False)):
        info = dataclasses.replace(vec.info, measured=traces.Measured(time_ns=50_000.0, gpu=gpu))
        r = placement.rank(dataclasses.replace(vec, info=info), K80, top=2, workers=1)
        line = next((x for x in rank_text(r).splitlines() if x.startswith("Scaled by")), None)
        assert (line is not None) == said
        if said:
            first = r.ranking[0].evaluation
            assert first.predicted_ns == pytest.approx(50_000.0 * first.target.cycles / first.sample.cycles)
            assert line.startswith("Scaled by the sample's measured 50.0 µs (measured x T(target) / T(sample)): "
                                   f"#1 {placement.units.time_ns(first.predicted_ns)}, #2 ")  # fmt: skip
            assert r.ranking[0].label != "sample" or ", the sample" not in line  # a ranked sample is named by its #
