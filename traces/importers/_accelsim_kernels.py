"""Numba kernels of the Accel-Sim importer: a byte-level parser of the instruction stream.

``parse_body`` walks complete lines of a ``.traceg`` body held in a uint8 buffer and
keeps all its state in small arrays, so the caller can feed the file chunk by
chunk and resume it where it stopped. It stops (and says why) when it meets an
opcode it has not seen (the caller classifies it in Python and resumes at the same
line, which has changed nothing yet), when the output arrays are full, at the end
of the buffer, or on an error. Kernels never raise: they return a code and the
wrapper (``accelsim.py``) turns it into a message naming the line.

Per warp it also follows the register def-use chains of each dynamic basic block
to measure ILP and MLP as GPUPerf defines them (Sim et al., Sec. 5.3): ILP of a
block = instructions / groups of instructions without true dependencies among
them (in issue order); local MLP of a long-latency load = number of such loads
issued from it up to the first instruction that reads its result (or the end of
the block); MLP of a block = mean local MLP; both averaged over the dynamic blocks
(execution-frequency weighting, Sec. 5.3's last equation).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..codes import GLOBAL, LOAD, LOCAL, SHARED, STORE
from .._numba import LEAF
from .opcodes import GENERIC, LDGSTS

NUMBA_DEPS = "948aa2c0befd910c"  # its imports' sources, for numba's cache (traces.numba_cache)

# Return codes.
DONE, NEED_OPCODE, OUT_FULL, ERROR = 0, 1, 2, 3

# Error codes (st[S_ERR]); st[S_ERR_ARG] carries a detail.
E_GARBAGE = 1  # a line that does not parse; arg: which field (F_* below)
E_TRUNCATED = 2  # a warp with fewer instructions than its `insts = N`; arg: instructions seen
E_MIXED = 3  # a second kernel header or a repeated thread block: the file mixes launches
E_STRUCTURE = 4  # an instruction outside a warp, or more instructions than announced; arg: detail code
E_RANGE = 5  # a block or warp index outside the launch; arg: the index

# Garbage-line field codes (st[S_ERR_ARG] with E_GARBAGE).
F_LINENUM, F_PC, F_MASK, F_NDST, F_DST, F_OPCODE, F_NSRC, F_SRC, F_WIDTH, F_MODE, F_ADDR, F_STRIDE, F_DELTA, \
    F_TRAILING, F_TB, F_WARP, F_INSTS, F_GAP = range(18)  # fmt: skip

# Structure detail codes.
D_NO_TB, D_NO_WARP, D_TOO_MANY, D_BEGIN_TWICE, D_END_OUTSIDE = range(5)

# State slots (int64 array).
(S_POS, S_LINE, S_IN_TB, S_CTA, S_WARP, S_EXPECT, S_SEEN, S_NROWS, S_PREV_PC, S_PREV_END, S_BB, S_BB_N, S_BB_GROUPS,
 S_BB_LOADS, S_ERR, S_ERR_LINE, S_ERR_ARG, S_NEW_OFF, S_NEW_LEN, S_SKIPPED, S_LDGSTS_SH, S_LDGSTS_GL, S_MASK0_MEM,
 S_NOADDR_MEM, S_UNCLASSIFIED, S_INSTR_LINES, S_SKIP_TB, S_PEND_N, S_TRUNC_WARPS, S_CTA_X, S_CTA_Y, S_CTA_Z,
 S_WARPS_SEEN, S_MIXED_SKIPPED) = range(34)  # fmt: skip
N_STATE = 40

# Float accumulators.
A_ILP_SUM, A_BB_COUNT, A_MLP_SUM, A_MLP_BB, A_LOADS, A_LOCAL_SUM, A_LOCAL_N = range(7)
N_ACC = 8

# Configuration slots.
C_GX, C_GY, C_GZ, C_WPB, C_LINEINFO, C_VERSION, C_SHBASE, C_LOBASE, C_ISZ, C_SKIP, C_WINDOW = range(11)
N_CFG = 12

# Opcode table columns (int64 [n_opcodes, T_N]).
T_SPACE, T_OP, T_WIDTH, T_CLASS, T_MEMCLASS, T_LONG, T_ENDS = range(7)
T_N = 8

# Register state rows (int64 [5, 256]).
R_DEF_BB, R_DEF_GRP, R_PEND_BB, R_PEND_START, R_PEND_LIST = range(5)

# Output columns (int64 [cap, M_N]).
M_CTA, M_WARP, M_SEQ, M_PC, M_OP, M_SPACE, M_WIDTH, M_MASK = range(8)
M_N = 8

HASH_SLOTS = 1 << 12

_RZ = 255
_SMALL = 1 << 24  # below this an LDGSTS address is a shared-window offset, not a global address

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@nb.njit(cache=True, nogil=True)
def fnv1a(buf, start, length):
    """64-bit FNV-1a hash of ``buf[start:start+length]`` (opcode strings)."""
    h = _FNV_OFFSET
    for i in range(start, start + length):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    return h


@nb.njit(cache=True, nogil=True)
def hash_lookup(keys, vals, h):
    mask = np.uint64(keys.shape[0] - 1)
    i = np.int64(h & mask)
    while True:
        v = vals[i]
        if v < 0:
            return -1
        if keys[i] == h:
            return v
        i = (i + 1) & (keys.shape[0] - 1)


@nb.njit(cache=True, nogil=True)
def hash_insert(keys, vals, h, value):
    mask = np.uint64(keys.shape[0] - 1)
    i = np.int64(h & mask)
    while vals[i] >= 0:
        if keys[i] == h:
            return False
        i = (i + 1) & (keys.shape[0] - 1)
    keys[i] = h
    vals[i] = value
    return True


@nb.njit(cache=True, inline="always")
def _is_sp(c):
    return c == 32 or c == 9 or c == 13


@nb.njit(**LEAF)
def _skip(buf, p, le):
    while p < le and _is_sp(buf[p]):
        p += 1
    return p


@nb.njit(**LEAF)
def _dec(buf, p, le):
    """Parse a signed decimal token; (value, new position, ok)."""
    p = _skip(buf, p, le)
    neg = False
    if p < le and buf[p] == 45:
        neg = True
        p += 1
    v = np.int64(0)
    n = 0
    while p < le and not _is_sp(buf[p]) and buf[p] != 44:
        c = buf[p]
        if c < 48 or c > 57 or n > 18:
            return v, p, False
        v = v * 10 + (c - 48)
        n += 1
        p += 1
    if n == 0:
        return v, p, False
    return (-v if neg else v), p, True


@nb.njit(**LEAF)
def _hex(buf, p, le):
    """Parse a hexadecimal token with optional 0x; (value, new position, ok)."""
    p = _skip(buf, p, le)
    if p + 1 < le and buf[p] == 48 and (buf[p + 1] == 120 or buf[p + 1] == 88):
        p += 2
    v = np.int64(0)
    n = 0
    while p < le and not _is_sp(buf[p]):
        c = buf[p]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return v, p, False
        if n >= 16 or (n == 15 and v >= (np.int64(1) << 59)):
            return v, p, False
        v = (v << 4) | d
        n += 1
        p += 1
    return v, p, n > 0


@nb.njit(**LEAF)
def _reg(buf, p, le):
    """Parse a register token R<n>; (n, new position, ok)."""
    p = _skip(buf, p, le)
    if p >= le or buf[p] != 82:
        return 0, p, False
    v, p, ok = _dec(buf, p + 1, le)
    return v, p, ok and 0 <= v <= 255


@nb.njit(**LEAF)
def _word(buf, p, le, pat):
    """Does the line at p start with the bytes of ``pat`` followed by a separator or '='?"""
    n = pat.shape[0]
    if p + n > le:
        return False
    for i in range(n):
        if buf[p + i] != pat[i]:
            return False
    return p + n == le or _is_sp(buf[p + n]) or buf[p + n] == 61


@nb.njit(**LEAF)
def _after_eq(buf, p, le):
    while p < le and buf[p] != 61:
        p += 1
    return p + 1 if p < le else -1


_BEGIN_TB = np.frombuffer(b"#BEGIN_TB", dtype=np.uint8)
_END_TB = np.frombuffer(b"#END_TB", dtype=np.uint8)
_THREAD = np.frombuffer(b"thread", dtype=np.uint8)
_WARP = np.frombuffer(b"warp", dtype=np.uint8)
_INSTS = np.frombuffer(b"insts", dtype=np.uint8)
_CLUSTER = np.frombuffer(b"cluster", dtype=np.uint8)


@nb.njit(cache=True, nogil=True)
def _close_bb(st, acc, regs):
    """Fold the open basic block into the ILP/MLP sums (Sim et al., Sec. 5.3)."""
    n = st[S_BB_N]
    if n == 0:
        return
    acc[A_ILP_SUM] += n / st[S_BB_GROUPS]
    acc[A_BB_COUNT] += 1.0
    loads = st[S_BB_LOADS]
    if loads > 0:
        bb = st[S_BB]
        s = 0.0
        k = 0
        for j in range(st[S_PEND_N]):
            r = regs[R_PEND_LIST, j]
            if regs[R_PEND_BB, r] == bb and regs[R_PEND_START, r] > 0:
                s += loads - regs[R_PEND_START, r] + 1
                regs[R_PEND_START, r] = 0
                k += 1
        s += acc[A_LOCAL_SUM]  # local MLPs closed by a use inside this block
        k += np.int64(acc[A_LOCAL_N])
        if k > 0:
            acc[A_MLP_SUM] += s / k
            acc[A_MLP_BB] += 1.0
        acc[A_LOADS] += loads
    acc[A_LOCAL_SUM] = 0.0
    acc[A_LOCAL_N] = 0.0
    st[S_BB_N] = 0
    st[S_BB_GROUPS] = 1
    st[S_BB_LOADS] = 0
    st[S_PEND_N] = 0


@nb.njit(cache=True, nogil=True)
def _fail(st, code, line, arg):
    st[S_ERR] = code
    st[S_ERR_LINE] = line
    st[S_ERR_ARG] = arg
    return ERROR


@nb.njit(cache=True, nogil=True)
def _close_warp(st, acc, regs, line):
    """End the current warp; False if it is short of its announced instructions."""
    _close_bb(st, acc, regs)
    ok = True
    if st[S_WARP] >= 0 and st[S_EXPECT] >= 0 and st[S_SEEN] < st[S_EXPECT]:
        ok = False
    st[S_WARP] = -1
    st[S_EXPECT] = -1
    st[S_SEEN] = 0
    st[S_PREV_END] = 1
    return ok


@nb.njit(cache=True, nogil=True)
def parse_body(buf, end, st, acc, cfg, ht_keys, ht_vals, optab, opcount, regs, seen_cta, out_meta, out_addr):
    """Parse the complete lines of ``buf[st[S_POS]:end]`` (``buf[end-1]`` is a newline)."""
    p = st[S_POS]
    cap = out_meta.shape[0]
    gx = cfg[C_GX]
    gy = cfg[C_GY]
    gz = cfg[C_GZ]
    wpb = cfg[C_WPB]
    lineinfo = cfg[C_LINEINFO]
    version = cfg[C_VERSION]
    shbase = cfg[C_SHBASE]
    lobase = cfg[C_LOBASE]
    isz = cfg[C_ISZ]
    skip = cfg[C_SKIP] != 0
    window = cfg[C_WINDOW]
    dst = np.empty(16, dtype=np.int64)
    src = np.empty(16, dtype=np.int64)
    a = np.zeros(32, dtype=np.int64)
    while p < end:
        le = p
        while buf[le] != 10:
            le += 1
        line = st[S_LINE] + 1
        q = _skip(buf, p, le)
        if q == le:  # blank line
            st[S_LINE] = line
            p = le + 1
            continue
        c = buf[q]
        if st[S_SKIP_TB] != 0 and not _word(buf, q, le, _END_TB):
            st[S_SKIPPED] += 1
            st[S_LINE] = line
            p = le + 1
            continue
        if c == 35:  # '#'
            if _word(buf, q, le, _BEGIN_TB):
                if st[S_IN_TB] != 0:
                    if not skip:
                        return _fail(st, E_STRUCTURE, line, D_BEGIN_TWICE)
                    if not _close_warp(st, acc, regs, line):
                        st[S_TRUNC_WARPS] += 1
                    st[S_SKIPPED] += 1
                st[S_IN_TB] = 1
                st[S_CTA] = -1
            elif _word(buf, q, le, _END_TB):
                if st[S_SKIP_TB] != 0:
                    st[S_SKIP_TB] = 0
                    st[S_SKIPPED] += 1
                    st[S_IN_TB] = 0
                elif st[S_IN_TB] == 0:
                    if not skip:
                        return _fail(st, E_STRUCTURE, line, D_END_OUTSIDE)
                    st[S_SKIPPED] += 1
                else:
                    seen = st[S_SEEN]
                    if not _close_warp(st, acc, regs, line):
                        if not skip:
                            return _fail(st, E_TRUNCATED, line, seen)
                        st[S_TRUNC_WARPS] += 1
                    st[S_IN_TB] = 0
            st[S_LINE] = line
            p = le + 1
            continue
        if c == 45:  # '-': a kernel header line inside the instruction stream
            if not skip:
                return _fail(st, E_MIXED, line, 0)
            st[S_SKIPPED] += 1
            st[S_MIXED_SKIPPED] += 1
            st[S_LINE] = line
            p = le + 1
            continue
        if _word(buf, q, le, _THREAD):
            e = _after_eq(buf, q, le)
            ok = e > 0 and st[S_IN_TB] != 0
            x = y = z = np.int64(0)
            if ok:
                x, e, ok1 = _dec(buf, e, le)
                ok = ok1 and e < le and buf[e] == 44
            if ok:
                y, e, ok1 = _dec(buf, e + 1, le)
                ok = ok1 and e < le and buf[e] == 44
            if ok:
                z, e, ok1 = _dec(buf, e + 1, le)
                ok = ok1 and _skip(buf, e, le) == le
            if not ok:
                if not skip:
                    return _fail(st, E_GARBAGE, line, F_TB)
                st[S_SKIPPED] += 1
                st[S_LINE] = line
                p = le + 1
                continue
            if x < 0 or y < 0 or z < 0 or x >= gx or y >= gy or z >= gz:
                if not skip:
                    return _fail(st, E_RANGE, line, 0)
                st[S_SKIPPED] += 1
                st[S_SKIP_TB] = 1
                st[S_LINE] = line
                p = le + 1
                continue
            cta = x + y * gx + z * gx * gy
            tracked = cta < seen_cta.shape[0]  # empty for grids too large to flag each block
            if tracked and seen_cta[cta]:
                if not skip:
                    return _fail(st, E_MIXED, line, cta)
                st[S_SKIPPED] += 1
                st[S_MIXED_SKIPPED] += 1
                st[S_SKIP_TB] = 1
                st[S_LINE] = line
                p = le + 1
                continue
            if tracked:
                seen_cta[cta] = True
            st[S_CTA] = cta
            st[S_CTA_X] = x
            st[S_CTA_Y] = y
            st[S_CTA_Z] = z
            st[S_LINE] = line
            p = le + 1
            continue
        if _word(buf, q, le, _CLUSTER):  # tracer version 6: cluster id / cta / rank of the block
            st[S_LINE] = line
            p = le + 1
            continue
        if _word(buf, q, le, _WARP):
            e = _after_eq(buf, q, le)
            w = np.int64(-1)
            ok = e > 0 and st[S_IN_TB] != 0 and st[S_CTA] >= 0
            if ok:
                w, e, ok = _dec(buf, e, le)
                ok = ok and _skip(buf, e, le) == le
            if not ok:
                if not skip:
                    return _fail(st, E_GARBAGE, line, F_WARP)
                st[S_SKIPPED] += 1
                st[S_LINE] = line
                p = le + 1
                continue
            seen = st[S_SEEN]
            if not _close_warp(st, acc, regs, line):
                if not skip:
                    return _fail(st, E_TRUNCATED, line, seen)
                st[S_TRUNC_WARPS] += 1
            if w < 0 or w >= wpb:
                if not skip:
                    return _fail(st, E_RANGE, line, w)
                st[S_SKIPPED] += 1
                st[S_LINE] = line
                p = le + 1
                continue
            st[S_WARP] = w
            st[S_LINE] = line
            p = le + 1
            continue
        if _word(buf, q, le, _INSTS):
            e = _after_eq(buf, q, le)
            ok = e > 0 and st[S_WARP] >= 0
            n = np.int64(0)
            if ok:
                n, e, ok = _dec(buf, e, le)
                ok = ok and n >= 0 and _skip(buf, e, le) == le
            if not ok:
                if not skip:
                    return _fail(st, E_GARBAGE, line, F_INSTS)
                st[S_SKIPPED] += 1
                st[S_LINE] = line
                p = le + 1
                continue
            st[S_EXPECT] = n
            st[S_SEEN] = 0
            st[S_PREV_END] = 1
            if n > 0:
                st[S_WARPS_SEEN] += 1
            st[S_LINE] = line
            p = le + 1
            continue

        # ---- an instruction line ----
        if st[S_IN_TB] == 0 or st[S_CTA] < 0 or st[S_WARP] < 0 or st[S_EXPECT] < 0 or st[S_SEEN] >= st[S_EXPECT]:
            if not skip:
                if st[S_IN_TB] == 0 or st[S_CTA] < 0:
                    d = D_NO_TB
                elif st[S_WARP] < 0 or st[S_EXPECT] < 0:
                    d = D_NO_WARP
                else:
                    d = D_TOO_MANY
                return _fail(st, E_STRUCTURE, line, d)
            st[S_SKIPPED] += 1
            st[S_LINE] = line
            p = le + 1
            continue
        if st[S_NROWS] + 2 > cap:
            st[S_POS] = p
            return OUT_FULL
        bad = -1
        pos = q
        ok = True
        if lineinfo != 0:
            _, pos, ok = _dec(buf, pos, le)
            if not ok:
                bad = F_LINENUM
        pc = np.int64(0)
        mask = np.int64(0)
        ndst = np.int64(0)
        nsrc = np.int64(0)
        width = np.int64(0)
        opid = -1
        if bad < 0:
            pc, pos, ok = _hex(buf, pos, le)
            if not ok or pc > 0x7FFFFFFF:
                bad = F_PC
        if bad < 0:
            mask, pos, ok = _hex(buf, pos, le)
            if not ok or mask > 0xFFFFFFFF:
                bad = F_MASK
        if bad < 0:
            ndst, pos, ok = _dec(buf, pos, le)
            if not ok or ndst < 0 or ndst > 16:
                bad = F_NDST
        if bad < 0:
            for i in range(ndst):
                r, pos, ok = _reg(buf, pos, le)
                if not ok:
                    bad = F_DST
                    break
                dst[i] = r
        if bad < 0:
            t0 = _skip(buf, pos, le)
            t1 = t0
            while t1 < le and not _is_sp(buf[t1]):
                t1 += 1
            if t1 == t0:
                bad = F_OPCODE
            else:
                h = fnv1a(buf, t0, t1 - t0)
                opid = hash_lookup(ht_keys, ht_vals, h)
                if opid < 0:
                    st[S_POS] = p
                    st[S_NEW_OFF] = t0
                    st[S_NEW_LEN] = t1 - t0
                    return NEED_OPCODE
                pos = t1
        if bad < 0:
            nsrc, pos, ok = _dec(buf, pos, le)
            if not ok or nsrc < 0 or nsrc > 16:
                bad = F_NSRC
        if bad < 0:
            for i in range(nsrc):
                r, pos, ok = _reg(buf, pos, le)
                if not ok:
                    bad = F_SRC
                    break
                src[i] = r
        if bad < 0:
            width, pos, ok = _dec(buf, pos, le)
            if not ok or width < 0 or width > 1024:
                bad = F_WIDTH
        if bad < 0 and width > 0:
            for i in range(32):
                a[i] = 0
            mode, pos, ok = _dec(buf, pos, le)
            if not ok or mode < 0 or mode > 2:
                bad = F_MODE
            elif mode == 0:
                for lane in range(32):
                    if (mask >> lane) & 1:
                        v, pos, ok = _hex(buf, pos, le)
                        if not ok:
                            bad = F_ADDR
                            break
                        a[lane] = v
            elif mode == 1:
                base, pos, ok = _hex(buf, pos, le)
                if not ok:
                    bad = F_ADDR
                else:
                    stride, pos, ok = _dec(buf, pos, le)
                    if not ok:
                        bad = F_STRIDE
                    else:
                        started = False
                        stopped = False
                        cur = base
                        for lane in range(32):
                            if (mask >> lane) & 1:
                                if stopped:
                                    bad = F_GAP
                                    break
                                if started:
                                    cur += stride
                                started = True
                                a[lane] = cur
                            elif started:
                                stopped = True
            else:
                base, pos, ok = _hex(buf, pos, le)
                if not ok:
                    bad = F_ADDR
                else:
                    started = False
                    cur = base
                    for lane in range(32):
                        if (mask >> lane) & 1:
                            if started:
                                dlt, pos, ok = _dec(buf, pos, le)
                                if not ok:
                                    bad = F_DELTA
                                    break
                                cur += dlt
                            started = True
                            a[lane] = cur
        if bad < 0:
            # Trailing fields: v3 none, v4 none or the immediate, v5 the immediate,
            # v6 two immediates and Val|NoVal [values].
            ntrail = 0
            tp = pos
            while True:
                tp = _skip(buf, tp, le)
                if tp >= le:
                    break
                ntrail += 1
                while tp < le and not _is_sp(buf[tp]):
                    tp += 1
            if version <= 3:
                ok = ntrail == 0
            elif version == 4:
                ok = ntrail <= 1
            elif version == 5:
                ok = ntrail == 1
            else:
                ok = ntrail >= 3
            if not ok:
                bad = F_TRAILING
        if bad >= 0:
            if not skip:
                return _fail(st, E_GARBAGE, line, bad)
            st[S_SKIPPED] += 1
            st[S_SEEN] += 1  # the line still holds its place in the warp's stream
            st[S_LINE] = line
            p = le + 1
            continue

        # ---- commit the instruction ----
        seq = st[S_SEEN]
        st[S_SEEN] = seq + 1
        st[S_INSTR_LINES] += 1
        opcount[opid] += 1
        space = optab[opid, T_SPACE]
        is_long = optab[opid, T_LONG] != 0

        # ILP / MLP over the dynamic basic block (Sim et al., Sec. 5.3).
        prev = st[S_PREV_PC]
        if st[S_PREV_END] != 0 or pc <= prev or pc > prev + 2 * isz:
            _close_bb(st, acc, regs)
            st[S_BB] += 1
        bb = st[S_BB]
        grp = st[S_BB_GROUPS]
        loads = st[S_BB_LOADS]
        dep = False
        for i in range(nsrc):
            r = src[i]
            if r == _RZ:
                continue
            if regs[R_DEF_BB, r] == bb and regs[R_DEF_GRP, r] == grp:
                dep = True
            if regs[R_PEND_BB, r] == bb and regs[R_PEND_START, r] > 0:
                acc[A_LOCAL_SUM] += loads - regs[R_PEND_START, r] + 1
                acc[A_LOCAL_N] += 1.0
                regs[R_PEND_START, r] = 0
        if dep:
            grp += 1
            st[S_BB_GROUPS] = grp
        counted = is_long and width > 0 and mask != 0
        if counted:
            loads += 1
            st[S_BB_LOADS] = loads
        for i in range(ndst):
            r = dst[i]
            if r == _RZ:
                continue
            if regs[R_PEND_BB, r] == bb and regs[R_PEND_START, r] > 0:  # overwritten before any use
                acc[A_LOCAL_SUM] += loads - regs[R_PEND_START, r] + (0 if counted else 1)
                acc[A_LOCAL_N] += 1.0
                regs[R_PEND_START, r] = 0
            regs[R_DEF_BB, r] = bb
            regs[R_DEF_GRP, r] = grp
            if counted:
                regs[R_PEND_BB, r] = bb
                regs[R_PEND_START, r] = loads
                if st[S_PEND_N] < 256:
                    regs[R_PEND_LIST, st[S_PEND_N]] = r
                    st[S_PEND_N] += 1
        st[S_BB_N] += 1
        st[S_PREV_PC] = pc
        st[S_PREV_END] = optab[opid, T_ENDS]

        # ---- the memory row ----
        if width > 0:
            if mask == 0:
                st[S_MASK0_MEM] += 1
            elif space < 0:
                st[S_UNCLASSIFIED] += 1
            else:
                op = optab[opid, T_OP]
                first = 0
                while ((mask >> first) & 1) == 0:
                    first += 1
                a0 = a[first]
                sub = np.int64(0)
                in_sh = shbase > 0 and shbase <= a0 < shbase + window
                in_lo = lobase > 0 and lobase <= a0 < lobase + window
                if space == LDGSTS:
                    if in_sh or a0 < _SMALL:
                        space = SHARED
                        op = STORE
                        if in_sh:
                            sub = shbase
                        st[S_LDGSTS_SH] += 1
                    else:
                        space = GLOBAL
                        op = LOAD
                        st[S_LDGSTS_GL] += 1
                elif space == GENERIC:
                    if in_sh:
                        space = SHARED
                        sub = shbase
                    elif in_lo:
                        space = LOCAL
                        sub = lobase
                    else:
                        space = GLOBAL
                elif space == SHARED and in_sh:
                    sub = shbase
                elif space == LOCAL and in_lo:
                    sub = lobase
                k = st[S_NROWS]
                out_meta[k, M_CTA] = st[S_CTA]
                out_meta[k, M_WARP] = st[S_WARP]
                out_meta[k, M_SEQ] = seq
                out_meta[k, M_PC] = pc
                out_meta[k, M_OP] = op
                out_meta[k, M_SPACE] = space
                out_meta[k, M_WIDTH] = optab[opid, T_WIDTH]
                out_meta[k, M_MASK] = mask
                for lane in range(32):
                    if (mask >> lane) & 1:
                        out_addr[k, lane] = np.uint64(a[lane] - sub)
                    else:
                        out_addr[k, lane] = np.uint64(0)
                st[S_NROWS] = k + 1
        elif optab[opid, T_MEMCLASS] != 0:
            st[S_NOADDR_MEM] += 1
        st[S_LINE] = line
        p = le + 1
    st[S_POS] = p
    return DONE


@nb.njit(cache=True, nogil=True)
def finish(st, acc, regs):
    """Close the last warp at end of input; False if it is short (a truncated file)."""
    if st[S_WARP] >= 0:
        return _close_warp(st, acc, regs, st[S_LINE])
    _close_bb(st, acc, regs)
    return True
