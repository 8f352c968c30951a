"""Exercises of 04 · the layout algebra: predict a composition, a complement, a ragged divide, a predicate, a product."""

import workbench as wb

from . import exercise

P = wb.parse_layout


@exercise("04.1", "Read 6:2 as a 2x3 row-major matrix: what is the composition 6:2 ∘ (2,3):(3,1)?",
          hint="R(i) = A(B(i)): a step of B's stride 3 is 3 elements of A, each 2 apart; R has B's shape", shape=True)
def _():
    return wb.composition(P("6:2"), P("(2,3):(3,1)"))


@exercise("04.2", "What is the complement of (4,2):(1,8) up to M = 32?",
          hint="sort A's modes by stride, fill the hole below each one, then repeat up to M = 32 "
               "(wb.explain(wb.complement, ...) shows the steps)")
def _():
    return wb.complement(P("(4,2):(1,8)"), 32)


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


@exercise("04.5", "What is the logical product of the tile 4:1 with 3:2?",
          hint="A ⊗ B = (A, A* ∘ B) with A* = complement(A, size(A)·cosize(B)): B picks copies 0, 2, 4 of A")
def _():
    return wb.logical_product(P("4:1"), P("3:2"))
