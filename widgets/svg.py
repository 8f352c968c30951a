"""Deterministic SVG for a :class:`~widgets.grid.Grid`.

The same grid always gives the same bytes: one ``<svg>`` element, integer geometry, a fixed
font, no ids, no timestamps and no object addresses.  This is the static fallback of every view
(``_repr_mimebundle_``, so a saved notebook still shows it on GitHub and in nbval) and its export
(``.to_svg()``).  Large grids stay one document of ``rows*cols`` rects and texts, grouped so that
shared attributes are written once.
"""

from __future__ import annotations

import re
from html import escape

import numpy as np

from .grid import Grid

FONT = "font-family=\"DejaVu Sans Mono,Menlo,Consolas,monospace\""
CHAR_W = 7       # px per character at font-size 11 (monospace), rounded up
CELL_H = 18
DYN_COLOR = "#b35806"   # dynamic (?) modes: orange text and dashed rules
SEL_COLOR = "#d7191c"


def _esc(s: str) -> str:
    return escape(s, quote=True)


def cell_width(grid: Grid) -> int:
    longest = max((len(grid.text(i)) for i in range(len(grid.keys))), default=1)
    longest = max(longest, max((len(s) for s in grid.cols.labels), default=1))
    return max(22, CHAR_W * longest + 8)


def grid_svg(grid: Grid, subtitle: str = "") -> str:
    """One SVG document for ``grid``; ``subtitle`` is a line of read-outs under the title."""
    nr, nc = grid.shape
    cw, ch = cell_width(grid), CELL_H
    row_lab_w = CHAR_W * max((len(s) for s in grid.rows.labels), default=1) + 12
    title_lines = [grid.title] + ([subtitle] if subtitle else []) + list(grid.notes)
    top = 18 * len(title_lines) + 40          # titles, then the column-mode line and column labels
    left = max(row_lab_w, 12)
    axis_len = max(len(f"columns {grid.cols.title} (dynamic)"), len(f"rows {grid.rows.title} (dynamic)"))
    width = max(left + nc * cw + 12, left + CHAR_W * axis_len + 8, CHAR_W * max(len(s) for s in title_lines) + 12)
    height = top + nr * ch + 26              # the row-mode line goes under the grid
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT} font-size="11">',
        f"<title>{_esc(grid.title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for k, line in enumerate(title_lines):
        weight = ' font-weight="bold"' if k == 0 else ""
        out.append(f'<text x="4" y="{14 + 18 * k}"{weight}>{_esc(line)}</text>')

    # axis titles: dynamic modes in orange with a dashed underline
    y_ct = top - 24
    out.append(_axis_title(f"columns {grid.cols.title}", left, y_ct, grid.cols.dynamic))
    out.append(_axis_title(f"rows {grid.rows.title}", left, top + nr * ch + 16, grid.rows.dynamic))

    # column and row labels
    col_fill = DYN_COLOR if grid.cols.dynamic else "#333333"
    out.append(f'<g text-anchor="middle" fill="{col_fill}">')
    for c, lab in enumerate(grid.cols.labels):
        out.append(f'<text x="{left + c * cw + cw // 2}" y="{top - 5}">{_esc(lab)}</text>')
    out.append("</g>")
    row_fill = DYN_COLOR if grid.rows.dynamic else "#333333"
    out.append(f'<g text-anchor="end" fill="{row_fill}">')
    for r, lab in enumerate(grid.rows.labels):
        out.append(f'<text x="{left - 5}" y="{top + r * ch + ch // 2 + 4}">{_esc(lab)}</text>')
    out.append("</g>")

    # cells: one group of rects, one group of texts
    colors = grid.colors.reshape(nr, nc)
    pal = grid.palette
    out.append('<g stroke="#555555" stroke-width="0.5">')
    for r in range(nr):
        y = top + r * ch
        row = colors[r]
        for c in range(nc):
            out.append(f'<rect x="{left + c * cw}" y="{y}" width="{cw}" height="{ch}" fill="{pal[row[c]]}"/>')
    out.append("</g>")
    out.append('<g text-anchor="middle">')
    i = 0
    for r in range(nr):
        y = top + r * ch + ch // 2 + 4
        for c in range(nc):
            t = grid.text(i)
            if t:
                out.append(f'<text x="{left + c * cw + cw // 2}" y="{y}">{_esc(t)}</text>')
            i += 1
    out.append("</g>")

    # nesting: heavier rules where a nested sub-mode wraps
    out.append(_rules(grid, left, top, cw, ch))

    if grid.selected is not None:
        hit = np.flatnonzero(grid.keys == grid.selected)
        out.append(f'<g fill="none" stroke="{SEL_COLOR}" stroke-width="2.5">')
        for i in hit.tolist():
            r, c = divmod(i, nc)
            out.append(f'<rect x="{left + c * cw + 1}" y="{top + r * ch + 1}" width="{cw - 2}" height="{ch - 2}"/>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _axis_title(text: str, x: int, y: int, dynamic: bool) -> str:
    if not dynamic:
        return f'<text x="{x}" y="{y}" fill="#333333">{_esc(text)}</text>'
    w = CHAR_W * len(text)
    return (f'<g fill="{DYN_COLOR}"><text x="{x}" y="{y}" font-style="italic">{_esc(text)} (dynamic)</text>'
            f'<line x1="{x}" y1="{y + 3}" x2="{x + w}" y2="{y + 3}" stroke="{DYN_COLOR}" stroke-dasharray="3,2"/></g>')


def _rules(grid: Grid, left: int, top: int, cw: int, ch: int) -> str:
    nr, nc = grid.shape
    out = ['<g stroke="#000000">']
    for level, period in enumerate(grid.cols.groups):
        dash = ' stroke-dasharray="4,2"' if grid.cols.dynamic else ""
        for c in range(period, nc, period):
            x = left + c * cw
            out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{top + nr * ch}" stroke-width="{1 + level}"{dash}/>')
    for level, period in enumerate(grid.rows.groups):
        dash = ' stroke-dasharray="4,2"' if grid.rows.dynamic else ""
        for r in range(period, nr, period):
            y = top + r * ch
            out.append(f'<line x1="{left}" y1="{y}" x2="{left + nc * cw}" y2="{y}" stroke-width="{1 + level}"{dash}/>')
    out.append(f'<rect x="{left}" y="{top}" width="{nc * cw}" height="{nr * ch}" fill="none" stroke-width="1.5"/>')
    out.append("</g>")
    return "\n".join(out)


_SIZE = re.compile(r'<svg [^>]*width="(\d+)" height="(\d+)"')


def hstack_svg(parts: list[str], captions: list[str] | None = None, gap: int = 16) -> str:
    """Several grid SVGs side by side in one document (nested ``<svg>`` elements), captions above."""
    sizes = [tuple(int(x) for x in _SIZE.search(p).groups()) for p in parts]
    cap_h = 18 if captions else 0
    width = sum(w for w, _ in sizes) + gap * (len(parts) - 1)
    height = max(h for _, h in sizes) + cap_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT} font-size="11">']
    x = 0
    for k, (p, (w, h)) in enumerate(zip(parts, sizes)):
        if captions:
            out.append(f'<text x="{x + 4}" y="13" font-weight="bold">{_esc(captions[k])}</text>')
        body = p.split(">", 1)[1].rsplit("</svg>", 1)[0]   # drop the outer tag, keep the content
        out.append(f'<svg x="{x}" y="{cap_h}" width="{w}" height="{h}" viewBox="0 0 {w} {h}">{body}</svg>')
        x += w + gap
    out.append("</svg>")
    return "\n".join(out) + "\n"


def table_svg(title: str, rows: list[tuple[str, str]], error: str = "") -> str:
    """A two-column key/value table as one SVG (the static form of the text views)."""
    kw = max((len(k) for k, _ in rows), default=4) * CHAR_W + 16
    vw = max([len(v) for _, v in rows] + [0]) * CHAR_W + 16
    width, line = max(kw + vw, CHAR_W * max(len(title), len(error)) + 16), 18
    height = line * (len(rows) + 1 + bool(error)) + 12
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT} font-size="11">',
           f"<title>{_esc(title)}</title>",
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="4" y="14" font-weight="bold">{_esc(title)}</text>']
    for i, (k, v) in enumerate(rows):
        y = line * (i + 1) + 14
        if i % 2 == 0:
            out.append(f'<rect x="0" y="{y - 13}" width="{width}" height="{line}" fill="#f2f2f2"/>')
        out.append(f'<text x="4" y="{y}" fill="#555555">{_esc(k)}</text><text x="{kw}" y="{y}">{_esc(v)}</text>')
    if error:
        out.append(f'<text x="4" y="{line * (len(rows) + 1) + 14}" fill="{SEL_COLOR}">{_esc(error)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def vstack_svg(parts: list[str], gap: int = 8) -> str:
    """Several SVGs one under the other in one document."""
    sizes = [tuple(int(x) for x in _SIZE.search(p).groups()) for p in parts]
    width = max(w for w, _ in sizes)
    height = sum(h for _, h in sizes) + gap * (len(parts) - 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT} font-size="11">']
    y = 0
    for p, (w, h) in zip(parts, sizes):
        body = p.split(">", 1)[1].rsplit("</svg>", 1)[0]
        out.append(f'<svg x="0" y="{y}" width="{w}" height="{h}" viewBox="0 0 {w} {h}">{body}</svg>')
        y += h + gap
    out.append("</svg>")
    return "\n".join(out) + "\n"
