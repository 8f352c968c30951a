"""Core layout objects: values, IntTuples, Layout evaluation and CuTe DSL printing."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import workbench as wb
from workbench.layout import inttuple as it


def test_evaluation_matches_design_example():
    L = wb.make_layout((4, (2, 3)), stride=(1, (4, 8)))
    assert str(L) == "(4,(2,3)):(1,(4,8))"
    assert L(5) == 5 + 0  # idx 5 -> (1,(1,0)) -> 1 + 4
    assert L(5) == 1 + 4
    assert L((1, (0, 2))) == 1 + 16
    assert wb.size(L) == 24 and wb.cosize(L) == 3 + 4 + 16 + 1


def test_default_stride_is_column_major_and_print_forms():
    assert str(wb.make_layout((2, 3))) == "(2,3):(1,2)"
    assert str(wb.make_layout(8)) == "8:1"
    assert str(wb.make_layout((8,))) == "(8):(1)"
    assert str(wb.make_layout(())) == "():()"


def test_dynamic_printing_follows_cute_dsl():
    assert str(wb.Dyn()) == "?"
    assert str(wb.Dyn(width=64)) == "?{i64}"
    assert str(wb.Dyn(divisibility=4)) == "?{div=4}"
    assert str(wb.Dyn(width=64, divisibility=16)) == "?{i64 div=16}"
    L = wb.Layout(((2, 2), 3), ((wb.Dyn(divisibility=3), 2), wb.Dyn()))
    assert str(L) == "((2,2),3):((?{div=3},2),?)"


def test_divisibility_propagation():
    d = wb.Dyn(8, divisibility=2)
    assert (d * 2).divisibility == 4 and (d * 2).value == 16
    assert (d * wb.Dyn(4, divisibility=4)).divisibility == 8
    assert (d + 6).divisibility == 2 and (d + 3).divisibility == 1
    assert (wb.Dyn(16, divisibility=8) // 4).divisibility == 2
    assert d * 0 == 0 and d * 1 is d


@pytest.mark.parametrize("bad", [0, -2, 1.5])
def test_bad_divisibility_raises(bad):
    with pytest.raises(ValueError, match="divisibility"):
        wb.Dyn(divisibility=bad)


def test_layout_with_runtime_values_evaluates_to_ints():
    d = wb.Dyn(8, divisibility=2)
    L = wb.Layout((d, 4), (1, d))
    assert L(3) == 3 and L(9) == 1 + 8
    assert list(L.offsets()[:10]) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="symbolic"):
        wb.Layout((wb.Dyn(), 4)).offsets()


def test_rank_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="congruent"):
        wb.make_layout((4, 2), stride=(1,))
    with pytest.raises(TypeError, match="ints or dynamic values"):
        wb.make_layout((4, 2.0))


def test_parse_round_trip():
    for s in ["(4,2):(1,4)", "8:1", "((2,2),3):((?{div=3},2),?)", "(?,?):(?{i64},1)", "():()", "(3):(-1)"]:
        assert str(wb.parse_layout(s)) == s
    with pytest.raises(ValueError, match="Expected"):
        wb.parse_layout("(4,2:(1,4)")


shapes = st.recursive(st.integers(1, 5), lambda c: st.tuples(c, c) | st.tuples(c, c, c), max_leaves=6)


@given(shapes)
def test_idx2crd_crd2idx_round_trip_and_offsets(shape):
    L = wb.make_layout(shape)
    n = wb.size(L)
    assert [L(i) for i in range(n)] == list(range(n))  # compact column-major is the identity
    for i in range(n):
        assert it.crd2idx(it.idx2crd(i, shape), shape, L.stride) == i
    assert np.array_equal(L.offsets(), np.arange(n))
