"""LayoutView without a browser: folding, model state, observers, SVG golden files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets.colors import QUALITATIVE, SEQUENTIAL, scale_indices
from widgets.grid import fold, layout_grid
from widgets.layout_view import LayoutView
from widgets.svg import grid_svg

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("WB_UPDATE_GOLDEN") == "1"


def check_golden(name: str, svg: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8", newline="\n")
    assert path.exists(), f"missing golden file {path}: run with WB_UPDATE_GOLDEN=1 once and review it"
    assert svg == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


def dyn_layout():
    return wb.Layout((wb.Dyn(4, 32, 4), 3), (1, wb.Dyn(8, 64, 8)))


GOLDEN_CASES = {
    "layout_nested.svg": lambda: LayoutView(wb.make_layout((4, (2, 3)), stride=(1, (4, 8)))),
    "layout_broadcast_selected.svg": lambda: LayoutView(wb.parse_layout("(4,(2,2)):(2,(1,0))"), selected_offset=3),
    "layout_dynamic.svg": lambda: LayoutView(dyn_layout()),
    "layout_rank3_by_row.svg": lambda: LayoutView(wb.parse_layout("(2,2,3):(1,6,2)"), color_by="row"),
    "layout_rank1.svg": lambda: LayoutView(wb.parse_layout("8:2")),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_svg_golden(name):
    check_golden(name, GOLDEN_CASES[name]().to_svg())


def test_svg_is_byte_identical_across_processes():
    # a fresh interpreter (new hash seed, new object addresses) writes the same bytes
    code = ("import workbench as wb; from widgets.layout_view import LayoutView; import sys; "
            "sys.stdout.write(LayoutView(wb.parse_layout('(4,(2,2)):(2,(1,0))'), selected_offset=3).to_svg())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED=str(seed))).stdout for seed in (1, 2)}
    assert len(outs) == 1
    assert outs.pop() == GOLDEN_CASES["layout_broadcast_selected.svg"]().to_svg()


def test_svg_is_one_document_without_ids_or_addresses():
    svg = LayoutView(wb.make_layout((64, 64), stride=(64, 1))).to_svg()
    assert svg.count("<svg") == 1 and svg.rstrip().endswith("</svg>")
    assert " id=" not in svg and not re.search(r"0x[0-9a-f]{6,}", svg)
    assert svg.count("<rect") == 64 * 64 + 2 + 32  # cells, background, frame, the legend's colour scale
    assert len(svg) < 1_000_000


def test_fold_follows_cute_printing():
    # rank 2: rows = mode 0, columns = mode 1, cell (m,n) = L(m,n)
    L = wb.make_layout((4, (2, 3)), stride=(1, (4, 8)))
    g = layout_grid(L)
    assert g.shape == (4, 6)
    off = g.keys.reshape(4, 6)
    for m in range(4):
        for n in range(6):
            assert off[m, n] == L((m, n))
    assert g.cols.labels == ["(0,0)", "(1,0)", "(0,1)", "(1,1)", "(0,2)", "(1,2)"]
    assert g.cols.groups == [2] and g.rows.groups == []
    # rank 1: one column (print_latex appends 1:0)
    g1 = layout_grid(wb.parse_layout("8:2"))
    assert g1.shape == (8, 1) and g1.keys.tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    # rank 3: modes 1..2 fold into one nested column mode, colexicographically
    L3 = wb.parse_layout("(2,2,3):(1,6,2)")
    r, c = fold(L3)
    assert str(r) == "2:1" and str(c) == "(2,3):(6,2)"
    g3 = layout_grid(L3)
    assert g3.shape == (2, 6) and g3.notes
    assert g3.keys.reshape(2, 6)[1, 3] == L3((1, 1, 1))
    # three-level nesting shows two rule periods
    g4 = layout_grid(wb.parse_layout("(2,(2,2,2)):(8,(1,2,4))"))
    assert g4.cols.groups == [2, 4]


def test_color_modes_and_colour_layout():
    L = wb.parse_layout("(4,3):(3,1)")
    v = LayoutView(L)
    # by offset: a position on one colour-blind-safe scale from the smallest to the largest offset
    assert v.grid.colors.tolist() == scale_indices(v.grid.keys, 0, 11).tolist()
    assert v.grid.palette == SEQUENTIAL and len(set(v.grid.colors.tolist())) == 12   # no colour repeats
    assert v.canvas.legend == {"kind": "scale", "label": "colour: offset", "lo": 0, "hi": 11,
                               "note": "a position on this scale; cell labels give exact offsets"}
    v.color_by = "row"
    assert v.grid.colors.reshape(4, 3)[:, 0].tolist() == [0, 1, 2, 3]
    assert np.frombuffer(v.canvas.tile_colors, np.uint8).tolist() == v.grid.colors.tolist()  # observer synced it
    # 4 rows, 9 colours: each row its own colour, and the legend says no "mod" (it would claim a repeat)
    assert v.canvas.legend["label"] == "colour: row index"
    assert [e[1] for e in v.canvas.legend["entries"]] == ["row index 0", "row index 1", "row index 2", "row index 3"]
    tall = LayoutView(wb.make_layout((12, 2)), color_by="row")
    assert tall.canvas.legend["label"] == f"colour: row index mod {len(QUALITATIVE)} (repeats every {len(QUALITATIVE)})"
    v.color_by = "column"
    assert v.grid.colors.reshape(4, 3)[0].tolist() == [0, 1, 2]
    tiles = LayoutView(wb.parse_layout("((2,2),(3,2)):((1,2),(4,12))"), color_by="tile").grid.colors.reshape(4, 6)
    assert tiles[:, 0].tolist() == [0, 0, 1, 1] and tiles[0].tolist() == [0, 0, 0, 2, 2, 2]
    C = wb.parse_layout("(4,3):(0,5)")
    vc = LayoutView(L, color_by="layout", color_layout=C)
    assert vc.grid.colors.reshape(4, 3)[2].tolist() == [0, 5 % 9, 10 % 9]
    with pytest.raises(ValueError, match="color_by"):
        v.color_by = "layout"  # no colour layout given
    with pytest.raises(ValueError, match="size 12"):
        LayoutView(L, color_by="layout", color_layout=wb.parse_layout("4:1"))
    with pytest.raises(TypeError, match="wb.Layout"):
        LayoutView(3.5)


def test_model_state_is_compact_and_hover_select_work():
    L = wb.parse_layout("(4,(2,2)):(2,(1,0))")
    v = LayoutView(L)
    c = v.canvas
    assert (c.rows, c.cols) == (4, 4)
    assert np.frombuffer(c.tile_keys, "<f8").reshape(4, 4).tolist() == v.grid.keys.reshape(4, 4).tolist()
    assert len(c.tile_colors) == 16 and "texts" not in c.tile_meta
    assert c.tile_meta["col_labels"] == ["(0,0)", "(1,0)", "(0,1)", "(1,1)"]
    # what the browser writes back, and what the kernel answers
    assert v.hover is None and v.hover_text == ""
    c.hover = [1, 2]
    assert v.hover == (1, 2) and v.hover_text == "index 9  coordinate (1,(0,1))  offset 2"
    assert c.hover_text == v.hover_text
    c.selected = 3.0
    assert v.selected_offset == 3 and c.selected_count == 2
    assert v.selected_cells == [(1, 1), (1, 3)]  # stride 0: two coordinates, one offset
    assert v.grid.selected == 3.0
    assert 'stroke="#d7191c"' in v.to_svg()
    v.selected_offset = None
    assert v.selected_cells == [] and "#d7191c" not in v.to_svg()
    with pytest.raises(TypeError, match="int offset"):
        v.selected_offset = 1.5


def test_dynamic_modes_are_marked_and_symbolic_ones_refused():
    v = LayoutView(dyn_layout())
    assert v.grid.rows.dynamic and v.grid.cols.dynamic
    assert v.grid.rows.title == "?{div=4}:1 = 4:1"
    assert v.grid.cols.title == "3:?{i64 div=8} = 3:8"
    assert v.grid.keys.reshape(4, 3)[3, 2].item() == 3 + 16
    svg = v.to_svg()
    assert "(dynamic)" in svg and "?{i64 div=8}" in svg
    static = LayoutView(wb.parse_layout("(4,3):(1,8)")).to_svg()
    assert "(dynamic)" not in static
    with pytest.raises(ValueError, match="symbolic"):
        LayoutView(wb.parse_layout("(?,4):(1,?)"))


def test_repr_and_mimebundle():
    v = LayoutView(wb.parse_layout("(4,2):(1,4)"))
    assert repr(v) == "LayoutView((4,2):(1,4), color_by='offset')"
    assert "0x" not in repr(v)
    data = v._repr_mimebundle_()
    assert data["text/plain"] == repr(v)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert v.static_bundle()["text/plain"] == f"picture of {v!r}"


def test_layout_string_and_grid_svg_direct():
    assert LayoutView("(2,2):(2,1)").layout == wb.parse_layout("(2,2):(2,1)")
    g = layout_grid(wb.parse_layout("(2,2):(2,1)"))
    assert grid_svg(g) == grid_svg(layout_grid(wb.parse_layout("(2,2):(2,1)")))


def test_layout_view_draws_swizzled_offsets():
    S = wb.composition(wb.Swizzle(2, 0, 2), wb.make_layout((4, 4), stride=(4, 1)))
    v = LayoutView(S)
    from widgets.grid import folded_offsets

    assert folded_offsets(S).tolist() == [[S((r, c)) for c in range(4)] for r in range(4)]
    assert folded_offsets(S).tolist() != folded_offsets(S.outer).tolist()  # the swizzle is not dropped
    assert "S<2,0,2> o 0 o (4,4):(4,1)" in repr(v) and "swizzled" in v.to_svg()


def test_layout_view_draws_f2_layouts():
    """An F2 (XOR-strided) layout draws as a Layout does: each cell its offset, its modes' XOR strides on the axes."""
    from widgets.grid import folded_offsets
    from workbench.layout.window import offset_bounds, window_offsets

    sw = wb.composition(wb.Swizzle(3, 3, 3), wb.make_layout((8, 64), stride=(64, 1)))
    F = wb.make_f2_layout(sw)
    assert folded_offsets(F).tolist() == folded_offsets(sw).tolist()   # the same picture as the swizzle's
    v = LayoutView(F)
    assert v.offset(3, 5) == F(3, 5) == sw((3, 5)) and "offset 221" in v.describe(3, 5)
    assert v.grid.rows.title == "8:72" and "F2" in v.grid.notes[0]
    assert "injective" in v._subtitle() and "F2 (8,64):(72,1)" in v.to_svg() and "F2 (8,64):(72,1)" in v.to_tikz()
    # a general F2 layout, no single swizzle: rank 3 folds its modes 1.. into the columns, bracketed XOR strides
    G = wb.make_f2_layout((4, (2, 4), 2), ([1, 6], (8, [16, 33]), 3))
    g = LayoutView(G, color_by="mode", mode=(1, 1))
    nr, nc = g.source.shape
    assert (nr, nc) == (4, 16)
    assert folded_offsets(G).tolist() == [[G(r + 4 * c) for c in range(nc)] for r in range(nr)]
    assert "[16,33]" in g.grid.cols.title and offset_bounds(G) == (0, G.cosize - 1)
    assert window_offsets(wb.make_f2_layout((4, 4), ([1, 6], [8, 3])), [1, 3], [2]).tolist() == [[1 ^ 3], [7 ^ 3]]
    # the broadcast bit of a non-injective F2 layout shows in the selection
    H = wb.make_f2_layout((2, 4), (1, [1, 2]))
    h = LayoutView(H, selected_offset=0)
    assert h.selected_cells == [(0, 0), (1, 1)] and "non-injective" in h._subtitle()


def test_print_layout_of_an_f2_layout():
    text = wb.layout.printing.format_layout(wb.make_f2_layout((4, 4), ([1, 6], [8, 3])))
    assert text.splitlines()[0] == "F2 (4,4):([1,6],[8,3])"
    assert text.splitlines()[7] == " 2  |  6 | 14 |  5 | 13 |"
    assert "| 6 |" in wb.layout.printing.format_layout(wb.make_f2_layout(4, [1, 6]))


def test_swizzled_layouts_open_coloured_by_chunk():
    """A swizzle is taught by its 16-byte chunks changing places: a swizzled layout opens coloured by them, its element
    size read from its smem pointer or from CuTe's S<B,M,S> convention (2^M elements a 16-byte unit); the title's
    notation is kept and the other one explained in a note; a plain layout still opens by offset."""
    from widgets.layout_view import swizzle_element_bits

    plain = wb.make_layout((8, 64), stride=(64, 1))
    for sw, bits in (((3, 3, 3), 16), ((3, 2, 3), 32), ((3, 4, 3), 8), ((2, 3, 3), 16)):
        lay = wb.make_composed_layout(wb.Swizzle(*sw), 0, plain)
        assert swizzle_element_bits(lay) == bits
        v = LayoutView(lay)
        assert v.color_by == "chunk" and {"bank", "chunk"} <= set(v.color_control.options)
        assert v.canvas.legend["label"] == f"colour: shared-memory 16-byte chunk ({bits}-bit elements)"
    assert LayoutView(plain).color_by == "offset" and swizzle_element_bits(plain) is None
    assert LayoutView(wb.make_composed_layout(wb.Swizzle(3, 3, 3), 0, plain), color_by="offset").color_by == "offset"
    box = wb.tile_to_shape(wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (128, 64))
    assert str(box).startswith("Sw<3,4,3> o smem_ptr[16b](unset)")
    v = LayoutView(box)
    assert v.color_by == "chunk"
    notes = v.source.notes
    assert notes[0] == ("swizzled: Sw<3,4,3> permutes the byte addresses of 16-bit elements (CuTe C++'s notation); "
                        "a cell shows the element offset, on which the same swizzle is S<3,3,3> (CuTe DSL's notation)")
    assert "rows labelled (i,j) of (8,16): row i + 8*j" in notes
    # chunk 0..7 of each 128-byte row: row 0 in order, row 1 with its chunks XOR 1 (S<3,3,3>: chunk ^ row % 8)
    off = v.source.offsets_at(np.arange(2), np.arange(64))
    chunks = v.source.bank_of(off)[1]
    assert chunks[0, ::8].tolist() == list(range(8)) and chunks[1, ::8].tolist() == [c ^ 1 for c in range(8)]


def test_chunk_colours_show_the_8_way_to_1_way_change_of_notebook_05():
    # notebook 05 teaches the swizzle for 16-byte loads of a 32 x 32 fp32 tile by these two pictures: a phase's 8
    # threads read one chunk column of 8 rows; unswizzled it is one colour (8-way), with S<3,2,3> all 8 (1-way)
    tile32 = wb.make_layout((32, 32), stride=(32, 1))
    rows, cols = np.arange(32), np.arange(0, 32, 4)   # the first float of each chunk column
    for smem, ways in ((tile32, 8), (wb.make_composed_layout(wb.Swizzle(3, 2, 3), 0, tile32), 1)):
        v = LayoutView(smem, color_by="chunk", element_type=wb.Float32)
        assert v.canvas.legend["label"] == "colour: shared-memory 16-byte chunk (32-bit elements)"
        chunks = v.source.bank_of(v.source.offsets_at(rows, cols))[1]
        per_phase = [len(set(chunks[r0:r0 + 8, c].tolist())) for r0 in range(0, 32, 8) for c in range(8)]
        assert set(per_phase) == {8 // ways}, (str(smem), per_phase)   # distinct chunks a phase's 8 loads meet
        ld128 = wb.make_tiled_copy(wb.copy_atom("UniversalCopy_U128", wb.Float32), (32, 1), (1, 32))
        assert wb.bank_conflicts(ld128, smem).max_ways == ways


def test_a_front_end_selection_that_is_no_offset_selects_nothing():
    # offsets are integers: a key of 2.5 (or nan, or inf) from the front end names no cell; it is not cell 2
    v = LayoutView(wb.make_layout((4, 4)))
    v.canvas.selected = 2.5
    assert v.canvas.selected is None and v.selected_offset is None and v.selected_cells == []
    v.canvas.selected = float("nan")
    assert v.canvas.selected is None and v.selected_offset is None
    v.canvas.selected = 3.0
    assert v.selected_offset == 3 and v.selected_cells == [(3, 0)]
