"""Hostile input, round 2 (issue 20): the layout algebra's edges.  Zero and negative tile sizes and cotargets,
non-integer coordinates and over-wide ranks are refused with an expected-vs-got error where CuTe DSL 4.8.1
refuses them (it raises, or for composition(A, 0) kills the process with SIGFPE), never answered (``-3:1``,
``0:8``, ``5.0``) and never a bare ZeroDivisionError."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb

M = wb.make_layout
_layouts = st.sampled_from([M(8), M((4, 2), stride=(2, 1)), M((2, (2, 3)), stride=(1, (2, 4))), M(6, stride=2)])
_bad_sizes = st.one_of(st.integers(-2**63, 0), st.sampled_from([0, -1, -3, -(2**70)]))
_non_ints = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([2.5, -0.0, "3", b"3", 1j]))

_TILING = {
    "composition": wb.composition, "logical_divide": wb.logical_divide, "zipped_divide": wb.zipped_divide,
    "tiled_divide": wb.tiled_divide, "flat_divide": wb.flat_divide, "logical_product": wb.logical_product,
    "blocked_product": wb.blocked_product, "raked_product": wb.raked_product, "zipped_product": wb.zipped_product,
}


def _refused(call, kinds=(ValueError, TypeError)):
    with pytest.raises(kinds) as e:
        call()
    assert not isinstance(e.value, ZeroDivisionError)
    assert "xpected" in str(e.value), str(e.value)
    return e.value


@settings(max_examples=60)
@given(_layouts, st.sampled_from(sorted(_TILING)), _bad_sizes, st.booleans())
def test_zero_and_negative_tilers_are_refused_by_every_tiling_op(A, op, n, as_layout):
    f = _TILING[op]
    if as_layout and n < 0:
        return                           # make_layout refuses a negative shape itself (tested below)
    T = M(n) if as_layout else n
    e = _refused(lambda: f(A, T), ValueError)
    assert f"got {n}" in str(e)
    if not as_layout and op not in ("blocked_product", "raked_product", "zipped_product"):   # by mode
        _refused(lambda: f(A, (n,) + (None,) * (A.rank - 1)), ValueError)


@settings(max_examples=40)
@given(_layouts, st.one_of(_bad_sizes, st.tuples(_bad_sizes, st.integers(1, 4))))
def test_a_cotarget_that_is_not_positive_is_refused(A, n):
    _refused(lambda: wb.complement(A, n), ValueError)


@settings(max_examples=60)
@given(_layouts, _non_ints, st.integers(0, 1))
def test_non_integer_coordinates_and_sizes_are_refused(A, x, where):
    _refused(lambda: A(x), TypeError)
    _refused(lambda: A((0,) * where + (x,) + (0,) * (A.rank - 1 - where)) if A.rank > 1 else A(x), (TypeError, ValueError))
    _refused(lambda: wb.complement(A, x), TypeError)
    _refused(lambda: wb.composition(A, x), TypeError)
    _refused(lambda: wb.logical_divide(A, x), TypeError)


def test_the_examples_of_the_issue():
    A = M((4, 2), stride=(2, 1))
    assert "got -3" in str(_refused(lambda: wb.composition(A, -3)))        # returned -3:1
    assert "got -5" in str(_refused(lambda: wb.complement(M(4, stride=2), -5)))   # returned 0:8
    assert "got float 2.5" in str(_refused(lambda: M(8)(2.5)))              # returned 2.5
    _refused(lambda: wb.logical_divide(M(8), 0))                           # ZeroDivisionError
    _refused(lambda: wb.local_tile(wb.make_identity_tensor((8, 4)), (0, 2), (0, 0)))
    e = _refused(lambda: M(tuple([1] * 100000)))                           # parsed, then could not print
    assert "at most 1024 modes" in str(e) and "100000" in str(e)
    _refused(lambda: wb.parse_layout("(" + ",".join(["1"] * 2000) + "):(" + ",".join(["0"] * 2000) + ")"))


def test_what_stays_valid_at_the_edges():
    assert M(8)(7) == 7 and M((4, 2), stride=(2, 1))((3, 1)) == 7
    assert M(8)(True) == 1                                                  # bool is an int, as in Python and CuTe
    import numpy as np
    assert M(8)(np.int64(3)) == 3
    assert wb.size(wb.composition(M(8), 1)) == 1 and isinstance(wb.complement(M(4, stride=2), 1), wb.Layout)
    assert M(tuple([1] * 1024)).rank == 1024
    assert str(M(0)) == "0:1"                          # an empty layout (of an empty tensor) stays: CuTe refuses it
    assert wb.size(wb.logical_divide(M(8), M(1))) == 8


cute = pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed")


def test_cute_dsl_refuses_the_same_edges():
    """CuTe DSL 4.8.1, traced on the CPU: each refused case raises there too (composition(A, 0) is left out: it
    kills CuTe DSL's process with SIGFPE)."""
    refused = []

    @cute.jit
    def probe():
        mk = cute.make_layout
        cases = [lambda: cute.complement(mk(4, stride=2), -5), lambda: cute.complement(mk(4, stride=2), 0),
                 lambda: mk((4, 2), stride=(2, 1))(2.5), lambda: cute.logical_divide(mk(8), mk(0)),
                 lambda: cute.logical_product(mk(4), -2)]
        for c in cases:
            try:
                c()
                refused.append(False)
            except ValueError:
                refused.append(True)

    probe()
    assert refused == [True] * 5
