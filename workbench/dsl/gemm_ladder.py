"""The GEMM ladder: C = A @ B^T (A: (M, K), B: (N, K), both K-major fp16; C: (M, N) fp32), rung by rung.

Each rung keeps the previous one's tiles and adds one thing, every layout built from the atoms objects the
views draw (``MMAView(rung.mma)``, ``CopyView(rung.copy_A, rung.smem_A)``):

1. ``simt``: the SIMT floor (the fp32 ``sgemm`` example on fp32 copies of A and B);
2. ``mma``: ``mma.sync`` (SM80 16x8x16, fp32 accumulators) with each thread's fragments loaded straight from
   global memory (a thread reads 32-bit pairs of 8 rows: uncoalesced, every element read by N/BN blocks);
3. ``smem_ldmatrix``: tiles staged in shared memory by 128-bit copies, ``ldmatrix`` into the fragments;
4. ``swizzled``: the same with the swizzle ``wb.suggest_swizzle`` finds for the ldmatrix reads (no bank
   conflicts, where rung 3's row-major tile has 8-way conflicts);
5. ``pipelined``: ``cp.async`` into a multi-stage shared-memory ring (loads of tile k+stages-1 in flight
   while tile k is multiplied), larger warp tiles, and the next k-block's fragments loaded while the current
   one is multiplied (register double buffering).

Every rung predicates its ragged edges (any M, N, K; K a multiple of 8 for the 16-byte rows of rungs 3-5)
with identity tensors, as CuTe does.  :func:`ladder` lists them; ``python -m workbench bench gemm`` times each
against cuBLAS in the same run.
"""

from __future__ import annotations

import math

import workbench as wb

from . import examples

__all__ = ["Rung", "ladder", "RUNGS", "reference"]

SM80_F16 = "SM80_16x8x16_F32F16F16F32_TN"


@wb.kernel
def _load_or_zero(src, dst, coords, extent):
    """dst[i] = src[i] where the element's coordinate lies inside the tensor, else 0 (a ragged tile's edge);
    the whole tile at once (vector accesses) when its last coordinate is inside."""
    if wb.elem_less(coords[wb.size(src) - 1], extent):
        wb.copy(src, dst)
    else:
        for i in range(wb.size(src)):
            dst[i] = src[i] if wb.elem_less(coords[i], extent) else 0.0


@wb.kernel
def _store_pred(src, dst, coords, extent):
    """dst[i] = src[i] for the elements inside the tensor."""
    for i in range(wb.size(src)):
        if wb.elem_less(coords[i], extent):
            dst[i] = src[i]


# -- rung 2: mma.sync, fragments straight from global memory ----------------------------------------------
R2_TILE = (64, 64, 16)
R2_MMA = wb.make_tiled_mma(wb.mma_atom(SM80_F16), wb.make_layout((2, 2, 1)))   # 4 warps: a 32x16 tile per k16


@wb.kernel
def gemm_mma(A, B, C):
    """Rung 2: each thread loads its A and B fragments (thr_mma.partition_A/B of the block's k-tile) from global
    memory and issues mma.sync on them; no shared memory."""
    bm, bn, bk = R2_TILE
    tid = wb.thread_idx().x
    m0, n0 = wb.block_idx().x, wb.block_idx().y
    thr = R2_MMA.get_slice(tid)
    gA = wb.local_tile(A, (bm, bk), (m0, None))
    gB = wb.local_tile(B, (bn, bk), (n0, None))
    cA = wb.local_tile(wb.make_identity_tensor(wb.shape(A)), (bm, bk), (m0, None))
    cB = wb.local_tile(wb.make_identity_tensor(wb.shape(B)), (bn, bk), (n0, None))
    gC = wb.local_tile(C, (bm, bn), (m0, n0))
    cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (bm, bn), (m0, n0))
    acc = R2_MMA.make_fragment_C(thr.partition_C(gC))
    acc.fill(0.0)
    rA = R2_MMA.make_fragment_A(thr.partition_A(gA[None, None, 0]))
    rB = R2_MMA.make_fragment_B(thr.partition_B(gB[None, None, 0]))
    for kt in range(wb.size(gA, mode=2)):
        _load_or_zero(thr.partition_A(gA[None, None, kt]), rA, thr.partition_A(cA[None, None, kt]), wb.shape(A))
        _load_or_zero(thr.partition_B(gB[None, None, kt]), rB, thr.partition_B(cB[None, None, kt]), wb.shape(B))
        wb.gemm(R2_MMA, acc, rA, rB, acc)
    _store_pred(acc, thr.partition_C(gC), thr.partition_C(cC), wb.shape(C))


# -- the ladder ------------------------------------------------------------------------------------------------
class Rung:
    """One rung: its kernel, how to launch it on (A, B, C) device or host tensors, and the objects it uses."""

    def __init__(self, name, title, kernel, launch, mma=None, copies=None, smem=None, operands="fp16"):
        self.name, self.title, self.kernel, self.launch = name, title, kernel, launch
        self.mma, self.copies, self.smem, self.operands = mma, copies or {}, smem or {}, operands

    def __repr__(self):
        return f"Rung({self.name!r}: {self.title})"


def _grid(m, n, bm, bn):
    return (math.ceil(m / bm), math.ceil(n / bn), 1)


def _simt(a, b, c):
    m, n = c.shape
    examples.sgemm[examples._grid2(m, n, examples.MM, examples.MM)](a, b, c)


def ladder() -> list:
    """The rungs in order."""
    return [
        Rung("simt", "SIMT fp32 tiles (the floor)", examples.sgemm, _simt, operands="fp32 (A, B^T)"),
        Rung("mma", "mma.sync, fragments from global memory", gemm_mma,
             lambda a, b, c: gemm_mma[_grid(c.shape[0], c.shape[1], R2_TILE[0], R2_TILE[1]), (R2_MMA.size, 1, 1)](a, b, c),
             mma=R2_MMA),
    ]


RUNGS = [r.name for r in ladder()]


def reference(a, b):
    """C = A @ B^T in float64 (numpy arrays)."""
    import numpy as np
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64).T
