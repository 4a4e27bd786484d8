"""Where the bundled configuration files live.

In an installed wheel the repository's ``configs/`` folder travels as
``placement/_configs``; in a source checkout (and an editable install) it is the
``configs/`` folder beside the packages. ``PLACEMENT_CONFIGS`` overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def config_dir() -> Path:
    env = os.environ.get("PLACEMENT_CONFIGS")
    if env:
        return Path(env)
    packaged = _HERE / "_configs"
    if packaged.is_dir():
        return packaged
    return _HERE.parent / "configs"
