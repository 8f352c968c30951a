"""TritonLayoutView: each element of the tile named in both numberings, each checked against the layouts
themselves (CuTe's TV layout and Triton's LinearLayout evaluated at the named inputs); linear_layout_view draws a
LinearLayout with the existing views."""

from __future__ import annotations

import re

import pytest

import workbench as wb
from widgets import LayoutView, TritonLayoutView, TVLayoutView, linear_layout_view

_DESC = re.compile(r"\((\d+), (\d+)\)(?: \(Triton's \((\d+), (\d+)\)\))?: CuTe T(\d+) V(\d+) \| "
                   r"Triton register (\d+), lane (\d+), warp (\d+)")
V2 = "gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 1], instr_shape=[16, 8])"


@pytest.mark.parametrize("gluon,shape", [
    (V2, (32, 16)),
    (f"gl.DotOperandLayout(0, {V2}, 2)", (32, 32)),
    (f"gl.DotOperandLayout(1, {V2}, 2)", (32, 16)),
    ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>",
     (16, 32)),
])
def test_every_cell_names_what_both_layouts_give(gluon, shape):
    obj = wb.from_gluon(gluon, shape)
    view = TritonLayoutView(obj)
    ll = view.linear_layout
    if type(obj[1]) is str:
        mma, op = obj
        M, N, K = mma.tile_shape_mnk
        tile, tv = {"A": (M, K), "B": (N, K), "C": (M, N)}[op], getattr(mma, f"tv_layout_{op}_tiled")
    else:
        tile, tv = obj
    for row in range(tile[0]):
        for col in range(tile[1]):
            m = _DESC.fullmatch(view.describe(row, col))
            assert m, view.describe(row, col)
            t, v, r, lane, w = (int(m.group(k)) for k in (5, 6, 7, 8, 9))
            assert tv(t, v) == row + tile[0] * col                       # CuTe's TV layout puts (t, v) here
            want = (int(m.group(3)), int(m.group(4))) if m.group(3) else (row, col)
            assert ll(register=r, lane=lane, warp=w) == want             # Triton's layout puts (r, l, w) there
            assert (m.group(3) is not None) == (type(obj[1]) is str and obj[1] == "B")


def test_threads_are_linked_and_the_picture_has_both_sides():
    view = TritonLayoutView(wb.from_gluon(V2, (32, 16)))
    view.thread = 37
    assert view.triton.thread == 37 and view.cute.thread == 37
    svg = view.to_svg()
    assert "CuTe: (thread, value)" in svg and "Triton: (register, lane, warp)" in svg and "r0l0w0" in svg
    with pytest.raises(ValueError, match="a cell of the 32x16 tile"):
        view.describe(32, 0)


def test_refusals():
    with pytest.raises(ValueError, match="shared"):
        TritonLayoutView("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
                         shape=(8, 64))
    with pytest.raises(ValueError, match="operand 'A', 'B' or 'C'"):
        TritonLayoutView(wb.from_gluon(V2, (32, 16))[0], "D")


def test_linear_layout_view_uses_the_existing_views():
    smem = wb.gmma_smem_atom("Layout_K_SW64_Atom", wb.Float16)
    shared = linear_layout_view(wb.to_triton(smem))
    assert type(shared) is LayoutView and list(shared.layout.offsets()) == list(smem.offsets())
    dist = linear_layout_view(wb.to_triton(*wb.from_gluon(V2, (32, 16))))
    assert type(dist) is TVLayoutView and dist.num_threads == 64 and dist.num_values == 8
    with pytest.raises(TypeError, match="LinearLayout"):
        linear_layout_view(smem)
