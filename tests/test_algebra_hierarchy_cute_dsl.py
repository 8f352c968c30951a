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
