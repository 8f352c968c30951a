"""The CuTe layout: a function from coordinates to offsets, ``shape:stride``.

``Layout(shape, stride)(c) = sum_i c_i * stride_i`` where the coordinate ``c`` is the
natural (colexicographic) coordinate of an index or a (nested) coordinate congruent with
``shape``.  Shapes and strides are IntTuples whose leaves follow the one integer protocol
(static ints or :class:`~workbench.layout.values.Symbolic` values: host ``Dyn`` or kernel
expressions); strides may also be basis elements (:class:`~workbench.layout.basis.E`, identity
layouts).  A layout is printed exactly as CuTe DSL prints it: ``(4,(2,3)):(1,(4,8))``.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .basis import E
from .values import Symbolic, has_values, is_static, value_of

__all__ = [
    "Layout", "make_layout", "size", "cosize", "rank", "depth",
    "shape", "stride", "offset_span", "index_span", "offsets_at", "check_int64_span",
    "product", "prefix_product", "crd2idx", "idx2crd", "ceil_div", "compact_col_major", "compact_row_major",
]


def _check_leaves(t, what, allow_negative, depth=0):
    """Type and sign of every leaf; the walk also bounds the nesting (inttuple.MAX_NESTING), as parse_layout
    bounds text."""
    if type(t) is tuple:
        if depth >= it.MAX_NESTING:
            raise it.too_deep(what)
        if len(t) > it.MAX_RANK:
            raise ValueError(f"Expected a {what} of at most {it.MAX_RANK} modes at each level, but got {len(t)}.")
        for e in t:
            _check_leaves(e, what, allow_negative, depth + 1)
        return
    if isinstance(t, Symbolic) or (type(t) is E and what == "stride"):
        return
    if type(t) is not int:
        raise TypeError(f"Expected {what} entries to be ints or dynamic values, but got {type(t).__name__} ({t!r}).")
    if not allow_negative and t < 0:
        raise ValueError(f"Expected non-negative {what} entries, but got {t}.")


def _check_coord_leaves(c, depth=0):
    """A coordinate's leaves are integers (or symbolic values, or None): L(2.5) is refused as CuTe DSL refuses it
    ("Expected Coord, whose leaves are integers or None"), where the walk would return 5.0."""
    if type(c) is tuple:
        if depth >= it.MAX_NESTING:
            raise it.too_deep("coordinate")
        for e in c:
            _check_coord_leaves(e, depth + 1)
    elif not (c is None or hasattr(type(c), "__index__") or isinstance(c, Symbolic)):   # ints, numpy ints
        raise TypeError(f"Expected a coordinate whose leaves are integers or None, but got {type(c).__name__} {c!r}.")


# Enumerating every offset of a layout beyond this many elements is refused (about 400 MiB of
# int64 working arrays): views and checks evaluate windows instead.
MAX_OFFSETS = 1 << 24


class Layout:
    """A CuTe layout ``shape:stride``.  Immutable; hashable; callable on coordinates."""

    __slots__ = ("shape", "stride", "_offsets")

    def __init__(self, shape, stride=None):
        if isinstance(shape, list):
            shape = _to_tuple(shape)
        if isinstance(stride, list):
            stride = _to_tuple(stride, "stride")
        _check_leaves(shape, "shape", allow_negative=False)
        if stride is None:
            stride = it.compact_left(shape)
        else:
            _check_leaves(stride, "stride", allow_negative=True)
            _check_congruent(shape, stride)
        self.shape = shape
        self.stride = stride
        self._offsets = None

    # -- printing and identity ---------------------------------------------------------
    def __str__(self) -> str:
        return f"{it.format_inttuple(self.shape)}:{it.format_inttuple(self.stride)}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return type(other) is Layout and self.shape == other.shape and self.stride == other.stride

    def __hash__(self) -> int:
        return hash((self.shape, self.stride))

    # -- structure ---------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return it.rank(self.shape)

    @property
    def depth(self) -> int:
        return it.depth(self.shape)

    @property
    def size(self):
        return it.product(self.shape)

    @property
    def cosize(self):
        """One past the largest offset: L(size-1)+1 taken over each mode's extreme, i.e.
        ``sum((s_i - 1) * |d_i|) + 1``; 0 for an empty layout."""
        return cosize(self)

    @property
    def is_static(self) -> bool:
        return is_static(self.shape) and is_static(self.stride)

    def __getitem__(self, i) -> Layout:
        """The i-th top-level mode as a layout (CuTe's ``layout[i]`` / ``get<i>``; CuTe DSL's
        ``Layout.__getitem__`` is ``get(layout, mode=[i])``, i a static int), on the host and in kernels.
        Evaluating the layout at an index or coordinate is ``L(c)``."""
        if type(i) is not int:
            if not isinstance(i, (tuple, bool, Symbolic)) and hasattr(type(i), "__index__"):  # numpy ints
                return self[i.__index__()]
            raise TypeError(f"Expected a static int mode index in {self}[i] (the i-th mode, CuTe's get<i>), but got "
                            f"{_describe_index(i)}; evaluate the layout at an index or coordinate with L(c).")
        if type(self.shape) is not tuple:
            if i in (0, -1):
                return self
            raise IndexError(f"Expected mode index 0 for a rank-1 layout {self}, but got {i}.")
        return Layout(self.shape[i], self.stride[i])

    def __iter__(self):
        for i in range(self.rank):
            yield self[i]

    # -- evaluation --------------------------------------------------------------------
    def __call__(self, *crd):
        """Offset of an index or coordinate: L(5), L((1,(0,2))), L(1, 2)."""
        c = crd[0] if len(crd) == 1 else tuple(crd)
        if c is None:  # None is CuTe's underscore: L(None) is L, L(None, 2) a sub-layout
            return self
        if type(c) is not int:
            _check_coord_leaves(c)
        if type(c) is tuple and it.has_none(c):  # also bounds the coordinate's nesting
            where = f"{self}({it.format_inttuple(c) if c is not None else '_'})"
            return _raw(it.slice_modes(c, self.shape, True, where), it.slice_modes(c, self.stride, True, where))
        shp, std = self.shape, self.stride
        if not self.is_static and has_values(shp) and has_values(std):
            # a layout read off a live tensor knows its runtime values: answer with ints
            shp, std = value_of(shp), value_of(std)
        return it._crd2idx(c, shp, std)

    def offsets(self) -> np.ndarray:
        """Offsets of all indices 0..size-1 as one int64 array (vectorized, cached).

        Dynamic modes use their runtime values; a symbolic ``?`` raises.  Refuses layouts of more
        than ``MAX_OFFSETS`` elements (evaluate a window of coordinates instead).
        """
        if self._offsets is None:
            shp = it.flatten(value_of(self.shape))
            std = it.flatten(value_of(self.stride))
            if any(type(d) is E for d in std):
                raise ValueError(f"offsets() of {self}: a coordinate (basis-strided) layout maps to tuples, not offsets.")
            n = it.product(shp)
            if n > MAX_OFFSETS:
                raise ValueError(f"offsets() of {self}: {n} elements would take {n * 24 >> 20} MiB to enumerate, "
                                 f"above the limit of {MAX_OFFSETS} elements; evaluate the coordinates you need instead.")
            out = offsets_at(np.arange(n, dtype=np.int64), shp, std, f"offsets() of {self}", n - 1)
            out.setflags(write=False)
            self._offsets = out
        return self._offsets


def _describe_index(i) -> str:
    if type(i) is tuple:
        return f"the coordinate {it.format_inttuple(it.check_nesting(i, 'coordinate'))}"
    return f"the dynamic value {i}" if isinstance(i, Symbolic) else f"{type(i).__name__} {i!r}"


def _raw(shape, stride) -> Layout:
    """A Layout from an already-checked shape and stride (the algebra's fast path)."""
    lay = _new(Layout)
    lay.shape = shape
    lay.stride = stride
    lay._offsets = None
    return lay


_new = object.__new__


def _check_congruent(shape, stride):
    if not it.congruent(shape, stride):
        raise ValueError(f"Expected a stride congruent with shape {it.format_inttuple(shape)}, "
                         f"but got {it.format_inttuple(it.check_nesting(stride, 'stride'))}.")


def _to_tuple(x, what="shape", depth=0):
    if not isinstance(x, (list, tuple)):
        return x
    if depth >= it.MAX_NESTING:
        raise it.too_deep(what)
    return tuple(_to_tuple(e, what, depth + 1) for e in x)


def make_layout(*args, stride=None) -> Layout:
    """CuTe's make_layout: ``make_layout(shape, stride=None)`` (column-major compact by
    default), or ``make_layout(L0, L1, ...)`` concatenating layouts into top-level modes."""
    if args and all(type(a) is Layout for a in args):
        if stride is not None:
            raise TypeError("Expected either layouts to concatenate or a shape with a stride, but got both.")
        if len(args) == 1:
            return args[0]
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if len(args) != 1:
        raise TypeError(f"Expected make_layout(shape, stride=None), but got {len(args)} positional arguments.")
    return Layout(args[0], stride)


def _dispatch(x, attr):
    if type(x) is Layout or getattr(x, "_is_composed", False) or getattr(x, "_is_f2", False):
        return x
    lay = getattr(x, "layout", None)
    if type(lay) is Layout or getattr(lay, "_is_composed", False):   # a tensor, swizzled (shared memory) or not
        return lay
    if type(x) is tuple or type(x) is int or isinstance(x, Symbolic):
        return None
    raise TypeError(f"Expected a Layout, a tensor or an IntTuple for {attr}(), but got {type(x).__name__}.")


def _layout_of(x, attr):
    """x's layout, for the queries that an IntTuple does not answer (a stride, a codomain)."""
    lay = _dispatch(x, attr)
    if lay is None:
        raise TypeError(f"Expected a Layout or a tensor for {attr}(), but got the IntTuple "
                        f"{it.format_inttuple(it.check_nesting(x, 'shape')) if type(x) is tuple else x}.")
    return lay


def size(x, mode=None):
    """Number of elements (product of the shape); size(x, mode) for one top-level mode.  An object
    that is no layout but knows its own integer size (a TiledMMA: its thread count) answers that."""
    if mode is None and type(getattr(x, "size", None)) is int and not hasattr(x, "layout"):
        return x.size
    lay = _dispatch(x, "size")
    shp = lay.shape if lay is not None else it.check_nesting(x, "shape")
    if mode is not None:
        shp = shp[mode] if type(shp) is tuple else shp
    return it.product(shp)


def cosize(x):
    """Codomain size: max offset + 1 = sum((s-1)*|d|) + 1 over the leaves (0 if empty)."""
    lay = _layout_of(x, "cosize")
    if type(lay) is not Layout:  # a composed (swizzled) layout knows its own codomain
        return lay.cosize
    shp, std = it.flatten(lay.shape), it.flatten(lay.stride)
    if any(type(s) is int and s == 0 for s in shp):
        return 0
    total = 1
    for s, d in zip(shp, std):
        if type(d) is E:
            raise ValueError(f"cosize({lay}): a coordinate (basis-strided) layout maps to tuples, not offsets.")
        total = total + (s - 1) * (abs(d) if type(d) is int else d)
    return total


def offset_span(x):
    """(lowest, highest) offset the layout reaches, ``sum(min(0, (s-1)*d))`` and ``sum(max(0, (s-1)*d))``
    over the leaves, with runtime values for ``?`` modes; None for an empty layout.  The memory a view
    touches: negative strides included, unlike cosize."""
    lay = _layout_of(x, "offset_span")
    shp, std = it.flatten(value_of(lay.shape)), it.flatten(value_of(lay.stride))
    if any(s == 0 for s in shp):
        return None
    return index_span(shp, std, it.product(shp) - 1)


def index_span(shp, std, top):
    """(lowest, highest) offset the flat leaves ``shp:std`` (ints) give the indices 0..top (top >= 0), exact.

    As in :func:`crd2idx`, the last leaf takes what the others leave, so an index past the size extends it:
    its extent counts as ``top // product(other extents) + 1`` when that is larger.
    """
    lo = hi = 0
    below = 1
    for k, (s, d) in enumerate(zip(shp, std)):
        if k == len(shp) - 1:
            s = max(s, top // below + 1) if below else s
        lo += min(0, (s - 1) * d)
        hi += max(0, (s - 1) * d)
        below *= s
    return lo, hi


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def check_int64_span(what, lo, hi):
    """Refuse offsets that numpy's int64 arrays (and a kernel's int64_t) would wrap around."""
    if lo < INT64_MIN or hi > INT64_MAX:
        raise ValueError(f"{what}: expected offsets within int64 [-2**63, 2**63-1], but they reach [{lo}, {hi}]; "
                         f"int64 arithmetic would wrap around.")


def offsets_at(idx, shp, std, what, top=None) -> np.ndarray:
    """``crd2idx(i, shp, std)`` for every index of the int64 array ``idx`` (all >= 0), vectorized over the flat
    leaves ``shp:std`` (ints; the last leaf takes what is left, as crd2idx).  Refuses (ValueError, ``what``
    naming the caller) negative indices, indices into an empty layout and offsets outside int64.  A caller
    that knows ``0 <= idx <= top`` passes ``top`` (the range is then not scanned)."""
    out = np.zeros(idx.shape, dtype=np.int64)
    if not idx.size or not shp:
        return out
    if top is None:
        low, top = int(idx.min()), int(idx.max())
        if low < 0:
            raise ValueError(f"{what}: expected indices >= 0 (the layout's domain), but got {low}.")
    if any(s == 0 for s in shp[:-1]):
        raise ValueError(f"{what}: expected a non-empty layout to index, but got the extents {shp}.")
    check_int64_span(what, *index_span(shp, std, top))
    x = idx.copy()
    below = 1
    for s, d in zip(shp[:-1], std[:-1]):
        if s > 1:
            if d:  # |d| * (s-1) is inside the checked span, so d converts to int64
                out += (x % s) * d
            x //= s
            below *= s
    if std[-1] and top // below:  # as above: only a last leaf that moves has a stride inside the span
        out += x * std[-1]
    return out


def rank(x, mode=None) -> int:
    lay = _dispatch(x, "rank")
    shp = lay.shape if lay is not None else x
    if mode is not None:
        shp = shp[mode]
    return it.rank(shp)


def depth(x) -> int:
    lay = _dispatch(x, "depth")
    return it.depth(lay.shape if lay is not None else it.check_nesting(x, "shape"))


def shape(x):
    lay = _dispatch(x, "shape")
    return lay.shape if lay is not None else x


def stride(x):
    return _layout_of(x, "stride").stride


# -- the IntTuple functions a user calls: the core's (inttuple), which recurse, after bounding what the user passes
def product(t):
    """Product of all leaves of an IntTuple: product((2,(3,4))) == 24, product(()) == 1."""
    return it.product(it.check_nesting(t, "shape"))


def prefix_product(t, init=1):
    """Exclusive prefix product, hierarchical: prefix_product((2,(3,4))) == (1,(2,6))."""
    return it.prefix_product(it.check_nesting(t, "shape"), init)


def crd2idx(crd, shape, stride=None):
    """CuTe's ``crd2idx(crd, shape, stride)``: the offset of a coordinate or 1-D index, as ``Layout(shape, stride)(crd)``
    (compact column-major when stride is omitted).  The stride must be congruent with the shape, as CuTe requires."""
    it.check_nesting(crd, "coordinate")   # crd2idx's walk follows the shape, but its error message prints crd
    it.check_nesting(shape, "shape")
    if stride is not None:
        _check_congruent(shape, stride)   # walks the stride no deeper than the shape
    return it._crd2idx(crd, shape, stride)


def idx2crd(idx, shape):
    """Colexicographic coordinate of a 1-D index in shape: idx2crd(5, (2,3)) == (1,2); a tuple idx congruent
    with shape is converted mode by mode."""
    return it._idx2crd(it.check_nesting(idx, "coordinate"), it.check_nesting(shape, "shape"))


def ceil_div(a, b):
    """ceil(a / b) for integers (static or symbolic); elementwise for tuples."""
    return it.ceil_div(it.check_nesting(a, "tuple"), it.check_nesting(b, "tuple"))


def compact_col_major(shape, current=1):
    """CuTe's ``compact_col_major(shape, current)``: the strides of a compact column-major layout of ``shape`` whose
    first mode has stride ``current``; a static extent-1 mode gets stride 0, as CuTe gives it:
    ``compact_col_major((2,1,3), 4) == (4,0,8)``."""
    return it.compact_left(it.check_nesting(shape, "shape"), current)


def compact_row_major(shape, current=1):
    """CuTe's ``compact_row_major(shape, current)``: row-major compact strides (the last mode fastest, with stride
    ``current``), 0 on a static extent-1 mode: ``compact_row_major((2,(1,3))) == (3,(0,1))``."""
    def go(t, cur):
        if type(t) is tuple:
            out = []
            for e in reversed(t):
                out.append(go(e, cur))
                cur = cur * it.product(e)
            return tuple(reversed(out))
        return 0 if type(t) is int and t == 1 else cur
    return go(it.check_nesting(shape, "shape"), current)
