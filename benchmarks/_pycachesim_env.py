"""pycachesim in a virtual environment of its own (its import name ``cachesim`` clashes with ours).

``python()`` creates the environment on first use (``PYCACHESIM_VENV`` or a folder in the
system's temporary directory) with ``pip install pycachesim numpy`` and returns its
interpreter; ``run(code, *args)`` runs a script there and returns its standard output.
Data goes between the two environments through ``.npy`` files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

PYCACHESIM = "pycachesim==0.3.1"
VENV = Path(os.environ.get("PYCACHESIM_VENV", Path(tempfile.gettempdir()) / "gpu-placement-pycachesim-venv"))


def python() -> Path:
    exe = VENV / "bin" / "python"
    probe = [str(exe), "-I", "-c", "import cachesim, numpy; cachesim.CacheSimulator"]
    if exe.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return exe
    print(f"creating a virtual environment for {PYCACHESIM} in {VENV} ...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    subprocess.run([str(exe), "-m", "pip", "install", "-q", PYCACHESIM, "numpy"], check=True)
    subprocess.run(probe, check=True)
    return exe


def run(code: str, *args: str) -> str:
    # -I: isolated, so the working directory (maybe this repository, with our cachesim) is not on the path
    done = subprocess.run(
        [str(python()), "-I", "-c", code, *map(str, args)], capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    if done.returncode:
        raise RuntimeError(f"pycachesim script failed:\n{done.stderr}")
    return done.stdout


def scratch() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="pycachesim-")
