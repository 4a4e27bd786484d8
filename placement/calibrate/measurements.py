"""What a calibration run measured: values with their benchmark and spread, curves, skips.

Frozen records shared by the runner (which fills them on a GPU), the readers of
recorded outputs (``recorded``) and the writer (which turns them into a GPU
configuration). No GPU code here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .analysis import AddressBits, Stat


@dataclass(frozen=True)
class Measured:
    """One measured value: its median and spread over repetitions, unit and origin."""

    key: str
    """What it is (``l1_latency``, ``dram_read_gbs``, ...: ``writer.CONFIG_KEYS`` maps some to config fields)."""
    stat: Stat
    unit: str
    benchmark: str
    """The benchmark and the case that measured it (``pchase ld, 16 KiB``)."""
    source: str = ""
    """Where a recorded value comes from (a file); empty for a value measured by this run."""

    @property
    def value(self) -> float:
        return self.stat.median


@dataclass(frozen=True)
class Curve:
    """A measured curve kept in the output: x (footprint or stride, bytes; warps; ways), y and spread."""

    name: str
    x_name: str
    y_name: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    spread: tuple[float, ...] = ()


@dataclass(frozen=True)
class Device:
    """The GPU a calibration ran on, as the driver reports it."""

    name: str
    index: int = 0
    cc: tuple[int, int] = (0, 0)
    sms: int = 0
    driver: str = ""
    runtime: str = ""
    l2_bytes: int = 0
    memory_bytes: int = 0
    clock_mhz: float = 0.0
    """The clock the driver reports (cudaDeviceProp.clockRate); the measured one is ``sm_clock_mhz``."""


@dataclass(frozen=True)
class Skipped:
    """A benchmark that did not run to the end on this GPU, and why (never replaced by a guess)."""

    benchmark: str
    reason: str


@dataclass(frozen=True)
class Calibration:
    """Everything one run measured."""

    device: Device
    date: str
    """ISO date of the run (YYYY-MM-DD)."""
    quick: bool
    measured: dict[str, Measured] = field(default_factory=dict)
    curves: dict[str, Curve] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = ()
    """Findings that are not values (``Algorithm 1: the GPU hides its row bits``)."""
    address_bits: AddressBits | None = None
    """Huang & Li's DRAM row and column bits, where Algorithm 1 found them."""
