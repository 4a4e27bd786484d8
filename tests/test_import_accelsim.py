"""`placement import accelsim` through main(): the vectorAdd sample, the format variants, the errors."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest

import traces

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
VECTORADD = DATA / "traces" / "accelsim-vectoradd"


@pytest.fixture
def vectoradd():
    if not (VECTORADD / "kernel-1.traceg").is_file():
        pytest.skip(f"the Accel-Sim sample {VECTORADD} is absent (a fresh clone has no ../shared)")
    return VECTORADD


def header(version=5, grid=(2, 1, 1), block=(64, 1, 1), lineinfo=None, extra=""):
    h = [
        "-kernel name = _Z4testPfS_",
        "-kernel id = 1",
        f"-grid dim = ({grid[0]},{grid[1]},{grid[2]})",
        f"-block dim = ({block[0]},{block[1]},{block[2]})",
        "-shmem = 1024",
        "-nregs = 16",
        "-binary version = 80",
        "-cuda stream id = 0",
        "-shmem base_addr = 0x00007f0000000000",
        "-local mem base_addr = 0x00007f0002000000",
        "-nvbit version = 1.7",
        f"-accelsim tracer version = {version}",
    ]
    if lineinfo is not None:
        h.append(f"-enable lineinfo = {lineinfo}")
    return "\n".join(h) + "\n" + extra + "\n#traces format = PC mask ...\n\n"


def tail(version):
    return {3: "", 4: "", 5: " 0", 6: " 0 0 NoVal"}[version]


def block(x, warps):
    """warps: list of lists of instruction lines (without the trailing fields)."""
    out = ["#BEGIN_TB", "", f"thread block = {x},0,0", ""]
    for j, lines in enumerate(warps):
        out += [f"warp = {j}", f"insts = {len(lines)}"] + lines + [""]
    out.append("#END_TB")
    return "\n".join(out) + "\n"


def write(tmp_path, text, name="kernel-1.traceg"):
    p = tmp_path / name
    p.write_text(text)
    return p


def imported(run_cli, tmp_path, src, *extra):
    out = tmp_path / "t.parquet"
    code, stdout, err = run_cli("import", "accelsim", src, "-o", out, *extra)
    assert code == 0, err
    return traces.read(out)


# ---- the real sample -------------------------------------------------------------------------------


def test_vectoradd_sample_numbers(run_cli, vectoradd, tmp_path):
    out = tmp_path / "va.parquet"
    code, stdout, err = run_cli("import", "accelsim", vectoradd, "-o", out)
    assert code == 0, err
    assert "4,689 warp-level memory instructions, 3 objects" in stdout
    code, stdout, err = run_cli("info", out, "--json")
    assert code == 0, err
    d = json.loads(stdout)
    assert d["rows"] == 4689
    assert d["rows_per_op"] == {"load": 3126, "store": 1563}
    assert d["instructions"]["executed"] == 26601
    assert d["instructions"]["warps"] == 1568
    assert d["grid"] == [196, 1, 1] and d["block"] == [256, 1, 1] and d["regs_per_thread"] == 12
    objs = d["objects"]
    assert len(objs) == 3
    assert [o["size"] for o in objs] == [200000, 200000, 200000]
    # Two from the MemcpyHtoD lines of kernelslist.g, the output inferred from the stores.
    assert [o["base"] for o in objs[:2]] == [0x7FB0FC400000, 0x7FB0FC430E00]
    assert [o["written"] for o in objs] == [False, False, True]
    assert objs[2]["base"] == 0x7FB0FC461C00 and objs[2]["ops"] == {"store": 1563}
    assert all(o["bytes_touched"] == 200000 for o in objs)
    src = d["source"]
    assert src["format"] == "accelsim" and src["tracer_version"] == 5 and src["estimated"] == []
    assert "MemcpyHtoD" in src["objects"][objs[0]["name"]] and "inferred" in src["objects"][objs[2]["name"]]
    ins = d["instructions"]
    assert sum(ins[k] for k in ("int", "fp32", "fp64", "sfu", "ldst", "sync", "branch")) == 26601
    # ILP/MLP (GPUPerf Sec. 5.3): the two loads of a warp are in flight together for the
    # first one (local MLP 2) and alone for the second (1): the block's MLP is 1.5.
    assert d["extra"]["mlp"] == pytest.approx(1.5)
    assert 1.0 < d["extra"]["ilp"] < 4.0
    # text output shows them too
    code, text, _ = run_cli("info", out)
    assert code == 0 and "4,689" in text and "htod0" in text and "global0" in text


def test_vectoradd_file_xz_and_seq(run_cli, vectoradd, tmp_path):
    # The same kernel, xz-compressed, next to its kernelslist.g.
    d = tmp_path / "xz"
    d.mkdir()
    shutil.copy(vectoradd / "kernelslist.g", d / "kernelslist.g")
    with lzma.open(d / "kernel-1.traceg.xz", "wb", preset=1) as f:
        f.write((vectoradd / "kernel-1.traceg").read_bytes())
    t = imported(run_cli, tmp_path, d / "kernel-1.traceg.xz")
    assert len(t) == 4689 and len(t.info.objects) == 3
    # seq counts every instruction of the warp: the loads are the 11th and 12th, the store the 16th.
    first = (t.cta == 0) & (t.warp == 0)
    assert t.seq[first].tolist() == [10, 11, 15]
    assert t.pc[first].tolist() == [0xA0, 0xB0, 0xF0]


# ---- format variants on small synthetic traces -----------------------------------------------------


@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_versions_and_address_modes(run_cli, tmp_path, version):
    t = tail(version)
    w0 = [
        f"0000 ffffffff 1 R1 MOV 0 0{t}",
        f"0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x10000 4{t}",  # mode 1: base + stride
        f"0020 0000000f 1 R3 LDG.E.64 1 R4 8 0 0x20000 0x20008 0x20010 0x20100{t}",  # mode 0: list
        f"0030 00000f00 0 STG.E.U8 2 R4 R3 1 2 0x30000 1 1 -2{t}",  # mode 2: base + deltas
        f"0040 ffffffff 0 EXIT 0 0{t}",
    ]
    text = (
        header(version)
        + block(0, [w0, [f"0000 ffffffff 0 EXIT 0 0{t}"]])
        + block(1, [[f"0000 ffffffff 0 EXIT 0 0{t}"]])
    )
    tr = imported(run_cli, tmp_path, write(tmp_path, text))
    assert len(tr) == 3
    assert tr.seq.tolist() == [1, 2, 3] and tr.pc.tolist() == [0x10, 0x20, 0x30]
    assert tr.width.tolist() == [4, 8, 1] and tr.op.tolist() == [0, 0, 1]
    assert tr.addr[0].tolist() == [0x10000 + 4 * i for i in range(32)]
    assert tr.addr[1, :4].tolist() == [0x20000, 0x20008, 0x20010, 0x20100] and not tr.addr[1, 4:].any()
    assert tr.addr[2, 8:12].tolist() == [0x30000, 0x30001, 0x30002, 0x30000] and tr.mask[2] == 0xF00
    assert tr.info.instructions.executed == 7 and tr.info.instructions.warps == 3
    assert tr.info.source["tracer_version"] == version


def test_lineinfo_generic_shared_local_ldgsts_and_multiple_dests(run_cli, tmp_path):
    sh, lo = 0x7F0000000000, 0x7F0002000000
    w0 = [
        f"12 0000 ffffffff 1 R1 LD.E 1 R4 4 1 {sh + 0x40:#x} 4 0 0 NoVal",  # generic into the shared window
        f"12 0010 ffffffff 1 R2 LD.E 1 R4 4 1 {lo + 0x100:#x} 4 0 0 NoVal",  # generic into the local window
        "13 0020 ffffffff 1 R3 STL 2 R1 R2 4 1 0xfffc00 4 0 0 NoVal",  # local offset as given
        f"14 0030 0000ffff 0 LDGSTS.E.BYPASS.128 2 R6 R8 16 1 {sh + 0x200:#x} 16 0 0 NoVal",  # shared half
        "14 0030 0000ffff 0 LDGSTS.E.BYPASS.128 2 R6 R8 16 1 0x7f1000000000 16 0 0 NoVal",  # global half
        "15 0040 ffffffff 2 R30 R31 LDSM.16.M88.4 1 R10 16 1 0x100 16 0 0 NoVal",
        "16 0050 ffffffff 0 EXIT 0 0 0 0 NoVal",
    ]
    text = header(6, grid=(1, 1, 1), block=(32, 1, 1), lineinfo=1) + block(0, [w0]).replace(
        "thread block = 0,0,0\n", "thread block = 0,0,0\ncluster id = 0,0,0\ncluster cta = 0,0,0\ncluster rank = 0\n"
    )
    tr = imported(run_cli, tmp_path, write(tmp_path, text))
    names = traces.SPACE_NAMES
    assert [names[s] for s in tr.space] == ["shared", "local", "local", "shared", "global", "shared"]
    assert [traces.OP_NAMES[o] for o in tr.op] == ["load", "load", "store", "store", "load", "load"]
    assert tr.addr[0, 0] == 0x40 and tr.addr[1, 0] == 0x100 and tr.addr[2, 0] == 0xFFFC00 and tr.addr[3, 0] == 0x200
    assert tr.width.tolist() == [4, 4, 4, 16, 16, 16]
    src = tr.info.source
    assert (
        src["ldgsts_shared_halves"] == 1 and src["ldgsts_global_halves"] == 1 and src["ldgsts_shared_half_missing"] == 0
    )
    assert tr.info.instructions.executed == 6  # the LDGSTS pair is one instruction
    spaces = {o.name: o.space for o in tr.info.objects}
    assert sorted(spaces.values()) == ["global", "local", "shared", "shared"] or "local" in spaces.values()
    assert all(o.space in ("global", "local", "shared") for o in tr.info.objects)


def test_the_pseudo_spaces_are_no_trace_space():
    # GENERIC (LD/ST/ATOM/RED, resolved by address) and LDGSTS stand for spaces the importers resolve; GENERIC
    # was 6, the read-only space's code, so a read-only opcode would have been taken for a generic one
    from traces.importers.opcodes import GENERIC, LDGSTS, classify

    assert {GENERIC, LDGSTS}.isdisjoint(traces.SPACE_CODES.values())
    assert (classify("LD.E.64").space, classify("LDGSTS.E.BYPASS.128").space) == (GENERIC, LDGSTS)


def test_ilp_mlp_from_def_use_chains(run_cli, tmp_path):
    t = tail(5)
    w = [
        f"0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0x10000 4{t}",  # load 1 -> R2
        f"0010 ffffffff 1 R3 LDG.E 1 R10 4 1 0x20000 4{t}",  # load 2 -> R3 (independent: same group)
        f"0020 ffffffff 1 R4 LDG.E 1 R10 4 1 0x30000 4{t}",  # load 3 -> R4
        f"0030 ffffffff 1 R5 FADD 2 R2 R3{t} ".replace(f"{t} ", f" 0{t}"),  # uses loads 1 and 2: new group
        f"0040 ffffffff 1 R6 FADD 2 R5 R4 0{t}",  # uses R5 (same group as its def): new group; uses load 3
        f"0050 ffffffff 0 EXIT 0 0{t}",
    ]
    text = header(5, grid=(1, 1, 1), block=(32, 1, 1)) + block(0, [w])
    tr = imported(run_cli, tmp_path, write(tmp_path, text))
    # groups: {ld, ld, ld}, {fadd}, {fadd, exit} -> ILP 6/3; local MLPs: 3, 2, 1 -> 2.
    assert tr.info.extra["ilp"] == pytest.approx(2.0)
    assert tr.info.extra["mlp"] == pytest.approx(2.0)


def test_objects_toml_wins(run_cli, vectoradd, tmp_path):
    toml = tmp_path / "o.toml"
    toml.write_text('[[object]]\nname = "C"\nbase = 0x7fb0fc461c00\nsize = 200000\n\n'
                    '[[object]]\nname = "A"\nbase = 0x7fb0fc400000\nsize = 200000\nelem_bytes = 4\nshape = [250, 200]\n')  # fmt: skip
    tr = imported(run_cli, tmp_path, vectoradd, "--objects", toml)
    assert [o.name for o in tr.info.objects] == ["C", "A", "htod0"]
    assert tr.info.objects[1].shape == (250, 200)
    assert tr.info.objects[2].base == 0x7FB0FC430E00
    assert (tr.obj >= 0).all()


def test_kernelslist_with_two_kernels_needs_kernel(run_cli, tmp_path):
    t = tail(5)
    text = header(5, grid=(1, 1, 1), block=(32, 1, 1)) + block(
        0, [[f"0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0x10000 4{t}"]]
    )
    write(tmp_path, text, "kernel-1.traceg")
    write(tmp_path, text.replace("0x10000", "0x90000"), "kernel-2.traceg")
    (tmp_path / "kernelslist.g").write_text("MemcpyHtoD,0x0000000000010000,128\nkernel-1.traceg\nkernel-2.traceg\n")
    code, _, err = run_cli("import", "accelsim", tmp_path, "-o", tmp_path / "t.parquet")
    assert code == 2 and "--kernel" in err and "kernelslist.g" in err
    tr = imported(run_cli, tmp_path, tmp_path, "--kernel", "2")
    assert tr.addr[0, 0] == 0x90000 and tr.info.source["memcpy_untouched"] == 1


# ---- errors: exit 2 naming the file and line; --skip-bad-lines counts and skips ----------------------


def _three_warps(t):
    return [
        [f"0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0x10000 4{t}", f"0010 ffffffff 0 EXIT 0 0{t}"],
        [f"0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0x10080 4{t}", f"0010 ffffffff 0 EXIT 0 0{t}"],
    ]


def test_error_truncated_file(run_cli, tmp_path):
    text = header(5) + block(0, _three_warps(" 0")) + block(1, _three_warps(" 0"))
    lines = text.splitlines(keepends=True)
    cut = "".join(lines[:-4])  # ends inside block 1, warp 1
    p = write(tmp_path, cut)
    code, out, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and out == ""
    assert str(p) in err and f"line {len(lines) - 4}" in err and "truncated" in err
    assert not (tmp_path / "t.parquet").exists()
    # cut in the middle of a line: that line is garbage
    p2 = write(tmp_path, "".join(lines[:-6]) + lines[-6][:25], "kernel-2.traceg")
    code, _, err = run_cli("import", "accelsim", p2, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"line {len(lines) - 5}" in err
    # --skip-bad-lines keeps what is complete
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet", "--skip-bad-lines")
    assert code == 0, err
    tr = traces.read(tmp_path / "t.parquet")
    assert len(tr) == 3 and tr.info.source["truncated_warps"] == 1


def test_error_truncated_xz(run_cli, tmp_path):
    text = (header(5) + block(0, _three_warps(" 0")) + block(1, _three_warps(" 0"))).encode()
    data = lzma.compress(text)
    p = tmp_path / "kernel-1.traceg.xz"
    p.write_bytes(data[: len(data) // 2])
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and str(p) in err and "line" in err


def test_error_unknown_tracer_version(run_cli, tmp_path):
    p = write(tmp_path, header(7) + block(0, _three_warps(" 0")))
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"{p} line 12:" in err and "version '7'" in err and "3 to 6" in err


def test_error_garbage_line_and_skip(run_cli, tmp_path):
    text = header(5) + block(0, _three_warps(" 0")) + block(1, _three_warps(" 0"))
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("0000") and "0x10080" in ln)
    lines[k] = "0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0xZZZ 4 0"
    p = write(tmp_path, "\n".join(lines) + "\n")
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"{p} line {k + 1}:" in err and "hex address" in err
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet", "--skip-bad-lines")
    assert code == 0
    tr = traces.read(tmp_path / "t.parquet")
    assert len(tr) == 3 and tr.info.source["skipped_lines"] == 1
    # a wrong number of trailing fields for the version is garbage too
    lines[k] = "0000 ffffffff 1 R2 LDG.E 1 R10 4 1 0x10080 4 0 7"
    p = write(tmp_path, "\n".join(lines) + "\n")
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"line {k + 1}:" in err and "version 5" in err


def test_error_file_mixing_launches(run_cli, tmp_path):
    one = block(0, _three_warps(" 0"))
    # a second kernel's header and blocks appended
    text = header(5) + one + header(5) + one
    p = write(tmp_path, text)
    n = (header(5) + one).count("\n") + 1
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"{p} line {n}:" in err and "mixes launches" in err
    # the same block twice (two launches' blocks concatenated)
    text = header(5) + one + one
    p = write(tmp_path, text)
    m = (header(5) + one).count("\n") + 3
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"line {m}:" in err and "mixes launches" in err
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet", "--skip-bad-lines")
    assert code == 0
    tr = traces.read(tmp_path / "t.parquet")
    assert len(tr) == 2 and tr.info.source["mixed_launch_lines_skipped"] == 1


def test_missing_file_and_bad_toml(run_cli, tmp_path):
    code, _, err = run_cli("import", "accelsim", tmp_path / "nope.traceg", "-o", tmp_path / "t.parquet")
    assert code == 2 and "nope.traceg" in err
    toml = tmp_path / "o.toml"
    toml.write_text('[[object]]\nname = "A"\nbase = 1\nsize = 0\n')
    p = write(tmp_path, header(5) + block(0, _three_warps(" 0")))
    code, _, err = run_cli("import", "accelsim", p, "-o", tmp_path / "t.parquet", "--objects", toml)
    assert code == 2 and "o.toml" in err and "size" in err
