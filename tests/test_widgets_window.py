"""Views of any size: windows of offsets, tiles and aggregated tiles, bounded state and SVG, values, export."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets.grid import LayoutSource, folded
from widgets.layout_view import LayoutView
from widgets.tiles import overview, tile
from workbench.layout.window import mode_offsets, offset_bounds, window_offsets

LAYOUTS = ["(4,(2,3)):(1,(4,8))", "(8,8):(8,1)", "(4,(2,2)):(2,(1,0))", "(2,2,3):(1,6,2)", "12:3", "(6,4):(-1,6)",
           "((2,3),(2,2)):((12,1),(3,6))"]


def _full(layout) -> np.ndarray:
    """Every cell, the slow way: the core's Layout.offsets() folded as the views fold."""
    src = LayoutSource(layout)
    nr, nc = src.shape
    return np.asarray(layout.offsets()).reshape(nc, nr).T


@pytest.mark.parametrize("text", LAYOUTS)
def test_window_offsets_match_the_whole_layout(text):
    L = wb.parse_layout(text)
    full = _full(L)
    nr, nc = full.shape
    rows, cols = np.array([nr - 1, 0, nr // 2]), np.array([nc - 1, 0])
    assert window_offsets(folded(L), rows, cols).tolist() == full[np.ix_(rows, cols)].tolist()
    lo, hi = offset_bounds(L)
    assert (lo, hi) == (int(full.min()), int(full.max()))
    assert mode_offsets(L.shape, L.stride, np.arange(L.size)).tolist() == L.offsets().tolist()


def test_window_of_a_swizzle_and_bad_input():
    S = wb.composition(wb.Swizzle(3, 0, 3), wb.make_layout((8, 8), stride=(8, 1)))
    got = window_offsets(S, np.arange(8), np.arange(8))
    assert got.tolist() == [[S((r, c)) for c in range(8)] for r in range(8)]
    lo, hi = offset_bounds(S)
    assert lo <= got.min() and got.max() <= hi
    with pytest.raises(ValueError, match=r"in \[0, 8\)"):
        window_offsets(S, np.array([8]), np.array([0]))
    with pytest.raises(TypeError, match="1-D integer array"):
        window_offsets(S, np.array([0.5]), np.array([0]))
    with pytest.raises(ValueError, match="rank-2"):
        window_offsets(wb.make_layout(8), np.array([0]), np.array([0]))


@pytest.mark.parametrize("text", ["(4,(2,3)):(1,(4,8))", "(37,29):(29,1)", "(6,4):(-1,6)"])
def test_tiles_exact_and_aggregated(text):
    L = wb.parse_layout(text)
    src = LayoutSource(L)
    full = _full(L).astype(float)
    meta, keys, colors = tile(src, 1, 2, 3, 2, 1)
    assert keys.reshape(3, 2).tolist() == full[1:4, 2:4].tolist()
    assert meta["row_labels"] == [src.rows.label(i) for i in (1, 2, 3)]
    assert colors.tolist() == src.colors_of(keys).tolist()
    # blocks of 2x2 (all cells sampled while step <= 4): the exact block means
    nr, nc = full.shape
    meta, keys, _ = tile(src, 0, 0, 100, 100, 2)
    bn, bc = meta["nr"], meta["nc"]
    assert (bn, bc) == (-(-nr // 2), -(-nc // 2))
    ref = [[full[min(2 * i, nr - 1):min(2 * i + 2, nr), min(2 * j, nc - 1):min(2 * j + 2, nc)] for j in range(bc)] for i in range(bn)]
    # an edge block repeats its last cell (clipped positions): compare with the same sampling
    rp = np.minimum(np.arange(bn)[:, None] * 2 + np.arange(2), nr - 1)
    cp = np.minimum(np.arange(bc)[:, None] * 2 + np.arange(2), nc - 1)
    want = full[np.ix_(rp.reshape(-1), cp.reshape(-1))].reshape(bn, 2, bc, 2).mean(axis=(1, 3))
    assert np.allclose(keys.reshape(bn, bc), want) and len(ref) == bn
    with pytest.raises(ValueError, match="inside the"):
        tile(src, nr, 0, 1, 1)
    with pytest.raises(ValueError, match="positive"):
        tile(src, 0, 0, 0, 1)


def test_a_1e8_cell_layout_opens_without_enumerating():
    L = wb.make_layout((10_000, 10_000), stride=(10_000, 1))
    v = LayoutView(L)
    assert L._offsets is None                              # nothing evaluated all 10^8 offsets
    c = v.canvas
    assert (c.rows, c.cols) == (10_000, 10_000)
    assert len(c.tile_keys) == 64 * 64 * 8 and c.overview_meta == {"nr": 250, "nc": 250, "step": 40}
    assert v.offset(9_999, 9_999) == 99_999_999 and v.coordinate(5, 7) == "(5,7)"
    c.hover = [9_999, 1]
    assert c.hover_text == "index 19999  coordinate (9999,1)  offset 99990001"
    svg = v.to_svg()
    assert len(svg) < 1_000_000 and "<image" in svg and "left out" in svg and svg.count("<svg") == 1
    assert "injectivity is checked up to" in c.subtitle
    with pytest.raises(ValueError, match="at most 1048576 cells to enumerate"):
        _ = v.grid
    # a long vector: one column of 10^8 rows, the overview 256 blocks tall
    vec = LayoutView(wb.make_layout(100_000_000))
    assert vec.canvas.overview_meta["nr"] == 256 and len(vec.to_svg()) < 1_000_000


@pytest.mark.parametrize("shape", [(64, 64), (1024, 1024), (4, 4096), (1, 100_000)])
def test_svg_is_bounded(shape):
    svg = LayoutView(wb.make_layout(shape)).to_svg()
    assert len(svg) < 1_000_000 and svg.rstrip().endswith("</svg>")


def test_cells_show_a_live_tensors_values():
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    v = LayoutView(x, show="values")
    meta = v.canvas.tile_meta
    assert meta["texts"][:4] == ["0", "0.25", "0.5", "0.75"]   # row 0 of the tensor
    assert v.describe(2, 1) == "index 5  coordinate (2,1)  offset 9  value 2.25"
    v.color_by = "value"
    assert v.canvas.legend["label"] == "colour: tensor value" and v.canvas.legend["hi"] == "2.75"
    t = x.t()   # a strided view: values follow its coordinates, offsets its strides
    vt = LayoutView(t, show="values")
    assert vt.describe(1, 2) == "index 9  coordinate (1,2)  offset 9  value 2.25"
    with pytest.raises(ValueError, match="tensor"):
        LayoutView(wb.make_layout(4), show="values")
    with pytest.raises(ValueError, match="show"):
        LayoutView(x, show="bytes")


def test_save_svg_png_tex(tmp_path):
    pytest.importorskip("matplotlib")
    v = LayoutView(wb.parse_layout("(4,2):(1,4)"))
    for name in ("x.svg", "x.png", "x.tex"):
        v.save(tmp_path / name)
    assert (tmp_path / "x.svg").read_text() == v.to_svg()
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "x.tex").read_text().startswith("% Layout: (4,2):(1,4)\n\\documentclass")
    big = LayoutView(wb.make_layout((1024, 1024)))
    big.save(tmp_path / "big.png")
    assert (tmp_path / "big.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="at most 16384 cells for TikZ"):
        big.save(tmp_path / "big.tex")
    with pytest.raises(ValueError, match=r"ending in \.svg, \.png, \.tex"):
        v.save(tmp_path / "x.pdf")


def test_overview_colours_are_the_scale_of_block_means():
    src = LayoutSource(wb.make_layout((1000, 3)))
    meta, keys, colors = overview(src)
    assert meta["step"] == 4 and (meta["nr"], meta["nc"]) == (250, 1)
    assert colors.tolist() == src.colors_of(keys).tolist()
    # block 0: rows 0..3 and the columns sampled at 0, 1, 2, 2 (positions past the edge are clipped)
    assert keys[0] == np.mean([r + 1000 * c for r in range(4) for c in (0, 1, 2, 2)]) == 1251.5
