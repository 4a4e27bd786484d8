"""Texture loads and global atomics in an Nsight Compute launch: the traffic the load/store
unit's counters leave out.

``l1tex__t_requests_pipe_lsu_mem_global_op_ld`` / ``_op_st`` count the LSU pipe's global loads
and stores only: a ``tex1Dfetch`` goes down the TEX pipe, an ``atomicAdd`` is an ATOM or RED,
and a kernel made of them reads as one with (almost) no memory traffic (a textured vecadd
came out 86 % too fast, a global histogram 99 %). Each is taken, first found wins:

- counted, when the export has the metrics (``ncu --metrics``: NVIDIA's "nvprof metric
  comparison" table names them): the TEX pipe's texture requests, sectors and sector hit
  rate, and the LSU's global ATOM and RED requests and sectors (global atomics are done at
  the L2: their L1 sectors are L2 sectors);
- derived, when it has the L2's and the L1's sector totals and hit rates that a default
  ``--page raw`` export carries instead:

  * texture: the L2 read sectors that came from the SM's L1TEX unit
    (``lts__t_sectors_srcunit_tex_op_read``) less those the LSU's global loads missed
    (``ld sectors x (1 - ld hit rate)``) are the TEX pipe's misses M (local-memory loads,
    rare, are counted with them). The L1TEX unit's hit rate over all its sectors H
    (``l1tex__t_sector_hit_rate``; stores count as misses) then gives the TEX pipe's
    sectors S: H (S_ld + S_st + S) = h_ld S_ld + S - M, so
    S = (H (S_ld + S_st) - h_ld S_ld + M) / (1 - H), and at least M;
  * atomics: the L2's hit rate over all its sectors H2 (``lts__t_sector_hit_rate``) against
    its read hit rate h_r: with R read sectors, W written by stores (they always hit, the
    L2 allocates on write) and A atomic sectors (done at the L2: hits),
    H2 (R + W + A) = h_r R + W + A, so A = (H2 (R + W) - h_r R - W) / (1 - H2). They are
    taken as reductions (RED: an atomicAdd whose result is unused, as a histogram's, which a
    warp does not wait on).

  Each derivation is a difference of near-equal quantities made of rounded rates (two
  decimals of a percent) and of counts that leave some traffic out, so a small result is
  noise: texture counts when M is over :data:`TEXTURE_FLOOR` of the L2 read sectors (the
  LSU-only launches of the H100 exports leave at most 0.02 %), atomics when A is over
  :data:`ATOMIC_FLOOR` of R + W and over :data:`ATOMIC_FLOOR_PER_SM` sectors per SM (the L2
  also serves instruction and constant misses, local memory and, on a two-partition L2, the
  far partition's fabric traffic, all of which the total hit rate counts: up to 27 % of R + W
  on the smallest launches of those exports and up to about 830 sectors per SM on the largest,
  where a histogram's atomics are 100 % and 16,000 per SM or more). Their request counts are not
  in such an export: each is its sectors over :data:`SECTORS_PER_REQUEST`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECTORS_PER_REQUEST = 4.0
"""Sectors a warp request of unknown count is taken to touch: 32 threads' 4-byte words, one
128-byte line."""
TEXTURE_FLOOR = 0.01
"""Derived texture misses under this share of the L2's read sectors are rounding, not texture."""
ATOMIC_FLOOR = 0.5
"""Derived atomic sectors under this share of the L2's read and write sectors are other traffic."""
ATOMIC_FLOOR_PER_SM = 2048.0
"""... and so are those under this many sectors per SM (when the export gives the SM count)."""
COUNTED, DERIVED, NONE = "counted", "derived", "none"


@dataclass(frozen=True)
class Traffic:
    """Texture and atomic traffic of one launch, whole-launch counts (requests are warp-level)."""

    tex_requests: float = 0.0
    tex_sectors: float = 0.0
    """Sectors the TEX pipe looked up in the L1TEX cache."""
    tex_l2_sectors: float = 0.0
    """Of those, the ones it missed (read from the L2)."""
    atom_requests: float = 0.0
    """ATOM requests (the warp waits for their result)."""
    atom_sectors: float = 0.0
    red_requests: float = 0.0
    """RED requests (reductions, not waited on)."""
    red_sectors: float = 0.0
    texture: str = NONE
    """How the texture traffic was found: counted, derived or none."""
    atomics: str = NONE


def _ok(x: float) -> bool:
    return x == x and x >= 0


def _requests(count: float, sectors: float) -> float:
    return count if _ok(count) else sectors / SECTORS_PER_REQUEST


def _texture(raw: dict) -> tuple[float, float, float, str]:
    sectors = raw.get("tex_sectors", math.nan)
    if _ok(sectors):
        rate = raw.get("tex_hit_rate", math.nan)
        missed = sectors * (1.0 - rate / 100.0) if _ok(rate) else sectors
        return _requests(raw.get("tex_requests", math.nan), sectors), sectors, missed, COUNTED
    if _ok(raw.get("tex_requests", math.nan)) and raw["tex_requests"] > 0:
        sectors = raw["tex_requests"] * SECTORS_PER_REQUEST
        return raw["tex_requests"], sectors, sectors, COUNTED
    l2_reads, s_ld, s_st = (
        raw.get("l2_tex_read_sectors", math.nan),
        raw.get("gld_sectors", math.nan),
        raw.get("gst_sectors", math.nan),
    )
    if not (_ok(l2_reads) and _ok(s_ld) and l2_reads > 0):
        return 0.0, 0.0, 0.0, NONE
    h_ld = raw["l1_hit_rate"] / 100.0 if _ok(raw.get("l1_hit_rate", math.nan)) else 0.0
    missed = l2_reads - s_ld * (1.0 - h_ld)
    if not missed > TEXTURE_FLOOR * l2_reads:
        return 0.0, 0.0, 0.0, NONE
    sectors = missed
    h_all = raw.get("l1_hit_rate_all", math.nan)
    if _ok(h_all) and h_all < 100.0:
        h_all /= 100.0
        s_st = s_st if _ok(s_st) else 0.0
        sectors = max(missed, (h_all * (s_ld + s_st) - h_ld * s_ld + missed) / (1.0 - h_all))
    return sectors / SECTORS_PER_REQUEST, sectors, missed, DERIVED


def _atomics(raw: dict) -> tuple[float, float, float, float, str]:
    atom_s, red_s = raw.get("atom_sectors", math.nan), raw.get("red_sectors", math.nan)
    atom_q, red_q = raw.get("atom_requests", math.nan), raw.get("red_requests", math.nan)
    if any(_ok(x) for x in (atom_s, red_s, atom_q, red_q)):
        a_s = atom_s if _ok(atom_s) else (atom_q * SECTORS_PER_REQUEST if _ok(atom_q) else 0.0)
        r_s = red_s if _ok(red_s) else (red_q * SECTORS_PER_REQUEST if _ok(red_q) else 0.0)
        return _requests(atom_q, a_s), a_s, _requests(red_q, r_s), r_s, COUNTED
    h2, h_r = raw.get("l2_hit_rate_all", math.nan), raw.get("l2_read_hit_rate", math.nan)
    reads, writes = raw.get("l2_tex_read_sectors", math.nan), raw.get("gst_sectors", math.nan)
    if not (_ok(h2) and _ok(h_r) and _ok(reads) and h2 < 99.9):
        return 0.0, 0.0, 0.0, 0.0, NONE
    h2, h_r = h2 / 100.0, h_r / 100.0
    writes = writes if _ok(writes) else 0.0
    sectors = (h2 * (reads + writes) - h_r * reads - writes) / (1.0 - h2)
    sms = raw.get("sm_count", math.nan)
    if not (sectors > ATOMIC_FLOOR * (reads + writes) and (not _ok(sms) or sectors > ATOMIC_FLOOR_PER_SM * sms)):
        return 0.0, 0.0, 0.0, 0.0, NONE
    return 0.0, 0.0, sectors / SECTORS_PER_REQUEST, sectors, DERIVED


def traffic(raw: dict) -> Traffic:
    """The texture and atomic traffic of a launch from its counters (``placement.models.ncu``'s
    canonical names; a missing one is NaN or absent)."""
    tq, ts, tm, how_t = _texture(raw)
    aq, a_s, rq, r_s, how_a = _atomics(raw)
    return Traffic(tex_requests=tq, tex_sectors=ts, tex_l2_sectors=tm, atom_requests=aq, atom_sectors=a_s,
                   red_requests=rq, red_sectors=r_s, texture=how_t, atomics=how_a)  # fmt: skip


def merged(raw: dict, t: Traffic) -> dict:
    """The LSU counters with the texture and atomic traffic folded in, as ``counters._params``
    reads them: texture loads and ATOMs are load requests, REDs store requests; the load
    sectors' L1 hit rate counts the texture hits (atomics never hit in L1); the L2 read
    sectors are the loads' and textures' misses and the ATOMs' sectors, whose L2 hit rate
    counts the ATOMs as hits (the L2 does them); the REDs' sectors are L2 write sectors."""
    g = lambda k: raw[k] if _ok(raw.get(k, math.nan)) else 0.0  # noqa: E731
    out = {}
    if t.texture == NONE and t.atomics == NONE:
        return out
    s_ld = g("gld_sectors")
    h_ld = g("l1_hit_rate") / 100.0
    load_sectors = s_ld + t.tex_sectors + t.atom_sectors
    hits = h_ld * s_ld + (t.tex_sectors - t.tex_l2_sectors)
    l2_reads = s_ld * (1.0 - h_ld) + t.tex_l2_sectors
    out["gld_request"] = g("gld_request") + t.tex_requests + t.atom_requests
    out["gst_request"] = g("gst_request") + t.red_requests
    out["gld_sectors"] = load_sectors
    out["gst_sectors"] = g("gst_sectors") + t.red_sectors
    out["l1_hit_rate"] = 100.0 * hits / load_sectors if load_sectors > 0 else 0.0
    if l2_reads + t.atom_sectors > 0:
        out["l2_hit_rate"] = (
            100.0 * (g("l2_hit_rate") / 100.0 * l2_reads + t.atom_sectors) / (l2_reads + t.atom_sectors)
        )
    out["l2_read_sectors"] = l2_reads + t.atom_sectors
    out["l2_write_sectors"] = out["gst_sectors"]
    return out
