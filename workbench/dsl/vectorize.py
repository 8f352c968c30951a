"""Lowering of ``wb.copy(src, dst)``: 128-bit accesses where the layouts and alignment prove it safe.

A chunk of ``lanes`` elements becomes one vector access when, for both tensors,
(1) the chunk's offsets are consecutive: checked element by element when the layouts are static inside
    the fragment, else proven by a static stride-1 leading run of both layouts that ``lanes`` divides
    (the other modes' strides may be dynamic: rows of a tile whose row pitch is a ``?``),
(2) the buffer's assumed alignment is a multiple of the access width, and
(3) the chunk's first element is provably aligned: the divisibility of the tensor's base offset plus the
    chunk's offset, times ``sizeof(T)``, is a multiple of the access width (divisibility comes from
    static values, ``Dyn`` divisibility of dynamic shapes/strides, and the arithmetic that combines them).
If any chunk fails, the next narrower width is tried (16, 8, 4 bytes), then element by element.
All loads are issued before the stores (a register fragment), as CuTe's copy does.
"""

from __future__ import annotations

from math import gcd

from ..layout import ComposedLayout, Layout, Swizzle, coalesce, divisibility_of, flatten
from . import ir
from . import views as V

MAX_COPY_ELEMENTS = 1024


def _aligned(t: V.KTensor, off, vbytes: int, es: int) -> bool:
    """Is element ``t.offset + off`` of t's buffer provably ``vbytes``-aligned?  The divisibility of
    a sum is at least the gcd of its terms' (0 divides nothing away: gcd(d, 0) == d)."""
    if t.buf.align % vbytes:
        return False
    return (gcd(divisibility_of(t.offset), divisibility_of(off)) * es) % vbytes == 0


def _leading_run(layout) -> int:
    """The static extent of the layout's first mode once coalesced, when its stride is 1 (else 1): the
    logical elements 0..run-1 are consecutive in memory, and so is every aligned group of ``lanes``
    elements with lanes | run (it lies inside that mode, at any value of the other modes)."""
    c = coalesce(layout.layout if type(layout) is _Offset else layout)
    shape, stride = flatten(c.shape), flatten(c.stride)
    return shape[0] if type(shape[0]) is int and type(stride[0]) is int and stride[0] == 1 else 1


def _unswizzled(layout):
    """offset + L of a swizzled ComposedLayout (a plain layout: the offset folded in), or the layout itself."""
    if type(layout) is not ComposedLayout:
        return layout
    if type(layout.inner) is not Swizzle or type(layout.outer) is not Layout:
        return None
    return _Offset(layout.offset, layout.outer)


class _Offset:
    """offset + L(i), as the planner evaluates a layout (called, sized, coalesced through L)."""

    def __init__(self, offset, layout):
        self.offset, self.layout = offset, layout
        self.size = layout.size

    def __call__(self, i):
        return ir.binop("+", self.offset, self.layout(i))


def plan(src: V.KTensor, dst: V.KTensor, max_lanes: int = 1 << 30):
    """(lanes, [(src_offset, dst_offset)]) for the widest access that is proven safe, at most max_lanes a chunk."""
    if src.etype is not dst.etype:
        raise TypeError(f"Expected copy between tensors of one element type, but got {src.etype} and {dst.etype}.")
    n, m = src.layout.size, dst.layout.size
    if type(n) is not int or type(m) is not int:
        raise ValueError(f"Expected tensors of static size for copy (partition first), but got {src.layout} and {dst.layout}.")
    if n != m:
        raise ValueError(f"Expected copy between tensors of equal size, but got {n} and {m}.")
    if n > MAX_COPY_ELEMENTS:
        raise ValueError(f"Expected a copy of at most {MAX_COPY_ELEMENTS} elements per thread, but got {n}.")
    so = [src.layout(i) for i in range(n)]
    do = [dst.layout(i) for i in range(n)]
    es = src.etype.bits // 8
    if es < 1 or src.etype.bits % 8:
        return 1, list(zip(so, do))
    # a swizzled tensor (Swizzle<B,M,S> o offset o L) keeps every aligned run of 2^M elements of offset + L(i)
    # together and in place: plan on the unswizzled offsets, chunks of at most 2^M, and swizzle each chunk's start
    cap = n
    swizzled = False
    for t in (src, dst):
        if type(t.layout) is ComposedLayout and type(t.layout.inner) is Swizzle:
            cap = min(cap, 1 << t.layout.inner.base)
            swizzled = True
    if swizzled:
        flat_s, flat_d = _unswizzled(src.layout), _unswizzled(dst.layout)
        if flat_s is None or flat_d is None:
            return 1, list(zip(so, do))
        lanes, _ = plan(V.KTensor(src.buf, src.offset, flat_s), V.KTensor(dst.buf, dst.offset, flat_d), cap)
        return lanes, [(so[c], do[c]) for c in range(0, n, lanes)]
    static = all(type(x) is int for x in so + do)
    run = min(_leading_run(src.layout), _leading_run(dst.layout))
    for vbytes in (16, 8, 4):
        lanes = vbytes // es
        if lanes < 2 or n % lanes or lanes > max_lanes:
            continue
        # consecutive chunks: checked element by element when every offset is static, else proven by the
        # layouts' shared leading stride-1 run (dynamic strides elsewhere: CuTe's max_common_vector)
        if static:
            if any(so[c + k] != so[c] + k or do[c + k] != do[c] + k for c in range(0, n, lanes) for k in range(lanes)):
                continue
        elif run % lanes:
            continue
        if all(_aligned(src, so[c], vbytes, es) and _aligned(dst, do[c], vbytes, es) for c in range(0, n, lanes)):
            return lanes, [(so[c], do[c]) for c in range(0, n, lanes)]
    return 1, list(zip(so, do))


def lower_copy(src: V.KTensor, dst: V.KTensor, fresh=None):
    lanes, pairs = plan(src, dst)
    full = [(src.buf, ir.as_expr(ir.binop("+", src.offset, s)), dst.buf, ir.as_expr(ir.binop("+", dst.offset, d)))
            for s, d in pairs]
    return [ir.VecCopy(full, lanes)]

