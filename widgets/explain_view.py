"""ExplainView: ``wb.explain(op, *args)`` drawn step by step, one grid per intermediate layout.

Each panel is a step's layout as LayoutView draws it (the same grids, canvas and SVG renderer), titled with
the step's number and name and captioned with its formula and CuTe's reason.  Colour is the offset on one
scale shared by every panel, so equal offsets have equal colours in every step (the cell labels give exact
values).  A step holding an int, a layout of more than ``MAX_DRAWN`` cells or one with symbolic extents is
shown as text.  The static SVG (the mimebundle's fallback, ``save('x.svg')``, ``save('x.png')``) stays under
1 MB: the panels share one byte budget, and panels beyond what it can hold are shown as text.
"""

from __future__ import annotations

import html
import inspect

import ipywidgets as W
import numpy as np

from workbench.layout import Layout, known_value
from workbench.layout.explanation import Explanation, explain

from .base import SvgFallback
from .canvas import GridCanvas
from .colors import scale_indices
from .grid import layout_grid
from .svg import SVG_BUDGET, hstack_svg, panel_budget, table_svg, vstack_svg
from .svg import grid_svg as _grid_svg

MAX_DRAWN = 4096        # cells of one panel (as AlgebraPlayground): the shared colouring enumerates every panel
PER_ROW = 3             # panels side by side in the static picture
MIN_PANEL = 22_000      # bytes a drawn panel needs at least (panel_budget's floor and its frame)


class ExplainView(SvgFallback, W.VBox):
    """``ExplainView(wb.explain(op, *args))``, or ``ExplainView(op, *args)`` to explain and draw at once."""

    def __init__(self, explanation, *args):
        if not isinstance(explanation, Explanation):
            if not (isinstance(explanation, str) or inspect.isroutine(explanation)):
                raise TypeError(f"Expected an Explanation (wb.explain(op, *args)) or an op and its arguments, but got "
                                f"{type(explanation).__name__}.")
            explanation = explain(explanation, *args)
        elif args:
            raise TypeError(f"Expected an Explanation alone, but got {len(args)} more argument(s).")
        self.explanation = explanation
        self._grids = None
        self.info = W.HTML(self._header_html())
        panels = []
        for k, (step, g) in enumerate(zip(explanation.steps, self.grids()), 1):
            if g is None:
                panels.append(W.HTML(self._text_html(k, step), layout=W.Layout(margin="0 12px 8px 0")))
            else:
                canvas = GridCanvas(layout=W.Layout(flex="0 0 auto", margin="0 12px 8px 0"))
                canvas.show(g, step.formula)
                panels.append(canvas)
        self.panels = panels
        super().__init__([self.info, W.HBox(panels, layout=W.Layout(flex_flow="row wrap", align_items="flex-start"))])

    # -- what is drawn ---------------------------------------------------------------------------
    def not_drawn(self, value) -> str:
        """Why a step's value is shown as text ('' when it is drawn)."""
        if type(value) is not Layout:
            return f"a {type(value).__name__}, not a layout"
        n = known_value(value.size)   # a ? that carries its run-time value is drawn with it, as LayoutView does
        if n is None:
            return "symbolic extents (no run-time values) have no cells to draw"
        if n > MAX_DRAWN:
            return f"{n} cells, more than {MAX_DRAWN} (LayoutView draws any size)"
        return ""

    def grids(self) -> list:
        """One grid per step (None for a step shown as text), coloured by offset on one shared scale."""
        if self._grids is None:
            out = []
            for k, step in enumerate(self.explanation.steps, 1):
                g = None
                if not self.not_drawn(step.value):
                    try:
                        g = layout_grid(step.value)
                    except (ValueError, TypeError):   # e.g. a ? without a runtime value: shown as text
                        g = None
                if g is not None:
                    g.title = f"{k}. {step.name}"
                    g.notes = [step.why, *g.notes]
                out.append(g)
            keys = [g.keys[~np.isnan(g.keys)] for g in out if g is not None]
            keys = [x for x in keys if x.size]
            if keys:   # one scale for every panel: equal offsets, equal colours
                lo, hi = min(float(x.min()) for x in keys), max(float(x.max()) for x in keys)
                for g in out:
                    if g is not None:
                        g.colors = scale_indices(g.keys, lo, hi)
                        g.legend = {"kind": "scale", "label": "colour: offset, one scale for every step",
                                    "lo": int(lo), "hi": int(hi),
                                    "note": "equal offsets have equal colours; labels give exact offsets"}
            self._grids = out
        return self._grids

    # -- text ------------------------------------------------------------------------------------
    def rows(self) -> list[tuple[str, str]]:
        ex = self.explanation
        params = str(ex).split("\n", 1)[0]   # "op(A, B) with A = ..., B = ..."
        return [("explain", params), ("result", str(ex.result)), ("steps", str(len(ex.steps)))]

    def _header_html(self) -> str:
        body = "".join(f"<tr><td style='color:#555;padding-right:1em'>{html.escape(k)}</td>"
                       f"<td><code>{html.escape(v)}</code></td></tr>" for k, v in self.rows())
        return f"<table class='wb-explain'>{body}</table>"

    def _text_html(self, k: int, step) -> str:
        reason = self.not_drawn(step.value)
        extra = f"<div style='color:#555'>not drawn: {html.escape(reason)}</div>" if reason else ""
        return (f"<div class='wb-step'><b>{k}. {html.escape(step.name)}</b><br><code>{html.escape(step.formula)}"
                f"</code><div style='color:#555'>{html.escape(step.why)}</div>{extra}</div>")

    # -- output ----------------------------------------------------------------------------------
    def to_svg(self) -> str:
        steps, grids = self.explanation.steps, self.grids()
        header = table_svg("wb.explain", self.rows())
        drawn = [k for k, g in enumerate(grids) if g is not None]
        # text panels are small: reserve them, then draw as many grids as the budget holds, in step order
        used = len(header) + 2_000 * (len(steps) - len(drawn))
        room = max(0, (SVG_BUDGET - used) // MIN_PANEL)
        drawn = set(drawn[:room])
        budget = panel_budget(len(drawn), used)
        parts = []
        for k, (step, g) in enumerate(zip(steps, grids)):
            if k in drawn:
                parts.append(_grid_svg(g, step.formula, budget))
                continue
            reason = self.not_drawn(step.value) or "the static picture's 1 MB budget is spent (the live view draws it)"
            parts.append(table_svg(f"{k + 1}. {step.name}",
                                   [("formula", step.formula), ("why", step.why), ("not drawn", reason)]))
        rows = [hstack_svg(parts[i:i + PER_ROW]) for i in range(0, len(parts), PER_ROW)]
        return vstack_svg([header, *rows])

    def __repr__(self) -> str:
        ex = self.explanation
        return f"ExplainView({ex.op}: {len(ex.steps)} steps, result {ex.result})"
