"""numba kernels of the memory hierarchy: the schedule of warp-instructions and the walk of
each one through coalescing, the per-SM caches, the sliced L2 and out to DRAM requests.

State lives in arrays the caller owns (cache tag stores, a flat int64 ``stats`` array,
growable DRAM-request columns), so ``walk`` can stop when the request buffers are
nearly full and be called again from where it stopped. Kernels never raise.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from . import _cache_kernels as C
from . import _coalesce_kernels as Q
from traces._numba import LEAF, prefetch
from traces.codes import ATOMIC, GLOBAL, LOAD, LOCAL, N_SPACES, READONLY, STORE

NUMBA_DEPS = "5f328299b2419962"  # its imports' sources, for numba's cache (traces.numba_cache)

# cache levels (rows of cfgs)
L1, TEX, CONST, L2 = range(4)
N_LEVELS = 4
# flat stats layout
COUNTS = 0  # (level, space, [requests, hits, misses])
REPLAYS = N_LEVELS * N_SPACES * 3  # Q.N_REPLAYS entries: replays by Huang & Li cause (Q.REPLAY_*; 0 unused)
INSTR = REPLAYS + Q.N_REPLAYS  # warp-instructions per space
LINES = INSTR + N_SPACES  # transactions per space (lines, distinct constant addresses, bank degree)
CLOCK = LINES + N_SPACES  # cache access counter (LRU/FIFO stamps)
NDRAM = CLOCK + 1  # DRAM requests written so far
LSU = NDRAM + 1  # bytes-equivalent through the SMs' load/store data path, per space (see walk)
L2SECT = LSU + N_SPACES  # sectors the L2 serves (hits, misses and writes), per space
TEXELS = L2SECT + N_SPACES  # texels the texture units fetch: the active lanes of texture rows
SLOW_ROUNDS = TEXELS + 1  # rounds of long-latency loads closed so far that waited on a request from outside the SM
COPY_ROUNDS = SLOW_ROUNDS + 1  # those of them whose loads a shared-memory store then kept (a staging copy's)
L1_BANK_CONFLICTS = COPY_ROUNDS + 1  # cached accesses' words read after the first in one L1 data bank (HP_L1_BANKS)
RO_SPLIT = L1_BANK_CONFLICTS + 1  # read-only warp-instructions (LDG.E.CONSTANT) whose lanes touch more than one line
GL_SPLIT = RO_SPLIT + 1  # plain global loads the L1 serves whose lanes touch more than one line
STATS_LEN = GL_SPLIT + 1
# per object, after STATS_LEN: (object slot, level, [requests, hits, misses]) for n_ids + 1 slots, the last one
# for obj -1 (write-backs of evicted lines); the caller sizes stats STATS_LEN + (n_ids + 1) * OBJ_STRIDE
OBJ_STRIDE = N_LEVELS * 3

# hp (int64 parameters); the first Q.N_PARAMS are the coalescing parameters (Q.P_*)
HP_SECT_LOG2, HP_BANKS, HP_TEX_LOG2 = Q.P_SECT_LOG2, Q.P_BANKS, Q.P_TEX_LOG2
HP_SLICES, HP_SLICE_SHIFT, HP_WPB = range(Q.N_PARAMS, Q.N_PARAMS + 3)
# the per-SM level that global and read-only loads go to first (L1, TEX, or NO_LEVEL: straight to the L2)
HP_GLOBAL_LVL, HP_RO_LVL = Q.N_PARAMS + 3, Q.N_PARAMS + 4
HP_PATH_BYTES = Q.N_PARAMS + 5  # bytes the SM's L1 / shared-memory data path moves per cycle
HP_TAGS = Q.N_PARAMS + 6  # lines the per-SM cache's tag stage resolves per cycle, one per set (0: no such bound)
HP_CONST_PATH = Q.N_PARAMS + 7  # 1: constant accesses take data-path cycles; 0: their cache is a unit of its own
# a shared-memory atomic's data-path cycles x HP_PATH_BYTES: a warp-instruction on distinct words, and each further lane
# on one word (0: priced as a load, by its bank-conflict degree)
HP_SATOM, HP_SATOM_LANE = Q.N_PARAMS + 8, Q.N_PARAMS + 9
HP_RESIDENT = Q.N_PARAMS + 10  # resident warps per SM (the schedule's round-robin): a round's issue slots span them
HP_L1_BANKS = Q.N_PARAMS + 11  # 1: the per-SM cache's data array is the shared memory's banks (a load's lines conflict)
HP_LEN = Q.N_PARAMS + 12
NO_LEVEL = -1
# lat (float64): hit latencies per level, issue cycles, MLP (long-latency loads a warp has in flight; 0: no rounds)
LAT_ISSUE = 4
LAT_MLP = 5
# per-warp round state (rows of the int64 array ``wst``, one column per warp of the grid, or of a wave where the
# caller folds each wave's columns into its counts and zeroes them before the next: warp g is column g mod the
# columns): long-latency loads in the warp's open round, the round's size, rounds started, the issue slot of the
# round's first load, whether a request of the round left the SM (or waited for a line another request of its round
# is bringing in), and the warp's copy rounds closed so far (those ``stats[COPY_ROUNDS]`` counts, the warp's own)
W_ORD, W_SIZE, W_ROUNDS, W_START, W_SLOW, W_STORED, W_ARMED, W_COPIES = range(8)
W_ROWS = 8
# W_SLOW's values: a round served inside the SM, one that waited on the L2, one of those a shared store then kept
FAST, SLOW, SLOW_COPY = 0, 1, 2

# room kept in the DRAM buffers before each row (one row cannot emit more)
ROW_MARGIN = 8192
PREFETCH_ROWS = 48
"""How far ahead (rows of the walk's order) the walk asks for a row's columns: the walk visits rows in issue
order, one warp after another, so each row is far from the one before in memory (bench_rank's 1 M-row trace:
16, 48 and 6 rows ahead took its staged 6.4 M-row walk from 0.86 to 0.77, 0.69 and 0.69 s CPU)."""


@nb.njit(cache=True, nogil=True)
def in_wave(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb, sm_out, slot_out, wave_out):
    """SM, issue slot after its wave's start, and wave of each row (see :func:`schedule`). A block's wave, SM,
    place and resident warps are worked out when its rows start (rows come block by block in the usual
    trace), not with five divisions per row."""
    per_wave = n_sms * blocks_per_sm
    last = np.int64(-1)
    w = sm = base = resident = np.int64(0)
    for i in range(cta.shape[0]):
        b = np.int64(cta[i])
        if b != last:
            last = b
            w = b // per_wave
            j = b - w * per_wave
            sm = j % n_sms
            base = (j // n_sms) * wpb
            in_wave_ = min(per_wave, n_ctas - w * per_wave)
            resident = ((in_wave_ - sm + n_sms - 1) // n_sms) * wpb
        sm_out[i] = sm
        slot_out[i] = seq[i] * resident + base + warp[i]
        wave_out[i] = w


@nb.njit(cache=True, nogil=True)
def schedule(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb, sm_out, slot_out):
    """SM and issue slot of each row.

    Blocks go to SMs round-robin in waves of n_sms x blocks_per_sm blocks: block b is in
    wave b // (n_sms * blocks_per_sm), on SM b mod n_sms. Inside a wave each SM issues
    round-robin over its W resident warps, one warp-instruction per warp per round, so
    instruction seq of the SM's k-th warp issues at slot seq * W + k after the wave's
    start; a wave starts when the longest SM of the previous one ends.
    """
    n = cta.shape[0]
    per_wave = n_sms * blocks_per_sm
    n_waves = (n_ctas + per_wave - 1) // per_wave
    wave_len = np.zeros(max(n_waves, 1), np.int64)
    wave = np.empty(n, np.int64)
    in_wave(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb, sm_out, slot_out, wave)
    for i in range(n):
        s = slot_out[i]
        w = wave[i]
        if s + 1 > wave_len[w]:
            wave_len[w] = s + 1
    start = np.zeros(max(n_waves, 1), np.int64)
    for w in range(1, n_waves):
        start[w] = start[w - 1] + wave_len[w - 1]
    for i in range(n):
        slot_out[i] += start[wave[i]]


@nb.njit(cache=True, nogil=True, inline="always")
def _count(stats, level, space, obj, outcome):
    """One request of ``level``: counted per (level, space) and per (level, object) (see OBJ_STRIDE)."""
    k = COUNTS + (level * N_SPACES + space) * 3
    last = (stats.shape[0] - STATS_LEN) // OBJ_STRIDE - 1
    o = obj if obj >= 0 and obj < last else last
    ko = STATS_LEN + o * OBJ_STRIDE + level * 3
    stats[k] += 1
    stats[ko] += 1
    if outcome == C.HIT:
        stats[k + 1] += 1
        stats[ko + 1] += 1
    else:
        stats[k + 2] += 1
        stats[ko + 2] += 1


@nb.njit(**LEAF)
def _emit(stats, out, addr, nbytes, write, obj, gwarp, cycle):
    n = stats[NDRAM]
    out[0][n] = addr
    out[1][n] = cycle
    out[2][n] = obj
    out[3][n] = gwarp
    out[4][n] = write
    out[5][n] = nbytes
    stats[NDRAM] = n + 1


@nb.njit(cache=True, nogil=True)
def _popcount(x):
    c = 0
    while x:
        x &= x - np.uint64(1)
        c += 1
    return c


@nb.njit(cache=True, nogil=True, inline="always")
def _line_piece(a, end, cl, csz, sl):
    """The part of [a, end) in a's cache line: (line base, end of the part, mask of its sectors)."""
    line = (a >> cl) << cl
    stop = min(end, line + csz)
    s0 = (a - line) >> sl
    s1 = (stop - np.uint64(1) - line) >> sl
    smask = ((np.uint64(1) << (s1 - s0 + np.uint64(1))) - np.uint64(1)) << s0
    return line, stop, smask


@nb.njit(cache=True, nogil=True, inline="always")
def _l2_params(cfgs, hp):
    """The L2's parameters an access needs, decoded once per call of :func:`l2_span` or :func:`l2_runs`:
    (slices, slice shift, mask below it, line log2, line bytes, sector log2, sectored, write-back,
    transaction-sector log2, write-allocate policy)."""
    cfg = cfgs[L2]
    cl = np.uint64(cfg[C.LINE_LOG2])
    sh = np.uint64(hp[HP_SLICE_SHIFT])
    return (np.uint64(hp[HP_SLICES]), sh, (np.uint64(1) << sh) - np.uint64(1), cl, np.uint64(1) << cl,
            np.uint64(cfg[C.SECT_LOG2]), cfg[C.NSECT] > 1, C.is_write_back(cfg, False), np.uint64(hp[HP_SECT_LOG2]),
            cfg[C.WALLOC])  # fmt: skip


@nb.njit(cache=True, nogil=True, inline="always")
def _l2_piece(cfg, tags, valid, dirty, stamp, hint, stats, out, prm, a, end, is_write, space, obj, gwarp, dcycle):
    """The part of [a, end) in a's L2 line (see :func:`l2_span`); returns where the next part starts.

    The slice is (addr >> shift) mod slices; the slice's cache sees the address with the
    slice bits removed (GPGPU-Sim's partition address), so sets are not camped on.
    """
    nsl, sh, low, cl, csz, sl, sectored, wb, gsec_log2, walloc = prm
    # typed, not literal: a literal argument makes numba compile the callee once more for it
    yes, no, no_id = np.bool_(True), np.bool_(False), np.int64(-1)
    line, stop, smask = _line_piece(a, end, cl, csz, sl)
    hi = a >> sh
    q = hi // nsl  # one division for the slice and the address inside it
    sl_id = np.int64(hi - q * nsl)
    p = (q << sh) | (a & low)
    t = stats[CLOCK] + 1
    stats[CLOCK] = t
    res = C.access_rows(cfg, tags, valid, dirty, stamp, hint, sl_id, p, smask, is_write, False, t)
    outcome = res[0]
    _count(stats, L2, space, obj, outcome)
    gsec = np.uint64(1) << gsec_log2  # the transaction sector, whatever the L2's own line
    stats[L2SECT + space] += np.int64((stop - a + gsec - np.uint64(1)) >> gsec_log2)  # // gsec, a power of two
    if res[2] != np.uint64(0):
        evb = res[1]
        orig = ((((evb >> sh) * nsl) + np.uint64(sl_id)) << sh) | (evb & low)
        nb_ = _popcount(res[2]) * (np.int64(1) << np.int64(sl)) if sectored else np.int64(csz)
        _emit(stats, out, orig, nb_, yes, no_id, no_id, dcycle)
    if is_write:
        if not wb or (outcome != C.HIT and walloc == C.WA_NONE):
            _emit(stats, out, a, np.int64(stop - a), yes, obj, gwarp, dcycle)
        elif outcome != C.HIT and (walloc == C.WA_ALLOC or walloc == C.WA_FETCH):
            if sectored:
                _emit(stats, out, a, np.int64(stop - a), no, obj, gwarp, dcycle)
            else:
                _emit(stats, out, line, np.int64(csz), no, obj, gwarp, dcycle)
    elif outcome != C.HIT:
        if sectored:
            _emit(stats, out, a, np.int64(stop - a), no, obj, gwarp, dcycle)
        else:
            _emit(stats, out, line, np.int64(csz), no, obj, gwarp, dcycle)
    return stop


@nb.njit(**LEAF)
def l2_span(cfgs, state, stats, out, hp, lat, addr, nbytes, is_write, space, obj, gwarp, cycle):
    """A read or write of [addr, addr + nbytes) at the L2; misses and write-backs become DRAM requests
    (one :func:`_l2_piece` per L2 line it covers)."""
    cfg = cfgs[L2]
    dcycle = cycle + lat[L2]
    if cfg[C.PRESENT] == 0:
        _emit(stats, out, addr, nbytes, is_write, obj, gwarp, dcycle)
        return
    prm = _l2_params(cfgs, hp)
    tags, valid, dirty, stamp, hint = state[C.TAG], state[C.VALID], state[C.DIRTY], state[C.STAMP], state[C.HINT]
    a = np.uint64(addr)
    end = a + np.uint64(nbytes)
    while a < end:
        a = _l2_piece(cfg, tags, valid, dirty, stamp, hint, stats, out, prm, a, end, is_write, space, obj, gwarp,
                      dcycle)  # fmt: skip


@nb.njit(cache=True, nogil=True, inline="always")
def _next_run(bits, b):
    """The first run of consecutive set bits of ``bits`` (uint64) at or above bit ``b``: (first, last), or
    (-1, -1) when there is none."""
    if b >= 64:
        return -1, -1
    rest = bits >> np.uint64(b)
    if rest == np.uint64(0):
        return -1, -1
    skip = np.int64(trailing_zeros(rest))
    return b + skip, b + skip + np.int64(trailing_zeros(~(rest >> np.uint64(skip)))) - 1


@nb.njit(**LEAF)
def l2_runs(cfgs, state, stats, out, hp, lat, lines, smasks, k, sect, is_write, space, obj, gwarp, cycle):
    """A warp-instruction's ``k`` lines (``smasks``: the sectors of ``sect`` bytes wanted in each) read or
    written at the L2: each run of consecutive sectors of a line is one :func:`l2_span`, in order. One call
    per row instead of one per run, with the L2's parameters decoded once (the walk's commonest path: global
    accesses that no per-SM cache serves)."""
    cfg = cfgs[L2]
    dcycle = cycle + lat[L2]
    prm = _l2_params(cfgs, hp)
    tags, valid, dirty, stamp, hint = state[C.TAG], state[C.VALID], state[C.DIRTY], state[C.STAMP], state[C.HINT]
    for j in range(k):
        b, e = _next_run(smasks[j], 0)
        while b >= 0:
            a = lines[j] + np.uint64(b * sect)
            end = a + np.uint64((e - b + 1) * sect)
            if cfg[C.PRESENT] == 0:
                _emit(stats, out, a, np.int64(end - a), is_write, obj, gwarp, dcycle)
            else:
                while a < end:
                    a = _l2_piece(cfg, tags, valid, dirty, stamp, hint, stats, out, prm, a, end, is_write, space,
                                  obj, gwarp, dcycle)  # fmt: skip
            b, e = _next_run(smasks[j], e + 1)


@nb.njit(**LEAF)
def upper_span(level, inst, cfgs, state, stats, out, hp, lat, addr, nbytes, is_write, is_local, space, obj, gwarp, cycle,
               now, since):  # fmt: skip
    """A read or write of [addr, addr + nbytes) at a per-SM cache (L1, texture or constant) of SM ``inst``;
    returns how many of its line pieces waited on the L2: misses, and hits on a line filled at issue slot
    ``since`` or later (in flight still: a line another warp's request of the same round is bringing in).

    Missing data is fetched from the L2 (the whole line of a normal cache, the wanted
    sectors of a sectored one); writes go on to the L2 unless the policy is write-back;
    dirty evictions are written back to the L2. A constant-cache miss is a replay
    (Huang & Li cause 2). Without this cache the request goes straight to the L2.
    A fill records issue slot ``now`` in the way's FILL.
    """
    cfg = cfgs[level]
    if cfg[C.PRESENT] == 0:
        l2_span(cfgs, state, stats, out, hp, lat, addr, nbytes, is_write, space, obj, gwarp, cycle)
        return np.int64(1)
    slow = np.int64(0)
    c2 = cycle + lat[level]
    yes, no, no_id = np.bool_(True), np.bool_(False), np.int64(-1)  # typed (see _l2_piece)
    cl = np.uint64(cfg[C.LINE_LOG2])
    csz = np.uint64(1) << cl
    sl = np.uint64(cfg[C.SECT_LOG2])
    sectored = cfg[C.NSECT] > 1
    wb = C.is_write_back(cfg, is_local)
    a = np.uint64(addr)
    end = a + np.uint64(nbytes)
    while a < end:
        line, stop, smask = _line_piece(a, end, cl, csz, sl)
        t = stats[CLOCK] + 1
        stats[CLOCK] = t
        res = C.access(cfg, state, inst, a, smask, is_write, is_local, t)
        outcome = res[0]
        way = res[3]
        if outcome != C.HIT:
            slow += 1
            if way >= 0:
                state[C.FILL, way] = np.uint64(now)
        elif way >= 0 and np.int64(state[C.FILL, way]) >= since:
            slow += 1
        _count(stats, level, space, obj, outcome)
        if level == CONST and outcome != C.HIT:
            stats[REPLAYS + Q.REPLAY_CONST_MISS] += 1
        if res[2] != np.uint64(0):
            # write back the dirty part of the evicted line (whole line for a normal cache)
            evb = res[1]
            if sectored:
                ssz = np.uint64(1) << sl
                for s in range(cfg[C.NSECT]):
                    if (res[2] >> np.uint64(s)) & np.uint64(1):
                        l2_span(
                            cfgs,
                            state,
                            stats,
                            out,
                            hp,
                            lat,
                            evb + np.uint64(s) * ssz,
                            np.int64(ssz),
                            yes,
                            space,
                            no_id,
                            no_id,
                            c2,
                        )
            else:
                l2_span(cfgs, state, stats, out, hp, lat, evb, np.int64(csz), yes, space, no_id, no_id, c2)
        if is_write:
            if not wb or (outcome != C.HIT and cfg[C.WALLOC] == C.WA_NONE):
                l2_span(cfgs, state, stats, out, hp, lat, a, np.int64(stop - a), yes, space, obj, gwarp, c2)
            elif outcome != C.HIT and (cfg[C.WALLOC] == C.WA_ALLOC or cfg[C.WALLOC] == C.WA_FETCH):
                if sectored:
                    l2_span(cfgs, state, stats, out, hp, lat, a, np.int64(stop - a), no, space, obj, gwarp, c2)
                else:
                    l2_span(cfgs, state, stats, out, hp, lat, line, np.int64(csz), no, space, obj, gwarp, c2)
        elif outcome != C.HIT:
            if sectored:
                l2_span(cfgs, state, stats, out, hp, lat, a, np.int64(stop - a), no, space, obj, gwarp, c2)
            else:
                l2_span(cfgs, state, stats, out, hp, lat, line, np.int64(csz), no, space, obj, gwarp, c2)
        a = stop
    return slow


@nb.njit(**LEAF)
def upper_runs(level, inst, cfgs, state, stats, out, hp, lat, lines, smasks, k, sect, is_write, is_local, space, obj,
               gwarp, cycle, now, since):  # fmt: skip
    """:func:`l2_runs` for a per-SM cache: each run of consecutive sectors of a line is one :func:`upper_span`,
    in order, in one call per row; returns the pieces that waited on the L2 (:func:`upper_span`)."""
    slow = np.int64(0)
    for j in range(k):
        b, e = _next_run(smasks[j], 0)
        while b >= 0:
            a = lines[j] + np.uint64(b * sect)
            end = a + np.uint64((e - b + 1) * sect)
            slow += upper_span(level, inst, cfgs, state, stats, out, hp, lat, a, np.int64(end - a), is_write, is_local,
                               space, obj, gwarp, cycle, now, since)  # fmt: skip
            b, e = _next_run(smasks[j], e + 1)
    return slow


@nb.njit(cache=True, nogil=True, inline="always")
def round_of(wst, stats, g, slot, mlp, resident, obj):
    """A long-latency load of warp ``g`` issued at ``slot``: opens the warp's next round when its open one is full
    or closed, counts the load in, and returns the first issue slot whose fills are still in flight for this round:
    its first load's slot less one turn of the ``resident`` warps, plus one. In the schedule's round-robin (slot =
    seq x resident + the warp's rank), the other warps issue the instruction this round starts with within that
    turn, and the warp's own fills of earlier rounds are at least a turn before it.

    GPUPerf's MLP (Sim et al. Sec. 5.3) is the long-latency loads a warp issues before it first waits: the warp's
    loads go in rounds of ``mlp`` (sizes floor((r + 1) mlp) - floor(r mlp), at least 1, so that they average it).
    A load of object ``obj`` right after a shared-memory store of the same object opens a round (a copy loop's
    next element: its store waits for the load before it)."""
    if wst[W_ARMED, g] == obj + 2:  # obj + 2: objects are -1 (none) and up, 0 is "no store since the last load"
        wst[W_ORD, g] = wst[W_SIZE, g]
    wst[W_ARMED, g] = 0
    if wst[W_ORD, g] >= wst[W_SIZE, g]:
        r = wst[W_ROUNDS, g]
        size = np.int64(np.floor((r + 1) * mlp)) - np.int64(np.floor(r * mlp))
        wst[W_SIZE, g] = max(size, np.int64(1))
        wst[W_ORD, g] = 0
        wst[W_ROUNDS, g] = r + 1
        wst[W_START, g] = slot
        # the round before it is counted now; each warp's last one at the end (hierarchy.round_counts)
        stats[SLOW_ROUNDS] += wst[W_SLOW, g] > 0
        stats[COPY_ROUNDS] += wst[W_SLOW, g] == SLOW_COPY
        wst[W_COPIES, g] += wst[W_SLOW, g] == SLOW_COPY
        wst[W_SLOW, g] = 0
    wst[W_ORD, g] += 1
    return wst[W_START, g] - resident + 1


@nb.njit(cache=True, nogil=True, inline="always")
def tag_set(line, bits):
    """The tag stage's set of a line (its index, the byte address over the line size): the XOR of the index's
    ``bits``-bit fields, low to high. NVIDIA publishes no hash; this one is read off gpu-benches' gpu-strides
    (github te42kyfo/gpu-benches, gpu-strides/a100.txt, a40.txt, h200.txt at 0a45416; [GB-S] in
    configs/architectures.toml), whose Nsight Compute ``l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld`` per
    warp-load reads 32 lines 16,392 B apart (one lane a row of a 4,098-float pitch) in 9.2 tag wavefronts on the
    A100, A40 and H200, 16 rows in 5.1, 8 in 3.1, 4 in 2.1 and 2 in 1.3-1.5: the 4-set fold gives 9.0, 4.9, 3.2,
    2.1 and 1.3, where a linear index (line mod 4, Accel-Sim's L1) puts those rows' lines in one or two sets, 16,
    12, 7.3, 4 and 2; over its strides 1-64 (lanes 4 s bytes apart) the fold is within 2 % of the measured
    wavefronts (median; 24 % at most, stride 2) and the linear index within 9 % (median) but up to 2.35x off (12
    against 5.1)."""
    if bits <= 0:  # one set
        return np.int64(0)
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    s = np.uint64(0)
    x = np.uint64(line)
    while x:
        s ^= x & mask
        x >>= np.uint64(bits)
    return np.int64(s)


@nb.njit(cache=True, nogil=True, inline="always")
def tag_bits(tags):
    """log2 of the tag stage's sets (``tags``, 0 or a power of two): the width of :func:`tag_set`'s fields."""
    bits = 0
    while (1 << bits) < tags:
        bits += 1
    return bits


@nb.njit(cache=True, nogil=True, inline="always")
def tag_cycles(cfg, lines, k, tags, bits, sets, counts):
    """Cycles the tag stage of a per-SM cache (``cfg``) takes for the ``k`` lines of one warp-instruction: at
    most ``tags`` lines a cycle and one line per set ([NV-T] in configs/architectures.toml: "4 sets x 4 sectors
    per cycle"), so the most lines that fall in one of its ``tags`` sets (:func:`tag_set`, the stage's own
    hash of the line, not the cache's index function) or k / tags rounded up, whichever is more (1 for ``tags``
    0). ``tags`` is a power of two (``cachesim.HierarchyConfig``), 2 ** ``bits`` (:func:`tag_bits`). ``sets`` (k
    entries) and ``counts`` (``tags`` entries, all 0, left so) are scratch."""
    if tags <= 0 or k <= 1:
        return 1
    line_log2 = np.uint64(cfg[C.LINE_LOG2])
    worst = 1
    for j in range(k):
        st = tag_set(lines[j] >> line_log2, bits)
        sets[j] = st
        counts[st] += 1
        if counts[st] > worst:
            worst = counts[st]
    for j in range(k):
        counts[sets[j]] = 0
    return max(worst, (k + tags - 1) // tags)


@nb.njit(cache=True, nogil=True)
def walk(order, start, cols, sm, slot, obj_info, hp, lat, cfgs, state, stats, out, wst):
    """Walk rows ``order[start:]`` through the hierarchy; return the next row to do (len(order) when done).

    ``cols`` = (cta, warp, op, space, width, mask, addr, obj). Global accesses go through
    the level ``hp[HP_GLOBAL_LVL]`` (the L1, or straight to the L2), read-only ones through
    ``hp[HP_RO_LVL]`` (the texture cache or the L1), local ones through the L1 (loads and
    stores; atomics and reductions are done at the L2), texture through the texture cache
    (which may be the L1's array: see ``simulate_hierarchy``), constant through the
    constant cache, all then to the L2. Shared accesses only count bank conflicts. Stops early, returning the row it stopped
    at, when the DRAM buffers ``out`` have less than ROW_MARGIN free entries.

    ``stats[LSU + space]`` adds, per warp-instruction, the data-path cycles it takes times
    ``hp[HP_PATH_BYTES]`` (bytes per cycle): a shared access one cycle per wavefront (its
    bank-conflict degree; a shared atomic at least ``hp[HP_SATOM]`` and ``hp[HP_SATOM_LANE]`` more for each
    further lane on one word, where the GPU's are known), a constant access one per distinct address (none where ``hp[HP_CONST_PATH]`` is 0:
    Volta's and later constant cache is a unit of its own), an access through a
    per-SM cache (L1, texture, read-only) its sectors' bytes over the path's width but at
    least one cycle, at least its tag stage's cycles (:func:`tag_cycles`, where
    ``hp[HP_TAGS]`` gives the stage's lines per cycle) and, where ``hp[HP_L1_BANKS]`` says the cache's data array
    is the shared memory's banks, at least the most distinct words one bank serves (a warp reading two image rows
    of 16 floats reads both rows' words from the same 16 banks: 2 cycles), and a global or local access that no
    per-SM cache serves one cycle per line (the LD/ST units' pass per transaction).

    Rounds (where ``lat[LAT_MLP]`` > 0): each warp's long-latency loads (loads and atomics of global, local,
    read-only and texture memory, and constant loads whose lanes read several words: an LDC of a register
    address, waited on like a global load, where a uniform one is an operand) go in rounds of MLP
    (:func:`round_of`). A round is slow when one of its
    requests waited on the L2 (:func:`upper_span`: misses, and hits on lines still in flight for the same
    round; every request that no per-SM cache serves). A staging copy shapes its rounds: a shared-memory store
    marks the open round, if slow, as a copy's (its barrier waits for it), a load of the object just stored
    opens a new round (one object's copy is a loop, each store waiting for its load), and the first shared load
    after stores closes the round (the barrier between a copy and its reads). ``wst`` holds the warps' round
    state; the closed rounds' slow and copy ones are counted in ``stats[SLOW_ROUNDS]`` and
    ``stats[COPY_ROUNDS]``.
    """
    cta, warp, op, space, width, mask, addr, obj = cols
    cap = out[0].shape[0]
    lines = np.empty(64, np.uint64)
    smasks = np.empty(64, np.uint64)
    words = np.empty(32 * 16, np.uint64)
    counts = np.empty(max(hp[HP_BANKS], 1), np.int64)
    row = np.empty(32, np.uint64)
    sect = np.int64(1) << hp[HP_SECT_LOG2]
    tex_line = np.int64(1) << hp[HP_TEX_LOG2]
    issue = lat[LAT_ISSUE]
    wpb = hp[HP_WPB]
    path_bytes = hp[HP_PATH_BYTES]
    tags = hp[HP_TAGS]
    bits = tag_bits(tags)  # once a walk, not once a warp-instruction
    l1_banks = hp[HP_L1_BANKS]
    tag_sets = np.empty(64, np.int64)
    tag_counts = np.zeros(max(tags, 1), np.int64)
    mlp = lat[LAT_MLP]
    resident = hp[HP_RESIDENT]
    no_round = np.iinfo(np.int64).max  # ``since`` of an access outside the rounds: no hit counts as in flight
    no = np.bool_(False)  # typed, not literal: a literal argument makes numba compile the callee once more for it
    const_level, tex_level = np.int64(CONST), np.int64(TEX)
    n_wst = wst.shape[1]
    n = order.shape[0]
    for idx in range(start, n):
        if stats[NDRAM] + ROW_MARGIN > cap:
            return idx
        if idx + PREFETCH_ROWS < n:
            f = order[idx + PREFETCH_ROWS]
            for lane in range(0, 32, 8):  # the row's 32 addresses: four 64-byte lines
                prefetch(addr, f, lane)
            prefetch(mask, f, 0)
            prefetch(space, f, 0)
            prefetch(slot, f, 0)
            prefetch(sm, f, 0)
            prefetch(cta, f, 0)
        i = order[idx]
        sp = np.int64(space[i])
        m = np.int64(mask[i])
        w = np.int64(width[i])
        o = np.int64(obj[i])
        g = np.int64(cta[i]) * wpb + warp[i]
        gw = g % n_wst if n_wst > 0 else g  # the warp's column of ``wst``
        s = np.int64(sm[i])
        cyc = slot[i] * issue
        stats[INSTR + sp] += 1
        if m == 0:
            continue
        path = Q.path_of(sp)
        if path == Q.PATH_LINES:
            # Q.coalesce_row's two calls for these rows (the commonest) made here: through coalesce_row, a call
            # with eight arrays, simulate_hierarchy of bench_cachesim's mixed 1 M-row trace on the K80 took 10 %
            # longer (188 against 170 ms CPU, median of 9); the test of coalesce against the walk holds them equal
            k = Q.lines_touched(m, addr[i], w, hp[Q.P_LINE_LOG2], hp[Q.P_SECT_LOG2], lines, smasks)
            stats[LINES + sp] += k
            if k > 1:
                if sp == READONLY:
                    stats[RO_SPLIT] += 1
                elif sp == GLOBAL and op[i] == LOAD and hp[HP_GLOBAL_LVL] == L1:
                    stats[GL_SPLIT] += 1
            stats[REPLAYS + Q.REPLAY_WORDS] += Q.global_replays(Q.active_lanes(np.uint32(m)), w, hp[Q.P_TXN])
        else:
            k, cause, replays = Q.coalesce_row(
                path, sp, m, addr[i], w, o, obj_info, hp, lines, smasks, words, counts, row
            )
            stats[LINES + sp] += k
            stats[REPLAYS + cause] += replays
        if path == Q.PATH_LINES:
            is_local = sp == LOCAL
            lvl = L1 if sp == LOCAL else (hp[HP_RO_LVL] if sp == READONLY else hp[HP_GLOBAL_LVL])
            if lvl != NO_LEVEL and cfgs[lvl][C.PRESENT] != 0:
                nsec = 0
                for j in range(k):
                    nsec += _popcount(smasks[j])
                cost = max(nsec * sect, tag_cycles(cfgs[lvl], lines, k, tags, bits, tag_sets, tag_counts) * path_bytes)
                if l1_banks != 0 and k > 1:
                    bank = Q.bank_conflict_degree(m, addr[i], w, hp[HP_BANKS], hp[Q.P_BANK_BYTES], words, counts)
                    cost = max(cost, bank * path_bytes)
                    stats[L1_BANK_CONFLICTS] += bank - 1
                stats[LSU + sp] += cost
            else:
                stats[LSU + sp] += k * path_bytes
            o_p = op[i]
            in_round = mlp > 0 and (o_p == LOAD or o_p == ATOMIC)
            since = round_of(wst, stats, gw, slot[i], mlp, resident, o) if in_round else no_round
            if o_p > STORE or lvl == NO_LEVEL:  # atomics and reductions are done at the L2
                l2_runs(cfgs, state, stats, out, hp, lat, lines, smasks, k, sect, o_p >= STORE, sp, o, g, cyc)
                if in_round:
                    wst[W_SLOW, gw] = max(wst[W_SLOW, gw], SLOW)
                continue
            slow = upper_runs(lvl, s, cfgs, state, stats, out, hp, lat, lines, smasks, k, sect, o_p == STORE, is_local,
                              sp, o, g, cyc, slot[i], since)  # fmt: skip
            if in_round and slow > 0:
                wst[W_SLOW, gw] = max(wst[W_SLOW, gw], SLOW)
        elif path == Q.PATH_BANKS:
            cost = k * path_bytes
            if op[i] >= ATOMIC and hp[HP_SATOM] > 0:  # its lanes on one word one after the other
                same = Q.same_address_lanes(m, addr[i])
                cost = max(cost, hp[HP_SATOM] + (same - 1) * hp[HP_SATOM_LANE])
            stats[LSU + sp] += cost
            if mlp > 0 and op[i] == STORE:
                # a staging copy's store: its round waits at the barrier after the copy
                if wst[W_SLOW, gw] == SLOW:
                    wst[W_SLOW, gw] = SLOW_COPY
                wst[W_STORED, gw] = 1
                wst[W_ARMED, gw] = o + 2
            elif mlp > 0 and wst[W_STORED, gw]:
                # the first shared load after the stores: the barrier between a copy and its reads closes the round
                wst[W_ORD, gw] = wst[W_SIZE, gw]
                wst[W_STORED, gw] = 0
                wst[W_ARMED, gw] = 0
        elif path == Q.PATH_DISTINCT:
            if hp[HP_CONST_PATH] != 0:
                stats[LSU + sp] += k * path_bytes
            in_round = mlp > 0 and op[i] == LOAD and k > 1
            since = round_of(wst, stats, gw, slot[i], mlp, resident, o) if in_round else no_round
            slow = np.int64(0)
            for j in range(k):
                a0 = (words[j] // np.uint64(sect)) * np.uint64(sect)
                slow += upper_span(const_level, s, cfgs, state, stats, out, hp, lat, a0, sect, no, no, sp, o, g, cyc,
                                   slot[i], since)  # fmt: skip
            if in_round and slow > 0:
                wst[W_SLOW, gw] = max(wst[W_SLOW, gw], SLOW)
        else:
            stats[LSU + sp] += max(path_bytes, k * tex_line)
            stats[TEXELS] += Q.active_lanes(np.uint32(m))
            since = round_of(wst, stats, gw, slot[i], mlp, resident, o) if mlp > 0 else no_round
            # one whole texture line per line touched (each mask is bit 0: the line is one sector)
            slow = upper_runs(tex_level, s, cfgs, state, stats, out, hp, lat, lines, smasks, k, tex_line, no, no, sp, o,
                              g, cyc, slot[i], since)  # fmt: skip
            if mlp > 0 and slow > 0:
                wst[W_SLOW, gw] = max(wst[W_SLOW, gw], SLOW)
    return n
