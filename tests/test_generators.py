"""Trace generators: properties worked out by hand from each kernel's code, determinism,
and that every generated trace is read back and summarised by `placement info`."""

from __future__ import annotations

import numpy as np
import pytest

import traces
from placement.cli import main
from traces import generators as G
from traces.errors import InputError

LINE = 128


def active(cols, row):
    m = int(cols["mask"][row])
    return np.array([(m >> k) & 1 for k in range(32)], bool)


def lines(cols, row):
    a = cols["addr"][row][active(cols, row)]
    return set((a // LINE).tolist())


def rows_of(cols, info, name):
    return np.flatnonzero(cols["obj"] == info.object(name).id)


@pytest.fixture(scope="module")
def generated():
    return {name: G.generate(name) for name in G.names()}


@pytest.mark.parametrize("name", G.names())
def test_deterministic_valid_and_info(name, generated, tmp_path, capsys):
    cols, info = generated[name]
    again, info2 = G.generate(name)
    assert info == info2
    for c in traces.COLUMNS:
        assert np.array_equal(cols[c], again[c]), c
    path = tmp_path / f"{name}.parquet"
    traces.write(path, cols, info)
    t = traces.read(path)
    assert len(t) == len(cols["cta"]) > 0
    assert t.info.instructions.executed > 0
    assert t.info.instructions.ldst <= t.info.instructions.executed
    assert main(["info", str(path)]) == 0
    assert main(["info", "--json", str(path)]) == 0
    capsys.readouterr()


def test_vecadd_one_line_per_warp_per_array():
    cols, info = G.generate("vecadd", [4096])
    n_warps = 4096 // 32
    assert len(cols["cta"]) == 3 * n_warps
    for name in ("a", "b", "v"):
        rows = rows_of(cols, info, name)
        assert rows.size == n_warps
        assert all(len(lines(cols, r)) == 1 for r in rows)
    # three memory instructions per warp: load, load, store, in increasing seq
    assert list(cols["op"][:3]) == [0, 0, 1]
    assert np.all(np.diff(cols["seq"][:3]) > 0)


def test_vecadd_partial_warp_masks_tail():
    cols, info = G.generate("vecadd", [100], [64])
    # 100 elements: warps 0..2 full, warp 3 has 4 lanes; no rows for idle warps
    assert len(cols["cta"]) == 4 * 3
    last = cols["mask"][-1]
    assert last == 0xF
    assert np.all(cols["addr"][-1][4:] == 0)


def test_triad_and_matrix_sum_coalescing():
    cols, info = G.generate("triad", [2048])
    assert all(len(lines(cols, r)) == 1 for r in range(len(cols["cta"])))
    cols, info = G.generate("matrix_sum_coalesced", [64], [16])
    # a warp covers two rows of 16 columns: 2 lines of 64 bytes each
    assert all(len(lines(cols, r)) == 2 for r in range(len(cols["cta"])))
    cols, info = G.generate("matrix_sum_normal", [64], [16])
    # lanes stride N = 64 floats = 256 bytes: 16 distinct lines (lanes 16 apart share ty)
    assert all(len(lines(cols, r)) == 16 for r in range(len(cols["cta"])))


def test_matmul_naive_uncoalesced_32_lines_per_load():
    W = 64
    cols, info = G.generate("matmul_naive_uncoalesced", [W], [32])
    for name, expect in (("M", 32), ("P", 32), ("N", 1)):
        rows = rows_of(cols, info, name)
        assert rows.size > 0
        assert {len(lines(cols, r)) for r in rows} == {expect}, name
    # each warp loads M and N once per k
    assert rows_of(cols, info, "M").size == (W * W // 32) * W


def test_matmul_naive_coalesced():
    cols, info = G.generate("matmul_naive", [64], [32])
    assert {len(lines(cols, r)) for r in rows_of(cols, info, "N")} == {1}
    assert {len(set(cols["addr"][r].tolist())) for r in rows_of(cols, info, "M")} == {1}  # broadcast


def test_transpose_coalesced_reads_strided_writes():
    w, h = 128, 64
    cols, info = G.generate("transpose", [w, h])
    for r in rows_of(cols, info, "idata")[:200]:
        a = cols["addr"][r]
        assert np.all(np.diff(a.astype(np.int64)) == 4)
    for r in rows_of(cols, info, "odata")[:200]:
        a = cols["addr"][r]
        assert np.all(np.diff(a.astype(np.int64)) == 4 * h)
    assert rows_of(cols, info, "idata").size == rows_of(cols, info, "odata").size == (w * h) // 32 // 8 * 4 * 2


def test_mb_patterns():
    cols, info = G.generate("mb3_c", [8, 4])
    rows = rows_of(cols, info, "a0")
    assert rows.size == 8 * 4 * 4  # warps x iterations
    assert {len(lines(cols, r)) for r in rows} == {1}
    cols, info = G.generate("mb3_uc", [8, 4])
    assert {len(lines(cols, r)) for r in rows_of(cols, info, "a0")} == {32}
    assert {len(lines(cols, r)) for r in rows_of(cols, info, "out")} == {1}
    cols, info = G.generate("mb7_c", [8, 4])
    assert rows_of(cols, info, "a5").size == 8 * 4 * 4
    cols, info = G.generate("mb1_uc", [8, 4])
    assert set(cols["obj"].tolist()) == {info.object("out").id}


def test_reduction_tree_and_result():
    n, blocks = 4 * 512 * 8, 8
    cols, info = G.generate("reduction", [n, blocks])
    g = rows_of(cols, info, "g_idata")
    assert g.size == n // 32  # every element loaded once, one float per lane
    touched = np.sort(((cols["addr"][g] - np.uint64(info.object("g_idata").base)) // np.uint64(4)).ravel())
    assert np.array_equal(touched, np.arange(n))
    out = rows_of(cols, info, "g_odata")
    assert out.size == blocks and set(cols["mask"][out].tolist()) == {1}
    s = rows_of(cols, info, "sdata")
    assert np.all(cols["space"][s] == traces.SPACE_CODES["shared"])
    assert cols["addr"][s].max() < 1024


def test_matrixmul_tiles():
    W = 64
    cols, info = G.generate("matrixmul", [W])
    n_warps = (W // 16) ** 2 * 8
    tiles = W // 16
    for name, per in (("A", 1), ("B", 1), ("As", 5), ("Bs", 17)):
        assert rows_of(cols, info, name).size == n_warps * tiles * per, name
    assert rows_of(cols, info, "C").size == n_warps
    wide = cols["width"][rows_of(cols, info, "As")]
    assert sorted(set(wide.tolist())) == [4, 16]
    assert info.instructions.sync == n_warps * tiles * 2


def test_convolution_rows_constant_broadcast_and_halo():
    cols, info = G.generate("convolution_rows", [256, 8])
    k = rows_of(cols, info, "c_Kernel")
    assert k.size > 0 and np.all(cols["space"][k] == traces.SPACE_CODES["constant"])
    assert all(len(set(cols["addr"][r].tolist())) == 1 for r in k)
    assert len(set(cols["addr"][k, 0].tolist())) == 17  # the 17 taps
    # 256 x 8 image: 2 x 2 blocks of 2 warps; 10 d_Src loads per warp, but the left halo
    # of the x = 0 blocks and the right halo of the x = 1 blocks lie outside the image.
    assert rows_of(cols, info, "d_Src").size == 8 * 10 - 4 - 4
    assert rows_of(cols, info, "d_Dst").size == 8 * 8
    # 10 stores; the SASS loads each distinct s_Data[ty][tx + 16i + j] (i = 1..8, j = -8..8:
    # offsets 8..136, 129 of them) once and reuses it across the 8 outputs.
    assert rows_of(cols, info, "s_Data").size == 8 * (10 + 129)


def test_bad_sizes_are_input_errors():
    with pytest.raises(InputError):
        G.generate("transpose", [100, 64])
    with pytest.raises(InputError):
        G.generate("vecadd", [10, 10])
    with pytest.raises(InputError):
        G.generate("nope")


def test_bench_cli(tmp_path, capsys):
    assert main(["bench", "list"]) == 0
    out = capsys.readouterr().out
    assert "vecadd" in out and "mb7_uc" in out
    assert main(["bench", "list", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert {d["name"] for d in doc} == set(G.names())
    p = tmp_path / "t.parquet"
    assert main(["bench", "gen", "matrix_sum_normal", "--size", "64", "--block", "8", "-o", str(p)]) == 0
    assert traces.read(p).info.block == (8, 8, 1)
    assert main(["bench", "gen", "vecadd", "--size", "abc", "-o", str(p)]) == 2
    assert main(["bench", "gen", "nope", "-o", str(p)]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark kernel" in err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["matmul_naive", "--size", "64", "--block", "2048"], "matmul_naive --size 64 --block 2048: block x is 2048"),
        # 64 x 64 = 4,096 threads: each edge within CUDA's, the product not
        (["matrix_sum_normal", "--block", "64"], "matrix_sum_normal --block 64: block (64, 64, 1) has 4096 threads"),
    ],
)
def test_a_launch_cuda_refuses_names_the_arguments_not_the_output(tmp_path, run_cli, argv, words):
    """Was "OUT.parquet: block: block x is 2048, ...": the file it would have written was blamed."""
    from expect import one_line

    p = tmp_path / "t.parquet"
    one_line(*run_cli("bench", "gen", *argv, "-o", p), words)
    assert not p.exists() and list(tmp_path.iterdir()) == []


def test_a_size_past_the_machines_memory_is_refused_before_the_counting_pass(tmp_path, run_cli):
    """matmul_naive at 10^6 walked 3.1 x 10^10 warps for minutes before failing to allocate; now refused at once:
    62,500^2 blocks of 8 warps, each warp at least one 285-byte row (8 x 32 lanes' addresses and the columns)."""
    from expect import one_line

    from traces.generators import _common

    assert _common.row_bytes() == 285
    p = tmp_path / "t.parquet"
    line = one_line(*run_cli("bench", "gen", "matmul_naive", "--size", "1000000", "-o", p), "out of memory")
    assert "31,250,000,000 warps of at least one 285-byte trace row each: 8294.6 GiB" in line
    assert line.rstrip().endswith("give a smaller --size") and "--stream" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["vecadd", "--size", "65536"], ["histogram", "--size", "65536"]])
def test_rows_past_the_free_memory_are_refused_not_left_to_the_oom_killer(tmp_path, run_cli, monkeypatch, argv):
    """np.empty past the free memory succeeds and the writing pass met the OOM killer (histogram at 2 x 10^9:
    killed after 109 s at 22 GiB): with 1 MiB free, vecadd's 6,144 rows (2,048 warps, a, b and v) and histogram's
    arrays are refused before they are made."""
    from expect import one_line

    from traces.generators import _common

    monkeypatch.setattr(_common, "free_memory", lambda: 1 << 20)
    p = tmp_path / "t.parquet"
    line = one_line(*run_cli("bench", "gen", *argv, "-o", p), "out of memory", "where this machine has 0.0 GiB free")
    assert ("6,144 trace rows of 285 bytes" in line) if argv[0] == "vecadd" else ("histogram of 65,536 values" in line)
    assert list(tmp_path.iterdir()) == []
