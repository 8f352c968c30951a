"""The arithmetic of a GEMM configuration, computed from the rung's own objects: what a learner changes in a
configuration (``SmemGemm`` of the ladder, ``HopperGemm`` of the Hopper rungs) moves every number here.

``gemm_arithmetic(cfg, M, N, K, sms=132)`` gives, for C = A @ B^T of that shape:

* **intensity**: flops per byte a block loads into shared memory for one k-tile, 2·bm·bn·bk / ((bm + bn)·bk·e):
  the larger the tile, the fewer bytes each flop costs (and the whole problem's, 2MNK over A, B and C once);
* **the stage budget**: one stage's bytes, what the configuration adds besides the stages (mbarriers, the TMA
  epilogue's staging of C), the total (``cfg.smem_bytes``) and the most stages that fit in 227 KiB a block;
* **occupancy**: blocks an SM holds by shared memory, by registers and by threads, the smallest of them, and the
  warps that makes of the SM's 64;
* **waves**: the output tiles, the blocks that run at once (SMs x blocks an SM), waves = tiles / that, and how full
  the last wave is (4096^2 at 128 x 256 is 512 tiles: 3.88 waves of 132, the fourth 88 % full); for persistent blocks,
  the fewest and most tiles one block computes;
* **L2 reuse of grouping**: the distinct tiles of A and B the first wave of blocks reads, walked in bands of
  ``group`` m-tiles (``gemm_ladder.block_tile``, as the kernels walk them) and, for comparison, in rows
  (group 1): the bytes the SMs read over the whole K against the distinct bytes behind them.

The registers are the configuration's: for a warp-specialized Hopper rung the ``setmaxnreg`` budget its entry
declares (``__launch_bounds__(threads, 1)``: the register file over the block's threads); for a ladder rung the
values that must be live (its accumulators and one k-block's fragments of A and B, two where the next k-block's are
prefetched), a floor under what ptxas allocates; pass ``registers=`` (ptxas's count, e.g. from a benchmark's JSON)
to use the real number.  The hardware figures are SM90's (H100/H200); ``sms`` is the GPU's SM count.  Every number
is a prediction: benchmarks/ladder_ablation.py sets the measured ones (Nsight Compute) beside them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import workbench as wb

from . import gemm_ladder as G

__all__ = ["gemm_arithmetic", "GemmArithmetic", "SM90"]

# SM90 (H100, H200): per SM
SM90 = {
    "registers": 65536,           # 32-bit registers of the register file
    "register_unit": 256,         # registers are given to a warp in units of 256 (8 a thread)
    "max_registers_per_thread": 255,
    "max_warps": 64,              # 2048 threads
    "max_blocks": 32,
    "smem": 228 * 1024,           # shared memory an SM has for blocks ...
    "smem_reserved": 1024,        # ... of which each block's 1 KiB is the system's
    "smem_per_block": G.SMEM_LIMIT,   # the opt-in maximum a block may ask for (227 KiB)
}


@dataclass(frozen=True)
class GemmArithmetic:
    config: str
    shape: tuple                  # (M, N, K)
    tile: tuple                   # (bm, bn, bk)
    element_bytes: int            # of A and B
    c_bytes: int
    flops: int                    # 2MNK
    # intensity
    tile_flops: int               # one k-tile of one block
    tile_bytes: int               # A's and B's bytes of that k-tile
    intensity: float              # flop per byte, tile_flops / tile_bytes
    problem_intensity: float      # 2MNK over A, B and C read/written once
    dram_min_bytes: int           # A, B read once and C written once
    # the stage budget
    stage_bytes: int              # one stage's A and B (plus its mbarriers)
    stages: int
    other_smem_bytes: int         # besides the stages: the TMA epilogue's staging of C
    smem_bytes: int               # the kernel's total (cfg.smem_bytes; a Hopper register epilogue: no staging)
    smem_limit: int
    max_stages: int               # the most stages within smem_limit
    # occupancy
    threads: int
    registers: int                # a thread's: measured where given, else the configuration's budget/floor
    registers_source: str
    blocks_by_smem: int
    blocks_by_registers: int
    blocks_by_threads: int
    blocks_per_sm: int
    occupancy: float              # warps resident / the SM's 64
    # waves
    sms: int
    tiles: int
    concurrent: int               # blocks resident at once, sms * blocks_per_sm
    waves: float
    last_wave_fill: float         # the last wave's blocks / concurrent
    wave_efficiency: float        # tiles / (ceil(waves) * concurrent)
    persistent: bool
    tiles_per_block: tuple        # persistent: (fewest, most) tiles a block computes; else (1, 1)
    # L2 reuse of the first wave
    group: int
    wave_a_tiles: int             # distinct m-tiles (tiles of A) the first wave reads
    wave_b_tiles: int
    wave_bytes_read: int          # what the SMs read over the whole K for the first wave's tiles
    wave_bytes_distinct: int      # the distinct bytes of A and B behind them
    l2_reuse: float               # wave_bytes_read / wave_bytes_distinct
    rows_l2_reuse: float          # the same with group = 1 (tiles walked in rows)

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self):
        m, n, k = self.shape
        bm, bn, bk = self.tile
        lines = [
            f"{self.config} at {m} x {n} x {k}",
            f"  intensity: {self.tile_flops} flop / {self.tile_bytes} B a k-tile = {self.intensity:.1f} flop/B "
            f"(the whole problem: {self.problem_intensity:.0f} flop/B)",
            f"  shared memory: {self.stages} stages x {self.stage_bytes} B + {self.other_smem_bytes} B = "
            f"{self.smem_bytes} B of {self.smem_limit}; at most {self.max_stages} stages fit",
            f"  occupancy: {self.registers} registers a thread ({self.registers_source}), {self.threads} threads; "
            f"blocks an SM by shared memory {self.blocks_by_smem}, by registers {self.blocks_by_registers}, "
            f"by threads {self.blocks_by_threads}: {self.blocks_per_sm} ({self.occupancy:.0%} of the warps)",
            f"  waves: {self.tiles} tiles of {bm} x {bn} over {self.concurrent} resident blocks ({self.sms} SMs) = "
            f"{self.waves:.2f} waves, the last {self.last_wave_fill:.0%} full; {self.wave_efficiency:.1%} of the "
            f"block slots busy",
        ]
        if self.persistent:
            lines.append(f"  persistent: each block computes {self.tiles_per_block[0]} to {self.tiles_per_block[1]} "
                         f"tiles")
        lines.append(f"  L2 reuse of the first wave (group {self.group}): {self.wave_a_tiles} tiles of A, "
                     f"{self.wave_b_tiles} of B; {self.wave_bytes_read / 2**20:.0f} MiB read for "
                     f"{self.wave_bytes_distinct / 2**20:.0f} MiB distinct = {self.l2_reuse:.1f}x "
                     f"(in rows, group 1: {self.rows_l2_reuse:.1f}x)")
        return "\n".join(lines)


def _positive(name, v):
    if type(v) is not int or v <= 0:
        raise ValueError(f"gemm_arithmetic: expected {name} a positive int, but got {type(v).__name__} {v!r}.")


def _blocks_by_registers(regs, threads):
    unit = SM90["register_unit"]
    per_warp = math.ceil(regs * 32 / unit) * unit
    return (SM90["registers"] // per_warp) // (threads // 32)


def _register_floor(cfg) -> int:
    """A ladder rung's live values a thread: its fp32 accumulators and one k-block's fp16 fragments of A and B (two
    pairs where the next k-block's are loaded while one is multiplied), two halves a 32-bit register."""
    thr = cfg.mma.get_slice(0)
    acc = wb.size(thr.partition_C(wb.make_layout((cfg.bm, cfg.bn))))
    kblock = cfg.mma.tile_shape_mnk[2]
    a = wb.size(thr.partition_A(wb.make_layout((cfg.bm, kblock))))
    b = wb.size(thr.partition_B(wb.make_layout((cfg.bn, kblock))))
    return acc + (2 if cfg.prefetch else 1) * (a + b) // 2


def _wave_tiles(cfg, mtiles_all, ntiles, concurrent, group):
    """The (m, n) tiles the first ``concurrent`` blocks compute, as the kernels walk them (block_tile; a cluster of
    ``cluster`` blocks takes ``cluster`` m-tiles of one n-tile)."""
    cl = getattr(cfg, "cluster", 1)
    mtiles = math.ceil(mtiles_all / cl)
    tiles = []
    for bid in range(min(concurrent, mtiles * ntiles * cl)):
        m0, n0 = G.block_tile.__wrapped__(bid // cl, mtiles, ntiles, max(group // cl, 1))
        m0 = m0 * cl + bid % cl
        if m0 < mtiles_all:
            tiles.append((m0, n0))
    return tiles


def gemm_arithmetic(cfg, m, n, k, sms=132, registers=None, c_type=None, epilogue="tma") -> GemmArithmetic:
    """The arithmetic of ``cfg`` (a ``gemm_ladder.SmemGemm`` or a ``gemm_hopper.HopperGemm``) for C = A @ B^T of
    M x N x K on a GPU of ``sms`` SMs (132: H100 SXM, H200).  ``registers``: a thread's registers as ptxas gave
    them (default: the configuration's own budget, see the module).  ``c_type``: C's element type (default fp32 for
    a ladder rung, which writes fp32; the inputs' type for a Hopper rung, as cuBLAS writes it).  ``epilogue``: a Hopper
    rung's, "tma" (C staged in shared memory: ``cfg.smem_bytes``) or "registers" (no staging)."""
    from .gemm_hopper import HopperGemm

    hopper = type(cfg) is HopperGemm
    if type(cfg) is not G.SmemGemm and not hopper:
        raise TypeError(f"gemm_arithmetic: expected a GEMM configuration (gemm_ladder.SmemGemm or "
                        f"gemm_hopper.HopperGemm), but got {type(cfg).__name__}.")
    for name, v in (("M", m), ("N", n), ("K", k), ("sms", sms)):
        _positive(name, v)
    if registers is not None and (type(registers) is not int or not 1 <= registers <= 255):
        raise ValueError(f"gemm_arithmetic: expected registers an int in 1..255 (a thread's, as ptxas reports), or "
                         f"None, but got {registers!r}.")
    if epilogue not in ("tma", "registers"):
        raise ValueError(f"gemm_arithmetic: expected epilogue 'tma' or 'registers', but got {epilogue!r}.")
    dtype = cfg.dtype if hopper else wb.Float16
    if c_type is None:
        c_type = dtype if hopper else wb.Float32
    e, ce = dtype.bits // 8, c_type.bits // 8
    bm, bn, bk, stages, threads = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.threads

    tile_flops = 2 * bm * bn * bk
    tile_bytes = (bm + bn) * bk * e
    dram_min = (m * k + n * k) * e + m * n * ce

    # the stage budget: a Hopper ring's stage also holds its two 8-byte mbarriers (full, empty)
    stage = tile_bytes + (16 if hopper else 0)
    total = cfg.smem_bytes if not hopper or epilogue == "tma" else stages * stage
    other = total - stages * stage
    limit = SM90["smem_per_block"]
    max_stages = (limit - other) // stage

    # occupancy
    if registers is not None:
        regs, source = registers, "as given"
    elif hopper:
        # __launch_bounds__(threads, 1): the register file over the block's threads, in units of 8
        regs = min(SM90["max_registers_per_thread"], SM90["registers"] // threads // 8 * 8)
        source = (f"the entry's budget, then setmaxnreg: producer 40, consumers 232 "
                  f"({128 * 40 + 128 * cfg.consumers * 232} of {SM90['registers']})")
    else:
        regs, source = _register_floor(cfg), "floor: accumulators and live fragments"
    by_smem = SM90["smem"] // (total + SM90["smem_reserved"])
    by_regs = _blocks_by_registers(regs, threads)
    by_threads = SM90["max_warps"] // (threads // 32)
    blocks = min(by_smem, by_regs, by_threads, SM90["max_blocks"])

    # waves
    mtiles, ntiles = math.ceil(m / bm), math.ceil(n / bn)
    tiles = mtiles * ntiles
    concurrent = sms * blocks
    waves = tiles / concurrent if concurrent else math.inf
    last = tiles - (math.ceil(waves) - 1) * concurrent if concurrent else 0
    persistent = bool(getattr(cfg, "persistent", False))
    if persistent:       # as cfg.grid: as many clusters as the SMs hold, each looping over cluster tiles
        cl = cfg.cluster
        clusters = math.ceil(m / (bm * cl)) * ntiles
        running = min(clusters, sms // cl)
        tpb = (clusters // running, math.ceil(clusters / running))
    else:
        tpb = (1, 1)

    # L2 reuse of the first wave
    def reuse(group):
        ts = _wave_tiles(cfg, mtiles, ntiles, concurrent, group)
        a_t, b_t = len({t[0] for t in ts}), len({t[1] for t in ts})
        cl = getattr(cfg, "cluster", 1)
        read = (len(ts) * bm + math.ceil(len(ts) / cl) * bn) * k * e     # a cluster reads its B tile once
        distinct = (a_t * bm + b_t * bn) * k * e
        return a_t, b_t, read, distinct

    a_t, b_t, read, distinct = reuse(cfg.group)
    *_, read1, distinct1 = reuse(1)
    return GemmArithmetic(
        config=repr(cfg), shape=(m, n, k), tile=(bm, bn, bk), element_bytes=e, c_bytes=ce, flops=2 * m * n * k,
        tile_flops=tile_flops, tile_bytes=tile_bytes, intensity=tile_flops / tile_bytes,
        problem_intensity=2 * m * n * k / dram_min, dram_min_bytes=dram_min,
        stage_bytes=stage, stages=stages, other_smem_bytes=other, smem_bytes=total, smem_limit=limit,
        max_stages=max_stages, threads=threads, registers=regs, registers_source=source,
        blocks_by_smem=by_smem, blocks_by_registers=by_regs, blocks_by_threads=by_threads, blocks_per_sm=blocks,
        occupancy=blocks * threads / 32 / SM90["max_warps"], sms=sms, tiles=tiles, concurrent=concurrent,
        waves=waves, last_wave_fill=last / concurrent if concurrent else 0.0,
        wave_efficiency=tiles / (math.ceil(waves) * concurrent) if concurrent else 0.0,
        persistent=persistent, tiles_per_block=tpb, group=cfg.group, wave_a_tiles=a_t, wave_b_tiles=b_t,
        wave_bytes_read=read, wave_bytes_distinct=distinct, l2_reuse=read / distinct,
        rows_l2_reuse=read1 / distinct1)
