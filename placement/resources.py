"""Where the bundled configuration files live.

In an installed wheel the repository's ``configs/`` folder travels as
``placement/_configs``; in a source checkout (and an editable install) it is the
``configs/`` folder beside the packages. ``PLACEMENT_CONFIGS`` overrides both.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


CONFIGS_ENV = "PLACEMENT_CONFIGS"
"""The environment variable that names another configuration folder."""


def config_dir() -> Path:
    env = os.environ.get(CONFIGS_ENV)
    if env:
        return Path(env)
    return _bundled_dir()


@lru_cache(maxsize=1)
def _bundled_dir() -> Path:
    """The wheel's ``_configs`` or the checkout's ``configs``: looked up once (an evaluation asks tens of times)."""
    packaged = _HERE / "_configs"
    if packaged.is_dir():
        return packaged
    return _HERE.parent / "configs"
