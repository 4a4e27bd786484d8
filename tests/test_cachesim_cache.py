"""simulate_cache against small, obviously correct reference caches, and hand-worked cases."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import cachesim
from cachesim.cache import ipoly_table
from traces.errors import InputError


def ref_lru(addresses, nsets, line, assoc):
    sets = [OrderedDict() for _ in range(nsets)]
    out = []
    for a in addresses:
        blk = int(a) // line
        s = sets[blk % nsets]
        if blk in s:
            s.move_to_end(blk)
            out.append(True)
        else:
            if len(s) == assoc:
                s.popitem(last=False)
            s[blk] = None
            out.append(False)
    return np.array(out, dtype=bool)


def ref_fifo(addresses, nsets, line, assoc):
    sets = [[] for _ in range(nsets)]
    out = []
    for a in addresses:
        blk = int(a) // line
        s = sets[blk % nsets]
        if blk in s:
            out.append(True)
        else:
            if len(s) == assoc:
                s.pop(0)
            s.append(blk)
            out.append(False)
    return np.array(out, dtype=bool)


STREAMS = {
    "random": lambda rng, n: rng.integers(0, 1 << 16, n),
    "narrow": lambda rng, n: rng.integers(0, 1 << 11, n),
    "strided": lambda rng, n: (np.arange(n) * 136) % (1 << 15),
    "reuse": lambda rng, n: np.repeat(rng.integers(0, 1 << 14, n // 4 + 1), 4)[:n],
}


@pytest.mark.parametrize("repl,ref", [("L", ref_lru), ("F", ref_fifo)])
@pytest.mark.parametrize("geom", [(1, 32, 1), (1, 64, 8), (4, 32, 2), (16, 128, 4), (64, 64, 8), (2, 16, 16)])
@pytest.mark.parametrize("stream", sorted(STREAMS))
def test_matches_reference(repl, ref, geom, stream):
    nsets, line, assoc = geom
    rng = np.random.default_rng(hash((repl, geom, stream)) & 0xFFFF)
    a = STREAMS[stream](rng, 3000).astype(np.uint64)
    got = cachesim.simulate_cache(f"N:{nsets}:{line}:{assoc},{repl}:R:m:N:L", a)
    np.testing.assert_array_equal(got, ref(a, nsets, line, assoc))


def test_edge_cases():
    spec = "N:4:32:2,L:R:m:N:L"
    assert cachesim.simulate_cache(spec, np.zeros(0, np.uint64)).shape == (0,)
    assert cachesim.simulate_cache(spec, np.array([5])).tolist() == [False]
    # all hits after the first touch of one line
    assert cachesim.simulate_cache(spec, np.arange(32)).tolist() == [False] + [True] * 31
    # three lines in one set of a 2-way cache, round robin: LRU always misses
    a = np.array([0, 128, 256] * 5)
    assert not cachesim.simulate_cache(spec, a).any()
    # accepts signed integers and large addresses
    big = np.array([2**63 + 7, 2**63 + 9], dtype=np.uint64)
    assert cachesim.simulate_cache(spec, big).tolist() == [False, True]


def test_lru_vs_fifo_hand_worked():
    # one set, two ways: A B A C A  -> LRU keeps A (evicts B); FIFO evicts A at C
    a = np.array([0, 32, 0, 64, 0])
    assert cachesim.simulate_cache("N:1:32:2,L:R:m:N:L", a).tolist() == [False, False, True, False, True]
    assert cachesim.simulate_cache("N:1:32:2,F:R:m:N:L", a).tolist() == [False, False, True, False, False]


def test_sectored_lines():
    spec = "S:1:128:1,L:R:m:N:L"  # one 128-byte line of four 32-byte sectors
    a = np.array([0, 4, 32, 0, 96, 127, 128, 0, 32])
    # 0 miss (line), 4 hit (sector 0), 32 sector miss, 0 hit, 96 sector miss, 127 hit,
    # 128 evicts the line, 0 miss, 32 sector miss
    assert cachesim.simulate_cache(spec, a).tolist() == [False, True, False, True, False, True, False, False, False]
    # the normal-line cache of the same shape hits on every sector once the line is in
    assert cachesim.simulate_cache("N:1:128:1,L:R:m:N:L", a).tolist() == [
        False, True, True, True, True, True, False, False, True
    ]  # fmt: skip


def poly_mod(value: int, poly: int) -> int:
    deg = poly.bit_length() - 1
    while value.bit_length() - 1 >= deg:
        value ^= poly << (value.bit_length() - 1 - deg)
    return value


def test_ipoly_hand_worked():
    # 32 sets, 128-byte lines: line number 32 (address 4096) is x^5 = x^2 + 1 mod x^5+x^2+1 -> set 5
    tab, nbits = ipoly_table(32)
    assert nbits == 15 and tab[0] == 5 and tab[3] == 13  # x^8 = x^3 + x^2 + 1
    # 33 ways of one set would miss on a 32-way cache if all went to one set; IPOLY spreads
    # lines 0 and 32*5... check directly: lines 5 and 32 collide (both set 5), line 0 does not
    spec = "N:32:128:1,L:R:m:N:P"
    a = np.array([5 * 128, 32 * 128, 5 * 128, 0, 5 * 128])
    assert cachesim.simulate_cache(spec, a).tolist() == [False, False, False, False, True]
    # and the linear index maps line 32 to set 0, not 5
    assert cachesim.simulate_cache("N:32:128:1,L:R:m:N:L", a).tolist() == [False, False, True, False, True]


@pytest.mark.parametrize("nsets", [16, 32, 64])
def test_ipoly_is_polynomial_mod(nsets):
    poly, nbits = cachesim.spec.IPOLY[nsets]
    k = nsets.bit_length() - 1
    tab, _ = ipoly_table(nsets)
    rng = np.random.default_rng(nsets)
    for line_no in rng.integers(0, 1 << (k + nbits), 200).tolist():
        # the set is the line number (as a GF(2) polynomial, higher bits truncated) mod P
        assert tab[:nbits].shape == (nbits,)
        want = poly_mod(line_no, poly)
        # 1 way: a line hits only if the previous line mapped to the same set was itself
        spec = f"N:{nsets}:128:1,L:R:m:N:P"
        probe = np.array([line_no * 128, want * 128, line_no * 128], dtype=np.uint64)
        hits = cachesim.simulate_cache(spec, probe).tolist()
        # line `want` < nsets maps to set `want` itself, so it evicts line_no iff same set
        assert hits[2] == (want == line_no)


def test_fermi_hash_hand_worked():
    spec = "N:32:128:1,L:R:m:N:H"
    # bit 13 -> set 1 (upper xor bit 0), so address 8192 collides with line 1 (address 128)
    a = np.array([128, 8192, 128])
    assert cachesim.simulate_cache(spec, a).tolist() == [False, False, False]
    # bit 17 -> set 8, collides with line 8 (address 1024)
    a = np.array([1024, 1 << 17, 1024])
    assert cachesim.simulate_cache(spec, a).tolist() == [False, False, False]
    # linear indexing: 8192 is line 64 -> set 0, no collision with line 1
    assert cachesim.simulate_cache("N:32:128:1,L:R:m:N:L", np.array([128, 8192, 128])).tolist() == [False, False, True]


def test_xor_index():
    # 4 sets of 32 B: line 4 (address 128) has index 0 and higher bits 1 -> set 1, with line 1
    a = np.array([32, 128, 32])
    assert cachesim.simulate_cache("N:4:32:1,L:R:m:N:X", a).tolist() == [False, False, False]
    assert cachesim.simulate_cache("N:4:32:1,L:R:m:N:L", a).tolist() == [False, False, True]


def test_write_policies():
    a = np.array([0, 0, 0, 64, 64])
    w = np.array([True, False, True, False, True])
    # write-back + write-allocate: the write miss allocates, then everything hits
    assert cachesim.simulate_cache("N:1:32:4,L:B:m:W:L", a, w).tolist() == [False, True, True, False, True]
    # write-through, no write-allocate: the first write does not allocate
    assert cachesim.simulate_cache("N:1:32:4,L:T:m:N:L", a, w).tolist() == [False, False, True, False, True]
    # write-evict: a write hit invalidates, so the read after it misses
    a2 = np.array([0, 0, 0, 0])
    w2 = np.array([False, True, False, False])
    assert cachesim.simulate_cache("N:1:32:4,L:E:m:N:L", a2, w2).tolist() == [False, True, False, True]
    # read-only: a write invalidates and is a miss
    assert cachesim.simulate_cache("N:1:32:4,L:R:m:N:L", a2, w2).tolist() == [False, False, False, True]
    # allocation on fill gives the same hits as on miss in this timing-free model
    rng = np.random.default_rng(1)
    r = rng.integers(0, 4096, 2000)
    assert (cachesim.simulate_cache("N:8:32:2,L:T:f:N:L", r) == cachesim.simulate_cache("N:8:32:2,L:T:m:N:L", r)).all()


def test_lru_with_writes_matches_reference():
    # write-back write-allocate LRU: writes behave like reads for hit/miss
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 13, 4000).astype(np.uint64)
    w = rng.random(4000) < 0.3
    got = cachesim.simulate_cache("N:8:64:4,L:B:m:W:L", a, w)
    np.testing.assert_array_equal(got, ref_lru(a, 8, 64, 4))


@pytest.mark.parametrize(
    "spec,field",
    [
        ("N:3:128:4,L:R:m:N:L", "nsets"),
        ("N:4:100:4,L:R:m:N:L", "line"),
        ("N:4:128:0,L:R:m:N:L", "assoc"),
        ("Q:4:128:4,L:R:m:N:L", "line type"),
        ("N:4:128:4,Z:R:m:N:L", "replacement"),
        ("N:4:128:4,L:Q:m:N:L", "write policy"),
        ("N:4:128:4,L:R:q:N:L", "allocation"),
        ("N:4:128:4,L:R:m:Q:L", "write allocation"),
        ("N:4:128:4,L:R:m:N:Q", "set index"),
        ("N:4:128:4,L:R:m:N:C", "set index"),
        ("N:8:128:4,L:R:m:N:P", "set index"),
        ("N:16:128:4,L:R:m:N:H", "set index"),
        ("N:4:128:4,L:B:f:W:L", "allocation"),
        ("N:4:128:4,L:T:f:F:L", "write allocation"),
        ("S:4:64:4,L:R:m:N:L", "line"),
        ("N:4:128:4,L:R:m:N:L,Z:4:4", "mshr type"),
        ("N:4:128:4", "cache string"),
        ("", "cache string"),
    ],
)
def test_bad_specs(spec, field):
    with pytest.raises(cachesim.SpecError) as e:
        cachesim.simulate_cache(spec, np.zeros(3, np.uint64))
    assert isinstance(e.value, InputError)
    assert e.value.field == field
    assert "\n" not in str(e.value) and str(e.value).startswith(field)


def test_real_specs_parse():
    for s in [
        "N:64:128:6,L:L:m:N:H,A:128:8,8",  # GPGPU-Sim GTX480 L1D
        "N:4:128:24,L:R:m:N:L,F:128:4,128:2",  # texture
        "N:64:64:2,L:R:f:N:L,A:2:32,4",  # constant
        "S:32:128:24,L:B:m:L:P,A:192:4,32:0,32",  # Volta L2 slice
        "N:64:128:16,L:B:m:W:L,A:1024:1024,4:0,32",
    ]:
        spec = cachesim.parse_spec(s)
        assert spec.size > 0 and spec.describe()


def test_bad_addresses():
    with pytest.raises(cachesim.CachesimError, match="^addresses"):
        cachesim.simulate_cache("N:4:32:2,L:R:m:N:L", np.array([-1, 2]))
    with pytest.raises(cachesim.CachesimError, match="^addresses"):
        cachesim.simulate_cache("N:4:32:2,L:R:m:N:L", np.array([1.5]))
    with pytest.raises(cachesim.CachesimError, match="^writes"):
        cachesim.simulate_cache("N:4:32:2,L:R:m:N:L", np.array([1, 2]), np.array([True]))


@pytest.mark.parametrize("repl", ["L", "F"])
@pytest.mark.parametrize("geom", [(1, 32, 1), (1, 64, 8), (4, 32, 2), (64, 128, 4), (2, 16, 16), (8, 4, 3)])
def test_load_kernel_matches_general_kernel(repl, geom):
    """The loads-only kernel of simulate_cache gives the general kernel's outcomes, access for access
    (block 0 and the top of the address space included: a tag of 0 is not an empty way)."""
    from cachesim import _cache_kernels as K
    from cachesim.cache import cache_config, new_state
    from cachesim.spec import parse_spec

    nsets, line, assoc = geom
    rng = np.random.default_rng(nsets * 1000 + line * 10 + assoc)
    span = nsets * line * assoc * 3
    a = np.concatenate([np.zeros(5, np.uint64), rng.integers(0, span, 4000).astype(np.uint64),
                        np.uint64(2**64 - 1) - rng.integers(0, span, 500).astype(np.uint64),
                        rng.integers(0, 2, 200).astype(np.uint64)])  # fmt: skip
    spec = parse_spec(f"N:{nsets}:{line}:{assoc},{repl}:R:m:N:L")
    general = np.empty(a.shape[0], np.int8)
    K.run(cache_config(spec), new_state(nsets * assoc), a, np.zeros(0, np.bool_), general)
    fast = np.empty(a.shape[0], np.bool_)
    K.run_reads(a, line.bit_length() - 1, nsets, assoc, repl == "L", fast)
    np.testing.assert_array_equal(fast, general == K.HIT)
    assert 0 < fast.sum() < fast.shape[0]
    np.testing.assert_array_equal(
        cachesim.simulate_cache(spec.text or f"N:{nsets}:{line}:{assoc},{repl}:R:m:N:L", a), fast
    )


@pytest.mark.parametrize(
    "text",
    ["S:4:128:48,L:B:m:W:L", "S:2:128:64,L:E:m:N:X", "N:32:64:24,F:T:m:W:P", "N:4:32:16,L:R:m:N:L",
     "S:4:128:40,L:L:m:L:L"],
)  # fmt: skip
def test_way_hints_change_no_outcome(text):
    """The HINT row (a direct-mapped table of each set's ways, which the hierarchy's caches carry) only spares the
    scan of a set: every access's outcome, evicted block and mask and way, and the tag store after a stream of
    reads and writes (reused lines, lines that evict each other, blocks whose hints collide), are those of the
    same cache without hints; and after an access the line's slot names its way."""
    from cachesim import _cache_kernels as K
    from cachesim.cache import cache_config
    from cachesim.spec import parse_spec

    spec = parse_spec(text)
    cfg = cache_config(spec)
    ways = spec.nsets * spec.assoc
    plain = np.zeros((4, ways), np.uint64)
    hinted = np.zeros((6, ways), np.uint64)
    rng = np.random.default_rng(ways)
    lines = rng.integers(0, 3 * ways, 6000) * spec.line + rng.integers(0, spec.line, 6000)
    reuse = np.repeat(lines[:300], 4)  # the same lines again: hits, through the hints
    addrs = np.concatenate([lines, reuse, lines[::-1]]).astype(np.uint64)
    writes = rng.random(addrs.shape[0]) < 0.2
    held = 0
    for t, (a, w) in enumerate(zip(addrs, writes), start=1):
        smask = np.uint64(K.sector_mask(cfg, a))
        want = K.access(cfg, plain, 0, a, smask, bool(w), False, t)
        got = K.access(cfg, hinted, 0, a, smask, bool(w), False, t)
        assert got == want, (t, a, w)
        if got[3] >= 0:  # the line's slot, Fibonacci hashing of its line number by hand, names its way
            first = got[3] - got[3] % spec.assoc
            key = ((int(a) // spec.line) * K.GOLDEN) % 2**64
            assert hinted[K.HINT, first + (key >> 32) % spec.assoc] == got[3] - first + 1
            held += 1
    np.testing.assert_array_equal(hinted[:4], plain)
    assert held > addrs.shape[0] // 2
