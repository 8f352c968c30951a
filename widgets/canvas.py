"""The one custom-drawn widget: a canvas that draws a grid source of any size (see ``grid.js``).

The state holds what the first paint needs and nothing that grows with the grid: an overview (one
colour per block, at most 256x256 blocks) and a first tile (at most 64x64 cells, or the whole grid when
it is small).  Other windows are computed when the browser asks for them (a custom message answered
with binary buffers: float64 keys and uint8 palette indices).  The browser writes back ``hover``
([row, col], or [] when the pointer leaves) and ``selected`` (the key of a clicked cell, or None); the
view owning the canvas answers a hover with ``hover_text``.

Whatever a front-end sends is checked where it arrives (the validators below and ``_on_message``): a hover
that is not two ints naming a cell of the grid becomes "no hover", a selection that is not a finite number
becomes "nothing selected", a malformed tile request is dropped.  So the view keeps working and never
describes a cell that does not exist.
"""

from __future__ import annotations

import math
from pathlib import Path

import anywidget
import traitlets as t

from .base import STATIC_CSS
from .tiles import overview, tile

FIRST_TILE = 64        # rows and columns of the first exact tile
SMALL = 1 << 14        # a grid of at most this many cells goes in whole


class LiveMark(anywidget.AnyWidget):
    """An empty widget that marks a view without a canvas as live (see :data:`widgets.base.STATIC_CSS`)."""

    _esm = "export default { render({ el }) { el.classList.add('wb-live'); } };"
    _css = STATIC_CSS


class GridCanvas(anywidget.AnyWidget):
    _esm = Path(__file__).with_name("grid.js")
    _css = STATIC_CSS

    title = t.Unicode("").tag(sync=True)
    subtitle = t.Unicode("").tag(sync=True)
    notes = t.List(t.Unicode()).tag(sync=True)
    rows = t.Int(0).tag(sync=True)
    cols = t.Int(0).tag(sync=True)
    generation = t.Int(0).tag(sync=True)              # bumped whenever the cells change: tiles of older ones are dropped
    overview_meta = t.Dict().tag(sync=True)
    overview_colors = t.Bytes(b"").tag(sync=True)     # uint8 palette indices, row-major blocks
    tile_meta = t.Dict().tag(sync=True)
    tile_keys = t.Bytes(b"").tag(sync=True)           # float64 little-endian, row-major
    tile_colors = t.Bytes(b"").tag(sync=True)
    palette = t.List(t.Unicode()).tag(sync=True)
    legend = t.Dict().tag(sync=True)
    label_chars = t.Int(1).tag(sync=True)             # widest cell label
    row_label_chars = t.Int(1).tag(sync=True)
    col_label_chars = t.Int(1).tag(sync=True)
    row_groups = t.List(t.Int()).tag(sync=True)
    col_groups = t.List(t.Int()).tag(sync=True)
    row_title = t.Unicode("").tag(sync=True)
    col_title = t.Unicode("").tag(sync=True)
    row_dynamic = t.Bool(False).tag(sync=True)
    col_dynamic = t.Bool(False).tag(sync=True)
    key_name = t.Unicode("offset").tag(sync=True)
    hover = t.Any([]).tag(sync=True)                  # [row, col] of a cell, or []
    hover_text = t.Unicode("").tag(sync=True)
    selected = t.Any(None, allow_none=True).tag(sync=True)   # a key (float) or None
    selected_count = t.Int(-1).tag(sync=True)         # cells holding the selected key; -1: not counted

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._source = None
        self.describe = None        # (row, col) -> hover text, set by the owning view
        self.on_msg(self._on_message)
        self.observe(self._on_hover, "hover")

    def set_state(self, sync_data):
        # a front-end's update, checked before it is applied (traitlets would skip the validators below for a
        # value equal to the one held, e.g. [True, 2] for [1, 2], and keep the front-end's value)
        sync_data = dict(sync_data)
        if "hover" in sync_data:
            sync_data["hover"] = self._checked_hover(sync_data["hover"])
        if "selected" in sync_data:
            sync_data["selected"] = self._checked_selected(sync_data["selected"])
        super().set_state(sync_data)

    @t.validate("hover")
    def _valid_hover(self, proposal):
        return self._checked_hover(proposal["value"])

    def _checked_hover(self, h):
        if (isinstance(h, (list, tuple)) and len(h) == 2 and all(type(x) is int for x in h)
                and 0 <= h[0] < self.rows and 0 <= h[1] < self.cols):
            return list(h)
        return []

    @t.validate("selected")
    def _valid_selected(self, proposal):
        return self._checked_selected(proposal["value"])

    def _checked_selected(self, v):
        if v is None or type(v) is bool or not isinstance(v, (int, float)):
            return None
        try:
            v = float(v)
        except OverflowError:   # an int beyond float64: no key is that large
            return None
        return v if math.isfinite(v) else None

    @property
    def source(self):
        return self._source

    def show(self, source, subtitle: str = "") -> None:
        """Send a source's first paint to the browser in one message."""
        self._source = source
        nr, nc = source.shape
        om, _, ocol = overview(source)
        if nr * nc <= SMALL:
            meta, keys, colors = tile(source, 0, 0, nr, nc, 1)
        else:
            meta, keys, colors = tile(source, 0, 0, min(nr, FIRST_TILE), min(nc, FIRST_TILE), 1)
        with self.hold_sync():
            self.title = source.title
            self.subtitle = subtitle
            self.notes = list(source.notes)
            self.rows, self.cols = nr, nc
            self.overview_meta = {k: om[k] for k in ("nr", "nc", "step")}
            self.overview_colors = ocol.tobytes()
            meta["gen"] = om["gen"] = self.generation + 1
            self.tile_meta, self.tile_keys, self.tile_colors = meta, keys.tobytes(), colors.tobytes()
            self.palette = list(source.palette)
            self.legend = dict(source.legend)
            self.label_chars = int(source.label_chars())
            self.row_label_chars, self.col_label_chars = source.rows.label_chars, source.cols.label_chars
            self.row_groups, self.col_groups = source.rows.groups, source.cols.groups
            self.row_title, self.col_title = source.rows.title, source.cols.title
            self.row_dynamic, self.col_dynamic = source.rows.dynamic, source.cols.dynamic
            self.key_name = source.key_name
            if self.hover and (self.hover[0] >= nr or self.hover[1] >= nc):
                self.hover = []
            self.generation += 1

    def _on_message(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict) or content.get("type") != "tile" or self._source is None:
            return
        args = [content.get(k) for k in ("r0", "c0", "nr", "nc", "step", "gen")]
        # JSON numbers arrive as int or float: whole numbers within the grid's reach, nothing else
        if not all(type(a) in (int, float) and math.isfinite(a) and a == int(a) and 0 <= a <= 2**53 for a in args):
            return
        r0, c0, nr, nc, step, gen = (int(a) for a in args)
        try:
            meta, keys, colors = tile(self._source, r0, c0, nr, nc, step)
        except ValueError:   # a stale or malformed request: nothing to draw, nothing to raise
            return
        meta.update(type="tile", gen=gen)
        self.send(meta, buffers=[keys.tobytes(), colors.tobytes()])

    def _on_hover(self, change) -> None:
        h = change["new"]
        self.hover_text = self.describe(h[0], h[1]) if (len(h) == 2 and self.describe is not None) else ""

    def __repr__(self) -> str:
        return f"GridCanvas({self.title}, {self.rows}x{self.cols})"
