"""The memory hierarchy over a whole trace (DESIGN.md "Caches after GPGPU-Sim's"; Huang & Li Sec. IV).

:func:`simulate_hierarchy` schedules the trace's warp-instructions on the SMs, coalesces
each one, sends the requests through the per-SM L1 (where the architecture caches
global loads), texture and constant caches and the L2 split in slices, and collects
the stream of DRAM requests, whose row-buffer outcomes :mod:`cachesim.dram` decides.

The configuration is cachesim's own :class:`HierarchyConfig` (cachesim never imports
``placement``); ``placement`` builds it from a ``placement.gpu.Gpu``: the cache strings
and latencies of ``[caches]``, sector and line bytes, shared banks and bank width of
``[memory]``, the SM count and issue cycles of ``[compute]`` and a :class:`DramConfig`
from ``[dram]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from traces.codes import SPACE_NAMES

from . import _cache_kernels as C
from . import _coalesce_kernels as Q
from . import _hierarchy_kernels as H
from ._coalesce_kernels import REPLAY_BANK_CONFLICT, REPLAY_CONST_DIVERGENCE, REPLAY_CONST_MISS, REPLAY_WORDS
from .atomics import AtomicContention, AtomicSectors
from .cache import cache_config
from .coalesce import CoalesceConfig, object_table
from .dram import DramConfig, DramResult, RowBufferStream, row_buffer
from .errors import HierarchyConfigError, SpecError
from .held import HeldRows, Rows
from .spec import CacheSpec, parse_spec

log = logging.getLogger(__name__)

LEVELS = ("l1", "tex", "const", "l2")
SPACES = SPACE_NAMES
REPLAY_CAUSES = {
    REPLAY_WORDS: "global words per warp over the transaction size",
    REPLAY_CONST_MISS: "constant cache misses",
    REPLAY_CONST_DIVERGENCE: "constant address divergence",
    REPLAY_BANK_CONFLICT: "shared memory bank conflicts",
}


@dataclass(frozen=True)
class HierarchyConfig:
    """Everything the hierarchy needs, in cachesim's own terms (see the module docstring).

    Cache strings are GPGPU-Sim's (:mod:`cachesim.spec`); an empty string means no such
    cache: an empty ``l1`` means global (and local) accesses are not cached per SM
    (Kepler's default for globals; its L1 caching of local memory is left out), an
    empty ``tex`` or ``const`` sends those requests straight to the L2, an empty ``l2``
    straight to DRAM. Routing: ``global_in_l1`` sends global loads and stores through
    the L1 (else straight to the L2); ``readonly`` names the per-SM cache of read-only
    loads (space ``readonly``): "tex", "l1" or "l2" (none: straight to the L2);
    ``tex_in_l1`` makes texture requests use the L1's array (one tag store, the
    ``l1`` string; ``tex`` is then ignored) while keeping ``tex_latency`` and their
    own counts under level "tex". ``l2`` is one slice; addresses go to slice
    (addr // l2_slice_bytes) mod l2_slices (placement passes the GPU's ``caches.l2_slice_bytes``;
    the default is GPGPU-Sim's ``dramid@8`` interleave, 256 B). Latencies are hit latencies in cycles,
    added to a request's issue cycle on its way to DRAM. ``issue_cycles`` is the cycles
    per warp-instruction issue slot of the schedule (Hong & Kim's Issue_cycles). The SM's
    load/store data path is taken to be as wide as its shared memory (``smem_banks`` x
    ``smem_bank_bytes`` per cycle): shared memory and the L1 are one SRAM array from
    Kepler on (one data path from Volta on, where the L1, texture and shared memory are
    unified), and a shared-memory wavefront moves exactly that much.
    """

    sms: int
    l2: str
    l2_slices: int
    dram: DramConfig
    l1: str = ""
    tex: str = ""
    const: str = ""
    l1_latency: float = 0.0
    tex_latency: float = 0.0
    const_latency: float = 0.0
    l2_latency: float = 0.0
    sector_bytes: int = 32
    line_bytes: int = 128
    transaction_bytes: int = 128
    smem_banks: int = 32
    smem_bank_bytes: int = 4
    l2_slice_bytes: int = 256
    issue_cycles: float = 4.0
    global_in_l1: bool = True
    readonly: str = "tex"
    tex_in_l1: bool = False
    l1_tags_per_cycle: int = 0
    """Lines the tag stage of a per-SM cache (L1, texture) resolves per cycle, at most one per set of the stage's
    own hash (``_hierarchy_kernels.tag_set``, as many sets as this, a power of two): a warp's access takes at least
    as many cycles of the load/store path as the most of its lines that share a set (0: no such bound, only the
    sectors' bytes over the path's width)."""
    l1_data_banks: bool = False
    """Whether the per-SM cache's data array is the shared memory's banks (``smem_banks`` words of
    ``smem_bank_bytes``; one array from Volta on): a warp's cached access then takes at least as many cycles as the
    most distinct words any bank serves, its lanes' words in different lines of one bank read one after the
    other, as a shared-memory bank conflict (False: no such bound)."""
    const_on_path: bool = True
    """Whether constant accesses take cycles of the load/store data path (one per distinct address). False from
    Volta on, where the indexed constant cache is a unit of its own beside L1TEX."""
    atomic_unit_bytes: int = 0
    """Global atomics: the bytes of the address space each of the L2's atomic units serves at a time, round-robin
    over ``atomic_units`` (``cachesim.atomics``); 0: each sector's updates counted alone."""
    atomic_units: int = 1
    smem_atomic_cycles: float = 0.0
    """Shared-memory atomics: the data-path cycles of a warp-instruction whose lanes update distinct words (0: an
    atomic is priced as a load, by its bank-conflict degree)."""
    smem_atomic_lane_cycles: float = 0.0
    """The cycles each further lane on one word adds (those read-modify-writes are serialized)."""
    specs: dict[str, CacheSpec | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("sms", "l2_slices"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise HierarchyConfigError(name, f"expected an integer >= 1, got {v!r}")
        v = self.l1_tags_per_cycle
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v & (v - 1):
            raise HierarchyConfigError("l1_tags_per_cycle", f"expected 0 or a power of two, got {v!r}")
        if not isinstance(self.l1_data_banks, bool):
            raise HierarchyConfigError("l1_data_banks", f"expected true or false, got {self.l1_data_banks!r}")
        for name in ("l1_latency", "tex_latency", "const_latency", "l2_latency", "issue_cycles"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0:
                raise HierarchyConfigError(name, f"expected a number of cycles >= 0, got {v!r}")
        if not isinstance(self.dram, DramConfig):
            raise HierarchyConfigError("dram", f"expected a cachesim.DramConfig, got {type(self.dram).__name__}")
        v = self.atomic_unit_bytes
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or (v and v % self.sector_bytes):
            raise HierarchyConfigError("atomic_unit_bytes", f"expected 0 or a multiple of sector_bytes, got {v!r}")
        v = self.atomic_units
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise HierarchyConfigError("atomic_units", f"expected an integer >= 1, got {v!r}")
        for name in ("smem_atomic_cycles", "smem_atomic_lane_cycles"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= 0 or v == float("inf"):
                raise HierarchyConfigError(name, f"expected a number of cycles >= 0, got {v!r}")
        v = self.l2_slice_bytes
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise HierarchyConfigError("l2_slice_bytes", f"expected a power of two, got {v!r}")
        if self.readonly not in ("tex", "l1", "l2"):
            raise HierarchyConfigError("readonly", f"expected 'tex', 'l1' or 'l2', got {self.readonly!r}")
        specs = {}
        for level in LEVELS:
            text = getattr(self, level)
            if not isinstance(text, str):
                raise HierarchyConfigError(level, f"expected a cache string, got {type(text).__name__}")
            try:
                specs[level] = parse_spec(text) if text.strip() and text.strip() != "none" else None
            except SpecError as exc:
                raise HierarchyConfigError(level, str(exc)) from None
        for level, s in specs.items():
            if s is not None and s.line < self.sector_bytes:
                raise HierarchyConfigError(
                    level, f"line of {s.line} B is smaller than sector_bytes {self.sector_bytes}"
                )
        if specs["l2"] is not None and specs["l2"].line > self.l2_slice_bytes:
            raise HierarchyConfigError(
                "l2_slice_bytes", f"{self.l2_slice_bytes} is smaller than the L2 line {specs['l2'].line} B"
            )
        if self.tex_in_l1:
            specs["tex"] = specs["l1"]
        object.__setattr__(self, "specs", specs)
        self.coalesce_config()  # validates the geometry

    def coalesce_config(self) -> CoalesceConfig:
        tex = self.specs["tex"]
        return CoalesceConfig(
            sector_bytes=self.sector_bytes, line_bytes=self.line_bytes, transaction_bytes=self.transaction_bytes,
            smem_banks=self.smem_banks, smem_bank_bytes=self.smem_bank_bytes,
            tex_line_bytes=tex.line if tex is not None else self.line_bytes,
        )  # fmt: skip


@dataclass(frozen=True)
class HierarchyResult:
    """What the hierarchy did with a trace.

    ``requests``, ``hits``, ``misses``: int64 arrays (len(LEVELS), len(SPACES)); a request is
    one access of one cache line (a sector miss counts as a miss). ``instructions`` and
    ``transactions`` per space (transactions: lines for global, local and texture,
    distinct addresses for constant, bank-conflict degree for shared). ``replays``:
    index c = Huang & Li's replay cause c (1-4; index 0 unused). The DRAM request
    stream, in issue order: ``dram_addr``, ``dram_cycle`` (estimated cycle), ``dram_obj``
    and ``dram_warp`` (global warp id cta * warps_per_block + warp; -1 for write-backs
    of evicted lines), ``dram_write``, ``dram_bytes``; ``dram`` holds their row-buffer outcomes.
    ``sm`` and ``cycle`` give each trace row's SM and issue cycle. ``lsu_cycles`` per space:
    the cycles the SMs' load/store data path spends on the space's accesses, all SMs
    together (see ``_hierarchy_kernels.walk``); ``l2_sectors`` per space: the sector-sized pieces
    of the accesses that reached the L2 (hits, misses and writes alike). ``obj_requests``, ``obj_hits``,
    ``obj_misses``: the same counts per object, int64 arrays (len(LEVELS), n_ids + 1), column ``o`` for object
    id ``o`` and the last for requests of no object (write-backs of evicted lines); summed over the objects they
    are ``requests`` etc. summed over the spaces.
    """

    requests: np.ndarray
    hits: np.ndarray
    misses: np.ndarray
    instructions: np.ndarray
    transactions: np.ndarray
    replays: np.ndarray
    dram_addr: np.ndarray
    dram_cycle: np.ndarray
    dram_obj: np.ndarray
    dram_warp: np.ndarray
    dram_write: np.ndarray
    dram_bytes: np.ndarray
    dram: DramResult
    sm: np.ndarray
    cycle: np.ndarray
    lsu_cycles: np.ndarray
    l2_sectors: np.ndarray
    obj_requests: np.ndarray
    obj_hits: np.ndarray
    obj_misses: np.ndarray
    atomics: AtomicContention = AtomicContention()
    texels: int = 0
    """Texels the texture units fetched, all SMs together: the active lanes of the texture rows."""
    rounds: int = 0
    """Rounds of MLP long-latency loads the warps issued (0 without ``mlp``; ``_hierarchy_kernels.walk``)."""
    slow_rounds: int = 0
    """Those of them that waited on the L2 or DRAM."""
    copy_rounds: int = 0
    """Those slow rounds whose loads a shared-memory store kept: a staging copy's, which its barrier waits for."""
    block_copy_rounds: int = 0
    """The copy rounds of each block's slowest warp (the one its barrier waits for), summed over the blocks: a copy
    whose tile rows are a block's width and a few columns wider gives the block's first warp a round a row more than
    the others (Kernel Tuner's convolution in 128 x 1 blocks: 30 rounds for warp 0, 15 for warps 1-3)."""
    l1_bank_conflicts: int = 0
    """Bank conflicts of the accesses a per-SM cache served (``HierarchyConfig.l1_data_banks``): each access's
    bank-conflict degree less one, summed (Nsight Compute counts them for global loads and stores as
    l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld and _op_st)."""
    readonly_split: int = 0
    """Read-only warp-instructions (``__ldg``, LDG.E.CONSTANT) whose active lanes touch more than one line: a
    stencil's shifted taps; ``placement calibrate`` times them apart (``placement.hms.t_lsu``)."""
    global_split: int = 0
    """Plain global loads served by the L1 (``HierarchyConfig.global_in_l1``) whose active lanes touch more than one
    line, as :attr:`readonly_split` for plain loads."""

    def stat(self, level: str, space: str) -> tuple[int, int, int]:
        """(requests, hits, misses) of one level for one space."""
        i, j = LEVELS.index(level), SPACES.index(space)
        return int(self.requests[i, j]), int(self.hits[i, j]), int(self.misses[i, j])

    def obj_stat(self, level: str, obj: int) -> tuple[int, int, int]:
        """(requests, hits, misses) of one level for one object id (-1: no object)."""
        i = LEVELS.index(level)
        return int(self.obj_requests[i, obj]), int(self.obj_hits[i, obj]), int(self.obj_misses[i, obj])

    def summary(self) -> dict:
        return self.totals().summary()

    def totals(self) -> "HierarchyTotals":
        """The counts without the per-row and per-request arrays (what a :class:`HierarchyStream` gives)."""
        return HierarchyTotals(
            requests=self.requests, hits=self.hits, misses=self.misses, instructions=self.instructions,
            transactions=self.transactions, replays=self.replays, lsu_cycles=self.lsu_cycles,
            l2_sectors=self.l2_sectors, dram_requests=int(self.dram_addr.shape[0]),
            dram_bytes=int(self.dram_bytes.sum(dtype=np.int64)), row_buffer=self.dram.counts(),
            n_banks=self.dram.n_banks, obj_requests=self.obj_requests, obj_hits=self.obj_hits,
            obj_misses=self.obj_misses, atomics=self.atomics, texels=self.texels, rounds=self.rounds,
            slow_rounds=self.slow_rounds, copy_rounds=self.copy_rounds, block_copy_rounds=self.block_copy_rounds,
            l1_bank_conflicts=self.l1_bank_conflicts,
            readonly_split=self.readonly_split, global_split=self.global_split,
        )  # fmt: skip


@dataclass(frozen=True)
class HierarchyTotals:
    """The counts of a :class:`HierarchyResult` (same meanings), with the DRAM request stream
    reduced to its length, its bytes, its row-buffer outcomes and the banks it reached."""

    requests: np.ndarray
    hits: np.ndarray
    misses: np.ndarray
    instructions: np.ndarray
    transactions: np.ndarray
    replays: np.ndarray
    lsu_cycles: np.ndarray
    l2_sectors: np.ndarray
    dram_requests: int
    dram_bytes: int
    row_buffer: dict[str, int]
    n_banks: int
    obj_requests: np.ndarray
    obj_hits: np.ndarray
    obj_misses: np.ndarray
    atomics: AtomicContention = AtomicContention()
    texels: int = 0
    """Texels the texture units fetched, all SMs together: the active lanes of the texture rows."""
    rounds: int = 0
    """Rounds of MLP long-latency loads the warps issued (:attr:`HierarchyResult.rounds`)."""
    slow_rounds: int = 0
    """Those of them that waited on the L2 or DRAM."""
    copy_rounds: int = 0
    """Those slow rounds whose loads a shared-memory store kept (:attr:`HierarchyResult.copy_rounds`)."""
    block_copy_rounds: int = 0
    """The copy rounds of each block's slowest warp, summed (:attr:`HierarchyResult.block_copy_rounds`)."""
    l1_bank_conflicts: int = 0
    """:attr:`HierarchyResult.l1_bank_conflicts`."""
    readonly_split: int = 0
    """:attr:`HierarchyResult.readonly_split`."""
    global_split: int = 0
    """:attr:`HierarchyResult.global_split`."""

    def stat(self, level: str, space: str) -> tuple[int, int, int]:
        """(requests, hits, misses) of one level for one space."""
        i, j = LEVELS.index(level), SPACES.index(space)
        return int(self.requests[i, j]), int(self.hits[i, j]), int(self.misses[i, j])

    obj_stat = HierarchyResult.obj_stat

    def summary(self) -> dict:
        out = {}
        for i, level in enumerate(LEVELS):
            for j, space in enumerate(SPACES):
                if self.requests[i, j]:
                    out[f"{level}.{space}"] = (int(self.requests[i, j]), int(self.hits[i, j]), int(self.misses[i, j]))
        out["replays"] = {c: int(self.replays[c]) for c in REPLAY_CAUSES}
        out["dram_requests"] = self.dram_requests
        out["row_buffer"] = dict(self.row_buffer)
        return out


def schedule(trace, sms: int, blocks_per_sm: int) -> tuple[np.ndarray, np.ndarray]:
    """(sm, issue slot) of each row; see ``_hierarchy_kernels.schedule`` for the policy."""
    n = len(trace)
    sm = np.empty(n, np.int32)
    slot = np.empty(n, np.int64)
    cta, warp, seq = _readonly(trace.cta, trace.warp, trace.seq)
    H.schedule(cta, warp, seq, trace.info.ctas, sms, blocks_per_sm, trace.info.warps_per_block, sm, slot)
    return sm, slot


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Read-only views of a trace's columns for the kernels, which only read them.

    numba compiles (and loads from its cache) one specialisation per argument type, and a
    writable array is another type than a read-only one: a trace read from Parquet has
    read-only columns, a rewritten or staged one writable ones (or a mixture), which made
    three ``walk`` and two ``schedule`` specialisations where one does the same work.
    """
    out = []
    for a in arrays:
        v = a.view()
        v.flags.writeable = False
        out.append(v)
    return tuple(out)


def _grow(out: tuple, need: int) -> tuple:
    cap = max(need, 2 * out[0].shape[0])
    new = tuple(np.empty(cap, a.dtype) for a in out)
    for a, b in zip(out, new):
        b[: a.shape[0]] = a
    return new


def _setup(config: HierarchyConfig, info, blocks_per_sm: int, mlp: float,
           warps: int | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
    """The walk's state and parameters: (cfgs, tag-store state, hp, lat, stats, object table, warps' round state:
    a column per warp of the grid, or ``warps`` columns the caller folds and zeroes wave by wave)."""
    # caches: one row of cfgs per level, tag stores laid end to end in one state array
    cfgs = np.zeros((H.N_LEVELS, C.CFG_LEN), np.int64)
    base = 0
    for k, level in enumerate(LEVELS):
        spec = config.specs[level]
        if level == "tex" and config.tex_in_l1:
            cfgs[k] = cfgs[LEVELS.index("l1")]  # the same tag store
            continue
        cfgs[k] = cache_config(spec, base)
        if spec is not None:
            base += spec.nsets * spec.assoc * (config.l2_slices if level == "l2" else config.sms)
    # with FILL (the per-SM caches' fill slots, the walk's rounds) and HINT (each set's way hints)
    state = np.zeros((6, max(base, 1)), np.uint64)

    cc = config.coalesce_config()
    hp = np.zeros(H.HP_LEN, np.int64)
    hp[: Q.N_PARAMS] = cc.params()
    hp[H.HP_SLICES] = config.l2_slices
    hp[H.HP_SLICE_SHIFT] = config.l2_slice_bytes.bit_length() - 1
    hp[H.HP_WPB] = info.warps_per_block
    hp[H.HP_GLOBAL_LVL] = H.L1 if config.global_in_l1 else H.NO_LEVEL
    hp[H.HP_RO_LVL] = {"tex": H.TEX, "l1": H.L1, "l2": H.NO_LEVEL}[config.readonly]
    hp[H.HP_PATH_BYTES] = config.smem_banks * config.smem_bank_bytes
    hp[H.HP_TAGS] = config.l1_tags_per_cycle
    hp[H.HP_CONST_PATH] = 1 if config.const_on_path else 0
    hp[H.HP_L1_BANKS] = 1 if config.l1_data_banks else 0
    hp[H.HP_SATOM] = round(config.smem_atomic_cycles * hp[H.HP_PATH_BYTES])
    hp[H.HP_SATOM_LANE] = round(config.smem_atomic_lane_cycles * hp[H.HP_PATH_BYTES])
    hp[H.HP_RESIDENT] = blocks_per_sm * info.warps_per_block
    lat = np.array(
        [config.l1_latency, config.tex_latency, config.const_latency, config.l2_latency, config.issue_cycles, mlp]
    )
    stats = np.zeros(H.STATS_LEN + (info.n_ids + 1) * H.OBJ_STRIDE, np.int64)  # the per-object counts after STATS_LEN
    columns = info.ctas * info.warps_per_block if warps is None else warps
    wst = np.zeros((H.W_ROWS, columns if mlp > 0 else 0), np.int64)
    return cfgs, state, hp, lat, stats, object_table(info), wst


def _check_mlp(mlp) -> float:
    if not isinstance(mlp, (int, float, np.integer, np.floating)) or isinstance(mlp, bool) or not 0 <= mlp < 1e6:
        raise HierarchyConfigError("mlp", f"expected a number >= 0 (0: no rounds), got {mlp!r}")
    return float(mlp)


def round_counts(wst: np.ndarray, stats: np.ndarray, warps_per_block: int,
                 folded: tuple[int, int, int, int] = (0, 0, 0, 0)) -> dict[str, int]:  # fmt: skip
    """``rounds``, ``slow_rounds``, ``copy_rounds`` and ``block_copy_rounds`` of the warps' round state after the
    walk: every round started, the slow (copy) ones closed during the walk plus each warp's last, and each block's
    slowest warp's copy rounds; ``folded``: those of the warps whose columns were folded and zeroed before
    (:func:`fold_rounds`)."""
    rounds, slow, copy, block_copy = fold_rounds(wst, folded, warps_per_block)
    return {
        "rounds": rounds,
        "slow_rounds": int(stats[H.SLOW_ROUNDS]) + slow,
        "copy_rounds": int(stats[H.COPY_ROUNDS]) + copy,
        "block_copy_rounds": block_copy,
    }


def fold_rounds(wst: np.ndarray, folded: tuple[int, int, int, int],
                warps_per_block: int) -> tuple[int, int, int, int]:  # fmt: skip
    """``folded`` plus the warps of ``wst``: their rounds started, their last rounds that were slow and copies', and
    the copy rounds of each block's slowest warp (its closed ones and its last), summed over the blocks. Warp g is
    column g mod the columns, and the columns are a whole number of blocks (the grid's warps, or a wave's), so a
    block's warps are ``warps_per_block`` adjacent columns."""
    if wst.shape[1] == 0:
        return folded
    last = wst[H.W_SLOW]
    copies = wst[H.W_COPIES] + (last == H.SLOW_COPY)
    wpb = max(int(warps_per_block), 1)
    whole = copies.shape[0] // wpb * wpb
    per_block = copies[:whole].reshape(-1, wpb).max(axis=1, initial=0)
    return (folded[0] + int(wst[H.W_ROUNDS].sum()), folded[1] + int((last > H.FAST).sum()),
            folded[2] + int((last == H.SLOW_COPY).sum()), folded[3] + int(per_block.sum()))  # fmt: skip


def _per_object(stats: np.ndarray) -> dict[str, np.ndarray]:
    """The walk's per-object counts: obj_requests, obj_hits, obj_misses (len(LEVELS), n_ids + 1)."""
    per = stats[H.STATS_LEN :].reshape(-1, H.N_LEVELS, 3)
    return {k: np.ascontiguousarray(per[:, :, i].T) for i, k in enumerate(("obj_requests", "obj_hits", "obj_misses"))}


def _check_args(config, blocks_per_sm) -> int:
    if not isinstance(config, HierarchyConfig):
        raise HierarchyConfigError("config", f"expected a cachesim.HierarchyConfig, got {type(config).__name__}")
    if not isinstance(blocks_per_sm, (int, np.integer)) or blocks_per_sm < 1:
        raise HierarchyConfigError("blocks_per_sm", f"expected an integer >= 1, got {blocks_per_sm!r}")
    return int(blocks_per_sm)


def simulate_hierarchy(trace, config: HierarchyConfig, blocks_per_sm: int, mlp: float = 0.0) -> HierarchyResult:
    """Run a trace (a :class:`traces.Trace`) through the memory hierarchy.

    Policy: blocks are assigned to SMs round-robin (block b on SM b mod sms) in waves of
    ``sms * blocks_per_sm`` resident blocks, one wave after the other. Inside a wave,
    warps are interleaved by ``seq``: each SM issues round-robin over its resident
    warps, so the seq-th instruction of every warp of a wave comes before the
    (seq+1)-th of any (issue slot = seq * resident warps + warp's rank on the SM); all
    SMs issue in step and share the L2, ties broken by SM. A row's estimated cycle is
    its slot times ``issue_cycles``; a DRAM request's adds the hit latencies of the
    levels it passed. Caches are timing-free: a fill is complete before the next access (the
    rounds below only note, per way of a per-SM cache, the slot of its last fill).

    Notes
    -----
    Replays follow Huang & Li Sec. III-B, Eq. 3 causes (1)-(4). DRAM row-buffer outcomes
    follow Sec. III-C2 (Eq. 8), with requests served in order of estimated arrival.

    With ``mlp`` > 0 the walk also groups each warp's long-latency loads in rounds of ``mlp`` and counts the
    rounds and the slow ones (``rounds``, ``slow_rounds``; see ``_hierarchy_kernels.walk``): a fill stays in
    flight for the rest of its round, the one timing the caches keep.
    """
    blocks_per_sm = _check_args(config, blocks_per_sm)
    mlp = _check_mlp(mlp)
    info = trace.info
    n = len(trace)
    sm, slot = schedule(trace, config.sms, blocks_per_sm)
    order = np.argsort(slot * config.sms + sm, kind="stable")

    cfgs, state, hp, lat, stats, obj_info, wst = _setup(config, info, blocks_per_sm, mlp)
    cols = _readonly(
        trace.cta,
        trace.warp,
        trace.op,
        trace.space,
        trace.width,
        trace.mask,
        np.ascontiguousarray(trace.addr),
        trace.obj,
    )

    atomic = AtomicSectors(config.sector_bytes, config.atomic_unit_bytes, config.atomic_units)
    atomic.feed(trace.op, trace.space, trace.mask, trace.addr)
    cap = 4 * n + H.ROW_MARGIN + 1024  # a row makes up to 32 requests; most make a few
    out = (np.empty(cap, np.uint64), np.empty(cap, np.float64), np.empty(cap, np.int16),
           np.empty(cap, np.int32), np.empty(cap, np.bool_), np.empty(cap, np.int32))  # fmt: skip
    start = 0
    while True:
        start = H.walk(order, start, cols, sm, slot, obj_info, hp, lat, cfgs, state, stats, out, wst)
        if start >= n:
            break
        out = _grow(out, int(stats[H.NDRAM]) + 2 * H.ROW_MARGIN)
        log.debug("DRAM request buffers grown to %d at row %d", out[0].shape[0], start)
    nd = int(stats[H.NDRAM])
    # the buffers shrink to the requests in place (realloc: no copy, the rest freed); nothing else refers to them
    for a in out:
        a.resize(nd, refcheck=False)
    d_addr, d_cycle, d_obj, d_warp, d_write, d_bytes = out
    counts = stats[: H.REPLAYS].reshape(H.N_LEVELS, H.N_SPACES, 3)
    dram = row_buffer(d_addr, d_cycle, config.dram)
    log.info("hierarchy: %d rows, %d DRAM requests", n, nd)
    return HierarchyResult(
        requests=counts[:, :, 0].copy(), hits=counts[:, :, 1].copy(), misses=counts[:, :, 2].copy(),
        instructions=stats[H.INSTR : H.INSTR + H.N_SPACES].copy(),
        transactions=stats[H.LINES : H.LINES + H.N_SPACES].copy(),
        replays=stats[H.REPLAYS : H.REPLAYS + Q.N_REPLAYS].copy(),
        dram_addr=d_addr, dram_cycle=d_cycle, dram_obj=d_obj, dram_warp=d_warp, dram_write=d_write, dram_bytes=d_bytes,
        dram=dram, sm=sm, cycle=slot * float(config.issue_cycles),
        lsu_cycles=stats[H.LSU : H.LSU + H.N_SPACES] / float(hp[H.HP_PATH_BYTES]),
        l2_sectors=stats[H.L2SECT : H.L2SECT + H.N_SPACES].copy(), atomics=atomic.result(),
        texels=int(stats[H.TEXELS]), **_per_object(stats), **round_counts(wst, stats, info.warps_per_block),
        l1_bank_conflicts=int(stats[H.L1_BANK_CONFLICTS]), readonly_split=int(stats[H.RO_SPLIT]),
        global_split=int(stats[H.GL_SPLIT]),
    )  # fmt: skip


@dataclass(frozen=True)
class DramPiece:
    """DRAM requests a :class:`HierarchyStream` has served, in arrival order: the columns of
    ``HierarchyResult.dram_*`` (``cycle`` the arrival), each request's decoded ``bank`` number,
    row-buffer ``outcome`` (0 hit, 1 miss, 2 conflict) and ``service_ns``. The pieces of a
    stream, concatenated, are ``HierarchyResult``'s requests taken in ``dram.order``."""

    addr: np.ndarray
    cycle: np.ndarray
    obj: np.ndarray
    warp: np.ndarray
    write: np.ndarray
    nbytes: np.ndarray
    bank: np.ndarray
    outcome: np.ndarray
    service_ns: np.ndarray


STREAM_DRAM_BUFFER = 1 << 18
"""DRAM requests a :class:`HierarchyStream` collects before it serves those that are final."""
_STREAM_COLUMNS = ("cta", "warp", "seq", "op", "space", "width", "mask", "addr", "obj")
_WALK_COLUMNS = (0, 1, 3, 4, 5, 6, 7, 8)  # H.walk's cols, (cta, warp, op, space, width, mask, addr, obj)
WALK_CHUNK_ROWS = 1 << 18
"""Rows a streamed walk gathers from the groups it holds at a time, in issue order (72 MiB, 64 of lane addresses)."""


class HierarchyStream:
    """:func:`simulate_hierarchy` fed one group of rows at a time, in bounded memory.

    Cache tags and LRU stamps, the counters, the schedule's wave starts and the DRAM row
    buffers persist across groups, so the totals equal ``simulate_hierarchy(...).totals()``
    over the concatenated groups exactly (the same integer counts; the walk and the row
    buffers see the same requests in the same order).

    The schedule runs one wave of resident blocks after the other (see
    :func:`simulate_hierarchy`), so the stream walks a wave once a row of a later wave has
    arrived, and needs the rows in wave order: no row of a wave after a row of a later wave
    in another group (within a group, and within a wave, any order). Traces written by the
    generators, in block order, are. A row that comes too late raises
    :class:`HierarchyConfigError` naming it. Memory: the rows of the open wave (its group as it
    came; the groups of a wave longer than one as compact copies, shared with the other streams fed
    the same arrays, walked ``WALK_CHUNK_ROWS`` of the issue order at a time: :mod:`cachesim.held`;
    the most it held at once is ``held_peak``)
    and the group, and the DRAM requests that may still be overtaken (those within the levels'
    latencies of the walk's cycle).

    ``on_dram``, when given, gets each :class:`DramPiece` as it is served (e.g. to feed
    per-bank queues); pieces come in arrival order.
    """

    def __init__(self, config: HierarchyConfig, info, blocks_per_sm: int, *, on_dram=None,
                 dram_buffer: int = STREAM_DRAM_BUFFER, mlp: float = 0.0):  # fmt: skip
        self.blocks_per_sm = _check_args(config, blocks_per_sm)
        self.config = config
        self.info = info
        self._on_dram = on_dram
        self._per_wave = config.sms * self.blocks_per_sm
        # the round state of one wave's warps, folded into self._rounds and zeroed after each wave (issue 18: a
        # column per warp of the grid grew with the trace, 356 MB for bench_evaluate's 10 M rows)
        self._cfgs, self._state, self._hp, self._lat, self._stats, self._obj_info, self._wst = _setup(
            config, info, self.blocks_per_sm, _check_mlp(mlp), min(info.ctas, self._per_wave) * info.warps_per_block
        )
        self._rounds = (0, 0, 0, 0)  # rounds, slow and copy last rounds, blocks' slowest copies, of the waves walked
        self._wpb = info.warps_per_block
        self._closed = 0  # waves below this one have been walked
        self._next_start = 0  # the issue slot where wave self._closed starts
        self._held = HeldRows(lanes=_STREAM_COLUMNS.index("addr"))  # rows of wave self._held_wave, not walked yet
        self._held_wave = 0
        self.held_peak = 0
        """The most bytes of rows held back at once so far (``HeldRows.nbytes``): the stream's memory beyond its
        state, a wave's rows."""
        cap = max(int(dram_buffer), 1) + 2 * H.ROW_MARGIN
        self._out = (np.empty(cap, np.uint64), np.empty(cap, np.float64), np.empty(cap, np.int16),
                     np.empty(cap, np.int32), np.empty(cap, np.bool_), np.empty(cap, np.int32))  # fmt: skip
        self._pending = tuple(a[:0].copy() for a in self._out)
        self._rb = RowBufferStream(config.dram)
        self._atomic = AtomicSectors(config.sector_bytes, config.atomic_unit_bytes, config.atomic_units)
        self._dram_requests = 0
        self._dram_bytes = 0
        self.rows = 0
        self._finished = False

    def feed(self, group) -> None:
        """Walk a group of rows (a :class:`traces.Trace` or a batch of one; ``start`` names its rows in errors)."""
        if self._finished:
            raise HierarchyConfigError("stream", "feed() after finish()")
        n = len(group)
        if n == 0:
            return
        cols = tuple(getattr(group, c) for c in _STREAM_COLUMNS)
        wave = cols[0].astype(np.int64) // self._per_wave
        late = np.flatnonzero(wave < self._closed)
        if late.size:
            i = int(late[0])
            raise HierarchyConfigError(
                "rows", f"row {getattr(group, 'start', 0) + i}: block {int(cols[0][i])} of wave {int(wave[i])} comes after "
                f"a row of wave {self._closed}; a streamed trace needs its rows in order of waves of "
                f"{self._per_wave} blocks (use simulate_hierarchy on the whole trace)",
            )  # fmt: skip
        self.rows += n
        self._atomic.feed(cols[3], cols[4], cols[6], cols[7])
        top = int(wave.max())
        if int(wave.min()) == top and (not self._held.rows or top == self._held_wave):
            self._hold(cols)  # all of the open wave: nothing to walk yet
            self._held_wave = top
            return
        if self._held.rows:
            # the open wave's rows held back, with this group's rows of it (a wave's worth, not the group)
            same = np.flatnonzero(wave == self._held_wave)
            self._hold(tuple(c[same] for c in cols), owned=True)
            self._walk(self._held.take(), self._held_wave + 1)
        self._walk(Rows([cols]), top)  # the group's rows of later waves, in place

    def finish(self) -> HierarchyTotals:
        """Walk the rows held back, serve every DRAM request, and return the totals."""
        if not self._finished:
            if self._held.rows:
                self._walk(self._held.take(), self._held_wave + 1)
            self._drain(np.inf)
            self._finished = True
            log.info("hierarchy stream: %d rows, %d DRAM requests", self.rows, self._dram_requests)
        stats, hp = self._stats, self._hp
        counts = stats[: H.REPLAYS].reshape(H.N_LEVELS, H.N_SPACES, 3)
        return HierarchyTotals(
            requests=counts[:, :, 0].copy(), hits=counts[:, :, 1].copy(), misses=counts[:, :, 2].copy(),
            instructions=stats[H.INSTR : H.INSTR + H.N_SPACES].copy(),
            transactions=stats[H.LINES : H.LINES + H.N_SPACES].copy(),
            replays=stats[H.REPLAYS : H.REPLAYS + Q.N_REPLAYS].copy(),
            lsu_cycles=stats[H.LSU : H.LSU + H.N_SPACES] / float(hp[H.HP_PATH_BYTES]),
            l2_sectors=stats[H.L2SECT : H.L2SECT + H.N_SPACES].copy(),
            dram_requests=self._dram_requests, dram_bytes=self._dram_bytes,
            row_buffer=self._rb.outcome_counts(), n_banks=self._rb.n_banks, atomics=self._atomic.result(),
            texels=int(stats[H.TEXELS]), **round_counts(self._wst, stats, self._wpb, self._rounds),
            l1_bank_conflicts=int(stats[H.L1_BANK_CONFLICTS]), readonly_split=int(stats[H.RO_SPLIT]),
            global_split=int(stats[H.GL_SPLIT]),
            **_per_object(stats),
        )  # fmt: skip

    def _walk(self, rows: Rows, upto: int) -> None:
        """Walk the rows of waves below ``upto`` in issue order, ``WALK_CHUNK_ROWS`` gathered at a time (see
        :mod:`cachesim.held`); hold the others back."""
        cfg = self.config
        n = rows.n
        sm = np.empty(n, np.int32)
        slot = np.empty(n, np.int64)
        w = np.empty(n, np.int64)
        H.in_wave(rows.column(0), rows.column(1), rows.column(2), self.info.ctas, cfg.sms, self.blocks_per_sm,
                  self.info.warps_per_block, sm, slot, w)  # fmt: skip
        now = (w >= self._closed) & (w < upto)  # rows of waves already walked were walked from the held rows
        idx = np.flatnonzero(now)
        if idx.size:
            # wave starts as schedule() has them: each wave starts where the one before ended
            lens = np.zeros(upto - self._closed, np.int64)
            np.maximum.at(lens, w[idx] - self._closed, slot[idx] + 1)
            starts = self._next_start + np.concatenate(([0], np.cumsum(lens)[:-1]))
            slot[idx] += starts[w[idx] - self._closed]
            self._next_start += int(lens.sum())
            self._closed = upto
            order = idx[np.argsort(slot[idx] * cfg.sms + sm[idx], kind="stable")]
            one = len(rows.pieces) == 1 and not rows.compact  # a group: walked where it is
            piece = tuple(np.ascontiguousarray(rows.pieces[0][j]) for j in _WALK_COLUMNS) if one else ()
            # wave by wave (in issue order each wave's rows come before the next's), its warps' rounds folded after it
            waves = [order] if self._wst.shape[1] == 0 else np.split(order, np.flatnonzero(np.diff(w[order])) + 1)
            for part_wave in waves:
                if one:
                    self._walk_in_order(part_wave, piece, sm, slot)
                else:  # held groups: the next rows in issue order gathered from them, walked in turn
                    for lo in range(0, part_wave.shape[0], WALK_CHUNK_ROWS):
                        part = part_wave[lo : lo + WALK_CHUNK_ROWS]
                        self._walk_in_order(np.arange(part.shape[0], dtype=np.int64),
                                            rows.gather(part, _WALK_COLUMNS), sm[part], slot[part])  # fmt: skip
                self._rounds = fold_rounds(self._wst, self._rounds, self._wpb)
                self._wst[:] = 0
            self._drain(self._next_start * float(cfg.issue_cycles))
        keep = np.flatnonzero(w >= upto)
        if keep.size:
            self._hold(rows.gather(keep, range(len(_STREAM_COLUMNS))), owned=True)
        self._held_wave = upto

    def _hold(self, cols: tuple[np.ndarray, ...], owned: bool = False) -> None:
        """Hold rows back (``HeldRows.append``), counted in ``held_peak``."""
        self._held.append(cols, owned=owned)
        self.held_peak = max(self.held_peak, self._held.nbytes)

    def _walk_in_order(self, order: np.ndarray, cols: tuple[np.ndarray, ...], sm: np.ndarray,
                       slot: np.ndarray) -> None:  # fmt: skip
        """``H.walk`` of the rows ``order`` of ``cols`` (``_WALK_COLUMNS``), serving DRAM when its buffer fills."""
        walk_cols = _readonly(*cols)
        issue = float(self.config.issue_cycles)
        start = 0
        while True:
            start = H.walk(order, start, walk_cols, sm, slot, self._obj_info, self._hp, self._lat, self._cfgs,
                           self._state, self._stats, self._out, self._wst)  # fmt: skip
            if start >= order.shape[0]:
                return
            # no request of a row still to walk arrives before that row's issue cycle
            self._drain(slot[order[start]] * issue)

    def _drain(self, before: float) -> None:
        """Serve, in arrival order, the DRAM requests that arrive before cycle ``before`` (final:
        every request still to come arrives at or after it)."""
        nd = int(self._stats[H.NDRAM])
        if nd:
            self._pending = tuple(np.concatenate((p, o[:nd])) for p, o in zip(self._pending, self._out))
            self._stats[H.NDRAM] = 0
        cycle = self._pending[1]
        if cycle.shape[0] == 0:
            return
        ready = cycle < before
        if not ready.any():
            return
        sel = np.flatnonzero(ready)
        sel = sel[np.argsort(cycle[sel], kind="stable")]
        addr, cyc, obj, warp, write, nbytes = (p[sel] for p in self._pending)
        self._pending = tuple(p[~ready] for p in self._pending)
        bank, outcome, service = self._rb.serve(addr)
        self._dram_requests += addr.shape[0]
        self._dram_bytes += int(nbytes.sum(dtype=np.int64))
        if self._on_dram is not None:
            self._on_dram(DramPiece(addr, cyc, obj, warp, write, nbytes, bank, outcome, service))
