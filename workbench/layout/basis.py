"""Basis strides and arithmetic tuples: the strides of CuTe's identity (coordinate) layouts.

``E(m, s)`` (CuTe's ``s@m``, a ``ScaledBasis``) is ``s`` times the unit vector of coordinate entry
``m``; ``m`` may be a path into a nested coordinate, outermost mode first: ``E((0, 1))`` is CuTe's
``E<0,1>``, the second entry of mode 0, printed as CuTe prints it, ``1@1@0``.  A layout whose strides
are basis elements maps a coordinate to a *tuple* of integers instead of one offset:
``(100,90):(1@0,1@1)`` maps ``(i, j)`` to ``(i, j)`` itself, ``((2,3),4):((1@0@0,1@1@0),1@1)`` maps
``((i, j), k)`` to ``((i, j), k)``.  Tiling such a layout with the ordinary algebra (divides,
``local_tile``) keeps track of where each tile element sits in the whole tensor, which is how CuTe
predicates irregular tiles (``make_identity_tensor`` + ``elem_less``).

Algebra: ``k * E(m, s) == E(m, k*s)``; ``E(m, a) + E(m, b) == E(m, a+b)``; a sum over different
entries is an :class:`ArithTuple` (added entry by entry, a missing entry counting as 0).  Scales
follow the integer protocol, so they may be symbolic (kernel expressions) too.
"""

from __future__ import annotations

__all__ = ["E", "ArithTuple", "map_leaves"]


def _is_zero(x) -> bool:
    return type(x) is int and x == 0


def _add(a, b):
    """Entrywise a + b of (nested) coordinates; a missing entry, or a 0 standing for a whole mode, is 0."""
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    ta, tb = isinstance(a, tuple), isinstance(b, tuple)
    if ta and tb:
        n = max(len(a), len(b))
        return ArithTuple(_add(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
    if ta or tb:
        raise ValueError(f"Expected coordinates of the same profile to add, but got {a} and {b}.")
    return a + b


class ArithTuple(tuple):
    """A (nested) tuple of integers added entrywise: a coordinate produced by a basis-strided layout."""

    __slots__ = ()

    def __add__(self, other):
        if type(other) is E:
            other = other.as_tuple()
        if _is_zero(other) or isinstance(other, tuple):
            return _add(self, other)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, tuple):
            return self + map_leaves(lambda x: -x, ArithTuple(other))
        return NotImplemented

    def __repr__(self) -> str:
        return "(" + ",".join(str(x) for x in self) + ")"

    __str__ = __repr__


def map_leaves(f, t):
    """f applied to every integer of a (nested) coordinate, keeping its structure (and ArithTuple type)."""
    if isinstance(t, tuple):
        out = (map_leaves(f, e) for e in t)
        return ArithTuple(out) if type(t) is ArithTuple else tuple(out)
    return f(t)


class E:
    """The basis stride ``scale@path``: ``scale`` times the unit vector of the coordinate entry at
    ``path`` (a mode, or a tuple of modes into a nested coordinate, outermost first)."""

    __slots__ = ("path", "scale")
    _is_basis = True

    def __init__(self, mode, scale=1):
        path = mode if type(mode) is tuple else (mode,)
        if not path or any(type(p) is not int or p < 0 for p in path):
            raise ValueError(f"Expected a basis mode >= 0 or a non-empty tuple of them, but got {mode!r}.")
        self.path, self.scale = path, scale

    def as_tuple(self) -> ArithTuple:
        """The coordinate this basis element stands for, padded with zeros only up to its own entry:
        E((0, 1), 5) is ((0,5),)."""
        v = self.scale
        for p in reversed(self.path):
            v = ArithTuple((0,) * p + (v,))
        return v

    def __mul__(self, k):
        if isinstance(k, E):
            return NotImplemented
        if _is_zero(k):
            return 0
        return E(self.path, self.scale * k)

    def __rmul__(self, k):
        if _is_zero(k):
            return 0
        return E(self.path, k * self.scale)

    def __add__(self, other):
        if _is_zero(other):
            return self
        if type(other) is E and other.path == self.path:
            return E(self.path, self.scale + other.scale)
        if type(other) is E or isinstance(other, tuple):
            return _add(self.as_tuple(), other.as_tuple() if type(other) is E else other)
        return NotImplemented

    __radd__ = __add__

    def __neg__(self):
        return E(self.path, -self.scale)

    def __eq__(self, other) -> bool:
        return type(other) is E and other.path == self.path and other.scale == self.scale

    def __hash__(self) -> int:
        return hash((E, self.path, self.scale))

    def signature(self):
        from .values import signature

        return ("E", self.path, signature(self.scale))

    def __repr__(self) -> str:
        return f"{self.scale}@" + "@".join(str(p) for p in reversed(self.path))

    __str__ = __repr__
