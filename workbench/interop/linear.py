"""Triton's linear layouts: a layout as F2 (bit) bases per input dimension, and back.

A Triton ``LinearLayout`` maps each input dimension (``register``, ``lane``, ``warp``, ``block``, ``offset``)
through one basis vector per input bit: the output is the XOR of the bases of the bits that are set.  A CuTe
layout is such a map when its extents are powers of two and its offsets combine bit-disjointly (a sum without
carries is an XOR); a swizzle is an XOR, so swizzled layouts are linear too.  ``to_linear_layout`` gives the
bases (checked at every index: nothing is assumed), ``from_linear_layout`` the CuTe layout where one exists
(a Layout, or a Swizzle composed with one); both refuse, naming the obstacle, where there is none.

Direction, as Triton's: a distributed layout runs (register, lane, warp) -> (dim0, dim1), the tensor coordinate;
a shared layout runs ``offset`` (the memory offset, in elements) -> (dim0, dim1), Triton's NVMMASharedLayout,
SwizzledSharedLayout and SharedLinearLayout.  CuTe's memory layout runs the other way (coordinate -> offset), so
a memory layout (a swizzled ComposedLayout, a rank-1 Layout, or any layout exported with ``dims=[("offset", n)]``)
is exported as its *inverse*, found by GF(2) elimination (:meth:`workbench.layout.f2.F2Layout.inverse`), and
``from_linear_layout`` of an ``offset`` input inverts back to CuTe's coordinate -> offset, a Layout or
``Swizzle o Layout``.  Only a bijection onto [0, size) has an inverse; other memory layouts are refused.
"""

from __future__ import annotations

import html
import math

import numpy as np

from ..layout import ComposedLayout, Layout, Swizzle, coalesce, make_layout

__all__ = ["LinearLayout", "to_linear_layout", "from_linear_layout", "IN_DIMS"]

IN_DIMS = ("register", "lane", "warp", "block", "offset")
_MAX_BITS = 24


def _log2(n, what):
    if type(n) is not int or n <= 0 or n & (n - 1):
        raise ValueError(f"to_linear_layout: expected power-of-two sizes (F2-linear maps have 2**k inputs), but "
                         f"{what} is {n}.")
    return n.bit_length() - 1


def _size(s, what):
    if type(s) is not int or s <= 0 or s & (s - 1):
        raise ValueError(f"LinearLayout: expected {what} to have a power-of-two size, but got {s!r}.")
    return s


def _basis_list(v, dim, what):
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{what}: expected a list of bases for {dim!r}, but got {type(v).__name__} {v!r}.")
    if len(v) > _MAX_BITS:
        raise ValueError(f"{what}: expected at most {_MAX_BITS} bases (input bits) for {dim!r}, but got {len(v)}.")
    return v


def check_basis(b, sizes, what):
    """One F2 basis as a tuple of ints, one per output of ``sizes`` (None: one flat offset below 2**_MAX_BITS), each
    in [0, size): anything else (a float, a bool, a negative or too large entry, too many entries) is refused."""
    t = tuple(b) if isinstance(b, (tuple, list)) else (b,)
    n = len(sizes) if sizes is not None else 1
    if len(t) != n:
        raise ValueError(f"{what}: expected bases of {n} entries (one per output dimension), but got {b!r}.")
    for x, s in zip(t, sizes if sizes is not None else (1 << _MAX_BITS,)):
        if type(x) is not int:
            raise TypeError(f"{what}: expected integer basis entries, but got {type(x).__name__} {x!r} in {b!r}.")
        if not 0 <= x < s:
            raise ValueError(f"{what}: expected basis entries in [0, {s}) (the output's size), but got {x} in {b!r}.")
    return t


class LinearLayout:
    """F2 bases: ``bases[dim]`` lists, for each bit of input dimension ``dim``, the output it maps to (a tuple,
    one entry per output dimension); ``out_dims`` names the outputs and their sizes."""

    __slots__ = ("bases", "out_dims")
    #: the input dimension of a shared (memory) layout: Triton's offset -> (dim0, dim1)
    SHARED_IN = "offset"

    def __init__(self, bases, out_dims):
        self.out_dims = tuple((str(n), _size(s, f"output dimension {n!r}")) for n, s in out_dims)
        sizes = tuple(s for _, s in self.out_dims)
        if not isinstance(bases, dict):
            raise TypeError(f"LinearLayout: expected bases as a dict {{dim: [basis, ...]}}, but got {type(bases).__name__}.")
        self.bases = {str(k): [check_basis(b, sizes, f"LinearLayout: {k}") for b in _basis_list(v, k, "LinearLayout")]
                      for k, v in bases.items()}

    @property
    def kind(self) -> str:
        """``"shared"`` (input ``offset``: memory offset -> tensor coordinate) or ``"distributed"``."""
        return "shared" if "offset" in self.bases else "distributed"

    @property
    def direction(self) -> str:
        """The map this layout is, in words: ``"offset -> (dim0, dim1)"``, ``"(register, lane, warp) -> (dim0,
        dim1)"``."""
        ins = list(self.bases)
        src = ins[0] if len(ins) == 1 else "(" + ", ".join(ins) + ")"
        outs = [n for n, _ in self.out_dims]
        return f"{src} -> {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ')'}"

    def in_size(self, dim):
        return 1 << len(self.bases[dim])

    def __call__(self, **inputs):
        """The output tuple for the given input values (missing inputs are 0)."""
        out = [0] * len(self.out_dims)
        for dim, v in inputs.items():
            if dim not in self.bases:
                raise ValueError(f"LinearLayout: expected input dimensions among {list(self.bases)}, but got {dim!r}.")
            n = self.in_size(dim)
            if type(v) is not int and not (hasattr(v, "__index__") and not isinstance(v, bool)):
                raise TypeError(f"LinearLayout: expected an int for input {dim!r}, but got {type(v).__name__} {v!r}.")
            v = int(v)
            if not 0 <= v < n:
                raise ValueError(f"LinearLayout: expected {dim} in [0, {n}) ({len(self.bases[dim])} bits), but got {v}.")
            for j, b in enumerate(self.bases[dim]):
                if v >> j & 1:
                    out = [o ^ x for o, x in zip(out, b)]
        return tuple(out)

    def __eq__(self, other):
        return type(other) is LinearLayout and self.bases == other.bases and self.out_dims == other.out_dims

    def __repr__(self):
        body = ", ".join(f"{k}: {v}" for k, v in self.bases.items())
        outs = ", ".join(f"{n}={s}" for n, s in self.out_dims)
        return f"LinearLayout[{self.kind}: {self.direction}]({{{body}}}, out=({outs}))"

    def _repr_html_(self):
        rows = "".join(f"<tr><th>{html.escape(k)}</th>" + "".join(f"<td>{html.escape(str(b if len(b) > 1 else b[0]))}"
                                                                   f"</td>" for b in v) + "</tr>"
                       for k, v in self.bases.items())
        outs = ", ".join(f"{n} ({s})" for n, s in self.out_dims)
        return (f"<table><caption>{self.kind} layout, {html.escape(self.direction).replace('-&gt;', '&rarr;')}: F2 "
                f"bases, bit 0 first &rarr; {html.escape(outs)}</caption>{rows}</table>")


def _offsets(layout):
    if type(layout) not in (Layout, ComposedLayout):
        raise TypeError(f"to_linear_layout: expected a wb.Layout or a swizzled wb.ComposedLayout, but got "
                        f"{type(layout).__name__}.")
    return np.asarray(layout.offsets(), dtype=np.int64)


def _default_dims(layout):
    if type(layout) is ComposedLayout or type(layout.shape) is not tuple or len(layout.shape) == 1:
        return [("offset", int(layout.size))]
    if len(layout.shape) == 2:   # a TV layout: thread -> lane (32) then warp, value -> register
        t, v = int(layout[0].size), int(layout[1].size)
        dims = [("lane", min(t, 32))] + ([("warp", t // 32)] if t > 32 else [])
        return dims + [("register", v)]
    raise ValueError(f"to_linear_layout: give dims=[(name, size), ...] for a layout of rank {len(layout.shape)} "
                     f"(names among {', '.join(IN_DIMS)}).")


def to_linear_layout(layout, dims=None, out_shape=None) -> LinearLayout:
    """The F2 bases of ``layout`` (a Layout or a swizzled ComposedLayout with power-of-two extents), in Triton's
    direction.

    - A distributed (thread/value) layout: ``dims`` ``[(name, size), ...]`` splits the layout's 1-D index, low bits
      first, into input dimensions (register, lane, warp, block); default for a (thread, value) layout ``lane``
      (32), ``warp``, ``register``.  ``out_shape`` splits the output offset colexicographically into ``dim0``,
      ``dim1``... (a TV layout's (M, N) tile); default one output ``offset``.
    - A memory layout (default for a swizzled ComposedLayout or a rank-1 layout; or ``dims=[("offset", n)]``): the
      inverse, Triton's shared layout ``offset -> (dim0, dim1, ...)``, one output per top-level mode of the layout
      (or ``out_shape``), the layout's coordinate being colexicographic over them as CuTe's.  Refused unless the
      layout is a bijection onto [0, size) (Triton's shared layouts are).

    Raises ValueError naming the obstacle: a size that is not a power of two, the first index where the layout is
    not the XOR of its bases, a memory layout that is not invertible.  For a tiled MMA, Triton's register order and
    B as (K, N): :func:`workbench.interop.triton.to_triton`.
    """
    dims = _default_dims(layout) if dims is None else [(str(a), int(b)) for a, b in dims]
    if any(name == "offset" for name, _ in dims):
        if len(dims) != 1:
            raise ValueError(f"to_linear_layout: expected the input dimension 'offset' alone (a shared layout: "
                             f"offset -> coordinate), but got dims {dims}.")
        return _shared_export(layout, dims[0][1], out_shape)
    offs = _offsets(layout)
    n = offs.size
    nbits = _log2(n, "the layout's size")
    if nbits > _MAX_BITS:
        raise ValueError(f"to_linear_layout: expected at most 2**{_MAX_BITS} elements, but got {n}.")
    for name, _ in dims:
        if name not in IN_DIMS:
            raise ValueError(f"to_linear_layout: expected input dimension names among {', '.join(IN_DIMS)}, but got {name!r}.")
    widths = [_log2(s, f"the size of input dimension {name!r}") for name, s in dims]
    if sum(widths) != nbits:
        raise ValueError(f"to_linear_layout: the input dimensions {dims} cover {1 << sum(widths)} indices, the layout "
                         f"has {n}.")
    if out_shape is None:
        top = int(offs.max()) + 1 if n else 1
        out_dims = [("offset", 1 << max(0, (top - 1).bit_length()))]
        split = [1]
    else:
        out_shape = tuple(out_shape) if isinstance(out_shape, (tuple, list)) else (out_shape,)
        for k, s in enumerate(out_shape):
            _log2(s, f"output dimension {k}")
        out_dims = [(f"dim{k}", s) for k, s in enumerate(out_shape)]
        split = list(out_shape)
    if n and int(offs.min()) < 0:
        raise ValueError(f"to_linear_layout: expected offsets >= 0 (F2 vectors), but {layout} reaches {int(offs.min())}.")
    basis_off = [int(offs[1 << j]) for j in range(nbits)]
    # the layout is linear iff every offset is the XOR of the bases of its index's bits
    xor = np.zeros(n, dtype=np.int64)
    for j, b in enumerate(basis_off):
        xor ^= np.where((np.arange(n) >> j) & 1, b, 0)
    bad = np.nonzero(xor != offs)[0]
    if bad.size:
        i = int(bad[0])
        parts = " ^ ".join(f"L({1 << j})={basis_off[j]}" for j in range(nbits) if i >> j & 1)
        raise ValueError(f"to_linear_layout: {layout} is not F2-linear: L({i}) = {int(offs[i])}, but the XOR of its "
                         f"bits' images is {parts} = {int(xor[i])} (offsets that overlap in bits add with carries).")
    if out_shape is not None and n and int(offs.max()) >= int(np.prod(split)):
        raise ValueError(f"to_linear_layout: offsets reach {int(offs.max())}, past the out_shape {out_shape}.")

    def out(o):
        if out_shape is None:
            return (o,)
        res = []
        for s in split:
            res.append(o % s)
            o //= s
        return tuple(res)
    bases, j = {}, 0
    for (name, _), w in zip(dims, widths):
        bases.setdefault(name, []).extend(out(b) for b in basis_off[j:j + w])
        j += w
    return LinearLayout(bases, out_dims)


def _top_sizes(layout):
    shp = layout.outer.shape if type(layout) is ComposedLayout else layout.shape
    if type(shp) is not tuple:
        return (int(layout.size),)
    return tuple(int(math.prod(_flat_ints(m))) for m in shp)


def _flat_ints(t):
    return [x for m in t for x in _flat_ints(m)] if type(t) is tuple else [t]


def _split_colex(o, split):
    res = []
    for s in split:
        res.append(o % s)
        o //= s
    return tuple(res)


def _shared_export(layout, n, out_shape):
    """Triton's shared layout of a CuTe memory layout: the inverse of coordinate -> offset, by GF(2) elimination."""
    from ..layout.f2 import F2Layout, make_f2_layout

    if type(layout) is F2Layout:
        F = layout
    else:
        if type(layout) not in (Layout, ComposedLayout):
            raise TypeError(f"to_linear_layout: expected a wb.Layout or a swizzled wb.ComposedLayout, but got "
                            f"{type(layout).__name__}.")
        F = make_f2_layout(layout)      # checks F2-linearity element by element (LayoutAlgebraError is a ValueError)
    if n != F.size:
        raise ValueError(f"to_linear_layout: expected dims [('offset', {F.size})] (the layout's size), but got {n}.")
    from ..layout.algebra import LayoutAlgebraError
    try:
        if F.cosize != F.size:
            raise LayoutAlgebraError(f"it reaches offset {F.cosize - 1}")
        inv = F.inverse()
    except LayoutAlgebraError as e:
        raise ValueError(f"to_linear_layout: a shared layout runs offset -> coordinate (Triton's direction), so the "
                         f"memory layout must be a bijection onto [0, {F.size}), but {layout} is not: {e}") from None
    split = _top_sizes(layout) if out_shape is None else (
        tuple(out_shape) if isinstance(out_shape, (tuple, list)) else (out_shape,))
    for k, s in enumerate(split):
        _log2(s, f"output dimension {k}")
    if math.prod(split) != F.size:
        raise ValueError(f"to_linear_layout: expected an out_shape of {F.size} elements (the layout's size), but got "
                         f"{split}.")
    return LinearLayout({"offset": [_split_colex(b, split) for b in inv.flat_bases]},
                        [(f"dim{k}", s) for k, s in enumerate(split)])


def _disjoint(bs):
    seen = 0
    for b in bs:
        if b & seen:
            return False
        seen |= b
    return True


def from_linear_layout(bases, out_shape=None, dims=None, element_bits=None):
    """The CuTe layout of F2 bases (a :class:`LinearLayout`, or ``{dim: [basis, ...]}`` with int bases or
    tuples over ``out_shape``).

    - Distributed inputs (register, lane, warp, ...): a Layout whose modes are the input dimensions (in ``dims``
      order, default the order given), mapping to the colexicographic offset of the output coordinate.
    - A shared layout (input ``offset``, Triton's offset -> (dim0, dim1)): inverted (GF(2) elimination) to CuTe's
      memory layout coordinate -> offset, one mode per output dimension; ``element_bits`` (8, 16, 32, 64) marks a
      swizzled result as over an smem pointer of that width, as CuTe prints it (``Sw<3,4,3> o smem_ptr[16b]``).

    The result is a Layout where the bases are bit-disjoint, else ``Swizzle o Layout`` when one CuTe swizzle makes
    them so.  Raises ValueError naming the obstacle (bases that overlap; a shared layout that is no bijection)."""
    ll = bases if type(bases) is LinearLayout else None
    if ll is not None:
        out_shape = tuple(s for _, s in ll.out_dims) if ll.out_dims[0][0] != "offset" else None
        bases = ll.bases
    if not isinstance(bases, dict) or not bases:
        raise TypeError(f"from_linear_layout: expected a LinearLayout or a dict {{dim: [basis, ...]}}, but got {bases!r}.")
    shared = "offset" in bases
    if shared and len([k for k, v in bases.items() if k != "block" or v]) != 1:
        raise ValueError(f"from_linear_layout: a shared layout has the one input dimension 'offset' (offset -> "
                         f"coordinate), but got inputs {list(bases)}.")
    order = ["offset"] if shared else (list(dims) if dims is not None else list(bases))
    for d in order:
        if d not in bases:
            raise ValueError(f"from_linear_layout: expected dims among {list(bases)}, but got {d!r}.")
    shape = tuple(out_shape) if out_shape is not None else None
    if shape is not None:
        for s in shape:
            if type(s) is not int or s <= 0:
                raise ValueError(f"from_linear_layout: expected out_shape of positive ints, but got {out_shape!r}.")

    def flat(b, d):
        if isinstance(b, (tuple, list)) and shape is None and len(b) != 1:
            raise ValueError(f"from_linear_layout: a basis {b} of several outputs needs out_shape.")
        if not isinstance(b, (tuple, list)) and shape is not None:     # a flat offset into out_shape
            return check_basis(b, (math.prod(shape),), f"from_linear_layout: {d}")[0]
        t = check_basis(b, shape, f"from_linear_layout: {d}")
        o, m = 0, 1
        for x, s in zip(t, shape or (0,)):
            o += x * m
            m *= s
        return o
    per_dim = [[flat(b, d) for b in _basis_list(bases[d], d, "from_linear_layout")] for d in order]
    if shared:
        per_dim = _invert_shared(per_dim[0], shape)
    lay = _cute_of(per_dim)
    if element_bits is not None:
        if element_bits not in (8, 16, 32, 64):
            raise ValueError(f"from_linear_layout: expected element_bits among 8, 16, 32, 64, but got {element_bits!r}.")
        if not shared:
            raise ValueError("from_linear_layout: element_bits applies to a shared layout (input 'offset'), but got "
                             f"inputs {list(bases)}.")
        if type(lay) is not ComposedLayout:   # unswizzled: CuTe's INTERLEAVE atoms carry Sw<0,4,3>
            lay = ComposedLayout(Swizzle(0, (128 // element_bits).bit_length() - 1, 3), 0, lay)
        return ComposedLayout(lay.inner, 0, lay.outer, ptr_bits=element_bits)
    return lay


def _invert_shared(offset_bases, shape):
    """offset -> flat coordinate bases, inverted to coordinate -> offset, split into one list per output dim."""
    from ..layout.f2 import make_f2_layout

    n = 1 << len(offset_bases)
    F = make_f2_layout(n, list(offset_bases)) if offset_bases else None
    if F is None:
        return [[] for _ in (shape or (1,))]
    from ..layout.f2 import _echelon
    if F.cosize != F.size or len(_echelon(F.flat_bases)) != len(F.flat_bases):
        raise ValueError(f"from_linear_layout: a shared layout (offset -> coordinate) must be a bijection onto its "
                         f"{n} coordinates to give a CuTe memory layout, but its bases {offset_bases} are not "
                         f"(they reach coordinate {F.cosize - 1} or map two offsets to one coordinate).")
    if shape is not None and math.prod(shape) != n:
        raise ValueError(f"from_linear_layout: a shared layout of {n} offsets must cover its out_shape {shape} "
                         f"({math.prod(shape)} elements) once each.")
    inv = list(F.inverse().flat_bases)   # coordinate bit -> offset
    out = []
    for s in (shape or (n,)):
        k = s.bit_length() - 1
        out.append(inv[:k])
        del inv[:k]
    return out


def _find_swizzle(allb):
    for B in range(1, 6):
        for M in range(0, 8):
            for S in range(B, 9):
                cand = Swizzle(B, M, S)
                if _disjoint([cand(b) for b in allb]):
                    return cand
    return None


def _cute_of(per_dim):
    """The Layout (one mode per list of bases) or Swizzle o Layout whose bits have these bases."""
    allb = [b for bs in per_dim for b in bs if b]
    sw = None
    if not _disjoint(allb):
        sw = _find_swizzle(allb)
        if sw is None:
            raise ValueError(f"from_linear_layout: no CuTe layout has these bases: they overlap in bits (an XOR that "
                             f"is no sum) and no swizzle S<B,M,S> (B <= 5) untangles them; bases {per_dim}.")
        per_dim = [[sw(b) for b in bs] for bs in per_dim]
    modes = [make_layout((2,) * len(bs), stride=tuple(bs)) if bs else Layout(1, 0) for bs in per_dim]
    modes = [coalesce(m) for m in modes]
    lay = modes[0] if len(modes) == 1 else make_layout(*modes)
    return ComposedLayout(sw, 0, lay) if sw else lay


def linear_layout_of_f2(layout, dims=None, out_shape=None) -> LinearLayout:
    """The :class:`LinearLayout` of an F2 (XOR-strided) layout, ``wb.make_f2_layout(...)``: its bits' bases, with
    no check needed (an F2 layout is linear by construction).  ``dims`` splits the 1-D index, low bits first, into
    input dimensions as :func:`to_linear_layout` does (same default); ``out_shape`` (powers of two) splits each
    offset colexicographically into ``dim0``, ``dim1``..., else one output ``offset``.  With the input ``offset``
    (default for rank 1) it is a memory layout, exported as Triton's shared layout offset -> coordinate (the
    inverse), as :func:`to_linear_layout` does."""
    from ..layout.f2 import F2Layout, f2_bases

    if type(layout) is not F2Layout:
        raise TypeError(f"linear_layout_of_f2: expected an F2 layout (wb.make_f2_layout), but got "
                        f"{type(layout).__name__}; use to_linear_layout for a Layout or a swizzled layout.")
    dims = _default_dims(layout) if dims is None else [(str(a), int(b)) for a, b in dims]
    for name, _ in dims:
        if name not in IN_DIMS:
            raise ValueError(f"linear_layout_of_f2: expected input dimension names among {', '.join(IN_DIMS)}, but "
                             f"got {name!r}.")
    if any(name == "offset" for name, _ in dims):   # a memory layout: Triton's offset -> coordinate, the inverse
        if len(dims) != 1:
            raise ValueError(f"linear_layout_of_f2: expected the input dimension 'offset' alone (a shared layout: "
                             f"offset -> coordinate), but got dims {dims}.")
        return _shared_export(layout, dims[0][1], out_shape)
    bases = f2_bases(layout, dims)
    if out_shape is None:
        top = layout.cosize
        return LinearLayout({k: [(b,) for b in v] for k, v in bases.items()},
                            [("offset", 1 << max(0, (top - 1).bit_length()))])
    split = tuple(out_shape) if isinstance(out_shape, (tuple, list)) else (out_shape,)
    for k, s in enumerate(split):
        _log2(s, f"output dimension {k}")
    if layout.cosize > int(np.prod(split)):
        raise ValueError(f"linear_layout_of_f2: offsets reach {layout.cosize - 1}, past the out_shape {split}.")

    def out(o):
        res = []
        for s in split:
            res.append(o % s)
            o //= s
        return tuple(res)
    return LinearLayout({k: [out(b) for b in v] for k, v in bases.items()},
                        [(f"dim{k}", s) for k, s in enumerate(split)])
