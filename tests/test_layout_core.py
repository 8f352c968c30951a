"""Core layout objects: values, IntTuples, Layout evaluation and CuTe DSL printing."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import workbench as wb


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
        assert wb.crd2idx(wb.idx2crd(i, shape), shape, L.stride) == i
    assert np.array_equal(L.offsets(), np.arange(n))


# -- one rule for divisibility, on host ? values and kernel expressions alike ---------------------------
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "//": lambda a, b: a // b,
        "%": lambda a, b: a % b}


@given(st.sampled_from(sorted(_OPS)), st.sampled_from([1, 2, 3, 4, 8, 12, 16]), st.sampled_from([1, 2, 3, 4, 8, 16]),
       st.booleans())
def test_host_and_kernel_values_derive_the_same_divisibility(op, da, db, static_right):
    from workbench.dsl import ir
    from workbench.layout.values import op_divisibility

    assume(not (static_right and db == 1))  # a static 1 folds away (a // 1 is a, a % 1 is 0): nothing to derive
    f = _OPS[op]
    right_dyn = db if static_right else wb.Dyn(None, 32, db)
    right_ir = db if static_right else ir.Var("b", wb.Int32, db)
    host, kernel = f(wb.Dyn(None, 32, da), right_dyn), f(ir.Var("a", wb.Int32, da), right_ir)
    want = op_divisibility(op, da, db, db if static_right else None)
    assert host.divisibility == kernel.divisibility == max(want, 1), (op, da, db, static_right)
    # and the rule is right: a value of divisibility da op a value of divisibility db is divisible by it
    for ka in range(1, 6):
        for kb in range(1, 6):
            b = db if static_right else db * kb
            assert f(da * ka, b) % max(want, 1) == 0


def test_shape_div_decides_by_static_values_proof_or_runtime_values_and_never_guesses():
    from workbench.layout.values import shape_div

    D = wb.Dyn
    assert shape_div(12, 4) == 3 and shape_div(4, 12) == 1 and shape_div(D(divisibility=8), 4).divisibility == 2
    assert shape_div(2, D(divisibility=4)) == 1                                  # 2 | ?{div=4}: the mode is used up
    assert shape_div(D(12), 4).value == 3 and shape_div(D(4), 12).value == 1    # values carried by a host ?
    with pytest.raises(ValueError, match="6 and 4 do not divide one another"):
        shape_div(6, 4)
    with pytest.raises(ValueError, match="runtime values 6 and 4 do not divide"):
        shape_div(D(6), 4)
    with pytest.raises(ValueError, match=r"extent \?\{div=2\} to be a multiple of 4 .*not provable.*divisibility=4"):
        shape_div(D(divisibility=2), 4)
    with pytest.raises(ValueError, match=r"\? to be a multiple of 3 .*not provable"):
        shape_div(3, D())
    # composition names the operation, the mode and the divisibility that would prove it
    with pytest.raises(wb.LayoutAlgebraError, match=r"composition\(\(\?,4\):\(1,\?\), 4:2\): flat mode 0 .*divisibility=2"):
        wb.composition(wb.make_layout((D(), 4)), wb.Layout(4, 2))
    assert str(wb.composition(wb.make_layout((D(divisibility=8), 4)), wb.Layout(4, 2))) == "4:2"


def test_square_brackets_select_a_mode_and_calls_evaluate():
    L = wb.make_layout((4, 8))
    assert L[1] == wb.Layout(8, 4) and L(1) == 1 and L(1, 1) == L((1, 1)) == 5   # CuTe: L[1] is get<1>, L(c) crd2idx
    for bad in [(1, 2), wb.Dyn(1), 1.0, True]:
        with pytest.raises(TypeError, match=r"Expected a static int mode index in \(4,8\):\(1,4\)\[i\]"):
            L[bad]


def test_a_dynamic_value_orders_by_its_runtime_value_or_says_it_has_none():
    # min(wb.size(L), 64) on a layout read from CuTe text: its extent has no value to compare, said in words
    L = wb.parse_layout("(4,?):(1,4)")
    with pytest.raises(TypeError, match="no order"):
        min(wb.size(L), 64)
    assert min(wb.Dyn(100), 64) == 64 and wb.Dyn(3) < wb.Dyn(5) and not wb.Dyn(7) <= 6 and wb.Dyn(2) >= 2
