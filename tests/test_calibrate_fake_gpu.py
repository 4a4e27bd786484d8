"""Every benchmark of placement.calibrate.benchmarks, end to end, on a simulated GPU.

The simulated device has the interface of runner.CupyDevice (numpy arrays for device
memory) and answers each kernel with what a GPU of known parameters would measure: an L1
of 160 KiB with 128-byte lines filled in 32-byte sectors, a 4 MiB L2, latencies of 39.6 /
290 / 700 cycles, and so on (FakeGpu below). The benchmarks must find those parameters
back through the analysis, and the writer must put them into a configuration that loads.
This checks the benchmarks' layouts, arguments and reading of results; the kernels
themselves and the real numbers await a GPU.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from _kernel_launches import check_args, kernel_params

from placement import memory
from placement.calibrate import benchmarks, runner
from placement.calibrate.measurements import Device
from placement.calibrate.writer import write_config
from placement.gpu import get_gpu

KIB = 1024
MIB = 1024 * KIB


class FakeGpu:
    """The GPU's parameters (cycles at its clock)."""

    clock_mhz = 1975.0
    l1_bytes = 160 * KIB
    line = 128
    sector = 32
    l2_bytes = 4 * MIB
    l1_hit, ldg_hit, tex_hit, l2_hit, dram = 39.6, 39.7, 88.0, 290.0, 700.0
    const_l1_bytes, const_hit, const_l15 = 2 * KIB, 34.0, 104.0
    smem, ptr64 = 29.0, 32.0
    fp32_latency, int_latency, issue = 4.0, 4.5, 0.25
    bank_way = 2.0
    column_bits, row_bits = (8, 9, 10), (20, 21)
    row_hit, row_miss, row_conflict = 400.0, 700.0, 950.0
    texels_per_cycle = 4.5
    lsu_per_cycle = 0.5
    fp64_per_cycle = 48.0  # not the H100 base's 64: the configuration must take the measured rate
    loads_per_cycle = {("ldg_nc32", 0): 0.25, ("ldg_nc32", 1): 0.2, ("ldg32", 0): 0.5, ("ldg32", 1): 0.4}
    quarters_per_cycle = {32: 0.15, 40: 0.6}  # the same banks at a quarter of the rate: a 4-way conflict, ratio 4


PARAMS = {(cu.stem, name): types for cu in (Path(runner.__file__).resolve().parent / "kernels").glob("*.cu")
          for name, types in kernel_params(cu.read_text()).items()}  # fmt: skip
"""(module, kernel) -> its parameters' C types, from kernels/*.cu: every launch is held against them (``check_args``;
a pointer may also be given a raw 64-bit device address, as the chase's first node is)."""


class FakeDevice:
    """runner.CupyDevice's interface over numpy, answering like FakeGpu."""

    def __init__(self):
        g = FakeGpu
        self.info = Device("NVIDIA H100 80GB HBM3", 0, (9, 0), 4, "580.159.04", "13.0", g.l2_bytes, 256 * MIB, 1980.0)
        self.layout: dict[int, tuple[int, int, int]] = {}  # id(buffer) -> (step words, nodes, offset)
        self.const_nodes = 0
        self.launches = 0

    # the interface
    def function(self, module, kernel, *, max_l1=False, dynamic_shared=0):
        return (module, kernel)

    def empty(self, n, dtype):
        return np.empty(int(n), dtype)

    def zeros(self, n, dtype):
        return np.zeros(int(n), dtype)

    def upload(self, a):
        return np.array(a)

    def download(self, d):
        return np.array(d)

    def write_strided(self, buf, step, values, offset=0):
        buf[offset : offset + values.size * step : step] = values
        self.layout[id(buf)] = (step, values.size, offset)

    def pointer(self, d):
        return 0x7F0000000000

    def free_bytes(self):
        return 64 * MIB

    def set_constant(self, module, symbol, values):
        assert (module, symbol) == ("pchase", "const_nodes") and values.size == 16384
        self.const_nodes = int(np.count_nonzero(values)) + 1

    def texture_u32(self, d):
        return ("texture", d)

    def flush_l2(self):
        pass

    def release(self):
        pass

    def launch(self, fn, grid, block, args, shared=0):
        self.launches += 1
        check_args(fn, PARAMS[fn], args, raw_addresses=True)
        self._run(fn[1], grid, block, args)

    def time_ms(self, fn, grid, block, args, shared=0, launches=1):
        check_args(fn, PARAMS[fn], args, raw_addresses=True)
        kernel = fn[1]
        g = FakeGpu
        if kernel == "spin":
            self._run(kernel, grid, block, args)
            return float(args[0]) / (g.clock_mhz * 1e3)
        if kernel == "empty_kernel":
            return launches * (0.0039 if grid == 1 else 0.0063)
        if kernel in ("bw_read", "bw_write"):
            return int(args[-2 if kernel == "bw_read" else 1]) * 16 / 3.0e9
        if kernel == "bw_copy":
            return int(args[2]) * 32 / 2.8e9
        if kernel == "bw_l2_read":
            return int(args[1]) * 16 * int(args[2]) / 8.0e9
        if kernel == "smem_bandwidth":
            return grid * block * int(args[0]) * 16 / 30.0e9
        if kernel == "atomic_global_spread":  # 1 G/s on one word; two units share the KiB of 32 sectors (512 B each)
            sectors, iters = int(args[1]), int(args[2])
            return grid * block * iters / (1.0e6 if sectors == 1 else 2.0e6)
        if kernel.startswith("atomic_"):
            iters = int(args[2] if kernel == "atomic_global" else args[1])
            return grid * block * iters / 1.0e6
        if kernel == "tex_throughput":
            assert args[0][0] == "texture" and int(args[2]) + 1 == args[0][1].size  # the whole texture, a power of 2
            per_sm = grid * block * int(args[1]) * 4 / self.info.sms
            return per_sm / g.texels_per_cycle / (g.clock_mhz * 1e3)
        if kernel == "smem_lds32":  # 4 LDS.32 a thread an iteration, a warp-instruction per 32 threads
            per_sm = grid * block * int(args[0]) * 4 / 32 / self.info.sms
            return per_sm / g.lsu_per_cycle / (g.clock_mhz * 1e3)
        if kernel == "dfma_throughput":  # FP64_CHAINS DFMAs a thread an iteration, each one result a lane
            assert isinstance(args[1], np.float64) and isinstance(args[3], np.ndarray) and args[3].dtype == np.float64
            per_sm = grid * block * int(args[0]) * benchmarks.FP64_CHAINS / self.info.sms
            return per_sm / g.fp64_per_cycle / (g.clock_mhz * 1e3)
        if kernel in ("ldg_nc32", "ldg32"):  # 4 loads a thread an iteration of the 16 KiB array, as smem_lds32
            mask, shift = int(args[2]), int(args[3])
            assert (mask + 1) % 128 == 0 and args[0].size >= mask + 1 + 32 * shift  # whole lines, room to shift
            per_sm = grid * block * int(args[1]) * 4 / 32 / self.info.sms
            return per_sm / g.loads_per_cycle[kernel, shift] / (g.clock_mhz * 1e3)
        if kernel == "ldg_quarters":  # as ldg32, quarter j of the warp `step` x j words after the first
            mask, step = int(args[2]), int(args[3])
            assert (mask + 1) % 128 == 0 and args[0].size > (mask + 1 - 128) + 96 + 7 + 3 * step  # the last word read
            per_sm = grid * block * int(args[1]) * 4 / 32 / self.info.sms
            return per_sm / g.quarters_per_cycle[step] / (g.clock_mhz * 1e3)
        raise AssertionError(f"time_ms of {kernel}")

    # what each kernel measures
    def _chase_cycles(self, kind, nodes, step_bytes, warm, hops):
        g = FakeGpu
        if kind == "const":
            return g.const_hit if nodes * 64 <= g.const_l1_bytes else g.const_l15
        lines_bytes = nodes * min(step_bytes, g.line)  # the lines the nodes occupy
        if kind != "ldcg" and not warm and nodes * step_bytes <= g.l2_bytes and hops == nodes - 1:
            # one cold pass in order, data in the L2: a miss fetches one sector
            return g.l1_hit + (g.l2_hit - g.l1_hit) * min(1.0, step_bytes / g.sector)
        if kind != "ldcg" and warm and lines_bytes <= g.l1_bytes:
            return {"ld": g.l1_hit, "ldg": g.ldg_hit, "tex": g.tex_hit}[kind]
        return g.l2_hit if lines_bytes <= g.l2_bytes else g.dram

    def _run(self, kernel, grid, block, args):
        g = FakeGpu
        warps = block // 32
        if kernel.startswith("chase_") and kernel not in ("chase_shared", "chase_ptr64"):
            kind = kernel[len("chase_") :]
            if kind == "const":
                warm_words, _start, _settle, hops, out = args
                nodes, step = self.const_nodes, 16
            else:
                buf = args[0][1] if kind == "tex" else args[0]
                warm_words, _start, _settle, hops, out = args[1:]
                step, nodes, _ = self.layout[id(buf)]
            out[0] = round(int(hops) * self._chase_cycles(kind, nodes, step * 4, int(warm_words) > 0, int(hops)))
        elif kernel == "chase_shared":
            out = args[-1]
            out[0] = round(int(args[4]) * g.smem)
        elif kernel == "chase_ptr64":
            out = args[-1]
            out[0] = round(int(args[3]) * g.ptr64)
        elif kernel == "spin":
            args[1][:] = int(args[0])
        elif kernel == "smem_conflict":
            ways, iters, out = int(args[0]), int(args[1]), args[2]
            out[0] = round(iters * (g.smem + g.bank_way * (ways - 1)))
        elif kernel == "syncthreads_cost":
            args[1][:] = int(args[0]) * (20 + warps)
        elif kernel.startswith("atomic_"):
            iters = int(args[2] if kernel == "atomic_global" else args[1])
            out = args[3] if kernel == "atomic_global" else args[2]
            out[:] = iters * (500 if kernel == "atomic_global" else 60)
        elif kernel.startswith("issue_"):
            iters, out = int(args[0]), args[4]
            ilp = int(kernel[-1])
            latency = g.fp32_latency if "fp32" in kernel else g.int_latency
            per_warp_inst = max(latency / (warps * ilp), g.issue)
            out[:] = round(per_warp_inst * warps * iters * ilp)
        elif kernel == "address_bit_pair":
            buf, a_words, b_words, out = args
            bit = int(np.log2((int(b_words) ^ int(a_words)) * 4))
            out[0] = g.row_miss
            out[1] = g.row_hit if bit in g.column_bits else g.row_conflict if bit in g.row_bits else g.row_miss
        elif kernel in (
            "empty_kernel",
            "tex_throughput",
            "bw_read",
            "bw_write",
            "bw_copy",
            "bw_l2_read",
            "smem_bandwidth",
            "smem_lds32",
            "ldg_nc32",
            "ldg32",
            "ldg_quarters",
            "dfma_throughput",
        ):
            pass
        else:
            raise AssertionError(f"launch of {kernel}")


def within_one_step(measured, truth, step):
    return abs(math.log(measured / truth)) <= math.log(step)


def test_every_benchmark_on_a_simulated_gpu(tmp_path):
    dev = FakeDevice()
    base = get_gpu("h100")
    cal = runner.calibrate(dev, base, quick=True, progress=False, today=lambda: "2026-11-25")
    assert cal.skipped == (), cal.skipped
    m = {k: v.value for k, v in cal.measured.items()}
    g = FakeGpu
    assert m["sm_clock_mhz"] == pytest.approx(g.clock_mhz)
    for key, want in [("l1_latency", g.l1_hit), ("ldg_latency", g.ldg_hit), ("tex_latency", g.tex_hit),
                      ("l2_latency", g.l2_hit), ("l2_latency_ldcg", g.l2_hit), ("dram_latency", g.dram),
                      ("dram_latency_ldcg", g.dram), ("const_latency", g.const_hit), ("const_l15_latency", g.const_l15),
                      ("smem_latency", g.smem), ("l1_latency_ptr64", g.ptr64)]:  # fmt: skip
        assert m[key] == pytest.approx(want, abs=0.01), key
    # the walks find the capacities within one step of the walk (1.15 in quick mode; refined inside)
    assert within_one_step(m["l1_bytes"], g.l1_bytes, 1.15)
    assert within_one_step(m["l2_bytes"], g.l2_bytes, 1.15)
    assert within_one_step(m["ro_bytes"], g.l1_bytes, 1.15) and within_one_step(m["tex_bytes"], g.l1_bytes, 1.15)
    assert within_one_step(m["const_bytes"], g.const_l1_bytes, 1.15)
    assert m["walk_l1_cycles"] == pytest.approx(g.l1_hit, abs=0.01) and m["walk_dram_cycles"] == pytest.approx(
        g.dram, abs=0.01
    )
    assert (m["sector_bytes"], m["line_bytes"]) == (32, 128)
    assert m["dram_read_gbs"] == pytest.approx(3000) and m["dram_copy_gbs"] == pytest.approx(2800)
    assert m["l2_read_gbs"] == pytest.approx(8000) and m["smem_gbs"] == pytest.approx(30000)
    assert m["smem_conflict_cycles_per_way"] == pytest.approx(g.bank_way)
    assert m["smem_32way_cycles"] == pytest.approx(g.smem + 31 * g.bank_way)
    assert (m["syncthreads_1warp_cycles"], m["syncthreads_32warps_cycles"]) == (21, 52)
    assert m["atomic_global_same_cycles"] == 500 and m["atomic_shared_distinct_cycles"] == 60
    assert m["launch_1_block_us"] == pytest.approx(3.9) and m["launch_4096_blocks_us"] == pytest.approx(6.3)
    assert m["fp32_latency"] == pytest.approx(g.fp32_latency, abs=0.01) and m["int_latency"] == pytest.approx(
        g.int_latency, abs=0.01
    )
    assert m["fp32_issue_cycles"] == pytest.approx(g.issue, abs=0.01)
    assert (
        cal.address_bits.found
        and cal.address_bits.column_bits == g.column_bits
        and cal.address_bits.row_bits == g.row_bits
    )
    assert m["dram_row_miss_ns"] == pytest.approx(g.row_miss * 1e3 / g.clock_mhz)
    assert "walk_ld" in cal.curves and "stride_cold_ld" in cal.curves and "issue_fp32_ilp4" in cal.curves
    # the configuration
    out = tmp_path / "fake.toml"
    cfg, cal2 = write_config(out, base, cal)
    assert cal2.skipped == ()
    assert cfg.caches.l1_latency == pytest.approx(g.l1_hit, abs=0.01) and cfg.memory.dram_latency == pytest.approx(
        g.dram, abs=0.01
    )
    assert cfg.compute.clock_mhz == pytest.approx(g.clock_mhz) and cfg.compute.issue_cycles == pytest.approx(
        g.issue, abs=0.01
    )
    ways = int(cfg.caches.l1.split(",")[0].split(":")[3])
    assert within_one_step(ways * 4 * 128, g.l1_bytes, 1.15)
    assert cfg.dram.row_bits == g.row_bits and cfg.dram.column_bits == g.column_bits and cfg.dram.mapping == ""
    # the launch: the 1-block empty kernel's 3.9 us, and (6.3 - 3.9) us over the 65,535 blocks between 1 and 65,536
    assert cfg.compute.launch_us == pytest.approx(3.9)
    assert cfg.compute.launch_per_block_ns == pytest.approx((6.3 - 3.9) * 1e3 / 65535)
    # atomics on one address: the simulated GPU's 1e6 adds per ms, 1 G/s, each lane one update: one every 1 ns
    assert m["atomic_global_same_gops"] == pytest.approx(1.0)
    assert cfg.memory.l2_atomic_interval_ns == pytest.approx(1.0)
    # shared atomics at the same 1 G/s, distinct words or one: 1e9 / SMs / clock lanes a cycle an SM, 32 lanes a
    # warp-instruction; the same rate on one word, so no further lane costs more
    lanes_per_cycle = 1.0e9 / cfg.compute.sms / (cfg.compute.clock_mhz * 1e6)
    assert cfg.memory.smem_atomic_cycles == pytest.approx(32 / lanes_per_cycle)
    assert cfg.memory.smem_atomic_lane_cycles == 0.0
    # the L2's atomic units: 32 sectors ran twice as fast as one word, two units share the KiB: 512 B each
    assert m["atomic_global_32_sectors_gops"] == pytest.approx(2 * m["atomic_global_one_word_gops"]) == pytest.approx(2)
    assert cfg.memory.l2_atomic_unit_bytes == 512
    # the texture units: 4 texels of 16 KiB a thread an iteration, at the simulated 4.5 texels a cycle an SM
    assert m["tex_texels_per_cycle_per_sm"] == pytest.approx(g.texels_per_cycle)
    assert m["tex_gtexels"] == pytest.approx(g.texels_per_cycle * 4 * g.clock_mhz / 1e3)
    assert cfg.compute.texels_per_cycle == pytest.approx(g.texels_per_cycle)
    # the load/store pipe: 4 LDS.32 a thread an iteration, at the simulated 0.5 warp-instructions a cycle an SM
    assert m["lsu_inst_per_cycle_per_sm"] == pytest.approx(g.lsu_per_cycle)
    assert m["lsu_ginst"] == pytest.approx(g.lsu_per_cycle * 4 * g.clock_mhz / 1e3)
    assert cfg.compute.lsu_instructions_per_cycle == pytest.approx(g.lsu_per_cycle)
    # L1-hit loads: 4 a thread an iteration, at the simulated rates of __ldg and plain loads of one and two lines;
    # the read-only rates of one and of two lines and the plain two-line rate go into the configuration
    for (kernel, shift), rate in g.loads_per_cycle.items():
        key = ("ro" if kernel == "ldg_nc32" else "ldg") + ("_split" if shift else "")
        assert m[f"{key}_inst_per_cycle_per_sm"] == pytest.approx(rate)
        assert m[f"{key}_ginst"] == pytest.approx(rate * 4 * g.clock_mhz / 1e3)
    assert cfg.compute.readonly_instructions_per_cycle == pytest.approx(g.loads_per_cycle["ldg_nc32", 0])
    assert cfg.compute.readonly_split_instructions_per_cycle == pytest.approx(g.loads_per_cycle["ldg_nc32", 1])
    assert cfg.compute.global_split_instructions_per_cycle == pytest.approx(g.loads_per_cycle["ldg32", 1])
    # the quarters in the same banks at 0.15, in others at 0.6: the first loads take 4 times as long, which gives
    # the configuration the bank rule (the H100 base has it from its architecture too)
    assert m["ldg_quarters_same_inst_per_cycle_per_sm"] == pytest.approx(0.15)
    assert m["ldg_quarters_apart_inst_per_cycle_per_sm"] == pytest.approx(0.6)
    assert base.memory.l1_bank_ratio == 0.0 and cfg.memory.l1_bank_ratio == pytest.approx(4.0)
    assert memory.l1_data_banks_of(cfg)
    # the double-precision units: 8 DFMA chains a thread, at the simulated 48 results a cycle an SM (the base's 64
    # is replaced): 48 x 4 SMs x 1,975 MHz = 379.2 G DFMA/s
    assert m["fp64_results_per_cycle_per_sm"] == pytest.approx(g.fp64_per_cycle)
    assert m["fp64_gdfma"] == pytest.approx(48 * 4 * 1975 / 1e3)
    assert base.compute.fp64_per_cycle == 0.0 and cfg.compute.fp64_per_cycle == pytest.approx(g.fp64_per_cycle)
    data = tomllib.loads(out.read_text())
    assert len(data["calibration"]["curves"]["walk_ld"]["x"]) > 40


def test_a_benchmark_error_on_the_simulated_gpu_is_a_skip():
    dev = FakeDevice()
    real = dev._run

    def run(kernel, grid, block, args):
        if kernel == "smem_conflict":
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
        real(kernel, grid, block, args)

    dev._run = run
    cal = runner.calibrate(dev, get_gpu("h100"), quick=True, progress=False,
                           benchmarks=[b for b in benchmarks.BENCHMARKS if b.name in ("clock", "bank_conflicts", "launch")])  # fmt: skip
    assert [s.benchmark for s in cal.skipped] == ["bank_conflicts"] and "CUDA_ERROR_LAUNCH_FAILED" in cal.skipped[
        0
    ].reason
    assert "smem_1way_cycles" not in cal.measured and "launch_1_block_us" in cal.measured


def test_atomic_unit_bytes_by_hand():
    from placement.calibrate.writer import atomic_unit_bytes

    # the H100 (benchmarks/atomic_contention.py): 32 sectors at 2.865 G lane-updates/s against one word's 1.354:
    # 2.116 units share the KiB, 484 B each: 512
    assert atomic_unit_bytes(2.865 / 1.354, 1024, 32) == 512
    assert atomic_unit_bytes(1.0, 1024, 32) == 1024  # one unit for the whole KiB
    assert atomic_unit_bytes(0.5, 1024, 32) == 1024  # slower spread than one word: at most the span
    assert atomic_unit_bytes(32.0, 1024, 32) == 32 and atomic_unit_bytes(40.0, 1024, 32) == 32  # a sector each
    assert atomic_unit_bytes(3.0, 1024, 32) == 256  # 341 B: 256 is nearer in log than 512


def test_a_line_past_the_bases_is_kept_as_a_measurement_not_written(monkeypatch):
    # an L1 whose capacity stays put up to nodes 256 B apart (the H200's 4-set L1 folds such strides into half its
    # sets, 30 Nov 2026): a line larger than the base's 128 B is noted and kept out of the configuration
    monkeypatch.setattr(FakeGpu, "line", 256)
    cal = runner.calibrate(FakeDevice(), get_gpu("h100"), quick=True, progress=False, today=lambda: "2026-11-25")
    m = {k: v.value for k, v in cal.measured.items()}
    assert "line_bytes" not in m and m["line_bytes_walk"] == 256
    assert any(n.startswith("line: the L1 capacity stays put up to nodes 256 B apart") for n in cal.notes)
