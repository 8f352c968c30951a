"""The CPU reference executor: runs the same IR as the GPU, on host memory, without a GPU.

The IR is translated to a Python function per thread.  A kernel that calls ``sync_threads``
becomes a generator that yields at each barrier; the threads of a block are interleaved
barrier by barrier (every live thread runs to its next barrier before any passes it), which is
what ``__syncthreads`` guarantees.  A thread that exits early no longer takes part (as on Volta
and later); threads that wait at *different* barriers raise, since CUDA leaves that undefined.

Arithmetic follows the C++ that the CUDA backend emits, type by type (the IR's ``.type``):

* integers wrap modulo ``2**width`` (two's complement for signed types, as nvcc does); ``//``
  and ``%`` truncate toward zero (``a == (a//b)*b + a%b``, the remainder has the dividend's
  sign); ``>>`` is arithmetic on signed and logical on unsigned values; mixed operands are
  converted by C's usual arithmetic conversions first (``Int32(-1) < Uint32(1)`` is False).
  Wrapping is applied where the value's representation matters (variables, stores, indices,
  comparisons, ``>>``, ``//``, ``%``, conversions); between them ``+ - * & | ^ <<`` are computed
  on Python ints, which gives the same residue.  Integer division by zero raises.
* Float32 values are Python floats holding float32 values, rounded to float32 after every
  operation (``+ - * /`` and ``sqrt`` computed in double then rounded equal the correctly
  rounded float32 result, as on the GPU).  Float constants and Float32 scalar arguments are
  rounded as the GPU's ``0x1.99999ap-4f`` literals and packed parameters are.  The GPU may still
  differ by one rounding where nvcc contracts ``a*b+c`` into an FMA (``--fmad=true``), and in the
  last bits of ``exp``/``log``/``sin``... (CUDA's are not correctly rounded).  Float division by
  zero gives inf/nan as in IEEE 754.
* float -> integer conversion truncates toward zero and saturates (NaN -> 0), as ``cvt.rzi``.

Every global access is bounds-checked and raises :class:`KernelRuntimeError` when out of range:
tensors against their layout's extent, raw pointers (``wb.make_ptr``) against the host buffer
the caller declared with :func:`workbench.host_buffers` (``workbench._memory``).  A bare address has no extent the executor could
check, so a raw pointer outside every declared buffer is refused at launch (``ValueError``)
rather than dereferenced.
"""

from __future__ import annotations

import ctypes
import math
import operator
import struct

import numpy as np

from ..._element_types import BFloat16, Boolean, Float16, Float32, Float64, Int32, TFloat32
from ..._memory import declared_host_buffer
from .. import ir
from ..runtime import limits as _limits
from ..runtime.limits import MAX_BLOCK, MAX_GRID, MAX_SMEM_OPTIN, MAX_STATIC_SMEM, MAX_THREADS_PER_BLOCK
from ..scheduling import WAITS, Barrier, BarrierArrive, ClusterBarrier, Collective, Spin, Sync
from ..views import refuse_packed


class KernelRuntimeError(RuntimeError):
    """A kernel misbehaved on the CPU executor (out-of-bounds access, divergent barrier)."""


def _loop_budget(line):
    raise KernelRuntimeError(f"Expected a launch that runs at most {_limits.MAX_CPU_LOOP_STEPS} loop iterations on the CPU "
                             f"executor (limits.MAX_CPU_LOOP_STEPS, all threads together), but the loop at line {line} "
                             "was still running when they were spent (a loop that never ends, or work for a GPU);")


def _oob(i, name, lo=None, hi=None):
    reach = f" (the tensor spans element offsets {lo}..{hi - 1})" if lo is not None and hi > lo else ""
    raise KernelRuntimeError(f"out-of-bounds access to '{name}' at element offset {i}{reach}")


def _cdiv(a, b):
    """C's integer quotient (truncated toward zero)."""
    try:
        q = a // b
    except ZeroDivisionError:
        raise KernelRuntimeError("integer division by zero in a kernel (undefined in C++)") from None
    if q < 0 and q * b != a:
        q += 1
    return q


def _cmod(a, b):
    """C's remainder: the sign of the dividend, a == _cdiv(a, b) * b + _cmod(a, b)."""
    try:
        r = a % b
    except ZeroDivisionError:
        raise KernelRuntimeError("integer modulo by zero in a kernel (undefined in C++)") from None
    if r and (r < 0) != (a < 0):
        r -= b
    return r


def _fdiv(a, b):
    """IEEE 754 division (Python raises on a zero divisor; C gives inf or nan)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


_F32 = struct.Struct("<f")
_pk, _up = _F32.pack, _F32.unpack


def _r32(x):
    return _up(_pk(x))[0]


def _r16(x):
    return float(np.float16(x))


def _ffloordiv(a, b, r):
    # what codegen emits: floorf(a / b), the quotient rounded to the type first
    q = r(_fdiv(a, b))
    return float(math.floor(q)) if math.isfinite(q) else q


def _fmod(a, b, r):
    # a - floorf(a / b) * b, each operation rounded
    return r(a - r(_ffloordiv(a, b, r) * b))


_U32 = struct.Struct("<I")


def _bf2f(u):
    """A bfloat16 bit pattern (held as uint16) as the float it is."""
    return _up(_U32.pack(int(u) << 16))[0]


def _f2bf(x):
    """float -> bfloat16 bits, rounded to nearest even (__float2bfloat16)."""
    if x != x:
        return 0x7FC0
    b = _U32.unpack(_pk(x))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _rbf(x):
    return _bf2f(_f2bf(x))


def _tf32(x):
    """float -> tf32 (cvt.rna.tf32.f32: 10 mantissa bits, ties away from zero), held as a float."""
    if x != x or x in (math.inf, -math.inf):
        return x
    b = (_U32.unpack(_pk(x))[0] + 0x1000) & 0xFFFFE000
    return _up(_U32.pack(b))[0]


def _f2i(x, lo, hi):
    """float -> integer as cvt.rzi: truncate toward zero, saturate, NaN -> 0."""
    if x != x:
        return 0
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def _i64_to_f32(x, signed):
    # one rounding from the 64-bit integer (float(x) would round to double first)
    return float(np.array(x, np.int64 if signed else np.uint64).astype(np.float32))


_HELPERS = {
    "_cdiv": _cdiv, "_cmod": _cmod, "_fdiv": _fdiv, "_math": math, "_oob": _oob, "_INF": math.inf, "_NAN": math.nan,
    "_exp2": lambda x: 2.0 ** x, "_rsqrt": lambda x: 1.0 / math.sqrt(x), "_KernelRuntimeError": KernelRuntimeError,
    "_pk": _pk, "_up": _up, "_r32": _r32, "_r16": _r16, "_rid": float, "_ffloordiv": _ffloordiv, "_fmod": _fmod,
    "_f2i": _f2i, "_i64_to_f32": _i64_to_f32, "_zeros": np.zeros, "_np_dtype": np.dtype, "_loop_budget": _loop_budget,
    "_bf2f": _bf2f, "_f2bf": _f2bf, "_rbf": _rbf, "_tf32": _tf32, **WAITS,
}
_PYMATH = {"sqrt": "_math.sqrt", "exp": "_math.exp", "log": "_math.log", "sin": "_math.sin", "cos": "_math.cos",
           "tan": "_math.tan", "tanh": "_math.tanh", "floor": "_math.floor", "ceil": "_math.ceil", "erf": "_math.erf",
           "exp2": "_exp2", "log2": "_math.log2", "rsqrt": "_rsqrt", "pow": "_math.pow", "abs": "abs",
           "min": "min", "max": "max"}
_EXACT_F = ("abs", "min", "max", "floor", "ceil")    # results already representable in the argument type
_RING = ("+", "-", "*", "&", "|", "^", "<<")        # ops whose result mod 2**w depends only on operands mod 2**w
_CMPS = frozenset(ir.CMP_OPS)


def _const(v, t):
    if ir.is_float_type(t):
        v = float(v)
        if math.isnan(v):
            return "_NAN"
        if math.isinf(v):
            return "_INF" if v > 0 else "(-_INF)"
        if t is Float32:
            v = _r32(v)
        elif t is Float16:
            v = _r16(v)
        return repr(v)
    if t is Boolean:
        return "True" if v else "False"
    return repr(int(v))


def _wrap(s, t):
    """Python source reducing the int expression s to type t's range (two's complement)."""
    w = t.width
    if t.signed:
        h = 1 << (w - 1)
        return f"((({s}) + {h} & {(1 << w) - 1}) - {h})"
    return f"(({s}) & {(1 << w) - 1})"


def _round(s, t):
    if t is Float32:
        return f"_up(_pk({s}))[0]"
    if t is Float16:
        return f"_r16({s})"
    if t is BFloat16:
        return f"_rbf({s})"
    if t is TFloat32:
        return f"_tf32({s})"
    return s


def _vt(e):
    """The C++ type of an expression as codegen emits it: unary ops and abs/min/max on types
    narrower than int are computed (and typed) as int by C's integer promotions."""
    t = e.type
    if (type(e) is ir.UnOp or type(e) is ir.Call) and ir.is_int_type(t) and t.width < 32:
        return Int32
    return t


def _within(f, t) -> bool:
    lf, hf = ir.int_range(f)
    lt, ht = ir.int_range(t)
    return lt <= lf and hf <= ht


def _cast(s, f, t):
    """Python source converting the value s of C++ type f to type t (static_cast semantics)."""
    if f is t:
        return s
    if t is Boolean:
        return f"bool({s})"
    if ir.is_int_type(t):
        if f is Boolean:
            return f"int({s})"
        if ir.is_int_type(f):
            return s if _within(f, t) else _wrap(s, t)
        lo, hi = ir.int_range(t)
        return f"_f2i({s}, {lo}, {hi})"
    # float target
    if ir.is_int_type(f) or f is Boolean:
        if f.width > 32 and t is not Float64:
            s = f"_i64_to_f32({s}, {f.signed})"
            return s if t is Float32 else _round(s, t)
        if t is Float64 or (t is Float32 and f.width <= 16):
            return f"float({s})"       # exact
        return _round(s, t)
    if f in (Float16, BFloat16, TFloat32) or t is Float64 or (f is Float32 and t is Float32):
        return s                       # widening float conversions are exact
    return _round(s, t)


def conv(e, t) -> str:
    """Python source for e's value converted to type t."""
    return _cast(pyexpr(e), _vt(e), t)


def _operand(e, t) -> str:
    """An operand of a ring op (+ - * & | ^ <<) computed in int type t: only its residue mod
    2**t.width matters, so a same-or-wider operand may stay unwrapped."""
    f = _vt(e)
    if ir.is_int_type(f) and f.width >= t.width:
        return pyexpr(e, exact=False)
    return conv(e, t) if ir.is_int_type(f) or f is Boolean else pyexpr(e)


def pyexpr(e, exact=True) -> str:
    """Python source for e.  exact=False (int ring ops only) may leave the value unwrapped,
    congruent to the exact one modulo 2**width."""
    k = type(e)
    if k is ir.Const:
        return _const(e.value, e.type)
    if k is ir.Var:
        return e.name
    if k is ir.Special:
        return {"threadIdx": "_t", "blockIdx": "_b", "blockDim": "_bd", "gridDim": "_gd"}[e.name[:-2]] + e.name[-1]
    if k is ir.BinOp:
        return _binop(e, exact)
    if k is ir.UnOp:
        if e.op == "!":
            return f"(not {pyexpr(e.a)})"
        t = _vt(e)
        if not ir.is_int_type(t):
            return f"(-{pyexpr(e.a)})"
        if e.op == "~" and t.signed and _vt(e.a) is t:
            return f"(~{pyexpr(e.a)})"  # ~x of an in-range signed value is in range
        s = f"({e.op}{_operand(e.a, t)})"
        return _wrap(s, t) if exact else s
    if k is ir.Cast:
        return conv(e.a, e.type)
    if k is ir.Select:
        return f"({conv(e.a, e.type)} if {pyexpr(e.c)} else {conv(e.b, e.type)})"
    if k is ir.Call:
        args = ", ".join(pyexpr(a) for a in e.args)
        r = f"{_PYMATH[e.fn]}({args})"
        t = e.type
        if e.fn in ("floor", "ceil") and ir.is_float_type(t):
            return f"float({r})"
        if ir.is_float_type(t):
            return r if e.fn in _EXACT_F else _round(r, t)
        if e.fn == "abs" and ir.is_int_type(t):
            return _wrap(r, _vt(e))    # abs(INT_MIN) == INT_MIN, as in C
        return r
    if k is ir.Load:
        refuse_packed(e.buf)
        if e.buf.etype is BFloat16:
            return f"_bf2f({e.buf.name}.item({index(e.buf, e.offset)}))"
        return f"{e.buf.name}.item({index(e.buf, e.offset)})"
    if isinstance(e, ir.InstructionExpr):   # a value an op module reads
        return e.python()
    raise TypeError(f"cpu executor: unexpected expression {k.__name__}")


_SPECIAL_IV = {"threadIdx": (0, 1023), "blockDim": (1, 1024)}


def _iv(e):
    """An interval holding e's value when it is provably free of overflow (the wrap can be
    skipped), else None.  Only constants, threadIdx/blockDim and ring ops over them are tracked:
    enough to drop the wraps from most index arithmetic at no run-time cost."""
    k = type(e)
    if k is ir.Const:
        return (int(e.value), int(e.value)) if ir.is_int_type(e.type) else None
    if k is ir.Special:
        return _SPECIAL_IV.get(e.name[:-2])
    if k is not ir.BinOp or e.op not in ("+", "-", "*") or not ir.is_int_type(e.type):
        return None
    a, b = _iv(e.a), _iv(e.b)
    if a is None or b is None:
        return None
    if e.op == "+":
        r = (a[0] + b[0], a[1] + b[1])
    elif e.op == "-":
        r = (a[0] - b[1], a[1] - b[0])
    else:
        p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        r = (min(p), max(p))
    lo, hi = ir.int_range(e.type)
    return r if lo <= r[0] and r[1] <= hi else None


def _binop(e, exact):
    op, t = e.op, e.type
    if op == "&&" or op == "||":
        return f"({pyexpr(e.a)} {'and' if op == '&&' else 'or'} {pyexpr(e.b)})"
    if op in _CMPS:
        fa, fb = _vt(e.a), _vt(e.b)
        ct = ir.promote(fa, fb) if Boolean not in (fa, fb) else (fa if fa is fb else ir.promote(fa, fb))
        return f"({_cast(pyexpr(e.a), fa, ct)} {op} {_cast(pyexpr(e.b), fb, ct)})"
    if ir.is_float_type(t):
        a, b = conv(e.a, t), conv(e.b, t)
        r = {Float32: "_r32", Float16: "_r16"}.get(t, "_rid")
        if op == "/":
            return _round(f"_fdiv({a}, {b})", t)
        if op == "//":
            return f"_ffloordiv({a}, {b}, {r})"
        if op == "%":
            return f"_fmod({a}, {b}, {r})"
        return _round(f"({a} {op} {b})", t)
    if op in _RING:
        if op == "<<":
            s = f"({_operand(e.a, t)} << {pyexpr(e.b)})"
        else:
            if op in ("&", "|", "^") and _vt(e.a) is t and _vt(e.b) is t:
                return f"({pyexpr(e.a)} {op} {pyexpr(e.b)})"   # in-range values of one type stay in range
            s = f"({_operand(e.a, t)} {op} {_operand(e.b, t)})"
        return _wrap(s, t) if exact and _iv(e) is None else s
    a, b = conv(e.a, t), conv(e.b, t)
    if op == ">>":
        return f"({a} >> {pyexpr(e.b)})"
    if op == "//":
        s = f"_cdiv({a}, {b})"
        return _wrap(s, t) if t.signed else s      # INT_MIN // -1 wraps
    if op == "%":
        return f"_cmod({a}, {b})"
    if op == "/":
        return f"_fdiv({a}, {b})"
    raise TypeError(f"cpu executor: unexpected operator {op!r} on {t}")


def index(buf, off):
    o = pyexpr(off)
    if buf.space != "gmem":   # shared and register arrays: numpy's own bounds
        return o
    return f"_ix_{buf.name}({o})"


class PyEmitter:
    """Writes one thread's Python.  What op modules use in their ``python(em, d)``: ``em.w(d, text)``,
    ``em.fresh(prefix)``, ``em.collective(node)`` (the index a :class:`~workbench.dsl.scheduling.Collective` wait
    names), ``em.prologue`` (lines run once at the thread's start, e.g. a per-thread queue), and the module's
    ``pyexpr``/``conv``/``index`` for expressions and bounds-checked global indices."""

    def __init__(self):
        self.lines = []
        self.tmp = 0
        self.collectives = []     # the nodes of the collective statements, by the index the thread yields
        self.prologue: list[str] = []

    def collective(self, node) -> int:
        for i, a in enumerate(self.collectives):
            if a is node:
                return i
        self.collectives.append(node)
        return len(self.collectives) - 1

    def fresh(self, prefix) -> str:
        n = f"{prefix}{self.tmp}"
        self.tmp += 1
        return n

    def w(self, d, text):
        self.lines.append("    " * d + text)

    def block(self, stmts, d):
        n = len(self.lines)
        for s in stmts:
            self.stmt(s, d)
        if len(self.lines) == n:
            self.w(d, "pass")

    def tick(self, loop, d):
        # every iteration spends one step of the launch's budget (_B, limits.MAX_CPU_LOOP_STEPS)
        self.w(d, "_B[0] -= 1")
        self.w(d, f"if _B[0] < 0: _loop_budget({getattr(loop, 'line', 0)})")

    def stmt(self, s, d):
        k = type(s)
        if k is ir.Let or k is ir.Assign:
            self.w(d, f"{s.var.name} = {conv(s.expr, s.var.type)}")
        elif k is ir.Store:
            refuse_packed(s.buf)
            # codegen stores (T)value, or __float2half(value) for Float16 (bfloat16: its bits, tf32: rounded)
            et = s.buf.etype
            t = ir.Float32 if et in (Float16, BFloat16, TFloat32) else et
            v = conv(s.value, t)
            v = f"_f2bf({v})" if et is BFloat16 else f"_tf32({v})" if et is TFloat32 else v
            self.w(d, f"{s.buf.name}[{index(s.buf, s.offset)}] = {v}")
        elif k is ir.If:
            self.w(d, f"if {pyexpr(s.cond)}:")
            self.block(s.then, d + 1)
            if s.orelse:
                self.w(d, "else:")
                self.block(s.orelse, d + 1)
        elif k is ir.For:
            self.w(d, f"for {s.var.name} in range({conv(s.start, s.var.type)}, {pyexpr(s.stop)}, {s.step}):")
            self.tick(s, d + 1)
            self.block(s.body, d + 1)
        elif k is ir.While:
            self.w(d, f"while {pyexpr(s.cond)}:")
            self.tick(s, d + 1)
            self.block(s.body, d + 1)
        elif k is ir.Break:
            self.w(d, "break")
        elif k is ir.Continue:
            self.w(d, "continue")
        elif k is ir.Return:
            self.w(d, "return")
        elif k is ir.LocalDecl:   # a fresh array per thread, where the kernel declares it
            b = s.buf
            self.w(d, f"{b.name} = _zeros({b.count}, _dtype_{b.name})")
        elif k is ir.SharedDecl or k is ir.Comment:
            pass
        elif isinstance(s, ir.Instruction):   # a hardware operation: its op module gives its semantics
            s.python(self, d)
        else:
            raise TypeError(f"cpu executor: unexpected statement {k.__name__}")


def generate_python(k: ir.KernelIR):
    """(Python source of a factory make(params, shared) -> thread(tx, ty, tz, bx, by, bz), the atoms its
    warp-collective statements name)."""
    em = PyEmitter()
    em.block(k.body, 2)
    names = [p.name for p in k.params]
    shared = _shared(k.body)
    lines = ["def _make(_P, _S, _IX, _AL, _bdx, _bdy, _bdz, _gdx, _gdy, _gdz, _B, _MB, _CS, _CMB, _RANK, _BS, _CBS):"]
    if names:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = _P")
    for p in k.params:
        if p.kind == "ptr":
            lines.append(f"    _ix_{p.name}, _ixr_{p.name} = _IX['{p.name}']; _al_{p.name} = _AL['{p.name}']")
    for b in shared:
        lines.append(f"    {b.name} = _S['{b.name}']")
    for b in _decls(k.body, ir.LocalDecl):
        lines.append(f"    _dtype_{b.name} = _np_dtype('{np.dtype(b.etype.storage).str}')")
    lines.append("    def _thread(_tx, _ty, _tz, _bx, _by, _bz):")
    lines += ["        " + x for x in dict.fromkeys(em.prologue)]
    lines += em.lines
    if k.uses_sync:
        lines.append("        if False:\n            yield 0")
    lines.append("    return _thread")
    return "\n".join(lines) + "\n", em.collectives


def _decls(stmts, kind, out=None):
    """The buffers of every ``kind`` declaration (SharedDecl, LocalDecl) in stmts, nested ones too."""
    out = [] if out is None else out
    for s in stmts:
        if type(s) is kind:
            out.append(s.buf)
        for sub in ("then", "orelse", "body"):
            if hasattr(s, sub):
                _decls(getattr(s, sub), kind, out)
    return out


def _shared(stmts):
    return _decls(stmts, ir.SharedDecl)



def host_view(address: int, etype, lo: int, hi: int):
    """A writable numpy view of elements [lo, hi) relative to ``address`` (may be negative)."""
    dt = np.dtype(etype.storage)
    n = max(hi - lo, 0)
    if n == 0:
        return np.zeros(0, dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(address + lo * dt.itemsize)
    return np.frombuffer(buf, dtype=dt)


# The order the executor runs a grid's blocks (clusters) in, each to its end: the grid's, or (block_order("reverse"))
# the other way round.  A GPU promises neither, so a kernel whose blocks meet through global memory (an atomic count,
# workbench/dsl/ops/atomic.py) is tested both ways.
_BLOCK_ORDER = ["grid"]


def _order(r, rev):
    return reversed(r) if rev else r


class block_order:
    """``with block_order("reverse"):`` the CPU executor runs a grid's blocks last to first (tests of kernels whose
    blocks meet through global memory); ``"grid"`` is the default order."""

    def __init__(self, order):
        if order not in ("grid", "reverse"):
            raise ValueError(f"block_order: expected 'grid' or 'reverse', but got {order!r}.")
        self.order = order

    def __enter__(self):
        self.saved = _BLOCK_ORDER[0]
        _BLOCK_ORDER[0] = self.order

    def __exit__(self, *exc):
        _BLOCK_ORDER[0] = self.saved


class CompiledCPU:
    """A specialization's Python translation, ready to run grids on host memory."""

    def __init__(self, k: ir.KernelIR):
        self.ir = k
        self.source, self.collectives = generate_python(k)
        ns = dict(_HELPERS)
        for t in ir.INSTRUCTIONS:   # the functions each op module's Python calls
            ns.update(getattr(t, "cpu_helpers", {}))
        exec(compile(self.source, f"<wb.kernel {k.name} (cpu)>", "exec"), ns)  # noqa: S102
        self.make = ns["_make"]
        self.shared = _shared(k.body)

    def run(self, grid, block, values, extents, smem=0):
        """values: the kernel parameters in order (ptr params: (address, etype)); extents: name -> (lo, hi);
        smem: the launch's dynamic shared memory in bytes (checked against CUDA's limits, then unused: the DSL's
        shared tensors are static)."""
        dyn = self.ir.dynamic_smem
        check_launch_limits(grid, block, self.ir.shared_bytes - dyn, smem, dyn)
        P, IX, AL = [], {}, {}
        for p, v in zip(self.ir.params, values):
            if p.kind == "tma":   # the descriptor's tensor and box (extents carries the TmaLoad)
                tma = extents[p.name]
                if tma.memspace != "generic":
                    raise ValueError(f"Expected a TMA descriptor of a host tensor for the CPU executor, but '{p.name}' "
                                     f"describes {tma.memspace} memory.")
                P.append(tma)
            elif p.kind == "ptr":
                lo, hi = extents[p.name]
                arr = host_view(v, p.etype, lo, hi)
                P.append(arr)
                IX[p.name] = _indexer(p.name, -lo, hi - lo), _range_checker(p.name, -lo, hi - lo)
                AL[p.name] = _aligner(p.name, v, p.etype.bits // 8, lo)
            else:
                P.append(_scalar(v, p.etype))
        P = tuple(P)
        budget = [_limits.MAX_CPU_LOOP_STEPS]    # loop iterations left to this launch, all threads together
        gx, gy, gz = grid
        bx, by, bz = block
        cx, cy, cz = self.ir.cluster
        rev = _BLOCK_ORDER[0] == "reverse"
        for gbz in _order(range(0, gz, cz), rev):
            for gby in _order(range(0, gy, cy), rev):
                for gbx in _order(range(0, gx, cx), rev):   # one cluster (one block without clusters), ranks x fastest
                    bidxs = [(gbx + i, gby + j, gbz + k) for k in range(cz) for j in range(cy) for i in range(cx)]
                    Ss = [{b.name: np.zeros(b.etype.storage_count(b.count), dtype=np.dtype(b.etype.storage)) for b in self.shared}
                          for _ in bidxs]
                    mbs: list = [{} for _ in bidxs]     # each block's mbarriers
                    bss: list = [{} for _ in bidxs]     # each block's state of op modules (BlockState values)
                    ths = [self.make(P, Ss[r], IX, AL, bx, by, bz, gx, gy, gz, budget, mbs[r], Ss, mbs, r, bss[r], bss)
                           for r in range(len(bidxs))]
                    if not self.ir.uses_sync:
                        for th, bidx in zip(ths, bidxs):
                            for tz in range(bz):
                                for ty in range(by):
                                    for tx in range(bx):
                                        try:
                                            th(tx, ty, tz, *bidx)
                                        except KernelRuntimeError as e:
                                            raise _located(e, bidx, (tx, ty, tz)) from None
                    else:
                        self._run_cluster(ths, (bx, by, bz), bidxs, mbs, bss)
                    for bs, bidx in zip(bss, bidxs):   # what each block left behind (an op module's check)
                        for st in list(bs.values()):
                            try:
                                st.at_block_end()
                            except KernelRuntimeError as e:
                                raise KernelRuntimeError(f"{e} (at the end of block {bidx})") from None

    def _run_cluster(self, ths, block, bidxs, mbs, bss=()):
        """The threads of a cluster's blocks (one block without clusters) in step: each runs to its next barrier,
        warp-collective instruction or mbarrier wait.  A sync_threads releases when every live thread of its block
        waits at it, a named barrier when its count of the block's threads do, a cluster_sync when every live
        thread of the cluster does; a collective (mma.sync, ldmatrix: a warp; wgmma: a warpgroup) is carried out
        once all its threads wait at it, each resuming with its result; a thread waiting on an mbarrier re-checks it
        every round.  When no thread can move and no mbarrier changed, the cluster would hang on a GPU: that is
        reported, with what each thread waits for."""
        tids = [(tx, ty, tz) for tz in range(block[2]) for ty in range(block[1]) for tx in range(block[0])]
        nt = len(tids)    # thread `lin` is thread lin % nt of block lin // nt (its rank in the cluster)
        gens = {r * nt + i: th(*t, *bidxs[r]) for r, th in enumerate(ths) for i, t in enumerate(tids)}
        waiting: dict = {}
        results: dict = {}
        arrived: dict = {}   # (block rank, named barrier) -> threads counted by bar.arrive in its current round
        order: dict = {}     # thread -> when it reached the named barrier it waits at
        tick = 0
        run = list(gens)

        def epoch():
            return sum(mb.get("_epoch", 0) for mb in mbs)

        while gens:
            before_epoch = epoch()
            moved = False        # a thread ran code other than re-checking an mbarrier it still waits on
            for lin in run:
                before = waiting.pop(lin, None)
                try:
                    m = gens[lin].send(results.pop(lin, None))
                except StopIteration:
                    del gens[lin]
                    moved = True
                    continue
                except (KernelRuntimeError, IndexError, ValueError) as e:
                    raise _located(KernelRuntimeError(str(e)), bidxs[lin // nt], tids[lin % nt]) from None
                waiting[lin] = m
                if type(m) is Barrier:
                    tick += 1
                    order[lin] = tick     # when it reached the named barrier (PTX releases the first ones)
                moved = moved or type(before) is not Spin or m != before
            run = []
            for r, bidx in enumerate(bidxs):
                live = [lin for lin in gens if lin // nt == r]
                syncs = {lin: waiting[lin].line for lin in live if type(waiting.get(lin)) is Sync}
                if syncs and len(syncs) == len(live):
                    lines = set(syncs.values())
                    if len(lines) > 1:
                        raise KernelRuntimeError(f"threads of block {bidx} wait at different sync_threads() (lines "
                                                 f"{sorted(lines)}): a barrier inside divergent control flow is undefined in CUDA.")
                    run += sorted(syncs)
            cluster = [lin for lin, m in waiting.items() if type(m) is ClusterBarrier]
            if cluster and len(cluster) == len(gens):
                run += sorted(cluster)
            for lin in [lin for lin, m in waiting.items() if type(m) is BarrierArrive]:
                m = waiting.pop(lin)          # bar.arrive: counted, and the thread goes on
                key = (lin // nt, m.id)
                arrived[key] = arrived.get(key, 0) + 1
                run.append(lin)
                if arrived[key] == m.count and not any(type(w) is Barrier and w.id == m.id and
                                                       x // nt == key[0] for x, w in waiting.items()):
                    arrived[key] = 0          # every count arrived and none syncs: the barrier completes
            bars: dict = {}
            for lin, m in waiting.items():
                if type(m) is Barrier:
                    bars.setdefault((lin // nt, m.id), {})[lin] = m
            for (r, bid), members in bars.items():
                count = next(iter(members.values())).count
                if len({m.count for m in members.values()}) > 1:
                    raise KernelRuntimeError(f"threads of block {bidxs[r]} meet at barrier {bid} with different thread "
                                             f"counts: {sorted({(m.count, m.line) for m in members.values()})} "
                                             "(count, line); PTX leaves that undefined.")
                # PTX: the first `count` threads to arrive complete a round and go on; the others wait for the next
                # round (its own `count` threads).  Those waiting longest first, then the lowest thread.
                ready = max(count - arrived.get((r, bid), 0), 0)
                if len(members) >= ready:
                    run += sorted(sorted(members, key=lambda lin: (order.get(lin, 0), lin))[:ready])
                    arrived[(r, bid)] = 0
            groups: dict = {}
            for lin, m in waiting.items():
                if type(m) is Collective:
                    size = self.collectives[m.index].threads
                    groups.setdefault((lin // nt, (lin % nt) // size, size), {})[lin] = m
            for (r, g, size), members in groups.items():
                if len(members) == size and len({m.index for m in members.values()}) == 1:
                    results.update(self._collective(members, g, size, bidxs[r]))
                    run += sorted(members)
            spinning = [lin for lin, m in waiting.items() if type(m) is Spin]
            if spinning and (run or moved or epoch() != before_epoch):
                run += spinning          # something changed: the waiters re-check their mbarriers
            if not run and gens and _progress(bss):
                run = [lin for lin, m in waiting.items() if type(m) is Spin]   # asynchronous work completed
            if not run and gens:
                raise KernelRuntimeError(self._stuck(waiting, gens, bidxs, nt, mbs))

    def _stuck(self, waiting, gens, bidxs, nt, mbs) -> str:
        """Why no thread of the block (or cluster) can move (what a GPU would hang on)."""
        what: dict = {}
        for lin, m in sorted(waiting.items()):
            k = type(m)
            if k is Sync:
                w = f"sync_threads() at line {m.line}"
            elif k is Spin:
                w = f"mbarrier {m.key[0]}[{m.key[1]}] (wait at line {m.line}) {Spin.describe_state(mbs[lin // nt], m.key)}"
            elif k is Barrier:
                w = f"barrier({m.id}, {m.count}) at line {m.line}"
            elif k is ClusterBarrier:
                w = f"cluster_sync() at line {m.line}"
            else:
                node = self.collectives[m.index]
                w = f"{node.describe()}, which is {'warpgroup' if node.threads == 128 else 'warp'}-wide"
            if len(bidxs) > 1:
                w = f"{w} in block {bidxs[lin // nt]}"
            what.setdefault(w, []).append(lin % nt)
        parts = [f"threads {ids[0]}..{ids[-1]} ({len(ids)}) wait at {w}" if len(ids) > 1 else f"thread {ids[0]} waits at {w}"
                 for w, ids in what.items()]
        hint = ("all 32 lanes of a warp (128 threads of a warpgroup for wgmma) must execute a collective together, every "
                "live thread must reach a sync_threads(), a barrier(id, n) releases when n threads reach it, and an mbarrier's phase completes only after the arrivals "
                "init announced and every byte arrive_and_expect_tx announced")
        where = f"block {bidxs[0]}" if len(bidxs) == 1 else f"the cluster of blocks {bidxs[0]}..{bidxs[-1]}"
        return f"{where} can never continue: {'; '.join(parts)} ({len(gens)} live threads); {hint}"

    def _collective(self, members, group, size, bidx):
        """Carry out one collective instruction for one warp (32 threads) or warpgroup (128): its node's emulate."""
        lins = sorted(members)
        node = self.collectives[members[lins[0]].index]
        try:
            res = node.emulate([members[lin].operands for lin in lins])
        except (IndexError, ValueError) as e:
            raise KernelRuntimeError(f"{e} (block {bidx}, {'warpgroup' if size == 128 else 'warp'} {group})") from None
        return dict(zip(lins, res))


class BlockState:
    """What an op module keeps per block (the CPU executor's ``_BS``: {owner name: BlockState}; ``_CBS``: the
    cluster's, by rank): ``progress()`` completes the block's outstanding asynchronous work, which the scheduler
    asks for only when no thread can move otherwise (asynchronous units finish as late as they may, so a thread
    that reads their results without waiting for them reads before they land); it returns whether anything
    completed.  ``at_block_end()`` raises KernelRuntimeError for what the block must not leave behind."""

    def progress(self) -> bool:
        return False

    def at_block_end(self) -> None:
        pass


def _progress(bss) -> bool:
    moved = False
    for bs in bss:
        for st in list(bs.values()):
            moved = st.progress() or moved
    return moved


def _located(e: KernelRuntimeError, block, thread) -> KernelRuntimeError:
    """The same error, saying which block and thread made the access (once: a nested call keeps the first)."""
    if " in block (" in str(e):
        return e
    return KernelRuntimeError(f"{e} in block {tuple(block)}, thread {tuple(thread)}")


# Total work of one CPU-executor launch (blocks x threads per block), where CUDA's limits alone allow 2**73 threads.
# Each thread is a Python call (measured: 0.8 us for an elementwise add, 6 us for the shared-memory transpose with its
# barriers), so 2**24 threads (one per element of a 4096 x 4096 matrix) is seconds to minutes.  The largest CPU
# launches of the tests run 2**18 threads (a 1024 x 1024 transpose), of the notebooks about 2**11.  Loops inside a
# kernel are bounded by limits.MAX_CPU_LOOP_STEPS, per launch.
MAX_CPU_THREADS = 1 << 24


def check_launch_limits(grid, block, static_smem=0, smem=0, reserved=0):
    """Raise ValueError unless a CPU-executor launch fits: grid and block are 3 positive ints within CUDA's limits,
    at most MAX_CPU_THREADS threads in all, and the kernel's static shared memory plus the launch's dynamic ``smem``
    (bytes) fit CUDA's limits (:func:`check_shared_memory`)."""
    for what, dims, limits in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        if len(dims) != 3 or any(type(d) is not int for d in dims):
            raise TypeError(f"Expected the {what} as 3 ints, but got {dims!r}.")
        for axis, d, hi in zip("xyz", dims, limits):
            if not 1 <= d <= hi:
                raise ValueError(f"Expected {what} {axis} in [1, {hi}] (CUDA's limit), but got {d} (in {tuple(dims)}).")
    per_block = block[0] * block[1] * block[2]
    if per_block > MAX_THREADS_PER_BLOCK:
        raise ValueError(f"Expected at most {MAX_THREADS_PER_BLOCK} threads per block (CUDA's limit), but got "
                         f"{per_block} in {tuple(block)}.")
    total = grid[0] * grid[1] * grid[2] * per_block
    if total > MAX_CPU_THREADS:
        raise ValueError(f"Expected at most {MAX_CPU_THREADS} threads (2**24) in one launch on the CPU executor, which "
                         f"runs each thread as a Python call, but grid {tuple(grid)} x block {tuple(block)} is {total} "
                         f"threads; launch on a GPU (CUDA device tensors) or on a smaller problem.")
    check_shared_memory(static_smem, smem, reserved)


def check_shared_memory(static_smem, smem, reserved=0):
    """Raise unless the dynamic shared memory ``smem`` is an int of bytes >= 0 (TypeError, ValueError) and the
    kernel's static shared memory plus it fit CUDA's limits (ValueError): the one check, for GPU and CPU launches.
    ``reserved``: dynamic shared memory the kernel's own shared tensors take (beyond 48 KiB); returns the launch's
    dynamic shared memory, smem + reserved."""
    if type(smem) is not int:
        try:
            smem = operator.index(smem)
        except TypeError:
            raise TypeError(f"Expected the dynamic shared memory (smem) as an int of bytes, but got "
                            f"{type(smem).__name__}.") from None
    if smem < 0:
        raise ValueError(f"Expected dynamic shared memory (smem) >= 0 bytes, but got {smem}.")
    if static_smem > MAX_STATIC_SMEM:
        raise ValueError(f"Expected at most {MAX_STATIC_SMEM} bytes (48 KiB) of static shared memory per block "
                         f"(CUDA's limit), but the kernel's shared tensors take {static_smem} bytes.")
    if static_smem + smem + reserved > MAX_SMEM_OPTIN:
        raise ValueError(f"Expected static plus dynamic shared memory of at most {MAX_SMEM_OPTIN} bytes (227 KiB, "
                         f"an H100's opt-in maximum per block), but got {static_smem + reserved} + {smem} = "
                         f"{static_smem + reserved + smem} bytes.")
    return smem + reserved


def _range_checker(name, base, n):
    """A vector access of ``lanes`` elements from view index j (an index _indexer returned): the first element past
    the tensor, if any, is reported by its element offset (what an op's ``_ixr_<name>(j, lanes)`` calls)."""
    def rx(j, lanes):
        if j + lanes > n:
            _oob(n - base, name, -base, n - base)
    return rx


def _indexer(name, base, n):
    def ix(i):
        j = i + base
        if j < 0 or j >= n:
            _oob(i, name, -base, n - base)
        return j
    return ix


def _aligner(name, address, es, lo):
    def al(j, lanes):
        # j is a view index: check the real address the 128-bit access would use on the GPU
        addr = address + (j + lo) * es
        if addr % (lanes * es):
            raise KernelRuntimeError(f"misaligned {lanes * es * 8}-bit access to '{name}' at address {addr:#x}")
    return al



def _scalar(v, t):
    """A scalar argument as the GPU receives it (packed as t): Python int/float/bool of t's value."""
    if t is Boolean:
        return bool(v)
    if ir.is_int_type(t):
        return int(v)
    v = float(v)
    return _r32(v) if t is Float32 else (_r16(v) if t is Float16 else v)


# -- raw pointers: host memory the caller declares (workbench._memory) ---------------------------------
def pointer_extent(param, ptr) -> tuple[int, int]:
    """Element range [lo, hi) relative to ``ptr`` that the raw pointer parameter may touch: the
    whole elements of the smallest declared host buffer containing its address (see
    :func:`workbench.host_buffers`).  Raises ValueError when no declared buffer contains it, or when the
    kernel writes through it into a read-only buffer."""
    es = max(1, param.etype.bits // 8)
    a = ptr.address
    declared = declared_host_buffer(a)   # the tightest bound when buffers nest
    if declared:
        base, n, readonly = declared
        if (readonly or ptr.read_only) and param.buf.written:
            raise ValueError(f"Expected writable memory for the raw pointer argument '{param.name}' (the kernel "
                             f"writes it), but {ptr} points into a read-only buffer.")
        return -((a - base) // es), (base + n - a) // es
    raise ValueError(
        f"Expected the raw pointer argument '{param.name}' ({ptr}) to point into host memory declared with "
        "wb.host_buffers(...), but it points outside every declared buffer: the CPU "
        "executor bounds-checks every access and a bare address has no extent.  Launch inside "
        "`with host_buffers(array, ...):` or pass a wb.Tensor (wb.from_dlpack / wb.make_tensor(ptr, layout)).")
