"""The HTML report: what its charts hold, self-contained, and how it looks in headless Chromium."""

from __future__ import annotations

import re
import sys

import pytest

import placement
from placement.report import _entries, render, served

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from screenshot_report import chromium, screenshot  # noqa: E402

MATMUL = ROOT / "configs" / "examples" / "matmul.parquet"


@pytest.fixture(scope="module")
def ranked():
    # the GTX-680: its best placements of this matmul stage M and N (on the K80, M=C,N=T ranks first since
    # T_round, which prices a staging copy's rounds at DRAM's latency; on the K40 too since T_block: 16 blocks on
    # 15 SMs wait for each of their 4 windows' copies)
    return placement.rank(MATMUL, "gtx680", top=5, hints=True)


def test_the_sample_is_among_the_bars(ranked):
    labels = [lab for lab, _, _ in _entries(ranked)]
    assert labels[:5] == [f"{p.rank}. {p.label}" for p in ranked.ranking] and labels[-1] == "sample"


def test_where_requests_went(ranked):
    rows = dict(served(ranked.sample, ranked.accesses))
    # the sample: M, N, P in global memory; the GTX-680 caches no global loads in L1, so the L2 sees every request
    (first, l2, dram, shared) = rows["M, N, P (global memory)"]
    c = ranked.sample.evaluation.target.caches["l2.global"]
    assert (first, l2, dram, shared) == (0, c["hits"], c["misses"], 0)
    best = dict(served(ranked.best, ranked.accesses))
    staged = [lab for lab in best if "(shared memory)" in lab]
    # a staged object's warp reads are served by shared memory: 128 warps x 64 reads of M or N
    assert staged and all(best[lab][3] == 8192 * len(lab.split(" (")[0].split(", ")) for lab in staged)


def test_report_is_self_contained_and_complete(ranked):
    html = render(ranked)
    assert html.count("<svg") == 3 and "<script" not in html and "<link" not in html
    assert "http" not in re.sub(r'xmlns(:\w+)?="[^"]*"', "", html)
    assert "72 legal placements" in html and "P not in T, 2T, C, R, S/T, S/R" in html
    assert "M not in R, S/R: gtx680 (kepler, cc 3.0) has no read-only data path" in html
    assert "placement train MEASURED.csv --gpu gtx680" in html
    assert "The code change for #1" in html and "__shared__ float" in html


def test_the_launch_is_a_column_where_the_gpu_knows_it():
    """The table's launch column is each placement's t_launch (the H100's configuration has one, the K80's none)."""
    h100 = placement.rank(MATMUL, "h100", top=3)
    html, k80 = render(h100), render(placement.rank(MATMUL, "k80", top=3))
    assert "<th>launch</th>" in html and "+ launch" in html and "+ launch" not in k80
    # the K80's configuration has no launch cost: "unknown", not 0 ns; each row says which term is its time
    assert "<td>unknown</td>" in k80 and "<td>unknown</td>" not in html and "<th>bound by</th>" in html
    bounds = {p.evaluation.target.bound for p in h100.ranking}
    label = "T = T_comp + T_mem - T_overlap + launch" if bounds == {"eq1"} else "T = the bound term (table) + launch"
    assert label in html
    s = h100.sample.evaluation.sample
    assert s.t_launch >= 3872 * 1974.7 / 1e3  # the empty kernel's 3.872 us at the H100's clock, at least
    assert f"<td>{placement.units.time_ns(s.t_launch * s.time_ns / s.cycles)}</td>" in html


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install -y chromium): no screenshot")
def test_report_in_headless_chromium(ranked, tmp_path):
    from PIL import Image

    html = render(ranked)
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    im = Image.open(screenshot(page, tmp_path / "report.png", width=1280, height=2600)).convert("L")
    px = im.load()
    # the three charts are drawn: dark pixels (bars, labels) in the upper part of the page
    assert sum(1 for x in range(0, 1280, 4) for y in range(0, 1800, 4) if px[x, y] < 128) > 2000
    # labels fully visible: the charts alone, 40 px from the page's left edge; a label cut at a chart's left
    # edge leaves dark pixels in its first column (the old hand-written SVG did, at x = 40); matplotlib's
    # tight bounding box keeps a blank pad there
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    charts = tmp_path / "charts.html"
    charts.write_text('<!doctype html><html><body style="margin:0 0 0 40px;background:#fff">'
                      + "".join(f"<div>{s}</div>" for s in svgs) + "</body></html>", encoding="utf-8")  # fmt: skip
    im = Image.open(screenshot(charts, tmp_path / "charts.png", width=1280, height=2400)).convert("L")
    px = im.load()
    dark_columns = [x for x in range(0, 120) if any(px[x, y] < 200 for y in range(0, 2400, 2))]
    assert dark_columns and min(dark_columns) >= 44
