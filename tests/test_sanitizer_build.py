"""The injection library of `placement trace` compiles with nvcc against the Compute Sanitizer API headers
(skipped where they are absent); the cache is keyed by the sources and the CUDA version and reused."""

from __future__ import annotations

import pytest

from traces.sanitizer import build


def _toolchain():
    try:
        return build.find_toolchain()
    except build.MissingTool as exc:
        pytest.skip(f"no toolchain for the trace library here: {exc}")


def test_compiles_and_is_reused(tmp_path, monkeypatch):
    tc = _toolchain()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lib, fatbin = build.build(tc)
    assert lib.parent == tmp_path / "gpu-placement" / "sanitizer" / f"{build.sources_hash()}-cuda{tc.cuda_version}"
    assert lib.stat().st_size > 0 and fatbin.stat().st_size > 0
    assert lib.read_bytes()[:4] == b"\x7fELF"
    assert b"InitializeInjection" in lib.read_bytes()  # the entry the driver calls
    stamp = (lib.stat().st_mtime_ns, fatbin.stat().st_mtime_ns)
    assert build.build(tc) == (lib, fatbin)
    assert (lib.stat().st_mtime_ns, fatbin.stat().st_mtime_ns) == stamp  # reused, not rebuilt
    assert [p.name for p in lib.parent.parent.iterdir()] == [lib.parent.name]  # no temporary folder left


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    tc = _toolchain()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(build, "ARCHS", ("1",))  # no such architecture: nvcc fails on the fatbin
    monkeypatch.setattr(build, "_archs", lambda nvcc: ["1"])
    with pytest.raises(build.MissingTool, match="building the trace library failed"):
        build.build(tc)
    assert list((tmp_path / "gpu-placement" / "sanitizer").iterdir()) == []


def test_cache_key_changes_with_the_sources(monkeypatch, tmp_path):
    before = build.sources_hash()
    for name in build.SOURCES:
        (tmp_path / name).write_bytes((build.HERE / name).read_bytes())
    (tmp_path / "patches.cu").write_bytes(b"// edited\n" + (build.HERE / "patches.cu").read_bytes())
    monkeypatch.setattr(build, "HERE", tmp_path)
    assert build.sources_hash() != before


LAYOUT_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include "trace_state.h"
int main() {
    printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu\n", sizeof(AccessRecord), offsetof(AccessRecord, cta),
           offsetof(AccessRecord, warp), offsetof(AccessRecord, pc), offsetof(AccessRecord, flags),
           offsetof(AccessRecord, space), offsetof(AccessRecord, width), offsetof(AccessRecord, mask),
           offsetof(AccessRecord, addr));
    printf("%u %u %u %d %d %d\n", F_READ, F_WRITE, F_ATOMIC, SPACE_GLOBAL, SPACE_LOCAL, SPACE_SHARED);
}
"""


def test_device_record_layout_matches_the_reader(tmp_path):
    """trace_state.h's AccessRecord and codes are what records.py reads (compiled with the host C++ compiler)."""
    import shutil
    import subprocess

    from traces.sanitizer import records as R

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler here")
    (tmp_path / "layout.cpp").write_text(LAYOUT_PROGRAM)
    subprocess.run([cxx, "-std=c++17", "-I", str(build.HERE), "-o", str(tmp_path / "layout"), str(tmp_path / "layout.cpp")],
                   check=True)  # fmt: skip
    out = subprocess.run([str(tmp_path / "layout")], check=True, capture_output=True, text=True).stdout.split("\n")
    d = R.ACCESS_DTYPE
    want = [d.itemsize] + [d.fields[f][1] for f in ("cta", "warp", "pc", "flags", "space", "width", "mask", "addr")]
    assert [int(v) for v in out[0].split()] == want
    assert [int(v) for v in out[1].split()] == [R.F_READ, R.F_WRITE, R.F_ATOMIC, 0, 1, 2]


def test_toolkit_found_through_an_nvcc_wrapper(tmp_path, monkeypatch):
    """An nvcc that is a wrapper script outside its toolkit (``exec /usr/local/cuda-13.0/bin/nvcc "$@"`` in
    /usr/local/bin): cuda.h and the toolkit's Compute Sanitizer are found where nvcc's --dryrun says it runs from."""
    kit = tmp_path / "cuda-13.0"
    (kit / "include").mkdir(parents=True)
    (kit / "include" / "cuda.h").write_text("/* */\n")
    san = kit / "compute-sanitizer"
    (san / "include").mkdir(parents=True)
    (san / "include" / "sanitizer.h").write_text("/* */\n")
    (san / "libsanitizer-public.so").write_bytes(b"\x7fELF")
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "#$ _NVVM_BRANCH_=nvvm"\necho "#$ TOP={kit}/bin/.."\n')
    wrapper.chmod(0o755)
    assert build.toolkit_roots(wrapper) == [tmp_path, kit]
    monkeypatch.setattr(build, "_pip_roots", lambda: [])  # none from pip: the toolkit's own
    assert build.find_sanitizer(wrapper) == (san / "include", san)
    # a wrapper that names no TOP: only the folder above it, where there is no toolkit
    wrapper.write_text("#!/bin/sh\nexit 1\n")
    assert build.toolkit_roots(wrapper) == [tmp_path]
