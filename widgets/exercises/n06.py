"""Exercises of notebook 06: MMA and copy atoms, tiled MMA and tiled copy."""

import workbench as wb

from . import exercise

_SM80 = "SM80_16x8x16_F32F16F16F32_TN"
_K_MAJOR_ATOMS = tuple(f"Layout_K_{kind}_Atom" for kind in ("INTER", "SW32", "SW64", "SW128"))


def _ldmatrix_A_k32():
    """The ldmatrix.x4 copy of A for a (2,2,1) tiled SM80 MMA over 32 x 32 x 32, and its row-major smem tile."""
    mma = wb.make_tiled_mma(wb.mma_atom(_SM80), wb.make_layout((2, 2, 1)), (32, 32, 32))
    copy = wb.make_tiled_copy_A(wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16), mma)
    return copy, wb.make_layout((32, 32), stride=(32, 1))


@exercise("06.1", "Which (m, n) of C does thread 9 hold as value 2 of SM80_16x8x16_F32F16F16F32_TN?",
          hint="C is ((4,8),(2,2)):((32,1),(16,8)): the row is t // 4, plus 8 for the second value pair; the columns "
               "are 2*(t % 4) and one more")
def _():
    return wb.idx2crd(wb.mma_atom(_SM80).tv_layout_C((9, 2)), (16, 8))


@exercise("06.2", "How many threads, and which tile (M, N, K), has make_tiled_mma(SM80 16x8x16, (2,4,1))?",
          hint="a warp per atom; the atoms tile M by 2 and N by 4, and without a permutation the tile is the atom's "
               "shape times the atom grid")
def _():
    mma = wb.make_tiled_mma(wb.mma_atom(_SM80), wb.make_layout((2, 4, 1)))
    return (mma.size, tuple(mma.tile_shape_mnk))


@exercise("06.3", "How many ways is the worst ldmatrix conflict on a row-major fp16 A tile with K = 32 (64-byte rows)?",
          hint="a phase is one 8x8 matrix: 8 consecutive rows, the same 16 bytes of each; with 64-byte rows, two rows "
               "fit in 128 bytes before the banks repeat")
def _():
    copy, smem = _ldmatrix_A_k32()
    return wb.bank_conflicts(copy, smem).max_ways


@exercise("06.4", "Which K-major GMMA atom has the swizzle suggest_swizzle picks for the K = 32 fp16 tile?",
          hint="a 64-byte row holds 4 chunks of 16 bytes, so 2 swizzle bits are enough; compare with "
               "wb.gmma_smem_atom(name, wb.Float16).inner")
def _():
    copy, smem = _ldmatrix_A_k32()
    found = wb.suggest_swizzle(copy, smem, wb.Float16).swizzle
    return next(n for n in _K_MAJOR_ATOMS if wb.gmma_smem_atom(n, wb.Float16).inner == found)


@exercise("06.5", "Inverse: in the SM80 16x8x16 atom, which thread holds C(10, 5), and as which value? Answer "
                  "(thread, value).",
          hint="right_inverse(atom.tv_layout_C) maps the element index m + 16 n back to t + 32 v; or read the pattern: "
               "row m is held by threads 4 (m mod 8) .. 4 (m mod 8) + 3, column n by t mod 4 = n // 2")
def _():
    i = wb.right_inverse(wb.mma_atom(_SM80).tv_layout_C)(wb.crd2idx((10, 5), (16, 8)))
    return (i % 32, i // 32)


@exercise("06.6", "Design: which atom grid (m, n, 1) of SM80 16x8x16 atoms, with no permutation, makes a tiled MMA "
                  "whose tile is 64 x 16 x 16? Answer a tuple.",
          hint="without a permutation the tile is the atom's 16 x 8 x 16 times the grid, and each atom is one warp")
def _():
    for m in range(1, 9):
        for n in range(1, 9):
            mma = wb.make_tiled_mma(wb.mma_atom(_SM80), wb.make_layout((m, n, 1)))
            if tuple(mma.tile_shape_mnk) == (64, 16, 16):
                return (m, n, 1)
