"""Identity (coordinate) tensors and ``elem_less``: how CuTe predicates irregular tiles.

``make_identity_tensor(shape)`` is a tensor whose element at coordinate ``c`` is ``c`` itself: its
layout has basis strides (``(100,90):(1@0,1@1)``) and its "pointer" is a coordinate origin.  Tiled
exactly like the data tensor (``local_tile``, ``local_partition``, divides, slicing: the one
algebra), each tile element still knows its coordinate in the whole tensor, so
``elem_less(coord, shape)`` tells whether that element exists.  Works with static shapes, host
``?`` values and, inside kernels, IR expressions.
"""

from __future__ import annotations

from . import inttuple as it
from .basis import ArithTuple, E, basis_value
from .layout import Layout
from .values import Dyn, Symbolic, value_of

__all__ = ["IdentityTensor", "make_identity_tensor", "elem_less"]


class IdentityTensor:
    """``T(c) = origin + layout(c)``, a coordinate; no memory behind it."""

    __slots__ = ("origin", "layout")

    def __init__(self, origin: ArithTuple, layout: Layout):
        self.origin, self.layout = origin, layout

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    def _with_layout(self, layout: Layout, offset) -> IdentityTensor:
        """The same coordinates seen through a derived layout (what local_tile & co. return)."""
        return IdentityTensor(self.origin + offset, layout)

    def __getitem__(self, crd):
        """The coordinate at ``crd`` (an index or a coordinate); with None modes, a sub-tensor."""
        if crd is None or (type(crd) is tuple and any(c is None or type(c) is tuple and None in it.flatten(c) for c in crd)):
            from .slicing import slice_and_offset

            sub, off = slice_and_offset(crd, self.layout)
            return IdentityTensor(self.origin + off, sub)
        return self.origin + basis_value(self.layout(crd), len(self.origin))

    def __len__(self) -> int:
        return self.layout.size

    def __iter__(self):
        for i in range(self.layout.size):
            yield self[i]

    def __str__(self) -> str:
        return f"tensor<{self.origin} o {self.layout}>"

    __repr__ = __str__


def make_identity_tensor(shape) -> IdentityTensor:
    """CuTe DSL's ``make_identity_tensor(shape)``: element ``c`` is the coordinate ``c``.

    ``make_identity_tensor((100, 90))`` prints ``tensor<(0,0) o (100,90):(1@0,1@1)>``.
    # Note: a nested top-level mode yields its colexicographic 1-D index (CuTe yields a nested
    # coordinate); ``elem_less`` against the mode's size is the same predicate.
    """
    if isinstance(shape, list):
        shape = tuple(shape)
    if type(shape) is not tuple:
        shape = (shape,)
    for s in it.flatten(shape):
        if not (type(s) is int or isinstance(s, Symbolic)):
            raise TypeError(f"make_identity_tensor: expected a shape of ints or dynamic values, but got {s!r}.")
    stride = tuple(_basis_like(s, E(i)) for i, s in enumerate(shape))
    layout = Layout(shape if len(shape) > 1 else shape[0], stride if len(shape) > 1 else stride[0])
    return IdentityTensor(ArithTuple((0,) * len(shape)), layout)


def _basis_like(s, e: E):
    """Strides for one top-level mode: e for an integer mode, e times the compact strides for a nested one."""
    if type(s) is tuple:
        return it.unflatten([e * d for d in it.flatten(it.compact_col_major(s))], s)
    return e


def elem_less(a, b) -> bool:
    """CuTe's elem_less: every entry of coordinate ``a`` is less than the matching entry of ``b``
    (a shape): the element at ``a`` exists.  Nested modes of ``b`` compare by their size.
    Inside a kernel the entries are IR expressions and the DSL lowers this to an and-chain."""
    if type(a) is not tuple and not isinstance(a, tuple):
        b = it.product(b) if type(b) is tuple else b
        if type(a) is Dyn or type(b) is Dyn:  # a host ? compares by its runtime value (raises when it has none)
            return value_of(a) < value_of(b)
        return a < b
    bs = b if type(b) is tuple else (b,)
    if len(a) != len(bs):
        raise ValueError(f"elem_less: expected a coordinate of rank {len(bs)}, but got {a!r}.")
    return all(elem_less(x, y) for x, y in zip(a, bs))
