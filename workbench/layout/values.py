"""The one integer protocol of the layout core: a static ``int`` or a :class:`Symbolic` value.

A static value is a plain Python ``int``.  A symbolic value is one a compiled kernel does not
know at compile time: CuTe prints it as ``?``.  Every symbolic value says what the compiler may
assume about it (its bit ``width`` and a ``divisibility``) and, when known, its ``value``.
Two kinds implement the protocol: :class:`Dyn` (a host-side ``?``, e.g. a marked tensor's extent,
possibly carrying the live tensor's value) and the kernel IR's expressions (``workbench.dsl.ir``),
so the same algebra runs on the host and inside kernels, as pycute's ``Integer`` does.

Divisibility propagates the way CuTe derives it, by one rule for both kinds (:func:`op_divisibility`):
``div(a*b) = div(a)*div(b)``, ``div(a+b) = gcd(div(a), div(b))``,
``div(a // c) = div(a)//c`` when ``c`` divides ``div(a)``, else 1.  What the algebra may divide is
decided by one function too (:func:`shape_div`): known values decide, else the divisibility must
prove it, else it raises (a compiled kernel cannot check it, and would compute a wrong layout).

Code that must tell static from symbolic asks by type (:func:`is_symbolic`, :func:`known_value`),
never by catching an error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from math import gcd

__all__ = [
    "Symbolic", "Dyn", "is_static", "is_symbolic", "is_dynamic", "known_value", "value_of", "divisibility_of",
    "signature", "ceil_div", "shape_div", "imin", "op_divisibility",
]


class Symbolic(ABC):
    """Base of every symbolic (dynamic) integer.  The protocol the layout core relies on:

    * ``value``: the runtime value when known, else ``None``;
    * ``width``: 32 or 64 (bits); ``divisibility``: a positive int that divides the value;
    * ``+ - * // %`` and unary ``-`` with ints and symbolic values of the same kind, giving an
      int or a symbolic value (implementations fold what they can), the result's divisibility
      given by :func:`op_divisibility`;
    * ``min(b)`` for int or symbolic b.

    ``ceil_div`` and ``shape_div`` are built on these, once, in this module.
    """

    __slots__ = ()

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

    # -- order: by the runtime value when it is known; a symbolic value has none to compare --------
    def _ordered(self, other, op):
        ov = other.value if type(other) is Dyn else other
        if type(ov) is bool or not isinstance(ov, (int, float)) or (type(other) is not Dyn and ov != ov):
            return NotImplemented
        if self.value is None or ov is None:
            raise TypeError(f"Expected values known here to compare, but got {self!r} {op} {other!r}: a dynamic "
                            "value read without a runtime value (from CuTe text, or a symbolic layout) has no order; "
                            "give it a value (wb.Dyn(value, ...)) or compare its divisibility.")
        return {"<": self.value < ov, "<=": self.value <= ov, ">": self.value > ov, ">=": self.value >= ov}[op]

    def __lt__(self, other):
        return self._ordered(other, "<")

    def __le__(self, other):
        return self._ordered(other, "<=")

    def __gt__(self, other):
        return self._ordered(other, ">")

    def __ge__(self, other):
        return self._ordered(other, ">=")

    def __int__(self) -> int:
        if self.value is None:
            raise ValueError(f"Expected a dynamic value with a known runtime value, but got the symbolic {self!r}.")
        return self.value

    __index__ = __int__

    # -- arithmetic (value and divisibility both propagate) --------------------------------
    def _combine(self, other, op, name, reflected=False):
        """self op other (other op self when reflected) for an int or Dyn other."""
        width = max(self.width, other.width) if type(other) is Dyn else self.width
        ov = other.value if type(other) is Dyn else other
        a, b = (ov, self.value) if reflected else (self.value, ov)
        value = None if a is None or b is None else op(a, b)
        ds, do = self.divisibility, divisibility_of(other)
        div = op_divisibility(name, do, ds) if reflected else \
            op_divisibility(name, ds, do, other if type(other) is int else None)
        d = div if value is None or (div and value % div == 0) else 1
        return Dyn(value, width, d or 1)

    def __mul__(self, other):
        if type(other) is int:
            if other == 0:
                return 0
            if other == 1:
                return self
        elif type(other) is not Dyn:
            return NotImplemented
        return self._combine(other, int.__mul__, "*")

    __rmul__ = __mul__

    def __add__(self, other):
        if type(other) is int:
            if other == 0:
                return self
        elif type(other) is not Dyn:
            return NotImplemented
        return self._combine(other, int.__add__, "+")

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
        if type(other) is int and other == 1:
            return self
        if type(other) not in (int, Dyn):
            return NotImplemented
        return self._combine(other, int.__floordiv__, "//")

    def __rfloordiv__(self, other):
        if type(other) is int:
            return self._combine(other, int.__floordiv__, "//", reflected=True)
        return NotImplemented

    def __mod__(self, other):
        if type(other) not in (int, Dyn):
            return NotImplemented
        return self._combine(other, int.__mod__, "%")

    def __rmod__(self, other):
        if type(other) is int:
            return self._combine(other, int.__mod__, "%", reflected=True)
        return NotImplemented

    # -- bit operations (a swizzle of a run-time offset): value and op_divisibility's powers of two -------------
    def _bits(self, other, op, name, reflected=False):
        if type(other) not in (int, Dyn):
            return NotImplemented
        return self._combine(other, op, name, reflected)

    def __and__(self, other):
        return self._bits(other, int.__and__, "&")

    def __or__(self, other):
        return self._bits(other, int.__or__, "|")

    def __xor__(self, other):
        return self._bits(other, int.__xor__, "^")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__   # commutative

    def __rshift__(self, other):
        return self._bits(other, int.__rshift__, ">>") if type(other) is int else NotImplemented

    def __lshift__(self, other):
        return self._bits(other, int.__lshift__, "<<") if type(other) is int else NotImplemented

    # -- the protocol's named operation ---------------------------------------------------------
    def min(self, b):
        vb = b.value if type(b) is Dyn else b
        v = None if self.value is None or vb is None else min(self.value, vb)
        d = gcd(self.divisibility, divisibility_of(b))
        return Dyn(v, max(self.width, b.width) if type(b) is Dyn else self.width, d if v is None or v % d == 0 else 1)


def _parts(x):
    """What a layout or tensor's static-ness is made of: (shape, stride), or its layout; None otherwise."""
    if hasattr(x, "_with_layout"):                      # a tensor (host, identity, in a kernel): its layout
        return (x.layout,)
    shape, stride = getattr(x, "shape", None), getattr(x, "stride", None)
    if shape is not None and stride is not None and type(x) is not tuple:   # a layout
        return (shape, stride)
    return None


def is_static(x) -> bool:
    """True when x is an int, or an IntTuple, layout or tensor whose every value is known while tracing (a
    static basis stride counts): CuTe DSL's ``is_static``.  False for anything dynamic (``?``), and for
    anything that is not an integer of the layout algebra (a float, a bool, a string: pycute's ``is_int``)."""
    t = type(x)
    if t is int:
        return True
    if t is tuple:
        return all(is_static(e) for e in x)
    if isinstance(x, Symbolic):
        return False
    if getattr(x, "_is_basis", False):
        return is_static(x.scale)
    parts = _parts(x)
    return parts is not None and all(is_static(p) for p in parts)


def is_dynamic(x) -> bool:
    """True when x holds at least one dynamic value (``?``): a symbolic integer, or an IntTuple, layout or
    tensor with one."""
    if isinstance(x, Symbolic):
        return True
    if type(x) is tuple:
        return any(is_dynamic(e) for e in x)
    if getattr(x, "_is_basis", False):
        return is_dynamic(x.scale)
    parts = _parts(x)
    return parts is not None and any(is_dynamic(p) for p in parts)


def is_symbolic(x) -> bool:
    """True for a symbolic (dynamic) integer: a :class:`Dyn` or a kernel expression."""
    return isinstance(x, Symbolic)




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


# -- the rules both kinds follow ---------------------------------------------------------------
def op_divisibility(op, da, db, b=None) -> int:
    """What divides ``a op b`` given that ``da`` divides a and ``db`` divides b (0 where the value is 0,
    which everything divides); ``b``: the right operand when it is a static int.  The one rule of
    :class:`Dyn` and of kernel expressions: ``div(a±b) = gcd``, ``div(a*b) = da*db``,
    ``div(a//c) = da/c`` when the static c > 0 divides da (else 1), ``div(a%b) = gcd(da, db)``,
    ``div(a<<c) = da*2**c``; for ``^ | & >>`` the shared powers of two."""
    if op in ("+", "-", "%"):
        return gcd(da, db)
    if op == "*":
        return da * db
    if op == "//":
        return da // b if type(b) is int and b > 0 and da % b == 0 else 1
    if op == "<<":
        return da << b if type(b) is int and b >= 0 else 1
    # bit operations keep the powers of two both operands share (a swizzle keeps its low M bits' alignment)
    pa, pb = da & -da, db & -db
    if op in ("^", "|"):
        return db if da == 0 else da if db == 0 else min(pa, pb)
    if op == "&":
        return max(pa, pb) if da and db else 0
    if op == ">>":
        return pa >> b if type(b) is int and b >= 0 and pa >> b else 1
    return 1


def _provably_divides(x, y) -> bool:
    """x | y is certain while compiling: x a static int dividing y (static) or y's divisibility."""
    return type(x) is int and x != 0 and (x == 1 or divisibility_of(y) % x == 0)


def ceil_div(a, b):
    """ceil(a / b) for a > 0, b > 0; exact (keeping divisibility) when a static b divides a's divisibility."""
    if type(a) is int and type(b) is int:
        return -(-a // b)
    if _provably_divides(b, a):
        return a // b
    return (a + (b - 1)) // b


def shape_div(a, b):
    """CuTe's shape_div for a, b > 0: a / b when b divides a, 1 when a divides b (the mode is used up).

    Neither dividing the other breaks the divisibility condition the algebra rests on.  Decided, for
    every kind of integer, in this order: what divisibility proves (static values included); else the
    runtime values (a host ``?`` that carries one), which raise when they do not divide; else it cannot
    be decided while compiling and raises too: a compiled kernel would compute a wrong layout for the
    values that break it (C++ CuTe and CuTe DSL do, silently)."""
    if _provably_divides(b, a):
        return a // b
    if _provably_divides(a, b):
        return 1
    va, vb = known_value(a), known_value(b)
    if va is not None and vb is not None:
        if vb and va % vb == 0:
            return a // b
        if va and vb % va == 0:  # a dynamic 1: of the kind of the symbolic operand
            return a // a if type(a) is not int else b // b
        what = "" if type(a) is int and type(b) is int else "runtime values "
        raise ValueError(f"{what}{va} and {vb} do not divide one another (divisibility condition).")
    if type(b) is int:
        need = f"the extent {a} to be a multiple of {b} (or to divide it)"
        fix = f"divisibility={b} (mark_compact_shape_dynamic(..., divisibility={b})) or a static extent"
    elif type(a) is int:
        need = f"{b} to be a multiple of {a} (or to divide it)"
        fix = f"divisibility={a} or a static value"
    else:
        need = f"{a} and {b} to divide one another"
        fix = "static values or divisibilities that prove it"
    raise ValueError(f"the divisibility condition needs {need}, which is not provable while compiling "
                     f"(divisibility {divisibility_of(a)} and {divisibility_of(b)}); give it {fix}.")


def imin(a, b):
    """min(a, b) over the protocol."""
    if type(a) is int and type(b) is int:
        return a if a < b else b
    if type(a) is int:
        return b.min(a)
    return a.min(b)
