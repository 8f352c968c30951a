"""The static forms of every view at any size: SVG under 1 MB, PNG from the same picture, exact read-outs,
colour by tile or mode, the shared-memory note of SS GMMA operands, and the progress bar's saved output."""

from __future__ import annotations

import html
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets import AlgebraPlayground, CopyView, DLPackInspector, LayoutView, MarkingExplorer, MMAView, TVLayoutView
from widgets.colors import QUALITATIVE
from widgets.grid import LayoutSource
from widgets.svg import MAX_SIDE_PX, SVG_MAX_BYTES, grid_svg
from workbench.atoms import copy_atom, make_tiled_copy_A, make_tiled_mma, mma_atom

BIG = 10**15
SM80 = "SM80_16x8x16_F32F16F16F32_TN"


def deep(levels=12, scale=BIG):
    """A 4096-cell layout nested in one mode, strides near 1e15: long coordinates and long offsets."""
    return wb.make_layout(((2,) * levels,), stride=(tuple(scale * (k + 1) for k in range(levels)),))


def deep2(scale=BIG):
    return wb.make_layout(((2, 2, 2, 2, 2, 2), (2, 2, 2, 2, 2, 2)),
                          stride=(tuple(scale * p for p in (1, 3, 5, 7, 11, 13)),
                                  tuple(scale * p for p in (17, 19, 23, 29, 31, 37))))


# every view class, at large and adversarial sizes: the static picture stays under 1 MB and is one XML document
VIEWS = {
    "layout deep nested 1e15": lambda: LayoutView(deep()),
    "layout two deep modes 1e15": lambda: LayoutView(deep2()),
    "layout 1e8": lambda: LayoutView(wb.make_layout((10_000, 10_000))),
    "layout (4,4096)": lambda: LayoutView(wb.make_layout((4, 4096))),
    "layout 4096:1": lambda: LayoutView(wb.make_layout(4096)),
    "layout (1,100000)": lambda: LayoutView(wb.make_layout((1, 100_000))),
    "layout rank 400 title": lambda: LayoutView(wb.make_layout((1,) * 400, stride=(BIG,) * 400)),
    "layout values 64x64": lambda: LayoutView(np.random.default_rng(0).standard_normal((64, 64)) * 1e-5,
                                              show="values", color_by="value"),
    "layout by mode": lambda: LayoutView(deep2(), color_by="mode"),
    "playground (64,64) x (64,64)": lambda: AlgebraPlayground("(64,64):(1,64)", "(64,64):(1,64)"),
    "playground 4096-vectors": lambda: AlgebraPlayground("4096:1", "4096:1"),
    "playground deep": lambda: AlgebraPlayground(str(deep2()), "(64,64):(1,64)", "composition"),
    "marking 4096": lambda: MarkingExplorer(np.zeros(4096)),
    "marking 2048x2048": lambda: MarkingExplorer(np.zeros((2048, 2048), np.float32)),
    "marking 64x64 int64": lambda: MarkingExplorer(np.zeros((64, 64), np.int64)),
    "tv 64x64 tile": lambda: TVLayoutView(wb.make_layout((1024, 4), stride=(4, 1)), (64, 64), thread=1000),
    "tv 1024x1024 tile": lambda: TVLayoutView(wb.make_layout((256, 4096), stride=(1, 256)), (1024, 1024), thread=3),
    "inspector": lambda: DLPackInspector(np.zeros((3, 5), np.float32)),
    "mma gmma 64x256 SS": lambda: MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS")), thread=5),
    "mma sm80 256x256": lambda: MMAView(make_tiled_mma(mma_atom(SM80), wb.make_layout((4, 4, 1)), (256, 256, 64)),
                                        thread=3),
    "copy 128x256": lambda: CopyView(make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Float16),
                                                       make_tiled_mma(mma_atom(SM80), wb.make_layout((4, 2, 1)),
                                                                      (128, 64, 256))), thread=2),
}


def _extent(svg: str) -> tuple[int, int]:
    root = ET.fromstring(svg)
    return int(root.get("width")), int(root.get("height"))


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_view_svg_stays_under_1mb(name):
    svg = VIEWS[name]().to_svg()
    assert len(svg.encode("utf-8")) < SVG_MAX_BYTES, (name, len(svg))
    ET.fromstring(svg)   # one well-formed document


def test_grid_svg_keeps_its_budget_and_says_what_it_left_out():
    src = LayoutSource(deep2(10**9))   # 12-digit offsets: whole, it is 6336 px wide (within MAX_SIDE_PX)
    whole = grid_svg(src, budget=10**7)
    assert "left out" not in whole and whole.count("<rect") > 4096   # drawn whole when that fits
    assert len(whole) > 400_000
    for budget in (400_000, 300_000, 100_000, 40_000):
        svg = grid_svg(src, budget=budget)
        assert len(svg) <= budget and "left out" in svg and "<image" in svg
    # a narrow grid keeps more cells along its long axis, within MAX_SIDE_PX
    vec = grid_svg(LayoutSource(wb.make_layout(100_000)))
    assert "rows 0..387 and columns 0..0" in vec and _extent(vec)[1] <= MAX_SIDE_PX
    # a 4096-cell vector fits the bytes but not the extent: overview and first rows, not 74k px of cells
    vec = LayoutView(wb.make_layout(4096)).to_svg()
    assert "left out" in vec and _extent(vec)[1] <= MAX_SIDE_PX
    wide = LayoutView(wb.make_layout((1, 100_000))).to_svg()
    assert _extent(wide)[0] <= MAX_SIDE_PX
    # a title too long to read is cut, saying how long it was
    long = LayoutView(wb.make_layout((1,) * 400, stride=(BIG,) * 400)).to_svg()
    assert "characters in all)" in long
    with pytest.raises(ValueError, match="byte budget of at least"):
        grid_svg(src, budget=2_000)


# -- exact offsets past 2**53 ------------------------------------------------------------------
def test_offsets_past_2_53_are_exact_in_readout_labels_and_svg():
    v = LayoutView(wb.make_layout((2, 2), stride=(2**53, 1)))
    assert float(2**53 + 1) == float(2**53)          # what float64 keys would show
    assert v.offset(1, 1) == 2**53 + 1
    assert v.describe(1, 1) == "index 3  coordinate (1,1)  offset 9007199254740993"
    v.canvas.hover = [1, 1]
    assert v.canvas.hover_text.endswith("offset 9007199254740993")
    assert v.canvas.tile_meta["texts"] == ["0", "1", "9007199254740992", "9007199254740993"]
    assert ">9007199254740993<" in v.to_svg()
    assert "injective" in v.canvas.subtitle and "non-injective" not in v.canvas.subtitle
    assert "texts" not in LayoutView(wb.make_layout((2, 2))).canvas.tile_meta   # small offsets: keys suffice


# -- colour by tile or by mode -----------------------------------------------------------------
def test_tile_colouring_defaults_and_option():
    v = LayoutView(wb.make_layout((8, 8)), color_by="tile")
    colors = v.grid.colors.reshape(8, 8)
    assert v.tile == (4, 4) and len(set(colors.reshape(-1).tolist())) == 4    # an unnested (8,8): not one colour
    assert colors[0, 0] == colors[3, 3] != colors[4, 0] != colors[0, 4]
    assert v.canvas.legend["label"] == "colour: tile of 4x4 cells (numbered down the columns)"
    assert [e[1] for e in v.canvas.legend["entries"]] == ["tile 0", "tile 1", "tile 2", "tile 3"]
    assert v.canvas.legend["note"] == "4 tiles; tile=(rows, cols) sets their size"
    v.tile = (2, 8)
    assert v.grid.colors.reshape(8, 8)[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    nested = LayoutView(wb.parse_layout("((2,3),(4,2)):((1,2),(6,24))"), color_by="tile")
    assert nested.tile == (2, 4)                                        # the innermost nested periods
    big = LayoutView(wb.make_layout((96, 1000)), color_by="tile", tile=(16, 16))
    assert big.tile == (16, 16) and "9 (repeats every 9)" in big.canvas.legend["label"]
    assert big.canvas.legend["entries"][0][1] == "tile 0, 9, ..."
    assert LayoutView(wb.make_layout((12, 7)), color_by="tile").tile == (6, 4)   # a divisor; half of a prime
    with pytest.raises(ValueError, match=r"tile as \(rows, cols\) of positive ints"):
        LayoutView(wb.make_layout((8, 8)), tile=(0, 2))


def test_mode_colouring_by_any_sub_mode():
    L = wb.parse_layout("(4,(2,3)):(1,(4,8))")
    v = LayoutView(L, color_by="mode")
    assert "mode" in v.color_control.options and v.mode_control.layout.display is None
    assert [label for label, _ in v.mode_control.options] == ["get<0>: 4:1", "get<1>: (2,3):(4,8)", "get<1,0>: 2:4",
                                                              "get<1,1>: 3:8"]
    assert v.mode == (1, 0)                               # the first nested sub-mode by default
    assert v.grid.colors.reshape(4, 6)[0].tolist() == [0, 1, 0, 1, 0, 1]
    assert v.canvas.legend["label"] == "colour: coordinate in get<1,0>: 2:4"
    assert [e[0] for e in v.canvas.legend["entries"]] == list(QUALITATIVE[:2])
    v.mode_control.value = (1, 1)                         # what the second drop-down does
    assert v.grid.colors.reshape(4, 6)[0].tolist() == [0, 0, 1, 1, 2, 2]
    v.mode = 0
    assert v.grid.colors.reshape(4, 6)[:, 0].tolist() == [0, 1, 2, 3]
    v.mode = (1,)
    assert v.grid.colors.reshape(4, 6)[0].tolist() == [0, 1, 2, 3, 4, 5]
    # a nested row mode: its sub-mode's coordinate, colexicographic like CuTe's idx2crd
    r = LayoutView(wb.parse_layout("((2,4),3):((1,2),8)"), color_by="mode", mode=(0, 1))
    assert r.grid.colors.reshape(8, 3)[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    v.color_by = "offset"
    assert v.mode_control.layout.display == "none"
    with pytest.raises(ValueError, match=r"one of the layout's \(sub-\)modes"):
        v.mode = (2,)
    assert LayoutView(wb.make_layout(8), color_by="mode").grid.colors.tolist() == list(range(8))


# -- PNG: the SVG, rasterized ------------------------------------------------------------------
def _png_array(view, tmp_path):
    from PIL import Image

    path = tmp_path / "v.png"
    view.save(path)
    return np.asarray(Image.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def test_png_is_the_svg_with_legend_and_left_out_note(tmp_path):
    from widgets.raster import svg_to_array

    v = LayoutView(wb.make_layout((8, 8)), color_by="tile")
    img = _png_array(v, tmp_path)
    svg = v.to_svg()
    root = ET.fromstring(svg)
    assert img.shape == (int(root.get("height")), int(root.get("width")), 3)
    assert (img == svg_to_array(svg)).all()
    # each legend swatch is painted in its colour, inside its grey frame
    for rect in root.iter("{http://www.w3.org/2000/svg}rect"):
        if rect.get("width") == "12" and rect.get("stroke") == "#777777":
            x, y, fill = int(rect.get("x")), int(rect.get("y")), rect.get("fill")
            assert img[y + 6, x + 6].tolist() == [int(fill[k:k + 2], 16) for k in (1, 3, 5)]
    # a large grid: the overview image, the first tile and the line saying what was left out
    big = LayoutView(wb.make_layout((1024, 1024)))
    svg = big.to_svg()
    lines = {t.text: int(t.get("y")) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    note = next(y for t, y in lines.items() if t and "left out" in t)
    img = _png_array(big, tmp_path)
    assert (img[note - 8:note + 2, :400] < 128).any()               # the note's text is drawn
    legend = next(y for t, y in lines.items() if t == "colour: offset")
    assert (img[legend - 8:legend + 2, :100] < 128).any()


def test_png_of_every_kind_of_view_and_refusals(tmp_path):
    from widgets.raster import svg_to_array

    for view in (AlgebraPlayground("(8,4):(1,8)", "4:2", "logical_divide"), MarkingExplorer(np.zeros((4, 3))),
                 DLPackInspector(np.zeros((3, 5), np.float32)),
                 TVLayoutView(wb.Layout(((8, 4), 2), ((1, 16), 8)), (8, 8), thread=9)):
        img = _png_array(view, tmp_path)
        assert img.shape[0] > 50 and (img < 128).any() and (img > 250).any()
    mma = MMAView(make_tiled_mma(mma_atom(SM80)), thread=5)
    arr = svg_to_array(mma.to_svg())                 # the atoms' paths of rectangles
    assert arr[24 + 5, 10 + 5].tolist() == [0xAF, 0xAF, 0xFF]   # A(0,0): thread 0's colour
    with pytest.raises(ValueError, match=r"<circle>"):
        svg_to_array('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><circle r="1"/></svg>')


# -- SS GMMA: operands from shared memory belong to no thread ------------------------------------
def test_ss_gmma_operands_say_they_come_from_shared_memory():
    v = MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS")), thread=5)
    a, b, c = v.panels
    assert (a["shared"], b["shared"], c["shared"]) == (128, 128, 0)
    assert a["note"].startswith("A from shared memory: read by all 128 threads of the warpgroup together")
    assert b["note"].startswith("B from shared memory")
    # every cell, and the overview by warp (the picture's default for 128 threads): the selected thread's cells
    # outlined (in the overview's 1 px cells, filled black)
    for level, marked in (("cells", 'stroke="#000"'), ("warps", '<path fill="#000000"')):
        svg = v.to_svg(level=level)
        # each panel's note, wrapped to the panel's width, reads back whole from its lines
        for panel, nxt in ((a, "B (256 x 16)"), (b, "C (64 x 256)")):
            part = svg.split(panel["title"])[1].split(nxt)[0]
            assert " ".join(re.findall(r'fill="#b35806">([^<]*)</text>', part)) == html.escape(panel["note"])
        # the shared panels are grey, and the selected thread is marked in C only
        head = svg.split("B (256 x 16)")[0]
        assert "#e4e4e4" in head and marked not in head and marked in svg.split("C (64 x 256)")[1], level
    # RS: A is in registers (per thread), B in shared memory
    rs = MMAView(make_tiled_mma(mma_atom("SM90_64x128x16_F32F16F16_RS")))
    assert [p["shared"] for p in rs.panels] == [0, 128, 0]
    # two warpgroups along M: each reads its own half of A; all 256 threads read B
    two = MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS"), wb.make_layout((2, 1, 1))))
    assert [p["shared"] for p in two.panels] == [128, 256, 0]
    thr = np.asarray(two.panels[0]["thr"]).reshape(128, 16)
    assert set(thr[:64].reshape(-1).tolist()) == {0} and set(thr[64:].reshape(-1).tolist()) == {128}
    assert two.panels[1]["note"].startswith("B from shared memory: read by all 256 threads of 2 warpgroups together")
    assert all(p["shared"] == 0 for p in MMAView(make_tiled_mma(mma_atom(SM80))).panels)


def test_atoms_panel_too_large_for_paths_becomes_an_image():
    v = MMAView(make_tiled_mma(mma_atom(SM80), wb.make_layout((4, 4, 1)), (256, 256, 64)), thread=3)
    svg = v.to_svg(level="cells")   # every cell (the default for 512 threads: the overview by warp)
    assert svg.count("<image") >= 1 and "too many cells to draw one by one" in svg
    assert 'stroke="#000" stroke-width="2"' in svg     # thread 3 still outlined over the image
    assert len(svg) < SVG_MAX_BYTES
    assert len(v.to_svg()) < SVG_MAX_BYTES and "C, warp 0 (T0..T31)" in v.to_svg()


# -- progress: what a saved notebook keeps ---------------------------------------------------------
def test_progress_leaves_a_line_saying_how_the_loop_ended(capsys):
    from widgets import progress
    from widgets.charts import _bar_class

    assert list(progress(range(3), description="measuring")) == [0, 1, 2]
    out = capsys.readouterr().out.splitlines()
    assert out == ["measuring: a progress bar over 3 items", "measuring: 3/3 done"]
    for i in progress(iter(range(10)), total=10):
        if i == 4:
            break
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "progress: stopped after 4/10"
    bar = _bar_class()(value=0, max=5, description="measuring")
    data = bar._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert data["text/plain"] == "measuring: a progress bar over 5 items"
    assert "application/vnd.jupyter.widget-view+json" in data
