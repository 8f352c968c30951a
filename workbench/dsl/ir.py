"""The kernel IR: typed expressions and statements between the frontend and the backends.

Every expression has a scalar element type (``wb.Int32``, ``wb.Float32``, ``wb.Boolean`` ...) and
a known divisibility ``div``: an integer that provably divides its value (0 for the constant 0,
which every integer divides).  Divisibility is what lets the vectorized copy prove 16-byte
alignment: ``div(a+b) = gcd(div a, div b)``, ``div(a*b) = div a * div b``.

Expressions are pure (loads read memory at the point where the frontend binds them to a
variable).  Both backends (CUDA C++ and the CPU executor's Python) walk the same tree.
"""

from __future__ import annotations

import math
from math import gcd

from .._element_types import (
    BFloat16,
    Boolean,
    ElementType,
    Float8E4M3FN,
    Float8E5M2,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    TFloat32,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from ..layout.values import Symbolic, op_divisibility

INT_TYPES = (Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64)
FLOAT_TYPES = (Float16, Float32, Float64)
SCALAR_TYPES = INT_TYPES + FLOAT_TYPES + (Boolean,)
_RANK = {Boolean: 0, Int8: 1, Uint8: 1, Int16: 2, Uint16: 2, Int32: 3, Uint32: 3, Int64: 4, Uint64: 4,
         Float16: 5, Float32: 6, Float64: 7}


def is_int_type(t) -> bool:
    return t in INT_TYPES


def is_float_type(t) -> bool:
    return t in FLOAT_TYPES


def promote(a: ElementType, b: ElementType) -> ElementType:
    """C++'s usual arithmetic conversions on two dynamic operands (bool and small ints become int)."""
    ra, rb = _RANK.get(a), _RANK.get(b)
    if ra is None or rb is None:
        bad = a if ra is None else b
        raise TypeError(f"Expected kernel arithmetic on bool, integer or Float16/32/64 values, but got {bad.name} "
                        "(not supported in kernels yet; copies of it are).")
    if a is b and ra >= 3:
        return a
    if max(ra, rb) >= 5:
        t = a if ra >= rb else b
        return Float32 if t is Float16 else t
    # both integral: at least int; same rank -> unsigned wins
    a = a if ra >= 3 else Int32
    b = b if rb >= 3 else Int32
    if _RANK[a] != _RANK[b]:
        return a if _RANK[a] > _RANK[b] else b
    return a if not a.signed else b


def int_range(t: ElementType) -> tuple[int, int]:
    bits = t.width
    return (0, (1 << bits) - 1) if not t.signed else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


class Expr(Symbolic):
    """A typed value computed by the kernel: the layout core's symbolic integer inside kernels.

    As a :class:`~workbench.layout.values.Symbolic` it has ``value`` (``None``: unknown while
    tracing, except for constants), ``width`` (from its type) and ``divisibility`` (from ``div``);
    arithmetic and ``min`` build folded IR, so the core's ``crd2idx``, divides and tiles run
    unchanged on kernel values (and its ``ceil_div``/``shape_div`` rules decide what may be divided).
    """

    __slots__ = ("type", "div")

    @property
    def value(self):
        return None

    @property
    def width(self) -> int:
        return 64 if self.type.width == 64 else 32

    @property
    def divisibility(self) -> int:
        return self.div if self.div > 0 else 1 << 30   # 0 (the constant 0) is divisible by anything

    def __repr__(self):
        attrs = ([f"{self.type}"] if self.type.name not in ("Int32", "Int64") else []) + \
                (["i64"] if self.type.name == "Int64" else []) + ([f"div={self.div}"] if self.div > 1 else [])
        return "?{" + " ".join(attrs) + "}" if attrs else "?"

    __str__ = __repr__

    def __bool__(self):
        raise TypeError("Expected a value known while compiling the kernel, but got a dynamic value: a Python "
                        "'and'/'or'/'if' on it cannot be decided at trace time (use it in an if statement or wb.elem_less).")

    # arithmetic builds folded IR; foreign operands (basis strides, tuples) get to answer first
    def __add__(self, o): return binop("+", self, o) if _operand(o) else NotImplemented
    def __radd__(self, o): return binop("+", o, self) if _operand(o) else NotImplemented
    def __sub__(self, o): return binop("-", self, o) if _operand(o) else NotImplemented
    def __rsub__(self, o): return binop("-", o, self) if _operand(o) else NotImplemented
    def __mul__(self, o): return binop("*", self, o) if _operand(o) else NotImplemented
    def __rmul__(self, o): return binop("*", o, self) if _operand(o) else NotImplemented
    def __floordiv__(self, o): return binop("//", self, o) if _operand(o) else NotImplemented
    def __rfloordiv__(self, o): return binop("//", o, self) if _operand(o) else NotImplemented
    def __mod__(self, o): return binop("%", self, o) if _operand(o) else NotImplemented
    def __rmod__(self, o): return binop("%", o, self) if _operand(o) else NotImplemented
    def __neg__(self): return binop("-", 0, self)
    # bit operations (a swizzle evaluated in a kernel)
    def __and__(self, o): return binop("&", self, o) if _operand(o) else NotImplemented
    def __rand__(self, o): return binop("&", o, self) if _operand(o) else NotImplemented
    def __or__(self, o): return binop("|", self, o) if _operand(o) else NotImplemented
    def __ror__(self, o): return binop("|", o, self) if _operand(o) else NotImplemented
    def __xor__(self, o): return binop("^", self, o) if _operand(o) else NotImplemented
    def __rxor__(self, o): return binop("^", o, self) if _operand(o) else NotImplemented
    def __lshift__(self, o): return binop("<<", self, o) if _operand(o) else NotImplemented
    def __rshift__(self, o): return binop(">>", self, o) if _operand(o) else NotImplemented

    # -- the protocol's named operation --------------------------------------------------------
    def min(self, b):
        t = result_type(self, b)
        return Call("min", [cast(self, t), cast(as_expr(b, t), t)], t)


def _operand(o) -> bool:
    return isinstance(o, Expr) or type(o) in (int, float, bool)


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value, type_):
        value = const_value(value, type_)
        self.value, self.type = value, type_
        self.div = abs(value) if type(value) is int else 1


# the largest finite values that round to a finite Float32 / Float16 (beyond them the literal is inf)
_FLOAT_LIMIT = {Float32: float.fromhex("0x1.ffffffp+127"), Float16: 65520.0}


def const_value(value, t):
    """A constant of type t as both backends write it, or ValueError when t cannot hold it: an integer
    outside t's range (a negative one is taken modulo 2**width by an unsigned type, as C converts it), a
    finite float that rounds to infinity in t.  The CPU executor would raise OverflowError at run time and
    the GPU store a wrapped value, so it is refused while tracing, where the frontend locates it."""
    if type(value) is int and t in INT_TYPES:
        lo, hi = int_range(t)
        if lo <= value <= hi:
            return value
        if not t.signed and -(1 << (t.width - 1)) <= value < 0:
            return value + hi + 1
        raise ValueError(f"Expected a constant in the range of {t} [{lo}, {hi}], but got {value}.")
    lim = _FLOAT_LIMIT.get(t)
    if lim is not None and type(value) is float and abs(value) >= lim and value not in (math.inf, -math.inf):
        raise ValueError(f"Expected a constant in the range of {t} (finite, below {lim:.9g} in magnitude), but got "
                         f"{value!r}; write math.inf for an infinity.")
    return value


def wrap_int(v, t):
    """v reduced to integer type t's range (two's complement), as the GPU computes a folded constant."""
    w = t.width
    v &= (1 << w) - 1
    return v - (1 << w) if t.signed and v >> (w - 1) else v


class Var(Expr):
    """A named C variable, kernel parameter or loop index."""

    __slots__ = ("name",)

    def __init__(self, name, type_, div=1):
        self.name, self.type, self.div = name, type_, div


class Special(Expr):
    """threadIdx.x and friends (read as int)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name, self.type, self.div = name, Int32, 1


class BinOp(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b, type_, div=1):
        self.op, self.a, self.b, self.type, self.div = op, a, b, type_, div


class UnOp(Expr):
    __slots__ = ("op", "a")

    def __init__(self, op, a, type_):
        self.op, self.a, self.type, self.div = op, a, type_, 1


class Cast(Expr):
    __slots__ = ("a",)

    def __init__(self, a, type_):
        self.a, self.type = a, type_
        self.div = a.div if is_int_type(type_) and is_int_type(a.type) else 1


class Select(Expr):
    __slots__ = ("c", "a", "b")

    def __init__(self, c, a, b, type_):
        self.c, self.a, self.b, self.type, self.div = c, a, b, type_, gcd(a.div, b.div)


class Call(Expr):
    """A math function: name is the Python-side name ('sqrt', 'exp', 'min' ...)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, args, type_):
        self.fn, self.args, self.type, self.div = fn, tuple(args), type_, 1


class Buffer:
    """Memory a kernel reads or writes: a pointer parameter (global), a __shared__ array, or a
    per-thread array (registers)."""

    __slots__ = ("name", "etype", "space", "align", "param", "count", "written", "smem_offset")

    def __init__(self, name, etype, space, align, param=None, count=None):
        self.name, self.etype, self.space, self.align = name, etype, space, align
        self.param, self.count, self.written = param, count, False
        self.smem_offset = 0


class Load(Expr):
    __slots__ = ("buf", "offset")

    def __init__(self, buf, offset):
        self.buf, self.offset, self.type, self.div = buf, offset, value_type(buf.etype), 1


def value_type(etype):
    """The type a loaded element computes in: 16-bit floats widen to Float32 (as CUDA's __half2float)."""
    return Float32 if etype in HALF_TYPES or etype is TFloat32 else etype


HALF_TYPES = (Float16, BFloat16)      # stored as 16 bits, computed in Float32
FP8_TYPES = (Float8E4M3FN, Float8E5M2)   # held as bytes: copied and fed to tensor cores, no arithmetic
STORAGE_TYPES = SCALAR_TYPES + (BFloat16, TFloat32) + FP8_TYPES   # what memory (buffers, fragments) may hold


# -- statements ------------------------------------------------------------------------------
class Stmt:
    __slots__ = ("line",)


class Let(Stmt):
    """``const T var = expr;`` (mutable=True: ``T var = expr;``)."""

    __slots__ = ("var", "expr", "mutable")

    def __init__(self, var, expr, mutable=False):
        self.var, self.expr, self.mutable = var, expr, mutable


class Assign(Stmt):
    __slots__ = ("var", "expr")

    def __init__(self, var, expr):
        self.var, self.expr = var, expr


class Store(Stmt):
    __slots__ = ("buf", "offset", "value")

    def __init__(self, buf, offset, value):
        self.buf, self.offset, self.value = buf, offset, value


class If(Stmt):
    __slots__ = ("cond", "then", "orelse")

    def __init__(self, cond, then, orelse):
        self.cond, self.then, self.orelse = cond, then, orelse


class For(Stmt):
    """``for (var = start; var < stop (step>0) or > stop; var += step)`` with a static step."""

    __slots__ = ("var", "start", "stop", "step", "body")

    def __init__(self, var, start, stop, step, body):
        self.var, self.start, self.stop, self.step, self.body = var, start, stop, step, body


class While(Stmt):
    __slots__ = ("cond", "body")

    def __init__(self, cond, body):
        self.cond, self.body = cond, body


class Break(Stmt):
    __slots__ = ()


class Continue(Stmt):
    __slots__ = ()


class Return(Stmt):
    __slots__ = ()


class Instruction(Stmt):
    """One hardware operation in the IR.  Its op module (``workbench/dsl/ops/``) owns everything about it: the
    builtin that emits it (with the operand checks), its CUDA text (:meth:`cuda`), its exact CPU semantics as
    Python source (:meth:`python`) and its place in the CPU scheduler (a typed wait of
    :mod:`workbench.dsl.scheduling`).  The backends ask the node; they know no instruction by name.

    * ``cuda(em, d)``: write the CUDA C++ at depth d with the emitter's ``em.w`` (``backends.cuda`` gives
      ``expr``, ``saddr``, ``registers``); ``cuda_preamble``: device functions the text calls, written once.
    * ``python(em, d)``: write the Python the CPU executor runs for one thread; ``cpu_helpers``: the functions that
      Python calls (merged into its namespace).
    * ``threads``: 32 or 128 for a warp- or warpgroup-collective instruction, which the scheduler carries out once
      with :meth:`emulate` (each thread's operands in, each thread's results out); 0 otherwise.
    """

    __slots__ = ()
    cuda_preamble = ""
    cpu_helpers: dict = {}
    threads = 0

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        INSTRUCTIONS.append(cls)

    def cuda(self, em, d):
        raise TypeError(f"{type(self).__name__} has no CUDA lowering (its op module must define cuda()).")

    def python(self, em, d):
        raise TypeError(f"{type(self).__name__} has no CPU semantics (its op module must define python()).")

    def describe(self) -> str:
        """What the CPU executor's hang report calls the instruction."""
        return type(self).__name__


class InstructionExpr(Expr):
    """A value a hardware operation reads (``%cluster_ctarank``): ``cuda()`` / ``python()`` give its expression
    text; ``cuda_preamble`` as for :class:`Instruction`."""

    __slots__ = ()
    cuda_preamble = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        INSTRUCTIONS.append(cls)


INSTRUCTIONS: list = []   # every Instruction / InstructionExpr class, in import order (the op modules')


class SharedDecl(Stmt):
    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class LocalDecl(Stmt):
    """A per-thread array (a register fragment, CuTe's rmem tensor): buf.space == 'rmem'."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


def comment_text(text) -> str:
    """Any text as the body of a one-line comment in both backends: printable ASCII only, no backslash (which would
    splice the next line into a C++ ``//`` comment) and no ``*/``; everything else becomes ``?``.  A user's string
    (a function's ``__name__``, a docstring) can then never end the comment and become code."""
    out = "".join(ch if " " <= ch <= "~" and ch != "\\" else "?" for ch in str(text))
    return out.replace("*/", "*?")


class Comment(Stmt):
    """A comment line in the generated code; its text is made inert (:func:`comment_text`)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = comment_text(text)


class Param:
    """One kernel parameter: a pointer (buf) or a scalar (var)."""

    __slots__ = ("name", "kind", "etype", "buf", "var", "arg_index", "source")

    def __init__(self, name, kind, etype, buf=None, var=None, arg_index=None, source=None):
        self.name, self.kind, self.etype, self.buf, self.var = name, kind, etype, buf, var
        self.arg_index, self.source = arg_index, source   # source: how to read it off the argument


class KernelIR:
    """A lowered kernel: its name, its parameters in order and its body."""

    __slots__ = ("name", "params", "body", "uses_sync", "shared_bytes", "written_args", "dynamic_smem", "min_arch",
                 "min_arch_reason", "block_threads", "launch_bounds", "cluster")

    def __init__(self, name, params, body, uses_sync, shared_bytes, written_args, dynamic_smem=0, min_arch=0):
        self.name, self.params, self.body = name, params, body
        self.uses_sync, self.shared_bytes, self.written_args = uses_sync, shared_bytes, written_args
        # shared tensors beyond the 48 KiB of static __shared__ live in dynamic shared memory: the launch adds it
        self.dynamic_smem = dynamic_smem
        self.min_arch = min_arch    # the compute capability (e.g. 80) the kernel's instructions need
        self.min_arch_reason = ""
        self.block_threads = None   # (n, what): a tiled MMA/copy the kernel partitions by needs n threads a block
        self.launch_bounds = None   # (max threads, min blocks per SM): @wb.kernel(launch_bounds=...), __launch_bounds__
        self.cluster = (1, 1, 1)    # blocks a cluster: @wb.kernel(cluster=...), __cluster_dims__

    @property
    def arch_specific(self) -> bool:
        """wgmma, setmaxnreg (and the TMA kernels built with them) exist only in sm_90a: compiled for it, run on
        compute capability 9.0 exactly."""
        return self.min_arch >= 90


# -- expression building with folding -------------------------------------------------------
_PYOPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
}


def c_div(a, b):
    """C's integer division (truncates toward zero), the semantics of ``//`` in kernels."""
    if b == 0:
        raise ZeroDivisionError("integer division by zero in a kernel")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a, b):
    """C's remainder: sign of the dividend, a == c_div(a,b)*b + c_mod(a,b)."""
    return a - c_div(a, b) * b


def const_type(v):
    """The weak type of a Python constant: it adapts to the other operand (bool, int -> Int32, float -> Float32)."""
    if type(v) is bool:
        return Boolean
    if type(v) is int:
        return Int32 if -(1 << 31) <= v < (1 << 31) else Int64
    if type(v) is float:
        return Float32
    raise TypeError(f"Expected an int, float or bool constant, but got {type(v).__name__}.")


def as_expr(v, like: ElementType | None = None) -> Expr:
    if isinstance(v, Expr):
        return v
    t = const_type(v)
    if like is not None and t is not Boolean:
        if is_float_type(like) or (is_int_type(like) and type(v) is int):
            t = Float32 if like is Float16 else like
    return Const(v if not is_float_type(t) else float(v), t)


def result_type(a, b) -> ElementType:
    """Type of a binary operation where Python constants are weakly typed."""
    ea, eb = isinstance(a, Expr), isinstance(b, Expr)
    if ea and eb:
        return promote(a.type, b.type)
    if ea:
        other = b
        t = a.type
    else:
        other = a
        t = b.type
    if type(other) is float and not is_float_type(t):
        return Float32
    if type(other) is int and type(other) is not bool and is_int_type(t) and const_type(other) is Int64:
        return promote(t, Int64)
    return promote(t, t) if t is not Boolean else Int32


def binop(op, a, b):
    """Arithmetic on ints and Exprs with constant folding and the identities CuTe relies on."""
    ca, cb = not isinstance(a, Expr), not isinstance(b, Expr)
    if ca and cb:
        if op == "//":
            return c_div(a, b) if type(a) is int and type(b) is int else a // b
        if op == "%":
            return c_mod(a, b) if type(a) is int and type(b) is int else a % b
        if op == "/":
            return a / b
        return _PYOPS[op](a, b)
    if isinstance(a, Const) and isinstance(b, Const):
        t = promote(a.type, b.type)
        v = binop(op, a.value, b.value)
        return as_expr(wrap_int(v, t) if type(v) is int and is_int_type(t) else v, t)
    # identities (only with integer constants, never changing the type)
    if op == "+":
        if cb and b == 0 and type(b) is int:
            return a
        if ca and a == 0 and type(a) is int:
            return b
    elif op == "-":
        if cb and b == 0 and type(b) is int:
            return a
    elif op == "*":
        if cb and type(b) is int:
            if b == 1:
                return a
            if b == 0 and is_int_type(a.type):
                return 0
        if ca and type(a) is int:
            if a == 1:
                return b
            if a == 0 and is_int_type(b.type):
                return 0
    elif op == "//" and cb and b == 1 and is_int_type(a.type):
        return a
    elif op == "%" and cb and b == 1 and is_int_type(a.type):
        return 0
    t = result_type(a, b)
    if op == "/":
        if not is_float_type(t):
            t = Float32
    ea, eb = as_expr(a, t), as_expr(b, t)
    if op == "/":
        ea, eb = cast(ea, t), cast(eb, t)
    if op in ("//", "%", "&", "|", "^", "<<", ">>") and not (is_int_type(ea.type) and is_int_type(eb.type)):
        if op in ("//", "%"):
            pass  # floats: floor division / fmod (Python semantics on both backends)
        else:
            raise TypeError(f"Expected integer operands for '{op}', but got {ea.type} and {eb.type}.")
    div = op_divisibility(op, ea.div, eb.div, eb.value if isinstance(eb, Const) else None) if is_int_type(t) else 1
    return BinOp(op, ea, eb, t, div)


def compare(op, a, b):
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return _CMP[op](a, b)
    t = result_type(a, b)
    return BinOp(op, as_expr(a, t), as_expr(b, t), Boolean)


_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
CMP_OPS = tuple(_CMP)


def cast(v, t: ElementType):
    """Convert a value to type t (C++ static_cast semantics; float->int truncates)."""
    if not isinstance(v, Expr):
        if t is Boolean:
            return bool(v)
        if is_int_type(t):
            x = int(v)
            lo, hi = int_range(t)
            if not lo <= x <= hi:
                raise ValueError(f"Expected a constant in the range of {t} [{lo}, {hi}], but got {x}.")
            return Const(x, t)
        return Const(float(v), t)
    if v.type is t:
        return v
    return Cast(v, t)


def truth(v):
    """A value as a condition (bool)."""
    if not isinstance(v, Expr):
        return bool(v)
    if v.type is Boolean:
        return v
    return BinOp("!=", v, as_expr(0, v.type), Boolean)
