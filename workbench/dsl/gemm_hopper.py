"""The Hopper rungs of the GEMM ladder: TMA boxes into swizzled shared memory, warpgroup MMAs reading them through
descriptors, an mbarrier pipeline between them (``workbench.dsl.hopper``).

C = A @ B^T as the other rungs (A: (M, K), B: (N, K), K-major fp16 or bf16; C: (M, N) fp32).  One block computes a
bm x bn tile with ``consumers`` warpgroups (each a 64-row slab: an ``SM90_64x{bn}x16`` atom per k-block) and one
producer warpgroup, whose first thread issues the TMA loads (warp specialization):

* ``full[s]`` (1 arrival + the stage's bytes): the producer announces the bytes of stage s and issues its two
  boxes (A: bm x bk, B: bn x bk, ``Layout_K_SW128_Atom`` tiles); the consumers wait on it;
* ``empty[s]`` (one arrival per consumer warpgroup): a consumer releases stage s once the wgmma that read it are
  complete (``warpgroup_wait_group(1)``: one k-tile's MMAs stay in flight); the producer waits on it before it
  refills the stage.

``setmaxnreg`` moves registers from the producer (40) to the consumers (232), whose accumulators take 128 a thread
at bn = 256.  Blocks walk tiles in bands of ``group`` rows (``gemm_ladder.block_tile``); ``persistent`` blocks
loop over tiles.  Edges: the TMA reads zeros outside A and B, the epilogue predicates its stores.
"""

from __future__ import annotations

import math

import workbench as wb

from .gemm_ladder import Rung, _store_tile, block_tile

__all__ = ["HopperGemm", "make_hopper_gemm", "hopper_rungs"]


class HopperGemm:
    """A Hopper rung's configuration and every object its kernel uses (drawn by the views): ``mma`` (the tiled
    GMMA), ``smem`` (the staged shared layouts), ``box`` (one stage's TMA boxes' shared layouts)."""

    def __init__(self, bm=128, bn=256, bk=64, stages=4, consumers=2, group=8, dtype=wb.Float16,
                 persistent=False):
        if bm != 64 * consumers:
            raise ValueError(f"HopperGemm: each consumer warpgroup computes 64 rows, so bm must be 64 x consumers "
                             f"({64 * consumers}), but got {bm}.")
        self.bm, self.bn, self.bk, self.stages, self.consumers = bm, bn, bk, stages, consumers
        self.group, self.dtype, self.persistent = group, dtype, persistent
        ab = "F16F16" if dtype is wb.Float16 else "BF16BF16"
        self.atom = wb.mma_atom(f"SM90_64x{bn}x16_F32{ab}_SS")
        self.mma = wb.make_tiled_mma(self.atom, wb.make_layout((consumers, 1, 1)))
        self.threads = 128 * (consumers + 1)
        kind = {64: "SW128", 32: "SW64", 16: "SW32"}[bk * dtype.bits // 16]
        atom = wb.gmma_smem_atom(f"Layout_K_{kind}_Atom", dtype)
        self.box = {"A": wb.tile_to_shape(atom, (bm, bk)), "B": wb.tile_to_shape(atom, (bn, bk))}
        self.smem = {"A": wb.tile_to_shape(atom, (bm, bk, stages)), "B": wb.tile_to_shape(atom, (bn, bk, stages))}

    @property
    def smem_bytes(self):
        return (self.bm + self.bn) * self.bk * self.stages * self.dtype.bits // 8 + 16 * self.stages

    def tma(self, a, b):
        """The two TMA descriptors of one launch (A's and B's boxes)."""
        return wb.make_tma_load(a, self.box["A"]), wb.make_tma_load(b, self.box["B"])

    def grid(self, m, n):
        tiles = math.ceil(m / self.bm) * math.ceil(n / self.bn)
        if self.persistent:
            from .backend_cupy import gpu_available
            sms = _sm_count() if gpu_available() else 2
            return (min(tiles, sms), 1, 1)
        return (tiles, 1, 1)

    def __repr__(self):
        return (f"HopperGemm({self.bm}x{self.bn}x{self.bk}, stages={self.stages}, consumers={self.consumers}, "
                f"group={self.group}, {self.dtype}{', persistent' if self.persistent else ''})")


def _sm_count():
    import cupy
    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def make_hopper_gemm(cfg: HopperGemm):
    """The kernel of a Hopper rung: ``kern[cfg.grid(m, n), (cfg.threads, 1, 1)](tma_a, tma_b, C, k)``."""
    bm, bn, bk, S = cfg.bm, cfg.bn, cfg.bk, cfg.stages
    mma, SA, SB = cfg.mma, cfg.smem["A"], cfg.smem["B"]
    group = cfg.group
    persistent = cfg.persistent
    stage_bytes = (bm + bn) * bk * cfg.dtype.bits // 8
    consumers = cfg.consumers
    dtype = cfg.dtype

    @wb.kernel
    def gemm_tma_wgmma(tma_a, tma_b, C, k):
        """C = A @ B^T: a producer warpgroup's first thread streams k-tiles of A and B into a ring of shared stages by
        TMA; the consumer warpgroups multiply each stage with wgmma as soon as its mbarrier says its bytes landed, and
        release it when those MMAs are complete; the accumulators go to C with predicated stores."""
        tid = wb.thread_idx().x
        sA = wb.shared_tensor(dtype, SA)
        sB = wb.shared_tensor(dtype, SB)
        full = wb.shared_tensor(wb.Uint64, S)
        empty = wb.shared_tensor(wb.Uint64, S)
        m_size, n_size = wb.shape(C)[0], wb.shape(C)[1]
        mtiles, ntiles = wb.ceil_div(m_size, bm), wb.ceil_div(n_size, bn)
        ktiles = wb.ceil_div(k, bk)
        if tid == 0:
            for s in range(S):
                wb.mbarrier_init(full, s, 1)
                wb.mbarrier_init(empty, s, consumers)
            wb.mbarrier_init_fence()
        wb.sync_threads()
        first = wb.block_idx().x
        step = wb.grid_dim().x if persistent else mtiles * ntiles
        if tid < 128:
            wb.warpgroup_reg_dealloc(40)
            if tid == 0:
                it = 0
                tile = first
                while tile < mtiles * ntiles:
                    m0, n0 = block_tile(tile, mtiles, ntiles, group)
                    for kt in wb.range_dynamic(ktiles):
                        s = it % S
                        if it >= S:
                            wb.mbarrier_wait(empty, s, (it // S + 1) % 2)
                        wb.mbarrier_arrive_and_expect_tx(full, s, stage_bytes)
                        wb.tma_load(tma_a, sA[None, None, s], (m0 * bm, kt * bk), full, s)
                        wb.tma_load(tma_b, sB[None, None, s], (n0 * bn, kt * bk), full, s)
                        it += 1
                    tile += step
        else:
            wb.warpgroup_reg_alloc(232)
            ctid = tid - 128
            thr = mma.get_slice(ctid)
            tCsA = thr.partition_A(sA)
            tCsB = thr.partition_B(sB)
            it = 0
            tile = first
            while tile < mtiles * ntiles:
                m0, n0 = block_tile(tile, mtiles, ntiles, group)
                gC = wb.local_tile(C, (bm, bn), (m0, n0))
                acc = mma.make_fragment_C(thr.partition_C(gC))
                acc.fill(0.0)
                for kt in wb.range_dynamic(ktiles):
                    s = it % S
                    wb.mbarrier_wait(full, s, (it // S) % 2)
                    wb.gemm(mma, acc, tCsA[None, None, None, s], tCsB[None, None, None, s], acc)   # its k-blocks
                    wb.warpgroup_commit_group()
                    wb.warpgroup_wait_group(1)       # the previous k-tile's MMAs are complete: release its stage
                    if kt > 0 and ctid % 128 == 0:
                        wb.mbarrier_arrive(empty, (it + S - 1) % S)
                    it += 1
                wb.warpgroup_wait_group(0)
                if ctid % 128 == 0:
                    wb.mbarrier_arrive(empty, (it + S - 1) % S)
                cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (bm, bn), (m0, n0))
                _store_tile(acc, thr.partition_C(gC), thr.partition_C(cC), wb.shape(C))
                tile += step

    return gemm_tma_wgmma


_KERNELS: dict = {}


def _rung(name, title, cfg):
    k = _KERNELS.get(repr(cfg))
    if k is None:
        k = _KERNELS[repr(cfg)] = make_hopper_gemm(cfg)

    def args(a, b, c):
        ta, tb = cfg.tma(a, b)
        return ta, tb, wb.from_dlpack(c, assumed_align=16) if type(c) is not wb.Tensor else c, ta.shape[1]

    return Rung(name, title, k, lambda ta, tb, c, kk: k[cfg.grid(c.shape[0], c.shape[1]), (cfg.threads, 1, 1)](ta, tb, c, kk),
                mma=cfg.mma, smem=dict(cfg.smem), config=cfg, args=args)


def hopper_rungs(dtype=wb.Float16) -> list:
    """Rungs 6 and 7 (SM90 only): the warp-specialized TMA + wgmma kernel, then the same with persistent blocks."""
    return [_rung("tma_wgmma", "TMA + wgmma, 4-stage mbarrier ring, producer/consumer warpgroups, setmaxnreg",
                  HopperGemm(bm=128, bn=256, bk=64, stages=4, group=8, dtype=dtype)),
            _rung("persistent", "+ persistent blocks over the output tiles",
                  HopperGemm(bm=128, bn=256, bk=64, stages=4, group=8, persistent=True, dtype=dtype))]
