"""The README's Python API example runs as written, and what its comments say it prints is what it prints."""

from __future__ import annotations

import contextlib
import io
import os
import re

from conftest import ROOT


def _api_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API") :]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_readme_api_example(monkeypatch):
    code = _api_block()
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    ns: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md (Python API)", "exec"), ns)  # noqa: S102 - our own README
    r, e = ns["r"], ns["e"]
    assert ns["best"] is r.ranking[0] and ns["doc"] == r.to_dict() and len(ns["df"]) == len(r.ranking) + 1
    assert e.hints and {h.after for h in e.hints} == {"C", "R", "S/G"}
    printed = out.getvalue().splitlines()
    # doctest-like: a print(...) whose comment shows its output ("# -> text") prints a line starting with it
    for line in code.splitlines():
        m = re.match(r"print\(.*\)\s+#\s*->\s*(.*?)(\.\.\.)?$", line)
        if m:
            expected = m.group(1).rstrip(", ")
            assert any(p.startswith(expected) for p in printed), (line, printed[:40])
    assert os.path.exists(ROOT / "configs" / "examples" / "conv1d.parquet")
