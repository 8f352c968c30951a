"""Identity (coordinate) tensors and ``elem_less``: how CuTe predicates irregular tiles.

``make_identity_tensor(shape)`` is a tensor whose element at coordinate ``c`` is ``c`` itself, in
CuTe's natural (nested) form: its layout has basis strides (``(100,90):(1@0,1@1)``; a nested mode
gets nested bases, ``((2,3),4):((1@0@0,1@1@0),1@1)``; an integer shape plain ``6:1``) and its
"pointer" is a coordinate origin.  Tiled exactly like the data tensor (``local_tile``,
``local_partition``, divides, slicing: the one algebra), each tile element still knows its
coordinate in the whole tensor, so ``elem_less(coord, shape)`` tells whether that element exists.
Works with static shapes, host ``?`` values and, inside kernels, IR expressions.
"""

from __future__ import annotations

from . import inttuple as it
from .basis import ArithTuple, E
from .layout import Layout, _check_leaves, _to_tuple
from .values import Dyn, value_of

__all__ = ["IdentityTensor", "make_identity_tensor", "elem_less", "elem_pairs"]


class IdentityTensor:
    """``T(c) = origin + layout(c)``, a coordinate; no memory behind it."""

    __slots__ = ("origin", "layout")

    def __init__(self, origin, layout: Layout):
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
        if it.has_none(crd):
            from .slicing import slice_and_offset

            sub, off = slice_and_offset(crd, self.layout)
            return IdentityTensor(self.origin + off, sub)
        return self.origin + self.layout(crd)

    def __len__(self) -> int:
        return self.layout.size

    def __iter__(self):
        for i in range(self.layout.size):
            yield self[i]

    def __str__(self) -> str:
        return f"tensor<{self.origin} o {self.layout}>"

    __repr__ = __str__


def make_identity_tensor(shape) -> IdentityTensor:
    """CuTe DSL's ``make_identity_tensor(shape)``: element ``c`` is the coordinate ``c``, nested as
    ``shape`` is (CuTe's ``make_basis_like``).

    ``make_identity_tensor((100, 90))`` prints ``tensor<(0,0) o (100,90):(1@0,1@1)>``,
    ``make_identity_tensor(((2,3),4))[5]`` is ``((1,2),0)`` and ``make_identity_tensor(6)[4]`` is ``4``.
    """
    if isinstance(shape, list):
        shape = _to_tuple(shape)
    _check_leaves(shape, "shape", allow_negative=False)
    if type(shape) is not tuple:
        return IdentityTensor(0, Layout(shape, 1))
    return IdentityTensor(_zeros(shape), Layout(shape, _basis_like(shape, ())))


def _zeros(shape):
    return ArithTuple(_zeros(s) for s in shape) if type(shape) is tuple else 0


def _basis_like(shape, path):
    """CuTe's make_basis_like: the leaf at path (i, j, ...) of shape gets the stride E((i, j, ...))."""
    if type(shape) is tuple:
        return tuple(_basis_like(s, path + (i,)) for i, s in enumerate(shape))
    return E(path)


def elem_pairs(a, b, out=None, depth=0) -> list:
    """The (coordinate entry, extent) pairs elem_less compares: a and b must be congruent (CuTe
    compares nested coordinates leaf by leaf against nested shapes; CuTe DSL refuses other pairs).
    The walk bounds the nesting (inttuple.MAX_NESTING)."""
    out = [] if out is None else out
    ta, tb = isinstance(a, tuple), isinstance(b, tuple)
    if ta and tb and len(a) == len(b):
        if depth >= it.MAX_NESTING:
            raise it.too_deep("coordinate")
        for x, y in zip(a, b):
            if isinstance(x, tuple) or isinstance(y, tuple):
                elem_pairs(x, y, out, depth + 1)
            else:
                out.append((x, y))
    elif ta or tb:   # the side that is still a tuple has not been bounded by this walk
        shape, crd = it.check_nesting(b, "shape"), it.check_nesting(a, "coordinate")
        raise ValueError(f"elem_less: expected a coordinate congruent with the shape {it.format_inttuple(shape)}, "
                         f"but got {it.format_inttuple(crd)}.")
    else:
        out.append((a, b))
    return out


def elem_less(a, b) -> bool:
    """CuTe's elem_less: every entry of coordinate ``a`` is less than the matching extent of the shape
    ``b`` (congruent with ``a``): the element at ``a`` exists.  Inside a kernel the entries are IR
    expressions and the DSL lowers this to an and-chain over the same pairs."""
    for x, y in elem_pairs(a, b):
        if type(x) is Dyn or type(y) is Dyn:  # a host ? compares by its runtime value (raises when it has none)
            x, y = value_of(x), value_of(y)
        if not x < y:
            return False
    return True
