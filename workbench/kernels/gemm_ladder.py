"""The GEMM ladder: C = A @ B^T (A: (M, K), B: (N, K), both K-major fp16; C: (M, N) fp32), rung by rung.

Each rung keeps the previous one's tiles and adds one thing, every layout built from the atoms objects the
views draw (``MMAView(rung.mma)``, ``CopyView(rung.copies["A"], ...)`` over ``rung.smem["A"]``):

1. ``simt``: the SIMT floor (the fp32 ``sgemm`` example on fp32 copies of A and B);
2. ``mma``: ``mma.sync`` (SM80 16x8x16, fp32 accumulators) with each thread's fragments loaded straight from
   global memory (a thread reads 32-bit pairs of 8 rows: uncoalesced, every element read by N/BN blocks);
3. ``smem_ldmatrix``: 128x128x32 block tiles staged in shared memory by 16-byte ``cp.async`` (one stage: load,
   wait, compute), ``ldmatrix`` into the fragments of four warps;
4. ``swizzled``: the same with the swizzle ``wb.suggest_swizzle`` finds for the ldmatrix reads (no bank
   conflicts, where rung 3's row-major tile has 4-way conflicts);
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

__all__ = ["Rung", "ladder", "RUNGS", "reference", "gemm_operands", "zero_fill", "check_config", "SmemGemm",
           "smem_rung"]

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
def store_tile(src, dst, coords, extent):
    """dst = src for a thread's (V, M, N) partition of C: the whole partition (vector stores where proven) when its
    last element, the largest coordinate, lies inside the tensor; else element by element, predicated.  A C of
    another element type than the accumulators (fp16/bf16, as cuBLAS writes) gets them rounded first."""
    if src.element_type != dst.element_type:
        out = wb.make_fragment(src.layout, dst.element_type)
        out.store(src.load().to(dst.element_type))
        src = out
    if wb.elem_less(coords[wb.size(src) - 1], extent):
        wb.copy(src, dst)
    else:
        for n in range(wb.size(src, mode=2)):
            for m in range(wb.size(src, mode=1)):
                for v in range(wb.size(src, mode=0)):
                    if wb.elem_less(coords[v, m, n], extent):
                        dst[v, m, n] = src[v, m, n]


# -- what every library GEMM checks before it launches -----------------------------------------------------------
SMEM_LIMIT = 227 * 1024          # bytes of shared memory a block may use on SM80/SM90 (opt-in maximum)


def check_config(who, name, value, allowed, what):
    """One configuration value: an int (not a bool) for which ``allowed(value)`` holds, else a TypeError/ValueError
    naming the parameter, what it supports (``what``) and what it got."""
    if type(value) is not int:
        raise TypeError(f"{who}: expected {name} to be an int ({what}), but got {type(value).__name__} {value!r}.")
    if not allowed(value):
        raise ValueError(f"{who}: expected {name} {what}, but got {value}.")


def _as_tensor(who, role, x):
    if type(x) is wb.Tensor:
        return x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{who}: expected {role} to be a tensor (wb.Tensor or any __dlpack__ object), but got "
                        f"{type(x).__name__}.")
    return wb.from_dlpack(x)


def gemm_operands(who, a, b, c, ab_types, c_types, b_is_kn=False, k_major=False, k_multiple=1, b_types=None):
    """The checks every library GEMM makes before it launches, for C = A @ B^T (A: (M, K), B: (N, K); ``b_is_kn``:
    B is (K, N), C = A @ B): rank-2 operands whose extents agree, A and B of one element type in ``ab_types`` (or,
    given ``b_types``, A's in ``ab_types`` and B's in ``b_types``: fp8 GEMMs mix e4m3 and e5m2), C's in
    ``c_types``, A and B K-major where ``k_major`` (stride 1 along K), K a multiple of ``k_multiple``.  Returns
    (M, N, K).  A mismatch raises ValueError/TypeError naming what was expected and what was got."""
    ts = {r: _as_tensor(who, r, x) for r, x in (("A", a), ("B", b), ("C", c))}
    for r, t in ts.items():
        if len(t.shape) != 2 or any(type(e) is not int for e in t.shape):
            raise ValueError(f"{who}: expected {r} to be a rank-2 tensor, but got shape {t.shape}.")
    (m, k), (n, kb), (mc, nc) = ts["A"].shape, ts["B"].shape[::-1] if b_is_kn else ts["B"].shape, ts["C"].shape
    bshape = "(K, N)" if b_is_kn else "(N, K)"
    if kb != k:
        raise ValueError(f"{who}: A is (M, K) and B is {bshape}, so their K must agree, but A is {ts['A'].shape} "
                         f"(K = {k}) and B is {ts['B'].shape} (K = {kb}).")
    if (mc, nc) != (m, n):
        raise ValueError(f"{who}: expected C of shape (M, N) = ({m}, {n}) for A {ts['A'].shape} and B "
                         f"{ts['B'].shape}, but got {ts['C'].shape}.")
    ea, eb, ec = ts["A"].element_type, ts["B"].element_type, ts["C"].element_type
    names = lambda types: " or ".join(str(t) for t in types)    # noqa: E731
    if b_types is not None:
        if ea not in ab_types or eb not in b_types:
            raise TypeError(f"{who}: expected A of element type {names(ab_types)} and B of {names(b_types)}, but got "
                            f"A {ea} and B {eb}.")
    elif ea not in ab_types or eb is not ea:
        raise TypeError(f"{who}: expected A and B of one element type, {names(ab_types)}, but got A {ea} and B {eb}.")
    if ec not in c_types:
        raise TypeError(f"{who}: expected C of element type {names(c_types)}, but got {ec}.")
    if m and n and k:
        if k_major:
            for r in ("A", "B"):
                if ts[r].stride[1] != 1 and ts[r].shape[1] != 1:
                    raise ValueError(f"{who}: expected {r} K-major (stride 1 along K), but got strides "
                                     f"{ts[r].stride} for shape {ts[r].shape}.")
        if k % k_multiple:
            raise ValueError(f"{who}: expected K a multiple of {k_multiple} (16-byte rows), but got {k}.")
        for r in ("A", "B"):
            if ts[r].stride[0] % k_multiple and ts[r].shape[0] > 1:
                raise ValueError(f"{who}: expected {r}'s row pitch a multiple of {k_multiple} elements (16-byte "
                                 f"rows), but got strides {ts[r].stride}.")
    return m, n, k


@wb.kernel
def zero_fill(C):
    """C = 0, one element a thread (the K = 0 product)."""
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(C):
        C[i] = 0.0


def finish_degenerate(c, m, n, k) -> bool:
    """M, N or K = 0: what torch gives (C empty: nothing to write; K = 0: C = 0) and True; else False."""
    if m == 0 or n == 0:
        return True
    if k == 0:
        if type(c) is not wb.Tensor:     # the leading dimension said, not deduced (a 1 x 1 C has two stride-1 modes)
            c = wb.from_dlpack(c)
            c = c.mark_layout_dynamic(leading_dim=1 if c.stride[1] == 1 else 0 if c.stride[0] == 1 else None)
        zero_fill[math.ceil(m * n / 256), 256](c)
        return True
    return False


def checked(who, ab_types, c_types, launch, **rules):
    """``launch(a, b, c)`` behind :func:`gemm_operands` and :func:`finish_degenerate`."""
    def run(a, b, c):
        m, n, k = gemm_operands(who, a, b, c, ab_types, c_types, **rules)
        if not finish_degenerate(c, m, n, k):
            launch(a, b, c)
    run.__doc__ = launch.__doc__
    return run


C_TYPES = (wb.Float32, wb.Float16, wb.BFloat16)


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
    for kt in wb.range_dynamic(wb.size(gA, mode=2)):
        _load_or_zero(thr.partition_A(gA[None, None, kt]), rA, thr.partition_A(cA[None, None, kt]), wb.shape(A))
        _load_or_zero(thr.partition_B(gB[None, None, kt]), rB, thr.partition_B(cB[None, None, kt]), wb.shape(B))
        wb.gemm(R2_MMA, acc, rA, rB, acc)
    store_tile(acc, thr.partition_C(gC), thr.partition_C(cC), wb.shape(C))


# -- rungs 3-5: tiles in shared memory, ldmatrix, swizzle, cp.async pipeline ----------------------------------
class SmemGemm:
    """The configuration of a shared-memory rung and every object its kernel uses (drawn by the views).

    bm x bn x bk: the block tile; warps: (warps along M, warps along N), each warp a (bm/wm) x (bn/wn) tile;
    stages: the shared-memory ring (1: load, wait, compute; more: cp.async of later k-tiles in flight and the
    next k-block's fragments loaded while the current one is multiplied); prefetch: with more than one stage,
    whether the next k-block's fragments are loaded while the current one is multiplied (default: yes; False
    loads each k-block's fragments just before its mma.sync, so that the ring and the register double buffering
    can be measured apart); swizzle: the ldmatrix reads' swizzle (wb.suggest_swizzle) or none; group: m-tiles a
    band of blocks walks (block_tile)."""

    def __init__(self, bm=128, bn=128, bk=32, warps=(2, 2), stages=1, swizzle=True, group=1, prefetch=None):
        who = "SmemGemm"
        if (type(warps) is not tuple or len(warps) != 2 or any(type(w) is not int or w < 1 for w in warps)
                or warps[0] * warps[1] > 32):
            raise ValueError(f"{who}: expected warps a pair (warps along M, warps along N) of positive ints with at "
                             f"most 32 warps in all, but got {warps!r}.")
        wm, wn = warps
        check_config(who, "bk", bk, lambda v: v in (16, 32, 64), "16, 32 or 64 (k-blocks of 16, 16-byte rows)")
        threads = 32 * wm * wn
        check_config(who, "bm", bm, lambda v: v > 0 and v % (16 * wm) == 0 and v * bk % (threads * 8) == 0,
                     f"a positive multiple of {16 * wm} (16 rows per warp along M) whose bm x bk tile the "
                     f"{threads} threads copy in whole 16-byte chunks")
        check_config(who, "bn", bn, lambda v: v > 0 and v % (16 * wn) == 0 and v * bk % (threads * 8) == 0,
                     f"a positive multiple of {16 * wn} (16 columns per warp along N) whose bn x bk tile the "
                     f"{threads} threads copy in whole 16-byte chunks")
        check_config(who, "stages", stages, lambda v: v >= 1, ">= 1")
        check_config(who, "group", group, lambda v: v >= 1, ">= 1 (m-tiles per band of blocks)")
        if prefetch is None:
            prefetch = stages > 1
        if type(prefetch) is not bool or (prefetch and stages == 1):
            raise ValueError(f"{who}: expected prefetch a bool, True only with more than one stage (one stage loads, "
                             f"waits and computes: nothing to overlap the fragments with), but got prefetch="
                             f"{prefetch!r} with stages={stages}.")
        if type(swizzle) is not bool:
            raise TypeError(f"{who}: expected swizzle a bool, but got {type(swizzle).__name__} {swizzle!r}.")
        if (bm + bn) * bk * stages * 2 > SMEM_LIMIT:
            raise ValueError(f"{who}: expected at most {SMEM_LIMIT} bytes of shared memory a block, but "
                             f"{bm}x{bn}x{bk} in {stages} stages needs {(bm + bn) * bk * stages * 2}.")
        self.bm, self.bn, self.bk, self.warps, self.stages = bm, bn, bk, warps, stages
        self.swizzle, self.group, self.prefetch = swizzle, group, prefetch
        wm, wn = warps
        atom = wb.mma_atom(SM80_F16)
        # each warp's N extent holds 16 columns per x4 ldmatrix of B: tile N at 16 x warps (CuTe's Tile<_, 16*wn, _>)
        self.mma = wb.make_tiled_mma(atom, wb.make_layout((wm, wn, 1)), (16 * wm, 16 * wn, 16))
        self.threads = self.mma.size
        ldsm = wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16)
        self.s2r_A = wb.make_tiled_copy_A(ldsm, self.mma)
        self.s2r_B = wb.make_tiled_copy_B(ldsm, self.mma)
        # global -> shared: 16-byte cp.async, threads in rows of bk/8 (a warp reads whole 64/128-byte rows)
        per_row = bk // 8
        thr = wb.make_layout((self.threads // per_row, per_row), stride=(per_row, 1))
        cp = wb.copy_atom("SM80_CP_ASYNC_CACHEGLOBAL", wb.Float16)
        self.g2s = wb.make_tiled_copy(cp, thr, wb.make_layout((1, 8)))
        self.smem_A = self._smem(bm, self.s2r_A)
        self.smem_B = self._smem(bn, self.s2r_B)
        self.conflicts = {w: (wb.bank_conflicts(c, self._plain(n)).total,
                              wb.bank_conflicts(c, self._tile(n, c)).total)
                          for w, c, n in (("A", self.s2r_A, bm), ("B", self.s2r_B, bn))}

    def _plain(self, rows):
        return wb.make_layout((rows, self.bk), stride=(self.bk, 1))

    def _tile(self, rows, s2r):
        """The (rows, bk) K-major tile, swizzled for the ldmatrix reads when asked."""
        plain = self._plain(rows)
        return wb.suggest_swizzle(s2r, plain, wb.Float16).layout if self.swizzle else plain

    def _smem(self, rows, s2r):
        """(rows, bk, stages): the tile repeated per stage (a stage is a whole number of swizzle periods)."""
        t = self._tile(rows, s2r)
        staged = wb.make_layout((rows, self.bk, self.stages), stride=(self.bk, 1, rows * self.bk))
        if type(t) is wb.Layout:
            return staged
        assert (rows * self.bk) % t.inner.size == 0
        return wb.composition(t.inner, staged)

    @property
    def smem_bytes(self):
        return (self.bm + self.bn) * self.bk * self.stages * 2

    def __repr__(self):
        # prefetch is named only where it departs from its default (the measured files' configurations stay as named)
        return (f"SmemGemm({self.bm}x{self.bn}x{self.bk}, warps={self.warps}, stages={self.stages}, "
                f"swizzle={self.swizzle}, group={self.group}"
                f"{'' if self.prefetch == (self.stages > 1) else f', prefetch={self.prefetch}'})")


def make_smem_gemm(cfg: SmemGemm):
    """The kernel of a shared-memory rung, its objects taken from cfg (compile-time constants)."""
    bm, bn, bk, stages = cfg.bm, cfg.bn, cfg.bk, cfg.stages
    mma, g2s, s2r_A, s2r_B = cfg.mma, cfg.g2s, cfg.s2r_A, cfg.s2r_B
    SA, SB = cfg.smem_A, cfg.smem_B
    kblocks = bk // 16
    group = cfg.group
    prefetch = cfg.prefetch

    @wb.kernel
    def gemm_smem(A, B, C):
        """C = A @ B^T: k-tiles of A and B through a ring of shared-memory stages (16-byte cp.async, zero-filled
        past the edges), ldmatrix into each warp's fragments, mma.sync; predicated stores of C.  One barrier per
        k-tile: after it, tile kt has landed and every warp is done with the stage tile kt+stages-1 refills."""
        tid = wb.thread_idx().x
        m0, n0 = block_tile(wb.block_idx().x, wb.ceil_div(wb.shape(A)[0], bm), wb.ceil_div(wb.shape(B)[0], bn), group)
        sA = wb.shared_tensor(wb.Float16, SA)
        sB = wb.shared_tensor(wb.Float16, SB)
        gA = wb.local_tile(A, (bm, bk), (m0, None))
        gB = wb.local_tile(B, (bn, bk), (n0, None))
        cA = wb.local_tile(wb.make_identity_tensor(wb.shape(A)), (bm, bk), (m0, None))
        cB = wb.local_tile(wb.make_identity_tensor(wb.shape(B)), (bn, bk), (n0, None))
        ktiles = wb.size(gA, mode=2)
        tg = g2s.get_slice(tid)
        tAgA, tAsA, tAcA = tg.partition_S(gA), tg.partition_D(sA), tg.partition_S(cA)
        tBgB, tBsB, tBcB = tg.partition_S(gB), tg.partition_D(sB), tg.partition_S(cB)
        pA = wb.make_fragment(wb.make_layout(wb.size(tAgA[None, None, None, 0]) // 8), wb.Boolean)
        pB = wb.make_fragment(wb.make_layout(wb.size(tBgB[None, None, None, 0]) // 8), wb.Boolean)
        thr = mma.get_slice(tid)
        gC = wb.local_tile(C, (bm, bn), (m0, n0))
        acc = mma.make_fragment_C(thr.partition_C(gC))
        acc.fill(0.0)
        rA = thr.partition_fragment_A(sA[None, None, 0])
        rB = thr.partition_fragment_B(sB[None, None, 0])
        ta, tb = s2r_A.get_slice(tid), s2r_B.get_slice(tid)
        tXrA, tXrB = ta.retile(rA), tb.retile(rB)   # CuTe DSL's ThrCopy.retile (CuTe C++: retile_D)
        for s in range(max(stages - 1, 1)):  # prologue: stages - 1 k-tiles in flight (one stage: the first)
            load_tile(g2s, tAgA, tAsA, tAcA, pA, wb.shape(A), s, s, ktiles)
            load_tile(g2s, tBgB, tBsB, tBcB, pB, wb.shape(B), s, s, ktiles)
            wb.cp_async_commit_group()
        if stages == 1:
            for kt in wb.range_dynamic(ktiles):
                wb.cp_async_wait_group(0)
                wb.sync_threads()
                tXsA = ta.partition_S(sA[None, None, 0])
                tXsB = tb.partition_S(sB[None, None, 0])
                for kb in range(kblocks):
                    wb.copy(s2r_A, tXsA[None, None, kb], tXrA[None, None, kb])
                    wb.copy(s2r_B, tXsB[None, None, kb], tXrB[None, None, kb])
                    wb.gemm(mma, acc, rA[None, None, kb], rB[None, None, kb], acc)
                wb.sync_threads()            # every warp is done with the stage before the next tile overwrites it
                load_tile(g2s, tAgA, tAsA, tAcA, pA, wb.shape(A), kt + 1, 0, ktiles)
                load_tile(g2s, tBgB, tBsB, tBcB, pB, wb.shape(B), kt + 1, 0, ktiles)
                wb.cp_async_commit_group()
        elif not prefetch:
            # the ring without register double buffering: after the barrier, tile kt has landed and every warp is
            # done with stage (kt-1) % stages, which tile kt+stages-1 refills; each k-block's fragments are loaded
            # just before its mma.sync
            for kt in wb.range_dynamic(ktiles):
                wb.cp_async_wait_group(stages - 2)
                wb.sync_threads()
                tXsA = ta.partition_S(sA[None, None, kt % stages])
                tXsB = tb.partition_S(sB[None, None, kt % stages])
                for kb in range(kblocks):
                    wb.copy(s2r_A, tXsA[None, None, kb], tXrA[None, None, kb])
                    wb.copy(s2r_B, tXsB[None, None, kb], tXrB[None, None, kb])
                    if kb == 0:
                        nxt = kt + stages - 1
                        load_tile(g2s, tAgA, tAsA, tAcA, pA, wb.shape(A), nxt, nxt % stages, ktiles)
                        load_tile(g2s, tBgB, tBsB, tBcB, pB, wb.shape(B), nxt, nxt % stages, ktiles)
                        wb.cp_async_commit_group()
                    wb.gemm(mma, acc, rA[None, None, kb], rB[None, None, kb], acc)
        else:
            # the ring: while k-block kb is multiplied, k-block kb+1's fragments are loaded; at the last k-block of
            # tile kt the barrier waits for tile kt+1 and the next tile's first fragments are loaded across it.  The
            # barrier also tells that every warp is done with stage (kt-1) % stages, which tile kt+stages-1 refills.
            wb.cp_async_wait_group(stages - 2)
            wb.sync_threads()
            wb.copy(s2r_A, ta.partition_S(sA[None, None, 0])[None, None, 0], tXrA[None, None, 0])
            wb.copy(s2r_B, tb.partition_S(sB[None, None, 0])[None, None, 0], tXrB[None, None, 0])
            for kt in wb.range_dynamic(ktiles):
                tXsA = ta.partition_S(sA[None, None, kt % stages])
                tXsB = tb.partition_S(sB[None, None, kt % stages])
                nA = ta.partition_S(sA[None, None, (kt + 1) % stages])
                nB = tb.partition_S(sB[None, None, (kt + 1) % stages])
                for kb in range(kblocks):
                    if kb == kblocks - 1:
                        wb.cp_async_wait_group(stages - 2)
                        wb.sync_threads()
                    nk = (kb + 1) % kblocks
                    wb.copy(s2r_A, (tXsA if kb + 1 < kblocks else nA)[None, None, nk], tXrA[None, None, nk])
                    wb.copy(s2r_B, (tXsB if kb + 1 < kblocks else nB)[None, None, nk], tXrB[None, None, nk])
                    if kb == 0:
                        nxt = kt + stages - 1
                        load_tile(g2s, tAgA, tAsA, tAcA, pA, wb.shape(A), nxt, nxt % stages, ktiles)
                        load_tile(g2s, tBgB, tBsB, tBcB, pB, wb.shape(B), nxt, nxt % stages, ktiles)
                        wb.cp_async_commit_group()
                    wb.gemm(mma, acc, rA[None, None, kb], rB[None, None, kb], acc)
        cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (bm, bn), (m0, n0))
        store_tile(acc, thr.partition_C(gC), thr.partition_C(cC), wb.shape(C))

    return gemm_smem


@wb.kernel
def block_tile(bid, mtiles, ntiles, group: wb.Constexpr):
    """The (m, n) tile that block `bid` computes (a 1-D grid): consecutive blocks walk `group` m-tiles down a column
    of tiles, then the next column, and after the last column the next band of `group` rows (the last band may be
    shorter), so that the blocks running together share B tiles and a band of A tiles in L2."""
    band = bid // (group * ntiles)
    rows = min(group, mtiles - band * group)
    r = bid - band * group * ntiles
    return band * group + r % rows, r // rows


@wb.kernel
def load_tile(g2s, tg, ts, tc, pred, extent, kt, stage, ktiles):
    """Issue the cp.async of k-tile kt into stage `stage`: one 16-byte chunk per atom call, zero-filled where
    the chunk starts outside the tensor or kt is past the last k-tile (K % 8 == 0: a chunk is all in or all out)."""
    src = tg[None, None, None, kt if kt < ktiles else 0]
    coords = tc[None, None, None, kt if kt < ktiles else 0]
    for i in range(wb.size(pred)):
        pred[i] = wb.elem_less(coords[i * 8], extent) and kt < ktiles
    wb.copy(g2s, src, ts[None, None, None, stage], pred=pred)


# -- the ladder ------------------------------------------------------------------------------------------------
class Rung:
    """One rung: its kernel, how to launch it on (A, B, C) device or host tensors, and the objects it uses."""

    def __init__(self, name, title, kernel, launch, mma=None, copies=None, smem=None, operands="fp16", config=None,
                 args=None, kernel_for=None):
        self.name, self.title, self.kernel, self.launch = name, title, kernel, launch
        self.mma, self.copies, self.smem, self.operands = mma, copies or {}, smem or {}, operands
        self.config = config
        self.args = args    # (a, b, c) -> the kernel's arguments, where they are not (a, b, c) themselves
        # the kernel that launch runs on those arguments (a Hopper rung picks its epilogue by C)
        self.kernel_for = kernel_for or (lambda ops: kernel)

    def __repr__(self):
        return f"Rung({self.name!r}: {self.title})"


def _grid(m, n, bm, bn):
    return (math.ceil(m / bm), math.ceil(n / bn), 1)


def _simt(a, b, c):
    m, n = c.shape
    examples.sgemm[examples.grid2(m, n, examples.MM, examples.MM)](a, b, c)


def ladder() -> list:
    """The rungs in order."""
    return [
        Rung("simt", "SIMT fp32 tiles (the floor)", examples.sgemm,
             checked("rung simt", (wb.Float32,), (wb.Float32,), _simt, b_is_kn=True), operands="fp32 (A, B^T)"),
        Rung("mma", "mma.sync, fragments from global memory", gemm_mma,
             checked("rung mma", (wb.Float16,), C_TYPES, lambda a, b, c: gemm_mma[
                 _grid(c.shape[0], c.shape[1], R2_TILE[0], R2_TILE[1]), (R2_MMA.size, 1, 1)](a, b, c)),
             mma=R2_MMA),
        _smem_rung("smem_ldmatrix", "tiles in shared memory, ldmatrix", SmemGemm(swizzle=False)),
        _smem_rung("swizzled", "+ the swizzle suggest_swizzle finds", SmemGemm(swizzle=True)),
        _smem_rung("pipelined", "+ 4-stage cp.async ring, 64x64 warp tiles, double-buffered fragments, grouped blocks",
                   PIPELINED),
    ]


_KERNELS: dict = {}
PIPELINED = SmemGemm(bm=128, bn=256, bk=64, warps=(2, 4), stages=4, group=8)   # benchmarks/results/gemm-sweep-H200.json


def smem_rung(cfg: SmemGemm, name="step", title=None):
    """A Rung that runs the shared-memory kernel of ``cfg`` (compiled once per configuration)."""
    return _smem_rung(name, title or repr(cfg), cfg)


def _smem_rung(name, title, cfg):
    k = _KERNELS.get(repr(cfg))
    if k is None:
        k = _KERNELS[repr(cfg)] = make_smem_gemm(cfg)
    return Rung(name, title, k,
                checked(f"rung {name}", (wb.Float16,), C_TYPES, lambda a, b, c: k[
                    (math.ceil(c.shape[0] / cfg.bm) * math.ceil(c.shape[1] / cfg.bn), 1, 1), (cfg.threads, 1, 1)](
                    a, b, c), k_major=True, k_multiple=8),
                mma=cfg.mma, copies={"A": cfg.s2r_A, "B": cfg.s2r_B, "g2s": cfg.g2s},
                smem={"A": cfg.smem_A, "B": cfg.smem_B}, config=cfg)


RUNGS = [r.name for r in ladder()]


def reference(a, b):
    """C = A @ B^T in float64 (numpy arrays)."""
    import numpy as np
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64).T
