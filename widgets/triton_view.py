"""A CuTe object beside its Triton layout: which thread and value (CuTe) and which register, lane and warp
(Triton) hold each element of the tile.

``TritonLayoutView(x, operand=None, shape=None)`` takes a tiled MMA with its operand (``"A"``, ``"B"``, ``"C"``),
a ``(tile_mn, tv)`` pair, a distributed :class:`~workbench.interop.linear.LinearLayout`, or a Gluon layout (its
object, constructor or TTGIR text, with ``shape=`` where the text has none).  Left: the CuTe TV layout on its tile
(``T#V#``, as :class:`~widgets.tv_view.TVLayoutView` draws it); right: Triton's layout of the same thing
(``wb.to_triton``) on Triton's tile, labelled ``r#l#w#`` (register, lane, warp).  Thread ``lane + 32 * warp``
is CuTe's thread, so the thread sliders are linked; the values differ where Triton walks repeated instructions in
another order, and B's tile is (N, K) on the left and Triton's (K, N) on the right.

``linear_layout_view(ll)`` is the thin adapter that draws a LinearLayout alone with the existing views: a
distributed one as a TVLayoutView, a shared one (offset -> coordinate) as a LayoutView of the CuTe memory layout
it inverts to.
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

import workbench as wb
from workbench.interop import LinearLayout, from_gluon, to_triton

from .base import SvgFallback
from .grid import ThreadValueTexts
from .layout_view import LayoutView
from .svg import hstack_svg
from .tv_view import TVLayoutView, tv_cells


class RegisterLaneWarpTexts(ThreadValueTexts):
    """Triton's ``r#l#w#`` labels of a TV grid whose thread is ``lane + 32 * warp`` and value the register."""

    def __init__(self, thread: np.ndarray, value: np.ndarray):
        super().__init__(thread, value)
        owned = thread >= 0
        if owned.any():        # the longest label: the most digits of register, lane (< 32) and warp
            tmax, vmax = int(thread[owned].max()), int(value[owned].max())
            self.max_len = len(f"r{vmax}l{min(tmax, 31)}w{tmax // 32}")

    @staticmethod
    def _fmt(t, v) -> str:
        return f"r{int(v)}l{int(t) % 32}w{int(t) // 32}"

    def __getitem__(self, i: int) -> str:
        t = int(self.thread[i])
        return self._fmt(t, self.value[i]) if t >= 0 else ""


def linear_layout_view(ll, element_type=wb.Float32):
    """A LinearLayout drawn by the existing views: distributed -> ``TVLayoutView`` of its (tile, tv), shared ->
    ``LayoutView`` of the CuTe memory layout (coordinate -> offset) it inverts to."""
    if type(ll) is not LinearLayout:
        raise TypeError(f"Expected a LinearLayout (wb.to_triton, wb.to_linear_layout), but got {type(ll).__name__}.")
    if ll.kind == "shared":
        return LayoutView(from_gluon(ll), element_type=element_type)
    return TVLayoutView(from_gluon(ll), element_type=element_type)


def _cute_and_triton(x, operand, shape):
    """(cute (tile, tv), triton (tile, tv), transposed: whether Triton's tile is CuTe's transposed, what, LL)."""
    if type(x) is tuple and len(x) == 2 and type(x[1]) is str and operand is None:
        x, operand = x                                  # what from_gluon returns for an MMA layout
    if hasattr(x, "tv_layout_C_tiled"):
        if operand not in ("A", "B", "C"):
            raise ValueError(f"Expected operand 'A', 'B' or 'C' with a tiled MMA, but got {operand!r}.")
        M, N, K = (int(v) for v in x.tile_shape_mnk)
        tile = {"A": (M, K), "B": (N, K), "C": (M, N)}[operand]
        ll = to_triton(x, operand)
        return (tile, getattr(x, f"tv_layout_{operand}_tiled")), from_gluon(ll), operand == "B", \
            f"{x.atom.name} {operand}", ll
    if operand is not None:
        raise ValueError(f"Expected operand= only with a tiled MMA, but got {operand!r} with {type(x).__name__}.")
    if type(x) is LinearLayout:
        if x.kind == "shared":
            raise ValueError("Expected a distributed layout (register, lane, warp): a shared layout has no threads; "
                             "draw it with linear_layout_view(ll).")
        pair = from_gluon(x)
        return pair, pair, False, "linear layout", x
    if type(x) is tuple and len(x) == 2 and type(x[1]) is wb.Layout:
        ll = to_triton(x)
        return (tuple(x[0]), x[1]), from_gluon(ll), False, "TV layout", ll
    obj = from_gluon(x, shape)                          # a Gluon layout or its text
    if type(obj) is not tuple:
        raise ValueError(f"Expected a distributed layout, but {x!r} is a shared (memory) layout: draw it with "
                         f"LayoutView(wb.from_gluon(...)).")
    return _cute_and_triton(obj, None, None)


class TritonLayoutView(SvgFallback, W.VBox):
    """``TritonLayoutView(x, operand=None, shape=None, element_type=wb.Float32)``: see the module docstring.

    ``describe(row, col)`` names the element of CuTe's tile at (row, col) in both numberings; ``thread`` (settable)
    selects one thread on both sides."""

    def __init__(self, x, operand=None, shape=None, element_type=wb.Float32):
        (ctile, ctv), (ttile, ttv), self._transposed, what, self._ll = _cute_and_triton(x, operand, shape)
        self.cute = TVLayoutView(ctv, tile=ctile, element_type=element_type)
        self.triton = TVLayoutView(ttv, tile=ttile, element_type=element_type)
        g = self.triton.grid
        g.texts = RegisterLaneWarpTexts(g.texts.thread, g.texts.value)
        g.legend = dict(g.legend, note="the labels r#l#w# name each cell's register, lane and warp")
        g.title = f"Triton {self._ll.direction}, {what}"
        self.triton.canvas.show(g, self.triton._subtitle())
        self._cute_owner = tv_cells(ctv, wb.Layout(ctile))[0]
        self._triton_owner = tv_cells(ttv, wb.Layout(ttile))[0]
        self._ctile, self._ttile, self._what = ctile, ttile, what
        W.link((self.cute.thread_control, "value"), (self.triton.thread_control, "value"))
        self.readout = W.HTML()
        self.cute.canvas.observe(self._on_hover, "hover")
        caption = ("B: CuTe's tile is (N, K), Triton's (K, N). " if self._transposed else "") + \
            "Thread = lane + 32 * warp on both sides; the values differ where the registers are walked in another order."
        super().__init__([W.HBox([self.cute, self.triton]), W.HTML(f"<small>{html.escape(caption)}</small>"),
                          self.readout])

    @property
    def linear_layout(self) -> LinearLayout:
        return self._ll

    @property
    def thread(self):
        return self.cute.thread

    @thread.setter
    def thread(self, t) -> None:
        self.cute.thread = t          # linked: Triton's side follows

    def describe(self, row: int, col: int) -> str:
        """Element (row, col) of CuTe's tile: its CuTe thread and value and its Triton register, lane and warp."""
        M, N = (int(s) for s in self._ctile[:2]) if len(self._ctile) > 1 else (int(self._ctile[0]), 1)
        if not (type(row) is int and type(col) is int and 0 <= row < M and 0 <= col < N):
            raise ValueError(f"Expected a cell of the {M}x{N} tile, but got ({row!r}, {col!r}).")
        t, v = (int(a) for a in self._cute_owner[:, row + M * col])
        r, c = (col, row) if self._transposed else (row, col)
        tm = int(self._ttile[0])
        tt, tv = (int(a) for a in self._triton_owner[:, r + tm * c])
        where = f" (Triton's ({r}, {c}))" if self._transposed else ""
        cute = f"CuTe T{t} V{v}" if t >= 0 else "CuTe: no thread"
        tri = f"Triton register {tv}, lane {tt % 32}, warp {tt // 32}" if tt >= 0 else "Triton: no thread"
        return f"({row}, {col}){where}: {cute} | {tri}"

    def _on_hover(self, change) -> None:
        h = change["new"]
        self.readout.value = "" if not h else f"<pre>{html.escape(self.describe(int(h[0]), int(h[1])))}</pre>"

    def to_svg(self) -> str:
        return hstack_svg([self.cute.to_svg(), self.triton.to_svg()],
                          captions=[f"CuTe: (thread, value) -> {self._what}",
                                    f"Triton: (register, lane, warp) -> {self._what}"])

    def __repr__(self) -> str:
        return f"TritonLayoutView({self._what}, {self._ll.direction})"
