"""The drawable state of a coordinate grid, shared by the canvas widget and the SVG renderer.

A :class:`Grid` is plain data: ``rows x cols`` cells, each with a numeric *key* (the value a
click selects and hover reports: an offset for a layout, a thread id for a TV layout), a text
label and a palette index.  Rows and columns carry their coordinate labels and the periods at
which nested sub-modes start a new group, so the nesting of a mode like ``(2,3)`` shows as
heavier rules every 2 cells.  Nothing here imports a Jupyter package.

:func:`fold_layout` turns any Layout into such a grid the way CuTe prints layouts: a rank-2
layout ``(M,N)`` is ``M`` rows by ``N`` columns with cell ``(m,n) = L(m,n)``; a rank-1 layout
is one column (``print_latex`` appends ``1:0``); a rank-r layout with r > 2 keeps mode 0 as
rows and folds modes ``1..r-1`` into one nested column mode, colexicographically.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.layout import ComposedLayout, Dyn, Layout
from workbench.layout import inttuple as it

# ColorBrewer Set3 (12 qualitative pastels): neighbouring offsets stay distinguishable and
# black labels stay readable on every entry.
PALETTE = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
    "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
)
# CuTe's print_latex_tv thread colours (TikzColor_TV), in its order.
TV_PALETTE = (
    "#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2",
)
COLOR_BY = ("offset", "row", "column", "layout")


@dataclass
class Axis:
    """One axis of the grid: the layout mode drawn along it and its per-cell labels."""

    title: str            # the mode as CuTe prints it, e.g. "(2,?):(1,?{i64}) = (2,8):(1,16)"
    labels: list          # coordinate of each cell along this axis, as text
    groups: list          # periods (in cells) of nested sub-mode boundaries, innermost first
    dynamic: bool         # whether any shape or stride leaf of the mode is dynamic

    @property
    def n(self) -> int:
        return len(self.labels)


@dataclass
class Grid:
    """Everything needed to draw one grid, row-major over ``rows x cols``.

    ``keys`` is float64 so that a missing cell (NaN: a tile position no thread owns) fits next to
    exact integers below 2**53; ``colors`` indexes ``palette``.
    """

    title: str
    rows: Axis
    cols: Axis
    keys: np.ndarray                  # float64 (rows*cols,)
    colors: np.ndarray                # uint8 (rows*cols,)
    texts: list | None = None         # per-cell labels; None: the integer key
    palette: tuple = PALETTE
    selected: float | None = None     # key whose cells are highlighted
    key_name: str = "offset"
    notes: list = field(default_factory=list)

    @property
    def shape(self) -> tuple:
        return (self.rows.n, self.cols.n)

    def text(self, i: int) -> str:
        if self.texts is not None:
            return self.texts[i]
        k = self.keys[i]
        return "" if k != k else str(int(k))


def _is_dynamic(t) -> bool:
    return any(type(x) is Dyn for x in it.flatten(t))


def _mode_title(shape, stride) -> str:
    return f"{it.format_inttuple(shape)}:{it.format_inttuple(stride)}"


def axis_of(shape, stride) -> Axis:
    """The axis for one (possibly nested) mode: natural coordinates as labels, nesting periods."""
    flat = [int(s) for s in it.flatten(it_values(shape))]
    n = int(np.prod(flat)) if flat else 1
    if type(shape) is tuple and len(it.flatten(shape)) > 1:
        vshape = it_values(shape)
        labels = [it.format_inttuple(it.idx2crd(i, vshape)) for i in range(n)]
    else:
        labels = [str(i) for i in range(n)]
    groups, p = [], 1
    for s in flat[:-1]:
        p *= s
        if 1 < p < n:
            groups.append(p)
    dynamic = _is_dynamic(shape) or _is_dynamic(stride)
    title = _mode_title(shape, stride)
    if dynamic:  # the ? notation first, then what this live tensor holds
        title += f" = {_mode_title(it_values(shape), it_values(stride))}"
    return Axis(title, labels, groups, dynamic)


def it_values(t):
    """Runtime values of an IntTuple; a symbolic ``?`` cannot be drawn and says so."""
    if type(t) is tuple:
        return tuple(it_values(e) for e in t)
    if type(t) is Dyn:
        if t.value is None:
            raise ValueError(f"Expected a dynamic value with a runtime value to draw, but got the symbolic {t!r}.")
        return t.value
    return t


def fold(layout: Layout) -> tuple[Layout, Layout]:
    """Split a layout into (row mode, column mode) as described in the module docstring.
    A swizzled (composed) layout folds as its outer shape:stride; its offsets are the swizzled ones."""
    if type(layout) is ComposedLayout:
        layout = layout.outer
    if type(layout) is not Layout:
        raise TypeError(f"Expected a wb.Layout, but got {type(layout).__name__}.")
    shp, std = layout.shape, layout.stride
    if type(shp) is not tuple:
        return layout, Layout(1, 0)
    if len(shp) == 0:  # the empty layout ():() is one element at offset 0
        return Layout(1, 0), Layout(1, 0)
    if len(shp) == 1:
        return Layout(shp[0], std[0]), Layout(1, 0)
    if len(shp) == 2:
        return Layout(shp[0], std[0]), Layout(shp[1], std[1])
    return Layout(shp[0], std[0]), Layout(shp[1:], std[1:])


def folded_offsets(layout: Layout) -> np.ndarray:
    """Offsets as a (rows, cols) array: cell (r, c) holds L(r + rows*c), which is L(r, c) after folding."""
    rmode, cmode = fold(layout)
    nr, nc = int(it.product(it_values(rmode.shape))), int(it.product(it_values(cmode.shape)))
    # offsets() evaluates runtime values of Dyn leaves and refuses symbolic ones
    it_values(layout.shape), it_values(layout.stride)
    return layout.offsets().reshape(nc, nr).T


def color_indices(color_by: str, offsets2d: np.ndarray, color_layout: Layout | None, ncolors: int) -> np.ndarray:
    """Palette index of each cell (row-major), by offset, row, column or a colour layout.

    A colour layout ``C`` of the same size colours cell ``(r, c)`` with ``C(r + rows*c) mod P``,
    i.e. it is evaluated at the same coordinate as the drawn layout.
    """
    nr, nc = offsets2d.shape
    if color_by == "offset":
        idx = offsets2d
    elif color_by == "row":
        idx = np.broadcast_to(np.arange(nr)[:, None], (nr, nc))
    elif color_by == "column":
        idx = np.broadcast_to(np.arange(nc)[None, :], (nr, nc))
    elif color_by == "layout":
        if color_layout is None:
            raise ValueError("Expected a color_layout when color_by='layout', but got None.")
        if type(color_layout) is not Layout:
            raise TypeError(f"Expected color_layout to be a wb.Layout, but got {type(color_layout).__name__}.")
        if int(color_layout.size) != nr * nc:
            raise ValueError(f"Expected a color_layout of size {nr * nc}, but got {color_layout} of size {color_layout.size}.")
        idx = color_layout.offsets().reshape(nc, nr).T
    else:
        raise ValueError(f"Expected color_by to be one of {', '.join(COLOR_BY)}, but got {color_by!r}.")
    return np.mod(np.ascontiguousarray(idx).reshape(-1), ncolors).astype(np.uint8)


def layout_grid(layout: Layout, color_by: str = "offset", color_layout: Layout | None = None,
                selected: int | None = None) -> Grid:
    """The grid of a layout: each cell is labelled and keyed by its offset."""
    rmode, cmode = fold(layout)
    off = folded_offsets(layout)
    grid = Grid(
        title=str(layout),
        rows=axis_of(rmode.shape, rmode.stride),
        cols=axis_of(cmode.shape, cmode.stride),
        keys=np.ascontiguousarray(off, dtype=np.float64).reshape(-1),
        colors=color_indices(color_by, off, color_layout, len(PALETTE)),
        selected=None if selected is None else float(selected),
    )
    if type(layout.shape) is tuple and len(layout.shape) > 2:
        grid.notes.append(f"rank {len(layout.shape)}: modes 1..{len(layout.shape) - 1} folded into columns")
    if type(layout) is ComposedLayout:
        grid.notes.append(f"swizzled: each cell is {layout.inner}({layout.offset} + the axes' shape:stride)")
    return grid
