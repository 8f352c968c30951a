"""pycute's own unit-test cases (NVIDIA/cutlass ``test/python/pycute``), fed to the workbench core.

The inputs and expected values come from these files (read 2026-11-22):
* test_coalesce / test_complement / test_composition / test_left_inverse / test_right_inverse /
  test_int_tuple / test_typing: cutlass main, commit 7107b055 (v4.3.5 tree); test_composition's
  last two cases ("pre-coalesced LHS", "mid-layout truncation") from the newer blob 5744c02a.
* test_product.py: commit e349f0d8 ("fix(pycute): logical_product with an int tiler computed
  logical_divide"); test_logical_product.py (blob f7aed48b) and test_swizzle.py (blob 6a79799d).

pycute checks post-conditions rather than exact layouts, so we check the same post-conditions and,
where pycute states a layout, the same function (values at every index); where the layout printed
by pycute is also exactly what CuTe prints we compare the string too.  Two pycute results are wrong
and are tested here as such: ``left_inverse((4,6):(1,6))`` (see test_pycute_diff.py) and, in the
pycute of nvidia-cutlass 4.2 installed here, ``logical_product(A, <int>)`` computes a logical_divide
(the bug commit e349f0d8 fixes; its expected values are what we check).
"""

import pytest

import workbench as wb
from workbench.layout import inttuple as it

L = wb.make_layout


def values(layout, n=None):
    return [layout(i) for i in range(wb.size(layout) if n is None else n)]


# -- test_coalesce ------------------------------------------------------------------------------
COALESCE = [
    ((1,), (0,)), ((1,), (1,)), ((2, 4), None), ((2, 4, 6), None), ((2, 4, 6), (1, 6, 2)),
    ((2, 1, 6), (1, 7, 2)), ((2, 1, 6), (4, 7, 8)), ((2, (4, 6)), None), ((2, 4), (4, 1)),
    ((2, 4, 6), (24, 6, 1)), ((2, 1, 3), (2, 4, 4)), (((2, 2), (2, 2)), ((1, 4), (8, 32))),
]


def _mk(shape, stride):
    if len(shape) == 1 and stride is not None and len(stride) == 1:
        return L(shape[0], stride=stride[0])
    return L(shape, stride=stride)


@pytest.mark.parametrize("shape,stride", COALESCE)
def test_coalesce_cases(shape, stride):
    A = _mk(shape, stride)
    R = wb.coalesce(A)
    assert wb.size(R) == wb.size(A)
    assert values(R) == values(A)
    assert R.depth <= 1
    # no two adjacent modes that could still merge, no size-1 mode left (unless the layout is 1:0)
    fs, fd = it.flatten(R.shape), it.flatten(R.stride)
    assert all(s1 * d1 != d2 for s1, d1, d2 in zip(fs, fd, fd[1:])) and (1 not in fs or R == L(1, stride=0))


def test_coalesce_known_results():
    # the strings CuTe DSL 4.8.1 prints for these cases (checked when this test was written)
    assert str(wb.coalesce(L((2, 4, 6), stride=(24, 6, 1)))) == "(2,4,6):(24,6,1)"
    assert str(wb.coalesce(L(((2, 2), (2, 2)), stride=((1, 4), (8, 32))))) == "(2,4,2):(1,4,32)"
    assert str(wb.coalesce(L((2, 4, 6)))) == "48:1"
    assert str(wb.coalesce(L((2, 1, 3), stride=(2, 4, 4)))) == "6:2"


# -- test_complement ----------------------------------------------------------------------------
COMPLEMENT = [
    ((1,), (0,)), ((1,), (1,)), ((4,), (0,)), ((2, 4), (1, 2)), ((2, 3), (1, 2)), ((2, 4), (1, 4)),
    ((2, 4, 8), (8, 1, 64)), (((2, 2), (2, 2)), ((1, 4), (8, 32))), ((2, (3, 4)), (3, (1, 6))),
    ((4, 6), (1, 6)), ((4, 10), (1, 10)),
]


@pytest.mark.parametrize("shape,stride", COMPLEMENT)
@pytest.mark.parametrize("cotarget", [None, 1, "cosize*3"])
def test_complement_cases_have_disjoint_codomains(shape, stride, cotarget):
    A = _mk(shape, stride)
    M = 3 * wb.cosize(A) if cotarget == "cosize*3" else cotarget
    R = wb.complement(A) if M is None else wb.complement(A, M)
    a_img = set(values(A))
    for r in values(R):  # pycute's post-condition: the codomains meet only at 0
        assert r == 0 or r not in a_img, (A, R, r)
    # and CuTe's: R is ordered (strides increase) and, with A, reaches the cotarget
    fd = [d for s, d in zip(it.flatten(R.shape), it.flatten(R.stride)) if s != 1]
    assert fd == sorted(fd) and all(d > 0 for d in fd)
    want = wb.cosize(A) if M is None else M
    assert wb.cosize(wb.make_layout(tuple(x.shape for x in (A, R)), stride=tuple(x.stride for x in (A, R)))) >= want \
        or all(d == 0 for d in it.flatten(A.stride))


def test_complement_known_results():
    # the strings CuTe DSL 4.8.1 prints for these cases
    assert str(wb.complement(L((2, 4), stride=(1, 4)), 32)) == "(2,2):(2,16)"
    assert str(wb.complement(L((2, 4, 8), stride=(8, 1, 64)), 1024)) == "(2,4,2):(4,16,512)"
    assert str(wb.complement(L((4, 6), stride=(1, 6)), 34)) == "1:0"  # the gap 6 // 4 rounds down, as CuTe
    assert str(wb.complement(L((4, 10), stride=(1, 10)), 40)) == "2:4"
    assert str(wb.complement(L(4, stride=0), 4)) == "4:1"


# -- test_composition ---------------------------------------------------------------------------
def _l(s, d=None):
    return L(s) if d is None else L(s, stride=d)


COMPOSITION = [
    (_l(1, 0), _l(1, 0)), (_l(1, 0), _l(1, 1)), (_l(1, 1), _l(1, 0)), (_l(1, 1), _l(1, 1)),
    (_l(4), _l(4)), (_l(4, 2), _l(4)), (_l(4), _l(4, 2)), (_l(4, 0), _l(4)), (_l(4), _l(4, 0)),
    (_l(1, 0), _l(4)), (_l(4), _l(1, 0)), (_l(4), _l(2)), (_l(4, 2), _l(2)), (_l(4), _l(2, 2)),
    (_l(4, 2), _l(2, 2)), (_l(12), _l((4, 3))), (_l(12, 2), _l((4, 3))), (_l(12), _l((4, 3), (3, 1))),
    (_l(12, 2), _l((4, 3), (3, 1))), (_l(12), _l((2, 3), (2, 4))), (_l((4, 3)), _l((4, 3))),
    (_l((4, 3)), _l(12)), (_l((4, 3)), _l(6, 2)), (_l((4, 3)), _l((6, 2), (2, 1))),
    (_l((4, 3), (3, 1)), _l((4, 3))), (_l((4, 3), (3, 1)), _l(12)), (_l((4, 3), (3, 1)), _l(6, 2)),
    (_l((4, 3), (3, 1)), _l((6, 2), (2, 1))), (_l((8, 8)), _l(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))),
    (_l((8, 8), (8, 1)), _l(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))),
    (_l(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32))), _l(8, 4)), (_l((4, 2), (1, 16)), _l((4, 2), (2, 1))),
    (_l((2, 2), (2, 1)), _l((2, 2), (2, 1))), (_l((4, 8, 2)), _l((2, 2, 2), (2, 8, 1))),
    (_l((4, 8, 2), (2, 8, 1)), _l((2, 2, 2), (1, 8, 2))), (_l((4, 8, 2), (2, 8, 1)), _l((4, 2, 2), (2, 8, 1))),
    (_l((4, 6, 8), (1, 4, 7)), _l(6, 1)),  # pre-coalesced left operand
    (_l((4, 6, 8, 10), (2, 3, 5, 7)), _l(6, 12)),  # truncation in the middle of the left operand
]


def refines(shape, profile):
    """CuTe's compatible(profile, shape): shape splits each leaf of profile into modes of the same size."""
    if type(profile) is not tuple:
        return wb.product(shape) == profile
    return type(shape) is tuple and len(shape) == len(profile) and all(map(refines, shape, profile))


@pytest.mark.parametrize("A,B", COMPOSITION, ids=[f"{a}o{b}" for a, b in COMPOSITION])
def test_composition_cases(A, B):
    R = wb.composition(A, B)
    # pycute's post-condition R(i) == A(B(i)) on R's domain; ours is stronger: R has B's size and
    # profile, so the identity holds on all of B's domain
    assert wb.size(R) == wb.size(B)
    assert refines(R.shape, B.shape)
    assert values(R) == [A(B(i)) for i in range(wb.size(B))]


def test_composition_known_results():  # as CuTe DSL 4.8.1 prints them
    assert str(wb.composition(_l((4, 6, 8, 10), (2, 3, 5, 7)), _l(6, 12))) == "(2,3):(9,5)"
    assert str(wb.composition(_l((4, 6, 8), (1, 4, 7)), _l(6, 1))) == "6:1"
    assert str(wb.composition(_l((4, 3), (3, 1)), _l((6, 2), (2, 1)))) == "((2,3),2):((6,1),3)"


# -- test_left_inverse / test_right_inverse -----------------------------------------------------
INVERSE = [
    (_l(1, 0), True), (_l((1, 1), (0, 0)), True), (_l((3, 7), (0, 0)), False), (_l(1, 1), True),
    (_l(4, 0), False), (_l(4, 1), True), (_l(4, 2), True), (_l((2, 4), (0, 2)), False),
    (_l((8, 4), (1, 8)), True), (_l((8, 4), (4, 1)), True), (_l((2, 4, 6), (1, 2, 8)), True),
    (_l((2, 4, 6), (4, 1, 8)), True), (_l((4, 2), (1, 16)), True),
]


@pytest.mark.parametrize("A,injective", INVERSE, ids=[str(a) for a, _ in INVERSE])
def test_inverse_cases(A, injective):
    R = wb.right_inverse(A)
    assert [A(R(i)) for i in range(wb.size(R))] == list(range(wb.size(R)))
    if injective:  # pycute's left_inverse cases are the injective ones
        Li = wb.left_inverse(A)
        assert [Li(A(i)) for i in range(wb.size(A))] == list(range(wb.size(A)))
    else:  # no left inverse exists: we refuse rather than return one that is wrong
        with pytest.raises(ValueError, match="not injective"):
            wb.left_inverse(A)


def test_inverse_known_results():  # as CuTe DSL 4.8.1 prints them
    assert str(wb.right_inverse(_l((8, 4), (4, 1)))) == "(4,8):(8,1)"
    assert str(wb.right_inverse(_l((4, 2), (1, 16)))) == "4:1"
    assert str(wb.right_inverse(_l(4, 2))) == "1:0"
    assert str(wb.right_inverse(_l((2, 4, 6), (4, 1, 8)))) == "(4,2,6):(2,1,8)"
    assert str(wb.left_inverse(_l((2, 4, 6), (4, 1, 8)))) == "(4,2,6):(2,1,8)"
    assert str(wb.left_inverse(_l((4, 2), (1, 16)))) == "(16,2):(1,4)"


# -- test_int_tuple -----------------------------------------------------------------------------
def test_int_tuple_cases():
    assert wb.product(2) == 2 and wb.product((3, 2)) == 6 and wb.product(wb.product(((2, 3), 4))) == 24
    assert it.inner_product(2, 3) == 6 and it.inner_product((1, 2), (3, 2)) == 7
    assert it.inner_product(((2, 3), 4), ((2, 1), 2)) == 15
    assert it.shape_div((3, 4), 6) == (1, 2)
    assert it.shape_div((3, 4), 12) == (1, 1)
    assert it.shape_div((3, 4), 36) == (1, 1)
    assert it.shape_div(((3, 4), 6), 36) == ((1, 1), 2)
    assert it.shape_div((6, (3, 4)), 36) == (1, (1, 2))
    assert it.prefix_product(2) == 1 and it.prefix_product((3, 2)) == (1, 3)
    assert it.prefix_product((3, 2, 4)) == (1, 3, 6)
    assert it.prefix_product(((2, 3), 4)) == ((1, 2), 6)
    assert it.prefix_product(((2, 3), (2, 1, 2), (5, 2, 1))) == ((1, 2), (6, 12, 12), (24, 120, 240))


# -- test_typing: what counts as an integer of the protocol ---------------------------------------
@pytest.mark.parametrize("obj,is_int", [(1, True), (1.0, False), ("hi", False), (False, False)])
def test_typing_cases(obj, is_int):
    assert wb.is_static(obj) is is_int
    if is_int:
        assert wb.size(L(obj)) == obj
    else:  # a float, a string or a bool is not a shape (pycute: not an Integer)
        with pytest.raises(TypeError):
            L(obj)


# -- test_product / test_logical_product --------------------------------------------------------
PRODUCT = [
    (_l(1, 0), _l(1, 0)), (_l(1, 1), _l(1, 0)), (_l(1, 0), _l(1, 1)), (_l(1, 1), _l(1, 1)),
    (_l(3, 1), _l(4, 0)), (_l(3, 0), _l(4, 1)), (_l(3, 0), _l(4, 0)), (_l(3, 2), _l(4, 1)), (_l(3), _l((2, 4))),
    (_l((2, 5), (5, 1)), 4), (_l(3, 2), 4), (_l(4, 1), 3), (_l((4, 8), (1, 4)), 16),
    (_l(((2, 2), (2, 2)), ((1, 4), (8, 32))), 4),
]


@pytest.mark.parametrize("A,B", PRODUCT, ids=[f"{a}x{b}" for a, b in PRODUCT])
def test_logical_product_cases(A, B):
    R = wb.logical_product(A, B)
    # post-conditions of CuTe's logical_product.cpp, as pycute's test states them
    assert wb.rank(R) == 2 and R[0] == A
    Bl = B if isinstance(B, wb.Layout) else L(B)
    assert wb.size(R[1]) == wb.size(Bl) and wb.size(R) == wb.size(A) * wb.size(Bl)
    if not isinstance(B, wb.Layout):  # an int tiler is its Layout spelling
        assert wb.logical_product(A, B) == wb.logical_product(A, L(B))


def test_logical_product_known_results():
    A = _l((2, 5), (5, 1))
    assert wb.logical_product(A, 4) == _l(((2, 5), 4), ((5, 1), 10))
    assert wb.logical_product(A, None) is A
    by_mode = wb.logical_product(A, (4, 2))
    assert wb.size(by_mode) == wb.size(A) * 8
    spelled = (wb.logical_product(A[0], L(4)), wb.logical_product(A[1], L(2)))
    assert it.flatten(by_mode.shape) == it.flatten(tuple(x.shape for x in spelled))
    assert it.flatten(by_mode.stride) == it.flatten(tuple(x.stride for x in spelled))
    assert wb.logical_product(A, (4, 2)) == wb.logical_product(A, (L(4), L(2)))
    for op in (wb.zipped_product, wb.tiled_product):
        assert op(A, 4) == op(A, L(4)) and wb.size(op(A, 4)) == wb.size(A) * 4


def test_installed_pycute_logical_product_with_int_tiler_is_the_fixed_bug():
    pycute = pytest.importorskip("pycute")
    A = pycute.Layout((2, 5), (5, 1))
    theirs = pycute.logical_product(A, 4)
    if pycute.size(theirs) == 40:
        pytest.skip("this pycute has the fix of commit e349f0d8")
    # nvidia-cutlass 4.2's pycute divides instead of multiplying: 10 by 4 in 12 elements, not 40
    assert pycute.size(theirs) == 12 and wb.size(wb.logical_product(_l((2, 5), (5, 1)), 4)) == 40


# -- test_swizzle -------------------------------------------------------------------------------
PROBE = [0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 255, 256]


@pytest.mark.parametrize("bms,expected", [
    ((0, 4, 0), PROBE),
    ((2, 3, -3), [0, 1, 2, 7, 72, 73, 79, 144, 255, 64, 63, 256]),
    ((1, 0, 1), [0, 1, 3, 6, 8, 9, 14, 16, 62, 64, 254, 256]),
    ((3, 2, 3), [0, 1, 2, 7, 8, 9, 15, 16, 59, 72, 227, 256]),
    ((2, 1, -2), [0, 1, 10, 31, 8, 9, 23, 16, 39, 64, 231, 256]),
])
def test_swizzle_cases(bms, expected):
    sw = wb.Swizzle(*bms)
    assert [sw(x) for x in PROBE] == expected
    b, m, s = bms
    assert all(sw(sw(x)) == x for x in range(1 << (b + m + abs(s))))  # every swizzle is an involution
