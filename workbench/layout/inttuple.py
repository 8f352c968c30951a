"""Pure functions over CuTe integer tuples.

An IntTuple is an integer (a static ``int`` or a :class:`~workbench.layout.values.Symbolic`
value: a host ``Dyn`` or a kernel expression) or a tuple of IntTuples.  Each function states the math it implements.
"""

from __future__ import annotations

from functools import reduce

from . import values as _v
from .values import Symbolic

__all__ = [
    "is_int", "is_tuple", "flatten", "product", "rank", "depth", "prefix_product",
    "congruent", "inner_product", "shape_div", "ceil_div",
    "format_inttuple", "unflatten", "slice_modes", "fill_none", "compact_col_major", "compact_row_major", "compact_left",
    "MAX_NESTING", "too_deep", "check_nesting", "has_none",
]


# The functions here recurse on the nesting: an IntTuple nested deeper than this is refused with a ValueError where it
# enters from the user (check_nesting, or a walk over it that happens anyway), rather than exhausting Python's stack.
MAX_NESTING = 32
# Modes at one level of a shape, stride or layout text: DLPack tensors have at most 64, and a rank-100000 layout
# could be built but not printed or walked in reasonable time (issue 20); bounded like the nesting.
MAX_RANK = 1024


def too_deep(what) -> ValueError:
    """The one error for an IntTuple, a coordinate or a tiler nested deeper than MAX_NESTING."""
    return ValueError(f"Expected a {what} nested at most {MAX_NESTING} levels deep, but got one nested at least "
                      f"{MAX_NESTING + 1} levels deep.")


def check_nesting(t, what, depth=0):
    """Return t; raise :func:`too_deep` when t (an IntTuple, a coordinate or a tiler from the user) nests deeper
    than MAX_NESTING.  Called where such a tuple enters a public function that has no walk over it of its own."""
    if isinstance(t, tuple):
        if depth >= MAX_NESTING:
            raise too_deep(what)
        for e in t:
            if isinstance(e, tuple):
                check_nesting(e, what, depth + 1)
    return t


def has_none(t, depth=0) -> bool:
    """True when the coordinate t is None (CuTe's underscore) or holds one.  Every evaluation of a user's tuple
    coordinate walks it here first, so this walk also bounds its nesting (:func:`too_deep`)."""
    if type(t) is not tuple:
        return t is None
    if depth >= MAX_NESTING:
        raise too_deep("coordinate")
    for e in t:
        if e is None or (type(e) is tuple and has_none(e, depth + 1)):
            return True
    return False


def is_int(x) -> bool:
    """An integer leaf: a Python int (not bool) or a symbolic value."""
    return type(x) is int or isinstance(x, Symbolic)


def is_tuple(x) -> bool:
    return type(x) is tuple


def flatten(t) -> tuple:
    """The leaves of t in order: flatten((1,(2,3))) == (1,2,3); flatten(4) == (4,)."""
    if type(t) is not tuple:
        return (t,)
    out = []
    for e in t:
        out.extend(flatten(e)) if type(e) is tuple else out.append(e)
    return tuple(out)


def unflatten(flat, profile):
    """Inverse of flatten: regroup the sequence ``flat`` into the nesting of ``profile``."""
    it = iter(flat)

    def build(p):
        return tuple(build(e) for e in p) if type(p) is tuple else next(it)

    return build(profile)


def product(t):
    """Product of all leaves; product(()) == 1."""
    if type(t) is tuple:
        return reduce(lambda a, b: a * b, (product(e) for e in t), 1)
    return t


def rank(t) -> int:
    """Number of top-level modes: 1 for an integer."""
    return len(t) if type(t) is tuple else 1


def depth(t) -> int:
    """Nesting depth: 0 for an integer, 1 + max depth of the modes for a tuple."""
    if type(t) is tuple:
        return 1 + max((depth(e) for e in t), default=0)
    return 0


def congruent(a, b) -> bool:
    """Same nesting structure (profile)."""
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return type(a) is not tuple and type(b) is not tuple


def prefix_product(t, init=1):
    """Exclusive prefix product, hierarchical: prefix_product((2,(3,4))) == (1,(2,6))."""
    if type(t) is tuple:
        out = []
        for e in t:
            out.append(prefix_product(e, init))
            init = init * product(e)
        return tuple(out)
    return init


compact_col_major = prefix_product


def compact_left(shape, init=1):
    """CuTe's compact column-major stride (``make_layout(shape)``, ``LayoutLeft``): the prefix products, except
    that a static extent-1 mode gets stride 0, as CuTe C++ and CuTe DSL give it (``(2,1,3)`` -> ``(1,0,2)``)."""
    if type(shape) is tuple:
        out = []
        for e in shape:
            out.append(compact_left(e, init))
            init = init * product(e)
        return tuple(out)
    return 0 if type(shape) is int and shape == 1 else init


def compact_row_major(shape, init=1):
    """Row-major compact strides: the last mode is fastest, (2,3,4) -> (12,4,1)."""
    if type(shape) is tuple:
        out = []
        for e in reversed(shape):
            out.append(compact_row_major(e, init))
            init = init * product(e)
        return tuple(reversed(out))
    return init


def inner_product(a, b):
    """Sum of products of corresponding leaves of congruent a, b."""
    if type(a) is tuple:
        return sum((inner_product(x, y) for x, y in zip(a, b)), 0)
    return a * b


def _idx2crd(idx, shape):
    """Colexicographic coordinate of a 1-D index in shape: idx2crd(5,(2,3)) == (1,2) (``wb.idx2crd`` checks
    its arguments' nesting first).

    When idx is already a tuple it must be congruent with shape (each mode converted).
    """
    if type(idx) is tuple:
        if type(shape) is not tuple or len(idx) != len(shape):
            raise ValueError(f"Expected a coordinate congruent with shape {format_inttuple(shape)}, but got {format_inttuple(idx)}.")
        return tuple(_idx2crd(i, s) for i, s in zip(idx, shape))
    if (idx < 0) if type(idx) is int else (not isinstance(idx, Symbolic) and idx < 0):  # ints first: the ABC check is slow
        raise _negative(idx, shape)
    if type(shape) is tuple:
        out = []
        for s in shape:
            n = product(s)
            out.append(_idx2crd(idx % n, s))
            idx = idx // n
        return tuple(out)
    return idx


def _negative(i, shape) -> ValueError:
    # A layout's domain is [0, size) (indices past it extend the last mode; the algebra uses that).  Below 0 C++
    # CuTe truncates the division where Python floors: (4,4):(4,1) at -1 is -4 there and would be 11 here.  An index
    # inside a kernel is an IR expression, unknown until it runs, and is not checked.
    return ValueError(f"Expected an index >= 0 (a layout's domain starts at 0) into shape {format_inttuple(shape)}, "
                      f"but got {i}.")


def _crd2idx(crd, shape, stride=None):
    """Offset of a coordinate: inner product of the (natural) coordinate with stride (CuTe's
    ``crd2idx(crd, shape, stride)``; compact column-major when stride is omitted).  The one
    definition: ``Layout.__call__``, slicing, the views and kernels all come here; ``wb.crd2idx``
    (layout.py) is this walk behind the checks a user's IntTuples get (nesting, congruence).

    crd may be an integer index into any mode (it is split colexicographically over the mode's
    shape) or a tuple congruent with shape down to that level.
    """
    if stride is None:
        stride = prefix_product(shape)
    if isinstance(crd, tuple):  # a tuple, or an identity tensor's coordinate (ArithTuple)
        if type(shape) is not tuple or len(crd) != len(shape):
            raise ValueError(f"Expected a coordinate of rank {rank(shape)} for shape {format_inttuple(shape)}, but got {format_inttuple(crd)}.")
        return sum((_crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride)), 0)
    if (crd < 0) if type(crd) is int else (not isinstance(crd, Symbolic) and crd < 0):  # ints first: the ABC check is slow
        raise _negative(crd, shape)
    return _index_offset(crd, shape, stride) if type(shape) is tuple else crd * stride


def _index_offset(i, shape, stride):
    """crd2idx of an index i >= 0 into a tuple shape, split colexicographically over its modes (the parts stay >= 0,
    so they are not checked again)."""
    total = 0
    last = len(shape) - 1
    for k, (s, d) in enumerate(zip(shape, stride)):
        if k == last:  # CuTe: the last mode takes what is left, so L(i) extends past size(L)
            return total + (_index_offset(i, s, d) if type(s) is tuple else i * d)
        n = product(s) if type(s) is tuple else s
        total = total + (_index_offset(i % n, s, d) if type(s) is tuple else (i % n) * d)
        i = i // n
    return total


def shape_div(a, b):
    """CuTe's shape_div: divide shape a by b from the left, mode by mode.

    For integers: a // b when b divides a, else 1 when a divides b (the mode is consumed),
    else an error.  For a tuple a: each mode is divided in turn by what is left of b.
    """
    if type(a) is tuple:
        out = []
        for e in a:
            out.append(shape_div(e, b))
            b = shape_div(b, product(e))
        return tuple(out)
    if type(b) is tuple:
        return shape_div(a, product(b))
    return _v.shape_div(a, b)


def ceil_div(a, b):
    """ceil(a / b) for integers (static or symbolic); elementwise for tuples."""
    if type(a) is tuple:
        return tuple(ceil_div(x, y) for x, y in zip(a, b)) if type(b) is tuple else tuple(ceil_div(x, b) for x in a)
    return _v.ceil_div(a, b)


def format_inttuple(t) -> str:
    """CuTe notation without spaces: (4,(2,?{div=2})); an integer prints bare.  Not bounded: the algebra may nest
    its results deeper than MAX_NESTING (a divide adds a level), and those print."""
    if type(t) is tuple:
        return "(" + ",".join(format_inttuple(e) for e in t) + ")"
    return "_" if t is None else str(t)


# -- slicing with CuTe's underscore (None) --------------------------------------------------
def slice_modes(crd, t, keep_none, where, depth=0):
    """The parts of IntTuple ``t`` selected by ``crd`` as a flat-at-this-level tuple.

    keep_none=True is CuTe's slice (keep the underscore modes), False its dice (keep the
    integer modes).  A tuple coordinate recurses and its parts are concatenated.  The walk
    bounds crd's nesting (:func:`too_deep`).
    """
    if crd is None:
        return (t,) if keep_none else ()
    if type(crd) is tuple:
        if depth >= MAX_NESTING:
            raise too_deep("coordinate")
        if type(t) is not tuple:
            if len(crd) != 1:
                raise ValueError(f"{where}: expected a coordinate of rank 1 for mode {format_inttuple(t)}, but got "
                                 f"{check_nesting(crd, 'coordinate')!r}.")
            t = (t,)
        if len(crd) != len(t):
            raise ValueError(f"{where}: expected a coordinate of rank {len(t)} for {format_inttuple(t)}, but got "
                             f"{check_nesting(crd, 'coordinate')!r}.")
        out = ()
        for c, s in zip(crd, t):
            out += slice_modes(c, s, keep_none, where, depth + 1)
        return out
    if type(crd) is not int and not isinstance(crd, Symbolic):
        raise TypeError(f"{where}: expected None, an int or a tuple in the coordinate, but got {type(crd).__name__}.")
    return () if keep_none else (t,)


def fill_none(crd):
    """The coordinate with every None (CuTe's underscore) set to 0."""
    if crd is None:
        return 0
    if type(crd) is tuple:
        return tuple(fill_none(c) for c in crd)
    return crd
