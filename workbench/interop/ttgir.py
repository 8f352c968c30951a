"""Gluon layouts as data, and their two texts: the ``gl.<Class>(...)`` constructor a Gluon user writes and the
``#ttg.<name><{...}>`` attribute Triton prints in TTGIR.

:class:`GluonLayout` holds one layout's fields (Gluon's names) and is checked where it is made: a class Triton has,
its own fields only, each an int, a bool, a list of them or a nested layout; so its ``repr`` (the constructor text)
and :attr:`GluonLayout.ttgir` (the attribute text) are built from checked values only, never from pasted text.

:func:`parse_ttgir` reads the attribute text (``#ttg.blocked``, ``#ttg.nvidia_mma``, ``#ttg.dot_op``,
``#ttg.nvmma_shared``, ``#ttg.swizzled_shared``, ``#ttg.linear``, ``#ttg.shared_linear``), alone or inside a
``tensor<64x64xf16, #ttg...>`` / ``!ttg.memdesc<64x64xf16, #ttg..., ...>`` type (which also gives the shape).
The syntax is Triton 3.9's printer and parser (lib/Dialect/TritonGPU/IR/Dialect.cpp): the text it prints reads
back, and what it would refuse (an unknown or repeated key, a missing one, a wrong value kind) is refused with a
:class:`GluonTextError` that points at the column.  Proof: tests/test_interop_ttgir.py (always) and
tests/test_interop_triton.py (against Triton's own printer, where triton imports).
"""

from __future__ import annotations

import ast
import re

from ..layout.cute_text import CuteTextError

__all__ = ["GluonLayout", "GluonTextError", "parse_ttgir", "format_ttgir", "parse_gluon_text", "as_gluon_layout"]


class GluonTextError(CuteTextError):
    """Gluon or TTGIR text that Triton would not read: ``column`` (1-based) is where reading stopped (the message
    shows the line with a caret, as :class:`~workbench.CuteTextError`, which this is)."""


# Gluon's classes, their fields in Gluon's order, and which are optional (with Gluon's default)
_REQ = object()
_FIELDS = {
    "BlockedLayout": {"size_per_thread": _REQ, "threads_per_warp": _REQ, "warps_per_cta": _REQ, "order": _REQ,
                      "cga_layout": []},
    "NVMMADistributedLayout": {"version": _REQ, "warps_per_cta": _REQ, "instr_shape": _REQ, "cga_layout": []},
    "DotOperandLayout": {"operand_index": _REQ, "parent": _REQ, "k_width": _REQ},
    "NVMMASharedLayout": {"swizzle_byte_width": _REQ, "element_bitwidth": _REQ, "rank": 2, "transposed": False,
                          "fp4_padded": False, "cga_layout": []},
    "SwizzledSharedLayout": {"vec": _REQ, "per_phase": _REQ, "max_phase": _REQ, "order": _REQ, "cga_layout": []},
    "DistributedLinearLayout": {"reg_bases": _REQ, "lane_bases": _REQ, "warp_bases": _REQ, "block_bases": _REQ,
                                "shape": _REQ},
    "SharedLinearLayout": {"offset_bases": _REQ, "block_bases": [], "alignment": 16},
}
_MAX_INT = 1 << 31


def _check_value(v, cls, k, depth=0):
    if isinstance(v, GluonLayout):
        if k != "parent":
            raise TypeError(f"GluonLayout: expected a nested layout only as DotOperandLayout's parent, but got one "
                            f"as {cls}.{k}.")
        return v
    if type(v) is bool:
        return v
    if type(v) is int:
        if not 0 <= v < _MAX_INT:
            raise ValueError(f"GluonLayout: expected {cls}.{k} in [0, 2**31), but got {v}.")
        return v
    if isinstance(v, (list, tuple)) and depth < 2:
        return [_check_value(x, cls, k, depth + 1) for x in v]
    raise TypeError(f"GluonLayout: expected {cls}.{k} an int, a bool or a list of them, but got "
                    f"{type(v).__name__} {v!r}.")


class GluonLayout:
    """A Gluon layout as data: ``GluonLayout("NVMMASharedLayout", swizzle_byte_width=128, element_bitwidth=16)``.

    Its ``repr`` is the Gluon constructor (``gl.NVMMASharedLayout(...)``), :attr:`ttgir` the TTGIR attribute.
    Omitted optional fields take Gluon's defaults; a real ``gl.<Class>`` object reads the same way
    (:func:`as_gluon_layout`)."""

    def __init__(self, cls, **kw):
        if cls not in _FIELDS:
            raise ValueError(f"GluonLayout: expected a layout class among {', '.join(_FIELDS)}, but got {cls!r}.")
        fields = _FIELDS[cls]
        extra = [k for k in kw if k not in fields]
        if extra:
            raise ValueError(f"GluonLayout: {cls} has the fields {', '.join(fields)}, but got {', '.join(extra)}.")
        missing = [k for k, d in fields.items() if d is _REQ and k not in kw]
        if missing:
            raise ValueError(f"GluonLayout: {cls} needs {', '.join(missing)}.")
        self.cls = cls
        # Gluon's field order, defaults filled, so that equal layouts compare and print equal
        self.kw = {k: _check_value(kw[k], cls, k) if k in kw else (list(d) if type(d) is list else d)
                   for k, d in fields.items()}
        for k, v in self.kw.items():
            setattr(self, k, v)

    def __repr__(self):
        return f"gl.{self.cls}({', '.join(f'{k}={v!r}' for k, v in self.kw.items() if not self._default(k))})"

    def _default(self, k):
        d = _FIELDS[self.cls][k]
        return d is not _REQ and self.kw[k] == d and k != "transposed" and k != "rank"

    def __eq__(self, other):
        return type(other) is GluonLayout and (self.cls, self.kw) == (other.cls, other.kw)

    __hash__ = None

    @property
    def ttgir(self) -> str:
        """The TTGIR attribute text, as Triton prints it (``#ttg.nvmma_shared<{swizzlingByteWidth = 128, ...}>``)."""
        return format_ttgir(self)


def as_gluon_layout(g) -> GluonLayout:
    """A :class:`GluonLayout` of a ``gl.<Class>`` object (read by its fields; a ``gl.constexpr`` is unwrapped), a
    GluonLayout itself, or either text."""
    if type(g) is GluonLayout:
        return g
    if isinstance(g, str):
        return parse_ttgir(g)[0] if g.lstrip().startswith(("#", "tensor", "!ttg")) else parse_gluon_text(g)
    cls = type(g).__name__
    if cls not in _FIELDS:
        raise TypeError(f"expected a Gluon layout ({', '.join(_FIELDS)}), its text or a GluonLayout, but got {cls}.")
    kw = {}
    for k in _FIELDS[cls]:
        if hasattr(g, k):
            v = getattr(g, k)
            v = getattr(v, "value", v)          # a gl.constexpr
            kw[k] = as_gluon_layout(v) if k == "parent" else v
    return GluonLayout(cls, **kw)


# -- the constructor text ------------------------------------------------------------------------------------------
def parse_gluon_text(text):
    """``gl.NVMMASharedLayout(swizzle_byte_width=128, ...)`` -> GluonLayout (literal arguments only; positional
    ones in Gluon's field order)."""
    if not isinstance(text, str):
        raise TypeError(f"expected Gluon constructor text, but got {type(text).__name__}.")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise GluonTextError(text.strip(), max(0, (e.offset or 1) - 1),
                             "Gluon constructor text such as 'gl.NVMMASharedLayout(...)'", e.msg) from None

    def conv(n):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name not in _FIELDS:
                raise GluonTextError(text.strip(), n.col_offset, f"a Gluon layout class ({', '.join(_FIELDS)})",
                                     repr(ast.unparse(f)))
            kw = dict(zip(_FIELDS[name], (conv(a) for a in n.args)))
            for k in n.keywords:
                if k.arg is None or k.arg in kw:
                    raise GluonTextError(text.strip(), k.value.col_offset, "each argument once, by keyword",
                                         repr(ast.unparse(k)))
                kw[k.arg] = conv(k.value)
            try:
                return GluonLayout(name, **kw)
            except (TypeError, ValueError) as e:
                raise GluonTextError(text.strip(), n.col_offset, f"a valid {name}", str(e)) from None
        try:
            return ast.literal_eval(n)
        except ValueError:
            raise GluonTextError(text.strip(), n.col_offset, "a literal argument", repr(ast.unparse(n))) from None
    return conv(node)


# -- the TTGIR attribute text --------------------------------------------------------------------------------------
# name -> (Gluon class, [(ttgir key, Gluon field, kind, required)]); kinds: int, bool, ints, bases, attr
_ATTRS = {
    "blocked": ("BlockedLayout", [("sizePerThread", "size_per_thread", "ints", True),
                                  ("threadsPerWarp", "threads_per_warp", "ints", True),
                                  ("warpsPerCTA", "warps_per_cta", "ints", True), ("order", "order", "ints", True),
                                  ("CGALayout", "cga_layout", "bases", False)]),
    "nvidia_mma": ("NVMMADistributedLayout", [("versionMajor", None, "int", True), ("versionMinor", None, "int", True),
                                              ("warpsPerCTA", "warps_per_cta", "ints", True),
                                              ("CGALayout", "cga_layout", "bases", False),
                                              ("instrShape", "instr_shape", "ints", True)]),
    "dot_op": ("DotOperandLayout", [("opIdx", "operand_index", "int", True), ("parent", "parent", "attr", True),
                                    ("kWidth", "k_width", "int", True)]),
    "nvmma_shared": ("NVMMASharedLayout", [("swizzlingByteWidth", "swizzle_byte_width", "int", True),
                                           ("transposed", "transposed", "bool", True),
                                           ("elementBitWidth", "element_bitwidth", "int", True),
                                           ("fp4Padded", "fp4_padded", "bool", False), ("rank", "rank", "int", False),
                                           ("CGALayout", "cga_layout", "bases", False)]),
    "swizzled_shared": ("SwizzledSharedLayout", [("vec", "vec", "int", True), ("perPhase", "per_phase", "int", True),
                                                 ("maxPhase", "max_phase", "int", True),
                                                 ("order", "order", "ints", True),
                                                 ("CGALayout", "cga_layout", "bases", False)]),
    "linear": ("DistributedLinearLayout", [("register", "reg_bases", "bases", True),
                                           ("lane", "lane_bases", "bases", True),
                                           ("warp", "warp_bases", "bases", True),
                                           ("block", "block_bases", "bases", True)]),
    "shared_linear": ("SharedLinearLayout", [("offset", "offset_bases", "bases", True),
                                             ("block", "block_bases", "bases", False)]),
}
_ATTR_OF = {cls: name for name, (cls, _) in _ATTRS.items()}
_WS = re.compile(r"\s*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?\d+")
_DIMS = re.compile(r"((?:\d+x)+)([A-Za-z][A-Za-z0-9]*)")


class _Reader:
    def __init__(self, text):
        self.text, self.pos = text, 0

    def ws(self):
        self.pos = _WS.match(self.text, self.pos).end()

    def fail(self, expected, got=None, pos=None):
        raise GluonTextError(self.text, self.pos if pos is None else pos, expected, got)

    def eat(self, tok):
        self.ws()
        if not self.text.startswith(tok, self.pos):
            self.fail(repr(tok))
        self.pos += len(tok)

    def peek(self, tok):
        self.ws()
        return self.text.startswith(tok, self.pos)

    def ident(self, what):
        self.ws()
        m = _IDENT.match(self.text, self.pos)
        if not m:
            self.fail(what)
        self.pos = m.end()
        return m.group()

    def value(self, depth=0):
        self.ws()
        start = self.pos
        if self.peek("#"):
            return self.attr()
        if self.peek("["):
            if depth >= 2:
                self.fail("an integer (bases nest two deep)")
            self.pos += 1
            out = []
            if not self.peek("]"):
                out.append(self.value(depth + 1))
                while self.peek(","):
                    self.pos += 1
                    out.append(self.value(depth + 1))
            self.eat("]")
            return out
        m = _INT.match(self.text, self.pos)
        if m:
            v = int(m.group())
            if not 0 <= v < _MAX_INT:
                self.fail("an integer in [0, 2**31)", m.group(), start)
            self.pos = m.end()
            if self.peek(":"):
                self.fail("a plain integer, as Triton prints it (no ': type')")
            return v
        m = _IDENT.match(self.text, self.pos)
        if m and m.group() in ("true", "false"):
            self.pos = m.end()
            return m.group() == "true"
        self.fail("a value (an integer, true, false, a [list] or a #ttg attribute)")

    def attr(self):
        self.ws()
        start = self.pos
        if not self.text.startswith("#ttg.", self.pos):
            self.fail("a TTGIR layout attribute '#ttg.<name><{...}>'")
        self.pos += 5
        name_pos = self.pos
        name = self.ident("an attribute name")
        if name not in _ATTRS:
            self.fail(f"a layout attribute among {', '.join('#ttg.' + n for n in _ATTRS)}", repr(name), name_pos)
        cls, keys = _ATTRS[name]
        self.eat("<")
        self.eat("{")
        got, at = {}, {}
        spec = {k: (f, kind) for k, f, kind, _ in keys}
        if not self.peek("}"):
            while True:
                self.ws()
                key_pos = self.pos
                key = self.ident("a key")
                if key not in spec:
                    self.fail(f"a key of #ttg.{name} ({', '.join(spec)})", repr(key), key_pos)
                if key in got:
                    self.fail(f"each key once in #ttg.{name}", f"{key!r} again", key_pos)
                self.eat("=")
                self.ws()
                vpos = self.pos
                v = self.value()
                got[key], at[key] = _kind(self, v, spec[key][1], f"#ttg.{name} {key}", vpos), vpos
                if not self.peek(","):
                    break
                self.pos += 1
        self.eat("}")
        missing = [k for k, _, _, req in keys if req and k not in got]
        if missing:
            self.fail(f"#ttg.{name} to give {', '.join(missing)}", "no such key", self.pos - 1)
        kw = {spec[k][0]: v for k, v in got.items() if spec[k][0] is not None}
        if name == "nvidia_mma":
            kw["version"] = [got["versionMajor"], got["versionMinor"]]
        elif name == "linear":
            kw["shape"] = _surjective_shape(got, at, self, start)
        elif name == "shared_linear":
            self.eat(",")
            self.ws()
            if self.ident("'alignment'") != "alignment":
                self.fail("'alignment = N' after the bases", pos=self.pos - 1)
            self.eat("=")
            self.ws()
            vpos = self.pos
            kw["alignment"] = _kind(self, self.value(), "int", "#ttg.shared_linear alignment", vpos)
        self.eat(">")
        try:
            return GluonLayout(cls, **kw)
        except (TypeError, ValueError) as e:
            self.fail(f"a valid #ttg.{name}", str(e), start)


def _kind(r, v, kind, what, pos):
    ok = {"int": lambda x: type(x) is int, "bool": lambda x: type(x) is bool,
          "ints": lambda x: type(x) is list and all(type(i) is int for i in x),
          "bases": lambda x: type(x) is list and all(type(b) is list and all(type(i) is int for i in b) for b in x),
          "attr": lambda x: type(x) is GluonLayout}[kind](v)
    if not ok:
        names = {"int": "an integer", "bool": "true or false", "ints": "a list of integers",
                 "bases": "a list of [integer, ...] bases", "attr": "a #ttg layout attribute"}
        r.fail(f"{names[kind]} for {what}", repr(v), pos)
    if kind == "bases" and v and len({len(b) for b in v}) != 1:
        r.fail(f"bases of one rank for {what}", repr(v), pos)
    return v


def _surjective_shape(got, at, r, pos):
    """Triton's linear attribute is shape-agnostic and surjective: each dim's size is twice its largest basis."""
    dims = ("register", "lane", "warp", "block")
    bases = [b for k in dims for b in got[k]]
    if not bases:
        r.fail("a #ttg.linear with at least one basis (Triton: 'Empty Layout not supported')", pos=pos)
    rank = len(bases[0])
    for k in dims:
        if any(len(b) != rank for b in got[k]):
            r.fail(f"bases of one rank ({rank}, as the first) in #ttg.linear {k}", repr(got[k]), at[k])
    return [1 << max(b[d] for b in bases).bit_length() for d in range(rank)]


def parse_ttgir(text):
    """``(GluonLayout, shape or None)`` of TTGIR text: a layout attribute (``#ttg.blocked<{...}>``) or a tensor /
    memdesc type holding one (``tensor<64x64xf16, #ttg.blocked<{...}>>``, which gives the shape).  Raises
    :class:`GluonTextError` at the column where the text stops being what Triton prints."""
    if not isinstance(text, str):
        raise TypeError(f"parse_ttgir: expected TTGIR text, but got {type(text).__name__}.")
    r = _Reader(text)
    r.ws()
    shape = None
    wrapper = "tensor<" if r.peek("tensor<") else "!ttg.memdesc<" if r.peek("!ttg.memdesc<") else None
    if wrapper:
        r.pos += len(wrapper)
        r.ws()
        m = _DIMS.match(text, r.pos)
        if not m:
            r.fail("a shape and element type such as '64x64xf16'")
        shape = [int(s) for s in m.group(1).split("x")[:-1]]
        r.pos = m.end()
        r.eat(",")
    g = r.attr()
    if wrapper == "tensor<":
        r.eat(">")
    elif wrapper:
        while r.peek(","):     # memory space, mutable, allocation shape: not part of the layout
            r.pos += 1
            r.ws()
            m = re.compile(r"#ttg\.shared_memory|mutable|(?:\d+x)*\d+").match(text, r.pos)
            if not m:
                r.fail("'#ttg.shared_memory', 'mutable' or an allocation shape")
            r.pos = m.end()
        r.eat(">")
    r.ws()
    if r.pos != len(text):
        r.fail("the end of the text")
    return g, shape


def _ints(v):
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


def _bases(v):
    return "[" + ", ".join(_ints(b) for b in v) + "]"


def format_ttgir(g) -> str:
    """The TTGIR attribute of a Gluon layout (a ``gl.<Class>`` object or a :class:`GluonLayout`), exactly as Triton
    3.9 prints it: optional fields only where they differ from the default, as Triton's printer does."""
    g = as_gluon_layout(g)
    k = g.kw
    cga = f", CGALayout = {_bases(k['cga_layout'])}" if k.get("cga_layout") else ""
    if g.cls == "BlockedLayout":
        body = (f"sizePerThread = {_ints(k['size_per_thread'])}, threadsPerWarp = {_ints(k['threads_per_warp'])}, "
                f"warpsPerCTA = {_ints(k['warps_per_cta'])}, order = {_ints(k['order'])}{cga}")
    elif g.cls == "NVMMADistributedLayout":
        ver = list(k["version"]) + [0] * (2 - len(k["version"]))
        body = (f"versionMajor = {int(ver[0])}, versionMinor = {int(ver[1])}, warpsPerCTA = "
                f"{_ints(k['warps_per_cta'])}{cga}, instrShape = {_ints(k['instr_shape'])}")
    elif g.cls == "DotOperandLayout":
        body = f"opIdx = {int(k['operand_index'])}, parent = {format_ttgir(k['parent'])}, kWidth = {int(k['k_width'])}"
    elif g.cls == "NVMMASharedLayout":
        body = (f"swizzlingByteWidth = {int(k['swizzle_byte_width'])}, transposed = "
                f"{'true' if k['transposed'] else 'false'}, elementBitWidth = {int(k['element_bitwidth'])}")
        if k["fp4_padded"]:
            body += ", fp4Padded = true"
        body += cga if cga else (f", rank = {int(k['rank'])}" if int(k["rank"]) != 2 else "")
    elif g.cls == "SwizzledSharedLayout":
        body = (f"vec = {int(k['vec'])}, perPhase = {int(k['per_phase'])}, maxPhase = {int(k['max_phase'])}, "
                f"order = {_ints(k['order'])}{cga}")
    elif g.cls == "DistributedLinearLayout":
        body = (f"register = {_bases(k['reg_bases'])}, lane = {_bases(k['lane_bases'])}, warp = "
                f"{_bases(k['warp_bases'])}, block = {_bases(k['block_bases'])}")
    else:   # SharedLinearLayout: the alignment sits outside the bases' braces
        blk = f", block = {_bases(k['block_bases'])}" if k["block_bases"] else ""
        return (f"#ttg.shared_linear<{{offset = {_bases(k['offset_bases'])}{blk}}}, alignment = "
                f"{int(k['alignment'])}>")
    return f"#ttg.{_ATTR_OF[g.cls]}<{{{body}}}>"
