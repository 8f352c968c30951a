"""LayoutView: the coordinate grid of a layout (or a live tensor's layout), each cell its offset.

Cell ``(r, c)`` shows ``L(r, c)`` (see :func:`widgets.grid.fold` for rank 1 and rank > 2).
Hovering reports ``coordinate -> offset``; clicking a cell selects its offset and outlines every
coordinate that maps to it, which is how broadcast (stride 0) and other non-injective layouts
show themselves.  Dynamic modes are drawn in orange with their ``?`` notation.
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np

from workbench.layout import Layout

from .base import SvgFallback, as_layout
from .canvas import GridCanvas
from .grid import COLOR_BY, Grid, layout_grid
from .svg import grid_svg


class LayoutView(SvgFallback, W.VBox):
    """``LayoutView(layout_or_tensor, color_by='offset', color_layout=None)``.

    Readable state (also what the browser changes): ``hover`` (the hovered cell's (row, col) or
    None), ``hover_text``, ``selected_offset`` (settable), ``selected_cells``, ``color_by``.
    """

    def __init__(self, layout_or_tensor, color_by: str = "offset", color_layout: Layout | None = None,
                 selected_offset: int | None = None):
        layout, tensor = as_layout(layout_or_tensor)
        options = [c for c in COLOR_BY if c != "layout" or color_layout is not None]
        if color_by not in options:
            raise ValueError(f"Expected color_by to be one of {', '.join(options)}, but got {color_by!r}.")
        self._layout, self._tensor, self._color_layout = layout, tensor, color_layout
        self._grid = layout_grid(layout, color_by, color_layout, selected_offset)
        self.canvas = GridCanvas()
        self.canvas.show(self._grid, self._subtitle())
        self.canvas.selected = self._grid.selected
        self.color_control = W.Dropdown(options=options, value=color_by, description="colour by")
        self.color_control.observe(self._recolor, "value")
        self.canvas.observe(self._on_selected, "selected")
        super().__init__([self.color_control, self.canvas])

    # -- state ---------------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def grid(self) -> Grid:
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
    def hover(self) -> tuple | None:
        h = self.canvas.hover
        return (h[0], h[1]) if len(h) == 2 else None

    def coordinate(self, row: int, col: int) -> str:
        """The CuTe coordinate of a cell as text, e.g. ``(1,(0,2))``; just the row for a rank-1 layout."""
        g = self._grid
        if g.cols.n == 1 and g.cols.title == "1:0":
            return g.rows.labels[row]
        return f"({g.rows.labels[row]},{g.cols.labels[col]})"

    def offset(self, row: int, col: int) -> int:
        return int(self._grid.keys[row * self._grid.cols.n + col])

    @property
    def hover_text(self) -> str:
        h = self.hover
        return "" if h is None else f"{self.coordinate(*h)} -> {self.offset(*h)}"

    @property
    def selected_offset(self) -> int | None:
        s = self.canvas.selected
        return None if s is None else int(s)

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
        nc = self._grid.cols.n
        return [divmod(int(i), nc) for i in np.flatnonzero(self._grid.keys == s)]

    # -- observers -----------------------------------------------------------------------------
    def _recolor(self, change) -> None:
        self._grid = layout_grid(self._layout, change["new"], self._color_layout, self.selected_offset)
        with self.canvas.hold_sync():
            self.canvas.cell_colors = self._grid.colors.tobytes()

    def _on_selected(self, change) -> None:
        self._grid.selected = change["new"]

    def _subtitle(self) -> str:
        g = self._grid
        n, distinct = len(g.keys), len(np.unique(g.keys))
        kind = "injective" if distinct == n else f"non-injective: {n} coordinates -> {distinct} offsets"
        src = f"{self._tensor} " if self._tensor is not None else ""
        span = f"cosize {int(g.keys.max()) + 1}" if n and g.keys.min() >= 0 else f"offsets {int(g.keys.min())}..{int(g.keys.max())}"
        return f"{src}size {n}, {span}, {kind}"

    # -- output --------------------------------------------------------------------------------
    def to_svg(self) -> str:
        return grid_svg(self._grid, self._subtitle())

    def __repr__(self) -> str:
        return f"LayoutView({self._layout}, color_by={self.color_by!r})"
