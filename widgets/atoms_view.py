"""MMAView and CopyView: which thread holds which element of a TiledMMA's A, B, C or a TiledCopy's tile.

Drawn like CuTe's ``print_latex(TiledMMA)``: A is M x K, B is N x K, C is M x N, every cell
``T#V#`` and coloured by thread with CuTe's eight TV colours.  In the browser (own anywidget
module, atoms_view.js, one canvas a panel so a 64x256 GMMA C stays responsive) clicking a cell
selects its thread in every panel; hovering reports (panel, thread, value) -> (row, col) back to
the kernel in ``hover``.  ``to_svg()`` is the deterministic static fallback.  For a view of more than one
warp whose cells would not fit a notebook's width at a legible size it draws what the live view opens with
(:func:`warps_svg`): an overview by warp over one warp's cells at full size, so a 128-thread view's stored
picture reads at 1:1.  ``to_svg(level='cells')`` (the default for one warp) draws every cell: one ``<path>`` per
thread, labels only where cells are big enough; a panel whose paths would not fit its share of the
byte budget is drawn as an embedded image instead, so the document stays under 1 MB at any size.
All panels share one cell size (``common_cell``, each panel's ``cell`` in the model), so that M, N and
K lengths compare across A, B and C as in print_latex; it is bounded by the largest panel.

An operand read from shared memory through a descriptor (SM90 GMMA ``_SS`` atoms: a stride-0 thread
mode) belongs to no thread: all threads of the warpgroup read it together.  Its panel is drawn in grey
with a note saying so, instead of pretending thread 0 holds every cell.
"""

from __future__ import annotations

import base64
import html
import textwrap
from pathlib import Path

import anywidget
import numpy as np
import traitlets as t

from workbench.atoms import TiledCopy, TiledMMA, bank_conflicts, suggest_swizzle
from workbench.atoms.conflicts import _offsets as smem_offsets
from workbench.interop import as_workbench
from workbench.layout import inttuple as it

from .base import STATIC_CSS, SvgFallback
from .svg import FIT, SVG_BUDGET, _png, _rgb, panel_budget

# CuTe's print_latex TV colours (thread % 8)
PALETTE = ["#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2"]
SHARED_FILLS = ["#e4e4e4", "#cdcdcd"]   # a shared-memory operand: one grey per group of threads reading it
MAX_SVG_PANEL = 1100  # px: the longest side of one panel in the static SVG
MAX_IMAGE_SIDE = 512  # pixels a side of a panel drawn as an image (a larger panel is sampled)
NOTE_W = 240          # px: a panel with a note is at least this wide


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


def shared_threads(tv) -> int:
    """How many threads read each element together (a leading stride-0 run of the thread mode, as an
    SM90 ``_SS`` operand read through a shared-memory descriptor has), or 0 when threads hold their own."""
    g = 1
    for size, stride in zip(it.flatten(tv.shape[0]), it.flatten(tv.stride[0])):
        if int(stride) != 0:
            break
        g *= int(size)
    return g if g > 1 else 0


def _panel(name, title, row_name, col_name, thr, val, shared=0):
    p = {"name": name, "title": title, "rows": int(thr.shape[0]), "cols": int(thr.shape[1]),
         "row_name": row_name, "col_name": col_name,
         "thr": thr.reshape(-1).tolist(), "val": val.reshape(-1).tolist(), "shared": int(shared), "note": ""}
    if shared:
        who = ("all 128 threads of the warpgroup" if shared == 128 else
               f"all {shared} threads of {shared // 128} warpgroups" if shared % 128 == 0 else f"groups of {shared} threads")
        p["note"] = f"{name} from shared memory: read by {who} together (a descriptor), so no single thread holds these cells"
    return p


def bank_panel(name, title, smem, tiled_copy, color_by, thr, val):
    """A panel of the copy's M x N tile coloured by the shared-memory bank (or 16-byte chunk) each cell's
    offset in ``smem`` falls in (threads still label and select the cells)."""
    from .grid import BANK_BYTES, BANK_PALETTE, BANKS, CHUNK_BYTES, CHUNK_PALETTE, CHUNKS

    m, n = tiled_copy.tiler_mn
    off = smem_offsets(smem, np.arange(m * n), (m, n)).reshape(n, m).T    # (m, n) -> element offset
    byte = off.astype(np.int64) * tiled_copy.atom.value_type.bits // 8
    bank = color_by == "bank"
    fill = (byte // BANK_BYTES) % BANKS if bank else (byte // CHUNK_BYTES) % CHUNKS
    p = _panel(name, title, "M", "N", thr, val)
    p["fill"], p["fills"] = fill.reshape(-1).tolist(), list(BANK_PALETTE if bank else CHUNK_PALETTE)
    p["fill_name"] = "bank" if bank else "chunk"
    p["note"] = (f"colour: {'bank ((byte / 4) mod 32)' if bank else '16-byte chunk ((byte / 16) mod 8)'} of {smem}")
    return p


def common_cell(panels) -> int:
    """The one cell size (px) of all panels, so that their M, N and K lengths compare at a glance (as in
    CuTe's print_latex): the largest, up to 34 (room for a ``T#V#`` label), that keeps the longest side of
    the largest panel within MAX_SVG_PANEL; at least 2."""
    longest = max((max(p["rows"], p["cols"]) for p in panels), default=1)
    return max(2, min(34, MAX_SVG_PANEL // max(1, longest)))


def _fills(p, thr):
    """Fill colour index per cell: thread % 8 into PALETTE, or (shared operands) 8 + group % 2, -1 none; a
    bank-coloured panel: its own indices into its own colours (see :func:`_palette_of`)."""
    if "fill" in p:
        return np.asarray(p["fill"]).reshape(thr.shape)
    if p["shared"]:
        return np.where(thr >= 0, 8 + (thr // p["shared"]) % 2, -1)
    return np.where(thr >= 0, thr % 8, -1)


def _runs(mask_or_ids, cell):
    """Path segments for runs of equal ids along each row: {id: [segment, ...]}."""
    out = {}
    rows, cols = mask_or_ids.shape
    for r in range(rows):
        row = mask_or_ids[r]
        edges = np.flatnonzero(np.diff(row)) + 1
        starts = np.concatenate(([0], edges)).tolist()
        ends = np.concatenate((edges, [cols])).tolist()
        for c, e in zip(starts, ends):
            out.setdefault(int(row[c]), []).append(f"M{c * cell} {r * cell}h{(e - c) * cell}v{cell}h{-(e - c) * cell}z")
    return out


def _panel_svg(p, cell, selected, x0, y0, budget=SVG_BUDGET):
    """(svg, width, height) of one panel of ``cell`` px cells within ``budget`` bytes: paths, or an image
    when they do not fit."""
    rows, cols = p["rows"], p["cols"]
    thr = np.asarray(p["thr"]).reshape(rows, cols)
    val = np.asarray(p["val"]).reshape(rows, cols)
    fills = p.get("fills") or PALETTE + SHARED_FILLS
    fid = _fills(p, thr)
    head = [f'<g transform="translate({x0},{y0})">',
            f'<text x="0" y="-6" font-size="12" font-weight="bold">{html.escape(p["title"])}</text>']
    tail = [f'<rect x="0" y="0" width="{cols * cell}" height="{rows * cell}" fill="none" stroke="#444"/>',
            f'<text x="0" y="{rows * cell + 14}" font-size="10">{html.escape(p["row_name"])} = {rows} rows, '
            f'{html.escape(p["col_name"])} = {cols} cols</text>']
    height, width = rows * cell + 20, cols * cell
    if p["note"]:   # wrapped to the panel (at least NOTE_W px wide), never across the next panel
        width = max(width, NOTE_W)
        for k, line in enumerate(textwrap.wrap(p["note"], width // 6)):
            tail.append(f'<text x="0" y="{rows * cell + 28 + 13 * k}" font-size="10" fill="#b35806">{html.escape(line)}</text>')
            height += 13
    own = selected >= 0 and not p["shared"]   # a shared operand has no per-thread cells to outline
    body = []
    if "fill" in p:   # one path per colour, then the selected thread's outline on top
        for f0, segs in sorted(_runs(fid, cell).items()):
            body.append(f'<path fill="{fills[f0]}" d="{"".join(segs)}"/>')
        if own:
            sel = "".join(_runs((thr == selected).astype(np.int8), cell).get(1, []))
            body.append(f'<path fill="none" stroke="#000" stroke-width="2" d="{sel}"/>')
    for t0, segs in sorted(_runs(thr, cell).items()) if "fill" not in p else ():   # one path per thread
        fill = "#ffffff" if t0 < 0 else fills[int(_fills(p, np.array(t0)))]
        stroke = ' stroke="#000" stroke-width="2"' if own and t0 == selected else ""
        body.append(f'<path fill="{fill}"{stroke} d="{"".join(segs)}"/>')
    if cell >= 28 and not p["shared"]:  # labels only where they are legible
        body.append('<g font-size="7" text-anchor="middle">')
        for r in range(rows):
            for c in range(cols):
                if thr[r, c] >= 0:
                    body.append(f'<text x="{c * cell + cell // 2}" y="{r * cell + cell // 2 + 3}">T{thr[r, c]}V{val[r, c]}</text>')
        body.append("</g>")
    out = "\n".join(head + body + tail) + "</g>"
    if len(out) > budget:
        body, note = _image_body(p, thr, fid, fills, cell, selected if own else -1, budget)
        tail.append(f'<text x="0" y="{height + 8}" font-size="10" fill="#555555">{html.escape(note)}</text>')
        width, height = max(width, 6 * len(note)), height + 13
        out = "\n".join(head + body + tail) + "</g>"
    return out, width, height


def _image_body(p, thr, fid, fills, cell, selected, budget):
    """A panel too large for paths: an embedded PNG of its colours (sampled above MAX_IMAGE_SIDE a side),
    and the selected thread's cells outlined where that fits."""
    rows, cols = thr.shape
    side = MAX_IMAGE_SIDE
    while True:
        step = max(1, -(-rows // side), -(-cols // side))
        rgb = np.vstack([_rgb(fills), [[255, 255, 255]]])[np.where(fid < 0, len(fills), fid)[::step, ::step]]
        png = _png(np.ascontiguousarray(rgb, np.uint8))
        if 4 * len(png) // 3 < budget // 2 or side <= 16:
            break
        side //= 2
    href = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    out = [f'<image x="0" y="0" width="{cols * cell}" height="{rows * cell}" preserveAspectRatio="none" '
           f'style="image-rendering:pixelated" href="{href}"/>']
    note = f"too many cells to draw one by one: an image{f', each pixel the first cell of {step}x{step}' if step > 1 else ''}"
    if selected >= 0:
        sel = "".join(_runs((thr == selected).astype(np.int8), cell).get(1, []))
        if len(sel) < budget // 4:
            out.append(f'<path fill="none" stroke="#000" stroke-width="2" d="{sel}"/>')
        else:
            note += f"; T{selected}'s cells are too many to outline here"
    return out, note


# -- the stored picture of a view of more than one warp: an overview by warp over one warp at full size ------------
# (the live view's "warps" level, atoms_view.js, drawn once: a 128-thread view's every cell shrunk to fit is unreadable)
READABLE_W = 940      # px: the picture's width, drawn 1:1 in a notebook's output area (JupyterLab at 1400 px: 968)
OV_MAX_H = 400        # px: the tallest overview panel
DETAIL_CELL = 28      # px: one warp's cells, two lines of DETAIL_FONT px labels (T#, V#)
DETAIL_FONT = 10
DETAIL_ROWS = 16      # the warp's window: at most this many rows, and as many columns as READABLE_W holds
WARP_FILLS = ["#8fb8e8", "#f2b36b", "#93d08a", "#e89494", "#c0a2e0", "#d9b48f", "#f0a8d8", "#b8c4cc"]
SELECTED = "#d7191c"  # the frame of the cells drawn at full size (and the live view's hovered cell)


def num_threads(panels) -> int:
    return max([max(p["thr"], default=-1) + 1 for p in panels] + [1])


def _group(p, thr):
    """The warp (or, for an operand read by groups of threads together, the group) of each thread, -1 none."""
    thr = np.asarray(thr)
    return np.where(thr >= 0, thr // (p["shared"] or 32), -1)


def _group_name(p, g: int) -> str:
    if not p["shared"]:
        return f"W{g}"
    if p["shared"] % 128:
        return f"G{g}"
    k = p["shared"] // 128   # warpgroups reading each cell together
    return f"WG{g}" if k == 1 else f"WG{g * k}-{g * k + k - 1}"


def cells_fit(panels) -> bool:
    """Whether every panel at DETAIL_CELL px (labels legible), side by side, fits READABLE_W x 700 px."""
    w = sum(max(p["cols"] * DETAIL_CELL, NOTE_W if p["note"] else 0) + 24 for p in panels) - 4
    return w <= READABLE_W and max(p["rows"] for p in panels) * DETAIL_CELL <= 700


def _caption(p) -> str:
    return f'{p["row_name"]} = {p["rows"]} rows, {p["col_name"]} = {p["cols"]} cols'


def _min_width(p) -> int:
    """A panel's width at least: its note's, its title's (12 px bold) and its caption's (10 px), so that narrow
    panels side by side never write over each other."""
    return max(NOTE_W if p["note"] else 0, 8 * len(p["title"]) + 4, 6 * len(_caption(p)) + 4)


def overview_layout(panels) -> tuple:
    """(cell px, [[panel index, ...] a row of panels]): the largest overview cell (up to 12 px) with each row of
    panels side by side within READABLE_W and the rows' cells together within OV_MAX_H px (1 px at least); the panels in one row
    when that is as large as any split (a CopyView's four 32 x 64 panels read better two by two)."""
    n = len(panels)
    best = (0, [list(range(n))])
    for k in range(1, n + 1):
        per = -(-n // k)
        rows = [list(range(i, min(n, i + per))) for i in range(0, n, per)]
        for cs in range(12, best[0], -1):
            w = max(sum(max(panels[i]["cols"] * cs, _min_width(panels[i])) + 24 for i in r) - 4 for r in rows)
            if w <= READABLE_W and sum(max(panels[i]["rows"] for i in r) * cs for r in rows) <= OV_MAX_H:
                best = (cs, rows)
                break
    return (max(1, best[0]), best[1])


def uniform_block(p, groups) -> tuple:
    """The largest (bh, bw) tiling the panel whose blocks each hold one group (unowned cells aside)."""
    rows, cols = groups.shape
    best = (1, 1)
    for bh in [d for d in range(rows, 0, -1) if rows % d == 0]:
        for bw in [d for d in range(cols, 0, -1) if cols % d == 0]:
            if bh * bw <= best[0] * best[1]:
                continue
            blocks = groups.reshape(rows // bh, bh, cols // bw, bw).transpose(0, 2, 1, 3).reshape(-1, bh * bw)
            hi = blocks.max(axis=1)
            lo = np.where(blocks >= 0, blocks, hi[:, None]).min(axis=1)
            if (lo == hi).all():
                best = (bh, bw)
    return best


def detail_window(panels, selected=-1):
    """The panel and window drawn at full size: the selected thread's warp (else the first warp) in C (or the
    first panel whose threads hold their own cells), clipped to DETAIL_ROWS rows and READABLE_W's columns
    around that thread's first cell.  None when every panel is shared."""
    p = next((q for q in panels if q["name"] == "C" and not q["shared"]), None) or \
        next((q for q in panels if not q["shared"]), None)
    if p is None:
        return None
    thr = np.asarray(p["thr"]).reshape(p["rows"], p["cols"])
    focus = selected if selected >= 0 and (thr == selected).any() else int(thr[thr >= 0].min())
    fr, fc = (int(x[0]) for x in np.nonzero(thr == focus))
    g = focus // 32
    rr, cc = np.nonzero(_group(p, thr) == g)
    n_r, n_c = DETAIL_ROWS, (READABLE_W - 20) // DETAIL_CELL

    def clip(lo, hi, f, n):
        return (lo, hi - lo + 1) if hi - lo + 1 <= n else (max(lo, min(f - n // 4, hi - n + 1)), n)

    (r0, nr), (c0, nc) = clip(rr.min(), rr.max(), fr, n_r), clip(cc.min(), cc.max(), fc, n_c)
    whole = (nr, nc) == (rr.max() - rr.min() + 1, cc.max() - cc.min() + 1)
    ts = thr[_group(p, thr) == g]
    return {"p": p, "g": g, "r0": int(r0), "c0": int(c0), "nr": int(nr), "nc": int(nc), "whole": whole,
            "lo": int(ts.min()), "hi": int(ts.max())}


def _overview_panel(p, cs, selected, win, x0, y0):
    """(svg, width, height) of one panel at overview cells: one colour a warp (or group; a bank/chunk panel keeps
    its colours), each block of one warp framed and labelled, the selected thread's cells in black and the
    window drawn below framed in red."""
    rows, cols = p["rows"], p["cols"]
    thr = np.asarray(p["thr"]).reshape(rows, cols)
    groups = _group(p, thr)
    if "fill" in p:
        fid, fills = np.asarray(p["fill"]).reshape(rows, cols), list(p["fills"])
    elif p["shared"]:
        fid, fills = np.where(groups >= 0, groups % 2, -1), SHARED_FILLS
    else:
        fid, fills = np.where(groups >= 0, groups % len(WARP_FILLS), -1), WARP_FILLS
    out = [f'<g transform="translate({x0},{y0})">',
           f'<text x="0" y="-6" font-size="12" font-weight="bold">{html.escape(p["title"])}</text>']
    for f0, segs in sorted(_runs(fid, cs).items()):
        out.append(f'<path fill="{"#ffffff" if f0 < 0 else fills[f0]}" d="{"".join(segs)}"/>')
    if "fill" not in p:   # one label a block of one warp (or group), where it fits
        bh, bw = uniform_block(p, groups)
        out.append('<g font-size="12" font-weight="bold" text-anchor="middle" fill="#000000">')
        for r in range(0, rows, bh):
            for c in range(0, cols, bw):
                out.append(f'<rect x="{c * cs}" y="{r * cs}" width="{bw * cs}" height="{bh * cs}" fill="none" '
                           f'stroke="#000000"/>')
                owned = groups[r:r + bh, c:c + bw]
                name = _group_name(p, int(owned.max())) if (owned >= 0).any() else ""
                if name and 7 * len(name) + 4 <= bw * cs and 14 <= bh * cs:
                    out.append(f'<text x="{(c + bw / 2) * cs:g}" y="{(r + bh / 2) * cs + 4:g}">{name}</text>')
        out.append("</g>")
    if selected >= 0 and not p["shared"] and (thr == selected).any():
        sel = "".join(_runs((thr == selected).astype(np.int8), cs).get(1, []))
        out.append(f'<path fill="#000000" d="{sel}"/>' if cs < 6 else
                   f'<path fill="none" stroke="#000000" stroke-width="2" d="{sel}"/>')
    if win is not None and win["p"] is p:
        out.append(f'<rect x="{win["c0"] * cs}" y="{win["r0"] * cs}" width="{win["nc"] * cs}" height="{win["nr"] * cs}" '
                   f'fill="none" stroke="{SELECTED}" stroke-width="2"/>')
    width, height = max(cols * cs, _min_width(p)), rows * cs + 20
    out += [f'<rect x="0" y="0" width="{cols * cs}" height="{rows * cs}" fill="none" stroke="#444444"/>',
            f'<text x="0" y="{rows * cs + 14}" font-size="10">{html.escape(_caption(p))}</text>']
    for k, line in enumerate(textwrap.wrap(p["note"], width // 6) if p["note"] else ()):
        out.append(f'<text x="0" y="{rows * cs + 28 + 13 * k}" font-size="10" fill="#b35806">{html.escape(line)}</text>')
        height += 13
    return "\n".join(out) + "</g>", width, height


def _detail_svg(win, selected, x0, y0):
    """(svg, width, height) of the warp's window at DETAIL_CELL px, every cell T# over V#, coloured by thread."""
    p, cs = win["p"], DETAIL_CELL
    r0, c0, nr, nc = win["r0"], win["c0"], win["nr"], win["nc"]
    thr = np.asarray(p["thr"]).reshape(p["rows"], p["cols"])[r0:r0 + nr, c0:c0 + nc]
    val = np.asarray(p["val"]).reshape(p["rows"], p["cols"])[r0:r0 + nr, c0:c0 + nc]
    title = (f'{p["name"]}, warp {win["g"]} (T{win["lo"]}..T{win["hi"]}){"" if win["whole"] else ", part"}: '
             f'{p["row_name"]} {r0}..{r0 + nr - 1} of {p["rows"]}, {p["col_name"]} {c0}..{c0 + nc - 1} of {p["cols"]}')
    out = [f'<g transform="translate({x0},{y0})">',
           f'<text x="0" y="-6" font-size="12" font-weight="bold">{html.escape(title)}</text>']
    for t0, segs in sorted(_runs(thr, cs).items()):
        out.append(f'<path fill="{"#ffffff" if t0 < 0 else PALETTE[t0 % 8]}" d="{"".join(segs)}"/>')
    out += [f'<line x1="{c * cs}" y1="0" x2="{c * cs}" y2="{nr * cs}" stroke="#aaaaaa"/>' for c in range(1, nc)]
    out += [f'<line x1="0" y1="{r * cs}" x2="{nc * cs}" y2="{r * cs}" stroke="#aaaaaa"/>' for r in range(1, nr)]
    out.append(f'<g font-size="{DETAIL_FONT}" text-anchor="middle" fill="#000000">')
    for r in range(nr):
        for c in range(nc):
            if thr[r, c] >= 0:
                x = c * cs + cs / 2
                out.append(f'<text x="{x:g}" y="{r * cs + 12}">T{thr[r, c]}</text>')
                out.append(f'<text x="{x:g}" y="{r * cs + 23}">V{val[r, c]}</text>')
    out.append("</g>")
    if selected >= 0 and (thr == selected).any():
        sel = "".join(_runs((thr == selected).astype(np.int8), cs).get(1, []))
        out.append(f'<path fill="none" stroke="#000000" stroke-width="2" d="{sel}"/>')
    out.append(f'<rect x="0" y="0" width="{nc * cs}" height="{nr * cs}" fill="none" stroke="{SELECTED}" stroke-width="2"/>')
    return "\n".join(out) + "</g>", max(nc * cs, 7 * len(title)), nr * cs


def warps_svg(panels, selected=-1, footer=()):
    """The picture of a view of more than one warp: every panel side by side at overview cells (one colour a
    warp, blocks labelled W#/WG#), and under it one warp's cells at DETAIL_CELL px with their T#V# labels (the
    selected thread's warp; ``select(t)`` draws another), all within READABLE_W px."""
    cs, layout = overview_layout(panels)
    win = detail_window(panels, selected)
    parts, width, y = [], 0, 24
    for row in layout:
        x, height = 10, 0
        for i in row:
            s, w, h = _overview_panel(panels[i], cs, selected, win, x, y)
            parts.append(s)
            x += w + 24
            height = max(height, h)
        width, y = max(width, x - 14), y + height + 30
    y -= 10
    lines = [f"overview: one colour a warp{' (a warpgroup where it reads shared memory together)' if any(p['shared'] for p in panels) else ''}, "
             f"cells {cs} px" + ("; in red, the cells drawn below at full size (select(thread) shows its warp)" if win else "")]
    for line in textwrap.wrap(lines[0], (max(width, 600) - 20) // 6):
        parts.append(f'<text x="10" y="{y}" font-size="10" fill="#555555">{html.escape(line)}</text>')
        y += 13
    if win is not None:
        y += 22
        s, w, h = _detail_svg(win, selected, 10, y)
        parts.append(s)
        width, y = max(width, w + 10), y + h + 10
    y += 14
    for line in footer:
        for piece in textwrap.wrap(line, READABLE_W // 7, break_long_words=False) or [""]:
            parts.append(f'<text x="10" y="{y}" font-size="11" font-family="monospace">{html.escape(piece)}</text>')
            y += 14
    width = max(width, 10 + 7 * max((len(s) for line in footer for s in textwrap.wrap(line, READABLE_W // 7,
                                                                                       break_long_words=False)), default=0))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" viewBox="0 0 {width} {y}" {FIT} '
            f'font-family="sans-serif">\n<rect x="0" y="0" width="{width}" height="{y}" fill="#ffffff"/>\n'
            + "\n".join(parts) + "\n</svg>\n")


def panels_svg(panels, selected=-1, footer=()):
    foot = sum(len(line) + 80 for line in footer)
    budget = panel_budget(len(panels), foot)   # the panels share one picture's bytes
    cell = common_cell(panels)
    parts, x, height = [], 10, 0
    top = 24
    for p in panels:
        s, w, h = _panel_svg(p, cell, selected, x, top, budget)
        parts.append(s)
        x += w + 24
        height = max(height, h)
    y = height + 40
    for line in footer:
        parts.append(f'<text x="10" y="{y}" font-size="11" font-family="monospace">{html.escape(line)}</text>')
        y += 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x}" height="{y}" viewBox="0 0 {x} {y}" {FIT} '
            f'font-family="sans-serif">\n'
            + "\n".join(parts) + "\n</svg>\n")


class _AtomsWidget(SvgFallback, anywidget.AnyWidget):
    _esm = Path(__file__).with_name("atoms_view.js")
    _css = STATIC_CSS

    panels = t.Any([]).tag(sync=True)            # the view's panels (checked: a front-end cannot replace them)
    palette = t.List(t.Unicode(), default_value=PALETTE).tag(sync=True)
    thread = t.Any(-1).tag(sync=True)           # the selected thread, -1 none
    hover = t.Any({}).tag(sync=True)            # {panel, thread, value, row, col} or {}
    readout = t.List(t.Unicode()).tag(sync=True)

    # What the browser sends is checked here, where it arrives: a thread that is not an int in range selects
    # none, a hover that names no cell of a panel is no hover (and its thread and value are read from the
    # panel, never taken from the message), and the panels are the view's own: a front-end cannot replace them.
    def set_state(self, sync_data):
        # a front-end's update, checked before it is applied (traitlets would skip the validators below for
        # a value equal to the one held, e.g. False for thread 0, and keep the front-end's value)
        sync_data = dict(sync_data)
        own = getattr(self, "_own_panels", None)
        if "panels" in sync_data and own is not None:
            sync_data["panels"] = [dict(p) for p in own]
        if "thread" in sync_data:
            sync_data["thread"] = self._checked_thread(sync_data["thread"])
        if "hover" in sync_data:
            sync_data["hover"] = self._checked_hover(sync_data["hover"])
        super().set_state(sync_data)

    @t.validate("panels")
    def _one_cell_size(self, proposal):
        own = getattr(self, "_own_panels", None)
        if own is not None and "panels" in self._property_lock:   # sent by a front-end (ipywidgets' set_state)
            return [dict(p) for p in own]   # (a copy: the trait itself already holds what was sent)
        # The browser draws each panel with its "cell"; one size for all, the same as to_svg's.
        panels = proposal["value"]
        cell = common_cell(panels)
        self._own_panels = [dict(p, cell=cell) for p in panels]
        return [dict(p) for p in self._own_panels]

    @t.validate("thread")
    def _valid_thread(self, proposal):
        return self._checked_thread(proposal["value"])

    def _checked_thread(self, v):
        return v if type(v) is int and -1 <= v < self._num_threads else -1

    @t.validate("hover")
    def _valid_hover(self, proposal):
        return self._checked_hover(proposal["value"])

    def _checked_hover(self, h):
        if not isinstance(h, dict):
            return {}
        p = next((p for p in getattr(self, "_own_panels", None) or [] if p["name"] == h.get("panel")), None)
        r, c = h.get("row"), h.get("col")
        if p is None or type(r) is not int or type(c) is not int or not (0 <= r < p["rows"] and 0 <= c < p["cols"]):
            return {}
        i = r * p["cols"] + c
        return {"panel": p["name"], "thread": p["thr"][i], "value": p["val"][i], "row": r, "col": c}


    def to_svg(self, level: str | None = None) -> str:
        """The static picture.  ``level``: ``'cells'`` (every cell, as CuTe's print_latex), ``'warps'`` (an
        overview by warp over one warp's cells at a readable size: :func:`warps_svg`), or None: ``'warps'`` for
        a view of more than one warp whose cells would not fit READABLE_W at a legible size, as the live view
        opens."""
        if level is None:
            level = "warps" if num_threads(self.panels) > 32 and not cells_fit(self.panels) else "cells"
        if level == "warps":
            return warps_svg(self.panels, self.thread, self.readout)
        if level != "cells":
            raise ValueError(f"to_svg: expected level 'cells', 'warps' or None, but got {level!r}.")
        return panels_svg(self.panels, self.thread, self.readout)

    def select(self, thread: int):
        if type(thread) is not int or not -1 <= thread < self._num_threads:
            raise ValueError(f"select: expected a thread in [-1, {self._num_threads}), but got {thread!r}.")
        self.thread = thread
        return self


class MMAView(_AtomsWidget):
    """``MMAView(tiled_mma, thread=-1)``: A (M x K), B (N x K) and C (M x N) of a TiledMMA."""

    def __init__(self, tiled_mma, thread: int = -1, **kw):
        tiled_mma = as_workbench(tiled_mma)
        if type(tiled_mma).__name__ in ("UmmaAtom", "UmmaBlockScaledAtom"):   # one tcgen05.mma (Blackwell): panels from widgets.tmem_view
            from .tmem_view import umma_panels
            self.tiled_mma, self._num_threads = tiled_mma, tiled_mma.thr_id.size
            panels, readout = umma_panels(tiled_mma)
            super().__init__(panels=panels, readout=readout, **kw)
            self.select(thread)
            return
        if not isinstance(tiled_mma, TiledMMA):
            raise TypeError(f"MMAView: expected a TiledMMA (wb.make_tiled_mma(...)), but got {type(tiled_mma).__name__}.")
        self.tiled_mma = tiled_mma
        self._num_threads = tiled_mma.size
        m, n, k = tiled_mma.tile_shape_mnk
        tv_a, tv_b, tv_c = tiled_mma.tv_layout_A_tiled, tiled_mma.tv_layout_B_tiled, tiled_mma.tv_layout_C_tiled
        panels = [
            _panel("A", f"A ({m} x {k})", "M", "K", *owners(tv_a, m, k), shared=shared_threads(tv_a)),
            _panel("B", f"B ({n} x {k})", "N", "K", *owners(tv_b, n, k), shared=shared_threads(tv_b)),
            _panel("C", f"C ({m} x {n})", "M", "N", *owners(tv_c, m, n), shared=shared_threads(tv_c)),
        ]
        super().__init__(panels=panels, readout=[repr(tiled_mma)], **kw)
        self.select(thread)

    def __repr__(self):
        return f"MMAView({self.tiled_mma!r}, thread={self.thread})"


class CopyView(_AtomsWidget):
    """``CopyView(tiled_copy, smem_layout=None, swizzled=None, side=None, thread=-1, color_by=None)``: the
    copy's source and destination (M x N) tiles.

    With a shared-memory layout, the read-out gives the instruction's wavefronts per phase on it
    and after the swizzle :func:`workbench.atoms.suggest_swizzle` finds (or ``swizzled``, a
    ComposedLayout to compare with instead).  ``color_by='bank'`` (or ``'chunk'``, the 16-byte chunk) adds
    that tile coloured by the bank each cell's offset falls in, in ``smem_layout`` and after the swizzle:
    the swizzle's effect is the colours changing places (a thread's cells, outlined when it is selected,
    then fall in different banks).  ``color_by=None`` is ``'chunk'`` with a shared-memory layout (the conflict the
    read-out counts, as a picture) and ``'thread'`` without one.
    """

    def __init__(self, tiled_copy, smem_layout=None, swizzled=None, side=None, thread: int = -1,
                 color_by: str | None = None, **kw):
        tiled_copy = as_workbench(tiled_copy)
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
        if color_by is None:
            color_by = "thread" if smem_layout is None else "chunk"
        if color_by not in ("thread", "bank", "chunk"):
            raise ValueError(f"CopyView: expected color_by 'thread', 'bank' or 'chunk', but got {color_by!r}.")
        if color_by != "thread":
            if smem_layout is None:
                raise ValueError(f"CopyView: expected smem_layout= with color_by={color_by!r} (the banks are those of a "
                                 f"shared-memory layout), but got None.")
            src = panels[0] if (side or ("dst" if tiled_copy.atom.kind in ("stsm", "cp_async") else "src")) == "src" else panels[1]
            thr, val = (np.asarray(src[k]).reshape(m, n) for k in ("thr", "val"))
            panels.append(bank_panel("smem", f"smem {color_by}s ({m} x {n})", smem_layout, tiled_copy, color_by, thr, val))
            if swizzled is not None:
                panels.append(bank_panel("swizzled", f"swizzled {color_by}s ({m} x {n})", swizzled, tiled_copy, color_by,
                                         thr, val))
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
