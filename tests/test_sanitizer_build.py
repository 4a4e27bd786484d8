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
