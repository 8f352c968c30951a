"""Deterministic SVG for a :class:`~widgets.grid.Grid`.

The same grid always gives the same bytes: one ``<svg>`` element, integer geometry, a fixed
font, no ids, no timestamps and no object addresses.  This is the static fallback of every view
(the picture output written before the widget, so a saved notebook shows it everywhere and nbval compares it) and its export
(``.to_svg()``).  Its size is bounded whatever the grid's: every document is built within a byte budget
(``SVG_BUDGET`` for a whole view, shared out among the panels of a view that draws several); a grid is
drawn whole when that fits, else as an overview heat map plus its first tile (see :func:`grid_svg`).
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from html import escape

import numpy as np

from .colors import text_color

FONT = "font-family=\"DejaVu Sans Mono,Menlo,Consolas,monospace\""
CHAR_W = 7       # px per character at font-size 11 (monospace), rounded up
CELL_H = 18
DYN_COLOR = "#b35806"   # dynamic (?) modes: orange text and dashed rules
SEL_COLOR = "#d7191c"
FIT = 'style="max-width:100%;height:auto"'   # a picture shown inline shrinks to its box, aspect kept (viewBox)


def _esc(s: str) -> str:
    return escape(s, quote=True)


SVG_MAX_BYTES = 1_000_000   # every view's static picture is smaller than this, at any size
SVG_BUDGET = SVG_MAX_BYTES - 40_000   # a view's grids: the rest is room for its tables, captions and frames
SVG_FULL_CELLS = 4096   # grids up to this many cells are drawn whole when that fits the budget
FIRST_TILE = 32         # otherwise: the overview, then the first FIRST_TILE x FIRST_TILE cells (fewer if need be)
OVERVIEW_BLOCKS = 128   # the overview heat map's blocks per axis (an embedded PNG; fewer on a small budget)
MAX_LINE = 480          # characters of one text line (a title of a huge layout is cut, saying so)
MAX_SIDE_PX = 8192      # a picture's width and height: beyond, a notebook cell (or a PNG) is mostly scrolling


def _clip(text: str) -> str:
    if len(text) <= MAX_LINE:
        return text
    return text[:MAX_LINE - 40] + f" ... ({len(text)} characters in all)"


def panel_budget(panels: int, used: int = 0) -> int:
    """Bytes each of ``panels`` grids of one view may take, after ``used`` bytes of its other parts
    (tables, captions): together they stay within ``SVG_BUDGET``."""
    return max(20_000, (SVG_BUDGET - used) // max(1, panels) - 2_000)


def _png(rgb: np.ndarray, level: int = 9) -> bytes:
    """A truecolour PNG of an (h, w, 3) uint8 array (deterministic: fixed zlib level, no metadata)."""
    h, w, _ = rgb.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, 3 * w)], axis=1).tobytes()   # filter 0 rows

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


def _rgb(palette) -> np.ndarray:
    return np.array([[int(c[k:k + 2], 16) for k in (1, 3, 5)] for c in palette], np.uint8)


def cell_width(texts: list, col_labels: list) -> int:
    longest = max([len(t) for t in texts] + [len(s) for s in col_labels] + [1])
    return max(22, CHAR_W * longest + 8)


def _legend_svg(legend: dict, x: int, y: int) -> tuple[list, int, int]:
    """SVG elements of a legend at (x, y): (elements, width, height)."""
    if not legend:
        return [], 0, 0
    label = _clip(legend["label"])
    out = [f'<text x="{x}" y="{y + 12}" fill="#333333">{_esc(label)}</text>']
    w = CHAR_W * len(label)
    if legend["kind"] == "scale":
        from .colors import SEQUENTIAL

        stops = legend.get("stops") or SEQUENTIAL   # a scale of its own (the banks' hue wheel) or viridis
        for k in range(32):
            out.append(f'<rect x="{x + 5 * k}" y="{y + 18}" width="5" height="10" '
                       f'fill="{stops[k * (len(stops) - 1) // 31]}"/>')
        hi = str(legend["hi"])
        out.append(f'<text x="{x}" y="{y + 40}">{_esc(str(legend["lo"]))}</text>')
        out.append(f'<text x="{x + 160}" y="{y + 40}" text-anchor="end">{_esc(hi)}</text>')
        h = 44
        if legend.get("note"):
            note = _clip(legend["note"])
            out.append(f'<text x="{x}" y="{y + 56}" fill="#555555">{_esc(note)}</text>')
            w, h = max(w, CHAR_W * len(note)), 60
        return out, max(w, 160), h
    for k, (color, text) in enumerate(legend["entries"]):
        yy = y + 18 + 16 * k
        text = _clip(text)
        out.append(f'<rect x="{x}" y="{yy}" width="12" height="12" fill="{color}" stroke="#777777"/>')
        out.append(f'<text x="{x + 16}" y="{yy + 10}">{_esc(text)}</text>')
        w = max(w, 16 + CHAR_W * len(text))
    h = 18 + 16 * len(legend["entries"])
    if legend.get("note"):   # e.g. how many tiles, what sets their size
        note = _clip(legend["note"])
        out.append(f'<text x="{x}" y="{y + h + 10}" fill="#555555">{_esc(note)}</text>')
        w, h = max(w, CHAR_W * len(note)), h + 16
    return out, w, h


def grid_svg(grid, subtitle: str = "", budget: int = SVG_BUDGET) -> str:
    """One SVG document of at most ``budget`` bytes for a grid source (a :class:`Grid` or a
    :class:`LayoutSource` of any size).

    A grid of at most ``SVG_FULL_CELLS`` cells is drawn whole when that fits the budget (long labels of a
    deeply nested layout may not) and ``MAX_SIDE_PX`` a side (a long vector does not); otherwise the document holds an overview heat map of the whole grid as
    an embedded PNG, the first ``FIRST_TILE`` rows and columns as labelled cells (halved until the
    document fits) and a note of what was left out.
    """
    NR, NC = grid.shape
    if NR * NC <= SVG_FULL_CELLS:
        out = _grid_svg(grid, subtitle, None, budget)
        if len(out) <= budget and _extent_ok(out):
            return out
    side = FIRST_TILE
    while True:
        out = _grid_svg(grid, subtitle, side, budget)
        if len(out) <= budget and (_extent_ok(out) or side == 1):
            return out
        if side == 1:
            raise ValueError(f"Expected a byte budget of at least {len(out)} for the static picture of {grid.title}, "
                             f"but got {budget}.")
        side //= 2


def _extent_ok(svg: str) -> bool:
    """Whether a picture is at most MAX_SIDE_PX a side (a 4096-cell vector drawn whole is 74k px tall)."""
    w, h = (int(x) for x in _SIZE.search(svg).groups())
    return w <= MAX_SIDE_PX and h <= MAX_SIDE_PX


def _grid_svg(grid, subtitle: str, side: int | None, budget: int) -> str:
    """The document: every cell (``side`` None), or the overview and the first ``side`` x ``side`` cells."""
    from .tiles import overview, tile

    NR, NC = grid.shape
    whole = side is None
    nr, nc = (NR, NC) if whole else (min(NR, side), min(NC, side))
    if not whole and nr < side:     # a narrow grid (a vector): as many cells as a square tile, in its long axis
        nc = min(NC, side * side // nr)
    elif not whole and nc < side:   # (rows within MAX_SIDE_PX, leaving room for the overview and captions)
        nr = min(NR, side * side // nc, (MAX_SIDE_PX - 1200) // CELL_H)
    meta, keys, colors = tile(grid, 0, 0, nr, nc, 1)
    texts = meta.get("texts") or ["" if k != k else str(int(k)) for k in keys.tolist()]
    cw, ch = cell_width(texts, meta["col_labels"]), CELL_H
    lines = [_clip(x) for x in [grid.title] + ([subtitle] if subtitle else []) + list(grid.notes)]
    ov_h = 0
    if not whole:
        blocks = OVERVIEW_BLOCKS if budget >= 250_000 else 64 if budget >= 80_000 else 32   # PNG bytes ~ blocks^2
        om, _, ocol = overview(grid, blocks)
        px = max(1, min(4, 512 // max(om["nr"], om["nc"])))
        lines.append(f"overview: a heat map of all {NR}x{NC} cells, each pixel block the mean of "
                     f"{om['step']}x{om['step']} cells")
        lines.append(f"below: rows 0..{nr - 1} and columns 0..{nc - 1} ({nr * nc} of {NR * NC} cells); "
                     f"the rest is left out of this static picture")
        ov_h = om["nr"] * px + 8
    top_ov = 18 * len(lines) + 4
    top = top_ov + ov_h + 40                  # titles, overview, then the column-mode line and column labels
    row_labels = meta["row_labels"]
    left = max(CHAR_W * max((len(s) for s in row_labels), default=1) + 12, 12)
    grid_w = left + nc * cw + 12
    # the legend goes under the row-mode line, so it never widens the picture beyond its text
    leg, leg_w, leg_h = _legend_svg(getattr(grid, "legend", {}) or {}, 4, top + nr * ch + 26)
    col_title, row_title = _clip(f"columns {grid.cols.title}"), _clip(f"rows {grid.rows.title}")
    axis_len = max(len(col_title), len(row_title)) + len(" (dynamic)")
    width = max(grid_w, 4 + leg_w + 8, left + CHAR_W * axis_len + 8, CHAR_W * max(len(s) for s in lines) + 12)
    height = top + nr * ch + 26 + (leg_h + 6 if leg else 0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FIT} {FONT} font-size="11">',
        f"<title>{_esc(_clip(grid.title))}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for k, line in enumerate(lines):
        weight = ' font-weight="bold"' if k == 0 else ""
        out.append(f'<text x="4" y="{14 + 18 * k}"{weight}>{_esc(line)}</text>')
    pal = grid.palette
    if not whole:
        img = _rgb(pal)[ocol.reshape(om["nr"], om["nc"]).astype(np.int64) % len(pal)]
        href = "data:image/png;base64," + base64.b64encode(_png(img)).decode("ascii")
        out.append(f'<image x="{left}" y="{top_ov}" width="{om["nc"] * px}" height="{om["nr"] * px}" '
                   f'preserveAspectRatio="none" style="image-rendering:pixelated" href="{href}"/>')

    # axis titles: dynamic modes in orange with a dashed underline
    out.append(_axis_title(col_title, left, top - 24, grid.cols.dynamic))
    out.append(_axis_title(row_title, left, top + nr * ch + 16, grid.rows.dynamic))

    col_fill = DYN_COLOR if grid.cols.dynamic else "#333333"
    out.append(f'<g text-anchor="middle" fill="{col_fill}">')
    for c, lab in enumerate(meta["col_labels"]):
        out.append(f'<text x="{left + c * cw + cw // 2}" y="{top - 5}">{_esc(lab)}</text>')
    out.append("</g>")
    row_fill = DYN_COLOR if grid.rows.dynamic else "#333333"
    out.append(f'<g text-anchor="end" fill="{row_fill}">')
    for r, lab in enumerate(row_labels):
        out.append(f'<text x="{left - 5}" y="{top + r * ch + ch // 2 + 4}">{_esc(lab)}</text>')
    out.append("</g>")

    # cells: one group of rects, then the labels grouped by text colour (black or white on the fill)
    colors = colors.reshape(nr, nc)
    out.append('<g stroke="#555555" stroke-width="0.5">')
    for r in range(nr):
        y = top + r * ch
        row = colors[r]
        for c in range(nc):
            out.append(f'<rect x="{left + c * cw}" y="{y}" width="{cw}" height="{ch}" fill="{pal[row[c]]}"/>')
    out.append("</g>")
    ink = [text_color(p) for p in pal]
    for shade in sorted(set(ink)):
        out.append('<g text-anchor="middle">' if shade == "#000000" else f'<g text-anchor="middle" fill="{shade}">')
        i = 0
        for r in range(nr):
            y = top + r * ch + ch // 2 + 4
            for c in range(nc):
                t = texts[i]
                if t and ink[colors[r, c]] == shade:
                    out.append(f'<text x="{left + c * cw + cw // 2}" y="{y}">{_esc(t)}</text>')
                i += 1
        out.append("</g>")

    # nesting: heavier rules where a nested sub-mode wraps
    out.append(_rules(grid, left, top, cw, ch, nr, nc))
    out.extend(leg)

    if grid.selected is not None:
        hit = np.flatnonzero(keys == grid.selected)
        out.append(f'<g fill="none" stroke="{SEL_COLOR}" stroke-width="2.5">')
        for i in hit.tolist():
            r, c = divmod(i, nc)
            out.append(f'<rect x="{left + c * cw + 1}" y="{top + r * ch + 1}" width="{cw - 2}" height="{ch - 2}"/>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


source_svg = grid_svg


def _axis_title(text: str, x: int, y: int, dynamic: bool) -> str:
    if not dynamic:
        return f'<text x="{x}" y="{y}" fill="#333333">{_esc(text)}</text>'
    w = CHAR_W * len(text)
    return (f'<g fill="{DYN_COLOR}"><text x="{x}" y="{y}" font-style="italic">{_esc(text)} (dynamic)</text>'
            f'<line x1="{x}" y1="{y + 3}" x2="{x + w}" y2="{y + 3}" stroke="{DYN_COLOR}" stroke-dasharray="3,2"/></g>')


def _rules(grid, left: int, top: int, cw: int, ch: int, nr: int, nc: int) -> str:
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
           f'viewBox="0 0 {width} {height}" {FIT} {FONT} font-size="11">']
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
           f'viewBox="0 0 {width} {height}" {FIT} {FONT} font-size="11">',
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
           f'viewBox="0 0 {width} {height}" {FIT} {FONT} font-size="11">']
    y = 0
    for p, (w, h) in zip(parts, sizes):
        body = p.split(">", 1)[1].rsplit("</svg>", 1)[0]
        out.append(f'<svg x="0" y="{y}" width="{w}" height="{h}" viewBox="0 0 {w} {h}">{body}</svg>')
        y += h + gap
    out.append("</svg>")
    return "\n".join(out) + "\n"
