"""The Hopper operand views: GmmaDescView draws the cells a descriptor's walk reads (every cell checked against the
hardware walk, GmmaDescriptor.address) under its fields; TmaBoxView draws a TMA box's shared layout under the
descriptor's fields; both have a static picture that names the fields."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets import GmmaDescView, TmaBoxView
from workbench.atoms.gmma_desc import k_block_tile, make_gmma_desc


def _texts(svg):
    return " ".join(e.text for e in ET.fromstring(svg).iter() if e.text)


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("kind", ["INTER", "SW32", "SW64", "SW128"])
def test_every_cell_is_where_the_descriptor_walk_reads(major, kind):
    atom = wb.gmma_smem_atom(f"Layout_{major}_{kind}_Atom", wb.Float16)
    mma = wb.make_tiled_mma(wb.mma_atom("SM90_64x64x16_F32F16F16_SS", major_a=major, major_b=major),
                            wb.make_layout((2, 1, 1)))
    p = mma.get_slice(130).partition_A(wb.tile_to_shape(atom, (128, 64)))
    tile = k_block_tile(p, 1)
    desc = make_gmma_desc(tile, 16, major, 64, 16)
    v = GmmaDescView(desc, tile)
    assert v.layout_view.source.shape == (64, 16)
    for x in range(64):
        for y in range(16):
            assert v.layout_view.offset(x, y) * 2 == desc.address(x, y), (x, y)
    assert v.core_matrix == ((8, 8)) and v.layout_view.color_by == "tile" and v.layout_view.tile == (8, 8)
    rows = dict(v.rows())
    assert rows["LBO"].startswith(f"{desc.lbo} B") and rows["SBO"].startswith(f"{desc.sbo} B")
    assert kind in rows["swizzle"] and f"0x{desc.encode():016x}" in rows["word"]
    text = _texts(v.to_svg())
    assert "GMMA descriptor" in text and f"{desc.sbo} B" in text and f"0x{desc.encode():016x}" in text


def test_a_tma_box_view_draws_the_box_where_the_tma_writes_it():
    atom = wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
    box_layout = wb.tile_to_shape(atom, (128, 64))
    tma = wb.make_tma_load(np.zeros((300, 136), np.float16), box_layout)
    v = TmaBoxView(tma)
    assert v.layout_view.color_by == "chunk"
    for m in range(0, 128, 7):
        for k in range(64):
            assert v.layout_view.offset(m, k) * 2 == tma.box.smem_byte((m, k))
    rows = dict(v.rows())
    assert rows["swizzle"] == "128B" and rows["box_dim"] == "[64, 128]" and f"{tma.nbytes} bytes" in rows["box"]
    assert "TMA box" in _texts(v.to_svg())


def test_bad_input_is_refused():
    atom = wb.gmma_smem_atom("Layout_K_INTER_Atom", wb.Float16)
    tile = wb.tile_to_shape(atom, (64, 16))
    desc = make_gmma_desc(tile, 16, "K", 64, 16)
    with pytest.raises(TypeError, match="Expected a GmmaDescriptor"):
        GmmaDescView(tile, tile)
    with pytest.raises(ValueError, match=r"the tile the descriptor was made from \(64 x 16 elements\)"):
        GmmaDescView(desc, wb.tile_to_shape(atom, (64, 64)))
    with pytest.raises(TypeError, match="Expected a TMA descriptor"):
        TmaBoxView(desc)
