"""Tensors inside a kernel: a buffer, an element offset and a layout of the core.

``T(c) = buf[offset + layout(c)]``, where ``layout`` is a :class:`workbench.layout.Layout` whose
integers are Python ints (static: folded into the generated code) or IR expressions (dynamic:
kernel parameters and values computed from them; :class:`~workbench.dsl.ir.Expr` implements the
core's integer protocol).  Everything a kernel does with layouts (``local_tile``,
``logical_divide``, ``local_partition``, slicing, identity tensors) is the core's algebra run
while tracing; a KTensor only supplies ``_with_layout``, the hook through which the core's
tensor functions re-wrap a derived layout and offset over the same memory.
"""

from __future__ import annotations

import numpy as np

from ..layout import ComposedLayout, Layout, divisibility_of, recast_layout, slice_and_offset
from . import ir


def refuse_packed(buf):
    """A 4-bit buffer (Float4E2M1FN, two values a byte) is moved by whole bytes (TMA) and read by tcgen05.mma; one
    element is half a byte another thread may write at the same time, so no thread reads or writes one."""
    if buf.etype.bits < 8:
        raise TypeError(f"Expected a tensor of 8-bit or wider elements to read or write element by element, but "
                        f"{buf.name} holds {buf.etype}, packed two a byte: a 4-bit element is half a byte that another "
                        "value shares, so kernels do not read or write one (the GPU would rewrite the whole byte, racing "
                        "with the thread that writes the other half).  Load 4-bit tiles with wb.tma_load of their packed "
                        "bytes (a wb.Uint8 tensor's descriptor) and pass them to wb.gemm with a kind::mxf4 UMMA atom.")


def packed_bytes(t, what, along=None):
    """(byte offset expression, byte layout) of a 4-bit (MN, K) shared tile t, the layout ``recast_layout(8, 4,
    t.layout)`` proven element by element to hold element (x, 2j + h) (or (2i + h, y) when the pairs run along MN)
    in nibble h (the low one first) of the byte it maps (x, j) to: how TMA moves the tile's bytes and a UMMA
    descriptor reads them.  ``along="K"``: the pairs must run along K (a K-major operand)."""
    lay = t.layout
    rank = lay.rank if type(lay.shape) is tuple else 1
    if rank != 2 or not lay.is_static:
        raise ValueError(f"{what}: expected a 4-bit tile as a static rank-2 (MN, K) layout, but got {lay}.")
    try:
        byte = recast_layout(8, 4, lay)
    except Exception as e:       # the core names why the layout does not pack into bytes
        raise ValueError(f"{what}: the 4-bit tile {lay} does not pack into bytes: {e}") from None
    mn, k = lay[0].size, lay[1].size
    outer = byte.outer if type(byte) is ComposedLayout else byte
    bm, bk = outer[0].size, outer[1].size
    f = np.asarray(lay.offsets(), dtype=np.int64).reshape(k, mn).T
    b = np.asarray(byte.offsets(), dtype=np.int64).reshape(bk, bm).T
    if (bm, bk) == (mn, k // 2) and k % 2 == 0:
        lo, hi = f[:, 0::2], f[:, 1::2]
    elif (bm, bk) == (mn // 2, k) and mn % 2 == 0 and along != "K":
        lo, hi = f[0::2, :], f[1::2, :]
    else:
        lo = hi = None
    if lo is None or not ((lo == 2 * b).all() and (hi == 2 * b + 1).all()):
        raise ValueError(f"{what}: the 4-bit tile {lay} does not keep each pair of neighbouring values"
                         f"{' along K' if along == 'K' else ''} in one byte (the low nibble first) as {byte} maps them; lay 4-bit tiles out with a byte atom recast to "
                         "4 bits, e.g. wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom('Layout_K_SW128_Atom', "
                         "wb.Uint8)), (MN, K)).")
    if t.offset != 0 and divisibility_of(t.offset) % 2:
        raise ValueError(f"{what}: the 4-bit tile must start on a byte (an even element offset), but its offset is "
                         f"{t.offset}.")
    return (ir.binop("//", t.offset, 2) if t.offset != 0 else 0), byte


class KPointer:
    """A pointer parameter (from wb.make_ptr): turned into a tensor by wb.make_tensor in the kernel."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class KTensor:
    """``buf[offset + layout(c)]``: a view of global or shared memory inside a kernel."""

    __slots__ = ("buf", "offset", "layout")

    def __init__(self, buf, offset, layout: Layout):
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
        return f"tensor<{self.buf.etype}@{self.buf.space} o {self.layout}>"

    def _with_layout(self, layout: Layout, offset) -> KTensor:
        """The same memory seen through a derived layout, ``offset`` elements further (the core's hook)."""
        return KTensor(self.buf, ir.binop("+", self.offset, offset), layout)

    def offset_of(self, crd):
        """Element offset of a full coordinate or 1-D index."""
        return ir.binop("+", self.offset, self.layout(crd))

    def slice(self, crd) -> KTensor:
        """CuTe slicing: None (``_``) keeps a mode, a value fixes it."""
        sub, off = slice_and_offset(crd, self.layout)
        return self._with_layout(sub, off)
