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

from ..layout import Layout, slice_and_offset
from . import ir


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
