"""TVLayoutView: which thread owns which value of a tile, as CuTe's ``print_latex_tv`` draws it.

A TV layout maps ``(thread, value)`` to an index of the tile (colexicographic over the tile's
shape); the tile's own layout maps that index to a memory offset.  Cell ``(m, n)`` of the tile
shows ``T t V v`` for the pair that lands there, coloured by thread with CuTe's eight TV
colours.  Selecting a thread (slider or click) outlines all its values; the read-outs give what
one warp access costs for the chosen element type (see :mod:`widgets.access`).
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

import workbench as wb
from workbench.layout import ComposedLayout, Layout

from .access import AccessReport, analyze
from .base import SvgFallback
from .canvas import GridCanvas
from .grid import TV_PALETTE, Grid, ThreadValueTexts, axis_of, fold, it_values
from .svg import grid_svg

MAX_TILE_CELLS = 1 << 20
ELEMENT_CHOICES = ("Float16", "BFloat16", "Float32", "Float64", "Int8", "Int32", "Float8E4M3FN", "Float4E2M1FN")


def _as_tile(tile) -> Layout:
    if type(tile) is Layout or type(tile) is ComposedLayout:  # a swizzled shared-memory tile keeps its swizzle
        return tile
    if type(tile) is int or (type(tile) is tuple and all(type(x) in (int, tuple) for x in tile)):
        return Layout(tile)
    raise TypeError(f"Expected a tile shape such as (8, 8), a wb.Layout or a swizzled wb.ComposedLayout for the tile, "
                    f"but got {type(tile).__name__}.")


def tv_cells(tv: Layout, tile: Layout) -> tuple[np.ndarray, np.ndarray]:
    """(thread, value) ids of each tile index (-1 where no pair lands) and the (T, V) tile indices.

    Where several pairs land on one index (a broadcast TV layout) the lowest flat (t, v) index wins.
    """
    if type(tv) is not Layout:
        raise TypeError(f"Expected the TV layout to be a wb.Layout, but got {type(tv).__name__}.")
    if type(tv.shape) is not tuple or len(tv.shape) != 2:
        raise ValueError(f"Expected a rank-2 TV layout (threads, values), but got {tv} of rank {tv.rank}.")
    T, V = int(wb.size(it_values(tv.shape[0]))), int(wb.size(it_values(tv.shape[1])))
    idx = tv.offsets().reshape(V, T).T                      # (T, V): t + T*v is the flat TV index
    n = int(tile.size)
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"Expected TV indices inside the tile, in [0, {n}), but {tv} reaches "
                         f"[{int(idx.min())}, {int(idx.max())}].")
    owner = np.full((2, n), -1, np.int64)
    flat = idx.T.reshape(-1)[::-1]                          # reversed: the first pair is written last
    tt = np.tile(np.arange(T), V)[::-1]
    vv = np.repeat(np.arange(V), T)[::-1]
    owner[0, flat], owner[1, flat] = tt, vv
    return owner, idx


class TVLayoutView(SvgFallback, W.VBox):
    """``TVLayoutView(tv_layout, tile, element_type=wb.Float32, thread=None)``.

    ``tile`` is the tile's shape (column-major memory) or a Layout giving its memory layout
    (e.g. ``(8,8):(8,1)`` for a row-major tile in shared memory).  ``TVLayoutView((tiler, tv))``
    accepts what ``make_layout_tv`` returns.
    """

    def __init__(self, tv_layout, tile=None, element_type=wb.Float32, thread: int | None = None):
        if tile is None and type(tv_layout) is tuple and len(tv_layout) == 2:
            tile, tv_layout = tv_layout
            if type(tile) is tuple and all(type(x) is Layout for x in tile):
                tile = tuple(int(x.size) for x in tile)  # a tiler of layouts: its sizes are the tile shape
        kind = type(tv_layout).__name__
        if kind in ("TiledMMA", "MMAAtom", "TiledCopy", "CopyAtom"):   # a whole atom: its own view draws it
            view, tv = ("MMAView", "tv_layout_C_tiled") if "MMA" in kind else ("CopyView", "layout_src_tv_tiled")
            raise TypeError(f"Expected a TV layout (a wb.Layout) and tile=, but got a {kind}: draw it with {view}(x), or "
                            f"one of its TV layouts on its tile with TVLayoutView(x.{tv}, tile=(M, N)).")
        if tile is None:
            raise TypeError("Expected tile= with the TV layout: the tile's shape such as tile=(8, 8) or its Layout, "
                            "e.g. TVLayoutView(tv, tile=(8, 8)) (or TVLayoutView((tiler, tv)) as make_layout_tv returns), "
                            "but got None.")
        self._tv, self._tile = tv_layout, _as_tile(tile)
        if int(self._tile.size) > MAX_TILE_CELLS:   # ownership and access costs enumerate every element
            raise ValueError(f"Expected a tile of at most {MAX_TILE_CELLS} elements for a TV view, but got "
                             f"{self._tile} with {self._tile.size}.")
        owner, idx = tv_cells(self._tv, self._tile)
        self._T, self._V = idx.shape
        self._idx = idx
        self._tile_offsets = self._tile.offsets()              # kept: every hover reads one
        self._mem = self._tile_offsets[idx]                     # (T, V) element offsets in memory
        rmode, cmode = fold(self._tile)
        nr = int(wb.size(it_values(rmode.shape)))
        nc = int(self._tile.size) // nr
        # the grid is row-major over (row, col); tile index i sits at (i % nr, i // nr)
        perm = np.arange(nr * nc).reshape(nc, nr).T.reshape(-1)
        t, v = owner[0, perm], owner[1, perm]
        covered = t >= 0
        self._grid = Grid(
            title=f"TV {self._tv} on tile {self._tile}",
            rows=axis_of(rmode.shape, rmode.stride), cols=axis_of(cmode.shape, cmode.stride),
            keys=np.where(covered, t, np.nan).astype(np.float64),
            colors=np.where(covered, t % len(TV_PALETTE), 0).astype(np.uint8),
            texts=ThreadValueTexts(t, v),
            palette=TV_PALETTE, key_name="thread",
            legend={"kind": "swatches", "label": "colour: thread mod 8 (CuTe's print_latex_tv colours)",
                    "entries": [[c, f"T{k}, T{k + 8}, ..."] for k, c in enumerate(TV_PALETTE[:min(8, self._T)])],
                    "note": "the labels T#V# name each cell's thread and value"},
        )
        uncovered = int((~covered).sum())
        if uncovered:
            self._grid.notes.append(f"{uncovered} tile element(s) owned by no thread")
        dup = self._T * self._V - int(np.count_nonzero(np.bincount(idx.reshape(-1), minlength=1)))   # pairs minus elements
        if dup:
            self._grid.notes.append(f"{dup} (thread, value) pair(s) share an element with another (broadcast)")
        self._base_notes = list(self._grid.notes)

        self.canvas = GridCanvas()
        self.canvas.describe = self.describe
        # "none" rather than -1 when no thread is chosen
        self.thread_control = W.SelectionSlider(options=[("none", -1)] + [(str(k), k) for k in range(self._T)],
                                                value=-1 if thread is None else thread, description="thread",
                                                continuous_update=True)
        names = [n for n in ELEMENT_CHOICES if hasattr(wb, n)]
        if element_type.name not in names:
            names.append(element_type.name)
        self.element_control = W.Dropdown(options=names, value=element_type.name, description="element")
        self.readout = W.HTML()
        self._update_report()
        self.canvas.show(self._grid, self._subtitle())
        self._select(thread)
        self.thread_control.observe(self._on_slider, "value")
        self.canvas.observe(self._on_click, "selected")
        self.element_control.observe(self._on_element, "value")
        super().__init__([W.HBox([self.thread_control, self.element_control]), self.canvas, self.readout])

    # -- state ---------------------------------------------------------------------------------
    @property
    def grid(self) -> Grid:
        return self._grid

    @property
    def num_threads(self) -> int:
        return self._T

    @property
    def num_values(self) -> int:
        return self._V

    @property
    def thread(self) -> int | None:
        v = self.thread_control.value
        return None if v is None or v < 0 else v

    @thread.setter
    def thread(self, t: int | None) -> None:
        if t is not None and not (type(t) is int and 0 <= t < self._T):
            raise ValueError(f"Expected a thread in [0, {self._T}) or None, but got {t!r}.")
        self.thread_control.value = -1 if t is None else t

    @property
    def element_type(self):
        return getattr(wb, self.element_control.value)

    @element_type.setter
    def element_type(self, et) -> None:
        self.element_control.value = et.name

    @property
    def report(self) -> AccessReport:
        return self._report

    def thread_values(self, t: int) -> list[tuple[int, tuple, int]]:
        """(value, tile coordinate, memory offset) of every value thread ``t`` owns."""
        nr = self._grid.rows.n
        return [(v, (int(i) % nr, int(i) // nr), int(m)) for v, (i, m) in enumerate(zip(self._idx[t], self._mem[t]))]

    def describe(self, row: int, col: int) -> str:
        """The hover read-out of a tile cell: its owner, tile index and memory offset."""
        nr = self._grid.rows.n
        i = row + nr * col
        text = self._grid.texts[row * self._grid.cols.n + col] or "no thread"
        mem = int(self._tile_offsets[i])
        return f"({self._grid.rows.label(row)},{self._grid.cols.label(col)}) -> {text}  index {i}  offset {mem}"

    # -- observers -----------------------------------------------------------------------------
    def _select(self, t) -> None:
        self.canvas.selected = None if t is None else float(t)
        self._grid.selected = self.canvas.selected
        self.canvas.selected_count = -1 if t is None else int(np.count_nonzero(self._grid.keys == t))
        self._update_readout()

    def _on_slider(self, change) -> None:
        self._select(None if change["new"] is None or change["new"] < 0 else change["new"])

    def _on_click(self, change) -> None:
        new = change["new"]   # a finite float or None (the canvas checked it); a thread only if it is one
        t = int(new) if new is not None and new == int(new) and 0 <= new < self._T else -1
        if self.thread_control.value != t:
            self.thread_control.value = t   # the slider observer re-selects and refreshes
        elif t == -1 and new is not None:
            self._select(None)   # no such thread: nothing selected

    def _on_element(self, change) -> None:
        self._update_report()
        self.canvas.subtitle = self._subtitle()

    def _update_report(self) -> None:
        et = self.element_type
        self._report = analyze(self._mem, et.bits, et.short)
        self._grid.notes = self._base_notes + self._report.lines()
        self._update_readout()

    def _update_readout(self) -> None:
        lines = list(self._report.lines())
        t = self.thread
        if t is not None:
            vals = ", ".join(f"V{v}@{c}->{m}" for v, c, m in self.thread_values(t))
            lines.append(f"T{t}: {vals}")
        self.readout.value = "<pre class='wb-tv-readout'>" + html.escape("\n".join(lines)) + "</pre>"

    def _subtitle(self) -> str:
        return f"{self._T} threads x {self._V} values, {self.element_type.name}"

    # -- output --------------------------------------------------------------------------------
    def to_svg(self) -> str:
        return grid_svg(self._grid, self._subtitle())

    def to_tikz(self) -> str:
        """CuTe's ``print_latex_tv`` of the TV layout on the tile's shape (TikZ)."""
        from .export import tv_tikz

        nr, nc = self._grid.shape
        seen, pairs = set(), []
        for t in range(self._T):
            for v in range(self._V):
                i = int(self._idx[t, v])
                if i not in seen:
                    seen.add(i)
                    pairs.append((t, v, i % nr, i // nr))
        return tv_tikz(self._tv, pairs, nr, nc)

    def __repr__(self) -> str:
        return f"TVLayoutView({self._tv}, tile={self._tile}, element_type={self.element_type.name})"
