"""One layout core on the host and in kernels: the same local_tile / logical_divide / local_partition /
slicing / identity-tensor calls give the same offsets when evaluated on the host (the core on ints)
and inside a kernel on the CPU executor (the core on IR expressions: the kernel receives the
shape and strides as dynamic parameters), for every coordinate, ragged edges included.

Each property counts the generated cases it really checked (the host core may refuse a case, e.g.
a nested tile that CuTe cannot represent) and asserts a floor, so a property that refuses
everything fails."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb

EXAMPLES = int(os.environ.get("PARITY_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO = -(1 << 30)        # what the kernel leaves where it writes nothing


@wb.kernel
def flat_offsets(tile_off, div_off, slice_off, part_off, crd, pred, m, n, s0, s1, tiler: wb.Constexpr):
    """For the thread (ti, tj) of block (bi, bj): offsets of the same element through five core calls."""
    L = wb.make_layout((m, n), stride=(s0, s1))
    bi, bj, _ = wb.block_idx()
    ti, tj, _ = wb.thread_idx()
    sub, off = wb.local_tile(L, tiler, (bi, bj))
    tile_off[bi, bj, ti, tj] = off + sub(ti, tj)          # a layout is evaluated by calling it, as on the host
    D = wb.logical_divide(L, tiler)
    div_off[bi, bj, ti, tj] = D((ti, bi), (tj, bj))
    row, roff = wb.slice_and_offset((bi * tiler[0] + ti, None), L)
    slice_off[bi, bj, ti, tj] = roff + row(bj * tiler[1] + tj)
    P, poff = wb.local_partition(L, wb.make_layout(tiler), ti + tiler[0] * tj)
    part_off[bi, bj, ti, tj] = poff + P((bi, bj))
    c = wb.local_tile(wb.make_identity_tensor((m, n)), tiler, (bi, bj))[ti, tj]
    crd[bi, bj, ti, tj, 0] = c[0]
    crd[bi, bj, ti, tj, 1] = c[1]
    pred[bi, bj, ti, tj] = 1 if wb.elem_less(c, (m, n)) else 0


@wb.kernel
def nested_offsets(out, m, n, s0, s1, tiler: wb.Constexpr):
    """A nested layout ((2,m),n):((s0,2*s0),s1) with dynamic m: the tile of block (bi, bj), element (ti, tj)."""
    L = wb.make_layout(((2, m), n), stride=((s0, 2 * s0), s1))
    bi, bj, _ = wb.block_idx()
    ti, tj, _ = wb.thread_idx()
    sub, off = wb.local_tile(L, tiler, (bi, bj))
    out[bi, bj, ti, tj] = off + sub((ti, tj))


def _counting(minimum):
    """Run the property under @given; it returns True for a case it checked, False for one the host refused."""
    def deco(prop):
        seen = {True: 0, False: 0}

        @SETTINGS
        @given(st.data())
        def run(data):
            seen[bool(prop(data))] += 1

        def test():
            run()
            assert seen[True] >= minimum, f"only {seen[True]} of {sum(seen.values())} generated cases were checked"
        test.__name__ = prop.__name__
        return test
    return deco


def _grid(m, n, tiler):
    return math.ceil(m / tiler[0]), math.ceil(n / tiler[1])


@_counting(minimum=EXAMPLES * 3 // 4)
def test_flat_tiles_divides_slices_partitions_and_identity_agree(data):
    m, n = data.draw(st.integers(1, 23)), data.draw(st.integers(1, 23))
    s0, s1 = data.draw(st.integers(-20, 40)), data.draw(st.integers(-20, 40))
    tiler = (data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7)))
    gi, gj = _grid(m, n, tiler)
    L = wb.make_layout((m, n), stride=(s0, s1))
    P, poff = wb.local_partition(L, wb.make_layout(tiler), 0)          # host refusals would show here
    D = wb.logical_divide(L, tiler)
    shape4 = (gi, gj) + tiler
    outs = [np.full(shape4, NO, np.int32) for _ in range(4)]
    crd = np.full(shape4 + (2,), NO, np.int32)
    pred = np.full(shape4, NO, np.int32)
    views = [wb.from_dlpack(x) for x in (*outs, crd, pred)]      # static output layouts (any extents)
    flat_offsets[(gi, gj, 1), tiler + (1,)](*views, m, n, s0, s1, tiler)
    I = wb.make_identity_tensor((m, n))
    for bi, bj, ti, tj in np.ndindex(*shape4):
        c = wb.local_tile(I, tiler, (bi, bj))[ti, tj]
        sub, off = wb.local_tile(L, tiler, (bi, bj))
        assert outs[0][bi, bj, ti, tj] == off + sub((ti, tj))
        assert outs[1][bi, bj, ti, tj] == D(((ti, bi), (tj, bj)))
        row, roff = wb.slice_and_offset((bi * tiler[0] + ti, None), L)
        assert outs[2][bi, bj, ti, tj] == roff + row(bj * tiler[1] + tj)
        P, poff = wb.local_partition(L, wb.make_layout(tiler), ti + tiler[0] * tj)
        assert outs[3][bi, bj, ti, tj] == poff + P((bi, bj))
        assert tuple(crd[bi, bj, ti, tj]) == tuple(c)
        assert pred[bi, bj, ti, tj] == int(wb.elem_less(c, (m, n)))
    return True


@_counting(minimum=EXAMPLES // 3)
def test_nested_dynamic_tiles_agree(data):
    m, n = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 15))
    s0, s1 = data.draw(st.integers(1, 9)), data.draw(st.integers(-9, 30))
    tiler = (data.draw(st.sampled_from([1, 2, 3, 4, 6])), data.draw(st.integers(1, 6)))
    L = wb.make_layout(((2, m), n), stride=((s0, 2 * s0), s1))
    try:
        wb.local_tile(L, tiler, (0, 0))
    except wb.LayoutAlgebraError:
        return False          # CuTe cannot represent this tile of a nested mode: nothing to compare
    gi, gj = _grid(2 * m, n, tiler)
    out = np.full((gi, gj) + tiler, NO, np.int32)
    try:
        nested_offsets[(gi, gj, 1), tiler + (1,)](wb.from_dlpack(out), m, n, s0, s1, tiler)
    except wb.KernelError as e:
        # The host merges the static (2,m):(s0,2*s0) into 2m:s0 and tiles it; with m dynamic the kernel sees
        # (2,?) and refuses a tile that 2 does not divide (nor divides 2), as CuTe does: the core's refusal,
        # located at the call.
        assert isinstance(e, ValueError) and isinstance(e.__cause__, wb.LayoutAlgebraError), e
        assert tiler[0] % 2 and 2 % tiler[0], e
        assert "nested_offsets" in str(e) and "wb.local_tile(L, tiler, (bi, bj))" in str(e)
        return False
    for bi, bj, ti, tj in np.ndindex(*out.shape):
        sub, off = wb.local_tile(L, tiler, (bi, bj))
        assert out[bi, bj, ti, tj] == off + sub((ti, tj)), (L, tiler, (bi, bj, ti, tj))
    return True


@wb.kernel
def nested_coords(crd, pred, m, n, tiler: wb.Constexpr):
    """The identity tensor of ((2,m),n): CuTe's nested coordinate ((i0,i1),j) of tile element (ti, tj)."""
    bi, bj, _ = wb.block_idx()
    ti, tj, _ = wb.thread_idx()
    c = wb.local_tile(wb.make_identity_tensor(((2, m), n)), tiler, (bi, bj))[ti, tj]
    crd[bi, bj, ti, tj, 0] = c[0][0]
    crd[bi, bj, ti, tj, 1] = c[0][1]
    crd[bi, bj, ti, tj, 2] = c[1]
    pred[bi, bj, ti, tj] = 1 if wb.elem_less(c, ((2, m), n)) else 0


@_counting(minimum=EXAMPLES // 3)
def test_nested_identity_coordinates_and_predicates_agree(data):
    m, n = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    tiler = (data.draw(st.sampled_from([1, 2, 3, 4, 6])), data.draw(st.integers(1, 5)))
    I = wb.make_identity_tensor(((2, m), n))
    try:
        wb.local_tile(I, tiler, (0, 0))
    except wb.LayoutAlgebraError:
        return False          # a tile of (2,m) that 2 does not divide (nor divides 2): host and kernel refuse
    gi, gj = _grid(2 * m, n, tiler)
    crd, pred = np.full((gi, gj) + tiler + (3,), NO, np.int32), np.full((gi, gj) + tiler, NO, np.int32)
    try:
        nested_coords[(gi, gj, 1), tiler + (1,)](crd, pred, m, n, tiler)
    except wb.KernelError as e:  # m == 1 only: the host drops the static extent 1, the kernel sees (2,?) (as above)
        assert m == 1 and tiler[0] % 2 and isinstance(e.__cause__, wb.LayoutAlgebraError), e
        return False
    for bi, bj, ti, tj in np.ndindex(*pred.shape):
        c = wb.local_tile(I, tiler, (bi, bj))[ti, tj]
        assert pred[bi, bj, ti, tj] == int(wb.elem_less(c, ((2, m), n)))
        if m == 1 and not pred[bi, bj, ti, tj]:
            # Past the edge, with m == 1 the host (static, as C++ CuTe) coalesces (2,1) to 2 and extends the tile
            # along 1@0@0, the kernel along 1@1@0 ((2,0) vs (0,1)): both coordinates lie outside, as elem_less says.
            continue
        assert tuple(crd[bi, bj, ti, tj]) == (c[0][0], c[0][1], c[1]), (m, n, tiler, (bi, bj, ti, tj), c)
    return True


# -- evaluating a layout means the same on the host and in kernels -------------------------------------
@wb.kernel
def evaluate(flat, pairs, modes, m, n, s0, s1):
    """Thread (i, j) of a (m, n) block: L(k) at its column-major index k, L((i, j)) and L(i, j), and the
    modes L[0], L[1] (CuTe's get<i>) evaluated at i and j."""
    L = wb.make_layout((m, n), stride=(s0, s1))
    i, j, _ = wb.thread_idx()
    flat[i + m * j] = L(i + m * j)
    pairs[i, j, 0] = L((i, j))
    pairs[i, j, 1] = L(i, j)
    modes[i, j, 0] = L[0](i) + L[1](j)
    modes[i, j, 1] = wb.size(L[1])


@given(st.integers(1, 7), st.integers(1, 7), st.integers(-9, 20), st.integers(-9, 20))
@SETTINGS
def test_a_layout_is_called_to_evaluate_it_and_indexed_for_its_modes_in_kernels_as_on_the_host(m, n, s0, s1):
    L = wb.make_layout((m, n), stride=(s0, s1))
    flat, pairs, modes = np.full(m * n, NO, np.int32), np.full((m, n, 2), NO, np.int32), np.full((m, n, 2), NO, np.int32)
    evaluate[1, (m, n, 1)](flat, pairs, modes, m, n, s0, s1)
    assert list(flat) == [L(k) for k in range(m * n)]
    for i, j in np.ndindex(m, n):
        assert pairs[i, j, 0] == pairs[i, j, 1] == L((i, j)) == L(i, j)
        assert str(L[0]) == f"{m}:{s0}" and str(L[1]) == f"{n}:{s1}"             # the host's L[i]: the mode
        assert modes[i, j, 0] == L[0](i) + L[1](j) == L(i, j) and modes[i, j, 1] == n


def test_a_coordinate_or_a_dynamic_index_in_square_brackets_is_refused_on_the_host_and_in_kernels():
    @wb.kernel
    def by_coordinate(out, m):
        L = wb.make_layout((m, 4))
        out[0] = L[1, 2]

    @wb.kernel
    def by_dynamic_index(out, k):
        L = wb.make_layout((3, 4))
        out[0] = wb.size(L[k])

    L = wb.make_layout((4, 8))
    assert L[1] == wb.Layout(8, 4) and L[-1] == L[1]       # CuTe DSL: layout[i] is get(layout, mode=[i])
    with pytest.raises(TypeError, match=r"static int mode index in \(4,8\):\(1,4\)\[i\].*but got the coordinate \(1,2\)"):
        L[1, 2]
    out = np.zeros(1, np.int32)
    with pytest.raises(wb.KernelError, match=r"static int mode index.*but got the coordinate \(1,2\); evaluate .* L\(c\)") as e:
        by_coordinate[1, 1](out, 5)
    assert isinstance(e.value, TypeError) and "out[0] = L[1, 2]" in str(e.value)
    with pytest.raises(wb.KernelError, match=r"static int mode index.*but got the dynamic value \?") as e:
        by_dynamic_index[1, 1](out, 1)
    assert isinstance(e.value, TypeError)


def test_a_swizzled_layout_is_evaluated_in_kernels_as_on_the_host():
    @wb.kernel
    def swizzled(out):
        S = wb.composition(wb.Swizzle(2, 0, 2), wb.make_layout((4, 8), stride=(8, 1)))
        i, j, _ = wb.thread_idx()
        out[i, j] = S(i, j)

    S = wb.composition(wb.Swizzle(2, 0, 2), wb.make_layout((4, 8), stride=(8, 1)))
    out = np.full((4, 8), NO, np.int32)
    swizzled[1, (4, 8, 1)](out)
    assert [[out[i, j] for j in range(8)] for i in range(4)] == [[S(i, j) for j in range(8)] for i in range(4)]
    assert sorted(out.ravel()) == list(range(32)) and out[1, 0] != 8   # a permutation, and really swizzled


# -- the divisibility condition: refused while compiling unless provable, never silently wrong ------------
@wb.kernel
def every_other(a, out):
    """composition((m,4):(1,m), 4:2) is a layout only when 2 divides m and the m/2 strided elements of mode 0
    hold all 4 or divide 4: provable while compiling when m's divisibility is a multiple of 8."""
    L = wb.composition(wb.make_layout((wb.shape(a)[0], 4)), wb.make_layout(4, stride=2))
    i = wb.thread_idx().x
    out[i] = L(i)


def test_a_divisibility_the_kernel_cannot_prove_is_refused_at_trace_time_naming_the_mode_and_the_divisibility():
    out = np.full(4, NO, np.int32)
    # m = 5: C++ CuTe and CuTe DSL compute (?,?):(2,?) and offsets 0, 2, 4, 5 (truth 0, 2, 4, 6);
    # the host refuses Dyn(5), and the kernel, which sees only '?', refuses while tracing
    with pytest.raises(wb.LayoutAlgebraError, match="runtime values 5 and 2 do not divide"):
        wb.composition(wb.make_layout((wb.Dyn(5), 4)), wb.make_layout(4, stride=2))
    for m in (5, 8):   # the refusal does not depend on the value: it is made while compiling
        with pytest.raises(wb.KernelError, match=r"flat mode 0 \(\?:1\) of the left operand: .*multiple of 2.*"
                                                 r"not provable while compiling.*divisibility=2") as e:
            every_other[1, 4](np.zeros((m, 4), np.float32).T.copy().T, out)
        assert isinstance(e.value, ValueError) and isinstance(e.value.__cause__, wb.LayoutAlgebraError)
    # m's divisibility 2 proves the stride divides it, but not that the rest of the mode holds the 4 elements
    half = wb.from_dlpack(np.zeros((8, 4), np.float32).T.copy().T).mark_compact_shape_dynamic(0, divisibility=2)
    with pytest.raises(wb.KernelError, match=r"hold all 4 remaining elements.*divisibility=8"):
        every_other[1, 4](half, out)
    for m in (8, 16, 24):   # declared: one compiled kernel, right for every m it accepts
        a = wb.from_dlpack(np.zeros((m, 4), np.float32).T.copy().T).mark_compact_shape_dynamic(0, divisibility=8)
        every_other[1, 4](a, out)
        assert list(out) == [0, 2, 4, 6] == list(wb.composition(wb.make_layout((wb.Dyn(m), 4)), wb.Layout(4, 2)).offsets())
    with pytest.raises(ValueError, match=r"not divisible by the divisibility\(8\)"):
        wb.from_dlpack(np.zeros((12, 4), np.float32).T.copy().T).mark_compact_shape_dynamic(0, divisibility=8)
