"""TVLayoutView and the access arithmetic behind its read-outs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")
from hypothesis import given, settings
from hypothesis import strategies as st
from test_widgets_layout import check_golden

import workbench as wb
from widgets.access import analyze, vector_width
from widgets.tv_view import TVLayoutView, tv_cells

TV = wb.Layout(((8, 4), 2), ((1, 16), 8))   # 32 threads x 2 values on an 8x8 tile


def test_coalescing_textbook_cases():
    t = np.arange(32)
    r = analyze(t[:, None], 32, "f32")            # thread i reads element i
    assert (r.vector, r.bytes_per_request, r.sectors_per_request, r.efficiency) == (1, 128, 4, 1.0)
    r = analyze((t * 32)[:, None], 32, "f32")     # a column of a row-major 32x32 tile
    assert (r.sectors_per_request, r.efficiency) == (32, 0.125)
    assert (r.wavefronts_per_request, r.worst_conflict) == (32, 32)  # every thread in bank 0
    r = analyze((t * 33)[:, None], 32, "f32")     # padded row: stride 33 spreads the banks
    assert (r.wavefronts_per_request, r.bank_conflict_factor) == (1, 1)
    r = analyze(t[:, None] * 4 + np.arange(4), 32, "f32")  # float4 per thread
    assert (r.vector, r.access_bytes, r.bytes_per_request, r.sectors_per_request) == (4, 16, 512, 16)
    assert (r.wavefronts_per_request, r.ideal_wavefronts) == (4, 4)
    r = analyze(np.zeros((32, 1), np.int64), 32, "f32")    # broadcast: one word for everybody
    assert (r.sectors_per_request, r.wavefronts_per_request, r.efficiency) == (1, 1, 0.125)


def test_vector_width_needs_contiguity_and_alignment():
    assert vector_width(np.arange(64).reshape(32, 2), 32) == 2
    assert vector_width(np.arange(64).reshape(32, 2) + 1, 32) == 1          # misaligned
    assert vector_width(np.arange(32 * 8).reshape(32, 8), 32) == 4          # capped at 16 bytes
    assert vector_width(np.arange(32 * 8).reshape(32, 8), 16) == 8
    assert vector_width(np.arange(64).reshape(2, 32).T, 32) == 1            # values strided


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.sampled_from([8, 16, 32, 64]), st.integers(1, 40))
def test_strided_access_matches_brute_force(stride, bits, nthreads):
    # one value per thread at element t*stride: sectors and bank wavefronts counted directly
    off = (np.arange(nthreads) * stride)[:, None]
    r = analyze(off, bits)
    nb = bits // 8
    sectors = words = 0
    for w0 in range(0, nthreads, 32):
        lanes = off[w0:w0 + 32, 0] * nb
        sectors += len({int(a) // 32 for a in lanes})
        phase = 32 if nb <= 4 else 32 // (nb // 4)
        for p0 in range(0, len(lanes), phase):
            banks = {}
            for a in lanes[p0:p0 + phase]:
                for j in range(max(1, nb // 4)):
                    word = int(a) // 4 + j
                    banks.setdefault(word % 32, set()).add(word)
            words += max(len(s) for s in banks.values())
    nreq = -(-nthreads // 32)
    assert r.sectors_per_request == sectors / nreq
    assert r.wavefronts_per_request == words / nreq


def test_tv_cells_follow_print_latex_tv():
    owner, idx = tv_cells(TV, wb.Layout((8, 8)))
    assert idx.shape == (32, 2)
    # thread 9 = (1,1): index 1 + 16 = 17 -> tile (1, 2); value 1 adds 8 -> (1, 3)
    assert idx[9].tolist() == [17, 25]
    assert owner[:, 17].tolist() == [9, 0] and owner[:, 25].tolist() == [9, 1]
    with pytest.raises(ValueError, match="inside the tile"):
        tv_cells(TV, wb.Layout((4, 8)))
    with pytest.raises(ValueError, match="rank-2"):
        tv_cells(wb.Layout(32), wb.Layout(32))


def test_view_state_selection_and_element_type():
    v = TVLayoutView(TV, (8, 8))
    assert (v.num_threads, v.num_values) == (32, 2)
    assert v.grid.shape == (8, 8)
    assert v.grid.texts[1 * 8 + 2] == "T9V0"          # row 1, col 2
    assert v.thread is None and v.canvas.selected is None
    tc = v.thread_control                              # no thread chosen reads "none", not -1
    assert tc._options_labels[tc.index] == "none" and tc.value == -1
    assert v.canvas.legend["label"] == "colour: thread mod 8 (CuTe's print_latex_tv colours)"
    v.thread = 9                                       # the slider selects in the canvas ...
    assert v.canvas.selected == 9.0 and v.grid.selected == 9.0 and v.canvas.selected_count == 2
    v.canvas.hover = [1, 2]
    assert v.canvas.hover_text == "(1,2) -> T9V0  index 17  offset 17"
    assert "T9: V0@(1, 2)->17, V1@(1, 3)->25" in v.readout.value.replace("&gt;", ">")
    v.canvas.selected = 4.0                            # ... and a click moves the slider
    assert v.thread == 4 and v.thread_control.value == 4
    v.canvas.selected = None
    assert v.thread is None
    r32 = v.report
    assert r32.efficiency == 1.0 and r32.bank_conflict_factor == 2.0
    v.element_type = wb.Float16
    assert v.report.element == "f16" and v.report.efficiency == 0.5
    assert "f16" in v.to_svg() and v.canvas.subtitle.endswith("Float16")
    with pytest.raises(ValueError, match="thread in"):
        v.thread = 32
    with pytest.raises(ValueError, match="at most 1048576 elements for a TV view"):
        TVLayoutView(wb.make_layout((32, 4)), (2048, 2048))


def test_row_major_tile_vectorizes_and_make_layout_tv_tuple():
    v = TVLayoutView(TV, wb.Layout((8, 8), (8, 1)))
    assert v.report.vector == 2 and v.report.access_bytes == 8
    assert repr(v) == "TVLayoutView(((8,4),2):((1,16),8), tile=(8,8):(8,1), element_type=Float32)"
    same = TVLayoutView(((8, 8), TV))                 # what make_layout_tv returns: (tiler, tv)
    assert same.grid.texts == TVLayoutView(TV, (8, 8)).grid.texts


def test_uncovered_and_broadcast_are_reported():
    v = TVLayoutView(wb.Layout((4, 2), (1, 4)), (4, 4))
    assert np.isnan(v.grid.keys).sum() == 8 and "owned by no thread" in v.to_svg()
    b = TVLayoutView(wb.Layout((4, 2), (0, 1)), (2, 1))
    assert "broadcast" in b.to_svg()


def test_tv_svg_golden():
    check_golden("tv_8x8_thread9.svg", TVLayoutView(TV, (8, 8), thread=9).to_svg())


def test_swizzled_shared_tile_removes_the_bank_conflicts_it_shows():
    # each thread reads one row of a 32x32 fp32 tile: row-major, the rows share banks (8x the ideal
    # wavefronts); composed with Swizzle(5,0,5) the same reads hit 32 different banks.
    tv = wb.make_layout((32, 32), stride=(1, 32))
    plain = wb.make_layout((32, 32), stride=(32, 1))
    swizzled = wb.composition(wb.Swizzle(5, 0, 5), plain)
    assert "8.00x the ideal" in TVLayoutView(tv, plain, element_type=wb.Float32).readout.value
    v = TVLayoutView(tv, swizzled, element_type=wb.Float32)
    assert "no bank conflicts" in v.readout.value
    assert "S<5,0,5>" in repr(v)
