"""Kernel parameters from a trace (coalescing from addresses) and `placement model --trace`."""

import json

import numpy as np
import pytest

import traces
from placement.cli import main
from placement.models import kernel_from_trace


def _write(tmp_path, a_space="global"):
    """Two blocks of one warp: a coalesced load (4 B x 32 consecutive lanes, one 128-B line)
    and a strided load (stride 128 B: 32 lines) of A (in ``a_space``), then a coalesced store."""
    warps = 2
    objs = (traces.ObjectInfo(0, "A", a_space, 0x10000, 1 << 16, 4, None, False),
            traces.ObjectInfo(1, "C", "global", 0x40000, 1 << 12, 4, None, True))  # fmt: skip
    info = traces.KernelInfo(kernel="mix", grid=(warps, 1, 1), block=(32, 1, 1), objects=objs,
                             instructions=traces.Instructions(executed=20 * warps, warps=warps, fp32=4 * warps,
                                                              sfu=2 * warps, sync=1 * warps, ldst=3 * warps),
                             regs_per_thread=16, source={"format": "test"})  # fmt: skip
    lanes = np.arange(32, dtype=np.uint64)
    rows = []
    for w in range(warps):
        rows.append((w, 0, 0, 0x10000 + w * 128 + lanes * 4, 0))
        rows.append((w, 4, 0, 0x10000 + 0x2000 + w * 4 + lanes * 128, 0))
        rows.append((w, 8, 1, 0x40000 + w * 128 + lanes * 4, 1))
    n = len(rows)
    cols = {
        "cta": np.array([r[0] for r in rows], np.int32),
        "warp": np.zeros(n, np.int32),
        "seq": np.array([r[1] for r in rows], np.int64),
        "pc": np.array([r[1] * 4 for r in rows], np.int32),
        "op": np.array([r[2] for r in rows], np.int8),
        "space": np.array([traces.SPACE_CODES[a_space] if r[4] == 0 else 0 for r in rows], np.int8),
        "width": np.full(n, 4, np.int8),
        "mask": np.full(n, 0xFFFFFFFF, np.uint32),
        "addr": np.stack([r[3] for r in rows]).astype(np.uint64),
        "obj": np.array([r[4] for r in rows], np.int16),
    }
    p = tmp_path / "mix.parquet"
    traces.write(p, cols, info)
    return p


def test_kernel_from_trace(tmp_path):
    k = kernel_from_trace(_write(tmp_path))
    assert k.threads_per_block == 32 and k.blocks == 2 and k.regs_per_thread == 16
    assert k.coal_mem_insts == 2 and k.uncoal_mem_insts == 1 and k.uncoal_per_mw == 32
    assert k.store_insts == 1  # the op-1 row of each warp
    assert k.sfu_insts == 2 and k.synch_insts == 1 and k.fp_insts == 4
    assert k.comp_insts == 20 - 3 - 2


@pytest.mark.parametrize("space", ["readonly", "texture1d"])
def test_read_only_and_texture_loads_go_off_chip_as_global_ones(tmp_path, space):
    # read-only rows were left out of the off-chip requests (coalesced 1, uncoalesced 0) and R objects'
    # bytes out of data_bytes
    g = kernel_from_trace(_write(tmp_path, "global"))
    k = kernel_from_trace(_write(tmp_path, space))
    assert (k.coal_mem_insts, k.uncoal_mem_insts, k.uncoal_per_mw, k.store_insts) == (2, 1, 32, 1)
    assert k == g and k.data_bytes == (1 << 16) + (1 << 12)


@pytest.mark.parametrize("model", ["mwp-cwp", "gpuperf", "bsp"])
def test_cli_trace(tmp_path, capsys, model):
    p = _write(tmp_path)
    extra = ["--lambda", "1"] if model == "bsp" else []
    assert main(["model", model, "--gpu", "k80", "--trace", str(p), "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["machine"] == "k80" and doc["time_s"] > 0
