"""Files from a view: TikZ as CuTe's ``print_latex`` / ``print_latex_tv`` write it, and PNG without a browser.

``layout_tikz(layout)`` is CuTe C++'s ``print_latex(layout)`` output (TikzColor_BWx8: offset mod 8
shades of grey), ``tv_tikz(tv, M, N)`` its ``print_latex_tv`` (TikzColor_TV, first pair wins); both
enumerate every cell and so refuse layouts of more than ``MAX_TIKZ_CELLS``.  ``grid_png`` draws a
grid source with matplotlib's Agg backend: every cell with its label when the grid is small, an
overview heat map and the first tile otherwise, like the static SVG.
"""

from __future__ import annotations

import numpy as np

from workbench.layout import Layout
from workbench.layout.window import window_offsets

from .grid import folded

MAX_TIKZ_CELLS = 1 << 14
_BW8 = ("black!00", "black!40", "black!20", "black!60", "black!10", "black!50", "black!30", "black!70")
_TV8 = tuple(f"{{rgb,255:red,{r};green,{g};blue,{b}}}" for r, g, b in (
    (175, 175, 255), (175, 255, 175), (255, 255, 175), (255, 175, 175),
    (210, 210, 255), (210, 255, 210), (255, 255, 210), (255, 210, 210)))
_HEAD = ("\\documentclass[convert]{standalone}\n\\usepackage{tikz}\n\n\\begin{document}\n"
         "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}]\n\n")


def _check(n: int, what) -> None:
    if n > MAX_TIKZ_CELLS:
        raise ValueError(f"Expected at most {MAX_TIKZ_CELLS} cells for TikZ (every cell is a node), but got {what} "
                         f"with {n}; save('x.svg') or save('x.png') draw any size.")


def _frame(M: int, N: int) -> list:
    out = [f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({M},{N});\n\n"]
    out += [f"\\node at ({m},-1) {{\\Large{{\\texttt{{{m}}}}}}};\n" for m in range(M)]
    out += [f"\\node at (-1,{n}) {{\\Large{{\\texttt{{{n}}}}}}};\n" for n in range(N)]
    return out + ["\\end{tikzpicture}\n\\end{document}\n"]


def layout_tikz(layout) -> str:
    """CuTe's ``print_latex(layout)``: rank <= 2 as CuTe (a rank-1 layout gets ``1:0`` appended);
    rank > 2 folds modes 1.. into the columns, as the views do."""
    two = folded(layout)
    outer = two.outer if hasattr(two, "outer") else two
    M, N = (int(np.prod([int(x) for x in _flat(s)])) for s in outer.shape)
    _check(M * N, layout)
    off = window_offsets(two, np.arange(M), np.arange(N))
    shown = outer if type(two) is Layout else two
    out = [f"% Layout: {shown}\n", _HEAD]
    out += [f"\\node[fill={_BW8[int(off[m, n]) % 8]}] at ({m},{n}) {{{int(off[m, n])}}};\n"
            for m in range(M) for n in range(N)]
    return "".join(out + _frame(M, N))


def tv_tikz(tv_layout, owner_first: list, M: int, N: int) -> str:
    """CuTe's ``print_latex_tv``: ``owner_first`` lists (tid, vid, m, n) in CuTe's visiting order."""
    _check(M * N, tv_layout)
    out = [f"% Layout TV: {tv_layout}\n", _HEAD]
    out += [f"\\node[fill={_TV8[t % 8]}] at ({m},{n}) {{\\shortstack{{T{t} \\\\ V{v}}}}};\n"
            for t, v, m, n in owner_first]
    return "".join(out + _frame(M, N))


def _flat(s):
    return [s] if type(s) is not tuple else [x for e in s for x in _flat(e)]


def grid_png(source, path, subtitle: str = "") -> None:
    """A PNG of a grid source (matplotlib Agg: no browser, no display)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    from .svg import FIRST_TILE, SVG_FULL_CELLS, _rgb
    from .tiles import overview, tile

    NR, NC = source.shape
    whole = NR * NC <= SVG_FULL_CELLS
    nr, nc = (NR, NC) if whole else (min(NR, FIRST_TILE), min(NC, FIRST_TILE))
    meta, keys, colors = tile(source, 0, 0, nr, nc, 1)
    rgb = _rgb(source.palette)
    texts = meta.get("texts") or ["" if k != k else str(int(k)) for k in keys.tolist()]
    panels = 1 if whole else 2
    cw = 0.12 * max(3, max(len(t) for t in texts) + 1)     # inches per cell at fontsize 6
    w = min(16.0, max(4.0, nc * cw + 1.5)) * (1 if whole else 1.7)
    fig = Figure(figsize=(w, min(16.0, max(2.5, nr * 0.2 + 1.5))), dpi=100)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    if not whole:
        om, _, ocol = overview(source, 128)
        a = axes[0]
        a.imshow(rgb[ocol.reshape(om["nr"], om["nc"]).astype(np.int64) % len(rgb)], interpolation="nearest",
                 aspect="auto")
        a.set_title(f"all {NR}x{NC} cells (blocks of {om['step']}x{om['step']})", fontsize=8)
        a.set_xticks([]), a.set_yticks([])
    ax = axes[-1]
    ax.imshow(rgb[colors.reshape(nr, nc).astype(np.int64) % len(rgb)], interpolation="nearest", aspect="auto")
    if nr * nc <= 64 * 64:
        from .colors import text_color

        for i, t in enumerate(texts):
            r, c = divmod(i, nc)
            ax.text(c, r, t, ha="center", va="center", fontsize=5 if len(t) > 4 else 6, family="monospace",
                    color=text_color(source.palette[int(colors[i]) % len(rgb)]))
    step_r, step_c = max(1, nr // 16), max(1, nc // 16)
    ax.set_xticks(range(0, nc, step_c), meta["col_labels"][::step_c], fontsize=6, rotation=90)
    ax.set_yticks(range(0, nr, step_r), meta["row_labels"][::step_r], fontsize=6)
    ax.set_xlabel(f"columns {source.cols.title}", fontsize=7)
    ax.set_ylabel(f"rows {source.rows.title}", fontsize=7)
    ax.xaxis.set_label_position("top"), ax.xaxis.tick_top()
    fig.suptitle("\n".join([source.title] + ([subtitle] if subtitle else [])), fontsize=8, family="monospace")
    fig.savefig(path, format="png", bbox_inches="tight")
