"""benchmarks/screenshot_report.py takes the whole page (issue 34: a fixed 3,000 px window cut the
3,640 px report): it measures the document's height first. Checked without Chromium, against a
stand-in executable that answers --dump-dom as Chromium does and records the screenshot's window."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import screenshot_report as S  # noqa: E402

FAKE = r'''#!{python}
"""A stand-in for chromium: --dump-dom runs nothing but answers with the height the page's script
would write (the page's own `data-fake-height`); --screenshot writes a file; every call is logged."""
import json, re, sys
from urllib.parse import unquote, urlparse
args = sys.argv[1:]
with open({log!r}, "a") as fh:
    fh.write(json.dumps(args) + "\n")
page = unquote(urlparse(args[-1]).path)
text = open(page, encoding="utf-8").read()
if "--dump-dom" in args:
    assert "data-page-height" in text and "<script>" in text, "no measuring script"
    h = re.search(r'data-fake-height="(\d+)"', text).group(1)
    print(text.replace("<html", f'<html data-page-height="{{h}}"', 1))
else:
    out = [a for a in args if a.startswith("--screenshot=")][0].split("=", 1)[1]
    open(out, "wb").write(b"png")
'''


@pytest.fixture
def fake_chromium(tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    exe = tmp_path / "chromium"
    exe.write_text(FAKE.format(python=sys.executable, log=str(log)))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(S, "chromium", lambda: str(exe))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()]


def _page(tmp_path: Path, height: int) -> Path:
    p = tmp_path / "report.html"
    p.write_text(f'<!doctype html>\n<html lang="en" data-fake-height="{height}"><head><meta charset="utf-8">'
                 "<title>r</title></head><body><p>report</p></body></html>\n", encoding="utf-8")  # fmt: skip
    return p


def _window(args: list[str]) -> str:
    return next(a for a in args if a.startswith("--window-size=")).split("=", 1)[1]


def test_the_screenshot_is_as_tall_as_the_page(tmp_path, fake_chromium):
    page = _page(tmp_path, 3640)
    png = S.screenshot(page, tmp_path / "r.png", width=1280)
    measure, shot = fake_chromium()
    assert "--dump-dom" in measure and _window(measure) == f"1280,{S.PROBE_HEIGHT}"
    assert _window(shot) == "1280,3640" and f"--screenshot={png}" in shot
    assert shot[-1] == page.resolve().as_uri()  # the page itself, not the measuring copy
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl", "chromium", "r.png", "report.html"]


def test_a_given_height_and_the_cap(tmp_path, fake_chromium):
    S.screenshot(_page(tmp_path, 3640), tmp_path / "r.png", width=800, height=2600)
    (shot,) = fake_chromium()  # no measurement
    assert _window(shot) == "800,2600"
    S.screenshot(_page(tmp_path, 10 * S.MAX_HEIGHT), tmp_path / "r.png")
    assert _window(fake_chromium()[-1]) == f"1280,{S.MAX_HEIGHT}"


def test_the_measuring_page():
    text = '<!doctype html>\n<html><head><meta charset="utf-8"></head><body><p>x</p></body></html>'
    out = S.measuring_page(text, Path("/some/folder"))
    assert out.startswith('<!doctype html>\n<html><head><base href="file:///some/folder/">')  # standards mode kept
    assert out.endswith(S._MEASURE + "</body></html>")
    assert S.measuring_page("<p>x</p>", Path("/f")) == "<p>x</p>" + S._MEASURE  # no head, no body: appended
    assert S.parse_height('<html lang="en" data-page-height="3640"><head>') == 3640
    with pytest.raises(RuntimeError, match="did not report the page's height"):
        S.parse_height("<html><head>")
