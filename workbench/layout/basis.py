"""Basis strides and arithmetic tuples: the strides of CuTe's identity (coordinate) layouts.

``E(m, s)`` (CuTe's ``s@m``, a ``ScaledBasis``) is ``s`` times the m-th unit vector.  A layout whose
strides are basis elements maps a coordinate to a *tuple* of integers instead of one offset:
``(100,90):(1@0,1@1)`` maps ``(i, j)`` to ``(i, j)`` itself.  Tiling such a layout with the ordinary
algebra (divides, ``local_tile``) keeps track of where each tile element sits in the whole tensor,
which is how CuTe predicates irregular tiles (``make_identity_tensor`` + ``elem_less``).

Algebra: ``k * E(m, s) == E(m, k*s)``; ``E(m, a) + E(m, b) == E(m, a+b)``; a sum over different
modes is an :class:`ArithTuple` (added elementwise; ``0`` is its identity).  Scales follow the
integer protocol, so they may be symbolic (kernel expressions) too.
"""

from __future__ import annotations

__all__ = ["E", "ArithTuple", "basis_value"]


class ArithTuple(tuple):
    """A tuple of integers added elementwise (a coordinate produced by a basis-strided layout)."""

    __slots__ = ()

    def __add__(self, other):
        if type(other) is int and other == 0:
            return self
        if type(other) is E:
            other = other.as_tuple(len(self))
        if isinstance(other, tuple):
            n = max(len(self), len(other))
            a, b = tuple(self) + (0,) * (n - len(self)), tuple(other) + (0,) * (n - len(other))
            return ArithTuple(x + y for x, y in zip(a, b))
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, tuple):
            return self + ArithTuple(-x for x in other)
        return NotImplemented

    def __repr__(self) -> str:
        return "(" + ",".join(str(x) for x in self) + ")"

    __str__ = __repr__


class E:
    """The basis stride ``scale@mode``: ``scale`` times the unit vector of coordinate ``mode``."""

    __slots__ = ("mode", "scale")
    _is_basis = True

    def __init__(self, mode: int, scale=1):
        if type(mode) is not int or mode < 0:
            raise ValueError(f"Expected a basis mode >= 0, but got {mode!r}.")
        self.mode, self.scale = mode, scale

    def as_tuple(self, n: int = 0) -> ArithTuple:
        n = max(n, self.mode + 1)
        return ArithTuple(self.scale if i == self.mode else 0 for i in range(n))

    def __mul__(self, k):
        if isinstance(k, E):
            return NotImplemented
        if type(k) is int and k == 0:
            return 0
        return E(self.mode, self.scale * k)

    def __rmul__(self, k):
        if type(k) is int and k == 0:
            return 0
        return E(self.mode, k * self.scale)

    def __add__(self, other):
        if type(other) is int and other == 0:
            return self
        if type(other) is E and other.mode == self.mode:
            return E(self.mode, self.scale + other.scale)
        if type(other) is E or isinstance(other, tuple):
            return self.as_tuple() + other
        return NotImplemented

    __radd__ = __add__

    def __neg__(self):
        return E(self.mode, -self.scale)

    def __eq__(self, other) -> bool:
        return type(other) is E and other.mode == self.mode and other.scale == self.scale

    def __hash__(self) -> int:
        return hash((E, self.mode, self.scale))

    def signature(self):
        from .values import signature

        return ("E", self.mode, signature(self.scale))

    def __repr__(self) -> str:
        return f"{self.scale}@{self.mode}"

    __str__ = __repr__


def basis_value(x, rank: int):
    """x (0, an int offset that must be 0, a basis element or an ArithTuple) as an ArithTuple of length rank."""
    if type(x) is E:
        return x.as_tuple(rank)
    if isinstance(x, tuple):
        return ArithTuple(x) + ArithTuple((0,) * rank)
    if type(x) is int and x == 0:
        return ArithTuple((0,) * rank)
    raise TypeError(f"Expected a coordinate (basis element or tuple), but got {x!r}.")
