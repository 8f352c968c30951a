"""MarkingExplorer: what ``mark_layout_dynamic`` and ``mark_compact_shape_dynamic`` do to a tensor.

Each change of a control imports the source again (``wb.from_dlpack``: a fresh, fully static
tensor), applies the chosen marking and shows the static and the marked layout side by side:
the layout string, which shape and stride modes became ``?``, the leading dimension or stride
order that was used, and, when the marking is refused, the error's type and message in place
(nothing is raised into the notebook).
"""

from __future__ import annotations

import html

import ipywidgets as W

import workbench as wb

from .base import SvgFallback
from .canvas import GridCanvas, LiveMark
from .grid import LayoutSource
from .svg import grid_svg, hstack_svg, panel_budget, table_svg, vstack_svg

OPERATIONS = ("static", "mark_layout_dynamic", "mark_compact_shape_dynamic")


def _parse_order(text: str):
    text = text.strip().strip("()[]")
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x != "")
    except ValueError:
        raise ValueError(f"Expected stride_order as comma-separated ints such as '1,0', but got {text!r}.") from None


class MarkingExplorer(SvgFallback, W.VBox):
    """``MarkingExplorer(tensor)``: ``tensor`` is any ``__dlpack__`` object or a wb.Tensor."""

    def __init__(self, tensor, operation: str = "mark_layout_dynamic", draw: bool = True):
        if not hasattr(tensor, "__dlpack__"):
            raise TypeError(f"Expected a __dlpack__ object (torch/numpy/cupy array or wb.Tensor), but got {type(tensor).__name__}.")
        if operation not in OPERATIONS:
            raise ValueError(f"Expected operation to be one of {', '.join(OPERATIONS)}, but got {operation!r}.")
        self._source = tensor
        self._static = wb.from_dlpack(tensor)
        n = self._static.ndim
        self.operation_control = W.ToggleButtons(options=OPERATIONS, value=operation, description="marking",
                                                 style={"button_width": "auto"})   # whole names, never clipped
        self.leading_dim_control = W.Dropdown(options=[("None (deduce)", -1)] + [(str(i), i) for i in range(n)],
                                              value=-1, description="leading_dim")  # -1: None (a Dropdown shows None blank)
        self.mode_control = W.Dropdown(options=list(range(n)), value=0, description="mode")
        self.stride_order_control = W.Text(value="", placeholder="deduce, or e.g. 1,0", description="stride_order")
        self.divisibility_control = W.IntText(value=1, description="divisibility")
        self.info = W.HTML()
        # the grids compute only the windows they draw, so a tensor of any size is drawn
        self._draw = draw
        self._quiet = False
        self.static_canvas, self.marked_canvas = GridCanvas(), GridCanvas()
        self._marked = None
        self._error = ""
        self._apply()
        for c in (self.operation_control, self.leading_dim_control, self.mode_control,
                  self.stride_order_control, self.divisibility_control):
            c.observe(self._on_control, "value")
        # only the chosen marking's own arguments are shown
        self.layout_dynamic_controls = W.HBox([self.leading_dim_control])
        self.compact_controls = W.HBox([self.mode_control, self.stride_order_control, self.divisibility_control],
                                       layout=W.Layout(flex_flow="row wrap"))
        self._show_controls()
        self.operation_control.observe(lambda _ch: self._show_controls(), "value")
        controls = W.VBox([self.operation_control, self.layout_dynamic_controls, self.compact_controls])
        wrap = W.Layout(flex_flow="row wrap", align_items="flex-start")
        grids = W.HBox([self.static_canvas, self.marked_canvas], layout=wrap) if self._draw else W.HBox([LiveMark()])
        super().__init__([controls, self.info, grids])

    @property
    def _leading_dim(self):
        v = self.leading_dim_control.value
        return None if v == -1 else v

    def _show_controls(self) -> None:
        op = self.operation_control.value
        self.layout_dynamic_controls.layout.display = None if op == "mark_layout_dynamic" else "none"
        self.compact_controls.layout.display = None if op == "mark_compact_shape_dynamic" else "none"

    # -- the marking ---------------------------------------------------------------------------
    def _on_control(self, _change) -> None:
        if not self._quiet:
            self._apply()

    def _apply(self) -> None:
        op = self.operation_control.value
        t = wb.from_dlpack(self._source)
        self._error, self._marked = "", None
        try:
            if op == "mark_layout_dynamic":
                t.mark_layout_dynamic(leading_dim=self._leading_dim)
            elif op == "mark_compact_shape_dynamic":
                t.mark_compact_shape_dynamic(self.mode_control.value,
                                             stride_order=_parse_order(self.stride_order_control.value),
                                             divisibility=self.divisibility_control.value)
            self._marked = t
            _ = t.layout  # building the layout may refuse too; it belongs to the same step
        except (ValueError, TypeError, BufferError) as e:  # shown in place, never raised
            self._error = f"{type(e).__name__}: {e}"
            self._marked = None
        self._refresh()

    def _refresh(self) -> None:
        self.info.value = self._html()
        if self._draw:
            self.static_canvas.show(LayoutSource(self._static.layout), "static (from_dlpack)")
            if self._marked is not None:
                self.marked_canvas.show(LayoutSource(self._marked.layout), f"after {self.operation_control.value}")
                self.marked_canvas.layout.visibility = "visible"
            else:
                self.marked_canvas.layout.visibility = "hidden"

    # -- read-outs -----------------------------------------------------------------------------
    @property
    def error(self) -> str:
        """'' or 'ValueError: <message>' for the last marking."""
        return self._error

    @property
    def static_layout(self):
        return self._static.layout

    @property
    def marked_layout(self):
        return None if self._marked is None else self._marked.layout

    @property
    def tensor(self):
        """The marked tensor (None after an error)."""
        return self._marked

    def set(self, operation: str | None = None, *, leading_dim=None, mode: int = 0,
            stride_order: str | tuple | None = None, divisibility: int = 1) -> MarkingExplorer:
        """Set every control at once, like one call of the marking (one re-marking); returns self."""
        self._quiet = True
        try:
            if operation is not None:
                self.operation_control.value = operation
            self.leading_dim_control.value = -1 if leading_dim is None else leading_dim
            self.mode_control.value = mode
            if stride_order is not None:
                self.stride_order_control.value = stride_order if isinstance(stride_order, str) else ",".join(map(str, stride_order))
            else:
                self.stride_order_control.value = ""
            self.divisibility_control.value = divisibility
        finally:
            self._quiet = False
        self._apply()
        return self

    def rows(self) -> list[tuple[str, str]]:
        """The read-outs as (label, text) pairs: what the HTML panel and the SVG show."""
        s = self._static
        rows = [("source", f"{type(self._source).__module__.split('.')[0]}.{type(self._source).__name__} "
                           f"{s.element_type.name} shape {s.shape} stride {s.stride}"),
                ("static", str(s.layout)),
                ("operation", self._call_text())]
        m = self._marked
        if m is None:
            return rows
        rows.append(("marked", str(m.layout)))
        rows.append(("dynamic shapes", _mask_text(m.dynamic_shapes_mask)))
        rows.append(("dynamic strides", _mask_text(m.dynamic_strides_mask)))
        op = self.operation_control.value
        if op == "mark_layout_dynamic":
            given = self._leading_dim
            rows.append(("leading_dim", f"{m.leading_dim}" + (" (deduced)" if given is None else " (given)")))
        elif op == "mark_compact_shape_dynamic":
            given = _parse_order(self.stride_order_control.value)
            order = m.stride_order  # what the call used: the given order, or the tensor's own deduction
            rows.append(("stride_order", f"{order}" + (" (given)" if given is not None else " (deduced)")))
        return rows

    def _call_text(self) -> str:
        op = self.operation_control.value
        if op == "static":
            return "wb.from_dlpack(x)"
        if op == "mark_layout_dynamic":
            return f"wb.from_dlpack(x).mark_layout_dynamic(leading_dim={self._leading_dim})"
        so = self.stride_order_control.value.strip()
        return (f"wb.from_dlpack(x).mark_compact_shape_dynamic(mode={self.mode_control.value}, "
                f"stride_order={'(' + so + ')' if so else None}, divisibility={self.divisibility_control.value})")

    def _html(self) -> str:
        body = "".join(f"<tr><td style='color:var(--jp-ui-font-color2, #555555);padding-right:1em'>{html.escape(k)}</td>"
                       f"<td><code>{html.escape(v)}</code></td></tr>" for k, v in self.rows())
        err = (f"<div class='wb-error' style='color:var(--jp-error-color1, #d7191c);overflow-wrap:anywhere'><code>{html.escape(self._error)}</code></div>"
               if self._error else "")
        return f"<table class='wb-marking'>{body}</table>{err}"

    # -- output --------------------------------------------------------------------------------
    def to_svg(self) -> str:
        table = table_svg("MarkingExplorer", self.rows(), self._error)
        if not self._draw:
            return table
        layouts, caps = [self._static.layout], ["static"]
        if self._marked is not None:
            layouts.append(self._marked.layout)
            caps.append("marked")
        budget = panel_budget(len(layouts), len(table))   # the panels share one picture's bytes
        return vstack_svg([table, hstack_svg([grid_svg(LayoutSource(lay), budget=budget) for lay in layouts], caps)])

    def __repr__(self) -> str:
        s = self._static
        return f"MarkingExplorer({s.element_type.name}{list(s.shape)}, operation={self.operation_control.value!r})"


def _mask_text(mask) -> str:
    modes = [str(i) for i, b in enumerate(mask) if b]
    return f"{tuple(mask)}: " + (f"mode(s) {', '.join(modes)} became ?" if modes else "none")

