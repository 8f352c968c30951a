"""Reading CuTe's text: every form CuTe C++ and CuTe DSL print, and located errors for text CuTe would not print."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.layout import parse_tiler
from workbench.layout.cute_text import format_cpp, format_dsl, parse_identity

P = wb.parse_layout


@pytest.mark.parametrize("text, shape, stride", [
    ("(_4,_6):(_1,_4)", (4, 6), (1, 4)),
    ("(4,(2,3)):(1,(4,8))", (4, (2, 3)), (1, (4, 8))),
    ("(_4,_-2):(_-1,_4)", None, None),
    ("_8:_1", 8, 1),
    ("(4,2)", (4, 2), (1, 4)),
    ("(_2,_1,_3)", (2, 1, 3), (1, 0, 2)),     # CuTe's compact stride: 0 on an extent-1 mode
])
def test_static_forms(text, shape, stride):
    if shape is None:
        with pytest.raises(wb.CuteTextError, match="non-negative extents"):
            P(text)
        return
    L = P(text)
    assert (L.shape, L.stride) == (shape, stride)


def test_cpp_plain_integers_are_run_time_values_and_dsl_ones_static():
    L = P("(_4,6):(_1,4)")
    assert L.shape == (4, wb.Dyn(6)) and str(L) == "(4,?):(1,?)" and format_cpp(L) == "(_4,6):(_1,4)"
    assert P("(4,6):(1,4)").is_static and P("(4,6):(1,4)", style="cpp").shape == (wb.Dyn(4), wb.Dyn(6))
    d = P("(?,4):(1,?{i64 div=8})")
    assert d.shape[0] == wb.Dyn() and d.stride[1] == wb.Dyn(None, 64, 8)


def test_bases_identity_and_tilers():
    L = P("((_2,_3),6):((_1@0@0,_1@1@0),_1@1)")
    assert L.stride == ((wb.E((0, 0)), wb.E((0, 1))), wb.E(1)) and L((1, 2), 3) == ((1, 2), 3)
    t = parse_identity("ArithTuple(_0,_0) o (_4,6):(_1@0,_1@1)")
    assert t.layout.stride == (wb.E(0), wb.E(1)) and t[5] == (1, 1)
    assert str(parse_identity("tensor<(0,(0,0)) o (4,(2,3)):(1@0,(1@0@1,1@1@1))>")) == \
        "tensor<(0,(0,0)) o (4,(2,3)):(1@0,(1@0@1,1@1@1))>"
    assert parse_tiler("(_32,(_8,_2,_2):(_1,_16,_8),_)") == (32, P("(8,2,2):(1,16,8)"), None)
    assert parse_tiler("(32:1,32:1,16:1)") == (P("32:1"),) * 2 + (P("16:1"),)


def test_swizzles_in_bytes_and_in_elements():
    a = P("Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)")
    assert str(a.inner) == "S<3,3,3>" and a.ptr_bits == 16 and str(a.cute_swizzle) == "S<3,4,3>" and a.alignment == 1024
    assert format_cpp(a) == "Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)"
    assert format_dsl(a) == "S<3,4,3> o 0 o (8,64):(64,1)"   # CuTe DSL's layout atom, as it prints it
    f4 = P("Sw<3,4,3> o smem_ptr[4b](unset) o (_8,_256):(_256,_1)")
    assert str(f4.inner) == "S<3,5,3>" and f4.alignment == 1024
    e = P("Sw<3,3,3> o _0 o (_8,_64):(_64,_1)")   # no pointer: the swizzle is on element offsets
    assert e.ptr_bits is None and str(e) == "S<3,3,3> o 0 o (8,64):(64,1)"
    # CuTe DSL 4.8.1 prints a negative shift without the closing '>': read as it prints it
    assert P("S<2,0,-2 o 0 o (8,32):(32,1)") == P("S<2,0,-2> o 0 o (8,32):(32,1)")
    with pytest.raises(wb.CuteTextError, match="'>' closing the swizzle"):
        P("S<2,0,2 o 0 o (8,32):(32,1)")
    inner = P("_8:_2 o _3 o (_8,_64):(_64,_1)")
    assert inner((1, 0)) == P("8:2")(3 + 64)


@pytest.mark.parametrize("text, expected, column", [
    ("(_4,6:(_1,4)", "',' or ')' (closing the '(' at column 1)", 6),
    ("(4,6):(1,4", "',' or ')'", 11),
    ("Sw<3,-1,3> o _0 o 4:1", "a swizzle with M >= 0", 6),
    ("Sw<3,4,2> o _0 o 4:1", "|S| >= B", 8),
    ("(_4,6):((_1,_2)@0,4)", "no '@' after a tuple", 16),
    ("(_4@0,6):(_1,4)", "no '@' here", 4),
    ("(_,4):(1,4)", "an integer (a '_' keeps a whole mode only in a tiler", 2),
    ("(4,6):(1,4,5)", "a stride congruent with the shape (4,6)", 7),
    ("Sw<3,0,3> o smem_ptr[16b](unset) o 8:1", "a swizzle that moves whole 16-bit elements", 1),
    ("?{i32}:1", "'i64' or 'div=N'", 3),
    ("(4,6):(1,4) o", "the offset of a composed layout", 14),
])
def test_bad_text_is_located(text, expected, column):
    with pytest.raises(wb.CuteTextError) as e:
        P(text)
    assert e.value.column == column and expected in str(e.value), str(e.value)
    assert "^" in str(e.value).splitlines()[-1] and isinstance(e.value, ValueError)


def test_a_bad_line_inside_a_printed_block_is_located_in_the_block():
    text = ("TiledMMA\n  ThrLayoutVMNK:  (_32,_2,_2,_1):(_1,_32,_64,_0)\n  PermutationMNK: (_,_,_)\nMMA_Atom\n"
            "  ThrID:      _32:_1\n  Shape_MNK:  (_16,_8,_16)\n  LayoutA_TV: ((_4,_8),(_2,_2,_2):((_32,_1),(_16,_8,_128))\n"
            "  LayoutB_TV: ((_4,_8),(_2,_2)):((_16,_1),(_8,_64))\n  LayoutC_TV: ((_4,_8),(_2,_2)):((_32,_1),(_16,_8))\n")
    with pytest.raises(wb.CuteTextError, match="line 7"):
        wb.parse_cute(text)
    with pytest.raises(wb.CuteTextError, match="block's title"):
        wb.parse_cute("TiledMMA\n  ThrLayoutVMNK:  _1:_0\nNotAnAtom\n")


def test_a_printed_tiled_mma_reads_into_the_workbench_object():
    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16))
    text = wb.format_cute(mma, "cpp")
    got = wb.parse_cute(text)   # F16 and BF16 atoms print alike: the atom is named generically
    assert got.atom.name == "MMA_Atom" and got.tv_layout_C_tiled == mma.tv_layout_C_tiled
    named = wb.parse_cute(text, mma_atom="SM80_16x8x16_F32F16F16F32_TN")
    assert named.atom == mma.atom and wb.to_cute_cpp(named) == (
        "make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2,_2,_1>,Stride<_1,_2,_0>>{}, "
        "Tile<_32,_32,_16>{})")
    assert wb.parse_cute(wb.format_cute(mma, "dsl"), mma_atom=mma.atom.name).tv_layout_A_tiled == mma.tv_layout_A_tiled


def test_writing_code():
    assert wb.to_cute_cpp(P("(4,8):(1,4)")) == "Layout<Shape<_4,_8>,Stride<_1,_4>>{}"
    assert wb.to_cute_cpp(P("(_4,6):(_1,4)")) == "make_layout(make_shape(_4{}, 6), make_stride(_1{}, 4))"
    assert wb.to_cute_dsl(P("(4,8):(1,4)")) == "cute.make_layout((4, 8), stride=(1, 4))"
    with pytest.raises(ValueError, match="run-time argument"):
        wb.to_cute_dsl(P("(?,8):(1,?)"))
    with pytest.raises(ValueError, match="without a run-time value"):
        wb.to_cute_cpp(P("(?,8):(1,?)"))
    with pytest.raises(TypeError, match="expected a Layout"):
        wb.to_cute_cpp(3.5)
    with pytest.raises(ValueError, match="style 'cpp' or 'dsl'"):
        wb.format_cute(P("4:1"), "python")


# -- hostile CuTe text: refused clearly, never a wrong object, bounded work -------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from workbench.interop import cute as _cute  # noqa: E402

_LDSM = wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16)


@pytest.mark.parametrize("other", ["SM75_U32x2_LDSM_N", "SM75_U16x8_LDSM_T", "UniversalCopy_U16"])
def test_a_named_copy_atom_must_have_the_printed_layouts(other):
    text = _cute.format_cute(_LDSM)
    assert _cute.parse_cute(text, copy_atom="SM75_U32x4_LDSM_N", value_type=wb.Float16).name == "SM75_U32x4_LDSM_N"
    with pytest.raises(ValueError, match="expected the printed layouts of"):
        _cute.parse_cute(text, copy_atom=other, value_type=wb.Float16)


_MNK = st.one_of(st.sampled_from(["(_16,_8)", "(_16,_8,_16,_1)", "((_16,_1),_8,_16)", "(_0,_8,_16)", "_16",
                                  "(_16:_2,_8,_16)", "(?,_8,_16)", "(_16,_8,x)"]),
                 st.tuples(*[st.integers(1, 10 ** 6)] * 3).map(lambda t: "(_{},_{},_{})".format(*t)))


@settings(max_examples=60, deadline=None)
@given(_MNK)
def test_odd_shape_mnk_text_is_refused_as_text_and_caches_nothing(mnk):
    text = _cute.format_cute(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN")).replace("(_16,_8,_16)", mnk)
    before = len(_cute._MMA_INDEX)
    try:
        a = _cute.parse_cute(text)
    except ValueError as e:                  # CuteTextError is a ValueError: it names the line and column
        assert "expected" in str(e).lower() or "Expected" in str(e), e
    else:
        assert a.shape_mnk == (16, 8, 16)
    assert len(_cute._MMA_INDEX) <= max(before, 1) + 1   # shapes of no catalog atom are not remembered


@settings(max_examples=30, deadline=None)
@given(st.integers(33, 10 ** 12), st.sampled_from(["Sw<%d,4,3> o _0 o 8:1", "Sw<3,%d,3> o _0 o 8:1",
                                                    "Sw<3,4,%d> o _0 o 8:1"]))
def test_swizzle_fields_past_a_word_are_refused_while_parsing(v, form):
    with pytest.raises(ValueError, match="a swizzle with"):
        wb.parse_layout(form % (v + 32))


@pytest.mark.parametrize("tiler", [(wb.make_layout((4, 2), stride=(1, 8)), None, 8), (8, wb.make_layout(16, stride=2)),
                                   (wb.make_layout((2, 2), stride=(4, 1)), wb.make_layout(8))])
def test_a_tiler_with_layout_modes_is_written_as_cxx_values(tiler):
    """make_tile takes values: every argument is `_`, `_N{}` or a whole layout object (`Layout<...>{}`)."""
    text = wb.to_cute_cpp(tiler)
    assert text.startswith("make_tile(") and text.endswith(")")
    args = text[len("make_tile("):-1]
    depth, parts, cur = 0, [], ""
    for ch in args:
        depth += ch in "<(" and 1 or (ch in ">)" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    assert len(parts) == len(tiler)
    assert all(p == "_" or p.endswith("{}") or p.startswith("make_layout(") for p in parts), parts
