"""Tensors: seed 004's examples (CuTe DSL framework integration), marking rules, make_ptr and
make_tensor, and each place where we raise instead of returning CuTe DSL's wrong answer."""

import re

import numpy as np
import pytest
import torch
from numpy.lib.stride_tricks import as_strided

import workbench as wb


def lay(t) -> str:
    return str(t).split(" o ", 1)[1][:-1]


# seed 004's tensors
def a_():
    return torch.empty(16, 4, 8, 2).permute(2, 1, 0, 3)        # (8,4,16,2):(2,16,64,1)


def b_():
    return torch.empty(32, 1, 1, 1, 4).permute(3, 4, 1, 0, 2)  # (1,4,1,32,1):(4,1,4,4,4) in torch 2.13


def c_():
    return torch.empty(3, 4)[::2, ::2]                          # (2,2):(8,2)


def d_():
    return torch.empty(3, 1, 1, 5).expand(3, 4, 2, 5)           # (3,4,2,5):(5,0,0,1)


def test_print_format_and_attributes():
    x = torch.randn(30, 20)
    t = wb.from_dlpack(x)
    assert re.fullmatch(r"Tensor<0x[0-9a-f]{16}@generic o \(30,20\):\(20,1\)>", str(t))
    assert int(str(t)[9:25], 16) == x.data_ptr() == t.data_ptr
    assert (t.shape, t.stride, t.memspace, t.element_type) == ((30, 20), (20, 1), "generic", wb.Float32)
    assert t.assumed_align == 4 and t.leading_dim == 1
    assert t.dynamic_shapes_mask == (0, 0) and t.dynamic_strides_mask == (0, 0)
    assert str(t.layout) == "(30,20):(20,1)" and t.layout(21) == 21 * 20  # index 21 is coordinate (21,0)
    assert t.layout((1, 1)) == 21
    assert str(t.iterator) == f"Ptr<{x.data_ptr():#018x}@generic>"


def test_layout_of_0d_and_1d():
    assert lay(wb.from_dlpack(torch.tensor(3.0))) == "():()"
    assert lay(wb.from_dlpack(torch.zeros(3))) == "(3):(1)"
    assert lay(wb.from_dlpack(torch.tensor(3.0)).mark_layout_dynamic()) == "():()"


# -- mark_layout_dynamic: seed 004 -------------------------------------------------------------
def test_seed_mark_layout_dynamic_examples():
    assert lay(wb.from_dlpack(a_()).mark_layout_dynamic()) == "(?,?,?,?):(?{i64},?{i64},?{i64},1)"       # t0
    assert lay(wb.from_dlpack(c_()).mark_layout_dynamic()) == "(?,?):(?{i64},?{i64})"                   # t3
    assert lay(wb.from_dlpack(d_()).mark_layout_dynamic()) == "(?,?,?,?):(?{i64},0,0,1)"                # t4
    # t1/t2 of the seed assume torch canonicalizes size-1 strides to 1: torch 2.13 does not, so b's
    # strides are (4,1,4,4,4); leading_dim=0 now fails exactly as CuTe DSL 4.8.1 fails on it.
    assert b_().stride() == (4, 1, 4, 4, 4)
    with pytest.raises(ValueError, match=r"^Expected strides\[leading_dim\] == 1, but got 4\.$"):
        wb.from_dlpack(b_()).mark_layout_dynamic(leading_dim=0)
    assert lay(wb.from_dlpack(b_()).mark_layout_dynamic(leading_dim=1)) == "(?,?,?,?,?):(?{i64},1,?{i64},?{i64},?{i64})"
    # t5: deduction fails in the seed only because of the old canonicalization; today it succeeds
    assert wb.from_dlpack(b_()).mark_layout_dynamic().leading_dim == 1
    with pytest.raises(ValueError, match=r"^Expected strides\[leading_dim\] == 1, but got 16\.$"):   # t6
        wb.from_dlpack(a_()).mark_layout_dynamic(leading_dim=1)
    with pytest.raises(ValueError, match=r"^Expected strides\[leading_dim\] == 1, but got 4\.$"):    # t7
        wb.from_dlpack(b_()).mark_layout_dynamic(leading_dim=3)


def test_seed_deduction_failure_with_canonicalized_strides():
    # the seed's (1,5,1):(1,1,1) example, built with numpy as older torch exported it
    t = wb.from_dlpack(as_strided(np.zeros(8, np.float32), (1, 5, 1), (4, 4, 4)))
    assert lay(t.mark_layout_dynamic()) == "(?,?,?):(?{i64},1,?{i64})"  # one stride-1 dim has extent > 1
    two = wb.from_dlpack(as_strided(np.zeros(8, np.float32), (2, 3), (4, 4)))
    with pytest.raises(ValueError, match="multiple dimensions have stride 1 and size > 1"):
        two.mark_layout_dynamic()
    ones = wb.from_dlpack(np.zeros((1, 1), np.float32))
    with pytest.raises(ValueError, match="none has size > 1"):
        ones.mark_layout_dynamic()


def test_mark_layout_dynamic_keeps_zero_and_negative_strides_and_takes_negative_leading_dim():
    t = wb.from_dlpack(np.zeros((4, 6), np.float32)[::-1]).mark_layout_dynamic()
    assert lay(t) == "(?,?):(-6,1)" and t.dynamic_strides_mask == (0, 0) and t.dynamic_shapes_mask == (1, 1)
    assert lay(wb.from_dlpack(a_()).mark_layout_dynamic(leading_dim=-1)) == "(?,?,?,?):(?{i64},?{i64},?{i64},1)"
    with pytest.raises(ValueError, match=r"leading_dim in range \[-4, 4\), but got 4"):
        wb.from_dlpack(a_()).mark_layout_dynamic(leading_dim=4)


def test_marked_layout_still_evaluates_with_runtime_values():
    x = torch.arange(12.0).reshape(3, 4)
    t = wb.from_dlpack(x).mark_layout_dynamic()
    L = t.layout
    assert str(L) == "(?,?):(?{i64},1)"
    assert [L((i, j)) for i in range(3) for j in range(4)] == list(range(12))
    assert wb.size(L) .value == 12 and t.shape == (3, 4) and t.stride == (4, 1)


# -- mark_compact_shape_dynamic: seed 004 ------------------------------------------------------
def test_seed_mark_compact_shape_dynamic_examples():
    assert lay(wb.from_dlpack(a_()).mark_compact_shape_dynamic(mode=0, divisibility=2)) == \
        "(?{div=2},4,16,2):(2,?{i64 div=4},?{i64 div=16},1)"                                        # t0
    assert lay(wb.from_dlpack(a_()).mark_compact_shape_dynamic(mode=1, divisibility=2)) == \
        "(8,?{div=2},16,2):(2,16,?{i64 div=32},1)"                                                  # t1
    t2 = wb.from_dlpack(a_()).mark_compact_shape_dynamic(mode=1, divisibility=2).mark_compact_shape_dynamic(mode=3, divisibility=2)
    assert lay(t2) == "(8,?{div=2},16,?{div=2}):(?{i64 div=2},?{i64 div=16},?{i64 div=32},1)"        # t2
    assert t2.dynamic_shapes_mask == (0, 1, 0, 1) and t2.dynamic_strides_mask == (1, 1, 1, 0)
    assert lay(wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=2, divisibility=1, stride_order=(3, 0, 2, 4, 1))) == \
        "(1,4,?,32,1):(0,1,4,?{i64 div=4},0)"                                                       # t3
    # t4: the seed's answer.  CuTe DSL 4.8.1 refuses it on torch 2.13's strides, but the tensor is
    # compact along (2,3,4,0,1) (extent-1 modes may have any stride), so we give the documented layout.
    assert lay(wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=2, divisibility=1, stride_order=(2, 3, 4, 0, 1))) == \
        "(1,4,?,32,1):(0,1,128,4,0)"
    with pytest.raises(ValueError, match="^The stride_order is not consistent with the last stride_order.$"):   # t5
        t2.mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3))
    with pytest.raises(ValueError, match="^The stride_order is not consistent with the deduced stride_order: expected "):  # t6
        wb.from_dlpack(a_()).mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3))
    with pytest.raises(ValueError, match="^The layout could not be deduced, please specify the stride_order explicitly: in .* modes \\[0, 2, 4\\] all have extent 1"):  # t7 (CuTe DSL's words, then why)
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=0, divisibility=4)
    with pytest.raises(ValueError, match=r"^Expected mode value to be in range \[0, 5\), but got 30.$"):   # t8
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=30, divisibility=5, stride_order=(3, 0, 2, 4, 1))
    with pytest.raises(ValueError, match="^Expected stride_order to contain all the dimensions of the tensor, but it doesn't contain 0.$"):  # t9
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(2, 1, 2, 3, 4))
    with pytest.raises(ValueError, match="^Expected stride_order to have 5 elements, but got 6.$"):     # t10
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"^The shape\(1\) of mode\(0\) is not divisible by the divisibility\(4\).$"):  # t11
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=0, divisibility=4, stride_order=b_().dim_order())
    with pytest.raises(ValueError, match="The stride_order is not consistent with the layout"):       # t12
        wb.from_dlpack(b_()).mark_compact_shape_dynamic(mode=0, divisibility=1, stride_order=(2, 1, 3, 0, 4))


def test_compact_marking_keeps_runtime_values():
    x = torch.arange(24.0).reshape(2, 3, 4)
    t = wb.from_dlpack(x).mark_compact_shape_dynamic(mode=2, divisibility=4)
    assert lay(t) == "(2,3,?{div=4}):(?{i64 div=12},?{i64 div=4},1)"
    L = t.layout
    assert [L((i, j, k)) for i in range(2) for j in range(3) for k in range(4)] == list(range(24))
    assert torch.equal(torch.from_dlpack(t), x)


# -- better than the anchor --------------------------------------------------------------------
@pytest.mark.parametrize("make,desc", [
    (lambda: torch.empty(32)[::2], "strided (16):(2)"),
    (lambda: torch.empty(3, 1).expand(3, 4), "broadcast"),
    (lambda: np.zeros((4, 3), np.float32)[::-1], "negative stride"),
    (lambda: torch.empty(4, 6)[:, :4], "padded rows"),
])
def test_compact_marking_refuses_non_compact_tensors(make, desc):
    # CuTe DSL 4.8.1 returns a wrong layout here, e.g. (16):(2) becomes (?):(1).
    with pytest.raises(ValueError, match="Expected a compact tensor for mark_compact_shape_dynamic"):
        wb.from_dlpack(make()).mark_compact_shape_dynamic(0)


@pytest.mark.parametrize("div", [0, -2])
def test_nonpositive_divisibility_raises(div):
    # CuTe DSL 4.8.1: divisibility=0 kills the interpreter, -2 prints div=-2
    with pytest.raises(ValueError, match=f"Expected divisibility >= 1, but got {div}."):
        wb.from_dlpack(a_()).mark_compact_shape_dynamic(0, divisibility=div)


def test_assumed_align_is_validated_up_front():
    x = torch.zeros(8)[1:]  # 4 bytes past a 64-byte aligned allocation
    with pytest.raises(ValueError, match="aligned to assumed_align=16 bytes, but got 0x[0-9a-f]+ \\(aligned to 4 bytes\\)"):
        wb.from_dlpack(x, assumed_align=16)
    with pytest.raises(ValueError, match="power of two, but got 3"):
        wb.from_dlpack(torch.zeros(4), assumed_align=3)
    assert wb.from_dlpack(torch.zeros(64), assumed_align=16).assumed_align == 16


def test_stride_order_may_be_any_sequence():
    for order in ([2, 1, 0, 3], (2, 1, 0, 3), np.array([2, 1, 0, 3]), a_().dim_order()):
        assert lay(wb.from_dlpack(a_()).mark_compact_shape_dynamic(0, stride_order=order, divisibility=2)).startswith("(?{div=2}")
    with pytest.raises(TypeError, match="sequence of ints"):
        wb.from_dlpack(a_()).mark_compact_shape_dynamic(0, stride_order=3)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_complex_dtypes_work():
    # CuTe DSL 4.8.1: "Unsupported complex bit width: 64"
    for dtype, et in [(torch.complex64, wb.Complex64), (torch.complex128, wb.Complex128), (torch.complex32, wb.Complex32)]:
        t = wb.from_dlpack(torch.zeros(3, 2, dtype=dtype)).mark_layout_dynamic()
        assert t.element_type is et and lay(t) == "(?,?):(?{i64},1)"


# -- make_ptr / make_tensor ---------------------------------------------------------------------
def test_make_ptr_matches_cute_and_validates():
    p = wb.make_ptr(wb.Float16, 1024, "gmem", assumed_align=32)
    assert str(p) == "Ptr<0x0000000000000400@gmem>" and p.assumed_align == 32 and p.element_type is wb.Float16
    assert wb.make_ptr(wb.Float32, 4096).assumed_align == 4
    assert wb.make_ptr(wb.Float32, 4096, wb.AddressSpace.smem).memspace == "smem"
    with pytest.raises(ValueError, match="aligned to assumed_align=32 bytes, but got 0x406"):
        wb.make_ptr(wb.Float16, 1030, "gmem", assumed_align=32)
    with pytest.raises(TypeError, match="element type"):
        wb.make_ptr("float16", 1024)
    with pytest.raises(ValueError, match="memspace"):
        wb.make_ptr(wb.Float16, 1024, "global")


def test_make_tensor_over_a_pointer_and_over_a_tensor():
    x = torch.arange(12.0).reshape(3, 4)
    p = wb.make_ptr(wb.Float32, x.data_ptr(), assumed_align=16)
    m, k = wb.Dyn(3), 4
    t = wb.make_tensor(p, wb.make_layout((m, k), stride=(k, 1)))
    assert lay(t) == "(?,4):(4,1)" and t.shape == (3, 4) and t.data_ptr == x.data_ptr()
    with pytest.raises(ValueError, match="host_buffers"):   # a bare address: its memory must be declared
        torch.from_dlpack(t)
    with wb.host_buffers(x.numpy()):
        assert torch.equal(torch.from_dlpack(t), x)
    col = wb.make_tensor(wb.from_dlpack(x), wb.make_layout((3, 2), stride=(4, 2)))
    assert np.array_equal(col.numpy(), x.numpy()[:, ::2])
    symbolic = wb.make_tensor(p, wb.make_layout((wb.Dyn(), 4), stride=(4, 1)))
    assert lay(symbolic) == "(?,4):(4,1)"
    with pytest.raises(ValueError, match="symbolic"):
        symbolic.__dlpack__(max_version=(1, 3))
    with pytest.raises(ValueError, match="from_dlpack for mark_layout_dynamic"):
        t.mark_layout_dynamic()


def test_hierarchical_make_tensor_exports_flattened_modes():
    x = torch.arange(16.0)
    t = wb.make_tensor(wb.from_dlpack(x), wb.make_layout(((2, 2), 4), stride=((1, 2), 4)))
    y = torch.from_dlpack(t)
    assert y.shape == (2, 2, 4) and y.stride() == (1, 2, 4)


def test_pointer_arithmetic_keeps_the_provable_alignment():
    p = wb.make_ptr(wb.Float32, 1024, "gmem", assumed_align=16)
    assert (p + 4).address == 1040 and (p + 4).assumed_align == 16
    assert (p + 3).address == 1036 and (p + 3).assumed_align == 4
    assert (wb.make_ptr(wb.Float4E2M1FN, 64) + 2).address == 65
    with pytest.raises(ValueError, match="whole bytes"):
        wb.make_ptr(wb.Float4E2M1FN, 64) + 1
    with pytest.raises(TypeError, match="int element offset"):
        p + 1.5


def test_a_stride_order_contradicting_the_tensor_raises_as_cute_dsl():
    """Issue 9: the order (0,3,1,4,2) contradicts (2,16,16,2,1):(512,16,1,256,256), whose own order is
    (0,3,4,1,2); CuTe DSL raises, and so do we (we used to accept it silently)."""
    a = np.lib.stride_tricks.as_strided(np.zeros(1024, np.float32), (2, 16, 16, 2, 1), (2048, 64, 4, 1024, 1024))
    t = wb.from_dlpack(a)
    with pytest.raises(ValueError, match=r"not consistent with the deduced stride_order: expected \(0, 3, 4, 1, 2\)"):
        t.mark_compact_shape_dynamic(0, stride_order=(0, 3, 1, 4, 2))
    assert lay(t) == "(2,16,16,2,1):(512,16,1,256,256)"  # nothing changed by the refusal
    assert lay(t.mark_compact_shape_dynamic(0, stride_order=(0, 3, 4, 1, 2))).startswith("(?,16,16,2,1):")


def test_marking_messages_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"\(4,1\):\(1,1\) modes \[0, 1\] all have stride 1"):
        wb.from_dlpack(torch.empty(4, 1)).mark_compact_shape_dynamic(0)
    b = torch.empty(32, 1, 1, 1, 4).permute(3, 4, 1, 0, 2)     # compact, in another order than the one given
    with pytest.raises(ValueError, match="contradicts the strides .* compact in another order"):
        wb.from_dlpack(b).mark_compact_shape_dynamic(0, stride_order=(2, 1, 3, 0, 4))
    given = wb.make_tensor(wb.from_dlpack(torch.empty(8)), wb.make_layout(4))  # a rank-1 int shape
    for mark in (given.mark_layout_dynamic, lambda: given.mark_compact_shape_dynamic(0)):
        with pytest.raises(ValueError, match="give make_tensor the dynamic layout instead"):
            mark()


def test_is_static_reads_layouts_and_tensors():
    t = wb.from_dlpack(torch.zeros(4, 6))
    assert wb.is_static(t) and wb.is_static(t.layout) and wb.is_static((4, (2, 3)))
    t.mark_layout_dynamic()
    assert wb.is_dynamic(t) and wb.is_dynamic(t.layout) and not wb.is_static((4, wb.Dyn(3)))
    assert not wb.is_static("4") and not wb.is_dynamic("4") and not wb.is_dynamic(7)   # not algebra integers


# -- mark_layout_dynamic's C fast path against the Python path (issue 31, part 5) -----------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import workbench._tensor as T  # noqa: E402


def _strided(shape, strides):
    """A numpy float32 view of shape/strides (in elements, any sign) over a buffer large enough for it."""
    lo = sum((e - 1) * d for e, d in zip(shape, strides) if d < 0 and e > 0)
    hi = sum((e - 1) * d for e, d in zip(shape, strides) if d > 0 and e > 0)
    base = np.zeros(hi - lo + 1, np.float32)
    start = base[-lo:] if lo else base
    return as_strided(start, shape, tuple(4 * d for d in strides))


def _outcome(mark):
    try:
        t = mark()
    except Exception as e:   # noqa: BLE001 - compared below: same type, same message
        return ("raises", type(e), str(e))
    return ("marks", t._marks, t._order, str(t.layout), t.kernel_signature(), t.leading_dim, t.dynamic_shapes_mask,
            t.dynamic_strides_mask)


_modes = st.lists(st.tuples(st.integers(0, 5), st.sampled_from([-3, -1, 0, 1, 1, 1, 2, 3, 8])), max_size=5)
_leading = st.one_of(st.none(), st.integers(-7, 7), st.sampled_from([True, 1.0, "0", 2**70, -2**70]))
_before = st.sampled_from(["none", "layout", "compact", "divisibility", "python"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(modes=_modes, leading=_leading, before=_before, keyword=st.booleans())
def test_mark_layout_dynamic_fast_path_equals_the_python_path(modes, leading, before, keyword):
    """Same marks, order, layout, signature, masks, or the same error with the same message, on generated
    tensors (shapes, strides of any sign, repeated stride 1), leading_dim of every kind, and every prior state."""
    x = _strided([e for e, _ in modes], [d for _, d in modes])

    def make():
        t = wb.from_dlpack(x)
        if before == "layout":
            try:
                t._mark_layout_dynamic_slow()
            except ValueError:
                pass
        elif before == "compact":
            try:
                t.mark_compact_shape_dynamic(0)
            except (ValueError, TypeError):
                pass
        elif before == "divisibility":
            try:
                T.mark_stride_divisibility(t._mark_layout_dynamic_slow(), 16)
            except ValueError:
                pass
        elif before == "python":
            t._stride = t._stride   # the Python objects are the truth from here (not a native tensor)
        return t

    args, kw = ((), {"leading_dim": leading}) if keyword else ((leading,), {})
    if leading is None and not keyword:
        args = ()
    fast = _outcome(lambda: make().mark_layout_dynamic(*args, **kw))
    slow = _outcome(lambda: make()._mark_layout_dynamic_slow(*args, **kw))
    assert fast == slow


def test_the_usual_mark_is_served_in_c_and_the_rest_by_the_python_path(monkeypatch):
    calls = []
    real = T.Tensor._mark_layout_dynamic_slow
    monkeypatch.setattr(T.Tensor, "_mark_layout_dynamic_slow", lambda self, *a, **k: calls.append(a or k) or real(self, *a, **k))
    x = torch.zeros(30, 20)
    for t in (wb.from_dlpack(x).mark_layout_dynamic(), wb.from_dlpack(x).mark_layout_dynamic(leading_dim=1),
              wb.from_dlpack(x).mark_layout_dynamic(-1), wb.from_dlpack(x[:, ::2]).mark_layout_dynamic()):
        assert t._marks[0] == "layout"
    assert calls == []
    wb.from_dlpack(torch.zeros(4, 1)).mark_layout_dynamic()            # two stride-1 modes: deduced in Python
    with pytest.raises(ValueError, match=re.escape("Expected strides[leading_dim] == 1, but got 20.")):
        wb.from_dlpack(x).mark_layout_dynamic(leading_dim=0)
    with pytest.raises(TypeError, match="mark_layout_dynamic"):
        wb.from_dlpack(x).mark_layout_dynamic(1, 2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        wb.from_dlpack(x).mark_layout_dynamic(leading=1)
    assert len(calls) == 4
    t = wb.from_dlpack(x)
    assert t.mark_layout_dynamic() is t and t._order is None and lay(t) == "(?,?):(?{i64},1)"


def test_a_mark_landing_inside_a_layout_build_is_not_overwritten(monkeypatch):
    # the window the marking lock used to close: .layout builds from marks None, a (C) mark lands meanwhile
    t = wb.from_dlpack(np.zeros((8, 16), np.float32))
    real = T.Layout
    fired = []

    def hooked(*a, **kw):
        if not fired:
            fired.append(1)
            t.mark_layout_dynamic()
        return real(*a, **kw)

    monkeypatch.setattr(T, "Layout", hooked)
    assert str(t.layout) == "(8,16):(16,1)"     # this read saw the marks it started from
    monkeypatch.setattr(T, "Layout", real)
    assert fired and str(t.layout) == "(?,?):(?{i64},1)"


def test_a_c_mark_landing_inside_a_compact_mark_is_not_lost(monkeypatch):
    # mark_compact_shape_dynamic computes from the marks it read; a C mark landing meanwhile makes its final
    # compare-and-set fail, and it computes again from the new marks: as if the C mark came first
    t = wb.from_dlpack(np.zeros((8, 16), np.float32))
    want = wb.from_dlpack(np.zeros((8, 16), np.float32)).mark_layout_dynamic().mark_compact_shape_dynamic(0, divisibility=2)
    real = T._compact_strides
    fired = []

    def hooked(*a, **kw):
        if not fired:
            fired.append(1)
            t.mark_layout_dynamic()
        return real(*a, **kw)

    monkeypatch.setattr(T, "_compact_strides", hooked)
    t.mark_compact_shape_dynamic(0, divisibility=2)
    assert fired and t._marks == want._marks and str(t.layout) == str(want.layout)


def test_stride_divisibility_marks_survive_the_c_path():
    t = wb.from_dlpack(np.zeros((4, 8), np.float32)).mark_layout_dynamic()
    assert T.mark_stride_divisibility(t, 16)._marks == ("layout", 1, 4)
    assert lay(t) == "(?,?):(?{i64 div=4},1)"
    assert t.kernel_signature()[1] == (("?", 64, 4), 1)
    assert t.mark_layout_dynamic()._marks == ("layout", 1) and lay(t) == "(?,?):(?{i64},1)"
