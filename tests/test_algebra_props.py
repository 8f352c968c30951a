"""Property tests (hypothesis) over random hierarchical layouts: every operation keeps the
functional property its docstring states, or raises ValueError; never a wrong layout.

A property that may be refused counts its successes (:func:`floored`): a generator that only
produced refusals would otherwise pass without checking anything."""

from collections import Counter

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.layout import inttuple as it

L, D = wb.Layout, wb.Dyn
settings.register_profile("algebra", max_examples=int(__import__("os").environ.get("ALGEBRA_EXAMPLES", "120")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("algebra")

shapes = st.recursive(st.integers(1, 4), lambda c: st.tuples(c) | st.tuples(c, c) | st.tuples(c, c, c), max_leaves=5)


@st.composite
def injective(draw, gaps=True):
    """A permutation of compact strides, with optional gaps that keep each stride a multiple
    of the previous extent (so complements and left inverses exist)."""
    shape = draw(shapes)
    flat = it.flatten(shape)
    order = draw(st.permutations(range(len(flat))))
    strides, cur = [0] * len(flat), 1
    for i in order:
        if gaps:
            cur *= draw(st.sampled_from([1, 1, 2, 3]))
        strides[i] = cur
        cur *= flat[i]
    return L(shape, it.unflatten(strides, shape))


@st.composite
def anylayout(draw):
    shape = draw(shapes)
    strides = [draw(st.integers(0, 12)) for _ in it.flatten(shape)]
    return L(shape, it.unflatten(strides, shape))


def floored(minimum, *strategies):
    """Run the property under @given, counting the cases it did not refuse (it returns True for
    those); the test fails unless at least ``minimum`` cases were really checked."""
    def wrap(prop):
        def test():
            seen = Counter()

            @given(st.tuples(*strategies))
            def run(args):
                seen[bool(prop(*args))] += 1

            run()
            print(f"{prop.__name__}: {seen[True]} of {sum(seen.values())} checked (floor {minimum})")
            assert seen[True] >= minimum, f"only {seen[True]} of {sum(seen.values())} generated cases were checked"
        test.__name__ = prop.__name__
        return test
    return wrap


def extended(A):
    """A as the algebra extends it past size(A): A itself, its last flat mode taking every index past the others
    even when its extent is 1 (CuTe 4.x's coalesce_x; ragged identity tiles stay predicable)."""
    return A


def fn(layout, n=None):
    n = wb.size(layout) if n is None else n
    return [layout(i) for i in range(n)]


def is_injective(layout):
    offs = list(layout.offsets())
    return len(set(offs)) == len(offs)


@given(anylayout())
def test_coalesce_keeps_the_function(A):
    C = wb.coalesce(A)
    assert wb.size(C) == wb.size(A) and wb.depth(C) <= 1 and fn(C) == fn(A)
    prof = tuple(1 for _ in range(A.rank)) if type(A.shape) is tuple else None
    Cp = wb.coalesce(A, prof)
    assert fn(Cp) == fn(A) and Cp.rank == A.rank
    F = wb.filter_(A)
    assert set(F.offsets()) == set(A.offsets())


@floored(25, anylayout(), anylayout())
def test_composition_is_functional_composition_or_raises(A, B):
    try:
        R = wb.composition(A, B)
    except ValueError as e:
        assert "composition(" in str(e)
        return False
    # compatible with B: same size, and B's modes when B has modes (an integral B may split)
    assert wb.size(R) == wb.size(B) and (type(B.shape) is not tuple or R.rank == B.rank)
    n = wb.size(B)
    assert [R(i) for i in range(n) if B(i) < wb.size(A)] == [A(B(i)) for i in range(n) if B(i) < wb.size(A)]
    # past size(A), A is extended along its last flat mode (as CuTe 4.x's coalesce_x does)
    Ac = extended(A)
    assert [R(i) for i in range(n)] == [Ac(B(i)) for i in range(n)]
    return True


@given(anylayout(), st.data())
def test_composition_with_leaf_permutations_always_succeeds(A, data):
    # B picks A's leaves in another order: stride divisibility holds by construction
    flat = it.flatten(A.shape)
    order = data.draw(st.permutations(range(len(flat))))
    pre = it.prefix_product(flat)
    B = L(tuple(flat[i] for i in order), tuple(pre[i] for i in order))
    R = wb.composition(A, B)
    assert fn(R) == [A(B(i)) for i in range(wb.size(B))]


@floored(60, anylayout(), st.integers(1, 96))
def test_complement_is_ordered_disjoint_and_reaches_the_cotarget(A, M):
    try:
        R = wb.complement(A, M)
    except ValueError as e:
        # CuTe refuses only modes that interleave: a stride inside the span of the modes below it
        assert "complement(" in str(e) and "inside the span" in str(e)
        F = wb.filter_(A)
        modes = sorted((d, s) for s, d in zip(it.flatten(F.shape), it.flatten(F.stride)) if d)
        assert any(d1 < s0 * d0 for (d0, s0), (d1, _) in zip(modes, modes[1:]))
        return False
    r = fn(R)
    assert r == sorted(r) and len(set(r)) == len(r)  # ordered: strides positive and increasing
    fa = set(wb.filter_(A).offsets())
    assert all(x not in fa for x in r[1:])  # disjoint images
    # R reaches the cotarget: its last mode repeats the span of A's modes ceil(M / span) times
    F = wb.filter_(A)
    top = max([s * d for s, d in zip(it.flatten(F.shape), it.flatten(F.stride)) if d], default=1)
    last = R if type(R.shape) is not tuple else R[R.rank - 1]
    assert top * (wb.size(last) if last.stride == top else 1) >= M
    return True


@given(injective(), st.integers(1, 96))
def test_complement_exists_for_injective_layouts(A, M):
    R = wb.complement(A, M)
    assert is_injective(wb.make_layout(A, R)) and wb.cosize(wb.make_layout(A, R)) >= M


@given(anylayout())
def test_right_inverse(A):
    try:
        R = wb.right_inverse(A)
    except ValueError:
        raise AssertionError("right_inverse of a static layout must exist") from None
    assert [A(R(i)) for i in range(wb.size(R))] == list(range(wb.size(R)))


@given(injective(gaps=False))
def test_right_inverse_of_a_bijection_is_its_inverse(A):
    R = wb.right_inverse(A)
    assert wb.size(R) == wb.size(A)
    assert [R(A(i)) for i in range(wb.size(A))] == list(range(wb.size(A)))


@given(injective())
def test_left_inverse_of_injective_layouts(A):
    Li = wb.left_inverse(A)
    assert [Li(A(i)) for i in range(wb.size(A))] == list(range(wb.size(A)))


@floored(30, anylayout())  # measured: 44-71 of 120 generated layouts have a left inverse (8 runs)
def test_left_inverse_is_right_or_raises(A):
    try:
        Li = wb.left_inverse(A)
    except ValueError as e:
        assert "left_inverse(" in str(e)
        return False
    assert [Li(A(i)) for i in range(wb.size(A))] == list(range(wb.size(A)))
    return True


@st.composite
def tilers(draw, n):
    """A layout tiler of n elements' worth: an injective layout whose size divides n."""
    T = draw(injective())
    assume(wb.size(T) > 0 and n % wb.size(T) == 0)
    return T


@floored(40, injective(), injective())
def test_logical_divide_covers_A_with_tiles(A, T):
    """As CuTe, the tiler need not divide A: (T, T*) covers A's domain (the last tiles may reach
    past it, which kernels predicate) and R is A o (T, T*) with A extended along its last mode."""
    try:
        R = wb.logical_divide(A, T)
    except ValueError as e:
        assert "logical_divide(" in str(e)
        return False
    n = wb.size(A)
    BB = wb.make_layout(T, wb.complement(T, n))
    assert wb.size(R) == wb.size(BB) >= n
    assert sorted(o for o in BB.offsets() if o < n) == list(range(n))  # every element of A is in some tile
    Ac = extended(A)
    assert fn(R) == [Ac(BB(i)) for i in range(wb.size(BB))]
    assert fn(wb.composition(A, T)) == [R(i) for i in range(wb.size(T))]
    Z, Tl, F = wb.zipped_divide(A, T), wb.tiled_divide(A, T), wb.flat_divide(A, T)
    assert fn(Z) == fn(R) == fn(Tl) == fn(F)
    return True


@given(anylayout(), st.data())
def test_divides_by_a_prefix_tile_always_succeed(A, data):
    flat = it.flatten(A.shape)
    k = data.draw(st.integers(0, len(flat)))
    T = L(it.product(flat[:k]))
    R = wb.logical_divide(A, T)
    assert fn(R) == fn(A)  # a prefix tile keeps A's order


@floored(40, injective(), st.data())
def test_by_mode_divides(A, data):
    modes = [A[i] for i in range(A.rank)]
    tiler = tuple(data.draw(st.sampled_from([None, *range(1, 13)])) for m in modes)
    try:
        Z = wb.zipped_divide(A, tiler)
    except ValueError as e:
        assert "divide(" in str(e)
        return False
    # each mode is split into ceil(size/t) tiles of t: the tiles cover the mode
    expect = 1
    for m, t in zip(modes, tiler):
        expect *= wb.size(m) if t is None else t * -(-wb.size(m) // t)
    assert wb.size(Z) == expect
    if all(t is None or wb.size(m) % t == 0 for m, t in zip(modes, tiler)):
        assert sorted(Z.offsets()) == sorted(A.offsets())
    # a None mode is not tiled: its tile is 1:0 and the whole mode goes to the rest (as pycute)
    tile = wb.composition(A, tuple(1 if t is None else t for t in tiler))
    assert fn(Z[0]) == fn(tile)
    assert fn(wb.flat_divide(A, tiler)) == fn(Z) == fn(wb.tiled_divide(A, tiler))
    return True


@floored(40, injective(gaps=False), injective())
def test_logical_product(A, B):
    try:
        R = wb.logical_product(A, B)
    except ValueError as e:
        assert "logical_product(" in str(e)
        return False
    assert R[0] == A and wb.size(R) == wb.size(A) * wb.size(B)
    assert is_injective(R)
    assert fn(R[1]) == fn(wb.composition(wb.complement(A, wb.size(A) * wb.cosize(B)), B))
    return True


@given(injective(gaps=False), st.integers(1, 6))
def test_divide_product_round_trip(T, k):
    # logical_product(T, k:1) == logical_divide(n:1, T) for n = size(T)*k: same function
    n = wb.size(T) * k
    assert fn(wb.logical_product(T, L(k))) == fn(wb.logical_divide(L(n), T))


@given(injective(gaps=False), injective(gaps=False))
def test_blocked_and_raked_products_are_bijections(A, B):
    for op in (wb.blocked_product, wb.raked_product):
        R = op(A, B)
        assert wb.size(R) == wb.size(A) * wb.size(B)
        assert sorted(R.offsets()) == list(range(wb.size(R)))


rank2 = st.builds(lambda m, n, row: L((m, n), (n, 1) if row else (1, m)), st.integers(1, 8), st.integers(1, 8), st.booleans())


@floored(40, rank2, rank2)
def test_make_layout_tv_owns_each_element_once(thr, val):
    try:
        tiler, tv = wb.make_layout_tv(thr, val)
    except ValueError:
        return False
    mn = wb.raked_product(thr, val)
    nt = wb.size(thr)
    assert it.product(tiler) == wb.size(mn)
    for t in range(nt):
        for v in range(wb.size(val)):
            assert mn(tv((t, v))) == t + v * nt
    return True


@given(anylayout(), anylayout())
def test_max_common_vector(a, b):
    R = wb.max_common_layout(a, b)
    n = wb.size(R)
    assert [a(R(i)) for i in range(n)] == [b(R(i)) for i in range(n)]
    if wb.max_common_vector(a, b) > 1:
        assert wb.max_common_vector(a, b) == n and [b(R(i)) for i in range(n)] == list(range(n))


@given(anylayout(), st.data())
def test_slice_plus_offset_is_the_layout(A, data):
    modes = [A[i] for i in range(A.rank)] if type(A.shape) is tuple else [A]
    crd = tuple(data.draw(st.sampled_from([None, *range(wb.size(m))])) for m in modes)
    if type(A.shape) is not tuple:
        crd = crd[0]
    sub, off = wb.slice_and_offset(crd, A)
    free = [i for i, c in enumerate(crd if type(crd) is tuple else (crd,)) if c is None]
    for j in range(wb.size(sub)):
        sizes = [wb.size(modes[i]) for i in free]
        cs, full = wb.idx2crd(j, tuple(sizes)), list(crd if type(crd) is tuple else (crd,))
        for k, i in enumerate(free):
            full[i] = cs[k]
        full = tuple(full) if type(A.shape) is tuple else full[0]
        assert sub(j) + off == A(full)


def _dynamize(A, data):
    """The same layout with some leaves replaced by Dyn values carrying their runtime value."""
    def go(t):
        if type(t) is tuple:
            return tuple(go(e) for e in t)
        return D(t) if data.draw(st.booleans()) else t
    return L(go(A.shape), go(A.stride))


@floored(40, anylayout(), injective(), st.data())
def test_dynamic_values_flow_through_and_agree(A, T, data):
    Ad = _dynamize(A, data)
    Td = _dynamize(T, data)
    compared = False
    for op in (wb.composition, wb.logical_divide, wb.zipped_divide):
        try:
            ref = op(A, T)
        except ValueError:
            continue
        try:
            got = op(Ad, Td)
        except ValueError:
            continue  # the dynamic path may refuse what it cannot prove; it must not be wrong
        compared = True
        # compared inside A's domain (past it, a dynamic 1 cannot be coalesced away, so the
        # extension of A along its last mode may differ)
        B = T if op is wb.composition else wb.make_layout(T, wb.complement(T, wb.size(A)))
        idx = [i for i in range(wb.size(ref)) if B(i) < wb.size(A)]
        assert [got(i) for i in idx] == [ref(i) for i in idx]
    return compared
