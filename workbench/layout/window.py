"""Offsets of a rectangular window of a rank-2 layout, computed without evaluating the rest.

A view of a 10^8-cell layout draws a few thousand cells at a time: ``window_offsets(L, rows, cols)``
evaluates ``L(r, c)`` only for the given row and column indices, through the core's ``crd2idx`` applied
to whole index arrays at once (a rank-2 layout is the sum of its two modes, so a window costs
``len(rows) + len(cols)`` mode evaluations and one broadcast add).  ``offset_bounds`` gives the
smallest and largest offset from the strides alone.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .layout import Layout, check_int64_span, index_span, offset_span, offsets_at
from .swizzle import ComposedLayout, Swizzle
from .values import value_of

__all__ = ["mode_offsets", "window_offsets", "offset_bounds"]


def _indices(idx, n: int, what: str) -> np.ndarray:
    a = np.asarray(idx)
    if a.dtype.kind not in "iu" or a.ndim != 1:
        raise TypeError(f"Expected {what} as a 1-D integer array, but got {a.dtype} of shape {a.shape}.")
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"Expected {what} in [0, {n}), but got values {int(a.min())}..{int(a.max())}.")
    return a


def mode_offsets(shape, stride, idx) -> np.ndarray:
    """Offsets of the 1-D indices ``idx`` (colexicographic) in the mode ``shape:stride``: ``crd2idx`` on arrays."""
    shp, std = value_of(shape), value_of(stride)
    n = int(it.product(shp))
    idx = _indices(idx, n, "indices")
    return offsets_at(idx, it.flatten(shp), it.flatten(std),
                      f"offsets of the mode {it.format_inttuple(shape)}:{it.format_inttuple(stride)}", n - 1)


def _rank2(layout):
    if getattr(layout, "_is_f2", False):   # an F2 layout: its own shape
        if type(layout.shape) is not tuple or len(layout.shape) != 2:
            raise ValueError(f"Expected a rank-2 layout (rows, columns), but got {layout} of rank {layout.rank}.")
        return layout
    outer = layout.outer if type(layout) is ComposedLayout else layout
    if type(outer) is not Layout:
        raise TypeError(f"Expected a wb.Layout or wb.ComposedLayout, but got {type(layout).__name__}.")
    if type(outer.shape) is not tuple or len(outer.shape) != 2:
        raise ValueError(f"Expected a rank-2 layout (rows, columns), but got {layout} of rank {outer.rank}.")
    return outer


def window_offsets(layout, rows, cols) -> np.ndarray:
    """``out[i, j] = layout(rows[i], cols[j])`` for a rank-2 layout (a swizzled one applies its swizzle; an F2
    layout XORs its two modes' offsets)."""
    outer = _rank2(layout)
    if outer is layout and getattr(layout, "_is_f2", False):   # L(r, c) = L[0](r) ^ L[1](c)
        r = layout[0].offsets_at(_indices(rows, layout[0].size, "rows"))
        c = layout[1].offsets_at(_indices(cols, layout[1].size, "columns"))
        return r[:, None] ^ c[None, :]
    r = mode_offsets(outer.shape[0], outer.stride[0], rows)
    c = mode_offsets(outer.shape[1], outer.stride[1], cols)
    span = offset_span(outer)
    what = f"window_offsets of {layout}"
    if span is not None:  # each mode fits int64; their sum must too
        check_int64_span(what, *span)
    out = r[:, None] + c[None, :]
    if type(layout) is ComposedLayout:
        out = layout.inner_at(out, what)
    return out


def offset_bounds(layout) -> tuple[int, int]:
    """(smallest, largest) offset over the whole domain, from the strides (no enumeration).

    A swizzle only flips bits at or below the highest bit the offsets already reach, so a swizzled
    layout's bounds are those of its outer layout widened to whole powers of two.  An F2 layout's are
    0 and its largest XOR of bases (exact, from their echelon form).
    """
    if getattr(layout, "_is_f2", False):
        return 0, layout.cosize - 1
    if type(layout) is ComposedLayout:
        lo, hi = offset_span(layout.outer) or (0, 0)
        lo, hi = lo + int(layout.offset), hi + int(layout.offset)
        if type(layout.inner) is Swizzle:
            return (0 if lo >= 0 else lo), (1 << max(int(hi), 1).bit_length()) - 1
        if lo < 0:
            raise ValueError(f"offset_bounds of {layout}: expected offset + outer(c) >= 0 to index the inner layout "
                             f"{layout.inner}, but it reaches {lo}.")
        # a bound: the inner layout's span, its last mode extended (as crd2idx does) to reach the index hi
        return index_span(it.flatten(value_of(layout.inner.shape)), it.flatten(value_of(layout.inner.stride)), hi)
    if type(layout) is not Layout:
        raise TypeError(f"Expected a wb.Layout or wb.ComposedLayout, but got {type(layout).__name__}.")
    return offset_span(layout) or (0, 0)
