"""AlgebraPlayground: type two layouts, pick an operation, see A, B and the result side by side.

Colouring is shared: every cell is coloured by the offset of A's codomain it finally denotes, on
one scale for the three grids (the legend gives its ends; the cell labels give exact values), so the
same memory element has the same colour everywhere.  A's cells show A(i); the result's cells show
R(i); B's cells, when B's values index A's domain (composition, the divides), are coloured by A(B(i)),
otherwise by their own offset.  Every error the typed text leads to (parse, algebra, drawing: offsets beyond
int64) is shown in place with its message, and what is shown is bounded: at most ``MAX_TEXT`` characters are
read from each box, and each read-out line is cut at ``MAX_SHOWN`` characters, saying so.
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

import workbench as wb
from workbench.layout import Layout, parse_layout

from .base import SvgFallback
from .canvas import GridCanvas
from .colors import scale_indices
from .grid import layout_grid
from .svg import grid_svg, hstack_svg, panel_budget, table_svg, vstack_svg

# name -> (function, how B is read: 'layout' or 'int-or-empty', whether B indexes A's domain)
OPERATIONS = {
    "composition": (wb.composition, "layout", True),
    "complement": (wb.complement, "int-or-empty", False),
    "logical_divide": (wb.logical_divide, "layout", True),
    "zipped_divide": (wb.zipped_divide, "layout", True),
    "tiled_divide": (wb.tiled_divide, "layout", True),
    "logical_product": (wb.logical_product, "layout", False),
    "zipped_product": (wb.zipped_product, "layout", False),
    "blocked_product": (wb.blocked_product, "layout", False),
    "raked_product": (wb.raked_product, "layout", False),
    "coalesce": (wb.coalesce, "none", False),
    "right_inverse": (wb.right_inverse, "none", False),
    "left_inverse": (wb.left_inverse, "none", False),
}
MAX_DRAWN = 4096
MAX_TEXT = 2000     # characters read from a text box (a layout of rank 1000 is about 4000: far past any use here)
MAX_SHOWN = 400     # characters of one read-out value


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 40] + f" ... ({len(text)} characters in all)"


class AlgebraPlayground(SvgFallback, W.VBox):
    """``AlgebraPlayground(a='(4,2):(1,4)', b='(2,2):(2,1)', operation='composition')``."""

    def __init__(self, a: str = "(4,2):(1,4)", b: str = "(2,2):(2,1)", operation: str = "composition"):
        if operation not in OPERATIONS:
            raise ValueError(f"Expected operation to be one of {', '.join(OPERATIONS)}, but got {operation!r}.")
        self.a_control = W.Text(value=a, description="A", continuous_update=False)
        self.b_control = W.Text(value=b, description="B", continuous_update=False)
        self.op_control = W.Dropdown(options=list(OPERATIONS), value=operation, description="operation")
        self.info = W.HTML()
        # each panel keeps its own width; the row wraps instead of squeezing B
        self.canvases = [GridCanvas(layout=W.Layout(flex="0 0 auto", margin="0 12px 8px 0")) for _ in range(3)]
        self.A = self.B = self.result = None
        self._error = ""
        self._compute()
        for c in (self.a_control, self.b_control, self.op_control):
            c.observe(lambda _ch: self._compute(), "value")
        wrap = W.Layout(flex_flow="row wrap", align_items="flex-start")
        super().__init__([W.HBox([self.a_control, self.b_control, self.op_control], layout=wrap), self.info,
                          W.HBox(self.canvases, layout=wrap)])

    # -- computation ---------------------------------------------------------------------------
    def _compute(self) -> None:
        op = self.op_control.value
        fn, bkind, b_indexes_a = OPERATIONS[op]
        self.A = self.B = self.result = None
        self._error = ""
        self._b_indexes_a = b_indexes_a
        self._grids = [None, None, None]
        try:
            for name, box in (("A", self.a_control), ("B", self.b_control)):
                if len(box.value) > MAX_TEXT:
                    raise ValueError(f"Expected at most {MAX_TEXT} characters of layout text in {name}, but got "
                                     f"{len(box.value)}.")
            self.A = parse_layout(self.a_control.value)
            btext = self.b_control.value.strip()
            if bkind == "layout":
                self.B = parse_layout(btext)
            for name, lay in (("A", self.A), ("B", self.B)):
                if lay is not None and type(lay.size) is int and lay.size == 0:    # the algebra divides by sizes; an empty layout maps nothing
                    raise ValueError(f"Expected a layout of at least one element for {name} of {op}, but got {lay} "
                                     "of size 0 (it maps no coordinate).")
            if bkind == "layout":
                self.result = fn(self.A, self.B)
            elif bkind == "int-or-empty":
                arg = None if not btext else _int_or_shape(btext)
                self.result = fn(self.A) if arg is None else fn(self.A, arg)
            else:
                self.result = fn(self.A)
            if type(self.result) is not Layout:
                raise TypeError(f"Expected the {op} of two layouts to be a Layout, but got {type(self.result).__name__}.")
            self._grids = self._draw()   # drawing evaluates offsets, which may refuse too (beyond int64)
        except Exception as e:   # noqa: BLE001 - typed text: whatever it leads to is shown in place, never lost
            self._error = _cut(f"{type(e).__name__}: {e}")
        self._refresh()

    def grids(self) -> list:
        """The drawable grids (A, B, result), each None when absent, too large to draw or not drawable
        (then :attr:`error` says why)."""
        return list(self._grids)

    def _draw(self) -> list:
        out, denoted = [], []
        a_off = None
        if self.A is not None and self.A.is_static and self.A.size <= MAX_DRAWN:
            a_off = self.A.offsets()
        for which, lay in (("A", self.A), ("B", self.B), ("result", self.result)):
            if lay is None or not lay.is_static or lay.size > MAX_DRAWN:
                out.append(None)
                denoted.append(None)
                continue
            g = layout_grid(lay)
            d = g.keys
            if which == "B" and self._b_indexes_a and a_off is not None:
                b = g.keys.astype(np.int64)
                if b.size and b.min() >= 0 and b.max() < len(a_off):   # B's values are A's coordinates
                    d = a_off[b].astype(np.float64)
            g.title = f"{which} = {lay}"
            out.append(g)
            denoted.append(d)
        present = [d for d in denoted if d is not None and d.size]
        if present:   # one scale for all three grids
            lo, hi = min(float(d.min()) for d in present), max(float(d.max()) for d in present)
            for g, d in zip(out, denoted):
                if g is not None:
                    g.colors = scale_indices(d, lo, hi)
                    g.legend = {"kind": "scale", "label": "colour: offset of A's codomain (shared)",
                                "lo": int(lo), "hi": int(hi)}
        return out

    def _refresh(self) -> None:
        rows = self.rows()
        body = "".join(f"<tr><td style='color:var(--jp-ui-font-color2, #555555);padding-right:1em'>{html.escape(k)}</td>"
                       f"<td style='overflow-wrap:anywhere'><code>{html.escape(v)}</code></td></tr>" for k, v in rows)
        err = (f"<div class='wb-error' style='color:var(--jp-error-color1, #d7191c);overflow-wrap:anywhere'><code>{html.escape(self._error)}</code></div>"
               if self._error else "")
        self.info.value = f"<table class='wb-algebra'>{body}</table>{err}"
        for canvas, g in zip(self.canvases, self.grids()):
            if g is None:
                canvas.layout.display = "none"
            else:
                canvas.layout.display = None
                canvas.show(g)

    # -- read-outs -----------------------------------------------------------------------------
    @property
    def error(self) -> str:
        return self._error

    def rows(self) -> list[tuple[str, str]]:
        op = self.op_control.value
        bkind = OPERATIONS[op][1]
        call = {"layout": f"wb.{op}(A, B)", "int-or-empty": f"wb.{op}(A{', B' if self.b_control.value.strip() else ''})",
                "none": f"wb.{op}(A)"}[bkind]
        rows = [("A", str(self.A) if self.A is not None else self.a_control.value),
                ("B", str(self.B) if self.B is not None else (self.b_control.value if bkind != "none" else "(unused)")),
                ("call", call)]
        if self.result is not None:
            rows.append(("result", str(self.result)))
            rows.append(("size / cosize", f"{self.result.size} / {self.result.cosize}"))
        big = [name for name, lay in (("A", self.A), ("B", self.B), ("result", self.result))
               if lay is not None and lay.is_static and lay.size > MAX_DRAWN]
        if big:   # the shared colouring enumerates A, B and the result: say what is not drawn
            rows.append(("not drawn", f"{', '.join(big)}: more than {MAX_DRAWN} cells (use LayoutView for any size)"))
        return [(k, _cut(v)) for k, v in rows]

    def to_svg(self) -> str:
        table = table_svg("AlgebraPlayground", self.rows(), self._error)
        grids = [g for g in self.grids() if g is not None]
        budget = panel_budget(len(grids), len(table))   # the panels share one picture's bytes
        parts = [grid_svg(g, budget=budget) for g in grids]
        return vstack_svg([table, hstack_svg(parts)]) if parts else table

    def __repr__(self) -> str:
        return f"AlgebraPlayground({self.op_control.value}, A={self.a_control.value}, B={self.b_control.value})"


def _int_or_shape(text: str):
    try:
        return int(text)
    except ValueError:
        return parse_layout(text).shape
