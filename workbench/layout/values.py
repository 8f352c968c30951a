"""The one integer protocol of the layout core: a static ``int`` or a :class:`Symbolic` value.

A static value is a plain Python ``int``.  A symbolic value is one a compiled kernel does not
know at compile time: CuTe prints it as ``?``.  Every symbolic value says what the compiler may
assume about it (its bit ``width`` and a ``divisibility``) and, when known, its ``value``.
Two kinds implement the protocol: :class:`Dyn` (a host-side ``?``, e.g. a marked tensor's extent,
possibly carrying the live tensor's value) and the kernel IR's expressions (``workbench.dsl.ir``),
so the same algebra runs on the host and inside kernels, as pycute's ``Integer`` does.

Divisibility propagates the way CuTe derives it:
``div(a*b) = div(a)*div(b)``, ``div(a+b) = gcd(div(a), div(b))``,
``div(a // c) = div(a)//c`` when ``c`` divides ``div(a)``, else 1.

Code that must tell static from symbolic asks by type (:func:`is_symbolic`, :func:`known_value`),
never by catching an error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from math import gcd

__all__ = [
    "Symbolic", "Dyn", "is_static", "is_symbolic", "is_dynamic", "known_value", "value_of", "divisibility_of",
    "signature", "ceil_div", "shape_div", "imin",
]


class Symbolic(ABC):
    """Base of every symbolic (dynamic) integer.  The protocol the layout core relies on:

    * ``value``: the runtime value when known, else ``None``;
    * ``width``: 32 or 64 (bits); ``divisibility``: a positive int that divides the value;
    * ``+ - * // %`` and unary ``-`` with ints and symbolic values of the same kind, giving an
      int or a symbolic value (implementations fold what they can);
    * ``ceil_div(b)``, ``shape_div(b)`` (CuTe's shape_div) and ``min(b)`` for int or symbolic b.
    """

    __slots__ = ()

    @abstractmethod
    def ceil_div(self, b): ...

    @abstractmethod
    def shape_div(self, b): ...

    @abstractmethod
    def min(self, b): ...


class Dyn(Symbolic):
    """A host-side dynamic integer: ``?``, ``?{i64}``, ``?{div=N}``, ``?{i64 div=N}``.

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

    # -- the protocol's named operations --------------------------------------------------------
    @staticmethod
    def static(v: int) -> Dyn:
        """A known int as a Dyn (so a protocol method can be called on it)."""
        return Dyn(v, 64 if abs(v) >= 1 << 31 else 32, abs(v) or 1)

    def _div(self, other) -> int:
        return other.divisibility if type(other) is Dyn else abs(other)

    def _width(self, other) -> int:
        return max(self.width, other.width) if type(other) is Dyn else self.width

    def _known(self, other):
        return other.value if type(other) is Dyn else other

    def _make(self, other, v, d) -> Dyn:
        return Dyn(v, self._width(other), d if d and (v is None or v % d == 0) else 1)

    def ceil_div(self, b):
        """ceil(self / b); exact (keeping divisibility) when a static b divides the divisibility."""
        va, vb = self.value, self._known(b)
        v = None if va is None or vb is None else -(-va // vb)
        d = self.divisibility // b if type(b) is int and self.divisibility % b == 0 else 1
        return self._make(b, v, d)

    def shape_div(self, b):
        """CuTe's shape_div; with both values known a pair that does not divide raises."""
        va, vb = self.value, self._known(b)
        v = None
        if va is not None and vb is not None:
            if vb and va % vb == 0:
                v = va // vb
            elif va and vb % va == 0:
                v = 1
            else:
                raise ValueError(f"runtime values {va} and {vb} do not divide one another (divisibility condition).")
        d = self.divisibility // b if type(b) is int and self.divisibility % b == 0 else 1
        return self._make(b, v, d)

    def min(self, b):
        va, vb = self.value, self._known(b)
        v = None if va is None or vb is None else min(va, vb)
        return self._make(b, v, gcd(self.divisibility, self._div(b)))




def is_static(x) -> bool:
    """True for an int or a (nested) tuple holding only ints (a static basis stride counts)."""
    t = type(x)
    if t is int:
        return True
    if t is tuple:
        return all(is_static(e) for e in x)
    return getattr(x, "_is_basis", False) and is_static(x.scale)


def is_symbolic(x) -> bool:
    """True for a symbolic (dynamic) integer: a :class:`Dyn` or a kernel expression."""
    return isinstance(x, Symbolic)


is_dynamic = is_symbolic


def known_value(x):
    """The integer value of x when known (a static int, or a symbolic value that carries one), else None."""
    return x if type(x) is int else x.value


def value_of(x):
    """The runtime value of an int, a symbolic value or a nested tuple of them (raises for an unknown one)."""
    if type(x) is int:
        return x
    if type(x) is tuple:
        return tuple(value_of(e) for e in x)
    if isinstance(x, Symbolic):
        if x.value is None:
            raise ValueError(f"Expected a dynamic value with a known runtime value, but got the symbolic {x!r}.")
        return x.value
    if getattr(x, "_is_basis", False):
        return x
    raise TypeError(f"Expected an int, a dynamic value or a tuple of them, but got {type(x).__name__}.")


def has_values(x) -> bool:
    """True when every leaf of x is an int or a symbolic value with a known value (value_of succeeds)."""
    if type(x) is int:
        return True
    if type(x) is tuple:
        return all(has_values(e) for e in x)
    if isinstance(x, Symbolic):
        return x.value is not None
    return getattr(x, "_is_basis", False) and has_values(x.scale)


def divisibility_of(x) -> int:
    """The largest number known to divide x: |x| for a static int (0 for 0), else x.divisibility."""
    if type(x) is int:
        return abs(x)
    return x.divisibility


def signature(x):
    """What a compiled kernel depends on in an IntTuple: static ints as they are, each dynamic value
    as ``('?', width, divisibility)`` (its run-time value left out)."""
    if type(x) is tuple:
        return tuple(signature(e) for e in x)
    return x if type(x) is int else x.signature()


# -- the operations the algebra needs beyond + - * // %, dispatched by type -----------------------
def ceil_div(a, b):
    """ceil(a / b) for a > 0, b > 0; symbolic operands keep what divisibility proves."""
    if type(a) is int and type(b) is int:
        return -(-a // b)
    if type(b) is int and b == 1:
        return a
    if type(a) is int:
        return _lift(b, a).ceil_div(b)
    return a.ceil_div(b)


def shape_div(a, b):
    """CuTe's shape_div: a / b when b divides a, 1 when a divides b (the mode is used up), else an
    error (the divisibility condition)."""
    if type(a) is int and type(b) is int:
        if b and a % b == 0:
            return a // b
        if a and b % a == 0:
            return 1
        raise ValueError(f"{a} and {b} do not divide one another (divisibility condition).")
    if type(b) is int and b == 1:
        return a
    if type(a) is int:
        return _lift(b, a).shape_div(b)
    return a.shape_div(b)


def imin(a, b):
    """min(a, b) over the protocol."""
    if type(a) is int and type(b) is int:
        return a if a < b else b
    if type(a) is int:
        return b.min(a)
    return a.min(b)


def _lift(like, v: int):
    """A static int as a symbolic value of like's kind (to call a protocol method on it)."""
    return like.static(v)
