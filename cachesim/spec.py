"""GPGPU-Sim cache strings, parsed and validated into :class:`CacheSpec`.

Format (GPGPU-Sim ``cache_config::init`` in ``gpu-cache.h``)::

    T:nsets:line:assoc,R:W:A:WA:I[,mshr_type:entries:merge[,miss_queue:fifo[,port]]]

``T`` line type: ``N`` normal, ``S`` sectored (32-byte sectors).
``R`` replacement: ``L`` LRU, ``F`` FIFO.
``W`` write policy: ``R`` read-only, ``B`` write-back, ``T`` write-through,
``E`` write-evict, ``L`` local write-back / global write-through.
``A`` allocation: ``m`` on miss, ``f`` on fill, ``s`` streaming (GPGPU-Sim turns it
into on-fill). ``WA`` write allocation: ``N`` no write-allocate, ``W`` write-allocate,
``F`` fetch-on-write, ``L`` lazy fetch-on-read. ``I`` set index: ``L`` linear, ``X``
bitwise XOR, ``P`` IPOLY hash (16, 32 or 64 sets), ``H`` Fermi hash (32 or 64 sets).
The MSHR and queue fields are timing parameters: they are checked for form and kept,
but they do not change hits and misses here.

As in GPGPU-Sim, a write-back cache may not allocate on fill, fetch-on-write and lazy
fetch-on-read need allocation on miss, and a sectored line holds four sectors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SpecError

SECTOR_BYTES = 32
SECTORS_PER_LINE = 4  # GPGPU-Sim's SECTOR_CHUNCK_SIZE
MAX_LINE_BYTES = 1 << 12
"""The longest line accepted: 4 KiB, 32x any GPU cache's (GPGPU-Sim's configurations and the
vendors' documents give 32 to 128 B). The simulation's work and memory per access grow with
the line; a 4 GiB line (fuzz input gpu 43052) was accepted and aborted the process."""

REPLACEMENT = {"L": "lru", "F": "fifo"}
WRITE = {"R": "read-only", "B": "write-back", "T": "write-through", "E": "write-evict", "L": "local-wb-global-wt"}
ALLOC = {"m": "on-miss", "f": "on-fill", "s": "streaming"}
WRITE_ALLOC = {"N": "no-write-allocate", "W": "write-allocate", "F": "fetch-on-write", "L": "lazy-fetch-on-read"}
INDEX = {"L": "linear", "X": "xor", "P": "ipoly", "H": "fermi-hash"}
MSHR = {"F": "tex-fifo", "T": "sector-tex-fifo", "A": "assoc", "S": "sector-assoc"}

# IPOLY: number of sets -> (primitive polynomial, number of address bits above the
# index that enter the hash), as in GPGPU-Sim's ipoly_hash_function (hashing.cc):
# 16 sets x^4+x+1, 32 sets x^5+x^2+1 (IPOLY(37)), 64 sets x^6+x+1 (IPOLY(67)).
IPOLY = {16: (0b10011, 13), 32: (0b100101, 15), 64: (0b1000011, 19)}

_RE = re.compile(
    r"^(?P<t>.):(?P<nsets>\d+):(?P<line>\d+):(?P<assoc>\d+),"
    r"(?P<r>.):(?P<w>.):(?P<a>.):(?P<wa>.):(?P<i>.)"
    r"(?:,(?P<mshr>.):(?P<mshr_entries>\d+):(?P<mshr_merge>\d+)"
    r"(?:,(?P<miss_queue>\d+)(?::(?P<fifo>\d+))?(?:,(?P<port>\d+))?)?)?$"
)


@dataclass(frozen=True)
class CacheSpec:
    """One cache, as a GPGPU-Sim cache string describes it (letters as in the string)."""

    sectored: bool
    nsets: int
    line: int
    assoc: int
    replacement: str  # "L" or "F"
    write: str  # "R", "B", "T", "E" or "L"
    alloc: str  # "m", "f" or "s"
    write_alloc: str  # "N", "W", "F" or "L"
    index: str  # "L", "X", "P" or "H"
    mshr: str = ""
    mshr_entries: int = 0
    mshr_merge: int = 0
    text: str = ""

    @property
    def size(self) -> int:
        """Capacity in bytes."""
        return self.nsets * self.line * self.assoc

    @property
    def sector(self) -> int:
        """Bytes per valid bit: 32 for a sectored line, the line otherwise."""
        return SECTOR_BYTES if self.sectored else self.line

    def describe(self) -> str:
        kind = "sectored" if self.sectored else "normal"
        return (
            f"{self.size // 1024} KiB {kind} ({self.nsets} sets x {self.assoc} ways x {self.line} B), "
            f"{REPLACEMENT[self.replacement]}, {WRITE[self.write]}, allocate {ALLOC[self.alloc]}, "
            f"{WRITE_ALLOC[self.write_alloc]}, {INDEX[self.index]} index"
        )


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _choice(field: str, letter: str, table: dict[str, str], s: str) -> str:
    if letter not in table:
        allowed = ", ".join(f"{k} ({v})" for k, v in table.items())
        raise SpecError(field, f"'{letter}' in cache string '{s}' is not one of {allowed}")
    return letter


def parse_spec(s: str) -> CacheSpec:
    """Parse and validate a GPGPU-Sim cache string; raise :class:`SpecError` naming the field."""
    if not isinstance(s, str):
        raise SpecError("cache string", f"expected a string, got {type(s).__name__}")
    text = s.strip()
    m = _RE.match(text)
    if m is None:
        raise SpecError(
            "cache string",
            f"'{s}' does not match T:nsets:line:assoc,R:W:A:WA:I[,mshr:entries:merge[,queue[:fifo][,port]]]",
        )
    g = m.groupdict()
    if g["t"] not in ("N", "S"):
        raise SpecError("line type", f"'{g['t']}' in cache string '{s}' is not N (normal) or S (sectored)")
    nsets, line, assoc = int(g["nsets"]), int(g["line"]), int(g["assoc"])
    if not _pow2(nsets):
        raise SpecError("nsets", f"{nsets} in cache string '{s}' must be a power of two >= 1")
    if not _pow2(line) or not 4 <= line <= MAX_LINE_BYTES:
        raise SpecError("line", f"{line} in cache string '{s}' must be a power of two from 4 to {MAX_LINE_BYTES} bytes")
    if not 1 <= assoc <= 1 << 16:
        raise SpecError("assoc", f"{assoc} in cache string '{s}' must be in 1..65536")
    sectored = g["t"] == "S"
    if sectored and line != SECTOR_BYTES * SECTORS_PER_LINE:
        raise SpecError(
            "line",
            f"a sectored cache needs {SECTORS_PER_LINE} sectors of {SECTOR_BYTES} B per line (128 B), got {line} in '{s}'",
        )
    r = _choice("replacement", g["r"], REPLACEMENT, s)
    w = _choice("write policy", g["w"], WRITE, s)
    a = _choice("allocation", g["a"], ALLOC, s)
    wa = _choice("write allocation", g["wa"], WRITE_ALLOC, s)
    if g["i"] == "C":
        raise SpecError(
            "set index", f"'C' (custom) in cache string '{s}' has no function in GPGPU-Sim; use L, X, P or H"
        )
    i = _choice("set index", g["i"], INDEX, s)
    if i == "P" and nsets not in IPOLY:
        raise SpecError("set index", f"IPOLY hashing needs 16, 32 or 64 sets, got {nsets} in '{s}'")
    if i == "H" and nsets not in (32, 64):
        raise SpecError("set index", f"the Fermi hash needs 32 or 64 sets, got {nsets} in '{s}'")
    if a in ("f", "s") and w == "B":
        raise SpecError("allocation", f"a write-back cache cannot allocate on fill (GPGPU-Sim refuses it): '{s}'")
    if a in ("f", "s") and wa in ("F", "L"):
        raise SpecError("write allocation", f"fetch-on-write and lazy fetch-on-read need allocation on miss: '{s}'")
    mshr = g["mshr"] or ""
    if mshr:
        _choice("mshr type", mshr, MSHR, s)
    return CacheSpec(
        sectored=sectored, nsets=nsets, line=line, assoc=assoc, replacement=r, write=w, alloc=a,
        write_alloc=wa, index=i, mshr=mshr, mshr_entries=int(g["mshr_entries"] or 0),
        mshr_merge=int(g["mshr_merge"] or 0), text=text,
    )  # fmt: skip
