"""Lowering of ``wb.copy(src, dst)``: 128-bit accesses where the layouts and alignment prove it safe.

A chunk of ``lanes`` elements becomes one vector access when, for both tensors,
(1) the chunk's offsets are static and consecutive (the layouts are static inside the fragment),
(2) the buffer's assumed alignment is a multiple of the access width, and
(3) the base offset is provably aligned: ``div(base) * sizeof(T)`` and the chunk's static offset
    times ``sizeof(T)`` are multiples of the access width (divisibility comes from static
    values, ``Dyn`` divisibility of dynamic shapes/strides, and the arithmetic that combines them).
If any chunk fails, the next narrower width is tried (16, 8, 4 bytes), then element by element.
All loads are issued before the stores (a register fragment), as CuTe's copy does.
"""

from __future__ import annotations

from ..layout import divisibility_of
from . import ir
from . import views as V

MAX_COPY_ELEMENTS = 1024


def _aligned(t: V.KTensor, static_off: int, vbytes: int, es: int) -> bool:
    if t.buf.align % vbytes:
        return False
    base = t.offset
    bdiv = divisibility_of(base)
    if (bdiv * es) % vbytes:
        return False
    return (static_off * es) % vbytes == 0


def plan(src: V.KTensor, dst: V.KTensor):
    """(lanes, [(src_static_offset, dst_static_offset)]) for the widest access that is proven safe."""
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
    static = all(type(x) is int for x in so + do)
    if static and es >= 1 and src.etype.bits % 8 == 0:
        for vbytes in (16, 8, 4):
            lanes = vbytes // es
            if lanes < 2 or n % lanes:
                continue
            ok = True
            for c in range(0, n, lanes):
                s0, d0 = so[c], do[c]
                if any(so[c + k] != s0 + k or do[c + k] != d0 + k for k in range(lanes)):
                    ok = False
                    break
                if not (_aligned(src, s0, vbytes, es) and _aligned(dst, d0, vbytes, es)):
                    ok = False
                    break
            if ok:
                return lanes, [(so[c], do[c]) for c in range(0, n, lanes)]
    return 1, list(zip(so, do))


def lower_copy(src: V.KTensor, dst: V.KTensor, fresh=None):
    lanes, pairs = plan(src, dst)
    full = [(src.buf, ir.as_expr(ir.binop("+", src.offset, s)), dst.buf, ir.as_expr(ir.binop("+", dst.offset, d)))
            for s, d in pairs]
    return [ir.VecCopy(full, lanes)]

