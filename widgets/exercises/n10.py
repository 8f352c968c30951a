"""Exercises of notebook 10: tensor cores from Python, the GEMM ladder.

10.3 and 10.7 are design tasks and 10.5 a find-the-bug task: their answers are objects (a TiledMMA, an SmemGemm,
the learner's fixed kernel), judged by what they build or compute: the kernel is run on the CPU executor.  Their
references are the real objects; nothing else passes for them (a tuple restating a reference's fields is refused), and a wrong one is told that it is wrong, never
which way.  ``ring_rowsum`` is the kernel of 10.5 exactly as notebook 10 shows it (a test keeps the two equal).
"""

import re

import numpy as np

import workbench as wb
from workbench.atoms.tiled import TiledMMA
from workbench.dsl.runtime.launch import Kernel
from workbench.kernels import gemm_ladder as G
from workbench.kernels.arithmetic import gemm_arithmetic

from . import Verdict, exercise
from .n05 import _bms

_ATOM = G.SM80_F16


def _rung(name):
    return next(r for r in G.ladder() if r.name == name)


@exercise("10.1", "What is the shape of thread 0's A fragment for one k-tile of the pipelined rung (partition_A of its "
                  "bm x bk block k-tile of A)?",
          hint="(V, M, K): the atom's 8 values of A as (2,2,2), then how often the tiled MMA's tile (rung.mma."
               "tile_shape_mnk) repeats down the block's M and along its K")
def _():
    r = _rung("pipelined")
    return r.mma.get_slice(0).partition_A(wb.make_layout((r.config.bm, r.config.bk))).shape


@exercise("10.2", "Which thread of the pipelined rung's tiled MMA holds C(20, 45) of its 32 x 64 tile, and as which "
                  "value?",
          hint="right_inverse(mma.tv_layout_C_tiled) maps the tile's column-major index m + 32*n to the TV index "
               "thread + 256*value; or by hand: which 16 x 8 atom of which warp (warps go down M first, each repeats "
               "its atom along N), then the lane 4*(row % 8) + (col % 8) // 2")
def _():
    mma = _rung("pipelined").mma
    tv = mma.tv_layout_C_tiled
    m, n, _ = mma.tile_shape_mnk
    i = wb.right_inverse(tv)(wb.crd2idx((20, 45), (m, n)))
    return wb.idx2crd(i, (wb.size(tv[0]), wb.size(tv[1])))


def _design(answer):
    """A TiledMMA is judged by its atom, atom layout, threads and tile; anything else is refused."""
    if type(answer) is not TiledMMA:
        return Verdict(f"10.3: expected a TiledMMA built with wb.make_tiled_mma(...), but got {type(answer).__name__}.",
                       False)
    return ("TiledMMA", answer.atom.name, tuple(answer.atom_layout_mnk.shape), answer.size,
            tuple(answer.tile_shape_mnk))


@exercise("10.3", "Design a TiledMMA of SM80_16x8x16_F32F16F16F32_TN with the pipelined rung's warps (config.warps along "
                  "M and N) whose tile covers its whole bm x bn block tile of C per k16 step.",
          hint="the atom layout counts the warps along M, N and K; without a permutation the tile is only the atoms "
               "side by side (16 x 8 x 16 each); permutation_mnk sets the tile the warps repeat their atom over",
          accept=_design, objects=True)
def _():
    cfg = _rung("pipelined").config
    return wb.make_tiled_mma(wb.mma_atom(_ATOM), wb.make_layout((*cfg.warps, 1)), (cfg.bm, cfg.bn, 16))


def _ways_and_swizzle(answer):
    if type(answer) not in (tuple, list) or len(answer) != 2:
        return Verdict(f"10.4: expected a pair (ways, swizzle): the conflict's ways as an int and the swizzle as "
                       f"(B, M, S), 'S<B,M,S>' or a wb.Swizzle, but got {type(answer).__name__}.", False)
    return (answer[0], _bms(answer[1]))


@exercise("10.4", "For SmemGemm(bk=16) (a 128 x 16 fp16 tile: 32-byte rows), how many ways do the ldmatrix reads of A "
                  "conflict on the row-major tile, and which swizzle (B, M, S) does wb.suggest_swizzle find? Answer "
                  "(ways, swizzle).",
          hint="a phase of ldmatrix reads the same 16 bytes of 8 consecutive rows: count the rows that fit in 128 "
               "bytes of banks, and which rows then share banks (wb.bank_conflicts(copy, tile).max_ways); the swizzle "
               "must keep each 16-byte chunk (8 halves) whole and XOR the row bit that tells those rows apart into "
               "the chunk index of the row",
          accept=_ways_and_swizzle)
def _():
    cfg = G.SmemGemm(bk=16)
    plain = wb.make_layout((cfg.bm, cfg.bk), stride=(cfg.bk, 1))
    s = wb.suggest_swizzle(cfg.s2r_A, plain, wb.Float16).swizzle
    return (wb.bank_conflicts(cfg.s2r_A, plain).max_ways, (s.bits, s.base, s.shift))


# -- 10.5: the kernel with the bug (notebook 10 shows exactly this source) -----------------------------------
STAGES = 3
ROWS = wb.make_tiled_copy(wb.copy_atom("SM80_CP_ASYNC_CACHEGLOBAL", wb.Float16), wb.make_layout((32, 1)),
                          wb.make_layout((1, 8)))


@wb.kernel
def ring_rowsum(x, out):
    """out[r]: the sum of row (r + 1) % 32 of every 32 x 8 tile of x, the tiles streamed through a 3-stage ring."""
    t = wb.thread_idx().x
    ring = wb.shared_tensor(wb.Float16, wb.make_layout((32, 8, STAGES), stride=(8, 1, 256)))
    tiles = wb.local_tile(x, (32, 8), (None, 0))                 # (32, 8, number of tiles)
    ntiles = wb.size(tiles, mode=2)
    g = ROWS.get_slice(t)
    src, dst = g.partition_S(tiles), g.partition_D(ring)
    for s in range(STAGES - 1):                                  # (a) the prologue: tiles 0 .. STAGES-2
        if s < ntiles:
            wb.copy(ROWS, src[None, None, None, s], dst[None, None, None, s])
        wb.cp_async_commit_group()
    acc = 0.0
    for kt in wb.range_dynamic(ntiles):
        wb.cp_async_wait_group(STAGES - 2)                       # (b)
        wb.sync_threads()                                        # (c)
        for j in range(8):
            acc += ring[(t + 1) % 32, j, kt % STAGES]
        nxt = kt + STAGES - 1
        if nxt < ntiles:
            wb.copy(ROWS, src[None, None, None, nxt], dst[None, None, None, nxt % STAGES])   # (d)
            wb.cp_async_commit_group()                           # (e)
    out[t] = acc


def ring_input(ntiles, seed=0):
    """x (ntiles*32 x 8 fp16 small integers, 16-byte aligned) and the rowsums ring_rowsum should give."""
    x = np.random.default_rng(seed).integers(-4, 5, (ntiles * 32, 8)).astype(np.float16)
    want = x.astype(np.float64).reshape(ntiles, 32, 8).sum(axis=(0, 2))[(np.arange(32) + 1) % 32]
    return x, want


RIGHT = "exact for every number of tiles, two tiles in flight"
TILE_COUNTS = (1, 2, 3, 4, 7)


def run_ring(kernel) -> str:
    """Run a ring kernel (x, out) on the CPU executor for several numbers of tiles: RIGHT where every sum is exact
    and it waits with wait_group(STAGES - 2) only (two tiles in flight), else what went wrong."""
    wrong = []
    for n in TILE_COUNTS:
        x, want = ring_input(n, seed=n)
        out = np.zeros(32, np.float32)
        kernel[1, 32](wb.from_dlpack(x, assumed_align=16), out)
        if not np.array_equal(out, want):
            wrong.append(n)
    if wrong:
        return f"the sums are wrong for {len(wrong)} of the {len(TILE_COUNTS)} numbers of tiles tried"
    x, _ = ring_input(3)
    code = wb.show_code(kernel, wb.from_dlpack(x, assumed_align=16), np.zeros(32, np.float32))
    waits = set(re.findall(r"cp\.async\.wait_group (\d+)", code))
    if waits != {str(STAGES - 2)}:
        return (f"the sums are right, but it waits with wait_group {', '.join(sorted(waits))}: the fix keeps "
                f"wait_group(STAGES - 2), two tiles in flight")
    return RIGHT


def _fixed_ring(answer):
    if type(answer) is not Kernel:
        return Verdict(f"10.5: expected your fixed ring_rowsum (the @wb.kernel function, edited and re-run), but got "
                       f"{type(answer).__name__}.", False)
    got = run_ring(answer)
    if got == RIGHT:
        return Verdict("10.5: right: exact for every number of tiles tried, two tiles in flight.", True)
    return Verdict(f"10.5: not yet: {got}. Hint: {_HINT_10_5}", False)


_HINT_10_5 = ("cp.async.wait_group counts committed groups, not tiles: count the groups a thread has committed when it "
              "waits at (b) in the last iterations, and which tile the newest of them holds")


@exercise("10.5", "Fix ring_rowsum (the fix keeps wait_group(STAGES - 2), two tiles in flight) and pass the fixed "
                  "kernel: check('10.5', ring_rowsum).",
          hint=_HINT_10_5, accept=_fixed_ring, objects=True)
def _():
    @wb.kernel
    def fixed(x, out):
        t = wb.thread_idx().x
        ring = wb.shared_tensor(wb.Float16, wb.make_layout((32, 8, STAGES), stride=(8, 1, 256)))
        tiles = wb.local_tile(x, (32, 8), (None, 0))
        ntiles = wb.size(tiles, mode=2)
        g = ROWS.get_slice(t)
        src, dst = g.partition_S(tiles), g.partition_D(ring)
        for s in range(STAGES - 1):
            if s < ntiles:
                wb.copy(ROWS, src[None, None, None, s], dst[None, None, None, s])
            wb.cp_async_commit_group()
        acc = 0.0
        for kt in wb.range_dynamic(ntiles):
            wb.cp_async_wait_group(STAGES - 2)
            wb.sync_threads()
            for j in range(8):
                acc += ring[(t + 1) % 32, j, kt % STAGES]
            nxt = kt + STAGES - 1
            if nxt < ntiles:
                wb.copy(ROWS, src[None, None, None, nxt], dst[None, None, None, nxt % STAGES])
            wb.cp_async_commit_group()       # a group every iteration, empty or not: the count stays in step
        out[t] = acc

    results = [run_ring(ring_rowsum) == RIGHT, run_ring(fixed) == RIGHT]
    if results != [False, True]:
        raise AssertionError(f"10.5: the buggy kernel should fail and the fixed one pass, got {results}")
    return fixed


@exercise("10.6", "How many mma.sync instructions does one warp of the pipelined rung issue per k-tile?",
          hint="a warp's share of the block tile of C, in 16 x 8 atoms, times the k16 steps of one bk-wide k-tile")
def _():
    r = _rung("pipelined")
    cfg = r.config
    _, m, n = r.mma.get_slice(0).partition_C(wb.make_layout((cfg.bm, cfg.bn))).shape
    return m * n * (cfg.bk // r.mma.atom.shape_mnk[2])


def _smem_design(answer):
    if type(answer) is not G.SmemGemm:
        return Verdict(f"10.7: expected a configuration built with G.SmemGemm(...), but got {type(answer).__name__}.",
                       False)
    return ("SmemGemm", answer.bm, answer.bn, answer.bk, answer.warps, answer.stages)


@exercise("10.7", "Design: build the SmemGemm of 128 x 256 block tiles, 8 warps (2, 4) and k-tiles of bk = 32 with the "
                  "most stages that fit in the 227 KiB a block may use.",
          hint="one stage holds a bm x bk tile of A and a bn x bk tile of B, 2 bytes an element; the ring is stages of "
               "them; gemm_arithmetic(cfg, M, N, K) prints the budget of any configuration you build",
          accept=_smem_design, objects=True)
def _():
    g = gemm_arithmetic(G.SmemGemm(bm=128, bn=256, bk=32, warps=(2, 4)), 4096, 4096, 4096)
    return G.SmemGemm(bm=128, bn=256, bk=32, warps=(2, 4), stages=g.max_stages)
