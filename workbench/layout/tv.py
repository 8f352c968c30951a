"""Thread/value layouts: which thread owns which element of a tile (CuTe DSL's make_layout_tv)."""

from __future__ import annotations

from .algebra import LayoutAlgebraError, _layout, composition, product_each, right_inverse
from .layout import Layout
from .tiling import raked_product

__all__ = ["make_layout_tv"]


def make_layout_tv(thr_layout, val_layout):
    """``(tiler_mn, layout_tv)`` as CuTe DSL's ``make_layout_tv(thr_layout, val_layout)``.

    ``layout_mn = raked_product(thr_layout, val_layout)`` maps a tile coordinate (m, n) to
    (thread, value) index ``t + v*size(thr)``; ``layout_tv = right_inverse(layout_mn) o
    make_layout((size(thr), size(val)))`` maps (thread, value) back to the column-major
    index of the element in the ``tiler_mn = product_each(shape(layout_mn))`` tile.
    Guarantee: ``layout_mn(layout_tv(t, v)) == t + v*size(thr)`` for every t, v, so every
    element of the tile is owned by exactly one (thread, value).  Both layouts must be static.
    """
    thr_layout, val_layout = _layout(thr_layout, "make_layout_tv"), _layout(val_layout, "make_layout_tv")
    for name, lay in (("thr_layout", thr_layout), ("val_layout", val_layout)):
        if not lay.is_static:
            raise LayoutAlgebraError(f"make_layout_tv: {name} {lay} must be static (CuTe DSL needs it at compile time).")
    layout_mn = raked_product(thr_layout, val_layout)
    nt, nv = thr_layout.size, val_layout.size
    layout_tv = composition(right_inverse(layout_mn), Layout((nt, nv)))   # CuTe: with_shape(make_shape(nt, nv))
    if layout_tv.size != nt * nv or right_inverse(layout_mn).size < nt * nv:
        raise LayoutAlgebraError(
            f"make_layout_tv({thr_layout}, {val_layout}): the raked product {layout_mn} is not a bijection "
            f"onto its tile, so threads and values do not cover it exactly once.")
    return product_each(layout_mn.shape), layout_tv
