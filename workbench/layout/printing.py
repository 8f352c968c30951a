"""``print_layout``: a layout as CuTe's text grid, for terminals and plain outputs.

The format is CuTe C++'s ``print_layout`` (cute/util/print_tensor.hpp) character for character: the
layout, a header of column indices, then each row ``m`` between ``+---+`` rules with the offsets
``L(m, n)`` right-aligned in cells as wide as the digits of ``cosize(L)``.  CuTe accepts rank 2 only;
here a rank-1 layout gets CuTe's ``1:0`` column mode appended (as ``print_latex`` does) and a
rank > 2 layout keeps mode 0 as rows and its other modes, colexicographically, as columns.  A text
grid must enumerate every cell, so layouts of more than ``MAX_PRINTED_CELLS`` cells are refused.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .layout import Layout
from .swizzle import ComposedLayout
from .values import value_of
from .window import window_offsets

__all__ = ["print_layout", "format_layout", "MAX_PRINTED_CELLS"]

MAX_PRINTED_CELLS = 1 << 16
_DELIM = "+-----------------------"


def _as_rank2(layout):
    """(rank-2 layout with the same offsets, rows, cols) following the module's folding rule."""
    if getattr(layout, "_is_f2", False):   # an F2 layout: rows are mode 0, columns the rest (XOR of the two)
        from .f2 import F2Layout

        shp, bs = layout.shape, layout.bases
        if type(shp) is not tuple:
            shp, bs = (shp, 1), (bs, ())
        elif len(shp) == 0:
            shp, bs = (1, 1), ((), ())
        elif len(shp) == 1:
            shp, bs = (shp[0], 1), (bs[0], ())
        elif len(shp) > 2:
            shp, bs = (shp[0], shp[1:]), (bs[0], bs[1:])
        folded = F2Layout(shp, bs)
        return folded, folded[0].size, folded[1].size
    outer = layout.outer if type(layout) is ComposedLayout else layout
    if type(outer) is not Layout:
        raise TypeError(f"Expected a wb.Layout or wb.ComposedLayout, but got {type(layout).__name__}.")
    shp, std = outer.shape, outer.stride
    if type(shp) is not tuple:
        shp, std = (shp, 1), (std, 0)
    elif len(shp) == 0:
        shp, std = (1, 1), (0, 0)
    elif len(shp) == 1:
        shp, std = (shp[0], 1), (std[0], 0)
    elif len(shp) > 2:
        shp, std = (shp[0], shp[1:]), (std[0], std[1:])
    folded = Layout(shp, std)
    if type(layout) is ComposedLayout:
        folded = ComposedLayout(layout.inner, layout.offset, folded)
    rows, cols = (int(it.product(value_of(s))) for s in shp)
    return folded, rows, cols


def _num_digits(x: int) -> int:
    """CuTe's num_digits: 1 below 10, ..., 10 from 10^9 on."""
    n = 1
    while n < 10 and x >= 10 ** n:
        n += 1
    return n


def format_layout(layout) -> str:
    """The text ``print_layout`` writes (ending with a newline)."""
    folded, nr, nc = _as_rank2(layout)
    if nr * nc > MAX_PRINTED_CELLS:
        raise ValueError(f"Expected a layout of at most {MAX_PRINTED_CELLS} cells to print as text, but got "
                         f"{layout} with {nr * nc}; use widgets.LayoutView for large layouts.")
    off = window_offsets(folded, np.arange(nr), np.arange(nc))
    cosize = int(off.max()) + 1 if off.size else 0
    w = _num_digits(cosize) + 2
    rule = "    " + _DELIM[: w + 1] * nc + "+\n"
    out = [f"{layout}\n", "    " + "".join(f"  {n:>{w - 2}d} " for n in range(nc)) + "\n"]
    for m in range(nr):
        out.append(rule)
        out.append(f"{m:>2d}  " + "".join(f"| {int(v):>{w - 2}d} " for v in off[m]) + "|\n")
    out.append(rule)
    return "".join(out)


def print_layout(layout) -> None:
    """Print a layout as CuTe's ``print_layout`` does: a grid of its offsets, rows by columns."""
    print(format_layout(layout), end="")
