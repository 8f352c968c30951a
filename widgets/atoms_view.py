"""MMAView and CopyView: which thread holds which element of a TiledMMA's A, B, C or a TiledCopy's tile.

Drawn like CuTe's ``print_latex(TiledMMA)``: A is M x K, B is N x K, C is M x N, every cell
``T#V#`` and coloured by thread with CuTe's eight TV colours.  In the browser (own anywidget
module, atoms_view.js, one canvas a panel so a 64x256 GMMA C stays responsive) clicking a cell
selects its thread in every panel; hovering reports (panel, thread, value) -> (row, col) back to
the kernel in ``hover``.  ``to_svg()`` is the deterministic static fallback: one ``<path>`` per
thread, labels only where cells are big enough, so its size is bounded by the cell count.
"""

from __future__ import annotations

import html
from pathlib import Path

import anywidget
import numpy as np
import traitlets as t

from workbench.atoms import TiledCopy, TiledMMA, bank_conflicts, suggest_swizzle

# CuTe's print_latex TV colours (thread % 8)
PALETTE = ["#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2"]
MAX_SVG_PANEL = 1100  # px: the longest side of one panel in the static SVG


def owners(tv, rows: int, cols: int):
    """(thread, value) owning each (row, col) of a rows x cols tile (column-major tile index), -1 where none."""
    nt, nv = tv[0].size, tv[1].size
    idx = np.asarray(tv.offsets()).reshape(nv, nt).T
    thr = np.full(rows * cols, -1, np.int64)
    val = np.full(rows * cols, -1, np.int64)
    flat = idx.T.reshape(-1)[::-1]  # reversed so the lowest (t, v) wins on a broadcast
    thr[flat] = np.tile(np.arange(nt), nv)[::-1]
    val[flat] = np.repeat(np.arange(nv), nt)[::-1]
    return thr.reshape(cols, rows).T, val.reshape(cols, rows).T


def _panel(name, title, row_name, col_name, thr, val):
    return {"name": name, "title": title, "rows": int(thr.shape[0]), "cols": int(thr.shape[1]),
            "row_name": row_name, "col_name": col_name,
            "thr": thr.reshape(-1).tolist(), "val": val.reshape(-1).tolist()}


def _panel_svg(p, selected, x0, y0):
    rows, cols = p["rows"], p["cols"]
    cell = max(2, min(34, MAX_SVG_PANEL // max(rows, cols)))
    thr = np.asarray(p["thr"]).reshape(rows, cols)
    val = np.asarray(p["val"]).reshape(rows, cols)
    out = [f'<g transform="translate({x0},{y0})">',
           f'<text x="0" y="-6" font-size="12" font-weight="bold">{html.escape(p["title"])}</text>']
    paths = {}
    for r in range(rows):
        c = 0
        while c < cols:  # merge runs of one thread along a row: fewer path segments
            t0 = thr[r, c]
            e = c + 1
            while e < cols and thr[r, e] == t0:
                e += 1
            paths.setdefault(int(t0), []).append(f"M{c * cell} {r * cell}h{(e - c) * cell}v{cell}h{-(e - c) * cell}z")
            c = e
    for t0 in sorted(paths):
        fill = "#ffffff" if t0 < 0 else PALETTE[t0 % 8]
        stroke = ' stroke="#000" stroke-width="2"' if t0 == selected and t0 >= 0 else ""
        out.append(f'<path fill="{fill}"{stroke} d="{"".join(paths[t0])}"/>')
    if cell >= 28:  # labels only where they are legible
        out.append('<g font-size="7" text-anchor="middle">')
        for r in range(rows):
            for c in range(cols):
                if thr[r, c] >= 0:
                    out.append(f'<text x="{c * cell + cell // 2}" y="{r * cell + cell // 2 + 3}">T{thr[r, c]}V{val[r, c]}</text>')
        out.append("</g>")
    out.append(f'<rect x="0" y="0" width="{cols * cell}" height="{rows * cell}" fill="none" stroke="#444"/>')
    out.append(f'<text x="0" y="{rows * cell + 14}" font-size="10">{html.escape(p["row_name"])} = {rows} rows, '
               f'{html.escape(p["col_name"])} = {cols} cols</text></g>')
    return "\n".join(out), cols * cell, rows * cell + 20


def panels_svg(panels, selected=-1, footer=()):
    parts, x, height = [], 10, 0
    for p in panels:
        s, w, h = _panel_svg(p, selected, x, 24)
        parts.append(s)
        x += w + 24
        height = max(height, h)
    y = height + 40
    for line in footer:
        parts.append(f'<text x="10" y="{y}" font-size="11" font-family="monospace">{html.escape(line)}</text>')
        y += 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x}" height="{y}" font-family="sans-serif">\n'
            + "\n".join(parts) + "\n</svg>\n")


class _AtomsWidget(anywidget.AnyWidget):
    _esm = Path(__file__).with_name("atoms_view.js")

    panels = t.List().tag(sync=True)
    palette = t.List(t.Unicode(), default_value=PALETTE).tag(sync=True)
    thread = t.Int(-1).tag(sync=True)           # the selected thread, -1 none
    hover = t.Dict().tag(sync=True)             # {panel, thread, value, row, col} or {}
    readout = t.List(t.Unicode()).tag(sync=True)

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        meta = None
        if isinstance(data, tuple):
            data, meta = data
        data = dict(data or {})
        data["image/svg+xml"] = self.to_svg()
        data["text/plain"] = repr(self)
        return (data, meta) if meta is not None else data

    def to_svg(self) -> str:
        return panels_svg(self.panels, self.thread, self.readout)

    def select(self, thread: int):
        if type(thread) is not int or not -1 <= thread < self._num_threads:
            raise ValueError(f"select: expected a thread in [-1, {self._num_threads}), but got {thread!r}.")
        self.thread = thread
        return self


class MMAView(_AtomsWidget):
    """``MMAView(tiled_mma, thread=-1)``: A (M x K), B (N x K) and C (M x N) of a TiledMMA."""

    def __init__(self, tiled_mma, thread: int = -1, **kw):
        if not isinstance(tiled_mma, TiledMMA):
            raise TypeError(f"MMAView: expected a TiledMMA (wb.make_tiled_mma(...)), but got {type(tiled_mma).__name__}.")
        self.tiled_mma = tiled_mma
        self._num_threads = tiled_mma.size
        m, n, k = tiled_mma.tile_shape_mnk
        panels = [
            _panel("A", f"A ({m} x {k})", "M", "K", *owners(tiled_mma.tv_layout_A_tiled, m, k)),
            _panel("B", f"B ({n} x {k})", "N", "K", *owners(tiled_mma.tv_layout_B_tiled, n, k)),
            _panel("C", f"C ({m} x {n})", "M", "N", *owners(tiled_mma.tv_layout_C_tiled, m, n)),
        ]
        super().__init__(panels=panels, readout=[repr(tiled_mma)], **kw)
        self.select(thread)

    def __repr__(self):
        return f"MMAView({self.tiled_mma!r}, thread={self.thread})"


class CopyView(_AtomsWidget):
    """``CopyView(tiled_copy, smem_layout=None)``: the copy's source and destination (M x N) tiles.

    With a shared-memory layout, the read-out gives the instruction's wavefronts per phase on it
    and after the swizzle :func:`workbench.atoms.suggest_swizzle` finds (or ``swizzled``, a
    ComposedLayout to compare with instead).
    """

    def __init__(self, tiled_copy, smem_layout=None, swizzled=None, side=None, thread: int = -1, **kw):
        if not isinstance(tiled_copy, TiledCopy):
            raise TypeError(f"CopyView: expected a TiledCopy (wb.make_tiled_copy...), but got {type(tiled_copy).__name__}.")
        self.tiled_copy = tiled_copy
        self._num_threads = tiled_copy.size
        m, n = tiled_copy.tiler_mn
        panels = [_panel("src", f"src ({m} x {n})", "M", "N", *owners(tiled_copy.layout_src_tv_tiled, m, n)),
                  _panel("dst", f"dst ({m} x {n})", "M", "N", *owners(tiled_copy.layout_dst_tv_tiled, m, n))]
        readout = [repr(tiled_copy.atom) + f" x {tiled_copy.size} threads, tile {m} x {n}"]
        self.before = self.after = self.suggestion = None
        if smem_layout is not None:
            self.before = bank_conflicts(tiled_copy, smem_layout, side=side)
            if swizzled is None and type(smem_layout).__name__ == "Layout":
                self.suggestion = suggest_swizzle(tiled_copy, smem_layout, side=side)
                swizzled = self.suggestion.layout
            if swizzled is not None:
                self.after = bank_conflicts(tiled_copy, swizzled, side=side)
            readout += _conflict_lines(self.before, smem_layout, self.after, swizzled)
        super().__init__(panels=panels, readout=readout, **kw)
        self.select(thread)

    def __repr__(self):
        return f"CopyView({self.tiled_copy!r}, thread={self.thread})"


def _conflict_lines(before, smem, after, swizzled, max_phases=16):
    lines = [f"{before.instruction}: {before.threads_per_phase} threads a phase, {len(before.wavefronts)} phases"]
    lines.append(f"smem {smem}: {before.total} wavefronts (ideal {before.ideal_total}), worst {before.max_ways}-way")
    if after is not None:
        lines.append(f"swizzled {swizzled}: {after.total} wavefronts (ideal {after.ideal_total}), "
                     f"worst {after.max_ways}-way")
    head = before.wavefronts[:max_phases]
    lines.append("wavefronts per phase, before: " + " ".join(map(str, head))
                 + (" ..." if len(before.wavefronts) > max_phases else ""))
    if after is not None:
        lines.append("wavefronts per phase, after:  " + " ".join(map(str, after.wavefronts[:max_phases]))
                     + (" ..." if len(after.wavefronts) > max_phases else ""))
    return lines
