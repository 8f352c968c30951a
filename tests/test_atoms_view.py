"""MMAView / CopyView: panels as CuTe lays them out, selection, bounded SVG, golden files."""

from __future__ import annotations

import os
import pathlib
import re

import numpy as np
import pytest

import workbench as wb
from widgets.atoms_view import DETAIL_CELL, MAX_SVG_PANEL, READABLE_W, CopyView, MMAView, owners
from widgets.grid import CHUNK_PALETTE
from widgets.raster import svg_to_array
from workbench.atoms import copy_atom, make_tiled_copy_A, make_tiled_mma, mma_atom

SM80 = "SM80_16x8x16_F32F16F16F32_TN"
GOLDEN = pathlib.Path(__file__).parent / "golden"


def check_golden(name: str, svg: str) -> None:
    """Byte-equal to tests/golden/<name>; WB_UPDATE_GOLDEN=1 rewrites it (then review the diff)."""
    path = GOLDEN / name
    if os.environ.get("WB_UPDATE_GOLDEN"):
        path.write_text(svg, encoding="utf-8", newline="\n")
    assert path.exists(), f"missing golden file {path}: run with WB_UPDATE_GOLDEN=1 once and review it"
    assert svg == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


def _mma(k=16):
    return make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1)), (32, 32, k))


def test_owners_inverts_the_tv_layout():
    m = _mma()
    thr, val = owners(m.tv_layout_C_tiled, 32, 32)
    tv = m.tv_layout_C_tiled
    for t in range(m.size):
        for v in range(tv[1].size):
            i = tv((t, v))
            assert (thr[i % 32, i // 32], val[i % 32, i // 32]) == (t, v)


def test_mma_view_panels_and_selection():
    view = MMAView(_mma(), thread=7)
    names = [(p["name"], p["rows"], p["cols"]) for p in view.panels]
    assert names == [("A", 32, 16), ("B", 32, 16), ("C", 32, 32)]
    # thread 0 of the SM80 atom holds A(0,0), A(0,1); C(0,0), C(0,1) (PTX's fragment layout)
    a = np.asarray(view.panels[0]["thr"]).reshape(32, 16)
    c = np.asarray(view.panels[2]["thr"]).reshape(32, 32)
    assert a[0, 0] == a[0, 1] == 0 and c[0, 0] == c[0, 1] == 0 and c[8, 0] == 0
    assert view.thread == 7
    with pytest.raises(ValueError, match=r"thread in \[-1, 128\)"):
        view.select(128)
    with pytest.raises(TypeError, match="TiledMMA"):
        MMAView(mma_atom(SM80))
    data = view.static_bundle()
    assert data["image/svg+xml"].startswith("<svg") and "MMAView" in data["text/plain"]


def test_gmma_c_svg_stays_bounded():
    view = MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS")))
    assert view.panels[2]["rows"] * view.panels[2]["cols"] == 64 * 256
    for level in ("cells", "warps"):
        assert len(view.to_svg(level=level)) < 400_000
    assert "T0V0" not in view.to_svg(level="cells")  # every cell: too small to label


def test_mma_view_draws_all_panels_at_one_scale():
    # SM90 64x32x16: A is 64 x 16, B 32 x 16, C 64 x 32.  One cell size for the three panels (B was drawn at
    # twice A's and looked as tall), the largest that fits the longest side: 1100 // 64 = 17 px.
    view = MMAView(make_tiled_mma(mma_atom("SM90_64x32x16_F32F16F16_SS")))
    assert [(p["name"], p["rows"], p["cols"], p["cell"]) for p in view.panels] == [
        ("A", 64, 16, 17), ("B", 32, 16, 17), ("C", 64, 32, 17)]
    svg = view.to_svg(level="cells")   # every cell, as print_latex (the default for 128 threads: the overview)
    outlines = re.findall(r'<rect x="0" y="0" width="(\d+)" height="(\d+)" fill="none"', svg)
    assert [(int(w), int(h)) for w, h in outlines] == [(16 * 17, 64 * 17), (16 * 17, 32 * 17), (32 * 17, 64 * 17)]
    # a 64 x 256 C bounds all three panels: 4 px each, the largest still within MAX_SVG_PANEL
    big = MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS")))
    assert [p["cell"] for p in big.panels] == [4, 4, 4] and 256 * 4 <= MAX_SVG_PANEL
    widths = re.findall(r'<rect x="0" y="0" width="(\d+)" height="(\d+)" fill="none"', big.to_svg(level="cells"))
    assert [(int(w), int(h)) for w, h in widths] == [(16 * 4, 64 * 4), (16 * 4, 256 * 4), (256 * 4, 64 * 4)]
    # panels set later get the common size too (the browser draws with it)
    view.panels = view.panels[1:2]
    assert view.panels[0]["cell"] == 34


def test_copy_view_conflicts():
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Float16), _mma(64))
    view = CopyView(c, wb.make_layout((32, 64), stride=(64, 1)))
    assert view.before.max_ways == 8 and view.after.conflict_free
    assert str(view.suggestion.swizzle) == "S<3,3,3>"
    assert any("worst 8-way" in line for line in view.readout)


def test_golden_svgs():
    check_golden("atoms_mma_sm80_16x8x16_thread5.svg", MMAView(make_tiled_mma(mma_atom(SM80)), thread=5).to_svg())
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Float16), make_tiled_mma(mma_atom(SM80), None, (16, 8, 32)))
    check_golden("atoms_copy_ldsm_sw64.svg", CopyView(c, wb.make_layout((16, 32), stride=(32, 1)), thread=3, color_by="thread").to_svg())


def _texts(svg):
    """(text, font-size in px) of every <text> of a picture, with the font size it inherits."""
    import xml.etree.ElementTree as ET

    out = []

    def walk(el, size):
        size = float(el.get("font-size", size))
        if el.tag.endswith("text"):
            out.append((el.text or "", size))
        for child in el:
            walk(child, size)
    walk(ET.fromstring(svg), 11)
    return out


def _hopper():
    return make_tiled_mma(mma_atom("SM90_64x64x16_F32F16F16_SS"), wb.make_layout((2, 1, 1)))


def test_a_128_thread_views_picture_is_an_overview_and_one_warp_readable_at_1_to_1():
    # notebook 11's Hopper rung: every cell of C (128 x 64) shrunk into the picture had unreadable labels
    view = MMAView(_hopper())
    svg = view.to_svg()
    texts = _texts(svg)
    # drawn 1:1 in a notebook's output area (968 px at 1400 px), every text at 10 px or more
    width = int(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1))
    assert width <= READABLE_W and svg_to_array(svg).shape[1] == width
    assert min(size for _, size in texts) >= 10
    words = [s for s, _ in texts]
    # the overview: C's eight warps labelled, A by the warpgroup that reads it from shared memory, B by both
    assert all(f"W{w}" in words for w in range(8)) and {"WG0", "WG1", "WG0-1"} <= set(words)
    # one warp at full size: warp 0's window of C, its cells DETAIL_CELL px with T# over V#
    assert "C, warp 0 (T0..T31), part: M 0..15 of 128, N 0..31 of 64" in words
    assert re.search(rf'<rect x="0" y="0" width="{32 * DETAIL_CELL}" height="{16 * DETAIL_CELL}" fill="none" stroke="#d7191c"', svg)
    assert {"T0", "T31", "V0", "V15"} <= set(words) and "T32" not in words
    # thread 145 (warp 4): its warp is the one drawn, its cells outlined there
    sel = view.select(145).to_svg()
    assert "C, warp 4 (T128..T159), part: M 64..79 of 128, N 0..31 of 64" in [s for s, _ in _texts(sel)]
    assert "T145" in sel and '<path fill="#000000"' in sel   # its cells at 3 px overview cells: filled black
    # every cell remains a level away, as print_latex draws it
    assert "C, warp" not in view.to_svg(level="cells")
    with pytest.raises(ValueError, match="level 'cells', 'warps' or None"):
        view.to_svg(level="overview")


def test_a_one_warp_view_keeps_every_cell():
    # one warp (an SM80 atom): every cell T#V# at a legible size, as print_latex (the golden files too)
    svg = MMAView(make_tiled_mma(mma_atom(SM80))).to_svg()
    assert "warp" not in svg and "T0V0" in svg


def test_a_tiled_copys_picture_keeps_its_chunk_colours_in_the_overview():
    # notebook 10's ldmatrix copy over a row-major tile: 4 panels of 32 x 64 cells, two by two at 6 px; the chunk
    # panels in their 8 chunk colours (the 8-way -> 1-way change as a picture), src's warp 0 at full size
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Float16), _mma(64))
    svg = CopyView(c, wb.make_layout((32, 64), stride=(64, 1))).to_svg()
    words = [s for s, _ in _texts(svg)]
    assert "src, warp 0 (T0..T31), part: M 0..15 of 32, N 0..31 of 64" in words
    assert min(size for _, size in _texts(svg)) >= 10
    chunks = svg.split("smem chunks (32 x 64)")[1].split("</g>")[0]
    assert set(re.findall(r'<path fill="(#[0-9a-f]{6})"', chunks)) == set(CHUNK_PALETTE)
    heights = re.findall(r'<rect x="0" y="0" width="(\d+)" height="(\d+)" fill="none" stroke="#444444"', svg)
    assert heights == [("384", "192")] * 4   # 64 x 32 cells at 6 px each
    assert int(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1)) <= READABLE_W
