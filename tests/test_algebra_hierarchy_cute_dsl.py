"""The layout algebra's printed results against CuTe DSL 4.8.1's, on a generated suite (2,040 cases over every
algebra function: composition, complement, coalesce, the four divides (dividing and non-dividing tilers), the six
products, both inverses, make_layout_tv, tile_to_shape, make_ordered_layout and make_layout's compact strides), traced
on the CPU in one function.

Each case is one of (and nothing else; the counts are printed with -s):
* ``same``: printed identically (shape and stride hierarchy);
* ``both_refuse``; ``ours_refuse``: a documented refusal (not injective, no inverse, a tiler that does not
  divide a mode it must divide) where CuTe returns a wrong function: for complement, composition and the divides
  the message says what CuTe returns, exactly as CuTe DSL prints it (``ours_refuse_says_cutes``); where CuTe's
  unchecked result is right after all, the workbench returns it; ``cute_refuse``: CuTe DSL raises, the workbench
  answers.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

import workbench as wb

cute = pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed")
cutlass = pytest.importorskip("cutlass")

FUNCS = ["composition", "complement", "coalesce", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
         "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
         "right_inverse", "left_inverse", "make_layout_tv", "make_layout", "make_ordered_layout", "tile_to_shape"]


class Raw:
    """An argument that is not a layout (a shape, an order): passed as it is to both libraries."""

    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return repr(self.v)


def _layout(rng, maxr=3, nest=True):
    r = rng.randint(1, maxr)
    shape, stride = [], []
    for _ in range(r):
        if nest and rng.random() < 0.25:
            shape.append(tuple(rng.choice([1, 2, 3, 4]) for _ in range(2)))
            stride.append(tuple(rng.choice([0, 1, 2, 4, 8, 16]) for _ in range(2)))
        else:
            shape.append(rng.choice([1, 2, 3, 4, 6, 8]))
            stride.append(rng.choice([0, 1, 2, 3, 4, 8, 12, 16, 32]))
    if r == 1 and rng.random() < .5:
        return shape[0], stride[0]
    return tuple(shape), tuple(stride)


def _compact(rng, maxr=2):
    r = rng.randint(1, maxr)
    shape = tuple(rng.choice([1, 2, 3, 4]) for _ in range(r))
    perm = list(range(r))
    rng.shuffle(perm)
    stride, acc = [0] * r, 1
    for i in perm:
        stride[i], acc = acc, acc * shape[i]
    return (shape[0], stride[0]) if r == 1 else (shape, tuple(stride))


def cases(n=2040, seed=19):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        f = FUNCS[i % len(FUNCS)]
        if f in ("coalesce", "right_inverse", "left_inverse"):
            out.append((f, [_layout(rng)]))
        elif f == "make_layout":
            out.append((f, [_layout(rng)[0]]))
        elif f == "make_ordered_layout":
            shape = _layout(rng, 3, False)[0]
            shape = shape if type(shape) is tuple else (shape,)
            order = list(range(len(shape)))
            rng.shuffle(order)
            out.append((f, [Raw(shape), Raw(tuple(order))]))
        elif f == "tile_to_shape":
            block = _compact(rng)
            bs = block[0] if type(block[0]) is tuple else (block[0],)
            r = len(bs) + rng.randint(0, 1)
            trg = tuple((bs[i] if i < len(bs) else 1) * rng.randint(1, 3) for i in range(r))
            order = list(range(r))
            rng.shuffle(order)
            out.append((f, [block, Raw(trg), Raw(tuple(order))]))
        elif f == "complement":
            out.append((f, [_layout(rng), rng.choice([None, 16, 24, 64, 96, 128])]))
        elif f == "composition":
            out.append((f, [_layout(rng), _layout(rng, 2)]))
        elif f.endswith("divide"):
            out.append((f, [_layout(rng), _layout(rng, 1, False) if rng.random() < .5 else _compact(rng)]))
        else:
            out.append((f, [_compact(rng), _compact(rng)]))
    return out


CASES = cases()


def _fmt(r):
    return "(" + ", ".join(str(e) for e in r) + ")" if isinstance(r, tuple) else str(r)


def _args(f, args, mk):
    if f == "make_layout":
        return args
    return [x.v if isinstance(x, Raw) else mk(*x) if isinstance(x, tuple) else x for x in args if x is not None]


@cute.jit
def _trace(sink: cutlass.Constexpr):
    for f, args in CASES:
        try:
            sink.append(_fmt(getattr(cute, f)(*_args(f, args, lambda s, d: cute.make_layout(s, stride=d)))))
        except Exception as e:  # noqa: BLE001 - CuTe DSL raises MLIRError, ValueError, TypeError ...
            sink.append("ERR " + type(e).__name__)


def _injective(L):
    offs = list(L.offsets())
    return len(set(offs)) == len(offs)


def _L(x):
    return wb.make_layout(x[0], stride=x[1])


# where we refuse, CuTe's printed answer is checked to be wrong by the definition (A extends along its last mode)
_WRONG = {
    "composition": lambda a, R: R.size != _L(a[1]).size or
    [R(i) for i in range(R.size)] != [_L(a[0])(_L(a[1])(i)) for i in range(R.size)],
    "left_inverse": lambda a, R: any(R(_L(a[0])(i)) != i for i in range(_L(a[0]).size)),
    "complement": lambda a, R: 0 in wb.flatten(R.shape) or not _injective(wb.make_layout(_L(a[0]), R)),
}


def _ours(f, args):
    try:
        return getattr(wb, f)(*_args(f, args, lambda s, d: wb.make_layout(s, stride=d)))
    except (ValueError, TypeError) as e:
        return e


def test_algebra_prints_as_cute_dsl_4_8_1():
    theirs = []
    _trace(theirs)
    assert len(theirs) == len(CASES) >= 2000
    kinds, other = Counter(), []
    for (f, args), t in zip(CASES, theirs):
        o = _ours(f, args)
        if isinstance(o, Exception):
            kinds["both_refuse" if t.startswith("ERR") else "ours_refuse"] += 1
            if not t.startswith("ERR") and f"computes {t} here without checking" in str(o):
                kinds["ours_refuse_says_cutes"] += 1   # the refusal says what CuTe would return
            if not t.startswith("ERR") and f in _WRONG:
                assert _WRONG[f](args, wb.parse_layout(t)), (f, args, t, "CuTe's answer is right: we should give it")
                kinds["cute_checked_wrong"] += 1
            continue
        o = _fmt(o)
        if t.startswith("ERR"):
            kinds["cute_refuse"] += 1
        elif o == t:
            kinds["same"] += 1
        else:
            other.append(f"{f}{tuple(args)}: CuTe DSL {t}, ours {o}")
    print(dict(kinds))
    assert not other, f"{len(other)} differences:\n" + "\n".join(other[:30])
    assert kinds["same"] >= 1750   # 1757 of 2040 with this seed (CuTe DSL 4.8.1)
    assert kinds["ours_refuse_says_cutes"] >= 70   # 73 of 123: complement, composition and the divides
    assert kinds["cute_checked_wrong"] >= 85       # 91: composition, left_inverse, complement refusals: CuTe wrong


# -- generated families: the classes a peer's suite found wrong or refused, compared with CuTe DSL -------------------
# Arguments are encoded once and built for both libraries: ("L", shape, stride) a layout whose stride leaves are ints or
# ("E", path, scale) basis strides; ("T", items) a tuple tiler; ("S", shape) a shape; ints and None as they are.

def _rand_layout(rng, maxr=4, nest=.3, zero=True):
    r = rng.randint(1, maxr)
    shp, std = [], []
    strides = [1, 2, 3, 4, 6, 8, 16, 24, 32] + ([0] if zero else [])
    for _ in range(r):
        if rng.random() < nest:
            k = rng.randint(2, 3)
            shp.append(tuple(rng.choice([1, 2, 3, 4]) for _ in range(k)))
            std.append(tuple(rng.choice(strides) for _ in range(k)))
        else:
            shp.append(rng.choice([1, 2, 3, 4, 6, 8]))
            std.append(rng.choice(strides))
    if r == 1 and rng.random() < .5:
        return ("L", shp[0], std[0])
    return ("L", tuple(shp), tuple(std))


def _rand_tiler_for(rng, shape, depth=0):
    """A tiler element for a mode of this shape: None, an int, a layout, or (for a tuple mode) a tuple tiler."""
    x = rng.random()
    if type(shape) is tuple and depth < 2 and x < .3:
        k = rng.randint(1, len(shape))
        return ("T", tuple(_rand_tiler_for(rng, s, depth + 1) for s in shape[:k]))
    if x < .45:
        return None
    if x < .7:
        return rng.choice([1, 2, 3, 4, 6, 8])
    return _rand_tile(rng)


def _rand_tile(rng):
    """A tile layout: rank 1, or compact (a non-injective tile has no complement: CuTe DSL 4.8.1 dies dividing by 0)."""
    return ("L", *(_layout(rng, 1, False) if rng.random() < .5 else _compact(rng)))


def _rand_basis_layout(rng, A):
    """A right operand with basis strides into A's modes (nested paths into A's tuple modes); an int leaf now and then."""
    ashape = A[1] if type(A[1]) is tuple else (A[1],)
    r = rng.randint(1, 3)
    shp, std = [], []
    for _ in range(r):
        m = rng.randrange(len(ashape))
        if type(ashape[m]) is tuple and rng.random() < .5:
            path = (m, rng.randrange(len(ashape[m])))
        else:
            path = m
        shp.append(rng.choice([1, 2, 3, 4]))
        std.append(1 if rng.random() < .1 else ("E", path, rng.choice([1, 1, 2, 3, 4])))
    return ("L", tuple(shp), tuple(std)) if r > 1 else ("L", shp[0], std[0])


def _rand_injective(rng, maxr=3):
    """An injective layout with gaps between its modes (a complement exists), modes in a random order, nested now
    and then; a gap that is not a multiple of the span below it (no complement) one time in ten."""
    r = rng.randint(1, maxr)
    shp = [rng.choice([1, 2, 3, 4, 8]) for _ in range(r)]
    std, cur = [0] * r, 1
    order = list(range(r))
    rng.shuffle(order)
    for i in order:
        std[i] = cur * rng.choice([1, 1, 2, 3]) + (1 if rng.random() < .1 else 0)
        cur = std[i] * shp[i]
    if r == 3 and rng.random() < .3:
        return ("L", (shp[0], (shp[1], shp[2])), (std[0], (std[1], std[2])))
    return ("L", tuple(shp), tuple(std)) if r > 1 or rng.random() < .5 else ("L", shp[0], std[0])


def _rand_shape(rng):
    r = rng.randint(1, 3)
    s = tuple((rng.choice([2, 3, 4]), rng.choice([2, 8])) if rng.random() < .2 else rng.choice([1, 2, 3, 4, 6, 8, 16])
              for _ in range(r))
    return s


FAMILY_FUNCS = {"tuple_tiler": ["composition", "composition", "logical_divide", "zipped_divide", "tiled_divide",
                                "flat_divide", "logical_product"],   # CuTe DSL refuses zipped_product by a tuple
                "shape_cotarget": ["complement"], "basis": ["composition"]}


def family_cases(n=1200, seed=35):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fam = ("tuple_tiler", "tuple_tiler", "shape_cotarget", "basis")[i % 4]
        f = rng.choice(FAMILY_FUNCS[fam])
        if fam == "tuple_tiler":
            A = _rand_layout(rng)
            ashape = A[1] if type(A[1]) is tuple else (A[1],)
            k = rng.randint(1, len(ashape))
            T = ("T", tuple(_rand_tiler_for(rng, s) for s in ashape[:k]))
            if f.endswith("product"):   # compact operands: CuTe DSL 4.8.1 dies on an int tiler mode or a
                A = ("L", *_compact(rng, 3))      # complement of a non-injective layout
                ashape = A[1] if type(A[1]) is tuple else (A[1],)
                k = rng.randint(1, len(ashape))
                T = ("T", tuple(("L", *_compact(rng)) for _ in ashape[:k]))
            out.append((fam, f, [A, T]))
        elif fam == "shape_cotarget":
            out.append((fam, f, [_rand_injective(rng), ("S", _rand_shape(rng))]))
        else:
            A = _rand_layout(rng, 3, .4, zero=False)
            out.append((fam, f, [A, _rand_basis_layout(rng, A)]))
    return out


FAMILY_CASES = family_cases()


def _build(x, lib):
    """An encoded argument as a CuTe DSL (lib=cute) or workbench (lib=wb) object."""
    if type(x) is tuple and x and x[0] == "L":
        def leaf(d):
            if type(d) is tuple and d and d[0] == "E":
                return lib.E(d[1]) * d[2] if lib is cute else wb.E(d[1], d[2])
            if type(d) is tuple:
                return tuple(leaf(e) for e in d)
            return d
        return lib.make_layout(x[1], stride=leaf(x[2]))
    if type(x) is tuple and x and x[0] == "T":
        return tuple(_build(e, lib) for e in x[1])
    if type(x) is tuple and x and x[0] == "S":
        return x[1]
    return x


@cute.jit
def _trace_families(sink: cutlass.Constexpr):
    for _fam, f, args in FAMILY_CASES:
        try:
            sink.append(_fmt(getattr(cute, f)(*[_build(a, cute) for a in args])))
        except Exception as e:  # noqa: BLE001 - CuTe DSL raises MLIRError, ValueError, TypeError ...
            sink.append("ERR " + type(e).__name__)


def _eval_at(L, c):
    """L at an index or at a (possibly shorter, nested) coordinate, missing entries 0: A(B(i)) for a basis B."""
    if type(c) is wb.E:
        c = c.as_tuple()
    if not isinstance(c, tuple):
        return L(c)
    modes = list(L) if type(L.shape) is tuple else [L]
    return sum(_eval_at(m, c[k]) for k, m in enumerate(modes) if k < len(c))


def _composition_wrong(A, B, R):
    """CuTe's printed R is not A o B by the definition, mode by mode for a tiler (A extends along its last mode)."""
    if isinstance(B, tuple):
        ms = list(A) if type(A.shape) is tuple else [A]
        rs = list(R) if type(R.shape) is tuple else [R]
        return len(rs) != len(B) or any(_composition_wrong(m, b, r) for m, b, r in zip(ms, B, rs))
    if B is None:
        return R != A
    B = wb.make_layout(B) if type(B) is int else B
    if R.size != B.size:
        return True
    leaves = wb.flatten(B.stride) if type(B.stride) is tuple else (B.stride,)
    if len({type(d) for d in leaves}) > 1:   # int and basis leaves mixed: B(i) is no coordinate; leaf by leaf
        return any(
            r(j) != _eval_at(A, j * d) for r, (s, d) in zip(_leaf_modes(R, B), zip(wb.flatten(B.shape), leaves))
            for j in range(s))
    return any(R(i) != _eval_at(A, B(i)) for i in range(B.size))


def _product_wrong(A, B, R):
    """CuTe's printed logical_product R is not (A, complement(A, size(A)*cosize(B)) o B), mode by mode for a tiler."""
    if isinstance(B, tuple):
        ms, rs = list(A), list(R)
        return any(_product_wrong(m, b, r) for m, b, r in zip(ms, B, rs))
    R1, Astar = R[1], wb.complement(A, A.size * B.cosize)
    return R1.size != B.size or any(R1(i) != Astar(B(i)) for i in range(B.size))


_FAMILY_WRONG = {"composition": _composition_wrong, "logical_product": _product_wrong,
                 "complement": lambda A, M, R: 0 in wb.flatten(R.shape) or not _injective(wb.make_layout(A, R))}


def _leaf_modes(R, B):
    """R's sub-layouts at B's leaves (R is congruent with B above its leaves)."""
    if type(B.shape) is not tuple:
        return [R]
    return [x for r, b in zip(R, B) for x in _leaf_modes(r, b)]


@pytest.mark.parametrize("family", ["tuple_tiler", "shape_cotarget", "basis"])
def test_generated_families_as_cute_dsl(family):
    """Tuple tilers of every rank (fewer modes than the layout, None, nested), shape cotargets and basis-strided right
    operands, generated: no answer differs from CuTe DSL's; a refusal only where CuTe's answer is wrong by the
    definition (composition) or where CuTe refuses too."""
    if not _FAMILY_TRACE:
        _trace_families(_FAMILY_TRACE)
    kinds, other = Counter(), []
    for (fam, f, args), t in zip(FAMILY_CASES, _FAMILY_TRACE):
        if fam != family:
            continue
        try:
            o = _fmt(getattr(wb, f)(*[_build(a, wb) for a in args]))
        except (ValueError, TypeError) as e:
            if t.startswith("ERR"):
                kinds["both_refuse"] += 1
            elif f in _FAMILY_WRONG and _FAMILY_WRONG[f](*[_build(a, wb) for a in args], wb.parse_layout(t)):
                kinds["ours_refuse_cute_wrong"] += 1
            elif "without checking" in str(e) and f"computes {t} " in str(e) or "not A o (T, T*)" in str(e):
                kinds["ours_refuse_says_cutes"] += 1   # a divide whose CuTe answer is not A o (T, T*)
            else:
                other.append(f"{f}{tuple(args)}: CuTe DSL {t}, ours refuses: {e}")
            continue
        if t.startswith("ERR"):
            kinds["cute_refuse"] += 1
        elif o == t:
            kinds["same"] += 1
        elif family == "basis" and _unit_strides_zeroed(o) == _unit_strides_zeroed(t):
            # an extent-1 mode's stride is never read; CuTe DSL's depends on B's other leaves ((4,1):(48,16) where
            # 1:1@0 alone gives 1:4), ours on that leaf only
            kinds["same_but_extent1_strides"] += 1
        else:
            other.append(f"{f}{tuple(args)}: CuTe DSL {t}, ours {o}")
    print(family, dict(kinds))
    assert not other, f"{len(other)} differences:\n" + "\n".join(other[:30])
    assert kinds["same"] >= 0.6 * sum(kinds.values())


_FAMILY_TRACE: list = []


def _unit_strides_zeroed(text):
    L = wb.parse_layout(text)

    def go(s, d):
        if type(s) is tuple:
            return tuple(go(a, b) for a, b in zip(s, d))
        return 0 if s == 1 else d
    return str(wb.make_layout(L.shape, stride=go(L.shape, L.stride)))


# -- generated: nullspace, recast_layout (swizzles included), inverses of basis-strided layouts, coalesce of a swizzled
# layout, against CuTe DSL 4.8.1.  Encoded as (op, args): ("W", b, m, s, layout) a swizzled layout.
def _basis_only(rng):
    r = rng.randint(1, 3)
    shp = tuple(rng.choice([1, 2, 3, 4, 5]) for _ in range(r))
    std = tuple(0 if rng.random() < .1 else ("E", rng.randrange(2), rng.choice([1, 1, 2, 4])) for _ in range(r))
    return ("L", shp, std) if r > 1 else ("L", shp[0], std[0])


def more_cases(n=400, seed=36):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        f = ("nullspace", "recast_layout", "recast_layout", "right_inverse", "left_inverse", "coalesce")[i % 6]
        if f == "nullspace":
            out.append((f, [_rand_layout(rng, 3, .3)]))
        elif f == "recast_layout":
            new, old = rng.choice([(16, 8), (32, 16), (8, 16), (16, 32), (64, 16), (128, 16), (8, 32), (32, 8)])
            if rng.random() < .3:
                r = 1 << rng.randint(3, 6)
                lay = ("W", rng.randint(1, 3), rng.randint(2, 4), 3, ("L", (8, r), (r, 1)))
            else:
                lay = ("L", *_compact(rng, 3))
            out.append((f, [new, old, lay]))
        elif f.endswith("inverse"):
            out.append((f, [_basis_only(rng)]))
        else:
            out.append((f, [("W", rng.randint(1, 3), rng.randint(0, 3), 3, ("L", *_compact(rng, 3)))]))
    return out


MORE_CASES = more_cases()


def _injective_values(L):
    vals = [L(i) for i in range(L.size)]
    return len({repr(v) for v in vals}) == len(vals)


def _build_more(x, lib):
    if type(x) is tuple and x and x[0] == "W":
        inner = lib.make_swizzle(*x[1:4])
        return lib.make_composed_layout(inner, 0, _build(x[4], lib))
    return _build(x, lib)


@cute.jit
def _trace_more(sink: cutlass.Constexpr):
    for f, args in MORE_CASES:
        try:
            sink.append(_fmt(getattr(cute, f)(*[_build_more(a, cute) for a in args])))
        except Exception as e:  # noqa: BLE001 - CuTe DSL raises MLIRError, ValueError, TypeError ...
            sink.append("ERR " + type(e).__name__)


def test_nullspace_recast_basis_inverses_and_swizzled_coalesce_as_cute_dsl():
    theirs = []
    _trace_more(theirs)
    kinds, other = Counter(), []
    for (f, args), t in zip(MORE_CASES, theirs):
        try:
            o = _fmt(getattr(wb, f)(*[_build_more(a, wb) for a in args]))
        except (ValueError, TypeError) as e:
            if t.startswith("ERR"):
                kinds["both_refuse"] += 1
            elif f == "recast_layout" and ("do not divide" in str(e) or "smaller than one new element" in str(e)):
                kinds["ours_refuse_cute_rounds"] += 1   # CuTe rounds a stride (or a swizzle base) into a wrong layout
            elif f == "left_inverse" and not _injective_values(_build(args[0], wb)):
                kinds["ours_refuse_not_injective"] += 1   # no left inverse exists; CuTe returns a non-inverse
            else:
                other.append(f"{f}{tuple(args)}: CuTe DSL {t}, ours refuses: {e}")
            continue
        if t.startswith("ERR"):
            kinds["cute_refuse"] += 1
        elif o == t:
            kinds[f"same_{f}"] += 1
        else:
            other.append(f"{f}{tuple(args)}: CuTe DSL {t}, ours {o}")
    print(dict(kinds))
    assert not other, f"{len(other)} differences:\n" + "\n".join(other[:30])
    for f in ("nullspace", "recast_layout", "right_inverse", "left_inverse", "coalesce"):
        assert kinds[f"same_{f}"] >= 30, f
