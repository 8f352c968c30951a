"""Exercises of notebook 11: Hopper, TMA boxes, GMMA descriptors and the mbarrier ring.

Every reference is computed from the objects the Hopper rung's kernel uses (``HopperGemm``: its tiled GMMA, its
staged shared layouts, its TMA boxes), or, for the ring's parities, from a model that counts the phases each
mbarrier completes (a test checks the model against the kernel's own formulas and the CPU executor).
"""

import numpy as np

from workbench.atoms.gmma_desc import make_gmma_desc
from workbench.kernels.gemm_hopper import HopperGemm

from . import exercise


def desc_of(cfg: HopperGemm, which: str, mma_thread: int, kb: int, stage: int):
    """The GMMA descriptor ``wb.gemm`` builds for k-block ``kb`` of ``stage`` of operand ``which`` ('A' or 'B'), as
    seen by thread ``mma_thread`` of the tiled MMA (its warpgroup picks the 64-row slab of A)."""
    thr = cfg.mma.get_slice(mma_thread)
    part = getattr(thr, "partition_" + which)(cfg.smem[which])          # (V, M, K, stage)
    mn = 64 if which == "A" else cfg.bn
    return make_gmma_desc(part(None, 0, kb, stage), cfg.dtype.bits, "K", mn, cfg.atom.shape_mnk[2])


@exercise("11.1", "For HopperGemm(bm=128, bn=64, bk=32, stages=2) (K-major SW64 tiles), what are the start address and "
                  "the SBO, in bytes, of the descriptor of A that consumer warpgroup 1 (the tiled MMA's threads "
                  "128-255) uses for k-block 1 of stage 1? Answer (start, SBO).",
          hint="the start is where element (0, 0) of that 64 x 16 slice lies in the staged tile (m, k, stage), in "
               "bytes: whole stages, then warpgroup 1's 64 rows, then one k-block of 16 halves; SBO is the distance "
               "from one 8-row group of the atom to the next (8 rows of 64 bytes)")
def _():
    d = desc_of(HopperGemm(bm=128, bn=64, bk=32, stages=2), "A", 128, 1, 1)
    return (d.start, d.sbo)


@exercise("11.2", "How many bytes must the producer announce with mbarrier_arrive_and_expect_tx for one stage of the "
                  "H200 rung, HopperGemm() (128 x 256 x 64, fp16)?",
          hint="the stage's two TMA boxes (tma.nbytes each: A's bm x bk and B's bn x bk), counted whole even where a "
               "box reaches past the tensor")
def _():
    cfg = HopperGemm()
    nbytes = cfg.dtype.bits // 8
    a = np.zeros((cfg.bm, cfg.bk), np.float16 if nbytes == 2 else np.float32)
    b = np.zeros((cfg.bn, cfg.bk), a.dtype)
    ta, tb = cfg.tma(a, b)
    return ta.nbytes + tb.nbytes


def ring_waits(stages: int, it: int) -> tuple:
    """(stage, parity the producer waits for on empty[stage] (None: no wait), parity the consumers wait for on
    full[stage]) at the ring's iteration ``it``, by counting the phases each mbarrier completes.

    A wait with parity p returns once the mbarrier's phase of that parity has completed: waiting for the phase
    numbered n (0, 1, 2, ... since init) is a wait with parity n % 2.  full[s] completes a phase per fill (the
    producer's arrival plus the bytes); empty[s] completes one per release (every consumer warpgroup's arrival)."""
    fills = [0] * stages               # fills of each stage so far: full[s]'s next phase number
    releases = [0] * stages            # releases so far: empty[s]'s completed phases
    for i in range(it + 1):
        s = i % stages
        u = fills[s]                   # this is the stage's fill number u
        producer = None
        if u > 0:                      # refilling: wait for the release of fill u - 1, empty[s]'s phase u - 1
            assert releases[s] == u    # (the model runs the consumers ahead: every earlier fill is released)
            producer = (u - 1) % 2
        consumer = u % 2               # the bytes of fill u complete full[s]'s phase u
        fills[s] += 1
        releases[s] += 1               # the consumers release it after use
    return (s, producer, consumer)


@exercise("11.3", "In a ring of 4 stages, the producer's iteration it = 13 (counted from 0 across k-tiles): which "
                  "stage does it fill, with which parity does it wait on empty[stage], and with which parity do the "
                  "consumers wait on full[stage] for that k-tile? Answer (stage, producer parity, consumer parity).",
          hint="a stage is filled every 4 iterations: count which fill of its stage this is (u); the consumers wait "
               "for full's phase u, the producer for the release of fill u - 1 (empty's phase u - 1); a wait names "
               "a phase by its parity, phase number % 2")
def _():
    return ring_waits(4, 13)
