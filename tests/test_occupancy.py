"""Occupancy against hand-worked cases (CUDA occupancy calculator rules)."""

from __future__ import annotations

import dataclasses

import pytest

from placement.gpu import get_gpu
from placement.occupancy import occupancy
from traces.errors import InputError


def test_hong_kim_example_five_blocks():
    # Hong & Kim Sec. 3.6 / Table 2: 128 threads per block, 5 resident blocks "due to
    # high resource usage" on a G80-class SM (cc 1.0: 8192 registers, 24 warps, 8 blocks).
    # The paper does not print the register count; 12 registers per thread is one that
    # gives its 5: 4 warps (already a multiple of 2) x 32 x 12 = 1536 registers, a
    # multiple of the 256-register unit, and 8192 // 1536 = 5. Warps alone allow
    # 24 // 4 = 6 and the block slots 8.
    occ = occupancy(get_gpu("fx5600"), 128, regs_per_thread=12)
    assert occ.limits == {"blocks": 8, "warps": 6, "registers": 5, "shared memory": 8}
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (5, 20, "registers")
    assert occ.occupancy == pytest.approx(20 / 24)


def test_hong_kim_tiled_matmul_table5():
    # Table 5, Mat. (tiled): 18 registers, 3960 B shared. At 128 threads: registers
    # 4 x 32 x 18 = 2304 per block -> 8192 // 2304 = 3; shared 3960 rounds up to the
    # 512-byte unit, 4096 -> 16384 // 4096 = 4. Registers limit to 3 blocks.
    occ = occupancy(get_gpu("fx5600"), 128, regs_per_thread=18, smem_per_block=3960)
    assert occ.limits["registers"] == 3 and occ.limits["shared memory"] == 4
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (3, 12, "registers")


def test_block_granularity_rounds_warps_up():
    # 3 warps allocate registers as 4 (warp allocation granularity 2 on cc 1.x):
    # 4 x 32 x 10 = 1280 -> 8192 // 1280 = 6; without the rounding it would be 8.
    occ = occupancy(get_gpu("fx5600"), 96, regs_per_thread=10)
    assert occ.limits["registers"] == 6


def test_k80_warp_limited():
    # 256 threads = 8 warps, 32 regs -> 1024 registers per warp; the 131072-register
    # file in 4 sub-partitions holds (131072 // 4 // 1024) * 4 = 128 warps = 16 blocks.
    # Warp slots: 2048 / 32 = 64 -> 8 blocks.
    occ = occupancy(get_gpu("k80"), 256, regs_per_thread=32)
    assert occ.limits == {"blocks": 16, "warps": 8, "registers": 16, "shared memory": 16}
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (8, 64, "warps")
    assert occ.occupancy == 1.0


def test_k80_shared_memory_limited():
    # 48 KB per block: 114688 // 49152 = 2 blocks.
    occ = occupancy(get_gpu("k80"), 128, regs_per_thread=16, smem_per_block=49152)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (2, 8, "shared memory")


def test_k80_register_limited_with_rounding():
    # 37 registers -> 37 * 32 = 1184, rounded up to 1280 per warp;
    # (131072 // 4 // 1280) * 4 = 25 * 4 = 100 warps -> 100 // 8 = 12 blocks of 256 threads.
    occ = occupancy(get_gpu("k80"), 256, regs_per_thread=37)
    assert occ.limits["registers"] == 12
    # With 128 threads (4 warps) the warps bound becomes 16 and registers 25.
    occ = occupancy(get_gpu("k80"), 128, regs_per_thread=37)
    assert occ.limits["registers"] == 25 and (occ.blocks_per_sm, occ.limiter) == (16, "blocks")


def test_reserved_shared_memory_per_block():
    # cc 8.0 reserves 1 KB per block, allocated in 128-byte units from 167936 bytes:
    # 32 KB + 1 KB = 33792 -> 4 blocks (32 KB alone: 5); 48 KB + 1 KB = 50176 -> 3.
    gpu = get_gpu("k80")
    gpu = dataclasses.replace(
        gpu,
        memory=dataclasses.replace(gpu.memory, smem_per_sm=167936, smem_per_block=49152, smem_alloc_unit=128,
                                   smem_reserved_per_block=1024),
    )  # fmt: skip
    assert occupancy(gpu, 128, smem_per_block=32768).limits["shared memory"] == 4
    assert occupancy(gpu, 128, smem_per_block=49152).limits["shared memory"] == 3
    no_reserve = dataclasses.replace(gpu, memory=dataclasses.replace(gpu.memory, smem_reserved_per_block=0))
    assert occupancy(no_reserve, 128, smem_per_block=32768).limits["shared memory"] == 5


@pytest.mark.parametrize(
    "threads, regs, smem, message",
    [
        (2048, 0, 0, "2048 threads per block exceed k80's limit of 1024"),
        (0, 0, 0, "threads per block must be >= 1"),
        (128, 256, 0, "256 registers per thread outside k80's 0..255"),
        (1024, 65, 0, "65 registers per thread x 1024 threads exceed k80's 65536 registers per block"),
        (128, 0, 49153, "49153 bytes of shared memory per block exceed k80's limit of 49152"),
    ],
)
def test_impossible_launches(threads, regs, smem, message):
    with pytest.raises(InputError, match=message):
        occupancy(get_gpu("k80"), threads, regs, smem)
