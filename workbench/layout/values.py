"""Static and dynamic integers.

A static value is a plain Python ``int``.  A dynamic value (:class:`Dyn`) is a value that
a compiled kernel does not know at compile time: CuTe prints it as ``?``.  It still carries
what the compiler may assume about it (its bit width and a divisibility) and, when it
came from a live tensor, the actual value, so that a layout with ``?`` modes can still be
evaluated and drawn.

Divisibility propagates the way CuTe derives it:
``div(a*b) = div(a)*div(b)``, ``div(a+b) = gcd(div(a), div(b))``,
``div(a // c) = div(a)//c`` when ``c`` divides ``div(a)``, else 1.
"""

from __future__ import annotations

from math import gcd

__all__ = ["Dyn", "is_static", "is_dynamic", "value_of", "divisibility_of", "signature"]


class Dyn:
    """A dynamic integer: ``?``, ``?{i64}``, ``?{div=N}``, ``?{i64 div=N}``.

    ``value`` is the runtime value when known (``None`` for a purely symbolic value);
    ``width`` is 32 or 64 bits; ``divisibility`` is a positive integer known to divide it.
    """

    __slots__ = ("value", "width", "divisibility")

    def __init__(self, value: int | None = None, width: int = 32, divisibility: int = 1):
        if width not in (32, 64):
            raise ValueError(f"Expected a dynamic value width of 32 or 64 bits, but got {width!r}.")
        if type(divisibility) is not int or divisibility <= 0:
            raise ValueError(f"Expected a positive integer divisibility, but got {divisibility!r}.")
        if value is not None:
            if type(value) is not int:
                raise TypeError(f"Expected the value of a dynamic integer to be an int, but got {type(value).__name__}.")
            if value % divisibility:
                raise ValueError(f"Expected a value divisible by {divisibility}, but got {value}.")
        self.value = value
        self.width = width
        self.divisibility = divisibility

    # -- identity -------------------------------------------------------------------------
    def __repr__(self) -> str:
        attrs = []
        if self.width == 64:
            attrs.append("i64")
        if self.divisibility != 1:
            attrs.append(f"div={self.divisibility}")
        return "?{" + " ".join(attrs) + "}" if attrs else "?"

    __str__ = __repr__

    def signature(self) -> tuple:
        """What a compiled kernel depends on: width and divisibility, never the value."""
        return ("?", self.width, self.divisibility)

    def __eq__(self, other) -> bool:
        return (
            type(other) is Dyn
            and self.value == other.value
            and self.width == other.width
            and self.divisibility == other.divisibility
        )

    def __hash__(self) -> int:
        return hash((Dyn, self.value, self.width, self.divisibility))

    def __int__(self) -> int:
        if self.value is None:
            raise ValueError(f"Expected a dynamic value with a known runtime value, but got the symbolic {self!r}.")
        return self.value

    __index__ = __int__

    # -- arithmetic (value and divisibility both propagate) --------------------------------
    def _combine(self, other, op, div):
        width = max(self.width, other.width) if type(other) is Dyn else self.width
        ov = other.value if type(other) is Dyn else other
        value = None if self.value is None or ov is None else op(self.value, ov)
        d = div if value is None or (div and value % div == 0) else 1
        return Dyn(value, width, d or 1)

    def __mul__(self, other):
        if type(other) is int:
            if other == 0:
                return 0
            if other == 1:
                return self
            return self._combine(other, int.__mul__, self.divisibility * abs(other))
        if type(other) is Dyn:
            return self._combine(other, int.__mul__, self.divisibility * other.divisibility)
        return NotImplemented

    __rmul__ = __mul__

    def __add__(self, other):
        if type(other) is int:
            if other == 0:
                return self
            return self._combine(other, int.__add__, gcd(self.divisibility, other))
        if type(other) is Dyn:
            return self._combine(other, int.__add__, gcd(self.divisibility, other.divisibility))
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if type(other) in (int, Dyn):
            return self + (-other)
        return NotImplemented

    def __rsub__(self, other):
        return (-self) + other

    def __neg__(self):
        return Dyn(None if self.value is None else -self.value, self.width, self.divisibility)

    def __floordiv__(self, other):
        if type(other) is int:
            if other == 1:
                return self
            d = self.divisibility // other if self.divisibility % other == 0 else 1
            return self._combine(other, int.__floordiv__, d)
        if type(other) is Dyn:
            return self._combine(other, int.__floordiv__, 1)
        return NotImplemented

    def __rfloordiv__(self, other):
        if type(other) is int:
            return Dyn(None if self.value is None else other // self.value, self.width, 1)
        return NotImplemented

    def __mod__(self, other):
        if type(other) is int:
            return self._combine(other, int.__mod__, gcd(self.divisibility, other))
        if type(other) is Dyn:
            return self._combine(other, int.__mod__, gcd(self.divisibility, other.divisibility))
        return NotImplemented

    def __rmod__(self, other):
        if type(other) is int:
            return Dyn(None if self.value is None else other % self.value, self.width, 1)
        return NotImplemented


def is_static(x) -> bool:
    """True for an int or a (nested) tuple holding only ints."""
    if type(x) is int:
        return True
    if type(x) is tuple:
        return all(is_static(e) for e in x)
    return False


def is_dynamic(x) -> bool:
    """True for a :class:`Dyn`."""
    return type(x) is Dyn


def value_of(x):
    """The runtime value of an int, a Dyn or a nested tuple of them (raises for a symbolic Dyn)."""
    if type(x) is int:
        return x
    if type(x) is Dyn:
        return int(x)
    if type(x) is tuple:
        return tuple(value_of(e) for e in x)
    raise TypeError(f"Expected an int, a dynamic value or a tuple of them, but got {type(x).__name__}.")


def divisibility_of(x) -> int:
    """The largest power the compiler may assume divides x: x itself for a static int."""
    if type(x) is int:
        return abs(x) if x else 0
    return x.divisibility


def signature(x):
    """What a compiled kernel depends on in an IntTuple: static ints as they are, each dynamic value
    as ``('?', width, divisibility)`` (its run-time value left out)."""
    if type(x) is tuple:
        return tuple(signature(e) for e in x)
    return x if type(x) is int else x.signature()
