"""TikZ files from a view, as CuTe's ``print_latex`` / ``print_latex_tv`` write them.

``layout_tikz(layout)`` is CuTe C++'s ``print_latex(layout)`` output (TikzColor_BWx8: offset mod 8
shades of grey), ``tv_tikz(tv, M, N)`` its ``print_latex_tv`` (TikzColor_TV, first pair wins); both
enumerate every cell and so refuse layouts of more than ``MAX_TIKZ_CELLS``.  (PNG files are the static
SVG rasterized: :mod:`widgets.raster`.)
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
