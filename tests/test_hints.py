"""The CUDA changes a placement asks for: the snippets' content by hand, tile origins from the trace, and nvcc."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import placement
import traces
from placement import hints as H
from placement.gpu import get_gpu
from placement.staging import StagingFacts
from placement.tiles import Origin, origin

from conftest import ROOT

MATMUL = ROOT / "configs" / "examples" / "matmul.parquet"
K80, A100 = get_gpu("k80"), get_gpu("a100")


@pytest.fixture(scope="module")
def mm():
    return traces.read(MATMUL)


@pytest.mark.parametrize("name, windows, row, col", [
    # M's tile: rows 16 by .. 16 by + 15; its 64 columns split into the windows in k order
    ("M", 1, "16 * blockIdx.y", "0"), ("M", 4, "16 * blockIdx.y", "16 * j"),
    # N's tile: columns 16 bx .. 16 bx + 15; its rows split into the windows
    ("N", 1, "0", "16 * blockIdx.x"), ("N", 2, "32 * j", "16 * blockIdx.x"),
    ("P", 1, "16 * blockIdx.y", "16 * blockIdx.x"),
])  # fmt: skip
def test_tile_origins_by_hand(mm, name, windows, row, col):
    o = origin(StagingFacts(mm), name, windows)
    assert (o.row, o.col, o.misses) == (row, col, 0)
    assert o.points == 16 * (windows if name != "P" else 1)


def test_constant_readonly_and_staged_write_back(mm):
    e = placement.evaluate(mm, K80, "M=C,N=R,P=S/G", hints=True)
    c, r, s = e.hints
    assert (c.object, c.before, c.after) == ("M", "G", "C")
    assert c.declarations == "__constant__ float c_M[4096];"  # 64 x 64 floats
    assert c.host == "cudaMemcpyToSymbol(c_M, h_M, 4096 * sizeof(float));   // before the launch"
    assert "float v = c_M[row * 64 + col];" in c.kernel
    assert any("16 KiB of the 64 KiB constant bank" in n for n in c.notes)
    assert any("several addresses of M" in n for n in c.notes)  # a warp reads 2 rows of M: divergent
    assert r.kernel_params == "const float* __restrict__ N" and "__ldg(&N[row * 64 + col])" in r.kernel
    assert not any("sm_75..sm_90" in n for n in r.notes)  # Kepler: no offset-form penalty
    assert s.kernel_params == "float* P" and "__shared__ float s_P[16][16];" in s.kernel
    assert "const int P_row0 = 16 * blockIdx.y;" in s.kernel and "const int P_col0 = 16 * blockIdx.x;" in s.kernel
    # P is only written: no copy in, a write-back after the writes
    # by the textbook 2D loop over the 16 x 16 block's own threads (the model's copy: traces.staging.copy_columns)
    loop = ("for (int r = threadIdx.y + blockDim.y * threadIdx.z; r < 16; r += blockDim.y * blockDim.z) "
            "for (int c = threadIdx.x; c < 16; c += blockDim.x) {")  # fmt: skip
    assert s.kernel.count(loop) == 1 and "for (int q" not in s.kernel
    assert "P[((P_row0 + r) * 64 + P_col0 + c)] = s_P[r][c];" in s.kernel
    text = H.text(e.hints, e.target.label, K80)
    assert text.startswith("The CUDA changes for M=C,N=R,P=S/G on k80 (sm_37)")


def test_ldg_note_on_ampere(mm):
    (r,) = placement.evaluate(mm, A100, "N=R", hints=True).hints
    assert any("sm_75..sm_90" in n and "const T* __restrict__" in n for n in r.notes)


def test_textures(mm):
    e = placement.evaluate(mm, K80, "M=2T,N=T", hints=True)
    t2, t1 = e.hints
    assert "cudaResourceTypePitch2D" in t2.host and "res.res.pitch2D.width = 64;" in t2.host
    assert "tex2D<float>(t_M, col, row)" in t2.kernel and "cudaCreateTextureObject(&t_M" in t2.host
    assert "cudaResourceTypeLinear" in t1.host and "res.res.linear.sizeInBytes = 4096 * sizeof(float);" in t1.host
    assert "tex1Dfetch<float>(t_N, row * 64 + col)" in t1.kernel


def test_staged_pair_shares_windows(mm):
    e = placement.evaluate(mm, K80, "M=S,N=S/R", hints=True)
    m, n = e.hints
    assert "__shared__ float s_M[16][64];" in m.kernel and "__shared__ float s_N[64][16];" in n.kernel
    assert "__ldg(&N[((N_row0 + r) * 64 + N_col0 + c)])" in n.kernel
    assert all(any("share the windows" in x for x in h.notes) for h in (m, n))


def test_copy_loop_of_a_1d_block_follows_the_tile_width(mm):
    # a 1D block of 256 threads: a tile 16 wide is copied by the flattened loop, thread t taking element t of the
    # tile; one 256 wide by the 2D loop, a row of threads across each tile row (traces.staging.copy_columns)
    img = traces.ObjectInfo(3, "img", "global", 0, 1024 * 256 * 4, 4, (1024, 256), False)
    origin_ = Origin("256 * blockIdx.x", "0", 0, 4)
    narrow = H.staged(img, "S/G", {"windows": 1, "tiles": {"img": {"bytes": 256 * 16 * 4, "pitch": 16}}}, origin_,
                      "none", block=(256, 1, 1))  # fmt: skip
    assert "for (int q = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); q < 4096; q += " in \
        narrow.kernel and "const int r = q / 16, c = q % 16;" in narrow.kernel
    wide = H.staged(img, "S/G", {"windows": 1, "tiles": {"img": {"bytes": 4 * 256 * 4, "pitch": 256}}}, origin_,
                    "none", block=(256, 1, 1))  # fmt: skip
    assert "for (int r = threadIdx.y + blockDim.y * threadIdx.z; r < 4; r += blockDim.y * blockDim.z) for (int c = " \
        "threadIdx.x; c < 256; c += blockDim.x) {" in wide.kernel and "for (int q" not in wide.kernel


def _all_kinds(mm) -> list[H.Hint]:
    """One hint of every kind: the ones the trace gives, and staging forms it has not (1D, windows, atomics)."""
    out = []
    for p in ("M=C,N=R,P=S/G", "M=2T,N=T", "M=S,N=S/T", "N=S/R"):
        out += placement.evaluate(mm, K80, p, hints=True).hints
    info = mm.info
    one_d = traces.ObjectInfo(7, "x", "global", 0, 4096, 4, None, False)
    hist = traces.ObjectInfo(8, "bins", "global", 0, 1024, 4, None, True)
    staging = {"windows": 4, "tiles": {"M": {"bytes": 1024, "pitch": 16}, "x": {"bytes": 1024, "pitch": 256},
                                       "bins": {"bytes": 1024, "pitch": 256}}}  # fmt: skip
    out.append(H.staged(info.object("M"), "S/G", staging, Origin("16 * blockIdx.y", "16 * j", 0, 64), "none"))
    out.append(H.staged(one_d, "S/T", staging, Origin("0", "256 * blockIdx.x + 1024 * j", 0, 64), "none"))
    out.append(H.staged(hist, "S/G", {"windows": 1, "tiles": staging["tiles"]}, None, "atomic", loads=False))
    out.append(H.staged(info.object("P"), "S/G", {"windows": 1, "tiles": {"P": {"bytes": 1024, "pitch": 16}}},
                        Origin("16 * blockIdx.y", "16 * blockIdx.x", 0, 16), "store", loads=True))  # fmt: skip
    out.append(H.plain_global(one_d, "T"))
    out.append(H.out_of_shared(traces.ObjectInfo(9, "sdata", "shared", 0, 1024, 4, None, True), info))
    out.append(H.texture1d(one_d, K80))
    return out


def test_every_kind_is_written(mm):
    kinds = {(h.after, "atomicAdd" in h.kernel, "for (int j" in h.kernel) for h in _all_kinds(mm)}
    assert {("C", False, False), ("R", False, False), ("T", False, False), ("2T", False, False),
            ("S/G", False, False), ("S/G", False, True), ("S/G", True, False), ("S/T", False, False),
            ("S/T", False, True), ("S/R", False, False), ("G", False, False)} <= kinds  # fmt: skip


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit): the snippets are not compiled")
def test_every_snippet_compiles_with_nvcc(mm, tmp_path):
    # each hint's own translation unit, in a namespace of its own, compiled in one nvcc run
    units = []
    for k, h in enumerate(_all_kinds(mm)):
        tu = h.translation_unit().replace("#include <cuda_runtime.h>\n", "")
        units.append(f"namespace hint_{k} {{\n{tu}\n}}  // {h.object} -> {h.after}\n")
    src = tmp_path / "hints.cu"
    src.write_text("#include <cuda_runtime.h>\n\n" + "\n".join(units))
    r = subprocess.run(["nvcc", "-c", "-arch=sm_80", str(src), "-o", str(tmp_path / "hints.o")], capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr + "\n" + src.read_text()


def test_hints_from_the_command_line(run_cli):
    code, out, err = run_cli("evaluate", MATMUL, "--gpu", "k80", "--place", "M=C", "--hints")
    assert code == 0, err
    assert "The CUDA changes for M=C on k80 (sm_37)" in out and "__constant__ float c_M[4096];" in out
    code, out, err = run_cli("rank", MATMUL, "--gpu", "k80", "--top", "2", "--hints", "--json", "--workers", "1")
    assert code == 0, err
    d = json.loads(out)
    assert d["hints"]["placement"] == d["ranking"][0]["label"]
    moved = [n for n, s in d["ranking"][0]["placement"].items() if d["sample"]["placement"][n] != s]
    assert [h["object"] for h in d["hints"]["objects"]] == moved
