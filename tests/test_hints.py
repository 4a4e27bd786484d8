"""The CUDA changes a placement asks for: the snippets' content by hand, tile origins from the trace, and nvcc."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

import pytest

import placement
import traces
from placement import hints as H
from placement.gpu import get_gpu
from placement.staging import StagingFacts
from placement.tiles import Origin, origin
from traces import generators

from conftest import ROOT, benchmark_script

MATMUL = ROOT / "configs" / "examples" / "matmul.parquet"
K80, A100 = get_gpu("k80"), get_gpu("a100")
NVCC = pytest.mark.skipif(shutil.which("nvcc") is None,
                          reason="nvcc is not installed (CUDA toolkit): the snippets are not compiled")  # fmt: skip


def _nvcc(src: str, tmp_path) -> None:
    path = tmp_path / "hints.cu"
    path.write_text(src)
    r = subprocess.run(["nvcc", "-c", "-arch=sm_80", str(path), "-o", str(tmp_path / "hints.o")], capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr + "\n" + src


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
    assert "float v_M = c_M[row * 64 + col];" in c.kernel
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
    # the kernel's value is not in the trace: the 0 that keeps the code compiling is said to be a stand-in
    # (pasted as it was, "= (float)0;   // was P[...] = ..." stored zeros and said nothing)
    assert ("= (float)0;   // was P[row * 64 + col] = ...; the value the kernel wrote, in place of (float)0"
            in s.kernel)  # fmt: skip
    text = H.text(e.hints, e.target.label, K80)
    assert text.startswith("The CUDA changes for M=C,N=R,P=S/G on k80 (sm_37)")


def test_ldg_note_on_ampere(mm):
    (r,) = placement.evaluate(mm, A100, "N=R", hints=True).hints
    assert any("sm_75..sm_90" in n and "const T* __restrict__" in n for n in r.notes)


def test_textures(mm):
    e = placement.evaluate(mm, K80, "M=2T,N=T", hints=True)
    t2, t1 = e.hints
    assert "cudaResourceTypePitch2D" in t2.host and "res_M.res.pitch2D.width = 64;" in t2.host
    assert "tex2D<float>(t_M, col, row)" in t2.kernel and "cudaCreateTextureObject(&t_M, &res_M, &td_M" in t2.host
    assert "cudaResourceTypeLinear" in t1.host and "res_N.res.linear.sizeInBytes = 4096 * sizeof(float);" in t1.host
    assert "tex1Dfetch<float>(t_N, row * 64 + col)" in t1.kernel
    # what the texture needs of the bound pointer: the device's texture alignment, and how to bind at an offset
    assert any("cudaDeviceProp::textureAlignment" in n and "add the offset, in elements, to tex1Dfetch's index" in n
               for n in t1.notes)  # fmt: skip
    assert any("texturePitchAlignment" in n and "cudaMallocArray" in n for n in t2.notes)


def test_two_textures_paste_together(mm):
    # issue 34: both host snippets declared `cudaResourceDesc res` / `cudaTextureDesc td` (and both reads `v`)
    t2, t1 = placement.evaluate(mm, K80, "M=T,N=2T", hints=True).hints
    for h, n in ((t2, "M"), (t1, "N")):
        assert f"cudaResourceDesc res_{n} = {{}};" in h.host and f"cudaTextureDesc td_{n} = {{}};" in h.host
        assert f"float v_{n} = " in h.kernel
    assert "cudaResourceDesc res " not in t1.host + t2.host and "float v " not in t1.kernel + t2.kernel


def test_staged_pair_shares_windows(mm):
    # the fastest of the window counts tried on the K80: the textbook tiling, 4 windows of 16 x 16 tiles (with
    # ;windows=1 the tiles span all of k: 16 x 64 and 64 x 16)
    e = placement.evaluate(mm, K80, "M=S,N=S/R", hints=True)
    m, n = e.hints
    assert e.target.evaluation.target.staging["windows"] == 4
    assert "__shared__ float s_M[16][16];" in m.kernel and "__shared__ float s_N[16][16];" in n.kernel
    m1, n1 = placement.evaluate(mm, K80, "M=S,N=S/R;windows=1", hints=True).hints
    assert "__shared__ float s_M[16][64];" in m1.kernel and "__shared__ float s_N[64][16];" in n1.kernel
    assert "__ldg(&N[((N_row0 + r) * 64 + N_col0 + c)])" in n.kernel
    assert all(any("share the windows" in x for x in h.notes) for h in (m, n))


def test_copy_loop_of_a_1d_block_follows_the_tile_width(mm):
    # a 1D block of 256 threads: a tile 16 wide is copied by the flattened loop, thread t taking element t of the
    # tile; one 256 wide by the 2D loop, a row of threads across each tile row (traces.staging.copy_columns)
    img = traces.ObjectInfo(3, "img", "global", 0, 1024 * 256 * 4, 4, (1024, 256), False)
    origin_ = Origin("256 * blockIdx.x", "0", 0, 4)
    narrow = H.staged(img, "S/G", {"windows": 1, "tiles": {"img": {"bytes": 256 * 16 * 4, "pitch": 16}}}, origin_,
                      "none", block=(256, 1, 1))  # fmt: skip
    assert (
        "for (int q = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); q < 4096; q += "
        in narrow.kernel
        and "const int r = q / 16, c = q % 16;" in narrow.kernel
    )
    wide = H.staged(img, "S/G", {"windows": 1, "tiles": {"img": {"bytes": 4 * 256 * 4, "pitch": 256}}}, origin_,
                    "none", block=(256, 1, 1))  # fmt: skip
    assert (
        "for (int r = threadIdx.y + blockDim.y * threadIdx.z; r < 4; r += blockDim.y * blockDim.z) for (int c = "
        "threadIdx.x; c < 256; c += blockDim.x) {"
        in wide.kernel
        and "for (int q" not in wide.kernel
    )


def _all_kinds(mm) -> list[H.Hint]:
    """One hint of every kind: the ones the trace gives, and staging forms it has not (1D, windows, atomics)."""
    out = []
    for p in ("M=C,N=R,P=S/G", "M=2T,N=T", "M=S,N=S/T;windows=1", "N=S/R;windows=1"):
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


@NVCC
def test_every_snippet_compiles_with_nvcc(mm, tmp_path):
    # each hint's own translation unit, in a namespace of its own, compiled in one nvcc run
    units = []
    for k, h in enumerate(_all_kinds(mm)):
        tu = h.translation_unit().replace("#include <cuda_runtime.h>\n", "")
        units.append(f"namespace hint_{k} {{\n{tu}\n}}  // {h.object} -> {h.after}\n")
    _nvcc("#include <cuda_runtime.h>\n\n" + "\n".join(units), tmp_path)


def _generated_hints(name: str, label: str) -> tuple:
    return placement.evaluate(generators.trace(name), K80, label, hints=True).hints


def test_a_texture_of_doubles_holds_their_halves():
    # s3d's arrays are 8-byte elements, written double: tex1Dfetch<double> / tex2D<double> do not compile (no texture
    # format has a 64-bit float; found by compiling the top 3 of every generator on the H100), so the texture holds
    # int2 texels and a helper puts each double back together
    for label, n, fetch in (("gpu_p=T", "gpu_p", "tex1Dfetch<int2>(t, i)"), ("gpu_y=2T", "gpu_y", "tex2D<int2>(t, x, y)"),
                            ("gpu_p=S/T", "gpu_p", "tex1Dfetch<int2>(t, i)")):  # fmt: skip
        (h,) = _generated_hints("s3d", label)
        assert f"const int2 h = {fetch};" in h.declarations and "return __hiloint2double(h.y, h.x);" in h.declarations
        assert f"fetch_{n}(t_{n}, " in h.kernel and "<double>" not in h.kernel + h.host + h.declarations
        assert f"res_{n}.res.linear.desc = cudaCreateChannelDesc<int2>();" in h.host or label.endswith("2T")
    (h,) = _generated_hints("s3d", "gpu_y=2T")
    assert "res_gpu_y.res.pitch2D.desc = cudaCreateChannelDesc<int2>();" in h.host


def test_a_float4_tile_is_zeroed_with_make_float4():
    # md's forces are 16-byte elements, written float4: the tile's stand-in write was (float4)0, which does not compile
    (h,) = _generated_hints("md", "d_force=S/G")
    assert "s_d_force[i - d_force_first] = make_float4(0.f, 0.f, 0.f, 0.f);" in h.kernel and "(float4)0" not in h.kernel


@NVCC
def test_doubles_and_float4_hints_compile(tmp_path):
    units = []
    for k, (name, label) in enumerate((("s3d", "gpu_p=T,gpu_t=S/T,gpu_y=2T"), ("md", "d_force=S/G"))):
        tu = H.translation_unit(_generated_hints(name, label)).replace("#include <cuda_runtime.h>\n", "")
        units.append(f"namespace placement_{k} {{  // {label}\n{tu}\n}}\n")
    _nvcc("#include <cuda_runtime.h>\n\n" + "\n".join(units), tmp_path)


def test_privatized_histogram_bins_are_counts_from_origin_0():
    # issue 34: the bins were declared float and their origin was left "by hand"; every block's tile is all 256
    # bins (the block's data reach any bin), so it starts at 0 in every block
    (h,) = placement.evaluate(generators.trace("histogram"), K80, "bins=S/G", hints=True).hints
    assert h.kernel_params == "unsigned int* bins"
    assert "__shared__ unsigned int s_bins[256];" in h.kernel and "written by atomics only" in h.kernel
    assert (
        "const int bins_first = 0;\n" in h.kernel
        and "atomicAdd(&s_bins[i - bins_first], (unsigned int)1);" in h.kernel
        and "float" not in h.kernel
    )
    assert h.incomplete == "" and not any("by hand" in n or "blocks x windows" in n for n in h.notes)


def test_multichannel_windows_get_an_origin_table():
    # issue 33 item 4: conv2d_channels at 256 x 256 on k80 stages `in` (3 channels of 258 x 258, stacked: 774 rows)
    # in 32 windows, one access each (K = 27: channel c, mask row dy, column dx, window j = 9 c + 3 dy + dx): the
    # block's tile starts at row 16 by + 258 c + dy, column 16 bx + dx; the last 5 windows are empty
    t = generators.trace("conv2d_channels", (256, 256))
    rows = [258 * c + dy for c in range(3) for dy in range(3) for _ in range(3)]
    cols = [dx for _ in range(9) for dx in range(3)]
    o = origin(StagingFacts(t), "in", 32)
    assert (o.row, o.col, o.misses, o.row_table, o.col_table, o.windows) == \
        ("16 * blockIdx.y", "16 * blockIdx.x", 0, tuple(rows), tuple(cols), 27)  # fmt: skip
    (h,) = placement.evaluate(t, K80, "in=S/G", hints=True).hints
    assert f"__constant__ int in_row_of[27] = {{{', '.join(map(str, rows))}}};" in h.declarations
    assert f"__constant__ int in_col_of[27] = {{{', '.join(map(str, cols))}}};" in h.declarations
    assert "for (int j = 0; j < 27; ++j) {" in h.kernel and "const int in_row0 = 16 * blockIdx.y + in_row_of[j];" in \
        h.kernel and "const int in_col0 = 16 * blockIdx.x + in_col_of[j];" in h.kernel  # fmt: skip
    assert h.incomplete == "" and not any("by hand" in n for n in h.notes)
    assert any("window j holds each warp's access j of in" in n for n in h.notes)


# The bundled examples and the generated kernels issue 34 tried: the top 3 on k80 each pasted as is into one kernel
TOP3 = [("conv1d", None), ("matmul", None), ("vecadd", None), ("histogram", None), ("conv2d_kt", None),
        ("conv2d_channels", None), ("conv2d_channels", (256, 256))]  # fmt: skip


@NVCC
@pytest.mark.parametrize("name, size", TOP3)
def test_top3_hints_compile(name, size, tmp_path):
    example = ROOT / "configs" / "examples" / f"{name}.parquet"
    t = traces.read(example) if example.exists() else generators.trace(name, size)
    r = placement.rank(t, K80, top=3, hints=True, workers=1)
    assert r.hints_incomplete == {}
    labels = [p.label for p in r.ranking[:3] if p.label != "sample"]
    if size:  # the staged input of 32 windows (issue 33), whether or not it ranks in the top 3
        labels.append("in=S/G")
    units = []
    for k, label in enumerate(labels):
        hs = placement.evaluate(t, K80, label, hints=True).hints
        assert all(h.incomplete == "" for h in hs)
        tu = H.translation_unit(hs).replace("#include <cuda_runtime.h>\n", "")
        units.append(f"namespace placement_{k} {{  // {label}\n{tu}\n}}\n")
    _nvcc("#include <cuda_runtime.h>\n\n" + "\n".join(units), tmp_path)


def test_rank_says_which_top3_hints_cannot_be_pasted(mm, monkeypatch):
    # no origin formula (as for a gather): the staged objects of the top 3 cannot be given as is, and the ranking
    # says so
    import placement.tiles

    monkeypatch.setattr(placement.tiles, "origin", lambda facts, name, windows: Origin(None, None, 0, 0))
    # the GTX-680, whose top 3 stage M and N (the K80's top is M=C,N=T since T_round, the K40's since T_block)
    r = placement.rank(mm, get_gpu("gtx680"), top=3, hints=True, workers=1)
    staged = [p for p in r.ranking[:3] if any(s.startswith("S/") for s in p.placement.values())]
    assert staged and set(r.hints_incomplete) == {p.label for p in staged}
    # the first staged object of each names itself (M's tile 16 x 64 of its 64 x 64, N's 64 x 16)
    for p in staged:
        first = next(n for n in ("M", "N", "P") if p.placement[n].startswith("S/"))
        assert r.hints_incomplete[p.label].startswith(
            f"no formula fits the origins of {first}'s tiles: they are to be set by hand"
        )
    text = r.text()
    p = staged[0]
    assert f"#{p.rank} ({p.label}): --hints cannot give code to paste as is: {r.hints_incomplete[p.label]}" in text
    assert r.to_dict()["hints"]["incomplete"] == r.hints_incomplete
    assert "cannot give code" not in replace(r, hints=None).text()


def test_rank_names_the_best_placement_with_code_to_paste(mm, monkeypatch):
    # no origin formula: every staged placement is incomplete, so where #1 stages, the ranking names the first
    # placement below it that stages nothing (C, T, R and G need no origin), and that one's hints are whole
    import placement.tiles

    monkeypatch.setattr(placement.tiles, "origin", lambda facts, name, windows: Origin(None, None, 0, 0))
    gtx680 = get_gpu("gtx680")
    # the hints' own loops only: with their ;unrolled twins the staged placements fill the top 10
    r = placement.rank(mm, gtx680, top=10, hints=True, workers=1, unrolled=False)

    def stages(p):
        return any(s.startswith("S/") for s in p.placement.values())

    assert stages(r.best) and r.best.label in r.hints_incomplete
    labels = [p.label for p in r.ranking]
    end = labels.index("sample") if "sample" in labels else len(labels)  # faster than the sample only
    first = next(p for p in r.ranking[1:end] if not stages(p))
    assert r.hints_pasteable == first.label and first.rank > 1
    assert all(stages(p) for p in r.ranking[: first.rank - 1])
    assert all(h.incomplete == "" for h in placement.evaluate(mm, gtx680, first.label, hints=True).hints)
    assert f"#{first.rank} ({first.label}, {first.speedup:.2f}x) is the best ranked placement with code" in r.text()
    assert r.to_dict()["hints"]["pasteable"] == first.label
    # ranked no further than #1: nothing to name, and the text says to look further
    r1 = placement.rank(mm, gtx680, top=1, hints=True, workers=1)
    assert r1.hints_pasteable is None
    assert "No placement of the 1 ranked here has code to paste as is; a larger --top looks further." in r1.text()


def test_rank_names_no_other_placement_where_the_best_can_be_pasted(mm):
    r = placement.rank(mm, K80, top=5, hints=True, workers=1)
    assert r.best.label not in r.hints_incomplete and r.hints_pasteable is None
    assert "code to paste as is" not in r.text()


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


def test_shared_to_global_allocates_a_slice_per_block_of_the_launch(mm):
    """A shared array moved to global memory takes one slice per block of the launch: the grid's, or the measured
    launch's where the trace stands for a larger one (``extra.launch_ctas``)."""
    sdata = traces.ObjectInfo(9, "sdata", "shared", 0, 1024, 4, None, True)
    assert mm.info.ctas == 16  # 64 x 64 in 16 x 16 blocks
    h = H.out_of_shared(sdata, mm.info)
    assert "(size_t)16 * 256 * sizeof(float)" in h.host and "// 16 blocks" in h.host
    big = replace(mm.info, extra={**mm.info.extra, "launch_ctas": 4096})
    assert "(size_t)4096 * 256 * sizeof(float)" in H.out_of_shared(sdata, big).host


def test_unrolled_copy_by_hand(mm):
    # ;unrolled prices a copy of compile-time steps with no branch inside (placement.staging, "Rounds of the copy"):
    # the traced block's 16 x 16 threads as its steps, the index clamped to M's 64 x 64 instead of checked
    (h,) = [h for h in placement.evaluate(mm, A100, "M=S/G,N=S/G;windows=1;unrolled", hints=True).hints
            if h.object == "M"]  # fmt: skip
    assert "__shared__ float s_M[16][64];" in h.kernel
    assert (
        "#pragma unroll\n    for (int r = threadIdx.y + 16 * threadIdx.z; r < 16; r += 16)\n"
        "        #pragma unroll\n        for (int c = threadIdx.x; c < 64; c += 16) {\n"
        "        s_M[r][c] = M[(min(M_row0 + r, 63) * 64 + min(M_col0 + c, 63))];"
    ) in h.kernel
    assert "if (" not in h.kernel and "blockDim" not in h.kernel
    assert any("launch with it" in n and "16 x 16 x 1" in n for n in h.notes)
    # the same placement without ;unrolled keeps the loop of run-time steps and its bounds check
    (g,) = [h for h in placement.evaluate(mm, A100, "M=S/G,N=S/G;windows=1", hints=True).hints if h.object == "M"]
    assert "if (M_row0 + r < 64 && M_col0 + c < 64) s_M[r][c] = M[((M_row0 + r) * 64 + M_col0 + c)];" in g.kernel


def _ldg_runs(sass: list[str]) -> list[int]:
    """Lengths of the runs of global loads among a kernel's global loads and shared stores, in program order."""
    ops = [op for line in sass for op in ("LDG", "STS") if line.split()[0 if not line.startswith("@") else 1]
           .startswith(op)]  # fmt: skip
    runs, n = [], 0
    for op in ops + ["STS"]:
        if op == "LDG":
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs


def test_unrolled_copy_keeps_several_loads_in_flight_in_nvccs_sass(mm, tmp_path):
    # what ;unrolled prices (unrolled by 4, the remainder first: placement.staging.Costs.copy_unroll) against what
    # the checked loop of run-time steps is (one load, then its store), read off nvcc's sm_86 SASS of each hint:
    # M's 16 x 64 tile in 16 x 16 blocks is 4 copies a thread
    mod = benchmark_script("addressing_modes")
    nvcc, cuobjdump = mod.tool("nvcc"), mod.tool("cuobjdump")
    if not nvcc or not cuobjdump:
        pytest.skip("nvcc and cuobjdump are not both installed (CUDA toolkit; pip install nvidia-cuda-cuobjdump)")
    runs = {}
    for label in ("M=S/G;windows=1;unrolled", "M=S/G;windows=1"):
        hs = placement.evaluate(mm, A100, label, hints=True).hints
        stem = "unrolled" if "unrolled" in label else "rolled"
        src = H.translation_unit(hs).replace("(const float* M)", "(const float* M, float* out)")
        src = src.replace("// was M[row * 64 + col]", "// was M[row * 64 + col]\n out[row * 64 + col] = v_M;")
        cubin = mod.compile_cubin(src, "sm_86", tmp_path, stem, nvcc)  # v_M stored, so that nvcc keeps the copy
        (sass,) = mod.disassemble(cubin, cuobjdump).values()
        runs[stem] = _ldg_runs([s.split("*/", 1)[-1].strip() for s in sass])
    assert max(runs["rolled"]) == 1, runs
    assert max(runs["unrolled"]) == 4, runs
