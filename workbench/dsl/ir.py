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
        self.buf, self.offset, self.type, self.div = buf, offset, _value_type(buf.etype), 1


def _value_type(etype):
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


class VecCopy(Stmt):
    """Copy ``lanes`` contiguous elements per pair, as one 128-bit (or narrower) access each:
    all loads are issued before the stores.  pairs: [(src_buf, src_off, dst_buf, dst_off)]."""

    __slots__ = ("pairs", "lanes")

    def __init__(self, pairs, lanes):
        self.pairs, self.lanes = pairs, lanes


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


class SyncThreads(Stmt):
    __slots__ = ()


class ClusterSync(Stmt):
    """``barrier.cluster.arrive`` + ``wait``: every thread of every block of the cluster."""
    __slots__ = ()


class NamedBarrier(Stmt):
    """``bar.sync id, count``: the first ``count`` threads (whole warps) to arrive at barrier ``id`` (1-15) go on;
    ``arrive``: ``bar.arrive``, counted without waiting (a producer's signal to the threads that sync)."""
    __slots__ = ("id", "count", "arrive")

    def __init__(self, id_, count, arrive=False):
        self.id, self.count, self.arrive = id_, count, arrive


class SharedDecl(Stmt):
    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class LocalDecl(Stmt):
    """A per-thread array (a register fragment, CuTe's rmem tensor): buf.space == 'rmem'."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class MmaSync(Stmt):
    """One warp-wide ``mma.sync`` of ``atom`` (an SM80/SM89 :class:`~workbench.atoms.mma.MMAAtom`): each
    operand is (register buffer, [static element offsets in the atom's value order]).  Every lane of the
    warp executes it together (the CPU executor gathers the warp's registers through the atom's TV layouts)."""

    __slots__ = ("atom", "d", "a", "b", "c")

    def __init__(self, atom, d, a, b, c):
        self.atom, self.d, self.a, self.b, self.c = atom, d, a, b, c


class Ldmatrix(Stmt):
    """``ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16``: this lane's source row starts at
    src_buf[src_off] (8 contiguous 16-bit elements); its destination registers are the 16-bit elements
    dst_buf[dst_offs] (static offsets, in the atom's value order)."""

    __slots__ = ("atom", "src_buf", "src_off", "dst_buf", "dst_offs")

    def __init__(self, atom, src_buf, src_off, dst_buf, dst_offs):
        self.atom, self.src_buf, self.src_off, self.dst_buf, self.dst_offs = atom, src_buf, src_off, dst_buf, dst_offs


class CpAsync(Stmt):
    """``cp.async.{ca,cg}.shared.global [dst], [src], nbytes, src_size``: nbytes from global to shared
    memory, asynchronously; where ``pred`` is false nothing is read and the destination is zero-filled."""

    __slots__ = ("src_buf", "src_off", "dst_buf", "dst_off", "nbytes", "pred", "cache_global")

    def __init__(self, src_buf, src_off, dst_buf, dst_off, nbytes, pred, cache_global):
        self.src_buf, self.src_off, self.dst_buf, self.dst_off = src_buf, src_off, dst_buf, dst_off
        self.nbytes, self.pred, self.cache_global = nbytes, pred, cache_global


class CpAsyncCommit(Stmt):
    """``cp.async.commit_group``: the thread's cp.async issued since the last commit form one group."""

    __slots__ = ()


class CpAsyncWait(Stmt):
    """``cp.async.wait_group n``: wait until at most n of the thread's committed groups are pending."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


class MbarInit(Stmt):
    """``mbarrier.init.shared::cta.b64``: the mbarrier at bar_buf[bar_off] expects ``count`` arrivals a phase."""

    __slots__ = ("bar_buf", "bar_off", "count")

    def __init__(self, bar_buf, bar_off, count):
        self.bar_buf, self.bar_off, self.count = bar_buf, bar_off, count


class MbarArrive(Stmt):
    """``mbarrier.arrive[.expect_tx]``: one arrival at the mbarrier; ``tx`` (None or bytes) first raises the
    transaction count the phase also waits for (the bytes TMA loads will complete on it).  ``cta`` (None or an
    Int32 expression): the mbarrier at the same place in that block of the cluster (``mapa``)."""

    __slots__ = ("bar_buf", "bar_off", "tx", "cta")

    def __init__(self, bar_buf, bar_off, tx, cta=None):
        self.bar_buf, self.bar_off, self.tx, self.cta = bar_buf, bar_off, tx, cta


class MbarWait(Stmt):
    """``mbarrier.try_wait.parity`` in a loop: wait until the phase of parity ``phase`` has completed."""

    __slots__ = ("bar_buf", "bar_off", "phase")

    def __init__(self, bar_buf, bar_off, phase):
        self.bar_buf, self.bar_off, self.phase = bar_buf, bar_off, phase


class TmaCopy(Stmt):
    """``cp.async.bulk.tensor``: one TMA box between the tensor of descriptor parameter ``tma`` (a Param) at
    element coordinates ``coords`` (the descriptor's dimension order) and shared memory smem_buf[smem_off].
    A load (``bar_buf`` set) completes its ``nbytes`` on the mbarrier; a store (``bar_buf`` None) joins the
    thread's bulk group."""

    __slots__ = ("tma", "box", "smem_buf", "smem_off", "coords", "bar_buf", "bar_off", "nbytes", "multicast")

    def __init__(self, tma, box, smem_buf, smem_off, coords, bar_buf, bar_off, nbytes, multicast=None):
        self.tma, self.box, self.smem_buf, self.smem_off, self.coords = tma, box, smem_buf, smem_off, coords
        self.bar_buf, self.bar_off, self.nbytes = bar_buf, bar_off, nbytes
        self.multicast = multicast   # a load to the same place in each block of the cluster this mask names


class Wgmma(Stmt):
    """``wgmma.mma_async`` of a GMMA atom by a warpgroup: acc = (register buffer, static offsets in the atom's
    C order), accumulated in place; a and b = (shared buffer, element offset of the tile's aligned base,
    :class:`~workbench.atoms.gmma_desc.GmmaDescriptor` of the tile from there)."""

    __slots__ = ("atom", "acc", "a", "b")

    def __init__(self, atom, acc, a, b):
        self.atom, self.acc, self.a, self.b = atom, acc, a, b

    @property
    def name(self):
        return self.atom.name


class AsyncOp(Stmt):
    """One operand-less instruction of the asynchronous machinery: 'wgmma_fence', 'wgmma_commit',
    'wgmma_wait' (n), 'mbarrier_init_fence', 'fence_proxy_async', 'setmaxnreg_inc'/'setmaxnreg_dec' (n),
    'bulk_commit', 'bulk_wait' (n)."""

    __slots__ = ("kind", "n")

    def __init__(self, kind, n=0):
        self.kind, self.n = kind, n


class Comment(Stmt):
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


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
