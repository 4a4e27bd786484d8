"""The launch and block selection of ``placement trace``: ``--ctas SPEC``, ``--kernel``, ``--launch``.

``--ctas`` takes ``A-B`` (inclusive), ``N`` or a comma-separated list of both (``0,5,9-12``),
or ``waves=W``: the first W waves of blocks, a wave being as many blocks as the GPU holds at
once (SMs x resident blocks per SM at the launch's occupancy, which the injection library
asks the driver for). Block ids are linear (x + y*gx + z*gx*gy) and must lie in the grid.

``--kernel`` names the kernel: its mangled name, its demangled name, or the demangled name
without its parameter list match exactly; otherwise it is a regular expression searched in
the demangled name (the injection library uses std::regex, ECMAScript syntax, which agrees
with Python's ``re`` on the common subset: literals, classes, ``.*``, anchors, alternation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

_RANGE = re.compile(r"^(\d{1,10})(?:-(\d{1,10}))?$")
_WAVES = re.compile(r"^waves=(\d{1,6})$")
MAX_RANGES = 4096


@dataclass(frozen=True)
class CtaSpec:
    """A parsed ``--ctas``: inclusive ranges of block ids, or a number of waves."""

    text: str
    ranges: tuple[tuple[int, int], ...] = ()
    waves: int | None = None

    def env(self) -> str:
        """The form the injection library reads (``PLACEMENT_TRACE_CTAS``): ``w:W`` or ``a-b,c-d``."""
        return f"w:{self.waves}" if self.waves is not None else ",".join(f"{a}-{b}" for a, b in self.ranges)

    def resolve(self, grid_ctas: int, ctas_per_wave: int | None = None) -> np.ndarray:
        """The chosen block ids (sorted, unique) of a launch of ``grid_ctas`` blocks."""
        if self.waves is not None:
            if ctas_per_wave is None or ctas_per_wave < 1:
                raise InputError(f"--ctas {self.text}: waves need the launch's blocks per wave (SMs x blocks per SM)")
            return np.arange(min(grid_ctas, self.waves * ctas_per_wave), dtype=np.int64)
        top = max(b for _, b in self.ranges)
        if top >= grid_ctas:
            raise InputError(
                f"--ctas {self.text}: block {top} is beyond the launch's {grid_ctas} blocks (0-{grid_ctas - 1})"
            )
        return np.unique(np.concatenate([np.arange(a, b + 1, dtype=np.int64) for a, b in self.ranges]))


def parse_ctas(text: str) -> CtaSpec:
    """Parse ``--ctas`` (module docstring); a bad spec is an :class:`InputError` naming it."""
    s = text.strip().replace(" ", "")
    m = _WAVES.match(s)
    if m:
        w = int(m.group(1))
        if w < 1:
            raise InputError(f"--ctas {text!r}: waves must be at least 1")
        return CtaSpec(text, waves=w)
    items = s.split(",")
    if not s or len(items) > MAX_RANGES:
        raise InputError(
            f"--ctas {text!r}: expected block ids 'A-B', 'N', a comma-separated list of them, or 'waves=W'"
        )
    ranges = []
    for item in items:
        m = _RANGE.match(item)
        if not m:
            raise InputError(f"--ctas {text!r}: {item!r} is not a block id 'N' or a range 'A-B' (expected e.g. 0-63 or 0,5,9-12 or waves=2)")  # fmt: skip
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise InputError(f"--ctas {text!r}: range {item!r} ends before it starts")
        if b >= (1 << 31) - 1 or a >= (1 << 31) - 1:
            raise InputError(f"--ctas {text!r}: block {b} is beyond CUDA's grid")
        ranges.append((a, b))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for a, b in ranges:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return CtaSpec(text, ranges=tuple(merged))


def kernel_pattern(text: str) -> re.Pattern:
    """Check ``--kernel`` as a regular expression (an exact name is always also a valid one, escaped or not)."""
    try:
        return re.compile(text)
    except re.error as exc:
        try:
            return re.compile(re.escape(text))
        except re.error:  # pragma: no cover
            raise InputError(f"--kernel {text!r}: not a name or a regular expression ({exc})") from None


def kernel_matches(text: str | None, mangled: str, demangled: str) -> bool:
    """Whether ``--kernel text`` picks a kernel (module docstring); no ``--kernel`` picks every kernel."""
    if text is None:
        return True
    base = demangled.split("(", 1)[0]
    if text in (mangled, demangled, base) or base.rsplit("::", 1)[-1] == text:
        return True
    try:
        return re.search(text, demangled) is not None
    except re.error:
        return False


def select_launch(launches: list[tuple[str, str]], kernel: str | None, launch: int | None) -> int:
    """The index of the chosen launch among (mangled, demangled) names in launch order: the ``launch``-th
    (0-based) launch of the kernels ``kernel`` picks, the first by default; without ``--kernel`` the
    program must launch only one kernel (by name)."""
    picked = [i for i, (m, d) in enumerate(launches) if kernel_matches(kernel, m, d)]
    if not picked:
        seen = sorted({d for _, d in launches})
        what = f"no kernel matches --kernel {kernel!r}" if kernel is not None else "the program launched no kernel"
        raise InputError(f"{what} (launched: {', '.join(seen[:10]) or 'none'})")
    if kernel is None and len({launches[i][0] for i in picked}) > 1:
        seen = sorted({d for _, d in launches})
        raise InputError(
            f"the program launches {len(seen)} kernels; pick one with --kernel NAME|REGEX: {', '.join(seen[:10])}"
        )
    n = 0 if launch is None else launch
    if not 0 <= n < len(picked):
        raise InputError(f"--launch {n}: the chosen kernel was launched {len(picked)} time{'' if len(picked) == 1 else 's'} (0-{len(picked) - 1})")  # fmt: skip
    return picked[n]
