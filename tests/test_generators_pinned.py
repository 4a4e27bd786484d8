"""Pinned generator output: a hash of every column (and of the KernelInfo) for a few sizes of the
kernels whose generators were rewritten for speed (numba passes writing rows in final order).
The hashes in ``generator_pins.json`` were computed with the previous (numpy/Emitter) generators,
so a rewrite must reproduce their output bit for bit. Regenerate them (``python
tests/test_generators_pinned.py > tests/generator_pins.json``) only for an intended change of output."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import traces
from traces import generators as G

PINS = Path(__file__).with_name("generator_pins.json")

CASES = [
    ("vecadd", [100], [64]),
    ("vecadd", [1 << 16], None),
    ("vecadd", [1000], [96]),
    ("vecadd", [5000], [33]),
    ("triad", [1000], [96]),
    ("triad", [4096], None),
    ("matrix_sum_normal", [100], [16]),
    ("matrix_sum_normal", [37], [12]),
    ("matrix_sum_normal", [256], None),
    ("matrix_sum_coalesced", [100], [16]),
    ("matrix_sum_coalesced", [37], [12]),
    ("matrix_sum_coalesced", [256], None),
    ("transpose", [64, 96], None),
    ("transpose", [256, 256], None),
    ("matmul_naive", [50], [16]),
    ("matmul_naive", [64], None),
    ("matmul_naive", [33], [12]),
    ("matmul_naive_uncoalesced", [50], [16]),
    ("matmul_naive_uncoalesced", [33], [12]),
    ("mb3_c", [8, 4], None),
    ("mb3_uc", [8, 4], None),
    ("mb7_uc", [5, 3], [96]),
    ("mb1_c", [4, 5], None),
    ("convolution_rows", None, None),
    ("convolution_rows", [256, 8], None),
    ("convolution_rows", [384, 12], None),
    ("convolution_rows", [1024, 64], None),
    ("reduction", None, None),
    ("reduction", [4 * 512 * 8, 8], None),
    ("reduction", [100000, 3], None),
    ("bfs", None, None),
    ("bfs", [1024, 6], None),
    ("bfs", [5000, 3, 2], [64]),
    ("bfs", [3000, 5, 0], [96]),
    ("bfs", [20000, 4], [256]),
    ("bfs", [77, 3, 1], [32]),
    ("conv2d_kt", None, None),
    ("conv2d_kt", [100, 20], None),
    ("conv2d_kt", [144, 40], [48, 1, 3, 1]),
    ("conv2d_kt", [64, 64], [16, 16, 1, 1]),
    ("matrixmul", [64], None),
    ("conv1d", None, None),
    ("conv1d", [100, 3], [64]),
    ("conv1d", [300, 37], [96]),
    ("conv2d_channels", None, None),
    ("conv2d_channels", [40, 20, 2, 7], [16, 8]),
    ("matvec", None, None),
    ("matvec", [100, 33], [64]),
    ("histogram", None, None),
    ("histogram", [1000, 16], [128]),
    ("matmul_tiled", None, None),
    ("matmul_tiled", [64], [8]),
    ("matmul_tiled", [64], [32]),
]


def digest(cols, info) -> dict[str, str]:
    h = {}
    for c in traces.COLUMNS:
        a = np.ascontiguousarray(cols[c])
        h[c] = hashlib.blake2b(str((a.dtype.str, a.shape)).encode() + a.tobytes(), digest_size=8).hexdigest()
    h["info"] = hashlib.blake2b(repr(info).encode(), digest_size=8).hexdigest()
    return h


def key(name, size, block) -> str:
    return f"{name} {size} {block}"


@pytest.mark.parametrize(("name", "size", "block"), CASES, ids=[key(*c) for c in CASES])
def test_output_pinned(name, size, block):
    pins = json.loads(PINS.read_text())
    cols, info = G.generate(name, size, block)
    assert digest(cols, info) == pins[key(name, size, block)]


if __name__ == "__main__":
    json.dump({key(*c): digest(*G.generate(*c)) for c in CASES}, sys.stdout, indent=1)
    print()
