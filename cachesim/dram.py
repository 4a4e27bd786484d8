"""DRAM: address decoding, per-bank row buffers, arrivals and service times (Huang & Li Sec. III-C2).

The bank of an address is given either by a GPGPU-Sim ``-gpgpu_mem_addr_mapping``
string (``dramid@N;`` then 64 characters, most significant bit first: ``D`` channel,
``B`` bank, ``R`` row, ``C`` column, ``S`` burst (a column bit), ``0`` unused; ``.``,
``|`` and spaces are separators) or by row, column and byte bit lists, in which case
every other bit is a bank bit (Huang & Li: "a combination of the other bits
identifies a unique memory bank"). Each bank keeps its last row open (open-page): a
request to it is a row-buffer hit, a miss (no row open yet) or a conflict (another
row open), served in row_hit_ns, row_miss_ns or row_conflict_ns (Eq. 8).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from . import _dram_kernels as K
from .errors import MappingError

OUTCOMES = ("hit", "miss", "conflict")


@dataclass(frozen=True)
class DramConfig:
    """Address mapping and row-buffer service times in ns (K80: 352 / 742 / 1008, Huang & Li Sec. III-C2)."""

    row_hit_ns: float
    row_miss_ns: float
    row_conflict_ns: float
    mapping: str = ""
    channels: int = 1
    row_bits: tuple[int, ...] = ()
    column_bits: tuple[int, ...] = ()
    byte_bits: tuple[int, ...] = ()

    def __post_init__(self):
        for name in ("row_hit_ns", "row_miss_ns", "row_conflict_ns"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not v > 0:
                raise MappingError(name, f"expected a time in ns > 0, got {v!r}")
        if not isinstance(self.channels, int) or self.channels < 1:
            raise MappingError("channels", f"expected an integer >= 1, got {self.channels!r}")
        if not self.mapping and not (self.row_bits and self.column_bits):
            raise MappingError("mapping", "give a GPGPU-Sim mapping string or both row_bits and column_bits")
        bits = list(self.row_bits) + list(self.column_bits) + list(self.byte_bits)
        for name in ("row_bits", "column_bits", "byte_bits"):
            for b in getattr(self, name):
                if not isinstance(b, int) or not 0 <= b < 64:
                    raise MappingError(name, f"bit {b!r} is not in 0..63")
        if len(bits) != len(set(bits)):
            raise MappingError("row_bits", "row, column and byte bits must not overlap")
        object.__setattr__(self, "_map", _address_map(self))

    @property
    def address_map(self) -> "AddressMap":
        return self._map  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AddressMap:
    """Bit masks of the decoder: channel, bank, row, column; ``dramid`` -1 for an explicit D mask."""

    masks: np.ndarray = field(repr=False)
    dramid: int
    channels: int
    bank_bits: int


def _mask(bits) -> int:
    m = 0
    for b in bits:
        m |= 1 << b
    return m


def parse_mapping(text: str, channels: int = 1) -> AddressMap:
    """Parse a GPGPU-Sim ``-gpgpu_mem_addr_mapping`` string (addrdec.cc ``addrdec_parseoption``)."""
    s = text.strip()
    dramid = -1
    m = re.match(r"^dramid@(\d+);(.*)$", s)
    if m:
        dramid = int(m.group(1))
        s = m.group(2)
        if not 0 <= dramid < 64:
            raise MappingError("mapping", f"dramid@{dramid} is not a bit position in 0..63")
    masks = {"D": 0, "B": 0, "R": 0, "C": 0}
    pos = 63
    for ch in s:
        if ch in ".| ":
            continue
        u = ch.upper()
        if u not in "DBRCS0":
            raise MappingError("mapping", f"character '{ch}' in '{text}' is not one of D B R C S 0 (or . | space)")
        if pos < 0:
            raise MappingError("mapping", f"'{text}' has more than 64 bit characters")
        if u == "D" and dramid >= 0:
            raise MappingError("mapping", f"'{text}' gives both dramid@ and D bits; use one")
        if u == "S":
            u = "C"
        if u != "0":
            masks[u] |= 1 << pos
        pos -= 1
    if pos != -1:
        raise MappingError("mapping", f"'{text}' has {63 - pos} bit characters, expected 64")
    if dramid < 0 and masks["D"] and channels != 1 << bin(masks["D"]).count("1"):
        raise MappingError("channels", f"{channels} channels but the mapping has {bin(masks['D']).count('1')} D bits")
    arr = np.array([masks["D"], masks["B"], masks["R"], masks["C"]], dtype=np.uint64)
    return AddressMap(arr, dramid, channels, bin(masks["B"]).count("1"))


def _address_map(cfg: DramConfig) -> AddressMap:
    if cfg.mapping:
        return parse_mapping(cfg.mapping, cfg.channels)
    row, col, byte = _mask(cfg.row_bits), _mask(cfg.column_bits), _mask(cfg.byte_bits)
    bank = ((1 << 64) - 1) & ~(row | col | byte)
    arr = np.array([0, bank, row, col], dtype=np.uint64)
    return AddressMap(arr, -1, 1, bin(bank).count("1"))


def decode(addresses: np.ndarray, config: DramConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bank, row, column) of each address; bank numbers channel and bank together."""
    a = np.ascontiguousarray(addresses, dtype=np.uint64)
    am = config.address_map
    bank = np.empty(a.shape[0], np.uint64)
    row = np.empty(a.shape[0], np.uint64)
    col = np.empty(a.shape[0], np.uint64)
    K.decode(a, am.masks, am.dramid, am.channels, am.bank_bits, bank, row, col)
    return bank, row, col


@dataclass(frozen=True)
class DramResult:
    """Row-buffer outcome and service time of each DRAM request, in arrival order.

    ``order[i]`` is the index in the input of the i-th request to arrive (stable for
    equal arrivals); ``bank`` is a dense id in 0..n_banks-1 and ``bank_number[bank]`` the
    decoded bank; ``outcome`` 0 hit, 1 miss, 2 conflict; ``arrival`` as given (cycles).
    Requests of one bank, in order: ``np.flatnonzero(result.bank == b)``.
    """

    order: np.ndarray
    arrival: np.ndarray
    bank: np.ndarray
    bank_number: np.ndarray
    row: np.ndarray
    outcome: np.ndarray
    service_ns: np.ndarray

    @property
    def n_banks(self) -> int:
        return int(self.bank_number.shape[0])

    def counts(self) -> dict[str, int]:
        return {name: int(np.count_nonzero(self.outcome == k)) for k, name in enumerate(OUTCOMES)}


def row_buffer(addresses: np.ndarray, arrival: np.ndarray, config: DramConfig) -> DramResult:
    """Serve DRAM requests in arrival order through per-bank open rows (Huang & Li Eq. 8)."""
    a = np.ascontiguousarray(addresses, dtype=np.uint64)
    t = np.ascontiguousarray(arrival, dtype=np.float64)
    if a.ndim != 1 or t.shape != a.shape:
        raise MappingError("arrival", f"expected one arrival per address, got shapes {a.shape} and {t.shape}")
    n = a.shape[0]
    order = np.argsort(t, kind="stable")
    am = config.address_map
    times = np.array([config.row_hit_ns, config.row_miss_ns, config.row_conflict_ns])
    arr = np.empty(n, np.float64)
    bank = np.empty(n, np.int32)
    row = np.empty(n, np.uint64)
    outcome = np.empty(n, np.int8)
    service = np.empty(n, np.float64)
    bank_number = K.serve(
        a, t, order, am.masks, am.dramid, am.channels, am.bank_bits, times, arr, bank, row, outcome, service
    )
    return DramResult(order, arr, bank, bank_number, row, outcome, service)


class RowBufferStream:
    """:func:`row_buffer` one piece at a time: the banks' open rows persist between pieces.

    Each piece must come in arrival order and after every request of the pieces before it
    (the caller sorts; :class:`cachesim.HierarchyStream` serves its DRAM requests once no
    later request can arrive before them). The outcomes equal ``row_buffer``'s over the
    whole stream.
    """

    def __init__(self, config: DramConfig):
        self.config = config
        am = config.address_map
        self._am = am
        self._times = np.array([config.row_hit_ns, config.row_miss_ns, config.row_conflict_ns])
        self._state = K.serve_state()
        self.counts = np.zeros(len(OUTCOMES), np.int64)
        """Requests per outcome so far (hit, miss, conflict)."""

    def serve(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(decoded bank number, outcome, service time in ns) of each request of the piece, in order."""
        a = np.ascontiguousarray(addresses, dtype=np.uint64)
        n = a.shape[0]
        bank = np.empty(n, np.int32)
        row = np.empty(n, np.uint64)
        outcome = np.empty(n, np.int8)
        service = np.empty(n, np.float64)
        am = self._am
        keys, ids, numbers, open_row, nb_ = self._state
        self._state = K.serve_chunk(a, np.arange(n, dtype=np.int64), am.masks, am.dramid, am.channels, am.bank_bits,
                                    self._times, keys, ids, numbers, open_row, nb_, bank, row, outcome, service)  # fmt: skip
        self.counts += [np.count_nonzero(outcome == k) for k in range(len(OUTCOMES))]
        return self._state[2][bank], outcome, service

    @property
    def n_banks(self) -> int:
        """Distinct banks that have received a request."""
        return int(self._state[4])

    def outcome_counts(self) -> dict[str, int]:
        return {name: int(self.counts[k]) for k, name in enumerate(OUTCOMES)}
