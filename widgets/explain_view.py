"""ExplainView: ``wb.explain(op, *args)`` drawn step by step, one grid per intermediate layout.

Each panel is a step's layout as LayoutView draws it (the same window-by-window source, canvas and SVG
renderer), so a step of any size is drawn: a large one opens fitted, as a heat map, and zooms to its cells.
It is titled with the step's number and name and captioned with its formula and CuTe's reason.  Each step
is coloured by its own offsets on its own scale, with its own legend (one scale for all the steps would
make a small step one colour next to a large one); the cell labels give exact offsets.  A step holding an
int or a layout with symbolic extents is shown as text.  The static SVG (the picture output, ``save('x.svg')``,
``save('x.png')``) stays under 1 MB: the panels share one byte budget (a large step is drawn as its overview
and first tile), and panels beyond what it can hold are shown as text.
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
from .grid import MAX_LABELS, LayoutSource
from .svg import SVG_BUDGET, hstack_svg, panel_budget, table_svg, vstack_svg
from .svg import grid_svg as _grid_svg

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
        self._sources = None
        self.info = W.HTML(self._header_html())
        panels = []
        for k, (step, src) in enumerate(zip(explanation.steps, self.sources()), 1):
            if src is None:
                panels.append(W.HTML(self._text_html(k, step), layout=W.Layout(margin="0 12px 8px 0", max_width="100%")))
            else:   # each panel as wide as it draws, never wider than the output; the row wraps
                canvas = GridCanvas(layout=W.Layout(flex="0 1 auto", margin="0 12px 8px 0", max_width="100%"))
                canvas.describe = self._describer(src)
                canvas.show(src, step.formula)
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
        return ""

    def sources(self) -> list:
        """One LayoutSource per step (None for a step shown as text), each coloured by its own offsets."""
        if self._sources is None:
            out = []
            for k, step in enumerate(self.explanation.steps, 1):
                src = None
                if not self.not_drawn(step.value):
                    try:
                        src = LayoutSource(step.value)
                    except (ValueError, TypeError):   # e.g. a ? without a runtime value: shown as text
                        src = None
                if src is not None:
                    src.title = f"{k}. {step.name}"
                    src.notes = [step.why, *src.notes]
                out.append(src)
            self._sources = out
        return self._sources

    def grids(self) -> list:
        """Every cell of each step at once (None for a step shown as text or of more than 2^20 cells)."""
        return [None if s is None or s.shape[0] * s.shape[1] > MAX_LABELS else s.to_grid() for s in self.sources()]

    @staticmethod
    def _describer(src):
        def describe(row: int, col: int) -> str:
            off = int(src.offsets_at(np.array([row]), np.array([col]))[0, 0])
            crd = src.rows.label(row) if src.rank1 else f"({src.rows.label(row)},{src.cols.label(col)})"
            return f"index {row + src.rows.n * col}  coordinate {crd}  offset {off}"
        return describe

    # -- text ------------------------------------------------------------------------------------
    def rows(self) -> list[tuple[str, str]]:
        ex = self.explanation
        params = str(ex).split("\n", 1)[0]   # "op(A, B) with A = ..., B = ..."
        return [("explain", params), ("result", str(ex.result)), ("steps", str(len(ex.steps)))]

    def _header_html(self) -> str:
        body = "".join(f"<tr><td style='color:var(--jp-ui-font-color2, #555555);padding-right:1em;vertical-align:top'>"
                       f"{html.escape(k)}</td><td style='overflow-wrap:anywhere'><code style='white-space:pre-wrap'>"
                       f"{html.escape(v)}</code></td></tr>" for k, v in self.rows())
        return f"<table class='wb-explain' style='table-layout:fixed;width:100%'>{body}</table>"

    def _text_html(self, k: int, step) -> str:
        reason = self.not_drawn(step.value)
        muted = "color:var(--jp-ui-font-color2, #555555)"
        extra = f"<div style='{muted}'>not drawn: {html.escape(reason)}</div>" if reason else ""
        return (f"<div class='wb-step' style='white-space:normal;overflow-wrap:anywhere;max-width:100%'>"
                f"<b>{k}. {html.escape(step.name)}</b><br><code style='white-space:pre-wrap'>{html.escape(step.formula)}"
                f"</code><div style='{muted}'>{html.escape(step.why)}</div>{extra}</div>")

    # -- output ----------------------------------------------------------------------------------
    def to_svg(self) -> str:
        steps, grids = self.explanation.steps, self.sources()
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
