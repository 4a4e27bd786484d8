"""Render a `placement rank --report` HTML file in headless Chromium and save a PNG screenshot.

Usage::

    python benchmarks/screenshot_report.py REPORT.html OUT.png [--width 1280] [--height PX]

Looks at the report as a person would (labels cut off, bars, legends). The screenshot is
the whole page: without ``--height`` Chromium first measures the document's height at
that width (``page_height``; the report is about 3,640 px tall at 1280, which a fixed
3,000 px window cut), then takes a window of that height (at most ``MAX_HEIGHT``).
Needs Debian's ``chromium`` (``apt-get install -y chromium``); exits 2 naming it when it
is absent. ``tests/test_report.py`` uses ``screenshot`` the same way and skips without
Chromium.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars")  # fmt: skip


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


MAX_HEIGHT = 16384
"""The tallest screenshot taken (px): a cap, since a taller window may pass the largest surface a
compositor draws (16,384 px on many GPUs); the report is a quarter of it."""
PROBE_HEIGHT = 1000
"""The window height the page is measured in (its width is the screenshot's)."""
HEIGHT_ATTRIBUTE = "data-page-height"
_MEASURE = ("<script>(function(){function m(){var d=document.documentElement,b=document.body;"
            "d.setAttribute('" + HEIGHT_ATTRIBUTE + "',Math.ceil(Math.max(d.scrollHeight,d.offsetHeight,"
            "b?b.scrollHeight:0,b?b.offsetHeight:0)))}m();addEventListener('load',m)})()</script>")  # fmt: skip


def measuring_page(text: str, folder: Path) -> str:
    """``text`` (an HTML page from ``folder``) with a script that writes the document's height into
    the root element's ``data-page-height`` once laid out (and again on load), before ``</body>``;
    a ``<base>`` keeps the page's relative links pointing into ``folder``."""
    base = f'<base href="{folder.resolve().as_uri()}/">'
    head = re.search(r"<head\b[^>]*>", text, flags=re.I)
    if head:
        text = text[: head.end()] + base + text[head.end() :]
    end = [m.start() for m in re.finditer(r"</body\s*>", text, flags=re.I)]
    return text[: end[-1]] + _MEASURE + text[end[-1] :] if end else text + _MEASURE


def parse_height(dom: str) -> int:
    """The height ``measuring_page``'s script wrote into the serialized DOM (``--dump-dom``)."""
    m = re.search(HEIGHT_ATTRIBUTE + r'="(\d+)"', dom)
    if m is None:
        raise RuntimeError("chromium did not report the page's height (--dump-dom holds no " + HEIGHT_ATTRIBUTE + ")")
    return int(m.group(1))


def page_height(html: str | os.PathLike, width: int = 1280, timeout: float = 120.0) -> int:
    """The height in CSS px of the page ``html`` laid out ``width`` px wide, measured in headless Chromium
    (a copy of the page with ``measuring_page``'s script, its DOM dumped); raises RuntimeError without it."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    src = Path(html).resolve()
    with tempfile.TemporaryDirectory(prefix="placement-chromium-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(measuring_page(src.read_text(encoding="utf-8", errors="replace"), src.parent), encoding="utf-8")
        cmd = [exe, *FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size={width},{PROBE_HEIGHT}",
               "--dump-dom", page.as_uri()]  # fmt: skip
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, errors="replace", timeout=timeout)
    return parse_height(out.stdout)


def screenshot(html: str | os.PathLike, png: str | os.PathLike, width: int = 1280, height: int | None = None,
               timeout: float = 120.0) -> Path:  # fmt: skip
    """Screenshot ``html`` (a local file) into ``png`` with a fresh profile; raises RuntimeError without Chromium.

    ``height`` None: the whole page (``page_height`` at ``width``, at most ``MAX_HEIGHT``); a number: that
    window height, the page cut there or padded below.
    """
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    if height is None:
        height = min(max(page_height(html, width, timeout), 1), MAX_HEIGHT)
    png = Path(png).resolve()
    with tempfile.TemporaryDirectory(prefix="placement-chromium-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={png}", Path(html).resolve().as_uri()]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html")
    ap.add_argument("png")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=None, help="window height in px (default: the page's own)")
    a = ap.parse_args(argv)
    if chromium() is None:
        print("screenshot_report: chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    print(screenshot(a.html, a.png, a.width, a.height))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
