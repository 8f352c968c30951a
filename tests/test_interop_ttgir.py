"""Gluon's texts without Triton (so CI reads them): the TTGIR attribute and the ``gl.<Class>(...)`` constructor
both ways, every refusal located at its column, and the round trips within the workbench (CuTe object -> Gluon
layout -> text -> the same CuTe object).  The texts are checked against Triton's own printer in
tests/test_interop_triton.py (where triton imports); here, the strings are the ones Triton 3.9 prints."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.interop import GluonLayout, GluonTextError, format_ttgir, parse_ttgir
from workbench.interop.triton import from_gluon, to_gluon, to_triton
from workbench.interop.ttgir import parse_gluon_text

# Printed by Triton 3.9 (str of the tensor / memdesc type of each layout, the attribute cut out)
TRITON_PRINTS = {
    "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]}>":
        GluonLayout("BlockedLayout", size_per_thread=[1, 4], threads_per_warp=[4, 8], warps_per_cta=[2, 2],
                    order=[1, 0]),
    "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 2], instrShape = [16, 64, 16]}>":
        GluonLayout("NVMMADistributedLayout", version=[3, 0], warps_per_cta=[4, 2], instr_shape=[16, 64, 16]),
    "#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
    "instrShape = [16, 8]}>, kWidth = 2}>":
        GluonLayout("DotOperandLayout", operand_index=0, k_width=2, parent=GluonLayout(
            "NVMMADistributedLayout", version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])),
    "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 8}>":
        GluonLayout("NVMMASharedLayout", swizzle_byte_width=64, element_bitwidth=8, transposed=True),
    "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16, rank = 3}>":
        GluonLayout("NVMMASharedLayout", swizzle_byte_width=128, element_bitwidth=16, rank=3),
    "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>":
        GluonLayout("SwizzledSharedLayout", vec=8, per_phase=1, max_phase=8, order=[1, 0]),
    "#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], warp = [[8, 0]], "
    "block = []}>":
        GluonLayout("DistributedLinearLayout", reg_bases=[[0, 1], [0, 2]],
                    lane_bases=[[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], warp_bases=[[8, 0]], block_bases=[],
                    shape=[16, 16]),
    "#ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0], [2, 0]]}, alignment = 16>":
        GluonLayout("SharedLinearLayout", offset_bases=[[0, 1], [0, 2], [1, 0], [2, 0]]),
}


@pytest.mark.parametrize("text", TRITON_PRINTS)
def test_tritons_text_both_ways(text):
    g = TRITON_PRINTS[text]
    assert parse_ttgir(text) == (g, None)
    assert format_ttgir(g) == g.ttgir == text
    assert parse_gluon_text(repr(g)) == g             # the constructor text reads back to the same layout


def test_types_give_the_shape_and_whitespace_is_free():
    g, shape = parse_ttgir("tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
                           "warpsPerCTA = [2, 2], order = [1, 0]}>>")
    assert shape == [64, 32] and g.cls == "BlockedLayout"
    g, shape = parse_ttgir("!ttg.memdesc<8x64xf16, #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false,"
                           " elementBitWidth = 16}>, #ttg.shared_memory, mutable>")
    assert shape == [8, 64] and from_gluon(g, shape) == wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
    spaced = "#ttg.swizzled_shared<{\n  vec = 8,\n  perPhase = 1, maxPhase = 8,\n  order = [1, 0]\n}>"
    assert parse_ttgir(spaced)[0] == TRITON_PRINTS["#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, "
                                                   "order = [1, 0]}>"]


BAD = [
    ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], ordr = [1, 0]}>", 86,
     "a key of #ttg.blocked"),
    ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2]}>", 84, "#ttg.blocked to give order"),
    ("#ttg.blocked<{sizePerThread = [1, 4], sizePerThread = [1, 4]}>", 39, "each key once"),
    ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = 1, elementBitWidth = 16}>", 59, "true or false"),
    ("#ttg.foo<{}>", 6, "a layout attribute among"),
    ("#ttg.slice<{dim = 0, parent = #ttg.blocked<{}>}>", 6, "a layout attribute among"),
    ("#ttg.swizzled_shared<{vec = -1, perPhase = 1, maxPhase = 1, order = [1, 0]}>", 29, "an integer in"),
    ("#ttg.swizzled_shared<{vec = 8 : i32, perPhase = 1, maxPhase = 1, order = [1, 0]}>", 31, "a plain integer"),
    ("#ttg.dot_op<{opIdx = 0, parent = 3, kWidth = 2}>", 34, "a #ttg layout attribute for #ttg.dot_op parent"),
    ("#ttg.linear<{register = [], lane = [], warp = [], block = []}>", 1, "a #ttg.linear with at least one basis"),
    ("#ttg.linear<{register = [[1, 0]], lane = [[0, 1, 0]], warp = [], block = []}>", 42, "bases of one rank"),
    ("#ttg.linear<{register = [[[1]]], lane = [], warp = [], block = []}>", 27, "an integer (bases nest"),
    ("#ttg.shared_linear<{offset = [[0, 1]], alignment = 16}>", 40, "a key of #ttg.shared_linear"),
    ("#ttg.shared_linear<{offset = [[0, 1]]}>", 39, "','"),
    ("tensor<64x64xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>> x", 96,
     "the end of the text"),
    ("tensor<f16, #ttg.blocked<{}>>", 8, "a shape and element type"),
    ("blocked<{}>", 1, "a TTGIR layout attribute"),
]


@pytest.mark.parametrize("text,column,expected", BAD, ids=[b[0][:40] for b in BAD])
def test_refusals_point_at_the_column(text, column, expected):
    with pytest.raises(GluonTextError, match="Expected " + expected.replace("(", r"\(").replace("[", r"\[")) as e:
        parse_ttgir(text)
    assert e.value.column == column, str(e.value)
    assert str(e.value).splitlines()[-1].index("^") >= 0   # the caret line


@pytest.mark.parametrize("text,expected", [
    ("gl.NVMMASharedLayout(", "Gluon constructor text"),
    ("os.system('x')", "a Gluon layout class"),
    ("gl.BlockedLayout(size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0], x=__import__('os'))",
     "a Gluon layout class"),
    ("gl.BlockedLayout(size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0], evil=1)",
     "a valid BlockedLayout"),
    ("gl.SwizzledSharedLayout(vec=1.5, per_phase=1, max_phase=1, order=[1, 0])", "a valid SwizzledSharedLayout"),
    ("gl.BlockedLayout(size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0], order=[0])",
     "each argument once"),
])
def test_constructor_text_refusals(text, expected):
    with pytest.raises(GluonTextError, match=expected):
        from_gluon(text, (64,))


def test_gluon_layout_takes_checked_values_only():
    with pytest.raises(ValueError, match="layout class among"):
        GluonLayout("Blocked; import os", vec=1)
    with pytest.raises(TypeError, match="an int, a bool or a list"):
        GluonLayout("SwizzledSharedLayout", vec="8", per_phase=1, max_phase=1, order=[1, 0])
    with pytest.raises(ValueError, match="needs order"):
        GluonLayout("SwizzledSharedLayout", vec=8, per_phase=1, max_phase=1)


def _tv_cases():
    G = GluonLayout
    return [(G("BlockedLayout", size_per_thread=[1, 4], threads_per_warp=[4, 8], warps_per_cta=[2, 2], order=[1, 0]),
             (64, 64)),
            (G("BlockedLayout", size_per_thread=[2, 1], threads_per_warp=[16, 2], warps_per_cta=[1, 4], order=[0, 1]),
             (16, 16)),
            (G("BlockedLayout", size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[4], order=[0]), (256,))]


@pytest.mark.parametrize("case", _tv_cases(), ids=lambda c: repr(c[0]))
def test_blocked_round_trips_within_the_workbench(case):
    g, shape = case
    tile, tv = from_gluon(g, shape)
    assert tile == shape and int(tv[0].size) == 32 * g.warps_per_cta[0] * (g.warps_per_cta[1] if len(shape) > 1 else 1)
    ll = to_triton((tile, tv))
    assert to_gluon((tile, tv)) == g                       # the blocked layout is found again
    assert from_gluon(g.ttgir, shape) == (tile, tv)        # its TTGIR text gives the same TV layout
    assert from_gluon(ll) == (tile, tv) and to_gluon(ll) == g
    lin = GluonLayout("DistributedLinearLayout", reg_bases=[list(b) for b in ll.bases["register"]],
                      lane_bases=[list(b) for b in ll.bases["lane"]], warp_bases=[list(b) for b in ll.bases["warp"]],
                      block_bases=[], shape=list(shape))
    assert from_gluon(lin.ttgir) == (tile, tv)             # the same layout as #ttg.linear


def test_a_one_warp_blocked_layout_is_make_layout_tv():
    g = GluonLayout("BlockedLayout", size_per_thread=[1, 4], threads_per_warp=[4, 8], warps_per_cta=[1, 1],
                    order=[1, 0])
    tile, tv = from_gluon(g, (4, 32))
    want_tile, want = wb.make_layout_tv(wb.make_layout((4, 8), stride=(8, 1)), wb.make_layout((1, 4)))
    assert tuple(want_tile) == tile and list(tv.offsets()) == list(want.offsets())
    ll = to_triton((tile, tv))
    assert ll(register=1, lane=1) == (0, 5) and ll(lane=8) == (1, 0)     # lanes walk dim1 (order[0]) first


def test_blocked_repeats_and_broadcast():
    g = GluonLayout("BlockedLayout", size_per_thread=[1, 4], threads_per_warp=[4, 8], warps_per_cta=[2, 2],
                    order=[1, 0])
    ll = to_triton(from_gluon(g, (16, 128)))      # CTA tile 8x64: a repeat along dim1 then dim0, in registers
    assert ll.bases["register"] == [(0, 1), (0, 2), (0, 64), (8, 0)]
    small = to_triton(from_gluon(g, (2, 64)))     # dim0 of 2: the last lane bit and the second warp row broadcast
    assert small.bases["warp"] == [(0, 32), (0, 0)] and small.bases["lane"][-1] == (0, 0)


def test_distributed_import_refusals():
    overlapping = GluonLayout("DistributedLinearLayout", reg_bases=[[1, 1]], lane_bases=[[0, 1], [0, 2], [0, 4],
                                                                                         [0, 8], [1, 0]],
                              warp_bases=[], block_bases=[], shape=[2, 16])
    with pytest.raises(ValueError, match="overlap in bits"):
        from_gluon(overlapping)
    blocks = GluonLayout("DistributedLinearLayout", reg_bases=[[1]], lane_bases=[[2], [4], [8], [16], [32]],
                         warp_bases=[], block_bases=[[64]], shape=[128])
    with pytest.raises(ValueError, match="block bases"):
        from_gluon(blocks)
    with pytest.raises(ValueError, match="bases cover shape"):
        from_gluon(TRITON_PRINTS["#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], "
                                 "[4, 0]], warp = [[8, 0]], block = []}>"], (32, 32))
    with pytest.raises(ValueError, match="threads_per_warp to multiply to 32"):
        from_gluon(GluonLayout("BlockedLayout", size_per_thread=[1], threads_per_warp=[16], warps_per_cta=[1],
                               order=[0]), (16,))
    with pytest.raises(ValueError, match="expected the tensor's shape"):
        from_gluon(GluonLayout("BlockedLayout", size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[1],
                               order=[0]))


def test_memory_layouts_to_gluon():
    atom = wb.gmma_smem_atom("Layout_MN_SW64_Atom", wb.Float16)
    g = to_gluon(atom)
    assert g.ttgir == "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 16}>"
    assert from_gluon(g.ttgir, atom.outer.shape) == atom
    plain = wb.make_layout((8, 16), stride=(16, 1))     # no GMMA atom: Triton's shared linear layout, offset -> (i, j)
    s = to_gluon(plain)
    assert s.cls == "SharedLinearLayout" and s.offset_bases[:4] == [[0, 1], [0, 2], [0, 4], [0, 8]]
    assert list(from_gluon(s.ttgir).offsets()) == list(plain.offsets())
    sw = from_gluon(GluonLayout("SwizzledSharedLayout", vec=4, per_phase=2, max_phase=4, order=[1, 0]), (32, 32))
    back = from_gluon(to_gluon(sw).ttgir)
    assert list(back.offsets()) == list(sw.offsets()) and to_triton(back) == to_triton(sw)
