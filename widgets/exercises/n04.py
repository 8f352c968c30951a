"""Exercises of 04 · the layout algebra: predict a composition, a complement, a ragged divide, a predicate, a product."""

import workbench as wb

from . import exercise

P = wb.parse_layout


@exercise("04.1", "Design: 6:2 is six elements two apart. Write the layout that views them as a 2x3 matrix, row-major "
                  "(element (i, j) is the (3i + j)-th of the six).",
          hint="compose 6:2 with the 2x3 row-major layout of indices: a step down (i) skips 3 of the six, a step "
               "across (j) one; each of them is 2 offsets; the answer has the matrix's shape (2,3)", shape=True)
def _():
    return wb.composition(P("6:2"), P("(2,3):(3,1)"))


@exercise("04.2", "A = (4,2):(1,8) reaches 0-3 and 8-11. complement(A, 32) lays out the copies of A that fill 0..31: "
                  "at which offset does the second copy start?",
          hint="the complement holds where the copies start, the first at 0; the next copy must fill the hole "
               "right after 0-3")
def _():
    return wb.complement(P("(4,2):(1,8)"), 32)(1)


@exercise("04.3", "What is the shape of wb.zipped_divide(wb.make_layout((50, 70)), (16, 32))? (a nested tuple)",
          hint="((tile), (number of tiles per mode)), and the number of tiles is a ceiling division")
def _():
    return wb.shape(wb.zipped_divide(wb.make_layout((50, 70)), (16, 32)))


@exercise("04.4", "A 50x70 tensor is cut into 16x32 tiles. In the last tile, (3, 2), how many rows and how many "
          "columns does elem_less keep? Answer (rows, columns).",
          hint="the last tile starts at coordinate (3*16, 2*32); count what lies below (50, 70)")
def _():
    shape = (50, 70)
    tile = wb.local_tile(wb.make_identity_tensor(shape), (16, 32), (3, 2))
    kept = [c for c in tile if wb.elem_less(c, shape)]
    return (len({c[0] for c in kept}), len({c[1] for c in kept}))


@exercise("04.5", "In logical_product(4:1, 3:2) (the tile 4:1, B = 3:2 picks copies), at which offset does the "
                  "third copy of the tile start?",
          hint="A* = complement(4:1, size(A)·cosize(B)) = copies 4 apart; B = 3:2 takes every second one: 0, 2, 4")
def _():
    return wb.logical_product(P("4:1"), P("3:2"))((0, 2))


@exercise("04.6", "Inverse: in make_layout_tv((4,8):(8,1), (1,4)), which thread holds element (2, 13) of the tile? "
                  "(right_inverse turns the TV layout around)",
          hint="the TV layout maps (t, v) to the element index m + 4n of the 4 x 32 tile; right_inverse maps the index "
               "back to t + 32 v")
def _():
    tiler, tv = wb.make_layout_tv(wb.make_layout((4, 8), stride=(8, 1)), wb.make_layout((1, 4)))
    return wb.right_inverse(tv)(wb.crd2idx((2, 13), tiler)) % 32
