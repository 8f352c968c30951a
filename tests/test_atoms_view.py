"""MMAView / CopyView: panels as CuTe lays them out, selection, bounded SVG, golden files."""

from __future__ import annotations

import os
import pathlib
import re

import numpy as np
import pytest

import workbench as wb
from widgets.atoms_view import MAX_SVG_PANEL, CopyView, MMAView, owners
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
    svg = view.to_svg()
    assert view.panels[2]["rows"] * view.panels[2]["cols"] == 64 * 256
    assert len(svg) < 400_000 and "T0V0" not in svg  # cells too small to label


def test_mma_view_draws_all_panels_at_one_scale():
    # SM90 64x32x16: A is 64 x 16, B 32 x 16, C 64 x 32.  One cell size for the three panels (B was drawn at
    # twice A's and looked as tall), the largest that fits the longest side: 1100 // 64 = 17 px.
    view = MMAView(make_tiled_mma(mma_atom("SM90_64x32x16_F32F16F16_SS")))
    assert [(p["name"], p["rows"], p["cols"], p["cell"]) for p in view.panels] == [
        ("A", 64, 16, 17), ("B", 32, 16, 17), ("C", 64, 32, 17)]
    svg = view.to_svg()
    outlines = re.findall(r'<rect x="0" y="0" width="(\d+)" height="(\d+)" fill="none"', svg)
    assert [(int(w), int(h)) for w, h in outlines] == [(16 * 17, 64 * 17), (16 * 17, 32 * 17), (32 * 17, 64 * 17)]
    # a 64 x 256 C bounds all three panels: 4 px each, the largest still within MAX_SVG_PANEL
    big = MMAView(make_tiled_mma(mma_atom("SM90_64x256x16_F32F16F16_SS")))
    assert [p["cell"] for p in big.panels] == [4, 4, 4] and 256 * 4 <= MAX_SVG_PANEL
    widths = re.findall(r'<rect x="0" y="0" width="(\d+)" height="(\d+)" fill="none"', big.to_svg())
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
