"""F2 layouts: layouts whose strides combine by XOR (linear maps over GF(2)), as Triton's linear layouts.

An F2 layout has a shape of power-of-two extents and, for every bit of every mode, a *basis*: the offset that
bit contributes.  The offset of a coordinate is the XOR of the bases of the bits set in it::

    L(c) = XOR_{j : bit j of i is set} B[j]        i = crd2idx(c, shape) (colexicographic), B = L.flat_bases

The modes' bits are the 1-D index's bits, low mode first (all extents are powers of two), so ``B`` is one list.
A mode's bases print as its stride: an int ``d`` where they double (``d, 2d, 4d, ...``: CuTe's ``s:d`` when d is a
power of two) and a bracketed list otherwise, ``F2 (8,8):([8,17,34],1)``.  Departure from CuTe: an int stride
here is an *XOR* stride, so ``F2 4:3`` maps 0,1,2,3 to 0,3,6,5 (XOR-ed, not 0,3,6,9).  Any CuTe swizzle composed
with a power-of-two layout is an F2 layout (:func:`make_f2_layout` of it checks every element), and so is any XOR
of such bases that no single swizzle expresses.

Each operation is a short function whose comment states the math; every result is exact (checked element by
element where it is not derived from linearity) and every refusal raises :class:`LayoutAlgebraError` naming what
was expected and what was got.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .algebra import LayoutAlgebraError
from .layout import MAX_OFFSETS, Layout, crd2idx
from .swizzle import ComposedLayout, Swizzle

__all__ = ["F2Layout", "F2Stride", "make_f2_layout", "f2_equal", "f2_bases"]

_ENUMERATE = 1 << 22   # what a check element by element enumerates at most


def _fail(op, what, reason):
    raise LayoutAlgebraError(f"{op}({what}): {reason}")


def _log2(n, op, what):
    """k with n == 2**k; n must be a static power of two."""
    if type(n) is not int or n <= 0 or n & (n - 1):
        _fail(op, what, f"expected power-of-two extents (an F2 mode has 2**k coordinates), but got {n!r}.")
    return n.bit_length() - 1


class F2Stride:
    """The bases of one F2 mode, bit 0 first: ``[8,17,34]`` (an int stride d is ``[d, 2d, 4d, ...]``)."""

    __slots__ = ("bases",)

    def __init__(self, bases):
        self.bases = tuple(int(b) for b in bases)

    def __str__(self):
        return "[" + ",".join(map(str, self.bases)) + "]"

    __repr__ = __str__

    def __eq__(self, other):
        return type(other) is F2Stride and self.bases == other.bases

    def __hash__(self):
        return hash((F2Stride, self.bases))


def _leaf_stride(bases):
    """A mode's printed stride: d when its bases double (d, 2d, 4d, ...), 0 for a mode of one element."""
    if not bases:
        return 0
    if all(b == bases[0] << j for j, b in enumerate(bases)):
        return bases[0]
    return F2Stride(bases)


def _leaf_bases(s, d, op, what):
    """The bases of a mode of extent s from its stride: an int d gives d << j, a list or F2Stride one per bit."""
    k = _log2(s, op, what)
    if type(d) is int:
        if d < 0:
            _fail(op, what, f"expected bases >= 0 (F2 vectors), but got the stride {d}.")
        return tuple(d << j for j in range(k))
    bs = d.bases if type(d) is F2Stride else d
    if not isinstance(bs, list | tuple) or any(type(b) is not int for b in bs):
        _fail(op, what, f"expected an int stride or a list of int bases for a mode, but got {d!r}.")
    if len(bs) != k:
        _fail(op, what, f"expected {k} bases (one per bit) for a mode of extent {s}, but got {len(bs)}: {list(bs)}.")
    if any(b < 0 for b in bs):
        _fail(op, what, f"expected bases >= 0 (F2 vectors), but got {list(bs)}.")
    return tuple(bs)


class F2Layout:
    """An F2 (XOR-strided) layout: ``shape`` (power-of-two extents, nested as CuTe's) and ``bases`` congruent with
    it, a tuple of ints per mode (one per bit).  Build one with :func:`make_f2_layout`.  Immutable, hashable;
    ``==`` compares shape and bases (equal as functions: :func:`f2_equal`)."""

    __slots__ = ("shape", "bases", "_flat", "_offsets")
    _is_f2 = True

    def __init__(self, shape, bases):
        self.shape, self.bases = shape, bases
        self._flat = tuple(b for leaf in _leaves(bases, shape) for b in leaf)
        self._offsets = None

    # -- structure ---------------------------------------------------------------------------
    @property
    def flat_bases(self) -> tuple:
        """The basis of each bit of the 1-D index, bit 0 first (the modes' bases, low mode first)."""
        return self._flat

    @property
    def stride(self):
        """The bases as strides, congruent with the shape: an int where they double, an :class:`F2Stride` else."""
        return _map2(self.shape, self.bases, lambda s, b: _leaf_stride(b))

    rank = property(lambda self: it.rank(self.shape))
    depth = property(lambda self: it.depth(self.shape))
    size = property(lambda self: 1 << len(self._flat))
    is_static = True

    @property
    def cosize(self) -> int:
        """One past the largest offset: the greatest XOR of bases, read off their echelon form (no enumeration)."""
        top = 0
        for v in sorted(_echelon(self._flat), reverse=True):   # distinct leading bits: greedy from the top
            top = max(top, top ^ v)
        return top + 1

    def __getitem__(self, i) -> F2Layout:
        if type(i) is not int:
            raise TypeError(f"Expected a static int mode index in {self}[i], but got {type(i).__name__}.")
        if type(self.shape) is not tuple:
            if i in (0, -1):
                return self
            raise IndexError(f"Expected mode index 0 for a rank-1 F2 layout {self}, but got {i}.")
        return F2Layout(self.shape[i], self.bases[i])

    def __iter__(self):
        for i in range(self.rank):
            yield self[i]

    def __str__(self):
        return f"F2 {it.format_inttuple(self.shape)}:{it.format_inttuple(self.stride)}"

    __repr__ = __str__

    def __eq__(self, other):
        return type(other) is F2Layout and self.shape == other.shape and self.bases == other.bases

    def __hash__(self):
        return hash((F2Layout, self.shape, self.bases))

    # -- evaluation --------------------------------------------------------------------------
    def __call__(self, *crd):
        """L(i) or L(coord): the XOR of the bases of the bits of the coordinate's 1-D index."""
        c = crd[0] if len(crd) == 1 else tuple(crd)
        if type(c) is not int and hasattr(type(c), "__index__") and type(c) is not bool:
            c = c.__index__()
        if c is None or (type(c) is tuple and it.has_none(c)):   # CuTe's layout(_, 2): the slice, offset dropped
            return slice_f2(self, c)
        _check_coord(c, self.shape, self)
        return _xor_bits(crd2idx(c, self.shape), self._flat)

    def offsets(self) -> np.ndarray:
        """All offsets 0..size-1 as an int64 array (cached)."""
        if self._offsets is None:
            if self.size > MAX_OFFSETS:
                raise ValueError(f"offsets() of {self}: {self.size} elements are above the limit of {MAX_OFFSETS}; "
                                 f"evaluate the coordinates you need instead.")
            out = self.offsets_at(np.arange(self.size, dtype=np.int64))
            out.setflags(write=False)
            self._offsets = out
        return self._offsets

    def offsets_at(self, idx) -> np.ndarray:
        """The offsets of an int64 array of 1-D indices (each in [0, size))."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros(idx.shape, dtype=np.int64)
        for j, b in enumerate(self._flat):
            out ^= np.where((idx >> j) & 1, np.int64(b), np.int64(0))
        return out

    # -- algebra hooks (wb.composition, wb.coalesce, the inverses, nullspace) ----------------------------------
    def _compose(self, B):
        return compose_f2(self, B)

    def _compose_right(self, A):
        return compose_f2(A, self)

    def _coalesce(self, profile=None):
        return coalesce_f2(self, profile)

    def _right_inverse(self):
        return right_inverse_f2(self)

    def _left_inverse(self):
        return left_inverse_f2(self)

    def _nullspace(self):
        return nullspace_f2(self)

    def _complement(self, cotarget=None):
        return complement_f2(self, cotarget)

    def _slice(self, crd):
        return slice_f2(self, crd)

    def _dice(self, crd):
        return dice_f2(self, crd)

    def _slice_and_offset(self, crd):
        return slice_and_offset_f2(self, crd)

    def inverse(self) -> F2Layout:
        """The inverse of a bijection onto [0, size): ``inv(L(i)) == i`` and ``L(inv(x)) == x``."""
        if self.cosize != self.size or len(_echelon(self._flat)) != len(self._flat):
            _fail("inverse", self, f"expected a bijection onto [0, {self.size}), but its {self.size} indices reach "
                  f"{1 << len(_echelon(self._flat))} distinct offsets below {self.cosize}.")
        return left_inverse_f2(self)


# -- shape walks -----------------------------------------------------------------------------
def _leaves(bases, shape):
    """The bases of each leaf mode, colexicographic order."""
    if type(shape) is tuple:
        return [leaf for s, b in zip(shape, bases) for leaf in _leaves(b, s)]
    return [bases]


def _map2(shape, t, f):
    if type(shape) is tuple:
        return tuple(_map2(s, x, f) for s, x in zip(shape, t))
    return f(shape, t)


def _check_coord(c, shape, L):
    """A coordinate must name a point of the domain: an int in [0, size) of its (sub-)mode, or a congruent tuple."""
    if type(c) is int:
        n = it.product(shape)
        if not 0 <= c < n:
            raise ValueError(f"{L} at {c}: expected an index in [0, {n}) (an F2 layout is not extended past its "
                             f"size), but got {c}.")
        return
    if type(c) is not tuple:
        raise TypeError(f"{L}: expected an int index or a tuple coordinate, but got {type(c).__name__} ({c!r}).")
    if type(shape) is not tuple or len(shape) != len(c):
        raise ValueError(f"{L} at {it.format_inttuple(c)}: expected a coordinate congruent with the shape "
                         f"{it.format_inttuple(shape)}, but got {it.format_inttuple(c)}.")
    for x, s in zip(c, shape):
        _check_coord(x, s, L)


def _xor_bits(i, bases):
    """XOR of bases[j] over the bits j set in i."""
    out, j = 0, 0
    while i:
        if i & 1:
            out ^= bases[j]
        i >>= 1
        j += 1
    return out


# -- GF(2) elimination -----------------------------------------------------------------------
def _reduce(v, combo, piv):
    """Reduce v by the pivots (leading bit -> (vector, combination)); returns the remainder and its combination."""
    while v:
        p = v.bit_length() - 1
        if p not in piv:
            break
        pv, pc = piv[p]
        v, combo = v ^ pv, combo ^ pc
    return v, combo


def _pivots(vectors):
    """Echelon form of the vectors, each kept with the combination of inputs (bit j = input j) it is the XOR of;
    also the combinations that XOR to 0 (the kernel's basis)."""
    piv, kernel = {}, []
    for j, v in enumerate(vectors):
        r, c = _reduce(v, 1 << j, piv)
        if r:
            piv[r.bit_length() - 1] = (r, c)
        else:
            kernel.append(c)
    return piv, kernel


def _echelon(vectors):
    return [v for v, _ in _pivots(vectors)[0].values()]


# -- construction ----------------------------------------------------------------------------
def make_f2_layout(shape, bases=None) -> F2Layout:
    """An F2 layout.

    - ``make_f2_layout(shape, bases)``: ``bases`` congruent with ``shape``, each mode an int XOR stride ``d`` (its
      bits' bases ``d, 2d, 4d, ...``) or a list of one base per bit; or one flat list of the bases of every bit of
      the 1-D index (bit 0 first) for a nested shape.  ``make_f2_layout((8, 8), ([8, 17, 34], 1))``.
    - ``make_f2_layout(x)`` for a Layout, a swizzled ComposedLayout (``S<B,M,S> o 0 o L``), a Swizzle (on one
      period) or a Triton-style LinearLayout (its input dimensions become the modes, its outputs one offset,
      colexicographic): the F2 layout equal to ``x`` at every index, checked element by element (up to 2**22).
      Raises LayoutAlgebraError where x has a non-power-of-two extent or is no XOR of its bits' images.
    """
    if bases is None:
        return _from_function(shape)
    op, what = "make_f2_layout", f"{shape!r}, {bases!r}"
    if isinstance(shape, list):
        shape = tuple(shape)
    it.check_nesting(shape, "shape")
    for s in it.flatten(shape):
        _log2(s, op, what)
    if isinstance(bases, list) and type(shape) is tuple:   # one flat list: the 1-D index's bits
        total = sum(_log2(s, op, what) for s in it.flatten(shape))
        if len(bases) != total:
            _fail(op, what, f"expected {total} flat bases (one per bit of the index), but got {len(bases)}.")
        flat = [_leaf_bases(2, b, op, what)[0] for b in bases]
        return _with_flat(shape, flat)

    def go(s, d):
        if type(s) is tuple:
            if type(d) is not tuple or len(d) != len(s):
                _fail(op, what, f"expected bases congruent with the shape {it.format_inttuple(s)}, but got {d!r}.")
            return tuple(go(a, b) for a, b in zip(s, d))
        return _leaf_bases(s, d, op, what)
    return F2Layout(shape, go(shape, bases))


def _with_flat(shape, flat):
    """The F2 layout of ``shape`` whose bits' bases are ``flat`` (bit 0 first)."""
    flat = list(flat)

    def go(s):
        if type(s) is tuple:
            return tuple(go(x) for x in s)
        k = s.bit_length() - 1
        out = tuple(flat[:k])
        del flat[:k]
        return out
    return F2Layout(shape, go(shape))


def _shape_of(x, op):
    """x's shape with its runtime values; power-of-two extents checked."""
    shp = x.outer.shape if type(x) is ComposedLayout else x.shape
    if not all(type(s) is int for s in it.flatten(shp)):
        _fail(op, x, "expected static extents, but got a dynamic one.")
    for s in it.flatten(shp):
        _log2(s, op, x)
    return shp


def _values(x, idx, op):
    """x at each of the int64 indices ``idx`` (vectorized): a Layout, a swizzled layout, a Swizzle, an F2 layout."""
    if type(x) is F2Layout:
        return x.offsets_at(idx)
    if type(x) is Swizzle:
        return np.asarray(x(idx), dtype=np.int64)
    if type(x) is Layout or type(x) is ComposedLayout:
        outer = x.outer if type(x) is ComposedLayout else x
        from .layout import offsets_at
        from .values import value_of
        offs = offsets_at(idx, it.flatten(value_of(outer.shape)), it.flatten(value_of(outer.stride)), f"{op} of {x}",
                          max(int(outer.size) - 1, int(idx.max()) if idx.size else 0))
        return x.inner_at(offs, f"{op} of {x}") if type(x) is ComposedLayout else offs
    raise TypeError(f"{op}: expected a Layout, a ComposedLayout, a Swizzle or an F2 layout, but got {type(x).__name__}.")


def _checked(shape, values_of, n, op, what):
    """The F2 layout of ``shape`` whose bases are the function's values at 1, 2, 4, ...; checked at every index
    (L(i) == XOR of its bits' bases) and refused at the first where it differs."""
    if n > _ENUMERATE:
        _fail(op, what, f"expected at most {_ENUMERATE} elements to check element by element, but got {n}.")
    vals = values_of(np.arange(n, dtype=np.int64))
    if n and int(vals.min()) < 0:
        _fail(op, what, f"expected offsets >= 0 (F2 vectors), but it reaches {int(vals.min())}.")
    flat = [int(vals[1 << j]) for j in range(n.bit_length() - 1)]
    F = _with_flat(shape, flat)
    bad = np.nonzero(F.offsets_at(np.arange(n, dtype=np.int64)) != vals)[0]
    if bad.size:
        i = int(bad[0])
        parts = " ^ ".join(f"L({1 << j})={flat[j]}" for j in range(len(flat)) if i >> j & 1)
        _fail(op, what, f"expected an XOR of its bits' images (an F2-linear map), but L({i}) = {int(vals[i])} while "
              f"{parts} = {F(i)} (offsets that overlap in bits add with carries).")
    return F


def _from_function(x) -> F2Layout:
    """make_f2_layout(x): the F2 layout equal to x at every index."""
    op = "make_f2_layout"
    if type(x) is F2Layout:
        return x
    if type(x) is Swizzle:   # one period of the swizzle: 2**(B+M+|S|) indices
        n = x.size
        return _checked(n, lambda idx: _values(x, idx, op), n, op, x)
    if hasattr(x, "bases") and hasattr(x, "out_dims"):   # a Triton-style LinearLayout
        return _from_linear(x)
    if type(x) is ComposedLayout and x.offset != 0:
        _fail(op, x, f"expected offset 0 (an F2 layout is linear: L(0) == 0), but got the offset {x.offset}.")
    if type(x) is not Layout and type(x) is not ComposedLayout:
        raise TypeError(f"{op}: expected a shape and bases, a Layout, a ComposedLayout, a Swizzle or a "
                        f"LinearLayout, but got {type(x).__name__}.")
    shp = _shape_of(x, op)
    n = it.product(shp)
    return _checked(shp, lambda idx: _values(x, idx, op), n, op, x)


def _from_linear(ll) -> F2Layout:
    """A LinearLayout's input dimensions as modes; a basis over several outputs is their colexicographic offset."""
    sizes = [s for _, s in ll.out_dims]
    for s in sizes:
        _log2(s, "make_f2_layout", ll)

    def off(b):
        o, m = 0, 1
        for x, s in zip(b, sizes):
            o += int(x) * m
            m *= s
        return o
    dims = [[off(b) for b in v] for v in ll.bases.values()]
    shape = tuple(1 << len(d) for d in dims)
    return F2Layout(shape if len(shape) != 1 else shape[0], tuple(tuple(d) for d in dims) if len(dims) != 1
                    else tuple(dims[0]))


def _as_f2(x, op, what):
    """x as an F2 layout for an algebra operand: an int n is n:1."""
    if type(x) is F2Layout:
        return x
    if type(x) is int:
        x = Layout(x, 1)
    try:
        return _from_function(x)
    except LayoutAlgebraError as e:
        _fail(op, what, f"the operand {x} is not an F2 layout: {e}")


# -- equality as functions -------------------------------------------------------------------
def f2_equal(A, B) -> bool:
    """Whether A and B are the same function of the 1-D index (same size, same offset at every index). Either may be
    an F2 layout, a Layout, a swizzled layout or a Swizzle: an F2 layout is determined by its bits' bases, so two are
    equal iff their flat bases are; another operand is converted (checked element by element) and is unequal where
    it is no F2 layout."""
    try:
        a, b = _from_function(A), _from_function(B)
    except LayoutAlgebraError:
        if type(A) is F2Layout and type(B) is F2Layout:
            raise
        return False
    return a.flat_bases == b.flat_bases


# -- composition -----------------------------------------------------------------------------
def compose_f2(A, B):
    """``R = A o B`` with ``R(i) == A(B(i))`` for ``0 <= i < size(B)``; R is compatible with B (each leaf of B keeps
    its size; a leaf whose image bases stop doubling splits there, as CuTe splits a leaf over A's modes).

    - A an F2 layout, B an F2 layout (or a Layout, swizzled layout or Swizzle that is one): by linearity
      ``A(B(i)) = A(XOR_j b_j) = XOR_j A(b_j)``, so R's bases are A at B's bases; B's bases must lie in A's
      domain [0, size(A)) (an F2 layout is not extended past its size, unlike CuTe's last mode).
      B an int n is ``n:1``; a tuple composes mode by mode (None keeps the mode; A's modes past it are dropped).
    - A a Layout, swizzled layout or Swizzle, B an F2 layout: R's bases are A at B's bases, and ``A o B`` is an F2
      layout only where A is XOR-linear on B's image, so R is checked at every index and refused where it differs.
    """
    if type(A) is F2Layout:
        what = f"{A}, {B}"
        if B is None:
            return A
        if type(B) is tuple:
            if type(A.shape) is not tuple or len(B) > len(A.shape):
                _fail("composition", what, f"expected a tiler of at most rank {A.rank}, but got rank {len(B)}.")
            modes = [A[k] if b is None else compose_f2(A[k], b) for k, b in enumerate(B)]
            return F2Layout(tuple(m.shape for m in modes), tuple(m.bases for m in modes))
        Bf = _as_f2(B, "composition", what)
        top = max(Bf.flat_bases, default=0)
        if top >= A.size:
            _fail("composition", what, f"expected B's image inside A's domain [0, {A.size}), but B reaches {top} "
                  f"(an F2 layout is not extended past its size).")
        return _split_runs(Bf.shape, _map2(Bf.shape, Bf.bases, lambda s, bs: tuple(A(b) for b in bs)))
    if type(B) is not F2Layout:
        raise TypeError(f"composition: expected an F2 layout on one side, but got {type(A).__name__} o "
                        f"{type(B).__name__}.")
    op, what = "composition", f"{A}, {B}"
    if type(A) is int:
        A = Layout(A, 1)
    if type(A) is ComposedLayout or type(A) is Layout or type(A) is Swizzle:
        return _checked(B.shape, lambda idx: _values(A, B.offsets_at(idx), op), B.size, op, what)
    raise TypeError(f"composition: expected a Layout, a ComposedLayout, a Swizzle or an F2 layout before {B}, but "
                    f"got {type(A).__name__}.")


def _split_runs(shape, bases):
    """Each leaf split where its bases stop doubling, as CuTe's composition splits a leaf of B over A's modes
    (``(2,2,4):(32,1,8) o 8:2`` is ``(2,2,2):(32,1,8)``): a leaf of one run stays as it is, so the result is
    compatible with B (each leaf of B the same size) rather than congruent, as CuTe's."""
    if type(shape) is tuple:
        parts = [_split_runs(s, b) for s, b in zip(shape, bases)]
        return F2Layout(tuple(p.shape for p in parts), tuple(p.bases for p in parts))
    runs = []
    for b in bases:
        if runs and runs[-1][-1] << 1 == b:
            runs[-1].append(b)
        else:
            runs.append([b])
    if len(runs) <= 1:
        return F2Layout(shape, tuple(bases))
    return F2Layout(tuple(1 << len(r) for r in runs), tuple(tuple(r) for r in runs))


# -- coalesce --------------------------------------------------------------------------------
def coalesce_f2(L, profile=None):
    """The same function with the fewest flat modes: the bits' bases split into maximal runs that double
    (``d, 2d, 4d``: one mode of stride d) and, between them, single modes of extent 2 (which F2 merges into a
    bracketed mode only where no run continues them).  As CuTe's, the result has depth <= 1 and ``size`` is kept;
    with a profile tuple each of its modes is coalesced on its own.  ``F2 (2,(2,4)):(1,(2,4))`` is ``F2 16:1``."""
    if type(profile) is tuple:
        if type(L.shape) is not tuple or len(profile) > len(L.shape):
            _fail("coalesce", f"{L}, {it.format_inttuple(profile)}", f"the target profile has rank {len(profile)} "
                  f"but the layout has rank {L.rank}.")
        modes = [coalesce_f2(L[k], p) for k, p in enumerate(profile)] + list(L)[len(profile):]
        return F2Layout(tuple(m.shape for m in modes), tuple(m.bases for m in modes))
    runs = []
    for b in L.flat_bases:   # a base continues the run when it doubles the run's last
        if runs and runs[-1][-1] << 1 == b:
            runs[-1].append(b)
        else:
            runs.append([b])
    if not runs:
        return F2Layout(1, ())
    if len(runs) == 1:
        return F2Layout(1 << len(runs[0]), tuple(runs[0]))
    return F2Layout(tuple(1 << len(r) for r in runs), tuple(tuple(r) for r in runs))


# -- inverses and nullspace --------------------------------------------------------------------
def right_inverse_f2(L):
    """R with ``L(R(x)) == x`` for ``0 <= x < size(R)``: the largest 2**k with every offset below it reached; R's
    base for bit k is an index L sends to 2**k (found by elimination over GF(2)).  ``F2 1:0`` when L never
    reaches 1.  For a bijection onto [0, size) it is the inverse."""
    piv, _ = _pivots(L.flat_bases)
    out = []
    while True:
        r, c = _reduce(1 << len(out), 0, piv)
        if r:
            break
        out.append(c)
    return F2Layout(1 << len(out), tuple(out)) if out else F2Layout(1, ())


def left_inverse_f2(L):
    """L' with ``L'(L(i)) == i`` for ``0 <= i < size(L)``, on [0, 2**m) with 2**m above every offset L reaches:
    L's bases, independent over GF(2), are completed to a basis of the m-bit offsets by unit vectors that L' sends
    to 0.  Refused (LayoutAlgebraError) where L is not injective."""
    piv, kernel = _pivots(L.flat_bases)
    if kernel:
        i = kernel[0]
        _fail("left_inverse", L, f"expected an injective layout, but the indices 0 and {i} both map to offset 0 (XOR "
              f"of the bases of bits {[j for j in range(len(L.flat_bases)) if i >> j & 1]}).")
    m = max(L.flat_bases, default=0).bit_length()
    for k in range(m):   # complete the image to all m-bit offsets; the added units map to index 0
        r, c = _reduce(1 << k, 0, piv)
        if r:
            piv[r.bit_length() - 1] = (r, c)
    out = [_reduce(1 << k, 0, piv)[1] for k in range(m)]
    return F2Layout(1 << m, tuple(out)) if m else F2Layout(1, ())


def nullspace_f2(L):
    """The indices L sends to offset 0, as an injective F2 layout into L's domain: its bases are a basis of L's
    kernel over GF(2) (CuTe's nullspace keeps the stride-0 modes; an XOR can also cancel).  ``F2 1:0`` when L is
    injective.  ``L(N(i)) == 0`` for every i, and N reaches every such index."""
    _, kernel = _pivots(L.flat_bases)
    return F2Layout(1 << len(kernel), tuple(kernel)) if kernel else F2Layout(1, ())


# -- slicing ---------------------------------------------------------------------------------
def _leaf_ids(shape, start=0):
    """A tree congruent with ``shape`` whose leaves number the leaf modes 0, 1, ... (colexicographic)."""
    if type(shape) is tuple:
        out = []
        for s in shape:
            t, start = _leaf_ids(s, start)
            out.append(t)
        return tuple(out), start
    return start, start + 1


def _select(L, crd, keep_none, op):
    """The F2 layout of the leaf modes CuTe's slice (keep_none) or dice keeps, with inttuple.slice_modes's nesting;
    the coordinate is checked by evaluating L at it (Nones as 0), so a fixed entry outside its mode is refused."""
    L(it.fill_none(crd))
    ids, _ = _leaf_ids(L.shape)
    leaves_s = it.flatten(L.shape) if type(L.shape) is tuple else (L.shape,)
    leaves_b = _leaves(L.bases, L.shape)
    picked = it.slice_modes(crd, ids, keep_none, f"{op}({L})")

    def go(t, f):
        return tuple(go(x, f) for x in t) if type(t) is tuple else f(t)
    if not picked:
        return F2Layout(1, ())
    if len(picked) == 1:
        picked = picked[0]
    return F2Layout(go(picked, lambda k: leaves_s[k]), go(picked, lambda k: leaves_b[k]))


def slice_f2(L, crd):
    """CuTe's slice ``L(_, 2)`` of an F2 layout: the modes where ``crd`` is None, as an F2 layout.  The fixed
    coordinates contribute one offset ``o = L(crd with None -> 0)`` that is XOR-ed, not added (departure from
    CuTe's ``L(crd filled with c) == slice(c) + o``): ``L(crd filled with c) == slice(c) ^ o``; the slice drops it,
    as CuTe's does.  :func:`slice_and_offset_f2` returns it where XOR and + agree."""
    if crd is None:
        return L
    return _select(L, crd, True, "slice_")


def dice_f2(L, crd):
    """CuTe's dice: the modes fixed by integers in ``crd``, as an F2 layout."""
    if type(crd) is not tuple:
        return L
    return _select(L, crd, False, "dice")


def slice_and_offset_f2(L, crd):
    """``(slice_f2(L, crd), o)`` with ``L(crd filled with c) == slice(c) + o`` for every c, as CuTe's
    slice_and_offset promises.  An F2 layout XORs the offset in (``slice(c) ^ o``), which equals the sum only where
    ``o`` shares no bit with any offset the slice reaches; elsewhere it is refused, naming the bits, rather than
    returning an offset that a caller would add wrongly."""
    sub = slice_f2(L, crd)
    o = L(it.fill_none(crd)) if crd is not None else 0
    span = 0
    for b in sub.flat_bases:
        span |= b
    if o & span:
        _fail("slice_and_offset", f"{L}, {crd!r}", f"expected the fixed coordinates' offset {o} to share no bit with "
              f"the slice's offsets (bits {span:#b}), so that XOR-ing it in equals adding it, but they share bits "
              f"{o & span:#b}; use slice_(L, crd) and XOR L(crd with None -> 0) into its offsets.")
    return sub, o


# -- complement, divides and products ------------------------------------------------------------
def _f2_cat(*modes):
    """The F2 layout whose top-level modes are these."""
    return F2Layout(tuple(m.shape for m in modes), tuple(m.bases for m in modes))


def _modes_of(L):
    return list(L) if type(L.shape) is tuple else [L]


def _cotarget_size(cotarget, op, what):
    if type(cotarget) is tuple:
        it.check_nesting(cotarget, "cotarget")
        n = it.product(cotarget)
    else:
        n = cotarget
    if type(n) is not int or n <= 0:
        _fail(op, what, f"expected a positive static int or shape as the cotarget, but got {cotarget!r}.")
    return n


def complement_f2(L, cotarget=None):
    """The F2 complement: the unit offsets 2**j (j below the bits of ``cotarget``, or of L's offsets where they go
    higher) that are not a leading bit of L's bases in echelon form, in increasing order (coalesced into modes).
    ``(L, R)`` is then a bijection onto [0, 2**m) with 2**m >= size(cotarget): R reaches the offsets L leaves out.
    As CuTe's complement ignores stride-0 modes, zero bases are ignored; bases that XOR to 0 otherwise (L not
    injective on its non-zero bases: CuTe refuses interleaving modes) are refused.  For an L whose bases are powers
    of two (a power-of-two CuTe layout) this is CuTe's complement (``4:2`` in 16: ``(2,2):(1,8)``); a cotarget that
    is not a power of two rounds up, as CuTe's last mode does."""
    what = f"{L}, {cotarget!r}"
    n = L.cosize if cotarget is None else _cotarget_size(cotarget, "complement", what)
    nonzero = [b for b in L.flat_bases if b]
    piv, kernel = _pivots(nonzero)
    if kernel:
        i = kernel[0]
        _fail("complement", what, f"expected independent non-zero bases (an injective layout, up to stride-0 modes), "
              f"but the bases {[nonzero[j] for j in range(len(nonzero)) if i >> j & 1]} XOR to 0.")
    m = max((n - 1).bit_length(), max(nonzero, default=0).bit_length())
    rest = [1 << j for j in range(m) if j not in piv]
    if not rest:
        return F2Layout(1, ())
    return coalesce_f2(F2Layout(1 << len(rest), tuple(rest)))


def _tile_f2(T, op, what):
    """A tiler as an F2 layout: an F2 layout, a Layout / swizzled layout that is one, or an int n (``n:1``; 1 is
    ``1:0`` as CuTe's)."""
    if type(T) is int:
        if T <= 0:
            _fail(op, what, f"expected a positive tile size, but got {T}.")
        return F2Layout(1, ()) if T == 1 else _as_f2(Layout(T, 1), op, what)
    if type(T) is F2Layout or type(T) is Layout or type(T) is ComposedLayout or type(T) is Swizzle:
        return _as_f2(T, op, what)
    raise TypeError(f"{op}: expected a tiler (an F2 layout, a Layout, an int, None or a tuple of them), but got "
                    f"{type(T).__name__}.")


def _by_mode_f2(op, fn, A, T, depth=0):
    """fn mode by mode for a tuple tiler (None keeps a mode; A's modes past the tiler are kept)."""
    if depth >= it.MAX_NESTING:
        raise it.too_deep("tiler")
    modes = _modes_of(A)
    if len(T) > len(modes):
        _fail(op, f"{A}, {T!r}", f"expected a tiler of at most rank {len(modes)}, but got rank {len(T)}.")
    parts = [m if t is None else _by_mode_f2(op, fn, m, t, depth + 1) if type(t) is tuple else fn(m, t)
             for m, t in zip(modes, T)]
    return _f2_cat(*parts, *modes[len(T):])


def logical_divide_f2(A, T):
    """``A o (T, T*)`` with ``T* = complement(T, size(A))`` (the F2 complement): mode 0 is A o T, the tile; mode 1
    walks the tiles.  ``R(i, j) == A((T, T*)(i, j))`` at every coordinate, and R is a bijection onto A's image where
    T is injective.  A tuple tiler divides mode by mode (None keeps a mode).  Refused, unlike CuTe, where the tile
    reaches past size(A): an F2 layout is not extended past its size (CuTe's ragged last tile)."""
    op, what = "logical_divide", f"{A}, {T!r}"
    A = _as_f2(A, op, what)
    if T is None:
        return A
    if type(T) is tuple:
        return _by_mode_f2(op, logical_divide_f2, A, T)
    Tf = _tile_f2(T, op, what)
    top = max(Tf.flat_bases, default=0)
    if top >= A.size:
        _fail(op, what, f"expected the tile inside A's domain [0, {A.size}), but it reaches {top} (an F2 layout is "
              f"not extended past its size, so a tile larger than A has no ragged edge to predicate).")
    return compose_f2(A, _f2_cat(Tf, complement_f2(Tf, A.size)))


def _unzip_f2(op, fn, A, T, depth=0):
    """((tiles...), (rests..., A's remaining modes)), CuTe's zip2_by of the by-mode results; fn for a layout tiler."""
    if T is None:
        if depth and type(A.shape) is tuple and len(A.shape) == 2:   # a kept rank-2 mode reads as (tile, rest)
            return A
        return _f2_cat(F2Layout(1, ()), A)
    if type(T) is tuple:
        if depth >= it.MAX_NESTING:
            raise it.too_deep("tiler")
        modes = _modes_of(A)
        if len(T) > len(modes):
            _fail(op, f"{A}, {T!r}", f"expected a tiler of at most rank {len(modes)}, but got rank {len(T)}.")
        split = [_unzip_f2(op, fn, m, t, depth + 1) for m, t in zip(modes, T)]
        return _f2_cat(_f2_cat(*[x[0] for x in split]), _f2_cat(*[x[1] for x in split], *modes[len(T):]))
    return fn(A, T)


def _expand(Z, flat_tile):
    """Mode 1 (and, flat, mode 0) of a zipped result unpacked one level."""
    m0, m1 = Z[0], Z[1]
    return _f2_cat(*(_modes_of(m0) if flat_tile else [m0]), *_modes_of(m1))


def zipped_divide_f2(A, T):
    """((TileM,TileN,...), (RestM,RestN,...,L,...)): logical_divide with the tiles gathered in mode 0."""
    A = _as_f2(A, "zipped_divide", f"{A}, {T!r}")
    return _unzip_f2("zipped_divide", logical_divide_f2, A, T)


def tiled_divide_f2(A, T):
    """((TileM,TileN,...), RestM, RestN, ...): zipped_divide with mode 1 unpacked."""
    return _expand(zipped_divide_f2(A, T), False)


def flat_divide_f2(A, T):
    """(TileM, TileN, ..., RestM, RestN, ...): zipped_divide with both modes unpacked."""
    return _expand(zipped_divide_f2(A, T), True)


def logical_product_f2(A, B):
    """``(A, complement(A, size(A)*cosize(B)) o B)`` with the F2 complement: mode 0 is A, mode 1 places copies of A
    as B says; ``size(R) == size(A)*size(B)`` and R is injective where A and B are.  A tuple B multiplies mode by
    mode.  Refused where A's non-zero bases are dependent (no complement, as CuTe)."""
    op, what = "logical_product", f"{A}, {B!r}"
    A = _as_f2(A, op, what)
    if B is None:
        return A
    if type(B) is tuple:
        return _by_mode_f2(op, logical_product_f2, A, B)
    Bf = _tile_f2(B, op, what)
    rest = complement_f2(A, A.size * Bf.cosize)
    return _f2_cat(A, compose_f2(rest, Bf))


def zipped_product_f2(A, B):
    """((M,N,...), (TileM,TileN,...)): logical_product with like parts gathered."""
    A = _as_f2(A, "zipped_product", f"{A}, {B!r}")
    return _unzip_f2("zipped_product", logical_product_f2, A, B)


def tiled_product_f2(A, B):
    """((M,N,...), TileM, TileN, ...)."""
    return _expand(zipped_product_f2(A, B), False)


def flat_product_f2(A, B):
    """(M, N, ..., TileM, TileN, ...)."""
    return _expand(zipped_product_f2(A, B), True)


def _rank_product(op, A, B, raked):
    what = f"{A}, {B!r}"
    A, Bf = _as_f2(A, op, what), _tile_f2(B, op, what)
    r = max(A.rank, Bf.rank)
    pad = F2Layout(1, ())
    Ap = _f2_cat(*_modes_of(A), *[pad] * (r - A.rank))
    Bp = _f2_cat(*_modes_of(Bf), *[pad] * (r - Bf.rank))
    prod = logical_product_f2(Ap, Bp)
    zipped = _f2_cat(*[_f2_cat(b, a) if raked else _f2_cat(a, b) for a, b in zip(_modes_of(prod[0]),
                                                                                     _modes_of(prod[1]))])
    return coalesce_f2(zipped, (1,) * r) if raked else zipped


def blocked_product_f2(A, B):
    """Mode i is (A_i, B_i): A's blocks laid out as B says (CuTe 4.x's uncoalesced zip)."""
    return _rank_product("blocked_product", A, B, False)


def raked_product_f2(A, B):
    """Mode i is (B_i, A_i), each mode coalesced: A's elements interleaved across B's copies."""
    return _rank_product("raked_product", A, B, True)


F2_DIVIDES = {"logical_divide": logical_divide_f2, "zipped_divide": zipped_divide_f2, "tiled_divide": tiled_divide_f2,
              "flat_divide": flat_divide_f2}
F2_PRODUCTS = {"logical_product": logical_product_f2, "zipped_product": zipped_product_f2, "tiled_product": tiled_product_f2,
               "flat_product": flat_product_f2, "blocked_product": blocked_product_f2, "raked_product": raked_product_f2}


def involves_f2(*xs) -> bool:
    """Whether any operand (or any element of a tuple tiler) is an F2 layout: the divides and products then run here."""
    todo = [(x, 0) for x in xs]
    while todo:   # a walk bounded by the nesting limit: a deeper tiler is refused by the ordinary path
        x, depth = todo.pop()
        if type(x) is F2Layout:
            return True
        if type(x) is tuple and depth < it.MAX_NESTING:
            todo.extend((e, depth + 1) for e in x)
    return False


# -- export ----------------------------------------------------------------------------------
def f2_bases(L, dims=None) -> dict:
    """The bases of an F2 layout in CuTe's direction, coordinate -> offset: bit j of the 1-D coordinate index
    contributes the offset ``bases[j]`` (bit 0 first).  ``{'index': [b0, b1, ...]}``, or with
    ``dims=[(name, size), ...]`` the index's bits split low first into named input dimensions
    (``[('lane', 32), ('warp', 4)]``, Triton's distributed names), whose sizes must multiply to size(L).

    The name ``'offset'`` is refused as an input: in Triton (and ``workbench.interop.linear``) an ``offset`` input
    is a shared layout, offset -> coordinate, the *inverse* of these bases; ``linear_layout_of_f2(L,
    dims=[('offset', n)])`` exports that."""
    if type(L) is not F2Layout:
        L = make_f2_layout(L)
    flat = list(L.flat_bases)
    if dims is None:
        return {"index": flat}
    what = f"{L}, dims={dims!r}"
    out, j = {}, 0
    for name, s in dims:
        if str(name) == "offset":
            _fail("f2_bases", what, "expected input dimensions of the coordinate (these bases run coordinate -> "
                  "offset, CuTe's direction), but got 'offset', Triton's name for the inverse direction (offset -> "
                  "coordinate); export that with linear_layout_of_f2(L, dims=[('offset', n)]).")
        k = _log2(s, "f2_bases", what)
        out.setdefault(str(name), []).extend(flat[j:j + k])
        j += k
    if j != len(flat):
        _fail("f2_bases", what, f"expected dims covering {L.size} indices, but they cover {1 << j}.")
    return out
