"""Rungs 5 and 6 of the GEMM ladder taken apart, one change at a time: each step the previous configuration with one
parameter changed (``benchmarks/ladder_ablation.py`` times each against cuBLAS and profiles it; notebooks 10 and 11
set the measurements beside ``workbench.kernels.arithmetic``'s predictions)."""

from __future__ import annotations

import workbench as wb

from . import gemm_ladder as G
from .gemm_hopper import HopperGemm

__all__ = ["rung5_steps", "rung6_steps"]


def rung5_steps() -> list:
    """Rung 4 to rung 5 one change at a time: (what changed, SmemGemm), each configuration the previous one with one
    parameter changed, the first rung 4's and the last rung 5's (benchmarks/ladder_ablation.py measures each)."""
    base = dict(bm=128, bn=128, bk=32, warps=(2, 2), stages=1, swizzle=True, group=1)
    steps = [("rung 4 (swizzled)", dict(base)),
             ("8 warps (2 x 4): 64 x 32 warp tiles", dict(base, warps=(2, 4))),
             ("bn 256: 128 x 256 block tile, 64 x 64 warp tiles", dict(base, warps=(2, 4), bn=256)),
             ("bk 64: 128-byte rows, a wider swizzle", dict(base, warps=(2, 4), bn=256, bk=64)),
             ("4-stage cp.async ring", dict(base, warps=(2, 4), bn=256, bk=64, stages=4, prefetch=False)),
             ("next k-block's fragments prefetched", dict(base, warps=(2, 4), bn=256, bk=64, stages=4)),
             ("group 8: bands of 8 m-tiles (rung 5)", dict(base, warps=(2, 4), bn=256, bk=64, stages=4, group=8))]
    out = [(what, G.SmemGemm(**kw)) for what, kw in steps]
    assert repr(out[-1][1]) == repr(G.PIPELINED)
    return out


def rung6_steps(dtype=wb.Float16) -> list:
    """Rung 6 (and 7) one change at a time, on the Hopper rung's knobs: (what changed, HopperGemm, epilogue), each the
    previous with one change, from one consumer warpgroup and a 2-stage ring to rung 6 (TMA epilogue), rung 7
    (persistent), a cluster of 2, and ping-pong consumers instead (two changes at once, necessarily: a warpgroup owning a
    whole tile holds 128 x bn / 128 accumulators a thread, so bn = 128 keeps them at 128 registers; at bn = 256 the
    kernel spilled and ran at 0.04x, now refused by HopperGemm).  What the first step already has, TMA + wgmma + the
    warp-specialized mbarrier ring + setmaxnreg, is one kernel and is not taken apart here: rung 5 beside it is the
    mma.sync kernel with the same tile."""
    base = dict(bm=64, bn=256, bk=64, stages=2, consumers=1, group=1, dtype=dtype)
    steps = [("1 consumer warpgroup (64 x 256), 2 stages, register epilogue", dict(base), "registers"),
             ("2 consumer warpgroups (128 x 256)", dict(base, bm=128, consumers=2), "registers"),
             ("4 stages", dict(base, bm=128, consumers=2, stages=4), "registers"),
             ("group 8", dict(base, bm=128, consumers=2, stages=4, group=8), "registers"),
             ("TMA epilogue (rung 6)", dict(base, bm=128, consumers=2, stages=4, group=8), "tma"),
             ("persistent blocks (rung 7)", dict(base, bm=128, consumers=2, stages=4, group=8, persistent=True), "tma"),
             ("cluster of 2 (B multicast)", dict(base, bm=128, consumers=2, stages=4, group=8, persistent=True,
                                                 cluster=2), "tma"),
             ("ping-pong consumers instead, each a whole 128 x 128 tile (5 stages)",
              dict(base, bm=128, bn=128, consumers=2, stages=5, group=8, pingpong=True), "tma")]
    return [(what, HopperGemm(**kw), epi) for what, kw, epi in steps]
