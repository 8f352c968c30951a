"""CuTe's text, both ways: read what CuTe C++ ``print()`` and CuTe DSL ``print`` write, write it back.

Reading (:func:`parse_layout`, :func:`parse_tiler`, :func:`parse_identity`) accepts

* CuTe DSL's notation: ``(4,(2,3)):(1,(4,8))``, ``?``, ``?{i64 div=8}``, ``S<3,4,3> o 0 o (8,64):(64,1)``,
  ``(4,6):(1@0,1@1)``, tilers ``(32:1,32:1,16:1)``, identity tensors ``tensor<(0,0) o (4,6):(1@0,1@1)>``;
* CuTe C++'s notation: static integers ``_4`` (a plain integer is then a *dynamic* value CuTe printed at run
  time: a ``Dyn`` carrying it), ``_1@0`` and ``_1@1@0`` basis strides, ``Sw<3,3,3> o _0 o ...``,
  ``_8:_2 o _3 o ...`` (a layout as the inner function), ``Sw<3,4,3> o smem_ptr[16b](unset) o ...`` (the swizzle
  on the byte address of a 16-bit pointer: kept as the equal element-offset swizzle ``S<3,3,3>`` with
  ``ptr_bits=16``), tilers with ``_`` (``(_32,(_8,_2,_2):(_1,_16,_8),_)``) and ``ArithTuple(_0,_0) o ...``.

The style is C++'s when the text has a ``_N`` static integer (or ``style="cpp"`` says so), else the DSL's.
Bad text raises :class:`CuteTextError` (a ValueError) naming what was expected, what was found and the column,
with the text and a caret under that column; nothing is guessed.

Writing (:func:`format_cpp`, :func:`format_dsl`) prints a layout, composed layout, tiler or identity tensor as
CuTe C++ / CuTe DSL print it.  This module knows layouts only; atoms and tiled objects are read and written by
``workbench.interop``.
"""

from __future__ import annotations

import re

from . import inttuple as it
from .basis import ArithTuple, E
from .identity import IdentityTensor
from .layout import Layout
from .swizzle import ComposedLayout, Swizzle, element_swizzle_of
from .values import Dyn, Symbolic

__all__ = ["CuteTextError", "parse_layout", "parse_tiler", "parse_identity", "parse_any", "format_cpp",
           "format_dsl", "text_style", "from_cute_layout", "is_cute_object"]


class CuteTextError(ValueError):
    """Text that CuTe would not print: ``column`` (1-based) is where reading stopped."""

    def __init__(self, text, pos, expected, got=None):
        self.text, self.column = text, pos + 1
        if got is None:
            got = repr(text[pos:pos + 12]) if pos < len(text) else "the end of the text"
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line = text[line_start: line_end if line_end >= 0 else len(text)]
        col = pos - line_start
        if len(line) > 100:  # a window around the column
            lo = max(0, col - 50)
            line, col = ("..." if lo else "") + line[lo: lo + 100], col - lo + (3 if lo else 0)
        where = f"column {col + 1} of line {text.count(chr(10), 0, pos) + 1}" if "\n" in text else f"column {pos + 1}"
        super().__init__(f"Expected {expected} at {where}, but got {got}:\n    {line}\n    {' ' * col}^")


_WS = re.compile(r"\s*")
_STATIC = re.compile(r"_(-?\d+)")
_INT = re.compile(r"-?\d+")
_DYN = re.compile(r"\?(?:\{([^}]*)\})?")
_CPP_HINT = re.compile(r"(?<![\w@])_-?\d")


def text_style(text: str) -> str:
    """'cpp' when the text has a CuTe C++ static integer (``_4``), else 'dsl'."""
    return "cpp" if _CPP_HINT.search(text) else "dsl"


class _Reader:
    def __init__(self, text, style):
        if not isinstance(text, str):
            raise TypeError(f"Expected CuTe text (a str such as '(_4,6):(_1,4)'), but got {type(text).__name__}.")
        if style not in (None, "cpp", "dsl"):
            raise ValueError(f"Expected style None (detect), 'cpp' or 'dsl', but got {style!r}.")
        self.text, self.pos = text, 0
        self.style = style or text_style(text)

    # -- lexing ----------------------------------------------------------------------------
    def ws(self):
        self.pos = _WS.match(self.text, self.pos).end()

    def peek(self, s):
        self.ws()
        return self.text.startswith(s, self.pos)

    def take(self, s, expected=None):
        if not self.peek(s):
            raise self.error(expected or repr(s))
        self.pos += len(s)

    def is_o(self):
        """At CuTe's composition sign: 'o' followed by a space or the end."""
        self.ws()
        return re.match(r"o(\s|$)", self.text[self.pos:self.pos + 2]) is not None

    def take_o(self, expected):
        if not self.is_o():
            raise self.error(expected)
        self.pos += 1
        self.ws()
        if self.pos == len(self.text):
            raise self.error(expected.replace("' o ' and ", ""))

    def error(self, expected, got=None, pos=None):
        return CuteTextError(self.text, self.pos if pos is None else pos, expected, got)

    def end(self, what):
        self.ws()
        if self.pos != len(self.text):
            raise self.error(f"the end of the {what}")

    # -- integers ------------------------------------------------------------------------------
    def leaf(self, allow_under, allow_basis, depth):
        """An integer (static, dynamic), ``_`` (when allowed) or a basis ``s@m@...``; None for ``_``."""
        self.ws()
        t, p = self.text, self.pos
        m = _STATIC.match(t, p)
        if m:
            v, self.pos = int(m.group(1)), m.end()
        elif t.startswith("_", p):
            if not allow_under:
                raise self.error("an integer (a '_' keeps a whole mode only in a tiler or a permutation)",
                                 "'_'")
            self.pos = p + 1
            if self.text.startswith("@", self.pos):
                raise self.error("'@' after an integer scale (a basis stride such as _1@0)", "'_@'", p)
            return None
        elif (m := _INT.match(t, p)):
            n = int(m.group(0))
            v = n if self.style == "dsl" else Dyn(n, 64 if n.bit_length() > 31 else 32)
            self.pos = m.end()
        elif (m := _DYN.match(t, p)):
            v, self.pos = self.dyn(m), m.end()
        else:
            raise self.error("an integer ('_4', '4', '?', '?{i64 div=8}')" + (", '_'" if allow_under else "")
                             + " or '('")
        if self.text.startswith("@", self.pos):
            if not allow_basis:
                raise self.error("no '@' here (a basis stride such as _1@0 is a stride, never a shape)")
            modes = []
            while self.text.startswith("@", self.pos):
                m = _INT.match(self.text, self.pos + 1)
                if not m or m.group(0).startswith("-"):
                    raise self.error("a mode index >= 0 after '@' (as in _1@0)", pos=self.pos + 1)
                modes.append(int(m.group(0)))
                self.pos = m.end()
            return E(tuple(reversed(modes)), v)   # printed innermost mode first: 1@1@0 is E<0,1>
        return v

    def dyn(self, m):
        width, div = 32, 1
        for part in (m.group(1) or "").split():
            if part == "i64":
                width = 64
            elif part.startswith("div=") and part[4:].isdigit() and int(part[4:]) > 0:
                div = int(part[4:])
            else:
                raise self.error("'i64' or 'div=N' (N > 0) inside ?{...}", repr(part),
                                 m.start() + 2 + (m.group(1) or "").find(part))
        return Dyn(None, width, div)

    # -- tuples ----------------------------------------------------------------------------
    def inttuple(self, allow_under, allow_basis, depth=0):
        if depth > it.MAX_NESTING:
            raise self.error(f"a tuple nested at most {it.MAX_NESTING} levels deep", "deeper nesting")
        if not self.peek("("):
            return self.leaf(allow_under, allow_basis, depth)
        open_at = self.pos
        self.pos += 1
        if self.peek(")"):
            self.pos += 1
            return ()
        items = []
        while True:
            items.append(self.inttuple(allow_under, allow_basis, depth + 1))
            self.ws()
            if self.peek(","):
                self.pos += 1
                continue
            if self.peek(")"):
                self.pos += 1
                break
            raise self.error(f"',' or ')' (closing the '(' at column {open_at + 1})")
        if self.text.startswith("@", self.pos):
            raise self.error("no '@' after a tuple ('@' follows an integer scale: a basis stride such as _1@0)")
        return tuple(items)

    def layout_from(self, shape, shape_at):
        """``shape`` read at ``shape_at``; reads ``:stride`` when present."""
        if _has(shape, lambda x: x is None or type(x) is E):
            raise self.error("a shape of integers", "a '_' or a basis", shape_at)
        if _has(shape, lambda x: type(x) is int and x < 0):
            raise self.error("non-negative extents in the shape", it.format_inttuple(shape), shape_at)
        if not self.peek(":"):
            return Layout(shape)
        self.pos += 1
        self.ws()
        stride_at = self.pos
        stride = self.inttuple(False, True)
        if not it.congruent(shape, stride):
            raise self.error(f"a stride congruent with the shape {it.format_inttuple(shape)}",
                             it.format_inttuple(stride), stride_at)
        return Layout(shape, stride)

    def layout(self):
        self.ws()
        at = self.pos
        return self.layout_from(self.inttuple(False, False), at)

    # -- tilers --------------------------------------------------------------------------------
    def tiler_term(self, depth=0):
        """``_`` (None), an int, a layout ``s:d`` or a tuple of terms."""
        self.ws()
        at = self.pos
        if depth > it.MAX_NESTING:
            raise self.error(f"a tiler nested at most {it.MAX_NESTING} levels deep", "deeper nesting")
        if self.peek("("):
            self.pos += 1
            items = []
            if not self.peek(")"):
                while True:
                    items.append(self.tiler_term(depth + 1))
                    if self.peek(","):
                        self.pos += 1
                        continue
                    if self.peek(")"):
                        break
                    raise self.error(f"',' or ')' (closing the '(' at column {at + 1})")
            self.pos += 1
            term = tuple(items)
        else:
            term = self.leaf(True, False, depth)
        if self.peek(":"):
            if _has(term, lambda x: type(x) is Layout):
                raise self.error("a shape before ':'", "a tuple of layouts", at)
            return self.layout_from(term, at)
        return term

    # -- composed layouts ------------------------------------------------------------------------
    def swizzle(self):
        self.ws()
        at = self.pos
        self.pos += 3 if self.text.startswith("Sw<", at) else 2
        vals = []
        for i, name in enumerate(("B", "M", "S")):
            self.ws()
            m = _INT.match(self.text, self.pos)
            if not m:
                raise self.error(f"the integer {name} of the swizzle {self.text[at:self.pos]}...")
            vals.append((int(m.group(0)), self.pos))
            self.pos = m.end()
            if i < 2:
                self.take(",", f"',' after {name} in the swizzle")
        (b, bat), (mm, mat), (s, sat) = vals
        if not (s < 0 and self.text.startswith("S<", at) and self.is_o()):
            self.take(">", "'>' closing the swizzle")   # (CuTe DSL 4.8.1 prints S<2,0,-2 o ...: no '>' after a
            #                                             negative shift, which is read as it prints it)
        if not 0 <= b <= 32:       # (a 10**9-bit mask would take a gigabyte to build)
            raise self.error("a swizzle with B >= 0 and <= 32 (bits)", str(b), bat)
        if not 0 <= mm <= 64:
            raise self.error("a swizzle with M >= 0 and <= 64 (the base bit)", str(mm), mat)
        if abs(s) > 64:
            raise self.error("a swizzle with |S| <= 64 (the shift)", str(s), sat)
        if abs(s) < b:
            raise self.error(f"a swizzle with |S| >= B = {b} (non-overlapping bit fields)", str(s), sat)
        return Swizzle(b, mm, s), at

    def offset(self):
        """The middle part of ``A o offset o B``: an integer, or ``smem_ptr[Nb](unset)`` (returns ('ptr', N))."""
        self.ws()
        at = self.pos
        m = re.compile(r"smem_ptr\[(\d+)b\]\((unset|0x[0-9a-fA-F]+|0)\)").match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return ("ptr", int(m.group(1)), at)
        if self.text.startswith("smem_ptr", at):
            raise self.error("an smem pointer flag such as smem_ptr[16b](unset)")
        v = self.leaf(False, False, 0)
        return ("int", v, at)

    def composed_or_layout(self):
        self.ws()
        if self.text.startswith(("Sw<", "S<"), self.pos):
            inner, at = self.swizzle()
        else:
            at = self.pos
            inner = self.layout()
            if not self.is_o():
                return inner
        self.take_o("' o ' and the offset of a composed layout (A o offset o B)")
        kind, off, off_at = self.offset()
        self.take_o("' o ' and the outer layout of a composed layout (A o offset o B)")
        outer = self.layout()
        if kind == "ptr":
            if type(inner) is not Swizzle:
                raise self.error("a swizzle before an smem pointer flag", str(inner), at)
            try:
                return ComposedLayout(element_swizzle_of(inner, off), 0, outer, ptr_bits=off)
            except ValueError as e:
                raise self.error(f"a swizzle that moves whole {off}-bit elements ({e})", f"Sw<{inner.bits},"
                                 f"{inner.base},{inner.shift}>", at) from None
        return ComposedLayout(inner, off, outer)

    def identity(self):
        """``ArithTuple(_0,_0) o L`` (C++) or ``tensor<(0,0) o L>`` (DSL)."""
        self.ws()
        dsl = self.text.startswith("tensor<", self.pos)
        self.take("tensor<" if dsl else "ArithTuple", "'ArithTuple(...)' or 'tensor<'")
        self.ws()
        at = self.pos
        origin = self.inttuple(False, False)
        self.take_o("' o ' after the identity tensor's origin")
        lay = self.layout()
        if dsl:
            self.take(">", "'>' closing tensor<...>")
        return IdentityTensor(_arith(origin) if type(origin) is tuple else origin, lay), at


def _arith(t):
    return ArithTuple(_arith(e) if type(e) is tuple else e for e in t)


def _has(t, pred):
    if type(t) is tuple:
        return any(_has(e, pred) for e in t)
    return pred(t)


def parse_layout(text: str, style: str | None = None):
    """A layout from the text CuTe C++ or CuTe DSL prints: ``"(4,2):(1,4)"``, ``"8:1"``, ``"(?,4):(1,?{i64})"``,
    ``"(_4,6):(_1,4)"`` (C++: ``_4`` static, a plain 6 a dynamic value), ``"(_4,_6):(_1@0,_1@1)"``, and composed
    layouts (a ComposedLayout) ``"Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)"`` /
    ``"S<3,3,3> o 0 o (8,64):(64,1)"``; a bare shape gets the compact column-major stride.  ``style``: None
    (detect: 'cpp' when a ``_N`` static integer occurs), 'cpp' (a plain integer is a dynamic value CuTe printed:
    ``Dyn(n)``) or 'dsl' (a plain integer is static).  Bad text raises :class:`CuteTextError` (a ValueError)
    with the column."""
    r = _Reader(text, style)
    out = r.composed_or_layout()
    r.end("layout")
    return out


def parse_tiler(text: str, style: str | None = None):
    """A tiler or permutation as CuTe prints it: ``(_32,(_8,_2,_2):(_1,_16,_8),_)`` -> (32, Layout, None);
    ``(32:1,32:1,16:1)`` -> three layouts; ``_`` is None (keep the mode)."""
    r = _Reader(text, style)
    out = r.tiler_term()
    r.end("tiler")
    return out


def parse_identity(text: str, style: str | None = None) -> IdentityTensor:
    """An identity (coordinate) tensor: ``ArithTuple(_0,_0) o (_4,6):(_1@0,_1@1)`` or
    ``tensor<(0,0) o (4,6):(1@0,1@1)>``."""
    r = _Reader(text, style)
    out, _ = r.identity()
    r.end("identity tensor")
    return out


def parse_any(text: str, style: str | None = None):
    """Whatever one line of CuTe text holds: an identity tensor, a composed layout, a layout, or a tiler."""
    r = _Reader(text, style)
    r.ws()
    if r.text.startswith(("ArithTuple", "tensor<"), r.pos):
        return parse_identity(text, style)
    if re.search(r"(?<![\w@\d])_(?![\d-])", text):   # an underscore mode: a tiler
        return parse_tiler(text, style)
    try:
        return parse_layout(text, style)
    except CuteTextError as e:
        try:   # (32:1,32:1,16:1) is a tiler of layouts
            return parse_tiler(text, style)
        except CuteTextError:
            raise e from None


# -- writing ------------------------------------------------------------------------------------
def _cpp_int(x):
    if type(x) is int:
        return f"_{x}"
    if type(x) is E:
        return f"{_cpp_int(x.scale)}@" + "@".join(str(p) for p in reversed(x.path))
    if isinstance(x, Symbolic):
        v = getattr(x, "value", None)
        return str(v) if v is not None else str(x)  # CuTe C++ prints a run-time int's value
    if x is None:
        return "_"
    raise TypeError(f"Expected an integer, a basis or None, but got {type(x).__name__}.")


def _cpp_tuple(t):
    if type(t) is tuple or type(t) is ArithTuple:
        return "(" + ",".join(_cpp_tuple(e) for e in t) + ")"
    if type(t) is Layout:
        return format_cpp(t)
    return _cpp_int(t)


def format_cpp(x) -> str:
    """``x`` as CuTe C++'s ``print(x)`` writes it: ``(_4,6):(_1,_4)``, ``Sw<3,4,3> o smem_ptr[16b](unset) o ...``,
    ``ArithTuple(_0,_0) o (_4,_6):(_1@0,_1@1)``, tilers ``(_32,_)``."""
    if type(x) is Layout:
        return f"{_cpp_tuple(x.shape)}:{_cpp_tuple(x.stride)}"
    if type(x) is ComposedLayout:
        if x.ptr_bits is not None:
            sw = x.cute_swizzle
            return f"Sw<{sw.bits},{sw.base},{sw.shift}> o smem_ptr[{x.ptr_bits}b](unset) o {format_cpp(x.outer)}"
        inner = x.inner
        head = f"Sw<{inner.bits},{inner.base},{inner.shift}>" if type(inner) is Swizzle else format_cpp(inner)
        return f"{head} o {_cpp_tuple(x.offset)} o {format_cpp(x.outer)}"
    if type(x) is Swizzle:
        return f"Sw<{x.bits},{x.base},{x.shift}>"
    if type(x) is IdentityTensor:
        o = x.origin
        origin = f"ArithTuple{_cpp_tuple(o)}" if isinstance(o, tuple) else f"ArithTuple({_cpp_tuple(o)})"
        return f"{origin} o {format_cpp(x.layout)}"
    if type(x) is tuple or x is None or type(x) is int or isinstance(x, Symbolic):
        return _cpp_tuple(x)
    raise TypeError(f"format_cpp: expected a Layout, a ComposedLayout, a Swizzle, an identity tensor or a tiler, "
                    f"but got {type(x).__name__}.")


def format_dsl(x) -> str:
    """``x`` as CuTe DSL prints it: ``(4,6):(1,4)``, ``S<3,4,3> o 0 o (8,64):(64,1)`` (CuTe DSL's smem layout atoms
    spell the swizzle in bytes and print no pointer), ``tensor<(0,0) o (4,6):(1@0,1@1)>``, tilers
    ``(32:1,None)``."""
    if type(x) is Layout:
        return str(x)
    if type(x) is ComposedLayout:
        if x.ptr_bits is not None:
            return f"{x.cute_swizzle} o 0 o {x.outer}"
        return f"{x.inner} o {x.offset} o {x.outer}"
    if type(x) is Swizzle:
        return str(x)
    if type(x) is IdentityTensor:
        return str(x)
    if type(x) is tuple:   # a tiler: CuTe DSL prints int modes as n:1 layouts
        return "(" + ",".join(format_dsl(Layout(e, 1) if type(e) is int else e) for e in x) + ")"
    if x is None:
        return "None"
    if type(x) is int or isinstance(x, Symbolic):
        return str(x)
    raise TypeError(f"format_dsl: expected a Layout, a ComposedLayout, a Swizzle, an identity tensor or a tiler, "
                    f"but got {type(x).__name__}.")


# -- CuTe DSL's objects (duck-typed: the layout core imports no cutlass) -------------------------------------
def is_cute_object(x) -> bool:
    """True for an object of the CuTe DSL package (``cutlass.cute``)."""
    return type(x).__module__.startswith("cutlass.")


def _from_cute_int(x, what):
    if type(x) is int:
        return x
    if type(x) is tuple or type(x).__name__ == "tuple":
        return tuple(_from_cute_int(e, what) for e in x)
    if type(x).__name__ == "ScaledBasis":
        mode = x.mode
        path = tuple(mode) if isinstance(mode, (list, tuple)) else (mode,)
        return E(path, _from_cute_int(x.value, what))
    if isinstance(x, list):
        return tuple(_from_cute_int(e, what) for e in x)
    raise ValueError(f"from_cute: expected static values in {what} (known while tracing), but got {x} "
                     f"({type(x).__name__}), a value CuTe DSL knows only at run time; convert what is static, or "
                     f"build the layout with wb.Dyn for the dynamic modes.")


def from_cute_layout(x):
    """The workbench's Layout / ComposedLayout / Swizzle / IdentityTensor for a CuTe DSL one (static parts)."""
    kind = type(x).__name__
    if kind == "Swizzle":
        return Swizzle(int(x.num_bits), int(x.num_base), int(x.num_shift))
    if kind == "_ComposedLayout" or kind == "ComposedLayout":
        inner = from_cute_layout(x.inner)
        return ComposedLayout(inner, _from_cute_int(x.offset, "the offset"), from_cute_layout(x.outer))
    if kind.endswith("Tensor"):   # an identity tensor: a coordinate origin (a memory tensor's is a pointer)
        if type(x.iterator).__name__.endswith("Pointer"):
            raise TypeError("from_cute_layout: a memory tensor is no layout; take its .layout.")
        origin = _from_cute_int(x.iterator, "the identity tensor's origin")
        return IdentityTensor(_arith(origin) if type(origin) is tuple else origin, from_cute_layout(x.layout))
    if hasattr(x, "shape") and hasattr(x, "stride"):
        s = _from_cute_int(x.shape, f"the shape of {x}")
        return Layout(s, _from_cute_int(x.stride, f"the stride of {x}"))
    raise TypeError(f"from_cute: expected a CuTe DSL layout, composed layout, swizzle or identity tensor, but got "
                    f"{kind}.")
