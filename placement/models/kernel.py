"""The kernel side of the seed models: dynamic instruction counts and the launch.

:class:`KernelParams` holds Hong & Kim's Table 1 program parameters (counts per
thread, which for a warp-uniform kernel equal the counts per warp) plus the few
GPUPerf (Sim et al. Table 2) and BSP (Amaris et al. Eq. 3-5) inputs those lack.
It comes from a parameter file (:func:`load_kernel_file`), from nvprof counters
(``placement.models.counters``) or from a trace (:func:`kernel_from_trace`).
:func:`launch` turns it into the per-SM quantities every model uses (N, #Rep).
"""

from __future__ import annotations

import logging
import math
import typing
from dataclasses import dataclass, fields
from pathlib import Path

from traces.errors import InputError, shown
from traces.launch import MAX_THREADS_PER_BLOCK
from traces.tomlfile import load_toml

from ..builds import inst_scale, mlp_for
from ..occupancy import occupancy, regs_for
from .params import Machine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KernelParams:
    """Dynamic counts per warp (Hong & Kim count per thread) and the launch shape.

    ``comp_insts`` are computation instructions excluding SFU ones (shared-memory
    accesses count as computation, Hong & Kim Sec. 3.6); ``coal_mem_insts`` and
    ``uncoal_mem_insts`` are global-memory instructions. ``l1_hit_ratio`` and
    ``l2_hit_ratio`` are fractions of global memory requests served by each cache
    (GPUPerf AMAT, BSP L1 and L2).
    """

    threads_per_block: int
    blocks: int
    comp_insts: float
    coal_mem_insts: float = 0.0
    uncoal_mem_insts: float = 0.0
    synch_insts: float = 0.0
    sfu_insts: float = 0.0
    fp_insts: float | None = None
    """Floating-point instructions per warp (Sim et al. Eq. 18); None: all of comp_insts."""
    fp64_insts: float = 0.0
    """Of them, the double-precision ones per warp, for the double-precision bound
    (``placement.models.params.fp64_cycles_per_warp``); 0: none, or unknown."""
    shared_insts: float = 0.0
    """Shared-memory accesses per warp, part of comp_insts (BSP Comm_SM)."""
    uncoal_per_mw: float = 32.0
    uncoal_sectors_per_mw: float = 0.0
    """32-byte sectors an uncoalesced request moves (nvprof's L2 sectors per request); 0: unknown,
    one sector per transaction (``uncoal_per_mw``), as a strided walk has. A request of 2 lines of
    2 sectors (matrix_sum_coalesced at block 16 x 16 on Kepler) moves 4."""
    coal_per_mw: float = 1.0
    load_bytes_per_warp: float = 128.0
    regs_per_thread: int = 0
    smem_per_block: int = 0
    active_blocks_per_sm: int | None = None
    """Resident blocks per SM; None: from the occupancy calculator."""
    active_sms: int | None = None
    """SMs that run blocks; None: min(#SMs, #blocks)."""
    ilp: float = 1.0
    mlp: float = 1.0
    l1_hit_ratio: float = 0.0
    l2_hit_ratio: float = 0.0
    bank_conflict_insts: float = 0.0
    """Replayed shared-memory instructions per warp (Sim et al. O_bank)."""
    divergent_insts: float = 0.0
    """Extra instructions per warp from divergent paths (Sim et al. O_CFdiv)."""
    data_bytes: float = 0.0
    """Bytes the kernel must move from DRAM (Sim et al. Eq. 19 size of data); 0: unknown."""
    l2_transactions: float = 0.0
    """L2 transactions per warp (global load + store requests x nvprof's transactions per
    request: one per 128-byte line touched); 0: unknown, no L2 throughput bound
    (``placement.models.l2bound``)."""
    store_insts: float = 0.0
    """Of the global memory instructions (coal_mem_insts + uncoal_mem_insts), the stores per
    warp; 0: unknown (all counted as loads, as Hong & Kim do). A warp does not wait on its
    stores (no instruction uses their value), so only loads add to a warp's own memory
    waiting (MWP-CWP Eq. 22)."""
    l2_sectors: float = 0.0
    """32-byte L2 sectors per warp that global loads and stores query (nvprof
    l2_read/write_transactions of L1 requests); 0: unknown. BSP's Comm_GM counts these
    (``placement.models.bsp``)."""
    name: str = "kernel"
    input_size: float | None = None
    measured_s: float | None = None

    def __post_init__(self) -> None:
        # 0 is not "not given": it would run the models' default launch for a machine the caller did not describe
        for name in ("active_blocks_per_sm", "active_sms"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"KernelParams.{name}: must be at least 1 or None (the models' own), got {v!r}")

    @property
    def mem_insts(self) -> float:
        return self.coal_mem_insts + self.uncoal_mem_insts

    @property
    def global_transactions(self) -> float:
        """Transactions per warp of its global requests: #coal x coal_per_mw + #uncoal x uncoal_per_mw."""
        return self.coal_mem_insts * self.coal_per_mw + self.uncoal_mem_insts * self.uncoal_per_mw

    @property
    def uncoal_sectors(self) -> float:
        """Sectors per uncoalesced request: ``uncoal_sectors_per_mw`` when counted, else one per transaction."""
        return self.uncoal_sectors_per_mw if self.uncoal_sectors_per_mw > 0 else self.uncoal_per_mw

    @property
    def total_insts(self) -> float:
        """Hong & Kim #Total_insts = #Comp_insts + #Mem_insts (SFU counted as computation)."""
        return self.comp_insts + self.sfu_insts + self.mem_insts

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // 32)

    @property
    def total_warps(self) -> int:
        return self.blocks * self.warps_per_block

    @property
    def miss_ratio(self) -> float:
        """Fraction of global requests that reach DRAM."""
        return max(0.0, 1.0 - self.l1_hit_ratio - self.l2_hit_ratio)


@dataclass(frozen=True)
class Launch:
    """Per-SM view of a launch (Hong & Kim Eq. 20-21)."""

    active_sms: int
    active_blocks_per_sm: int
    n: int
    """#Active_warps_per_SM."""
    rep: float
    """#Rep = #Blocks / (#Active_blocks_per_SM x #Active_SMs)."""
    total_warps: int


def launch(k: KernelParams, m: Machine) -> Launch:
    """N and #Rep of ``k`` on ``m`` (Hong & Kim Sec. 3.4.1, Eq. 20-21)."""
    active_sms = min(m.sms, k.blocks) if k.active_sms is None else k.active_sms
    if k.active_blocks_per_sm is not None:
        blocks_per_sm = k.active_blocks_per_sm
    elif m.gpu is not None:
        blocks_per_sm = occupancy(m.gpu, k.threads_per_block, k.regs_per_thread, k.smem_per_block).blocks_per_sm
    else:
        blocks_per_sm = max(1, m.max_warps_per_sm // k.warps_per_block)
    # An SM never holds more blocks than the grid gives it.
    blocks_per_sm = max(1, min(blocks_per_sm, math.ceil(k.blocks / active_sms)))
    rep = k.blocks / (blocks_per_sm * active_sms)  # Eq. 21
    if m.gpu is not None:
        # Extension (off for the papers' presets): the kernel ends with its busiest SM, which runs
        # ceil(#Blocks / #Active_SMs) blocks, not the average Eq. 21 counts. The two agree for the
        # large grids of the papers; for gpuperfpredict's subSeqMax (32 blocks on the K40's 15
        # SMs) the busiest SM runs 3 blocks where the average is 2.13.
        rep = math.ceil(k.blocks / active_sms) / blocks_per_sm
    return Launch(
        active_sms=active_sms,
        active_blocks_per_sm=blocks_per_sm,
        n=blocks_per_sm * k.warps_per_block,
        rep=rep,
        total_warps=k.total_warps,
    )


# --- parameter files -------------------------------------------------------------

_KERNEL_FIELDS = {f.name: f for f in fields(KernelParams)}
# Machine values the models divide by (latencies and delays may be 0): at least MIN_POSITIVE,
# so that no quotient leaves the floats.
MIN_POSITIVE = 1e-6
_POSITIVE_MACHINE_KEYS = {"sms", "clock_mhz", "simd_width", "sfu_width", "bandwidth_gbs", "issue_cycles",
                          "transaction_bytes", "max_warps_per_sm", "ldst_units", "gamma"}  # fmt: skip
_MACHINE_KEYS = {
    "sms", "clock_mhz", "simd_width", "sfu_width", "bandwidth_gbs", "dram_latency",
    "departure_del_coal", "departure_del_uncoal", "issue_cycles", "fp_latency",
    "avg_inst_latency", "l1_latency", "l2_latency", "smem_latency", "transaction_bytes",
    "max_warps_per_sm", "gamma", "name", "ldst_units", "fp64_width",
}  # fmt: skip


MAX_PARAM = 1e18
"""Every count, size, latency or rate of a parameter file is finite and at most this."""


def _coerce(path: str, key: str, value, kind):
    base = [t for t in typing.get_args(kind) if t is not type(None)] or [kind]
    want = base[0]
    if value is None:
        return None
    if want is int:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_PARAM:
            raise InputError(f"{path}: {key}: expected an integer in [0, {MAX_PARAM:g}], got {shown(value)}")
        return value
    if want is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= MAX_PARAM:
            raise InputError(f"{path}: {key}: expected a finite number in [0, {MAX_PARAM:g}], got {shown(value)}")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"{path}: {key}: expected a string, got {shown(value)}")
    return value


def load_kernel_file(path: str | Path) -> tuple[KernelParams, dict]:
    """A kernel parameter file: ``[kernel]`` (KernelParams fields) and optional ``[machine]``.

    Returns the kernel and the machine table as a dict of Machine field overrides
    (empty when the file has none). Unknown keys are refused with the known ones.
    """
    p = str(path)
    data = load_toml(p)
    unknown = sorted(set(data) - {"kernel", "machine"})
    if unknown:
        raise InputError(f"{p}: {unknown[0]}: unknown table; expected [kernel] and optionally [machine]")
    if "kernel" not in data:
        raise InputError(f"{p}: kernel: missing table [kernel]")
    table = data["kernel"]
    hints = typing.get_type_hints(KernelParams)
    bad = sorted(set(table) - set(_KERNEL_FIELDS))
    if bad:
        raise InputError(f"{p}: kernel.{bad[0]}: unknown key; known keys: {', '.join(sorted(_KERNEL_FIELDS))}")
    values = {}
    for name, f in _KERNEL_FIELDS.items():
        if name in table:
            values[name] = _coerce(p, f"kernel.{name}", table[name], hints[name])
    for req in ("threads_per_block", "blocks", "comp_insts"):
        if req not in values:
            raise InputError(f"{p}: kernel.{req}: missing key")
    if not 1 <= values["threads_per_block"] <= MAX_THREADS_PER_BLOCK or values["blocks"] < 1:
        raise InputError(f"{p}: kernel.threads_per_block must be in 1..{MAX_THREADS_PER_BLOCK} and kernel.blocks >= 1")
    for name in ("active_blocks_per_sm", "active_sms"):  # 0 read as "not given" (the models' default) before
        if values.get(name) == 0:
            raise InputError(f"{p}: kernel.{name}: must be at least 1 (leave it out for the models' own)")
    machine = data.get("machine", {})
    bad = sorted(set(machine) - _MACHINE_KEYS)
    if bad:
        raise InputError(f"{p}: machine.{bad[0]}: unknown key; known keys: {', '.join(sorted(_MACHINE_KEYS))}")
    mhints = typing.get_type_hints(Machine)
    machine = {k: _coerce(p, f"machine.{k}", v, mhints[k]) for k, v in machine.items()}
    for k in sorted(_POSITIVE_MACHINE_KEYS & set(machine)):
        if machine[k] is not None and not machine[k] >= MIN_POSITIVE:
            raise InputError(f"{p}: machine.{k}: must be at least {MIN_POSITIVE:g}, got {shown(machine[k])}")
    return KernelParams(**values), machine


# --- traces ----------------------------------------------------------------------


_OFF_CHIP_OBJECTS = ("global", "texture1d", "texture2d", "readonly")  # the data a kernel is given in DRAM


def kernel_from_trace(path: str | Path, gpu=None) -> KernelParams:
    """Kernel parameters from a trace: instruction classes from the metadata, coalescing from addresses.

    A global request is coalesced when its active lanes touch one 128-byte line;
    otherwise it counts #lines transactions (Hong & Kim Sec. 3.4.5: compute
    capability 1.3 and later coalesce into as few transactions as possible). With ``gpu`` (a
    ``placement.gpu.Gpu``), the registers per thread are that GPU's build's where the trace has them
    (``placement.occupancy.regs_for``), and so are the MLP (``placement.builds.mlp_for``) and the instruction count
    (``placement.builds.inst_scale``), as the placement model takes them.
    """
    import numpy as np

    import traces
    from traces.codes import GLOBAL, LOCAL, READONLY, SHARED, STORE, TEXTURE1D, TEXTURE2D

    tr = traces.read(path)
    if len(tr) == 0:  # as rank and evaluate refuse it (placement.api.require_rows): a tracer that recorded nothing
        raise traces.TraceError(
            str(path), "no rows: the trace holds no memory instruction, so there is nothing to model"
        )
    info = tr.info
    ins = info.instructions
    warps = max(1, ins.warps)
    glob = np.isin(tr.space, (GLOBAL, LOCAL, TEXTURE1D, TEXTURE2D, READONLY))  # the spaces that go off chip
    shared = tr.space == SHARED
    lines_per_req = np.zeros(int(glob.sum()), dtype=np.int64)
    if lines_per_req.size:
        addr = tr.addr[glob]
        mask = tr.mask[glob]
        lanes = ((mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
        line = addr // 128
        big = np.iinfo(np.uint64).max
        line = np.where(lanes, line, big)
        srt = np.sort(line, axis=1)
        distinct = (np.diff(srt, axis=1) != 0) & (srt[:, 1:] != big)
        lines_per_req = 1 + distinct.sum(axis=1)
    coal = float((lines_per_req <= 1).sum()) / warps
    uncoal_reqs = lines_per_req[lines_per_req > 1]
    uncoal = float(uncoal_reqs.size) / warps
    per_mw = float(uncoal_reqs.mean()) if uncoal_reqs.size else 32.0
    mem = coal + uncoal
    executed = ins.executed / warps * inst_scale(info, gpu)
    comp = max(0.0, executed - mem - ins.sfu / warps)
    tpb = int(np.prod(info.block))
    blocks = int(np.prod(info.grid))
    return KernelParams(
        name=info.kernel,
        threads_per_block=tpb,
        blocks=blocks,
        comp_insts=comp,
        coal_mem_insts=coal,
        uncoal_mem_insts=uncoal,
        uncoal_per_mw=per_mw,
        store_insts=float((tr.op[glob] == STORE).sum()) / warps,
        synch_insts=ins.sync / warps,
        sfu_insts=ins.sfu / warps,
        fp_insts=(ins.fp32 + ins.fp64) / warps if (ins.fp32 or ins.fp64) else None,
        fp64_insts=ins.fp64 / warps * inst_scale(info, gpu),
        shared_insts=float(shared.sum()) / warps,
        regs_per_thread=regs_for(info, gpu) if gpu is not None else info.regs_per_thread,
        smem_per_block=info.smem_per_block,
        ilp=float(info.extra.get("ilp", 1.0)),
        mlp=mlp_for(info, gpu),
        data_bytes=float(sum(o.size for o in info.objects if o.space in _OFF_CHIP_OBJECTS)),
        measured_s=info.measured.time_ns * 1e-9 if info.measured else None,
    )
