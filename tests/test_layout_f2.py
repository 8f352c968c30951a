"""F2 (XOR-strided) layouts (workbench/layout/f2.py): built from every small CuTe swizzle composed with layouts and
compared element by element with the swizzle's own evaluation (and with pycute's Swizzle o Layout); composition,
coalesce, inverses and nullspace checked as properties of the functions on seeded random F2 layouts; refusals."""

import itertools
import random

import numpy as np
import pytest

import workbench as wbl  # noqa: F401  (the package imports cleanly with the F2 module in it)
from workbench.layout import (
    ComposedLayout,
    F2Layout,
    F2Stride,
    LayoutAlgebraError,
    Swizzle,
    coalesce,
    composition,
    cosize,
    f2_bases,
    f2_equal,
    left_inverse,
    make_f2_layout,
    make_layout,
    nullspace,
    rank,
    right_inverse,
    size,
    stride,
)
from workbench.layout import inttuple as it

# -- every swizzle S<B,M,S> with B <= 3, M <= 3, B <= |S| <= 4, over layouts of its period ----------------------------
SWIZZLES = [Swizzle(b, m, s) for b in range(4) for m in range(4) for s in range(-4, 5) if abs(s) >= b and (b or s == 0)]


def _outer_layouts(n, rng):
    """Power-of-two layouts of n elements: column- and row-major, a 3-mode permutation, a random one with
    power-of-two strides (injective or not), nested."""
    k = n.bit_length() - 1
    out = [make_layout(n, stride=1)]
    if k >= 2:
        r = 1 << (k // 2)
        c = n // r
        out += [make_layout((r, c), stride=(c, 1)), make_layout((r, c), stride=(1, r))]
    if k >= 3:
        a = 2
        b = 1 << ((k - 1) // 2)
        c = n // (a * b)
        out.append(make_layout((a, (b, c)), stride=(b * c, (1, b))))
    bits = list(range(k))
    rng.shuffle(bits)
    strides = tuple(1 << x for x in bits)
    out.append(make_layout((2,) * k, stride=strides) if k > 1 else make_layout(2, stride=strides[0] if k else 1))
    if k >= 2:   # a broadcast bit and a bit that lands above the period
        out.append(make_layout((2, n // 2), stride=(0, 1)))
        out.append(make_layout((n // 2, 2), stride=(1, n)))
    return out


def _swizzle_cases():
    rng = random.Random(35)
    for sw in SWIZZLES:
        n = min(sw.size, 1 << 10)
        for L in _outer_layouts(n, rng):
            yield sw, L


CASES = list(_swizzle_cases())


def test_case_count():
    assert len(SWIZZLES) == 76 and len(CASES) == 519, (len(SWIZZLES), len(CASES))


@pytest.mark.parametrize("chunk", range(8))
def test_swizzle_o_layout_is_an_f2_layout_element_by_element(chunk):
    """make_f2_layout(S<B,M,S> o 0 o L) equals the swizzle's evaluation at every index and every coordinate."""
    for sw, L in CASES[chunk::8]:
        CL = ComposedLayout(sw, 0, L)
        F = make_f2_layout(CL)
        assert F.shape == L.shape and F.size == L.size
        expect = CL.offsets()
        assert np.array_equal(F.offsets(), expect), (sw, L)
        for i in range(0, int(L.size), max(1, int(L.size) // 16)):
            c = it._idx2crd(i, L.shape)
            assert F(i) == F(c) == CL(c) == sw(L(i)) == int(expect[i])
        assert F.cosize == int(expect.max()) + 1 == cosize(F)
        # a composition with the swizzle itself gives the same F2 layout
        assert composition(sw, make_f2_layout(L)) == F or sw.bits == 0
        assert f2_equal(F, CL)


def test_against_pycute_swizzle_o_layout():
    """The same F2 layouts against pycute's Swizzle o Layout (nvidia-cutlass's pycute has no F2 layout of its own)."""
    pycute = pytest.importorskip("pycute")
    n = 0
    for sw, L in CASES:
        if sw.shift == 0:   # pycute 4.2's shiftr/shiftl recurse forever on a shift of 0 (S<0,M,0>, the identity)
            continue
        P = pycute.ComposedLayout(pycute.Swizzle(sw.bits, sw.base, sw.shift), 0, pycute.Layout(L.shape, L.stride))
        F = make_f2_layout(ComposedLayout(sw, 0, L))
        assert [F(i) for i in range(L.size)] == [P(i) for i in range(L.size)], (sw, L)
        n += 1
    assert n == 502


# -- construction, printing, queries ------------------------------------------------------------------------------
def test_construction_forms_and_printing():
    F = make_f2_layout((8, 8), ([8, 17, 34], 1))
    assert str(F) == "F2 (8,8):([8,17,34],1)"
    assert stride(F) == (F2Stride([8, 17, 34]), 1) and rank(F) == 2 and size(F) == 64
    assert F.flat_bases == (8, 17, 34, 1, 2, 4)
    assert make_f2_layout((8, 8), [8, 17, 34, 1, 2, 4]) == F   # one flat list of the index's bits
    assert F(3, 5) == 8 ^ 17 ^ 1 ^ 4 == F(3 + 8 * 5) == F((3, 5))
    # an int stride is an XOR stride: 4:3 is 0, 3, 6, 5
    assert list(make_f2_layout(4, 3).offsets()) == [0, 3, 6, 5]
    # the SW128 atom: S<3,3,3> o (8,64):(64,1) has XOR strides 72 = 64 ^ 8 on its rows
    sw128 = make_f2_layout(ComposedLayout(Swizzle(3, 3, 3), 0, make_layout((8, 64), stride=(64, 1))))
    assert str(sw128) == "F2 (8,64):(72,1)"
    assert str(make_f2_layout(Swizzle(2, 0, 2))) == "F2 16:[1,2,5,10]"
    assert make_f2_layout(make_layout((2, 4), stride=(4, 1))) == make_f2_layout((2, 4), (4, 1))
    assert make_f2_layout(1, 0).size == 1 and make_f2_layout(1, 0)(0) == 0


def test_refusals_name_what_was_expected():
    with pytest.raises(LayoutAlgebraError, match="power-of-two"):
        make_f2_layout(make_layout((3, 4)))
    with pytest.raises(LayoutAlgebraError, match=r"L\(3\) = 9 while L\(1\)=3 \^ L\(2\)=6 = 5"):
        make_f2_layout(make_layout(4, stride=3))
    with pytest.raises(LayoutAlgebraError, match="offset 0"):
        make_f2_layout(ComposedLayout(Swizzle(2, 0, 2), 3, make_layout(16)))
    with pytest.raises(LayoutAlgebraError, match="expected 3 bases"):
        make_f2_layout(8, [1, 2])
    with pytest.raises(LayoutAlgebraError, match="congruent"):
        make_f2_layout((4, 4), (1,))
    F = make_f2_layout((8, 8), ([8, 17, 34], 1))
    with pytest.raises(ValueError, match=r"expected an index in \[0, 64\)"):
        F(64)
    with pytest.raises(ValueError, match=r"expected an index in \[0, 8\)"):
        F(8, 0)
    with pytest.raises(LayoutAlgebraError, match=r"inside A's domain \[0, 64\)"):
        composition(F, 128)
    with pytest.raises(LayoutAlgebraError, match="not injective|injective"):
        left_inverse(make_f2_layout((2, 2), (1, 1)))
    with pytest.raises(LayoutAlgebraError, match="bijection"):
        make_f2_layout((2, 2), (1, 4)).inverse()
    with pytest.raises(LayoutAlgebraError, match="XOR of its bits"):   # a layout that is not XOR-linear on F's image
        composition(make_layout(4, stride=3), make_f2_layout(4, 1))


# -- random F2 layouts and the algebra as properties ----------------------------------------------------------------
def _random_f2(rng, bits=None, out_bits=None, shape=None):
    k = rng.randint(0, 7) if bits is None else bits
    m = rng.randint(max(k, 1), 9) if out_bits is None else out_bits
    flat = [rng.randrange(1 << m) if rng.random() < 0.8 else 1 << rng.randrange(m) for _ in range(k)]
    if shape is None:
        parts, left = [], k
        while left:
            p = rng.randint(1, left)
            parts.append(1 << p)
            left -= p
        shape = tuple(parts) if len(parts) > 1 else (parts[0] if parts else 1)
    return make_f2_layout(shape, list(flat)) if type(shape) is tuple else make_f2_layout(shape, flat)


def _invertible(rng, k):
    while True:
        F = _random_f2(rng, k, k)
        if F.cosize == F.size and len(set(F.offsets().tolist())) == F.size:
            return F


def _all(F):
    return F.offsets().tolist()


def test_composition_properties():
    rng = random.Random(2)
    n = 0
    for _ in range(300):
        A = _random_f2(rng)
        kb = rng.randint(0, 6)
        B = _random_f2(rng, kb, max(A.size.bit_length() - 1, 0) or None) if A.size > 1 else make_f2_layout(1, 0)
        if max(B.flat_bases, default=0) >= A.size:
            with pytest.raises(LayoutAlgebraError):
                composition(A, B)
            continue
        R = composition(A, B)
        assert R.shape == B.shape and _all(R) == [A(b) for b in _all(B)]
        # an ordinary layout of power-of-two strides on either side
        L = make_layout(A.size, stride=1)
        assert composition(A, L) == make_f2_layout(A.shape if type(A.shape) is int else A.size, list(A.flat_bases)) \
            or f2_equal(composition(A, L), A)
        M = make_layout(4096, stride=2)
        assert _all(composition(M, B)) == [2 * b for b in _all(B)]
        n += 1
    assert n >= 150
    # associativity on chains that compose
    for _ in range(100):
        C = _random_f2(rng, rng.randint(0, 4), 4)
        B = _random_f2(rng, 4, rng.randint(4, 6))
        A = _random_f2(rng, B.cosize.bit_length(), 7)
        assert f2_equal(composition(composition(A, B), C), composition(A, composition(B, C)))


def test_composition_with_swizzles_and_tilers():
    sw = Swizzle(3, 3, 3)
    L = make_layout((8, 64), stride=(64, 1))
    F = make_f2_layout(L)
    CL = ComposedLayout(sw, 0, L)
    assert composition(CL, make_f2_layout(64, 1)) == make_f2_layout(64, 1) or \
        _all(composition(CL, make_f2_layout(64, 1))) == [CL(i) for i in range(64)]
    assert _all(composition(sw, F)) == CL.offsets().tolist()
    G = make_f2_layout((8, 8), ([8, 17, 34], 1))
    assert composition(G, (2, None)) == make_f2_layout((2, 8), (8, 1))
    assert composition(G, None) == G
    assert _all(composition(G, sw if sw.size <= 64 else Swizzle(1, 0, 2))) == [G(Swizzle(1, 0, 2)(i)) for i in range(8)]
    assert _all(composition(make_f2_layout(Swizzle(2, 0, 3)), make_layout(32, stride=1))) == \
        [Swizzle(2, 0, 3)(i) for i in range(32)]


def test_coalesce_properties():
    rng = random.Random(3)
    for _ in range(300):
        F = _random_f2(rng)
        C = coalesce(F)
        assert f2_equal(C, F) and C.size == F.size and C.depth <= 1
        assert coalesce(C) == C
        flat = it.flatten(C.shape) if type(C.shape) is tuple else (C.shape,)
        assert len(flat) <= max(len(F.flat_bases), 1)
    assert coalesce(make_f2_layout((2, (2, 4)), (1, (2, 4)))) == make_f2_layout(16, 1)
    assert coalesce(make_f2_layout((4, 2), (2, 1))) == make_f2_layout((4, 2), (2, 1))   # CuTe's coalesce too
    P = make_f2_layout((2, (2, 4), 4), (1, (2, 4), [3, 5]))
    assert coalesce(P, (1, 1)) == make_f2_layout((2, 8, 4), (1, 2, [3, 5]))


def test_inverses_and_nullspace():
    rng = random.Random(4)
    for _ in range(200):
        F = _invertible(rng, rng.randint(0, 8))
        inv = F.inverse()
        assert [inv(F(i)) for i in range(F.size)] == list(range(F.size))
        assert [F(inv(x)) for x in range(F.size)] == list(range(F.size))
        assert right_inverse(F) == left_inverse(F) == inv
    for _ in range(200):
        F = _random_f2(rng)
        R = right_inverse(F)
        assert [F(R(x)) for x in range(R.size)] == list(range(R.size))
        assert R.size * 2 > F.cosize or (R.size) not in set(_all(F))   # the run of offsets stops where F misses
        N = nullspace(F)
        assert all(F(N(i)) == 0 for i in range(N.size))
        assert len(set(_all(N))) == N.size   # injective
        assert N.size * len(set(_all(F))) == F.size   # it reaches every index F sends to 0
        if N.size == 1:
            Li = left_inverse(F)
            assert [Li(F(i)) for i in range(F.size)] == list(range(F.size))
        else:
            with pytest.raises(LayoutAlgebraError):
                left_inverse(F)


def test_equality_as_functions():
    A = make_f2_layout((4, 4), (1, 4))
    assert f2_equal(A, make_f2_layout(16, 1)) and A != make_f2_layout(16, 1)
    assert f2_equal(A, make_layout(16)) and f2_equal(make_layout((4, 4)), A)
    assert not f2_equal(A, make_layout(16, stride=2)) and not f2_equal(A, make_layout(12))
    assert not f2_equal(A, make_layout(4, stride=3))
    assert f2_equal(make_f2_layout(Swizzle(3, 4, 3)), ComposedLayout(Swizzle(3, 4, 3), 0, make_layout(1024)))


# -- export to Triton-style linear layouts ------------------------------------------------------------------------
def test_bases_match_to_linear_layout():
    from workbench.interop.linear import to_linear_layout

    for sw, L in CASES[::7]:
        CL = ComposedLayout(sw, 0, L)
        F = make_f2_layout(CL)
        # coordinate -> offset (CuTe's direction) under a distributed input name; "offset" is Triton's shared direction
        assert f2_bases(F) == {"offset": [b[0] for b in to_linear_layout(CL, dims=[("register", L.size)]).bases["register"]]}
    F = make_f2_layout((8, 8), ([8, 17, 34], 1))
    assert f2_bases(F, [("lane", 32), ("warp", 2)]) == {"lane": [8, 17, 34, 1, 2], "warp": [4]}
    with pytest.raises(LayoutAlgebraError, match="covering 64"):
        f2_bases(F, [("lane", 32)])


def test_from_linear_layout_object():
    from workbench.interop.linear import LinearLayout

    ll = LinearLayout({"register": [(1, 0), (2, 0)], "lane": [(0, 1), (0, 2), (5, 4)]}, [("dim0", 8), ("dim1", 8)])
    F = make_f2_layout(ll)
    assert F.shape == (4, 8)
    for r, lane in itertools.product(range(4), range(8)):
        d0, d1 = ll(register=r, lane=lane)
        assert F(r, lane) == d0 + 8 * d1


def test_public_names():
    import workbench as wb

    for name in ("F2Layout", "F2Stride", "make_f2_layout", "f2_equal", "f2_bases"):
        assert name in wb.__all__ and getattr(wb, name) is not None
    assert isinstance(wb.make_f2_layout(4, 1), F2Layout)


def test_linear_layout_of_f2_round_trips():
    from workbench.interop.linear import linear_layout_of_f2, to_linear_layout

    F = make_f2_layout((8, 8), ([8, 17, 34], 1))
    ll = linear_layout_of_f2(F)   # rank 2: lane (the first mode), register (the second), as to_linear_layout
    assert ll.bases == {"lane": [(8,), (17,), (34,)], "register": [(1,), (2,), (4,)]}
    assert make_f2_layout(ll) == F
    ll2 = linear_layout_of_f2(F, out_shape=(8, 8))
    assert all(ll2(lane=i, register=j) == (F(i, j) % 8, F(i, j) // 8) for i in range(8) for j in range(8))
    for sw, L in CASES[::11]:
        CL = ComposedLayout(sw, 0, L)
        dims = [("register", L.size)]
        assert linear_layout_of_f2(make_f2_layout(CL), dims=dims) == to_linear_layout(CL, dims=dims)
        if sorted(CL.offsets()) == list(range(CL.size)):      # a bijection: its shared layout (offset -> coordinate) agrees too
            dims = [("offset", L.size)]
            assert linear_layout_of_f2(make_f2_layout(CL), dims=dims) == to_linear_layout(CL, dims=dims)
    with pytest.raises(TypeError, match="expected an F2 layout"):
        linear_layout_of_f2(make_layout(4))
    with pytest.raises(ValueError, match="past the out_shape"):
        linear_layout_of_f2(F, out_shape=(4, 4))
