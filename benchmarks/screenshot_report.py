"""Render a `placement rank --report` HTML file in headless Chromium and save a PNG screenshot.

Usage::

    python benchmarks/screenshot_report.py REPORT.html OUT.png [--width 1280] [--height 3000]

Looks at the report as a person would (labels cut off, bars, legends). Needs Debian's
``chromium`` (``apt-get install -y chromium``); exits 2 naming it when it is absent.
``tests/test_report.py`` uses ``screenshot`` the same way and skips without Chromium.
"""

from __future__ import annotations

import argparse
import os
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


def screenshot(html: str | os.PathLike, png: str | os.PathLike, width: int = 1280, height: int = 3000,
               timeout: float = 120.0) -> Path:  # fmt: skip
    """Screenshot ``html`` (a local file) into ``png`` with a fresh profile; raises RuntimeError without Chromium."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
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
    ap.add_argument("--height", type=int, default=3000)
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
