"""Tensors and layouts inside a kernel: layout algebra over static and dynamic (IR) integers.

A kernel-side layout (:class:`KLayout`) is ``shape:stride`` whose leaves are Python ints
(static: folded into the generated code) or IR expressions (dynamic: kernel parameters and
values computed from them).  A :class:`KTensor` is a buffer, an element offset and a KLayout:
``T(c) = buf[offset + L(c)]``.

The algebra follows CuTe for tensors whose modes are flat (each top-level mode one integer)
and tilers that are tuples of static integers:

* ``logical_divide(T, (t0,t1,..))`` : mode ``s:d`` becomes ``(t, ceil(s/t)):(d, t*d)``.
* ``local_tile(T, tiler, coord)`` = ``zipped_divide(T, tiler)[(_, coord)]``: mode i of the tile is
  ``t_i:d_i``, shifted by ``coord_i*t_i*d_i``; a ``None`` in coord keeps that mode's tiles as an
  extra trailing mode ``ceil(s_i/t_i):t_i*d_i`` (CuTe's ``_``).
* ``local_partition(T, thr, idx)`` = ``outer_partition(T, shape(thr), thr.get_flat_coord(idx))``:
  the thread with coordinate ``c`` in the (compact, static) thread layout gets mode
  ``s_i/T_i : T_i*d_i`` shifted by ``c_i*d_i``.
"""

from __future__ import annotations

from ..layout import Layout
from ..layout import inttuple as it
from . import ir


def crd2idx(crd, shape, stride):
    """CuTe's crd2idx: an integer index is split colexicographically over the modes, the last
    mode taking what is left (no modulo), so that in-bounds indices cost no extra arithmetic."""
    if type(crd) is tuple:
        if type(shape) is not tuple or len(crd) != len(shape):
            raise ValueError(f"Expected a coordinate of rank {it.rank(shape)} for shape {fmt(shape)}, but got rank {len(crd)}.")
        total = 0
        for c, s, d in zip(crd, shape, stride):
            total = ir.binop("+", total, crd2idx(c, s, d))
        return total
    if type(shape) is tuple:
        total = 0
        n = len(shape)
        for k, (s, d) in enumerate(zip(shape, stride)):
            if k == n - 1:
                total = ir.binop("+", total, crd2idx(crd, s, d))
            else:
                sz = it.product(s) if _all_static(s) else _product(s)
                total = ir.binop("+", total, crd2idx(ir.binop("%", crd, sz), s, d))
                crd = ir.binop("//", crd, sz)
        return total
    return ir.binop("*", crd, stride)


def _product(s):
    if type(s) is tuple:
        p = 1
        for e in s:
            p = ir.binop("*", p, _product(e))
        return p
    return s


def _all_static(t) -> bool:
    if type(t) is tuple:
        return all(_all_static(e) for e in t)
    return type(t) is int


def fmt(t) -> str:
    if type(t) is tuple:
        return "(" + ",".join(fmt(e) for e in t) + ")"
    return str(t) if type(t) is int else "?"


class KLayout:
    """shape:stride with int or IR leaves."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape, stride):
        self.shape, self.stride = shape, stride

    @classmethod
    def of(cls, lay) -> KLayout:
        if type(lay) is KLayout:
            return lay
        if type(lay) is Layout:
            if not lay.is_static:
                raise ValueError(f"Expected a static layout inside a kernel (dynamic values come from arguments), but got {lay}.")
            return cls(lay.shape, lay.stride)
        if type(lay) is tuple or type(lay) is int or isinstance(lay, ir.Expr):
            return cls(lay, it.compact_col_major(lay) if _all_static(lay) else _colmajor(lay))
        raise TypeError(f"Expected a layout or a shape tuple, but got {type(lay).__name__}.")

    @property
    def size(self):
        return _product(self.shape)

    @property
    def is_static(self) -> bool:
        return _all_static(self.shape) and _all_static(self.stride)

    def __call__(self, crd):
        return crd2idx(crd, self.shape, self.stride)

    def __str__(self):
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    def modes(self):
        if type(self.shape) is tuple:
            return list(zip(self.shape, self.stride))
        return [(self.shape, self.stride)]


def _colmajor(shape, init=1):
    if type(shape) is tuple:
        out = []
        for e in shape:
            out.append(_colmajor(e, init))
            init = ir.binop("*", init, _product(e))
        return tuple(out)
    return init


class KTensor:
    """``buf[offset + layout(c)]``: a view of global or shared memory inside a kernel."""

    __slots__ = ("buf", "offset", "layout")

    def __init__(self, buf, offset, layout: KLayout):
        self.buf, self.offset, self.layout = buf, offset, layout

    @property
    def etype(self):
        return self.buf.etype

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    def __str__(self):
        space = {"gmem": "gmem", "smem": "smem"}[self.buf.space]
        return f"tensor<{self.buf.etype}@{space} o {self.layout}>"

    def offset_of(self, crd):
        """Element offset of a coordinate or 1-D index (before adding the view's base)."""
        return ir.binop("+", self.offset, self.layout(crd))

    def slice(self, crd) -> KTensor:
        """CuTe slicing: None (``_``) keeps a mode, a value fixes it; the result keeps the kept modes."""
        off, shp, std = _slice(crd, self.layout.shape, self.layout.stride)
        shp, std = _unwrap(shp), _unwrap(std)
        return KTensor(self.buf, ir.binop("+", self.offset, off), KLayout(shp, std))


def has_none(c) -> bool:
    if c is None:
        return True
    return type(c) is tuple and any(has_none(e) for e in c)


def _slice(crd, shape, stride):
    if crd is None:
        return 0, (shape,), (stride,)
    if type(crd) is tuple:
        if type(shape) is not tuple or len(crd) != len(shape):
            raise ValueError(f"Expected a slice of rank {it.rank(shape)} for shape {fmt(shape)}, but got rank {len(crd)}.")
        off, shp, std = 0, (), ()
        for c, s, d in zip(crd, shape, stride):
            o, s2, d2 = _slice(c, s, d)
            off = ir.binop("+", off, o)
            shp += s2
            std += d2
        return off, shp, std
    return crd2idx(crd, shape, stride), (), ()


def _unwrap(t):
    return t[0] if type(t) is tuple and len(t) == 1 else t


def _flat_modes(t: KTensor, what: str):
    modes = t.layout.modes()
    for s, _ in modes:
        if type(s) is tuple:
            raise ValueError(f"Expected {what} on a tensor with flat modes, but got the nested layout {t.layout}; "
                             "coalesce or slice it first.")
    return modes


def _tiler(tiler, rank, what):
    if type(tiler) is Layout:
        tiler = tiler.shape
    if type(tiler) is int:
        tiler = (tiler,)
    if type(tiler) is not tuple or not all(type(x) is int and x > 0 for x in tiler):
        raise TypeError(f"Expected {what}'s tiler to be a tuple of positive static ints, but got {tiler!r}.")
    if len(tiler) > rank:
        raise ValueError(f"Expected a tiler of rank <= {rank}, but got rank {len(tiler)}.")
    return tiler + (None,) * (rank - len(tiler))


def ceil_div(a, b):
    return ir.binop("//", ir.binop("+", a, ir.binop("-", b, 1)), b)


def logical_divide(t: KTensor, tiler) -> KTensor:
    modes = _flat_modes(t, "logical_divide")
    tl = _tiler(tiler, len(modes), "logical_divide")
    shp, std = [], []
    for (s, d), k in zip(modes, tl):
        if k is None:
            shp.append(s)
            std.append(d)
        else:
            shp.append((k, ceil_div(s, k)))
            std.append((d, ir.binop("*", k, d)))
    return KTensor(t.buf, t.offset, KLayout(_unwrap(tuple(shp)), _unwrap(tuple(std))))


def local_tile(t: KTensor, tiler, coord) -> KTensor:
    modes = _flat_modes(t, "local_tile")
    tl = _tiler(tiler, len(modes), "local_tile")
    if type(coord) is not tuple:
        coord = (coord,)
    if len(coord) != sum(1 for k in tl if k is not None):
        raise ValueError(f"Expected a tile coordinate of rank {sum(1 for k in tl if k is not None)}, but got rank {len(coord)}.")
    off = t.offset
    shp, std, rest_s, rest_d = [], [], [], []
    ci = iter(coord)
    for (s, d), k in zip(modes, tl):
        if k is None:  # modes past the tiler are kept whole, as in CuTe
            shp.append(s)
            std.append(d)
            continue
        c = next(ci)
        shp.append(k)
        std.append(d)
        if c is None:
            rest_s.append(ceil_div(s, k))
            rest_d.append(ir.binop("*", k, d))
        else:
            off = ir.binop("+", off, ir.binop("*", c, ir.binop("*", k, d)))
    shp += rest_s
    std += rest_d
    return KTensor(t.buf, off, KLayout(_unwrap(tuple(shp)), _unwrap(tuple(std))))


def thread_coord(thr: KLayout, idx):
    """Coordinate of thread idx in a compact static thread layout (inverse of thr)."""
    modes = thr.modes()
    if not thr.is_static:
        raise ValueError(f"Expected a static thread layout, but got {thr}.")
    offs = sorted((d, s) for s, d in modes if s != 1)
    run = 1
    for d, s in offs:
        if d != run:
            raise ValueError(f"Expected a compact thread layout (a bijection onto 0..size-1), but got {thr}.")
        run *= s
    out = []
    for s, d in modes:
        out.append(0 if s == 1 else ir.binop("%", ir.binop("//", idx, d), s))
    return out


def local_partition(t: KTensor, thr, idx) -> KTensor:
    thr = KLayout.of(thr)
    modes = _flat_modes(t, "local_partition")
    tmodes = thr.modes()
    if len(tmodes) > len(modes):
        raise ValueError(f"Expected a thread layout of rank <= {len(modes)}, but got {thr}.")
    for s, _ in tmodes:
        if type(s) is not int:
            raise ValueError(f"Expected a thread layout with flat static modes, but got {thr}.")
    crd = thread_coord(thr, idx)
    off = t.offset
    shp, std = [], []
    for i, (s, d) in enumerate(modes):
        if i >= len(tmodes):
            shp.append(s)
            std.append(d)
            continue
        ts = tmodes[i][0]
        if type(s) is int and s % ts:
            raise ValueError(f"Expected mode {i} of the tensor ({s}) to be divisible by the thread layout's {ts}.")
        shp.append(ir.binop("//", s, ts) if type(s) is int else ceil_div(s, ts))
        std.append(ir.binop("*", ts, d))
        off = ir.binop("+", off, ir.binop("*", crd[i], d))
    return KTensor(t.buf, off, KLayout(_unwrap(tuple(shp)), _unwrap(tuple(std))))
