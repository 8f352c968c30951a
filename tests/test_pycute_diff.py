"""Differential test against pycute (nvidia-cutlass 4.2.0.0): compare functions (the value at
every index), not strings, since equal functions print differently and inverses are not unique.
Where pycute is wrong we test the right answer and say so."""

import random

import pytest

import workbench as wb
from workbench.layout import inttuple as it

pycute = pytest.importorskip("pycute")


def to_py(L):
    return pycute.Layout(L.shape, L.stride)


def fn(layout, n):
    return [layout(i) for i in range(n)]


def random_shape(rng, leaves):
    if leaves == 1 or rng.random() < 0.3:
        return rng.choice([1, 2, 2, 3, 4, 4, 6, 8])
    k = rng.randint(2, min(3, leaves))
    return tuple(random_shape(rng, max(1, leaves // k)) for _ in range(k))


def random_injective(rng, gaps=True):
    shape = random_shape(rng, rng.randint(1, 5))
    flat = it.flatten(shape)
    order = list(range(len(flat)))
    rng.shuffle(order)
    strides, cur = [0] * len(flat), 1
    for i in order:
        if gaps:
            cur *= rng.choice([1, 1, 2])
        strides[i] = cur
        cur *= flat[i]
    return wb.Layout(shape, it.unflatten(strides, shape))


def random_any(rng):
    shape = random_shape(rng, rng.randint(1, 5))
    return wb.Layout(shape, it.unflatten([rng.randint(0, 10) for _ in it.flatten(shape)], shape))


CASES = 400


def _pairs(seed):
    rng = random.Random(seed)
    return [(random_any(rng) if rng.random() < 0.5 else random_injective(rng), random_injective(rng)) for _ in range(CASES)]


def test_coalesce_and_composition_agree_with_pycute():
    agreed = 0
    for A, B in _pairs(1):
        assert fn(wb.coalesce(A), wb.size(A)) == fn(pycute.coalesce(to_py(A)), wb.size(A))
        try:
            ours = wb.composition(A, B)
        except ValueError:
            continue  # we refuse what has no correct layout; pycute may return a wrong one
        try:
            theirs = pycute.composition(to_py(A), to_py(B))
        except AssertionError:
            continue  # pycute asserts on some valid cases (e.g. (6,2):(1,6) o 4:1); the properties test ours
        n = wb.size(B)
        # Note: past size(A) pycute extends coalesce(A)'s last mode, we (as CuTe 4.x's coalesce_x) A's last flat
        # mode, even of extent 1 (so ragged identity tiles stay predicable): where that mode has extent 1 compare
        # inside A
        idx = range(n) if not pycute_drops_extension(A) else [i for i in range(n) if B(i) < wb.size(A)]
        assert [ours(i) for i in idx] == [theirs(i) for i in idx], (A, B, ours, theirs)
        agreed += 1
    assert agreed > CASES // 3


def test_where_we_refuse_pycute_is_wrong_or_refuses():
    # every composition we reject is one pycute either rejects or gets wrong somewhere
    checked = 0
    for A, B in _pairs(2):
        try:
            wb.composition(A, B)
            continue
        except ValueError:
            pass
        try:
            theirs = pycute.composition(to_py(A), to_py(B))
        except Exception:
            checked += 1
            continue
        n = wb.size(B)
        # wrong: not compatible with B (another size), or other values (A extended as CuTe 4.x extends it)
        assert pycute.size(theirs) != n or fn(theirs, n) != [ext(A, B(i)) for i in range(n)], (A, B, theirs)
        checked += 1
    assert checked > 0


def test_complement_and_inverses_agree_with_pycute():
    rng = random.Random(3)
    for _ in range(CASES):
        A = random_injective(rng)
        M = rng.randint(1, 4) * wb.cosize(A)
        ours = wb.complement(A, M)
        theirs = pycute.complement(to_py(A), M)
        n = max(wb.size(ours), pycute.size(theirs))
        assert fn(ours, wb.size(ours)) == fn(theirs, wb.size(ours)) and wb.size(ours) == pycute.size(theirs) or n == 1
        R, Rp = wb.right_inverse(A), pycute.right_inverse(to_py(A))
        assert wb.size(R) == pycute.size(Rp) and fn(R, wb.size(R)) == fn(Rp, wb.size(R))
        Li = wb.left_inverse(A)
        assert [Li(A(i)) for i in range(wb.size(A))] == list(range(wb.size(A)))


# -- a differential over generated pairs, tilers that do not divide included ---------------------
# Each operation is run on both sides and classified: both answer (the results must be the same
# function: equal sizes, equal top-level mode sizes, equal values at every index), both refuse,
# we refuse and pycute answers (its answer must then be wrong against the operation's definition,
# evaluated independently below), or pycute refuses (an assertion) and we answer (ours must then
# satisfy the definition).  Floors on the agreed counts keep the test from passing vacuously.
PYCUTE_REFUSES = (AssertionError, ZeroDivisionError, ValueError, TypeError, IndexError)


def ext(layout, x):
    """A layout as a function on all integers, written out independently of both libraries:
    colexicographic digits of x in the flat shape, the last digit unbounded (how a divide's last
    tile reaches past the layout)."""
    shp = it.flatten(layout.shape if isinstance(layout, wb.Layout) else layout[0])
    std = it.flatten(layout.stride if isinstance(layout, wb.Layout) else layout[1])
    off = 0
    for s, d in zip(shp[:-1], std[:-1]):
        off += (x % s) * d
        x //= s
    return off + x * std[-1]


def any_size(R):
    return wb.size(R) if isinstance(R, wb.Layout) else pycute.size(R)


def mode_sizes(shape):
    return tuple(it.product(m) for m in shape) if isinstance(shape, tuple) else (shape,)


def same_function(ours, theirs):
    n = wb.size(ours)
    return (n == pycute.size(theirs) and mode_sizes(ours.shape) == mode_sizes(theirs.shape)
            and fn(ours, n) == fn(theirs, n))


def pycute_drops_extension(A):
    """pycute composes with coalesce(A), which drops a last flat mode of extent 1 (and makes a layout of size 1
    1:0): past size(A) it extends another mode; we (as CuTe DSL and C++ CuTe's coalesce_x) extend A's last flat
    mode, whatever its extent."""
    return it.flatten(A.shape)[-1] == 1


def classify(counts, key, ours_fn, theirs_fn, reference):
    """reference(R) -> True when layout-like R (ours or pycute's) is what the definition gives."""
    try:
        ours = ours_fn()
    except wb.LayoutAlgebraError:
        ours = None
    try:
        theirs = theirs_fn()
    except PYCUTE_REFUSES:
        theirs = None
    if ours is not None and theirs is not None:
        if same_function(ours, theirs):
            outcome = "agree"
        else:  # ours meets the definition past A's one element, pycute's does not (see pycute_drops_extension)
            assert pycute_drops_extension(key[1]) and reference(ours) and not reference(theirs), (key, ours, theirs)
            outcome = "pycute drops A's extension"
    elif ours is None and theirs is None:
        outcome = "both refuse"
    elif ours is None:
        assert not reference(theirs), (key, "we refuse a correct answer", theirs)
        outcome = "pycute wrong"
    else:
        assert reference(ours), (key, "our answer breaks the definition", ours)
        outcome = "pycute refuses"
    counts[outcome] = counts.get(outcome, 0) + 1
    return outcome


def pylayout(x):
    return pycute.Layout(x.shape, x.stride) if isinstance(x, wb.Layout) else x


def random_compact(rng, row_major=False):
    """A compact layout with extents that rarely divide a tiler (5, 7, 10, 12, ...)."""
    shape = random_shape(rng, rng.randint(1, 3))
    shape = it.unflatten([rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16]) for _ in it.flatten(shape)], shape)
    flat = it.flatten(shape)
    strides = it.prefix_product(tuple(flat[::-1]))[::-1] if row_major else it.prefix_product(tuple(flat))
    return wb.Layout(shape, it.unflatten(list(strides), shape))


def random_tiler(rng):
    r = rng.random()
    if r < 0.35:
        return wb.Layout(rng.randint(1, 40), 1)
    if r < 0.5:
        return wb.Layout(rng.randint(1, 12), rng.randint(1, 4))
    return random_injective(rng)


def divide_reference(A, T):
    """logical_divide(A, T) by definition: A on all integers after (T, complement(T, size(A)))."""
    C = pycute.complement(pylayout(T), wb.size(A))
    nt, nc = wb.size(T), pycute.size(C)
    want = [ext(A, ext(T, i % nt) + C(i // nt)) for i in range(nt * nc)]

    def check(R):
        return any_size(R) == nt * nc and [R(i) for i in range(nt * nc)] == want
    return check


def composition_reference(A, B):
    n = wb.size(B)
    want = [ext(A, B(i)) for i in range(n)]

    def check(R):
        return any_size(R) == n and [R(i) for i in range(n)] == want
    return check


def product_reference(A, B):
    """logical_product(A, B) by definition: (A, complement(A, size(A)*cosize(B)) o B)."""
    C = pycute.complement(pylayout(A), wb.size(A) * wb.cosize(B))
    na, nb = wb.size(A), wb.size(B)
    want = [A(i % na) + ext((C.shape, C.stride), B(i // na)) for i in range(na * nb)]

    def check(R):
        return any_size(R) == na * nb and [R(i) for i in range(na * nb)] == want
    return check


def pycute_flat_divide(A, T):
    z = pycute.zipped_divide(A, T)
    tile, rest = z[0], z[1]
    return pycute.make_layout(*[tile[i] for i in range(len(tile))], *[rest[i] for i in range(len(rest))])


def pycute_rank_product(A, B, raked):
    """CuTe's blocked/raked product from pycute's logical_product: pad both to one rank, multiply,
    pair like modes ((A_i, B_i) blocked, (B_i, A_i) raked).  CuTe coalesces each pair; that keeps
    the function, which is what we compare."""
    r = max(len(A), len(B))
    pad = [pycute.Layout(1, 0)] * r
    Ap = pycute.make_layout(*[A[i] if i < len(A) else pad[i] for i in range(r)])
    Bp = pycute.make_layout(*[B[i] if i < len(B) else pad[i] for i in range(r)])
    P = pycute.logical_product(Ap, Bp)
    modes = [pycute.make_layout(P[1][i], P[0][i]) if raked else pycute.make_layout(P[0][i], P[1][i]) for i in range(r)]
    return pycute.make_layout(*modes)


def _divides(T):
    return isinstance(T, int) and T or wb.size(T)


def test_divides_agree_with_pycute_on_tilers_that_do_not_divide():
    rng = random.Random(5)
    counts, ragged = {}, 0
    for _ in range(CASES):
        A = random_compact(rng, row_major=rng.random() < 0.4)
        T = random_tiler(rng)
        pA, pT = pylayout(A), pylayout(T)
        ref = divide_reference(A, T)
        outcome = classify(counts, ("logical_divide", A, T), lambda: wb.logical_divide(A, T),
                           lambda: pycute.logical_divide(pA, pT), ref)
        if outcome != "agree":
            continue
        ragged += wb.size(A) % wb.size(T) != 0
        # the zipped/tiled/flat flavours: the same function, the modes regrouped
        for ours, theirs in ((wb.zipped_divide, pycute.zipped_divide), (wb.tiled_divide, pycute.tiled_divide),
                             (wb.flat_divide, pycute_flat_divide)):
            assert same_function(ours(A, T), theirs(pA, pT)), (ours.__name__, A, T)
    assert counts.get("agree", 0) >= CASES // 2 and ragged >= CASES // 4, counts
    assert counts.get("pycute refuses", 0) == 0, counts  # pycute never refuses a divide we answer


BY_MODE_CASES = 60


def test_by_mode_divides_agree_with_pycute_on_tilers_that_do_not_divide():
    rng = random.Random(6)
    counts, ragged = {}, 0
    for _ in range(BY_MODE_CASES):
        A = wb.make_layout(tuple(rng.choice([3, 5, 7, 10, 12, 16, 33]) for _ in range(rng.choice([2, 2, 3]))))
        if wb.size(A) > 2000:
            A = wb.make_layout(A.shape[:2])
        if rng.random() < 0.5:
            A = wb.Layout(A.shape, it.compact_row_major(A.shape))
        T = tuple(rng.choice([None, rng.randint(1, 20), wb.Layout(rng.randint(1, 8), rng.randint(1, 3))])
                  for _ in range(rng.randint(1, wb.rank(A))))
        pT = tuple(pylayout(t) for t in T)
        ops = ((wb.logical_divide, pycute.logical_divide), (wb.zipped_divide, pycute.zipped_divide),
               (wb.tiled_divide, pycute.tiled_divide), (wb.flat_divide, pycute_flat_divide))
        for ours, theirs in ops:
            outcome = classify(counts, (ours.__name__, A, T), lambda: ours(A, T), lambda: theirs(pylayout(A), pT),
                               lambda R: False)  # by-mode divides of compact modes always exist
            assert outcome == "agree", (ours.__name__, A, T, outcome)
        ragged += any(t is not None and A.shape[i] % _divides(t) for i, t in enumerate(T))
    assert counts["agree"] == 4 * BY_MODE_CASES and ragged >= BY_MODE_CASES // 2, (counts, ragged)


def test_products_agree_with_pycute():
    rng = random.Random(7)
    counts = {}
    for _ in range(CASES):
        A = random_injective(rng) if rng.random() < 0.6 else random_compact(rng)
        B = random_any(rng) if rng.random() < 0.2 else random_injective(rng)
        while wb.size(A) * wb.size(B) > 1024:  # keeps the element-by-element pycute evaluation fast
            A, B = random_injective(rng), random_injective(rng)
        pA, pB = pylayout(A), pylayout(B)
        outcome = classify(counts, ("logical_product", A, B), lambda: wb.logical_product(A, B),
                           lambda: pycute.logical_product(pA, pB), product_reference(A, B))
        if outcome != "agree":
            continue
        for raked, ours in ((False, wb.blocked_product), (True, wb.raked_product)):
            assert same_function(ours(A, B), pycute_rank_product(pA, pB, raked)), (ours.__name__, A, B)
        assert same_function(wb.zipped_product(A, B), pycute.zipped_product(pA, pB))
        assert same_function(wb.tiled_product(A, B), pycute.tiled_product(pA, pB))
    assert counts.get("agree", 0) >= CASES // 2, counts


def test_complement_with_arbitrary_cotargets_agrees_with_pycute():
    rng = random.Random(8)
    counts = {}
    for _ in range(CASES):
        A = random_injective(rng) if rng.random() < 0.7 else random_any(rng)
        M = rng.randint(1, 3 * wb.cosize(A) + 5)  # rarely a multiple of what A spans
        pA = pylayout(A)

        def wrong(R):  # what only a non-injective layout can make pycute return: an empty mode
            return any_size(R) != 0

        classify(counts, ("complement", A, M), lambda: wb.complement(A, M), lambda: pycute.complement(pA, M), wrong)
    assert counts.get("agree", 0) >= CASES * 3 // 5, counts


def test_composition_differential_with_refusals_classified():
    rng = random.Random(9)
    counts = {}
    for _ in range(CASES):
        A = random_any(rng) if rng.random() < 0.3 else random_compact(rng, row_major=rng.random() < 0.5)
        B = random_tiler(rng) if rng.random() < 0.5 else random_injective(rng)
        pA, pB = pylayout(A), pylayout(B)
        classify(counts, ("composition", A, B), lambda: wb.composition(A, B), lambda: pycute.composition(pA, pB),
                 composition_reference(A, B))
    assert counts.get("agree", 0) >= CASES // 2 and counts.get("pycute wrong", 0) >= 1, counts


def test_by_mode_tilers_agree_with_pycute():
    A = wb.parse_layout("(9,(4,8)):(59,(13,1))")
    tiler = (wb.parse_layout("3:3"), wb.parse_layout("(2,4):(1,8)"))
    ptiler = (pycute.Layout(3, 3), pycute.Layout((2, 4), (1, 8)))
    C = wb.Layout((9, (4, 8)), (32, (1, 4)))  # products need A's complement: a compact A
    for ours, theirs in [
        (wb.logical_divide(A, tiler), pycute.logical_divide(to_py(A), ptiler)),
        (wb.zipped_divide(A, tiler), pycute.zipped_divide(to_py(A), ptiler)),
        (wb.tiled_divide(A, tiler), pycute.tiled_divide(to_py(A), ptiler)),
        (wb.logical_product(C, tiler), pycute.logical_product(to_py(C), ptiler)),
        (wb.zipped_product(C, tiler), pycute.zipped_product(to_py(C), ptiler)),
    ]:
        n = wb.size(ours)
        assert n == pycute.size(theirs) and fn(ours, n) == fn(theirs, n)


def test_pycute_left_inverse_is_wrong_for_4x6_with_stride_6():
    # pycute 4.2: left_inverse((4,6):(1,6)) does not invert the layout; ours does.
    A = wb.parse_layout("(4,6):(1,6)")
    theirs = pycute.left_inverse(to_py(A))
    assert [theirs(A(i)) for i in range(24)] != list(range(24))
    ours = wb.left_inverse(A)
    assert [ours(A(i)) for i in range(24)] == list(range(24))


def test_swizzle_agrees_with_pycute():
    for b, m, s in [(3, 4, 3), (2, 0, -2), (1, 3, 5), (3, 3, 3)]:
        ours, theirs = wb.Swizzle(b, m, s), pycute.Swizzle(b, m, s)
        assert [ours(x) for x in range(4096)] == [theirs(x) for x in range(4096)]


def test_benchmark_suite_pairs_are_valid_and_agree():
    from workbench.bench.algebra import make_suite

    suite = make_suite(40, seed=7)  # make_suite itself compares every pair with pycute as functions
    assert len(suite) == 40 and len(set(map(repr, suite))) > 30
