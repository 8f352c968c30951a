"""The one custom-drawn widget: a canvas that draws a :class:`~widgets.grid.Grid`.

State is synced compactly: cell keys as float64 bytes (``cell_keys``) and palette indices as uint8 bytes, so a
64x64 grid is 36 KiB of buffers and one canvas, not thousands of DOM elements.  The browser
writes back ``hover`` ([row, col], or [] when the pointer leaves) and ``selected`` (the key of a
clicked cell, or None).
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import numpy as np
import traitlets as t

from .grid import Grid


class GridCanvas(anywidget.AnyWidget):
    _esm = Path(__file__).with_name("grid.js")

    title = t.Unicode("").tag(sync=True)
    subtitle = t.Unicode("").tag(sync=True)
    rows = t.Int(0).tag(sync=True)
    cols = t.Int(0).tag(sync=True)
    cell_keys = t.Bytes(b"").tag(sync=True)          # float64 little-endian, row-major
    cell_colors = t.Bytes(b"").tag(sync=True)        # uint8 palette indices, row-major
    cell_texts = t.List(t.Unicode()).tag(sync=True)  # per-cell labels; empty: the integer key
    palette = t.List(t.Unicode()).tag(sync=True)
    row_labels = t.List(t.Unicode()).tag(sync=True)
    col_labels = t.List(t.Unicode()).tag(sync=True)
    row_groups = t.List(t.Int()).tag(sync=True)
    col_groups = t.List(t.Int()).tag(sync=True)
    row_title = t.Unicode("").tag(sync=True)
    col_title = t.Unicode("").tag(sync=True)
    row_dynamic = t.Bool(False).tag(sync=True)
    col_dynamic = t.Bool(False).tag(sync=True)
    key_name = t.Unicode("offset").tag(sync=True)
    hover_format = t.Unicode("({row},{col}) -> {text}").tag(sync=True)
    hover = t.List(t.Int()).tag(sync=True)
    selected = t.Float(None, allow_none=True).tag(sync=True)

    def show(self, grid: Grid, subtitle: str = "") -> None:
        """Send a grid's state to the browser in one message."""
        with self.hold_sync():
            self.title = grid.title
            self.subtitle = subtitle
            self.rows, self.cols = grid.shape
            self.cell_keys = np.ascontiguousarray(grid.keys, dtype="<f8").tobytes()
            self.cell_colors = np.ascontiguousarray(grid.colors, dtype=np.uint8).tobytes()
            self.cell_texts = [] if grid.texts is None else list(grid.texts)
            self.palette = list(grid.palette)
            self.row_labels, self.col_labels = grid.rows.labels, grid.cols.labels
            self.row_groups, self.col_groups = grid.rows.groups, grid.cols.groups
            self.row_title, self.col_title = grid.rows.title, grid.cols.title
            self.row_dynamic, self.col_dynamic = grid.rows.dynamic, grid.cols.dynamic
            self.key_name = grid.key_name
            if self.hover and (self.hover[0] >= grid.rows.n or self.hover[1] >= grid.cols.n):
                self.hover = []

    def __repr__(self) -> str:
        return f"GridCanvas({self.title}, {self.rows}x{self.cols})"
