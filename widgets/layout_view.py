"""LayoutView: the coordinate grid of a layout (or a live tensor's layout), each cell its offset.

Cell ``(r, c)`` shows ``L(r, c)`` (see :func:`widgets.grid.fold` for rank 1 and rank > 2), or with
``show="values"`` the tensor's element there.  Any size: the canvas computes only the windows it draws
(a 10^8-cell layout opens at once) and zooms out to an aggregated heat map.  Hovering reports the 1-D
index, the natural coordinate and the offset; clicking a cell selects its offset and outlines every
coordinate that maps to it, which is how broadcast (stride 0) and other non-injective layouts show
themselves.  Dynamic modes are drawn in orange with their ``?`` notation.
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np

from workbench.layout import ComposedLayout, Layout, Swizzle

from .base import SvgFallback, as_layout
from .canvas import GridCanvas
from .grid import COLOR_BY, MAX_LABELS, Grid, LayoutSource, _format_value, mode_name

SHOW = ("offsets", "values")


def swizzle_element_bits(layout) -> int | None:
    """The element size a swizzled layout implies, or None: its smem pointer's (``Sw<3,4,3> o smem_ptr[16b]``), else
    CuTe's convention that a swizzle ``S<B,M,S>`` on element offsets permutes 16-byte units of 2^M elements
    (``S<3,3,3>``: 16-bit, ``S<3,2,3>``: 32-bit, ``S<3,4,3>``: 8-bit)."""
    if type(layout) is not ComposedLayout or type(layout.inner) is not Swizzle:
        return None
    if layout.ptr_bits is not None:
        return int(layout.ptr_bits)
    sw = layout.inner
    if not sw.bits or not 1 <= sw.base <= 5:
        return None
    return 128 >> sw.base
MAX_COUNTED = 1 << 20   # injectivity and selection counts enumerate the offsets up to this size


def host_values(tensor) -> np.ndarray:
    """A tensor's elements as a host numpy array with its shape (CPU memory only)."""
    src = getattr(tensor, "_source", None) or tensor
    for obj in (src, tensor):
        if hasattr(obj, "__dlpack__"):
            try:
                return np.from_dlpack(obj)
            except (BufferError, TypeError, RuntimeError, ValueError):
                continue
    detach = getattr(src, "detach", None)   # torch tensors that numpy cannot import (bfloat16, ...)
    if detach is not None:
        return detach().cpu().float().numpy()
    raise BufferError(f"Expected a tensor in host memory to show its values, but got {type(tensor).__name__}.")


class LayoutView(SvgFallback, W.VBox):
    """``LayoutView(layout_or_tensor, color_by=None, color_layout=None, selected_offset=None, show='offsets',
    tile=None, mode=None, element_type=None)``.

    ``color_by=None`` picks ``'chunk'`` for a swizzled layout whose element size is known (see
    :func:`swizzle_element_bits`) and ``'offset'`` otherwise.

    Colourings (the "colour by" drop-down): ``offset`` (a scale), ``row``, ``column``, ``tile`` (tiles of
    ``tile=(rows, cols)`` cells; by default the innermost nested sub-modes, or small tiles of a flat mode),
    ``mode`` (the coordinate of one (sub-)mode, ``mode=(1, 0)`` for CuTe's ``get<1,0>``; a second drop-down
    picks it), ``layout`` (``color_layout`` of the 1-D index), ``value`` (a tensor's elements), and for a
    shared-memory layout ``bank`` (the 4-byte bank of 32 each offset falls in) and ``chunk`` (its 16-byte chunk
    of the 128-byte row of banks), which need the element's size: a tensor's own, or ``element_type=wb.Float16``.
    On a swizzled layout (``wb.composition(wb.Swizzle(3, 3, 3), smem)``) the swizzle shows as the chunks
    changing places row by row; the hover read-out gives each cell's bank and chunk.

    Readable state (also what the browser changes): ``hover`` (the hovered cell's (row, col) or
    None), ``hover_text``, ``selected_offset`` (settable), ``selected_cells``, ``color_by``, ``tile``, ``mode``.

    Sizes: the view itself never enumerates the layout.  What must enumerate refuses clearly above a
    limit: ``grid`` and ``selected_cells`` (2^20 cells), the injectivity read-out and the selection count
    (2^20, skipped above), ``to_tikz`` (2^14), ``print_layout`` (2^16).
    """

    def __init__(self, layout_or_tensor, color_by: str | None = None, color_layout: Layout | None = None,
                 selected_offset: int | None = None, show: str = "offsets", tile: tuple | None = None,
                 mode: tuple | int | None = None, element_type=None):
        if show not in SHOW:
            raise ValueError(f"Expected show to be one of {', '.join(SHOW)}, but got {show!r}.")
        layout, tensor = as_layout(layout_or_tensor)
        values = None
        if show == "values":
            if tensor is None:
                raise ValueError("Expected a tensor (torch, numpy, a wb.Tensor...) for show='values', but got a layout.")
            values = host_values(layout_or_tensor)
        self._banks_asked = element_type is not None   # the read-out gives banks when asked, or colouring by them
        if element_type is None and tensor is not None:
            element_type = getattr(tensor, "element_type", None)
        if element_type is not None and not isinstance(getattr(element_type, "bits", None), int):
            raise TypeError(f"Expected element_type to be a workbench element type such as wb.Float16, but got "
                            f"{type(element_type).__name__}.")
        self._element_type = element_type
        bits = None if element_type is None else element_type.bits
        if bits is None:   # a swizzled shared-memory layout says its element size (see swizzle_element_bits)
            bits = swizzle_element_bits(layout)
        if color_by is None:   # a swizzle is taught by its 16-byte chunks changing places: open coloured by them
            color_by = "chunk" if bits is not None and type(layout) is ComposedLayout else "offset"
        options = [c for c in COLOR_BY if (c != "layout" or color_layout is not None) and (c != "value" or values is not None)
                   and (c not in ("bank", "chunk") or bits is not None)]
        if color_by in ("bank", "chunk") and bits is None:
            raise ValueError(f"Expected element_type= (e.g. wb.Float16) with color_by={color_by!r}: an offset's bank "
                             f"depends on the element's size, but got a layout without one.")
        if color_by not in options:
            raise ValueError(f"Expected color_by to be one of {', '.join(options)}, but got {color_by!r}.")
        self._layout, self._tensor, self._color_layout, self._show = layout, tensor, color_layout, show
        self._source = LayoutSource(layout, color_by, color_layout, selected_offset, values, tile=tile, mode=mode,
                                    element_bits=bits)
        if values is not None:
            self._source.key_name = "offset"
        self._grid = None
        self._subtitle_text = None
        self.canvas = GridCanvas()
        self.canvas.describe = self.describe
        self.canvas.show(self._source, self._subtitle())
        self.canvas.selected = self._source.selected
        self._count_selected()
        self.color_control = W.Dropdown(options=options, value=color_by, description="colour by")
        self.color_control.observe(self._recolor, "value")
        self.mode_control = W.Dropdown(options=[(mode_name(layout, m), m) for m in self._source.modes],
                                       value=self._source.mode, description="mode")
        self.mode_control.layout.display = None if color_by == "mode" else "none"   # shown for 'mode' only
        self.mode_control.observe(self._on_mode, "value")
        self.canvas.observe(self._on_selected, "selected")
        controls = W.HBox([self.color_control, self.mode_control], layout=W.Layout(flex_flow="row wrap"))
        super().__init__([controls, self.canvas])

    # -- state ---------------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def source(self) -> LayoutSource:
        return self._source

    @property
    def grid(self) -> Grid:
        """Every cell at once (layouts of at most 2^20 cells; the view itself never needs it)."""
        if self._grid is None:
            self._grid = self._source.to_grid(MAX_LABELS)
        self._grid.selected = self._source.selected
        return self._grid

    @property
    def color_by(self) -> str:
        return self.color_control.value

    @color_by.setter
    def color_by(self, value: str) -> None:
        if value not in self.color_control.options:
            raise ValueError(f"Expected color_by to be one of {', '.join(self.color_control.options)}, but got {value!r}.")
        self.color_control.value = value

    @property
    def tile(self) -> tuple:
        """(rows, cols) of a tile for ``color_by='tile'``."""
        return self._source.tile

    @tile.setter
    def tile(self, value: tuple) -> None:
        self._source.set_color(self.color_by, self._color_layout, tile=value)
        if self.color_by == "tile":   # otherwise it is kept for when 'tile' is chosen
            self._redraw()

    @property
    def mode(self) -> tuple:
        """The (sub-)mode path ``color_by='mode'`` colours by, e.g. ``(1, 0)`` for ``get<1,0>``."""
        return self._source.mode

    @mode.setter
    def mode(self, value: tuple | int) -> None:
        self.mode_control.value = self._source._check_mode(value)

    @property
    def hover(self) -> tuple | None:
        h = self.canvas.hover
        return (h[0], h[1]) if len(h) == 2 else None

    def _check_cell(self, row: int, col: int) -> None:
        nr, nc = self._source.shape
        if not (0 <= row < nr and 0 <= col < nc):
            raise ValueError(f"Expected a cell inside the {nr}x{nc} grid, but got ({row}, {col}).")

    def coordinate(self, row: int, col: int) -> str:
        """The CuTe coordinate of a cell as text, e.g. ``(1,(0,2))``; just the row for a rank-1 layout."""
        self._check_cell(row, col)
        s = self._source
        if s.rank1:
            return s.rows.label(row)
        return f"({s.rows.label(row)},{s.cols.label(col)})"

    def index(self, row: int, col: int) -> int:
        """The 1-D (colexicographic) index of a cell: ``row + rows * col``."""
        self._check_cell(row, col)
        return row + self._source.rows.n * col

    def offset(self, row: int, col: int) -> int:
        """The cell's offset, exact at any size (int64, not the float64 keys the canvas draws with)."""
        self._check_cell(row, col)
        return int(self._source.offsets_at(np.array([row]), np.array([col]))[0, 0])

    def describe(self, row: int, col: int) -> str:
        """The hover read-out of a cell: 1-D index, natural coordinate, offset (and value)."""
        text = f"index {self.index(row, col)}  coordinate {self.coordinate(row, col)}  offset {self.offset(row, col)}"
        if self._source.values is not None:
            v = self._source._values_at(np.array([row]), np.array([col]))[0, 0]
            text += f"  value {_format_value(v)}"
        if self._source.element_bits is not None and (self._banks_asked or self.color_by in ("bank", "chunk")):
            bank, chunk = self._source.bank_of(np.array([self.offset(row, col)]))
            text += f"  bank {int(bank[0])}  chunk {int(chunk[0])}"
        return text

    @property
    def hover_text(self) -> str:
        h = self.hover
        return "" if h is None else self.describe(*h)

    @property
    def selected_offset(self) -> int | None:
        s = self.canvas.selected
        return None if s is None or not float(s).is_integer() else int(s)

    @selected_offset.setter
    def selected_offset(self, value: int | None) -> None:
        if value is not None and type(value) is not int:
            raise TypeError(f"Expected an int offset or None, but got {type(value).__name__}.")
        self.canvas.selected = None if value is None else float(value)

    @property
    def selected_cells(self) -> list[tuple[int, int]]:
        """Every (row, col) whose offset is the selected one (empty when nothing is selected)."""
        s = self.canvas.selected
        if s is None:
            return []
        nc = self.grid.cols.n
        return [divmod(int(i), nc) for i in np.flatnonzero(self.grid.keys == s)]

    # -- observers -----------------------------------------------------------------------------
    def _recolor(self, change) -> None:
        self._source.set_color(change["new"], self._color_layout)
        self.mode_control.layout.display = None if change["new"] == "mode" else "none"
        self._redraw()

    def _on_mode(self, change) -> None:
        self._source.set_color(self.color_by, self._color_layout, mode=change["new"])
        if self.color_by == "mode":
            self._redraw()

    def _redraw(self) -> None:
        self._grid = None
        self.canvas.show(self._source, self._subtitle())

    def _on_selected(self, change) -> None:
        v = change["new"]
        if v is not None and not float(v).is_integer():   # offsets are integers: 2.5 names no cell (not cell 2)
            self.canvas.selected = None
            return
        self._source.selected = v
        self._count_selected()

    def _count_selected(self) -> None:
        nr, nc = self._source.shape
        s = self.canvas.selected
        self.canvas.selected_count = -1 if (s is None or nr * nc > MAX_COUNTED) else len(self.selected_cells)

    def _subtitle(self) -> str:
        if self._subtitle_text is None:   # the layout never changes under a view: counted once
            s = self._source
            nr, nc = s.shape
            n = nr * nc
            lo, hi = s.bounds
            src = f"{self._tensor} " if self._tensor is not None else ""
            span = f"cosize {hi + 1}" if lo >= 0 and n else f"offsets {lo}..{hi}"
            if n <= MAX_COUNTED:   # exact int64 offsets: float keys would merge neighbours past 2**53
                off = np.sort(s.offsets_at(np.arange(nr), np.arange(nc)), axis=None)   # sort + diff: np.unique's
                distinct = int(np.count_nonzero(np.diff(off))) + 1 if off.size else 0  # hashing is 10x slower here
                kind = ", injective" if distinct == n else f", non-injective: {n} coordinates -> {distinct} offsets"
            else:
                kind = f" (injectivity is checked up to {MAX_COUNTED} cells)"
            self._subtitle_text = f"{src}size {n}, {span}{kind}"
        return self._subtitle_text

    # -- output --------------------------------------------------------------------------------
    def to_svg(self) -> str:
        from .svg import source_svg

        return source_svg(self._source, self._subtitle())

    def to_tikz(self) -> str:
        """CuTe's ``print_latex`` of the layout (TikZ; layouts of at most 2^14 cells)."""
        from .export import layout_tikz

        return layout_tikz(self._layout)

    def __repr__(self) -> str:
        return f"LayoutView({self._layout}, color_by={self.color_by!r}{', show=values' if self._show == 'values' else ''})"
