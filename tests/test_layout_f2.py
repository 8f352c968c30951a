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
    complement,
    composition,
    cosize,
    dice,
    f2_bases,
    f2_equal,
    left_inverse,
    make_f2_layout,
    make_layout,
    nullspace,
    rank,
    right_inverse,
    size,
    slice_,
    slice_and_offset,
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


def _compatible(b, r):
    """r refines b (CuTe's compatible): a leaf of b matches a leaf or a tuple of r of the same size."""
    if type(b) is tuple:
        return type(r) is tuple and len(r) == len(b) and all(_compatible(x, y) for x, y in zip(b, r))
    return it.product(r) == b


def _leaves_of(shape, bases):
    """The bases tree at each leaf of shape: a leaf's tuple of ints, or a split leaf's tuple of runs."""
    if type(shape) is tuple:
        return [x for s, b in zip(shape, bases) for x in _leaves_of(s, b)]
    return [bases]


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
        assert _compatible(B.shape, R.shape) and _all(R) == [A(b) for b in _all(B)]
        # each leaf of B one mode, or split where its image's bases stop doubling (as CuTe over A's modes)
        for rs in _leaves_of(B.shape, R.bases):
            runs = [rs] if not rs or type(rs[0]) is int else list(rs)
            assert all(r[j + 1] == r[j] << 1 for r in runs for j in range(len(r) - 1))
            assert all(a[-1] << 1 != b[0] for a, b in zip(runs, runs[1:]))
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
        # coordinate index -> offset (CuTe's direction), the bases a distributed input dimension has
        assert f2_bases(F) == {"index": [b[0] for b in to_linear_layout(CL, dims=[("register", L.size)]).bases["register"]]}
    F = make_f2_layout((8, 8), ([8, 17, 34], 1))
    assert f2_bases(F, [("lane", 32), ("warp", 2)]) == {"lane": [8, 17, 34, 1, 2], "warp": [4]}
    with pytest.raises(LayoutAlgebraError, match="covering 64"):
        f2_bases(F, [("lane", 32)])
    # "offset" names Triton's shared direction, offset -> coordinate: the inverse of these bases, never them
    with pytest.raises(LayoutAlgebraError, match="'offset', Triton's name for the inverse direction"):
        f2_bases(F, [("offset", 64)])


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


# -- slicing, complement, divides and products of F2 layouts, against brute-force evaluation ---------------------------
def _coords(shape):
    """Every coordinate of ``shape`` (congruent, nested), colexicographic."""
    if type(shape) is not tuple:
        return list(range(shape))
    out = [()]
    for s in shape:
        out = [c + (x,) for x in _coords(s) for c in out]
    return out


def _random_crd(rng, shape):
    """A slicing coordinate: None, an int in range, or (for a tuple mode) a tuple of them."""
    if type(shape) is tuple and rng.random() < 0.8:
        return tuple(_random_crd(rng, s) for s in shape)
    return None if rng.random() < 0.5 else rng.randrange(it.product(shape))


def _fill(crd, shape, c, fixed):
    """crd with its Nones filled from c (the slice's coordinate, in order) and, with fixed given, its ints from it."""
    it_c, it_f = iter(c), iter(fixed if fixed is not None else ())

    def go(x, s):
        if type(x) is tuple:
            return tuple(go(a, b) for a, b in zip(x, s if type(s) is tuple else (s,)))
        if x is None:
            return next(it_c)
        return next(it_f) if fixed is not None else x
    return go(crd, shape)


def _flat_coord(c, shape):
    """A coordinate of a sliced layout as the list of its top-level entries (one per kept mode)."""
    return list(c) if type(shape) is tuple else [c]


def _nested_shape():
    return [8, (4, 8), (2, (4, 2)), ((2, 2), 4, 2)]


def test_slice_and_dice_evaluate_as_the_layout():
    """slice_(F, crd)(c) ^ F(crd, Nones 0) == F(crd filled with c) at every c; dice keeps the fixed modes;
    slice_and_offset returns an offset only where adding it equals XOR-ing it in, and refuses otherwise."""
    rng = random.Random(5)
    n_off = n_ref = 0
    for shape in _nested_shape() * 25:
        F = _random_f2(rng, shape=shape, bits=len([0 for s in it.flatten(shape if type(shape) is tuple else (shape,))
                                                   for _ in range(s.bit_length() - 1)]))
        crd = _random_crd(rng, F.shape)
        if not it.has_none(crd):
            crd = None if type(crd) is int else crd
        S = slice_(F, crd)
        o = F(it.fill_none(crd))
        for c in _coords(S.shape):
            full = _fill(crd, F.shape, _flat_coord(c, S.shape) if type(crd) is tuple else [c], None) \
                if crd is not None else c
            assert S(c) ^ o == F(full), (F, crd, c)
        if type(crd) is tuple and it.has_none(crd):
            assert F(*crd) == S if len(crd) > 1 else True    # F(None, 2) is the slice, as CuTe's L(_, 2)
            D = dice(F, crd)
            for c in _coords(D.shape):
                full = _fill(crd, F.shape, itertools.repeat(0), _flat_coord(c, D.shape))
                assert D(c) == F(full), (F, crd, c)
        try:
            sub, off = slice_and_offset(crd, F)
        except LayoutAlgebraError as e:
            assert "share no bit" in str(e)
            assert any(S(c) + o != S(c) ^ o for c in _coords(S.shape))   # refused only where + would be wrong
            n_ref += 1
            continue
        assert sub == S and off == o
        assert all(S(c) + off == S(c) ^ o for c in _coords(S.shape))
        n_off += 1
    assert n_off >= 20 and n_ref >= 10, (n_off, n_ref)
    with pytest.raises(ValueError, match=r"expected an index in \[0, 8\)"):
        slice_(make_f2_layout((8, 8), (1, 8)), (None, 8))


def _injective_f2(rng, k, m):
    while True:
        F = _random_f2(rng, k, m)
        if len(set(_all(F))) == F.size:
            return F


def _pow2_layout(rng, k, m):
    """An injective Layout of power-of-two extents and distinct power-of-two strides (bits k of m): a CuTe layout
    that is an F2 layout, so CuTe's algebra on it is an oracle for the F2 algebra."""
    bits = rng.sample(range(m), k)
    parts, i = [], 0
    while i < k:
        j = rng.randint(1, min(2, k - i))
        run = sorted(bits[i:i + j])
        if j == 2 and run[1] == run[0] + 1:
            parts.append((4, 1 << run[0]))
        else:
            parts += [(2, 1 << b) for b in bits[i:i + j]]
        i += j
    if not parts:
        return make_layout(1, stride=0)
    if len(parts) == 1:
        return make_layout(parts[0][0], stride=parts[0][1])
    return make_layout(tuple(p[0] for p in parts), stride=tuple(p[1] for p in parts))


def test_complement_is_a_bijection_and_cutes_on_power_of_two_layouts():
    rng = random.Random(6)
    for _ in range(200):
        T = _injective_f2(rng, rng.randint(0, 5), rng.randint(5, 7))
        M = 1 << rng.randint(0, 8)
        R = complement(T, M)
        both = sorted(t ^ r for t in _all(T) for r in _all(R))   # (T, R) reaches each offset below 2**m once
        assert both == list(range(len(both))) and len(both) >= M and len(both) >= T.cosize
        assert list(R.offsets()) == sorted(R.offsets())          # R's offsets increase, as CuTe's complement
    for _ in range(200):   # a CuTe layout with power-of-two strides: the F2 complement is CuTe's, printed alike
        L = _pow2_layout(rng, rng.randint(1, 4), 6)
        M = 1 << rng.randint(6, 8)
        assert str(complement(make_f2_layout(L), M)) == "F2 " + str(complement(L, M)), (L, M)
    with pytest.raises(LayoutAlgebraError, match="XOR to 0"):
        complement(make_f2_layout(4, [3, 3]), 16)
    assert complement(make_f2_layout((2, 4), (0, 1)), 16) == make_f2_layout(4, 4)   # a zero base is stride 0
    assert str(complement(make_f2_layout(4, [3, 5]), 16)) == "F2 (2,2):(1,8)"   # 3, 5 lead in bits 1, 2


def _tiler(rng, A):
    x = rng.random()
    k = max(A.size.bit_length() - 1, 0)
    if x < 0.3:
        return 1 << rng.randint(0, k)
    if x < 0.6:
        return _pow2_layout(rng, rng.randint(0, k), k) if k else 1
    return _injective_f2(rng, rng.randint(0, k), k) if k else 1


def _compose_all(A, Z):
    return [A(z) for z in _all(Z)]


@pytest.mark.parametrize("op", ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide"])
def test_divides_evaluate_as_A_o_tile_and_rest(op):
    """Every divide is A o (T, complement(T, size(A))) at every index, mode 0 is A o T, and the zipped/tiled/flat
    flavours are the same function as logical_divide (by mode for tuple tilers, coordinates rearranged)."""
    import workbench as wb

    rng = random.Random(7)
    fn = getattr(wb, op)
    for _ in range(150):
        shape = rng.choice([(4, 8), (2, (4, 4))]) if rng.random() < .4 else None
        A = _random_f2(rng, 5 if shape else rng.randint(1, 7), 9, shape=shape)
        if rng.random() < 0.5 and type(A.shape) is tuple:   # a tuple tiler, one entry per leading mode (None keeps)
            T = tuple(None if rng.random() < 0.25 else _tiler(rng, m) for m in list(A)[:rng.randint(1, A.rank)])
        else:
            T = _tiler(rng, A)
        R = fn(A, T)
        assert isinstance(R, F2Layout) and R.size == A.size
        if type(T) is not tuple:
            Tf = make_f2_layout(T) if type(T) is not int else make_f2_layout(make_layout(T))
            Z = complement(Tf, A.size)
            assert sorted(_all(R)) == sorted(_all(A))                       # (T, T*) permutes A's indices
            assert _all(R) == [A(t ^ z) for z in _all(Z) for t in _all(Tf)]  # R(i, j) == A(T(i) ^ T*(j))
            assert _all(R[0] if op != "flat_divide" else R) [:Tf.size] == _all(composition(A, Tf))
        else:   # by mode: each mode of logical_divide is that mode divided, and the flavours agree as functions
            L = wb.logical_divide(A, T)
            for k, t in enumerate(T):
                if t is not None:
                    assert f2_equal(L[k], wb.logical_divide(A[k], t))
            assert sorted(_all(R)) == sorted(_all(L))
    with pytest.raises(LayoutAlgebraError, match="not extended past its size"):
        fn(make_f2_layout(8, 1), 16)
    with pytest.raises(LayoutAlgebraError, match="not an F2 layout"):
        fn(make_f2_layout(8, 1), make_layout(3))


def test_divides_and_products_are_cutes_on_power_of_two_layouts():
    """Where both operands are CuTe layouts with power-of-two extents and strides (F2 layouts too), the F2 divides
    and products are the ordinary algebra's (itself compared with CuTe DSL): printed alike and equal at every
    index (a leaf of the tile split over A's modes as CuTe splits it: ``(2,2,4):(32,1,8) / 2:8`` has the rest
    ``(2,2,2):(32,1,8)``)."""
    import workbench as wb

    rng = random.Random(8)
    same = 0
    for _ in range(120):
        A = _pow2_layout(rng, rng.randint(1, 5), 7)
        k = A.size.bit_length() - 1
        T = _pow2_layout(rng, rng.randint(0, k), k) if rng.random() < .7 else 1 << rng.randint(0, k)
        B = _pow2_layout(rng, rng.randint(0, 3), 4)
        for op, rhs in [(o, T) for o in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide")] + \
                [(o, B) for o in ("logical_product", "zipped_product", "tiled_product", "flat_product",
                                  "blocked_product", "raked_product")]:
            ours = getattr(wb, op)(make_f2_layout(A), rhs)
            cute = getattr(wb, op)(A, rhs)
            assert _all(ours) == list(cute.offsets()), (op, A, rhs, ours, cute)
            assert str(ours) == "F2 " + str(cute), (op, A, rhs)
            same += 1
    assert same == 1200


@pytest.mark.parametrize("op", ["logical_product", "zipped_product", "tiled_product", "flat_product",
                                "blocked_product", "raked_product"])
def test_products_evaluate_as_copies_of_A(op):
    """logical_product is (A, complement(A, size(A)*cosize(B)) o B) at every index: mode 0 is A, the copies sit
    where the complement's image under B says, injective when A and B are; the other products are the same
    offsets rearranged (blocked/raked: like modes zipped)."""
    import workbench as wb

    rng = random.Random(9)
    for _ in range(120):
        A = _injective_f2(rng, rng.randint(0, 4), rng.randint(4, 6))
        B = _injective_f2(rng, rng.randint(0, 3), rng.randint(3, 4)) if rng.random() < .6 else \
            _pow2_layout(rng, rng.randint(0, 3), 4)
        R = getattr(wb, op)(A, B)
        P = wb.logical_product(A, B)
        Bf = make_f2_layout(B)
        rest = complement(A, A.size * Bf.cosize)
        assert _all(P) == [a ^ rest(b) for b in _all(Bf) for a in _all(A)]
        assert _all(P[0]) == _all(A) and len(set(_all(P))) == P.size       # injective
        assert sorted(_all(R)) == sorted(_all(P)) and R.size == A.size * Bf.size
